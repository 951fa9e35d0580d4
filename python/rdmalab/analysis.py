"""Analysis of run outputs (docs/outputs.md), for one run or a whole sweep.

Every function takes a table as a Polars DataFrame (or a pyarrow Table) — one
run's, or many runs stacked by `rdmalab.sweep.load_results` — and `by`, the
columns that split it into groups (e.g. `["run_id"]`, or the sweep parameters
to pool seeds). Times are integer picoseconds (`_ps`), rates bit/s (`_bps`),
sizes bytes. Quantiles are nearest-rank, rdmalab's one definition
(`rdmalab.quantiles`, docs/outputs.md "Quantiles"): the q-quantile of n sorted
values is the ⌈q·n⌉-th smallest.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Sequence, Union

import polars as pl
import pyarrow as pa

from rdmalab.quantiles import nearest_rank_expr

Frame = Union[pl.DataFrame, pa.Table]

DEFAULT_QUANTILES = (0.5, 0.95, 0.99, 0.999)

_TIME_UNITS_PS = {"ps": 1, "ns": 10**3, "us": 10**6, "ms": 10**9, "s": 10**12}


def parse_time_ps(text: str | int) -> int:
    """`1.5ms` -> 1_500_000_000 (picoseconds). A bare integer is already picoseconds."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ps|ns|us|ms|s)\s*", str(text))
    if not m:
        raise ValueError(f"`{text}` is not a time; write it with a unit, like `2ms` or `500us`")
    return round(float(m.group(1)) * _TIME_UNITS_PS[m.group(2)])


def quantile_name(q: float) -> str:
    """0.5 -> `p50`, 0.999 -> `p99_9`."""
    return "p" + f"{q * 100:g}".replace(".", "_")


def _df(t: Frame) -> pl.DataFrame:
    return t if isinstance(t, pl.DataFrame) else pl.from_arrow(t)


def _by(by: Sequence[str] | str | None) -> list[str]:
    return [by] if isinstance(by, str) else list(by or [])


def _window(df: pl.DataFrame, column: str, start_ps: int | None, end_ps: int | None) -> pl.DataFrame:
    if start_ps is not None:
        df = df.filter(pl.col(column) >= start_ps)
    if end_ps is not None:
        df = df.filter(pl.col(column) < end_ps)
    return df


def _group_agg(df: pl.DataFrame, keys: list[str], aggs: list[pl.Expr]) -> pl.DataFrame:
    if keys:
        return df.group_by(keys, maintain_order=True).agg(aggs).sort(keys, maintain_order=True)
    if df.height == 0:
        # No rows, no groups: an empty frame of the same columns, as with
        # `by` (a quantile of no rows indexed past the end).
        return pl.DataFrame(schema=df.lazy().select(aggs).collect_schema())
    return df.select(aggs)


def _check_window(window_ps, name: str = "window_ps", optional: bool = False) -> None:
    """A window length: a whole number of picoseconds above 0 (a window of 0
    divided by zero, a negative one ran backwards, silently)."""
    if window_ps is None and optional:
        return
    if isinstance(window_ps, bool) or not isinstance(window_ps, numbers.Integral) or window_ps <= 0:
        raise ValueError(f"{name}: {window_ps!r} — allowed: a whole number of picoseconds above 0"
                         f"{' (or None: no windows)' if optional else ''}; parse_time_ps('10us') gives one")


def _check_quantiles(quantiles: Sequence[float]) -> None:
    for q in quantiles:
        if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 < q <= 1:
            raise ValueError(f"quantiles: {q!r} — allowed: numbers above 0 and at most 1 (0.99 is the p99)")


# ------------------------------------------------------------------ FCT

#: A bucket's quantile is read only from at least this many flows (a p50 of 3 flows says little).
MIN_FLOWS_PER_BUCKET = 10
#: At most this many size buckets (20: 5% of the flows each, as the HPCC paper's plots).
MAX_BUCKETS = 20


#: Fixed flow-size edges that papers draw, in bytes: a bucket holds the flows in
#: (previous edge, edge], the last one those above the last edge.
NAMED_EDGES = {
    # pFabric (SIGCOMM'13) §5: small (0, 100KB], medium (100KB, 10MB], large above 10MB.
    "pfabric": (100_000, 10_000_000),
}


def size_edges(text: str) -> tuple[int, ...]:
    """Fixed bucket edges from `--buckets`: a name of NAMED_EDGES, or sizes
    separated by commas (`10KB,100KB,1MB`; units as in scenarios, a bare number
    is bytes), strictly increasing and above 0."""
    from rdmalab.casestudies import size_bytes

    if text in NAMED_EDGES:
        return NAMED_EDGES[text]
    edges = []
    for part in text.split(","):
        part = part.strip()
        try:
            v = size_bytes(part)
        except ValueError:
            raise ValueError(f"buckets: `{text}` — `{part}` is not a size; allowed: a number of buckets, "
                             f"{', '.join(NAMED_EDGES)}, or sizes separated by commas (10KB,100KB,1MB)") from None
        if v != int(v) or v <= 0 or (edges and v <= edges[-1]):
            raise ValueError(f"buckets: `{text}` — allowed: whole byte sizes above 0, each above the one before")
        edges.append(int(v))
    return tuple(edges)


def flows_needed(q: float) -> int:
    """How many flows a bucket needs for its q-quantile to be more than its largest value:
    ⌈1/(1−q)⌉ (p99: 100, p99.9: 1000), and at least MIN_FLOWS_PER_BUCKET (p50: 10)."""
    return max(MIN_FLOWS_PER_BUCKET, math.ceil(1 / (1 - q) - 1e-9))


def default_buckets(flows: Frame, by: Sequence[str] | str | None = None, q: float = 0.99,
                    start_ps: int | None = None, end_ps: int | None = None) -> int:
    """The number of size buckets for `slowdown_by_size` that gives every group's buckets
    `flows_needed(q)` flows each (at least 1, at most MAX_BUCKETS): e.g. 2000 flows → 20
    buckets for p99, 350 flows → 3."""
    keys = _by(by)
    df = _window(_df(flows), "start_ps", start_ps, end_ps)
    if df.height == 0:
        return 1
    n = df.group_by(keys).len()["len"].min() if keys else df.height
    return max(1, min(MAX_BUCKETS, int(n) // flows_needed(q)))


def slowdown_by_size(
    flows: Frame,
    by: Sequence[str] | str | None = None,
    buckets: int | Sequence[int] = 20,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    start_ps: int | None = None,
    end_ps: int | None = None,
) -> pl.DataFrame:
    """FCT slowdown by flow-size bucket, as in the HPCC paper's plots.

    Flows that started in [start_ps, end_ps) (drop warm-up and tail) are
    sorted by size (ties by slowdown, so the result does not depend on row
    order) and cut into `buckets` buckets of equal flow count (20 buckets:
    5% of the flows each; flow i of n goes to bucket ⌊i·buckets/n⌋). With
    `buckets` a sequence of sizes (`NAMED_EDGES`, `size_edges`), the edges are
    fixed instead, the same for every setting: bucket k holds the flows in
    (edges[k-1], edges[k]], the last bucket those above the last edge, and
    empty buckets are left out.
    Columns: the `by` columns, `bucket` (0 = smallest flows), `flows`,
    `size_min_bytes`, `size_max_bytes`, `mean`, and one column per quantile
    (`p50`, `p95`, `p99`, `p99_9`).
    """
    edges = None
    if isinstance(buckets, (tuple, list)):
        edges = [int(e) for e in buckets]
        if not edges or any(e <= 0 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
            raise ValueError(f"buckets: {buckets!r} — allowed: sizes above 0, each above the one before")
    elif isinstance(buckets, bool) or not isinstance(buckets, numbers.Integral) or buckets < 1:
        raise ValueError(f"buckets: {buckets!r} — allowed: a whole number of buckets, at least 1, or size edges")
    _check_quantiles(quantiles)
    keys = _by(by)
    df = _window(_df(flows), "start_ps", start_ps, end_ps)
    df = df.sort(keys + ["size_bytes", "slowdown"])
    if edges is not None:
        # The number of edges below a flow's size: (edges[k-1], edges[k]] is bucket k.
        bucket = pl.lit(0, pl.Int64)
        for e in edges:
            bucket = bucket + (pl.col("size_bytes") > e).cast(pl.Int64)
        df = df.with_columns(bucket.alias("bucket"))
    else:
        rank = pl.int_range(pl.len()).over(keys) if keys else pl.int_range(pl.len())
        n = pl.len().over(keys) if keys else pl.len()
        df = df.with_columns(((rank * buckets) // n).cast(pl.Int64).alias("bucket"))
    aggs = [
        pl.len().cast(pl.Int64).alias("flows"),
        pl.col("size_bytes").min().alias("size_min_bytes"),
        pl.col("size_bytes").max().alias("size_max_bytes"),
        pl.col("slowdown").mean().alias("mean"),
        *(nearest_rank_expr("slowdown", q).alias(quantile_name(q)) for q in quantiles),
    ]
    return df.group_by(keys + ["bucket"], maintain_order=True).agg(aggs).sort(keys + ["bucket"], maintain_order=True)


# ------------------------------------------------------------------ rates, fairness, convergence

def rate_series(
    qp_samples: Frame,
    qps: Sequence[int] | None = None,
    window_ps: int | None = None,
    by: Sequence[str] | str | None = None,
) -> pl.DataFrame:
    """Per-QP rate and throughput over time. With `window_ps`, the mean of each QP's samples
    whose `time_ps` falls in [k·window, (k+1)·window), reported at `time_ps` = k·window.
    Columns: the `by` columns, `time_ps`, `qp`, `dequeue_rate_bps`, `throughput_bps` (Float64 when windowed)."""
    _check_window(window_ps, optional=True)
    keys = _by(by)
    df = _df(qp_samples)
    if qps is not None:
        df = df.filter(pl.col("qp").is_in(list(qps)))
    cols = ["dequeue_rate_bps", "throughput_bps"]
    if window_ps is None:
        return df.select(keys + ["time_ps", "qp"] + cols).sort(keys + ["qp", "time_ps"], maintain_order=True)
    df = df.with_columns(((pl.col("time_ps") // window_ps) * window_ps).alias("time_ps"))
    return _group_agg(df, keys + ["qp", "time_ps"], [pl.col(c).mean() for c in cols]).select(
        keys + ["time_ps", "qp"] + cols)


def throughput_series(
    qp_samples: Frame, window_ps: int | None = None, by: Sequence[str] | str | None = None
) -> pl.DataFrame:
    """Total payload throughput of all QPs over time: the sum over QPs at each sample time,
    then with `window_ps` the mean over each window. Columns: `by`, `time_ps`, `throughput_bps`."""
    _check_window(window_ps, optional=True)
    keys = _by(by)
    df = _group_agg(_df(qp_samples), keys + ["time_ps"], [pl.col("throughput_bps").sum().cast(pl.Float64)])
    if window_ps is not None:
        df = df.with_columns(((pl.col("time_ps") // window_ps) * window_ps).alias("time_ps"))
        df = _group_agg(df, keys + ["time_ps"], [pl.col("throughput_bps").mean()])
    return df.select(keys + ["time_ps", "throughput_bps"])


def jain_fairness(
    qp_samples: Frame,
    window_ps: int,
    qps: Sequence[int] | None = None,
    by: Sequence[str] | str | None = None,
) -> pl.DataFrame:
    """Jain's fairness index of QP throughputs in time windows.

    In each window [k·window_ps, (k+1)·window_ps), each QP with samples there
    gets its mean `throughput_bps` x_i; J = (Σx_i)² / (n·Σx_i²), from 1/n (one
    QP gets everything) to 1 (all equal); null when every x_i is 0. Pass `qps`
    to judge only some QPs (e.g. the long flows). Columns: `by`,
    `window_start_ps`, `window_end_ps`, `qps` (n), `jain_index`.
    """
    _check_window(window_ps)
    keys = _by(by)
    df = _df(qp_samples)
    if qps is not None:
        df = df.filter(pl.col("qp").is_in(list(qps)))
    df = df.with_columns(((pl.col("time_ps") // window_ps) * window_ps).alias("window_start_ps"))
    per_qp = _group_agg(df, keys + ["window_start_ps", "qp"], [pl.col("throughput_bps").cast(pl.Float64).mean().alias("x")])
    out = _group_agg(per_qp, keys + ["window_start_ps"], [
        pl.len().cast(pl.Int64).alias("qps"),
        pl.col("x").sum().alias("s"),
        (pl.col("x") ** 2).sum().alias("s2"),
    ])
    jain = pl.when(pl.col("s2") > 0).then(pl.col("s") ** 2 / (pl.col("qps") * pl.col("s2"))).otherwise(None)
    return out.select(
        keys + ["window_start_ps", (pl.col("window_start_ps") + window_ps).alias("window_end_ps"), "qps",
                jain.alias("jain_index")]
    )


def convergence_time(
    fairness: Frame,
    after_ps: int,
    threshold: float = 0.95,
    hold_ps: int | None = None,
    by: Sequence[str] | str | None = None,
) -> pl.DataFrame:
    """How long after `after_ps` (e.g. when the last flow joined) Jain's index settles.

    Among the windows of `jain_fairness` that start at or after `after_ps`, the
    first window from which the index stays ≥ `threshold` in every window
    starting within `hold_ps` (or in every later window, if `hold_ps` is None).
    Columns: `by`, `converged_at_ps` (that window's start) and `convergence_ps`
    (= converged_at_ps − after_ps), both null if it never settles. The
    resolution is the window length.
    """
    _check_window(hold_ps, "hold_ps", optional=True)
    keys = _by(by)
    df = _df(fairness).filter(pl.col("window_start_ps") >= after_ps).sort(keys + ["window_start_ps"])
    groups = df.partition_by(keys, maintain_order=True, as_dict=True) if keys else {(): df}
    rows = []
    for key, g in groups.items():
        starts = g["window_start_ps"].to_list()
        ok = [j is not None and j >= threshold for j in g["jain_index"].to_list()]
        at = None
        for i, t in enumerate(starts):
            horizon = [k for k in range(i, len(starts)) if hold_ps is None or starts[k] < t + hold_ps]
            if all(ok[k] for k in horizon):
                at = t
                break
        rows.append(dict(zip(keys, key), converged_at_ps=at, convergence_ps=None if at is None else at - after_ps))
    schema = {**{k: df.schema[k] for k in keys}, "converged_at_ps": pl.Int64, "convergence_ps": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


# ------------------------------------------------------------------ distributions

def ecdf(table: Frame, column: str, by: Sequence[str] | str | None = None) -> pl.DataFrame:
    """Empirical CDF of `column`: one row per distinct value x with `fraction` = P[X ≤ x].
    Columns: `by`, `column`, `fraction`."""
    keys = _by(by)
    df = _df(table)
    counts = _group_agg(df, keys + [column], [pl.len().alias("n")]).sort(keys + [column])
    over = (lambda e: e.over(keys)) if keys else (lambda e: e)
    return counts.select(
        keys + [column, (over(pl.col("n").cum_sum()) / over(pl.col("n").sum())).alias("fraction")]
    )


def queue_cdf(
    port_samples: Frame,
    by: Sequence[str] | str | None = None,
    nodes: Sequence[str] | None = None,
    busy_only: bool = False,
    start_ps: int | None = None,
    end_ps: int | None = None,
) -> pl.DataFrame:
    """CDF of switch egress queue length (`queued_bytes`) over the samples in [start_ps, end_ps),
    optionally only of the switches named in `nodes`, and with `busy_only` only of ports that
    queued something at some sample (per `by` group). Columns: `by`, `queued_bytes`, `fraction`."""
    keys = _by(by)
    df = _window(_df(port_samples), "time_ps", start_ps, end_ps)
    if nodes is not None:
        df = df.filter(pl.col("node_name").is_in(list(nodes)))
    if busy_only:
        df = df.filter(pl.col("queued_bytes").max().over(keys + ["node", "port"]) > 0)
    return ecdf(df, "queued_bytes", keys)


def pfc_pause_time(
    pfc_events: Frame, end_ps: int | str, by: Sequence[str] | str | None = None
) -> pl.DataFrame:
    """How long each port was paused by PFC, per (node, port, class).

    A port is paused from a `pause` until the next `resume` (further pauses
    while paused only refresh it); a pause still in force at the end counts up
    to `end_ps` — an integer, or the name of a column holding each row's end
    (e.g. the run's `sim_time_ps`, for a sweep). Columns: `by`, `node`,
    `node_name`, `port`, `class`, `pauses` (PAUSE frames received),
    `paused_ps` (total paused time).
    """
    keys = _by(by)
    df = _df(pfc_events)
    port_keys = keys + ["node", "node_name", "port", "class"]
    end_col = end_ps if isinstance(end_ps, str) else None
    rows = []
    for key, g in df.sort(port_keys + ["time_ps"], maintain_order=True).partition_by(
        port_keys, maintain_order=True, as_dict=True
    ).items():
        end = g[end_col][0] if end_col else end_ps
        paused_since, total, pauses = None, 0, 0
        for t, ev in zip(g["time_ps"].to_list(), g["event"].to_list()):
            if ev == "pause":
                pauses += 1
                if paused_since is None:
                    paused_since = t
            elif ev == "resume" and paused_since is not None:
                total += t - paused_since
                paused_since = None
        if paused_since is not None:
            total += max(end - paused_since, 0)
        rows.append((*key, pauses, total))
    schema = {**{k: df.schema[k] for k in port_keys}, "pauses": pl.Int64, "paused_ps": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def counter_series(counter_samples: Frame, window_ps: int, by: Sequence[str] | str | None = None) -> pl.DataFrame:
    """Run-wide counters (table `counter_samples`, written with `records.counters`) summed in
    windows [k·window, (k+1)·window) of each row's time. Columns: `by`, `time_ps` (window
    start), `ecn_marked_packets`, `cnps_sent`, `pfc_pauses`, `pfc_resumes`, `dropped_frames`,
    `retransmitted_packets`, `timeouts`."""
    _check_window(window_ps)
    keys = _by(by)
    df = _df(counter_samples)
    counts = [c for c in df.columns if c not in keys and c not in ("time_ps", "run_id")]
    # A row counts (time − interval, time]: its events belong to the window before `time_ps`
    # when it falls on a window boundary.
    df = df.with_columns((((pl.col("time_ps").cast(pl.Int64) - 1).clip(0) // window_ps) * window_ps).alias("time_ps"))
    return _group_agg(df, keys + ["time_ps"], [pl.col(c).sum() for c in counts]).select(keys + ["time_ps"] + counts)


def pfc_paused_series(pfc_events: Frame, end_ps: int | str, window_ps: int,
                      by: Sequence[str] | str | None = None) -> pl.DataFrame:
    """PFC pause time over time: in each window [k·window, (k+1)·window), the paused time
    summed over every paused (node, port, class), counted as in `pfc_pause_time` (a pause
    lasts until the next resume, or to `end_ps`: an int or a per-row column). Columns:
    `by`, `time_ps` (window start), `paused_ps`, `paused_ports` (ports paused at some
    moment in the window); windows with no pause are absent."""
    _check_window(window_ps)
    keys = _by(by)
    df = _df(pfc_events)
    port_keys = keys + ["node", "port", "class"]
    end_col = end_ps if isinstance(end_ps, str) else None
    acc: dict[tuple, list] = {}
    for key, g in df.sort(port_keys + ["time_ps"], maintain_order=True).partition_by(
        port_keys, maintain_order=True, as_dict=True
    ).items():
        end = g[end_col][0] if end_col else end_ps
        intervals, since = [], None
        for t, ev in zip(g["time_ps"].to_list(), g["event"].to_list()):
            if ev == "pause" and since is None:
                since = t
            elif ev == "resume" and since is not None:
                intervals.append((since, t))
                since = None
        if since is not None:
            intervals.append((since, max(end, since)))
        group = tuple(key[: len(keys)])
        for a, b in intervals:
            w = (a // window_ps) * window_ps
            while w < b or (a == b and w == a // window_ps * window_ps):
                part = min(b, w + window_ps) - max(a, w)
                slot = acc.setdefault((*group, w), [0, set()])
                slot[0] += max(part, 0)
                slot[1].add(key)
                if a == b:
                    break
                w += window_ps
    rows = [(*k, v[0], len(v[1])) for k, v in sorted(acc.items(), key=lambda kv: kv[0][len(keys):])]
    schema = {**{k: df.schema[k] for k in keys}, "time_ps": pl.Int64, "paused_ps": pl.Int64, "paused_ports": pl.Int64}
    out = pl.DataFrame(rows, schema=schema, orient="row")
    return out.sort(keys + ["time_ps"], maintain_order=True) if keys else out


def control_delay_stats(
    control_delays: Frame,
    by: Sequence[str] | str | None = None,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
) -> pl.DataFrame:
    """Distribution of control-loop delays (table `control_delays`: `time_ps`, `qp`, `event`,
    `delay_ps`, `coalesced`; written at placements other than asic). Columns: `by`, `count`,
    `mean_ps`, one `pXX_ps` per quantile, `max_ps`."""
    _check_quantiles(quantiles)
    keys = _by(by)
    aggs = [
        pl.len().cast(pl.Int64).alias("count"),
        pl.col("delay_ps").cast(pl.Float64).mean().alias("mean_ps"),
        *(nearest_rank_expr("delay_ps", q).alias(quantile_name(q) + "_ps") for q in quantiles),
        pl.col("delay_ps").max().alias("max_ps"),
    ]
    return _group_agg(_df(control_delays), keys, aggs)
