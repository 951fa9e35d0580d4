//! The dequeue-rate limiter is a token bucket (`nic.rate_burst`): a QP that
//! comes back from idle sends up to the bucket early, and over a long run never
//! more than rate × time + bucket.

mod common;
use rdmalab_core::scenario::Scenario;

/// One perftest WRITE QP with a fixed 10 Gb/s dequeue rate, starting after
/// 100 µs of idle; returns the first message's latency (µs) and the payload
/// Gb/s over the run.
fn paced(burst: &str, depth: u32) -> (f64, f64) {
    let json = format!(
        r#"{{"duration": "2ms", "seed": 1,
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "nic": {{"rate_burst": "{burst}"}},
            "workload": {{"perftest": [{{"src": "h0", "dst": "h1", "message_size": "64KiB", "queue_depth": {depth}, "rate": "10Gbps", "start": "100us"}}]}}}}"#
    );
    let mut w = Scenario::from_json_str(&json)
        .unwrap_or_else(|e| panic!("{e}"))
        .build()
        .unwrap();
    w.run_to_end().unwrap();
    common::assert_conservation(&w);
    let a = &w.apps[0];
    let lat = a.latencies_ps[0] as f64 / 1e6;
    let gbps = w.qps[a.qp.unwrap() as usize].delivered_bytes as f64 * 8.0 / 1.9e-3 / 1e9;
    (lat, gbps)
}

#[test]
fn after_idle_a_qp_sends_its_bucket_early_and_no_more() {
    // The bucket fills at the QP's rate while it is idle: after 100 µs it is full.
    let (strict, _) = paced("0B", 1);
    let (bucket, _) = paced("8KiB", 1);
    let (big, _) = paced("32KiB", 1);
    // 8 KiB early at line rate instead of 10 Gb/s saves 8 KiB × 8 × (1/10 − 1/100) ns ≈ 5.9 µs
    // (on the wire: headers make it a little more).
    let saved = strict - bucket;
    println!("64 KiB at 10 Gb/s: {strict:.2} us strict, {bucket:.2} us with 8 KiB, {big:.2} us with 32 KiB");
    assert!(
        saved > 5.5 && saved < 6.8,
        "8 KiB bucket saves {saved:.2} us"
    );
    let saved_big = strict - big;
    assert!(
        (saved_big / saved - 4.0).abs() < 0.2,
        "four times the bucket, four times the saving: {saved_big:.2} vs {saved:.2}"
    );
}

#[test]
fn a_busy_qp_keeps_its_rate_whatever_the_bucket() {
    // Depth 8: once started the QP is never idle, so only the bucket it starts
    // with comes on top of 10 Gb/s of wire bytes (a little less payload).
    for burst in ["0B", "8KiB", "1MiB"] {
        let (_, gbps) = paced(burst, 8);
        println!("bucket {burst}: {gbps:.3} Gb/s payload");
        // At most rate × time + bucket: 1 MiB over 1.9 ms is another 4.4 Gb/s.
        let most = 10.0
            + if burst == "1MiB" {
                1048576.0 * 8.0 / 1.9e-3 / 1e9
            } else {
                8192.0 * 8.0 / 1.9e-3 / 1e9
            };
        assert!(gbps > 9.0 && gbps <= most, "bucket {burst}: {gbps:.3} Gb/s");
    }
}
