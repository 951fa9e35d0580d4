//! Swift (Kumar et al., SIGCOMM'20): delay-based AIMD on a congestion window
//! against a target delay that scales with hops and with the window (flow
//! scaling), as in Google's Falcon reference implementation
//! (Isekai `rue/algorithm/swift`).
//!
//! * target = base_delay + hops·per_hop_delay + clamp(α/√cwnd + β, 0, fs_range),
//!   α = fs_range / (1/√fs_min_cwnd − 1/√fs_max_cwnd), β = −α/√fs_max_cwnd.
//! * On an ACK with delay < target: cwnd += ai·acked/cwnd (cwnd ≥ 1) or ai·acked.
//!   Otherwise, at most once per RTT: cwnd ×= 1 − min(β_md·(delay − target)/delay, max_mdf).
//! * NACK or timeout: cwnd ×= 1 − max_mdf, at most once per RTT.
//! * cwnd in [min_cwnd, max_cwnd] packets.
//!
//! Two ways to apply it (`mode`): `window` (the paper: a window of cwnd
//! packets, paced at one packet per RTT/cwnd when cwnd < 1), or `rate` (SCR
//! on the BlueField-3 DPA, whose knob is a rate: R = cwnd·MTU / RTT clamped
//! to [min_rate, max_rate]). Delay here is the measured RTT (the simulated
//! NIC adds no processing delay, so RTT is fabric delay plus serialisation).

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::state::fixed::{fxp16, fxp_log2, fxp_power2};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate, Time};

pub const PARAMS: &[ParamSpec] = &[
    p::duration(
        "base_delay",
        25.0 * p::US,
        0.0,
        1e12,
        "base target delay",
        "Falcon/Isekai fabric base_delay; Swift paper",
    ),
    p::duration(
        "per_hop_delay",
        1.0 * p::US,
        0.0,
        1e12,
        "target added per switch hop",
        "Falcon topo_scaling_per_hop",
    ),
    p::duration(
        "fs_range",
        100.0 * p::US,
        0.0,
        1e12,
        "flow-scaling range",
        "Falcon max_flow_scaling",
    ),
    p::float(
        "fs_min_cwnd",
        0.1,
        1e-6,
        1e6,
        "window (packets) at which flow scaling is largest; below fs_max_cwnd",
        "Falcon min_flow_scaling_window",
    ),
    p::float(
        "fs_max_cwnd",
        256.0,
        1e-6,
        1e9,
        "window (packets) at which flow scaling is 0",
        "Falcon max_flow_scaling_window",
    ),
    p::float(
        "ai",
        1.0,
        0.0,
        1e6,
        "additive increase, packets per RTT",
        "Falcon fabric_additive_increment_factor",
    ),
    p::float(
        "beta",
        0.8,
        0.0,
        1.0,
        "multiplicative decrease factor",
        "Falcon fabric_multiplicative_decrease_factor",
    ),
    p::float(
        "max_mdf",
        0.5,
        0.0,
        1.0,
        "largest decrease per RTT",
        "Falcon max_fabric_multiplicative_decrease",
    ),
    p::float(
        "min_cwnd",
        0.01,
        1e-6,
        1e9,
        "smallest window, packets",
        "Falcon min_fabric_congestion_window",
    ),
    p::float(
        "max_cwnd",
        256.0,
        1e-6,
        1e9,
        "largest window, packets",
        "Falcon max_fabric_congestion_window",
    ),
    p::boolean(
        "rate_mode",
        false,
        "apply as a dequeue rate (SCR on the DPA) instead of a window",
        "SCR §A.7: window translated to rate via the BDP",
    ),
    p::rate(
        "min_rate",
        1.0 * p::GBPS,
        1.0,
        1e13,
        "rate floor in rate mode",
        "rdmalab choice (SCR Fig. 18 uses 32 Gb/s)",
    ),
    p::rate(
        "max_rate",
        1e13,
        1.0,
        1e13,
        "rate ceiling in rate mode (capped at line rate)",
        "rdmalab choice (SCR Fig. 18 uses 96 Gb/s)",
    ),
    p::boolean(
        "fixed_point",
        false,
        "compute the window and target in 16-bit fixed point, as on the DPA",
        "SCR §A.7: fixed-point and bitwise operations instead of floating point and sqrt",
    ),
    p::boolean(
        "header_timestamps",
        false,
        "carry each packet's send time in the extensible CC header (words 0-1, needs control.cc_header of 8B or more) and take the RTT from its echo, instead of the NIC's timestamp",
        "SwCC ATC'25 Table 3: Swift's timestamp signal travels in the CC header",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwiftParams {
    pub base_delay: Duration,
    pub per_hop_delay: Duration,
    pub fs_range: Duration,
    pub fs_min_cwnd: f64,
    pub fs_max_cwnd: f64,
    pub ai: f64,
    pub beta: f64,
    pub max_mdf: f64,
    pub min_cwnd: f64,
    pub max_cwnd: f64,
    pub rate_mode: bool,
    pub min_rate: Rate,
    pub max_rate: Rate,
    pub fixed_point: bool,
    pub header_timestamps: bool,
}

impl SwiftParams {
    pub fn from_values(v: &ParamValues) -> Self {
        SwiftParams {
            base_delay: v.duration("base_delay"),
            per_hop_delay: v.duration("per_hop_delay"),
            fs_range: v.duration("fs_range"),
            fs_min_cwnd: v.get("fs_min_cwnd"),
            fs_max_cwnd: v.get("fs_max_cwnd"),
            ai: v.get("ai"),
            beta: v.get("beta"),
            max_mdf: v.get("max_mdf"),
            min_cwnd: v.get("min_cwnd"),
            max_cwnd: v.get("max_cwnd"),
            rate_mode: v.flag("rate_mode"),
            min_rate: v.rate("min_rate"),
            max_rate: v.rate("max_rate"),
            fixed_point: v.flag("fixed_point"),
            header_timestamps: v.flag("header_timestamps"),
        }
    }
}

impl Default for SwiftParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

#[derive(Clone, Debug)]
pub struct Swift {
    p: SwiftParams,
    /// Congestion window, packets.
    cwnd: f64,
    last_decrease: Option<Time>,
    /// Latest RTT sample, ps.
    rtt_ps: f64,
}

impl Swift {
    pub fn new(p: SwiftParams) -> Self {
        Swift {
            p,
            cwnd: 1.0,
            last_decrease: None,
            rtt_ps: 0.0,
        }
    }

    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Target delay in ps for `hops` switches at the current window.
    pub fn target_ps(&self, hops: u8) -> f64 {
        if self.p.fixed_point {
            return self.target_ps_fixed(hops);
        }
        let p = &self.p;
        let range = p.fs_range.ps() as f64;
        let inv = |w: f64| 1.0 / w.sqrt();
        let denom = inv(p.fs_min_cwnd) - inv(p.fs_max_cwnd);
        let fs = if range > 0.0 && denom > 0.0 {
            let alpha = range / denom;
            let beta = -alpha * inv(p.fs_max_cwnd);
            (alpha * inv(self.cwnd) + beta).clamp(0.0, range)
        } else {
            0.0
        };
        p.base_delay.ps() as f64 + hops as f64 * p.per_hop_delay.ps() as f64 + fs
    }

    /// The target as the DPA computes it: 1/√cwnd = 2^(−log2(cwnd)/2) in
    /// 16-bit fixed point (DOCA's `fxp_log2` / `fxp_power2`), times in ns.
    fn target_ps_fixed(&self, hops: u8) -> f64 {
        let p = &self.p;
        let range_ns = (p.fs_range.ps() / 1000) as i64;
        let inv = |w: f64| fxp_power2(-fxp_log2(fxp16(w)) / 2) as i64;
        let denom = inv(p.fs_min_cwnd) - inv(p.fs_max_cwnd);
        let fs_ns = if range_ns > 0 && denom > 0 {
            // alpha = range / denom (ns per fxp16 unit); fs = alpha·(inv(cwnd) − inv(max)).
            let num = range_ns * (inv(self.cwnd) - inv(p.fs_max_cwnd));
            (num / denom).clamp(0, range_ns)
        } else {
            0
        };
        let ns = (p.base_delay.ps() / 1000) as i64
            + hops as i64 * (p.per_hop_delay.ps() / 1000) as i64
            + fs_ns;
        (ns * 1000) as f64
    }

    /// Round the window to 16-bit fixed point (the DPA keeps it as fxp16 packets).
    fn quantize(&mut self) {
        if self.p.fixed_point {
            self.cwnd = fxp16(self.cwnd) as f64 / 65536.0;
        }
    }

    fn can_decrease(&self, now: Time) -> bool {
        match self.last_decrease {
            None => true,
            Some(t) => (now - t).ps() as f64 >= self.rtt_ps,
        }
    }

    fn apply(&self, ctx: &mut CcContext) {
        let mtu = ctx.path.mtu as f64;
        let line = ctx.line_rate.bps() as f64;
        let rtt_s = (if self.rtt_ps > 0.0 {
            self.rtt_ps
        } else {
            ctx.path.base_rtt.ps() as f64
        }) / 1e12;
        if self.p.rate_mode {
            let hi = (self.p.max_rate.bps() as f64).min(line);
            let lo = (self.p.min_rate.bps() as f64).min(hi);
            let r = (self.cwnd * mtu * 8.0 / rtt_s).clamp(lo, hi);
            ctx.set_rate(Rate(r.round() as u64));
        } else if self.cwnd >= 1.0 {
            ctx.set_window(Some((self.cwnd * mtu).round() as u64));
            ctx.set_rate(ctx.line_rate);
        } else {
            // Below one packet: one packet in flight, paced at RTT / cwnd apart.
            ctx.set_window(Some(mtu as u64));
            let r = (self.cwnd * mtu * 8.0 / rtt_s).clamp(1.0, line);
            ctx.set_rate(Rate(r.round() as u64));
        }
    }
}

impl Controller for Swift {
    fn name(&self) -> &str {
        "swift"
    }
    fn subscriptions(&self) -> EventMask {
        let tx = if self.p.header_timestamps {
            EventMask::TX
        } else {
            0
        };
        EventMask(EventMask::ACK | EventMask::NACK | EventMask::TIMEOUT | tx)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        // Start at the line-rate window (like the other built-ins, no slow start).
        let bdp_pkts = ctx.path.bdp_bytes() as f64 / ctx.path.mtu.max(1) as f64;
        self.cwnd = bdp_pkts.clamp(self.p.min_cwnd, self.p.max_cwnd);
        self.apply(ctx);
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        let before = self.cwnd;
        match *ev {
            CcEvent::Tx { .. } => {
                // The send time, in ps, for the receiver to echo (SwCC's header).
                let ps = ctx.now.ps();
                ctx.set_header_word(0, ps as u32);
                ctx.set_header_word(1, (ps >> 32) as u32);
                return;
            }
            CcEvent::Ack {
                acked_bytes,
                rtt,
                hops,
                ..
            } => {
                self.rtt_ps = match (self.p.header_timestamps, ctx.header) {
                    (true, [lo, hi, ..]) => {
                        ctx.now.ps().saturating_sub((*hi as u64) << 32 | *lo as u64) as f64
                    }
                    _ => rtt.ps() as f64,
                };
                let delay = self.rtt_ps;
                let acked = acked_bytes as f64 / ctx.path.mtu.max(1) as f64;
                let target = self.target_ps(hops);
                if delay < target {
                    self.cwnd += if self.cwnd >= 1.0 {
                        self.p.ai * acked / self.cwnd
                    } else {
                        self.p.ai * acked
                    };
                } else if self.can_decrease(ctx.now) {
                    let md = (self.p.beta * (delay - target) / delay).min(self.p.max_mdf);
                    self.cwnd *= 1.0 - md;
                    self.last_decrease = Some(ctx.now);
                }
            }
            CcEvent::Nack { .. } | CcEvent::Timeout => {
                if self.can_decrease(ctx.now) {
                    self.cwnd *= 1.0 - self.p.max_mdf;
                    self.last_decrease = Some(ctx.now);
                }
            }
            _ => return,
        }
        self.cwnd = self.cwnd.clamp(self.p.min_cwnd, self.p.max_cwnd);
        self.quantize();
        if self.cwnd != before || self.p.rate_mode {
            self.apply(ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Actions, PathFacts};

    const LINE: Rate = Rate::gbps(100);

    fn facts() -> PathFacts {
        PathFacts {
            line_rate: LINE,
            base_rtt: Duration::from_us(10),
            hops: 1,
            mtu: 1000,
            packet_overhead: 82,
        }
    }

    fn ack(s: &mut Swift, now_us: u64, rtt_us: f64, acked: u64) -> Actions {
        let mut a = Actions::default();
        let mut ctx =
            CcContext::with_facts(Time(now_us * 1_000_000), LINE, 0, 0, facts(), &[], &mut a);
        s.on_event(
            &CcEvent::Ack {
                acked_bytes: acked,
                acked_through: 0,
                rtt: Duration((rtt_us * 1e6) as u64),
                ece: false,
                hops: 1,
            },
            &mut ctx,
        );
        a
    }

    #[test]
    fn header_timestamps_take_the_rtt_from_the_echoed_stamp() {
        let p = SwiftParams {
            header_timestamps: true,
            ..SwiftParams::default()
        };
        let mut s = Swift::new(p);
        assert!(s.subscriptions().has(EventMask::TX));
        // TX at 5 us: the controller stamps the header.
        let mut a = Actions::default();
        let mut ctx = CcContext::with_facts(Time(5_000_000), LINE, 0, 0, facts(), &[], &mut a);
        s.on_event(
            &CcEvent::Tx {
                bytes: 1000,
                packets: 1,
            },
            &mut ctx,
        );
        assert_eq!(a.header_mask & 0b11, 0b11);
        let stamp = a.header;
        // Its ACK at 47 us: 42 us from the stamp, whatever the NIC says.
        let mut a = Actions::default();
        let mut ctx = CcContext::with_facts(Time(47_000_000), LINE, 0, 0, facts(), &[], &mut a);
        ctx.header = &stamp[..2];
        s.on_event(
            &CcEvent::Ack {
                acked_bytes: 1000,
                acked_through: 0,
                rtt: Duration::from_us(7),
                ece: false,
                hops: 1,
            },
            &mut ctx,
        );
        assert_eq!(s.rtt_ps, 42e6);
    }

    #[test]
    fn flow_scaling_raises_the_target_for_small_windows() {
        let mut s = Swift::new(SwiftParams::default());
        s.cwnd = 256.0;
        assert!(
            (s.target_ps(1) - 26e6).abs() < 1.0,
            "no flow scaling at fs_max_cwnd"
        );
        s.cwnd = 0.1;
        assert!(
            (s.target_ps(1) - 126e6).abs() < 1.0,
            "full range at fs_min_cwnd"
        );
        s.cwnd = 4.0;
        let t = s.target_ps(3);
        assert!(t > 28e6 && t < 128e6);
    }

    #[test]
    fn below_target_the_window_grows_by_ai_per_rtt() {
        let mut s = Swift::new(SwiftParams::default());
        s.cwnd = 10.0;
        // Ten ACKs of one packet each at cwnd 10 ≈ +1 packet.
        for i in 0..10 {
            ack(&mut s, i, 5.0, 1000);
        }
        assert!((s.cwnd() - 11.0).abs() < 0.05, "{}", s.cwnd());
    }

    #[test]
    fn above_target_the_window_shrinks_once_per_rtt() {
        let mut s = Swift::new(SwiftParams::default());
        s.cwnd = 100.0;
        let target = s.target_ps(1) / 1e6;
        let delay = target * 2.0;
        ack(&mut s, 0, delay, 1000);
        // β·(delay − target)/delay = 0.4
        assert!((s.cwnd() - 60.0).abs() < 1e-6, "{}", s.cwnd());
        ack(&mut s, 1, delay, 1000);
        assert!(
            (s.cwnd() - 60.0).abs() < 1e-6,
            "a second decrease within one RTT is ignored"
        );
        ack(&mut s, 2000, delay * 10.0, 1000);
        assert!(
            (s.cwnd() - 30.0).abs() < 1e-6,
            "capped at max_mdf: {}",
            s.cwnd()
        );
    }

    #[test]
    fn the_fixed_point_target_matches_floating_point_within_a_nanosecond_scale() {
        let float = Swift::new(SwiftParams::default());
        let mut fp = SwiftParams::default();
        fp.fixed_point = true;
        let fixed = Swift::new(fp);
        for w in [0.1, 0.5, 1.0, 3.7, 10.0, 64.0, 200.0, 256.0] {
            let (mut a, mut b) = (float.clone(), fixed.clone());
            a.cwnd = w;
            b.cwnd = w;
            let (x, y) = (a.target_ps(2), b.target_ps(2));
            // Within 0.1 % of the range (fxp16 rounding of 1/√cwnd) plus 1 ns truncation.
            assert!(
                (x - y).abs() <= 100e6 * 1e-3 + 1000.0,
                "cwnd {w}: {x} vs {y}"
            );
        }
    }

    #[test]
    fn rate_mode_turns_the_window_into_a_clamped_rate() {
        let mut p = SwiftParams::default();
        p.rate_mode = true;
        p.min_rate = Rate::gbps(32);
        p.max_rate = Rate::gbps(96);
        let mut s = Swift::new(p);
        s.cwnd = 100.0;
        let a = ack(&mut s, 0, 10.0, 1000);
        // 100.1 packets × 1000 B / 10 µs ≈ 80 Gb/s.
        let r = a.rate.unwrap().as_gbps();
        assert!((r - 80.08).abs() < 0.1, "{r}");
        s.cwnd = 1000.0;
        assert_eq!(ack(&mut s, 1, 10.0, 1000).rate, Some(Rate::gbps(96)));
    }
}
