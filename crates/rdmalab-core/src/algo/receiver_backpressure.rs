//! Receiver backpressure (SCR §A.8, ECN-like): the receiver tells the sender
//! when it sees congestion at its side; the sender backs off
//! multiplicatively on each notice and creeps back up additively otherwise.
//!
//! * Receiver end, on its QP's RX events, once per `interval` (see
//!   [`super::port_meter`]): congestion is arrivals at its port of at least
//!   `threshold` × line rate, or (with `on_ce`) a CE-marked arrival of this QP
//!   in the window. While congested it sends a backpressure notice out of
//!   band, at most one per `notice_interval`. (Commodity RNICs cannot mark ECN
//!   at the receiver; SCR sends the notice as a peer-domain packet instead.)
//! * Sender end: starts at line rate. On a notice: rate ← max(`min_rate`,
//!   rate × `md_factor`), and the increase timer restarts. Every
//!   `ai_interval` without a notice: rate ← min(line, rate + `ai`); the timer
//!   stops at line rate and restarts with the next notice.
//!
//! The sender keeps its rate as its own state (not the QP's installed rate),
//! so a decrease that is still being installed is not undone by a timer, and
//! schedules each increase one `ai_interval` after the previous one was due
//! (not after it was processed), so a busy control thread does not stretch
//! the AI period.

use super::port_meter::PortMeter;
use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate, Time};

/// First word of a backpressure notice ("BKPR").
pub const NOTICE_TAG: u32 = 0x424B_5052;

/// Timer slot of the additive increase.
const AI_SLOT: usize = 0;

pub const PARAMS: &[ParamSpec] = &[
    p::duration(
        "interval",
        20.0 * p::US,
        1.0,
        1e12,
        "receiver's measurement window",
        "SCR §4.3.1: periodic peer messages once per RTT, \"a typical RTT setting of 20 µs\"",
    ),
    p::float(
        "threshold",
        0.9,
        0.01,
        2.0,
        "port arrivals, as a fraction of line rate, that count as congestion at the receiver",
        "rdmalab's choice: SCR Fig. 20c backpressures a single line-rate WRITE, so a busy port must count",
    ),
    p::boolean("on_ce", true, "a CE-marked arrival also counts as congestion", "SCR §A.8: ECN-like backpressure; the fabric's marks are the classic signal"),
    p::duration(
        "notice_interval",
        100.0 * p::US,
        0.0,
        1e12,
        "smallest gap between two notices",
        "rdmalab's choice: longer than the DPA control loop at both ends (≈ 40 µs) plus one window, so the sender's decrease shows before the next notice (DCQCN paces CNPs at 50 µs for the same reason)",
    ),
    p::float("md_factor", 0.5, 0.01, 1.0, "rate kept on a notice", "rdmalab's choice: halving, TCP's response to an ECN echo (RFC 3168)"),
    p::rate(
        "ai",
        1.0 * p::GBPS,
        1.0,
        1e13,
        "additive increase per ai_interval",
        "rdmalab's choice: small, as SCR Fig. 20c uses \"a small AI factor to extend the AI process\" (1 % of 100 Gb/s)",
    ),
    p::duration("ai_interval", 20.0 * p::US, 1.0, 1e12, "period of the additive increase", "rdmalab's choice: one measurement interval"),
    p::rate("min_rate", 1.0 * p::GBPS, 1.0, 1e13, "rate floor", "rdmalab's choice, as DCQCN's min_rate in ns-3 run.py"),
    p::bytes(
        "l1_overhead",
        20.0,
        0.0,
        1000.0,
        "wire bytes per frame that the port's byte counter does not see",
        "IEEE 802.3: preamble + SFD 8 B and inter-frame gap 12 B (0 for the ns-3 HPCC wire format)",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReceiverBackpressureParams {
    pub interval: Duration,
    pub threshold: f64,
    pub on_ce: bool,
    pub notice_interval: Duration,
    pub md_factor: f64,
    pub ai: Rate,
    pub ai_interval: Duration,
    pub min_rate: Rate,
    pub l1_overhead: u32,
}

impl ReceiverBackpressureParams {
    pub fn from_values(v: &ParamValues) -> Self {
        ReceiverBackpressureParams {
            interval: v.duration("interval"),
            threshold: v.get("threshold"),
            on_ce: v.flag("on_ce"),
            notice_interval: v.duration("notice_interval"),
            md_factor: v.get("md_factor"),
            ai: v.rate("ai"),
            ai_interval: v.duration("ai_interval"),
            min_rate: v.rate("min_rate"),
            l1_overhead: v.bytes("l1_overhead") as u32,
        }
    }
}

impl Default for ReceiverBackpressureParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

/// Both ends of one QP; they share nothing but the notices.
#[derive(Clone, Debug)]
pub struct ReceiverBackpressure {
    p: ReceiverBackpressureParams,
    // Receiver end.
    meter: PortMeter,
    last_notice: Option<Time>,
    notices_sent: u64,
    // Sender end.
    rate: Rate,
    /// When the next increase is due (meaningful while the timer is armed).
    next_increase: Time,
    notices_received: u64,
}

impl ReceiverBackpressure {
    pub fn new(p: ReceiverBackpressureParams) -> Self {
        ReceiverBackpressure {
            p,
            meter: PortMeter::new(p.interval, p.l1_overhead),
            last_notice: None,
            notices_sent: 0,
            rate: Rate(0),
            next_increase: Time::ZERO,
            notices_received: 0,
        }
    }

    pub fn notices_sent(&self) -> u64 {
        self.notices_sent
    }

    pub fn notices_received(&self) -> u64 {
        self.notices_received
    }

    /// The sender end's dequeue rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Arm the increase timer one `ai_interval` after `from`.
    fn arm_increase(&mut self, from: Time, ctx: &mut CcContext) {
        self.next_increase = from + self.p.ai_interval;
        ctx.set_timer(AI_SLOT, self.next_increase);
    }
}

impl Controller for ReceiverBackpressure {
    fn name(&self) -> &str {
        "receiver-backpressure"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::RX | EventMask::PEER)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.rate = ctx.line_rate;
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Rx { bytes, ce, .. } => {
                let Some(r) = self.meter.on_rx(bytes, ce, ctx) else {
                    return;
                };
                let congested = r.utilization >= self.p.threshold || (self.p.on_ce && r.ce);
                let due = self
                    .last_notice
                    .map_or(true, |t| ctx.now - t >= self.p.notice_interval);
                if congested && due {
                    self.last_notice = Some(ctx.now);
                    self.notices_sent += 1;
                    let permille =
                        (r.utilization * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32;
                    ctx.send_oob([NOTICE_TAG, self.notices_sent as u32, permille, r.ce as u32]);
                }
            }
            CcEvent::Peer {
                words: [NOTICE_TAG, ..],
                to_receiver: false,
            } => {
                self.notices_received += 1;
                let lo = self.p.min_rate.min(ctx.line_rate);
                self.rate = self.rate.scale(self.p.md_factor).max(lo);
                ctx.set_rate(self.rate);
                self.arm_increase(ctx.now, ctx);
            }
            CcEvent::Timer { slot } if slot as usize == AI_SLOT => {
                self.rate = Rate(self.rate.bps() + self.p.ai.bps()).min(ctx.line_rate);
                ctx.set_rate(self.rate);
                if self.rate < ctx.line_rate {
                    self.arm_increase(self.next_increase, ctx);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Actions, NicFacts};

    const LINE: Rate = Rate::gbps(100);

    fn ctx_at<'a>(us: u64, a: &'a mut Actions) -> CcContext<'a> {
        let mut ctx = CcContext::new(Time(us * 1_000_000), LINE, LINE, 0, a);
        ctx.path.mtu = 1000;
        ctx
    }

    fn rx(b: &mut ReceiverBackpressure, us: u64, rx_payload: u64, ce: bool) -> Actions {
        let mut a = Actions::default();
        let mut ctx = ctx_at(us, &mut a);
        ctx.at_receiver = true;
        ctx.nic = NicFacts {
            rx_payload,
            rx_bytes: rx_payload,
            ..Default::default()
        };
        b.on_event(
            &CcEvent::Rx {
                bytes: 1000,
                packets: 1,
                ce,
            },
            &mut ctx,
        );
        a
    }

    fn sender(b: &mut ReceiverBackpressure, us: u64, ev: CcEvent) -> Actions {
        let mut a = Actions::default();
        let mut ctx = ctx_at(us, &mut a);
        b.on_event(&ev, &mut ctx);
        a
    }

    fn started() -> ReceiverBackpressure {
        let mut b = ReceiverBackpressure::new(ReceiverBackpressureParams {
            l1_overhead: 0,
            ..Default::default()
        });
        let mut a = Actions::default();
        b.on_start(&mut ctx_at(0, &mut a));
        b
    }

    const NOTICE: CcEvent = CcEvent::Peer {
        words: [NOTICE_TAG, 1, 950, 0],
        to_receiver: false,
    };
    const TICK: CcEvent = CcEvent::Timer {
        slot: AI_SLOT as u8,
    };

    #[test]
    fn a_busy_port_sends_notices_at_most_once_per_notice_interval() {
        let mut b = started();
        rx(&mut b, 0, 0, false);
        // 237.5 KB per 20 µs = 95 Gb/s ≥ 90 %: a notice.
        let w = rx(&mut b, 20, 237_500, false).oob.expect("notice");
        assert_eq!((w[0], w[1], w[2]), (NOTICE_TAG, 1, 950));
        for (i, us) in [40u64, 60, 80, 100].iter().enumerate() {
            assert_eq!(
                rx(&mut b, *us, 237_500 * (i as u64 + 2), false).oob,
                None,
                "capped at {us} µs"
            );
        }
        assert!(
            rx(&mut b, 120, 237_500 * 6, false).oob.is_some(),
            "100 µs after the first"
        );
        assert_eq!(b.notices_sent(), 2);
    }

    #[test]
    fn a_quiet_port_stays_silent_unless_marked() {
        let mut b = started();
        rx(&mut b, 0, 0, false);
        // 50 Gb/s: below the threshold.
        assert_eq!(rx(&mut b, 20, 125_000, false).oob, None);
        // A CE mark in the window counts as congestion.
        let w = rx(&mut b, 40, 250_000, true).oob.expect("notice on CE");
        assert_eq!(w[3], 1);
    }

    #[test]
    fn the_sender_halves_on_a_notice_and_adds_ai_per_tick_up_to_the_line() {
        let mut b = started();
        let a = sender(&mut b, 10, NOTICE);
        assert_eq!(a.rate, Some(Rate::gbps(50)));
        assert_eq!(
            a.timers[AI_SLOT],
            Some(Some(Time(30_000_000))),
            "AI one ai_interval after the decrease"
        );
        // A tick processed late still schedules the next one a period after it was due.
        let a = sender(&mut b, 33, TICK);
        assert_eq!(a.rate, Some(Rate::gbps(51)));
        assert_eq!(a.timers[AI_SLOT], Some(Some(Time(50_000_000))));
        assert_eq!(sender(&mut b, 50, NOTICE).rate, Some(Rate::mbps(25_500)));
        // Back to the line in 1 Gb/s steps; the timer stops there.
        let mut last = Actions::default();
        for i in 0..200 {
            last = sender(&mut b, 70 + 20 * i, TICK);
            if b.rate() == LINE {
                break;
            }
        }
        assert_eq!(last.rate, Some(LINE));
        assert_eq!(last.timers[AI_SLOT], None, "no more increases at line rate");
        assert_eq!(b.notices_received(), 2);
    }

    #[test]
    fn repeated_notices_stop_at_the_floor() {
        let mut b = started();
        for i in 0..20 {
            sender(&mut b, i, NOTICE);
        }
        assert_eq!(b.rate(), Rate::gbps(1));
    }
}
