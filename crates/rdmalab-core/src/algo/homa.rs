//! Homa (Montazeri et al., SIGCOMM'18) as SwCC runs it (ATC'25 Table 3):
//! receiver-driven, credit-based congestion control.
//!
//! * Sender: a message starts with `rtt_bytes` of unscheduled data (one BDP
//!   of the path by default). After that it sends only what the receiver
//!   has granted: the QP's window is the granted offset minus what is
//!   acknowledged. Every data packet carries the message's length in the
//!   extensible CC header (words 0 and 1), as Homa's DATA header does.
//! * Receiver, one ledger per NIC shared by its QPs: every RX event updates
//!   the QP's remaining bytes (length − received). The `overcommit` QPs with
//!   the fewest bytes left (SRPT; ties to the lower QP id) are granted: on
//!   their RX events the receiver sends a grant out of band that lets the
//!   sender reach received + `rtt_bytes`. Other QPs get no grant until they
//!   rank, so at most `overcommit` BDPs of scheduled data head for the
//!   receiver at once, on top of the unscheduled bytes of new messages.
//!
//! * Priorities (`priorities` > 0, with `switch.scheduling:
//!   strict-priority`): a message's unscheduled bytes travel in the highest
//!   data class; each grant names the class for the bytes it grants, one
//!   class lower per message ahead in the receiver's SRPT order. A
//!   message's class never rises again, since RoCE delivers in order and a
//!   packet in a higher class would overtake the message's earlier ones
//!   (Homa itself tolerates reordering). Homa also splits unscheduled bytes
//!   over several classes by message size; here they share one.
//!
//! Not modelled: Homa's incast optimisation and its RESEND and BUSY
//! messages (the transport below is reliable here).

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// First word of a grant ("GRNT").
pub const GRANT_TAG: u32 = 0x4752_4E54;

pub const PARAMS: &[ParamSpec] = &[
    p::bytes(
        "rtt_bytes",
        0.0,
        0.0,
        1e12,
        "unscheduled bytes of a message, and how far ahead of what arrived a grant reaches (0: the path's BDP)",
        "Homa §3.2: RTTbytes, the bytes a sender can transmit in one round trip",
    ),
    p::int("overcommit", 2.0, 1.0, 1024.0, "messages a receiver grants at once", "Homa §3.5: the degree of overcommitment (the paper uses up to the number of scheduled priorities)"),
    p::int("priorities", 0.0, 0.0, 7.0, "traffic classes Homa uses, from class 7 down: unscheduled bytes in the highest, granted bytes in the next ones by the receiver's rank of the message (0: none, the QP keeps its class); needs switch.scheduling: strict-priority to matter", "Homa §3.4: unscheduled packets at the top priorities, scheduled ones at priorities the receiver puts in its grants, fewest bytes left highest"),
];

/// The highest data class, where Homa's unscheduled bytes go.
const TOP_CLASS: u8 = crate::packet::NUM_CLASSES as u8 - 1;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HomaParams {
    pub rtt_bytes: u64,
    pub overcommit: u32,
    pub priorities: u32,
}

impl HomaParams {
    pub fn from_values(v: &ParamValues) -> Self {
        HomaParams {
            rtt_bytes: v.bytes("rtt_bytes"),
            overcommit: v.int("overcommit"),
            priorities: v.int("priorities"),
        }
    }
}

/// A receiving NIC's view of the messages coming in: bytes left, by QP.
#[derive(Debug, Default)]
pub struct Ledger {
    remaining: BTreeMap<u32, u64>,
}

impl Ledger {
    /// How many messages have fewer bytes left than QP `qp`'s (ties to the
    /// lower QP id); `None` if it has none.
    fn rank(&self, qp: u32) -> Option<u32> {
        let &mine = self.remaining.get(&qp)?;
        let ahead = self
            .remaining
            .iter()
            .filter(|&(&q, &r)| r < mine || (r == mine && q < qp))
            .count();
        Some(ahead as u32)
    }
}

/// Ledgers by receiving node, shared by the Homa controllers of one run.
pub type HomaTables = Rc<RefCell<BTreeMap<u32, Ledger>>>;

/// Both ends of one QP.
#[derive(Debug)]
pub struct Homa {
    p: HomaParams,
    ledgers: HomaTables,
    // Sender end.
    granted: u64,
    /// The class the receiver's latest grant asks granted bytes to travel in.
    scheduled_class: u8,
    // Receiver end.
    received: u64,
    grant_sent: u64,
    pub grants_sent: u64,
}

impl Homa {
    pub fn new(p: HomaParams, ledgers: HomaTables) -> Self {
        Homa {
            p,
            ledgers,
            granted: 0,
            scheduled_class: TOP_CLASS,
            received: 0,
            grant_sent: 0,
            grants_sent: 0,
        }
    }

    fn rtt_bytes(&self, ctx: &CcContext) -> u64 {
        if self.p.rtt_bytes > 0 {
            self.p.rtt_bytes
        } else {
            ctx.path.bdp_bytes().max(ctx.path.mtu as u64)
        }
    }

    /// With priorities, the class of the sender's next packets: the top one
    /// while unscheduled bytes go out, then the one its grant named.
    fn pick_class(&self, ctx: &mut CcContext) {
        if self.p.priorities == 0 {
            return;
        }
        let unscheduled = ctx.snd_nxt_bytes < self.rtt_bytes(ctx);
        ctx.set_class(if unscheduled {
            TOP_CLASS
        } else {
            self.scheduled_class
        });
    }

    /// The class a grant names for the message of rank `rank`: below the
    /// unscheduled class, one per rank, the lowest of the `priorities` shared
    /// by every rank past them.
    fn class_for_rank(&self, rank: u32) -> u8 {
        let scheduled = self.p.priorities.saturating_sub(1).max(1);
        TOP_CLASS - 1 - rank.min(scheduled - 1) as u8
    }

    /// The window that lets the sender reach the granted offset.
    fn open_window(&self, ctx: &mut CcContext) {
        let acked = ctx.snd_nxt_bytes.saturating_sub(ctx.bytes_in_flight);
        ctx.set_window(Some(self.granted.saturating_sub(acked).max(1)));
    }
}

impl Controller for Homa {
    fn name(&self) -> &str {
        "homa"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::TX | EventMask::ACK | EventMask::RX | EventMask::PEER)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.granted = self.rtt_bytes(ctx);
        ctx.set_window(Some(self.granted));
        self.pick_class(ctx);
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Tx { .. } => {
                // The message's length travels in the header (Homa's DATA header).
                ctx.set_header_word(0, ctx.posted_bytes as u32);
                ctx.set_header_word(1, (ctx.posted_bytes >> 32) as u32);
                self.pick_class(ctx);
            }
            CcEvent::Ack { .. } => self.open_window(ctx),
            CcEvent::Peer {
                words: [GRANT_TAG, lo, hi, class],
                to_receiver: false,
            } => {
                self.granted = self.granted.max((hi as u64) << 32 | lo as u64);
                // A class only ever goes down: a later packet in a higher
                // class would overtake the message's own earlier ones.
                if class > 0 {
                    self.scheduled_class = self.scheduled_class.min(class as u8);
                }
                self.open_window(ctx);
                self.pick_class(ctx);
            }
            CcEvent::Rx { bytes, .. } => {
                self.received += bytes as u64;
                // Without the header (control.cc_header under 8 B) every message looks endless.
                let length = match ctx.header {
                    [lo, hi, ..] => (*hi as u64) << 32 | *lo as u64,
                    _ => u64::MAX,
                };
                let left = length.saturating_sub(self.received);
                let rank = {
                    let mut t = self.ledgers.borrow_mut();
                    let ledger = t.entry(ctx.nic.node).or_default();
                    if left == 0 {
                        ledger.remaining.remove(&ctx.qp);
                        None
                    } else {
                        ledger.remaining.insert(ctx.qp, left);
                        ledger.rank(ctx.qp)
                    }
                };
                let grant = (self.received + self.rtt_bytes(ctx)).min(length);
                if let Some(r) = rank.filter(|&r| r < self.p.overcommit) {
                    if grant > self.grant_sent {
                        self.grant_sent = grant;
                        self.grants_sent += 1;
                        // Word 3: the class for the granted bytes (0: unchanged).
                        let class = if self.p.priorities > 0 {
                            self.class_for_rank(r) as u32
                        } else {
                            0
                        };
                        ctx.send_oob([GRANT_TAG, grant as u32, (grant >> 32) as u32, class]);
                    }
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
    use crate::time::{Rate, Time};

    fn ctx<'a>(a: &'a mut Actions, header: &'a [u32], qp: u32) -> CcContext<'a> {
        let mut c = CcContext::new(Time::ZERO, Rate::gbps(100), Rate::gbps(100), 0, a);
        c.path.base_rtt = crate::time::Duration::from_us(8);
        c.header = header;
        c.qp = qp;
        c.at_receiver = true;
        c.nic = NicFacts {
            node: 9,
            ..Default::default()
        };
        c
    }

    fn homa(t: &HomaTables) -> Homa {
        Homa::new(
            HomaParams {
                rtt_bytes: 0,
                overcommit: 1,
                priorities: 0,
            },
            t.clone(),
        )
    }

    /// With P priorities, the top class carries unscheduled bytes and the
    /// P − 1 below it one rank each, the lowest shared by every rank past
    /// them: exactly P classes, none below TOP − (P − 1).
    #[test]
    fn grants_use_one_class_per_rank_down_to_the_lowest_of_the_priorities() {
        for p in [2u32, 4, 7] {
            let h = Homa::new(
                HomaParams {
                    rtt_bytes: 0,
                    overcommit: 1,
                    priorities: p,
                },
                HomaTables::default(),
            );
            let lowest = TOP_CLASS - (p as u8 - 1);
            for rank in 0..p - 1 {
                assert_eq!(
                    h.class_for_rank(rank),
                    TOP_CLASS - 1 - rank as u8,
                    "P {p}, rank {rank}"
                );
            }
            for rank in [p - 1, p, 100] {
                assert_eq!(
                    h.class_for_rank(rank),
                    lowest,
                    "P {p}, rank {rank}: the lowest class"
                );
            }
        }
    }

    #[test]
    fn a_sender_starts_with_one_bdp_and_follows_its_grants() {
        let mut h = homa(&HomaTables::default());
        let mut a = Actions::default();
        h.on_start(&mut ctx(&mut a, &[], 0));
        assert_eq!(a.window, Some(Some(100_000)), "8 us at 100 Gb/s");
        let mut a = Actions::default();
        let mut c = ctx(&mut a, &[], 0);
        c.snd_nxt_bytes = 100_000;
        c.bytes_in_flight = 60_000;
        h.on_event(
            &CcEvent::Peer {
                words: [GRANT_TAG, 150_000, 0, 0],
                to_receiver: false,
            },
            &mut c,
        );
        assert_eq!(
            a.window,
            Some(Some(110_000)),
            "granted 150 KB, 40 KB acknowledged"
        );
    }

    /// Once the grants reach the message's end, later packets send no more:
    /// each grant offset goes out once.
    #[test]
    fn a_grant_offset_is_sent_once() {
        let t = HomaTables::default();
        let mut h = homa(&t);
        let rx = CcEvent::Rx {
            bytes: 1000,
            packets: 1,
            ce: false,
        };
        let mut offsets = Vec::new();
        // A 150 KB message: received + one BDP (100 KB) reaches 150 KB at 50 KB.
        for _ in 0..149 {
            let mut a = Actions::default();
            h.on_event(&rx, &mut ctx(&mut a, &[150_000, 0], 3));
            if let Some(w) = a.oob {
                offsets.push(w[1]);
            }
        }
        assert_eq!(offsets.last(), Some(&150_000));
        assert_eq!(
            offsets.iter().filter(|&&o| o == 150_000).count(),
            1,
            "{offsets:?}"
        );
        assert!(
            offsets.windows(2).all(|w| w[0] < w[1]),
            "strictly increasing"
        );
        assert_eq!(h.grants_sent, offsets.len() as u64);
    }

    #[test]
    fn the_receiver_grants_the_shortest_message_only() {
        let t = HomaTables::default();
        let (mut long, mut short) = (homa(&t), homa(&t));
        let rx = CcEvent::Rx {
            bytes: 1000,
            packets: 1,
            ce: false,
        };
        // A 1 MB message on QP 1 and a 200 KB one on QP 2.
        let mut a = Actions::default();
        long.on_event(&rx, &mut ctx(&mut a, &[1_000_000, 0], 1));
        assert!(a.oob.is_some(), "alone, the long message ranks first");
        let mut a = Actions::default();
        short.on_event(&rx, &mut ctx(&mut a, &[200_000, 0], 2));
        assert_eq!(
            a.oob.map(|w| (w[0], w[1])),
            Some((GRANT_TAG, 101_000)),
            "received 1 KB + one BDP"
        );
        let mut a = Actions::default();
        long.on_event(&rx, &mut ctx(&mut a, &[1_000_000, 0], 1));
        assert_eq!(
            a.oob, None,
            "with overcommit 1, the shorter message takes the grants"
        );
        // Once the short one is done, the long one is granted again.
        let mut last = Actions::default();
        for _ in 0..199 {
            last = Actions::default();
            short.on_event(&rx, &mut ctx(&mut last, &[200_000, 0], 2));
        }
        assert_eq!(last.oob, None, "the last bytes need no grant");
        let mut a = Actions::default();
        long.on_event(&rx, &mut ctx(&mut a, &[1_000_000, 0], 1));
        assert!(a.oob.is_some());
    }
}
