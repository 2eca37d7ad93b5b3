//! Statistics counters that several threads add to at once.
//!
//! Owns [`StripedCounters`]: `N` relaxed `u64` totals, each kept once per shard, a shard on
//! cache lines of its own. A thread always adds into the shard of its number
//! ([`thread_shard`]: threads are numbered in the order they first ask, modulo
//! [`SHARDS`]), so two threads adding at the same time do not pass one cache line between
//! their cores on every add. Two reader threads did: with one shared line of read counters
//! (blocks read, bytes read, block cache hits), 3 % of a two-thread `readrandom`'s time went
//! to that line's misses.
//!
//! Invariants: a total is the wrapping sum of its shards' values; a shard's value only
//! grows.
//!
//! Thread-safety: `Send + Sync`. Adds and reads are relaxed: a read sums the shards one by
//! one, so it sees every add that happened before it in the reading thread and any subset of
//! concurrent ones, and totals read together are not a snapshot of one instant.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Shards per counter set: one per thread up to this many threads at once.
pub const SHARDS: usize = 8;

/// The calling thread's shard index, `< SHARDS`: threads are numbered in the order they
/// first call this, so threads started together get different shards.
#[must_use]
pub fn thread_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

/// One shard's totals, on cache lines of its own (128 bytes: a pair of 64-byte lines,
/// which the adjacent-line prefetcher moves together).
#[derive(Debug)]
#[repr(align(128))]
struct Shard<const N: usize>([AtomicU64; N]);

impl<const N: usize> Default for Shard<N> {
    fn default() -> Self {
        Self(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

/// `N` counters striped over [`SHARDS`] shards. `N` should be at most 16 (one shard's
/// 128 bytes); more works but spills onto the next shard's lines.
#[derive(Debug)]
pub struct StripedCounters<const N: usize> {
    shards: [Shard<N>; SHARDS],
}

impl<const N: usize> Default for StripedCounters<N> {
    fn default() -> Self {
        Self {
            shards: std::array::from_fn(|_| Shard::default()),
        }
    }
}

impl<const N: usize> StripedCounters<N> {
    /// Adds `v` to counter `i` (ignored if `i >= N`).
    #[inline]
    pub fn add(&self, i: usize, v: u64) {
        if let Some(c) = self
            .shards
            .get(thread_shard())
            .and_then(|shard| shard.0.get(i))
        {
            c.fetch_add(v, Ordering::Relaxed);
        }
    }

    /// The total of counter `i` (0 if `i >= N`).
    #[must_use]
    pub fn get(&self, i: usize) -> u64 {
        self.shards
            .iter()
            .filter_map(|shard| shard.0.get(i))
            .fold(0u64, |sum, c| sum.wrapping_add(c.load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn totals_sum_every_threads_adds() {
        let c = Arc::new(StripedCounters::<3>::default());
        let threads: Vec<_> = (0..SHARDS as u64 + 3)
            .map(|t| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.add(0, 1);
                        c.add(2, t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("adder thread");
        }
        let n = SHARDS as u64 + 3;
        assert_eq!(c.get(0), 1000 * n);
        assert_eq!(c.get(1), 0);
        assert_eq!(c.get(2), 1000 * (0..n).sum::<u64>());
        // Out of range: ignored, and reads as 0.
        c.add(3, 5);
        assert_eq!(c.get(3), 0);
    }

    #[test]
    fn a_thread_keeps_its_shard() {
        let first = thread_shard();
        assert!(first < SHARDS);
        assert_eq!(thread_shard(), first);
        assert!(std::mem::align_of::<Shard<6>>() >= 128);
    }
}
