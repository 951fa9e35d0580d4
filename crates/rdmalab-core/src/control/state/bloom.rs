//! Bloom filter: approximate set membership in a fixed bit array.
//!
//! On a NIC core its job is "is this the first event of a flow?" without a
//! bit per possible flow ID: BlueField-3 flow IDs are 24 bits, so an exact
//! bitmap needs 2 MiB, while SCR's Fig. 10e filter holds 8192 flows in 8 KiB
//! (8 bits per flow, 3 hashes, false-positive rate about 0.03). A filter
//! never forgets a key (no false negatives) and sometimes claims one it never
//! saw, at the rate [`BloomFilter::false_positive_rate`] predicts.
//!
//! The `k` bit positions come from one 64-bit hash by double hashing
//! (Kirsch and Mitzenmacher, 2006): `g_i = h1 + i·h2`, reduced to `[0, m)` by
//! a multiply and a shift rather than a division, which wimpy cores lack.
//!
//! Footprint: `m / 8` bytes of bits (rounded up to whole 64-bit words) plus a
//! header of a few words.

use super::{derive_salt, hash64};

/// A Bloom filter of `m` bits and `k` hash functions over `u64` keys.
#[derive(Clone, Debug)]
pub struct BloomFilter {
    words: Box<[u64]>,
    bits: u64,
    hashes: u32,
    salt: u64,
    inserted: u64,
}

impl BloomFilter {
    /// The largest bit array the index reduction supports (2^32 bits, 512 MiB).
    pub const MAX_BITS: u64 = 1 << 32;

    /// A filter of `bits` bits (rounded up to a multiple of 64) and `hashes`
    /// hash functions.
    ///
    /// # Panics
    /// If `hashes` is 0 or `bits` exceeds [`Self::MAX_BITS`] (construction-time misuse).
    pub fn new(bits: u64, hashes: u32, seed: u64) -> Self {
        assert!(
            hashes > 0,
            "a Bloom filter needs at least one hash function"
        );
        assert!(
            bits <= Self::MAX_BITS,
            "a Bloom filter holds at most 2^32 bits"
        );
        let words = bits.max(1).div_ceil(64);
        BloomFilter {
            words: vec![0u64; words as usize].into_boxed_slice(),
            bits: words * 64,
            hashes,
            salt: derive_salt(seed, 0),
            inserted: 0,
        }
    }

    /// The smallest filter expected to hold `items` keys at false-positive
    /// rate `fpr`: `m = -n·ln p / (ln 2)^2` bits and `k = (m/n)·ln 2` hashes.
    ///
    /// # Panics
    /// If `fpr` is not in (0, 1) or the filter would exceed [`Self::MAX_BITS`].
    pub fn with_capacity(items: u64, fpr: f64, seed: u64) -> Self {
        assert!(
            fpr > 0.0 && fpr < 1.0,
            "target false-positive rate must be in (0, 1)"
        );
        let n = items.max(1) as f64;
        let ln2 = std::f64::consts::LN_2;
        let bits = (-n * fpr.ln() / (ln2 * ln2)).ceil();
        let hashes = ((bits / n) * ln2).round().max(1.0);
        Self::new(bits as u64, hashes as u32, seed)
    }

    /// Predicted false-positive rate of a filter of `bits` bits and `hashes`
    /// hashes holding `items` keys: `(1 - e^(-k·n/m))^k`.
    pub fn false_positive_rate(bits: u64, hashes: u32, items: u64) -> f64 {
        let k = hashes as f64;
        (1.0 - (-k * items as f64 / bits as f64).exp()).powf(k)
    }

    /// Predicted false-positive rate of this filter with what it holds now.
    pub fn expected_fpr(&self) -> f64 {
        Self::false_positive_rate(self.bits, self.hashes, self.inserted)
    }

    /// Add `key`. Returns `true` when the key was definitely new (some bit
    /// was clear), so "first packet of a flow" costs one call.
    #[inline]
    pub fn insert(&mut self, key: u64) -> bool {
        let (h1, h2) = self.split(key);
        let mut fresh = false;
        for i in 0..self.hashes {
            let bit = self.index(h1.wrapping_add(i.wrapping_mul(h2)));
            let (w, mask) = ((bit >> 6) as usize, 1u64 << (bit & 63));
            fresh |= self.words[w] & mask == 0;
            self.words[w] |= mask;
        }
        self.inserted += fresh as u64;
        fresh
    }

    /// Whether `key` may have been inserted (`false` is certain, `true` is not).
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        let (h1, h2) = self.split(key);
        (0..self.hashes).all(|i| {
            let bit = self.index(h1.wrapping_add(i.wrapping_mul(h2)));
            self.words[(bit >> 6) as usize] & (1u64 << (bit & 63)) != 0
        })
    }

    /// Forget everything (start a new measurement window).
    pub fn clear(&mut self) {
        self.words.fill(0);
        self.inserted = 0;
    }

    /// Number of bits `m`.
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// Number of hash functions `k`.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Keys inserted that were new at the time (false positives hide a few).
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// Bytes of state: the bit array plus this header.
    pub fn footprint_bytes(&self) -> usize {
        self.words.len() * 8 + std::mem::size_of::<Self>()
    }

    /// Two 32-bit halves of the key's hash; `h2` is odd so the `k` probes differ.
    #[inline]
    fn split(&self, key: u64) -> (u32, u32) {
        let h = hash64(key, self.salt);
        (h as u32, (h >> 32) as u32 | 1)
    }

    /// Map a 32-bit hash uniformly onto `[0, m)` (Lemire's multiply-shift).
    #[inline]
    fn index(&self, g: u32) -> u64 {
        (g as u64 * self.bits) >> 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::TestRng;
    use std::collections::BTreeSet;

    /// Insert `n` random keys, then probe `probes` keys never inserted;
    /// returns the measured false-positive rate.
    fn measured_fpr(f: &mut BloomFilter, n: u64, probes: u64, seed: u64) -> f64 {
        let mut rng = TestRng::new(seed);
        let mut inserted = BTreeSet::new();
        while (inserted.len() as u64) < n {
            let k = rng.next_u64();
            inserted.insert(k);
            f.insert(k);
        }
        for &k in &inserted {
            assert!(f.contains(k), "false negative for {k}");
        }
        let (mut fp, mut done) = (0u64, 0u64);
        while done < probes {
            let k = rng.next_u64();
            if inserted.contains(&k) {
                continue;
            }
            fp += f.contains(k) as u64;
            done += 1;
        }
        fp as f64 / probes as f64
    }

    #[test]
    fn an_inserted_key_is_always_found() {
        let mut f = BloomFilter::new(1 << 12, 4, 1);
        // Sequential keys, like consecutive QP numbers, and random ones.
        let mut rng = TestRng::new(9);
        let keys: Vec<u64> = (0..2000).chain((0..2000).map(|_| rng.next_u64())).collect();
        for &k in &keys {
            f.insert(k);
        }
        assert!(keys.iter().all(|&k| f.contains(k)));
    }

    #[test]
    fn insert_reports_a_key_as_new_only_the_first_time() {
        let mut f = BloomFilter::new(1 << 16, 3, 2);
        assert!(f.insert(42));
        assert!(!f.insert(42));
        assert!(f.contains(42));
        assert_eq!(f.inserted(), 1);
    }

    #[test]
    fn clear_forgets_every_key() {
        let mut f = BloomFilter::new(1 << 10, 3, 3);
        for k in 0..100 {
            f.insert(k);
        }
        f.clear();
        assert!((0..100).all(|k| !f.contains(k)));
        assert_eq!(f.inserted(), 0);
    }

    #[test]
    fn measured_false_positive_rate_is_close_to_the_formula() {
        for &(bits, hashes, n) in &[
            (1u64 << 14, 4u32, 2000u64),
            (1 << 16, 3, 8192),
            (1 << 15, 7, 2000),
        ] {
            let mut f = BloomFilter::new(bits, hashes, bits ^ n);
            let measured = measured_fpr(&mut f, n, 200_000, n);
            let predicted = BloomFilter::false_positive_rate(bits, hashes, n);
            let ratio = measured / predicted;
            assert!(
                (0.8..1.25).contains(&ratio),
                "m={bits} k={hashes} n={n}: measured {measured}, formula {predicted}"
            );
        }
    }

    #[test]
    fn a_filter_sized_for_a_target_rate_meets_it() {
        for &(n, p) in &[(1000u64, 0.01), (10_000, 0.001), (5000, 0.05)] {
            let mut f = BloomFilter::with_capacity(n, p, 11);
            assert_eq!(
                f.expected_fpr(),
                0.0,
                "an empty filter has no false positives"
            );
            let measured = measured_fpr(&mut f, n, 100_000, 17 + n);
            assert!(measured < 1.5 * p, "n={n} target {p}: measured {measured}");
            assert!(
                f.expected_fpr() <= p * 1.05,
                "sized filter predicts {}",
                f.expected_fpr()
            );
        }
    }

    #[test]
    fn eight_bits_per_flow_and_three_hashes_give_three_percent_false_positives_at_8192_flows() {
        // SCR Fig. 10e: 8 bits/flow, k = 3, up to 8192 flows, FPR ~ 0.03, 8 KiB
        // against 2 MiB for an exact bitmap over 24-bit flow IDs.
        let mut f = BloomFilter::new(8 * 8192, 3, 5);
        assert!(f.footprint_bytes() <= 8 * 1024 + 64);
        assert!(f.footprint_bytes() * 200 < (1 << 24) / 8);
        let formula = BloomFilter::false_positive_rate(f.bits(), 3, 8192);
        assert!((formula - 0.0306).abs() < 0.0005, "formula {formula}");
        // Realistic keys: 8192 distinct 24-bit flow IDs.
        let mut rng = TestRng::new(77);
        let mut flows = BTreeSet::new();
        while flows.len() < 8192 {
            flows.insert(rng.below(1 << 24));
        }
        for &q in &flows {
            f.insert(q);
        }
        let (mut fp, mut probes) = (0u32, 0u32);
        for q in 0..(1u64 << 24) {
            if probes == 200_000 {
                break;
            }
            let q = (q * 0x9E_3779) % (1 << 24); // spread probes over the ID space
            if !flows.contains(&q) {
                fp += f.contains(q) as u32;
                probes += 1;
            }
        }
        let measured = fp as f64 / probes as f64;
        assert!((measured - 0.03).abs() < 0.005, "measured {measured}");
    }
}
