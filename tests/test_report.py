"""Reports open offline in headless Chromium without errors and draw every plot;
PNG/SVG plots and the analyze command work on runs and sweeps."""

import csv
import io
import json
import math
import shutil
import struct
import time
import xml.etree.ElementTree as ET

import pytest
from browser import Page
from conftest import ROOT, capped_and_finished, rdmalab_cli

from rdmalab.plots import standard_figures
from rdmalab.sweep import Results

PLOTS_DRAWN = "Array.from(document.querySelectorAll('div.plot')).filter(d => d.querySelector('svg.main-svg')).length"


def open_report(path, expected_plots: int, page: Page, wait_s: float = 30):
    """Open `path` and wait until `expected_plots` plots are drawn (or `wait_s` passed)."""
    page.open(path.resolve().as_uri())
    deadline = time.monotonic() + wait_s
    while page.evaluate(PLOTS_DRAWN) < expected_plots and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture(scope="module")
def page():
    with Page() as p:
        yield p


def test_the_checker_sees_errors_and_missing_plots(tmp_path, page):
    # Guards the tests below: a broken page must not look clean.
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><div class='plot' id='x'></div>"
                   "<script>console.error('boom'); Plotly.newPlot('x', [], {});</script></body></html>")
    open_report(bad, 1, page, wait_s=2)
    errors = page.errors()
    assert any("boom" in e for e in errors) and any("Plotly is not defined" in e for e in errors), errors
    assert page.evaluate(PLOTS_DRAWN) == 0


def test_sweep_report_loads_offline_without_errors_and_draws_every_plot(local_sweep, tmp_path, page):
    report = tmp_path / "report.html"
    r = rdmalab_cli("report", local_sweep, "--out", report)
    assert r.returncode == 0, r.stderr
    figs = standard_figures(Results(local_sweep))
    keys = [f.key for f in figs]
    assert {"slowdown-p50", "slowdown-p99", "p99-vs-load", "dequeue-0", "flow-throughput-0", "throughput",
            "queue-0", "queue-cdf", "fairness"} <= set(keys)
    open_report(report, len(figs), page)
    assert page.errors() == []
    assert all(u.startswith(("file:", "data:")) for u in page.requested_urls()), page.requested_urls()
    assert page.evaluate(PLOTS_DRAWN) == len(figs)
    # each plot carries its data: one slowdown line per setting (6), one heat map row per setting
    assert page.evaluate("document.getElementById('slowdown-p99').data.length") == 6
    assert page.evaluate("document.getElementById('fairness').data[0].z.length") == 6
    assert page.evaluate("document.querySelectorAll('#slowdown-p99 .scatterlayer .trace').length") == 6
    # under 100 flows per setting: a single p99 bucket, while p50 gets one bucket per 10 flows
    assert page.evaluate("document.getElementById('slowdown-p99').data.map(t => t.x.length)") == [1] * 6
    assert max(page.evaluate("document.getElementById('slowdown-p50').data.map(t => t.x.length)")) > 1
    # p99 against load: one line per controller setting, in sweep order, over the two loads
    load = page.evaluate("document.getElementById('p99-vs-load').data.map(t => [t.name, t.x])")
    assert load == [["cc=dcqcn", [0.1, 0.3]], ["cc=none", [0.1, 0.3]], ["cc=dcqcn-ai20", [0.1, 0.3]]]
    text = page.evaluate("document.body.innerText")
    assert "rdmalab sweep: test-12" in text and "12 runs done, 0 failed, 0 pending" in text
    assert "FCT slowdown by flow size" in text and "dcqcn-ai20" in text
    assert "rate_ai: 20Gbps" in text  # the sweep file is in the report, in its own order
    assert text.index("name: test-12") < text.index("base:") < text.index("set:") < text.index("grid:")
    page.screenshot(str(tmp_path / "report.png"))


def test_run_report_works_for_a_single_run(local_sweep, tmp_path, page):
    run = tmp_path / "one-run"
    shutil.copytree(local_sweep / "runs" / sorted(p.name for p in (local_sweep / "runs").iterdir()
                                                 if not p.name.startswith("."))[0], run)
    r = rdmalab_cli("report", run)
    assert r.returncode == 0, r.stderr
    n = len(standard_figures(Results(run)))
    open_report(run / "report.html", n, page)
    assert page.errors() == []
    assert page.evaluate(PLOTS_DRAWN) == n >= 4
    assert "rdmalab run: dumbbell-dcqcn" in page.evaluate("document.body.innerText")


THREE_CC = """\
name: three-cc
base: {base}
set:
  duration: 1ms
  switch.int: true
  records.counters: true
  workload.poisson.cdf: googlerpc2008
  workload.poisson.load: 0.1
grid:
  cc:
    dcqcn: {{algorithm: dcqcn}}
    timely: {{algorithm: timely}}
    hpcc: {{algorithm: hpcc}}
"""


@pytest.fixture(scope="module")
def three_cc(tmp_path_factory):
    """Three algorithms on the dumbbell for 1 ms (about 3,400 short flows and two named long ones each)."""
    d = tmp_path_factory.mktemp("three-cc")
    (d / "sweep.yaml").write_text(THREE_CC.format(base=ROOT / "examples" / "dumbbell-dcqcn.yaml"))
    r = rdmalab_cli("sweep", d / "sweep.yaml", "--out", d / "out", "--quiet", "--workers", 1)
    assert r.returncode == 0, r.stderr
    return d / "out"


def _ids(page) -> set:
    return set(page.evaluate("Array.from(document.querySelectorAll('[id]')).map(e => e.id)"))


def test_three_algorithm_report_answers_the_usual_questions(three_cc, tmp_path, page):
    report = tmp_path / "report.html"
    r = rdmalab_cli("report", three_cc, "--out", report)
    assert r.returncode == 0, r.stderr
    page.call("Emulation.setDeviceMetricsOverride",
              {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=True)
    n = len(standard_figures(Results(three_cc)))
    open_report(report, n, page)
    assert page.errors() == []
    assert page.evaluate(PLOTS_DRAWN) == n
    ids = _ids(page)
    want = {"runs", "fct", "rates", "queues", "signals", "control",  # sections
            "slowdown-p50", "slowdown-p99", "fct-cdf",  # slowdown vs size per percentile, FCT CDF
            "dequeue-0", "dequeue-1", "dequeue-2",  # each controller's dequeue rates
            "window-2",  # HPCC's window (DCQCN and TIMELY have none)
            "flow-throughput-0", "flow-throughput-1",  # the named apps long0 and long1 across algorithms
            "queue-0", "queue-1", "queue-2",  # the busiest ports over time
            "ecn-marks", "cnps",  # congestion signals over time
            "pfc-none", "load-none", "control-none"}  # sections that say why they have no plot
    assert want <= ids, sorted(want - ids)
    assert not {"window-0", "window-1"} & ids, "rate-only DCQCN and TIMELY draw no window"
    fig = "document.getElementById('{}')"
    settings = ["cc=dcqcn", "cc=timely", "cc=hpcc"]  # sweep order, not the alphabet
    for q in ("p50", "p99"):
        f = fig.format(f"slowdown-{q}")
        assert page.evaluate(f"{f}.data.map(t => t.name)") == settings
        assert page.evaluate(f"{f}.layout.yaxis.type") == "log" and page.evaluate(f"{f}.layout.xaxis.type") == "log"
        assert page.evaluate(f"{f}.querySelectorAll('.scatterlayer .trace').length") == 3
        # 1,000+ flows per algorithm: 20 buckets for each percentile
        assert page.evaluate(f"{f}.data[0].x.length") == 20
    # p50 and p99 side by side: one row, two columns
    p50, p99 = (page.evaluate(f"{fig.format(k)}.getBoundingClientRect().{a}") for k in ("slowdown-p50", "slowdown-p99")
                for a in ("top",))
    assert p50 == p99
    assert page.evaluate(f"{fig.format('fct-cdf')}.data.length") == 3
    assert page.evaluate(f"{fig.format('dequeue-0')}.data.map(t => t.name)") == ["long0", "long1"]
    assert "Dequeue rate set by the controller — cc=dcqcn" in page.evaluate(f"{fig.format('dequeue-0')}.layout.title.text")
    assert page.evaluate(f"{fig.format('flow-throughput-0')}.layout.title.text") == "Throughput of long0"
    assert page.evaluate(f"{fig.format('flow-throughput-0')}.data.map(t => t.name)") == settings
    for key in ("ecn-marks", "cnps"):
        assert page.evaluate(f"{fig.format(key)}.data.length") == 3
    # times people read: axes in ms, the run table in ms and seconds
    assert page.evaluate(f"{fig.format('queue-0')}.layout.xaxis.title.text") == "time (ms)"
    assert page.evaluate(f"{fig.format('fct-cdf')}.layout.xaxis.title.text") == "flow completion time (µs)"
    text = page.evaluate("document.body.innerText")
    assert "No PFC pauses in any run." in text
    assert "Load is not an axis of this sweep" in text
    assert "3 runs done, 0 failed, 0 pending" in text
    headings = page.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
    assert headings == ["Runs", "Flow completion times", "Rates and throughput", "Switch queues",
                        "ECN marks, CNPs and PFC", "Control-loop delays", "Scenario"]
    runs = page.evaluate("Array.from(document.querySelectorAll('#runs + .tw tr')).map(r => r.innerText)")
    assert "1 ms" in runs[1] and " s" in runs[1]
    # every table fits the page at 1280 px (details opened)
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    widths = page.evaluate("Array.from(document.querySelectorAll('table')).map("
                           "t => [t.getBoundingClientRect().right, document.documentElement.clientWidth])")
    assert widths and all(r <= w for r, w in widths), widths
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    page.screenshot(str(tmp_path / "three-cc.png"))


def test_counter_samples_add_up_to_the_run_totals(three_cc, local_sweep):
    import polars as pl

    res = Results(three_cc)
    sums = res.table("counter_samples").group_by("run_id").agg(
        pl.col("ecn_marked_packets", "cnps_sent", "pfc_pauses", "dropped_frames", "timeouts").sum())
    tot = res.summaries().select("run_id", "ecn_marked_packets", "cnps_sent", "pfc_pauses", "dropped_frames", "timeouts")
    joined = tot.join(sums, on="run_id", suffix="_samples")
    assert joined.height == 3 and joined["ecn_marked_packets"].sum() > 0
    for c in ("ecn_marked_packets", "cnps_sent", "pfc_pauses", "dropped_frames", "timeouts"):
        assert (joined[c] == joined[f"{c}_samples"]).all(), c
    run = next(p for p in (three_cc / "runs").iterdir() if not p.name.startswith("."))
    for f in ("counter_samples.csv", "counter_samples.parquet"):
        assert (run / f).exists(), f
    # without records.counters no file is written, and the table reads as empty
    run = next(p for p in (local_sweep / "runs").iterdir() if not p.name.startswith("."))
    assert not (run / "counter_samples.csv").exists()
    assert Results(local_sweep).table("counter_samples").height == 0


def test_plot_command_writes_png_and_svg(local_sweep, tmp_path):
    n = len(standard_figures(Results(local_sweep)))
    for fmt in ("png", "svg"):
        r = rdmalab_cli("plot", local_sweep, "--out", tmp_path / fmt, "--format", fmt)
        assert r.returncode == 0, r.stderr
        files = sorted((tmp_path / fmt).iterdir())
        assert len(files) == n and all(f.suffix == f".{fmt}" for f in files)
    # Drawn again in another process, every file has the same bytes: SVG ids
    # were salted at random per process.
    for fmt in ("png", "svg"):
        r = rdmalab_cli("plot", local_sweep, "--out", tmp_path / f"{fmt}-again", "--format", fmt)
        assert r.returncode == 0, r.stderr
        for f in sorted((tmp_path / fmt).iterdir()):
            assert (tmp_path / f"{fmt}-again" / f.name).read_bytes() == f.read_bytes(), f.name
    png = (tmp_path / "png" / "slowdown-p99.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 600 and height >= 300
    svg = ET.parse(tmp_path / "svg" / "fairness.svg").getroot()
    assert svg.tag.endswith("svg") and len(list(svg.iter())) > 50


def test_analyze_prints_the_slowdown_table(local_sweep):
    run_dir = local_sweep / "runs" / sorted(p.name for p in (local_sweep / "runs").iterdir()
                                            if not p.name.startswith("."))[0]
    slowdowns = sorted(float(row["slowdown"]) for row in csv.DictReader(open(run_dir / "flows.csv")))
    n = len(slowdowns)
    r = rdmalab_cli("analyze", run_dir, "--buckets", 1, "--csv")
    assert r.returncode == 0, r.stderr
    (row,) = list(csv.DictReader(io.StringIO(r.stdout)))
    assert int(row["flows"]) == n
    assert float(row["p50"]) == slowdowns[-(-n // 2) - 1]  # nearest rank: the ⌈n/2⌉-th smallest
    assert float(row["p99"]) == slowdowns[math.ceil(0.99 * n) - 1]

    r = rdmalab_cli("analyze", local_sweep, "--start", "0.5ms")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("bucket    size min") == 6  # one block per setting, seeds pooled
    # by default the buckets are sized for p99: under 100 flows per setting, one bucket each
    assert "1 bucket of equal flow count" in r.stdout and "\n       1  " not in r.stdout
    # settings in sweep order: dcqcn, none, dcqcn-ai20 (not alphabetical)
    blocks = [line.split("  (")[0] for line in r.stdout.splitlines() if line.startswith("cc=")]
    assert [b.split(",")[0] for b in blocks[::2]] == ["cc=dcqcn", "cc=none", "cc=dcqcn-ai20"]
    assert "cc=none, workload.poisson.load=0.3" in r.stdout
    r = rdmalab_cli("analyze", local_sweep, "--buckets", 3, "--csv")
    assert r.returncode == 0 and sorted(set(row["bucket"] for row in csv.DictReader(io.StringIO(r.stdout)))) == ["0", "1", "2"]
    bad = rdmalab_cli("analyze", local_sweep, "--by", "colour")
    assert bad.returncode != 0 and "allowed: run_id, cc, workload.poisson.load, seed" in bad.stderr


def test_a_parameter_named_like_a_column_changes_no_plot_and_breaks_no_report(tmp_path):
    """A sweep whose axis is `name` (a column of `apps`) and the same sweep
    with the axis on `description` (a column of no table) give the same
    plots, with the same traces: the parameter lives in `param:name` in
    every table, so no plot takes it for the applications' own names, and
    the report builds."""
    base = ROOT / "examples" / "python-controller.yaml"
    figs = {}
    for key in ("name", "description"):
        sweep = tmp_path / f"by-{key}.yaml"
        sweep.write_text(f"base: {base}\nset: {{duration: 300us}}\n"
                         f"grid:\n  {key}: [first, second]\n  cc.params.step_gbps: [1.0, 2.0]\n")
        out = tmp_path / key
        r = rdmalab_cli("sweep", sweep, "--out", out, "--quiet")
        assert r.returncode == 0, r.stderr
        results = Results(out)
        assert results.column(key) == ("param:name" if key == "name" else "description")
        apps = results.table("apps")
        assert apps["name"].n_unique() == 3  # the applications' own names
        assert set(apps[results.column(key)]) == {"first", "second"}
        figs[key] = {f.key: [(t.name.replace(key, "K"), t.x, t.y) for t in f.traces]
                     for f in standard_figures(results)}
        r = rdmalab_cli("report", out)
        assert r.returncode == 0, r.stderr
        assert (out / "report.html").exists()
    assert any(k.startswith("flow-throughput-") for k in figs["name"])
    assert figs["name"] == figs["description"]


def test_the_report_of_a_failed_run_says_it_failed(tmp_path):
    """A single run's header counted it done whatever its summary said."""
    for name, (out, end) in capped_and_finished(tmp_path, "{src: h0, dst: h1, size: 1MB}").items():
        r = rdmalab_cli("report", out)
        assert r.returncode == 0, r.stderr
        head = (out / "report.html").read_text().split("<nav>")[0]
        if name == "failed":
            assert end == "failed"
            assert ("The run failed (summary.json end: failed); its tables hold only what it finished" in head
                    and "1 run done" not in head), head[-400:]
        else:
            assert end != "failed" and "1 run done" in head, head[-400:]


def test_an_application_that_completed_nothing_shows_no_latency(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("name: late\nduration: 100us\n"
                 "topology: {kind: single_switch, hosts: 4, host_link: {rate: 100Gbps, delay: 1us}}\n"
                 "workload:\n  perftest:\n"
                 "    - {name: early, src: h0, dst: h1, message_size: 4KB, queue_depth: 1}\n"
                 "    - {name: late, src: h2, dst: h3, message_size: 4KB, queue_depth: 1, start: 100us}\n")
    out = tmp_path / "o"
    assert rdmalab_cli("run", f, "--out", out, "--quiet").returncode == 0
    r = rdmalab_cli("report", out)
    assert r.returncode == 0, r.stderr
    html = (out / "report.html").read_text()
    rows = {name: html[html.index(f">{name}<"):].split("</tr>")[0] for name in ("early", "late")}
    assert "—" not in rows["early"] and " 0 ps" not in rows["early"]
    assert rows["late"].count(">—<") == 3 and "0 ps" not in rows["late"], rows["late"]


def test_no_samples_are_explained_by_why_there_are_none(tmp_path):
    """A run that ended before its first sample has no samples, though
    sampling was on; the report says so rather than that it was off."""
    f = tmp_path / "s.yaml"
    f.write_text("name: short\nduration: 300us\nmax_events: 300\nrecords: {sample_interval: 10us}\n"
                 "topology: {kind: single_switch, hosts: 3, host_link: {rate: 100Gbps, delay: 1us}}\n"
                 "workload: {flows: [{src: h0, dst: h2, size: 200KB}]}\n")
    out = tmp_path / "o"
    assert rdmalab_cli("run", f, "--out", out, "--quiet").returncode == 3, "the run fails at max_events"
    r = rdmalab_cli("report", out)
    assert r.returncode == 0 and "warning: the run failed (summary.json end: failed)" in r.stderr, r.stderr
    html = (out / "report.html").read_text()
    assert "records.sample_interval is off" not in html
    assert "No QP samples were recorded (the runs ended before their first sample)" in html
    assert "(no port samples: the runs ended before their first sample)" in html
    f.write_text(f.read_text().replace("sample_interval: 10us", "sample_interval: off"))
    assert rdmalab_cli("run", f, "--out", out, "--quiet").returncode == 3
    assert rdmalab_cli("report", out).returncode == 0
    assert "No QP samples were recorded (records.sample_interval is off)" in (out / "report.html").read_text()


def test_a_window_without_flows_is_said_and_a_backward_one_refused(local_sweep, tmp_path):
    for cmd in (["analyze", local_sweep], ["plot", local_sweep, "--out", tmp_path / "p"],
                ["report", local_sweep, "--out", tmp_path / "r.html"]):
        r = rdmalab_cli(*cmd, "--start", "1s")
        assert r.returncode == 0, r.stderr
        assert "warning: no flow started in [1 s, the end), the window of --start/--end; the flows started " \
               "from " in r.stderr, (cmd, r.stderr)
        r = rdmalab_cli(*cmd, "--start", "1ms", "--end", "1ms")
        assert r.returncode == 1 and "--end `1ms` — allowed: a time after --start `1ms`" in r.stderr, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert "No flow started in [1 s, the end), the window of --start/--end: the flows started from " in html


def test_a_collective_run_has_a_collectives_section_that_draws(tmp_path, page):
    """The shipped all-reduce example: its report opens with iteration times,
    bus bandwidth and the ranks' timeline, all drawn, and a table of its
    iterations that agrees with collectives.csv."""
    out = tmp_path / "allreduce"
    r = rdmalab_cli("run", ROOT / "examples" / "collectives" / "allreduce-ring-8.yaml", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    assert rdmalab_cli("report", out).returncode == 0
    figs = standard_figures(Results(out))
    coll = [f.key for f in figs if f.section == "collectives"]
    assert coll == ["collective-time-grads", "collective-busbw-grads", "collective-ranks-0"]
    open_report(out / "report.html", len(figs), page)
    assert page.errors() == []
    assert page.evaluate(PLOTS_DRAWN) == len(figs)
    ids = _ids(page)
    assert {"collectives", *coll} <= ids
    text = page.evaluate("document.body.textContent")
    rows = list(csv.DictReader(io.StringIO((out / "collectives.csv").read_text())))
    assert len(rows) == 3
    # The busbw each iteration reports, as the table shows it (Gb/s, 2 decimals).
    for row in rows:
        assert f"{float(row['busbw_bps']) / 1e9:.2f}" in text
    # The timeline has each rank's compute phase and its time in the collective.
    ranks = next(f for f in figs if f.key == "collective-ranks-0")
    assert [t.name for t in ranks.traces] == ["compute", "in the collective"]
    assert sorted({y for y in ranks.traces[1].y if y is not None}) == list(range(8))


def test_a_pipeline_report_draws_its_iteration_times_and_no_bus_bandwidth(tmp_path):
    out = tmp_path / "pipeline"
    r = rdmalab_cli("run", ROOT / "examples" / "collectives" / "pipeline-1f1b-4.yaml", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    keys = [f.key for f in standard_figures(Results(out)) if f.section == "collectives"]
    assert keys == ["collective-time-stages", "collective-ranks-0"]
    ranks = next(f for f in standard_figures(Results(out)) if f.key == "collective-ranks-0")
    # A stage's passes are inside its span: no separate compute bars.
    assert [t.name for t in ranks.traces] == ["in the collective"]


def test_plot_writes_a_file_per_collective_group(tmp_path):
    """Groups are named `dp/0`, `dp/1`, ...: their plots are files named
    `dp-0`, not a directory `collective-time-dp`."""
    out = tmp_path / "rail"
    r = rdmalab_cli("run", ROOT / "examples" / "collectives" / "rail-optimized-dp.yaml", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    r = rdmalab_cli("plot", out, "--out", tmp_path / "plots")
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "plots").iterdir() if p.name.startswith("collective-"))
    want = [f"collective-{kind}-dp-{g}.png" for kind in ("busbw", "time") for g in range(4)]
    assert names == sorted(want + ["collective-ranks-0.png"])
