//! What the version set records about a table, below every layer that stores, opens or
//! versions tables: [`TableMeta`] (identity, location, key and sequence range, size), its
//! [`TableLocation`] and [`Tier`], the NVM objects an NVM table's entries live in
//! ([`NvmRef`]), and the result of a point lookup ([`LookupResult`]).
//!
//! Invariants: a `TableMeta` is immutable once a version holds it (shared through `Arc`);
//! its pin ([`PinnedTable`]) is set at most once and is not part of its value (copies start
//! unpinned; equality ignores it).
//!
//! Thread-safety: all types are `Send + Sync`.

use std::any::Any;
use std::fmt::Debug;

use mezz_format::SeqNo;

/// The storage tier a table lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Tier {
    /// Files on an SSD directory (a parallel unit).
    Ssd,
    /// Byte-addressable persistent memory.
    Nvm,
}

/// Where a table's bytes are. The storage layer (`storage`) resolves it; the tier
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
/// every probe). Set at most once, by the table cache (`table::cache`), which alone knows
/// what it holds; dropped with the metadata (when no version names the table any more). A
/// copy of the metadata starts unpinned, and pins never make two metadata unequal.
#[derive(Default)]
pub struct PinnedTable(std::sync::OnceLock<Box<dyn Any + Send + Sync>>);

impl PinnedTable {
    /// The pin, if one was set and it is a `T`.
    #[must_use]
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.get().and_then(|p| p.downcast_ref::<T>())
    }

    /// The pin, set to `init()` first if there is none yet; `None` if the pin that is set
    /// is not a `T`.
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<&T> {
        self.0.get_or_init(|| Box::new(init())).downcast_ref::<T>()
    }

    /// Whether a pin is set.
    #[must_use]
    pub fn is_set(&self) -> bool {
        self.0.get().is_some()
    }
}

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
        f.write_str(if self.is_set() { "pinned" } else { "unpinned" })
    }
}

/// Point reads that consulted a table without finding their key there and then looked
/// further (not persisted; see `Options::seek_compaction`). A copy of the metadata starts
/// at zero, and counts never make two metadata unequal.
#[derive(Default)]
pub struct SeekCount(std::sync::atomic::AtomicU64);

impl Clone for SeekCount {
    fn clone(&self) -> Self {
        SeekCount::default()
    }
}

impl PartialEq for SeekCount {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SeekCount {}

impl Debug for SeekCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} seeks",
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        )
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
    /// Wasted point-read searches of this table (not persisted).
    pub seeks: SeekCount,
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
    /// LevelDB's `allowed_seeks`: how many wasted point-read searches make the table
    /// worth compacting (one per 16 KiB of it, at least 100).
    #[must_use]
    pub fn allowed_seeks(&self) -> u64 {
        (self.size / (16 << 10)).max(100)
    }

    /// Counts one wasted search; true once the count has reached
    /// [`TableMeta::allowed_seeks`] (every later one asks again, as in LevelDB, so a
    /// request another one displaced is not lost).
    pub fn charge_seek(&self) -> bool {
        self.seeks
            .0
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .saturating_add(1)
            >= self.allowed_seeks()
    }

    /// The metadata of table `id` at `location` from the properties its SST records
    /// (key range, sequence range, counts, file size; no NVM references).
    #[must_use]
    pub fn from_properties(
        id: u64,
        location: TableLocation,
        p: &mezz_format::sst::TableProperties,
    ) -> TableMeta {
        TableMeta {
            id,
            location,
            size: p.file_size,
            smallest: p.smallest_key.clone(),
            largest: p.largest_key.clone(),
            smallest_seq: p.smallest_seq,
            largest_seq: p.largest_seq,
            num_entries: p.num_entries,
            num_deletions: p.num_deletions,
            nvm_refs: Vec::new(),
            pinned: Default::default(),
            seeks: Default::default(),
        }
    }

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
