//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use rdmalab_core::scenario::Scenario;
use rdmalab_core::world::{Progress, World};

/// Parse a scenario written as JSON, build it and run it to the end.
pub fn run(json: &str) -> (World, Progress) {
    let s = Scenario::from_json_str(json).unwrap_or_else(|e| panic!("{e}"));
    let mut w = s.build().expect("build");
    let p = w.run_to_end().unwrap_or_else(|e| panic!("{e}"));
    (w, p)
}

/// Bytes NICs sent = arrived + dropped + still in the network (counted by walking queues and links).
pub fn assert_conservation(w: &World) {
    let s = &w.stats;
    let in_net = w.data_payload_in_network();
    assert_eq!(
        s.data_payload_sent,
        s.data_payload_arrived + s.data_payload_dropped + in_net,
        "sent {} != arrived {} + dropped {} + in network {}",
        s.data_payload_sent,
        s.data_payload_arrived,
        s.data_payload_dropped,
        in_net
    );
    // Message level: every posted byte is delivered in order, or still owed.
    for qp in &w.qps {
        assert!(
            qp.delivered_bytes <= qp.byte_end,
            "QP {} delivered more than posted",
            qp.id
        );
    }
    for f in &w.rec.flows {
        let qp = &w.qps[f.qp as usize];
        assert_eq!(
            qp.delivered_bytes, qp.byte_end,
            "completed flow {} delivered all its bytes",
            f.flow
        );
    }
}

/// Jain's fairness index of `xs`.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        return 1.0;
    }
    s * s / (xs.len() as f64 * s2)
}
