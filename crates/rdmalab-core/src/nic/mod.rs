//! The RDMA NIC: QP scheduler and packetiser on the TX side, ACK/NACK/CNP
//! generation on the RX side, go-back-N loss recovery, and the hooks that
//! turn what happens into control-plane events.
//!
//! TX order at a NIC port: control frames (ACK, NACK, CNP) first, then READ
//! requests, then one data packet from the next eligible QP in round-robin
//! order. A QP is eligible when it has PSNs ready to send, its dequeue rate
//! allows (`next_avail ≤ now`), its window is open, and its traffic class is
//! not paused by PFC.

pub mod cc;
pub mod qp;
pub mod reliability;
pub mod rx;

use crate::control::CcEvent;
use crate::net::CONTROL_CLASS;
use crate::packet::{Packet, PacketId, PacketKind, WireFormat};
use crate::time::{Duration, Rate, Time};
use crate::world::{Event, World};
use qp::Verb;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct NicConfig {
    pub wire: WireFormat,
    /// Send a cumulative ACK after this many in-order packets (and always at a message's end).
    pub ack_every_packets: u32,
    /// Minimum time between CNPs for one QP at the notification point.
    pub cnp_interval: Duration,
    /// A NACK for the same expected PSN is repeated at most this often.
    pub nack_repeat_interval: Duration,
    /// Retransmission timeout: with data outstanding and no ACK progress for this
    /// long, go back to the oldest unacknowledged PSN. `None`: no timeout, as in
    /// the ns-3 HPCC simulator (a lost tail packet then stalls its flow).
    pub rto: Option<Duration>,
    /// Traffic class of data packets.
    pub data_class: u8,
    /// Traffic class of ACKs and NACKs: the control class (strict priority,
    /// never paused), or the data class (ns-3 HPCC with ACK_HIGH_PRIO 0).
    pub ack_class: u8,
    /// How the notification point signals congestion.
    pub cnp: CnpMode,
    /// Per-QP window (bytes in flight) at the line rate.
    pub window: WindowConfig,
    /// Scale the window by dequeue rate / line rate (ns-3 VAR_WIN).
    pub window_scales_with_rate: bool,
    /// Base RTT that controllers and `window: bdp` use: each QP's own path, or
    /// the fabric's largest (ns-3 GLOBAL_T 1).
    pub base_rtt: BaseRtt,
    /// A probe not answered within this time is reported lost (SCR Fig. 19: 100 µs).
    pub probe_timeout: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CnpMode {
    /// A separate CNP packet, at most one per QP per `cnp_interval` (RoCEv2).
    Packet,
    /// A flag on the ACK of every CE-marked packet (the ns-3 HPCC simulator).
    AckFlag,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowConfig {
    None,
    /// The bandwidth-delay product of the QP's base RTT at its line rate.
    Bdp,
    Bytes(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseRtt {
    Path,
    FabricMax,
}

pub struct Nic {
    pub node: u32,
    pub port: u32,
    pub line_rate: Rate,
    /// QPs with PSNs ready to send, in round-robin order.
    pub active: VecDeque<u32>,
    /// READ requests waiting for the port.
    pub requests: VecDeque<PacketId>,
    /// Time of the pending wake-up event, if any.
    pub wake_at: Time,
}

impl Nic {
    pub fn new(node: u32, port: u32, line_rate: Rate) -> Self {
        Nic { node, port, line_rate, active: VecDeque::new(), requests: VecDeque::new(), wake_at: Time::NEVER }
    }
}

impl World {
    /// Pick the next frame a NIC port sends, or schedule a wake-up if QPs are
    /// only held back by their dequeue rate.
    pub(crate) fn nic_dequeue(&mut self, port: u32) -> Option<PacketId> {
        let node = self.ports[port as usize].node;
        let nic_i = self.node_index[node as usize] as usize;
        let pkts = &self.pkts;
        if let Some(p) = self.ports[port as usize].dequeue(CONTROL_CLASS, |id| pkts.get(id).frame_bytes) {
            return Some(p);
        }
        // ACKs in a data class go first unless that class is paused (as ns-3's RdmaEgressQueue).
        let ack_class = self.nic_cfg.ack_class;
        if ack_class != CONTROL_CLASS && !self.ports[port as usize].paused[ack_class as usize] {
            if let Some(p) = self.ports[port as usize].dequeue(ack_class, |id| pkts.get(id).frame_bytes) {
                return Some(p);
            }
        }
        if let Some(&req) = self.nics[nic_i].requests.front() {
            if !self.ports[port as usize].paused[self.pkts.get(req).class as usize] {
                return self.nics[nic_i].requests.pop_front();
            }
        }
        let now = self.now();
        let mut earliest = Time::NEVER;
        let n = self.nics[nic_i].active.len();
        for _ in 0..n {
            let qi = self.nics[nic_i].active.pop_front().expect("counted");
            let qp = &mut self.qps[qi as usize];
            if !qp.has_unsent() {
                qp.in_active = false;
                continue;
            }
            self.nics[nic_i].active.push_back(qi);
            if self.ports[port as usize].paused[qp.class as usize] {
                continue;
            }
            if let Some(w) = qp.window {
                let w = if self.nic_cfg.window_scales_with_rate {
                    (w as u128 * qp.rate.bps() as u128 / qp.path.line_rate.bps().max(1) as u128) as u64
                } else {
                    w
                };
                if qp.bytes_in_flight() >= w.max(1) {
                    continue;
                }
            }
            if qp.next_avail > now {
                earliest = earliest.min(qp.next_avail);
                continue;
            }
            return Some(self.packetize(qi));
        }
        if earliest != Time::NEVER && earliest < self.nics[nic_i].wake_at {
            self.nics[nic_i].wake_at = earliest;
            self.q.schedule(earliest, Event::NicWake { nic: nic_i as u32 });
        }
        None
    }

    /// Build the data packet for `snd_nxt` of QP `qi` and advance the QP.
    fn packetize(&mut self, qi: u32) -> PacketId {
        let now = self.now();
        let wire = self.nic_cfg.wire;
        let qp = &mut self.qps[qi as usize];
        while qp.msgs[qp.tx_cursor].end_psn() <= qp.snd_nxt {
            qp.tx_cursor += 1;
        }
        let m = qp.msgs[qp.tx_cursor];
        let psn = qp.snd_nxt;
        let last = psn + 1 == m.end_psn();
        let payload = if last { m.bytes - (m.packets as u64 - 1) * wire.mtu_payload as u64 } else { wire.mtu_payload as u64 };
        let extra = if qp.verb == Verb::Write && psn == m.first_psn { wire.write_first_extra } else { 0 };
        let frame = wire.data_frame(payload as u32, extra);
        let is_retx = psn < qp.highest_sent;
        let mut p = Packet::new(PacketKind::Data);
        p.qp = qi;
        p.src = qp.src_node;
        p.dst = qp.dst_node;
        p.udp_sport = qp.udp_sport;
        p.class = qp.class;
        p.psn = psn;
        p.payload = payload as u32;
        p.frame_bytes = frame;
        p.ect = true;
        p.tx_timestamp = now;
        p.msg_last = last;
        qp.snd_nxt += 1;
        qp.snd_nxt_off += payload;
        if qp.snd_nxt > qp.highest_sent {
            qp.highest_sent = qp.snd_nxt;
        }
        let wire_bytes = wire.on_wire(frame);
        qp.next_avail = now + qp.rate.serialization(wire_bytes as u64);
        qp.last_tx_start = now;
        qp.last_tx_wire = wire_bytes;
        qp.sent_payload += payload;
        if is_retx {
            qp.retransmitted_packets += 1;
            self.stats.retransmitted_packets += 1;
        }
        self.stats.data_payload_sent += payload;
        let wants_tx = qp.cc_mask.has(crate::control::EventMask::TX);
        self.arm_rto(qi);
        if wants_tx {
            self.raise_cc(qi, CcEvent::Tx { bytes: payload as u32, packets: 1 }, None);
        }
        self.pkts.alloc(p)
    }

    /// Make sure QP `qi` is in its sending NIC's round robin and kick the port.
    pub(crate) fn activate(&mut self, qi: u32) {
        let qp = &mut self.qps[qi as usize];
        if qp.has_unsent() && !qp.in_active {
            qp.in_active = true;
            let nic = qp.tx_nic as usize;
            self.nics[nic].active.push_back(qi);
        }
        let port = self.nics[self.qps[qi as usize].tx_nic as usize].port;
        self.try_transmit(port);
    }

    /// Queue a control frame (ACK, NACK, CNP) at a NIC; an ACK may echo the
    /// INT records of the data packet `int_from`.
    pub(crate) fn send_control(&mut self, nic: u32, p: Packet, int_from: Option<PacketId>) {
        let port = self.nics[nic as usize].port;
        let (frame, class) = (p.frame_bytes, p.class);
        let id = self.pkts.alloc(p);
        if let Some(from) = int_from {
            self.pkts.copy_int(from, id);
        }
        self.ports[port as usize].enqueue(class, id, frame);
        self.try_transmit(port);
    }
}
