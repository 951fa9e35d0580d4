from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def examples(root) -> Path:
    return root / "examples"


import json
import subprocess
import sys

# A 12-run sweep (3 controller settings × 2 loads × 2 seeds) of 2 ms on the dumbbell: ~0.1 s a run.
SWEEP_12 = """\
name: test-12
base: {base}
set: {{duration: 2ms}}
grid:
  cc:
    dcqcn: {{algorithm: dcqcn}}
    none: {{algorithm: none}}
    dcqcn-ai20: {{algorithm: dcqcn, params: {{rate_ai: 20Gbps}}}}
  workload.poisson.load: [0.1, 0.3]
seeds: [1, 2]
"""


def rdmalab_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "rdmalab", *map(str, args)], capture_output=True, text=True, **kw)


def capped_and_finished(tmp_path: Path, flows: str) -> dict[str, tuple[Path, str]]:
    """One scenario with `flows` run twice: cut short by `max_events` (it
    fails) and let finish. Name (`failed`, `done`) -> (its run directory,
    the `end` its summary says)."""
    f = tmp_path / "s.yaml"
    f.write_text("name: capped\nduration: 1ms\nmax_events: 2000\n"
                 "topology: {kind: single_switch, hosts: 2, host_link: {rate: 100Gbps, delay: 1us}}\n"
                 f"workload: {{flows: [{flows}]}}\n")
    runs = {}
    for name, extra in (("failed", ()), ("done", ("--set", "max_events=10000000"))):
        out = tmp_path / name
        rdmalab_cli("run", f, "--out", out, "--quiet", *extra)
        runs[name] = (out, json.loads((out / "summary.json").read_text())["end"])
    return runs


def run_sweep(sweep_file: Path, out: Path) -> Path:
    """Run a shipped sweep quietly; return its plots directory."""
    r = rdmalab_cli("sweep", str(sweep_file), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    return out / "plots"


@pytest.fixture(scope="session")
def sweep12(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sweep12")
    path = d / "test-12-sweep.yaml"
    path.write_text(SWEEP_12.format(base=ROOT / "examples" / "dumbbell-dcqcn.yaml"))
    return path


@pytest.fixture(scope="session")
def local_sweep(sweep12, tmp_path_factory) -> Path:
    """The 12-run sweep, run once with the local runner and 2 workers."""
    out = tmp_path_factory.mktemp("local2") / "out"
    r = rdmalab_cli("sweep", sweep12, "--out", out, "--workers", 2)
    assert r.returncode == 0, r.stderr
    return out
