//! Spare block buffers: a few per thread, so that reading a block need not allocate.
//!
//! Owns: the calling thread's pool of empty buffers. [`zeroed`] hands out one of them (or a
//! new allocation) as a zero-filled buffer of the asked length; [`give`] puts a buffer that
//! is no longer needed back into the calling thread's pool.
//!
//! Why: a point read that misses the block cache reads a block into a new buffer and, by
//! inserting it into the cache, evicts another block. The evicted block was as often as not
//! read by another thread, and `free` of a chunk from another thread's malloc arena takes
//! that arena's lock: a cache line every reader writes. When the cache hands the evicted
//! block's buffer to [`give`] instead, the same thread reads its next block into it, so in
//! a steady stream of misses no block buffer is allocated or freed at all.
//!
//! Invariants: at most [`MAX_SPARES`] buffers per thread, none with a capacity above
//! [`MAX_SPARE_BYTES`] (bigger buffers are freed); a buffer handed out is exactly the
//! asked length and all zero, and its capacity is at most a quarter (plus 512 bytes) above
//! that length, so a cached block never holds much more memory than the cache counts.
//!
//! Thread-safety: the pool is thread-local; buffers cross threads only as owned `Vec`s.

use std::cell::RefCell;

/// Buffers kept per thread: a point read evicts at most a couple of blocks per miss.
pub const MAX_SPARES: usize = 4;

/// The largest buffer kept (bigger ones, blocks of large values, are freed as before).
pub const MAX_SPARE_BYTES: usize = 64 << 10;

/// New buffers are allocated with their capacity rounded up to this many bytes, so that
/// blocks of a similar size fit each other's buffers without growing them.
const ROUND: usize = 512;

/// Up to a fixed number of things kept for reuse: the pool behind this module's per-thread
/// block buffers, and (under a lock) the engine's spare memtable arenas and key filters.
#[derive(Debug)]
pub struct Kept<T> {
    items: Vec<T>,
    max: usize,
}

impl<T> Kept<T> {
    /// An empty pool that keeps at most `max`.
    #[must_use]
    pub const fn new(max: usize) -> Self {
        Kept {
            items: Vec::new(),
            max,
        }
    }

    /// The most recently kept one that `fits`, if any.
    pub fn take(&mut self, fits: impl Fn(&T) -> bool) -> Option<T> {
        let i = self.items.iter().rposition(fits)?;
        Some(self.items.swap_remove(i))
    }

    /// Keeps `item` if there is room (drops it otherwise).
    pub fn keep(&mut self, item: T) {
        if self.items.len() < self.max {
            self.items.push(item);
        }
    }

    /// How many are kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

thread_local! {
    static SPARES: RefCell<Kept<Vec<u8>>> = const { RefCell::new(Kept::new(MAX_SPARES)) };
}

/// Whether a spare of `capacity` bytes may hold a block of `len`: big enough, and not so
/// big that the block cache, which weighs a block by its length, would hold much more
/// memory than it counts.
fn fits(capacity: usize, len: usize) -> bool {
    capacity >= len && capacity <= len + len / 4 + ROUND
}

/// A zero-filled buffer of `len` bytes: a spare of this thread when one fits, otherwise a
/// new allocation.
#[must_use]
pub fn zeroed(len: usize) -> Vec<u8> {
    if len > MAX_SPARE_BYTES {
        // Never kept, so never rounded up; `calloc` may skip zeroing fresh pages.
        return vec![0u8; len];
    }
    let spare = SPARES
        .try_with(|s| s.borrow_mut().take(|b| fits(b.capacity(), len)))
        .ok()
        .flatten();
    let mut buf = spare.unwrap_or_else(|| Vec::with_capacity(len.next_multiple_of(ROUND)));
    buf.clear();
    buf.resize(len, 0);
    buf
}

/// Keeps `buf` for this thread's next [`zeroed`], or frees it when the pool is full or the
/// buffer is too large (or too small to be worth keeping).
pub fn give(buf: Vec<u8>) {
    if buf.capacity() > MAX_SPARE_BYTES || buf.capacity() < ROUND {
        return;
    }
    // After the thread-local is destroyed (thread exit) the buffer is simply freed.
    let _ = SPARES.try_with(|s| s.borrow_mut().keep(buf));
}

/// Spare buffers this thread holds (tests).
#[must_use]
pub fn held() -> usize {
    SPARES.try_with(|s| s.borrow().len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_comes_back_zeroed_and_sized() {
        std::thread::spawn(|| {
            let mut a = zeroed(4100);
            assert_eq!(a.len(), 4100);
            assert!(a.capacity() >= 4100);
            a.fill(0xAB);
            let ptr = a.as_ptr();
            give(a);
            assert_eq!(held(), 1);
            let b = zeroed(4000);
            assert_eq!(b.as_ptr(), ptr, "the spare is reused");
            assert_eq!(b.len(), 4000);
            assert!(b.iter().all(|&x| x == 0), "a reused buffer is zeroed");
            assert_eq!(held(), 0);
            // A spare too small for the request stays; a new buffer is made.
            give(zeroed(600));
            let c = zeroed(8000);
            assert_eq!(c.len(), 8000);
            assert_eq!(held(), 1);
            // So does one much larger than the request: a small block must not keep a
            // large buffer alive in the cache.
            let _ = zeroed(600);
            give(c);
            let d = zeroed(1000);
            assert!(d.capacity() < 2000, "a fresh, right-sized buffer");
            assert_eq!(held(), 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_pool_is_bounded_in_count_and_size() {
        std::thread::spawn(|| {
            let bufs: Vec<Vec<u8>> = (0..MAX_SPARES + 3).map(|_| zeroed(4096)).collect();
            for b in bufs {
                give(b);
            }
            assert_eq!(held(), MAX_SPARES);
            for _ in 0..MAX_SPARES {
                let _ = zeroed(4096);
            }
            assert_eq!(held(), 0);
            give(vec![0u8; MAX_SPARE_BYTES + 1]);
            give(Vec::with_capacity(16));
            assert_eq!(held(), 0, "too large and too small buffers are freed");
            let big = zeroed(MAX_SPARE_BYTES + 10);
            assert_eq!(big.len(), MAX_SPARE_BYTES + 10);
        })
        .join()
        .unwrap();
    }
}
