//! Bloom filter over user keys (one per table).
//!
//! Spec: `docs/formats/sst.md` (filter block). Layout:
//! ```text
//! | bit array: m bytes (m multiple of 8, at least 8) | k u8 | hash_kind u8 = 1 | 6 zero bytes |
//! ```
//! Hashing: `h = xxh3_64(user_key)`; probe `i` (0 <= i < k) sets bit
//! `fastrange(h + i * rotl(h, 32) | 1)` over `m * 8` bits, where `fastrange(x) = (x * nbits)
//! >> 64` (double hashing, Kirsch–Mitzenmacher). `k = round(bits_per_key * ln 2)` clamped to
//! 1..=30. Bit `b` is bit `b % 8` of byte `b / 8`.
//!
//! Invariant: a filter never yields a false negative for a key that was added.
//!
//! Thread-safety: a [`BloomFilter`] is immutable and `Sync`; a [`BloomBuilder`] is a plain
//! single-owner value.

use xxhash_rust::xxh3::xxh3_64;

use crate::{Error, Result};

/// Hash scheme code stored in the filter trailer.
pub const BLOOM_HASH_XXH3_DOUBLE: u8 = 1;
/// Length of the filter trailer.
pub const BLOOM_TRAILER_LEN: usize = 8;

#[inline]
fn probe_bit(h: u64, i: u64, nbits: u64) -> u64 {
    let delta = h.rotate_left(32) | 1;
    let x = h.wrapping_add(i.wrapping_mul(delta));
    ((u128::from(x) * u128::from(nbits)) >> 64) as u64
}

/// The number of probes for `bits_per_key`.
#[must_use]
pub fn num_probes(bits_per_key: u32) -> u32 {
    let k = (f64::from(bits_per_key) * std::f64::consts::LN_2).round();
    (k as u32).clamp(1, 30)
}

/// Collects key hashes and builds a filter.
#[derive(Debug, Clone)]
pub struct BloomBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    /// A builder for `bits_per_key` bits per key (at least 1 is used).
    #[must_use]
    pub fn new(bits_per_key: u32) -> Self {
        Self {
            bits_per_key: bits_per_key.max(1),
            hashes: Vec::new(),
        }
    }

    /// Adds a user key. Consecutive duplicates are stored once.
    pub fn add_key(&mut self, user_key: &[u8]) {
        let h = xxh3_64(user_key);
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// Number of distinct (consecutive) keys added.
    #[must_use]
    pub fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    /// Builds the filter bytes and clears the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let k = num_probes(self.bits_per_key);
        let want_bits = (self.hashes.len() as u64)
            .saturating_mul(u64::from(self.bits_per_key))
            .max(64);
        let nbytes = usize::try_from(want_bits.div_ceil(64) * 8).unwrap_or(usize::MAX / 2);
        let nbits = nbytes as u64 * 8;
        let mut out = vec![0u8; nbytes + BLOOM_TRAILER_LEN];
        for &h in &self.hashes {
            for i in 0..u64::from(k) {
                let b = probe_bit(h, i, nbits);
                if let Some(byte) = out.get_mut((b / 8) as usize) {
                    *byte |= 1 << (b % 8);
                }
            }
        }
        if let Some(t) = out.get_mut(nbytes..nbytes + 2) {
            t.copy_from_slice(&[k as u8, BLOOM_HASH_XXH3_DOUBLE]);
        }
        self.hashes.clear();
        out
    }
}

/// A decoded filter.
#[derive(Debug, Clone)]
pub struct BloomFilter {
    data: Vec<u8>,
    nbits: u64,
    k: u32,
}

impl BloomFilter {
    /// Validates and takes ownership of filter bytes.
    ///
    /// # Errors
    /// `Corruption` (offset 0 = start of the filter) if the trailer is malformed.
    pub fn from_bytes(data: Vec<u8>) -> Result<Self> {
        Self::from_bytes_at(data, 0)
    }

    /// As [`BloomFilter::from_bytes`], for a filter at `file_offset` in its file.
    ///
    /// # Errors
    /// `Corruption` if the trailer is malformed.
    pub fn from_bytes_at(mut data: Vec<u8>, file_offset: u64) -> Result<Self> {
        let bad = |off: usize, what: &str| {
            Error::corruption(
                file_offset.saturating_add(off as u64),
                format!("bloom filter: {what}"),
            )
        };
        let nbytes = data
            .len()
            .checked_sub(BLOOM_TRAILER_LEN)
            .ok_or_else(|| bad(0, "shorter than its trailer"))?;
        if nbytes == 0 || !nbytes.is_multiple_of(8) {
            return Err(bad(0, &format!("bit array of {nbytes} bytes")));
        }
        let trailer = data.get(nbytes..).ok_or_else(|| bad(nbytes, "trailer"))?;
        let (k, kind, rest) = match trailer {
            [k, kind, rest @ ..] => (*k, *kind, rest),
            _ => return Err(bad(nbytes, "trailer")),
        };
        if kind != BLOOM_HASH_XXH3_DOUBLE {
            return Err(bad(nbytes + 1, &format!("unknown hash kind {kind}")));
        }
        if !(1..=30).contains(&k) {
            return Err(bad(nbytes, &format!("bad probe count {k}")));
        }
        if rest.iter().any(|&b| b != 0) {
            return Err(bad(nbytes + 2, "reserved trailer bytes not zero"));
        }
        data.truncate(nbytes);
        Ok(Self {
            data,
            nbits: nbytes as u64 * 8,
            k: u32::from(k),
        })
    }

    /// Whether `user_key` may have been added (false means it certainly was not).
    #[must_use]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(xxh3_64(user_key))
    }

    /// As [`BloomFilter::may_contain`], given `xxh3_64(user_key)`.
    #[must_use]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        (0..u64::from(self.k)).all(|i| {
            let b = probe_bit(h, i, self.nbits);
            self.data
                .get((b / 8) as usize)
                .is_some_and(|byte| byte & (1 << (b % 8)) != 0)
        })
    }

    /// Size of the bit array in bytes.
    #[must_use]
    pub fn len_bytes(&self) -> usize {
        self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_follow_bits_per_key() {
        assert_eq!(num_probes(10), 7);
        assert_eq!(num_probes(1), 1);
        assert_eq!(num_probes(0), 1);
        assert_eq!(num_probes(100), 30);
    }

    #[test]
    fn no_false_negatives_and_low_fp_rate() {
        let n = 10_000u32;
        let mut b = BloomBuilder::new(10);
        for i in 0..n {
            b.add_key(format!("key{i:08}").as_bytes());
        }
        let f = BloomFilter::from_bytes(b.finish()).unwrap();
        for i in 0..n {
            assert!(
                f.may_contain(format!("key{i:08}").as_bytes()),
                "false negative {i}"
            );
        }
        let trials = 100_000u32;
        let fp = (0..trials)
            .filter(|i| f.may_contain(format!("other{i:08}").as_bytes()))
            .count();
        let rate = fp as f64 / f64::from(trials);
        // Theory for 10 bits/key, k = 7: about 0.82 %.
        assert!(rate < 0.02, "false-positive rate {rate}");
    }

    #[test]
    fn empty_filter_rejects_most_keys() {
        let f = BloomFilter::from_bytes(BloomBuilder::new(10).finish()).unwrap();
        assert!(!f.may_contain(b"anything"));
        assert_eq!(f.len_bytes(), 8);
    }

    #[test]
    fn malformed_filters_are_rejected() {
        assert!(BloomFilter::from_bytes(vec![]).is_err());
        assert!(BloomFilter::from_bytes(vec![0; 8]).is_err());
        let mut b = BloomBuilder::new(10);
        b.add_key(b"x");
        let good = b.finish();
        let n = good.len();
        let mut bad = good.clone();
        bad[n - 8] = 0; // k = 0
        assert!(BloomFilter::from_bytes(bad).is_err());
        let mut bad = good.clone();
        bad[n - 7] = 9; // hash kind
        assert!(BloomFilter::from_bytes(bad).is_err());
        // Flipping bits of the array never panics.
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            if let Ok(f) = BloomFilter::from_bytes(bad) {
                let _ = f.may_contain(b"x");
            }
        }
    }
}
