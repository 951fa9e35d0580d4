"""Sweeps: many runs from one file, a results store, and runners.

    from rdmalab.sweep import load_sweep, run_sweep, load_results
    sweep = load_sweep("examples/cc-comparison-sweep.yaml")   # expanded and validated
    run_sweep(sweep, "runs/cc", workers=2)                    # resumes if interrupted
    flows = load_results("runs/cc", "flows")                  # Polars, parameters as columns
"""

# Names are imported on first use (PEP 562): a single run reads override
# keys with rdmalab.sweep.spec, and should not pay for Polars, which only the
# store and the runners need (0.15 s of a run's start).
_WHERE = {
    "BACKENDS": "common",
    "SweepOutcome": "runners",
    "export_slurm": "runners",
    "run_sweep": "runners",
    "run_task": "runners",
    "Sweep": "spec",
    "SweepError": "spec",
    "load_sweep": "spec",
    "sweep_from_dict": "spec",
    "NotResults": "common",
    "OtherBuilds": "common",
    "Results": "store",
    "Store": "store",
    "StoreBusy": "common",
    "load_results": "store",
}


_SUBMODULES = ("common", "runners", "spec", "store")


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:
        # `rdmalab.sweep.store` after `import rdmalab.sweep`, as before.
        return importlib.import_module(f"rdmalab.sweep.{name}")
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'rdmalab.sweep' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"rdmalab.sweep.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE) | set(_SUBMODULES))


__all__ = sorted(_WHERE)
