//! Out-of-band RTT probes: they follow the path their UDP source port hashes
//! to, see that path's queueing, time out on a failed path, and a controller
//! can move a QP to the better path.

mod common;
use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask};
use rdmalab_core::net::routing::L4Ports;
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::{Duration, Time};
use std::cell::RefCell;
use std::rc::Rc;

/// Probes two paths every 20 µs, logs (time, path, rtt, lost, sent), and moves the
/// QP to the path with the lower latest RTT.
struct TwoPaths {
    paths: [u16; 2],
    last: [Option<Duration>; 2],
    log: Rc<RefCell<Vec<(Time, u16, Duration, bool, Time)>>>,
}

impl Controller for TwoPaths {
    fn name(&self) -> &str {
        "two-paths"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::RTT)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        ctx.set_timer(0, ctx.now + Duration::from_us(20));
        ctx.set_path(self.paths[0]);
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Timer { .. } => {
                ctx.request_probe(self.paths[0]);
                ctx.request_probe(self.paths[1]);
                ctx.set_timer(0, ctx.now + Duration::from_us(20));
            }
            CcEvent::Rtt {
                udp_sport,
                sent,
                rtt,
                lost,
            } => {
                self.log
                    .borrow_mut()
                    .push((ctx.now, udp_sport, rtt, lost, sent));
                let i = if udp_sport == self.paths[0] { 0 } else { 1 };
                self.last[i] = if lost {
                    Some(Duration(u64::MAX))
                } else {
                    Some(rtt)
                };
                if let (Some(a), Some(b)) = (self.last[0], self.last[1]) {
                    ctx.set_path(if a <= b { self.paths[0] } else { self.paths[1] });
                }
            }
            _ => {}
        }
    }
}

const SCENARIO: &str = r#"{"duration": "3ms",
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                 "host_link": {"rate": "100Gbps", "delay": "1us"}, "fabric_link": {"rate": "100Gbps", "delay": "1us"}},
    "cc": {"algorithm": "none"},
    "links": [{"between": ["leaf0", "spine1"], "down": [["2ms", "2500us"]]}],
    "workload": {"perftest": [{"src": "h0", "dst": "h2", "message_size": "64KB", "queue_depth": 1}]}}"#;

#[test]
fn probes_measure_each_path_detect_a_failure_and_steer_the_qp() {
    let mut s = Scenario::from_json_str(SCENARIO).unwrap();
    let w0 = s.build().unwrap();
    // Find one source port per spine as leaf0 hashes them for h0 → h2.
    let leaf0 = w0.topo.find("leaf0").unwrap();
    let (h0, h2) = (w0.topo.find("h0").unwrap(), w0.topo.find("h2").unwrap());
    let mut by_port = std::collections::BTreeMap::new();
    for sport in 20000..20064u16 {
        by_port
            .entry(
                w0.routing
                    .select(leaf0, h0, h2, L4Ports::rocev2(sport))
                    .unwrap(),
            )
            .or_insert(sport);
    }
    let paths: Vec<u16> = by_port.values().copied().collect();
    assert_eq!(paths.len(), 2, "two spines, two paths");
    // Which of the two goes through spine1 (the link that fails)?
    let spine1 = w0.topo.find("spine1").unwrap();
    let via_spine1 = |sport: u16| {
        let p = w0
            .routing
            .select(leaf0, h0, h2, L4Ports::rocev2(sport))
            .unwrap();
        w0.ports[w0.ports[p as usize].peer as usize].node == spine1
    };
    // Start the QP on the path that will fail.
    let (failed, healthy) = if via_spine1(paths[0]) {
        (paths[0], paths[1])
    } else {
        (paths[1], paths[0])
    };
    let log = Rc::new(RefCell::new(Vec::new()));
    let (l2, p2) = (log.clone(), [failed, healthy]);
    s.cc = CcConfig::custom("two-paths", move || {
        Box::new(TwoPaths {
            paths: p2,
            last: [None, None],
            log: l2.clone(),
        })
    });
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let log = log.borrow();
    assert!(
        log.len() > 200,
        "two probes every 20 µs for 3 ms: {}",
        log.len()
    );
    // Idle paths: the probe RTT is about 4 links × 2 × 1 µs plus serialisation.
    let idle: Vec<&(Time, u16, Duration, bool, Time)> = log
        .iter()
        .filter(|e| e.0.ps() < 2_000_000_000 && !e.3)
        .collect();
    assert!(
        idle.iter()
            .all(|e| e.2.ps() >= 8_000_000 && e.2.ps() < 30_000_000),
        "idle probe RTTs near the base RTT"
    );
    // While spine1's link is down, its probes are reported lost (100 µs timeout)...
    let during: Vec<_> = log
        .iter()
        .filter(|e| e.0.ps() > 2_150_000_000 && e.0.ps() < 2_500_000_000 && e.1 == failed)
        .collect();
    assert!(
        !during.is_empty() && during.iter().all(|e| e.3),
        "probes on the failed path are lost"
    );
    // ...the other path keeps answering, and after recovery both answer again.
    assert!(
        log.iter()
            .any(|e| e.0.ps() > 2_700_000_000 && e.1 == failed && !e.3),
        "recovery is seen"
    );
    // The QP was steered off the failed path within about a probe timeout:
    // some frames were lost on it, then data kept flowing on the other.
    let drops = w.rec.dropped_frames_for("link_down");
    assert!(drops > 0, "the QP was on the failed path when it went down");
    assert!(
        drops < 2_000,
        "it left within ~100 µs of probe timeout ({drops} frames lost)"
    );
    assert!(w.apps[0].completed > 10, "messages kept completing");
    common::assert_conservation(&w);
}

/// On slow control cores the RTT event arrives late, but says when its probe
/// left: `sent + rtt` is when the NIC saw the answer (or the timeout), not when
/// the controller ran.
#[test]
fn a_late_rtt_event_still_says_when_its_probe_was_sent() {
    let mut s = Scenario::from_json_str(&SCENARIO.replace(
        r#""cc": {"algorithm": "none"},"#,
        r#""cc": {"algorithm": "none"}, "control": {"placement": "dpa"},"#,
    ))
    .unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let l2 = log.clone();
    s.cc = CcConfig::custom("two-paths", move || {
        Box::new(TwoPaths {
            paths: [20000, 20001],
            last: [None, None],
            log: l2.clone(),
        })
    });
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let log = log.borrow();
    let answered: Vec<_> = log.iter().filter(|e| !e.3).collect();
    assert!(answered.len() > 100, "{} answers", answered.len());
    for e in &answered {
        let seen_by_nic = e.4 + e.2;
        let row = w
            .rec
            .probes
            .iter()
            .find(|r| r.time == seen_by_nic && r.udp_sport == e.1 && r.rtt == e.2);
        assert!(
            row.is_some(),
            "the NIC answered the probe sent at {:?} at {seen_by_nic:?}",
            e.4
        );
        // DPA: at least the trigger and processing latencies later.
        assert!(
            e.0.ps() >= seen_by_nic.ps() + 7_000_000,
            "delivered at {:?}, seen at {seen_by_nic:?}",
            e.0
        );
    }
}
