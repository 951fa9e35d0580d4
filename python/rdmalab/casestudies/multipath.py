"""SCR appendix A.7, Fig. 19: monitoring several paths of a QP with
out-of-band RTT probes, and moving the QP's data between them.

Both figures read the run's ``probes`` table (every probe answered or lost)
and ``qp_samples`` (its ``udp_sport`` column is the path the data uses). The
probed QP is the one with the most probe rows in the first run.
"""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import PALETTE, Figure, Trace

# Background QPs are drawn in grey so the paths keep the palette's colours.
OTHER_COLOR = "#7f7f7f"
# The throughput figure averages over this many windows of the run.
WINDOWS = 50


def _probed(results) -> tuple[str, int, pl.DataFrame] | None:
    """(run_id, qp, its probe rows sorted by time) of the first run that probes."""
    probes = results.table("probes")
    if probes.height == 0:
        return None
    run_id = probes["run_id"][0]
    p = probes.filter(pl.col("run_id") == run_id)
    counts = p.group_by("qp").len().sort(["len", "qp"], descending=[True, False])
    qp = int(counts["qp"][0])
    return run_id, qp, p.filter(pl.col("qp") == qp).sort(["time_ps", "udp_sport"])


def _us(col: str) -> pl.Expr:
    return (pl.col(col) / 1e6).alias(col.replace("_ps", "_us"))


def rtt_figure(results, key: str, title: str) -> tuple[Figure, pl.DataFrame] | None:
    """Probe RTT per path over time; a lost probe breaks its path's line and
    is marked at the probe timeout, where the controller saw it."""
    found = _probed(results)
    if found is None:
        return None
    run_id, qp, p = found
    fig = Figure(key, f"{title} (run {run_id}, QP {qp})", "time (us)", "probe RTT (us)")
    ports = sorted(p["udp_sport"].unique().to_list())
    for i, port in enumerate(ports):
        # In the order the probes were sent: the losses of an outage then form
        # one run (they are declared a timeout later, among newer answers).
        g = p.filter(pl.col("udp_sport") == port).sort(pl.col("time_ps") - pl.col("rtt_ps"))
        t = (g["time_ps"] / 1e6).to_list()
        rtt = (g["rtt_ps"] / 1e6).to_list()
        lost = g["lost"].to_list()
        color = PALETTE[i % len(PALETTE)]
        # The line breaks once where probes were lost.
        xs, ys = [], []
        for a, r, x in zip(t, rtt, lost):
            if not x:
                xs.append(a)
                ys.append(r)
            elif ys and ys[-1] is not None:
                xs.append(a)
                ys.append(None)
        fig.traces.append(Trace(f"path {port}", xs, ys, color))
        if any(lost):
            fig.traces.append(Trace(f"path {port}: lost (probe timeout)", [a for a, x in zip(t, lost) if x],
                                    [r for r, x in zip(rtt, lost) if x], color, kind="points"))
    table = p.select(_us("time_ps"), "udp_sport", _us("rtt_ps"), "lost")
    return fig, table


def path_figure(results, key: str, title: str) -> tuple[Figure, pl.DataFrame] | None:
    """The probed QP's delivered throughput in windows of about 1/WINDOWS of
    the run, coloured by the path its data used at the window's end; other
    QPs' total in grey."""
    found = _probed(results)
    if found is None:
        return None
    run_id, qp, p = found
    s = results.table("qp_samples").filter(pl.col("run_id") == run_id)
    mine = s.filter(pl.col("qp") == qp).sort("time_ps")
    if mine.height == 0:
        return None
    others = (s.filter(pl.col("qp") != qp).group_by("time_ps").agg(pl.col("throughput_bps").sum().alias("other_bps")))
    times = mine["time_ps"]
    step = int(times[1] - times[0]) if len(times) > 1 else 1
    window = max(step, round(int(times.max()) / WINDOWS / step) * step)
    table = (mine.join(others, on="time_ps", how="left")
             .with_columns(((pl.col("time_ps") + window - 1) // window * window).alias("window_end_ps"))
             .group_by("window_end_ps", maintain_order=True)
             .agg(pl.col("udp_sport").last(), pl.col("throughput_bps").mean(), pl.col("other_bps").fill_null(0).mean())
             .select(_us("window_end_ps"), "udp_sport",
                     (pl.col("throughput_bps") / 1e9).alias("throughput_gbps"),
                     (pl.col("other_bps") / 1e9).alias("other_qps_gbps"))
             .sort("window_end_us"))
    fig = Figure(key, f"{title} (run {run_id}, QP {qp}; {window / 1e6:g} us windows)", "time (us)",
                 "delivered throughput (Gb/s)")
    t = table["window_end_us"].to_list()
    tput = table["throughput_gbps"].to_list()
    used = table["udp_sport"].to_list()
    ports = sorted(p["udp_sport"].unique().to_list())
    for i, port in enumerate(ports):
        if port in used:
            y = [g if u == port else None for g, u in zip(tput, used)]
            fig.traces.append(Trace(f"QP {qp} on path {port}", t, y, PALETTE[i % len(PALETTE)]))
    if s.filter(pl.col("qp") != qp).height:
        fig.traces.append(Trace("other QPs (total)", t, table["other_qps_gbps"].to_list(), OTHER_COLOR, dash=True))
    return fig, table


def _both(results, stem: str, title: str) -> list:
    out = [rtt_figure(results, f"{stem}-rtt", f"{title}: probe RTT per path"),
           path_figure(results, f"{stem}-path", f"{title}: the data's path")]
    return [x for x in out if x is not None]


@figure("scr-fig19a", "SCR Fig. 19a (§A.7)",
        "probe RTT per path rises under 100 Gb/s cross traffic and falls when it stops; the data's path over time")
def fig19a(results) -> list:
    return _both(results, "scr-fig19a", "SCR Fig. 19a in kind")


@figure("scr-fig19b", "SCR Fig. 19b (§A.7)",
        "two paths told apart by probe RTT (+10 us on one), the faster one fails and recovers; the data's path over time")
def fig19b(results) -> list:
    return _both(results, "scr-fig19b", "SCR Fig. 19b in kind")
