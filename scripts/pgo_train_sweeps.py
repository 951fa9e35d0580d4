#!/usr/bin/env python3
"""Training runs for scripts/build-pgo.sh: the first and the last run of
every shipped sweep, each cut to its first 300 µs of simulated time.

A sweep's runs differ in what they switch on (a CC algorithm, a control
placement, an attack, a NIC resource model), and its two ends reach much
of that code; 300 µs covers each run's set-up and its first round trips
(the steady-state hot loop is what the benchmarks train), where whole
sweeps take many minutes.

    python3 scripts/pgo_train_sweeps.py OUT_DIR SWEEP.yaml...
"""

import sys
import warnings
from pathlib import Path

from rdmalab.runner import run
from rdmalab.scenario import ScenarioWarning
from rdmalab.sweep import load_sweep

CUT = "300us"


def main(out: str, sweeps: list[str]) -> int:
    # Cut to 300 µs, most runs have flows that cannot complete, and say so:
    # expected here, and no concern of whoever builds.
    warnings.simplefilter("ignore", ScenarioWarning)
    for path in sweeps:
        runs = load_sweep(path).runs
        for i in sorted({0, len(runs) - 1}):
            run(runs[i].scenario, out_dir=Path(out) / f"{Path(path).stem}-{i}", duration=CUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
