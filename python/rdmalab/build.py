"""Which build of rdmalab runs: the fingerprint a sweep records with each
run, so that results of another build are not reused unannounced.

A sweep's run id hashes the scenario, not the simulator that ran it.
After rdmalab changes (a pull, a reinstall, an edit to an algorithm in the
core), the same scenario may give other results; a sweep resumed into the
same directory must say so rather than mix them in (docs/sweeps.md,
*Other builds*).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from rdmalab import _core


@functools.cache
def build_id() -> str:
    """`CORE-FRONT`: the fingerprint of the sources the core was compiled
    from (`_core.__build__`, made by crates/rdmalab-py/build.rs), then
    [`front_fingerprint`] of the installed Python package, which expands
    scenarios, generates workloads and writes tables. Any edit changes it,
    even one that changes no result."""
    return f"{_core.__build__}-{front_fingerprint(Path(__file__).parent)}"


def front_fingerprint(package: Path) -> str:
    """The SHA-256 (first 12 hex digits) of the files of the Python package
    at `package`, each as its path, its length and its bytes, in path order.
    The compiled core is left out, being named by its sources' fingerprint
    (a rebuild of the same sources is the same build), and so are bytecode
    caches, which follow from the sources."""
    h = hashlib.sha256()
    for f in sorted(p for p in package.rglob("*") if _is_source(p, package)):
        body = f.read_bytes()
        h.update(f.relative_to(package).as_posix().encode() + b"\0" + len(body).to_bytes(8, "little") + body)
    return h.hexdigest()[:12]


def _is_source(p: Path, package: Path) -> bool:
    rel = p.relative_to(package)
    return p.is_file() and "__pycache__" not in rel.parts and not (len(rel.parts) == 1 and p.name.startswith("_core"))
