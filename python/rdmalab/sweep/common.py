"""What the command line needs from sweeps on every start: the backends'
names and the errors it catches. Kept apart from the store and the runners,
which load Polars, so that a single run does not pay for it."""

from __future__ import annotations

BACKENDS = ("local", "ray", "slurm")


class NotResults(ValueError):
    """A path given for analysis is neither a sweep directory nor a run directory."""


class StoreBusy(RuntimeError):
    """Another sweep process is writing into the same directory."""


class OtherBuilds(RuntimeError):
    """The sweep directory holds finished runs that another build of rdmalab
    made, and the caller did not say whether to keep or rerun them."""


#: What a sweep does with finished runs of another build of rdmalab
#: (`rdmalab.build.build_id`): refuse to start (None), run them again, or keep them.
OTHER_BUILDS = ("rerun", "keep")
