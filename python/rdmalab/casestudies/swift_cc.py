"""SCR A.6, Fig. 18b: Swift, run on the DPA as a dequeue-rate controller,
beside uncontrolled cross traffic of 20, 40 and 60 Gb/s. The figure draws
each run's Swift and cross throughput over time (by application name); the
table gives, while the cross traffic runs, the mean of each and the
bottleneck queue, so Swift can be held against the room the cross traffic
leaves (the line rate minus it) and against no congestion control at all."""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import Figure, Trace, _color

CROSS_KEY = "workload.perftest[1].rate"
SWIFT, CROSS = "bulk", "cross"
# The cross traffic runs from 1 ms to 3 ms (scr-swift-cross.yaml); the means
# skip its first 0.5 ms, where Swift is still converging.
WINDOW_PS = (1_500_000_000, 3_000_000_000)


def _label_keys(t: pl.DataFrame) -> list[str]:
    return [k for k in (CROSS_KEY, "cc") if k in t.columns]


def cross_table(results) -> pl.DataFrame:
    """Per run: Swift's and the cross traffic's mean payload Gb/s, and the
    busiest switch port's mean and largest queue (KB), while the cross
    traffic runs, after Swift settled."""
    s = results.table("qp_samples")
    if s.height == 0:
        return pl.DataFrame()
    apps = results.table("apps").select("run_id", "qp", "name")
    s = s.join(apps, on=["run_id", "qp"])
    keys = _label_keys(s)
    w = s.filter(pl.col("time_ps").is_between(*WINDOW_PS, closed="right"))
    rates = (w.group_by(["run_id", *keys, "name"], maintain_order=True)
             .agg((pl.col("throughput_bps").mean() / 1e9).alias("gbps"))
             .pivot(on="name", index=["run_id", *keys], values="gbps"))
    q = results.table("port_samples")
    queue = (q.filter(pl.col("time_ps").is_between(*WINDOW_PS, closed="right"))
             .group_by("run_id", "node", "port").agg((pl.col("queued_bytes").mean() / 1e3).alias("mean_queue_kb"),
                                                     (pl.col("queued_bytes").max() / 1e3).alias("max_queue_kb"))
             .sort("mean_queue_kb", descending=True).group_by("run_id", maintain_order=True).first()
             .select("run_id", "mean_queue_kb", "max_queue_kb"))
    return (rates.join(queue, on="run_id", how="left")
            .rename({SWIFT: "swift_gbps", CROSS: "cross_gbps"})
            .select("run_id", *keys, "swift_gbps", "cross_gbps", "mean_queue_kb", "max_queue_kb"))


@figure("scr-fig18", "SCR Fig. 18b", "Swift on the DPA beside 20/40/60 Gb/s of cross traffic: throughput over time, and means with the queue")
def fig18(results):
    s = results.table("qp_samples")
    if s.height == 0:
        return []
    apps = results.table("apps").select("run_id", "qp", "name")
    s = s.join(apps, on=["run_id", "qp"]).sort("time_ps").with_columns(
        (pl.col("time_ps") / 1e9).alias("time_ms"), (pl.col("throughput_bps") / 1e9).alias("gbps"))
    out = []
    # One panel per cross-traffic rate: Swift and no CC side by side.
    panels = s.group_by([CROSS_KEY], maintain_order=True) if CROSS_KEY in s.columns else [(("",), s)]
    for (rate,), g in panels:
        traces = []
        for i, (k, r) in enumerate(g.group_by(["run_id"] + (["cc"] if "cc" in g.columns else []), maintain_order=True)):
            label = str(k[-1]) if len(k) > 1 else str(k[0])
            for name, dash in ((SWIFT, False), (CROSS, True)):
                q = r.filter(pl.col("name") == name)
                if q.height:
                    traces.append(Trace(f"{label}: {name} QP", q["time_ms"].to_list(), q["gbps"].to_list(),
                                        _color(i), "line", dash))
        key = f"scr-fig18-{rate}" if rate else "scr-fig18-trace"
        title = f"Swift beside {rate} of cross traffic (SCR Fig. 18b)" if rate else "Swift beside cross traffic"
        cols = [c for c in ("cc", CROSS_KEY) if c in g.columns]
        out.append((Figure(key, title, "time (ms)", "throughput (Gb/s)", traces),
                    g.select(*cols, "time_ms", "name", "gbps")))
    t = cross_table(results)
    if t.height:
        labels = [" ".join(str(v) for v in row) for row in t.select(_label_keys(t)).iter_rows()]
        bars = [Trace("bulk QP", labels, t["swift_gbps"].to_list(), _color(0), "bar"),
                Trace("cross traffic", labels, t["cross_gbps"].to_list(), _color(1), "bar")]
        out.append((Figure("scr-fig18-means", "Mean throughput while the cross traffic runs (1.5–3 ms)",
                           "cross rate, controller", "Gb/s", bars), t))
    return out
