//! SwCC's extensible CC header (`control.cc_header`, ATC'25 §4.3.1): bytes a
//! controller writes travel on its data packets, count on the wire, and come
//! back on the ACKs, where the controller reads them.

mod common;
use common::assert_conservation;
use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask};
use rdmalab_core::scenario::Scenario;
use std::sync::{Arc, Mutex};

/// Stamps each data packet with its TX time (ns, two words) and, on the ACK,
/// records (RTT from the echoed stamp, RTT the NIC measured) in `seen`.
struct Stamp {
    seen: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl Controller for Stamp {
    fn name(&self) -> &str {
        "stamp"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::TX | EventMask::ACK)
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Tx { .. } => {
                let ns = ctx.now.ps() / 1000;
                ctx.set_header_word(0, ns as u32);
                ctx.set_header_word(1, (ns >> 32) as u32);
            }
            CcEvent::Ack { rtt, .. } => {
                if let [lo, hi, ..] = *ctx.header {
                    let sent = (hi as u64) << 32 | lo as u64;
                    self.seen
                        .lock()
                        .unwrap()
                        .push((ctx.now.ps() / 1000 - sent, rtt.ps() / 1000));
                }
            }
            _ => {}
        }
    }
}

fn flow(header: Option<&str>) -> String {
    let control = header.map_or(String::new(), |h| {
        format!(r#""control": {{"cc_header": "{h}"}},"#)
    });
    format!(
        r#"{{"name": "hdr", "seed": 1, "duration": "1ms",
        "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        {control}
        "cc": {{"algorithm": "none"}},
        "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "100KB"}}]}}}}"#
    )
}

#[test]
fn a_controller_reads_on_the_ack_what_it_wrote_on_the_data() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut s = Scenario::from_json_str(&flow(Some("16B"))).unwrap();
    let sink = seen.clone();
    s.cc = CcConfig::custom("stamp", move || Box::new(Stamp { seen: sink.clone() }));
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    assert_conservation(&w);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 98, "an ACK per packet of 100 KB at 1 KB");
    for &(from_header, measured) in seen.iter() {
        // Both truncated to whole ns.
        assert!(
            from_header.abs_diff(measured) <= 1,
            "the echoed stamp gives the NIC's RTT: {from_header} vs {measured} ns"
        );
    }
    // Without the header nothing comes back.
    let seen2 = Arc::new(Mutex::new(Vec::new()));
    let mut s = Scenario::from_json_str(&flow(None)).unwrap();
    let sink = seen2.clone();
    s.cc = CcConfig::custom("stamp", move || Box::new(Stamp { seen: sink.clone() }));
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    assert!(seen2.lock().unwrap().is_empty());
}

#[test]
fn the_header_counts_on_the_wire_and_in_fcts() {
    let run = |h: Option<&str>| {
        let (w, _) = common::run(&flow(h));
        assert_conservation(&w);
        (
            w.rec.flows[0].fct().ps(),
            w.rec.flows[0].ideal.ps(),
            w.ports.iter().map(|p| p.tx_bytes).sum::<u64>(),
        )
    };
    let (fct0, ideal0, bytes0) = run(None);
    let (fct64, ideal64, bytes64) = run(Some("64B"));
    // 98 data packets and 98 ACKs, each 64 B longer, each crossing two links.
    assert_eq!(
        bytes64 - bytes0,
        2 * 2 * 98 * 64,
        "frame bytes sent by every port"
    );
    // 98 x 64 B more at 100 Gb/s is ~0.5 us on the bottleneck.
    let extra = (fct64 - fct0) as f64 / 1e6;
    assert!((0.45..0.6).contains(&extra), "FCT +{extra:.3} us");
    assert!(ideal64 > ideal0, "the ideal FCT counts the header too");
}

#[test]
fn a_header_over_64_bytes_is_refused() {
    let e = Scenario::from_json_str(&flow(Some("80B")))
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("control.cc_header") && e.contains("`80B`") && e.contains("0B to 64B"),
        "{e}"
    );
}

/// Two Swift senders into one receiver, with an 8 B CC header on the wire
/// either way; `params` goes to Swift.
fn swift_pair(params: &str) -> Vec<(u64, u64)> {
    let json = format!(
        r#"{{"name": "swift-hdr", "seed": 1, "duration": "2ms",
        "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "switch": {{"buffer": "32MiB", "pfc": {{"enabled": true}}}},
        "control": {{"cc_header": "8B"}},
        "cc": {{"algorithm": "swift", "params": {{{params}}}}},
        "workload": {{"flows": [{{"src": "h0", "dst": "h2", "size": "2MB"}}, {{"src": "h1", "dst": "h2", "size": "2MB", "start": "20us"}}]}}}}"#
    );
    let mut w = Scenario::from_json_str(&json).unwrap().build().unwrap();
    w.run_to_end().unwrap();
    assert_conservation(&w);
    w.rec
        .flows
        .iter()
        .map(|f| (f.bytes, f.fct().ps()))
        .collect()
}

#[test]
fn swift_with_header_timestamps_sees_the_rtt_the_nic_would() {
    // SwCC carries Swift's send time in the CC header (Table 3). Stamped by
    // the controller at TX and echoed on the ACK, it gives the NIC's own
    // RTT to the picosecond, so the runs are identical.
    let nic = swift_pair("");
    let hdr = swift_pair(r#""header_timestamps": true"#);
    assert_eq!(nic.len(), 2);
    assert_eq!(nic, hdr);
    let e = Scenario::from_json_str(&flow(None).replace(
        r#""algorithm": "none""#,
        r#""algorithm": "swift", "params": {"header_timestamps": true}"#,
    ))
    .err()
    .expect("refused without the header")
    .to_string();
    assert!(e.contains("control.cc_header") && e.contains("8B"), "{e}");
}
