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
from rdmalab.scenario import load_scenario, scenario_from_dict
from rdmalab.runner import RunResult, run, validate

__all__ = [
    "Controller",
    "RunError",
    "RunResult",
    "ScenarioError",
    "__version__",
    "load_scenario",
    "run",
    "scenario_from_dict",
    "validate",
]
