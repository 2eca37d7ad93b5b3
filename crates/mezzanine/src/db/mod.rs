//! The database handle: open/recovery, the write path with group commit, reads, snapshots,
//! flush and compaction scheduling, properties, close.
//!
//! (API skeleton: bodies are being filled in.)

use std::path::Path;

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::iter::DbIterator;
use crate::options::{Options, ReadOptions, Snapshot, WriteOptions};
use crate::stats::Stats;

/// What `Db::verify` checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Tables read.
    pub tables: usize,
    /// Entries read from them.
    pub entries: u64,
    /// Bytes of table files read.
    pub bytes: u64,
}

/// Keeps a snapshot's sequence number registered while any clone of the snapshot lives.
#[derive(Debug)]
pub struct SnapshotGuard {}

/// An open database. `Send + Sync`: share it between threads with `Arc<Db>`.
#[derive(Debug)]
pub struct Db {}

impl Db {
    /// Opens (or creates, per `options.create_if_missing`) the database in directory `path`.
    ///
    /// # Errors
    /// `InvalidArgument` for bad options, `Locked` if another handle has the DB open,
    /// `Corruption` / `Io` if recovery fails.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let _ = (path, options);
        todo!()
    }

    /// Sets `key` to `value` (default write options).
    ///
    /// # Errors
    /// I/O errors, `Background` after a failed background job, `Closed`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_opt(&WriteOptions::default(), key, value)
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn put_opt(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(opts, b)
    }

    /// Deletes `key` (default write options).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.delete_opt(&WriteOptions::default(), key)
    }

    /// Deletes `key`.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete_opt(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(opts, b)
    }

    /// Applies a batch atomically.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        let _ = (opts, batch);
        todo!()
    }

    /// The value of `key` in the latest state.
    ///
    /// # Errors
    /// `Corruption` / `Io` from reading tables, `Closed`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::default(), key)
    }

    /// The value of `key` as of `opts.snapshot` (or the latest state).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _ = (opts, key);
        todo!()
    }

    /// An iterator over a consistent snapshot, honouring `opts.lower_bound` /
    /// `opts.upper_bound`. It starts unpositioned: call a seek method first.
    ///
    /// # Errors
    /// `Closed`.
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        let _ = opts;
        todo!()
    }

    /// Pins the current state for consistent reads.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        todo!()
    }

    /// Flushes the memtable to an SST and waits until it is durable.
    ///
    /// # Errors
    /// I/O errors, `Closed`.
    pub fn flush(&self) -> Result<()> {
        todo!()
    }

    /// Compacts every table overlapping `[begin, end]` (`None` = unbounded) down to the
    /// bottom-most level that holds data, and waits.
    ///
    /// # Errors
    /// I/O errors, `Closed`.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let _ = (begin, end);
        todo!()
    }

    /// Waits until no flush or compaction is pending or running.
    ///
    /// # Errors
    /// A background error, `Closed`.
    pub fn wait_for_background(&self) -> Result<()> {
        todo!()
    }

    /// A named property: `mezz.stats` (the statistics as text), `mezz.levels` (files and
    /// bytes per level), `mezz.num-files-at-level<N>`, `mezz.options`.
    #[must_use]
    pub fn property(&self, name: &str) -> Option<String> {
        let _ = name;
        todo!()
    }

    /// The statistics as a struct.
    #[must_use]
    pub fn stats(&self) -> Stats {
        todo!()
    }

    /// Waits for running background work, syncs the WAL and releases the LOCK. Later calls
    /// on this handle return `Closed`. Dropping the handle closes it too.
    ///
    /// # Errors
    /// The first error met while closing.
    pub fn close(&self) -> Result<()> {
        todo!()
    }

    /// Reads every table and verifies every checksum and the version's invariants (key
    /// order inside tables, no overlap between tables of one level >= 1, key ranges that
    /// match the recorded metadata). Used by `mezz check`.
    ///
    /// # Errors
    /// The first `Corruption` found, naming the file and offset.
    pub fn verify(&self) -> Result<VerifyReport> {
        todo!()
    }

    /// The database directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        todo!()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Db>();
    }
}
