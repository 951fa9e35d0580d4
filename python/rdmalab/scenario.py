"""Loading scenarios: YAML in, the JSON the core validates out.

The front end only resolves what needs the file system (a topology file or a
flow-size CDF given by path, relative to the scenario file); every other
check happens in the core, so Python and Rust users get the same messages.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rdmalab._core import ScenarioError


@dataclass
class LoadedScenario:
    """A scenario ready for the core: its resolved form and where it came from."""

    data: dict
    source: str

    @property
    def name(self) -> str:
        return str(self.data.get("name", "scenario"))

    def to_json(self) -> str:
        return json.dumps(self.data, sort_keys=True)


def _resolve_paths(data: dict, base: Path) -> None:
    topo = data.get("topology")
    if isinstance(topo, dict) and topo.get("kind") == "hpcc_file" and "path" in topo:
        path = base / str(topo.pop("path"))
        try:
            topo["text"] = path.read_text()
        except OSError as e:
            raise ScenarioError(f"topology.path: `{path}` cannot be read ({e.strerror})") from None
    workload = data.get("workload")
    if isinstance(workload, dict):
        poisson = workload.get("poisson")
        items = poisson if isinstance(poisson, list) else [poisson] if isinstance(poisson, dict) else []
        for i, p in enumerate(items):
            cdf = p.get("cdf") if isinstance(p, dict) else None
            if isinstance(cdf, str) and (os.sep in cdf or cdf.endswith(".txt")):
                key = "workload.poisson" + (f"[{i}]" if isinstance(poisson, list) else "") + ".cdf"
                path = base / cdf
                try:
                    lines = path.read_text().splitlines()
                except OSError as e:
                    raise ScenarioError(f"{key}: `{path}` cannot be read ({e.strerror})") from None
                points = []
                for n, line in enumerate(lines, 1):
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    parts = line.split()
                    try:
                        points.append([float(parts[0]), float(parts[1])])
                    except (ValueError, IndexError):
                        raise ScenarioError(
                            f"{key}: `{path}` line {n} `{line}` must be `size_bytes cdf_percent`"
                        ) from None
                p["cdf"] = points


def scenario_from_dict(data: dict, base_dir: str | os.PathLike = ".", source: str = "<dict>") -> LoadedScenario:
    """Wrap an in-memory scenario (for sweeps and notebooks)."""
    if not isinstance(data, dict):
        raise ScenarioError(f"(scenario): must be a mapping of keys to values, not {type(data).__name__}")
    data = json.loads(json.dumps(data))  # a deep copy that also rejects non-JSON values
    _resolve_paths(data, Path(base_dir))
    return LoadedScenario(data=data, source=source)


def load_scenario(path: str | os.PathLike, overrides: dict[str, Any] | None = None) -> LoadedScenario:
    """Read a YAML scenario. `overrides` sets top-level keys (e.g. ``{"seed": 3}``)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ScenarioError(f"(scenario): `{p}` cannot be read ({e.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ScenarioError(f"(scenario): `{p}` is not valid YAML: {e}") from None
    if data is None:
        raise ScenarioError(f"(scenario): `{p}` is empty")
    if overrides and isinstance(data, dict):
        data.update(overrides)
    return scenario_from_dict(data, base_dir=p.parent, source=str(p))
