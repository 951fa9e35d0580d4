//! Links and switches configured one by one or by tier (`links[].tier`,
//! `links[].rate`, `switches[]`): each setting lands where it is asked
//! for and nowhere else, and shows in what the fabric does.

mod common;
use common::{assert_conservation, run};
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::Rate;

fn leaf_spine(links: &str) -> String {
    format!(
        r#"{{"duration": "10ms",
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                      "host_link": {{"rate": "100Gbps", "delay": "1us"}},
                      "fabric_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "links": {links},
        "cc": {{"algorithm": "none"}},
        "workload": {{"flows": [{{"src": "h0", "dst": "h2", "size": "1MB"}}]}}}}"#
    )
}

#[test]
fn a_tier_rate_sets_every_link_between_the_two_tiers_and_the_flow_runs_at_it() {
    let (w, _) = run(&leaf_spine(
        r#"[{"tier": ["leaf", "spine"], "rate": "25Gbps"}]"#,
    ));
    assert_conservation(&w);
    let names = |p: &rdmalab_core::net::Port| {
        let peer = &w.ports[p.peer as usize];
        (
            w.topo.nodes[p.node as usize].name.clone(),
            w.topo.nodes[peer.node as usize].name.clone(),
        )
    };
    for p in &w.ports {
        let (a, b) = names(p);
        let fabric = a.starts_with("leaf") && b.starts_with("spine")
            || a.starts_with("spine") && b.starts_with("leaf");
        let want = if fabric {
            Rate::gbps(25)
        } else {
            Rate::gbps(100)
        };
        assert_eq!(p.rate(), want, "port {a} -> {b}");
    }
    // 1 MB in 1000 B packets of 1082 B on the wire: 346 µs at 25 Gb/s, not 87 µs at 100.
    let f = &w.rec.flows[0];
    let fct_us = (f.finish - f.start).ps() as f64 / 1e6;
    assert!(fct_us > 346.0 && fct_us < 360.0, "FCT {fct_us} µs");
    // The ideal FCT knows the slower links: the flow is alone, so its slowdown is ~1.
    assert!(f.slowdown() < 1.05, "slowdown {}", f.slowdown());
}

fn dumbbell_incast(switches: &str) -> rdmalab_core::world::World {
    let (w, _) = run(&format!(
        r#"{{"duration": "50ms",
        "topology": {{"kind": "dumbbell", "left_hosts": 8, "right_hosts": 1,
                      "host_link": {{"rate": "100Gbps", "delay": "1us"}},
                      "bottleneck_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "switches": {switches},
        "cc": {{"algorithm": "dcqcn"}},
        "workload": {{"incast": {{"senders": 8, "receiver": "h8", "size": "500KB"}}}}}}"#
    ));
    assert_eq!(w.rec.flows.len(), 8, "every flow completes");
    assert_conservation(&w);
    w
}

#[test]
fn ecn_off_at_the_congested_switch_stops_the_marks_and_off_elsewhere_does_not() {
    // Eight senders on s0 share its 100 Gb/s port to s1: the queue is at s0.
    let both = dumbbell_incast("[]");
    assert!(both.stats.ecn_marked > 0, "DCQCN's incast is marked");
    let s1_off = dumbbell_incast(r#"[{"names": ["s1"], "ecn": {"enabled": false}}]"#);
    assert_eq!(
        s1_off.stats.ecn_marked, both.stats.ecn_marked,
        "s1 has no queue to mark"
    );
    let s0_off = dumbbell_incast(r#"[{"names": ["s0"], "ecn": {"enabled": false}}]"#);
    assert_eq!(s0_off.stats.ecn_marked, 0, "the only queue is at s0");
}

#[test]
fn a_small_lossy_buffer_drops_only_at_the_switch_it_was_given_to() {
    let w = dumbbell_incast(r#"[{"names": ["s0"], "buffer": "200KB", "pfc": {"enabled": false}}]"#);
    let s0 = w.topo.find("s0").unwrap();
    assert!(w.rec.dropped_frames() > 0, "s0's small lossy buffer drops");
    assert!(
        w.rec.drops.keys().all(|(node, _, _)| *node == s0),
        "{:?}",
        w.rec.drops
    );
    assert!(
        w.rec.pfc_events.iter().all(|e| e.node != s0),
        "s0 is lossy: it never pauses"
    );
    // The same buffer at s1, which has no queue, changes nothing.
    let at_s1 =
        dumbbell_incast(r#"[{"names": ["s1"], "buffer": "200KB", "pfc": {"enabled": false}}]"#);
    assert_eq!(at_s1.rec.dropped_frames(), 0);
    let default = dumbbell_incast("[]");
    assert_eq!(at_s1.stats.pfc_pauses_sent, default.stats.pfc_pauses_sent);
}

#[test]
fn a_tier_entry_sets_every_switch_of_the_tier() {
    let s = Scenario::from_json_str(
        r#"{"duration": "1ms",
        "topology": {"kind": "fat_tree", "k": 4, "host_link": {"rate": "100Gbps", "delay": "1us"},
                     "fabric_link": {"rate": "100Gbps", "delay": "1us"}},
        "switches": [{"tier": "core", "buffer": "8MB"}, {"names": ["edge0_0"], "ecn": {"enabled": false}},
                     {"names": ["agg1_0"], "ecn": {"thresholds": [{"rate": "100Gbps", "kmin": "1KB", "kmax": "2KB", "pmax": 0.5}]}}],
        "workload": {"flows": [{"src": "h0", "dst": "h15", "size": "10KB"}]}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let w = s.build().expect("build");
    for sw in &w.switches {
        let name = &w.topo.nodes[sw.node as usize].name;
        let want = if name.starts_with("core") {
            8_000_000
        } else {
            32 << 20
        };
        assert_eq!(sw.buffer.cfg.size_bytes, want, "{name}");
        assert_eq!(sw.ecn_enabled, name != "edge0_0", "{name}");
    }
    for p in w.ports.iter().filter(|p| p.at_switch) {
        let name = &w.topo.nodes[p.node as usize].name;
        assert_eq!(
            p.ecn.kmin_bytes == 1000,
            name == "agg1_0",
            "{name}: {:?}",
            p.ecn
        );
    }
}

fn refused(json_links: &str, json_switches: &str) -> String {
    let json = format!(
        r#"{{"duration": "1ms",
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                      "host_link": {{"rate": "100Gbps"}}, "fabric_link": {{"rate": "100Gbps"}}}},
        "links": {json_links}, "switches": {json_switches},
        "workload": {{"flows": [{{"src": "h0", "dst": "h2", "size": "1MB"}}]}}}}"#
    );
    match Scenario::from_json_str(&json) {
        Ok(_) => panic!("accepted: {json_links} {json_switches}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_tiers_names_and_overlaps_are_refused_naming_key_value_and_what_is_allowed() {
    let cases = [
        (
            r#"[{"tier": ["leaf", "core"], "rate": "10Gbps"}]"#,
            "[]",
            "links[0].tier[1]",
            "host, leaf, spine",
        ),
        (
            r#"[{"tier": ["host", "spine"], "rate": "10Gbps"}]"#,
            "[]",
            "links[0].tier",
            "no link joins",
        ),
        (
            r#"[{"tier": ["leaf", "spine"], "between": ["h0", "leaf0"]}]"#,
            "[]",
            "links[0].tier",
            "not both",
        ),
        (r#"[{"tier": "leaf"}]"#, "[]", "links[0].tier", "two tiers"),
        (
            r#"[{"between": ["h0", "leaf0"], "rate": "fast"}]"#,
            "[]",
            "links[0].rate",
            "fast",
        ),
        (
            "[]",
            r#"[{"tier": "core", "buffer": "1MB"}]"#,
            "switches[0].tier",
            "leaf, spine",
        ),
        (
            "[]",
            r#"[{"names": ["h0"], "buffer": "1MB"}]"#,
            "switches[0].names[0]",
            "a switch",
        ),
        ("[]", r#"[{"buffer": "1MB"}]"#, "switches[0]", "`names`"),
        (
            "[]",
            r#"[{"tier": "leaf", "buffer": "1MB"}, {"names": ["leaf1"], "buffer": "2MB"}]"#,
            "switches[1]",
            "already set by switches[0]",
        ),
        (
            "[]",
            r#"[{"tier": "leaf", "ecmp": "ns3-hpcc"}]"#,
            "ecmp",
            "buffer",
        ),
        (
            "[]",
            r#"[{"tier": "leaf", "pfc": {"alpha": -1}}]"#,
            "switches[0].pfc.alpha",
            "alpha",
        ),
    ];
    for (links, switches, key, allowed) in cases {
        let e = refused(links, switches);
        assert!(
            e.contains(key) && e.contains(allowed),
            "{links} {switches}: {e}"
        );
    }
}

/// Eight 2 MB flows from leaf0's hosts to leaf1's over two spines; the
/// leaf0–spine0 link fails 50 µs in and stays down.
fn failover(reroute: &str) -> (rdmalab_core::world::World, rdmalab_core::world::Progress) {
    run(&format!(
        r#"{{"duration": "20ms",
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4,
                      "host_link": {{"rate": "100Gbps", "delay": "1us"}},
                      "fabric_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "links": [{{"between": ["leaf0", "spine0"], "down": [["50us", "1s"]]}}],
        "switch": {{"reroute_after": "{reroute}"}},
        "cc": {{"algorithm": "dcqcn"}},
        "workload": {{"flows": [
            {{"src": "h0", "dst": "h4", "size": "2MB"}}, {{"src": "h1", "dst": "h5", "size": "2MB"}},
            {{"src": "h2", "dst": "h6", "size": "2MB"}}, {{"src": "h3", "dst": "h7", "size": "2MB"}},
            {{"src": "h0", "dst": "h5", "size": "2MB"}}, {{"src": "h1", "dst": "h6", "size": "2MB"}},
            {{"src": "h2", "dst": "h7", "size": "2MB"}}, {{"src": "h3", "dst": "h4", "size": "2MB"}}]}}}}"#
    ))
}

#[test]
fn switches_route_around_a_failed_link_after_the_reroute_delay() {
    use rdmalab_core::world::Progress;
    let (stuck, p) = failover("never");
    assert_eq!(
        p,
        Progress::StopTime,
        "without rerouting, flows hashed onto the dead link never finish"
    );
    assert!(stuck.rec.flows.len() < 8);
    let (w, p) = failover("10us");
    assert_eq!(
        p,
        Progress::AllFlowsDone,
        "every flow that crossed the failed link completes"
    );
    assert_conservation(&w);
    let ev: Vec<(u64, &str)> = w
        .rec
        .link_events
        .iter()
        .map(|e| (e.time.ps(), e.event))
        .collect();
    assert_eq!(ev, vec![(50_000_000, "down"), (60_000_000, "reroute")]);
    // Frames are lost on the dead link only until the tables change (plus what was already queued for it).
    let lost = w.rec.dropped_frames_for("link_down");
    assert!(lost > 0, "the failure cost frames");
    assert!(w.stats.timeouts + w.stats.retransmitted_packets > 0);
}

#[test]
fn a_reroute_delay_that_is_not_a_duration_or_never_is_refused() {
    let json = r#"{"duration": "1ms",
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps"}},
        "switch": {"reroute_after": "soon"},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}}"#;
    let e = Scenario::from_json_str(json).err().expect("refused").to_string();
    assert!(e.contains("switch.reroute_after") && e.contains("`never`"), "{e}");
    for ok in ["never", "0s", "1ms"] {
        let j = json.replace("soon", ok);
        assert!(Scenario::from_json_str(&j).is_ok(), "{ok}");
    }
}
