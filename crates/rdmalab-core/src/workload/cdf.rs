//! Flow-size distributions in the ns-3 HPCC simulator's format: one
//! `size_bytes cdf_percent` pair per line, first `0 0`, last `... 100`.
//! Sizes are drawn by linear interpolation between points, as its
//! `custom_rand.py` does.

use crate::rng::RngStream;

/// The CDFs shipped with rdmalab (from the HPCC simulator's `traffic_gen/`,
/// and Cache Follower from the SRNIC authors' simulator, the same format).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "websearch",
        include_str!("../../data/flow-size-cdf/WebSearch_distribution.txt"),
    ),
    (
        "fbhdp",
        include_str!("../../data/flow-size-cdf/FbHdp_distribution.txt"),
    ),
    (
        "alistorage2019",
        include_str!("../../data/flow-size-cdf/AliStorage2019.txt"),
    ),
    (
        "googlerpc2008",
        include_str!("../../data/flow-size-cdf/GoogleRPC2008.txt"),
    ),
    (
        "cachefollower",
        include_str!("../../data/flow-size-cdf/CacheFollower_distribution.txt"),
    ),
];

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSizeCdf {
    /// (size in bytes, cumulative percent), sizes and percents non-decreasing.
    points: Vec<(f64, f64)>,
}

impl FlowSizeCdf {
    pub fn builtin(name: &str) -> Option<Self> {
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| Self::parse(t).expect("shipped CDFs parse"))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 2 {
                return Err(format!(
                    "line {}: `{line}` must be `size_bytes cdf_percent`",
                    i + 1
                ));
            }
            let size: f64 = f[0]
                .parse()
                .map_err(|_| format!("line {}: size `{}` is not a number", i + 1, f[0]))?;
            let pct: f64 = f[1]
                .parse()
                .map_err(|_| format!("line {}: percent `{}` is not a number", i + 1, f[1]))?;
            points.push((size, pct));
        }
        Self::from_points(points)
    }

    pub fn from_points(points: Vec<(f64, f64)>) -> Result<Self, String> {
        if points.len() < 2 {
            return Err("a CDF needs at least two points".into());
        }
        for w in points.windows(2) {
            if w[1].0 < w[0].0 || w[1].1 < w[0].1 {
                return Err(format!(
                    "points must not decrease: ({}, {}) then ({}, {})",
                    w[0].0, w[0].1, w[1].0, w[1].1
                ));
            }
        }
        let last = points.last().unwrap().1;
        if (last - 100.0).abs() > 1e-9 {
            return Err(format!("the last point must reach 100 percent, not {last}"));
        }
        if points[0].0 < 0.0 || points[0].1 < 0.0 {
            return Err("sizes and percents must be non-negative".into());
        }
        Ok(FlowSizeCdf { points })
    }

    /// Mean size in bytes (trapezoidal, consistent with linear interpolation).
    pub fn mean(&self) -> f64 {
        let mut m = 0.0;
        let mut prev = (0.0, 0.0);
        for &(s, p) in &self.points {
            m += (s + prev.0) / 2.0 * (p - prev.1) / 100.0;
            prev = (s, p);
        }
        m
    }

    pub fn sample(&self, rng: &mut RngStream) -> u64 {
        let u = rng.next_f64() * 100.0;
        let mut prev = self.points[0];
        for &(s, p) in &self.points {
            if u <= p {
                if p == prev.1 {
                    return s.round() as u64;
                }
                let x = prev.0 + (u - prev.1) / (p - prev.1) * (s - prev.0);
                return x.round() as u64;
            }
            prev = (s, p);
        }
        self.points.last().unwrap().0 as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_cdfs_have_their_documented_means() {
        // Means from the reference notes on the HPCC simulator's traffic_gen.
        let ws = FlowSizeCdf::builtin("websearch").unwrap().mean();
        assert!((ws - 1_711_250.0).abs() < 1.0, "{ws}");
        let fb = FlowSizeCdf::builtin("fbhdp").unwrap().mean();
        assert!((fb - 120_421.0).abs() / 120_421.0 < 0.01, "{fb}");
    }

    #[test]
    fn samples_follow_the_cdf() {
        let c = FlowSizeCdf::builtin("websearch").unwrap();
        let mut rng = RngStream::new(3, "t");
        let n = 100_000;
        let draws: Vec<u64> = (0..n).map(|_| c.sample(&mut rng)).collect();
        let below_200k = draws.iter().filter(|&&d| d <= 200_000).count() as f64 / n as f64;
        assert!((below_200k - 0.60).abs() < 0.01, "{below_200k}");
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / c.mean() - 1.0).abs() < 0.03, "{mean}");
    }

    #[test]
    fn bad_cdfs_are_refused() {
        assert!(FlowSizeCdf::parse("0 0\n10 50")
            .unwrap_err()
            .contains("100 percent"));
        assert!(FlowSizeCdf::parse("0 0\n10 60\n5 100")
            .unwrap_err()
            .contains("must not decrease"));
    }
}
