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
//! Cost hooks: data structures report what they read and write of the media
//! ([`Media::on_read`], [`Media::on_reads`], [`Media::on_read_continued`],
//! [`Media::on_write`], [`Media::on_writes`]) as *accesses* (contiguous ranges touched in
//! one go), so that an emulated device ([`crate::cost`]) can charge its latency per access
//! and its bandwidth per byte. Reporting is the caller's duty: a read or write of the
//! media's bytes that no hook reports is free.
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

    /// Cost emulation hook: the caller read one *access* of `len` contiguous bytes of the
    /// media, starting at a place unrelated to its previous access (one skip-list node,
    /// one record, one block, one copy). An emulated device charges its latency once per
    /// access and its bandwidth for the bytes. Default: nothing.
    fn on_read(&self, _len: usize) {}

    /// Cost emulation hook: `accesses` separate reads of `bytes_each` bytes each (the nodes
    /// one search visited: each is a dependent access that pays the latency again).
    /// Default: [`Media::on_read`] once per access.
    fn on_reads(&self, accesses: usize, bytes_each: usize) {
        for _ in 0..accesses {
            self.on_read(bytes_each);
        }
    }

    /// Cost emulation hook: `len` more bytes read right after the bytes the caller's last
    /// access of the same stream ended (the value after a node's key, the next entry of a
    /// scan in address order): part of that access, so bandwidth only. Default:
    /// [`Media::on_read`] for a non-empty `len`.
    fn on_read_continued(&self, len: usize) {
        if len > 0 {
            self.on_read(len);
        }
    }

    /// Cost emulation hook: one read access of `len` bytes at media offset `off` (as
    /// [`Media::on_read`], with its place): a media that models a CPU cache in front of
    /// the device charges nothing when the access's first line is cached. Default:
    /// [`Media::on_read`].
    fn on_read_at(&self, off: usize, len: usize) {
        let _ = off;
        self.on_read(len);
    }

    /// Cost emulation hook: `len` more bytes at media offset `off`, right after the
    /// caller's last access of the same stream (as [`Media::on_read_continued`], with its
    /// place). Default: [`Media::on_read_continued`].
    fn on_read_continued_at(&self, off: usize, len: usize) {
        let _ = off;
        self.on_read_continued(len);
    }

    /// Whether the read hooks can charge anything: false lets a caller skip reporting
    /// accesses one by one. Default: true.
    fn charges_reads(&self) -> bool {
        true
    }

    /// Cost emulation hook: the caller wrote one access of `len` contiguous bytes. A media
    /// that charges durable writes where they are persisted charges these only when it is
    /// never persisted. Default: nothing.
    fn on_write(&self, _len: usize) {}

    /// Cost emulation hook: `accesses` separate writes of `bytes_each` bytes each (links
    /// stored into several nodes). Default: [`Media::on_write`] once per access.
    fn on_writes(&self, accesses: usize, bytes_each: usize) {
        for _ in 0..accesses {
            self.on_write(bytes_each);
        }
    }
}
