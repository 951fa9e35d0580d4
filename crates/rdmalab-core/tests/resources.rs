//! The RNIC resource model (`nic.resources`) and SRNIC's cache-free QP
//! scheduler: throughput against the number of QPs (SRNIC Fig. 2/9), the
//! message-rate ceiling of a turn per PCIe round trip (§4.3.1, Fig. 10),
//! and what a miss costs on the bus.

mod common;
use common::{assert_conservation, run};
use rdmalab_core::scenario::Scenario;

/// SRNIC §6.1's set-up: two NICs (here through one switch, 100 Gb/s,
/// 1024 B MTU), `qps` QPs of 512 B SENDs with `depth` posted each. Returns
/// aggregate goodput (Gb/s) over the second half of `duration_us`, and the run.
fn many_qps(nic: &str, qps: u32, depth: u32, duration_us: u64) -> (f64, rdmalab_core::world::World) {
    let json = format!(
        r#"{{"name": "qps", "seed": 1, "duration": "{duration_us}us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "nic": {{"mtu": "1024B", {nic}}},
            "host": {{"pcie": "gen4x16", "pcie_latency": "900ns"}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "send", "message_size": "512B", "queue_depth": {depth}, "qps": {qps}}}]}}}}"#
    );
    let s = Scenario::from_json_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let mut w = s.build().expect("build");
    let half = rdmalab_core::time::Time(w.run.stop_at.ps() / 2);
    w.run_until(half).expect("run");
    let before: u64 = w.apps.iter().map(|a| a.completed_bytes).sum();
    w.run_to_end().expect("run");
    let after: u64 = w.apps.iter().map(|a| a.completed_bytes).sum();
    let gbps = (after - before) as f64 * 8.0 / (duration_us as f64 / 2.0 * 1e-6) / 1e9;
    (gbps, w)
}

#[test]
fn print_curve() {
    for nic in [r#""resources": "cx6""#, r#""resources": "srnic", "qp_scheduler": "srnic""#] {
        for qps in [128u32, 256, 512, 1024, 2048, 4096, 8192, 16384] {
            let (g, w) = many_qps(nic, qps, 4, 2000);
            let r = w.nics[0].res.as_ref().map(|r| r.counters());
            println!("{nic} qps {qps}: {g:.1} Gb/s {:?}", r.map(|c| (c.qpc, c.mtt, c.wqe, c.unit_waits)));
        }
    }
}
