//! The host scheduler loop (`host.scheduler`): every period each host that
//! runs a job reads its signals, the evaluator says which policies fire, and
//! their actions reach the job's QPs one `cost` later.

use super::policy::{Evaluator, PolicyAction, Signals};
use crate::record::quantile::nearest_rank;
use crate::time::Time;
use crate::world::{Event, World};

/// What one host's scheduler remembers between periods.
#[derive(Clone, Debug, Default)]
pub struct HostScheduler {
    pub nic: u32,
    eval: Evaluator,
    tx_bytes: u64,
    qpc: (u64, u64),
    doorbells: (u64, u64),
    /// Per application: latencies already seen, and (waited ps, messages)
    /// of its send-queue waits at the last reading.
    seen: Vec<usize>,
    seen_queue: Vec<(u64, u64)>,
    /// Per job: the last p99 read, kept through periods in which the job
    /// completed nothing (a slow job's latency is still its latency).
    last_p99: Vec<Option<f64>>,
}

/// The largest `port_utilization` a host whose NIC port runs at `rate` can
/// read over a `period` (`host_schedule` below): `None` if there is no bound.
///
/// The reading is the frame bytes of the frames the port *started* in the
/// period (`start_frame` counts a frame's bytes when it starts) over
/// `rate.bytes_in(period)`. Back-to-back frames each hold the port for at
/// least their wire bytes (frame + preamble and gap) at `rate`, so the frames
/// before the last one started fit in the period: at most `bytes_in(period)`
/// bytes. The last one may start just before the period ends and is counted
/// whole, so the reading can exceed 1 by one frame: at most
/// `1 + largest frame / bytes_in(period)`. With `tx_time: ns3-truncated` a
/// frame's time is cut to whole nanoseconds, so frames go faster than `rate`
/// (by the largest frame bytes per picosecond of any size up to the largest);
/// a frame cut to 0 ns leaves no bound. `wire` gives the largest frame,
/// over-counted rather than under: HPCC's INT (set after the NIC is read)
/// is counted whether or not it is on.
pub fn max_port_utilization(
    rate: crate::time::Rate,
    period: crate::time::Duration,
    wire: &crate::packet::WireFormat,
    tx: crate::time::TxTime,
) -> Option<f64> {
    // A full data packet with the longest extension (a WRITE's RETH, or
    // selective repeat's header), or any control frame, if larger.
    let extra = wire
        .write_first_extra
        .max(crate::packet::wire::SR_WRITE_EXT);
    let largest = wire
        .data_frame(wire.mtu_payload, extra)
        .max(wire.oob_frame)
        .max(wire.ack_with_int())
        + crate::packet::wire::HPCC_INT_HEADER;
    let capacity = rate.bytes_in(period).max(1) as f64;
    // Frame bytes per picosecond at the fastest (rate / 8 with exact times).
    let pace = match tx {
        crate::time::TxTime::Exact => rate.bps() as f64 / 8e12,
        crate::time::TxTime::Ns3Truncated => {
            let mut pace: f64 = 0.0;
            for f in 1..=largest {
                let ps = tx.of(rate, wire.on_wire(f) as u64).ps();
                if ps == 0 {
                    return None;
                }
                pace = pace.max(f as f64 / ps as f64);
            }
            pace
        }
    };
    let before_last = (pace * period.ps() as f64).max(rate.bytes_in(period) as f64);
    Some((before_last + largest as f64) / capacity)
}

/// A policy that fired: when, on which host, which policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Firing {
    pub time: Time,
    pub node: u32,
    pub policy: u32,
}

impl World {
    /// Set up the scheduler loop (call before the run starts): one scheduler
    /// per host that sends for a job.
    pub fn start_host_schedulers(&mut self) {
        let Some(cfg) = &self.nic_cfg.scheduler else {
            return;
        };
        let mut nics: Vec<u32> = self
            .workload
            .apps
            .iter()
            .filter(|a| a.job.is_some())
            .map(|a| self.node_index[a.src as usize])
            .collect();
        nics.sort_unstable();
        nics.dedup();
        self.host_scheds = nics
            .into_iter()
            .map(|nic| HostScheduler {
                nic,
                ..Default::default()
            })
            .collect();
        let first = Time::ZERO + cfg.period;
        self.q.schedule(first, Event::HostSchedule);
    }

    /// One period: read every scheduling host's signals and evaluate its policies.
    #[cold]
    #[inline(never)]
    pub(crate) fn host_schedule(&mut self) {
        let Some(cfg) = self.nic_cfg.scheduler.clone() else {
            return;
        };
        let now = self.now();
        let jobs = self.workload.jobs.len();
        for h in 0..self.host_scheds.len() {
            let nic_i = self.host_scheds[h].nic as usize;
            let nic = &self.nics[nic_i];
            let port = &self.ports[nic.port as usize];
            let sched = &mut self.host_scheds[h];
            let mut sig = Signals {
                p99_latency_us: vec![None; jobs],
                queueing_us: vec![None; jobs],
                ..Default::default()
            };
            sig.port_utilization = (port.tx_bytes - sched.tx_bytes) as f64
                / port.rate().bytes_in(cfg.period).max(1) as f64;
            sched.tx_bytes = port.tx_bytes;
            if let Some(r) = &nic.res {
                let (h0, m0) = sched.qpc;
                let (h1, m1) = (r.qpc.hits, r.qpc.misses);
                let n = (h1 - h0) + (m1 - m0);
                sig.qpc_miss_rate = if n == 0 {
                    0.0
                } else {
                    (m1 - m0) as f64 / n as f64
                };
                sched.qpc = (h1, m1);
            }
            if let Some(u) = &nic.uar {
                let (d0, w0) = sched.doorbells;
                let n = u.doorbells - d0;
                sig.doorbell_wait_ns = if n == 0 {
                    0.0
                } else {
                    (u.wait_ps - w0) as f64 / n as f64 / 1e3
                };
                sched.doorbells = (u.doorbells, u.wait_ps);
            }
            sig.active_qps = nic
                .active
                .iter()
                .chain(nic.parked.iter().map(|r| &r.0 .1))
                .filter(|&&q| self.qps[q as usize].has_unsent())
                .count() as f64;
            // Each job's p99 over the messages its apps on this host completed in the period.
            sched.seen.resize(self.apps.len(), 0);
            sched.seen_queue.resize(self.apps.len(), (0, 0));
            let mut per_job: Vec<Vec<u64>> = vec![Vec::new(); jobs];
            let mut queue: Vec<(u64, u64)> = vec![(0, 0); jobs];
            for (a, spec) in self.workload.apps.iter().enumerate() {
                let Some(j) = spec.job else { continue };
                if self.node_index[spec.src as usize] as usize != nic_i {
                    continue;
                }
                let l = &self.apps[a].latencies_ps;
                per_job[j as usize].extend_from_slice(&l[sched.seen[a]..]);
                sched.seen[a] = l.len();
                let (ps, n) = self.apps[a].send_queue;
                let (ps0, n0) = sched.seen_queue[a];
                queue[j as usize].0 += ps - ps0;
                queue[j as usize].1 += n - n0;
                sched.seen_queue[a] = (ps, n);
            }
            sched.last_p99.resize(jobs, None);
            for (j, mut l) in per_job.into_iter().enumerate() {
                if !l.is_empty() {
                    l.sort_unstable();
                    // The p99 apps.csv reports for the same latencies (nearest rank).
                    sched.last_p99[j] = nearest_rank(&l, 0.99).map(|p| p as f64 / 1e6);
                }
                sig.p99_latency_us[j] = sched.last_p99[j];
                if queue[j].1 > 0 {
                    sig.queueing_us[j] = Some(queue[j].0 as f64 / queue[j].1 as f64 / 1e6);
                }
            }
            for p in sched.eval.evaluate(&cfg.policies, &sig) {
                // A policy acts only where its job runs: a host without the
                // job's QPs would record a firing that changed nothing.
                let job = Some(cfg.policies[p].then.job());
                let here = self.workload.apps.iter().any(|a| {
                    a.job == job && self.node_index[a.src as usize] as usize == nic_i
                });
                if !here {
                    continue;
                }
                self.q.schedule(
                    now + cfg.cost,
                    Event::PolicyAct {
                        host: h as u32,
                        policy: p as u32,
                    },
                );
            }
        }
        if now + cfg.period <= self.run.stop_at {
            self.q.schedule(now + cfg.period, Event::HostSchedule);
        }
    }

    /// A fired policy's action reaches its job's QPs on that host.
    #[cold]
    #[inline(never)]
    pub(crate) fn policy_act(&mut self, host: u32, policy: u32) {
        let Some(cfg) = &self.nic_cfg.scheduler else {
            return;
        };
        let action = cfg.policies[policy as usize].then;
        let nic = self.host_scheds[host as usize].nic;
        let job = action.job();
        let members: Vec<usize> = (0..self.workload.apps.len())
            .filter(|&a| {
                self.workload.apps[a].job == Some(job)
                    && self.node_index[self.workload.apps[a].src as usize] == nic
                    && self.apps[a].qp.is_some()
            })
            .collect();
        for (i, &a) in members.iter().enumerate() {
            let qi = self.apps[a].qp.expect("filtered");
            match action {
                PolicyAction::SetClass { class, .. } => self.qps[qi as usize].class = class,
                PolicyAction::SetShare { packets, .. } => {
                    let qp = &mut self.qps[qi as usize];
                    qp.share = packets;
                    qp.turns_used = 0;
                }
                PolicyAction::SetUar { placement, .. } => {
                    // WQEs already waiting for their doorbell ring on the old page.
                    let core = self.workload.apps[a].core;
                    let requester = self.qps[qi as usize].requester as usize;
                    if let (Some(cfg), Some(u)) =
                        (self.nic_cfg.uar, self.nics[requester].uar.as_mut())
                    {
                        self.apps[a].uar_page = u.place(&cfg, placement, core);
                    }
                }
                PolicyAction::SetQps { qps, .. } => {
                    // Messages already posted finish on their QP; new ones go to the shared one.
                    let k = qps.max(1) as usize;
                    self.apps[a].post_qp = if i < k {
                        None
                    } else {
                        self.apps[members[i % k]].qp
                    };
                }
            }
        }
        let node = self.nics[nic as usize].node;
        self.policy_firings.push(Firing {
            time: self.now(),
            node,
            policy,
        });
    }
}
