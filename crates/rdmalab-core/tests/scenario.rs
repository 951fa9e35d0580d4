//! Bad scenarios are refused before the run, each with a message naming the
//! key, the value and what is allowed; good ones run deterministically.

mod common;
use rdmalab_core::scenario::Scenario;

const BASE_TOPO: &str = r#""topology": {"kind": "single_switch", "hosts": 4, "host_link": {"rate": "100Gbps", "delay": "1us"}}"#;

fn errors(json: &str) -> String {
    match Scenario::from_json_str(json) {
        Ok(_) => panic!("scenario should be refused: {json}"),
        Err(e) => e.to_string(),
    }
}

fn with_flow(flow: &str) -> String {
    format!(r#"{{"duration": "1ms", {BASE_TOPO}, "workload": {{"flows": [{flow}]}}}}"#)
}

#[test]
fn an_unknown_key_is_named_with_the_allowed_keys() {
    let e = errors(&format!(
        r#"{{"duration": "1ms", "durration": "2ms", {BASE_TOPO}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
    ));
    assert!(e.contains("durration: unknown key"), "{e}");
    assert!(
        e.contains("allowed here: name, description, seed, duration"),
        "{e}"
    );
    let e = errors(&with_flow(
        r#"{"src": 0, "dst": 1, "size": "1KB", "prio": 3}"#,
    ));
    assert!(e.contains("workload.flows[0].prio: unknown key"), "{e}");
}

#[test]
fn a_missing_unit_is_refused() {
    let e = errors(&with_flow(r#"{"src": 0, "dst": 1, "size": 4096}"#));
    assert!(e.contains("workload.flows[0].size: `4096`"), "{e}");
    assert!(e.contains("has no unit"), "{e}");
    let e = errors(
        r#"{"duration": "1ms", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100", "delay": "1us"}}, "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB"}]}}"#,
    );
    assert!(e.contains("topology.host_link.rate: `100`"), "{e}");
    assert!(e.contains("Gbps"), "{e}");
}

#[test]
fn a_flow_to_a_missing_host_is_refused() {
    let e = errors(&with_flow(r#"{"src": "h0", "dst": "h99", "size": "1KB"}"#));
    assert!(e.contains("workload.flows[0].dst: `h99`"), "{e}");
    assert!(e.contains("no such host"), "{e}");
    assert!(e.contains("0 to 3"), "{e}");
    let e = errors(&with_flow(r#"{"src": "h0", "dst": "s0", "size": "1KB"}"#));
    assert!(e.contains("is a switch, not a host"), "{e}");
}

#[test]
fn zero_or_negative_rates_are_refused() {
    for bad in ["0Gbps", "-5Gbps"] {
        let e = errors(&format!(
            r#"{{"duration": "1ms", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "{bad}"}}}}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
        ));
        assert!(e.contains("topology.host_link.rate"), "{bad}: {e}");
    }
    let e = errors(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO}, "cc": {{"params": {{"min_rate": "0Mbps"}}}}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
    ));
    assert!(e.contains("cc.params.min_rate"), "{e}");
    assert!(e.contains("allowed: 1bps to"), "{e}");
}

#[test]
fn a_topology_that_does_not_connect_a_flow_is_refused() {
    // Two single-switch islands in one ns-3 topology file: h0,h1 on s4; h2,h3 on s5.
    let text = "6 2 4\\n4 5\\n0 4 100Gbps 1us 0\\n1 4 100Gbps 1us 0\\n2 5 100Gbps 1us 0\\n3 5 100Gbps 1us 0\\n";
    let e = errors(&format!(
        r#"{{"duration": "1ms", "topology": {{"kind": "hpcc_file", "text": "{text}"}}, "workload": {{"flows": [{{"src": "h0", "dst": "h3", "size": "1KB"}}]}}}}"#
    ));
    assert!(e.contains("h0 → h3"), "{e}");
    assert!(e.contains("does not connect"), "{e}");
}

#[test]
fn all_problems_are_reported_at_once() {
    let e = errors(r#"{"duration": "5", "topology": {"kind": "mesh"}, "workload": {}}"#);
    assert!(e.contains("duration: `5`"), "{e}");
    assert!(
        e.contains("topology.kind: `mesh` — allowed: single_switch"),
        "{e}"
    );
}

#[test]
fn out_of_range_values_name_the_range() {
    let e = errors(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO}, "workload": {{"poisson": {{"cdf": "websearch", "load": 1.5}}}}}}"#
    ));
    assert!(e.contains("workload.poisson.load: `1.5`"), "{e}");
    assert!(e.contains("at most 1"), "{e}");
    let e = errors(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO}, "workload": {{"poisson": {{"cdf": "websurch", "load": 0.3}}}}}}"#
    ));
    assert!(e.contains("allowed: websearch, fbhdp"), "{e}");
}

fn poisson_csv(seed: u64) -> (String, String) {
    let s = Scenario::from_json_str(&format!(
        r#"{{"seed": {seed}, "duration": "2ms",
        "topology": {{"kind": "fat_tree", "k": 4, "host_link": {{"rate": "100Gbps", "delay": "1us"}}, "fabric_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "workload": {{"poisson": {{"cdf": "websearch", "load": 0.3, "duration": "1ms"}}}}}}"#
    ))
    .unwrap();
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    common::assert_conservation(&w);
    let mut flows = Vec::new();
    w.write_flows_csv(&mut flows).unwrap();
    let mut samples = Vec::new();
    w.write_qp_samples_csv(&mut samples).unwrap();
    w.write_port_samples_csv(&mut samples).unwrap();
    let arrivals: Vec<String> = w
        .workload
        .flows
        .iter()
        .map(|f| format!("{} {} {} {}", f.src, f.dst, f.bytes, f.start.ps()))
        .collect();
    (
        String::from_utf8(flows).unwrap() + &String::from_utf8(samples).unwrap(),
        arrivals.join("\n"),
    )
}

#[test]
fn the_same_seed_gives_identical_outputs_and_another_seed_changes_arrivals() {
    let (a, arr_a) = poisson_csv(7);
    let (b, arr_b) = poisson_csv(7);
    assert_eq!(
        a, b,
        "same scenario and seed must give byte-identical output"
    );
    assert!(a.lines().count() > 5, "the run must complete some flows");
    let (_, arr_c) = poisson_csv(8);
    assert_eq!(arr_a, arr_b);
    assert_ne!(
        arr_a, arr_c,
        "another seed must change the Poisson arrivals"
    );
}

/// Sizes, rates and durations past their limits, and flows whose packets
/// would not fit a QP's PSNs, are refused before the run, naming the key.
#[test]
fn values_at_the_arithmetic_edges_are_refused_naming_the_key() {
    let base = |flow: &str, extra: &str| {
        format!(
            r#"{{"duration": "1ms", {extra}
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps"}}}},
            "workload": {{"flows": [{flow}]}}}}"#
        )
    };
    let refused = |json: String| match Scenario::from_json_str(&json) {
        Ok(_) => panic!("accepted: {json}"),
        Err(e) => e.to_string(),
    };
    let e = refused(base(
        r#"{"src": 0, "dst": 1, "size": "18446744073709551615B"}"#,
        "",
    ));
    assert!(
        e.contains("workload.flows[0].size") && e.contains("at most 1TiB"),
        "{e}"
    );
    let e = refused(base(
        r#"{"src": 0, "dst": 1, "size": "1KB"}"#,
        r#""nic": {"rto": "1e20ps"},"#,
    ));
    assert!(e.contains("nic.rto") && e.contains("one hour"), "{e}");
    let e = refused(base(
        r#"{"src": 0, "dst": 1, "size": "1TiB"}"#,
        r#""nic": {"mtu": "64B"},"#,
    ));
    assert!(
        e.contains("workload") && e.contains("2147483648 packets"),
        "{e}"
    );
    // The same flow fits at the default MTU (2^30 packets).
    Scenario::from_json_str(&base(r#"{"src": 0, "dst": 1, "size": "1TiB"}"#, "")).unwrap();
}

/// A QP that would number more packets than its PSNs hold stops the run
/// with an error saying so (a long perftest), instead of wrapping.
#[test]
fn a_qp_running_out_of_psns_stops_the_run_with_a_clear_error() {
    let s = Scenario::from_json_str(
        r#"{"duration": "10ms",
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps"}},
        "workload": {"perftest": [{"src": 0, "dst": 1, "message_size": "1MB", "queue_depth": 1}]}}"#,
    )
    .unwrap();
    let mut w = s.build().unwrap();
    w.max_qp_packets = 10_000;
    let e = w.run_to_end().unwrap_err().to_string();
    assert!(
        e.contains("QP 0 would number more than 2^31 packets"),
        "{e}"
    );
    // Ten 1 MB messages (977 packets each) fit, the eleventh does not.
    assert_eq!(w.apps[0].completed, 10);
}

/// Each topology key within its range can still multiply into a fabric too
/// large to build; the counts are checked before anything is allocated.
#[test]
fn topologies_too_large_to_build_are_refused_from_their_counts() {
    let refused = |topo: &str| {
        let json = format!(
            r#"{{"duration": "1ms", "topology": {topo},
            "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
        );
        let t = std::time::Instant::now();
        let e = match Scenario::from_json_str(&json) {
            Ok(_) => panic!("accepted: {topo}"),
            Err(e) => e.to_string(),
        };
        // Refused from the counts: nothing of that size was built first.
        assert!(t.elapsed().as_secs() < 5, "{topo}: took {:?}", t.elapsed());
        e
    };
    let l = r#""host_link": {"rate": "100Gbps"}, "fabric_link": {"rate": "100Gbps"}"#;
    // Routing keeps an entry per switch and ToR: 10,001 switches x 10,000 leaves.
    let e = refused(&format!(
        r#"{{"kind": "leaf_spine", "leaves": 10000, "spines": 1, "hosts_per_leaf": 1, {l}}}"#
    ));
    assert!(
        e.contains("10001 switches x 10000 ToRs") && e.contains("at most 100000000"),
        "{e}"
    );
    let e = refused(r#"{"kind": "hpcc_file", "text": "4000000000 1 1\n0\n0 1 100Gbps 1us 0\n"}"#);
    assert!(e.contains("nodes") && e.contains("at most 1000000"), "{e}");
    // A k = 64 fat tree (65,536 hosts; 5,120 switches x 2,048 ToRs) is within the bounds.
    let ok = format!(
        r#"{{"duration": "1ms", "topology": {{"kind": "fat_tree", "k": 64, {l}}},
        "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
    );
    Scenario::from_json_str(&ok).unwrap();
}

/// An MTU of 0 (here `-0B`, which parses as 0) is refused by key, not used:
/// the PSN-space check divides by it (found by tests/parsers_prop.rs).
#[test]
fn a_zero_mtu_is_refused_not_divided_by() {
    let e = errors(
        r#"{"duration": "1ms",
        "topology": {"kind": "single_switch", "hosts": 4, "host_link": {"rate": "100Gbps"}},
        "nic": {"mtu": "-0B"},
        "workload": {"flows": [{"src": 0, "dst": 1, "size": "64KB"}]}}"#,
    );
    assert!(e.contains("nic.mtu") && e.contains("`0B`"), "{e}");
}

/// A node with no link at all (here an ns-3 topology file's host 3) is
/// refused by name: it could never send or receive.
#[test]
fn a_node_without_links_is_refused_by_name() {
    let e = errors(
        r#"{"duration": "1ms",
        "topology": {"kind": "hpcc_file", "text": "4 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n"},
        "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB"}]}}"#,
    );
    assert!(
        e.contains("topology") && e.contains("node `h3`") && e.contains("has no links"),
        "{e}"
    );
}

/// Swift's flow scaling runs from fs_min_cwnd (largest) to fs_max_cwnd (0):
/// the other way round is refused, not run with a division by zero or less.
#[test]
fn swift_flow_scaling_bounds_must_be_in_order() {
    let e = errors(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO},
        "cc": {{"algorithm": "swift", "params": {{"fs_min_cwnd": 300, "fs_max_cwnd": 256}}}},
        "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
    ));
    assert!(
        e.contains("cc.params.fs_min_cwnd") && e.contains("below cc.params.fs_max_cwnd (256)"),
        "{e}"
    );
}

/// Two `links[].down` intervals of one link that overlap or touch are
/// refused naming both: each brings the link back up at its own end, so the
/// link would be up while the other says it is down. Intervals of one link
/// given by two entries (here `between` and `tier`) count too.
#[test]
fn overlapping_link_down_intervals_are_refused_naming_both() {
    let with_links = |links: &str| {
        format!(
            r#"{{"duration": "1ms", {BASE_TOPO}, "links": [{links}],
            "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
        )
    };
    let e = errors(&with_links(
        r#"{"between": ["h0", "s0"], "down": [["10us", "30us"], ["20us", "40us"]]}"#,
    ));
    assert!(
        e.contains("links[0].down[1]: `[20us, 40us]` — overlaps or touches links[0].down[0] `[10us, 30us]`")
            && e.contains("link [h0, s0], which would come back up at 30us")
            && e.contains("e.g. [10us, 40us]"),
        "{e}"
    );
    // Touching, in either order, and across two entries.
    let e = errors(&with_links(
        r#"{"between": ["h0", "s0"], "down": [["30us", "40us"]]},
        {"tier": ["host", "switch"], "down": [["10us", "30us"]]}"#,
    ));
    assert!(
        e.contains("links[0].down[0]: `[30us, 40us]` — overlaps or touches links[1].down[0] `[10us, 30us]`"),
        "{e}"
    );
    assert_eq!(e.matches("overlaps").count(), 1, "{e}");
    // One inside another: the link would come back up at the inner one's end.
    let e = errors(&with_links(
        r#"{"between": ["h0", "s0"], "down": [["10us", "50us"], ["20us", "30us"]]}"#,
    ));
    assert!(e.contains("come back up at 30us"), "{e}");
    Scenario::from_json_str(&with_links(
        r#"{"between": ["h0", "s0"], "down": [["30us", "40us"], ["10us", "20us"]]},
        {"between": ["h1", "s0"], "down": [["10us", "30us"]]}"#,
    ))
    .unwrap();
}

/// A flow file whose header names a column twice is refused naming it: the
/// last value would silently win.
#[test]
fn a_flow_file_column_given_twice_is_refused() {
    let e = errors(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO}, "workload": {{"flows_csv": "src,dst,size,size\nh0,h1,4KB,8KB\n"}}}}"#
    ));
    assert!(
        e.contains("workload.flow_file: header `src,dst,size,size` — column `size` given twice"),
        "{e}"
    );
}

/// A flow file may give hosts by index, as `workload.flows` does in YAML
/// (`src: 0`) and as its own message offers: the same flows either way.
#[test]
fn a_flow_file_takes_host_indices_as_yaml_flows_do() {
    let flows = |workload: &str| {
        let s = Scenario::from_json_str(&format!(
            r#"{{"duration": "1ms", {BASE_TOPO}, "workload": {workload}}}"#
        ))
        .unwrap();
        let f = &s.workload.flows;
        f.iter()
            .map(|f| (f.src, f.dst, f.bytes))
            .collect::<Vec<_>>()
    };
    let by_index = flows(r#"{"flows_csv": "src,dst,size\n0,1,4KB\n3,h2,1KB\n"}"#);
    assert_eq!(
        by_index,
        flows(
            r#"{"flows": [{"src": 0, "dst": 1, "size": "4KB"}, {"src": 3, "dst": "h2", "size": "1KB"}]}"#
        )
    );
    assert_eq!(
        by_index,
        flows(r#"{"flows_csv": "src,dst,size\nh0,h1,4KB\nh3,h2,1KB\n"}"#)
    );
    // Out of range, or not a plain decimal (YAML reads `01` as octal).
    let e = errors(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO}, "workload": {{"flows_csv": "src,dst,size\n4,01,4KB\n"}}}}"#
    ));
    assert!(
        e.contains("workload.flow_file[line 2].src: `4` — no such host; allowed: a host name such as `h0`, or a host index from 0 to 3")
            && e.contains("workload.flow_file[line 2].dst: `01` — no such host"),
        "{e}"
    );
}

/// An incast sender listed twice (by name or by index) is refused, as a host
/// listed twice in `poisson.hosts` or `ring.hosts` is: it would silently
/// send two flows.
#[test]
fn an_incast_sender_listed_twice_is_refused() {
    let incast = |senders: &str| {
        format!(
            r#"{{"duration": "1ms", {BASE_TOPO},
            "workload": {{"incast": {{"senders": {senders}, "receiver": "h3", "size": "4KB"}}}}}}"#
        )
    };
    let e = errors(&incast(r#"["h1", "h1"]"#));
    assert!(
        e.contains("workload.incast.senders[1]: `h1` — appears twice: list each host once"),
        "{e}"
    );
    let e = errors(&incast(r#"["h0", "h2", 2]"#));
    assert!(
        e.contains("workload.incast.senders[2]: `2` — appears twice"),
        "{e}"
    );
    // Beside other flows, an empty list would add nothing, unseen.
    let with_flow = |senders: &str| {
        format!(
            r#"{{"duration": "1ms", {BASE_TOPO},
            "workload": {{"incast": {{"senders": {senders}, "receiver": "h3", "size": "4KB"}},
                "flows": [{{"src": "h0", "dst": "h1", "size": "4KB"}}]}}}}"#
        )
    };
    let e = errors(&with_flow("[]"));
    assert!(
        e.contains("workload.incast.senders: `[]` — lists no host; allowed: a count of hosts (at least 1) or a list of at least one host"),
        "{e}"
    );
    Scenario::from_json_str(&with_flow(r#"["h2"]"#)).unwrap();
    Scenario::from_json_str(&incast(r#"["h0", "h1", 2]"#)).unwrap();
}

/// An inline CDF point must be exactly [size_bytes, cdf_percent]: a third
/// value was dropped unseen. The point is named by its index.
#[test]
fn an_inline_cdf_point_with_more_than_two_values_is_refused() {
    let poisson = |cdf: &str| {
        format!(
            r#"{{"duration": "1ms", {BASE_TOPO},
            "workload": {{"poisson": {{"cdf": {cdf}, "load": 0.1}}}}}}"#
        )
    };
    let e = errors(&poisson("[[0, 0], [1000, 100, 2]]"));
    assert!(
        e.contains("workload.poisson.cdf[1]: `[1000,100,2]` — must be a [size_bytes, cdf_percent] pair of numbers"),
        "{e}"
    );
    let e = errors(&poisson(r#"[[0, 0], [1000]]"#));
    assert!(e.contains("workload.poisson.cdf[1]: `[1000]`"), "{e}");
    let e = errors(&poisson(r#"[[0, "0"], [1000, 100]]"#));
    assert!(e.contains("workload.poisson.cdf[0]: `[0,\"0\"]`"), "{e}");
    Scenario::from_json_str(&poisson("[[0, 0], [1000, 100]]")).unwrap();
}

/// A leaf-spine of 100 Gb/s host links and 400 Gb/s fabric links, with
/// `ecn` (switch or link settings) among its top-level keys.
fn ecn_leaf_spine(ecn: &str) -> String {
    format!(
        r#"{{"duration": "1ms",
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2,
            "host_link": {{"rate": "100Gbps"}}, "fabric_link": {{"rate": "400Gbps"}}}},
        {ecn},
        "workload": {{"flows": [{{"src": 0, "dst": 3, "size": "1KB"}}]}}}}"#
    )
}

/// One `thresholds` entry for `rate`.
fn ecn_threshold(rate: &str, kmin: &str) -> String {
    format!(r#"{{"rate": "{rate}", "kmin": "{kmin}", "kmax": "400KB", "pmax": 0.5}}"#)
}

/// An ECN threshold for a rate no switch port runs at would never apply
/// (the scaled default marks instead): it is refused naming the rate and
/// listing the ports' rates, fabric-wide and for a `switches[]` entry.
#[test]
fn an_ecn_threshold_for_a_rate_no_port_has_is_refused() {
    let leaf_spine = ecn_leaf_spine;
    let t = |rate: &str| ecn_threshold(rate, "10KB");
    let e = errors(&leaf_spine(&format!(
        r#""switch": {{"ecn": {{"thresholds": [{}, {}]}}}}"#,
        t("100Gbps"),
        t("25Gbps")
    )));
    assert!(
        e.contains("switch.ecn.thresholds[1].rate: `25Gbps` — no port of the fabric's switches runs at this rate, so the entry would never apply; allowed: a rate of their ports: 100Gbps, 400Gbps"),
        "{e}"
    );
    // A spine has only 400 Gb/s ports.
    let e = errors(&leaf_spine(&format!(
        r#""switches": [{{"tier": "spine", "ecn": {{"thresholds": [{}]}}}}]"#,
        t("100Gbps")
    )));
    assert!(
        e.contains("switches[0].ecn.thresholds[0].rate: `100Gbps` — no port of these switches runs at this rate")
            && e.contains("their ports: 400Gbps"),
        "{e}"
    );
    // A rate set by links[] counts.
    let e = errors(&leaf_spine(&format!(
        r#""links": [{{"tier": ["leaf", "spine"], "rate": "200Gbps"}}], "switch": {{"ecn": {{"thresholds": [{}]}}}}"#,
        t("400Gbps")
    )));
    assert!(e.contains("their ports: 100Gbps, 200Gbps"), "{e}");
    Scenario::from_json_str(&leaf_spine(&format!(
        r#""switch": {{"ecn": {{"thresholds": [{}, {}]}}}},
        "switches": [{{"tier": "spine", "ecn": {{"thresholds": [{}]}}}}]"#,
        t("100Gbps"),
        t("400Gbps"),
        t("400Gbps")
    )))
    .unwrap();
}

/// A port takes the first threshold entry for its rate, so a second entry
/// for the same rate would never apply: it is refused, naming the first.
#[test]
fn a_second_ecn_threshold_for_one_rate_is_refused() {
    let scenario = |thresholds: &str| {
        ecn_leaf_spine(&format!(
            r#""switch": {{"ecn": {{"thresholds": {thresholds}}}}}"#
        ))
    };
    let t = ecn_threshold;
    let e = errors(&scenario(&format!(
        "[{}, {}, {}]",
        t("100Gbps", "10KB"),
        t("400Gbps", "40KB"),
        t("100Gbps", "20KB")
    )));
    assert!(
        e.contains("switch.ecn.thresholds[2].rate: `100Gbps` — switch.ecn.thresholds[0] is for this rate already, and a port uses only one; allowed: one entry per rate"),
        "{e}"
    );
    Scenario::from_json_str(&scenario(&format!(
        "[{}, {}]",
        t("100Gbps", "10KB"),
        t("400Gbps", "40KB")
    )))
    .unwrap();
}

/// A scalar or a list where a mapping is expected is shown as written, once,
/// with what the mapping holds; not reported as a missing key.
#[test]
fn a_scalar_where_a_mapping_is_expected_is_shown_not_called_missing() {
    let e = errors(
        r#"{"duration": "1ms", "topology": {"kind": "single_switch", "hosts": 2, "host_link": "100Gbps"},
        "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB"}]}}"#,
    );
    assert!(
        e.contains("topology.host_link: `100Gbps` — must be a mapping with rate and delay, e.g. {rate: 100Gbps, delay: 1us}"),
        "{e}"
    );
    assert!(!e.contains("is required"), "{e}");
    let e = errors(
        r#"{"duration": "1ms", "topology": "leaf_spine",
        "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB"}]}}"#,
    );
    assert!(
        e.contains("topology: `leaf_spine` — must be a mapping with `kind` and its keys")
            && e.contains("allowed kinds: single_switch, dumbbell, leaf_spine"),
        "{e}"
    );
    assert!(!e.contains("is required"), "{e}");
    let e = errors(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO}, "workload": ["h0"]}}"#
    ));
    assert!(
        e.contains(r#"workload: `["h0"]` — must be a mapping"#),
        "{e}"
    );
    assert!(!e.contains("is required"), "{e}");
    // Missing keys are still called missing.
    let e = errors(r#"{"duration": "1ms", "topology": {"kind": "single_switch", "hosts": 2}}"#);
    assert!(
        e.contains("topology.host_link: is required (a mapping with rate and delay"),
        "{e}"
    );
    let e = errors(&format!(r#"{{"duration": "1ms", {BASE_TOPO}}}"#));
    assert!(e.contains("workload: is required"), "{e}");
}

/// A rate or duration that rounds to 0 is shown as written, with why it is
/// 0; a negative one is called negative.
#[test]
fn values_that_round_to_zero_are_shown_as_written() {
    let e = errors(
        r#"{"duration": "1e-20us", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "0.4bps"}},
        "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB"}]}}"#,
    );
    assert!(
        e.contains("duration: `1e-20us` — must be greater than 0; allowed: at least 1ps"),
        "{e}"
    );
    assert!(
        e.contains("topology.host_link.rate: `0.4bps` — must be greater than 0 bit/s; allowed: at least 1bps"),
        "{e}"
    );
    let e = errors(&format!(
        r#"{{"duration": "-5us", {BASE_TOPO}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
    ));
    assert!(e.contains("duration: `-5us` — `-5us` is negative"), "{e}");
}

/// Cycles at a clock are a duration too: at most an hour, and a clock is
/// finite. A slow clock used to give a time past u64 picoseconds, which a
/// release build wrapped to a small one (`cycles: 2^40` at `1Hz` ran as if
/// processing were short).
#[test]
fn cycles_at_a_clock_are_bounded_like_every_duration() {
    let with_control = |control: &str| {
        format!(
            r#"{{"duration": "1ms", {BASE_TOPO}, "control": {control}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
        )
    };
    let cases = [
        (
            r#"{"placement": "dpa", "cycles_per_event": 1099511627776, "clock": "1Hz"}"#,
            "control.cycles_per_event: `1099511627776` cycles at `1Hz`",
        ),
        (
            r#"{"placement": "dpa", "compute": {"clock": "1e-300Hz", "cycles": 60}}"#,
            "control.compute.cycles: `60` cycles at `1e-300Hz`",
        ),
        (
            r#"{"on_path": {"tx_cores": 1, "cycles_per_packet": 4294967296, "clock": "1Hz"}}"#,
            "control.on_path.cycles_per_packet: `4294967296` cycles at `1Hz`",
        ),
        (
            r#"{"on_path": {"preset": "swcc", "clock": "1Hz", "memory": {"kind": "naive", "access_cycles": 1048576}}}"#,
            "control.on_path.memory.access_cycles: `1048576` cycles at `1Hz`",
        ),
    ];
    for (control, want) in cases {
        let e = errors(&with_control(control));
        assert!(e.contains(want), "{control}: {e}");
        assert!(e.contains("at most 3600s (one hour)"), "{control}: {e}");
    }
    // An hour exactly is allowed.
    Scenario::from_json_str(&with_control(
        r#"{"placement": "dpa", "cycles_per_event": 3600, "clock": "1Hz"}"#,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    for clock in ["infGHz", "1e400GHz"] {
        let e = errors(&with_control(&format!(
            r#"{{"placement": "dpa", "cycles_per_event": 100, "clock": "{clock}"}}"#
        )));
        assert!(
            e.contains(&format!("control.clock: `{clock}`")) && e.contains("finite frequency"),
            "{e}"
        );
    }
}

/// A PCIe latency without its link had nothing to apply to and was ignored.
#[test]
fn a_pcie_latency_without_its_link_is_refused() {
    for (host, key) in [
        (r#"{"pcie_latency": "2us"}"#, "host.pcie_latency: `2us`"),
        (
            r#"{"pcie": "gen4x16", "device_pcie_latency": "2us"}"#,
            "host.device_pcie_latency: `2us`",
        ),
    ] {
        let e = errors(&format!(
            r#"{{"duration": "1ms", {BASE_TOPO}, "host": {host}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
        ));
        assert!(
            e.contains(key) && e.contains("only applies with host."),
            "{e}"
        );
    }
    Scenario::from_json_str(&format!(
        r#"{{"duration": "1ms", {BASE_TOPO}, "host": {{"pcie_bandwidth": "100Gbps", "pcie_latency": "2us"}}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
    ))
    .unwrap_or_else(|e| panic!("{e}"));
}

/// At the direct (`asic`) placement no event waits for a thread, so the
/// coalescing keys and `record_delays: true` did nothing: the run took them
/// and wrote an empty control_delays table.
#[test]
fn coalescing_and_delay_records_at_the_direct_placement_are_refused() {
    let with_control = |control: &str| {
        format!(
            r#"{{"duration": "1ms", {BASE_TOPO}, "control": {control}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
        )
    };
    for (control, want) in [
        (
            r#"{"software_coalescing": false}"#,
            "control.software_coalescing: `false` — has no effect at the `asic` placement",
        ),
        (
            r#"{"placement": "asic", "coalesce": {"tx": "keep-latest"}}"#,
            "control.coalesce: ",
        ),
        (
            r#"{"record_delays": true}"#,
            "control.record_delays: `true` — has nothing to record",
        ),
    ] {
        let e = errors(&with_control(control));
        assert!(e.contains(want), "{control}: {e}");
    }
    // With a queue (threads, or a latency) they act, and so they are taken.
    for control in [
        r#"{"placement": "asic", "threads": 4, "software_coalescing": false, "record_delays": true}"#,
        r#"{"placement": "asic", "trigger_latency": "1us", "coalesce": {"tx": "keep-latest"}}"#,
        r#"{"placement": "asic", "record_delays": false}"#,
    ] {
        Scenario::from_json_str(&with_control(control))
            .unwrap_or_else(|e| panic!("{control}: {e}"));
    }
}

#[test]
fn quantities_are_listed_as_read_so_two_spellings_of_one_read_alike() {
    // A sweep refuses an axis whose values are one setting written two ways
    // (`10us` and `10000ns`) by comparing what the core read.
    let read = |delay: &str, size: &str| {
        let json = format!(
            r#"{{"duration": "1ms", "topology": {{"kind": "single_switch", "hosts": 4, "host_link": {{"rate": "100Gbps", "delay": "{delay}"}}}}, "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "{size}"}}]}}}}"#
        );
        let (_, q) = Scenario::from_json_str_with_quantities(&json).unwrap();
        q.into_iter()
            .map(|q| (q.key, q.kind, q.value))
            .collect::<Vec<_>>()
    };
    let a = read("10us", "1KiB");
    for want in [
        ("duration".to_string(), "duration", 1_000_000_000),
        (
            "topology.host_link.rate".to_string(),
            "rate",
            100_000_000_000,
        ),
        (
            "topology.host_link.delay".to_string(),
            "duration",
            10_000_000,
        ),
        ("workload.flows[0].size".to_string(), "size", 1024),
    ] {
        assert!(a.contains(&want), "{want:?} not in {a:?}");
    }
    assert_eq!(a, read("10000ns", "1024B"));
    assert_ne!(a, read("10001ns", "1024B"));
}

#[test]
fn text_that_is_not_json_is_refused_with_where_it_stops() {
    // The Python front end always hands the core JSON it wrote itself, so
    // this message is seen only by users of the Rust API; both ways in say it.
    let broken = r#"{"duration": "1ms", "topology": }"#;
    for e in [
        errors(broken),
        Scenario::from_json_str_with_quantities(broken)
            .map(|_| ())
            .expect_err("not JSON")
            .to_string(),
    ] {
        assert!(e.contains("(scenario)"), "{e}");
        assert!(e.contains("not valid JSON"), "{e}");
        assert!(e.contains("line 1 column 33"), "{e}");
    }
}
