"""Sweeps: many runs from one file, a results store, and runners.

    from rdmalab.sweep import load_sweep, run_sweep, load_results
    sweep = load_sweep("examples/cc-comparison-sweep.yaml")   # expanded and validated
    run_sweep(sweep, "runs/cc", workers=2)                    # resumes if interrupted
    flows = load_results("runs/cc", "flows")                  # Polars, parameters as columns
"""

from rdmalab.sweep.runners import BACKENDS, SweepOutcome, export_slurm, run_sweep, run_task
from rdmalab.sweep.spec import Sweep, SweepError, load_sweep, sweep_from_dict
from rdmalab.sweep.store import NotResults, Results, Store, StoreBusy, load_results

__all__ = [
    "BACKENDS",
    "NotResults",
    "Results",
    "Store",
    "StoreBusy",
    "Sweep",
    "SweepError",
    "SweepOutcome",
    "export_slurm",
    "load_results",
    "load_sweep",
    "run_sweep",
    "run_task",
    "sweep_from_dict",
]
