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


QD_KEY = "workload.perftest[0].queue_depth"
SIZE_KEY = "workload.perftest[0].message_size"
PROCESSING_KEY = "control.processing"


def tx_granularity(results) -> pl.DataFrame:
    """Per run: TX bytes per processed event (what one run of the controller
    stands for), with the events raised and processed and the parameters."""
    s = results.summaries()
    if s.height == 0 or "control_entries_processed" not in s.columns:
        return pl.DataFrame()
    keys = [k for k in (QD_KEY, SIZE_KEY, PROCESSING_KEY) if k in s.columns]
    return s.select(
        *keys,
        (pl.col("control_tx_bytes_processed") / pl.col("control_entries_processed").clip(lower_bound=1))
        .alias("bytes_per_event"),
        pl.col("control_events_raised").alias("events_raised"),
        pl.col("control_entries_processed").alias("events_processed"),
        (pl.col("message_bytes_delivered") * 8 / pl.col("sim_time_ps") * 1e3).alias("goodput_gbps"),
    )


@figure("scr-fig15a", "SCR Fig. 15a", "TX bytes per processed event vs message size and queue depth (coalescing)")
def fig15a(results):
    t = tx_granularity(results)
    if t.height == 0 or SIZE_KEY not in t.columns or QD_KEY not in t.columns:
        return []
    traces = []
    for i, ((qd,), g) in enumerate(t.group_by([QD_KEY], maintain_order=True)):
        traces.append(Trace(f"queue depth {qd}", g[SIZE_KEY].cast(pl.String).to_list(),
                            (g["bytes_per_event"] / 1e3).to_list(), _color(i), "line"))
    fig = Figure("scr-fig15a", "TX bytes per processed event (SCR Fig. 15a)", "message size per WQE", "KB per event",
                 traces)
    return [(fig, t)]


@figure("scr-fig15b", "SCR Fig. 15b", "TX bytes per processed event vs a thread's processing time per event")
def fig15b(results):
    t = tx_granularity(results)
    if t.height == 0 or PROCESSING_KEY not in t.columns:
        return []
    fig = Figure("scr-fig15b", "Slower processing coalesces more (SCR Fig. 15b)", "processing time per event",
                 "KB per event", [Trace("bytes per event", t[PROCESSING_KEY].cast(pl.String).to_list(),
                                        (t["bytes_per_event"] / 1e3).to_list(), _color(0), "line")])
    return [(fig, t)]
