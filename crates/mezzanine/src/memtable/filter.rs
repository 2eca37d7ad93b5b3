//! A memtable's key filter: a register-blocked bloom filter of the user keys it holds, so
//! a point read for a key the memtable does not hold skips the skip-list search (about 20
//! dependent cache misses in a full 64 MiB memtable) for one load.
//!
//! Owns: one array of 64-bit words. A key sets [`PROBES`] bits of the one word its hash
//! picks, so an insert is one load and at most one atomic `fetch_or` (the word prefetched
//! before the entry's skip-list insert and set after it, so its cache miss overlaps the
//! insert's), and a lookup one load
//! (a filter whose bits spread over a cache line costs an insert up to six atomic
//! read-modify-writes: fills measured up to 10 % slower with it).
//!
//! Invariants: bits are only ever set, never cleared; a key added is found by every later
//! [`KeyFilter::may_contain`] on any thread that synchronised with the add (the engine
//! adds an entry's key before the write group publishes its sequence number, and a reader
//! loads that number with acquire ordering before it looks). No false negatives; false
//! positives (under 1 % at the sizing the memtable uses, one bit per 8 bytes of capacity)
//! only cost the search the filter would have saved.
//!
//! Thread-safety: `Send + Sync`; `add` and `may_contain` run concurrently from any
//! threads (relaxed atomic `fetch_or` and loads).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits set per key, all in one word.
const PROBES: u32 = 6;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct KeyFilter {
    words: Box<[AtomicU64]>,
}

impl KeyFilter {
    /// A filter of `bytes` bytes (rounded up to whole words, at least one).
    pub(crate) fn with_bytes(bytes: usize) -> Self {
        let n = bytes.div_ceil(8).max(1);
        Self {
            words: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Words of the bit array.
    pub(crate) fn words(&self) -> usize {
        self.words.len()
    }

    /// Forgets every key: the filter is as new, its pages still mapped.
    pub(crate) fn clear(&mut self) {
        for w in &mut self.words {
            *w.get_mut() = 0;
        }
    }

    /// The word and the mask of `key`'s bits.
    #[inline]
    fn probe(&self, key: &[u8]) -> (&AtomicU64, u64) {
        let h = xxhash_rust::xxh3::xxh3_64(key);
        // The high half picks the word (multiply-shift range reduction); the low half,
        // mixed by a multiplication, gives the bits inside it, 6 bits of the product's top
        // 36 per probe (independent of the word's bits, so keys sharing a word do not
        // share bit patterns).
        let word = (((h >> 32) * self.words.len() as u64) >> 32) as usize;
        let mut g = (h & 0xffff_ffff).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 28;
        let mut mask = 0u64;
        for _ in 0..PROBES {
            mask |= 1 << (g & 63);
            g >>= 6;
        }
        (&self.words[word], mask)
    }

    /// Records `key`.
    #[inline]
    pub(crate) fn add(&self, key: &[u8]) {
        self.prepare(key).commit();
    }

    /// Starts recording `key`: hashes it and prefetches its word, so the word's cache line
    /// is on its way while the caller inserts the entry; [`Pending::commit`] sets the bits.
    /// Committing after the entry's insert is as safe as before it: readers find an entry
    /// only at a sequence number published after both (see the module invariants).
    #[inline]
    pub(crate) fn prepare(&self, key: &[u8]) -> Pending<'_> {
        let (word, mask) = self.probe(key);
        mezz_pmem::hint::prefetch(word);
        Pending { word, mask }
    }

    /// False only if `key` was never added.
    #[inline]
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        let (w, mask) = self.probe(key);
        w.load(Ordering::Relaxed) & mask == mask
    }

    /// Bytes of the bit array.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

/// A key being recorded: see [`KeyFilter::prepare`].
#[must_use = "the key is recorded only by commit"]
pub(crate) struct Pending<'a> {
    word: &'a AtomicU64,
    mask: u64,
}

impl Pending<'_> {
    /// Sets the key's bits.
    #[inline]
    pub(crate) fn commit(self) {
        // Bits are never cleared: a key written again (an update) finds its bits set and
        // does not write the line.
        if self.word.load(Ordering::Relaxed) & self.mask != self.mask {
            self.word.fetch_or(self.mask, Ordering::Relaxed);
        }
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

    /// A cleared filter (a spare, kept for the next memtable) holds none of its keys.
    #[test]
    fn a_cleared_filter_holds_nothing() {
        let mut f = KeyFilter::with_bytes(64 << 10);
        for i in 0..20_000 {
            f.add(format!("key{i:013}").as_bytes());
        }
        assert!(f.may_contain(b"key0000000000000"));
        f.clear();
        assert_eq!(f.words(), 8192);
        for i in 0..20_000 {
            assert!(!f.may_contain(format!("key{i:013}").as_bytes()), "{i}");
        }
        f.add(b"again");
        assert!(f.may_contain(b"again"));
    }

    #[test]
    fn an_empty_filter_holds_nothing_and_a_tiny_one_still_works() {
        let f = KeyFilter::with_bytes(0);
        assert_eq!(f.bytes(), 8);
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
