//! The RDMA NIC: QP scheduler and packetiser on the TX side, ACK/NACK/CNP
//! generation on the RX side, go-back-N loss recovery, and the hooks that
//! turn what happens into control-plane events.
//!
//! TX order at a NIC port: control frames (ACK, NACK, CNP) first, then READ
//! requests, then data from the next eligible QP in round-robin order, one
//! packet per turn, or `share` packets for a QP whose share was raised, or
//! (`QpScheduler::Wqe`, a commodity RNIC) whole WQEs per turn. A QP is
//! eligible when it has PSNs ready to send, its dequeue rate
//! allows (`next_avail ≤ now`), its window is open, and its traffic class is
//! not paused by PFC. Under WQE turns a QP that its rate limiter (or its next
//! WQE's fetch) holds mid-turn keeps the turn; others fill its gaps.

pub mod cc;
pub mod config;
pub mod cc_cores;
pub mod cc_scope;
pub mod context_fetch;
pub mod qp;
pub mod reliability;
pub mod resources;
pub mod rx;

use crate::control::CcEvent;
use crate::net::CONTROL_CLASS;
use crate::packet::{Packet, PacketId, PacketKind};
use crate::time::{Duration, Rate, Time};
use crate::world::{Event, World};
use qp::{Origin, Qp, Verb};
use std::collections::VecDeque;

pub use config::{NicConfig, Rto};


/// SwCC's selective triggering (ATC'25 §3.3): an event filter by packet
/// opcode, so the CC cores see only the packets an algorithm needs. Sent
/// data packets are told apart as a message's first, middle and last; of
/// the TX packets that pass, only every `every`-th raises an event, which
/// then carries the bytes and packets of those skipped since the last one
/// (so byte counts stay whole). ACK, NACK, CNP and RX events pass or not by
/// kind; a skipped ACK's acknowledged bytes are not folded into the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriggerMask {
    pub tx_first: bool,
    pub tx_middle: bool,
    pub tx_last: bool,
    /// Other packet events that pass (a subset of `EventMask` bits).
    pub events: crate::control::EventMask,
    pub every: u32,
}

impl TriggerMask {
    pub const NAMES: &'static [&'static str] = &[
        "tx_first",
        "tx_middle",
        "tx_last",
        "ack",
        "nack",
        "cnp",
        "rx",
    ];
}

/// `control.on_path`: cores that sit in the NIC's send path (SwCC's TX
/// cores, ATC'25 §3). A QP is steered to core QPN mod `tx_cores`; a core
/// runs one packet at a time to completion, so a busy core holds back its
/// QPs' packets, and one core sends at most one packet per `per_packet`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnPathCores {
    /// TX cores (0: none on the path).
    pub tx_cores: u32,
    /// Core time per data packet: cycles ÷ clock.
    pub per_packet: Duration,
    /// RX cores that handle every ACK, NACK and CNP before its effect (0: none).
    pub rx_cores: u32,
    pub rx_per_packet: Duration,
    /// Where the cores find QP contexts, and what it costs them per event
    /// (`None`: nothing beyond the per-packet cost).
    pub memory: Option<cc_cores::ContextMemoryConfig>,
    /// Core time per payload byte of a data packet, on top of the
    /// per-packet cost (a CPU stack's copies and software ICRC).
    pub per_byte: Duration,
    /// TX and RX events share one pool of `tx_cores` (a ConnectX PU or a
    /// Soft-RoCE thread does both for its QP); `false`: separate pools (SwCC).
    pub shared: bool,
    /// The receiving NIC's RX core also handles every arriving data packet
    /// before it is delivered and acknowledged (Soft-RoCE's receive path).
    pub rx_data: bool,
}

impl OnPathCores {
    /// Core time for one event of a packet with `payload` bytes.
    pub fn cost(&self, rx: bool, payload: u64) -> Duration {
        let base = if rx {
            self.rx_per_packet
        } else {
            self.per_packet
        };
        base + Duration(self.per_byte.ps().saturating_mul(payload))
    }

    /// RX events have cores to run on (their own pool, or the shared one).
    pub fn handles_rx(&self) -> bool {
        if self.shared {
            self.tx_cores > 0
        } else {
            self.rx_cores > 0
        }
    }
}

/// How a NIC recovers lost packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossRecovery {
    /// The receiver drops out-of-order packets and NACKs the expected PSN;
    /// the sender resends everything from there (RoCEv2, the IB spec).
    #[default]
    GoBackN,
    /// SRNIC/IRN: out-of-order packets are placed (header extensions say
    /// where) and recorded; each one is answered with a NACK carrying the
    /// expected PSN and the PSN received (a SACK), and the sender resends
    /// the holes, each again if a SACK for a packet sent after its resend
    /// shows it still missing; an RTO resends every PSN not yet known
    /// received. A lost NACK makes its PSN look like a hole.
    SelectiveRepeat,
}

/// The granularity of the NIC's round-robin QP scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpScheduler {
    /// One packet per turn (or `share` packets): byte-fair among backlogged
    /// QPs whatever their message sizes. The ns-3 HPCC simulator's
    /// `RdmaEgressQueue` and htsim schedule this way.
    Packet,
    /// A commodity RNIC: a turn dequeues whole WQEs while they fit in
    /// `quantum` bytes, and at least one (the rest of the current message),
    /// and the transport sends all their packets before the next QP's turn.
    /// A WQE is never split, so a QP whose messages exceed the quantum takes
    /// a whole message per turn: the greedy large-message bias SCR (Table 2,
    /// §5.1), Justitia and Flor report. A QP whose window closes loses the
    /// port until its next turn, where it resumes what is left of its WQEs.
    /// One held back mid-turn by its dequeue rate keeps its turn when
    /// `keep_paced_turn` (`nic.paced_turn: keep`): the limiter delays the
    /// QP's next packet, the WQEs the turn took stay with it, other QPs send
    /// single packets in its gaps, and it goes first again once its limiter
    /// lets it. ConnectX packet pacing works this way: a paced QP's next
    /// packet is scheduled after its burst, it does not give up its work
    /// (NVIDIA 5T manual, "Packet Pacing"). So a limit above what a QP would
    /// get anyway changes nothing. With `false` it goes to the back and a
    /// rate below line rate turns WQE turns into packet round robin.
    Wqe { quantum: u64, keep_paced_turn: bool },
    /// Packet round robin exactly as the ns-3 HPCC simulator's
    /// `RdmaEgressQueue::GetNextQindex`: the NIC's QPs stay in one list in
    /// the order they were created, the scan starts after the index that
    /// sent last, and finished QPs are cut out of the list without moving
    /// that index (so a turn is sometimes skipped). A new QP's first turn
    /// comes before the scan wraps, not after every other QP.
    Ns3Hpcc,
    /// SRNIC's cache-free SQ scheduler (§4.3.1): QPs with work and credit
    /// take turns; a turn fetches up to `wqes` WQEs and `min(burst, credit)`
    /// bytes of their messages over PCIe, and the WQEs whose messages did not
    /// fit are dropped and fetched again next turn (no WQE cache). A QP has
    /// one fetch outstanding at a time, issued when the last one is back, so
    /// a QP's message rate is at most `wqes` per PCIe round trip (8 per
    /// 1.1 µs ≈ 7.2 Mrps). Sending among QPs with fetched data is packet
    /// round robin.
    Srnic { wqes: u32, burst: u64 },
}

/// The host's PCIe link as the NIC sees it: every data packet's payload, and
/// a 64 B WQE per message, is read from host memory over it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieConfig {
    /// Usable DMA bandwidth (Gen4 x16: 16 GT/s × 16 lanes × 128/130 ≈ 252 Gb/s).
    pub bandwidth: Rate,
    /// DMA read round trip on an idle link (doorbell to data, WQE to payload).
    pub latency: Duration,
}

/// Bytes of one WQE read from host memory (a 64 B send-queue entry, the
/// ConnectX WQE basic block).
pub const WQE_BYTES: u64 = 64;

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

/// When a controller's new dequeue rate takes effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RateChange {
    /// At once: the next packet leaves one gap at the new rate after the
    /// last one started (ns-3 HPCC's `ChangeRate`, which its HPCC uses).
    #[default]
    Immediate,
    /// From the packet after next: the next departure was fixed when the last
    /// packet left, at the old rate (ns-3 HPCC's DCQCN, TIMELY and DCTCP,
    /// which assign `m_rate` and leave `m_nextAvail`).
    NextPacket,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseRtt {
    Path,
    FabricMax,
    /// One value for every QP (e.g. the ns-3 HPCC simulator's maxRtt, which
    /// `rdmalab hpcc convert` computes with ns-3's own formula).
    Fixed(Duration),
}

impl NicConfig {
    /// Whether lost packets are recovered by selective repeat (SRNIC, IRN)
    /// rather than go-back-N.
    pub fn selective_repeat(&self) -> bool {
        self.loss_recovery == LossRecovery::SelectiveRepeat
    }
}

pub struct Nic {
    pub node: u32,
    pub port: u32,
    pub line_rate: Rate,
    /// QPs with PSNs ready to send, in round-robin order.
    pub active: VecDeque<u32>,
    /// `QpScheduler::Ns3Hpcc`: the NIC's QPs in creation order, and the index
    /// of the one that sent last.
    pub ns3_qps: Vec<u32>,
    pub ns3_rr_last: usize,
    /// READ requests waiting for the port.
    pub requests: VecDeque<PacketId>,
    /// Time of the pending wake-up event, if any.
    pub wake_at: Time,
    /// When the DMA engine will have read everything asked of it so far.
    pub pcie_free_at: Time,
    /// Bytes read over PCIe, and the sum of DMA waits (for the host reports).
    pub pcie_bytes: u64,
    pub pcie_wait_ps: u128,
    pub pcie_reads: u64,
    /// Counters at the previous host report.
    pub reported: (u64, u128, u64, u64),
    /// Frame bytes and data payload bytes that arrived at this NIC.
    pub rx_bytes: u64,
    pub rx_payload: u64,
    /// Pipeline time the frame being handed to the port adds after it (a new WQE's overhead).
    /// When the device-memory DMA path will have read everything asked of it, and bytes read over it.
    pub device_free_at: Time,
    pub device_bytes: u64,
    /// On-chip caches and processing units (`nic.resources`).
    pub res: Option<Box<resources::NicResources>>,
    /// The UAR pages of this host's device context (`host.uar`).
    pub uar: Option<Box<crate::host::UarPages>>,
    /// `control.on_path`: when each TX core is free, and packets it processed.
    pub tx_cores: Vec<Time>,
    pub tx_core_packets: u64,
    /// When each RX core is free, and the packets it handled.
    pub rx_cores: Vec<Time>,
    pub rx_core_packets: u64,
    /// `control.on_path.memory`: the CC cores' QP-context memory.
    pub ctx_mem: Option<cc_cores::ContextMemory>,
    /// `control.on_path`: QPs out of the round robin while their next packet
    /// is with their TX core, by when it is done (they stay `in_active`).
    pub parked: std::collections::BinaryHeap<std::cmp::Reverse<(Time, u32)>>,
}

impl Nic {
    /// Whether a TxDone of this NIC's port at `at` would find nothing to
    /// send and change nothing, its port's queues being empty: no READ
    /// request, no QP with packets to send or with its TX core (the
    /// [`World::nic_dequeue`] scan touches no other QP), and no DMA backlog
    /// that would schedule a wake-up. Anything that gives it a packet
    /// before then calls [`World::try_transmit`], which wakes the port.
    pub fn has_nothing_to_send(&self, cfg: &NicConfig, at: Time) -> bool {
        let dma_backlog = match (cfg.pcie, cfg.device_pcie) {
            (Some(p), None) => self.pcie_free_at > at + p.latency,
            _ => false,
        };
        self.requests.is_empty()
            && self.active.is_empty()
            && self.ns3_qps.is_empty()
            && self.parked.is_empty()
            && !dma_backlog
    }

    pub fn new(node: u32, port: u32, line_rate: Rate) -> Self {
        Nic {
            node,
            port,
            line_rate,
            active: VecDeque::new(),
            ns3_qps: Vec::new(),
            ns3_rr_last: 0,
            requests: VecDeque::new(),
            wake_at: Time::NEVER,
            pcie_free_at: Time::ZERO,
            pcie_bytes: 0,
            pcie_wait_ps: 0,
            pcie_reads: 0,
            reported: (0, 0, 0, 0),
            rx_bytes: 0,
            rx_payload: 0,
            device_free_at: Time::ZERO,
            device_bytes: 0,
            res: None,
            uar: None,
            tx_cores: Vec::new(),
            tx_core_packets: 0,
            rx_cores: Vec::new(),
            rx_core_packets: 0,
            ctx_mem: None,
            parked: Default::default(),
        }
    }
}

impl World {
    /// Pick the next frame a NIC port sends, or schedule a wake-up if QPs are
    /// only held back by their dequeue rate.
    pub(crate) fn nic_dequeue(&mut self, port: u32) -> Option<PacketId> {
        let node = self.ports[port as usize].node;
        let nic_i = self.node_index[node as usize] as usize;
        if let Some(p) = self.ports[port as usize].dequeue(CONTROL_CLASS, &self.pkts) {
            return Some(p);
        }
        // ACKs in a data class go first unless that class is paused (as ns-3's RdmaEgressQueue).
        let ack_class = self.nic_cfg.ack_class;
        let held = self.nic_cfg.pfc_holds_acks && self.ports[port as usize].is_paused(ack_class);
        if ack_class != CONTROL_CLASS && !held {
            if let Some(p) = self.ports[port as usize].dequeue(ack_class, &self.pkts) {
                return Some(p);
            }
        }
        if let Some(&req) = self.nics[nic_i].requests.front() {
            if !self.ports[port as usize].is_paused(self.pkts.get(req).class) {
                return self.nics[nic_i].requests.pop_front();
            }
        }
        let now = self.now();
        let mut earliest = Time::NEVER;
        // With device memory in play each QP waits for its own DMA path (below).
        let device = self.nic_cfg.device_pcie;
        let host_backlog = match self.nic_cfg.pcie {
            Some(p) if self.nics[nic_i].pcie_free_at > now + p.latency => {
                Some(Time(self.nics[nic_i].pcie_free_at.ps() - p.latency.ps()))
            }
            _ => None,
        };
        let device_backlog = match device {
            Some(p) if self.nics[nic_i].device_free_at > now + p.latency => {
                Some(Time(self.nics[nic_i].device_free_at.ps() - p.latency.ps()))
            }
            _ => None,
        };
        if let (Some(pcie), None) = (self.nic_cfg.pcie, device) {
            // The DMA engine prefetches up to one round trip ahead; beyond that
            // the NIC waits for host memory.
            let ready = self.nics[nic_i].pcie_free_at;
            if ready > now + pcie.latency {
                let t = Time(ready.ps() - pcie.latency.ps());
                if t < self.nics[nic_i].wake_at {
                    self.nics[nic_i].wake_at = t;
                    self.q.schedule(t, Event::NicWake { nic: nic_i as u32 });
                }
                return None;
            }
        }
        if self.nic_cfg.qp_scheduler == QpScheduler::Ns3Hpcc {
            return self.ns3_dequeue(nic_i, port, now);
        }
        // `nic.tx_arbitration: strict-priority`: only the highest class with
        // a packet ready now takes turns.
        let top = if self.nic_cfg.strict_priority {
            self.top_ready_class(nic_i, port, now)
        } else {
            0
        };
        // QPs whose packets their on-path cores have finished rejoin the
        // round robin, in the order they became ready.
        while let Some(&std::cmp::Reverse((t, q))) = self.nics[nic_i].parked.peek() {
            if t > now {
                break;
            }
            self.nics[nic_i].parked.pop();
            self.nics[nic_i].active.push_back(q);
        }
        // `Wqe { keep_paced_turn }`: the QP whose turn its rate limiter holds
        // back; others fill the gap packet by packet and the turn stays its.
        let mut paced_turn: Option<u32> = None;
        let n = self.nics[nic_i].active.len();
        for _ in 0..n {
            let qi = self.nics[nic_i].active.pop_front().expect("counted");
            let qp = &mut self.qps[qi as usize];
            if !qp.has_unsent() {
                qp.in_active = false;
                qp.turns_used = 0;
                continue;
            }
            self.nics[nic_i].active.push_back(qi);
            if self.ports[port as usize].is_paused(qp.class) || qp.class < top {
                continue;
            }
            if Self::window_full(qp, self.nic_cfg.window_scales_with_rate)
                || self.group_window_full(&self.qps[qi as usize])
            {
                continue;
            }
            let srnic = if let QpScheduler::Srnic { wqes, burst } = self.nic_cfg.qp_scheduler {
                // Sends only what its turns have fetched (the fetch stands for the WQE and payload wait below).
                if let Some(t) = self.srnic_turn(nic_i, qi, now, wqes, burst) {
                    earliest = earliest.min(t);
                    continue;
                }
                true
            } else {
                false
            };
            let qp = &self.qps[qi as usize];
            let mut ready_at = self.pacing_ready_at(qp);
            if device.is_some() {
                // Payload from device memory comes over the device's path, host payload over the host's.
                if let Some(t) = if qp.device_memory {
                    device_backlog
                } else {
                    host_backlog
                } {
                    earliest = earliest.min(t);
                    continue;
                }
            }
            let payload_latency = match (qp.device_memory, device, self.nic_cfg.pcie) {
                (true, Some(d), h) => Some(h.map_or(d.latency, |h| h.latency.max(d.latency))),
                (false, _, Some(h)) => Some(h.latency),
                _ => None,
            };
            if let (Some(latency), false) = (payload_latency, srnic) {
                // A message's first packet waits for its WQE (host memory) and
                // payload to arrive over PCIe.
                if let Some((_, m)) = qp.message_of(qp.snd_nxt) {
                    if m.first_psn == qp.snd_nxt && qp.snd_nxt == qp.highest_sent {
                        ready_at = ready_at.max(m.posted_at + latency);
                    }
                }
            }
            if self.nic_cfg.wqe_overhead.ps() > 0 {
                // A new WQE is fetched and parsed once the QP's previous one is
                // out (`wqe_overhead`); the port serves other QPs meanwhile.
                if let Some((_, m)) = qp.message_of(qp.snd_nxt) {
                    if m.first_psn == qp.snd_nxt && qp.snd_nxt == qp.highest_sent {
                        let parsed = qp.wqe_out_at.max(m.posted_at) + self.nic_cfg.wqe_overhead;
                        ready_at = ready_at.max(parsed);
                    }
                }
            }
            if self.nic_cfg.resources.is_some() && qp.retx.is_empty() {
                // A new WQE waits for the QP's TX pipeline (`wqe_interval`).
                if let Some((_, m)) = qp.message_of(qp.snd_nxt) {
                    if m.first_psn == qp.snd_nxt && qp.snd_nxt == qp.highest_sent {
                        ready_at = ready_at.max(qp.wqe_ready_at);
                    }
                }
            }
            if ready_at > now {
                earliest = earliest.min(ready_at);
                if let (
                    QpScheduler::Wqe {
                        keep_paced_turn, ..
                    },
                    None,
                ) = (self.nic_cfg.qp_scheduler, paced_turn)
                {
                    // Mid-turn: held by its limiter (kept if `keep_paced_turn`)
                    // or by its next WQE's fetch (always kept).
                    let paced = self.pacing_ready_at(qp) > now;
                    if qp.snd_nxt < qp.turn_end_psn
                        && qp.retx.is_empty()
                        && (keep_paced_turn || !paced)
                    {
                        paced_turn = Some(qi);
                    }
                }
                continue;
            }
            if self.nics[nic_i].res.is_some() {
                // Contexts that missed the on-chip caches hold the QP until they are fetched.
                if let Some(t) = self.tx_contexts(nic_i, qi, now) {
                    earliest = earliest.min(t);
                    continue;
                }
            }
            if let Some(cores) = self.nic_cfg.on_path.filter(|c| c.tx_cores > 0) {
                // An on-path TX core must process the packet before it leaves.
                if let Some(t) = self.tx_core(nic_i, qi, now, cores) {
                    earliest = earliest.min(t);
                    // Its packet is with its core until t: park the QP out of
                    // the round robin until then, so scans do not pass over
                    // every waiting QP (many QPs on few cores).
                    let back = self.nics[nic_i].active.pop_back();
                    debug_assert_eq!(back, Some(qi));
                    self.nics[nic_i].parked.push(std::cmp::Reverse((t, qi)));
                    continue;
                }
            }
            let qp = &mut self.qps[qi as usize];
            if let QpScheduler::Wqe { quantum, .. } = self.nic_cfg.qp_scheduler {
                // A new turn takes the posted WQEs that fit the quantum; the QP keeps
                // the port until it has sent their last packet.
                if qp.snd_nxt >= qp.turn_end_psn {
                    qp.turn_end_psn =
                        qp.wqe_turn_end(quantum, self.nic_cfg.wire.mtu_payload as u64);
                }
                let active = &mut self.nics[nic_i].active;
                if let Some(h) = paced_turn {
                    // This packet fills a paced QP's gap: the paced QP is first
                    // again when its limiter lets it go.
                    if let Some(i) = active.iter().rposition(|&q| q == h) {
                        active.remove(i);
                        active.push_front(h);
                    }
                } else if qp.snd_nxt + 1 < qp.turn_end_psn {
                    let back = active.pop_back();
                    debug_assert_eq!(back, Some(qi));
                    active.push_front(qi);
                }
                return Some(self.packetize(qi));
            }
            // Weighted round robin: a QP with share w sends w packets per turn.
            if qp.share > 1 {
                qp.turns_used += 1;
                if qp.turns_used < qp.share {
                    let back = self.nics[nic_i].active.pop_back();
                    debug_assert_eq!(back, Some(qi));
                    self.nics[nic_i].active.push_front(qi);
                } else {
                    qp.turns_used = 0;
                }
            }
            return Some(self.packetize(qi));
        }
        if let Some(h) = paced_turn {
            // Nothing filled the gap: the paced QP is still first in line.
            let active = &mut self.nics[nic_i].active;
            if let Some(i) = active.iter().rposition(|&q| q == h) {
                active.remove(i);
                active.push_front(h);
            }
        }
        if let Some(&std::cmp::Reverse((t, _))) = self.nics[nic_i].parked.peek() {
            earliest = earliest.min(t);
        }
        if earliest != Time::NEVER && earliest < self.nics[nic_i].wake_at {
            self.nics[nic_i].wake_at = earliest;
            self.q
                .schedule(earliest, Event::NicWake { nic: nic_i as u32 });
        }
        None
    }

    /// `control.on_path`: the QP's next packet is processed by its TX core
    /// (QPN mod cores) when the core is free; `Some(t)`: it leaves no
    /// earlier than `t`, when the core is done with it.
    fn tx_core(&mut self, nic: usize, qi: u32, now: Time, cores: OnPathCores) -> Option<Time> {
        let qp = &mut self.qps[qi as usize];
        let psn = qp.retx.first().copied().unwrap_or(qp.snd_nxt);
        let n = &mut self.nics[nic];
        if n.tx_cores.is_empty() {
            n.tx_cores = vec![Time::ZERO; cores.tx_cores.max(1) as usize];
        }
        let core = (qi % cores.tx_cores.max(1)) as usize;
        if let (None, Some(m)) = (&n.ctx_mem, cores.memory) {
            n.ctx_mem = Some(cc_cores::ContextMemory::new(m));
        }
        // The core's cost for a packet: its cycles (and bytes) and reaching the QP's context.
        let mtu = self.nic_cfg.wire.mtu_payload;
        let cost = |n: &mut Nic, queued: Duration, payload: u64| {
            cores.cost(false, payload)
                + n.ctx_mem
                    .as_mut()
                    .map_or(Duration::ZERO, |m| m.access(qi, false, queued))
        };
        if qp.core_psn == psn {
            if qp.core_ready_at > now {
                return Some(qp.core_ready_at);
            }
            // This packet leaves now; the core goes on to the QP's next one
            // from the moment it finished this one, while this one is on the wire.
            qp.core_psn = u32::MAX;
            if qp.retx.is_empty() && psn + 1 < qp.ready_psn_end {
                let start = n.tx_cores[core].max(qp.core_ready_at);
                let done = start + cost(n, start - qp.core_ready_at, qp.payload_of(psn + 1, mtu));
                n.tx_cores[core] = done;
                n.tx_core_packets += 1;
                qp.core_psn = psn + 1;
                qp.core_ready_at = done;
            }
            return None;
        }
        let start = n.tx_cores[core].max(now);
        let done = start + cost(n, start - now, qp.payload_of(psn, mtu));
        n.tx_cores[core] = done;
        n.tx_core_packets += 1;
        if done <= now {
            return None;
        }
        qp.core_psn = psn;
        qp.core_ready_at = done;
        Some(done)
    }

    /// The highest traffic class among the NIC's QPs that could send now
    /// (data ready, class not paused, window open, dequeue rate allowing).
    /// Scans every active QP: strict priority costs O(QPs) per packet.
    fn top_ready_class(&self, nic_i: usize, port: u32, now: Time) -> u8 {
        let scales = self.nic_cfg.window_scales_with_rate;
        self.nics[nic_i]
            .active
            .iter()
            .map(|&q| &self.qps[q as usize])
            .filter(|qp| {
                qp.has_unsent()
                    && !self.ports[port as usize].is_paused(qp.class)
                    && !Self::window_full(qp, scales)
                    && !self.group_window_full(qp)
                    && self.pacing_ready_at(qp) <= now
            })
            .map(|qp| qp.class)
            .max()
            .unwrap_or(0)
    }

    /// When the QP's dequeue rate lets its next packet go: its own pacing
    /// and, in a split CC group (`nic.cc_scope`), the group's.
    #[inline]
    fn pacing_ready_at(&self, qp: &Qp) -> Time {
        if qp.group == cc_scope::NO_GROUP {
            return qp.next_avail;
        }
        let g = &self.cc_groups.groups[qp.group as usize];
        if g.split {
            qp.next_avail.max(g.next_avail)
        } else {
            qp.next_avail
        }
    }

    /// Whether the QP's split CC group has its window of bytes in flight.
    #[inline]
    fn group_window_full(&self, qp: &Qp) -> bool {
        qp.group != cc_scope::NO_GROUP
            && qp.retx.is_empty()
            && self.cc_groups.groups[qp.group as usize]
                .window_full(self.nic_cfg.window_scales_with_rate)
    }

    /// Whether the QP's window (scaled by rate with `window_scales_with_rate`) is full.
    #[inline]
    fn window_full(qp: &Qp, scales_with_rate: bool) -> bool {
        // Selective repeat: resending a hole adds nothing in flight, and its
        // ACK is what opens the window (else the QP waits forever).
        qp.retx.is_empty()
            && qp
                .effective_window(scales_with_rate)
                .is_some_and(|w| qp.bytes_in_flight() >= w.max(1))
    }

    /// `QpScheduler::Ns3Hpcc`: ns-3 HPCC's `GetNextQindex`, step for step.
    fn ns3_dequeue(&mut self, nic_i: usize, port: u32, now: Time) -> Option<PacketId> {
        let n = self.nics[nic_i].ns3_qps.len();
        let rr_last = self.nics[nic_i].ns3_rr_last;
        let finished = |qp: &Qp| qp.msgs.is_empty() && !qp.has_unsent();
        let mut res = None;
        let mut min_finished = None;
        for k in 1..=n {
            let idx = (k + rr_last) % n;
            let qp = &self.qps[self.nics[nic_i].ns3_qps[idx] as usize];
            if !self.ports[port as usize].is_paused(qp.class)
                && qp.has_unsent()
                && !Self::window_full(qp, self.nic_cfg.window_scales_with_rate)
                && !self.group_window_full(qp)
            {
                if self.pacing_ready_at(qp) > now {
                    continue;
                }
                res = Some(idx);
                break;
            } else if finished(qp) {
                min_finished = Some(min_finished.map_or(idx, |m: usize| m.min(idx)));
            }
        }
        if let Some(m) = min_finished {
            // Cut finished QPs out from `m` on; the last-sent index stays put.
            let list = &mut self.nics[nic_i].ns3_qps;
            let mut next = m;
            for i in m..list.len() {
                let qi = list[i];
                if finished(&self.qps[qi as usize]) {
                    self.qps[qi as usize].in_active = false;
                } else {
                    if res == Some(i) {
                        res = Some(next);
                    }
                    list[next] = qi;
                    next += 1;
                }
            }
            list.truncate(next);
        }
        if let Some(idx) = res {
            self.nics[nic_i].ns3_rr_last = idx;
            return Some(self.packetize(self.nics[nic_i].ns3_qps[idx]));
        }
        // Wake when the first paced QP may send (as ns-3: QPs with bytes left).
        let earliest = self.nics[nic_i]
            .ns3_qps
            .iter()
            .map(|&q| &self.qps[q as usize])
            .map(|qp| (qp, self.pacing_ready_at(qp)))
            .filter(|&(qp, t)| qp.has_unsent() && t > now)
            .map(|(_, t)| t)
            .min();
        if let Some(t) = earliest {
            if t < self.nics[nic_i].wake_at {
                self.nics[nic_i].wake_at = t;
                self.q.schedule(t, Event::NicWake { nic: nic_i as u32 });
            }
        }
        None
    }

    /// Build the data packet for `snd_nxt` of QP `qi` and advance the QP.
    fn packetize(&mut self, qi: u32) -> PacketId {
        let now = self.now();
        let wire = self.nic_cfg.wire;
        let qp = &mut self.qps[qi as usize];
        // Selective repeat resends its queued holes before new data.
        let hole = qp.retx.pop_first();
        let (m, psn) = match hole {
            Some(psn) => (
                *qp.message_of(psn)
                    .expect("a queued hole is above snd_una")
                    .1,
                psn,
            ),
            None => {
                while qp.msgs[qp.tx_cursor].end_psn() <= qp.snd_nxt {
                    qp.tx_cursor += 1;
                }
                (qp.msgs[qp.tx_cursor], qp.snd_nxt)
            }
        };
        let last = psn + 1 == m.end_psn();
        let payload = if last {
            m.bytes - (m.packets as u64 - 1) * wire.mtu_payload as u64
        } else {
            wire.mtu_payload as u64
        };
        let extra = match (self.nic_cfg.loss_recovery, qp.verb) {
            (LossRecovery::SelectiveRepeat, Verb::Write) => crate::packet::wire::SR_WRITE_EXT,
            (LossRecovery::SelectiveRepeat, Verb::Send) => crate::packet::wire::SR_SEND_EXT,
            (_, Verb::Write) if psn == m.first_psn => wire.write_first_extra,
            _ => 0,
        };
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
        if hole.is_some() {
            qp.resent.insert(psn, qp.highest_sent);
        } else {
            qp.snd_nxt += 1;
            qp.snd_nxt_off += payload;
        }
        if qp.snd_nxt > qp.highest_sent {
            qp.highest_sent = qp.snd_nxt;
        }
        let wire_bytes = wire.on_wire(frame);
        let gap = self.run.tx_time.of(qp.rate, wire_bytes as u64);
        // A token bucket of `rate_burst` bytes (GCRA): the next packet may go
        // one gap after max(now − burst time, when this one was due), so a QP
        // that was kept waiting catches up by at most the burst.
        let credit = if self.nic_cfg.rate_burst > 0 && qp.next_avail < now {
            (now - qp.next_avail).min(qp.rate.serialization(self.nic_cfg.rate_burst))
        } else {
            Duration::ZERO
        };
        qp.next_avail = Time(now.ps() - credit.ps()) + gap;
        if qp.group != cc_scope::NO_GROUP {
            // The group's byte stream, and its aggregate pacing when its QPs split its rate.
            let g = &mut self.cc_groups.groups[qp.group as usize];
            if !is_retx {
                g.sent_bytes += payload;
            }
            if g.split {
                g.next_avail = now + self.run.tx_time.of(g.rate, wire_bytes as u64);
                g.last_tx_start = now;
                g.last_tx_wire = wire_bytes;
            }
        }
        qp.last_tx_start = now;
        qp.last_tx_wire = wire_bytes;
        qp.sent_payload += payload;
        if is_retx {
            qp.retransmitted_packets += 1;
            self.stats.retransmitted_packets += 1;
        }
        self.stats.data_payload_sent += payload;
        if !is_retx {
            self.stats.data_payload_first_sent += payload;
        }
        if let (true, false, Some(r)) = (psn == m.first_psn, is_retx, &self.nic_cfg.resources) {
            qp.wqe_ready_at = now + r.wqe_interval;
        }
        if let (true, false, Origin::App(a)) = (psn == m.first_psn, is_retx, m.origin) {
            // The message leaves its send queue (a host scheduler's queueing signal).
            let q = &mut self.apps[a as usize].send_queue;
            q.0 += (now - m.posted_at).ps();
            q.1 += 1;
        }
        if let (true, false, Origin::Flow(f)) = (last, is_retx, m.origin) {
            // A chained flow (staggered, `interval: sent`) starts when this one is on the wire.
            if let Some(&next) = self.followers.get(f as usize).filter(|&&n| n != u32::MAX) {
                self.q.schedule(now, Event::FlowStart { flow: next });
            }
        }
        if last && !is_retx {
            // The QP's transport is done with this WQE when its last packet is out.
            qp.wqe_out_at = now + self.run.tx_time.of(qp.path.line_rate, wire_bytes as u64);
        }
        let wants_tx = qp.cc_mask.has(crate::control::EventMask::TX);
        let device_path = if qp.device_memory {
            self.nic_cfg.device_pcie
        } else {
            None
        };
        if let Some(dev) = device_path {
            let nic = &mut self.nics[qp.tx_nic as usize];
            let start = nic.device_free_at.max(now);
            nic.device_free_at = start + dev.bandwidth.serialization(payload);
            nic.device_bytes += payload;
        }
        if let Some(pcie) = self.nic_cfg.pcie {
            // The WQE always comes from host memory; the payload too unless it is in device memory.
            // With `nic.resources` or the SRNIC scheduler, WQE reads are booked where they happen
            // (doorbell prefetch, cache miss, turn fetch), and every read pays its TLP overhead.
            let wqe_here = self.nic_cfg.resources.is_none()
                && !matches!(self.nic_cfg.qp_scheduler, QpScheduler::Srnic { .. });
            let body = if device_path.is_some() { 0 } else { payload };
            let dma = body
                + if psn == m.first_psn && wqe_here {
                    WQE_BYTES
                } else {
                    0
                };
            let dma = match &self.nic_cfg.resources {
                Some(r) if dma > 0 => r.on_bus(dma),
                _ => dma,
            };
            let nic = &mut self.nics[qp.tx_nic as usize];
            if let Some(r) = nic.res.as_mut() {
                if dma > 0 {
                    r.count(resources::PciePurpose::Payload, dma);
                }
            }
            let start = nic.pcie_free_at.max(now);
            nic.pcie_free_at = start + pcie.bandwidth.serialization(dma);
            nic.pcie_bytes += dma;
            nic.pcie_wait_ps += (nic.pcie_free_at - now).ps() as u128 + pcie.latency.ps() as u128;
            nic.pcie_reads += 1;
        }
        self.arm_rto(qi);
        if wants_tx {
            match self.nic_cfg.trigger {
                None => self.raise_cc(
                    qi,
                    CcEvent::Tx {
                        bytes: payload as u32,
                        packets: 1,
                    },
                    None,
                ),
                Some(t) => {
                    let qp = &mut self.qps[qi as usize];
                    qp.tx_held.0 += payload;
                    qp.tx_held.1 += 1;
                    let kind_passes = if psn + 1 == m.end_psn() {
                        t.tx_last
                    } else if psn == m.first_psn {
                        t.tx_first
                    } else {
                        t.tx_middle
                    };
                    if kind_passes {
                        qp.tx_triggered += 1;
                        if qp.tx_triggered >= t.every {
                            qp.tx_triggered = 0;
                            let (bytes, packets) = std::mem::take(&mut qp.tx_held);
                            let ev = CcEvent::Tx {
                                bytes: bytes.min(u32::MAX as u64) as u32,
                                packets,
                            };
                            self.raise_cc(qi, ev, None);
                        }
                    }
                }
            }
        }
        let id = self.pkts.alloc(p);
        if self.nic_cfg.wire.cc_header > 0 {
            // The QP's extensible CC header as its controller last wrote it.
            self.pkts.set_header(id, &self.cc_headers[qi as usize]);
        }
        id
    }

    /// Make sure QP `qi` is in its sending NIC's round robin and kick the port.
    pub(crate) fn activate(&mut self, qi: u32) {
        let qp = &mut self.qps[qi as usize];
        if qp.has_unsent() && !qp.in_active {
            qp.in_active = true;
            let nic = qp.tx_nic as usize;
            if self.nic_cfg.qp_scheduler == QpScheduler::Ns3Hpcc {
                self.nics[nic].ns3_qps.push(qi); // stays until finished, as in ns-3
            } else {
                self.nics[nic].active.push_back(qi);
            }
        }
        let port = self.nics[self.qps[qi as usize].tx_nic as usize].port;
        self.try_transmit(port);
    }

    /// Queue a control frame (ACK, NACK, CNP) at a NIC.
    pub(crate) fn send_control(&mut self, nic: u32, p: Packet) {
        let id = self.pkts.alloc(p);
        self.queue_control(nic, id);
    }

    /// Queue an ACK that echoes the INT records (and CC header words) of
    /// data packet `data`, in that packet's slot ([`PacketPool::echo_into`]):
    /// the caller retires `data` instead of freeing it.
    pub(crate) fn send_echo(&mut self, nic: u32, ack: Packet, data: PacketId) {
        let id = self.pkts.echo_into(data, ack);
        self.queue_control(nic, id);
    }

    fn queue_control(&mut self, nic: u32, id: PacketId) {
        let port = self.nics[nic as usize].port;
        let class = self.pkts.get(id).class;
        self.ports[port as usize].enqueue(class, id, &mut self.pkts);
        self.try_transmit(port);
    }

    /// Host-domain reports: per NIC, PCIe utilisation and mean DMA latency over
    /// the last period, QPs with data to send and port utilisation, raised as a
    /// HOST event to each active QP that subscribes.
    #[cold]
    #[inline(never)]
    pub(crate) fn host_report(&mut self) {
        let Some(iv) = self.nic_cfg.host_report_interval else {
            return;
        };
        let now = self.now();
        for n in 0..self.nics.len() {
            let nic = &self.nics[n];
            let port = &self.ports[nic.port as usize];
            let (bytes0, wait0, reads0, tx0) = nic.reported;
            let (pcie_utilization, pcie_latency) = match self.nic_cfg.pcie {
                Some(p) => {
                    let util =
                        (nic.pcie_bytes - bytes0) as f64 / p.bandwidth.bytes_in(iv).max(1) as f64;
                    let reads = nic.pcie_reads - reads0;
                    let lat = if reads > 0 {
                        ((nic.pcie_wait_ps - wait0) / reads as u128) as u64
                    } else {
                        p.latency.ps()
                    };
                    (util, Duration(lat))
                }
                None => (0.0, Duration::ZERO),
            };
            let port_utilization =
                (port.tx_bytes - tx0) as f64 / port.rate().bytes_in(iv).max(1) as f64;
            let parked = nic.parked.iter().map(|r| &r.0 .1);
            let active_qps = nic
                .active
                .iter()
                .chain(&nic.ns3_qps)
                .chain(parked.clone())
                .filter(|&&q| self.qps[q as usize].has_unsent())
                .count() as u32;
            let qps: Vec<u32> = nic
                .active
                .iter()
                .chain(&nic.ns3_qps)
                .chain(parked)
                .copied()
                .collect();
            self.nics[n].reported = (
                self.nics[n].pcie_bytes,
                self.nics[n].pcie_wait_ps,
                self.nics[n].pcie_reads,
                port.tx_bytes,
            );
            for qi in qps {
                if self.qps[qi as usize]
                    .cc_mask
                    .has(crate::control::EventMask::HOST)
                {
                    let ev = CcEvent::Host {
                        pcie_utilization,
                        pcie_latency,
                        active_qps,
                        port_utilization,
                    };
                    self.raise_cc(qi, ev, None);
                }
            }
        }
        if now + iv <= self.run.stop_at {
            self.q.schedule(now + iv, Event::HostReport);
        }
    }
}
