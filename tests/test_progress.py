"""The progress line's ETA, on synthetic runs with a known end (no wall
clock: the elapsed times are given), so the estimator's design is what is
tested. A run slows as its fabric fills; it ends at its stop time or when
its flows are done, whichever is first."""

from dataclasses import dataclass

import pytest

from rdmalab.runner import _Progress


@dataclass
class FakeSim:
    now_ps: int = 0
    stop_ps: int = 1000
    flows_total: int = 10
    flows_done: int = 0
    flow_bytes_total: int = 10_000
    payload_arrived: int = 0
    events: int = 0


def replay(profile, total_s: float, at: float, steps: int = 400) -> tuple[float, float]:
    """Feed `profile(t) -> (fraction of sim time, fraction of payload)` at wall
    times t in [0, total_s]; return (ETA, true seconds left) when the progress
    first reaches `at`."""
    p = _Progress(False)
    sim = FakeSim()
    for i in range(1, steps + 1):
        t = total_s * i / steps
        ft, fw = profile(t / total_s)
        sim.now_ps = int(ft * sim.stop_ps)
        sim.payload_arrived = int(fw * sim.flow_bytes_total)
        p.sample(sim, t)
        if p.fraction() >= at:
            return p.eta(), total_s - t
    raise AssertionError("never got there")


def slowing(u: float) -> tuple[float, float]:
    # The 320-host WebSearch example's shape: a quarter of the work in a
    # tenth of the time, half in a third (f ≈ t^0.6).
    return u**0.6, u**0.6


def quick_start(u: float) -> tuple[float, float]:
    # A fifth of the work in the first 5 % of the time, then a steady rate.
    f = 4 * u if u < 0.05 else 0.2 + 0.8 * (u - 0.05) / 0.95
    return f, f


def ends_at_stop_time(u: float) -> tuple[float, float]:
    # Simulated time runs evenly to the stop; half the flows' bytes are delivered by then.
    return u, 0.5 * u


def flows_finish_early(u: float) -> tuple[float, float]:
    # Every flow is done at the end; simulated time would have run to 4x.
    return 0.25 * u, u


@pytest.mark.parametrize("profile", [slowing, quick_start, ends_at_stop_time, flows_finish_early])
def test_eta_is_within_30_percent_from_a_quarter_of_the_run(profile):
    for at in (0.25, 0.5, 0.75):
        eta, left = replay(profile, 100.0, at)
        assert abs(eta - left) <= 0.3 * left, (profile.__name__, at, eta, left)


def test_the_cumulative_average_would_not_be():
    """What the recent-rate window is for: on a slowing run, elapsed × (1 − f) / f is far off."""
    eta, left = replay(slowing, 100.0, 0.25)
    t = 100.0 * 0.25 ** (1 / 0.6)  # wall time at f = 0.25
    p_cum = t * (1 - 0.25) / 0.25
    assert abs(p_cum - left) > 0.3 * left and abs(eta - left) <= 0.3 * left
