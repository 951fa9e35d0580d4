"""The measured tables in the docs are what the shipped commands produce:
`scripts/regen_docs_tables.py --check` reruns every command behind a
generated block and fails on any difference."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "regen_docs_tables.py"
REFERENCE = ROOT / "scripts" / "regen_reference.py"


def test_docs_tables_match_their_commands(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "--check", "--runs", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_stale_table_is_caught(tmp_path, monkeypatch):
    """The check compares: a doc whose block says something else fails it."""
    sys.path.insert(0, str(SCRIPT.parent))
    import regen_docs_tables as regen

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("x\n<!-- generated: scr-table2 -->\n| stale |\n<!-- end generated -->\n")
    monkeypatch.setattr(regen, "DOCS", docs)
    monkeypatch.setattr(regen, "ROOT", ROOT)
    assert regen.main(["--check", "--runs", str(tmp_path / "runs")]) == 1
    assert regen.main(["--runs", str(tmp_path / "runs")]) == 0
    assert "88.30 Gb/s" in (docs / "page.md").read_text()
    assert regen.main(["--check", "--runs", str(tmp_path / "runs2")]) == 0


def test_the_reference_key_tables_are_the_models_declarations():
    """docs/scenario-reference.md's generated key tables are what the core's
    declarations (`nic/config.rs`, ...) say: `regen_reference.py --check`."""
    r = subprocess.run([sys.executable, str(REFERENCE), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_stale_key_table_is_caught(tmp_path, monkeypatch):
    sys.path.insert(0, str(REFERENCE.parent))
    import regen_reference as regen

    page = tmp_path / "reference.md"
    page.write_text("x\n<!-- keys: nic -->\n| `nic.mtu` | size | `1000B` | stale |\n<!-- end keys -->\n")
    monkeypatch.setattr(regen, "REFERENCE", page)
    assert regen.main(["--check"]) == 1
    assert regen.main([]) == 0
    text = page.read_text()
    assert "| `nic.mtu` | size | `1024B` | 64B to 9000B |" in text and "stale" not in text
    assert regen.main(["--check"]) == 0


def test_the_lists_of_cc_algorithms_in_the_docs_name_every_one(root):
    """The README's scenario comment and the scenario reference list every
    value `cc.algorithm` takes (two were missing for a while)."""
    import re

    from rdmalab import _core

    names = {a["name"] for a in _core.algorithms()} | {"python", "c"}
    readme = (root / "README.md").read_text()
    comment = readme[readme.index("cc: {algorithm: dcqcn}"):readme.index("control: {placement")]
    listed = set(re.findall(r"[a-z][a-z0-9-]*", comment.split("#", 1)[1].replace("with switch.int", "")))
    assert listed - {"or"} == names - {"dcqcn"}
    ref = (root / "docs" / "scenario-reference.md").read_text()
    row = next(ln for ln in ref.splitlines() if ln.startswith("| `cc.algorithm` |"))
    assert set(re.findall(r"`([a-z0-9-]+)`", row.split("|")[4])) == names


def test_the_readme_shows_what_a_bad_scenario_is_refused_with(root, tmp_path):
    """The README's refused scenario and its message are what `rdmalab run`
    prints for it: its example once listed two problems that cannot be
    reported together (the workload is checked only on a valid topology)."""
    import re
    import subprocess
    import sys

    readme = (root / "README.md").read_text()
    m = re.search(r"This one, `bad.yaml`:\n\n```yaml\n(.*?)```\n\n```\n\$ (rdmalab run bad.yaml --out \S+)\n(.*?)```",
                  readme, re.S)
    assert m, "the README's bad.yaml example moved or changed shape"
    (tmp_path / "bad.yaml").write_text(m.group(1))
    args = m.group(2).split()[1:]
    r = subprocess.run([sys.executable, "-m", "rdmalab", *args], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == m.group(3).strip()
