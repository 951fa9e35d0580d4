"""Analysis functions against answers worked out by hand on small tables."""

import re

import polars as pl
import pytest

from rdmalab import analysis as A


def flows(sizes, slowdowns, starts, run="r"):
    return pl.DataFrame({
        "run_id": [run] * len(sizes),
        "size_bytes": pl.Series(sizes, dtype=pl.UInt64),
        "slowdown": pl.Series(slowdowns, dtype=pl.Float64),
        "start_ps": pl.Series(starts, dtype=pl.UInt64),
    })


def test_slowdown_buckets_split_by_flow_count_and_use_nearest_rank():
    # sizes 1..8; in bucket 0 (sizes 1-4) the slowdowns are 4,1,3,2 -> sorted 1,2,3,4
    f = flows(range(1, 9), [4.0, 1.0, 3.0, 2.0, 10.0, 20.0, 30.0, 40.0], [i * 100 for i in range(1, 9)])
    t = A.slowdown_by_size(f.sample(fraction=1.0, shuffle=True, seed=3), buckets=2)
    assert t["bucket"].to_list() == [0, 1]
    assert t["flows"].to_list() == [4, 4]
    assert t["size_min_bytes"].to_list() == [1, 5] and t["size_max_bytes"].to_list() == [4, 8]
    assert t["mean"].to_list() == [2.5, 25.0]
    # nearest rank: p50 of 4 values is the 2nd, p95 / p99 / p99.9 the 4th
    assert t["p50"].to_list() == [2.0, 20.0]
    assert t["p95"].to_list() == [4.0, 40.0]
    assert t["p99"].to_list() == [4.0, 40.0]
    assert t["p99_9"].to_list() == [4.0, 40.0]


def test_slowdown_start_window_drops_warm_up_and_tail():
    f = flows(range(1, 9), [4.0, 1.0, 3.0, 2.0, 10.0, 20.0, 30.0, 40.0], [i * 100 for i in range(1, 9)])
    t = A.slowdown_by_size(f, buckets=2, start_ps=200, end_ps=800)  # keeps sizes 2..7
    assert t["size_min_bytes"].to_list() == [2, 5] and t["size_max_bytes"].to_list() == [4, 7]
    assert t["p50"].to_list() == [2.0, 20.0]  # sorted 1,2,3 -> 2nd; 10,20,30 -> 2nd
    assert t["p95"].to_list() == [3.0, 30.0]


def test_twenty_buckets_of_five_percent_each_and_groups_stay_apart():
    a = flows(range(100), [1.0] * 100, [0] * 100, run="a")
    b = flows(range(40), [float(i) for i in range(40)], [0] * 40, run="b")
    t = A.slowdown_by_size(pl.concat([b, a]), by="run_id")
    ta, tb = t.filter(pl.col("run_id") == "a"), t.filter(pl.col("run_id") == "b")
    assert ta["flows"].to_list() == [5] * 20 and tb["flows"].to_list() == [2] * 20
    assert ta["size_max_bytes"].to_list() == list(range(4, 100, 5))
    # run b, bucket 19 holds slowdowns 38 and 39: p50 -> 38, p95 -> 39
    last = tb.filter(pl.col("bucket") == 19)
    assert last["p50"].item() == 38.0 and last["p95"].item() == 39.0
    assert t["run_id"].to_list()[:20] == ["a"] * 20  # sorted by group


def qp_samples(rows):
    return pl.DataFrame(rows, schema={"time_ps": pl.UInt64, "qp": pl.UInt32, "dequeue_rate_bps": pl.UInt64,
                                      "throughput_bps": pl.UInt64}, orient="row")


def test_jain_index_per_window():
    s = qp_samples([
        (0, 0, 100, 10), (50, 0, 100, 30), (0, 1, 100, 20),  # window 0: means 20 and 20 -> 1
        (100, 0, 100, 10), (150, 1, 100, 30),                 # window 1: 10 and 30 -> 40²/(2·1000) = 0.8
        (200, 0, 100, 0), (250, 1, 100, 0),                   # window 2: all zero -> null
        (300, 0, 100, 50),                                    # window 3: one QP -> 1
    ])
    j = A.jain_fairness(s, window_ps=100)
    assert j["window_start_ps"].to_list() == [0, 100, 200, 300]
    assert j["window_end_ps"].to_list() == [100, 200, 300, 400]
    assert j["qps"].to_list() == [2, 2, 2, 1]
    assert j["jain_index"].to_list() == [pytest.approx(1.0), pytest.approx(0.8), None, pytest.approx(1.0)]
    only1 = A.jain_fairness(s, window_ps=100, qps=[1])
    assert only1["qps"].to_list() == [1, 1, 1]


def test_convergence_time_after_an_event():
    js = [0.5, 0.6, 0.99, 0.7, 0.96, 0.97, 0.98, 0.99, 0.99, 0.99]
    fair = pl.DataFrame({"window_start_ps": [i * 100 for i in range(10)], "jain_index": js})
    c = A.convergence_time(fair, after_ps=100)
    assert c["converged_at_ps"].item() == 400 and c["convergence_ps"].item() == 300
    c = A.convergence_time(fair, after_ps=100, hold_ps=100)  # one good window is enough
    assert c["convergence_ps"].item() == 100
    assert A.convergence_time(fair, after_ps=100, threshold=0.999)["convergence_ps"].item() is None
    two = pl.concat([fair.with_columns(pl.lit("x").alias("g")),
                     fair.with_columns(pl.lit("y").alias("g"), pl.lit(1.0).alias("jain_index"))])
    c = A.convergence_time(two, after_ps=0, by="g")
    assert c["g"].to_list() == ["x", "y"] and c["convergence_ps"].to_list() == [400, 0]


def test_rate_and_throughput_series():
    s = qp_samples([(10, 0, 100, 4), (20, 0, 50, 8), (10, 1, 100, 1), (120, 1, 30, 2)])
    r = A.rate_series(s, window_ps=100)
    assert r.select("time_ps", "qp").rows() == [(0, 0), (0, 1), (100, 1)]
    assert r["dequeue_rate_bps"].to_list() == [75.0, 100.0, 30.0]
    assert r["throughput_bps"].to_list() == [6.0, 1.0, 2.0]
    assert A.rate_series(s, qps=[1])["time_ps"].to_list() == [10, 120]
    t = A.throughput_series(s)
    assert t.rows() == [(10, 5.0), (20, 8.0), (120, 2.0)]
    assert A.throughput_series(s, window_ps=100).rows() == [(0, 6.5), (100, 2.0)]


def test_queue_cdf():
    ports = pl.DataFrame({
        "time_ps": [0, 1, 2, 3, 0, 1],
        "node": [1, 1, 1, 1, 2, 2], "node_name": ["s0"] * 4 + ["s1"] * 2, "port": [0] * 6,
        "queued_bytes": [0, 0, 10, 20, 0, 0],
    })
    c = A.queue_cdf(ports)
    assert c.rows() == [(0, pytest.approx(4 / 6)), (10, pytest.approx(5 / 6)), (20, 1.0)]
    busy = A.queue_cdf(ports, busy_only=True)  # s1 never queued anything
    assert busy.rows() == [(0, 0.5), (10, 0.75), (20, 1.0)]
    assert A.queue_cdf(ports, start_ps=2).rows() == [(10, 0.5), (20, 1.0)]
    assert A.queue_cdf(ports, nodes=["s1"]).rows() == [(0, 1.0)]


def test_pfc_pause_time_pairs_pause_and_resume():
    ev = pl.DataFrame({
        "time_ps": [100, 150, 300, 500, 50, 900],
        "node": [1, 1, 1, 1, 2, 2], "node_name": ["s0"] * 4 + ["s1"] * 2, "port": [3] * 4 + [0] * 2,
        "class": [3] * 6,
        "event": ["pause", "pause", "resume", "pause", "resume", "pause"],
        "end": [1000] * 4 + [950] * 2,
    })
    p = A.pfc_pause_time(ev, end_ps=1000)
    # s0: 100..300 (the pause at 150 only refreshes) + 500..1000 (still paused at the end)
    assert p.select("node_name", "port", "pauses", "paused_ps").rows() == [("s0", 3, 3, 700), ("s1", 0, 1, 100)]
    per_row_end = A.pfc_pause_time(ev, end_ps="end")
    assert per_row_end["paused_ps"].to_list() == [700, 50]


def test_control_delay_stats():
    d = pl.DataFrame({"time_ps": [1, 2, 3, 4, 5], "qp": [0] * 5, "delay_ps": [5, 1, 4, 2, 3]},
                     schema={"time_ps": pl.UInt64, "qp": pl.UInt32, "delay_ps": pl.UInt64})
    s = A.control_delay_stats(d)
    assert s.row(0, named=True) == {"count": 5, "mean_ps": 3.0, "p50_ps": 3, "p95_ps": 5, "p99_ps": 5,
                                    "p99_9_ps": 5, "max_ps": 5}


def test_parse_time():
    assert A.parse_time_ps("1.5ms") == 1_500_000_000 and A.parse_time_ps("20us") == 20_000_000
    with pytest.raises(ValueError, match="with a unit"):
        A.parse_time_ps("20")


def test_default_buckets_give_each_bucket_enough_flows_for_its_percentile():
    assert A.flows_needed(0.99) == 100 and A.flows_needed(0.999) == 1000
    assert A.flows_needed(0.5) == A.MIN_FLOWS_PER_BUCKET == 10
    one = lambda n, run="r": flows([1] * n, [1.0] * n, [0] * n, run)  # noqa: E731
    assert A.default_buckets(one(2000)) == 20  # capped at 20
    assert A.default_buckets(one(350)) == 3  # 116-117 flows each: a p99 that is not the maximum
    assert A.default_buckets(one(50)) == 1  # too few for p99: one bucket of all
    assert A.default_buckets(one(350), q=0.5) == 20
    assert A.default_buckets(one(0)) == 1
    # the smallest group decides, so every group's buckets hold enough
    two = pl.concat([one(2000, "a"), one(250, "b")])
    assert A.default_buckets(two, by="run_id") == 2
    # flows outside the start window do not count
    assert A.default_buckets(flows([1] * 400, [1.0] * 400, list(range(400))), start_ps=200) == 2


def test_pfc_paused_series_splits_pauses_across_windows():
    ev = pl.DataFrame({
        "node": [1, 1, 1, 2], "node_name": ["s0"] * 3 + ["s1"], "port": [0, 0, 0, 1], "class": [3, 3, 3, 3],
        "time_ps": [50, 70, 180, 90], "event": ["pause", "pause", "resume", "pause"],
    })
    # s0:0 paused 50..180 (the second pause only refreshes it); s1:1 from 90 to the end, 250
    t = A.pfc_paused_series(ev, end_ps=250, window_ps=100)
    assert t["time_ps"].to_list() == [0, 100, 200]
    assert t["paused_ps"].to_list() == [50 + 10, 80 + 100, 50]
    assert t["paused_ports"].to_list() == [2, 2, 1]


def test_counter_series_sums_sample_periods_into_windows():
    c = pl.DataFrame({"time_ps": [10, 20, 30, 40, 45], "ecn_marked_packets": [1, 2, 3, 4, 5],
                      "cnps_sent": [0, 1, 0, 1, 0]})
    # a row counts the period that ends at its time: 20 belongs to [0, 20), 40 to [20, 40)
    t = A.counter_series(c, 20)
    assert t["time_ps"].to_list() == [0, 20, 40]
    assert t["ecn_marked_packets"].to_list() == [3, 7, 5]
    assert t["cnps_sent"].to_list() == [1, 1, 0]


def test_stats_of_an_empty_table_are_an_empty_table_with_or_without_groups():
    """Without `by`, a quantile of no rows indexed past the end and raised
    polars' OutOfBoundsError; with `by` it gave an empty frame."""
    d = pl.DataFrame({"run_id": pl.Series([], dtype=pl.String), "delay_ps": pl.Series([], dtype=pl.UInt64)})
    for by in (None, ["run_id"]):
        t = A.control_delay_stats(d, by=by)
        assert t.height == 0
        assert [c for c in t.columns if c != "run_id"] == [
            "count", "mean_ps", "p50_ps", "p95_ps", "p99_ps", "p99_9_ps", "max_ps"]


@pytest.mark.parametrize("call,says", [
    (lambda f, q: A.slowdown_by_size(f, buckets=0), "buckets: 0 — allowed: a whole number of buckets, at least 1"),
    (lambda f, q: A.slowdown_by_size(f, buckets=-1), "buckets: -1"),
    (lambda f, q: A.slowdown_by_size(f, buckets=2.5), "buckets: 2.5"),
    (lambda f, q: A.slowdown_by_size(f, quantiles=[1.5]), "quantiles: 1.5 — allowed: numbers above 0 and at most 1"),
    (lambda f, q: A.slowdown_by_size(f, quantiles=[0]), "quantiles: 0 —"),
    (lambda f, q: A.control_delay_stats(q, quantiles=[float("nan")]), "quantiles: nan"),
    (lambda f, q: A.jain_fairness(q, window_ps=0), "window_ps: 0 — allowed: a whole number of picoseconds above 0"),
    (lambda f, q: A.jain_fairness(q, window_ps=-1), "window_ps: -1"),
    (lambda f, q: A.jain_fairness(q, window_ps="10us"), "window_ps: '10us'"),
    (lambda f, q: A.rate_series(q, window_ps=0), "window_ps: 0 — allowed: a whole number of picoseconds above 0 "
                                                 "(or None: no windows)"),
    (lambda f, q: A.throughput_series(q, window_ps=-5), "window_ps: -5"),
    (lambda f, q: A.counter_series(q, 0), "window_ps: 0"),
    (lambda f, q: A.pfc_paused_series(q, 100, 0), "window_ps: 0"),
    (lambda f, q: A.convergence_time(q, 0, hold_ps=0), "hold_ps: 0"),
])
def test_meaningless_arguments_are_refused_naming_them(call, says):
    """They were accepted: buckets=0 gave one bucket, -1 negative bucket
    numbers, a window of 0 divided by zero into frames of nulls."""
    f = flows(range(1, 9), [1.0] * 8, [0] * 8)
    q = pl.DataFrame({"time_ps": [0, 10], "qp": [0, 1], "throughput_bps": [1, 2], "dequeue_rate_bps": [1, 2]})
    with pytest.raises(ValueError, match=re.escape(says)):
        call(f, q)


def test_numpy_integers_are_whole_numbers_too():
    np = pytest.importorskip("numpy")
    q = pl.DataFrame({"time_ps": [0, 10], "qp": [0, 1], "throughput_bps": [1, 2]})
    assert A.jain_fairness(q, window_ps=np.int64(100))["qps"].to_list() == [2]
    f = flows(range(1, 9), [1.0] * 8, [0] * 8)
    assert A.slowdown_by_size(f, buckets=np.int32(2), quantiles=[np.float64(0.5)]).height == 2


def test_fixed_size_edges_are_the_same_for_every_setting_and_include_their_upper_edge():
    """`buckets` as size edges: (edge before, edge] per bucket, the last above
    the last edge, empty buckets left out; each setting cut at the same sizes
    (equal-count buckets would cut each setting where its own flows fall)."""
    a = flows([50, 100, 101, 5000, 20_000], [1.0, 2.0, 3.0, 4.0, 5.0], [1] * 5, run="a")
    b = flows([10, 99, 20_000, 30_000], [6.0, 7.0, 8.0, 9.0], [1] * 4, run="b")
    t = A.slowdown_by_size(pl.concat([a, b]), by="run_id", buckets=(100, 10_000))
    rows = {(r["run_id"], r["bucket"]): (r["flows"], r["size_min_bytes"], r["size_max_bytes"])
            for r in t.iter_rows(named=True)}
    assert rows == {("a", 0): (2, 50, 100), ("a", 1): (2, 101, 5000), ("a", 2): (1, 20_000, 20_000),
                    ("b", 0): (2, 10, 99), ("b", 2): (2, 20_000, 30_000)}
    assert A.size_edges("pfabric") == (100_000, 10_000_000)
    assert A.size_edges("10KB, 100KB,1MiB") == (10_000, 100_000, 1_048_576)
    for bad in ("10KB,5KB", "0,1KB", "banana", "1.5"):
        with pytest.raises(ValueError, match="buckets"):
            A.size_edges(bad)
    with pytest.raises(ValueError, match="each above the one before"):
        A.slowdown_by_size(a, buckets=(100, 100))


def test_analyze_takes_named_or_written_edges(tmp_path):
    from conftest import ROOT, rdmalab_cli

    out = tmp_path / "o"
    assert rdmalab_cli("run", ROOT / "examples" / "dumbbell-dcqcn.yaml", "--out", out, "--quiet").returncode == 0
    r = rdmalab_cli("analyze", out, "--buckets", "pfabric")
    assert r.returncode == 0 and "at fixed edges 100 KB, 10 MB" in r.stdout, r.stdout + r.stderr
    r = rdmalab_cli("analyze", out, "--buckets", "10KB,5KB")
    assert r.returncode == 2 and "--buckets: `10KB,5KB` — allowed: whole byte sizes above 0" in r.stderr, r.stderr
