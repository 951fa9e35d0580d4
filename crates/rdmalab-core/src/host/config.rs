//! The `host` section of a scenario: the host's PCIe paths, its reports to
//! the controllers and its doorbells, each key declared once ([`KEYS`],
//! [`UAR_KEYS`]) and read into a [`HostConfig`]. `host.scheduler` names the
//! workload's jobs, so the scenario reads it once the workload is known
//! (`scenario::Parser::scheduler`); its key is declared here with the rest.

use super::{UarConfig, UarPlacement};
use crate::config::{show, Allowed, Key, Obj, Reader, Rule, NONE};
use crate::nic::{NicConfig, PcieConfig};
use crate::time::{Duration, Rate};
use crate::workload::Workload;
use serde_json::{Map, Value};

/// What the `host` section sets.
#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    /// The host PCIe link the NIC reads payload and WQEs over (`None`: host
    /// memory is free and instant).
    pub pcie: Option<PcieConfig>,
    /// The peer-to-peer path from device memory to the NIC.
    pub device_pcie: Option<PcieConfig>,
    /// Period of the HOST events to controllers.
    pub report: Option<Duration>,
    /// The doorbell model (`None`: posting is free).
    pub uar: Option<UarConfig>,
}

const PCIE: Key = Key {
    name: "pcie",
    unit: "string",
    default: NONE,
    allowed: Allowed::OneOf(&["gen3x16", "gen4x16", "gen5x16"]),
    rule: Rule::None,
    meaning: "Model the PCIe link: usable DMA bandwidth of 126, 252 or 504 Gb/s (8, 16, 32 GT/s × 16 lanes × 128/130 encoding; TLP overheads are counted only with `nic.resources`). Every data packet's payload, and a 64 B WQE per message, is read over it; the NIC prefetches one round trip ahead and otherwise waits, so a link slower than the port caps the payload rate. `none`: host memory is free and instant.",
};
const PCIE_BANDWIDTH: Key = Key {
    name: "pcie_bandwidth",
    unit: "rate",
    default: NONE,
    allowed: Allowed::Custom("> 0"),
    rule: Rule::None,
    meaning: "Overrides the preset's bandwidth (or sets the model up without a preset). `none`: the preset's.",
};
const PCIE_LATENCY: Key = Key {
    name: "pcie_latency",
    unit: "duration",
    default: "900ns",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::Text("only with `host.pcie` or `host.pcie_bandwidth`"),
    meaning: "DMA read round trip: the first packet of every message waits this long after the WQE is posted. rdmalab's choice in the 0.5–1 µs range that host DMA reads are measured at (Neugebauer et al., SIGCOMM'18).",
};
const DEVICE_PCIE: Key = Key {
    name: "device_pcie",
    unit: "string",
    default: NONE,
    allowed: Allowed::OneOf(&["gen3x16", "gen4x16", "gen5x16"]),
    rule: Rule::None,
    meaning: "The peer-to-peer path from device memory (a GPU behind a PCIe switch, an NVMe device) to the NIC, for applications with `memory: device`: their payload is read over it instead of the host PCIe, with the same prefetch rule. Needed when any application uses device memory. `none`: no device memory.",
};
const DEVICE_PCIE_BANDWIDTH: Key = Key {
    name: "device_pcie_bandwidth",
    unit: "rate",
    default: NONE,
    allowed: Allowed::Custom("> 0"),
    rule: Rule::None,
    meaning: "Overrides the preset's bandwidth (or sets the path up without a preset). `none`: the preset's.",
};
const DEVICE_PCIE_LATENCY: Key = Key {
    name: "device_pcie_latency",
    unit: "duration",
    default: "900ns",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::Text("only with `host.device_pcie` or `host.device_pcie_bandwidth`"),
    meaning: "Read round trip over the device path; a message's first packet waits for the larger of this and `host.pcie_latency` (its WQE comes from host memory). rdmalab's choice: as the host's.",
};
const REPORT_INTERVAL: Key = Key {
    name: "report_interval",
    unit: "duration",
    default: NONE,
    allowed: Allowed::Duration { min_ps: 1 },
    rule: Rule::None,
    meaning: "Period of HOST events to each active QP's controller: PCIe utilisation and mean DMA latency over the period, QPs with data to send, port utilisation. `none`: no reports.",
};
const UAR: Key = Key {
    name: "uar",
    unit: "mapping",
    default: NONE,
    allowed: Allowed::Custom("the keys of `host.uar` below"),
    rule: Rule::None,
    meaning: "The doorbell model (SwiftRDMA §3.1): each application QP is bound to one of the NIC context's UAR pages; a post costs its core `post`, then its doorbell holds the page's lock for `doorbell`, plus `bounce` when another core rang the page last. Doorbells to one page are serialised, so cores sharing pages slow each other. Adds `doorbells`, `doorbell_bounces`, `doorbell_wait_ps` to the summary. `none`: posting is free.",
};
const SCHEDULER: Key = Key {
    name: "scheduler",
    unit: "mapping",
    default: NONE,
    allowed: Allowed::Custom("the keys of `host.scheduler` below"),
    rule: Rule::None,
    meaning: "SwiftRDMA's host scheduler loop (§2.3, §4): every `period`, each host that sends for a job reads its signals over the period; a policy whose conditions all hold for `for` consecutive periods fires, and its action reaches the job's QPs on that host `cost` later. A host fires only the policies whose action's job sends from it, and a condition's `job` must send from at least one host of the action's job (a scheduler reads and acts on its own host's QPs only). While the conditions keep holding, the policy fires again every `for` periods. Fired policies go to the `policy_actions` table.",
};

/// Every key of the `host` section, in the order the reference lists them.
pub const KEYS: &[Key] = &[
    PCIE,
    PCIE_BANDWIDTH,
    PCIE_LATENCY,
    DEVICE_PCIE,
    DEVICE_PCIE_BANDWIDTH,
    DEVICE_PCIE_LATENCY,
    REPORT_INTERVAL,
    UAR,
    SCHEDULER,
];

const PAGES: Key = Key {
    name: "pages",
    unit: "integer",
    default: "16",
    allowed: Allowed::Int { min: 1, max: 4096 },
    rule: Rule::None,
    meaning: "UAR pages per device context: 16 on a ConnectX-6 (SwiftRDMA §3.1).",
};
const PLACEMENT: Key = Key {
    name: "placement",
    unit: "string",
    default: "round-robin",
    allowed: Allowed::OneOf(&["round-robin", "random", "per-core", "single"]),
    rule: Rule::None,
    meaning: "How a new QP is bound: in creation order or at random (the drivers' defaults SwiftRDMA names), UAR-aware (`per-core`: core *c* on page *c* mod pages, a resource domain per core), or all on one page (the worst case).",
};
const POST: Key = Key {
    name: "post",
    unit: "duration",
    default: "150ns",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::None,
    meaning: "A core's work per post before it rings (building the WQE), outside the lock. rdmalab's assumption (~5 M posts/s per core).",
};
const DOORBELL: Key = Key {
    name: "doorbell",
    unit: "duration",
    default: "40ns",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::None,
    meaning: "The doorbell's hold on its page (lock, MMIO write, unlock). rdmalab's assumption.",
};
const BOUNCE: Key = Key {
    name: "bounce",
    unit: "duration",
    default: "66ns",
    allowed: Allowed::Duration { min_ps: 0 },
    rule: Rule::None,
    meaning: "Extra hold when the page's lock moves between cores. **Fitted**: 16 cores on one page keep 1/2.22 of a page per core, SwiftRDMA Fig. 4's gain (docs/swiftrdma.md).",
};

/// The keys of `host.uar`.
pub const UAR_KEYS: &[Key] = &[PAGES, PLACEMENT, POST, DOORBELL, BOUNCE];

/// The names a section accepts, for the unknown-key message.
fn names(keys: &[Key]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}

impl HostConfig {
    /// Read the `host` section of scenario `o` (absent: every default).
    pub(crate) fn read(r: &mut Reader, o: &Obj) -> Option<HostConfig> {
        let Some(h) = r.sub(o, "host", &names(KEYS)) else {
            return Some(HostConfig::default());
        };
        let before = r.errs.len();
        let pcie = pcie_link(r, &h, &PCIE);
        let device_pcie = pcie_link(r, &h, &DEVICE_PCIE);
        let report = if h.get(REPORT_INTERVAL.name).is_some() {
            r.key_duration(&h, &REPORT_INTERVAL)
        } else {
            None
        };
        let uar = read_uar(r, &h);
        if r.errs.len() != before {
            return None;
        }
        Some(HostConfig {
            pcie,
            device_pcie,
            report,
            uar: uar?,
        })
    }
}

/// `host.uar`: the UAR pages doorbells go through, and their costs.
fn read_uar(r: &mut Reader, h: &Obj) -> Option<Option<UarConfig>> {
    let Some(u) = r.sub(h, UAR.name, &names(UAR_KEYS)) else {
        return Some(None);
    };
    let pages = r.key_int(&u, &PAGES);
    let placement = r.key_choice(&u, &PLACEMENT).map(|p| match p.as_str() {
        "per-core" => UarPlacement::PerCore,
        "random" => UarPlacement::Random,
        "single" => UarPlacement::Single,
        _ => UarPlacement::RoundRobin,
    });
    let post = r.key_duration(&u, &POST);
    let doorbell = r.key_duration(&u, &DOORBELL);
    let bounce = r.key_duration(&u, &BOUNCE);
    Some(Some(UarConfig {
        pages: pages? as u32,
        placement: placement?,
        post: post?,
        doorbell: doorbell?,
        bounce: bounce?,
    }))
}

/// A PCIe path given as `{name}` (a preset), `{name}_bandwidth` and `{name}_latency`.
fn pcie_link(r: &mut Reader, h: &Obj, preset_key: &Key) -> Option<PcieConfig> {
    let name = preset_key.name;
    let preset = match h.get(name) {
        None => None,
        Some(v) => match v.as_str() {
            // 8, 16, 32 GT/s × 16 lanes × 128/130 encoding.
            Some("gen3x16") => Some(Rate(126_030_769_231)),
            Some("gen4x16") => Some(Rate(252_061_538_462)),
            Some("gen5x16") => Some(Rate(504_123_076_923)),
            _ => {
                r.err(
                    h.key(name),
                    show(v),
                    format!("allowed: gen3x16, gen4x16, gen5x16 (or set {name}_bandwidth)"),
                );
                None
            }
        },
    };
    let bw_key = format!("{name}_bandwidth");
    let wanted = h.get(name).is_some() || h.get(&bw_key).is_some();
    let bw = if wanted {
        r.rate(h, &bw_key, preset)
    } else {
        None
    };
    let latency_key = if name == PCIE.name {
        &PCIE_LATENCY
    } else {
        &DEVICE_PCIE_LATENCY
    };
    if let (false, Some(v)) = (wanted, h.get(latency_key.name)) {
        // Without the link nothing reads over it: the latency would be ignored.
        r.err(
            h.key(latency_key.name),
            show(v),
            format!("only applies with host.{name} or host.{bw_key} (the link it is the read round trip of)"),
        );
        return None;
    }
    let latency = r.key_duration(h, latency_key);
    match (wanted, bw, latency) {
        (true, Some(bandwidth), Some(latency)) => Some(PcieConfig { bandwidth, latency }),
        _ => None,
    }
}

/// `host.scheduler`: the host scheduler loop and its policies; job names
/// are resolved against the workload's `job`s. `host_name` names a
/// workload host (a node index) in refusals.
pub(crate) fn read_scheduler(
    r: &mut Reader,
    o: &Obj,
    w: &Workload,
    n: &NicConfig,
    host_name: &dyn Fn(u32) -> String,
    host_rates: &[Rate],
    tx_time: crate::time::TxTime,
) -> Option<crate::host::policy::SchedulerConfig> {
    use crate::host::policy::{Condition, Policy, PolicyAction, SchedulerConfig, Signal, Test};
    let empty = Map::new();
    let h = match o.get("host") {
        Some(Value::Object(m)) => Obj {
            path: "host".into(),
            map: m,
        },
        _ => Obj {
            path: "host".into(),
            map: &empty,
        },
    };
    let s = r.sub(&h, "scheduler", &["period", "cost", "policies", "intents"])?;
    let period = r.positive_duration(&s, "period", Some(Duration::from_us(20)));
    let cost = r.duration(&s, "cost", Some(Duration::from_us(1)));
    let job_of = |p: &mut Reader, o: &Obj, required: bool| -> Option<u32> {
        match o.get("job") {
            Some(Value::String(j)) => match w.jobs.iter().position(|x| x == j) {
                Some(i) => Some(i as u32),
                None => {
                    let known = if w.jobs.is_empty() {
                        "none (give perftest entries a `job`)".to_string()
                    } else {
                        w.jobs.join(", ")
                    };
                    p.err(
                        o.key("job"),
                        format!("`{j}`"),
                        format!("must name a job of the workload; jobs: {known}"),
                    );
                    None
                }
            },
            Some(v) => {
                p.err(o.key("job"), show(v), "must be a job name");
                None
            }
            None => {
                if required {
                    p.err(
                        o.key("job"),
                        "",
                        "is required here (the job the signal or action is for)",
                    );
                }
                None
            }
        }
    };
    let mut policies = Vec::new();
    let mut named: std::collections::HashMap<String, String> = Default::default();
    for (path, v) in r.list(&s, "policies") {
        let Some(p) = r.obj(v, &path, &["name", "when", "for", "then"]) else {
            continue;
        };
        let name = r.string(&p, "name", None).unwrap_or_default();
        r.table_name(p.key("name"), &name);
        // policy_actions tells the policies apart by name alone.
        if let Some(first) = named.get(&name) {
            r.err(
                p.key("name"),
                format!("`{name}`"),
                format!("already names {first}: give each policy its own name (policy_actions names the policy that fired)"),
            );
        } else if p.get("name").is_some_and(|v| v == "") {
            r.err(
                p.key("name"),
                "``",
                "must be a non-empty name (policy_actions names the policy that fired)",
            );
        } else {
            named.insert(name.clone(), path.clone());
        }
        let periods = r.int(&p, "for", Some(1), 1, 1 << 20);
        let mut when = Vec::new();
        let mut cond_jobs: Vec<(String, u32)> = Vec::new();
        let conds = r.list(&p, "when");
        if conds.is_empty() {
            r.err(
                p.key("when"),
                "",
                "is required: a list of at least one condition",
            );
        }
        for (cpath, cv) in conds {
            let Some(c) = r.obj(cv, &cpath, &["signal", "job", "above", "below", "rising"]) else {
                continue;
            };
            let signal = match c.get("signal") {
                Some(Value::String(x)) => match Signal::parse(x) {
                    Some(sig) => Some(sig),
                    None => {
                        r.err(
                            c.key("signal"),
                            format!("`{x}`"),
                            format!("allowed: {}", Signal::NAMES.join(", ")),
                        );
                        None
                    }
                },
                other => {
                    r.err(
                        c.key("signal"),
                        other.map_or(String::new(), show),
                        format!("is required; allowed: {}", Signal::NAMES.join(", ")),
                    );
                    None
                }
            };
            let Some(signal) = signal else { continue };
            // A host without the model has no such reading: the condition
            // would never hold (with `below`, always hold), silently.
            let needs = match signal {
                Signal::QpcMissRate if n.resources.is_none() => {
                    Some("nic.resources (the QP-context cache whose misses it counts)")
                }
                Signal::DoorbellWaitNs if n.uar.is_none() => {
                    Some("host.uar (the doorbell pages whose lock waits it reads)")
                }
                _ => None,
            };
            if let Some(what) = needs {
                r.err(
                    c.key("signal"),
                    format!("`{}`", Signal::NAMES[signal as usize]),
                    format!("needs {what}"),
                );
                continue;
            }
            let job = job_of(r, &c, signal.per_job());
            if !signal.per_job() && c.get("job").is_some() {
                r.err(
                    c.key("job"),
                    "(set)",
                    format!(
                        "signal `{}` is per host, not per job",
                        Signal::NAMES[signal as usize]
                    ),
                );
            }
            let tests: Vec<&str> = ["above", "below", "rising"]
                .into_iter()
                .filter(|k| c.get(k).is_some())
                .collect();
            if tests.len() != 1 {
                r.err(
                    c.path.clone(),
                    format!("{tests:?}"),
                    "needs exactly one of above: X, below: X, rising: true",
                );
                continue;
            }
            let test = match tests[0] {
                "above" => r
                    .float(&c, "above", None, f64::MIN, f64::MAX, false)
                    .map(Test::Above),
                "below" => r
                    .float(&c, "below", None, f64::MIN, f64::MAX, false)
                    .map(Test::Below),
                _ => {
                    if !r.boolean(&c, "rising", false) {
                        r.err(
                            c.key("rising"),
                            "`false`",
                            "write `rising: true`, or leave the key out",
                        );
                    }
                    Some(Test::Rising)
                }
            };
            // port_utilization is at least 0 and at most one frame more
            // than the period's capacity (host::scheduler::max_port_utilization):
            // a threshold outside that would never hold, silently.
            if let (Signal::PortUtilization, Some(t), Some(p)) = (signal, test, period) {
                let most = host_rates
                    .iter()
                    .map(|&r| crate::host::scheduler::max_port_utilization(r, p, &n.wire, tx_time))
                    .try_fold(0.0f64, |m, b| b.map(|b| m.max(b)))
                    .filter(|_| !host_rates.is_empty());
                match t {
                    Test::Above(x) if most.is_some_and(|most| x >= most) => {
                        r.err(
                            c.key("above"),
                            format!("`{x}`"),
                            format!(
                                "can never hold: port_utilization (bytes sent / what the port can send in a period of {p}) is at most {:.4} here (1, plus one frame counted whole when it starts near the period's end); allowed: below that",
                                most.unwrap_or_default()
                            ),
                        );
                        continue;
                    }
                    Test::Below(x) if x <= 0.0 => {
                        r.err(
                            c.key("below"),
                            format!("`{x}`"),
                            "can never hold: port_utilization is never below 0; allowed: a number greater than 0",
                        );
                        continue;
                    }
                    _ => {}
                }
            }
            if let Some(test) = test {
                when.push(Condition { signal, job, test });
                if let Some(j) = job {
                    cond_jobs.push((c.key("job"), j));
                }
            }
        }
        let then = match p.get("then") {
            Some(t) => r.obj(
                t,
                &p.key("then"),
                &["set_class", "set_share", "set_qps", "set_uar", "job"],
            ),
            None => {
                r.err(
                    p.key("then"),
                    "",
                    "is required: one action and its job, {set_class: C, job: J}, {set_share: N, job: J}, {set_qps: K, job: J} or {set_uar: PLACEMENT, job: J}",
                );
                None
            }
        };
        let action = then.and_then(|t| {
            let job = job_of(r, &t, true)?;
            let given: Vec<&str> = ["set_class", "set_share", "set_qps", "set_uar"].into_iter().filter(|k| t.get(k).is_some()).collect();
            // Actions the NIC would ignore: the firing would be recorded in
            // policy_actions with nothing done.
            if given == ["set_uar"] && n.uar.is_none() {
                r.err(t.key("set_uar"), t.get("set_uar").map_or(String::new(), show), "needs host.uar: without its doorbell pages there is nothing to move the job's QPs between");
                return None;
            }
            if given == ["set_share"] && matches!(n.qp_scheduler, crate::nic::QpScheduler::Wqe { .. } | crate::nic::QpScheduler::Ns3Hpcc) {
                r.err(t.key("set_share"), t.get("set_share").map_or(String::new(), show), "needs nic.qp_scheduler `packet` or `srnic`: a `wqe` turn is set by turn_quantum, and `ns3-hpcc` sends one packet per turn");
                return None;
            }
            match given.as_slice() {
                ["set_class"] => r.int(&t, "set_class", None, 1, 7).map(|c| PolicyAction::SetClass { job, class: c as u8 }),
                ["set_share"] => r.int(&t, "set_share", None, 1, 1 << 16).map(|n| PolicyAction::SetShare { job, packets: n as u32 }),
                ["set_qps"] => r.int(&t, "set_qps", None, 1, 1 << 20).map(|n| PolicyAction::SetQps { job, qps: n as u32 }),
                ["set_uar"] => r
                    .choice(&t, "set_uar", crate::host::UarPlacement::NAMES, None)
                    .and_then(|p| crate::host::UarPlacement::parse(&p))
                    .map(|placement| PolicyAction::SetUar { job, placement }),
                _ => {
                    r.err(t.path.clone(), format!("{given:?}"), "needs exactly one action: set_class (1 to 7), set_share (1 to 65536), set_qps (1 or more) or set_uar (a UAR placement)");
                    None
                }
            }
        });
        // A host's scheduler reads its own QPs' signals and acts on its
        // own QPs, so a condition on a job that runs on no host of the
        // action's job could never fire where the action acts.
        if let Some(then) = &action {
            let hosts_of = |j: u32| -> Vec<u32> {
                let mut h: Vec<u32> = w
                    .apps
                    .iter()
                    .filter(|a| a.job == Some(j))
                    .map(|a| a.src)
                    .collect();
                h.sort_unstable();
                h.dedup();
                h
            };
            let acted = hosts_of(then.job());
            for (key, j) in &cond_jobs {
                let read = hosts_of(*j);
                if !read.iter().any(|h| acted.contains(h)) {
                    let name = |hs: &[u32]| {
                        hs.iter()
                            .map(|&i| host_name(i))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    r.err(
                        key.clone(),
                        format!("`{}`", w.jobs[*j as usize]),
                        format!(
                            "runs on {}, and the action's job `{}` on {}: each host's scheduler reads and acts on its own QPs only, so the condition's job must send from a host of the action's job",
                            name(&read),
                            w.jobs[then.job() as usize],
                            name(&acted)
                        ),
                    );
                }
            }
        }
        if let (Some(then), Some(periods)) = (action, periods) {
            policies.push(Policy {
                name,
                when,
                periods: periods as u32,
                then,
            });
        }
    }
    if let Some(v) = s.get("intents") {
        let key = s.key("intents");
        for p in intent_policies(r, v, &key, w) {
            if let Some(first) = named.get(&p.name) {
                r.err(
                    first.clone() + ".name",
                    format!("`{}`", p.name),
                    "is the name of an intent policy (intent-ls-JOB, intent-lt-JOB): give the policy another",
                );
            }
            policies.push(p);
        }
    }
    if policies.is_empty() && r.errs.is_empty() {
        r.err(
            s.key("policies"),
            "",
            "is required: a list of at least one policy (or intents, with perftest entries that have an intent)",
        );
    }
    Some(SchedulerConfig {
        period: period?,
        cost: cost?,
        policies,
    })
}

/// `host.scheduler.intents`: `true` or `{ls_p99_us, lt_p99_us, ls_class,
/// lt_class, for}`. Each job with an intent gets SwiftRDMA's policy for
/// it (§4: LS > LT > TS): an LS job moves to `ls_class` once its p99
/// stays above `ls_p99_us` for `for` periods, an LT job to `lt_class`
/// above `lt_p99_us`; a TS job stays where it is.
fn intent_policies(
    r: &mut Reader,
    v: &Value,
    key: &str,
    w: &Workload,
) -> Vec<crate::host::policy::Policy> {
    use crate::host::policy::{Condition, Intent, Policy, PolicyAction, Signal, Test};
    let empty = Map::new();
    let o = match v {
        Value::Bool(true) => Obj {
            path: key.to_string(),
            map: &empty,
        },
        Value::Object(_) => match r.obj(
            v,
            key,
            &["ls_p99_us", "lt_p99_us", "ls_class", "lt_class", "for"],
        ) {
            Some(o) => o,
            None => return Vec::new(),
        },
        other => {
            r.err(
                key.to_string(),
                show(other),
                "must be `true` or a mapping {ls_p99_us, lt_p99_us, ls_class, lt_class, for}",
            );
            return Vec::new();
        }
    };
    let ls_p99 = r.float(&o, "ls_p99_us", Some(20.0), 0.0, 1e9, false);
    let lt_p99 = r.float(&o, "lt_p99_us", Some(50.0), 0.0, 1e9, false);
    let ls_class = r.int(&o, "ls_class", Some(6), 1, 7);
    let lt_class = r.int(&o, "lt_class", Some(5), 1, 7);
    let periods = r.int(&o, "for", Some(2), 1, 1 << 20);
    let (Some(ls_p99), Some(lt_p99), Some(ls_class), Some(lt_class), Some(periods)) =
        (ls_p99, lt_p99, ls_class, lt_class, periods)
    else {
        return Vec::new();
    };
    if ls_class <= lt_class {
        r.err(
            format!("{key}.ls_class"),
            format!("`{ls_class}`"),
            format!("must be above lt_class ({lt_class}): LS > LT > TS"),
        );
    }
    let mut out = Vec::new();
    for (j, intent) in w.job_intents.iter().enumerate() {
        let (p99, class, name) = match intent {
            Some(Intent::LatencySensitive) => (ls_p99, ls_class, "ls"),
            Some(Intent::Balanced) => (lt_p99, lt_class, "lt"),
            _ => continue,
        };
        out.push(Policy {
            name: format!("intent-{name}-{}", w.jobs[j]),
            when: vec![Condition {
                signal: Signal::P99LatencyUs,
                job: Some(j as u32),
                test: Test::Above(p99),
            }],
            periods: periods as u32,
            then: PolicyAction::SetClass {
                job: j as u32,
                class: class as u8,
            },
        });
    }
    if out.is_empty() {
        r.err(key.to_string(), show(v), "no job has an ls or lt intent: give perftest entries `intent: ls` or `intent: lt` (and a `job`)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// The NIC set-up (which holds what `host` sets) of a scenario whose
    /// `host` section is `host` (JSON members, no braces).
    fn with_host(host: &str) -> Result<String, String> {
        let json = format!(
            r#"{{"duration": "1ms",
                "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "64KB"}}]}},
                "host": {{{host}}}}}"#
        );
        Scenario::from_json_str(&json)
            .map(|s| format!("{:?}", s.nic))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn writing_a_declared_default_changes_nothing() {
        let cases = UAR_KEYS
            .iter()
            .map(|k| {
                (
                    r#""uar": {}"#.to_string(),
                    format!(r#""uar": {{"{}": {}}}"#, k.name, json(k)),
                )
            })
            .chain([PCIE_LATENCY, DEVICE_PCIE_LATENCY].iter().map(|k| {
                let link = k.name.trim_end_matches("_latency");
                (
                    format!(r#""{link}": "gen4x16""#),
                    format!(r#""{link}": "gen4x16", "{}": {}"#, k.name, json(k)),
                )
            }));
        for (left_out, written) in cases {
            let a = with_host(&left_out).unwrap();
            let b = with_host(&written).unwrap_or_else(|e| panic!("{written}: {e}"));
            assert_eq!(a, b, "{written}");
        }
    }

    /// A key's default as a scenario writes it.
    fn json(k: &Key) -> String {
        match k.allowed {
            Allowed::Int { .. } => k.default.to_string(),
            _ => format!(r#""{}""#, k.default),
        }
    }

    #[test]
    fn every_key_is_declared_once_and_unknown_keys_are_refused_naming_them() {
        for keys in [KEYS, UAR_KEYS] {
            let mut n = names(keys);
            n.sort_unstable();
            n.dedup();
            assert_eq!(n.len(), keys.len());
        }
        let e = with_host(r#""no_such_key": 1"#).unwrap_err();
        assert!(e.contains(&names(KEYS).join(", ")), "{e}");
        let e = with_host(r#""uar": {"no_such_key": 1}"#).unwrap_err();
        assert!(e.contains(&names(UAR_KEYS).join(", ")), "{e}");
    }

    #[test]
    fn a_latency_without_its_link_is_refused() {
        let e = with_host(r#""device_pcie_latency": "1us""#).unwrap_err();
        assert!(
            e.contains("host.device_pcie_latency")
                && e.contains("only applies with host.device_pcie"),
            "{e}"
        );
    }
}
