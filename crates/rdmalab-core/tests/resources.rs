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
fn many_qps(
    nic: &str,
    qps: u32,
    depth: u32,
    duration_us: u64,
) -> (f64, rdmalab_core::world::World) {
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

/// SRNIC Fig. 2: a CX-6-like NIC keeps line rate to 256 QPs and loses more
/// than a third of it by 16K, as every packet's QPC, WQE and MTT entry miss.
#[test]
fn cx6_collapses_past_256_qps() {
    let (at256, w) = many_qps(r#""resources": "cx6""#, 256, 4, 1000);
    let (off, _) = many_qps(r#""resources": "off""#, 256, 4, 1000);
    assert!(
        at256 > 0.97 * off,
        "256 QPs fit on chip: {at256:.1} vs {off:.1} Gb/s unlimited"
    );
    assert_conservation(&w);
    let (at16k, w) = many_qps(r#""resources": "cx6""#, 16384, 4, 4000);
    println!("cx6: 256 QPs {at256:.1} Gb/s, 16K QPs {at16k:.1} Gb/s (unlimited {off:.1})");
    assert!(
        at16k < 0.65 * at256,
        "more than 35 % lost at 16K QPs: {at16k:.1} vs {at256:.1}"
    );
    assert!(at16k > 0.3 * at256, "but not stalled: {at16k:.1}");
    let c = w.nics[0].res.as_ref().unwrap().counters();
    assert!(
        c.qpc.1 > c.qpc.0,
        "most QPC lookups miss at 16K QPs: {:?}",
        c.qpc
    );
    // Without the misses' fetches the same run keeps line rate: the collapse is the model's.
    let (unlimited16k, _) = many_qps(r#""resources": "off""#, 16384, 4, 4000);
    assert!(unlimited16k > 0.97 * off);
}

/// SRNIC Fig. 9: with 10K contexts on chip and the cache-free scheduler,
/// throughput at 10K QPs stays within 5 % of 128 QPs.
#[test]
fn srnic_stays_flat_to_10k_qps() {
    let nic = r#""resources": "srnic", "qp_scheduler": "srnic""#;
    let (at128, _) = many_qps(nic, 128, 4, 1000);
    let (at10k, w) = many_qps(nic, 10000, 4, 3000);
    println!("srnic: 128 QPs {at128:.1} Gb/s, 10K QPs {at10k:.1} Gb/s");
    assert!(at10k > 0.95 * at128, "{at10k:.1} vs {at128:.1}");
    let c = w.nics[0].res.as_ref().unwrap().counters();
    assert_eq!(
        c.qpc.1, 10000,
        "each QP's context misses once, when first used"
    );
    assert_eq!(c.wqe, (0, 0), "no WQE cache");
    assert_conservation(&w);
}

/// A miss costs exactly one PCIe read of the entry (plus one TLP's
/// overhead), and every read is counted by purpose.
#[test]
fn a_miss_costs_one_fetch_of_the_entry() {
    let json = r#"{"name": "one", "seed": 1, "duration": "100us",
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "500ns"}},
        "nic": {"mtu": "1024B", "resources": "cx6"},
        "host": {"pcie": "gen4x16"},
        "cc": {"algorithm": "none"},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "3000B", "start": "1us"}]}}"#;
    let (w, _) = run(json);
    assert_eq!(w.rec.flows.len(), 1);
    let cfg = w.nic_cfg.resources.clone().unwrap();
    let s = w.nics[0].res.as_ref().unwrap().counters();
    // Sender: the QPC misses once (3 packets, one context), the WQE was prefetched by the
    // doorbell (a hit), the 3 packets' bytes lie on one 4 KiB page (one MTT miss).
    assert_eq!(
        s.qpc,
        (5, 1),
        "3 packets and their 3 ACKs look up one context: {:?}",
        s.qpc
    );
    assert_eq!(s.wqe, (1, 0));
    assert_eq!(s.mtt, (2, 1));
    use rdmalab_core::nic::resources::PciePurpose::*;
    assert_eq!(s.pcie_requests[Qpc as usize], 1);
    assert_eq!(s.pcie_bytes[Qpc as usize], cfg.on_bus(375));
    assert_eq!(s.pcie_bytes[Mtt as usize], cfg.on_bus(8));
    assert_eq!(
        s.pcie_bytes[Wqe as usize],
        cfg.on_bus(64),
        "the doorbell's prefetch"
    );
    assert_eq!(
        s.pcie_bytes[Payload as usize],
        cfg.on_bus(1024) * 2 + cfg.on_bus(3000 - 2048)
    );
    assert_eq!(
        s.pcie_bytes[Payload as usize],
        3000 + 24 * (4 + 4 + 4),
        "a TLP per 256 B"
    );
    // The receiver looks up the QPC and the page too (placement), fetching each once.
    let r = w.nics[1].res.as_ref().unwrap().counters();
    assert_eq!(r.qpc, (2, 1));
    assert_eq!(r.mtt, (2, 1));
    // A lone flow's FCT grows by the chain of fetches (QPC then MTT) before its first packet.
    let (w0, _) = run(&json.replace(r#", "resources": "cx6""#, ""));
    let extra = w.rec.flows[0].fct().ps() as i64 - w0.rec.flows[0].fct().ps() as i64;
    println!("extra FCT from two misses: {} ns", extra / 1000);
    assert!(
        extra > 2 * 900_000 && extra < 3 * 900_000,
        "two round trips of 900 ns: {extra} ps"
    );
}

/// SRNIC §4.3.1/§6.2: one QP's message rate is at most n WQEs per PCIe round
/// trip (8 per 1.1 µs ≈ 7.2 Mrps; 6.6 measured), and n sets it.
#[test]
fn srnic_message_rate_ceiling() {
    let rate = |n: u32| {
        let json = format!(
            r#"{{"name": "mr", "seed": 1, "duration": "200us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "nic": {{"mtu": "1024B", "qp_scheduler": "srnic", "wqes_per_turn": {n}}},
            "host": {{"pcie": "gen3x16", "pcie_latency": "1100ns"}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "send", "message_size": "64B", "queue_depth": 64}}]}}}}"#
        );
        let (w, _) = run(&json);
        assert_conservation(&w);
        w.apps[0].completed as f64 / 200e-6 / 1e6
    };
    let (m8, m4) = (rate(8), rate(4));
    println!("64 B SENDs on one QP: {m8:.2} Mrps with n = 8, {m4:.2} with n = 4");
    assert!(
        m8 > 6.0 && m8 < 7.3,
        "SRNIC: 6.6 measured, 7.2 the bound: {m8:.2}"
    );
    assert!(
        (m4 / m8 - 0.5).abs() < 0.08,
        "half the WQEs per round trip, half the rate: {m4:.2} vs {m8:.2}"
    );
}

/// SRNIC Fig. 10a: one QP reaches line rate from 4 KB messages (a 16 KB
/// burst per turn outlasts the PCIe round trip that fetches the next).
#[test]
fn srnic_line_rate_from_4kb() {
    let tput = |size: &str| {
        let json = format!(
            r#"{{"name": "sz", "seed": 1, "duration": "400us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "nic": {{"mtu": "1024B", "qp_scheduler": "srnic", "resources": "srnic"}},
            "host": {{"pcie": "gen3x16", "pcie_latency": "1100ns"}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "{size}", "queue_depth": 16}}]}}}}"#
        );
        let (w, _) = run(&json);
        w.apps[0].completed_bytes as f64 * 8.0 / 400e-6 / 1e9
    };
    // Payload share of the wire at a 1024 B MTU: 1024 / (1024 + 58 + 20).
    let line = 100.0 * 1024.0 / 1102.0;
    let (k4, k1) = (tput("4KiB"), tput("1KiB"));
    println!("one QP: 4 KiB {k4:.1} Gb/s, 1 KiB {k1:.1} Gb/s (line {line:.1})");
    assert!(k4 > 0.95 * line, "{k4:.1}");
    assert!(
        k1 < 0.8 * line,
        "8 WQEs of 1 KiB per round trip cannot fill the link: {k1:.1}"
    );
}

fn refused(json: &str, key: &str) -> String {
    let e = Scenario::from_json_str(json)
        .err()
        .unwrap_or_else(|| panic!("accepted: {json}"))
        .to_string();
    assert!(e.contains(key), "error names {key}: {e}");
    e
}

#[test]
fn bad_resource_input_is_refused() {
    let base = |nic: &str, host: &str| {
        format!(
            r#"{{"name": "bad", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "nic": {{{nic}}}, "host": {{{host}}}, "cc": {{"algorithm": "none"}}, "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
        )
    };
    let pcie = r#""pcie": "gen4x16""#;
    let e = refused(
        &base(
            r#""resources": {"preset": "cx6", "qpc_cache": "100B"}"#,
            pcie,
        ),
        "nic.resources.qpc_cache",
    );
    assert!(e.contains("at least one entry of 375B"), "{e}");
    refused(
        &base(r#""resources": {"preset": "cx6", "mtt_cache": "4B"}"#, pcie),
        "nic.resources.mtt_cache",
    );
    refused(
        &base(r#""resources": {"preset": "cx6", "units": 0}"#, pcie),
        "nic.resources.units",
    );
    refused(&base(r#""resources": "cx7""#, pcie), "nic.resources");
    refused(
        &base(r#""resources": {"preset": "cx6", "qpc": 1}"#, pcie),
        "nic.resources.qpc",
    );
    refused(&base(r#""resources": "cx6""#, ""), "host.pcie");
    refused(
        &base(r#""resources": {"preset": "srnic", "wqe_ways": 4}"#, pcie),
        "nic.resources.wqe_ways",
    );
    refused(&base(r#""qp_scheduler": "srnic""#, ""), "host.pcie");
    let e = refused(
        &base(r#""qp_scheduler": "srnic", "wqes_per_turn": 0"#, pcie),
        "nic.wqes_per_turn",
    );
    assert!(e.contains("from 1"), "{e}");
    let e = refused(
        &base(r#""qp_scheduler": "srnic", "turn_burst": "512B""#, pcie),
        "nic.turn_burst",
    );
    assert!(e.contains("MTU"), "{e}");
    refused(&base(r#""turn_burst": "16KB""#, pcie), "nic.turn_burst");
    refused(
        &base(r#""qp_scheduler": "srnic", "resources": "cx6""#, pcie),
        "nic.resources.wqe_cache",
    );
    refused(
        &base(r#""qp_scheduler": "ns3-hpcc", "resources": "srnic""#, ""),
        "nic.resources",
    );
    // A valid custom configuration is accepted.
    Scenario::from_json_str(&base(r#""qp_scheduler": "srnic", "resources": {"preset": "srnic", "qpc_cache": "1MB", "units": 4}"#, pcie)).unwrap();
}

/// SRNIC §6.2: CX-6 sends 6.3 M messages/s on one QP; the `cx6` preset's
/// WQE interval (160 ns) caps it there without holding the port, so large
/// messages still reach line rate.
#[test]
fn cx6_message_rate_on_one_qp() {
    let one_qp = |size: &str| {
        let json = format!(
            r#"{{"name": "mr", "seed": 1, "duration": "200us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "nic": {{"mtu": "1024B", "resources": "cx6"}},
            "host": {{"pcie": "gen4x16"}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "{size}", "queue_depth": 64}}]}}}}"#
        );
        let (w, _) = run(&json);
        assert_conservation(&w);
        (
            w.apps[0].completed as f64 / 200e-6 / 1e6,
            w.apps[0].completed_bytes as f64 * 8.0 / 200e-6 / 1e9,
        )
    };
    let (mrps, _) = one_qp("64B");
    let (_, gbps) = one_qp("4KiB");
    println!("cx6, one QP: {mrps:.2} Mrps of 64 B, {gbps:.1} Gb/s of 4 KiB");
    assert!((mrps - 6.25).abs() < 0.3, "{mrps:.2} Mrps");
    assert!(gbps > 0.95 * 100.0 * 1024.0 / 1102.0, "{gbps:.1} Gb/s");
}

/// SwiftRDMA §3.2: when the NIC cache thrashes (QPC miss rate ≥ 30 %) with
/// more than 512 QPs active, reuse fewer QPs. 4096 QPs of 512 B SENDs on the
/// `cx6` NIC lose half the link; a host policy that moves the job onto 256
/// QPs brings it back.
#[test]
fn a_reuse_policy_recovers_from_cache_thrash() {
    let run_with = |policy: &str| {
        let json = format!(
            r#"{{"name": "reuse", "seed": 1, "duration": "3ms",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "500ns"}}}},
            "nic": {{"mtu": "1024B", "resources": "cx6"}},
            "host": {{"pcie": "gen4x16"{policy}}},
            "cc": {{"algorithm": "none"}},
            "workload": {{"perftest": [{{"name": "kv", "job": "kv", "src": "h0", "dst": "h1", "verb": "send", "message_size": "512B", "queue_depth": 4, "qps": 4096}}]}}}}"#
        );
        let s = Scenario::from_json_str(&json).unwrap_or_else(|e| panic!("{e}"));
        let mut w = s.build().unwrap();
        w.run_until(rdmalab_core::time::Time(w.run.stop_at.ps() * 2 / 3))
            .unwrap();
        let before: u64 = w.apps.iter().map(|a| a.completed_bytes).sum();
        w.run_to_end().unwrap();
        assert_conservation(&w);
        let after: u64 = w.apps.iter().map(|a| a.completed_bytes).sum();
        ((after - before) as f64 * 8.0 / 1e-3 / 1e9, w)
    };
    let (thrash, _) = run_with("");
    let (reused, w) = run_with(
        r#", "scheduler": {"period": "50us", "policies": [{"name": "reuse",
            "when": [{"signal": "qpc_miss_rate", "above": 0.3}, {"signal": "active_qps", "above": 512}], "for": 2,
            "then": {"set_qps": 256, "job": "kv"}}]}"#,
    );
    println!("4096 QPs: {thrash:.1} Gb/s thrashing, {reused:.1} Gb/s after the reuse policy ({} firings)", w.policy_firings.len());
    assert!(!w.policy_firings.is_empty());
    assert!(reused > 1.5 * thrash, "{reused:.1} vs {thrash:.1}");
    assert!(
        w.apps.iter().all(|a| a.completed > 0),
        "every application still completes messages"
    );
}

/// Every posted message has a WQE of its own: each is fetched once over PCIe
/// (the doorbell's prefetch), so one QP posting N messages reads N WQEs.
#[test]
fn each_message_fetches_its_own_wqe() {
    let (w, _) = run(r#"{"name": "wqes", "seed": 1, "duration": "200us",
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "500ns"}},
        "nic": {"mtu": "1024B", "resources": "cx6"},
        "host": {"pcie": "gen4x16"},
        "cc": {"algorithm": "none"},
        "workload": {"perftest": [{"src": "h0", "dst": "h1", "message_size": "3000B", "queue_depth": 1, "stop": "50us"}]}}"#);
    let posted = w.qps[0].msgs_popped + w.qps[0].msgs.len() as u64;
    let s = w.nics[0].res.as_ref().unwrap().counters();
    use rdmalab_core::nic::resources::PciePurpose::*;
    assert!(posted > 10, "{posted} messages");
    assert_eq!(
        s.pcie_requests[Wqe as usize], posted,
        "one WQE read per message"
    );
}

/// `wqe_cache: off` (YAML's false) is named with what is allowed, and a
/// preset whose only other keys are null (absent) is reported as the plain
/// preset, not `cx6+custom`.
#[test]
fn a_wqe_cache_that_is_no_size_is_named_and_null_keys_customise_nothing() {
    let base = |res: &str| {
        format!(
            r#"{{"name": "r", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "nic": {{"resources": {res}}}, "host": {{"pcie": "gen4x16"}}, "cc": {{"algorithm": "none"}}, "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
        )
    };
    let e = refused(
        &base(r#"{"preset": "cx6", "wqe_cache": false}"#),
        "nic.resources.wqe_cache: `false` — allowed: a size like `64KiB`, or `none`",
    );
    assert!(!e.contains("``"), "{e}");
    let preset = |res: &str| {
        Scenario::from_json_str(&base(res))
            .unwrap_or_else(|e| panic!("{e}"))
            .nic
            .resources
            .expect("on")
            .preset
    };
    assert_eq!(
        preset(r#"{"preset": "cx6", "units": null, "page": null}"#),
        "cx6"
    );
    assert_eq!(preset(r#"{"preset": "cx6", "units": 4}"#), "cx6+custom");
}
