//! Fixed-point arithmetic for cores without a fast FPU: the [`Q16`] type and
//! the NVIDIA DOCA PCC conventions.
//!
//! DPA cores make floating point expensive, so SCR and DOCA PCC controllers
//! compute in fixed point. DOCA's conventions (`doca_pcc_dev_utils.h`):
//! a *rate* is `fxp20`, a fraction of line rate scaled by `2^20`
//! (`1 << 20` = line rate); *gains and factors* are `fxp16` (`1 << 16` = 1.0);
//! `fxp_mult(a, b) = (a·b) >> 16`, so an fxp16 factor times an fxp20 rate is
//! an fxp20 rate. The helpers here reproduce those definitions so a DOCA
//! algorithm ports by renaming. The hardware-intrinsic ones (`fxp_recip`,
//! `fxp_log2`, `fxp_power2`), whose exact rounding DOCA does not document,
//! are computed to within one fxp16 step (`fxp_recip` and `fxp_power2`
//! rounded to nearest).
//!
//! [`Q16`] is a signed Q16.16 number in an `i32` for the general case
//! (gradients, differences). Its operations saturate instead of wrapping:
//! a rate clamped at the top recovers, a rate wrapped to zero does not.
//! Every `Q16` operation returns the value nearest to the exact result on
//! its (represented) operands, so it is within `2^-17` of f64 arithmetic on
//! the same operands whenever the result is in range.
//!
//! Footprint: a `Q16` is 4 bytes; fxp16/fxp20 values are plain `u32`s.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// Signed Q16.16 fixed point: `raw / 65536`, range `[-32768, 32768)`, step `2^-16`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Q16(i32);

const SCALE: f64 = 65536.0;

impl Q16 {
    pub const FRAC_BITS: u32 = 16;
    pub const ZERO: Q16 = Q16(0);
    pub const ONE: Q16 = Q16(1 << 16);
    pub const MAX: Q16 = Q16(i32::MAX);
    pub const MIN: Q16 = Q16(i32::MIN);
    /// The smallest step, `2^-16`.
    pub const EPSILON: Q16 = Q16(1);

    #[inline]
    pub const fn from_raw(raw: i32) -> Q16 {
        Q16(raw)
    }

    #[inline]
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// `n` as Q16.16, saturating outside `[-32768, 32767]`.
    #[inline]
    pub const fn from_int(n: i32) -> Q16 {
        saturate((n as i64) << 16)
    }

    /// Nearest Q16.16 to `x`; saturates outside the range, NaN gives zero.
    #[inline]
    pub fn from_f64(x: f64) -> Q16 {
        // `as` from f64 saturates and maps NaN to 0.
        Q16((x * SCALE).round() as i32)
    }

    #[inline]
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / SCALE
    }

    /// An fxp16 factor (DOCA's unsigned convention), saturating at [`Q16::MAX`].
    #[inline]
    pub const fn from_fxp16(a: u32) -> Q16 {
        Q16(if a > i32::MAX as u32 {
            i32::MAX
        } else {
            a as i32
        })
    }

    /// As an fxp16 factor; negative values become 0.
    #[inline]
    pub const fn to_fxp16(self) -> u32 {
        if self.0 < 0 {
            0
        } else {
            self.0 as u32
        }
    }

    /// Largest integer not above the value.
    #[inline]
    pub const fn floor(self) -> i32 {
        self.0 >> 16
    }

    #[inline]
    pub const fn abs(self) -> Q16 {
        Q16(self.0.saturating_abs())
    }

    #[inline]
    pub const fn saturating_add(self, rhs: Q16) -> Q16 {
        Q16(self.0.saturating_add(rhs.0))
    }

    #[inline]
    pub const fn saturating_sub(self, rhs: Q16) -> Q16 {
        Q16(self.0.saturating_sub(rhs.0))
    }

    /// Product rounded to nearest (ties up), saturating.
    #[inline]
    pub const fn saturating_mul(self, rhs: Q16) -> Q16 {
        let p = self.0 as i64 * rhs.0 as i64;
        saturate((p + (1 << 15)) >> 16)
    }

    /// Quotient rounded to nearest (ties away from zero), saturating;
    /// dividing by zero gives [`Q16::MAX`] or [`Q16::MIN`] by the sign of `self`
    /// (zero for `0 / 0`) rather than trapping.
    #[inline]
    pub const fn saturating_div(self, rhs: Q16) -> Q16 {
        let n = (self.0 as i64) << 16;
        let d = rhs.0 as i64;
        if d == 0 {
            return if n > 0 {
                Q16::MAX
            } else if n < 0 {
                Q16::MIN
            } else {
                Q16::ZERO
            };
        }
        let q = (n.abs() + d.abs() / 2) / d.abs();
        saturate(if (n < 0) != (d < 0) { -q } else { q })
    }

    /// Bytes of state.
    #[inline]
    pub const fn footprint_bytes(self) -> usize {
        std::mem::size_of::<Q16>()
    }
}

#[inline]
const fn saturate(x: i64) -> Q16 {
    Q16(if x > i32::MAX as i64 {
        i32::MAX
    } else if x < i32::MIN as i64 {
        i32::MIN
    } else {
        x as i32
    })
}

impl Add for Q16 {
    type Output = Q16;
    #[inline]
    fn add(self, rhs: Q16) -> Q16 {
        self.saturating_add(rhs)
    }
}

impl Sub for Q16 {
    type Output = Q16;
    #[inline]
    fn sub(self, rhs: Q16) -> Q16 {
        self.saturating_sub(rhs)
    }
}

impl Mul for Q16 {
    type Output = Q16;
    #[inline]
    fn mul(self, rhs: Q16) -> Q16 {
        self.saturating_mul(rhs)
    }
}

impl Div for Q16 {
    type Output = Q16;
    #[inline]
    fn div(self, rhs: Q16) -> Q16 {
        self.saturating_div(rhs)
    }
}

impl Neg for Q16 {
    type Output = Q16;
    #[inline]
    fn neg(self) -> Q16 {
        Q16(self.0.saturating_neg())
    }
}

impl std::fmt::Display for Q16 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_f64())
    }
}

/// 1.0 as an fxp16 gain or factor.
pub const FXP16_ONE: u32 = 1 << 16;

/// Line rate as an fxp20 rate (DOCA's `DOCA_PCC_DEV_MAX_RATE`).
pub const FXP20_LINE_RATE: u32 = 1 << 20;

/// Nearest fxp16 to `x` (saturating; negative and NaN give 0).
#[inline]
pub fn fxp16(x: f64) -> u32 {
    (x * SCALE).round() as u32
}

#[inline]
pub fn fxp16_to_f64(a: u32) -> f64 {
    a as f64 / SCALE
}

/// Nearest fxp20 rate to `fraction` of line rate (saturating; negative and NaN give 0).
#[inline]
pub fn fxp20(fraction: f64) -> u32 {
    (fraction * FXP20_LINE_RATE as f64).round() as u32
}

/// An fxp20 rate as a fraction of line rate.
#[inline]
pub fn fxp20_to_f64(rate: u32) -> f64 {
    rate as f64 / FXP20_LINE_RATE as f64
}

/// An fxp20 rate in bit/s on a port of `line_rate_bps` (rounded down).
#[inline]
pub fn fxp20_to_bps(rate: u32, line_rate_bps: u64) -> u64 {
    ((rate as u128 * line_rate_bps as u128) >> 20).min(u64::MAX as u128) as u64
}

/// `bps` as an fxp20 fraction of `line_rate_bps` (rounded down, saturating;
/// 0 for a zero line rate).
#[inline]
pub fn fxp20_from_bps(bps: u64, line_rate_bps: u64) -> u32 {
    if line_rate_bps == 0 {
        return 0;
    }
    (((bps as u128) << 20) / line_rate_bps as u128).min(u32::MAX as u128) as u32
}

/// Full 64-bit product (`doca_pcc_dev_mult`).
#[inline]
pub fn mult(a: u32, b: u32) -> u64 {
    a as u64 * b as u64
}

/// `(a·b) >> 16` truncated to 32 bits, exactly as `doca_pcc_dev_fxp_mult`:
/// an fxp16 factor times an fxp16 or fxp20 value, rounded down. It wraps if
/// the result exceeds `u32::MAX`, which rates (≤ 2^20) times factors below
/// 2^28 (4096.0) never do.
#[inline]
pub fn fxp_mult(a: u32, b: u32) -> u32 {
    (mult(a, b) >> 16) as u32
}

/// fxp16 reciprocal `1/a` (`doca_pcc_dev_fxp_recip`), rounded to nearest;
/// saturates at `u32::MAX` for `a ≤ 1` (including 0).
#[inline]
pub fn fxp_recip(a: u32) -> u32 {
    if a == 0 {
        return u32::MAX;
    }
    (((1u64 << 32) + (a as u64 >> 1)) / a as u64).min(u32::MAX as u64) as u32
}

/// Find last set: 1-based index of the highest set bit, 0 for 0
/// (`doca_pcc_dev_fls`, which leaves 0 undefined).
#[inline]
pub fn fls(a: u32) -> u32 {
    32 - a.leading_zeros()
}

/// Integer `⌊log2 a⌋`, 0 for `a = 0` (the `fls(a) - 1` idiom of the DOCA samples).
#[inline]
pub fn ilog2(a: u32) -> u32 {
    fls(a).saturating_sub(1)
}

/// `log2(a)` of an fxp16 value, as a signed fxp16 (`doca_pcc_dev_fxp_log2`),
/// within `2^-16` of the exact value. `a = 0` gives `i32::MIN`.
///
/// Shift-and-square: normalise into `[1, 2)`, then each squaring yields one
/// fraction bit; 20 bits are computed and rounded to 16.
#[inline]
pub fn fxp_log2(a: u32) -> i32 {
    if a == 0 {
        return i32::MIN;
    }
    let msb = ilog2(a);
    let mut y = (a as u64) << (31 - msb); // mantissa in [1, 2) as Q31
    let mut frac = 0u32;
    for _ in 0..20 {
        y = (y * y) >> 31;
        frac <<= 1;
        if y >= 1 << 32 {
            y >>= 1;
            frac |= 1;
        }
    }
    ((msb as i32 - 16) << 16) + ((frac + 8) >> 4) as i32
}

/// `2^x` for a signed fxp16 exponent, as an fxp16 value
/// (`doca_pcc_dev_fxp_power2`), rounded to nearest, so within one step
/// (`2^-16`) of the exact value; saturates at `u32::MAX` for `x ≥ 16`.
///
/// `2^x = 2^⌊x⌋ · e^(frac·ln 2)`: the integer part is a shift, the fraction
/// an 18-term series in Q62 (precise enough to round correctly even when the
/// result fills all 32 bits).
#[inline]
pub fn fxp_power2(x: i32) -> u32 {
    const ONE_Q62: u128 = 1 << 62;
    const LN2_Q62: u128 = 3_196_577_161_300_663_915;
    let whole = x >> 16;
    if whole >= 16 {
        return u32::MAX;
    }
    // raw = 2^frac (Q62) · 2^(whole + 16) / 2^62
    let shift = (46 - whole) as u32; // ≥ 31
    if shift > 64 {
        return 0; // below half a step
    }
    let t = ((x & 0xFFFF) as u128 * LN2_Q62) >> 16; // frac·ln 2 in Q62, < 1
    let (mut term, mut sum) = (ONE_Q62, ONE_Q62);
    for k in 1..=18u128 {
        term = ((term * t) >> 62) / k;
        sum += term;
    }
    ((sum + (1 << (shift - 1))) >> shift).min(u32::MAX as u128) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::state::TestRng;

    const HALF_STEP: f64 = 1.0 / 131072.0; // 2^-17
    const STEP: f64 = 1.0 / 65536.0; // 2^-16

    /// A Q16 spread over magnitudes 2^-8 .. 2^7, either sign.
    fn random_q16(rng: &mut TestRng) -> Q16 {
        let mag = 2f64.powf(rng.next_f64() * 15.0 - 8.0);
        Q16::from_f64(if rng.below(2) == 0 { mag } else { -mag })
    }

    #[test]
    fn q16_conversion_rounds_to_the_nearest_step() {
        let mut rng = TestRng::new(1);
        for _ in 0..100_000 {
            let x = (rng.next_f64() - 0.5) * 60_000.0;
            assert!((Q16::from_f64(x).to_f64() - x).abs() <= HALF_STEP, "{x}");
        }
        assert_eq!(
            Q16::from_f64(1.5),
            Q16::from_int(1) + Q16::from_raw(1 << 15)
        );
        assert_eq!(Q16::from_f64(-2.25).floor(), -3);
        assert_eq!(Q16::from_f64(f64::NAN), Q16::ZERO);
    }

    #[test]
    fn q16_add_and_sub_are_exact_until_they_saturate() {
        let mut rng = TestRng::new(2);
        for _ in 0..100_000 {
            let (a, b) = (random_q16(&mut rng), random_q16(&mut rng));
            assert_eq!((a + b).to_f64(), a.to_f64() + b.to_f64());
            assert_eq!((a - b).to_f64(), a.to_f64() - b.to_f64());
        }
    }

    #[test]
    fn q16_mul_and_div_are_within_half_a_step_of_f64_on_the_same_operands() {
        let mut rng = TestRng::new(3);
        for _ in 0..200_000 {
            let (a, b) = (random_q16(&mut rng), random_q16(&mut rng));
            let (x, y) = (a.to_f64(), b.to_f64());
            assert!(((a * b).to_f64() - x * y).abs() <= HALF_STEP, "{x} * {y}");
            if (x / y).abs() < 32767.0 {
                assert!(((a / b).to_f64() - x / y).abs() <= HALF_STEP, "{x} / {y}");
            }
        }
    }

    #[test]
    fn q16_saturates_at_the_ends_of_its_range_instead_of_wrapping() {
        let big = Q16::from_int(30_000);
        assert_eq!(big + big, Q16::MAX);
        assert_eq!(-big - big, Q16::MIN);
        assert_eq!(big * Q16::from_int(2), Q16::MAX);
        assert_eq!(big * Q16::from_int(-2), Q16::MIN);
        assert_eq!(big / Q16::from_f64(0.5), Q16::MAX);
        assert_eq!(Q16::ONE / Q16::ZERO, Q16::MAX);
        assert_eq!(-Q16::ONE / Q16::ZERO, Q16::MIN);
        assert_eq!(Q16::ZERO / Q16::ZERO, Q16::ZERO);
        assert_eq!(-Q16::MIN, Q16::MAX);
        assert_eq!(Q16::from_int(40_000), Q16::MAX);
        assert_eq!(Q16::from_f64(1e12), Q16::MAX);
        assert_eq!(Q16::MIN.abs(), Q16::MAX);
        assert_eq!(Q16::from_fxp16(u32::MAX), Q16::MAX);
        assert_eq!(Q16::from_f64(-0.5).to_fxp16(), 0);
        assert_eq!(Q16::ONE.footprint_bytes(), 4);
    }

    #[test]
    fn fxp_mult_scales_an_fxp20_rate_by_an_fxp16_factor_like_doca() {
        // rtt_template: on a delay signal, rate *= (1 - UPDATE_FACTOR), f = 6553.
        let factor = FXP16_ONE - 6553;
        let rate = fxp_mult(FXP20_LINE_RATE, factor);
        assert_eq!(rate, (((1u64 << 20) * factor as u64) >> 16) as u32);
        assert!((fxp20_to_f64(rate) - 0.9).abs() < 2e-4);
        // Truncation: the result is the exact product rounded down, within one fxp20 step.
        let mut rng = TestRng::new(4);
        for _ in 0..100_000 {
            let (f, r) = (
                rng.below(4 * FXP16_ONE as u64) as u32,
                rng.below(FXP20_LINE_RATE as u64 + 1) as u32,
            );
            let exact = fxp16_to_f64(f) * fxp20_to_f64(r);
            let got = fxp20_to_f64(fxp_mult(f, r));
            assert!(
                got <= exact && exact - got < 1.0 / FXP20_LINE_RATE as f64,
                "{f} x {r}"
            );
        }
    }

    #[test]
    fn fxp20_rates_convert_to_and_from_line_rate_fractions_and_bits_per_second() {
        assert_eq!(fxp20(1.0), FXP20_LINE_RATE);
        assert_eq!(fxp20(0.05), 52_429); // DOCA's AI default is (2^20·5)/100 = 52428, truncated
        assert_eq!(fxp20(-0.1), 0);
        assert_eq!(fxp16(0.85), 55_706);
        assert_eq!(
            fxp20_to_bps(FXP20_LINE_RATE, 100_000_000_000),
            100_000_000_000
        );
        assert_eq!(fxp20_to_bps(1 << 19, 200_000_000_000), 100_000_000_000);
        assert_eq!(fxp20_from_bps(25_000_000_000, 100_000_000_000), 1 << 18);
        assert_eq!(fxp20_from_bps(1, 0), 0);
        let mut rng = TestRng::new(5);
        for _ in 0..10_000 {
            let r = rng.below(FXP20_LINE_RATE as u64 + 1) as u32;
            let bps = fxp20_to_bps(r, 400_000_000_000);
            // One fxp20 step at 400G is about 381 kbit/s; the round trip loses at most one step.
            assert!(r - fxp20_from_bps(bps, 400_000_000_000) <= 1);
        }
    }

    #[test]
    fn fxp_recip_is_the_correctly_rounded_reciprocal() {
        let mut rng = TestRng::new(6);
        for _ in 0..100_000 {
            let a = ((rng.next_u64() >> 32) as u32 >> rng.below(31)).max(2);
            let exact = (1u64 << 32) as f64 / a as f64;
            assert!((fxp_recip(a) as f64 - exact).abs() <= 0.5, "1/{a}");
        }
        assert_eq!(fxp_recip(FXP16_ONE), FXP16_ONE);
        assert_eq!(fxp_recip(2 * FXP16_ONE), FXP16_ONE / 2);
        assert_eq!(fxp_recip(1), u32::MAX);
        assert_eq!(fxp_recip(0), u32::MAX);
    }

    #[test]
    fn fls_and_ilog2_follow_the_doca_definition() {
        for a in (1..=u32::MAX).step_by(65_537).chain([1, 2, 3, u32::MAX]) {
            assert_eq!(fls(a), 32 - a.leading_zeros());
            assert_eq!(ilog2(a), a.ilog2());
        }
        assert_eq!((fls(0), ilog2(0)), (0, 0));
    }

    #[test]
    fn fxp_log2_is_within_one_step_of_f64() {
        let mut rng = TestRng::new(7);
        for _ in 0..100_000 {
            let a = ((rng.next_u64() >> 32) as u32 >> rng.below(32)).max(1);
            let exact = (a as f64 / 65536.0).log2();
            assert!(
                (fxp_log2(a) as f64 / 65536.0 - exact).abs() <= STEP,
                "log2 of {a}"
            );
        }
        assert_eq!(fxp_log2(FXP16_ONE), 0);
        assert_eq!(fxp_log2(8 * FXP16_ONE), 3 << 16);
        assert_eq!(fxp_log2(FXP16_ONE / 4), -2 << 16);
        assert_eq!(fxp_log2(0), i32::MIN);
    }

    #[test]
    fn fxp_power2_is_within_one_step_of_f64_and_inverts_log2() {
        let mut rng = TestRng::new(8);
        for _ in 0..100_000 {
            let x = rng.below(36 << 16) as i32 - (20 << 16); // exponents in [-20, 16)
            let exact = 2f64.powf(x as f64 / 65536.0) * 65536.0;
            let got = fxp_power2(x) as f64;
            if exact < u32::MAX as f64 {
                assert!((got - exact).abs() <= 1.0, "2^{x}: {got} vs {exact}");
            }
        }
        assert_eq!(fxp_power2(0), FXP16_ONE);
        assert_eq!(fxp_power2(3 << 16), 8 * FXP16_ONE);
        assert_eq!(fxp_power2(-1 << 16), FXP16_ONE / 2);
        assert_eq!(fxp_power2(16 << 16), u32::MAX);
        assert_eq!(fxp_power2(i32::MIN), 0);
        for a in [3u32, 1000, FXP16_ONE + 1, 123_456_789] {
            let back = fxp_power2(fxp_log2(a)) as f64;
            assert!(
                (back - a as f64).abs() / a as f64 <= 2.0 * STEP + 1.0 / a as f64,
                "{a} -> {back}"
            );
        }
    }
}
