//! Parallel runs give the serial run's outputs byte for byte: every table,
//! every counter, the end time, whatever the number of threads and wherever
//! the run is stopped and resumed.

mod common;
use common::assert_conservation;
use rdmalab_core::parallel::{ParallelRun, Step};
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::Time;
use rdmalab_core::world::{Progress, World};

/// Every output a run writes, as text.
fn outputs(w: &World) -> String {
    let mut out = Vec::new();
    type Table = fn(&World, &mut dyn std::io::Write) -> std::io::Result<()>;
    let tables: [(&str, Table); 9] = [
        ("apps", |w, f| w.write_apps_csv(f)),
        ("flows", |w, f| w.write_flows_csv(f)),
        ("qp_samples", |w, f| w.write_qp_samples_csv(f)),
        ("port_samples", |w, f| w.write_port_samples_csv(f)),
        ("counter_samples", |w, f| w.write_counter_samples_csv(f)),
        ("pfc", |w, f| w.write_pfc_csv(f)),
        ("drops", |w, f| w.write_drops_csv(f)),
        ("fct", |w, f| w.write_hpcc_fct(f)),
        ("tenants", |w, f| w.write_tenants_csv(f)),
    ];
    for (name, t) in tables {
        out.extend_from_slice(format!("== {name}\n").as_bytes());
        t(w, &mut out).unwrap();
    }
    let s = &w.stats;
    out.extend_from_slice(
        format!(
            "== summary\nnow {} events {} hops {} nic_tx {} sent {} arrived {} dropped {} in_net {} retx {} timeouts {} nacks {} cnps {} acks {} ecn {} pauses {} resumes {} peak_live {} pool {} open {}\n",
            w.now().ps(),
            w.q.processed(),
            s.switch_tx_packets,
            s.nic_tx_packets,
            s.data_payload_sent,
            s.data_payload_arrived,
            s.data_payload_dropped,
            w.data_payload_in_network(),
            s.retransmitted_packets,
            s.timeouts,
            s.nacks_sent,
            s.cnps_sent,
            s.acks_sent,
            s.ecn_marked,
            s.pfc_pauses_sent,
            s.pfc_resumes_sent,
            s.peak_live_packets,
            w.pkts.capacity_used(),
            w.flows_open,
        )
        .as_bytes(),
    );
    String::from_utf8(out).unwrap()
}

fn build(json: &str) -> World {
    Scenario::from_json_str(json)
        .unwrap_or_else(|e| panic!("{e}"))
        .build()
        .expect("build")
}

/// Run serially in steps of `step_ps`, as the Python runner does.
fn serial(json: &str, step_ps: u64) -> (World, Progress) {
    let mut w = build(json);
    let stop = w.run.stop_at.ps();
    let mut t = 0;
    loop {
        t = (t + step_ps).min(stop);
        let p = w.run_until(Time(t)).unwrap_or_else(|e| panic!("{e}"));
        if p != Progress::Running {
            return (w, p);
        }
    }
}

/// Run on `threads` threads in steps of `step_ps`, folding when the run must.
fn parallel(json: &str, threads: usize, step_ps: u64) -> (World, Progress, u64) {
    let worlds = (0..threads).map(|_| build(json)).collect();
    let mut par = ParallelRun::new(worlds).unwrap_or_else(|e| panic!("{e}"));
    let stop = par_stop(json);
    let mut t = 0;
    loop {
        t = (t + step_ps).min(stop);
        match par.run_until(Time(t)).unwrap_or_else(|e| panic!("{e}")) {
            Step::Progress(Progress::Running) => continue,
            Step::Progress(p) => {
                if p == Progress::StopTime {
                    assert_eq!(par.now().ps(), stop, "a run at its stop time is there");
                }
                return (par.fold(), p, u64::MAX);
            }
            Step::FoldToSerial => {
                let folded_at = par.now().ps();
                let mut w = par.fold();
                loop {
                    let p = w.run_until(Time(t)).unwrap_or_else(|e| panic!("{e}"));
                    if p != Progress::Running {
                        return (w, p, folded_at);
                    }
                    t = (t + step_ps).min(stop);
                }
            }
        }
    }
}

fn par_stop(json: &str) -> u64 {
    build(json).run.stop_at.ps()
}

fn fat_tree(cc: &str, extra: &str) -> String {
    format!(
        r#"{{"duration": "20ms", "seed": 7,
        "topology": {{"kind": "fat_tree", "k": 4,
                      "host_link": {{"rate": "100Gbps", "delay": "1us"}},
                      "fabric_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "cc": {{"algorithm": "{cc}"}},
        "records": {{"sample_interval": "10us", "counters": true}},
        {extra}
        "workload": {{"poisson": [{{"cdf": "websearch", "load": 0.5, "duration": "1ms"}}],
                      "flows": [{{"src": "h0", "dst": "h15", "size": "2MB"}},
                                {{"src": "h1", "dst": "h15", "size": "2MB"}},
                                {{"src": "h4", "dst": "h15", "size": "2MB"}},
                                {{"src": "h8", "dst": "h15", "size": "2MB"}}]}}}}"#
    )
}

fn assert_same(json: &str, threads: usize, step_ps: u64) -> (World, u64) {
    let (a, pa) = serial(json, step_ps);
    let (b, pb, folded_at) = parallel(json, threads, step_ps);
    assert_eq!(pa, pb);
    let (oa, ob) = (outputs(&a), outputs(&b));
    if oa != ob {
        let first = oa
            .lines()
            .zip(ob.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        let show = |o: &str| {
            o.lines()
                .skip(first.saturating_sub(2))
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "threads {threads}: outputs differ from line {first}:\nserial:\n{}\nparallel:\n{}",
            show(&oa),
            show(&ob)
        );
    }
    assert_conservation(&b);
    (b, folded_at)
}

#[test]
fn dcqcn_with_pfc_and_an_incast_gives_the_serial_bytes_on_two_threads() {
    let json = fat_tree(
        "dcqcn",
        r#""switch": {"buffer": "1MB", "ecn": {"thresholds": [{"rate": "100Gbps", "kmin": "20KB", "kmax": "100KB", "pmax": 0.2}]}},"#,
    );
    let (w, folded_at) = assert_same(&json, 2, 100_000_000);
    // The run did something worth comparing, most of it in parallel.
    assert!(w.stats.pfc_pauses_sent > 0, "the incast pauses");
    assert!(w.stats.cnps_sent > 0);
    assert!(w.rec.flows.len() > 50, "{} flows", w.rec.flows.len());
    eprintln!(
        "pauses {} cnps {} flows {} folded at {folded_at} ps",
        w.stats.pfc_pauses_sent,
        w.stats.cnps_sent,
        w.rec.flows.len()
    );
    assert!(folded_at > 500_000_000, "folded at {folded_at} ps");
}

#[test]
fn hpcc_gives_the_serial_bytes_on_two_and_four_threads() {
    let json = fat_tree("hpcc", r#""switch": {"int": true},"#);
    assert_same(&json, 2, 250_000_000);
    assert_same(&json, 4, 1_000_000_000);
}

#[test]
fn a_run_to_its_stop_time_stays_parallel_to_the_end() {
    let json = fat_tree("dctcp", r#""run_to_duration": true,"#);
    let (_, folded_at) = assert_same(&json, 2, 2_000_000_000);
    assert_eq!(folded_at, u64::MAX, "never folded");
}

#[test]
fn a_run_without_samples_that_reaches_its_stop_time_ends_there() {
    // No sample falls at the stop time to move the clock there, and the
    // last event is long before it: the run still simulated up to it.
    let json = fat_tree("dctcp", r#""run_to_duration": true,"#).replace(
        r#""sample_interval": "10us", "counters": true"#,
        r#""sample_interval": "off""#,
    );
    let (w, p) = serial(&json, 2_000_000_000);
    assert_eq!(p, Progress::StopTime);
    assert_eq!(w.now(), w.run.stop_at, "serial");
    let (w, folded_at) = assert_same(&json, 2, 2_000_000_000);
    assert_eq!(w.now(), w.run.stop_at, "two threads");
    assert_eq!(folded_at, u64::MAX, "never folded");
}

#[test]
fn a_run_that_ends_on_its_last_flow_ends_at_that_flows_end() {
    let json = fat_tree("dctcp", "").replace(
        r#""sample_interval": "10us", "counters": true"#,
        r#""sample_interval": "off""#,
    );
    let (w, p) = serial(&json, 2_000_000_000);
    assert_eq!(p, Progress::AllFlowsDone);
    let last = w.rec.flows.iter().map(|f| f.finish).max().expect("flows");
    assert_eq!(w.now(), last);
    assert!(w.now() < w.run.stop_at);
    assert_same(&json, 2, 2_000_000_000);
}

#[test]
fn what_a_parallel_run_does_not_model_is_refused_by_name() {
    let json = fat_tree("doca-rtt", "");
    let worlds = (0..2).map(|_| build(&json)).collect();
    let e = ParallelRun::new(worlds).err().expect("refused");
    assert!(e.contains("threads: 2") && e.contains("doca-rtt"), "{e}");
}

#[test]
fn perftest_applications_on_a_dumbbell_give_the_serial_bytes() {
    let json = r#"{"duration": "3ms", "seed": 3,
        "topology": {"kind": "dumbbell", "left_hosts": 4, "right_hosts": 4,
                     "host_link": {"rate": "100Gbps", "delay": "1us"},
                     "bottleneck_link": {"rate": "100Gbps", "delay": "1us"}},
        "switch": {"buffer": "2MB", "pfc": {"enabled": true}},
        "cc": {"algorithm": "dcqcn"},
        "records": {"sample_interval": "20us"},
        "workload": {
          "perftest": [{"name": "a", "src": "h0", "dst": "h4", "message_size": "1MB", "queue_depth": 2},
                       {"name": "b", "src": "h1", "dst": "h5", "message_size": "64KB", "queue_depth": 4, "start": "1ms"},
                       {"name": "c", "src": "h5", "dst": "h2", "message_size": "256KB", "queue_depth": 2}],
          "poisson": {"cdf": "websearch", "load": 0.1, "duration": "2ms"}}}"#;
    let (w, folded_at) = assert_same(json, 2, 500_000_000);
    let apps = outputs_apps(&w);
    assert!(apps.lines().count() > 3, "{apps}");
    assert_eq!(
        folded_at,
        u64::MAX,
        "applications keep a run parallel to its end"
    );
}

fn outputs_apps(w: &World) -> String {
    let mut out = Vec::new();
    w.write_apps_csv(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn lossy_links_with_selective_repeat_give_the_serial_bytes() {
    let json = fat_tree(
        "dcqcn",
        r#""links": [{"tier": ["edge", "agg"], "loss": 0.002}], "nic": {"loss_recovery": "selective-repeat"},"#,
    );
    let (w, _) = assert_same(&json, 2, 200_000_000);
    assert!(
        w.rec.dropped_frames_for("link_loss") > 100,
        "{}",
        w.rec.dropped_frames_for("link_loss")
    );
    assert!(w.stats.retransmitted_packets > 0);
}
