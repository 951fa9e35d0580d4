//! SwiftRDMA's declarative scheduling policies: *when* conditions on signals
//! hold for a number of consecutive periods, *then* take an action on a job's
//! QPs. A host's scheduler loop evaluates them every `period` and its actions
//! take effect `cost` later (SwiftRDMA §2.3, §4).
//!
//! The evaluator here is pure: it sees one [`Signals`] reading per period and
//! says which policies fire; the world reads the signals and applies the
//! actions (`host::scheduler`).

use crate::time::Duration;

/// What a condition reads, per host, over the last period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// Bytes the host's NIC port sent / what the port could send.
    PortUtilization,
    /// QP-context cache misses / lookups at the host's NIC (`nic.resources`).
    QpcMissRate,
    /// Mean wait of a doorbell for its UAR page's lock, ns (`host.uar`).
    DoorbellWaitNs,
    /// QPs with data to send on the host's NIC.
    ActiveQps,
    /// 99th percentile of a job's message latency (post to completion), µs,
    /// over the messages completed in the period (the last reading if none
    /// completed; no value before the first completion).
    P99LatencyUs,
    /// Mean time a job's messages that started sending in the period waited
    /// in their QP's send queue (post to first packet on the wire), µs; no
    /// value if none started (SwiftRDMA §3.3: intra-QP head-of-line blocking).
    QueueingUs,
}

impl Signal {
    pub const NAMES: &'static [&'static str] = &[
        "port_utilization",
        "qpc_miss_rate",
        "doorbell_wait_ns",
        "active_qps",
        "p99_latency_us",
        "queueing_us",
    ];

    pub fn parse(s: &str) -> Option<Signal> {
        Some(match s {
            "port_utilization" => Signal::PortUtilization,
            "qpc_miss_rate" => Signal::QpcMissRate,
            "doorbell_wait_ns" => Signal::DoorbellWaitNs,
            "active_qps" => Signal::ActiveQps,
            "p99_latency_us" => Signal::P99LatencyUs,
            "queueing_us" => Signal::QueueingUs,
            _ => return None,
        })
    }

    /// Whether the signal is per job (the condition must name one).
    pub fn per_job(self) -> bool {
        matches!(self, Signal::P99LatencyUs | Signal::QueueingUs)
    }
}

/// What a job needs from the network (SwiftRDMA §4): its intent decides
/// which class a host policy gives it under contention, LS > LT > TS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// `ls`: latency-sensitive (small messages, tail latency matters).
    LatencySensitive,
    /// `lt`: latency and throughput (balanced).
    Balanced,
    /// `ts`: throughput-sensitive (bulk).
    ThroughputSensitive,
}

impl Intent {
    pub fn parse(s: &str) -> Option<Intent> {
        Some(match s {
            "ls" => Intent::LatencySensitive,
            "lt" => Intent::Balanced,
            "ts" => Intent::ThroughputSensitive,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Intent::LatencySensitive => "ls",
            Intent::Balanced => "lt",
            Intent::ThroughputSensitive => "ts",
        }
    }
}

/// How a condition compares its signal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Test {
    Above(f64),
    Below(f64),
    /// Higher than in the period before.
    Rising,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub signal: Signal,
    /// The job a per-job signal is read for.
    pub job: Option<u32>,
    pub test: Test,
}

/// What a policy does to every QP of a job on the host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PolicyAction {
    /// Move the job's QPs to a traffic class (SwiftRDMA §3.4).
    SetClass { job: u32, class: u8 },
    /// Give the job's QPs this many packets per turn in the NIC's QP
    /// scheduler (SwiftRDMA's task-queue weight).
    SetShare { job: u32, packets: u32 },
    /// Let the job's applications on the host post on only `qps` of their
    /// QPs, application i on the (i mod qps)-th (SwiftRDMA's QP reuse when
    /// the NIC cache thrashes); a `qps` at least their number gives each its
    /// own again (scale-up).
    SetQps { job: u32, qps: u32 },
    /// Move the job's QPs on the host to the UAR pages `placement` gives
    /// them (SwiftRDMA §3.1: migrate QPs off contended doorbell pages).
    SetUar {
        job: u32,
        placement: super::UarPlacement,
    },
}

impl PolicyAction {
    pub fn job(self) -> u32 {
        match self {
            PolicyAction::SetClass { job, .. }
            | PolicyAction::SetShare { job, .. }
            | PolicyAction::SetQps { job, .. }
            | PolicyAction::SetUar { job, .. } => job,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub name: String,
    pub when: Vec<Condition>,
    /// Consecutive periods every condition must hold before the policy fires.
    pub periods: u32,
    pub then: PolicyAction,
}

/// `host.scheduler`.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConfig {
    pub period: Duration,
    /// From the reading of the signals to the action taking effect.
    pub cost: Duration,
    pub policies: Vec<Policy>,
}

/// One period's reading of a host's signals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Signals {
    pub port_utilization: f64,
    pub qpc_miss_rate: f64,
    pub doorbell_wait_ns: f64,
    pub active_qps: f64,
    /// Per job (by index): p99 latency in µs, `None` if nothing completed.
    pub p99_latency_us: Vec<Option<f64>>,
    /// Per job: mean send-queue wait in µs, `None` if no message started.
    pub queueing_us: Vec<Option<f64>>,
}

impl Signals {
    fn get(&self, s: Signal, job: Option<u32>) -> Option<f64> {
        match s {
            Signal::PortUtilization => Some(self.port_utilization),
            Signal::QpcMissRate => Some(self.qpc_miss_rate),
            Signal::DoorbellWaitNs => Some(self.doorbell_wait_ns),
            Signal::ActiveQps => Some(self.active_qps),
            Signal::P99LatencyUs => {
                job.and_then(|j| self.p99_latency_us.get(j as usize).copied().flatten())
            }
            Signal::QueueingUs => {
                job.and_then(|j| self.queueing_us.get(j as usize).copied().flatten())
            }
        }
    }
}

/// What the evaluator remembers between periods.
#[derive(Clone, Debug, Default)]
pub struct Evaluator {
    held: Vec<u32>,
    last: Option<Signals>,
}

impl Evaluator {
    /// Read one period's signals; returns the indices of the policies that
    /// fire now. A condition on a signal with no value this period (a job that
    /// completed nothing), or `rising` with no period before, does not hold.
    /// A policy that fires starts counting its periods afresh.
    pub fn evaluate(&mut self, policies: &[Policy], now: &Signals) -> Vec<usize> {
        self.held.resize(policies.len(), 0);
        let mut fire = Vec::new();
        for (i, p) in policies.iter().enumerate() {
            let holds = p.when.iter().all(|c| {
                let Some(v) = now.get(c.signal, c.job) else {
                    return false;
                };
                match c.test {
                    Test::Above(x) => v > x,
                    Test::Below(x) => v < x,
                    Test::Rising => self
                        .last
                        .as_ref()
                        .and_then(|l| l.get(c.signal, c.job))
                        .is_some_and(|before| v > before),
                }
            });
            self.held[i] = if holds { self.held[i] + 1 } else { 0 };
            if self.held[i] >= p.periods.max(1) {
                self.held[i] = 0;
                fire.push(i);
            }
        }
        self.last = Some(now.clone());
        fire
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(when: Vec<Condition>, periods: u32) -> Policy {
        Policy {
            name: "p".into(),
            when,
            periods,
            then: PolicyAction::SetClass { job: 0, class: 5 },
        }
    }

    fn util(u: f64) -> Signals {
        Signals {
            port_utilization: u,
            p99_latency_us: vec![None],
            ..Default::default()
        }
    }

    #[test]
    fn fires_exactly_when_the_condition_holds_over_its_window() {
        let p = vec![policy(
            vec![Condition {
                signal: Signal::PortUtilization,
                job: None,
                test: Test::Above(0.8),
            }],
            3,
        )];
        let mut e = Evaluator::default();
        let fired: Vec<bool> = [0.9, 0.9, 0.5, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
            .iter()
            .map(|&u| !e.evaluate(&p, &util(u)).is_empty())
            .collect();
        // The dip at the third period restarts the count; it then fires every third period.
        assert_eq!(
            fired,
            [false, false, false, false, false, true, false, false, true]
        );
    }

    #[test]
    fn every_condition_must_hold_and_rising_needs_a_period_before() {
        let p = vec![policy(
            vec![
                Condition {
                    signal: Signal::PortUtilization,
                    job: None,
                    test: Test::Above(0.8),
                },
                Condition {
                    signal: Signal::P99LatencyUs,
                    job: Some(0),
                    test: Test::Rising,
                },
            ],
            1,
        )];
        let mut e = Evaluator::default();
        let s = |u: f64, p99: Option<f64>| Signals {
            port_utilization: u,
            p99_latency_us: vec![p99],
            ..Default::default()
        };
        assert!(
            e.evaluate(&p, &s(0.9, Some(10.0))).is_empty(),
            "no period before"
        );
        assert_eq!(
            e.evaluate(&p, &s(0.9, Some(12.0))),
            vec![0],
            "busy and rising"
        );
        assert!(e.evaluate(&p, &s(0.9, Some(11.0))).is_empty(), "falling");
        assert!(
            e.evaluate(&p, &s(0.5, Some(20.0))).is_empty(),
            "rising but the port is not busy"
        );
        assert!(
            e.evaluate(&p, &s(0.9, None)).is_empty(),
            "no latency this period"
        );
    }
}
