//! A single-writer append log in one extent of persistent memory (the write-ahead log on
//! NVM). It stores bytes only: the caller frames its records (with checksums) itself.
//!
//! Owns: [`NvmLogWriter`] and [`NvmLogReader`], and the layout of a log extent:
//!
//! | offset in the extent | size | content |
//! |---|---|---|
//! | 0 | 8 | magic `MZNVMLOG` |
//! | 8 | 4 | format version (1), little endian |
//! | 12 | 4 | zero |
//! | 16 | 8 | log number |
//! | 24 | 8 | extent length |
//! | 32 | 4 | crc32c of bytes 0..32 |
//! | 36 | 28 | zero |
//! | 64 | 8 | `tail`: bytes of records that are durable (one aligned 8-byte word) |
//! | 72 | 56 | zero |
//! | 128 | len − 128 | records, appended back to back |
//!
//! Commit rule: `sync` persists the appended bytes and fences, and only then stores the new
//! `tail` with one 8-byte atomic store, persisted and fenced. So after a power cut every
//! byte of `[0, tail)` is what was appended; bytes beyond the tail are ignored.
//! `create` zeroes and persists the tail *before* it writes the header, so a valid header
//! never comes with a tail left over from an earlier use of the extent.
//!
//! Invariants: `synced <= written <= capacity`; bytes below `synced` never change again.
//!
//! Thread-safety: one writer per extent, enforced: a writer claims its extent in the region
//! and releases it when dropped; a second writer over an overlapping range is refused. A
//! writer is `Send`. [`NvmLogReader::open`] may run concurrently with the writer (it reads
//! only the durable prefix, below an atomically loaded tail).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mezz_format::{Error, Result};

use crate::Media;
use crate::alloc::Extent;
use crate::region::{Claim, Region};

/// Magic number at the start of a log extent.
pub const LOG_MAGIC: [u8; 8] = *b"MZNVMLOG";

/// Format version written by this build (and the newest one it reads).
pub const LOG_VERSION: u32 = 1;

/// Offset of the `tail` word in the extent.
pub const TAIL_AT: u64 = 64;

/// Offset of the first record byte in the extent.
pub const RECORDS_AT: u64 = 128;

const HEADER_LEN: usize = 64;
const CRC_AT: usize = 32;

/// Whether an append fitted.
#[must_use = "an append that did not fit wrote nothing"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// The bytes were copied into the log (durable after the next `sync`).
    Written,
    /// Not enough room left in the extent: nothing was written. Start a new log.
    Full,
}

/// Validates that `extent` lies in `region` and can hold a log; returns `(offset, len)`.
fn check_extent(region: &Region, extent: Extent) -> Result<(usize, usize)> {
    let bad = |why: &str| {
        Error::InvalidArgument(format!(
            "NVM log extent [{}, +{}): {why}",
            extent.offset, extent.len
        ))
    };
    let off = usize::try_from(extent.offset).map_err(|_| bad("offset too large"))?;
    let len = usize::try_from(extent.len).map_err(|_| bad("length too large"))?;
    if !off.is_multiple_of(64) {
        return Err(bad("offset not 64-byte aligned"));
    }
    if extent.len <= RECORDS_AT {
        return Err(bad("too small for a log header"));
    }
    if off.checked_add(len).is_none_or(|end| end > region.len()) {
        return Err(bad("outside the region"));
    }
    Ok((off, len))
}

/// The `tail` word of a log at byte offset `off` of `region`.
fn tail_word(region: &Region, off: usize) -> &AtomicU64 {
    // SAFETY: `off + TAIL_AT + 8 <= off + RECORDS_AT < end of region` (checked by
    // `check_extent`), and the address is 8-byte aligned (region base is page aligned and
    // `off` a multiple of 64). The word is only ever accessed atomically by this module, and
    // the reference does not outlive the borrow of `region`, which keeps the memory mapped.
    unsafe { AtomicU64::from_ptr(region.base().as_ptr().add(off + TAIL_AT as usize).cast()) }
}

fn encode_header(log_number: u64, len: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(&LOG_MAGIC);
    h[8..12].copy_from_slice(&LOG_VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&log_number.to_le_bytes());
    h[24..32].copy_from_slice(&len.to_le_bytes());
    let crc = crc32c::crc32c(&h[..CRC_AT]);
    h[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Appends bytes to a log extent (see the module documentation).
#[derive(Debug)]
pub struct NvmLogWriter {
    region: Arc<Region>,
    extent: Extent,
    off: usize,
    capacity: usize,
    log_number: u64,
    written: usize,
    synced: usize,
    _claim: Claim,
}

impl NvmLogWriter {
    /// Starts an empty log numbered `log_number` in `extent` of `region` (64-byte aligned,
    /// longer than [`RECORDS_AT`]), durable when this returns.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad extent or one already used by another writer; `Io` from
    /// persisting.
    pub fn create(region: Arc<Region>, extent: Extent, log_number: u64) -> Result<NvmLogWriter> {
        let (off, len) = check_extent(&region, extent)?;
        let claim = Claim::new(&region, off, len)?;
        let in_file = |e: std::io::Error| {
            let err = Error::from(e);
            match region.path() {
                Some(p) => err.in_file(p),
                None => err,
            }
        };
        tail_word(&region, off).store(0, Ordering::Release);
        region.on_write(8);
        region
            .persist(off + TAIL_AT as usize, 8)
            .and_then(|()| region.fence())
            .map_err(in_file)?;
        let header = encode_header(log_number, extent.len);
        // SAFETY: the header range `[off, off + 64)` is inside the region (checked) and
        // belongs to this writer (claimed); nothing reads it before `create` returns.
        unsafe { region.write_at(off, &header) };
        region.on_write(HEADER_LEN);
        region
            .persist(off, HEADER_LEN)
            .and_then(|()| region.fence())
            .map_err(in_file)?;
        Ok(NvmLogWriter {
            capacity: len - RECORDS_AT as usize,
            region,
            extent,
            off,
            log_number,
            written: 0,
            synced: 0,
            _claim: claim,
        })
    }

    /// Copies `bytes` after the previous appends. Not durable until [`NvmLogWriter::sync`].
    ///
    /// # Errors
    /// None today (reserved for emulated media errors); [`Appended::Full`] when the bytes
    /// do not fit (nothing written).
    pub fn append(&mut self, bytes: &[u8]) -> Result<Appended> {
        if bytes.len() > self.capacity - self.written {
            return Ok(Appended::Full);
        }
        let at = self.off + RECORDS_AT as usize + self.written;
        // SAFETY: `[at, at + bytes.len())` lies in the record area of this writer's
        // extent (checked against the remaining capacity), which it has claimed; readers
        // only read below the durable tail, which is at most `written`.
        unsafe { self.region.write_at(at, bytes) };
        self.region.on_write(bytes.len());
        self.written += bytes.len();
        Ok(Appended::Written)
    }

    /// Makes every appended byte durable: persist + fence of the new bytes, then the tail
    /// store, persist + fence. A no-op when nothing was appended since the last sync.
    ///
    /// # Errors
    /// `Io` from the region (the log should then be abandoned: the tail was not advanced
    /// past the failure).
    pub fn sync(&mut self) -> Result<()> {
        if self.synced == self.written {
            return Ok(());
        }
        let region = &self.region;
        let data = self.off + RECORDS_AT as usize + self.synced;
        let in_file = |e: std::io::Error| {
            let err = Error::from(e);
            match region.path() {
                Some(p) => err.in_file(p),
                None => err,
            }
        };
        region
            .persist(data, self.written - self.synced)
            .and_then(|()| region.fence())
            .map_err(in_file)?;
        tail_word(region, self.off).store(self.written as u64, Ordering::Release);
        region.on_write(8);
        region
            .persist(self.off + TAIL_AT as usize, 8)
            .and_then(|()| region.fence())
            .map_err(in_file)?;
        self.synced = self.written;
        Ok(())
    }

    /// The log number given to `create`.
    #[must_use]
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// The extent holding the log.
    #[must_use]
    pub fn extent(&self) -> Extent {
        self.extent
    }

    /// Bytes appended so far.
    #[must_use]
    pub fn written(&self) -> u64 {
        self.written as u64
    }

    /// Bytes made durable by `sync` so far.
    #[must_use]
    pub fn synced(&self) -> u64 {
        self.synced as u64
    }

    /// Room left for appends.
    #[must_use]
    pub fn remaining(&self) -> u64 {
        (self.capacity - self.written) as u64
    }
}

/// Reads the durable content of a log extent.
#[derive(Debug)]
pub struct NvmLogReader;

impl NvmLogReader {
    /// Returns the log number and exactly the durable record bytes `[0, tail)` of the log
    /// in `extent`.
    ///
    /// # Errors
    /// `InvalidArgument` for an extent that cannot hold a log; `Corruption` (with the
    /// region's file and the absolute offset) for a bad magic or checksum, a length that
    /// differs from the extent, or a tail beyond the extent; `UnsupportedVersion` for a
    /// newer format.
    pub fn open(region: &Region, extent: Extent) -> Result<(u64, Vec<u8>)> {
        let (off, log_number, tail) = Self::check(region, extent)?;
        // `tail <= capacity`, which fits in a usize (it is below the extent's length).
        let n = tail as usize;
        let mut records = vec![0u8; n];
        // SAFETY: `[off + RECORDS_AT, + n)` is inside the extent (n <= capacity); bytes
        // below the tail are never written again, and the tail was loaded with Acquire
        // after the writer's Release store that published them.
        unsafe { region.read_at(off + RECORDS_AT as usize, &mut records) };
        // One access: the records are copied in one pass.
        region.on_read(n);
        Ok((log_number, records))
    }

    /// Returns the log number and the length of the durable record bytes of the log in
    /// `extent`, checking its header as [`NvmLogReader::open`] does, without reading the
    /// records.
    ///
    /// # Errors
    /// As [`NvmLogReader::open`].
    pub fn durable_len(region: &Region, extent: Extent) -> Result<(u64, u64)> {
        let (_, log_number, tail) = Self::check(region, extent)?;
        Ok((log_number, tail))
    }

    /// Checks the header of the log in `extent`; returns its offset in the region, its log
    /// number and its durable tail (at most its capacity).
    fn check(region: &Region, extent: Extent) -> Result<(usize, u64, u64)> {
        let (off, len) = check_extent(region, extent)?;
        let corrupt = |at: u64, detail: String| Error::Corruption {
            file: region.path().map(std::path::Path::to_path_buf),
            offset: extent.offset + at,
            detail: detail.into(),
        };
        let mut h = [0u8; HEADER_LEN];
        // SAFETY: the header range is inside the region (checked). A writer only writes the
        // header in `create`, before the extent is handed to anyone who could read it.
        unsafe { region.read_at(off, &mut h) };
        // Cost hook: the header and the tail word after it, one access.
        region.on_read(HEADER_LEN + 8);
        if h[0..8] != LOG_MAGIC {
            return Err(corrupt(
                0,
                format!("not an NVM log: bad magic {:02x?}", &h[0..8]),
            ));
        }
        let stored = u32::from_le_bytes([h[CRC_AT], h[CRC_AT + 1], h[CRC_AT + 2], h[CRC_AT + 3]]);
        let actual = crc32c::crc32c(&h[..CRC_AT]);
        if stored != actual {
            return Err(corrupt(
                CRC_AT as u64,
                format!(
                    "NVM log header checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
                ),
            ));
        }
        let version = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        if version == 0 || version > LOG_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "NVM log",
                found: version,
                supported: LOG_VERSION,
            });
        }
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&h[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let log_number = u64_at(16);
        let stored_len = u64_at(24);
        if stored_len != extent.len {
            return Err(corrupt(
                24,
                format!(
                    "NVM log length {stored_len} differs from its extent's {}",
                    extent.len
                ),
            ));
        }
        let tail = tail_word(region, off).load(Ordering::Acquire);
        let capacity = (len as u64) - RECORDS_AT;
        if tail > capacity {
            return Err(corrupt(
                TAIL_AT,
                format!("NVM log tail {tail} beyond its capacity {capacity}"),
            ));
        }
        Ok((off, log_number, tail))
    }
}
