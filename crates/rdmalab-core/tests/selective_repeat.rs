//! Selective repeat (SRNIC §4.4, IRN) against go-back-N on a lossy link:
//! every byte still arrives, far fewer are resent, a lost tail is recovered
//! by the timeout, and the header extensions show on the wire.

mod common;
use common::{assert_conservation, run};
use rdmalab_core::world::World;

/// Two hosts through one switch, random loss on the sender's link, `cc: none`.
fn lossy(recovery: &str, loss: f64, workload: &str, duration: &str) -> String {
    lossy_at(recovery, loss, workload, duration, "1us")
}

fn lossy_at(recovery: &str, loss: f64, workload: &str, duration: &str, delay: &str) -> String {
    format!(
        r#"{{"name": "sr", "seed": 3, "duration": "{duration}",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "{delay}"}}}},
            "links": [{{"between": ["h0", "s0"], "loss": {loss}}}],
            "nic": {{"mtu": "1024B", "loss_recovery": "{recovery}", "rto": "100us", "nack_repeat_interval": "8us"}},
            "cc": {{"algorithm": "none"}},
            "workload": {workload}}}"#
    )
}

/// SRNIC Fig. 11's test: perftest 4 KiB WRITEs back to back, 1 % random
/// loss, over a 22 µs RTT (5 µs links): go-back-N resends a window per loss.
#[test]
fn selective_repeat_keeps_goodput_under_1pct_loss() {
    let apps = r#"{"perftest": [{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "4KiB", "queue_depth": 128}]}"#;
    let gbps = |recovery: &str| {
        let (w, _) = run(&lossy_at(recovery, 0.01, apps, "2ms", "5us"));
        assert_conservation(&w);
        (
            w.apps[0].completed_bytes as f64 * 8.0 / 2e-3 / 1e9,
            w.stats.retransmitted_packets,
        )
    };
    let (sr, sr_retx) = gbps("selective-repeat");
    let (gbn, gbn_retx) = gbps("go-back-n");
    println!("1 % loss: selective repeat {sr:.1} Gb/s ({sr_retx} resent), go-back-N {gbn:.1} Gb/s ({gbn_retx} resent)");
    assert!(
        sr >= 2.0 * gbn,
        "at least twice go-back-N's goodput: {sr:.1} vs {gbn:.1}"
    );
    assert!(
        sr_retx * 5 < gbn_retx,
        "resends only the holes: {sr_retx} vs {gbn_retx}"
    );
}

/// Every flow completes with every byte, under loss, and the tails lost
/// along the way are recovered by the timeout.
#[test]
fn selective_repeat_delivers_every_byte_and_recovers_tails() {
    let flows: Vec<String> = (0..40)
        .map(|i| {
            format!(
                r#"{{"src": "h0", "dst": "h1", "size": "{}", "start": "{}us"}}"#,
                if i % 2 == 0 { "1MB" } else { "3KB" },
                i * 5
            )
        })
        .collect();
    let workload = format!(r#"{{"flows": [{}]}}"#, flows.join(","));
    let (w, _) = run(&lossy("selective-repeat", 0.03, &workload, "20ms"));
    assert_eq!(w.rec.flows.len(), 40, "every flow completes");
    assert_conservation(&w);
    assert!(
        w.stats.timeouts > 0,
        "some tail was lost and found by the RTO"
    );
    assert!(w.stats.sr_out_of_order > 0);
    for q in &w.qps {
        assert_eq!(q.delivered_bytes, q.byte_end);
        assert!(
            q.rx_ooo.is_empty() && q.sacked.is_empty() && q.retx.is_empty() && q.resent.is_empty(),
            "no state left behind"
        );
    }
}

/// SRNIC §6: SEND 58 → 66 B, WRITE 58 → 78 B: +8 and +20 B on every packet.
#[test]
fn header_extensions_on_the_wire() {
    let bytes = |recovery: &str, verb: &str| {
        let wl = format!(
            r#"{{"flows": [{{"src": "h0", "dst": "h1", "size": "4096B", "verb": "{verb}"}}]}}"#
        );
        let (w, _) = run(&lossy(recovery, 0.0, &wl, "100us"));
        w.ports
            .iter()
            .filter(|p| !p.at_switch)
            .map(|p| p.tx_bytes)
            .sum::<u64>()
    };
    // 4 data packets; the ACKs are the same size either way.
    assert_eq!(
        bytes("selective-repeat", "send") - bytes("go-back-n", "send"),
        4 * 8
    );
    // Go-back-N WRITEs carry a 16 B RETH on the first packet only.
    assert_eq!(
        bytes("selective-repeat", "write") - bytes("go-back-n", "write"),
        4 * 20 - 16
    );
}

#[test]
fn selective_repeat_refuses_what_it_cannot_do() {
    let wl = r#"{"flows": [{"src": "h0", "dst": "h1", "size": "4096B", "verb": "read"}]}"#;
    let e = rdmalab_core::scenario::Scenario::from_json_str(&lossy(
        "selective-repeat",
        0.0,
        wl,
        "100us",
    ))
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("nic.loss_recovery") && e.contains("READ"), "{e}");
    let bad = lossy(
        "selective",
        0.0,
        r#"{"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}"#,
        "100us",
    );
    let e = rdmalab_core::scenario::Scenario::from_json_str(&bad)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("nic.loss_recovery") && e.contains("selective-repeat"),
        "{e}"
    );
    let ns3 = lossy(
        "selective-repeat",
        0.0,
        r#"{"flows": [{"src": "h0", "dst": "h1", "size": "1KB"}]}"#,
        "100us",
    )
    .replace(
        r#""mtu": "1024B","#,
        r#""mtu": "1024B", "qp_scheduler": "ns3-hpcc","#,
    );
    let e = rdmalab_core::scenario::Scenario::from_json_str(&ns3)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("ns3-hpcc"), "{e}");
}

/// A window (`nic.window`, or `bdp`) must not hold back the resend of the
/// hole that keeps `snd_una` (and so the window) where it is; and a lost
/// resend is found from later SACKs, so goodput does not hang on the RTO.
#[test]
fn holes_are_resent_with_a_window_and_without_waiting_for_the_rto() {
    let apps = r#"{"perftest": [{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "4KiB", "queue_depth": 128}]}"#;
    let gbps = |recovery: &str, extra: &str, rto: &str| {
        let s = lossy(recovery, 0.01, apps, "2ms")
            .replace(r#""rto": "100us""#, &format!(r#""rto": "{rto}"{extra}"#));
        let (w, _) = run(&s);
        assert_conservation(&w);
        w.apps[0].completed_bytes as f64 * 8.0 / 2e-3 / 1e9
    };
    let (sr_w, gbn_w) = (
        gbps("selective-repeat", r#", "window": "32KB""#, "100us"),
        gbps("go-back-n", r#", "window": "32KB""#, "100us"),
    );
    assert!(
        sr_w > 0.8 * gbn_w,
        "with a window: selective repeat {sr_w:.1} vs go-back-N {gbn_w:.1} Gb/s"
    );
    let (fast, slow) = (
        gbps("selective-repeat", "", "100us"),
        gbps("selective-repeat", "", "1ms"),
    );
    assert!(
        slow > 0.97 * fast,
        "lost resends found without the RTO: {slow:.1} (1 ms) vs {fast:.1} Gb/s (100 us)"
    );
}

/// One WRITE of `packets` 1 KiB packets over 1 µs links, with the h0–s0
/// link down during `downs` (both directions: a data frame h0 sends, or an
/// ACK/NACK s0 sends to h0, in a window is lost). Data PSN k starts at
/// 0.09·k µs; with 20 packets and PSN 6 lost, the NACK for PSN k leaves s0
/// at 3.82 + 0.09·(k − 7) µs.
fn one_write_with_outages(packets: u32, downs: &str) -> World {
    let s = lossy(
        "selective-repeat",
        0.0,
        &format!(
            r#"{{"flows": [{{"src": "h0", "dst": "h1", "size": "{packets}KiB", "verb": "write"}}]}}"#
        ),
        "200us",
    );
    let link = r#""loss": 0}"#;
    assert!(s.contains(link));
    let s = s.replace(link, &format!(r#""loss": 0, "down": {downs}}}"#));
    let (w, _) = run(&s);
    assert_conservation(&w);
    assert_eq!(w.rec.flows.len(), 1, "the WRITE completes");
    assert_eq!(w.stats.timeouts, 0, "recovered by NACKs alone");
    w
}

/// What selective repeat resends per loss, class by class (docs/srnic.md,
/// Fig. 11): a lost data packet costs one resend; a lost cumulative ACK
/// costs none; a lost NACK costs one spurious resend, because a NACK
/// reports one received PSN (IRN's simplified SACK, SRNIC §4.4.2) and the
/// sender cannot tell a PSN whose NACK was lost from one that was lost.
#[test]
fn resends_per_loss_class() {
    // PSN 6 lost: it alone is resent, once.
    let w = one_write_with_outages(20, r#"[["500ns", "580ns"]]"#);
    assert_eq!(w.stats.data_payload_dropped, 1024);
    assert_eq!(w.rec.dropped_frames(), 1);
    assert_eq!(w.stats.retransmitted_packets, 1);

    // ACKs lost, no data: nothing resent (the next ACK carries the same news).
    let w = one_write_with_outages(20, r#"[["3150ns", "3400ns"]]"#);
    assert_eq!(w.stats.data_payload_dropped, 0);
    assert_eq!(w.rec.dropped_frames(), 3, "the ACKs of PSNs 0, 1 and 2");
    assert_eq!(w.stats.nacks_sent, 0);
    assert_eq!(w.stats.retransmitted_packets, 0);

    // PSN 6 lost, then the NACKs for PSNs 8, 9 and 10 (which did arrive):
    // PSN 6 and each of those three are resent, once.
    let w = one_write_with_outages(20, r#"[["500ns", "580ns"], ["3880ns", "4120ns"]]"#);
    assert_eq!(w.stats.data_payload_dropped, 1024);
    assert_eq!(w.rec.dropped_frames(), 1 + 3);
    assert_eq!(w.stats.retransmitted_packets, 1 + 3);
    let q = &w.qps[0];
    assert_eq!(q.delivered_bytes, q.byte_end);
    assert!(q.rx_ooo.is_empty() && q.sacked.is_empty() && q.retx.is_empty() && q.resent.is_empty());
}

/// A lost resend is resent again on the SACK of a packet first sent after
/// it, even when a later hole's resend came after that packet too (one
/// mark per hole; with one mark for the latest resend, the WRITE's last
/// packet went out before the latest resend and only the RTO found it).
#[test]
fn a_lost_resend_is_found_by_later_sacks_not_the_rto() {
    // PSNs 5 and 15 lost; 5's resend (at 4.77 µs, after PSN 52) lost too;
    // 15's resend goes at 5.64 µs, after the last PSN (59).
    let w = one_write_with_outages(
        60,
        r#"[["440ns", "470ns"], ["1340ns", "1370ns"], ["4770ns", "4780ns"]]"#,
    );
    assert_eq!(w.stats.data_payload_dropped, 3 * 1024);
    assert_eq!(w.rec.dropped_frames(), 3);
    assert_eq!(w.stats.retransmitted_packets, 3, "5, 15, and 5 again");
    let f = &w.rec.flows[0];
    assert!(
        f.finish - f.start < rdmalab_core::time::Duration::from_us(15),
        "found a round trip after the lost resend: {:?}",
        f.finish - f.start
    );
}
