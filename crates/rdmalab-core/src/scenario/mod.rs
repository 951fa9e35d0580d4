//! Scenarios: the typed configuration of a run, parsed and validated from a
//! JSON value (the Python front end turns YAML into it).
//!
//! Every problem is reported before the run starts, each naming the key (as a
//! dotted path), the value and what is allowed. Unknown keys are errors, never
//! ignored. `docs/scenario-reference.md` lists every key with its unit,
//! default, range and source.
//!
//! A model that declares its keys reads its own section (`nic/config.rs`,
//! listed in [`SECTIONS`]); this module reads the document as a whole and
//! the sections not yet moved beside their model.

pub mod ns3_flows;
pub mod yaml_flows;

/// Units are the document's, read by every model's section.
pub use crate::config::units;
use crate::config::{show, written, Obj, Reader};
pub use crate::config::{Quantity, ScenarioError};

use crate::algo::{algorithm, CcConfig, ALGORITHMS};
use crate::control::framework::{Coalesce, EventType, Placement};
use crate::control::params::{ParamKind, ParamSpec, ParamValues};
use crate::host::config::HostConfig;
use crate::net::switch::{SwitchConfig, SwitchLocal};
use crate::net::topology::{LinkParams, LinkSpec, NodeKind, Topology};
use crate::nic::qp::Verb;
use crate::nic::NicConfig;
use crate::packet::WireFormat;
use crate::rng::RngStream;
use crate::time::{Duration, Rate, Time};
use crate::workload::cdf::FlowSizeCdf;
use crate::workload::{poisson_flows, AppSpec, FlowSpec, QpOwner, Workload};
use crate::world::{RunConfig, World};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// A setting the scenario accepts but that, with the rest of it, does
/// nothing (`perftest[].cores` without `host.uar`, say). Accepted because a
/// sweep may toggle the setting it needs; the front end shows it as a
/// `ScenarioWarning` before the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioWarning {
    /// Dotted path of the key, e.g. `workload.perftest[0].cores`.
    pub key: String,
    /// Its value as written.
    pub value: String,
    /// Why it does nothing, and what it needs to take effect.
    pub needs: String,
    /// It does nothing only because the core runs no controller of its own
    /// (`cc.algorithm: none`): a Python controller, which the core sees as
    /// no CC, gives it effect, so the front end drops it then.
    pub without_cc: bool,
}

impl fmt::Display for ScenarioWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} — {}", self.key, self.value, self.needs)
    }
}

/// All problems found in a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioErrors(pub Vec<ScenarioError>);

impl fmt::Display for ScenarioErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        writeln!(
            f,
            "the scenario has {n} problem{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            writeln!(f, "  - {e}")?;
        }
        Ok(())
    }
}

/// The sections whose keys their model declares ([`crate::config::Key`]),
/// by section name: what `validate` checks them against and what the
/// reference docs are generated from.
pub const SECTIONS: &[(&str, &[crate::config::Key])] = &[
    ("switch", crate::net::config::KEYS),
    ("switch.pfc", crate::net::config::PFC_KEYS),
    ("switch.ecn", crate::net::config::ECN_KEYS),
    (
        "switch.ecn.thresholds[]",
        crate::net::config::THRESHOLD_KEYS,
    ),
    ("nic", crate::nic::config::KEYS),
    ("host", crate::host::config::KEYS),
    ("host.uar", crate::host::config::UAR_KEYS),
    ("records", crate::record::config::KEYS),
    ("workload.collective[]", crate::workload::collective::KEYS),
];

/// A validated scenario, ready to build a [`World`].
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub run: RunConfig,
    /// Where control loops run and what they cost.
    pub placement: Placement,
    /// Record every action's control-loop delay (`control_delays` table).
    pub record_control_delays: bool,
    /// ns-3-style queue-length monitor window (start, end), absolute times.
    pub qlen_monitor: Option<(Duration, Duration)>,
    /// Keep one `probes` row per probe answer or loss (`records.probes`).
    pub record_probes: bool,
    /// `records.pcap`: capture frames into `packets.pcap`.
    pub pcap: Option<crate::record::pcap::PcapConfig>,
    /// Keep run-wide counters per sample period (`records.counters`:
    /// the `counter_samples` table, for ECN marks and CNPs over time).
    pub record_counters: bool,
    pub topology: Topology,
    pub nic: NicConfig,
    pub switch: SwitchConfig,
    pub cc: CcConfig,
    pub workload: Workload,
    /// Settings accepted that do nothing here ([`ScenarioWarning`]).
    pub warnings: Vec<ScenarioWarning>,
}

impl Scenario {
    pub fn from_json_str(text: &str) -> Result<Scenario, ScenarioErrors> {
        Self::from_value(&Self::json(text)?)
    }

    /// `text` read as JSON, or the error that says it is not.
    fn json(text: &str) -> Result<Value, ScenarioErrors> {
        serde_json::from_str(text).map_err(|e| {
            ScenarioErrors(vec![ScenarioError {
                key: "(scenario)".into(),
                value: String::new(),
                allowed: format!("not valid JSON: {e}"),
            }])
        })
    }

    pub fn from_value(v: &Value) -> Result<Scenario, ScenarioErrors> {
        Self::parse(v, false).map(|(s, _)| s)
    }

    /// As [`Scenario::from_json_str`], and every quantity with a unit the
    /// scenario wrote (`10us`, `100Gbps`, `64KiB`) as the core read it: two
    /// spellings of one setting read the same here (a sweep refuses an axis
    /// whose values do).
    pub fn from_json_str_with_quantities(
        text: &str,
    ) -> Result<(Scenario, Vec<Quantity>), ScenarioErrors> {
        Self::parse(&Self::json(text)?, true)
    }

    fn parse(v: &Value, record: bool) -> Result<(Scenario, Vec<Quantity>), ScenarioErrors> {
        let mut p = Parser {
            r: Reader::new(record),
            nodes: None,
        };
        let s = p.scenario(v);
        let Reader { errs, quantities } = p.r;
        if errs.is_empty() {
            Ok((
                s.expect("no errors means a scenario"),
                quantities.unwrap_or_default(),
            ))
        } else {
            Err(ScenarioErrors(errs))
        }
    }

    pub fn build(&self) -> Result<World, String> {
        let mut w = World::new(
            self.topology.clone(),
            self.run.clone(),
            self.nic.clone(),
            self.switch.clone(),
            self.cc.clone(),
            self.workload.clone(),
        )?;
        w.set_placement(self.placement.clone(), self.record_control_delays);
        w.start_host_schedulers();
        if let Some((a, b)) = self.qlen_monitor {
            w.set_qlen_monitor(Time::ZERO + a, Time::ZERO + b);
        }
        w.rec.skip_probes = !self.record_probes;
        w.pcap_cfg = self.pcap.clone();
        w.rec.keep_counters = self.record_counters;
        w.check_signals()?;
        Ok(w)
    }
}

/// Sample instants a run may record (`duration / records.sample_interval`).
pub const MAX_SAMPLE_INSTANTS: u64 = 10_000_000;

/// Flows one `poisson` entry may expect to draw (each flow is a QP and a
/// record: tens of millions already take gigabytes).
pub const MAX_POISSON_FLOWS: u64 = 20_000_000;

/// Shows a JSON value the way the user wrote it.
/// Which links a `links[]` entry changes.
#[derive(Clone, Copy)]
enum LinkEnds {
    /// Every link between these two nodes.
    Nodes(u32, u32),
    /// Every link between a node of one tier and a node of the other.
    Tiers(&'static str, &'static str),
}

impl LinkEnds {
    fn matches(self, t: &Topology, a: u32, b: u32) -> bool {
        match self {
            LinkEnds::Nodes(x, y) => (a == x && b == y) || (a == y && b == x),
            LinkEnds::Tiers(x, y) => {
                let (ta, tb) = (t.tier(a), t.tier(b));
                (ta == x && tb == y) || (ta == y && tb == x)
            }
        }
    }
}

/// One `links[].down` interval as given, for the check that a link's
/// intervals do not overlap.
struct DownInterval {
    down: Duration,
    up: Duration,
    /// Its key, e.g. `links[0].down[1]`.
    key: String,
    /// The interval as written, e.g. `[20us, 40us]`.
    written: String,
}

/// The scenario document's reader: the shared [`Reader`] and what only the
/// document as a whole needs (the topology's node names, for `node_ref`).
struct Parser {
    r: Reader,
    /// Names and hosts of the topology being read, for `node_ref`.
    nodes: Option<std::rc::Rc<NodeIndex>>,
}

impl std::ops::Deref for Parser {
    type Target = Reader;
    fn deref(&self) -> &Reader {
        &self.r
    }
}

impl std::ops::DerefMut for Parser {
    fn deref_mut(&mut self) -> &mut Reader {
        &mut self.r
    }
}

/// A topology's node names and host ids, built once per topology: finding a
/// flow's ends by scanning every node made 100,000 flows on a 65,536-host
/// fabric take minutes.
struct NodeIndex {
    /// The node list it indexes (its address and length); rebuilt when that changes.
    of: (usize, usize),
    /// Each name's first node, as `Topology::find` finds it.
    by_name: std::collections::HashMap<String, u32>,
    hosts: Vec<u32>,
}

impl NodeIndex {
    fn of(t: &Topology) -> (usize, usize) {
        (t.nodes.as_ptr() as usize, t.nodes.len())
    }

    fn new(t: &Topology) -> Self {
        let mut by_name = std::collections::HashMap::with_capacity(t.nodes.len());
        for (i, n) in t.nodes.iter().enumerate() {
            by_name.entry(n.name.clone()).or_insert(i as u32);
        }
        NodeIndex {
            of: Self::of(t),
            by_name,
            hosts: t.hosts().collect(),
        }
    }
}

impl Parser {
    /// Refuse an access time `each` that, paid once per line for `lines`
    /// lines (an event whose lines all miss), passes the longest duration any
    /// key takes: the product would pass the end of u64 picoseconds, which a
    /// release build wraps to a small time (and a debug build panics on).
    /// `lines_from` says where the line count comes from. False if refused.
    fn per_line_time(
        &mut self,
        key: impl Into<String>,
        each: Duration,
        lines: u64,
        lines_from: &str,
    ) -> bool {
        let total = each.ps().checked_mul(lines);
        if total.is_some_and(|t| t <= units::MAX_DURATION_PS) {
            return true;
        }
        self.err(
            key,
            format!("`{each}`"),
            format!("× {lines} lines ({lines_from}) is more than 3600s (one hour) per event when every line misses; allowed: lines × this at most 3600s (fewer or larger lines, or a shorter time)"),
        );
        false
    }

    /// Refuse each level of `levels` (inside out: key, value and how it is
    /// shown) that is below the one inside it, on its own key: `below` says
    /// how ("is smaller than"), `why` why the order matters and what is allowed.
    fn outer_not_below<T: PartialOrd + Copy>(
        &mut self,
        m: &Obj,
        levels: &[(&str, Option<(T, String)>)],
        below: &str,
        why: &str,
    ) {
        for pair in levels.windows(2) {
            let ((inner, i), (outer, o)) = (&pair[0], &pair[1]);
            if let (Some((iv, is)), Some((ov, os))) = (i, o) {
                if ov < iv {
                    self.err(
                        m.key(outer),
                        format!("`{os}`"),
                        format!("{below} {inner} ({is}): {why}"),
                    );
                }
            }
        }
    }

    /// Core time of `cycles` at `hz` (the clock as written in `clock`),
    /// refused past the longest duration any key takes: a slow clock or a
    /// huge count would pass the end of u64 picoseconds, which a release
    /// build wraps to a small time.
    fn cycle_time(
        &mut self,
        key: impl Into<String>,
        cycles: u64,
        hz: f64,
        clock: &Value,
    ) -> Option<Duration> {
        let ps = (cycles as f64 * 1e12 / hz).round();
        if ps > units::MAX_DURATION_PS as f64 {
            let clock = match clock {
                Value::String(c) => c.clone(),
                other => other.to_string(),
            };
            self.err(
                key,
                format!("`{cycles}` cycles at `{clock}`"),
                "allowed: at most 3600s (one hour) of core time per event: fewer cycles or a faster clock",
            );
            return None;
        }
        Some(Duration(ps as u64))
    }

    // ------------------------------------------------------------- sections

    fn scenario(&mut self, v: &Value) -> Option<Scenario> {
        const TOP: &[&str] = &[
            "name",
            "description",
            "seed",
            "duration",
            "run_to_duration",
            "tx_time",
            "max_events",
            "topology",
            "links",
            "switch",
            "switches",
            "nic",
            "host",
            "cc",
            "control",
            "workload",
            "records",
        ];
        let o = self.obj(v, "", TOP)?;
        let name = self
            .string(&o, "name", Some("scenario"))
            .unwrap_or_default();
        let _ = self.string(&o, "description", Some(""));
        let seed = self.int(&o, "seed", Some(1), 0, u64::MAX).unwrap_or(1);
        let duration = self.positive_duration(&o, "duration", None);
        let max_events = self
            .int(&o, "max_events", Some(2_000_000_000), 1, u64::MAX)
            .unwrap_or(1);
        let run_to_stop = self.boolean(&o, "run_to_duration", false);
        let tx_time = self
            .choice(&o, "tx_time", &["exact", "ns3-truncated"], Some("exact"))
            .map(|t| match t.as_str() {
                "ns3-truncated" => crate::time::TxTime::Ns3Truncated,
                _ => crate::time::TxTime::Exact,
            });
        let records = crate::record::config::read_kept(&mut self.r, &o);
        let qlen_monitor = crate::record::config::read_qlen_monitor(&mut self.r, &o);

        let topology = match o.get("topology") {
            Some(t) => self.topology(t),
            None => {
                self.err("topology", "", "is required (kind: single_switch, dumbbell, leaf_spine, fat_tree or hpcc_file)");
                None
            }
        };
        let mut topology = topology;
        if let Some(t) = topology.as_mut() {
            self.links(&o, t);
        }
        let mut nic = NicConfig::read(&mut self.r, &o);
        if let (Some(n), Some(op)) = (nic.as_mut(), self.on_path(&o)) {
            n.on_path = op;
        }
        if let (Some(n), Some(t)) = (nic.as_mut(), self.trigger(&o)) {
            n.trigger = t;
        }
        if let (Some(n), Some(b)) = (nic.as_mut(), self.cc_header(&o)) {
            n.wire.cc_header = b;
        }
        let mut switch = SwitchConfig::read(&mut self.r, &o, topology.as_ref());
        if let (Some(sw), Some(t)) = (switch.as_mut(), topology.as_ref()) {
            self.switches(&o, t, sw);
        }
        let cc = self.cc(&o);
        let control = self.control(&o);
        if let (Some(n), Some((p, _))) = (&nic, &control) {
            let rx = n
                .trigger
                .is_some_and(|t| t.events.0 & crate::control::EventMask::RX != 0);
            if rx
                && !p.rx_events
                && o.get("control")
                    .and_then(|c| c.get("trigger"))
                    .and_then(|t| t.get("on"))
                    .is_some_and(|v| !v.is_null())
            {
                // A kind that never happens at this placement would pass nothing.
                self.err(
                    "control.trigger.on",
                    "`rx`",
                    "no RX events exist at this placement: use placement swcc or host-cpu, or control.rx_events: true",
                );
            }
        }
        let workload = match (&topology, duration) {
            (Some(t), Some(d)) => self.workload(&o, t, d, seed),
            _ => None,
        };
        if let (Some(t), Some(w)) = (&topology, &workload) {
            self.check_connected(t, w);
        }
        let pcap = match (&topology, &workload) {
            (Some(t), Some(w)) => self.pcap(&o, t, w, duration),
            _ => Some(None),
        };
        if let (Some(n), Some(w)) = (&nic, &workload) {
            self.check_psn_space(n, w);
            self.check_cc_scope(n.cc_scope, w, control.as_ref().map(|c| &c.0));
            let read = w.flows.iter().any(|f| f.verb == Verb::Read)
                || w.apps.iter().any(|a| a.verb == Verb::Read);
            if n.selective_repeat() && read {
                self.err(
                    "nic.loss_recovery",
                    "`selective-repeat`",
                    "works with WRITE and SEND only: the workload has READs, whose responses SRNIC would acknowledge with a protocol change rdmalab does not model; use go-back-n",
                );
            }
        }
        if let (Some(n), Some(host)) = (nic.as_mut(), HostConfig::read(&mut self.r, &o)) {
            if n.qp_scheduler == crate::nic::QpScheduler::Ns3Hpcc
                && (host.pcie.is_some() || host.device_pcie.is_some())
            {
                self.err("nic.qp_scheduler", "`ns3-hpcc`", "replays ns-3's NIC, which reads no host memory: not with host.pcie or host.device_pcie");
            }
            if host.pcie.is_none() {
                if n.resources.is_some() {
                    self.err("nic.resources", "(set)", "needs host.pcie: caches fetch their misses over the host's PCIe link (e.g. host: {pcie: gen4x16})");
                }
                if matches!(n.qp_scheduler, crate::nic::QpScheduler::Srnic { .. }) {
                    self.err("nic.qp_scheduler", "`srnic`", "needs host.pcie: its turns fetch WQEs over the host's PCIe link (e.g. host: {pcie: gen3x16, pcie_latency: 1100ns})");
                }
            }
            n.uar = host.uar;
            if let Some(w) = &workload {
                // Workload hosts are node indices of the topology.
                let host_name = |i: u32| {
                    topology
                        .as_ref()
                        .and_then(|t| t.nodes.get(i as usize))
                        .map_or_else(|| format!("node {i}"), |n| n.name.clone())
                };
                // The rates of the hosts' NIC ports, which bound what
                // port_utilization can read.
                let mut host_rates: Vec<Rate> = topology.as_ref().map_or_else(Vec::new, |t| {
                    t.links
                        .iter()
                        .filter(|l| {
                            [l.a, l.b].iter().any(|&x| {
                                t.nodes
                                    .get(x as usize)
                                    .is_some_and(|n| n.kind == NodeKind::Host)
                            })
                        })
                        .map(|l| l.rate)
                        .collect()
                });
                host_rates.sort_unstable_by_key(|r| r.bps());
                host_rates.dedup();
                let tx = tx_time.unwrap_or_default();
                n.scheduler = crate::host::config::read_scheduler(
                    &mut self.r,
                    &o,
                    w,
                    n,
                    &host_name,
                    &host_rates,
                    tx,
                );
            }
            n.pcie = host.pcie;
            n.device_pcie = host.device_pcie;
            n.host_report_interval = host.report;
            if let (None, Some(w)) = (host.device_pcie, &workload) {
                if let Some(a) = w.apps.iter().find(|a| a.device_memory) {
                    self.err(
                        "host.device_pcie",
                        "(not set)",
                        format!("is needed: application `{}` has `memory: device` (set host.device_pcie: gen4x16, or device_pcie_bandwidth)", a.name),
                    );
                }
            }
        }
        if let (Some(n), Some(sw), Some(c)) = (nic.as_mut(), &switch, &cc) {
            if sw.int_enabled {
                n.wire.int_header = crate::packet::wire::HPCC_INT_HEADER;
            } else if matches!(c, CcConfig::Timely(_))
                && n.wire == WireFormat::ns3_hpcc(n.wire.mtu_payload)
            {
                // ns-3 HPCC carries TIMELY's send timestamp in an 8-byte INT header.
                n.wire.int_header = crate::packet::wire::NS3_TIMELY_TS_HEADER;
            } else if matches!(c, CcConfig::Hpcc(_)) {
                self.err(
                    "cc.algorithm",
                    "`hpcc`",
                    "needs INT from the switches; set switch.int: true",
                );
            }
            let header_need = match c {
                CcConfig::Homa(_) => Some(("homa", "it carries each message's length")),
                CcConfig::Swift(p) if p.header_timestamps => Some((
                    "swift with params.header_timestamps",
                    "it carries each packet's send time",
                )),
                _ => None,
            };
            // A refused cc_header is left at 0 B: it was reported as written,
            // not again as a `0B` the user never gave.
            let header_refused = self.errs.iter().any(|e| e.key == "control.cc_header");
            if let Some((who, why)) =
                header_need.filter(|_| n.wire.cc_header < 8 && !header_refused)
            {
                self.err(
                    "control.cc_header",
                    format!("`{}B`", n.wire.cc_header),
                    format!("cc: {who} needs 8B or more: {why}"),
                );
            }
            if let CcConfig::Swift(p) = c {
                // Flow scaling is largest at fs_min_cwnd and 0 at fs_max_cwnd.
                if p.fs_min_cwnd >= p.fs_max_cwnd {
                    self.err(
                        "cc.params.fs_min_cwnd",
                        format!("`{}`", p.fs_min_cwnd),
                        format!("must be below cc.params.fs_max_cwnd ({})", p.fs_max_cwnd),
                    );
                }
            }
            if let CcConfig::Homa(h) = c {
                // Round robin between classes reorders a message's packets
                // when its class changes, and RoCE delivers in order.
                if h.priorities > 0 && !sw.strict_priority {
                    self.err(
                        "cc.params.priorities",
                        format!("`{}`", h.priorities),
                        "needs switch.scheduling: strict-priority (with round robin a message changing class is reordered); or 0",
                    );
                }
            }
        }
        if let (Some(d), Some((Some(iv), _, _))) = (duration, &records) {
            // Every sample writes a row per QP and switch port: bound how many there are.
            let samples = d.ps() / iv.ps().max(1);
            if samples > MAX_SAMPLE_INSTANTS {
                self.err(
                    "records.sample_interval",
                    format!("`{iv}`"),
                    format!("gives {samples} samples over the {d} run; allowed: at most {MAX_SAMPLE_INSTANTS} (a longer interval, or a shorter duration)"),
                );
            }
        }
        if !self.errs.is_empty() {
            return None;
        }
        let duration = duration?;
        let (placement, record_control_delays) = control?;
        let (sample_interval, record_probes, record_counters) = records?;
        let (nic, cc) = (nic?, cc?);
        let mut warnings = self.inert_settings(&o, &nic, &cc);
        if let (Some(t), Some(sw)) = (&topology, &switch) {
            warnings.extend(short_pfc_headroom(t, sw, &nic));
        }
        Some(Scenario {
            name,
            qlen_monitor: qlen_monitor?,
            record_probes,
            pcap: pcap?,
            record_counters,
            placement,
            record_control_delays,
            run: RunConfig {
                seed,
                stop_at: Time::ZERO + duration,
                max_events,
                sample_interval,
                run_to_stop,
                tx_time: tx_time?,
            },
            topology: topology?,
            nic,
            switch: switch?,
            cc,
            workload: workload?,
            warnings,
        })
    }

    /// Settings that are valid but do nothing with the rest of the scenario:
    /// each needs another key that a sweep may toggle, so they are warned
    /// of ([`ScenarioWarning`]), not refused.
    fn inert_settings(&mut self, o: &Obj, n: &NicConfig, cc: &CcConfig) -> Vec<ScenarioWarning> {
        use crate::nic::cc_scope::CcScope;
        let mut out = Vec::new();
        let empty = Map::new();
        let w = Obj {
            path: "workload".into(),
            map: match o.get("workload") {
                Some(Value::Object(m)) => m,
                _ => &empty,
            },
        };
        let scope = n.cc_scope;
        for (path, v) in self.list(&w, "perftest") {
            let more_than_one = |k: &str| v.get(k).and_then(Value::as_u64).filter(|&x| x > 1);
            if let (Some(c), None) = (more_than_one("cores"), &n.uar) {
                out.push(ScenarioWarning {
                    key: format!("{path}.cores"),
                    value: format!("`{c}`"),
                    needs: "has no effect without host.uar: application cores differ only in how their doorbells contend for the NIC's UAR pages; set host.uar to model them".into(),
                    without_cc: false,
                });
            }
            if let Some(a) = more_than_one("addresses").filter(|_| scope != CcScope::Destination) {
                out.push(ScenarioWarning {
                    key: format!("{path}.addresses"),
                    value: format!("`{a}`"),
                    needs: format!("has no effect unless nic.cc_scope is `destination` (here `{}`): only per-destination CC tells a host's addresses apart", scope.name()),
                    without_cc: false,
                });
            }
        }
        // ns-3 reads the links the topology file counts and no more.
        if let Some(Value::Object(t)) = o.get("topology") {
            if let (Some("hpcc_file"), Some(Value::String(text))) =
                (t.get("kind").and_then(Value::as_str), t.get("text"))
            {
                if let Some(past) = Topology::hpcc_file_links_past_count(text) {
                    let (first, l) = (past.first, past.counted);
                    let (which, use_) = match past.lines {
                        1 => ("a link line".to_string(), "it"),
                        k => (format!("the first of {k} link lines"), "them"),
                    };
                    out.push(ScenarioWarning {
                        key: "topology".into(),
                        value: format!("`{first}`"),
                        needs: format!("{which} after the {l} links the file's first line counts: not read, as ns-3 reads no further; raise the count to use {use_}"),
                        without_cc: false,
                    });
                }
            }
        }
        // A CC group shares a controller's rate (and, split, one window of
        // the group's bytes); with no controller the rate stays at line
        // rate, and only a split group's shared window is left to act.
        let window = !matches!(n.window, crate::nic::WindowConfig::None);
        if matches!(cc, CcConfig::None) && scope != CcScope::Qp && !(scope.splits() && window) {
            let takes = if scope.splits() {
                "a cc.algorithm other than none (or a nic.window, which the group then shares)"
            } else {
                "a cc.algorithm other than none"
            };
            out.push(ScenarioWarning {
                key: "nic.cc_scope".into(),
                value: format!("`{}`", scope.name()),
                needs: format!("has no effect with cc.algorithm none: the QPs it groups share a controller's rate, and no controller sets one; it takes effect with {takes}"),
                without_cc: true,
            });
        }
        out
    }

    /// `records.pcap`: `true` (every host's link), `false`, or a filter of
    /// capture points (hosts, ports, links), flows, a time window and a snap length.
    fn pcap(
        &mut self,
        o: &Obj,
        t: &Topology,
        w: &Workload,
        duration: Option<Duration>,
    ) -> Option<Option<crate::record::pcap::PcapConfig>> {
        use crate::record::pcap::PcapConfig;
        const KEY: &str = "records.pcap";
        let v = match o.get("records").and_then(|r| r.get("pcap")) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return Some(None),
            Some(Value::Bool(true)) => return Some(Some(PcapConfig::default())),
            Some(v) => v,
        };
        let m = self.obj(
            v,
            KEY,
            &[
                "hosts", "ports", "links", "flows", "start", "end", "snaplen",
            ],
        )?;
        let before = self.errs.len();
        let mut cfg = PcapConfig::default();
        let list = |p: &mut Parser, k: &str, what: &str| -> Vec<Value> {
            match m.get(k) {
                None => Vec::new(),
                Some(Value::Array(a)) => a.clone(),
                Some(other) => {
                    p.err(m.key(k), show(other), format!("must be a list of {what}"));
                    Vec::new()
                }
            }
        };
        for (i, h) in list(self, "hosts", "host names").iter().enumerate() {
            if let Some(id) = self.node_ref(t, format!("{KEY}.hosts[{i}]"), Some(h), true) {
                cfg.hosts.push(id);
            }
        }
        let ports_of = |node: u32| {
            t.links
                .iter()
                .filter(|l| l.a == node || l.b == node)
                .count()
        };
        for (i, pv) in list(self, "ports", "`node:port` strings")
            .iter()
            .enumerate()
        {
            let key = format!("{KEY}.ports[{i}]");
            let Some(s) = pv.as_str() else {
                self.err(key, show(pv), "must be a `node:port` string (a node's port index from 0), or a node name for all its ports, e.g. `s0:1`");
                continue;
            };
            let (name, port) = match s.rsplit_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (s, None),
            };
            let Some(node) = t.find(name) else {
                self.err(key, format!("`{s}`"), format!("no node `{name}`; allowed: `node:port` with a node of the topology, e.g. `{}:0`", t.nodes.first().map_or("", |n| n.name.as_str())));
                continue;
            };
            let n = ports_of(node);
            match port.map(|p| p.parse::<u32>()) {
                None => cfg.ports.push((node, None)),
                Some(Ok(p)) if (p as usize) < n => cfg.ports.push((node, Some(p))),
                _ => self.err(
                    key,
                    format!("`{s}`"),
                    format!("node `{name}` has ports 0 to {}; allowed: `{name}:0` to `{name}:{}`, or `{name}` for all", n.saturating_sub(1), n.saturating_sub(1)),
                ),
            }
        }
        for (i, lv) in list(self, "links", "[node, node] pairs").iter().enumerate() {
            let key = format!("{KEY}.links[{i}]");
            let ends = match lv.as_array() {
                Some(a) if a.len() == 2 => {
                    let x = self.node_ref(t, format!("{key}[0]"), a.first(), false);
                    let y = self.node_ref(t, format!("{key}[1]"), a.get(1), false);
                    x.zip(y)
                }
                _ => {
                    self.err(
                        key,
                        show(lv),
                        "must be the two nodes a link joins, e.g. [h0, s0]",
                    );
                    continue;
                }
            };
            let Some((a, b)) = ends else { continue };
            match t
                .links
                .iter()
                .position(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
            {
                Some(li) => cfg.links.push(li as u32),
                None => self.err(
                    key,
                    format!(
                        "[{}, {}]",
                        t.nodes[a as usize].name, t.nodes[b as usize].name
                    ),
                    "no link joins these two nodes; allowed: two nodes a link joins",
                ),
            }
        }
        if m.get("flows").is_some() {
            let n = w.flows.len();
            let mut ids = Vec::new();
            for (i, fv) in list(self, "flows", "flow ids").iter().enumerate() {
                match fv.as_u64() {
                    Some(f) if (f as usize) < n => ids.push(f as u32),
                    _ => self.err(
                        format!("{KEY}.flows[{i}]"),
                        show(fv),
                        if n == 0 {
                            "the workload has no flows (applications are not flows)".to_string()
                        } else {
                            format!(
                                "allowed: a flow id from 0 to {} (the `flow_id` of flows.csv)",
                                n - 1
                            )
                        },
                    ),
                }
            }
            cfg.flows = Some(ids);
        }
        cfg.start = self.duration(&m, "start", Some(Duration::ZERO))?;
        cfg.end = if m.get("end").is_some() {
            self.duration(&m, "end", None)
        } else {
            None
        };
        if let Some(e) = cfg.end {
            if e <= cfg.start {
                self.err(
                    format!("{KEY}.end"),
                    format!("`{e}`"),
                    format!("must be after start ({})", cfg.start),
                );
            }
        }
        if let (Some(d), true) = (duration, m.get("start").is_some()) {
            if cfg.start >= d {
                self.err(
                    format!("{KEY}.start"),
                    format!("`{}`", cfg.start),
                    format!("must be before the end of the run (duration {d})"),
                );
            }
        }
        if m.get("snaplen").is_some() {
            const MIN: u64 = 60;
            const MAX: u64 = crate::record::pcap::WHOLE_FRAMES_SNAPLEN as u64;
            if let Some(b) = self.bytes(&m, "snaplen", None) {
                if (MIN..=MAX).contains(&b) {
                    cfg.snaplen = Some(b as u32);
                } else {
                    self.err(
                        format!("{KEY}.snaplen"),
                        format!("`{b}B`"),
                        format!("allowed: {MIN}B (an empty Ethernet frame) to {MAX}B; leave it out to keep whole frames"),
                    );
                }
            }
        }
        if self.errs.len() > before {
            return None;
        }
        Some(Some(cfg))
    }

    fn link_params(&mut self, o: &Obj, k: &str) -> Option<LinkParams> {
        const WANT: &str = "a mapping with rate and delay, e.g. {rate: 100Gbps, delay: 1us}";
        // A value that is no mapping is shown, not reported as missing.
        let l = match o.get(k) {
            Some(v) if !v.is_object() => {
                self.err(o.key(k), show(v), format!("must be {WANT}"));
                return None;
            }
            Some(_) => self.sub(o, k, &["rate", "delay"])?,
            None => {
                self.err(o.key(k), "", format!("is required ({WANT})"));
                return None;
            }
        };
        let rate = self.rate(&l, "rate", None);
        let delay = self.duration(&l, "delay", Some(Duration::from_us(1)));
        Some(LinkParams {
            rate: rate?,
            delay: delay?,
        })
    }

    fn topology(&mut self, v: &Value) -> Option<Topology> {
        const KINDS: &[&str] = &[
            "single_switch",
            "dumbbell",
            "leaf_spine",
            "fat_tree",
            "rail_optimized",
            "hpcc_file",
        ];
        // `topology: leaf_spine` has no `kind` to read: show what was written.
        if !v.is_object() {
            self.err(
                "topology",
                show(v),
                format!(
                    "must be a mapping with `kind` and its keys, e.g. {{kind: single_switch, hosts: 4, host_link: {{rate: 100Gbps}}}}; allowed kinds: {}",
                    KINDS.join(", ")
                ),
            );
            return None;
        }
        let kind = match v.get("kind") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.err(
                    "topology.kind",
                    show(other),
                    format!("allowed: {}", KINDS.join(", ")),
                );
                return None;
            }
            None => {
                self.err(
                    "topology.kind",
                    "",
                    format!("is required; allowed: {}", KINDS.join(", ")),
                );
                return None;
            }
        };
        let t = match kind.as_str() {
            "single_switch" => {
                let o = self.obj(v, "topology", &["kind", "hosts", "host_link"])?;
                let n = self.int(&o, "hosts", None, 2, 100_000);
                let hl = self.link_params(&o, "host_link");
                let n = n?;
                self.topology_size(n, 1, 1, n)?;
                Topology::single_switch(n as u32, hl?)
            }
            "dumbbell" => {
                let o = self.obj(
                    v,
                    "topology",
                    &[
                        "kind",
                        "left_hosts",
                        "right_hosts",
                        "host_link",
                        "bottleneck_link",
                    ],
                )?;
                let l = self.int(&o, "left_hosts", None, 1, 100_000);
                let r = self.int(&o, "right_hosts", None, 1, 100_000);
                let hl = self.link_params(&o, "host_link");
                let bl = self.link_params(&o, "bottleneck_link");
                let (l, r) = (l?, r?);
                self.topology_size(l + r, 2, 2, l + r + 1)?;
                Topology::dumbbell(l as u32, r as u32, hl?, bl?)
            }
            "leaf_spine" => {
                let o = self.obj(
                    v,
                    "topology",
                    &[
                        "kind",
                        "leaves",
                        "spines",
                        "hosts_per_leaf",
                        "uplinks_per_spine",
                        "host_link",
                        "fabric_link",
                    ],
                )?;
                let l = self.int(&o, "leaves", None, 1, 10_000);
                let s = self.int(&o, "spines", None, 1, 10_000);
                let h = self.int(&o, "hosts_per_leaf", None, 1, 10_000);
                let u = self.int(&o, "uplinks_per_spine", Some(1), 1, 64);
                let hl = self.link_params(&o, "host_link");
                let fl = self.link_params(&o, "fabric_link");
                let (l, s, h, u) = (l?, s?, h?, u?);
                self.topology_size(l * h, l + s, l, l * h + l * s * u)?;
                Topology::leaf_spine(l as u32, s as u32, h as u32, u as u32, hl?, fl?)
            }
            "fat_tree" => {
                let o = self.obj(
                    v,
                    "topology",
                    &[
                        "kind",
                        "k",
                        "pods",
                        "hosts_per_edge",
                        "host_link",
                        "fabric_link",
                    ],
                )?;
                let k = self.int(&o, "k", None, 2, 64)?;
                if k % 2 != 0 {
                    self.err(
                        "topology.k",
                        format!("`{k}`"),
                        "must be even (k/2 edge and aggregation switches per pod)",
                    );
                    return None;
                }
                // More pods than k: each core switch has one port per pod
                // (SRNIC's 1024-host fabric: k = 8, 16 pods).
                let pods = self.int(&o, "pods", Some(k), 1, 1024);
                let per_edge = self.int(&o, "hosts_per_edge", Some(k / 2), 1, 4096);
                let hl = self.link_params(&o, "host_link");
                let fl = self.link_params(&o, "fabric_link");
                let (pods, per_edge) = (pods?, per_edge?);
                let half = k / 2;
                let hosts = pods * half * per_edge;
                let switches = pods * k + half * half;
                self.topology_size(hosts, switches, pods * half, hosts + 2 * pods * half * half)?;
                Topology::fat_tree_pods(k as u32, pods as u32, per_edge as u32, hl?, fl?)
            }
            "rail_optimized" => {
                let o = self.obj(
                    v,
                    "topology",
                    &[
                        "kind",
                        "servers",
                        "rails",
                        "servers_per_leaf",
                        "spines",
                        "uplinks_per_spine",
                        "host_link",
                        "fabric_link",
                    ],
                )?;
                let servers = self.int(&o, "servers", None, 1, 100_000);
                let rails = self.int(&o, "rails", None, 1, 64);
                let per_leaf = self.int(&o, "servers_per_leaf", servers, 1, 100_000);
                let spines = self.int(&o, "spines", None, 1, 10_000);
                let u = self.int(&o, "uplinks_per_spine", Some(1), 1, 64);
                let hl = self.link_params(&o, "host_link");
                let fl = self.link_params(&o, "fabric_link");
                let (servers, rails, per_leaf, spines, u) =
                    (servers?, rails?, per_leaf?, spines?, u?);
                let leaves = servers.div_ceil(per_leaf) * rails;
                let hosts = servers * rails;
                self.topology_size(hosts, leaves + spines, leaves, hosts + leaves * spines * u)?;
                Topology::rail_optimized(
                    servers as u32,
                    rails as u32,
                    per_leaf as u32,
                    spines as u32,
                    u as u32,
                    hl?,
                    fl?,
                )
            }
            "hpcc_file" => {
                let o = self.obj(v, "topology", &["kind", "builtin", "text"])?;
                let text = match (o.get("builtin"), o.get("text")) {
                    (Some(Value::String(b)), None) => match builtin_topology(b) {
                        Some(t) => t.to_string(),
                        None => {
                            self.err(
                                "topology.builtin",
                                format!("`{b}`"),
                                format!(
                                    "allowed: {}",
                                    BUILTIN_TOPOLOGIES
                                        .iter()
                                        .map(|x| x.0)
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            );
                            return None;
                        }
                    },
                    (None, Some(Value::String(t))) => t.clone(),
                    _ => {
                        self.err("topology", "", "hpcc_file needs exactly one of `builtin` (a shipped topology) or `path` (read by the front end)");
                        return None;
                    }
                };
                match Topology::from_hpcc_file(&text) {
                    Ok(t) => t,
                    Err(e) => {
                        self.err(
                            "topology",
                            "",
                            format!("the ns-3 HPCC topology file is malformed: {e}"),
                        );
                        return None;
                    }
                }
            }
            other => {
                self.err(
                    "topology.kind",
                    format!("`{other}`"),
                    format!("allowed: {}", KINDS.join(", ")),
                );
                return None;
            }
        };
        for i in t.isolated() {
            self.err(
                "topology",
                format!("node `{}`", t.nodes[i as usize].name),
                "has no links",
            );
        }
        // Links per node in one pass (a scan of every link per host took
        // minutes on a k = 64 fat tree's 65,536 hosts).
        let mut degree = vec![0usize; t.nodes.len()];
        for l in &t.links {
            degree[l.a as usize] += 1;
            if l.b != l.a {
                degree[l.b as usize] += 1; // a loop counts once, as before
            }
        }
        for h in t.hosts() {
            let links = degree[h as usize];
            if links > 1 {
                self.err(
                    "topology",
                    format!("host `{}` with {links} links", t.nodes[h as usize].name),
                    "rdmalab models one NIC port per host; multi-homed hosts are not supported yet",
                );
            }
        }
        Some(t)
    }

    fn node_ref(
        &mut self,
        t: &Topology,
        key: String,
        v: Option<&Value>,
        want_host: bool,
    ) -> Option<u32> {
        let index = match &self.nodes {
            Some(ix) if ix.of == NodeIndex::of(t) => ix.clone(),
            _ => self
                .nodes
                .insert(std::rc::Rc::new(NodeIndex::new(t)))
                .clone(),
        };
        let hosts = &index.hosts;
        let what = if want_host { "host" } else { "node" };
        let hint = || {
            let first = t
                .nodes
                .iter()
                .find(|n| !want_host || n.kind == NodeKind::Host)
                .map(|n| n.name.clone())
                .unwrap_or_default();
            format!(
                "a {what} name such as `{first}`, or a {what} index from 0 to {}",
                if want_host {
                    hosts.len()
                } else {
                    t.nodes.len()
                }
                .saturating_sub(1)
            )
        };
        match v {
            Some(Value::String(s)) => match index.by_name.get(s.as_str()).copied() {
                Some(id) if !want_host || t.nodes[id as usize].kind == NodeKind::Host => Some(id),
                Some(_) => {
                    self.err(
                        key,
                        format!("`{s}`"),
                        format!("is a switch, not a host; allowed: {}", hint()),
                    );
                    None
                }
                None => {
                    self.err(
                        key,
                        format!("`{s}`"),
                        format!("no such {what}; allowed: {}", hint()),
                    );
                    None
                }
            },
            Some(Value::Number(n)) if n.as_u64().is_some() => {
                let i = n.as_u64().unwrap() as usize;
                let found = if want_host {
                    hosts.get(i).copied()
                } else {
                    (i < t.nodes.len()).then_some(i as u32)
                };
                if found.is_none() {
                    self.err(
                        key,
                        format!("`{i}`"),
                        format!("no such {what}; allowed: {}", hint()),
                    );
                }
                found
            }
            Some(other) => {
                self.err(key, show(other), format!("allowed: {}", hint()));
                None
            }
            None => {
                self.err(key, "", format!("is required ({})", hint()));
                None
            }
        }
    }

    fn links(&mut self, o: &Obj, t: &mut Topology) {
        let Some(v) = o.get("links") else { return };
        let Some(list) = v.as_array() else {
            self.err("links", show(v), "must be a list of link settings");
            return;
        };
        // Every `down` interval given, and which of them each link got.
        let mut intervals: Vec<DownInterval> = Vec::new();
        let mut on_link: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, item) in list.iter().enumerate() {
            let path = format!("links[{i}]");
            let Some(lo) = self.obj(
                item,
                &path,
                &["between", "tier", "rate", "loss", "delay", "down"],
            ) else {
                continue;
            };
            let ends = match (lo.get("between"), lo.get("tier")) {
                (Some(_), Some(_)) => {
                    self.err(
                        format!("{path}.tier"),
                        "",
                        "give `between` (one pair of nodes) or `tier` (every link between two tiers), not both",
                    );
                    None
                }
                (None, Some(tv)) => self
                    .link_tiers(t, &path, tv)
                    .map(|(a, b)| LinkEnds::Tiers(a, b)),
                (b, None) => match b.and_then(|b| b.as_array()) {
                    Some(a) if a.len() == 2 => {
                        let x = self.node_ref(t, format!("{path}.between[0]"), a.first(), false);
                        let y = self.node_ref(t, format!("{path}.between[1]"), a.get(1), false);
                        x.zip(y).map(|(x, y)| LinkEnds::Nodes(x, y))
                    }
                    _ => {
                        self.err(
                            format!("{path}.between"),
                            b.map(show).unwrap_or_default(),
                            "is required: a list of the two nodes the link joins, e.g. [h0, s0] (or `tier: [edge, agg]` for every link between two tiers)",
                        );
                        None
                    }
                },
            };
            let rate = if lo.get("rate").is_some() {
                self.rate(&lo, "rate", None)
            } else {
                None
            };
            // No default: an entry that only sets `down` keeps the link's own loss.
            let loss = if lo.get("loss").is_some() {
                self.float(&lo, "loss", None, 0.0, 1.0, false)
            } else {
                None
            };
            // Likewise for the propagation delay (durations parse as ≥ 0).
            let delay = if lo.get("delay").is_some() {
                self.duration(&lo, "delay", None)
            } else {
                None
            };
            let first = intervals.len();
            if let Some(dv) = lo.get("down") {
                match dv.as_array() {
                    Some(arr) => {
                        for (j, iv) in arr.iter().enumerate() {
                            let key = format!("{path}.down[{j}]");
                            let pair = iv.as_array().filter(|a| a.len() == 2);
                            let parsed = pair.map(|a| {
                                (
                                    a[0].as_str().map(units::parse_duration),
                                    a[1].as_str().map(units::parse_duration),
                                )
                            });
                            match parsed {
                                Some((Some(Ok(a)), Some(Ok(b)))) if b > a => {
                                    let [x, y] = [0, 1].map(|e| iv[e].as_str().unwrap_or_default());
                                    intervals.push(DownInterval {
                                        down: a,
                                        up: b,
                                        key,
                                        written: format!("[{x}, {y}]"),
                                    });
                                }
                                _ => self.err(key, show(iv), "must be [down_at, up_at] with units and up_at after down_at, e.g. [1ms, 2ms]"),
                            }
                        }
                    }
                    None => self.err(
                        format!("{path}.down"),
                        show(dv),
                        "must be a list of [down_at, up_at] intervals",
                    ),
                }
            }
            let Some(ends) = ends else { continue };
            let found: Vec<usize> = t
                .links
                .iter()
                .enumerate()
                .filter(|(_, l)| ends.matches(t, l.a, l.b))
                .map(|(k, _)| k)
                .collect();
            if found.is_empty() {
                let (key, shown) = match ends {
                    LinkEnds::Nodes(a, b) => (
                        "between",
                        format!(
                            "[{}, {}]",
                            t.nodes[a as usize].name, t.nodes[b as usize].name
                        ),
                    ),
                    LinkEnds::Tiers(a, b) => ("tier", format!("[{a}, {b}]")),
                };
                self.err(
                    format!("{path}.{key}"),
                    shown,
                    "no link joins these two; allowed: two that a link joins",
                );
                continue;
            }
            for k in found {
                if let Some(r) = rate {
                    t.links[k].rate = r;
                }
                if let Some(l) = loss {
                    t.links[k].loss = l;
                }
                if let Some(d) = delay {
                    t.links[k].delay = d;
                }
                let given = &intervals[first..];
                t.links[k].down.extend(given.iter().map(|d| (d.down, d.up)));
                on_link.entry(k).or_default().extend(first..intervals.len());
            }
        }
        self.check_down_overlaps(t, &intervals, &on_link);
    }

    /// Refuse two `links[].down` intervals of one link that overlap or
    /// touch: each schedules its own up event, so the link would come back
    /// up at the end of the first while the second says it is still down.
    fn check_down_overlaps(
        &mut self,
        t: &Topology,
        intervals: &[DownInterval],
        on_link: &BTreeMap<usize, Vec<usize>>,
    ) {
        // One message per pair of entries, however many links they share.
        let mut told = std::collections::BTreeSet::new();
        for (&k, given) in on_link {
            let mut order = given.clone();
            order.sort_by_key(|&i| (intervals[i].down, intervals[i].up));
            // The interval reaching furthest so far: any later one starting
            // at or before its end overlaps it.
            let mut reach: Option<usize> = None;
            for i in order {
                if let Some(r) = reach.filter(|&r| intervals[i].down <= intervals[r].up) {
                    if told.insert((r, i)) {
                        let (l, d, e) = (&t.links[k], &intervals[i], &intervals[r]);
                        self.err(
                            d.key.clone(),
                            format!("`{}`", d.written),
                            format!(
                                "overlaps or touches {} `{}` on the link [{}, {}], which would come back up at {}; allowed: intervals of one link that neither overlap nor touch (merge these into one, e.g. [{}, {}])",
                                e.key,
                                e.written,
                                t.nodes[l.a as usize].name,
                                t.nodes[l.b as usize].name,
                                e.up.min(d.up),
                                e.down,
                                e.up.max(d.up),
                            ),
                        );
                    }
                }
                if reach.map_or(true, |r| intervals[i].up > intervals[r].up) {
                    reach = Some(i);
                }
            }
        }
    }

    /// `links[].tier`: two tier names present in the topology.
    fn link_tiers(
        &mut self,
        t: &Topology,
        path: &str,
        v: &Value,
    ) -> Option<(&'static str, &'static str)> {
        let present = t.tiers();
        let allowed = || format!("two of {} (the tiers of this topology)", present.join(", "));
        let Some(a) = v.as_array().filter(|a| a.len() == 2) else {
            self.err(
                format!("{path}.tier"),
                show(v),
                format!(
                    "must be a list of two tiers, e.g. [edge, agg]; allowed: {}",
                    allowed()
                ),
            );
            return None;
        };
        let mut out = Vec::new();
        for (j, x) in a.iter().enumerate() {
            match x.as_str().and_then(|x| present.iter().find(|&&p| p == x)) {
                Some(&tier) => out.push(tier),
                None => self.err(format!("{path}.tier[{j}]"), show(x), allowed()),
            }
        }
        (out.len() == 2).then(|| (out[0], out[1]))
    }

    /// `switches[]`: switches, by name or tier, whose buffer, PFC or ECN
    /// differ from `switch`. Each switch may be named by one entry only.
    fn switches(&mut self, o: &Obj, t: &Topology, cfg: &mut SwitchConfig) {
        let Some(v) = o.get("switches") else { return };
        let Some(list) = v.as_array() else {
            self.err("switches", show(v), "must be a list of switch settings");
            return;
        };
        let base = cfg.fabric_wide();
        let mut claimed: BTreeMap<u32, usize> = BTreeMap::new();
        for (i, item) in list.iter().enumerate() {
            let path = format!("switches[{i}]");
            let Some(so) = self.obj(
                item,
                &path,
                &[
                    "names",
                    "tier",
                    "buffer",
                    "lossy_egress_alpha",
                    "pfc",
                    "ecn",
                ],
            ) else {
                continue;
            };
            let nodes: Vec<u32> = match (so.get("names"), so.get("tier")) {
                (Some(_), Some(_)) | (None, None) => {
                    self.err(
                        path.clone(),
                        "",
                        "give `names` (a list of switches) or `tier` (every switch of a tier), one of the two",
                    );
                    continue;
                }
                (Some(nv), None) => {
                    let Some(arr) = nv.as_array().filter(|a| !a.is_empty()) else {
                        self.err(
                            format!("{path}.names"),
                            show(nv),
                            "must be a non-empty list of switch names or node indices",
                        );
                        continue;
                    };
                    let mut out = Vec::new();
                    for (j, x) in arr.iter().enumerate() {
                        let key = format!("{path}.names[{j}]");
                        if let Some(n) = self.node_ref(t, key.clone(), Some(x), false) {
                            if t.nodes[n as usize].kind == NodeKind::Host {
                                self.err(key, show(x), "is a host; allowed: a switch");
                            } else {
                                out.push(n);
                            }
                        }
                    }
                    out
                }
                (None, Some(tv)) => {
                    let present: Vec<&str> =
                        t.tiers().into_iter().filter(|&x| x != "host").collect();
                    match tv.as_str().filter(|x| present.contains(x)) {
                        Some(tier) => (0..t.nodes.len() as u32)
                            .filter(|&n| {
                                t.nodes[n as usize].kind == NodeKind::Switch && t.tier(n) == tier
                            })
                            .collect(),
                        None => {
                            self.err(
                                format!("{path}.tier"),
                                show(tv),
                                format!(
                                    "allowed: {} (the switch tiers of this topology)",
                                    present.join(", ")
                                ),
                            );
                            continue;
                        }
                    }
                }
            };
            let mut mine = vec![false; t.nodes.len()];
            for &n in &nodes {
                mine[n as usize] = true;
            }
            let rates = crate::net::config::port_rates(t, |n| mine[n as usize]);
            let Some(local) =
                SwitchLocal::read(&mut self.r, &so, &base, Some(("these switches", &rates)))
            else {
                continue;
            };
            for n in nodes {
                if let Some(&earlier) = claimed.get(&n) {
                    self.err(
                        path.clone(),
                        format!("`{}`", t.nodes[n as usize].name),
                        format!("is already set by switches[{earlier}]; allowed: each switch in one entry"),
                    );
                    continue;
                }
                claimed.insert(n, i);
                cfg.per_switch.push((n, local.clone()));
            }
        }
        cfg.per_switch.sort_by_key(|(n, _)| *n);
    }

    fn cc(&mut self, o: &Obj) -> Option<CcConfig> {
        let empty = Map::new();
        let is_c = matches!(o.get("cc").and_then(|v| v.get("algorithm")), Some(Value::String(a)) if a == "c");
        let c = match o.get("cc") {
            Some(v) if is_c => self.obj(
                v,
                "cc",
                &["algorithm", "params", "library", "source", "name"],
            )?,
            Some(v) => self.obj(v, "cc", &["algorithm", "params"])?,
            None => Obj {
                path: "cc".into(),
                map: &empty,
            },
        };
        if is_c {
            return self.c_controller(&c);
        }
        let names: Vec<&str> = ALGORITHMS.iter().map(|a| a.name).collect();
        let alg = self.string(&c, "algorithm", Some("dcqcn"))?;
        if !names.contains(&alg.as_str()) {
            // `python` and `c` are taken above and by the Python front end,
            // which hands the core a controller of its own: both are named.
            let only_python = if alg == "python" {
                " (`python` is run by rdmalab's Python front end: rdmalab run, rdmalab.run)"
            } else {
                ""
            };
            self.err(
                c.key("algorithm"),
                format!("`{alg}`"),
                format!("allowed: {}, python, c{only_python}", names.join(", ")),
            );
            return None;
        }
        let info = algorithm(&alg).expect("a listed name");
        let mut values = ParamValues::defaults(info.params);
        if let Some(pv) = c.get("params") {
            if info.params.is_empty() {
                self.err(
                    "cc.params",
                    "",
                    format!("algorithm `{alg}` takes no parameters"),
                );
                return None;
            }
            let keys: Vec<&str> = info.params.iter().map(|p| p.name).collect();
            let p = self.obj(pv, "cc.params", &keys)?;
            for spec in info.params {
                if let Some(v) = self.param(&p, spec) {
                    values.set(spec.name, v);
                }
            }
            for spec in info.params {
                let Some(flag) = spec.not_with else { continue };
                if p.get(spec.name).is_some() && values.flag(flag) {
                    self.err(
                        format!("cc.params.{}", spec.name),
                        format!("`{}`", spec.show(values.get(spec.name))),
                        format!("means nothing with cc.params.{flag}: true; allowed: leave it out, or {flag}: false"),
                    );
                }
            }
        }
        CcConfig::builtin(&alg, &values)
    }

    /// `cc: {algorithm: c, library, name, params}`: a controller in C, loaded
    /// now so its parameters are checked before the run.
    fn c_controller(&mut self, c: &Obj) -> Option<CcConfig> {
        let library = match (c.get("library"), c.get("source")) {
            (Some(_), _) => self.string(c, "library", None)?,
            (None, Some(_)) => {
                self.err(
                    "cc.source",
                    "(set)",
                    "is compiled by rdmalab's Python front end (rdmalab run, rdmalab.run); here give cc.library, a library built with `rdmalab cc build`",
                );
                return None;
            }
            (None, None) => {
                self.err(
                    "cc.library",
                    "",
                    "is required with algorithm c (or cc.source from the Python front end)",
                );
                return None;
            }
        };
        let stem = std::path::Path::new(&library)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "c".into());
        let label = self.string(c, "name", Some(&stem))?;
        if label.trim().is_empty() {
            // The name is how outputs (summary `cc`) and messages tell the controller apart.
            self.err(
                "cc.name",
                format!("`{label}`"),
                "allowed: a name that is not empty (default: the library's file stem)",
            );
            return None;
        }
        let lib = match crate::algo::c::CLibrary::load(&library, &label) {
            Ok(l) => l,
            Err(e) => {
                self.err("cc.library", format!("`{library}`"), e);
                return None;
            }
        };
        if let Some(pv) = c.get("params") {
            let Value::Object(m) = pv else {
                self.err(
                    "cc.params",
                    show(pv),
                    "must be a mapping of parameter names to integers",
                );
                return None;
            };
            for (k, v) in m {
                let key = format!("cc.params.{k}");
                match v.as_u64() {
                    Some(n) => {
                        if let Err(e) = lib.set_param(k, n) {
                            self.err(key, show(v), e);
                        }
                    }
                    None => self.err(key, show(v), "must be a non-negative integer (the raw value the C controller reads, e.g. fixed point)"),
                }
            }
        }
        Some(CcConfig::C(std::sync::Arc::new(lib)))
    }

    /// Read one declared parameter in base units, checking its kind and range.
    fn param(&mut self, o: &Obj, spec: &ParamSpec) -> Option<f64> {
        o.get(spec.name)?;
        let v = match spec.kind {
            ParamKind::Float => self.float(o, spec.name, None, f64::MIN, f64::MAX, false)?,
            ParamKind::Int => self.int(o, spec.name, None, 0, u64::MAX)? as f64,
            ParamKind::Bool => {
                if !matches!(o.get(spec.name), Some(Value::Bool(_))) {
                    self.err(
                        o.key(spec.name),
                        show(o.get(spec.name).unwrap()),
                        "must be true or false",
                    );
                    return None;
                }
                self.boolean(o, spec.name, false) as u8 as f64
            }
            ParamKind::Rate => self
                .unit_value(o, spec.name, None, units::parse_rate, "100Gbps")?
                .bps() as f64,
            ParamKind::Duration => self
                .unit_value(o, spec.name, None, units::parse_duration, "10us")?
                .ps() as f64,
            ParamKind::Bytes => {
                self.unit_value(o, spec.name, None, units::parse_bytes, "64KB")? as f64
            }
        };
        if v < spec.min || v > spec.max {
            self.err(
                o.key(spec.name),
                format!("`{}`", spec.show(v)),
                format!(
                    "allowed: {} to {} ({})",
                    spec.show(spec.min),
                    spec.show(spec.max),
                    spec.description
                ),
            );
            return None;
        }
        Some(v)
    }

    fn control(&mut self, o: &Obj) -> Option<(Placement, bool)> {
        const KEYS: &[&str] = &[
            "placement",
            "trigger_latency",
            "processing",
            "cycles_per_event",
            "clock",
            "tx_batch_bytes",
            "state_access",
            "install_latency",
            "threads",
            "software_coalescing",
            "rx_events",
            "coalesce",
            "record_delays",
            "on_path",
            "trigger",
            "cc_header",
            "compute",
            "pools",
            "raw_eth",
        ];
        let empty = Map::new();
        let c = match o.get("control") {
            Some(v) => self.obj(v, "control", KEYS)?,
            None => Obj {
                path: "control".into(),
                map: &empty,
            },
        };
        let name = self.choice(&c, "placement", Placement::NAMES, Some("asic"))?;
        let mut p = Placement::by_name(&name).expect("a listed name");
        let before = self.errs.len();
        if let Some(d) = self.duration(&c, "trigger_latency", Some(p.trigger_latency)) {
            p.trigger_latency = d;
        }
        if let Some(d) = self.duration(&c, "processing", Some(p.processing)) {
            p.processing = d;
        }
        // Or as cycles at a clock: processing = cycles / clock.
        match (c.get("cycles_per_event"), c.get("clock")) {
            (None, None) => {}
            (Some(_), Some(_)) if c.get("processing").is_some() => self.err(
                "control.processing",
                "",
                "give either processing or cycles_per_event with clock, not both",
            ),
            (Some(_), Some(clock)) => {
                let cycles = self.int(&c, "cycles_per_event", None, 0, 1 << 40);
                let hz = match clock {
                    Value::String(s) => parse_frequency(s)
                        .map_err(|e| self.err("control.clock", format!("`{s}`"), e))
                        .ok(),
                    other => {
                        self.err(
                            "control.clock",
                            show(other),
                            "a frequency with a unit, like `250MHz` or `1.8GHz`",
                        );
                        None
                    }
                };
                if let (Some(cy), Some(hz)) = (cycles, hz) {
                    if let Some(d) = self.cycle_time("control.cycles_per_event", cy, hz, clock) {
                        p.processing = d;
                    }
                }
            }
            _ => self.err(
                "control",
                "",
                "cycles_per_event and clock go together (processing = cycles / clock)",
            ),
        }
        if c.get("tx_batch_bytes").is_some() {
            p.tx_batch_bytes = self.bytes(&c, "tx_batch_bytes", None).unwrap_or(0);
        }
        if let Some(d) = self.duration(&c, "state_access", Some(p.state_access)) {
            p.state_access = d;
        }
        if let Some(d) = self.duration(&c, "install_latency", Some(p.install_latency)) {
            p.install_latency = d;
        }
        if let Some(n) = self.int(&c, "threads", Some(p.threads as u64), 0, 1 << 16) {
            p.threads = n as u32;
        }
        p.software_coalescing = self.boolean(&c, "software_coalescing", p.software_coalescing);
        p.rx_events = self.boolean(&c, "rx_events", p.rx_events);
        if let Some(cv) = c.get("coalesce") {
            const TYPES: &[&str] = &["tx", "ack", "nack", "cnp", "timeout"];
            if let Some(co) = self.obj(cv, "control.coalesce", TYPES) {
                for (i, t) in TYPES.iter().enumerate() {
                    let idx = if i < 4 {
                        i
                    } else {
                        EventType::Timeout as usize
                    };
                    if let Some(s) = self.choice(
                        &co,
                        t,
                        &["accumulate", "keep-latest", "keep-oldest"],
                        Some("accumulate"),
                    ) {
                        p.coalesce[idx] = Coalesce::parse(&s).expect("listed");
                    }
                }
            }
        }
        if c.get("pools").is_some() {
            if c.get("threads").is_some() {
                self.err(
                    "control.threads",
                    "(set)",
                    "not with control.pools, which sizes every pool",
                );
            }
            p.pools = self.pools(&c);
        }
        if c.get("compute").is_some() {
            for k in ["processing", "cycles_per_event"] {
                if c.get(k).is_some() {
                    self.err(
                        c.key(k),
                        "(set)",
                        "not with control.compute, which derives processing from cycles and memory",
                    );
                }
            }
            let algorithm = match o.get("cc").and_then(|v| v.get("algorithm")) {
                Some(Value::String(a)) => a.clone(),
                // No algorithm is cc.algorithm's default, DCQCN, which has a
                // measured cycle count (a non-string is cc's own error).
                _ => "dcqcn".into(),
            };
            p.compute = self.compute(&c, &algorithm);
        }
        if c.get("raw_eth").is_some() {
            p.raw_eth = self.raw_eth(&c);
        }
        if (p.compute.is_some() || p.raw_eth.is_some()) && p.threads_per_nic() == 0 {
            self.err(
                "control.threads",
                "`0`",
                "control.compute and control.raw_eth need control threads: threads from 1, or control.pools",
            );
        }
        let record = self.boolean(&c, "record_delays", !p.is_immediate());
        if p.is_immediate() {
            // The direct path has no entries waiting for a thread: nothing to
            // coalesce and no delay to record, so these keys would be ignored.
            for k in ["software_coalescing", "coalesce"] {
                if let Some(v) = c.get(k) {
                    self.err(c.key(k), show(v), "has no effect at the `asic` placement without latencies or threads: events reach the controller at once, so none waits to be coalesced (set trigger_latency, processing or threads to give them a queue)");
                }
            }
            if record {
                self.err(c.key("record_delays"), "`true`", "has nothing to record at the `asic` placement without latencies or threads: every action acts at once, so control_delays stays empty");
            }
        }
        if p.is_immediate() && name != "asic" {
            self.err(
                "control",
                "",
                "a placement with no latencies and threads: 0 is the `asic` placement; name it so",
            );
        }
        (self.errs.len() == before).then_some((p, record))
    }

    /// A `control` key given as a preset name or as a mapping of
    /// `{preset: NAME, ...overrides}`: the mapping to read values from.
    fn preset_or_map<'a>(
        &mut self,
        c: &Obj<'a>,
        key: &str,
        keys: &[&str],
        presets: &[&str],
        scratch: &'a mut Map<String, Value>,
    ) -> Option<(Obj<'a>, Option<String>)> {
        let v = c.get(key)?;
        let path = c.key(key);
        let (m, preset) = match v {
            Value::String(name) => (scratch as &Map<String, Value>, Some(name.clone())),
            _ => {
                let o = self.obj(v, &path, keys)?;
                let preset = match o.get("preset") {
                    Some(Value::String(n)) => Some(n.clone()),
                    Some(other) => {
                        self.err(
                            format!("{path}.preset"),
                            show(other),
                            format!("allowed: {}", presets.join(", ")),
                        );
                        return None;
                    }
                    None => None,
                };
                (o.map, preset)
            }
        };
        if let Some(name) = &preset {
            if !presets.contains(&name.as_str()) {
                let at = if matches!(v, Value::String(_)) {
                    path.clone()
                } else {
                    format!("{path}.preset")
                };
                self.err(
                    at,
                    format!("`{name}`"),
                    format!("allowed: {}, or a mapping", presets.join(", ")),
                );
                return None;
            }
        }
        Some((Obj { path, map: m }, preset))
    }

    /// `control.compute`: cycles at a clock and the flow state's memory
    /// hierarchy; cycles default to the algorithm's measured figure.
    fn compute(
        &mut self,
        c: &Obj,
        algorithm: &str,
    ) -> Option<crate::control::compute::ComputeModel> {
        const KEYS: &[&str] = &[
            "preset",
            "clock",
            "cycles",
            "state_bytes",
            "line",
            "l1",
            "l2",
            "l3",
            "l1_hit",
            "l2_hit",
            "l3_hit",
            "memory",
        ];
        let mut scratch = Map::new();
        let (m, _) = self.preset_or_map(c, "compute", KEYS, &["bluefield-3"], &mut scratch)?;
        let measured = crate::algo::measured_cycles(algorithm);
        if m.get("cycles").is_none() && measured.is_none() {
            self.err(
                m.key("cycles"),
                "",
                format!("is required: `{algorithm}` has no measured cycle count (only {} do); give its cycles per event", crate::algo::MEASURED_CYCLES.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ")),
            );
            return None;
        }
        let d =
            crate::control::compute::ComputeModel::bluefield3(measured.map_or(0, |(cy, _)| cy), 64);
        let before = self.errs.len();
        let clock = match m.get("clock") {
            None => Some(d.clock_hz),
            Some(Value::String(s)) => parse_frequency(s)
                .map_err(|e| self.err(m.key("clock"), format!("`{s}`"), e))
                .ok(),
            Some(other) => {
                self.err(
                    m.key("clock"),
                    show(other),
                    "a frequency with a unit, like `505MHz`",
                );
                None
            }
        };
        let cycles = self.int(&m, "cycles", Some(d.cycles), 0, 1 << 40);
        let state = self.bytes(&m, "state_bytes", Some(d.state_bytes as u64));
        let line = self.bytes(&m, "line", Some(d.line_bytes as u64));
        let l1 = self.bytes(&m, "l1", Some(d.l1_bytes));
        let l2 = self.bytes(&m, "l2", Some(d.l2_bytes));
        let l3 = self.bytes(&m, "l3", Some(d.l3_bytes));
        let l1_hit = self.duration(&m, "l1_hit", Some(d.l1_hit));
        let l2_hit = self.duration(&m, "l2_hit", Some(d.l2_hit));
        let l3_hit = self.duration(&m, "l3_hit", Some(d.l3_hit));
        let memory = self.duration(&m, "memory", Some(d.memory));
        if let (Some(cy), Some(hz)) = (cycles, clock) {
            let written = m.get("clock").cloned().unwrap_or_else(|| "505MHz".into());
            self.cycle_time(m.key("cycles"), cy, hz, &written);
        }
        if let Some(l) = line.filter(|&l| !(1..=4096).contains(&l)) {
            self.err(m.key("line"), format!("`{l}B`"), "allowed: 1B to 4KiB");
        }
        for (k, v) in [("l1", l1), ("l2", l2), ("l3", l3)] {
            if let (Some(v), Some(l)) = (v, line.filter(|&l| l >= 1)) {
                if v < l {
                    self.err(
                        m.key(k),
                        format!("`{v}B`"),
                        format!("must hold at least one {l}B line"),
                    );
                }
                // A cache's lines are counted in u32: more would be cut short.
                let most = u32::MAX as u64;
                if v / l > most {
                    self.err(
                        m.key(k),
                        format!("`{v}B`"),
                        format!(
                            "holds {} lines of {l}B; allowed: at most {most} lines, at most {}B",
                            v / l,
                            l * most
                        ),
                    );
                }
            }
        }
        // The levels are looked up inside out (a thread's L1, the shared L2,
        // L3, then memory) and a miss fills every level above, so an outer
        // level is only worth reaching if it is at least as large and no
        // faster than the one inside it. An outer level smaller than the inner
        // one holds nothing the inner one missed; an inner level slower than
        // the outer one would make hits cost more than misses. Equal is
        // allowed (a level that adds nothing, as if absent).
        let sizes =
            [("l1", l1), ("l2", l2), ("l3", l3)].map(|(k, v)| (k, v.map(|b| (b, format!("{b}B")))));
        self.outer_not_below(
            &m,
            &sizes,
            "is smaller than",
            "an outer cache level holds what the inner one missed, so it must be at least as large; allowed: l1 <= l2 <= l3",
        );
        let times = [
            ("l1_hit", l1_hit),
            ("l2_hit", l2_hit),
            ("l3_hit", l3_hit),
            ("memory", memory),
        ]
        .map(|(k, v)| (k, v.map(|t| (t, t.to_string()))));
        self.outer_not_below(
            &m,
            &times,
            "is faster than",
            "a level is reached after missing the one inside it, so it must take at least as long; allowed: l1_hit <= l2_hit <= l3_hit <= memory",
        );
        if let Some(s) = state.filter(|&s| s > 1 << 20) {
            self.err(
                m.key("state_bytes"),
                format!("`{s}B`"),
                "allowed: 0B to 1MiB",
            );
        }
        // Every line of an event's state may miss to memory: the event then
        // costs lines × memory, which must fit (CoreMemory::access sums it).
        if let (Some(s), Some(l), Some(mem)) = (state, line.filter(|&l| l >= 1), memory) {
            let lines = s.div_ceil(l);
            // The slowest level, whatever the order checks above said.
            let slowest = [l1_hit, l2_hit, l3_hit]
                .into_iter()
                .flatten()
                .fold(mem, |a, b| if b > a { b } else { a });
            let key = if slowest == mem { "memory" } else { "l3_hit" };
            self.per_line_time(
                m.key(key),
                slowest,
                lines,
                &format!("state_bytes {s}B / line {l}B"),
            );
        }
        if self.errs.len() != before {
            return None;
        }
        Some(crate::control::compute::ComputeModel {
            clock_hz: clock?,
            cycles: cycles?,
            state_bytes: state? as u32,
            line_bytes: line? as u32,
            l1_bytes: l1?,
            l2_bytes: l2?,
            l3_bytes: l3?,
            l1_hit: l1_hit?,
            l2_hit: l2_hit?,
            l3_hit: l3_hit?,
            memory: memory?,
        })
    }

    /// `control.pools`: threads per purpose on each NIC.
    fn pools(&mut self, c: &Obj) -> Option<crate::control::compute::Pools> {
        use crate::control::compute::{Pools, Purpose};
        let mut scratch = Map::new();
        let mut keys = vec!["preset"];
        keys.extend(Purpose::NAMES);
        let (m, _) = self.preset_or_map(c, "pools", &keys, &["scr"], &mut scratch)?;
        let mut out = Pools::SCR;
        for (i, k) in Purpose::NAMES.iter().enumerate() {
            out.0[i] = self.int(&m, k, Some(Pools::SCR.0[i] as u64), 1, 1 << 16)? as u32;
        }
        Some(out)
    }

    /// `control.raw_eth`: the send budget of control threads.
    fn raw_eth(&mut self, c: &Obj) -> Option<crate::control::compute::RawEth> {
        use crate::control::compute::{Overflow, RawEth};
        let mut scratch = Map::new();
        let (m, _) = self.preset_or_map(
            c,
            "raw_eth",
            &["preset", "pps", "backlog", "overflow"],
            &["bluefield-3"],
            &mut scratch,
        )?;
        let d = RawEth::BLUEFIELD3;
        let pps = self.float(&m, "pps", Some(d.pps), 1.0, 1e10, false);
        let backlog = self.int(&m, "backlog", Some(d.backlog as u64), 0, 1 << 20);
        let overflow = self.choice(&m, "overflow", &["delay", "drop"], Some("delay"));
        Some(RawEth {
            pps: pps?,
            backlog: backlog? as u32,
            overflow: if overflow? == "drop" {
                Overflow::Drop
            } else {
                Overflow::Delay
            },
        })
    }

    /// `control.on_path`: TX cores in the send path, with a cost per packet
    /// given as `per_packet` or as `cycles_per_packet` at `clock`.
    fn on_path(&mut self, o: &Obj) -> Option<Option<crate::nic::OnPathCores>> {
        let empty = Map::new();
        let c = match o.get("control") {
            Some(Value::Object(m)) => Obj {
                path: "control".into(),
                map: m,
            },
            _ => Obj {
                path: "control".into(),
                map: &empty,
            },
        };
        const KEYS: &[&str] = &[
            "preset",
            "tx_cores",
            "per_packet",
            "cycles_per_packet",
            "rx_cores",
            "rx_per_packet",
            "rx_cycles_per_packet",
            "per_byte",
            "shared",
            "rx_data",
            "clock",
            "memory",
        ];
        let Some(v) = c.get("on_path") else {
            return Some(None);
        };
        // A preset's keys lie under the user's: a cost the user gives in
        // either form replaces the preset's in both.
        let user: Map<String, Value> = match v {
            Value::String(name) => {
                let mut m = Map::new();
                m.insert("preset".into(), Value::String(name.clone()));
                m
            }
            _ => self.obj(v, &c.key("on_path"), KEYS)?.map.clone(),
        };
        let mut merged = Map::new();
        if let Some(pv) = user.get("preset").cloned() {
            let name = match &pv {
                Value::String(n) => n.as_str(),
                _ => "",
            };
            match crate::nic::cc_cores::preset(name) {
                Some(Value::Object(m)) => merged = m,
                _ => {
                    self.err(
                        c.key("on_path.preset"),
                        show(&pv),
                        format!("allowed: {}", crate::nic::cc_cores::PRESETS.join(", ")),
                    );
                    return None;
                }
            }
            for prefix in ["", "rx_"] {
                let (d, cy) = (
                    format!("{prefix}per_packet"),
                    format!("{prefix}cycles_per_packet"),
                );
                if user.contains_key(&d) || user.contains_key(&cy) {
                    merged.remove(&d);
                    merged.remove(&cy);
                }
            }
            if user.get("shared") == Some(&Value::Bool(true)) {
                merged.remove("rx_cores");
            }
        }
        let user_clock = user.get("clock").filter(|v| !v.is_null()).cloned();
        for (k, v) in user {
            if k != "preset" {
                merged.insert(k, v);
            }
        }
        let p = Obj {
            path: c.key("on_path"),
            map: &merged,
        };
        let counts_cycles = ["cycles_per_packet", "rx_cycles_per_packet", "memory"]
            .iter()
            .any(|k| p.get(k).is_some());
        if let (Some(v), false) = (user_clock, counts_cycles) {
            // Costs given as durations read no clock: it would be ignored.
            self.err(
                p.key("clock"),
                show(&v),
                "only applies with cycles_per_packet, rx_cycles_per_packet or memory (per_packet and rx_per_packet are times, not cycles)",
            );
        }
        let memory = self.context_memory(&p);
        let shared = self.boolean(&p, "shared", false);
        let rx_data = self.boolean(&p, "rx_data", false);
        let cores = self.int(&p, "tx_cores", Some(0), 0, 1024);
        if shared && p.get("rx_cores").is_some() {
            self.err(
                p.key("rx_cores"),
                "(set)",
                "not with shared: true (TX and RX events share the tx_cores pool)",
            );
        }
        let rx_cores = self.int(&p, "rx_cores", Some(0), 0, 1024);
        if cores == Some(0) && rx_cores == Some(0) {
            self.err(p.path.clone(), "", "needs tx_cores or rx_cores (1 to 1024)");
        }
        if shared && cores == Some(0) {
            self.err(
                p.key("tx_cores"),
                "`0`",
                "shared: true needs a pool: tx_cores from 1 to 1024",
            );
        }
        let rx_side = rx_cores.unwrap_or(0) > 0 || (shared && cores.unwrap_or(0) > 0);
        if rx_data && !rx_side {
            self.err(
                p.key("rx_data"),
                "`true`",
                "needs RX cores: rx_cores above 0, or shared: true",
            );
        }
        let per_packet = self.core_cost(&p, "", cores.unwrap_or(0) > 0);
        let rx_per_packet = self.core_cost(&p, "rx_", rx_side);
        let per_byte = self.duration(&p, "per_byte", Some(Duration::ZERO));
        Some(Some(crate::nic::OnPathCores {
            tx_cores: cores? as u32,
            per_packet: per_packet?,
            rx_cores: if shared { 0 } else { rx_cores? as u32 },
            rx_per_packet: rx_per_packet?,
            memory: memory?,
            per_byte: per_byte?,
            shared,
            rx_data,
        }))
    }

    /// `control.cc_header`: bytes of SwCC's extensible CC header (0 to 64).
    fn cc_header(&mut self, o: &Obj) -> Option<u32> {
        let c = o.get("control")?.as_object()?;
        c.get("cc_header")?;
        let obj = Obj {
            path: "control".into(),
            map: c,
        };
        let b = self.bytes(&obj, "cc_header", None)?;
        if b > crate::control::MAX_CC_HEADER_BYTES as u64 {
            self.err(
                "control.cc_header",
                format!("`{b}B`"),
                "allowed: 0B to 64B (SwCC's extensible CC header, §4.3.1)",
            );
            return None;
        }
        Some(b as u32)
    }

    /// `control.on_path.memory`: `naive`, `qp-aware`, or a mapping
    /// `{kind, hint, table, ways, entry, line, dram, access_cycles, tx_lead,
    /// rx_lead}`; cycles are at `control.on_path.clock`.
    fn context_memory(
        &mut self,
        p: &Obj,
    ) -> Option<Option<crate::nic::cc_cores::ContextMemoryConfig>> {
        use crate::nic::cc_cores::{ContextMemoryConfig, MemoryKind};
        let Some(v) = p.get("memory") else {
            return Some(None);
        };
        let empty = Map::new();
        let (kind, o) = match v {
            Value::String(k) => (
                Some(k.clone()),
                Obj {
                    path: p.key("memory"),
                    map: &empty,
                },
            ),
            Value::Object(_) => {
                let o = self.obj(
                    v,
                    &p.key("memory"),
                    &[
                        "kind",
                        "hint",
                        "table",
                        "ways",
                        "entry",
                        "line",
                        "dram",
                        "access_cycles",
                        "tx_lead",
                        "rx_lead",
                    ],
                )?;
                (self.choice(&o, "kind", &["naive", "qp-aware"], None), o)
            }
            other => {
                self.err(
                    p.key("memory"),
                    show(other),
                    "allowed: naive, qp-aware, or a mapping {kind, ...}",
                );
                return None;
            }
        };
        let kind = kind?;
        if kind != "naive" && kind != "qp-aware" {
            self.err(
                p.key("memory"),
                format!("`{kind}`"),
                "allowed: naive, qp-aware",
            );
            return None;
        }
        let naive = kind == "naive";
        if naive && o.get("hint").is_some() {
            self.err(
                o.key("hint"),
                "(set)",
                "only applies to kind qp-aware (the QPN hint prefetches into its context table)",
            );
        }
        let hint = self.boolean(&o, "hint", true);
        // Keys only the other kind (or the hint) reads would be ignored here.
        for k in ["line", "tx_lead", "rx_lead"] {
            let why = match k {
                "line" if !naive => "only applies to kind naive (its cache holds lines; the qp-aware table holds whole contexts of `entry` bytes)",
                "tx_lead" | "rx_lead" if naive || !hint => "only applies to kind qp-aware with hint: true (how long before the core needs it the hinted fetch starts)",
                _ => continue,
            };
            if let Some(v) = o.get(k) {
                self.err(o.key(k), show(v), why);
            }
        }
        let table = self.bytes(&o, "table", Some(128 * 1024));
        let ways = self.int(&o, "ways", Some(4), 1, 1 << 16);
        let entry = self.bytes(&o, "entry", Some(128));
        let line = self.bytes(&o, "line", Some(64));
        let dram = self.duration(&o, "dram", Some(Duration::from_ns(100)));
        // Defaults (docs/swcc.md): 8 CSR reads, one cycle each; the naive
        // core loads and stores the same 8 fields through its L1 (2 + 1 cycles each).
        let access_cycles = self.int(
            &o,
            "access_cycles",
            Some(if naive { 24 } else { 8 }),
            0,
            1 << 20,
        );
        let tx_lead = self.duration(&o, "tx_lead", Some(Duration::from_ns(40)));
        let rx_lead = self.duration(&o, "rx_lead", Some(Duration::from_ns(60)));
        let clock = match p.get("clock") {
            Some(Value::String(s)) => match parse_frequency(s) {
                Ok(hz) => Some(hz),
                Err(e) => {
                    self.err(p.key("clock"), format!("`{s}`"), e);
                    return None;
                }
            },
            _ => None,
        };
        let Some(hz) = clock else {
            self.err(
                p.key("clock"),
                p.get("clock").map_or(String::new(), show),
                "is required with memory: the cores' frequency, like 250MHz (SwCC's FPGA)",
            );
            return None;
        };
        let access = match access_cycles {
            Some(n) => Some(self.cycle_time(o.key("access_cycles"), n, hz, &p.map["clock"])?),
            None => None,
        };
        let (table, entry, line) = (table?, entry?, line?);
        // A zero-byte context (or naive line) is the key's fault, not the table's.
        let mut zero = false;
        for (k, v) in [("entry", entry), ("line", line)] {
            if v == 0 && (k == "entry" || naive) {
                self.err(o.key(k), "`0B`", "must be at least 1 byte");
                zero = true;
            }
        }
        if zero {
            return None;
        }
        // Lines and table slots are counted in u32 (the cache's entries; a
        // context's lines number its keys): more would be cut short.
        let most = u32::MAX as u64;
        if naive && entry.div_ceil(line) > most {
            self.err(
                o.key("entry"),
                format!("`{entry}B`"),
                format!(
                    "is {} lines of {line}B; allowed: at most {most} lines, an entry of at most {}B with this line",
                    entry.div_ceil(line),
                    line.saturating_mul(most)
                ),
            );
            return None;
        }
        let unit = if naive { line } else { entry };
        if table / unit > most {
            self.err(
                o.key("table"),
                format!("`{table}B`"),
                format!(
                    "holds {} {} of {unit}B; allowed: at most {most} of them, a table of at most {}B",
                    table / unit,
                    if naive { "lines" } else { "contexts" },
                    unit.saturating_mul(most)
                ),
            );
            return None;
        }
        // A naive core stalls for `dram` on each line of the context that
        // misses: ContextMemory::access pays dram × lines on one event.
        if let (true, Some(d)) = (naive, dram) {
            if !self.per_line_time(
                o.key("dram"),
                d,
                entry.div_ceil(line),
                &format!("entry {entry}B / line {line}B"),
            ) {
                return None;
            }
        }
        if unit == 0 || table < unit {
            self.err(
                o.key("table"),
                format!("`{table}B`"),
                format!(
                    "must hold at least one {} of {unit}B",
                    if naive { "line" } else { "context" }
                ),
            );
            return None;
        }
        if naive && line == 0 {
            return None;
        }
        Some(Some(ContextMemoryConfig {
            kind: if naive {
                MemoryKind::Naive
            } else {
                MemoryKind::QpAware { hint }
            },
            table_bytes: table,
            ways: ways? as u32,
            entry_bytes: entry,
            line_bytes: line,
            dram: dram?,
            access: access?,
            tx_lead: tx_lead?,
            rx_lead: rx_lead?,
        }))
    }

    /// A core's cost per packet, `{prefix}per_packet` or `{prefix}cycles_per_packet` at `clock`.
    fn core_cost(&mut self, p: &Obj, prefix: &str, wanted: bool) -> Option<Duration> {
        let (dk, ck) = (
            format!("{prefix}per_packet"),
            format!("{prefix}cycles_per_packet"),
        );
        if !wanted {
            for k in [&dk, &ck] {
                if p.get(k).is_some() {
                    let cores = if prefix.is_empty() {
                        "tx_cores"
                    } else {
                        "rx_cores"
                    };
                    self.err(p.key(k), "(set)", format!("only applies with {cores}"));
                }
            }
            return Some(Duration::ZERO);
        }
        match (p.get(&dk), p.get(&ck)) {
            (Some(_), None) => self.duration(p, &dk, None),
            (None, Some(_)) => {
                let cycles = self.int(p, &ck, None, 1, 1 << 32);
                let clock = match p.get("clock") {
                    Some(Value::String(s)) => match parse_frequency(s) {
                        Ok(hz) if hz > 0.0 => Some(hz),
                        _ => {
                            self.err(
                                p.key("clock"),
                                format!("`{s}`"),
                                "a frequency above 0, like 1.5GHz or 300MHz",
                            );
                            None
                        }
                    },
                    other => {
                        self.err(
                            p.key("clock"),
                            other.map_or(String::new(), show),
                            "is required with cycles_per_packet: a frequency like 1GHz",
                        );
                        None
                    }
                };
                match (cycles, clock) {
                    (Some(n), Some(hz)) => self.cycle_time(p.key(&ck), n, hz, &p.map["clock"]),
                    _ => None,
                }
            }
            _ => {
                self.err(
                    p.path.clone(),
                    "",
                    format!("needs exactly one of {dk} (a duration) or {ck} with clock"),
                );
                None
            }
        }
    }

    /// `control.trigger`: which packets raise CC events (SwCC's selective triggering).
    fn trigger(&mut self, o: &Obj) -> Option<Option<crate::nic::TriggerMask>> {
        use crate::control::EventMask as M;
        use crate::nic::TriggerMask;
        let empty = Map::new();
        let c = match o.get("control") {
            Some(Value::Object(m)) => Obj {
                path: "control".into(),
                map: m,
            },
            _ => Obj {
                path: "control".into(),
                map: &empty,
            },
        };
        let Some(t) = self.sub(&c, "trigger", &["on", "every"]) else {
            return Some(None);
        };
        let every = self.int(&t, "every", Some(1), 1, 1 << 20);
        let names: Vec<String> = match t.get("on") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    other => {
                        self.err(
                            t.key("on"),
                            show(other),
                            format!("a list of packet kinds: {}", TriggerMask::NAMES.join(", ")),
                        );
                        None
                    }
                })
                .collect(),
            None => TriggerMask::NAMES.iter().map(|s| s.to_string()).collect(),
            Some(other) => {
                self.err(
                    t.key("on"),
                    show(other),
                    format!("a list of packet kinds: {}", TriggerMask::NAMES.join(", ")),
                );
                return None;
            }
        };
        let mut m = TriggerMask {
            tx_first: false,
            tx_middle: false,
            tx_last: false,
            events: M(0),
            every: 1,
        };
        for n in &names {
            match n.as_str() {
                "tx_first" => m.tx_first = true,
                "tx_middle" => m.tx_middle = true,
                "tx_last" => m.tx_last = true,
                "ack" => m.events.0 |= M::ACK,
                "nack" => m.events.0 |= M::NACK,
                "cnp" => m.events.0 |= M::CNP,
                "rx" => m.events.0 |= M::RX,
                other => self.err(
                    t.key("on"),
                    format!("`{other}`"),
                    format!(
                        "unknown packet kind; allowed: {}",
                        TriggerMask::NAMES.join(", ")
                    ),
                ),
            }
        }
        if names.is_empty() {
            // Nothing would raise an event: the controller would run blind.
            self.err(
                t.key("on"),
                "`[]`",
                format!("needs at least one packet kind ({}); for no congestion control use cc.algorithm: none", TriggerMask::NAMES.join(", ")),
            );
        }
        let tx = m.tx_first || m.tx_middle || m.tx_last;
        if let (false, Some(v)) = (tx || names.is_empty(), t.get("every")) {
            self.err(
                t.key("every"),
                show(v),
                "counts TX packets: only applies with tx_first, tx_middle or tx_last in `on`",
            );
        }
        m.every = every? as u32;
        Some(Some(m))
    }

    fn verb(&mut self, o: &Obj) -> Option<Verb> {
        Some(
            match self
                .choice(o, "verb", &["write", "read", "send"], Some("write"))?
                .as_str()
            {
                "read" => Verb::Read,
                "send" => Verb::Send,
                _ => Verb::Write,
            },
        )
    }

    /// One entry of `workload.flows` (or one row of a flow file): a QP that
    /// carries one message.
    fn flow_entry(
        &mut self,
        path: &str,
        v: &Value,
        t: &Topology,
        wl: &mut Workload,
        host_tenant: &std::collections::HashMap<u32, u32>,
    ) {
        let Some(f) = self.obj(v, path, &FLOW_KEYS) else {
            return;
        };
        let dport = self.int(&f, "dport", Some(100), 0, 65535).unwrap_or(100) as u16;
        let src = self.node_ref(t, f.key("src"), f.get("src"), true);
        let dst = self.node_ref(t, f.key("dst"), f.get("dst"), true);
        let verb = self.verb(&f);
        let size = self.bytes(&f, "size", None);
        let start = self.duration(&f, "start", Some(Duration::ZERO));
        if !self.distinct_ends(&f, t, src, dst) {
            return;
        }
        let tenant = self.tenant_of(&f, wl, host_tenant, src);
        if let (Some(src), Some(dst), Some(verb), Some(bytes), Some(start), Some(tenant)) =
            (src, dst, verb, size, start, tenant)
        {
            wl.flows.push(FlowSpec {
                src,
                dst,
                verb,
                bytes,
                start,
                dport,
                owner: QpOwner { tenant, address: 0 },
                piece: false,
                after: None,
            });
        }
    }

    /// The rows of a CSV flow file as mappings of its header's columns, keyed
    /// `KEY[line N]` for messages. Plain CSV: comma-separated, no quoting
    /// (no field of a flow holds a comma), blank lines and `#` lines skipped.
    /// The rows of a flow file (CSV text) as `workload.flows[]` entries.
    /// Columns `size_bytes`, `start_ps`, `start_ns` and `start_us` hold bare
    /// numbers in their unit, as `size` and `start` with one.
    fn csv_rows(&mut self, text: &str, key: &str) -> Vec<(String, Value)> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        let Some((_, header)) = lines.next() else {
            self.err(key, "(empty)", "needs a header line (src,dst,size[,start,verb,dport,tenant]) and one line per flow");
            return Vec::new();
        };
        let cols: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
        // A column given twice would have its last value win unseen.
        if let Some(i) = (1..cols.len()).find(|&i| cols[..i].contains(&cols[i])) {
            self.err(
                key,
                format!("header `{header}`"),
                format!(
                    "column `{}` given twice; allowed: each column once",
                    cols[i]
                ),
            );
            return Vec::new();
        }
        // Once for the file, not once per row.
        if let Some(c) = cols
            .iter()
            .find(|c| !FLOW_KEYS.contains(&c.as_str()) && unit_column(c).is_none())
        {
            self.err(
                key,
                format!("header `{header}`"),
                format!("column `{c}` is no key of a flow; allowed: {}, size_bytes, start_ps, start_ns, start_us", FLOW_KEYS.join(", ")),
            );
            return Vec::new();
        }
        for need in ["src", "dst", "size"] {
            let given = cols
                .iter()
                .any(|c| c == need || unit_column(c).is_some_and(|(k, _)| k == need));
            if !given {
                self.err(key, format!("header `{header}`"), format!("needs a `{need}` column (columns: src, dst, size or size_bytes, and optionally start or start_ps/_ns/_us, verb, dport, tenant)"));
                return Vec::new();
            }
        }
        for k in ["size", "start"] {
            let given: Vec<&str> = cols
                .iter()
                .filter(|c| *c == k || unit_column(c).is_some_and(|(of, _)| of == k))
                .map(String::as_str)
                .collect();
            if given.len() > 1 {
                self.err(
                    key,
                    format!("header `{header}`"),
                    format!(
                        "columns {} all give the {k}; allowed: one of them",
                        given.join(", ")
                    ),
                );
                return Vec::new();
            }
        }
        let mut rows = Vec::new();
        for (n, line) in lines {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let path = format!("{key}[line {}]", n + 1);
            if fields.len() != cols.len() {
                self.err(
                    path,
                    format!("`{line}`"),
                    format!("has {} fields; the header has {}", fields.len(), cols.len()),
                );
                continue;
            }
            let mut m = Map::new();
            // A refused bare number leaves its row out: its key would
            // otherwise be reported missing as well.
            let mut refused = false;
            for (c, f) in cols.iter().zip(fields) {
                if f.is_empty() {
                    continue;
                }
                if let Some((k, unit)) = unit_column(c) {
                    // A bare number in the column's unit (`size_bytes`,
                    // `start_ns`, as a Parquet file of integers holds it).
                    let text = format!("{f}{unit}");
                    let checked = match f.parse::<f64>() {
                        Ok(v) if v.is_finite() => match k {
                            "size" => units::parse_bytes(&text).map(|_| ()),
                            _ => units::parse_duration(&text).map(|_| ()),
                        },
                        _ => Err(format!(
                            "`{f}` is not a number; a `{c}` column holds plain numbers in {unit} (or use a `{k}` column with units, like `{}`)",
                            if k == "size" { "4KB" } else { "10us" }
                        )),
                    };
                    match checked {
                        Ok(()) => {
                            m.insert(k.to_string(), Value::String(text));
                        }
                        Err(e) => {
                            self.err(format!("{path}.{c}"), format!("`{f}`"), e);
                            refused = true;
                        }
                    }
                    continue;
                }
                // dport is a number, and so is a host given by index (`0`, as
                // YAML reads `src: 0`); every other field is text as in YAML
                // (`4KB`, `10us`, `h3`).
                let number = match c.as_str() {
                    "dport" => f.parse::<u64>().ok(),
                    "src" | "dst" => host_index(f),
                    _ => None,
                };
                let v = number
                    .map(Value::from)
                    .unwrap_or_else(|| Value::String(f.to_string()));
                m.insert(c.clone(), v);
            }
            if !refused {
                rows.push((path, Value::Object(m)));
            }
        }
        rows
    }

    fn workload(
        &mut self,
        o: &Obj,
        t: &Topology,
        duration: Duration,
        seed: u64,
    ) -> Option<Workload> {
        let Some(w) = self.sub(
            o,
            "workload",
            &[
                "flows",
                "flows_csv",
                "poisson",
                "perftest",
                "incast",
                "staggered",
                "ring",
                "collective",
                "tenants",
            ],
        ) else {
            // A value that is no mapping was reported by `sub` with the value.
            if o.get("workload").is_none() {
                self.err(
                    "workload",
                    "",
                    "is required (flows, flow_file, poisson, perftest, incast, staggered and/or ring)",
                );
            }
            return None;
        };
        let mut wl = Workload::default();
        let before = self.errs.len();
        let host_tenant = self.tenants(&w, t, &mut wl);
        for (path, v) in self.list(&w, "flows") {
            self.flow_entry(&path, v, t, &mut wl, &host_tenant);
        }
        if let Some(v) = w.get("flows_csv") {
            match v {
                Value::String(text) => {
                    for (path, row) in self.csv_rows(text, "workload.flow_file") {
                        self.flow_entry(&path, &row, t, &mut wl, &host_tenant);
                    }
                }
                other => self.err(
                    "workload.flows_csv",
                    show(other),
                    "must be CSV text (the front end reads workload.flow_file into it)",
                ),
            }
        }
        for (path, v) in self.list(&w, "incast") {
            let Some(f) = self.obj(
                v,
                &path,
                &["senders", "receiver", "size", "start", "verb", "tenant"],
            ) else {
                continue;
            };
            let receiver = self.node_ref(t, f.key("receiver"), f.get("receiver"), true);
            let size = self.bytes(&f, "size", None);
            let start = self.duration(&f, "start", Some(Duration::ZERO));
            let verb = self.verb(&f);
            let mut senders = Vec::new();
            match f.get("senders") {
                Some(Value::Number(n)) if n.as_u64().is_some() => {
                    let k = n.as_u64().unwrap() as usize;
                    let others: Vec<u32> = t.hosts().filter(|&h| Some(h) != receiver).collect();
                    if k == 0 || k > others.len() {
                        self.err(
                            f.key("senders"),
                            format!("`{k}`"),
                            format!("allowed: 1 to {} senders (the other hosts)", others.len()),
                        );
                    } else {
                        senders = others[..k].to_vec();
                    }
                }
                // An empty list would add an incast of no flows, unseen
                // beside the rest of the workload.
                Some(Value::Array(a)) if a.is_empty() => self.err(
                    f.key("senders"),
                    "`[]`".to_string(),
                    "lists no host; allowed: a count of hosts (at least 1) or a list of at least one host",
                ),
                Some(Value::Array(a)) => {
                    let mut seen = std::collections::HashSet::new();
                    for (i, s) in a.iter().enumerate() {
                        if let Some(h) =
                            self.node_ref(t, format!("{}[{i}]", f.key("senders")), Some(s), true)
                        {
                            if Some(h) == receiver {
                                self.err(
                                    format!("{}[{i}]", f.key("senders")),
                                    show(s),
                                    "must differ from the receiver",
                                );
                            }
                            // A sender listed twice would send twice the data.
                            if !seen.insert(h) {
                                self.err(
                                    format!("{}[{i}]", f.key("senders")),
                                    show(s),
                                    "appears twice: list each host once",
                                );
                            }
                            senders.push(h);
                        }
                    }
                }
                other => self.err(
                    f.key("senders"),
                    other.map(show).unwrap_or_default(),
                    "is required: a count of hosts or a list of hosts",
                ),
            }
            if let (Some(r), Some(b), Some(s), Some(v)) = (receiver, size, start, verb) {
                for src in senders {
                    let Some(tenant) = self.tenant_of(&f, &wl, &host_tenant, Some(src)) else {
                        break;
                    };
                    wl.flows.push(FlowSpec {
                        src,
                        dst: r,
                        verb: v,
                        bytes: b,
                        start: s,
                        dport: 100,
                        owner: QpOwner { tenant, address: 0 },
                        piece: false,
                        after: None,
                    });
                }
            }
        }
        for (path, v) in self.list(&w, "poisson") {
            let Some(f) = self.obj(
                v,
                &path,
                &[
                    "cdf", "load", "hosts", "start", "duration", "verb", "tenant", "split",
                ],
            ) else {
                continue;
            };
            let split = self.split(&f);
            let cdf = match f.get("cdf") {
                Some(Value::String(name)) => match FlowSizeCdf::builtin(name) {
                    Some(c) => Some(c),
                    None => {
                        let names: Vec<_> =
                            crate::workload::cdf::BUILTIN.iter().map(|x| x.0).collect();
                        self.err(f.key("cdf"), format!("`{name}`"), format!("allowed: {}, or a list of [size_bytes, cdf_percent] points, or a file path (front end)", names.join(", ")));
                        None
                    }
                },
                Some(Value::Array(points)) => {
                    // Exactly two numbers: a third value would be dropped unseen.
                    let point = |p: &Value| match p.as_array()?.as_slice() {
                        [size, percent] => Some((size.as_f64()?, percent.as_f64()?)),
                        _ => None,
                    };
                    let pts: Option<Vec<(f64, f64)>> = points.iter().map(point).collect();
                    match pts.map(FlowSizeCdf::from_points) {
                        Some(Ok(c)) => Some(c),
                        Some(Err(e)) => {
                            self.err(f.key("cdf"), "", e);
                            None
                        }
                        None => {
                            let i = points.iter().position(|p| point(p).is_none());
                            let i = i.expect("a point that failed");
                            self.err(
                                format!("{}[{i}]", f.key("cdf")),
                                show(&points[i]),
                                "must be a [size_bytes, cdf_percent] pair of numbers",
                            );
                            None
                        }
                    }
                }
                other => {
                    self.err(
                        f.key("cdf"),
                        other.map(show).unwrap_or_default(),
                        "is required: a shipped CDF name such as `websearch`, or points",
                    );
                    None
                }
            };
            let load = self.float(&f, "load", None, 0.0, 1.0, true);
            let start = self.duration(&f, "start", Some(Duration::ZERO));
            let dur = self.positive_duration(&f, "duration", Some(duration));
            let verb = self.verb(&f);
            let hosts: Option<Vec<u32>> = match f.get("hosts") {
                None => Some(t.hosts().collect()),
                Some(Value::String(s)) if s == "all" => Some(t.hosts().collect()),
                Some(Value::Array(a)) => {
                    let hs: Vec<Option<u32>> = a
                        .iter()
                        .enumerate()
                        .map(|(i, h)| {
                            self.node_ref(t, format!("{}[{i}]", f.key("hosts")), Some(h), true)
                        })
                        .collect();
                    hs.into_iter().collect()
                }
                Some(other) => {
                    self.err(
                        f.key("hosts"),
                        show(other),
                        "allowed: `all` or a list of hosts",
                    );
                    None
                }
            };
            if let (Some(c), Some(l), Some(s), Some(d), Some(v), Some(hs)) =
                (cdf, load, start, dur, verb, hosts)
            {
                if hs.len() < 2 {
                    self.err(f.key("hosts"), "", "needs at least two hosts");
                    continue;
                }
                // A host listed twice would draw flows to itself and double its load.
                if let Some(i) = (1..hs.len()).find(|&i| hs[..i].contains(&hs[i])) {
                    let name = &t.nodes[hs[i] as usize].name;
                    self.err(
                        format!("{}[{i}]", f.key("hosts")),
                        format!("`{name}`"),
                        "appears twice: list each host once",
                    );
                    continue;
                }
                // Load is relative to the host link rate, as in traffic_gen.py.
                let rates: Vec<Rate> = hs.iter().map(|&h| host_rate(t, h)).collect();
                let rate = *rates.iter().min().unwrap();
                // Before drawing: a CDF of empty flows would arrive infinitely
                // fast, and a tiny mean at high load can mean billions of flows.
                if c.mean() < 1.0 {
                    self.err(f.key("cdf"), format!("mean {:.3} B", c.mean()), "the flow sizes must average at least 1 byte (a zero-size CDF would arrive without end)");
                    continue;
                }
                let expected = hs.len() as f64 * rate.bps() as f64 * l * (d.ps() as f64 / 1e12)
                    / (8.0 * c.mean());
                if expected > MAX_POISSON_FLOWS as f64 {
                    self.err(
                        f.path.clone(),
                        format!("about {expected:.3e} flows"),
                        format!("allowed: up to {MAX_POISSON_FLOWS} flows per entry; lower load or duration, or use larger flows"),
                    );
                    continue;
                }
                let mut rng = RngStream::new(seed, &format!("workload/{path}"));
                let mut flows = poisson_flows(&hs, rate, l, &c, s, d, v, &mut rng);
                for fl in flows.iter_mut() {
                    match self.tenant_of(&f, &wl, &host_tenant, Some(fl.src)) {
                        Some(tenant) => fl.owner.tenant = tenant,
                        None => break,
                    }
                }
                if let Some(Some(sp)) = split {
                    flows = crate::workload::split_flows(flows, sp);
                }
                wl.flows.extend(flows);
            }
        }
        for (path, v) in self.list(&w, "perftest") {
            let Some(f) = self.obj(
                v,
                &path,
                &[
                    "name",
                    "src",
                    "dst",
                    "verb",
                    "message_size",
                    "message_size_max",
                    "queue_depth",
                    "qps",
                    "start",
                    "start_interval",
                    "stop",
                    "rate",
                    "hints",
                    "memory",
                    "cores",
                    "think_time",
                    "class",
                    "job",
                    "tenant",
                    "addresses",
                    "intent",
                ],
            ) else {
                continue;
            };
            let rate = if f.get("rate").is_some() {
                self.rate(&f, "rate", None).map(Some)
            } else {
                Some(None)
            };
            let mut hints = Vec::new();
            if let Some(hv) = f.get("hints") {
                match hv.as_object() {
                    Some(m) => {
                        for (k, v) in m {
                            let key = format!("{}.{k}", f.key("hints"));
                            match (crate::control::HintKind::parse(k), v.as_f64()) {
                                (Some(kind), Some(x)) => hints.push((kind, x)),
                                (None, _) => self.err(key, "", "unknown hint; allowed: weight, target_latency_us, priority, customN (N a number)"),
                                (_, None) => self.err(key, show(v), "a hint's value must be a number"),
                            }
                        }
                    }
                    None => self.err(
                        f.key("hints"),
                        show(hv),
                        "must be a mapping of hint names to numbers",
                    ),
                }
            }
            let name = self.string(&f, "name", Some("")).unwrap_or_default();
            self.table_name(f.key("name"), &name);
            let src = self.node_ref(t, f.key("src"), f.get("src"), true);
            let dst = self.node_ref(t, f.key("dst"), f.get("dst"), true);
            let verb = self.verb(&f);
            let size = self.bytes(&f, "message_size", None);
            let size_max = if f.get("message_size_max").is_some() {
                self.bytes(&f, "message_size_max", None).map(Some)
            } else {
                Some(None)
            };
            if let (Some(lo), Some(Some(hi))) = (size, size_max) {
                if hi < lo {
                    self.err(
                        f.key("message_size_max"),
                        format!("`{hi}B`"),
                        format!("must be at least message_size ({lo}B)"),
                    );
                    continue;
                }
            }
            let depth = self.int(&f, "queue_depth", Some(1), 1, 1 << 16);
            let device_memory = self
                .choice(&f, "memory", &["host", "device"], Some("host"))
                .map(|m| m == "device");
            let qps = self.int(&f, "qps", Some(1), 1, 1 << 20);
            let addresses = self.int(&f, "addresses", Some(1), 1, 1 << 16);
            let tenant = self.tenant_of(&f, &wl, &host_tenant, src);
            let cores = self.int(&f, "cores", Some(1), 1, 4096);
            let job = match f.get("job") {
                None => None,
                Some(Value::String(j)) if !j.is_empty() => {
                    Some(match wl.jobs.iter().position(|x| x == j) {
                        Some(i) => i as u32,
                        None => {
                            self.table_name(f.key("job"), j);
                            wl.jobs.push(j.clone());
                            (wl.jobs.len() - 1) as u32
                        }
                    })
                }
                Some(v) => {
                    self.err(
                        f.key("job"),
                        show(v),
                        "must be a job name (a non-empty string)",
                    );
                    None
                }
            };
            if let Some(v) = f.get("intent") {
                match (v.as_str().and_then(crate::host::policy::Intent::parse), job) {
                    (None, _) => self.err(f.key("intent"), show(v), "allowed: ls (latency-sensitive), lt (latency and throughput), ts (throughput-sensitive)"),
                    (Some(_), None) => self.err(f.key("intent"), show(v), "needs a `job`: an intent belongs to a job"),
                    (Some(i), Some(j)) => {
                        wl.job_intents.resize(wl.jobs.len(), None);
                        match wl.job_intents[j as usize] {
                            Some(prev) if prev != i => self.err(
                                f.key("intent"),
                                show(v),
                                format!("job `{}` already has intent `{}`: a job has one intent", wl.jobs[j as usize], prev.name()),
                            ),
                            _ => wl.job_intents[j as usize] = Some(i),
                        }
                    }
                }
            }
            let class = if f.get("class").is_some() {
                self.int(&f, "class", None, 1, 7).map(|c| Some(c as u8))
            } else {
                Some(None)
            };
            let think_time = self.duration(&f, "think_time", Some(Duration::ZERO));
            let start = self.duration(&f, "start", Some(Duration::ZERO));
            let stagger = self.duration(&f, "start_interval", Some(Duration::ZERO));
            let stop = if f.get("stop").is_some() {
                self.duration(&f, "stop", None).map(Some)
            } else {
                Some(None)
            };
            if let (Some(st), Some(Some(sp))) = (start, stop) {
                if sp <= st {
                    self.err(
                        f.key("stop"),
                        format!("`{sp}`"),
                        format!("must be later than start ({st})"),
                    );
                    continue;
                }
            }
            if !self.distinct_ends(&f, t, src, dst) {
                continue;
            }
            if let (
                Some(src),
                Some(dst),
                Some(verb),
                Some(mb),
                Some(qd),
                Some(n),
                Some(st),
                Some(rate),
                Some(gap),
                Some(stop),
                Some(mb_max),
                Some(cores),
                Some(think),
                Some(class),
                Some(addresses),
                Some(tenant),
            ) = (
                src, dst, verb, size, depth, qps, start, rate, stagger, stop, size_max, cores,
                think_time, class, addresses, tenant,
            ) {
                let device_memory = device_memory.unwrap_or(false);
                // Sizes uniform in [message_size, message_size_max], one per QP, from the entry's own stream.
                let mut size_rng = RngStream::new(seed, &format!("workload/{path}/message_size"));
                if mb == 0 {
                    self.err(f.key("message_size"), "`0B`", "must be at least 1 byte");
                    continue;
                }
                if let Some(r) = rate {
                    let line = host_rate(t, if verb == Verb::Read { dst } else { src });
                    if r > line {
                        self.err(
                            f.key("rate"),
                            format!("`{r}`"),
                            format!("must not exceed the sender's link rate {line}"),
                        );
                        continue;
                    }
                }
                for i in 0..n {
                    let nm = if name.is_empty() {
                        format!("{path}")
                    } else {
                        name.clone()
                    };
                    let nm = if n > 1 { format!("{nm}#{i}") } else { nm };
                    wl.apps.push(AppSpec {
                        name: nm,
                        src,
                        dst,
                        verb,
                        message_bytes: match mb_max {
                            Some(hi) => mb + size_rng.below(hi - mb + 1),
                            None => mb,
                        },
                        queue_depth: qd as u32,
                        start: st + Duration(gap.ps() * i as u64),
                        stop,
                        rate,
                        hints: hints.clone(),
                        device_memory,
                        core: (i % cores) as u32,
                        class,
                        job,
                        think_time: think,
                        owner: QpOwner {
                            tenant,
                            address: (i % addresses) as u16,
                        },
                    });
                }
            }
        }
        for (path, v) in self.list(&w, "staggered") {
            let Some(f) = self.obj(
                v,
                &path,
                &[
                    "src", "dst", "verb", "piece", "interval", "pieces", "start", "stop", "tenant",
                ],
            ) else {
                continue;
            };
            let src = self.node_ref(t, f.key("src"), f.get("src"), true);
            let dst = self.node_ref(t, f.key("dst"), f.get("dst"), true);
            let verb = self.verb(&f);
            let piece = self.bytes(&f, "piece", None);
            // `interval: sent`: the next piece starts when the previous one is on the wire.
            let chained = matches!(f.get("interval"), Some(Value::String(s)) if s == "sent");
            let interval = if chained {
                Some(Duration::ZERO)
            } else {
                let before = self.errs.len();
                let d = self.duration(&f, "interval", None);
                // The duration check says only what a duration is; `sent` is allowed too.
                let key = f.key("interval");
                for e in self.errs[before..].iter_mut().filter(|e| e.key == key) {
                    e.allowed.push_str(
                        "; or `sent`: the next QP starts when the previous one has sent its piece",
                    );
                }
                d
            };
            let start = self.duration(&f, "start", Some(Duration::ZERO));
            let tenant = self.tenant_of(&f, &wl, &host_tenant, src);
            if chained && f.get("stop").is_some() {
                self.err(f.key("stop"), show(f.get("stop").unwrap()), "not with `interval: sent` (how many pieces fit depends on the run): give pieces");
                continue;
            }
            if interval == Some(Duration::ZERO) && !chained {
                self.err(f.key("interval"), "`0s`", "must be longer than 0: a fresh QP every interval (an RTT, say 13us); 0 would start them all at once (use perftest qps for that)");
                continue;
            }
            if piece == Some(0) {
                self.err(
                    f.key("piece"),
                    "`0B`",
                    "must be at least 1 byte (a BDP, say 37.5KB)",
                );
                continue;
            }
            let count = match (f.get("pieces"), f.get("stop")) {
                (Some(_), Some(_)) => {
                    self.err(
                        f.key("stop"),
                        show(f.get("stop").unwrap()),
                        "give pieces or stop, not both",
                    );
                    continue;
                }
                (Some(_), None) => self.int(&f, "pieces", None, 1, 1 << 24),
                (None, Some(_)) => match (self.duration(&f, "stop", None), start, interval) {
                    (Some(sp), Some(st), Some(iv)) if sp > st => {
                        // `pieces` stops at 2^24; a stop far from start at a short
                        // interval would otherwise build billions of flows before the run.
                        let n = (sp.ps() - st.ps()).div_ceil(iv.ps());
                        if n > 1 << 24 {
                            self.err(
                                f.key("stop"),
                                written(&f, "stop", &sp),
                                format!("opens {n} pieces from start ({st}) every {iv}; allowed: at most 16777216 pieces, as `pieces` (an earlier stop or a longer interval)"),
                            );
                            continue;
                        }
                        Some(n)
                    }
                    (Some(sp), Some(st), Some(_)) => {
                        self.err(
                            f.key("stop"),
                            format!("`{sp}`"),
                            format!("must be later than start ({st})"),
                        );
                        continue;
                    }
                    _ => None,
                },
                (None, None) => {
                    self.err(
                        f.key("pieces"),
                        "",
                        "is required (or stop): how many fresh QPs the attacker opens",
                    );
                    continue;
                }
            };
            if !self.distinct_ends(&f, t, src, dst) {
                continue;
            }
            if let (
                Some(src),
                Some(dst),
                Some(verb),
                Some(bytes),
                Some(iv),
                Some(st),
                Some(n),
                Some(tenant),
            ) = (src, dst, verb, piece, interval, start, count, tenant)
            {
                for k in 0..n {
                    // Saturating: 2^24 pieces an hour apart pass u64 picoseconds,
                    // and a wrapped start would land inside the run.
                    let start = Duration(st.ps().saturating_add(iv.ps().saturating_mul(k)));
                    let after = if chained && k > 0 {
                        Some(wl.flows.len() as u32 - 1)
                    } else {
                        None
                    };
                    wl.flows.push(FlowSpec {
                        src,
                        dst,
                        verb,
                        bytes,
                        start,
                        dport: 100,
                        owner: QpOwner { tenant, address: 0 },
                        piece: true,
                        after,
                    });
                }
            }
        }
        for (path, v) in self.list(&w, "ring") {
            let Some(f) = self.obj(
                v,
                &path,
                &[
                    "hosts", "piece", "steps", "overlays", "start", "verb", "tenant",
                ],
            ) else {
                continue;
            };
            let mut hosts = Vec::new();
            match f.get("hosts") {
                Some(Value::Array(a)) if a.len() >= 2 => {
                    for (i, h) in a.iter().enumerate() {
                        if let Some(n) =
                            self.node_ref(t, format!("{}[{i}]", f.key("hosts")), Some(h), true)
                        {
                            if hosts.contains(&n) {
                                self.err(
                                    format!("{}[{i}]", f.key("hosts")),
                                    show(h),
                                    "appears twice: a ring visits each host once",
                                );
                            }
                            hosts.push(n);
                        }
                    }
                }
                other => {
                    self.err(
                        f.key("hosts"),
                        other.map(show).unwrap_or_default(),
                        "is required: a list of at least two hosts",
                    );
                    continue;
                }
            }
            let piece = self.bytes(&f, "piece", None);
            let steps = self.int(&f, "steps", None, 1, 1 << 20);
            let shuffled = self
                .choice(&f, "overlays", &["fixed", "shuffled"], Some("fixed"))
                .map(|o| o == "shuffled");
            let start = self.duration(&f, "start", Some(Duration::ZERO));
            let verb = self.verb(&f);
            if piece == Some(0) {
                self.err(f.key("piece"), "`0B`", "must be at least 1 byte");
                continue;
            }
            let tenants: Option<Vec<u32>> = hosts
                .iter()
                .map(|&h| self.tenant_of(&f, &wl, &host_tenant, Some(h)))
                .collect();
            if let (
                Some(bytes),
                Some(steps),
                Some(shuffled),
                Some(start),
                Some(verb),
                Some(tenants),
            ) = (piece, steps, shuffled, start, verb, tenants)
            {
                let n = hosts.len() as u64;
                for (i, &src) in hosts.iter().enumerate() {
                    // Each host sends its steps one after another (chained on its own sends).
                    let mut prev: Option<u32> = None;
                    for s in 0..steps {
                        // Step s of a shuffled ring goes `stride` hosts on: a new neighbour every step.
                        let stride = if shuffled { 1 + s % (n - 1) } else { 1 };
                        let dst = hosts[((i as u64 + stride) % n) as usize];
                        let owner = QpOwner {
                            tenant: tenants[i],
                            address: 0,
                        };
                        wl.flows.push(FlowSpec {
                            src,
                            dst,
                            verb,
                            bytes,
                            start,
                            dport: 100,
                            owner,
                            piece: true,
                            after: prev,
                        });
                        prev = Some(wl.flows.len() as u32 - 1);
                    }
                }
            }
        }
        self.collectives(&w, t, seed, &mut wl, &host_tenant);
        if self.errs.len() == before && wl.flows.is_empty() && wl.apps.is_empty() {
            self.err("workload", "", "produces no flows and no applications; add flows, poisson, perftest, incast, staggered, ring or collective");
        }
        // By start time (stable), with the flows that others follow renumbered.
        let mut order: Vec<usize> = (0..wl.flows.len()).collect();
        order.sort_by_key(|&i| wl.flows[i].start);
        let mut renumber = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old] = new as u32;
        }
        wl.flows = order
            .iter()
            .map(|&i| {
                let mut f = wl.flows[i].clone();
                f.after = f.after.map(|a| renumber[a as usize]);
                f
            })
            .collect();
        wl.graph.renumber(&renumber);
        Some(wl)
    }

    /// `workload.collective[]`: each entry's ranks resolved here (hosts,
    /// tenants), the rest read and expanded by [`crate::workload::collective`].
    fn collectives(
        &mut self,
        w: &Obj,
        t: &Topology,
        seed: u64,
        wl: &mut Workload,
        host_tenant: &std::collections::HashMap<u32, u32>,
    ) {
        use crate::workload::collective;
        let names: Vec<&str> = collective::KEYS.iter().map(|k| k.name).collect();
        // Per expanded collective: its entry's name, key path and first instance.
        let mut entries: Vec<(String, String, usize)> = Vec::new();
        for (path, v) in self.list(w, "collective") {
            let Some(f) = self.obj(v, &path, &names) else {
                continue;
            };
            // One group of ranks, or several that run the same collective side by side.
            let mut groups: Vec<Vec<u32>> = Vec::new();
            let mut seen: Vec<u32> = Vec::new();
            let key = f.key("hosts");
            match f.get(collective::HOSTS.name) {
                Some(Value::String(all)) if all == "all" && t.hosts().nth(1).is_some() => {
                    groups.push(t.hosts().collect());
                }
                Some(Value::Array(a)) if a.first().is_some_and(|g| g.is_array()) => {
                    for (gi, g) in a.iter().enumerate() {
                        let gkey = format!("{key}[{gi}]");
                        match g.as_array() {
                            Some(list) if list.len() >= 2 => {
                                groups.push(self.ranks(t, &gkey, list, &mut seen))
                            }
                            _ => self.err(gkey, show(g), "must be a list of at least two hosts: with groups, every item of hosts is a group"),
                        }
                    }
                    if groups.iter().any(|g| g.len() != groups[0].len()) {
                        let sizes: Vec<String> =
                            groups.iter().map(|g| g.len().to_string()).collect();
                        self.err(key, format!("groups of {}", sizes.join(", ")), "must all be the same size (per-rank lists such as compute apply to every group)");
                        continue;
                    }
                }
                Some(Value::Array(a)) if a.len() >= 2 => {
                    groups.push(self.ranks(t, &key, a, &mut seen))
                }
                other => {
                    let what = if other.is_some() {
                        "must be"
                    } else {
                        "is required:"
                    };
                    self.err(
                        key,
                        other.map(show).unwrap_or_default(),
                        format!("{what} a list of at least two hosts (a collective over one rank moves nothing), a list of such groups, or `all`"),
                    );
                    continue;
                }
            }
            let before = self.errs.len();
            let mut owners: Vec<Vec<QpOwner>> = Vec::new();
            for g in &groups {
                let o: Option<Vec<QpOwner>> = g
                    .iter()
                    .map(|&h| {
                        self.tenant_of(&f, wl, host_tenant, Some(h))
                            .map(|tenant| QpOwner { tenant, address: 0 })
                    })
                    .collect();
                owners.extend(o);
            }
            if self.errs.len() != before || groups.is_empty() || owners.len() != groups.len() {
                continue;
            }
            let several = groups.len() > 1;
            let first = (groups[0].clone(), owners[0].clone());
            let Some(c) = collective::read(&mut self.r, &f, &path, first.0, first.1) else {
                continue;
            };
            for (gi, (ranks, own)) in groups.into_iter().zip(owners).enumerate() {
                // Groups are named NAME/0, NAME/1, ... in the tables.
                let name = if several {
                    format!("{}/{gi}", c.name)
                } else {
                    c.name.clone()
                };
                let one = collective::CollectiveSpec {
                    name,
                    ranks,
                    owners: own,
                    ..c.clone()
                };
                let index = wl.collectives.len() as u32;
                entries.push((c.name.clone(), path.clone(), wl.graph.instances.len()));
                collective::expand(&one, index, seed, &mut wl.flows, &mut wl.graph);
                wl.collectives.push(one);
            }
        }
        self.interleave(wl, &entries);
        if !wl.graph.is_empty() {
            wl.graph.cover(wl.flows.len());
        }
    }

    /// `after`: entries that take turns, iteration by iteration, on the
    /// hosts they share (`entries`: per collective, its entry's name, key
    /// path and first instance).
    fn interleave(&mut self, wl: &mut Workload, entries: &[(String, String, usize)]) {
        let key = crate::workload::collective::AFTER.name;
        // Groups of one entry share its `after`: say a problem with it once.
        let mut refused: Vec<&str> = Vec::new();
        for (b, (b_entry, b_path, b_first)) in entries.iter().enumerate() {
            let Some(a_entry) = wl.collectives[b].after.clone() else {
                continue;
            };
            if refused.contains(&b_entry.as_str()) {
                continue;
            }
            let at = format!("{b_path}.{key}");
            let errs_before = self.errs.len();
            let others: Vec<usize> = (0..entries.len())
                .filter(|&a| entries[a].0 == a_entry)
                .collect();
            if a_entry == *b_entry || others.is_empty() {
                let mut names: Vec<&str> = entries
                    .iter()
                    .map(|e| e.0.as_str())
                    .filter(|n| n != b_entry)
                    .collect();
                names.dedup();
                let allowed = if names.is_empty() {
                    "none: this is the only entry".to_string()
                } else {
                    names.join(", ")
                };
                self.err(
                    at,
                    format!("`{a_entry}`"),
                    format!("must name another entry; allowed: {allowed}"),
                );
                refused.push(b_entry);
                continue;
            }
            let iters = wl.collectives[b].iterations as usize;
            for a in others {
                let a_first = entries[a].2;
                if wl.collectives[a].iterations as usize != iters {
                    self.err(at.clone(), format!("`{a_entry}`"), format!("has {} iterations and this entry {iters}: entries that take turns run as many", wl.collectives[a].iterations));
                    break;
                }
                let hosts_b = wl.collectives[b].ranks.clone();
                for (rb, h) in hosts_b.iter().enumerate() {
                    let Some(ra) = wl.collectives[a].ranks.iter().position(|x| x == h) else {
                        continue;
                    };
                    let g = &mut wl.graph;
                    for i in 0..iters {
                        let (ia, ib) = (a_first + i, b_first + i);
                        let done = g.instances[ia].done[ra].clone();
                        let launch = g.instances[ib].launch[rb];
                        g.wait_for(launch, &done);
                        if i + 1 < iters {
                            let done = g.instances[ib].done[rb].clone();
                            let launch = g.instances[ia + 1].launch[ra];
                            g.wait_for(launch, &done);
                        }
                    }
                }
            }
            if self.errs.len() != errs_before {
                refused.push(b_entry);
            }
        }
        if wl.graph.cycle().is_some() {
            let named: Vec<String> = entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    wl.collectives[i]
                        .after
                        .as_ref()
                        .map(|a| format!("{} after {a}", e.0))
                })
                .collect();
            self.err("workload.collective", "", format!("`after` makes entries wait for each other in a circle ({}); allowed: one entry of each pair names the other", named.join(", ")));
        }
    }

    /// The hosts of one group of ranks, at `key`; each host once across
    /// the entry's groups (`seen`).
    fn ranks(&mut self, t: &Topology, key: &str, list: &[Value], seen: &mut Vec<u32>) -> Vec<u32> {
        let mut hosts = Vec::new();
        for (i, h) in list.iter().enumerate() {
            let k = format!("{key}[{i}]");
            if let Some(n) = self.node_ref(t, k.clone(), Some(h), true) {
                if seen.contains(&n) {
                    self.err(
                        k,
                        show(h),
                        "appears twice: each rank is one host, in one group",
                    );
                }
                seen.push(n);
                hosts.push(n);
            }
        }
        hosts
    }

    /// `nic.cc_scope` other than `qp` runs on the direct control path, and
    /// `tenant` needs every controlled QP to have a tenant.
    fn check_cc_scope(
        &mut self,
        scope: crate::nic::cc_scope::CcScope,
        w: &Workload,
        placement: Option<&Placement>,
    ) {
        use crate::nic::cc_scope::CcScope;
        let shown = format!("`{}`", scope.name());
        if scope == CcScope::Qp {
            return;
        }
        if let Some(p) = placement.filter(|p| !p.is_immediate()) {
            self.err(
                "nic.cc_scope",
                shown.clone(),
                format!("shares CC state at the NIC's own pipeline: only with control.placement `asic` (not `{}`); use `qp` with other placements", p.name),
            );
        }
        if scope != CcScope::Tenant {
            return;
        }
        let no_tenant = crate::nic::qp::NO_TENANT;
        if let Some((i, f)) = w
            .flows
            .iter()
            .enumerate()
            .find(|(_, f)| f.owner.tenant == no_tenant)
        {
            self.err("nic.cc_scope", shown, format!("needs every QP to have a tenant, and flow {i} (from host {}) has none: give its workload entry a `tenant`, or list its host under workload.tenants", f.src));
        } else if let Some(a) = w
            .apps
            .iter()
            .find(|a| a.owner.tenant == no_tenant && a.rate.is_none())
        {
            self.err("nic.cc_scope", shown, format!("needs every QP to have a tenant, and perftest `{}` has none: give it a `tenant`, or list its host under workload.tenants", a.name));
        }
    }

    /// A workload entry's `src` and `dst` must be different hosts.
    fn distinct_ends(&mut self, f: &Obj, t: &Topology, src: Option<u32>, dst: Option<u32>) -> bool {
        match (src, dst) {
            (Some(s), Some(d)) if s == d => {
                self.err(
                    f.key("dst"),
                    format!("`{}`", t.nodes[d as usize].name),
                    "must differ from src",
                );
                false
            }
            _ => true,
        }
    }

    /// `workload.tenants`: a mapping of tenant names to `{hosts: [...]}`.
    /// Returns the tenant of each host that one owns.
    fn tenants(
        &mut self,
        w: &Obj,
        t: &Topology,
        wl: &mut Workload,
    ) -> std::collections::HashMap<u32, u32> {
        let mut owner = std::collections::HashMap::new();
        let Some(v) = w.get("tenants") else {
            return owner;
        };
        let Some(m) = v.as_object() else {
            self.err(
                w.key("tenants"),
                show(v),
                "must be a mapping of tenant names to {hosts: [...]}",
            );
            return owner;
        };
        for (name, tv) in m {
            let key = format!("{}.{name}", w.key("tenants"));
            let id = wl.tenants.len() as u32;
            wl.tenants.push(name.clone());
            if name.is_empty() {
                self.err(key.clone(), "", "a tenant needs a non-empty name");
            }
            self.table_name(key.clone(), name);
            let Some(o) = self.obj(tv, &key, &["hosts"]) else {
                continue;
            };
            match o.get("hosts") {
                None => {}
                Some(Value::Array(a)) => {
                    for (i, h) in a.iter().enumerate() {
                        let hk = format!("{}[{i}]", o.key("hosts"));
                        let Some(node) = self.node_ref(t, hk.clone(), Some(h), true) else {
                            continue;
                        };
                        if let Some(prev) = owner.insert(node, id) {
                            self.err(
                                hk,
                                show(h),
                                format!(
                                    "already belongs to tenant `{}`: a host has one owner",
                                    wl.tenants[prev as usize]
                                ),
                            );
                        }
                    }
                }
                Some(other) => self.err(o.key("hosts"), show(other), "must be a list of hosts"),
            }
        }
        owner
    }

    /// The tenant of a workload entry's QPs: its `tenant` key (a declared
    /// tenant), else the tenant that owns its sending host, else none.
    fn tenant_of(
        &mut self,
        f: &Obj,
        wl: &Workload,
        host_tenant: &std::collections::HashMap<u32, u32>,
        src: Option<u32>,
    ) -> Option<u32> {
        match f.get("tenant") {
            Some(Value::String(n)) => match wl.tenants.iter().position(|x| x == n) {
                Some(i) => Some(i as u32),
                None => {
                    let allowed = if wl.tenants.is_empty() {
                        "none declared: add workload.tenants".to_string()
                    } else {
                        format!("allowed: {}", wl.tenants.join(", "))
                    };
                    self.err(
                        f.key("tenant"),
                        format!("`{n}`"),
                        format!("is not a tenant in workload.tenants ({allowed})"),
                    );
                    None
                }
            },
            Some(v) => {
                self.err(
                    f.key("tenant"),
                    show(v),
                    "must be a tenant name from workload.tenants",
                );
                None
            }
            None => Some(
                src.and_then(|s| host_tenant.get(&s).copied())
                    .unwrap_or(crate::nic::qp::NO_TENANT),
            ),
        }
    }

    /// `poisson[].split`: `{above, piece, interval}`, the flow-splitting attack.
    fn split(&mut self, f: &Obj) -> Option<Option<crate::workload::Split>> {
        let v = f.get("split")?;
        let o = self.obj(v, &f.key("split"), &["above", "piece", "interval"])?;
        let above = self.bytes(&o, "above", None);
        let piece = self.bytes(&o, "piece", None);
        let interval = self.duration(&o, "interval", Some(Duration::ZERO));
        if piece == Some(0) {
            self.err(
                o.key("piece"),
                "`0B`",
                "must be at least 1 byte (the paper cuts into 150KB pieces)",
            );
            return None;
        }
        if let (Some(a), Some(p)) = (above, piece) {
            if p > a {
                self.err(
                    o.key("piece"),
                    format!("`{p}B`"),
                    format!("must not exceed above ({a}B): only flows larger than above are cut"),
                );
                return None;
            }
        }
        Some(Some(crate::workload::Split {
            above: above?,
            piece: piece?,
            interval: interval?,
        }))
    }

    /// Every flow's endpoints must be joined through switches.
    /// A flow or message must fit one QP's packet numbers (they do not wrap:
    /// [`crate::workload::MAX_QP_PACKETS`]); refused here rather than found
    /// when the run reaches it.
    fn check_psn_space(&mut self, n: &NicConfig, w: &Workload) {
        let max = crate::workload::MAX_QP_PACKETS;
        let mtu = n.wire.mtu_payload;
        let packets = |bytes: u64| n.wire.packets_for(bytes);
        if let Some((i, f)) = w
            .flows
            .iter()
            .enumerate()
            .find(|(_, f)| packets(f.bytes) > max)
        {
            self.err(
                "workload",
                format!("flow {i} of {}B", f.bytes),
                format!("needs {} packets at nic.mtu {mtu}B; allowed: at most {max} packets on one QP (a larger nic.mtu, or smaller flows)", packets(f.bytes)),
            );
        }
        if let Some(a) = w.apps.iter().find(|a| packets(a.message_bytes) > max) {
            self.err(
                "workload.perftest",
                format!("`{}`: message_size {}B", a.name, a.message_bytes),
                format!(
                    "needs {} packets at nic.mtu {mtu}B; allowed: at most {max} packets on one QP",
                    packets(a.message_bytes)
                ),
            );
        }
    }

    /// Refuse a topology whose counts are too large to build (each key is
    /// within its range, their product need not be), before allocating it.
    fn topology_size(&mut self, hosts: u64, switches: u64, tors: u64, links: u64) -> Option<()> {
        match crate::net::topology::check_size(hosts, switches, tors, links) {
            Ok(()) => Some(()),
            Err(e) => {
                self.err("topology", "", e);
                None
            }
        }
    }

    fn check_connected(&mut self, t: &Topology, w: &Workload) {
        let n = t.nodes.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut Vec<usize>, mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for l in &t.links {
            // Hosts do not forward, but a host belongs to the component of its switch.
            let (a, b) = (
                find(&mut parent, l.a as usize),
                find(&mut parent, l.b as usize),
            );
            parent[a] = b;
        }
        let mut reported = std::collections::BTreeSet::new();
        let pairs = w
            .flows
            .iter()
            .map(|f| (f.src, f.dst))
            .chain(w.apps.iter().map(|a| (a.src, a.dst)));
        for (s, d) in pairs {
            if find(&mut parent, s as usize) != find(&mut parent, d as usize)
                && reported.insert((s, d))
            {
                self.err(
                    "topology",
                    format!(
                        "{} → {}",
                        t.nodes[s as usize].name, t.nodes[d as usize].name
                    ),
                    "the topology does not connect these two endpoints of a flow",
                );
            }
        }
    }
}

/// The keys of a `workload.flows[]` entry, and so the columns of a flow file.
const FLOW_KEYS: [&str; 7] = ["src", "dst", "verb", "size", "start", "dport", "tenant"];

/// A flow file's column that holds a bare number in a unit: the key it
/// gives and the unit (`size_bytes` is `size` in `B`).
/// PFC is lossless only if a port's headroom takes what still arrives after
/// it sends PAUSE: the frame the sender has started, the frame that delays
/// the PAUSE on the way back, and a round trip of the link. ns-3's `auto`
/// (3 × rate × delay) covers that at 100 Gb/s and 1 µs but not on short,
/// slow links with large frames (10 Gb/s, 725 ns, 2 KB: 2.7 KB of 6 KB),
/// where a "lossless" run then drops. The port with the largest shortfall
/// is named; the run goes ahead as written.
fn short_pfc_headroom(t: &Topology, sw: &SwitchConfig, n: &NicConfig) -> Option<ScenarioWarning> {
    let w = &n.wire;
    let frame = (w.mtu_payload
        + w.data_overhead
        + w.write_first_extra
        + w.int_header
        + w.cc_header
        + w.l1_overhead) as u64;
    let buffer_of = |node: u32| {
        sw.per_switch
            .iter()
            .find(|(id, _)| *id == node)
            .map_or(&sw.buffer, |(_, local)| &local.buffer)
    };
    let mut worst: Option<(u64, u64, u64, &LinkSpec, u32, bool)> = None;
    for l in &t.links {
        for node in [l.a, l.b] {
            if t.nodes[node as usize].kind != NodeKind::Switch {
                continue;
            }
            let b = buffer_of(node);
            if !b.pfc_enabled {
                continue;
            }
            let bdp = l.rate.bytes_in(l.delay);
            let has = b
                .headroom_bytes
                .unwrap_or_else(|| bdp.saturating_mul(3).max(1));
            let needs = 2 * frame + 2 * bdp;
            if has < needs && worst.is_none_or(|(h, nd, ..)| needs - has > nd - h) {
                worst = Some((has, needs, bdp, l, node, b.headroom_bytes.is_none()));
            }
        }
    }
    let (has, needs, bdp, l, node, auto) = worst?;
    let peer = if l.a == node { l.b } else { l.a };
    Some(ScenarioWarning {
        key: "switch.pfc.headroom".into(),
        value: if auto { "`auto`".into() } else { format!("`{has}B`") },
        needs: format!(
            "gives {has} B at {}'s port to {} ({}, {}); after a PAUSE up to {needs} B more can arrive (two {frame} B frames and the link's round trip of {} B), so frames may be dropped under PFC (`dropped_frames`); set switch.pfc.headroom to at least {needs}B to keep the run lossless",
            t.nodes[node as usize].name,
            t.nodes[peer as usize].name,
            l.rate,
            l.delay,
            2 * bdp,
        ),
        without_cc: false,
    })
}

fn unit_column(column: &str) -> Option<(&'static str, &'static str)> {
    match column {
        "size_bytes" => Some(("size", "B")),
        "start_ps" => Some(("start", "ps")),
        "start_ns" => Some(("start", "ns")),
        "start_us" => Some(("start", "us")),
        _ => None,
    }
}

/// A flow file's host written as an index, the way YAML reads `src: 3`: a
/// decimal integer without a leading zero (`012` is octal to YAML; here it
/// stays text, and so no host, rather than a host YAML would not pick).
fn host_index(f: &str) -> Option<u64> {
    let canonical = f == "0" || !f.starts_with('0');
    let digits = !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit());
    (canonical && digits).then(|| f.parse().ok()).flatten()
}

fn parse_frequency(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, mult) = if let Some(x) = s.strip_suffix("GHz") {
        (x, 1e9)
    } else if let Some(x) = s.strip_suffix("MHz") {
        (x, 1e6)
    } else if let Some(x) = s.strip_suffix("kHz") {
        (x, 1e3)
    } else if let Some(x) = s.strip_suffix("Hz") {
        (x, 1.0)
    } else {
        return Err("a frequency with a unit: Hz, kHz, MHz or GHz, like `250MHz`".into());
    };
    // `inf` parses as a number: an infinite clock would make every cycle free.
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && (v * mult).is_finite() => Ok(v * mult),
        _ => Err("a finite frequency greater than 0, like `250MHz`".into()),
    }
}

fn host_rate(t: &Topology, h: u32) -> Rate {
    t.links
        .iter()
        .find(|l| l.a == h || l.b == h)
        .map(|l| l.rate)
        .unwrap_or(Rate(1))
}

/// Topologies shipped with rdmalab, in the ns-3 HPCC format.
pub const BUILTIN_TOPOLOGIES: &[(&str, &str)] = &[(
    "hpcc-fat-tree-320-hosts",
    include_str!("../../data/topologies/hpcc-fat-tree-320-hosts.txt"),
)];

pub fn builtin_topology(name: &str) -> Option<&'static str> {
    BUILTIN_TOPOLOGIES.iter().find(|x| x.0 == name).map(|x| x.1)
}
