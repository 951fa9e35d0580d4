//! Packets on the wire: what they carry, how many bytes they take, and the pool
//! they live in.
//!
//! A packet is created once (by a NIC or a switch's PFC logic), moves between
//! queues as a [`PacketId`] index, and is returned to the [`PacketPool`] when
//! it is consumed or dropped. Nothing on the hot path allocates.

pub mod wire;

pub use wire::WireFormat;

use crate::time::{Rate, Time};

pub type PacketId = u32;
pub type QpId = u32;
pub type NodeId = u32;

/// Traffic class (802.1p priority / switch queue index), 0..8.
pub type TrafficClass = u8;
pub const NUM_CLASSES: usize = 8;

/// What a packet is, in RoCEv2 terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// Payload of a WRITE, SEND or READ response.
    Data,
    /// RC acknowledgement: AETH with the cumulative PSN.
    Ack,
    /// RC negative acknowledgement (PSN sequence error): the sender goes back to `psn`.
    Nack,
    /// Congestion notification packet (RoCEv2 opcode 0x81), sent by the notification point.
    Cnp,
    /// A READ request asking the responder for `len` bytes starting at PSN `psn`.
    ReadRequest,
    /// 802.1Qbb priority flow control frame for one class; `pause == false` is a resume.
    Pfc { class: TrafficClass, pause: bool },
    /// An out-of-band RTT probe (UDP, routable): `psn` carries the probe id and
    /// `udp_sport` the path it should take. The peer NIC answers at once.
    Probe,
    /// The peer's answer to a probe, echoing its id and transmit timestamp.
    ProbeReply,
    /// An out-of-band message between the two ends of a QP (peer domain). Its
    /// 16 bytes of content ride in `psn`, `payload` and `tx_timestamp`.
    Oob { to_receiver: bool },
}

impl PacketKind {
    /// Control packets travel in the strict-priority class and are never paused.
    #[inline]
    pub fn is_control(self) -> bool {
        !matches!(
            self,
            PacketKind::Data
                | PacketKind::ReadRequest
                | PacketKind::Probe
                | PacketKind::ProbeReply
                | PacketKind::Oob { .. }
        )
    }
}

/// One in-band network telemetry record, pushed by a switch egress port at dequeue
/// (the fields HPCC uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Egress port queue length (all classes), bytes, after this packet left.
    pub qlen_bytes: u64,
    /// Bytes the egress port has transmitted since the start of the run.
    pub tx_bytes: u64,
    pub timestamp: Time,
    pub link_rate: Rate,
}

/// Up to this many INT hops are recorded (the ns-3 HPCC simulator's limit, too).
pub const MAX_INT_HOPS: usize = 5;

/// A frame in flight or in a queue. Aligned to a cache line (56 bytes
/// become 64): unaligned, six of eight slots straddled two lines, and an
/// arrival, which finds its packet cold (last touched a link delay
/// earlier), missed on both while the event loop prefetched only the first.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub struct Packet {
    pub kind: PacketKind,
    pub qp: QpId,
    pub src: NodeId,
    pub dst: NodeId,
    /// UDP source port: the entropy ECMP hashes on (and the path a sender can choose).
    pub udp_sport: u16,
    pub class: TrafficClass,
    pub psn: u32,
    /// Payload bytes (for Data) or requested bytes (for ReadRequest).
    pub payload: u32,
    /// Frame bytes: headers + payload + FCS, without preamble and inter-frame gap.
    pub frame_bytes: u32,
    /// ECN codepoint: set to CE by a switch that marks it.
    pub ecn_ce: bool,
    /// Last packet of its message (the receiver ACKs it at once).
    pub msg_last: bool,
    /// On an ACK: the data it acknowledges arrived ECN-marked (DCTCP's ECE).
    pub ece: bool,
    /// Switches crossed. An ACK carries its data packet's count and the
    /// switches on its own way back do not add to it.
    pub hops: u8,
    /// Switches this frame itself has crossed (never echoed): where along
    /// its remembered path (see [`crate::net::routing::PathCache`]) it is.
    pub path_hop: u8,
    /// ECN-capable transport (RoCEv2 data sets ECT; control packets do not).
    pub ect: bool,
    /// When the sender put the first bit of the data packet on the wire (echoed in ACKs for RTT).
    pub tx_timestamp: Time,
    /// Ingress port at the switch currently holding the packet (buffer accounting).
    pub ingress_port: u32,
    /// The next packet in the egress queue holding this one (an intrusive
    /// list: see [`crate::net::ClassQueue`]); meaningless outside a queue.
    pub queue_next: PacketId,
    /// INT records pushed so far; the records live in [`PacketPool`]'s side table
    /// so that packets stay small when INT is off.
    pub int_hops: u8,
    /// On a selective-repeat NACK: the PSN that arrived out of order (a SACK).
    pub sack_psn: u32,
}

impl Packet {
    pub fn new(kind: PacketKind) -> Self {
        Packet {
            kind,
            qp: 0,
            src: 0,
            dst: 0,
            udp_sport: 0,
            class: 0,
            psn: 0,
            payload: 0,
            frame_bytes: 0,
            msg_last: false,
            ece: false,
            hops: 0,
            path_hop: 0,
            ecn_ce: false,
            ect: false,
            tx_timestamp: Time::ZERO,
            ingress_port: u32::MAX,
            queue_next: PacketId::MAX,
            int_hops: 0,
            sack_psn: 0,
        }
    }
}

/// Preallocated packet storage with a free list.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    /// INT records per slot, kept only when INT is on.
    int: Vec<[IntHop; MAX_INT_HOPS]>,
    int_enabled: bool,
    /// Extensible CC header words per slot (`control.cc_header`; empty when off).
    hdr: Vec<[u32; crate::control::MAX_CC_HEADER_WORDS]>,
    hdr_words: usize,
    free: Vec<PacketId>,
    live: usize,
    /// Packets lent to another pool ([`PacketPool::lend`]): out of their
    /// slots, still counted in `live` until [`PacketPool::settle_lent`].
    lent: usize,
    /// The most packets live at once since [`PacketPool::mark_peak`].
    peak: usize,
    /// The most packets ever live at once.
    high: usize,
}

/// A packet between two pools, with its side-table records.
#[derive(Clone, Copy)]
pub struct MovedPacket {
    pub packet: Packet,
    int: Option<[IntHop; MAX_INT_HOPS]>,
    header: Option<[u32; crate::control::MAX_CC_HEADER_WORDS]>,
}

impl PacketPool {
    pub fn with_int(int_enabled: bool) -> Self {
        PacketPool {
            int_enabled,
            ..Default::default()
        }
    }

    /// One more packet live, and the peaks it may raise.
    #[inline(always)]
    fn count_new(&mut self) {
        self.live += 1;
        self.peak = self.peak.max(self.live);
        self.high = self.high.max(self.live);
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.count_new();
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = p;
            id
        } else {
            self.slots.push(p);
            if self.int_enabled {
                self.int.push([IntHop::default(); MAX_INT_HOPS]);
            }
            if self.hdr_words > 0 {
                self.hdr.push([0; crate::control::MAX_CC_HEADER_WORDS]);
            }
            (self.slots.len() - 1) as PacketId
        }
    }

    /// Carry `words` 32-bit words of extensible CC header per packet (call
    /// before any packet is allocated).
    pub fn enable_cc_header(&mut self, words: usize) {
        self.hdr_words = words.min(crate::control::MAX_CC_HEADER_WORDS);
    }

    /// Write packet `id`'s extensible CC header.
    #[inline]
    pub fn set_header(&mut self, id: PacketId, words: &[u32; crate::control::MAX_CC_HEADER_WORDS]) {
        if self.hdr_words > 0 {
            self.hdr[id as usize] = *words;
        }
    }

    /// Packet `id`'s extensible CC header (empty when off).
    pub fn header_of(&self, id: PacketId) -> &[u32] {
        if self.hdr_words > 0 {
            &self.hdr[id as usize][..self.hdr_words]
        } else {
            &[]
        }
    }

    /// Append an INT hop record to packet `id` (ignored past [`MAX_INT_HOPS`]).
    #[inline]
    pub fn push_int(&mut self, id: PacketId, hop: IntHop) {
        let p = &mut self.slots[id as usize];
        if self.int_enabled && (p.int_hops as usize) < MAX_INT_HOPS {
            self.int[id as usize][p.int_hops as usize] = hop;
            p.int_hops += 1;
        }
    }

    /// Packet `ack` takes the slot of packet `data`, whose INT records and
    /// CC header words it echoes: they stay where the switches wrote them
    /// instead of being copied (160 bytes per ACK with INT). `data` is gone,
    /// but counted live until [`PacketPool::retire_echoed`], as if `ack` had
    /// been allocated beside it and `data` freed then: the counts of live
    /// packets, an output, stay those of that order.
    #[inline]
    pub fn echo_into(&mut self, data: PacketId, mut ack: Packet) -> PacketId {
        self.count_new();
        let slot = &mut self.slots[data as usize];
        ack.int_hops = slot.int_hops;
        *slot = ack;
        data
    }

    /// The data packet whose slot an ACK took ([`PacketPool::echo_into`])
    /// stops counting as live.
    #[inline]
    pub fn retire_echoed(&mut self) {
        self.live -= 1;
    }

    /// The INT records of packet `id`.
    pub fn int_of(&self, id: PacketId) -> &[IntHop] {
        let n = self.slots[id as usize].int_hops as usize;
        if self.int_enabled {
            &self.int[id as usize][..n]
        } else {
            &[]
        }
    }

    #[inline]
    pub fn free(&mut self, id: PacketId) {
        self.live -= 1;
        self.free.push(id);
    }

    /// Where packet `id` lives (a prefetch hint: `id` may be stale).
    #[inline]
    pub fn slot_ptr(&self, id: PacketId) -> *const Packet {
        self.slots.as_ptr().wrapping_add(id as usize)
    }

    /// Start loading packet `id`'s INT records, when they are kept: the
    /// next switch writes one, the sender's CC reads them from the ACK that
    /// took the data packet's slot ([`PacketPool::echo_into`]), each long
    /// after they were last touched.
    #[inline(always)]
    pub fn prefetch_int(&self, id: PacketId) {
        if self.int_enabled {
            let at = self.int.as_ptr().wrapping_add(id as usize) as *const u8;
            let bytes = std::mem::size_of::<[IntHop; MAX_INT_HOPS]>();
            let mut off = 0;
            while off < bytes {
                crate::engine::prefetch(at.wrapping_add(off));
                off += 64;
            }
            // 160-byte entries start anywhere in a line: they may touch a fourth.
            crate::engine::prefetch(at.wrapping_add(bytes - 1));
        }
    }

    /// The QP of slot `id` if there is such a slot, live or not (a hint).
    #[inline]
    pub fn peek_qp(&self, id: PacketId) -> Option<QpId> {
        self.slots.get(id as usize).map(|p| p.qp)
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id as usize]
    }

    /// Bytes of packet slots, live or free: what the pool spans in memory.
    #[inline]
    pub fn slot_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Packet>()
    }

    /// Packets currently allocated (in a queue or on a link).
    pub fn live(&self) -> usize {
        self.live
    }

    /// Start watching the most packets live at once from now.
    pub fn mark_peak(&mut self) {
        self.peak = self.live;
    }

    /// The most packets live at once since [`PacketPool::mark_peak`].
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Take packet `id` out of this pool with its INT records and CC header
    /// words (a frame crossing from one partition of a parallel run to another).
    pub fn take(&mut self, id: PacketId) -> MovedPacket {
        let m = MovedPacket {
            packet: self.slots[id as usize],
            int: self.int.get(id as usize).copied(),
            header: self.hdr.get(id as usize).copied(),
        };
        self.free(id);
        m
    }

    /// Copy packet `id` out (its INT records and CC header words onto `int`
    /// and `hdr`, when this pool keeps them) and free its slot, but go on
    /// counting it live: a frame on a link to another partition of a
    /// parallel run is live until the window ends ([`PacketPool::settle_lent`]).
    pub fn lend(
        &mut self,
        id: PacketId,
        int: &mut Vec<[IntHop; MAX_INT_HOPS]>,
        hdr: &mut Vec<[u32; crate::control::MAX_CC_HEADER_WORDS]>,
    ) -> Packet {
        if self.int_enabled {
            int.push(self.int[id as usize]);
        }
        if self.hdr_words > 0 {
            hdr.push(self.hdr[id as usize]);
        }
        self.free.push(id);
        self.lent += 1;
        self.slots[id as usize]
    }

    /// The packets lent since the last call are no longer live here.
    pub fn settle_lent(&mut self) {
        self.live -= self.lent;
        self.lent = 0;
    }

    /// Put a packet lent by another pool into this one, with its INT
    /// records and CC header words if both pools keep them.
    pub fn put_lent(
        &mut self,
        p: Packet,
        int: Option<&[IntHop; MAX_INT_HOPS]>,
        hdr: Option<&[u32; crate::control::MAX_CC_HEADER_WORDS]>,
    ) -> PacketId {
        let id = self.alloc(p);
        if let (Some(int), true) = (int, self.int_enabled) {
            self.int[id as usize] = *int;
        }
        if let (Some(h), true) = (hdr, self.hdr_words > 0) {
            self.hdr[id as usize] = *h;
        }
        id
    }

    /// Put a packet taken from another pool into this one; returns its id here.
    pub fn put(&mut self, m: MovedPacket) -> PacketId {
        let id = self.alloc(m.packet);
        if let (Some(int), true) = (m.int, self.int_enabled) {
            self.int[id as usize] = int;
        }
        if let (Some(h), true) = (m.header, self.hdr_words > 0) {
            self.hdr[id as usize] = h;
        }
        id
    }

    /// Count `high` as the most packets ever live at once (a parallel run
    /// folding its partitions' pools into one knows the true figure).
    pub fn set_high_water(&mut self, high: usize) {
        self.high = high;
    }

    /// High-water mark of simultaneously live packets.
    pub fn capacity_used(&self) -> usize {
        // Slots are reused before new ones are made, so this is the pool's size.
        self.high
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet is one cache line, on a line: an arrival's first touch of
    /// its (cold) packet is one miss, and one prefetch covers it.
    #[test]
    fn a_packet_slot_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Packet>(), 64);
        assert_eq!(std::mem::align_of::<Packet>(), 64);
    }

    /// An ACK that takes its data packet's slot keeps the records the
    /// switches wrote, and counts as the allocate-then-free it replaces.
    #[test]
    fn an_echoed_ack_keeps_the_records_and_counts_as_a_copy_would() {
        let mut pool = PacketPool::with_int(true);
        let data = pool.alloc(Packet::new(PacketKind::Data));
        let hop = |q| IntHop {
            qlen_bytes: q,
            tx_bytes: 2 * q,
            timestamp: Time(3 * q),
            link_rate: Rate::gbps(100),
        };
        pool.push_int(data, hop(1));
        pool.push_int(data, hop(7));
        pool.mark_peak();
        let ack = pool.echo_into(data, Packet::new(PacketKind::Ack));
        assert_eq!(ack, data);
        assert_eq!(pool.get(ack).kind, PacketKind::Ack);
        assert_eq!(pool.int_of(ack), &[hop(1), hop(7)]);
        // Both counted live until the data packet is retired, as when the
        // ACK was allocated beside it.
        assert_eq!((pool.live(), pool.peak(), pool.capacity_used()), (2, 2, 2));
        pool.retire_echoed();
        assert_eq!(pool.live(), 1);
        pool.free(ack);
        assert_eq!(pool.live(), 0);
        // Its slot is free again, and only one was ever made.
        assert_eq!(pool.alloc(Packet::new(PacketKind::Data)), data);
    }
}
