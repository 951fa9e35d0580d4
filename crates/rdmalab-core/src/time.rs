//! Units of the simulation: time in integer picoseconds, rates in integer bit/s,
//! sizes in bytes.
//!
//! Integer time keeps runs bit-for-bit reproducible; a picosecond resolves the
//! serialisation of one byte at 400 Gb/s (20 ps) without rounding drift.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in picoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A span of simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

impl Time {
    pub const ZERO: Time = Time(0);
    pub const NEVER: Time = Time(u64::MAX);
    pub fn ps(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// Whole nanoseconds, truncated (the ns-3 HPCC output resolution).
    pub fn ns(self) -> u64 {
        self.0 / PS_PER_NS
    }
    pub fn saturating_sub(self, other: Time) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub fn from_ns(ns: u64) -> Self {
        Duration(ns * PS_PER_NS)
    }
    pub fn from_us(us: u64) -> Self {
        Duration(us * PS_PER_US)
    }
    pub fn from_ms(ms: u64) -> Self {
        Duration(ms * PS_PER_MS)
    }
    pub fn ps(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Time {
    type Output = Duration;
    fn sub(self, o: Time) -> Duration {
        Duration(self.0 - o.0)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0 + o.0)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", fmt_ps(self.0))
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", fmt_ps(self.0))
    }
}

fn fmt_ps(ps: u64) -> String {
    if ps % PS_PER_S == 0 && ps > 0 {
        format!("{}s", ps / PS_PER_S)
    } else if ps % PS_PER_MS == 0 && ps > 0 {
        format!("{}ms", ps / PS_PER_MS)
    } else if ps % PS_PER_US == 0 && ps > 0 {
        format!("{}us", ps / PS_PER_US)
    } else if ps % PS_PER_NS == 0 {
        format!("{}ns", ps / PS_PER_NS)
    } else {
        format!("{}ps", ps)
    }
}

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub const fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }
    pub const fn mbps(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }
    pub fn bps(self) -> u64 {
        self.0
    }
    pub fn as_gbps(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time to serialise `bytes` at this rate, rounded up to a whole picosecond
    /// so that a link is never faster than its nominal rate.
    #[inline]
    pub fn serialization(self, bytes: u64) -> Duration {
        // bytes * 8 * 1e12 / rate. A frame's product fits 64 bits (up to
        // 2.3 MB), and a 64-bit division is many times cheaper than the
        // 128-bit one that large messages need; both round the same way.
        if let Some(ps_bits) = bytes
            .checked_mul(8)
            .and_then(|bits| bits.checked_mul(PS_PER_S))
        {
            return Duration(ps_bits.div_ceil(self.0));
        }
        let bits = bytes as u128 * 8;
        let ps = (bits * PS_PER_S as u128).div_ceil(self.0 as u128);
        Duration(ps as u64)
    }
    /// Bytes that fit into `d` at this rate (rounded down).
    pub fn bytes_in(self, d: Duration) -> u64 {
        ((self.0 as u128 * d.0 as u128) / (8 * PS_PER_S as u128)) as u64
    }
    /// `bytes` × this rate / `line` (a window scaled by rate, rounded down; a
    /// `line` of 0 counts as 1 bit/s). Checked every time a QP asks to send,
    /// so a product that fits 64 bits (any window below 46 MB at 400 Gb/s)
    /// takes a 64-bit division instead of the 128-bit library call.
    #[inline]
    pub fn scale_bytes(self, bytes: u64, line: Rate) -> u64 {
        let line = line.0.max(1);
        match bytes.checked_mul(self.0) {
            Some(p) => p / line,
            None => (bytes as u128 * self.0 as u128 / line as u128) as u64,
        }
    }
    /// Scale by a factor in [0, ∞), rounding to the nearest bit/s.
    pub fn scale(self, f: f64) -> Rate {
        Rate((self.0 as f64 * f).round().max(0.0) as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b % 1_000_000_000 == 0 && b > 0 {
            write!(f, "{}Gbps", b / 1_000_000_000)
        } else if b % 1_000_000 == 0 && b > 0 {
            write!(f, "{}Mbps", b / 1_000_000)
        } else {
            write!(f, "{}bps", b)
        }
    }
}

/// 2^64 as a double (exact).
const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;

/// How long a frame occupies a link or a QP's pacer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TxTime {
    /// bytes × 8 / rate, rounded up to a whole picosecond.
    #[default]
    Exact,
    /// The ns-3 HPCC simulator's `Seconds(DataRate::CalculateTxTime(bytes))`
    /// in ns-3.17: the time in seconds as a double, cut to whole nanoseconds
    /// (its 64.64 fixed point truncates). A 1048 B frame takes 83 ns at
    /// 100 Gb/s instead of 83.84, 20 ns at 400 Gb/s instead of 20.96: its
    /// links run up to 5 % faster than nominal.
    Ns3Truncated,
}

impl TxTime {
    #[inline]
    pub fn of(self, rate: Rate, bytes: u64) -> Duration {
        match self {
            TxTime::Exact => rate.serialization(bytes),
            TxTime::Ns3Truncated => {
                let secs = bytes as f64 * 8.0 / rate.bps() as f64;
                if secs < 1.0 {
                    // Every frame: secs · 2^64 is below 2^64, so a 64-bit
                    // conversion gives the same integer without the
                    // 128-bit one's library call (2.6 % of the ns-3 input's
                    // run time).
                    let fixed = (secs * TWO_TO_64) as u64;
                    return Duration::from_ns(((fixed as u128 * 1_000_000_000) >> 64) as u64);
                }
                Self::ns3_truncated_wide(secs)
            }
        }
    }

    /// ns-3.17's arithmetic for any duration: int64x64_t(double) keeps
    /// trunc(secs · 2^64); Time takes the high word of that × 10^9. A time
    /// past what a [`Duration`] holds (about 213 days) is the longest one.
    fn ns3_truncated_wide(secs: f64) -> Duration {
        let fixed = (secs * TWO_TO_64) as u128;
        fixed
            .checked_mul(1_000_000_000)
            .and_then(|x| u64::try_from(x >> 64).ok())
            .and_then(|ns| ns.checked_mul(PS_PER_NS))
            .map_or(Duration(u64::MAX), Duration)
    }
}

/// ns-3's truncated frame times ([`TxTime::Ns3Truncated`]), remembered
/// for the last few (link rate, frame size) pairs: one takes a float
/// division and two conversions, and a fabric's ports send few pairs (data
/// and ACK frames at two or three link rates). A direct-mapped table of
/// eight; a pair that is not in it is computed, so results are the same.
#[derive(Clone, Debug)]
pub struct Ns3FrameTimes {
    /// (rate in b/s, frame bytes, time in ns). An unused slot names
    /// 0 B at `u64::MAX` b/s, whose time (0 ns) it holds.
    slots: [(u64, u32, u32); 8],
}

impl Default for Ns3FrameTimes {
    fn default() -> Self {
        Ns3FrameTimes {
            slots: [(u64::MAX, 0, 0); 8],
        }
    }
}

impl Ns3FrameTimes {
    /// The same as `TxTime::Ns3Truncated.of(rate, bytes)`.
    #[inline]
    pub fn of(&mut self, rate: Rate, bytes: u64) -> Duration {
        let i = (bytes ^ (rate.bps() >> 27)) as usize & 7;
        let (r, b, ns) = self.slots[i];
        if r == rate.bps() && b as u64 == bytes {
            return Duration::from_ns(ns as u64);
        }
        let d = TxTime::Ns3Truncated.of(rate, bytes);
        if let (Ok(b), Ok(ns), 0) = (
            u32::try_from(bytes),
            u32::try_from(d.ps() / PS_PER_NS),
            d.ps() % PS_PER_NS,
        ) {
            self.slots[i] = (rate.bps(), b, ns);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns3_tx_times_are_cut_to_whole_nanoseconds() {
        let ns3 = |b, g| TxTime::Ns3Truncated.of(Rate::gbps(g), b).ps() / 1000;
        // Values the ns-3.17 arithmetic gives (even an exact 80 ns comes out as 79).
        assert_eq!(
            (
                ns3(1048, 100),
                ns3(1000, 100),
                ns3(60, 100),
                ns3(1048, 400),
                ns3(1048, 25)
            ),
            (83, 79, 4, 20, 335)
        );
        assert_eq!(TxTime::Exact.of(Rate::gbps(100), 1048), Duration(83_840));
    }

    #[test]
    fn ns3_tx_times_below_a_second_match_the_wide_arithmetic() {
        // The 64-bit path for frames against the 128-bit one for any time,
        // at link rates and at the odd rates CC gives a QP's pacer.
        let rates = [
            1,
            3,
            1_000_000,
            999_999_937,
            25_000_000_000,
            100_000_000_000,
            400_000_000_000,
        ];
        for r in rates.map(Rate) {
            for bytes in (1u64..70_000).step_by(37).chain([4_095, 4_096, 9_000]) {
                let secs = bytes as f64 * 8.0 / r.bps() as f64;
                assert_eq!(
                    TxTime::Ns3Truncated.of(r, bytes),
                    TxTime::ns3_truncated_wide(secs),
                    "{bytes} B at {r:?}"
                );
            }
        }
        // Just below a second, and beyond: both sides of the branch.
        let r = Rate(8_000_000);
        assert_eq!(
            TxTime::Ns3Truncated.of(r, 999_999).ps(),
            999_999_000_000 - 1_000
        );
        assert_eq!(
            TxTime::Ns3Truncated.of(r, 3_000_000).ps(),
            3_000_000_000_000
        );
        // Past what a Duration holds: the longest one, not a wrapped one.
        assert_eq!(
            TxTime::Ns3Truncated.of(Rate(3), 1 << 40),
            Duration(u64::MAX)
        );
    }

    #[test]
    fn remembered_ns3_frame_times_are_the_computed_ones() {
        let mut memo = Ns3FrameTimes::default();
        // (100 and 50 Mb/s share every size's slot.)
        let rates = [
            Rate::mbps(100),
            Rate::mbps(50),
            Rate(3),
            Rate::gbps(25),
            Rate::gbps(100),
            Rate::gbps(400),
            Rate(u64::MAX),
        ];
        let sizes = [0u64, 1, 64, 66, 1048, 1114, 9000, 1 << 33, 1 << 40];
        // Twice round, so the second finds what the first remembered (and
        // pairs that share a slot evict each other).
        for _ in 0..2 {
            for r in rates {
                for b in sizes {
                    assert_eq!(
                        memo.of(r, b),
                        TxTime::Ns3Truncated.of(r, b),
                        "{b} B at {r:?}"
                    );
                }
            }
        }
        let hits = memo.slots.iter().filter(|s| s.0 != u64::MAX).count();
        assert!(hits >= 4, "{:?}", memo.slots);
    }

    #[test]
    fn serialization_of_a_1000_byte_frame_at_100g_is_80ns() {
        assert_eq!(Rate::gbps(100).serialization(1000), Duration::from_ns(80));
    }

    #[test]
    fn serialization_rounds_up_so_links_are_never_fast() {
        // 1 byte at 3 bit/s = 2.666.. s
        assert_eq!(Rate(3).serialization(1).0, 2_666_666_666_667);
    }

    #[test]
    fn serialization_is_the_same_on_both_sides_of_the_64_bit_path() {
        // 2,305,843 B is the largest whose bits x 10^12 fit 64 bits.
        for bytes in [1u64, 1048, 2_305_843, 2_305_844, 1 << 40] {
            for r in [Rate(3), Rate::gbps(25), Rate::gbps(400)] {
                let want = (bytes as u128 * 8 * PS_PER_S as u128).div_ceil(r.0 as u128);
                // (`as u64`: the 128-bit path keeps the low word, as it always did.)
                assert_eq!(r.serialization(bytes).0, want as u64, "{bytes} B at {r:?}");
            }
        }
    }

    #[test]
    fn scale_bytes_is_the_128_bit_product_over_the_line_rate() {
        // Both sides of the 64-bit path, a line rate of 0, and a result
        // whose high bits the old arithmetic cut off (`as u64`).
        for bytes in [0u64, 1, 150_000, 46_116_860, 46_116_861, u64::MAX] {
            for r in [
                Rate(0),
                Rate(3),
                Rate::gbps(25),
                Rate::gbps(400),
                Rate(u64::MAX),
            ] {
                for line in [Rate(0), Rate(7), Rate::gbps(100), Rate::gbps(400)] {
                    let want = (bytes as u128 * r.0 as u128 / line.0.max(1) as u128) as u64;
                    assert_eq!(
                        r.scale_bytes(bytes, line),
                        want,
                        "{bytes} B × {r:?} / {line:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn bytes_in_inverts_serialization() {
        let r = Rate::gbps(25);
        assert_eq!(r.bytes_in(r.serialization(4096)), 4096);
    }
}
