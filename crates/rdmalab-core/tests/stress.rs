//! Randomized scenarios: lossy links, outages, small buffers with and
//! without PFC, every verb, message sizes from 0 B to 1 MB, ACK coalescing,
//! windows. Every flow completes exactly once, applications keep making
//! progress, and bytes are conserved.

mod common;
use common::assert_conservation;
use rdmalab_core::rng::RngStream;
use rdmalab_core::scenario::Scenario;
use rdmalab_core::world::Progress;

fn pick<'a>(r: &mut RngStream, xs: &[&'a str]) -> &'a str {
    xs[r.below(xs.len() as u64) as usize]
}

fn pair(r: &mut RngStream, hosts: u64) -> (u64, u64) {
    let s = r.below(hosts);
    (s, (s + 1 + r.below(hosts - 1)) % hosts)
}

fn random_scenario(seed: u64, with_apps: bool) -> String {
    let mut r = RngStream::new(seed, "stress");
    let hosts = 3 + r.below(6);
    let sizes = [
        "0B", "1B", "1023B", "1024B", "1025B", "5000B", "64KB", "200KB", "1MB",
    ];
    let loss = [0.0, 0.01, 0.03][r.below(3) as usize];
    let pfc = r.below(2) == 0;
    let buffer = if pfc {
        pick(&mut r, &["900KB", "2MB", "32MB"])
    } else {
        pick(&mut r, &["60KB", "300KB", "2MB"])
    };
    let mut links = Vec::new();
    for h in 0..hosts {
        if loss > 0.0 && r.below(2) == 0 {
            links.push(format!(r#"{{"between": ["h{h}", "s0"], "loss": {loss}}}"#));
        } else if r.below(8) == 0 {
            let a = 10 + r.below(300);
            links.push(format!(
                r#"{{"between": ["h{h}", "s0"], "down": [["{a}us", "{}us"]]}}"#,
                a + 10 + r.below(2000)
            ));
        }
    }
    let flows: Vec<String> = (0..1 + r.below(10))
        .map(|_| {
            let (s, d) = pair(&mut r, hosts);
            let verb = pick(&mut r, &["write", "read", "send"]);
            let size = pick(&mut r, &sizes);
            format!(r#"{{"src": "h{s}", "dst": "h{d}", "verb": "{verb}", "size": "{size}", "start": "{}us"}}"#, r.below(200))
        })
        .collect();
    let apps: Vec<String> = if with_apps {
        (0..1 + r.below(3))
            .map(|_| {
                let (s, d) = pair(&mut r, hosts);
                let verb = pick(&mut r, &["write", "read", "send"]);
                let size = pick(&mut r, &sizes[1..]);
                format!(r#"{{"src": "h{s}", "dst": "h{d}", "verb": "{verb}", "message_size": "{size}", "queue_depth": {}}}"#, 1 + r.below(8))
            })
            .collect()
    } else {
        Vec::new()
    };
    let cc = pick(&mut r, &["dcqcn", "none", "timely", "swift"]);
    let window = if r.below(3) == 0 {
        r#", "window": "20KB""#
    } else {
        ""
    };
    format!(
        r#"{{"seed": {seed}, "duration": "{}", "records": {{"sample_interval": "off"}},
        "topology": {{"kind": "single_switch", "hosts": {hosts}, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "links": [{}],
        "nic": {{"rto": "100us", "ack_every": {}, "nack_repeat_interval": "20us"{window}}},
        "switch": {{"buffer": "{buffer}", "pfc": {{"enabled": {pfc}}}}},
        "cc": {{"algorithm": "{cc}"}},
        "workload": {{"flows": [{}], "perftest": [{}]}}}}"#,
        if with_apps { "10ms" } else { "200ms" },
        links.join(","),
        1 + r.below(4),
        flows.join(","),
        apps.join(",")
    )
}

fn check(seed: u64, with_apps: bool) {
    let json = random_scenario(seed, with_apps);
    let s = Scenario::from_json_str(&json).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{json}"));
    let mut w = s
        .build()
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{json}"));
    let p = w
        .run_to_end()
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{json}"));
    if !with_apps {
        assert_eq!(
            p,
            Progress::AllFlowsDone,
            "seed {seed}: every flow completes\n{json}"
        );
    }
    let mut ids: Vec<u32> = w.rec.flows.iter().map(|f| f.flow).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(n, ids.len(), "seed {seed}: a flow completed twice\n{json}");
    assert_eq!(
        n,
        w.workload.flows.len(),
        "seed {seed}: flows completed\n{json}"
    );
    for (i, a) in w.apps.iter().enumerate() {
        let qp = &w.qps[a.qp.expect("started") as usize];
        if let Some(m) = qp.msgs.front() {
            let age = w.now() - m.posted_at;
            assert!(
                age.ps() < 5_000_000_000,
                "seed {seed}: app {i} stuck for {age}\n{json}"
            );
        }
    }
    assert_conservation(&w);
}

#[test]
fn random_flow_scenarios_all_complete_and_conserve_bytes() {
    for seed in 0..80 {
        check(seed, false);
    }
}

#[test]
fn random_application_scenarios_keep_making_progress() {
    for seed in 1000..1040 {
        check(seed, true);
    }
}
