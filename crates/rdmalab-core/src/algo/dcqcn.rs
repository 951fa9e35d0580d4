//! DCQCN reaction point (Zhu et al., SIGCOMM'15), in the "Mellanox" form the
//! ns-3 HPCC simulator implements (`rdma-hw.cc`, `*Mlx`): timer-driven rate
//! increase, α updated on a fixed period, rate decreases at most once per
//! decrease period.
//!
//! * First CNP: α = 1, the α period and the decrease-check period start
//!   (checks run 1 ns after each decrease boundary, as in ns-3).
//! * Every α period: α ← (1 − g)·α + g·[a CNP arrived in the period].
//! * Every decrease check with a CNP since the last one:
//!   target ← rate (if `clamp_target_rate` or the stage is not 0),
//!   rate ← max(min_rate, rate·(1 − α/2)), stage ← 0, restart the increase timer.
//! * Every increase-timer expiry: stage < F: rate ← (rate + target)/2 (fast
//!   recovery); stage = F: target += AI; stage > F: target += HAI; then
//!   rate ← (rate + target)/2; stage += 1. Target is capped at the line rate.
//! * Optional byte counter (original DCQCN, NVIDIA `rpg_byte_reset`): every
//!   `byte_counter` bytes sent is an increase event too.
//!
//! α is advanced lazily: between CNPs it only decays, so the periodic update
//! is replayed in closed form when it is next needed. This gives the same
//! values as a timer every period at a fraction of the events.
//!
//! Defaults are those of the ns-3 HPCC simulator's `run.py --cc dcqcn` at
//! 100 Gb/s, the setting most RDMA CC papers compare against.

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate, Time};

/// Timer slot of the decrease check.
const DECREASE_SLOT: usize = 0;
/// Timer slot of the rate-increase timer.
const INCREASE_SLOT: usize = 1;

/// DCQCN's declared parameters (defaults: ns-3 HPCC `run.py --cc dcqcn` at 100 Gb/s).
pub const PARAMS: &[ParamSpec] = &[
    p::float(
        "g",
        1.0 / 256.0,
        1e-9,
        1.0,
        "α gain g",
        "DCQCN paper; ns-3 run.py EWMA_GAIN",
    ),
    p::duration(
        "alpha_period",
        1.0 * p::US,
        1.0,
        1e12,
        "α update period",
        "ns-3 run.py ALPHA_RESUME_INTERVAL; NVIDIA dce_tcp_rtt",
    ),
    p::duration(
        "decrease_period",
        4.0 * p::US,
        1.0,
        1e12,
        "minimum time between rate decreases",
        "ns-3 run.py RATE_DECREASE_INTERVAL; NVIDIA rate_reduce_monitor_period",
    ),
    p::duration(
        "increase_period",
        300.0 * p::US,
        1.0,
        1e12,
        "rate-increase timer",
        "ns-3 run.py RP_TIMER; NVIDIA rpg_time_reset",
    ),
    p::int(
        "fast_recovery_stages",
        1.0,
        0.0,
        1000.0,
        "fast-recovery stages F",
        "ns-3 run.py FAST_RECOVERY_TIMES; NVIDIA rpg_threshold",
    ),
    p::rate(
        "rate_ai",
        20.0 * p::MBPS,
        1.0,
        1e13,
        "additive increase step",
        "ns-3 run.py: 5 Mb/s per 25 Gb/s of line rate",
    ),
    p::rate(
        "rate_hai",
        200.0 * p::MBPS,
        1.0,
        1e13,
        "hyper additive increase step",
        "ns-3 run.py: 50 Mb/s per 25 Gb/s of line rate",
    ),
    p::rate(
        "min_rate",
        1.0 * p::GBPS,
        1.0,
        1e13,
        "rate floor",
        "ns-3 run.py MIN_RATE",
    ),
    p::boolean(
        "clamp_target_rate",
        false,
        "set target = rate on every decrease",
        "ns-3 run.py CLAMP_TARGET_RATE; NVIDIA clamp_tgt_rate",
    ),
    p::float(
        "rate_on_first_cnp",
        1.0,
        1e-9,
        1.0,
        "fraction of the rate kept on the first CNP",
        "ns-3 rdma-hw RateOnFirstCnp; NVIDIA 0 = keep",
    ),
    p::bytes(
        "byte_counter",
        0.0,
        0.0,
        1e12,
        "bytes sent per increase event; 0 disables the byte counter",
        "ns-3 does not model it; NVIDIA rpg_byte_reset = 32767 B",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnParams {
    pub g: f64,
    pub alpha_period: Duration,
    pub decrease_period: Duration,
    pub increase_period: Duration,
    pub fast_recovery_stages: u32,
    pub rate_ai: Rate,
    pub rate_hai: Rate,
    pub min_rate: Rate,
    pub clamp_target_rate: bool,
    pub rate_on_first_cnp: f64,
    pub byte_counter: u64,
}

impl DcqcnParams {
    pub fn from_values(v: &ParamValues) -> Self {
        DcqcnParams {
            g: v.get("g"),
            alpha_period: v.duration("alpha_period"),
            decrease_period: v.duration("decrease_period"),
            increase_period: v.duration("increase_period"),
            fast_recovery_stages: v.int("fast_recovery_stages"),
            rate_ai: v.rate("rate_ai"),
            rate_hai: v.rate("rate_hai"),
            min_rate: v.rate("min_rate"),
            clamp_target_rate: v.flag("clamp_target_rate"),
            rate_on_first_cnp: v.get("rate_on_first_cnp"),
            byte_counter: v.bytes("byte_counter"),
        }
    }
}

impl Default for DcqcnParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

/// Per-QP DCQCN state.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    p: DcqcnParams,
    /// Current rate Rc and target rate Rt, in bit/s (floating, as in ns-3's DataRate math).
    rc: f64,
    rt: f64,
    alpha: f64,
    stage: u32,
    bytes_since_increase: u64,
    /// Set once the first CNP arrived; the α and decrease periods are aligned to it.
    epoch: Option<Time>,
    alpha_boundaries_done: u64,
    cnp_in_alpha_period: bool,
    cnp_since_decrease_check: bool,
    decrease_check_armed: bool,
}

impl Dcqcn {
    pub fn new(p: DcqcnParams) -> Self {
        Dcqcn {
            p,
            rc: 0.0,
            rt: 0.0,
            alpha: 1.0,
            stage: 0,
            bytes_since_increase: 0,
            epoch: None,
            alpha_boundaries_done: 0,
            cnp_in_alpha_period: false,
            cnp_since_decrease_check: false,
            decrease_check_armed: false,
        }
    }

    pub fn params(&self) -> &DcqcnParams {
        &self.p
    }
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    pub fn target_rate(&self) -> f64 {
        self.rt
    }

    /// Replay the periodic α updates up to and including `now`.
    fn advance_alpha(&mut self, now: Time) {
        let Some(epoch) = self.epoch else { return };
        let k = (now - epoch).ps() / self.p.alpha_period.ps().max(1);
        if k > self.alpha_boundaries_done {
            let n = k - self.alpha_boundaries_done;
            let first = if self.cnp_in_alpha_period { 1.0 } else { 0.0 };
            self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g * first;
            if n > 1 {
                self.alpha *= (1.0 - self.p.g).powi((n - 1).min(i32::MAX as u64) as i32);
            }
            self.cnp_in_alpha_period = false;
            self.alpha_boundaries_done = k;
        }
    }

    fn next_decrease_check(&self, now: Time) -> Time {
        let epoch = self.epoch.expect("armed after the first CNP");
        let period = self.p.decrease_period.ps().max(1);
        let offset = Duration::from_ns(1).ps();
        let since = (now - epoch).ps();
        // Boundaries at epoch + k·period + 1 ns, k ≥ 1; the first strictly after now.
        let k = if since + 1 > offset {
            (since - offset) / period + 1
        } else {
            1
        };
        Time(epoch.ps() + k.max(1) * period + offset)
    }

    fn increase(&mut self, line: f64) {
        let f = self.p.fast_recovery_stages;
        if self.stage == f {
            self.rt = (self.rt + self.p.rate_ai.bps() as f64).min(line);
        } else if self.stage > f {
            self.rt = (self.rt + self.p.rate_hai.bps() as f64).min(line);
        }
        self.rc = ((self.rc + self.rt) / 2.0).min(line);
        self.stage = self.stage.saturating_add(1);
    }

    fn emit_rate(&self, ctx: &mut CcContext) {
        ctx.set_rate(Rate(self.rc.round().max(1.0) as u64));
    }
}

impl Controller for Dcqcn {
    fn name(&self) -> &str {
        "dcqcn"
    }

    fn subscriptions(&self) -> EventMask {
        let tx = if self.p.byte_counter > 0 {
            EventMask::TX
        } else {
            0
        };
        EventMask(EventMask::CNP | tx)
    }

    fn on_start(&mut self, ctx: &mut CcContext) {
        self.rc = ctx.line_rate.bps() as f64;
        self.rt = self.rc;
    }

    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        let line = ctx.line_rate.bps() as f64;
        let now = ctx.now;
        match *ev {
            CcEvent::Cnp => {
                if self.epoch.is_none() {
                    // As ns-3's cnp_received_mlx: α starts at 1 and the first
                    // CNP does not count in the first α period.
                    self.epoch = Some(now);
                    self.alpha = 1.0;
                    self.alpha_boundaries_done = 0;
                    self.rc *= self.p.rate_on_first_cnp;
                    self.rt = self.rc;
                    self.emit_rate(ctx);
                } else {
                    self.advance_alpha(now);
                    self.cnp_in_alpha_period = true;
                }
                self.cnp_since_decrease_check = true;
                if !self.decrease_check_armed {
                    self.decrease_check_armed = true;
                    ctx.set_timer(DECREASE_SLOT, self.next_decrease_check(now));
                }
            }
            CcEvent::Timer { slot } if slot as usize == DECREASE_SLOT => {
                self.decrease_check_armed = false;
                if self.cnp_since_decrease_check {
                    self.advance_alpha(now);
                    self.cnp_since_decrease_check = false;
                    if self.p.clamp_target_rate || self.stage != 0 {
                        self.rt = self.rc;
                    }
                    let min = self.p.min_rate.bps() as f64;
                    self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(min);
                    self.stage = 0;
                    self.bytes_since_increase = 0;
                    self.emit_rate(ctx);
                    ctx.set_timer(INCREASE_SLOT, now + self.p.increase_period);
                }
            }
            CcEvent::Timer { slot } if slot as usize == INCREASE_SLOT => {
                self.increase(line);
                self.emit_rate(ctx);
                // Once back at line rate with nothing left to recover, the timer
                // has no effect until the next decrease restarts it.
                if !(self.rc >= line && self.rt >= line) {
                    ctx.set_timer(INCREASE_SLOT, now + self.p.increase_period);
                }
            }
            CcEvent::Tx { bytes, .. } if self.p.byte_counter > 0 && self.epoch.is_some() => {
                self.bytes_since_increase += bytes as u64;
                if self.bytes_since_increase >= self.p.byte_counter && self.rc < line {
                    self.bytes_since_increase = 0;
                    self.increase(line);
                    self.emit_rate(ctx);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Actions;

    const LINE: Rate = Rate::gbps(100);

    fn step(d: &mut Dcqcn, now: Time, ev: CcEvent, rate: Rate) -> Actions {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(now, LINE, rate, 0, &mut a);
        d.on_event(&ev, &mut ctx);
        a
    }

    fn started() -> Dcqcn {
        let mut d = Dcqcn::new(DcqcnParams::default());
        let mut a = Actions::default();
        d.on_start(&mut CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a));
        d
    }

    #[test]
    fn first_cnp_keeps_the_rate_and_arms_the_decrease_check_1ns_after_the_boundary() {
        let mut d = started();
        let a = step(&mut d, Time(10 * 1_000_000), CcEvent::Cnp, LINE);
        assert_eq!(a.rate, Some(LINE));
        assert_eq!(
            a.timers[DECREASE_SLOT],
            Some(Some(Time(14 * 1_000_000 + 1000)))
        );
    }

    #[test]
    fn decrease_cuts_by_alpha_over_two() {
        let mut d = started();
        step(&mut d, Time(0), CcEvent::Cnp, LINE);
        // At the check (4 µs + 1 ns): 4 α periods passed; the first CNP does
        // not count in the first one (ns-3 cnp_received_mlx).
        let a = step(&mut d, Time(4_001_000), CcEvent::Timer { slot: 0 }, LINE);
        let g: f64 = 1.0 / 256.0;
        let alpha = (1.0 - g).powi(4);
        let expect = 100e9 * (1.0 - alpha / 2.0);
        let got = a.rate.unwrap().bps() as f64;
        assert!((got - expect).abs() < 1.0, "{got} vs {expect}");
        assert!(a.timers[INCREASE_SLOT].is_some());
    }

    /// With a byte counter (the DCQCN paper's B), every `byte_counter` bytes
    /// sent after a decrease is an increase event of its own: the
    /// 1,000th KB raises the rate halfway back to the target, not the 999th.
    #[test]
    fn the_byte_counter_raises_the_rate_every_byte_counter_bytes() {
        let mut d = Dcqcn::new(DcqcnParams {
            byte_counter: 1_000_000,
            ..DcqcnParams::default()
        });
        let mut a = Actions::default();
        d.on_start(&mut CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a));
        let tx = CcEvent::Tx {
            bytes: 1000,
            packets: 1,
        };
        assert!(
            step(&mut d, Time(0), tx, LINE).rate.is_none(),
            "no CNP yet: nothing to recover"
        );
        step(&mut d, Time(0), CcEvent::Cnp, LINE);
        let r1 = step(&mut d, Time(4_001_000), CcEvent::Timer { slot: 0 }, LINE)
            .rate
            .unwrap();
        for i in 0..999 {
            let a = step(&mut d, Time(5_000_000 + i), tx, r1);
            assert!(a.rate.is_none(), "after {} KB", i + 1);
        }
        let r2 = step(&mut d, Time(6_000_000), tx, r1).rate.unwrap();
        assert!(
            (r2.bps() as f64 - (r1.bps() as f64 + 100e9) / 2.0).abs() < 1.0,
            "{r1} -> {r2}"
        );
    }

    #[test]
    fn rate_never_falls_below_min_rate() {
        let mut d = started();
        let mut t = 0u64;
        let mut rate = LINE;
        for _ in 0..200 {
            step(&mut d, Time(t), CcEvent::Cnp, rate);
            t += 4_001_000;
            if let Some(r) = step(&mut d, Time(t), CcEvent::Timer { slot: 0 }, rate).rate {
                rate = r;
            }
        }
        assert_eq!(rate, Rate::gbps(1));
    }

    #[test]
    fn recovery_goes_fast_then_additive_then_hyper() {
        let mut d = started();
        step(&mut d, Time(0), CcEvent::Cnp, LINE);
        let r1 = step(&mut d, Time(4_001_000), CcEvent::Timer { slot: 0 }, LINE)
            .rate
            .unwrap();
        let target = d.target_rate();
        assert_eq!(target, 100e9, "stage 0 at first decrease: target unchanged");
        // Fast recovery: halfway to target.
        let r2 = step(&mut d, Time(304_001_000), CcEvent::Timer { slot: 1 }, r1)
            .rate
            .unwrap();
        assert!((r2.bps() as f64 - (r1.bps() as f64 + 100e9) / 2.0).abs() < 1.0);
        // Back at the line rate the increase timer stops.
        let mut rate = r2;
        let mut t = 304_001_000u64;
        for _ in 0..100 {
            t += 300_000_000;
            let a = step(&mut d, Time(t), CcEvent::Timer { slot: 1 }, rate);
            rate = a.rate.unwrap();
            if a.timers[INCREASE_SLOT].is_none() {
                break;
            }
        }
        assert_eq!(rate, LINE);
    }

    /// A decrease after recovery began sets the target to the rate; then
    /// each increase-timer expiry moves the target by exactly 0 (fast
    /// recovery, F = 1 stage), rate_ai, then rate_hai, and the rate halfway
    /// to it. Doubling rate_ai or rate_hai fails here (the ns-3 golden runs
    /// never bind them).
    #[test]
    fn the_target_climbs_by_rate_ai_then_by_rate_hai() {
        let mut d = started();
        step(&mut d, Time(0), CcEvent::Cnp, LINE);
        let r = step(&mut d, Time(4_001_000), CcEvent::Timer { slot: 0 }, LINE)
            .rate
            .unwrap();
        let r = step(&mut d, Time(304_001_000), CcEvent::Timer { slot: 1 }, r)
            .rate
            .unwrap();
        // A second congestion episode in stage 1: the target drops to the rate.
        step(&mut d, Time(305_000_000), CcEvent::Cnp, r);
        let mut rate = step(&mut d, Time(308_001_000), CcEvent::Timer { slot: 0 }, r)
            .rate
            .unwrap();
        let t0 = d.target_rate();
        assert!(
            (t0 - r.bps() as f64).abs() <= 1.0,
            "target = the rate before the cut"
        );
        assert!(rate.bps() as f64 + 1e9 < t0, "the cut happened");
        let mut t = 308_001_000u64;
        for (stage, want) in [
            (0, t0),
            (1, t0 + 20e6),
            (2, t0 + 20e6 + 200e6),
            (3, t0 + 20e6 + 400e6),
        ] {
            t += 300_000_000;
            let before = rate.bps() as f64;
            rate = step(&mut d, Time(t), CcEvent::Timer { slot: 1 }, rate)
                .rate
                .unwrap();
            assert!(
                (d.target_rate() - want).abs() < 1e-3,
                "target after stage {stage}"
            );
            assert!(
                (rate.bps() as f64 - (before + want) / 2.0).abs() <= 1.0,
                "rate halfway, stage {stage}"
            );
        }
    }

    #[test]
    fn alpha_decays_without_cnps() {
        let mut d = started();
        step(&mut d, Time(0), CcEvent::Cnp, LINE);
        d.advance_alpha(Time(1_000_000 * 1000));
        let g = 1.0f64 / 256.0;
        let expect = (1.0 - g).powi(1000);
        assert!(
            (d.alpha() - expect).abs() < 1e-9,
            "{} vs {expect}",
            d.alpha()
        );
    }
}
