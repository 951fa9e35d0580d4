"""What the command line needs from sweeps on every start: the backends'
names and the errors it catches. Kept apart from the store and the runners,
which load Polars, so that a single run does not pay for it."""

from __future__ import annotations

BACKENDS = ("local", "ray", "slurm")


class NotResults(ValueError):
    """A path given for analysis is neither a sweep directory nor a run directory."""


class StoreBusy(RuntimeError):
    """Another sweep process is writing into the same directory."""
