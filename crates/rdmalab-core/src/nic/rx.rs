//! What a NIC does with a frame that arrives: the receiver side of data
//! (in-order delivery, ACK coalescing, NACK on a PSN gap, CNP on an ECN
//! mark), and the sender side of ACK, NACK, CNP and READ requests.

use super::qp::Verb;
use crate::control::{CcEvent, EventMask};
use crate::net::CONTROL_CLASS;
use crate::packet::{Packet, PacketId, PacketKind};
use crate::time::Time;
use crate::world::World;

impl World {
    /// A frame arrives at a NIC port. With on-path RX cores
    /// (`control.on_path.rx_cores`, or the shared pool), an ACK, NACK or CNP
    /// (and, with `rx_data`, a data packet) is first handled by its QP's RX
    /// core (QPN mod cores, one at a time), and acts when that is done: a
    /// busy RX core delays the window opening and the controller's view
    /// (SwCC's RX core), or the delivery and ACK of data (Soft-RoCE).
    pub(crate) fn nic_receive(&mut self, port: u32, pkt: PacketId) {
        if let Some(op) = self.nic_cfg.on_path.filter(|c| c.handles_rx()) {
            let p = self.pkts.get(pkt);
            let gated = match p.kind {
                PacketKind::Ack | PacketKind::Nack | PacketKind::Cnp => true,
                PacketKind::Data => op.rx_data,
                _ => false,
            };
            if gated {
                let (qi, payload) = (p.qp, p.payload as u64);
                let now = self.now();
                let nic = &mut self.nics
                    [self.node_index[self.ports[port as usize].node as usize] as usize];
                if let (None, Some(m)) = (&nic.ctx_mem, op.memory) {
                    nic.ctx_mem = Some(super::cc_cores::ContextMemory::new(m));
                }
                let pool = if op.shared {
                    if nic.tx_cores.is_empty() {
                        nic.tx_cores = vec![Time::ZERO; op.tx_cores as usize];
                    }
                    &mut nic.tx_cores
                } else {
                    if nic.rx_cores.is_empty() {
                        nic.rx_cores = vec![Time::ZERO; op.rx_cores as usize];
                    }
                    &mut nic.rx_cores
                };
                let core = (qi % pool.len() as u32) as usize;
                let start = pool[core].max(now);
                let reach = nic
                    .ctx_mem
                    .as_mut()
                    .map_or(crate::time::Duration::ZERO, |m| {
                        m.access(qi, true, start - now)
                    });
                let done = start + op.cost(true, payload) + reach;
                let pool = if op.shared {
                    &mut nic.tx_cores
                } else {
                    &mut nic.rx_cores
                };
                pool[core] = done;
                nic.rx_core_packets += 1;
                if done > now {
                    self.q
                        .schedule(done, crate::world::Event::RxCoreDone { port, pkt });
                    return;
                }
            }
        }
        self.nic_handle(port, pkt);
    }

    /// Handle a frame that has arrived (and passed any RX core).
    pub(crate) fn nic_handle(&mut self, port: u32, pkt: PacketId) {
        let p = *self.pkts.get(pkt);
        let nic = &mut self.nics[self.node_index[self.ports[port as usize].node as usize] as usize];
        nic.rx_bytes += p.frame_bytes as u64;
        if p.kind == PacketKind::Data {
            nic.rx_payload += p.payload as u64;
        }
        match p.kind {
            // Data and ACKs stay allocated while handled: their INT records are read.
            // A data packet's ACK may take its slot (`send_echo`).
            PacketKind::Data => {
                if self.receive_data(&p, pkt) {
                    self.pkts.retire_echoed();
                } else {
                    self.pkts.free(pkt);
                }
                return;
            }
            PacketKind::Ack => {
                self.receive_ack(&p, pkt);
                self.pkts.free(pkt);
                return;
            }
            _ => self.pkts.free(pkt),
        }
        match p.kind {
            PacketKind::Data | PacketKind::Ack => unreachable!(),
            PacketKind::Nack => self.receive_nack(&p),
            PacketKind::Cnp => {
                if self.qps[p.qp as usize].cc_mask.has(EventMask::CNP) {
                    self.raise_cc(p.qp, CcEvent::Cnp, None);
                }
            }
            PacketKind::ReadRequest => self.receive_read_request(&p),
            PacketKind::Probe => self.answer_probe(&p),
            PacketKind::Oob { to_receiver } => {
                if self.qps[p.qp as usize].cc_mask.has(EventMask::PEER) {
                    let hi = (p.tx_timestamp.ps() >> 32) as u32;
                    let lo = p.tx_timestamp.ps() as u32;
                    let words = [p.psn, p.payload, hi, lo];
                    self.raise_cc(p.qp, CcEvent::Peer { words, to_receiver }, None);
                }
            }
            PacketKind::ProbeReply => self.receive_probe_reply(&p),
            PacketKind::Pfc { .. } => unreachable!("PFC frames are handled at the port"),
        }
    }

    fn control_packet(&self, kind: PacketKind, qi: u32, psn: u32, frame: u32) -> Packet {
        let qp = &self.qps[qi as usize];
        let mut a = Packet::new(kind);
        a.qp = qi;
        // Control frames flow from the data receiver back to the data sender.
        a.src = qp.dst_node;
        a.dst = qp.src_node;
        a.udp_sport = qp.udp_sport;
        a.class = if matches!(kind, PacketKind::Ack | PacketKind::Nack) {
            self.nic_cfg.ack_class
        } else {
            CONTROL_CLASS
        };
        a.psn = psn;
        a.frame_bytes = frame;
        a
    }

    /// Returns whether an ACK took the packet's slot (`send_echo`).
    fn receive_data(&mut self, p: &Packet, pkt: PacketId) -> bool {
        let now = self.now();
        let qi = p.qp;
        self.stats.data_payload_arrived += p.payload as u64;
        let wire = self.nic_cfg.wire;
        let rx_nic = self.qps[qi as usize].rx_nic;
        if p.ecn_ce && self.nic_cfg.cnp == super::CnpMode::Packet {
            let qp = &mut self.qps[qi as usize];
            let due = qp
                .last_cnp
                .map_or(true, |t| now - t >= self.nic_cfg.cnp_interval);
            if due {
                qp.last_cnp = Some(now);
                let c = self.control_packet(PacketKind::Cnp, qi, p.psn, wire.cnp_frame);
                self.stats.cnps_sent += 1;
                self.send_control(rx_nic, c);
            }
        }
        if self.nics[rx_nic as usize].res.is_some() {
            self.rx_contexts(rx_nic as usize, qi, Some(p.psn));
        }
        if self.qps[qi as usize].cc_mask.has(EventMask::RX) {
            self.raise_cc(
                qi,
                CcEvent::Rx {
                    bytes: p.payload,
                    packets: 1,
                    ce: p.ecn_ce,
                },
                // The data packet, so the controller reads its extensible CC header.
                (self.nic_cfg.wire.cc_header > 0).then_some(pkt),
            );
        }
        let qp = &mut self.qps[qi as usize];
        qp.rx_ce_pending |= p.ecn_ce;
        let ack_frame = wire.ack_with_int();
        if p.psn == qp.epsn {
            qp.epsn += 1;
            qp.last_rx_progress = now;
            qp.nacked_psn = None;
            qp.delivered_bytes += p.payload as u64;
            qp.rx_unacked += 1;
            // Selective repeat: a filled hole delivers the packets placed beyond it.
            let mut drained = false;
            while let Some(payload) = qp.rx_ooo.remove(&qp.epsn) {
                qp.delivered_bytes += payload as u64;
                qp.epsn += 1;
                drained = true;
            }
            let ack_now = p.msg_last || drained || qp.rx_unacked >= self.nic_cfg.ack_every_packets;
            if p.msg_last && qp.verb == Verb::Read {
                self.complete_read_messages(qi);
            } else if (p.msg_last || drained) && self.graph_run.is_some() {
                // A collective's next step waits for this data to be here.
                self.messages_arrived(qi);
            }
            if ack_now {
                let qp = &mut self.qps[qi as usize];
                qp.rx_unacked = 0;
                let epsn = qp.epsn;
                let ece = std::mem::take(&mut qp.rx_ce_pending);
                let mut a = self.control_packet(PacketKind::Ack, qi, epsn, ack_frame);
                a.tx_timestamp = p.tx_timestamp;
                a.ece = ece;
                a.hops = p.hops;
                self.stats.acks_sent += 1;
                self.send_echo(rx_nic, a, pkt);
                return true;
            }
        } else if p.psn > qp.epsn && self.nic_cfg.selective_repeat() {
            // Placed where its header says; answered with the expected PSN and
            // this one (a SACK). A duplicate of a placed packet is only re-acknowledged.
            let fresh = qp.rx_ooo.insert(p.psn, p.payload).is_none();
            let epsn = qp.epsn;
            let ece = std::mem::take(&mut qp.rx_ce_pending);
            let mut n = self.control_packet(PacketKind::Nack, qi, epsn, ack_frame);
            n.ece = ece;
            n.tx_timestamp = p.tx_timestamp;
            n.sack_psn = p.psn;
            self.stats.nacks_sent += 1;
            if fresh {
                self.stats.sr_out_of_order += 1;
                self.sr_loss_event(rx_nic as usize);
            }
            self.send_control(rx_nic, n);
        } else if p.psn > qp.epsn {
            // Go-back-N receiver: discard, and ask once per gap (repeat after the interval).
            let epsn = qp.epsn;
            let repeat = match qp.nacked_psn {
                Some((psn, at)) => psn != epsn || now - at >= self.nic_cfg.nack_repeat_interval,
                None => true,
            };
            if repeat {
                qp.nacked_psn = Some((epsn, now));
                let ece = std::mem::take(&mut qp.rx_ce_pending);
                // A NAK is an ACK frame with another syndrome (ns-3 echoes the INT header in it too).
                let mut n = self.control_packet(PacketKind::Nack, qi, epsn, ack_frame);
                n.ece = ece;
                n.tx_timestamp = p.tx_timestamp;
                self.stats.nacks_sent += 1;
                self.send_control(rx_nic, n);
            }
        } else {
            // Duplicate: re-acknowledge so a sender whose ACK was lost moves on.
            let epsn = qp.epsn;
            let mut a = self.control_packet(PacketKind::Ack, qi, epsn, ack_frame);
            a.tx_timestamp = p.tx_timestamp;
            a.hops = p.hops;
            self.stats.acks_sent += 1;
            self.send_echo(rx_nic, a, pkt);
            return true;
        }
        false
    }

    /// Complete READ messages whose last byte has arrived at the requester.
    fn complete_read_messages(&mut self, qi: u32) {
        loop {
            let qp = &self.qps[qi as usize];
            let idx = qp
                .rx_next_msg
                .checked_sub(qp.msgs_popped)
                .map(|i| i as usize);
            let Some(m) = idx.and_then(|i| qp.msgs.get(i)).copied() else {
                break;
            };
            if m.end_psn() > qp.epsn {
                break;
            }
            self.qps[qi as usize].rx_next_msg += 1;
            self.message_completed(qi, m.origin, m.bytes, m.issued_at);
        }
    }

    /// Advance `snd_una` to `psn`: drop acknowledged messages, complete WRITEs and SENDs.
    /// Returns the newly acknowledged payload bytes, or `None` if `psn` acknowledges
    /// nothing new (zero-byte messages advance the PSN with 0 bytes).
    fn advance_una(&mut self, qi: u32, psn: u32) -> Option<u64> {
        let mtu = self.nic_cfg.wire.mtu_payload;
        let mut completed = Vec::new();
        let qp = &mut self.qps[qi as usize];
        if psn <= qp.snd_una {
            return None;
        }
        let psn = psn.min(qp.highest_sent.max(qp.snd_nxt));
        while let Some(m) = qp.msgs.front() {
            if m.end_psn() > psn {
                break;
            }
            let m = qp.msgs.pop_front().expect("front");
            qp.msgs_popped += 1;
            qp.tx_cursor = qp.tx_cursor.saturating_sub(1);
            if qp.verb != Verb::Read {
                completed.push(m);
            }
        }
        let new_off = qp.byte_offset_of(psn, mtu);
        let acked = new_off - qp.snd_una_off;
        if qp.group != super::cc_scope::NO_GROUP {
            self.cc_groups.groups[qp.group as usize].acked_bytes += acked;
        }
        qp.snd_una = psn;
        if !qp.sacked.is_empty() || !qp.retx.is_empty() || !qp.resent.is_empty() {
            qp.sacked = qp.sacked.split_off(&psn);
            qp.retx = qp.retx.split_off(&psn);
            qp.resent = qp.resent.split_off(&psn);
        }
        qp.snd_una_off = new_off;
        if qp.snd_nxt < psn {
            qp.snd_nxt = psn;
            qp.snd_nxt_off = new_off;
            qp.tx_cursor = 0;
        }
        for m in completed {
            self.message_completed(qi, m.origin, m.bytes, m.issued_at);
        }
        Some(acked)
    }

    /// ns-3 HPCC's CNP: a flag on the ACK or NACK of a CE-marked packet, read
    /// even when the ACK itself brings nothing new.
    fn cnp_flag(&mut self, qi: u32, p: &Packet) {
        if p.ece
            && self.nic_cfg.cnp == super::CnpMode::AckFlag
            && self.qps[qi as usize].cc_mask.has(EventMask::CNP)
        {
            self.raise_cc(qi, CcEvent::Cnp, None);
        }
    }

    fn receive_ack(&mut self, p: &Packet, pkt: PacketId) {
        let qi = p.qp;
        let tx_nic = self.qps[qi as usize].tx_nic as usize;
        if self.nics[tx_nic].res.is_some() {
            self.rx_contexts(tx_nic, qi, None);
        }
        self.cnp_flag(qi, p);
        let Some(acked) = self.advance_una(qi, p.psn) else {
            return;
        };
        self.rearm_rto_on_progress(qi);
        if self.qps[qi as usize].cc_mask.has(EventMask::ACK) {
            let rtt = self.now() - p.tx_timestamp;
            let acked_through = self.qps[qi as usize].snd_una_off;
            let ev = CcEvent::Ack {
                acked_bytes: acked,
                acked_through,
                rtt,
                ece: p.ece,
                hops: p.hops,
            };
            self.raise_ack_cc(qi, ev, pkt);
        }
        // An ACK may open the window (or its controller changed the rate).
        let port = self.nics[self.qps[qi as usize].tx_nic as usize].port;
        self.try_transmit(port);
    }

    fn receive_nack(&mut self, p: &Packet) {
        let qi = p.qp;
        self.cnp_flag(qi, p);
        if self.advance_una(qi, p.psn).is_some() {
            self.rearm_rto_on_progress(qi);
        }
        if self.nic_cfg.selective_repeat() {
            self.sr_on_sack(qi, p.sack_psn);
        } else {
            self.go_back_n(qi);
        }
        if self.qps[qi as usize].cc_mask.has(EventMask::NACK) {
            self.raise_cc(
                qi,
                CcEvent::Nack {
                    expected_psn: p.psn,
                },
                None,
            );
        }
        self.activate(qi);
    }

    /// Resend from the oldest unacknowledged PSN.
    pub(crate) fn go_back_n(&mut self, qi: u32) {
        let qp = &mut self.qps[qi as usize];
        qp.snd_nxt = qp.snd_una;
        qp.snd_nxt_off = qp.snd_una_off;
        qp.tx_cursor = 0;
        // A WQE-granular turn starts afresh from the rewound PSN; an SRNIC
        // turn's fetch is dropped and the data fetched again.
        qp.turn_end_psn = qp.snd_nxt;
        qp.fetch_ready_at = crate::time::Time::NEVER;
    }

    /// Selective repeat, sender: PSN `sack` was received beyond `snd_una`.
    /// Queue the holes below it not yet queued in this episode, and the
    /// resent holes it shows were lost again.
    fn sr_on_sack(&mut self, qi: u32, sack: u32) {
        let qp = &mut self.qps[qi as usize];
        if sack < qp.snd_una || sack >= qp.highest_sent {
            return;
        }
        qp.sacked.insert(sack);
        for psn in qp.retx_high.max(qp.snd_una)..sack {
            if !qp.sacked.contains(&psn) {
                qp.retx.insert(psn);
            }
        }
        qp.retx_high = qp.retx_high.max(sack);
        // `sack` was first sent after these holes were resent: on a FIFO path
        // those still missing were lost again, so queue them once more instead
        // of waiting for the RTO (paths that reorder resend spuriously). Each
        // hole has its own mark: later resends do not hide an earlier one's loss.
        let (sacked, retx) = (&qp.sacked, &mut qp.retx);
        qp.resent.retain(|&hole, &mut mark| {
            if mark > sack {
                return true;
            }
            if !sacked.contains(&hole) {
                retx.insert(hole);
            }
            false
        });
        let nic = qp.tx_nic as usize;
        self.sr_loss_event(nic);
    }

    /// Selective repeat after a timeout: resend every PSN sent and not known received.
    pub(crate) fn sr_on_timeout(&mut self, qi: u32) {
        let qp = &mut self.qps[qi as usize];
        qp.retx.clear();
        for psn in qp.snd_una..qp.highest_sent {
            if !qp.sacked.contains(&psn) {
                qp.retx.insert(psn);
            }
        }
        qp.retx_high = qp.highest_sent;
    }

    /// SRNIC's bitmap onloading (§4.4.2): a loss event's metadata (PSN and
    /// expected PSN, 16 B) goes over PCIe to the software that keeps the
    /// bitmaps in host memory. Counted when the resource model is on.
    fn sr_loss_event(&mut self, nic: usize) {
        if self.nics[nic].res.is_some() {
            let now = self.now();
            self.pcie_fetch(nic, crate::nic::resources::PciePurpose::Bitmap, 16, now);
        }
    }

    #[cold]
    #[inline(never)]
    fn receive_read_request(&mut self, p: &Packet) {
        let qi = p.qp;
        let qp = &mut self.qps[qi as usize];
        // Everything below the requested PSN has reached the requester.
        let end = match qp.message_of(p.psn) {
            Some((_, m)) => m.end_psn(),
            None => return, // a stale retry for a message already acknowledged
        };
        if end > qp.ready_psn_end {
            qp.ready_psn_end = end;
        }
        if p.psn < qp.snd_nxt {
            // A retried request: the responses it asks for were lost.
            let psn = p.psn.max(qp.snd_una);
            qp.snd_nxt = psn;
            qp.snd_nxt_off = qp.byte_offset_of(psn, self.nic_cfg.wire.mtu_payload);
            qp.tx_cursor = 0;
            qp.turn_end_psn = qp.snd_nxt;
            qp.fetch_ready_at = crate::time::Time::NEVER;
        }
        self.arm_rto(qi);
        self.activate(qi);
    }

    /// The requester NIC sends a READ request for the message holding `psn`.
    pub(crate) fn send_read_request(&mut self, qi: u32, psn: u32) {
        let qp = &self.qps[qi as usize];
        let mut r = Packet::new(PacketKind::ReadRequest);
        r.qp = qi;
        // Requests travel requester → responder, i.e. against the data direction.
        r.src = qp.dst_node;
        r.dst = qp.src_node;
        r.udp_sport = qp.udp_sport;
        r.class = qp.class;
        r.psn = psn;
        r.frame_bytes = self.nic_cfg.wire.read_request_frame;
        let nic = qp.requester;
        self.qps[qi as usize].last_rx_progress = self.now();
        self.arm_read_retry(qi);
        self.queue_request(nic, r);
    }

    // ------------------------------------------------------------ probes

    /// Send an RTT probe for QP `qi` along the path of `sport`.
    #[cold]
    #[inline(never)]
    pub(crate) fn send_probe(&mut self, qi: u32, sport: u16) {
        let now = self.now();
        let id = self.register_probe(qi, sport);
        let qp = &self.qps[qi as usize];
        let mut r = Packet::new(PacketKind::Probe);
        r.qp = qi;
        r.src = qp.src_node;
        r.dst = qp.dst_node;
        r.udp_sport = sport;
        r.class = qp.class;
        r.psn = id;
        r.tx_timestamp = now;
        r.frame_bytes = self.nic_cfg.wire.probe_frame;
        let nic = qp.tx_nic;
        self.queue_request(nic, r);
    }

    /// A probe of QP `qi` on `sport` is out (or meant to be): it waits for
    /// its answer until the probe timeout reports it lost. Returns its id.
    pub(crate) fn register_probe(&mut self, qi: u32, sport: u16) -> u32 {
        let now = self.now();
        let qp = &mut self.qps[qi as usize];
        let id = qp.next_probe_id;
        qp.next_probe_id = qp.next_probe_id.wrapping_add(1);
        qp.probes.push((id, sport, now));
        let deadline = now + self.nic_cfg.probe_timeout;
        if self.qps[qi as usize].timers[super::qp::PROBE_SLOT].deadline == crate::time::Time::NEVER
        {
            self.set_qp_timer(qi, super::qp::PROBE_SLOT, deadline);
        }
        id
    }

    /// Queue a non-data frame that travels in a data class (READ request, probe).
    fn queue_request(&mut self, nic: u32, p: Packet) {
        let port = self.nics[nic as usize].port;
        let id = self.pkts.alloc(p);
        self.nics[nic as usize].requests.push_back(id);
        self.try_transmit(port);
    }

    /// The peer NIC answers a probe at once, on the same UDP source port.
    #[cold]
    #[inline(never)]
    fn answer_probe(&mut self, p: &Packet) {
        let mut r = *p;
        r.kind = PacketKind::ProbeReply;
        r.src = p.dst;
        r.dst = p.src;
        r.hops = 0;
        r.ingress_port = u32::MAX;
        let nic = self.node_index[p.dst as usize];
        self.queue_request(nic, r);
    }

    #[cold]
    #[inline(never)]
    fn receive_probe_reply(&mut self, p: &Packet) {
        let qi = p.qp;
        let qp = &mut self.qps[qi as usize];
        let Some(i) = qp.probes.iter().position(|x| x.0 == p.psn) else {
            return; // already reported lost
        };
        let (_, sport, sent) = qp.probes.remove(i);
        let now = self.now();
        let rtt = now - sent;
        self.rec.probe(crate::record::ProbeRecord {
            time: now,
            qp: qi,
            udp_sport: sport,
            rtt,
            lost: false,
        });
        if self.qps[qi as usize].cc_mask.has(EventMask::RTT) {
            self.raise_cc(
                qi,
                CcEvent::Rtt {
                    udp_sport: sport,
                    sent,
                    rtt,
                    lost: false,
                },
                None,
            );
        }
    }

    /// Report probes older than the probe timeout as lost; re-arm for the rest.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_probe_timeout(&mut self, qi: u32) {
        let now = self.now();
        let timeout = self.nic_cfg.probe_timeout;
        let qp = &mut self.qps[qi as usize];
        let mut lost = Vec::new();
        qp.probes.retain(|&(_, sport, sent)| {
            if sent + timeout <= now {
                lost.push((sport, sent));
                false
            } else {
                true
            }
        });
        let next = qp.probes.iter().map(|x| x.2 + timeout).min();
        let wants = qp.cc_mask.has(EventMask::RTT);
        if let Some(t) = next {
            self.set_qp_timer(qi, super::qp::PROBE_SLOT, t);
        }
        for &(sport, _) in &lost {
            self.rec.probe(crate::record::ProbeRecord {
                time: now,
                qp: qi,
                udp_sport: sport,
                rtt: timeout,
                lost: true,
            });
        }
        if wants {
            for (sport, sent) in lost {
                self.raise_cc(
                    qi,
                    CcEvent::Rtt {
                        udp_sport: sport,
                        sent,
                        rtt: timeout,
                        lost: true,
                    },
                    None,
                );
            }
        }
    }

    /// Send a controller's out-of-band message from one end of QP `qi` to the other.
    #[cold]
    #[inline(never)]
    pub(crate) fn send_oob(&mut self, qi: u32, words: [u32; 4], from_receiver: bool) {
        let qp = &self.qps[qi as usize];
        let to_receiver = !from_receiver;
        let mut m = Packet::new(PacketKind::Oob { to_receiver });
        m.qp = qi;
        (m.src, m.dst) = if to_receiver {
            (qp.src_node, qp.dst_node)
        } else {
            (qp.dst_node, qp.src_node)
        };
        m.udp_sport = qp.udp_sport;
        m.class = qp.class;
        m.psn = words[0];
        m.payload = words[1];
        m.tx_timestamp = crate::time::Time(((words[2] as u64) << 32) | words[3] as u64);
        m.frame_bytes = self.nic_cfg.wire.oob_frame;
        let nic = self.node_index[m.src as usize];
        self.queue_request(nic, m);
    }
}
