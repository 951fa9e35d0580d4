//! The canonical scenario of every algorithm in the CC library: one flow runs
//! alone at line rate, a second starts at 5 ms; the first backs off and the two
//! converge to fair shares of a 100 Gb/s bottleneck.

mod common;
use common::*;
use rdmalab_core::packet::WireFormat;
use rdmalab_core::world::World;

/// Extra scenario keys each algorithm needs from the fabric.
fn fabric_for(alg: &str) -> &'static str {
    match alg {
        // DCTCP wants a step marking threshold: K = 30 KB per 10 Gb/s (ns-3 run.py).
        "dctcp" => {
            r#", "switch": {"ecn": {"thresholds": [{"rate": "100Gbps", "kmin": "300KB", "kmax": "300KB", "pmax": 1.0}]}}"#
        }
        "hpcc" => r#", "switch": {"int": true}"#,
        _ => "",
    }
}

fn two_flows(alg: &str) -> World {
    two_flows_with(alg, "")
}

fn two_flows_with(alg: &str, params: &str) -> World {
    let (w, _) = run(&format!(
        r#"{{"duration": "20ms",
        "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "cc": {{"algorithm": "{alg}" {params}}}, "records": {{"sample_interval": "100us"}} {},
        "workload": {{"perftest": [
            {{"src": "h0", "dst": "h2", "message_size": "1MB", "queue_depth": 2}},
            {{"src": "h1", "dst": "h2", "message_size": "1MB", "queue_depth": 2, "start": "5ms"}}]}}}}"#,
        fabric_for(alg)
    ));
    assert_conservation(&w);
    assert_eq!(w.rec.dropped_frames(), 0, "{alg}: lossless");
    w
}

fn mean_tput(w: &World, qp: u32, from_ms: u64, to_ms: u64) -> f64 {
    let xs: Vec<f64> = w
        .rec
        .qp_samples
        .iter()
        .filter(|s| {
            s.qp == qp
                && s.time.ps() > from_ms * 1_000_000_000
                && s.time.ps() <= to_ms * 1_000_000_000
        })
        .map(|s| s.throughput_bps as f64)
        .collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn check(alg: &str) {
    check_with(alg, "")
}

fn check_with(alg: &str, params: &str) {
    let cap = 100e9 * WireFormat::rocev2(1024).goodput_fraction();
    let w = two_flows_with(alg, params);
    let alone = mean_tput(&w, 0, 1, 5);
    let a = mean_tput(&w, 0, 10, 20);
    let b = mean_tput(&w, 1, 10, 20);
    assert!(
        alone > 0.85 * cap,
        "{alg}: alone at {:.1} Gb/s",
        alone / 1e9
    );
    assert!(
        a < 0.7 * cap && a > 0.3 * cap,
        "{alg}: the first flow backs off to about half: {:.1} Gb/s",
        a / 1e9
    );
    assert!(
        jain(&[a, b]) > 0.98,
        "{alg}: fair shares {:.1} / {:.1} Gb/s",
        a / 1e9,
        b / 1e9
    );
    assert!(a + b > 0.8 * cap, "{alg}: utilization {:.2}", (a + b) / cap);
}

#[test]
fn dcqcn_converges_and_backs_off() {
    check("dcqcn");
}

#[test]
fn timely_converges_and_backs_off() {
    check("timely");
}

#[test]
fn dctcp_converges_and_backs_off() {
    check("dctcp");
}

#[test]
fn hpcc_converges_and_keeps_the_queue_near_empty() {
    check("hpcc");
    let w = two_flows("hpcc");
    let late: Vec<u64> = w
        .rec
        .port_samples
        .iter()
        .filter(|s| s.time.ps() > 10_000_000_000)
        .map(|s| s.queued_bytes)
        .collect();
    let mean = late.iter().sum::<u64>() as f64 / late.len() as f64;
    assert!(
        mean < 10_000.0,
        "HPCC keeps queues near zero (η = 0.95): mean {mean:.0} B"
    );
}

#[test]
fn swift_converges_and_holds_the_queue_at_its_target_delay() {
    check("swift");
    let w = two_flows("swift");
    let q: Vec<u64> = w
        .rec
        .port_samples
        .iter()
        .filter(|s| s.time.ps() > 10_000_000_000 && s.node == 3 && s.port == 2)
        .map(|s| s.queued_bytes)
        .collect();
    let mean = q.iter().sum::<u64>() as f64 / q.len() as f64;
    // Target ≈ 25 µs base + 1 µs/hop: the standing queue is that delay minus the base RTT at 100 Gb/s.
    assert!(
        mean > 200_000.0 && mean < 340_000.0,
        "standing queue {mean:.0} B"
    );
}

#[test]
fn swift_in_fixed_point_converges_and_backs_off_too() {
    check_with("swift", r#", "params": {"fixed_point": true}"#);
}

#[test]
fn doca_rtt_template_converges_and_backs_off() {
    check("doca-rtt");
}

#[test]
fn hpcc_without_int_is_refused() {
    let e = rdmalab_core::scenario::Scenario::from_json_str(
        r#"{"duration": "1ms", "cc": {"algorithm": "hpcc"},
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps"}},
        "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB"}]}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("cc.algorithm: `hpcc` — needs INT from the switches; set switch.int: true"),
        "{e}"
    );
}
