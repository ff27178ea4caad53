//! A generalized Pareto tail above a tabulated CDF body.
//!
//! Some published workloads are not a table alone. The Homa thesis' W1
//! (Facebook memcached, ETC model of Atikoglu et al., SIGMETRICS 2012) is a
//! 15-point table of sizes 1–15 B up to a cumulative probability of 0.47,
//! and above that a generalized Pareto distribution computed in code.
//! HomaSimulation (`MsgSizeDistributions::getFacebookSizeInterarrival`, see
//! `workloads/cdfs/README.md`) draws `u ~ U[0,1)` and, for `u` above the
//! table's last probability `c`, returns
//!
//! ```text
//! size = min(round(mu + (((1 - c)/(1 - u))^k - 1) * sigma / k), cap)
//! ```
//!
//! with `mu` = the table's last size (15 B), shape `k = 0.348238`, scale
//! `sigma = 214.476` and `cap = 2^30` bytes. Given that `u` is in the tail,
//! `size - mu` before rounding is generalized Pareto:
//! `P(Y - mu > x) = Q(x) = (1 + k x/sigma)^(-1/k)`.
//!
//! [`GeneralizedParetoTail`] is that rule with its five numbers as data, so
//! any table can carry such a tail (declared in the file's `# tailsim:`
//! directive or in the built-in table), and [`SizeCdf`](crate::SizeCdf)
//! draws from it and integrates it like any other piece.
//!
//! # Exact means
//!
//! The load calibration needs `E[size]` and `E[ceil(size/mss)]` exactly, not
//! the unrounded, uncapped `mu + sigma/(1 - k)`. Both are sums of the
//! survival function over whole bytes: with `S = min(round(Y), cap)`,
//! `P(S > n) = P(Y >= n + 1/2) = Q(n + 1/2 - mu)` for `n + 1/2 > mu` and
//! `n < cap`, 1 below and 0 from `cap` on, and
//! `E[min(S, t)] = Σ_{n<t} P(S > n)`, `E[ceil(S/m)] = Σ_j P(S > j m)`.
//! Those sums run to `2^30` terms, so `power_sum` adds the first terms
//! directly and the rest by the Euler–Maclaurin formula with three
//! correction terms. For `(a + b j)^(-alpha)` every derivative is a known
//! multiple of the function itself, and starting the formula at least
//! `100 + 10 alpha` steps from the pole makes its remainder smaller than
//! `1e-15` of the sum (tested against plain summation), so the means are
//! exact to floating-point precision, cap and rounding included.

/// A generalized Pareto tail drawn for `u > from_cdf` (see the module docs
/// for the rule and its source).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeneralizedParetoTail {
    /// The body's last cumulative probability; draws with `u` above it come
    /// from the tail, which therefore has probability `1 - from_cdf`.
    pub from_cdf: f64,
    /// `mu`, where the tail starts, in bytes (HomaSimulation: the body's
    /// last listed size). At least 1.
    pub location: f64,
    /// `k` (often written ξ), > 0: the tail falls like `x^(-1/k)`, so the
    /// uncapped mean is finite only for `k < 1`.
    pub shape: f64,
    /// `sigma`, in bytes, > 0.
    pub scale: f64,
    /// The largest size drawn, in bytes; larger values are cut to it.
    pub cap: u64,
}

impl GeneralizedParetoTail {
    /// Homa thesis W1: the tail HomaSimulation appends to
    /// `FacebookKeyValueMsgSizeDist.txt` (body 1–15 B up to 0.47).
    pub const HOMA_THESIS_W1: GeneralizedParetoTail =
        GeneralizedParetoTail { from_cdf: 0.47, location: 15.0, shape: 0.348238, scale: 214.476, cap: 1 << 30 };

    /// Checks the ranges documented on the fields. The shape is limited to
    /// `[0.001, 100]` so that the direct part of the sums stays short.
    pub fn validate(&self) -> Result<(), String> {
        let GeneralizedParetoTail { from_cdf, location, shape, scale, cap } = *self;
        if !(from_cdf > 0.0 && from_cdf < 1.0) {
            return Err(format!("the tail must start at a cumulative probability in (0, 1), not {from_cdf}"));
        }
        if !(location.is_finite() && location >= 1.0) {
            return Err(format!("tail_location must be at least 1 byte, not {location}"));
        }
        if !(0.001..=100.0).contains(&shape) {
            return Err(format!("tail_shape must be in [0.001, 100], not {shape}"));
        }
        if !(scale.is_finite() && scale > 0.0) {
            return Err(format!("tail_scale must be a positive number of bytes, not {scale}"));
        }
        if (cap as f64) < location || cap > 1 << 53 {
            return Err(format!(
                "tail_cap must be a whole number of bytes from the location ({location}) to 2^53, not {cap}"
            ));
        }
        Ok(())
    }

    /// The size for `u` in `(from_cdf, 1]`, in bytes, computed as
    /// HomaSimulation does (same operations in the same order, C's
    /// `round`, i.e. halves away from zero). `u = 1` gives the cap.
    pub fn sample(&self, u: f64) -> u64 {
        let (c, k) = (self.from_cdf, self.shape);
        let y = (self.location + (((1.0 - c) / (1.0 - u)).powf(k) - 1.0) * self.scale / k).round();
        // `y` is at least `location` >= 1, or infinite for `u = 1`.
        if y.is_nan() || y > self.cap as f64 {
            self.cap
        } else {
            y as u64
        }
    }

    /// `Q(x) = (1 + k x / sigma)^(-1/k)`, `x >= 0`.
    fn q(&self, x: f64) -> f64 {
        (1.0 + self.shape * x / self.scale).powf(-1.0 / self.shape)
    }

    /// The smallest `n` with `n + 1/2 > location`: below it `P(S > n) = 1`.
    fn first_uncertain(&self) -> u64 {
        (self.location + 0.5).floor() as u64
    }

    /// `P(S > n)` for a tail draw `S`.
    pub fn survival(&self, n: u64) -> f64 {
        if n >= self.cap {
            0.0
        } else if n < self.first_uncertain() {
            1.0
        } else {
            self.q(n as f64 + 0.5 - self.location)
        }
    }

    /// `E[min(S, t)]` for a tail draw `S`, exactly (see the module docs).
    pub fn limited_mean(&self, t: u64) -> f64 {
        let t = t.min(self.cap);
        let n1 = self.first_uncertain();
        if t <= n1 {
            return t as f64;
        }
        let b = self.shape / self.scale;
        let a = 1.0 + b * (n1 as f64 + 0.5 - self.location);
        n1 as f64 + power_sum(a, b, 1.0 / self.shape, t - n1)
    }

    /// `E[S]` for a tail draw, exactly.
    pub fn mean(&self) -> f64 {
        self.limited_mean(self.cap)
    }

    /// `E[ceil(S/m)]` for a tail draw (`m` 0 is taken as 1), exactly:
    /// `Σ_{j >= 0} P(S > j m)`.
    pub fn mean_ceil_div(&self, m: u64) -> f64 {
        let m = m.max(1);
        let n1 = self.first_uncertain().min(self.cap);
        // j with j m < n1: P = 1. Then j from ceil(n1/m) while j m < cap.
        let (certain, j1, j_end) = (n1.div_ceil(m), n1.div_ceil(m), self.cap.div_ceil(m));
        if j_end <= j1 {
            return certain as f64;
        }
        let b = self.shape / self.scale;
        let a = 1.0 + b * ((j1 * m) as f64 + 0.5 - self.location);
        certain as f64 + power_sum(a, b * m as f64, 1.0 / self.shape, j_end - j1)
    }
}

/// Settings from a `# tailsim:` directive, collected before the data lines
/// are read (the location and start probability default to the last line).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TailDirective {
    kind: bool,
    shape: Option<f64>,
    scale: Option<f64>,
    cap: Option<u64>,
    location: Option<f64>,
}

impl TailDirective {
    /// Takes `key=value` if it is a tail setting; `Ok(false)` if it is not.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let number = |v: &str| v.parse::<f64>().ok().filter(|x| x.is_finite());
        let bad = |what: &str| format!("bad {key} \"{value}\" in # tailsim: expected {what}");
        match key {
            "tail" if value == "gpareto" => self.kind = true,
            "tail" => return Err(bad("gpareto (the only tail supported)")),
            "tail_shape" => self.shape = Some(number(value).ok_or_else(|| bad("a number"))?),
            "tail_scale" => self.scale = Some(number(value).ok_or_else(|| bad("a number of bytes"))?),
            "tail_location" => self.location = Some(number(value).ok_or_else(|| bad("a number of bytes"))?),
            "tail_cap" => self.cap = Some(value.parse::<u64>().map_err(|_| bad("a whole number of bytes"))?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether the directive declared a tail at all.
    pub(crate) fn declared(&self) -> bool {
        self.kind || self.shape.is_some() || self.scale.is_some() || self.cap.is_some() || self.location.is_some()
    }

    /// The tail above a body whose last point is `(last_size, from_cdf)`.
    pub(crate) fn build(&self, last_size: f64, from_cdf: f64) -> Result<GeneralizedParetoTail, String> {
        let need = |v: Option<f64>, key: &str| v.ok_or_else(|| format!("the tail needs {key}= in # tailsim:"));
        if !self.kind {
            return Err("tail settings without tail=gpareto in # tailsim:".into());
        }
        let tail = GeneralizedParetoTail {
            from_cdf,
            location: self.location.unwrap_or(last_size),
            shape: need(self.shape, "tail_shape")?,
            scale: need(self.scale, "tail_scale")?,
            cap: self.cap.ok_or("the tail needs tail_cap= in # tailsim:")?,
        };
        tail.validate()?;
        Ok(tail)
    }
}

/// `Σ_{j=0}^{count-1} (a + b j)^(-alpha)` for `a, b, alpha > 0`.
///
/// Terms closer than `100 + 10 alpha` steps to the pole at `j = -a/b` are
/// added directly; the rest by Euler–Maclaurin,
/// `Σ_{j0}^{j1} g = ∫ g + (g(j0) + g(j1))/2 + Σ_i B_2i/(2i)! (g^(2i-1)(j1) - g^(2i-1)(j0))`,
/// `i = 1..3`. With `s = a/b + j` (the distance to the pole in steps),
/// `g^(m) = (-1)^m alpha (alpha+1)…(alpha+m-1) g / s^m`, so the `i`-th
/// term is about `(alpha + 2i)^(2i) / s^(2i)` of the sum: from `s >= 100 +
/// 10 alpha` the first omitted one (`i = 4`) is below `1e-15` of it.
pub(crate) fn power_sum(a: f64, b: f64, alpha: f64, count: u64) -> f64 {
    let g = |j: f64| (a + b * j).powf(-alpha);
    let pole = a / b;
    let direct = count.min((100.0 + 10.0 * alpha - pole).max(0.0).ceil() as u64);
    let mut sum: f64 = (0..direct).map(|j| g(j as f64)).sum();
    if direct == count {
        return sum;
    }
    let (j0, j1) = (direct as f64, (count - 1) as f64);
    let (s0, s1, g0, g1) = (pole + j0, pole + j1, g(j0), g(j1));
    // ∫_{j0}^{j1} g = g0 s0 (1 - (s1/s0)^(1-alpha)) / (alpha - 1), written
    // with expm1 so that alpha near 1 (the logarithm) loses nothing.
    let log = (s1 / s0).ln();
    let z = (1.0 - alpha) * log;
    let ratio = if z.abs() < 1e-8 { 1.0 + z / 2.0 } else { z.exp_m1() / z };
    let integral = g0 * s0 * log * ratio;
    // g^(m) for m = 1, 3, 5 at both ends, then Bernoulli weights.
    let rising = |m: i32| (0..m).map(|i| alpha + i as f64).product::<f64>();
    let deriv = |m: i32, gv: f64, s: f64| -rising(m) * gv / s.powi(m);
    let weights = [(1, 1.0 / 12.0), (3, -1.0 / 720.0), (5, 1.0 / 30240.0)];
    let corrections: f64 = weights.iter().map(|&(m, w)| w * (deriv(m, g1, s1) - deriv(m, g0, s0))).sum();
    sum += integral + (g0 + g1) / 2.0 + corrections;
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain summation, smallest terms first so that adding a million tiny
    /// terms to a sum near 1 does not lose their last digits.
    fn plain_sum(a: f64, b: f64, alpha: f64, count: u64) -> f64 {
        (0..count).rev().map(|j| (a + b * j as f64).powf(-alpha)).sum()
    }

    #[test]
    fn power_sum_matches_plain_summation() {
        let cases = [
            // a, b, alpha, count: W1's tail in bytes and in 1460 B packets,
            // a slow tail (alpha < 1), alpha = 1 exactly and near 1, a steep one.
            (1.0 + 0.5 * 0.348238 / 214.476, 0.348238 / 214.476, 1.0 / 0.348238, 3_000_000),
            (1.0, 1460.0 * 0.348238 / 214.476, 1.0 / 0.348238, 700_000),
            (2.0, 0.01, 0.4, 2_000_000),
            (1.0, 0.001, 1.0, 2_000_000),
            (1.0, 0.001, 1.0 + 1e-10, 2_000_000),
            (1.0, 0.5, 9.0, 100_000),
            (1.0, 0.002, 2.5, 150),
        ];
        for (a, b, alpha, count) in cases {
            let (ours, plain) = (power_sum(a, b, alpha, count), plain_sum(a, b, alpha, count));
            assert!((ours / plain - 1.0).abs() < 1e-12, "a={a} b={b} alpha={alpha}: {ours} vs {plain}");
        }
    }

    #[test]
    fn homa_w1_tail_draws_by_hand() {
        let t = GeneralizedParetoTail::HOMA_THESIS_W1;
        // sigma/k = 214.476/0.348238 = 615.8891; size = round(15 + ((0.53/(1-u))^k - 1) * 615.8891).
        let cases = [
            (0.470_000_1, 15), // ratio 1.0000002: 15.00004
            (0.735, 183),      // ratio 2:    2^k = 1.273005,   15 + 0.273005 * 615.8891 = 183.14
            (0.9, 500),        // ratio 5.3:  5.3^k = 1.787394, 15 + 484.95 = 499.95 (thesis notes: p90 = 500 B)
            (0.947, 772),      // ratio 10:   10^k = 2.229657,  15 + 757.33 = 772.33
            (0.99, 1854),      // ratio 53:   53^k = 3.985276,  15 + 1838.60 = 1853.60 (p99 = 1854 B)
            (0.999_47, 6226),  // ratio 1000: 1000^k = 11.084446, 15 + 6210.90 = 6225.90
        ];
        for (u, size) in cases {
            assert_eq!(t.sample(u), size, "u = {u}");
        }
        // The cap: only u = 1 reaches 2^30 (the largest f64 below 1 gives ~1.8e8).
        assert_eq!(t.sample(1.0), 1 << 30);
        assert!(t.sample(1.0 - f64::EPSILON / 2.0) < 1 << 28);
        // A low cap applies wherever the formula exceeds it.
        let low = GeneralizedParetoTail { cap: 1000, ..t };
        assert_eq!((low.sample(0.947), low.sample(0.99), low.sample(0.999_47)), (772, 1000, 1000));
    }

    /// The exact means against plain sums over every byte, with a cap low
    /// enough to sum: E[S] = Σ_n P(S > n) and E[ceil(S/m)] = Σ_j P(S > jm),
    /// and both against the probabilities of each size taken from `sample`'s
    /// formula inverted by hand.
    #[test]
    fn exact_means_match_plain_sums() {
        for cap in [15u64, 16, 40, 1_000, 1_000_000] {
            for location in [15.0, 15.3, 15.5, 1.0] {
                let t = GeneralizedParetoTail { cap, location, ..GeneralizedParetoTail::HOMA_THESIS_W1 };
                let plain: f64 = (0..cap).rev().map(|n| t.survival(n)).sum();
                assert!((t.mean() / plain - 1.0).abs() < 1e-12, "cap {cap} loc {location}: {} vs {plain}", t.mean());
                for m in [1u64, 7, 1460] {
                    let plain: f64 = (0..cap.div_ceil(m)).rev().map(|j| t.survival(j * m)).sum();
                    let ours = t.mean_ceil_div(m);
                    assert!((ours / plain - 1.0).abs() < 1e-12, "cap {cap} loc {location} m {m}: {ours} vs {plain}");
                }
                let t_mid = cap / 2;
                let plain: f64 = (0..t_mid).rev().map(|n| t.survival(n)).sum();
                assert!((t.limited_mean(t_mid) - plain).abs() <= 1e-12 * plain.max(1.0));
            }
        }
        // Survival from the inverted draw: S > 183 iff u > 1 - 0.53 Q(183.5 - 15).
        let t = GeneralizedParetoTail::HOMA_THESIS_W1;
        let u = 1.0 - 0.53 * t.survival(183);
        assert_eq!((t.sample(u - 1e-12), t.sample(u + 1e-12)), (183, 184));
        assert_eq!((t.survival(14), t.survival(1 << 30)), (1.0, 0.0));
    }

    #[test]
    fn homa_w1_tail_mean() {
        // Uncapped and unrounded the tail mean is mu + sigma/(1-k) = 15 + 329.0710 = 344.0710.
        // Rounding to whole bytes removes ~1.9e-4 here and the 2^30 cap ~7e-10 (the integral
        // of the survival function beyond it); the README's value (body 2.73 + 0.53 x 344.07
        // = 185) agrees. Plain summation to 1e7 plus the integral beyond gave 344.070847
        // (independent Python check).
        let t = GeneralizedParetoTail::HOMA_THESIS_W1;
        assert!((t.mean() - 344.070847).abs() < 2e-6, "{}", t.mean());
        let rounding = t.mean() - (15.0 + 214.476 / (1.0 - 0.348238));
        assert!(rounding < -1e-4 && rounding > -3e-4, "{rounding}");
    }

    #[test]
    fn directive_settings() {
        let mut d = TailDirective::default();
        for (k, v) in [("tail", "gpareto"), ("tail_shape", "0.5"), ("tail_scale", "100"), ("tail_cap", "5000")] {
            assert_eq!(d.set(k, v), Ok(true));
        }
        assert_eq!(d.set("interp", "step"), Ok(false));
        let t = d.build(20.0, 0.8).unwrap();
        assert_eq!(t, GeneralizedParetoTail { from_cdf: 0.8, location: 20.0, shape: 0.5, scale: 100.0, cap: 5000 });
        assert!(d.set("tail", "lognormal").unwrap_err().contains("gpareto"));
        assert!(d.set("tail_cap", "1e9").unwrap_err().contains("whole number"));
        let mut partial = TailDirective::default();
        partial.set("tail_shape", "0.5").unwrap();
        assert!(partial.declared() && partial.build(20.0, 0.8).unwrap_err().contains("tail=gpareto"));
        partial.set("tail", "gpareto").unwrap();
        assert!(partial.build(20.0, 0.8).unwrap_err().contains("tail_scale"));
        let bad = GeneralizedParetoTail { shape: 0.0, ..GeneralizedParetoTail::HOMA_THESIS_W1 };
        assert!(bad.validate().unwrap_err().contains("tail_shape"));
        let bad = GeneralizedParetoTail { cap: 10, ..GeneralizedParetoTail::HOMA_THESIS_W1 };
        assert!(bad.validate().unwrap_err().contains("tail_cap"));
    }

    /// A tail declared in a file's directive: body 10 B (50 %), 20 B (30 %),
    /// then k = 0.5, sigma = 100 B from 20 B, capped at 5000 B.
    #[test]
    fn directive_tail_in_a_file() {
        use crate::{CdfOptions, SizeCdf};
        let text = "# tailsim: tail=gpareto tail_shape=0.5 tail_scale=100 tail_cap=5000\n10 0.5\n20 0.8\n";
        let c = SizeCdf::parse(text, "mine.txt", CdfOptions::default()).unwrap();
        let t = *c.tail().unwrap();
        assert_eq!((t.from_cdf, t.location, t.cap), (0.8, 20.0, 5000));
        // u = 0.9: ratio 0.2/0.1 = 2, 2^0.5 = 1.414214, 20 + 0.414214 * 100/0.5 = 102.84 -> 103.
        assert_eq!((c.sample(0.5), c.sample(0.8), c.sample(0.9), c.max_bytes()), (10, 20, 103, 5000));
        // The cap is felt in the mean: uncapped the tail would add 0.2 * (20 + 200) = 44 B.
        let plain: f64 = (0..5000u64).rev().map(|n| t.survival(n)).sum();
        let want = 0.5 * 10.0 + 0.3 * 20.0 + 0.2 * plain;
        assert!(
            (c.mean_bytes() / want - 1.0).abs() < 1e-12 && want < 11.0 + 44.0 - 1.0,
            "{} vs {want}",
            c.mean_bytes()
        );
        assert!((c.limited_mean(5000) - c.mean_bytes()).abs() < 1e-9);
        // P(S <= 102) = 0.8 + 0.2 (1 - Q(102.5 - 20)), Q(82.5) = (1 + 0.4125)^-2.
        assert!((c.prob_at_most(102) - (0.8 + 0.2 * (1.0 - 1.4125f64.powi(-2)))).abs() < 1e-15);
        assert_eq!((c.prob_at_most(19), c.prob_at_most(5000)), (0.5, 1.0));
        // Percentages and an explicit location work the same way.
        let pct =
            SizeCdf::parse(&text.replace("0.5\n", "50\n").replace("0.8\n", "80\n"), "p.txt", CdfOptions::default());
        assert_eq!(pct.unwrap().tail(), Some(&t));
        let moved = text.replace("tail_cap", "tail_location=25 tail_cap");
        let moved = SizeCdf::parse(&moved, "m.txt", CdfOptions::default()).unwrap();
        assert_eq!(moved.tail().unwrap().location, 25.0);
    }

    #[test]
    fn tail_errors_name_the_problem() {
        use crate::{CdfOptions, SizeCdf};
        let parse = |text: &str, opts| SizeCdf::parse(text, "t.txt", opts).unwrap_err();
        let d = "# tailsim: tail=gpareto tail_shape=0.5 tail_scale=100 tail_cap=5000\n";
        let e = parse(&format!("{d}10 0.5\n20 1\n"), CdfOptions::default());
        assert!(e.line == Some(3) && e.msg.contains("with a tail it must be below 1"), "{e}");
        let e = parse(&format!("{d}10 0.5\n20 0.8\n"), CdfOptions { interp: None, unit_bytes: Some(1460) });
        assert!(e.msg.contains("byte-valued"), "{e}");
        let e = parse("# tailsim: tail=gpareto tail_shape=0.5 tail_cap=5000\n10 0.5\n20 0.8\n", CdfOptions::default());
        assert!(e.line == Some(1) && e.msg.contains("tail_scale"), "{e}");
        let e = parse(
            "# tailsim: tail=gpareto tail_shape=-1 tail_scale=1 tail_cap=50\n10 0.5\n20 0.8\n",
            CdfOptions::default(),
        );
        assert!(e.line == Some(1) && e.msg.contains("tail_shape"), "{e}");
        // The shipped W1 body has its tail from the built-in table when read
        // under its own name, and none under another name.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../workloads/cdfs/homa-thesis_w1_facebook-kv_bytes.txt");
        let from_disk = SizeCdf::from_file(&path, CdfOptions::default()).unwrap();
        assert_eq!(from_disk.tail(), Some(&GeneralizedParetoTail::HOMA_THESIS_W1));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(SizeCdf::parse(&text, "copy.txt", CdfOptions::default()).unwrap_err().msg.contains("is 0.47"));
        // A tail given by the caller must start where the body stops.
        let half = GeneralizedParetoTail { from_cdf: 0.5, ..GeneralizedParetoTail::HOMA_THESIS_W1 };
        let e = SizeCdf::parse_with_tail(&text, "copy.txt", CdfOptions::default(), Some(half)).unwrap_err();
        assert!(e.msg.contains("starts at cumulative probability 0.5"), "{e}");
        let ok = SizeCdf::parse_with_tail(
            &text,
            "copy.txt",
            CdfOptions::default(),
            Some(GeneralizedParetoTail::HOMA_THESIS_W1),
        );
        assert_eq!(ok.unwrap().mean_bytes(), from_disk.mean_bytes());
    }
}
