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
//! write lock); `replay_wal` runs single-threaded during recovery, except that a log
//! file larger than one chunk is read ahead on a thread of its own
//! (`mezz_env::PrefetchFile`), which ends before `replay_wal` returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::{FileSystem, RandomAccessFile};
use mezz_format::log::{LogRead, LogReader, LogWriter};

use crate::batch::WriteBatch;
use crate::error::{CorruptionDetail, Error, Result};
use crate::filename;
use crate::storage::nvm::NvmObject;
use crate::storage::nvm::NvmTier;

/// An open WAL being appended to.
#[derive(Debug)]
pub struct WalWriter {
    writer: LogWriter,
    number: u64,
    path: PathBuf,
    /// For a WAL in NVM: its object (every append is persisted: a group commit on NVM costs
    /// a few cache-line flushes, not an fsync).
    nvm: Option<NvmObject>,
    /// The directory whose entry for this file is not durable yet: synced before the first
    /// sync of the file (so creating a WAL at a memtable switch costs no directory fsync,
    /// which on ext4 can wait tens of milliseconds for a journal commit).
    dir_to_sync: Option<(Arc<dyn FileSystem>, PathBuf)>,
}

impl WalWriter {
    /// Creates WAL `number` in `dir`; `mapped`: as a log file the file system may write
    /// through a memory mapping ([`FileSystem::create_log`]), which leaves a zero-filled
    /// tail if the writer is never closed.
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn create(fs: &dyn FileSystem, dir: &Path, number: u64, mapped: bool) -> Result<Self> {
        let path = filename::wal_file(dir, number);
        let file = if mapped {
            fs.create_log(&path)
        } else {
            fs.create(&path)
        }
        .map_err(|e| Error::from(e).in_file(&path))?;
        Ok(Self {
            writer: LogWriter::new(file),
            number,
            path,
            nvm: None,
            dir_to_sync: None,
        })
    }

    /// Leaves the directory entry of this new file to be synced (on `fs`, directory `dir`)
    /// right before the file's first sync, instead of by the caller now.
    #[must_use]
    pub fn with_deferred_dir_sync(mut self, fs: Arc<dyn FileSystem>, dir: &Path) -> Self {
        self.dir_to_sync = Some((fs, dir.to_path_buf()));
        self
    }

    fn sync_dir_if_needed(&mut self) -> Result<()> {
        if let Some((fs, dir)) = &self.dir_to_sync {
            fs.sync_dir(dir).map_err(|e| Error::from(e).in_file(dir))?;
            self.dir_to_sync = None;
        }
        Ok(())
    }

    /// Creates a WAL in NVM object `obj` (WAL number `obj.id`) of `tier`.
    ///
    /// # Errors
    /// I/O errors persisting the log header.
    pub fn create_nvm(tier: &Arc<NvmTier>, obj: NvmObject) -> Result<Self> {
        let file = tier.create_log(obj)?;
        Ok(Self {
            writer: LogWriter::new(Box::new(file)),
            number: obj.id,
            path: tier.dir().join(crate::storage::nvm::POOL_FILE),
            nvm: Some(obj),
            dir_to_sync: None,
        })
    }

    /// The NVM object holding this WAL, if it lives in NVM.
    #[must_use]
    pub fn nvm_object(&self) -> Option<NvmObject> {
        self.nvm
    }

    /// Whether a record of `len` bytes still fits (always true for a file).
    #[must_use]
    pub fn has_room(&self, len: usize) -> bool {
        self.nvm.is_none_or(|o| {
            // Framing: a 7-byte header per 32 KiB block, plus block padding.
            let framed = len as u64 + (len as u64 / 32_768 + 2) * 7 + 4096;
            self.writer.size() + framed <= o.len.saturating_sub(4096)
        })
    }

    /// The WAL's file number.
    #[must_use]
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far.
    #[must_use]
    #[cfg(test)]
    pub fn size(&self) -> u64 {
        self.writer.size()
    }

    /// Appends one record and pushes it to the operating system (it then survives a process
    /// crash); syncs too when `sync` is true (it then survives a power cut).
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn append(&mut self, record: &[u8], sync: bool) -> Result<()> {
        if sync {
            self.sync_dir_if_needed()?;
        }
        self.writer
            .add_record(record)
            .and_then(|()| {
                if sync || self.nvm.is_some() {
                    self.writer.sync()
                } else {
                    self.writer.flush()
                }
            })
            .map_err(|e| e.in_file(&self.path).into())
    }

    /// Ends appending, without changing the file's size: an END marker follows the last
    /// record and is pushed to the operating system (for a mapped log, a copy into the
    /// mapping). Readers stop at the marker, so the reserved, zero-filled space a mapped log
    /// may have after it is not a torn tail, and newer logs are replayed after this one. The
    /// file is truncated later, when the writer is closed or dropped (after the log's sync,
    /// off the write path: truncating or creating a file can wait on the file system's
    /// journal).
    /// A WAL in NVM is closed at once instead (its object has no reserved tail).
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn seal(&mut self) -> Result<()> {
        if self.nvm.is_some() {
            return self.close();
        }
        self.writer
            .add_end()
            .and_then(|()| self.writer.flush())
            .map_err(|e| e.in_file(&self.path).into())
    }

    /// Ends appending: the file then holds exactly the records appended (a mapped log is
    /// truncated to them), so a crash before the next sync cannot leave this log with a
    /// zero-filled tail that would end recovery before newer logs. Only `sync` may follow.
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn close(&mut self) -> Result<()> {
        self.writer
            .close()
            .map_err(|e| e.in_file(&self.path).into())
    }

    /// Turns the file's early writeback off or on: on only while the log will be synced
    /// (see `DbInner::sync_wals_ahead`); off, a log deleted within the kernel's writeback
    /// delay is never written to the disk.
    pub fn set_early_writeback(&mut self, on: bool) {
        self.writer.set_early_writeback(on);
    }

    /// Makes every record appended so far durable.
    ///
    /// # Errors
    /// I/O errors (with the path).
    pub fn sync(&mut self) -> Result<()> {
        self.sync_dir_if_needed()?;
        self.writer.sync().map_err(|e| e.in_file(&self.path).into())
    }
}

/// How a WAL replay ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayEnd {
    /// The whole log was read, up to the END marker that seals it (or, for a log in NVM,
    /// which is never sealed, to its end).
    Complete,
    /// The whole file was read and it ends without an END marker: the newest log of a
    /// process that stopped, or an older log that lost its sealed tail (never synced, and
    /// a power cut kept only part of it).
    Unsealed,
    /// A damaged tail (a torn final write) was dropped at this offset.
    TornTail {
        /// Offset of the damage.
        offset: u64,
        /// What the reader saw.
        detail: CorruptionDetail,
    },
}

/// Reads WAL `path` and calls `apply` with each record's batch, in order.
///
/// `tolerate_tail`: a damaged tail (`Corrupt { at_tail: true }`) ends the replay instead of
/// failing it (under `TolerateCorruptTail`; recovery then replays no later log). Any other
/// damage, and
/// any record that does not decode as a batch, is a `Corruption` naming the file and offset.
///
/// # Errors
/// `Corruption`, `Io`, or whatever `apply` returns.
pub fn replay_wal(
    fs: &dyn FileSystem,
    path: &Path,
    tolerate_tail: bool,
    apply: impl FnMut(WriteBatch) -> Result<()>,
) -> Result<ReplayEnd> {
    let file = fs
        .open_read(path)
        .map_err(|e| Error::from(e).in_file(path))?;
    // Past one chunk, the next chunks are read on a thread while this one's records are
    // applied: a cold WAL's device time and its replay overlap (docs/impl.md, "Recovery").
    replay_log(
        mezz_env::PrefetchFile::over(file),
        path,
        true,
        tolerate_tail,
        apply,
    )
}

/// Seals the existing WAL file `path`, which ends at its records without an END marker:
/// appends the marker and syncs the file. Recovery keeps such a log (the newest of a
/// process that stopped) with newer logs after it; sealed, it cannot be mistaken later
/// for an older log that lost its tail.
///
/// # Errors
/// I/O errors (with the path).
pub fn seal_existing(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    let seal = || -> Result<()> {
        let file = fs.open_append(path)?;
        let len = file.size();
        let mut w = LogWriter::with_offset(file, len);
        w.add_end()?;
        Ok(w.sync()?)
    };
    seal().map_err(|e| e.in_file(path))
}

/// Bytes in memory read as a file (the durable part of an NVM log).
#[derive(Debug)]
struct BytesFile(Vec<u8>);

impl RandomAccessFile for BytesFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.0.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

/// [`replay_wal`] for a WAL in NVM (`bytes`: its durable records; `path`: the pool file,
/// for errors).
///
/// # Errors
/// As [`replay_wal`].
pub fn replay_wal_bytes(
    bytes: Vec<u8>,
    path: &Path,
    tolerate_tail: bool,
    apply: impl FnMut(WriteBatch) -> Result<()>,
) -> Result<ReplayEnd> {
    replay_log(
        Arc::new(BytesFile(bytes)),
        path,
        false,
        tolerate_tail,
        apply,
    )
}

/// `sealable`: the log is a file, sealed with an END marker when closed (see
/// `WalWriter::seal`); a log in NVM is not.
fn replay_log(
    file: Arc<dyn RandomAccessFile>,
    path: &Path,
    sealable: bool,
    tolerate_tail: bool,
    mut apply: impl FnMut(WriteBatch) -> Result<()>,
) -> Result<ReplayEnd> {
    let mut reader = LogReader::new(file);
    loop {
        match reader.read_record() {
            LogRead::Eof if reader.sealed() || !sealable => return Ok(ReplayEnd::Complete),
            LogRead::Eof => return Ok(ReplayEnd::Unsealed),
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
                        detail: format!("bad write batch in WAL record: {detail}").into(),
                    },
                    other => other.in_file(path),
                })?;
                apply(batch)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mezz_env::MemFs;

    fn write_three(fs: &MemFs, dir: &Path) -> PathBuf {
        fs.create_dir_all(dir).unwrap();
        let mut w = WalWriter::create(fs, dir, 7, false).unwrap();
        for i in 0..3u64 {
            let mut b = WriteBatch::new();
            b.put(format!("k{i}").as_bytes(), &[b'v'; 100]);
            b.set_sequence(10 + i);
            w.append(b.data(), i == 2).unwrap();
        }
        filename::wal_file(dir, 7)
    }

    fn replay(fs: &MemFs, path: &Path, tolerate: bool) -> (Result<ReplayEnd>, Vec<u64>) {
        let mut seqs = Vec::new();
        let r = replay_wal(fs, path, tolerate, |b| {
            seqs.push(b.sequence());
            Ok(())
        });
        (r, seqs)
    }

    /// A sealed WAL written through a mapping and never truncated (the process died before
    /// its sync) reads as complete: its END marker comes before the reserved zeros, so
    /// recovery goes on to the newer log, whose own zero tail is a torn tail.
    #[test]
    fn a_sealed_mapped_log_reads_complete_before_its_reserved_space() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::Options::default().fs;
        let batch = |seq: u64| {
            let mut b = WriteBatch::new();
            b.put(format!("k{seq}").as_bytes(), &[b'v'; 100]);
            b.set_sequence(seq);
            b
        };
        let mut older = WalWriter::create(fs.as_ref(), dir.path(), 7, true).unwrap();
        for seq in 10..13 {
            older.append(batch(seq).data(), false).unwrap();
        }
        older.seal().unwrap();
        let mut newer = WalWriter::create(fs.as_ref(), dir.path(), 8, true).unwrap();
        newer.append(batch(13).data(), false).unwrap();
        let older_path = filename::wal_file(dir.path(), 7);
        let reserved = std::fs::metadata(&older_path).unwrap().len();
        assert!(
            reserved > older.size(),
            "the older log still has its reserved space"
        );
        // A crash: neither writer is closed or dropped (dropping truncates).
        std::mem::forget(older);
        std::mem::forget(newer);
        let replay = |n: u64| {
            let mut seqs = Vec::new();
            let end = replay_wal(fs.as_ref(), &filename::wal_file(dir.path(), n), true, |b| {
                seqs.push(b.sequence());
                Ok(())
            })
            .unwrap();
            (end, seqs)
        };
        assert_eq!(replay(7), (ReplayEnd::Complete, vec![10, 11, 12]));
        let (end, seqs) = replay(8);
        assert!(matches!(end, ReplayEnd::TornTail { .. }), "{end:?}");
        assert_eq!(seqs, vec![13]);
    }

    /// Sealing, then syncing and closing (what the flush of its memtable does), leaves the
    /// log exactly its records and the END marker.
    #[test]
    fn a_sealed_log_is_truncated_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::Options::default().fs;
        let mut w = WalWriter::create(fs.as_ref(), dir.path(), 9, true).unwrap();
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.set_sequence(1);
        w.append(b.data(), false).unwrap();
        w.seal().unwrap();
        let size = w.size();
        w.sync().unwrap();
        w.close().unwrap();
        drop(w);
        let path = filename::wal_file(dir.path(), 9);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        let mut n = 0;
        let end = replay_wal(fs.as_ref(), &path, false, |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((end, n), (ReplayEnd::Complete, 1));
    }

    #[test]
    fn replays_every_record_in_order() {
        let fs = MemFs::new();
        let path = write_three(&fs, Path::new("/db"));
        let (r, seqs) = replay(&fs, &path, false);
        // Never sealed: the newest log of a writer that stopped.
        assert_eq!(r.unwrap(), ReplayEnd::Unsealed);
        assert_eq!(seqs, vec![10, 11, 12]);
        // Sealed afterwards, it reads complete, with the same records.
        seal_existing(&fs, &path).unwrap();
        let (r, seqs) = replay(&fs, &path, false);
        assert_eq!(r.unwrap(), ReplayEnd::Complete);
        assert_eq!(seqs, vec![10, 11, 12]);
    }

    #[test]
    fn torn_tail_is_tolerated_only_when_asked() {
        let fs = MemFs::new();
        let path = write_three(&fs, Path::new("/db"));
        let len = fs.file_size(&path).unwrap();
        fs.truncate(&path, len - 20).unwrap();
        let (r, seqs) = replay(&fs, &path, true);
        assert!(matches!(r.unwrap(), ReplayEnd::TornTail { .. }));
        assert_eq!(seqs, vec![10, 11]);
        let (r, _) = replay(&fs, &path, false);
        match r {
            Err(Error::Corruption { file, .. }) => assert_eq!(file.as_deref(), Some(&*path)),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    /// A log of several read-ahead chunks (`mezz_env::PrefetchFile`) replays every record
    /// in order; damage in its third chunk is found where it lies, as a torn tail when
    /// nothing valid follows it and as an error naming its offset when records do.
    #[test]
    fn a_log_of_several_chunks_replays_and_reports_damage_where_it_lies() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let mut w = WalWriter::create(&fs, dir, 7, false).unwrap();
        let n = 800u64;
        for seq in 0..n {
            let mut b = WriteBatch::new();
            b.put(format!("k{seq:05}").as_bytes(), &[seq as u8; 5000]);
            b.set_sequence(seq);
            w.append(b.data(), false).unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let path = filename::wal_file(dir, 7);
        let len = fs.file_size(&path).unwrap();
        assert!(len > 3 * mezz_env::PREFETCH_CHUNK as u64, "{len}");
        let (r, seqs) = replay(&fs, &path, false);
        assert_eq!(r.unwrap(), ReplayEnd::Unsealed);
        assert_eq!(seqs, (0..n).collect::<Vec<_>>());

        // Damage in the middle of the third chunk, with valid records after it.
        let at = 2 * mezz_env::PREFETCH_CHUNK as u64 + 100_000;
        fs.corrupt(&path, at, 0xff).unwrap();
        let (r, seqs) = replay(&fs, &path, true);
        match r {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file.as_deref(), Some(&*path));
                assert!(
                    offset <= at && at - offset < 6000,
                    "damage at {at}, error at {offset}"
                );
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        assert!(seqs.len() > 300 && seqs.len() < 500, "{}", seqs.len());
        // (The same mask again undoes the damage.)
        fs.corrupt(&path, at, 0xff).unwrap();

        // Cut there instead: a torn tail, every record before it replayed.
        fs.truncate(&path, at).unwrap();
        let (r, cut) = replay(&fs, &path, true);
        assert!(matches!(r.unwrap(), ReplayEnd::TornTail { .. }));
        assert_eq!(cut, seqs);
    }

    #[test]
    fn damage_followed_by_valid_records_is_an_error() {
        let fs = MemFs::new();
        let path = write_three(&fs, Path::new("/db"));
        // A byte inside the first record's payload.
        fs.corrupt(&path, 30, 0xff).unwrap();
        let (r, seqs) = replay(&fs, &path, true);
        assert!(seqs.is_empty());
        match r {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file.as_deref(), Some(&*path));
                assert_eq!(offset, 0);
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }
}
