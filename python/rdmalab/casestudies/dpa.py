"""SCR A.12, Fig. 22: where a control decision's time goes on the BlueField-3
DPA. Every installed action's delay is split (``control_delays``) into the
trigger (event to thread queue), waiting for a busy thread, processing (the
algorithm's cycles at the DPA clock plus reaching its flow state, with
``control.compute``) and installing; the figure shows the mean of each part
per event type: ACK (in band, Swift) and RTT (out of band, probe answers)."""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import Figure, Trace, _color

PARTS = ("trigger_ps", "wait_ps", "processing_ps", "install_ps")


def breakdown(results) -> pl.DataFrame:
    """Mean µs of each part of the control-loop delay, per run label and event type."""
    d = results.table("control_delays")
    if d.height == 0 or not all(p in d.columns for p in PARTS):
        return pl.DataFrame()
    label = "cc" if "cc" in d.columns else None
    keys = ([label] if label else []) + ["event"]
    return (
        d.group_by(keys, maintain_order=True)
        .agg([(pl.col(p).mean() / 1e6).alias(p.removesuffix("_ps") + "_us") for p in PARTS]
             + [(pl.col("delay_ps").mean() / 1e6).alias("total_us"), pl.len().alias("actions")])
        .sort(keys)
    )


@figure("scr-fig22", "SCR Fig. 22", "DPA event-processing latency: trigger, wait, processing (cycles + memory) and install per event type")
def fig22(results):
    t = breakdown(results)
    if t.height == 0:
        return []
    names = [" ".join(str(v) for v in r[: t.columns.index("event") + 1]) for r in t.iter_rows()]
    traces = [Trace(p.removesuffix("_ps"), names, t[p.removesuffix("_ps") + "_us"].to_list(), _color(i), "bar")
              for i, p in enumerate(PARTS)]
    fig = Figure("scr-fig22", "Control-loop delay on the DPA by part (SCR Fig. 22)", "event", "mean µs", traces)
    return [(fig, t)]
