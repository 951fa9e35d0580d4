//! The receiver's view of its own port, for receiver-driven controllers
//! (SCR §A.8: "the receiver-side SCR monitors the real-time bandwidth
//! utilization of the given port").
//!
//! The receiver end of a QP reads its NIC's cumulative arrival counters
//! (`ctx.nic.rx_bytes`, frame bytes; `ctx.nic.rx_payload`, data payload) and
//! adds up the payload of its own QP from its RX events. Every time an RX
//! event comes at least `interval` after the start of the current window it
//! closes the window and reports what arrived: the port's arrival rate on the
//! wire and the share of the payload that was this QP's. RX events are the
//! trigger because they are the receiver's only periodic signal (controller
//! timers fire at the sender); a QP that receives nothing needs no control.
//!
//! Counters count frames, not what the wire adds around them (preamble, SFD,
//! inter-frame gap), while line rates and dequeue rates are wire rates. The
//! meter adds `l1_overhead` per data frame, counting one frame per MTU of
//! payload (exact for full-size packets, which the case studies send).
//! Utilisation is relative to the QP's line rate: the receiver's port is
//! taken to run at the sender's rate (true on the shipped topologies).

use crate::control::CcContext;
use crate::time::{Duration, Time};

/// What arrived at the receiver's port during one measurement window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PortReading {
    /// Length of the window.
    pub period: Duration,
    /// Arrivals at the port, wire bit/s (frames plus the per-frame L1 overhead).
    pub arrived_bps: f64,
    /// `arrived_bps` as a fraction of the line rate.
    pub utilization: f64,
    /// Fraction of the arrived payload that belonged to this QP (0 to 1).
    pub own_share: f64,
    /// Any of this QP's arrivals in the window carried an ECN CE mark.
    pub ce: bool,
}

impl PortReading {
    /// Wire rate of everything that arrived and was not this QP's.
    pub fn other_bps(&self) -> f64 {
        self.arrived_bps * (1.0 - self.own_share)
    }
}

/// Measurement state of the receiver end (never touched at the sender end).
#[derive(Clone, Debug)]
pub struct PortMeter {
    interval: Duration,
    l1_overhead: u32,
    /// Start of the current window and the counters then; `None` before the first RX.
    start: Option<Time>,
    rx_bytes0: u64,
    rx_payload0: u64,
    /// This QP's payload that arrived in the current window.
    own: u64,
    ce: bool,
}

impl PortMeter {
    pub fn new(interval: Duration, l1_overhead: u32) -> Self {
        PortMeter {
            interval,
            l1_overhead,
            start: None,
            rx_bytes0: 0,
            rx_payload0: 0,
            own: 0,
            ce: false,
        }
    }

    /// An RX event of this QP (`bytes` payload, possibly several coalesced
    /// packets). Returns a reading when it closes a window of at least `interval`.
    pub fn on_rx(&mut self, bytes: u32, ce: bool, ctx: &CcContext) -> Option<PortReading> {
        let Some(t0) = self.start else {
            // The counters already include this event's packets: start after them.
            self.restart(ctx);
            return None;
        };
        self.own += bytes as u64;
        self.ce |= ce;
        let period = ctx.now - t0;
        if period < self.interval || period.ps() == 0 {
            return None;
        }
        let payload = ctx.nic.rx_payload - self.rx_payload0;
        let frames = ctx.nic.rx_bytes - self.rx_bytes0;
        let mtu = ctx.path.mtu.max(1) as u64;
        let wire = frames + self.l1_overhead as u64 * payload.div_ceil(mtu);
        let arrived_bps = wire as f64 * 8.0 / (period.ps() as f64 / 1e12);
        let reading = PortReading {
            period,
            arrived_bps,
            utilization: arrived_bps / ctx.line_rate.bps().max(1) as f64,
            own_share: if payload == 0 {
                1.0
            } else {
                (self.own as f64 / payload as f64).min(1.0)
            },
            ce: self.ce,
        };
        self.restart(ctx);
        Some(reading)
    }

    fn restart(&mut self, ctx: &CcContext) {
        self.start = Some(ctx.now);
        self.rx_bytes0 = ctx.nic.rx_bytes;
        self.rx_payload0 = ctx.nic.rx_payload;
        self.own = 0;
        self.ce = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Actions, NicFacts};
    use crate::time::Rate;

    fn at(
        m: &mut PortMeter,
        us: u64,
        rx_payload: u64,
        rx_bytes: u64,
        own: u32,
    ) -> Option<PortReading> {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(
            Time(us * 1_000_000),
            Rate::gbps(100),
            Rate::gbps(100),
            0,
            &mut a,
        );
        ctx.path.mtu = 1000;
        ctx.nic = NicFacts {
            rx_payload,
            rx_bytes,
            ..Default::default()
        };
        m.on_rx(own, false, &ctx)
    }

    #[test]
    fn a_window_reports_wire_rate_and_own_share() {
        let mut m = PortMeter::new(Duration::from_us(10), 20);
        assert_eq!(
            at(&mut m, 0, 1000, 1060, 1000),
            None,
            "the first RX only starts the window"
        );
        assert_eq!(
            at(&mut m, 5, 60_000, 63_600, 20_000),
            None,
            "shorter than the interval"
        );
        // 10 µs later: 100 000 more payload bytes in 100 frames of 1060 B, 40 % ours.
        let r = at(&mut m, 10, 101_000, 107_060, 20_000).unwrap();
        assert_eq!(r.period, Duration::from_us(10));
        // (106 000 + 100 × 20) B × 8 / 10 µs = 86.4 Gb/s.
        assert!((r.arrived_bps - 86.4e9).abs() < 1.0, "{}", r.arrived_bps);
        assert!((r.utilization - 0.864).abs() < 1e-9);
        assert!((r.own_share - 0.4).abs() < 1e-12);
        assert!((r.other_bps() - 0.6 * 86.4e9).abs() < 1.0);
        // The next window starts where this one ended.
        assert_eq!(at(&mut m, 15, 150_000, 160_000, 1000), None);
    }
}
