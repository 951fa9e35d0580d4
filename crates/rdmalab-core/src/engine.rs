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
    // The keys with their top bit flipped, so that signed compares order them
    // as unsigned ones do: AVX2 compares only signed lanes.
    let mut keys = [0i64; RANK_SORT_MAX];
    for (k, e) in keys.iter_mut().zip(v.iter()) {
        *k = (key(e) ^ (1 << 63)) as i64;
    }
    let in_order = keys[..n].windows(2).fold(true, |ok, w| ok & (w[0] < w[1]));
    if in_order {
        return;
    }
    spare.clear();
    spare.extend_from_slice(v);
    let mut ranks = [0u64; RANK_SORT_MAX];
    ranks_of(&keys, n, &mut ranks);
    for (i, &r) in ranks[..n].iter().enumerate() {
        v[r as usize] = spare[i];
    }
    debug_assert!(
        v.windows(2).all(|w| key(&w[0]) < key(&w[1])),
        "keys not distinct"
    );
}

/// `ranks[i]`: how many of `keys[..n]` are below `keys[i]`, for `i < n`.
/// Four keys at a time where the CPU has AVX2: the same counts, so the same
/// order on any machine, for about 25 fewer instructions per event on (b).
#[inline(always)]
fn ranks_of(keys: &[i64; RANK_SORT_MAX], n: usize, ranks: &mut [u64; RANK_SORT_MAX]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { ranks_avx2(keys, n, ranks) };
        return;
    }
    ranks_scalar(keys, n, ranks);
}

/// [`ranks_of`] one key at a time.
#[inline(always)]
fn ranks_scalar(keys: &[i64; RANK_SORT_MAX], n: usize, ranks: &mut [u64; RANK_SORT_MAX]) {
    for (i, &ki) in keys[..n].iter().enumerate() {
        ranks[i] = keys[..n].iter().map(|&kj| (kj < ki) as u64).sum();
    }
}

/// [`ranks_of`] four keys at a time: for keys `i..i + 4` and every `j`,
/// subtract the compare's all-ones lanes where `keys[j]` is below.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn ranks_avx2(keys: &[i64; RANK_SORT_MAX], n: usize, ranks: &mut [u64; RANK_SORT_MAX]) {
    use std::arch::x86_64::*;
    const _: () = assert!(RANK_SORT_MAX % 4 == 0);
    let mut i = 0;
    while i < n {
        // SAFETY: i + 4 <= RANK_SORT_MAX (i < n <= RANK_SORT_MAX, both multiples of 4);
        // lanes past n hold keys of no entry, and their ranks are not read.
        unsafe {
            let a = _mm256_loadu_si256(keys.as_ptr().add(i) as *const __m256i);
            let mut acc = _mm256_setzero_si256();
            for &kj in &keys[..n] {
                acc = _mm256_sub_epi64(acc, _mm256_cmpgt_epi64(a, _mm256_set1_epi64x(kj)));
            }
            _mm256_storeu_si256(ranks.as_mut_ptr().add(i) as *mut __m256i, acc);
        }
        i += 4;
    }
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

/// An event that usually fits in one 64-bit word. The ring and the sorted
/// run hold such words, so that a queued event takes 16 bytes (its time's
/// low bits and sequence number in one word, the event in the other), not
/// 32: with 32, pushes onto the ring were nearly all of (b)'s writes that
/// missed a 2 MB cache (cachegrind). An event that does not fit (`pack`
/// gives `None`) waits in a heap instead, which keeps the order and is
/// only slower.
pub trait Packed: Copy {
    /// The event as one word, if it fits.
    fn pack(self) -> Option<u64>;
    /// The event [`Packed::pack`] gave `word` for.
    fn unpack(word: u64) -> Self;
}

/// Bits of a slot's key below the time's low bits: the sequence number.
const SEQ_BITS: u32 = 64 - BUCKET_SHIFT;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// A time's bits within its bucket.
const LOW_MASK: u64 = (1 << BUCKET_SHIFT) - 1;

/// A packed event in a ring bucket or the sorted run. One bucket's times
/// differ only in their low [`BUCKET_SHIFT`] bits, so (those bits, seq) in
/// one word orders exactly as (time, seq), with one compare.
#[derive(Clone, Copy)]
struct Slot {
    key: u64,
    word: u64,
}

impl Slot {
    #[inline]
    fn seq(self) -> u64 {
        self.key & SEQ_MASK
    }

    /// Its time, given the bucket it is in.
    #[inline]
    fn at(self, bucket: u64) -> Time {
        Time((bucket << BUCKET_SHIFT) | (self.key >> SEQ_BITS))
    }
}

/// An event as [`EventQueue::pop_packed`] gives it.
#[derive(Clone, Copy, Debug)]
pub enum Popped<E> {
    /// From the ring: the word [`Packed::pack`] made of it.
    Packed(u64),
    /// From a heap: the event itself.
    Wide(E),
}

impl<E: Packed> Popped<E> {
    /// The event itself.
    pub fn unpacked(self) -> E {
        match self {
            Popped::Packed(w) => E::unpack(w),
            Popped::Wide(e) => e,
        }
    }
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
    /// The current bucket's events, sorted by key, consumed from `run_pos`.
    run: Vec<Slot>,
    run_pos: usize,
    /// Events of the current bucket that are not in `run`: scheduled after
    /// it was sorted, or too wide for a slot.
    near: BinaryHeap<Entry<E>>,
    ring: Vec<Vec<Slot>>,
    ring_len: usize,
    /// Events beyond the ring's horizon that fit in a slot.
    far: BinaryHeap<Entry<E>>,
    /// Events after the current bucket that do not fit in a slot: they move
    /// to `near` when their bucket comes.
    wide: BinaryHeap<Entry<E>>,
    /// Absolute index of the bucket whose events are in `run` and `near`.
    cur: u64,
    next_seq: u64,
    now: Time,
    /// Sequence number of the event being processed (or of the last one).
    now_seq: u64,
    popped: u64,
    /// Drop what is scheduled (a partition replaying an event it does not
    /// own, see [`crate::parallel`]); sequence numbers are still taken.
    muted: bool,
    /// Ring buckets, and the far and wide heaps, that took an event since
    /// the last [`EventQueue::renumber`]: only they can hold provisional numbers.
    touched: [u64; RING_BUCKETS / 64],
    far_touched: bool,
    wide_touched: bool,
    /// Scratch space for [`rank_sort`], kept to reuse its allocation.
    spare: Vec<Slot>,
    /// Keep `touched` up to date: only a partition of a parallel run
    /// renumbers, so a serial run skips the bookkeeping.
    tracking: bool,
}

impl<E: Packed> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Packed> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            run: Vec::with_capacity(1 << 10),
            run_pos: 0,
            near: BinaryHeap::with_capacity(1 << 10),
            ring: (0..RING_BUCKETS).map(|_| Vec::new()).collect(),
            ring_len: 0,
            far: BinaryHeap::new(),
            wide: BinaryHeap::new(),
            cur: 0,
            next_seq: 0,
            now: Time::ZERO,
            now_seq: 0,
            popped: 0,
            muted: false,
            touched: [0; RING_BUCKETS / 64],
            far_touched: false,
            wide_touched: false,
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

    /// `e` as a slot, if its event packs and its number fits the key.
    #[inline(always)]
    fn slot_of(e: &Entry<E>) -> Option<Slot> {
        let word = e.event.pack()?;
        (e.seq <= SEQ_MASK).then_some(Slot {
            key: ((e.at.0 & LOW_MASK) << SEQ_BITS) | e.seq,
            word,
        })
    }

    /// The event of a slot of the current bucket, as an entry.
    #[inline(always)]
    fn entry_of(&self, s: Slot) -> Entry<E> {
        Entry {
            at: s.at(self.cur),
            seq: s.seq(),
            event: E::unpack(s.word),
        }
    }

    /// Most events go to a ring bucket: that path is inlined into every
    /// caller, the rest is not.
    #[inline(always)]
    fn place(&mut self, e: Entry<E>) {
        let b = Self::bucket_of(e.at);
        // cur < b < cur + RING_BUCKETS, as one unsigned compare (a bucket at
        // or before `cur` wraps to a huge distance).
        if b.wrapping_sub(self.cur + 1) < RING_BUCKETS as u64 - 1 {
            if let Some(s) = Self::slot_of(&e) {
                let slot = (b as usize) & (RING_BUCKETS - 1);
                self.ring[slot].push(s);
                self.ring_len += 1;
                if self.tracking {
                    self.touched[slot / 64] |= 1 << (slot % 64);
                }
                return;
            }
        }
        self.place_off_ring(e);
    }

    #[inline(never)]
    fn place_off_ring(&mut self, e: Entry<E>) {
        if Self::bucket_of(e.at) <= self.cur {
            self.near.push(e);
        } else if Self::slot_of(&e).is_some() {
            self.far.push(e);
            self.far_touched = true;
        } else {
            self.wide.push(e);
            self.wide_touched = true;
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

    /// Move the clock to `at`, after every event processed so far, if that
    /// is later: simulated time that passed with no event in it (a run that
    /// reached its stop time has simulated up to it). Nothing pending may
    /// be at or before `at`.
    pub fn advance_clock_to(&mut self, at: Time) {
        if at > self.now {
            self.now = at;
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
                // Nothing within the horizon: jump straight to the earliest
                // far or wide event.
                let first = match (self.far.peek(), self.wide.peek()) {
                    (Some(f), Some(w)) => f.at.min(w.at),
                    (Some(f), None) => f.at,
                    (None, Some(w)) => w.at,
                    (None, None) => return false,
                };
                self.cur = Self::bucket_of(first);
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
            while let Some(w) = self.wide.peek() {
                if Self::bucket_of(w.at) > self.cur {
                    break;
                }
                let e = self.wide.pop().expect("peeked");
                self.near.push(e);
            }
            let slot = (self.cur as usize) & (RING_BUCKETS - 1);
            if !self.ring[slot].is_empty() {
                // Swap the bucket in as the sorted run (reusing both allocations).
                self.run.clear();
                self.run_pos = 0;
                std::mem::swap(&mut self.run, &mut self.ring[slot]);
                self.ring_len -= self.run.len();
                if self.run.len() <= RANK_SORT_MAX {
                    rank_sort(&mut self.run, &mut self.spare, |s| s.key);
                } else {
                    self.run.sort_unstable_by_key(|s| s.key);
                }
            }
        }
        true
    }

    /// Whether the sorted run's head, not the heap's top, comes next (both
    /// of the current bucket; one of them is there).
    #[inline(always)]
    fn run_first(&self) -> Option<bool> {
        match (self.run.get(self.run_pos), self.near.peek()) {
            (Some(r), Some(n)) => Some((r.at(self.cur), r.seq()) < (n.at, n.seq)),
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (None, None) => None,
        }
    }

    /// The packed word ([`Packed::pack`]) of the event `k` places after the
    /// next one (0: the next one), from the current bucket's sorted run, else
    /// one of the next bucket's (which is not sorted yet). For prefetching
    /// the state it will touch, never for logic: an event scheduled later may
    /// still come before it, and events waiting in a heap are not seen.
    #[inline(always)]
    pub fn upcoming(&self, k: usize) -> Option<u64> {
        let i = self.run_pos + k;
        if let Some(s) = self.run.get(i) {
            return Some(s.word);
        }
        let next = (self.cur as usize + 1) & (RING_BUCKETS - 1);
        self.ring[next].get(i - self.run.len()).map(|s| s.word)
    }

    /// (time, sequence) of the earliest pending event.
    #[inline(always)]
    fn head_key(&mut self) -> Option<(Time, u64)> {
        if self.current_empty() && !self.advance() {
            return None;
        }
        if self.run_first()? {
            let r = self.run[self.run_pos];
            Some((r.at(self.cur), r.seq()))
        } else {
            self.near.peek().map(|n| (n.at, n.seq))
        }
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&mut self) -> Option<Time> {
        self.head_key().map(|(at, _)| at)
    }

    /// [`EventQueue::pop`], but an event from the ring comes as its packed
    /// word: the caller can act on the word's kind directly, one
    /// unpredictable branch per event instead of one to unpack and another
    /// to act.
    #[inline(always)]
    pub fn pop_packed(&mut self) -> Option<(Time, Popped<E>)> {
        self.pop_packed_through(Time::NEVER)
            .map(|(at, _, ev)| (at, ev))
    }

    /// [`EventQueue::pop_packed`] if the earliest event is at `last` or
    /// before, with its sequence number; else `None`, and nothing moves.
    /// The event loops' one call per event: a peek and then a pop chose
    /// the head twice.
    #[inline(always)]
    pub fn pop_packed_through(&mut self, last: Time) -> Option<(Time, u64, Popped<E>)> {
        if self.current_empty() && !self.advance() {
            return None;
        }
        let (at, seq, ev) = if self.run_first()? {
            let s = self.run[self.run_pos];
            let at = s.at(self.cur);
            if at > last {
                return None;
            }
            self.run_pos += 1;
            (at, s.seq(), Popped::Packed(s.word))
        } else {
            if self.near.peek()?.at > last {
                return None;
            }
            let e = self.near.pop()?;
            (e.at, e.seq, Popped::Wide(e.event))
        };
        self.now = at;
        self.now_seq = seq;
        self.popped += 1;
        Some((at, seq, ev))
    }

    /// Remove the earliest event and advance the clock to its time:
    /// [`EventQueue::pop_packed`], unpacked.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let (at, p) = self.pop_packed()?;
        Some((at, p.unpacked()))
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
        (self.run.len() - self.run_pos)
            + self.near.len()
            + self.ring_len
            + self.far.len()
            + self.wide.len()
    }

    /// The (time, sequence) of the earliest pending event.
    pub fn peek_key(&mut self) -> Option<(Time, u64)> {
        self.head_key()
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
            self.wide_touched = true;
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
    /// they are. So no heap or bucket needs reordering. (A slot's new
    /// number is never larger than its old one, so it still fits the key.)
    pub fn renumber(&mut self, mut renumber: impl FnMut(u64) -> u64) {
        self.track_renumbering();
        self.now_seq = renumber(self.now_seq);
        let mut slot = |s: &mut Slot| {
            let seq = renumber(s.seq());
            debug_assert!(seq <= s.seq(), "renumbering raised a number");
            s.key = (s.key & !SEQ_MASK) | seq;
        };
        for s in &mut self.run[self.run_pos..] {
            slot(s);
        }
        for w in 0..self.touched.len() {
            let mut bits = std::mem::take(&mut self.touched[w]);
            while bits != 0 {
                let b = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                for s in &mut self.ring[b] {
                    slot(s);
                }
            }
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
        if std::mem::take(&mut self.wide_touched) {
            heap(&mut self.wide);
        }
    }

    /// The bucket that ring slot `slot` holds: the one after `cur` that maps
    /// to it (the current bucket's own slot is always empty).
    fn bucket_in_slot(&self, slot: usize) -> u64 {
        let ahead = (slot as u64).wrapping_sub(self.cur) & (RING_BUCKETS as u64 - 1);
        self.cur + ahead
    }

    /// Take every pending event out, in no particular order.
    pub fn drain_all(&mut self) -> Vec<(Time, u64, E)> {
        let mut out: Vec<(Time, u64, E)> = Vec::with_capacity(self.pending());
        for i in self.run_pos..self.run.len() {
            let e = self.entry_of(self.run[i]);
            out.push((e.at, e.seq, e.event));
        }
        self.run.clear();
        self.run_pos = 0;
        out.extend(self.near.drain().map(|e| (e.at, e.seq, e.event)));
        for slot in 0..RING_BUCKETS {
            let bucket = self.bucket_in_slot(slot);
            for s in self.ring[slot].drain(..) {
                out.push((s.at(bucket), s.seq(), E::unpack(s.word)));
            }
        }
        self.ring_len = 0;
        out.extend(self.far.drain().map(|e| (e.at, e.seq, e.event)));
        out.extend(self.wide.drain().map(|e| (e.at, e.seq, e.event)));
        out
    }

    /// Pending events in no particular order (for end-of-run accounting).
    pub fn iter_pending(&self) -> impl Iterator<Item = E> + '_ {
        self.run[self.run_pos..]
            .iter()
            .chain(self.ring.iter().flat_map(|b| b.iter()))
            .map(|s| E::unpack(s.word))
            .chain(
                self.near
                    .iter()
                    .chain(self.far.iter())
                    .chain(self.wide.iter())
                    .map(|e| e.event),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test events: a `u32` fits in a word unless it is a multiple of five,
    /// so that every test below also runs events through the heaps that
    /// hold what does not fit (the ring's `wide` path) beside the ring.
    impl Packed for u32 {
        fn pack(self) -> Option<u64> {
            (self % 5 != 0).then_some(self as u64)
        }
        fn unpack(word: u64) -> u32 {
            word as u32
        }
    }

    impl Packed for usize {
        fn pack(self) -> Option<u64> {
            Some(self as u64)
        }
        fn unpack(word: u64) -> usize {
            word as usize
        }
    }

    impl Packed for char {
        fn pack(self) -> Option<u64> {
            Some(self as u64)
        }
        fn unpack(word: u64) -> char {
            char::from_u32(word as u32).expect("packed from a char")
        }
    }

    impl Packed for () {
        fn pack(self) -> Option<u64> {
            Some(0)
        }
        fn unpack(_: u64) {}
    }

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
            hints.push([
                q.upcoming(0).map(usize::unpack),
                q.upcoming(1).map(usize::unpack),
            ]);
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
                // Distinct keys (as (time, seq) keys are), some sharing their time bits,
                // half with the top bit set (AVX2 compares signed lanes).
                let mut v: Vec<u64> = (0..n as u64)
                    .map(|i| (rng.below(16) << 60) | (rng.below(1 << 20) << 8) | i)
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
    fn both_ways_of_ranking_give_each_key_its_place() {
        // On a CPU with AVX2 the sort takes the vector way only; the other
        // must hold too, for CPUs without it.
        let mut rng = crate::rng::RngStream::new(10, "ranks-test");
        for n in 0..=RANK_SORT_MAX {
            for _ in 0..50 {
                let mut keys = [0i64; RANK_SORT_MAX];
                for (i, k) in keys.iter_mut().enumerate() {
                    *k = ((rng.below(1 << 20) << 40) | i as u64) as i64 - (1 << 59);
                }
                let mut sorted = keys[..n].to_vec();
                sorted.sort_unstable();
                let want: Vec<u64> = keys[..n]
                    .iter()
                    .map(|k| sorted.binary_search(k).unwrap() as u64)
                    .collect();
                let mut ranks = [0u64; RANK_SORT_MAX];
                ranks_scalar(&keys, n, &mut ranks);
                assert_eq!(ranks[..n], want[..], "scalar, n = {n}");
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut ranks = [0u64; RANK_SORT_MAX];
                    // SAFETY: AVX2 is there, checked just above.
                    unsafe { ranks_avx2(&keys, n, &mut ranks) };
                    assert_eq!(ranks[..n], want[..], "AVX2, n = {n}");
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
    fn numbers_too_large_for_a_slot_keep_their_order() {
        // A number at or above 2^54 does not fit a slot's key beside the
        // time's low bits: such events wait in a heap, and must still come
        // out in (time, number) order among those that fit.
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut rng = crate::rng::RngStream::new(31, "large-seq-test");
        for (i, first) in [0u64, SEQ_MASK - 20, SEQ_MASK + 100, 1 << 62]
            .into_iter()
            .enumerate()
        {
            q.set_next_seq(first);
            for k in 0..40u64 {
                let at = Time(1_000 + rng.below(8) * 512);
                let ev = (100 * i as u64 + k + 1) as u32 * 7 % 1000 * 5 + 1;
                reference.push(Entry {
                    at,
                    seq: first + k,
                    event: ev,
                });
                q.schedule(at, ev);
            }
        }
        while let Some(r) = reference.pop() {
            assert_eq!(q.peek_key(), Some((r.at, r.seq)));
            assert_eq!(q.pop(), Some((r.at, r.event)));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn draining_gives_every_pending_event_with_its_time_and_number() {
        // Events in the sorted run, its late heap, ring buckets on either
        // side of the ring's wrap, the far heap and the wide heap.
        let mut q = EventQueue::new();
        let mut want = Vec::new();
        let schedule = |q: &mut EventQueue<u32>, want: &mut Vec<_>, at: u64, ev: u32| {
            want.push((Time(at), q.next_seq(), ev));
            q.schedule(Time(at), ev);
        };
        let start = (RING_BUCKETS as u64 - 3) << BUCKET_SHIFT;
        schedule(&mut q, &mut want, start, 1);
        for (i, at) in [
            start + 10,
            start + 700,
            start + 5_000,
            start + 1_500_000,
            start + 9_000_000,
        ]
        .into_iter()
        .enumerate()
        {
            schedule(&mut q, &mut want, at, 2 + i as u32 * 5); // fits
            schedule(&mut q, &mut want, at + 1, 5 + i as u32 * 5); // wide
        }
        assert_eq!(q.pop(), Some((Time(start), 1)));
        want.remove(0);
        schedule(&mut q, &mut want, start + 20, 3); // the current bucket's late heap
        let mut got = q.drain_all();
        got.sort_unstable_by_key(|g| (g.0, g.1));
        want.sort_unstable_by_key(|w| (w.0, w.1));
        assert_eq!(got, want);
        assert_eq!(q.pending(), 0);
    }

    #[test]
    fn popping_packed_gives_the_events_in_order_as_words_or_whole() {
        // Against a plain heap: ring events come as packed words, the rest
        // (u32 multiples of five do not pack) whole; the clock and the
        // count of events processed follow each pop.
        let mut rng = crate::rng::RngStream::new(41, "pop-packed-test");
        let mut b = EventQueue::new();
        let mut reference = BinaryHeap::new();
        for i in 0..3000u32 {
            let at = Time(rng.below(4_000_000));
            reference.push(Entry {
                at,
                seq: i as u64,
                event: i,
            });
            b.schedule(at, i);
        }
        let (mut packed, mut wide) = (0, 0);
        while let Some(Entry {
            at: t, event: e, ..
        }) = reference.pop()
        {
            let (u, p) = b.pop_packed().expect("as many events");
            let got = match p {
                Popped::Packed(w) => {
                    packed += 1;
                    u32::unpack(w)
                }
                Popped::Wide(e) => {
                    // Too wide, or scheduled into the first bucket, which
                    // was current then (the late-insert heap).
                    wide += 1;
                    assert!(e % 5 == 0 || u.0 >> BUCKET_SHIFT == 0, "{e} fits a word");
                    e
                }
            };
            assert_eq!((u, got), (t, e));
            assert_eq!((b.now(), b.processed()), (t, packed + wide));
        }
        assert!(b.pop_packed().is_none());
        assert!(packed > 2000 && wide > 500, "{packed} packed, {wide} wide");
    }

    #[test]
    fn popping_through_a_time_stops_before_the_first_later_event_and_moves_nothing() {
        // Ties at each bound (two events each at 1500, 3000 and 9000; the
        // even-numbered events are too wide for a word, so they wait in
        // heaps) and an event in the current bucket's late-insert heap:
        // each call hands out exactly the events at or
        // before its bound, with their numbers, in order; the call that
        // finds a later head leaves the clock, the count and the queue as
        // they were.
        let mut q = EventQueue::new();
        let times = [3000u64, 1500, 9000, 700, 1500, 3000, 9000, 2_000_000];
        for (i, &t) in times.iter().enumerate() {
            q.schedule(Time(t), i as u32 * 5 + (t % 2 == 0 && i % 2 == 1) as u32);
        }
        let mut order: Vec<(u64, u64)> = times
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i as u64))
            .collect();
        order.sort();
        let mut next = 0;
        for last in [
            0u64,
            700,
            1499,
            1500,
            1600,
            3000,
            8999,
            9000,
            1_999_999,
            u64::MAX,
        ] {
            while let Some((at, seq, _)) = q.pop_packed_through(Time(last)) {
                assert_eq!((at.0, seq), order[next], "bound {last}");
                assert!(at.0 <= last);
                next += 1;
                if next == 2 {
                    // Into the current bucket (1024 to 2047 ps), so into
                    // the late-insert heap, after the next bound (1600).
                    q.schedule(Time(2000), 99);
                    order.insert(3, (2000, 8));
                }
            }
            let held = (q.now(), q.processed(), q.pending());
            assert!(q.pop_packed_through(Time(last)).is_none());
            assert_eq!((q.now(), q.processed(), q.pending()), held);
            // Everything at or before the bound went, and only that.
            let head = q.peek_time().map(|t| t.0);
            assert!(head.is_none_or(|h| h > last), "bound {last}: {head:?} left");
            assert_eq!(head, order.get(next).map(|o| o.0), "bound {last}");
        }
        assert_eq!(next, times.len() + 1);
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
