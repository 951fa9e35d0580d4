//! Signals from the peer and host domains: receive-side events where the
//! placement has them, out-of-band messages between a QP's two ends, and
//! application hints.

mod common;
use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask, HintKind};
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::Rate;

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
                assert!(
                    !to_receiver && !ctx.at_receiver,
                    "the grant travels receiver → sender"
                );
                ctx.set_rate(Rate::gbps(words[0] as u64));
            }
            CcEvent::Hint {
                kind: HintKind::Weight,
                value,
            } => {
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
    s.cc = CcConfig::custom("grants", move || {
        Box::new(Grants {
            grant_gbps: 30,
            seen: 0,
            granted: !grant,
        })
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
    assert!(
        bytes * 8.0 / 2e-3 < 40e9,
        "{:.1} Gb/s",
        bytes * 8.0 / 2e-3 / 1e9
    );
    common::assert_conservation(&w);
}

#[test]
fn rx_events_are_refused_where_the_placement_lacks_them() {
    for control in [r#"{}"#, r#"{"placement": "dpa"}"#] {
        let e = scenario(control, "").build().err().expect("refused");
        assert!(
            e.contains("subscribes to RX events")
                && e.contains("allowed: placement swcc or host-cpu"),
            "{e}"
        );
    }
    assert!(scenario(r#"{"placement": "dpa", "rx_events": true}"#, "")
        .build()
        .is_ok());
}

#[test]
fn application_hints_reach_the_controller() {
    let mut w = with_grant(
        r#"{"placement": "host-cpu"}"#,
        r#", "hints": {"weight": 2.5}"#,
        false,
    )
    .build()
    .unwrap();
    w.run_until(rdmalab_core::time::Time(100_000_000)).unwrap();
    assert_eq!(w.qps[0].rate, Rate::gbps(25), "weight 2.5 × 10 Gb/s");
    // A hint at run time, as the Python API sends them.
    w.hint(0, HintKind::Weight, 4.0).unwrap();
    w.run_until(rdmalab_core::time::Time(200_000_000)).unwrap();
    assert_eq!(w.qps[0].rate, Rate::gbps(40));
    assert!(w
        .hint(7, HintKind::Weight, 1.0)
        .unwrap_err()
        .contains("no QP 7"));
}

fn one_flow(host: &str, size: &str) -> rdmalab_core::world::World {
    let (w, _) = common::run(&format!(
        r#"{{"duration": "3ms", "cc": {{"algorithm": "none"}}, "host": {host}, "records": {{"sample_interval": "10us"}},
        "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "{size}"}}]}}}}"#
    ));
    common::assert_conservation(&w);
    w
}

#[test]
fn a_pcie_link_slower_than_the_port_caps_the_payload_rate() {
    let w = one_flow(r#"{"pcie_bandwidth": "50Gbps"}"#, "10MB");
    let f = &w.rec.flows[0];
    let goodput = 10e6 * 8.0 / (f.fct().ps() as f64 / 1e12);
    // 10 MB of payload plus one 64 B WQE at 50 Gb/s.
    assert!(
        (goodput / 50e9 - 1.0).abs() < 0.02,
        "{:.2} Gb/s",
        goodput / 1e9
    );
    let fast = one_flow(r#"{"pcie": "gen4x16"}"#, "10MB");
    assert!(
        fast.rec.flows[0].slowdown() < 1.01,
        "a Gen4 x16 link does not limit 100 Gb/s"
    );
}

#[test]
fn the_first_packet_of_a_message_waits_for_host_memory() {
    let plain = one_flow("{}", "1B");
    let pcie = one_flow(r#"{"pcie": "gen4x16", "pcie_latency": "900ns"}"#, "1B");
    let extra = pcie.rec.flows[0].fct().ps() - plain.rec.flows[0].fct().ps();
    assert_eq!(extra, 900_000, "one DMA round trip");
}

struct Reports(std::rc::Rc<std::cell::RefCell<Vec<(f64, f64, u32)>>>);
impl Controller for Reports {
    fn name(&self) -> &str {
        "reports"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::HOST)
    }
    fn on_event(&mut self, ev: &CcEvent, _: &mut CcContext) {
        if let CcEvent::Host {
            pcie_utilization,
            port_utilization,
            active_qps,
            ..
        } = *ev
        {
            self.0
                .borrow_mut()
                .push((pcie_utilization, port_utilization, active_qps));
        }
    }
}

#[test]
fn host_reports_carry_pcie_and_port_utilization() {
    let mut s = Scenario::from_json_str(
        r#"{"duration": "1ms", "host": {"pcie_bandwidth": "50Gbps", "report_interval": "20us"},
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"perftest": [{"src": "h0", "dst": "h1", "message_size": "1MB", "queue_depth": 2}]}}"#,
    )
    .unwrap();
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let l2 = log.clone();
    s.cc = CcConfig::custom("reports", move || Box::new(Reports(l2.clone())));
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let log = log.borrow();
    assert!(log.len() > 40, "a report every 20 µs");
    let late = &log[10..];
    assert!(
        late.iter().all(|r| (r.0 - 1.0).abs() < 0.05),
        "PCIe saturated: {:?}",
        &late[..3]
    );
    assert!(
        late.iter().all(|r| r.1 > 0.45 && r.1 < 0.6),
        "port about half busy: {:?}",
        &late[..3]
    );
    assert!(late.iter().all(|r| r.2 == 1));
}

/// A tenant's weight, given as a hint, becomes its QPs' share of the NIC.
struct Shares;
impl Controller for Shares {
    fn name(&self) -> &str {
        "shares"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::PEER)
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        if let CcEvent::Hint {
            kind: HintKind::Weight,
            value,
        } = *ev
        {
            ctx.set_share(value as u32);
        }
    }
}

#[test]
fn a_tenant_share_weights_the_nic_qp_scheduler() {
    let mut s = Scenario::from_json_str(
        r#"{"duration": "2ms", "records": {"sample_interval": "100us"},
        "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"perftest": [
            {"name": "gold", "src": "h0", "dst": "h1", "message_size": "1MB", "queue_depth": 2, "hints": {"weight": 3}},
            {"name": "bronze", "src": "h0", "dst": "h2", "message_size": "1MB", "queue_depth": 2, "hints": {"weight": 1}}]}}"#,
    )
    .unwrap();
    s.cc = CcConfig::custom("shares", || Box::new(Shares));
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let delivered = |app: usize| w.qps[w.apps[app].qp.unwrap() as usize].delivered_bytes as f64;
    let (gold, bronze) = (delivered(0), delivered(1));
    assert!(
        (gold / bronze - 3.0).abs() < 0.1,
        "3:1 shares of the sender's port: {gold} vs {bronze}"
    );
    common::assert_conservation(&w);
}
