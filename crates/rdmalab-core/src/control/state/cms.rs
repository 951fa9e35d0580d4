//! Count-Min sketch: per-key cumulative counts in `w × d` counters.
//!
//! On a NIC core it keeps "bytes sent per flow" or "CNPs per destination"
//! over many keys without a record per key, for heavy-hitter detection and
//! per-flow accounting. Each update touches one counter in each of `d` rows;
//! an estimate is the smallest of the `d` counters. Estimates never fall
//! below the true count, and with `w = ⌈e/ε⌉`, `d = ⌈ln(1/δ)⌉` they exceed it
//! by more than `ε·N` (N the total of all counts) with probability at most
//! `δ` (Cormode and Muthukrishnan, 2005).
//!
//! Counters are `u64` and saturate rather than wrap, so the no-underestimate
//! guarantee holds up to `u64::MAX`.
//!
//! Footprint: `8·w·d` bytes of counters, `8·d` bytes of row salts, plus a header.

use super::{derive_salt, hash64, ShapeMismatch};

/// A Count-Min sketch of `depth` rows of `width` counters over `u64` keys.
#[derive(Clone, Debug)]
pub struct CountMinSketch {
    counters: Box<[u64]>,
    salts: Box<[u64]>,
    width: u64,
    total: u64,
}

impl CountMinSketch {
    /// The widest row the index reduction supports.
    pub const MAX_WIDTH: u64 = 1 << 32;

    /// An empty sketch of `depth` rows of `width` counters.
    ///
    /// # Panics
    /// If `width` or `depth` is 0, or `width` exceeds [`Self::MAX_WIDTH`].
    pub fn new(width: u64, depth: u32, seed: u64) -> Self {
        assert!(
            width > 0 && depth > 0,
            "a Count-Min sketch needs at least one counter"
        );
        assert!(
            width <= Self::MAX_WIDTH,
            "Count-Min rows hold at most 2^32 counters"
        );
        CountMinSketch {
            counters: vec![0u64; (width * depth as u64) as usize].into_boxed_slice(),
            salts: (0..depth as u64).map(|r| derive_salt(seed, r)).collect(),
            width,
            total: 0,
        }
    }

    /// The smallest sketch whose estimates exceed the truth by more than
    /// `epsilon·N` with probability at most `delta`.
    ///
    /// # Panics
    /// If `epsilon` or `delta` is not in (0, 1).
    pub fn with_error(epsilon: f64, delta: f64, seed: u64) -> Self {
        assert!(epsilon > 0.0 && epsilon < 1.0, "epsilon must be in (0, 1)");
        assert!(delta > 0.0 && delta < 1.0, "delta must be in (0, 1)");
        let width = (std::f64::consts::E / epsilon).ceil() as u64;
        let depth = (1.0 / delta).ln().ceil().max(1.0) as u32;
        Self::new(width, depth, seed)
    }

    /// Add `count` to `key`.
    #[inline]
    pub fn add(&mut self, key: u64, count: u64) {
        for row in 0..self.salts.len() {
            let c = self.cell(row, key);
            self.counters[c] = self.counters[c].saturating_add(count);
        }
        self.total = self.total.saturating_add(count);
    }

    /// Estimated count of `key`: never below the truth.
    #[inline]
    pub fn estimate(&self, key: u64) -> u64 {
        (0..self.salts.len())
            .map(|row| self.counters[self.cell(row, key)])
            .min()
            .unwrap_or(0)
    }

    /// Fold `other` in, so this sketch counts both streams.
    pub fn merge(&mut self, other: &CountMinSketch) -> Result<(), ShapeMismatch> {
        if self.width != other.width || self.salts != other.salts {
            return Err(ShapeMismatch);
        }
        for (a, &b) in self.counters.iter_mut().zip(other.counters.iter()) {
            *a = a.saturating_add(b);
        }
        self.total = self.total.saturating_add(other.total);
        Ok(())
    }

    /// Forget every count.
    pub fn clear(&mut self) {
        self.counters.fill(0);
        self.total = 0;
    }

    /// Sum of all counts added (`N`).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Counters per row `w`.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Rows `d`.
    pub fn depth(&self) -> u32 {
        self.salts.len() as u32
    }

    /// The additive error bound `ε = e/w` of this sketch's width.
    pub fn epsilon(&self) -> f64 {
        std::f64::consts::E / self.width as f64
    }

    /// The failure probability `δ = e^-d` of this sketch's depth.
    pub fn delta(&self) -> f64 {
        (-(self.salts.len() as f64)).exp()
    }

    /// Bytes of state: counters, row salts and this header.
    pub fn footprint_bytes(&self) -> usize {
        (self.counters.len() + self.salts.len()) * 8 + std::mem::size_of::<Self>()
    }

    /// Flat index of `key`'s counter in `row`.
    #[inline]
    fn cell(&self, row: usize, key: u64) -> usize {
        let h = hash64(key, self.salts[row]) >> 32;
        row * self.width as usize + ((h * self.width) >> 32) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::TestRng;

    /// A skewed stream over `keys` keys: key i gets about 1/(i+1) of the mass.
    fn skewed_counts(keys: u64, rng: &mut TestRng) -> Vec<u64> {
        (0..keys)
            .map(|i| 1 + rng.below(100_000 / (i + 1) + 50))
            .collect()
    }

    #[test]
    fn it_never_underestimates_and_rarely_overestimates_by_more_than_epsilon_n() {
        let (epsilon, delta) = (0.002, 0.01);
        let mut cms = CountMinSketch::with_error(epsilon, delta, 1);
        assert_eq!((cms.width(), cms.depth()), (1360, 5));
        let mut rng = TestRng::new(1);
        let keys = 20_000u64;
        let truth = skewed_counts(keys, &mut rng);
        let key_of = |i: u64| i.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        // Interleave updates in small pieces, as events arrive.
        for round in 0..4 {
            for (i, &c) in truth.iter().enumerate() {
                let piece = c / 4 + if round < c % 4 { 1 } else { 0 };
                if piece > 0 {
                    cms.add(key_of(i as u64), piece);
                }
            }
        }
        let n: u64 = truth.iter().sum();
        assert_eq!(cms.total(), n);
        let bound = epsilon * n as f64;
        let mut beyond = 0u64;
        for (i, &c) in truth.iter().enumerate() {
            let est = cms.estimate(key_of(i as u64));
            assert!(est >= c, "key {i}: estimate {est} below true {c}");
            beyond += ((est - c) as f64 > bound) as u64;
        }
        let rate = beyond as f64 / keys as f64;
        assert!(rate <= delta, "{beyond} of {keys} keys beyond eps*N");
        // A key never added is also bounded.
        assert!((cms.estimate(u64::MAX) as f64) <= bound);
    }

    #[test]
    fn merging_two_sketches_equals_sketching_both_streams() {
        let (mut a, mut b, mut both) = (
            CountMinSketch::new(256, 4, 9),
            CountMinSketch::new(256, 4, 9),
            CountMinSketch::new(256, 4, 9),
        );
        let mut rng = TestRng::new(2);
        for _ in 0..50_000 {
            let (k, c) = (rng.below(3000), rng.below(1500));
            (if rng.below(2) == 0 { &mut a } else { &mut b }).add(k, c);
            both.add(k, c);
        }
        a.merge(&b).unwrap();
        assert_eq!(a.counters, both.counters);
        assert_eq!(a.total(), both.total());
        assert_eq!(
            a.merge(&CountMinSketch::new(256, 4, 10)),
            Err(ShapeMismatch)
        );
        assert_eq!(a.merge(&CountMinSketch::new(255, 4, 9)), Err(ShapeMismatch));
    }

    #[test]
    fn a_lone_key_is_counted_exactly_and_counters_saturate_instead_of_wrapping() {
        let mut cms = CountMinSketch::new(64, 3, 0);
        cms.add(5, 10);
        cms.add(5, 32);
        assert_eq!(cms.estimate(5), 42);
        cms.add(5, u64::MAX);
        assert_eq!(cms.estimate(5), u64::MAX);
        cms.clear();
        assert_eq!((cms.estimate(5), cms.total()), (0, 0));
    }

    #[test]
    fn footprint_and_error_bounds_follow_the_shape() {
        let cms = CountMinSketch::with_error(0.01, 0.001, 0);
        assert_eq!((cms.width(), cms.depth()), (272, 7));
        assert!(cms.epsilon() <= 0.01 && cms.delta() <= 0.001);
        assert_eq!(
            cms.footprint_bytes(),
            8 * (272 * 7 + 7) + std::mem::size_of::<CountMinSketch>()
        );
    }
}
