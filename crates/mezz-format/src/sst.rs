//! SST files: [`TableBuilder`] writes one, [`TableReader`] reads it, [`TableIter`] walks it.
//!
//! Spec: `docs/formats/sst.md`. All integers little-endian. Layout:
//! ```text
//! data block 0 | pad | block trailer     block trailer (8 bytes): masked crc32c u32 over
//! data block 1 | pad | block trailer       (stored contents ++ type byte) | type u8 (0 = raw,
//! ...                                      1 = LZ4, 2 = Zstd) | 3 zero bytes; pad = zero
//! filter block | pad | block trailer       bytes up to 8-alignment, so every block starts
//!                                          8-byte aligned
//! properties block | pad | block trailer
//! index block | pad | block trailer
//! footer (72 bytes):
//!   index    offset u64 | size u64
//!   filter   offset u64 | size u64   (size 0 = no filter)
//!   props    offset u64 | size u64
//!   block_format u32 | format_version u32 (= 1) | reserved u32 (= 0) |
//!   footer crc u32 (masked crc32c of footer bytes 0..60) | magic u64
//! ```
//! Data blocks are KeySet or Prefix blocks ([`crate::block`]); the index block is always a
//! KeySet block whose key for each data block is a separator `S` with
//! `last key of the block <= S < first key of the next block` (a shortened user key with
//! trailer `(MAX_SEQ, SEEK)` when possible) and whose value is the 16-byte handle
//! `offset u64 | size u64`. The filter is a bloom filter over every user key
//! ([`crate::filter`]); the properties block holds [`TableProperties`] as varints.
//! Data blocks may be stored compressed ([`crate::compress`]; only when that saves at least
//! 12.5 %); the filter, properties and index blocks are always raw. A compressed block is
//! decompressed when read, and the decompressed block is what the block cache holds.
//!
//! Invariants: keys strictly increase across the file; the reader verifies the footer, the
//! index, the filter and the properties at open, and every data block's checksum (over the
//! stored, possibly compressed, bytes) when it reads it; every error names a byte offset
//! (the engine adds the path with [`Error::in_file`]).
//!
//! Thread-safety: a [`TableReader`] is shared (`Arc`) by many readers; its counters are
//! relaxed atomics ([`ReadCounters`], optionally shared between tables). A [`TableBuilder`]
//! and a [`TableIter`] are single-owner values.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Instant;

use mezz_env::{RandomAccessFile, WritableFile};
use mezz_util::counter::StripedCounters;

use crate::block::{
    Block, BlockBuilder, BlockFormat, BlockIter, IndexKind, KeySetRef, KeySetWriter,
};
use crate::checksum::{crc32c, crc32c_extend, mask, unmask};
use crate::coding::{Decoder, get_fixed32, get_fixed64, put_length_prefixed, put_varint64};
pub use crate::compress::Compression;
use crate::compress::{BlockCompressor, DEFAULT_ZSTD_LEVEL, decompress_block};
use crate::filter::{BloomBuilder, BloomFilter};
use crate::ikey::{
    MAX_SEQ, ParsedInternalKey, SeqNo, ValueKind, compare_internal_keys, pack_trailer,
    parse_internal_key, user_key,
};
use crate::iter::InternalIterator;
use crate::order::KeyOrder;
use crate::{CorruptionDetail, Error, Result};

/// The magic number ending every table file.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"MezzSST\x01");
/// The newest table format version this build writes and reads.
pub const TABLE_FORMAT_VERSION: u32 = 1;
/// Size of the footer.
pub const FOOTER_LEN: usize = 72;
/// Size of the trailer after each block (after its padding).
pub const BLOCK_TRAILER_LEN: usize = 8;
/// Block type byte: raw, uncompressed contents.
pub const BLOCK_TYPE_RAW: u8 = 0;
pub use crate::compress::{BLOCK_TYPE_LZ4, BLOCK_TYPE_ZSTD};
/// Tag of the properties block's compression record (see [`TableProperties`]).
const PROPS_TAG_COMPRESSION: u8 = 1;
/// One add in this many is timed for [`TableBuilder::encode_nanos`]. Prime, so the timed
/// adds fall on every position between a prefix block's restart points (every 16th entry
/// by default; a restart point skips the shared-prefix work, and sampling every 16th add
/// timed only those).
const ENCODE_SAMPLE: u64 = 17;

/// What timing an empty stretch of code reads (`Instant::now` then `elapsed`): the median
/// of 255 tries, measured once per process. A timed sample includes it once; subtracted,
/// the sample is the code's own time on average (the clock read costs about 37 ns on the
/// machine the benchmarks ran on, where a block add takes 15-40 ns, so the scaled samples
/// counted it several times over).
fn clock_overhead_nanos() -> u64 {
    static OVERHEAD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *OVERHEAD.get_or_init(|| {
        let mut tries: Vec<u64> = (0..255)
            .map(|_| {
                let t = Instant::now();
                t.elapsed().as_nanos() as u64
            })
            .collect();
        tries.sort_unstable();
        tries.get(tries.len() / 2).copied().unwrap_or(0)
    })
}

/// Nanoseconds since `start`, less the clock's own cost.
fn timed_since(start: Instant) -> u64 {
    (start.elapsed().as_nanos() as u64).saturating_sub(clock_overhead_nanos())
}

/// The time a table writer spends encoding blocks: every block finish timed, one entry add
/// in [`ENCODE_SAMPLE`] timed and the mean scaled to every add.
///
/// Reading the clock costs ~40-100 ns on VMs, so adds are sampled (less the clock's own
/// cost). A timing far beyond what copying the entry can take held a preemption of the
/// thread (every thread shares the cores with the others) and is left out.
#[derive(Debug, Default, Clone)]
pub struct EncodeClock {
    /// Nanoseconds of block finishes (every one timed).
    blocks: u64,
    /// Entries added, and the timed ones among them: their count and nanoseconds.
    added: u64,
    samples: u64,
    sample_nanos: u64,
}

impl EncodeClock {
    /// Starts timing an add when it is one of the sampled ones.
    #[must_use]
    pub fn start_add(&self) -> Option<Instant> {
        self.added.is_multiple_of(ENCODE_SAMPLE).then(Instant::now)
    }

    /// Ends an add of an entry of `entry_len` bytes begun with [`EncodeClock::start_add`].
    pub fn end_add(&mut self, start: Option<Instant>, entry_len: usize) {
        if let Some(start) = start {
            let ns = timed_since(start);
            if ns <= 10_000 + 2 * entry_len as u64 {
                self.samples += 1;
                self.sample_nanos += ns;
            }
        }
        self.added += 1;
    }

    /// Counts the time since `start` as a block finish's.
    pub fn end_block(&mut self, start: Instant) {
        self.blocks += timed_since(start);
    }

    /// Nanoseconds spent encoding: block finishes, and the sampled adds' mean times the
    /// adds.
    #[must_use]
    pub fn nanos(&self) -> u64 {
        let adds = if self.samples == 0 {
            0
        } else {
            let mean = self.sample_nanos as f64 / self.samples as f64;
            (mean * self.added as f64) as u64
        };
        self.blocks + adds
    }
}
/// Largest internal key accepted by the builder.
pub const MAX_KEY_LEN: usize = 1 << 28;
/// Largest value accepted by the builder.
pub const MAX_VALUE_LEN: usize = 1 << 30;

#[inline]
fn pad_len(len: u64) -> u64 {
    (8 - len % 8) % 8
}

/// Where a block is: offset and size of its contents (padding and trailer excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// Offset of the first byte of the contents.
    pub offset: u64,
    /// Length of the contents.
    pub size: u64,
}

impl BlockHandle {
    /// Offset just past this block's trailer (the next block's offset).
    #[must_use]
    pub fn end(&self) -> u64 {
        self.offset
            .saturating_add(self.size)
            .saturating_add(pad_len(self.size))
            .saturating_add(BLOCK_TRAILER_LEN as u64)
    }

    fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        let (lo, hi) = b.split_at_mut(8);
        lo.copy_from_slice(&self.offset.to_le_bytes());
        hi.copy_from_slice(&self.size.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != 16 {
            return None;
        }
        Some(Self {
            offset: get_fixed64(b, 0)?,
            size: get_fixed64(b, 8)?,
        })
    }
}

/// Options of a [`TableBuilder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableBuilderOptions {
    /// Target size of a data block's contents; a block is cut once it reaches this.
    /// Default 4096.
    pub block_size: usize,
    /// Layout of data blocks. Default [`BlockFormat::KeySet`].
    pub block_format: BlockFormat,
    /// Entries between restart points (Prefix blocks only). Default 16.
    pub restart_interval: usize,
    /// Bloom filter bits per user key; 0 = no filter. Default 10.
    pub bloom_bits_per_key: u32,
    /// How data blocks are compressed. Default [`Compression::None`] (the file is then
    /// byte for byte what a build without compression writes).
    pub compression: Compression,
    /// The Zstd level ([`Compression::Zstd`] only). Default 3, the library's default.
    pub zstd_level: i32,
    /// The order of the keys added. Default bytewise. Under another order the index keeps
    /// whole keys as separators (shortening them is a bytewise trick) and no bloom filter
    /// is written unless the comparator allows it ([`KeyOrder::filters_allowed`]).
    pub order: KeyOrder,
}

impl Default for TableBuilderOptions {
    fn default() -> Self {
        Self {
            block_size: 4096,
            block_format: BlockFormat::KeySet,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            order: KeyOrder::bytewise(),
        }
    }
}

/// What a table records about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct TableProperties {
    /// Entries (values and deletions).
    pub num_entries: u64,
    /// Deletion entries.
    pub num_deletions: u64,
    /// Data blocks.
    pub num_data_blocks: u64,
    /// Bytes of the data section (blocks, padding, trailers).
    pub data_size: u64,
    /// Bytes of the index block contents.
    pub index_size: u64,
    /// Bytes of the filter block contents (0 = no filter).
    pub filter_size: u64,
    /// Size of the whole file.
    pub file_size: u64,
    /// Sum of internal key lengths.
    pub raw_key_size: u64,
    /// Sum of value lengths.
    pub raw_value_size: u64,
    /// Smallest internal key (empty if the table is empty).
    pub smallest_key: Vec<u8>,
    /// Largest internal key (empty if the table is empty).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number (0 if empty).
    pub smallest_seq: SeqNo,
    /// Largest sequence number (0 if empty).
    pub largest_seq: SeqNo,
    /// Layout of the data blocks.
    pub block_format: BlockFormat,
    /// The compression the table was written with ([`Compression::None`] when the
    /// properties record none, as in every table written without compression).
    pub compression: Compression,
    /// Data blocks stored compressed (the others are raw: compressing them saved too
    /// little).
    pub num_compressed_blocks: u64,
    /// Sum of the data blocks' contents before compression (recorded with a compression
    /// only; 0 otherwise).
    pub uncompressed_block_bytes: u64,
}

impl TableProperties {
    fn empty(block_format: BlockFormat) -> Self {
        Self {
            num_entries: 0,
            num_deletions: 0,
            num_data_blocks: 0,
            data_size: 0,
            index_size: 0,
            filter_size: 0,
            file_size: 0,
            raw_key_size: 0,
            raw_value_size: 0,
            smallest_key: Vec::new(),
            largest_key: Vec::new(),
            smallest_seq: 0,
            largest_seq: 0,
            block_format,
            compression: Compression::None,
            num_compressed_blocks: 0,
            uncompressed_block_bytes: 0,
        }
    }

    /// Encodes the persisted fields (sizes known only from the footer are not stored).
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.smallest_key.len() + self.largest_key.len());
        for v in [
            self.num_entries,
            self.num_deletions,
            self.num_data_blocks,
            self.data_size,
            self.raw_key_size,
            self.raw_value_size,
            self.smallest_seq,
            self.largest_seq,
        ] {
            put_varint64(&mut b, v);
        }
        put_length_prefixed(&mut b, &self.smallest_key);
        put_length_prefixed(&mut b, &self.largest_key);
        // Tables without compression end here, as they always did.
        if self.compression != Compression::None {
            let mut rec = vec![self.compression.block_type()];
            put_varint64(&mut rec, self.num_compressed_blocks);
            put_varint64(&mut rec, self.uncompressed_block_bytes);
            b.push(PROPS_TAG_COMPRESSION);
            put_length_prefixed(&mut b, &rec);
        }
        b
    }

    fn decode(data: &[u8], offset: u64, block_format: BlockFormat) -> Result<Self> {
        let mut d = Decoder::new(data, offset);
        let mut p = Self::empty(block_format);
        p.num_entries = d.varint64()?;
        p.num_deletions = d.varint64()?;
        p.num_data_blocks = d.varint64()?;
        p.data_size = d.varint64()?;
        p.raw_key_size = d.varint64()?;
        p.raw_value_size = d.varint64()?;
        p.smallest_seq = d.varint64()?;
        p.largest_seq = d.varint64()?;
        p.smallest_key = d.length_prefixed()?.to_vec();
        p.largest_key = d.length_prefixed()?.to_vec();
        // Optional records: `tag u8 | length-prefixed payload`; unknown tags are skipped.
        let mut seen_compression = false;
        while d.remaining() > 0 {
            let at = d.offset();
            let tag = d.u8()?;
            let payload = d.length_prefixed()?;
            if tag != PROPS_TAG_COMPRESSION {
                continue;
            }
            let bad = |what: &str| Error::corruption(at, format!("properties block: {what}"));
            if seen_compression {
                return Err(bad("compression recorded twice"));
            }
            seen_compression = true;
            let mut r = Decoder::new(payload, at);
            let ty = r.u8()?;
            p.compression = Compression::from_block_type(ty)
                .ok_or_else(|| bad(&format!("unknown compression {ty}")))?;
            p.num_compressed_blocks = r.varint64()?;
            p.uncompressed_block_bytes = r.varint64()?;
            if r.remaining() != 0 {
                return Err(bad("trailing bytes in the compression record"));
            }
        }
        Ok(p)
    }
}

/// What follows a block's contents in a block frame: zero padding to 8 bytes, then the
/// trailer (masked crc32c of contents ++ type, the type, 3 zero bytes). Returns the bytes
/// and how many of them are used.
#[must_use]
pub fn block_frame_tail(contents: &[u8], block_type: u8) -> ([u8; 8 + BLOCK_TRAILER_LEN], usize) {
    block_frame_tail_of_parts(&[contents], block_type)
}

/// [`block_frame_tail`] of the contents made of `parts`, one after the other.
fn block_frame_tail_of_parts(
    parts: &[&[u8]],
    block_type: u8,
) -> ([u8; 8 + BLOCK_TRAILER_LEN], usize) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let pad = pad_len(len as u64) as usize;
    let crc = parts.iter().fold(0, |crc, p| crc32c_extend(crc, p));
    let crc = mask(crc32c_extend(crc, &[block_type]));
    let mut tail = [0u8; 8 + BLOCK_TRAILER_LEN];
    let (_, t) = tail.split_at_mut(pad);
    if let Some(c) = t.get_mut(..4) {
        c.copy_from_slice(&crc.to_le_bytes());
    }
    if let Some(ty) = t.get_mut(4) {
        *ty = block_type;
    }
    (tail, pad + BLOCK_TRAILER_LEN)
}

/// Appends a whole block frame (the contents, then [`block_frame_tail`]) to `out`: the
/// layout of SST data blocks, of NVM buffers and of matrix rows.
pub fn append_block_frame(out: &mut Vec<u8>, contents: &[u8], block_type: u8) {
    append_block_frame_parts(out, &[contents], block_type);
}

/// [`append_block_frame`] of the contents made of `parts`, one after the other (a block
/// builder's pieces, copied once).
pub fn append_block_frame_parts(out: &mut Vec<u8>, parts: &[&[u8]], block_type: u8) {
    let (tail, n) = block_frame_tail_of_parts(parts, block_type);
    for p in parts {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(tail.get(..n).unwrap_or(&tail));
}

/// Checks the frame of a block: `contents`, then `tail` (its padding and trailer, at least
/// [`block_frame_tail`]'s length). `offset` is where the contents start (for errors).
/// Returns the block type (not checked against the known ones).
///
/// # Errors
/// `Corruption` for non-zero padding or reserved bytes, a short tail or a checksum
/// mismatch.
pub fn check_block_frame(contents: &[u8], tail: &[u8], offset: u64) -> Result<u8> {
    let size = contents.len() as u64;
    let pad = pad_len(size) as usize;
    let (padding, trailer) = tail.split_at(pad.min(tail.len()));
    let stored = get_fixed32(trailer, 0).map(unmask);
    let ty = trailer.get(4).copied();
    if padding
        .iter()
        .chain(trailer.get(5..BLOCK_TRAILER_LEN).unwrap_or_default())
        .any(|&b| b != 0)
    {
        return Err(Error::corruption(
            offset + size,
            "block padding or trailer bytes not zero",
        ));
    }
    let Some(ty) = ty else {
        return Err(Error::corruption(offset, "truncated block trailer"));
    };
    let actual = crc32c_extend(crc32c(contents), &[ty]);
    if stored != Some(actual) {
        return Err(Error::checksum_mismatch(
            offset,
            "block",
            stored.unwrap_or_default(),
            actual,
        ));
    }
    Ok(ty)
}

/// Writes `contents` (stored as block type `block_type`), its padding and trailer; returns
/// its handle.
fn write_block(
    file: &mut dyn WritableFile,
    offset: &mut u64,
    contents: &[u8],
    block_type: u8,
) -> std::io::Result<BlockHandle> {
    write_block_parts(file, offset, &[contents], block_type)
}

/// [`write_block`] of the contents made of `parts`, one after the other: each part is
/// copied once, into the file, never gathered into one buffer first.
fn write_block_parts(
    file: &mut dyn WritableFile,
    offset: &mut u64,
    parts: &[&[u8]],
    block_type: u8,
) -> std::io::Result<BlockHandle> {
    let size = parts.iter().map(|p| p.len() as u64).sum();
    let (tail, n) = block_frame_tail_of_parts(parts, block_type);
    for part in parts {
        file.append(part)?;
    }
    file.append(tail.get(..n).unwrap_or(&tail))?;
    let h = BlockHandle {
        offset: *offset,
        size,
    };
    *offset = h.end();
    Ok(h)
}

/// How a data block's `contents` are stored: compressed by `compressor` when that pays
/// (counted in `props`, timed in `compress_nanos` apart from encoding, so the encode cost
/// stays the cost of building blocks), else as they are.
fn stored_form<'a>(
    compressor: &'a mut BlockCompressor,
    props: &mut TableProperties,
    compress_nanos: &mut u64,
    contents: &'a [u8],
) -> (&'a [u8], u8) {
    if compressor.kind() == Compression::None {
        return (contents, BLOCK_TYPE_RAW);
    }
    let start = Instant::now();
    let compressed_type = compressor.kind().block_type();
    let compressed = compressor.compress(contents);
    *compress_nanos += start.elapsed().as_nanos() as u64;
    props.uncompressed_block_bytes += contents.len() as u64;
    match compressed {
        Some(c) => {
            props.num_compressed_blocks += 1;
            (c, compressed_type)
        }
        None => (contents, BLOCK_TYPE_RAW),
    }
}

/// Appends to `out` an internal key `S` with `start <= S < limit`, as short as possible.
fn separator(start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let (su, lu) = (user_key(start), user_key(limit));
    let n = su.iter().zip(lu).take_while(|(a, b)| a == b).count();
    if let (Some(&b), Some(&l)) = (su.get(n), lu.get(n))
        && b < 0xff
        && b + 1 < l
        && let Some(prefix) = su.get(..n)
    {
        out.extend_from_slice(prefix);
        out.push(b + 1);
        out.extend_from_slice(&pack_trailer(MAX_SEQ, ValueKind::SEEK).to_le_bytes());
        if compare_internal_keys(start, out) == Ordering::Less
            && compare_internal_keys(out, limit) == Ordering::Less
        {
            return;
        }
        out.clear();
    }
    out.extend_from_slice(start);
}

/// Appends to `out` a short internal key `S >= key`.
fn successor(key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let uk = user_key(key);
    if let Some(i) = uk.iter().position(|&b| b != 0xff)
        && let (Some(prefix), Some(&b)) = (uk.get(..i), uk.get(i))
    {
        out.extend_from_slice(prefix);
        out.push(b + 1);
        out.extend_from_slice(&pack_trailer(MAX_SEQ, ValueKind::SEEK).to_le_bytes());
        return;
    }
    out.extend_from_slice(key);
}

/// Writes one SST file.
///
/// Thread-safety: single owner.
#[derive(Debug)]
pub struct TableBuilder {
    /// Bytes of blocks added whole (`add_keyset_block`).
    copied_block_bytes: u64,
    file: Box<dyn WritableFile>,
    opts: TableBuilderOptions,
    data_block: BlockBuilder,
    index: KeySetWriter,
    bloom: Option<BloomBuilder>,
    last_key: Vec<u8>,
    pending: Option<BlockHandle>,
    offset: u64,
    props: TableProperties,
    /// Time spent encoding blocks (see `add`).
    encode: EncodeClock,
    compressor: BlockCompressor,
    compress_nanos: u64,
    failed: bool,
    scratch: Vec<u8>,
}

impl TableBuilder {
    /// A builder writing to `file` (which should be empty).
    #[must_use]
    pub fn new(file: Box<dyn WritableFile>, opts: TableBuilderOptions) -> Self {
        let opts = TableBuilderOptions {
            block_size: opts.block_size.clamp(64, 1 << 30),
            restart_interval: opts.restart_interval.max(1),
            ..opts
        };
        Self {
            offset: file.size(),
            file,
            data_block: BlockBuilder::new(opts.block_format, opts.restart_interval),
            index: KeySetWriter::new(IndexKind::ValueRef),
            bloom: (opts.bloom_bits_per_key > 0 && opts.order.filters_allowed())
                .then(|| BloomBuilder::new(opts.bloom_bits_per_key)),
            last_key: Vec::new(),
            pending: None,
            props: TableProperties {
                smallest_seq: SeqNo::MAX,
                compression: opts.compression,
                ..TableProperties::empty(opts.block_format)
            },
            encode: EncodeClock::default(),
            copied_block_bytes: 0,
            compressor: BlockCompressor::new(opts.compression, opts.zstd_level),
            compress_nanos: 0,
            failed: false,
            scratch: Vec::new(),
            opts,
        }
    }

    fn fail<T>(&mut self, e: std::io::Error) -> Result<T> {
        self.failed = true;
        Err(e.into())
    }

    /// Adds an entry.
    ///
    /// REQUIRES: `ikey` is greater (internal-key order) than every key added before.
    ///
    /// # Errors
    /// `InvalidArgument` if `ikey` is not an internal key, is out of order, or the entry is
    /// too large, or if an earlier write failed; `Io` if writing a block fails.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if self.failed {
            return Err(Error::InvalidArgument(
                "table builder: an earlier write failed".into(),
            ));
        }
        let Some(parsed) = parse_internal_key(ikey) else {
            return Err(Error::InvalidArgument(format!(
                "table builder: not an internal key ({} bytes)",
                ikey.len()
            )));
        };
        if ikey.len() > MAX_KEY_LEN || value.len() > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "table builder: entry too large (key {} bytes, value {} bytes)",
                ikey.len(),
                value.len()
            )));
        }
        if self.props.num_entries > 0
            && self.opts.order.compare_internal(&self.last_key, ikey) != Ordering::Less
        {
            return Err(Error::InvalidArgument(
                "table builder: keys not strictly increasing".into(),
            ));
        }
        // Only the block's own encoding is timed (see `EncodeClock`): the filter, the index
        // and the properties are the same work whatever the block format.
        let start = self.encode.start_add();
        self.data_block.add(ikey, value);
        let full = self.data_block.estimated_size() >= self.opts.block_size;
        self.encode.end_add(start, ikey.len() + value.len());
        self.note_entry(ikey, &parsed, value.len());
        if full {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a whole KeySet run (the contents of an SST data block, e.g. a block of an NVM
    /// table's persistent buffer) as one data block, copied as it is: no entry is decoded
    /// or re-encoded, only its keys are read for the filter, the properties and the index.
    /// Returns `false` (nothing done) when the table's blocks are not KeySet blocks; the
    /// caller then adds the entries one by one.
    ///
    /// # Errors
    /// `InvalidArgument` for a run that is not a valid ValueRef KeySet run, whose keys are
    /// not internal keys or not above every key added so far; I/O errors.
    pub fn add_keyset_block(&mut self, contents: &[u8]) -> Result<bool> {
        if self.failed {
            return Err(Error::InvalidArgument(
                "table builder: an earlier write failed".into(),
            ));
        }
        if self.opts.block_format != BlockFormat::KeySet {
            return Ok(false);
        }
        let run = KeySetRef::parse(contents, 0)
            .map_err(|e| Error::InvalidArgument(format!("table builder: copied block: {e}")))?;
        if run.index_kind() != IndexKind::ValueRef || run.num_entries() == 0 {
            return Err(Error::InvalidArgument(
                "table builder: a copied block must hold entries with their values".into(),
            ));
        }
        self.flush_data_block()?;
        for i in 0..run.num_entries() {
            let (Some(ikey), Some(value)) = (run.key(i), run.value(i)) else {
                return Err(Error::InvalidArgument(
                    "table builder: copied block: unreadable entry".into(),
                ));
            };
            let Some(parsed) = parse_internal_key(ikey) else {
                return Err(Error::InvalidArgument(
                    "table builder: copied block: not an internal key".into(),
                ));
            };
            if self.props.num_entries > 0
                && self.opts.order.compare_internal(&self.last_key, ikey) != Ordering::Less
            {
                return Err(Error::InvalidArgument(
                    "table builder: copied block: keys not strictly increasing".into(),
                ));
            }
            self.note_entry(ikey, &parsed, value.len());
        }
        self.copied_block_bytes += contents.len() as u64;
        self.store_block(contents)?;
        Ok(true)
    }

    /// Records an entry just placed in a data block: the index entry of the block before it
    /// (if that one was finished), the filter, the properties and the last key.
    fn note_entry(&mut self, ikey: &[u8], parsed: &ParsedInternalKey<'_>, value_len: usize) {
        if let Some(h) = self.pending.take() {
            if self.opts.order.is_bytewise() {
                separator(&self.last_key, ikey, &mut self.scratch);
            } else {
                self.scratch.clear();
                self.scratch.extend_from_slice(&self.last_key);
            }
            self.index.add_with_value(&self.scratch, &h.encode());
        }
        if let Some(b) = &mut self.bloom {
            b.add_key(parsed.user_key);
        }
        let p = &mut self.props;
        if p.num_entries == 0 {
            p.smallest_key = ikey.to_vec();
        }
        p.num_entries += 1;
        if parsed.kind == ValueKind::Deletion {
            p.num_deletions += 1;
        }
        p.raw_key_size += ikey.len() as u64;
        p.raw_value_size += value_len as u64;
        p.smallest_seq = p.smallest_seq.min(parsed.seq);
        p.largest_seq = p.largest_seq.max(parsed.seq);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
    }

    /// Bytes of data blocks added whole by [`TableBuilder::add_keyset_block`].
    #[must_use]
    pub fn copied_block_bytes(&self) -> u64 {
        self.copied_block_bytes
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        let written = if self.compressor.kind() == Compression::None {
            // Uncompressed, the block goes to the file in its builder's pieces: its values
            // (most of its bytes) are copied once, not gathered first.
            let parts = self.data_block.finish_parts();
            self.encode.end_block(start);
            write_block_parts(self.file.as_mut(), &mut self.offset, &parts, BLOCK_TYPE_RAW)
        } else {
            let contents = self.data_block.finish();
            self.encode.end_block(start);
            let (stored, block_type) = stored_form(
                &mut self.compressor,
                &mut self.props,
                &mut self.compress_nanos,
                contents,
            );
            write_block(self.file.as_mut(), &mut self.offset, stored, block_type)
        };
        self.data_block.reset();
        self.block_written(written)
    }

    /// Writes the contents of a data block (compressed when that pays) and makes it the
    /// pending index entry.
    fn store_block(&mut self, contents: &[u8]) -> Result<()> {
        let (stored, block_type) = stored_form(
            &mut self.compressor,
            &mut self.props,
            &mut self.compress_nanos,
            contents,
        );
        let written = write_block(self.file.as_mut(), &mut self.offset, stored, block_type);
        self.block_written(written)
    }

    /// Makes a data block just written the pending index entry.
    fn block_written(&mut self, written: std::io::Result<BlockHandle>) -> Result<()> {
        match written {
            Ok(h) => {
                self.pending = Some(h);
                self.props.num_data_blocks += 1;
                Ok(())
            }
            Err(e) => self.fail(e),
        }
    }

    /// Entries added so far.
    #[must_use]
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the size of the pending block.
    #[must_use]
    pub fn file_size(&self) -> u64 {
        let pending = if self.data_block.is_empty() {
            0
        } else {
            self.data_block.estimated_size() as u64
        };
        self.offset + pending
    }

    /// Nanoseconds spent encoding entries into data blocks (the engine's "encode cost"):
    /// every block's finish is timed; adds are sampled (one in 17, their mean counted for
    /// every add) because reading the clock per entry would cost as much as the encoding;
    /// the clock's own cost is taken off every timing, and a timed add that held a
    /// preemption of the thread is left out. The filter, index and properties kept per entry are not
    /// encoding and are not counted.
    /// Compression is not included: see [`TableBuilder::compress_nanos`].
    #[must_use]
    pub fn encode_nanos(&self) -> u64 {
        self.encode.nanos()
    }

    /// Nanoseconds spent compressing data blocks (every block timed; 0 without compression).
    #[must_use]
    pub fn compress_nanos(&self) -> u64 {
        self.compress_nanos
    }

    /// Writes the last data block, the filter, properties, index and footer, then syncs.
    ///
    /// # Errors
    /// `Io` if a write or the sync fails; `InvalidArgument` if an earlier write failed.
    pub fn finish(mut self) -> Result<TableProperties> {
        if self.failed {
            return Err(Error::InvalidArgument(
                "table builder: an earlier write failed".into(),
            ));
        }
        self.flush_data_block()?;
        if let Some(h) = self.pending.take() {
            if self.opts.order.is_bytewise() {
                successor(&self.last_key, &mut self.scratch);
            } else {
                self.scratch.clear();
                self.scratch.extend_from_slice(&self.last_key);
            }
            self.index.add_with_value(&self.scratch, &h.encode());
        }
        if self.props.num_entries == 0 {
            self.props.smallest_seq = 0;
        }
        self.props.largest_key = self.last_key.clone();
        self.props.data_size = self.offset;
        match self.write_tail() {
            Ok(()) => Ok(self.props),
            Err(e) => self.fail(e),
        }
    }

    fn write_tail(&mut self) -> std::io::Result<()> {
        let file = self.file.as_mut();
        let filter = match &mut self.bloom {
            Some(b) => {
                let bytes = b.finish();
                write_block(file, &mut self.offset, &bytes, BLOCK_TYPE_RAW)?
            }
            None => BlockHandle::default(),
        };
        let props = write_block(file, &mut self.offset, &self.props.encode(), BLOCK_TYPE_RAW)?;
        let index = write_block(file, &mut self.offset, self.index.finish(), BLOCK_TYPE_RAW)?;
        let mut footer = Vec::with_capacity(FOOTER_LEN);
        for h in [index, filter, props] {
            footer.extend_from_slice(&h.encode());
        }
        footer.extend_from_slice(&u32::from(self.opts.block_format.to_u8()).to_le_bytes());
        footer.extend_from_slice(&TABLE_FORMAT_VERSION.to_le_bytes());
        footer.extend_from_slice(&0u32.to_le_bytes());
        let crc = mask(crc32c(&footer));
        footer.extend_from_slice(&crc.to_le_bytes());
        footer.extend_from_slice(&TABLE_MAGIC.to_le_bytes());
        file.append(&footer)?;
        self.offset += footer.len() as u64;
        file.sync()?;
        self.props.filter_size = filter.size;
        self.props.index_size = index.size;
        self.props.file_size = self.offset;
        Ok(())
    }

    /// Gives up on the table; the caller deletes the file.
    pub fn abandon(self) {}
}

/// A block cache shared by tables; keyed by `(cache_id, block offset)`.
pub trait BlockCache: Send + Sync + std::fmt::Debug {
    /// The cached block, if any.
    fn get(&self, cache_id: u64, offset: u64) -> Option<Arc<Block>>;
    /// Caches a block.
    fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>);
}

/// Read statistics of one table or, when shared through
/// [`TableReader::open_with_counters`], of many: relaxed totals, striped by thread
/// ([`mezz_util::counter`]) so that threads reading at once do not contend on one cache line.
#[derive(Debug, Default)]
pub struct ReadCounters {
    c: StripedCounters<6>,
}

/// Which total of a [`ReadCounters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadCounter {
    /// Blocks read from the file (data, index, filter, properties).
    BlocksRead = 0,
    /// Bytes read from the file (including trailers and the footer).
    BytesRead = 1,
    /// Nanoseconds spent verifying checksums and validating data blocks (decompression
    /// excluded).
    DecodeNanos = 2,
    /// Nanoseconds spent decompressing data blocks.
    DecompressNanos = 3,
    /// Data-block lookups served by the block cache.
    CacheHits = 4,
    /// Data-block lookups that went to the file while a cache was configured.
    CacheMisses = 5,
}

impl ReadCounters {
    /// The total of `which`.
    #[must_use]
    pub fn get(&self, which: ReadCounter) -> u64 {
        self.c.get(which as usize)
    }

    /// `(blocks_read, bytes_read, decode_nanos, cache_hits, cache_misses)`.
    #[must_use]
    pub fn snapshot(&self) -> (u64, u64, u64, u64, u64) {
        use ReadCounter::*;
        (
            self.get(BlocksRead),
            self.get(BytesRead),
            self.get(DecodeNanos),
            self.get(CacheHits),
            self.get(CacheMisses),
        )
    }

    /// Adds `v` to `which`.
    #[inline]
    pub fn add(&self, which: ReadCounter, v: u64) {
        self.c.add(which as usize, v);
    }
}

#[derive(Debug, Clone, Copy)]
struct Footer {
    index: BlockHandle,
    filter: BlockHandle,
    props: BlockHandle,
    block_format: BlockFormat,
}

impl Footer {
    fn decode(b: &[u8], offset: u64) -> Result<Self> {
        let at = |rel: usize, what: &str| Error::corruption(offset + rel as u64, what.to_string());
        let magic = get_fixed64(b, 64).ok_or_else(|| at(0, "footer: truncated"))?;
        if magic != TABLE_MAGIC {
            return Err(Error::corruption(
                offset + 64,
                CorruptionDetail::BadMagic {
                    what: "footer",
                    found: magic,
                },
            ));
        }
        let stored = get_fixed32(b, 60).ok_or_else(|| at(0, "footer: truncated"))?;
        let actual = crc32c(b.get(..60).ok_or_else(|| at(0, "footer: truncated"))?);
        if unmask(stored) != actual {
            return Err(Error::checksum_mismatch(
                offset + 60,
                "footer",
                unmask(stored),
                actual,
            ));
        }
        let version = get_fixed32(b, 52).ok_or_else(|| at(0, "footer: truncated"))?;
        if version != TABLE_FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "SST file",
                found: version,
                supported: TABLE_FORMAT_VERSION,
            });
        }
        let fmt = get_fixed32(b, 48).ok_or_else(|| at(0, "footer: truncated"))?;
        let block_format = u8::try_from(fmt)
            .ok()
            .and_then(BlockFormat::from_u8)
            .ok_or_else(|| at(48, &format!("footer: unknown block format {fmt}")))?;
        if get_fixed32(b, 56) != Some(0) {
            return Err(at(56, "footer: reserved field not zero"));
        }
        let h = |rel: usize| {
            b.get(rel..rel + 16)
                .and_then(BlockHandle::decode)
                .ok_or_else(|| at(rel, "footer: truncated handle"))
        };
        Ok(Self {
            index: h(0)?,
            filter: h(16)?,
            props: h(32)?,
            block_format,
        })
    }
}

/// An open SST file. Footer, index, filter and properties stay in memory; data blocks are
/// read on demand through the optional block cache.
///
/// Thread-safety: `Send + Sync`; share it as `Arc<TableReader>`.
#[derive(Debug)]
pub struct TableReader {
    file: Arc<dyn RandomAccessFile>,
    file_size: u64,
    cache_id: u64,
    cache: Option<Arc<dyn BlockCache>>,
    footer: Footer,
    index: Arc<Block>,
    filter: Option<BloomFilter>,
    props: TableProperties,
    counters: Arc<ReadCounters>,
    order: KeyOrder,
}

impl TableReader {
    /// Opens a table of `file_size` bytes, with its own [`ReadCounters`].
    ///
    /// # Errors
    /// `Corruption` naming the offset for any bad footer, checksum or structure;
    /// `UnsupportedVersion` for a newer format; `Io` if reading fails.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_size: u64,
        cache_id: u64,
        cache: Option<Arc<dyn BlockCache>>,
        order: &KeyOrder,
    ) -> Result<TableReader> {
        Self::open_with_counters(file, file_size, cache_id, cache, Arc::default(), order)
    }

    /// As [`TableReader::open`], counting reads into `counters` (which may be shared).
    ///
    /// # Errors
    /// As [`TableReader::open`].
    pub fn open_with_counters(
        file: Arc<dyn RandomAccessFile>,
        file_size: u64,
        cache_id: u64,
        cache: Option<Arc<dyn BlockCache>>,
        counters: Arc<ReadCounters>,
        order: &KeyOrder,
    ) -> Result<TableReader> {
        let footer_off = file_size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| {
            Error::corruption(
                0,
                format!("file of {file_size} bytes is too short for a table"),
            )
        })?;
        let mut fb = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_off, &mut fb)?;
        counters.add(ReadCounter::BytesRead, FOOTER_LEN as u64);
        let footer = Footer::decode(&fb, footer_off)?;
        let index_raw = read_raw(file.as_ref(), &counters, footer.index, footer_off)?;
        let index = Block::new_at(index_raw, BlockFormat::KeySet, footer.index.offset)?;
        if index.keyset().map(|k| k.index_kind()) != Some(IndexKind::ValueRef) {
            return Err(Error::corruption(
                footer.index.offset,
                "index block: wrong index kind",
            ));
        }
        let filter = if footer.filter.size > 0 {
            let raw = read_raw(file.as_ref(), &counters, footer.filter, footer_off)?;
            Some(BloomFilter::from_bytes_at(raw, footer.filter.offset)?)
        } else {
            None
        };
        let raw = read_raw(file.as_ref(), &counters, footer.props, footer_off)?;
        let mut props = TableProperties::decode(&raw, footer.props.offset, footer.block_format)?;
        props.index_size = footer.index.size;
        props.filter_size = footer.filter.size;
        props.file_size = file_size;
        // The data section ends where the first meta block starts.
        let data_end = if footer.filter.size > 0 {
            footer.filter.offset
        } else {
            footer.props.offset
        };
        if props.data_size > data_end {
            return Err(Error::corruption(
                footer.props.offset,
                format!(
                    "properties: data size {} overlaps the meta blocks at {data_end}",
                    props.data_size
                ),
            ));
        }
        Ok(TableReader {
            file,
            file_size,
            cache_id,
            cache,
            footer,
            index: Arc::new(index),
            filter,
            props,
            counters,
            order: order.clone(),
        })
    }

    /// The key order the table is read in.
    #[must_use]
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// Reads a data block, through the cache when one is configured.
    fn data_block(&self, h: BlockHandle, fill_cache: bool) -> Result<Arc<Block>> {
        self.data_block_via(h, fill_cache, None)
    }

    /// [`TableReader::data_block`], reading a block the cache does not hold through the
    /// scan's read-ahead window if it has one.
    fn data_block_via(
        &self,
        h: BlockHandle,
        fill_cache: bool,
        readahead: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(self.cache_id, h.offset) {
                self.counters.add(ReadCounter::CacheHits, 1);
                return Ok(b);
            }
            self.counters.add(ReadCounter::CacheMisses, 1);
        }
        let b = Arc::new(self.read_data_block_typed(h, readahead)?.0);
        if fill_cache && let Some(c) = &self.cache {
            c.insert(self.cache_id, h.offset, Arc::clone(&b));
        }
        Ok(b)
    }

    /// Reads, verifies, decompresses and validates the data block at `h` (through
    /// `readahead`, if given); returns it with its stored block type.
    fn read_data_block_typed(
        &self,
        h: BlockHandle,
        readahead: Option<&mut Readahead>,
    ) -> Result<(Block, u8)> {
        if h.end() > self.props.data_size {
            return Err(Error::corruption(
                h.offset,
                "index: data block handle beyond the data section",
            ));
        }
        let (bytes, size) = read_block_bytes(
            self.file.as_ref(),
            &self.counters,
            h,
            self.props.data_size,
            readahead,
        )?;
        let start = Instant::now();
        let (stored, block_type) = check_block(bytes, h, size)?;
        let mut decode_nanos = start.elapsed().as_nanos() as u64;
        let raw = if block_type == BLOCK_TYPE_RAW {
            stored
        } else {
            let start = Instant::now();
            let raw = decompress_block(block_type, &stored, h.offset)?;
            self.counters.add(
                ReadCounter::DecompressNanos,
                start.elapsed().as_nanos() as u64,
            );
            mezz_util::spare::give(stored);
            raw
        };
        let start = Instant::now();
        let b = Block::new_at(raw, self.footer.block_format, h.offset)
            .map_err(|e| in_decompressed(e, h, block_type))?;
        if b.keyset()
            .is_some_and(|k| k.index_kind() != IndexKind::ValueRef)
        {
            return Err(Error::corruption(
                h.offset,
                "data block: KeySet run without value references",
            ));
        }
        decode_nanos += start.elapsed().as_nanos() as u64;
        self.counters.add(ReadCounter::DecodeNanos, decode_nanos);
        Ok((b, block_type))
    }

    fn handle_at(&self, i: usize) -> Result<BlockHandle> {
        self.index
            .keyset()
            .and_then(|k| k.value(i))
            .and_then(BlockHandle::decode)
            .ok_or_else(|| {
                Error::corruption(
                    self.footer.index.offset,
                    format!("index entry {i}: bad handle"),
                )
            })
    }

    fn index_len(&self) -> usize {
        self.index.keyset().map_or(0, |k| k.num_entries())
    }

    /// The table's properties.
    #[must_use]
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The cache identity given at open.
    #[must_use]
    pub fn cache_id(&self) -> u64 {
        self.cache_id
    }

    /// The file size given at open.
    #[must_use]
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The counters this table updates.
    #[must_use]
    pub fn counters(&self) -> &Arc<ReadCounters> {
        &self.counters
    }

    /// `(blocks_read_from_file, bytes_read_from_file, decode_nanos, cache_hits,
    /// cache_misses)` so far (shared totals if the counters are shared).
    #[must_use]
    pub fn read_counters(&self) -> (u64, u64, u64, u64, u64) {
        self.counters.snapshot()
    }

    /// False only if the filter proves `user_key` is absent; true without a filter.
    #[must_use]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// The first entry whose internal key is >= `lookup`, if its user key equals `lookup`'s
    /// (consults the filter first). Returns `(internal key, value)`.
    ///
    /// # Errors
    /// `Corruption` / `Io` from reading a block.
    pub fn get(&self, lookup: &[u8], fill_cache: bool) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if !self.may_contain(user_key(lookup)) {
            return Ok(None);
        }
        self.get_unfiltered(lookup, fill_cache)
    }

    /// As [`TableReader::get`] without consulting the filter, for callers that already
    /// asked [`TableReader::may_contain`] (e.g. to count filter negatives).
    ///
    /// # Errors
    /// `Corruption` / `Io` from reading a block.
    pub fn get_unfiltered(
        &self,
        lookup: &[u8],
        fill_cache: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some((key, block, range)) = self.get_unfiltered_pinned(lookup, fill_cache)? else {
            return Ok(None);
        };
        // `range` was taken from this block's contents by `get_unfiltered_pinned`.
        let value = block
            .contents()
            .get(range)
            .ok_or_else(|| Error::corruption(0, "a block value outside its block"))?;
        Ok(Some((key, value.to_vec())))
    }

    /// As [`TableReader::get_unfiltered`], without copying the value: returns the found
    /// entry's internal key and the data block holding it with the value's byte range in
    /// [`Block::contents`]. The block (shared with the block cache, if any) stays alive as
    /// long as the caller holds it.
    ///
    /// # Errors
    /// `Corruption` / `Io` from reading a block.
    pub fn get_unfiltered_pinned(
        &self,
        lookup: &[u8],
        fill_cache: bool,
    ) -> Result<Option<PinnedEntry>> {
        let uk = user_key(lookup);
        let Some(ks) = self.index.keyset() else {
            return Ok(None);
        };
        let mut i = ks.find(lookup, &self.order);
        while i < ks.num_entries() {
            let h = self.handle_at(i)?;
            let block = self.data_block(h, fill_cache)?;
            let mut it = block.iter(&self.order);
            it.seek(lookup);
            if it.valid() {
                if !self.order.same_user(user_key(it.key()), uk) {
                    return Ok(None);
                }
                let key = it.key().to_vec();
                let range = subslice_range(block.contents(), it.value()).ok_or_else(|| {
                    Error::corruption(h.offset, "a block value outside its block")
                })?;
                drop(it);
                return Ok(Some((key, block, range)));
            }
            it.status()?;
            i += 1;
        }
        Ok(None)
    }

    /// A two-level iterator over the table, initially unpositioned.
    #[must_use]
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIter {
        self.iter_with_readahead(fill_cache, 0)
    }

    /// [`TableReader::iter`] for a scan of the whole table in order (a compaction's input):
    /// data blocks the cache does not hold are read from the file `readahead` bytes at a
    /// time into a window the iterator owns, instead of one read per block (`0`: one read
    /// per block). For files read with direct I/O, where the kernel reads nothing ahead
    /// (RocksDB's `compaction_readahead_size`).
    #[must_use]
    pub fn iter_with_readahead(self: &Arc<Self>, fill_cache: bool, readahead: usize) -> TableIter {
        TableIter {
            index: self.index.iter(&self.order),
            table: Arc::clone(self),
            data: None,
            data_offset: u64::MAX,
            fill_cache,
            readahead: (readahead > 0).then(|| Readahead::new(readahead, Arc::clone(&self.file))),
            err: None,
        }
    }

    /// Reads every block (bypassing the cache), verifies every checksum, that keys are valid
    /// internal keys strictly increasing across the table, consistent with the index, the
    /// filter and the properties. Returns the number of entries.
    ///
    /// # Errors
    /// The first `Corruption` (or `Io`) found.
    pub fn verify(&self) -> Result<u64> {
        self.verify_with_readahead(0)
    }

    /// [`TableReader::verify`], reading the data blocks `readahead` bytes at a time (see
    /// [`TableReader::iter_with_readahead`]; `0`: one read per block).
    ///
    /// # Errors
    /// As [`TableReader::verify`].
    pub fn verify_with_readahead(&self, readahead: usize) -> Result<u64> {
        let mut window = (readahead > 0).then(|| Readahead::new(readahead, Arc::clone(&self.file)));
        let n = self.index_len();
        let ks = self.index.keyset();
        let mut prev: Option<Vec<u8>> = None;
        let mut prev_sep: Option<&[u8]> = None;
        let mut count = 0u64;
        let mut expect_offset = 0u64;
        let (mut compressed_blocks, mut uncompressed_bytes) = (0u64, 0u64);
        for i in 0..n {
            let sep = ks.and_then(|k| k.key(i)).unwrap_or_default();
            let h = self.handle_at(i)?;
            let bad = |what: String| Err(Error::corruption(h.offset, what));
            if h.offset != expect_offset {
                return bad(format!(
                    "data block {i} at {} expected at {expect_offset}",
                    h.offset
                ));
            }
            if let Some(p) = prev_sep
                && self.order.compare_internal(p, sep) != Ordering::Less
            {
                return bad(format!("index key {i} not increasing"));
            }
            let (block, block_type) = self.read_data_block_typed(h, window.as_mut())?;
            if block_type != BLOCK_TYPE_RAW {
                if Compression::from_block_type(block_type) != Some(self.props.compression) {
                    return bad(format!(
                        "data block {i} of type {block_type} in a table whose properties \
                         record compression {}",
                        self.props.compression
                    ));
                }
                compressed_blocks += 1;
            }
            uncompressed_bytes += block.len_bytes() as u64;
            let block = Arc::new(block);
            block
                .check_entries()
                .map_err(|e| in_decompressed(e, h, block_type))?;
            let mut it = block.iter(&self.order);
            it.seek_to_first();
            let mut in_block = 0u64;
            while it.valid() {
                let k = it.key();
                let Some(p) = parse_internal_key(k) else {
                    return bad(format!("data block {i}: malformed internal key"));
                };
                if let Some(pk) = &prev
                    && self.order.compare_internal(pk, k) != Ordering::Less
                {
                    return bad(format!("data block {i}: keys not strictly increasing"));
                }
                if self.order.compare_internal(k, sep) == Ordering::Greater {
                    return bad(format!("data block {i}: key beyond its index separator"));
                }
                // The other half of the separator contract (`S < first key of the next
                // block`): seeks trust it to pick the block that holds the target.
                if in_block == 0
                    && let Some(p) = prev_sep
                    && self.order.compare_internal(p, k) != Ordering::Less
                {
                    return bad(format!(
                        "data block {i}: first key not above the previous index separator"
                    ));
                }
                if !self.may_contain(p.user_key) {
                    return bad(format!("data block {i}: filter does not contain a key"));
                }
                prev = Some(k.to_vec());
                in_block += 1;
                it.next();
            }
            it.status()?;
            if in_block == 0 {
                return bad(format!("data block {i} is empty"));
            }
            count += in_block;
            expect_offset = h.end();
            prev_sep = Some(sep);
        }
        let p = &self.props;
        if expect_offset != p.data_size || count != p.num_entries || n as u64 != p.num_data_blocks {
            return Err(Error::corruption(
                self.footer.props.offset,
                format!(
                    "properties disagree with the data: {count} entries in {n} blocks ending \
                     at {expect_offset}; properties say {} entries in {} blocks ending at {}",
                    p.num_entries, p.num_data_blocks, p.data_size
                ),
            ));
        }
        let recorded = p.compression != Compression::None;
        if compressed_blocks != p.num_compressed_blocks
            || (recorded && uncompressed_bytes != p.uncompressed_block_bytes)
        {
            return Err(Error::corruption(
                self.footer.props.offset,
                format!(
                    "properties disagree with the data: {compressed_blocks} compressed blocks \
                     holding {uncompressed_bytes} bytes; properties say {} blocks, {} bytes",
                    p.num_compressed_blocks, p.uncompressed_block_bytes
                ),
            ));
        }
        Ok(count)
    }

    /// Reads every data block on its own (bypassing the cache), verifying each checksum, and
    /// hands `keep` every entry of every block that reads whole, in order: what a repair
    /// keeps of a table with damaged blocks (LevelDB's `RepairDB` copies a table's readable
    /// entries the same way). A block that fails to read, verify or decode is skipped
    /// whole; so is an entry whose key is not a valid internal key or does not follow the
    /// previous kept key in order.
    ///
    /// # Errors
    /// Only what `keep` returns; damage is reported in the [`Salvage`].
    pub fn salvage(&self, keep: &mut SalvageSink<'_>) -> Result<Salvage> {
        let mut out = Salvage {
            expected_entries: self.props.num_entries,
            ..Salvage::default()
        };
        let mut prev: Option<Vec<u8>> = None;
        for i in 0..self.index_len() {
            out.blocks += 1;
            let h = match self.handle_at(i) {
                Ok(h) => h,
                Err(e) => {
                    out.bad_blocks
                        .push((self.footer.index.offset, e.to_string()));
                    continue;
                }
            };
            let block = match self.read_data_block_typed(h, None) {
                Ok((block, block_type)) => match block.check_entries() {
                    Ok(()) => Arc::new(block),
                    Err(e) => {
                        let e = in_decompressed(e, h, block_type);
                        out.bad_blocks.push((h.offset, what_went_wrong(&e)));
                        out.bad_bytes += h.size;
                        continue;
                    }
                },
                Err(e) => {
                    out.bad_blocks.push((h.offset, what_went_wrong(&e)));
                    out.bad_bytes += h.size;
                    continue;
                }
            };
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut it = block.iter(&self.order);
            it.seek_to_first();
            while it.valid() {
                entries.push((it.key().to_vec(), it.value().to_vec()));
                it.next();
            }
            if let Err(e) = it.status() {
                out.bad_blocks.push((h.offset, what_went_wrong(&e)));
                out.bad_bytes += h.size;
                continue;
            }
            for (k, v) in entries {
                let in_order = prev
                    .as_deref()
                    .is_none_or(|p| self.order.compare_internal(p, &k) == Ordering::Less);
                if parse_internal_key(&k).is_none() || !in_order {
                    out.skipped_entries += 1;
                    continue;
                }
                keep(&k, &v)?;
                out.entries += 1;
                prev = Some(k);
            }
        }
        Ok(out)
    }

    /// Approximate file offset where `ikey` would be: the offset of the data block that
    /// would hold it, or the end of the data section.
    #[must_use]
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let Some(ks) = self.index.keyset() else {
            return self.props.data_size;
        };
        let i = ks.find(ikey, &self.order);
        match self.handle_at(i) {
            Ok(h) if i < ks.num_entries() => h.offset,
            _ => self.props.data_size,
        }
    }
}

/// A pinned lookup's result: the entry's internal key, its data block and the value's byte
/// range in the block's contents.
pub type PinnedEntry = (Vec<u8>, Arc<Block>, std::ops::Range<usize>);

/// The byte range `part` occupies in `whole`, if `part` is a subslice of it (address
/// arithmetic only; nothing is dereferenced). An empty `part` maps to `0..0`.
fn subslice_range(whole: &[u8], part: &[u8]) -> Option<std::ops::Range<usize>> {
    if part.is_empty() {
        return Some(0..0);
    }
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then_some(start..end)
}

/// A structure error found in the decompressed contents of the block at `h` names the
/// block's offset (the position inside the contents goes into the detail); errors in raw
/// blocks, whose positions are file offsets already, are returned unchanged.
fn in_decompressed(e: Error, h: BlockHandle, block_type: u8) -> Error {
    match e {
        Error::Corruption {
            file,
            offset,
            detail,
        } if block_type != BLOCK_TYPE_RAW => Error::Corruption {
            file,
            offset: h.offset,
            detail: format!(
                "{detail} (at byte {} of the decompressed block)",
                offset.saturating_sub(h.offset)
            )
            .into(),
        },
        e => e,
    }
}

/// Reads and verifies the block at `h`, which must end at or before `limit`.
fn read_raw(
    file: &dyn RandomAccessFile,
    counters: &ReadCounters,
    h: BlockHandle,
    limit: u64,
) -> Result<Vec<u8>> {
    let (buf, size) = read_block_bytes(file, counters, h, limit, None)?;
    match check_block(buf, h, size)? {
        (contents, BLOCK_TYPE_RAW) => Ok(contents),
        (_, ty) => Err(Error::corruption(
            h.offset + h.size + pad_len(h.size) + 4,
            format!("meta block of type {ty}: only data blocks may be compressed"),
        )),
    }
}

/// Alignment of a read-ahead window, in the file and in memory: a file read with direct
/// I/O fills a window aligned to it in place, where an unaligned one would go through the
/// file's bounce buffer (one more copy of every byte a compaction reads).
const READAHEAD_ALIGN: u64 = 4096;

/// A scan's read-ahead window: the bytes of the file at `start..start + len`, held at
/// `storage[at..at + len]`, read about `size` bytes at a time (see
/// [`TableReader::iter_with_readahead`]). A forward scan has the next window read ahead on
/// a thread of its own while it works through this one (`next`), so it waits for the
/// device only when it outruns it: a compaction's input reads then overlap its merging and
/// its writes, as with RocksDB's asynchronous read-ahead.
#[derive(Debug)]
struct Readahead {
    size: usize,
    start: u64,
    len: usize,
    /// The window's memory, one alignment unit longer than the largest window so far;
    /// `at` is its first [`READAHEAD_ALIGN`]-aligned address.
    storage: Vec<u8>,
    at: usize,
    /// The table's file.
    file: Arc<dyn RandomAccessFile>,
    /// The window after this one, being read.
    next: Option<NextWindow>,
    /// The memory of the window before, for the next read ahead.
    spare: Vec<u8>,
}

/// Bytes a window read ahead keeps free before its data, for the part of the window
/// before it that a block straddling the two needs (a larger part reads the block again).
const READ_AHEAD_HEADROOM: usize = 256 << 10;

/// A window being read ahead: `len` bytes from `start`, into the thread's buffer after
/// [`READ_AHEAD_HEADROOM`] bytes from its first aligned byte.
#[derive(Debug)]
struct NextWindow {
    start: u64,
    len: usize,
    thread: std::thread::JoinHandle<(Vec<u8>, std::io::Result<()>)>,
}

/// A buffer of at least `len` bytes and an alignment unit, reusing `v`; returns it and its
/// first [`READAHEAD_ALIGN`]-aligned position.
fn aligned_buffer(mut v: Vec<u8>, len: usize) -> (Vec<u8>, usize) {
    let align = READAHEAD_ALIGN as usize;
    if v.len() < len + align {
        v.resize(len + align, 0);
    }
    let at = aligned_buffer_start(&v);
    (v, at)
}

/// `end` rounded up to a whole [`READAHEAD_ALIGN`] unit, but not past the file's end.
fn aligned_end(end: u64, file_size: u64) -> u64 {
    end.div_ceil(READAHEAD_ALIGN)
        .saturating_mul(READAHEAD_ALIGN)
        .min(file_size)
}

/// The first [`READAHEAD_ALIGN`]-aligned position of `v` (address arithmetic only).
fn aligned_buffer_start(v: &[u8]) -> usize {
    let align = READAHEAD_ALIGN as usize;
    (align - v.as_ptr() as usize % align) % align
}

impl Readahead {
    fn new(size: usize, file: Arc<dyn RandomAccessFile>) -> Self {
        Self {
            size,
            start: 0,
            len: 0,
            storage: Vec::new(),
            at: 0,
            file,
            next: None,
            spare: Vec::new(),
        }
    }

    /// The window read ahead, if it holds `offset..end` (with what is left of this window
    /// before it, for a block that straddles the two): waits for it and makes it the
    /// window (the old window's memory goes to the next read ahead). Any other window read
    /// ahead is left to end on its own.
    fn take_next(&mut self, offset: u64, end: u64) -> bool {
        let Some(next) = self.next.take() else {
            return false;
        };
        let window_end = self.start + self.len as u64;
        // The part of this window the new one keeps: from `offset`'s aligned unit on.
        let keep_from = (offset / READAHEAD_ALIGN * READAHEAD_ALIGN).max(self.start);
        let kept = if offset >= next.start {
            0
        } else if offset >= self.start && next.start == window_end {
            (window_end - keep_from) as usize
        } else {
            return false;
        };
        if end > next.start + next.len as u64 || kept > READ_AHEAD_HEADROOM {
            return false;
        }
        match next.thread.join() {
            Ok((mut storage, Ok(()))) => {
                // The next window's data starts after the headroom, at an aligned byte.
                let data_at = aligned_buffer_start(&storage) + READ_AHEAD_HEADROOM;
                let at = data_at - kept;
                if kept > 0 {
                    let from = self.at + (keep_from - self.start) as usize;
                    match (
                        storage.get_mut(at..data_at),
                        self.storage.get(from..from + kept),
                    ) {
                        (Some(to), Some(part)) => to.copy_from_slice(part),
                        _ => return false,
                    }
                }
                self.spare = std::mem::replace(&mut self.storage, storage);
                self.at = at;
                self.start = next.start - kept as u64;
                self.len = next.len + kept;
                true
            }
            // A failed read ahead is read again, here, and its error reported from there.
            _ => false,
        }
    }

    /// Starts reading the window after this one (up to `limit`), if any is left.
    fn read_ahead(&mut self, limit: u64) {
        let start = self.start + self.len as u64;
        let end = aligned_end(
            start.saturating_add(self.size as u64).min(limit),
            self.file.size(),
        );
        let Ok(len) = usize::try_from(end.saturating_sub(start)) else {
            return;
        };
        if len == 0 || !start.is_multiple_of(READAHEAD_ALIGN) {
            return;
        }
        let file = Arc::clone(&self.file);
        let spare = std::mem::take(&mut self.spare);
        let spawned = std::thread::Builder::new()
            .name("mezz-read-ahead".into())
            .spawn(move || {
                let (mut storage, at) = aligned_buffer(spare, READ_AHEAD_HEADROOM + len);
                let data = at + READ_AHEAD_HEADROOM;
                let r = match storage.get_mut(data..data + len) {
                    Some(window) => file.read_exact_at(start, window),
                    None => Err(std::io::Error::other(
                        "read-ahead window outside its storage",
                    )),
                };
                (storage, r)
            });
        // No thread: the next window is read when it is needed.
        if let Ok(thread) = spawned {
            self.next = Some(NextWindow { start, len, thread });
        }
    }

    /// Copies `out.len()` bytes at `offset` of `file` into `out`: from the window, refilled
    /// first when it does not hold them all (from the window read ahead when that holds
    /// them), with `size` bytes (at least `out`'s, never past `limit`) from `offset` on, or,
    /// for a scan going backwards (a block before the window), ending where `out`'s bytes
    /// end; the window is then widened to whole [`READAHEAD_ALIGN`] units of the file (not
    /// past its end). A forward refill starts reading the window after it.
    fn read(&mut self, offset: u64, out: &mut [u8], limit: u64) -> std::io::Result<()> {
        let end = offset + out.len() as u64;
        if offset < self.start || end > self.start + self.len as u64 {
            let backwards = offset < self.start && self.len != 0;
            if backwards || !self.take_next(offset, end) {
                let (fill_start, fill_end) = if backwards {
                    (end.saturating_sub(self.size as u64).min(offset), end)
                } else {
                    (
                        offset,
                        offset.saturating_add(self.size as u64).min(limit).max(end),
                    )
                };
                let fill_start = fill_start / READAHEAD_ALIGN * READAHEAD_ALIGN;
                let fill_end = aligned_end(fill_end, self.file.size()).max(fill_end);
                let len = usize::try_from(fill_end - fill_start)
                    .map_err(|_| std::io::Error::other("read-ahead window too large"))?;
                let (storage, at) = aligned_buffer(std::mem::take(&mut self.storage), len);
                self.storage = storage;
                self.at = at;
                self.start = fill_start;
                self.len = len;
                let window = self
                    .storage
                    .get_mut(self.at..self.at + len)
                    .ok_or_else(|| {
                        std::io::Error::other("read-ahead window outside its storage")
                    })?;
                if let Err(e) = self.file.read_exact_at(fill_start, window) {
                    self.len = 0;
                    return Err(e);
                }
            }
            if !backwards {
                self.read_ahead(limit);
            }
        }
        let held = usize::try_from(offset - self.start)
            .ok()
            .and_then(|at| {
                self.storage
                    .get(self.at..self.at + self.len)?
                    .get(at..at.checked_add(out.len())?)
            })
            .ok_or_else(|| std::io::Error::other("read-ahead window does not hold the block"))?;
        out.copy_from_slice(held);
        Ok(())
    }
}

/// Reads a block with its padding and trailer, unverified (through `readahead`, if given);
/// returns the bytes and the contents size.
fn read_block_bytes(
    file: &dyn RandomAccessFile,
    counters: &ReadCounters,
    h: BlockHandle,
    limit: u64,
    readahead: Option<&mut Readahead>,
) -> Result<(Vec<u8>, usize)> {
    let end = h.end();
    if end > limit || end < h.offset {
        return Err(Error::corruption(
            h.offset,
            format!(
                "block handle (offset {}, size {}) out of range",
                h.offset, h.size
            ),
        ));
    }
    let total = usize::try_from(end - h.offset)
        .map_err(|_| Error::corruption(h.offset, "block too large"))?;
    let size = h.size as usize;
    let mut buf = mezz_util::spare::zeroed(total);
    let started = std::time::Instant::now();
    match readahead {
        Some(window) => window.read(h.offset, &mut buf, limit)?,
        None => file.read_exact_at(h.offset, &mut buf)?,
    }
    mezz_util::trace::block_read(started);
    counters.add(ReadCounter::BlocksRead, 1);
    counters.add(ReadCounter::BytesRead, total as u64);
    Ok((buf, size))
}

/// Verifies the padding, trailer and checksum of a block read with its trailer; returns
/// the stored contents and the block type (raw or a known compression).
fn check_block(mut buf: Vec<u8>, h: BlockHandle, size: usize) -> Result<(Vec<u8>, u8)> {
    if buf.len() < size {
        return Err(Error::corruption(h.offset, "truncated block"));
    }
    let (contents, tail) = buf.split_at(size);
    let ty = check_block_frame(contents, tail, h.offset)?;
    let pad = pad_len(h.size) as usize;
    if Compression::from_block_type(ty).is_none() {
        return Err(Error::corruption(
            h.offset + h.size + pad as u64 + 4,
            format!("unknown block type {ty}"),
        ));
    }
    buf.truncate(size);
    Ok((buf, ty))
}

/// The detail of a corruption (its offset is reported beside it), or the whole error.
fn what_went_wrong(e: &Error) -> String {
    match e {
        Error::Corruption { detail, .. } => detail.to_string(),
        other => other.to_string(),
    }
}

/// What [`TableReader::salvage`] hands each entry it keeps (internal key, value) to.
pub type SalvageSink<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// What [`TableReader::salvage`] read of a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Salvage {
    /// Data blocks the index names.
    pub blocks: u64,
    /// The blocks that could not be read, as (file offset, what was wrong).
    pub bad_blocks: Vec<(u64, String)>,
    /// Bytes of the blocks that could not be read.
    pub bad_bytes: u64,
    /// Entries handed to the caller.
    pub entries: u64,
    /// Entries of readable blocks that were skipped (a malformed key, or one out of order).
    pub skipped_entries: u64,
    /// Entries the table's properties record.
    pub expected_entries: u64,
}

/// A two-level iterator over a table: the index block selects data blocks, which are loaded
/// lazily through the block cache. A read error stops the iteration (`valid()` false) and
/// is reported by `status()` until the next seek.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<TableReader>,
    index: BlockIter,
    data: Option<BlockIter>,
    data_offset: u64,
    fill_cache: bool,
    /// The read-ahead window of a whole-table scan, if asked for.
    readahead: Option<Readahead>,
    err: Option<Error>,
}

impl TableIter {
    /// Loads the data block the index iterator points at (if not already loaded).
    fn init_data_block(&mut self) {
        if !self.index.valid() {
            self.data = None;
            return;
        }
        let Some(h) = BlockHandle::decode(self.index.value()) else {
            self.err = Some(Error::corruption(
                self.table.footer.index.offset,
                "index: bad block handle",
            ));
            self.data = None;
            return;
        };
        if self.data.is_some() && self.data_offset == h.offset {
            return;
        }
        match self
            .table
            .data_block_via(h, self.fill_cache, self.readahead.as_mut())
        {
            Ok(b) => {
                self.data = Some(b.iter(self.table.order()));
                self.data_offset = h.offset;
            }
            Err(e) => {
                self.err = Some(e);
                self.data = None;
            }
        }
    }

    fn data_failed(&mut self) -> bool {
        if self.err.is_some() {
            self.data = None;
            return true;
        }
        if let Some(d) = &self.data
            && let Err(e) = d.status()
        {
            self.err = Some(e);
            self.data = None;
            return true;
        }
        false
    }

    fn skip_forward(&mut self) {
        while self.data.as_ref().is_none_or(|d| !d.valid()) {
            if self.data_failed() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.next();
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.data.as_ref().is_none_or(|d| !d.valid()) {
            if self.data_failed() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.prev();
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(BlockIter::valid)
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        self.index.seek_to_first();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        self.index.seek_to_last();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        self.index.seek(target);
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek(target);
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        self.index.seek(target);
        if !self.index.valid() {
            self.index.seek_to_last();
        }
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_for_prev(target);
        }
        self.skip_backward();
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], BlockIter::key)
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], BlockIter::value)
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.duplicate());
        }
        self.index.status()?;
        self.data.as_ref().map_or(Ok(()), BlockIter::status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ikey::make_internal_key;
    use crate::testfile::{SharedBuf, VecFile};
    use rand::{RngExt, SeedableRng, rngs::StdRng};
    use std::collections::HashMap;
    use std::sync::Mutex;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    /// `n` sorted entries: user keys `k{i:06}` (some with two versions), mixed kinds.
    fn entries(n: usize, seed: u64) -> Entries {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut v = Vec::new();
        let mut i = 0;
        while v.len() < n {
            let uk = format!("k{:06}", i * 2);
            let versions = if rng.random_bool(0.2) { 2 } else { 1 };
            for s in 0..versions {
                if v.len() == n {
                    break;
                }
                let seq = 1000 - s as u64 * 10 + (i as u64 % 7);
                let kind = if rng.random_bool(0.1) {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                let vlen = rng.random_range(0..64);
                let val: Vec<u8> = (0..vlen).map(|_| rng.random()).collect();
                v.push((make_internal_key(uk.as_bytes(), seq, kind), val));
            }
            i += 1;
        }
        v.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        v
    }

    fn build(e: &Entries, opts: TableBuilderOptions) -> (Vec<u8>, TableProperties, usize) {
        let buf = SharedBuf::default();
        let mut b = TableBuilder::new(buf.writer(), opts);
        for (k, v) in e {
            b.add(k, v).unwrap();
        }
        assert_eq!(b.num_entries(), e.len() as u64);
        let props = b.finish().unwrap();
        (buf.bytes(), props, buf.syncs())
    }

    fn open(bytes: Vec<u8>, cache: Option<Arc<dyn BlockCache>>) -> Result<Arc<TableReader>> {
        let len = bytes.len() as u64;
        TableReader::open(VecFile::shared(bytes), len, 7, cache, &KeyOrder::default()).map(Arc::new)
    }

    /// `salvage` keeps every entry of every block that verifies, in order, and reports the
    /// block that does not; an undamaged table gives back all its entries.
    #[test]
    fn salvage_skips_a_damaged_block_and_keeps_the_rest() {
        let e = entries(2000, 9);
        let opts = TableBuilderOptions {
            block_size: 512,
            ..TableBuilderOptions::default()
        };
        let (bytes, props, _) = build(&e, opts);
        let mut got = Vec::new();
        let s = open(bytes.clone(), None)
            .unwrap()
            .salvage(&mut |k, v| {
                got.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
        assert_eq!(got, e);
        assert!(s.bad_blocks.is_empty());
        assert_eq!((s.entries, s.expected_entries), (2000, 2000));
        assert_eq!(s.blocks, props.num_data_blocks);

        let mut damaged = bytes;
        damaged[700] ^= 0x10; // inside the second data block
        let reader = open(damaged, None).unwrap();
        assert!(reader.verify().is_err());
        let mut kept = Vec::new();
        let s = reader
            .salvage(&mut |k, v| {
                kept.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
        assert_eq!(s.bad_blocks.len(), 1, "{:?}", s.bad_blocks);
        assert!(s.bad_blocks[0].1.contains("checksum"), "{:?}", s.bad_blocks);
        assert!(s.bad_bytes > 0);
        let lost = e.len() - kept.len();
        assert!(lost > 0 && lost < 100, "{lost}");
        assert_eq!(s.entries as usize, kept.len());
        assert!(kept.iter().all(|kv| e.contains(kv)), "only real entries");
        assert!(
            kept.windows(2)
                .all(|w| compare_internal_keys(&w[0].0, &w[1].0) == Ordering::Less)
        );
    }

    fn lower_bound(e: &Entries, t: &[u8]) -> usize {
        e.partition_point(|(k, _)| compare_internal_keys(k, t) == Ordering::Less)
    }

    fn at(it: &TableIter, e: &Entries, want: Option<usize>) {
        it.status().unwrap();
        match want {
            Some(i) => {
                assert!(it.valid(), "expected entry {i}");
                assert_eq!(it.key(), &e[i].0[..]);
                assert_eq!(it.value(), &e[i].1[..]);
            }
            None => assert!(!it.valid()),
        }
    }

    fn full_roundtrip(opts: TableBuilderOptions) -> TableProperties {
        full_roundtrip_of(&entries(10_000, 11), opts)
    }

    /// Builds a table of `e` (at least 10 000 entries of keys `k{even:06}`), then checks
    /// iteration both ways, seeks, lookups, offsets and counters; returns its properties.
    fn full_roundtrip_of(e: &Entries, opts: TableBuilderOptions) -> TableProperties {
        let e = e.clone();
        let n = e.len();
        let (bytes, props, syncs) = build(&e, opts);
        assert_eq!(syncs, 1, "finish syncs the file");
        assert_eq!(props.file_size, bytes.len() as u64);
        assert_eq!(props.num_entries, n as u64);
        assert_eq!(props.smallest_key, e[0].0);
        assert_eq!(props.largest_key, e[n - 1].0);
        assert!(props.num_data_blocks > 10);
        let t = open(bytes, None).unwrap();
        assert_eq!(t.properties(), &props);
        assert_eq!(t.verify().unwrap(), n as u64);

        let mut it = t.iter(true);
        it.seek_to_first();
        for i in 0..n {
            at(&it, &e, Some(i));
            it.next();
        }
        at(&it, &e, None);
        it.seek_to_last();
        for i in (0..n).rev() {
            at(&it, &e, Some(i));
            it.prev();
        }
        at(&it, &e, None);

        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..2000 {
            let uk = format!("k{:06}", rng.random_range(0..(n as u64) * 2 + 10));
            let target =
                make_internal_key(uk.as_bytes(), rng.random_range(990..1010), ValueKind::SEEK);
            let lb = lower_bound(&e, &target);
            it.seek(&target);
            at(&it, &e, (lb < n).then_some(lb));
            if lb < n {
                it.prev();
                at(&it, &e, lb.checked_sub(1));
            }
            let want = if lb < n && compare_internal_keys(&e[lb].0, &target).is_eq() {
                Some(lb)
            } else {
                lb.checked_sub(1)
            };
            it.seek_for_prev(&target);
            at(&it, &e, want);
            if let Some(w) = want {
                it.next();
                at(&it, &e, (w + 1 < n).then_some(w + 1));
            }
            // Point lookup.
            let got = t.get(&target, true).unwrap();
            let expect = (lb < n && user_key(&e[lb].0) == uk.as_bytes()).then(|| e[lb].clone());
            assert_eq!(got, expect, "get {uk}");
        }
        // Every stored key is found exactly.
        for (k, v) in e.iter().step_by(7) {
            assert_eq!(t.get(k, false).unwrap(), Some((k.clone(), v.clone())));
        }
        // Offsets are monotone and bounded by the data section.
        let mut last = 0;
        for (k, _) in e.iter().step_by(97) {
            let o = t.approximate_offset_of(k);
            assert!(o >= last && o <= props.data_size);
            last = o;
        }
        assert_eq!(t.approximate_offset_of(&e[0].0), 0);
        assert_eq!(
            t.approximate_offset_of(&make_internal_key(b"z", 0, ValueKind::Value)),
            props.data_size
        );
        let (blocks, bytes_read, _, hits, misses) = t.read_counters();
        assert!(blocks > 0 && bytes_read > 0);
        assert_eq!((hits, misses), (0, 0), "no cache configured");
        props
    }

    /// Whole KeySet runs added as blocks (an NVM buffer's blocks moved to an SST) land in
    /// the file byte for byte, mixed with entries added one by one; the table reads and
    /// verifies as if built entry by entry.
    #[test]
    fn keyset_blocks_are_copied_whole() {
        let e = entries(900, 11);
        let mut runs = Vec::new();
        for chunk in e[300..].chunks(150) {
            let mut w = KeySetWriter::new(IndexKind::ValueRef);
            for (k, v) in chunk {
                w.add_with_value(k, v);
            }
            runs.push(w.finish().to_vec());
        }
        let buf = SharedBuf::default();
        let mut b = TableBuilder::new(buf.writer(), TableBuilderOptions::default());
        for (k, v) in &e[..300] {
            b.add(k, v).unwrap();
        }
        for r in &runs {
            assert!(b.add_keyset_block(r).unwrap());
        }
        // Out of order: refused, nothing added.
        assert!(b.add_keyset_block(&runs[0]).is_err());
        assert_eq!(
            b.copied_block_bytes(),
            runs.iter().map(|r| r.len() as u64).sum::<u64>()
        );
        let props = b.finish().unwrap();
        assert_eq!(props.num_entries, 900);
        let bytes = buf.bytes();
        for r in &runs {
            assert!(
                bytes.windows(r.len()).any(|w| w == &r[..]),
                "a copied run is not in the file"
            );
        }
        let t = open(bytes, None).unwrap();
        assert_eq!(t.verify().unwrap(), 900);
        let mut it = t.iter(false);
        it.seek_to_first();
        for (k, v) in &e {
            assert!(it.valid());
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.next();
        }
        assert!(!it.valid());
        // Prefix tables take entries one by one.
        let mut p = TableBuilder::new(
            SharedBuf::default().writer(),
            TableBuilderOptions {
                block_format: BlockFormat::Prefix,
                ..TableBuilderOptions::default()
            },
        );
        assert!(!p.add_keyset_block(&runs[0]).unwrap());
    }

    /// A file over bytes that counts its reads.
    #[derive(Debug)]
    struct CountingFile(Vec<u8>, std::sync::atomic::AtomicU64);

    impl RandomAccessFile for CountingFile {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::testfile::VecFile(self.0.clone()).read_exact_at(offset, buf)
        }
        fn size(&self) -> u64 {
            self.0.len() as u64
        }
    }

    /// A file whose reads fail where they touch bytes `.1...2` (a bad stretch of data
    /// blocks; the index and footer after them read fine).
    #[derive(Debug)]
    struct FailingFrom(Vec<u8>, u64, u64);

    impl RandomAccessFile for FailingFrom {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            if offset < self.2 && offset + buf.len() as u64 > self.1 {
                return Err(std::io::Error::other("injected read error"));
            }
            crate::testfile::VecFile(self.0.clone()).read_exact_at(offset, buf)
        }
        fn size(&self) -> u64 {
            self.0.len() as u64
        }
    }

    /// A window read ahead that fails is read again when the scan needs it, and the scan
    /// stops with the error there: no entry after it is skipped silently, none before it
    /// is lost.
    #[test]
    fn a_failed_read_ahead_stops_the_scan_with_its_error() {
        let e = entries(10_000, 22);
        let (bytes, props, _) = build(&e, TableBuilderOptions::default());
        let bad_from = props.data_size / 2;
        let file = Arc::new(FailingFrom(bytes, bad_from, props.data_size));
        let t = Arc::new(
            TableReader::open(
                file as Arc<dyn RandomAccessFile>,
                props.file_size,
                1,
                None,
                &KeyOrder::default(),
            )
            .unwrap(),
        );
        let mut it = t.iter_with_readahead(false, 64 << 10);
        it.seek_to_first();
        let mut seen = 0;
        while it.valid() {
            assert_eq!(it.key(), &e[seen].0[..]);
            seen += 1;
            it.next();
        }
        assert!(it.status().is_err(), "the scan ends on the error");
        assert!(seen > 0 && seen < e.len(), "{seen} of {}", e.len());
        assert!(t.verify_with_readahead(64 << 10).is_err());
    }

    /// A scan with a read-ahead window returns what a scan without one does, both ways and
    /// after seeks, with one file read per window instead of one per block; `verify`
    /// through a window counts the same entries.
    #[test]
    fn readahead_scans_read_the_file_in_windows() {
        let e = entries(10_000, 21);
        let (bytes, props, _) = build(&e, TableBuilderOptions::default());
        let file = Arc::new(CountingFile(bytes, Default::default()));
        let reads = || file.1.load(std::sync::atomic::Ordering::Relaxed);
        let t = Arc::new(
            TableReader::open(
                Arc::clone(&file) as Arc<dyn RandomAccessFile>,
                props.file_size,
                1,
                None,
                &KeyOrder::default(),
            )
            .unwrap(),
        );
        let window = 64 << 10;
        let windows = props.data_size.div_ceil(window as u64);
        assert!(props.num_data_blocks > 4 * windows, "{props:?}");
        for readahead in [0, window] {
            let before = reads();
            let mut it = t.iter_with_readahead(false, readahead);
            it.seek_to_first();
            for i in 0..e.len() {
                at(&it, &e, Some(i));
                it.next();
            }
            at(&it, &e, None);
            let n = reads() - before;
            if readahead == 0 {
                assert_eq!(n, props.num_data_blocks);
            } else {
                assert!(n <= windows + 1, "{n} reads for {windows} windows");
            }
            // Backwards and after seeks, the same entries.
            it.seek_to_last();
            for i in (0..e.len()).rev().step_by(7) {
                it.seek(&e[i].0);
                at(&it, &e, Some(i));
            }
            let mut it = t.iter_with_readahead(false, readahead);
            it.seek_to_last();
            for i in (0..e.len()).rev() {
                at(&it, &e, Some(i));
                it.prev();
            }
            at(&it, &e, None);
            assert_eq!(t.verify_with_readahead(readahead).unwrap(), e.len() as u64);
        }
        let before = reads();
        t.verify_with_readahead(window).unwrap();
        assert!(reads() - before <= windows + 1);
    }

    #[test]
    fn roundtrip_keyset() {
        let p = full_roundtrip(TableBuilderOptions::default());
        assert_eq!(p.compression, Compression::None);
        assert_eq!(
            (p.num_compressed_blocks, p.uncompressed_block_bytes),
            (0, 0)
        );
    }

    /// As [`entries`], with compressible values (a letter repeated, then a counter).
    fn compressible_entries(n: usize, seed: u64) -> Entries {
        let mut e = entries(n, seed);
        for (i, (_, v)) in e.iter_mut().enumerate() {
            let len = v.len() + 16;
            *v = format!("{}{i:08}", "v".repeat(len)).into_bytes();
        }
        e
    }

    fn with(compression: Compression, format: BlockFormat) -> TableBuilderOptions {
        TableBuilderOptions {
            compression,
            block_format: format,
            ..TableBuilderOptions::default()
        }
    }

    #[test]
    fn roundtrip_each_compression_and_format() {
        let e = compressible_entries(10_000, 12);
        let raw = full_roundtrip_of(&e, with(Compression::None, BlockFormat::KeySet));
        for compression in [Compression::Lz4, Compression::Zstd] {
            for format in [BlockFormat::KeySet, BlockFormat::Prefix] {
                let p = full_roundtrip_of(&e, with(compression, format));
                assert_eq!(p.compression, compression);
                assert_eq!(p.num_compressed_blocks, p.num_data_blocks, "{compression}");
                assert!(p.uncompressed_block_bytes > p.data_size);
                if format == BlockFormat::KeySet {
                    assert!(
                        p.file_size * 2 < raw.file_size,
                        "{compression}: {} bytes, raw {}",
                        p.file_size,
                        raw.file_size
                    );
                }
            }
        }
    }

    #[test]
    fn zstd_levels_are_honoured() {
        let e = compressible_entries(10_000, 13);
        for level in [1, 19] {
            let p = full_roundtrip_of(
                &e,
                TableBuilderOptions {
                    zstd_level: level,
                    ..with(Compression::Zstd, BlockFormat::KeySet)
                },
            );
            assert_eq!(p.num_compressed_blocks, p.num_data_blocks);
        }
    }

    #[test]
    fn incompressible_blocks_stay_raw() {
        let mut e = entries(3000, 14);
        let mut rng = StdRng::seed_from_u64(15);
        for (_, v) in &mut e {
            *v = (0..200).map(|_| rng.random()).collect();
        }
        for compression in [Compression::Lz4, Compression::Zstd] {
            let (bytes, p, _) = build(&e, with(compression, BlockFormat::KeySet));
            assert_eq!(
                p.compression, compression,
                "recorded even if nothing compressed"
            );
            assert_eq!(p.num_compressed_blocks, 0, "{compression}");
            let t = open(bytes.clone(), None).unwrap();
            assert_eq!(t.verify().unwrap(), e.len() as u64);
            assert_eq!(t.properties(), &p);
            // Raw blocks are stored as without compression: only the properties differ.
            let (plain, pp, _) = build(&e, TableBuilderOptions::default());
            assert_eq!(
                bytes[..pp.data_size as usize],
                plain[..pp.data_size as usize]
            );
        }
    }

    #[test]
    fn compression_off_writes_the_uncompressed_format() {
        let e = compressible_entries(2000, 16);
        let (a, _, _) = build(&e, TableBuilderOptions::default());
        let (b, pb, _) = build(&e, with(Compression::None, BlockFormat::KeySet));
        assert_eq!(a, b);
        // No compression record: the properties end with the largest key, as they always did.
        let t = open(b, None).unwrap();
        let raw = read_raw(
            t.file.as_ref(),
            &ReadCounters::default(),
            t.footer.props,
            t.file_size,
        )
        .unwrap();
        assert!(raw.ends_with(&pb.largest_key));
    }

    /// The first data block of `bytes` (offset 0) replaced by `stored` of block type `ty`
    /// (at most as long as the original), with a valid checksum, and the index handle
    /// shortened to match (the index checksum repaired). The bytes between the new and the
    /// old end of the block are left as they were.
    fn replace_first_block(bytes: &[u8], stored: &[u8], ty: u8) -> Vec<u8> {
        let mut out = bytes.to_vec();
        let len = out.len();
        let footer = &bytes[len - FOOTER_LEN..];
        let index = BlockHandle::decode(&footer[..16]).unwrap();
        let ix = index.offset as usize..(index.offset + index.size) as usize;
        let first = first_handle(&bytes[ix.clone()]);
        assert!(stored.len() as u64 <= first.size);
        let new = BlockHandle {
            offset: 0,
            size: stored.len() as u64,
        };
        let pad = pad_len(new.size) as usize;
        out[..stored.len()].copy_from_slice(stored);
        out[stored.len()..stored.len() + pad].fill(0);
        let t = stored.len() + pad;
        let crc = mask(crc32c_extend(crc32c(stored), &[ty]));
        out[t..t + 4].copy_from_slice(&crc.to_le_bytes());
        out[t + 4..t + 8].copy_from_slice(&[ty, 0, 0, 0]);
        // Patch the handle (16 bytes, found once in the index) and the index checksum.
        let old = first.encode();
        let pos = bytes[ix.clone()]
            .windows(16)
            .position(|w| w == old)
            .unwrap();
        out[ix.start + pos..ix.start + pos + 16].copy_from_slice(&new.encode());
        let it = ix.end + pad_len(index.size) as usize;
        let crc = mask(crc32c_extend(crc32c(&out[ix.clone()]), &[BLOCK_TYPE_RAW]));
        out[it..it + 4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// The handle of the first data block, from the index block's contents.
    fn first_handle(index: &[u8]) -> BlockHandle {
        let ks = crate::block::KeySetRef::parse(index, 0).unwrap();
        BlockHandle::decode(ks.value(0).unwrap()).unwrap()
    }

    /// The stored contents and type of the first data block of `bytes`.
    fn first_block(bytes: &[u8]) -> (Vec<u8>, u8) {
        let footer = &bytes[bytes.len() - FOOTER_LEN..];
        let index = BlockHandle::decode(&footer[..16]).unwrap();
        let h = first_handle(&bytes[index.offset as usize..(index.offset + index.size) as usize]);
        let end = h.size as usize;
        let ty = bytes[end + pad_len(h.size) as usize + 4];
        (bytes[..end].to_vec(), ty)
    }

    /// Opening works (data blocks are read lazily); reading the first block fails with a
    /// corruption at `want_offset` through `get`, iteration and `verify`.
    fn first_block_is_corrupt(bytes: Vec<u8>, e: &Entries, want_offset: u64, what: &str) {
        let t = open(bytes, None).unwrap();
        let check = |r: Result<()>, how: &str| match r {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, want_offset, "{what} via {how}: {detail}");
            }
            other => panic!("{what} via {how}: expected corruption, got {other:?}"),
        };
        check(t.get(&e[0].0, false).map(|_| ()), "get");
        let mut it = t.iter(false);
        it.seek_to_first();
        assert!(!it.valid());
        check(it.status(), "iter");
        check(t.verify().map(|_| ()), "verify");
    }

    #[test]
    fn damaged_compressed_blocks_are_corruption_at_their_offset() {
        let e = compressible_entries(2000, 17);
        for compression in [Compression::Lz4, Compression::Zstd] {
            let (good, _, _) = build(&e, with(compression, BlockFormat::KeySet));
            let (stored, ty) = first_block(&good);
            assert_eq!(ty, compression.block_type());
            let (stated, start) = crate::coding::get_varint32(&stored, 0).unwrap();
            let stream = &stored[start..];
            let with_len = |len: u32, stream: &[u8]| {
                let mut v = Vec::new();
                crate::coding::put_varint32(&mut v, len);
                v.extend_from_slice(stream);
                v
            };
            // A truncated stream.
            for cut in [1, 8, stream.len() / 2] {
                let s = with_len(stated, &stream[..stream.len() - cut]);
                first_block_is_corrupt(replace_first_block(&good, &s, ty), &e, 0, "truncated");
            }
            // Lying uncompressed lengths: short, long, huge, zero.
            for len in [stated - 1, stated + 1, 1 << 26, u32::MAX, 0] {
                let s = with_len(len, &stream[..stream.len() - 8]);
                first_block_is_corrupt(replace_first_block(&good, &s, ty), &e, 0, "length");
            }
            // A garbage stream, and no stream at all.
            let junk: Vec<u8> = (0..stream.len() as u32 - 8)
                .map(|i| (i * 37) as u8)
                .collect();
            let s = with_len(stated, &junk);
            first_block_is_corrupt(replace_first_block(&good, &s, ty), &e, 0, "garbage");
            first_block_is_corrupt(replace_first_block(&good, &[], ty), &e, 0, "empty");
            // A stream of the other codec.
            let other = if ty == BLOCK_TYPE_LZ4 {
                BLOCK_TYPE_ZSTD
            } else {
                BLOCK_TYPE_LZ4
            };
            first_block_is_corrupt(replace_first_block(&good, &stored, other), &e, 0, "codec");
            // An unknown block type is reported at the type byte.
            let bad = replace_first_block(&good, &stored, 9);
            let at = stored.len() as u64 + pad_len(stored.len() as u64) + 4;
            first_block_is_corrupt(bad, &e, at, "type");
        }
    }

    #[test]
    fn every_byte_of_a_compressed_block_damaged_behind_a_valid_checksum_is_safe() {
        let e = compressible_entries(300, 18);
        for compression in [Compression::Lz4, Compression::Zstd] {
            let (good, _, _) = build(&e, with(compression, BlockFormat::KeySet));
            let (stored, ty) = first_block(&good);
            for i in 0..stored.len() {
                for flip in [0x01, 0x80, 0xff] {
                    let mut s = stored.clone();
                    s[i] ^= flip;
                    // Must not panic. Decompression and block validation errors name the
                    // block; a stream that decodes to a valid but wrong block can only be
                    // caught later, by offsets inside the block.
                    let bad = replace_first_block(&good, &s, ty);
                    let t = open(bad, None).unwrap();
                    let within = |r: Result<()>| match r {
                        Ok(()) => {}
                        Err(Error::Corruption { offset, .. }) => {
                            assert!(offset < 1 << 16, "byte {i}: offset {offset}");
                        }
                        // A wrong block may also claim a newer KeySet version.
                        Err(Error::UnsupportedVersion { .. }) => {}
                        Err(other) => panic!("byte {i}: {other:?}"),
                    };
                    within(t.get(&e[0].0, false).map(|_| ()));
                    within(t.verify().map(|_| ()));
                }
            }
        }
    }

    #[test]
    fn compressed_blocks_are_cached_decompressed() {
        let e = compressible_entries(2000, 19);
        let (bytes, props, _) = build(&e, with(Compression::Lz4, BlockFormat::KeySet));
        assert_eq!(props.num_compressed_blocks, props.num_data_blocks);
        let cache = Arc::new(MapCache::default());
        let t = open(bytes, Some(cache.clone() as Arc<dyn BlockCache>)).unwrap();
        for (k, v) in &e {
            assert_eq!(t.get(k, true).unwrap(), Some((k.clone(), v.clone())));
        }
        let cached: u64 = cache
            .0
            .lock()
            .unwrap()
            .values()
            .map(|b| b.len_bytes() as u64)
            .sum();
        assert_eq!(cached, props.uncompressed_block_bytes);
        // A cached KeySet block is searched in place.
        let b = cache.0.lock().unwrap().get(&(7, 0)).cloned().unwrap();
        assert!(b.keyset().is_some());
        let decompress = t.counters().get(ReadCounter::DecompressNanos);
        assert!(decompress > 0);
    }

    #[test]
    fn builder_times_compression_apart_from_encoding() {
        let e = compressible_entries(5000, 20);
        for compression in [Compression::None, Compression::Zstd] {
            let buf = SharedBuf::default();
            let mut b = TableBuilder::new(buf.writer(), with(compression, BlockFormat::KeySet));
            for (k, v) in &e {
                b.add(k, v).unwrap();
            }
            assert!(b.encode_nanos() > 0);
            assert_eq!(b.compress_nanos() > 0, compression != Compression::None);
            b.finish().unwrap();
        }
    }

    #[test]
    fn properties_record_compression_and_reject_bad_records() {
        let mut p = TableProperties::empty(BlockFormat::KeySet);
        p.smallest_key = b"a".to_vec();
        p.largest_key = b"b".to_vec();
        let plain = p.encode();
        p.compression = Compression::Zstd;
        p.num_compressed_blocks = 3;
        p.uncompressed_block_bytes = 12345;
        let rec = p.encode();
        assert!(rec.starts_with(&plain) && rec.len() > plain.len());
        assert_eq!(
            TableProperties::decode(&rec, 0, BlockFormat::KeySet).unwrap(),
            p
        );
        // Unknown records are skipped.
        let mut unknown = rec.clone();
        unknown.extend_from_slice(&[7, 2, 0xaa, 0xbb]);
        assert_eq!(
            TableProperties::decode(&unknown, 0, BlockFormat::KeySet).unwrap(),
            p
        );
        // Twice, an unknown codec, trailing bytes, truncation.
        let mut twice = rec.clone();
        twice.extend_from_slice(&rec[plain.len()..]);
        let mut codec = rec.clone();
        codec[plain.len() + 2] = 9;
        let mut trailing = plain.clone();
        trailing.extend_from_slice(&[PROPS_TAG_COMPRESSION, 4, 1, 0, 0, 0]);
        for bad in [twice, codec, trailing, rec[..rec.len() - 1].to_vec()] {
            assert!(TableProperties::decode(&bad, 0, BlockFormat::KeySet).is_err());
        }
    }

    #[test]
    fn verify_checks_the_compression_counts() {
        let e = compressible_entries(2000, 21);
        let (good, _, _) = build(&e, with(Compression::Lz4, BlockFormat::KeySet));
        let (stored, _) = first_block(&good);
        let raw = decompress_block(BLOCK_TYPE_LZ4, &stored, 0).unwrap();
        let (plain, _, _) = build(&e, TableBuilderOptions::default());
        let (plain_first, _) = first_block(&plain);
        assert_eq!(raw, plain_first, "the same block, compressed");
        // A table whose properties record no compression but that holds a compressed
        // block (behind valid checksums): reads work, verify reports the disagreement.
        let t = open(plain.clone(), None).unwrap();
        assert_eq!(t.properties().compression, Compression::None);
        let mut c = BlockCompressor::new(Compression::Lz4, 3);
        let small = c.compress(&plain_first).unwrap().to_vec();
        let mixed = replace_first_block(&plain, &small, BLOCK_TYPE_LZ4);
        let t = open(mixed, None).unwrap();
        assert_eq!(
            t.get(&e[0].0, false).unwrap(),
            Some((e[0].0.clone(), e[0].1.clone()))
        );
        match t.verify() {
            Err(Error::Corruption { detail, .. }) => {
                assert!(detail.to_string().contains("compression"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn roundtrip_prefix() {
        full_roundtrip(TableBuilderOptions {
            block_format: BlockFormat::Prefix,
            ..TableBuilderOptions::default()
        });
    }

    #[test]
    fn roundtrip_without_filter_small_blocks() {
        full_roundtrip(TableBuilderOptions {
            block_size: 256,
            bloom_bits_per_key: 0,
            ..TableBuilderOptions::default()
        });
    }

    #[test]
    fn filter_skips_absent_keys() {
        let e = entries(1000, 3);
        let (bytes, props, _) = build(&e, TableBuilderOptions::default());
        assert!(props.filter_size > 0);
        let t = open(bytes, None).unwrap();
        let absent = (0..1000)
            .filter(|i| !t.may_contain(format!("k{:06}", i * 2 + 1).as_bytes()))
            .count();
        assert!(
            absent > 950,
            "filter rejected only {absent} of 1000 absent keys"
        );
        for (k, _) in &e {
            assert!(t.may_contain(user_key(k)));
        }
    }

    #[test]
    fn empty_table() {
        let (bytes, props, _) = build(&Vec::new(), TableBuilderOptions::default());
        assert_eq!(props.num_entries, 0);
        let t = open(bytes, None).unwrap();
        assert_eq!(t.verify().unwrap(), 0);
        let mut it = t.iter(true);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_for_prev(b"anything");
        assert!(!it.valid());
        it.status().unwrap();
        assert_eq!(
            t.get(&make_internal_key(b"a", 1, ValueKind::SEEK), true)
                .unwrap(),
            None
        );
    }

    #[test]
    fn builder_rejects_bad_input() {
        let buf = SharedBuf::default();
        let mut b = TableBuilder::new(buf.writer(), TableBuilderOptions::default());
        let k1 = make_internal_key(b"b", 5, ValueKind::Value);
        b.add(&k1, b"v").unwrap();
        let same = b.add(&k1, b"v");
        assert!(matches!(same, Err(Error::InvalidArgument(_))));
        let older = make_internal_key(b"a", 9, ValueKind::Value);
        assert!(matches!(
            b.add(&older, b"v"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.add(b"short", b"v"),
            Err(Error::InvalidArgument(_))
        ));
        // Still usable after rejected input.
        b.add(&make_internal_key(b"b", 4, ValueKind::Deletion), b"")
            .unwrap();
        let p = b.finish().unwrap();
        assert_eq!((p.num_entries, p.num_deletions), (2, 1));
        assert_eq!((p.smallest_seq, p.largest_seq), (4, 5));
    }

    #[derive(Debug, Default)]
    struct MapCache(Mutex<HashMap<(u64, u64), Arc<Block>>>);

    impl BlockCache for MapCache {
        fn get(&self, id: u64, off: u64) -> Option<Arc<Block>> {
            self.0.lock().unwrap().get(&(id, off)).cloned()
        }
        fn insert(&self, id: u64, off: u64, b: Arc<Block>) {
            self.0.lock().unwrap().insert((id, off), b);
        }
    }

    #[test]
    fn block_cache_is_used_and_filled_on_request() {
        let e = entries(2000, 4);
        let (bytes, props, _) = build(&e, TableBuilderOptions::default());
        let cache = Arc::new(MapCache::default());
        let t = open(bytes, Some(cache.clone() as Arc<dyn BlockCache>)).unwrap();
        let scan = |fill| {
            let mut it = t.iter(fill);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                n += 1;
                it.next();
            }
            it.status().unwrap();
            n
        };
        assert_eq!(scan(false), e.len());
        assert!(
            cache.0.lock().unwrap().is_empty(),
            "fill_cache=false leaves the cache alone"
        );
        let (_, _, _, hits0, _) = t.read_counters();
        assert_eq!(scan(true), e.len());
        assert_eq!(cache.0.lock().unwrap().len() as u64, props.num_data_blocks);
        assert_eq!(scan(true), e.len());
        let (_, _, _, hits, misses) = t.read_counters();
        assert_eq!(hits - hits0, props.num_data_blocks);
        assert_eq!(misses, 2 * props.num_data_blocks);
    }

    fn small_table() -> (Entries, Vec<u8>) {
        let e = entries(60, 9);
        let (bytes, _, _) = build(
            &e,
            TableBuilderOptions {
                block_size: 256,
                ..TableBuilderOptions::default()
            },
        );
        (e, bytes)
    }

    /// Opens and uses a possibly damaged table; returns whether any error was reported.
    fn exercise(bytes: Vec<u8>, e: &Entries) -> bool {
        let Ok(t) = open(bytes, None) else {
            return true;
        };
        let mut failed = t.verify().is_err();
        let mut it = t.iter(false);
        it.seek_to_first();
        let mut steps = 0;
        while it.valid() && steps < 500 {
            let _ = (it.key(), it.value());
            it.next();
            steps += 1;
        }
        failed |= it.status().is_err();
        it.seek_to_last();
        while it.valid() && steps < 1000 {
            it.prev();
            steps += 1;
        }
        for (k, _) in e.iter().step_by(5) {
            failed |= t.get(k, false).is_err();
            it.seek(k);
            it.seek_for_prev(k);
        }
        let _ = t.approximate_offset_of(&e[0].0);
        failed
    }

    #[test]
    fn every_flipped_byte_is_detected_without_panic() {
        let (e, good) = small_table();
        assert!(!exercise(good.clone(), &e));
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            assert!(
                exercise(bad, &e),
                "flip at byte {i} of {} went unnoticed",
                good.len()
            );
        }
    }

    #[test]
    fn truncations_are_rejected() {
        let (e, good) = small_table();
        for len in 0..good.len() {
            assert!(exercise(good[..len].to_vec(), &e), "truncation to {len}");
        }
    }

    #[test]
    fn footer_errors_name_offsets_and_versions() {
        let (_, good) = small_table();
        let len = good.len();
        let mut bad = good.clone();
        bad[len - 1] ^= 0xff;
        match open(bad, None) {
            Err(Error::Corruption {
                offset,
                detail:
                    CorruptionDetail::BadMagic {
                        what: "footer",
                        found,
                    },
                ..
            }) => {
                assert_eq!(offset, len as u64 - 8);
                assert_eq!(found, TABLE_MAGIC ^ (0xff << 56));
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        // A damaged footer field: the footer's checksum, stored and computed.
        let mut bad = good.clone();
        bad[len - FOOTER_LEN] ^= 0x01;
        let stored = unmask(get_fixed32(&bad, len - 12).unwrap());
        let computed = crc32c(&bad[len - FOOTER_LEN..len - 12]);
        let e = open(bad, None).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "footer checksum mismatch: got {computed:#010x}, expected {stored:#010x}"
            )),
            "{e}"
        );
        match e {
            Error::Corruption {
                offset,
                detail:
                    CorruptionDetail::Checksum {
                        what,
                        stored: s,
                        computed: c,
                    },
                ..
            } => {
                assert_eq!((offset, what.as_str()), (len as u64 - 12, "footer"));
                assert_eq!((s, c), (stored, computed));
            }
            other => panic!("expected a checksum mismatch, got {other:?}"),
        }
        // A newer version with a valid checksum.
        let mut newer = good.clone();
        let f = len - FOOTER_LEN;
        newer[f + 52..f + 56].copy_from_slice(&2u32.to_le_bytes());
        let crc = mask(crc32c(&newer[f..f + 60]));
        newer[f + 60..f + 64].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            open(newer, None),
            Err(Error::UnsupportedVersion { found: 2, .. })
        ));
        // A damaged data block names its own offset.
        let mut bad = good;
        bad[3] ^= 0x40;
        let t = open(bad, None).unwrap();
        match t.verify() {
            Err(Error::Corruption { offset, detail, .. }) => {
                assert_eq!(offset, 0);
                assert!(
                    matches!(&detail, CorruptionDetail::Checksum { what, .. } if what == "block"),
                    "{detail:?}"
                );
                assert!(detail.to_string().contains("checksum"), "{detail}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn separators_are_short_and_ordered() {
        let mut out = Vec::new();
        let a = make_internal_key(b"abcdef", 5, ValueKind::Value);
        let b = make_internal_key(b"abzz", 5, ValueKind::Value);
        separator(&a, &b, &mut out);
        assert_eq!(user_key(&out), b"abd");
        assert_eq!(compare_internal_keys(&a, &out), Ordering::Less);
        assert_eq!(compare_internal_keys(&out, &b), Ordering::Less);
        // Adjacent user keys cannot be shortened.
        let c = make_internal_key(b"abcdeg", 5, ValueKind::Value);
        separator(&a, &c, &mut out);
        assert_eq!(out, a);
        // Same user key.
        let d = make_internal_key(b"abcdef", 4, ValueKind::Value);
        separator(&a, &d, &mut out);
        assert_eq!(out, a);
        successor(&a, &mut out);
        assert_eq!(user_key(&out), b"b");
        let ff = make_internal_key(&[0xff, 0xff], 1, ValueKind::Value);
        successor(&ff, &mut out);
        assert_eq!(out, ff);
    }
}
