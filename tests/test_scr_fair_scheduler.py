"""SCR's fair QP scheduler case study (§5.1, §6.2, A.4): the shipped sweeps run
with one command each, draw their figures, and the numbers behind the
figures show what the paper shows."""

from pathlib import Path

import polars as pl
import pytest
from conftest import rdmalab_cli, run_sweep

from rdmalab.casestudies import known


def sweep(examples: Path, name: str, out: Path) -> Path:
    return run_sweep(examples / "scr" / name, out)


def test_fig11_grid_water_filling_fair_where_demand_allows(examples, tmp_path):
    plots = sweep(examples, "scr-water-filling-grid.yaml", tmp_path / "fig11")
    for policy in ("default", "static", "water-filling"):
        assert (plots / f"scr-fig11-jain-{policy}.png").stat().st_size > 0
        assert (plots / f"scr-fig11-bandwidth-{policy}.png").stat().st_size > 0
    wf = pl.read_csv(plots / "scr-fig11-jain-water-filling.csv")
    default = pl.read_csv(plots / "scr-fig11-jain-default.csv")
    assert wf.height == default.height == 16
    # Tenants that can fill the link on their own (256 B messages cannot: message-rate bound).
    hungry = wf.filter((pl.col("size_a") != "256B") & (pl.col("size_b") != "256B"))
    assert hungry["jain"].min() >= 0.95
    assert hungry["total_gbps"].min() >= 0.95 * 88.0  # a 4 KiB tenant alone reaches 88 Gb/s
    gain = wf.join(default, on=["size_a", "size_b"], suffix="_default")
    best = (gain["jain"] / gain["jain_default"]).max()
    assert 1.6 < best < 2.0, best  # SCR: up to 1.78x (4 KB vs 1 MB)
    # Every cell, 256 B included: water filling is as fair as static and uses as
    # much of the link (0.1 % slack for the sampling of the rates).
    static = pl.read_csv(plots / "scr-fig11-jain-static.csv")
    cells = wf.join(static, on=["size_a", "size_b"], suffix="_static")
    assert cells.height == 16
    for c in cells.iter_rows(named=True):
        assert c["jain"] >= c["jain_static"] - 0.02, c
        assert c["total_gbps"] >= 0.999 * c["total_gbps_static"], c


def test_a_limit_that_does_not_bind_leaves_the_default_scheduler_alone(examples, tmp_path):
    """4 KiB beside 1 MiB: the default scheduler gives the 1 MiB tenant ~97 % of the
    wire. Limits of 98 Gb/s each never bind, so they must leave that unfairness in
    place: a QP its limiter holds mid-turn keeps its turn (`nic.paced_turn: keep`).
    Were it to lose the turn, the limit alone would interleave the tenants."""
    spec = tmp_path / "nonbinding.yaml"
    spec.write_text(
        f"name: nonbinding\nbase: {examples / 'scr' / 'scr-two-tenants.yaml'}\n"
        "grid:\n"
        "  cc:\n"
        "    default: {algorithm: none}\n"
        "    limit-98g: {algorithm: fair-static, params: {min_rate: 98Gbps}}\n"
        "  nic.paced_turn: [keep, forfeit]\n"
    )
    run_sweep(spec, tmp_path / "o")
    from rdmalab.casestudies.fair_scheduler import _jain, tenant_rates
    from rdmalab.sweep import Results

    t = tenant_rates(Results(tmp_path / "o"))
    jain = {(g["cc"][0], g["nic.paced_turn"][0]): _jain(g["gbps"].to_list())
            for _, g in t.group_by(["run_id"], maintain_order=True)}
    assert jain[("default", "keep")] < 0.6, jain  # SCR Fig. 11: ~0.5 for 4 KB vs 1 MB
    assert abs(jain[("limit-98g", "keep")] - jain[("default", "keep")]) <= 0.02, jain
    assert jain[("limit-98g", "forfeit")] > 0.9, jain  # the old model's accidental fairness


def test_fig13_latency_isolation(examples, tmp_path):
    plots = sweep(examples, "scr-latency-isolation.yaml", tmp_path / "fig13")
    t = {r["cc"]: r for r in pl.read_csv(plots / "scr-fig13a-latency.csv").iter_rows(named=True)}
    assert set(t) == {"default", "static", "water-filling"}
    assert t["water-filling"]["latency_tenant_us"] < 0.6 * t["default"]["latency_tenant_us"]
    assert t["water-filling"]["bandwidth_tenant_gbps"] > 0.95 * t["default"]["bandwidth_tenant_gbps"]
    assert t["static"]["bandwidth_tenant_gbps"] < 0.55 * t["default"]["bandwidth_tenant_gbps"]


def test_fig9_traces_and_table5_convergence(examples, tmp_path):
    plots = sweep(examples, "scr-water-filling-trace.yaml", tmp_path / "fig9")
    for strategy in ("scale", "reset", "scale-start-low"):
        d = pl.read_csv(plots / f"scr-fig9-{strategy}.csv")
        end = d.filter(pl.col("time_us") > 1900).group_by("name").agg(pl.col("throughput_gbps").mean())
        assert end.height == 8, "all eight QPs are sending at the end"
        x = end["throughput_gbps"].to_list()
        assert sum(x) ** 2 / (len(x) * sum(v * v for v in x)) > 0.95, (strategy, x)
    plots = sweep(examples, "scr-water-filling-steps.yaml", tmp_path / "table5")
    t = pl.read_csv(plots / "scr-table5-convergence.csv")
    conv = dict(zip(t["step"], t["convergence_us"]))
    assert all(v is not None for v in conv.values()), conv
    # Smaller steps take longer to settle, step by step (SCR Table 5: 294, 122, 49 us).
    assert conv["step-0.02"] > conv["step-0.05"] > conv["step-0.1"], conv


@pytest.mark.parametrize("name,scenario", [("gpudirect-fairness", "scr-gpudirect-fairness.yaml"),
                                           ("nvmeof-fairness", "scr-nvmeof-fairness.yaml")])
def test_fig21_device_and_storage_tenants_share_evenly_under_water_filling(examples, tmp_path, name, scenario):
    plots = sweep(examples, scenario, tmp_path / name)
    j = {r["policy"]: r for r in pl.read_csv(plots / f"scr-fig21-{name}-jain.csv").iter_rows(named=True)}
    assert j["default"]["jain"] < 0.91, j  # the default favours large messages / deep queues
    assert j["water-filling"]["jain"] > 0.99, j
    assert j["water-filling"]["total_gbps"] > 0.97 * j["default"]["total_gbps"], "without losing utilisation"


def test_unknown_figure_is_refused_with_the_allowed_names(tmp_path, examples):
    bad = tmp_path / "bad.yaml"
    bad.write_text((examples / "scr" / "scr-two-tenants.yaml").read_text() + "figures: [scr-fig99]\n")
    r = rdmalab_cli("validate", str(bad))
    assert r.returncode == 1
    assert "figures: `scr-fig99` is not a known figure; allowed:" in r.stderr
    assert "scr-fig11" in r.stderr and set(known()) >= {"scr-fig11", "scr-fig13", "scr-fig9", "scr-table5"}


def test_table2_the_default_scheduler_favours_large_messages(examples, tmp_path):
    plots = sweep(examples, "scr-table2.yaml", tmp_path / "t2")
    t = pl.read_csv(plots / "scr-table2.csv")
    row = {(c, n): (g, lat) for c, n, g, lat in t.iter_rows()}
    assert row[("4KiB-alone", "throughput")][0] > 85, row  # SCR: 88.3 Gb/s
    a, b = row[("4KiB-beside-64KiB", "throughput")][0], row[("4KiB-beside-64KiB", "bandwidth")][0]
    assert 0.28 < a / (a + b) < 0.38 and a + b > 85, row  # SCR: 33.25 of 90.9 Gb/s
    lat_alone, lat_beside = row[("256B-alone", "latency")][1], row[("256B-beside-64KiB", "latency")][1]
    assert lat_alone < 3 and lat_beside > 2 * lat_alone, row  # SCR: 2.44 -> 5.31 us
