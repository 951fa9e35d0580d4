"""SCR Fig. 20 case study: the shipped receiver-driven scenarios run with one
command each and draw their figures with the numbers behind them."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest
import yaml

SCENARIOS = ["scr-receiver-grants", "scr-receiver-grants-incast", "scr-receiver-backpressure"]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rdmalab", *map(str, args)], capture_output=True, text=True)


def run_short(examples, tmp_path, name: str, duration: str | None = None):
    """Run examples/scr/NAME.yaml (cut to `duration`) into tmp_path/NAME; the plots directory."""
    src = examples / "scr" / f"{name}.yaml"
    data = yaml.safe_load(src.read_text())
    if duration:
        data["duration"] = duration
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / name
    r = cli("run", path, "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "drops         0 frames" in r.stdout
    return out / "plots"


def test_the_scenarios_validate_and_name_their_figures(examples):
    files = [examples / "scr" / f"{n}.yaml" for n in SCENARIOS]
    r = cli("validate", *files)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": ok") == 3
    figs = [yaml.safe_load(f.read_text())["figures"] for f in files]
    assert figs == [["scr-fig20a"], ["scr-fig20b"], ["scr-fig20c"]]
    r = cli("figures")
    for n in ("scr-fig20a", "scr-fig20b", "scr-fig20c"):
        assert n in r.stdout


def test_fig20a_the_granted_sender_takes_what_the_background_leaves(examples, tmp_path):
    plots = run_short(examples, tmp_path, "scr-receiver-grants")
    for stem in ("scr-fig20a", "scr-fig20a-queue"):
        assert (plots / f"{stem}.png").stat().st_size > 10_000
        assert (plots / f"{stem}.csv").exists()
    df = pl.read_csv(plots / "scr-fig20a.csv")
    phase = lambda a, b: df.filter((pl.col("time_us") > a) & (pl.col("time_us") <= b))  # noqa: E731
    for (a, b), bg, grant in [((200, 490), 0, 98), ((1200, 1900), 40, 58), ((2600, 3000), 70, 28), ((3200, 3500), 0, 98)]:
        p = phase(a, b)
        assert p["background_dequeue_gbps"].mean() == pytest.approx(bg)
        assert p["controlled_dequeue_gbps"].mean() == pytest.approx(grant, abs=0.7), (a, b)
        # Grant + background stay under the line rate.
        assert (p["controlled_dequeue_gbps"] + p["background_dequeue_gbps"]).max() <= 100.0
    assert df["max_switch_queue_bytes"].max() < 600_000, "70 Gb/s arrives unannounced for one control loop"
    assert phase(1200, 1900)["max_switch_queue_bytes"].max() < 5_000, "no standing queue once granted"


def test_fig20b_the_grant_follows_each_incast_step(examples, tmp_path):
    plots = run_short(examples, tmp_path, "scr-receiver-grants-incast", "1490us")
    for stem in ("scr-fig20b", "scr-fig20b-queue", "scr-fig20b-steps"):
        assert (plots / f"{stem}.png").stat().st_size > 10_000
    steps = pl.read_csv(plots / "scr-fig20b-steps.csv")
    assert steps["background_qps"].to_list() == [0, 1, 2, 3, 4, 5]
    assert steps["headroom_gbps"].to_list() == pytest.approx([100, 95, 90, 85, 80, 75])
    for row in steps.iter_rows(named=True):
        # The grant fills 98 % of the line: 2 Gb/s under the headroom (a window that
        # still sees a queue grants up to 90 % and pulls a step's mean down a little).
        assert row["granted_dequeue_gbps"] == pytest.approx(row["headroom_gbps"] - 2, abs=1.5), row
        assert row["max_switch_queue_bytes"] < 30_000, row


def test_fig20c_backpressure_draws_a_sawtooth(examples, tmp_path):
    plots = run_short(examples, tmp_path, "scr-receiver-backpressure", "2ms")
    assert (plots / "scr-fig20c.png").stat().st_size > 10_000
    df = pl.read_csv(plots / "scr-fig20c.csv")
    r = df["controlled_dequeue_gbps"].to_list()
    drops = [(a, b) for a, b in zip(r, r[1:]) if b < a]
    rises = [b - a for a, b in zip(r, r[1:]) if b > a]
    assert len(drops) >= 2
    for a, b in drops:
        assert a >= 90 and a / 2 <= b <= (a + 2) / 2, (a, b)
    assert all(x == pytest.approx(1.0) for x in rises), "AI of 1 Gb/s per step"
    assert df["threshold"][0] == 0.9
