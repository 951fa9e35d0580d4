//! Homa on SwCC (ATC'25 Table 3): receiver-driven credits keep an incast's
//! queue to the unscheduled bytes and finish short messages first.

mod common;
use common::{assert_conservation, run};

/// 8 senders to h8, 100 KB ... 800 KB, all at once, through one switch.
/// Returns (largest queue at the port to h8 in bytes, FCT of each flow in
/// size order in µs, the path's BDP in bytes).
fn incast(cc: &str) -> (u64, Vec<f64>, u64) {
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
        "switch": {{"buffer": "32MiB", "pfc": {{"enabled": true}}}},
        "control": {{"rx_events": true, "cc_header": "8B"}},
        "cc": {{"algorithm": "{cc}"}},
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
