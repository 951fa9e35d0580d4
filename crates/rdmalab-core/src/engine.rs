//! The event queue: pending events ordered by (time, insertion sequence).
//!
//! Two events at the same picosecond run in the order they were scheduled
//! (FIFO). That rule, not the heap's internals, decides tie-breaks, so a run is
//! reproducible. The queue knows nothing about networks; the owner of an event
//! is encoded in the event value itself.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy)]
struct Entry<E> {
    at: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.cmp(&self.at).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// Width of a calendar bucket: 2^10 ps ≈ 1 ns. Chosen by measurement on the
/// 320-host benchmark (0.13 ns to 65 ns tried): packet events are dense, so
/// narrow buckets keep the heap of the current bucket tiny, while a short
/// ring keeps the buckets' memory in cache.
const BUCKET_SHIFT: u32 = 10;
/// Buckets in the ring: a horizon of 2048 × 1 ns ≈ 2.1 µs covers a 1 µs link
/// delay plus serialisation; later events (timeouts, flow starts, longer
/// links) wait in the far heap, which is correct, only slower.
const RING_BUCKETS: usize = 2048;

/// Buckets of up to this many events are sorted by [`rank_sort`]: most hold
/// 5 to 25 on the 320-host benchmark.
const RANK_SORT_MAX: usize = 32;

/// Sort `v` (distinct keys, at most [`RANK_SORT_MAX`]) by counting, for each
/// entry, the entries with a smaller key: that count is its place. The
/// n² compares have no data-dependent branch, where an insertion sort of
/// random times mispredicts about once per entry. A bucket already in
/// order is left as it is: with times in whole ns (ns-3's `tx_time`) most
/// buckets hold one instant, scheduled in sequence order.
#[inline]
fn rank_sort<T: Copy>(v: &mut [T], spare: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    let n = v.len();
    let mut keys = [0u64; RANK_SORT_MAX];
    for (k, e) in keys.iter_mut().zip(v.iter()) {
        *k = key(e);
    }
    let keys = &keys[..n];
    let in_order = keys.windows(2).fold(true, |ok, w| ok & (w[0] < w[1]));
    if in_order {
        return;
    }
    spare.clear();
    spare.extend_from_slice(v);
    for (i, &ki) in keys.iter().enumerate() {
        let rank: usize = keys.iter().map(|&kj| (kj < ki) as usize).sum();
        v[rank] = spare[i];
    }
    debug_assert!(
        v.windows(2).all(|w| key(&w[0]) < key(&w[1])),
        "keys not distinct"
    );
}

/// A hint that the value at `at` will be read soon: start loading its cache
/// line. It changes no result (the address may even be stale or out of
/// bounds: a prefetch never faults); a no-op off x86-64.
#[inline(always)]
pub fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads nothing architecturally and does not fault on
    // any address; SSE is in the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// A min-queue of events of type `E`.
///
/// A calendar queue: the current bucket's events are sorted once into a run
/// that is consumed in order (events scheduled into the current bucket later
/// go to a small heap, merged on pop), the next `RING_BUCKETS` buckets are
/// unsorted vectors, and events beyond that horizon wait in a heap. Packet
/// events are dense in time, so most work is a push onto a bucket and a
/// short sort. The order is exactly that of one heap keyed by (time, sequence).
pub struct EventQueue<E> {
    /// The current bucket's events, sorted by (time, seq), consumed from `run_pos`.
    run: Vec<Entry<E>>,
    run_pos: usize,
    /// Events scheduled into the current bucket after it was sorted.
    near: BinaryHeap<Entry<E>>,
    ring: Vec<Vec<Entry<E>>>,
    ring_len: usize,
    far: BinaryHeap<Entry<E>>,
    /// Absolute index of the bucket whose events are in `near`.
    cur: u64,
    next_seq: u64,
    now: Time,
    /// Sequence number of the event being processed (or of the last one).
    now_seq: u64,
    popped: u64,
    /// Drop what is scheduled (a partition replaying an event it does not
    /// own, see [`crate::parallel`]); sequence numbers are still taken.
    muted: bool,
    /// Ring buckets, and the far heap, that took an event since the last
    /// [`EventQueue::renumber`]: only they can hold provisional numbers.
    touched: [u64; RING_BUCKETS / 64],
    far_touched: bool,
    /// Scratch space for [`rank_sort`], kept to reuse its allocation.
    spare: Vec<Entry<E>>,
    /// Keep `touched` up to date: only a partition of a parallel run
    /// renumbers, so a serial run skips the bookkeeping.
    tracking: bool,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            run: Vec::with_capacity(1 << 10),
            run_pos: 0,
            near: BinaryHeap::with_capacity(1 << 10),
            ring: (0..RING_BUCKETS).map(|_| Vec::new()).collect(),
            ring_len: 0,
            far: BinaryHeap::new(),
            cur: 0,
            next_seq: 0,
            now: Time::ZERO,
            now_seq: 0,
            popped: 0,
            muted: false,
            touched: [0; RING_BUCKETS / 64],
            far_touched: false,
            tracking: false,
            spare: Vec::with_capacity(RANK_SORT_MAX),
        }
    }

    /// The time of the event being processed (or of the last one processed).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    #[inline]
    fn bucket_of(at: Time) -> u64 {
        at.0 >> BUCKET_SHIFT
    }

    /// Most events go to a ring bucket: that path is inlined into every
    /// caller, the rest is not.
    #[inline(always)]
    fn place(&mut self, e: Entry<E>) {
        let b = Self::bucket_of(e.at);
        // cur < b < cur + RING_BUCKETS, as one unsigned compare (a bucket at
        // or before `cur` wraps to a huge distance).
        if b.wrapping_sub(self.cur + 1) < RING_BUCKETS as u64 - 1 {
            let slot = (b as usize) & (RING_BUCKETS - 1);
            self.ring[slot].push(e);
            self.ring_len += 1;
            if self.tracking {
                self.touched[slot / 64] |= 1 << (slot % 64);
            }
        } else {
            self.place_off_ring(e);
        }
    }

    #[inline(never)]
    fn place_off_ring(&mut self, e: Entry<E>) {
        if Self::bucket_of(e.at) <= self.cur {
            self.near.push(e);
        } else {
            self.far.push(e);
            self.far_touched = true;
        }
    }

    /// Schedule `event` at `at`. Scheduling in the past is a logic error.
    #[inline]
    pub fn schedule(&mut self, at: Time, event: E) {
        let seq = self.reserve_seq();
        self.schedule_reserved(at, seq, event);
    }

    /// Take the next sequence number as [`EventQueue::schedule`] would, for
    /// an event that may never be scheduled: an owner that skips an event it
    /// can tell is void still keeps the order of every later event, and can
    /// schedule it after all with [`EventQueue::schedule_reserved`].
    #[inline]
    pub fn reserve_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Schedule `event` at `at` in the place of sequence number `seq`, taken
    /// earlier by [`EventQueue::reserve_seq`]; it must still lie ahead
    /// ([`EventQueue::is_ahead`]).
    #[inline]
    pub fn schedule_reserved(&mut self, at: Time, seq: u64, event: E) {
        debug_assert!(self.is_ahead(at, seq), "event scheduled in the past");
        if self.muted {
            return;
        }
        self.place(Entry { at, seq, event });
    }

    /// An event at (`at`, `seq`) would still come after the one being processed.
    #[inline]
    pub fn is_ahead(&self, at: Time, seq: u64) -> bool {
        (at, seq) > (self.now, self.now_seq) || self.popped == 0
    }

    /// Move the clock to (`at`, `seq`), where an event that was never
    /// scheduled (its owner knew it void) would have been processed last, if
    /// that is later than the last one processed. Nothing pending may be
    /// earlier.
    pub fn advance_clock(&mut self, at: Time, seq: u64) {
        if (at, seq) > (self.now, self.now_seq) {
            self.now = at;
            self.now_seq = seq;
        }
    }

    #[inline]
    fn current_empty(&self) -> bool {
        self.run_pos >= self.run.len() && self.near.is_empty()
    }

    /// Move to the next bucket that holds events; false if there are none.
    fn advance(&mut self) -> bool {
        while self.current_empty() {
            if self.ring_len == 0 {
                // Nothing within the horizon: jump straight to the earliest far event.
                let Some(first) = self.far.peek() else {
                    return false;
                };
                self.cur = Self::bucket_of(first.at);
            } else {
                self.cur += 1;
            }
            let horizon = self.cur + RING_BUCKETS as u64;
            while let Some(f) = self.far.peek() {
                if Self::bucket_of(f.at) >= horizon {
                    break;
                }
                let e = self.far.pop().expect("peeked");
                self.place(e);
            }
            let slot = (self.cur as usize) & (RING_BUCKETS - 1);
            if !self.ring[slot].is_empty() {
                // Swap the bucket in as the sorted run (reusing both allocations).
                self.run.clear();
                self.run_pos = 0;
                std::mem::swap(&mut self.run, &mut self.ring[slot]);
                self.ring_len -= self.run.len();
                if self.next_seq < 1 << (64 - BUCKET_SHIFT) {
                    // One bucket's times differ only in their low BUCKET_SHIFT
                    // bits: (those bits, seq) packed in one u64 orders exactly
                    // as (time, seq), with one compare instead of two.
                    const LOW: u64 = (1 << BUCKET_SHIFT) - 1;
                    let key = |e: &Entry<E>| ((e.at.0 & LOW) << (64 - BUCKET_SHIFT)) | e.seq;
                    if self.run.len() <= RANK_SORT_MAX {
                        rank_sort(&mut self.run, &mut self.spare, key);
                    } else {
                        self.run.sort_unstable_by_key(key);
                    }
                } else {
                    self.run
                        .sort_unstable_by(|a, b| a.at.cmp(&b.at).then(a.seq.cmp(&b.seq)));
                }
            }
        }
        true
    }

    /// The earliest of the sorted run's head and the late-insert heap's top.
    #[inline]
    fn take_next(&mut self) -> Option<Entry<E>> {
        let from_run = match (self.run.get(self.run_pos), self.near.peek()) {
            (Some(r), Some(n)) => (r.at, r.seq) < (n.at, n.seq),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        if from_run {
            let e = self.run[self.run_pos];
            self.run_pos += 1;
            Some(e)
        } else {
            self.near.pop()
        }
    }

    /// The event `k` places after the next one (0: the next one), from the
    /// current bucket's sorted run, else one of the next bucket's (which is
    /// not sorted yet). For prefetching the state it will touch, never for
    /// logic: an event scheduled later may still come before it.
    #[inline]
    pub fn upcoming(&self, k: usize) -> Option<&E> {
        let i = self.run_pos + k;
        if let Some(e) = self.run.get(i) {
            return Some(&e.event);
        }
        let next = (self.cur as usize + 1) & (RING_BUCKETS - 1);
        self.ring[next].get(i - self.run.len()).map(|e| &e.event)
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&mut self) -> Option<Time> {
        if self.current_empty() && !self.advance() {
            return None;
        }
        match (self.run.get(self.run_pos), self.near.peek()) {
            (Some(r), Some(n)) => Some(r.at.min(n.at)),
            (Some(r), None) => Some(r.at),
            (None, Some(n)) => Some(n.at),
            (None, None) => None,
        }
    }

    /// Remove the earliest event and advance the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if self.current_empty() && !self.advance() {
            return None;
        }
        let e = self.take_next()?;
        self.now = e.at;
        self.now_seq = e.seq;
        self.popped += 1;
        Some((e.at, e.event))
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }

    /// Count `n` events as processed (a parallel run's partitions, folded).
    pub fn set_processed(&mut self, n: u64) {
        self.popped = n;
    }

    pub fn pending(&self) -> usize {
        (self.run.len() - self.run_pos) + self.near.len() + self.ring_len + self.far.len()
    }

    /// The (time, sequence) of the earliest pending event.
    pub fn peek_key(&mut self) -> Option<(Time, u64)> {
        if self.current_empty() && !self.advance() {
            return None;
        }
        match (self.run.get(self.run_pos), self.near.peek()) {
            (Some(r), Some(n)) => Some((r.at, r.seq).min((n.at, n.seq))),
            (Some(r), None) => Some((r.at, r.seq)),
            (None, Some(n)) => Some((n.at, n.seq)),
            (None, None) => None,
        }
    }

    /// The sequence number the next scheduled event will take.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Number the events scheduled from now on from `seq` (a partition of a
    /// parallel run numbers its own events provisionally, then renumbers).
    pub fn set_next_seq(&mut self, seq: u64) {
        self.next_seq = seq;
    }

    /// Remember from now on which buckets take events, so that
    /// [`EventQueue::renumber`] visits only those; until then it visits all.
    pub fn track_renumbering(&mut self) {
        if !self.tracking {
            self.tracking = true;
            self.touched = [u64::MAX; RING_BUCKETS / 64];
            self.far_touched = true;
        }
    }

    /// Events scheduled now are dropped.
    pub fn is_muted(&self) -> bool {
        self.muted
    }

    /// Drop (true) or keep (false) the events scheduled from now on.
    pub fn set_muted(&mut self, muted: bool) {
        self.muted = muted;
    }

    /// Renumber the pending events scheduled since the last call, and the
    /// clock's own sequence number, by `renumber`, which must keep their
    /// order: it maps provisional numbers onto the serial run's, one
    /// increasing map above every older number, and leaves older numbers as
    /// they are. So no heap or bucket needs reordering.
    pub fn renumber(&mut self, mut renumber: impl FnMut(u64) -> u64) {
        self.track_renumbering();
        self.now_seq = renumber(self.now_seq);
        for e in &mut self.run[self.run_pos..] {
            e.seq = renumber(e.seq);
        }
        let mut heap = |h: &mut BinaryHeap<Entry<E>>| {
            let mut v = std::mem::take(h).into_vec();
            for e in &mut v {
                e.seq = renumber(e.seq);
            }
            // The map keeps the order, so this finds a heap and moves nothing.
            *h = BinaryHeap::from(v);
        };
        if !self.near.is_empty() {
            heap(&mut self.near);
        }
        if std::mem::take(&mut self.far_touched) {
            heap(&mut self.far);
        }
        for w in 0..self.touched.len() {
            let mut bits = std::mem::take(&mut self.touched[w]);
            while bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                for e in &mut self.ring[slot] {
                    e.seq = renumber(e.seq);
                }
            }
        }
    }

    /// Take every pending event out, in no particular order.
    pub fn drain_all(&mut self) -> Vec<(Time, u64, E)> {
        let mut out: Vec<(Time, u64, E)> = Vec::with_capacity(self.pending());
        out.extend(
            self.run
                .drain(self.run_pos..)
                .map(|e| (e.at, e.seq, e.event)),
        );
        self.run.clear();
        self.run_pos = 0;
        out.extend(self.near.drain().map(|e| (e.at, e.seq, e.event)));
        for b in &mut self.ring {
            out.extend(b.drain(..).map(|e| (e.at, e.seq, e.event)));
        }
        self.ring_len = 0;
        out.extend(self.far.drain().map(|e| (e.at, e.seq, e.event)));
        out
    }

    /// Pending events in no particular order (for end-of-run accounting).
    pub fn iter_pending(&self) -> impl Iterator<Item = &E> {
        self.run[self.run_pos..]
            .iter()
            .chain(self.near.iter())
            .chain(self.ring.iter().flat_map(|b| b.iter()))
            .chain(self.far.iter())
            .map(|e| &e.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prefetch hint names the events that will in fact come next while
    /// they are in the current bucket, and events of the next bucket after it.
    #[test]
    fn upcoming_names_the_events_that_come_next() {
        let mut q = EventQueue::new();
        // Two buckets of 1024 ps (5 events, then 3), times shuffled within each.
        for (i, t) in [700u64, 100, 1500, 300, 1100, 900, 1300, 500]
            .iter()
            .enumerate()
        {
            q.schedule(Time(2048 + t), i);
        }
        let mut order = Vec::new();
        let mut hints = Vec::new();
        while let Some((_, e)) = q.pop() {
            order.push(e);
            hints.push([q.upcoming(0).copied(), q.upcoming(1).copied()]);
        }
        let second_bucket = &order[5..];
        for (i, hint) in hints.iter().enumerate() {
            for (k, &h) in hint.iter().enumerate() {
                let at = i + 1 + k;
                if at < 5 || i >= 5 {
                    // Sorted in the current bucket: exact.
                    assert_eq!(order.get(at).copied(), h, "{k} after event {i}");
                } else {
                    let h = h.expect("the next bucket's events");
                    assert!(second_bucket.contains(&h), "{k} after event {i}");
                }
            }
        }
    }

    #[test]
    fn events_come_out_in_time_order() {
        let mut q = EventQueue::new();
        q.schedule(Time(30), 'c');
        q.schedule(Time(10), 'a');
        q.schedule(Time(20), 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c']);
    }

    #[test]
    fn equal_times_run_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..100u32 {
            q.schedule(Time(5), i);
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn the_calendar_gives_the_same_order_as_one_heap() {
        // Random schedules spanning the bucket width, the ring horizon and beyond,
        // with events scheduled while popping: compare against a plain heap.
        let mut rng = crate::rng::RngStream::new(5, "engine-test");
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        let mut out_q = Vec::new();
        let mut out_ref = Vec::new();
        let spans = [10u64, 10_000, 50_000_000, 2_000_000_000];
        for i in 0..2000u32 {
            let at = Time(rng.below(spans[(i % 4) as usize]));
            q.schedule(at, i);
            reference.push(Entry { at, seq, event: i });
            seq += 1;
        }
        let mut next_id = 2000u32;
        while let Some((t, e)) = q.pop() {
            out_q.push((t, e));
            let r = reference.pop().unwrap();
            out_ref.push((r.at, r.event));
            if next_id < 6000 && rng.below(2) == 0 {
                let at = Time(t.0 + rng.below(spans[(next_id % 4) as usize]));
                q.schedule(at, next_id);
                reference.push(Entry {
                    at,
                    seq,
                    event: next_id,
                });
                seq += 1;
                next_id += 1;
            }
        }
        assert!(reference.is_empty());
        assert_eq!(out_q, out_ref);
    }

    #[test]
    fn the_rank_sort_orders_as_a_sort() {
        let mut rng = crate::rng::RngStream::new(9, "rank-sort-test");
        let mut spare = Vec::new();
        for n in 0..=RANK_SORT_MAX {
            for _ in 0..50 {
                // Distinct keys (as (time, seq) keys are), some sharing their time bits.
                let mut v: Vec<u64> = (0..n as u64)
                    .map(|i| (rng.below(4) << 60) | (rng.below(1 << 20) << 8) | i)
                    .collect();
                let mut want = v.clone();
                want.sort_unstable();
                rank_sort(&mut v, &mut spare, |&k| k);
                assert_eq!(v, want, "n = {n}");
                // In order but for one pair: the in-order shortcut must not take it.
                if n >= 2 {
                    let i = rng.below(n as u64 - 1) as usize;
                    let mut v = want.clone();
                    v.swap(i, i + 1);
                    rank_sort(&mut v, &mut spare, |&k| k);
                    assert_eq!(v, want, "n = {n}, pair {i} swapped");
                }
            }
        }
    }

    #[test]
    fn dense_buckets_of_every_size_come_out_in_order() {
        // Events a few hundred ps apart, rescheduled as they run, so that the
        // 1 ns buckets hold from one to about fifty events (both sorts), with
        // many exact ties: compare against a plain heap.
        let mut rng = crate::rng::RngStream::new(13, "dense-bucket-test");
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        let push = |q: &mut EventQueue<u32>,
                    reference: &mut BinaryHeap<Entry<u32>>,
                    seq: &mut u64,
                    at: Time,
                    ev: u32| {
            q.schedule(at, ev);
            reference.push(Entry {
                at,
                seq: *seq,
                event: ev,
            });
            *seq += 1;
        };
        let mut next = 0u32;
        for _ in 0..400 {
            let at = Time(1_000 + rng.below(40_000) / 64 * 64);
            push(&mut q, &mut reference, &mut seq, at, next);
            next += 1;
        }
        let mut sizes = std::collections::BTreeSet::new();
        let (mut bucket, mut in_bucket) = (u64::MAX, 0usize);
        while let Some((t, e)) = q.pop() {
            let r = reference.pop().unwrap();
            assert_eq!((t, e), (r.at, r.event));
            if t.0 >> BUCKET_SHIFT != bucket {
                sizes.insert(in_bucket);
                (bucket, in_bucket) = (t.0 >> BUCKET_SHIFT, 0);
            }
            in_bucket += 1;
            if next < 40_000 {
                // Now and then a crowded stretch: buckets beyond the rank sort's.
                let spread = if next % 8_000 < 6_000 { 30_000 } else { 6_000 };
                let at = Time(t.0 + 2_000 + rng.below(spread) / 128 * 128);
                push(&mut q, &mut reference, &mut seq, at, next);
                next += 1;
            }
        }
        assert!(reference.is_empty());
        assert!(sizes.range(2..=RANK_SORT_MAX).count() > 20, "{sizes:?}");
        assert!(sizes.range(RANK_SORT_MAX + 1..).count() > 0, "{sizes:?}");
    }

    #[test]
    fn renumbering_sees_each_new_event_once_and_keeps_the_order() {
        // As a partition of a parallel run uses it: each window schedules
        // with provisional numbers, renumbers them onto serial ones, then
        // runs. Over 8 µs the ring's buckets are emptied and
        // reused, and some events wait in the far heap.
        const PROV: u64 = 1 << 40;
        let mut rng = crate::rng::RngStream::new(21, "renumber-test");
        let mut q = EventQueue::new();
        q.track_renumbering();
        let mut pending: Vec<(Time, u64, u32)> = Vec::new();
        let (mut serial, mut next_ev) = (0u64, 0u32);
        let mut now = 0u64;
        for window in 0..80 {
            q.set_next_seq(PROV);
            let k = rng.below(300);
            let mut fresh = Vec::new();
            for i in 0..k {
                // A 512 ps grid: many ties, broken by the numbers.
                let at = Time(now + 512 * (1 + rng.below(6_000)));
                q.schedule(at, next_ev);
                fresh.push((at, serial + i, next_ev));
                next_ev += 1;
            }
            let mut seen = Vec::new();
            q.renumber(|s| {
                if s >= PROV {
                    seen.push(s - PROV);
                    serial + (s - PROV)
                } else {
                    s
                }
            });
            seen.sort_unstable();
            assert_eq!(seen, (0..k).collect::<Vec<_>>(), "window {window}");
            pending.extend(fresh);
            serial += k;
            pending.sort_unstable_by_key(|p| (p.0, p.1));
            now += 100_000;
            let due = pending.partition_point(|p| p.0 .0 <= now);
            for want in pending.drain(..due) {
                assert_eq!(q.peek_key(), Some((want.0, want.1)), "window {window}");
                assert_eq!(q.pop(), Some((want.0, want.2)));
            }
        }
        assert!(now > 2 * RING_BUCKETS as u64 * (1 << BUCKET_SHIFT));
    }

    #[test]
    fn a_reserved_place_keeps_the_order_the_event_would_have_had() {
        let mut q = EventQueue::new();
        q.schedule(Time(5), 'a');
        let r = q.reserve_seq(); // as if 'x' were scheduled at 10 now
        q.schedule(Time(10), 'b');
        assert_eq!(q.pop(), Some((Time(5), 'a')));
        assert!(q.is_ahead(Time(10), r));
        q.schedule_reserved(Time(10), r, 'x');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['x', 'b']);
        assert!(!q.is_ahead(Time(10), r), "its place has passed");
        q.advance_clock(Time(12), r + 5);
        assert_eq!(q.now(), Time(12));
    }

    #[test]
    fn clock_advances_with_pops() {
        let mut q = EventQueue::new();
        q.schedule(Time(42), ());
        q.pop();
        assert_eq!(q.now(), Time(42));
        assert_eq!(q.processed(), 1);
    }
}
