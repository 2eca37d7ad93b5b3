//! Log framing shared by the WAL and the MANIFEST (LevelDB's log format).
//!
//! Spec: `docs/formats/wal.md`. The file is a sequence of 32 KiB blocks (the last one may be
//! partial). Each block holds fragments:
//! ```text
//! | masked crc32c u32 LE | length u16 LE | type u8 | payload (length bytes) |
//! ```
//! The checksum covers the type byte and the payload. Types: FULL = 1, FIRST = 2,
//! MIDDLE = 3, LAST = 4, END = 5 (an empty fragment: the log ends here, whatever follows;
//! 0 is reserved: zero-filled space). A record that does not fit in
//! the rest of a block is split FIRST, MIDDLE..., LAST; a fragment never crosses a block
//! boundary. When fewer than 7 bytes remain in a block they are zero-filled and the next
//! fragment starts in the next block.
//!
//! Invariants: the writer only appends; the reader never reads more than one block at a
//! time (plus one more block buffer while judging whether damage is at the tail) and never
//! allocates based on an unverified length beyond one block per fragment.
//!
//! Thread-safety: a [`LogWriter`] and a [`LogReader`] are single-owner values.

use std::io;
use std::sync::Arc;

use mezz_env::{RandomAccessFile, WritableFile};

use crate::checksum::{crc32c, crc32c_extend, mask, unmask};
use crate::coding::get_fixed32;
use crate::{CorruptionDetail, Result};

/// Size of a log block.
pub const LOG_BLOCK_SIZE: usize = 32 * 1024;
/// Size of a fragment header.
pub const LOG_HEADER_LEN: usize = 7;

/// Fragment type: a whole record.
pub const FULL: u8 = 1;
/// Fragment type: first fragment of a record.
pub const FIRST: u8 = 2;
/// Fragment type: interior fragment of a record.
pub const MIDDLE: u8 = 3;
/// Fragment type: last fragment of a record.
pub const LAST: u8 = 4;
/// Fragment type: the end of the log (empty payload). The writer of a log whose file may go
/// on past its records (reserved, zero-filled space) marks where they end, so a reader stops
/// there cleanly instead of reporting the zeros as a torn tail.
pub const END: u8 = 5;

const BLOCK: u64 = LOG_BLOCK_SIZE as u64;

#[inline]
fn fragment_crc(ty: u8, payload: &[u8]) -> u32 {
    crc32c_extend(crc32c(&[ty]), payload)
}

/// Appends records to a log file.
#[derive(Debug)]
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    size: u64,
}

impl LogWriter {
    /// A writer for a new, empty log.
    #[must_use]
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        Self::with_offset(file, 0)
    }

    /// A writer appending to a log that already holds `existing_len` bytes (a valid prefix:
    /// the caller truncated any damaged tail).
    #[must_use]
    pub fn with_offset(file: Box<dyn WritableFile>, existing_len: u64) -> Self {
        Self {
            file,
            block_offset: (existing_len % BLOCK) as usize,
            size: existing_len,
        }
    }

    /// Appends one record (into the file's buffer; call [`LogWriter::flush`] or
    /// [`LogWriter::sync`] to push it further).
    ///
    /// # Errors
    /// `Io` if appending fails; the log's tail is then undefined and the writer should be
    /// dropped.
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        let mut left = payload;
        let mut begin = true;
        loop {
            self.skip_block_trailer()?;
            let avail = LOG_BLOCK_SIZE - self.block_offset - LOG_HEADER_LEN;
            let n = left.len().min(avail);
            let (frag, rest) = left.split_at(n);
            let end = rest.is_empty();
            let ty = match (begin, end) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, true) => LAST,
                (false, false) => MIDDLE,
            };
            self.emit(ty, frag)?;
            left = rest;
            begin = false;
            if end {
                return Ok(());
            }
        }
    }

    /// Appends an END fragment: readers stop there, and nothing may be appended after it.
    ///
    /// # Errors
    /// `Io` if appending fails.
    pub fn add_end(&mut self) -> Result<()> {
        self.skip_block_trailer()?;
        Ok(self.emit(END, &[])?)
    }

    /// Zero-fills the rest of the block when a fragment header no longer fits in it.
    fn skip_block_trailer(&mut self) -> io::Result<()> {
        let leftover = LOG_BLOCK_SIZE - self.block_offset;
        if leftover < LOG_HEADER_LEN {
            if leftover > 0 {
                const ZEROS: [u8; LOG_HEADER_LEN - 1] = [0; LOG_HEADER_LEN - 1];
                self.file
                    .append(ZEROS.get(..leftover).unwrap_or_default())?;
                self.size += leftover as u64;
            }
            self.block_offset = 0;
        }
        Ok(())
    }

    fn emit(&mut self, ty: u8, frag: &[u8]) -> io::Result<()> {
        let [c0, c1, c2, c3] = mask(fragment_crc(ty, frag)).to_le_bytes();
        let [l0, l1] = (frag.len() as u16).to_le_bytes();
        let h = [c0, c1, c2, c3, l0, l1, ty];
        self.file.append(&h)?;
        self.file.append(frag)?;
        self.block_offset += LOG_HEADER_LEN + frag.len();
        self.size += (LOG_HEADER_LEN + frag.len()) as u64;
        Ok(())
    }

    /// Pushes buffered bytes to the operating system.
    ///
    /// # Errors
    /// `Io` from the file.
    pub fn flush(&mut self) -> Result<()> {
        Ok(self.file.flush()?)
    }

    /// Makes every appended record durable.
    ///
    /// # Errors
    /// `Io` from the file.
    pub fn sync(&mut self) -> Result<()> {
        Ok(self.file.sync()?)
    }

    /// Ends appending (see `WritableFile::close`): the file holds exactly the records
    /// appended. Only `sync` may follow.
    ///
    /// # Errors
    /// `Io` from the file.
    pub fn close(&mut self) -> Result<()> {
        Ok(self.file.close()?)
    }

    /// Size of the log in bytes, including what this writer appended.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Turns the file's early writeback off or on (`WritableFile::set_early_writeback`).
    pub fn set_early_writeback(&mut self, on: bool) {
        self.file.set_early_writeback(on);
    }
}

/// One result of [`LogReader::read_record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRead {
    /// A whole record; `offset` is where its first fragment's header starts.
    Record {
        /// The payload.
        data: Vec<u8>,
        /// File offset of the record.
        offset: u64,
    },
    /// The end of the log, after a clean record boundary.
    Eof,
    /// Damaged or incomplete data. `offset` is where the valid log ends: the start of the
    /// record that was dropped (or of the damaged fragment). `at_tail` is true when no
    /// fragment with a valid checksum exists anywhere after the damage (a torn write or a
    /// zero-filled tail). Reading may continue: the reader has skipped past the damage.
    Corrupt {
        /// File offset where the dropped data starts.
        offset: u64,
        /// What was wrong.
        detail: CorruptionDetail,
        /// Whether nothing valid follows.
        at_tail: bool,
    },
}

/// Reads records from a log file, one 32 KiB block at a time.
#[derive(Debug)]
pub struct LogReader {
    file: Arc<dyn RandomAccessFile>,
    file_size: u64,
    buf: Vec<u8>,
    block_start: u64,
    pos: usize,
    loaded: bool,
    eof: bool,
    record_end: u64,
    valid_after: Option<u64>,
    none_after: Option<u64>,
    io_error: Option<io::Error>,
    /// The log ended at an END fragment.
    sealed: bool,
}

/// Whether a fragment header at `p` in `block` is complete and its checksum verifies.
fn valid_fragment_at(block: &[u8], p: usize) -> bool {
    let Some(&[c0, c1, c2, c3, l0, l1, ty]) = block.get(p..p + LOG_HEADER_LEN) else {
        return false;
    };
    // Only data fragments count: damage followed by nothing but an END marker is still a
    // torn tail (a power cut may keep the marker's page and lose pages before it).
    if !(FULL..=LAST).contains(&ty) {
        return false;
    }
    let len = usize::from(u16::from_le_bytes([l0, l1]));
    let start = p + LOG_HEADER_LEN;
    let Some(payload) = block.get(start..start + len) else {
        return false;
    };
    unmask(u32::from_le_bytes([c0, c1, c2, c3])) == fragment_crc(ty, payload)
}

impl LogReader {
    /// A reader over the whole of `file` (as long as `file.size()`).
    #[must_use]
    pub fn new(file: Arc<dyn RandomAccessFile>) -> Self {
        let file_size = file.size();
        Self {
            file,
            file_size,
            buf: Vec::new(),
            block_start: 0,
            pos: 0,
            loaded: false,
            eof: false,
            record_end: 0,
            valid_after: None,
            none_after: None,
            io_error: None,
            sealed: false,
        }
    }

    /// Whether reading ended at an END fragment (the writer sealed the log there), not at
    /// the end of the file. Meaningful once `read_record` returned `Eof`.
    #[must_use]
    pub fn sealed(&self) -> bool {
        self.sealed
    }

    /// File offset just past the last record returned (the length of the valid prefix
    /// read so far).
    #[must_use]
    pub fn last_record_end(&self) -> u64 {
        self.record_end
    }

    /// The I/O error that ended reading, if any (it was reported as a `Corrupt` with
    /// `at_tail: false`).
    #[must_use]
    pub fn io_error(&self) -> Option<&io::Error> {
        self.io_error.as_ref()
    }

    fn current_end(&self) -> u64 {
        self.block_start + self.buf.len() as u64
    }

    /// Loads the block after the current one; false at end of file.
    fn next_block(&mut self) -> io::Result<bool> {
        let start = if self.loaded { self.current_end() } else { 0 };
        self.loaded = true;
        if start >= self.file_size {
            self.block_start = self.file_size;
            self.buf.clear();
            self.pos = 0;
            return Ok(false);
        }
        let len = (self.file_size - start).min(BLOCK) as usize;
        self.buf.resize(len, 0);
        self.block_start = start;
        self.pos = 0;
        if let Err(e) = self.file.read_exact_at(start, &mut self.buf) {
            self.buf.clear();
            return Err(e);
        }
        Ok(true)
    }

    /// Whether any fragment with a valid checksum starts at or after `from`.
    fn valid_fragment_after(&mut self, from: u64) -> bool {
        if self.valid_after.is_some_and(|v| v >= from) {
            return true;
        }
        if self.none_after.is_some_and(|n| from >= n) {
            return false;
        }
        let mut block_start = from - from % BLOCK;
        let mut first = (from % BLOCK) as usize;
        let mut scratch = vec![0u8; LOG_BLOCK_SIZE];
        while block_start < self.file_size {
            let len = (self.file_size - block_start).min(BLOCK) as usize;
            let Some(block) = scratch.get_mut(..len) else {
                return true;
            };
            if self.file.read_exact_at(block_start, block).is_err() {
                // Unknown: do not claim the damage is at the tail.
                return true;
            }
            for p in first..len.saturating_sub(LOG_HEADER_LEN - 1) {
                if valid_fragment_at(block, p) {
                    self.valid_after = Some(block_start + p as u64);
                    return true;
                }
            }
            block_start += BLOCK;
            first = 0;
        }
        self.none_after = Some(self.none_after.map_or(from, |n| n.min(from)));
        false
    }

    fn corrupt(
        &mut self,
        offset: u64,
        damage: u64,
        detail: impl Into<CorruptionDetail>,
    ) -> LogRead {
        let at_tail = !self.valid_fragment_after(damage + 1);
        LogRead::Corrupt {
            offset,
            detail: detail.into(),
            at_tail,
        }
    }

    /// Reads the next record.
    pub fn read_record(&mut self) -> LogRead {
        let mut record: Vec<u8> = Vec::new();
        let mut record_start: Option<u64> = None;
        loop {
            if self.eof {
                return LogRead::Eof;
            }
            let remaining = self.buf.len() - self.pos.min(self.buf.len());
            if remaining < LOG_HEADER_LEN {
                let at_file_end = self.loaded && self.current_end() >= self.file_size;
                if !at_file_end {
                    // Skip the block trailer (or load the first block).
                    match self.next_block() {
                        Ok(true) => continue,
                        Ok(false) => {}
                        Err(e) => {
                            let off = self.block_start;
                            let detail = format!("read failed at offset {off}: {e}");
                            self.io_error = Some(e);
                            self.eof = true;
                            return LogRead::Corrupt {
                                offset: record_start.unwrap_or(off),
                                detail: detail.into(),
                                at_tail: false,
                            };
                        }
                    }
                }
                // End of file.
                let here = self.block_start + self.pos as u64;
                let tail = self.buf.get(self.pos..).unwrap_or_default();
                let trailer_zone = self.pos + LOG_HEADER_LEN > LOG_BLOCK_SIZE;
                self.eof = true;
                let clean_end = tail.is_empty() || (trailer_zone && tail.iter().all(|&b| b == 0));
                if !clean_end {
                    let off = record_start.unwrap_or(here);
                    return self.corrupt(
                        off,
                        here,
                        format!("truncated fragment header at end of log (offset {here})"),
                    );
                }
                if let Some(start) = record_start {
                    return self.corrupt(
                        start,
                        here,
                        "record truncated at end of log (missing its last fragment)",
                    );
                }
                return LogRead::Eof;
            }

            let p = self.pos;
            let frag_off = self.block_start + p as u64;
            let header = self.buf.get(p..p + LOG_HEADER_LEN).unwrap_or_default();
            let (Some(stored), Some(&l0), Some(&l1), Some(&ty)) = (
                get_fixed32(header, 0),
                header.get(4),
                header.get(5),
                header.get(6),
            ) else {
                self.pos = self.buf.len();
                continue;
            };
            let len = usize::from(u16::from_le_bytes([l0, l1]));
            let start = p + LOG_HEADER_LEN;
            let end = start + len;
            let dropped_at = record_start.unwrap_or(frag_off);
            if end > self.buf.len() {
                let truncated = self.current_end() >= self.file_size && end <= LOG_BLOCK_SIZE;
                self.pos = self.buf.len();
                let detail = if truncated {
                    format!("fragment at offset {frag_off} truncated at end of log")
                } else {
                    format!("fragment at offset {frag_off}: length {len} exceeds its block")
                };
                return self.corrupt(dropped_at, frag_off, detail);
            }
            if stored == 0 && len == 0 && ty == 0 {
                self.pos = self.buf.len();
                return self.corrupt(
                    dropped_at,
                    frag_off,
                    format!("zero-filled space at offset {frag_off}"),
                );
            }
            let payload = self.buf.get(start..end).unwrap_or_default();
            let actual = fragment_crc(ty, payload);
            if unmask(stored) != actual {
                self.pos = self.buf.len();
                return self.corrupt(
                    dropped_at,
                    frag_off,
                    CorruptionDetail::Checksum {
                        what: format!("fragment at offset {frag_off}"),
                        stored: unmask(stored),
                        computed: actual,
                    },
                );
            }
            match ty {
                FULL | FIRST if record_start.is_some() => {
                    // A new record begins before the previous one ended: report the partial
                    // record and return this fragment on the next call (do not consume it).
                    return LogRead::Corrupt {
                        offset: dropped_at,
                        detail: format!(
                            "record at offset {dropped_at} ends without a LAST fragment \
                             (new record at {frag_off})"
                        )
                        .into(),
                        at_tail: false,
                    };
                }
                FULL => {
                    self.pos = end;
                    self.record_end = self.block_start + end as u64;
                    return LogRead::Record {
                        data: payload.to_vec(),
                        offset: frag_off,
                    };
                }
                FIRST => {
                    record.clear();
                    record.extend_from_slice(payload);
                    record_start = Some(frag_off);
                    self.pos = end;
                }
                MIDDLE | LAST if record_start.is_none() => {
                    self.pos = end;
                    return self.corrupt(
                        frag_off,
                        frag_off,
                        format!("fragment at offset {frag_off} (type {ty}) without a FIRST"),
                    );
                }
                END if record_start.is_some() || len != 0 => {
                    self.pos = end;
                    return LogRead::Corrupt {
                        offset: dropped_at,
                        detail: format!(
                            "end marker at offset {frag_off} inside a record or with a payload"
                        )
                        .into(),
                        at_tail: false,
                    };
                }
                END => {
                    // The writer's last fragment: what follows is reserved space.
                    self.pos = end;
                    self.record_end = self.block_start + end as u64;
                    self.eof = true;
                    self.sealed = true;
                    return LogRead::Eof;
                }
                MIDDLE => {
                    record.extend_from_slice(payload);
                    self.pos = end;
                }
                LAST => {
                    record.extend_from_slice(payload);
                    self.pos = end;
                    self.record_end = self.block_start + end as u64;
                    return LogRead::Record {
                        data: record,
                        offset: dropped_at,
                    };
                }
                _ => {
                    self.pos = self.buf.len();
                    return self.corrupt(
                        dropped_at,
                        frag_off,
                        format!("fragment at offset {frag_off}: unknown type {ty}"),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testfile::{SharedBuf, VecFile};
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    fn payload(i: usize, len: usize) -> Vec<u8> {
        (0..len).map(|j| (i * 31 + j * 7) as u8).collect()
    }

    fn write(records: &[Vec<u8>]) -> Vec<u8> {
        let buf = SharedBuf::default();
        let mut w = LogWriter::new(buf.writer());
        for r in records {
            w.add_record(r).unwrap();
        }
        w.sync().unwrap();
        let bytes = buf.bytes();
        assert_eq!(w.size(), bytes.len() as u64);
        bytes
    }

    fn read_all(bytes: Vec<u8>) -> Vec<LogRead> {
        let mut r = LogReader::new(VecFile::shared(bytes));
        let mut out = Vec::new();
        loop {
            let x = r.read_record();
            if x == LogRead::Eof {
                return out;
            }
            out.push(x);
            assert!(out.len() < 10_000, "reader does not terminate");
        }
    }

    fn sizes() -> Vec<usize> {
        vec![
            0,
            1,
            100,
            LOG_BLOCK_SIZE - 2 * LOG_HEADER_LEN - 101, // leaves exactly a header's room
            0,
            LOG_BLOCK_SIZE - LOG_HEADER_LEN - 3, // leaves a 3-byte trailer
            10,
            100_000, // FIRST, MIDDLE x2, LAST
            LOG_BLOCK_SIZE,
            5,
        ]
    }

    #[test]
    fn roundtrip_with_fragments_and_trailers() {
        let recs: Vec<Vec<u8>> = sizes()
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(i, n))
            .collect();
        let bytes = write(&recs);
        let got = read_all(bytes.clone());
        assert_eq!(got.len(), recs.len());
        let mut last_off = None;
        for (g, want) in got.iter().zip(&recs) {
            match g {
                LogRead::Record { data, offset } => {
                    assert_eq!(data, want);
                    assert!(last_off.is_none_or(|l| *offset > l));
                    last_off = Some(*offset);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // The 100 000-byte record is fragmented across blocks: FIRST, MIDDLE..., LAST.
        let LogRead::Record { offset, .. } = &got[7] else {
            unreachable!()
        };
        let first = *offset as usize;
        assert_eq!(bytes[first + 6], FIRST);
        let next_block = (first / LOG_BLOCK_SIZE + 1) * LOG_BLOCK_SIZE;
        assert_eq!(bytes[next_block + 6], MIDDLE);
    }

    #[test]
    fn block_trailers_and_exact_fits() {
        // Record 0 leaves 3 bytes in block 0: they become a zero trailer.
        // Record 1 (empty) then starts block 1; record 2 fills block 1 up to exactly a
        // header's room, which an empty record 3 takes; record 4 starts block 2.
        let recs = vec![
            payload(0, LOG_BLOCK_SIZE - LOG_HEADER_LEN - 3),
            vec![],
            payload(2, LOG_BLOCK_SIZE - 3 * LOG_HEADER_LEN),
            vec![],
            payload(4, 10),
        ];
        let bytes = write(&recs);
        assert_eq!(&bytes[LOG_BLOCK_SIZE - 3..LOG_BLOCK_SIZE], &[0, 0, 0]);
        assert_eq!(bytes[LOG_BLOCK_SIZE + 6], FULL);
        assert_eq!(
            bytes[2 * LOG_BLOCK_SIZE - 1],
            FULL,
            "empty record at the block end"
        );
        assert_eq!(bytes[2 * LOG_BLOCK_SIZE + 6], FULL);
        let offsets: Vec<u64> = read_all(bytes)
            .into_iter()
            .zip(&recs)
            .map(|(g, want)| match g {
                LogRead::Record { data, offset } if &data == want => offset,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        let b = LOG_BLOCK_SIZE as u64;
        assert_eq!(offsets, vec![0, b, b + 7, 2 * b - 7, 2 * b]);
    }

    #[test]
    fn append_with_offset_continues_the_log() {
        let buf = SharedBuf::default();
        let mut w = LogWriter::new(buf.writer());
        w.add_record(&payload(1, 30_000)).unwrap();
        w.add_record(&payload(2, 2000)).unwrap();
        let len = w.size();
        drop(w);
        let mut w = LogWriter::with_offset(buf.writer(), len);
        w.add_record(&payload(3, 5000)).unwrap();
        w.add_record(b"").unwrap();
        assert_eq!(w.size(), buf.bytes().len() as u64);
        let got = read_all(buf.bytes());
        let datas: Vec<Vec<u8>> = got
            .into_iter()
            .map(|r| match r {
                LogRead::Record { data, .. } => data,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            datas,
            vec![
                payload(1, 30_000),
                payload(2, 2000),
                payload(3, 5000),
                vec![]
            ]
        );
    }

    #[test]
    fn torn_tail_is_reported_at_tail() {
        let recs: Vec<Vec<u8>> = [10usize, 40_000, 300, 7, 33_000, 20]
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(i, n))
            .collect();
        let bytes = write(&recs);
        let mut rng = StdRng::seed_from_u64(1);
        let mut cuts: Vec<usize> = (0..400).map(|_| rng.random_range(0..bytes.len())).collect();
        cuts.extend(0..64);
        cuts.extend(LOG_BLOCK_SIZE - 16..LOG_BLOCK_SIZE + 16);
        for cut in cuts {
            let got = read_all(bytes[..cut].to_vec());
            let mut n_records = 0;
            for (i, g) in got.iter().enumerate() {
                match g {
                    LogRead::Record { data, .. } => {
                        assert_eq!(data, &recs[n_records], "cut {cut}");
                        n_records += 1;
                    }
                    LogRead::Corrupt {
                        at_tail, offset, ..
                    } => {
                        assert!(*at_tail, "cut {cut}: damage not at tail: {g:?}");
                        assert_eq!(i, got.len() - 1, "cut {cut}: only one report at the tail");
                        assert!(*offset <= cut as u64);
                    }
                    LogRead::Eof => unreachable!(),
                }
            }
        }
    }

    #[test]
    fn zero_filled_tail_is_at_tail() {
        let recs = vec![payload(1, 100), payload(2, 50_000)];
        let mut bytes = write(&recs);
        let valid_len = bytes.len() as u64;
        bytes.extend(std::iter::repeat_n(0u8, 70_000));
        let got = read_all(bytes);
        assert!(matches!(&got[0], LogRead::Record { data, .. } if data == &recs[0]));
        assert!(matches!(&got[1], LogRead::Record { data, .. } if data == &recs[1]));
        assert!(got.len() > 2);
        for g in &got[2..] {
            assert!(matches!(g, LogRead::Corrupt { at_tail: true, .. }), "{g:?}");
        }
        assert!(matches!(&got[2], LogRead::Corrupt { offset, .. } if *offset == valid_len));
    }

    /// Records, then an END fragment, then reserved space (zeros, or stale bytes): the
    /// reader returns the records and a clean `Eof` at the marker, wherever in its block the
    /// marker falls.
    #[test]
    fn an_end_marker_ends_the_log_cleanly_before_reserved_space() {
        for first in [
            100,
            LOG_BLOCK_SIZE - 2 * LOG_HEADER_LEN - 3,
            LOG_BLOCK_SIZE - 2 * LOG_HEADER_LEN,
        ] {
            let recs = vec![payload(1, first), payload(2, 300)];
            let buf = SharedBuf::default();
            let mut w = LogWriter::new(buf.writer());
            for r in &recs {
                w.add_record(r).unwrap();
            }
            w.add_end().unwrap();
            w.sync().unwrap();
            let mut bytes = buf.bytes();
            let end = bytes.len() as u64;
            assert_eq!(w.size(), end);
            for tail in [vec![0u8; 70_000], write(&[payload(9, 40)])] {
                let mut b = bytes.clone();
                b.extend_from_slice(&tail);
                let mut r = LogReader::new(VecFile::shared(b));
                for want in &recs {
                    assert!(
                        matches!(r.read_record(), LogRead::Record { data, .. } if &data == want)
                    );
                }
                assert_eq!(r.read_record(), LogRead::Eof, "first record {first}");
                assert!(r.sealed());
                assert_eq!(r.last_record_end(), end);
                assert_eq!(r.read_record(), LogRead::Eof);
            }
            // The same records without the marker: a clean end of file, not sealed.
            let unsealed = bytes[..bytes.len() - LOG_HEADER_LEN].to_vec();
            let mut r = LogReader::new(VecFile::shared(unsealed));
            while matches!(r.read_record(), LogRead::Record { .. }) {}
            assert!(!r.sealed());
            // Damage before the marker is a torn tail: the marker carries no data.
            let n = bytes.len();
            bytes[n - LOG_HEADER_LEN - 10] ^= 0x40;
            let got = read_all(bytes);
            assert!(
                matches!(got.last(), Some(LogRead::Corrupt { at_tail: true, .. })),
                "{got:?}"
            );
        }
    }

    /// An END fragment inside a record, or one with a payload, is damage with valid data
    /// possibly after it.
    #[test]
    fn a_misplaced_end_marker_is_corruption() {
        let frag = |ty: u8, payload: &[u8]| {
            let mut f = mask(fragment_crc(ty, payload)).to_le_bytes().to_vec();
            f.extend_from_slice(&(payload.len() as u16).to_le_bytes());
            f.push(ty);
            f.extend_from_slice(payload);
            f
        };
        let inside = [frag(FIRST, b"abc"), frag(END, b""), frag(LAST, b"def")].concat();
        let got = read_all(inside);
        assert!(
            matches!(
                &got[0],
                LogRead::Corrupt {
                    offset: 0,
                    at_tail: false,
                    ..
                }
            ),
            "{got:?}"
        );
        let with_payload = [frag(END, b"x"), frag(FULL, b"after")].concat();
        let got = read_all(with_payload);
        assert!(
            matches!(&got[0], LogRead::Corrupt { at_tail: false, .. }),
            "{got:?}"
        );
        assert!(matches!(&got[1], LogRead::Record { data, .. } if data == b"after"));
    }

    #[test]
    fn mid_file_corruption_is_not_at_tail_and_reading_resumes() {
        // Block 0: records 0..3 (small); then records that start in block 1 and later.
        let mut recs: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 1000)).collect();
        recs.push(payload(3, 40_000)); // spans blocks 0 and 1
        recs.extend((4..40).map(|i| payload(i, 1500)));
        let mut bytes = write(&recs);
        bytes[LOG_HEADER_LEN + 500] ^= 0x10; // inside record 0's payload
        let mut r = LogReader::new(VecFile::shared(bytes));
        match r.read_record() {
            LogRead::Corrupt {
                offset,
                at_tail,
                detail,
            } => {
                assert_eq!(offset, 0);
                assert!(!at_tail);
                assert!(
                    matches!(&detail, CorruptionDetail::Checksum { what, stored, computed }
                        if what == "fragment at offset 0" && stored != computed),
                    "{detail:?}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        // The rest of block 0 is skipped; the tail of record 3 in block 1 is an orphan.
        let mut later = Vec::new();
        loop {
            match r.read_record() {
                LogRead::Eof => break,
                LogRead::Record { data, .. } => later.push(data),
                LogRead::Corrupt { at_tail, .. } => assert!(!at_tail),
            }
        }
        assert_eq!(later, recs[4..].to_vec());
    }

    fn check_damaged(bytes: Vec<u8>, recs: &[Vec<u8>], what: &str) -> bool {
        let got = read_all(bytes);
        let mut saw_corrupt = false;
        for g in got {
            match g {
                LogRead::Record { data, .. } => {
                    assert!(
                        recs.contains(&data),
                        "{what}: accepted a record never written"
                    );
                }
                LogRead::Corrupt { .. } => saw_corrupt = true,
                LogRead::Eof => unreachable!(),
            }
        }
        saw_corrupt
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let recs: Vec<Vec<u8>> = (0..12).map(|i| payload(i, i * 17)).collect();
        let bytes = write(&recs);
        for i in 0..bytes.len() {
            for x in [0x01u8, 0xff] {
                let mut bad = bytes.clone();
                bad[i] ^= x;
                assert!(
                    check_damaged(bad, &recs, &format!("flip {x:#x} at {i}")),
                    "flip at {i} unnoticed"
                );
            }
        }
        for len in 0..bytes.len() {
            let _ = check_damaged(bytes[..len].to_vec(), &recs, &format!("truncate {len}"));
        }
    }

    #[test]
    fn flips_in_a_multi_block_log_never_yield_garbage() {
        let recs: Vec<Vec<u8>> = [5usize, 40_000, 300, 33_000, 20]
            .iter()
            .enumerate()
            .map(|(i, &n)| payload(i, n))
            .collect();
        let bytes = write(&recs);
        for i in (0..bytes.len()).step_by(331) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x04;
            let _ = check_damaged(bad, &recs, &format!("flip at {i}"));
        }
    }

    #[test]
    fn empty_log_is_eof() {
        assert!(read_all(Vec::new()).is_empty());
    }
}
