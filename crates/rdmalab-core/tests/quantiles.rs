//! `apps.csv` reports latency quantiles by rdmalab's one definition, the
//! nearest rank (docs/outputs.md "Quantiles"): the p50 and p99 of an app's
//! message latencies are their ⌈q·n⌉-th smallest, as `rdmalab analyze`, the
//! run summary, `tenants.csv` and the figures take them (tests/test_quantiles.py
//! checks those against the same flows).

mod common;
use common::*;
use rdmalab_core::record::quantile::nearest_rank;

/// The other definition that used to be here: the value at index round((n − 1)·q).
fn rounded_index(sorted: &[u64], q: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn apps_csv_latency_quantiles_are_the_nearest_rank() {
    // Two senders of 64 KB messages into one host, among Poisson flows: latencies spread.
    let (w, _) = run(r#"{"duration": "2ms",
        "topology": {"kind": "single_switch", "hosts": 4, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "cc": {"algorithm": "dcqcn"},
        "workload": {"perftest": [
            {"src": "h0", "dst": "h3", "message_size": "64KB", "queue_depth": 2},
            {"src": "h1", "dst": "h3", "message_size": "64KB", "queue_depth": 1, "start": "100us"}],
            "poisson": {"cdf": "fbhdp", "load": 0.5, "hosts": ["h0", "h1", "h2", "h3"]}}}"#);
    let mut out = Vec::new();
    w.write_apps_csv(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (p50, p99) = (col("latency_p50_ps"), col("latency_p99_ps"));
    let mut told_apart = [0u32; 2];
    for (app, line) in lines.enumerate() {
        let row: Vec<&str> = line.split(',').collect();
        let mut l = w.apps[app].latencies_ps.clone();
        l.sort_unstable();
        assert!(l.len() > 20, "app {app}: {} messages", l.len());
        for (k, (q, at)) in [(0.5, p50), (0.99, p99)].into_iter().enumerate() {
            let want = nearest_rank(&l, q).unwrap();
            assert_eq!(row[at], want.to_string(), "app {app} q {q}");
            told_apart[k] += (want != rounded_index(&l, q)) as u32;
        }
    }
    // The data tells the two definitions apart at p50 and at p99, so the checks above mean something.
    assert!(
        told_apart.iter().all(|&n| n > 0),
        "apps whose p50, p99 differ between the definitions: {told_apart:?}"
    );
}
