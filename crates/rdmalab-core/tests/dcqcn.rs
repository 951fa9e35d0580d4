//! DCQCN on a shared bottleneck behaves as DCQCN does on a RoCEv2 fabric:
//! long flows converge to fair shares and keep the link busy, and a flow
//! backs off when others join.

mod common;
use common::*;
use rdmalab_core::packet::WireFormat;
use rdmalab_core::world::World;

/// `n` perftest WRITE QPs h0..h(n-1) → hn through one 100 Gb/s switch port.
fn long_flows(n: usize, duration_ms: u64) -> World {
    let apps: Vec<String> = (0..n)
        .map(|i| {
            format!(r#"{{"src": "h{i}", "dst": "h{n}", "message_size": "1MB", "queue_depth": 2}}"#)
        })
        .collect();
    let (w, _) = run(&format!(
        r#"{{"duration": "{duration_ms}ms",
        "topology": {{"kind": "single_switch", "hosts": {}, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "cc": {{"algorithm": "dcqcn"}},
        "records": {{"sample_interval": "100us"}},
        "workload": {{"perftest": [{}]}}}}"#,
        n + 1,
        apps.join(",")
    ));
    assert_conservation(&w);
    w
}

/// Mean delivered throughput per QP over samples after `from_ps`.
fn mean_throughput(w: &World, from_ps: u64) -> Vec<f64> {
    let mut sum = vec![0f64; w.qps.len()];
    let mut cnt = vec![0f64; w.qps.len()];
    for s in w.rec.qp_samples.iter().filter(|s| s.time.ps() > from_ps) {
        sum[s.qp as usize] += s.throughput_bps as f64;
        cnt[s.qp as usize] += 1.0;
    }
    sum.iter().zip(&cnt).map(|(s, c)| s / c.max(1.0)).collect()
}

#[test]
fn long_flows_converge_to_fair_shares_at_high_utilization() {
    let goodput_capacity = 100e9 * WireFormat::rocev2(1024).goodput_fraction();
    for n in [2, 4, 8] {
        let w = long_flows(n, 40);
        let xs = mean_throughput(&w, 20_000_000_000);
        let total: f64 = xs.iter().sum();
        assert!(
            jain(&xs) >= 0.99,
            "n={n}: Jain {:.4} over {:?}",
            jain(&xs),
            xs
        );
        assert!(
            total >= 0.95 * goodput_capacity,
            "n={n}: utilization {:.3}",
            total / goodput_capacity
        );
        assert!(
            w.stats.cnps_sent > 0 && w.stats.ecn_marked > 0,
            "DCQCN must be reacting to ECN"
        );
        assert_eq!(w.rec.dropped_frames(), 0);
    }
}

#[test]
fn a_flow_backs_off_when_a_second_one_starts() {
    let (w, _) = run(r#"{"duration": "20ms",
        "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "records": {"sample_interval": "100us"},
        "workload": {"perftest": [
            {"src": "h0", "dst": "h2", "message_size": "1MB", "queue_depth": 2},
            {"src": "h1", "dst": "h2", "message_size": "1MB", "queue_depth": 2, "start": "5ms"}]}}"#);
    let rate_of = |qp: u32, lo: u64, hi: u64| {
        let xs: Vec<f64> = w
            .rec
            .qp_samples
            .iter()
            .filter(|s| s.qp == qp && s.time.ps() > lo && s.time.ps() <= hi)
            .map(|s| s.throughput_bps as f64)
            .collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let alone = rate_of(0, 1_000_000_000, 5_000_000_000);
    let shared = rate_of(0, 12_000_000_000, 20_000_000_000);
    assert!(alone > 90e9, "alone at line rate: {alone:.3e}");
    assert!(
        shared < 0.6 * alone && shared > 0.4 * alone,
        "backs off to about half: {shared:.3e}"
    );
}

#[test]
fn without_congestion_control_the_same_bottleneck_relies_on_pfc() {
    let (w, _) = run(r#"{"duration": "5ms",
        "topology": {"kind": "single_switch", "hosts": 5, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "cc": {"algorithm": "none"},
        "switch": {"buffer": "4MB"},
        "workload": {"perftest": [
            {"src": "h0", "dst": "h4", "message_size": "1MB", "queue_depth": 2},
            {"src": "h1", "dst": "h4", "message_size": "1MB", "queue_depth": 2},
            {"src": "h2", "dst": "h4", "message_size": "1MB", "queue_depth": 2},
            {"src": "h3", "dst": "h4", "message_size": "1MB", "queue_depth": 2}]}}"#);
    assert!(w.rec.pfc_events.iter().any(|e| e.pause));
    assert_eq!(w.rec.dropped_frames(), 0);
    assert_conservation(&w);
}
