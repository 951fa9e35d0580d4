#!/usr/bin/env python3
"""Lines of code of each shipped control law (SwCC Table 3 in kind).

Counts the lines of `crates/rdmalab-core/src/algo/<name>.rs` that hold the
algorithm itself: code lines before the unit tests, without blank lines,
comments and doc comments, and without the parameter table (`PARAMS`,
declared with units, ranges and sources, which SwCC's C programs do not
carry). Prints a Markdown table for docs/swcc.md.

    python3 scripts/algorithm-lines.py
"""

from pathlib import Path

ALGO = Path(__file__).resolve().parent.parent / "crates" / "rdmalab-core" / "src" / "algo"
# SwCC Table 3 (lines of C on its RISC-V cores).
PAPER = {"dcqcn": 140, "timely": 102, "hpcc": 148, "swift": 164, "homa": 95}
FILES = ["dcqcn", "timely", "hpcc", "swift", "homa", "dctcp", "doca_rtt", "receiver_grants", "receiver_backpressure",
         "fair_share", "multipath", "tenant_guard"]


def count(path: Path) -> int:
    n, in_params, depth = 0, False, 0
    for line in path.read_text().splitlines():
        s = line.strip()
        if s.startswith("#[cfg(test)]"):
            break
        if s.startswith(("pub const PARAMS", "pub const STATIC_PARAMS", "pub const WATER_FILLING_PARAMS", "const COMMON")):
            in_params, depth = True, 0
        if in_params:
            depth += line.count("[") - line.count("]")
            if depth <= 0 and s.endswith("];"):
                in_params = False
            continue
        if not s or s.startswith("//"):
            continue
        n += 1
    return n


def main() -> None:
    print("| algorithm | SwCC (lines of C) | rdmalab (lines of Rust) |")
    print("|---|---|---|")
    for f in FILES:
        name = f.replace("_", "-")
        paper = PAPER.get(f, "")
        print(f"| `{name}` | {paper} | {count(ALGO / f'{f}.rs')} |")


if __name__ == "__main__":
    main()
