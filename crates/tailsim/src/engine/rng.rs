use rand::{Rng as _, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// A seeded random stream. Every component (each workload generator, each switch's sprayer, each link's
/// corruption) owns its own stream derived from (experiment seed, stream name, index), so adding a flow or a
/// link does not shift any other component's draws.
pub struct Rng(Pcg64Mcg);

/// SplitMix64 finalizer: a cheap, well-mixed hash for deriving independent seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed for stream `name`/`index` of an experiment with seed `seed` (FNV-1a over the name, then mixed).
pub fn stream_seed(seed: u64, name: &str, index: u64) -> u128 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    let a = mix(seed ^ mix(h) ^ mix(index.wrapping_add(0x1234_5678)));
    let b = mix(a ^ 0xD1B5_4A32_D192_ED03);
    ((a as u128) << 64) | b as u128
}

impl Rng {
    pub fn new(seed: u64, name: &str, index: u64) -> Rng {
        Rng(Pcg64Mcg::new(stream_seed(seed, name, index) | 1))
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        self.0.gen::<f64>()
    }
    /// Uniform integer in [0, n).
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        self.0.gen_range(0..n)
    }
    /// What `below(n)` would return now, without drawing (a prediction for prefetching).
    #[inline]
    pub fn peek_below(&self, n: u32) -> u32 {
        self.0.clone().gen_range(0..n)
    }
    /// Exponential with the given mean (inverse transform; 1-u avoids ln(0)).
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.0.gen()
    }
}

impl SeedableRng for Rng {
    type Seed = [u8; 16];
    fn from_seed(seed: Self::Seed) -> Self {
        Rng(Pcg64Mcg::from_seed(seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_peek_foretells_the_next_draw_and_draws_nothing() {
        // The prefetcher's guess of a switch's spray (`Switch::predicted_egress`) is right exactly when no
        // other draw comes between.
        let mut r = Rng::new(7, "switch-spray", 3);
        for n in [2u32, 3, 4, 14, 1000] {
            let guess = r.peek_below(n);
            assert_eq!(r.peek_below(n), guess);
            assert_eq!(r.below(n), guess);
        }
    }
    #[test]
    fn streams_are_independent_and_repeatable() {
        let a: Vec<u32> = (0..4)
            .map({
                let mut r = Rng::new(1, "x", 0);
                move |_| r.next_u32()
            })
            .collect();
        let b: Vec<u32> = (0..4)
            .map({
                let mut r = Rng::new(1, "x", 0);
                move |_| r.next_u32()
            })
            .collect();
        let c: Vec<u32> = (0..4)
            .map({
                let mut r = Rng::new(1, "x", 1);
                move |_| r.next_u32()
            })
            .collect();
        let d: Vec<u32> = (0..4)
            .map({
                let mut r = Rng::new(2, "x", 0);
                move |_| r.next_u32()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }
}
