//! HyperLogLog: the number of distinct keys in a stream, in `2^p` bytes.
//!
//! On a NIC core it answers "how many flows are active on this port?" (to
//! split a fair share, to size a burst) without a record per flow. Each key
//! costs one hash and one byte compare; the estimate, which needs a few
//! floating-point operations over the registers, is read rarely (per timer).
//!
//! [`HyperLogLog::estimate`] is the standard estimator of Flajolet et al.
//! (2007), `E = α_m·m² / Σ 2^-M[j]`, with their small-range correction
//! (linear counting `m·ln(m/V)` while `E ≤ 2.5·m` and `V` registers are still
//! zero). The hash is 64 bits, so the large-range correction of the 32-bit
//! original is not needed. Relative standard error is `1.04/√m`, but just
//! above the switchover the raw estimate reads a few percent high, which at
//! `p ≥ 14` exceeds three standard errors; [`HyperLogLog::estimate_improved`]
//! (Ertl, 2017) has no such band and reads the same registers.
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

    /// Estimated number of distinct keys by Ertl's improved estimator
    /// (arXiv:1702.01284, 2017): unbiased over the whole range with no
    /// empirical tables, including the band just above `2.5·m` where
    /// [`Self::estimate`] switches from linear counting to the raw estimate
    /// and reads a few percent high.
    pub fn estimate_improved(&self) -> f64 {
        let q = 64 - self.precision as usize;
        let mut counts = [0u32; 66];
        for &r in self.registers.iter() {
            counts[r as usize] += 1;
        }
        let m = self.registers.len() as f64;
        let mut z = m * tau(1.0 - counts[q + 1] as f64 / m);
        for k in (1..=q).rev() {
            z = 0.5 * (z + counts[k] as f64);
        }
        z += m * sigma(counts[0] as f64 / m);
        m * m / (2.0 * std::f64::consts::LN_2 * z)
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

/// Ertl's σ(x) = x + Σ_{k≥1} x^(2^k)·2^(k−1), the empty-register term.
fn sigma(mut x: f64) -> f64 {
    if x >= 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// Ertl's τ(x) = (1 − x − Σ_{k≥1} (1 − x^(2^−k))²·2^−k) / 3, the
/// saturated-register term.
fn tau(mut x: f64) -> f64 {
    if x <= 0.0 || x >= 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::TestRng;

    /// Add distinct keys up to each cardinality of a geometric grid (×1.05)
    /// from 10 to 10^6, and call `check(n, sketch)` at each.
    fn sweep(p: u32, seed: u64, mut check: impl FnMut(u64, &HyperLogLog)) {
        let mut hll = HyperLogLog::new(p, seed);
        // Distinct keys: a random odd multiplier is a bijection on u64.
        let mul = TestRng::new(seed * 1000 + p as u64).next_u64() | 1;
        let (mut added, mut n) = (0u64, 10u64);
        while n <= 1_000_000 {
            while added < n {
                added += 1;
                hll.add(added.wrapping_mul(mul));
            }
            check(n, &hll);
            n = (n as f64 * 1.05).ceil() as u64;
        }
    }

    fn error_in_standard_errors(estimate: f64, n: u64, hll: &HyperLogLog) -> f64 {
        (estimate - n as f64) / n as f64 / hll.standard_error()
    }

    #[test]
    fn estimates_are_within_three_standard_errors_from_ten_to_a_million_keys() {
        // The classic estimator, at the precisions where its bias just above
        // the 2.5·m switchover stays well under three standard errors.
        for (p, seed) in [(10u32, 1u64), (10, 2), (12, 1), (12, 2), (12, 3)] {
            sweep(p, seed, |n, hll| {
                let e = error_in_standard_errors(hll.estimate(), n, hll);
                assert!(
                    e.abs() <= 3.0,
                    "p={p} seed={seed} n={n}: {e:.2} standard errors"
                );
            });
        }
    }

    #[test]
    fn improved_estimates_are_within_three_standard_errors_from_ten_to_a_million_keys_at_any_precision(
    ) {
        for (p, seed) in [
            (10u32, 1u64),
            (12, 1),
            (12, 2),
            (14, 1),
            (14, 2),
            (14, 3),
            (16, 1),
            (16, 2),
            (16, 3),
        ] {
            sweep(p, seed, |n, hll| {
                let e = error_in_standard_errors(hll.estimate_improved(), n, hll);
                assert!(
                    e.abs() <= 3.0,
                    "p={p} seed={seed} n={n}: {e:.2} standard errors"
                );
            });
        }
    }

    #[test]
    fn the_classic_estimate_reads_high_just_above_the_linear_counting_switchover() {
        // Known HLL bias (Heule et al. 2013): for n a little above 2.5·m the
        // raw estimate is a few percent high, many standard errors at p = 16.
        let m = 1u64 << 16;
        sweep(16, 1, |n, hll| {
            if (2 * m..3 * m).contains(&n) {
                let worst = error_in_standard_errors(hll.estimate(), n, hll);
                if n > m * 5 / 2 && n < m * 26 / 10 {
                    assert!(worst > 3.0, "n={n}: classic {worst:.2} standard errors");
                }
                assert!(error_in_standard_errors(hll.estimate_improved(), n, hll).abs() <= 3.0);
            }
        });
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
        assert_eq!((hll.estimate(), hll.estimate_improved()), (0.0, 0.0));
        hll.add(7);
        assert!((hll.estimate() - 1.0).abs() < 0.01);
        assert!((hll.estimate_improved() - 1.0).abs() < 0.01);
        hll.clear();
        assert_eq!((hll.estimate(), hll.estimate_improved()), (0.0, 0.0));
    }

    #[test]
    fn merging_two_sketches_equals_sketching_the_union() {
        let (mut a, mut b, mut both) = (
            HyperLogLog::new(12, 6),
            HyperLogLog::new(12, 6),
            HyperLogLog::new(12, 6),
        );
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
        assert!((a.estimate_improved() - 40_000.0).abs() / 40_000.0 < 3.0 * a.standard_error());
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
        assert_eq!(
            hll.footprint_bytes(),
            (1 << 14) + std::mem::size_of::<HyperLogLog>()
        );
    }
}
