//! An ACK tells its controller how many switches the data it acknowledges
//! crossed: Swift's target delay grows with that count (Swift §3.3), so a
//! count that also included the ACK's own way back would double its
//! per-hop term.

use std::sync::{Arc, Mutex};

use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask};
use rdmalab_core::scenario::Scenario;

/// Every ACK's `(hops, path.hops)`: what the event says and what the path is.
struct LogHops(Arc<Mutex<Vec<(u8, u8)>>>);

impl Controller for LogHops {
    fn name(&self) -> &str {
        "log-hops"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::ACK)
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        if let CcEvent::Ack { hops, .. } = *ev {
            self.0.lock().unwrap().push((hops, ctx.path.hops));
        }
    }
}

fn hops_seen(topology: &str, dst: &str) -> Vec<(u8, u8)> {
    let json = format!(
        r#"{{"duration": "1ms", "topology": {topology},
            "workload": {{"flows": [{{"src": "h0", "dst": "{dst}", "size": "64KB"}}]}}}}"#
    );
    let mut s = Scenario::from_json_str(&json).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let shared = log.clone();
    s.cc = CcConfig::custom("log-hops", move || Box::new(LogHops(shared.clone())));
    s.build().unwrap().run_to_end().unwrap();
    let seen = log.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the controller saw no ACK");
    seen
}

const LINK: &str = r#"{"rate": "100Gbps", "delay": "1us"}"#;

#[test]
fn an_ack_counts_the_switches_its_data_crossed() {
    let single = format!(r#"{{"kind": "single_switch", "hosts": 2, "host_link": {LINK}}}"#);
    let dumbbell = format!(
        r#"{{"kind": "dumbbell", "left_hosts": 1, "right_hosts": 1, "host_link": {LINK}, "bottleneck_link": {LINK}}}"#
    );
    // h0 is in pod 0, h8 in pod 2: edge, agg, core, agg, edge.
    let fat_tree =
        format!(r#"{{"kind": "fat_tree", "k": 4, "host_link": {LINK}, "fabric_link": {LINK}}}"#);
    for (topology, dst, want) in [(single, "h1", 1), (dumbbell, "h1", 2), (fat_tree, "h8", 5)] {
        let seen = hops_seen(&topology, dst);
        assert!(
            seen.iter().all(|&s| s == (want, want)),
            "{topology}: ACKs said (hops, path.hops) = {:?}, want ({want}, {want})",
            &seen[..seen.len().min(4)]
        );
    }
}
