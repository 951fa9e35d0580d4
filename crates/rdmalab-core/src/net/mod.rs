//! The fabric: links, switch ports, shared buffers, routing and topologies.
//!
//! A packet leaves a NIC port, crosses a [`Port`]'s link (serialisation at
//! the link rate, then propagation delay, maybe loss), arrives at a switch,
//! is admitted to the switch's [`buffer::SharedBuffer`] (or dropped), is
//! queued at the egress [`Port`] chosen by [`routing::Routing`] in its traffic
//! class, and is dequeued by strict priority for control and round robin
//! among data classes, where ECN marking and INT happen.

pub mod buffer;
pub mod config;
pub mod routing;
pub mod switch;
pub mod topology;

use crate::packet::{PacketId, PacketPool, NUM_CLASSES};
use crate::rng::RngStream;
use crate::time::{Duration, Rate, TxTime};
use buffer::EcnConfig;

/// Traffic class that carries ACK, NACK, CNP and PFC frames: strict priority,
/// never paused, never ECN-marked (queue 0 in the ns-3 HPCC simulator).
pub const CONTROL_CLASS: u8 = 0;

/// A port's TxDone that was not scheduled: when a frame starts and nothing
/// waits behind it (a switch port's queue is empty; a NIC has nothing else
/// to send, [`crate::nic::Nic::has_nothing_to_send`]), the event would find
/// nothing to do. Its place in the event order (time and reserved sequence
/// number) is kept, so a frame given to the port before that place
/// schedules it after all, exactly where it would have run, and one given
/// after it starts at once, as it would have.
#[derive(Clone, Copy, Debug)]
pub struct SkippedTxDone {
    pub at: crate::time::Time,
    pub seq: u64,
}

impl SkippedTxDone {
    /// No TxDone skipped (a port's own marker, never handed out).
    const NONE: SkippedTxDone = SkippedTxDone {
        at: crate::time::Time::NEVER,
        seq: 0,
    };
}

/// No packet: the end of an egress queue's chain.
pub const NO_PACKET: PacketId = PacketId::MAX;

/// One class's FIFO at an egress port. The packets are chained through
/// [`crate::packet::Packet::queue_next`] (an intrusive list), so a port
/// holds 16 bytes per class and no heap buffer: a k = 64 fat tree has
/// 393k ports × 8 classes.
#[derive(Clone, Copy, Debug)]
pub struct ClassQueue {
    head: PacketId,
    tail: PacketId,
    /// Frame bytes queued.
    pub bytes: u64,
}

impl ClassQueue {
    const EMPTY: ClassQueue = ClassQueue {
        head: NO_PACKET,
        tail: NO_PACKET,
        bytes: 0,
    };

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NO_PACKET
    }

    /// The queued packets, oldest first.
    pub fn iter<'a>(&self, pkts: &'a PacketPool) -> impl Iterator<Item = PacketId> + 'a {
        let mut at = self.head;
        std::iter::from_fn(move || {
            (at != NO_PACKET).then(|| {
                let id = at;
                at = pkts.get(id).queue_next;
                id
            })
        })
    }
}

/// One end of a link: the transmitter of that direction and its egress queues.
///
/// Laid out hot first (`repr(C)`): what every frame reads or writes sits in
/// the first cache line (the flags, where the frame goes, the skipped
/// TxDone), then what a data frame's ECN and INT read, then the class
/// queues, and the loss generator last. Large fabrics touch few ports per
/// frame but have hundreds of thousands, so lines touched per frame is
/// what costs: a data frame at a switch reads three of the port's five
/// lines (until the skipped TxDone moved into the first and the ECN
/// thresholds next to it, four). Aligned to the line (so that the first
/// line is one line, and the event loop's prefetch of a port fetches it).
#[repr(C, align(64))]
pub struct Port {
    /// A frame is being chosen, or a [`crate::world::Event::TxDone`] is due.
    pub busy: bool,
    /// The port belongs to a switch (else to a host's NIC): checked per frame.
    pub at_switch: bool,
    pub up: bool,
    /// Classes the peer has paused with PFC, one bit each: we may not start
    /// sending them (see [`Port::is_paused`], [`Port::set_paused`]).
    paused_mask: u8,
    /// Classes with a frame queued, one bit each: choosing a class is a few
    /// bit operations instead of a scan of eight queues per frame.
    queued_mask: u8,
    rr_next: u8,
    /// Serve data classes by strict priority (highest first), not round robin.
    pub strict_priority: bool,
    /// The peer belongs to another partition of a parallel run: a frame
    /// sent here is posted to it, not scheduled in this partition's queue.
    pub peer_elsewhere: bool,
    pub node: u32,
    /// Index of this port among its node's ports.
    pub local: u32,
    /// The port at the other end of the link.
    pub peer: u32,
    /// Picoseconds per byte at `rate` when that is a whole number (as at
    /// every rate in Gb/s that divides 8,000), else 0: serialising a frame
    /// is then a multiplication, not a 64-bit division per frame.
    ps_per_byte: u32,
    pub delay: Duration,
    /// Frame bytes transmitted since the start (INT's txBytes).
    pub tx_bytes: u64,
    pub loss: f64,
    /// The end of the frame on the wire when nothing was queued behind it:
    /// its TxDone was not scheduled (see [`SkippedTxDone`]). `at` is
    /// [`crate::time::Time::NEVER`] when there is none (an `Option` would
    /// take 8 bytes more, past the first line).
    skipped: SkippedTxDone,
    /// Frame bytes queued, all classes.
    pub queued_total: u64,
    rate: Rate,
    pub ecn: EcnConfig,
    pub link: u32,
    queues: [ClassQueue; NUM_CLASSES],
    pub rng: RngStream,
}

/// Picoseconds per byte at `rate` if whole and below 2^32, else 0.
fn ps_per_byte(rate: Rate) -> u32 {
    const PS_PER_BYTE_AT_1BPS: u64 = 8 * 1_000_000_000_000;
    match rate.bps() {
        0 => 0,
        bps if PS_PER_BYTE_AT_1BPS % bps == 0 => {
            u32::try_from(PS_PER_BYTE_AT_1BPS / bps).unwrap_or(0)
        }
        _ => 0,
    }
}

/// The data class the round robin serves after `c`: 1 + c % 7, without
/// the division.
#[inline]
fn rr_after(c: u8) -> u8 {
    if c == NUM_CLASSES as u8 - 1 {
        1
    } else {
        c + 1
    }
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
            busy: false,
            at_switch: false,
            up: true,
            paused_mask: 0,
            queued_mask: 0,
            rr_next: 1,
            strict_priority: false,
            peer_elsewhere: false,
            node,
            local,
            peer: u32::MAX,
            ps_per_byte: ps_per_byte(rate),
            delay,
            tx_bytes: 0,
            loss: 0.0,
            skipped: SkippedTxDone::NONE,
            queued_total: 0,
            rate,
            ecn: EcnConfig::scaled_for(rate),
            link,
            queues: [ClassQueue::EMPTY; NUM_CLASSES],
            rng,
        }
    }

    /// The TxDone this port skipped ([`SkippedTxDone`]), if any.
    #[inline]
    pub fn skipped_tx_done(&self) -> Option<SkippedTxDone> {
        (self.skipped.at != crate::time::Time::NEVER).then_some(self.skipped)
    }

    /// Forget the skipped TxDone, returning it.
    #[inline]
    pub fn take_skipped_tx_done(&mut self) -> Option<SkippedTxDone> {
        let d = self.skipped_tx_done();
        self.skipped = SkippedTxDone::NONE;
        d
    }

    /// Remember that this port skipped the TxDone `d`.
    #[inline]
    pub fn set_skipped_tx_done(&mut self, d: SkippedTxDone) {
        debug_assert!(d.at != crate::time::Time::NEVER);
        self.skipped = d;
    }

    /// Renumber the skipped TxDone's place, if any (a parallel run's
    /// partition, see [`crate::engine::EventQueue::renumber`]).
    pub fn renumber_skipped_tx_done(&mut self, renumber: impl FnOnce(u64) -> u64) {
        if self.skipped.at != crate::time::Time::NEVER {
            self.skipped.seq = renumber(self.skipped.seq);
        }
    }

    /// The link's rate in this direction.
    #[inline]
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// How long a frame of `bytes` (on the wire) occupies the link, timed
    /// by `tx`: the same as `tx.of(self.rate(), bytes)`.
    #[inline]
    pub fn serialization(&self, tx: TxTime, bytes: u64) -> Duration {
        if tx == TxTime::Exact && self.ps_per_byte != 0 {
            if let Some(ps) = bytes.checked_mul(self.ps_per_byte as u64) {
                return Duration(ps);
            }
        }
        tx.of(self.rate, bytes)
    }

    /// A frame of any class is queued.
    #[inline]
    pub fn has_queued(&self) -> bool {
        self.queued_mask != 0
    }

    /// The queue of `class`.
    #[inline]
    pub fn queue(&self, class: u8) -> &ClassQueue {
        &self.queues[class as usize]
    }

    /// The class queues, class 0 first.
    pub fn queues(&self) -> &[ClassQueue; NUM_CLASSES] {
        &self.queues
    }

    /// Move every queued packet from pool `from` into pool `to`, keeping
    /// each class's order (a parallel run folding its partitions into one).
    pub fn move_queued(&mut self, from: &mut PacketPool, to: &mut PacketPool) {
        for q in self.queues.iter_mut() {
            let ids: Vec<PacketId> = q.iter(from).collect();
            let (mut head, mut tail) = (NO_PACKET, NO_PACKET);
            for id in ids {
                let new = to.put(from.take(id));
                to.get_mut(new).queue_next = NO_PACKET;
                if tail == NO_PACKET {
                    head = new;
                } else {
                    to.get_mut(tail).queue_next = new;
                }
                tail = new;
            }
            q.head = head;
            q.tail = tail;
        }
    }

    /// The peer has paused `class` with PFC.
    #[inline]
    pub fn is_paused(&self, class: u8) -> bool {
        self.paused_mask & (1 << class) != 0
    }

    /// The peer paused (or resumed) `class` with PFC.
    #[inline]
    pub fn set_paused(&mut self, class: u8, pause: bool) {
        if pause {
            self.paused_mask |= 1 << class;
        } else {
            self.paused_mask &= !(1 << class);
        }
    }

    /// Append `pkt` to the queue of `class`.
    #[inline]
    pub fn enqueue(&mut self, class: u8, pkt: PacketId, pkts: &mut PacketPool) {
        let p = pkts.get_mut(pkt);
        p.queue_next = NO_PACKET;
        let bytes = p.frame_bytes as u64;
        let q = &mut self.queues[class as usize];
        if q.tail == NO_PACKET {
            q.head = pkt;
        } else {
            pkts.get_mut(q.tail).queue_next = pkt;
        }
        q.tail = pkt;
        q.bytes += bytes;
        self.queued_mask |= 1 << class;
        self.queued_total += bytes;
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
        self.rr_next = rr_after(c);
        Some(c)
    }

    /// What [`Port::pick_class`] does to the round robin when `class` is
    /// the only one queued (a frame that cuts through an idle port).
    #[inline]
    pub fn pick_only(&mut self, class: u8) {
        if class != CONTROL_CLASS && !self.strict_priority {
            self.rr_next = rr_after(class);
        }
    }

    /// Take the oldest packet of `class`.
    #[inline]
    pub fn dequeue(&mut self, class: u8, pkts: &PacketPool) -> Option<PacketId> {
        let q = &mut self.queues[class as usize];
        if q.head == NO_PACKET {
            return None;
        }
        let id = q.head;
        let p = pkts.get(id);
        q.head = p.queue_next;
        if q.head == NO_PACKET {
            q.tail = NO_PACKET;
            self.queued_mask &= !(1 << class);
        }
        let b = p.frame_bytes as u64;
        q.bytes -= b;
        self.queued_total -= b;
        Some(id)
    }
}

impl Port {
    /// Take the next packet of `class` by input port: the oldest packet of
    /// the first ingress port after `last` (in local port order, wrapping)
    /// that has one queued here; `last` becomes that port. Round robin over
    /// input ports, FIFO within each (`switch.egress_sharing: input-port`).
    /// It walks the class's queue once: a cost per frame in the queue's
    /// length, paid only in that mode.
    pub fn dequeue_by_input(&mut self, class: u8, last: &mut u32, pkts: &mut PacketPool) -> Option<PacketId> {
        let q = &self.queues[class as usize];
        // The first packet, and the one before it, of the nearest ingress
        // port after `last`; and of the lowest (for the wrap).
        let (mut after, mut lowest): (Option<(u32, PacketId, PacketId)>, Option<(u32, PacketId, PacketId)>) =
            (None, None);
        let (mut prev, mut at) = (NO_PACKET, q.head);
        while at != NO_PACKET {
            let p = pkts.get(at);
            let from = p.ingress_port;
            if from > *last && after.is_none_or(|(f, ..)| from < f) {
                after = Some((from, at, prev));
            }
            if lowest.is_none_or(|(f, ..)| from < f) {
                lowest = Some((from, at, prev));
            }
            prev = at;
            at = p.queue_next;
        }
        let (from, id, before) = after.or(lowest)?;
        *last = from;
        let next = pkts.get(id).queue_next;
        let q = &mut self.queues[class as usize];
        if before == NO_PACKET {
            q.head = next;
        } else {
            pkts.get_mut(before).queue_next = next;
        }
        if q.tail == id {
            q.tail = before;
        }
        if q.head == NO_PACKET {
            self.queued_mask &= !(1 << class);
        }
        let b = pkts.get(id).frame_bytes as u64;
        q.bytes -= b;
        self.queued_total -= b;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Packet, PacketKind};
    use std::collections::VecDeque;

    /// The scan `pick_class` replaced: control first, then the highest ready
    /// data class (strict priority) or the next ready one in round robin.
    fn pick_by_scan(p: &Port, rr_next: &mut u8) -> Option<u8> {
        if !p.queue(CONTROL_CLASS).is_empty() {
            return Some(CONTROL_CLASS);
        }
        let ready = |c: u8| !p.queue(c).is_empty() && !p.is_paused(c);
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

    fn frame(pkts: &mut PacketPool, bytes: u32) -> PacketId {
        let mut f = Packet::new(PacketKind::Data);
        f.frame_bytes = bytes;
        pkts.alloc(f)
    }

    #[test]
    fn the_class_bitmasks_choose_as_the_queue_scan_did() {
        for strict in [false, true] {
            let mut rng = RngStream::new(7, "pick-class-test");
            let mut p = Port::new(0, 0, 0, Rate::gbps(100), Duration::from_us(1), rng.clone());
            let mut pkts = PacketPool::default();
            p.strict_priority = strict;
            let mut rr_next = p.rr_next;
            for step in 0..20_000u32 {
                match rng.below(4) {
                    0 | 1 => {
                        let id = frame(&mut pkts, 100);
                        p.enqueue(rng.below(NUM_CLASSES as u64) as u8, id, &mut pkts)
                    }
                    2 => p.set_paused(1 + rng.below(7) as u8, rng.below(2) == 0),
                    _ => {
                        let want = pick_by_scan(&p, &mut rr_next);
                        assert_eq!(p.pick_class(), want, "step {step}");
                        assert_eq!(p.rr_next, rr_next);
                        if let Some(c) = want {
                            p.dequeue(c, &pkts);
                        }
                    }
                }
                assert_eq!(p.has_queued(), p.queues().iter().any(|q| !q.is_empty()));
            }
        }
    }

    /// The multiplication a port keeps for whole picoseconds per byte gives
    /// the division's times, at whole and other rates, up to huge frames.
    #[test]
    fn a_port_serialises_as_its_rate_does() {
        let rates = [
            Rate(3),
            Rate(2_000),
            Rate(8_000_000_000_000),
            Rate::mbps(100),
            Rate::gbps(25),
            Rate::gbps(56),
            Rate::gbps(100),
            Rate::gbps(400),
            Rate(99_999_999_999),
        ];
        for rate in rates {
            let rng = RngStream::new(1, "serialise");
            let p = Port::new(0, 0, 0, rate, Duration::from_us(1), rng);
            for bytes in [0u64, 1, 64, 1048, 9000, 2_305_844, 1 << 40, u64::MAX / 8] {
                for tx in [TxTime::Exact, TxTime::Ns3Truncated] {
                    if tx == TxTime::Ns3Truncated && bytes > 1 << 40 {
                        continue; // (ns-3's double overflows its fixed point there)
                    }
                    assert_eq!(
                        p.serialization(tx, bytes),
                        tx.of(rate, bytes),
                        "{bytes} B at {rate} ({tx:?})"
                    );
                }
            }
        }
        assert_eq!(ps_per_byte(Rate::gbps(100)), 80);
        assert_eq!(ps_per_byte(Rate::gbps(56)), 0);
    }

    /// What every frame touches fits the first cache line, which is one
    /// line (the port is aligned to it), what a data frame's ECN marking
    /// reads the second, and a port stays small: large fabrics have
    /// hundreds of thousands.
    #[test]
    fn a_port_is_small_and_hot_fields_come_first() {
        assert!(
            std::mem::size_of::<Port>() <= 5 * 64,
            "{} B",
            std::mem::size_of::<Port>()
        );
        assert_eq!(std::mem::align_of::<Port>(), 64);
        let p = Port::new(
            0,
            0,
            0,
            Rate::gbps(100),
            Duration::from_us(1),
            RngStream::new(1, "t"),
        );
        let base = &p as *const Port as usize;
        let off = |f: *const u8| f as usize - base;
        // Every frame: the first line.
        assert!(off(&p.loss as *const f64 as *const u8) + 8 <= 64);
        let skipped = &p.skipped as *const SkippedTxDone as *const u8;
        assert!(off(skipped) + std::mem::size_of::<SkippedTxDone>() <= 64);
        // A data frame's ECN marking and queue accounting: the second.
        let ecn = &p.ecn as *const EcnConfig as *const u8;
        assert!(off(ecn) >= 64 && off(ecn) + std::mem::size_of::<EcnConfig>() <= 128);
        let total = &p.queued_total as *const u64 as *const u8;
        assert!(off(total) >= 64 && off(total) + 8 <= 128);
    }

    /// The chained class queues hand packets out as one `VecDeque` per class
    /// did, with the same byte counts, while packets are freed and reused.
    #[test]
    fn class_queues_are_fifos_with_their_byte_counts() {
        let mut rng = RngStream::new(3, "class-queue-test");
        let mut p = Port::new(0, 0, 0, Rate::gbps(100), Duration::from_us(1), rng.clone());
        let mut pkts = PacketPool::default();
        let mut model: Vec<VecDeque<PacketId>> = vec![VecDeque::new(); NUM_CLASSES];
        for step in 0..50_000u32 {
            let c = rng.below(NUM_CLASSES as u64) as u8;
            if rng.below(2) == 0 {
                let id = frame(&mut pkts, 64 + rng.below(1000) as u32);
                p.enqueue(c, id, &mut pkts);
                model[c as usize].push_back(id);
            } else {
                let got = p.dequeue(c, &pkts);
                assert_eq!(got, model[c as usize].pop_front(), "step {step}");
                if let Some(id) = got {
                    pkts.free(id);
                }
            }
            let q = p.queue(c);
            assert!(q.iter(&pkts).eq(model[c as usize].iter().copied()));
            let bytes: u64 = model[c as usize]
                .iter()
                .map(|&id| pkts.get(id).frame_bytes as u64)
                .sum();
            assert_eq!(q.bytes, bytes);
        }
        let total: u64 = p.queues().iter().map(|q| q.bytes).sum();
        assert_eq!(p.queued_total, total);
    }
}
