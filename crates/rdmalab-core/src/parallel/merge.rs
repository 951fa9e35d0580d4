//! Putting one window's events back into the serial run's order.
//!
//! The serial run orders events by (time, sequence number), the number being
//! how many events were scheduled before. Within a window each partition
//! numbers what it schedules provisionally, above every serial number; an
//! event numbered in an earlier window sorts before any numbered in this one
//! at the same instant, and two numbered in this one sort as their parents
//! did, then by which of its parent's numbers each took. Events cross between
//! partitions only on links, at least one lookahead later, so every parent of
//! a window's event is in the same partition and in the window's logs.
//!
//! Every thread settles its own events ([`settle`]): walking its log beside
//! each other partition's, it counts how many of their events come before
//! each of its own, and from the logs' prefix sums gets each event's serial
//! number, its place in the window's serial order and the packets live
//! around it. Only what must be joined (the shared events, the peaks, the
//! table rows) is left to one thread ([`Merged::combine`]).

use super::part::{tie_key, Copies, Origin, PartialSample, WindowLog};
use crate::record::{CounterSample, FlowRecord, PfcEvent, PortSample, QpSample};
use crate::time::Time;
use std::cmp::Ordering;

/// What a partition's thread publishes at the end of a window: its log,
/// and what its events appended to the tables.
#[derive(Default)]
pub(crate) struct Published {
    pub log: WindowLog,
    pub flows: Vec<FlowRecord>,
    pub pfc_events: Vec<PfcEvent>,
    pub samples: Vec<PartialSample>,
    /// The error its window stopped at, if any.
    pub error: Option<crate::world::RunError>,
    /// Flows it has started, and the data payload its NICs have sent for
    /// the first time, so far: whether a flow may end in the next window.
    pub flows_started: u64,
    pub first_sent: u64,
    /// CPU time of the window's events, ns.
    pub cpu_ns: u64,
}

/// What one partition's thread works out about its own events of a window.
pub(crate) struct Settled {
    /// Per logged event, the serial number of its first provisional number.
    pub base: Vec<u64>,
    /// Over its events that it alone ran: the most packets live after one,
    /// and at any moment during one (`i64::MIN`: no such event).
    pub peak_live: i64,
    pub pool_high: i64,
    /// (place in the window's serial order, index in the log) of its events
    /// that appended table rows.
    pub rows: Vec<(u64, u32)>,
    /// Its last event's (time, serial number).
    pub last: Option<(Time, u64)>,
    /// CPU time of settling and renumbering, ns (set by the caller).
    pub cpu_ns: u64,
}

/// For each entry of log `p`, how many entries of log `q` come before it in
/// the serial order: a two-way merge of their times that steps either log
/// without a data-dependent branch; equal times are settled by the entries'
/// tie keys ([`tie_key`], worked out only here, since most events tie with
/// none), and only equal keys ask [`earlier`].
fn count_before(logs: &[&WindowLog], p: usize, q: usize) -> Vec<u32> {
    // Slices, not the logs' vectors: their pointers stay in registers
    // across the stores into `c`.
    let (a, b) = (&logs[p].keys[..], &logs[q].keys[..]);
    let (ea, eb) = (&logs[p].entries[..], &logs[q].entries[..]);
    let mut c = vec![0u32; a.len()];
    let (mut i, mut j) = (0usize, 0usize);
    while i < a.len() {
        let Some(tb) = b.get(j).map(|k| k.time) else {
            c[i..].fill(j as u32);
            break;
        };
        let ta = a[i].time;
        c[i] = j as u32;
        if ta == tb {
            let ka = tie_key(ea[i].seq, ea[i].at, ea);
            let kb = tie_key(eb[j].seq, eb[j].at, eb);
            let order = if ka != kb {
                kb.cmp(&ka)
            } else {
                earlier(logs, (q, j), (p, i))
            };
            match order {
                Ordering::Less => j += 1,
                Ordering::Greater => i += 1,
                Ordering::Equal => {
                    i += 1;
                    j += 1;
                }
            }
        } else {
            let take_b = (tb < ta) as usize;
            j += take_b;
            i += 1 - take_b;
        }
    }
    c
}

/// Events in one window's logs, each counted once (every partition logs
/// the shared ones).
pub(crate) fn events_in(logs: &[&WindowLog]) -> u64 {
    let logged: u64 = logs.iter().map(|l| l.entries.len() as u64).sum();
    logged - (logs.len() as u64 - 1) * logs[0].shared.len() as u64
}

/// Numbers taken by the `k`-th shared event: its copies in partitions that
/// only created a flow's QP may have taken fewer than the owner's.
fn shared_reserves(logs: &[&WindowLog], k: usize) -> u64 {
    let mut res = 0;
    for l in logs {
        let c = &l.entries[l.shared[k] as usize];
        if c.copies != (Copies::FlowStart { owner: false }) {
            debug_assert!(res == 0 || res == c.reserves as u64);
            res = c.reserves as u64;
        }
    }
    res
}

/// Thread `p`'s share of the merge: the serial numbers, places and live
/// packets of partition `p`'s events of the window, given the serial number
/// the window's first scheduled event takes (`seq0`) and the packets live
/// at its start (`live0`). Reads every log; writes nothing shared.
pub(crate) fn settle(p: usize, logs: &[&WindowLog], seq0: u64, live0: i64) -> Settled {
    let n = logs.len();
    for l in logs {
        l.check_sums();
    }
    let own = logs[p];
    // Numbers taken by the shared events before the k-th.
    let mut shared_before = Vec::with_capacity(own.shared.len() + 1);
    shared_before.push(0u64);
    for k in 0..own.shared.len() {
        let r = shared_before[k] + shared_reserves(logs, k);
        shared_before.push(r);
    }
    let mut out = Settled {
        base: Vec::with_capacity(own.entries.len()),
        peak_live: i64::MIN,
        pool_high: i64::MIN,
        rows: Vec::new(),
        last: None,
        cpu_ns: 0,
    };
    // Per other partition and own entry: how many of its entries come first.
    let before: Vec<(usize, Vec<u32>)> = (0..n)
        .filter(|&q| q != p)
        .map(|q| (q, count_before(logs, p, q)))
        .collect();
    // Two partitions, the common case, walk one count array without a loop
    // per event: the general closure below ran 2.5 % more instructions on
    // (g) (23.04 G against 22.48 G).
    if let [(q, c)] = &before[..] {
        let other = logs[*q];
        settle_entries(own, n, seq0, live0, &shared_before, &mut out, |i| {
            let j = c[i] as usize;
            (other.res_at(j), other.live_at(j), j as u64)
        });
    } else {
        settle_entries(own, n, seq0, live0, &shared_before, &mut out, |i| {
            let (mut res, mut live, mut earlier_others) = (0u64, 0i64, 0u64);
            for (q, c) in &before {
                let j = c[i] as usize;
                res += logs[*q].res_at(j);
                live += logs[*q].live_at(j);
                earlier_others += j as u64;
            }
            (res, live, earlier_others)
        });
    }
    debug_assert!(
        own.shared.iter().enumerate().all(|(k, &i)| before
            .iter()
            .all(|(q, c)| c[i as usize] == logs[*q].shared[k])),
        "every shared event lines up with its copies"
    );
    out.last = own.entries.last().map(|e| {
        (
            e.at,
            match e.origin() {
                Origin::Global(s) => s,
                Origin::Local { parent, k } => out.base[parent as usize] + k as u64,
            },
        )
    });
    out
}

/// [`settle`]'s walk over its own log; `others(i)` gives, for entry `i`,
/// the numbers taken and packets live by the other partitions' events
/// before it, and how many of those there are.
#[inline(always)]
fn settle_entries(
    own: &WindowLog,
    n: usize,
    seq0: u64,
    live0: i64,
    shared_before: &[u64],
    out: &mut Settled,
    others: impl Fn(usize) -> (u64, i64, u64),
) {
    let mut shared_seen = 0usize;
    for (i, (e, key)) in own.entries.iter().zip(&own.keys).enumerate() {
        let (res, live, earlier_others) = others(i);
        out.base
            .push(seq0 + key.before.res as u64 + res + shared_before[shared_seen]);
        if e.copies == Copies::One {
            let live_before = live0 + key.before.live as i64 + live;
            out.pool_high = out.pool_high.max(live_before + e.rise as i64);
            out.peak_live = out.peak_live.max(live_before + e.live_delta as i64);
            if e.flows > 0 || e.pfc > 0 {
                let place = i as u64 + earlier_others - (n as u64 - 1) * shared_seen as u64;
                out.rows.push((place, i as u32));
            }
        } else {
            debug_assert!(e.flows == 0 && e.pfc == 0, "a shared event appends no rows");
            shared_seen += 1;
        }
    }
}

/// What the merged windows add up to.
#[derive(Default)]
pub(crate) struct Merged {
    /// The serial number the next scheduled event takes.
    pub next_seq: u64,
    pub events: u64,
    /// Packets live across all partitions after the last merged event, the
    /// most after any event, and the most at any moment.
    pub live: i64,
    pub peak_live: u64,
    pub pool_high: u64,
    /// The rows of the serial run's tables, in its order.
    pub flows: Vec<FlowRecord>,
    pub pfc_events: Vec<PfcEvent>,
    pub qp_samples: Vec<QpSample>,
    pub port_samples: Vec<PortSample>,
    pub counter_samples: Vec<CounterSample>,
    pub counters_at_last_sample: CounterSample,
    /// The last merged event's (time, serial number).
    pub last: (Time, u64),
    /// `records.sample_interval` in ps (throughputs are per interval).
    pub sample_ps: u64,
}

impl Merged {
    /// After every thread settled its events of one window: the totals, the
    /// shared events, the peaks, and the table rows in serial order.
    pub fn combine(
        &mut self,
        pubs: &mut [&mut Published],
        settled: &[Settled],
        keep_counters: bool,
    ) {
        let n = pubs.len();
        let mut samples: Vec<Vec<PartialSample>> = pubs
            .iter_mut()
            .map(|p| std::mem::take(&mut p.samples))
            .collect();
        let logs: Vec<&WindowLog> = pubs.iter().map(|p| &p.log).collect();
        let logs = &logs[..];
        let k_shared = logs[0].shared.len();
        let at_of = |l: &WindowLog, k: usize| l.entries[l.shared[k] as usize].at;
        for (q, l) in logs.iter().enumerate() {
            assert!(
                l.shared.len() == k_shared
                    && (0..k_shared).all(|k| at_of(l, k) == at_of(logs[0], k)),
                "parallel run: partition {q} did not run the events every partition runs"
            );
        }
        let live0 = self.live;
        let mut sample_at = vec![0usize; n];
        let mut shared_res = 0;
        for k in 0..k_shared {
            let (mut before, mut delta, mut rise) = (live0, 0i64, 0i64);
            for l in logs {
                let i = l.shared[k] as usize;
                before += l.live_at(i);
                delta += l.entries[i].live_delta as i64;
                rise += l.entries[i].rise as i64;
            }
            self.pool_high = self.pool_high.max((before + rise) as u64);
            self.peak_live = self.peak_live.max((before + delta) as u64);
            shared_res += shared_reserves(logs, k);
            let first = &logs[0].entries[logs[0].shared[k] as usize];
            if first.copies == Copies::Sample {
                let taken: Vec<PartialSample> = (0..n)
                    .map(|q| {
                        let s = std::mem::take(&mut samples[q][sample_at[q]]);
                        sample_at[q] += 1;
                        s
                    })
                    .collect();
                self.join_samples(first.at, taken, keep_counters);
            }
        }
        for s in settled {
            if s.peak_live != i64::MIN {
                self.peak_live = self.peak_live.max(s.peak_live as u64);
                self.pool_high = self.pool_high.max(s.pool_high as u64);
            }
        }
        let mut rows: Vec<(u64, usize, u32)> = settled
            .iter()
            .enumerate()
            .flat_map(|(q, s)| s.rows.iter().map(move |&(place, i)| (place, q, i)))
            .collect();
        rows.sort_unstable();
        let mut flow_at = vec![0usize; n];
        let mut pfc_at = vec![0usize; n];
        for (_, q, i) in rows {
            let e = &logs[q].entries[i as usize];
            let f = e.flows as usize;
            self.flows
                .extend_from_slice(&pubs[q].flows[flow_at[q]..flow_at[q] + f]);
            flow_at[q] += f;
            let c = e.pfc as usize;
            self.pfc_events
                .extend_from_slice(&pubs[q].pfc_events[pfc_at[q]..pfc_at[q] + c]);
            pfc_at[q] += c;
        }
        self.next_seq += logs.iter().map(|l| l.res_total).sum::<u64>() + shared_res;
        self.events += events_in(logs);
        self.live = live0 + logs.iter().map(|l| l.live_total).sum::<i64>();
        if let Some(last) = settled.iter().filter_map(|s| s.last).max() {
            self.last = last;
        }
        for p in pubs.iter_mut() {
            p.flows.clear();
            p.pfc_events.clear();
        }
    }

    /// The serial run's rows of one `Sample`, from every partition's part.
    fn join_samples(&mut self, at: Time, parts: Vec<PartialSample>, keep_counters: bool) {
        let mut tx = Vec::new();
        let mut rx = Vec::new();
        let mut ports = Vec::new();
        let mut totals = CounterSample {
            time: at,
            ..Default::default()
        };
        for s in parts {
            tx.extend(s.tx);
            rx.extend(s.rx);
            ports.extend(s.ports);
            let t = s.totals;
            totals.ecn_marked_packets += t.ecn_marked_packets;
            totals.cnps_sent += t.cnps_sent;
            totals.pfc_pauses += t.pfc_pauses;
            totals.pfc_resumes += t.pfc_resumes;
            totals.dropped_frames += t.dropped_frames;
            totals.retransmitted_packets += t.retransmitted_packets;
            totals.timeouts += t.timeouts;
        }
        tx.sort_unstable_by_key(|s| s.qp);
        rx.sort_unstable_by_key(|s| s.qp);
        assert_eq!(tx.len(), rx.len(), "each QP sampled at both ends");
        for (t, r) in tx.iter().zip(&rx) {
            debug_assert_eq!(t.qp, r.qp);
            let open = r.epsn < t.psn_end || t.snd_una < t.psn_end;
            if !open && r.moved == 0 {
                continue;
            }
            self.qp_samples.push(QpSample {
                time: at,
                qp: t.qp,
                rate: t.rate,
                throughput_bps: (r.moved as u128 * 8 * crate::time::PS_PER_S as u128
                    / self.sample_ps.max(1) as u128) as u64,
                bytes_in_flight: t.bytes_in_flight,
                window: t.window,
                udp_sport: t.udp_sport,
            });
        }
        // The serial run samples switches in node order, each one's ports in order.
        ports.sort_by_key(|s| s.node);
        self.port_samples.extend(ports);
        if keep_counters {
            self.counter_samples
                .push(totals.since(&self.counters_at_last_sample));
            self.counters_at_last_sample = totals;
        }
    }
}

/// The serial order of two logged events of this window at the same time,
/// `a` = (part, index) and `b`: one numbered before the window comes first,
/// two such by their numbers, two numbered in it as their parents ran, then
/// by which of the parent's numbers each took. Copies of one event that
/// every partition ran are equal.
fn earlier(logs: &[&WindowLog], a: (usize, usize), b: (usize, usize)) -> Ordering {
    let (ea, eb) = (&logs[a.0].entries[a.1], &logs[b.0].entries[b.1]);
    if a.0 == b.0 {
        return a.1.cmp(&b.1);
    }
    match ea.at.cmp(&eb.at) {
        Ordering::Equal => {}
        o => return o,
    }
    match (ea.origin(), eb.origin()) {
        (Origin::Global(x), Origin::Global(y)) => x.cmp(&y),
        (Origin::Global(_), Origin::Local { .. }) => Ordering::Less,
        (Origin::Local { .. }, Origin::Global(_)) => Ordering::Greater,
        (Origin::Local { parent: pa, k: ka }, Origin::Local { parent: pb, k: kb }) => {
            earlier(logs, (a.0, pa as usize), (b.0, pb as usize)).then(ka.cmp(&kb))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::part::{provisional, Logged};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// One window of a made-up run on two partitions, run serially and
    /// logged per partition as the partitions would log it; with what the
    /// serial run knows about each logged event.
    #[derive(Default)]
    struct Window {
        logs: [WindowLog; 2],
        /// Per partition and entry: entries of the other log before it,
        /// its first number, and its place among the window's events.
        before: [Vec<u32>; 2],
        base: [Vec<u64>; 2],
        place: [Vec<u64>; 2],
        /// Over the events one partition ran: the most live after one, and during one.
        peak_live: i64,
        pool_high: i64,
        last: (Time, u64),
        /// Ties between the partitions whose parents ran at different
        /// times, and at the same time: both must occur.
        ties_by_parent_time: u32,
        ties_deeper: u32,
    }

    const SEQ0: u64 = 40;
    const LIVE0: i64 = 7;

    /// Times on a 10 ps grid and delays of 0, 10 or 20 ps, so many events
    /// share an instant, and so do their parents.
    fn window(seed: u64) -> Window {
        let mut rng = crate::rng::RngStream::new(seed, "settle-test");
        let mut w = Window::default();
        // (time, serial number, partition (2: every one), logged number in each)
        let mut pending = BinaryHeap::new();
        for s in 0..SEQ0 {
            let part = if rng.below(8) == 0 { 2 } else { rng.below(2) };
            pending.push(Reverse((10 * rng.below(30), s, part, [s, s])));
        }
        let mut next = SEQ0;
        let (mut live, mut serial_place) = (LIVE0, 0u64);
        let (mut peak, mut pool) = (i64::MIN, i64::MIN);
        // The last event of each partition at each instant, with its parent's time.
        let mut last_at: [Option<(u64, Option<u64>)>; 2] = [None, None];
        while let Some(Reverse((at, serial, part, logged_in))) = pending.pop() {
            let logged = logged_in[part.min(1) as usize];
            if at >= 400 || serial_place > 5_000 {
                break;
            }
            let parents_at = |logs: &[WindowLog; 2], p: usize| {
                (logged >= crate::parallel::PROVISIONAL).then(|| {
                    let (parent, _) = crate::parallel::part::parent_of(logged);
                    logs[p].entries[parent as usize].at.ps()
                })
            };
            if part == 2 {
                let mut delta_sum = 0;
                let lens = [0, 1].map(|p| w.logs[p].entries.len() as u32);
                // Like a periodic sample, it may schedule its next copy, in
                // every partition under the same number.
                let again = rng.below(2);
                if again == 1 {
                    let t = at + 10 * rng.below(3);
                    let logged = lens.map(|i| provisional(i as usize));
                    pending.push(Reverse((t, next, 2, logged)));
                }
                for p in 0..2 {
                    let delta = rng.below(3) as i32 - 1;
                    delta_sum += delta as i64;
                    // Its copy in the other log does not come before it.
                    w.before[p].push(lens[1 - p]);
                    w.base[p].push(next);
                    w.place[p].push(serial_place);
                    w.logs[p].push(Logged {
                        at: Time(at),
                        seq: logged_in[p],
                        reserves: again as u32,
                        live_delta: delta,
                        rise: delta.max(0) as u32,
                        flows: 0,
                        pfc: 0,
                        copies: Copies::Sample,
                    });
                }
                live += delta_sum;
                next += again;
            } else {
                let p = part as usize;
                let pa = parents_at(&w.logs, p);
                if let (Some((t, Some(other_parent))), Some(mine)) = (last_at[1 - p], pa) {
                    if t == at && other_parent != mine {
                        w.ties_by_parent_time += 1;
                    } else if t == at {
                        w.ties_deeper += 1;
                    }
                }
                let index = w.logs[p].entries.len();
                // Fewer than one child on average: the window stays small.
                let children = [0, 0, 1, 1, 1, 2][rng.below(6) as usize];
                for k in 0..children {
                    let t = at + 10 * rng.below(3);
                    let logged = provisional(index) + k;
                    pending.push(Reverse((t, next + k, part, [logged, logged])));
                }
                let delta = rng.below(3) as i32 - 1;
                let rise = delta.max(0) as u32 + rng.below(2) as u32;
                let flows = (rng.below(5) == 0) as u16;
                w.before[p].push(w.logs[1 - p].entries.len() as u32);
                w.base[p].push(next);
                w.place[p].push(serial_place);
                pool = pool.max(live + rise as i64);
                live += delta as i64;
                peak = peak.max(live);
                w.logs[p].push(Logged {
                    at: Time(at),
                    seq: logged,
                    reserves: children as u32,
                    live_delta: delta,
                    rise,
                    flows,
                    pfc: 0,
                    copies: Copies::One,
                });
                next += children;
                last_at[p] = Some((at, pa));
            }
            w.last = (Time(at), serial);
            serial_place += 1;
        }
        (w.peak_live, w.pool_high) = (peak, pool);
        w
    }

    #[test]
    fn each_partition_settles_its_events_as_the_serial_run_ordered_them() {
        let (mut by_parent_time, mut deeper) = (0, 0);
        for seed in 0..300 {
            let w = window(seed);
            let logs: Vec<&WindowLog> = w.logs.iter().collect();
            let (mut peak, mut pool) = (i64::MIN, i64::MIN);
            let mut last = None;
            for p in 0..2 {
                let got = count_before(&logs, p, 1 - p);
                assert_eq!(got, w.before[p], "seed {seed}, part {p}");
                let s = settle(p, &logs, SEQ0, LIVE0);
                assert_eq!(s.base, w.base[p], "seed {seed}, part {p}");
                let places: Vec<u64> = s.rows.iter().map(|&(place, _)| place).collect();
                let want: Vec<u64> = (0..w.logs[p].entries.len())
                    .filter(|&i| w.logs[p].entries[i].flows > 0)
                    .map(|i| w.place[p][i])
                    .collect();
                assert_eq!(places, want, "seed {seed}, part {p}");
                peak = peak.max(s.peak_live);
                pool = pool.max(s.pool_high);
                last = last.max(s.last);
            }
            assert_eq!((peak, pool), (w.peak_live, w.pool_high), "seed {seed}");
            assert_eq!(last, Some(w.last), "seed {seed}");
            by_parent_time += w.ties_by_parent_time;
            deeper += w.ties_deeper;
        }
        eprintln!("ties: {by_parent_time} by parent time, {deeper} deeper");
        assert!(
            by_parent_time > 100 && deeper > 100,
            "{by_parent_time} {deeper}"
        );
    }
}
