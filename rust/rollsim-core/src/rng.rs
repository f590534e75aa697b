//! Random number generators.
//!
//! * [`PyRandom`]: a bit-exact re-implementation of CPython's `random.Random` (MT19937 seeded with
//!   `init_by_array` exactly as `random.seed(int)` does, `random()` with 53-bit resolution,
//!   `normalvariate` by Kinderman-Monahan and `lognormvariate = exp(normalvariate)`, `choices`).
//!   Used by `rng = "python"` to reproduce the chapter's numbers. `exp`/`ln` come from the platform's
//!   libm, as in CPython, so values are bit-identical to CPython on the same platform.
//! * [`FastRng`]: Xoshiro256++ (`rand_xoshiro`, seeded by SplitMix64 from the u64 seed) with
//!   `rand_distr`'s ziggurat normal for lognormal draws. Used by `rng = "fast"`.

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A source of uniform and lognormal draws, as the engine needs them.
pub trait Source {
    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64;
    /// exp(N(mu, sigma^2)).
    fn lognormal(&mut self, mu: f64, sigma: f64) -> f64;
    /// N(0, 1).
    fn normal(&mut self) -> f64;
}

const N: usize = 624;
const M: usize = 397;

/// CPython's Mersenne Twister (`Modules/_randommodule.c`), seeded as `random.Random(seed)` is.
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
    nv_magic: f64,
}

impl PyRandom {
    /// `random.Random(seed)` for a non-negative integer seed (CPython uses `abs(seed)`).
    pub fn new(seed: u64) -> Self {
        let lo = seed as u32;
        let hi = (seed >> 32) as u32;
        let key: &[u32] = if hi != 0 { &[lo, hi] } else { &[lo] };
        let mut r = PyRandom { mt: [0; N], index: N, nv_magic: 4.0 * (-0.5f64).exp() / 2.0f64.sqrt() };
        r.init_by_array(key);
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        let mut k = N.max(key.len());
        while k > 0 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
            k -= 1;
        }
        k = N - 1;
        while k > 0 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            k -= 1;
        }
        self.mt[0] = 0x8000_0000;
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX_A: u32 = 0x9908_b0df;
        for kk in 0..N {
            let y = (self.mt[kk] & UPPER) | (self.mt[(kk + 1) % N] & LOWER);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            self.mt[kk] = self.mt[(kk + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// One 32-bit output (`genrand_uint32`).
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`: 53-bit float in [0, 1).
    #[inline]
    pub fn random(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `random.normalvariate(mu, sigma)` (Kinderman and Monahan, as CPython 3.11).
    pub fn normalvariate(&mut self, mu: f64, sigma: f64) -> f64 {
        loop {
            let u1 = self.random();
            let u2 = 1.0 - self.random();
            let z = self.nv_magic * (u1 - 0.5) / u2;
            let zz = z * z / 4.0;
            if zz <= -u2.ln() {
                return mu + z * sigma;
            }
        }
    }
}

impl Source for PyRandom {
    #[inline]
    fn uniform(&mut self) -> f64 {
        self.random()
    }
    #[inline]
    fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        self.normalvariate(mu, sigma).exp()
    }
    #[inline]
    fn normal(&mut self) -> f64 {
        self.normalvariate(0.0, 1.0)
    }
}

/// Xoshiro256++ with a ziggurat normal (`rand_distr::StandardNormal`).
#[derive(Clone)]
pub struct FastRng(Xoshiro256PlusPlus);

impl FastRng {
    /// Seeds Xoshiro256++ from `seed` with SplitMix64 (`rand_xoshiro`'s `seed_from_u64`).
    pub fn new(seed: u64) -> Self {
        FastRng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }
}

impl Source for FastRng {
    #[inline]
    fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }
    #[inline]
    fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.normal()).exp()
    }
    #[inline]
    fn normal(&mut self) -> f64 {
        self.0.sample(rand_distr::StandardNormal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by CPython 3.11: `random.Random(0).random()` and friends.
    #[test]
    fn matches_cpython_seed_0() {
        let mut r = PyRandom::new(0);
        assert_eq!(r.random(), 0.8444218515250481);
        assert_eq!(r.random(), 0.7579544029403025);
        assert_eq!(r.random(), 0.420571580830845);
    }

    #[test]
    fn matches_cpython_large_seed() {
        // random.Random(2**40 + 5).random()
        let mut r = PyRandom::new((1u64 << 40) + 5);
        assert_eq!(r.random(), 0.5043802970418443);
    }

    #[test]
    fn fast_is_deterministic() {
        let a: Vec<f64> = {
            let mut r = FastRng::new(7);
            (0..5).map(|_| r.uniform()).collect()
        };
        let b: Vec<f64> = {
            let mut r = FastRng::new(7);
            (0..5).map(|_| r.uniform()).collect()
        };
        assert_eq!(a, b);
    }
}
