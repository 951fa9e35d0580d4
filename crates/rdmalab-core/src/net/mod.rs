//! The fabric: links, switch ports, shared buffers, routing and topologies.
//!
//! A packet leaves a NIC port, crosses a [`Port`]'s link (serialisation at
//! the link rate, then propagation delay, maybe loss), arrives at a switch,
//! is admitted to the switch's [`buffer::SharedBuffer`] (or dropped), is
//! queued at the egress [`Port`] chosen by [`routing::Routing`] in its traffic
//! class, and is dequeued by strict priority for control and round robin
//! among data classes, where ECN marking and INT happen.

pub mod buffer;
pub mod routing;
pub mod switch;
pub mod topology;

use crate::packet::{PacketId, NUM_CLASSES};
use crate::rng::RngStream;
use crate::time::{Duration, Rate};
use buffer::EcnConfig;
use std::collections::VecDeque;

/// Traffic class that carries ACK, NACK, CNP and PFC frames: strict priority,
/// never paused, never ECN-marked (queue 0 in the ns-3 HPCC simulator).
pub const CONTROL_CLASS: u8 = 0;

/// A switch port's TxDone that was not scheduled: when a frame starts and
/// nothing waits behind it, the event would only find an empty queue. Its
/// place in the event order (time and reserved sequence number) is kept, so
/// a frame queued before that place schedules it after all, exactly where it
/// would have run, and one queued after it starts at once, as it would have.
#[derive(Clone, Copy, Debug)]
pub struct SkippedTxDone {
    pub at: crate::time::Time,
    pub seq: u64,
}

/// One end of a link: the transmitter of that direction and its egress queues.
pub struct Port {
    pub node: u32,
    /// The port belongs to a switch (else to a host's NIC): checked per frame.
    pub at_switch: bool,
    /// Index of this port among its node's ports.
    pub local: u32,
    /// The port at the other end of the link.
    pub peer: u32,
    pub link: u32,
    pub rate: Rate,
    pub delay: Duration,
    pub loss: f64,
    pub up: bool,
    /// A frame is being chosen, or a [`crate::world::Event::TxDone`] is due.
    pub busy: bool,
    /// The end of the frame on the wire when nothing was queued behind it:
    /// its TxDone was not scheduled (see [`SkippedTxDone`]).
    pub skipped_tx_done: Option<SkippedTxDone>,
    pub queues: [VecDeque<PacketId>; NUM_CLASSES],
    /// Frame bytes queued per class.
    pub queue_bytes: [u64; NUM_CLASSES],
    pub queued_total: u64,
    /// Classes the peer has paused with PFC: we may not start sending them
    /// (change with [`Port::set_paused`], which keeps `paused_mask` along).
    pub paused: [bool; NUM_CLASSES],
    /// `paused` as one bit per class, for [`Port::pick_class`].
    paused_mask: u8,
    /// Classes with a frame queued, one bit each: choosing a class is a few
    /// bit operations instead of a scan of eight queues per frame.
    queued_mask: u8,
    rr_next: u8,
    /// Serve data classes by strict priority (highest first), not round robin.
    pub strict_priority: bool,
    /// Frame bytes transmitted since the start (INT's txBytes).
    pub tx_bytes: u64,
    pub ecn: EcnConfig,
    pub rng: RngStream,
}

impl Port {
    pub fn new(
        node: u32,
        local: u32,
        link: u32,
        rate: Rate,
        delay: Duration,
        rng: RngStream,
    ) -> Self {
        Port {
            node,
            at_switch: false,
            local,
            peer: u32::MAX,
            link,
            rate,
            delay,
            loss: 0.0,
            up: true,
            busy: false,
            skipped_tx_done: None,
            queues: Default::default(),
            queue_bytes: [0; NUM_CLASSES],
            queued_total: 0,
            paused: [false; NUM_CLASSES],
            paused_mask: 0,
            queued_mask: 0,
            rr_next: 1,
            strict_priority: false,
            tx_bytes: 0,
            ecn: EcnConfig::scaled_for(rate),
            rng,
        }
    }

    /// A frame of any class is queued.
    #[inline]
    pub fn has_queued(&self) -> bool {
        self.queued_mask != 0
    }

    /// The peer paused (or resumed) `class` with PFC.
    #[inline]
    pub fn set_paused(&mut self, class: u8, pause: bool) {
        self.paused[class as usize] = pause;
        if pause {
            self.paused_mask |= 1 << class;
        } else {
            self.paused_mask &= !(1 << class);
        }
    }

    #[inline]
    pub fn enqueue(&mut self, class: u8, pkt: PacketId, frame_bytes: u32) {
        self.queued_mask |= 1 << class;
        self.queues[class as usize].push_back(pkt);
        self.queue_bytes[class as usize] += frame_bytes as u64;
        self.queued_total += frame_bytes as u64;
    }

    /// Next class to serve: the control class first, then, among non-empty,
    /// non-paused data classes, the highest (strict priority) or the next in
    /// round robin.
    #[inline]
    pub fn pick_class(&mut self) -> Option<u8> {
        if self.queued_mask & (1 << CONTROL_CLASS) != 0 {
            return Some(CONTROL_CLASS);
        }
        let ready = self.queued_mask & !self.paused_mask & !(1 << CONTROL_CLASS);
        if ready == 0 {
            return None;
        }
        if self.strict_priority {
            return Some(7 - ready.leading_zeros() as u8);
        }
        // Round robin: the first ready class from rr_next up, else from class 1 up.
        let from_next = ready & (u8::MAX << self.rr_next);
        let c = if from_next != 0 {
            from_next.trailing_zeros()
        } else {
            ready.trailing_zeros()
        } as u8;
        self.rr_next = 1 + c % (NUM_CLASSES as u8 - 1);
        Some(c)
    }

    #[inline]
    pub fn dequeue(
        &mut self,
        class: u8,
        frame_bytes_of: impl Fn(PacketId) -> u32,
    ) -> Option<PacketId> {
        let q = &mut self.queues[class as usize];
        let p = q.pop_front()?;
        if q.is_empty() {
            self.queued_mask &= !(1 << class);
        }
        let b = frame_bytes_of(p) as u64;
        self.queue_bytes[class as usize] -= b;
        self.queued_total -= b;
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan `pick_class` replaced: control first, then the highest ready
    /// data class (strict priority) or the next ready one in round robin.
    fn pick_by_scan(p: &Port, rr_next: &mut u8) -> Option<u8> {
        if !p.queues[CONTROL_CLASS as usize].is_empty() {
            return Some(CONTROL_CLASS);
        }
        let ready = |c: u8| !p.queues[c as usize].is_empty() && !p.paused[c as usize];
        if p.strict_priority {
            return (1..NUM_CLASSES as u8).rev().find(|&c| ready(c));
        }
        for i in 0..(NUM_CLASSES as u8 - 1) {
            let c = 1 + (*rr_next - 1 + i) % (NUM_CLASSES as u8 - 1);
            if ready(c) {
                *rr_next = 1 + c % (NUM_CLASSES as u8 - 1);
                return Some(c);
            }
        }
        None
    }

    #[test]
    fn the_class_bitmasks_choose_as_the_queue_scan_did() {
        for strict in [false, true] {
            let mut rng = RngStream::new(7, "pick-class-test");
            let mut p = Port::new(0, 0, 0, Rate::gbps(100), Duration::from_us(1), rng.clone());
            p.strict_priority = strict;
            let mut rr_next = p.rr_next;
            for step in 0..20_000u32 {
                match rng.below(4) {
                    0 | 1 => p.enqueue(rng.below(NUM_CLASSES as u64) as u8, step, 100),
                    2 => p.set_paused(1 + rng.below(7) as u8, rng.below(2) == 0),
                    _ => {
                        let want = pick_by_scan(&p, &mut rr_next);
                        assert_eq!(p.pick_class(), want, "step {step}");
                        assert_eq!(p.rr_next, rr_next);
                        if let Some(c) = want {
                            p.dequeue(c, |_| 100);
                        }
                    }
                }
                assert_eq!(p.has_queued(), p.queues.iter().any(|q| !q.is_empty()));
            }
        }
    }
}
