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
    /// Classes the peer has paused with PFC: we may not start sending them.
    pub paused: [bool; NUM_CLASSES],
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
        self.queues.iter().any(|q| !q.is_empty())
    }

    #[inline]
    pub fn enqueue(&mut self, class: u8, pkt: PacketId, frame_bytes: u32) {
        self.queues[class as usize].push_back(pkt);
        self.queue_bytes[class as usize] += frame_bytes as u64;
        self.queued_total += frame_bytes as u64;
    }

    /// Next class to serve: the control class first, then, among non-empty,
    /// non-paused data classes, the highest (strict priority) or the next in
    /// round robin.
    #[inline]
    pub fn pick_class(&mut self) -> Option<u8> {
        if !self.queues[CONTROL_CLASS as usize].is_empty() {
            return Some(CONTROL_CLASS);
        }
        if self.strict_priority {
            return (1..NUM_CLASSES as u8)
                .rev()
                .find(|&c| !self.queues[c as usize].is_empty() && !self.paused[c as usize]);
        }
        for i in 0..(NUM_CLASSES as u8 - 1) {
            let c = 1 + (self.rr_next - 1 + i) % (NUM_CLASSES as u8 - 1);
            if !self.queues[c as usize].is_empty() && !self.paused[c as usize] {
                self.rr_next = 1 + c % (NUM_CLASSES as u8 - 1);
                return Some(c);
            }
        }
        None
    }

    #[inline]
    pub fn dequeue(
        &mut self,
        class: u8,
        frame_bytes_of: impl Fn(PacketId) -> u32,
    ) -> Option<PacketId> {
        let p = self.queues[class as usize].pop_front()?;
        let b = frame_bytes_of(p) as u64;
        self.queue_bytes[class as usize] -= b;
        self.queued_total -= b;
        Some(p)
    }
}
