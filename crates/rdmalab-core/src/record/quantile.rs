//! The one quantile definition of rdmalab's outputs (docs/outputs.md,
//! "Quantiles"): the nearest rank, the q-quantile of n sorted values is the
//! ⌈q·n⌉-th smallest. `rdmalab analyze`, the report, the run summary and the
//! case-study figures compute the same in Python (`rdmalab.quantiles`), so a
//! p99 in `tenants.csv` or `apps.csv` is the p99 of the same values anywhere
//! else.

/// The 0-based index of the nearest-rank q-quantile among `n` sorted values
/// (`n` > 0): ⌈q·n⌉ − 1, at least 0. The epsilon keeps a product that
/// floating point puts just above an integer (0.07 × 100 = 7.000000000000001)
/// at that integer, as the exact product is.
pub fn nearest_rank_index(n: usize, q: f64) -> usize {
    debug_assert!(n > 0 && (0.0..=1.0).contains(&q));
    let rank = (q * n as f64 - 1e-9).ceil().max(1.0) as usize;
    rank.min(n) - 1
}

/// The nearest-rank q-quantile of `sorted` (ascending), or None if it is empty.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    (!sorted.is_empty()).then(|| sorted[nearest_rank_index(sorted.len(), q)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_is_the_ceil_q_n_th_smallest() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 0.5), Some(50));
        assert_eq!(nearest_rank(&v, 0.95), Some(95));
        assert_eq!(nearest_rank(&v, 0.99), Some(99));
        assert_eq!(nearest_rank(&v, 0.07), Some(7), "not 8: 0.07 × 100 is 7");
        assert_eq!(nearest_rank(&v, 0.0), Some(1));
        assert_eq!(nearest_rank(&v, 1.0), Some(100));
        // Ten values: the median is the 5th (not the 5th-and-6th mean, nor the 6th).
        assert_eq!(nearest_rank(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5), Some(5));
        // Twenty: p95 is the 19th, p99 the 20th.
        let w: Vec<u32> = (1..=20).collect();
        assert_eq!(nearest_rank(&w, 0.95), Some(19));
        assert_eq!(nearest_rank(&w, 0.99), Some(20));
        assert_eq!(nearest_rank(&[7.5], 0.99), Some(7.5));
        assert_eq!(nearest_rank::<u64>(&[], 0.5), None);
    }
}
