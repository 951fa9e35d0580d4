"""Every shipped example scenario's outputs, hashed: a change to the core
that is meant to be invisible (a faster event loop, a new data structure)
must leave every table and every summary count the same, byte for byte.

The hashes are in tests/golden/example-outputs.json. After a change that is
*meant* to alter results, regenerate them and say why in the commit:

    RDMALAB_UPDATE_GOLDEN=1 python3 -m pytest tests/test_example_outputs.py

Engine internals that a faster engine may change (the event count, packet
pool slots, the peak of live packets) are left out of the summary's hash.
Each run's Parquet tables are checked to read as its CSV tables.
"""

import hashlib
import json
import os
from pathlib import Path

import pytest
from conftest import rdmalab_cli

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden" / "example-outputs.json"
ENGINE_INTERNALS = {"events", "packet_pool_slots", "peak_live_packets"}


def _examples() -> list[str]:
    out = []
    for f in sorted((ROOT / "examples").rglob("*.yaml")):
        text = f.read_text()
        if text.startswith("base:") or "\nbase:" in text:
            continue  # a sweep
        out.append(str(f.relative_to(ROOT)))
    return out


def _hashes(out: Path) -> dict[str, str]:
    h = {}
    for f in sorted(out.iterdir()):
        if f.suffix in (".csv", ".txt"):
            h[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()[:16]
    summary = json.loads((out / "summary.json").read_text())
    kept = {k: v for k, v in summary.items() if k not in ENGINE_INTERNALS}
    h["summary.json"] = hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]
    return h


def _parquet_reads_as_csv(out: Path) -> None:
    """Each Parquet table (the core's writer) reads as its CSV typed by the
    table's schema: the same types, values and nulls."""
    import pyarrow.parquet as pq

    from rdmalab.outputs import COLUMNS, table_from_csv

    for name in COLUMNS:
        if (out / f"{name}.csv").exists():
            want = table_from_csv((out / f"{name}.csv").read_bytes(), name)
            assert pq.read_table(out / f"{name}.parquet").equals(want), name


EXAMPLES = _examples()


def test_every_example_has_hashes():
    if os.environ.get("RDMALAB_UPDATE_GOLDEN"):
        pytest.skip("updating")
    assert sorted(json.loads(GOLDEN.read_text())) == EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES)
def test_outputs_are_unchanged(example, tmp_path):
    r = rdmalab_cli("run", ROOT / example, "--out", tmp_path / "o", "--quiet", cwd=ROOT)
    assert r.returncode == 0, r.stderr
    _parquet_reads_as_csv(tmp_path / "o")
    got = _hashes(tmp_path / "o")
    if os.environ.get("RDMALAB_UPDATE_GOLDEN"):
        golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        golden[example] = got
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    want = json.loads(GOLDEN.read_text())[example]
    changed = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
    assert not changed, f"{example}: outputs changed: {', '.join(changed)}"
