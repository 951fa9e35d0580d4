//! The host's doorbells (`host.uar`): application threads pinned to cores
//! ring their QPs' UAR pages; cores sharing a page wait on its lock
//! (SwiftRDMA §3.1, Fig. 4).

mod common;
use common::{assert_conservation, run};

/// SwiftRDMA Fig. 4's set-up: 64 QPs of 512 B key-value GETs (READs), one
/// outstanding each, driven evenly by `cores` threads. Returns M GETs/s.
fn gets(cores: u32, placement: Option<&str>) -> f64 {
    let host = match placement {
        Some(p) => format!(r#""host": {{"uar": {{"placement": "{p}"}}}},"#),
        None => String::new(),
    };
    let json = format!(
        r#"{{"name": "kv", "seed": 1, "duration": "500us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            {host}
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "get", "src": "h0", "dst": "h1", "verb": "read", "message_size": "512B", "queue_depth": 1, "qps": 64, "cores": {cores}}}]}}}}"#
    );
    let (w, _) = run(&json);
    assert_conservation(&w);
    w.apps.iter().map(|a| a.completed).sum::<u64>() as f64 / 500e-6 / 1e6
}

/// SwiftRDMA Fig. 4: with 16 cores, every QP on one page loses more than
/// half of what UAR-aware placement (a page per core) gets; without the
/// doorbell model the same workload is bound by the network alone.
#[test]
fn uar_aware_placement_removes_contention() {
    let free = gets(16, None);
    let single = gets(16, Some("single"));
    let aware = gets(16, Some("per-core"));
    let random = gets(4, Some("random"));
    println!("16 cores: free {free:.1}, one page {single:.1}, a page per core {aware:.1}; 4 cores, random pages {random:.1} M GETs/s");
    assert!(
        aware > 0.98 * free,
        "per-core pages cost nothing beyond the posts: {aware:.1} vs {free:.1}"
    );
    assert!(
        aware > 2.0 * single,
        "shared pages lose more than half: {aware:.1} vs {single:.1}"
    );
    assert!(
        random < 0.9 * gets(4, Some("per-core")),
        "random binding shares some pages across cores: {random:.1}"
    );
}

/// Two QPs on one core and one page never wait for the lock; on two cores
/// they wait and bounce; on a page each they do neither.
#[test]
fn lock_waits_only_across_cores() {
    let stats = |cores: u32, placement: &str| {
        let json = format!(
            r#"{{"name": "db", "seed": 1, "duration": "50us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "host": {{"uar": {{"placement": "{placement}"}}}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "64B", "queue_depth": 4, "qps": 2, "cores": {cores}}}]}}}}"#
        );
        let (w, _) = run(&json);
        let u = w.nics[0].uar.as_ref().unwrap();
        (u.wait_ps, u.bounces, u.doorbells)
    };
    let (wait, bounces, rung) = stats(1, "single");
    assert!(rung > 100);
    assert_eq!((wait, bounces), (0, 0), "one core, one page");
    let (wait, bounces, _) = stats(2, "single");
    assert!(
        wait > 0 && bounces > 0,
        "two cores on one page: {wait} ps waited, {bounces} bounces"
    );
    assert_eq!(stats(2, "per-core").0, 0, "a page per core");
    assert_eq!(stats(2, "per-core").1, 0);
}

/// A closed loop with a think time: one QP, one outstanding GET, posts
/// again `think_time` after each completion.
#[test]
fn think_time_closes_the_loop() {
    let rate = |think: &str| {
        let json = format!(
            r#"{{"name": "kv", "seed": 1, "duration": "1ms",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "get", "src": "h0", "dst": "h1", "verb": "read", "message_size": "512B", "think_time": "{think}"}}]}}}}"#
        );
        let (w, _) = run(&json);
        let a = &w.apps[0];
        (
            a.completed as f64,
            a.latencies_ps.iter().sum::<u64>() as f64 / a.latencies_ps.len() as f64,
        )
    };
    let (n0, lat) = rate("0us");
    let (n10, lat10) = rate("10us");
    let expect = 1e-3 / (lat / 1e12 + 10e-6);
    println!("GETs in 1 ms: {n0} back to back, {n10} with 10 us think (expected {expect:.0})");
    assert!((n10 - expect).abs() <= 2.0, "{n10} vs {expect}");
    assert!((lat10 - lat).abs() < 1.0, "think time is not latency");
}

#[test]
fn bad_uar_input_is_refused() {
    let base = |uar: &str, extra: &str| {
        format!(
            r#"{{"name": "bad", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "host": {{"uar": {uar}}}, "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"src": "h0", "dst": "h1", "message_size": "1KB"{extra}}}]}}}}"#
        )
    };
    for (json, key) in [
        (base(r#"{"pages": 0}"#, ""), "host.uar.pages"),
        (base(r#"{"placement": "spread"}"#, ""), "host.uar.placement"),
        (base(r#"{"lock": "1us"}"#, ""), "host.uar.lock"),
        (base("{}", r#", "cores": 0"#), "cores"),
        (base("{}", r#", "think_time": "-1us""#), "think_time"),
    ] {
        let e = rdmalab_core::scenario::Scenario::from_json_str(&json)
            .err()
            .unwrap_or_else(|| panic!("accepted {json}"))
            .to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

/// SwiftRDMA §3.1 as a policy: 16 cores whose QPs all share one UAR page
/// wait on its lock; a host policy that sees the doorbell wait migrates the
/// job's QPs to a page per core, and the GET rate recovers.
#[test]
fn a_policy_migrates_qps_off_a_contended_uar_page() {
    let run_with = |policy: &str| {
        let json = format!(
            r#"{{"name": "kv", "seed": 1, "duration": "600us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "host": {{"uar": {{"placement": "single"}}{policy}}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "get", "job": "kv", "src": "h0", "dst": "h1", "verb": "read", "message_size": "512B", "queue_depth": 1, "qps": 64, "cores": 16}}]}}}}"#
        );
        let s = rdmalab_core::scenario::Scenario::from_json_str(&json)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut w = s.build().unwrap();
        w.run_until(rdmalab_core::time::Time(300_000_000)).unwrap();
        let before: u64 = w.apps.iter().map(|a| a.completed).sum();
        w.run_to_end().unwrap();
        assert_conservation(&w);
        let after: u64 = w.apps.iter().map(|a| a.completed).sum();
        ((after - before) as f64 / 300e-6 / 1e6, w)
    };
    let (stuck, _) = run_with("");
    let (moved, w) = run_with(
        r#", "scheduler": {"period": "20us", "policies": [{"name": "migrate",
            "when": [{"signal": "doorbell_wait_ns", "above": 50}], "for": 2,
            "then": {"set_uar": "per-core", "job": "kv"}}]}"#,
    );
    assert!(!w.policy_firings.is_empty());
    assert!(
        w.policy_firings[0].time < rdmalab_core::time::Time(100_000_000),
        "fires early: {:?}",
        w.policy_firings[0].time
    );
    assert!(
        moved > 1.8 * stuck,
        "second half: {moved:.1} M GETs/s after migration vs {stuck:.1} on one page"
    );
    println!("second half: {stuck:.2} M GETs/s on one page, {moved:.2} after migration");
    let pages: std::collections::BTreeSet<u32> = w.apps.iter().map(|a| a.uar_page).collect();
    assert_eq!(pages.len(), 16, "a page per core");
}
