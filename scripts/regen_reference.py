#!/usr/bin/env python3
"""Regenerate the key tables of docs/scenario-reference.md from the keys each
model declares in the core (`crates/rdmalab-core/src/*/config.rs`).

A table that a model's declarations produce sits between
``<!-- keys: SECTION ... -->`` and ``<!-- end keys -->`` (one table for the
sections named, in order). Its rows come from the
same declarations the core reads a scenario with (unit, default, allowed
values and rules, meaning and source), so the docs cannot say one range while
`rdmalab validate` checks another. With ``--check`` nothing is rewritten and a
stale table fails, showing the difference; the tests run it that way.

    python3 scripts/regen_reference.py            # rewrite the docs
    python3 scripts/regen_reference.py --check    # fail if they differ
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

from rdmalab import _core

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "scenario-reference.md"
BLOCK = re.compile(r"(<!-- keys: (?P<sections>[a-z_.\[\] ]+) -->\n)(?P<body>.*?)(<!-- end keys -->)", re.S)
HEADER = "| key | unit | default | allowed | source / meaning |\n|---|---|---|---|---|\n"


def default(text: str) -> str:
    """A default as the table shows it: `required` is no value to write."""
    return text if text == "required" else f"`{text}`"


def table(sections: list[str]) -> str:
    """One table of the keys of `sections`, in order."""
    declared = _core.scenario_keys()
    rows = []
    for section in sections:
        keys = [k for k in declared if k["section"] == section]
        if not keys:
            raise SystemExit(f"no model declares the keys of `{section}`")
        for k in keys:
            cells = [f"`{section}.{k['name']}`", k["unit"], default(k["default"]), k["allowed"], k["meaning"]]
            rows.append("|" + "|".join(f" {c} " if c else " " for c in cells) + "|\n")
    return HEADER + "".join(rows)


def regenerate(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + table(m.group("sections").split()) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="rewrite nothing; fail if a table is out of date")
    args = ap.parse_args(argv)
    text = REFERENCE.read_text()
    new = regenerate(text)
    if new == text:
        return 0
    if args.check:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                   "docs/scenario-reference.md", "regenerated"))
        print("\ndocs/scenario-reference.md is out of date: run python3 scripts/regen_reference.py", file=sys.stderr)
        return 1
    REFERENCE.write_text(new)
    print("rewrote docs/scenario-reference.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
