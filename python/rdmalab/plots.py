"""Standard plots of a run or a sweep.

A plot is first described as data (`Figure`: titled axes and traces, built
from the analysis functions), then drawn: `render()` draws it with matplotlib
as PNG or SVG, and the HTML report (report.py) draws the same description
interactively. Runs are grouped by their parameters other than `seed`, so a
sweep's seeds are pooled into one line per setting.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from rdmalab import analysis as A
from rdmalab.sweep.store import Results
from rdmalab.units import fmt_size, fmt_time, plural, time_unit

# matplotlib's tab10, so PNG/SVG and the HTML report colour each group alike.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

# Fairness and throughput are computed in this many windows over the run.
WINDOWS = 40
# Rate traces follow at most this many named flows or applications.
MAX_RATE_QPS = 6
# Queue length over time is drawn for this many of the busiest switch ports.
BUSIEST_PORTS = 3
# The quantiles of the slowdown-by-size panels, one panel each.
SLOWDOWN_PANELS = (0.5, 0.99)
# CDFs are drawn through at most about this many points.
CDF_POINTS = 500


@dataclass
class Trace:
    name: str
    x: list
    y: list
    color: str
    kind: str = "line"  # line | step | bar | points (markers only)
    dash: bool = False
    over: str | None = None  # points beside bars: the bar trace whose bars they mark (a paper's values)
    text: list | None = None  # hover text per point (report only)


@dataclass
class Figure:
    key: str  # file name stem, and the id of the plot in the report
    title: str
    xlabel: str
    ylabel: str
    traces: list[Trace] = field(default_factory=list)
    xlog: bool = False
    # A heat map instead of traces: x and y labels and z rows (None = no data);
    # optional "zmin", "zmax" (default 0, 1) and "label" (the colour scale's name).
    heatmap: dict | None = None
    ylog: bool = False
    # The report's section (see report.py) and whether the plot takes half the width.
    section: str = "other"
    half: bool = False


def group_columns(results: Results) -> list[str]:
    """The columns of the parameters that tell settings apart (everything
    but the seed): `Results.column` of each."""
    return [results.column(k) for k in results.param_names if k != "seed"]


def param_label(col: str) -> str:
    """A parameter column as legends and tables name it: its axis key."""
    return col.removeprefix("param:")


def group_label(row: dict, cols: list[str], fallback: str) -> str:
    return ", ".join(f"{param_label(k)}={row[k]}" for k in cols) if cols else fallback


def sweep_order(results: Results, cols: list[str]) -> dict[tuple, int]:
    """Each setting (values of `cols`) and its rank in the sweep's run order: the order of
    the sweep file's axes and values, not the alphabet."""
    if not cols:
        return {(): 0}
    m = results.manifest().select(cols).unique(maintain_order=True)
    return {tuple(r): i for i, r in enumerate(m.iter_rows())}


def in_sweep_order(df: pl.DataFrame, results: Results, cols: list[str], then: list[str] | None = None) -> pl.DataFrame:
    """`df` with its settings (`cols`) in sweep order (stable; then by `then` within one)."""
    if not cols or df.height == 0:
        return df
    order = sweep_order(results, cols)
    rank = [order.get(tuple(r), len(order)) for r in df.select(cols).iter_rows()]
    return (df.with_columns(pl.Series("__rank", rank, pl.Int64))
            .sort(["__rank", *(then or [])], maintain_order=True).drop("__rank"))


def _groups(df: pl.DataFrame, cols: list[str], results: Results) -> list[tuple[str, pl.DataFrame]]:
    """(label, rows) per setting, in sweep order."""
    if not cols:
        return [(results.name, df)]
    parts = df.partition_by(cols, maintain_order=True, as_dict=True)
    order = sweep_order(results, cols)
    keys = sorted(parts, key=lambda k: order.get(tuple(k), len(order)))
    short = short_names(cols)
    return [(", ".join(f"{short[c]}={v}" for c, v in zip(cols, k)), parts[k]) for k in keys]


def short_names(cols: list[str]) -> dict[str, str]:
    """Parameter names for legends: the last part of a dotted key (`workload.poisson.load` →
    `load`) unless two parameters would then read alike."""
    last = [param_label(c).split(".")[-1] for c in cols]
    return {c: (t if last.count(t) == 1 else param_label(c)) for c, t in zip(cols, last)}


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def longest_ps(results: Results) -> int:
    s = results.summaries()
    return int(s["sim_time_ps"].max()) if s.height else 0


def window_ps(results: Results) -> int:
    """The window for fairness, throughput and counts over time: the longest run's simulated
    time / WINDOWS, rounded up to 1, 2 or 5 × 10^k ps (a 2 ms run: 50 µs)."""
    raw = max(longest_ps(results) // WINDOWS, 1)
    scale = 10 ** (len(str(raw)) - 1)
    return next(m * scale for m in (1, 2, 5, 10) if m * scale >= raw)


def _time_axis(results: Results) -> tuple[str, int]:
    """The unit of the time axes (µs for a run under 1 ms, ms under 1 s, ...)."""
    return time_unit(longest_ps(results))


def _over_seeds(results: Results) -> str:
    """` (mean over seeds)` where a sweep has seeds to average, else nothing."""
    return " (mean over seeds)" if "seed" in results.param_names else ""


def _pooled(results: Results) -> str:
    return ", seeds pooled" if "seed" in results.param_names else ""


def _thin_cdf(g: pl.DataFrame, points: int = CDF_POINTS) -> pl.DataFrame:
    """At most about `points` rows of an ECDF (one every 1/points of the fraction, and the
    last), so a CDF of 100,000 flows stays a light plot."""
    if g.height <= points:
        return g
    step = (pl.col("fraction") * points).floor()
    return g.filter((step != step.shift(1)) | (pl.int_range(pl.len()) == pl.len() - 1))


def _first_runs(df: pl.DataFrame, results: Results) -> pl.DataFrame:
    """Only the rows of each setting's first finished run (its first seed)."""
    keys = [k for k in results.param_names if k != "seed"]
    firsts = {}
    for r in results.done():
        key = tuple(r["params"].get(k) for k in keys)
        firsts.setdefault(key, r["run_id"])
    return df.filter(pl.col("run_id").is_in(list(firsts.values())))


# ------------------------------------------------------------------ FCT


def slowdown_figures(results: Results, start_ps: int | None = None, end_ps: int | None = None,
                     buckets: int | tuple | None = None, quantiles: tuple = SLOWDOWN_PANELS) -> list[Figure]:
    """FCT slowdown against flow size, one panel per quantile (p50, p99), one line per setting;
    log axes. Each panel's buckets hold enough flows for its quantile (`A.default_buckets`)
    unless `buckets` is given."""
    cols = group_columns(results)
    flows = results.table("flows")
    figs = []
    for q in quantiles:
        n = buckets or A.default_buckets(flows, cols, q, start_ps, end_ps)
        sd = A.slowdown_by_size(flows, by=cols, buckets=n, quantiles=(q,), start_ps=start_ps, end_ps=end_ps)
        if sd.height == 0:
            return []
        name = A.quantile_name(q)
        least = int(sd["flows"].min())
        many = len(cols) > 0 and sd.select(cols).n_unique() > 1
        if sd["bucket"].max() == 0:
            how = (f"one bucket per setting, ≥{plural(least, 'flow')}" if many
                   else f"one bucket of {plural(least, 'flow')}")
        elif isinstance(n, tuple):
            how = f"fixed edges {', '.join(fmt_size(e) for e in n)}; ≥{plural(least, 'flow')}"
        else:
            how = f"{n} buckets of ≥{plural(least, 'flow')}"
        fig = Figure(f"slowdown-{name}", f"{name} FCT slowdown by flow size ({how})", "flow size (bytes, largest in bucket)",
                     f"{name} FCT slowdown", xlog=True, ylog=True, section="fct", half=True)
        for i, (label, g) in enumerate(_groups(sd, cols, results)):
            text = [f"{fmt_size(a)} – {fmt_size(b)}, {plural(f, 'flow')}"
                    for a, b, f in zip(g["size_min_bytes"], g["size_max_bytes"], g["flows"])]
            fig.traces.append(Trace(label, g["size_max_bytes"].to_list(), g[name].to_list(), _color(i), text=text))
        figs.append(fig)
    return figs


def slowdown_figure(results: Results, start_ps: int | None = None, end_ps: int | None = None) -> Figure | None:
    """The p99 panel of `slowdown_figures` (kept for callers of the one-figure form)."""
    figs = slowdown_figures(results, start_ps, end_ps, quantiles=(0.99,))
    return figs[0] if figs else None


def fct_cdf_figure(results: Results, start_ps: int | None = None, end_ps: int | None = None) -> Figure | None:
    cols = group_columns(results)
    flows = results.table("flows")
    if start_ps is not None:
        flows = flows.filter(pl.col("start_ps") >= start_ps)
    if end_ps is not None:
        flows = flows.filter(pl.col("start_ps") < end_ps)
    c = A.ecdf(flows, "fct_ps", by=cols)
    if c.height == 0:
        return None
    unit, per = time_unit(float(c["fct_ps"].max()))
    fig = Figure("fct-cdf", f"FCT CDF (all flows{_pooled(results)})", f"flow completion time ({unit})",
                 "fraction of flows", xlog=True, section="fct", half=True)
    for i, (label, g) in enumerate(_groups(c, cols, results)):
        g = _thin_cdf(g)
        fig.traces.append(Trace(label, (g["fct_ps"] / per).to_list(), g["fraction"].to_list(), _color(i), kind="step"))
    return fig


def load_axis(results: Results) -> str | None:
    """The column of the sweep parameter that is the offered load
    (`workload.poisson.load`, ...), if any."""
    for k in results.param_names:
        if k.split(".")[-1] in ("load", "offered_load"):
            return results.column(k)
    return None


def load_figure(results: Results, start_ps: int | None = None, end_ps: int | None = None,
                q: float = 0.99) -> Figure | None:
    """p99 FCT slowdown (all sizes) against the load axis, one line per other setting."""
    load = load_axis(results)
    if load is None:
        return None
    cols = [c for c in group_columns(results) if c != load]
    sd = A.slowdown_by_size(results.table("flows"), by=cols + [load], buckets=1, quantiles=(q,),
                            start_ps=start_ps, end_ps=end_ps)
    if sd.height == 0 or sd[load].n_unique() < 2:
        return None
    name = A.quantile_name(q)
    fig = Figure(f"{name}-vs-load", f"{name} FCT slowdown against load (all flows{_pooled(results)})", param_label(load),
                 f"{name} FCT slowdown", ylog=True, section="fct", half=True)
    for i, (label, g) in enumerate(_groups(sd, cols, results)):
        g = g.sort(load)
        fig.traces.append(Trace(label, g[load].to_list(), g[name].to_list(), _color(i),
                                text=[plural(f, "flow") for f in g["flows"]]))
    return fig


# ------------------------------------------------------------------ named flows, rates


def named_qps(results: Results) -> tuple[list[str], pl.DataFrame]:
    """The flows worth following across settings, by name: the perftest-like applications
    (their `name`), else the largest flows of the first run (`flow ID SRC→DST SIZE`; the
    same name in another run is the flow with the same id, ends and size). At most
    MAX_RATE_QPS. Returns the names and a frame `run_id`, `name`, `qp`."""
    apps = results.table("apps").filter(pl.col("qp") >= 0)
    if apps.height:
        names = apps["name"].unique(maintain_order=True).to_list()[:MAX_RATE_QPS]
        m = apps.filter(pl.col("name").is_in(names)).select("run_id", "name", pl.col("qp").cast(pl.Int64))
        return names, m
    flows = results.table("flows")
    if flows.height == 0:
        return [], pl.DataFrame(schema={"run_id": pl.String, "name": pl.String, "qp": pl.Int64})
    flows = flows.with_columns(pl.format("flow {} {}→{} {}", "flow_id", "src_name", "dst_name",
                                         pl.col("size_bytes").map_elements(fmt_size, return_dtype=pl.String))
                               .alias("name"))
    first = flows.filter(pl.col("run_id") == flows["run_id"][0])
    names = first.sort(["size_bytes", "flow_id"], descending=[True, False])["name"].to_list()[:MAX_RATE_QPS]
    m = flows.filter(pl.col("name").is_in(names)).select("run_id", "name", pl.col("qp").cast(pl.Int64))
    return names, m


def _named_samples(results: Results) -> tuple[list[str], pl.DataFrame]:
    names, m = named_qps(results)
    if not names:
        return [], pl.DataFrame()
    s = _first_runs(results.table("qp_samples"), results).with_columns(pl.col("qp").cast(pl.Int64))
    return names, s.join(m, on=["run_id", "qp"], how="inner", maintain_order="left")


def _per_setting_figures(results: Results, key: str, title: str, ylabel: str, column: str, scale: float,
                         keep) -> list[Figure]:
    """Per setting (its first run) whose samples `keep(g)` accepts, `column`
    ÷ `scale` over time for each named flow, as steps."""
    cols = group_columns(results)
    names, s = _named_samples(results)
    if not names or s.height == 0:
        return []
    unit, per = _time_axis(results)
    figs = []
    for gi, (label, g) in enumerate(_groups(s, cols, results)):
        g = g.filter(pl.col(column).is_not_null())
        if g.height == 0 or not keep(g):
            continue
        fig = Figure(f"{key}-{gi}", f"{title} — {label}", f"time ({unit})", ylabel, section="rates", half=True)
        for i, n in enumerate(names):
            q = g.filter(pl.col("name") == n).sort("time_ps")
            if q.height:
                fig.traces.append(Trace(n, (q["time_ps"] / per).to_list(), (q[column] / scale).to_list(),
                                        _color(i), kind="step"))
        figs.append(fig)
    return figs


def dequeue_figures(results: Results) -> list[Figure]:
    """Per setting (its first run), the dequeue rate the controller set for
    each named flow; none for a setting whose flows are held by a window
    alone (their rate never moves: a flat line would say nothing)."""
    return _per_setting_figures(
        results, "dequeue", "Dequeue rate set by the controller", "dequeue rate (Gb/s)", "dequeue_rate_bps", 1e9,
        lambda g: g["window_bytes"].null_count() == g.height or g["dequeue_rate_bps"].n_unique() > 1)


def window_figures(results: Results) -> list[Figure]:
    """Per setting (its first run) whose flows have a window (HPCC, Swift,
    window DCTCP, Homa's grants, `nic.window`), the window of each named flow."""
    return _per_setting_figures(results, "window", "Window on bytes in flight", "window (KB)", "window_bytes", 1e3,
                                lambda g: True)


def named_throughput_figures(results: Results) -> list[Figure]:
    """Per named flow, its throughput over time under each setting (first run of each)."""
    cols = group_columns(results)
    names, s = _named_samples(results)
    if not names or s.height == 0:
        return []
    unit, per = _time_axis(results)
    groups = _groups(s, cols, results)
    if len(groups) == 1:
        # One setting: the named flows side by side in one plot.
        fig = Figure("flow-throughput-0", "Throughput of each named flow", f"time ({unit})", "throughput (Gb/s)",
                     section="rates")
        for i, n in enumerate(names):
            g = s.filter(pl.col("name") == n).sort("time_ps")
            if g.height:
                fig.traces.append(Trace(n, (g["time_ps"] / per).to_list(), (g["throughput_bps"] / 1e9).to_list(),
                                        _color(i)))
        return [fig]
    figs = []
    for k, n in enumerate(names):
        fig = Figure(f"flow-throughput-{k}", f"Throughput of {n}", f"time ({unit})", "throughput (Gb/s)",
                     section="rates", half=True)
        for i, (label, g) in enumerate(_groups(s.filter(pl.col("name") == n), cols, results)):
            g = g.sort("time_ps")
            fig.traces.append(Trace(label, (g["time_ps"] / per).to_list(), (g["throughput_bps"] / 1e9).to_list(),
                                    _color(i)))
        if fig.traces:
            figs.append(fig)
    return figs


def throughput_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    t = A.throughput_series(results.table("qp_samples"), window_ps(results), by=cols + ["run_id"])
    if t.height == 0:
        return None
    unit, per = _time_axis(results)
    fig = Figure("throughput", f"Total throughput{_over_seeds(results)}", f"time ({unit})", "throughput (Gb/s)",
                 section="rates")
    for i, (label, g) in enumerate(_groups(t, cols, results)):
        m = g.group_by("time_ps").agg(pl.col("throughput_bps").mean()).sort("time_ps")
        fig.traces.append(Trace(label, (m["time_ps"] / per).to_list(), (m["throughput_bps"] / 1e9).to_list(), _color(i)))
    return fig


def fairness_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    w = window_ps(results)
    j = A.jain_fairness(results.table("qp_samples"), w, by=cols + ["run_id"])
    if j.height == 0:
        return None
    unit, per = _time_axis(results)
    starts = sorted(set(j["window_start_ps"].to_list()))
    labels, z = [], []
    for label, g in _groups(j, cols, results):
        m = dict(g.group_by("window_start_ps").agg(pl.col("jain_index").mean()).iter_rows())
        labels.append(label)
        z.append([m.get(t) for t in starts])
    return Figure("fairness", f"Jain's fairness index of QP throughput ({fmt_time(w)} windows){_over_seeds(results)}",
                  f"window start ({unit})", "", heatmap={"x": [t / per for t in starts], "y": labels, "z": z},
                  section="rates")


# ------------------------------------------------------------------ queues


def busiest_ports(results: Results, n: int = BUSIEST_PORTS) -> list[tuple[str, int]]:
    """The `n` switch ports with the most queued bytes on average over every run."""
    ps = results.table("port_samples")
    if ps.height == 0:
        return []
    m = (ps.group_by(["node_name", "port"]).agg(pl.col("queued_bytes").cast(pl.Float64).mean().alias("q"))
         .filter(pl.col("q") > 0).sort(["q", "node_name", "port"], descending=[True, False, False]).head(n))
    return [(a, int(b)) for a, b in m.select("node_name", "port").iter_rows()]


def queue_time_figures(results: Results) -> list[Figure]:
    """Queue length over time at the busiest ports, one line per setting (mean over seeds)."""
    cols = group_columns(results)
    ports = busiest_ports(results)
    if not ports:
        return []
    unit, per = _time_axis(results)
    ps = results.table("port_samples")
    figs = []
    for k, (node, port) in enumerate(ports):
        d = ps.filter((pl.col("node_name") == node) & (pl.col("port") == port))
        fig = Figure(f"queue-{k}", f"Queue at {node} port {port}{_over_seeds(results)}", f"time ({unit})",
                     "queued (KB)", section="queues", half=True)
        for i, (label, g) in enumerate(_groups(d, cols, results)):
            m = g.group_by("time_ps").agg(pl.col("queued_bytes").cast(pl.Float64).mean()).sort("time_ps")
            fig.traces.append(Trace(label, (m["time_ps"] / per).to_list(), (m["queued_bytes"] / 1e3).to_list(),
                                    _color(i)))
        figs.append(fig)
    return figs


def queue_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    c = A.queue_cdf(results.table("port_samples"), by=cols, busy_only=True)
    if c.height == 0:
        return None
    fig = Figure("queue-cdf", "Switch queue length CDF (ports that ever queued)", "queued (KB)", "fraction of samples",
                 section="queues", half=True)
    for i, (label, g) in enumerate(_groups(c, cols, results)):
        g = _thin_cdf(g)
        fig.traces.append(Trace(label, (g["queued_bytes"] / 1e3).to_list(), g["fraction"].to_list(), _color(i), kind="step"))
    return fig


# ------------------------------------------------------------------ congestion signals

#: counter_samples column → (figure key, title, y label)
COUNTER_FIGURES = {
    "ecn_marked_packets": ("ecn-marks", "ECN-marked packets", "packets marked"),
    "cnps_sent": ("cnps", "CNPs sent", "CNPs"),
}


def counter_figures(results: Results) -> list[Figure]:
    """ECN marks and CNPs per time window over the run (mean over seeds), from the
    `counter_samples` table (`records.counters`); a counter that stayed 0 everywhere
    gets no figure (the report says so)."""
    cols = group_columns(results)
    c = results.table("counter_samples")
    if c.height == 0:
        return []
    # Windows of whole sample periods, so every window sums the same number of rows.
    times = c.select(pl.col("time_ps").cast(pl.Int64).unique().sort().diff().alias("d")).filter(pl.col("d") > 0)
    period = int(times["d"].min()) if times.height else 1
    w = -(-window_ps(results) // period) * period
    series = A.counter_series(c, w, by=cols + ["run_id"])
    unit, per = _time_axis(results)
    figs = []
    for col, (key, title, ylabel) in COUNTER_FIGURES.items():
        if series[col].sum() == 0:
            continue
        fig = Figure(key, f"{title} per {fmt_time(w)}{_over_seeds(results)}", f"time ({unit})", ylabel,
                     section="signals", half=True)
        for i, (label, g) in enumerate(_groups(series, cols, results)):
            m = g.group_by("time_ps").agg(pl.col(col).cast(pl.Float64).mean()).sort("time_ps")
            fig.traces.append(Trace(label, (m["time_ps"] / per).to_list(), m[col].to_list(), _color(i), kind="step"))
        figs.append(fig)
    return figs


def pfc_time_figure(results: Results) -> Figure | None:
    """PFC pause time per window, summed over ports (mean over seeds)."""
    cols = group_columns(results)
    ev = results.table("pfc_events").join(results.summaries().select("run_id", "sim_time_ps"), on="run_id")
    if ev.height == 0:
        return None
    w = window_ps(results)
    p = A.pfc_paused_series(ev, "sim_time_ps", w, by=cols + ["run_id"])
    if p.height == 0:
        return None
    unit, per = _time_axis(results)
    done = results.manifest().filter(pl.col("status") == "done")
    runs = Counter(done.select(cols).iter_rows()) if cols else Counter({(): done.height})
    pu, pper = time_unit(float(p["paused_ps"].max()))
    grid = pl.DataFrame({"time_ps": list(range(0, longest_ps(results) + 1, w))}, schema={"time_ps": pl.Int64})
    fig = Figure("pfc-time", f"PFC pause time per {fmt_time(w)}, summed over ports{_over_seeds(results)}",
                 f"time ({unit})", f"paused ({pu})", section="signals", half=True)
    for i, (label, g) in enumerate(_groups(p, cols, results)):
        # mean over the setting's runs, a run without pauses in a window counting 0
        n = max(runs[tuple(g[c][0] for c in cols)], 1)
        m = g.group_by("time_ps").agg((pl.col("paused_ps").sum() / n)).sort("time_ps")
        # windows without a pause hold 0, so the step line drops to 0 between pauses
        m = grid.join(m.with_columns(pl.col("time_ps").cast(pl.Int64)), on="time_ps", how="left").fill_null(0)
        fig.traces.append(Trace(label, (m["time_ps"] / per).to_list(), (m["paused_ps"] / pper).to_list(),
                                _color(i), kind="step"))
    return fig


def pfc_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    ev = results.table("pfc_events").join(results.summaries().select("run_id", "sim_time_ps"), on="run_id")
    p = A.pfc_pause_time(ev, end_ps="sim_time_ps", by=cols + ["run_id"])
    if p.height == 0:
        return None
    p = p.group_by(cols + ["node_name", "port"], maintain_order=True).agg(pl.col("paused_ps").mean())
    unit, per = time_unit(float(p["paused_ps"].max()))
    fig = Figure("pfc", f"PFC pause time per port{_over_seeds(results)}", "port", f"paused ({unit})",
                 section="signals", half=True)
    for i, (label, g) in enumerate(_groups(p, cols, results)):
        x = [f"{n}:{pt}" for n, pt in zip(g["node_name"], g["port"])]
        fig.traces.append(Trace(label, x, (g["paused_ps"] / per).to_list(), _color(i), kind="bar"))
    return fig


def control_delay_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    c = A.ecdf(results.table("control_delays"), "delay_ps", by=cols)
    if c.height == 0:
        return None
    unit, per = time_unit(float(c["delay_ps"].max()))
    fig = Figure("control-delays", "Control-loop delay CDF", f"delay ({unit})", "fraction of decisions",
                 section="control")
    for i, (label, g) in enumerate(_groups(c, cols, results)):
        g = _thin_cdf(g)
        x = (g["delay_ps"] / per).to_list()
        # Start the step at 0 so a distribution with a single value still draws a riser.
        fig.traces.append(Trace(label, x[:1] + x, [0.0] + g["fraction"].to_list(), _color(i), kind="step"))
    return fig


def standard_figures(results: Results, start_ps: int | None = None, end_ps: int | None = None,
                     buckets: int | tuple | None = None) -> list[Figure]:
    """Every standard plot that has data, in the report's order: slowdown vs size (p50, p99),
    FCT CDF, p99 vs load; dequeue rates per setting, throughput of the named flows, total
    throughput, fairness; queues at the busiest ports, queue CDF; ECN marks, CNPs, PFC
    pause time over time and per port; control-loop delays; collectives' iteration times,
    bus bandwidth and rank timelines."""
    figs = [*slowdown_figures(results, start_ps, end_ps, buckets), fct_cdf_figure(results, start_ps, end_ps),
            load_figure(results, start_ps, end_ps),
            *dequeue_figures(results), *window_figures(results), *named_throughput_figures(results), throughput_figure(results),
            fairness_figure(results),
            *queue_time_figures(results), queue_figure(results),
            *counter_figures(results), pfc_time_figure(results), pfc_figure(results),
            control_delay_figure(results)]
    from rdmalab.collectives import collective_figures

    figs += collective_figures(results)
    return [f for f in figs if f is not None]


def render(fig: Figure, path: str | Path) -> Path:
    """Draw `fig` with matplotlib into `path` (PNG or SVG, by its extension)."""
    from matplotlib.figure import Figure as MplFigure

    path = Path(path)
    heat = fig.heatmap
    height = 4.2 if not heat else 1.5 + 0.35 * len(heat["y"])
    mfig = MplFigure(figsize=(8, height), layout="constrained")
    ax = mfig.subplots()
    if heat:
        import numpy as np

        z = np.array([[np.nan if v is None else v for v in row] for row in heat["z"]], dtype=float)
        x = heat["x"]
        vmin, vmax = heat.get("zmin", 0), heat.get("zmax", 1)
        if all(isinstance(v, (int, float)) for v in x):
            step = x[1] - x[0] if len(x) > 1 else 1.0
            im = ax.imshow(z, aspect="auto", vmin=vmin, vmax=vmax, cmap="viridis", interpolation="nearest",
                           extent=(x[0], x[-1] + step, len(heat["y"]) - 0.5, -0.5))
        else:
            # Categorical columns (e.g. message sizes): one cell each, values written in.
            im = ax.imshow(z, aspect="auto", vmin=vmin, vmax=vmax, cmap="viridis", interpolation="nearest")
            ax.set_xticks(range(len(x)), x)
            for (r, c), v in np.ndenumerate(z):
                if not np.isnan(v):
                    ax.text(c, r, f"{v:.2f}" if vmax <= 1 else f"{v:.0f}", ha="center", va="center",
                            color="white" if v < (vmin + vmax) / 2 else "black", fontsize="small")
        ax.set_yticks(range(len(heat["y"])), heat["y"])
        mfig.colorbar(im, ax=ax, label=heat.get("label", "Jain's index"))
    else:
        bars = [t for t in fig.traces if t.kind == "bar"]
        cats = sorted({x for t in bars for x in t.x})
        width = 0.8 / max(len(bars), 1)

        def bar_pos(x, name):
            """Where bar trace `name`'s bar of category `x` stands (its centre)."""
            i = next((j for j, b in enumerate(bars) if b.name == name), (len(bars) - 1) / 2)
            return cats.index(x) + (i - (len(bars) - 1) / 2) * width

        for i, t in enumerate(fig.traces):
            style = "--" if t.dash else "-"
            if t.kind == "bar":
                ax.bar([bar_pos(x, t.name) for x in t.x], t.y, width=width, color=t.color, label=t.name)
            elif t.kind == "step":
                ax.step(t.x, t.y, style, where="post", color=t.color, label=t.name)
            elif t.kind == "points" and bars:
                ax.plot([bar_pos(x, t.over) for x in t.x], t.y, "x", color=t.color, label=t.name,
                        markersize=8, markeredgewidth=2, linestyle="none")
            elif t.kind == "points":
                ax.plot(t.x, t.y, "x", color=t.color, label=t.name, markersize=5)
            else:
                ax.plot(t.x, t.y, style, color=t.color, label=t.name, marker="." if len(t.x) < 30 else None)
        if bars:
            ax.set_xticks(range(len(cats)), cats, rotation=45, ha="right")
        if fig.xlog:
            ax.set_xscale("log")
        if fig.ylog:
            from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

            ax.set_yscale("log")
            # 1, 2, 5, 10, 20, ... as plain numbers: slowdowns rarely span many decades
            ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
            ax.yaxis.set_major_formatter(ScalarFormatter())
            ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, alpha=0.3)
        if bars:
            # Beside the bars, never over them.
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
        elif len(fig.traces) > 1:
            ax.legend(fontsize="small")
    ax.set_title(fig.title, fontsize="medium")
    ax.set_xlabel(fig.xlabel)
    ax.set_ylabel(fig.ylabel)
    metadata = {"Date": None} if path.suffix == ".svg" else None
    # An SVG's clip-path and marker ids are hashes salted at random per
    # process unless `svg.hashsalt` is set: the same plot gave other bytes.
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "rdmalab"}):
        mfig.savefig(path, metadata=metadata, dpi=110)
    return path


def write_plots(path: str | Path, out_dir: str | Path, fmt: str = "png",
                start_ps: int | None = None, end_ps: int | None = None, buckets: int | tuple | None = None) -> list[Path]:
    """Draw every standard plot of a run or sweep directory into `out_dir` as FORMAT files
    (`buckets`: flow-size buckets of the slowdown panels; default sized to the flow count)."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"format `{fmt}` — allowed: png, svg")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [render(f, out / f"{f.key}.{fmt}") for f in standard_figures(Results(path), start_ps, end_ps, buckets)]
