//! Quantities with units, as scenarios write them: `100Gbps`, `1us`, `32MiB`.
//! A bare number is refused: a value without a unit is the commonest
//! misconfiguration in network simulation.

use crate::time::{Duration, Rate};

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let b = s.as_bytes();
    // An exponent's `e` or `E` belongs to the number only when a digit (or
    // a sign and a digit) follows it; no unit starts with either letter.
    let exponent_at = |i: usize| {
        let d = |j: usize| b.get(j).is_some_and(u8::is_ascii_digit);
        matches!(b[i], b'e' | b'E') && (d(i + 1) || (matches!(b.get(i + 1), Some(b'+' | b'-')) && d(i + 2)))
    };
    let mut end = 0;
    while end < b.len() {
        if b[end].is_ascii_digit() || matches!(b[end], b'.' | b'-' | b'+') {
            end += 1;
        } else if exponent_at(end) {
            end += 2;
        } else {
            break;
        }
    }
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim()))
}

/// The largest rate any key takes: 10 Tb/s, 25x the fastest link built today.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// The longest duration any key takes: one hour of simulated time. Keeps
/// `now + duration` far from u64 picoseconds' end (213 days) for any key.
pub const MAX_DURATION_PS: u64 = 3_600_000_000_000_000;
/// The largest size any key takes: 1 TiB. A flow, buffer or message larger
/// than that is a typo, and sums over 65,536 ports of it stay inside u64.
pub const MAX_SIZE_BYTES: u64 = 1 << 40;

/// `v` in the base unit, rounded; refused if negative, not finite or above
/// `max` (named by `allowed`), never saturated. Every `max` is below 2^53,
/// where f64 still holds every integer exactly.
fn scaled(v: f64, mult: f64, what: &str, s: &str, max: u64, allowed: &str) -> Result<u64, String> {
    let x = v * mult;
    if x < 0.0 {
        return Err(format!(
            "`{s}` is negative; allowed: a {what} of 0 or more, at most {allowed}"
        ));
    }
    if !x.is_finite() {
        return Err(format!("`{s}` is not a valid {what}"));
    }
    if x.round() > max as f64 {
        return Err(format!(
            "`{s}` is too large a {what}; allowed: at most {allowed}"
        ));
    }
    Ok(x.round() as u64)
}

/// A data rate: `bps`, `Kbps`, `Mbps`, `Gbps`, `Tbps` (also `Gb/s` forms).
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("`{s}` is not a rate; write it like `100Gbps`"))?;
    if let Some(prefix) = unit
        .strip_suffix("Bps")
        .or_else(|| unit.strip_suffix("B/s"))
    {
        // `B` is bytes (ns-3's DataRate reads `1GB/s` as 8 Gb/s); read
        // case-insensitively it would be bits, a rate 8 times too small.
        return Err(format!(
            "`{s}` is in bytes per second (`B`); rates are in bits per second: write `{}{prefix}bps`",
            v * 8.0
        ));
    }
    let mult = match unit.to_ascii_lowercase().replace("/s", "ps").as_str() {
        "bps" | "bit/s" => 1.0,
        "kbps" => 1e3,
        "mbps" => 1e6,
        "gbps" => 1e9,
        "tbps" => 1e12,
        "" => {
            return Err(format!(
            "`{s}` has no unit; write a rate like `100Gbps` (units: bps, Kbps, Mbps, Gbps, Tbps)"
        ))
        }
        _ => {
            return Err(format!(
                "`{s}` has an unknown rate unit `{unit}` (units: bps, Kbps, Mbps, Gbps, Tbps)"
            ))
        }
    };
    Ok(Rate(scaled(v, mult, "rate", s, MAX_RATE_BPS, "10Tbps")?))
}

/// A duration: `ps`, `ns`, `us` (or `µs`, with the micro sign or the Greek
/// mu, which look alike), `ms`, `s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("`{s}` is not a duration; write it like `10us`"))?;
    let mult = match unit {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        "" => {
            return Err(format!(
                "`{s}` has no unit; write a duration like `10us` (units: ps, ns, us, ms, s)"
            ))
        }
        _ => {
            return Err(format!(
                "`{s}` has an unknown time unit `{unit}` (units: ps, ns, us, ms, s)"
            ))
        }
    };
    Ok(Duration(scaled(
        v,
        mult,
        "duration",
        s,
        MAX_DURATION_PS,
        "3600s (one hour)",
    )?))
}

/// A size: `B`, `KB`/`MB`/`GB`/`TB` (powers of 1000) or `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("`{s}` is not a size; write it like `64KB`"))?;
    let mult =
        match unit {
            "B" => 1.0,
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            "" => return Err(format!(
                "`{s}` has no unit; write a size like `64KB` (units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
            )),
            _ => {
                return Err(format!(
                    "`{s}` has an unknown size unit `{unit}` (units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
                ))
            }
        };
    scaled(v, mult, "size", s, MAX_SIZE_BYTES, "1TiB (1099511627776B)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_in_all_spellings() {
        assert_eq!(parse_rate("100Gbps").unwrap(), Rate::gbps(100));
        assert_eq!(parse_rate("100 Gb/s").unwrap(), Rate::gbps(100));
        assert_eq!(parse_rate("2.5Gbps").unwrap(), Rate(2_500_000_000));
        assert_eq!(parse_rate("50Mbps").unwrap(), Rate::mbps(50));
    }

    /// An exponent may be written `e` or `E`, with or without a sign; a
    /// letter `e` that no digit follows is left to the unit, which names it.
    #[test]
    fn exponents_parse_in_either_case() {
        for s in ["1e3us", "1E3us", "1E+3us", "1000us", "1e6ns", "0.001E3ms", "1E-3s"] {
            assert_eq!(parse_duration(s).unwrap(), Duration(1_000_000_000), "{s}");
        }
        assert_eq!(parse_bytes("2E5B").unwrap(), 200_000);
        assert_eq!(parse_rate("1E11bps").unwrap(), Rate::gbps(100));
        let e = parse_duration("5eus").unwrap_err();
        assert!(e.contains("unknown time unit `eus`"), "{e}");
        let e = parse_duration("5E+us").unwrap_err();
        assert!(e.contains("unknown time unit `E+us`"), "{e}");
    }

    /// Micro as the micro sign (U+00B5) or the Greek mu (U+03BC), which
    /// look the same and which keyboards and editors mix.
    #[test]
    fn microseconds_take_either_mu() {
        for s in ["3us", "3\u{b5}s", "3\u{3bc}s"] {
            assert_eq!(parse_duration(s).unwrap(), Duration(3_000_000), "{s}");
        }
    }

    #[test]
    fn bytes_per_second_are_refused_with_the_rate_in_bits() {
        for (s, hint) in [
            ("100GBps", "`800Gbps`"),
            ("1.5GB/s", "`12Gbps`"),
            ("10 MB/s", "`80Mbps`"),
            ("125Bps", "`1000bps`"),
        ] {
            let e = parse_rate(s).unwrap_err();
            assert!(
                e.contains("bytes per second") && e.contains(hint),
                "{s}: {e}"
            );
        }
        // Only an upper-case `B` before `ps` or `/s` means bytes.
        assert_eq!(parse_rate("100GBPS").unwrap(), Rate::gbps(100));
        assert_eq!(parse_rate("100gbps").unwrap(), Rate::gbps(100));
    }

    #[test]
    fn bare_numbers_are_refused_with_a_hint() {
        assert!(parse_rate("100").unwrap_err().contains("no unit"));
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(parse_bytes("4096").unwrap_err().contains("no unit"));
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("1000ns").unwrap(), Duration::from_us(1));
        assert_eq!(parse_duration("0.001ms").unwrap(), Duration::from_us(1));
        assert_eq!(parse_duration("1.5us").unwrap(), Duration(1_500_000));
        assert_eq!(parse_bytes("32MiB").unwrap(), 32 << 20);
        assert_eq!(parse_bytes("1KB").unwrap(), 1000);
        assert!(parse_bytes("3 apples")
            .unwrap_err()
            .contains("unknown size unit"));
    }

    #[test]
    fn values_past_the_limits_are_refused_not_saturated() {
        assert_eq!(parse_bytes("1TiB").unwrap(), MAX_SIZE_BYTES);
        assert!(parse_bytes("1099511627777B")
            .unwrap_err()
            .contains("at most 1TiB"));
        assert!(parse_bytes("18446744073709551615B")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_bytes("1e30B").unwrap_err().contains("too large"));
        assert_eq!(parse_rate("10Tbps").unwrap(), Rate(MAX_RATE_BPS));
        assert!(parse_rate("10.001Tbps")
            .unwrap_err()
            .contains("at most 10Tbps"));
        assert_eq!(parse_duration("3600s").unwrap(), Duration(MAX_DURATION_PS));
        assert!(parse_duration("18446744073709551615ps")
            .unwrap_err()
            .contains("one hour"));
    }

    /// A negative quantity is called negative, not just "not valid".
    #[test]
    fn negative_values_are_refused_as_negative() {
        let e = parse_duration("-5us").unwrap_err();
        assert!(
            e.contains("`-5us` is negative; allowed: a duration of 0 or more"),
            "{e}"
        );
        assert!(parse_rate("-1Gbps").unwrap_err().contains("is negative"));
        assert!(parse_bytes("-4KB").unwrap_err().contains("is negative"));
        assert_eq!(parse_bytes("-0B").unwrap(), 0);
    }
}
