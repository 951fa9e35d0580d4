//! The `host` section of a scenario: the host's PCIe paths, its reports to
//! the controllers and its doorbells, each key declared once ([`KEYS`],
//! [`UAR_KEYS`]) and read into a [`HostConfig`]. `host.scheduler` names the
//! workload's jobs, so the scenario reads it once the workload is known
//! (`scenario::Parser::scheduler`); its key is declared here with the rest.

use super::{UarConfig, UarPlacement};
use crate::config::{show, Allowed, Key, Obj, Reader, Rule, NONE};
use crate::nic::PcieConfig;
use crate::time::{Duration, Rate};

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
            .map(|k| (r#""uar": {}"#.to_string(), format!(r#""uar": {{"{}": {}}}"#, k.name, json(k))))
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
        assert!(e.contains("host.device_pcie_latency") && e.contains("only applies with host.device_pcie"), "{e}");
    }
}
