"""`rdmalab report RUN_OR_SWEEP`: one self-contained HTML file.

The report answers the usual questions of a CC comparison, section by
section, for a single run or a sweep (settings in sweep order, seeds pooled):
the run table; flow completion times (slowdown against flow size for p50 and
p99 side by side on log axes, buckets sized for each percentile; FCT CDFs;
p99 against load when load is a sweep axis); the dequeue rate and the window
each controller set and the throughput of the same named flows under every setting; queue
length over time at the busiest switch ports; ECN marks, CNPs and PFC pause
time over time; control-loop delays; the scenario and sweep file. A section
with nothing to show says so and why ("No PFC pauses in any run"). Times are
shown in µs / ms, sizes in KB / MB.

Plots are drawn with plotly.js, embedded inline from the pinned `plotly`
package, so the file opens offline and needs no CDN. Nothing in it depends
on when it was written: the same results give the same file.
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
from rdmalab.plots import (Figure, group_columns, in_sweep_order, load_axis, named_qps, param_label,
                           standard_figures)
from rdmalab.units import fmt_size, fmt_time, plural
from rdmalab.outputs import read_json
from rdmalab.sweep.store import SWEEP, Results

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1180px;padding:0 16px;color:#222}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:18px 0 4px}
.tw{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0} th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4;font-weight:600} td.l,th.l{text-align:left} td.wrap{white-space:normal;max-width:28em;overflow-wrap:anywhere}
tr.failed td{color:#b00} tr.pending td{color:#888}
.grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:4px 12px}
.plot{width:100%;min-height:420px;margin:8px 0;grid-column:1/-1} .plot.half{grid-column:auto} .plot.heat{min-height:0}
pre{background:#f7f7f7;padding:10px;overflow:auto;font-size:12px}
.muted{color:#666} p.none{color:#555;background:#f6f6f6;border-left:3px solid #bbb;padding:6px 10px}
nav a{margin-right:12px}
@media (max-width:900px){.plot.half{grid-column:1/-1}}
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
        "title": {"text": fig.title, "font": {"size": 13}},
        "xaxis": {"title": {"text": fig.xlabel}, "automargin": True},
        "yaxis": {"title": {"text": fig.ylabel}, "automargin": True},
        "margin": {"l": 70, "r": 40, "t": 50, "b": 60},
        "legend": {"font": {"size": 11}},
        "hovermode": "closest",
        # A vertical tool bar on the right keeps clear of the title.
        "modebar": {"orientation": "v"},
    }
    if fig.half:
        # Legends under half-width panels leave the plot its width.
        layout["legend"].update({"orientation": "h", "x": 0, "y": -0.22, "yanchor": "top"})
        layout["margin"]["b"] = 40
    if fig.heatmap:
        h = fig.heatmap
        data = [{"type": "heatmap", "x": h["x"], "y": h["y"], "z": [_clean(r) for r in h["z"]], "zmin": h.get("zmin", 0), "zmax": h.get("zmax", 1),
                 "colorscale": "Viridis", "colorbar": {"title": {"text": h.get("label", "Jain")}}, "xgap": 0, "ygap": 1}]
        layout["yaxis"]["autorange"] = "reversed"
        layout["height"] = max(240, 160 + 40 * len(h["y"]))
        layout["modebar"]["orientation"] = "h"  # a vertical one would cover the colour bar
        return {"data": data, "layout": layout}
    data = []
    for t in fig.traces:
        if t.kind == "bar":
            d = {"type": "bar", "name": t.name, "x": t.x, "y": _clean(t.y), "marker": {"color": t.color}}
        elif t.kind == "points":
            d = {"type": "scatter", "mode": "markers", "name": t.name, "x": t.x, "y": _clean(t.y),
                 "marker": {"color": t.color, "symbol": "x"}}
        else:
            line = {"color": t.color, "dash": "dash" if t.dash else "solid", "shape": "hv" if t.kind == "step" else "linear"}
            d = {"type": "scatter", "mode": "lines+markers" if len(t.x) < 30 else "lines",
                 "name": t.name, "x": t.x, "y": _clean(t.y), "line": line}
        if t.text is not None:
            d["text"] = t.text
        data.append(d)
    if fig.xlog:
        layout["xaxis"]["type"] = "log"
    if fig.ylog:
        layout["yaxis"]["type"] = "log"
    else:
        layout["yaxis"]["rangemode"] = "tozero"  # rates, queues and counts read against 0
    return {"data": data, "layout": layout}


def _cell(v) -> str:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.4g}"
    return "" if v is None else str(v)


def _table(df: pl.DataFrame, left: set[str] = frozenset(), classes: dict | None = None,
           wrap: set[str] = frozenset(), headers: dict | None = None) -> str:
    """An HTML table of `df`; `left` columns align left, `wrap` columns wrap long text,
    `headers` renames columns for the reader."""
    def cls(c: str) -> str:
        return " ".join(x for x, on in (("l", c in left), ("wrap", c in wrap)) if on)

    head = "".join(f'<th class="{cls(c)}">{html.escape((headers or {}).get(c, param_label(c)))}</th>'
                   for c in df.columns)
    body = []
    for row in df.iter_rows(named=True):
        rcls = (classes or {}).get(row.get("status"), "")
        cells = "".join(f'<td class="{cls(c)}">{html.escape(_cell(v))}</td>' for c, v in row.items())
        body.append(f'<tr class="{rcls}">{cells}</tr>')
    return f"<div class='tw'><table><tr>{head}</tr>{''.join(body)}</table></div>"


def _runs_table(results: Results) -> pl.DataFrame:
    m = results.manifest()
    keep = ["index", "run_id", *results.param_columns, "status", "wall_seconds", "error"]
    m = m.select([c for c in keep if c in m.columns])
    m = m.with_columns(pl.col("wall_seconds").map_elements(lambda x: f"{x:.2f} s", return_dtype=pl.String)
                       .alias("wall time")).drop("wall_seconds")
    s = results.summaries()
    if s.height:
        s = s.select(
            "run_id", "end",
            pl.col("sim_time_ps").map_elements(fmt_time, return_dtype=pl.String).alias("simulated"),
            pl.format("{} / {}", "flows_completed", "flows_total").alias("flows done"),
            pl.col("pfc_pauses").alias("PFC pauses"), pl.col("ecn_marked_packets").alias("ECN marks"),
            pl.col("cnps_sent").alias("CNPs"), pl.col("dropped_frames").alias("drops"), "timeouts")
        m = m.join(s, on="run_id", how="left", maintain_order="left")
    if results.kind == "run":
        m = m.drop([c for c in ("index", "status", "wall time", "error") if c in m.columns])
    elif m["error"].null_count() == m.height:
        m = m.drop("error")
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


class _Sections:
    """The report's body, section by section, with the plots each holds."""

    def __init__(self, figs: list[Figure]):
        self.figs = {f.key: f for f in figs}
        self.drawn: list[Figure] = []
        self.out: list[str] = []
        self.toc: list[tuple[str, str]] = []

    def h2(self, sid: str, title: str) -> None:
        self.toc.append((sid, title))
        self.out.append(f"<h2 id='{sid}'>{html.escape(title)}</h2>")

    def text(self, t: str, cls: str = "muted") -> None:
        self.out.append(f"<p class='{cls}'>{t}</p>")

    def none(self, nid: str, t: str) -> None:
        """A section's statement that it has nothing to show, and why."""
        self.out.append(f"<p class='none' id='{nid}'>{t}</p>")

    def plots(self, figs: list[Figure]) -> None:
        figs = [f for f in figs if f is not None]
        if not figs:
            return
        self.out.append("<div class='grid'>")
        halves = [f for f in figs if f.half]
        for f in figs:
            # An odd half-width plot out would leave half a row empty: it takes the row.
            half = f.half and not (len(halves) % 2 == 1 and f is halves[-1])
            cls = "plot" + (" half" if half else "") + (" heat" if f.heatmap else "")
            self.out.append(f"<div class='{cls}' id='{f.key}'></div>")
            self.drawn.append(f)
        self.out.append("</div>")

    def section(self, name: str) -> list[Figure]:
        return [f for f in self.figs.values() if f.section == name]


def _total(results: Results, key: str) -> int:
    s = results.summaries()
    return int(s[key].sum()) if s.height and key in s.columns else 0


def build_report(path: str | Path, start_ps: int | None = None, end_ps: int | None = None,
                 buckets: int | tuple | None = None) -> str:
    """The report of a run or sweep directory as HTML text."""
    results = Results(path)
    figs = standard_figures(results, start_ps, end_ps, buckets)
    cols = group_columns(results)
    rows = results.rows
    counts = {st: sum(r["status"] == st for r in rows) for st in ("done", "failed", "pending")}
    S = _Sections(figs)
    runs_word = "sweep" if results.kind == "sweep" else "run"

    S.h2("runs", "Runs")
    S.out.append(_table(_runs_table(results), left={"run_id", "status", "error", "end", *results.param_columns},
                        wrap={"error"}, classes={"failed": "failed", "pending": "pending"}))

    # ---- collectives (only for runs that have them)
    coll = S.section("collectives")
    if coll:
        from rdmalab.collectives import iterations

        S.h2("collectives", "Collectives")
        S.text("Each iteration's time runs from its first message posted to its last byte arrived; bus "
               "bandwidth is nccl-tests': the algorithm bandwidth (bytes / time) times 2(n−1)/n for an "
               "all-reduce, (n−1)/n for the others, comparable with the link rate. The rank timelines show "
               "each rank's compute phase (grey) and its time in the collective, waiting on the network and "
               "on the other ranks.")
        S.plots(coll)
        it = iterations(results).with_columns(
            pl.col("time_ps").map_elements(fmt_time, return_dtype=pl.String).alias("time"),
            (pl.col("algbw_bps") / 1e9).round(2).alias("algbw Gb/s"),
            (pl.col("busbw_bps") / 1e9).round(2).alias("busbw Gb/s"))
        shown = it.select(*cols, "collective", "op", "iteration", "ranks", "bytes", "time", "algbw Gb/s",
                          "busbw Gb/s")
        S.out.append(f"<details><summary>Iterations ({plural(it.height, 'row')})</summary>"
                     + _table(shown, left={*cols, "collective", "op"}) + "</details>")

    # ---- flow completion times
    S.h2("fct", "Flow completion times")
    flows = results.table("flows")
    window = "" if start_ps is None and end_ps is None else (
        f" that started in [{fmt_time(start_ps or 0)}, {'the end' if end_ps is None else fmt_time(end_ps)})")
    in_window = flows.filter((pl.col("start_ps") >= (start_ps or 0))
                             & (pl.col("start_ps") < (end_ps if end_ps is not None else 2**64 - 1)))
    if flows.height == 0:
        S.none("fct-none", "No flow completed in any run, so there is no FCT to show." if _total(results, "flows_total")
               else "The workload has no flows (only perftest-like applications, in the table under Rates), "
                    "so there is no FCT to show.")
    elif in_window.height == 0:
        S.none("fct-none", f"No flow started{window.removeprefix(' that started')}, the window of --start/--end: "
               f"the flows started from "
               f"{fmt_time(flows['start_ps'].min())} to {fmt_time(flows['start_ps'].max())}, so there is no FCT "
               f"to show.")
    else:
        pooled = ", seeds pooled" if "seed" in results.param_names else ""
        S.text(f"Flows{window}{pooled}. Slowdown is FCT over the flow's FCT alone on an idle network. "
               "Flows are sorted by size and cut into buckets of equal flow count; each panel's buckets hold "
               "enough flows for its percentile (p50: at least 10, p99: at least 100; fewer flows give fewer "
               "buckets" + ("" if buckets is None else f"; here --buckets {_buckets_shown(buckets)} for both") + "). Nearest-rank "
               "percentiles; hover a point for its bucket's sizes and flow count.")
        S.plots([S.figs.get("slowdown-p50"), S.figs.get("slowdown-p99"), S.figs.get("fct-cdf"),
                 next((f for f in S.section("fct") if f.key.endswith("-vs-load")), None)])
        if results.kind == "sweep" and load_axis(results) is None:
            S.none("load-none", "Load is not an axis of this sweep, so there is no p99-vs-load plot "
                   "(add e.g. <code>workload.poisson.load: [0.3, 0.5, 0.7]</code> to its grid).")
        n = buckets or A.default_buckets(flows, cols, 0.99, start_ps, end_ps)
        sd = A.slowdown_by_size(flows, by=cols, buckets=n, start_ps=start_ps, end_ps=end_ps)
        sd = in_sweep_order(sd, results, cols, ["bucket"]).with_columns(
            pl.col("size_min_bytes").map_elements(fmt_size, return_dtype=pl.String),
            pl.col("size_max_bytes").map_elements(fmt_size, return_dtype=pl.String))
        shown = (f"fixed edges {_buckets_shown(n)}" if isinstance(n, tuple)
                 else f"{plural(n, 'bucket')} per setting, sized for p99")
        S.out.append(f"<details><summary>Slowdown table ({shown})"
                     "</summary>" + _table(sd, left=set(cols), headers={"size_min_bytes": "smallest",
                                                                         "size_max_bytes": "largest"}) + "</details>")

    # ---- rates
    S.h2("rates", "Rates and throughput")
    rate_figs = S.section("rates")
    if not rate_figs:
        S.none("rates-none", f"No QP samples were recorded ({_why_no_samples(results)}), so there are no rates."
               if results.table("qp_samples").height == 0 else "No QP rates to show.")
    else:
        names, _ = named_qps(results)
        if names:
            S.text("The flows followed here are named the same in every run: the perftest-like applications by "
                   "their <code>name</code>, else the largest flows by flow id, ends and size. Each setting's "
                   "first run (first seed) is shown.")
        S.out.append("<h3>Dequeue rate each controller set</h3>")
        S.plots([f for f in rate_figs if f.key.startswith("dequeue-")])
        windows = [f for f in rate_figs if f.key.startswith("window-")]
        if windows:
            S.out.append("<h3>Window each controller set</h3>")
            S.text("The limit on bytes in flight (<code>window_bytes</code> in <code>qp_samples</code>): the "
                   "controller's window (HPCC, Swift, window DCTCP, Homa's grants) or <code>nic.window</code>. "
                   "A setting whose flows only a window holds has no dequeue-rate plot.")
            S.plots(windows)
        S.out.append("<h3>Throughput of the same flows across settings</h3>")
        S.plots([f for f in rate_figs if f.key.startswith("flow-throughput-")])
        S.out.append("<h3>Total throughput and fairness</h3>")
        S.plots([f for f in rate_figs if f.key in ("throughput", "fairness")])
    apps = results.table("apps")
    if apps.height:
        a = in_sweep_order(apps, results, cols).select(
            *cols, "name", "verb", pl.col("message_bytes").map_elements(fmt_size, return_dtype=pl.String).alias("message"),
            pl.col("queue_depth").alias("depth"), pl.col("messages_completed").alias("messages"),
            pl.col("bytes_completed").map_elements(fmt_size, return_dtype=pl.String).alias("delivered"),
            # An application that completed no message has no latency (its columns hold 0).
            *(pl.when(pl.col("messages_completed") > 0)
              .then(pl.col(f"latency_{q}_ps").map_elements(fmt_time, return_dtype=pl.String))
              .otherwise(pl.lit("—")).alias(f"latency {q}")
              for q in ("mean", "p50", "p99")))
        S.out.append(f"<details><summary>Perftest-like applications ({plural(apps.height, 'row')})</summary>"
                     + _table(a, left={*cols, "name", "verb"}) + "</details>")

    # ---- queues
    S.h2("queues", "Switch queues")
    qfigs = S.section("queues")
    if not qfigs:
        S.none("queues-none", "No switch queue ever held a byte at a sample"
               + (f" (no port samples: {_why_no_samples(results)})." if results.table("port_samples").height == 0
                  else "."))
    else:
        S.plots(qfigs)

    # ---- congestion signals
    S.h2("signals", "ECN marks, CNPs and PFC")
    counters = results.table("counter_samples")
    S.plots([S.figs.get("ecn-marks"), S.figs.get("cnps")])
    for key, label, total_key in (("ecn-marks", "ECN marks", "ecn_marked_packets"), ("cnps", "CNPs", "cnps_sent")):
        total = _total(results, total_key)
        if key in S.figs:
            pass
        elif total == 0:
            S.none(f"{key}-none", f"No {label} in any run.")
        else:
            S.none(f"{key}-none", f"{total:,} {label} in all (see the run table); not recorded over time"
                   + ("" if counters.height else ": set <code>records.counters: true</code> to record them per "
                      "sample period") + ".")
    ev = results.table("pfc_events")
    if ev.height == 0:
        S.none("pfc-none", "No PFC pauses in any run" + (
            "." if _pfc_enabled(results) else " (PFC is off: switch.pfc.enabled is false)."))
    else:
        S.plots([S.figs.get("pfc-time"), S.figs.get("pfc")])
        ends = results.summaries().select("run_id", "sim_time_ps")
        p = A.pfc_pause_time(ev.join(ends, on="run_id"), end_ps="sim_time_ps", by=["run_id", *cols])
        p = p.sort("paused_ps", descending=True).head(50).with_columns(
            pl.col("paused_ps").map_elements(fmt_time, return_dtype=pl.String).alias("paused"))
        S.out.append("<details><summary>PFC pause time per port (the 50 longest)</summary>"
                     + _table(p.drop("paused_ps"), left={"run_id", "node_name", *cols}) + "</details>")

    # ---- control loop
    S.h2("control", "Control-loop delays")
    delays = results.table("control_delays")
    if delays.height == 0:
        S.none("control-none", "No control-loop delays recorded: control runs at the <code>asic</code> placement "
               "(actions take effect at once), or control.record_delays is off.")
    else:
        S.plots(S.section("control"))
        st = in_sweep_order(A.control_delay_stats(delays, by=cols), results, cols)
        st = st.with_columns([pl.col(c).map_elements(fmt_time, return_dtype=pl.String).alias(c.removesuffix("_ps"))
                              for c in st.columns if c.endswith("_ps")]).drop([c for c in st.columns if c.endswith("_ps")])
        S.out.append(_table(st, left=set(cols)))

    S.h2("scenario", "Scenario")
    S.out.append(_scenario_text(results))

    out = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
           f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
           f"<title>rdmalab report — {html.escape(results.name)}</title><style>{_CSS}</style>"
           f"<script>{plotly_js()}</script></head><body>"]
    out.append(f"<h1>rdmalab {runs_word}: {html.escape(results.name)}</h1>")
    params = f"; parameters: {html.escape(', '.join(results.param_names))}" if results.param_names else ""
    if results.kind == "run":
        end = results.ended_early()
        status = (f"The run {end} (summary.json end: {end}); its tables hold only what it finished"
                  if end else "1 run done")
        out.append(f"<p class='muted'>{status}{params}. Report by rdmalab {__version__}.</p>")
    else:
        out.append(f"<p class='muted'>{plural(counts['done'], 'run')} done, {counts['failed']} failed, "
                   f"{counts['pending']} pending{params}. Report by rdmalab {__version__}.</p>")
    out.append("<nav>" + "".join(f"<a href='#{i}'>{html.escape(t)}</a>" for i, t in S.toc) + "</nav>")
    out.extend(S.out)
    figures = json.dumps({f.key: to_plotly(f) for f in S.drawn}, separators=(",", ":")).replace("</", "<\\/")
    out.append(
        "<script>const FIGURES=" + figures + ";\n"
        "for (const [id, f] of Object.entries(FIGURES)) {"
        " Plotly.newPlot(id, f.data, f.layout, {responsive: true, displaylogo: false}); }</script>"
    )
    out.append("</body></html>\n")
    return "".join(out)


def _why_no_samples(results: Results) -> str:
    """Why no sample was taken. Not always that sampling was off: a run may
    fail, or end, before its first sample period is over."""
    done = results.done()
    if not done:
        return "no run finished"
    off = sum(((read_json(results.run_path(r) / "scenario.json").get("records") or {})
               .get("sample_interval", "10us") in ("off", False)) for r in done)
    if off == len(done):
        return "records.sample_interval is off"
    return "the runs ended before their first sample" + (", or had records.sample_interval off" if off else "")


def _pfc_enabled(results: Results) -> bool:
    """Whether any finished run had PFC on (the scenario's switch.pfc.enabled)."""
    for r in results.done():
        sc = read_json(results.run_path(r) / "scenario.json")
        if ((sc.get("switch") or {}).get("pfc") or {}).get("enabled", True):
            return True
    return not results.done()


def write_report(path: str | Path, out: str | Path | None = None,
                 start_ps: int | None = None, end_ps: int | None = None, buckets: int | tuple | None = None) -> Path:
    """Write the report of a run or sweep directory (default: DIR/report.html)."""
    target = Path(out) if out is not None else Path(path) / "report.html"
    target.write_text(build_report(path, start_ps, end_ps, buckets), encoding="utf-8")
    return target


def _buckets_shown(buckets) -> str:
    """`--buckets` as the report names it: a count, or fixed edges as sizes."""
    return ", ".join(fmt_size(e) for e in buckets) if isinstance(buckets, tuple) else str(buckets)
