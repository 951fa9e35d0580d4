"""`rdmalab report RUN_OR_SWEEP`: one self-contained HTML file.

The report holds the run table, the standard plots of plots.py drawn with
plotly.js (embedded inline from the pinned `plotly` package, so the file opens
offline and needs no CDN), the slowdown-by-size table, PFC pause times and the
scenario (and sweep file). Nothing in it depends on when it was written: the
same results give the same file.
"""

from __future__ import annotations

import html
import importlib.util
import json
import math
from pathlib import Path

import polars as pl
import yaml

from rdmalab import __version__
from rdmalab import analysis as A
from rdmalab.plots import Figure, group_columns, standard_figures
from rdmalab.outputs import read_json
from rdmalab.sweep.store import SWEEP, Results

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1180px;padding:0 16px;color:#222}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0} th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4} td.l,th.l{text-align:left} .failed{color:#b00} .pending{color:#888}
.plot{width:100%;min-height:420px;margin:12px 0} pre{background:#f7f7f7;padding:10px;overflow:auto;font-size:12px}
.muted{color:#666}
"""


def plotly_js() -> str:
    """plotly.min.js as shipped in the pinned plotly package."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the report needs the `plotly` package (a dependency of rdmalab); reinstall rdmalab")
    path = Path(spec.submodule_search_locations[0]) / "package_data" / "plotly.min.js"
    return path.read_text(encoding="utf-8").replace("</script", "<\\/script")


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def to_plotly(fig: Figure) -> dict:
    """The plotly.js description (data + layout) of a Figure."""
    layout = {
        "title": {"text": fig.title, "font": {"size": 14}},
        "xaxis": {"title": {"text": fig.xlabel}},
        "yaxis": {"title": {"text": fig.ylabel}},
        "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
        "legend": {"font": {"size": 11}},
        "hovermode": "closest",
    }
    if fig.heatmap:
        h = fig.heatmap
        data = [{"type": "heatmap", "x": h["x"], "y": h["y"], "z": [_clean(r) for r in h["z"]], "zmin": h.get("zmin", 0), "zmax": h.get("zmax", 1),
                 "colorscale": "Viridis", "colorbar": {"title": {"text": h.get("label", "Jain")}}, "xgap": 0, "ygap": 1}]
        layout["yaxis"]["automargin"] = True
        layout["yaxis"]["autorange"] = "reversed"
        layout["height"] = 160 + 40 * len(h["y"])
        return {"data": data, "layout": layout}
    data = []
    for t in fig.traces:
        if t.kind == "bar":
            data.append({"type": "bar", "name": t.name, "x": t.x, "y": _clean(t.y), "marker": {"color": t.color}})
            continue
        if t.kind == "points":
            data.append({"type": "scatter", "mode": "markers", "name": t.name, "x": t.x, "y": _clean(t.y),
                         "marker": {"color": t.color, "symbol": "x"}})
            continue
        line = {"color": t.color, "dash": "dash" if t.dash else "solid", "shape": "hv" if t.kind == "step" else "linear"}
        data.append({"type": "scatter", "mode": "lines+markers" if len(t.x) < 30 else "lines",
                     "name": t.name, "x": t.x, "y": _clean(t.y), "line": line})
    if fig.xlog:
        layout["xaxis"]["type"] = "log"
    return {"data": data, "layout": layout}


def _table(df: pl.DataFrame, left: set[str] = frozenset(), classes: dict | None = None) -> str:
    head = "".join(f'<th class="{"l" if c in left else ""}">{html.escape(c)}</th>' for c in df.columns)
    body = []
    for row in df.iter_rows(named=True):
        cls = (classes or {}).get(row.get("status"), "")
        cells = []
        for c, v in row.items():
            if isinstance(v, float):
                v = f"{v:.4g}"
            cells.append(f'<td class="{"l" if c in left else ""}">{html.escape("" if v is None else str(v))}</td>')
        body.append(f'<tr class="{cls}">{"".join(cells)}</tr>')
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _runs_table(results: Results) -> pl.DataFrame:
    m = results.manifest()
    keep = ["index", "run_id", *results.param_names, "status", "wall_seconds", "error"]
    m = m.select([c for c in keep if c in m.columns])
    s = results.summaries()
    if s.height:
        s = s.select("run_id", "end", "flows_completed", "flows_total", "pfc_pauses", "dropped_frames",
                     "ecn_marked_packets", "timeouts")
        m = m.join(s, on="run_id", how="left", maintain_order="left")
    if results.kind == "run":
        m = m.drop([c for c in ("index", "status", "wall_seconds", "error") if c in m.columns])
    return m


def _scenario_text(results: Results) -> str:
    parts = []
    if results.kind == "sweep":
        spec = read_json(results.path / SWEEP).get("spec", {})
        parts.append(("Sweep file", yaml.safe_dump(spec, sort_keys=False)))
    done = results.done()
    if done:
        sc = read_json(results.run_path(done[0]) / "scenario.json")
        what = "Scenario" if results.kind == "run" else f"Scenario of run {done[0]['index']} ({done[0]['run_id']})"
        parts.append((what, yaml.safe_dump(sc, sort_keys=True)))
    return "".join(
        f"<details{' open' if i == 0 else ''}><summary>{html.escape(t)}</summary><pre>{html.escape(body)}</pre></details>"
        for i, (t, body) in enumerate(parts)
    )


def build_report(path: str | Path, start_ps: int | None = None, end_ps: int | None = None) -> str:
    """The report of a run or sweep directory as HTML text."""
    results = Results(path)
    figs = standard_figures(results, start_ps, end_ps)
    cols = group_columns(results)
    rows = results.rows
    counts = {s: sum(r["status"] == s for r in rows) for s in ("done", "failed", "pending")}

    out = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
           f"<title>rdmalab report — {html.escape(results.name)}</title><style>{_CSS}</style>"
           f"<script>{plotly_js()}</script></head><body>"]
    kind = "sweep" if results.kind == "sweep" else "run"
    out.append(f"<h1>rdmalab {kind}: {html.escape(results.name)}</h1>")
    out.append(f"<p class='muted'>{counts['done']} runs done, {counts['failed']} failed, {counts['pending']} pending"
               + (f"; parameters: {html.escape(', '.join(results.param_names))}" if results.param_names else "")
               + f". Report by rdmalab {__version__}; times in the tables are in ps unless a column says otherwise.</p>")

    out.append("<h2>Runs</h2>" + _table(_runs_table(results), left={"run_id", "status", "error", "end", *results.param_names},
                                      classes={"failed": "failed", "pending": "pending"}))
    out.append("<h2>Plots</h2>")
    if not figs:
        out.append("<p>No finished run has data to plot.</p>")
    for f in figs:
        out.append(f"<div class='plot' id='{f.key}'></div>")

    flows = results.table("flows")
    if flows.height:
        sd = A.slowdown_by_size(flows, by=cols, start_ps=start_ps, end_ps=end_ps)
        window = "" if start_ps is None and end_ps is None else (
            f" started in [{'0' if start_ps is None else start_ps}, {'end' if end_ps is None else end_ps}) ps")
        out.append(f"<h2>FCT slowdown by flow size</h2><p class='muted'>Flows{window}, pooled over seeds, "
                   "20 buckets of 5% of the flows each; nearest-rank quantiles.</p>")
        out.append(_table(sd, left=set(cols)))

    ev = results.table("pfc_events")
    if ev.height:
        ends = results.summaries().select("run_id", "sim_time_ps")
        p = A.pfc_pause_time(ev.join(ends, on="run_id"), end_ps="sim_time_ps", by=["run_id", *cols])
        out.append("<h2>PFC pause time per port</h2>" + _table(p.sort("paused_ps", descending=True).head(50),
                                                               left={"run_id", "node_name", *cols}))

    delays = results.table("control_delays")
    if delays.height:
        out.append("<h2>Control-loop delays</h2>" + _table(A.control_delay_stats(delays, by=cols), left=set(cols)))

    out.append("<h2>Scenario</h2>" + _scenario_text(results))
    figures = json.dumps({f.key: to_plotly(f) for f in figs}, separators=(",", ":")).replace("</", "<\\/")
    out.append(
        "<script>const FIGURES=" + figures + ";\n"
        "for (const [id, f] of Object.entries(FIGURES)) {"
        " Plotly.newPlot(id, f.data, f.layout, {responsive: true, displaylogo: false}); }</script>"
    )
    out.append("</body></html>\n")
    return "".join(out)


def write_report(path: str | Path, out: str | Path | None = None,
                 start_ps: int | None = None, end_ps: int | None = None) -> Path:
    """Write the report of a run or sweep directory (default: DIR/report.html)."""
    target = Path(out) if out is not None else Path(path) / "report.html"
    target.write_text(build_report(path, start_ps, end_ps), encoding="utf-8")
    return target
