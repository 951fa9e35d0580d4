"""SCR §A.8 and Fig. 20: receiver-driven control in the peer domain.

The scenarios (examples/scr/scr-receiver-*.yaml) run one controlled QP into a
receiver, with or without uncontrolled background senders (perftest entries
with a fixed `rate:`). Which QP is which is read from each run's
scenario.json: a perftest entry with `rate` is background, any other is the
controlled (granted / backpressured) sender.

Rates are drawn as the paper draws them, in Gb/s over time: the controlled
sender's dequeue rate (the grant, or the rate the backpressure leaves) and
its throughput, the background's aggregate, and the line rate. Dequeue rates
and the line rate are wire rates; throughput is payload delivered in order,
so a sender alone at line rate shows about 92.6 Gb/s of throughput with
RoCEv2 headers at a 1024 B MTU.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import PALETTE, Figure, Trace
from rdmalab.outputs import read_json
from rdmalab.sweep.store import Results

GRANTED, BACKGROUND, LINE, QUEUE = PALETTE[0], PALETTE[1], "#7f7f7f", PALETTE[3]


def _scenario(results: Results, row: dict) -> dict:
    return read_json(results.run_path(row) / "scenario.json")


def _rate_gbps(text, default: float = 100.0) -> float:
    from rdmalab.hpcc.units import parse_rate_bps

    try:
        return parse_rate_bps(str(text)) / 1e9
    except ValueError:
        return default


def _param_default(algorithm: str, name: str) -> float:
    from rdmalab import _core

    for a in _core.algorithms():
        if a["name"] == algorithm:
            for p in a["params"]:
                if p["name"] == name:
                    return float(p["default"])
    raise KeyError(f"{algorithm} has no parameter {name}")


def _background_apps(scenario: dict) -> list[bool]:
    """Per expanded perftest application (the `app` column of apps): is it fixed-rate background?"""
    entries = scenario.get("workload", {}).get("perftest", [])
    if isinstance(entries, dict):
        entries = [entries]
    out: list[bool] = []
    for e in entries:
        out += ["rate" in e] * int(e.get("qps", 1))
    return out


def _runs(results: Results, name: str):
    """(key, run_id, run row) per finished run: the figure's name, suffixed by run in a sweep."""
    rows = results.done()
    for i, row in enumerate(rows):
        yield (name if len(rows) == 1 else f"{name}-{i}"), row["run_id"], row


def _series(results: Results, run_id: str, scenario: dict) -> pl.DataFrame:
    """Per sample time: the controlled QPs' dequeue rate and throughput, the background's
    aggregate of both and how many background QPs were open, the largest switch-port queue."""
    background = _background_apps(scenario)
    apps = results.table("apps").filter((pl.col("run_id") == run_id) & (pl.col("qp") >= 0))
    bg_qps = [int(q) for a, q in zip(apps["app"], apps["qp"]) if a < len(background) and background[a]]
    samples = results.table("qp_samples").filter(pl.col("run_id") == run_id)
    times = samples.select("time_ps").unique().sort("time_ps")
    is_bg = pl.col("qp").is_in(bg_qps)

    def agg(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
        return frame.group_by("time_ps").agg(
            (pl.col("dequeue_rate_bps").sum() / 1e9).round(6).alias(f"{prefix}_dequeue_gbps"),
            (pl.col("throughput_bps").sum() / 1e9).round(6).alias(f"{prefix}_throughput_gbps"),
            pl.len().cast(pl.Int64).alias(f"{prefix}_qps"),
        )

    ctl = agg(samples.filter(~is_bg), "controlled").drop("controlled_qps")
    bg = agg(samples.filter(is_bg), "background")
    ports = results.table("port_samples").filter(pl.col("run_id") == run_id)
    queue = ports.group_by("time_ps").agg(pl.col("queued_bytes").max().alias("max_switch_queue_bytes"))
    df = (times.join(ctl, on="time_ps", how="left").join(bg, on="time_ps", how="left")
          .join(queue, on="time_ps", how="left").fill_null(0).sort("time_ps"))
    line = _rate_gbps(scenario.get("topology", {}).get("host_link", {}).get("rate"))
    return df.with_columns((pl.col("time_ps") / 1e6).alias("time_us"), pl.lit(line).alias("line_gbps")).select(
        "time_us", "controlled_dequeue_gbps", "controlled_throughput_gbps", "background_dequeue_gbps",
        "background_throughput_gbps", "background_qps", "line_gbps", "max_switch_queue_bytes")


def _rates_figure(key: str, title: str, df: pl.DataFrame, who: str) -> Figure:
    t = (df["time_us"] / 1e3).to_list()
    fig = Figure(key, title, "time (ms)", "Gb/s (dequeue rate and line: wire; throughput: payload)")
    fig.traces += [
        Trace(f"{who}: dequeue rate", t, df["controlled_dequeue_gbps"].to_list(), GRANTED, kind="step"),
        Trace(f"{who}: throughput", t, df["controlled_throughput_gbps"].to_list(), GRANTED, dash=True),
    ]
    if df["background_qps"].max() > 0:
        fig.traces += [
            Trace("background (aggregate): dequeue rate", t, df["background_dequeue_gbps"].to_list(), BACKGROUND,
                  kind="step"),
            Trace("background (aggregate): throughput", t, df["background_throughput_gbps"].to_list(), BACKGROUND,
                  dash=True),
        ]
    fig.traces.append(Trace("line rate", t, df["line_gbps"].to_list(), LINE, dash=True))
    return fig


def _queue_figure(key: str, title: str, df: pl.DataFrame) -> tuple[Figure, pl.DataFrame]:
    fig = Figure(key, title, "time (ms)", "queue (KB)")
    fig.traces.append(Trace("largest switch-port queue (the receiver's port)", (df["time_us"] / 1e3).to_list(),
                            (df["max_switch_queue_bytes"] / 1e3).to_list(), QUEUE))
    return fig, df.select("time_us", "max_switch_queue_bytes")


def _grant_figures(results: Results, name: str, what: str) -> list:
    out = []
    for key, run_id, row in _runs(results, name):
        df = _series(results, run_id, _scenario(results, row))
        out.append((_rates_figure(key, f"{what}: granted sender vs background — run {run_id}", df, "granted"), df))
        out.append(_queue_figure(f"{key}-queue", f"{what}: queue in front of the receiver — run {run_id}", df))
    return out


def incast_steps(df: pl.DataFrame) -> pl.DataFrame:
    """Per incast step (number of open background QPs), the means over the second half
    of the step: the first half holds the control loop's reaction to the newcomer."""
    rows = []
    for (n,), g in sorted(df.partition_by("background_qps", as_dict=True).items()):
        g = g.sort("time_us")
        mid = (g["time_us"].min() + g["time_us"].max()) / 2
        late = g.filter(pl.col("time_us") >= mid)
        bg = round(float(late["background_dequeue_gbps"].mean()), 3)
        line = float(late["line_gbps"].mean())
        rows.append({
            "background_qps": int(n),
            "background_gbps": bg,
            "headroom_gbps": round(line - bg, 3),
            "granted_dequeue_gbps": round(float(late["controlled_dequeue_gbps"].mean()), 3),
            "granted_throughput_gbps": round(float(late["controlled_throughput_gbps"].mean()), 3),
            "max_switch_queue_bytes": int(late["max_switch_queue_bytes"].max()),
            "from_us": float(late["time_us"].min()),
            "to_us": float(late["time_us"].max()),
        })
    return pl.DataFrame(rows)


@figure("scr-fig20a", "SCR Fig. 20a",
        "receiver-granted credits in a 2-to-1 incast: the granted sender uses what the background leaves")
def fig20a(results: Results):
    return _grant_figures(results, "scr-fig20a", "SCR Fig. 20a, receiver grants (2-to-1)")


@figure("scr-fig20b", "SCR Fig. 20b",
        "receiver-granted credits as background senders join one by one up to 16-to-1")
def fig20b(results: Results):
    out = _grant_figures(results, "scr-fig20b", "SCR Fig. 20b, receiver grants (up to 16-to-1)")
    for key, run_id, row in _runs(results, "scr-fig20b"):
        steps = incast_steps(_series(results, run_id, _scenario(results, row)))
        x = steps["background_qps"].to_list()
        fig = Figure(f"{key}-steps", f"SCR Fig. 20b: granted sender per incast step (second half of each) — run {run_id}",
                     "background senders", "Gb/s (wire, except throughput: payload)")
        fig.traces += [
            Trace("headroom: line − background dequeue rates", x, steps["headroom_gbps"].to_list(), LINE, dash=True),
            Trace("granted dequeue rate", x, steps["granted_dequeue_gbps"].to_list(), GRANTED),
            Trace("granted throughput", x, steps["granted_throughput_gbps"].to_list(), GRANTED, dash=True),
        ]
        out.append((fig, steps))
    return out


@figure("scr-fig20c", "SCR Fig. 20c",
        "receiver-initiated ECN-like backpressure: MD on each notice, slow AI in between")
def fig20c(results: Results):
    out = []
    for key, run_id, row in _runs(results, "scr-fig20c"):
        scenario = _scenario(results, row)
        df = _series(results, run_id, scenario)
        rate = df["controlled_dequeue_gbps"]
        decreases = int((rate.diff() < 0).sum())
        cc = scenario.get("cc", {})
        threshold = float(cc.get("params", {}).get("threshold", _param_default("receiver-backpressure", "threshold")))
        fig = _rates_figure(key, f"SCR Fig. 20c, receiver backpressure: {decreases} rate decreases, one per notice — run {run_id}", df,
                            "sender")
        t = (df["time_us"] / 1e3).to_list()
        fig.traces.append(Trace(f"notice threshold ({threshold:g} × line)", t,
                                (df["line_gbps"] * threshold).to_list(), QUEUE, dash=True))
        out.append((fig, df.select("time_us", "controlled_dequeue_gbps", "controlled_throughput_gbps", "line_gbps")
                    .with_columns(pl.lit(threshold).alias("threshold"))))
    return out
