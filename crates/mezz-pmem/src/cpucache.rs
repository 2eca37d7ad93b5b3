//! The CPU cache in front of an emulated NVM device: which lines a read finds in the
//! cache (and so does not reach the device) and which it has to fetch.
//!
//! Owns: [`CpuCache`], a set-associative array of line tags with least-recently-used
//! replacement inside each set, and [`shared`], the one cache of a given size that every
//! costed region of the process uses (a CPU's last-level cache is shared by everything the
//! cores touch, so two regions of one process compete for the same lines).
//!
//! The model (`docs/impl.md`, "Emulated NVM cost"): a *read access* (one node, one record,
//! one block of at most [`CACHED_ACCESS_MAX`] bytes) is a hit when the line holding its
//! first byte is present; a hit costs the device nothing. A miss loads every line of the
//! access. Larger accesses (bulk copies, streamed scans) are not looked up and not loaded:
//! they stream from the device whatever the cache holds, as a copy larger than the cache
//! would. A persist evicts the lines it writes back (on the first Optane generation's CPUs
//! `clwb` evicts the line as `clflushopt` does), a non-temporal store evicts its line, and
//! a persist larger than the cache empties it.
//!
//! Invariants: a tag is a line's address (`addr / 64`) plus one, so the empty slot (0)
//! never matches a line. The model is statistical, not a coherence protocol: the sets
//! are updated with relaxed atomic loads and stores, so two threads touching one set at
//! once may duplicate or drop a tag (one extra miss later); no result depends on it
//! beyond the charge.
//!
//! Thread-safety: `CpuCache` is `Sync` (atomics only).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

/// Bytes of a cache line.
pub const LINE: u64 = 64;
/// Lines of one set (the associativity).
pub const WAYS: usize = 8;
/// Largest read access that is looked up in (and loaded into) the cache, in bytes: a
/// block-sized access. Longer accesses stream from the device.
pub const CACHED_ACCESS_MAX: usize = 4096;

/// A set-associative cache of line tags (see the module documentation).
#[derive(Debug)]
pub struct CpuCache {
    /// `sets * WAYS` tags; set `s` is `tags[s * WAYS .. (s + 1) * WAYS]`, most recently used
    /// first.
    tags: Box<[AtomicU64]>,
    sets: u64,
    bytes: u64,
}

impl CpuCache {
    /// A cache of `bytes` bytes (rounded down to whole sets; at least one set).
    #[must_use]
    pub fn new(bytes: u64) -> CpuCache {
        let sets = (bytes / LINE / WAYS as u64).max(1);
        let tags = (0..sets * WAYS as u64).map(|_| AtomicU64::new(0)).collect();
        CpuCache {
            tags,
            sets,
            bytes: sets * WAYS as u64 * LINE,
        }
    }

    /// Capacity in bytes (whole sets).
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The set of `tag`: a multiplicative hash mapped onto `0..sets` without a division.
    #[inline]
    fn set_of(&self, tag: u64) -> &[AtomicU64] {
        let h = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let set = ((u128::from(h) * u128::from(self.sets)) >> 64) as usize;
        &self.tags[set * WAYS..(set + 1) * WAYS]
    }

    /// Looks up the line holding byte `addr`; returns whether it was present. Either way
    /// the line is the set's most recently used afterwards (a miss loads it, evicting the
    /// set's least recently used line).
    #[inline]
    pub fn touch(&self, addr: u64) -> bool {
        let tag = addr / LINE + 1;
        let set = self.set_of(tag);
        let mut carry = tag;
        for slot in set {
            let old = slot.load(Ordering::Relaxed);
            slot.store(carry, Ordering::Relaxed);
            if old == tag {
                // Slots `0..i` moved down one; the tag is now first.
                return true;
            }
            if old == 0 {
                return false;
            }
            carry = old;
        }
        false
    }

    /// A read access of `len` bytes at `addr`: whether it hits (see the module
    /// documentation). A miss loads the access's lines. Accesses longer than
    /// [`CACHED_ACCESS_MAX`] always miss and load nothing.
    #[inline]
    pub fn read(&self, addr: u64, len: usize) -> bool {
        if len == 0 || len > CACHED_ACCESS_MAX {
            return false;
        }
        if self.touch(addr) {
            return true;
        }
        let last = (addr + len as u64 - 1) / LINE;
        let mut line = addr / LINE + 1;
        while line <= last {
            self.touch(line * LINE);
            line += 1;
        }
        false
    }

    /// Removes the line holding byte `addr`, if present.
    #[inline]
    pub fn evict(&self, addr: u64) {
        let tag = addr / LINE + 1;
        for slot in self.set_of(tag) {
            if slot.load(Ordering::Relaxed) == tag {
                slot.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Removes the lines of `[addr, addr + len)`: each line when the range is smaller than
    /// the cache, everything otherwise (writing back more than the cache holds leaves none
    /// of what it held).
    pub fn evict_range(&self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        if len >= self.bytes {
            self.clear();
            return;
        }
        let last = (addr + len - 1) / LINE;
        let mut line = addr / LINE;
        while line <= last {
            self.evict(line * LINE);
            line += 1;
        }
    }

    /// Empties the cache.
    pub fn clear(&self) {
        for slot in &self.tags {
            slot.store(0, Ordering::Relaxed);
        }
    }
}

/// The process's cache of `bytes` bytes: every caller asking for the same size shares one
/// (kept while a caller holds it).
#[must_use]
pub fn shared(bytes: u64) -> Arc<CpuCache> {
    static CACHES: Mutex<Vec<(u64, Weak<CpuCache>)>> = Mutex::new(Vec::new());
    let mut caches = CACHES.lock();
    caches.retain(|(_, w)| w.strong_count() > 0);
    if let Some(c) = caches
        .iter()
        .find(|(b, _)| *b == bytes)
        .and_then(|(_, w)| w.upgrade())
    {
        return c;
    }
    let c = Arc::new(CpuCache::new(bytes));
    caches.push((bytes, Arc::downgrade(&c)));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_read_twice_hits_the_second_time() {
        let c = CpuCache::new(64 * 1024);
        assert!(!c.read(4096, 64));
        assert!(c.read(4096, 64));
        assert!(c.read(4096 + 63, 1), "same line");
        assert!(
            !c.read(4096 + 64, 1),
            "next line not loaded by a 64-byte access"
        );
    }

    #[test]
    fn a_miss_loads_every_line_of_the_access() {
        let c = CpuCache::new(64 * 1024);
        assert!(!c.read(0, 1000));
        for off in (0..1000).step_by(64) {
            assert!(c.read(off, 8), "line at {off}");
        }
    }

    #[test]
    fn long_accesses_stream() {
        let c = CpuCache::new(1 << 20);
        assert!(!c.read(0, CACHED_ACCESS_MAX + 1));
        assert!(!c.read(0, 64), "a streamed access loads nothing");
    }

    #[test]
    fn eviction_and_clear() {
        let c = CpuCache::new(64 * 1024);
        c.read(0, 256);
        c.evict_range(64, 64);
        assert!(c.read(0, 1));
        assert!(!c.read(64, 1));
        assert!(c.read(128, 1));
        c.evict_range(0, 1 << 30);
        assert!(!c.read(128, 1));
    }

    /// A working set well inside the cache hits after one pass; one several times larger
    /// mostly misses (LRU over a cyclic pass of more lines than a set holds misses every
    /// time).
    #[test]
    fn working_sets_inside_and_beyond_the_capacity() {
        let c = CpuCache::new(256 * 1024);
        let pass = |lines: u64| {
            let mut hits = 0u64;
            for l in 0..lines {
                hits += u64::from(c.read(l.wrapping_mul(0x1_0001) % lines * LINE, 64));
            }
            hits as f64 / lines as f64
        };
        let small = 256 * 1024 / 2 / LINE;
        pass(small);
        assert!(pass(small) > 0.97, "half the capacity fits");
        c.clear();
        let big = 256 * 1024 * 8 / LINE;
        pass(big);
        assert!(pass(big) < 0.2, "eight times the capacity does not");
    }

    #[test]
    fn regions_of_one_size_share_a_cache() {
        let a = shared(1 << 16);
        let b = shared(1 << 16);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &shared(1 << 17)));
    }
}
