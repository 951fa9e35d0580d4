"""Tenants who cheat congestion control (Snyder et al.): the shipped sweeps
for Fig. 3 and Fig. 4 run with one command each, draw their figures, and
the numbers behind them show what the paper's Table I says of each
enforcement scope. (Fig. 5 and 6 take minutes: docs/attacks.md.)"""

from pathlib import Path

import polars as pl
from conftest import run_sweep


def sweep(examples: Path, name: str, out: Path) -> Path:
    return run_sweep(examples / "attacks" / name, out)


def test_fig3_parallel_qps_per_scope(examples, tmp_path):
    plots = sweep(examples, "attacks-fig3-parallel.yaml", tmp_path / "fig3")
    assert (plots / "attacks-fig3-share.png").stat().st_size > 0
    t = pl.read_csv(plots / "attacks-fig3-share.csv")
    assert t.height == 40
    # The scope column is `cc_scope`, as in every attack figure's CSV.
    assert t.columns == ["cc", "cc_scope", "attacker_qps", "attacker_gbps", "victim_gbps", "attacker_share"]
    share = {(r["cc"], r["cc_scope"], r["attacker_qps"]): r["attacker_share"] for r in t.iter_rows(named=True)}
    # Per QP (the IB spec): N QPs take about N/(N+1).
    assert abs(share["dcqcn", "qp", 2] - 2 / 3) < 0.03
    assert share["dcqcn", "qp", 16] > 0.85
    # ConnectX-5 (shared rate per destination): less than 2/3 with one extra QP, still growing.
    assert 0.55 < share["dcqcn", "destination", 2] < 0.64
    assert share["dcqcn", "destination", 16] < share["dcqcn", "qp", 16] - 0.1
    # The split scopes hold the attacker to half, whatever its QPs.
    for scope in ("pair", "tenant"):
        assert max(share["dcqcn", scope, n] for n in (1, 2, 4, 8, 16)) < 0.52
    # Without CC the switch splits the link evenly ("16 No CC").
    assert all(abs(share["none", s, 16] - 0.5) < 0.01 for s in ("qp", "destination", "pair", "tenant"))


def test_fig4_staggered_qps_per_scope(examples, tmp_path):
    """The paper's set-up (a 1.125 MB transfer beside an ib_write_bw victim,
    marking from 200 KB), goodput over the transfer: nothing here is fitted
    to the paper's 74 and 60 Gb/s."""
    plots = sweep(examples, "attacks-fig4-staggered.yaml", tmp_path / "fig4")
    for name in ("goodput", "victim"):
        assert (plots / f"attacks-fig4-{name}.png").stat().st_size > 0
    t = pl.read_csv(plots / "attacks-fig4-goodput.csv")
    assert t.height == 32
    assert t["attack_completed"].all()
    row = {(r["cc_scope"], r["attack"], r["marking"]): r for r in t.iter_rows(named=True)}
    alone = row["qp", "staggered-alone", "paper's marking"]
    # Alone the attacker is held below line rate (92.4 Gb/s of payload) only by
    # each fresh QP's DMA read over the host PCIe link: the paper's 74 Gb/s.
    assert 70 < alone["attacker_gbps"] < 78
    # Beside the victim, per QP: the paper's ~60 Gb/s, the victim under 40.
    stag = row["qp", "staggered", "paper's marking"]
    assert 55 < stag["attacker_gbps"] < 70, stag
    assert 15 < stag["victim_gbps"] < 40, stag
    # The victim ran at ~92 Gb/s before: together they still fill the link.
    assert stag["attacker_gbps"] + stag["victim_gbps"] > 85
    # 8 KB marking: the victim backs off early and the attacker reaches its limit (alone).
    low = row["qp", "staggered", "8KB marking"]
    assert low["attacker_gbps"] > 0.97 * alone["attacker_gbps"] and low["victim_gbps"] < stag["victim_gbps"] - 10
    # A longer-lived attack is "more detrimental to the victim".
    assert row["qp", "staggered-long", "paper's marking"]["victim_gbps"] < stag["victim_gbps"] - 5
    # Staggering beats the parallel attack (Fig. 4's last bar).
    assert row["qp", "parallel", "paper's marking"]["attacker_gbps"] < stag["attacker_gbps"] - 10
    # Table I: per QP vulnerable to both; ConnectX-5 stops staggering, not parallel QPs; per pair both.
    assert row["qp", "parallel", "paper's marking"]["attacker_share"] > 0.65
    assert row["destination", "staggered", "paper's marking"]["attacker_share"] < 0.55
    assert row["destination", "parallel", "paper's marking"]["attacker_share"] > 0.65
    for scope in ("pair", "tenant"):
        for attack in ("staggered", "parallel", "staggered-long"):
            assert row[scope, attack, "paper's marking"]["attacker_share"] < 0.55


def test_a_split_groups_window_holds_all_its_qps_together(tmp_path):
    """`nic.cc_scope: pair` with a 20 KB `nic.window`: eight QPs between
    one pair of hosts share one window, so their bytes in flight together
    never pass it (by more than the packet each QP may have started), where
    per-QP windows let them fill the link (its ~54 KB bandwidth-delay product)."""
    import rdmalab

    def run(scope):
        r = rdmalab.run(rdmalab.scenario_from_dict({
            "name": "group-window", "duration": "300us",
            "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
            "nic": {"mtu": "1000B", "cc_scope": scope, "window": "20KB"}, "cc": {"algorithm": "none"},
            "records": {"sample_interval": "1us"},
            "workload": {"perftest": [{"name": "p", "src": "h0", "dst": "h1", "message_size": "64KB", "qps": 8,
                                       "queue_depth": 2}]},
        }, base_dir=tmp_path))
        s = r.qp_samples.filter(pl.col("time_ps") > 20e6)
        flight = s.group_by("time_ps").agg(pl.col("bytes_in_flight").sum())["bytes_in_flight"]
        per_sample = s.group_by("time_ps").agg(pl.col("throughput_bps").sum())["throughput_bps"].mean() / 1e9
        return flight.max(), per_sample

    shared, shared_gbps = run("pair")
    own, own_gbps = run("qp")
    assert shared <= 20_000 + 8 * 1000, shared
    assert own > 2 * 20_000, own
    # One 20 KB window over a ~4.3 us round trip carries ~37 Gb/s; eight carry the line.
    assert shared_gbps < 50 < own_gbps, (shared_gbps, own_gbps)
