"""The collectives of a run or sweep (`workload.collective`): iteration
times and bus bandwidth per setting, and each rank's timeline, as figures
for the report and `rdmalab plot`, and a table of iterations."""

from __future__ import annotations

import re

import polars as pl

from rdmalab.plots import Figure, Trace, _color, _first_runs, _groups, group_columns, in_sweep_order
from rdmalab.sweep.store import Results
from rdmalab.units import time_unit


def iterations(results: Results) -> pl.DataFrame:
    """Every finished iteration of every collective, with the settings'
    columns, in sweep order: time and nccl-tests' bandwidths in Gb/s."""
    cols = group_columns(results)
    c = results.table("collectives")
    if c.height == 0:
        return c
    c = c.filter(pl.col("time_ps").is_not_null())
    return in_sweep_order(c, results, cols, ["collective", "iteration"])


def _slugs(names: list[str]) -> dict[str, str]:
    """A file name and HTML id for each collective: a group's `dp/0` is
    `dp-0` (a slash would be a directory to `rdmalab plot`); two names that
    read alike get the second a number."""
    out: dict[str, str] = {}
    for name in names:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "collective"
        while slug in out.values():
            slug += f"-{len(out)}"
        out[name] = slug
    return out


def collective_figures(results: Results) -> list[Figure]:
    """Per collective: its iterations' times and busbw (not for a pipeline),
    one bar per setting (mean over seeds); and the first run's per-rank timeline."""
    it = iterations(results)
    if it.height == 0:
        return []
    cols = group_columns(results)
    figs = []
    mean = it.group_by([*cols, "collective", "iteration"], maintain_order=True).agg(
        pl.col("time_ps").mean(), pl.col("busbw_bps").mean())
    unit, per = time_unit(float(mean["time_ps"].max()))
    seeds = " (mean over seeds)" if "seed" in results.param_names else ""
    names = mean["collective"].unique(maintain_order=True).to_list()
    slug = _slugs(names)
    for name in names:
        one = mean.filter(pl.col("collective") == name)
        t = Figure(f"collective-time-{slug[name]}", f"{name}: time per iteration{seeds}", "iteration",
                   f"time ({unit})", section="collectives", half=True)
        b = Figure(f"collective-busbw-{slug[name]}", f"{name}: bus bandwidth (nccl-tests){seeds}", "iteration",
                   "busbw (Gb/s)", section="collectives", half=True)
        for i, (label, g) in enumerate(_groups(one, cols, results)):
            x = [str(v) for v in g["iteration"]]
            t.traces.append(Trace(label, x, (g["time_ps"] / per).to_list(), _color(i), kind="bar"))
            b.traces.append(Trace(label, x, (g["busbw_bps"] / 1e9).to_list(), _color(i), kind="bar"))
        # A pipeline has no bus bandwidth (its time is mostly compute).
        figs += [t, b] if one["busbw_bps"].is_not_null().any() else [t]
    figs += timeline_figures(results)
    return figs


def timeline_figures(results: Results) -> list[Figure]:
    """Per setting's first run: each rank's compute phases and its time in
    the collective, one row per rank (at most 64 ranks drawn). A pipeline
    stage's span holds its passes and its waits (their sum is `compute_ps`)."""
    ranks = results.table("collective_ranks")
    if ranks.height == 0:
        return []
    cols = group_columns(results)
    ranks = _first_runs(ranks, results).filter(pl.col("launched_ps").is_not_null() & (pl.col("rank") < 64))
    if ranks.height == 0:
        return []
    unit, per = time_unit(float(ranks["done_ps"].max() or ranks["launched_ps"].max()))
    figs = []
    # A pipeline's passes are inside its span (collective_ranks has their sum, not their times).
    ops = dict(results.table("collectives").select("collective", "op").unique().iter_rows())
    for i, (label, g) in enumerate(_groups(ranks, cols, results)):
        fig = Figure(f"collective-ranks-{i}", f"Ranks over time — {label}", f"time ({unit})", "rank",
                     section="collectives")
        for kind, start, end, color in (("compute", "compute_start", "launched_ps", "#999999"),
                                        ("in the collective", "launched_ps", "done_ps", _color(i))):
            x, y, text = [], [], []
            rows = g.with_columns((pl.col("launched_ps") - pl.col("compute_ps")).alias("compute_start"))
            for r in rows.iter_rows(named=True):
                if kind == "compute" and ops.get(r["collective"]) == "pipeline":
                    continue
                a, b = r[start], r[end]
                if a is None or b is None:
                    continue
                name = f"{r['collective']} iteration {r['iteration']}, rank {r['rank']} ({r['host_name']}): {kind}"
                x += [a / per, b / per, None]
                y += [r["rank"], r["rank"], None]
                text += [name, name, None]
            if x:
                fig.traces.append(Trace(kind, x, y, color, text=text))
        figs.append(fig)
    return figs
