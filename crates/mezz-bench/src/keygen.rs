//! Keys and values as LevelDB's db_bench makes them.
//!
//! - Keys: the key number in zero-padded decimal, exactly `key_size` bytes wide (db_bench's
//!   `%016d` for the default 16). A number with more digits than `key_size` keeps its
//!   `key_size` least significant digits, so keys stay distinct modulo `10^key_size`.
//!   Padded keys sort like their numbers.
//! - Values: slices of one pre-generated buffer of printable random bytes in which each
//!   100-byte piece is 50 random bytes repeated, so values compress to about 50 % (db_bench's
//!   `RandomGenerator` with `compression_ratio = 0.5`). The buffer is generated from a fixed
//!   seed: every run writes the same bytes.
//!
//! Thread-safety: a `ValueGenerator` is owned by one thread (each worker clones its own).

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// Size of the pre-generated value buffer when values are small.
const VALUE_BUFFER_BYTES: usize = 1 << 20;
/// Length of one compressible piece (db_bench: 100).
const PIECE: usize = 100;
/// Fraction of each piece that is random (db_bench's default `compression_ratio`).
const COMPRESSION_RATIO: f64 = 0.5;

/// Writes key number `n` into `out` as `out.len()` zero-padded decimal digits (the least
/// significant digits if the number is wider).
pub fn format_key_into(n: u64, out: &mut [u8]) {
    let mut v = n;
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Key number `n` as a `key_size`-byte key.
#[must_use]
pub fn format_key(n: u64, key_size: usize) -> Vec<u8> {
    let mut k = vec![0u8; key_size];
    format_key_into(n, &mut k);
    k
}

/// Hands out values: consecutive slices of a shared compressible buffer.
#[derive(Debug, Clone)]
pub struct ValueGenerator {
    data: std::sync::Arc<Vec<u8>>,
    pos: usize,
}

impl ValueGenerator {
    /// A generator able to produce values of up to `max_len` bytes.
    #[must_use]
    pub fn new(max_len: usize) -> Self {
        let target = VALUE_BUFFER_BYTES.max(max_len.saturating_mul(2));
        let mut rng = SmallRng::seed_from_u64(301);
        let mut data = Vec::with_capacity(target + PIECE);
        let raw_len = ((PIECE as f64 * COMPRESSION_RATIO) as usize).max(1);
        let mut raw = vec![0u8; raw_len];
        while data.len() < target {
            for b in &mut raw {
                *b = b' ' + rng.random_range(0..95u8);
            }
            let mut piece = 0;
            while piece < PIECE {
                let take = raw_len.min(PIECE - piece);
                data.extend_from_slice(&raw[..take]);
                piece += take;
            }
        }
        Self {
            data: std::sync::Arc::new(data),
            pos: 0,
        }
    }

    /// The next value of `len` bytes (`len` must not exceed the `max_len` given to `new`;
    /// longer requests are truncated to the buffer's length).
    pub fn generate(&mut self, len: usize) -> &[u8] {
        let len = len.min(self.data.len());
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        &self.data[start..start + len]
    }

    /// A generator sharing the buffer but starting at another offset (one per thread, so
    /// threads do not all write the same value sequence).
    #[must_use]
    pub fn fork(&self, offset: usize) -> Self {
        Self {
            data: std::sync::Arc::clone(&self.data),
            pos: offset % self.data.len().max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_decimal_of_the_key_size() {
        assert_eq!(format_key(0, 16), b"0000000000000000");
        assert_eq!(format_key(1234, 16), b"0000000000001234");
        assert_eq!(format_key(42, 4), b"0042");
        assert_eq!(format_key(u64::MAX, 20), b"18446744073709551615");
        assert_eq!(format_key(7, 24).len(), 24);
    }

    #[test]
    fn wide_numbers_keep_their_low_digits() {
        assert_eq!(format_key(123_456, 4), b"3456");
        assert_eq!(format_key(99, 1), b"9");
    }

    #[test]
    fn padded_keys_sort_like_numbers() {
        let mut nums: Vec<u64> = vec![5, 100, 99, 1_000_000, 0, 42];
        let mut keys: Vec<Vec<u8>> = nums.iter().map(|&n| format_key(n, 16)).collect();
        nums.sort_unstable();
        keys.sort();
        let expect: Vec<Vec<u8>> = nums.iter().map(|&n| format_key(n, 16)).collect();
        assert_eq!(keys, expect);
    }

    #[test]
    fn values_have_the_requested_length_and_vary() {
        let mut g = ValueGenerator::new(100);
        let a = g.generate(100).to_vec();
        let b = g.generate(100).to_vec();
        assert_eq!(a.len(), 100);
        assert_eq!(b.len(), 100);
        assert_ne!(a, b);
        assert!(a.iter().all(|c| (b' '..=b'~').contains(c)));
    }

    #[test]
    fn values_are_about_half_compressible() {
        // Each 100-byte piece is 50 random bytes repeated: count distinct 50-byte halves.
        let mut g = ValueGenerator::new(100);
        for _ in 0..1000 {
            let v = g.generate(100);
            assert_eq!(v[..50], v[50..], "piece is not its random half repeated");
        }
    }

    #[test]
    fn generator_wraps_around_and_serves_large_values() {
        let mut g = ValueGenerator::new(3 << 20);
        let big = g.generate(3 << 20).len();
        assert_eq!(big, 3 << 20);
        for _ in 0..10 {
            assert_eq!(g.generate(3 << 20).len(), 3 << 20);
        }
    }

    #[test]
    fn generation_is_deterministic() {
        let mut a = ValueGenerator::new(100);
        let mut b = ValueGenerator::new(100);
        assert_eq!(a.generate(100), b.generate(100));
        let mut c = a.fork(12_345);
        assert_ne!(c.generate(100), b.generate(100));
    }
}
