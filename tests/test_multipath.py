"""SCR Fig. 19 in kind: the shipped multipath scenarios run with one command
each and draw their figures, whose CSV numbers show what the paper shows."""

from __future__ import annotations

import polars as pl
import pytest

from conftest import ROOT, rdmalab_cli


def _run(tmp_path, name: str):
    out = tmp_path / name
    r = rdmalab_cli("run", ROOT / "examples" / "scr" / f"{name}.yaml", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def failover(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("fig19b"), "scr-multipath-failover")


@pytest.fixture(scope="module")
def congestion(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("fig19a"), "scr-multipath-congestion")


def _figure_files(out, stem: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    for part in ("rtt", "path"):
        for ext in ("png", "csv"):
            f = out / "plots" / f"{stem}-{part}.{ext}"
            assert f.exists() and f.stat().st_size > 0, f
    return pl.read_csv(out / "plots" / f"{stem}-rtt.csv"), pl.read_csv(out / "plots" / f"{stem}-path.csv")


def test_fig19b_tells_the_paths_apart_fails_over_and_back(failover):
    rtt, path = _figure_files(failover, "scr-fig19b")
    assert set(rtt.columns) == {"time_us", "udp_sport", "rtt_us", "lost"}
    before = rtt.filter((pl.col("time_us") < 1000) & ~pl.col("lost"))
    med = dict(before.group_by("udp_sport").agg(pl.col("rtt_us").median()).iter_rows())
    assert abs(med[5102] - med[5101] - 10.0) < 0.5, med
    lost = rtt.filter(pl.col("lost"))
    assert lost["udp_sport"].unique().to_list() == [5101]
    assert lost["rtt_us"].unique().to_list() == [100.0], "lost probes are drawn at the probe timeout"
    assert 1100 <= lost["time_us"].min() and lost["time_us"].max() < 1600 + 1
    # The data's path over time: 5101, then 5102 during the outage, then 5101 again.
    runs = path["udp_sport"].to_list()
    changes = [p for i, p in enumerate(runs) if i == 0 or p != runs[i - 1]]
    assert changes == [5101, 5102, 5101], changes
    on_backup = path.filter(pl.col("udp_sport") == 5102)
    assert on_backup["window_end_us"].min() > 1000 and on_backup["window_end_us"].max() <= 1600
    assert on_backup["throughput_gbps"].max() > 85, "near line rate on the slower path"


def test_fig19a_probed_rtt_rises_with_cross_traffic_and_falls_after(congestion):
    rtt, path = _figure_files(congestion, "scr-fig19a")
    assert not rtt["lost"].any()
    for port in (5101, 5102):
        r = rtt.filter(pl.col("udp_sport") == port)
        idle = r.filter(pl.col("time_us") < 500)["rtt_us"].mean()
        loaded = r.filter((pl.col("time_us") > 800) & (pl.col("time_us") < 1450))["rtt_us"].mean()
        after = r.filter(pl.col("time_us") > 1650)["rtt_us"].mean()
        assert loaded > 4 * idle and after < 1.1 * idle, (port, idle, loaded, after)
    cross = path.filter((pl.col("window_end_us") > 700) & (pl.col("window_end_us") < 1400))["other_qps_gbps"].mean()
    assert cross > 60, f"the cross traffic runs: {cross} Gb/s"
    assert path.filter(pl.col("window_end_us") > 1650)["other_qps_gbps"].max() == 0
