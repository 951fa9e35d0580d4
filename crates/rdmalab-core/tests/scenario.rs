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
