//! Exponentially weighted moving averages: smoothing a noisy per-event
//! signal (a flow's measured rate, an RTT, DCQCN's α) into a level.
//!
//! [`Ewma`] is the floating-point reference, `v ← v + g·(x − v)` for any
//! gain `g`. [`ShiftEwma`] is what a NIC core runs: the gain is `2^-s`, so
//! the update is a subtract, a shift and an add. It keeps the average scaled
//! by `2^s` (as Linux keeps `srtt << 3`), which stops the classic
//! `v += (x − v) >> s` from sticking up to `2^s − 1` units short of a
//! constant input. Fed the same integer samples from the same start, it
//! stays within one unit of [`Ewma`] with `g = 2^-s` (proof on
//! [`ShiftEwma`]).
//!
//! Footprint: 24 bytes for [`Ewma`], 16 for [`ShiftEwma`].

/// EWMA in f64 with gain `g` in (0, 1]. The first sample sets the average
/// unless a starting value is given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ewma {
    value: f64,
    gain: f64,
    primed: bool,
}

impl Ewma {
    /// An average that starts at its first sample.
    ///
    /// # Panics
    /// If `gain` is not in (0, 1] (construction-time misuse).
    pub fn new(gain: f64) -> Self {
        assert!(gain > 0.0 && gain <= 1.0, "EWMA gain must be in (0, 1]");
        Ewma {
            value: 0.0,
            gain,
            primed: false,
        }
    }

    /// An average that starts at `value`.
    pub fn starting_at(gain: f64, value: f64) -> Self {
        Ewma {
            value,
            primed: true,
            ..Self::new(gain)
        }
    }

    /// Fold in `sample` and return the new average.
    #[inline]
    pub fn update(&mut self, sample: f64) -> f64 {
        self.value = if self.primed {
            self.value + self.gain * (sample - self.value)
        } else {
            sample
        };
        self.primed = true;
        self.value
    }

    /// The average (0 before the first sample).
    #[inline]
    pub fn value(&self) -> f64 {
        self.value
    }

    /// Whether a sample or a starting value has been given.
    #[inline]
    pub fn is_primed(&self) -> bool {
        self.primed
    }

    #[inline]
    pub fn gain(&self) -> f64 {
        self.gain
    }

    /// Bytes of state.
    pub fn footprint_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

/// EWMA with gain `2^-shift` in integer arithmetic, over integer samples in
/// any fixed-point unit (fxp20 rates, ns, Q16 raw values).
///
/// It keeps `acc ≈ v·2^s` and updates `acc ← acc − ⌊acc/2^s⌋ + x`. With
/// `a = acc/2^s` and the float average `f` (same start, `g = 2^-s`), the error
/// `e = a − f` obeys `e' = (1−g)·e + g·r` with `r ∈ [0, 1)` the discarded
/// fraction, so `e ∈ [0, 1)` forever, and the reported `⌊a⌋` is within one
/// unit of `f`. The accumulator saturates rather than wraps; samples up to
/// `2^(62−s)` in magnitude never reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShiftEwma {
    acc: i64,
    shift: u32,
    primed: bool,
}

impl ShiftEwma {
    /// Largest supported shift (gain `2^-30`).
    pub const MAX_SHIFT: u32 = 30;

    /// An average with gain `2^-shift` that starts at its first sample.
    ///
    /// # Panics
    /// If `shift` exceeds [`Self::MAX_SHIFT`] (construction-time misuse).
    pub fn new(shift: u32) -> Self {
        assert!(shift <= Self::MAX_SHIFT, "EWMA shift must be at most 30");
        ShiftEwma {
            acc: 0,
            shift,
            primed: false,
        }
    }

    /// An average with gain `2^-shift` that starts at `value`.
    pub fn starting_at(shift: u32, value: i64) -> Self {
        let mut e = Self::new(shift);
        e.acc = value.saturating_mul(1 << shift);
        e.primed = true;
        e
    }

    /// Fold in `sample` and return the new average.
    #[inline]
    pub fn update(&mut self, sample: i64) -> i64 {
        self.acc = if self.primed {
            self.acc
                .saturating_sub(self.acc >> self.shift)
                .saturating_add(sample)
        } else {
            sample.saturating_mul(1 << self.shift)
        };
        self.primed = true;
        self.value()
    }

    /// The average, rounded down to a whole unit (0 before the first sample).
    #[inline]
    pub fn value(&self) -> i64 {
        self.acc >> self.shift
    }

    /// The average with its `shift` extra fraction bits, as f64 (for tests
    /// and reports; the core itself reads [`Self::value`]).
    pub fn precise(&self) -> f64 {
        self.acc as f64 / (1u64 << self.shift) as f64
    }

    #[inline]
    pub fn is_primed(&self) -> bool {
        self.primed
    }

    #[inline]
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// The gain `2^-shift` as f64.
    pub fn gain(&self) -> f64 {
        1.0 / (1u64 << self.shift) as f64
    }

    /// Bytes of state.
    pub fn footprint_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::TestRng;

    #[test]
    fn the_float_average_moves_a_gain_fraction_toward_each_sample() {
        let mut e = Ewma::new(0.25);
        assert!(!e.is_primed());
        assert_eq!(e.update(100.0), 100.0);
        assert_eq!(e.update(200.0), 125.0);
        // Step response: the gap shrinks by (1 - g) per sample.
        let mut e = Ewma::starting_at(0.125, 0.0);
        for n in 1..=50 {
            e.update(1.0);
            assert!((1.0 - e.value() - 0.875f64.powi(n)).abs() < 1e-12);
        }
    }

    #[test]
    fn fixed_and_float_averages_stay_within_one_unit_on_the_same_samples() {
        let mut rng = TestRng::new(1);
        for shift in [1u32, 3, 4, 8, 10] {
            for signed in [false, true] {
                let mut fixed = ShiftEwma::new(shift);
                let mut float = Ewma::new(fixed.gain());
                for step in 0..20_000 {
                    // fxp20-rate-like samples, or signed RTT-gradient-like ones,
                    // with occasional jumps.
                    let span = if step % 1000 < 10 { 1 << 24 } else { 1 << 20 };
                    let x = rng.below(span) as i64 - if signed { span as i64 / 2 } else { 0 };
                    let v = fixed.update(x) as f64;
                    let f = float.update(x as f64);
                    let e = fixed.precise() - f;
                    assert!(
                        (-1e-6..1.0 + 1e-6).contains(&e),
                        "shift {shift}: accumulator off by {e}"
                    );
                    assert!((v - f).abs() < 1.0 + 1e-6, "shift {shift}: {v} vs {f}");
                }
            }
        }
    }

    #[test]
    fn the_fixed_average_settles_exactly_on_a_constant_signal_from_either_side() {
        for (start, target) in [
            (0i64, 1000i64),
            (5000, 1000),
            (-300, 77),
            (1 << 20, 943_718),
        ] {
            let mut e = ShiftEwma::starting_at(3, start);
            for _ in 0..400 {
                e.update(target);
            }
            assert_eq!(e.value(), target, "from {start}");
        }
        // The naive `v += (x - v) >> 3` sticks 7 units short.
        let mut naive = 0i64;
        for _ in 0..400 {
            naive += (1000 - naive) >> 3;
        }
        assert_eq!(naive, 993);
    }

    #[test]
    fn the_first_sample_primes_the_fixed_average_and_huge_samples_saturate() {
        let mut e = ShiftEwma::new(4);
        assert_eq!(e.value(), 0);
        assert_eq!(e.update(-12_345), -12_345);
        let mut e = ShiftEwma::starting_at(30, i64::MAX);
        e.update(i64::MAX);
        assert_eq!(e.value(), i64::MAX >> 30);
        assert_eq!(e.footprint_bytes(), 16);
        assert_eq!(Ewma::new(0.5).footprint_bytes(), 24);
    }
}
