//! Exact percentiles of data read several times over, in memory that does not grow with the data: a radix
//! selection on the values' bit patterns. Each pass histograms the next byte of the values that share the
//! bytes found so far; after eight passes the byte string is the wanted value itself. The result is exactly
//! the nearest-rank percentile of the sorted data (`super::percentile`), ties and all.

/// A 64-bit key in the order `f64::total_cmp` sorts (negative values flipped, positive ones offset).
fn key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

fn value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// The passes a selection needs, one byte of the key each.
pub const PASSES: usize = 8;

struct Target {
    /// 1-based rank still wanted among the values that match `prefix`; 0: nothing to find.
    rank: u64,
    prefix: u64,
    hist: [u64; 256],
}

/// Several order statistics, each over its own sequence of values, found together in `PASSES` passes.
pub struct Selector {
    targets: Vec<Target>,
    pass: usize,
}

impl Selector {
    pub fn new() -> Selector {
        Selector { targets: Vec::new(), pass: 0 }
    }

    /// Ask for the nearest-rank `q` quantile of `n` values (NaN when `n` is 0); returns the target's index.
    pub fn quantile(&mut self, q: f64, n: u64) -> usize {
        let rank = if n == 0 { 0 } else { ((q * n as f64).ceil() as u64).clamp(1, n) };
        self.targets.push(Target { rank, prefix: 0, hist: [0; 256] });
        self.targets.len() - 1
    }

    /// Whether more passes over the data are needed.
    pub fn pending(&self) -> bool {
        self.pass < PASSES && self.targets.iter().any(|t| t.rank > 0)
    }

    /// In the current pass, one value of target `t`'s sequence.
    #[inline]
    pub fn observe(&mut self, t: usize, x: f64) {
        let shift = 56 - 8 * self.pass;
        let tg = &mut self.targets[t];
        let k = key(x);
        if tg.rank > 0 && (self.pass == 0 || (k ^ tg.prefix) >> (shift + 8) == 0) {
            tg.hist[((k >> shift) & 0xFF) as usize] += 1;
        }
    }

    /// End a pass: each target keeps the byte its rank falls in.
    pub fn end_pass(&mut self) {
        let shift = 56 - 8 * self.pass;
        for t in self.targets.iter_mut().filter(|t| t.rank > 0) {
            let mut below = 0;
            let digit = (0..256)
                .find(|&d| {
                    below += t.hist[d];
                    below >= t.rank
                })
                .expect("the rank is within the count");
            t.rank -= below - t.hist[digit];
            t.prefix |= (digit as u64) << shift;
            t.hist = [0; 256];
        }
        self.pass += 1;
    }

    /// Target `t`'s value, once no pass is pending.
    pub fn result(&self, t: usize) -> f64 {
        let tg = &self.targets[t];
        if tg.rank == 0 {
            f64::NAN
        } else {
            value(tg.prefix)
        }
    }
}

impl Default for Selector {
    fn default() -> Selector {
        Selector::new()
    }
}

/// A sum that loses nothing to the order of its terms (Neumaier's compensated summation).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum {
    sum: f64,
    carry: f64,
}

impl Sum {
    pub fn add(&mut self, x: f64) {
        let t = self.sum + x;
        self.carry += if self.sum.abs() >= x.abs() { (self.sum - t) + x } else { (x - t) + self.sum };
        self.sum = t;
    }

    pub fn mean(&self, n: u64) -> f64 {
        if n == 0 {
            f64::NAN
        } else {
            (self.sum + self.carry) / n as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::percentile;
    use rand::{Rng, SeedableRng};

    fn select(data: &[f64], qs: &[f64]) -> Vec<f64> {
        let mut s = Selector::new();
        let ts: Vec<usize> = qs.iter().map(|&q| s.quantile(q, data.len() as u64)).collect();
        while s.pending() {
            for &x in data {
                for &t in &ts {
                    s.observe(t, x);
                }
            }
            s.end_pass();
        }
        ts.iter().map(|&t| s.result(t)).collect()
    }

    #[test]
    fn keys_sort_like_total_cmp() {
        let xs = [-1e300, -2.5, -0.0, 0.0, 1e-310, 0.5, 1.0, 1.0 + f64::EPSILON, 7e10, f64::INFINITY];
        for w in xs.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{} {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(value(key(x)).to_bits(), x.to_bits());
        }
    }

    /// The selection equals the sort-based nearest-rank percentile, on data with many ties and on wide data.
    #[test]
    fn selection_matches_sorting() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let qs = [0.0, 0.001, 0.5, 0.99, 0.999, 1.0];
        for n in [1usize, 2, 3, 10, 999, 1000, 1001, 20_000] {
            for kind in 0..3 {
                let data: Vec<f64> = (0..n)
                    .map(|_| match kind {
                        0 => rng.gen_range(0..5) as f64,     // ties
                        1 => rng.gen::<f64>() * 1e6,         // FCTs in us
                        _ => 1.0 + rng.gen::<f64>().powi(8), // slowdowns close to 1
                    })
                    .collect();
                let mut sorted = data.clone();
                sorted.sort_by(f64::total_cmp);
                let want: Vec<f64> = qs.iter().map(|&q| percentile(&sorted, q)).collect();
                assert_eq!(select(&data, &qs), want, "n = {n}, kind {kind}");
            }
        }
        assert!(select(&[], &[0.5])[0].is_nan());
    }

    #[test]
    fn compensated_sum_is_exact_where_plain_sum_is_not() {
        let mut s = Sum::default();
        for x in [1e16, 1.0, -1e16, 1.0] {
            s.add(x);
        }
        assert_eq!(s.mean(1), 2.0);
    }
}
