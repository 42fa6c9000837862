//! The figures the benchmarks print (`tests/benches/`): medians,
//! percentiles, and durations in milliseconds or microseconds.

use std::time::Duration;

/// The median of `v` (sorts it): the middle sample, or the mean of the two
/// middle ones for an even count.
///
/// Panics on an empty slice (a benchmark that measured nothing).
pub fn median(v: &mut [Duration]) -> Duration {
    assert!(!v.is_empty(), "a median of no samples");
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// The `p` quantile (0.0–1.0) of `sorted` (ascending), by the nearest
/// rank.
///
/// Panics on an empty slice.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    assert!(!sorted.is_empty(), "a percentile of no samples");
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `d` in microseconds.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        let mut v = [4, 1, 3, 2].map(Duration::from_millis);
        assert_eq!(median(&mut v), Duration::from_micros(2500));
        let mut v = [5, 1, 3].map(Duration::from_millis);
        assert_eq!(median(&mut v), Duration::from_millis(3));
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<Duration> = (1..=101).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 0.5), Duration::from_millis(51));
        assert_eq!(percentile(&v, 0.99), Duration::from_millis(100));
        assert_eq!(percentile(&v, 1.0), Duration::from_millis(101));
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
        assert_eq!(us(Duration::from_micros(7)), 7.0);
    }
}
