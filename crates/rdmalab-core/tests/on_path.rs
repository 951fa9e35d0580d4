//! On-path control cores (`control.on_path`, SwCC ATC'25 §3): a packet
//! cannot leave until its QP's TX core has processed it, so a busy core caps
//! the packet rate; the same cost off the path only makes decisions late.

mod common;
use common::{assert_conservation, run};

/// `qps` perftest WRITE QPs of 64 KiB messages from h0 to h1 at 100 Gb/s
/// (1024 B MTU: 88 ns a packet on the wire), with `control` as given.
fn sender(qps: u32, control: &str, cc: &str) -> (f64, rdmalab_core::world::World) {
    let json = format!(
        r#"{{"name": "onpath", "seed": 1, "duration": "200us",
        "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "nic": {{"mtu": "1024B"}},
        "cc": {{"algorithm": "{cc}"}},
        {control}
        "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "64KiB", "queue_depth": 8, "qps": {qps}}}]}}}}"#
    );
    let (w, _) = run(&json);
    assert_conservation(&w);
    let data_packets = w.stats.data_payload_sent as f64 / 1024.0;
    (data_packets / 200e-6 / 1e6, w)
}

#[test]
fn one_tx_core_caps_the_packet_rate_at_one_per_cost() {
    // 200 ns a packet (200 cycles at 1 GHz): at most 5 Mpps, where the link allows 11.3.
    let on =
        r#""control": {"on_path": {"tx_cores": 1, "cycles_per_packet": 200, "clock": "1GHz"}},"#;
    let (free, _) = sender(1, "", "none");
    let (one, w) = sender(1, on, "none");
    println!("one QP: {free:.2} Mpps free, {one:.2} Mpps through one 200 ns core");
    assert!(
        one <= 5.0 + 1.0 / 200.0,
        "never above 1 / cost: {one:.3} Mpps"
    );
    assert!(one > 4.8, "and the core is the only limit: {one:.3} Mpps");
    assert!(free > 10.5);
    assert!(w.nics[0].tx_core_packets as f64 >= one * 200.0 * 0.99);
    // Two QPs on one core share its rate; on two cores each has its own.
    let (shared, _) = sender(2, on, "none");
    let two = on.replace(r#""tx_cores": 1"#, r#""tx_cores": 2"#);
    let (spread, _) = sender(2, &two, "none");
    println!("two QPs: {shared:.2} Mpps on one core, {spread:.2} on two");
    assert!(shared <= 5.0 + 0.01);
    assert!(spread > 9.5, "{spread:.2}");
}

#[test]
fn off_path_the_same_cost_leaves_the_data_rate_alone() {
    // TIMELY (an event per ACK, one per packet) on one control thread at 200 ns
    // an event, off the path (SCR-style placement): the thread is overloaded,
    // yet the data still leaves at line rate; only the decisions wait.
    let off = r#""control": {"placement": "swcc", "processing": "200ns", "threads": 1},"#;
    let (rate_off, w) = sender(1, off, "timely");
    let on = r#""control": {"on_path": {"tx_cores": 1, "per_packet": "200ns"}},"#;
    let (rate_on, _) = sender(1, on, "timely");
    println!("TIMELY at 200 ns a packet: {rate_off:.2} Mpps off the path, {rate_on:.2} on it");
    assert!(rate_off > 10.5, "{rate_off:.2}");
    assert!(rate_on <= 5.01, "{rate_on:.2}");
    let fw = w.ctl.as_ref().expect("an off-path placement");
    let ran: u64 = fw.stats.processed.iter().sum();
    let busy = fw
        .threads
        .iter()
        .map(|t| t.busy_time.ps())
        .max()
        .unwrap_or(0) as f64
        / w.now().ps() as f64;
    assert!(
        ran > 500 && busy > 0.9,
        "the controller ran, its thread saturated, off the path: {ran} entries, busy {busy:.2}"
    );
}

#[test]
fn bad_on_path_input_is_refused() {
    let base = |op: &str| {
        format!(
            r#"{{"name": "bad", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "control": {{"on_path": {op}}}, "cc": {{"algorithm": "none"}},
            "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
        )
    };
    for (op, key) in [
        (
            r#"{"tx_cores": 0, "per_packet": "100ns"}"#,
            "needs tx_cores or rx_cores",
        ),
        (
            r#"{"tx_cores": 2000, "per_packet": "100ns"}"#,
            "control.on_path.tx_cores",
        ),
        (
            r#"{"rx_cores": 1, "per_packet": "100ns", "rx_per_packet": "1ns"}"#,
            "control.on_path.per_packet",
        ),
        (
            r#"{"tx_cores": 1, "cycles_per_packet": 100}"#,
            "control.on_path.clock",
        ),
        (
            r#"{"tx_cores": 1, "cycles_per_packet": 100, "per_packet": "1ns", "clock": "1GHz"}"#,
            "control.on_path",
        ),
        (
            r#"{"tx_cores": 1, "cycles_per_packet": 100, "clock": "fast"}"#,
            "control.on_path.clock",
        ),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "rx_cores": 1}"#,
            "rx_per_packet",
        ),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "spare_cores": 1}"#,
            "control.on_path.spare_cores",
        ),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "memory": "qp-aware"}"#,
            "control.on_path.clock",
        ),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "clock": "1GHz", "memory": "sram"}"#,
            "allowed: naive, qp-aware",
        ),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "clock": "1GHz", "memory": {"kind": "naive", "hint": true}}"#,
            "control.on_path.memory.hint",
        ),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "clock": "1GHz", "memory": {"kind": "qp-aware", "table": "64B"}}"#,
            "control.on_path.memory.table",
        ),
        (r#""dpu""#, "allowed: swcc, connectx-5, soft-roce"),
        (r#"{"preset": 3}"#, "control.on_path.preset"),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "shared": true, "rx_cores": 1}"#,
            "not with shared: true",
        ),
        (
            r#"{"tx_cores": 1, "per_packet": "1ns", "rx_data": true}"#,
            "control.on_path.rx_data",
        ),
        (
            r#"{"preset": "soft-roce", "per_byte": "fast"}"#,
            "control.on_path.per_byte",
        ),
    ] {
        let e = rdmalab_core::scenario::Scenario::from_json_str(&base(op))
            .err()
            .unwrap_or_else(|| panic!("accepted {op}"))
            .to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

/// SwCC's RX core handles every ACK before it acts: with a window, a QP
/// whose ACKs take 200 ns each cannot send more than one packet per 200 ns
/// (one ACK per packet).
#[test]
fn a_slow_rx_core_holds_a_windowed_sender_back() {
    let windowed = |control: &str| {
        let json = format!(
            r#"{{"name": "rx", "seed": 1, "duration": "200us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "nic": {{"mtu": "1024B", "window": "bdp"}},
            "cc": {{"algorithm": "none"}},
            {control}
            "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "64KiB", "queue_depth": 8}}]}}}}"#
        );
        let (w, _) = run(&json);
        assert_conservation(&w);
        (w.stats.data_payload_sent as f64 / 1024.0 / 200e-6 / 1e6, w)
    };
    let rx = r#""control": {"on_path": {"rx_cores": 1, "rx_per_packet": "200ns"}},"#;
    let (free, _) = windowed("");
    let (slow, w) = windowed(rx);
    println!(
        "window = BDP: {free:.2} Mpps with free ACKs, {slow:.2} Mpps through a 200 ns RX core"
    );
    assert!(free > 10.5, "{free:.2}");
    // One ACK per packet, at most 5 M ACKs/s: beyond the first window, sends follow the ACKs.
    let window_packets = w.qps[0].window.unwrap() as f64 / 1024.0;
    assert!(
        slow <= 5.0 + window_packets / 200.0,
        "{slow:.2} Mpps (window {window_packets:.0} packets)"
    );
    assert!(slow > 4.5, "{slow:.2}");
    assert!(
        w.nics[0].rx_core_packets > 0 && w.nics[1].rx_core_packets == 0,
        "the sender's RX core handles the ACKs"
    );
}

/// `qps` QPs of 1 KB WRITEs (one posted each) through one TX and one RX
/// core at 250 MHz, 60 cycles an event, with the QP-context `memory` given.
/// Returns the mean core time to reach a context (ns) and the goodput (Gb/s).
fn context_memory(qps: u32, memory: &str) -> (f64, f64) {
    let json = format!(
        r#"{{"name": "ctxmem", "seed": 1, "duration": "2ms",
        "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "cc": {{"algorithm": "none"}},
        "control": {{"on_path": {{"tx_cores": 1, "rx_cores": 1, "clock": "250MHz", "cycles_per_packet": 60, "rx_cycles_per_packet": 60, "memory": {memory}}}}},
        "workload": {{"perftest": [{{"name": "w", "src": "h0", "dst": "h1", "message_size": "1KB", "queue_depth": 1, "qps": {qps}}}]}}}}"#
    );
    let (w, _) = run(&json);
    assert_conservation(&w);
    let m = w.nics[0].ctx_mem.as_ref().expect("sender's memory");
    let bytes: u64 = w.apps.iter().map(|a| a.completed_bytes).sum();
    (
        m.access_ps as f64 / m.accesses as f64 / 1e3,
        bytes as f64 * 8.0 / 2e-3 / 1e9,
    )
}

#[test]
fn qp_aware_memory_keeps_context_access_flat_where_a_naive_cache_degrades() {
    let naive = |q| context_memory(q, r#""naive""#);
    let aware = |q| context_memory(q, r#"{"kind": "qp-aware", "hint": false}"#);
    let hinted = |q| context_memory(q, r#""qp-aware""#);
    let (n1, _) = naive(512);
    let (n2, naive_gbps) = naive(8192);
    let (a1, _) = aware(512);
    let (a2, _) = aware(8192);
    let (h1, _) = hinted(512);
    let (h2, hinted_gbps) = hinted(8192);
    println!("access ns, 512 -> 8192 QPs: naive {n1:.0} -> {n2:.0}, qp-aware {a1:.0} -> {a2:.0}, with hint {h1:.0} -> {h2:.0}");
    println!(
        "goodput at 8192 QPs: naive {naive_gbps:.1}, qp-aware with hint {hinted_gbps:.1} Gb/s"
    );
    // Contexts fit (512 < 1K): CSR reads beat loads and stores by at least half.
    assert!(a1 <= 0.5 * n1 && h1 <= 0.5 * n1);
    // 8192 QPs overflow both: the naive cache stalls per line, the table per context
    // unless the hint prefetches it; with the hint access stays within 10 % of the fitted case.
    assert!(n2 > 2.0 * n1, "naive degrades: {n1:.0} -> {n2:.0} ns");
    assert!(a2 > 2.0 * a1, "no hint degrades: {a1:.0} -> {a2:.0} ns");
    assert!(
        h2 <= 1.1 * h1,
        "the hint keeps it flat: {h1:.0} -> {h2:.0} ns"
    );
    // One core pair is the bottleneck, so the naive cache costs throughput.
    assert!(
        naive_gbps < 0.7 * hinted_gbps,
        "{naive_gbps:.1} vs {hinted_gbps:.1} Gb/s"
    );
}

/// One QP of 64 KiB WRITEs (2 KiB packets), 8 posted (more than a BDP), into
/// one receiver, with on-path cores `op`, an ACK every `ack_every` packets
/// (and at each message's end) and no CC: the cores gate ACKs anyway.
fn one_qp(op: &str, ack_every: u32) -> rdmalab_core::world::World {
    let json = format!(
        r#"{{"name": "pool", "seed": 1, "duration": "400us",
        "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "725ns"}}}},
        "nic": {{"mtu": "2048B", "ack_every": {ack_every}}},
        "cc": {{"algorithm": "none"}},
        "control": {{"on_path": {op}}},
        "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "64KiB", "queue_depth": 8}}]}}}}"#
    );
    let (w, _) = run(&json);
    assert_conservation(&w);
    w
}

/// Data packets per µs that reached the receiver's transport.
fn mpps(w: &rdmalab_core::world::World) -> f64 {
    w.stats.data_payload_arrived as f64 / 2048.0 / (w.now().ps() as f64 * 1e-12) / 1e6
}

#[test]
fn a_shared_pool_pays_for_the_ack_with_the_packet_rate() {
    // 200 ns a TX event and 200 ns an ACK: separate cores send a packet per
    // 200 ns; one core doing both (a ConnectX PU, a Soft-RoCE thread) one per
    // 400 ns, as every data packet brings back one ACK.
    let split = one_qp(
        r#"{"tx_cores": 1, "rx_cores": 1, "per_packet": "200ns", "rx_per_packet": "200ns"}"#,
        1,
    );
    let shared = one_qp(
        r#"{"tx_cores": 1, "shared": true, "per_packet": "200ns", "rx_per_packet": "200ns"}"#,
        1,
    );
    let (a, b) = (mpps(&split), mpps(&shared));
    println!("separate pools {a:.3} Mpps, one shared core {b:.3} Mpps");
    assert!(a <= 5.0 + 0.01 && a > 4.7, "{a:.3}");
    assert!(b <= 2.5 * 1.01 && b > 2.3, "{b:.3}");
}

#[test]
fn per_byte_cost_and_receive_side_cores_gate_the_data() {
    // 1 ns a payload byte on the sender's core: 2 KiB packets leave at most
    // one per 2.048 us, whatever the per-packet cost.
    let bytes = one_qp(
        r#"{"tx_cores": 1, "per_packet": "1ns", "per_byte": "1ns"}"#,
        1,
    );
    let r = mpps(&bytes);
    assert!(r <= 1.0 / 2.049 && r > 0.45, "{r:.3} Mpps");
    // With rx_data the receiver's core handles every data packet before it
    // is acknowledged: a 1 us receive core holds a cheap sender to 1 Mpps;
    // without rx_data the same cores only see the ACKs (one per 8 packets).
    let gated = one_qp(
        r#"{"tx_cores": 1, "rx_cores": 1, "per_packet": "1ns", "rx_per_packet": "1us", "rx_data": true}"#,
        8,
    );
    let free = one_qp(
        r#"{"tx_cores": 1, "rx_cores": 1, "per_packet": "1ns", "rx_per_packet": "1us"}"#,
        8,
    );
    let (g, f) = (mpps(&gated), mpps(&free));
    println!("per-byte {r:.3} Mpps; receive core 1 us: {g:.3} Mpps with rx_data, {f:.3} without");
    assert!(g <= 1.0 + 0.01 && g > 0.9, "{g:.3}");
    assert!(f > 2.0 * g, "{f:.3}");
    assert_eq!(
        gated.nics[1].rx_core_packets as f64 >= g * 400.0 * 0.99,
        true
    );
}

#[test]
fn the_control_loop_is_built_from_its_parts() {
    // One idle QP: at the ASIC the loop is the RTT the NIC sees; an RX core
    // on the path adds its time per ACK; an off-path placement adds exactly
    // its trigger, processing and install (no queueing for one QP).
    let loop_ps = |control: &str| {
        let json = format!(
            r#"{{"name": "loop", "seed": 1, "duration": "200us",
            "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "725ns"}}}},
            "cc": {{"algorithm": "timely"}}, "control": {control},
            "workload": {{"perftest": [{{"name": "t", "src": "h0", "dst": "h1", "verb": "write", "message_size": "1000B", "queue_depth": 1}}]}}}}"#
        );
        let (w, _) = run(&json);
        let l = w.stats.control_loop;
        assert!(l.count > 3, "{control}: {} loops", l.count);
        println!(
            "{control}: {} loops, {}..{} ps",
            l.count, l.min_ps, l.max_ps
        );
        assert_eq!(l.min_ps, l.max_ps, "{control}: an idle loop never varies");
        l.mean_ps() as i64
    };
    let asic = loop_ps(r#"{"placement": "asic"}"#);
    // 4 links of 725 ns, 2 x 1 KB and 2 x ACK serialisations at 100 Gb/s.
    assert!((3_000_000..3_200_000).contains(&asic), "{asic}");
    let cpu = loop_ps(r#"{"placement": "host-cpu", "threads": 1}"#);
    assert_eq!(cpu - asic, 20_000_000, "host-cpu: 8 + 4 + 8 us");
    let rx =
        loop_ps(r#"{"placement": "asic", "on_path": {"rx_cores": 1, "rx_per_packet": "300ns"}}"#);
    assert_eq!(rx - asic, 300_000);
    let soft = loop_ps(r#"{"placement": "asic", "on_path": "soft-roce"}"#);
    // Its receiver's thread (7.8 us + 1000 B x 4.19 ns) and the ACK's (7.8 us).
    assert_eq!(soft - asic, 7_800_000 + 4_190_000 + 7_800_000);
}

/// A two-host scenario whose SwCC on-path cores use context memory `mem`
/// (a JSON mapping), for the tests of that key's checks.
fn on_path_memory_scenario(mem: &str) -> String {
    format!(
        r#"{{"name": "bad", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "control": {{"on_path": {{"preset": "swcc", "memory": {mem}}}}}, "cc": {{"algorithm": "none"}},
        "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
    )
}

/// Each context memory of `refused` is refused with its message (which
/// names the key and the value); each of `accepted` is accepted.
fn check_on_path_memory(refused: &[(&str, &str)], accepted: &[&str]) {
    for (mem, want) in refused {
        let e = rdmalab_core::scenario::Scenario::from_json_str(&on_path_memory_scenario(mem))
            .err()
            .unwrap_or_else(|| panic!("accepted {mem}"))
            .to_string();
        assert!(e.contains(want), "{mem}: {e}");
    }
    for mem in accepted {
        rdmalab_core::scenario::Scenario::from_json_str(&on_path_memory_scenario(mem))
            .unwrap_or_else(|e| panic!("{mem}: {e}"));
    }
}

/// A context-memory key that only the other kind (or the QPN hint) reads
/// is refused like `hint` with `naive`: `line` with `qp-aware`, or a lead
/// without the hint, used to be accepted and ignored.
#[test]
fn a_context_memory_key_its_kind_does_not_read_is_refused() {
    check_on_path_memory(
        &[
            (
                r#"{"kind": "qp-aware", "line": "0B"}"#,
                "control.on_path.memory.line: `0B` — only applies to kind naive",
            ),
            (
                r#"{"kind": "naive", "tx_lead": "10ns"}"#,
                "control.on_path.memory.tx_lead: `10ns` — only applies to kind qp-aware with hint: true",
            ),
            (
                r#"{"kind": "qp-aware", "hint": false, "rx_lead": "10ns"}"#,
                "control.on_path.memory.rx_lead: `10ns`",
            ),
            // A zero-byte context is named, not the table that could not hold it.
            (
                r#"{"kind": "qp-aware", "entry": "0B"}"#,
                "control.on_path.memory.entry: `0B` — must be at least 1 byte",
            ),
            (
                r#"{"kind": "naive", "entry": "0B"}"#,
                "control.on_path.memory.entry: `0B` — must be at least 1 byte",
            ),
            (
                r#"{"kind": "naive", "line": "0B"}"#,
                "control.on_path.memory.line: `0B` — must be at least 1 byte",
            ),
        ],
        &[
            r#"{"kind": "naive", "line": "32B"}"#,
            r#"{"kind": "qp-aware", "tx_lead": "10ns", "rx_lead": "20ns"}"#,
        ],
    );
}

/// A naive core pays `dram` for each line of a context that misses: a
/// huge context in tiny lines times a long `dram` passed u64 picoseconds,
/// which a release build wrapped (1 MiB of 1 B lines at 2^44 ps each is
/// exactly 2^64: no stall at all). Refused naming `dram`, its value and the
/// line count; the same context with a short `dram` is accepted.
#[test]
fn a_naive_context_whose_misses_pass_an_hour_is_refused() {
    check_on_path_memory(
        &[
            (
                r#"{"kind": "naive", "entry": "1MiB", "line": "1B", "dram": "17592186044416ps"}"#,
                "control.on_path.memory.dram: `17592186044416ps` — × 1048576 lines (entry 1048576B / line 1B) is more than 3600s (one hour) per event",
            ),
            (
                r#"{"kind": "naive", "entry": "128B", "line": "64B", "dram": "3600s"}"#,
                "control.on_path.memory.dram: `3600s` — × 2 lines (entry 128B / line 64B)",
            ),
        ],
        &[
            r#"{"kind": "naive", "entry": "1MiB", "line": "1B", "dram": "1ms"}"#,
            r#"{"kind": "naive", "entry": "64B", "line": "64B", "dram": "3600s"}"#,
            // qp-aware fetches a whole context once: no per-line product.
            r#"{"kind": "qp-aware", "entry": "1MiB", "table": "1MiB", "dram": "3600s"}"#,
        ],
    );
}

/// A context's lines and a table's slots are counted in u32: an `entry` of
/// 4 GiB or more in 1-byte lines (or a table of more slots) used to be cut
/// to u32::MAX without a word. Refused naming the key, the value and the
/// bound; one line fewer (or twice the line) is accepted.
#[test]
fn a_context_memory_whose_counts_pass_u32_is_refused() {
    check_on_path_memory(
        &[
            (
                r#"{"kind": "naive", "entry": "4GiB", "line": "1B", "dram": "1ps"}"#,
                "control.on_path.memory.entry: `4294967296B` — is 4294967296 lines of 1B; allowed: at most 4294967295 lines, an entry of at most 4294967295B with this line",
            ),
            (
                r#"{"kind": "naive", "table": "4GiB", "line": "1B"}"#,
                "control.on_path.memory.table: `4294967296B` — holds 4294967296 lines of 1B; allowed: at most 4294967295 of them",
            ),
            (
                r#"{"kind": "qp-aware", "table": "512GiB", "entry": "128B"}"#,
                "control.on_path.memory.table: `549755813888B` — holds 4294967296 contexts of 128B",
            ),
        ],
        &[
            r#"{"kind": "naive", "entry": "4294967295B", "line": "1B", "dram": "1ps"}"#,
            r#"{"kind": "naive", "entry": "4GiB", "line": "2B", "dram": "1ps"}"#,
            r#"{"kind": "qp-aware", "entry": "8GiB", "table": "8GiB", "dram": "1us"}"#,
        ],
    );
}

/// A naive context far longer than the cache (1 GiB of 1-byte lines through
/// a 1 KiB cache) costs its events what the line-by-line loop gives — every
/// line a miss, 2^30 of them — without reading 2^30 lines per event.
#[test]
fn a_huge_naive_context_costs_every_line_without_reading_each() {
    let json = on_path_memory_scenario(
        r#"{"kind": "naive", "entry": "1GiB", "line": "1B", "table": "1KiB", "dram": "1ps"}"#,
    );
    let (w, _) = run(&json);
    let m = w.nics[0].ctx_mem.as_ref().expect("sender's memory");
    assert!(m.accesses > 0);
    assert_eq!(m.misses, m.accesses, "every event misses");
    // access_cycles 24 at 250 MHz, then 2^30 misses of 1 ps each.
    assert_eq!(m.access_ps, m.accesses * (96_000 + (1 << 30)));
}

/// A clock for cores whose costs are all durations read nothing: it used to
/// be taken and ignored (`{preset: connectx-5, clock: 1GHz}` ran at 177 ns).
#[test]
fn a_clock_no_cost_is_counted_in_is_refused() {
    let base = |op: &str| {
        format!(
            r#"{{"name": "bad", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 2, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "control": {{"on_path": {op}}}, "cc": {{"algorithm": "none"}},
            "workload": {{"flows": [{{"src": "h0", "dst": "h1", "size": "1KB"}}]}}}}"#
        )
    };
    for op in [
        r#"{"tx_cores": 2, "per_packet": "100ns", "clock": "250MHz"}"#,
        r#"{"preset": "connectx-5", "clock": "1GHz"}"#,
    ] {
        let e = rdmalab_core::scenario::Scenario::from_json_str(&base(op))
            .err()
            .unwrap_or_else(|| panic!("accepted {op}"))
            .to_string();
        assert!(
            e.contains("control.on_path.clock: `")
                && e.contains("only applies with cycles_per_packet"),
            "{op}: {e}"
        );
    }
    for op in [
        r#"{"tx_cores": 2, "cycles_per_packet": 25, "clock": "250MHz"}"#,
        r#"{"preset": "swcc", "clock": "500MHz"}"#,
        r#"{"tx_cores": 1, "per_packet": "1ns", "clock": "1GHz", "memory": "naive"}"#,
    ] {
        rdmalab_core::scenario::Scenario::from_json_str(&base(op))
            .unwrap_or_else(|e| panic!("{op}: {e}"));
    }
}
