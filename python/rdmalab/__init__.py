"""rdmalab: a deterministic packet-level simulator of RoCEv2 NICs and fabrics
in which every transport control loop is readable, replaceable software.

Typical use is the command line (``rdmalab run SCENARIO --out DIR``); the
same steps are available from Python::

    import rdmalab
    scenario = rdmalab.load_scenario("examples/dumbbell-dcqcn.yaml")
    result = rdmalab.run(scenario, out_dir="runs/dumbbell")
    print(result.summary["flows_completed"])
"""

from rdmalab._core import RunError, ScenarioError, __version__
from rdmalab.controller import Controller
from rdmalab.scenario import ScenarioWarning, load_scenario, scenario_from_dict

# `run`, `validate` and `RunResult` (rdmalab.runner) load on first use, so that
# `import rdmalab._core` (the benchmark, sweep workers) stays light.
_LAZY = {"run": "rdmalab.runner", "validate": "rdmalab.runner", "RunResult": "rdmalab.runner"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rdmalab' has no attribute {name!r}")

__all__ = [
    "Controller",
    "RunError",
    "RunResult",
    "ScenarioError",
    "ScenarioWarning",
    "__version__",
    "load_scenario",
    "run",
    "scenario_from_dict",
    "validate",
]
