//! A fixed-size log-linear latency histogram: exact below 128 ps, then 64 sub-buckets per power of two
//! (under 1.6 % relative error), exact maximum. Recording allocates once, at the first sample.

use crate::units::Time;
use serde::Serialize;

const SUB: u64 = 64;
const BUCKETS: usize = (2 * SUB + (64 - 7) * SUB) as usize;

#[derive(Clone, Debug, Default)]
pub struct LatencyHist {
    counts: Vec<u64>,
    pub n: u64,
    pub max: Time,
    sum: u128,
}

fn index(x: u64) -> usize {
    if x < 2 * SUB {
        return x as usize;
    }
    let shift = 63 - x.leading_zeros() as u64 - 6; // x >> shift is in [64, 128)
    (shift * SUB + (x >> shift)) as usize
}

/// The largest value that falls in bucket `i` (a percentile is reported as its bucket's upper edge).
fn upper(i: usize) -> u64 {
    let i = i as u64;
    if i < 2 * SUB {
        return i;
    }
    let (shift, m) = (i / SUB - 1, i % SUB + SUB);
    ((((m + 1) as u128) << shift) - 1).min(u64::MAX as u128) as u64
}

/// Summary of a histogram, in microseconds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatencySummary {
    pub packets: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl LatencyHist {
    #[inline]
    pub fn record(&mut self, t: Time) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        self.counts[index(t.0)] += 1;
        self.n += 1;
        self.sum += t.0 as u128;
        self.max = self.max.max(t);
    }

    /// Another histogram's samples added to this one's (a parallel run's merge: counts do not depend on the
    /// order they were recorded in).
    pub fn add(&mut self, other: &LatencyHist) {
        if other.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.n += other.n;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    /// The q-quantile (upper edge of its bucket, never above the maximum).
    pub fn quantile(&self, q: f64) -> Time {
        if self.n == 0 {
            return Time::ZERO;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Time(upper(i).min(self.max.0));
            }
        }
        self.max
    }

    pub fn summary(&self) -> LatencySummary {
        let us = |t: Time| t.micros();
        LatencySummary {
            packets: self.n,
            mean_us: if self.n == 0 { 0.0 } else { self.sum as f64 / self.n as f64 * 1e-6 },
            p50_us: us(self.quantile(0.5)),
            p99_us: us(self.quantile(0.99)),
            p999_us: us(self.quantile(0.999)),
            max_us: us(self.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn buckets_are_contiguous_and_tight() {
        for x in [0u64, 1, 127, 128, 129, 1000, 1_234_567, u64::MAX / 2] {
            let i = index(x);
            assert!(upper(i) >= x && (i == 0 || upper(i - 1) < x), "{x}: bucket {i}");
            assert!((upper(i) - x) as f64 <= x as f64 / 64.0 + 1.0);
        }
        let mut h = LatencyHist::default();
        (1..=1000).for_each(|v| h.record(Time(v * 1000)));
        assert_eq!(h.max, Time(1_000_000));
        let p99 = h.quantile(0.99).0;
        assert!((990_000..=1_000_000).contains(&p99), "{p99}");
    }
}
