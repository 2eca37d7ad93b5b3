//! A fixed-capacity byte region addressed by 32-bit offsets, with a lock-free bump allocator.
//!
//! Owns: one contiguous, 8-byte aligned, initialised region and the allocation cursor inside
//! it. The region is either heap memory owned by the arena (the DRAM memtable's case:
//! zero-filled, optionally pre-faulted and on huge pages; from 2 MiB up, on Linux, its own
//! anonymous mapping, so that untouched capacity costs no memory) or a sub-range
//! `[start, start + len)` of a [`Media`] (an NVM extent), which the arena shares through an
//! `Arc`. Offsets are relative to the arena's start in both cases.
//!
//! Invariants:
//! 1. Offsets are `u32`; the capacity never exceeds [`MAX_CAPACITY`]. Offset 0 is reserved as
//!    "null": the first [`RESERVED`] bytes (heap) or [`MEDIA_HEADER`] bytes (media) are never
//!    handed out, so a valid allocation is never at offset 0. On media, the structure placed
//!    in the arena may keep its own header in those bytes (the skip list does).
//! 2. Allocations never overlap and are never freed or moved: the region lives, at the same
//!    address, as long as the `Arena`.
//! 3. An allocation is all or nothing: [`Arena::alloc`] either reserves `size` bytes entirely
//!    inside the region or returns `None` and reserves nothing.
//! 4. Every byte of the region is initialised from creation on (heap: zero, or an earlier
//!    user's bytes after [`Arena::recycle`]; media: whatever the media holds, e.g. an
//!    earlier incarnation's bytes), so reading any in-bounds range never reads
//!    uninitialised memory.
//! 5. Durability: [`Arena::persist`] and [`Arena::fence`] forward to the media (offsets
//!    translated); they are no-ops for heap arenas, which are never persistent.
//!
//! Thread-safety: `Arena` is `Send + Sync`. `alloc` and the atomic views may be used from any
//! number of threads. Plain byte access ([`Arena::bytes`], [`Arena::write`]) is `unsafe`:
//! the caller guarantees that no other thread writes a range while it is read or written
//! (the usual protocol: write a fresh allocation, then publish its offset with a `Release`
//! store that readers load with `Acquire`). A media arena assumes that nothing outside it
//! writes its sub-range of the media while it lives.

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::fmt;
use std::io;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::media::Media;
use crate::region::LINE;

/// [`LINE`] as the `u64` the allocation cursor counts in.
const LINE_U64: u64 = LINE as u64;

/// Bytes at the start of every heap arena that are never allocated, so that offset 0 means
/// null.
pub const RESERVED: u32 = 8;

/// Bytes at the start of every media arena that are never allocated: offset 0 is null, and
/// the structure living in the arena keeps its header there (one cache line).
pub const MEDIA_HEADER: u32 = 64;

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

/// Why an arena cannot be placed on a media range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArenaError {
    /// `start` is not a multiple of 8.
    Misaligned {
        /// The requested start.
        start: usize,
    },
    /// `[start, start + len)` does not lie inside the media.
    OutOfBounds {
        /// The requested start.
        start: usize,
        /// The requested length.
        len: usize,
        /// The media's length.
        media_len: usize,
    },
    /// `len` is not a multiple of 8, is smaller than [`MEDIA_HEADER`] or larger than
    /// [`MAX_CAPACITY`].
    BadLength {
        /// The requested length.
        len: usize,
    },
}

impl fmt::Display for ArenaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArenaError::Misaligned { start } => {
                write!(f, "arena start {start} is not 8-byte aligned")
            }
            ArenaError::OutOfBounds {
                start,
                len,
                media_len,
            } => write!(
                f,
                "arena range {start}+{len} exceeds the media ({media_len} bytes)"
            ),
            ArenaError::BadLength { len } => write!(
                f,
                "arena length {len} is not a multiple of 8 in {MEDIA_HEADER}..={MAX_CAPACITY}"
            ),
        }
    }
}

impl std::error::Error for ArenaError {}

/// Where an arena's bytes live.
enum Backing {
    /// Heap memory from `alloc_zeroed(layout)`, owned by the arena.
    Heap(Layout),
    /// An anonymous mapping of `len` bytes at `map` (zero-filled by the kernel on first
    /// touch), owned by the arena; the region starts inside it, 2 MiB aligned.
    #[cfg_attr(not(all(target_os = "linux", not(miri))), allow(dead_code))]
    Anonymous {
        /// Start of the mapping (for `munmap`).
        map: NonNull<u8>,
        /// Length of the mapping.
        len: usize,
    },
    /// A sub-range of a media, starting `start` bytes into it.
    Media {
        /// The media (kept alive by the arena).
        media: Arc<dyn Media>,
        /// Offset of the arena's byte 0 in the media.
        start: usize,
    },
}

/// A fixed-capacity, 8-byte aligned byte region with a lock-free bump allocator.
///
/// Addresses inside the region are `u32` offsets from its start; offset 0 is null. See the
/// module documentation for the invariants and the thread-safety contract.
pub struct Arena {
    /// Start of the region: heap memory from `alloc_zeroed`, or `media.base() + start`.
    base: NonNull<u8>,
    /// Size of the region in bytes: a multiple of 8, at most [`MAX_CAPACITY`].
    capacity: usize,
    /// Offset of the next free byte. Only grows (except through `set_used` during
    /// recovery, before the arena is shared); never exceeds the capacity.
    pos: AtomicU64,
    /// Who owns the bytes.
    backing: Backing,
    /// Whether the media's read hooks charge anything (`Media::charges_reads`), so the
    /// per-access hooks skip the call when they would not.
    charges_reads: bool,
}

// SAFETY: a heap `Arena` owns its region exclusively (like a `Box<[u8]>`); a media arena
// holds an `Arc<dyn Media>` (itself `Send + Sync`) that keeps the mapping alive, and uses
// its sub-range exclusively. The raw pointer is only an address. Shared access from several
// threads is limited to atomic operations (the allocation cursor and the atomic views) and
// to the `unsafe` byte accessors whose callers promise the absence of data races.
unsafe impl Send for Arena {}
// SAFETY: see `Send` above: every `&self` method is either atomic, forwards to the `Sync`
// media, or is `unsafe` with a no-concurrent-writer contract.
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
        if capacity >= HUGE_PAGE_SIZE
            && let Some(arena) = Arena::anonymous(capacity, options)
        {
            return arena;
        }
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
            capacity,
            pos: AtomicU64::new(u64::from(RESERVED)),
            backing: Backing::Heap(layout),
            charges_reads: false,
        };
        if options.prefault {
            arena.prefault();
        }
        arena
    }

    /// A heap arena on its own anonymous mapping (Linux): the kernel supplies zeroed pages
    /// on first touch, so an arena that is never filled costs address space only, and
    /// dropping it returns every page at once. `None` where mapping fails or is not
    /// available (the caller then allocates from the heap).
    #[cfg(all(target_os = "linux", not(miri)))]
    fn anonymous(capacity: usize, options: ArenaOptions) -> Option<Arena> {
        // One huge page more than asked, so that the region can start 2 MiB aligned.
        let map_len = capacity.checked_add(HUGE_PAGE_SIZE)?;
        // SAFETY: a fresh private anonymous mapping at an address of the kernel's choosing
        // touches no existing memory; the result is checked for MAP_FAILED below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let skip = (raw as usize).next_multiple_of(HUGE_PAGE_SIZE) - raw as usize;
        // SAFETY: `skip < HUGE_PAGE_SIZE`, so `raw + skip .. raw + skip + capacity` lies
        // inside the `map_len` bytes just mapped.
        let base = NonNull::new(unsafe { raw.cast::<u8>().add(skip) })?;
        if options.huge_pages {
            advise_huge_pages(base, capacity);
        }
        let arena = Arena {
            base,
            capacity,
            pos: AtomicU64::new(u64::from(RESERVED)),
            backing: Backing::Anonymous {
                map: NonNull::new(raw.cast::<u8>())?,
                len: map_len,
            },
            charges_reads: false,
        };
        if options.prefault {
            arena.prefault();
        }
        Some(arena)
    }

    /// No anonymous mappings here: heap arenas come from the allocator.
    #[cfg(not(all(target_os = "linux", not(miri))))]
    fn anonymous(_capacity: usize, _options: ArenaOptions) -> Option<Arena> {
        None
    }

    /// Places a fresh arena on `[start, start + len)` of `media`. Its allocation cursor
    /// starts after the [`MEDIA_HEADER`] bytes; the bytes of the range are left as they are
    /// (a structure created in the arena must initialise everything it later reads).
    ///
    /// # Errors
    /// [`ArenaError`] when `start` is not 8-aligned, `len` is not a multiple of 8 in
    /// `MEDIA_HEADER..=MAX_CAPACITY`, or the range exceeds the media.
    pub fn on_media(media: Arc<dyn Media>, start: usize, len: usize) -> Result<Arena, ArenaError> {
        Arena::place(media, start, len, u64::from(MEDIA_HEADER))
    }

    /// Reopens an arena that already holds a structure on `[start, start + len)` of
    /// `media` (after a restart or a power cut). Nothing can be allocated until the
    /// structure's recovery has found where its data ends and moved the cursor there
    /// (crate-internal: [`SkipList::recover`](crate::SkipList::recover) does it).
    ///
    /// # Errors
    /// As [`Arena::on_media`].
    pub fn recover_on_media(
        media: Arc<dyn Media>,
        start: usize,
        len: usize,
    ) -> Result<Arena, ArenaError> {
        Arena::place(media, start, len, len as u64)
    }

    fn place(
        media: Arc<dyn Media>,
        start: usize,
        len: usize,
        pos: u64,
    ) -> Result<Arena, ArenaError> {
        if !start.is_multiple_of(8) {
            return Err(ArenaError::Misaligned { start });
        }
        if !len.is_multiple_of(8) || len < MEDIA_HEADER as usize || len > MAX_CAPACITY {
            return Err(ArenaError::BadLength { len });
        }
        let media_len = media.len();
        if start.checked_add(len).is_none_or(|end| end > media_len) {
            return Err(ArenaError::OutOfBounds {
                start,
                len,
                media_len,
            });
        }
        // SAFETY: `start + len <= media.len()`, so `base + start` stays inside (or one past
        // the end of) the media's region, which is valid for `len()` bytes (media invariant
        // 1) and 8-aligned like `start`.
        let base = unsafe { media.base().add(start) };
        let charges_reads = media.charges_reads();
        Ok(Arena {
            base,
            capacity: len,
            pos: AtomicU64::new(pos),
            charges_reads,
            backing: Backing::Media { media, start },
        })
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

    /// Makes every byte of a heap arena free again, for a new structure to reuse memory
    /// whose pages are already mapped (a new anonymous mapping costs a page fault per
    /// page on first touch). The bytes keep their old content, as a media arena's do: a
    /// structure built in a recycled arena must initialise everything it later reads (the
    /// skip list does). Returns `false`, changing nothing, for a media arena.
    pub fn recycle(&mut self) -> bool {
        if self.is_on_media() {
            return false;
        }
        *self.pos.get_mut() = u64::from(RESERVED);
        true
    }

    /// Total size of the region in bytes, including the reserved bytes.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes handed out so far, including the reserved bytes and alignment padding.
    pub fn used(&self) -> usize {
        // `pos` never exceeds the capacity, which fits in a usize.
        usize::try_from(self.pos.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    /// Bytes still available (ignoring alignment padding).
    pub fn remaining(&self) -> usize {
        self.capacity().saturating_sub(self.used())
    }

    /// Number of bytes at the start that are never allocated: [`RESERVED`] for heap arenas,
    /// [`MEDIA_HEADER`] for media arenas.
    pub fn reserved(&self) -> u32 {
        match self.backing {
            Backing::Heap(_) | Backing::Anonymous { .. } => RESERVED,
            Backing::Media { .. } => MEDIA_HEADER,
        }
    }

    /// Moves the allocation cursor to `pos` (clamped to `reserved()..=capacity`). For
    /// recovery, before the arena is shared: bytes below `pos` are in use, bytes above it
    /// are free again.
    pub(crate) fn set_used(&self, pos: usize) {
        let pos = pos.clamp(self.reserved() as usize, self.capacity);
        self.pos.store(pos as u64, Ordering::Relaxed);
    }

    /// Whether the arena lives on a media (rather than on its own heap memory).
    #[inline]
    pub fn is_on_media(&self) -> bool {
        matches!(self.backing, Backing::Media { .. })
    }

    /// The media the arena lives on and the arena's start offset in it, if any.
    pub fn media(&self) -> Option<(&Arc<dyn Media>, usize)> {
        match &self.backing {
            Backing::Heap(_) | Backing::Anonymous { .. } => None,
            Backing::Media { media, start } => Some((media, *start)),
        }
    }

    /// Whether [`Arena::persist`] + [`Arena::fence`] make anything durable (false for heap
    /// arenas and non-persistent media).
    pub fn is_persistent(&self) -> bool {
        match &self.backing {
            Backing::Heap(_) | Backing::Anonymous { .. } => false,
            Backing::Media { media, .. } => media.is_persistent(),
        }
    }

    /// Starts making `[off, off + len)` of the arena durable (see [`Media::persist`]);
    /// durable once a later [`Arena::fence`] returned `Ok`. A no-op for heap arenas. The
    /// range is clipped to the arena.
    ///
    /// # Errors
    /// The media's I/O error.
    pub fn persist(&self, off: u32, len: usize) -> io::Result<()> {
        match &self.backing {
            Backing::Heap(_) | Backing::Anonymous { .. } => Ok(()),
            Backing::Media { media, start } => {
                let off = off as usize;
                let len = len.min(self.capacity.saturating_sub(off));
                media.persist(start + off, len)
            }
        }
    }

    /// Completes every earlier [`Arena::persist`] (see [`Media::fence`]). A no-op for heap
    /// arenas.
    ///
    /// # Errors
    /// The media's I/O error.
    pub fn fence(&self) -> io::Result<()> {
        match &self.backing {
            Backing::Heap(_) | Backing::Anonymous { .. } => Ok(()),
            Backing::Media { media, .. } => media.fence(),
        }
    }

    /// Cost-emulation hook: one read access of `len` bytes of the arena. Forwards to
    /// [`Media::on_read`]; nothing for heap arenas.
    #[inline]
    pub fn on_read(&self, len: usize) {
        if let Backing::Media { media, .. } = &self.backing {
            media.on_read(len);
        }
    }

    /// Cost-emulation hook: one read access of `len` bytes at arena offset `off` (see
    /// [`Media::on_read_at`]); nothing for heap arenas or a media that charges no reads.
    #[inline]
    pub fn on_read_at(&self, off: u32, len: usize) {
        if let Backing::Media { media, start } = &self.backing
            && self.charges_reads
        {
            media.on_read_at(start + off as usize, len);
        }
    }

    /// Cost-emulation hook: `len` more bytes at arena offset `off`, right after the last
    /// reported access (see [`Media::on_read_continued_at`]); nothing for heap arenas or a
    /// media that charges no reads.
    #[inline]
    pub fn on_read_continued_at(&self, off: u32, len: usize) {
        if let Backing::Media { media, start } = &self.backing
            && self.charges_reads
            && len > 0
        {
            media.on_read_continued_at(start + off as usize, len);
        }
    }

    /// Latency-emulation hook: `len` bytes of the arena were written. Forwards to
    /// [`Media::on_write`]; nothing for heap arenas.
    #[inline]
    pub fn on_write(&self, len: usize) {
        if let Backing::Media { media, .. } = &self.backing {
            media.on_write(len);
        }
    }

    /// Cost-emulation hook: `accesses` separate writes of `bytes_each` bytes (see
    /// [`Media::on_writes`]); nothing for heap arenas.
    #[inline]
    pub fn on_writes(&self, accesses: usize, bytes_each: usize) {
        if let Backing::Media { media, .. } = &self.backing {
            media.on_writes(accesses, bytes_each);
        }
    }
    /// Reserves `size` bytes aligned to `align` and returns their offset, or `None` when the
    /// region has not enough room left (then nothing is reserved). The bytes of a fresh
    /// allocation are zero unless they were written before through an offset outside any
    /// allocation. Lock-free: concurrent callers get disjoint ranges.
    ///
    /// Panics if `align` is not a power of two or is greater than 8.
    pub fn alloc(&self, size: usize, align: usize) -> Option<u32> {
        self.alloc_with_head(size, align, 0)
    }

    /// As [`Arena::alloc`], and the first `head` bytes of the allocation lie in one cache
    /// line ([`LINE`] bytes, counted by media offset on media and by address on the heap)
    /// when `head <= LINE`: the allocation starts at the next line when it would split them
    /// (the bytes skipped stay unused). A
    /// structure whose readers look at a small header first (a skip-list node's header,
    /// links and key) then costs one cache miss per visit instead of two dependent ones.
    ///
    /// Panics as [`Arena::alloc`].
    pub fn alloc_with_head(&self, size: usize, align: usize, head: usize) -> Option<u32> {
        assert!(
            align.is_power_of_two() && align <= 8,
            "arena alignment must be 1, 2, 4 or 8, got {align}"
        );
        let size = u64::try_from(size).ok()?;
        let mask = align as u64 - 1;
        let capacity = self.capacity() as u64;
        let origin = self.line_origin();
        let head = head as u64;
        let mut cur = self.pos.load(Ordering::Relaxed);
        loop {
            let mut start = (cur + mask) & !mask;
            let in_line = origin.wrapping_add(start) % LINE_U64;
            if head <= LINE_U64 && in_line + head > LINE_U64 {
                // The origin is 8-aligned and a line is a multiple of 8, so the start of
                // the next line keeps every alignment up to 8.
                start += LINE_U64 - in_line;
            }
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

    /// Where offset 0 of the region lies relative to a line boundary, for
    /// [`Arena::alloc_with_head`]: the media offset of the region for a media arena (a
    /// media is mapped at least page-aligned, so lines of the media are lines of memory,
    /// and the placement is a function of offsets alone: the same on every mapping of the
    /// same bytes, which recovery and crash simulations rely on), the address of the
    /// region for a heap arena.
    fn line_origin(&self) -> u64 {
        match &self.backing {
            Backing::Media { start, .. } => *start as u64,
            Backing::Heap(_) | Backing::Anonymous { .. } => self.base.as_ptr() as u64,
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
        // SAFETY: as in `atomic_u32`, with 8 bytes and 8-byte alignment (the base is 8-aligned
        // for heap and media arenas alike, and `off` is a multiple of 8).
        unsafe { &*ptr.cast::<AtomicU64>() }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        match self.backing {
            Backing::Heap(layout) => {
                // SAFETY: for a heap arena, `base` was returned by `alloc_zeroed(layout)` in
                // the constructor and is freed only here, once. `&mut self` proves no
                // reference into the region is alive.
                unsafe { dealloc(self.base.as_ptr(), layout) }
            }
            #[cfg(all(target_os = "linux", not(miri)))]
            Backing::Anonymous { map, len } => {
                // SAFETY: `map`/`len` are exactly the mapping made in `Arena::anonymous`,
                // unmapped only here, once; `&mut self` proves no reference into it is alive.
                let _ = unsafe { libc::munmap(map.as_ptr().cast(), len) };
            }
            // A media arena frees nothing: dropping its `Arc` does.
            _ => {}
        }
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
            .field("on_media", &self.is_on_media())
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
    fn a_head_that_fits_a_line_never_straddles_two() {
        let a = Arena::with_options(
            1 << 18,
            ArenaOptions {
                prefault: false,
                huge_pages: false,
            },
        );
        let base = a.ptr(0, 0) as u64;
        let mut last_end = 0u64;
        for i in 0..400usize {
            let head = 20 + (i * 7) % 45; // 20..=64 bytes
            let size = head + (i * 13) % 300;
            let off = a.alloc_with_head(size, 4, head).expect("room");
            let start = base + u64::from(off);
            assert_eq!(off % 4, 0, "alignment kept");
            assert_eq!(
                start / LINE_U64,
                (start + head as u64 - 1) / LINE_U64,
                "head of {head} bytes at {off} straddles a line"
            );
            assert!(u64::from(off) >= last_end, "allocations overlap");
            // The padding is less than a line and only taken when needed.
            assert!(u64::from(off) - last_end < LINE_U64);
            last_end = u64::from(off) + size as u64;
        }
        // A head longer than a line is placed as `alloc` would.
        let cur = a.used() as u64;
        let off = a.alloc_with_head(200, 4, 100).expect("room");
        assert_eq!(u64::from(off), cur.next_multiple_of(4));
    }

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

    /// A heap-backed media that records persist calls and hook bytes.
    #[derive(Debug)]
    struct Recording {
        buf: Box<[AtomicU64]>,
        persists: std::sync::Mutex<Vec<(usize, usize)>>,
        fences: AtomicU64,
        reads: AtomicU64,
        writes: AtomicU64,
    }

    impl Recording {
        fn new(len: usize) -> Arc<Recording> {
            Arc::new(Recording {
                buf: (0..len / 8).map(|_| AtomicU64::new(0)).collect(),
                persists: std::sync::Mutex::new(Vec::new()),
                fences: AtomicU64::new(0),
                reads: AtomicU64::new(0),
                writes: AtomicU64::new(0),
            })
        }
    }

    impl Media for Recording {
        fn base(&self) -> NonNull<u8> {
            // The whole slice's pointer (not one element's): writes through it may reach
            // every word; `AtomicU64` permits mutation through a shared pointer.
            NonNull::new(self.buf.as_ptr().cast::<u8>().cast_mut()).unwrap()
        }
        fn len(&self) -> usize {
            self.buf.len() * 8
        }
        fn persist(&self, off: usize, len: usize) -> io::Result<()> {
            self.persists.lock().unwrap().push((off, len));
            Ok(())
        }
        fn fence(&self) -> io::Result<()> {
            self.fences.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        fn is_persistent(&self) -> bool {
            true
        }
        fn on_read(&self, len: usize) {
            self.reads.fetch_add(len as u64, Ordering::Relaxed);
        }
        fn on_write(&self, len: usize) {
            self.writes.fetch_add(len as u64, Ordering::Relaxed);
        }
    }

    /// On media, where a node lands is a function of media offsets alone (a media is
    /// mapped line-aligned), not of where this process's copy of the bytes happens to lie:
    /// two mappings of the same bytes, and a region starting mid-line, place alike.
    #[test]
    fn media_placement_depends_on_offsets_only() {
        let place = |start: usize| -> Vec<u32> {
            let m: Arc<dyn Media> = Recording::new(8192);
            let a = Arena::on_media(m, start, 4096).unwrap();
            (0..40usize)
                .map(|i| a.alloc_with_head(24 + i % 50, 4, 24 + i % 40).unwrap())
                .collect()
        };
        let at_line = place(0);
        assert_eq!(at_line, place(0));
        for off in &at_line {
            let head_start = u64::from(*off) % LINE_U64;
            assert!(head_start + 24 <= LINE_U64, "offset {off}");
        }
        // A region 8 bytes into a line keeps heads in the media's lines.
        let mid = place(8);
        for (i, off) in mid.iter().enumerate() {
            let head = (24 + i % 40) as u64;
            let media_off = 8 + u64::from(*off);
            assert_eq!(
                media_off / LINE_U64,
                (media_off + head - 1) / LINE_U64,
                "offset {off}"
            );
        }
    }

    #[test]
    fn media_arena_translates_offsets_and_forwards_calls() {
        let media = Recording::new(4096);
        let m: Arc<dyn Media> = media.clone();
        let a = Arena::on_media(m, 1024, 2048).unwrap();
        assert!(a.is_on_media() && a.is_persistent());
        assert_eq!(a.capacity(), 2048);
        assert_eq!(a.used(), MEDIA_HEADER as usize);
        assert_eq!(a.reserved(), MEDIA_HEADER);
        let off = a.alloc(16, 8).unwrap();
        assert_eq!(off, MEDIA_HEADER);
        a.atomic_u64(off).store(0xABCD, Ordering::Relaxed);
        // The arena's offset `off` is the media's `1024 + off`.
        let word = (1024 + off as usize) / 8;
        assert_eq!(media.buf[word].load(Ordering::Relaxed), 0xABCD);
        a.persist(off, 16).unwrap();
        a.persist(2040, 100).unwrap(); // clipped to the arena
        a.fence().unwrap();
        a.on_read(64);
        a.on_write(32);
        assert_eq!(
            *media.persists.lock().unwrap(),
            vec![(1024 + off as usize, 16), (1024 + 2040, 8)]
        );
        assert_eq!(media.fences.load(Ordering::Relaxed), 1);
        assert_eq!(media.reads.load(Ordering::Relaxed), 64);
        assert_eq!(media.writes.load(Ordering::Relaxed), 32);
        assert_eq!(a.alloc(2048, 8), None);
    }

    #[test]
    fn media_arena_range_is_checked() {
        let m: Arc<dyn Media> = Recording::new(4096);
        assert_eq!(
            Arena::on_media(m.clone(), 4, 64).err(),
            Some(ArenaError::Misaligned { start: 4 })
        );
        assert_eq!(
            Arena::on_media(m.clone(), 0, 60).err(),
            Some(ArenaError::BadLength { len: 60 })
        );
        assert_eq!(
            Arena::on_media(m.clone(), 0, 32).err(),
            Some(ArenaError::BadLength { len: 32 })
        );
        assert_eq!(
            Arena::on_media(m.clone(), 4096 - 64, 128).err(),
            Some(ArenaError::OutOfBounds {
                start: 4096 - 64,
                len: 128,
                media_len: 4096
            })
        );
        assert!(Arena::on_media(m.clone(), usize::MAX - 7, 64).is_err());
        // A reopened arena allocates nothing until recovery moved its cursor.
        let r = Arena::recover_on_media(m, 0, 4096).unwrap();
        assert_eq!(r.alloc(1, 1), None);
        r.set_used(100);
        assert_eq!(r.alloc(8, 8), Some(104));
    }

    #[test]
    fn heap_arena_persists_nothing() {
        let a = Arena::new(64);
        assert!(!a.is_on_media() && !a.is_persistent());
        assert!(a.media().is_none());
        a.persist(0, 64).unwrap();
        a.fence().unwrap();
        a.on_read(1);
        a.on_write(1);
        assert_eq!(a.reserved(), RESERVED);
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
