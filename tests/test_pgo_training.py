"""scripts/build-pgo.sh trains on the two ends of every shipped sweep, cut
short (scripts/pgo_train_sweeps.py). The PGO build itself needs
llvm-profdata and is measured, not tested; this checks that its sweep
training still runs what it says: both ends, each stopped at 300 µs."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_sweep_training_runs_both_ends_cut_short(tmp_path):
    sweep = ROOT / "examples" / "scr" / "scr-latency-isolation.yaml"  # 3 runs
    subprocess.run([sys.executable, str(ROOT / "scripts" / "pgo_train_sweeps.py"), str(tmp_path), str(sweep)],
                   check=True, cwd=ROOT)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scr-latency-isolation-0", "scr-latency-isolation-2"]
    for run in tmp_path.iterdir():
        summary = json.loads((run / "summary.json").read_text())
        assert summary["end"] == "stop_time"
        assert summary["sim_time_ps"] == 300_000_000
    # The two ends are different runs of the sweep, not one run twice.
    scenarios = [json.loads((tmp_path / f"scr-latency-isolation-{i}" / "scenario.json").read_text()) for i in (0, 2)]
    assert scenarios[0] != scenarios[1]
