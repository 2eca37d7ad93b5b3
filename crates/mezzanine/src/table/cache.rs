//! The table cache: open tables of one database, whatever their tier.
//!
//! Owns: [`TableCache`], at most `max_open` open tables (least recently used evicted
//! first, approximately), keyed by (location, id) and handed out as `Arc<dyn Table>`. A
//! table is opened through the [`Storage`] layer, which resolves its location; the kind of
//! table follows from the location (an SST file today; NVM tables plug in here, as one more
//! arm of [`TableCache::open`]). It also owns the block cache the SSTs share and the read
//! counters they count into the DB's statistics (see `table::sst`).
//!
//! Point reads take a table through [`TableCache::open_for_read`], which pins it to its
//! [`TableMeta`] (see [`crate::table::PinnedTable`]) while pin slots are free: half of
//! `max_open` are pin slots, the cache holds the other half, so at most `max_open` tables
//! are open. A pinned table is handed out by [`TableCache::open`] too, never opened twice.
//!
//! Invariants: a cached table is only ever handed out for the location it was opened at;
//! a table evicted after its file was deleted keeps working for whoever still holds it;
//! pinned tables never outnumber the pin slots (each pin holds a slot until it is
//! dropped).
//!
//! Thread-safety: `Send + Sync`, shared through `Arc`; opening the same table from several
//! threads at once opens it once.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// Pins held (shared with each pin's slot, which gives it back when dropped).
    pinned: Arc<AtomicUsize>,
    /// Pins allowed: half of `max_open`.
    pin_slots: usize,
}

/// A table pinned to its metadata (the contents of [`crate::table::PinnedTable`]).
pub struct Pin {
    table: Arc<dyn Table>,
    _slot: Option<PinSlot>,
}

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pin").field("table", &self.table).finish()
    }
}

/// One of a table cache's pin slots, held by a pin and given back when it is dropped.
struct PinSlot(Arc<AtomicUsize>);

impl Drop for PinSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
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
        let max_open = max_open.max(2);
        let pin_slots = max_open / 2;
        Self {
            storage,
            tables: quick_cache::sync::Cache::new(max_open - pin_slots),
            block_cache: (block_cache_capacity > 0)
                .then(|| Arc::new(BlockCacheImpl::new(block_cache_capacity))),
            stats,
            max_open,
            pinned: Arc::new(AtomicUsize::new(0)),
            pin_slots,
        }
    }

    /// Tables pinned to their metadata now.
    #[must_use]
    #[cfg(test)]
    pub fn pinned_tables(&self) -> usize {
        self.pinned.load(Ordering::Relaxed)
    }

    /// The open table for `meta`, for a point read: the table pinned to `meta`, borrowed
    /// (no lock, no reference count); else the cached or newly opened one, pinned to
    /// `meta` if a pin slot is free, else handed out as an `Arc`.
    ///
    /// # Errors
    /// As [`TableCache::open`].
    pub fn open_for_read<'m>(&self, meta: &'m TableMeta) -> Result<Cow<'m, Arc<dyn Table>>> {
        if let Some(p) = meta.pinned.get::<Pin>() {
            return Ok(Cow::Borrowed(&p.table));
        }
        let table = self.cached(meta)?;
        // Once every slot is taken (a database with more tables than slots), a probe only
        // reads the count: no write to a line every reader shares.
        if self.pinned.load(Ordering::Relaxed) >= self.pin_slots {
            return Ok(Cow::Owned(table));
        }
        if self.pinned.fetch_add(1, Ordering::Relaxed) >= self.pin_slots {
            self.pinned.fetch_sub(1, Ordering::Relaxed);
            return Ok(Cow::Owned(table));
        }
        // The slot is counted already; if another thread pinned the table first, the
        // slot not taken here gives itself back when dropped.
        let mut slot = Some(PinSlot(Arc::clone(&self.pinned)));
        let pin = meta.pinned.get_or_init(|| Pin {
            table: Arc::clone(&table),
            _slot: slot.take(),
        });
        drop(slot);
        Ok(match pin {
            Some(pin) => Cow::Borrowed(&pin.table),
            None => Cow::Owned(table),
        })
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
        match meta.pinned.get::<Pin>() {
            Some(p) => Ok(Arc::clone(&p.table)),
            None => self.cached(meta),
        }
    }

    /// The table for `meta` from the cache, opened and cached if it is not there.
    fn cached(&self, meta: &TableMeta) -> Result<Arc<dyn Table>> {
        self.tables
            .get_or_insert_with(&(meta.location, meta.id), || self.load(meta))
    }

    fn load(&self, meta: &TableMeta) -> Result<Arc<dyn Table>> {
        let started = std::time::Instant::now();
        let t = self.load_untimed(meta);
        mezz_util::trace::table_open(started);
        t
    }

    fn load_untimed(&self, meta: &TableMeta) -> Result<Arc<dyn Table>> {
        match meta.location {
            TableLocation::Sst { path_id } => {
                let (path, file) = self.storage.open_sst(meta.id, path_id)?;
                let t = SstTable::open(
                    meta,
                    path,
                    file,
                    self.block_cache.as_ref(),
                    &self.stats,
                    self.storage.order(),
                )?
                .with_scan_readahead(self.storage.scan_readahead());
                Ok(Arc::new(t))
            }
            TableLocation::Nvm { .. } => {
                let tier = self.storage.nvm().ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "table {} is in NVM, but no NVM tier is open (nvm_dir)",
                        meta.id
                    ))
                })?;
                Ok(Arc::new(crate::table::nvm::NvmTable::open(
                    tier,
                    meta,
                    self.storage.order(),
                )?))
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
    #[cfg(test)]
    pub fn open_tables(&self) -> usize {
        self.tables.len()
    }

    /// The shared block cache, if configured.
    #[must_use]
    #[cfg(test)]
    pub fn block_cache(&self) -> Option<&Arc<BlockCacheImpl>> {
        self.block_cache.as_ref()
    }
}
