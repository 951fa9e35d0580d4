//! Fixed-capacity open-addressing hash map from flow IDs to small records.
//!
//! On a NIC core this holds per-flow statistics (last TX timestamp, smoothed
//! rate, ...) for the flows alive now, sized for the most flows the core may
//! track rather than for the flow-ID space. It allocates once: when it holds
//! `capacity` entries, inserting a new key returns [`MapFull`] instead of
//! growing, and the controller decides what to evict or skip.
//!
//! Linear probing over a power-of-two table kept at most 7/8 full; removal
//! uses backward-shift deletion, so there are no tombstones and lookups stay
//! short however long the map churns.
//!
//! Footprint: `slots · size_of::<Option<(K, V)>>()` bytes plus a header,
//! where `slots` is the next power of two at or above `capacity · 8/7`.

use super::{derive_salt, hash64};

/// A key the map can hash: a flow or QP identifier.
pub trait MapKey: Copy + Eq {
    fn to_u64(self) -> u64;
}

impl MapKey for u32 {
    #[inline]
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl MapKey for u64 {
    #[inline]
    fn to_u64(self) -> u64 {
        self
    }
}

/// The map holds `capacity` entries and the key is not one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapFull;

impl std::fmt::Display for MapFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fixed-capacity hash map is full")
    }
}

impl std::error::Error for MapFull {}

/// A hash map of at most `capacity` entries that never allocates after
/// construction.
#[derive(Clone, Debug)]
pub struct FixedHashMap<K, V> {
    slots: Box<[Option<(K, V)>]>,
    mask: usize,
    len: usize,
    capacity: usize,
    salt: u64,
}

impl<K: MapKey, V: Copy> FixedHashMap<K, V> {
    /// An empty map for up to `capacity` entries, hashing with `seed`.
    pub fn with_capacity(capacity: usize, seed: u64) -> Self {
        // At most 7/8 full, and always at least one empty slot so probes end.
        let slots = (capacity + capacity / 7 + 1).next_power_of_two();
        FixedHashMap {
            slots: vec![None; slots].into_boxed_slice(),
            mask: slots - 1,
            len: 0,
            capacity,
            salt: derive_salt(seed, 0),
        }
    }

    /// Entries held now.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most entries the map will hold.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// True when a new key would be refused.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == self.capacity
    }

    /// Insert or overwrite. Returns the previous value of `key`, or
    /// [`MapFull`] (map unchanged) when `key` is new and there is no room.
    #[inline]
    pub fn insert(&mut self, key: K, value: V) -> Result<Option<V>, MapFull> {
        match self.find(key) {
            Ok(i) => Ok(self.slots[i].replace((key, value)).map(|(_, v)| v)),
            Err(i) => {
                self.occupy(i, key, value)?;
                Ok(None)
            }
        }
    }

    /// The value of `key`, inserting `default` first if it is absent.
    #[inline]
    pub fn get_or_insert(&mut self, key: K, default: V) -> Result<&mut V, MapFull> {
        let i = match self.find(key) {
            Ok(i) => i,
            Err(i) => {
                self.occupy(i, key, default)?;
                i
            }
        };
        Ok(self.value_at(i))
    }

    #[inline]
    pub fn get(&self, key: K) -> Option<&V> {
        let i = self.find(key).ok()?;
        self.slots[i].as_ref().map(|(_, v)| v)
    }

    #[inline]
    pub fn get_mut(&mut self, key: K) -> Option<&mut V> {
        let i = self.find(key).ok()?;
        self.slots[i].as_mut().map(|(_, v)| v)
    }

    #[inline]
    pub fn contains_key(&self, key: K) -> bool {
        self.find(key).is_ok()
    }

    /// Remove `key`, returning its value. Later entries of the probe run
    /// shift back into the hole, so no tombstone is left behind.
    #[inline]
    pub fn remove(&mut self, key: K) -> Option<V> {
        let mut hole = self.find(key).ok()?;
        let (_, value) = self.slots[hole].take()?;
        self.len -= 1;
        let mut j = (hole + 1) & self.mask;
        while let Some((k, _)) = self.slots[j] {
            let home = self.home(k);
            // The entry at j may fill the hole iff the hole lies on its
            // probe path, i.e. cyclically in [home, j).
            if (j.wrapping_sub(home) & self.mask) >= (j.wrapping_sub(hole) & self.mask) {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
            j = (j + 1) & self.mask;
        }
        Some(value)
    }

    /// Remove every entry.
    pub fn clear(&mut self) {
        self.slots.fill(None);
        self.len = 0;
    }

    /// Entries in table order (deterministic for a given seed and history).
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> + '_ {
        self.slots
            .iter()
            .filter_map(|s| s.as_ref().map(|(k, v)| (*k, v)))
    }

    /// Bytes of state: the slot table plus this header.
    pub fn footprint_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Option<(K, V)>>() + std::mem::size_of::<Self>()
    }

    #[inline]
    fn home(&self, key: K) -> usize {
        hash64(key.to_u64(), self.salt) as usize & self.mask
    }

    /// `Ok(slot)` holding `key`, or `Err(slot)`: the empty slot ending its probe run.
    #[inline]
    fn find(&self, key: K) -> Result<usize, usize> {
        let mut i = self.home(key);
        loop {
            match &self.slots[i] {
                Some((k, _)) if *k == key => return Ok(i),
                Some(_) => i = (i + 1) & self.mask,
                None => return Err(i),
            }
        }
    }

    #[inline]
    fn occupy(&mut self, i: usize, key: K, value: V) -> Result<(), MapFull> {
        if self.len == self.capacity {
            return Err(MapFull);
        }
        self.slots[i] = Some((key, value));
        self.len += 1;
        Ok(())
    }

    #[inline]
    fn value_at(&mut self, i: usize) -> &mut V {
        match &mut self.slots[i] {
            Some((_, v)) => v,
            None => unreachable!("slot {i} was just found or filled"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::TestRng;
    use std::collections::BTreeMap;

    fn assert_same<K: MapKey + Ord + std::fmt::Debug>(
        map: &FixedHashMap<K, u64>,
        reference: &BTreeMap<K, u64>,
    ) {
        assert_eq!(map.len(), reference.len());
        let mut ours: Vec<(K, u64)> = map.iter().map(|(k, v)| (k, *v)).collect();
        ours.sort_unstable_by_key(|e| e.0);
        let theirs: Vec<(K, u64)> = reference.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(ours, theirs);
    }

    /// Random inserts, removes, gets and in-place updates against a BTreeMap,
    /// with a key space larger than the capacity: inserts outpace removes until
    /// about 5/8 of the keys are held, a little above the capacity, so the map
    /// keeps running full and draining again.
    fn agrees_with_btreemap<K: MapKey + Ord + std::fmt::Debug>(
        key_of: impl Fn(u64) -> K,
        keys: u64,
        capacity: usize,
        seed: u64,
    ) {
        let mut rng = TestRng::new(seed);
        let mut map: FixedHashMap<K, u64> = FixedHashMap::with_capacity(capacity, seed);
        let mut reference = BTreeMap::new();
        let (mut refused, mut filled, mut roomy) = (0u32, 0u32, 0u32);
        for step in 0..200_000u64 {
            let key = key_of(rng.below(keys));
            match rng.below(10) {
                0..=4 => {
                    let got = map.insert(key, step);
                    if reference.len() == capacity && !reference.contains_key(&key) {
                        assert_eq!(got, Err(MapFull));
                        refused += 1;
                    } else {
                        assert_eq!(got, Ok(reference.insert(key, step)));
                    }
                }
                5..=7 => assert_eq!(map.remove(key), reference.remove(&key)),
                8 => assert_eq!(map.get(key), reference.get(&key)),
                _ => {
                    if let Some(v) = map.get_mut(key) {
                        *v += 1;
                    }
                    if let Some(v) = reference.get_mut(&key) {
                        *v += 1;
                    }
                }
            }
            assert_eq!(map.is_full(), reference.len() == capacity);
            filled += map.is_full() as u32;
            roomy += (map.len() + 8 < capacity) as u32;
            if step % 4096 == 0 {
                assert_same(&map, &reference);
            }
        }
        assert_same(&map, &reference);
        assert!(
            refused > 100 && filled > 100,
            "the sequence must run the map full ({refused} refused)"
        );
        assert!(roomy > 100, "the sequence must also drain the map");
    }

    #[test]
    fn a_long_random_sequence_agrees_with_btreemap_for_u64_keys() {
        agrees_with_btreemap(|k| k.wrapping_mul(0x9E37_79B9_7F4A_7C15), 820, 500, 1);
    }

    #[test]
    fn a_long_random_sequence_agrees_with_btreemap_for_u32_keys() {
        // Dense small keys (QP numbers) collide on home slots far more.
        agrees_with_btreemap(|k| k as u32, 110, 64, 2);
    }

    #[test]
    fn a_full_map_refuses_new_keys_but_still_overwrites_old_ones() {
        let mut map: FixedHashMap<u32, u32> = FixedHashMap::with_capacity(4, 0);
        for k in 0..4 {
            assert_eq!(map.insert(k, k), Ok(None));
        }
        assert!(map.is_full());
        assert_eq!(map.insert(9, 9), Err(MapFull));
        assert_eq!(map.get_or_insert(9, 9), Err(MapFull));
        assert_eq!(map.insert(2, 20), Ok(Some(2)));
        *map.get_or_insert(3, 0).unwrap() += 5;
        assert_eq!(map.get(3), Some(&8));
        assert_eq!(map.len(), 4);
        assert_eq!(map.remove(0), Some(0));
        assert_eq!(map.insert(9, 9), Ok(None));
    }

    #[test]
    fn churning_many_distinct_keys_through_a_small_map_never_fills_it() {
        // With tombstones, deleted slots would pile up and probes would lengthen
        // or the table would clog; backward shift leaves none.
        let mut map: FixedHashMap<u64, u64> = FixedHashMap::with_capacity(16, 3);
        for k in 0..200_000u64 {
            assert_eq!(map.insert(k, k), Ok(None));
            if k >= 15 {
                assert_eq!(map.remove(k - 15), Some(k - 15));
            }
        }
        assert_eq!(map.len(), 15);
        assert!((200_000 - 15..200_000).all(|k| map.get(k) == Some(&k)));
        assert_eq!(map.slots.iter().filter(|s| s.is_some()).count(), 15);
    }

    #[test]
    fn footprint_is_the_slot_table_sized_from_the_capacity() {
        let map: FixedHashMap<u32, u64> = FixedHashMap::with_capacity(8192, 0);
        assert_eq!(map.slots.len(), 16384);
        let slot = std::mem::size_of::<Option<(u32, u64)>>();
        assert_eq!(
            map.footprint_bytes(),
            16384 * slot + std::mem::size_of_val(&map)
        );
        let empty: FixedHashMap<u64, u8> = FixedHashMap::with_capacity(0, 0);
        assert_eq!(empty.get(1), None);
        assert!(empty.is_full());
    }
}
