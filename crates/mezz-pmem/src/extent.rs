//! Safe byte access to a [`Region`]: what the formats built on the primitives (the matrix
//! container, the NVM tables and the calibration kernels of `mezz-nvtable`) use instead of
//! raw pointers.
//!
//! Owns: [`ExtentWriter`], a writer's exclusive claim on a byte range of a region (its
//! writes, and its reads of what it wrote), made by [`Region::claim`]; and the region's
//! reads of *published* bytes: [`Region::read_published`] (a copy),
//! [`Region::published`] (a borrow in place) and [`Region::load_volatile_u64`] (one
//! volatile word load).
//!
//! None of these charge the emulated cost: the caller reports what it read and wrote
//! through the [`Media`] hooks, as with raw access. A write is not durable until
//! [`Media::persist`] and [`Media::fence`].
//!
//! Why these are safe (the contract the `unsafe` copies in here rely on):
//! - Bounds: every call checks that its range lies inside the region (a writer's, inside
//!   its claim) and panics otherwise, so no access leaves the mapping, which stays mapped
//!   while the `&Region` (or the writer's `Arc`) lives.
//! - Writer against writer: a write needs an [`ExtentWriter`], and a writer exists only
//!   for a range no other live writer of the region claims (the region's claim list, also
//!   used by the NVM log writer). Two writes made through this module never overlap.
//! - A writer against its own reads: [`ExtentWriter::write`] takes `&mut self`, its reads
//!   and borrows `&self`, so the borrow checker keeps a borrow of a writer's bytes from
//!   living across its next write.
//! - Published reads against writers: the region does not check these per call (that
//!   would put a lock or an atomic read-modify-write on every read of the hot paths). A
//!   range read with `read_published`, `published` or `load_volatile_u64` must be
//!   *published*: its writer is gone (dropped, after persisting what it wrote) or is the
//!   caller itself, not writing meanwhile, and the range is not claimed again while the
//!   read or the borrow lives. This is the extent-lifetime rule every structure placed on
//!   a region already follows (the arena and skip list, the NVM log): an extent is freed
//!   (the pool), or a page released (the matrix page space), only once nothing can reach
//!   the structure that reads it, and only a freed range is handed to a new writer. A
//!   borrow from `published` therefore sees bytes nobody writes while it lives, which is
//!   what a `&[u8]` requires.
//!
//! Claims are per region value: a file mapped twice (two `Region`s) has two claim lists,
//! as two processes mapping it would. The engine maps each pool once; the calibration's
//! two mappings of one file take turns and write only from one at a time.
//!
//! Thread-safety: an `ExtentWriter` is `Send + Sync` (its writes need `&mut`); the
//! region's published reads may run on any thread, concurrently with each other.

use std::fmt;
use std::sync::Arc;

use mezz_format::{Error, Result};

use crate::Media;
use crate::region::{Claim, Region};

/// Panics unless `[off, off + len)` lies inside `[0, limit)`. The check is two compares
/// on the caller's path; the panic's formatting stays out of it (see [`out_of_range`]).
#[inline]
fn check(off: usize, len: usize, limit: usize, what: &'static str) {
    if off.checked_add(len).is_none_or(|end| end > limit) {
        out_of_range(off, len, limit, what);
    }
}

/// The panic of a failed [`check`], kept out of line so that an inlined check adds no
/// work (such as setting up the message's arguments) to the loops that call it.
#[cold]
#[inline(never)]
fn out_of_range(off: usize, len: usize, limit: usize, what: &'static str) -> ! {
    panic!("range {off}+{len} outside {what} of {limit} bytes")
}

/// The panic of a word load at an offset that is not 8-aligned (out of line, as above).
#[cold]
#[inline(never)]
fn misaligned(off: usize) -> ! {
    panic!("word offset {off} is not 8-aligned")
}

impl Region {
    /// Copies `buf.len()` published bytes at `off` out of the region (see the module
    /// documentation for what "published" requires).
    ///
    /// # Panics
    /// If the range is not inside the region.
    #[inline]
    pub fn read_published(&self, off: usize, buf: &mut [u8]) {
        check(off, buf.len(), self.len(), "region");
        // SAFETY: the range is inside the region (checked), which stays mapped while `self`
        // is borrowed; it is published, so no thread writes it during the copy (module
        // contract); `buf` is a distinct Rust allocation, so the ranges do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base().as_ptr().add(off),
                buf.as_mut_ptr(),
                buf.len(),
            );
        }
    }

    /// Borrows the `len` published bytes at `off` in place, for as long as the region is
    /// borrowed (see the module documentation for what "published" requires).
    ///
    /// # Panics
    /// If the range is not inside the region.
    #[inline]
    #[must_use]
    pub fn published(&self, off: usize, len: usize) -> &[u8] {
        check(off, len, self.len(), "region");
        // SAFETY: the range is inside the region (checked), which is initialised and stays
        // mapped, unmoved, while `self` is borrowed (the `Media` invariants), so the slice is
        // valid for the returned lifetime; the range is published, so nobody writes it while
        // the borrow lives (module contract), and the shared borrow sees immutable bytes.
        unsafe { std::slice::from_raw_parts(self.base().as_ptr().add(off), len) }
    }

    /// One volatile, aligned 8-byte load of the published word at `off` (native byte
    /// order): a load the compiler neither removes nor merges with another, for
    /// measurements of the memory itself (see the module documentation for "published").
    ///
    /// # Panics
    /// If `off` is not a multiple of 8 or the word is not inside the region.
    #[inline]
    #[must_use]
    pub fn load_volatile_u64(&self, off: usize) -> u64 {
        check(off, 8, self.len(), "region");
        if !off.is_multiple_of(8) {
            misaligned(off);
        }
        // SAFETY: `[off, off + 8)` is inside the region (checked) and 8-aligned (`off` is,
        // checked, and the base is page aligned); the region stays mapped while `self` is
        // borrowed and its bytes are initialised; the word is published, so no thread writes
        // it during the load (module contract).
        unsafe { std::ptr::read_volatile(self.base().as_ptr().add(off).cast::<u64>()) }
    }

    /// Claims `[off, off + len)` of the region for writing, until the returned writer is
    /// dropped.
    ///
    /// # Errors
    /// `InvalidArgument` when the range is not inside the region, or overlaps a range
    /// claimed by a live writer (an [`ExtentWriter`] or an NVM log writer).
    pub fn claim(self: &Arc<Region>, off: usize, len: usize) -> Result<ExtentWriter> {
        if off.checked_add(len).is_none_or(|end| end > self.len()) {
            return Err(Error::InvalidArgument(format!(
                "NVM range {off}+{len} is outside its region of {} bytes",
                self.len()
            )));
        }
        let claim = Claim::new(self, off, len)?;
        Ok(ExtentWriter {
            region: Arc::clone(self),
            off,
            len,
            _claim: claim,
        })
    }
}

/// A writer's exclusive claim on `[offset, offset + len)` of a region, released on drop.
/// Offsets of its methods are relative to the start of the claimed range. See the module
/// documentation.
pub struct ExtentWriter {
    region: Arc<Region>,
    off: usize,
    len: usize,
    _claim: Claim,
}

impl fmt::Debug for ExtentWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtentWriter")
            .field("offset", &self.off)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl ExtentWriter {
    /// The region.
    #[must_use]
    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    /// Region offset of the start of the claimed range.
    #[must_use]
    pub fn offset(&self) -> usize {
        self.off
    }

    /// Bytes of the claimed range.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the claimed range is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` into the claimed range at `at` (not persisted, not reported to the cost
    /// hooks).
    ///
    /// # Panics
    /// If `[at, at + data.len())` is not inside the claimed range.
    #[inline]
    pub fn write(&mut self, at: usize, data: &[u8]) {
        check(at, data.len(), self.len, "claimed range");
        // SAFETY: `[off + at, off + at + data.len())` is inside the claimed range (checked),
        // which `Region::claim` checked lies inside the region, mapped while `self.region`
        // lives. No other writer claims an overlapping range while `self` lives; this
        // writer's own borrows end before this `&mut self` call; no published read or
        // borrow of the range lives while it is written (module contract). So nothing else
        // accesses these bytes during the copy, and `data` cannot be a borrow of them: it
        // does not overlap the destination.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.region.base().as_ptr().add(self.off + at),
                data.len(),
            );
        }
    }

    /// Copies `buf.len()` bytes at `at` of the claimed range out of the region.
    ///
    /// # Panics
    /// If the range is not inside the claimed range.
    #[inline]
    pub fn read(&self, at: usize, buf: &mut [u8]) {
        check(at, buf.len(), self.len, "claimed range");
        self.region.read_published(self.off + at, buf);
    }

    /// Borrows `len` bytes at `at` of the claimed range in place, until the writer's next
    /// write (which the borrow checker orders after the borrow's end).
    ///
    /// # Panics
    /// If the range is not inside the claimed range.
    #[inline]
    #[must_use]
    pub fn bytes(&self, at: usize, len: usize) -> &[u8] {
        check(at, len, self.len, "claimed range");
        self.region.published(self.off + at, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::RegionOptions;

    #[test]
    fn claims_exclude_writers_and_reads_see_writes() {
        let region = Region::anonymous(1 << 16, &RegionOptions::default()).unwrap();
        let mut w = region.claim(4096, 4096).unwrap();
        assert_eq!((w.offset(), w.len(), w.is_empty()), (4096, 4096, false));
        assert!(region.claim(8191, 2).is_err(), "overlaps the live writer");
        assert!(region.claim(0, 1 << 17).is_err(), "outside the region");
        let mut other = region.claim(8192, 64).unwrap();
        other.write(0, &7u64.to_ne_bytes());
        w.write(8, b"abc");
        assert_eq!(w.bytes(8, 3), b"abc");
        let mut buf = [0u8; 3];
        w.read(8, &mut buf);
        assert_eq!(&buf, b"abc");
        drop(w);
        assert_eq!(region.published(4104, 3), b"abc");
        region.read_published(4104, &mut buf);
        assert_eq!(&buf, b"abc");
        drop(other);
        assert_eq!(region.load_volatile_u64(8192), 7);
        assert!(region.claim(4096, 4096).is_ok(), "released on drop");
    }

    #[test]
    #[should_panic(expected = "outside claimed range")]
    fn a_write_beyond_the_claim_panics() {
        let region = Region::anonymous(1 << 16, &RegionOptions::default()).unwrap();
        let mut w = region.claim(0, 64).unwrap();
        w.write(60, &[0u8; 8]);
    }

    #[test]
    #[should_panic(expected = "outside region")]
    fn a_read_beyond_the_region_panics() {
        let region = Region::anonymous(4096, &RegionOptions::default()).unwrap();
        let _ = region.published(4090, 8);
    }

    #[test]
    #[should_panic(expected = "not 8-aligned")]
    fn a_misaligned_word_load_panics() {
        let region = Region::anonymous(4096, &RegionOptions::default()).unwrap();
        let _ = region.load_volatile_u64(4);
    }
}
