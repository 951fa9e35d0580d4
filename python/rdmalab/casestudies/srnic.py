"""SRNIC (NSDI'23): the commodity RNIC's collapse as QPs outgrow its on-chip
caches, SRNIC's cache-free scheduler, and the on-chip memory budget.

Throughput is the payload all QPs delivered per second over the second half
of a run (``qp_samples`` summed per sample), so the first round of context
misses does not count; latency is the perftest app's mean message latency
(post to completion).
"""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure, size_bytes
from rdmalab.plots import Figure, Trace, _color
from rdmalab.quantiles import nearest_rank_expr

QPS_KEY = "workload.perftest[0].qps"
SIZE_KEY = "workload.perftest[0].message_size"
DEPTH_KEY = "workload.perftest[0].queue_depth"


def aggregate_gbps(results) -> pl.DataFrame:
    """Per run: total delivered Gb/s over the second half, averaged over samples."""
    s = results.table("qp_samples")
    if s.height == 0:
        return pl.DataFrame()
    params = [c for c in s.columns if c not in ("time_ps", "qp", "dequeue_rate_bps", "throughput_bps",
                                                  "bytes_in_flight", "window_bytes", "udp_sport")]
    end = s.group_by("run_id").agg(pl.col("time_ps").max().alias("end_ps"))
    per_t = (s.join(end, on="run_id").filter(pl.col("time_ps") > pl.col("end_ps") // 2)
             .group_by(params + ["time_ps"], maintain_order=True).agg(pl.col("throughput_bps").sum()))
    return per_t.group_by(params, maintain_order=True).agg((pl.col("throughput_bps").mean() / 1e9).alias("gbps"))


def _nic_label(results) -> str | None:
    return "nic" if "nic" in results.param_names else None


@figure("srnic-fig2", "SRNIC Fig. 2/9", "aggregate throughput of 512 B SENDs vs number of QPs, per NIC model")
def fig2(results):
    t = aggregate_gbps(results)
    if t.height == 0 or QPS_KEY not in t.columns:
        return []
    nic = _nic_label(results)
    s = results.summaries()
    keep = [c for c in ("qpc_miss_rate", "mtt_miss_rate", "wqe_miss_rate", "pcie_qpc_bytes", "pcie_wqe_bytes",
                        "pcie_mtt_bytes", "pcie_payload_bytes") if c in s.columns]
    t = t.join(s.select(["run_id"] + keep), on="run_id", how="left") if keep else t
    t = t.sort([nic, QPS_KEY] if nic else [QPS_KEY], maintain_order=True)
    traces = []
    groups = t.group_by([nic], maintain_order=True) if nic else [((results.name,), t)]
    for i, ((label,), g) in enumerate(groups):
        traces.append(Trace(str(label), g[QPS_KEY].to_list(), g["gbps"].to_list(), _color(i)))
    fig = Figure("srnic-fig2-throughput", "Aggregate throughput vs QPs, 512 B SENDs (SRNIC Fig. 2/9)", "QPs",
                 "Gb/s", traces, xlog=True)
    table = t.select([c for c in ([nic] if nic else []) + [QPS_KEY, "gbps"] + keep]).rename({QPS_KEY: "qps"})
    return [(fig, table)]


@figure("srnic-fig10", "SRNIC Fig. 10", "one QP: throughput vs message size, and small-message latency, per NIC")
def fig10(results):
    t = aggregate_gbps(results)
    apps = results.table("apps")
    if t.height == 0 or SIZE_KEY not in t.columns:
        return []
    nic = _nic_label(results)
    lat = apps.select(["run_id", "messages_completed", (pl.col("latency_mean_ps") / 1e6).alias("latency_us")])
    t = t.join(lat, on="run_id", how="left").with_columns(
        pl.col(SIZE_KEY).map_elements(size_bytes, return_dtype=pl.Float64).alias("size_bytes"))
    out = []
    deep = t.filter(pl.col(DEPTH_KEY) == t[DEPTH_KEY].max()) if DEPTH_KEY in t.columns else t
    traces = []
    groups = deep.sort("size_bytes").group_by([nic], maintain_order=True) if nic else [((results.name,), deep)]
    for i, ((label,), g) in enumerate(groups):
        traces.append(Trace(str(label), g["size_bytes"].to_list(), g["gbps"].to_list(), _color(i)))
    out.append((Figure("srnic-fig10a-throughput", "One QP: throughput vs message size (SRNIC Fig. 10a)",
                       "message size (B)", "Gb/s", traces, xlog=True),
                deep.select(([nic] if nic else []) + [SIZE_KEY, "size_bytes", "gbps", "latency_us"])))
    if DEPTH_KEY in t.columns and t[DEPTH_KEY].min() == 1:
        one = t.filter(pl.col(DEPTH_KEY) == 1).sort("size_bytes")
        traces = []
        groups = one.group_by([nic], maintain_order=True) if nic else [((results.name,), one)]
        for i, ((label,), g) in enumerate(groups):
            traces.append(Trace(str(label), g["size_bytes"].to_list(), g["latency_us"].to_list(), _color(i)))
        out.append((Figure("srnic-fig10b-latency", "One message in flight: latency, post to completion (SRNIC Fig. 10b)",
                           "message size (B)", "latency (us)", traces, xlog=True),
                    one.select(([nic] if nic else []) + [SIZE_KEY, "size_bytes", "latency_us"])))
    return out


@figure("srnic-table1", "SRNIC Table 1", "on-chip memory a conceptual lossy RNIC needs for the run's QPs, and what this NIC keeps on chip")
def table1(results):
    m = results.table("nic_memory")
    if m.height == 0:
        return []
    m = m.with_columns((pl.col("typical_bytes") / 2**20).alias("typical_MiB"),
                       (pl.col("on_chip_bytes") / 2**20).alias("on_chip_MiB"))
    first = m.filter(pl.col("run_id") == m["run_id"][0])
    qps = int(first["qps"][0])
    traces = [Trace("conceptual RNIC", first["structure"].to_list(), first["typical_MiB"].to_list(), _color(0), "bar"),
              Trace("on chip here", first["structure"].to_list(), first["on_chip_MiB"].to_list(), _color(1), "bar")]
    fig = Figure("srnic-table1-memory", f"On-chip memory for {qps} QPs (SRNIC Table 1)", "structure", "MiB", traces)
    return [(fig, m.select(["run_id", "structure", "category", "qps", "typical_MiB", "on_chip_MiB", "how"]))]


LOSS_KEY = "links[0].loss"
RECOVERY_KEY = "nic.loss_recovery"


@figure("srnic-fig11", "SRNIC Fig. 11", "goodput vs random loss rate: selective repeat vs go-back-N")
def fig11(results):
    t = aggregate_gbps(results)
    if t.height == 0 or LOSS_KEY not in t.columns or RECOVERY_KEY not in t.columns:
        return []
    s = results.summaries()
    t = t.join(s.select(["run_id", "retransmitted_packets", "timeouts"]), on="run_id", how="left")
    t = t.with_columns((pl.col(LOSS_KEY) * 100).alias("loss_pct")).sort([RECOVERY_KEY, "loss_pct"], maintain_order=True)
    traces = [Trace(str(r), g["loss_pct"].to_list(), g["gbps"].to_list(), _color(i))
              for i, ((r,), g) in enumerate(t.group_by([RECOVERY_KEY], maintain_order=True))]
    fig = Figure("srnic-fig11-goodput", "Goodput vs random loss, 4 KiB WRITEs (SRNIC Fig. 11)", "loss rate (%)",
                 "goodput (Gb/s)", traces, xlog=True)
    return [(fig, t.select([RECOVERY_KEY, "loss_pct", "gbps", "retransmitted_packets", "timeouts"]))]


# SRNIC §6: "the performance of SRNIC is 1.9 - 2.2x better than CX-6 across
# all three metrics", at (ToR, Agg, Core) = (1,0,0) ... (128,128,64).
PAPER_FIG12_HOSTS = [16, 64, 256, 1024, 4096]
PAPER_FIG12_RATIO = (1.9, 2.2)
FIG12_METRICS = (("avg_fct_us", "average FCT (us)"), ("p99_fct_us", "p99 FCT (us)"),
                 ("avg_slowdown", "average slowdown"))


@figure("srnic-fig12", "SRNIC Fig. 12", "average FCT, p99 FCT and average slowdown vs fabric size, per NIC, "
        "and CX-6's over SRNIC's beside the paper's 1.9-2.2x")
def fig12(results):
    flows = results.table("flows")
    if flows.height == 0 or "topology" not in flows.columns or "nic" not in flows.columns:
        return []
    s = results.summaries()
    total = s.select(["run_id", "flows_total", "data_payload_dropped_bytes", "pfc_pauses", "retransmitted_packets",
                      "timeouts"])
    t = (flows.group_by(["run_id", "topology", "nic"], maintain_order=True)
         .agg(pl.len().alias("flows_completed"),
              (pl.col("fct_ps").mean() / 1e6).alias("avg_fct_us"),
              (nearest_rank_expr("fct_ps", 0.99) / 1e6).alias("p99_fct_us"),
              pl.col("slowdown").mean().alias("avg_slowdown"))
         .join(total, on="run_id", how="left")
         .with_columns(pl.col("topology").str.strip_chars_start("h").cast(pl.Int64).alias("hosts"))
         .sort(["nic", "hosts"]))
    out = []
    for metric, label in FIG12_METRICS:
        traces = [Trace(str(n), g["hosts"].to_list(), g[metric].to_list(), _color(i))
                  for i, ((n,), g) in enumerate(t.group_by(["nic"], maintain_order=True))]
        key = metric.replace("_us", "")
        out.append((Figure(f"srnic-fig12-{key}", f"{label} vs hosts (SRNIC Fig. 12)", "hosts", label, traces, xlog=True),
                    t.drop("run_id") if metric == "avg_fct_us" else None))
    ratio = _fig12_ratio(t)
    if ratio is not None:
        out.append(ratio)
    return out


def _fig12_ratio(t: pl.DataFrame):
    """Each CX-6 variant's metric over SRNIC's, per fabric size, with the
    paper's range drawn as markers at the paper's fabric sizes."""
    nics = set(t["nic"].to_list())
    cx6 = sorted(n for n in nics if str(n).startswith("cx6"))
    if "srnic" not in nics or not cx6:
        return None
    base = t.filter(pl.col("nic") == "srnic").select(["hosts"] + [m for m, _ in FIG12_METRICS])
    rows, traces = [], []
    for j, n in enumerate(cx6):
        r = t.filter(pl.col("nic") == n).join(base, on="hosts", suffix="_srnic").sort("hosts")
        for i, (m, label) in enumerate(FIG12_METRICS):
            y = (r[m] / r[f"{m}_srnic"]).to_list()
            traces.append(Trace(f"{n} / srnic: {label.split(' (')[0]}", r["hosts"].to_list(), y, _color(i),
                                dash=j > 0))
            rows += [{"cx6": n, "metric": m, "hosts": h, "ratio": v} for h, v in zip(r["hosts"].to_list(), y)]
    for v in PAPER_FIG12_RATIO:
        traces.append(Trace(f"paper: {v}x", PAPER_FIG12_HOSTS, [v] * len(PAPER_FIG12_HOSTS), "#000000", "points"))
    fig = Figure("srnic-fig12-ratio", "CX-6 with PFC over lossy SRNIC (SRNIC Fig. 12; paper 1.9-2.2x)", "hosts",
                 "CX-6 / SRNIC", traces, xlog=True)
    return fig, pl.DataFrame(rows)
