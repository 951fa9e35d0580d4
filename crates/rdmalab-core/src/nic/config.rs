//! The `nic` section of a scenario: every key the NIC model reads, declared
//! once ([`KEYS`]: unit, default, allowed values, rules, meaning and source),
//! and the reading of that section into a [`NicConfig`], with the rules
//! between its own keys. Rules that span sections (a window with a
//! rate-only controller, `cc_scope` with a placement) are the scenario's.

use super::cc_scope::CcScope;
use super::resources::ResourceConfig;
use super::{
    BaseRtt, CnpMode, LossRecovery, OnPathCores, PcieConfig, QpScheduler, RateChange, TriggerMask,
    WindowConfig,
};
use crate::config::{units, Allowed, Key, Obj, Reader, Rule};
use crate::packet::WireFormat;
use crate::time::Duration;
use serde_json::{Map, Value};

/// How every NIC of a run is set up (`nic`, and what `host` and `control`
/// add to it).
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
    /// long, go back to the oldest unacknowledged PSN. [`Rto::Off`]: no timeout, as
    /// in the ns-3 HPCC simulator (a lost tail packet then stalls its flow).
    pub rto: Rto,
    /// Traffic class of data packets.
    pub data_class: u8,
    /// Traffic class of ACKs and NACKs: the control class (strict priority,
    /// never paused), or the data class (as the ns-3 HPCC simulator's
    /// switches, whatever its ACK_HIGH_PRIO says).
    pub ack_class: u8,
    /// With ACKs in the data class: whether a PFC pause of that class holds
    /// them at the NIC. ns-3 HPCC's ACK_HIGH_PRIO 1 only turns this off.
    pub pfc_holds_acks: bool,
    /// How the notification point signals congestion.
    pub cnp: CnpMode,
    /// Per-QP window (bytes in flight) at the line rate.
    pub window: WindowConfig,
    /// Scale the window by dequeue rate / line rate (ns-3 VAR_WIN).
    pub window_scales_with_rate: bool,
    /// When a new dequeue rate takes effect (`nic.rate_change`).
    pub rate_change: RateChange,
    /// Base RTT that controllers and `window: bdp` use: each QP's own path, or
    /// the fabric's largest (ns-3 GLOBAL_T 1).
    pub base_rtt: BaseRtt,
    /// Which QPs share one CC state (`nic.cc_scope`, see `cc_scope`).
    pub cc_scope: CcScope,
    /// `nic.tx_arbitration: strict-priority`: the port serves the highest
    /// traffic class with a packet ready before any lower one (a NIC's
    /// per-class TX queues under strict priority); otherwise QPs take turns
    /// whatever their class.
    pub strict_priority: bool,
    /// A probe not answered within this time is reported lost (SCR Fig. 19: 100 µs).
    pub probe_timeout: Duration,
    /// The host PCIe model (`None`: host memory is free and instant).
    pub pcie: Option<PcieConfig>,
    /// The path from device memory (a GPU's HBM for GPU-Direct, an NVMe
    /// device's buffer) to the NIC, peer to peer; `None`: no device memory.
    pub device_pcie: Option<PcieConfig>,
    /// Period of the host-domain reports (HOST events); `None`: no reports.
    pub host_report_interval: Option<Duration>,
    /// How much a QP sends when its round-robin turn comes.
    pub qp_scheduler: QpScheduler,
    /// Depth of each QP's dequeue-rate limiter in bytes: a QP that got the
    /// port late (another QP's packet was on the wire) may catch up by this
    /// much, so it keeps its rate when several rate-limited QPs share a port.
    /// 0: a strict pacer, as the ns-3 HPCC simulator's `m_nextAvail`.
    pub rate_burst: u64,
    /// Time a QP's transport spends on each new WQE (fetching and parsing
    /// it) after its previous WQE's last packet is out, before the WQE's
    /// first packet: it caps one QP's message rate, so small messages cannot
    /// fill the link (SCR §6.2). Other QPs' packets use the port meanwhile:
    /// the NIC's processing units work on different QPs in parallel (SCR
    /// Fig. 3). 0: free.
    pub wqe_overhead: Duration,
    /// The NIC's on-chip caches and processing units (`nic.resources`);
    /// `None`: unlimited on-chip memory, as the ns-3 HPCC simulator's NIC.
    pub resources: Option<ResourceConfig>,
    /// How lost packets are recovered (`nic.loss_recovery`).
    pub loss_recovery: LossRecovery,
    /// The host's UAR pages and doorbell costs (`host.uar`); `None`: posting is free.
    pub uar: Option<crate::host::UarConfig>,
    /// The host scheduler loop and its policies (`host.scheduler`).
    pub scheduler: Option<crate::host::policy::SchedulerConfig>,
    /// TX cores in the data path (`control.on_path`): every data packet
    /// waits for its QP's core to process it (SwCC, Soft-RoCE).
    pub on_path: Option<OnPathCores>,
    /// Which packets raise CC events (`control.trigger`); `None`: all.
    pub trigger: Option<TriggerMask>,
}

/// `nic.mtu`.
const MTU: Key = Key {
    name: "mtu",
    unit: "size",
    default: "1024B",
    allowed: Allowed::Size { min: 64, max: 9000 },
    rule: Rule::None,
    meaning: "Payload bytes per data packet (the RoCE path MTU; RoCE path MTUs are 256B to 4096B, larger values model jumbo frames). rdmalab choice: RoCE path MTU 1024 is the largest that fits a standard 1500-byte Ethernet MTU with the IP, UDP and InfiniBand headers. The ns-3 HPCC `run.py` uses 1000.",
};
const FRAMING: Key = Key {
    name: "framing",
    unit: "string",
    default: "rocev2",
    allowed: Allowed::OneOf(&["rocev2", "ns3-hpcc"]),
    rule: Rule::None,
    meaning: "Frame sizes. `rocev2` is real RoCEv2 over IPv4 Ethernet (IEEE 802.3, RFC 791, RFC 768, InfiniBand spec vol. 1 rel. 1.4 Annex A17, IEEE 802.1Qbb). A data packet carries 62 B of headers, plus 16 B RETH on the first packet of a WRITE and 20 B of preamble, SFD and inter-frame gap on the wire. ACK/NACK frames are 66 B, CNP and READ request frames 78 B, PFC frames 64 B. `ns3-hpcc` uses the ns-3 HPCC simulator's accounting: 48 B per data packet, 60 B ACK/NACK/CNP/READ request, 64 B PFC, no preamble or gap.",
};
const ACK_EVERY: Key = Key {
    name: "ack_every",
    unit: "integer (packets)",
    default: "1",
    allowed: Allowed::Int { min: 1, max: 1 << 20 },
    rule: Rule::None,
    meaning: "Send a cumulative ACK after this many in-order packets, and always at a message's end. ns-3 HPCC `run.py` sets `L2_ACK_INTERVAL 1`, an ACK for every packet.",
};
const CNP_INTERVAL: Key = Key {
    name: "cnp_interval",
    unit: "duration",
    default: "4us",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::None,
    meaning: "Minimum time between CNPs for one QP at the receiver (notification point). With 0, every marked packet triggers a CNP. NVIDIA `min_time_between_cnps` (published firmware defaults table).",
};
const NACK_REPEAT_INTERVAL: Key = Key {
    name: "nack_repeat_interval",
    unit: "duration",
    default: "500us",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::None,
    meaning: "The receiver repeats a NACK for the same expected PSN at most this often. ns-3 HPCC `rdma-hw.cc` NACK generation interval (500 µs, not changed by `run.py`).",
};
const RTO: Key = Key {
    name: "rto",
    unit: "duration, `off` or `{base_rtts: N}`",
    default: "1ms",
    allowed: Allowed::Custom("> 0, `off`, or `{base_rtts: N}` with N > 0"),
    rule: Rule::None,
    meaning: "Retransmission timeout: if data is outstanding and no ACK makes progress for this long, the sender goes back to the oldest unacknowledged PSN (selective repeat: resends every PSN not known received). rdmalab choice, close to the InfiniBand local ACK timeout 4.096 µs × 2^8 ≈ 1.05 ms. `{base_rtts: N}`: N times the QP's base RTT (as `nic.base_rtt` sets it); SRNIC's ns-3 simulator uses 10 for every QP (`rdma-queue-pair.cc`, github.com/HKUST-SING/srnic-simulation-public). The ns-3 HPCC simulator has no RTO: `off` reproduces that (a lost tail packet then stalls its flow until the run stops).",
};

/// When the retransmission timer fires (`nic.rto`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rto {
    /// No timer (ns-3 HPCC).
    Off,
    /// A fixed time without ACK progress.
    After(Duration),
    /// This many of the QP's base RTTs (SRNIC's simulator: 10).
    BaseRtts(f64),
}

impl Rto {
    /// The timeout of a QP whose base RTT is `base_rtt`; `None`: no timer.
    #[inline]
    pub fn for_base_rtt(self, base_rtt: Duration) -> Option<Duration> {
        match self {
            Rto::Off => None,
            Rto::After(d) => Some(d),
            Rto::BaseRtts(n) => Some(Duration(((base_rtt.ps() as f64 * n).round() as u64).max(1))),
        }
    }
}

const DATA_CLASS: Key = Key {
    name: "data_class",
    unit: "integer",
    default: "3",
    allowed: Allowed::Int { min: 1, max: 7 },
    rule: Rule::None,
    meaning: "Traffic class (priority) of data packets. Class 0 is the control class, which carries ACK/NACK/CNP/PFC with strict priority and is never paused. ns-3 HPCC `traffic_gen.py` writes flows with pg 3.",
};
const WINDOW: Key = Key {
    name: "window",
    unit: "size, `bdp` or `none`",
    default: "none",
    allowed: Allowed::Custom("≥ 1B, `bdp`, or `none`"),
    rule: Rule::None,
    meaning: "Per-QP limit on bytes in flight at line rate. `bdp`: the QP's base RTT × line rate (ns-3 HAS_WIN 1). `none`: the rate alone paces the QP. rdmalab choice: DCQCN is rate-based; ns-3 HPCC `run.py --cc dcqcn` sets `HAS_WIN 0`.",
};
const PROBE_TIMEOUT: Key = Key {
    name: "probe_timeout",
    unit: "duration",
    default: "100us",
    allowed: Allowed::Duration { min_ps: 1 },
    rule: Rule::None,
    meaning: "An out-of-band RTT probe not answered within this time is reported to the controller as lost (a failed path). SCR Fig. 19 uses 100 µs.",
};
const WINDOW_SCALES_WITH_RATE: Key = Key {
    name: "window_scales_with_rate",
    unit: "boolean",
    default: "false",
    allowed: Allowed::Bool,
    rule: Rule::None,
    meaning: "Scale the window by dequeue rate / line rate (ns-3 VAR_WIN).",
};
const RATE_CHANGE: Key = Key {
    name: "rate_change",
    unit: "string",
    default: "immediate",
    allowed: Allowed::OneOf(&["immediate", "next_packet"]),
    rule: Rule::None,
    meaning: "When a controller's new dequeue rate takes effect. `immediate`: the next departure is recomputed at the new rate from the last packet's start (ns-3 HPCC's `ChangeRate`, used by its HPCC). `next_packet`: the next departure was fixed at the old rate when the last packet left, and the new rate counts from there (ns-3 HPCC's DCQCN, TIMELY and DCTCP). rdmalab choice for the default: a hardware rate limiter applies a new rate at once.",
};
const BASE_RTT: Key = Key {
    name: "base_rtt",
    unit: "string or duration",
    default: "path",
    allowed: Allowed::Custom("`path`, `fabric_max`, or a duration > 0"),
    rule: Rule::None,
    meaning: "The base RTT controllers see and `window: bdp` uses: the QP's own idle path (one full packet and its ACK), the largest over all host pairs (as ns-3's GLOBAL_T 1), or one given value for every QP (`rdmalab hpcc convert` writes ns-3's own maxRtt).",
};
const ACK_CLASS: Key = Key {
    name: "ack_class",
    unit: "string",
    default: "control",
    allowed: Allowed::OneOf(&["control", "data"]),
    rule: Rule::None,
    meaning: "Class of ACKs and NACKs: the strict-priority control class, never paused, or the data class, where they queue and pause with data at switches and go first at the NIC (unless paused, see `pfc_holds_acks`). The ns-3 HPCC simulator's switches always use the data class, whatever its ACK_HIGH_PRIO says. rdmalab choice for the default: RoCEv2 NICs send ACKs in a high-priority class.",
};
const PFC_HOLDS_ACKS: Key = Key {
    name: "pfc_holds_acks",
    unit: "boolean",
    default: "true",
    allowed: Allowed::Bool,
    rule: Rule::OnlyWith { key: "ack_class", values: &["data"] },
    meaning: "Whether a PFC pause of the data class holds the NIC's ACKs. ns-3 HPCC's ACK_HIGH_PRIO 1 turns this off and nothing else.",
};
const CNP: Key = Key {
    name: "cnp",
    unit: "string",
    default: "packet",
    allowed: Allowed::OneOf(&["packet", "ack_flag"]),
    rule: Rule::None,
    meaning: "How the receiver signals ECN marks to DCQCN: a separate CNP packet at most once per `cnp_interval` (RoCEv2, NVIDIA), or a flag on the ACK of every CE-marked packet (the ns-3 HPCC simulator).",
};
const QP_SCHEDULER: Key = Key {
    name: "qp_scheduler",
    unit: "string",
    default: "packet",
    allowed: Allowed::OneOf(&["packet", "wqe", "ns3-hpcc", "srnic"]),
    rule: Rule::None,
    meaning: "Granularity of the NIC's round-robin QP scheduler. `packet`: one packet per turn (or the controller-set `share`), byte-fair whatever the message sizes, as the ns-3 HPCC simulator and htsim schedule; a QP that gets data to send joins the back of the rotation. `ns3-hpcc`: one packet per turn exactly as ns-3 HPCC's `RdmaEgressQueue` (QPs in creation order until finished, the scan goes on from the one that sent last, finished QPs are cut out without moving that index, no `share`); `rdmalab hpcc convert` sets it. `wqe`: a commodity RNIC, whose turn dequeues whole WQEs (up to `turn_quantum` bytes, always at least one, never split) and sends all their packets before the next QP: large messages take more of the link (SCR §5.1, Table 2; Justitia; Flor). The SCR case studies use `wqe`. `srnic`: SRNIC's cache-free SQ scheduler (NSDI'23 §4.3.1): a QP with work and window takes a turn that fetches up to `wqes_per_turn` WQEs and `min(turn_burst, window left)` bytes of their messages over the host PCIe (one round trip), and drops the WQEs whose messages did not fit (fetched again next turn; no WQE cache). A QP has one fetch outstanding, issued when the last is back, so its message rate is at most `wqes_per_turn` per PCIe round trip; QPs with fetched data share the port packet by packet. Needs `host.pcie`.",
};
const WQES_PER_TURN: Key = Key {
    name: "wqes_per_turn",
    unit: "integer",
    default: "8",
    allowed: Allowed::Int { min: 1, max: 4096 },
    rule: Rule::OnlyWith { key: "qp_scheduler", values: &["srnic"] },
    meaning: "SRNIC's n: WQEs fetched per turn (§4.3.1: 8, a single QP's ceiling of 8 messages per PCIe round trip).",
};
const TURN_BURST: Key = Key {
    name: "turn_burst",
    unit: "size",
    default: "16KiB",
    allowed: Allowed::Custom("≥ one MTU"),
    rule: Rule::OnlyWith { key: "qp_scheduler", values: &["srnic"] },
    meaning: "SRNIC's burst_size: message bytes fetched per turn (§4.3.1: the PCIe bandwidth-delay product, 16 KB).",
};
const TURN_QUANTUM: Key = Key {
    name: "turn_quantum",
    unit: "size",
    default: "32KiB",
    allowed: Allowed::Size { min: 1, max: units::MAX_SIZE_BYTES },
    rule: Rule::OnlyWith { key: "qp_scheduler", values: &["wqe"] },
    meaning: "Bytes of WQEs one turn may take (a larger message is still taken whole). rdmalab's calibration to SCR Table 2: a 4 KiB tenant beside a 64 KiB one gets a third of the link (SCR: 33.25 of 90.9 Gb/s); vendors do not publish the real quantum.",
};
const WQE_OVERHEAD: Key = Key {
    name: "wqe_overhead",
    unit: "duration",
    default: "0s",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::None,
    meaning: "Time a QP's transport spends on each new WQE (fetching and parsing it), starting when its previous WQE's last packet is out (or when the WQE is posted), before the WQE's first packet: it caps one QP's message rate, so small messages cannot fill the link alone. Other QPs' packets use the port meanwhile (the NIC's processing units work on different QPs in parallel, SCR §3 Fig. 3); with `qp_scheduler: wqe` the QP keeps its turn while it waits. The SCR case studies use 17 ns, rdmalab's calibration to SCR Table 2 (a 4 KB tenant alone: 88.3 Gb/s).",
};
const PACED_TURN: Key = Key {
    name: "paced_turn",
    unit: "string",
    default: "keep",
    allowed: Allowed::OneOf(&["keep", "forfeit"]),
    rule: Rule::OnlyWith { key: "qp_scheduler", values: &["wqe"] },
    meaning: "What a QP does when its dequeue-rate limiter holds it back in the middle of its WQE turn. `keep`: the turn stays its: other QPs send single packets in its gaps and it goes first again as soon as its limiter lets it, so a limit above what the QP gets anyway changes nothing (ConnectX packet pacing delays a paced queue's next packet after its burst; it does not take its work away: NVIDIA 5T manual, \"Packet Pacing\"). `forfeit`: it goes to the back of the rotation (rdmalab's model until 2026-11): any rate below line rate then turns WQE turns into packet round robin (4 KiB beside 1 MiB with 98 Gb/s limits: Jain 0.94 instead of the default's 0.53).",
};
const RATE_BURST: Key = Key {
    name: "rate_burst",
    unit: "size",
    default: "0B",
    allowed: Allowed::Size { min: 0, max: units::MAX_SIZE_BYTES },
    rule: Rule::None,
    meaning: "The depth of each QP's dequeue-rate limiter, a token bucket (GCRA): the next packet may leave one packet gap after max(now − burst time, when the previous one was due), so a QP kept waiting (another QP's packet was on the wire, or it was idle) sends up to this many bytes early and never more than rate × time + burst. `0B`: a strict pacer, as the ns-3 HPCC simulator (`m_nextAvail`). Several rate-limited QPs sharing a port reach their rates only with some depth; the SCR case studies use 1 KiB (about one packet; see docs/case-studies.md for what 4 KiB does). rdmalab choice.",
};
const TX_ARBITRATION: Key = Key {
    name: "tx_arbitration",
    unit: "string",
    default: "round-robin",
    allowed: Allowed::OneOf(&["round-robin", "strict-priority"]),
    rule: Rule::Text("not `strict-priority` with `qp_scheduler: ns3-hpcc`"),
    meaning: "How the NIC's port chooses between QPs of different traffic classes. `round-robin`: QPs take turns whatever their class (the ns-3 HPCC NIC). `strict-priority`: only QPs of the highest class with a packet ready now (data posted, class not paused, window open, dequeue rate allowing) take turns; a lower class sends when no higher one can (a NIC's per-class TX queues under strict priority, as RNICs map traffic classes to ETS/strict TCs). Costs a scan of the NIC's active QPs per packet.",
};
const CC_SCOPE: Key = Key {
    name: "cc_scope",
    unit: "string",
    default: "qp",
    allowed: Allowed::OneOf(CcScope::NAMES),
    rule: Rule::Text("other than `qp` only with `control.placement: asic`; `tenant` needs every controlled QP to have a tenant"),
    meaning: "Which QPs share one congestion-control state (Snyder et al., \"RDMA CC: It's Only for the Compliant\"). `qp`: one per QP, each starting at line rate (the IB specification). `destination`: one per (sending NIC, destination address); every QP to it sends at the shared rate, not split (ConnectX-5 as measured in their §IV-A; `perftest[].addresses` escapes it). `pair`: one per (sending NIC, destination host), the rate and window split between its QPs (their per-src/dst CC, §V). `tenant`: one per (tenant, sending NIC) whatever the destination, split (Seawall's per-source CC at tenant granularity). A shared state is a virtual flow: its controller sees the group's bytes sent and acknowledged, its rate and its window; a QP that joins starts at the group's current rate, not at line rate. With `cc.algorithm: none` a scope other than `qp` has no rate to share and does nothing (but for `pair` and `tenant` with a `nic.window`, which the group then shares): a `ScenarioWarning` says so.",
};
const LOSS_RECOVERY: Key = Key {
    name: "loss_recovery",
    unit: "string",
    default: "go-back-n",
    allowed: Allowed::OneOf(&["go-back-n", "selective-repeat"]),
    rule: Rule::Text("not `selective-repeat` with READ or `qp_scheduler: ns3-hpcc`"),
    meaning: "How lost packets are recovered. `go-back-n`: the receiver drops out-of-order packets and NACKs the expected PSN (rate-limited by `nack_repeat_interval`), the sender resends from there (RoCEv2, the IB spec, ns-3 HPCC). `selective-repeat`: SRNIC (NSDI'23 §4.4) and IRN: out-of-order SEND/WRITE packets are placed, their header extensions (+8 B per SEND packet: SSN and PSN offset; +20 B per WRITE packet: the remote address) counted on the wire; each is answered with a NACK carrying the expected PSN and the PSN received; the sender resends the holes below a SACKed PSN, each again when the SACK of a packet first sent after its resend shows it still missing, and after `rto` every PSN not known received. A NACK names one received PSN, so a lost NACK costs one resend of a packet that did arrive ([srnic.md](srnic.md#fig-11-goodput-vs-random-loss) measures it). SRNIC's [psn_left, psn_right] range handles a race between its hardware and software halves, which this model does not split, so it is not modelled. With `nic.resources`, each loss event's 16 B of metadata is read over PCIe (bitmap onloading, SRNIC §4.4.2).",
};
const RESOURCES: Key = Key {
    name: "resources",
    unit: "string or mapping",
    default: "off",
    allowed: Allowed::Custom("`off`, `cx6`, `srnic`, or `{preset: cx6\\|srnic, ...overrides}`"),
    rule: Rule::None,
    meaning: "The NIC's on-chip memory (SRNIC §2.2, §3): QP contexts, MTT entries and WQEs live in set-associative LRU caches; a miss is fetched over `host.pcie` (TLP overhead counted) and holds the QP, and one of `units` processing units, until it is back. `off`: unlimited on-chip memory (the ns-3 HPCC simulator's NIC; every existing scenario). `cx6`: a ConnectX-6-like NIC (256 QPCs of 375 B, 2048 MTT entries, 1024 WQEs, 8-way, 30 units; the QPC size and the unit count are fitted to SRNIC Fig. 2, see docs/srnic.md). `srnic`: SRNIC's prototype (a 10,240-entry QPC table of 210 B, a 1.2 MB MTT cache, no WQE cache). Needs `host.pcie`; not with `qp_scheduler: ns3-hpcc`. Writes the `nic_resources` and `nic_memory` tables.",
};

/// Every key of the `nic` section, in the order the reference lists them.
pub const KEYS: &[Key] = &[
    MTU,
    FRAMING,
    ACK_EVERY,
    CNP_INTERVAL,
    NACK_REPEAT_INTERVAL,
    RTO,
    DATA_CLASS,
    WINDOW,
    PROBE_TIMEOUT,
    WINDOW_SCALES_WITH_RATE,
    RATE_CHANGE,
    BASE_RTT,
    ACK_CLASS,
    PFC_HOLDS_ACKS,
    CNP,
    QP_SCHEDULER,
    WQES_PER_TURN,
    TURN_BURST,
    TURN_QUANTUM,
    WQE_OVERHEAD,
    PACED_TURN,
    RATE_BURST,
    TX_ARBITRATION,
    CC_SCOPE,
    LOSS_RECOVERY,
    RESOURCES,
];

/// The names `nic` accepts, for the unknown-key message.
const NAMES: [&str; KEYS.len()] = {
    let mut names = [""; KEYS.len()];
    let mut i = 0;
    while i < KEYS.len() {
        names[i] = KEYS[i].name;
        i += 1;
    }
    names
};

impl NicConfig {
    /// Read the `nic` section of scenario `o` (absent: every default).
    pub(crate) fn read(r: &mut Reader, o: &Obj) -> Option<NicConfig> {
        let empty = Map::new();
        let n = match o.get("nic") {
            Some(v) => r.obj(v, "nic", &NAMES)?,
            None => Obj {
                path: "nic".into(),
                map: &empty,
            },
        };
        r.check_rules(&n, KEYS);
        // An MTU out of range is reported and not used: the checks after it
        // divide by it (a `0B` MTU panicked in the PSN-space check).
        let mtu = r.key_size(&n, &MTU);
        let framing = r.key_choice(&n, &FRAMING);
        let ack_every = r.key_int(&n, &ACK_EVERY);
        let cnp_interval = r.key_duration(&n, &CNP_INTERVAL);
        let nack = r.key_duration(&n, &NACK_REPEAT_INTERVAL);
        let rto = match n.get(RTO.name) {
            Some(Value::String(s)) if s == "off" => Some(Rto::Off),
            // YAML 1.1 reads a bare `off` as false.
            Some(Value::Bool(false)) => Some(Rto::Off),
            Some(v @ Value::Object(_)) => r
                .obj(v, "nic.rto", &["base_rtts"])
                .and_then(|m| r.float(&m, "base_rtts", None, 0.0, 1e6, true))
                .map(Rto::BaseRtts),
            _ => r
                .positive_duration(&n, RTO.name, Some(RTO.default_duration()))
                .map(Rto::After),
        };
        let class = r.key_int(&n, &DATA_CLASS);
        let ack_class = match r.key_choice(&n, &ACK_CLASS) {
            Some(c) if c == "data" => class.map(|c| c as u8),
            Some(_) => Some(crate::net::CONTROL_CLASS),
            None => None,
        };
        let pfc_holds_acks = r.key_bool(&n, &PFC_HOLDS_ACKS);
        let cnp = r.key_choice(&n, &CNP).map(|c| {
            if c == "ack_flag" {
                CnpMode::AckFlag
            } else {
                CnpMode::Packet
            }
        });
        let scales = r.key_bool(&n, &WINDOW_SCALES_WITH_RATE);
        let rate_change = r.key_choice(&n, &RATE_CHANGE).map(|c| {
            if c == "next_packet" {
                RateChange::NextPacket
            } else {
                RateChange::Immediate
            }
        });
        let base_rtt = match n.get(BASE_RTT.name) {
            Some(Value::String(s)) if s == "path" => Some(BaseRtt::Path),
            Some(Value::String(s)) if s == "fabric_max" => Some(BaseRtt::FabricMax),
            None => Some(BaseRtt::Path),
            _ => r
                .unit_value(
                    &n,
                    "base_rtt",
                    None,
                    units::parse_duration,
                    "`path`, `fabric_max` or a duration like 8us",
                )
                .and_then(|d| {
                    if d.ps() == 0 {
                        r.err(
                            "nic.base_rtt",
                            "`0s`",
                            "must be longer than 0, or `path` or `fabric_max`",
                        );
                        None
                    } else {
                        Some(BaseRtt::Fixed(d))
                    }
                }),
        };
        let probe_timeout = r.key_duration(&n, &PROBE_TIMEOUT);
        let tx_arbitration = r.key_choice(&n, &TX_ARBITRATION);
        let cc_scope = r.key_choice(&n, &CC_SCOPE).and_then(|c| CcScope::parse(&c));
        let sched = r.key_choice(&n, &QP_SCHEDULER);
        if let (Some("strict-priority"), Some("ns3-hpcc")) =
            (tx_arbitration.as_deref(), sched.as_deref())
        {
            r.err(
                "nic.tx_arbitration",
                "`strict-priority`",
                "not with `nic.qp_scheduler: ns3-hpcc`, which replays ns-3's round robin",
            );
        }
        let turn_wqes = r.key_int(&n, &WQES_PER_TURN);
        let turn_burst = r.bytes(&n, TURN_BURST.name, Some(TURN_BURST.default_size()));
        let quantum = r.key_size(&n, &TURN_QUANTUM);
        let paced_turn = r.key_choice(&n, &PACED_TURN);
        let rate_burst = r.key_size(&n, &RATE_BURST);
        let wqe_overhead = r.key_duration(&n, &WQE_OVERHEAD);
        let resources = ResourceConfig::read(r, &n);
        let loss_recovery = r.key_choice(&n, &LOSS_RECOVERY).map(|c| {
            if c == "selective-repeat" {
                LossRecovery::SelectiveRepeat
            } else {
                LossRecovery::GoBackN
            }
        });
        if let (Some(LossRecovery::SelectiveRepeat), Some("ns3-hpcc")) =
            (loss_recovery, sched.as_deref())
        {
            r.err(
                "nic.loss_recovery",
                "`selective-repeat`",
                "not with `nic.qp_scheduler: ns3-hpcc`, which replays ns-3's go-back-N NIC",
            );
        }
        let qp_scheduler = match (sched, quantum) {
            (Some(s), Some(q)) if s == "wqe" => Some(QpScheduler::Wqe {
                quantum: q,
                keep_paced_turn: paced_turn.as_deref() != Some("forfeit"),
            }),
            (Some(s), Some(_)) if s == "srnic" => match (turn_wqes, turn_burst) {
                (Some(w), Some(b)) => Some(QpScheduler::Srnic {
                    wqes: w as u32,
                    burst: b,
                }),
                _ => None,
            },
            (Some(s), Some(_)) if s == "ns3-hpcc" => Some(QpScheduler::Ns3Hpcc),
            (Some(_), Some(_)) => Some(QpScheduler::Packet),
            _ => None,
        };
        let window = match n.get(WINDOW.name) {
            Some(Value::String(s)) if s == "none" => Some(WindowConfig::None),
            Some(Value::String(s)) if s == "bdp" => Some(WindowConfig::Bdp),
            None => Some(WindowConfig::None),
            _ => match r.unit_value(
                &n,
                "window",
                None,
                units::parse_bytes,
                "64KB (or `none`, `bdp`)",
            ) {
                Some(0) => {
                    r.err(
                        "nic.window",
                        "`0B`",
                        "must be at least 1 byte, or `none` or `bdp`",
                    );
                    None
                }
                w => w.map(WindowConfig::Bytes),
            },
        };
        let mtu = mtu? as u32;
        if let (Some(QpScheduler::Srnic { burst, .. }), true) =
            (qp_scheduler, turn_burst.is_some_and(|b| b < mtu as u64))
        {
            r.err(
                "nic.turn_burst",
                format!("`{burst}B`"),
                format!("must be at least one MTU ({mtu}B): a turn sends whole packets"),
            );
        }
        if let (Some(QpScheduler::Srnic { .. }), Some(Some(res))) = (qp_scheduler, &resources) {
            if res.wqe.is_some() {
                r.err("nic.resources.wqe_cache", "(set)", "must be `none` with `nic.qp_scheduler: srnic`: its turns fetch WQEs and drop the unused (no WQE cache)");
            }
        }
        if let (Some(QpScheduler::Ns3Hpcc), Some(Some(_))) = (qp_scheduler, &resources) {
            r.err("nic.resources", "(set)", "not with `nic.qp_scheduler: ns3-hpcc`, which replays ns-3's NIC with unlimited on-chip memory");
        }
        let wire = match framing?.as_str() {
            "ns3-hpcc" => WireFormat::ns3_hpcc(mtu),
            _ => WireFormat::rocev2(mtu),
        };
        Some(NicConfig {
            wire,
            ack_every_packets: ack_every? as u32,
            cnp_interval: cnp_interval?,
            nack_repeat_interval: nack?,
            rto: rto?,
            data_class: class? as u8,
            ack_class: ack_class?,
            pfc_holds_acks,
            cnp: cnp?,
            window: window?,
            window_scales_with_rate: scales,
            rate_change: rate_change?,
            base_rtt: base_rtt?,
            cc_scope: cc_scope?,
            strict_priority: tx_arbitration? == "strict-priority",
            probe_timeout: probe_timeout?,
            pcie: None,
            device_pcie: None,
            host_report_interval: None,
            qp_scheduler: qp_scheduler?,
            rate_burst: rate_burst?,
            wqe_overhead: wqe_overhead?,
            resources: resources?,
            loss_recovery: loss_recovery?,
            uar: None,
            scheduler: None,
            on_path: None,
            trigger: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// A scenario whose `nic` section is `nic` (JSON members, no braces).
    fn nic_of(nic: &str) -> Result<NicConfig, String> {
        let json = format!(
            r#"{{"duration": "1ms", "host": {{"pcie": "gen4x16"}},
                "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "64KB"}}]}},
                "nic": {{{nic}}}}}"#
        );
        Scenario::from_json_str(&json)
            .map(|s| s.nic)
            .map_err(|e| e.to_string())
    }

    /// The keys a key's rule needs set for it to apply.
    fn context(k: &Key) -> String {
        match k.rule {
            Rule::OnlyWith { key, values } => format!(r#""{key}": "{}""#, values[0]),
            _ => String::new(),
        }
    }

    #[test]
    fn writing_a_declared_default_changes_nothing() {
        for k in KEYS {
            let ctx = &context(k);
            let sep = if ctx.is_empty() { "" } else { ", " };
            let left_out = nic_of(ctx).unwrap();
            // Booleans and integers as YAML gives them, the rest as strings.
            let value = match k.allowed {
                Allowed::Bool | Allowed::Int { .. } => k.default.to_string(),
                _ => format!(r#""{}""#, k.default),
            };
            let written =
                nic_of(&format!(r#"{ctx}{sep}"{}": {value}"#, k.name)).unwrap_or_else(|e| {
                    panic!(
                        "nic.{}: its default `{}` is refused: {e}",
                        k.name, k.default
                    )
                });
            assert_eq!(
                format!("{written:?}"),
                format!("{left_out:?}"),
                "nic.{}",
                k.name
            );
        }
    }

    #[test]
    fn every_key_is_declared_once_and_every_declared_key_is_read() {
        let mut names: Vec<_> = KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KEYS.len());
        let e = nic_of(r#""no_such_key": 1"#).unwrap_err();
        assert!(
            e.contains(&format!("allowed here: {}", NAMES.join(", "))),
            "{e}"
        );
    }

    /// Each key declared `only with` another is refused, naming the rule,
    /// wherever the other key (written or by its default) takes another
    /// value, and accepted where it takes one of its values. (Until the
    /// rule was checked from its declaration, `turn_quantum` and
    /// `paced_turn` were accepted with `qp_scheduler: srnic` and did nothing.)
    #[test]
    fn a_key_given_where_its_rule_says_it_means_nothing_is_refused() {
        let mut refused = 0;
        for k in KEYS {
            let Rule::OnlyWith { key, values } = k.rule else {
                continue;
            };
            let other = KEYS.iter().find(|d| d.name == key).unwrap();
            let Allowed::OneOf(words) = other.allowed else {
                panic!("{key} is not a choice")
            };
            let value = match k.allowed {
                Allowed::Bool | Allowed::Int { .. } => k.default.to_string(),
                _ => format!(r#""{}""#, k.default),
            };
            for w in words {
                let got = nic_of(&format!(r#""{key}": "{w}", "{}": {value}"#, k.name));
                if values.contains(w) {
                    assert!(got.is_ok(), "nic.{} with {key}: {w}: {got:?}", k.name);
                } else {
                    let e = got.expect_err(&format!("nic.{} with {key}: {w} was accepted", k.name));
                    let says = format!(
                        "nic.{}: `{}` — only applies with `nic.{key}: {}`",
                        k.name, k.default, values[0]
                    );
                    assert!(e.contains(&says), "{e}");
                    refused += 1;
                }
            }
        }
        assert_eq!(
            refused,
            1 + 3 + 3 + 3 + 3,
            "ack_class once; the four scheduler keys thrice each"
        );
    }

    #[test]
    fn a_value_outside_the_declaration_is_refused_naming_what_it_allows() {
        let e = nic_of(r#""mtu": "10000B""#).unwrap_err();
        assert!(
            e.contains("nic.mtu: `10000B` — allowed: 64B to 9000B"),
            "{e}"
        );
        let e = nic_of(r#""data_class": 9"#).unwrap_err();
        assert!(
            e.contains("nic.data_class: `9` — allowed: an integer from 1 to 7"),
            "{e}"
        );
        let e = nic_of(r#""qp_scheduler": "wqe", "turn_quantum": "0B""#).unwrap_err();
        assert!(
            e.contains("nic.turn_quantum: `0B` — allowed: ≥ 1B; only with `qp_scheduler: wqe`"),
            "{e}"
        );
    }
}
