//! A set-associative cache with LRU replacement, as the on-chip context
//! caches of an RNIC (QP contexts, memory translations, WQEs).
//!
//! Keys are 64-bit identifiers (a QP number, a QP and page, a QP and WQE
//! index); a key's set is chosen by a fixed mix of its bits, so the same
//! accesses give the same hits on every machine. Each set keeps its ways in
//! a doubly linked LRU list over one slot array: an access is O(1) whatever
//! the associativity, so a fully associative 10K-entry table costs what a
//! 4-way cache does.

use std::collections::HashMap;

/// Whether an access found its entry on chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    /// The entry was fetched in; `evicted` is the key it replaced, if the set was full.
    Miss {
        evicted: Option<u64>,
    },
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u64,
    prev: u32,
    next: u32,
}

/// An LRU cache of `sets × ways` entries.
#[derive(Clone, Debug)]
pub struct SetAssocCache {
    sets: u32,
    ways: u32,
    slots: Vec<Slot>,
    /// Per set: most and least recently used slot, and slots in use.
    head: Vec<u32>,
    tail: Vec<u32>,
    used: Vec<u32>,
    index: HashMap<u64, u32, BuildMix>,
    pub hits: u64,
    pub misses: u64,
    /// Set = key mod sets (hardware indexing by address or QPN bits)
    /// instead of a hash of the key.
    indexed: bool,
}

impl SetAssocCache {
    /// A cache whose set is the key modulo the number of sets, as hardware
    /// indexes by the low bits of an address or QPN: consecutive keys
    /// spread evenly over the sets.
    pub fn new_indexed(entries: u32, ways: u32) -> Self {
        SetAssocCache {
            indexed: true,
            ..Self::new(entries, ways)
        }
    }

    /// A cache of `entries` entries in sets of `ways` (`ways` ≥ `entries`:
    /// fully associative). `entries` must be at least 1.
    pub fn new(entries: u32, ways: u32) -> Self {
        assert!(entries >= 1, "a cache holds at least one entry");
        let ways = ways.clamp(1, entries);
        let sets = (entries / ways).max(1);
        let n = (sets * ways) as usize;
        SetAssocCache {
            sets,
            ways,
            slots: Vec::with_capacity(n.min(1 << 16)),
            head: vec![NONE; sets as usize],
            tail: vec![NONE; sets as usize],
            used: vec![0; sets as usize],
            index: HashMap::with_hasher(BuildMix),
            hits: 0,
            misses: 0,
            indexed: false,
        }
    }

    /// Entries the cache can hold.
    pub fn capacity(&self) -> u64 {
        self.sets as u64 * self.ways as u64
    }

    fn set_of(&self, key: u64) -> u32 {
        if self.indexed {
            return (key % self.sets as u64) as u32;
        }
        (mix(key) % self.sets as u64) as u32
    }

    /// Count `n` misses whose accesses the caller has shown to leave no
    /// trace in the cache (a later access replaces what they brought in).
    pub fn count_misses(&mut self, n: u64) {
        self.misses += n;
    }

    /// Whether `key` is cached, without touching its recency or the counters.
    pub fn contains(&self, key: u64) -> bool {
        self.index.contains_key(&key)
    }

    /// Look `key` up: a hit makes it most recently used; a miss brings it in,
    /// evicting the set's least recently used entry if the set is full.
    pub fn access(&mut self, key: u64) -> Lookup {
        let set = self.set_of(key);
        if let Some(&s) = self.index.get(&key) {
            self.hits += 1;
            self.unlink(set, s);
            self.push_front(set, s);
            return Lookup::Hit;
        }
        self.misses += 1;
        let (slot, evicted) = if self.used[set as usize] < self.ways {
            self.used[set as usize] += 1;
            self.slots.push(Slot {
                key,
                prev: NONE,
                next: NONE,
            });
            ((self.slots.len() - 1) as u32, None)
        } else {
            let victim = self.tail[set as usize];
            self.unlink(set, victim);
            let old = self.slots[victim as usize].key;
            self.index.remove(&old);
            self.slots[victim as usize].key = key;
            (victim, Some(old))
        };
        self.index.insert(key, slot);
        self.push_front(set, slot);
        Lookup::Miss { evicted }
    }

    /// Each set's keys, most recently used first: the whole state that
    /// decides later hits and evictions (which slot holds a key does not).
    #[cfg(test)]
    pub(crate) fn recency(&self) -> Vec<Vec<u64>> {
        (0..self.sets as usize)
            .map(|set| {
                let mut keys = Vec::new();
                let mut s = self.head[set];
                while s != NONE {
                    keys.push(self.slots[s as usize].key);
                    s = self.slots[s as usize].next;
                }
                keys
            })
            .collect()
    }

    fn unlink(&mut self, set: u32, s: u32) {
        let Slot { prev, next, .. } = self.slots[s as usize];
        if prev == NONE {
            self.head[set as usize] = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NONE {
            self.tail[set as usize] = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, set: u32, s: u32) {
        let old = self.head[set as usize];
        self.slots[s as usize].prev = NONE;
        self.slots[s as usize].next = old;
        if old == NONE {
            self.tail[set as usize] = s;
        } else {
            self.slots[old as usize].prev = s;
        }
        self.head[set as usize] = s;
    }
}

/// SplitMix64's finaliser: spreads QP numbers and page indices over the sets.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fixed, seedless hasher for the key index (HashMap's default is seeded
/// per process; the index is never iterated, but a fixed one is cheaper).
#[derive(Clone, Copy, Debug, Default)]
struct BuildMix;

impl std::hash::BuildHasher for BuildMix {
    type Hasher = MixHasher;
    fn build_hasher(&self) -> MixHasher {
        MixHasher(0)
    }
}

#[derive(Clone, Copy, Debug)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        mix(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ b as u64 ^ (self.0 >> 56);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The obvious LRU: one recency list per set, scanned linearly.
    struct ReferenceLru {
        sets: Vec<VecDeque<u64>>,
        ways: usize,
    }

    impl ReferenceLru {
        fn access(&mut self, set: usize, key: u64) -> Lookup {
            let s = &mut self.sets[set];
            if let Some(i) = s.iter().position(|&k| k == key) {
                s.remove(i);
                s.push_front(key);
                return Lookup::Hit;
            }
            let evicted = if s.len() == self.ways {
                s.pop_back()
            } else {
                None
            };
            s.push_front(key);
            Lookup::Miss { evicted }
        }
    }

    fn check_against_reference(entries: u32, ways: u32, keys: u64, n: usize, seed: u64) {
        let mut c = SetAssocCache::new(entries, ways);
        let mut r = ReferenceLru {
            sets: vec![VecDeque::new(); c.sets as usize],
            ways: c.ways as usize,
        };
        let mut x = seed;
        for _ in 0..n {
            x = mix(x.wrapping_add(0x9e37_79b9_7f4a_7c15));
            // Skewed keys: a hot few and a long tail, so both hits and evictions happen.
            let key = if x % 4 == 0 { x % 8 } else { (x >> 8) % keys };
            let set = c.set_of(key) as usize;
            assert_eq!(c.access(key), r.access(set, key), "key {key}");
        }
        assert_eq!(c.hits + c.misses, n as u64);
    }

    #[test]
    fn matches_a_reference_lru() {
        check_against_reference(64, 4, 500, 20_000, 1);
        check_against_reference(64, 1, 100, 20_000, 2);
        check_against_reference(256, 256, 400, 20_000, 3); // fully associative
        check_against_reference(10, 3, 50, 5_000, 4); // entries not a multiple of ways
    }

    #[test]
    fn cyclic_access_past_capacity_always_misses() {
        // LRU's pathological case: a round robin over more QPs than fit.
        let mut c = SetAssocCache::new(256, 256);
        for _ in 0..4 {
            for q in 0..257u64 {
                c.access(q);
            }
        }
        assert_eq!(c.hits, 0);
        let mut c = SetAssocCache::new(256, 256);
        for _ in 0..4 {
            for q in 0..256u64 {
                c.access(q);
            }
        }
        assert_eq!(c.misses, 256, "only the first round misses");
    }

    #[test]
    fn one_entry_cache() {
        let mut c = SetAssocCache::new(1, 4);
        assert_eq!(c.capacity(), 1);
        assert_eq!(c.access(7), Lookup::Miss { evicted: None });
        assert_eq!(c.access(7), Lookup::Hit);
        assert_eq!(c.access(8), Lookup::Miss { evicted: Some(7) });
        assert!(!c.contains(7));
    }
}
