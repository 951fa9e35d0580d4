//! Parallel runs (`--threads N`): the fabric split into partitions, one
//! thread each, advancing in windows one lookahead long, whose outputs are
//! the serial run's, byte for byte.
//!
//! Conservative and windowed: a frame from one partition reaches another only
//! over a link, at least one link delay later, so every partition can process
//! a window as long as the shortest such delay without hearing from the
//! others. At the end of each window every thread works out where its
//! partition's events fall in the serial order ([`merge`]), renumbers what
//! they scheduled as the serial run would have, and hands frames to the
//! partitions that receive them; then one thread joins what must be joined
//! (the table rows, the samples, the peak of live packets).
//! docs/parallel.md has the measurements.
//!
//! What limits it: two barriers per window (a 1 µs link delay
//! makes windows of 1 µs of simulated time, so small fabrics gain little);
//! the partitions' share of the traffic (hosts by rack block, switches above
//! them by where their neighbours are); and the end of a run: once every
//! flow's last byte has left its NIC, a flow may end within a window, and the
//! serial run stops at that exact event, so the run is folded into one world
//! and finishes on one thread. Runs to a fixed stop time (`run_to_stop`, the
//! ns-3 HPCC inputs) stay parallel to the end.

mod barrier;
mod merge;
mod part;
pub mod partition;

pub(crate) use part::PartCtx;

use crate::algo::CcConfig;
use crate::nic::cc_scope::CcScope;
use crate::nic::qp::{Qp, Verb};
use crate::time::{Duration, Time};
use crate::world::{Event, Progress, RunError, World};
use barrier::{PartnerPanicked, PoisonOnPanic, SpinBarrier};
use merge::{Merged, Published, Settled};
use part::{Batch, Part, WindowLog};
use partition::Partitioning;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Provisional sequence numbers start here: above any serial number a run
/// reaches, below 2^54 so the event queue's packed sort keys still fit.
pub(crate) const PROVISIONAL: u64 = 1 << 50;

/// A run split over threads. Built from one world per partition, each built
/// from the same scenario.
pub struct ParallelRun {
    parts: Vec<Mutex<Part>>,
    coord: Coordinator,
    /// Per window parity and thread: what its partition published of that
    /// window, read by all. Two sets, because a thread may publish the next
    /// window while the first thread still combines this one. Kept between
    /// calls of [`ParallelRun::run_until`] so the logs keep their memory.
    published: [Vec<RwLock<Published>>; 2],
}

/// The coordinator's state between windows.
struct Coordinator {
    merged: Merged,
    lookahead: Duration,
    /// Where the next window may start (nothing earlier is pending).
    window_start: Time,
    stop_at: Time,
    run_to_stop: bool,
    max_events: u64,
    keep_counters: bool,
    flows: u64,
    flow_bytes: u64,
    /// Windows run so far.
    windows: u64,
    timing: Timing,
    has_apps: bool,
    /// The run reached its stop time: its clock is there, whenever its
    /// last event was (as [`World::run_until`] leaves it).
    reached_stop: bool,
}

/// CPU time of the calling thread, in ns: a shared machine's other
/// processes do not count, so the figures below say what an idle one gives.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Where a parallel run's CPU time goes (`RDMALAB_PARALLEL_STATS` prints it).
#[derive(Default, Debug)]
struct Timing {
    /// Per window, the slowest thread's events, summed; and all threads'.
    work_max_ns: u64,
    work_sum_ns: u64,
    /// Per thread, its events over the whole run: the static balance.
    work_ns: Vec<u64>,
    /// Per window, the slowest thread's settling and renumbering, summed;
    /// and the combine (one thread).
    settle_max_ns: u64,
    combine_ns: u64,
    /// Per thread, taking in the frames others posted to its partition
    /// (between windows, outside the phases above), and how many.
    take_in_ns: Vec<u64>,
    frames_in: u64,
}

/// What every thread decides after settling a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Go,
    Fold,
    /// A partition failed, or the event cap is reached.
    Stop,
}

/// What the first thread decided at a barrier.
#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    Go,
    Fold,
    Failed(RunError),
}

/// A lock's guard; if the lock is poisoned, the thread that held it
/// panicked, and that panic is the one to report.
fn held<G>(r: std::sync::LockResult<G>) -> G {
    r.unwrap_or_else(|_| std::panic::panic_any(PartnerPanicked))
}

/// What the threads of a parallel run share.
struct Shared {
    barrier: SpinBarrier,
    /// Per thread: the time (ps) of its earliest pending event, or of the
    /// earliest it posted to another.
    next_event: Vec<AtomicU64>,
    /// Per thread: what others posted to it.
    inbox: Vec<Mutex<Vec<Batch>>>,
    /// Per thread: CPU time spent taking in what others posted (ns), and
    /// the frames taken.
    take_in_ns: Vec<AtomicU64>,
    frames_in: AtomicU64,
    /// Events merged before the current window.
    events_before: AtomicU64,
    /// Per thread: what it worked out about its own events of the window.
    settled: Vec<Mutex<Option<Settled>>>,
    /// The serial number the window's first scheduled event takes, and the
    /// packets live at its start (the merged state at the window's start).
    seq0: AtomicU64,
    live0: AtomicI64,
    /// What thread 0 found before the first window: the run may have to
    /// fold at once.
    verdict: Mutex<Verdict>,
}

/// How a parallel run stands after [`ParallelRun::run_until`].
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// As [`World::run_until`] would say.
    Progress(Progress),
    /// A flow may end in the next window: fold ([`ParallelRun::fold`]) and
    /// go on in one world.
    FoldToSerial,
}

impl ParallelRun {
    /// Check that `worlds` (one per thread, built alike) can run in
    /// parallel and split them; the error names the key that stands in the way.
    pub fn new(mut worlds: Vec<World>) -> Result<ParallelRun, String> {
        let n = worlds.len();
        check(&worlds[0], n)?;
        let split = Partitioning::new(&worlds[0].topo, n)?;
        let np = Arc::new(split.node_part);
        let w0 = &worlds[0];
        let coord = Coordinator {
            merged: Merged {
                next_seq: w0.q.next_seq(),
                sample_ps: w0.run.sample_interval.map_or(0, |d| d.ps()),
                ..Default::default()
            },
            lookahead: split.lookahead,
            window_start: Time::ZERO,
            stop_at: w0.run.stop_at,
            run_to_stop: w0.run.run_to_stop,
            max_events: w0.run.max_events,
            keep_counters: w0.rec.keep_counters,
            flows: w0.workload.flows.len() as u64,
            flow_bytes: w0.workload.flows.iter().map(|f| f.bytes).sum(),
            windows: 0,
            timing: Timing {
                work_ns: vec![0; n],
                take_in_ns: vec![0; n],
                ..Default::default()
            },
            has_apps: !w0.workload.apps.is_empty(),
            reached_stop: false,
        };
        let parts = worlds
            .drain(..)
            .enumerate()
            .map(|(i, w)| Mutex::new(Part::new(w, i as u16, n, np.clone())))
            .collect();
        let published = [0, 1].map(|_| (0..n).map(|_| RwLock::default()).collect());
        Ok(ParallelRun {
            parts,
            coord,
            published,
        })
    }

    /// Threads (partitions) of this run.
    pub fn threads(&self) -> usize {
        self.parts.len()
    }

    /// The window length: the shortest delay of a link between partitions.
    pub fn lookahead(&self) -> Duration {
        self.coord.lookahead
    }

    /// Windows run so far.
    pub fn windows(&self) -> u64 {
        self.coord.windows
    }

    /// Events processed so far (each once, however many partitions ran it).
    pub fn events(&self) -> u64 {
        self.coord.merged.events
    }

    /// Simulated time so far: of the last event processed, or the stop
    /// time once the run reached it.
    pub fn now(&self) -> Time {
        if self.coord.reached_stop {
            return self.coord.stop_at;
        }
        self.coord.merged.last.0
    }

    /// Flows finished so far.
    pub fn flows_done(&self) -> usize {
        self.coord.merged.flows.len()
    }

    /// Data payload that has reached its receiver so far.
    pub fn payload_arrived(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| {
                p.lock()
                    .expect("no thread panicked")
                    .w
                    .stats
                    .data_payload_arrived
            })
            .sum()
    }

    /// Process every event up to and including `until` (capped at the stop
    /// time), as [`World::run_until`] does, unless the run must fold first.
    ///
    /// Each thread owns one partition. Per window: all run their partition
    /// to the window's end and publish its log (barrier); all settle their
    /// own events against every log, renumber their pending events, post
    /// the frames bound elsewhere and decide from what all published whether
    /// the run goes on (barrier); all take in what was posted to them, and
    /// the first thread combines the window (the only serial step, per row,
    /// not per event) while the others start the next one.
    pub fn run_until(&mut self, until: Time) -> Result<Step, RunError> {
        let c = &self.coord;
        let until = until.min(c.stop_at);
        let (max_events, may_end) = (c.max_events, c.may_end());
        let (lookahead, start) = (c.lookahead, c.window_start);
        let parts = &self.parts;
        let slots = &self.published;
        let n = parts.len();
        let shared = Shared {
            barrier: SpinBarrier::new(n),
            next_event: (0..n).map(|_| AtomicU64::new(u64::MAX)).collect(),
            inbox: (0..n).map(|_| Mutex::new(Vec::new())).collect(),
            take_in_ns: (0..n).map(|_| AtomicU64::new(0)).collect(),
            frames_in: AtomicU64::new(0),
            events_before: AtomicU64::new(c.merged.events),
            settled: (0..n).map(|_| Mutex::new(None)).collect(),
            seq0: AtomicU64::new(c.merged.next_seq),
            live0: AtomicI64::new(c.merged.live),
            verdict: Mutex::new(Verdict::Go),
        };
        let coord = Mutex::new(&mut self.coord);
        let thread = |i: usize| -> Verdict {
            let _poison = PoisonOnPanic(&shared.barrier);
            let lock = |j: usize| held(parts[j].lock());
            let mut window_start = start;
            let mut parity = 0;
            {
                let mut p = lock(i);
                let next = p.w.q.peek_key().map_or(u64::MAX, |k| k.0.ps());
                shared.next_event[i].store(next, Ordering::Release);
            }
            if i == 0 {
                let c = coord.lock().expect("coordinator");
                let mut all: Vec<_> = (0..n).map(lock).collect();
                let all: Vec<&mut Part> = all.iter_mut().map(|g| &mut **g).collect();
                if c.flow_may_end(&all) {
                    *shared.verdict.lock().expect("verdict") = Verdict::Fold;
                }
            }
            shared.barrier.wait();
            let v = shared.verdict.lock().expect("verdict").clone();
            if v != Verdict::Go {
                return v;
            }
            loop {
                // The next window: from the earliest pending event (idle
                // stretches are skipped), one lookahead long.
                let first = shared
                    .next_event
                    .iter()
                    .map(|a| a.load(Ordering::Acquire))
                    .min()
                    .unwrap_or(u64::MAX);
                if first > until.ps() {
                    return Verdict::Go;
                }
                let begin = first.max(window_start.ps());
                let end = Time(begin.saturating_add(lookahead.ps()).min(until.ps() + 1));
                window_start = end;
                parity ^= 1;
                let published = &slots[parity];
                let t0 = thread_cpu_ns();
                {
                    let mut p = lock(i);
                    p.run_window(end);
                    let mut out = held(published[i].write());
                    p.publish(&mut out);
                    out.cpu_ns = thread_cpu_ns() - t0;
                }
                shared.barrier.wait();
                // Every thread settles its own events, renumbers its queue
                // and posts the frames bound elsewhere.
                let t1 = thread_cpu_ns();
                let next = {
                    let pubs: Vec<_> = published.iter().map(|l| held(l.read())).collect();
                    let logs: Vec<&WindowLog> = pubs.iter().map(|g| &g.log).collect();
                    let seq0 = shared.seq0.load(Ordering::Acquire);
                    let live0 = shared.live0.load(Ordering::Acquire);
                    let mut settled = merge::settle(i, &logs, seq0, live0);
                    let mut p = lock(i);
                    let sent_first = p.renumber(&settled.base, end, &shared.inbox);
                    let next = p.w.q.peek_key().map_or(u64::MAX, |k| k.0.ps());
                    shared.next_event[i].store(next.min(sent_first), Ordering::Release);
                    settled.cpu_ns = thread_cpu_ns() - t1;
                    *held(shared.settled[i].lock()) = Some(settled);
                    // Every thread tells from what all published whether the
                    // run goes on, so none waits for the combine.
                    let events =
                        shared.events_before.load(Ordering::Acquire) + merge::events_in(&logs);
                    if pubs.iter().any(|p| p.error.is_some()) || events >= max_events {
                        Next::Stop
                    } else if may_end(
                        pubs.iter().map(|p| p.flows_started).sum(),
                        pubs.iter().map(|p| p.first_sent).sum(),
                    ) {
                        Next::Fold
                    } else {
                        Next::Go
                    }
                };
                shared.barrier.wait();
                {
                    let t = thread_cpu_ns();
                    let inbound = std::mem::take(&mut *held(shared.inbox[i].lock()));
                    let frames: usize = inbound.iter().map(|b| b.frames.len()).sum();
                    lock(i).take_in(inbound);
                    shared.take_in_ns[i].fetch_add(thread_cpu_ns() - t, Ordering::Relaxed);
                    shared.frames_in.fetch_add(frames as u64, Ordering::Relaxed);
                }
                if i == 0 {
                    // The combine runs while the others start the next window.
                    let t2 = thread_cpu_ns();
                    let mut c = coord.lock().expect("coordinator");
                    let mut pubs: Vec<_> = published.iter().map(|l| held(l.write())).collect();
                    let mut pubs: Vec<&mut Published> = pubs.iter_mut().map(|g| &mut **g).collect();
                    let settled: Vec<Settled> = shared
                        .settled
                        .iter()
                        .map(|s| held(s.lock()).take().expect("every thread settled"))
                        .collect();
                    let work = pubs.iter().map(|p| p.cpu_ns);
                    c.timing.work_max_ns += work.clone().max().unwrap_or(0);
                    c.timing.work_sum_ns += work.clone().sum::<u64>();
                    for (t, w) in c.timing.work_ns.iter_mut().zip(work) {
                        *t += w;
                    }
                    let settling = settled.iter().map(|s| s.cpu_ns).max().unwrap_or(0);
                    c.timing.settle_max_ns += settling;
                    let combined = c.combine(&mut pubs, &settled, end);
                    shared.seq0.store(c.merged.next_seq, Ordering::Release);
                    shared.live0.store(c.merged.live, Ordering::Release);
                    shared
                        .events_before
                        .store(c.merged.events, Ordering::Release);
                    c.timing.combine_ns += thread_cpu_ns() - t2;
                    assert_eq!(
                        combined.is_err(),
                        next == Next::Stop,
                        "parallel run: the threads' verdict and the combine agree"
                    );
                    match combined {
                        Err(e) => return Verdict::Failed(e),
                        Ok(()) if next == Next::Fold => return Verdict::Fold,
                        Ok(()) => {}
                    }
                } else if next != Next::Go {
                    // Thread 0 returns the run's verdict (with the error,
                    // if any); the others only stop.
                    return Verdict::Go;
                }
            }
        };
        let ended = std::thread::scope(|s| {
            let workers: Vec<_> = (1..n).map(|i| s.spawn(move || thread(i))).collect();
            let mut ended = vec![std::panic::catch_unwind(AssertUnwindSafe(|| thread(0)))];
            ended.extend(workers.into_iter().map(|w| w.join()));
            ended
        });
        let mut verdict = None;
        let mut panicked: Option<Box<dyn std::any::Any + Send>> = None;
        for e in ended {
            match e {
                Ok(v) => verdict = verdict.or(Some(v)),
                Err(p) => {
                    // Report the panic that started it, not its partners' echoes.
                    let echo = p.is::<PartnerPanicked>();
                    if panicked
                        .as_ref()
                        .is_none_or(|q| q.is::<PartnerPanicked>() && !echo)
                    {
                        panicked = Some(p);
                    }
                }
            }
        }
        if let Some(p) = panicked {
            std::panic::resume_unwind(p);
        }
        let verdict = verdict.expect("thread 0 returned");
        let coord = coord.into_inner().expect("coordinator");
        for (t, s) in coord.timing.take_in_ns.iter_mut().zip(&shared.take_in_ns) {
            *t += s.load(Ordering::Relaxed);
        }
        coord.timing.frames_in += shared.frames_in.load(Ordering::Relaxed);
        match verdict {
            Verdict::Failed(e) => return Err(e),
            Verdict::Fold => return Ok(Step::FoldToSerial),
            Verdict::Go => {}
        }
        for p in parts {
            p.lock()
                .expect("no partition thread panicked")
                .w
                .settle_skipped_tx_done(until);
        }
        // The folded world's clock goes to the stop time (see `fold`).
        coord.reached_stop = until >= coord.stop_at;
        Ok(Step::Progress(if coord.reached_stop {
            Progress::StopTime
        } else {
            Progress::Running
        }))
    }

    /// One world in the state the serial run has at this point: every node
    /// from the partition that owns it, every pending event, the merged
    /// tables and counters. It can go on running on its own.
    pub fn fold(self) -> World {
        let coord = self.coord;
        if std::env::var_os("RDMALAB_PARALLEL_STATS").is_some() {
            let t = &coord.timing;
            eprintln!(
                "parallel: {} windows, {} events, {:.0} events per window; CPU s per window, summed: events {:.2} on the slowest thread ({:.2} all threads: {}), settling and renumbering {:.2} on the slowest thread, combine {:.2}; critical path {:.2}; besides, taking in the frames posted between partitions {} s ({} frames, {:.0} per window)",
                coord.windows,
                coord.merged.events,
                coord.merged.events as f64 / coord.windows.max(1) as f64,
                t.work_max_ns as f64 / 1e9,
                t.work_sum_ns as f64 / 1e9,
                t.work_ns
                    .iter()
                    .map(|w| format!("{:.2}", *w as f64 / 1e9))
                    .collect::<Vec<_>>()
                    .join(" + "),
                t.settle_max_ns as f64 / 1e9,
                t.combine_ns as f64 / 1e9,
                (t.work_max_ns + t.settle_max_ns + t.combine_ns) as f64 / 1e9,
                t.take_in_ns
                    .iter()
                    .map(|w| format!("{:.2}", *w as f64 / 1e9))
                    .collect::<Vec<_>>()
                    .join(" + "),
                t.frames_in,
                t.frames_in as f64 / coord.windows.max(1) as f64,
            );
        }
        let mut parts: Vec<Part> = self
            .parts
            .into_iter()
            .map(|m| m.into_inner().expect("no partition thread panicked"))
            .collect();
        let np = parts[0].node_part.clone();
        let mut rest = parts.split_off(1);
        let mut w = parts.pop().expect("partition 0").w;
        let total = coord.flows;
        let mut finished = total - w.flows_open;
        for p in rest.iter_mut() {
            let o = &mut p.w;
            finished += total - o.flows_open;
            // Pending events, but the copies every partition has.
            for (at, seq, ev) in o.q.drain_all() {
                let ev = match ev {
                    Event::FlowStart { .. }
                    | Event::AppStart { .. }
                    | Event::Sample
                    | Event::QlenSample => continue,
                    Event::Arrive { port, pkt } => Event::Arrive {
                        port,
                        pkt: w.pkts.put(o.pkts.take(pkt)),
                    },
                    other => other,
                };
                w.q.schedule_reserved(at, seq, ev);
            }
            w.stats.add(&o.stats);
            for (k, v) in &o.rec.drops {
                let e = w.rec.drops.entry(*k).or_insert((0, 0));
                e.0 += v.0;
                e.1 += v.1;
            }
            w.skipped_tx_done_max = w.skipped_tx_done_max.max(o.skipped_tx_done_max);
        }
        for i in 0..w.ports.len() {
            let owner = np[w.ports[i].node as usize] as usize;
            if owner != 0 {
                let o = &mut rest[owner - 1].w;
                std::mem::swap(&mut w.ports[i], &mut o.ports[i]);
                w.ports[i].move_queued(&mut o.pkts, &mut w.pkts);
            }
        }
        for i in 0..w.switches.len() {
            let owner = np[w.switches[i].node as usize] as usize;
            if owner != 0 {
                std::mem::swap(&mut w.switches[i], &mut rest[owner - 1].w.switches[i]);
            }
        }
        for i in 0..w.nics.len() {
            let owner = np[w.nics[i].node as usize] as usize;
            if owner != 0 {
                let o = &mut rest[owner - 1].w;
                std::mem::swap(&mut w.nics[i], &mut o.nics[i]);
                for id in w.nics[i].requests.iter_mut() {
                    *id = w.pkts.put(o.pkts.take(*id));
                }
            }
        }
        for i in 0..w.qps.len() {
            let tx = np[w.qps[i].src_node as usize] as usize;
            let rx = np[w.qps[i].dst_node as usize] as usize;
            if tx != 0 {
                std::mem::swap(&mut w.qps[i], &mut rest[tx - 1].w.qps[i]);
                if i < w.cc_headers.len() {
                    w.cc_headers[i] = rest[tx - 1].w.cc_headers[i];
                }
            }
            if rx != tx {
                // Partition 0's own copy went to `tx` in the swap above.
                let from = if rx == 0 { tx } else { rx };
                take_receiver_half(&mut w.qps[i], &rest[from - 1].w.qps[i]);
            }
        }
        if let Some(m) = w.qlen_monitor.as_mut() {
            // Each port's histogram from its owner, and the dumps joined.
            let owner_of = |i: usize| np[m.ports[i].0 as usize] as usize;
            for i in 0..m.ports.len() {
                if owner_of(i) != 0 {
                    let o = rest[owner_of(i) - 1]
                        .w
                        .qlen_monitor
                        .as_mut()
                        .expect("every partition monitors");
                    m.hist[i] = std::mem::take(&mut o.hist[i]);
                }
            }
            for d in 0..m.snapshots.len() {
                let at = m.snapshots[d].0;
                let hist: Vec<Vec<u64>> = (0..m.ports.len())
                    .map(|i| match owner_of(i) {
                        0 => m.snapshots[d].1[i].clone(),
                        o => rest[o - 1]
                            .w
                            .qlen_monitor
                            .as_ref()
                            .expect("every partition monitors")
                            .snapshots[d]
                            .1[i]
                            .clone(),
                    })
                    .collect();
                crate::record::write_qlen_dump(&mut m.text, at, &m.ports, &hist);
            }
            m.snapshots.clear();
        }
        for i in 0..w.apps.len() {
            let owner = np[w.workload.apps[i].src as usize] as usize;
            if owner != 0 {
                std::mem::swap(&mut w.apps[i], &mut rest[owner - 1].w.apps[i]);
            }
        }
        // Each partition remembered the choices of its own switches only.
        for r in &mut w.flow_routes {
            r.forget_paths();
        }
        let m = coord.merged;
        w.flows_open = total - finished;
        w.stats.peak_live_packets = m.peak_live;
        w.pkts.set_high_water(m.pool_high as usize);
        w.rec.flows = m.flows;
        w.rec.pfc_events = m.pfc_events;
        w.rec.qp_samples = m.qp_samples;
        w.rec.port_samples = m.port_samples;
        w.rec.counter_samples = m.counter_samples;
        w.rec.counters_at_last_sample = m.counters_at_last_sample;
        w.q.set_processed(m.events);
        w.q.advance_clock(m.last.0, m.last.1);
        if coord.reached_stop {
            w.reach_stop_time();
        }
        w.q.set_next_seq(m.next_seq);
        w.part = None;
        for p in w.ports.iter_mut() {
            p.peer_elsewhere = false;
        }
        w
    }
}

/// Copy the data receiver's half of a QP (kept by the partition that owns
/// the receiver) into `dst`, whose sender half is already right.
fn take_receiver_half(dst: &mut Qp, src: &Qp) {
    dst.epsn = src.epsn;
    dst.rx_unacked = src.rx_unacked;
    dst.nacked_psn = src.nacked_psn;
    dst.last_cnp = src.last_cnp;
    dst.rx_ooo = src.rx_ooo.clone();
    dst.rx_ce_pending = src.rx_ce_pending;
    dst.rx_next_msg = src.rx_next_msg;
    dst.last_rx_progress = src.last_rx_progress;
    dst.delivered_bytes = src.delivered_bytes;
    dst.sampled_delivered = src.sampled_delivered;
}

/// Refuse what a parallel run does not model (yet), naming the key.
fn check(w: &World, threads: usize) -> Result<(), String> {
    let refuse = |what: &str| {
        Err(format!(
            "threads: {threads} runs fabric scenarios with flows and perftest applications; {what}; allowed: threads 1 for this scenario"
        ))
    };
    if threads < 2 {
        return Err(format!(
            "threads: {threads} is not a parallel run; allowed: 2 or more"
        ));
    }
    if !matches!(
        w.cc_cfg,
        CcConfig::None
            | CcConfig::Dcqcn(_)
            | CcConfig::Timely(_)
            | CcConfig::Dctcp(_)
            | CcConfig::Hpcc(_)
            | CcConfig::Swift(_)
    ) {
        return refuse(&format!(
            "cc `{}` is not one of none, dcqcn, timely, dctcp, hpcc, swift",
            w.cc_cfg.name()
        ));
    }
    if w.ctl.is_some() {
        return refuse(&format!(
            "control.placement `{}` is not asic",
            w.placement_name()
        ));
    }
    if w.workload.apps.iter().any(|a| a.verb == Verb::Read) {
        return refuse("an application (perftest) reads");
    }
    if w.workload.flows.iter().any(|f| f.after.is_some()) {
        return refuse("a flow has `after`");
    }
    if !w.workload.graph.is_empty() {
        return refuse("flows wait for other flows (workload.collective)");
    }
    if w.workload.flows.iter().any(|f| f.verb == Verb::Read) {
        return refuse("a flow is a READ");
    }
    if w.pcap_cfg.is_some() {
        return refuse("records.pcap is set");
    }
    if w.topo.links.iter().any(|l| !l.down.is_empty()) {
        return refuse("a link goes down");
    }
    if w.nic_cfg.resources.is_some() {
        return refuse("nic.resources is set");
    }
    if w.nic_cfg.uar.is_some() {
        return refuse("host doorbells (host.uar) are modelled");
    }
    if w.nic_cfg.on_path.is_some() {
        return refuse("NIC on-path cores are set");
    }
    if w.nic_cfg.scheduler.is_some() || w.nic_cfg.host_report_interval.is_some() {
        return refuse("host.scheduler is set");
    }
    if w.cc_groups.scope != CcScope::Qp {
        return refuse("nic.cc_scope is not qp");
    }
    Ok(())
}

impl Coordinator {
    /// Could a flow finish within the next window, ending the serial run at
    /// that event? Not while some flow has a byte that has not left its NIC:
    /// that byte and its acknowledgement still need two link delays, and a
    /// window is at most that long.
    fn flow_may_end(&self, parts: &[&mut Part]) -> bool {
        self.may_end()(
            parts.iter().map(|p| p.flows_started).sum(),
            parts
                .iter()
                .map(|p| p.w.stats.data_payload_first_sent)
                .sum(),
        )
    }

    /// Join the window that ended at `end`, once every thread settled its events.
    fn combine(
        &mut self,
        pubs: &mut [&mut Published],
        settled: &[Settled],
        end: Time,
    ) -> Result<(), RunError> {
        for p in pubs.iter_mut() {
            if let Some(e) = p.error.take() {
                return Err(e);
            }
        }
        self.window_start = end;
        self.windows += 1;
        self.merged.combine(pubs, settled, self.keep_counters);
        if self.merged.events >= self.max_events {
            return Err(RunError::EventCap {
                limit: self.max_events,
                at: self.merged.last.0,
            });
        }
        Ok(())
    }

    /// Whether a flow may end within the next window, given the flows
    /// started and the data payload sent for the first time, so far.
    fn may_end(&self) -> impl Fn(u64, u64) -> bool + Sync {
        // The serial run ends at its stop time too: perftest applications never finish.
        let never = self.run_to_stop || self.has_apps;
        let (flows, bytes) = (self.flows, self.flow_bytes);
        move |started, sent| !never && started == flows && sent >= bytes
    }
}

impl ParallelRun {
    /// [`World::write_hpcc_fct_from`] over the flows finished so far.
    pub fn write_hpcc_fct_from(
        &mut self,
        out: &mut dyn std::io::Write,
        from: usize,
    ) -> std::io::Result<()> {
        let mut p = self.parts[0].lock().expect("no partition thread panicked");
        // Between windows a partition's own rows are merged and cleared.
        std::mem::swap(&mut p.w.rec.flows, &mut self.coord.merged.flows);
        let r = p.w.write_hpcc_fct_from(out, from);
        std::mem::swap(&mut p.w.rec.flows, &mut self.coord.merged.flows);
        r
    }

    /// The run's configuration (the same in every partition).
    pub fn with_world<T>(&self, f: impl FnOnce(&World) -> T) -> T {
        f(&self.parts[0]
            .lock()
            .expect("no partition thread panicked")
            .w)
    }
}
