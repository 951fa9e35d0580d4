//! Workloads: what the applications post, and when.
//!
//! * Flows: one QP and one message each, posted at a start time (explicit
//!   lists, Poisson arrivals drawn from a flow-size CDF, incast).
//! * Collectives: flows that wait for other flows' data and for compute
//!   phases ([`collective`], over the dependency graph of [`graph`]).
//! * Applications: perftest-like QPs that keep `queue_depth` messages posted
//!   until the run stops.

pub mod cdf;
pub mod collective;
pub mod graph;

use crate::net::routing::L4Ports;
use crate::nic::qp::{Message, Origin, Qp, QpTimer, Verb, TIMER_SLOTS};
use crate::rng::RngStream;
use crate::time::{Duration, Rate, Time};
use crate::world::World;
use cdf::FlowSizeCdf;

/// One flow: `src` posts one message of `bytes` to `dst` at `start`.
/// For READ, `src` is the requester and the data flows from `dst` to `src`.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub verb: Verb,
    pub bytes: u64,
    pub start: Duration,
    /// UDP destination port written in the ns-3-style FCT file (ns-3's
    /// fct_analysis reads 100 as normal traffic and 200 as incast).
    pub dport: u16,
    pub owner: QpOwner,
    /// A piece of a larger transfer that an attack cut up (`split`,
    /// `staggered`): not a victim when slowdowns are compared.
    pub piece: bool,
    /// Starts when flow `after` has put its last byte on the wire for the
    /// first time, not at `start` (`staggered` with `interval: sent`: one
    /// QP sending at a time).
    pub after: Option<u32>,
}

/// The flow-splitting attack (Snyder et al. §IV-B): every flow larger than
/// `above` becomes pieces of `piece` bytes (the last one smaller), the k-th
/// starting `k · interval` after the flow would have (0: all at once, the
/// parallel attack; an RTT: the staggered attack).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    pub above: u64,
    pub piece: u64,
    pub interval: Duration,
}

/// Cut the flows larger than `s.above` into pieces, keeping start order.
pub fn split_flows(flows: Vec<FlowSpec>, s: Split) -> Vec<FlowSpec> {
    let mut out = Vec::with_capacity(flows.len());
    for f in flows {
        if f.bytes <= s.above {
            out.push(f);
            continue;
        }
        let mut left = f.bytes;
        let mut k = 0;
        while left > 0 {
            let bytes = left.min(s.piece);
            out.push(FlowSpec {
                bytes,
                start: f.start + Duration(s.interval.ps() * k),
                piece: true,
                ..f.clone()
            });
            left -= bytes;
            k += 1;
        }
    }
    out.sort_by_key(|f| f.start);
    out
}

/// Who owns a QP and which address of the destination host it connects to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpOwner {
    /// Index into `Workload::tenants` (`NO_TENANT`: none).
    pub tenant: u32,
    /// The destination host's address (0: its first). A tenant that gives
    /// a host more addresses escapes `cc_scope: destination`.
    pub address: u16,
}

impl Default for QpOwner {
    fn default() -> Self {
        QpOwner {
            tenant: crate::nic::qp::NO_TENANT,
            address: 0,
        }
    }
}

/// A perftest-like application: one QP from `src` to `dst` keeping
/// `queue_depth` messages of `message_bytes` posted from `start` until the end.
#[derive(Clone, Debug, PartialEq)]
pub struct AppSpec {
    pub name: String,
    pub src: u32,
    pub dst: u32,
    pub verb: Verb,
    pub message_bytes: u64,
    pub queue_depth: u32,
    pub start: Duration,
    /// From this time on the application posts nothing new; what is posted
    /// drains (`None`: it posts until the run ends).
    pub stop: Option<Duration>,
    /// A fixed dequeue rate with no congestion control (background traffic).
    pub rate: Option<Rate>,
    /// Application hints delivered to the QP's controller when it starts.
    pub hints: Vec<(crate::control::HintKind, f64)>,
    /// The data sender's buffers are in device memory (GPU HBM, NVMe), read
    /// over `host.device_pcie` (SCR A.9: GPU-Direct and NVMe-oF RDMA).
    pub device_memory: bool,
    /// The core of the sender host whose thread drives this QP (rings its doorbells).
    pub core: u32,
    /// Traffic class of its data (`None`: `nic.data_class`).
    pub class: Option<u8>,
    /// The job it belongs to (an index into `Workload::jobs`), which host policies act on.
    pub job: Option<u32>,
    /// A closed loop's pause between a completion and the next post.
    pub think_time: Duration,
    pub owner: QpOwner,
}

#[derive(Clone, Debug, Default)]
pub struct AppState {
    pub qp: Option<u32>,
    pub posted: u64,
    pub completed: u64,
    pub completed_bytes: u64,
    /// Completion latency of each message (post to completion), picoseconds.
    pub latencies_ps: Vec<u64>,
    /// `host.uar`: the UAR page its QP is bound to, and when the WQEs waiting
    /// for their doorbell were issued (in order).
    pub uar_page: u32,
    pub issued: std::collections::VecDeque<Time>,
    /// The QP it posts on when a host policy made its job reuse fewer QPs
    /// (`None`: its own).
    pub post_qp: Option<u32>,
    /// Time its messages waited in the send queue (post to first packet on
    /// the wire), ps, and how many messages that is.
    pub send_queue: (u64, u64),
}

#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub flows: Vec<FlowSpec>,
    pub apps: Vec<AppSpec>,
    /// Job names, in order of first appearance (`workload.perftest[].job`).
    pub jobs: Vec<String>,
    /// Each job's intent (`perftest[].intent`), by job index; may be shorter than `jobs`.
    pub job_intents: Vec<Option<crate::host::policy::Intent>>,
    /// Tenant names (`workload.tenants`), indexed by `QpOwner::tenant`.
    pub tenants: Vec<String>,
    /// The collectives (`workload.collective`), whose flows are in `flows`.
    pub collectives: Vec<collective::CollectiveSpec>,
    /// Which flows wait for which (empty: every flow starts at its `start`).
    pub graph: graph::FlowGraph,
}

impl Workload {
    /// Flows and applications that start at or after `stop` (the run's
    /// duration): they cannot complete, so the front end warns of them.
    pub fn late_starts(&self, stop: Time) -> (usize, usize) {
        let late = |start: Duration| start.ps() >= stop.ps();
        (
            self.flows.iter().filter(|f| late(f.start)).count(),
            self.apps.iter().filter(|a| late(a.start)).count(),
        )
    }
}

/// Poisson flow arrivals at every host in `hosts`, as the ns-3 HPCC
/// simulator's `traffic_gen.py` makes them: per host, exponential
/// inter-arrival times with mean `mean_size · 8 / (host_rate · load)`, a
/// destination drawn uniformly among the other hosts, a size drawn from the CDF.
/// Unlike `traffic_gen.py`, it is seeded and counts flows exactly.
pub fn poisson_flows(
    hosts: &[u32],
    host_rate: Rate,
    load: f64,
    cdf: &FlowSizeCdf,
    start: Duration,
    duration: Duration,
    verb: Verb,
    rng: &mut RngStream,
) -> Vec<FlowSpec> {
    let mut flows = Vec::new();
    if hosts.len() < 2 || load <= 0.0 {
        return flows;
    }
    let mean_iat_s = cdf.mean() * 8.0 / (host_rate.bps() as f64 * load);
    let end = start.ps() + duration.ps();
    for (src_idx, &src) in hosts.iter().enumerate() {
        let mut t = start.ps() as f64;
        loop {
            t += rng.exponential(mean_iat_s) * 1e12;
            if t >= end as f64 {
                break;
            }
            let mut di = rng.below(hosts.len() as u64 - 1) as usize;
            if di >= src_idx {
                di += 1;
            }
            let dst = hosts[di];
            let bytes = cdf.sample(rng).max(1);
            flows.push(FlowSpec {
                src,
                dst,
                verb,
                bytes,
                start: Duration(t as u64),
                dport: 100,
                owner: QpOwner::default(),
                piece: false,
                after: None,
            });
        }
    }
    // Stable: equal start times keep host order.
    flows.sort_by_key(|f| f.start);
    flows
}

/// Packets one QP may number over a run (2^31): rdmalab's PSNs are 32-bit
/// and do not wrap (RoCE's 24-bit PSNs do; that is not modelled), and PSN
/// arithmetic keeps a bit of room above the end.
pub const MAX_QP_PACKETS: u64 = 1 << 31;

impl World {
    /// Create a QP from `requester` to `responder` (node ids). With a
    /// `fixed_rate` it is uncontrolled background traffic: it sends at that
    /// rate with no window, and the scenario's controller never runs for it
    /// (not even its start, which could move or probe the QP).
    pub(crate) fn create_qp(
        &mut self,
        requester: u32,
        responder: u32,
        verb: Verb,
        fixed_rate: Option<Rate>,
        dport: u16,
        owner: QpOwner,
    ) -> u32 {
        let req_nic = self.node_index[requester as usize];
        let resp_nic = self.node_index[responder as usize];
        let (tx_nic, rx_nic, src_node, dst_node) = match verb {
            Verb::Read => (resp_nic, req_nic, responder, requester),
            _ => (req_nic, resp_nic, requester, responder),
        };
        let sport = {
            let e = self
                .sport_next
                .entry((requester, responder))
                .or_insert(10000);
            let s = *e;
            *e = e.wrapping_add(1);
            s
        };
        let qi = self.qps.len() as u32;
        let line = self.nics[tx_nic as usize].line_rate;
        let mut path = self.path_facts(src_node, dst_node, L4Ports { sport, dport }, line);
        match self.nic_cfg.base_rtt {
            crate::nic::BaseRtt::FabricMax => path.base_rtt = self.fabric_max_rtt(),
            crate::nic::BaseRtt::Fixed(d) => path.base_rtt = d,
            crate::nic::BaseRtt::Path => {}
        }
        let window = match self.nic_cfg.window {
            _ if fixed_rate.is_some() => None,
            crate::nic::WindowConfig::None => None,
            crate::nic::WindowConfig::Bdp => Some(path.bdp_bytes().max(1)),
            crate::nic::WindowConfig::Bytes(b) => Some(b),
        };
        let group_key = match fixed_rate {
            Some(_) => None,
            None => self
                .cc_groups
                .scope
                .key(tx_nic, dst_node, owner.address, owner.tenant),
        };
        self.flow_routes.resize(qi as usize + 1, Default::default());
        self.flow_routes[qi as usize] =
            crate::net::routing::FlowRoutes::between(src_node, dst_node);
        self.qps.push(Qp {
            id: qi,
            verb,
            requester: req_nic,
            responder: resp_nic,
            tx_nic,
            rx_nic,
            src_node,
            dst_node,
            udp_sport: sport,
            udp_dport: dport,
            class: self.nic_cfg.data_class,
            device_memory: false,
            path,
            msgs: Default::default(),
            msgs_popped: 0,
            psn_end: 0,
            byte_end: 0,
            ready_psn_end: 0,
            snd_nxt: 0,
            snd_una: 0,
            highest_sent: 0,
            snd_nxt_off: 0,
            snd_una_off: 0,
            tx_cursor: 0,
            rate: fixed_rate.unwrap_or(line),
            window,
            share: 1,
            turns_used: 0,
            turn_end_psn: 0,
            next_avail: Time::ZERO,
            ctx_psn: u32::MAX,
            ctx_ready_at: Time::ZERO,
            wqe_ready_at: Time::ZERO,
            wqe_out_at: Time::ZERO,
            tx_triggered: 0,
            tx_held: (0, 0),
            core_psn: u32::MAX,
            core_ready_at: Time::ZERO,
            fetch_end_psn: 0,
            fetch_ready_at: Time::NEVER,
            sacked: Default::default(),
            retx: Default::default(),
            retx_high: 0,
            resent: Default::default(),
            last_tx_start: Time::ZERO,
            last_tx_wire: 0,
            in_active: false,
            cc: if fixed_rate.is_some() || group_key.is_some() {
                crate::control::Cc::Fixed
            } else {
                self.cc_cfg.make_in(&self.ctl_tables)
            },
            cc_mask: crate::control::EventMask(0),
            group: crate::nic::cc_scope::NO_GROUP,
            group_listed: false,
            tenant: owner.tenant,
            dst_address: owner.address,
            timers: [QpTimer::default(); TIMER_SLOTS],
            epsn: 0,
            rx_unacked: 0,
            nacked_psn: None,
            last_cnp: None,
            rx_ooo: Default::default(),
            rx_ce_pending: false,
            rx_next_msg: 0,
            last_rx_progress: Time::ZERO,
            probes: Vec::new(),
            next_probe_id: 0,
            delivered_bytes: 0,
            sent_payload: 0,
            retransmitted_packets: 0,
            timeouts: 0,
            sampled_delivered: 0,
        });
        if self.nic_cfg.wire.cc_header > 0 {
            self.cc_headers
                .resize(qi as usize + 1, [0; crate::control::MAX_CC_HEADER_WORDS]);
        }
        match (fixed_rate, group_key) {
            (Some(_), _) => {}
            (None, Some(key)) => self.join_cc_group(qi, key),
            (None, None) => self.start_cc(qi),
        }
        qi
    }

    /// Post one message (WQE) on QP `qi`.
    pub(crate) fn post(&mut self, qi: u32, bytes: u64, origin: Origin) {
        let now = self.now();
        self.post_issued(qi, bytes, origin, now);
    }

    /// Post one message that the application issued at `issued` (its latency counts from then).
    pub(crate) fn post_issued(&mut self, qi: u32, bytes: u64, origin: Origin, issued: Time) {
        let now = self.now();
        let packets = self.nic_cfg.wire.packets_for(bytes);
        if self.qps[qi as usize].psn_end as u64 + packets > self.max_qp_packets {
            // PSNs never wrap here, so a QP stops before its numbers would.
            if self.error.is_none() {
                self.error = Some(crate::world::RunError::PsnSpace { qp: qi, at: now });
            }
            return;
        }
        let packets = packets as u32;
        let qp = &mut self.qps[qi as usize];
        if qp.group != crate::nic::cc_scope::NO_GROUP && !qp.group_listed {
            // Back in its group's list: it sends at the group's rate and window.
            let g = qp.group;
            self.cc_groups.list(g, qp);
            let grp = &self.cc_groups.groups[g as usize];
            let (r, w) = (grp.rate, grp.window);
            self.qps[qi as usize].window = w;
            self.set_dequeue_rate(qi, r);
        }
        let qp = &mut self.qps[qi as usize];
        let m = Message {
            origin,
            bytes,
            first_psn: qp.psn_end,
            packets,
            first_byte: qp.byte_end,
            posted_at: now,
            issued_at: issued,
        };
        qp.msgs.push_back(m);
        qp.psn_end += packets;
        qp.byte_end += bytes;
        let index = qp.msgs_popped + qp.msgs.len() as u64 - 1;
        if qp.verb != Verb::Read {
            self.doorbell_prefetch(qi, index);
        }
        let qp = &mut self.qps[qi as usize];
        if qp.verb == Verb::Read {
            self.send_read_request(qi, m.first_psn);
        } else {
            qp.ready_psn_end = qp.psn_end;
            self.activate(qi);
        }
    }

    /// Create flow `f`'s QP, numbered as the next one, without posting:
    /// [`World::start_flow`] goes on to post; a partition of a parallel run
    /// that holds only the receiver stops here, keeping every QP numbered as
    /// in the serial run.
    #[cold]
    pub(crate) fn create_flow_qp(&mut self, f: u32) -> u32 {
        let spec = &self.workload.flows[f as usize];
        let (src, dst, verb, dport, owner) =
            (spec.src, spec.dst, spec.verb, spec.dport, spec.owner);
        self.create_qp(src, dst, verb, None, dport, owner)
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn start_flow(&mut self, f: u32) {
        let now = self.now();
        let shared = match self.graph_run.as_deref_mut() {
            Some(run) => {
                let g = &self.workload.graph;
                run.note_post(f, g.flow_instance[f as usize], now);
                let slot = g.flow_slot[f as usize];
                (slot != graph::NONE).then(|| (slot, run.slot_qp(slot)))
            }
            None => None,
        };
        let qi = match shared {
            // A collective's connection, kept from step to step.
            Some((_, Some(qi))) => qi,
            _ => {
                let qi = self.create_flow_qp(f);
                if let Some(c) = self.capture.as_mut() {
                    c.note_qp(qi, Some(f));
                }
                if let (Some((slot, None)), Some(run)) = (shared, self.graph_run.as_deref_mut()) {
                    run.set_slot_qp(slot, qi);
                }
                qi
            }
        };
        self.post(qi, self.workload.flows[f as usize].bytes, Origin::Flow(f));
    }

    /// Flows whose last byte has arrived at the receiver of QP `qi` (not a
    /// READ's: those complete there) wake the graph nodes that wait for them.
    pub(crate) fn messages_arrived(&mut self, qi: u32) {
        loop {
            let qp = &self.qps[qi as usize];
            let idx = qp.rx_next_msg.checked_sub(qp.msgs_popped);
            let Some(m) = idx.and_then(|i| qp.msgs.get(i as usize)).copied() else {
                break;
            };
            if m.end_psn() > qp.epsn {
                break;
            }
            self.qps[qi as usize].rx_next_msg += 1;
            if let Origin::Flow(f) = m.origin {
                self.flow_arrived(f);
            }
        }
    }

    /// Flow `f`'s data is all at its receiver.
    fn flow_arrived(&mut self, f: u32) {
        let now = self.now();
        let g = &self.workload.graph;
        let Some(run) = self.graph_run.as_deref_mut() else {
            return;
        };
        let node = g.flow_node.get(f as usize).copied().unwrap_or(graph::NONE);
        if node == graph::NONE || !run.note_arrival(f, g.flow_instance[f as usize], now) {
            return;
        }
        for &next in &g.nodes[node as usize].then {
            if run.satisfy(next) {
                let at = now + g.nodes[next as usize].gap;
                self.q.schedule(at, crate::world::Event::GraphNode { node: next });
            }
        }
    }

    /// Graph node `node` acts: its flow starts, or its gate tells the nodes after it.
    pub(crate) fn graph_node_acts(&mut self, node: u32) {
        let n = &self.workload.graph.nodes[node as usize];
        if n.flow != graph::NONE {
            let f = n.flow;
            self.start_flow(f);
            return;
        }
        let now = self.now();
        let run = self.graph_run.as_deref_mut().expect("a graph node without a graph");
        let (inst, _) = self.workload.graph.node_owner[node as usize];
        if inst != graph::NONE {
            run.note_fire(node, inst, n.gap, now);
        }
        for &next in &n.then {
            if run.satisfy(next) {
                let at = now + self.workload.graph.nodes[next as usize].gap;
                self.q.schedule(at, crate::world::Event::GraphNode { node: next });
            }
        }
    }

    /// Create application `a`'s QP, numbered as the next one, without
    /// posting: [`World::start_app`] goes on to post; a partition of a
    /// parallel run that holds only the receiver stops here.
    #[cold]
    pub(crate) fn create_app_qp(&mut self, a: u32) -> u32 {
        let spec = &self.workload.apps[a as usize];
        let (src, dst, verb, rate, owner) = (spec.src, spec.dst, spec.verb, spec.rate, spec.owner);
        let (device_memory, class) = (spec.device_memory, spec.class);
        let qi = self.create_qp(
            src,
            dst,
            verb,
            rate,
            crate::packet::wire::ROCEV2_UDP_PORT,
            owner,
        );
        self.qps[qi as usize].device_memory = device_memory;
        if let Some(c) = class {
            self.qps[qi as usize].class = c;
        }
        qi
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn start_app(&mut self, a: u32) {
        let qi = self.create_app_qp(a);
        let spec = self.workload.apps[a as usize].clone();
        self.apps[a as usize].qp = Some(qi);
        for &(kind, value) in &spec.hints {
            let _ = self.hint(qi, kind, value);
        }
        // A QP that starts at or after the application's stop posts nothing.
        let stopped = spec.stop.is_some_and(|d| self.now() >= Time::ZERO + d);
        if let (Some(cfg), Some(u)) = (
            self.nic_cfg.uar,
            self.nics[self.qps[qi as usize].requester as usize]
                .uar
                .as_mut(),
        ) {
            self.apps[a as usize].uar_page = u.bind(&cfg, spec.core);
        }
        for _ in 0..if stopped { 0 } else { spec.queue_depth } {
            self.apps[a as usize].posted += 1;
            self.app_issue(a, qi, self.now());
        }
    }

    /// Application `a` issues its next WQE at `at`: posted at once, or, with
    /// a think time or the host's doorbell model, when its doorbell has gone
    /// through its QP's UAR page.
    fn app_issue(&mut self, a: u32, qi: u32, at: Time) {
        let requester = self.qps[qi as usize].requester as usize;
        let (core, page) = (
            self.workload.apps[a as usize].core,
            self.apps[a as usize].uar_page,
        );
        let done = match (self.nic_cfg.uar, self.nics[requester].uar.as_mut()) {
            (Some(cfg), Some(u)) => u.ring(&cfg, core, page, at).done,
            _ => at,
        };
        if done == self.now() {
            let size = self.workload.apps[a as usize].message_bytes;
            self.post(qi, size, Origin::App(a));
        } else {
            self.apps[a as usize].issued.push_back(at);
            self.q
                .schedule(done, crate::world::Event::AppPost { app: a });
        }
    }

    /// The doorbell of application `a`'s oldest waiting WQE went through.
    pub(crate) fn app_doorbell_done(&mut self, a: u32) {
        let Some(own) = self.apps[a as usize].qp else {
            return;
        };
        let qi = self.apps[a as usize].post_qp.unwrap_or(own);
        let issued = self.apps[a as usize]
            .issued
            .pop_front()
            .expect("a doorbell per issued WQE");
        let size = self.workload.apps[a as usize].message_bytes;
        self.post_issued(qi, size, Origin::App(a), issued);
    }

    /// A message finished: the last byte was acknowledged (WRITE, SEND) or
    /// arrived at the requester (READ).
    pub(crate) fn message_completed(
        &mut self,
        qi: u32,
        origin: Origin,
        bytes: u64,
        posted_at: Time,
    ) {
        let now = self.now();
        match origin {
            Origin::Flow(f) => {
                self.flows_open -= 1;
                self.record_flow(f, qi, posted_at, now);
            }
            Origin::App(a) => {
                let st = &mut self.apps[a as usize];
                st.completed += 1;
                st.completed_bytes += bytes;
                st.latencies_ps.push((now - posted_at).ps());
                let stop = self.workload.apps[a as usize]
                    .stop
                    .map_or(self.run.stop_at, |d| Time::ZERO + d);
                if now < self.run.stop_at && now < stop {
                    st.posted += 1;
                    let at = now + self.workload.apps[a as usize].think_time;
                    let target = st.post_qp.or(st.qp).unwrap_or(qi);
                    self.app_issue(a, target, at);
                }
            }
        }
    }
}
