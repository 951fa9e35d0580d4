//! HPCC (Li et al., SIGCOMM'19) in the rate-based, single-rate form of the
//! ns-3 HPCC simulator (`UpdateRateHp`, MULTI_RATE 0), driven by the INT hop
//! records echoed on every ACK.
//!
//! Per ACK, for each hop j: `u_j = txRate_j / B_j + min(qlen_j, qlen_j') / (B_j·T)`
//! (txRate from the change in transmitted bytes between two ACKs); U is the
//! largest u_j with its time delta τ; `u ← (u·(T − τ) + U·τ) / T` with τ ≤ T.
//! Then with `c = u / η`: if `c ≥ 1` or the increase stage reached
//! `max_stage`, `R = Rc / c + rate_ai` (stage 0), else `R = Rc + rate_ai`
//! (stage + 1), clamped to [min_rate, line rate]. Rc and the stage are
//! committed once per RTT; with `fast_react` the other ACKs apply a
//! provisional rate from the committed Rc. With `window`, the QP's window is
//! the BDP scaled by R / line rate (ns-3 VAR_WIN).
//!
//! INT values are exact here (ns-3 quantises bytes to 128 B and queue length
//! to 80 B units). Switches must push INT: set `switch.int: true`.

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::packet::{IntHop, MAX_INT_HOPS};
use crate::time::{Duration, Rate};

pub const PARAMS: &[ParamSpec] = &[
    p::float(
        "eta",
        0.95,
        0.01,
        1.0,
        "target utilisation η",
        "HPCC paper; ns-3 run.py U_TARGET",
    ),
    p::int(
        "max_stage",
        0.0,
        0.0,
        1e6,
        "additive-increase stages before a multiplicative step",
        "ns-3 run.py MI_THRESH (GetTypeId: 5)",
    ),
    p::rate(
        "rate_ai",
        40.0 * p::MBPS,
        1.0,
        1e13,
        "additive increase step",
        "ns-3 run.py: 10 Mb/s per 25 Gb/s of line rate",
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
        "fast_react",
        true,
        "react on every ACK, committing once per RTT",
        "ns-3 run.py FAST_REACT",
    ),
    p::boolean(
        "window",
        true,
        "also limit bytes in flight to BDP × R / line rate",
        "ns-3 run.py HAS_WIN and VAR_WIN",
    ),
    p::duration(
        "base_rtt",
        0.0,
        0.0,
        1e12,
        "T; 0 uses the QP's own idle-path RTT",
        "HPCC paper; ns-3 GLOBAL_T 1 uses the fabric's largest RTT",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HpccParams {
    pub eta: f64,
    pub max_stage: u32,
    pub rate_ai: Rate,
    pub min_rate: Rate,
    pub fast_react: bool,
    pub window: bool,
    pub base_rtt: Duration,
}

impl HpccParams {
    pub fn from_values(v: &ParamValues) -> Self {
        HpccParams {
            eta: v.get("eta"),
            max_stage: v.int("max_stage"),
            rate_ai: v.rate("rate_ai"),
            min_rate: v.rate("min_rate"),
            fast_react: v.flag("fast_react"),
            window: v.flag("window"),
            base_rtt: v.duration("base_rtt"),
        }
    }
}

impl Default for HpccParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

/// `x` as a float, exactly as `x as f64` for any `x` below 2^63 (times in
/// ps, byte counts and rates all are): x86-64 converts a signed integer in
/// one instruction and an unsigned one in several, and each ACK converts
/// four numbers per hop. (At 2^63 and above it gives 2^63.)
#[inline(always)]
fn float(x: u64) -> f64 {
    x.min(i64::MAX as u64) as i64 as f64
}

#[derive(Clone, Debug)]
pub struct Hpcc {
    p: HpccParams,
    /// Committed rate Rc, bit/s.
    cur_rate: f64,
    inc_stage: u32,
    u: f64,
    last_update_seq: u64,
    prev: [IntHop; MAX_INT_HOPS],
    prev_hops: usize,
    t_ps: f64,
    win_bytes: f64,
}

impl Hpcc {
    pub fn new(p: HpccParams) -> Self {
        Hpcc {
            p,
            cur_rate: 0.0,
            inc_stage: 0,
            u: 1.0,
            last_update_seq: 0,
            prev: [IntHop::default(); MAX_INT_HOPS],
            prev_hops: 0,
            t_ps: 1.0,
            win_bytes: 0.0,
        }
    }

    pub fn utilization(&self) -> f64 {
        self.u
    }

    fn store(&mut self, int: &[IntHop]) {
        let n = int.len().min(MAX_INT_HOPS);
        self.prev[..n].copy_from_slice(&int[..n]);
        self.prev_hops = n;
    }

    fn update(&mut self, ctx: &mut CcContext, commit: bool) {
        let line = ctx.line_rate.bps() as f64;
        let int = ctx.int;
        if int.is_empty() {
            return;
        }
        if int.len() != self.prev_hops {
            // A first sample of this path: nothing to compare with yet.
            self.store(int);
            return;
        }
        let (mut big_u, mut dt, mut any) = (0.0f64, 0.0f64, false);
        // Each hop's record replaces the one it is compared with as the loop
        // passes (`store` in place: no copy of the whole array per ACK).
        for (h, prev) in int.iter().zip(self.prev.iter_mut()) {
            let old = std::mem::replace(prev, *h);
            let tau = float(h.timestamp.ps().saturating_sub(old.timestamp.ps()));
            if tau <= 0.0 {
                continue;
            }
            let b = float(h.link_rate.bps());
            let tx_rate = float(h.tx_bytes.saturating_sub(old.tx_bytes)) * 8.0 / (tau / 1e12);
            let qlen = float(h.qlen_bytes.min(old.qlen_bytes));
            let u = tx_rate / b + qlen * line / (b * self.win_bytes.max(1.0));
            if u > big_u {
                big_u = u;
                dt = tau;
            }
            any = true;
        }
        if !any {
            return;
        }
        let t = self.t_ps;
        let tau = dt.min(t);
        self.u = (self.u * (t - tau) + big_u * tau) / t;
        let c = self.u / self.p.eta;
        let (mut rate, stage) = if c >= 1.0 || self.inc_stage >= self.p.max_stage {
            (self.cur_rate / c + self.p.rate_ai.bps() as f64, 0)
        } else {
            (
                self.cur_rate + self.p.rate_ai.bps() as f64,
                self.inc_stage + 1,
            )
        };
        rate = rate.clamp(self.p.min_rate.bps() as f64, line);
        if commit {
            self.cur_rate = rate;
            self.inc_stage = stage;
        }
        ctx.set_rate(Rate(round_bps(rate)));
        if self.p.window {
            ctx.set_window(Some(
                ((self.win_bytes * rate / line) as u64).max(ctx.path.mtu as u64),
            ));
        }
    }
}

/// `x.round() as u64` (half away from zero; NaN and negatives give 0)
/// without the library call `round` is on x86-64: one per ACK. Below 2^53
/// the fraction `x − trunc(x)` is exact, so comparing it with 0.5 decides.
#[inline]
fn round_bps(x: f64) -> u64 {
    if (0.0..9.0e15).contains(&x) {
        // SAFETY: `x` is finite and within i64's range.
        let whole = unsafe { x.to_int_unchecked::<i64>() };
        return (whole + (x - whole as f64 >= 0.5) as i64) as u64;
    }
    x.round() as u64
}

impl Controller for Hpcc {
    fn name(&self) -> &str {
        "hpcc"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::ACK)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.cur_rate = ctx.line_rate.bps() as f64;
        let t = if self.p.base_rtt.ps() > 0 {
            self.p.base_rtt
        } else {
            ctx.path.base_rtt
        };
        self.t_ps = t.ps().max(1) as f64;
        self.win_bytes = ctx.line_rate.bytes_in(t) as f64;
        if self.p.window {
            ctx.set_window(Some((self.win_bytes as u64).max(ctx.path.mtu as u64)));
        }
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        let CcEvent::Ack { acked_through, .. } = *ev else {
            return;
        };
        if acked_through > self.last_update_seq {
            if self.last_update_seq == 0 {
                self.store(ctx.int);
            } else {
                self.update(ctx, true);
            }
            if ctx.snd_nxt_bytes > self.last_update_seq {
                self.last_update_seq = ctx.snd_nxt_bytes;
            }
        } else if self.p.fast_react {
            self.update(ctx, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Actions, PathFacts};
    use crate::time::Time;

    const LINE: Rate = Rate::gbps(100);

    fn path() -> PathFacts {
        PathFacts {
            line_rate: LINE,
            base_rtt: Duration::from_us(8),
            hops: 1,
            mtu: 1000,
            packet_overhead: 82,
        }
    }

    fn hop(t_ns: u64, tx: u64, q: u64) -> IntHop {
        IntHop {
            qlen_bytes: q,
            tx_bytes: tx,
            timestamp: Time(t_ns * 1000),
            link_rate: LINE,
        }
    }

    fn started() -> Hpcc {
        let mut h = Hpcc::new(HpccParams::default());
        let mut a = Actions::default();
        let mut ctx = CcContext::with_facts(Time::ZERO, LINE, 0, 0, path(), &[], &mut a);
        h.on_start(&mut ctx);
        assert_eq!(
            a.window,
            Some(Some(100_000)),
            "window = BDP = 100 Gb/s × 8 µs"
        );
        h
    }

    fn ack(h: &mut Hpcc, through: u64, snd_nxt: u64, int: &[IntHop]) -> Actions {
        let mut a = Actions::default();
        let mut ctx = CcContext::with_facts(Time::ZERO, LINE, 0, snd_nxt, path(), int, &mut a);
        h.on_event(
            &CcEvent::Ack {
                acked_bytes: 1000,
                acked_through: through,
                rtt: Duration::from_us(8),
                ece: false,
                hops: 1,
            },
            &mut ctx,
        );
        a
    }

    #[test]
    fn round_bps_rounds_as_f64_round_does() {
        let mut xs = vec![
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            1e9 + 0.5,
            12_345_678_901.499_998,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            1.8e19,
            1e20,
            f64::INFINITY,
            f64::NAN,
            -0.5,
            -3.7,
        ];
        // Rates as HPCC makes them: Rc / c + AI for many c.
        for k in 1..2000u32 {
            xs.push(100e9 / (k as f64 * 0.013 / 0.95) + 50e6);
            xs.push(k as f64 + 0.5);
        }
        for x in xs {
            assert_eq!(round_bps(x), x.round() as u64, "{x:?}");
        }
    }

    /// Two ACKs in a row on the same path each compare with the one
    /// before: the records the first stored are the second's baseline.
    #[test]
    fn each_ack_compares_with_the_previous_records() {
        let mut h = started();
        ack(&mut h, 1000, 100_000, &[hop(0, 0, 0), hop(0, 0, 0)]);
        ack(
            &mut h,
            101_000,
            200_000,
            &[hop(8000, 25_000, 0), hop(8000, 100_000, 0)],
        );
        assert!((h.utilization() - 1.0).abs() < 1e-9, "{}", h.utilization());
        // 8 µs later the first hop is idle and the second sent 25 KB: U = 0.25.
        ack(
            &mut h,
            150_000,
            250_000,
            &[hop(16000, 25_000, 0), hop(16000, 125_000, 0)],
        );
        assert!((h.utilization() - 0.25).abs() < 1e-9, "{}", h.utilization());
    }

    #[test]
    fn a_link_at_full_rate_with_a_queue_cuts_the_rate_below_line() {
        let mut h = started();
        ack(&mut h, 1000, 100_000, &[hop(0, 0, 50_000)]);
        // Over 8 µs the hop sent 100 KB (100 Gb/s) and held 50 KB both times: U = 1 + 0.5.
        let a = ack(&mut h, 101_000, 200_000, &[hop(8000, 100_000, 50_000)]);
        let r = a.rate.unwrap().bps() as f64;
        // τ = T: u = U = 1.5; c = 1.5/0.95; R = 100G / c + 40M.
        let expect = 100e9 / (1.5 / 0.95) + 40e6;
        assert!((r - expect).abs() < 1e3, "{r} vs {expect}");
        assert!((h.utilization() - 1.5).abs() < 1e-9);
        let w = a.window.unwrap().unwrap() as f64;
        assert!((w - 100_000.0 * expect / 100e9).abs() < 2.0);
    }

    #[test]
    fn an_idle_link_increases_additively() {
        let mut h = started();
        h.cur_rate = 50e9;
        ack(&mut h, 1000, 100_000, &[hop(0, 0, 0)]);
        // 25 Gb/s through a 100 Gb/s hop, no queue, τ = T: u = 0.25 < η.
        let a = ack(&mut h, 101_000, 200_000, &[hop(8000, 25_000, 0)]);
        // max_stage 0: every update is the multiplicative form, R = Rc / (u/η) + AI.
        let expect: f64 = 50e9 / (0.25 / 0.95) + 40e6;
        let r = a.rate.unwrap().bps() as f64;
        assert!((r - expect.min(100e9)).abs() < 1e3, "{r}");
    }

    /// With `max_stage` > 0 (ns-3 MI_THRESH), an under-used link first gets
    /// `max_stage` additive steps from the reference rate, then one
    /// multiplicative step, and the stage count restarts.
    #[test]
    fn below_eta_the_rate_grows_additively_for_max_stage_updates() {
        let mut h = Hpcc::new(HpccParams {
            max_stage: 2,
            fast_react: false,
            ..HpccParams::default()
        });
        let mut a = Actions::default();
        let mut ctx = CcContext::with_facts(Time::ZERO, LINE, 0, 0, path(), &[], &mut a);
        h.on_start(&mut ctx);
        h.cur_rate = 50e9;
        ack(&mut h, 1000, 100_000, &[hop(0, 0, 0)]);
        let mut rates = Vec::new();
        for k in 1..=3u64 {
            // 25 Gb/s through the hop each 8 µs: u = 0.25 < η.
            let a = ack(
                &mut h,
                1000 + k * 100_000,
                100_000 + k * 100_000,
                &[hop(8000 * k, 25_000 * k, 0)],
            );
            rates.push(a.rate.unwrap().bps() as f64);
        }
        assert!((rates[0] - (50e9 + 40e6)).abs() < 1.0, "{rates:?}");
        assert!((rates[1] - (50e9 + 80e6)).abs() < 1.0, "{rates:?}");
        // Third: the stage count reached max_stage: Rc / (u/η) + AI, capped at line.
        let expect = ((50e9f64 + 80e6) / (0.25 / 0.95) + 40e6).min(100e9);
        assert!((rates[2] - expect).abs() < 1e3, "{rates:?}");
        assert_eq!(h.inc_stage, 0);
    }

    #[test]
    fn the_quick_conversion_gives_what_as_f64_gives_below_2_to_the_63() {
        let mut x: u64 = 1;
        let mut edges = vec![0, 1, (1 << 53) + 1, (1 << 63) - 1, i64::MAX as u64];
        // Every size of number, with low bits that must round as `as f64` rounds them.
        while x < 1 << 62 {
            edges.extend([
                x,
                x + 1,
                x * 3 + 1,
                x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 2,
            ]);
            x *= 2;
        }
        for v in edges {
            assert_eq!(float(v).to_bits(), (v as f64).to_bits(), "{v}");
        }
        assert_eq!(float(u64::MAX), 2f64.powi(63));
    }

    #[test]
    fn fast_react_does_not_commit_the_reference_rate() {
        let mut h = started();
        ack(&mut h, 1000, 100_000, &[hop(0, 0, 0)]);
        ack(&mut h, 101_000, 200_000, &[hop(8000, 100_000, 50_000)]);
        let committed = h.cur_rate;
        let a = ack(&mut h, 150_000, 250_000, &[hop(12000, 150_000, 80_000)]);
        assert!(
            a.rate.is_some(),
            "fast react answers between RTT boundaries"
        );
        assert_eq!(h.cur_rate, committed);
    }
}
