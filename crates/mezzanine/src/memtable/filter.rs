//! A DRAM memtable's key filter: a blocked bloom filter of the user keys it holds, so a
//! point read for a key the memtable does not hold skips the skip-list search (about 20
//! dependent cache misses in a full 64 MiB memtable) for one cache line.
//!
//! Owns: one bit array of 512-bit blocks. A key sets [`PROBES`] bits of the one block its
//! hash picks, so a lookup or an insert touches one cache line.
//!
//! Invariants: bits are only ever set, never cleared; a key added is found by every later
//! [`KeyFilter::may_contain`] on any thread that synchronised with the add (the engine
//! adds an entry's key before the write group publishes its sequence number, and a reader
//! loads that number with acquire ordering before it looks). No false negatives; false
//! positives (under 0.1 % at the sizing the memtable uses, one bit per 8 bytes of
//! capacity) only cost the search the filter would have saved.
//!
//! Thread-safety: `Send + Sync`; `add` and `may_contain` run concurrently from any
//! threads (relaxed atomic `fetch_or` and loads).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits set per key, all in one 512-bit block.
const PROBES: u32 = 6;
/// Words of one block (a 64-byte cache line).
const BLOCK_WORDS: usize = 8;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct KeyFilter {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

impl KeyFilter {
    /// A filter of `bytes` bytes (rounded up to whole 64-byte blocks, at least one).
    pub(crate) fn with_bytes(bytes: usize) -> Self {
        let blocks = bytes.div_ceil(BLOCK_WORDS * 8).max(1);
        let words = (0..blocks * BLOCK_WORDS)
            .map(|_| AtomicU64::new(0))
            .collect();
        Self {
            words,
            blocks: blocks as u64,
        }
    }

    /// The block and the per-word masks of `key`'s bits.
    #[inline]
    fn probe(&self, key: &[u8]) -> (usize, [u64; BLOCK_WORDS]) {
        let h = xxhash_rust::xxh3::xxh3_64(key);
        // The high half picks the block (multiply-shift range reduction); the low half,
        // mixed by a multiplication, gives the bits inside it, 9 bits of the product's top
        // 54 per probe (independent of the block's bits, so keys sharing a block do not
        // share bit patterns).
        let block = (((h >> 32) * self.blocks) >> 32) as usize;
        let mut g = (h & 0xffff_ffff).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 10;
        let mut masks = [0u64; BLOCK_WORDS];
        for _ in 0..PROBES {
            let b = g & 511;
            masks[(b >> 6) as usize] |= 1 << (b & 63);
            g >>= 9;
        }
        (block * BLOCK_WORDS, masks)
    }

    /// Records `key`.
    #[inline]
    pub(crate) fn add(&self, key: &[u8]) {
        let (base, masks) = self.probe(key);
        for (i, m) in masks.into_iter().enumerate() {
            if m == 0 {
                continue;
            }
            let w = &self.words[base + i];
            // A key written again (an update) finds its bits set: no write to the line.
            if w.load(Ordering::Relaxed) & m != m {
                w.fetch_or(m, Ordering::Relaxed);
            }
        }
    }

    /// False only if `key` was never added.
    #[inline]
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        let (base, masks) = self.probe(key);
        masks
            .into_iter()
            .enumerate()
            .all(|(i, m)| self.words[base + i].load(Ordering::Relaxed) & m == m)
    }

    /// Bytes of the bit array.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_keys_are_always_found_and_few_others_are() {
        // The memtable's sizing: one bit per 8 bytes of capacity, here 16 MiB of entries
        // of about 150 bytes each (16-byte keys, 100-byte values, node overhead).
        let capacity = 16 << 20;
        let f = KeyFilter::with_bytes(capacity / 64);
        let n = capacity / 150;
        for i in 0..n {
            f.add(format!("key{i:013}").as_bytes());
        }
        for i in 0..n {
            assert!(f.may_contain(format!("key{i:013}").as_bytes()), "{i}");
        }
        let false_positives = (n..2 * n)
            .filter(|i| f.may_contain(format!("key{i:013}").as_bytes()))
            .count();
        let rate = false_positives as f64 / n as f64;
        assert!(rate < 0.01, "false-positive rate {rate}");
    }

    #[test]
    fn an_empty_filter_holds_nothing_and_a_tiny_one_still_works() {
        let f = KeyFilter::with_bytes(0);
        assert_eq!(f.bytes(), 64);
        assert!(!f.may_contain(b"a"));
        f.add(b"a");
        f.add(b"");
        assert!(f.may_contain(b"a") && f.may_contain(b""));
    }

    #[test]
    fn concurrent_adds_lose_no_bit() {
        let f = KeyFilter::with_bytes(4096);
        std::thread::scope(|s| {
            for t in 0..4 {
                let f = &f;
                s.spawn(move || {
                    for i in 0..2000 {
                        f.add(format!("{t}-{i}").as_bytes());
                    }
                });
            }
        });
        for t in 0..4 {
            for i in 0..2000 {
                assert!(f.may_contain(format!("{t}-{i}").as_bytes()), "{t}-{i}");
            }
        }
    }
}
