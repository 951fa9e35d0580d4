//! The switches that make rdmalab behave like the ns-3 HPCC simulator where
//! users need agreement: CNP as an ACK flag, no retransmission timeout, ACKs
//! in the data class, BDP windows scaled by rate, the fabric's largest RTT,
//! ns-3's FCT file and queue-length monitor.

mod common;
use common::*;
use rdmalab_core::world::{Progress, World};

const INCAST: &str = r#""topology": {"kind": "single_switch", "hosts": 5, "host_link": {"rate": "100Gbps", "delay": "1us"}},
    "workload": {"incast": {"senders": 4, "receiver": "h4", "size": "2MB"}}"#;

fn ns3(nic: &str, extra: &str) -> World {
    let (w, p) = run(&format!(
        r#"{{"duration": "20ms", {INCAST}, "nic": {{"framing": "ns3-hpcc", "mtu": "1000B" {nic}}} {extra}}}"#
    ));
    assert_eq!(p, Progress::AllFlowsDone);
    assert_conservation(&w);
    w
}

#[test]
fn cnp_as_an_ack_flag_drives_dcqcn_without_cnp_packets() {
    let w = ns3(r#", "cnp": "ack_flag""#, "");
    assert_eq!(w.stats.cnps_sent, 0, "no separate CNP packets");
    assert!(w.stats.ecn_marked > 0);
    assert!(
        w.qps.iter().any(|q| q.rate.as_gbps() < 99.0),
        "DCQCN reacted to flagged ACKs"
    );
}

#[test]
fn acks_in_the_data_class_share_its_queues_and_pauses() {
    let w = ns3(
        r#", "ack_class": "data""#,
        r#", "cc": {"algorithm": "none"}, "switch": {"buffer": "2MB"}"#,
    );
    assert!(w.rec.pfc_events.iter().any(|e| e.pause));
    assert_eq!(w.rec.dropped_frames(), 0);
}

/// ns-3's ACK_HIGH_PRIO 1 (`pfc_holds_acks: false`): a host paused by PFC for
/// its own data still sends the ACKs of the data it receives.
#[test]
fn acks_leave_a_paused_nic_when_pfc_does_not_hold_them() {
    let fct_back = |holds: bool| {
        let (w, p) = run(&format!(
            r#"{{"duration": "20ms", "topology": {{"kind": "single_switch", "hosts": 5, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "nic": {{"framing": "ns3-hpcc", "mtu": "1000B", "ack_class": "data", "pfc_holds_acks": {holds}}},
                "cc": {{"algorithm": "none"}}, "switch": {{"buffer": "2MB"}},
                "workload": {{"incast": {{"senders": ["h0", "h1", "h2", "h3"], "receiver": "h4", "size": "2MB"}},
                             "flows": [{{"src": "h4", "dst": "h0", "size": "1MB"}}]}}}}"#
        ));
        assert_eq!(p, Progress::AllFlowsDone);
        assert!(
            w.rec.pfc_events.iter().any(|e| e.pause && e.from_node == 5),
            "the switch paused the senders"
        );
        let f = w.rec.flows.iter().find(|f| f.src == 4).unwrap();
        (f.finish - f.start).ps()
    };
    let (held, free) = (fct_back(true), fct_back(false));
    assert!(
        free < held,
        "h0's ACKs wait out its pauses only when PFC holds them: {free} vs {held} ps"
    );
    let e = rdmalab_core::scenario::Scenario::from_json_str(
        r#"{"duration": "1us", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
            "nic": {"pfc_holds_acks": false}, "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("nic.pfc_holds_acks: `false` — only applies with `nic.ack_class: data`"),
        "{e}"
    );
}

#[test]
fn a_bdp_window_scaled_by_rate_bounds_bytes_in_flight() {
    let (w, _) = run(&format!(
        r#"{{"duration": "2ms", {INCAST}, "nic": {{"window": "bdp", "window_scales_with_rate": true}}, "records": {{"sample_interval": "5us"}}}}"#
    ));
    for s in &w.rec.qp_samples {
        let qp = &w.qps[s.qp as usize];
        let bdp = qp.path.bdp_bytes();
        // One packet may be in flight beyond the window (it was allowed when below).
        let allowed = bdp * s.rate.bps() / qp.path.line_rate.bps() + 1100;
        assert!(
            s.bytes_in_flight <= allowed.max(1100),
            "in flight {} > window {}",
            s.bytes_in_flight,
            allowed
        );
    }
}

#[test]
fn fabric_max_base_rtt_gives_every_qp_the_largest_rtt() {
    let (w, _) = run(r#"{"duration": "1ms", "nic": {"base_rtt": "fabric_max"},
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2,
                     "host_link": {"rate": "100Gbps", "delay": "1us"}, "fabric_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}, {"src": "h0", "dst": "h2", "size": "1KB"}]}}"#);
    // h0→h1 is one switch away, h0→h2 three: both see the three-switch RTT.
    assert_eq!(w.qps[0].path.base_rtt, w.qps[1].path.base_rtt);
    assert!(w.qps[0].path.base_rtt.ps() > 8_000_000);
}

#[test]
fn without_a_retransmission_timeout_a_lost_tail_stalls_as_in_ns3() {
    let lossy = r#""topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "links": [{"between": ["h0", "s0"], "loss": 0.3}],
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}"#;
    // Find a seed whose loss process drops the flow's only packet (or its ACK).
    let seed = (1..100u64)
        .find(|seed| {
            run(&format!(
                r#"{{"seed": {seed}, "duration": "5ms", {lossy}}}"#
            ))
            .0
            .stats
            .timeouts
                > 0
        })
        .expect("with 30% loss some seed loses the tail");
    let (on, p_on) = run(&format!(
        r#"{{"seed": {seed}, "duration": "5ms", {lossy}}}"#
    ));
    let (off, p_off) = run(&format!(
        r#"{{"seed": {seed}, "duration": "5ms", "nic": {{"rto": "off"}}, {lossy}}}"#
    ));
    assert_eq!(
        p_on,
        Progress::AllFlowsDone,
        "with a timeout the flow recovers"
    );
    assert_eq!(
        p_off,
        Progress::StopTime,
        "without one the lost tail is never resent"
    );
    assert_eq!(off.stats.timeouts, 0);
    assert!(on.stats.timeouts > 0);
}

#[test]
fn the_fct_file_uses_ns3_standalone_formula_and_the_flow_dport() {
    let (w, _) = run(
        r#"{"duration": "5ms", "nic": {"framing": "ns3-hpcc", "mtu": "1000B"},
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "10000B", "dport": 200}]}}"#,
    );
    let mut out = Vec::new();
    w.write_hpcc_fct(&mut out).unwrap();
    let line = String::from_utf8(out).unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.len(), 8);
    assert_eq!(
        (f[0], f[1], f[2], f[3], f[4]),
        ("0b000001", "0b000101", "10000", "200", "10000")
    );
    // base RTT = 2 links × (2 × 1 µs + 1000 B at 100 Gb/s) = 4160 ns; + (10000 + 10 × 48) B at 100 Gb/s = 838.4 ns.
    assert_eq!(f[7], "4998");
}

#[test]
fn the_queue_length_monitor_writes_ns3_histograms() {
    // As third.cc's monitor_buffer: samples every 100 ns from 99.8 ms until
    // the first tick at or past 100.05 ms, dumps only at multiples of 100 ms.
    let (w, _) = run(
        r#"{"duration": "101ms", "topology": {"kind": "single_switch", "hosts": 5, "host_link": {"rate": "100Gbps", "delay": "1us"}},
            "workload": {"incast": {"senders": 4, "receiver": "h4", "size": "2MB", "start": "99800us"}},
            "cc": {"algorithm": "none"}, "records": {"qlen_monitor": {"start": "99800us", "end": "100050us"}}}"#,
    );
    let mut out = Vec::new();
    w.write_hpcc_qlen(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], "time: 100000000",
        "one dump, at the multiple of 100 ms"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("time:")).count(),
        1,
        "none when the window ends"
    );
    // Each port's counts add up to the samples up to the dump: 200 µs / 100 ns + 1.
    for l in &lines[1..] {
        let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert_eq!(v[2..].iter().sum::<u64>(), 2001, "{l}");
        assert_eq!(v[0], 5, "switch node id");
        assert!(v[1] >= 1, "ns-3 interface indices start at 1");
    }
    let busy = lines[1..].iter().any(|l| l.split_whitespace().count() > 3);
    assert!(busy, "the incast port's queue shows up above the 0 KB bin");
}

#[test]
fn run_to_duration_keeps_going_after_the_last_flow() {
    let flows = r#""topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps"}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}"#;
    let (early, p) = run(&format!(r#"{{"duration": "1ms", {flows}}}"#));
    assert_eq!(p, Progress::AllFlowsDone);
    assert!(early.now().ps() < 100_000_000);
    let (full, p) = run(&format!(
        r#"{{"duration": "1ms", "run_to_duration": true, {flows}}}"#
    ));
    assert_eq!(p, Progress::StopTime);
    assert_eq!(full.rec.flows.len(), 1);
}

/// Records the INT hops echoed on every ACK.
struct IntLog(std::rc::Rc<std::cell::RefCell<Vec<rdmalab_core::packet::IntHop>>>);

impl rdmalab_core::control::Controller for IntLog {
    fn name(&self) -> &str {
        "int-log"
    }
    fn on_event(
        &mut self,
        ev: &rdmalab_core::control::CcEvent,
        ctx: &mut rdmalab_core::control::CcContext,
    ) {
        if matches!(ev, rdmalab_core::control::CcEvent::Ack { .. }) {
            self.0.borrow_mut().extend_from_slice(ctx.int);
        }
    }
}

#[test]
fn int_multi_quantises_hop_records_as_ns3() {
    let json = |multi: &str| {
        format!(
            r#"{{"name": "int", "duration": "200us",
                "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "switch": {{"int": true {multi}}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h2", "size": "1MB"}}, {{"src": "h1", "dst": "h2", "size": "1MB"}}]}}}}"#
        )
    };
    let hops = |multi: &str| {
        let mut s = rdmalab_core::scenario::Scenario::from_json_str(&json(multi))
            .unwrap_or_else(|e| panic!("{e}"));
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let l2 = log.clone();
        s.cc =
            rdmalab_core::algo::CcConfig::custom("int-log", move || Box::new(IntLog(l2.clone())));
        s.build().unwrap().run_to_end().unwrap();
        let v = log.borrow().clone();
        v
    };
    let q = hops(r#", "int_multi": 4"#);
    assert!(
        q.len() > 100 && q.iter().any(|h| h.qlen_bytes > 0),
        "two flows into one port queue up"
    );
    for h in &q {
        assert_eq!(h.qlen_bytes % 320, 0, "queue in 80·4 B units");
        assert_eq!(h.tx_bytes % 512, 0, "bytes in 128·4 B units");
        assert_eq!(h.timestamp.ps() % 1000, 0, "timestamps in ns");
    }
    let exact = hops("");
    assert!(
        exact.iter().any(|h| h.tx_bytes % 512 != 0),
        "without int_multi the values are exact"
    );
}

/// `switch.ecmp: ns3-hpcc` installs next hops in the order ns-3's third.cc
/// does. On the 320-host fat tree all 17,920 (switch, host) tables matched a
/// dump from an ns-3 HPCC build; these are its facts: a ToR lists its uplinks
/// as devices 20 19 18 17, an aggregation switch its cores as 8 7 6 5.
#[test]
fn ns3_ecmp_installs_next_hops_in_ns3_order() {
    let s = rdmalab_core::scenario::Scenario::from_json_str(
        r#"{"duration": "1us", "topology": {"kind": "hpcc_file", "builtin": "hpcc-fat-tree-320-hosts"},
            "switch": {"ecmp": "ns3-hpcc"}, "workload": {"flows": [{"src": "h0", "dst": "h319", "size": "1KB"}]}}"#,
    )
    .unwrap();
    let w = s.build().unwrap();
    // ns-3 numbers a node's devices from 1.
    let devices = |sw: u32, host: u32| -> Vec<u32> {
        w.routing
            .next_hops(sw, host)
            .iter()
            .map(|&p| w.ports[p as usize].local + 1)
            .collect()
    };
    assert_eq!(devices(320, 319), [20, 19, 18, 17]);
    assert_eq!(devices(340, 319), [8, 7, 6, 5]);
    assert_eq!(devices(360, 319), [5]);
    assert_eq!(devices(360, 0), [1]);
    let bad = r#"{"duration": "1us", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "switch": {"ecmp": "random"}, "tx_time": "rounded", "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}}"#;
    let e = rdmalab_core::scenario::Scenario::from_json_str(bad)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("switch.ecmp: `random`") && e.contains("rdmalab, ns3-hpcc"),
        "{e}"
    );
    assert!(
        e.contains("tx_time: `rounded`") && e.contains("exact, ns3-truncated"),
        "{e}"
    );
}

/// `tx_time: ns3-truncated`: a lone flow finishes as in ns-3.17, whose links
/// and pacer cut each frame's time to whole ns (1 MB of 1000 B packets with
/// 48 B headers: 83 ns a packet instead of 83.84).
#[test]
fn ns3_truncated_tx_times_shorten_a_lone_flow_as_in_ns3() {
    let fct = |tx: &str| {
        let (w, _) = run(&format!(
            r#"{{"duration": "1ms", "tx_time": "{tx}", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "nic": {{"framing": "ns3-hpcc", "mtu": "1000B"}}, "cc": {{"algorithm": "none"}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1000000B"}}]}}}}"#
        ));
        let f = &w.rec.flows[0];
        (f.finish - f.start).ps() as f64
    };
    let (exact, ns3) = (fct("exact"), fct("ns3-truncated"));
    // 1000 packets, 0.84 ns each on the bottleneck.
    let saved_ns = (exact - ns3) / 1000.0;
    assert!(
        (saved_ns - 840.0).abs() < 10.0,
        "{exact} vs {ns3}: {saved_ns} ns saved"
    );
}

/// Drops the rate to 10 Gb/s when the 10th packet leaves.
struct SlowAfterTen(u32);
impl rdmalab_core::control::Controller for SlowAfterTen {
    fn name(&self) -> &str {
        "slow-after-ten"
    }
    fn subscriptions(&self) -> rdmalab_core::control::EventMask {
        rdmalab_core::control::EventMask(rdmalab_core::control::EventMask::TX)
    }
    fn on_event(
        &mut self,
        ev: &rdmalab_core::control::CcEvent,
        ctx: &mut rdmalab_core::control::CcContext,
    ) {
        if let rdmalab_core::control::CcEvent::Tx { packets, .. } = *ev {
            self.0 += packets;
            if self.0 == 10 {
                ctx.set_rate(rdmalab_core::time::Rate::gbps(10));
            }
        }
    }
}

/// `nic.rate_change: next_packet` (ns-3's DCQCN, TIMELY, DCTCP): a new rate
/// counts from the packet after next, so the 11th packet still leaves one
/// 100 Gb/s gap after the 10th instead of a 10 Gb/s one.
#[test]
fn a_rate_change_can_wait_for_the_packet_after_next_as_in_ns3() {
    let fct = |when: &str| {
        let mut s = rdmalab_core::scenario::Scenario::from_json_str(&format!(
            r#"{{"duration": "1ms", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "nic": {{"framing": "ns3-hpcc", "mtu": "1000B", "rate_change": "{when}"}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "20000B"}}]}}}}"#
        ))
        .unwrap();
        s.cc = rdmalab_core::algo::CcConfig::custom("slow-after-ten", || Box::new(SlowAfterTen(0)));
        let mut w = s.build().unwrap();
        w.run_to_end().unwrap();
        let f = &w.rec.flows[0];
        (f.finish - f.start).ps() as i64
    };
    // One 1048 B gap at 10 Gb/s (838.4 ns) replaced by one at 100 Gb/s (83.84 ns).
    let saved = fct("immediate") - fct("next_packet");
    assert!((saved - 754_560).abs() < 2_000, "saved {saved} ps");
}

/// `nic.qp_scheduler: ns3-hpcc`: ns-3's RdmaEgressQueue keeps QPs in creation
/// order and scans on from the one that sent last, so a QP that appears while
/// A and B alternate is served right after the next of them, not after both.
#[test]
fn ns3_round_robin_serves_a_new_qp_before_the_scan_wraps() {
    let fct_of_c = |sched: &str| {
        let (w, p) = run(&format!(
            r#"{{"duration": "1ms", "topology": {{"kind": "single_switch", "hosts": 4, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "nic": {{"framing": "ns3-hpcc", "mtu": "1000B", "qp_scheduler": "{sched}"}}, "cc": {{"algorithm": "none"}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "100000B"}}, {{"src": "h0", "dst": "h2", "size": "100000B"}},
                                       {{"src": "h0", "dst": "h3", "size": "1000B", "start": "10030ns"}}]}}}}"#
        ));
        assert_eq!(p, Progress::AllFlowsDone);
        assert_conservation(&w);
        let f = w.rec.flows.iter().find(|f| f.dst == 3).unwrap();
        (f.finish - f.start).ps() as i64
    };
    let (rr, ns3) = (fct_of_c("packet"), fct_of_c("ns3-hpcc"));
    // A and B alternate 83.84 ns frames from t = 0, so B's 120th frame is on
    // the wire when C appears at 10.03 µs. ns-3 serves C next (it follows B in
    // the list); rdmalab's rotation serves A and B first: two frames later.
    assert!(
        (rr - ns3 - 2 * 83_840).abs() < 1_000,
        "packet {rr} ps, ns3-hpcc {ns3} ps"
    );
}

#[test]
fn the_ns3_round_robin_refuses_a_host_pcie_model() {
    let e = rdmalab_core::scenario::Scenario::from_json_str(
        r#"{"duration": "1us", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
            "nic": {"qp_scheduler": "ns3-hpcc"}, "host": {"pcie": "gen4x16"},
            "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("nic.qp_scheduler: `ns3-hpcc` — replays ns-3's NIC"),
        "{e}"
    );
}

/// ns-3 carries TIMELY's send timestamp as an 8 B header on data and ACKs;
/// real RoCEv2 framing has no such bytes.
#[test]
fn timely_adds_ns3s_timestamp_header_only_in_ns3_framing() {
    let int_header = |framing: &str| {
        let s = rdmalab_core::scenario::Scenario::from_json_str(&format!(
            r#"{{"duration": "1us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "nic": {{"framing": "{framing}", "mtu": "1000B"}}, "cc": {{"algorithm": "timely"}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
        ))
        .unwrap();
        (s.nic.wire.int_header, s.nic.wire.data_frame(1000, 0))
    };
    assert_eq!(int_header("ns3-hpcc"), (8, 1056));
    assert_eq!(int_header("rocev2").0, 0);
}
