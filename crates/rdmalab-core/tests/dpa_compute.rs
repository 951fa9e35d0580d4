//! The DPA as a computer (`control.compute`, `control.pools`,
//! `control.raw_eth`): processing time from an algorithm's cycles at the
//! core clock and from where its flow state sits in the caches, thread
//! pools per purpose, and a per-thread budget for the packets threads send.

mod common;
use common::run;
use rdmalab_core::world::World;

/// `n` long WRITE flows h0 -> h1 (one per QP), `cc` at the DPA placement
/// with the given extra `control` keys (JSON, leading comma).
fn dpa(cc: &str, n: u32, control: &str, duration: &str) -> World {
    let flows: Vec<String> = (0..n)
        .map(|_| r#"{"src": "h0", "dst": "h1", "size": "2MB"}"#.to_string())
        .collect();
    let json = format!(
        r#"{{"name": "dpa", "seed": 1, "duration": "{duration}",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "cc": {{"algorithm": "{cc}"}},
            "control": {{"placement": "dpa"{control}}},
            "workload": {{"flows": [{}]}}}}"#,
        flows.join(",")
    );
    run(&json).0
}

fn processing_ps(w: &World) -> Vec<u64> {
    let fw = w.ctl.as_ref().expect("framework");
    fw.delays.iter().map(|d| d.processing.ps()).collect()
}

#[test]
fn doubling_the_cycles_doubles_the_processing_time() {
    let no_state = r#", "compute": {"cycles": 1010, "state_bytes": "0B"}"#;
    let twice = r#", "compute": {"cycles": 2020, "state_bytes": "0B"}"#;
    let (a, b) = (
        dpa("swift", 2, no_state, "200us"),
        dpa("swift", 2, twice, "200us"),
    );
    let (pa, pb) = (processing_ps(&a), processing_ps(&b));
    assert!(pa.len() > 10, "{} actions", pa.len());
    // 1010 cycles at 505 MHz: exactly 2 us; 2020: 4 us (SCR Fig. 22's Swift).
    assert!(pa.iter().all(|&p| p == 2_000_000), "{pa:?}");
    assert!(pb.iter().all(|&p| p == 4_000_000), "{pb:?}");
    // The parts of every recorded delay add up to it.
    for d in &b.ctl.as_ref().unwrap().delays {
        assert_eq!(
            d.trigger + d.wait + d.processing + d.install,
            d.delay,
            "{d:?}"
        );
    }
}

#[test]
fn swift_defaults_to_its_measured_cycles_and_state_costs_its_cache_level() {
    // Swift's measured 2020 cycles (4 us) and one 64 B line of state: the
    // first event of a flow reads it from memory (300 ns), later ones hit L1.
    let w = dpa("swift", 1, r#", "compute": "bluefield-3""#, "200us");
    let p = processing_ps(&w);
    let fw = w.ctl.as_ref().unwrap();
    let m = fw.stats.memory;
    assert_eq!(m.memory_reads, 1, "{m:?}");
    assert!(m.l1_hits as usize + 1 >= p.len(), "{m:?}");
    assert!(
        p.iter().all(|&x| x == 4_000_000 + 1_980 || x == 4_300_000),
        "{p:?}"
    );
}

#[test]
fn a_thread_serving_more_flows_than_its_l1_holds_pays_on_every_event() {
    // One thread, 4 lines of state per flow (256 B): 2 flows fit a 1 KiB L1,
    // 8 flows do not and every event goes to L2.
    let cfg = r#", "threads": 1, "compute": {"cycles": 1000, "state_bytes": "256B"}"#;
    let (few, many) = (dpa("swift", 2, cfg, "300us"), dpa("swift", 8, cfg, "300us"));
    let mean = |w: &World| {
        let p = processing_ps(w);
        p.iter().sum::<u64>() as f64 / p.len() as f64
    };
    let (mf, mm) = (
        few.ctl.as_ref().unwrap().stats.memory,
        many.ctl.as_ref().unwrap().stats.memory,
    );
    println!("few {mf:?}\nmany {mm:?}");
    assert!(mf.l1_hits > 10 * mf.l2_hits, "{mf:?}");
    assert!(mm.l2_hits > 10 * mm.l1_hits, "{mm:?}");
    // 4 lines x (L2 - L1) = 4 x 18 ns more per event, near enough.
    assert!(
        mean(&many) > mean(&few) + 60_000.0,
        "{} vs {}",
        mean(&many),
        mean(&few)
    );
}

#[test]
fn probes_beyond_a_threads_send_budget_are_dropped_or_delayed() {
    // doca-rtt keeps one probe in flight per QP; 16 QPs on a 2 us RTT ask
    // for several Mpps from one telemetry thread sending 0.2 Mpps.
    // Fast threads, so sending (not processing) is what limits the probes.
    let pools = r#", "pools": {"fabric": 4, "telemetry": 1, "peer": 1, "host": 1},
        "trigger_latency": "0ns", "processing": "50ns", "install_latency": "0ns""#;
    let drop =
        format!(r#"{pools}, "raw_eth": {{"pps": 200000, "backlog": 4, "overflow": "drop"}}"#);
    let delay =
        format!(r#"{pools}, "raw_eth": {{"pps": 200000, "backlog": 4, "overflow": "delay"}}"#);
    let (d, l) = (
        dpa("doca-rtt", 16, &drop, "400us"),
        dpa("doca-rtt", 16, &delay, "400us"),
    );
    let (sd, sl) = (
        &d.ctl.as_ref().unwrap().stats,
        &l.ctl.as_ref().unwrap().stats,
    );
    println!(
        "drop: sent {} dropped {}; delay: sent {} dropped {} wait {:?}",
        sd.raw_eth_sent, sd.raw_eth_dropped, sl.raw_eth_sent, sl.raw_eth_dropped, sl.raw_eth_wait
    );
    // One thread sends at most 0.2 Mpps: 80 in 400 us (+ the backlog's).
    assert!(sd.raw_eth_sent <= 80 + 4, "{}", sd.raw_eth_sent);
    assert!(sd.raw_eth_dropped > 0);
    let lost = d.rec.probes.iter().filter(|p| p.lost).count();
    assert!(
        lost > 0,
        "dropped probes are reported lost at their timeout"
    );
    assert_eq!(sl.raw_eth_dropped, 0);
    assert!(sl.raw_eth_sent <= 80, "{}", sl.raw_eth_sent);
    // Delayed sends waited for the thread: on average more than a packet time (5 us).
    assert!(sl.raw_eth_wait.ps() / sl.raw_eth_sent.max(1) > 5_000_000);
    assert!(
        sl.raw_eth_sent >= 75,
        "the thread stays busy: {}",
        sl.raw_eth_sent
    );
    // Without the budget every probe leaves at once.
    let free = dpa("doca-rtt", 16, pools, "400us");
    let answered = |w: &World| w.rec.probes.iter().filter(|p| !p.lost).count();
    println!(
        "answered: free {}, budget {}",
        answered(&free),
        answered(&l)
    );
    assert!(
        answered(&free) > 4 * answered(&l),
        "{} vs {}",
        answered(&free),
        answered(&l)
    );
}

#[test]
fn bad_compute_settings_are_refused_naming_the_key() {
    let err = |cc: &str, control: &str| {
        let json = format!(
            r#"{{"duration": "1us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                "cc": {{"algorithm": "{cc}"}}, "control": {{"placement": "dpa"{control}}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
        );
        rdmalab_core::scenario::Scenario::from_json_str(&json)
            .unwrap_err()
            .to_string()
    };
    let e = err("water-filling", r#", "compute": "bluefield-3""#);
    assert!(
        e.contains("control.compute.cycles")
            && e.contains("`water-filling` has no measured cycle count"),
        "{e}"
    );
    let e = err("swift", r#", "compute": "bluefield-2""#);
    assert!(
        e.contains("control.compute: `bluefield-2`") && e.contains("bluefield-3"),
        "{e}"
    );
    let e = err(
        "swift",
        r#", "compute": "bluefield-3", "processing": "1us""#,
    );
    assert!(
        e.contains("control.processing") && e.contains("not with control.compute"),
        "{e}"
    );
    let e = err("swift", r#", "pools": "scr", "threads": 4"#);
    assert!(
        e.contains("control.threads") && e.contains("not with control.pools"),
        "{e}"
    );
    let e = err("swift", r#", "pools": {"telemetry": 0}"#);
    assert!(e.contains("control.pools.telemetry"), "{e}");
    let e = err("swift", r#", "raw_eth": {"overflow": "later"}"#);
    assert!(
        e.contains("control.raw_eth.overflow") && e.contains("drop"),
        "{e}"
    );
    let e = err("swift", r#", "compute": {"cycles": 10, "l1": "16B"}"#);
    assert!(
        e.contains("control.compute.l1") && e.contains("at least one 64B line"),
        "{e}"
    );
}

/// Parses a two-host Swift scenario at the DPA placement with
/// `control.compute` set to `compute` (a JSON mapping).
fn parse_with_compute(compute: &str) -> Result<(), rdmalab_core::scenario::ScenarioErrors> {
    let json = format!(
        r#"{{"duration": "1us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "cc": {{"algorithm": "swift"}}, "control": {{"placement": "dpa", "compute": {compute}}},
            "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
    );
    rdmalab_core::scenario::Scenario::from_json_str(&json).map(|_| ())
}

/// A cache hierarchy given upside down (an outer level smaller, or faster,
/// than the one inside it) is refused on the outer level's key, with the
/// value, the inner level it contradicts and the order allowed; levels of
/// equal size or time are allowed.
#[test]
fn a_cache_hierarchy_upside_down_is_refused() {
    let run = parse_with_compute;
    for (compute, want) in [
        (
            r#"{"l1": "1MiB", "l2": "1KiB", "l3": "64B"}"#,
            [
                "control.compute.l2: `1024B` — is smaller than l1 (1048576B)",
                "control.compute.l3: `64B` — is smaller than l2 (1024B)",
            ],
        ),
        // Only l1 given: larger than the default 1.5 MiB L2.
        (
            r#"{"l1": "2MiB"}"#,
            ["control.compute.l2: `1572864B`", "allowed: l1 <= l2 <= l3"],
        ),
        (
            r#"{"l1_hit": "50ns", "l2_hit": "20ns"}"#,
            [
                "control.compute.l2_hit: `20ns` — is faster than l1_hit (50ns)",
                "allowed: l1_hit <= l2_hit <= l3_hit <= memory",
            ],
        ),
        (
            r#"{"memory": "10ns"}"#,
            ["control.compute.memory: `10ns`", "is faster than l3_hit"],
        ),
    ] {
        let e = run(compute)
            .err()
            .unwrap_or_else(|| panic!("accepted {compute}"))
            .to_string();
        for w in want {
            assert!(e.contains(w), "{compute}: wanted {w:?} in {e}");
        }
    }
    run(r#"{"l1": "1KiB", "l2": "1KiB", "l3": "1KiB", "l1_hit": "2ns", "l2_hit": "2ns", "l3_hit": "2ns", "memory": "2ns"}"#)
        .unwrap_or_else(|e| panic!("equal levels: {e}"));
}

/// An event whose state lines all miss costs lines × memory: 1 MiB of
/// state in 1 B lines at 2^44 ps each is exactly 2^64 ps, which a release
/// build wrapped to no state time at all (processing was the cycles alone).
/// Refused naming `memory`, its value and the line count.
#[test]
fn state_lines_times_memory_past_an_hour_is_refused() {
    let run = parse_with_compute;
    for (compute, want) in [
        (
            r#"{"state_bytes": "1MiB", "line": "1B", "l1": "1B", "l2": "1B", "l3": "1B", "memory": "17592186044416ps"}"#,
            "control.compute.memory: `17592186044416ps` — × 1048576 lines (state_bytes 1048576B / line 1B) is more than 3600s (one hour) per event",
        ),
        (
            r#"{"state_bytes": "65B", "memory": "3600s"}"#,
            "control.compute.memory: `3600s` — × 2 lines (state_bytes 65B / line 64B)",
        ),
    ] {
        let e = run(compute)
            .err()
            .unwrap_or_else(|| panic!("accepted {compute}"))
            .to_string();
        assert!(e.contains(want), "{compute}: wanted {want:?} in {e}");
    }
    run(r#"{"state_bytes": "64B", "memory": "3600s"}"#).unwrap_or_else(|e| panic!("one line: {e}"));
    run(r#"{"state_bytes": "1MiB", "line": "1B", "l1": "1B", "l2": "1B", "l3": "1B", "memory": "1ms"}"#)
        .unwrap_or_else(|e| panic!("1M lines of 1ms: {e}"));
}

/// A cache's lines are counted in u32: an L3 of 4 GiB in 1-byte lines was
/// cut to u32::MAX lines without a word. Refused naming the level, its
/// size and the bound; one byte less is accepted.
#[test]
fn a_cache_of_more_lines_than_u32_is_refused() {
    let e = parse_with_compute(r#"{"line": "1B", "l1": "1B", "l2": "1B", "l3": "4GiB"}"#)
        .err()
        .expect("refused")
        .to_string();
    let want = "control.compute.l3: `4294967296B` — holds 4294967296 lines of 1B; allowed: at most 4294967295 lines, at most 4294967295B";
    assert!(e.contains(want), "wanted {want:?} in {e}");
    parse_with_compute(r#"{"line": "1B", "l1": "1B", "l2": "1B", "l3": "4294967295B"}"#)
        .unwrap_or_else(|e| panic!("u32::MAX lines: {e}"));
}

/// A scenario without `cc` (or without `cc.algorithm`) runs DCQCN, the
/// default, so `control.compute` takes DCQCN's measured 60 cycles: it used
/// to read the missing algorithm as `none` and refuse the scenario for
/// having no cycle count.
#[test]
fn compute_without_cc_uses_the_default_algorithms_cycles() {
    for cc in ["", r#""cc": {},"#, r#""cc": {"algorithm": null},"#] {
        let json = format!(
            r#"{{"duration": "100us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
                {cc} "control": {{"placement": "dpa", "compute": {{"state_bytes": "0B"}}}},
                "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1MB"}}]}}}}"#
        );
        let s = rdmalab_core::scenario::Scenario::from_json_str(&json)
            .unwrap_or_else(|e| panic!("{cc}: {e}"));
        let c = s.placement.compute.expect("compute");
        assert_eq!(c.cycles, 60, "{cc}");
    }
}
