//! SCR's fair QP scheduler (§5.1, §6.2): static allocation and water filling
//! against the commodity RNIC's WQE-granular default scheduler.

mod common;
use common::{assert_conservation, jain};

/// Two perftest WRITE tenants from one sender (queue depth 128 each) under
/// `policy` (`none` = the RNIC's default scheduler); returns each tenant's
/// Gb/s over the second half of the run and the mean latency (µs).
fn tenants(policy: &str, placement: &str, a: (&str, u32), b: (&str, u32)) -> (Vec<f64>, Vec<f64>) {
    let json = format!(
        r#"{{"name": "fair", "seed": 1, "duration": "2ms",
            "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "nic": {{"qp_scheduler": "wqe", "rate_burst": "1KiB", "wqe_overhead": "17ns"}},
            "cc": {{"algorithm": "{policy}"}},
            "control": {{"placement": "{placement}"}},
            "workload": {{"perftest": [
                {{"name": "a", "src": "h0", "dst": "h2", "message_size": "{}", "queue_depth": {}}},
                {{"name": "b", "src": "h0", "dst": "h2", "message_size": "{}", "queue_depth": {}}}]}}}}"#,
        a.0, a.1, b.0, b.1
    );
    let s =
        rdmalab_core::scenario::Scenario::from_json_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let mut w = s.build().expect("build");
    let half = rdmalab_core::time::Time(w.run.stop_at.ps() / 2);
    w.run_until(half).expect("run");
    let mid: Vec<u64> = w
        .apps
        .iter()
        .map(|a| w.qps[a.qp.unwrap() as usize].delivered_bytes)
        .collect();
    w.run_to_end().expect("run");
    assert_conservation(&w);
    let secs = half.ps() as f64 * 1e-12;
    let gbps = w
        .apps
        .iter()
        .zip(&mid)
        .map(|(a, m)| (w.qps[a.qp.unwrap() as usize].delivered_bytes - m) as f64 * 8.0 / secs / 1e9)
        .collect();
    let lat = w
        .apps
        .iter()
        .map(|a| {
            a.latencies_ps.iter().sum::<u64>() as f64 / a.latencies_ps.len().max(1) as f64 / 1e6
        })
        .collect();
    (gbps, lat)
}

/// Gb/s of a tenant alone (its demand).
fn alone(size: &str) -> f64 {
    let (g, _) = tenants("none", "asic", (size, 128), (size, 1));
    g[0] + g[1]
}

#[test]
fn water_filling_is_fair_and_keeps_the_link_busy_where_demand_allows() {
    // Tenants that can each fill the link: 4 KiB (88 Gb/s alone, message-rate bound), 64 KiB, 1 MiB.
    let sizes = ["4KiB", "64KiB", "1MiB"];
    let mut best_gain: f64 = 0.0;
    for a in sizes {
        for b in sizes {
            let (d, _) = tenants("none", "dpa", (a, 128), (b, 128));
            let (wf, _) = tenants("water-filling", "dpa", (a, 128), (b, 128));
            let demand = alone(a).max(alone(b));
            let util = (wf[0] + wf[1]) / demand;
            println!("{a:>6} vs {b:>6}: default {:5.1}+{:5.1} (J {:.2}), water filling {:5.1}+{:5.1} (J {:.2}, {:.0}% of {demand:.1})",
                d[0], d[1], jain(&d), wf[0], wf[1], jain(&wf), util * 100.0);
            assert!(jain(&wf) >= 0.95, "{a} vs {b}: Jain {:.3}", jain(&wf));
            assert!(util >= 0.95, "{a} vs {b}: utilisation {util:.3}");
            best_gain = best_gain.max(jain(&wf) / jain(&d));
        }
    }
    // SCR Fig. 11: up to 1.78x (4 KB vs 1 MB).
    assert!(best_gain > 1.7, "fairness gain {best_gain:.2}");
}

#[test]
fn static_allocation_over_provisions_a_tenant_that_cannot_use_its_half() {
    // 256 B messages are message-rate bound: half the link is more than they can use.
    let (st, _) = tenants("fair-static", "dpa", ("256B", 128), ("1MiB", 128));
    let (def, _) = tenants("none", "dpa", ("256B", 128), ("1MiB", 128));
    assert!(
        st[1] < 0.55 * 92.6,
        "the 1 MiB tenant is held to half: {:.1}",
        st[1]
    );
    assert!(
        jain(&st) > jain(&def) + 0.3,
        "static is fairer than the default: {st:?} vs {def:?}"
    );
}

#[test]
fn water_filling_isolates_a_latency_tenant_from_a_bandwidth_tenant() {
    // SCR Fig. 13: 256 B messages, batch 4, beside 64 KiB messages, batch 128.
    let mut lat = Vec::new();
    for policy in ["none", "fair-static", "water-filling"] {
        let (g, l) = tenants(policy, "dpa", ("256B", 4), ("64KiB", 128));
        println!("{policy:14}: latency tenant {:.2} us at {:.2} Gb/s; bandwidth tenant {:.1} Gb/s, {:.1} us", l[0], g[0], g[1], l[1]);
        lat.push((l[0], g[1]));
    }
    let (default, stat, wf) = (lat[0], lat[1], lat[2]);
    assert!(
        wf.0 < 0.7 * default.0,
        "water filling cuts the latency: {:.2} -> {:.2} us",
        default.0,
        wf.0
    );
    assert!(
        wf.1 > 0.95 * default.1,
        "and the bandwidth tenant keeps its bandwidth: {:.1} vs {:.1}",
        wf.1,
        default.1
    );
    assert!(
        stat.1 < 0.6 * default.1,
        "static halves the bandwidth tenant: {:.1}",
        stat.1
    );
}
