//! The matrix container of level 0 in persistent memory (MatrixKV): a page space, RowTables
//! (one flushed memtable each) linked by cross-row hints, and the container that splits its
//! rows into a receiver and a compactor.
//!
//! Owns:
//! - [`PageSpace`]: fixed-size pages over one extent of a pool, with a DRAM free list that is
//!   never stored: at open it is rebuilt from the pages the engine's durable metadata still
//!   names ([`PageSpace::from_live`]).
//! - [`RowBuilder`] and [`RowTable`]: one row holds the entries of one flushed memtable. The
//!   builder lays the whole row out in a DRAM buffer, copies it into its pages in one pass,
//!   persists and fences it, then publishes it with a commit word. A row is read in place: a
//!   binary search over a fixed-size key array, then one checksummed data block.
//! - [`Container`]: the rows, oldest first, split into compactor rows (the oldest) and receiver
//!   rows; the role switch; column consumption (a consumed prefix of entries per row) and the
//!   pages it makes releasable; the newest-to-oldest search that narrows each older row with
//!   the hints of the newer one.
//!
//! Format (spec: `docs/formats/matrix-row.md`). A row's bytes are the concatenation of its
//! pages in the order of its page list (pages need not be contiguous); offsets below are
//! offsets in that logical byte string:
//! ```text
//! 0   commit word u64 = row_id ^ COMMIT_MAGIC (the rest of the cache line is zero)
//! 64  header: magic, version, ids, geometry, sequence range, page list, masked crc32c
//! K   key array: n entries of 48 bytes, sorted by internal key:
//!     user-key prefix [16] | trailer u64 | user-key length u32 | block offset u32 |
//!     block length u32 | slot u32 | hint u32 | masked crc32c u32
//! D   data blocks, exactly as SST data blocks: KeySet contents | pad to 8 | masked crc32c
//!     u32 | type u8 (0) | 3 zero bytes
//! ```
//!
//! Invariants:
//! 1. A row is visible only when its commit word equals `row_id ^ COMMIT_MAGIC`. The word is
//!    stored with one 8-byte atomic store after every other byte of the row was persisted and
//!    fenced, so a power cut leaves the whole row or none ([`RowTable::open`] returns
//!    `Ok(None)` for a row that never committed).
//! 2. A committed row never changes. Its pages are released only by the caller
//!    ([`PageSpace::release`]), and only pages that hold no live byte of the row
//!    ([`RowTable::pages_in_use`]) are ever reported releasable.
//! 3. Every read verifies: the header checksum at open, each key-array entry's checksum when
//!    it is read, each data block's checksum when it is read, and that the block slot holds
//!    the key its entry names. Damage gives `Corruption`, never a wrong value, never a panic.
//! 4. Consumption is a prefix of the entries of a row, cut between user keys (all versions
//!    of a user key go together), and only grows. The hints of a newer row stay valid under
//!    it: a hint window is clamped to the live part of the older row.
//! 5. Every byte access goes through the safe extent API of `mezz-pmem`
//!    ([`mezz_pmem::extent`]): a row's pages are written through a claim of each run of
//!    contiguous pages, held for the copy, before the row commits; reads are of committed
//!    rows, whose live bytes are published (invariant 2, and [`PageSpace::release`]'s rule
//!    that released pages are no longer read).
//!
//! Thread-safety: [`PageSpace`] is `Send + Sync` (one internal mutex). [`RowTable`] is
//! immutable and `Send + Sync`; share it as `Arc<RowTable>`. [`Container`] is plain data: its
//! owner clones it per version and mutates its own copy. [`RowIter`] is a single-owner
//! cursor. Readers never touch the pages a consumed prefix frees, so the caller may release
//! them once no container value that still had those entries live is in use.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use mezz_format::block::{IndexKind, KeySetRef, KeySetWriter};
use mezz_format::checksum::{crc32c, crc32c_extend, mask, unmask};
use mezz_format::coding::{get_fixed32, get_fixed64};
use mezz_format::ikey::{
    MAX_SEQ, SeqNo, TRAILER_LEN, ValueKind, pack_trailer, parse_internal_key, trailer, user_key,
};
use mezz_format::iter::InternalIterator;
use mezz_format::sst::{
    BLOCK_TRAILER_LEN, BLOCK_TYPE_RAW, MAX_KEY_LEN, MAX_VALUE_LEN, append_block_frame,
    check_block_frame,
};
use mezz_format::{CorruptionDetail, Error, KeyOrder, Result};
use parking_lot::Mutex;

use mezz_pmem::{Extent, Media, PersistentWord, Region};

/// Default page size: 256 KiB.
///
/// Why: the page list of a row lives in its header page and, per row, in the engine's
/// manifest. With 4 KiB pages (the paper's), a 64 MiB row needs 16,384 page numbers (64 KiB of
/// header and of every manifest record naming the row) and the free list churns per 4 KiB.
/// With 256 KiB pages it is 256 numbers (1 KiB), while the space a partly drained row keeps
/// beyond its live entries stays small: at most three partly used pages (the header page, the
/// page at the consumption point of the key array and the one of the data), 0.75 MiB against
/// 64 MiB rows. Any power of two from 4 KiB (a page of the pool, so an `msync` of one page
/// never writes another) to 1 GiB can be chosen per page space.
pub const DEFAULT_PAGE_SIZE: usize = 256 * 1024;
/// Smallest page size (the pool's extent alignment).
pub const MIN_PAGE_SIZE: usize = 4096;
/// Largest page size.
pub const MAX_PAGE_SIZE: usize = 1 << 30;
/// Default target size of a data block (as SST data blocks).
pub const DEFAULT_BLOCK_SIZE: usize = 4096;
/// Default receiver share of the container at which it turns into the compactor (the
/// paper's 60 %).
pub const DEFAULT_SWITCH_FRACTION: f64 = 0.6;

/// Magic number at the start of a row header.
pub const ROW_MAGIC: [u8; 8] = *b"MZROWTBL";
/// Row format version written by this build (and the newest it reads).
pub const ROW_VERSION: u32 = 1;
/// XORed with the row id to form the commit word (so a zeroed word never commits a row).
pub const COMMIT_MAGIC: u64 = u64::from_le_bytes(*b"MZROWCMT");
/// Offset of the commit word in the row (its own cache line).
pub const COMMIT_AT: usize = 0;
/// Offset of the header in the row.
pub const HEADER_AT: usize = 64;
/// Bytes of the header before its page list.
pub const HEADER_FIXED_LEN: usize = 88;
/// Size of one key-array entry.
pub const KEY_ENTRY_LEN: usize = 48;
/// Bytes of the user key kept in each key-array entry.
pub const KEY_PREFIX_LEN: usize = 16;
/// The `prev_row_id` of a row built without hints.
pub const NO_PREV_ROW: u64 = 0;

/// Offset of the checksum inside a key-array entry.
const ENTRY_CRC_AT: usize = 44;
/// Alignment of the key array and the data area in the row.
const AREA_ALIGN: usize = 64;
/// Most entries a row may hold (positions and hints are u32; `u32::MAX` stays free).
const MAX_ENTRIES: usize = (u32::MAX - 1) as usize;

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

fn pad8(len: usize) -> usize {
    (8 - len % 8) % 8
}

fn round_up(x: usize, align: usize) -> Option<usize> {
    x.checked_next_multiple_of(align)
}

fn io_in(region: &Region, e: std::io::Error) -> Error {
    let err = Error::from(e);
    match region.path() {
        Some(p) => err.in_file(p),
        None => err,
    }
}

// ---------------------------------------------------------------------------------------
// Page space
// ---------------------------------------------------------------------------------------

/// Fixed-size pages over one extent of a pool, with a volatile free list.
///
/// Page `p` covers pool bytes `[extent.offset + p * page_size, + page_size)`. Allocation
/// takes the lowest-numbered free pages (so rows stay mostly contiguous and a row's copy is a
/// few large `memcpy`s). A page handed out belongs to its receiver until it is released.
pub struct PageSpace {
    extent: Extent,
    page_size: usize,
    page_count: u32,
    free: Mutex<BTreeSet<u32>>,
}

impl fmt::Debug for PageSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageSpace")
            .field("extent", &self.extent)
            .field("page_size", &self.page_size)
            .field("page_count", &self.page_count)
            .field("free", &self.free_count())
            .finish()
    }
}

impl PageSpace {
    /// A space over `extent` (offset a multiple of 4 KiB) where every page is free;
    /// `page_size` is a power of two in [`MIN_PAGE_SIZE`]`..=`[`MAX_PAGE_SIZE`]. Bytes of the
    /// extent beyond the last whole page are unused.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad page size, an unaligned extent, or an extent smaller than
    /// one page (or holding `u32::MAX` pages or more).
    pub fn new(extent: Extent, page_size: usize) -> Result<PageSpace> {
        if !page_size.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
            return Err(invalid(format!(
                "matrix page size {page_size} must be a power of two from {MIN_PAGE_SIZE} to \
                 {MAX_PAGE_SIZE}"
            )));
        }
        if !extent.offset.is_multiple_of(MIN_PAGE_SIZE as u64) {
            return Err(invalid(format!(
                "matrix page space extent offset {} is not {MIN_PAGE_SIZE}-byte aligned",
                extent.offset
            )));
        }
        let count = extent.len / page_size as u64;
        let page_count = u32::try_from(count)
            .ok()
            .filter(|&c| c > 0 && c < u32::MAX)
            .ok_or_else(|| {
                invalid(format!(
                    "matrix page space extent of {} bytes holds {count} pages of {page_size} \
                     bytes (need 1 to {})",
                    extent.len,
                    u32::MAX - 1
                ))
            })?;
        Ok(PageSpace {
            extent,
            page_size,
            page_count,
            free: Mutex::new((0..page_count).collect()),
        })
    }

    /// A space where every page not in `live_pages` is free: the pages the engine's durable
    /// metadata still names (the union of [`RowTable::pages_in_use`] of its rows). Pages
    /// allocated but never recorded before a crash are free again.
    ///
    /// # Errors
    /// As [`PageSpace::new`]; `Corruption` (offset = the page's pool offset, or the extent's
    /// for a page beyond it) for a live page outside the space or listed twice.
    pub fn from_live(extent: Extent, page_size: usize, live_pages: &[u32]) -> Result<PageSpace> {
        let space = PageSpace::new(extent, page_size)?;
        {
            let mut free = space.free.lock();
            for &p in live_pages {
                if p >= space.page_count {
                    return Err(Error::corruption(
                        extent.offset,
                        format!(
                            "matrix live page {p} is outside the page space of {} pages",
                            space.page_count
                        ),
                    ));
                }
                if !free.remove(&p) {
                    return Err(Error::corruption(
                        space.page_offset(p).unwrap_or(extent.offset),
                        format!("matrix page {p} is listed live twice"),
                    ));
                }
            }
        }
        Ok(space)
    }

    /// The extent the pages are cut from.
    #[must_use]
    pub fn extent(&self) -> Extent {
        self.extent
    }

    /// Bytes per page.
    #[must_use]
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Number of pages.
    #[must_use]
    pub fn page_count(&self) -> u32 {
        self.page_count
    }

    /// Number of free pages.
    #[must_use]
    pub fn free_count(&self) -> u32 {
        // The set holds page numbers below `page_count`, a u32.
        u32::try_from(self.free.lock().len()).unwrap_or(u32::MAX)
    }

    /// Bytes of the space (pages only).
    #[must_use]
    pub fn capacity_bytes(&self) -> u64 {
        u64::from(self.page_count) * self.page_size as u64
    }

    /// Whether page `p` is free.
    #[must_use]
    pub fn is_free(&self, p: u32) -> bool {
        self.free.lock().contains(&p)
    }

    /// Pool offset of page `p`, `None` beyond the space.
    #[must_use]
    pub fn page_offset(&self, p: u32) -> Option<u64> {
        (p < self.page_count).then(|| self.extent.offset + u64::from(p) * self.page_size as u64)
    }

    /// Takes the `n` lowest-numbered free pages.
    ///
    /// # Errors
    /// `InvalidArgument` for `n == 0` or when fewer than `n` pages are free (nothing taken).
    pub fn alloc(&self, n: u32) -> Result<Vec<u32>> {
        if n == 0 {
            return Err(invalid("cannot allocate zero matrix pages"));
        }
        let mut free = self.free.lock();
        if free.len() < n as usize {
            return Err(invalid(format!(
                "matrix page space full: {n} pages of {} bytes needed, {} free",
                self.page_size,
                free.len()
            )));
        }
        let pages: Vec<u32> = free.iter().take(n as usize).copied().collect();
        for p in &pages {
            free.remove(p);
        }
        Ok(pages)
    }

    /// Returns pages to the free list.
    ///
    /// REQUIRES: nothing reads these pages any more — the durable metadata no longer names
    /// them and every container value that had their entries live has been dropped.
    ///
    /// # Errors
    /// `InvalidArgument` for a page outside the space, a page already free (a double free) or
    /// listed twice; nothing is released then.
    pub fn release(&self, pages: &[u32]) -> Result<()> {
        let mut free = self.free.lock();
        let mut seen = BTreeSet::new();
        for &p in pages {
            if p >= self.page_count {
                return Err(invalid(format!(
                    "matrix page {p} is outside the page space of {} pages",
                    self.page_count
                )));
            }
            if free.contains(&p) || !seen.insert(p) {
                return Err(invalid(format!(
                    "matrix page {p} released twice (double free?)"
                )));
            }
        }
        free.extend(seen);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Header and key-array entry codecs
// ---------------------------------------------------------------------------------------

/// The decoded header of a row (see the module documentation and the format spec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowHeader {
    /// The row's id (never 0; unique for the life of the database).
    pub row_id: u64,
    /// The row the hints point into ([`NO_PREV_ROW`] = built without hints).
    pub prev_row_id: u64,
    /// Bytes per page of the space the row was built in.
    pub page_size: u32,
    /// Number of entries.
    pub entry_count: u32,
    /// Entries of the previous row when the hints were computed (every hint is at most this).
    pub prev_entry_count: u32,
    /// Number of data blocks.
    pub block_count: u32,
    /// Offset of the key array in the row.
    pub key_array_off: u32,
    /// Offset of the first data block in the row.
    pub data_off: u32,
    /// Bytes of the row (commit line, header, key array and blocks).
    pub row_len: u32,
    /// Smallest sequence number of any entry.
    pub smallest_seq: SeqNo,
    /// Largest sequence number of any entry.
    pub largest_seq: SeqNo,
    /// Number of deletion entries.
    pub num_deletions: u32,
    /// The row's pages, in order (the first is the header page).
    pub pages: Vec<u32>,
}

/// Encoded length of a header with `pages` pages (checksum included).
/// The most pages a row can have with pages of `page_size` bytes: its page list must fit
/// in its header page.
#[must_use]
pub fn max_row_pages(page_size: usize) -> usize {
    page_size.saturating_sub(HEADER_AT + HEADER_FIXED_LEN + 4) / 4
}

fn header_len(pages: usize) -> Option<usize> {
    pages.checked_mul(4)?.checked_add(HEADER_FIXED_LEN + 4)
}

/// The deterministic layout of a row: key-array and data offsets from the page and entry
/// counts.
fn layout_offsets(pages: usize, entries: usize) -> Option<(usize, usize)> {
    let ka = round_up(HEADER_AT.checked_add(header_len(pages)?)?, AREA_ALIGN)?;
    let data = round_up(
        ka.checked_add(entries.checked_mul(KEY_ENTRY_LEN)?)?,
        AREA_ALIGN,
    )?;
    Some((ka, data))
}

impl RowHeader {
    /// Encodes the header, checksum included.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_FIXED_LEN + 4 * self.pages.len() + 4);
        b.extend_from_slice(&ROW_MAGIC);
        b.extend_from_slice(&ROW_VERSION.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.row_id.to_le_bytes());
        b.extend_from_slice(&self.prev_row_id.to_le_bytes());
        b.extend_from_slice(&self.page_size.to_le_bytes());
        b.extend_from_slice(&(self.pages.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.entry_count.to_le_bytes());
        b.extend_from_slice(&self.prev_entry_count.to_le_bytes());
        b.extend_from_slice(&self.block_count.to_le_bytes());
        b.extend_from_slice(&self.key_array_off.to_le_bytes());
        b.extend_from_slice(&self.data_off.to_le_bytes());
        b.extend_from_slice(&self.row_len.to_le_bytes());
        b.extend_from_slice(&self.smallest_seq.to_le_bytes());
        b.extend_from_slice(&self.largest_seq.to_le_bytes());
        b.extend_from_slice(&self.num_deletions.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for p in &self.pages {
            b.extend_from_slice(&p.to_le_bytes());
        }
        let crc = mask(crc32c(&b));
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// The page count field of an encoded header's fixed part, `None` if too short.
    fn page_count_of(fixed: &[u8]) -> Option<u32> {
        get_fixed32(fixed, 36)
    }

    /// Decodes and checks a header: magic, checksum, version, then that its geometry is
    /// self-consistent (layout offsets, row length within its pages, sequence range).
    /// `base` is the pool offset of `b` (for error offsets). Nothing here trusts a length
    /// before checking it against `b`.
    ///
    /// # Errors
    /// `Corruption` naming the offset of the bad field; `UnsupportedVersion` for a newer
    /// version.
    pub fn decode(b: &[u8], base: u64) -> Result<RowHeader> {
        let corrupt = |at: usize, what: String| {
            Error::corruption(base + at as u64, format!("row header: {what}"))
        };
        let u32_at = |i: usize| get_fixed32(b, i).ok_or_else(|| corrupt(i, "truncated".into()));
        let u64_at = |i: usize| get_fixed64(b, i).ok_or_else(|| corrupt(i, "truncated".into()));
        if b.get(0..8) != Some(&ROW_MAGIC[..]) {
            return Err(corrupt(
                0,
                format!("bad magic {:02x?}", b.get(0..8).unwrap_or_default()),
            ));
        }
        let page_count = u32_at(36)? as usize;
        let crc_at = header_len(page_count)
            .map(|l| l - 4)
            .filter(|&c| c + 4 <= b.len())
            .ok_or_else(|| corrupt(36, format!("page count {page_count} beyond the header")))?;
        let stored = unmask(u32_at(crc_at)?);
        let actual = crc32c(b.get(..crc_at).unwrap_or_default());
        if stored != actual {
            return Err(corrupt(
                crc_at,
                format!("checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"),
            ));
        }
        let version = u32_at(8)?;
        if version > ROW_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "matrix row",
                found: version,
                supported: ROW_VERSION,
            });
        }
        if version == 0 {
            return Err(corrupt(8, "version 0".into()));
        }
        let mut pages = Vec::with_capacity(page_count);
        for i in 0..page_count {
            pages.push(u32_at(HEADER_FIXED_LEN + 4 * i)?);
        }
        let h = RowHeader {
            row_id: u64_at(16)?,
            prev_row_id: u64_at(24)?,
            page_size: u32_at(32)?,
            entry_count: u32_at(40)?,
            prev_entry_count: u32_at(44)?,
            block_count: u32_at(48)?,
            key_array_off: u32_at(52)?,
            data_off: u32_at(56)?,
            row_len: u32_at(60)?,
            smallest_seq: u64_at(64)?,
            largest_seq: u64_at(72)?,
            num_deletions: u32_at(80)?,
            pages,
        };
        if h.row_id == 0 || h.row_id == COMMIT_MAGIC {
            return Err(corrupt(16, format!("invalid row id {}", h.row_id)));
        }
        if h.prev_row_id >= h.row_id || (h.prev_row_id == NO_PREV_ROW && h.prev_entry_count != 0) {
            return Err(corrupt(
                24,
                format!(
                    "previous row {} (with {} entries) for row {}",
                    h.prev_row_id, h.prev_entry_count, h.row_id
                ),
            ));
        }
        let n = h.entry_count as usize;
        if n == 0 || h.block_count == 0 || h.block_count > h.entry_count {
            return Err(corrupt(
                40,
                format!("{} entries in {} blocks", h.entry_count, h.block_count),
            ));
        }
        let (ka, data) =
            layout_offsets(page_count, n).ok_or_else(|| corrupt(40, "layout overflows".into()))?;
        if h.key_array_off as usize != ka || h.data_off as usize != data {
            return Err(corrupt(
                52,
                format!(
                    "key array at {} and data at {} (layout says {ka} and {data})",
                    h.key_array_off, h.data_off
                ),
            ));
        }
        let page = h.page_size as usize;
        let len = h.row_len as usize;
        if page_count == 0
            || len <= data
            || len > page_count.saturating_mul(page)
            || len <= (page_count - 1).saturating_mul(page)
        {
            return Err(corrupt(
                60,
                format!("row of {len} bytes in {page_count} pages of {page} bytes"),
            ));
        }
        if h.smallest_seq > h.largest_seq || h.largest_seq > MAX_SEQ {
            return Err(corrupt(
                64,
                format!("sequence range {}..={}", h.smallest_seq, h.largest_seq),
            ));
        }
        Ok(h)
    }
}

/// One decoded key-array entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyEntry {
    /// The first `min(ukey_len, 16)` bytes of the user key, zero padded.
    prefix: [u8; KEY_PREFIX_LEN],
    /// `seq << 8 | kind`.
    trailer: u64,
    ukey_len: u32,
    /// Offset of the block contents in the row.
    block_off: u32,
    /// Length of the block contents.
    block_len: u32,
    /// Entry index inside the block.
    slot: u32,
    /// Position in the previous row of its first key >= this one.
    hint: u32,
}

fn prefix_of(uk: &[u8]) -> [u8; KEY_PREFIX_LEN] {
    let mut p = [0u8; KEY_PREFIX_LEN];
    let n = uk.len().min(KEY_PREFIX_LEN);
    if let (Some(dst), Some(src)) = (p.get_mut(..n), uk.get(..n)) {
        dst.copy_from_slice(src);
    }
    p
}

/// Checksum of an entry: masked crc32c of `row_id ‖ index ‖ entry bytes 0..44`.
fn entry_crc(bytes: &[u8; KEY_ENTRY_LEN], row_id: u64, index: u32) -> u32 {
    let mut seed = [0u8; 12];
    seed[..8].copy_from_slice(&row_id.to_le_bytes());
    seed[8..].copy_from_slice(&index.to_le_bytes());
    mask(crc32c_extend(crc32c(&seed), &bytes[..ENTRY_CRC_AT]))
}

impl KeyEntry {
    fn encode(&self, row_id: u64, index: u32) -> [u8; KEY_ENTRY_LEN] {
        let mut b = [0u8; KEY_ENTRY_LEN];
        b[0..16].copy_from_slice(&self.prefix);
        b[16..24].copy_from_slice(&self.trailer.to_le_bytes());
        b[24..28].copy_from_slice(&self.ukey_len.to_le_bytes());
        b[28..32].copy_from_slice(&self.block_off.to_le_bytes());
        b[32..36].copy_from_slice(&self.block_len.to_le_bytes());
        b[36..40].copy_from_slice(&self.slot.to_le_bytes());
        b[40..44].copy_from_slice(&self.hint.to_le_bytes());
        let crc = entry_crc(&b, row_id, index);
        b[44..48].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// `None` when the checksum does not match.
    fn decode(b: &[u8; KEY_ENTRY_LEN], row_id: u64, index: u32) -> Option<KeyEntry> {
        if get_fixed32(b, ENTRY_CRC_AT)? != entry_crc(b, row_id, index) {
            return None;
        }
        let mut prefix = [0u8; KEY_PREFIX_LEN];
        prefix.copy_from_slice(b.get(..KEY_PREFIX_LEN)?);
        Some(KeyEntry {
            prefix,
            trailer: get_fixed64(b, 16)?,
            ukey_len: get_fixed32(b, 24)?,
            block_off: get_fixed32(b, 28)?,
            block_len: get_fixed32(b, 32)?,
            slot: get_fixed32(b, 36)?,
            hint: get_fixed32(b, 40)?,
        })
    }

    /// The known part of the user key (all of it when it is at most 16 bytes).
    fn known_prefix(&self) -> &[u8] {
        let n = (self.ukey_len as usize).min(KEY_PREFIX_LEN);
        self.prefix.get(..n).unwrap_or_default()
    }

    /// Compares this entry's user key with `t` from the prefix alone; `None` when both keys
    /// are longer than the prefix and agree on it (the full key is needed).
    fn quick_user_cmp(&self, t: &[u8]) -> Option<Ordering> {
        let known = self.known_prefix();
        if self.ukey_len as usize <= KEY_PREFIX_LEN {
            return Some(known.cmp(t));
        }
        let m = t.len().min(KEY_PREFIX_LEN);
        match known.get(..m)?.cmp(t.get(..m)?) {
            Ordering::Equal if t.len() <= KEY_PREFIX_LEN => Some(Ordering::Greater),
            Ordering::Equal => None,
            o => Some(o),
        }
    }

    /// Whether `ikey` (read from the entry's block slot) is the key this entry names.
    fn names(&self, ikey: &[u8]) -> bool {
        ikey.len() == self.ukey_len as usize + TRAILER_LEN
            && trailer(ikey) == self.trailer
            && user_key(ikey).get(..self.known_prefix().len()) == Some(self.known_prefix())
    }
}

// ---------------------------------------------------------------------------------------
// Search statistics, results, hint windows
// ---------------------------------------------------------------------------------------

/// Counters of searches (so the effect of hints can be measured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Key comparisons (one per entry compared with the target).
    pub comparisons: u64,
    /// Data blocks read (and checksummed).
    pub block_reads: u64,
    /// Rows searched.
    pub rows_searched: u64,
    /// Rows whose search window came from the hints of the newer row.
    pub rows_hinted: u64,
}

/// A found entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The row holding it.
    pub row_id: u64,
    /// Its sequence number.
    pub seq: SeqNo,
    /// Value or deletion.
    pub kind: ValueKind,
    /// The value (empty for a deletion).
    pub value: Vec<u8>,
}

/// Where, in an older row, the lower bound of a target lies: some position in `[lo, hi]`
/// (both inclusive; `hi` may be the row's entry count, meaning "past the end").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HintWindow {
    /// Smallest possible position.
    pub lo: u32,
    /// Largest possible position.
    pub hi: u32,
}

/// Result of [`RowTable::get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowGet {
    /// Lower bound of the lookup key in the row (first live entry >= it).
    pub pos: u32,
    /// The entry for the user key visible at the lookup's sequence number, if the row has one.
    pub found: Option<Found>,
}

/// The previous (older) row a new row's hints point into, with its consumed prefix.
#[derive(Debug, Clone, Copy)]
pub struct HintSource<'a> {
    /// The older row.
    pub row: &'a RowTable,
    /// Entries `[0, consumed)` of it are gone and are not read.
    pub consumed: u32,
}

/// The last data block read during one search (consecutive probes often hit the same one).
type BlockCache<'a> = Option<(u32, Cow<'a, [u8]>)>;

/// A search target: a user key and, for internal-key order, a trailer (`None` compares user
/// keys only). `upper` searches for the first entry above the target instead of the first
/// entry not below it.
#[derive(Debug, Clone, Copy)]
struct Probe<'t> {
    uk: &'t [u8],
    trailer: Option<u64>,
    upper: bool,
}

impl<'t> Probe<'t> {
    /// Lower bound of an internal key given as user key and trailer.
    fn lower(uk: &'t [u8], trailer: u64) -> Probe<'t> {
        Probe {
            uk,
            trailer: Some(trailer),
            upper: false,
        }
    }

    /// Whether an entry comparing `o` with the target lies before the searched position.
    fn before(&self, o: Ordering) -> bool {
        if self.upper {
            o != Ordering::Greater
        } else {
            o == Ordering::Less
        }
    }
}

// ---------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------

/// Options of a [`RowBuilder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowBuildOptions {
    /// A data block is cut once its KeySet contents reach this many bytes (default
    /// [`DEFAULT_BLOCK_SIZE`]).
    pub block_size: usize,
    /// The order of the keys (default bytewise). The row is read in the order it was
    /// built in ([`RowTable::open`] takes it again).
    pub order: KeyOrder,
}

impl Default for RowBuildOptions {
    fn default() -> Self {
        RowBuildOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            order: KeyOrder::bytewise(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct PendingEntry {
    prefix: [u8; KEY_PREFIX_LEN],
    trailer: u64,
    ukey_len: u32,
    block: u32,
    slot: u32,
}

/// Builds one row in DRAM from entries added in internal-key order, then writes it
/// ([`RowBuilder::finish`]).
///
/// Thread-safety: a single-owner value.
#[derive(Debug)]
pub struct RowBuilder {
    opts: RowBuildOptions,
    writer: KeySetWriter,
    /// Finished blocks, each `contents | pad | trailer`, back to back.
    blocks: Vec<u8>,
    /// Per block: (offset in `blocks`, contents length).
    block_table: Vec<(u32, u32)>,
    entries: Vec<PendingEntry>,
    last_key: Vec<u8>,
    smallest_seq: SeqNo,
    largest_seq: SeqNo,
    num_deletions: u32,
}

impl RowBuilder {
    /// An empty builder.
    #[must_use]
    pub fn new(opts: RowBuildOptions) -> RowBuilder {
        RowBuilder {
            opts: RowBuildOptions {
                block_size: opts.block_size.max(1),
                ..opts
            },
            writer: KeySetWriter::new(IndexKind::ValueRef),
            blocks: Vec::new(),
            block_table: Vec::new(),
            entries: Vec::new(),
            last_key: Vec::new(),
            smallest_seq: MAX_SEQ,
            largest_seq: 0,
            num_deletions: 0,
        }
    }

    /// Adds an entry. `ikey` is an internal key, strictly greater (internal-key order) than
    /// the previous one.
    ///
    /// # Errors
    /// `InvalidArgument` for a key that is not an internal key, out of order, too long
    /// (user key over 256 MiB), a value over 1 GiB, too many entries, or a row over 4 GiB.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let parsed = parse_internal_key(ikey)
            .ok_or_else(|| invalid("matrix row entry: not an internal key"))?;
        if ikey.len() > MAX_KEY_LEN || value.len() > MAX_VALUE_LEN {
            return Err(invalid(format!(
                "matrix row entry too large: key {} bytes, value {} bytes",
                ikey.len(),
                value.len()
            )));
        }
        if !self.entries.is_empty()
            && self.opts.order.compare_internal(&self.last_key, ikey) != Ordering::Less
        {
            return Err(invalid(
                "matrix row entries must be added in strictly increasing internal-key order",
            ));
        }
        if self.entries.len() >= MAX_ENTRIES {
            return Err(invalid("matrix row has too many entries"));
        }
        if self
            .estimated_size()
            .checked_add(ikey.len() + value.len() + 64)
            .is_none_or(|s| s > u32::MAX as usize)
        {
            return Err(invalid("matrix row would exceed 4 GiB"));
        }
        let slot = self.writer.len() as u32;
        self.writer.add_with_value(ikey, value);
        self.entries.push(PendingEntry {
            prefix: prefix_of(parsed.user_key),
            trailer: trailer(ikey),
            ukey_len: parsed.user_key.len() as u32,
            block: self.block_table.len() as u32,
            slot,
        });
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.smallest_seq = self.smallest_seq.min(parsed.seq);
        self.largest_seq = self.largest_seq.max(parsed.seq);
        if parsed.kind == ValueKind::Deletion {
            self.num_deletions += 1;
        }
        if self.writer.estimated_size() >= self.opts.block_size {
            self.flush_block();
        }
        Ok(())
    }

    /// Number of entries added.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Approximate bytes of the finished row, before page rounding (blocks plus key array).
    #[must_use]
    pub fn estimated_size(&self) -> usize {
        self.blocks.len()
            + if self.writer.is_empty() {
                0
            } else {
                self.writer.estimated_size() + BLOCK_TRAILER_LEN + 8
            }
            + self.entries.len() * KEY_ENTRY_LEN
            + 3 * AREA_ALIGN
            + HEADER_FIXED_LEN
    }

    /// Closes the current block: contents, zero pad to 8, then the SST block trailer.
    fn flush_block(&mut self) {
        if self.writer.is_empty() {
            return;
        }
        let rel = self.blocks.len() as u32;
        let contents = self.writer.finish();
        let len = contents.len();
        append_block_frame(&mut self.blocks, contents, BLOCK_TYPE_RAW);
        self.block_table.push((rel, len as u32));
        self.writer.reset();
    }

    /// Writes the row into freshly allocated pages of `space` (an extent of `region`) and
    /// commits it: one bulk copy of the DRAM buffer, persist + fence, then the commit word
    /// (stored, persisted, fenced). With `prev`, each entry gets the position in `prev.row`
    /// of its first live key >= the entry (the cross-row hint). On error the pages are
    /// returned to the space and nothing is committed.
    ///
    /// The caller records the row (its id and header page, [`RowTable::header_page`]) in its
    /// durable metadata only after this returned.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty row, a row id of 0 or [`COMMIT_MAGIC`], a `prev` row
    /// that is not older (smaller id), a space outside the region, a row whose page list does
    /// not fit in its header page, or too few free pages; `Corruption` from reading `prev`;
    /// `Io` from persisting.
    pub fn finish(
        mut self,
        region: &Arc<Region>,
        space: &PageSpace,
        row_id: u64,
        prev: Option<HintSource<'_>>,
    ) -> Result<RowTable> {
        if row_id == 0 || row_id == COMMIT_MAGIC {
            return Err(invalid(format!("invalid matrix row id {row_id}")));
        }
        self.flush_block();
        if self.entries.is_empty() {
            return Err(invalid("cannot build an empty matrix row"));
        }
        check_space(region, space)?;
        let n = self.entries.len();
        let (prev_row_id, prev_n, hints) = match prev {
            None => (NO_PREV_ROW, 0, vec![0u32; n]),
            Some(h) => {
                if h.row.id() >= row_id {
                    return Err(invalid(format!(
                        "matrix row {row_id}: hint row {} is not older",
                        h.row.id()
                    )));
                }
                (h.row.id(), h.row.num_entries(), self.compute_hints(h)?)
            }
        };
        let page_size = space.page_size();
        let too_big = || invalid("matrix row layout overflows 4 GiB");
        let mut pages = 1usize;
        let (ka, data, row_len) = loop {
            let (ka, data) = layout_offsets(pages, n).ok_or_else(too_big)?;
            let row_len = data.checked_add(self.blocks.len()).ok_or_else(too_big)?;
            let need = row_len.div_ceil(page_size);
            if need <= pages {
                break (ka, data, row_len);
            }
            pages = need;
        };
        if row_len > u32::MAX as usize {
            return Err(too_big());
        }
        if pages > max_row_pages(page_size) {
            return Err(invalid(format!(
                "matrix row of {pages} pages: its page list does not fit in one page of \
                 {page_size} bytes (use larger pages)"
            )));
        }
        let page_list = space.alloc(u32::try_from(pages).map_err(|_| too_big())?)?;
        let header = RowHeader {
            row_id,
            prev_row_id,
            page_size: page_size as u32,
            entry_count: n as u32,
            prev_entry_count: prev_n,
            block_count: self.block_table.len() as u32,
            key_array_off: ka as u32,
            data_off: data as u32,
            row_len: row_len as u32,
            smallest_seq: self.smallest_seq,
            largest_seq: self.largest_seq,
            num_deletions: self.num_deletions,
            pages: page_list,
        };
        let table = RowTable {
            region: Arc::clone(region),
            base: space.extent().offset as usize,
            page_size,
            header,
            order: self.opts.order.clone(),
        };
        match self.write(&table, &hints) {
            Ok(()) => Ok(table),
            Err(e) => {
                // The pages were just allocated and nothing names them: give them back.
                let _ = space.release(&table.header.pages);
                Err(e)
            }
        }
    }

    /// For each new key in order: the first live position of `h.row` whose key is >= it.
    fn compute_hints(&self, h: HintSource<'_>) -> Result<Vec<u32>> {
        let m = h.row.num_entries();
        let mut j = h.consumed.min(m);
        let mut hints = Vec::with_capacity(self.entries.len());
        let mut cache: BlockCache<'_> = None;
        let mut stats = SearchStats::default();
        for &(rel, len) in &self.block_table {
            let contents = self
                .blocks
                .get(rel as usize..rel as usize + len as usize)
                .ok_or_else(|| invalid("matrix row builder: block table out of range"))?;
            let ks = KeySetRef::parse_trailer(contents, 0)?;
            for i in 0..ks.num_entries() {
                let x = ks
                    .key(i)
                    .ok_or_else(|| invalid("matrix row builder: unreadable built key"))?;
                let (xu, xt) = (user_key(x), trailer(x));
                while j < m {
                    let e = h.row.entry(j)?;
                    let o =
                        h.row
                            .compare_entry(j, &e, Probe::lower(xu, xt), &mut cache, &mut stats)?;
                    if o != Ordering::Less {
                        break;
                    }
                    j += 1;
                }
                hints.push(j);
            }
        }
        Ok(hints)
    }

    /// Lays the row's header and key array out in DRAM, copies them and the built blocks
    /// into its pages, persists, fences, commits. The blocks are copied straight from the
    /// builder: laying the whole row out in one DRAM buffer first cost a second copy of
    /// every byte and a fresh, zeroed buffer of the row's size per flush.
    fn write(&self, t: &RowTable, hints: &[u32]) -> Result<()> {
        let h = &t.header;
        let (ka, data) = (h.key_array_off as usize, h.data_off as usize);
        if (h.row_len as usize).checked_sub(data) != Some(self.blocks.len()) {
            return Err(invalid("matrix row data does not match its layout"));
        }
        let mut head = vec![0u8; data];
        let hb = h.encode();
        head.get_mut(HEADER_AT..HEADER_AT + hb.len())
            .ok_or_else(|| invalid("matrix row header beyond its buffer"))?
            .copy_from_slice(&hb);
        for (i, (e, &hint)) in self.entries.iter().zip(hints).enumerate() {
            let &(rel, len) = self
                .block_table
                .get(e.block as usize)
                .ok_or_else(|| invalid("matrix row builder: entry names no block"))?;
            let entry = KeyEntry {
                prefix: e.prefix,
                trailer: e.trailer,
                ukey_len: e.ukey_len,
                block_off: (data + rel as usize) as u32,
                block_len: len,
                slot: e.slot,
                hint,
            };
            let at = ka + i * KEY_ENTRY_LEN;
            head.get_mut(at..at + KEY_ENTRY_LEN)
                .ok_or_else(|| invalid("matrix row key array beyond its buffer"))?
                .copy_from_slice(&entry.encode(h.row_id, i as u32));
        }

        // One pass over the row: one copy per run of physically contiguous pages and
        // source (the head buffer over `[0, data)`, the blocks over `[data, row_len)`).
        let region = &t.region;
        let runs = t.page_runs();
        let sources = [(0, head.as_slice()), (data, self.blocks.as_slice())];
        for &(phys, lo, hi) in &runs {
            // `check_space` verified that the page space lies inside the region, and every
            // page of the row is a page of the space, so `[phys, phys + len)` is inside the
            // region. The pages were just allocated to this row: nobody else reads or writes
            // them until the row is published (the commit word) and handed out. The claim
            // lasts for the copy.
            let mut claim = region.claim(phys, hi - lo)?;
            for &(start, src) in &sources {
                let (from, to) = (lo.max(start), hi.min(start + src.len()));
                if from < to {
                    claim.write(from - lo, &src[from - start..to - start]);
                }
            }
            drop(claim);
            // One write access per run of contiguous pages.
            region.on_write(hi - lo);
        }
        for &(phys, lo, hi) in &runs {
            region
                .persist(phys, hi - lo)
                .map_err(|e| io_in(region, e))?;
        }
        region.fence().map_err(|e| io_in(region, e))?;
        let media: Arc<dyn Media> = Arc::clone(region) as Arc<dyn Media>;
        let word = PersistentWord::new(media, t.phys(COMMIT_AT)?)
            .ok_or_else(|| invalid("matrix row commit word is not aligned"))?;
        word.publish(h.row_id ^ COMMIT_MAGIC)
            .map_err(|e| io_in(region, e))?;
        Ok(())
    }
}

/// Checks that the page space lies inside the region.
fn check_space(region: &Region, space: &PageSpace) -> Result<()> {
    let end = space.extent().offset + space.capacity_bytes();
    if end > region.len() as u64 {
        return Err(invalid(format!(
            "matrix page space ends at {end}, beyond its region of {} bytes",
            region.len()
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// RowTable
// ---------------------------------------------------------------------------------------

/// One committed row (see the module documentation). Immutable; reads verify checksums.
pub struct RowTable {
    region: Arc<Region>,
    /// Pool offset of page 0 of the space.
    base: usize,
    page_size: usize,
    header: RowHeader,
    /// The order the row was built in.
    order: KeyOrder,
}

impl fmt::Debug for RowTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowTable")
            .field("row_id", &self.header.row_id)
            .field("prev_row_id", &self.header.prev_row_id)
            .field("entries", &self.header.entry_count)
            .field("pages", &self.header.pages.len())
            .field("row_len", &self.header.row_len)
            .finish_non_exhaustive()
    }
}

impl RowTable {
    /// Opens the row `row_id` whose header page is `header_page` of `space`.
    ///
    /// Returns `Ok(None)` when the commit word there is not this row's: the row never
    /// committed (a power cut before its commit) and is discarded; its pages are free unless
    /// something else names them.
    ///
    /// # Errors
    /// `InvalidArgument` for a header page outside the space or a space outside the region;
    /// `Corruption` (with the pool file and offset) when the row committed but its header is
    /// damaged or inconsistent with the space; `UnsupportedVersion` for a newer format.
    pub fn open(
        region: &Arc<Region>,
        space: &PageSpace,
        header_page: u32,
        row_id: u64,
        order: &KeyOrder,
    ) -> Result<Option<RowTable>> {
        check_space(region, space)?;
        let page_off = space.page_offset(header_page).ok_or_else(|| {
            invalid(format!(
                "matrix header page {header_page} is outside the page space of {} pages",
                space.page_count()
            ))
        })? as usize;
        let media: Arc<dyn Media> = Arc::clone(region) as Arc<dyn Media>;
        let word = PersistentWord::new(media, page_off + COMMIT_AT)
            .ok_or_else(|| invalid("matrix row commit word is not aligned"))?;
        if row_id == 0 || row_id == COMMIT_MAGIC || word.load() != row_id ^ COMMIT_MAGIC {
            return Ok(None);
        }
        let in_file = |e: Error| match region.path() {
            Some(p) => e.in_file(p),
            None => e,
        };
        let hdr_off = page_off + HEADER_AT;
        let mut fixed = [0u8; HEADER_FIXED_LEN];
        // The header page is a page of the space, which lies inside the region (checked),
        // and `HEADER_AT + HEADER_FIXED_LEN` is below the smallest page size. A committed
        // row's bytes are published: never written again while it is named.
        region.read_published(hdr_off, &mut fixed);
        let pages = RowHeader::page_count_of(&fixed).unwrap_or(0) as usize;
        let len = header_len(pages)
            .filter(|&l| HEADER_AT + l <= space.page_size())
            .ok_or_else(|| {
                in_file(Error::corruption(
                    hdr_off as u64 + 36,
                    format!(
                        "row header: page count {pages} does not fit in a page of {} bytes",
                        space.page_size()
                    ),
                ))
            })?;
        let mut bytes = vec![0u8; len];
        // As above; `HEADER_AT + len <= page_size` was just checked.
        region.read_published(hdr_off, &mut bytes);
        // The header follows the commit word, whose load was the access.
        region.on_read_continued(len);
        let header = RowHeader::decode(&bytes, hdr_off as u64).map_err(in_file)?;
        let corrupt = |at: usize, what: String| {
            in_file(Error::corruption(
                (hdr_off + at) as u64,
                format!("row header: {what}"),
            ))
        };
        if header.row_id != row_id {
            return Err(corrupt(
                16,
                format!("row {} where row {row_id} committed", header.row_id),
            ));
        }
        if header.page_size as usize != space.page_size() {
            return Err(corrupt(
                32,
                format!(
                    "page size {} differs from the space's {}",
                    header.page_size,
                    space.page_size()
                ),
            ));
        }
        if header.pages.first() != Some(&header_page) {
            return Err(corrupt(
                HEADER_FIXED_LEN,
                format!(
                    "first page {:?} is not the header page {header_page}",
                    header.pages.first()
                ),
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, &p) in header.pages.iter().enumerate() {
            if p >= space.page_count() || !seen.insert(p) {
                return Err(corrupt(
                    HEADER_FIXED_LEN + 4 * i,
                    format!("page {p} outside the space or listed twice"),
                ));
            }
        }
        Ok(Some(RowTable {
            region: Arc::clone(region),
            base: space.extent().offset as usize,
            page_size: space.page_size(),
            header,
            order: order.clone(),
        }))
    }

    /// The order of the row's keys.
    #[must_use]
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// The row's id.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.header.row_id
    }

    /// The id of the row its hints point into ([`NO_PREV_ROW`] for none).
    #[must_use]
    pub fn prev_row_id(&self) -> u64 {
        self.header.prev_row_id
    }

    /// Number of entries (consumed or not).
    #[must_use]
    pub fn num_entries(&self) -> u32 {
        self.header.entry_count
    }

    /// The decoded header.
    #[must_use]
    pub fn header(&self) -> &RowHeader {
        &self.header
    }

    /// The row's pages in order (the first is the header page).
    #[must_use]
    pub fn pages(&self) -> &[u32] {
        &self.header.pages
    }

    /// The header page (what the caller records to open the row again).
    #[must_use]
    pub fn header_page(&self) -> u32 {
        self.header.pages.first().copied().unwrap_or(0)
    }

    /// Bytes of pages the row occupies.
    #[must_use]
    pub fn allocated_bytes(&self) -> u64 {
        self.header.pages.len() as u64 * self.page_size as u64
    }

    /// Bytes of the row (before page rounding).
    #[must_use]
    pub fn len_bytes(&self) -> u64 {
        u64::from(self.header.row_len)
    }

    /// Pool offset of row offset `off`.
    fn phys(&self, off: usize) -> Result<usize> {
        let page = self
            .header
            .pages
            .get(off / self.page_size)
            .ok_or_else(|| self.corrupt(0, format!("row offset {off} beyond its pages")))?;
        Ok(self.base + *page as usize * self.page_size + off % self.page_size)
    }

    /// `(pool offset, row start, row end)` of each run of physically contiguous pages,
    /// cut at the row's length.
    fn page_runs(&self) -> Vec<(usize, usize, usize)> {
        let p = self.page_size;
        let len = self.header.row_len as usize;
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        let mut prev: Option<u32> = None;
        for (i, &page) in self.header.pages.iter().enumerate() {
            let lo = i * p;
            let hi = ((i + 1) * p).min(len);
            match (prev, runs.last_mut()) {
                (Some(q), Some(run)) if q.checked_add(1) == Some(page) => run.2 = hi,
                _ => runs.push((self.base + page as usize * p, lo, hi)),
            }
            prev = Some(page);
        }
        runs
    }

    /// A `Corruption` at row offset `off` (mapped to the pool offset when possible), its
    /// detail prefixed with the row (a checksum mismatch stays one).
    fn corrupt(&self, off: usize, detail: impl Into<CorruptionDetail>) -> Error {
        let at = self
            .header
            .pages
            .get(off / self.page_size)
            .map_or(self.base, |&pg| {
                self.base + pg as usize * self.page_size + off % self.page_size
            });
        let row = self.header.row_id;
        let detail = match detail.into() {
            CorruptionDetail::Checksum {
                what,
                stored,
                computed,
            } => CorruptionDetail::Checksum {
                what: format!("matrix row {row}: {what}"),
                stored,
                computed,
            },
            other => format!("matrix row {row}: {other}").into(),
        };
        let e = Error::corruption(at as u64, detail);
        match self.region.path() {
            Some(p) => e.in_file(p),
            None => e,
        }
    }

    /// Copies row bytes `[off, off + out.len())`, which must lie inside the row: one read
    /// access (see [`RowTable::read_exact_as`]).
    fn read_exact(&self, off: usize, out: &mut [u8]) -> Result<()> {
        self.read_exact_as(off, out, false)
    }

    /// [`RowTable::read_exact`], reported to the cost hooks as one access per run of
    /// physically contiguous pages, the first run as the continuation of the caller's
    /// previous access when `follows` (the bytes right after the ones it read last).
    fn read_exact_as(&self, off: usize, out: &mut [u8], follows: bool) -> Result<()> {
        let end = off
            .checked_add(out.len())
            .filter(|&e| e <= self.header.row_len as usize)
            .ok_or_else(|| {
                self.corrupt(off, format!("read of {} bytes beyond the row", out.len()))
            })?;
        let mut at = off;
        let mut done = 0;
        // The physical end of the previous chunk, and whether it continued an access.
        let mut prev_end: Option<usize> = None;
        while at < end {
            let n = (self.page_size - at % self.page_size).min(end - at);
            let phys = self.phys(at)?;
            let dst = out
                .get_mut(done..done + n)
                .ok_or_else(|| self.corrupt(at, "read split out of range"))?;
            // `[phys, phys + n)` lies in one page of the row (n stops at the page end),
            // every page of the row is inside the region (checked when the row was built or
            // opened), and a committed row's live bytes are published: never written while
            // the row can be read (module invariant 2).
            self.region.read_published(phys, dst);
            let continued = match prev_end {
                None => follows,
                Some(e) => e == phys,
            };
            if continued {
                self.region.on_read_continued_at(phys, n);
            } else {
                self.region.on_read_at(phys, n);
            }
            prev_end = Some(phys + n);
            at += n;
            done += n;
        }
        Ok(())
    }

    /// Row bytes `[off, off + len)`: borrowed in place when they lie in one page, copied when
    /// they straddle pages.
    fn bytes(&self, off: usize, len: usize) -> Result<Cow<'_, [u8]>> {
        let end = off
            .checked_add(len)
            .filter(|&e| e <= self.header.row_len as usize)
            .ok_or_else(|| self.corrupt(off, format!("{len} bytes beyond the row")))?;
        if len > 0 && off / self.page_size == (end - 1) / self.page_size {
            let phys = self.phys(off)?;
            // `[phys, phys + len)` lies inside one page of the row, inside the region
            // (checked at build/open); the region's memory stays mapped while `self.region`
            // lives, which outlives the returned borrow of `self`; the bytes are published:
            // never written while the row can be read (module invariant 2).
            let s = self.region.published(phys, len);
            self.region.on_read_at(phys, len);
            return Ok(Cow::Borrowed(s));
        }
        let mut v = vec![0u8; len];
        self.read_exact(off, &mut v)?;
        Ok(Cow::Owned(v))
    }

    /// Entry `i` of the key array, checksum verified (one read access).
    fn entry(&self, i: u32) -> Result<KeyEntry> {
        self.entry_as(i, false)
    }

    /// Entry `i`, reported as the continuation of the caller's previous access when
    /// `follows` (it read entry `i - 1` last).
    fn entry_as(&self, i: u32, follows: bool) -> Result<KeyEntry> {
        if i >= self.header.entry_count {
            return Err(invalid(format!(
                "matrix row {}: entry {i} of {}",
                self.header.row_id, self.header.entry_count
            )));
        }
        let off = self.header.key_array_off as usize + i as usize * KEY_ENTRY_LEN;
        let mut b = [0u8; KEY_ENTRY_LEN];
        self.read_exact_as(off, &mut b, follows)?;
        KeyEntry::decode(&b, self.header.row_id, i)
            .ok_or_else(|| self.corrupt(off, format!("key array entry {i}: checksum mismatch")))
    }

    /// The contents of the data block at row offset `off` of `len` bytes, trailer verified.
    fn read_block(&self, off: u32, len: u32, stats: &mut SearchStats) -> Result<Cow<'_, [u8]>> {
        let (off, len) = (off as usize, len as usize);
        let total = len + pad8(len) + BLOCK_TRAILER_LEN;
        if off < self.header.data_off as usize
            || !off.is_multiple_of(8)
            || off
                .checked_add(total)
                .is_none_or(|e| e > self.header.row_len as usize)
        {
            return Err(self.corrupt(
                off,
                format!("data block (offset {off}, size {len}) outside the data area"),
            ));
        }
        stats.block_reads += 1;
        let mut b = self.bytes(off, total)?;
        let (contents, tail) = b.split_at(len);
        // The frame check reports row offsets; name them as pool offsets.
        let ty = check_block_frame(contents, tail, off as u64).map_err(|e| match e {
            Error::Corruption { offset, detail, .. } => self.corrupt(offset as usize, detail),
            other => other,
        })?;
        if ty != BLOCK_TYPE_RAW {
            return Err(self.corrupt(off + len, format!("unknown block type {ty:?}")));
        }
        match &mut b {
            Cow::Borrowed(s) => *s = s.get(..len).unwrap_or_default(),
            Cow::Owned(v) => v.truncate(len),
        }
        Ok(b)
    }

    /// Runs `f` on the key and value of entry `i` (`e`), read from its verified block (kept
    /// in `cache`), after checking that the slot holds the key the entry names.
    fn with_slot<'a, R>(
        &'a self,
        i: u32,
        e: &KeyEntry,
        cache: &mut BlockCache<'a>,
        stats: &mut SearchStats,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<R> {
        let cached = matches!(cache, Some((off, _)) if *off == e.block_off);
        if !cached {
            let b = self.read_block(e.block_off, e.block_len, stats)?;
            *cache = Some((e.block_off, b));
        }
        let block: &[u8] = match cache {
            Some((_, b)) => b,
            None => &[],
        };
        let off = e.block_off as usize;
        let at = self.phys(off).unwrap_or(self.base) as u64;
        let ks = KeySetRef::parse_trailer(block, at).map_err(|err| match self.region.path() {
            Some(p) => err.in_file(p),
            None => err,
        })?;
        if ks.index_kind() != IndexKind::ValueRef {
            return Err(self.corrupt(off, "data block index kind is not ValueRef"));
        }
        let slot = e.slot as usize;
        match (ks.key(slot), ks.value(slot)) {
            (Some(k), Some(v)) if e.names(k) => Ok(f(k, v)),
            _ => Err(self.corrupt(
                off,
                format!(
                    "key array entry {i} names slot {slot} of this block, which does not hold \
                     its key"
                ),
            )),
        }
    }

    /// Compares entry `i` (`e`) with the target in internal-key order (user keys only when
    /// the probe has no trailer). Reads the block only when the 16-byte prefixes
    /// cannot decide.
    fn compare_entry<'a>(
        &'a self,
        i: u32,
        e: &KeyEntry,
        probe: Probe<'_>,
        cache: &mut BlockCache<'a>,
        stats: &mut SearchStats,
    ) -> Result<Ordering> {
        stats.comparisons += 1;
        // The 16-byte prefixes decide bytewise comparisons; under another order only a key
        // that fits its prefix is known without reading the block.
        let quick = if self.order.is_bytewise() {
            e.quick_user_cmp(probe.uk)
        } else {
            (e.ukey_len as usize <= KEY_PREFIX_LEN)
                .then(|| self.order.compare_user(e.known_prefix(), probe.uk))
        };
        let by_user = match quick {
            Some(o) => o,
            None => self.with_slot(i, e, cache, stats, |k, _| {
                self.order.compare_user(user_key(k), probe.uk)
            })?,
        };
        Ok(match (by_user, probe.trailer) {
            (Ordering::Equal, Some(tt)) => tt.cmp(&e.trailer),
            (o, _) => o,
        })
    }

    /// The live part `[consumed, n)` narrowed by `window` (clamped into it; ignored when
    /// inverted).
    fn search_range(&self, consumed: u32, window: Option<HintWindow>) -> (u32, u32) {
        let n = self.header.entry_count;
        let c = consumed.min(n);
        match window {
            Some(w) => {
                let lo = w.lo.clamp(c, n);
                let hi = w.hi.clamp(c, n);
                if lo <= hi { (lo, hi) } else { (c, n) }
            }
            None => (c, n),
        }
    }

    /// First position in `[lo, hi)` whose entry is not before the probe's position, else
    /// `hi` (a binary search over the key array in place).
    fn partition<'a>(
        &'a self,
        (lo, hi): (u32, u32),
        probe: Probe<'_>,
        cache: &mut BlockCache<'a>,
        stats: &mut SearchStats,
    ) -> Result<u32> {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = self.entry(mid)?;
            if probe.before(self.compare_entry(mid, &e, probe, cache, stats)?) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Lower bound of the internal key `target`: the first live position (in
    /// `[consumed, n)`) whose key is >= it, or `n`. With `window` (from the hints of the newer
    /// row, see [`RowTable::next_window`]), only positions in it are searched: the answer is
    /// known to lie in `[window.lo, window.hi]`.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry or block on the search path.
    pub fn lower_bound(
        &self,
        target: &[u8],
        consumed: u32,
        window: Option<HintWindow>,
        stats: &mut SearchStats,
    ) -> Result<u32> {
        let range = self.search_range(consumed, window);
        let mut cache = None;
        let probe = Probe::lower(user_key(target), trailer(target));
        self.partition(range, probe, &mut cache, stats)
    }

    /// The number of entries whose user key is <= `uk` (the consumed count after a column
    /// ending at `uk`), at least `consumed`.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry or block on the search path.
    pub fn user_key_end(&self, uk: &[u8], consumed: u32, stats: &mut SearchStats) -> Result<u32> {
        let range = self.search_range(consumed, None);
        let mut cache = None;
        let probe = Probe {
            uk,
            trailer: None,
            upper: true,
        };
        self.partition(range, probe, &mut cache, stats)
    }

    /// The newest entry for `user_key` with a sequence number <= `seq` among the live
    /// entries, searched within `window` when given. A deletion is reported as such.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry or block.
    pub fn get(
        &self,
        ukey: &[u8],
        seq: SeqNo,
        consumed: u32,
        window: Option<HintWindow>,
        stats: &mut SearchStats,
    ) -> Result<RowGet> {
        let probe = Probe::lower(ukey, pack_trailer(seq.min(MAX_SEQ), ValueKind::SEEK));
        let range = self.search_range(consumed, window);
        let mut cache = None;
        stats.rows_searched += 1;
        let pos = self.partition(range, probe, &mut cache, stats)?;
        if pos >= self.header.entry_count {
            return Ok(RowGet { pos, found: None });
        }
        let e = self.entry(pos)?;
        let same_user = Probe {
            trailer: None,
            ..probe
        };
        if self.compare_entry(pos, &e, same_user, &mut cache, stats)? != Ordering::Equal {
            return Ok(RowGet { pos, found: None });
        }
        let row_id = self.header.row_id;
        let found = self.with_slot(pos, &e, &mut cache, stats, |k, v| {
            parse_internal_key(k).map(|p| Found {
                row_id,
                seq: p.seq,
                kind: p.kind,
                value: if p.kind == ValueKind::Value {
                    v.to_vec()
                } else {
                    Vec::new()
                },
            })
        })?;
        match found {
            Some(f) => Ok(RowGet {
                pos,
                found: Some(f),
            }),
            None => Err(self.corrupt(
                e.block_off as usize,
                format!(
                    "entry {pos}: unknown value kind in trailer {:#x}",
                    e.trailer
                ),
            )),
        }
    }

    /// The window, in the previous row, that holds the lower bound of the target whose lower
    /// bound here is `pos` (hints of entries `pos - 1` and `pos`). Positions below `consumed`
    /// are not read: their side of the window is open.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry.
    pub fn next_window(&self, pos: u32, consumed: u32) -> Result<HintWindow> {
        let n = self.header.entry_count;
        let lo = if pos > consumed && pos <= n {
            self.entry(pos - 1)?.hint
        } else {
            0
        };
        let hi = if pos < n && pos >= consumed {
            self.entry(pos)?.hint
        } else {
            self.header.prev_entry_count
        };
        Ok(HintWindow { lo, hi })
    }

    /// The hint of entry `i`: the position in the previous row of its first key >= entry `i`.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry; `InvalidArgument` for `i` out of range.
    pub fn hint(&self, i: u32) -> Result<u32> {
        Ok(self.entry(i)?.hint)
    }

    /// The internal key of entry `i`.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry or block; `InvalidArgument` for `i` out of range.
    pub fn key(&self, i: u32) -> Result<Vec<u8>> {
        Ok(self.entry_kv(i)?.0)
    }

    /// The internal key and value of entry `i`.
    ///
    /// # Errors
    /// As [`RowTable::key`].
    pub fn entry_kv(&self, i: u32) -> Result<(Vec<u8>, Vec<u8>)> {
        let e = self.entry(i)?;
        let mut cache = None;
        let mut stats = SearchStats::default();
        self.with_slot(i, &e, &mut cache, &mut stats, |k, v| {
            (k.to_vec(), v.to_vec())
        })
    }

    /// The pages still holding live bytes when entries `[0, consumed)` are gone: the header
    /// page, the pages of the live part of the key array and of the data from the block of
    /// entry `consumed` on. Empty when every entry is consumed.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry `consumed`.
    pub fn pages_in_use(&self, consumed: u32) -> Result<Vec<u32>> {
        let n = self.header.entry_count;
        if consumed >= n {
            return Ok(Vec::new());
        }
        if consumed == 0 {
            return Ok(self.header.pages.clone());
        }
        let ka = self.header.key_array_off as usize;
        let live = [
            (0, ka),
            (
                ka + consumed as usize * KEY_ENTRY_LEN,
                ka + n as usize * KEY_ENTRY_LEN,
            ),
            (
                self.entry(consumed)?.block_off as usize,
                self.header.row_len as usize,
            ),
        ];
        let p = self.page_size;
        Ok(self
            .header
            .pages
            .iter()
            .enumerate()
            .filter(|&(i, _)| {
                let (lo, hi) = (i * p, (i + 1) * p);
                live.iter().any(|&(a, b)| a < b && a < hi && lo < b)
            })
            .map(|(_, &pg)| pg)
            .collect())
    }

    /// Per data block holding live entries (from the block of entry `consumed` on): the
    /// largest user key in it and its bytes (contents plus trailer) — the row's input to the
    /// column planner. Reads the key array, and a block only for keys longer than 16 bytes.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry or block.
    pub fn block_summary(&self, consumed: u32) -> Result<Vec<(Vec<u8>, u64)>> {
        let n = self.header.entry_count;
        let mut out: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut cache = None;
        let mut stats = SearchStats::default();
        let mut i = consumed;
        while i < n {
            let e = self.entry(i)?;
            let last = if i + 1 < n {
                self.entry(i + 1)?.block_off != e.block_off
            } else {
                true
            };
            if last {
                let uk = if e.ukey_len as usize <= KEY_PREFIX_LEN {
                    e.known_prefix().to_vec()
                } else {
                    self.with_slot(i, &e, &mut cache, &mut stats, |k, _| user_key(k).to_vec())?
                };
                let bytes = e.block_len as usize + pad8(e.block_len as usize) + BLOCK_TRAILER_LEN;
                out.push((uk, bytes as u64));
            }
            i += 1;
        }
        Ok(out)
    }

    /// Checks every live entry (`[consumed, n)`): its checksum, that its block verifies and
    /// holds its key, strictly increasing keys, hints non-decreasing and at most the previous
    /// row's entry count, and the sequence range. Returns the number of live entries.
    ///
    /// # Errors
    /// The first `Corruption` found.
    pub fn verify(&self, consumed: u32) -> Result<u64> {
        let n = self.header.entry_count;
        let mut cache = None;
        let mut stats = SearchStats::default();
        let mut prev_key: Option<Vec<u8>> = None;
        let mut prev_hint = 0u32;
        for i in consumed.min(n)..n {
            let e = self.entry(i)?;
            let key = self.with_slot(i, &e, &mut cache, &mut stats, |k, _| k.to_vec())?;
            let at = self.header.key_array_off as usize + i as usize * KEY_ENTRY_LEN;
            let p = parse_internal_key(&key)
                .ok_or_else(|| self.corrupt(at, format!("entry {i}: not an internal key")))?;
            if p.seq < self.header.smallest_seq || p.seq > self.header.largest_seq {
                return Err(self.corrupt(
                    at,
                    format!("entry {i}: sequence {} outside the row's range", p.seq),
                ));
            }
            if let Some(pk) = &prev_key
                && self.order.compare_internal(pk, &key) != Ordering::Less
            {
                return Err(self.corrupt(at, format!("entry {i}: keys out of order")));
            }
            if e.hint > self.header.prev_entry_count || e.hint < prev_hint {
                return Err(self.corrupt(
                    at,
                    format!(
                        "entry {i}: hint {} after {prev_hint} (previous row has {} entries)",
                        e.hint, self.header.prev_entry_count
                    ),
                ));
            }
            prev_hint = e.hint;
            prev_key = Some(key);
        }
        Ok(u64::from(n - consumed.min(n)))
    }

    /// A cursor over the live entries `[consumed, n)`.
    #[must_use]
    pub fn iter(self: &Arc<Self>, consumed: u32) -> RowIter {
        RowIter {
            row: Arc::clone(self),
            from: consumed.min(self.header.entry_count),
            pos: 0,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            block: None,
            status: None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// RowIter
// ---------------------------------------------------------------------------------------

/// A bidirectional cursor over the live entries of a row (an [`InternalIterator`]): the
/// input of a column compaction and of merging iterators. Each data block is read and
/// verified once while the cursor stays in it; the current key and value are copies.
pub struct RowIter {
    row: Arc<RowTable>,
    from: u32,
    pos: u32,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The current block: (row offset, contents).
    block: Option<(u32, Vec<u8>)>,
    status: Option<Error>,
}

impl fmt::Debug for RowIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowIter")
            .field("row", &self.row.id())
            .field("from", &self.from)
            .field("pos", &self.pos)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl RowIter {
    /// The current entry's position in the row. REQUIRES: `valid()`.
    #[must_use]
    pub fn position(&self) -> u32 {
        self.pos
    }

    /// Positions at the first live entry >= the internal key `target`, searching only
    /// `window` when given (from the hints of the newer row, see [`RowTable::next_window`]),
    /// and returns that lower bound: the position to hand to `next_window` for the next
    /// older row (the entry count when every live entry is before `target`). `None` after
    /// an error (see `status`).
    pub fn seek_within(
        &mut self,
        target: &[u8],
        window: Option<HintWindow>,
        stats: &mut SearchStats,
    ) -> Option<u32> {
        self.status = None;
        match self.row.lower_bound(target, self.from, window, stats) {
            Ok(p) => {
                self.load(p);
                Some(p)
            }
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// Positions at the last live entry <= the internal key `target`, searching only
    /// `window` when given; returns the lower bound of `target`, as
    /// [`RowIter::seek_within`] does.
    pub fn seek_for_prev_within(
        &mut self,
        target: &[u8],
        window: Option<HintWindow>,
        stats: &mut SearchStats,
    ) -> Option<u32> {
        let p = self.seek_within(target, window, stats)?;
        if self.status.is_some() {
            return None;
        }
        if self.valid && self.row.order.compare_internal(&self.key, target) == Ordering::Equal {
            return Some(p);
        }
        if p > self.from {
            self.load(p - 1);
            if self.status.is_some() {
                return None;
            }
        } else {
            self.valid = false;
        }
        Some(p)
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        if self.status.is_none() {
            self.status = Some(e);
        }
    }

    /// Positions at entry `pos` (invalid outside the live range).
    fn load(&mut self, pos: u32) {
        // A step to the next entry reads the key array on from where the last one ended.
        let follows = self.valid && pos == self.pos.wrapping_add(1);
        self.pos = pos;
        self.valid = false;
        if pos < self.from || pos >= self.row.num_entries() {
            return;
        }
        let row = Arc::clone(&self.row);
        let e = match row.entry_as(pos, follows) {
            Ok(e) => e,
            Err(err) => return self.fail(err),
        };
        if !matches!(&self.block, Some((off, _)) if *off == e.block_off) {
            let mut stats = SearchStats::default();
            match row.read_block(e.block_off, e.block_len, &mut stats) {
                Ok(b) => self.block = Some((e.block_off, b.into_owned())),
                Err(err) => return self.fail(err),
            }
        }
        let Some((_, block)) = &self.block else {
            return;
        };
        let mut cache: BlockCache<'_> = Some((e.block_off, Cow::Borrowed(block.as_slice())));
        let mut stats = SearchStats::default();
        let (key, value) = (&mut self.key, &mut self.value);
        match row.with_slot(pos, &e, &mut cache, &mut stats, |k, v| {
            key.clear();
            key.extend_from_slice(k);
            value.clear();
            value.extend_from_slice(v);
        }) {
            Ok(()) => self.valid = true,
            Err(err) => self.fail(err),
        }
    }
}

impl InternalIterator for RowIter {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.status = None;
        self.load(self.from);
    }

    fn seek_to_last(&mut self) {
        self.status = None;
        match self.row.num_entries().checked_sub(1) {
            Some(last) if last >= self.from => self.load(last),
            _ => self.valid = false,
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.seek_within(target, None, &mut SearchStats::default());
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek_for_prev_within(target, None, &mut SearchStats::default());
    }

    fn next(&mut self) {
        if self.valid {
            self.load(self.pos + 1);
        }
    }

    fn prev(&mut self) {
        if self.valid {
            if self.pos > self.from {
                self.load(self.pos - 1);
            } else {
                self.valid = false;
            }
        }
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.value
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            None => Ok(()),
            Some(e) => Err(e.duplicate()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Container
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct RowSlot {
    table: Arc<RowTable>,
    consumed: u32,
    /// Pages not yet handed back by [`Container::take_releasable`].
    held: Vec<u32>,
}

/// A row as the container sees it.
#[derive(Debug, Clone, Copy)]
pub struct RowState<'a> {
    /// The row.
    pub table: &'a Arc<RowTable>,
    /// Entries `[0, consumed)` have been column-compacted away.
    pub consumed: u32,
    /// Whether the row belongs to the compactor (else the receiver).
    pub compactor: bool,
}

/// Lower bound of a seek target in one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowPosition {
    /// The row.
    pub row_id: u64,
    /// First live position whose key is >= the target (the entry count when none).
    pub pos: u32,
}

/// What [`Container::take_releasable`] gave back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Released {
    /// Pages no row needs any more, sorted. Free them ([`PageSpace::release`]) once the
    /// durable metadata no longer names them and no older container value is read.
    pub pages: Vec<u32>,
    /// Rows fully drained and removed from the container, oldest first.
    pub dropped_rows: Vec<u64>,
}

/// The matrix container: rows oldest first, the oldest `compactor_rows()` of them forming
/// the compactor and the rest the receiver (see the module documentation).
#[derive(Debug, Clone)]
pub struct Container {
    rows: Vec<RowSlot>,
    compactor_len: usize,
    page_size: u64,
    capacity_bytes: u64,
    switch_fraction: f64,
}

impl Container {
    /// An empty container over a space of `capacity_bytes` with pages of `page_size` bytes,
    /// whose receiver turns into the compactor at `switch_fraction` of the capacity
    /// ([`DEFAULT_SWITCH_FRACTION`] is the paper's 60 %).
    ///
    /// # Errors
    /// `InvalidArgument` for a fraction outside `(0, 1]` or a zero page size.
    pub fn new(page_size: usize, capacity_bytes: u64, switch_fraction: f64) -> Result<Container> {
        if !(switch_fraction > 0.0 && switch_fraction <= 1.0) {
            return Err(invalid(format!(
                "matrix switch fraction {switch_fraction} must be in (0, 1]"
            )));
        }
        if page_size == 0 {
            return Err(invalid("matrix page size must not be zero"));
        }
        Ok(Container {
            rows: Vec::new(),
            compactor_len: 0,
            page_size: page_size as u64,
            capacity_bytes,
            switch_fraction,
        })
    }

    /// A container for `space` with the given switch fraction.
    ///
    /// # Errors
    /// As [`Container::new`].
    pub fn for_space(space: &PageSpace, switch_fraction: f64) -> Result<Container> {
        Container::new(space.page_size(), space.capacity_bytes(), switch_fraction)
    }

    /// Appends a freshly built row as the newest receiver row.
    ///
    /// # Errors
    /// `InvalidArgument` when its id is not above the newest row's.
    pub fn push(&mut self, row: Arc<RowTable>) -> Result<()> {
        self.check_newer(&row)?;
        let held = row.pages().to_vec();
        self.rows.push(RowSlot {
            table: row,
            consumed: 0,
            held,
        });
        Ok(())
    }

    /// Appends a recovered row, oldest first, with its consumed count and role: the rows of
    /// the compactor come before those of the receiver, and receiver rows are unconsumed.
    ///
    /// # Errors
    /// `InvalidArgument` for a row not newer than the last one, a compactor row after a
    /// receiver row, a consumed receiver row or a consumed count beyond the row;
    /// `Corruption` from reading the row.
    pub fn restore(&mut self, row: Arc<RowTable>, consumed: u32, compactor: bool) -> Result<()> {
        self.check_newer(&row)?;
        if consumed > row.num_entries() {
            return Err(invalid(format!(
                "matrix row {}: {consumed} consumed of {} entries",
                row.id(),
                row.num_entries()
            )));
        }
        if compactor && self.compactor_len != self.rows.len() {
            return Err(invalid(format!(
                "matrix row {}: a compactor row after receiver rows",
                row.id()
            )));
        }
        if !compactor && consumed > 0 {
            return Err(invalid(format!(
                "matrix row {}: a receiver row with consumed entries",
                row.id()
            )));
        }
        let held = row.pages_in_use(consumed)?;
        self.rows.push(RowSlot {
            table: row,
            consumed,
            held,
        });
        if compactor {
            self.compactor_len += 1;
        }
        Ok(())
    }

    fn check_newer(&self, row: &RowTable) -> Result<()> {
        match self.rows.last() {
            Some(last) if last.table.id() >= row.id() => Err(invalid(format!(
                "matrix row {} is not newer than row {}",
                row.id(),
                last.table.id()
            ))),
            _ => Ok(()),
        }
    }

    /// Number of rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is no row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Rows of the compactor (the oldest ones).
    #[must_use]
    pub fn compactor_rows(&self) -> usize {
        self.compactor_len
    }

    /// Rows of the receiver.
    #[must_use]
    pub fn receiver_rows(&self) -> usize {
        self.rows.len() - self.compactor_len
    }

    /// The rows, oldest first.
    pub fn rows(&self) -> impl DoubleEndedIterator<Item = RowState<'_>> + '_ {
        self.rows.iter().enumerate().map(|(i, s)| RowState {
            table: &s.table,
            consumed: s.consumed,
            compactor: i < self.compactor_len,
        })
    }

    fn held_bytes_of(&self, slots: &[RowSlot]) -> u64 {
        slots.iter().map(|s| s.held.len() as u64).sum::<u64>() * self.page_size
    }

    /// Bytes of the pages the receiver holds.
    #[must_use]
    pub fn receiver_bytes(&self) -> u64 {
        self.held_bytes_of(self.rows.get(self.compactor_len..).unwrap_or_default())
    }

    /// Bytes of the pages the compactor holds (pages already handed back not counted).
    #[must_use]
    pub fn compactor_bytes(&self) -> u64 {
        self.held_bytes_of(self.rows.get(..self.compactor_len).unwrap_or_default())
    }

    /// The role switch: when the compactor is empty and the receiver holds at least the
    /// switch fraction of the capacity, every receiver row becomes a compactor row (no data
    /// moves) and the receiver starts empty. Returns whether it switched.
    pub fn maybe_switch(&mut self) -> bool {
        let threshold = self.capacity_bytes as f64 * self.switch_fraction;
        if self.compactor_len == 0
            && !self.rows.is_empty()
            && self.receiver_bytes() as f64 >= threshold
        {
            self.compactor_len = self.rows.len();
            return true;
        }
        false
    }

    /// The newest row and its consumed count: what the next row's hints point into.
    #[must_use]
    pub fn hint_source(&self) -> Option<HintSource<'_>> {
        self.rows.last().map(|s| HintSource {
            row: &s.table,
            consumed: s.consumed,
        })
    }

    /// Marks every entry of the compactor rows whose user key is <= `end` consumed (a
    /// column ending at `end` was compacted; columns run left to right, so this is a prefix
    /// of each row). Returns `(row id, consumed count)` of the rows that changed, for the
    /// engine's durable metadata.
    ///
    /// # Errors
    /// `Corruption` from a damaged entry on the search path (nothing changes then).
    pub fn consume_through(&mut self, end: &[u8]) -> Result<Vec<(u64, u32)>> {
        let mut stats = SearchStats::default();
        let mut updates = Vec::new();
        for (i, s) in self.rows.iter().enumerate().take(self.compactor_len) {
            let c = s.table.user_key_end(end, s.consumed, &mut stats)?;
            if c > s.consumed {
                updates.push((i, c));
            }
        }
        Ok(updates
            .into_iter()
            .filter_map(|(i, c)| {
                let s = self.rows.get_mut(i)?;
                s.consumed = c;
                Some((s.table.id(), c))
            })
            .collect())
    }

    /// Consumes the column `[start, end]` (user keys, inclusive) from the compactor rows, as
    /// [`Container::consume_through`]`(end)`, after checking that no compactor row holds a
    /// live entry whose user key is below `start`: rows drain as prefixes, so such an entry
    /// would be dropped without having been compacted (e.g. a column planned from a cursor
    /// in the middle of a fresh compactor).
    ///
    /// # Errors
    /// `InvalidArgument` when a compactor row has a live entry below `start` (nothing
    /// changes then); `Corruption` from a damaged entry.
    pub fn consume_column(&mut self, start: &[u8], end: &[u8]) -> Result<Vec<(u64, u32)>> {
        let probe = Probe {
            uk: start,
            trailer: None,
            upper: false,
        };
        let mut stats = SearchStats::default();
        for s in self.rows.iter().take(self.compactor_len) {
            let t = &s.table;
            if s.consumed >= t.num_entries() {
                continue;
            }
            let e = t.entry(s.consumed)?;
            let mut cache = None;
            if t.compare_entry(s.consumed, &e, probe, &mut cache, &mut stats)? == Ordering::Less {
                return Err(invalid(format!(
                    "matrix row {}: live entry {} lies before the column start; consuming the \
                     column would drop it uncompacted",
                    t.id(),
                    s.consumed
                )));
            }
        }
        self.consume_through(end)
    }

    /// Hands back the pages that consumption made free since the last call, and removes the
    /// fully drained rows (all their pages, header page included, are handed back).
    ///
    /// # Errors
    /// `Corruption` from a damaged entry (nothing changes then).
    pub fn take_releasable(&mut self) -> Result<Released> {
        let mut in_use = Vec::with_capacity(self.rows.len());
        for s in &self.rows {
            in_use.push(s.table.pages_in_use(s.consumed)?);
        }
        let mut out = Released::default();
        let mut kept = Vec::with_capacity(self.rows.len());
        let mut compactor_len = self.compactor_len;
        for (i, (mut s, use_now)) in std::mem::take(&mut self.rows)
            .into_iter()
            .zip(in_use)
            .enumerate()
        {
            let keep: BTreeSet<u32> = use_now.into_iter().collect();
            out.pages
                .extend(s.held.iter().copied().filter(|p| !keep.contains(p)));
            s.held.retain(|p| keep.contains(p));
            if s.consumed >= s.table.num_entries() {
                out.dropped_rows.push(s.table.id());
                if i < self.compactor_len {
                    compactor_len -= 1;
                }
            } else {
                kept.push(s);
            }
        }
        self.rows = kept;
        self.compactor_len = compactor_len;
        out.pages.sort_unstable();
        Ok(out)
    }

    /// Walks the live rows newest to oldest, searching each for the lower bound of the
    /// probe; with `use_hints`, a row is searched only within the window the
    /// newer row's hints give (when the newer row's hints point into it). `visit` gets each
    /// row and position and returns whether to stop.
    fn walk(
        &self,
        probe: Probe<'_>,
        use_hints: bool,
        stats: &mut SearchStats,
        mut visit: impl FnMut(&RowSlot, u32, &mut SearchStats) -> Result<bool>,
    ) -> Result<()> {
        let mut next: Option<(u64, u32, HintWindow)> = None;
        for s in self.rows.iter().rev() {
            let t = &s.table;
            let window = match next.take() {
                Some((id, count, w)) if use_hints && id == t.id() && count == t.num_entries() => {
                    stats.rows_hinted += 1;
                    Some(w)
                }
                _ => None,
            };
            let range = t.search_range(s.consumed, window);
            let mut cache = None;
            stats.rows_searched += 1;
            let pos = t.partition(range, probe, &mut cache, stats)?;
            if visit(s, pos, stats)? {
                return Ok(());
            }
            if use_hints && t.prev_row_id() != NO_PREV_ROW {
                let w = t.next_window(pos, s.consumed)?;
                next = Some((t.prev_row_id(), t.header.prev_entry_count, w));
            }
        }
        Ok(())
    }

    /// The newest entry for `user_key` visible at `seq` in the container (a deletion is
    /// reported as such), searching rows newest to oldest; `use_hints` switches the
    /// cross-row hints on or off (the result is the same; `stats` shows the work).
    ///
    /// # Errors
    /// `Corruption` from a damaged entry or block on the search path.
    pub fn get(
        &self,
        ukey: &[u8],
        seq: SeqNo,
        use_hints: bool,
        stats: &mut SearchStats,
    ) -> Result<Option<Found>> {
        let probe = Probe::lower(ukey, pack_trailer(seq.min(MAX_SEQ), ValueKind::SEEK));
        let same_user = Probe {
            trailer: None,
            ..probe
        };
        let mut found = None;
        self.walk(probe, use_hints, stats, |s, pos, stats| {
            if pos >= s.table.num_entries() {
                return Ok(false);
            }
            let e = s.table.entry(pos)?;
            let mut cache = None;
            if s.table
                .compare_entry(pos, &e, same_user, &mut cache, stats)?
                != Ordering::Equal
            {
                return Ok(false);
            }
            let row_id = s.table.id();
            let f = s.table.with_slot(pos, &e, &mut cache, stats, |k, v| {
                parse_internal_key(k).map(|p| Found {
                    row_id,
                    seq: p.seq,
                    kind: p.kind,
                    value: if p.kind == ValueKind::Value {
                        v.to_vec()
                    } else {
                        Vec::new()
                    },
                })
            })?;
            found = f;
            Ok(found.is_some())
        })?;
        Ok(found)
    }

    /// For each row, newest first, the lower bound of the internal key `target` among its
    /// live entries (the start positions of a merging iterator over the container).
    ///
    /// # Errors
    /// `Corruption` from a damaged entry or block on the search path.
    pub fn seek(
        &self,
        target: &[u8],
        use_hints: bool,
        stats: &mut SearchStats,
    ) -> Result<Vec<RowPosition>> {
        let mut out = Vec::with_capacity(self.rows.len());
        self.walk(
            Probe::lower(user_key(target), trailer(target)),
            use_hints,
            stats,
            |s, pos, _| {
                out.push(RowPosition {
                    row_id: s.table.id(),
                    pos,
                });
                Ok(false)
            },
        )?;
        Ok(out)
    }

    /// The pages every row still holds (not yet handed back): with the pages handed back but
    /// not yet released, what the space must keep.
    #[must_use]
    pub fn held_pages(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .rows
            .iter()
            .flat_map(|s| s.held.iter().copied())
            .collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    use mezz_format::ikey::{compare_internal_keys, make_internal_key};
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use mezz_pmem::{KeepLines, Pool, PowerCut, RegionOptions, SimNvm};

    const P: usize = 4096;
    const DB_ID: [u8; 16] = *b"matrix-test-db-1";

    /// One model entry.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct E {
        uk: Vec<u8>,
        seq: u64,
        kind: ValueKind,
        value: Vec<u8>,
    }

    impl E {
        fn ikey(&self) -> Vec<u8> {
            make_internal_key(&self.uk, self.seq, self.kind)
        }
    }

    fn sort(v: &mut [E]) {
        v.sort_by(|a, b| compare_internal_keys(&a.ikey(), &b.ikey()));
    }

    /// A heap region with a page space of `pages` pages after a 4 KiB superblock gap.
    fn heap(pages: u32, page_size: usize) -> (Arc<Region>, PageSpace) {
        let len = 4096 + pages as usize * page_size;
        let region = Region::anonymous(len, &RegionOptions::default()).unwrap();
        let extent = Extent {
            offset: 4096,
            len: u64::from(pages) * page_size as u64,
        };
        (region, PageSpace::new(extent, page_size).unwrap())
    }

    fn build(
        region: &Arc<Region>,
        space: &PageSpace,
        id: u64,
        entries: &[E],
        prev: Option<HintSource<'_>>,
        block_size: usize,
    ) -> Result<RowTable> {
        let mut b = RowBuilder::new(RowBuildOptions {
            block_size,
            ..Default::default()
        });
        for e in entries {
            b.add(&e.ikey(), &e.value)?;
        }
        b.finish(region, space, id, prev)
    }

    /// Keys with shared 16-byte prefixes, a key of exactly 16 bytes, its 8-byte prefix and
    /// the empty key, so every branch of the prefix comparison is taken.
    fn key(i: usize) -> Vec<u8> {
        match i % 8 {
            0 => b"a-shared-prefix-".to_vec(),
            1 => b"a-shared".to_vec(),
            2 => Vec::new(),
            3 | 4 => format!("k{i:05}").into_bytes(),
            5 => format!("a-shared-prefix-{i:05}").into_bytes(),
            _ => format!("a-shared-prefix-{:05}-longer", i - 1).into_bytes(),
        }
    }

    /// A row of `max / 2` to `max` key draws over `keys` distinct keys, 1 to 3 versions
    /// each (some deletions), sequence numbers from `*seq` up.
    fn gen_row(rng: &mut Xoshiro256PlusPlus, seq: &mut u64, keys: usize, max: usize) -> Vec<E> {
        let n = rng.random_range(max.div_ceil(2)..=max);
        let mut uks = BTreeSet::new();
        for _ in 0..n {
            uks.insert(key(rng.random_range(0..keys)));
        }
        let mut out = Vec::new();
        for uk in uks {
            for _ in 0..rng.random_range(1..=3) {
                *seq += 1;
                let kind = if rng.random_bool(0.2) {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                let len = rng.random_range(0..300);
                let value = if kind == ValueKind::Value {
                    (0..len)
                        .map(|j| (*seq as u8).wrapping_add(j as u8))
                        .collect()
                } else {
                    Vec::new()
                };
                out.push(E {
                    uk: uk.clone(),
                    seq: *seq,
                    kind,
                    value,
                });
            }
        }
        sort(&mut out);
        out
    }

    /// The newest version of `uk` at or below `snap` among `rows`.
    fn model_get<'a>(rows: impl Iterator<Item = &'a [E]>, uk: &[u8], snap: u64) -> Option<E> {
        rows.flat_map(|r| r.iter())
            .filter(|e| e.uk == uk && e.seq <= snap)
            .max_by_key(|e| e.seq)
            .cloned()
    }

    fn found_as_e(f: Option<Found>, uk: &[u8]) -> Option<E> {
        f.map(|f| E {
            uk: uk.to_vec(),
            seq: f.seq,
            kind: f.kind,
            value: f.value,
        })
    }

    /// Checks every lookup of a single row against its entries, and a full iteration.
    fn check_row(row: &Arc<RowTable>, entries: &[E], consumed: u32) {
        let live = &entries[consumed as usize..];
        assert_eq!(row.verify(consumed).unwrap(), live.len() as u64);
        let mut st = SearchStats::default();
        for e in live {
            for snap in [e.seq, e.seq + 1, u64::MAX] {
                let got = row.get(&e.uk, snap, consumed, None, &mut st).unwrap();
                let want = model_get(std::iter::once(live), &e.uk, snap);
                assert_eq!(
                    found_as_e(got.found, &e.uk),
                    want,
                    "key {:?} at {snap}",
                    e.uk
                );
            }
        }
        let mut it = row.iter(consumed);
        it.seek_to_first();
        for e in live {
            assert!(it.valid());
            assert_eq!(it.key(), &e.ikey()[..]);
            assert_eq!(it.value(), &e.value[..]);
            it.next();
        }
        assert!(!it.valid());
        it.status().unwrap();
        it.seek_to_last();
        for e in live.iter().rev() {
            assert!(it.valid());
            assert_eq!(it.key(), &e.ikey()[..]);
            it.prev();
        }
        assert!(!it.valid());
        it.status().unwrap();
    }

    #[test]
    fn matrix_page_space_allocates_releases_and_rebuilds() {
        let extent = Extent {
            offset: 4096,
            len: 10 * P as u64 + 100,
        };
        let s = PageSpace::new(extent, P).unwrap();
        assert_eq!(s.page_count(), 10);
        assert_eq!(s.capacity_bytes(), 10 * P as u64);
        assert_eq!(s.page_offset(3), Some(4096 + 3 * P as u64));
        assert_eq!(s.page_offset(10), None);
        assert_eq!(s.alloc(3).unwrap(), vec![0, 1, 2]);
        assert!(s.alloc(0).is_err());
        s.release(&[1]).unwrap();
        assert_eq!(s.alloc(2).unwrap(), vec![1, 3]);
        assert_eq!(s.free_count(), 6);
        // Double free, duplicate, out of range: refused, nothing changes.
        assert!(s.release(&[9]).is_err());
        assert!(s.release(&[2, 2]).is_err());
        assert!(s.release(&[0, 10]).is_err());
        assert_eq!(s.free_count(), 6);
        assert!(!s.is_free(0));
        assert!(s.alloc(7).is_err());
        assert_eq!(s.free_count(), 6);

        let r = PageSpace::from_live(extent, P, &[2, 5]).unwrap();
        assert_eq!(r.free_count(), 8);
        assert!(!r.is_free(2) && !r.is_free(5) && r.is_free(0));
        assert_eq!(r.alloc(3).unwrap(), vec![0, 1, 3]);
        for bad in [&[10u32][..], &[2, 2][..]] {
            let e = PageSpace::from_live(extent, P, bad).unwrap_err();
            assert!(e.is_corruption(), "{e}");
        }
        // Geometry.
        assert!(PageSpace::new(extent, 1000).is_err());
        assert!(PageSpace::new(extent, 2048).is_err());
        assert!(
            PageSpace::new(
                Extent {
                    offset: 100,
                    len: 1 << 20
                },
                P
            )
            .is_err()
        );
        assert!(
            PageSpace::new(
                Extent {
                    offset: 0,
                    len: 100
                },
                P
            )
            .is_err()
        );
    }

    #[test]
    fn matrix_row_roundtrip_reopen_and_iterate() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut seq = 0;
        let entries = gen_row(&mut rng, &mut seq, 400, 300);
        let (region, space) = heap(64, P);
        let row = Arc::new(build(&region, &space, 5, &entries, None, 256).unwrap());
        assert!(row.pages().len() > 2, "{row:?}");
        assert_eq!(row.num_entries() as usize, entries.len());
        assert!(row.header().block_count > 10);
        assert_eq!(row.header().smallest_seq, 1);
        assert_eq!(row.header().largest_seq, seq);
        check_row(&row, &entries, 0);
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(row.key(i as u32).unwrap(), e.ikey());
            assert_eq!(row.hint(i as u32).unwrap(), 0);
        }
        // Absent keys.
        let mut st = SearchStats::default();
        for uk in [&b"zzz"[..], b"a-shared-prefix-\xff", b"0"] {
            assert_eq!(row.get(uk, u64::MAX, 0, None, &mut st).unwrap().found, None);
        }
        // Reopen from the header page.
        let again = RowTable::open(
            &region,
            &space,
            row.header_page(),
            5,
            &mezz_format::KeyOrder::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(again.header(), row.header());
        check_row(&Arc::new(again), &entries, 0);
        // Another id, or a page that holds no row: nothing there.
        assert!(
            RowTable::open(
                &region,
                &space,
                row.header_page(),
                6,
                &mezz_format::KeyOrder::default()
            )
            .unwrap()
            .is_none()
        );
        assert!(
            RowTable::open(&region, &space, 63, 5, &mezz_format::KeyOrder::default())
                .unwrap()
                .is_none()
        );
        assert!(RowTable::open(&region, &space, 64, 5, &mezz_format::KeyOrder::default()).is_err());
        // A consumed prefix hides entries from reads and iteration.
        check_row(&row, &entries, 17);
    }

    #[test]
    fn matrix_row_iter_seeks_within_the_live_range() {
        let entries: Vec<E> = (0..40)
            .map(|i| E {
                uk: format!("key{:03}", i * 2).into_bytes(),
                seq: 100 + i,
                kind: ValueKind::Value,
                value: vec![i as u8; 3],
            })
            .collect();
        let (region, space) = heap(8, P);
        let row = Arc::new(build(&region, &space, 1, &entries, None, 100).unwrap());
        let mut it = row.iter(10);
        let ik = |s: &str| make_internal_key(s.as_bytes(), MAX_SEQ, ValueKind::SEEK);
        it.seek(&ik("key000"));
        assert_eq!(it.position(), 10);
        it.seek(&ik("key041"));
        assert_eq!(user_key(it.key()), b"key042");
        it.seek_for_prev(&ik("key041"));
        assert_eq!(user_key(it.key()), b"key040");
        it.seek_for_prev(&entries[25].ikey());
        assert_eq!(it.key(), &entries[25].ikey()[..]);
        it.seek_for_prev(&ik("key001"));
        assert!(!it.valid());
        it.seek(&ik("zzz"));
        assert!(!it.valid());
        it.seek_to_first();
        it.prev();
        assert!(!it.valid());
        it.seek_to_last();
        assert_eq!(it.position(), 39);
        it.next();
        assert!(!it.valid());
        it.status().unwrap();
        assert!(!row.iter(40).valid());
        let mut all = row.iter(40);
        all.seek_to_last();
        assert!(!all.valid());
        // user_key_end counts entries at or below a user key, never fewer than consumed.
        let mut st = SearchStats::default();
        assert_eq!(row.user_key_end(b"key010", 0, &mut st).unwrap(), 6);
        assert_eq!(row.user_key_end(b"key011", 0, &mut st).unwrap(), 6);
        assert_eq!(row.user_key_end(b"key010", 8, &mut st).unwrap(), 8);
        assert_eq!(row.user_key_end(b"zz", 0, &mut st).unwrap(), 40);
        // The block summary covers the live blocks and ends at the last key.
        let sum = row.block_summary(0).unwrap();
        assert!(sum.len() > 5);
        assert_eq!(sum.last().unwrap().0, b"key078");
        assert!(sum.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(row.block_summary(39).unwrap().len() == 1);
    }

    #[test]
    fn matrix_row_on_scattered_pages_with_straddling_blocks() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut seq = 0;
        let entries = gen_row(&mut rng, &mut seq, 2000, 400);
        let (region, space) = heap(64, P);
        let taken = space.alloc(9).unwrap();
        space
            .release(&[taken[1], taken[3], taken[4], taken[6]])
            .unwrap();
        let row = Arc::new(build(&region, &space, 9, &entries, None, 1000).unwrap());
        let pages = row.pages().to_vec();
        assert_eq!(&pages[..4], &[1, 3, 4, 6]);
        assert!(pages.len() > 5);
        assert!(row.page_runs().len() >= 3);
        // The header and key array are copied from one buffer and the blocks from
        // another: some run of contiguous pages holds the end of one and the start of the
        // other.
        let data = row.header().data_off as usize;
        assert!(
            row.page_runs()
                .iter()
                .any(|&(_, lo, hi)| lo < data && data < hi),
            "no run holds both the key array and the blocks"
        );
        let straddles = (0..row.num_entries()).any(|i| {
            let e = row.entry(i).unwrap();
            let end = e.block_off as usize + e.block_len as usize + BLOCK_TRAILER_LEN;
            e.block_off as usize / P != end / P
        });
        assert!(straddles, "no block straddles a page boundary");
        check_row(&row, &entries, 0);
        let again = RowTable::open(&region, &space, 1, 9, &mezz_format::KeyOrder::default())
            .unwrap()
            .unwrap();
        check_row(&Arc::new(again), &entries, 0);
    }

    #[test]
    fn matrix_row_rejects_bad_input() {
        let (region, space) = heap(8, P);
        let mut b = RowBuilder::new(RowBuildOptions::default());
        assert!(b.add(b"short", b"").is_err());
        let mut bad_kind = make_internal_key(b"k", 1, ValueKind::Value);
        let n = bad_kind.len();
        bad_kind[n - 8] = 9;
        assert!(b.add(&bad_kind, b"").is_err());
        b.add(&make_internal_key(b"b", 5, ValueKind::Value), b"v")
            .unwrap();
        assert!(
            b.add(&make_internal_key(b"b", 5, ValueKind::Value), b"v")
                .is_err()
        );
        assert!(
            b.add(&make_internal_key(b"a", 9, ValueKind::Value), b"v")
                .is_err()
        );
        assert!(
            b.add(&make_internal_key(b"b", 6, ValueKind::Value), b"v")
                .is_err()
        );
        b.add(&make_internal_key(b"b", 4, ValueKind::Deletion), b"")
            .unwrap();
        assert_eq!(b.len(), 2);
        let empty = RowBuilder::new(RowBuildOptions::default());
        assert!(empty.is_empty());
        assert!(empty.finish(&region, &space, 1, None).is_err());
        let one = || {
            let mut b = RowBuilder::new(RowBuildOptions::default());
            b.add(&make_internal_key(b"x", 1, ValueKind::Value), b"1")
                .unwrap();
            b
        };
        assert!(one().finish(&region, &space, 0, None).is_err());
        assert!(one().finish(&region, &space, COMMIT_MAGIC, None).is_err());
        let r7 = one().finish(&region, &space, 7, None).unwrap();
        let older = Some(HintSource {
            row: &r7,
            consumed: 0,
        });
        assert!(one().finish(&region, &space, 7, older).is_err());
        assert_eq!(space.free_count(), 7);
        // A space outside the region.
        let far = PageSpace::new(
            Extent {
                offset: 1 << 30,
                len: 8 * P as u64,
            },
            P,
        )
        .unwrap();
        assert!(one().finish(&region, &far, 8, None).is_err());
        assert!(RowTable::open(&region, &far, 0, 8, &mezz_format::KeyOrder::default()).is_err());
        // Not enough pages: refused, nothing allocated.
        let mut big = RowBuilder::new(RowBuildOptions::default());
        for i in 0..40u32 {
            big.add(
                &make_internal_key(&i.to_be_bytes(), 1, ValueKind::Value),
                &[1u8; 1000],
            )
            .unwrap();
        }
        assert!(big.estimated_size() > 40_000);
        assert!(big.finish(&region, &space, 9, None).is_err());
        assert_eq!(space.free_count(), 7);
        // A page list that does not fit in the header page.
        let (region, space) = heap(1100, P);
        let mut huge = RowBuilder::new(RowBuildOptions::default());
        for i in 0..1000u32 {
            huge.add(
                &make_internal_key(&i.to_be_bytes(), 1, ValueKind::Value),
                &[1u8; 4096],
            )
            .unwrap();
        }
        let e = huge.finish(&region, &space, 1, None).unwrap_err();
        assert!(e.to_string().contains("larger pages"), "{e}");
        assert_eq!(space.free_count(), 1100);
    }

    #[test]
    fn matrix_header_decode_rejects_damage_without_panicking() {
        let h = RowHeader {
            row_id: 9,
            prev_row_id: 4,
            page_size: P as u32,
            entry_count: 10,
            prev_entry_count: 20,
            block_count: 2,
            key_array_off: 192,
            data_off: 704,
            row_len: 5000,
            smallest_seq: 1,
            largest_seq: 10,
            num_deletions: 0,
            pages: vec![3, 7],
        };
        let (ka, data) = layout_offsets(2, 10).unwrap();
        assert_eq!((ka, data), (192, 704));
        let b = h.encode();
        assert_eq!(RowHeader::decode(&b, 0).unwrap(), h);
        for cut in 0..b.len() {
            assert!(RowHeader::decode(&b[..cut], 0).is_err());
        }
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x10;
            assert!(RowHeader::decode(&d, 0).is_err(), "flip at {i}");
        }
        // Well-checksummed but inconsistent headers.
        let bad = |f: &dyn Fn(&mut RowHeader)| {
            let mut x = h.clone();
            f(&mut x);
            RowHeader::decode(&x.encode(), 0).unwrap_err()
        };
        assert!(bad(&|x| x.row_id = 0).is_corruption());
        assert!(bad(&|x| x.prev_row_id = 9).is_corruption());
        assert!(bad(&|x| x.key_array_off = 256).is_corruption());
        assert!(bad(&|x| x.row_len = 9000).is_corruption());
        assert!(bad(&|x| x.row_len = 4000).is_corruption());
        assert!(bad(&|x| x.block_count = 11).is_corruption());
        assert!(bad(&|x| x.smallest_seq = 11).is_corruption());
        let mut newer = b.clone();
        newer[8] = 2;
        let crc_at = newer.len() - 4;
        let crc = mask(crc32c(&newer[..crc_at]));
        newer[crc_at..].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            RowHeader::decode(&newer, 0),
            Err(Error::UnsupportedVersion { .. })
        ));
    }

    /// Flips every byte of a small committed row, one at a time: a lookup of any of its keys
    /// then returns the right entry or a `Corruption` error — never a wrong value, never a
    /// miss, never a panic.
    #[test]
    fn matrix_every_damaged_byte_is_detected_or_harmless() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut seq = 0;
        let entries = gen_row(&mut rng, &mut seq, 40, 25);
        let (region, space) = heap(8, P);
        let row = build(&region, &space, 3, &entries, None, 300).unwrap();
        let len = row.len_bytes() as usize;
        let hp = row.header_page();
        drop(row);
        let mut detected = 0;
        for off in 0..len {
            let mut orig = [0u8; 1];
            let phys = RowTable::open(&region, &space, hp, 3, &mezz_format::KeyOrder::default())
                .unwrap()
                .unwrap()
                .phys(off)
                .unwrap();
            // A test on a private heap region; no other reader or writer.
            region.read_published(phys, &mut orig);
            region.claim(phys, 1).unwrap().write(0, &[orig[0] ^ 0x5a]);
            match RowTable::open(&region, &space, hp, 3, &mezz_format::KeyOrder::default()) {
                Ok(None) => assert!(off < 8, "commit word at {off}"),
                Err(e) => {
                    assert!(e.is_corruption(), "{e}");
                    detected += 1;
                }
                Ok(Some(r)) => {
                    let mut st = SearchStats::default();
                    for e in &entries {
                        match r.get(&e.uk, e.seq, 0, None, &mut st) {
                            Ok(g) => assert_eq!(
                                found_as_e(g.found, &e.uk).as_ref(),
                                Some(e),
                                "damage at {off}"
                            ),
                            Err(err) => {
                                assert!(err.is_corruption(), "{err}");
                                detected += 1;
                            }
                        }
                    }
                    if r.verify(0).is_err() {
                        detected += 1;
                    }
                }
            }
            region.claim(phys, 1).unwrap().write(0, &orig);
        }
        assert!(detected > len / 2, "{detected} detections for {len} bytes");
    }

    /// A power cut at every persist point of building a row that reuses the pages (and the
    /// header page, with its old commit word) of a dropped row and spans two page runs:
    /// after recovery each row is whole or absent, a row whose build returned is whole, and
    /// the recovered rows' hints still work.
    #[test]
    fn matrix_power_cut_at_every_persist_point_keeps_whole_row_or_none() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut seq = 0;
        let a_entries = gen_row(&mut rng, &mut seq, 300, 60);
        let c_entries = gen_row(&mut rng, &mut seq, 300, 5);
        let b_entries = gen_row(&mut rng, &mut seq, 300, 200);
        let dir = Path::new("db");
        // Returns the extent, header pages of A and B, and the persist count after the pool,
        // after A and after B.
        let run = |sim: &SimNvm| {
            let opts = RegionOptions::crash_sim(sim);
            let pool = Pool::create(dir, "POOL", 4096 + 32 * P as u64, DB_ID, &opts).unwrap();
            let extent = pool.alloc(32 * P as u64).unwrap();
            let mut points = vec![sim.persist_points()];
            let space = PageSpace::new(extent, P).unwrap();
            let region = pool.region();
            let a = build(region, &space, 1, &a_entries, None, 512).unwrap();
            points.push(sim.persist_points());
            let c = build(region, &space, 2, &c_entries, None, 512).unwrap();
            let hole = space.alloc(1).unwrap();
            space.release(c.pages()).unwrap();
            let prev = Some(HintSource {
                row: &a,
                consumed: 0,
            });
            let b = build(region, &space, 3, &b_entries, prev, 512).unwrap();
            points.push(sim.persist_points());
            assert_eq!(b.header_page(), c.header_page());
            assert!(b.pages().contains(&(hole[0] + 1)) && !b.pages().contains(&hole[0]));
            assert!(b.page_runs().len() >= 2);
            (extent, a.header_page(), b.header_page(), points)
        };
        let (extent, a_hp, b_hp, points) = run(&SimNvm::new());
        let total = points[2];
        assert!(total >= points[1] + 3, "{points:?}");
        let keeps = [
            (KeepLines::None, 0),
            (KeepLines::All, 0),
            (KeepLines::Random, 1),
            (KeepLines::Random, 2),
        ];
        let mut whole_b = 0;
        for n in 1..=total + 1 {
            for &(keep, seed) in &keeps {
                let sim = SimNvm::new();
                sim.arm_cut_after(n);
                let _ = run(&sim);
                let after = sim.power_cut(&PowerCut {
                    keep_unpersisted: keep,
                    seed: seed * 1000 + n,
                });
                let opts = RegionOptions::crash_sim(&after);
                let Ok(pool) = Pool::open(dir, "POOL", DB_ID, &opts, &[extent]) else {
                    assert!(n <= points[0], "cut {n}: pool lost");
                    continue;
                };
                let region = pool.region();
                let space = PageSpace::new(extent, P).unwrap();
                let a = RowTable::open(region, &space, a_hp, 1, &mezz_format::KeyOrder::default())
                    .unwrap()
                    .map(Arc::new);
                let b = RowTable::open(region, &space, b_hp, 3, &mezz_format::KeyOrder::default())
                    .unwrap()
                    .map(Arc::new);
                assert!(a.is_some() || n <= points[1], "cut {n}: row A lost");
                assert!(b.is_some() || n <= total, "cut {n}: row B lost");
                assert!(b.is_none() || n >= total, "cut {n}: row B committed early");
                let mut c = Container::for_space(&space, 0.6).unwrap();
                let mut live = Vec::new();
                if let Some(a) = &a {
                    check_row(a, &a_entries, 0);
                    live.extend_from_slice(a.pages());
                    c.push(Arc::clone(a)).unwrap();
                }
                if let Some(b) = &b {
                    whole_b += 1;
                    check_row(b, &b_entries, 0);
                    live.extend_from_slice(b.pages());
                    c.push(Arc::clone(b)).unwrap();
                }
                let rebuilt = PageSpace::from_live(extent, P, &live).unwrap();
                assert_eq!(rebuilt.free_count() as usize, 32 - live.len());
                let rows: Vec<&[E]> = [(&a, &a_entries), (&b, &b_entries)]
                    .into_iter()
                    .filter(|(r, _)| r.is_some())
                    .map(|(_, e)| e.as_slice())
                    .collect();
                let mut st = SearchStats::default();
                for e in a_entries.iter().chain(&b_entries) {
                    let want = model_get(rows.iter().copied(), &e.uk, u64::MAX);
                    for hints in [true, false] {
                        let got = c.get(&e.uk, u64::MAX, hints, &mut st).unwrap();
                        assert_eq!(found_as_e(got, &e.uk), want, "cut {n}");
                    }
                }
            }
        }
        assert!(whole_b > 0);
    }

    /// Rows built with hints: the container search gives the same answers with and without
    /// them, and with them it compares far fewer keys.
    #[test]
    fn matrix_hints_reduce_comparisons() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        let (region, space) = heap(2048, P);
        let mut c = Container::for_space(&space, 1.0).unwrap();
        let mut rows: Vec<Vec<E>> = Vec::new();
        let mut seq = 0;
        for id in 1..=12u64 {
            let mut es: Vec<E> = (0..3000)
                .map(|_| rng.random_range(0..50_000u32))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .map(|k| {
                    seq += 1;
                    E {
                        uk: format!("user{k:08}").into_bytes(),
                        seq,
                        kind: ValueKind::Value,
                        value: seq.to_le_bytes().to_vec(),
                    }
                })
                .collect();
            sort(&mut es);
            let row = build(&region, &space, id, &es, c.hint_source(), 4096).unwrap();
            c.push(Arc::new(row)).unwrap();
            rows.push(es);
        }
        let (mut with, mut without) = (SearchStats::default(), SearchStats::default());
        for _ in 0..3000 {
            let uk = format!("user{:08}", rng.random_range(0..50_000u32)).into_bytes();
            let want = model_get(rows.iter().map(Vec::as_slice), &uk, u64::MAX);
            let a = c.get(&uk, u64::MAX, true, &mut with).unwrap();
            let b = c.get(&uk, u64::MAX, false, &mut without).unwrap();
            assert_eq!(found_as_e(a, &uk), want);
            assert_eq!(found_as_e(b, &uk), want);
        }
        assert!(with.rows_hinted > 0);
        assert_eq!(without.rows_hinted, 0);
        assert!(
            with.comparisons * 2 < without.comparisons,
            "with hints {with:?}, without {without:?}"
        );
        // Seeks agree too.
        for _ in 0..200 {
            let uk = format!("user{:08}", rng.random_range(0..50_000u32)).into_bytes();
            let t = make_internal_key(&uk, MAX_SEQ, ValueKind::SEEK);
            let mut st = SearchStats::default();
            assert_eq!(
                c.seek(&t, true, &mut st).unwrap(),
                c.seek(&t, false, &mut st).unwrap()
            );
        }
    }

    #[test]
    fn matrix_switch_moves_no_data() {
        let (region, space) = heap(40, P);
        let mut c = Container::new(P, 20 * P as u64, DEFAULT_SWITCH_FRACTION).unwrap();
        let mut seq = 0;
        let mut row = |id: u64| {
            // About 5 KiB of data: two pages.
            let es: Vec<E> = (0..4)
                .map(|i| {
                    seq += 1;
                    E {
                        uk: vec![i],
                        seq,
                        kind: ValueKind::Value,
                        value: vec![0; 1200],
                    }
                })
                .collect();
            Arc::new(build(&region, &space, id, &es, None, 4096).unwrap())
        };
        // 60 % of 20 pages is 12 pages: six rows.
        let rows: Vec<Arc<RowTable>> = (1..=6).map(&mut row).collect();
        for r in &rows[..5] {
            c.push(Arc::clone(r)).unwrap();
            assert!(!c.maybe_switch());
        }
        c.push(Arc::clone(&rows[5])).unwrap();
        assert_eq!(c.receiver_bytes(), 12 * P as u64);
        assert!(c.maybe_switch());
        assert_eq!((c.compactor_rows(), c.receiver_rows()), (6, 0));
        assert_eq!(c.compactor_bytes(), 12 * P as u64);
        assert_eq!(c.receiver_bytes(), 0);
        for (state, r) in c.rows().zip(&rows) {
            assert!(Arc::ptr_eq(state.table, r) && state.compactor && state.consumed == 0);
        }
        // A non-empty compactor blocks the next switch, however full the receiver is.
        c.consume_through(&[0]).unwrap();
        let more: Vec<Arc<RowTable>> = (7..=12).map(&mut row).collect();
        for r in &more {
            c.push(Arc::clone(r)).unwrap();
        }
        assert!(c.receiver_bytes() >= 12 * P as u64);
        assert!(!c.maybe_switch());
        assert_eq!((c.compactor_rows(), c.receiver_rows()), (6, 6));
        // A column starting after live entries is refused; one from the first live key is
        // consumed.
        assert!(c.consume_column(&[2], &[3]).is_err());
        assert_eq!(c.rows().next().unwrap().consumed, 1);
        assert_eq!(c.consume_column(&[1], &[1]).unwrap().len(), 6);
        // Once the compactor is drained, the receiver switches.
        c.consume_through(&[0xff]).unwrap();
        let rel = c.take_releasable().unwrap();
        assert_eq!(rel.dropped_rows, (1..=6).collect::<Vec<_>>());
        assert!(c.maybe_switch());
        assert_eq!((c.compactor_rows(), c.receiver_rows()), (6, 0));
        // Out-of-order pushes are refused.
        assert!(c.push(Arc::clone(&rows[0])).is_err());
        assert!(Container::new(P, 100, 0.0).is_err());
        assert!(Container::new(P, 100, f64::NAN).is_err());
        assert!(Container::new(P, 100, 1.5).is_err());
    }

    /// A key-array entry with a valid checksum that names a slot holding another key (an
    /// encoder or copy bug, not media damage) is reported, not followed.
    #[test]
    fn matrix_entry_naming_another_slot_is_corruption() {
        let es: Vec<E> = (0..10u8)
            .map(|i| E {
                uk: vec![b'k', i],
                seq: u64::from(i) + 1,
                kind: ValueKind::Value,
                value: vec![i; 5],
            })
            .collect();
        let (region, space) = heap(4, P);
        let row = build(&region, &space, 4, &es, None, 4096).unwrap();
        let mut e = row.entry(3).unwrap();
        e.slot = 4;
        let at = row.header().key_array_off as usize + 3 * KEY_ENTRY_LEN;
        let phys = row.phys(at).unwrap();
        // A test on a private heap region; no other reader or writer.
        region
            .claim(phys, KEY_ENTRY_LEN)
            .unwrap()
            .write(0, &e.encode(4, 3));
        let mut st = SearchStats::default();
        let err = row.get(&es[3].uk, u64::MAX, 0, None, &mut st).unwrap_err();
        assert!(
            err.is_corruption() && err.to_string().contains("slot"),
            "{err}"
        );
        assert!(row.verify(0).is_err());
        assert!(row.key(3).is_err());
        assert_eq!(row.key(4).unwrap(), es[4].ikey());
    }

    /// Column consumption frees whole pages from the front of the key array and of the
    /// data, keeps the header page, and the live entries still read right after the
    /// released pages are overwritten.
    #[test]
    fn matrix_consumption_releases_whole_pages() {
        let (region, space) = heap(128, P);
        let entries: Vec<E> = (0..2000u32)
            .map(|i| E {
                uk: format!("key{i:06}").into_bytes(),
                seq: u64::from(i) + 1,
                kind: ValueKind::Value,
                value: vec![i as u8; 100],
            })
            .collect();
        let row = Arc::new(build(&region, &space, 1, &entries, None, 4096).unwrap());
        let all = row.pages().to_vec();
        assert!(all.len() > 60);
        let mut c = Container::for_space(&space, 0.1).unwrap();
        c.push(Arc::clone(&row)).unwrap();
        // Receiver rows are never consumed.
        assert!(c.consume_through(b"key001000").unwrap().is_empty());
        assert!(c.maybe_switch());
        let mut released: BTreeSet<u32> = BTreeSet::new();
        // One consumption point leaves the first live key-array entry across a page
        // boundary: the page holding its first half must stay.
        let ka = row.header().key_array_off as usize;
        let straddling = (502..1200u32)
            .find(|&c| {
                let at = ka + c as usize * KEY_ENTRY_LEN;
                at / P != (at + KEY_ENTRY_LEN - 1) / P
            })
            .unwrap();
        for end in [500u32, 501, straddling - 1, 1200, 1999] {
            let end_key = format!("key{end:06}").into_bytes();
            let upd = c.consume_through(&end_key).unwrap();
            let consumed = end + 1;
            assert_eq!(upd, vec![(1, consumed)]);
            let rel = c.take_releasable().unwrap();
            for p in &rel.pages {
                assert!(released.insert(*p), "page {p} released twice");
                let off = space.page_offset(*p).unwrap() as usize;
                // A test on a private heap region; the page is no longer read.
                region.claim(off, P).unwrap().write(0, &[0xa5; P]);
            }
            space.release(&rel.pages).unwrap();
            if consumed < 2000 {
                assert!(rel.dropped_rows.is_empty());
                assert!(!released.contains(&row.header_page()));
                let in_use: BTreeSet<u32> =
                    row.pages_in_use(consumed).unwrap().into_iter().collect();
                assert_eq!(c.held_pages(), in_use.iter().copied().collect::<Vec<_>>());
                assert!(in_use.is_disjoint(&released));
                assert_eq!(in_use.len() + released.len(), all.len());
                check_row(&row, &entries, consumed);
                let mut st = SearchStats::default();
                let k = &entries[consumed as usize];
                assert!(c.get(&k.uk, u64::MAX, true, &mut st).unwrap().is_some());
                let gone = &entries[consumed as usize - 1];
                assert_eq!(c.get(&gone.uk, u64::MAX, true, &mut st).unwrap(), None);
            } else {
                assert_eq!(rel.dropped_rows, vec![1]);
                assert!(c.is_empty());
                assert_eq!(c.compactor_rows(), 0);
            }
        }
        assert_eq!(released.len(), all.len());
        assert_eq!(space.free_count(), 128);
        // Only a prefix of pages is freed early: the first partial consumption kept the
        // header page and the tail.
        assert!(row.pages_in_use(0).unwrap() == all);
        assert!(row.pages_in_use(2000).unwrap().is_empty());
    }

    /// The model of a container: every live entry by (user key, newest first), with its row.
    type Model = BTreeMap<(Vec<u8>, Reverse<u64>), (u64, ValueKind, Vec<u8>)>;

    /// A seeded random walk of flushes, column consumption, page release and reuse, and
    /// recovery, comparing every lookup (with and without hints) and seek with a `BTreeMap`
    /// model.
    #[test]
    fn matrix_container_matches_model_randomized() {
        for seed in 0..4u64 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let (region, space) = heap(400, P);
            let mut c = Container::for_space(&space, 0.08).unwrap();
            let mut model = Model::new();
            let (mut next_id, mut seq) = (1u64, 0u64);
            let keys = 60;
            for step in 0..150 {
                match rng.random_range(0..10) {
                    0..=3 => {
                        let es = gen_row(&mut rng, &mut seq, keys, 120);
                        let bs = [64, 300, 4096][rng.random_range(0..3)];
                        let before = space.free_count();
                        match build(&region, &space, next_id, &es, c.hint_source(), bs) {
                            Ok(r) => {
                                c.push(Arc::new(r)).unwrap();
                                for e in es {
                                    model
                                        .insert((e.uk, Reverse(e.seq)), (next_id, e.kind, e.value));
                                }
                            }
                            Err(e) => {
                                assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
                                assert_eq!(space.free_count(), before);
                            }
                        }
                        next_id += 1;
                        c.maybe_switch();
                    }
                    4..=6 if c.compactor_rows() > 0 => {
                        let end = if rng.random_bool(0.1) {
                            vec![0xff; 40]
                        } else {
                            key(rng.random_range(0..keys))
                        };
                        let compactor: BTreeSet<u64> = c
                            .rows()
                            .filter(|r| r.compactor)
                            .map(|r| r.table.id())
                            .collect();
                        c.consume_through(&end).unwrap();
                        model.retain(|(uk, _), (row, _, _)| *uk > end || !compactor.contains(row));
                        let rel = c.take_releasable().unwrap();
                        for id in &rel.dropped_rows {
                            assert!(!model.values().any(|(row, _, _)| row == id));
                        }
                        for p in &rel.pages {
                            let off = space.page_offset(*p).unwrap() as usize;
                            // A private heap region; released pages are not read.
                            region.claim(off, P).unwrap().write(0, &[0x5a; P]);
                        }
                        space.release(&rel.pages).unwrap();
                    }
                    _ => {}
                }
                check_container(&c, &model, &mut rng, seq, keys, step);
            }
            // Recovery: the space from the held pages, the rows reopened from their header
            // pages with their consumed counts and roles.
            let live = c.held_pages();
            let space2 = PageSpace::from_live(space.extent(), P, &live).unwrap();
            assert_eq!(space2.free_count(), space.free_count());
            let mut c2 = Container::for_space(&space2, 0.08).unwrap();
            for st in c.rows() {
                let r = RowTable::open(
                    &region,
                    &space2,
                    st.table.header_page(),
                    st.table.id(),
                    &mezz_format::KeyOrder::default(),
                )
                .unwrap()
                .unwrap();
                c2.restore(Arc::new(r), st.consumed, st.compactor).unwrap();
            }
            assert_eq!(c2.held_pages(), live);
            assert_eq!(c2.compactor_rows(), c.compactor_rows());
            check_container(&c2, &model, &mut rng, seq, keys, 999);
        }
    }

    fn check_container(
        c: &Container,
        model: &Model,
        rng: &mut Xoshiro256PlusPlus,
        seq: u64,
        keys: usize,
        step: usize,
    ) {
        let rows_in_model: BTreeSet<u64> = model.values().map(|v| v.0).collect();
        let rows_in_c: BTreeSet<u64> = c.rows().map(|r| r.table.id()).collect();
        assert_eq!(rows_in_c, rows_in_model, "step {step}");
        for st in c.rows() {
            let n = model.values().filter(|v| v.0 == st.table.id()).count();
            assert_eq!(st.table.verify(st.consumed).unwrap(), n as u64);
        }
        let mut stats = SearchStats::default();
        for _ in 0..40 {
            let uk = if rng.random_bool(0.9) {
                key(rng.random_range(0..keys))
            } else {
                b"absent".to_vec()
            };
            let snap = rng.random_range(0..=seq + 1);
            // The newest version at or below `snap`: the first model entry from
            // (uk, snap) on, if it is still `uk`.
            let want = model
                .range((uk.clone(), Reverse(snap))..)
                .next()
                .filter(|((k, _), _)| *k == uk)
                .map(|((k, Reverse(s)), (_, kind, v))| E {
                    uk: k.clone(),
                    seq: *s,
                    kind: *kind,
                    value: v.clone(),
                });
            for hints in [true, false] {
                let got = c.get(&uk, snap, hints, &mut stats).unwrap();
                assert_eq!(found_as_e(got, &uk), want, "step {step} hints {hints}");
            }
            let t = make_internal_key(&uk, snap.min(MAX_SEQ), ValueKind::SEEK);
            let brute: Vec<RowPosition> = c
                .rows()
                .rev()
                .map(|st| RowPosition {
                    row_id: st.table.id(),
                    pos: st.consumed
                        + model
                            .range(..(uk.clone(), Reverse(snap.min(MAX_SEQ))))
                            .filter(|(_, v)| v.0 == st.table.id())
                            .count() as u32,
                })
                .collect();
            assert_eq!(c.seek(&t, true, &mut stats).unwrap(), brute, "step {step}");
            assert_eq!(c.seek(&t, false, &mut stats).unwrap(), brute, "step {step}");
            // Row cursors chained the same way (as a database iterator seeks its rows) land
            // on the same positions, forward and backward.
            let mut next: Option<(u64, u32, HintWindow)> = None;
            for (st, b) in c.rows().rev().zip(&brute) {
                let row = &st.table;
                let n = row.num_entries();
                let w = next
                    .take()
                    .filter(|(id, entries, _)| *id == row.id() && *entries == n)
                    .map(|x| x.2);
                let mut it = row.iter(st.consumed);
                let pos = it.seek_within(&t, w, &mut stats).unwrap();
                assert_eq!(pos, b.pos, "step {step}");
                assert_eq!(it.valid(), pos < n, "step {step}");
                if it.valid() {
                    assert_eq!(it.position(), pos);
                    assert!(compare_internal_keys(it.key(), &t) != Ordering::Less);
                }
                assert_eq!(it.seek_for_prev_within(&t, w, &mut stats), Some(pos));
                if it.valid() {
                    assert!(
                        it.position() + 1 == pos || it.position() == pos,
                        "step {step}"
                    );
                    assert!(compare_internal_keys(it.key(), &t) != Ordering::Greater);
                } else {
                    assert_eq!(pos, st.consumed.min(n), "step {step}");
                }
                if row.prev_row_id() != NO_PREV_ROW {
                    let w = row.next_window(pos, st.consumed).unwrap();
                    next = Some((row.prev_row_id(), row.header().prev_entry_count, w));
                }
            }
        }
    }

    #[test]
    fn matrix_types_are_shareable_as_documented() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<PageSpace>();
        send_sync::<RowTable>();
        send_sync::<Container>();
        send::<RowIter>();
    }

    #[test]
    fn matrix_restore_checks_order_and_roles() {
        let (region, space) = heap(16, P);
        let es = |base: u64| {
            vec![E {
                uk: b"k".to_vec(),
                seq: base,
                kind: ValueKind::Value,
                value: b"v".to_vec(),
            }]
        };
        let r1 = Arc::new(build(&region, &space, 1, &es(1), None, 4096).unwrap());
        let r2 = Arc::new(build(&region, &space, 2, &es(2), None, 4096).unwrap());
        let mut c = Container::for_space(&space, 0.6).unwrap();
        assert!(c.restore(Arc::clone(&r1), 2, true).is_err());
        c.restore(Arc::clone(&r1), 0, false).unwrap();
        assert!(c.restore(Arc::clone(&r2), 0, true).is_err());
        assert!(c.restore(Arc::clone(&r2), 1, false).is_err());
        c.restore(Arc::clone(&r2), 0, false).unwrap();
        assert!(c.restore(Arc::clone(&r1), 0, false).is_err());
        assert_eq!(c.receiver_rows(), 2);
    }
}
