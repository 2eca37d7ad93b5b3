//! The table cache: open tables of one database, whatever their tier.
//!
//! Owns: [`TableCache`], at most `max_open` open tables (least recently used evicted
//! first, approximately), keyed by (location, id) and handed out as `Arc<dyn Table>`. A
//! table is opened through the [`Storage`] layer, which resolves its location; the kind of
//! table follows from the location (an SST file today; NVM tables plug in here, as one more
//! arm of [`TableCache::open`]). It also owns the block cache the SSTs share and the read
//! counters they count into the DB's statistics (see `table::sst`).
//!
//! Invariants: a cached table is only ever handed out for the location it was opened at;
//! a table evicted after its file was deleted keeps working for whoever still holds it.
//!
//! Thread-safety: `Send + Sync`, shared through `Arc`; opening the same table from several
//! threads at once opens it once.

use std::sync::Arc;

use mezz_format::sst::ReadCounters;

use crate::error::{Error, Result};
use crate::stats::StatsCollector;
use crate::storage::Storage;
use crate::table::sst::{BlockCacheImpl, SstTable};
use crate::table::{Table, TableLocation, TableMeta};

/// The open tables of one database, plus the block cache they share.
pub struct TableCache {
    storage: Arc<Storage>,
    tables: quick_cache::sync::Cache<(TableLocation, u64), Arc<dyn Table>>,
    block_cache: Option<Arc<BlockCacheImpl>>,
    stats: Arc<StatsCollector>,
    max_open: usize,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("storage", &self.storage)
            .field("open", &self.tables.len())
            .field("max_open", &self.max_open)
            .field("block_cache", &self.block_cache)
            .finish()
    }
}

impl TableCache {
    /// A cache of at most `max_open` open tables of `storage`, sharing a block cache of
    /// `block_cache_capacity` bytes (0 = no block cache), counting read statistics into
    /// `stats`.
    #[must_use]
    pub fn new(
        storage: Arc<Storage>,
        max_open: usize,
        block_cache_capacity: usize,
        stats: Arc<StatsCollector>,
    ) -> Self {
        let max_open = max_open.max(1);
        Self {
            storage,
            tables: quick_cache::sync::Cache::new(max_open),
            block_cache: (block_cache_capacity > 0)
                .then(|| Arc::new(BlockCacheImpl::new(block_cache_capacity))),
            stats,
            max_open,
        }
    }

    /// The storage layer tables are opened from.
    #[must_use]
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// The open table for `meta` (opening it at its location if it is not cached).
    ///
    /// # Errors
    /// `Io` / `Corruption` / `UnsupportedVersion` from opening it, naming its file;
    /// `InvalidArgument` for a kind of table this build cannot read.
    pub fn open(&self, meta: &TableMeta) -> Result<Arc<dyn Table>> {
        self.tables
            .get_or_insert_with(&(meta.location, meta.id), || self.load(meta))
    }

    fn load(&self, meta: &TableMeta) -> Result<Arc<dyn Table>> {
        let started = std::time::Instant::now();
        let t = self.load_untimed(meta);
        mezz_format::trace::table_open(started);
        t
    }

    fn load_untimed(&self, meta: &TableMeta) -> Result<Arc<dyn Table>> {
        match meta.location {
            TableLocation::Sst { path_id } => {
                let (path, file) = self.storage.open_sst(meta.id, path_id)?;
                let t = SstTable::open(meta, path, file, self.block_cache.as_ref(), &self.stats)?;
                Ok(Arc::new(t))
            }
            TableLocation::Nvm { .. } => {
                let tier = self.storage.nvm().ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "table {} is in NVM, but no NVM tier is open (nvm_dir)",
                        meta.id
                    ))
                })?;
                Ok(Arc::new(crate::table::nvm::NvmTable::open(tier, meta)?))
            }
            TableLocation::Row { .. } => {
                let (Some(tier), Some(space)) = (self.storage.nvm(), self.storage.matrix()) else {
                    return Err(Error::InvalidArgument(format!(
                        "table {} is a matrix row, but no matrix container is open",
                        meta.id
                    )));
                };
                Ok(Arc::new(crate::table::row::RowHandle::open(
                    space,
                    meta,
                    space.hints(),
                    Arc::clone(space.counters()),
                    crate::table::row::pool_path(tier.dir()),
                )?))
            }
        }
    }

    /// Forgets the open table `meta` (after its file was deleted). Iterators and lookups
    /// holding it keep working; its cached blocks age out of the block cache.
    pub fn evict(&self, id: u64, location: TableLocation) {
        self.tables.remove(&(location, id));
    }

    /// Number of tables currently open in the cache.
    #[must_use]
    pub fn open_tables(&self) -> usize {
        self.tables.len()
    }

    /// The shared block cache, if configured.
    #[must_use]
    pub fn block_cache(&self) -> Option<&Arc<BlockCacheImpl>> {
        self.block_cache.as_ref()
    }

    /// The read counters shared by every table of this cache.
    #[must_use]
    pub fn read_counters(&self) -> &Arc<ReadCounters> {
        &self.stats.table_reads
    }
}
