"""SCR A.6, Fig. 18b: Swift on the DPA as a dequeue-rate controller beside
uncontrolled cross traffic (examples/scr/scr-swift-cross.yaml). What must
hold is Swift's job: give the cross traffic its rate, keep the bottleneck
queue near Swift's target delay, use what is left, and grow back when the
cross traffic stops. Without congestion control the same scenario starves
the cross traffic and fills the buffer, so these checks guard Swift."""

from pathlib import Path

import polars as pl
import pytest

import rdmalab

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "scr" / "scr-swift-cross.yaml"
# The cross traffic runs 1–3 ms; measure after Swift had 0.5 ms to settle.
DURING = (1_500_000_000, 3_000_000_000)
AFTER = (3_500_000_000, 4_000_000_000)
# Payload Gb/s of one QP alone on 100 Gb/s at 1000 B packets (headers take the rest).
LINE_PAYLOAD = 92.5
# Swift's largest target here (1 us base + 1 hop x 2 us + 2 us flow scaling)
# is 5 us, 62.5 KB at 100 Gb/s. The DPA acts on an ACK ~17 us after it
# arrives (trigger, processing, install), many round trips late, so the
# queue overshoots its target; half again is the allowance (a choice).
# Without congestion control it is 1.4-1.9 MB.
QUEUE_LIMIT_KB = 1.5 * 5e-6 * 100e9 / 8 / 1e3


def measure(cross_gbps: int, cc: dict, placement: str = "dpa") -> dict:
    r = rdmalab.run(SCENARIO, **{"workload.perftest[1].rate": f"{cross_gbps}Gbps", "cc": cc,
                                 "control.placement": placement})
    s = r.qp_samples.join(r.apps.select("qp", "name"), on="qp")

    def mean(name, window):
        w = s.filter((pl.col("name") == name) & pl.col("time_ps").is_between(*window, closed="right"))
        return w["throughput_bps"].mean() / 1e9

    q = r.port_samples.filter(pl.col("time_ps").is_between(*DURING, closed="right"))
    return {
        "bulk": mean("bulk", DURING),
        "cross": mean("cross", DURING),
        "bulk_after": mean("bulk", AFTER),
        "queue_kb": q.group_by("node", "port").agg(pl.col("queued_bytes").mean())["queued_bytes"].max() / 1e3,
    }


def holds(m: dict, cross_gbps: int, used: float = 0.85) -> list[str]:
    """Swift's properties that fail, as readable strings (empty: all hold).
    `used`: the share of the link's payload rate that bulk and cross must
    fill together. On the DPA Swift's rate saws between its 32 Gb/s floor
    and 96 Gb/s ceiling, because it keeps cutting for the ~17 µs the loop
    takes to act, and leaves the link idle for a while each cycle: 89.6 % is
    used beside 20 Gb/s of cross traffic (95 % at 40, 100 % at 60), so 85 %
    is required; in the NIC ASIC, with no lag, all of it (see below)."""
    # The cross QP's payload at its wire rate, less 10 %.
    want_cross = 0.9 * cross_gbps * LINE_PAYLOAD / 100
    bad = []
    if m["cross"] < want_cross:
        bad.append(f"cross traffic got {m['cross']:.1f} Gb/s < {want_cross:.1f}")
    if m["queue_kb"] > QUEUE_LIMIT_KB:
        bad.append(f"bottleneck queue {m['queue_kb']:.0f} KB > {QUEUE_LIMIT_KB:.0f} KB (Swift's target is at most 5 µs)")
    if m["bulk"] + m["cross"] < used * LINE_PAYLOAD:
        bad.append(f"link used {m['bulk'] + m['cross']:.1f} Gb/s < {used:.0%} of {LINE_PAYLOAD}")
    if m["bulk_after"] < 0.9 * LINE_PAYLOAD:
        bad.append(f"after the cross traffic Swift is at {m['bulk_after']:.1f} Gb/s, not back near line rate")
    return bad


SWIFT = {"algorithm": "swift", "params": {"rate_mode": True, "base_delay": "1us", "per_hop_delay": "2us",
                                          "fs_range": "2us", "min_rate": "32Gbps", "max_rate": "96Gbps"}}


@pytest.mark.parametrize("cross", [20, 40, 60])
def test_swift_gives_cross_traffic_its_rate_keeps_the_queue_short_and_uses_the_rest(cross):
    m = measure(cross, SWIFT)
    assert holds(m, cross) == [], m


def test_without_the_dpa_loop_lag_swift_fills_the_link():
    m = measure(20, SWIFT, placement="asic")
    assert holds(m, 20, used=0.98) == [], m


def test_without_congestion_control_the_same_checks_fail():
    m = measure(60, {"algorithm": "none"})
    bad = holds(m, 60)
    assert any("cross traffic got" in b for b in bad) and any("queue" in b for b in bad), m
