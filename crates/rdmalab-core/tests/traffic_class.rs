//! Per-QP traffic classes (SwiftRDMA §3.4): a latency-sensitive QP in a
//! class of its own does not queue behind a throughput-sensitive QP's
//! packets at a shared switch port; the class can be set per application or
//! changed at run time by a controller.

mod common;
use common::assert_conservation;
use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{CcContext, CcEvent, Controller, EventMask, HintKind};
use rdmalab_core::scenario::Scenario;

/// Two bulk WRITE senders (h0, h3) and one 64 B latency sender (h1) into h2:
/// the switch port to h2 is overloaded (no CC, PFC keeps it lossless).
fn scenario(ls_extra: &str) -> String {
    format!(
        r#"{{"name": "qos", "seed": 1, "duration": "1ms",
        "topology": {{"kind": "single_switch", "hosts": 4, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "cc": {{"algorithm": "none"}},
        "workload": {{"perftest": [
            {{"name": "ts0", "src": "h0", "dst": "h2", "verb": "write", "message_size": "64KiB", "queue_depth": 8}},
            {{"name": "ts1", "src": "h3", "dst": "h2", "verb": "write", "message_size": "64KiB", "queue_depth": 8}},
            {{"name": "ls", "src": "h1", "dst": "h2", "verb": "write", "message_size": "64B", "queue_depth": 1{ls_extra}}}]}}}}"#
    )
}

fn ls_latency_us(w: &rdmalab_core::world::World) -> f64 {
    let a = &w.apps[2];
    a.latencies_ps.iter().sum::<u64>() as f64 / a.latencies_ps.len().max(1) as f64 / 1e6
}

#[test]
fn a_class_of_its_own_keeps_latency_under_load() {
    let run = |extra: &str| {
        let mut w = Scenario::from_json_str(&scenario(extra))
            .unwrap()
            .build()
            .unwrap();
        w.run_to_end().unwrap();
        assert_conservation(&w);
        w
    };
    let shared = run("");
    let own = run(r#", "class": 5"#);
    let (a, b) = (ls_latency_us(&shared), ls_latency_us(&own));
    println!("64 B latency beside 2 bulk senders: {a:.1} us in their class, {b:.1} us in its own");
    assert!(
        b * 5.0 < a,
        "its own class avoids the bulk queue: {b:.1} vs {a:.1} us"
    );
    assert!(b < 10.0, "{b:.1} us");
    let bulk =
        |w: &rdmalab_core::world::World| w.apps[0].completed_bytes + w.apps[1].completed_bytes;
    assert!(
        bulk(&own) as f64 > 0.95 * bulk(&shared) as f64,
        "the bulk senders keep their throughput"
    );
}

/// Moves its QP to the class the application's `priority` hint asks for.
struct ClassFromHint;
impl Controller for ClassFromHint {
    fn name(&self) -> &str {
        "class-from-hint"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::PEER) // hints come with the peer (host) events
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        if let CcEvent::Hint {
            kind: HintKind::Priority,
            value,
        } = *ev
        {
            ctx.set_class(value as u8);
        }
    }
}

#[test]
fn a_controller_changes_the_class_at_run_time() {
    let with = |hint: &str| {
        let mut s = Scenario::from_json_str(&scenario(hint)).unwrap();
        s.cc = CcConfig::custom("class-from-hint", || Box::new(ClassFromHint));
        let mut w = s.build().unwrap();
        w.run_to_end().unwrap();
        assert_conservation(&w);
        w
    };
    let moved = with(r#", "hints": {"priority": 6}"#);
    let stayed = with("");
    let ls_qp = moved.apps[2].qp.unwrap() as usize;
    assert_eq!(moved.qps[ls_qp].class, 6);
    assert_eq!(stayed.qps[ls_qp].class, 3);
    assert!(ls_latency_us(&moved) * 5.0 < ls_latency_us(&stayed));
    // A class outside 1..=7 is refused as a controller error.
    let mut s = Scenario::from_json_str(&scenario(r#", "hints": {"priority": 0}"#)).unwrap();
    s.cc = CcConfig::custom("class-from-hint", || Box::new(ClassFromHint));
    let mut w = s.build().unwrap();
    let e = w.run_to_end().unwrap_err().to_string();
    assert!(e.contains("traffic class 0"), "{e}");
}

#[test]
fn a_bad_class_is_refused() {
    let e = Scenario::from_json_str(&scenario(r#", "class": 0"#))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("class") && e.contains("1 to 7"), "{e}");
}

/// A host policy (SwiftRDMA §4): when the latency job's p99 stays above
/// 20 µs for two periods, its host scheduler moves it to class 5. The
/// policy fires once the bulk load has built the queue, and the job's
/// latency after that is a class of its own's.
#[test]
fn a_host_policy_raises_the_class_of_a_latency_job() {
    let json = scenario(r#", "job": "ls""#).replace(
        r#""cc": {"algorithm": "none"},"#,
        r#""cc": {"algorithm": "none"},
        "host": {"scheduler": {"period": "20us", "cost": "2us", "policies": [
            {"name": "raise-ls", "when": [{"signal": "p99_latency_us", "job": "ls", "above": 20}], "for": 2,
             "then": {"set_class": 5, "job": "ls"}}]}},"#,
    );
    let mut w = Scenario::from_json_str(&json)
        .unwrap_or_else(|e| panic!("{e}"))
        .build()
        .unwrap();
    w.run_to_end().unwrap();
    assert_conservation(&w);
    assert!(!w.policy_firings.is_empty(), "the policy fired");
    let first = w.policy_firings[0].time;
    assert_eq!(
        w.policy_firings[0].node, 1,
        "on the latency job's host (h1)"
    );
    let ls_qp = w.apps[2].qp.unwrap() as usize;
    assert_eq!(w.qps[ls_qp].class, 5);
    // Period, two periods held, plus the cost: it cannot fire before 42 µs.
    assert!(first.ps() >= 42_000_000, "fired at {first}");
    let lat = &w.apps[2].latencies_ps;
    let tail: Vec<u64> = lat[lat.len() / 2..].to_vec();
    let mean_after = tail.iter().sum::<u64>() as f64 / tail.len() as f64 / 1e6;
    println!(
        "policy fired {} times, first at {first}; LS latency in the second half {mean_after:.1} us",
        w.policy_firings.len()
    );
    assert!(mean_after < 10.0, "{mean_after:.1} us");
}

#[test]
fn bad_policies_are_refused() {
    let with = |sched: &str| {
        scenario(r#", "job": "ls""#).replace(
            r#""cc": {"algorithm": "none"},"#,
            &format!(r#""cc": {{"algorithm": "none"}}, "host": {{"scheduler": {sched}}},"#),
        )
    };
    for (sched, key, what) in [
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "port_util", "above": 0.8}], "then": {"set_class": 5, "job": "ls"}}]}"#,
            "host.scheduler.policies[0].when[0].signal",
            "port_utilization",
        ),
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "p99_latency_us", "above": 5}], "then": {"set_class": 5, "job": "ls"}}]}"#,
            "when[0].job",
            "is required",
        ),
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "port_utilization", "above": 0.8}], "then": {"set_class": 5, "job": "batch"}}]}"#,
            "then.job",
            "jobs: ls",
        ),
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "port_utilization", "above": 0.8, "below": 0.9}], "then": {"set_class": 5, "job": "ls"}}]}"#,
            "when[0]",
            "exactly one",
        ),
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "port_utilization", "above": 0.8}], "then": {"set_class": 9, "job": "ls"}}]}"#,
            "then.set_class",
            "1 to 7",
        ),
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "port_utilization", "above": 0.8}], "then": {"job": "ls"}}]}"#,
            "then",
            "exactly one action",
        ),
        // A threshold with a unit: named plainly, not with f64's 309-digit limits.
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "p99_latency_us", "job": "ls", "above": "20us"}], "then": {"set_class": 5, "job": "ls"}}]}"#,
            "when[0].above: `20us` — must be a number, like 20 or 0.5\n",
            "",
        ),
        (
            r#"{"policies": [{"name": "x", "when": [{"signal": "port_utilization", "above": 0.8}]}]}"#,
            "policies[0].then: is required",
            "{set_qps: K, job: J} or {set_uar: PLACEMENT, job: J}",
        ),
    ] {
        let e = Scenario::from_json_str(&with(sched))
            .err()
            .unwrap_or_else(|| panic!("accepted {sched}"))
            .to_string();
        assert!(e.contains(key) && e.contains(what), "{key} / {what}: {e}");
    }
}

/// A bulk WRITE QP (class 3, 64 KiB messages) and a 64 B latency QP
/// (class 6) share one sending NIC (h0) towards different receivers, so the
/// only place they meet is the NIC's own port. The NIC is a commodity one
/// (whole WQEs per turn). Returns the latency QP's mean latency (µs) and
/// the bulk QP's completed bytes.
fn shared_sender(arbitration: &str, bulk: bool) -> (f64, u64) {
    let ts = if bulk {
        r#"{"name": "ts", "src": "h0", "dst": "h1", "message_size": "64KiB", "queue_depth": 8, "class": 3},"#
    } else {
        ""
    };
    let json = format!(
        r#"{{"name": "nic-port", "seed": 1, "duration": "1ms",
        "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "nic": {{"qp_scheduler": "wqe", "tx_arbitration": "{arbitration}"}},
        "cc": {{"algorithm": "none"}},
        "workload": {{"perftest": [{ts}
            {{"name": "ls", "src": "h0", "dst": "h2", "message_size": "64B", "queue_depth": 1, "class": 6}}]}}}}"#
    );
    let mut w = Scenario::from_json_str(&json).unwrap().build().unwrap();
    w.run_to_end().unwrap();
    assert_conservation(&w);
    let a = w.apps.last().unwrap();
    let lat = a.latencies_ps.iter().sum::<u64>() as f64 / a.latencies_ps.len().max(1) as f64 / 1e6;
    (lat, if bulk { w.apps[0].completed_bytes } else { 0 })
}

#[test]
fn strict_priority_at_the_nic_port_keeps_a_high_class_out_of_the_bulk_turns() {
    let (alone, _) = shared_sender("round-robin", false);
    let (rr, rr_bulk) = shared_sender("round-robin", true);
    let (sp, sp_bulk) = shared_sender("strict-priority", true);
    // Round robin over QPs ignores the class: the 64 B message waits for
    // the bulk QP's 32 KiB turn. Strict priority serves it after at most
    // the packet on the wire.
    let (rr_wait, sp_wait) = (rr - alone, sp - alone);
    assert!(rr_wait > 1.0, "round robin adds {rr_wait:.2} us");
    assert!(
        sp_wait * 5.0 < rr_wait,
        "added latency: {sp_wait:.2} us strict vs {rr_wait:.2} us round robin"
    );
    assert!(
        sp_bulk as f64 > 0.95 * rr_bulk as f64,
        "the bulk QP keeps its throughput"
    );
}

/// SwiftRDMA §4's jobs: two TS bulk senders and an LS and an LT job into
/// one receiver, with the host scheduler given `host` (explicit policies or
/// intents). Returns each application's (completed, p99-free latency sum).
fn intents_run(host: &str, intents: bool) -> Vec<(u64, u64)> {
    let (ls, lt, ts) = if intents {
        (
            r#", "intent": "ls""#,
            r#", "intent": "lt""#,
            r#", "intent": "ts""#,
        )
    } else {
        ("", "", "")
    };
    let json = format!(
        r#"{{"name": "intents", "seed": 1, "duration": "1ms",
        "topology": {{"kind": "single_switch", "hosts": 5, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "host": {host},
        "cc": {{"algorithm": "none"}},
        "workload": {{"perftest": [
            {{"name": "ts-a", "job": "ts", "src": "h0", "dst": "h2", "message_size": "64KiB", "queue_depth": 8{ts}}},
            {{"name": "ts-b", "job": "ts", "src": "h3", "dst": "h2", "message_size": "64KiB", "queue_depth": 8}},
            {{"name": "ls", "job": "ls", "src": "h1", "dst": "h2", "message_size": "64B", "queue_depth": 1{ls}}},
            {{"name": "lt", "job": "lt", "src": "h4", "dst": "h2", "message_size": "4KiB", "queue_depth": 4{lt}}}]}}}}"#
    );
    let mut w = Scenario::from_json_str(&json)
        .unwrap_or_else(|e| panic!("{e}"))
        .build()
        .unwrap();
    w.run_to_end().unwrap();
    assert_conservation(&w);
    assert_eq!(w.policy_firings.len(), 2, "LS and LT each raised once");
    w.apps
        .iter()
        .map(|a| (a.completed, a.latencies_ps.iter().sum()))
        .collect()
}

#[test]
fn intents_give_the_papers_policies() {
    let explicit = intents_run(
        r#"{"scheduler": {"period": "20us", "cost": "2us", "policies": [
            {"name": "raise-ls", "when": [{"signal": "p99_latency_us", "job": "ls", "above": 20}], "for": 2, "then": {"set_class": 6, "job": "ls"}},
            {"name": "raise-lt", "when": [{"signal": "p99_latency_us", "job": "lt", "above": 50}], "for": 2, "then": {"set_class": 5, "job": "lt"}}]}}"#,
        false,
    );
    let from_intents = intents_run(
        r#"{"scheduler": {"period": "20us", "cost": "2us", "intents": true}}"#,
        true,
    );
    assert_eq!(
        explicit, from_intents,
        "intents: true is LS > LT > TS with the default thresholds"
    );
}

#[test]
fn bad_intents_are_refused() {
    let base = |host: &str, extra: &str| {
        format!(
            r#"{{"name": "bad", "duration": "10us", "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
            "host": {host},
            "workload": {{"perftest": [{{"src": "h0", "dst": "h1", "message_size": "1KB"{extra}}}, {{"src": "h2", "dst": "h1", "message_size": "1KB", "job": "a", "intent": "ts"}}]}}}}"#
        )
    };
    let err = |json: String| {
        Scenario::from_json_str(&json)
            .err()
            .expect("refused")
            .to_string()
    };
    let e = err(base("{}", r#", "intent": "fast""#));
    assert!(
        e.contains("workload.perftest[0].intent") && e.contains("allowed: ls"),
        "{e}"
    );
    let e = err(base("{}", r#", "intent": "ls""#));
    assert!(e.contains("needs a `job`"), "{e}");
    let e = err(base("{}", r#", "job": "a", "intent": "ls""#));
    assert!(
        e.contains("workload.perftest[1].intent") && e.contains("already has intent `ls`"),
        "{e}"
    );
    let e = err(base(
        r#"{"scheduler": {"intents": true}}"#,
        r#", "job": "b", "intent": "ts""#,
    ));
    assert!(
        e.contains("host.scheduler.intents") && e.contains("no job has an ls or lt intent"),
        "{e}"
    );
    let e = err(base(
        r#"{"scheduler": {"intents": {"ls_class": 4}}}"#,
        r#", "job": "b", "intent": "ls""#,
    ));
    assert!(
        e.contains("host.scheduler.intents.ls_class") && e.contains("must be above lt_class"),
        "{e}"
    );
}

/// SwiftRDMA §3.3's task-queue weight: a job whose messages wait long in
/// their send queue gets more packets per turn at its NIC. h0 runs a bulk
/// job (64 KiB WRITEs) and a deep queue of 4 KiB WRITEs (job `q`) to two
/// receivers; packet round robin gives each half the port. Returns job q's
/// mean send-queue wait (µs) over the second half, its bytes, and the firings.
fn queueing_run(policy: &str) -> (f64, u64, usize) {
    let json = format!(
        r#"{{"name": "hol", "seed": 1, "duration": "1ms",
        "topology": {{"kind": "single_switch", "hosts": 3, "host_link": {{"rate": "100Gbps", "delay": "1us"}}}},
        "host": {{{policy}}},
        "cc": {{"algorithm": "none"}},
        "workload": {{"perftest": [
            {{"name": "bulk", "job": "bulk", "src": "h0", "dst": "h1", "message_size": "64KiB", "queue_depth": 8}},
            {{"name": "q", "job": "q", "src": "h0", "dst": "h2", "message_size": "4KiB", "queue_depth": 32}}]}}}}"#
    );
    let mut w = Scenario::from_json_str(&json)
        .unwrap_or_else(|e| panic!("{e}"))
        .build()
        .unwrap();
    w.run_until(rdmalab_core::time::Time(500_000_000)).unwrap();
    let (ps0, n0) = w.apps[1].send_queue;
    w.run_to_end().unwrap();
    assert_conservation(&w);
    let (ps1, n1) = w.apps[1].send_queue;
    (
        (ps1 - ps0) as f64 / (n1 - n0) as f64 / 1e6,
        w.apps[1].completed_bytes,
        w.policy_firings.len(),
    )
}

#[test]
fn a_queueing_policy_raises_a_jobs_weight() {
    let (wait, bytes, fired) = queueing_run("");
    assert_eq!(fired, 0);
    let (wait_w, bytes_w, fired_w) = queueing_run(
        r#""scheduler": {"period": "20us", "policies": [{"name": "weight",
            "when": [{"signal": "queueing_us", "job": "q", "above": 5}], "for": 2,
            "then": {"set_share": 4, "job": "q"}}]}"#,
    );
    println!("job q: {wait:.1} us wait, {bytes} B; with the weight {wait_w:.1} us, {bytes_w} B ({fired_w} firings)");
    assert!(fired_w >= 1);
    // Half the port drains 32 x 4 KiB in ~21 us of queueing; 4 of 5 packets in ~13 us.
    assert!(
        wait_w < 0.75 * wait,
        "send-queue wait {wait_w:.1} us with the weight vs {wait:.1} us"
    );
    assert!(
        bytes_w as f64 > 1.4 * bytes as f64,
        "job q's bytes {bytes_w} vs {bytes}"
    );
}

/// The bulk senders (h0, h3) form job `ts`, the latency sender (h1) job
/// `ls`, each on its own hosts, with `policies` as h1's and h0's schedulers
/// would run them.
fn two_job_scenario(policies: &str) -> String {
    scenario(r#", "job": "ls""#)
        .replace(
            r#""name": "ts0","#,
            r#""name": "ts0", "job": "ts","#,
        )
        .replace(
            r#""name": "ts1","#,
            r#""name": "ts1", "job": "ts","#,
        )
        .replace(
            r#""cc": {"algorithm": "none"},"#,
            &format!(
                r#""cc": {{"algorithm": "none"}}, "host": {{"scheduler": {{"period": "20us", "policies": {policies}}}}},"#
            ),
        )
}

/// A policy acts on its job's QPs on the host whose scheduler fired it, so a
/// host without them neither acts nor records a firing: every host here sees
/// its port busy, but only the bulk job's hosts move it.
#[test]
fn a_policy_fires_only_on_the_hosts_of_its_job() {
    let json = two_job_scenario(
        r#"[{"name": "demote", "when": [{"signal": "port_utilization", "above": 0.0001}], "then": {"set_class": 2, "job": "ts"}}]"#,
    );
    let mut w = Scenario::from_json_str(&json)
        .unwrap_or_else(|e| panic!("{e}"))
        .build()
        .unwrap();
    w.run_to_end().unwrap();
    let nodes: std::collections::BTreeSet<u32> =
        w.policy_firings.iter().map(|f| f.node).collect();
    assert_eq!(
        nodes,
        [0, 3].into_iter().collect(),
        "h0 and h3 run `ts`; h1, busy too, runs only `ls`"
    );
    for a in 0..2 {
        assert_eq!(w.qps[w.apps[a].qp.unwrap() as usize].class, 2);
    }
}

/// A condition on a job that shares no host with the action's job could only
/// hold on hosts where the action has no QPs: refused, naming both.
#[test]
fn a_policy_reading_a_job_on_other_hosts_is_refused() {
    let json = two_job_scenario(
        r#"[{"name": "yield", "when": [{"signal": "p99_latency_us", "job": "ls", "above": 20}], "then": {"set_class": 2, "job": "ts"}}]"#,
    );
    let e = Scenario::from_json_str(&json)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("host.scheduler.policies[0].when[0].job")
            && e.contains("`ls` — runs on h1")
            && e.contains("`ts` on h0, h3"),
        "{e}"
    );
}

/// A policy on a signal the host does not produce, or with an action its NIC
/// ignores, is refused: it used to run, never firing (or, with `below`,
/// always), or firing into policy_actions with nothing done.
#[test]
fn policies_that_need_a_model_the_scenario_lacks_are_refused() {
    let with = |sched: &str, nic: &str| {
        scenario(r#", "job": "ls""#).replace(
            r#""cc": {"algorithm": "none"},"#,
            &format!(
                r#""cc": {{"algorithm": "none"}}, "nic": {nic}, "host": {{"scheduler": {{"policies": [{sched}]}}}},"#
            ),
        )
    };
    let when = |signal: &str| {
        format!(
            r#"{{"name": "x", "when": [{{"signal": "{signal}", "below": 0.5}}], "then": {{"set_class": 5, "job": "ls"}}}}"#
        )
    };
    let then = |action: &str| {
        format!(
            r#"{{"name": "x", "when": [{{"signal": "active_qps", "above": 0}}], "then": {{{action}, "job": "ls"}}}}"#
        )
    };
    for (sched, nic, key, what) in [
        (
            when("qpc_miss_rate"),
            "{}",
            "policies[0].when[0].signal: `qpc_miss_rate`",
            "needs nic.resources",
        ),
        (
            when("doorbell_wait_ns"),
            "{}",
            "policies[0].when[0].signal: `doorbell_wait_ns`",
            "needs host.uar",
        ),
        (
            then(r#""set_uar": "per-core""#),
            "{}",
            "policies[0].then.set_uar: `per-core`",
            "needs host.uar",
        ),
        (
            then(r#""set_share": 4"#),
            r#"{"qp_scheduler": "wqe"}"#,
            "policies[0].then.set_share: `4`",
            "needs nic.qp_scheduler `packet` or `srnic`",
        ),
    ] {
        let e = Scenario::from_json_str(&with(&sched, nic))
            .err()
            .unwrap_or_else(|| panic!("accepted {sched}"))
            .to_string();
        assert!(e.contains(key) && e.contains(what), "{key} / {what}: {e}");
    }
    // With the model, or the packet scheduler, the same policies are taken.
    for (sched, nic) in [
        (then(r#""set_share": 4"#), "{}"),
        (when("active_qps"), r#"{"qp_scheduler": "wqe"}"#),
    ] {
        Scenario::from_json_str(&with(&sched, nic)).unwrap_or_else(|e| panic!("{sched}: {e}"));
    }
}

/// policy_actions names the policy that fired, and nothing else: two
/// policies of one name (or one named like an intent policy), or an empty
/// name, made its rows ambiguous.
#[test]
fn policy_names_are_unique_and_not_empty() {
    let with = |sched: &str| {
        scenario(r#", "job": "ls", "intent": "ls""#).replace(
            r#""cc": {"algorithm": "none"},"#,
            &format!(r#""cc": {{"algorithm": "none"}}, "host": {{"scheduler": {sched}}},"#),
        )
    };
    let policy = |name: &str| {
        format!(
            r#"{{"name": "{name}", "when": [{{"signal": "active_qps", "above": 0}}], "then": {{"set_class": 5, "job": "ls"}}}}"#
        )
    };
    for (sched, want) in [
        (
            format!(r#"{{"policies": [{}, {}]}}"#, policy("x"), policy("x")),
            "host.scheduler.policies[1].name: `x` — already names host.scheduler.policies[0]",
        ),
        (
            format!(r#"{{"policies": [{}]}}"#, policy("")),
            "host.scheduler.policies[0].name: `` — must be a non-empty name",
        ),
        (
            format!(
                r#"{{"intents": true, "policies": [{}]}}"#,
                policy("intent-ls-ls")
            ),
            "host.scheduler.policies[0].name: `intent-ls-ls` — is the name of an intent policy",
        ),
    ] {
        let e = Scenario::from_json_str(&with(&sched))
            .err()
            .unwrap_or_else(|| panic!("accepted {sched}"))
            .to_string();
        assert!(e.contains(want), "{want}: {e}");
    }
    let two = format!(
        r#"{{"intents": true, "policies": [{}, {}]}}"#,
        policy("x"),
        policy("y")
    );
    Scenario::from_json_str(&with(&two)).unwrap_or_else(|e| panic!("{e}"));
}

/// port_utilization counts a frame whole when it starts, so a busy port reads
/// a little above 1 (one frame more than a period holds) and never more: a
/// threshold past that, or `below` 0, would never hold and is refused, naming
/// the key, the value and the most the signal can read; `above: 1` can hold.
#[test]
fn port_utilization_thresholds_it_cannot_reach_are_refused() {
    let with = |period: &str, cond: &str| {
        scenario("").replace(
            r#""name": "ts0","#,
            r#""name": "ts0", "job": "ts","#,
        ).replace(
            r#""cc": {"algorithm": "none"},"#,
            &format!(
                r#""cc": {{"algorithm": "none"}}, "host": {{"scheduler": {{"period": "{period}", "policies": [{{"name": "x", "when": [{cond}], "then": {{"set_class": 2, "job": "ts"}}}}]}}}},"#
            ),
        )
    };
    // 100 Gb/s for 20 us is 250,000 B; the largest frame 1,148 B (1,024 B of
    // payload, headers, selective repeat's extension and INT, counted at most).
    for (cond, key, value, what) in [
        (
            r#"{"signal": "port_utilization", "above": 5}"#,
            "host.scheduler.policies[0].when[0].above",
            "`5`",
            "can never hold: port_utilization (bytes sent / what the port can send in a period of 20us) is at most 1.0046 here",
        ),
        (
            r#"{"signal": "port_utilization", "above": 1.0046}"#,
            "when[0].above",
            "`1.0046`",
            "allowed: below that",
        ),
        (
            r#"{"signal": "port_utilization", "below": 0}"#,
            "host.scheduler.policies[0].when[0].below",
            "`0`",
            "allowed: a number greater than 0",
        ),
    ] {
        let e = Scenario::from_json_str(&with("20us", cond))
            .err()
            .unwrap_or_else(|| panic!("accepted {cond}"))
            .to_string();
        assert!(
            e.contains(key) && e.contains(value) && e.contains(what),
            "{key} {value} {what}: {e}"
        );
    }
    // A busy port over 1 us (12,500 B at 100 Gb/s, 11.6 frames of 1,082 B)
    // reads above 1 whenever a twelfth frame starts before the period ends.
    let json = with("1us", r#"{"signal": "port_utilization", "above": 1.0}"#);
    let mut w = Scenario::from_json_str(&json)
        .unwrap_or_else(|e| panic!("{e}"))
        .build()
        .unwrap();
    w.run_to_end().unwrap();
    assert!(
        !w.policy_firings.is_empty(),
        "a busy port read above 1 in some period"
    );
}
