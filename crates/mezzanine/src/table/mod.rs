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

use std::fmt::Debug;

use mezz_format::{InternalIterator, SeqNo};

use crate::error::Result;

/// The storage tier a table lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Tier {
    /// Files on an SSD directory (a parallel unit).
    Ssd,
    /// Byte-addressable persistent memory.
    Nvm,
}

/// Where a table's bytes are. The storage layer (`crate::storage`) resolves it; the tier
/// follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TableLocation {
    /// An SST file `<number>.sst` in the SSD directory with index `path_id` (0 = the DB
    /// directory).
    Sst {
        /// Index of the directory (parallel unit) holding the file.
        path_id: u32,
    },
    /// A table in the NVM pool, in the extent of NVM object `object` (recorded in the
    /// manifest as an `NvmObject`).
    Nvm {
        /// The id of the NVM object holding the table's bytes.
        object: u64,
    },
    /// A row of the matrix container (MatrixKV's L0) in the page space of NVM object
    /// `space`, with its first `consumed` entries drained into L1 by column compactions.
    /// Each consumption makes a new table (a new id) over the same row.
    Row {
        /// The id of the NVM object holding the container's page space.
        space: u64,
        /// The row's id (written in its header; unique for the database's life).
        row: u64,
        /// The page holding the row's header.
        header_page: u32,
        /// Entries `[0, consumed)` are gone.
        consumed: u32,
    },
}

impl TableLocation {
    /// The tier this location is in.
    #[must_use]
    pub fn tier(&self) -> Tier {
        match self {
            TableLocation::Sst { .. } => Tier::Ssd,
            TableLocation::Nvm { .. } | TableLocation::Row { .. } => Tier::Nvm,
        }
    }
}

/// An open table pinned to the [`TableMeta`] that names it, for point reads: taking it
/// costs a load, where a lookup in the table cache takes its shard's lock and the table's
/// reference count (two cache lines that two reader threads would pass back and forth on
/// every probe). Set at most once, by [`cache::TableCache::open_for_read`]; dropped with
/// the metadata (when no version names the table any more). A copy of the metadata
/// starts unpinned, and pins never make two metadata unequal.
#[derive(Default)]
pub struct PinnedTable(std::sync::OnceLock<cache::Pin>);

impl Clone for PinnedTable {
    fn clone(&self) -> Self {
        PinnedTable::default()
    }
}

impl PartialEq for PinnedTable {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for PinnedTable {}

impl Debug for PinnedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "pinned"
        } else {
            "unpinned"
        })
    }
}

/// What the version set records about one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMeta {
    /// Unique identity (the file number for SSTs); never reused within a DB.
    pub id: u64,
    /// Location of the bytes.
    pub location: TableLocation,
    /// Size in bytes.
    pub size: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest sequence number of any entry.
    pub smallest_seq: SeqNo,
    /// Largest sequence number of any entry.
    pub largest_seq: SeqNo,
    /// Number of entries.
    pub num_entries: u64,
    /// Number of deletion entries.
    pub num_deletions: u64,
    /// For an NVM table: every NVM object its entries live in (its own object, its
    /// buffers, the objects of the tables a byte-addressable compaction pointed at). An
    /// object is freed once no live table lists it. Empty for SSTs.
    pub nvm_refs: Vec<NvmRef>,
    /// The open table, once a point read pinned it (not persisted).
    pub pinned: PinnedTable,
}

/// One NVM object an NVM table's entries live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NvmRef {
    /// The object's id.
    pub object: u64,
    /// Bytes of the object the table's entries occupy (see
    /// `compaction::nvm_sink::entry_weight`).
    pub bytes: u64,
    /// Whether this table wrote the object (its own object, a buffer of its copied
    /// entries). An object some live table created is never reclaimed.
    pub created: bool,
}

impl TableMeta {
    /// The tier the table lives in (from its location).
    #[must_use]
    pub fn tier(&self) -> Tier {
        self.location.tier()
    }
    /// The smallest user key.
    #[must_use]
    pub fn smallest_user_key(&self) -> &[u8] {
        mezz_format::ikey::user_key(&self.smallest)
    }
    /// The largest user key.
    #[must_use]
    pub fn largest_user_key(&self) -> &[u8] {
        mezz_format::ikey::user_key(&self.largest)
    }
}

/// Result of a point lookup in a memtable or table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupResult {
    /// The newest visible version is a value.
    Value(Vec<u8>),
    /// The newest visible version is a deletion.
    Deleted,
}

/// Options of a read from a table.
#[derive(Debug, Clone, Copy)]
pub struct TableReadOptions {
    /// Put blocks read into the block cache.
    pub fill_cache: bool,
    /// Re-verify checksums of cached blocks too.
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
    /// `hint` is what the previous (newer) table left for this one, and this table leaves
    /// its own for the next (matrix rows narrow an older row's search with cross-row
    /// hints). Other tables ignore and clear it (the default).
    ///
    /// # Errors
    /// As [`Table::get`].
    fn get_chained(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        opts: &TableReadOptions,
        hint: &mut Option<row::RowHint>,
    ) -> Result<Option<crate::pinned::PinnedLookup>> {
        *hint = None;
        self.get_pinned(user_key, seq, opts)
    }
    /// An iterator over every entry (internal keys), starting unpositioned.
    fn iter(&self, opts: &TableReadOptions) -> Box<dyn InternalIterator>;
    /// The NVM table behind this handle, if it is one (moving it to SSD copies its blocks).
    fn as_nvm(&self) -> Option<&nvm::NvmTable> {
        None
    }
    /// The matrix row behind this handle, if it is one (column compactions drain it).
    fn as_row(&self) -> Option<&row::RowHandle> {
        None
    }
    /// Reads every block and verifies every checksum and the key order; returns the number
    /// of entries.
    ///
    /// # Errors
    /// The first `Corruption` found.
    fn verify(&self) -> Result<u64>;
}

/// A table's iterator that names the table's file (or pool) in errors.
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

impl<I: InternalIterator> InternalIterator for InFileIter<I> {
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
        self.inner.status().map_err(|e| e.in_file(&self.path))
    }
    fn entry_ref(&self) -> Option<mezz_format::EntryRef> {
        self.inner.entry_ref()
    }
}
