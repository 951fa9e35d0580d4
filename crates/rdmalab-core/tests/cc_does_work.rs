//! Each congestion-control algorithm is held to what only it produces.
//!
//! On a lossless fabric PFC alone already gives fair shares and full links,
//! so a test that checks only those passes with `cc: none` and guards
//! nothing. Here every algorithm runs the same 8-to-1 incast of long flows as
//! a `cc: none` baseline, and must keep the bottleneck queue short and pause
//! (almost) never, while still filling the link. Window-based algorithms
//! (Swift, HPCC) are also held to the windows they set, packet by packet.

mod common;
use common::*;
use rdmalab_core::packet::WireFormat;
use rdmalab_core::time::Time;
use rdmalab_core::world::World;

const SENDERS: usize = 8;

/// What each algorithm needs of the switches, as its docs say: HPCC reads
/// INT; DCTCP wants a step marking threshold (ns-3 run.py: K = 30 KB per
/// 10 Gb/s, so 300 KB at 100 Gb/s).
fn switch_for(cc: &str) -> &'static str {
    match cc {
        "hpcc" => r#", "int": true"#,
        "dctcp" => {
            r#", "ecn": {"thresholds": [{"rate": "100Gbps", "kmin": "300KB", "kmax": "300KB", "pmax": 1}]}"#
        }
        _ => "",
    }
}

/// Eight perftest WRITE QPs h0..h7 → h8 through one 100 Gb/s switch port, PFC on.
fn incast_world(cc: &str) -> World {
    incast_world_with(cc, "{}")
}

/// The incast with `params` (a JSON object) for the algorithm.
fn incast_world_with(cc: &str, params: &str) -> World {
    let apps: Vec<String> = (0..SENDERS)
        .map(|i| {
            format!(
                r#"{{"src": "h{i}", "dst": "h{SENDERS}", "message_size": "1MB", "queue_depth": 2}}"#
            )
        })
        .collect();
    let s = rdmalab_core::scenario::Scenario::from_json_str(&format!(
        r#"{{"duration": "10ms",
        "topology": {{"kind": "single_switch", "hosts": {}, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "switch": {{"buffer": "4MB"{}}},
        "cc": {{"algorithm": "{cc}"{}}},
        "records": {{"sample_interval": "10us"}},
        "workload": {{"perftest": [{}]}}}}"#,
        SENDERS + 1,
        switch_for(cc),
        if params == "{}" { String::new() } else { format!(r#", "params": {params}"#) },
        apps.join(",")
    ))
    .unwrap_or_else(|e| panic!("{cc}: {e}"));
    s.build().unwrap_or_else(|e| panic!("{cc}: {e}"))
}

struct Outcome {
    /// Mean bytes queued at the port towards the receiver, after 2 ms.
    mean_queue: f64,
    pauses: usize,
    /// Delivered goodput after 2 ms over the port's goodput capacity.
    utilization: f64,
    jain: f64,
}

fn outcome(cc: &str) -> Outcome {
    outcome_with(cc, "{}")
}

fn outcome_with(cc: &str, params: &str) -> Outcome {
    let mut w = incast_world_with(cc, params);
    w.run_to_end().unwrap();
    assert_conservation(&w);
    assert_eq!(
        w.rec.dropped_frames(),
        0,
        "{cc}: PFC keeps the fabric lossless"
    );
    let from = 2_000_000_000;
    // The switch is node SENDERS + 1 (hosts first); its port k leads to host k.
    let switch = (SENDERS + 1) as u32;
    let q: Vec<f64> = w
        .rec
        .port_samples
        .iter()
        .filter(|s| s.node == switch && s.port == SENDERS as u32 && s.time.ps() > from)
        .map(|s| s.queued_bytes as f64)
        .collect();
    assert!(q.len() > 100, "{cc}: queue samples of the bottleneck port");
    let mut per_qp = vec![(0f64, 0f64); w.qps.len()];
    for s in w.rec.qp_samples.iter().filter(|s| s.time.ps() > from) {
        per_qp[s.qp as usize].0 += s.throughput_bps as f64;
        per_qp[s.qp as usize].1 += 1.0;
    }
    let xs: Vec<f64> = per_qp
        .iter()
        .filter(|(_, n)| *n > 0.0)
        .map(|(s, n)| s / n)
        .collect();
    assert_eq!(xs.len(), SENDERS);
    let capacity = 100e9 * WireFormat::rocev2(1024).goodput_fraction();
    Outcome {
        mean_queue: q.iter().sum::<f64>() / q.len() as f64,
        pauses: w.rec.pfc_events.iter().filter(|e| e.pause).count(),
        utilization: xs.iter().sum::<f64>() / capacity,
        jain: jain(&xs),
    }
}

#[test]
fn every_algorithm_keeps_the_queue_short_where_pfc_alone_cannot() {
    let none = outcome("none");
    // The baseline: PFC holds the queue at its threshold and pauses all the time.
    assert!(
        none.mean_queue > 200e3,
        "cc none queue {:.0}",
        none.mean_queue
    );
    assert!(none.pauses > 100, "cc none pauses {}", none.pauses);
    for cc in ["dcqcn", "timely", "dctcp", "hpcc", "swift"] {
        let o = outcome(cc);
        println!(
            "{cc}: queue {:.0} B (none {:.0}), pauses {} (none {}), utilization {:.3}, Jain {:.3}",
            o.mean_queue, none.mean_queue, o.pauses, none.pauses, o.utilization, o.jain
        );
        assert!(
            o.mean_queue < 0.25 * none.mean_queue,
            "{cc}: queue {:.0} B is not well below cc none's {:.0} B",
            o.mean_queue,
            none.mean_queue
        );
        assert!(
            o.pauses * 10 <= none.pauses,
            "{cc}: {} pauses against cc none's {}",
            o.pauses,
            none.pauses
        );
        assert!(
            o.utilization > 0.85,
            "{cc}: utilization {:.3}",
            o.utilization
        );
        // HPCC is left out of the fairness check: its rates settle unequal and
        // stay so (here 8 flows reach Jain 0.54 after 100 ms). ns-3 HPCC does
        // the same on the same inputs: two equal flows hold 38 and 49 Gb/s
        // for 80 ms in both simulators with run.py's 100G settings, and eight
        // never settle (mean 1 ms Jain 0.84 in both); a small additive step
        // cannot undo a steady bias in the quantised INT utilisation.
        if cc != "hpcc" {
            assert!(o.jain > 0.9, "{cc}: Jain {:.3}", o.jain);
        }
    }
}

/// HPCC's aim is a near-empty queue (it targets η = 95 % utilisation from
/// INT); its initial window alone (what a do-nothing HPCC keeps) holds
/// eight BDPs in flight and about 417 KB queued.
#[test]
fn hpcc_keeps_the_queue_near_empty() {
    let o = outcome("hpcc");
    assert!(o.mean_queue < 10e3, "hpcc queue {:.0} B", o.mean_queue);
    assert!(o.utilization > 0.9, "hpcc utilization {:.3}", o.utilization);
}

/// Swift holds the fabric delay at its target: raising the target delay
/// raises the standing queue by about target × line rate. (A do-nothing
/// Swift keeps its initial window and the same queue for any target.)
#[test]
fn swift_queue_follows_its_target_delay() {
    let low = outcome_with("swift", r#"{"base_delay": "10us"}"#);
    let high = outcome_with("swift", r#"{"base_delay": "40us"}"#);
    println!(
        "swift queue: {:.0} B at 10 us, {:.0} B at 40 us",
        low.mean_queue, high.mean_queue
    );
    // 30 us more target at 100 Gb/s is 375 KB more queue.
    let more = high.mean_queue - low.mean_queue;
    assert!(
        (300e3..450e3).contains(&more),
        "swift: 30 us more target delay gave {more:.0} B more queue"
    );
    assert!(low.utilization > 0.95 && high.utilization > 0.95);
}

/// Step the run in 10 ns slices (a 1 KB packet takes 86 ns at 100 Gb/s, so a
/// QP sends at most one packet per slice) and check that no QP sends new data
/// while its bytes in flight already fill the window it has been given.
fn check_window_is_obeyed(cc: &str) {
    let mut w = incast_world(cc);
    let step = 10_000u64;
    let mut t = 0u64;
    let mut sends_checked = 0u64;
    let mut prev: Vec<(u64, u64, Option<u64>)> = Vec::new();
    let end = 3_000_000_000u64;
    while t < end {
        t += step;
        w.run_until(Time(t)).unwrap();
        let now: Vec<(u64, u64, Option<u64>)> = w
            .qps
            .iter()
            .map(|q| (q.snd_nxt_off, q.snd_una_off, q.window))
            .collect();
        for (i, (&(nxt0, _, w0), &(nxt1, una1, w1))) in prev.iter().zip(&now).enumerate() {
            if nxt1 > nxt0 && w.qps[i].retx.is_empty() {
                sends_checked += 1;
                let window = w0.max(w1).expect("the algorithm sets a window");
                // At the send, bytes in flight were at least nxt0 - una1
                // (acknowledgements only ever raise una).
                let least_in_flight = nxt0.saturating_sub(una1);
                assert!(
                    least_in_flight < window,
                    "{cc}: QP {i} sent at {t} ps with at least {least_in_flight} B in flight \
                     and a window of {window} B"
                );
            }
        }
        prev = now;
    }
    assert!(
        sends_checked > 10_000,
        "{cc}: {sends_checked} sends checked"
    );
    // The window binds: some QP had its window full at some point, else the
    // check above held only because nothing reached the window.
    let mut w = incast_world(cc);
    let mut bound = false;
    t = 0;
    while t < end && !bound {
        t += 100_000;
        w.run_until(Time(t)).unwrap();
        bound = w.qps.iter().any(|q| {
            q.window
                .is_some_and(|win| q.bytes_in_flight() + 1100 >= win && q.has_unsent())
        });
    }
    assert!(bound, "{cc}: no QP ever filled its window");
}

#[test]
fn swift_never_sends_past_its_window() {
    check_window_is_obeyed("swift");
}

#[test]
fn hpcc_never_sends_past_its_window() {
    check_window_is_obeyed("hpcc");
}

/// The receiver echoes an ECN mark on the next ACK even when it acknowledges
/// several packets at once (`nic.ack_every`): DCTCP then holds the queue at
/// its marking threshold whatever the ACK ratio. (Were two marks to cancel
/// out, ACKs covering two marked packets would carry no ECE and the queue
/// would run up to PFC.)
#[test]
fn ece_reaches_the_sender_with_coalesced_acks() {
    let mean_queue = |ack_every: u32| {
        let (w, _) = run(&format!(
            r#"{{"duration": "5ms",
            "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "switch": {{"buffer": "4MB", "ecn": {{"thresholds": [{{"rate": "100Gbps", "kmin": "100KB", "kmax": "100KB", "pmax": 1}}]}}}},
            "nic": {{"ack_every": {ack_every}}},
            "cc": {{"algorithm": "dctcp"}},
            "records": {{"sample_interval": "10us"}},
            "workload": {{"perftest": [
                {{"src": "h0", "dst": "h2", "message_size": "1MB", "queue_depth": 2}},
                {{"src": "h1", "dst": "h2", "message_size": "1MB", "queue_depth": 2}}]}}}}"#
        ));
        let q: Vec<f64> = w
            .rec
            .port_samples
            .iter()
            .filter(|s| s.node == 3 && s.port == 2 && s.time.ps() > 1_000_000_000)
            .map(|s| s.queued_bytes as f64)
            .collect();
        assert!(
            w.stats.ecn_marked > 100,
            "ack_every {ack_every}: the queue reaches K"
        );
        (
            q.iter().sum::<f64>() / q.len() as f64,
            w.rec.pfc_events.len(),
        )
    };
    let (base, _) = mean_queue(1);
    for ack_every in [2, 3] {
        let (q, pfc) = mean_queue(ack_every);
        println!(
            "ack_every {ack_every}: queue {q:.0} B (ack_every 1: {base:.0} B), {pfc} PFC frames"
        );
        assert!(
            q < 1.5 * base + 20e3,
            "ack_every {ack_every}: queue {q:.0} B against {base:.0} B"
        );
        assert_eq!(pfc, 0, "ack_every {ack_every}");
    }
}
