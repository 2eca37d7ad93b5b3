//! The memory an arena can live in: DRAM (heap), or a mapped region of persistent memory.
//!
//! Owns: only the [`Media`] trait, the seam between the data structures of this crate
//! (arena, skip list, logs) and the mapping/persistence code (the region module). Data
//! structures address media by byte offsets from [`Media::base`] and make their writes
//! durable only through [`Media::persist`] followed by [`Media::fence`].
//!
//! Invariants every implementation keeps:
//! 1. `base()` is valid for reads and writes of `len()` bytes, 8-byte aligned (in practice
//!    page aligned), initialised, and never moves or shrinks while the media lives.
//! 2. After `persist(off, len)` and a later `fence()` returned `Ok`, the bytes of
//!    `[off, off + len)` as they were at the `persist` call survive a power cut (for the
//!    persistent modes; for DRAM and `Volatile` both calls are no-ops and
//!    [`Media::is_persistent`] is false).
//!
//! Thread-safety: implementations are `Send + Sync`; `persist` and `fence` may be called
//! from any thread. Byte access through `base()` follows the arena's protocol (write a range
//! nobody else reads yet, then publish it with a `Release` store).

use std::fmt;
use std::io;
use std::ptr::NonNull;

/// A contiguous byte region an arena or log can be placed in.
pub trait Media: Send + Sync + fmt::Debug {
    /// Start of the region (see the module invariants).
    fn base(&self) -> NonNull<u8>;

    /// Length of the region in bytes.
    fn len(&self) -> usize;

    /// Whether the region has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts making `[off, off + len)` durable (flush the cache lines, record the dirty
    /// range, or copy it to the simulated durable image). Durable once a later
    /// [`Media::fence`] returns `Ok`. Out-of-range parts are ignored.
    ///
    /// # Errors
    /// An I/O error of the mapping (e.g. a failed `msync`).
    fn persist(&self, off: usize, len: usize) -> io::Result<()>;

    /// Completes every earlier `persist` (an `sfence`, or the `msync` of recorded ranges).
    ///
    /// # Errors
    /// An I/O error of the mapping.
    fn fence(&self) -> io::Result<()>;

    /// Whether `persist`/`fence` make anything durable. False for DRAM and `Volatile`, so
    /// callers may skip building persist ranges.
    fn is_persistent(&self) -> bool;

    /// Writes `v` to the 8-aligned word at `off` with one non-temporal store and returns
    /// true, when this media persists by flushing cache lines: such a store needs no flush
    /// (it is durable once a later [`Media::fence`] on the same thread returns) and does
    /// not bring the line into the cache. A word rewritten at every write group (a commit
    /// word) then costs no cache miss each time, where storing into a line just flushed
    /// (evicted, on some CPUs) costs one. Otherwise writes nothing and returns false (the
    /// default): the caller stores the word and persists it.
    fn store_word_uncached(&self, _off: usize, _v: u64) -> bool {
        false
    }

    /// Latency emulation hook: data structures call it after reading `len` bytes of the
    /// media (e.g. one skip-list node). Default: nothing.
    fn on_read(&self, _len: usize) {}

    /// Latency emulation hook: called after writing `len` bytes. Default: nothing.
    fn on_write(&self, _len: usize) {}
}
