"""SwCC (ATC'25): congestion control on per-packet cores in the NIC's data
path, and the memory those cores reach QP contexts through.

Access time is each run's mean core time per event to reach a QP context
(`cc_core_context_access_ns` in the summary); throughput is the payload
every QP delivered over the run (`apps`).
"""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure, size_bytes
from rdmalab.plots import Figure, Trace, _color

QPS_KEY = "workload.perftest[0].qps"
MEM_KEY = "control.on_path.memory"


def _with_goodput(results, s: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """The summary columns `cols` of each run with `gbps`: the payload every
    app completed over the run."""
    gb = results.table("apps").group_by("run_id").agg(pl.col("bytes_completed").sum().alias("bytes"))
    return (s.select(["run_id", "sim_time_ps"] + cols).join(gb, on="run_id", how="left")
            .with_columns((pl.col("bytes") * 8 / (pl.col("sim_time_ps") / 1e12) / 1e9).alias("gbps")))


@figure("swcc-fig11", "SwCC Fig. 11a/c", "QP-context access time and throughput vs QPs, naive cache vs QP-aware memory")
def fig11(results):
    s = results.summaries()
    if s.height == 0 or QPS_KEY not in s.columns or MEM_KEY not in s.columns:
        return []
    t = (_with_goodput(results, s, [MEM_KEY, QPS_KEY, "cc_core_context_access_ns", "cc_core_context_accesses",
                                     "cc_core_context_misses"])
         .with_columns((pl.col("cc_core_context_misses") / pl.col("cc_core_context_accesses")).alias("miss_rate"))
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


#: Table 1's rows in the order the paper lists them (those rdmalab models).
LOOP_ORDER = ["host-cpu", "soft-roce", "asic", "dpa", "swcc"]


@figure("swcc-table1", "SwCC Table 1 / Fig. 7", "control-loop delay of a 1 KB WRITE per placement, built from its parts")
def table1(results):
    s = results.summaries()
    if s.height == 0 or "control" not in s.columns or "control_loop_mean_ps" not in s.columns:
        return []
    t = (s.select(["control", "control_loops", "control_loop_mean_ps", "control_loop_min_ps", "control_loop_max_ps"])
         .with_columns((pl.col("control_loop_mean_ps") / 1e6).round(2).alias("loop_mean_us"),
                       (pl.col("control_loop_min_ps") / 1e6).round(2).alias("loop_min_us"),
                       (pl.col("control_loop_max_ps") / 1e6).round(2).alias("loop_max_us"))
         .with_columns(pl.col("control").map_elements(
             lambda c: LOOP_ORDER.index(c) if c in LOOP_ORDER else len(LOOP_ORDER), return_dtype=pl.Int64).alias("_o"))
         .sort(["_o", "control"]).drop("_o"))
    fig = Figure("swcc-table1-loop", "Control-loop delay of a 1 KB WRITE (SwCC Table 1 / Fig. 7)", "control loop",
                 "mean delay (us)", [Trace("loop", t["control"].to_list(), t["loop_mean_us"].to_list(), _color(0), "bar")])
    return [(fig, t.select(["control", "control_loops", "loop_mean_us", "loop_min_us", "loop_max_us"]))]


PATH_KEY = "control.on_path"
SIZE_KEY = "workload.perftest[0].message_size"


@figure("swcc-fig10", "SwCC Fig. 10", "WRITE throughput vs packet size for SwCC, ConnectX-5 PUs and Soft-RoCE threads")
def fig10(results):
    s = results.summaries()
    if s.height == 0 or PATH_KEY not in s.columns or SIZE_KEY not in s.columns:
        return []
    t = (_with_goodput(results, s, [PATH_KEY, SIZE_KEY])
         .with_columns(pl.col("gbps").round(2),
                       pl.col(SIZE_KEY).map_elements(lambda v: int(size_bytes(v)), return_dtype=pl.Int64).alias("packet_bytes"))
         .sort([PATH_KEY, "packet_bytes"], maintain_order=True))
    traces = [Trace(str(p), g["packet_bytes"].to_list(), g["gbps"].to_list(), _color(i))
              for i, ((p,), g) in enumerate(t.group_by([PATH_KEY], maintain_order=True))]
    fig = Figure("swcc-fig10-throughput", "WRITE throughput vs packet size (SwCC Fig. 10)", "packet size (B)",
                 "throughput (Gb/s)", traces, xlog=True)
    return [(fig, t.select([PATH_KEY, "packet_bytes", "gbps"]).rename({PATH_KEY: "data_path"}))]


@figure("swcc-fig14", "SwCC Figs. 12-14", "FCT of DCQCN, TIMELY and HPCC on SwCC, ConnectX-5 and Soft-RoCE")
def fig14(results):
    s = results.summaries()
    if s.height == 0 or PATH_KEY not in s.columns or "cc.algorithm" not in s.columns:
        return []
    f = results.table("flows")
    fct = (f.group_by("run_id").agg(pl.col("fct_ps").mean().alias("fct_mean_ps"), pl.col("fct_ps").max().alias("fct_max_ps"),
                                    pl.len().alias("flows"), pl.col("fct_ps").is_not_null().sum().alias("completed")))
    t = (s.select(["run_id", "cc.algorithm", PATH_KEY, "control_loops", "control_loop_mean_ps", "ecn_marked_packets",
                   "pfc_pauses"])
         .join(fct, on="run_id", how="left")
         .with_columns((pl.col("fct_mean_ps") / 1e9).round(2).alias("fct_mean_ms"),
                       (pl.col("fct_max_ps") / 1e9).round(2).alias("fct_max_ms"),
                       # DCQCN acts on CNPs and timers, not ACKs: no ACK loop to show.
                       pl.when(pl.col("control_loops") > 0).then((pl.col("control_loop_mean_ps") / 1e6).round(1))
                       .otherwise(None).alias("loop_us")))
    ref = t.filter(pl.col(PATH_KEY) == "swcc").select(["cc.algorithm", pl.col("fct_mean_ms").alias("_ref")])
    t = (t.join(ref, on="cc.algorithm", how="left")
         .with_columns((pl.col("fct_mean_ms") / pl.col("_ref")).round(2).alias("vs_swcc"))
         .sort(["cc.algorithm", PATH_KEY]))
    traces = [Trace(str(p), g["cc.algorithm"].to_list(), g["fct_mean_ms"].to_list(), _color(i), "bar")
              for i, ((p,), g) in enumerate(t.group_by([PATH_KEY], maintain_order=True))]
    fig = Figure("swcc-fig14-fct", "Mean FCT, 10 flows of 4 MB into one 10 Gb/s port (SwCC Figs. 12-14)", "algorithm",
                 "mean FCT (ms)", traces)
    return [(fig, t.select(["cc.algorithm", PATH_KEY, "flows", "completed", "fct_mean_ms", "fct_max_ms", "vs_swcc",
                            "loop_us", "ecn_marked_packets", "pfc_pauses"]).rename({PATH_KEY: "data_path"}))]
