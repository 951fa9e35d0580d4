#!/usr/bin/env python3
"""Regenerate the measured tables in the docs from the shipped commands.

Every table of numbers that a doc page shows as rdmalab's result sits between
``<!-- generated: KEY -->`` and ``<!-- end generated -->``. This script runs
the shipped sweep behind each KEY (the command is written into the block),
reads the figure's CSV and rewrites the block. With ``--check`` it rewrites
nothing and fails, showing the difference, if any block is out of date: the
test suite runs it that way, so the docs cannot drift from what the commands
produce.

    python3 scripts/regen_docs_tables.py            # rewrite the docs
    python3 scripts/regen_docs_tables.py --check    # fail if they differ
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl

from rdmalab.casestudies.fair_scheduler import convergence_us

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- generated: (?P<key>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


@dataclass
class Source:
    """A shipped sweep and where its output goes (`runs/NAME` in the docs)."""

    sweep: str  # path under examples/
    out: str  # the --out the docs show

    def command(self) -> str:
        return f"rdmalab sweep examples/{self.sweep} --out runs/{self.out}"


def _f(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _csv(plots: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(plots / f"{name}.csv")


# ---------------------------------------------------------------- renderers

def table2(plots: Path) -> str:
    t = _csv(plots, "scr-table2")
    v = {(c, n): (g, lat) for c, n, g, lat in t.iter_rows()}
    a, b = v[("4KiB-beside-64KiB", "throughput")][0], v[("4KiB-beside-64KiB", "bandwidth")][0]
    rows = [
        ["4 KB tenant alone", "88.30 Gb/s", f"{_f(v[('4KiB-alone', 'throughput')][0])} Gb/s"],
        ["4 KB tenant beside a 64 KB tenant", "33.25 vs 57.64 Gb/s", f"{_f(a)} vs {_f(b)} Gb/s"],
        ["256 B tenant latency alone → beside 64 KB", "2.44 → 5.31 µs",
         f"{_f(v[('256B-alone', 'latency')][1], 2)} → {_f(v[('256B-beside-64KiB', 'latency')][1], 2)} µs"],
    ]
    return _table(["", "SCR (BlueField-3)", "rdmalab"], rows)


def fig11(plots: Path) -> str:
    frames = {p: _csv(plots, f"scr-fig11-jain-{p}") for p in ("default", "static", "water-filling")}
    cells = {p: {(r["size_a"], r["size_b"]): r for r in f.iter_rows(named=True)} for p, f in frames.items()}
    rows = []
    for (a, b), d in cells["default"].items():
        s, w = cells["static"][(a, b)], cells["water-filling"][(a, b)]
        rows.append([f"{a} vs {b}"] + [f"{_f(x['jain'], 3)} / {_f(x['total_gbps'])}" for x in (d, s, w)]
                    + [f"{_f(w['gbps_a'])} / {_f(w['gbps_b'])}"])
    return _table(["tenants (a vs b)", "default: Jain / total Gb/s", "static", "water filling",
                   "water filling: a / b Gb/s"], rows)


def fig13(plots: Path) -> str:
    t = _csv(plots, "scr-fig13a-latency")
    rows = [[r["cc"], _f(r["latency_tenant_us"], 2), _f(r["bandwidth_tenant_gbps"])] for r in t.iter_rows(named=True)]
    return _table(["policy", "256 B tenant latency (µs)", "64 KiB tenant Gb/s"], rows)


def fig9(plots: Path) -> str:
    rows = []
    for strategy in ("scale", "reset", "scale-start-low"):
        t = _csv(plots, f"scr-fig9-{strategy}")
        end = t.filter(pl.col("time_us") > pl.col("time_us").max() - 100).group_by("name").agg(
            pl.col("throughput_gbps").mean())
        x = end["throughput_gbps"].to_list()
        jain = sum(x) ** 2 / (len(x) * sum(v * v for v in x))
        # The last QP joins 1400 µs in (scr-eight-qps.yaml).
        settled = convergence_us(t.filter(pl.col("time_us") >= 1400.0), by="name")
        settle = None if settled is None else settled - 1400.0
        rows.append([strategy, str(len(x)), f"{_f(min(x))}–{_f(max(x))}", _f(jain, 3), _f(sum(x)),
                     "never" if settle is None else _f(settle, 0)])
    return _table(["join strategy", "QPs sending", "each QP's Gb/s, last 100 µs", "Jain", "total Gb/s",
                   "rates settle after the last join (µs)"], rows)


def table5(plots: Path) -> str:
    t = _csv(plots, "scr-table5-convergence")
    paper = {"step-0.02": "294", "step-0.05": "122", "step-0.1": "49"}
    rows = [[r["step"].removeprefix("step-") + " Gb/s", paper.get(r["step"], "—"), _f(r["convergence_us"], 0)]
            for r in t.iter_rows(named=True)]
    return _table(["step", "SCR (µs)", "rdmalab (µs)"], rows)


def fig12(plots: Path) -> str:
    rows = []
    for verb in ("write", "read"):
        t = _csv(plots, f"scr-fig12-{verb}-fairness")
        for qps in sorted(set(t["qps"].to_list())):
            g = {r["policy"]: r for r in t.filter(pl.col("qps") == qps).iter_rows(named=True)}
            rows.append([verb.upper(), str(qps)] + [f"{_f(g[p]['jain'], 2)} / {_f(g[p]['total_gbps'])}"
                                                     for p in ("default", "static", "water-filling")])
    return _table(["verb", "QPs", "default: Jain / Gb/s", "static", "water filling"], rows)


def fig21(plots: Path) -> str:
    rows = []
    for f in sorted(plots.glob("scr-fig21-*-jain.csv")):
        name = f.stem.removeprefix("scr-fig21-").removesuffix("-jain")
        per = pl.read_csv(plots / f"scr-fig21-{name}.csv")
        for r in pl.read_csv(f).iter_rows(named=True):
            g = per.filter(pl.col("cc") == r["policy"])["gbps"].to_list()
            rows.append([name, r["policy"], " / ".join(_f(x) for x in g), _f(r["jain"], 2), _f(r["total_gbps"])])
    return _table(["case", "policy", "Gb/s per tenant", "Jain", "total Gb/s"], rows)


def fig22(plots: Path) -> str:
    t = _csv(plots, "scr-fig22")
    rows = [[f"{r['cc']} ({r['event']})"] + [_f(r[k], 2) for k in
            ("trigger_us", "wait_us", "processing_us", "install_us", "total_us")] for r in t.iter_rows(named=True)]
    return _table(["run (event)", "trigger µs", "wait µs", "processing µs", "install µs", "total µs"], rows)


def fig18(plots: Path) -> str:
    t = _csv(plots, "scr-fig18-means")
    rows = [[r["workload.perftest[1].rate"], r["cc"], _f(r["swift_gbps"]), _f(r["cross_gbps"]),
             _f(r["mean_queue_kb"]), _f(r["max_queue_kb"])] for r in t.iter_rows(named=True)]
    return _table(["cross traffic", "controller", "bulk QP Gb/s", "cross Gb/s", "mean queue KB", "max queue KB"],
                  rows)


def fig14(plots: Path) -> str:
    t = _csv(plots, "scr-fig14")
    rows = [[_f(r["dequeue_gbps"], 0), _f(r["fabric_gbps"]), _f(r["peer_gbps"]), _f(r["pcie_read_gbps"]),
             _f(r["dma_reads_per_us"], 2)] for r in t.iter_rows(named=True)]
    return _table(["dequeue rate Gb/s", "fabric Gb/s", "peer Gb/s", "PCIe DMA read Gb/s", "DMA reads per µs"], rows)


def fig15a(plots: Path) -> str:
    t = _csv(plots, "scr-fig15a")
    qd, size = "workload.perftest[0].queue_depth", "workload.perftest[0].message_size"
    sizes = list(dict.fromkeys(t[size].to_list()))
    rows = []
    for (d,), g in t.group_by([qd], maintain_order=True):
        by = dict(zip(g[size], g["bytes_per_event"]))
        rows.append([str(d)] + [_f(by[s] / 1e3) for s in sizes])
    return _table(["queue depth"] + [f"{s} KB/event" for s in sizes], rows)


def fig15b(plots: Path) -> str:
    t = _csv(plots, "scr-fig15b")
    rows = [[r["control.processing"], _f(r["bytes_per_event"] / 1e3), str(r["events_processed"])]
            for r in t.iter_rows(named=True)]
    return _table(["processing per event", "KB per processed TX event", "events processed in 1 ms"], rows)


@dataclass
class Generator:
    source: Source
    render: Callable[[Path], str]


GENERATORS: dict[str, Generator] = {
    "scr-table2": Generator(Source("scr/scr-table2.yaml", "scr-table2"), table2),
    "scr-fig11": Generator(Source("scr/scr-water-filling-grid.yaml", "scr-fig11"), fig11),
    "scr-fig13": Generator(Source("scr/scr-latency-isolation.yaml", "scr-fig13"), fig13),
    "scr-fig9": Generator(Source("scr/scr-water-filling-trace.yaml", "scr-fig9"), fig9),
    "scr-table5": Generator(Source("scr/scr-water-filling-steps.yaml", "scr-table5"), table5),
    "scr-fig12": Generator(Source("scr/scr-water-filling-scale.yaml", "scr-fig12"), fig12),
    "scr-fig21a": Generator(Source("scr/scr-gpudirect-fairness.yaml", "scr-fig21a"), fig21),
    "scr-fig21b": Generator(Source("scr/scr-nvmeof-fairness.yaml", "scr-fig21b"), fig21),
    "scr-fig22": Generator(Source("scr/scr-fig22-breakdown.yaml", "scr-fig22"), fig22),
    "scr-fig18": Generator(Source("scr/scr-fig18-swift-cross.yaml", "scr-fig18"), fig18),
    "scr-fig14": Generator(Source("scr/scr-fig14-dequeue-rate.yaml", "scr-fig14"), fig14),
    "scr-fig15a": Generator(Source("scr/scr-fig15a-coalescing.yaml", "scr-fig15a"), fig15a),
    "scr-fig15b": Generator(Source("scr/scr-fig15b-coalescing.yaml", "scr-fig15b"), fig15b),
}


def run_source(src: Source, runs: Path, cache: dict[str, Path]) -> Path:
    """Run the shipped command (once per invocation); return its plots directory."""
    if src.sweep not in cache:
        out = runs / src.out
        cmd = [sys.executable, "-m", "rdmalab", "sweep", str(ROOT / "examples" / src.sweep), "--out", str(out),
               "--quiet"]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{src.command()} failed:\n{r.stderr}")
        cache[src.sweep] = out / "plots"
    return cache[src.sweep]


def render_block(key: str, runs: Path, cache: dict[str, Path]) -> str:
    g = GENERATORS.get(key)
    if g is None:
        raise SystemExit(f"unknown generated block `{key}`; known: {', '.join(GENERATORS)}")
    plots = run_source(g.source, runs, cache)
    return (f"Generated by `python3 scripts/regen_docs_tables.py` from `{g.source.command()}`:\n\n"
            f"{g.render(plots)}\n")


def _shown(doc: Path) -> str:
    return str(doc.relative_to(ROOT)) if doc.is_relative_to(ROOT) else str(doc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="rewrite nothing; fail if a block is out of date")
    ap.add_argument("--runs", type=Path, help="where to keep the sweeps' output (default: a temporary directory)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rdmalab-docs-") as tmp:
        runs = args.runs or Path(tmp)
        cache: dict[str, Path] = {}
        stale = []
        for doc in sorted(DOCS.glob("*.md")):
            text = doc.read_text()
            new = BLOCK.sub(lambda m: m.group(1) + render_block(m.group("key"), runs, cache) + m.group(4), text)
            if new == text:
                continue
            if args.check:
                stale.append(doc)
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), _shown(doc), "regenerated"))
            else:
                doc.write_text(new)
                print(f"rewrote {_shown(doc)}")
        if stale:
            print(f"\n{len(stale)} doc page(s) out of date: run python3 scripts/regen_docs_tables.py", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
