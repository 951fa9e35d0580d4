//! SwCC's selective triggering (`control.trigger`): a filter by packet
//! opcode decides which packets raise CC events, and TX events that pass
//! only every N-th carry the bytes of the packets skipped in between.

mod common;
use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask};
use rdmalab_core::scenario::Scenario;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Seen {
    tx_events: u64,
    tx_bytes: u64,
    tx_packets: u64,
    acks: u64,
}

struct Recorder(Arc<Mutex<Seen>>);
impl Controller for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::TX | EventMask::ACK)
    }
    fn on_event(&mut self, ev: &CcEvent, _ctx: &mut CcContext) {
        let mut s = self.0.lock().unwrap();
        match *ev {
            CcEvent::Tx { bytes, packets } => {
                s.tx_events += 1;
                s.tx_bytes += bytes as u64;
                s.tx_packets += packets as u64;
            }
            CcEvent::Ack { .. } => s.acks += 1,
            _ => {}
        }
    }
}

/// Ten 10,000 B messages (10 packets each at a 1024 B MTU) on one QP.
fn seen(trigger: &str) -> (Seen, rdmalab_core::world::World) {
    let json = format!(
        r#"{{"name": "trig", "duration": "1ms",
        "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "nic": {{"mtu": "1024B"}},
        "control": {{{trigger}}},
        "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "10000B", "queue_depth": 1, "stop": "20us"}}]}}}}"#
    );
    let mut s = Scenario::from_json_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let log = Arc::new(Mutex::new(Seen::default()));
    let l2 = log.clone();
    s.cc = CcConfig::custom("recorder", move || Box::new(Recorder(l2.clone())));
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let out = std::mem::take(&mut *log.lock().unwrap());
    (out, w)
}

#[test]
fn the_filter_passes_only_the_named_packets() {
    let (all, w) = seen("");
    let messages = w.apps[0].completed;
    assert_eq!(
        all.tx_events,
        messages * 10,
        "unfiltered: one TX event per packet"
    );
    assert!(all.acks > 0);
    // Only a message's last packet, and no ACKs: one event per message, carrying all its bytes.
    let (last, _) = seen(r#""trigger": {"on": ["tx_last"]}"#);
    assert_eq!(last.tx_events, messages);
    assert_eq!(
        last.tx_bytes,
        messages * 10_000,
        "the skipped packets' bytes ride on the event"
    );
    assert_eq!(last.tx_packets, messages * 10);
    assert_eq!(last.acks, 0, "ACK events filtered out");
    // Every 4th data packet.
    let (every4, _) =
        seen(r#""trigger": {"on": ["tx_first", "tx_middle", "tx_last", "ack"], "every": 4}"#);
    assert_eq!(every4.tx_events, messages * 10 / 4);
    assert_eq!(every4.tx_packets, every4.tx_events * 4);
    assert_eq!(every4.acks, all.acks);
    // The packets sent, by kind: each message's first, its 8 middle ones and
    // its last (a message still being sent at the end has no last yet).
    let sent = all.tx_events;
    let (first, _) = seen(r#""trigger": {"on": ["tx_first"]}"#);
    assert_eq!(
        first.tx_events,
        sent.div_ceil(10),
        "one per message started"
    );
    let (middle, _) = seen(r#""trigger": {"on": ["tx_middle"]}"#);
    let (last_only, _) = seen(r#""trigger": {"on": ["tx_last"]}"#);
    assert_eq!(last_only.tx_events, sent / 10, "one per message fully sent");
    assert_eq!(
        first.tx_events + middle.tx_events + last_only.tx_events,
        sent
    );
}

#[test]
fn unknown_packet_kinds_are_refused() {
    let json = r#"{"name": "bad", "duration": "10us", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "control": {"trigger": {"on": ["tx_first", "read_response"]}}, "cc": {"algorithm": "dcqcn"},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}}"#;
    let e = Scenario::from_json_str(json).err().unwrap().to_string();
    assert!(
        e.contains("control.trigger.on") && e.contains("read_response") && e.contains("tx_middle"),
        "{e}"
    );
    let json = json.replace(r#""on": ["tx_first", "read_response"]"#, r#""every": 0"#);
    let e = Scenario::from_json_str(&json).err().unwrap().to_string();
    assert!(e.contains("control.trigger.every"), "{e}");
}

/// A filter that can raise nothing, an `every` with no TX kind to count, or
/// `rx` where no RX events exist used to be taken: the controller silently
/// saw no events, or `every` did nothing.
#[test]
fn a_filter_that_passes_nothing_is_refused() {
    let json = |control: &str| {
        format!(
            r#"{{"name": "bad", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "control": {control}, "cc": {{"algorithm": "dcqcn"}},
            "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
        )
    };
    for (control, want) in [
        (
            r#"{"trigger": {"on": []}}"#,
            "control.trigger.on: `[]` — needs at least one packet kind",
        ),
        (
            r#"{"trigger": {"on": ["ack", "cnp"], "every": 8}}"#,
            "control.trigger.every: `8` — counts TX packets",
        ),
        (
            r#"{"trigger": {"on": ["cnp", "rx"]}}"#,
            "control.trigger.on: `rx` — no RX events exist at this placement",
        ),
    ] {
        let e = Scenario::from_json_str(&json(control))
            .err()
            .unwrap_or_else(|| panic!("accepted {control}"))
            .to_string();
        assert!(e.contains(want), "{control}: {e}");
    }
    for control in [
        r#"{"trigger": {"on": ["tx_last", "cnp"], "every": 8}}"#,
        r#"{"rx_events": true, "trigger": {"on": ["cnp", "rx"]}}"#,
        r#"{"trigger": {"every": 2}}"#,
        r#"{"trigger": {"on": null}}"#,
    ] {
        Scenario::from_json_str(&json(control)).unwrap_or_else(|e| panic!("{control}: {e}"));
    }
}
