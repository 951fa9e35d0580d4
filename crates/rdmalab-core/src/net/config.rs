//! The `switch` section of a scenario: every key the switch model reads,
//! declared once (unit, default, allowed values, rules, meaning and
//! source), and the reading of `switch` (and of each `switches[]` entry's
//! buffer, PFC and ECN) into a [`SwitchConfig`]. Which switches a
//! `switches[]` entry names is the scenario's to read: it spans the
//! topology.

use super::buffer::{BufferConfig, EcnConfig};
use super::routing::EcmpHash;
use super::switch::{EgressSharing, SwitchConfig, SwitchLocal};
use super::topology::{NodeKind, Topology};
use crate::config::{show, units, Allowed, Key, Obj, Reader, Rule, NONE, REQUIRED};
use crate::time::Rate;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

const BUFFER: Key = Key {
    name: "buffer",
    unit: "size",
    default: "32MiB",
    allowed: Allowed::Size { min: 0, max: units::MAX_SIZE_BYTES },
    rule: Rule::None,
    meaning: "Shared packet buffer of each switch. ns-3 HPCC simulator `run.py` uses `BUFFER_SIZE` = 16 × bw/50, which is 32 at 100 Gb/s.",
};
const LOSSY_EGRESS_ALPHA: Key = Key {
    name: "lossy_egress_alpha",
    unit: "number",
    default: "1.0",
    allowed: Allowed::Number { min: 0.0, max: 1024.0, min_open: true },
    rule: Rule::None,
    meaning: "Used only when `pfc.enabled` is false. This is the Choudhury–Hahne dynamic threshold: an egress queue may hold up to α × (buffer − bytes in use). A packet is dropped when the buffer is full or its queue exceeds that limit. rdmalab choice: with α = 1, one congested queue can take up to half the buffer.",
};
const INT: Key = Key {
    name: "int",
    unit: "boolean",
    default: "false",
    allowed: Allowed::Bool,
    rule: Rule::None,
    meaning: "When true, every switch egress pushes an INT hop record (queue length, bytes sent, timestamp, link rate) onto data packets. rdmalab choice: off, because DCQCN does not use INT.",
};
const INT_MULTI: Key = Key {
    name: "int_multi",
    unit: "integer",
    default: NONE,
    allowed: Allowed::Int { min: 1, max: 1 << 16 },
    rule: Rule::OnlyWith { key: "int", values: &["true"] },
    meaning: "Quantise INT fields as the ns-3 HPCC simulator's 8-byte hop record with INT_MULTI = m: queue bytes in units of 80·m B, transmitted bytes in 128·m B, timestamps in whole ns (the run.py `hp` setting at 100 Gb/s is 4). `none`: exact values.",
};
const SCHEDULING: Key = Key {
    name: "scheduling",
    unit: "string",
    default: "round-robin",
    allowed: Allowed::OneOf(&["round-robin", "strict-priority"]),
    rule: Rule::None,
    meaning: "How an egress port picks among its data classes (the control class always goes first). `round-robin`: one packet per non-empty, unpaused class in turn, as the ns-3 HPCC switch. `strict-priority`: the highest non-empty, unpaused class first (802.1Q strict priority; Homa's network priorities, `cc: homa` with `priorities`).",
};
const ECMP: Key = Key {
    name: "ecmp",
    unit: "string",
    default: "rdmalab",
    allowed: Allowed::OneOf(&["rdmalab", "ns3-hpcc"]),
    rule: Rule::None,
    meaning: "How a switch picks among equal-cost ports. `rdmalab`: a 64-bit hash of (source, destination, UDP source port) under a per-switch seed derived from the run's `seed`. `ns3-hpcc`: the ns-3 HPCC simulator's switch: MurmurHash3 (x86, 32-bit) of (source IP, destination IP, UDP sport \\| dport << 16) with the switch's node id as seed (IPs as ns-3 numbers nodes; ACKs hash their flow's ports swapped), over next hops in the order its `third.cc` installs them (its breadth-first search from each host, neighbours by address: hosts by increasing id, then switches by decreasing id; parallel links count once). On the 320-host fat tree this reproduces every routing table of an ns-3 build, so each flow takes ns-3's path. `rdmalab hpcc convert` sets it.",
};
const REROUTE_AFTER: Key = Key {
    name: "reroute_after",
    unit: "duration or `never`",
    default: "never",
    allowed: Allowed::Custom("≥ 0, or `never`"),
    rule: Rule::None,
    meaning: "How long after a link between two switches goes down (or comes back up) every switch's ECMP table is recomputed over the links up then, and flows' remembered paths are forgotten: the routing protocol's reconvergence time. Until then frames hashed onto the down link are lost and recovered by the transport. `never`: tables never change. A host's own link has no way around it and triggers nothing. The ns-3 HPCC simulator's `LINK_DOWN` recomputes at once (`rdmalab hpcc convert` sets `0s`). rdmalab choice for the default: no rerouting, as before this key existed; real fabrics take from ~ms (BGP with BFD) to seconds.",
};
const EGRESS_SHARING: Key = Key {
    name: "egress_sharing",
    unit: "string",
    default: "fifo",
    allowed: Allowed::OneOf(&["fifo", "input-port"]),
    rule: Rule::None,
    meaning: "How an egress queue of one data class shares its port between the frames waiting in it (the control class is always first come, first served). `fifo`: first come, first served, so each input gets the port in proportion to what it sends (the ns-3 HPCC simulator's switch, htsim's FIFO queue). `input-port`: round robin over the ingress ports that have a frame queued, one frame a turn, FIFO within each: an input port carrying one flow gets as much as one carrying eight (a switch that arbitrates per input, as the port sharing the CC-attacks paper's testbed shows, §IV). Choosing walks the queue, a cost per frame in its length. rdmalab choice for the default: `fifo`, which keeps the ns-3 agreement.",
};
const PFC: Key = Key {
    name: "pfc",
    unit: "mapping",
    default: "{}",
    allowed: Allowed::Custom("the keys of `switch.pfc` below"),
    rule: Rule::None,
    meaning: "Lossless mode and its buffer thresholds.",
};
const ECN: Key = Key {
    name: "ecn",
    unit: "mapping",
    default: "{}",
    allowed: Allowed::Custom("the keys of `switch.ecn` below"),
    rule: Rule::None,
    meaning: "ECN marking thresholds.",
};

/// Every key of the `switch` section, in the order the reference lists them.
pub const KEYS: &[Key] = &[
    BUFFER,
    LOSSY_EGRESS_ALPHA,
    INT,
    INT_MULTI,
    SCHEDULING,
    ECMP,
    REROUTE_AFTER,
    EGRESS_SHARING,
    PFC,
    ECN,
];

const PFC_ENABLED: Key = Key {
    name: "enabled",
    unit: "boolean",
    default: "true",
    allowed: Allowed::Bool,
    rule: Rule::None,
    meaning: "`true` gives the lossless mode described above. `false` gives lossy mode (see `lossy_egress_alpha`). rdmalab choice: a lossless fabric, as the ns-3 HPCC simulator models.",
};
const PFC_ALPHA: Key = Key {
    name: "alpha",
    unit: "number",
    default: "0.125",
    allowed: Allowed::Number { min: 0.0, max: 1024.0, min_open: true },
    rule: Rule::None,
    meaning: "Dynamic threshold factor α. ns-3 HPCC uses 1/8 at the NIC rate. As in ns-3, α doubles for each doubling of the port rate above the first host's link rate: α × 2^⌊log2(port rate / NIC rate)⌋.",
};
const PFC_RESERVE: Key = Key {
    name: "reserve",
    unit: "size",
    default: "4KiB",
    allowed: Allowed::Size {
        min: 0,
        max: units::MAX_SIZE_BYTES,
    },
    rule: Rule::None,
    meaning: "Reserve per (ingress port, class). ns-3 HPCC `switch-mmu.cc`: `4 * 1024`.",
};
const PFC_RESUME_OFFSET: Key = Key {
    name: "resume_offset",
    unit: "size",
    default: "3KiB",
    allowed: Allowed::Size { min: 0, max: units::MAX_SIZE_BYTES },
    rule: Rule::None,
    meaning: "RESUME once shared use is this far below the threshold. ns-3 HPCC `switch-mmu.cc`: `3 * 1024`.",
};
const PFC_HEADROOM: Key = Key {
    name: "headroom",
    unit: "size or `auto`",
    default: "auto",
    allowed: Allowed::Custom("≥ 0B, or `auto`"),
    rule: Rule::None,
    meaning: "Headroom per port. `auto` = 3 × rate × delay of the port's link (at least 1 B), as in ns-3 HPCC; that is 37.5 KB for 100 Gb/s and 1 µs. A size applies to every port. A port whose headroom is below what can still arrive after its PAUSE (two full frames and the link's round trip; `auto` falls short on slow, short links with large frames, such as 10 Gb/s, 725 ns and 2 KB) may drop frames under PFC: the scenario is warned of, naming the port and the size that keeps it lossless.",
};

/// The keys of `switch.pfc`.
pub const PFC_KEYS: &[Key] = &[
    PFC_ENABLED,
    PFC_ALPHA,
    PFC_RESERVE,
    PFC_RESUME_OFFSET,
    PFC_HEADROOM,
];

const ECN_ENABLED: Key = Key {
    name: "enabled",
    unit: "boolean",
    default: "true",
    allowed: Allowed::Bool,
    rule: Rule::None,
    meaning: "rdmalab choice: on, because DCQCN reacts to ECN marks.",
};
const ECN_THRESHOLDS: Key = Key {
    name: "thresholds",
    unit: "list",
    default: NONE,
    allowed: Allowed::Custom("list of mappings with the keys below"),
    rule: Rule::None,
    meaning: "Thresholds for links of a given rate. A link whose rate matches no entry uses the scaled default: Kmin 100 KB and Kmax 400 KB per 25 Gb/s, Pmax 0.2 (ns-3 HPCC simulator `run.py`, \"from Alibaba production\"). At 100 Gb/s that is kmin 400 KB, kmax 1.6 MB, pmax 0.2.",
};

/// The keys of `switch.ecn`.
pub const ECN_KEYS: &[Key] = &[ECN_ENABLED, ECN_THRESHOLDS];

const THRESHOLD_RATE: Key = Key {
    name: "rate",
    unit: "rate",
    default: REQUIRED,
    allowed: Allowed::Custom("the rate of a switch port (of the entry's switches, in `switches[]`); one entry per rate"),
    rule: Rule::None,
    meaning: "The entry applies to links whose rate equals this exactly. A rate no such port runs at is refused, and so is a second entry for a rate: either would never apply.",
};
const THRESHOLD_KMIN: Key = Key {
    name: "kmin",
    unit: "size",
    default: REQUIRED,
    allowed: Allowed::Size {
        min: 0,
        max: units::MAX_SIZE_BYTES,
    },
    rule: Rule::None,
    meaning: "Never mark at or below this many queued bytes.",
};
const THRESHOLD_KMAX: Key = Key {
    name: "kmax",
    unit: "size",
    default: REQUIRED,
    allowed: Allowed::Custom("≥ `kmin`"),
    rule: Rule::None,
    meaning: "Always mark above this many queued bytes.",
};
const THRESHOLD_PMAX: Key = Key {
    name: "pmax",
    unit: "number",
    default: REQUIRED,
    allowed: Allowed::Number {
        min: 0.0,
        max: 1.0,
        min_open: false,
    },
    rule: Rule::None,
    meaning: "Marking probability as the queue approaches `kmax`.",
};

/// The keys of each `switch.ecn.thresholds[]` entry.
pub const THRESHOLD_KEYS: &[Key] = &[
    THRESHOLD_RATE,
    THRESHOLD_KMIN,
    THRESHOLD_KMAX,
    THRESHOLD_PMAX,
];

/// The key names of `keys`, for an unknown-key message.
fn names(keys: &[Key]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}

/// The sub-mapping `k` of `s` (absent: empty), checked against `keys`.
fn section<'a>(
    r: &mut Reader,
    s: &Obj<'a>,
    k: &Key,
    keys: &[Key],
    empty: &'a Map<String, Value>,
) -> Option<Obj<'a>> {
    let path = s.key(k.name);
    match s.get(k.name) {
        Some(v) => r.obj(v, &path, &names(keys)),
        None => Some(Obj { path, map: empty }),
    }
}

impl SwitchConfig {
    /// Read the `switch` section of scenario `o` (absent: every default).
    /// `t`: the topology, when it could be read, whose switch ports an ECN
    /// threshold's rate must match.
    pub(crate) fn read(r: &mut Reader, o: &Obj, t: Option<&Topology>) -> Option<SwitchConfig> {
        let empty = Map::new();
        let s = match o.get("switch") {
            Some(v) => r.obj(v, "switch", &names(KEYS))?,
            None => Obj {
                path: "switch".into(),
                map: &empty,
            },
        };
        r.check_rules(&s, KEYS);
        let int_enabled = r.key_bool(&s, &INT);
        let int_multi = match s.get(INT_MULTI.name) {
            Some(_) => r.key_int(&s, &INT_MULTI).map(|m| Some(m as u32)),
            None => Some(None),
        };
        let strict_priority = r
            .key_choice(&s, &SCHEDULING)
            .map(|c| c == "strict-priority");
        let ecmp = r.key_choice(&s, &ECMP).map(|c| match c.as_str() {
            "ns3-hpcc" => EcmpHash::Ns3Hpcc,
            _ => EcmpHash::Rdmalab,
        });
        let reroute_after = match s.get(REROUTE_AFTER.name) {
            None => Some(None),
            Some(Value::String(x)) if x == "never" => Some(None),
            Some(v) => match v.as_str().map(units::parse_duration) {
                Some(Ok(d)) => Some(Some(d)),
                _ => {
                    r.err(
                        "switch.reroute_after",
                        show(v),
                        "allowed: a duration such as `1ms` (0s: at once), or `never`",
                    );
                    None
                }
            },
        };
        let egress_sharing = r.key_choice(&s, &EGRESS_SHARING).map(|c| match c.as_str() {
            "input-port" => EgressSharing::InputPort,
            _ => EgressSharing::Fifo,
        });
        let rates = t.map(|t| port_rates(t, |n| t.nodes[n as usize].kind == NodeKind::Switch));
        let ports = rates.as_deref().map(|r| ("the fabric's switches", r));
        let local = SwitchLocal::read(r, &s, &SwitchLocal::declared(), ports)?;
        Some(SwitchConfig {
            buffer: local.buffer,
            ecn_enabled: local.ecn_enabled,
            ecn_by_rate: local.ecn_by_rate,
            int_enabled,
            int_multi: int_multi?,
            ecmp: ecmp?,
            strict_priority: strict_priority?,
            per_switch: Vec::new(),
            reroute_after: reroute_after?,
            egress_sharing: egress_sharing?,
        })
    }
}

impl SwitchLocal {
    /// A switch's buffer, PFC and ECN as the declarations' defaults give them.
    fn declared() -> SwitchLocal {
        SwitchLocal {
            buffer: BufferConfig {
                size_bytes: BUFFER.default_size(),
                pfc_enabled: PFC_ENABLED.default == "true",
                pfc_alpha: PFC_ALPHA.default_number(),
                reserve_bytes: PFC_RESERVE.default_size(),
                resume_offset_bytes: PFC_RESUME_OFFSET.default_size(),
                headroom_bytes: None,
                egress_alpha: LOSSY_EGRESS_ALPHA.default_number(),
                pfc_alpha_reference_rate: None,
            },
            ecn_enabled: ECN_ENABLED.default == "true",
            ecn_by_rate: Vec::new(),
        }
    }

    /// A switch's buffer, PFC and ECN settings from `s` (`switch` or a
    /// `switches[]` entry), each key not given taken from `base`. `ports`:
    /// whose ports these are and their rates, which an ECN threshold must
    /// name (`None` when the topology is unknown).
    pub(crate) fn read(
        r: &mut Reader,
        s: &Obj,
        base: &SwitchLocal,
        ports: Option<(&str, &[Rate])>,
    ) -> Option<SwitchLocal> {
        let b = &base.buffer;
        let size = r.bytes(s, BUFFER.name, Some(b.size_bytes));
        let Allowed::Number { min, max, min_open } = LOSSY_EGRESS_ALPHA.allowed else {
            unreachable!()
        };
        let egress_alpha = r.float(
            s,
            LOSSY_EGRESS_ALPHA.name,
            Some(b.egress_alpha),
            min,
            max,
            min_open,
        );
        let pfc_empty = Map::new();
        let pfc = section(r, s, &PFC, PFC_KEYS, &pfc_empty)?;
        let pfc_enabled = r.boolean(&pfc, PFC_ENABLED.name, b.pfc_enabled);
        let Allowed::Number { min, max, min_open } = PFC_ALPHA.allowed else {
            unreachable!()
        };
        let alpha = r.float(&pfc, PFC_ALPHA.name, Some(b.pfc_alpha), min, max, min_open);
        let reserve = r.bytes(&pfc, PFC_RESERVE.name, Some(b.reserve_bytes));
        let resume = r.bytes(&pfc, PFC_RESUME_OFFSET.name, Some(b.resume_offset_bytes));
        let headroom = match pfc.get(PFC_HEADROOM.name) {
            None => Some(b.headroom_bytes),
            Some(Value::String(x)) if x == "auto" => Some(None),
            Some(_) => r.bytes(&pfc, PFC_HEADROOM.name, None).map(Some),
        };
        let ecn_empty = Map::new();
        let ecn = section(r, s, &ECN, ECN_KEYS, &ecn_empty)?;
        let ecn_enabled = r.boolean(&ecn, ECN_ENABLED.name, base.ecn_enabled);
        let by_rate = match ecn.get(ECN_THRESHOLDS.name) {
            Some(tv) => thresholds(r, &ecn, tv, ports),
            None => base.ecn_by_rate.clone(),
        };
        Some(SwitchLocal {
            buffer: BufferConfig {
                size_bytes: size?,
                pfc_enabled,
                pfc_alpha: alpha?,
                reserve_bytes: reserve?,
                resume_offset_bytes: resume?,
                headroom_bytes: headroom?,
                egress_alpha: egress_alpha?,
                pfc_alpha_reference_rate: b.pfc_alpha_reference_rate,
            },
            ecn_enabled,
            ecn_by_rate: by_rate,
        })
    }
}

/// `ecn.thresholds`: one entry per port rate.
fn thresholds(
    r: &mut Reader,
    ecn: &Obj,
    tv: &Value,
    ports: Option<(&str, &[Rate])>,
) -> Vec<(Rate, EcnConfig)> {
    let list_path = ecn.key(ECN_THRESHOLDS.name);
    let Some(list) = tv.as_array() else {
        r.err(
            list_path,
            show(tv),
            "must be a list of {rate, kmin, kmax, pmax}",
        );
        return Vec::new();
    };
    let mut by_rate = Vec::new();
    // A port takes the first entry for its rate: a later one for the same
    // rate would never apply.
    let mut first_of: BTreeMap<Rate, usize> = BTreeMap::new();
    for (i, item) in list.iter().enumerate() {
        let path = format!("{list_path}[{i}]");
        let Some(to) = r.obj(item, &path, &names(THRESHOLD_KEYS)) else {
            continue;
        };
        let rate = r.rate(&to, THRESHOLD_RATE.name, None);
        if let (Some(rt), Some((whose, rates))) = (rate, ports) {
            ecn_rate_used(r, &to, rt, whose, rates);
        }
        if let Some(rt) = rate {
            if let Some(&j) = first_of.get(&rt) {
                r.err(
                    to.key("rate"),
                    to.get("rate").map(show).unwrap_or_default(),
                    format!(
                        "{list_path}[{j}] is for this rate already, and a port uses only one; allowed: one entry per rate"
                    ),
                );
            } else {
                first_of.insert(rt, i);
            }
        }
        let kmin = r.key_size(&to, &THRESHOLD_KMIN);
        let kmax = r.bytes(&to, THRESHOLD_KMAX.name, None);
        let pmax = r.key_number(&to, &THRESHOLD_PMAX);
        if let (Some(a), Some(b)) = (kmin, kmax) {
            if b < a {
                r.err(
                    format!("{path}.kmax"),
                    format!("`{b}B`"),
                    format!("must be at least kmin ({a}B)"),
                );
            }
        }
        if let (Some(rt), Some(a), Some(b), Some(p)) = (rate, kmin, kmax, pmax) {
            by_rate.push((
                rt,
                EcnConfig {
                    kmin_bytes: a,
                    kmax_bytes: b,
                    pmax: p,
                },
            ));
        }
    }
    by_rate
}

/// Refuse an ECN threshold for a rate no port of these switches runs at: it
/// would never apply, and the scaled default would mark instead (most
/// likely a typo, 25Gbps for 100Gbps).
fn ecn_rate_used(r: &mut Reader, to: &Obj, rate: Rate, whose: &str, rates: &[Rate]) {
    if rates.contains(&rate) {
        return;
    }
    let list: Vec<String> = rates.iter().map(|r| r.to_string()).collect();
    r.err(
        to.key("rate"),
        to.get("rate").map(show).unwrap_or_default(),
        format!(
            "no port of {whose} runs at this rate, so the entry would never apply; allowed: a rate of their ports: {}",
            list.join(", ")
        ),
    );
}

/// The rates of the links with an end at a node `at` picks (its egress
/// ports), in order and each once: the rates an ECN threshold can match.
pub(crate) fn port_rates(t: &Topology, at: impl Fn(u32) -> bool) -> Vec<Rate> {
    let rates: std::collections::BTreeSet<Rate> = t
        .links
        .iter()
        .filter(|l| at(l.a) || at(l.b))
        .map(|l| l.rate)
        .collect();
    rates.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// A scenario whose `switch` section is `switch` (JSON members, no braces).
    fn switch_of(switch: &str) -> Result<SwitchConfig, String> {
        let json = format!(
            r#"{{"duration": "1ms",
                "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "64KB"}}]}},
                "switch": {{{switch}}}}}"#
        );
        Scenario::from_json_str(&json)
            .map(|s| s.switch)
            .map_err(|e| e.to_string())
    }

    /// `key: default` as a scenario writes it, or `None` when the default is
    /// no value (nothing to write).
    fn written(k: &Key) -> Option<String> {
        match (k.default, k.allowed) {
            (NONE | REQUIRED, _) => None,
            (d, Allowed::Bool | Allowed::Int { .. } | Allowed::Number { .. }) => Some(d.into()),
            ("{}", _) => Some("{}".into()),
            (d, _) => Some(format!(r#""{d}""#)),
        }
        .map(|v| format!(r#""{}": {v}"#, k.name))
    }

    #[test]
    fn writing_a_declared_default_changes_nothing() {
        let left_out = format!("{:?}", switch_of("").unwrap());
        let mut checked = 0;
        for (within, keys) in [("", KEYS), ("pfc", PFC_KEYS), ("ecn", ECN_KEYS)] {
            for k in keys {
                let Some(kv) = written(k) else { continue };
                let member = if within.is_empty() {
                    kv
                } else {
                    format!(r#""{within}": {{{kv}}}"#)
                };
                let got = switch_of(&member)
                    .unwrap_or_else(|e| panic!("{member}: the declared default is refused: {e}"));
                assert_eq!(format!("{got:?}"), left_out, "{member}");
                checked += 1;
            }
        }
        assert_eq!(checked, 15, "every key with a default was written");
    }

    #[test]
    fn refusals_name_the_declarations_range() {
        let e = switch_of(r#""lossy_egress_alpha": 0"#).unwrap_err();
        assert!(e.contains("switch.lossy_egress_alpha: `0` — allowed: a number greater than 0 and at most 1024"), "{e}");
        let e = switch_of(r#""ecn": {"thresholds": [{"rate": "100Gbps", "kmin": "5KB", "kmax": "200KB", "pmax": 2}]}"#)
            .unwrap_err();
        assert!(
            e.contains(
                "switch.ecn.thresholds[0].pmax: `2` — allowed: a number at least 0 and at most 1"
            ),
            "{e}"
        );
        let e = switch_of(r#""pfc": {"bogus": 1}"#).unwrap_err();
        assert!(
            e.contains("allowed here: enabled, alpha, reserve, resume_offset, headroom"),
            "{e}"
        );
    }
}
