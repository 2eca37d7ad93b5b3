//! Helpers shared by the skip-list tests: a seeded generator (no OS randomness, so runs are
//! reproducible, under Miri too) and key/value builders.

#![allow(dead_code)]

/// xorshift64* generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A short key over a 3-letter alphabet: many shared prefixes, the empty key, and
    /// collisions between draws.
    pub fn small_key(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len).map(|_| b'a' + self.below(3) as u8).collect()
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// Scale for loops: smaller under Miri, which is ~1000 times slower.
pub fn scale(normal: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { normal }
}
