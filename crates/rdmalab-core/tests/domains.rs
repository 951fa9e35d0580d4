//! Signals from the peer and host domains: receive-side events where the
//! placement has them, out-of-band messages between a QP's two ends, and
//! application hints.

mod common;
use rdmalab_core::algo::{CcConfig, ControllerFactory};
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask, HintKind};
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::Rate;
use std::sync::Arc;

/// Receiver-driven: the receiver end grants `grant_gbps` by an out-of-band
/// message once it has seen 64 KB; the sender end applies the grant.
struct Grants {
    grant_gbps: u32,
    seen: u64,
    granted: bool,
}

impl Controller for Grants {
    fn name(&self) -> &str {
        "grants"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::RX | EventMask::PEER)
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Rx { bytes, .. } => {
                assert!(ctx.at_receiver);
                self.seen += bytes as u64;
                if self.seen >= 65_536 && !self.granted {
                    self.granted = true;
                    ctx.send_oob([self.grant_gbps, 0, 0, 0]);
                }
            }
            CcEvent::Peer { words, to_receiver } => {
                assert!(!to_receiver && !ctx.at_receiver, "the grant travels receiver → sender");
                ctx.set_rate(Rate::gbps(words[0] as u64));
            }
            CcEvent::Hint { kind: HintKind::Weight, value } => {
                ctx.set_rate(Rate((value * 10e9) as u64));
            }
            _ => {}
        }
    }
}

fn scenario(control: &str, hints: &str) -> Scenario {
    with_grant(control, hints, true)
}

fn with_grant(control: &str, hints: &str, grant: bool) -> Scenario {
    let mut s = Scenario::from_json_str(&format!(
        r#"{{"duration": "2ms", "cc": {{"algorithm": "none"}}, "control": {control},
        "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "workload": {{"perftest": [{{"src": "h0", "dst": "h1", "message_size": "1MB", "queue_depth": 2 {hints}}}]}}}}"#
    ))
    .unwrap();
    s.cc = CcConfig::Custom(ControllerFactory {
        name: "grants".into(),
        make: Arc::new(move || Box::new(Grants { grant_gbps: 30, seen: 0, granted: !grant })),
    });
    s
}

#[test]
fn a_receiver_grant_travels_out_of_band_and_sets_the_sender_rate() {
    let mut w = scenario(r#"{"placement": "swcc"}"#, "").build().unwrap();
    w.run_to_end().unwrap();
    assert_eq!(w.qps[0].rate, Rate::gbps(30));
    let fw = w.ctl.as_ref().unwrap();
    let peer = rdmalab_core::control::framework::EventType::Peer as usize;
    assert_eq!(fw.stats.processed[peer], 1, "one grant message");
    // 1 MB messages at 30 Gb/s after the grant: well below line rate overall.
    let bytes = w.apps[0].completed_bytes as f64;
    assert!(bytes * 8.0 / 2e-3 < 40e9, "{:.1} Gb/s", bytes * 8.0 / 2e-3 / 1e9);
    common::assert_conservation(&w);
}

#[test]
fn rx_events_are_refused_where_the_placement_lacks_them() {
    for control in [r#"{}"#, r#"{"placement": "dpa"}"#] {
        let e = scenario(control, "").build().err().expect("refused");
        assert!(e.contains("subscribes to RX events") && e.contains("allowed: placement swcc or host-cpu"), "{e}");
    }
    assert!(scenario(r#"{"placement": "dpa", "rx_events": true}"#, "").build().is_ok());
}

#[test]
fn application_hints_reach_the_controller() {
    let mut w = with_grant(r#"{"placement": "host-cpu"}"#, r#", "hints": {"weight": 2.5}"#, false).build().unwrap();
    w.run_until(rdmalab_core::time::Time(100_000_000)).unwrap();
    assert_eq!(w.qps[0].rate, Rate::gbps(25), "weight 2.5 × 10 Gb/s");
    // A hint at run time, as the Python API sends them.
    w.hint(0, HintKind::Weight, 4.0).unwrap();
    w.run_until(rdmalab_core::time::Time(200_000_000)).unwrap();
    assert_eq!(w.qps[0].rate, Rate::gbps(40));
    assert!(w.hint(7, HintKind::Weight, 1.0).unwrap_err().contains("no QP 7"));
}
