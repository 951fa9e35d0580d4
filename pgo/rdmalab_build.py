"""rdmalab's PEP 517 build backend: maturin's, built with the shipped
profile (profile-guided optimisation) when the Rust compiler can read it.

A profile-guided build takes 8-21 % less time than a plain one
(docs/speed.md, "The default build is profile-guided") and computes the
same outputs byte for byte: the profile only changes how the compiler lays
out and inlines code. Making a profile takes an instrumented build, a
minute of training runs and `llvm-profdata` (scripts/build-pgo.sh), which a
user's machine may not have; reading one needs only rustc. So the profile
ships here, compressed (`rdmalab.profdata.xz`, what `profile.json`
describes), and this backend adds `-Cprofile-use` to RUSTFLAGS (or to
CARGO_ENCODED_RUSTFLAGS, when that is set).

RDMALAB_PGO chooses: `auto` (the default) uses the profile when rustc's
LLVM is at least the one that wrote it and builds plainly otherwise, or if
the build with it fails; `off` builds plainly; `require` fails instead of
building plainly. RUSTFLAGS that already ask for a profile
(`-Cprofile-generate`, `-Cprofile-use`: scripts/build-pgo.sh) are left as
they are.

`python pgo/rdmalab_build.py stamp LLVM_MAJOR COMMIT` writes profile.json
for a new profile; `python pgo/rdmalab_build.py check` says whether the
shipped profile was made from the sources as they are.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROFILE_XZ = HERE / "rdmalab.profdata.xz"
STAMP = HERE / "profile.json"
MODES = ("auto", "off", "require")

# What the compiled code is made from: a profile made from other sources
# still builds, but LLVM drops the counts of every function whose control
# flow changed, and those run at the plain build's speed. (Not the
# workspace's Cargo.toml, which maturin rewrites in an sdist, nor the
# crates' tests and examples, which an sdist leaves out.)
SOURCE_GLOBS = ("Cargo.lock", "crates/*/Cargo.toml", "crates/*/build.rs", "crates/*/src/**/*.rs")


def sources_sha256(root: Path = ROOT) -> str:
    """One hash over the Rust sources, manifests and lock file (paths and
    contents, in path order), to tell whether a profile is current."""
    h = hashlib.sha256()
    paths = sorted({p for g in SOURCE_GLOBS for p in root.glob(g) if p.is_file()})
    for p in paths:
        rel = p.relative_to(root).as_posix()
        data = p.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _say(msg: str) -> None:
    print(f"rdmalab build: {msg}", file=sys.stderr, flush=True)


def _mode() -> str:
    mode = os.environ.get("RDMALAB_PGO", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise SystemExit(
            f"rdmalab build: RDMALAB_PGO={os.environ['RDMALAB_PGO']!r} is not a mode; "
            f"allowed: {', '.join(MODES)} (auto is the default)"
        )
    return mode


def rustc_llvm_major() -> int | None:
    """The LLVM major version of the rustc cargo will run, or None."""
    rustc = os.environ.get("RUSTC", "rustc")
    try:
        out = subprocess.run(
            [rustc, "-vV"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"^LLVM version: (\d+)", out, re.M)
    return int(m.group(1)) if m else None


def usable_profile() -> tuple[Path | None, str]:
    """The decompressed profile if this rustc can read it, and why (not)."""
    if not PROFILE_XZ.is_file() or not STAMP.is_file():
        return None, f"no shipped profile ({PROFILE_XZ.name} and {STAMP.name} in {HERE})"
    stamp = json.loads(STAMP.read_text())
    major = rustc_llvm_major()
    if major is None:
        return None, "cannot read rustc's LLVM version from `rustc -vV`"
    if major < stamp["llvm_major"]:
        return None, (
            f"rustc's LLVM is {major}, older than the profile's {stamp['llvm_major']}, "
            "which it may not read"
        )
    data = lzma.decompress(PROFILE_XZ.read_bytes())
    digest = hashlib.sha256(data).hexdigest()[:16]
    # The file name carries its content's hash: cargo rebuilds when RUSTFLAGS
    # change, not when a file they name does.
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    out = target / "pgo-profile" / f"rdmalab-{digest}.profdata"
    if not out.is_file() or out.stat().st_size != len(data):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(out)
    why = f"rustc's LLVM {major}, profile made by LLVM {stamp['llvm_major']} at {stamp['commit']}"
    if stamp["sources_sha256"] != sources_sha256():
        why += "; the Rust sources changed since, and what changed builds unprofiled"
    return out, why


def _profiled(build):
    """Run `build()` (a maturin hook) with the profile in the Rust flags.

    Cargo reads CARGO_ENCODED_RUSTFLAGS (items split by 0x1f) before
    RUSTFLAGS, and either before `rustflags` in its config files, which it
    then ignores: put flags of your own in one of the two variables."""
    mode = _mode()
    if "CARGO_ENCODED_RUSTFLAGS" in os.environ:
        var, sep = "CARGO_ENCODED_RUSTFLAGS", "\x1f"
    else:
        var, sep = "RUSTFLAGS", " "
    had = os.environ.get(var)
    flags = had or ""
    if mode == "off":
        _say("RDMALAB_PGO=off: a plain build")
        return build()
    if "profile-generate" in flags or "profile-use" in flags:
        _say(f"{var} already names a profile: building with it as given")
        return build()
    profile, why = usable_profile()
    if profile is None:
        if mode == "require":
            raise SystemExit(f"rdmalab build: RDMALAB_PGO=require, but {why}")
        _say(f"a plain build: {why}")
        return build()
    _say(f"a profile-guided build with {profile} ({why})")
    os.environ[var] = f"{flags}{sep}-Cprofile-use={profile}" if flags else f"-Cprofile-use={profile}"
    try:
        return build()
    except SystemExit:
        if mode == "require":
            raise
        _say("the build with the profile failed; building again without it")
    finally:
        if had is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = had
    return build()


def _maturin():
    # Imported when a hook runs, so that `check` and `stamp` work without it.
    import maturin

    return maturin


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _profiled(
        lambda: _maturin().build_wheel(wheel_directory, config_settings, metadata_directory)
    )


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _profiled(
        lambda: _maturin().build_editable(wheel_directory, config_settings, metadata_directory)
    )


def build_sdist(sdist_directory, config_settings=None):
    return _maturin().build_sdist(sdist_directory, config_settings)


def get_requires_for_build_wheel(config_settings=None):
    return _maturin().get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _maturin().get_requires_for_build_editable(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return _maturin().get_requires_for_build_sdist(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _maturin().prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _maturin().prepare_metadata_for_build_editable(metadata_directory, config_settings)


def main(argv: list[str]) -> int:
    if argv[:1] == ["stamp"] and len(argv) == 3:
        STAMP.write_text(
            json.dumps(
                {
                    "llvm_major": int(argv[1]),
                    "commit": argv[2],
                    "sources_sha256": sources_sha256(),
                    "made_by": "scripts/build-pgo.sh --ship",
                },
                indent=2,
            )
            + "\n"
        )
        return 0
    if argv == ["check"]:
        stamp = json.loads(STAMP.read_text())
        if stamp["sources_sha256"] == sources_sha256():
            print(f"pgo: the shipped profile is current (made at {stamp['commit']})")
            return 0
        print(
            f"pgo: the shipped profile was made at {stamp['commit']} from other Rust sources; "
            "remake it with `bash scripts/build-pgo.sh --ship`"
        )
        return 1
    print("usage: rdmalab_build.py stamp LLVM_MAJOR COMMIT | check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
