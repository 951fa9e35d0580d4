//! DCTCP for RDMA (Alizadeh et al., SIGCOMM'10) in the rate-based form of the
//! ns-3 HPCC simulator (`HandleAckDctcp`, "hardware DCTCP"): line-rate start,
//! ECN echoed per ACK.
//!
//! * Once per window of data (the first ACK past the byte sequence recorded
//!   at the last update): `α ← (1 − g)·α + g·F`, F = marked ACKs / packets in
//!   the window; then, outside CWR, the rate grows by `rate_ai`.
//! * On an ECN-echo outside CWR: `R ← max(min_rate, R·(1 − α/2))`, and CWR
//!   lasts until the bytes sent at that moment are acknowledged.
//!
//! With `window`, the same α and CWR drive a congestion window instead of a
//! rate, as SRNIC's hardware DCTCP does (NSDI'23 §5 "Congestion Control":
//! window-based, updated by ACKs, applied when the QP is scheduled). The
//! window starts at the path's BDP (the line-rate start of the rate form),
//! is cut to `cwnd·(1 − α/2)` (at least one MTU) on an ECN-echo outside CWR,
//! and otherwise grows by one MTU per window of acknowledged bytes (TCP's
//! congestion avoidance, RFC 5681), only while the window limits the QP
//! (RFC 7661), so an idle or rate-bound QP does not inflate it. The rate
//! stays at line rate: ACKs clock the QP.
//!
//! Switches should mark with a step at K (Kmin = Kmax, Pmax = 1): ns-3 run.py
//! uses K = 30 KB per 10 Gb/s.

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::Rate;

pub const PARAMS: &[ParamSpec] = &[
    p::float(
        "g",
        1.0 / 16.0,
        1e-9,
        1.0,
        "α gain g",
        "DCTCP paper; Linux dctcp_shift_g = 4; ns-3 run.py EWMA_GAIN for dctcp",
    ),
    p::rate(
        "rate_ai",
        615.0 * p::MBPS,
        1.0,
        1e13,
        "rate increase per window without marks",
        "ns-3 run.py DCTCP_RATE_AI (≈ 1 MTU per 13 µs RTT)",
    )
    .not_with("window"),
    p::rate(
        "min_rate",
        1.0 * p::GBPS,
        1.0,
        1e13,
        "rate floor",
        "ns-3 run.py MIN_RATE",
    )
    .not_with("window"),
    p::boolean(
        "window",
        false,
        "drive a congestion window (ACK-clocked) instead of a rate",
        "SRNIC NSDI'23 §5 (window-based hardware DCTCP); off: ns-3 HPCC's rate form",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DctcpParams {
    pub g: f64,
    pub rate_ai: Rate,
    pub min_rate: Rate,
    pub window: bool,
}

impl DctcpParams {
    pub fn from_values(v: &ParamValues) -> Self {
        DctcpParams {
            g: v.get("g"),
            rate_ai: v.rate("rate_ai"),
            min_rate: v.rate("min_rate"),
            window: v.flag("window"),
        }
    }
}

impl Default for DctcpParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    p: DctcpParams,
    rate: f64,
    alpha: f64,
    last_update_seq: u64,
    batch_packets: u64,
    marked: u64,
    in_cwr: bool,
    cwr_until: u64,
    /// Congestion window, bytes (`window` mode only).
    cwnd: f64,
}

impl Dctcp {
    pub fn new(p: DctcpParams) -> Self {
        Dctcp {
            p,
            rate: 0.0,
            alpha: 1.0,
            last_update_seq: 0,
            batch_packets: 1,
            marked: 0,
            in_cwr: false,
            cwr_until: 0,
            cwnd: 0.0,
        }
    }
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl Controller for Dctcp {
    fn name(&self) -> &str {
        "dctcp"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::ACK)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.rate = ctx.line_rate.bps() as f64;
        if self.p.window {
            let mtu = ctx.path.mtu.max(1) as u64;
            self.cwnd = ctx.path.bdp_bytes().max(mtu) as f64;
            ctx.set_window(Some(self.cwnd as u64));
        }
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        let CcEvent::Ack {
            acked_through, ece, ..
        } = *ev
        else {
            return;
        };
        let mtu = ctx.path.mtu.max(1) as u64;
        let line = ctx.line_rate.bps() as f64;
        let mut new_batch = false;
        self.marked += ece as u64;
        if acked_through > self.last_update_seq {
            new_batch = true;
            if self.last_update_seq == 0 {
                self.batch_packets = ctx.snd_nxt_bytes / mtu + 1;
            } else {
                let frac = (self.marked as f64 / self.batch_packets as f64).min(1.0);
                self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g * frac;
                self.marked = 0;
                self.batch_packets = ctx.snd_nxt_bytes.saturating_sub(acked_through) / mtu + 1;
            }
            self.last_update_seq = ctx.snd_nxt_bytes;
        }
        if self.in_cwr && acked_through > self.cwr_until {
            self.in_cwr = false;
        }
        if self.p.window {
            self.update_window(ev, ece, mtu, ctx);
            return;
        }
        let before = self.rate;
        if ece && !self.in_cwr {
            self.rate = (self.rate * (1.0 - self.alpha / 2.0)).max(self.p.min_rate.bps() as f64);
            self.in_cwr = true;
            self.cwr_until = ctx.snd_nxt_bytes;
        }
        if !self.in_cwr && new_batch {
            self.rate = (self.rate + self.p.rate_ai.bps() as f64).min(line);
        }
        if self.rate != before {
            ctx.set_rate(Rate(self.rate.round().max(1.0) as u64));
        }
    }
}

impl Dctcp {
    /// `window` mode: the cut and the growth act on the congestion window.
    fn update_window(&mut self, ev: &CcEvent, ece: bool, mtu: u64, ctx: &mut CcContext) {
        let CcEvent::Ack { acked_bytes, .. } = *ev else {
            return;
        };
        let before = self.cwnd;
        let mtu = mtu as f64;
        if ece && !self.in_cwr {
            self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(mtu);
            self.in_cwr = true;
            self.cwr_until = ctx.snd_nxt_bytes;
        } else if !self.in_cwr && (ctx.bytes_in_flight as f64) + mtu >= self.cwnd {
            self.cwnd += mtu * acked_bytes as f64 / self.cwnd;
        }
        if self.cwnd as u64 != before as u64 {
            ctx.set_window(Some(self.cwnd as u64));
        }
    }

    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Actions;
    use crate::time::{Duration, Time};

    const LINE: Rate = Rate::gbps(100);

    fn ack(d: &mut Dctcp, through: u64, snd_nxt: u64, ece: bool) -> Option<Rate> {
        ack_in_flight(d, through, snd_nxt, 0, ece).rate
    }

    fn started() -> Dctcp {
        let mut d = Dctcp::new(DctcpParams::default());
        let mut a = Actions::default();
        d.on_start(&mut CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a));
        d
    }

    #[test]
    fn a_mark_cuts_by_alpha_over_two_once_per_window() {
        let mut d = started();
        // α starts at 1: the first mark halves the rate.
        let r = ack(&mut d, 1000, 20_000, true).unwrap();
        assert_eq!(r, Rate::gbps(50));
        // More marks inside the same window (CWR) do nothing.
        assert_eq!(ack(&mut d, 2000, 21_000, true), None);
        assert_eq!(ack(&mut d, 3000, 22_000, true), None);
    }

    #[test]
    fn alpha_tracks_the_marked_fraction() {
        let mut d = started();
        ack(&mut d, 1000, 10_000, false); // first window: batch of 11 packets
                                          // Ten ACKs, none marked, then a window boundary: α ← (1 − g)·1 + g·0.
        for i in 2..=10 {
            ack(&mut d, i * 1000, 10_000, false);
        }
        ack(&mut d, 11_000, 20_000, false);
        assert!((d.alpha() - 15.0 / 16.0).abs() < 1e-12, "{}", d.alpha());
    }

    #[test]
    fn unmarked_windows_increase_by_rate_ai() {
        let mut d = started();
        d.rate = 50e9;
        let r = ack(&mut d, 1000, 10_000, false).unwrap();
        assert!((r.bps() as f64 - 50.615e9).abs() < 1.0);
        assert_eq!(
            ack(&mut d, 2000, 10_000, false),
            None,
            "no increase inside a window"
        );
    }

    fn windowed() -> (Dctcp, Actions) {
        let mut d = Dctcp::new(DctcpParams {
            window: true,
            ..DctcpParams::default()
        });
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a);
        ctx.path.mtu = 1000;
        ctx.path.base_rtt = Duration::from_us(8);
        d.on_start(&mut ctx);
        (d, a)
    }

    fn ack_in_flight(d: &mut Dctcp, through: u64, snd_nxt: u64, flight: u64, ece: bool) -> Actions {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a);
        ctx.snd_nxt_bytes = snd_nxt;
        ctx.bytes_in_flight = flight;
        ctx.path.mtu = 1000;
        d.on_event(
            &CcEvent::Ack {
                acked_bytes: 1000,
                acked_through: through,
                rtt: Duration::from_us(10),
                ece,
                hops: 1,
            },
            &mut ctx,
        );
        a
    }

    #[test]
    fn window_mode_starts_at_the_bdp_and_never_sets_a_rate() {
        let (d, a) = windowed();
        assert_eq!(a.window, Some(Some(100_000)), "100 Gb/s × 8 µs");
        assert_eq!(a.rate, None);
        assert_eq!(d.cwnd(), 100_000.0);
    }

    #[test]
    fn window_mode_cuts_the_window_by_alpha_over_two_once_per_window() {
        let (mut d, _) = windowed();
        let a = ack_in_flight(&mut d, 1000, 100_000, 99_000, true);
        assert_eq!(a.window, Some(Some(50_000)), "α = 1 halves it");
        assert_eq!(a.rate, None, "the rate is never touched");
        let a = ack_in_flight(&mut d, 2000, 100_000, 98_000, true);
        assert_eq!(a.window, None, "CWR: one cut per window");
    }

    #[test]
    fn window_mode_grows_one_mtu_per_window_only_when_window_limited() {
        let (mut d, _) = windowed();
        // Window-limited: 100 ACKs of 1000 B on a 100 KB window add ~1 MTU.
        for i in 1..=100u64 {
            let flight = d.cwnd() as u64 - 500;
            ack_in_flight(&mut d, i * 1000, 100_000 + i * 1000, flight, false);
        }
        assert!((d.cwnd() - 101_000.0).abs() < 10.0, "{}", d.cwnd());
        // Not window-limited (half the window in flight): no growth.
        let before = d.cwnd();
        for i in 101..=200u64 {
            ack_in_flight(&mut d, i * 1000, 300_000, 50_000, false);
        }
        assert_eq!(d.cwnd(), before);
    }
}
