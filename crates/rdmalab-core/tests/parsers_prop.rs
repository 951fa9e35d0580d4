//! Property-based tests of everything the core parses (issue 15): unit
//! strings, ns-3 HPCC topology files, CSV flow lists and whole scenarios.
//! Whatever the input, each parser returns a value or an error naming where
//! the problem is; it never panics, never loops, and a value it returns is
//! within the documented bounds. Inputs are grown from valid ones with
//! troublesome pieces, so most reach deep into the checks.

use proptest::prelude::*;
use rdmalab_core::net::topology::Topology;
use rdmalab_core::scenario::units::{self, MAX_DURATION_PS, MAX_RATE_BPS, MAX_SIZE_BYTES};
use rdmalab_core::scenario::Scenario;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("RDMALAB_PROPERTY_EXAMPLES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Numbers as people (and fuzzers) write them.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| format!("{x}")),
        Just("1e400".to_string()),
        Just("-0".to_string()),
        Just(".5".to_string()),
        Just("1.".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        "[0-9eE.+-]{0,12}",
    ]
}

fn unit() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("".to_string()),
        prop::sample::select(vec![
            "B", "KB", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "bps", "Kbps", "Gbps",
            "Tbps", "Gb/s", "ps", "ns", "us", "µs", "ms", "s", "x", " Gbps", "e", "E5",
        ])
        .prop_map(str::to_string),
        "[a-zA-Zµ/ ]{0,6}",
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn unit_strings_parse_within_bounds_or_are_refused(n in number(), u in unit()) {
        let s = format!("{n}{u}");
        if let Ok(b) = units::parse_bytes(&s) {
            prop_assert!(b <= MAX_SIZE_BYTES, "{s} -> {b}");
        }
        if let Ok(r) = units::parse_rate(&s) {
            prop_assert!(r.bps() <= MAX_RATE_BPS, "{s} -> {r}");
        }
        if let Ok(d) = units::parse_duration(&s) {
            prop_assert!(d.ps() <= MAX_DURATION_PS, "{s} -> {d}");
        }
        for e in [units::parse_bytes(&s).err(), units::parse_rate(&s).err(), units::parse_duration(&s).err()]
            .into_iter()
            .flatten()
        {
            prop_assert!(e.contains(&s) || e.contains(s.trim()), "the message quotes the value: {e}");
        }
    }

    /// An ns-3 topology file from valid and broken lines.
    #[test]
    fn hpcc_topology_files_parse_or_are_refused(
        head in prop_oneof![
            Just("3 1 2".to_string()),
            (number(), number(), number()).prop_map(|(a, b, c)| format!("{a} {b} {c}")),
            Just("4000000000 1 1".to_string()),
            Just("".to_string()),
        ],
        switches in prop_oneof![Just("2".to_string()), number(), Just("0 1 2 3".to_string())],
        links in prop::collection::vec(
            prop_oneof![
                Just("0 2 100Gbps 1us 0".to_string()),
                Just("1 2 100Gbps 0.001ms 0.01".to_string()),
                (number(), number(), number(), unit(), number(), unit(), number())
                    .prop_map(|(a, b, r, ru, d, du, e)| format!("{a} {b} {r}{ru} {d}{du} {e}")),
            ],
            0..4,
        ),
    ) {
        let text = format!("{head}\n{switches}\n{}\n", links.join("\n"));
        let t0 = std::time::Instant::now();
        if let Err(e) = Topology::from_hpcc_file(&text) {
            prop_assert!(!e.is_empty());
        }
        prop_assert!(t0.elapsed().as_secs() < 5, "slow on {text:?}");
    }

    /// A CSV flow list (workload.flows_csv) from valid and broken rows.
    #[test]
    fn csv_flow_lists_are_read_or_refused_naming_the_line(
        header in prop_oneof![
            Just("src,dst,size,start".to_string()),
            Just("src,dst,size".to_string()),
            Just("dst,src,size,start,verb,tenant,dport".to_string()),
            Just("a,b".to_string()),
            Just("".to_string()),
        ],
        rows in prop::collection::vec(
            prop_oneof![
                Just("0,1,1KB,0us".to_string()),
                Just("h0,h2,64KB,1us".to_string()),
                (number(), number(), number(), unit(), number(), unit())
                    .prop_map(|(a, b, s, su, t, tu)| format!("{a},{b},{s}{su},{t}{tu}")),
                "[0-9a-z,\"#]{0,12}",
            ],
            0..5,
        ),
    ) {
        let csv = format!("{header}\n{}\n", rows.join("\n"));
        let json = serde_json::json!({
            "duration": "1ms",
            "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps"}},
            "workload": {"flows_csv": csv},
        });
        match Scenario::from_json_str(&json.to_string()) {
            Ok(s) => {
                let mut w = s.build().map_err(|e| TestCaseError::fail(format!("build: {e}")))?;
                w.run_to_end().map_err(|e| TestCaseError::fail(format!("run: {e}")))?;
            }
            Err(e) => {
                let m = e.to_string();
                prop_assert!(m.contains("workload"), "names the key: {m}");
            }
        }
    }

    /// A whole scenario with up to four keys set to troublesome values; if
    /// accepted, it builds and runs (a short run) without a panic.
    #[test]
    fn scenarios_run_or_are_refused_naming_a_key(
        edits in prop::collection::vec((0usize..KEYS.len(), value()), 1..4)
    ) {
        let mut v: serde_json::Value = serde_json::from_str(BASE).unwrap();
        for (k, val) in &edits {
            set(&mut v, KEYS[*k], val.clone());
        }
        let text = v.to_string();
        match Scenario::from_json_str(&text) {
            Ok(s) => {
                if s.run.stop_at.ps() <= 1_000_000_000 {
                    match s.build() {
                        Ok(mut w) => {
                            let _ = w.run_to_end(); // a RunError is a clear outcome too
                        }
                        Err(e) => prop_assert!(!e.is_empty()),
                    }
                }
            }
            Err(e) => {
                let m = e.to_string();
                prop_assert!(m.contains(" - ") || m.contains(':'), "a message: {m}");
            }
        }
    }
}

const BASE: &str = r#"{"duration": "200us", "seed": 1,
    "topology": {"kind": "single_switch", "hosts": 4, "host_link": {"rate": "100Gbps", "delay": "1us"}},
    "nic": {"mtu": "1024B", "rto": "50us"},
    "switch": {"buffer": "2MB"},
    "cc": {"algorithm": "dcqcn"},
    "records": {"sample_interval": "20us"},
    "workload": {"flows": [{"src": 0, "dst": 1, "size": "64KB"}, {"src": 2, "dst": 1, "size": "8KB"}],
                 "perftest": [{"src": "h3", "dst": "h0", "message_size": "16KB", "queue_depth": 2}]}}"#;

const KEYS: &[&str] = &[
    "duration",
    "seed",
    "topology/kind",
    "topology/hosts",
    "topology/k",
    "topology/leaves",
    "topology/host_link/rate",
    "topology/host_link/delay",
    "nic/mtu",
    "nic/rto",
    "nic/window",
    "nic/ack_every",
    "nic/loss_recovery",
    "switch/buffer",
    "switch/pfc",
    "switch/ecn",
    "switch/int",
    "cc/algorithm",
    "cc/params",
    "records/sample_interval",
    "workload/flows/0/size",
    "workload/flows/0/start",
    "workload/flows/1/src",
    "workload/perftest/0/queue_depth",
    "workload/perftest/0/message_size",
    "workload/incast",
    "workload/poisson",
    "control/placement",
    "control/threads",
    "links",
    "bogus",
];

fn value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![0i64, 1, 2, 3, 64, 65536, -1]).prop_map(|n| json!(n)),
        (number(), unit()).prop_map(|(n, u)| json!(format!("{n}{u}"))),
        prop::sample::select(vec![
            "none",
            "dcqcn",
            "hpcc",
            "swift",
            "timely",
            "dctcp",
            "homa",
            "fat_tree",
            "leaf_spine",
            "asic",
            "dpa",
            "swcc",
            "go-back-n",
            "selective-repeat",
            "h0",
            "h9",
            "off",
            "",
        ])
        .prop_map(|s| json!(s)),
        Just(json!([])),
        Just(json!({})),
        Just(json!({"enabled": false})),
        Just(json!({"cdf": "websearch", "load": 0.5})),
        Just(json!({"senders": 3, "receiver": "h0", "size": "4KB"})),
        Just(json!([{"between": ["h0", "s0"], "loss": 0.5}])),
    ]
}

/// Set `path` (`a/b/0/c`) in `v`, creating mappings on the way; a path
/// through a non-container stops where it is.
fn set(v: &mut serde_json::Value, path: &str, val: serde_json::Value) {
    let parts: Vec<&str> = path.split('/').collect();
    let mut cur = v;
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let next = match cur {
            serde_json::Value::Object(m) => {
                if last {
                    m.insert(p.to_string(), val);
                    return;
                }
                m.entry(p.to_string())
                    .or_insert_with(|| serde_json::json!({}))
            }
            serde_json::Value::Array(a) => {
                let Ok(ix) = p.parse::<usize>() else { return };
                let Some(slot) = a.get_mut(ix) else { return };
                if last {
                    *slot = val;
                    return;
                }
                slot
            }
            _ => return,
        };
        cur = next;
    }
}
