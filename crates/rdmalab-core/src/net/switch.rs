//! Switch forwarding: ingress admission and PFC, routing to an egress queue,
//! and the dequeue step where ECN marking and INT happen.

use super::buffer::{Admission, BufferConfig, EcnConfig, SharedBuffer};
use super::routing::{EcmpHash, L4Ports};
use super::CONTROL_CLASS;
use crate::packet::{IntHop, Packet, PacketId, PacketKind};
use crate::rng::RngStream;
use crate::time::Rate;
use crate::world::World;

#[derive(Clone, Debug)]
pub struct SwitchConfig {
    pub buffer: BufferConfig,
    pub ecn_enabled: bool,
    /// ECN thresholds per link rate; rates not listed use [`EcnConfig::scaled_for`].
    pub ecn_by_rate: Vec<(Rate, EcnConfig)>,
    /// Push an INT hop record onto data packets at every egress.
    pub int_enabled: bool,
    /// Quantise INT fields as the ns-3 HPCC simulator's 8-byte hop record
    /// does with INT_MULTI = m: queue bytes in 80·m B, transmitted bytes in
    /// 128·m B, timestamps in whole ns (the byte and time counters wrap, but
    /// differences taken modulo the field width equal these; the 17-bit queue
    /// field wraps as in ns-3). `None`: exact values.
    pub int_multi: Option<u32>,
    /// How a switch picks among equal-cost ports (`switch.ecmp`).
    pub ecmp: EcmpHash,
    /// Egress ports serve data classes by strict priority, highest class
    /// first (`switch.scheduling`); `false`: round robin, as ns-3 HPCC.
    pub strict_priority: bool,
    /// Routing around down links (`switch.reroute_after`): this long after a
    /// switch-to-switch link goes down or comes back, every switch's ECMP
    /// table is recomputed over the links then up. `None`: tables never
    /// change (frames routed onto a down link are lost).
    pub reroute_after: Option<crate::time::Duration>,
    /// How an egress queue shares the port among the frames of one data
    /// class (`switch.egress_sharing`).
    pub egress_sharing: EgressSharing,
    /// Switches whose buffer or ECN differ from the above (`switches[]`),
    /// by node id, each with its settings in full.
    pub per_switch: Vec<(u32, SwitchLocal)>,
}

/// What may differ from one switch to another: its buffer (size, PFC and
/// lossy thresholds) and its ECN marking. Routing, INT and the egress
/// scheduler stay fabric-wide.
#[derive(Clone, Debug)]
pub struct SwitchLocal {
    pub buffer: BufferConfig,
    pub ecn_enabled: bool,
    pub ecn_by_rate: Vec<(Rate, EcnConfig)>,
}

impl SwitchLocal {
    pub fn ecn_for(&self, rate: Rate) -> Option<EcnConfig> {
        self.ecn_by_rate
            .iter()
            .find(|(r, _)| *r == rate)
            .map(|(_, e)| *e)
    }
}

/// How a switch's egress queue of one data class shares its port between
/// the frames waiting in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EgressSharing {
    /// First come, first served (the ns-3 HPCC simulator's switch, htsim's
    /// FIFO queue): each input gets the port in proportion to what it sends.
    Fifo,
    /// Round robin over the ingress ports with a frame queued, one frame a
    /// turn, FIFO within each: every input port gets an equal share however
    /// many flows it carries (a switch that arbitrates per input, as the
    /// attacks paper's testbed switch shares a port; a crossbar's iSLIP).
    InputPort,
}

impl SwitchConfig {
    pub fn ecn_for(&self, rate: Rate) -> Option<EcnConfig> {
        self.fabric_wide().ecn_for(rate)
    }

    /// The settings every switch has unless `switches[]` says otherwise.
    pub fn fabric_wide(&self) -> SwitchLocal {
        SwitchLocal {
            buffer: self.buffer.clone(),
            ecn_enabled: self.ecn_enabled,
            ecn_by_rate: self.ecn_by_rate.clone(),
        }
    }

    /// The settings of switch `node`.
    pub fn local(&self, node: u32) -> SwitchLocal {
        match self.per_switch.binary_search_by_key(&node, |(n, _)| *n) {
            Ok(i) => self.per_switch[i].1.clone(),
            Err(_) => self.fabric_wide(),
        }
    }
}

pub struct Switch {
    pub node: u32,
    /// With [`EgressSharing::InputPort`]: per egress port (by local index)
    /// and class, the ingress port (local index) served last.
    pub served_last: Vec<[u32; crate::packet::NUM_CLASSES]>,
    pub buffer: SharedBuffer,
    /// Whether this switch marks ECN (`switch.ecn.enabled`, or its `switches[]` entry).
    pub ecn_enabled: bool,
    pub ecn_rng: RngStream,
}

/// `hop` as the ns-3 HPCC simulator's 8-byte hop record holds it with
/// INT_MULTI = `m`: queue bytes in 80·m B units (a 17-bit field: it wraps),
/// transmitted bytes in 128·m B, the timestamp in whole ns.
#[inline]
pub(crate) fn ns3_int_quantised(mut hop: IntHop, m: u32) -> IntHop {
    let q = 80 * m as u64;
    if m.is_power_of_two() {
        // As ns-3 configures it. 80·m = 5·2^(4+s) and 128·m = 2^(7+s): a
        // shift and a division by the constant 5 (a multiplication), not
        // two divisions per hop.
        let s = m.trailing_zeros();
        hop.qlen_bytes = (hop.qlen_bytes >> (4 + s)) / 5 % (1 << 17) * q;
        hop.tx_bytes = hop.tx_bytes >> (7 + s) << (7 + s);
    } else {
        let b = 128 * m as u64;
        hop.qlen_bytes = hop.qlen_bytes / q % (1 << 17) * q;
        hop.tx_bytes = hop.tx_bytes / b * b;
    }
    hop.timestamp = crate::time::Time(hop.timestamp.ps() / 1000 * 1000);
    hop
}

impl World {
    /// The UDP ports a switch hashes. rdmalab's hash reads only the source
    /// port; ns-3's reads both, and a packet going back to the data sender
    /// (ACK, NACK, CNP) carries the flow's ports swapped.
    #[inline]
    fn l4_ports(&self, p: &crate::packet::Packet) -> L4Ports {
        match self.routing.hash() {
            EcmpHash::Rdmalab => L4Ports::rocev2(p.udp_sport),
            EcmpHash::Ns3Hpcc => {
                let qp = &self.qps[p.qp as usize];
                if p.src == qp.src_node {
                    L4Ports {
                        sport: p.udp_sport,
                        dport: qp.udp_dport,
                    }
                } else {
                    L4Ports {
                        sport: qp.udp_dport,
                        dport: p.udp_sport,
                    }
                }
            }
        }
    }

    /// The egress port switch `node` sends `p` out of: the flow's remembered
    /// choice, or the routing table's (then remembered). Packets that are not
    /// between their QP's two ends (none today) are routed afresh each time.
    #[inline]
    fn route(&mut self, node: u32, p: &Packet) -> Option<u32> {
        let qi = p.qp as usize;
        let forward = match self.flow_routes.get(qi) {
            Some(r) if p.src == r.src_node && p.dst == r.dst_node => true,
            Some(r) if p.src == r.dst_node && p.dst == r.src_node => false,
            _ => return self.routing.select(node, p.src, p.dst, self.l4_ports(p)),
        };
        let routes = &self.flow_routes[qi];
        let cache = if forward {
            &routes.forward
        } else {
            &routes.reverse
        };
        if let Some(port) = cache.lookup(p.udp_sport, node, p.path_hop.wrapping_sub(1)) {
            return Some(port);
        }
        let port = self.routing.select(node, p.src, p.dst, self.l4_ports(p))?;
        let routes = &mut self.flow_routes[qi];
        let cache = if forward {
            &mut routes.forward
        } else {
            &mut routes.reverse
        };
        cache.remember(p.udp_sport, node, port);
        Some(port)
    }

    /// A frame arrived at switch port `in_port`: route, admit, enqueue.
    pub(crate) fn switch_receive(&mut self, in_port: u32, pkt: PacketId) {
        let node = self.ports[in_port as usize].node;
        let sw = self.node_index[node as usize] as usize;
        let p = self.pkts.get_mut(pkt);
        // An ACK carries the count of the data it acknowledges (Swift's
        // target scales with the switches the data crossed), so the way back
        // adds nothing to it; `path_hop` counts this frame's own way.
        p.hops += (p.kind != PacketKind::Ack) as u8;
        p.path_hop += 1;
        let p = *p;
        let Some(out_port) = self.route(node, &p) else {
            let local = self.ports[in_port as usize].local;
            self.drop_packet(node, local, "no_route", pkt);
            return;
        };
        let in_local = self.ports[in_port as usize].local as usize;
        // ACKs carry their class (control, or data with ns-3's ACK_HIGH_PRIO 0).
        let class = if matches!(p.kind, PacketKind::Cnp | PacketKind::Pfc { .. }) {
            CONTROL_CLASS
        } else {
            p.class
        };
        if class != CONTROL_CLASS {
            let egress_queued = self.ports[out_port as usize].queue(class).bytes;
            let adm = self.switches[sw].buffer.admit(
                in_local,
                egress_queued,
                class,
                p.frame_bytes as u64,
            );
            if adm == Admission::Dropped {
                self.drop_packet(node, in_local as u32, "buffer_full", pkt);
                return;
            }
            self.pkts.get_mut(pkt).ingress_port = in_local as u32;
        }
        // (The buffer alone decides this: asking before the frame is queued
        // gives the same answer.)
        let pause =
            class != CONTROL_CLASS && self.switches[sw].buffer.should_pause(in_local, class);
        if !pause && self.take_idle_port(out_port, class) {
            // Cut through: the port had nothing queued and nothing on the
            // wire, so this frame would be queued and at once dequeued.
            if class != CONTROL_CLASS {
                self.switch_egress(out_port, class, pkt);
            }
            self.start_frame(out_port, pkt);
            return;
        }
        self.ports[out_port as usize].enqueue(class, pkt, &mut self.pkts);
        if pause {
            self.send_pfc(sw, in_port, class, true);
        }
        self.try_transmit(out_port);
    }

    /// If switch port `port` is idle (no frame on the wire or being chosen,
    /// none queued) and may send `class`, mark it busy, as
    /// [`World::try_transmit`] does, and move its round robin as picking a
    /// frame of `class` would.
    #[inline]
    fn take_idle_port(&mut self, port: u32, class: u8) -> bool {
        #[cfg(test)]
        if self.no_cut_through {
            return false;
        }
        let p = &self.ports[port as usize];
        if p.busy || p.has_queued() || p.is_paused(class) {
            return false;
        }
        if let Some(d) = p.skipped_tx_done() {
            if self.q.is_ahead(d.at, d.seq) {
                // Its frame is still on the wire: the queue's way wakes it.
                return false;
            }
        }
        let p = &mut self.ports[port as usize];
        p.take_skipped_tx_done();
        p.busy = true;
        p.pick_only(class);
        true
    }

    /// Pick the next frame of a switch egress port; apply ECN and INT.
    pub(crate) fn switch_dequeue(&mut self, port: u32) -> Option<PacketId> {
        let class = self.ports[port as usize].pick_class()?;
        let pkt = if class != CONTROL_CLASS && self.switch_cfg.egress_sharing == EgressSharing::InputPort {
            let p = &mut self.ports[port as usize];
            let sw = self.node_index[p.node as usize] as usize;
            let last = &mut self.switches[sw].served_last[p.local as usize][class as usize];
            p.dequeue_by_input(class, last, &mut self.pkts)?
        } else {
            self.ports[port as usize].dequeue(class, &self.pkts)?
        };
        if class != CONTROL_CLASS {
            self.switch_egress(port, class, pkt);
        }
        Some(pkt)
    }

    /// Data frame `pkt` of `class` leaves switch port `port`'s queue: free
    /// its buffer, mark ECN, push its INT record, resume the upstream.
    /// Callers skip control frames themselves: the same test in here changed
    /// the inlining and cost 1.5 % more instructions on (b).
    #[inline]
    fn switch_egress(&mut self, port: u32, class: u8, pkt: PacketId) {
        let node = self.ports[port as usize].node;
        let sw = self.node_index[node as usize] as usize;
        let p: &mut Packet = self.pkts.get_mut(pkt);
        let in_local = p.ingress_port as usize;
        let frame = p.frame_bytes as u64;
        let switch = &mut self.switches[sw];
        switch.buffer.release(in_local, class, frame);
        if p.kind == PacketKind::Data {
            let port_ref = &self.ports[port as usize];
            if switch.ecn_enabled && p.ect && !p.ecn_ce {
                // What waits in this class's queue after this frame left.
                let queued = port_ref.queue(class).bytes;
                if port_ref.ecn.should_mark(queued, &mut switch.ecn_rng) {
                    p.ecn_ce = true;
                    self.stats.ecn_marked += 1;
                }
            }
            if self.switch_cfg.int_enabled {
                let mut hop = IntHop {
                    qlen_bytes: port_ref.queued_total,
                    tx_bytes: port_ref.tx_bytes + frame,
                    timestamp: self.q.now(),
                    link_rate: port_ref.rate(),
                };
                if let Some(m) = self.switch_cfg.int_multi {
                    hop = ns3_int_quantised(hop, m);
                }
                self.pkts.push_int(pkt, hop);
            }
        }
        if switch.buffer.should_resume(in_local, class) {
            let in_port = self.node_ports[node as usize][in_local];
            self.send_pfc(sw, in_port, class, false);
        }
    }

    /// Send PAUSE or RESUME for `class` out of `port` (to the upstream on that link).
    fn send_pfc(&mut self, sw: usize, port: u32, class: u8, pause: bool) {
        let local = self.ports[port as usize].local as usize;
        self.switches[sw]
            .buffer
            .set_paused_upstream(local, class, pause);
        let mut f = Packet::new(PacketKind::Pfc { class, pause });
        f.frame_bytes = self.nic_cfg.wire.pfc_frame;
        f.class = CONTROL_CLASS;
        let id = self.pkts.alloc(f);
        self.ports[port as usize].enqueue(CONTROL_CLASS, id, &mut self.pkts);
        if pause {
            self.stats.pfc_pauses_sent += 1;
        } else {
            self.stats.pfc_resumes_sent += 1;
        }
        self.try_transmit(port);
    }

    pub(crate) fn drop_packet(
        &mut self,
        node: u32,
        local_port: u32,
        reason: &'static str,
        pkt: PacketId,
    ) {
        let p = self.pkts.get(pkt);
        if p.kind == PacketKind::Data {
            self.stats.data_payload_dropped += p.payload as u64;
        }
        self.rec
            .count_drop(node, local_port, reason, p.frame_bytes as u64);
        self.pkts.free(pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    /// A frame that cuts through an idle port leaves the run as it would
    /// had it been queued and dequeued at once: same events, latencies,
    /// bytes, marks and pauses, each at the same time. Three data classes
    /// and control frames share the dumbbell's ports, which are by turns
    /// idle and backed up; the round robin among the classes depends on
    /// where each cut-through frame leaves it.
    #[test]
    fn cutting_through_an_idle_port_changes_nothing() {
        // The fast middle link puts the congestion at the right switch's
        // port to h3 (classes 4 and 5). DCQCN keeps queues short (ECN
        // marks). Without CC, with ns-3's whole-ns frame times (many ties),
        // PFC pauses the left switch's port to the right one. There, with
        // no reserve and a tiny α, a single class-3 frame to an idle port
        // (h4, h5, h6) crosses the PAUSE threshold as it arrives: such a
        // frame must be queued (PAUSE first), not cut through.
        for (cc, buffer, tx_time, counter, alpha) in [
            ("dcqcn", "32MiB", "exact", "ecn_marked", 0.125),
            ("none", "1MiB", "ns3-truncated", "pfc_pauses_sent", 0.001),
        ] {
            let json = format!(
                r#"{{"name": "ct", "seed": 3, "duration": "300us", "tx_time": "{tx_time}",
                "topology": {{"kind": "dumbbell", "left_hosts": 3, "right_hosts": 4,
                    "host_link": {{"rate": "100Gbps", "delay": "1us"}},
                    "bottleneck_link": {{"rate": "400Gbps", "delay": "1us"}}}},
                "switch": {{"buffer": "{buffer}", "pfc": {{"enabled": true, "alpha": {alpha}, "reserve": "0B"}}}},
                "cc": {{"algorithm": "{cc}"}},
                "workload": {{"perftest": [
                    {{"name": "a", "src": "h0", "dst": "h3", "verb": "write", "message_size": "64KiB", "queue_depth": 8, "class": 4}},
                    {{"name": "b", "src": "h1", "dst": "h3", "verb": "write", "message_size": "16KiB", "queue_depth": 4, "class": 4}},
                    {{"name": "c", "src": "h2", "dst": "h3", "verb": "write", "message_size": "2KiB", "queue_depth": 1, "class": 5}},
                    {{"name": "e", "src": "h2", "dst": "h4", "verb": "write", "message_size": "1000B", "queue_depth": 1, "class": 3}},
                    {{"name": "f", "src": "h1", "dst": "h5", "verb": "write", "message_size": "1000B", "queue_depth": 1, "class": 3}},
                    {{"name": "g", "src": "h0", "dst": "h6", "verb": "write", "message_size": "1000B", "queue_depth": 1, "class": 3}},
                    {{"name": "d", "src": "h4", "dst": "h0", "verb": "write", "message_size": "300B", "queue_depth": 1, "class": 4}}]}}}}"#
            );
            let run = |queue_all: bool| {
                let mut w = crate::scenario::Scenario::from_json_str(&json)
                    .unwrap()
                    .build()
                    .unwrap();
                w.no_cut_through = queue_all;
                w.run_to_end().unwrap();
                (w.q.processed(), crate::world::tests::Observed::of(&w))
            };
            let ((cut_events, cut), (queued_events, queued)) = (run(false), run(true));
            assert!(
                cut.apps.iter().all(|(bytes, l)| *bytes > 0 && l.len() > 3),
                "{cc}: {:?}",
                cut.apps
            );
            assert!(
                !cut.counters.contains(&format!("{counter}: 0,")),
                "{cc}: {counter} > 0: {}",
                cut.counters
            );
            assert_eq!(cut_events, queued_events, "{cc}: events");
            assert_eq!(cut, queued, "{cc}");
        }
    }

    #[test]
    fn ns3_int_fields_quantise_by_shifts_as_by_division() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for m in [1, 2, 3, 4, 5, 8, 64, 100, 1 << 20, 1 << 31] {
            let (q, b) = (80 * m as u64, 128 * m as u64);
            for i in 0..20_000 {
                let v = match i % 3 {
                    0 => next(),
                    1 => next() >> (next() % 64),
                    _ => (next() % 4) * q + next() % 3 * b,
                };
                let hop = IntHop {
                    qlen_bytes: v,
                    tx_bytes: v.rotate_left(7),
                    timestamp: Time(v >> 3),
                    link_rate: crate::time::Rate::gbps(100),
                };
                let got = ns3_int_quantised(hop, m);
                assert_eq!(got.qlen_bytes, v / q % (1 << 17) * q, "m {m}, queue {v}");
                let tx = v.rotate_left(7);
                assert_eq!(got.tx_bytes, tx / b * b, "m {m}, tx {tx}");
                assert_eq!(got.timestamp.ps(), (v >> 3) / 1000 * 1000);
            }
        }
    }
}
