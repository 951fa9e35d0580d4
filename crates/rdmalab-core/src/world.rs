//! The world: every node, port, NIC and QP of one run, and the loop that
//! drives them.
//!
//! One event at a time is popped from the [`EventQueue`] and dispatched to its
//! owner (a port, a NIC, a QP timer, a workload). Handlers live next to the
//! model they belong to (`net::switch`, `nic::*`); this file only wires them
//! together, runs the clock and checks invariants at the end.

use crate::algo::CcConfig;
use crate::engine::EventQueue;
use crate::net::buffer::SharedBuffer;
use crate::net::routing::{Adjacency, Routing};
use crate::net::switch::{Switch, SwitchConfig};
use crate::net::topology::{NodeKind, Topology};
use crate::net::Port;
use crate::nic::qp::Qp;
use crate::nic::{Nic, NicConfig};
use crate::packet::{PacketId, PacketKind, PacketPool};
use crate::record::Recorder;
use crate::rng::RngStream;
use crate::time::{Duration, Time};
use crate::workload::{AppState, Workload};

/// Everything that can happen. Small and `Copy`: the queue holds millions.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// `port` finished serialising its current frame and may start the next.
    TxDone { port: u32 },
    /// A frame reaches the receiving end `port` of a link.
    Arrive { port: u32, pkt: PacketId },
    /// A NIC whose QPs were all held back by their dequeue rate tries again.
    NicWake { nic: u32 },
    /// Flow `flow` of the workload posts its WQE.
    FlowStart { flow: u32 },
    /// A perftest-like application starts posting.
    AppStart { app: u32 },
    /// An application's doorbell went through: its oldest issued WQE is posted.
    AppPost { app: u32 },
    /// A QP timer (retransmission, READ-request retry, or a controller's).
    QpTimer { qp: u32, slot: u8, gen: u32 },
    /// Take the periodic samples.
    Sample,
    /// A link goes down or comes back up.
    LinkState { link: u32, up: bool },
    /// Switches recompute their ECMP tables over the links up now.
    Reroute,
    /// A waiting control event reaches its processing thread (after the trigger latency).
    CtrlTrigger { entry: u32 },
    /// A control thread finished an entry and may take the next.
    CtrlDone { thread: u32 },
    /// The oldest pending actions of a QP take effect (after the install latency).
    CtrlInstall { qp: u32 },
    /// A control thread has sent a probe or peer message (`control.raw_eth`).
    ThreadSend { slot: u32 },
    /// The queue-length monitor samples every switch port.
    QlenSample,
    /// Every NIC reports host-domain signals to its active QPs' controllers.
    HostReport,
    /// The host schedulers read their signals and evaluate their policies.
    HostSchedule,
    /// An on-path RX core finished with a control frame that arrived at `port`.
    RxCoreDone { port: u32, pkt: PacketId },
    /// A fired policy's action takes effect on host scheduler `host`.
    PolicyAct { host: u32, policy: u32 },
    /// A node of the workload's dependency graph acts (a flow starts, a compute phase ends).
    GraphNode { node: u32 },
}

/// An event in one word for the event queue's ring ([`crate::engine::Packed`]):
/// the variant in the low 5 bits, a field below 2^27 (a port; the policy;
/// the link's state) in the next 27, a 32-bit field (a packet, or the one
/// index an event names) in the high 32. A QP timer (three fields), or an
/// index past its field, does not fit and waits in one of the queue's heaps.
mod packing {
    use super::Event;

    const TAG_BITS: u32 = 5;
    const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
    const A_BITS: u32 = 32 - TAG_BITS;
    // One tag per variant. TxDone and arrivals, nearly every event, are
    // acted on straight from the word (`World::dispatch_hop`).
    pub(super) const TX_DONE: u64 = 0;
    pub(super) const ARRIVE: u64 = 1;
    const NIC_WAKE: u64 = 2;
    const FLOW_START: u64 = 3;
    const APP_START: u64 = 4;
    const APP_POST: u64 = 5;
    // 6: a QP timer, which never packs.
    const SAMPLE: u64 = 7;
    const LINK_STATE: u64 = 8;
    const REROUTE: u64 = 9;
    const CTRL_TRIGGER: u64 = 10;
    const CTRL_DONE: u64 = 11;
    const CTRL_INSTALL: u64 = 12;
    const THREAD_SEND: u64 = 13;
    const QLEN_SAMPLE: u64 = 14;
    const HOST_REPORT: u64 = 15;
    const HOST_SCHEDULE: u64 = 16;
    const RX_CORE_DONE: u64 = 17;
    const POLICY_ACT: u64 = 18;
    const GRAPH_NODE: u64 = 19;

    /// The kind of a packed event.
    #[inline(always)]
    pub(super) fn tag(w: u64) -> u64 {
        w & TAG_MASK
    }

    /// The 27-bit and the 32-bit field of a packed event.
    #[inline(always)]
    pub(super) fn fields(w: u64) -> (u32, u32) {
        ((w as u32) >> TAG_BITS, (w >> 32) as u32)
    }

    #[inline(always)]
    fn word(tag: u64, a: u32, b: u32) -> Option<u64> {
        (a >> A_BITS == 0).then_some(tag | (a as u64) << TAG_BITS | (b as u64) << 32)
    }

    impl crate::engine::Packed for Event {
        #[inline(always)]
        fn pack(self) -> Option<u64> {
            match self {
                Event::TxDone { port } => word(TX_DONE, port, 0),
                Event::Arrive { port, pkt } => word(ARRIVE, port, pkt),
                Event::NicWake { nic } => word(NIC_WAKE, 0, nic),
                Event::FlowStart { flow } => word(FLOW_START, 0, flow),
                Event::AppStart { app } => word(APP_START, 0, app),
                Event::AppPost { app } => word(APP_POST, 0, app),
                Event::QpTimer { .. } => None,
                Event::Sample => word(SAMPLE, 0, 0),
                Event::LinkState { link, up } => word(LINK_STATE, up as u32, link),
                Event::Reroute => word(REROUTE, 0, 0),
                Event::CtrlTrigger { entry } => word(CTRL_TRIGGER, 0, entry),
                Event::CtrlDone { thread } => word(CTRL_DONE, 0, thread),
                Event::CtrlInstall { qp } => word(CTRL_INSTALL, 0, qp),
                Event::ThreadSend { slot } => word(THREAD_SEND, 0, slot),
                Event::QlenSample => word(QLEN_SAMPLE, 0, 0),
                Event::HostReport => word(HOST_REPORT, 0, 0),
                Event::HostSchedule => word(HOST_SCHEDULE, 0, 0),
                Event::RxCoreDone { port, pkt } => word(RX_CORE_DONE, port, pkt),
                Event::PolicyAct { host, policy } => word(POLICY_ACT, policy, host),
                Event::GraphNode { node } => word(GRAPH_NODE, 0, node),
            }
        }

        #[inline(always)]
        fn unpack(w: u64) -> Event {
            let (a, b) = fields(w);
            match tag(w) {
                TX_DONE => Event::TxDone { port: a },
                ARRIVE => Event::Arrive { port: a, pkt: b },
                NIC_WAKE => Event::NicWake { nic: b },
                FLOW_START => Event::FlowStart { flow: b },
                APP_START => Event::AppStart { app: b },
                APP_POST => Event::AppPost { app: b },
                SAMPLE => Event::Sample,
                LINK_STATE => Event::LinkState {
                    link: b,
                    up: a != 0,
                },
                REROUTE => Event::Reroute,
                CTRL_TRIGGER => Event::CtrlTrigger { entry: b },
                CTRL_DONE => Event::CtrlDone { thread: b },
                CTRL_INSTALL => Event::CtrlInstall { qp: b },
                THREAD_SEND => Event::ThreadSend { slot: b },
                QLEN_SAMPLE => Event::QlenSample,
                HOST_REPORT => Event::HostReport,
                HOST_SCHEDULE => Event::HostSchedule,
                RX_CORE_DONE => Event::RxCoreDone { port: a, pkt: b },
                POLICY_ACT => Event::PolicyAct { host: b, policy: a },
                GRAPH_NODE => Event::GraphNode { node: b },
                t => unreachable!("no event packs to tag {t}"),
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunConfig {
    pub seed: u64,
    /// Stop at this simulated time even if flows are unfinished.
    pub stop_at: Time,
    /// End the run with an error after this many events (a guard against runaway scenarios).
    pub max_events: u64,
    /// Period of the rate and queue samples; `None` disables them.
    pub sample_interval: Option<Duration>,
    /// Keep running to the stop time even after every flow has finished (as
    /// the ns-3 HPCC simulator does, so its monitors keep sampling).
    pub run_to_stop: bool,
    /// How long frames take on links and in QP pacers (`tx_time`).
    pub tx_time: crate::time::TxTime,
}

/// Why a run ended early with an error.
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// `limit` events ran (`max_events`) and more were due; `at` is the
    /// simulated time the run had reached, its last event's (the time
    /// `summary.json` gives).
    EventCap {
        limit: u64,
        at: Time,
    },
    Controller {
        controller: String,
        qp: u32,
        event: String,
        detail: String,
    },
    /// Events kept coming at one instant: something reschedules itself
    /// without time advancing.
    Stuck {
        at: Time,
        events: u64,
        last: String,
    },
    /// A QP was about to number more packets than its PSNs can.
    PsnSpace {
        qp: u32,
        at: Time,
    },
}

/// Events at one simulated instant beyond which the run is stuck. Far above
/// what a real start (every QP of a 1M-QP scenario at time 0) produces.
pub const STUCK_EVENTS: u64 = 20_000_000;

/// How many events ahead [`World::prefetch_ahead`] loads an arrival's packet
/// and port, and, nearer, its flow's path (which needs the packet's QP).
/// On (b), 4 and 2, 6 and 3, 8 and 4, and 3 and 1 ran alike (medians of 4
/// alternating runs within 2 %).
const PREFETCH_FAR: usize = 4;
const PREFETCH_NEAR: usize = 2;

/// Prefetch only when the ports and packet slots span more than half of a
/// core's L2 cache (the rest of the state shares it); below that they stay
/// cached and the hints only cost. With a 2 MB L2 that is 1 MiB: benchmark
/// (a), 96 ports and 5,751 slots (0.33 MiB), ran 5 % slower with
/// prefetching, (b), 960 ports and 23,871 slots (1.5 MiB), 6 % faster. With
/// a 512 KB L2 a partition of the 320-host ns-3 input (0.8 MiB) went
/// without under a fixed 1 MiB, and its events took about a fifth more CPU
/// than with the hints (docs/speed.md).
fn prefetch_above_bytes() -> usize {
    static ABOVE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *ABOVE.get_or_init(|| l2_cache_bytes().map_or(1 << 20, |b| b / 2))
}

/// The L2 cache of CPU 0, from Linux's sysfs (`None` elsewhere, or if
/// unreadable). Only where to prefetch depends on it, never a result.
fn l2_cache_bytes() -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    // Its `index*` directories, in no set order, beside other entries (`uevent`).
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
        let l2 = read("level")?.trim() == "2" && read("type")?.trim() != "Instruction";
        l2.then(|| read("size"))
            .flatten()
            .and_then(|t| cache_size_bytes(&t))
    })
}

/// sysfs's cache size (`512K`, `2048K`, `1M`) in bytes.
fn cache_size_bytes(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let n: usize = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        _ => return None,
    };
    n.checked_mul(scale).filter(|&b| b > 0)
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::EventCap { limit, at } => write!(
                f,
                "the run reached max_events = {limit} at simulated time {at} with events still due; raise max_events or shorten duration"
            ),
            RunError::Controller { controller, qp, event, detail } => {
                let a = if event.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" };
                write!(f, "controller `{controller}` on QP {qp} handling {a} {event} event {detail}")
            }
            RunError::Stuck { at, events, last } => write!(
                f,
                "{events} events at simulated time {at} without time advancing: something reschedules itself at the same instant (a controller timer set to the current time, say); the last event was {last}"
            ),
            RunError::PsnSpace { qp, at } => write!(
                f,
                "QP {qp} would number more than 2^31 packets at simulated time {at}: rdmalab's PSNs do not wrap (RoCE's 24-bit PSNs do; that is not modelled); spread the traffic over more QPs or shorten duration"
            ),
        }
    }
}

/// How the run stands after [`World::run_until`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// More to do.
    Running,
    /// Every flow completed (and no application keeps posting).
    AllFlowsDone,
    /// The stop time was reached.
    StopTime,
}

/// Counters of the whole run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Frames transmitted by switch ports (packet-hops through switches).
    pub switch_tx_packets: u64,
    pub nic_tx_packets: u64,
    /// Data payload bytes NICs put on the wire, retransmissions included.
    pub data_payload_sent: u64,
    /// Data payload bytes put on the wire for the first time (a parallel
    /// run knows no flow can end within one lookahead while some are unsent).
    pub data_payload_first_sent: u64,
    /// Data payload bytes that reached the destination NIC, duplicates included.
    pub data_payload_arrived: u64,
    /// Data payload bytes lost (buffer, link loss, link down).
    pub data_payload_dropped: u64,
    pub retransmitted_packets: u64,
    pub timeouts: u64,
    pub nacks_sent: u64,
    pub cnps_sent: u64,
    pub acks_sent: u64,
    pub ecn_marked: u64,
    pub pfc_pauses_sent: u64,
    pub pfc_resumes_sent: u64,
    pub peak_live_packets: u64,
    /// WQEs read by SRNIC's scheduler, the ones dropped unused included.
    pub wqes_fetched: u64,
    /// Selective repeat: data packets placed out of order (each a loss event).
    pub sr_out_of_order: u64,
    /// Control loops closed by ACK events: from the acknowledged data packet
    /// leaving its NIC to the controller's decision on its ACK reaching the
    /// data path (SwCC Table 1's "control loop delay").
    pub control_loop: LoopStats,
}

/// Count, sum and extremes of control-loop delays.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoopStats {
    pub count: u64,
    pub sum_ps: u128,
    pub min_ps: u64,
    pub max_ps: u64,
}

impl Stats {
    /// Add another partition's counters (a parallel run's fold); the peak
    /// of live packets is not a sum and is left to the caller.
    pub(crate) fn add(&mut self, o: &Stats) {
        self.switch_tx_packets += o.switch_tx_packets;
        self.nic_tx_packets += o.nic_tx_packets;
        self.data_payload_sent += o.data_payload_sent;
        self.data_payload_first_sent += o.data_payload_first_sent;
        self.data_payload_arrived += o.data_payload_arrived;
        self.data_payload_dropped += o.data_payload_dropped;
        self.retransmitted_packets += o.retransmitted_packets;
        self.timeouts += o.timeouts;
        self.nacks_sent += o.nacks_sent;
        self.cnps_sent += o.cnps_sent;
        self.acks_sent += o.acks_sent;
        self.ecn_marked += o.ecn_marked;
        self.pfc_pauses_sent += o.pfc_pauses_sent;
        self.pfc_resumes_sent += o.pfc_resumes_sent;
        self.wqes_fetched += o.wqes_fetched;
        self.sr_out_of_order += o.sr_out_of_order;
        self.control_loop.merge(&o.control_loop);
    }
}

impl LoopStats {
    /// Both sets of delays together.
    pub(crate) fn merge(&mut self, o: &LoopStats) {
        if o.count == 0 {
            return;
        }
        self.min_ps = if self.count == 0 {
            o.min_ps
        } else {
            self.min_ps.min(o.min_ps)
        };
        self.max_ps = self.max_ps.max(o.max_ps);
        self.count += o.count;
        self.sum_ps += o.sum_ps;
    }

    pub fn add(&mut self, d: crate::time::Duration) {
        let ps = d.ps();
        self.min_ps = if self.count == 0 {
            ps
        } else {
            self.min_ps.min(ps)
        };
        self.max_ps = self.max_ps.max(ps);
        self.count += 1;
        self.sum_ps += ps as u128;
    }

    pub fn mean_ps(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            (self.sum_ps / self.count as u128) as u64
        }
    }
}

pub struct World {
    pub run: RunConfig,
    pub nic_cfg: NicConfig,
    pub switch_cfg: SwitchConfig,
    pub cc_cfg: CcConfig,
    /// Per-NIC tables controllers share (SCR's DPA-global records).
    pub ctl_tables: crate::algo::SharedTables,
    /// `nic.cc_scope`: the CC states that several QPs share.
    pub cc_groups: crate::nic::cc_scope::CcGroups,
    /// `control.cc_header`: each QP's extensible CC header words, as its
    /// controller last wrote them (grown as QPs are created).
    pub cc_headers: Vec<[u32; crate::control::MAX_CC_HEADER_WORDS]>,
    /// The instant of the last event, and how many events it has had.
    instant: (Time, u64),
    /// The latest end of a frame whose TxDone a port skipped.
    pub(crate) skipped_tx_done_max: Time,
    /// Links' frame times under `tx_time: ns3`, remembered.
    pub(crate) ns3_frame_times: crate::time::Ns3FrameTimes,
    /// Tests only: queue every frame at a switch, even at an idle port, to
    /// compare with cutting through.
    #[cfg(test)]
    pub(crate) no_cut_through: bool,
    /// Tests only: schedule every NIC port's TxDone, to compare with skipping.
    #[cfg(test)]
    pub(crate) nic_always_tx_done: bool,
    /// Per flow, the flow that starts once its last byte is on the wire
    /// (`u32::MAX`: none; empty when no flow follows another).
    pub followers: Vec<u32>,
    /// The state of the workload's dependency graph (`None`: it has none).
    pub graph_run: Option<Box<crate::workload::graph::GraphRun>>,
    pub q: EventQueue<Event>,
    pub pkts: PacketPool,
    pub topo: Topology,
    pub ports: Vec<Port>,
    /// node id → its ports (global port ids).
    pub node_ports: Vec<Vec<u32>>,
    /// node id → index into `switches` or `nics`.
    pub node_index: Vec<u32>,
    pub switches: Vec<Switch>,
    pub nics: Vec<Nic>,
    pub qps: Vec<Qp>,
    pub routing: Routing,
    /// Per QP, the egress port each switch on its path chose (see
    /// [`crate::net::routing::PathCache`]); one entry per QP in `qps`.
    pub flow_routes: Vec<crate::net::routing::FlowRoutes>,
    /// [`prefetch_above_bytes`], read once: the event loop compares with it.
    prefetch_above: usize,
    pub workload: Workload,
    pub apps: Vec<AppState>,
    pub rec: Recorder,
    pub stats: Stats,
    pub error: Option<RunError>,
    /// Packets one QP may number ([`crate::workload::MAX_QP_PACKETS`]; a
    /// field so tests can reach it without sending 2^31 packets).
    pub max_qp_packets: u64,
    /// The control framework, unless control is immediate (the `asic` placement).
    pub ctl: Option<crate::control::framework::Framework>,
    /// Receive-side events exist at this placement.
    rx_events: bool,
    /// Flows not yet completed.
    pub flows_open: u64,
    /// (src, dst) pair → next UDP source port, as the ns-3 HPCC simulator assigns them.
    pub sport_next: std::collections::BTreeMap<(u32, u32), u16>,
    /// The largest base RTT between any two hosts, computed on first use.
    fabric_rtt: Option<Duration>,
    /// Queue-length monitor (ns-3 QLEN_MON): its window and per-port histograms.
    pub qlen_monitor: Option<crate::record::QlenMonitor>,
    /// Host schedulers (`host.scheduler`), and the policies they fired.
    pub host_scheds: Vec<crate::host::scheduler::HostScheduler>,
    pub policy_firings: Vec<crate::host::scheduler::Firing>,
    /// `records.pcap` as the scenario asked, and the capture once a file
    /// was given to it ([`World::start_pcap`]); `None`: no capture, and the
    /// transmit path pays one branch.
    pub pcap_cfg: Option<crate::record::pcap::PcapConfig>,
    pub capture: Option<Box<crate::record::pcap::Capture>>,
    /// In a parallel run, which partition this world is and what it owns
    /// (see [`crate::parallel`]); `None` in a serial run.
    pub(crate) part: Option<Box<crate::parallel::PartCtx>>,
}

impl World {
    pub fn new(
        topo: Topology,
        run: RunConfig,
        nic_cfg: NicConfig,
        switch_cfg: SwitchConfig,
        cc_cfg: CcConfig,
        workload: Workload,
    ) -> Result<World, String> {
        let n = topo.nodes.len();
        let mut ports = Vec::with_capacity(topo.links.len() * 2);
        let mut node_ports: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut adj: Adjacency = vec![Vec::new(); n];
        for (li, l) in topo.links.iter().enumerate() {
            let pa = ports.len() as u32;
            let pb = pa + 1;
            for (me, other, id) in [(l.a, l.b, pa), (l.b, l.a, pb)] {
                let local = node_ports[me as usize].len() as u32;
                let rng = RngStream::new(run.seed, &format!("port/{me}/{local}"));
                let mut p = Port::new(me, local, li as u32, l.rate, l.delay, rng);
                p.loss = l.loss;
                p.at_switch = topo.nodes[me as usize].kind == NodeKind::Switch;
                p.strict_priority = p.at_switch && switch_cfg.strict_priority;
                let ecn = if p.at_switch {
                    switch_cfg.local(me).ecn_for(l.rate)
                } else {
                    switch_cfg.ecn_for(l.rate)
                };
                if let Some(e) = ecn {
                    p.ecn = e;
                }
                ports.push(p);
                node_ports[me as usize].push(id);
                adj[me as usize].push((id, other));
            }
            ports[pa as usize].peer = pb;
            ports[pb as usize].peer = pa;
        }
        let is_host: Vec<bool> = topo
            .nodes
            .iter()
            .map(|x| x.kind == NodeKind::Host)
            .collect();
        let mut node_index = vec![u32::MAX; n];
        let mut switches = Vec::new();
        let mut nics = Vec::new();
        for (i, spec) in topo.nodes.iter().enumerate() {
            match spec.kind {
                NodeKind::Host => {
                    if node_ports[i].len() != 1 {
                        return Err(format!(
                            "host `{}` has {} links; rdmalab models exactly one NIC port per host",
                            spec.name,
                            node_ports[i].len()
                        ));
                    }
                    node_index[i] = nics.len() as u32;
                    let port = node_ports[i][0];
                    let mut nic = Nic::new(i as u32, port, ports[port as usize].rate());
                    nic.res = nic_cfg
                        .resources
                        .as_ref()
                        .map(|r| Box::new(crate::nic::resources::NicResources::new(r)));
                    nic.uar = nic_cfg.uar.as_ref().map(|u| {
                        Box::new(crate::host::UarPages::new(
                            u,
                            RngStream::new(run.seed, &format!("host/{i}/uar")),
                        ))
                    });
                    nics.push(nic);
                }
                NodeKind::Switch => {
                    node_index[i] = switches.len() as u32;
                    let port_links: Vec<_> = node_ports[i]
                        .iter()
                        .map(|&p| (ports[p as usize].rate(), ports[p as usize].delay.ps()))
                        .collect();
                    let local = switch_cfg.local(i as u32);
                    let mut bcfg = local.buffer;
                    if bcfg.pfc_alpha_reference_rate.is_none() {
                        // ns-3 HPCC scales α by port rate over the (first) NIC rate.
                        bcfg.pfc_alpha_reference_rate = topo
                            .hosts()
                            .next()
                            .map(|h| ports[node_ports[h as usize][0] as usize].rate());
                    }
                    let buffer = SharedBuffer::new(bcfg, &port_links);
                    if buffer.cfg.pfc_enabled && buffer.set_aside_bytes() >= buffer.cfg.size_bytes {
                        return Err(format!(
                            "switch.buffer: `{}B` leaves no shared pool at switch `{}`: its {} ports set aside {}B of PFC headroom and reserve; allowed: more than that, or smaller switch.pfc.headroom",
                            buffer.cfg.size_bytes,
                            spec.name,
                            port_links.len(),
                            buffer.set_aside_bytes()
                        ));
                    }
                    switches.push(Switch {
                        node: i as u32,
                        served_last: match switch_cfg.egress_sharing {
                            crate::net::switch::EgressSharing::InputPort => {
                                vec![[u32::MAX; crate::packet::NUM_CLASSES]; port_links.len()]
                            }
                            crate::net::switch::EgressSharing::Fifo => Vec::new(),
                        },
                        buffer,
                        ecn_enabled: local.ecn_enabled,
                        ecn_rng: RngStream::new(run.seed, &format!("switch/{i}/ecn")),
                    });
                }
            }
        }
        let routing = Routing::build(&adj, &is_host, run.seed, switch_cfg.ecmp);
        let mut q = EventQueue::new();
        let mut followers = Vec::new();
        for (i, f) in workload.flows.iter().enumerate() {
            match f.after {
                // A flow that waits for others' data starts when its graph node acts.
                None if !workload.graph.starts_free(i as u32) => {}
                None => q.schedule(Time::ZERO + f.start, Event::FlowStart { flow: i as u32 }),
                Some(a) => {
                    if followers.is_empty() {
                        followers = vec![u32::MAX; workload.flows.len()];
                    }
                    followers[a as usize] = i as u32;
                }
            }
        }
        for &(node, from) in &workload.graph.roots {
            let at = Time::ZERO + from + workload.graph.nodes[node as usize].gap;
            q.schedule(at, Event::GraphNode { node });
        }
        let mut apps = Vec::new();
        for (i, a) in workload.apps.iter().enumerate() {
            q.schedule(Time::ZERO + a.start, Event::AppStart { app: i as u32 });
            apps.push(AppState::default());
        }
        if let Some(iv) = run.sample_interval {
            q.schedule(Time::ZERO + iv, Event::Sample);
        }
        if let Some(iv) = nic_cfg.host_report_interval {
            q.schedule(Time::ZERO + iv, Event::HostReport);
        }
        for (li, l) in topo.links.iter().enumerate() {
            for &(down, up) in &l.down {
                q.schedule(
                    Time::ZERO + down,
                    Event::LinkState {
                        link: li as u32,
                        up: false,
                    },
                );
                q.schedule(
                    Time::ZERO + up,
                    Event::LinkState {
                        link: li as u32,
                        up: true,
                    },
                );
            }
        }
        let flows_open = workload.flows.len() as u64;
        let cc_scope = nic_cfg.cc_scope;
        let cc_header_bytes = nic_cfg.wire.cc_header;
        let int_enabled = switch_cfg.int_enabled;
        Ok(World {
            run,
            nic_cfg,
            switch_cfg,
            cc_cfg,
            ctl_tables: Default::default(),
            followers,
            graph_run: (!workload.graph.is_empty())
                .then(|| Box::new(crate::workload::graph::GraphRun::new(&workload.graph))),
            instant: (Time::NEVER, 0),
            skipped_tx_done_max: Time::ZERO,
            ns3_frame_times: Default::default(),
            #[cfg(test)]
            no_cut_through: false,
            #[cfg(test)]
            nic_always_tx_done: false,
            cc_headers: Vec::new(),
            cc_groups: crate::nic::cc_scope::CcGroups {
                scope: cc_scope,
                ..Default::default()
            },
            q,
            pkts: {
                let mut p = PacketPool::with_int(int_enabled);
                p.enable_cc_header(cc_header_bytes.div_ceil(4) as usize);
                p
            },
            topo,
            ports,
            node_ports,
            node_index,
            switches,
            nics,
            qps: Vec::new(),
            routing,
            flow_routes: Vec::new(),
            prefetch_above: prefetch_above_bytes(),
            workload,
            apps,
            rec: Recorder::default(),
            stats: Stats::default(),
            error: None,
            max_qp_packets: crate::workload::MAX_QP_PACKETS,
            ctl: None,
            rx_events: false,
            flows_open,
            sport_next: Default::default(),
            fabric_rtt: None,
            qlen_monitor: None,
            host_scheds: Vec::new(),
            policy_firings: Vec::new(),
            pcap_cfg: None,
            capture: None,
            part: None,
        })
    }

    #[inline]
    pub fn now(&self) -> Time {
        self.q.now()
    }

    #[inline]
    pub fn is_switch(&self, node: u32) -> bool {
        self.topo.nodes[node as usize].kind == NodeKind::Switch
    }

    fn done(&self) -> bool {
        self.flows_open == 0
            && self.workload.apps.is_empty()
            && !self.run.run_to_stop
            && self.graph_run.as_deref().is_none_or(|g| g.gates_open == 0)
    }

    /// Process events up to and including simulated time `until` (capped at the
    /// stop time). Returns how the run stands, or the error that ended it.
    pub fn run_until(&mut self, until: Time) -> Result<Progress, RunError> {
        let until = until.min(self.run.stop_at);
        if self.done() {
            return Ok(Progress::AllFlowsDone);
        }
        loop {
            if self.q.processed() >= self.run.max_events {
                match self.q.peek_time() {
                    Some(t) if t <= until => {
                        return Err(RunError::EventCap {
                            limit: self.run.max_events,
                            at: self.q.now(),
                        })
                    }
                    _ => break,
                }
            }
            let Some((t, _, ev)) = self.q.pop_packed_through(until) else {
                break;
            };
            if t == self.instant.0 {
                self.instant.1 += 1;
                if self.instant.1 > STUCK_EVENTS {
                    return Err(RunError::Stuck {
                        at: t,
                        events: self.instant.1,
                        last: format!("{:?}", ev.unpacked()),
                    });
                }
            } else {
                self.instant = (t, 1);
            }
            self.prefetch_ahead();
            if let Some(ev) = self.dispatch_hop(ev) {
                self.dispatch(ev);
            }
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if self.done() {
                return Ok(Progress::AllFlowsDone);
            }
        }
        self.settle_skipped_tx_done(until);
        if until >= self.run.stop_at {
            self.reach_stop_time();
            return Ok(Progress::StopTime);
        }
        Ok(Progress::Running)
    }

    /// A run that reached its stop time has simulated up to it, whenever its
    /// last event was: the clock (the run's `sim_time_ps`, the time goodputs
    /// divide by) is the stop time, with or without a sample there.
    pub(crate) fn reach_stop_time(&mut self) {
        self.q.advance_clock_to(self.run.stop_at);
    }

    /// Leave the clock where the TxDones ports skipped (up to `until`)
    /// would have left it had they run: the run's end time is an output.
    pub(crate) fn settle_skipped_tx_done(&mut self, until: Time) {
        if self.skipped_tx_done_max <= self.q.now() {
            return;
        }
        for p in &self.ports {
            if let Some(d) = p.skipped_tx_done() {
                if d.at <= until {
                    self.q.advance_clock(d.at, d.seq);
                }
            }
        }
    }

    /// Run to the end.
    pub fn run_to_end(&mut self) -> Result<Progress, RunError> {
        self.run_until(self.run.stop_at)
    }

    /// Start loading what the next few events will read first: an arrival's
    /// packet, port and INT records four events ahead, its flow's remembered path two
    /// events ahead (by then the packet, which names the QP, is cached).
    /// These loads missed the cache on almost every arrival (the packet was
    /// last touched a link delay ago); as hints they change no result.
    #[inline(always)]
    pub(crate) fn prefetch_ahead(&self) {
        use crate::engine::prefetch;
        let spans =
            self.ports.len() * std::mem::size_of::<crate::net::Port>() + self.pkts.slot_bytes();
        if spans <= self.prefetch_above {
            return;
        }
        // Without testing which event comes: an arrival's fields name its
        // port and packet, a TxDone's its port (and packet 0), any other
        // event's something harmless to fetch (a prefetch never faults).
        // The tests mispredicted as often as the events' kinds alternate.
        if let Some(w) = self.q.upcoming(PREFETCH_FAR) {
            let (port, pkt) = packing::fields(w);
            prefetch(self.pkts.slot_ptr(pkt));
            self.pkts.prefetch_int(pkt);
            prefetch(self.ports.as_ptr().wrapping_add(port as usize));
        }
        if let Some(w) = self.q.upcoming(PREFETCH_NEAR) {
            let (_, pkt) = packing::fields(w);
            let qp = self.pkts.peek_qp(pkt).unwrap_or(0);
            prefetch(self.flow_routes.as_ptr().wrapping_add(qp as usize));
        }
    }

    /// Act on a popped arrival or TxDone (almost every event) straight
    /// from its packed word: one branch on the word's kind, where unpacking
    /// and then dispatching took one each. Any other event comes back,
    /// unpacked, for the caller to dispatch: the serial loop through
    /// [`World::dispatch`], a partition of a parallel run its own way (it
    /// treats flow starts and samples apart).
    #[inline(always)]
    pub(crate) fn dispatch_hop(&mut self, popped: crate::engine::Popped<Event>) -> Option<Event> {
        let w = match popped {
            crate::engine::Popped::Packed(w) => w,
            crate::engine::Popped::Wide(ev) => return Some(ev),
        };
        match packing::tag(w) {
            packing::ARRIVE => {
                let (port, pkt) = packing::fields(w);
                self.on_arrive(port, pkt);
                self.note_live_packets();
                None
            }
            packing::TX_DONE => {
                let (port, _) = packing::fields(w);
                self.on_tx_done(port);
                self.note_live_packets();
                None
            }
            _ => Some(<Event as crate::engine::Packed>::unpack(w)),
        }
    }

    /// `port` finished serialising its frame: it may start the next.
    #[inline(always)]
    fn on_tx_done(&mut self, port: u32) {
        self.ports[port as usize].busy = false;
        self.try_transmit(port);
    }

    /// Keep the most packets live after any event (`summary.json`).
    #[inline(always)]
    fn note_live_packets(&mut self) {
        let live = self.pkts.live() as u64;
        if live > self.stats.peak_live_packets {
            self.stats.peak_live_packets = live;
        }
    }

    #[inline(always)]
    pub(crate) fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TxDone { port } => self.on_tx_done(port),
            Event::Arrive { port, pkt } => self.on_arrive(port, pkt),
            Event::NicWake { nic } => {
                let n = &mut self.nics[nic as usize];
                n.wake_at = Time::NEVER;
                let port = n.port;
                self.try_transmit(port);
            }
            Event::FlowStart { flow } => self.start_flow(flow),
            Event::AppStart { app } => self.start_app(app),
            Event::AppPost { app } => self.app_doorbell_done(app),
            Event::QpTimer { qp, slot, gen } => self.on_qp_timer(qp, slot, gen),
            Event::Sample => self.take_samples(),
            Event::LinkState { link, up } => self.set_link_state(link, up),
            Event::Reroute => self.reroute(),
            Event::CtrlTrigger { entry } => self.ctl_trigger(entry),
            Event::CtrlDone { thread } => self.ctl_thread_done(thread),
            Event::CtrlInstall { qp } => self.ctl_install(qp),
            Event::ThreadSend { slot } => self.ctl_thread_sent(slot),
            Event::QlenSample => self.qlen_sample(),
            Event::HostReport => self.host_report(),
            Event::HostSchedule => self.host_schedule(),
            Event::RxCoreDone { port, pkt } => self.nic_handle(port, pkt),
            Event::PolicyAct { host, policy } => self.policy_act(host, policy),
            Event::GraphNode { node } => self.graph_node_acts(node),
        }
        self.note_live_packets();
    }

    /// Start sending the next frame on `port` if it is idle and has one.
    #[inline]
    pub fn try_transmit(&mut self, port: u32) {
        if self.ports[port as usize].busy {
            return;
        }
        if let Some(d) = self.ports[port as usize].take_skipped_tx_done() {
            if self.q.is_ahead(d.at, d.seq) {
                // Still on the wire: the skipped TxDone is due after all.
                self.ports[port as usize].busy = true;
                self.q
                    .schedule_reserved(d.at, d.seq, Event::TxDone { port });
                return;
            }
        }
        // Busy while choosing: a controller run from inside the dequeue (a TX
        // event at the asic placement) may call back here, and must not start
        // a second frame on the same port.
        self.ports[port as usize].busy = true;
        let next = if self.ports[port as usize].at_switch {
            self.switch_dequeue(port)
        } else {
            self.nic_dequeue(port)
        };
        let Some(pkt) = next else {
            self.ports[port as usize].busy = false;
            return;
        };
        self.start_frame(port, pkt);
    }

    /// Put frame `pkt`, just chosen by busy port `port`, on the wire:
    /// schedule its arrival at the peer (or lose it) and the port's TxDone.
    #[inline]
    pub(crate) fn start_frame(&mut self, port: u32, pkt: PacketId) {
        let (node, at_switch) = (
            self.ports[port as usize].node,
            self.ports[port as usize].at_switch,
        );
        if self.capture.is_some() {
            // The frame starts on the wire here: a tap on this port sees it.
            self.capture_frame(port, pkt);
        }
        let now = self.now();
        let p = self.pkts.get(pkt);
        let frame = p.frame_bytes;
        let is_data = p.kind == PacketKind::Data;
        // PFC frames are never lost: real PAUSEs expire and are refreshed, which
        // is not modelled, so a lost RESUME would pause a port forever.
        let is_pfc = matches!(p.kind, PacketKind::Pfc { .. });
        let payload = p.payload as u64;
        let wire = self.nic_cfg.wire.on_wire(frame) as u64;
        let port_ref = &mut self.ports[port as usize];
        port_ref.busy = true;
        port_ref.tx_bytes += frame as u64;
        let ser = match self.run.tx_time {
            crate::time::TxTime::Ns3Truncated => self.ns3_frame_times.of(port_ref.rate(), wire),
            tx => port_ref.serialization(tx, wire),
        };
        let lost = !is_pfc && (!port_ref.up || port_ref.rng.chance(port_ref.loss));
        let (peer, delay, up, local) = (port_ref.peer, port_ref.delay, port_ref.up, port_ref.local);
        let elsewhere = port_ref.peer_elsewhere;
        // Only a waiting frame, or a NIC with more to send, needs the port
        // woken when this one ends; otherwise the TxDone would find nothing,
        // and whatever gives the port a frame wakes it (fewer events per hop).
        let seq = self.q.reserve_seq();
        let idle = !port_ref.has_queued()
            && (at_switch
                || self.nics[self.node_index[node as usize] as usize]
                    .has_nothing_to_send(&self.nic_cfg, now + ser));
        #[cfg(test)]
        let idle = idle && (at_switch || !self.nic_always_tx_done);
        if idle {
            port_ref.busy = false;
            port_ref.set_skipped_tx_done(crate::net::SkippedTxDone { at: now + ser, seq });
            if let Some(ctx) = self.part.as_mut() {
                ctx.skipped.push(port);
            }
            if now + ser > self.skipped_tx_done_max {
                self.skipped_tx_done_max = now + ser;
            }
        } else {
            self.q
                .schedule_reserved(now + ser, seq, Event::TxDone { port });
        }
        if at_switch {
            self.stats.switch_tx_packets += 1;
        } else {
            self.stats.nic_tx_packets += 1;
        }
        if lost {
            let reason = if up { "link_loss" } else { "link_down" };
            self.rec.count_drop(node, local, reason, frame as u64);
            if is_data {
                self.stats.data_payload_dropped += payload;
            }
            self.pkts.free(pkt);
        } else if elsewhere {
            self.post_elsewhere(now + ser + delay, peer, pkt);
        } else {
            self.q
                .schedule(now + ser + delay, Event::Arrive { port: peer, pkt });
        }
    }

    fn on_arrive(&mut self, port: u32, pkt: PacketId) {
        let node = self.ports[port as usize].node;
        if let PacketKind::Pfc { class, pause } = self.pkts.get(pkt).kind {
            self.pkts.free(pkt);
            let p = &mut self.ports[port as usize];
            p.set_paused(class, pause);
            let (local, peer) = (p.local, p.peer);
            let peer_node = self.ports[peer as usize].node;
            self.rec
                .pfc(self.q.now(), node, local, peer_node, class, pause);
            if !pause {
                self.try_transmit(port);
            }
            return;
        }
        if self.ports[port as usize].at_switch {
            self.switch_receive(port, pkt);
        } else {
            self.nic_receive(port, pkt);
        }
    }

    #[cold]
    #[inline(never)]
    fn set_link_state(&mut self, link: u32, up: bool) {
        let mut fabric = true;
        for p in self.ports.iter_mut().filter(|p| p.link == link) {
            p.up = up;
            fabric &= p.at_switch;
        }
        let now = self.now();
        self.rec.link_events.push(crate::record::LinkEvent {
            time: now,
            link,
            event: if up { "up" } else { "down" },
        });
        // A host has one link: there is no way around it, so only links
        // between switches make the tables change.
        if let (true, Some(after)) = (fabric, self.switch_cfg.reroute_after) {
            self.q.schedule(now + after, Event::Reroute);
        }
    }

    /// Recompute every switch's ECMP table over the links up now (host links
    /// always count: a host has no other) and forget the flows' remembered
    /// paths, which may cross a link that went down.
    #[cold]
    fn reroute(&mut self) {
        let mut adj: Adjacency = vec![Vec::new(); self.topo.nodes.len()];
        for (id, p) in self.ports.iter().enumerate() {
            let peer = &self.ports[p.peer as usize];
            let host_link = !p.at_switch || !peer.at_switch;
            if p.up || host_link {
                adj[p.node as usize].push((id as u32, peer.node));
            }
        }
        let is_host: Vec<bool> = self
            .topo
            .nodes
            .iter()
            .map(|n| n.kind == crate::net::topology::NodeKind::Host)
            .collect();
        self.routing = Routing::build(&adj, &is_host, self.run.seed, self.switch_cfg.ecmp);
        for r in &mut self.flow_routes {
            r.forget_paths();
        }
        let now = self.now();
        self.rec.link_events.push(crate::record::LinkEvent {
            time: now,
            link: u32::MAX,
            event: "reroute",
        });
    }

    /// Run control loops at `placement` (call before the run starts). The
    /// immediate placement (`asic`) keeps the direct path.
    pub fn set_placement(
        &mut self,
        placement: crate::control::framework::Placement,
        record_delays: bool,
    ) {
        self.rx_events = placement.rx_events;
        self.ctl = if placement.is_immediate() {
            None
        } else {
            Some(crate::control::framework::Framework::new(
                placement,
                record_delays,
            ))
        };
    }

    /// The largest base RTT between any two hosts (ns-3's maxRtt, GLOBAL_T 1).
    pub fn fabric_max_rtt(&mut self) -> Duration {
        if let Some(t) = self.fabric_rtt {
            return t;
        }
        let hosts: Vec<u32> = self.topo.hosts().collect();
        let mut max = Duration::ZERO;
        for &a in &hosts {
            for &b in &hosts {
                if a != b {
                    let line = self.ports[self.node_ports[a as usize][0] as usize].rate();
                    max = max.max(
                        self.path_facts(a, b, crate::net::routing::L4Ports::rocev2(10000), line)
                            .base_rtt,
                    );
                }
            }
        }
        self.fabric_rtt = Some(max);
        max
    }

    /// Refuse a controller that subscribes to signals the placement lacks
    /// (receive-side events exist only at `swcc` and `host-cpu`, or where
    /// `control.rx_events` says so).
    pub fn check_signals(&self) -> Result<(), String> {
        let rx = self.rx_events;
        let probe = self.cc_cfg.make();
        if probe.subscriptions().has(crate::control::EventMask::RX) && !rx {
            return Err(format!(
                "cc: controller `{}` subscribes to RX events, which placement `{}` does not expose; allowed: placement swcc or host-cpu, or control.rx_events: true",
                probe.name(),
                self.placement_name()
            ));
        }
        Ok(())
    }

    pub fn placement_name(&self) -> &str {
        self.ctl
            .as_ref()
            .map_or("asic", |f| f.placement.name.as_str())
    }

    /// Data payload bytes currently queued in ports, travelling on links or
    /// waiting for a receive core, counted by walking the queues and pending
    /// events (not from counters).
    pub fn data_payload_in_network(&self) -> u64 {
        let mut total = 0u64;
        for p in &self.ports {
            for q in p.queues() {
                for id in q.iter(&self.pkts) {
                    let pk = self.pkts.get(id);
                    if pk.kind == PacketKind::Data {
                        total += pk.payload as u64;
                    }
                }
            }
        }
        // On links, and with a NIC's receive cores (`control.on_path.rx_data`).
        for ev in self.q.iter_pending() {
            if let Event::Arrive { pkt, .. } | Event::RxCoreDone { pkt, .. } = ev {
                let pk = self.pkts.get(pkt);
                if pk.kind == PacketKind::Data {
                    total += pk.payload as u64;
                }
            }
        }
        total
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{Event, World};
    use crate::engine::Packed;
    use crate::time::Time;

    /// Every event that packs comes back from its word as it was, with
    /// each field at its widest; those that cannot fit say so.
    #[test]
    fn events_come_back_from_their_packed_words_unchanged() {
        const A: u32 = (1 << 27) - 1;
        const B: u32 = u32::MAX;
        let fits = [
            Event::TxDone { port: A },
            Event::Arrive { port: A, pkt: B },
            Event::Arrive { port: 1, pkt: 0 },
            Event::NicWake { nic: B },
            Event::FlowStart { flow: B },
            Event::AppStart { app: B },
            Event::AppPost { app: B },
            Event::Sample,
            Event::LinkState { link: B, up: true },
            Event::LinkState { link: 0, up: false },
            Event::Reroute,
            Event::CtrlTrigger { entry: B },
            Event::CtrlDone { thread: B },
            Event::CtrlInstall { qp: B },
            Event::ThreadSend { slot: B },
            Event::QlenSample,
            Event::HostReport,
            Event::HostSchedule,
            Event::RxCoreDone { port: A, pkt: B },
            Event::PolicyAct { host: B, policy: A },
            Event::GraphNode { node: B },
        ];
        let mut words = std::collections::BTreeSet::new();
        for ev in fits {
            let w = ev.pack().unwrap_or_else(|| panic!("{ev:?} should pack"));
            assert!(
                words.insert(w),
                "{ev:?} packs to a word taken by another event"
            );
            assert_eq!(format!("{:?}", Event::unpack(w)), format!("{ev:?}"));
        }
        for ev in [
            Event::TxDone { port: A + 1 },
            Event::Arrive {
                port: A + 1,
                pkt: 0,
            },
            Event::RxCoreDone { port: B, pkt: 0 },
            Event::PolicyAct {
                host: 0,
                policy: A + 1,
            },
            Event::QpTimer {
                qp: 0,
                slot: 0,
                gen: 0,
            },
        ] {
            assert_eq!(ev.pack(), None, "{ev:?} cannot fit in a word");
        }
    }

    /// What a finished run shows of itself: its outputs (end time, flow
    /// records, per application bytes and latencies, PAUSEs and RESUMEs,
    /// counters), not the engine's event count. For tests that compare two
    /// ways of running the same scenario.
    #[derive(Debug, PartialEq)]
    pub(crate) struct Observed {
        pub end: Time,
        pub flows: Vec<String>,
        /// Per application: bytes completed, and each operation's latency (ps).
        pub apps: Vec<(u64, Vec<u64>)>,
        pub pfc: Vec<String>,
        pub counters: String,
    }

    impl Observed {
        pub(crate) fn of(w: &World) -> Observed {
            Observed {
                end: w.now(),
                flows: w.rec.flows.iter().map(|f| format!("{f:?}")).collect(),
                apps: w
                    .apps
                    .iter()
                    .map(|a| (a.completed_bytes, a.latencies_ps.clone()))
                    .collect(),
                pfc: w
                    .rec
                    .pfc_events
                    .iter()
                    .map(|e| format!("{:?}", (e.time, e.node, e.port, e.pause)))
                    .collect(),
                counters: format!("{:?}", w.stats),
            }
        }
    }

    /// Skipping the TxDones of NICs with nothing to send changes nothing but
    /// the event count: the run is the one in which every NIC's TxDone is
    /// scheduled.
    #[test]
    fn a_nic_with_nothing_to_send_skips_its_tx_done_and_changes_nothing_else() {
        let perftest = r#""cc": {"algorithm": "dcqcn"}, "switch": {"pfc": {"enabled": true}},
            "workload": {"perftest": [
                {"name": "a", "src": "h0", "dst": "h3", "verb": "write", "message_size": "64KiB", "queue_depth": 8},
                {"name": "b", "src": "h1", "dst": "h3", "verb": "read", "message_size": "16KiB", "queue_depth": 4},
                {"name": "c", "src": "h2", "dst": "h4", "verb": "write", "message_size": "1000B", "queue_depth": 1},
                {"name": "d", "src": "h4", "dst": "h0", "verb": "write", "message_size": "300B", "queue_depth": 1}]}"#;
        let flows = r#""cc": {"algorithm": "hpcc"}, "nic": {"qp_scheduler": "ns3-hpcc"},
            "switch": {"int": true, "pfc": {"enabled": true}},
            "workload": {"poisson": {"cdf": "fbhdp", "load": 0.5, "duration": "200us"}}"#;
        for body in [perftest, flows] {
            let json = format!(
                r#"{{"name": "skip", "seed": 5, "duration": "300us",
                "topology": {{"kind": "dumbbell", "left_hosts": 3, "right_hosts": 4,
                    "host_link": {{"rate": "100Gbps", "delay": "1us"}},
                    "bottleneck_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                {body}}}"#
            );
            let run = |always: bool| {
                let mut w = crate::scenario::Scenario::from_json_str(&json)
                    .unwrap()
                    .build()
                    .unwrap();
                w.nic_always_tx_done = always;
                w.run_to_end().unwrap();
                (w.q.processed(), Observed::of(&w))
            };
            let ((skipped, skip), (all, every)) = (run(false), run(true));
            assert!(skip.flows.len() + skip.apps.len() > 3, "{body}: {skip:?}");
            assert!(
                skipped < all,
                "{body}: {skipped} events skipping, {all} not"
            );
            assert_eq!(skip, every, "{body}");
        }
    }

    /// A NIC whose only QP waits for its TX core, or whose DMA engine is
    /// behind, still has a TxDone to run: the dequeue there would take the
    /// QP back, or schedule a wake-up.
    #[test]
    fn a_nic_waiting_for_its_tx_core_or_its_dma_engine_has_something_to_send() {
        use crate::nic::{Nic, NicConfig, PcieConfig};
        use crate::time::{Duration, Rate};
        let json = r#"{"name": "nic", "duration": "10us",
            "topology": {"kind": "dumbbell", "left_hosts": 1, "right_hosts": 1,
                "host_link": {"rate": "100Gbps", "delay": "1us"},
                "bottleneck_link": {"rate": "100Gbps", "delay": "1us"}},
            "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KiB"}]}}"#;
        let w = crate::scenario::Scenario::from_json_str(json)
            .unwrap()
            .build()
            .unwrap();
        let cfg = w.nic_cfg.clone();
        let at = Time(1_000_000);
        let nic = || Nic::new(0, 0, Rate::gbps(100));
        assert!(nic().has_nothing_to_send(&cfg, at));
        let mut parked = nic();
        parked.parked.push(std::cmp::Reverse((Time(500_000), 7)));
        assert!(!parked.has_nothing_to_send(&cfg, at));
        let pcie = PcieConfig {
            bandwidth: Rate::gbps(252),
            latency: Duration(900_000),
        };
        let with_pcie = NicConfig {
            pcie: Some(pcie),
            ..cfg
        };
        let mut behind = nic();
        behind.pcie_free_at = at + pcie.latency + Duration(1);
        assert!(!behind.has_nothing_to_send(&with_pcie, at));
        behind.pcie_free_at = at + pcie.latency;
        assert!(behind.has_nothing_to_send(&with_pcie, at));
    }
}

#[cfg(test)]
mod prefetch_tests {
    use super::cache_size_bytes;

    #[test]
    fn sysfs_cache_sizes_are_read_in_bytes() {
        assert_eq!(cache_size_bytes("512K\n"), Some(512 << 10));
        assert_eq!(cache_size_bytes("2048K"), Some(2 << 20));
        assert_eq!(cache_size_bytes("1M"), Some(1 << 20));
        assert_eq!(cache_size_bytes("65536"), Some(65536));
        for bad in ["", "K", "0K", "12G", "1.5M", "-1K", "99999999999999999999K"] {
            assert_eq!(cache_size_bytes(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_l2_cache_is_found_where_linux_lists_it() {
        // The directory holds `uevent` beside `index*`, in no set order.
        let listed = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index2/size");
        if listed.exists() {
            assert!(super::l2_cache_bytes().is_some_and(|b| b >= 64 << 10));
        }
    }
}
