"""Build C controllers (`cc: {algorithm: c, source: algo.c}`) into shared
libraries that rdmalab loads.

A controller is compiled with the system C compiler (``$CC``, else ``cc``)
together with rdmalab's C runtime (``rdmalab/c/rdmalab_cc_runtime.c``),
against ``rdmalab/c/include`` (``rdmalab_cc.h`` and DOCA PCC's header
names). Libraries are cached by the hash of everything that goes into them
(sources, headers, flags, the compiler's version), so a sweep compiles once.
Floating point is compiled strictly (no contraction into FMA, no fast-math)
so that the same arithmetic gives the same bits as rdmalab's Rust.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

C_DIR = Path(__file__).parent / "c"
INCLUDE_DIR = C_DIR / "include"
RUNTIME = C_DIR / "rdmalab_cc_runtime.c"
#: -ffp-contract=off: a * b + c stays two roundings, as in Rust. -z defs: a
#: library that lacks a function the runtime calls (`doca_pcc_dev_user_algo`)
#: fails to link, naming it, rather than building and failing at load.
FLAGS = ["-shared", "-fPIC", "-O2", "-std=gnu11", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-Wl,-z,defs"]


class CompileError(Exception):
    """A C controller could not be built; the message holds the compiler's
    own diagnostics (file:line: error) or why no compiler ran."""


def compiler() -> str:
    return os.environ.get("CC") or "cc"


def cache_dir() -> Path:
    root = os.environ.get("RDMALAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "rdmalab")
    return Path(root) / "c"


def _version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise CompileError(f"no C compiler: `{cc}` was not found; install gcc or clang, or set CC") from None
    except OSError as e:
        raise CompileError(f"the C compiler `{cc}` cannot run: {e}") from None
    return out.stdout.splitlines()[0] if out.stdout else ""


def build(source: str | os.PathLike, out: str | os.PathLike | None = None, key: str = "cc.source") -> Path:
    """Compile `source` with the runtime into a shared library: at `out`, or
    in the cache (returned). Raises CompileError."""
    src = Path(source)
    if not src.is_file():
        raise CompileError(f"{key}: `{src}` is not a readable file")
    with open(src, "rb") as f:
        if f.read(4) == b"\x7fELF":
            # The compiler would take it as linker input, and the load fail later on a missing symbol.
            raise CompileError(f"{key}: `{src}` is a built library or object, not C source; "
                               f"give a library as cc.library, or its .c file as cc.source")
    cc = compiler()
    version = _version(cc)
    h = hashlib.sha256()
    for part in (src.read_bytes(), RUNTIME.read_bytes(), " ".join(FLAGS).encode(), version.encode(), cc.encode()):
        h.update(hashlib.sha256(part).digest())
    for header in sorted(INCLUDE_DIR.glob("*.h")):
        h.update(header.name.encode() + hashlib.sha256(header.read_bytes()).digest())
    target = Path(out) if out else cache_dir() / f"{src.stem}-{h.hexdigest()[:16]}.so"
    if out is None and target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    cmd = [cc, *FLAGS, "-I", str(INCLUDE_DIR), str(src), str(RUNTIME), "-o", tmp, "-lm"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except OSError as e:
        _remove(tmp)
        raise CompileError(f"{key}: the C compiler `{cc}` cannot run: {e}") from None
    if r.returncode != 0:
        # The compiler may have removed its output already (a link error).
        _remove(tmp)
        raise CompileError(f"{key}: `{src}` does not compile ({cc} exited {r.returncode}):\n{r.stderr.strip()}")
    # Rename into place: concurrent sweep workers never see a half-written file.
    os.replace(tmp, target)
    return target


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def include_flags() -> str:
    """What to pass a compiler by hand: the include directory and the runtime."""
    return f"-I {INCLUDE_DIR} {RUNTIME}"


def which() -> str | None:
    return shutil.which(compiler())
