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
