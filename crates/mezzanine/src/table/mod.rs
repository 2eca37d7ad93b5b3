//! The one table abstraction every tier plugs into.
//!
//! Owns: [`TableMeta`] (what the version set records about a table: identity, tier,
//! location, key range, sequence range, size) and the [`Table`] trait (point lookup,
//! iterator, verification). Reads and compaction reach every table — SST files, NVM tables
//! (TLSM), matrix rows later — only through `Table`, so a new tier plugs in without
//! touching them. Submodules: `sst` (SST files, the block cache), `nvm` (NVM tables: skip
//! lists in the NVM pool pointing at KeySet entries) and `cache` (the table cache, keyed by
//! location, which opens each kind of table through the storage layer).
//!
//! Thread-safety: `Table` objects are shared (`Arc<dyn Table>`) and used from many threads.

pub mod cache;
pub mod nvm;
pub mod row;
pub mod sst;

pub use crate::base::meta::{LookupResult, NvmRef, TableLocation, TableMeta, Tier};

use std::fmt::Debug;

use mezz_format::{InternalIterator, SeqNo};

use crate::error::{Error, Result};

/// Options of a read from a table.
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)] // set for diagnostics and tests; not read by the engine
pub struct TableReadOptions {
    /// Put blocks read into the block cache.
    pub fill_cache: bool,
    /// Re-verify checksums of cached blocks too.
    #[allow(dead_code)] // set for diagnostics and tests; not read by the engine
    pub verify_checksums: bool,
    /// The reader scans whole tables in order (a compaction's input): an SST read with
    /// direct I/O then reads its blocks in large chunks (`Storage::scan_readahead`) rather
    /// than one at a time. Point reads and user iterators leave it off.
    pub whole_table_scan: bool,
}

impl Default for TableReadOptions {
    fn default() -> Self {
        Self {
            fill_cache: true,
            verify_checksums: false,
            whole_table_scan: false,
        }
    }
}

/// What one table of a point read leaves for the next older table it consults
/// (fractional cascading): the window `lo..=hi` of entry positions in table `table`
/// (which held `entries` entries when the hint was made) where the key's lower bound is.
/// A table uses a hint only if it names it with that entry count. Matrix rows make and use
/// them; other tables ignore them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainHint {
    /// The table (row id) the window is in.
    pub table: u64,
    /// Its entry count when the hint was made.
    pub entries: u32,
    /// Smallest possible position.
    pub lo: u32,
    /// Largest possible position.
    pub hi: u32,
}

/// A sorted, immutable run of entries in some tier.
pub trait Table: Send + Sync + Debug {
    /// The table's metadata.
    fn meta(&self) -> &TableMeta;
    /// The newest entry for `user_key` with sequence number <= `seq`, if the table has one.
    ///
    /// # Errors
    /// `Corruption` / `Io` from reading the table.
    fn get(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
    ) -> Result<Option<LookupResult>>;
    /// As [`Table::get`], but a value may borrow the block holding it instead of being
    /// copied (the default copies).
    ///
    /// # Errors
    /// As [`Table::get`].
    fn get_pinned(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
    ) -> Result<Option<crate::pinned::PinnedLookup>> {
        Ok(self.get(user_key, seq, opts)?.map(Into::into))
    }
    /// As [`Table::get_pinned`], for a point read that consults L0 tables newest first:
    /// `hint` is what the previous (newer) table left for this one (see [`ChainHint`]),
    /// and this table leaves its own for the next. Tables without such hints ignore and
    /// clear it (the default).
    ///
    /// # Errors
    /// As [`Table::get`].
    fn get_chained(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
        hint: &mut Option<ChainHint>,
    ) -> Result<Option<crate::pinned::PinnedLookup>> {
        *hint = None;
        self.get_pinned(user_key, seq, opts)
    }
    /// Whether the table's filter says `user_key` may be in it (true for a table without
    /// a filter, the default): false means a point read of it costs one filter probe.
    fn may_contain(&self, _user_key: &[u8]) -> bool {
        true
    }
    /// An iterator over every entry (internal keys), starting unpositioned.
    fn iter(&self, opts: &TableReadOptions) -> Box<dyn InternalIterator<Error>>;
    /// The table as `Any`, for the code of its own kind (a compaction that moves NVM
    /// tables' blocks, a column compaction draining matrix rows) to reach its type.
    fn as_any(&self) -> &dyn std::any::Any;
    /// Reads every block and verifies every checksum and the key order; returns the number
    /// of entries.
    ///
    /// # Errors
    /// The first `Corruption` found.
    fn verify(&self) -> Result<u64>;
}

/// A table's iterator from the format layer (`mezz-format`, `mezz-pmem`), as an engine
/// iterator: its errors name the table's file (or pool) and become the engine's [`Error`]
/// (same kind and fields).
pub(crate) struct InFileIter<I> {
    inner: I,
    path: std::path::PathBuf,
}

impl<I> InFileIter<I> {
    /// Wraps `inner`, naming `path` in its errors.
    pub(crate) fn new(inner: I, path: std::path::PathBuf) -> Self {
        Self { inner, path }
    }
}

impl<I> Debug for InFileIter<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFileIter")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl<I: InternalIterator> InternalIterator<Error> for InFileIter<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
    }
    fn next(&mut self) {
        self.inner.next();
    }
    fn prev(&mut self) {
        self.inner.prev();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner
            .status()
            .map_err(|e| e.in_file(&self.path).into())
    }
    fn entry_ref(&self) -> Option<mezz_format::EntryRef> {
        self.inner.entry_ref()
    }
}
