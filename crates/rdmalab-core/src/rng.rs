//! Seeded random streams, one per component.
//!
//! The generator is written here (xoshiro256**, seeded through SplitMix64)
//! rather than taken from a crate so that a scenario and seed give the same
//! numbers on every machine and every future version of rdmalab. Each
//! component (a switch's ECN marker, a link's loss process, a workload) draws
//! from its own stream, derived from the master seed and a stable label, so
//! adding a component never shifts the numbers another one sees.

/// One independent random stream.
#[derive(Clone, Debug)]
pub struct RngStream {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a, used to turn a component label into a stream id.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl RngStream {
    /// The stream for component `label` (e.g. `"switch/3/ecn"`) under `master_seed`.
    pub fn new(master_seed: u64, label: &str) -> Self {
        Self::from_parts(master_seed, stable_hash(label.as_bytes()))
    }

    pub fn from_parts(master_seed: u64, stream: u64) -> Self {
        let mut x = master_seed ^ stream.rotate_left(17) ^ 0x6A09_E667_F3BC_C909;
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        RngStream { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n). `n` must be > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift; the tiny bias is irrelevant for workload draws
        // and keeps one draw per call, which keeps streams aligned.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        let u = 1.0 - self.next_f64(); // (0, 1]
        -mean * u.ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_label_give_the_same_numbers() {
        let mut a = RngStream::new(7, "switch/1/ecn");
        let mut b = RngStream::new(7, "switch/1/ecn");
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn different_labels_give_different_streams() {
        let mut a = RngStream::new(7, "switch/1/ecn");
        let mut b = RngStream::new(7, "switch/2/ecn");
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn uniform_draws_have_the_right_mean() {
        let mut r = RngStream::new(1, "t");
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| r.next_f64()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "mean {mean}");
        let e: f64 = (0..n).map(|_| r.exponential(3.0)).sum::<f64>() / n as f64;
        assert!((e - 3.0).abs() < 0.05, "exp mean {e}");
    }
}
