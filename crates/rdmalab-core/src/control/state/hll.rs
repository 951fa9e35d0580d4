//! HyperLogLog: the number of distinct keys in a stream, in `2^p` bytes.
//!
//! On a NIC core it answers "how many flows are active on this port?" (to
//! split a fair share, to size a burst) without a record per flow. Each key
//! costs one hash and one byte compare; the estimate, which needs a few
//! floating-point operations over the registers, is read rarely (per timer).
//!
//! Estimator: Flajolet et al. (2007), `E = α_m·m² / Σ 2^-M[j]`, with their
//! small-range correction (linear counting `m·ln(m/V)` while `E ≤ 2.5·m` and
//! `V` registers are still zero). The hash is 64 bits, so the large-range
//! correction of the 32-bit original is not needed. Relative standard error
//! is `1.04/√m`.
//!
//! Footprint: `2^p` bytes of registers (one byte each) plus a header.

use super::{derive_salt, hash64, ShapeMismatch};

/// A HyperLogLog sketch with `m = 2^p` one-byte registers.
#[derive(Clone, Debug)]
pub struct HyperLogLog {
    registers: Box<[u8]>,
    precision: u32,
    salt: u64,
}

impl HyperLogLog {
    /// Smallest and largest supported precision `p`.
    pub const MIN_PRECISION: u32 = 4;
    pub const MAX_PRECISION: u32 = 18;

    /// An empty sketch with `2^precision` registers.
    ///
    /// # Panics
    /// If `precision` is outside `4..=18` (construction-time misuse).
    pub fn new(precision: u32, seed: u64) -> Self {
        assert!(
            (Self::MIN_PRECISION..=Self::MAX_PRECISION).contains(&precision),
            "HyperLogLog precision must be in 4..=18"
        );
        HyperLogLog {
            registers: vec![0u8; 1 << precision].into_boxed_slice(),
            precision,
            salt: derive_salt(seed, 0),
        }
    }

    /// Count `key` (adding a key twice changes nothing).
    #[inline]
    pub fn add(&mut self, key: u64) {
        let h = hash64(key, self.salt);
        let p = self.precision;
        let j = (h >> (64 - p)) as usize;
        // Rank of the first 1 bit in the remaining 64-p bits; the guard bit
        // caps it at 64-p+1 when they are all zero.
        let rank = ((h << p) | (1 << (p - 1))).leading_zeros() as u8 + 1;
        let r = &mut self.registers[j];
        if rank > *r {
            *r = rank;
        }
    }

    /// Estimated number of distinct keys added.
    pub fn estimate(&self) -> f64 {
        let m = self.registers.len() as f64;
        let (mut sum, mut zeros) = (0.0f64, 0u32);
        for &r in self.registers.iter() {
            sum += 1.0 / (1u64 << r) as f64;
            zeros += (r == 0) as u32;
        }
        let raw = self.alpha() * m * m / sum;
        if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }

    /// Fold `other` in, so this sketch estimates the union of both streams.
    pub fn merge(&mut self, other: &HyperLogLog) -> Result<(), ShapeMismatch> {
        if self.precision != other.precision || self.salt != other.salt {
            return Err(ShapeMismatch);
        }
        for (a, &b) in self.registers.iter_mut().zip(other.registers.iter()) {
            *a = (*a).max(b);
        }
        Ok(())
    }

    /// Forget every key.
    pub fn clear(&mut self) {
        self.registers.fill(0);
    }

    /// The precision `p` (there are `2^p` registers).
    pub fn precision(&self) -> u32 {
        self.precision
    }

    /// Relative standard error of [`Self::estimate`]: `1.04 / √m`.
    pub fn standard_error(&self) -> f64 {
        1.04 / (self.registers.len() as f64).sqrt()
    }

    /// Bytes of state: the registers plus this header.
    pub fn footprint_bytes(&self) -> usize {
        self.registers.len() + std::mem::size_of::<Self>()
    }

    fn alpha(&self) -> f64 {
        match self.registers.len() {
            16 => 0.673,
            32 => 0.697,
            64 => 0.709,
            m => 0.7213 / (1.0 + 1.079 / m as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::TestRng;

    const CARDINALITIES: [u64; 14] =
        [10, 30, 100, 300, 1000, 3000, 10_000, 20_000, 30_000, 50_000, 100_000, 300_000, 600_000, 1_000_000];

    #[test]
    fn estimates_are_within_three_standard_errors_from_ten_to_a_million_keys() {
        for &(p, seed) in &[(12u32, 1u64), (14, 2), (14, 3)] {
            let mut hll = HyperLogLog::new(p, seed);
            let limit = 3.0 * hll.standard_error();
            let mut rng = TestRng::new(seed);
            // Distinct keys: a random odd multiplier is a bijection on u64.
            let mul = rng.next_u64() | 1;
            let mut added = 0u64;
            for &n in &CARDINALITIES {
                while added < n {
                    hll.add(added.wrapping_mul(mul));
                    added += 1;
                }
                let err = (hll.estimate() - n as f64).abs() / n as f64;
                assert!(err <= limit, "p={p} n={n}: relative error {err:.4} > {limit:.4}");
            }
        }
    }

    #[test]
    fn adding_the_same_keys_again_leaves_the_estimate_unchanged() {
        let mut hll = HyperLogLog::new(10, 4);
        for k in 0..5000 {
            hll.add(k);
        }
        let once = hll.estimate();
        for k in 0..5000 {
            hll.add(k);
        }
        assert_eq!(hll.estimate(), once);
    }

    #[test]
    fn an_empty_sketch_estimates_zero_and_small_sets_are_nearly_exact() {
        let mut hll = HyperLogLog::new(12, 5);
        assert_eq!(hll.estimate(), 0.0);
        hll.add(7);
        assert!((hll.estimate() - 1.0).abs() < 0.01);
        hll.clear();
        assert_eq!(hll.estimate(), 0.0);
    }

    #[test]
    fn merging_two_sketches_equals_sketching_the_union() {
        let (mut a, mut b, mut both) = (HyperLogLog::new(12, 6), HyperLogLog::new(12, 6), HyperLogLog::new(12, 6));
        for k in 0..40_000u64 {
            (if k % 3 == 0 { &mut a } else { &mut b }).add(k);
            both.add(k);
        }
        // Overlap: keys seen by both sides count once.
        for k in 0..10_000u64 {
            a.add(k);
        }
        a.merge(&b).unwrap();
        assert_eq!(a.registers, both.registers);
        assert!((a.estimate() - 40_000.0).abs() / 40_000.0 < 3.0 * a.standard_error());
    }

    #[test]
    fn sketches_of_different_shape_or_seed_refuse_to_merge() {
        let mut a = HyperLogLog::new(12, 1);
        assert_eq!(a.merge(&HyperLogLog::new(11, 1)), Err(ShapeMismatch));
        assert_eq!(a.merge(&HyperLogLog::new(12, 2)), Err(ShapeMismatch));
    }

    #[test]
    fn footprint_is_one_byte_per_register() {
        let hll = HyperLogLog::new(14, 0);
        assert_eq!(hll.footprint_bytes(), (1 << 14) + std::mem::size_of::<HyperLogLog>());
    }
}
