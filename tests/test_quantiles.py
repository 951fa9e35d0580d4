"""One quantile definition across every output (docs/outputs.md, "Quantiles").

The same flows must give the same p50 / p95 / p99 in the run summary,
`rdmalab analyze`, `rdmalab hpcc analyze`, `tenants.csv`, the analysis
functions the report draws from and the case-study figures: the ⌈q·n⌉-th
smallest (nearest rank). One run with two tenants is checked against
`rdmalab.quantiles.nearest_rank` computed here from its `flows.csv` and
`fct.txt`; the data is chosen so that another common definition (the value at
index round((n − 1)·q), Polars' default "nearest", which the core and the
figures used before) gives other answers, so an output that used it would fail. `apps.csv` and the
host policies' p99 signal are checked in the core's tests
(crates/rdmalab-core/tests/quantiles.rs).
"""

import csv
import math
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import rdmalab_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from rdmalab import analysis as A
from rdmalab.quantiles import nearest_rank, nearest_rank_expr, nearest_rank_index

QS = (0.5, 0.95, 0.99)

SCENARIO = """\
name: quantiles
seed: 3
duration: 3ms
topology:
  kind: dumbbell
  left_hosts: 4
  right_hosts: 4
  host_link: {rate: 100Gbps, delay: 1us}
  bottleneck_link: {rate: 100Gbps, delay: 1us}
cc: {algorithm: dcqcn}
workload:
  tenants:
    blue: {hosts: [h0, h1]}
    green: {hosts: [h2, h3]}
  poisson:
    cdf: fbhdp
    load: 0.4
    hosts: [h0, h1, h2, h3, h4, h5, h6, h7]
    duration: 2ms
"""


def rounded_index(values, q):
    """The definition rdmalab no longer uses anywhere: index round-half-up((n − 1)·q)."""
    xs = sorted(values)
    return xs[math.floor((len(xs) - 1) * q + 0.5)]


# ------------------------------------------------------------------ the definition


def test_the_quantile_is_the_ceil_q_n_th_smallest():
    xs = list(range(1, 101))
    assert [nearest_rank(xs, q) for q in (0.5, 0.95, 0.99, 0.07, 0.0, 1.0)] == [50, 95, 99, 7, 1, 100]
    assert nearest_rank(range(10, 0, -1), 0.5) == 5  # any order; the 5th of 10, not the 6th
    assert nearest_rank(range(1, 21), 0.95) == 19 and nearest_rank(range(1, 21), 0.99) == 20
    assert nearest_rank([7.5], 0.99) == 7.5
    assert math.isnan(nearest_rank([], 0.5))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=60), min_size=1, max_size=4),
       st.sampled_from((0.0, 0.07, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0)))
def test_the_polars_expression_is_the_same_definition(groups, q):
    df = pl.DataFrame({"g": [i for i, g in enumerate(groups) for _ in g],
                       "x": [x for g in groups for x in g]})
    got = df.group_by("g", maintain_order=True).agg(nearest_rank_expr("x", q))["x"].to_list()
    assert got == [nearest_rank(g, q) for g in groups]
    assert all(0 <= nearest_rank_index(len(g), q) < len(g) for g in groups)


# ------------------------------------------------------------------ every output of one run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("quantiles")
    (d / "q.yaml").write_text(SCENARIO)
    r = rdmalab_cli("run", d / "q.yaml", "--out", d / "o")
    assert r.returncode == 0, r.stderr
    return d / "o", r.stdout


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _slowdowns(out: Path, tenant: str | None = None) -> list[float]:
    return [float(r["slowdown"]) for r in _rows(out / "flows.csv")
            if r["piece"] == "false" and tenant in (None, r["tenant"])]


def test_the_data_tells_the_definitions_apart(run):
    """Guards the tests below: on this run's flows the other definition answers otherwise."""
    out, _ = run
    cases = [(_slowdowns(out, t), q) for t in ("blue", "green", None) for q in QS]
    assert len(_slowdowns(out)) > 500
    differ = [(len(xs), q) for xs, q in cases if nearest_rank(xs, q) != rounded_index(xs, q)]
    assert len(differ) >= 3, differ


def test_tenants_csv(run):
    out, _ = run
    rows = {r["tenant"]: r for r in _rows(out / "tenants.csv")}
    assert set(rows) == {"blue", "green"}
    for t, r in rows.items():
        xs = _slowdowns(out, t)
        # flows.csv and tenants.csv both print 6 decimals of the same f64.
        assert r["slowdown_p50"] == f"{nearest_rank(xs, 0.5):.6f}", t
        assert r["slowdown_p99"] == f"{nearest_rank(xs, 0.99):.6f}", t


def test_run_summary(run):
    from rdmalab.units import fmt_time

    out, stdout = run
    xs = _slowdowns(out)
    want = "  ".join(f"p{round(q * 100)} {nearest_rank(xs, q):.2f}" for q in QS)
    assert re.search(r"FCT slowdown\s+" + re.escape(want) + r"  max", stdout), stdout
    fct_us = [int(r["fct_ps"]) / 1e6 for r in _rows(out / "flows.csv")]
    want = f"p50 {fmt_time(nearest_rank(fct_us, 0.5) * 1e6)}  p99 {fmt_time(nearest_rank(fct_us, 0.99) * 1e6)}"
    assert re.search(r"FCT\s+" + re.escape(want), stdout), stdout


def test_rdmalab_analyze_and_the_reports_table(run):
    out, _ = run
    xs = _slowdowns(out)
    r = rdmalab_cli("analyze", out, "--buckets", 1, "--csv")
    assert r.returncode == 0, r.stderr
    (row,) = list(csv.DictReader(r.stdout.splitlines()))
    for q in QS:
        assert float(row[A.quantile_name(q)]) == nearest_rank(xs, q), q
    # The report's tables and plots come from slowdown_by_size, per group.
    flows = pl.read_csv(out / "flows.csv").filter(pl.col("tenant").is_not_null())  # h4-h7 have none
    t = A.slowdown_by_size(flows, by="tenant", buckets=1, quantiles=QS)
    assert t["tenant"].to_list() == ["blue", "green"]
    for tenant, *ps in t.select(["tenant"] + [A.quantile_name(q) for q in QS]).iter_rows():
        assert ps == [nearest_rank(_slowdowns(out, tenant), q) for q in QS], tenant


def test_rdmalab_hpcc_analyze(run):
    """ns-3's slowdown (its standalone FCT), rdmalab's quantile."""
    from rdmalab.hpcc import read_fct

    out, _ = run
    xs = read_fct(out / "fct.txt")["slowdown"].to_list()
    assert nearest_rank(xs, 0.5) != rounded_index(xs, 0.5)
    r = rdmalab_cli("hpcc", "analyze", out / "fct.txt", "--buckets", 1, "--csv")
    assert r.returncode == 0, r.stderr
    (row,) = list(csv.DictReader(r.stdout.splitlines()))
    assert int(row["flows"]) == len(xs)
    for q in QS:
        assert float(row[A.quantile_name(q)]) == pytest.approx(nearest_rank(xs, q), rel=1e-12), q


def test_case_study_figures(run):
    from rdmalab.casestudies import attacks, srnic
    from rdmalab.sweep.store import Results

    out, _ = run
    results = Results(out)
    xs = _slowdowns(out)
    (v,) = attacks.victim_slowdowns(results, below=10**12).iter_rows(named=True)
    assert v["victim_flows"] == len(xs)
    assert [v["p50"], v["p99"], v["p99_9"]] == [nearest_rank(xs, q) for q in (0.5, 0.99, 0.999)]

    class AsFabricSweep:
        """The run as one point of SRNIC Fig. 12's sweep (its topology and nic axes)."""

        def table(self, name):
            return results.table(name).with_columns(pl.lit("h8").alias("topology"), pl.lit("x").alias("nic"))

        def summaries(self):
            return results.summaries()

    (_, t), *_ = srnic.fig12(AsFabricSweep())
    fct_ps = [int(r["fct_ps"]) for r in _rows(out / "flows.csv")]
    assert nearest_rank(fct_ps, 0.99) != rounded_index(fct_ps, 0.99)
    assert t["p99_fct_us"].to_list() == [nearest_rank(fct_ps, 0.99) / 1e6]


def test_control_delay_stats():
    delays = pl.DataFrame({"delay_ps": pl.Series([40, 10, 30, 20, 60, 50], dtype=pl.UInt64)})
    t = A.control_delay_stats(delays, quantiles=(0.5, 0.99))
    assert (t["p50_ps"][0], t["p99_ps"][0]) == (30, 60)  # the 3rd and 6th of 6
