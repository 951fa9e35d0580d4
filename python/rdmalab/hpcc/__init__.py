"""Running the ns-3 HPCC simulator's own input directories (docs/hpcc.md).

* `convert(CONFIG)` — its `config.txt` (+ topology and flow files) as a native scenario;
* `run_config(CONFIG)` — run that and write `fct.txt`, `pfc.txt` and `qlen.txt`
  where the config says, in ns-3's formats, with rdmalab's tables alongside;
* `generate_flows` / `write_flow_file` — its `traffic_gen.py`, seeded and exact;
* `read_fct` / `fct_slowdown` — its `fct_analysis.py` filters on any `fct.txt`;
  `fct_analysis_rows` — the numbers `fct_analysis.py` itself prints.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from rdmalab._core import ScenarioError
from rdmalab.hpcc.config import Conversion, convert, read_config
from rdmalab.hpcc.fct import fct_analysis_rows, fct_slowdown, read_fct
from rdmalab.hpcc.traffic import cdf_mean, generate_flows, load_cdf, write_flow_file

__all__ = [
    "Conversion", "convert", "read_config", "scenario_yaml", "run_config", "HpccRun",
    "fct_analysis_rows", "fct_slowdown", "read_fct", "cdf_mean", "generate_flows", "load_cdf", "write_flow_file",
]


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, s: str):
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


_Dumper.add_representer(str, _str)


def scenario_yaml(conv: Conversion, out_path: str | os.PathLike) -> str:
    """The converted scenario as YAML for `out_path`: the topology by path (relative to the
    YAML file) when the core reads the original file the same way, else inlined."""
    data = dict(conv.scenario)
    if conv.topology.verbatim_ok:
        rel = os.path.relpath(conv.topology_path.resolve(), Path(out_path).resolve().parent)
        data["topology"] = {"kind": "hpcc_file", "path": rel}
    head = [
        f"# Converted by `rdmalab hpcc convert` from the ns-3 HPCC config {conv.config_path}",
        f"#   topology: {conv.topology_path}",
        f"#   flows:    {conv.flow_path} ({len(data['workload']['flows'])} flows)",
        "# ns-3 would write: " + ", ".join(f"{k} {p}" for k, p in conv.outputs.items())
        + " (rdmalab run writes fct.txt, pfc.txt" + (", qlen.txt" if "qlen" in conv.outputs else "")
        + " in its --out directory)",
    ]
    head += [f"# warning: {w}" for w in conv.warnings]
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=120, allow_unicode=True)
    return "\n".join(head) + "\n" + body


@dataclass
class HpccRun:
    conversion: Conversion
    result: object  # rdmalab.runner.RunResult
    written: dict[str, Path]


def default_out_dir(conv: Conversion) -> Path:
    """Where rdmalab's own tables go unless told: beside the FCT file, `<fct stem>-rdmalab/`."""
    fct = conv.outputs["fct"]
    return fct.with_name(fct.stem + "-rdmalab")


def run_config(
    config_path: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    *,
    rto: str = "off",
    seed: int = 1,
    sample_interval: str = "off",
    progress: bool = False,
    threads: int = 1,
    parquet: bool = True,
    conversion: Conversion | None = None,
    _out_name: str = "out_dir",
) -> HpccRun:
    """Convert and run an ns-3 HPCC config; copy fct.txt / pfc.txt / qlen.txt to the paths it names.
    (`_out_name`: what the caller's user calls `out_dir`, for its errors; the command line's `--out`.)"""
    from rdmalab.runner import run_named

    conv = conversion or convert(config_path, rto=rto, seed=seed, sample_interval=sample_interval)
    # Fail before the run, not after it: every output directory must exist (ns-3 would crash on fopen).
    for kind, p in conv.outputs.items():
        if not p.parent.is_dir():
            raise ScenarioError(f"{kind.upper()} output `{p}`: directory `{p.parent}` does not exist")
    if out_dir is not None:
        out, name = Path(out_dir), _out_name
    else:
        out = default_out_dir(conv)
        name = f"the directory for rdmalab's tables beside FCT_OUTPUT_FILE ({_out_name} gives another)"
    scenario = conv.load(Path(config_path).parent, str(config_path))
    result = run_named(scenario, out, name, progress=progress, parquet=parquet, threads=threads)
    written = {}
    for kind, name in (("fct", "fct.txt"), ("pfc", "pfc.txt"), ("qlen", "qlen.txt")):
        if kind in conv.outputs:
            src = out / name
            dst = conv.outputs[kind]
            if src.resolve() != dst.resolve():
                shutil.copyfile(src, dst)
            written[kind] = dst
    return HpccRun(conversion=conv, result=result, written=written)
