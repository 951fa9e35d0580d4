//! TIMELY (Mittal et al., SIGCOMM'15): rate control on the RTT gradient, as
//! the ns-3 HPCC simulator implements it (`UpdateRateTimely`).
//!
//! Once per RTT (on the first ACK past the byte sequence recorded at the
//! previous update):
//! * `rtt_diff ← (1 − α)·rtt_diff + α·(rtt − prev_rtt)`, `gradient = rtt_diff / min_rtt`;
//! * `rtt < t_low` → increase; `rtt > t_high` → `R ← R·(1 − β(1 − t_high/rtt))`;
//!   `gradient ≤ 0` → increase; else `R ← R·max(0, 1 − β·gradient)`;
//! * an increase adds `rate_ai`, or `rate_hai` after `hai_threshold`
//!   consecutive increases; a decrease resets that count; `R ≥ min_rate`.
//!
//! Defaults: ns-3 HPCC `GetTypeId` for the law, `run.py --cc timely` at
//! 100 Gb/s for the steps (AI 10 Mb/s and HAI 50 Mb/s per 10 Gb/s of line rate).

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate};

pub const PARAMS: &[ParamSpec] = &[
    p::float(
        "alpha",
        0.875,
        0.0,
        1.0,
        "EWMA weight of a new RTT-difference sample",
        "ns-3 HPCC TimelyAlpha; TIMELY paper",
    ),
    p::float(
        "beta",
        0.8,
        0.0,
        1.0,
        "multiplicative decrease factor",
        "ns-3 HPCC TimelyBeta; TIMELY paper",
    ),
    p::duration(
        "t_low",
        50.0 * p::US,
        0.0,
        1e12,
        "below this RTT, always increase",
        "ns-3 HPCC TimelyTLow; TIMELY paper",
    ),
    p::duration(
        "t_high",
        500.0 * p::US,
        1.0,
        1e12,
        "above this RTT, decrease in proportion",
        "ns-3 HPCC TimelyTHigh; TIMELY paper",
    ),
    p::duration(
        "min_rtt",
        20.0 * p::US,
        1.0,
        1e12,
        "normaliser of the RTT gradient",
        "ns-3 HPCC TimelyMinRtt; TIMELY paper",
    ),
    p::rate(
        "rate_ai",
        100.0 * p::MBPS,
        1.0,
        1e13,
        "additive increase step",
        "ns-3 run.py: 10 Mb/s per 10 Gb/s of line rate",
    ),
    p::rate(
        "rate_hai",
        500.0 * p::MBPS,
        1.0,
        1e13,
        "hyper additive increase step",
        "ns-3 run.py: 50 Mb/s per 10 Gb/s of line rate",
    ),
    p::int(
        "hai_threshold",
        5.0,
        0.0,
        1e6,
        "consecutive increases before HAI steps",
        "ns-3 HPCC hard-coded 5; TIMELY paper N = 5",
    ),
    p::rate(
        "min_rate",
        1.0 * p::GBPS,
        1.0,
        1e13,
        "rate floor",
        "ns-3 run.py MIN_RATE",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelyParams {
    pub alpha: f64,
    pub beta: f64,
    pub t_low: Duration,
    pub t_high: Duration,
    pub min_rtt: Duration,
    pub rate_ai: Rate,
    pub rate_hai: Rate,
    pub hai_threshold: u32,
    pub min_rate: Rate,
}

impl TimelyParams {
    pub fn from_values(v: &ParamValues) -> Self {
        TimelyParams {
            alpha: v.get("alpha"),
            beta: v.get("beta"),
            t_low: v.duration("t_low"),
            t_high: v.duration("t_high"),
            min_rtt: v.duration("min_rtt"),
            rate_ai: v.rate("rate_ai"),
            rate_hai: v.rate("rate_hai"),
            hai_threshold: v.int("hai_threshold"),
            min_rate: v.rate("min_rate"),
        }
    }
}

impl Default for TimelyParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

#[derive(Clone, Debug)]
pub struct Timely {
    p: TimelyParams,
    rate: f64,
    /// Byte sequence after which the next per-RTT update happens (0: none yet).
    last_update_seq: u64,
    prev_rtt_ps: f64,
    rtt_diff_ps: f64,
    inc_stage: u32,
}

impl Timely {
    pub fn new(p: TimelyParams) -> Self {
        Timely {
            p,
            rate: 0.0,
            last_update_seq: 0,
            prev_rtt_ps: 0.0,
            rtt_diff_ps: 0.0,
            inc_stage: 0,
        }
    }
}

impl Controller for Timely {
    fn name(&self) -> &str {
        "timely"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::ACK)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.rate = ctx.line_rate.bps() as f64;
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        let CcEvent::Ack {
            acked_through, rtt, ..
        } = *ev
        else {
            return;
        };
        if acked_through <= self.last_update_seq {
            return;
        }
        let rtt = rtt.ps() as f64;
        if self.last_update_seq != 0 {
            let p = &self.p;
            let new_diff = rtt - self.prev_rtt_ps;
            let rtt_diff = (1.0 - p.alpha) * self.rtt_diff_ps + p.alpha * new_diff;
            let gradient = rtt_diff / p.min_rtt.ps() as f64;
            let t_high = p.t_high.ps() as f64;
            let increase;
            let mut factor = 1.0;
            if rtt < p.t_low.ps() as f64 {
                increase = true;
            } else if rtt > t_high {
                factor = 1.0 - p.beta * (1.0 - t_high / rtt);
                increase = false;
            } else if gradient <= 0.0 {
                increase = true;
            } else {
                factor = (1.0 - p.beta * gradient).max(0.0);
                increase = false;
            }
            if increase {
                let step = if self.inc_stage < p.hai_threshold {
                    p.rate_ai
                } else {
                    p.rate_hai
                };
                self.rate = (self.rate + step.bps() as f64).min(ctx.line_rate.bps() as f64);
                self.inc_stage += 1;
            } else {
                self.rate = (self.rate * factor).max(p.min_rate.bps() as f64);
                self.inc_stage = 0;
            }
            self.rtt_diff_ps = rtt_diff;
            ctx.set_rate(Rate(self.rate.round().max(1.0) as u64));
        }
        self.last_update_seq = ctx.snd_nxt_bytes;
        self.prev_rtt_ps = rtt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Actions;
    use crate::time::Time;

    const LINE: Rate = Rate::gbps(100);

    fn ack(t: &mut Timely, through: u64, snd_nxt: u64, rtt_us: u64, rate: Rate) -> Option<Rate> {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time::ZERO, LINE, rate, 0, &mut a);
        ctx.snd_nxt_bytes = snd_nxt;
        t.on_event(
            &CcEvent::Ack {
                acked_bytes: 1000,
                acked_through: through,
                rtt: Duration::from_us(rtt_us),
                ece: false,
                hops: 1,
            },
            &mut ctx,
        );
        a.rate
    }

    fn started() -> Timely {
        let mut t = Timely::new(TimelyParams::default());
        let mut a = Actions::default();
        t.on_start(&mut CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a));
        t
    }

    #[test]
    fn the_first_rtt_only_records_the_sample() {
        let mut t = started();
        assert_eq!(ack(&mut t, 1000, 50_000, 30, LINE), None);
    }

    #[test]
    fn rtt_above_t_high_cuts_in_proportion() {
        let mut t = started();
        ack(&mut t, 1000, 50_000, 600, LINE);
        let r = ack(&mut t, 60_000, 100_000, 1000, LINE).unwrap();
        // 1 − 0.8·(1 − 500/1000) = 0.6
        assert!((r.bps() as f64 - 60e9).abs() < 1.0, "{r}");
    }

    #[test]
    fn a_rising_rtt_in_the_band_decreases_by_the_gradient() {
        let mut t = started();
        t.rate = 50e9;
        ack(&mut t, 1000, 50_000, 100, Rate::gbps(50));
        let r = ack(&mut t, 60_000, 100_000, 110, Rate::gbps(50)).unwrap();
        // rtt_diff = 0.875 · 10 µs; gradient = 8.75/20; factor = 1 − 0.8·0.4375 = 0.65
        assert!((r.bps() as f64 - 50e9 * 0.65).abs() < 10.0, "{r}");
    }

    #[test]
    fn low_rtt_increases_additively_then_hyper() {
        let mut t = started();
        t.rate = 10e9;
        ack(&mut t, 1000, 10_000, 10, Rate::gbps(10));
        let mut through = 10_000;
        let mut last = 10e9;
        for i in 0..7 {
            through += 10_000;
            let r = ack(&mut t, through, through + 5000, 10, Rate::gbps(10))
                .unwrap()
                .bps() as f64;
            let step = if i < 5 { 100e6 } else { 500e6 };
            assert!((r - last - step).abs() < 1.0, "step {i}: {r} after {last}");
            last = r;
        }
    }

    #[test]
    fn only_one_update_per_rtt() {
        let mut t = started();
        ack(&mut t, 1000, 50_000, 600, LINE);
        assert!(ack(&mut t, 60_000, 100_000, 1000, LINE).is_some());
        // Still below the sequence recorded at the last update: no reaction.
        assert_eq!(ack(&mut t, 90_000, 120_000, 1000, LINE), None);
    }
}
