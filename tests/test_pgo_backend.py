"""The build backend (pgo/rdmalab_build.py) builds with the shipped
profile when rustc can read it, plainly when it cannot or is told not to,
and says which. The hooks are driven here with a stand-in for maturin's
build, which records the RUSTFLAGS it was called with; the real build is
what `pip install .` at the top of scripts/test.sh ran."""

import importlib.util
import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_backend():
    spec = importlib.util.spec_from_file_location("rdmalab_build", ROOT / "pgo" / "rdmalab_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def backend(monkeypatch, tmp_path):
    mod = load_backend()
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    monkeypatch.delenv("CARGO_ENCODED_RUSTFLAGS", raising=False)
    monkeypatch.delenv("RDMALAB_PGO", raising=False)
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target"))
    monkeypatch.setattr(mod, "rustc_llvm_major", lambda: json.loads(mod.STAMP.read_text())["llvm_major"])
    return mod


class Build:
    """Stands in for a maturin hook: records RUSTFLAGS, fails on request."""

    def __init__(self, fail_first=False):
        self.flags = []
        self.fail_first = fail_first

    def __call__(self):
        import os

        self.flags.append(os.environ.get("RUSTFLAGS"))
        if self.fail_first and len(self.flags) == 1:
            raise SystemExit(1)
        return "rdmalab-0.1.0-cp310-abi3-linux_x86_64.whl"


def test_the_shipped_profile_is_used_and_unpacked_under_its_hash(backend, tmp_path, capsys):
    build = Build()
    assert backend._profiled(build) == "rdmalab-0.1.0-cp310-abi3-linux_x86_64.whl"
    (flags,) = build.flags
    assert flags.startswith("-Cprofile-use=")
    profile = Path(flags.split("=", 1)[1])
    assert profile.parent == tmp_path / "target" / "pgo-profile"
    assert profile.read_bytes() == lzma.decompress(backend.PROFILE_XZ.read_bytes())
    assert "profile-guided build" in capsys.readouterr().err
    import os

    assert "RUSTFLAGS" not in os.environ, "the caller's environment is left as it was"


def test_existing_rustflags_are_kept_beside_the_profile(backend, monkeypatch):
    monkeypatch.setenv("RUSTFLAGS", "-Ctarget-cpu=native")
    build = Build()
    backend._profiled(build)
    assert build.flags[0].startswith("-Ctarget-cpu=native -Cprofile-use=")
    import os

    assert os.environ["RUSTFLAGS"] == "-Ctarget-cpu=native"


def test_encoded_rustflags_which_cargo_reads_first_get_the_profile(backend, monkeypatch):
    monkeypatch.setenv("CARGO_ENCODED_RUSTFLAGS", "-C\x1ftarget-cpu=native")
    seen = []

    def build():
        import os

        seen.append((os.environ.get("CARGO_ENCODED_RUSTFLAGS"), os.environ.get("RUSTFLAGS")))
        return "w.whl"

    backend._profiled(build)
    ((encoded, plain),) = seen
    assert encoded.startswith("-C\x1ftarget-cpu=native\x1f-Cprofile-use=") and plain is None
    import os

    assert os.environ["CARGO_ENCODED_RUSTFLAGS"] == "-C\x1ftarget-cpu=native"


@pytest.mark.parametrize("flags", ["-Cprofile-generate=/tmp/raw", "-Cprofile-use=/tmp/mine.profdata"])
def test_a_profile_named_in_rustflags_is_left_alone(backend, monkeypatch, flags):
    monkeypatch.setenv("RUSTFLAGS", flags)
    build = Build()
    backend._profiled(build)
    assert build.flags == [flags]


def test_off_builds_plainly(backend, monkeypatch, capsys):
    monkeypatch.setenv("RDMALAB_PGO", "off")
    build = Build()
    backend._profiled(build)
    assert build.flags == [None]
    assert "RDMALAB_PGO=off" in capsys.readouterr().err


def test_an_unknown_mode_is_refused_with_what_is_allowed(backend, monkeypatch):
    monkeypatch.setenv("RDMALAB_PGO", "yes")
    build = Build()
    with pytest.raises(SystemExit, match=r"RDMALAB_PGO='yes' is not a mode; allowed: auto, off, require"):
        backend._profiled(build)
    assert build.flags == []


def test_an_older_llvm_builds_plainly_and_says_why(backend, monkeypatch, capsys):
    major = json.loads(backend.STAMP.read_text())["llvm_major"]
    monkeypatch.setattr(backend, "rustc_llvm_major", lambda: major - 1)
    build = Build()
    backend._profiled(build)
    assert build.flags == [None]
    assert f"rustc's LLVM is {major - 1}, older than the profile's {major}" in capsys.readouterr().err
    monkeypatch.setenv("RDMALAB_PGO", "require")
    with pytest.raises(SystemExit, match="RDMALAB_PGO=require, but rustc's LLVM"):
        backend._profiled(Build())


def test_a_build_that_fails_with_the_profile_is_retried_without(backend, monkeypatch, capsys):
    build = Build(fail_first=True)
    assert backend._profiled(build).endswith(".whl")
    assert build.flags[0].startswith("-Cprofile-use=") and build.flags[1] is None
    assert "building again without it" in capsys.readouterr().err
    monkeypatch.setenv("RDMALAB_PGO", "require")
    with pytest.raises(SystemExit):
        backend._profiled(Build(fail_first=True))


def test_the_source_hash_follows_rust_sources_and_manifests_only(tmp_path):
    backend = load_backend()
    for rel in ["Cargo.toml", "Cargo.lock", "crates/a/Cargo.toml", "crates/a/src/lib.rs", "python/x.py",
                "crates/a/tests/t.rs"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    h0 = backend.sources_sha256(tmp_path)
    # Python is not compiled; tests are not in the extension (nor in an
    # sdist); an sdist's workspace Cargo.toml is rewritten by maturin.
    for rel in ["python/x.py", "crates/a/tests/t.rs", "Cargo.toml"]:
        (tmp_path / rel).write_text("changed")
        assert backend.sources_sha256(tmp_path) == h0, rel
    for rel in ["crates/a/src/lib.rs", "Cargo.lock", "crates/a/Cargo.toml"]:
        (tmp_path / rel).write_text("changed " + rel)
        h1 = backend.sources_sha256(tmp_path)
        assert h1 != h0, rel
        h0 = h1
    # A file moved keeps its bytes but not its hash.
    shutil.move(tmp_path / "crates/a/src/lib.rs", tmp_path / "crates/a/src/main.rs")
    assert backend.sources_sha256(tmp_path) != h0


def test_the_shipped_profile_was_made_from_these_sources():
    """Rust code changed since the profile was made runs at the plain
    build's speed: remake it (`bash scripts/build-pgo.sh --ship`) with any
    change to the Rust sources, Cargo.toml or Cargo.lock."""
    r = subprocess.run([sys.executable, str(ROOT / "pgo" / "rdmalab_build.py"), "check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
