"""Standard plots of a run or a sweep.

A plot is first described as data (`Figure`: titled axes and traces, built
from the analysis functions), then drawn: `render()` draws it with matplotlib
as PNG or SVG, and the HTML report (report.py) draws the same description
interactively. Runs are grouped by their parameters other than `seed`, so a
sweep's seeds are pooled into one line per setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from rdmalab import analysis as A
from rdmalab.sweep.store import Results

# matplotlib's tab10, so PNG/SVG and the HTML report colour each group alike.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

# Fairness and throughput are computed in this many windows over the run.
WINDOWS = 40
# Rate traces show at most this many QPs per group.
MAX_RATE_QPS = 8


@dataclass
class Trace:
    name: str
    x: list
    y: list
    color: str
    kind: str = "line"  # line | step | bar | points (markers only)
    dash: bool = False


@dataclass
class Figure:
    key: str  # file name stem, and the id of the plot in the report
    title: str
    xlabel: str
    ylabel: str
    traces: list[Trace] = field(default_factory=list)
    xlog: bool = False
    # A heat map instead of traces: x and y labels and z rows (None = no data);
    # optional "zmin", "zmax" (default 0, 1) and "label" (the colour scale's name).
    heatmap: dict | None = None


def group_columns(results: Results) -> list[str]:
    """The parameters that tell settings apart (everything but the seed)."""
    return [k for k in results.param_names if k != "seed"]


def group_label(row: dict, cols: list[str], fallback: str) -> str:
    return ", ".join(f"{k}={row[k]}" for k in cols) if cols else fallback


def _groups(df: pl.DataFrame, cols: list[str], fallback: str) -> list[tuple[str, pl.DataFrame]]:
    if not cols:
        return [(fallback, df)]
    parts = df.partition_by(cols, maintain_order=True, as_dict=True)
    return [(group_label(dict(zip(cols, k)), cols, fallback), g) for k, g in parts.items()]


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def window_ps(results: Results) -> int:
    """The window for fairness and throughput: the longest run's simulated time / WINDOWS."""
    s = results.summaries()
    longest = int(s["sim_time_ps"].max()) if s.height else 0
    return max(longest // WINDOWS, 1)


def slowdown_figure(results: Results, start_ps: int | None = None, end_ps: int | None = None) -> Figure | None:
    cols = group_columns(results)
    sd = A.slowdown_by_size(results.table("flows"), by=cols, start_ps=start_ps, end_ps=end_ps)
    if sd.height == 0:
        return None
    fig = Figure("slowdown", "FCT slowdown by flow size (20 buckets of 5% of the flows; solid p50, dashed p99)",
                 "flow size (bytes, largest in bucket)", "FCT slowdown", xlog=True)
    for i, (label, g) in enumerate(_groups(sd, cols, results.name)):
        x = g["size_max_bytes"].to_list()
        fig.traces.append(Trace(f"{label} p50", x, g["p50"].to_list(), _color(i)))
        fig.traces.append(Trace(f"{label} p99", x, g["p99"].to_list(), _color(i), dash=True))
    return fig


def _rate_qps(results: Results, run_id: str) -> list[int]:
    """The QPs worth a trace: the perftest-like applications', else the largest flows'."""
    apps = results.table("apps").filter((pl.col("run_id") == run_id) & (pl.col("qp") >= 0))
    if apps.height:
        return apps["qp"].cast(pl.Int64).to_list()[:MAX_RATE_QPS]
    flows = results.table("flows").filter(pl.col("run_id") == run_id)
    return flows.sort(["size_bytes", "qp"], descending=[True, False])["qp"].cast(pl.Int64).to_list()[:MAX_RATE_QPS]


def rate_figures(results: Results) -> list[Figure]:
    """Per setting, the first run's per-QP throughput over time."""
    cols = group_columns(results)
    samples = results.table("qp_samples")
    figs = []
    for gi, (label, g) in enumerate(_groups(samples, cols, results.name)):
        run_id = g["run_id"][0]
        r = A.rate_series(g.filter(pl.col("run_id") == run_id), qps=_rate_qps(results, run_id))
        if r.height == 0:
            continue
        fig = Figure(f"rates-{gi}", f"Throughput per QP — {label} (run {run_id})", "time (ms)", "throughput (Gb/s)")
        for i, (qp, q) in enumerate(sorted(r.partition_by("qp", as_dict=True).items())):
            fig.traces.append(Trace(f"QP {qp[0]}", (q["time_ps"] / 1e9).to_list(),
                                    (q["throughput_bps"] / 1e9).to_list(), _color(i)))
        figs.append(fig)
    return figs


def throughput_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    t = A.throughput_series(results.table("qp_samples"), window_ps(results), by=cols + ["run_id"])
    if t.height == 0:
        return None
    fig = Figure("throughput", "Total throughput (mean over seeds)", "time (ms)", "throughput (Gb/s)")
    for i, (label, g) in enumerate(_groups(t, cols, results.name)):
        m = g.group_by("time_ps").agg(pl.col("throughput_bps").mean()).sort("time_ps")
        fig.traces.append(Trace(label, (m["time_ps"] / 1e9).to_list(), (m["throughput_bps"] / 1e9).to_list(), _color(i)))
    return fig


def queue_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    c = A.queue_cdf(results.table("port_samples"), by=cols, busy_only=True)
    if c.height == 0:
        return None
    fig = Figure("queue-cdf", "Switch queue length CDF (ports that ever queued)", "queued (KB)", "fraction of samples")
    for i, (label, g) in enumerate(_groups(c, cols, results.name)):
        fig.traces.append(Trace(label, (g["queued_bytes"] / 1e3).to_list(), g["fraction"].to_list(), _color(i), kind="step"))
    return fig


def fairness_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    w = window_ps(results)
    j = A.jain_fairness(results.table("qp_samples"), w, by=cols + ["run_id"])
    if j.height == 0:
        return None
    starts = sorted(set(j["window_start_ps"].to_list()))
    labels, z = [], []
    for label, g in _groups(j, cols, results.name):
        m = dict(g.group_by("window_start_ps").agg(pl.col("jain_index").mean()).iter_rows())
        labels.append(label)
        z.append([m.get(t) for t in starts])
    return Figure("fairness", f"Jain's fairness index of QP throughput ({w / 1e6:g} us windows, mean over seeds)",
                  "window start (ms)", "", heatmap={"x": [t / 1e9 for t in starts], "y": labels, "z": z})


def pfc_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    ev = results.table("pfc_events").join(results.summaries().select("run_id", "sim_time_ps"), on="run_id")
    p = A.pfc_pause_time(ev, end_ps="sim_time_ps", by=cols + ["run_id"])
    if p.height == 0:
        return None
    p = p.group_by(cols + ["node_name", "port"], maintain_order=True).agg(pl.col("paused_ps").mean())
    fig = Figure("pfc", "PFC pause time per port (mean over seeds)", "port", "paused (us)")
    for i, (label, g) in enumerate(_groups(p, cols, results.name)):
        x = [f"{n}:{pt}" for n, pt in zip(g["node_name"], g["port"])]
        fig.traces.append(Trace(label, x, (g["paused_ps"] / 1e6).to_list(), _color(i), kind="bar"))
    return fig


def control_delay_figure(results: Results) -> Figure | None:
    cols = group_columns(results)
    c = A.ecdf(results.table("control_delays"), "delay_ps", by=cols)
    if c.height == 0:
        return None
    fig = Figure("control-delays", "Control-loop delay CDF", "delay (us)", "fraction of decisions")
    for i, (label, g) in enumerate(_groups(c, cols, results.name)):
        x = (g["delay_ps"] / 1e6).to_list()
        # Start the step at 0 so a distribution with a single value still draws a riser.
        fig.traces.append(Trace(label, x[:1] + x, [0.0] + g["fraction"].to_list(), _color(i), kind="step"))
    return fig


def standard_figures(results: Results, start_ps: int | None = None, end_ps: int | None = None) -> list[Figure]:
    """Every standard plot that has data: slowdown vs size, rates, throughput, queue CDF,
    fairness heat map, PFC pause time, control-loop delays."""
    figs = [slowdown_figure(results, start_ps, end_ps), *rate_figures(results), throughput_figure(results),
            queue_figure(results), fairness_figure(results), pfc_figure(results), control_delay_figure(results)]
    return [f for f in figs if f is not None]


def render(fig: Figure, path: str | Path) -> Path:
    """Draw `fig` with matplotlib into `path` (PNG or SVG, by its extension)."""
    from matplotlib.figure import Figure as MplFigure

    path = Path(path)
    heat = fig.heatmap
    height = 4.2 if not heat else 1.5 + 0.35 * len(heat["y"])
    mfig = MplFigure(figsize=(8, height), layout="constrained")
    ax = mfig.subplots()
    if heat:
        import numpy as np

        z = np.array([[np.nan if v is None else v for v in row] for row in heat["z"]], dtype=float)
        x = heat["x"]
        vmin, vmax = heat.get("zmin", 0), heat.get("zmax", 1)
        if all(isinstance(v, (int, float)) for v in x):
            step = x[1] - x[0] if len(x) > 1 else 1.0
            im = ax.imshow(z, aspect="auto", vmin=vmin, vmax=vmax, cmap="viridis", interpolation="nearest",
                           extent=(x[0], x[-1] + step, len(heat["y"]) - 0.5, -0.5))
        else:
            # Categorical columns (e.g. message sizes): one cell each, values written in.
            im = ax.imshow(z, aspect="auto", vmin=vmin, vmax=vmax, cmap="viridis", interpolation="nearest")
            ax.set_xticks(range(len(x)), x)
            for (r, c), v in np.ndenumerate(z):
                if not np.isnan(v):
                    ax.text(c, r, f"{v:.2f}" if vmax <= 1 else f"{v:.0f}", ha="center", va="center",
                            color="white" if v < (vmin + vmax) / 2 else "black", fontsize="small")
        ax.set_yticks(range(len(heat["y"])), heat["y"])
        mfig.colorbar(im, ax=ax, label=heat.get("label", "Jain's index"))
    else:
        bars = [t for t in fig.traces if t.kind == "bar"]
        cats = sorted({x for t in bars for x in t.x})
        for i, t in enumerate(fig.traces):
            style = "--" if t.dash else "-"
            if t.kind == "bar":
                width = 0.8 / len(bars)
                pos = [cats.index(x) + (i - (len(bars) - 1) / 2) * width for x in t.x]
                ax.bar(pos, t.y, width=width, color=t.color, label=t.name)
            elif t.kind == "step":
                ax.step(t.x, t.y, style, where="post", color=t.color, label=t.name)
            elif t.kind == "points":
                ax.plot(t.x, t.y, "x", color=t.color, label=t.name, markersize=5)
            else:
                ax.plot(t.x, t.y, style, color=t.color, label=t.name, marker="." if len(t.x) < 30 else None)
        if bars:
            ax.set_xticks(range(len(cats)), cats, rotation=45, ha="right")
        if fig.xlog:
            ax.set_xscale("log")
        ax.grid(True, alpha=0.3)
        if len(fig.traces) > 1 or bars:
            ax.legend(fontsize="small")
    ax.set_title(fig.title, fontsize="medium")
    ax.set_xlabel(fig.xlabel)
    ax.set_ylabel(fig.ylabel)
    metadata = {"Date": None} if path.suffix == ".svg" else None
    mfig.savefig(path, metadata=metadata, dpi=110)
    return path


def write_plots(path: str | Path, out_dir: str | Path, fmt: str = "png",
                start_ps: int | None = None, end_ps: int | None = None) -> list[Path]:
    """Draw every standard plot of a run or sweep directory into `out_dir` as FORMAT files."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"format `{fmt}` — allowed: png, svg")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [render(f, out / f"{f.key}.{fmt}") for f in standard_figures(Results(path), start_ps, end_ps)]
