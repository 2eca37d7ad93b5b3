//! A fixed-capacity byte region addressed by 32-bit offsets, with a lock-free bump allocator.
//!
//! Owns: one contiguous, 8-byte aligned, zero-initialised region (heap memory for now; an NVM
//! mapping later) and the allocation cursor inside it.
//!
//! Invariants:
//! 1. Offsets are `u32`; the capacity never exceeds [`MAX_CAPACITY`]. Offset 0 is reserved as
//!    "null": the first [`RESERVED`] bytes are never handed out, so a valid allocation is
//!    never at offset 0.
//! 2. Allocations never overlap and are never freed or moved: the region lives, at the same
//!    address, as long as the `Arena`.
//! 3. An allocation is all or nothing: [`Arena::alloc`] either reserves `size` bytes entirely
//!    inside the region or returns `None` and reserves nothing.
//! 4. Every byte of the region is initialised (zero) from creation on, so reading any
//!    in-bounds range never reads uninitialised memory.
//!
//! Thread-safety: `Arena` is `Send + Sync`. `alloc` and the atomic views may be used from any
//! number of threads. Plain byte access ([`Arena::bytes`], [`Arena::write`]) is `unsafe`:
//! the caller guarantees that no other thread writes a range while it is read or written
//! (the usual protocol: write a fresh allocation, then publish its offset with a `Release`
//! store that readers load with `Acquire`).

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes at the start of every arena that are never allocated, so that offset 0 means null.
pub const RESERVED: u32 = 8;

/// Largest capacity an arena can have: every offset must fit in a `u32`.
pub const MAX_CAPACITY: usize = (u32::MAX as usize) & !7;

/// Size of the pages touched by pre-faulting.
const PAGE_SIZE: usize = 4096;

/// Size and alignment of a transparent huge page (x86-64 Linux).
const HUGE_PAGE_SIZE: usize = 2 << 20;

/// How an arena's memory is obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaOptions {
    /// Touch every page at creation (writing zeros), so that the page-fault cost of first
    /// touch (≈ 15 µs per 4 KiB page measured here) is paid when the arena is created
    /// instead of on the insert path. When false, pages are mapped lazily on first use.
    ///
    /// Defaults to true.
    pub prefault: bool,
    /// For regions of at least 2 MiB: align the region to 2 MiB and ask Linux for
    /// transparent huge pages (`madvise(MADV_HUGEPAGE)`), which removes most TLB misses
    /// of a skip list's random accesses and makes pre-faulting 512 times cheaper. A hint:
    /// ignored where unsupported (other systems, THP disabled, Miri).
    ///
    /// Defaults to true.
    pub huge_pages: bool,
}

impl Default for ArenaOptions {
    fn default() -> Self {
        ArenaOptions {
            prefault: true,
            huge_pages: true,
        }
    }
}

/// A fixed-capacity, 8-byte aligned byte region with a lock-free bump allocator.
///
/// Addresses inside the region are `u32` offsets from its start; offset 0 is null. See the
/// module documentation for the invariants and the thread-safety contract.
pub struct Arena {
    /// Start of the region, from `alloc_zeroed(layout)`.
    base: NonNull<u8>,
    /// Layout of the region: size = capacity (a multiple of 8), alignment >= 8.
    layout: Layout,
    /// Offset of the next free byte. Only grows; never exceeds the capacity.
    pos: AtomicU64,
}

// SAFETY: `Arena` owns its region exclusively (like a `Box<[u8]>`); the raw pointer is only
// an address. Shared access from several threads is limited to atomic operations (the
// allocation cursor and the atomic views) and to the `unsafe` byte accessors whose callers
// promise the absence of data races.
unsafe impl Send for Arena {}
// SAFETY: see `Send` above: every `&self` method is either atomic or `unsafe` with a
// no-concurrent-writer contract.
unsafe impl Sync for Arena {}

impl Arena {
    /// Creates a heap-backed arena of `capacity` bytes with the default options
    /// (pre-faulted, huge pages requested).
    ///
    /// The capacity is rounded up to a multiple of 8 and clamped to [`MAX_CAPACITY`]; it is
    /// at least [`RESERVED`].
    pub fn new(capacity: usize) -> Arena {
        Arena::with_options(capacity, ArenaOptions::default())
    }

    /// Creates a heap-backed, zero-filled arena of `capacity` bytes (rounded up to a
    /// multiple of 8, clamped to [`MAX_CAPACITY`], at least [`RESERVED`]).
    pub fn with_options(capacity: usize, options: ArenaOptions) -> Arena {
        let capacity = capacity
            .clamp(RESERVED as usize, MAX_CAPACITY)
            .next_multiple_of(8);
        let huge = options.huge_pages && capacity >= HUGE_PAGE_SIZE;
        let align = if huge { HUGE_PAGE_SIZE } else { 8 };
        let layout = match Layout::from_size_align(capacity, align) {
            Ok(layout) => layout,
            // Unreachable: `capacity` <= u32::MAX is far below isize::MAX.
            Err(_) => handle_alloc_error(Layout::new::<u64>()),
        };
        // SAFETY: the layout has a non-zero size (at least RESERVED bytes).
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(base) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        if huge {
            advise_huge_pages(base, capacity);
        }
        let arena = Arena {
            base,
            layout,
            pos: AtomicU64::new(u64::from(RESERVED)),
        };
        if options.prefault {
            arena.prefault();
        }
        arena
    }

    /// Writes a zero into every page of the region so the operating system maps them now
    /// (zeroed memory from the allocator is usually mapped lazily).
    fn prefault(&self) {
        let capacity = self.capacity();
        let mut off = 0;
        while off < capacity {
            // SAFETY: `off < capacity` and `off` is a multiple of 8 (PAGE_SIZE is), so the
            // u64 at `base + off` lies inside the region and is aligned. The arena is not yet
            // shared (this runs in the constructor), so nothing else accesses the region.
            // A volatile write keeps the compiler from eliding the store into zeroed memory.
            unsafe {
                std::ptr::write_volatile(self.base.as_ptr().add(off).cast::<u64>(), 0);
            }
            off += PAGE_SIZE;
        }
    }

    /// Total size of the region in bytes, including the reserved null bytes.
    pub fn capacity(&self) -> usize {
        self.layout.size()
    }

    /// Bytes handed out so far, including the reserved null bytes and alignment padding.
    pub fn used(&self) -> usize {
        // `pos` never exceeds the capacity, which fits in a usize.
        usize::try_from(self.pos.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    /// Bytes still available (ignoring alignment padding).
    pub fn remaining(&self) -> usize {
        self.capacity().saturating_sub(self.used())
    }

    /// Reserves `size` bytes aligned to `align` and returns their offset, or `None` when the
    /// region has not enough room left (then nothing is reserved). The bytes of a fresh
    /// allocation are zero unless they were written before through an offset outside any
    /// allocation. Lock-free: concurrent callers get disjoint ranges.
    ///
    /// Panics if `align` is not a power of two or is greater than 8.
    pub fn alloc(&self, size: usize, align: usize) -> Option<u32> {
        assert!(
            align.is_power_of_two() && align <= 8,
            "arena alignment must be 1, 2, 4 or 8, got {align}"
        );
        let size = u64::try_from(size).ok()?;
        let mask = align as u64 - 1;
        let capacity = self.capacity() as u64;
        let mut cur = self.pos.load(Ordering::Relaxed);
        loop {
            let start = (cur + mask) & !mask;
            let end = start.checked_add(size)?;
            if end > capacity {
                return None;
            }
            // Relaxed is enough: the cursor only partitions the region. Publishing the
            // contents written into an allocation is the caller's business.
            match self
                .pos
                .compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                // `start < end <= capacity <= MAX_CAPACITY` fits in a u32.
                Ok(_) => return u32::try_from(start).ok(),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Panics unless `[off, off + len)` lies inside the region; returns `off` as a usize.
    #[inline]
    fn check_range(&self, off: u32, len: usize) -> usize {
        let start = off as usize;
        match start.checked_add(len) {
            Some(end) if end <= self.capacity() => start,
            _ => panic!(
                "arena range {off}+{len} out of bounds (capacity {})",
                self.capacity()
            ),
        }
    }

    /// Raw pointer to the byte at `off`, after checking that `[off, off + len)` is inside the
    /// region. Dereferencing it is the caller's `unsafe` business.
    ///
    /// Panics if the range is out of bounds.
    #[inline]
    pub fn ptr(&self, off: u32, len: usize) -> *mut u8 {
        let start = self.check_range(off, len);
        // SAFETY: `start + len <= capacity`, so the offset pointer stays inside (or one past
        // the end of) the allocation `base` points to.
        unsafe { self.base.as_ptr().add(start) }
    }

    /// The `len` bytes at `off`.
    ///
    /// Panics if the range is out of bounds.
    ///
    /// # Safety
    /// No thread may write any byte of the range (through [`Arena::write`], a pointer from
    /// [`Arena::ptr`] or an atomic view) while the returned slice is alive, and every write
    /// made before must happen-before this call (for example: the range was written, then its
    /// offset published with a `Release` store and loaded here with `Acquire`).
    #[inline]
    pub unsafe fn bytes(&self, off: u32, len: usize) -> &[u8] {
        let ptr = self.ptr(off, len);
        // SAFETY: the range is in bounds (checked by `ptr`) and initialised (invariant 4);
        // the caller guarantees no concurrent writer for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }

    /// Copies `src` into the region at `off`.
    ///
    /// Panics if the range is out of bounds.
    ///
    /// # Safety
    /// The caller has exclusive access to the range: no other thread reads or writes it
    /// concurrently (typically it is a fresh allocation whose offset is not yet published).
    #[inline]
    pub unsafe fn write(&self, off: u32, src: &[u8]) {
        let dst = self.ptr(off, src.len());
        // SAFETY: `dst..dst + src.len()` is inside the region (checked by `ptr`), cannot
        // overlap `src` (the region is owned by the arena and never lent out as `&mut`),
        // and the caller guarantees exclusive access to it.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
    }

    /// An atomic view of the 4 bytes at `off`, for links and counters.
    ///
    /// Panics if `off` is not a multiple of 4 or the word is out of bounds.
    #[inline]
    pub fn atomic_u32(&self, off: u32) -> &AtomicU32 {
        assert!(off.is_multiple_of(4), "misaligned AtomicU32 offset {off}");
        let ptr = self.ptr(off, 4);
        // SAFETY: the 4 bytes are in bounds, 4-aligned (the base is 8-aligned and `off` is a
        // multiple of 4), initialised, and live as long as `&self`. `AtomicU32` has the size
        // and alignment of `u32` and permits shared mutation; races with non-atomic accesses
        // are excluded by the contracts of the `unsafe` byte accessors.
        unsafe { &*ptr.cast::<AtomicU32>() }
    }

    /// An atomic view of the 8 bytes at `off`.
    ///
    /// Panics if `off` is not a multiple of 8 or the word is out of bounds.
    #[inline]
    pub fn atomic_u64(&self, off: u32) -> &AtomicU64 {
        assert!(off.is_multiple_of(8), "misaligned AtomicU64 offset {off}");
        let ptr = self.ptr(off, 8);
        // SAFETY: as in `atomic_u32`, with 8 bytes and 8-byte alignment (the base comes from
        // a `Box<[u64]>`, and `off` is a multiple of 8).
        unsafe { &*ptr.cast::<AtomicU64>() }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: `base` was returned by `alloc_zeroed(self.layout)` in the constructor and
        // is freed only here, once. `&mut self` proves no reference into the region is alive.
        unsafe { dealloc(self.base.as_ptr(), self.layout) }
    }
}

/// Asks Linux to back `[base, base + len)` with transparent huge pages. `base` must be
/// 2 MiB aligned. Failure is ignored: the advice is only a hint.
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge_pages(base: NonNull<u8>, len: usize) {
    // SAFETY: the range is one live allocation owned by the caller, page aligned (2 MiB);
    // MADV_HUGEPAGE changes how the kernel backs it, not its contents or validity.
    let _ = unsafe { libc::madvise(base.as_ptr().cast(), len, libc::MADV_HUGEPAGE) };
}

/// No transparent huge pages here: nothing to do.
#[cfg(not(all(target_os = "linux", not(miri))))]
fn advise_huge_pages(_base: NonNull<u8>, _len: usize) {}

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("capacity", &self.capacity())
            .field("used", &self.used())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn offsets_start_after_null_and_respect_alignment() {
        let a = Arena::with_options(
            1024,
            ArenaOptions {
                prefault: false,
                huge_pages: false,
            },
        );
        assert_eq!(a.capacity(), 1024);
        assert_eq!(a.used(), RESERVED as usize);
        let x = a.alloc(3, 1).unwrap();
        assert_eq!(x, RESERVED);
        let y = a.alloc(8, 8).unwrap();
        assert_eq!(y % 8, 0);
        assert!(y >= x + 3);
        let z = a.alloc(4, 4).unwrap();
        assert_eq!(z % 4, 0);
        assert_eq!(a.used(), z as usize + 4);
    }

    #[test]
    fn full_arena_returns_none_and_reserves_nothing() {
        let a = Arena::new(64);
        let x = a.alloc(40, 8).unwrap();
        assert_eq!(x, 8);
        let used = a.used();
        assert_eq!(a.alloc(17, 1), None);
        assert_eq!(
            a.used(),
            used,
            "a failed allocation must not move the cursor"
        );
        assert_eq!(a.alloc(16, 8), Some(48));
        assert_eq!(a.used(), 64);
        assert_eq!(a.alloc(1, 1), None);
        assert_eq!(
            a.alloc(0, 1),
            Some(64),
            "an empty allocation fits at the end"
        );
        assert_eq!(a.alloc(usize::MAX, 1), None);
    }

    #[test]
    fn every_option_gives_a_zeroed_usable_region() {
        let size = if cfg!(miri) { 64 << 10 } else { 4 << 20 };
        for prefault in [false, true] {
            for huge_pages in [false, true] {
                let a = Arena::with_options(
                    size,
                    ArenaOptions {
                        prefault,
                        huge_pages,
                    },
                );
                assert_eq!(a.capacity(), size);
                let first = a.alloc(8, 8).unwrap();
                let last = a.alloc(a.remaining() - 8, 8).unwrap();
                let end = a.alloc(8, 8).unwrap();
                assert_eq!(end as usize, size - 8);
                assert_eq!(a.alloc(1, 1), None);
                for off in [first, end] {
                    assert_eq!(a.atomic_u64(off).load(Ordering::Relaxed), 0);
                    a.atomic_u64(off).store(u64::MAX, Ordering::Relaxed);
                    assert_eq!(a.atomic_u64(off).load(Ordering::Relaxed), u64::MAX);
                }
                // SAFETY: single thread, no concurrent writer.
                let mid = unsafe { a.bytes(last, 64) };
                assert!(mid.iter().all(|&b| b == 0));
            }
        }
    }

    #[test]
    fn capacity_is_rounded_and_at_least_reserved() {
        assert_eq!(Arena::new(0).capacity(), RESERVED as usize);
        assert_eq!(Arena::new(13).capacity(), 16);
        assert_eq!(Arena::new(0).alloc(1, 1), None);
    }

    #[test]
    fn bytes_and_atomics_round_trip() {
        let a = Arena::new(256);
        let off = a.alloc(16, 8).unwrap();
        // SAFETY: fresh allocation, this thread only.
        unsafe { a.write(off, b"hello arena!") };
        // SAFETY: no concurrent writer.
        assert_eq!(unsafe { a.bytes(off, 12) }, b"hello arena!");
        // SAFETY: no concurrent writer.
        let tail = unsafe { a.bytes(off + 12, 4) };
        assert_eq!(tail, &[0, 0, 0, 0], "fresh memory is zero");
        let w = a.alloc(16, 8).unwrap();
        a.atomic_u64(w).store(u64::MAX - 1, Ordering::Relaxed);
        a.atomic_u32(w + 8).store(7, Ordering::Relaxed);
        assert_eq!(a.atomic_u64(w).load(Ordering::Relaxed), u64::MAX - 1);
        assert_eq!(a.atomic_u32(w + 8).load(Ordering::Relaxed), 7);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn out_of_bounds_view_panics() {
        let a = Arena::new(64);
        let _ = a.atomic_u32(64);
    }

    #[test]
    #[should_panic(expected = "misaligned")]
    fn misaligned_view_panics() {
        let a = Arena::new(64);
        let _ = a.atomic_u64(12);
    }

    #[test]
    fn concurrent_allocations_are_disjoint() {
        let per_thread = if cfg!(miri) { 50 } else { 10_000 };
        let a = Arc::new(Arena::new(8 + 4 * per_thread * 16));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let a = Arc::clone(&a);
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..per_thread {
                        let off = a.alloc(16, 8).unwrap();
                        let tag = (t * per_thread + i) as u64;
                        a.atomic_u64(off).store(tag, Ordering::Relaxed);
                        a.atomic_u64(off + 8).store(!tag, Ordering::Relaxed);
                        mine.push((off, tag));
                    }
                    mine
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().unwrap());
        }
        assert_eq!(a.alloc(1, 1), None, "the arena is exactly full");
        for &(off, tag) in &all {
            assert_eq!(a.atomic_u64(off).load(Ordering::Relaxed), tag);
            assert_eq!(a.atomic_u64(off + 8).load(Ordering::Relaxed), !tag);
        }
        let mut offs: Vec<u32> = all.iter().map(|&(o, _)| o).collect();
        offs.sort_unstable();
        offs.dedup();
        assert_eq!(offs.len(), 4 * per_thread);
    }
}
