//! Where the NIC's data path waits for host memory beyond the payload: QP
//! contexts, translations and WQEs that miss the on-chip caches
//! (`nic.resources`), and the WQE fetches of SRNIC's cache-free scheduler
//! (`nic.qp_scheduler: srnic`). The caches themselves live in
//! [`super::resources`]; this file only asks them and books the PCIe reads.

use super::qp::Verb;
use super::resources::{missed, mtt_key, pcie_read, wqe_key, PciePurpose};
use super::{PcieConfig, WQE_BYTES};
use crate::time::Time;
use crate::world::World;

impl World {
    /// The host PCIe link, which `nic.resources` and the SRNIC scheduler need
    /// (the scenario refuses them without it).
    #[inline]
    fn host_pcie(&self) -> PcieConfig {
        self.nic_cfg
            .pcie
            .expect("checked by the scenario: nic.resources and qp_scheduler srnic need host.pcie")
    }

    /// Book a read of `bytes` for `purpose` on NIC `nic`'s PCIe link, issued
    /// at `at`; returns when its data is back. TLP overhead is added when
    /// the resource model is on.
    pub(crate) fn pcie_fetch(
        &mut self,
        nic: usize,
        purpose: PciePurpose,
        bytes: u64,
        at: Time,
    ) -> Time {
        let pcie = self.host_pcie();
        let bus = self
            .nic_cfg
            .resources
            .as_ref()
            .map_or(bytes, |r| r.on_bus(bytes));
        let now = self.now();
        let n = &mut self.nics[nic];
        let (free, back) = pcie_read(n.pcie_free_at, now, at, pcie.bandwidth, pcie.latency, bus);
        n.pcie_free_at = free;
        n.pcie_bytes += bus;
        n.pcie_reads += 1;
        if let Some(r) = n.res.as_mut() {
            r.count(purpose, bus);
        }
        back
    }

    /// A doorbell: the sending NIC prefetches the new WQE into its WQE cache
    /// (a read of one WQE over PCIe). Without a WQE cache nothing happens here.
    pub(crate) fn doorbell_prefetch(&mut self, qi: u32, msg_index: u64) {
        let nic = self.qps[qi as usize].tx_nic as usize;
        let has_cache = self.nics[nic].res.as_ref().is_some_and(|r| r.wqe.is_some());
        if !has_cache || matches!(self.nic_cfg.qp_scheduler, super::QpScheduler::Srnic { .. }) {
            return;
        }
        let now = self.now();
        self.pcie_fetch(nic, PciePurpose::Wqe, WQE_BYTES, now);
        self.nics[nic]
            .res
            .as_mut()
            .expect("checked")
            .prefetch_wqe(wqe_key(qi, msg_index));
    }

    /// Before QP `qi` sends its next packet: look up the contexts it needs.
    /// `None`: all on chip, send now. `Some(t)`: they are being fetched (one
    /// after another, on one processing unit) and arrive at `t`; the QP waits.
    pub(crate) fn tx_contexts(&mut self, nic: usize, qi: u32, now: Time) -> Option<Time> {
        let qp = &mut self.qps[qi as usize];
        let psn = qp.snd_nxt;
        if qp.ctx_psn == psn {
            if qp.ctx_ready_at > now {
                return Some(qp.ctx_ready_at);
            }
            qp.ctx_psn = u32::MAX;
            return None;
        }
        let cfg = self
            .nic_cfg
            .resources
            .as_ref()
            .expect("called with resources on");
        let res = self.nics[nic].res.as_mut().expect("resources on");
        let qp = &self.qps[qi as usize];
        let mut need = [(PciePurpose::Qpc, 0u64); 3];
        let mut n = 0;
        let mut ahead = false;
        if missed(res.qpc.access(qi as u64)) {
            need[n] = (PciePurpose::Qpc, cfg.qpc.entry_bytes as u64);
            n += 1;
        }
        if let Some((i, m)) = qp.message_of(psn) {
            if psn == m.first_psn && qp.verb != Verb::Read {
                if let Some(w) = res.wqe.as_mut() {
                    if missed(w.access(wqe_key(qi, qp.msgs_popped + i as u64))) {
                        need[n] = (PciePurpose::Wqe, WQE_BYTES);
                        n += 1;
                    }
                }
            }
            let page = cfg.page_of(psn - m.first_psn, self.nic_cfg.wire.mtu_payload);
            if missed(res.mtt.access(mtt_key(qi, page))) {
                if page == 0 {
                    need[n] = (PciePurpose::Mtt, cfg.mtt.entry_bytes as u64);
                    n += 1;
                } else {
                    // The data mover translates a message's later pages ahead of its
                    // reads: the fetch is read and counted, but the QP does not wait.
                    ahead = true;
                }
            }
        }
        if ahead {
            let bytes = cfg.mtt.entry_bytes as u64;
            self.pcie_fetch(nic, PciePurpose::Mtt, bytes, now);
        }
        if n == 0 {
            return None;
        }
        let res = self.nics[nic].res.as_mut().expect("resources on");
        let (unit, mut t) = res.take_unit(now);
        for &(purpose, bytes) in &need[..n] {
            t = self.pcie_fetch(nic, purpose, bytes, t);
        }
        let res = self.nics[nic].res.as_mut().expect("resources on");
        res.release_unit_at(unit, t);
        res.stall_ps += (t - now).ps();
        let qp = &mut self.qps[qi as usize];
        qp.ctx_psn = psn;
        qp.ctx_ready_at = t;
        Some(t)
    }

    /// A packet of QP `qi` is handled at NIC `nic` off the send path (data
    /// placed at the receiver, an ACK at the sender): its QPC, and for data
    /// the MTT entry of its page, are looked up and fetched on a miss. The
    /// packet does not wait for them (see the module docs of `resources`).
    pub(crate) fn rx_contexts(&mut self, nic: usize, qi: u32, page_of_psn: Option<u32>) {
        let Some(res) = self.nics[nic].res.as_mut() else {
            return;
        };
        let cfg = self.nic_cfg.resources.as_ref().expect("resources on");
        let qpc_miss = missed(res.qpc.access(qi as u64));
        let mtt_miss = match page_of_psn.and_then(|psn| {
            self.qps[qi as usize]
                .message_of(psn)
                .map(|(_, m)| (psn, *m))
        }) {
            Some((psn, m)) => {
                let page = cfg.page_of(psn - m.first_psn, self.nic_cfg.wire.mtu_payload);
                missed(res.mtt.access(mtt_key(qi, page)))
            }
            None => false,
        };
        let (qpc_bytes, mtt_bytes) = (cfg.qpc.entry_bytes as u64, cfg.mtt.entry_bytes as u64);
        let now = self.now();
        if qpc_miss {
            self.pcie_fetch(nic, PciePurpose::Qpc, qpc_bytes, now);
        }
        if mtt_miss {
            self.pcie_fetch(nic, PciePurpose::Mtt, mtt_bytes, now);
        }
    }

    /// `QpScheduler::Srnic`: take in a finished WQE fetch, and issue the next
    /// one if the QP has none outstanding and less than a turn fetched ahead.
    /// Returns when the QP may next send if nothing fetched is left to send.
    pub(crate) fn srnic_turn(
        &mut self,
        nic: usize,
        qi: u32,
        now: Time,
        wqes: u32,
        burst: u64,
    ) -> Option<Time> {
        let mtu = self.nic_cfg.wire.mtu_payload as u64;
        let qp = &mut self.qps[qi as usize];
        if !qp.retx.is_empty() {
            // Selective repeat's holes go from the retry queue; their payload is read again.
            return None;
        }
        if qp.fetch_ready_at <= now {
            qp.turn_end_psn = qp.turn_end_psn.max(qp.fetch_end_psn);
            qp.fetch_ready_at = Time::NEVER;
        }
        let frontier = qp.turn_end_psn.max(qp.snd_nxt);
        let ahead = (frontier - qp.snd_nxt) as u64 * mtu;
        if qp.fetch_ready_at == Time::NEVER && frontier < qp.ready_psn_end && ahead < burst {
            // Credit: what the window still allows beyond what is fetched.
            let credit = match qp.window {
                Some(w) => w.saturating_sub(qp.bytes_in_flight() + ahead),
                None => u64::MAX,
            };
            let limit = burst.min(credit).max(1);
            let (end, fetched_wqes) = Self::srnic_turn_end(qp, frontier, wqes, limit, mtu);
            let is_read = qp.verb == Verb::Read;
            // A QPC miss is fetched before the WQEs it points to.
            let mut t = now;
            let mut unit = None;
            if self.nics[nic].res.is_some() {
                let res = self.nics[nic].res.as_mut().expect("checked");
                if missed(res.qpc.access(qi as u64)) {
                    let (u, start) = res.take_unit(now);
                    let qpc_bytes =
                        self.nic_cfg.resources.as_ref().expect("on").qpc.entry_bytes as u64;
                    t = self.pcie_fetch(nic, PciePurpose::Qpc, qpc_bytes, start);
                    unit = Some(u);
                }
            }
            // READ responses have no WQEs at the responder: the turn is a payload read.
            let wqe_bytes = if is_read {
                0
            } else {
                fetched_wqes as u64 * WQE_BYTES
            };
            let purpose = if is_read {
                PciePurpose::Payload
            } else {
                PciePurpose::Wqe
            };
            let back = if wqe_bytes > 0 || is_read {
                self.pcie_fetch(nic, purpose, wqe_bytes, t)
            } else {
                t
            };
            if let (Some(u), Some(res)) = (unit, self.nics[nic].res.as_mut()) {
                res.release_unit_at(u, back);
            }
            let qp = &mut self.qps[qi as usize];
            qp.fetch_end_psn = end;
            qp.fetch_ready_at = back;
            self.stats.wqes_fetched += fetched_wqes as u64;
        }
        let qp = &self.qps[qi as usize];
        if qp.snd_nxt < qp.turn_end_psn {
            None
        } else {
            Some(qp.fetch_ready_at)
        }
    }

    /// End PSN of an SRNIC turn from `start`: the messages of at most
    /// `wqes` WQEs from the one holding `start`, and at most `limit` bytes
    /// (whole packets, at least one). Also returns how many WQEs the turn
    /// reads: all `wqes` that are posted, used or not (fetch and drop).
    fn srnic_turn_end(
        qp: &super::qp::Qp,
        start: u32,
        wqes: u32,
        limit: u64,
        mtu: u64,
    ) -> (u32, u32) {
        let Some((first, _)) = qp.message_of(start) else {
            return (start + 1, 1);
        };
        let (mut posted, mut by_wqes) = (0u32, start + 1);
        for m in qp.msgs.iter().skip(first).take(wqes as usize) {
            if m.first_psn >= qp.ready_psn_end {
                break;
            }
            posted += 1;
            by_wqes = m.end_psn().min(qp.ready_psn_end);
        }
        let packets = limit.div_ceil(mtu).max(1).min(u32::MAX as u64) as u32;
        let end = start.saturating_add(packets).min(by_wqes).max(start + 1);
        (end, posted.max(1))
    }
}
