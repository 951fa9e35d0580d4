//! How a switch egress shares its port between inputs
//! (`switch.egress_sharing`): first come, first served gives each input what
//! it sends, so per-flow congestion control splits the port per flow; round
//! robin over input ports gives every input port the same share, however
//! many flows it carries.

mod common;

/// Eight QPs (h0..h7) reach the receiver h9 through the dumbbell's 800 Gb/s
/// middle link, one ingress port of s1; one QP from h8 enters s1 on its own
/// port. Returns h8's mean throughput and the eight's, Gb/s, over 3-6 ms.
fn lone_and_crowd(sharing: &str, cc: &str) -> (f64, f64, rdmalab_core::world::World) {
    let senders: Vec<String> = (0..9)
        .map(|h| {
            format!(r#"{{"src": "h{h}", "dst": "h9", "message_size": "1MB", "queue_depth": 2}}"#)
        })
        .collect();
    let (w, _) = common::run(&format!(
        r#"{{"duration": "6ms", "run_to_duration": true,
            "topology": {{"kind": "dumbbell", "left_hosts": 8, "right_hosts": 2,
                          "host_link": {{"rate": "100Gbps", "delay": "1us"}},
                          "bottleneck_link": {{"rate": "800Gbps", "delay": "1us"}}}},
            "switch": {{"egress_sharing": "{sharing}"}},
            "cc": {{"algorithm": "{cc}"}},
            "records": {{"sample_interval": "100us"}},
            "workload": {{"perftest": [{}]}}}}"#,
        senders.join(", ")
    ));
    let mean = |qps: &[u32]| {
        let xs: Vec<f64> = w
            .rec
            .qp_samples
            .iter()
            .filter(|s| qps.contains(&s.qp) && s.time.ps() > 3_000_000_000)
            .map(|s| s.throughput_bps as f64 / 1e9)
            .collect();
        xs.iter().sum::<f64>() / xs.len() as f64 * qps.len() as f64
    };
    let lone = mean(&[8]);
    let crowd = mean(&[0, 1, 2, 3, 4, 5, 6, 7]);
    (lone, crowd, w)
}

#[test]
fn by_input_port_a_lone_flow_gets_half_the_port_and_first_come_first_served_a_ninth() {
    // No congestion control: the switch's sharing alone decides (lossless,
    // PFC holds the rest back). With a per-flow controller such as DCQCN
    // every flow converges to a ninth under either sharing: the marks come
    // from the one egress queue they all share.
    let payload = 100.0 * rdmalab_core::packet::WireFormat::rocev2(1024).goodput_fraction();
    let (lone, crowd, w) = lone_and_crowd("input-port", "none");
    common::assert_conservation(&w);
    assert_eq!(w.stats.data_payload_dropped, 0);
    assert!(
        (lone / (payload / 2.0) - 1.0).abs() < 0.05,
        "input-port: the lone flow got {lone:.1} Gb/s"
    );
    assert!(
        (crowd / (payload / 2.0) - 1.0).abs() < 0.05,
        "input-port: the eight got {crowd:.1} Gb/s"
    );
    let (lone, crowd, w) = lone_and_crowd("fifo", "none");
    common::assert_conservation(&w);
    assert!(
        (lone / (payload / 9.0) - 1.0).abs() < 0.1,
        "fifo: the lone flow got {lone:.1} Gb/s"
    );
    assert!(
        (crowd / (payload * 8.0 / 9.0) - 1.0).abs() < 0.05,
        "fifo: the eight got {crowd:.1} Gb/s"
    );
}

#[test]
fn input_port_sharing_is_refused_where_it_means_nothing() {
    let e = rdmalab_core::scenario::Scenario::from_json_str(
        r#"{"duration": "1ms", "switch": {"egress_sharing": "per-flow"},
            "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
            "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "64KB"}]}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("switch.egress_sharing: `per-flow` — allowed: fifo, input-port"),
        "{e}"
    );
}
