//! Compact state for congestion controllers that run on wimpy NIC cores.
//!
//! A programmable NIC (the BlueField-3 DPA that SCR and DOCA PCC target) runs
//! controllers on many small cores with little memory each, so per-flow state
//! must not scale with the flow-ID space and arithmetic should avoid floats.
//! SCR (NSDI'25, §4.4 "compact state") answers with a small library, mirrored
//! here: a [`BloomFilter`] for membership ("is this the first packet of a
//! flow?"), a fixed-capacity [`FixedHashMap`] for per-flow records, a
//! [`HyperLogLog`] for counting distinct flows, a [`CountMinSketch`] for
//! cumulative per-key counts, [`Q16`] fixed-point numbers with the DOCA PCC
//! helpers (`fxp20` rates as fractions of line rate, `fxp_mult`, ...) and
//! EWMAs in floating point ([`Ewma`]) and in shift-only fixed point
//! ([`ShiftEwma`]).
//!
//! Every structure allocates once, at construction, reports its memory with
//! `footprint_bytes()`, and hashes with the seeded mixer below, so the same
//! seed gives the same bits on every run and every machine.

pub mod bloom;
pub mod cms;
pub mod ewma;
pub mod fixed;
pub mod hashmap;
pub mod hll;

pub use bloom::BloomFilter;
pub use cms::CountMinSketch;
pub use ewma::{Ewma, ShiftEwma};
pub use fixed::Q16;
pub use hashmap::{FixedHashMap, MapFull, MapKey};
pub use hll::HyperLogLog;

/// The golden-ratio increment of SplitMix64.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output finaliser: a bijection on `u64` with full avalanche.
///
/// A bijection means distinct keys never collide in the 64-bit hash; only
/// the reduction to a table index can make them meet.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash `key` under `salt` (a value from [`derive_salt`]).
///
/// Deterministic across runs, platforms and versions; never uses std's
/// randomly keyed hasher.
#[inline]
pub fn hash64(key: u64, salt: u64) -> u64 {
    mix64(key ^ salt)
}

/// The `index`-th salt for a structure built with `seed`: the `index`-th
/// output of a SplitMix64 generator started at `seed`. Structures needing
/// several hash functions (Count-Min rows) take one salt per function.
#[inline]
pub fn derive_salt(seed: u64, index: u64) -> u64 {
    mix64(seed.wrapping_add(GOLDEN.wrapping_mul(index.wrapping_add(1))))
}

/// Two sketches cannot be merged: they differ in shape or seed, so the same
/// key lands in different cells of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeMismatch;

impl std::fmt::Display for ShapeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("sketches differ in shape or seed and cannot be merged")
    }
}

impl std::error::Error for ShapeMismatch {}

/// A seeded SplitMix64 generator for the tests of this library (no rand crate,
/// same numbers everywhere).
#[cfg(test)]
pub(crate) struct TestRng(u64);

#[cfg(test)]
impl TestRng {
    pub(crate) fn new(seed: u64) -> Self {
        TestRng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix64(self.0)
    }

    /// Uniform in `[0, n)`, `n > 0`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixer_is_pinned_so_hashes_are_the_same_on_every_machine() {
        // SplitMix64 seeded with 0 is a published sequence; pinning it pins mix64.
        let mut r = TestRng::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(hash64(1, derive_salt(7, 0)), hash64(1, derive_salt(7, 0)));
        assert_ne!(derive_salt(7, 0), derive_salt(7, 1));
    }

    #[test]
    fn distinct_keys_never_collide_in_the_full_hash() {
        let salt = derive_salt(3, 0);
        let mut seen: Vec<u64> = (0..100_000u64).map(|k| hash64(k, salt)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 100_000);
    }
}
