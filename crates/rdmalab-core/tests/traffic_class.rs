//! Per-QP traffic classes (SwiftRDMA §3.4): a latency-sensitive QP in a
//! class of its own does not queue behind a throughput-sensitive QP's
//! packets at a shared switch port; the class can be set per application or
//! changed at run time by a controller.

mod common;
use common::assert_conservation;
use rdmalab_core::algo::{CcConfig, ControllerFactory};
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask, HintKind};
use rdmalab_core::scenario::Scenario;
use std::sync::Arc;

/// Two bulk WRITE senders (h0, h3) and one 64 B latency sender (h1) into h2:
/// the switch port to h2 is overloaded (no CC, PFC keeps it lossless).
fn scenario(ls_extra: &str) -> String {
    format!(
        r#"{{"name": "qos", "seed": 1, "duration": "1ms",
        "topology": {{"kind": "single_switch", "hosts": 4, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "cc": {{"algorithm": "none"}},
        "workload": {{"perftest": [
            {{"name": "ts0", "src": "h0", "dst": "h2", "verb": "write", "message_size": "64KiB", "queue_depth": 8}},
            {{"name": "ts1", "src": "h3", "dst": "h2", "verb": "write", "message_size": "64KiB", "queue_depth": 8}},
            {{"name": "ls", "src": "h1", "dst": "h2", "verb": "write", "message_size": "64B", "queue_depth": 1{ls_extra}}}]}}}}"#
    )
}

fn ls_latency_us(w: &rdmalab_core::world::World) -> f64 {
    let a = &w.apps[2];
    a.latencies_ps.iter().sum::<u64>() as f64 / a.latencies_ps.len().max(1) as f64 / 1e6
}

#[test]
fn a_class_of_its_own_keeps_latency_under_load() {
    let run = |extra: &str| {
        let mut w = Scenario::from_json_str(&scenario(extra)).unwrap().build().unwrap();
        w.run_to_end().unwrap();
        assert_conservation(&w);
        w
    };
    let shared = run("");
    let own = run(r#", "class": 5"#);
    let (a, b) = (ls_latency_us(&shared), ls_latency_us(&own));
    println!("64 B latency beside 2 bulk senders: {a:.1} us in their class, {b:.1} us in its own");
    assert!(b * 5.0 < a, "its own class avoids the bulk queue: {b:.1} vs {a:.1} us");
    assert!(b < 10.0, "{b:.1} us");
    let bulk = |w: &rdmalab_core::world::World| w.apps[0].completed_bytes + w.apps[1].completed_bytes;
    assert!(bulk(&own) as f64 > 0.95 * bulk(&shared) as f64, "the bulk senders keep their throughput");
}

/// Moves its QP to the class the application's `priority` hint asks for.
struct ClassFromHint;
impl Controller for ClassFromHint {
    fn name(&self) -> &str {
        "class-from-hint"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::PEER) // hints come with the peer (host) events
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        if let CcEvent::Hint { kind: HintKind::Priority, value } = *ev {
            ctx.set_class(value as u8);
        }
    }
}

#[test]
fn a_controller_changes_the_class_at_run_time() {
    let with = |hint: &str| {
        let mut s = Scenario::from_json_str(&scenario(hint)).unwrap();
        s.cc = CcConfig::Custom(ControllerFactory { name: "class-from-hint".into(), make: Arc::new(|| Box::new(ClassFromHint)) });
        let mut w = s.build().unwrap();
        w.run_to_end().unwrap();
        assert_conservation(&w);
        w
    };
    let moved = with(r#", "hints": {"priority": 6}"#);
    let stayed = with("");
    let ls_qp = moved.apps[2].qp.unwrap() as usize;
    assert_eq!(moved.qps[ls_qp].class, 6);
    assert_eq!(stayed.qps[ls_qp].class, 3);
    assert!(ls_latency_us(&moved) * 5.0 < ls_latency_us(&stayed));
    // A class outside 1..=7 is refused as a controller error.
    let mut s = Scenario::from_json_str(&scenario(r#", "hints": {"priority": 0}"#)).unwrap();
    s.cc = CcConfig::Custom(ControllerFactory { name: "class-from-hint".into(), make: Arc::new(|| Box::new(ClassFromHint)) });
    let mut w = s.build().unwrap();
    let e = w.run_to_end().unwrap_err().to_string();
    assert!(e.contains("traffic class 0"), "{e}");
}

#[test]
fn a_bad_class_is_refused() {
    let e = Scenario::from_json_str(&scenario(r#", "class": 0"#)).err().unwrap().to_string();
    assert!(e.contains("class") && e.contains("1 to 7"), "{e}");
}
