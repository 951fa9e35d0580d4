//! One partition of a parallel run: a whole [`World`] of which it advances
//! only the nodes it owns, logging each event it processes so every
//! thread can place its partition's events in the serial order.

use super::PROVISIONAL;
use crate::control::MAX_CC_HEADER_WORDS;
use crate::engine::Popped;
use crate::packet::{IntHop, Packet, PacketId, MAX_INT_HOPS};
use crate::record::{CounterSample, PortSample};
use crate::time::{Rate, Time};
use crate::world::{Event, RunError, World, STUCK_EVENTS};
use std::sync::{Arc, Mutex};

/// What a world needs to know about being one partition of a parallel run.
pub(crate) struct PartCtx {
    pub id: u16,
    /// Node id → the partition that owns it.
    pub node_part: Arc<Vec<u16>>,
    /// This window's periodic samples, as far as this partition can take them.
    pub samples: Vec<PartialSample>,
    /// This window's frames bound for each other partition.
    pub outbox: Vec<Batch>,
    /// Switch ports whose [`crate::net::SkippedTxDone`] took a number in
    /// this window (some more than once).
    pub skipped: Vec<u32>,
}

/// A frame on a link from one partition to another.
pub(crate) struct PostedFrame {
    pub at: Time,
    /// Provisional until the window's numbers are settled, then serial.
    pub seq: u64,
    /// The receiving port.
    pub port: u32,
    pub packet: Packet,
}

/// The frames one partition sends another in one window, with their INT
/// records and CC header words (one each per frame, when the run keeps them).
#[derive(Default)]
pub(crate) struct Batch {
    pub frames: Vec<PostedFrame>,
    pub int: Vec<[IntHop; MAX_INT_HOPS]>,
    pub hdr: Vec<[u32; MAX_CC_HEADER_WORDS]>,
}

impl Batch {
    /// An empty batch with room for as many frames, INT records and header
    /// words as `last` holds.
    fn sized_like(last: &Batch) -> Batch {
        Batch {
            frames: Vec::with_capacity(last.frames.len()),
            int: Vec::with_capacity(last.int.len()),
            hdr: Vec::with_capacity(last.hdr.len()),
        }
    }
}

/// A QP's sender half of a periodic sample.
#[derive(Clone, Copy)]
pub(crate) struct TxSample {
    pub qp: u32,
    pub rate: Rate,
    pub bytes_in_flight: u64,
    pub window: Option<u64>,
    pub udp_sport: u16,
    pub snd_una: u32,
    pub psn_end: u32,
}

/// A QP's receiver half of a periodic sample.
#[derive(Clone, Copy)]
pub(crate) struct RxSample {
    pub qp: u32,
    /// Bytes delivered since the previous sample.
    pub moved: u64,
    pub epsn: u32,
}

/// One partition's part of one `Sample` event.
#[derive(Default)]
pub(crate) struct PartialSample {
    pub tx: Vec<TxSample>,
    pub rx: Vec<RxSample>,
    pub ports: Vec<PortSample>,
    pub totals: CounterSample,
}

impl World {
    /// A frame leaves on a link whose far end another partition owns: it
    /// takes its number as a scheduled arrival would, and is copied into
    /// the outbox while it is in cache, to wait there until the window's
    /// numbers are serial. Its packet is counted live here until then, as
    /// the merge's count of live packets expects.
    #[cold]
    #[inline(never)]
    pub(crate) fn post_elsewhere(&mut self, at: Time, port: u32, pkt: PacketId) {
        let seq = self.q.reserve_seq();
        if self.q.is_muted() {
            return;
        }
        let ctx = self
            .part
            .as_mut()
            .expect("only a partition has a port whose peer is elsewhere");
        let to = ctx.node_part[self.ports[port as usize].node as usize];
        let b = &mut ctx.outbox[to as usize];
        let packet = self.pkts.lend(pkt, &mut b.int, &mut b.hdr);
        b.frames.push(PostedFrame {
            at,
            seq,
            port,
            packet,
        });
    }

    /// [`World::take_samples`] in a partition: each QP half and switch port
    /// this partition owns; the coordinator joins the halves.
    pub(crate) fn take_partition_samples(&mut self, now: Time) {
        let ctx = self.part.as_mut().expect("a partition");
        let (me, np) = (ctx.id, ctx.node_part.clone());
        let mut s = PartialSample::default();
        let scales = self.nic_cfg.window_scales_with_rate;
        for qp in self.qps.iter_mut() {
            if np[qp.src_node as usize] == me {
                s.tx.push(TxSample {
                    qp: qp.id,
                    rate: qp.rate,
                    bytes_in_flight: qp.bytes_in_flight(),
                    window: qp.effective_window(scales),
                    udp_sport: qp.udp_sport,
                    snd_una: qp.snd_una,
                    psn_end: qp.psn_end,
                });
            }
            if np[qp.dst_node as usize] == me {
                s.rx.push(RxSample {
                    qp: qp.id,
                    moved: qp.delivered_bytes - qp.sampled_delivered,
                    epsn: qp.epsn,
                });
                qp.sampled_delivered = qp.delivered_bytes;
            }
        }
        for sw in &self.switches {
            if np[sw.node as usize] != me {
                continue;
            }
            for &p in &self.node_ports[sw.node as usize] {
                let port = &self.ports[p as usize];
                s.ports.push(PortSample {
                    time: now,
                    node: sw.node,
                    port: port.local,
                    queued_bytes: port.queued_total,
                });
            }
        }
        if self.rec.keep_counters {
            s.totals = self.counter_totals(now);
        }
        self.part.as_mut().expect("a partition").samples.push(s);
    }
}

/// Where an event's sequence number came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Numbered in the serial order already (before this window).
    Global(u64),
    /// The `k`-th number taken by this window's `parent`-th logged event.
    Local { parent: u32, k: u32 },
}

/// Which copies of an event the partitions process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Copies {
    /// Only its owner.
    One,
    /// Every partition, each sampling its own nodes.
    Sample,
    /// Every partition, each adding its own switch ports to the queue-length monitor.
    QlenSample,
    /// Every partition creates the flow's (or application's) QP; only the
    /// owner (the requester's partition) posts, the others' copies schedule nothing.
    FlowStart { owner: bool },
}

/// One processed event, as the merge needs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Logged {
    pub at: Time,
    /// The sequence number it was scheduled with: a serial one, or a
    /// provisional one that names its parent ([`provisional`]).
    pub seq: u64,
    /// How many numbers it took.
    pub reserves: u32,
    /// Packets live after it minus before it, and the most above "before" meanwhile.
    pub live_delta: i32,
    pub rise: u32,
    /// Rows it appended to the flows and PFC tables.
    pub flows: u16,
    pub pfc: u16,
    pub copies: Copies,
}

/// Prefix sums over a log's earlier entries: the numbers taken by those
/// that this partition alone ran, and the packets live after them minus at
/// the window's start.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct PrefixSums {
    pub res: u32,
    pub live: i32,
}

/// One partition's events of one window, as the settling threads read it.
/// What another partition's thread reads of every entry (its time and the
/// prefix sums before it) is kept apart in 16-byte keys: that log was
/// written on another core, and a walk over it should pull few cache lines.
#[derive(Default)]
pub(crate) struct WindowLog {
    pub entries: Vec<Entry>,
    pub keys: Vec<LogKey>,
    /// Indices of the entries that every partition ran (`Copies` other
    /// than `One`): each log holds the same ones, in the same order.
    pub shared: Vec<u32>,
    /// The prefix sums past the last entry.
    pub res_total: u64,
    pub live_total: i64,
}

/// A logged event. What decides most of its ties ([`tie_key`]) is
/// worked out when settling meets a tie, not here: most events tie with
/// none, and logging runs once per event on the critical path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub e: Logged,
}

/// A logged event's time (ps) and the prefix sums before it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogKey {
    pub time: u64,
    pub before: PrefixSums,
}

impl std::ops::Deref for Entry {
    type Target = Logged;
    fn deref(&self) -> &Logged {
        &self.e
    }
}

impl WindowLog {
    /// Log the event just processed, with its prefix sums.
    pub fn push(&mut self, e: Logged) {
        self.entries.push(Entry { e });
        self.keys.push(LogKey {
            time: e.at.ps(),
            before: PrefixSums {
                res: self.res_total as u32,
                live: self.live_total as i32,
            },
        });
        if e.copies == Copies::One {
            self.res_total += e.reserves as u64;
        } else {
            self.shared.push(self.entries.len() as u32 - 1);
        }
        self.live_total += e.live_delta as i64;
    }

    /// The prefix sums fit their fields (checked once per window, before
    /// anyone reads them).
    pub fn check_sums(&self) {
        assert!(
            self.res_total < 1 << 32 && self.live_total.unsigned_abs() < 1 << 31,
            "parallel run: a window took {} numbers, or its live packets changed by {}; too many to log",
            self.res_total,
            self.live_total
        );
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.keys.clear();
        self.shared.clear();
        self.res_total = 0;
        self.live_total = 0;
    }

    /// Numbers taken by the first `c` entries, but the shared ones.
    #[inline]
    pub fn res_at(&self, c: usize) -> u64 {
        self.keys
            .get(c)
            .map_or(self.res_total, |k| k.before.res as u64)
    }

    /// Packets live after the first `c` entries, minus at the window's start.
    #[inline]
    pub fn live_at(&self, c: usize) -> i64 {
        self.keys
            .get(c)
            .map_or(self.live_total, |k| k.before.live as i64)
    }
}

impl Logged {
    pub fn origin(&self) -> Origin {
        if self.seq < PROVISIONAL {
            Origin::Global(self.seq)
        } else {
            let (parent, k) = parent_of(self.seq);
            Origin::Local { parent, k }
        }
    }
}

/// What orders two events of different partitions at the same instant, as
/// far as it can be told without walking their ancestry: an event numbered
/// before the window by that number, before any numbered in it; one
/// numbered in it by when its parent ran (`entries`: the event's log, which
/// holds that parent before it; `at`: the event's own time).
/// Equal keys need [`super::merge`]'s full comparison: the same event run
/// by every partition, or two whose parents ran at the same instant.
#[inline]
pub(crate) fn tie_key(seq: u64, at: Time, entries: &[Entry]) -> u64 {
    // A serial number's "parent" wraps to an index past the log, so the
    // lookup gives `at`, which its key does not use. (Selecting index 0
    // for it instead, to spare the lookup a branch, ran 0.9 % more
    // instructions on (g) and no faster.)
    let local = seq >= PROVISIONAL;
    let parent = (seq.wrapping_sub(PROVISIONAL) >> CHILD_BITS) as usize;
    let parent_at = entries.get(parent).map_or(at.ps(), |p| p.at.ps());
    std::hint::select_unpredictable(local, (1 << 63) | parent_at, seq)
}

/// Bits of a provisional number that count the numbers one event takes.
const CHILD_BITS: u32 = 24;

/// The first provisional number of the window's `index`-th event: numbers
/// stay in creation order, and each says which event took it.
#[inline]
pub(crate) fn provisional(index: usize) -> u64 {
    PROVISIONAL + ((index as u64) << CHILD_BITS)
}

/// The event (its index in the window's log) that took provisional number
/// `s`, and which of its numbers `s` is.
#[inline]
pub(crate) fn parent_of(s: u64) -> (u32, u32) {
    let off = s - PROVISIONAL;
    (
        (off >> CHILD_BITS) as u32,
        (off & ((1 << CHILD_BITS) - 1)) as u32,
    )
}

/// A world and its log.
pub(crate) struct Part {
    pub w: World,
    pub id: u16,
    pub node_part: Arc<Vec<u16>>,
    /// Port and NIC → the partition that owns it.
    port_part: Vec<u16>,
    nic_part: Vec<u16>,
    pub log: WindowLog,
    /// Flows this partition has started (it owns their requester).
    pub flows_started: u64,
    /// Events at the instant of the last one, to find a stuck run.
    instant: (Time, u64),
    pub error: Option<RunError>,
}

// SAFETY: a `World` is not `Send` because controllers may share `Rc` tables
// and its controller factory is a plain `Arc<dyn Fn>`. Each partition's world
// is built on its own from the scenario, so no `Rc` is shared between two
// parts, and a parallel run admits only built-in controllers whose factory
// captures plain parameters (see `ParallelRun::check`). A part is used by one
// thread at a time, handed over at a barrier.
unsafe impl Send for Part {}

impl Part {
    pub fn new(mut w: World, id: u16, parts: usize, node_part: Arc<Vec<u16>>) -> Part {
        w.q.track_renumbering();
        w.part = Some(Box::new(PartCtx {
            id,
            node_part: node_part.clone(),
            samples: Vec::new(),
            outbox: (0..parts).map(|_| Batch::default()).collect(),
            skipped: Vec::new(),
        }));
        let port_part: Vec<u16> = w.ports.iter().map(|p| node_part[p.node as usize]).collect();
        for i in 0..w.ports.len() {
            let peer = w.ports[i].peer as usize;
            w.ports[i].peer_elsewhere =
                port_part[i] == id && peer < port_part.len() && port_part[peer] != id;
        }
        let nic_part = w.nics.iter().map(|n| node_part[n.node as usize]).collect();
        Part {
            w,
            id,
            node_part,
            port_part,
            nic_part,
            log: WindowLog::default(),
            flows_started: 0,
            instant: (Time::NEVER, 0),
            error: None,
        }
    }

    /// Hand what the last window produced to the settling threads: the log
    /// (swapped with `out`'s old one, to reuse it), the table rows and
    /// samples, the error, and the counters that say whether a flow may end.
    pub fn publish(&mut self, out: &mut super::merge::Published) {
        std::mem::swap(&mut self.log, &mut out.log);
        let w = &mut self.w;
        out.flows.append(&mut w.rec.flows);
        out.pfc_events.append(&mut w.rec.pfc_events);
        out.samples = std::mem::take(&mut w.part.as_mut().expect("a partition").samples);
        out.error = self.error.take();
        out.flows_started = self.flows_started;
        out.first_sent = w.stats.data_payload_first_sent;
    }

    /// Process every event before `end`, numbering what they schedule from
    /// [`PROVISIONAL`] on. Stops at the first error (kept in `error`).
    pub fn run_window(&mut self, end: Time) {
        self.log.clear();
        let Some(last) = end.0.checked_sub(1).map(Time) else {
            return;
        };
        while let Some((t, seq, popped)) = self.w.q.pop_packed_through(last) {
            if t == self.instant.0 {
                self.instant.1 += 1;
                if self.instant.1 > STUCK_EVENTS {
                    self.error = Some(RunError::Stuck {
                        at: t,
                        events: self.instant.1,
                        last: format!("{:?}", popped.unpacked()),
                    });
                    return;
                }
            } else {
                self.instant = (t, 1);
            }
            self.step(t, seq, popped);
            if self.w.error.is_some() {
                self.error = self.w.error.take();
                return;
            }
        }
    }

    fn step(&mut self, at: Time, seq: u64, popped: Popped<Event>) {
        self.w.prefetch_ahead();
        // Only a link crosses partitions, and a frame that crosses one is
        // posted, not queued here (`World::post_elsewhere`).
        if cfg!(debug_assertions) {
            let ev = popped.unpacked();
            assert!(
                self.owner(&ev).is_none_or(|o| o == self.id),
                "partition {} holds {ev:?}, which another owns",
                self.id
            );
        }
        let w = &mut self.w;
        let index = self.log.entries.len();
        let first = provisional(index);
        w.q.set_next_seq(first);
        let live0 = w.pkts.live();
        w.pkts.mark_peak();
        let (flows0, pfc0) = (w.rec.flows.len(), w.rec.pfc_events.len());
        // Arrivals and TxDones, nearly every event, straight from their word.
        let copies = match w.dispatch_hop(popped) {
            None => Copies::One,
            Some(ev) => {
                Self::dispatch_other(w, ev, self.id, &self.node_part, &mut self.flows_started)
            }
        };
        let reserves = w.q.next_seq() - first;
        assert!(
            reserves < 1 << CHILD_BITS && index < 1 << (50 - CHILD_BITS),
            "parallel run: an event scheduled {reserves} events, or a window holds {index} events; too many to number"
        );
        self.log.push(Logged {
            at,
            seq,
            reserves: reserves as u32,
            live_delta: (w.pkts.live() as i64 - live0 as i64) as i32,
            rise: (w.pkts.peak() - live0) as u32,
            flows: (w.rec.flows.len() - flows0) as u16,
            pfc: (w.rec.pfc_events.len() - pfc0) as u16,
            copies,
        });
    }

    /// Dispatch an event that is not an arrival or a TxDone: a flow or
    /// application start runs in every partition (only the requester's
    /// posts), samples in every partition for what it owns.
    fn dispatch_other(
        w: &mut World,
        ev: Event,
        id: u16,
        node_part: &[u16],
        flows_started: &mut u64,
    ) -> Copies {
        match ev {
            Event::FlowStart { flow } => {
                let requester = w.workload.flows[flow as usize].src;
                let owner = node_part[requester as usize] == id;
                if owner {
                    w.dispatch(ev);
                    *flows_started += 1;
                } else {
                    w.q.set_muted(true);
                    w.create_flow_qp(flow);
                    w.q.set_muted(false);
                }
                Copies::FlowStart { owner }
            }
            Event::AppStart { app } => {
                let requester = w.workload.apps[app as usize].src;
                let owner = node_part[requester as usize] == id;
                if owner {
                    w.dispatch(ev);
                } else {
                    w.q.set_muted(true);
                    w.create_app_qp(app);
                    w.q.set_muted(false);
                }
                Copies::FlowStart { owner }
            }
            Event::Sample => {
                w.dispatch(ev);
                Copies::Sample
            }
            Event::QlenSample => {
                w.dispatch(ev);
                Copies::QlenSample
            }
            _ => {
                w.dispatch(ev);
                Copies::One
            }
        }
    }
}

impl Part {
    /// Give the events this window scheduled their serial numbers (`base`:
    /// per logged event, the serial number of its first), and post the
    /// frames bound for another partition (all at or after `end`) to its
    /// inbox. Returns the earliest time posted (`u64::MAX`: none).
    pub fn renumber(&mut self, base: &[u64], end: Time, inbox: &[Mutex<Vec<Batch>>]) -> u64 {
        let w = &mut self.w;
        let to_serial = |s: u64| {
            if s < PROVISIONAL {
                s
            } else {
                let (parent, k) = parent_of(s);
                base[parent as usize] + k as u64
            }
        };
        w.q.renumber(to_serial);
        let ctx = w.part.as_mut().expect("a partition");
        for &p in &ctx.skipped {
            w.ports[p as usize].renumber_skipped_tx_done(&to_serial);
        }
        ctx.skipped.clear();
        let mut first = u64::MAX;
        for (to, batch) in ctx.outbox.iter_mut().enumerate() {
            if batch.frames.is_empty() {
                continue;
            }
            for f in batch.frames.iter_mut() {
                assert!(
                    f.at >= end,
                    "parallel run: a frame for partition {to} at {} inside the window ending {end}",
                    f.at
                );
                first = first.min(f.at.ps());
                f.seq = to_serial(f.seq);
            }
            // The next window's batch starts as large as this one: the
            // frames crossing a link change little from window to window,
            // and growing the vector anew each window cost a copy per doubling.
            let next = Batch::sized_like(batch);
            super::held(inbox[to].lock()).push(std::mem::replace(batch, next));
        }
        w.pkts.settle_lent();
        first
    }

    /// Which partition owns `ev`; `None` for an event every partition runs.
    fn owner(&self, ev: &Event) -> Option<u16> {
        let w = &self.w;
        match *ev {
            Event::TxDone { port } | Event::Arrive { port, .. } => {
                Some(self.port_part[port as usize])
            }
            Event::NicWake { nic } => Some(self.nic_part[nic as usize]),
            Event::QpTimer { qp, .. } => Some(self.node_part[w.qps[qp as usize].src_node as usize]),
            Event::AppPost { app } => {
                Some(self.node_part[w.workload.apps[app as usize].src as usize])
            }
            Event::FlowStart { .. }
            | Event::AppStart { .. }
            | Event::Sample
            | Event::QlenSample => None,
            other => unreachable!("a parallel run admits no {other:?} events"),
        }
    }

    /// Schedule what other partitions posted to this one.
    pub fn take_in(&mut self, batches: Vec<Batch>) {
        let w = &mut self.w;
        for b in batches {
            for (i, f) in b.frames.into_iter().enumerate() {
                let pkt = w.pkts.put_lent(f.packet, b.int.get(i), b.hdr.get(i));
                w.q.schedule_reserved(f.at, f.seq, Event::Arrive { port: f.port, pkt });
            }
        }
    }
}
