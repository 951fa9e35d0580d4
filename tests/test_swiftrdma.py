"""SwiftRDMA's shipped sweeps run with one command each, draw their figures,
and their numbers show the contention and what the policies do about it."""

from pathlib import Path

import polars as pl
from conftest import run_sweep


def sweep(examples: Path, name: str, out: Path) -> Path:
    return run_sweep(examples / "swiftrdma" / name, out)


def test_cache_thrash_and_qp_reuse(examples, tmp_path):
    plots = sweep(examples, "swiftrdma-cache-reuse.yaml", tmp_path / "cache")
    assert (plots / "swiftrdma-cache-throughput.png").stat().st_size > 0
    t = pl.read_csv(plots / "swiftrdma-cache-throughput.csv")
    gbps = {(r["policy"], r["qps"]): r["gbps"] for r in t.iter_rows(named=True)}
    # Without a policy throughput falls as QPs outgrow the caches (paper: 96.6 -> 48 Gb/s).
    assert gbps["no-policy", 256] > 80 and gbps["no-policy", 4096] < 0.6 * gbps["no-policy", 256]
    # The reuse policy needs more than 512 QPs, and recovers most of the loss up to 4096.
    assert gbps["reuse", 512] == gbps["no-policy", 512]
    for n in (1024, 2048, 4096):
        assert gbps["reuse", n] > 1.2 * gbps["no-policy", n], n


def test_fig5_intents_protect_latency_jobs(examples, tmp_path):
    plots = sweep(examples, "swiftrdma-fig5-qos.yaml", tmp_path / "qos")
    t = pl.read_csv(next(plots.glob("swiftrdma-fig5*.csv")))
    row = {(r["host"], r["name"]): r for r in t.iter_rows(named=True)}
    assert row["policies", "ls"]["p99_us"] < 0.2 * row["no-policies", "ls"]["p99_us"]
    assert row["policies", "lt"]["gbps"] > 5 * row["no-policies", "lt"]["gbps"]
