//! `prob_at_most`, `partial_mean` and `limited_mean` integrate exactly what
//! `sample` draws, for every built-in (step and linear, bytes and packets,
//! with and without a tail).

use tailsim_workload::{builtins, SizeCdf};

/// On a midpoint grid of N values of u: `sample` is non-decreasing in u, so
/// the share of grid draws `<= t` is within 1/N of `P(S <= t)`, and the grid
/// mean of `min(S, t)` (non-decreasing, between 1 and t) is within t/N of
/// `E[min(S, t)]`. The same bound holds for `E[S; S <= t]`, whose
/// integrand `S 1{S <= t}` jumps once, from at most t to 0.
#[test]
fn moments_match_a_grid_of_draws() {
    let n = 200_000u64;
    for b in builtins() {
        let c = SizeCdf::builtin(b.name).unwrap();
        let draws: Vec<u64> = (0..n).map(|k| c.sample((k as f64 + 0.5) / n as f64)).collect();
        let s30 = c.sample(0.3);
        for t in [1, s30 - 1, s30, s30 + 1, 1442, 10_000, 1_000_000] {
            let at_most = draws.iter().filter(|&&s| s <= t).count() as f64 / n as f64;
            let limited = draws.iter().map(|&s| s.min(t) as f64).sum::<f64>() / n as f64;
            let partial = draws.iter().filter(|&&s| s <= t).map(|&s| s as f64).sum::<f64>() / n as f64;
            let tol = t as f64 / n as f64 + 1e-9 * t as f64;
            assert!((c.prob_at_most(t) - at_most).abs() <= 1.0 / n as f64 + 1e-12, "{} P(<= {t})", b.name);
            assert!((c.limited_mean(t) - limited).abs() <= tol, "{} E[min(S, {t})]: {}", b.name, c.limited_mean(t));
            assert!((c.partial_mean(t) - partial).abs() <= tol, "{} E[S; S <= {t}]", b.name);
        }
        // At the largest size everything is the whole distribution.
        let max = c.max_bytes();
        let mean = c.mean_bytes();
        assert!((c.prob_at_most(max) - 1.0).abs() < 1e-12, "{}", b.name);
        assert!((c.limited_mean(max) / mean - 1.0).abs() < 1e-12, "{}: {} vs {mean}", b.name, c.limited_mean(max));
        assert!((c.partial_mean(max) / mean - 1.0).abs() < 1e-12, "{}", b.name);
        assert!((c.limited_mean(u64::MAX) / mean - 1.0).abs() < 1e-12, "{}", b.name);
    }
}
