//! The write-ahead log: one file `<number>.log` per memtable, holding one record per write
//! group (the group's concatenated `WriteBatch`), framed by `mezz_format::log`.
//!
//! Owns: [`WalWriter`] (append a group, flush to the OS, sync) and [`replay_wal`] (read a
//! log back as batches, applying the recovery mode to damage).
//!
//! Invariants: records are appended in sequence-number order; a record is durable only
//! after `sync` returned Ok. A WAL is deleted only after the memtable it feeds has been
//! flushed and the manifest edit recording that flush (its `log_number`) is durable.
//!
//! Thread-safety: a `WalWriter` is owned by the write-group leader (behind the engine's
//! write lock); `replay_wal` runs single-threaded during recovery.

use std::path::{Path, PathBuf};

use mezz_env::FileSystem;
use mezz_format::log::{LogRead, LogReader, LogWriter};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filename;

/// An open WAL being appended to.
#[derive(Debug)]
pub struct WalWriter {
    writer: LogWriter,
    number: u64,
    path: PathBuf,
}

impl WalWriter {
    /// Creates WAL `number` in `dir`.
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn create(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<Self> {
        let path = filename::wal_file(dir, number);
        let file = fs
            .create(&path)
            .map_err(|e| Error::from(e).in_file(&path))?;
        Ok(Self {
            writer: LogWriter::new(file),
            number,
            path,
        })
    }

    /// The WAL's file number.
    #[must_use]
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.writer.size()
    }

    /// Appends one record and pushes it to the operating system (it then survives a process
    /// crash); syncs too when `sync` is true (it then survives a power cut).
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn append(&mut self, record: &[u8], sync: bool) -> Result<()> {
        self.writer
            .add_record(record)
            .and_then(|()| {
                if sync {
                    self.writer.sync()
                } else {
                    self.writer.flush()
                }
            })
            .map_err(|e| e.in_file(&self.path))
    }

    /// Makes every record appended so far durable.
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn sync(&mut self) -> Result<()> {
        self.writer.sync().map_err(|e| e.in_file(&self.path))
    }
}

/// How a WAL replay ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayEnd {
    /// The whole log was read.
    Complete,
    /// A damaged tail (a torn final write) was dropped at this offset.
    TornTail {
        /// Offset of the damage.
        offset: u64,
        /// What the reader saw.
        detail: String,
    },
}

/// Reads WAL `path` and calls `apply` with each record's batch, in order.
///
/// `tolerate_tail`: a damaged tail (`Corrupt { at_tail: true }`) ends the replay instead of
/// failing it (only for the newest log under `TolerateCorruptTail`). Any other damage, and
/// any record that does not decode as a batch, is a `Corruption` naming the file and offset.
///
/// # Errors
/// `Corruption`, `Io`, or whatever `apply` returns.
pub fn replay_wal(
    fs: &dyn FileSystem,
    path: &Path,
    tolerate_tail: bool,
    mut apply: impl FnMut(WriteBatch) -> Result<()>,
) -> Result<ReplayEnd> {
    let file = fs
        .open_read(path)
        .map_err(|e| Error::from(e).in_file(path))?;
    let mut reader = LogReader::new(file);
    loop {
        match reader.read_record() {
            LogRead::Eof => return Ok(ReplayEnd::Complete),
            LogRead::Corrupt {
                offset,
                detail,
                at_tail,
            } => {
                if at_tail && tolerate_tail {
                    return Ok(ReplayEnd::TornTail { offset, detail });
                }
                return Err(Error::corruption(offset, detail).in_file(path));
            }
            LogRead::Record { data, offset } => {
                let batch = WriteBatch::from_data(data).map_err(|e| match e {
                    Error::Corruption { detail, .. } => Error::Corruption {
                        file: Some(path.to_path_buf()),
                        offset,
                        detail: format!("bad write batch in WAL record: {detail}"),
                    },
                    other => other.in_file(path),
                })?;
                apply(batch)?;
            }
        }
    }
}
