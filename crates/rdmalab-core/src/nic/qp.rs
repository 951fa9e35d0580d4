//! Reliable-connected queue pairs.
//!
//! A [`Qp`] holds both ends of one RC connection: the requester NIC posts
//! WQEs; the data sender (the requester for WRITE and SEND, the responder for
//! READ) packetises them, paces them at the QP's dequeue rate and keeps the
//! go-back-N state; the data receiver tracks the expected PSN, ACKs, NACKs and
//! generates CNPs. PSNs are counted from 0 per QP without the 24-bit wrap
//! (a QP would need 16 M packets in flight for the wrap to matter).

use crate::control::{Cc, EventMask, PathFacts, CC_TIMER_SLOTS};
use crate::time::{Rate, Time};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    Write,
    Read,
    Send,
}

impl Verb {
    pub fn name(self) -> &'static str {
        match self {
            Verb::Write => "write",
            Verb::Read => "read",
            Verb::Send => "send",
        }
    }
}

/// A QP owned by no tenant.
pub const NO_TENANT: u32 = u32::MAX;

/// Who posted a message, so its completion can be reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Flow(u32),
    App(u32),
}

/// One posted WQE (a message) and the PSNs it occupies.
#[derive(Clone, Copy, Debug)]
pub struct Message {
    pub origin: Origin,
    pub bytes: u64,
    pub first_psn: u32,
    pub packets: u32,
    /// Byte offset of the message's first byte in the QP's stream.
    pub first_byte: u64,
    /// When the doorbell made it visible to the NIC.
    pub posted_at: Time,
    /// When the application issued it (before any doorbell wait): its latency counts from here.
    pub issued_at: Time,
}

impl Message {
    #[inline]
    pub fn end_psn(&self) -> u32 {
        self.first_psn + self.packets
    }
}

/// Timer slots of a QP: retransmission, READ-request retry, then the controller's.
pub const RTO_SLOT: usize = 0;
pub const READ_RETRY_SLOT: usize = 1;
pub const PROBE_SLOT: usize = 2;
pub const CC_SLOT_BASE: usize = 3;
pub const TIMER_SLOTS: usize = CC_SLOT_BASE + CC_TIMER_SLOTS;

/// A lazily rescheduled timer: at most one engine event is pending; when it
/// fires early (the deadline moved later) it re-arms itself.
#[derive(Clone, Copy, Debug)]
pub struct QpTimer {
    pub deadline: Time,
    pub pending_at: Time,
    pub gen: u32,
}

impl Default for QpTimer {
    fn default() -> Self {
        QpTimer {
            deadline: Time::NEVER,
            pending_at: Time::NEVER,
            gen: 0,
        }
    }
}

pub struct Qp {
    pub id: u32,
    pub verb: Verb,
    pub requester: u32,
    pub responder: u32,
    /// NIC index and node of the data sender and receiver.
    pub tx_nic: u32,
    pub rx_nic: u32,
    pub src_node: u32,
    pub dst_node: u32,
    pub udp_sport: u16,
    /// UDP destination port: RoCEv2's 4791, or a flow file's `dport` (ns-3
    /// HPCC's ECMP hash reads it).
    pub udp_dport: u16,
    pub class: u8,
    /// The payload lives in device memory (GPU-Direct, NVMe-oF): it is read
    /// over the device's path to the NIC, not the host's PCIe.
    pub device_memory: bool,
    /// What the controller knows of the path (line rate, base RTT, hops, MTU).
    pub path: PathFacts,

    // --- data sender ---
    pub msgs: VecDeque<Message>,
    /// Messages removed from the front of `msgs` so far.
    pub msgs_popped: u64,
    pub psn_end: u32,
    pub byte_end: u64,
    /// PSNs below this may be sent (READ: the request has reached the responder).
    pub ready_psn_end: u32,
    pub snd_nxt: u32,
    pub snd_una: u32,
    /// One past the highest PSN ever sent (to tell retransmissions apart).
    pub highest_sent: u32,
    pub snd_nxt_off: u64,
    pub snd_una_off: u64,
    /// Index in `msgs` of the message holding `snd_nxt`.
    pub tx_cursor: usize,
    pub rate: Rate,
    pub window: Option<u64>,
    /// Packets per round-robin turn in the NIC's QP scheduler (a tenant's share).
    pub share: u32,
    pub turns_used: u32,
    /// WQE-granular scheduling: the current turn lasts until `snd_nxt` reaches this PSN.
    pub turn_end_psn: u32,
    pub next_avail: Time,
    /// `nic.resources`: the PSN whose contexts (QPC, WQE, MTT) were fetched
    /// after a miss, and when they are on chip (`u32::MAX`: none pending).
    pub ctx_psn: u32,
    pub ctx_ready_at: Time,
    /// `nic.resources.wqe_interval`: when the TX pipeline may start this QP's next WQE.
    pub wqe_ready_at: Time,
    /// When the last packet of the QP's latest finished WQE was out on the
    /// wire: its next WQE's `nic.wqe_overhead` starts then.
    pub wqe_out_at: Time,
    /// `control.trigger`: TX packets counted towards `every`, and the bytes
    /// and packets sent since the last TX event was raised.
    pub tx_triggered: u32,
    pub tx_held: (u64, u32),
    /// `control.on_path`: the PSN its TX core is processing, and when it is done.
    pub core_psn: u32,
    pub core_ready_at: Time,
    /// `QpScheduler::Srnic`: the outstanding WQE fetch of the next turn, which
    /// makes PSNs below `fetch_end_psn` sendable at `fetch_ready_at`
    /// (`Time::NEVER`: none outstanding).
    pub fetch_end_psn: u32,
    pub fetch_ready_at: Time,
    /// Selective repeat, sender: PSNs above `snd_una` the receiver reported
    /// received (SACKed), the holes queued for resending (oldest first), and
    /// the PSN below which holes have been queued in this loss episode.
    pub sacked: std::collections::BTreeSet<u32>,
    pub retx: std::collections::BTreeSet<u32>,
    pub retx_high: u32,
    /// Each resent hole and `highest_sent` when it was last resent: a SACK
    /// for a PSN at or above that (first sent after the resend) shows, on a
    /// FIFO path, that the hole, if still missing, was lost again.
    pub resent: std::collections::BTreeMap<u32, u32>,
    pub last_tx_start: Time,
    pub last_tx_wire: u32,
    /// In its NIC's round robin, or parked out of it while an on-path core
    /// works on its next packet (`Nic::parked`).
    pub in_active: bool,
    pub cc: Cc,
    pub cc_mask: EventMask,
    /// `nic.cc_scope`: the CC group whose state governs this QP
    /// (`cc_scope::NO_GROUP`: its own `cc`), and whether it is in the
    /// group's list of QPs with messages posted.
    pub group: u32,
    pub group_listed: bool,
    /// The tenant that owns it (`workload.tenants`; `NO_TENANT`: none).
    pub tenant: u32,
    /// Which of the destination host's addresses it connects to (0: the
    /// first); `cc_scope: destination` keeps one state per address.
    pub dst_address: u16,
    pub timers: [QpTimer; TIMER_SLOTS],

    // --- data receiver ---
    pub epsn: u32,
    pub rx_unacked: u32,
    pub nacked_psn: Option<(u32, Time)>,
    pub last_cnp: Option<Time>,
    /// Selective repeat, receiver: PSNs above `epsn` already placed (the
    /// bitmap SRNIC onloads to host memory), with the payload each carried
    /// (the receiver counts from what arrived, not from the sender's WQEs).
    pub rx_ooo: std::collections::BTreeMap<u32, u32>,
    /// A CE-marked packet arrived since the last ACK (echoed as ECE).
    pub rx_ce_pending: bool,
    /// Absolute index of the next message to complete at the receiver (READ).
    pub rx_next_msg: u64,
    /// When in-order data last arrived (or the READ was requested).
    pub last_rx_progress: Time,

    // --- out-of-band probes ---
    /// Probes sent and not yet answered: (id, UDP source port, sent at).
    pub probes: Vec<(u32, u16, Time)>,
    pub next_probe_id: u32,

    // --- counters ---
    /// Payload bytes delivered in order to the receiver.
    pub delivered_bytes: u64,
    pub sent_payload: u64,
    pub retransmitted_packets: u64,
    pub timeouts: u64,
    /// `delivered_bytes` at the previous sample.
    pub sampled_delivered: u64,
}

impl Qp {
    /// End PSN of a WQE-granular turn starting at `snd_nxt`: the rest of the
    /// current message, then further posted messages while the turn's bytes
    /// stay within `quantum`; never past what may be sent (`ready_psn_end`).
    pub fn wqe_turn_end(&self, quantum: u64, mtu: u64) -> u32 {
        let Some((first, m)) = self.message_of(self.snd_nxt) else {
            return self.snd_nxt + 1;
        };
        let mut end = m.end_psn().min(self.ready_psn_end);
        let mut bytes = m.bytes - (self.snd_nxt - m.first_psn) as u64 * mtu;
        for m in self.msgs.iter().skip(first + 1) {
            if m.first_psn >= self.ready_psn_end || bytes + m.bytes > quantum {
                break;
            }
            bytes += m.bytes;
            end = m.end_psn().min(self.ready_psn_end);
        }
        end.max(self.snd_nxt + 1)
    }

    /// Payload bytes of PSN `psn` (a full MTU, or the rest of its message).
    pub fn payload_of(&self, psn: u32, mtu: u32) -> u64 {
        match self.message_of(psn) {
            Some((_, m)) if psn + 1 == m.end_psn() => m.bytes - (m.packets as u64 - 1) * mtu as u64,
            _ => mtu as u64,
        }
    }

    /// Bytes sent and not yet acknowledged.
    #[inline]
    pub fn bytes_in_flight(&self) -> u64 {
        self.snd_nxt_off - self.snd_una_off
    }

    /// The limit on bytes in flight now: its window, scaled by its rate
    /// with `nic.window_scales_with_rate`; `None` when only its rate limits it.
    #[inline]
    pub fn effective_window(&self, scales_with_rate: bool) -> Option<u64> {
        let w = self.window?;
        Some(if scales_with_rate {
            self.rate.scale_bytes(w, self.path.line_rate)
        } else {
            w
        })
    }

    #[inline]
    pub fn has_unsent(&self) -> bool {
        self.snd_nxt < self.ready_psn_end || !self.retx.is_empty()
    }

    /// The message holding PSN `psn` among those not yet removed.
    pub fn message_of(&self, psn: u32) -> Option<(usize, &Message)> {
        let i = self.msgs.partition_point(|m| m.end_psn() <= psn);
        self.msgs
            .get(i)
            .filter(|m| m.first_psn <= psn)
            .map(|m| (i, m))
    }

    /// Stream byte offset of the first byte of PSN `psn` (or of the end of the stream).
    pub fn byte_offset_of(&self, psn: u32, mtu: u32) -> u64 {
        match self.message_of(psn) {
            Some((_, m)) => m.first_byte + (psn - m.first_psn) as u64 * mtu as u64,
            None => self.byte_end,
        }
    }
}
