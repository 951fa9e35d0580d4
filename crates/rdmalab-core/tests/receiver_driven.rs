//! Receiver-driven control (SCR §A.8, Fig. 20): receiver grants against
//! uncontrolled background senders, and receiver backpressure on a lone
//! line-rate WRITE. The scenarios are those of `examples/scr/`, written as
//! JSON: a single switch, 100 Gb/s links, control on the DPA placement with
//! RX events.

mod common;
use common::*;
use rdmalab_core::control::Cc;
use rdmalab_core::packet::WireFormat;
use rdmalab_core::time::Rate;
use rdmalab_core::world::World;

const US: u64 = 1_000_000;
/// Payload per wire bit of full 1024 B RoCEv2 packets: throughput samples are payload.
fn goodput() -> f64 {
    WireFormat::rocev2(1024).goodput_fraction()
}

/// One granted sender h1 → h0 and `background` fixed-rate perftests (each
/// `(src, rate_gbps, start_us, stop_us)`) into h0.
fn incast(
    cc: &str,
    hosts: u32,
    duration_us: u64,
    background: &[(u32, u64, u64, Option<u64>)],
) -> World {
    let bg: Vec<String> = background
        .iter()
        .map(|&(src, gbps, start, stop)| {
            let stop = stop.map_or(String::new(), |s| format!(r#", "stop": "{s}us""#));
            format!(
                r#"{{"src": "h{src}", "dst": "h0", "message_size": "64KB", "queue_depth": 4, "rate": "{gbps}Gbps", "start": "{start}us"{stop}}}"#
            )
        })
        .collect();
    let (w, _) = run(&format!(
        r#"{{"duration": "{duration_us}us", "cc": {{"algorithm": "{cc}"}},
        "control": {{"placement": "dpa", "rx_events": true}},
        "topology": {{"kind": "single_switch", "hosts": {hosts}, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "records": {{"sample_interval": "10us"}},
        "workload": {{"perftest": [
            {{"name": "granted", "src": "h1", "dst": "h0", "message_size": "64KB", "queue_depth": 8}} {}{}]}}}}"#,
        if bg.is_empty() { "" } else { "," },
        bg.join(",")
    ));
    assert_conservation(&w);
    w
}

/// 16 background senders of 5 Gb/s, one more every 250 µs (SCR Fig. 20b).
const STEP_US: u64 = 250;
fn fig20b(cc: &str) -> World {
    let bg: Vec<_> = (0..16)
        .map(|i| (i + 2, 5, STEP_US * (i as u64 + 1), None))
        .collect();
    incast(cc, 18, STEP_US * 17, &bg)
}

/// Mean of `f(sample)` over the granted QP's (QP 0) samples in (from, to] µs.
fn mean_of(
    w: &World,
    qp: u32,
    from_us: u64,
    to_us: u64,
    f: impl Fn(&rdmalab_core::record::QpSample) -> f64,
) -> f64 {
    let xs: Vec<f64> = w
        .rec
        .qp_samples
        .iter()
        .filter(|s| s.qp == qp && s.time.ps() > from_us * US && s.time.ps() <= to_us * US)
        .map(f)
        .collect();
    assert!(
        !xs.is_empty(),
        "no samples of QP {qp} in ({from_us}, {to_us}] µs"
    );
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Payload throughput of all QPs into h0 per sample time, Gb/s.
fn total_throughput(w: &World, from_us: u64, to_us: u64) -> Vec<f64> {
    let mut by_time = std::collections::BTreeMap::<u64, f64>::new();
    for s in w
        .rec
        .qp_samples
        .iter()
        .filter(|s| s.time.ps() > from_us * US && s.time.ps() <= to_us * US)
    {
        *by_time.entry(s.time.ps()).or_default() += s.throughput_bps as f64 / 1e9;
    }
    by_time.into_values().collect()
}

/// Queued bytes at the switch port towards h0 (port 0 of the single switch).
fn receiver_queue(w: &World) -> Vec<u64> {
    let switch = w.topo.hosts().count() as u32;
    w.rec
        .port_samples
        .iter()
        .filter(|s| s.node == switch && s.port == 0)
        .map(|s| s.queued_bytes)
        .collect()
}

#[test]
fn grants_track_the_headroom_at_every_incast_step() {
    let w = fig20b("receiver-grants");
    assert_eq!(w.rec.dropped_frames(), 0);
    assert_eq!(
        w.stats.retransmitted_packets, 0,
        "no bytes lost, none resent"
    );
    let mut worst: f64 = 0.0;
    for k in 0..=16u64 {
        // The second half of step k: k background senders at 5 Gb/s each.
        let (from, to) = (k * STEP_US + STEP_US / 2, (k + 1) * STEP_US);
        let headroom = 100.0 - 5.0 * k as f64;
        let grant = mean_of(&w, 0, from, to, |s| s.rate.as_gbps());
        let wire = mean_of(&w, 0, from, to, |s| s.throughput_bps as f64 / 1e9) / goodput();
        // The grant fills the target 98 % of the line: 2 Gb/s below the headroom (a window
        // that still sees the newcomer's queue grants up to 90 % and pulls the mean down).
        assert!(
            (grant - (headroom - 2.0)).abs() < 1.5,
            "step {k}: granted {grant:.2} Gb/s, headroom {headroom}"
        );
        // What the sender gets (payload, as wire rate) is within 4 Gb/s of line − background.
        assert!(
            (wire - headroom).abs() < 4.0,
            "step {k}: sent {wire:.2} Gb/s on the wire, headroom {headroom}"
        );
        worst = worst.max((wire - headroom).abs());
        eprintln!("step {k:2}: headroom {headroom:5.1}  grant {grant:6.2}  sent (wire) {wire:6.2}");
        // Offered load (grant + background dequeue rates) stays below the line.
        let bg = 5.0 * k as f64;
        assert!(
            grant + bg <= 100.0,
            "step {k}: offered {:.2} Gb/s",
            grant + bg
        );
        for t in total_throughput(&w, from, to) {
            assert!(
                t <= 100.0 * goodput() + 1.0,
                "step {k}: {t:.2} Gb/s of payload into h0"
            );
        }
    }
    eprintln!("worst step: {worst:.2} Gb/s from line − background");
}

#[test]
fn grants_keep_the_receiver_queue_far_below_uncontrolled_senders() {
    let q = |w: &World| {
        let q = receiver_queue(w);
        (
            q.iter().copied().max().unwrap(),
            q.iter().sum::<u64>() as f64 / q.len() as f64,
        )
    };
    let (granted_max, granted_mean) = q(&fig20b("receiver-grants"));
    let none = fig20b("none");
    assert_eq!(
        none.rec.dropped_frames(),
        0,
        "lossless: PFC holds the excess"
    );
    let (none_max, none_mean) = q(&none);
    eprintln!("queue at h0's port: grants max {granted_max} B mean {granted_mean:.0} B; none max {none_max} B mean {none_mean:.0} B");
    // Each step's 5 Gb/s arrives unannounced for one control loop (≈ 40 µs on the DPA): ~25 KB.
    assert!(granted_max < 40_000, "grants: max queue {granted_max} B");
    assert!(
        granted_mean < 6_000.0,
        "grants: mean queue {granted_mean:.0} B"
    );
    assert!(
        none_mean > 50.0 * granted_mean,
        "without grants the queue stands: mean {none_mean:.0} B"
    );
}

#[test]
fn a_two_to_one_incast_leaves_the_granted_sender_the_rest_and_gives_it_back() {
    // Background 40 Gb/s from 0.5 to 1.9 ms, then 70 Gb/s until 3 ms (SCR Fig. 20a in kind).
    let w = incast(
        "receiver-grants",
        3,
        3500,
        &[(2, 40, 500, Some(1900)), (2, 70, 2000, Some(3000))],
    );
    assert_eq!(w.rec.dropped_frames(), 0);
    let grant = |from, to| mean_of(&w, 0, from, to, |s| s.rate.as_gbps());
    for (from, to, expect) in [
        (200, 500, 98.0),
        (1200, 1900, 58.0),
        (2600, 3000, 28.0),
        (3200, 3500, 98.0),
    ] {
        let g = grant(from, to);
        assert!(
            (g - expect).abs() < 0.7,
            "{from}–{to} µs: granted {g:.2} Gb/s, expected {expect}"
        );
    }
    let max_q = receiver_queue(&w).into_iter().max().unwrap();
    // 70 Gb/s arrives unannounced on a port granted to 98 %: ~68 Gb/s too much for
    // about one measurement window and the DPA loop at both ends (≈ 55 µs) before the grant bites.
    assert!(max_q < 600_000, "queue peaks at {max_q} B");
    let settled = receiver_queue(&w)
        .into_iter()
        .skip(2600 / 10)
        .take(40)
        .max()
        .unwrap();
    assert!(settled < 5_000, "drained by 2.6 ms: {settled} B");
    let c = match &w.qps[0].cc {
        Cc::ReceiverGrants(c) => c,
        _ => panic!("QP 0 runs receiver-grants"),
    };
    assert!(
        c.grants_sent() >= 3500 / 30,
        "about one grant per 20 µs window: {}",
        c.grants_sent()
    );
    // Every grant arrives (the reverse path is idle) but the one in flight when the run ends.
    assert!(
        c.grants_sent() - c.grants_received() <= 1,
        "{} sent, {} applied",
        c.grants_sent(),
        c.grants_received()
    );
}

#[test]
fn grants_are_deterministic() {
    let a = fig20b("receiver-grants");
    let b = fig20b("receiver-grants");
    assert_eq!(a.rec.qp_samples, b.rec.qp_samples);
    assert_eq!(a.rec.port_samples, b.rec.port_samples);
}

fn backpressure() -> World {
    let (w, _) = run(r#"{"duration": "5ms",
        "cc": {"algorithm": "receiver-backpressure",
               "params": {"threshold": 0.9, "md_factor": 0.5, "ai": "1Gbps", "ai_interval": "20us", "notice_interval": "100us"}},
        "control": {"placement": "dpa", "rx_events": true},
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "records": {"sample_interval": "10us"},
        "workload": {"perftest": [{"src": "h1", "dst": "h0", "message_size": "64KB", "queue_depth": 4}]}}"#);
    assert_conservation(&w);
    w
}

#[test]
fn backpressure_halves_on_each_notice_and_climbs_by_ai_between() {
    let w = backpressure();
    let c = match &w.qps[0].cc {
        Cc::ReceiverBackpressure(c) => c,
        _ => panic!("QP 0 runs receiver-backpressure"),
    };
    let rates: Vec<(u64, Rate)> = w
        .rec
        .qp_samples
        .iter()
        .filter(|s| s.qp == 0)
        .map(|s| (s.time.ps() / US, s.rate))
        .collect();
    let ai = Rate::gbps(1).bps();
    let mut decreases = 0;
    let mut teeth = Vec::new();
    let mut last_md: Option<(u64, Rate)> = None;
    for pair in rates.windows(2) {
        let ((_, r0), (t1, r1)) = (pair[0], pair[1]);
        if r1 < r0 {
            decreases += 1;
            // A notice halves the sender's rate. Samples show the installed rate,
            // which lags the sender's by the DPA's processing and install (10 µs):
            // up to two AI steps can reach the sender's rate between two samples.
            let lo = r0.bps() / 2;
            let hi = (r0.bps() + 2 * ai) / 2;
            assert!(
                r1.bps() >= lo && r1.bps() <= hi,
                "{t1} µs: {r0} → {r1} is not a halving"
            );
            // Notices come only while the port runs at ≥ 90 % of the line.
            assert!(r0 >= Rate::gbps(90), "{t1} µs: a notice at {r0}");
            if let Some((t, from)) = last_md {
                teeth.push((t1 - t, (r0.bps() - from.bps()) as f64 / 1e9));
            }
            last_md = Some((t1, r1));
        } else if r1 > r0 {
            // Between notices: exactly one AI step per 20 µs timer (samples are 10 µs apart).
            assert_eq!(
                r1.bps() - r0.bps(),
                ai,
                "{t1} µs: {r0} → {r1} is not one AI step"
            );
        }
    }
    eprintln!("{decreases} decreases; teeth (µs, Gb/s climbed): {teeth:?}");
    assert_eq!(
        decreases as u64,
        c.notices_received(),
        "one decrease per notice"
    );
    assert!(
        c.notices_sent() - c.notices_received() <= 1,
        "all notices arrive but one in flight at the end"
    );
    assert!(decreases >= 4, "a sawtooth over 5 ms: {decreases} teeth");
    for (dt, climbed) in teeth {
        // The climb from ~46 to ≥ 90 Gb/s takes ~45 AI steps of 20 µs.
        let slope = climbed / dt as f64 * 20.0;
        assert!(
            (slope - 1.0).abs() < 0.05,
            "AI slope {slope:.3} Gb/s per 20 µs"
        );
    }
    assert_eq!(w.rec.dropped_frames(), 0);
}

#[test]
fn backpressure_is_deterministic() {
    assert_eq!(backpressure().rec.qp_samples, backpressure().rec.qp_samples);
}

/// Four granted senders join one receiver 500 µs apart, with 20 Gb/s of
/// uncontrolled background from 2.5 ms: the receiver's granted QPs share
/// what the background leaves, equally (max-min).
#[test]
fn granted_senders_into_one_receiver_share_it_equally() {
    let granted: Vec<String> = (1..=4)
        .map(|i| {
            format!(
                r#"{{"name": "g{i}", "src": "h{i}", "dst": "h0", "message_size": "64KB", "queue_depth": 8, "start": "{}us"}}"#,
                (i - 1) * 500
            )
        })
        .collect();
    let (w, _) = run(&format!(
        r#"{{"duration": "3500us", "cc": {{"algorithm": "receiver-grants"}},
        "control": {{"placement": "dpa", "rx_events": true}},
        "topology": {{"kind": "single_switch", "hosts": 6, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "records": {{"sample_interval": "10us"}},
        "workload": {{"perftest": [{},
            {{"src": "h5", "dst": "h0", "message_size": "64KB", "queue_depth": 4, "rate": "20Gbps", "start": "2500us"}}]}}}}"#,
        granted.join(",")
    ));
    assert_conservation(&w);
    let rate =
        |qp: u32, from: u64, to: u64| mean_of(&w, qp, from, to, |s| s.rate.bps() as f64 / 1e9);
    // (window, senders present, their fair share of the port in wire Gb/s)
    for (from, to, n, line_left) in [
        (700, 1000, 2, 100.0),
        (1200, 1500, 3, 100.0),
        (2200, 2500, 4, 100.0),
        (3100, 3500, 4, 80.0),
    ] {
        let rates: Vec<f64> = (0..n).map(|q| rate(q, from, to)).collect();
        println!("{from}-{to} us: {rates:.1?}");
        let fair = line_left / n as f64;
        for r in &rates {
            assert!(
                *r > 0.85 * fair && *r < 1.05 * fair,
                "{from}-{to} us: grants {rates:.1?}, fair share {fair:.1}"
            );
        }
    }
    // Each newcomer starts at line rate (senders are optimistic) and builds
    // ~0.6 MB of queue in one control loop; the grants (90 % of the line while
    // the port runs full) drain it: it empties again by the end.
    let q = receiver_queue(&w);
    let peak = q.iter().copied().max().unwrap();
    let last: Vec<u64> = q.iter().copied().skip(q.len() - 40).collect();
    assert!(peak < 2_000_000, "peak {peak} B");
    assert!(*last.iter().min().unwrap() < 20_000, "drained: {last:?}");
}
