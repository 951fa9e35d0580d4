//! Receiver grants (SCR §A.8, Homa-like as SCR adapts it to a rate knob):
//! the receiver measures its port and grants the sender the bandwidth the
//! other traffic leaves free; the sender sends at the granted rate.
//!
//! * Receiver end, on its QP's RX events, once per `interval` (see
//!   [`super::port_meter`]): `other` = wire rate of what arrived that was not
//!   this QP's; grant = clamp(`target_utilization` × line − `other`,
//!   `min_grant`, line), sent to the sender as an out-of-band credit in Mb/s.
//!   A saturated port (arrivals averaging ≥ `saturated_at` × line over the
//!   window) means a queue stands in front of it; while it does, the grant fills only
//!   up to `drain_utilization` so the queue drains (rdmalab's addition: at
//!   `target_utilization` a queue built before the grant reacted would drain
//!   only at the 2 % spare).
//! * Sender end: starts at line rate and runs optimistically at its current
//!   rate until a grant arrives; a grant sets the dequeue rate to the credit.
//!
//! Differences from Homa: grants are rates, not bytes (SCR: "we use credits
//! to represent the available bandwidth (in Gbps)"; BF3's knob is a rate), and
//! senders do not wait for a first grant (SCR: "the senders operate
//! optimistically"). Credits travel in Mb/s, finer than SCR's Gb/s, so a
//! grant does not step by a whole Gb/s.
//!
//! Several granted QPs into one receiver share it: their receiver ends keep
//! a table per receiving NIC (each QP's own arrival rate, refreshed every
//! window), so `other` counts the uncontrolled traffic in full but another
//! granted QP only up to an equal share of what is left. Saturated granted
//! senders end up with equal grants; one that uses less leaves the rest to
//! the others (max-min, as Homa's receiver spreads its grants).

use super::port_meter::{PortMeter, PortReading};
use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate, Time};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The granted QPs arriving at one receiving NIC: each one's own arrival
/// rate (wire bit/s) in its last window, and when that window closed.
#[derive(Debug, Default)]
pub struct GrantTable {
    granted: BTreeMap<u32, (f64, Time)>,
}

impl GrantTable {
    /// Granted QPs currently known at this receiver.
    pub fn len(&self) -> usize {
        self.granted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.granted.is_empty()
    }
}

/// Grant tables by receiving NIC (node id), one set per run.
pub type GrantTables = Rc<RefCell<BTreeMap<u32, Rc<RefCell<GrantTable>>>>>;

/// A granted QP that has not reported for this many windows has stopped.
const STALE_WINDOWS: u64 = 4;

/// First word of a grant message ("GRNT").
pub const GRANT_TAG: u32 = 0x4752_4E54;

pub const PARAMS: &[ParamSpec] = &[
    p::duration(
        "interval",
        20.0 * p::US,
        1.0,
        1e12,
        "receiver's measurement window: one grant per window while the QP receives",
        "SCR §4.3.1: periodic peer messages once per RTT, \"a typical RTT setting of 20 µs\"",
    ),
    p::float(
        "target_utilization",
        0.98,
        0.01,
        1.0,
        "fraction of the receiver's line rate the grant fills up to",
        "rdmalab's choice: SCR grants the whole headroom (1.0); 2 % spare keeps a granted port under saturated_at, so a port that runs full means a standing queue (HPCC's η = 0.95 plays the same role)",
    ),
    p::float(
        "saturated_at",
        0.99,
        0.5,
        2.0,
        "port utilisation over a window from which the port counts as saturated: a queue stands in front of it (above 1: never)",
        "rdmalab's choice: between target_utilization and a full port (one packet is ~0.4 % of a 20 µs window at 100 Gb/s)",
    ),
    p::float(
        "drain_utilization",
        0.9,
        0.01,
        1.0,
        "fraction of the line rate the grant fills up to while the port is saturated",
        "rdmalab's choice: drains a standing queue at 10 % of the line rate",
    ),
    p::rate("min_grant", 1.0 * p::GBPS, 1.0, 1e13, "smallest grant", "rdmalab's choice: keeps RX events (the receiver's trigger) flowing when the others fill the port"),
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
pub struct ReceiverGrantsParams {
    pub interval: Duration,
    pub target_utilization: f64,
    pub saturated_at: f64,
    pub drain_utilization: f64,
    pub min_grant: Rate,
    pub l1_overhead: u32,
}

impl ReceiverGrantsParams {
    pub fn from_values(v: &ParamValues) -> Self {
        ReceiverGrantsParams {
            interval: v.duration("interval"),
            target_utilization: v.get("target_utilization"),
            saturated_at: v.get("saturated_at"),
            drain_utilization: v.get("drain_utilization"),
            min_grant: v.rate("min_grant"),
            l1_overhead: v.bytes("l1_overhead") as u32,
        }
    }
}

impl Default for ReceiverGrantsParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

/// Both ends of one QP; the receiver half and the sender half share nothing
/// but the grant messages.
#[derive(Clone, Debug)]
pub struct ReceiverGrants {
    p: ReceiverGrantsParams,
    // Receiver end.
    meter: PortMeter,
    grants_sent: u64,
    // Sender end.
    grants_received: u64,
    /// The run's grant tables (receiver end); `None`: grant this QP alone.
    tables: Option<GrantTables>,
}

impl ReceiverGrants {
    pub fn new(p: ReceiverGrantsParams) -> Self {
        ReceiverGrants {
            p,
            meter: PortMeter::new(p.interval, p.l1_overhead),
            grants_sent: 0,
            grants_received: 0,
            tables: None,
        }
    }

    /// A QP that shares its receiver with the other granted QPs of the run.
    pub fn shared(p: ReceiverGrantsParams, tables: GrantTables) -> Self {
        ReceiverGrants {
            tables: Some(tables),
            ..Self::new(p)
        }
    }

    /// What this QP must leave to everything else at its receiver: the
    /// uncontrolled traffic in full, each other granted QP its own rate but
    /// at most an equal share of what the uncontrolled traffic leaves.
    /// Records this QP's own rate in the receiver's table.
    fn others_bps(&self, r: &PortReading, ctx: &CcContext) -> f64 {
        let Some(tables) = &self.tables else {
            return r.other_bps();
        };
        let available = self.target(r) * ctx.line_rate.bps() as f64;
        let table = tables.borrow_mut().entry(ctx.nic.node).or_default().clone();
        let mut t = table.borrow_mut();
        let stale = Duration(self.p.interval.ps() * STALE_WINDOWS);
        t.granted
            .retain(|&q, &mut (_, seen)| q == ctx.qp || seen + stale >= ctx.now);
        t.granted
            .insert(ctx.qp, (r.arrived_bps * r.own_share, ctx.now));
        let others: Vec<f64> = t
            .granted
            .iter()
            .filter(|(&q, _)| q != ctx.qp)
            .map(|(_, &(bps, _))| bps)
            .collect();
        let uncontrolled = (r.other_bps() - others.iter().sum::<f64>()).max(0.0);
        let fair = ((available - uncontrolled) / (others.len() + 1) as f64).max(0.0);
        uncontrolled + others.iter().map(|&bps| bps.min(fair)).sum::<f64>()
    }

    /// Grants the receiver end has sent.
    pub fn grants_sent(&self) -> u64 {
        self.grants_sent
    }

    /// Grants the sender end has applied.
    pub fn grants_received(&self) -> u64 {
        self.grants_received
    }

    /// The grant for one measurement window: what the others leave free of
    /// the target share of the line rate.
    pub fn grant_for(&self, r: &PortReading, line: Rate) -> Rate {
        self.grant_leaving(r, line, r.other_bps())
    }

    /// The target share of the line rate for this window (less while a queue stands).
    fn target(&self, r: &PortReading) -> f64 {
        if r.utilization >= self.p.saturated_at {
            self.p.drain_utilization
        } else {
            self.p.target_utilization
        }
    }

    /// The grant that leaves `other_bps` (wire) to everything else.
    fn grant_leaving(&self, r: &PortReading, line: Rate, other_bps: f64) -> Rate {
        let line_bps = line.bps() as f64;
        let lo = (self.p.min_grant.bps() as f64).min(line_bps);
        Rate(
            (self.target(r) * line_bps - other_bps)
                .clamp(lo, line_bps)
                .round() as u64,
        )
    }
}

impl Controller for ReceiverGrants {
    fn name(&self) -> &str {
        "receiver-grants"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::RX | EventMask::PEER)
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Rx { bytes, ce, .. } => {
                let Some(reading) = self.meter.on_rx(bytes, ce, ctx) else {
                    return;
                };
                let others = self.others_bps(&reading, ctx);
                let grant = self.grant_leaving(&reading, ctx.line_rate, others);
                self.grants_sent += 1;
                let mbps = (grant.bps() / 1_000_000).clamp(1, u32::MAX as u64) as u32;
                ctx.send_oob([GRANT_TAG, mbps, self.grants_sent as u32, 0]);
            }
            CcEvent::Peer {
                words: [GRANT_TAG, mbps, _, _],
                to_receiver: false,
            } => {
                self.grants_received += 1;
                ctx.set_rate(Rate::mbps(mbps as u64).min(ctx.line_rate));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Actions, NicFacts};
    use crate::time::Time;

    const LINE: Rate = Rate::gbps(100);

    /// One RX event at the receiver end at `us` with the NIC's counters.
    fn rx(g: &mut ReceiverGrants, us: u64, rx_payload: u64, rx_bytes: u64, own: u32) -> Actions {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time(us * 1_000_000), LINE, LINE, 0, &mut a);
        ctx.path.mtu = 1000;
        ctx.at_receiver = true;
        ctx.nic = NicFacts {
            rx_payload,
            rx_bytes,
            ..Default::default()
        };
        g.on_event(
            &CcEvent::Rx {
                bytes: own,
                packets: 1,
                ce: false,
            },
            &mut ctx,
        );
        a
    }

    fn peer(g: &mut ReceiverGrants, words: [u32; 4]) -> Actions {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time(0), LINE, LINE, 0, &mut a);
        g.on_event(
            &CcEvent::Peer {
                words,
                to_receiver: false,
            },
            &mut ctx,
        );
        a
    }

    fn no_l1() -> ReceiverGrantsParams {
        ReceiverGrantsParams {
            l1_overhead: 0,
            ..Default::default()
        }
    }

    #[test]
    fn the_receiver_grants_what_the_others_leave_free() {
        let mut g = ReceiverGrants::new(no_l1());
        assert!(rx(&mut g, 0, 0, 0, 1000).is_empty());
        // 20 µs: 150 KB arrived (60 Gb/s of frames), 50 KB of it ours → others 40 Gb/s.
        let a = rx(&mut g, 20, 150_000, 150_000, 50_000);
        let w = a.oob.expect("a grant");
        assert_eq!(w[0], GRANT_TAG);
        assert_eq!(w[1], 58_000, "0.98 × 100 − 40 Gb/s, in Mb/s");
        assert_eq!(g.grants_sent(), 1);
        assert_eq!(
            a.rate, None,
            "the receiver does not touch the sender's rate"
        );
    }

    #[test]
    fn a_saturated_port_is_granted_less_so_its_queue_drains() {
        let mut g = ReceiverGrants::new(no_l1());
        rx(&mut g, 0, 0, 0, 1000);
        // The port is full (250 KB in 20 µs = 100 Gb/s), 30 % of it others':
        // a queue stands, so the grant fills only 90 %: 90 − 30 Gb/s.
        let w = rx(&mut g, 20, 250_000, 250_000, 175_000).oob.unwrap();
        assert_eq!(w[1], 60_000);
        // Just below saturation (98 Gb/s) the grant fills 98 %: 98 − 29.4 Gb/s.
        let w = rx(&mut g, 40, 495_000, 495_000, 171_500).oob.unwrap();
        assert_eq!(w[1], 68_600);
    }

    #[test]
    fn grants_are_clamped_to_the_floor_and_the_line() {
        let mut g = ReceiverGrants::new(no_l1());
        rx(&mut g, 0, 0, 0, 1000);
        // Others alone fill 98.8 Gb/s: the floor.
        let w = rx(&mut g, 20, 247_000, 247_000, 0).oob.unwrap();
        assert_eq!(w[1], 1000);
        // Nobody else: 98 % of the line.
        let w = rx(&mut g, 40, 347_000, 347_000, 100_000).oob.unwrap();
        assert_eq!(w[1], 98_000);
    }

    #[test]
    fn the_sender_applies_grants_and_ignores_other_messages() {
        let mut g = ReceiverGrants::new(no_l1());
        assert_eq!(
            peer(&mut g, [GRANT_TAG, 42_500, 1, 0]).rate,
            Some(Rate::mbps(42_500))
        );
        assert_eq!(peer(&mut g, [0x1234, 10_000, 1, 0]).rate, None);
        assert_eq!(
            peer(&mut g, [GRANT_TAG, 500_000, 2, 0]).rate,
            Some(LINE),
            "capped at the line rate"
        );
        assert_eq!(g.grants_received(), 2);
    }
}
