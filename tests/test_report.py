"""Reports open offline in headless Chromium without errors and draw every plot;
PNG/SVG plots and the analyze command work on runs and sweeps."""

import csv
import io
import math
import shutil
import struct
import time
import xml.etree.ElementTree as ET

import pytest
from browser import Page
from conftest import rdmalab_cli

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
    assert {"slowdown", "rates-0", "throughput", "queue-cdf", "fairness"} <= set(keys)
    open_report(report, len(figs), page)
    assert page.errors() == []
    assert all(u.startswith(("file:", "data:")) for u in page.requested_urls()), page.requested_urls()
    assert page.evaluate(PLOTS_DRAWN) == len(figs)
    # each plot carries its data: 6 settings × (p50, p99) slowdown lines, one heat map row per setting
    assert page.evaluate("document.getElementById('slowdown').data.length") == 12
    assert page.evaluate("document.getElementById('fairness').data[0].z.length") == 6
    assert page.evaluate("document.querySelectorAll('#slowdown .scatterlayer .trace').length") == 12
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


def test_plot_command_writes_png_and_svg(local_sweep, tmp_path):
    n = len(standard_figures(Results(local_sweep)))
    for fmt in ("png", "svg"):
        r = rdmalab_cli("plot", local_sweep, "--out", tmp_path / fmt, "--format", fmt)
        assert r.returncode == 0, r.stderr
        files = sorted((tmp_path / fmt).iterdir())
        assert len(files) == n and all(f.suffix == f".{fmt}" for f in files)
    png = (tmp_path / "png" / "slowdown.png").read_bytes()
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
    assert "cc=none, workload.poisson.load=0.3" in r.stdout
    bad = rdmalab_cli("analyze", local_sweep, "--by", "colour")
    assert bad.returncode != 0 and "allowed: run_id, cc, workload.poisson.load, seed" in bad.stderr
