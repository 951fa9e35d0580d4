"""SwiftRDMA (APNet'25): contention on the host side of the RNIC, and the
placements that remove it.

Fig. 4's message rate is every application's completed messages over the
run (``apps``); the doorbell counters come from each run's summary.
"""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import Figure, Trace, _color

CORES_KEY = "workload.perftest[0].cores"
PLACEMENT_KEY = "host.uar.placement"


@figure("swiftrdma-fig4", "SwiftRDMA Fig. 4", "key-value GET rate vs threads, per UAR placement")
def fig4(results):
    apps = results.table("apps")
    if apps.height == 0 or CORES_KEY not in apps.columns or PLACEMENT_KEY not in apps.columns:
        return []
    s = results.summaries()
    dur = s.select(["run_id", (pl.col("sim_time_ps") / 1e12).alias("seconds"), "doorbells", "doorbell_bounces",
                    "doorbell_wait_ps"])
    t = (apps.group_by(["run_id", PLACEMENT_KEY, CORES_KEY], maintain_order=True)
         .agg(pl.col("messages_completed").sum())
         .join(dur, on="run_id", how="left")
         .with_columns((pl.col("messages_completed") / pl.col("seconds") / 1e6).alias("mops"))
         .sort([PLACEMENT_KEY, CORES_KEY], maintain_order=True))
    traces = [Trace(str(p), g[CORES_KEY].to_list(), g["mops"].to_list(), _color(i))
              for i, ((p,), g) in enumerate(t.group_by([PLACEMENT_KEY], maintain_order=True))]
    fig = Figure("swiftrdma-fig4-rate", "512 B GETs over 64 QPs vs threads, per UAR placement (SwiftRDMA Fig. 4)",
                 "threads (one core each)", "M GETs/s", traces, xlog=True)
    table = t.select([PLACEMENT_KEY, CORES_KEY, "mops", "doorbells", "doorbell_bounces", "doorbell_wait_ps"]).rename(
        {PLACEMENT_KEY: "placement", CORES_KEY: "threads"})
    return [(fig, table)]


@figure("swiftrdma-fig5", "SwiftRDMA Fig. 5", "per-job throughput and p99 latency with and without host policies")
def fig5(results):
    apps = results.table("apps")
    if apps.height == 0 or "host" not in apps.columns:
        return []
    s = results.summaries().select(["run_id", (pl.col("sim_time_ps") / 1e12).alias("seconds")])
    t = (apps.join(s, on="run_id", how="left")
         .with_columns((pl.col("bytes_completed") * 8 / pl.col("seconds") / 1e9).alias("gbps"),
                       (pl.col("latency_p99_ps") / 1e6).alias("p99_us"),
                       (pl.col("latency_mean_ps") / 1e6).alias("mean_us"))
         .select(["host", "name", "gbps", "p99_us", "mean_us", "messages_completed"]))
    out = []
    for metric, label in (("gbps", "Gb/s"), ("p99_us", "p99 latency (us)")):
        traces = [Trace(str(h), g["name"].to_list(), g[metric].to_list(), _color(i), "bar")
                  for i, ((h,), g) in enumerate(t.group_by(["host"], maintain_order=True))]
        out.append((Figure(f"swiftrdma-fig5-{'throughput' if metric == 'gbps' else 'p99'}",
                           f"Per-job {label}, with and without host policies (SwiftRDMA Fig. 5)", "application", label, traces),
                    t if metric == "gbps" else None))
    return out


QPS_KEY = "workload.perftest[0].qps"


@figure("swiftrdma-cache", "SwiftRDMA §3.2", "NIC cache thrash: throughput and QP-context miss rate vs QPs, with and without the reuse policy")
def cache(results):
    from rdmalab.casestudies.srnic import aggregate_gbps

    t = aggregate_gbps(results)
    if t.height == 0 or QPS_KEY not in t.columns or "host" not in t.columns:
        return []
    s = results.summaries()
    keep = [c for c in ("qpc_miss_rate", "mtt_miss_rate", "policy_firings") if c in s.columns]
    t = t.join(s.select(["run_id"] + keep), on="run_id", how="left").sort(["host", QPS_KEY], maintain_order=True)
    traces = [Trace(str(h), g[QPS_KEY].to_list(), g["gbps"].to_list(), _color(i))
              for i, ((h,), g) in enumerate(t.group_by(["host"], maintain_order=True))]
    fig = Figure("swiftrdma-cache-throughput", "512 B SENDs vs QPs on a CX-6-like NIC, with and without QP reuse (SwiftRDMA §3.2)",
                 "QPs", "Gb/s (second half)", traces, xlog=True)
    table = t.select(["host", QPS_KEY, "gbps"] + keep).rename({"host": "policy", QPS_KEY: "qps"})
    return [(fig, table)]
