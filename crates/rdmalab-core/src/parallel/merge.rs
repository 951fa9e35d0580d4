//! Putting one window's events back into the serial run's order.
//!
//! The serial run orders events by (time, sequence number), the number being
//! how many events were scheduled before. Within a window each partition
//! numbers what it schedules provisionally, above every serial number; an
//! event numbered in an earlier window sorts before any numbered in this one
//! at the same instant, and two numbered in this one sort as their parents
//! did, then by which of its parent's numbers each took. Events cross between
//! partitions only on links, at least one lookahead later, so every parent of
//! a window's event is in the same partition and already merged when the
//! event is compared: one pass, partition heads compared with that rule,
//! gives the serial order, and from it each provisional number's serial one.

use super::part::{Copies, Origin, Part, PartialSample};
use crate::record::{CounterSample, FlowRecord, PfcEvent, PortSample, QpSample};
use crate::time::Time;
use std::cmp::Ordering;

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
    /// Merge the parts' logs of one window; returns, per part and logged
    /// event, the serial number of its first provisional number.
    pub fn window(&mut self, parts: &mut [&mut Part], keep_counters: bool) -> Vec<Vec<u64>> {
        let n = parts.len();
        let mut head = vec![0usize; n];
        let mut base: Vec<Vec<u64>> = parts.iter().map(|p| vec![0; p.log.len()]).collect();
        let mut flow_at = vec![0usize; n];
        let mut pfc_at = vec![0usize; n];
        let mut sample_at = vec![0usize; n];
        // Each part's head time (`NEVER` once its log is merged): events are
        // ordered by time first, and ties are rare enough to settle one by one.
        let at = |p: usize, h: usize, parts: &[&mut Part]| {
            parts[p].log.get(h).map_or(Time::NEVER, |e| e.at)
        };
        let mut times: Vec<Time> = (0..n).map(|p| at(p, 0, parts)).collect();
        loop {
            let mut p = 0;
            for q in 1..n {
                if times[q] < times[p]
                    || (times[q] == times[p]
                        && times[q] != Time::NEVER
                        && earlier(parts, (q, head[q]), (p, head[p])) == Ordering::Less)
                {
                    p = q;
                }
            }
            if times[p] == Time::NEVER {
                break;
            }
            let h = head[p];
            let e = parts[p].log[h];
            let before = self.live;
            let (delta, rise) = if e.copies == Copies::One {
                base[p][h] = self.next_seq;
                self.next_seq += e.reserves as u64;
                let w = &parts[p].w;
                if e.flows > 0 {
                    self.flows
                        .extend_from_slice(&w.rec.flows[flow_at[p]..flow_at[p] + e.flows as usize]);
                    flow_at[p] += e.flows as usize;
                }
                if e.pfc > 0 {
                    self.pfc_events.extend_from_slice(
                        &w.rec.pfc_events[pfc_at[p]..pfc_at[p] + e.pfc as usize],
                    );
                    pfc_at[p] += e.pfc as usize;
                }
                head[p] += 1;
                times[p] = at(p, head[p], parts);
                (e.live_delta as i64, e.rise as u64)
            } else {
                // Every partition ran this event: each head is a copy of it.
                let (mut delta, mut rise, mut reserves) = (0i64, 0u64, None);
                for q in 0..n {
                    let hq = head[q];
                    assert!(
                        hq < parts[q].log.len()
                            && (q == p || earlier(parts, (q, hq), (p, h)) == Ordering::Equal),
                        "parallel run: partition {q} did not run the event every partition runs at {}",
                        e.at
                    );
                    let c = parts[q].log[hq];
                    base[q][hq] = self.next_seq;
                    delta += c.live_delta as i64;
                    rise += c.rise as u64;
                    if !matches!(c.copies, Copies::FlowStart { owner: false }) {
                        debug_assert!(reserves.is_none_or(|x| x == c.reserves));
                        reserves = Some(c.reserves);
                    }
                    head[q] += 1;
                    times[q] = at(q, head[q], parts);
                }
                self.next_seq += reserves.unwrap_or(0) as u64;
                if e.copies == Copies::Sample {
                    let taken: Vec<PartialSample> = (0..n)
                        .map(|q| {
                            let ctx = parts[q].w.part.as_mut().expect("a partition");
                            let s = std::mem::take(&mut ctx.samples[sample_at[q]]);
                            sample_at[q] += 1;
                            s
                        })
                        .collect();
                    self.join_samples(e.at, taken, keep_counters);
                }
                (delta, rise)
            };
            self.pool_high = self.pool_high.max((before as u64) + rise);
            self.live = before + delta;
            self.peak_live = self.peak_live.max(self.live as u64);
            self.last = (
                e.at,
                match e.origin() {
                    Origin::Global(s) => s,
                    Origin::Local { parent, k } => base[p][parent as usize] + k as u64,
                },
            );
            self.events += 1;
        }
        for part in parts.iter_mut() {
            part.w.rec.flows.clear();
            part.w.rec.pfc_events.clear();
            part.w.part.as_mut().expect("a partition").samples.clear();
        }
        base
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
fn earlier(parts: &[&mut Part], a: (usize, usize), b: (usize, usize)) -> Ordering {
    let (ea, eb) = (&parts[a.0].log[a.1], &parts[b.0].log[b.1]);
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
            earlier(parts, (a.0, pa as usize), (b.0, pb as usize)).then(ka.cmp(&kb))
        }
    }
}
