//! SCR's multipath routing selection (appendix A.7, Fig. 19) with the
//! built-in `multipath` controller, on the scenarios shipped as
//! examples/scr/scr-multipath-{congestion,failover}.yaml (written here as JSON).

mod common;
use rdmalab_core::net::routing::L4Ports;
use rdmalab_core::record::ProbeRecord;
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::Time;
use rdmalab_core::world::World;

const US: u64 = 1_000_000;

/// examples/scr/scr-multipath-failover.yaml, with these controller parameters.
fn failover(params: &str) -> Scenario {
    Scenario::from_json_str(&format!(
        r#"{{"duration": "2500us", "seed": 10,
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 1,
                     "host_link": {{"rate": "100Gbps", "delay": "1us"}}, "fabric_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "links": [{{"between": ["leaf1", "spine1"], "delay": "6us"}},
                  {{"between": ["leaf0", "spine0"], "down": [["1ms", "1500us"]]}}],
        "nic": {{"probe_timeout": "100us"}},
        "cc": {{"algorithm": "multipath", "params": {{{params}}}}},
        "workload": {{"perftest": [{{"name": "writer", "src": "h0", "dst": "h1", "message_size": "1MB", "queue_depth": 4, "stop": "2200us"}}]}},
        "records": {{"sample_interval": "5us"}}}}"#
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// examples/scr/scr-multipath-congestion.yaml
fn congestion() -> Scenario {
    Scenario::from_json_str(
        r#"{"duration": "2ms", "seed": 24,
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                     "host_link": {"rate": "100Gbps", "delay": "1us"}, "fabric_link": {"rate": "100Gbps", "delay": "1us"}},
        "nic": {"probe_timeout": "100us"},
        "cc": {"algorithm": "multipath", "params": {"paths": 2, "first_port": 5101, "probe_interval": "10us"}},
        "workload": {"perftest": [
            {"name": "probed", "src": "h0", "dst": "h2", "message_size": "64KB", "queue_depth": 1},
            {"name": "cross-100g", "src": "h1", "dst": "h2", "message_size": "64KB", "queue_depth": 8, "rate": "100Gbps", "start": "500us", "stop": "1500us"}]},
        "records": {"sample_interval": "5us"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The shipped parameters: SCR's two source ports.
const FIRST_PORT: &str = r#""paths": 2, "first_port": 5101, "probe_interval": "10us""#;

/// The spine a frame from `src` to `dst` with source port `sport` crosses.
fn spine_of(w: &World, src: &str, dst: &str, sport: u16) -> String {
    let (s, d) = (w.topo.find(src).unwrap(), w.topo.find(dst).unwrap());
    let leaf = w.ports[w.ports[w.node_ports[s as usize][0] as usize].peer as usize].node;
    let p = w
        .routing
        .select(leaf, s, d, L4Ports::rocev2(sport))
        .unwrap();
    w.topo.nodes[w.ports[w.ports[p as usize].peer as usize].node as usize]
        .name
        .clone()
}

fn answered(w: &World, sport: u16, from_us: u64, to_us: u64) -> Vec<f64> {
    w.rec
        .probes
        .iter()
        .filter(|p| {
            p.udp_sport == sport
                && !p.lost
                && p.time.ps() >= from_us * US
                && p.time.ps() < to_us * US
        })
        .map(|p| p.rtt.ps() as f64 / US as f64)
        .collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn min(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::INFINITY, f64::min)
}

#[test]
fn the_shipped_seeds_put_the_two_source_ports_on_different_spines_both_ways() {
    let w = failover(FIRST_PORT).build().unwrap();
    for (sport, spine) in [(5101, "spine0"), (5102, "spine1")] {
        assert_eq!(
            spine_of(&w, "h0", "h1", sport),
            spine,
            "data and probes of {sport}"
        );
        assert_eq!(
            spine_of(&w, "h1", "h0", sport),
            spine,
            "ACKs and probe answers of {sport}"
        );
    }
    let w = congestion().build().unwrap();
    for (sport, spine) in [(5101, "spine0"), (5102, "spine1")] {
        assert_eq!(spine_of(&w, "h0", "h2", sport), spine);
        assert_eq!(spine_of(&w, "h2", "h0", sport), spine);
    }
}

#[test]
fn link_delay_overrides_both_directions_and_is_validated() {
    let w = failover(FIRST_PORT).build().unwrap();
    let (l1, s1) = (
        w.topo.find("leaf1").unwrap(),
        w.topo.find("spine1").unwrap(),
    );
    let l = w
        .topo
        .links
        .iter()
        .position(|l| (l.a, l.b) == (l1, s1) || (l.a, l.b) == (s1, l1))
        .unwrap();
    let ports: Vec<_> = w.ports.iter().filter(|p| p.link == l as u32).collect();
    assert_eq!(ports.len(), 2);
    assert!(
        ports.iter().all(|p| p.delay.ps() == 6 * US),
        "both directions carry 6 us"
    );
    assert!(
        w.ports
            .iter()
            .filter(|p| p.link != l as u32)
            .all(|p| p.delay.ps() == US),
        "other links keep 1 us"
    );

    let bad = |delay: &str| {
        let text = format!(
            r#"{{"duration": "1ms", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "links": [{{"between": ["h0", "s0"], "delay": {delay}}}], "workload": {{"flows": [{{"src": 0, "dst": 1, "size": "1KB"}}]}}}}"#
        );
        Scenario::from_json_str(&text)
            .err()
            .expect("refused")
            .to_string()
    };
    let e = bad(r#""-1us""#);
    assert!(e.contains("links[0].delay") && e.contains("-1us"), "{e}");
    let e = bad("5");
    assert!(
        e.contains("links[0].delay") && e.contains("has no unit"),
        "{e}"
    );
}

#[test]
fn the_path_with_10us_more_delay_measures_10us_more() {
    let mut w = failover(FIRST_PORT).build().unwrap();
    w.run_until(Time(1000 * US)).unwrap();
    let (fast, slow) = (answered(&w, 5101, 0, 1000), answered(&w, 5102, 0, 1000));
    assert!(
        fast.len() >= 95 && slow.len() >= 95,
        "a probe per path every 10 us: {} and {}",
        fast.len(),
        slow.len()
    );
    // Idle: 4 links × 2 × 1 us plus the serialisation of a probe and its answer.
    assert!(
        (min(&fast) - 8.0).abs() < 0.2,
        "base RTT of 5101: {:.3} us",
        min(&fast)
    );
    // Minimum RTTs: a probe may still wait for a frame being serialised, or
    // its answer for the receiver's ACKs (strict priority), a few tens of ns.
    let d_min = min(&slow) - min(&fast);
    assert!(
        (d_min - 10.0).abs() < 0.1,
        "base RTTs differ by {d_min:.3} us"
    );
    // The data on 5101 delays its probes by at most a packet or so per hop.
    let d_median = median(&slow) - median(&fast);
    assert!(
        (d_median - 10.0).abs() < 0.5,
        "median RTTs differ by {d_median:.3} us"
    );
    assert_eq!(w.qps[0].udp_sport, 5101, "the data uses the faster path");
}

#[test]
fn on_failure_the_qp_moves_within_a_probe_timeout_and_interval_keeps_delivering_and_moves_back() {
    let mut w = failover(FIRST_PORT).build().unwrap();
    // Step through the outage (1 ms – 1.5 ms) a microsecond at a time.
    let mut trace = Vec::new(); // (µs, path, delivered bytes)
    for t in 900..=1700u64 {
        w.run_until(Time(t * US)).unwrap();
        trace.push((t, w.qps[0].udp_sport, w.qps[0].delivered_bytes));
    }
    let at = |t: u64| trace.iter().find(|x| x.0 == t).unwrap();
    let moved = trace
        .iter()
        .find(|x| x.1 == 5102)
        .expect("it left the failed path")
        .0;
    assert!(
        moved > 1000 && moved <= 1000 + 100 + 10,
        "moved at {moved} us: within probe_timeout + probe_interval of the failure"
    );
    let back = trace
        .iter()
        .find(|x| x.0 > moved && x.1 == 5101)
        .expect("it came back")
        .0;
    assert!(
        back > 1500 && back <= 1550,
        "moved back at {back} us, soon after the link came up at 1500 us"
    );
    assert!(
        trace
            .iter()
            .filter(|x| x.0 >= moved && x.0 < back)
            .all(|x| x.1 == 5102),
        "no flapping in between"
    );
    // Data keeps flowing on the slower path during the outage: 300 us at near line rate.
    let during = at(1450).2 - at(1150).2;
    assert!(
        during as f64 > 0.8 * 100e9 / 8.0 * 300e-6,
        "{during} bytes delivered between 1150 and 1450 us"
    );
    // Only 5101's probes were lost, those sent while its link was down.
    let lost: Vec<&ProbeRecord> = w.rec.probes.iter().filter(|p| p.lost).collect();
    assert!(
        lost.iter().all(|p| p.udp_sport == 5101),
        "5102 never lost a probe"
    );
    assert!(lost.iter().all(|p| p.rtt.ps() == 100 * US));
    let sent_us = |p: &&ProbeRecord| (p.time.ps() - p.rtt.ps()) / US;
    assert!(
        lost.iter().all(|p| sent_us(p) >= 990 && sent_us(p) < 1500),
        "lost probes were sent during the outage"
    );
    assert!(
        (48..=52).contains(&lost.len()),
        "one lost probe per 10 us of outage: {}",
        lost.len()
    );

    w.run_to_end().unwrap();
    let qp = &w.qps[0];
    assert_eq!(
        qp.delivered_bytes, qp.byte_end,
        "every posted byte was delivered by the end"
    );
    assert_eq!(w.apps[0].completed * 1_000_000, qp.byte_end);
    assert!(
        w.rec.drops.iter().all(|(k, _)| k.2 == "link_down"),
        "frames were lost only on the failed link"
    );
    common::assert_conservation(&w);
}

#[test]
fn probed_rtt_rises_under_100g_cross_traffic_and_falls_when_it_stops() {
    let mut w = congestion().build().unwrap();
    w.run_to_end().unwrap();
    assert!(w.rec.probes.iter().all(|p| !p.lost), "no probe timed out");
    for sport in [5101, 5102] {
        let idle = mean(&answered(&w, sport, 100, 500));
        let loaded = mean(&answered(&w, sport, 800, 1450));
        let after = mean(&answered(&w, sport, 1650, 2000));
        assert!(idle < 8.5, "{sport}: idle RTT {idle:.2} us");
        assert!(
            loaded > 4.0 * idle,
            "{sport}: {loaded:.2} us with cross traffic vs {idle:.2} us idle"
        );
        assert!(
            after < 1.1 * idle,
            "{sport}: {after:.2} us after the cross traffic vs {idle:.2} us idle"
        );
    }
    // The cross traffic is not the controller's: never probed, never moved.
    assert!(w.rec.probes.iter().all(|p| p.qp == 0));
    assert!(w
        .rec
        .qp_samples
        .iter()
        .filter(|s| s.qp == 1)
        .all(|s| s.udp_sport == 10000));
    // Both paths share the congested last hop: nothing to gain by moving.
    assert!(
        w.rec
            .qp_samples
            .iter()
            .filter(|s| s.qp == 0)
            .all(|s| s.udp_sport == 5101),
        "the QP stayed on 5101"
    );
    common::assert_conservation(&w);
}

#[test]
fn random_candidate_ports_are_probed_and_the_data_ends_on_the_fastest() {
    // No failure: the default pseudo-random set of 4 ports.
    let mut s = failover(r#""paths": 4"#);
    s.topology.links.iter_mut().for_each(|l| l.down.clear());
    let mut w = s.build().unwrap();
    w.run_to_end().unwrap();
    let mut ports: Vec<u16> = w.rec.probes.iter().map(|p| p.udp_sport).collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 4);
    assert!(ports.iter().all(|&p| p >= 49152), "{ports:?}");
    let base = |p: u16| min(&answered(&w, p, 0, 2500));
    let best = ports.iter().map(|&p| base(p)).fold(f64::INFINITY, f64::min);
    let used = w.qps[0].udp_sport;
    assert!(ports.contains(&used));
    assert!(
        base(used) < best + 0.5,
        "data on {used} ({:.2} us) vs the fastest {best:.2} us",
        base(used)
    );
    // These seeds and ports reach both the 8 us and the 18 us paths.
    assert!(
        ports.iter().any(|&p| base(p) > 17.0),
        "{:?}",
        ports.iter().map(|&p| base(p)).collect::<Vec<_>>()
    );
}

#[test]
fn runs_are_deterministic() {
    let tables = || {
        let mut w = failover(FIRST_PORT).build().unwrap();
        w.run_to_end().unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        w.write_probes_csv(&mut a).unwrap();
        w.write_qp_samples_csv(&mut b).unwrap();
        (a, b)
    };
    let (first, second) = (tables(), tables());
    assert!(first.0.len() > 10_000, "probes recorded");
    assert_eq!(first, second);
}

#[test]
fn records_probes_false_keeps_no_rows_and_changes_nothing_else() {
    let run = |records: &str| {
        let mut s = failover(FIRST_PORT);
        if records == "off" {
            let text = r#"{"duration": "10us", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
                           "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}, "records": {"probes": false}}"#;
            s.record_probes = Scenario::from_json_str(text).unwrap().record_probes;
        }
        let mut w = s.build().unwrap();
        w.run_to_end().unwrap();
        let mut samples = Vec::new();
        w.write_qp_samples_csv(&mut samples).unwrap();
        (w.rec.probes.len(), samples)
    };
    let (kept, with) = run("on");
    let (none, without) = run("off");
    assert!(kept > 400, "{kept} probe rows by default");
    assert_eq!(none, 0, "no probe rows with records.probes: false");
    assert_eq!(with, without, "the run itself is the same");
    let bad = r#"{"duration": "10us", "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
                  "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}, "records": {"probes": "no"}}"#;
    let e = Scenario::from_json_str(bad).unwrap_err().to_string();
    assert!(
        e.contains("records.probes: `no` — must be true or false"),
        "{e}"
    );
}
