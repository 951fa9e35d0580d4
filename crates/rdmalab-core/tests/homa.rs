//! Homa on SwCC (ATC'25 Table 3): receiver-driven credits keep an incast's
//! queue to the unscheduled bytes and finish short messages first.

mod common;
use common::{assert_conservation, run};

/// 8 senders to h8, 100 KB ... 800 KB, all at once, through one switch.
/// Returns (largest queue at the port to h8 in bytes, FCT of each flow in
/// size order in µs, the path's BDP in bytes).
fn incast(cc: &str) -> (u64, Vec<f64>, u64) {
    incast_with(&format!(r#"{{"algorithm": "{cc}"}}"#), "round-robin")
}

/// The same incast with controller `cc` (JSON) and switch `scheduling`.
fn incast_with(cc: &str, scheduling: &str) -> (u64, Vec<f64>, u64) {
    let flows: Vec<String> = (0..8)
        .map(|i| {
            format!(
                r#"{{"src": "h{i}", "dst": "h8", "size": "{}KB"}}"#,
                100 * (i + 1)
            )
        })
        .collect();
    let json = format!(
        r#"{{"name": "homa", "seed": 1, "duration": "2ms",
        "topology": {{"kind": "single_switch", "hosts": 9, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "switch": {{"buffer": "32MiB", "pfc": {{"enabled": true}}, "scheduling": "{scheduling}"}},
        "control": {{"rx_events": true, "cc_header": "8B"}},
        "cc": {cc},
        "workload": {{"flows": [{}]}},
        "records": {{"sample_interval": "1us"}}}}"#,
        flows.join(", ")
    );
    let (w, _) = run(&json);
    assert_conservation(&w);
    assert_eq!(w.rec.flows.len(), 8);
    let to_h8 = w
        .ports
        .iter()
        .find(|p| p.at_switch && w.ports[p.peer as usize].node == 8)
        .expect("the switch port to h8");
    let q = w
        .rec
        .port_samples
        .iter()
        .filter(|s| s.node == to_h8.node && s.port == to_h8.local)
        .map(|s| s.queued_bytes)
        .max()
        .unwrap();
    let mut fct: Vec<(u64, f64)> = w
        .rec
        .flows
        .iter()
        .map(|f| (f.bytes, f.fct().ps() as f64 / 1e6))
        .collect();
    fct.sort_by_key(|f| f.0);
    (
        q,
        fct.into_iter().map(|f| f.1).collect(),
        w.qps[0].path.bdp_bytes(),
    )
}

#[test]
fn homa_bounds_the_incast_queue_and_finishes_short_messages_first() {
    let (q_none, fct_none, _) = incast("none");
    let (q_homa, fct_homa, bdp) = incast("homa");
    println!("max queue: none {q_none} B, homa {q_homa} B (BDP {bdp} B); shortest FCT none {:.1} us, homa {:.1} us", fct_none[0], fct_homa[0]);
    // Unscheduled: one BDP from each of 8 senders; scheduled: 2 BDPs granted at once.
    assert!(q_homa <= (8 + 2) * bdp, "{q_homa} B");
    assert!(
        q_none > 2 * q_homa,
        "without CC the queue grows: {q_none} vs {q_homa} B"
    );
    // SRPT: each message finishes after the shorter ones, and the short
    // ones sooner than when all share the link. (Without network priorities
    // the shortest still queues behind every sender's unscheduled BDP.)
    println!("FCTs by size (us): none {fct_none:.1?}, homa {fct_homa:.1?}");
    assert!(fct_homa.windows(2).all(|p| p[0] <= p[1]), "{fct_homa:?}");
    assert!(
        fct_homa[0] < 0.75 * fct_none[0],
        "{:.1} vs {:.1} us",
        fct_homa[0],
        fct_none[0]
    );
    assert!(
        fct_homa[3] < 0.75 * fct_none[3],
        "{:.1} vs {:.1} us",
        fct_homa[3],
        fct_none[3]
    );
}

#[test]
fn with_network_priorities_a_late_short_message_overtakes_granted_bytes() {
    // Seven 1 MB messages into h8; at 300 us a 30 KB one (all unscheduled)
    // from h7. Without priorities it queues behind the granted bytes at the
    // receiver's port; with them its packets go first.
    let late = |cc: &str| {
        let mut flows: Vec<String> = (0..7)
            .map(|i| format!(r#"{{"src": "h{i}", "dst": "h8", "size": "1MB"}}"#))
            .collect();
        flows.push(r#"{"src": "h7", "dst": "h8", "size": "30KB", "start": "300us"}"#.into());
        let json = format!(
            r#"{{"name": "homa-late", "seed": 1, "duration": "2ms",
            "topology": {{"kind": "single_switch", "hosts": 9, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "switch": {{"buffer": "32MiB", "pfc": {{"enabled": true}}, "scheduling": "strict-priority"}},
            "control": {{"rx_events": true, "cc_header": "8B"}},
            "cc": {cc},
            "workload": {{"flows": [{}]}}}}"#,
            flows.join(", ")
        );
        let (w, _) = run(&json);
        assert_conservation(&w);
        assert_eq!(w.rec.flows.len(), 8);
        assert_eq!(w.stats.retransmitted_packets, 0, "{cc}: nothing reordered");
        let short = w.rec.flows.iter().find(|f| f.bytes == 30_000).unwrap();
        (short.fct().ps() as f64 / 1e6, short.ideal.ps() as f64 / 1e6)
    };
    let (plain, ideal) = late(r#"{"algorithm": "homa"}"#);
    let (prio, _) = late(r#"{"algorithm": "homa", "params": {"priorities": 7}}"#);
    println!("30 KB behind seven granted 1 MB messages: {plain:.2} us without priorities, {prio:.2} us with (alone {ideal:.2} us)");
    assert!(prio < plain - 3.0, "{prio:.2} vs {plain:.2} us");
    assert!(prio < 1.2 * ideal, "{prio:.2} vs alone {ideal:.2} us");
}

#[test]
fn homa_needs_its_header_and_priorities_need_strict_priority_switches() {
    let json = r#"{"name": "bad", "duration": "10us",
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "control": {"rx_events": true, "cc_header": "8B"},
        "cc": {"algorithm": "homa", "params": {"priorities": 4}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}}"#;
    let e = rdmalab_core::scenario::Scenario::from_json_str(json)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("cc.params.priorities") && e.contains("strict-priority"),
        "{e}"
    );
    // Without the header's 8 B every message would look endless.
    let e = rdmalab_core::scenario::Scenario::from_json_str(
        &json
            .replace(r#", "cc_header": "8B""#, "")
            .replace(r#", "params": {"priorities": 4}"#, ""),
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        e.contains("control.cc_header") && e.contains("message's length"),
        "{e}"
    );
}
