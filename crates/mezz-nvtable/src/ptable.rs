//! Persistent tables in NVM (TLSM): persistent buffers of KeySet blocks, and immutable
//! skip lists whose nodes point at entries in such blocks.
//!
//! Owns:
//! - [`write_buffer`] / [`check_buffer`]: a *persistent buffer*, one extent holding a
//!   header and a data section written by one bulk copy. The data section is exactly the
//!   data-block section of an SST (`contents | pad | 8-byte trailer` per block, see
//!   `docs/formats/sst.md`), so a buffer moves to an SST file as a copy, not a re-encode.
//! - [`PTableBuilder`]: writes a *table index* into an extent: a header (with the ids of
//!   the tables a compaction read, so an interrupted one can resume), then skip-list nodes
//!   appended in key order. Each node holds an [`EntryRef`] (which block, which slot, the
//!   entry's checksum) and its tower of next-links; with `add_inline` the entry itself is
//!   written as a one-entry block just before its node (TLSM's "ps" method). Progress is
//!   made durable by checkpoints (persist the new bytes and the links they changed, fence,
//!   then advance the `committed_end` word); `finish` appends a bloom filter and a footer
//!   and only then sets the `footer_at` word, so a table is complete exactly when that
//!   word is set. [`PTableBuilder::resume`] reopens an incomplete table after a crash.
//! - [`PTable`]: a validated reader of a complete table (search, iteration, verify), and
//!   [`PTableIter`], its [`InternalIterator`]. A reader keeps a DRAM copy of every 16th key
//!   (its fences, built by its first search), so that a search walks only the two lowest
//!   levels in NVM.
//!
//! Format: `docs/formats/nvm-table.md`. Node heights are a function of the node's position
//! (a perfect skip list with branching 4), so the size of a table of `n` entries is known
//! before it is written ([`index_len`]).
//!
//! Invariants:
//! - A reader only resolves references that lie inside the extents it was given (the
//!   table's own extent and the buffers it references); every entry is checked against
//!   its node's checksum the first time a reader reads it, so a damaged entry is reported
//!   as `Corruption`, never returned as data. Entries of up to [`ALWAYS_CHECK_BYTES`] are
//!   checked at every read; the reader remembers the larger entries it checked
//!   (one bit per 8 bytes of node area) and trusts them afterwards, as a block cache
//!   trusts the blocks it checked when it read them: the bytes of a complete table and of
//!   the buffers it references never change while a reader exists (below). `verify`
//!   checks every entry again. Links are bounded by the committed node area.
//! - A writer owns its extent (claimed in the region) until it is dropped; readers are only
//!   built over complete tables (or, in recovery, incomplete ones nobody writes), so no
//!   byte is written while a reader can see it. The engine frees an extent only once no
//!   table that references it can be reached.
//! - Every byte access goes through the safe extent API of `mezz-pmem`
//!   ([`mezz_pmem::extent`]): writers write through their claim
//!   ([`mezz_pmem::ExtentWriter`]), readers borrow bytes in place
//!   ([`mezz_pmem::Region::published`]), which the two rules above keep published.
//!
//! Thread-safety: a builder belongs to one thread; [`PTable`] is `Send + Sync` and its
//! methods take `&self`; iterators are single-owner.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

use mezz_format::block::{IndexKind, KEYSET_TRAILER_LEN, KeySetRef, KeySetTrailer, KeySetWriter};
use mezz_format::checksum::{crc32c, crc32c_extend, mask};
use mezz_format::filter::{BloomBuilder, BloomFilter};
use mezz_format::iter::{EntryRef, InternalIterator};
use mezz_format::sst::{BLOCK_TRAILER_LEN, BLOCK_TYPE_RAW, append_block_frame, check_block_frame};
use mezz_format::{Error, KeyOrder, Result};

use mezz_pmem::hint::prefetch;
use mezz_pmem::{Extent, ExtentWriter, Media, Region};

/// Magic of a persistent buffer header.
pub const BUFFER_MAGIC: u64 = u64::from_le_bytes(*b"MZPBUF\0\x01");
/// Magic of a table index header.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"MZPTBL\0\x01");
/// Magic of a table footer.
pub const FOOTER_MAGIC: u64 = u64::from_le_bytes(*b"MZPTEND\x01");
/// Format version of buffers.
pub const BUFFER_VERSION: u32 = 1;
/// Format version of table indexes written: 2 (nodes hold 8-byte fingerprints). Version 1
/// (4-byte fingerprints) is still read and resumed ([`Layout`]).
pub const TABLE_VERSION: u32 = 2;
/// Bytes of a buffer header; the data section starts right after it.
pub const BUFFER_HEADER_LEN: u64 = 64;
/// Bytes of a table header (static part, state words, reserved).
pub const TABLE_HEADER_LEN: usize = 128;
/// Tallest tower.
pub const MAX_HEIGHT: usize = 12;
/// Offset of the `committed_end` word in a table header.
const COMMITTED_AT: usize = 64;
/// Offset of the `footer_at` word in a table header.
const FOOTER_AT: usize = 72;
/// The node layout of one table index version: where the tower starts and how wide the
/// fingerprint is.
///
/// Version 2 nodes hold 8 bytes of the key after the table's shared prefix, version 1
/// nodes 4. With 4 bytes, keys that differ only further on (16-byte decimal keys past the
/// prefix of a table of a few thousand neighbours) tie, and every tie cost a search a read
/// of the node's key in NVM: 28 % of a random read's time at TLSM's full shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    wide: bool,
}

impl Layout {
    /// The layout of new tables.
    const CURRENT: Layout = Layout { wide: true };

    /// The layout of a table index of `version` (1 or 2).
    fn of(version: u32) -> Layout {
        Layout { wide: version >= 2 }
    }

    fn version(self) -> u32 {
        if self.wide { 2 } else { 1 }
    }

    /// Bytes of a node before its tower.
    fn fixed(self) -> usize {
        if self.wide { 40 } else { 36 }
    }

    /// Bytes of node `i` (1-based; 0 is the head).
    fn node_len(self, i: u64) -> usize {
        round8(self.fixed() + 4 * height_of(i))
    }

    /// The sentinel head node sits at the start of the node area; its "index" is 0, which
    /// `height_of` maps to the tallest tower.
    fn head_len(self) -> usize {
        self.node_len(0)
    }

    /// Offset of node `n`'s level-`l` link.
    fn link(self, n: usize, l: usize) -> usize {
        n + self.fixed() + 4 * l
    }

    /// A [`fingerprint`] as this layout stores it (version 1: its first 4 bytes).
    fn narrow(self, fp: u64) -> u64 {
        if self.wide { fp } else { fp >> 32 }
    }

    /// The fingerprint stored in `node` (its fixed part).
    fn node_fp(self, node: &[u8]) -> Option<u64> {
        if self.wide {
            get_u64(node, 32)
        } else {
            get_u32(node, 32).map(u64::from)
        }
    }

    fn put_fp(self, node: &mut [u8], fp: u64) {
        if self.wide {
            node[32..40].copy_from_slice(&fp.to_le_bytes());
        } else {
            node[32..36].copy_from_slice(&(self.narrow(fp) as u32).to_le_bytes());
        }
    }
}
/// Bytes of the footer before the filter.
const FOOTER_LEN: usize = 40;
/// The skip-list level whose nodes a table keeps in DRAM ([`Fences`]): every 16th node
/// (heights are a function of position with branching 4), so a search walks at most two
/// levels in NVM, and the DRAM copy holds 1/16 of the table's keys.
const FENCE_LEVEL: usize = 2;
/// Upper bound of the inputs a header records.
pub const MAX_INPUTS: usize = 4096;
/// Bytes a search reports to the cost hooks per node it visits (one line: the fixed part
/// and the first links of the tower).
const NODE_VISIT_BYTES: usize = 64;

fn corrupt(off: u64, what: impl Into<String>) -> Error {
    Error::corruption(off, what.into())
}

fn round8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// Height of the `i`-th node (1-based): a perfect skip list with branching factor 4.
#[must_use]
pub fn height_of(i: u64) -> usize {
    let h = 1 + (i.trailing_zeros() / 2) as usize;
    h.min(MAX_HEIGHT)
}

/// Bytes of node `i` (1-based) of a new table.
#[must_use]
pub fn node_len(i: u64) -> usize {
    Layout::CURRENT.node_len(i)
}

/// Bytes of the one-entry block (contents, pad, trailer) `add_inline` writes.
#[must_use]
pub fn inline_block_len(key_len: usize, value_len: usize) -> usize {
    // key area + value area + one entry + KeySet trailer, then the block trailer.
    round8(key_len) + round8(value_len) + 16 + 16 + BLOCK_TRAILER_LEN
}

/// Bytes of the filter `finish` writes for `n_keys` keys (0 bits = no filter).
#[must_use]
pub fn filter_len(n_keys: u64, bloom_bits_per_key: u32) -> usize {
    if bloom_bits_per_key == 0 {
        return 0;
    }
    let bits = n_keys.saturating_mul(u64::from(bloom_bits_per_key)).max(64);
    round8(usize::try_from(bits.div_ceil(64) * 8).unwrap_or(usize::MAX / 4) + 8)
}

/// Bytes a table index of `n` entries needs, with `inputs` recorded inputs and a filter
/// of `bloom_bits_per_key` (0 = none), not counting inline blocks.
#[must_use]
pub fn index_len(n: u64, inputs: usize, bloom_bits_per_key: u32) -> u64 {
    let nodes: u64 = (1..=n).map(|i| node_len(i) as u64).sum();
    (TABLE_HEADER_LEN + 8 * inputs + Layout::CURRENT.head_len() + FOOTER_LEN) as u64
        + nodes
        + filter_len(n, bloom_bits_per_key) as u64
}

/// The 8 bytes of `user_key` after its first `prefix_len` bytes, zero padded, as a
/// big-endian number: unequal fingerprints order two keys that share the prefix. (Version
/// 1 nodes hold its first 4 bytes, which order keys the same way.)
#[must_use]
pub fn fingerprint(user_key: &[u8], prefix_len: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(rest) = user_key.get(prefix_len..) {
        let n = rest.len().min(8);
        b[..n].copy_from_slice(&rest[..n]);
    }
    u64::from_be_bytes(b)
}

/// Where `key` sits in the block `r` points at, when `key` is that block's bytes in
/// `region` (a [`PTableIter`] shows its keys in place): a node for it then needs no read
/// of the block to find its key ([`PTableBuilder::add_ref_at`]). `None` for a key seen
/// anywhere else (a copy), which [`PTableBuilder::add_ref`] finds by reading the block.
#[must_use]
pub fn key_offset_in_place(region: &Region, key: &[u8], r: EntryRef) -> Option<u32> {
    let start = (region.base().as_ptr() as usize).checked_add(usize::try_from(r.block).ok()?)?;
    let end = start.checked_add(r.block_len as usize)?;
    let k = key.as_ptr() as usize;
    (k >= start && k.checked_add(key.len())? <= end)
        .then(|| u32::try_from(k - start).ok())
        .flatten()
}

/// The checksum nodes store for an entry.
#[must_use]
pub fn entry_crc(key: &[u8], value: &[u8]) -> u32 {
    crc32c_extend(crc32c(key), value)
}

fn check_extent(region: &Region, extent: Extent, min: u64, what: &str) -> Result<(usize, usize)> {
    let bad = |why: &str| {
        Error::InvalidArgument(format!(
            "NVM {what} extent [{}, +{}): {why}",
            extent.offset, extent.len
        ))
    };
    let off = usize::try_from(extent.offset).map_err(|_| bad("offset too large"))?;
    let len = usize::try_from(extent.len).map_err(|_| bad("length too large"))?;
    if !off.is_multiple_of(64) {
        return Err(bad("offset not 64-byte aligned"));
    }
    if extent.len < min {
        return Err(bad("too small"));
    }
    if off.checked_add(len).is_none_or(|end| end > region.len()) {
        return Err(bad("outside the region"));
    }
    Ok((off, len))
}

/// The bytes `[off, off + len)` of `region`, borrowed in place. Callers check the range
/// against the region (the borrow panics outside it); the bytes are published in the sense
/// of [`Region::published`]: by the module's protocol no writer touches a table or buffer
/// once readers may see it, and `resume` reads its own claimed extent before it writes.
fn region_bytes(region: &Region, off: usize, len: usize) -> &[u8] {
    region.published(off, len)
}

/// Ranges closer than this to each other are one access for the cost hooks (the same or
/// the next internal unit of an Optane module).
const MERGE_GAP: usize = 256;

/// Reports the byte ranges (addresses `[start, end)`) one read touched to the cost hooks:
/// ranges within [`MERGE_GAP`] of each other are one access.
fn report_ranges(region: &Region, ranges: &mut [(usize, usize)]) {
    ranges.sort_unstable();
    let mut cur: Option<(usize, usize)> = None;
    for &(a, b) in ranges.iter() {
        cur = match cur {
            Some((s, e)) if a <= e.saturating_add(MERGE_GAP) => Some((s, e.max(b))),
            Some((s, e)) => {
                region.on_read_at(s, e - s);
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((s, e)) = cur {
        region.on_read_at(s, e - s);
    }
}

/// Reports reading entry `(k, v)` of the block `r` points at: the block's slot table at
/// its end, the key and the value, as one access or several (see [`report_ranges`]).
fn report_entry(region: &Region, r: EntryRef, k: &[u8], v: &[u8]) {
    let end = region.base().as_ptr() as usize + (r.block + u64::from(r.block_len)) as usize;
    let span = |b: &[u8]| (b.as_ptr() as usize, b.as_ptr() as usize + b.len());
    let mut ranges = [
        span(k),
        span(v),
        (end.saturating_sub(NODE_VISIT_BYTES), end),
    ];
    report_ranges(region, &mut ranges);
}

fn io_err(region: &Region, e: std::io::Error) -> Error {
    let err = Error::from(e);
    match region.path() {
        Some(p) => err.in_file(p),
        None => err,
    }
}

fn persist_fence(region: &Region, off: usize, len: usize) -> Result<()> {
    region
        .persist(off, len)
        .and_then(|()| region.fence())
        .map_err(|e| io_err(region, e))
}

fn get_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn get_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

// ---------------------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------------------

/// Writes a persistent buffer into `extent`: `data` (a sequence of block frames) with one
/// bulk copy, persisted and fenced, then the header (the commit). Returns the region
/// offset where the data section starts (block references point there and beyond).
///
/// # Errors
/// `InvalidArgument` for an extent that is too small, misaligned or in use; `Io` from
/// persisting.
pub fn write_buffer(region: &Arc<Region>, extent: Extent, id: u64, data: &[u8]) -> Result<u64> {
    let need = BUFFER_HEADER_LEN + data.len() as u64;
    let (off, len) = check_extent(region, extent, need, "buffer")?;
    // No reader is given the buffer before this function returns.
    let mut w = region.claim(off, len)?;
    let data_at = off + BUFFER_HEADER_LEN as usize;
    w.write(BUFFER_HEADER_LEN as usize, data);
    region.on_write(data.len());
    persist_fence(region, data_at, data.len())?;
    let mut h = [0u8; BUFFER_HEADER_LEN as usize];
    h[0..8].copy_from_slice(&BUFFER_MAGIC.to_le_bytes());
    h[8..12].copy_from_slice(&BUFFER_VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&id.to_le_bytes());
    h[24..32].copy_from_slice(&(data.len() as u64).to_le_bytes());
    let crc = mask(crc32c(&h[..60]));
    h[60..64].copy_from_slice(&crc.to_le_bytes());
    w.write(0, &h);
    region.on_write(h.len());
    persist_fence(region, off, h.len())?;
    Ok(data_at as u64)
}

/// What a buffer header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferInfo {
    /// The buffer's id.
    pub id: u64,
    /// Region offset of the data section.
    pub data_at: u64,
    /// Bytes of the data section.
    pub data_len: u64,
}

/// Checks a buffer's header. (Its blocks are checked through the tables that reference
/// them: see [`PTable::verify`].)
///
/// # Errors
/// `Corruption` naming the region offset of the damage.
pub fn check_buffer(region: &Region, extent: Extent) -> Result<BufferInfo> {
    let (off, len) = check_extent(region, extent, BUFFER_HEADER_LEN, "buffer")?;
    let h = region_bytes(region, off, BUFFER_HEADER_LEN as usize);
    region.on_read(h.len());
    let base = off as u64;
    if get_u64(h, 0) != Some(BUFFER_MAGIC) {
        return Err(corrupt(base, "NVM buffer: bad magic (never committed?)"));
    }
    if get_u32(h, 60).map(mezz_format::checksum::unmask) != Some(crc32c(&h[..60])) {
        return Err(corrupt(base, "NVM buffer: header checksum mismatch"));
    }
    let id = get_u64(h, 16).unwrap_or(0);
    let data_len = get_u64(h, 24).unwrap_or(u64::MAX);
    if data_len > (len as u64).saturating_sub(BUFFER_HEADER_LEN) {
        return Err(corrupt(
            base + 24,
            "NVM buffer: data longer than its extent",
        ));
    }
    let info = BufferInfo {
        id,
        data_at: base + BUFFER_HEADER_LEN,
        data_len,
    };
    Ok(info)
}

// ---------------------------------------------------------------------------------------
// Table header
// ---------------------------------------------------------------------------------------

/// What a table's header records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PTableHeader {
    /// The table's id.
    pub id: u64,
    /// The level it was written for.
    pub level: u32,
    /// 0 = written from a memtable or a rewrite (discarded if incomplete after a crash),
    /// 1 = a compaction output (resumed if incomplete).
    pub kind: u32,
    /// Ids of the tables the compaction that writes it reads (empty for kind 0).
    pub inputs: Vec<u64>,
    /// Length of the user-key prefix every key of the table shares; nodes hold the next 8
    /// bytes of their key ([`fingerprint`]; 4 in version 1 tables), so a search compares
    /// most keys without reading them.
    pub prefix_len: u32,
}

impl PTableHeader {
    fn encode(&self, extent_len: u64, layout: Layout) -> Vec<u8> {
        let mut h = vec![0u8; TABLE_HEADER_LEN + 8 * self.inputs.len()];
        h[0..8].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
        h[8..12].copy_from_slice(&layout.version().to_le_bytes());
        h[16..24].copy_from_slice(&self.id.to_le_bytes());
        h[24..28].copy_from_slice(&self.level.to_le_bytes());
        h[28..32].copy_from_slice(&self.kind.to_le_bytes());
        h[32..40].copy_from_slice(&extent_len.to_le_bytes());
        h[40..44].copy_from_slice(&(self.inputs.len() as u32).to_le_bytes());
        h[44..48].copy_from_slice(&self.prefix_len.to_le_bytes());
        for (i, id) in self.inputs.iter().enumerate() {
            let at = TABLE_HEADER_LEN + 8 * i;
            h[at..at + 8].copy_from_slice(&id.to_le_bytes());
        }
        let mut crc = crc32c(&h[..60]);
        crc = crc32c_extend(crc, &h[TABLE_HEADER_LEN..]);
        h[60..64].copy_from_slice(&mask(crc).to_le_bytes());
        h
    }

    /// The header, the offset where its head node starts, and its nodes' layout.
    fn decode(ext: &[u8], base: u64) -> Result<(PTableHeader, usize, Layout)> {
        if ext.len() < TABLE_HEADER_LEN {
            return Err(corrupt(base, "NVM table: extent shorter than its header"));
        }
        if get_u64(ext, 0) != Some(TABLE_MAGIC) {
            return Err(corrupt(base, "NVM table: bad magic"));
        }
        let version = get_u32(ext, 8).unwrap_or(0);
        if version > TABLE_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "NVM table",
                found: version,
                supported: TABLE_VERSION,
            });
        }
        if version == 0 {
            return Err(corrupt(base + 8, "NVM table: bad version"));
        }
        let n = get_u32(ext, 40).unwrap_or(u32::MAX) as usize;
        if n > MAX_INPUTS || TABLE_HEADER_LEN + 8 * n > ext.len() {
            return Err(corrupt(base + 40, "NVM table: bad input count"));
        }
        let inputs_bytes = &ext[TABLE_HEADER_LEN..TABLE_HEADER_LEN + 8 * n];
        let crc = crc32c_extend(crc32c(&ext[..60]), inputs_bytes);
        if get_u32(ext, 60).map(mezz_format::checksum::unmask) != Some(crc) {
            return Err(corrupt(base, "NVM table: header checksum mismatch"));
        }
        if get_u64(ext, 32) != Some(ext.len() as u64) {
            return Err(corrupt(
                base + 32,
                "NVM table: header names another extent length",
            ));
        }
        let h = PTableHeader {
            id: get_u64(ext, 16).unwrap_or(0),
            level: get_u32(ext, 24).unwrap_or(0),
            kind: get_u32(ext, 28).unwrap_or(0),
            inputs: inputs_bytes
                .chunks_exact(8)
                .filter_map(|c| get_u64(c, 0))
                .collect(),
            prefix_len: get_u32(ext, 44).unwrap_or(0),
        };
        Ok((h, TABLE_HEADER_LEN + 8 * n, Layout::of(version)))
    }
}

/// Reads and checks the header of the table index in `extent` (complete or not).
///
/// # Errors
/// `Corruption` for a damaged header; `InvalidArgument` for an extent outside the region.
pub fn read_header(region: &Region, extent: Extent) -> Result<PTableHeader> {
    let (off, len) = check_extent(region, extent, TABLE_HEADER_LEN as u64, "table")?;
    let ext = region_bytes(region, off, len);
    let (header, head, _) = PTableHeader::decode(ext, off as u64)?;
    region.on_read(head);
    Ok(header)
}

// ---------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------

/// Writes one table index (see the module documentation).
#[derive(Debug)]
pub struct PTableBuilder {
    region: Arc<Region>,
    off: usize,
    len: usize,
    /// Next write position (in the extent).
    end: usize,
    /// Durable node area end (in the extent).
    committed: usize,
    /// Per level, the last node with a tower that tall (the head initially).
    prev: [usize; MAX_HEIGHT],
    /// Link words written since the last checkpoint, below `committed`.
    dirty_links: Vec<usize>,
    entries: u64,
    bloom: Option<BloomBuilder>,
    bloom_bits: u32,
    last_key: Vec<u8>,
    /// The shared user-key prefix (taken from the first key).
    prefix: Vec<u8>,
    prefix_len: usize,
    /// The claimed extent, written only through this builder.
    ext: ExtentWriter,
    order: KeyOrder,
    /// The node layout of the table's version (new tables: the current one).
    layout: Layout,
}

impl PTableBuilder {
    /// Starts a table in `extent` of `region`: writes the header and an empty head node,
    /// durable when this returns. `bloom_bits_per_key` = 0 builds no filter.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad extent or one in use; `Io` from persisting.
    pub fn create(
        region: Arc<Region>,
        extent: Extent,
        header: &PTableHeader,
        bloom_bits_per_key: u32,
        order: &KeyOrder,
    ) -> Result<PTableBuilder> {
        Self::create_in(
            region,
            extent,
            header,
            bloom_bits_per_key,
            order,
            Layout::CURRENT,
        )
    }

    fn create_in(
        region: Arc<Region>,
        extent: Extent,
        header: &PTableHeader,
        bloom_bits_per_key: u32,
        order: &KeyOrder,
        layout: Layout,
    ) -> Result<PTableBuilder> {
        if header.inputs.len() > MAX_INPUTS {
            return Err(Error::InvalidArgument(format!(
                "an NVM table records at most {MAX_INPUTS} inputs"
            )));
        }
        let h = header.encode(extent.len, layout);
        let head = h.len();
        let head_len = layout.head_len();
        let (off, len) = check_extent(&region, extent, (head + head_len) as u64, "table")?;
        let mut ext = region.claim(off, len)?;
        let mut bytes = h;
        bytes.resize(head + head_len, 0);
        ext.write(0, &bytes);
        region.on_write(bytes.len());
        persist_fence(&region, off, bytes.len())?;
        Ok(PTableBuilder {
            region,
            off,
            len,
            end: head + head_len,
            committed: head + head_len,
            prev: [head; MAX_HEIGHT],
            dirty_links: Vec::new(),
            entries: 0,
            bloom: (bloom_bits_per_key > 0).then(|| BloomBuilder::new(bloom_bits_per_key)),
            bloom_bits: bloom_bits_per_key,
            last_key: Vec::new(),
            prefix: Vec::new(),
            prefix_len: header.prefix_len as usize,
            ext,
            order: order.clone(),
            layout,
        })
    }

    /// Reopens an incomplete table after a crash: keeps the nodes below its durable
    /// `committed_end`, unlinks everything past them, and continues after them. Returns the
    /// builder and the header; [`PTableBuilder::last_key`] is the last entry kept.
    /// `data`: the extents the table's references may point into (as for [`PTable::open`]).
    ///
    /// # Errors
    /// `Corruption` when the kept part is damaged; `InvalidArgument` when the table is
    /// complete or its extent is in use.
    pub fn resume(
        region: Arc<Region>,
        extent: Extent,
        data: &[Extent],
        bloom_bits_per_key: u32,
        order: &KeyOrder,
    ) -> Result<(PTableBuilder, PTableHeader)> {
        let (off, len) = check_extent(&region, extent, TABLE_HEADER_LEN as u64, "table")?;
        let claim = region.claim(off, len)?;
        let ext = claim.bytes(0, len);
        let base = off as u64;
        let (header, head, layout) = PTableHeader::decode(ext, base)?;
        region.on_read(head);
        if get_u64(ext, FOOTER_AT) != Some(0) {
            return Err(Error::InvalidArgument(format!(
                "NVM table {} is complete; nothing to resume",
                header.id
            )));
        }
        let committed = get_u64(ext, COMMITTED_AT).unwrap_or(0) as usize;
        let first = head + layout.head_len();
        let committed = if committed < first || committed > len {
            first
        } else {
            committed
        };
        // Walk the kept nodes in order (inline blocks sit just before their nodes, so walk
        // level 0 from the head); remember the last node of each height.
        let reader = Walker {
            region: &region,
            off,
            node_end: committed,
            data: allowed_ranges(extent, data),
            layout,
        };
        let mut prev = [head; MAX_HEIGHT];
        let mut bloom = (bloom_bits_per_key > 0).then(|| BloomBuilder::new(bloom_bits_per_key));
        let mut last_key = Vec::new();
        let mut prefix = Vec::new();
        let mut entries = 0u64;
        let mut x = reader.next(head, 0)?;
        let mut last_end = first;
        while let Some(n) = x {
            entries += 1;
            let h = reader.height(n)?;
            if h != height_of(entries) {
                return Err(corrupt(
                    base + n as u64,
                    "NVM table: node height out of place",
                ));
            }
            for p in prev.iter_mut().take(h) {
                *p = n;
            }
            let (k, v, crc) = reader.entry(n)?;
            region.on_read(layout.node_len(entries));
            report_entry(&region, reader.entry_ref(n)?, k, v);
            if entry_crc(k, v) != crc {
                return Err(corrupt(
                    base + n as u64,
                    "NVM table: entry checksum mismatch",
                ));
            }
            if entries == 1 {
                let uk = mezz_format::ikey::user_key(k);
                prefix = uk.get(..header.prefix_len as usize).unwrap_or(uk).to_vec();
            }
            if let Some(b) = bloom.as_mut() {
                b.add_key(mezz_format::ikey::user_key(k));
            }
            last_key.clear();
            last_key.extend_from_slice(k);
            last_end = n + layout.node_len(entries);
            x = reader.next(n, 0)?;
        }
        let mut b = PTableBuilder {
            region,
            off,
            len,
            end: last_end,
            committed: last_end,
            prev,
            dirty_links: Vec::new(),
            entries,
            bloom,
            bloom_bits: bloom_bits_per_key,
            last_key,
            prefix,
            prefix_len: header.prefix_len as usize,
            ext: claim,
            order: order.clone(),
            layout,
        };
        // Unlink whatever the lost part linked in: the last kept node of every level
        // points nowhere.
        let mut links: Vec<usize> = (0..MAX_HEIGHT).map(|l| layout.link(b.prev[l], l)).collect();
        links.sort_unstable();
        links.dedup();
        b.region.on_writes(links.len(), 4);
        for &at in &links {
            b.write(at, &0u32.to_le_bytes());
            b.region
                .persist(b.off + at, 4)
                .map_err(|e| io_err(&b.region, e))?;
        }
        b.set_word(COMMITTED_AT, b.committed as u64)?;
        Ok((b, header))
    }

    /// Writes `bytes` at `at` of the extent. Callers keep `[at, at + len)` inside the
    /// extent (checked against `self.len` before anything is written; the claim panics
    /// outside it); readers only see the table once it is complete or after the builder is
    /// gone.
    fn write(&mut self, at: usize, bytes: &[u8]) {
        self.ext.write(at, bytes);
    }

    fn set_word(&mut self, at: usize, v: u64) -> Result<()> {
        self.write(at, &v.to_le_bytes());
        self.region.on_write(8);
        persist_fence(&self.region, self.off + at, 8)
    }

    /// Entries added so far.
    #[must_use]
    pub fn num_entries(&self) -> u64 {
        self.entries
    }

    /// The last internal key added (empty if none).
    #[must_use]
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Bytes of the index written so far.
    #[must_use]
    pub fn bytes_written(&self) -> u64 {
        self.end as u64
    }

    /// Bytes `finish` still needs for the filter and footer.
    /// (with room for one more key).
    fn tail_len(&self) -> usize {
        FOOTER_LEN + filter_len(self.entries + 1, self.bloom_bits)
    }

    fn check_order(&mut self, key: &[u8]) -> Result<()> {
        let uk = mezz_format::ikey::user_key(key);
        if self.entries == 0 {
            if uk.len() < self.prefix_len {
                return Err(Error::InvalidArgument(format!(
                    "NVM table: key shorter than the shared prefix of {} bytes",
                    self.prefix_len
                )));
            }
            self.prefix = uk[..self.prefix_len].to_vec();
        } else if !uk.starts_with(&self.prefix) {
            return Err(Error::InvalidArgument(
                "NVM table: a key without the table's shared prefix".into(),
            ));
        }
        if self.entries > 0 && self.order.compare_internal(&self.last_key, key) != Ordering::Less {
            return Err(Error::InvalidArgument(format!(
                "NVM table entries must be added in increasing internal-key order: {:02x?} \
                 after {:02x?}",
                &key[..key.len().min(40)],
                &self.last_key[..self.last_key.len().min(40)]
            )));
        }
        Ok(())
    }

    fn full(&self) -> Error {
        Error::InvalidArgument(format!("NVM table extent of {} bytes is full", self.len))
    }

    /// Appends a node pointing at entry `r` (whose internal key is `key`).
    ///
    /// # Errors
    /// `InvalidArgument` when out of order or out of room (nothing written).
    pub fn add_ref(&mut self, key: &[u8], r: EntryRef) -> Result<()> {
        self.check_order(key)?;
        let i = self.entries + 1;
        let nlen = self.layout.node_len(i);
        if self.end + nlen + self.tail_len() > self.len {
            return Err(self.full());
        }
        let key_off = self.key_offset(key, r)?;
        self.append_node(key, key_off, r, i, nlen);
        Ok(())
    }

    /// As [`PTableBuilder::add_ref`], for an entry the caller has just written into block
    /// `r` itself and whose key it knows to sit at `key_off` in that block: no read of the
    /// block (a flush copies its entries into its own buffer; reading each key back from
    /// NVM to find it cost the flush two device reads per entry). Only the bounds are
    /// checked here; the table's readers check every entry's CRC as for any reference.
    ///
    /// # Errors
    /// As [`PTableBuilder::add_ref`], and `InvalidArgument` when the key does not lie
    /// within the block.
    pub fn add_ref_at(&mut self, key: &[u8], r: EntryRef, key_off: u32) -> Result<()> {
        self.check_order(key)?;
        let inside = u64::from(key_off) + key.len() as u64 <= u64::from(r.block_len);
        let end = r.block.checked_add(u64::from(r.block_len));
        if !inside || end.is_none_or(|e| e > self.region.len() as u64) {
            return Err(Error::InvalidArgument(format!(
                "NVM entry reference: key at {key_off} outside its block of {} bytes at {}",
                r.block_len, r.block
            )));
        }
        let i = self.entries + 1;
        let nlen = self.layout.node_len(i);
        if self.end + nlen + self.tail_len() > self.len {
            return Err(self.full());
        }
        self.append_node(key, key_off, r, i, nlen);
        Ok(())
    }

    /// Where `key` sits in the block `r` points at (checked against the block).
    fn key_offset(&self, key: &[u8], r: EntryRef) -> Result<u32> {
        let bad = || corrupt(r.block, "NVM entry reference: key not in its block");
        let end = r
            .block
            .checked_add(u64::from(r.block_len))
            .ok_or_else(bad)?;
        if end > self.region.len() as u64 || !r.block.is_multiple_of(8) {
            return Err(bad());
        }
        let block = region_bytes(&self.region, r.block as usize, r.block_len as usize);
        let ks = KeySetRef::parse_trailer(block, r.block)?;
        let k = ks.key(r.slot as usize).ok_or_else(bad)?;
        // Cost hook: the block's slot table, then the key.
        self.region.on_reads(2, key.len().max(NODE_VISIT_BYTES));
        if k != key {
            return Err(bad());
        }
        Ok((k.as_ptr() as usize - block.as_ptr() as usize) as u32)
    }

    /// Writes `key`/`value` as a one-entry block, then a node pointing at it.
    ///
    /// # Errors
    /// As [`PTableBuilder::add_ref`].
    pub fn add_inline(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_order(key)?;
        let i = self.entries + 1;
        let nlen = self.layout.node_len(i);
        let blen = inline_block_len(key.len(), value.len());
        if self.end + blen + nlen + self.tail_len() > self.len {
            return Err(self.full());
        }
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        w.add_with_value(key, value);
        let contents = w.finish();
        let clen = contents.len();
        let mut frame = Vec::with_capacity(blen);
        append_block_frame(&mut frame, contents, BLOCK_TYPE_RAW);
        let at = self.end;
        self.write(at, &frame);
        self.region.on_write(frame.len());
        self.end += frame.len();
        let r = EntryRef {
            block: (self.off + at) as u64,
            block_len: clen as u32,
            slot: 0,
            crc: entry_crc(key, value),
        };
        // The only key of a one-entry block starts it.
        self.append_node(key, 0, r, i, nlen);
        Ok(())
    }

    fn append_node(&mut self, key: &[u8], key_off: u32, r: EntryRef, i: u64, nlen: usize) {
        let h = height_of(i);
        // The tallest node: the fixed part and a tower of MAX_HEIGHT links.
        let mut buf = [0u8; 40 + 4 * MAX_HEIGHT];
        let node = &mut buf[..nlen];
        node[24..28].copy_from_slice(&key_off.to_le_bytes());
        node[28..32].copy_from_slice(&(key.len() as u32).to_le_bytes());
        let fp = fingerprint(mezz_format::ikey::user_key(key), self.prefix_len);
        self.layout.put_fp(node, fp);
        node[0..8].copy_from_slice(&r.block.to_le_bytes());
        node[8..12].copy_from_slice(&r.block_len.to_le_bytes());
        node[12..16].copy_from_slice(&r.slot.to_le_bytes());
        node[16..20].copy_from_slice(&r.crc.to_le_bytes());
        node[20..22].copy_from_slice(&(h as u16).to_le_bytes());
        let at = self.end;
        self.write(at, node);
        self.region.on_write(node.len());
        // One link stored into the last node of each of the `h` levels.
        self.region.on_writes(h, 4);
        // Link bottom-up: a higher level never reaches a node level 0 does not.
        for l in 0..h {
            let link = self.layout.link(self.prev[l], l);
            self.write(link, &(at as u32).to_le_bytes());
            if link < self.committed {
                self.dirty_links.push(link);
            }
            self.prev[l] = at;
        }
        self.end += nlen;
        self.entries = i;
        if let Some(b) = self.bloom.as_mut() {
            b.add_key(mezz_format::ikey::user_key(key));
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
    }

    /// Makes every node added so far durable (a resume after a crash keeps them).
    ///
    /// # Errors
    /// `Io` from persisting.
    pub fn checkpoint(&mut self) -> Result<()> {
        if self.end == self.committed && self.dirty_links.is_empty() {
            return Ok(());
        }
        let r = &self.region;
        r.persist(self.off + self.committed, self.end - self.committed)
            .map_err(|e| io_err(r, e))?;
        self.dirty_links.sort_unstable();
        self.dirty_links.dedup();
        for &l in &self.dirty_links {
            r.persist(self.off + l, 4).map_err(|e| io_err(r, e))?;
        }
        r.fence().map_err(|e| io_err(r, e))?;
        self.dirty_links.clear();
        self.committed = self.end;
        self.set_word(COMMITTED_AT, self.committed as u64)
    }

    /// Writes the filter and footer, makes everything durable and marks the table
    /// complete. Returns the bytes of the extent actually used.
    ///
    /// # Errors
    /// `Io` from persisting; `InvalidArgument` when the filter does not fit.
    pub fn finish(mut self) -> Result<u64> {
        let filter = self
            .bloom
            .as_mut()
            .map(BloomBuilder::finish)
            .unwrap_or_default();
        let flen = round8(filter.len());
        let footer_at = self.end;
        if footer_at + FOOTER_LEN + flen > self.len {
            return Err(self.full());
        }
        let mut f = vec![0u8; FOOTER_LEN + flen];
        f[0..8].copy_from_slice(&FOOTER_MAGIC.to_le_bytes());
        f[8..16].copy_from_slice(&(footer_at as u64).to_le_bytes());
        f[16..24].copy_from_slice(&self.entries.to_le_bytes());
        f[24..28].copy_from_slice(&(filter.len() as u32).to_le_bytes());
        f[FOOTER_LEN..FOOTER_LEN + filter.len()].copy_from_slice(&filter);
        let crc = crc32c_extend(crc32c(&f[..32]), &f[FOOTER_LEN..]);
        f[32..36].copy_from_slice(&mask(crc).to_le_bytes());
        self.write(footer_at, &f);
        self.region.on_write(f.len());
        self.end += f.len();
        self.checkpoint()?;
        self.set_word(FOOTER_AT, footer_at as u64)?;
        Ok(self.end as u64)
    }
}

// ---------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------

fn allowed_ranges(own: Extent, data: &[Extent]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = std::iter::once(own)
        .chain(data.iter().copied())
        .map(|e| (e.offset, e.end()))
        .collect();
    v.sort_unstable();
    v
}

/// Node access shared by the reader and `resume`: every offset is bounded.
struct Walker<'a> {
    region: &'a Region,
    off: usize,
    node_end: usize,
    data: Vec<(u64, u64)>,
    layout: Layout,
}

impl Walker<'_> {
    fn base(&self) -> u64 {
        self.off as u64
    }

    fn node(&self, n: usize) -> Result<&[u8]> {
        let fixed = self.layout.fixed();
        if n + fixed > self.node_end || !n.is_multiple_of(8) {
            return Err(corrupt(
                self.base() + n as u64,
                "NVM table: node outside the table",
            ));
        }
        Ok(region_bytes(self.region, self.off + n, fixed))
    }

    fn height(&self, n: usize) -> Result<usize> {
        let b = self.node(n)?;
        let h = u16::from_le_bytes([b[20], b[21]]) as usize;
        if h == 0 || h > MAX_HEIGHT || self.layout.link(n, h) > self.node_end {
            return Err(corrupt(
                self.base() + n as u64,
                "NVM table: bad node height",
            ));
        }
        Ok(h)
    }

    /// The level-`l` successor of node `n` (`None` at the end). Links past the durable
    /// node area read as the end.
    fn next(&self, n: usize, l: usize) -> Result<Option<usize>> {
        let at = self.layout.link(n, l);
        if at + 4 > self.node_end {
            return Err(corrupt(
                self.base() + n as u64,
                "NVM table: tower outside the table",
            ));
        }
        let b = region_bytes(self.region, self.off + at, 4);
        let nx = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if nx == 0 || nx >= self.node_end {
            return Ok(None);
        }
        if nx <= n {
            return Err(corrupt(
                self.base() + at as u64,
                "NVM table: link goes backwards",
            ));
        }
        Ok(Some(nx))
    }

    fn entry_ref(&self, n: usize) -> Result<EntryRef> {
        let b = self.node(n)?;
        Ok(EntryRef {
            block: get_u64(b, 0).unwrap_or(0),
            block_len: get_u32(b, 8).unwrap_or(0),
            slot: get_u32(b, 12).unwrap_or(0),
            crc: get_u32(b, 16).unwrap_or(0),
        })
    }

    /// Key and value of node `n` (not checked against the checksum) and the checksum.
    fn entry(&self, n: usize) -> Result<(&[u8], &[u8], u32)> {
        let r = self.entry_ref(n)?;
        let (k, v) = resolve(self.region, &self.data, r, &mut None)?;
        Ok((k, v, r.crc))
    }
}

/// Where a node's key lies: its block (offset and length in the region) and the key's
/// offset and length in that block, as the node's fixed part records them (unchecked).
#[derive(Clone, Copy)]
struct KeyPlace {
    block: u64,
    block_len: u32,
    key_off: u32,
    key_len: u32,
}

impl KeyPlace {
    /// Read from a node's fixed part `b` (at least 32 bytes, as [`Walker::node`] gives).
    fn of(b: &[u8]) -> Self {
        KeyPlace {
            block: get_u64(b, 0).unwrap_or(0),
            block_len: get_u32(b, 8).unwrap_or(0),
            key_off: get_u32(b, 24).unwrap_or(0),
            key_len: get_u32(b, 28).unwrap_or(0),
        }
    }
}

/// Whether `[start, end)` lies inside one of the sorted, disjoint `allowed` ranges.
fn within(allowed: &[(u64, u64)], start: u64, end: u64) -> bool {
    let i = allowed.partition_point(|&(s, _)| s <= start);
    i > 0 && allowed.get(i - 1).is_some_and(|&(_, e)| end <= e)
}

/// The block an iterator read last, and its parsed KeySet trailer: (offset, length,
/// trailer).
type LastBlock = Option<(u64, u32, KeySetTrailer)>;

/// Key and value of the entry `r` points at, if its block lies inside one of `allowed`.
/// `last`: the block the caller resolved last, whose trailer is not read again (a scan's
/// consecutive entries often share a block, and the trailer is a cache line apart from
/// the entry); updated to `r`'s block. A caller that keeps none passes `&mut None`.
fn resolve<'a>(
    region: &'a Region,
    allowed: &[(u64, u64)],
    r: EntryRef,
    last: &mut LastBlock,
) -> Result<(&'a [u8], &'a [u8])> {
    let bad = |what: &str| corrupt(r.block, format!("NVM entry reference: {what}"));
    let end = r
        .block
        .checked_add(u64::from(r.block_len))
        .ok_or_else(|| bad("block overflows"))?;
    if !within(allowed, r.block, end) || !r.block.is_multiple_of(8) {
        return Err(bad("block outside the table's extents"));
    }
    let block = region_bytes(region, r.block as usize, r.block_len as usize);
    let ks = match *last {
        Some((b, l, t)) if b == r.block && l == r.block_len => KeySetRef::with_trailer(block, t),
        _ => {
            let ks = KeySetRef::parse_trailer(block, r.block)?;
            *last = Some((r.block, r.block_len, ks.trailer()));
            ks
        }
    };
    let slot = r.slot as usize;
    match (ks.key(slot), ks.value(slot)) {
        (Some(k), Some(v)) => Ok((k, v)),
        _ => Err(bad("slot outside the block")),
    }
}

/// An entry as read from a table: internal key, value, and where it lives.
pub type EntryView<'a> = (&'a [u8], &'a [u8], EntryRef);

/// Most bytes of node area a search prefetches between two fences (16 nodes of 48-80
/// bytes: 12-20 cache lines).
const SPAN_PREFETCH_BYTES: usize = 1280;

/// Entries (key and value) of up to this many bytes are checked against their checksum at
/// every read rather than once per reader: hashing them costs less than the cache miss on
/// their "checked" bit (a random read of a table the size of the papers' TLSM shape spent
/// 10 % of its time loading that bit), and the caller reads their bytes anyway.
pub const ALWAYS_CHECK_BYTES: usize = 256;

/// A complete table, validated on open (header, footer, filter); entries are checked
/// against their checksums as they are read.
#[derive(Debug)]
pub struct PTable {
    region: Arc<Region>,
    off: usize,
    head: usize,
    node_end: usize,
    entries: u64,
    data: Vec<(u64, u64)>,
    header: PTableHeader,
    filter: Option<BloomFilter>,
    /// The user-key prefix all keys share (`header.prefix_len` bytes of the first key).
    prefix: Vec<u8>,
    order: KeyOrder,
    /// DRAM copy of the level-[`FENCE_LEVEL`] list, built by the first search.
    fences: OnceLock<Fences>,
    /// The entries whose checksum a read has checked: bit `(n - head) / 8` for node `n`
    /// (nodes are 8-aligned and longer than 8 bytes, so no two share a bit). Allocated by
    /// the first checked read (1/64 of the node area).
    checked: OnceLock<Box<[AtomicU64]>>,
    /// The node layout of the table's version.
    layout: Layout,
}

/// The keys of the nodes on one skip-list level, copied into DRAM: a search finds its
/// place among them by binary search, then walks only the levels below in NVM. It is a
/// cache of the table's own links (rebuilt from them by the first search after an open),
/// so it is never persisted and never disagrees with them.
#[derive(Default)]
struct Fences {
    /// The internal keys, back to back.
    keys: Vec<u8>,
    /// One per node of the level, in key order.
    list: Vec<Fence>,
    /// Each fence's key fingerprint, the one its node holds, in the same order: a search compares these 8-byte words, packed eight to a cache line, and
    /// reads a fence's key only when its fingerprint ties with the target's.
    fps: Vec<u64>,
}

/// A node of the fenced level: its key (`keys[start..end]`) and its offset.
#[derive(Clone, Copy)]
struct Fence {
    start: u32,
    end: u32,
    node: u32,
}

impl std::fmt::Debug for Fences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fences")
            .field("keys", &self.list.len())
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl Fences {
    fn key(&self, e: Fence) -> &[u8] {
        &self.keys[e.start as usize..e.end as usize]
    }

    fn bytes(&self) -> usize {
        self.keys.capacity()
            + self.list.capacity() * std::mem::size_of::<Fence>()
            + self.fps.capacity() * std::mem::size_of::<u64>()
    }
}

impl PTable {
    /// Opens the complete table in `extent`; `data` are the buffers (and inline-holding
    /// tables) its references may point into.
    ///
    /// # Errors
    /// `Corruption` naming the region offset of the damage; `InvalidArgument` for an
    /// extent outside the region.
    pub fn open(
        region: Arc<Region>,
        extent: Extent,
        data: &[Extent],
        order: &KeyOrder,
    ) -> Result<PTable> {
        let (off, len) = check_extent(&region, extent, TABLE_HEADER_LEN as u64, "table")?;
        let ext = region_bytes(&region, off, len);
        let base = off as u64;
        let (header, head, layout) = PTableHeader::decode(ext, base)?;
        region.on_read(head);
        let footer_at = get_u64(ext, FOOTER_AT).unwrap_or(0) as usize;
        if footer_at == 0 {
            return Err(corrupt(
                base + FOOTER_AT as u64,
                "NVM table: incomplete (no footer)",
            ));
        }
        if footer_at < head + layout.head_len() || footer_at + FOOTER_LEN > len {
            return Err(corrupt(
                base + FOOTER_AT as u64,
                "NVM table: footer outside the table",
            ));
        }
        let f = &ext[footer_at..];
        if get_u64(f, 0) != Some(FOOTER_MAGIC) || get_u64(f, 8) != Some(footer_at as u64) {
            return Err(corrupt(base + footer_at as u64, "NVM table: bad footer"));
        }
        let entries = get_u64(f, 16).unwrap_or(0);
        let flen = get_u32(f, 24).unwrap_or(u32::MAX) as usize;
        if FOOTER_LEN + flen > f.len() {
            return Err(corrupt(
                base + footer_at as u64,
                "NVM table: filter outside the table",
            ));
        }
        let crc = crc32c_extend(
            crc32c(&f[..32]),
            &f[FOOTER_LEN..FOOTER_LEN + round8(flen).min(f.len() - FOOTER_LEN)],
        );
        if get_u32(f, 32).map(mezz_format::checksum::unmask) != Some(crc) {
            return Err(corrupt(
                base + footer_at as u64,
                "NVM table: footer checksum mismatch",
            ));
        }
        region.on_read(FOOTER_LEN + round8(flen));
        let filter = if flen == 0 {
            None
        } else {
            Some(BloomFilter::from_bytes_at(
                f[FOOTER_LEN..FOOTER_LEN + flen].to_vec(),
                base + (footer_at + FOOTER_LEN) as u64,
            )?)
        };
        let mut t = PTable {
            data: allowed_ranges(extent, data),
            region,
            off,
            head,
            node_end: footer_at,
            entries,
            header,
            filter,
            prefix: Vec::new(),
            order: order.clone(),
            fences: OnceLock::new(),
            checked: OnceLock::new(),
            layout,
        };
        if let Some(first) = t.walker().next(t.head, 0)? {
            t.region.on_read(NODE_VISIT_BYTES);
            let uk = mezz_format::ikey::user_key(t.node_key(first)?);
            let plen = t.header.prefix_len as usize;
            t.prefix = uk
                .get(..plen)
                .ok_or_else(|| {
                    corrupt(
                        base + first as u64,
                        "NVM table: key shorter than its prefix",
                    )
                })?
                .to_vec();
        }
        Ok(t)
    }

    /// The internal key of node `n`, read through the node's key location (no block
    /// parse); bounded by the block and the table's extents.
    fn node_key(&self, n: usize) -> Result<&[u8]> {
        let w = self.walker();
        let KeyPlace {
            block,
            block_len,
            key_off,
            key_len,
        } = KeyPlace::of(w.node(n)?);
        let bad = || {
            corrupt(
                self.off as u64 + n as u64,
                "NVM table: node key outside its block",
            )
        };
        if u64::from(key_off) + u64::from(key_len) > u64::from(block_len) {
            return Err(bad());
        }
        let end = block.checked_add(u64::from(block_len)).ok_or_else(bad)?;
        if !within(&self.data, block, end) {
            return Err(bad());
        }
        // The node was reported by the visit; its key lies in the block, another access.
        self.region
            .on_read_at((block + u64::from(key_off)) as usize, key_len as usize);
        Ok(region_bytes(
            &self.region,
            (block + u64::from(key_off)) as usize,
            key_len as usize,
        ))
    }

    /// The order of the table's keys.
    #[must_use]
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// The fingerprint of `ikey` if it shares the table's prefix.
    fn target_fp(&self, ikey: &[u8]) -> Option<u64> {
        let uk = mezz_format::ikey::user_key(ikey);
        // Fingerprints order keys bytewise: a shortcut for the bytewise order only.
        (self.order.is_bytewise() && uk.starts_with(&self.prefix))
            .then(|| self.layout.narrow(fingerprint(uk, self.prefix.len())))
    }

    /// Node `n`'s key against `ikey` (whose fingerprint is `tfp`).
    fn cmp_node(
        &self,
        w: &Walker<'_>,
        n: usize,
        ikey: &[u8],
        tfp: Option<u64>,
    ) -> Result<Ordering> {
        if let Some(tfp) = tfp {
            let nfp = self.layout.node_fp(w.node(n)?).unwrap_or(0);
            if nfp != tfp {
                return Ok(nfp.cmp(&tfp));
            }
        }
        Ok(self.order.compare_internal(self.node_key(n)?, ikey))
    }

    fn walker(&self) -> Walker<'_> {
        Walker {
            region: &self.region,
            off: self.off,
            node_end: self.node_end,
            data: Vec::new(),
            layout: self.layout,
        }
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &PTableHeader {
        &self.header
    }

    /// Number of entries (from the footer).
    #[must_use]
    pub fn num_entries(&self) -> u64 {
        self.entries
    }

    /// Whether the filter says `user_key` may be present (true without a filter).
    #[must_use]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    fn resolve(&self, r: EntryRef) -> Result<(&[u8], &[u8])> {
        resolve(&self.region, &self.data, r, &mut None)
    }

    /// Starts loading what the next two steps after node `n` read first: each next
    /// node's key and its block's trailer, and the node after those (`stepped`: `n` was
    /// reached by a step from its predecessor, whose call prefetched `n`'s successor's
    /// targets already, so only the entry two ahead is new, and the successor's value,
    /// placed by its now loaded trailer, is prefetched instead). After pointer-only
    /// compaction a scan's consecutive entries lie in scattered blocks, so each step would
    /// otherwise wait for a cache miss on the trailer and another on the key (the merge
    /// compares it); prefetched ahead, they overlap the work of the entries between (a
    /// merge steps the other levels' iterators in between). Reads node `n`'s link and the
    /// next nodes' fixed parts, which those steps read too, and issues prefetches only
    /// (no cost hook: the accesses are charged when made). Returns the successor's block
    /// and its parsed trailer when the value's prefetch parsed it, for the step to it (see
    /// [`resolve`]: it is used only for a reference inside the table's extents).
    fn prefetch_after(&self, n: usize, stepped: bool) -> LastBlock {
        let w = self.walker();
        let mut at = n;
        let mut next_block = None;
        for ahead in 0..2 {
            let Ok(Some(nx)) = w.next(at, 0) else {
                return next_block;
            };
            let Ok(b) = w.node(nx) else {
                return next_block;
            };
            if stepped && ahead == 0 {
                next_block = self.prefetch_value(b);
            } else {
                self.prefetch_targets(b);
            }
            at = nx;
        }
        if let Ok(Some(after)) = w.next(at, 0)
            && let Ok(nb) = w.node(after)
            && let Some(first) = nb.first()
        {
            prefetch(first);
        }
        next_block
    }

    /// Prefetches the node area from node `from` up to the start of node `to` (at most
    /// [`SPAN_PREFETCH_BYTES`]), a cache line at a time. No cost hook: each node is
    /// charged when a search reads it.
    fn prefetch_nodes(&self, from: usize, to: usize) {
        let to = to.min(self.node_end).min(from + SPAN_PREFETCH_BYTES);
        let mut at = from;
        while at < to {
            if let Some(b) = region_bytes(&self.region, self.off + at, 1).first() {
                prefetch(b);
            }
            at += 64;
        }
    }

    /// Where the block a node (its fixed part `b`) points at lies, and its bytes, if the
    /// block lies inside the region and can hold a trailer (unchecked otherwise: for
    /// prefetching, a damaged node is reported by the read).
    fn block_of_node(&self, b: &[u8]) -> Option<(KeyPlace, &[u8])> {
        let place = KeyPlace::of(b);
        let (at, len) = (place.block as usize, place.block_len as usize);
        if len < KEYSET_TRAILER_LEN
            || at
                .checked_add(len)
                .is_none_or(|end| end > self.region.len())
        {
            return None;
        }
        Some((place, region_bytes(&self.region, at, len)))
    }

    /// Prefetches the key and the block trailer a node (its fixed part `b`) points at,
    /// if they lie inside the region (a damaged node is reported by the read, not here).
    fn prefetch_targets(&self, b: &[u8]) {
        let Some((place, bytes)) = self.block_of_node(b) else {
            return;
        };
        let block_len = bytes.len();
        if let Some(k) = bytes.get(place.key_off as usize) {
            prefetch(k);
        }
        if let Some(t) = bytes.get(block_len - KEYSET_TRAILER_LEN) {
            prefetch(t);
        }
    }

    /// Prefetches where reading the value of the entry a node (its fixed part `b`) points
    /// at starts (the value's first and last lines, or the record that places it), from the
    /// block's trailer, which an earlier step prefetched ([`PTable::prefetch_targets`]). The
    /// entry checksum every read verifies covers the value, so a scan (and a compaction's
    /// merge) would otherwise wait for the value's line after the key's. Returns the block
    /// and its parsed trailer, which the step to that entry then does not parse again.
    fn prefetch_value(&self, b: &[u8]) -> LastBlock {
        let (
            KeyPlace {
                block, block_len, ..
            },
            bytes,
        ) = self.block_of_node(b)?;
        let ks = KeySetRef::parse_trailer(bytes, block).ok()?;
        let slot = get_u32(b, 12).unwrap_or(0) as usize;
        for off in ks.value_touch(slot).into_iter().flatten() {
            if let Some(x) = bytes.get(off) {
                prefetch(x);
            }
        }
        Some((block, block_len, ks.trailer()))
    }

    /// Cost hook: a search read the first bytes of node `n` (one access).
    #[inline]
    fn visit(&self, n: usize) {
        self.region.on_read_at(self.off + n, NODE_VISIT_BYTES);
    }

    /// The DRAM fences, built on first use by walking level [`FENCE_LEVEL`]. A damaged
    /// link ends the walk early: the fences then cover a prefix of the table, and the
    /// search past them walks NVM and reports the damage.
    fn fences(&self) -> &Fences {
        self.fences.get_or_init(|| {
            let w = self.walker();
            let mut f = Fences::default();
            let mut x = self.head;
            while let Ok(Some(nx)) = w.next(x, FENCE_LEVEL) {
                self.visit(nx);
                let Ok(k) = self.node_key(nx) else { break };
                let (Ok(start), Ok(end), Ok(node)) = (
                    u32::try_from(f.keys.len()),
                    u32::try_from(f.keys.len() + k.len()),
                    u32::try_from(nx),
                ) else {
                    break;
                };
                let Some(fp) = w.node(nx).ok().and_then(|b| self.layout.node_fp(b)) else {
                    break;
                };
                f.keys.extend_from_slice(k);
                f.list.push(Fence { start, end, node });
                f.fps.push(fp);
                x = nx;
            }
            f.keys.shrink_to_fit();
            f.list.shrink_to_fit();
            f.fps.shrink_to_fit();
            f
        })
    }

    /// Bytes of DRAM the table's search fences hold (0 before the first search).
    #[must_use]
    pub fn fence_bytes(&self) -> usize {
        self.fences.get().map_or(0, Fences::bytes)
    }

    /// Where a search for `ikey` starts: the last fence whose key is below `ikey` (or not
    /// above it with `inclusive`), else the head, and the levels still to walk (the
    /// fence's successor at [`FENCE_LEVEL`] is already past `ikey`). `tfp`: `ikey`'s
    /// fingerprint ([`PTable::target_fp`]); with one, the fences' fingerprints decide
    /// every comparison they can (as a node's do in [`PTable::cmp_node`]).
    fn search_start(&self, ikey: &[u8], inclusive: bool, tfp: Option<u64>) -> (usize, usize) {
        let f = self.fences();
        if f.list.is_empty() {
            return (self.head, MAX_HEIGHT);
        }
        let below = |j: usize| {
            if let Some(t) = tfp
                && let Some(&fp) = f.fps.get(j)
                && fp != t
            {
                return fp < t;
            }
            let c = self.order.compare_internal(f.key(f.list[j]), ikey);
            c == Ordering::Less || (inclusive && c == Ordering::Equal)
        };
        // The first fence not below `ikey` (a lower bound over the fences).
        let (mut i, mut hi) = (0, f.list.len());
        while i < hi {
            let mid = i + (hi - i) / 2;
            if below(mid) {
                i = mid + 1;
            } else {
                hi = mid;
            }
        }
        let x = i
            .checked_sub(1)
            .map_or(self.head, |p| f.list[p].node as usize);
        // The walk below stays between this fence and the next (nodes lie in key order):
        // start loading those nodes' lines at once, so that the walk's cache misses
        // overlap instead of following each other.
        let end = f.list.get(i).map_or(self.node_end, |e| e.node as usize);
        self.prefetch_nodes(x, end);
        // The fences are exactly the nodes of the level-FENCE_LEVEL list, so `x`'s
        // successor there (and on every level above) is past `ikey` too.
        (x, FENCE_LEVEL)
    }

    /// The first node whose key is >= `ikey` (`None` past the end).
    fn seek_node(&self, ikey: &[u8]) -> Result<Option<usize>> {
        let w = self.walker();
        let tfp = self.target_fp(ikey);
        let (mut x, top) = self.search_start(ikey, false, tfp);
        for l in (0..top).rev() {
            while let Some(nx) = w.next(x, l)? {
                self.visit(nx);
                if self.cmp_node(&w, nx, ikey, tfp)? == Ordering::Less {
                    x = nx;
                } else {
                    break;
                }
            }
        }
        w.next(x, 0)
    }

    /// The last node whose key is < `ikey` (or <= with `inclusive`); `None` if none.
    fn seek_before(&self, ikey: &[u8], inclusive: bool) -> Result<Option<usize>> {
        let w = self.walker();
        let tfp = self.target_fp(ikey);
        let (mut x, top) = self.search_start(ikey, inclusive, tfp);
        for l in (0..top).rev() {
            while let Some(nx) = w.next(x, l)? {
                self.visit(nx);
                let c = self.cmp_node(&w, nx, ikey, tfp)?;
                if c == Ordering::Less || (inclusive && c == Ordering::Equal) {
                    x = nx;
                } else {
                    break;
                }
            }
        }
        Ok((x != self.head).then_some(x))
    }

    fn last_node(&self) -> Result<Option<usize>> {
        let w = self.walker();
        let mut x = self.head;
        for l in (0..MAX_HEIGHT).rev() {
            while let Some(nx) = w.next(x, l)? {
                self.visit(nx);
                x = nx;
            }
        }
        Ok((x != self.head).then_some(x))
    }

    /// Key, value and reference of node `n`, checked against the node's checksum the
    /// first time this reader reads it (see the module's invariants).
    fn checked_entry(&self, n: usize) -> Result<EntryView<'_>> {
        self.entry_at(n, false, &mut None)
    }

    /// Where node `n`'s "checked" bit lives: (word, mask). Only entries larger than
    /// [`ALWAYS_CHECK_BYTES`] use one.
    fn checked_bit(&self, n: usize) -> Option<(&AtomicU64, u64)> {
        let i = n.checked_sub(self.head)? / 8;
        let words = self.checked.get_or_init(|| {
            let bits = self.node_end.saturating_sub(self.head) / 8 + 1;
            (0..bits.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
        });
        Some((words.get(i / 64)?, 1u64 << (i % 64)))
    }

    /// Key, value and reference of node `n`, checked against the node's checksum unless
    /// this reader checked it before (`always`: check it regardless). `last`: see
    /// [`resolve`].
    fn entry_at(&self, n: usize, always: bool, last: &mut LastBlock) -> Result<EntryView<'_>> {
        let w = self.walker();
        let r = w.entry_ref(n)?;
        let (k, v) = resolve(&self.region, &self.data, r, last)?;
        report_entry(&self.region, r, k, v);
        let bit = if always || k.len() + v.len() <= ALWAYS_CHECK_BYTES {
            None
        } else {
            self.checked_bit(n)
        };
        // Relaxed: the bit guards no other memory; a reader that misses a bit set by
        // another thread only checks the entry once more.
        if bit.is_none_or(|(w, m)| w.load(AtomicOrdering::Relaxed) & m == 0) {
            if entry_crc(k, v) != r.crc {
                return Err(corrupt(
                    self.off as u64 + n as u64,
                    "NVM table: entry does not match its checksum",
                ));
            }
            if let Some((w, m)) = bit {
                w.fetch_or(m, AtomicOrdering::Relaxed);
            }
        }
        Ok((k, v, r))
    }

    /// The first entry whose internal key is >= `ikey`, checked: `(key, value, ref)`.
    ///
    /// # Errors
    /// `Corruption` from a damaged node or entry.
    pub fn seek(&self, ikey: &[u8]) -> Result<Option<EntryView<'_>>> {
        match self.seek_node(ikey)? {
            Some(n) => self.checked_entry(n).map(Some),
            None => Ok(None),
        }
    }

    /// The KeySet run `r` points into (its contents, checked against its frame's checksum)
    /// and its number of entries: a block that can be copied whole.
    ///
    /// # Errors
    /// `Corruption` for a reference outside the table's extents or a damaged block.
    pub fn block_of(&self, r: EntryRef) -> Result<(&[u8], usize)> {
        self.resolve(r)?;
        check_frame(&self.region, r)?;
        let contents = region_bytes(&self.region, r.block as usize, r.block_len as usize);
        let n = KeySetRef::parse(contents, r.block)?.num_entries();
        Ok((contents, n))
    }

    /// The entry `r` points at, checked against `r`'s checksum.
    ///
    /// # Errors
    /// `Corruption` as for [`PTable::block_of`], or a checksum mismatch.
    pub fn entry(&self, r: EntryRef) -> Result<(&[u8], &[u8])> {
        let (k, v) = self.resolve(r)?;
        report_entry(&self.region, r, k, v);
        if entry_crc(k, v) != r.crc {
            return Err(corrupt(r.block, "NVM entry does not match its checksum"));
        }
        Ok((k, v))
    }

    /// Every reference of the table, in order (for accounting and verification).
    ///
    /// # Errors
    /// `Corruption` from a damaged node.
    pub fn refs(&self) -> Result<Vec<EntryRef>> {
        let w = self.walker();
        let mut out = Vec::with_capacity(self.entries as usize);
        let mut x = w.next(self.head, 0)?;
        while let Some(n) = x {
            out.push(w.entry_ref(n)?);
            x = w.next(n, 0)?;
        }
        self.region.on_reads(out.len(), NODE_VISIT_BYTES);
        Ok(out)
    }

    /// Reads every node and entry: checksums, key order, tower heights and links, the entry
    /// count and the filter, and every referenced block's frame checksum. Returns the
    /// number of entries.
    ///
    /// # Errors
    /// The first `Corruption` found.
    pub fn verify(&self) -> Result<u64> {
        let w = self.walker();
        let base = self.off as u64;
        let mut last: Option<Vec<u8>> = None;
        let mut i = 0u64;
        let mut blocks = std::collections::HashSet::new();
        let mut x = w.next(self.head, 0)?;
        while let Some(n) = x {
            i += 1;
            self.region.on_read(NODE_VISIT_BYTES);
            if w.height(n)? != height_of(i) {
                return Err(corrupt(
                    base + n as u64,
                    "NVM table: node height out of place",
                ));
            }
            let (k, _, r) = self.entry_at(n, true, &mut None)?;
            if self.node_key(n)? != k
                || self.layout.node_fp(w.node(n)?)
                    != Some(self.layout.narrow(fingerprint(
                        mezz_format::ikey::user_key(k),
                        self.prefix.len(),
                    )))
            {
                return Err(corrupt(
                    base + n as u64,
                    "NVM table: node key location or fingerprint wrong",
                ));
            }
            if let Some(p) = &last
                && self.order.compare_internal(p, k) != Ordering::Less
            {
                return Err(corrupt(base + n as u64, "NVM table: keys out of order"));
            }
            if !self.may_contain(mezz_format::ikey::user_key(k)) {
                return Err(corrupt(base + n as u64, "NVM table: filter misses a key"));
            }
            if blocks.insert((r.block, r.block_len)) {
                check_frame(&self.region, r)?;
            }
            last = Some(k.to_vec());
            x = w.next(n, 0)?;
        }
        if i != self.entries {
            return Err(corrupt(
                base,
                format!(
                    "NVM table: footer says {} entries, list holds {i}",
                    self.entries
                ),
            ));
        }
        Ok(i)
    }
}

/// Checks the frame trailer (checksum of contents + type) of the block `r` points at.
/// REQUIRES: `r` was resolved against the table's extents (so the block is in range).
fn check_frame(region: &Region, r: EntryRef) -> Result<()> {
    let clen = r.block_len as usize;
    let t_at = r.block as usize + clen;
    let tail_len = round8(clen) - clen + BLOCK_TRAILER_LEN;
    if t_at + tail_len > region.len() {
        return Err(corrupt(r.block, "NVM block trailer outside the region"));
    }
    let contents = region_bytes(region, r.block as usize, clen);
    let tail = region_bytes(region, t_at, tail_len);
    // The checksum reads the block whole: one access.
    region.on_read(clen + tail_len);
    if check_block_frame(contents, tail, r.block)? != BLOCK_TYPE_RAW {
        return Err(corrupt(r.block, "NVM block of a type other than raw"));
    }
    Ok(())
}

/// An [`InternalIterator`] over a [`PTable`]; `entry_ref` gives each entry's reference.
#[derive(Debug)]
pub struct PTableIter {
    table: Arc<PTable>,
    node: Option<usize>,
    cur: Option<(usize, usize, usize, usize, EntryRef)>,
    status: Option<Error>,
    /// The block of the last entry positioned on (see [`resolve`]).
    last_block: LastBlock,
    /// The block of the entry after it, parsed by the prefetch of its value
    /// ([`PTable::prefetch_after`]): the next step by `next` resolves with it.
    next_block: LastBlock,
}

impl PTableIter {
    /// An unpositioned iterator over `table`.
    #[must_use]
    pub fn new(table: Arc<PTable>) -> PTableIter {
        PTableIter {
            table,
            node: None,
            cur: None,
            status: None,
            last_block: None,
            next_block: None,
        }
    }

    /// Positions on node `n` (`stepped`: by `next` from the node before, see
    /// [`PTable::prefetch_after`]).
    fn set(&mut self, n: Result<Option<usize>>, stepped: bool) {
        self.cur = None;
        self.node = None;
        let parsed = self.next_block.take();
        if stepped && parsed.is_some() {
            self.last_block = parsed;
        }
        match n {
            Ok(Some(n)) => match self.table.entry_at(n, false, &mut self.last_block) {
                Ok((k, v, r)) => {
                    let rb = self.table.region.base().as_ptr() as usize;
                    let ko = k.as_ptr() as usize - rb;
                    let vo = v.as_ptr() as usize - rb;
                    self.cur = Some((ko, k.len(), vo, v.len(), r));
                    self.node = Some(n);
                    self.next_block = self.table.prefetch_after(n, stepped);
                }
                Err(e) => self.status = Some(e),
            },
            Ok(None) => {}
            Err(e) => self.status = Some(e),
        }
    }
}

impl InternalIterator for PTableIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        let n = self.table.walker().next(self.table.head, 0);
        if let Ok(Some(first)) = n {
            self.table.visit(first);
        }
        self.set(n, false);
    }
    fn seek_to_last(&mut self) {
        let n = self.table.last_node();
        self.set(n, false);
    }
    fn seek(&mut self, target: &[u8]) {
        let n = self.table.seek_node(target);
        self.set(n, false);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let n = self.table.seek_before(target, true);
        self.set(n, false);
    }
    fn next(&mut self) {
        let Some(n) = self.node else { return };
        let nx = self.table.walker().next(n, 0);
        if let Ok(Some(next)) = nx {
            self.table.visit(next);
        }
        self.set(nx, true);
    }
    fn prev(&mut self) {
        if self.node.is_none() {
            return;
        }
        let key = self.key().to_vec();
        let p = self.table.seek_before(&key, false);
        self.set(p, false);
    }
    fn key(&self) -> &[u8] {
        match self.cur {
            Some((ko, kl, ..)) => region_bytes(&self.table.region, ko, kl),
            None => &[],
        }
    }
    fn value(&self) -> &[u8] {
        match self.cur {
            Some((_, _, vo, vl, _)) => region_bytes(&self.table.region, vo, vl),
            None => &[],
        }
    }
    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
    fn entry_ref(&self) -> Option<EntryRef> {
        self.cur.map(|c| c.4)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::path::Path;

    use mezz_format::ikey::{ValueKind, make_internal_key};
    use mezz_pmem::{Pool, RegionOptions, SimNvm};

    use super::*;

    /// 16-byte decimal keys (as db_bench writes them) that differ only past the 4 bytes a
    /// version 1 node holds after the shared prefix.
    fn ikey(i: u32) -> Vec<u8> {
        make_internal_key(
            format!("{:016}", 1_000_000 + i).as_bytes(),
            9,
            ValueKind::Value,
        )
    }

    fn value(i: u32) -> Vec<u8> {
        format!("v{i}").into_bytes()
    }

    fn build(pool: &Pool, layout: Layout, n: u32, finish: bool) -> Extent {
        let need = index_len(u64::from(n), 1, 10)
            + (0..n)
                .map(|i| inline_block_len(ikey(i).len(), value(i).len()) as u64)
                .sum::<u64>();
        let e = pool.alloc(need).unwrap();
        let h = PTableHeader {
            id: 3,
            level: 1,
            kind: 1,
            inputs: vec![2],
            prefix_len: 9,
        };
        let order = KeyOrder::default();
        let mut b =
            PTableBuilder::create_in(pool.region().clone(), e, &h, 10, &order, layout).unwrap();
        for i in 0..n {
            b.add_inline(&ikey(i), &value(i)).unwrap();
        }
        b.checkpoint().unwrap();
        if finish {
            b.finish().unwrap();
        }
        e
    }

    /// A pool of 4 MiB on the simulated NVM `sim`.
    fn sim_pool(sim: &SimNvm) -> Pool {
        Pool::create(
            Path::new("db"),
            "NVM-POOL",
            1024 * 4096,
            [5; 16],
            &RegionOptions::crash_sim(sim),
        )
        .unwrap()
    }

    fn check(pool: &Pool, e: Extent, n: u32) -> PTable {
        let t = PTable::open(pool.region().clone(), e, &[], &KeyOrder::default()).unwrap();
        assert_eq!(t.verify().unwrap(), u64::from(n));
        for i in 0..n {
            let (k, v, _) = t.seek(&ikey(i)).unwrap().unwrap();
            assert_eq!((k, v), (ikey(i).as_slice(), value(i).as_slice()), "key {i}");
        }
        assert!(t.seek(&ikey(n)).unwrap().is_none());
        t
    }

    /// A reader checks an entry's checksum the first time it reads it, then trusts it;
    /// `verify` checks every entry again. Damage is reported by the first read of a reader
    /// that has not read the entry, and by `verify` on any reader.
    #[test]
    fn a_damaged_entry_is_reported_by_its_first_read_and_by_verify() {
        let sim = SimNvm::new();
        let pool = sim_pool(&sim);
        let n = 50;
        let e = build(&pool, Layout::CURRENT, n, true);
        let open = || PTable::open(pool.region().clone(), e, &[], &KeyOrder::default()).unwrap();
        let base = pool.region().base().as_ptr() as usize;
        let t = open();
        // `t` reads entry 5: checked, and trusted by `t` from now on.
        let (_, v5, _) = t.seek(&ikey(5)).unwrap().unwrap();
        let at5 = v5.as_ptr() as usize - base;
        // Entry 7's place, from a reader dropped before the damage.
        let at7 = {
            let other = open();
            let (_, v7, _) = other.seek(&ikey(7)).unwrap().unwrap();
            v7.as_ptr() as usize - base
        };
        for at in [at5, at7] {
            let mut w = pool.region().claim(at, 1).unwrap();
            w.write(0, b"X");
        }
        let fresh = open();
        for i in [5, 7] {
            assert!(fresh.seek(&ikey(i)).is_err(), "entry {i}: first read");
        }
        assert!(t.seek(&ikey(7)).is_err(), "entry 7: first read by t");
        assert!(t.verify().is_err(), "verify checks what t trusted");
        assert!(
            fresh.seek(&ikey(6)).unwrap().is_some(),
            "undamaged entries read"
        );
    }

    #[test]
    fn version_1_tables_are_read_searched_and_resumed_beside_version_2() {
        let sim = SimNvm::new();
        let pool = sim_pool(&sim);
        let n = 300;
        let old = build(&pool, Layout::of(1), n, true);
        let new = build(&pool, Layout::CURRENT, n, true);
        let (t1, t2) = (check(&pool, old, n), check(&pool, new, n));
        assert_eq!(
            (t1.layout.version(), t2.layout.version()),
            (1, TABLE_VERSION)
        );
        // The same nodes, 4 bytes of fingerprint wider: version 2 nodes decide keys that
        // share 4 bytes past the prefix, where version 1 nodes tie (and read the key).
        let a = ikey(10);
        let b = ikey(11);
        let (fa, fb) = (fingerprint(user_key(&a), 9), fingerprint(user_key(&b), 9));
        assert_ne!(fa, fb);
        assert_eq!(Layout::of(1).narrow(fa), Layout::of(1).narrow(fb));
        // An interrupted version 1 table resumes as version 1 and completes.
        let e = build(&pool, Layout::of(1), n, false);
        let (b, h) =
            PTableBuilder::resume(pool.region().clone(), e, &[], 10, &KeyOrder::default()).unwrap();
        assert_eq!((b.layout, h.prefix_len), (Layout::of(1), 9));
        assert_eq!(b.num_entries(), u64::from(n));
        b.finish().unwrap();
        check(&pool, e, n);
        // A version from the future is refused as such, not as damage.
        let mut h = read_header(pool.region(), new)
            .unwrap()
            .encode(new.len, Layout::CURRENT);
        h[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert!(matches!(
            PTableHeader::decode(&h, 0),
            Err(Error::UnsupportedVersion { found: 3, .. })
        ));
    }

    fn user_key(ikey: &[u8]) -> &[u8] {
        mezz_format::ikey::user_key(ikey)
    }
}
