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
