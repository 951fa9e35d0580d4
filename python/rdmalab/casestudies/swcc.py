"""SwCC (ATC'25): congestion control on per-packet cores in the NIC's data
path, and the memory those cores reach QP contexts through.

Access time is each run's mean core time per event to reach a QP context
(`cc_core_context_access_ns` in the summary); throughput is the payload
every QP delivered over the run (`apps`).
"""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import Figure, Trace, _color

QPS_KEY = "workload.perftest[0].qps"
MEM_KEY = "control.on_path.memory"


@figure("swcc-fig11", "SwCC Fig. 11a/c", "QP-context access time and throughput vs QPs, naive cache vs QP-aware memory")
def fig11(results):
    s = results.summaries()
    if s.height == 0 or QPS_KEY not in s.columns or MEM_KEY not in s.columns:
        return []
    apps = results.table("apps")
    gb = apps.group_by("run_id").agg(pl.col("bytes_completed").sum().alias("bytes"))
    t = (s.select(["run_id", MEM_KEY, QPS_KEY, "sim_time_ps", "cc_core_context_access_ns", "cc_core_context_accesses",
                   "cc_core_context_misses"])
         .join(gb, on="run_id", how="left")
         .with_columns((pl.col("bytes") * 8 / (pl.col("sim_time_ps") / 1e12) / 1e9).alias("gbps"),
                       (pl.col("cc_core_context_misses") / pl.col("cc_core_context_accesses")).alias("miss_rate"))
         .sort([MEM_KEY, QPS_KEY], maintain_order=True))
    out = []
    for col, label, key in (("cc_core_context_access_ns", "access time per event (ns)", "access"),
                            ("gbps", "goodput (Gb/s)", "throughput")):
        traces = [Trace(str(m), g[QPS_KEY].to_list(), g[col].to_list(), _color(i))
                  for i, ((m,), g) in enumerate(t.group_by([MEM_KEY], maintain_order=True))]
        out.append((Figure(f"swcc-fig11-{key}", f"One CC core pair, 1 KB WRITEs: {label} vs QPs (SwCC Fig. 11)", "QPs", label,
                           traces, xlog=True),
                    t.select([MEM_KEY, QPS_KEY, "cc_core_context_access_ns", "miss_rate", "gbps"]).rename(
                        {MEM_KEY: "memory", QPS_KEY: "qps"}) if key == "access" else None))
    return out


#: Queue thresholds for Fig. 1's drain time: congestion starts when the
#: bottleneck queue first exceeds RISE, and is drained when it falls back
#: below DRAIN after its peak.
RISE_BYTES = 50_000
DRAIN_BYTES = 10_000


def drain_times(results) -> pl.DataFrame:
    """Per run: when the bottleneck queue rose above RISE_BYTES, its peak,
    and how long until it fell back below DRAIN_BYTES."""
    ps = results.table("port_samples")
    if ps.height == 0:
        return pl.DataFrame()
    params = [c for c in results.param_names if c in ps.columns]
    # The bottleneck: each run's port with the largest queue.
    peak_port = (ps.group_by(["run_id", "node", "port"]).agg(pl.col("queued_bytes").max().alias("peak"))
                 .sort(["run_id", "peak", "node", "port"], descending=[False, True, False, False])
                 .group_by("run_id", maintain_order=True).first())
    q = ps.join(peak_port.select(["run_id", "node", "port"]), on=["run_id", "node", "port"]).sort(["run_id", "time_ps"])
    rows = []
    for (run_id,), g in q.group_by(["run_id"], maintain_order=True):
        t, b = g["time_ps"].to_list(), g["queued_bytes"].to_list()
        start = next((i for i, x in enumerate(b) if x > RISE_BYTES), None)
        if start is None:
            continue
        top = max(range(start, len(b)), key=lambda i: (b[i], -i))
        end = next((i for i in range(top, len(b)) if b[i] < DRAIN_BYTES), None)
        rows.append({"run_id": run_id, "peak_bytes": b[top],
                     "drain_us": (t[end] - t[start]) / 1e6 if end is not None else None})
    out = pl.DataFrame(rows, schema={"run_id": pl.String, "peak_bytes": pl.Int64, "drain_us": pl.Float64})
    labels = ps.select(["run_id"] + params).unique(maintain_order=True)
    return labels.join(out, on="run_id", how="inner")


@figure("swcc-fig1", "SwCC Fig. 1", "time to drain the bottleneck queue after a second DCQCN flow joins, vs the control loop")
def fig1(results):
    t = drain_times(results)
    if t.height == 0 or "control" not in t.columns:
        return []
    base = t.filter(pl.col("control") == "asic")["drain_us"]
    ref = base[0] if base.len() and base[0] else None
    t = t.with_columns((pl.col("drain_us") / ref if ref else pl.lit(None)).round(3).alias("vs_asic")).sort(
        ["drain_us", "control"])
    fig = Figure("swcc-fig1-drain", "Queue drain time after a second DCQCN flow joins (SwCC Fig. 1)", "control loop",
                 "drain time (us)", [Trace("drain", t["control"].to_list(), t["drain_us"].to_list(), _color(0), "bar")])
    return [(fig, t.select(["control", "peak_bytes", "drain_us", "vs_asic"]))]
