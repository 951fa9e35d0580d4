"""rdmalab's ns-3 HPCC drop-in against the ns-3 simulator's own outputs,
byte for byte (tests/golden/ns3/README.md says how they were made). These
hold the "identical" claims of docs/hpcc.md."""

import shutil
from pathlib import Path

import pytest
from conftest import rdmalab_cli

GOLDEN = Path(__file__).parent / "golden" / "ns3"
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def test_every_documented_case_is_here():
    assert CASES == ["incast-win", "lone-1mb-dcqcn", "lone-1mb-sametor", "lone-25g-40g", "own-example",
                     "pfc-incast"]


# Cases on a fabric with two racks or more also run split over two threads
# (docs/parallel.md): the same bytes again.
ON_TWO_THREADS = [c for c in CASES if "star8" not in (GOLDEN / c / "mix" / "config.txt").read_text()]


@pytest.mark.parametrize("case,threads", [(c, 1) for c in CASES] + [(c, 2) for c in ON_TWO_THREADS])
def test_outputs_are_byte_identical_to_ns3(case, threads, tmp_path, root):
    d = tmp_path / case
    shutil.copytree(GOLDEN / case / "mix", d / "mix")
    if "fat.txt" in (d / "mix" / "config.txt").read_text():
        shutil.copy(root / "examples" / "hpcc" / "mix" / "topology.txt", d / "mix" / "fat.txt")
    r = rdmalab_cli("hpcc", "run", "mix/config.txt", "--quiet", "--threads", str(threads), cwd=d)
    assert r.returncode == 0, r.stderr
    for name in ("fct.txt", "pfc.txt", "qlen.txt"):
        ours = (d / "mix" / name).read_bytes()
        theirs = (GOLDEN / case / "ns3" / name).read_bytes()
        if ours != theirs:
            a, b = ours.decode().splitlines(), theirs.decode().splitlines()
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            pytest.fail(f"{case}/{name} differs from ns-3's at line {first + 1}: "
                        f"rdmalab {a[first:first + 2]} vs ns-3 {b[first:first + 2]} ({len(a)} vs {len(b)} lines)")
