//! MatrixKV: L0 in NVM as a matrix container of rows (a flush writes a memtable as one row
//! with one bulk copy, its hints pointing into the next older row), drained into a wide L1
//! by column compactions.
//!
//! Components: the row flush target ([`RowTarget`]), the matrix compaction policy, WALs in
//! NVM ([`NvmWals`], option `wal_on_nvm`), and the container's page space at open
//! ([`open_space`]). A
//! point read's cross-row hints are carried by the tables themselves
//! (`Table::get_chained`).
//!
//! Thread-safety: the target holds the container's page space (`Send + Sync`); one flush
//! runs at a time.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::compaction::CompactionPolicy;
use crate::compaction::matrix::{MatrixPolicy, row_id};
use crate::error::Error;
use crate::error::Result;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::stats::{Stats, StatsCollector};
use crate::storage::Storage;
use crate::storage::matrix::MatrixSpace;
use crate::storage::nvm::{NvmObject, NvmObjectKind, NvmTier, POOL_FILE};
use crate::table::TableMeta;
use crate::table::row::RowHandle;
use crate::version::{Version, VersionEdit};
use crate::wal::WalWriter;

use super::{FlushOutput, FlushStep, FlushTarget, Host, WalPlace, WalPlacement};

/// A flush writes the memtable as one row of the matrix container.
#[derive(Debug)]
pub(crate) struct RowTarget {
    space: Arc<MatrixSpace>,
}

impl RowTarget {
    /// The target, when the options give the container room (`matrix_bytes`) and the
    /// database has one. (A container left by an earlier open without `matrix_bytes` is
    /// only drained.)
    pub(crate) fn for_options(opts: &Options, storage: &Storage) -> Option<Self> {
        let space = storage.matrix().filter(|_| opts.matrix_bytes > 0)?;
        Some(RowTarget {
            space: Arc::clone(space),
        })
    }
}

impl FlushTarget for RowTarget {
    fn short_of_room(&self) -> bool {
        self.space.is_short_of_room()
    }

    /// A replayed memtable becomes a row, as a flush would write it (`None`, so an SST,
    /// when the container has no room).
    fn write_replayed(
        &self,
        m: &Arc<MemTable>,
        opts: &Options,
        new_id: &dyn Fn() -> u64,
    ) -> Result<Option<TableMeta>> {
        let row_id = new_id();
        let mut it = m.iter();
        let row = self
            .space
            .build_row(it.as_mut(), row_id, None, opts.block_size);
        // The row is named by the open's edit (or by nothing if the open fails: its pages
        // are free at the next open).
        self.space.built(row_id);
        Ok(row?.map(|(_, meta)| meta))
    }

    /// When the container has no room, pages no reader holds any more are released and
    /// the row is tried once more; then, with `may_wait` and a compaction running or due,
    /// the flush waits for the column compaction, else the memtable passes to the next
    /// target (an SST). An empty memtable passes too.
    fn write<'a>(
        &'a self,
        host: &'a dyn Host,
        m: &Arc<MemTable>,
        may_wait: bool,
    ) -> Result<FlushStep<'a>> {
        if m.is_empty() {
            return Ok(FlushStep::Pass);
        }
        let space = &self.space;
        // The newest L0 table, if it is a row, is what the new row's hints point into.
        let newest = host.current().version.tables(0).first().cloned();
        let prev = match &newest {
            Some(t) if row_id(t).is_some() => Some(host.open_table(t)?),
            _ => None,
        };
        let prev = prev
            .as_ref()
            .and_then(|t| t.as_any().downcast_ref::<RowHandle>())
            .map(|r| (r.row().as_ref(), r.consumed()));
        let row_id = host.new_file_number();
        let block_size = host.opts().block_size;
        let build = || space.build_row(m.iter().as_mut(), row_id, prev, block_size);
        let mut built = build()?;
        if built.is_none() {
            // Pages of tables nobody reads any more may not have gone back yet.
            host.purge_obsolete();
            if !space.is_short_of_room() {
                built = build()?;
            }
        }
        let Some((row, meta)) = built else {
            return Ok(if may_wait && host.compaction_pending() {
                FlushStep::Wait
            } else {
                FlushStep::Pass
            });
        };
        let mut edit = VersionEdit::default();
        edit.new_tables.push((0, meta));
        let row_bytes = row.len_bytes();
        let space = Arc::clone(space);
        Ok(FlushStep::Written(Box::new(FlushOutput {
            edit,
            table: None,
            after_install: Some(Box::new(move |installed| {
                // From here the row's pages follow the tables naming it (none, if the
                // install failed: they are freed with the next clean-up, or by the next
                // open).
                space.built(row_id);
                if installed {
                    crate::stats::StatsCollector::add(
                        &host.stats().matrix_row_bytes_written,
                        row_bytes,
                    );
                }
            })),
        })))
    }
}

/// Whether the options keep anything of MatrixKV's in NVM (the container, or WALs).
pub(crate) fn uses_nvm(opts: &Options) -> bool {
    opts.matrix_bytes > 0 || opts.wal_on_nvm
}

/// WALs in NVM (`wal_on_nvm`): each one an NVM log, with a file when the pool has no room.
#[derive(Debug)]
pub(crate) struct NvmWals;

impl NvmWals {
    /// The placement, when the options put WALs in NVM.
    pub(crate) fn for_options(opts: &Options) -> Option<Self> {
        opts.wal_on_nvm.then_some(NvmWals)
    }
}

impl WalPlacement for NvmWals {
    fn place(&self, storage: &Storage, opts: &Options, number: u64) -> Result<WalPlace> {
        let Some(tier) = storage.nvm() else {
            return Ok(WalPlace::File);
        };
        // Without room in the pool (taken or cut up by objects of other options), this
        // memtable's WAL is a file.
        let Some(obj) = tier.alloc_wal(number, opts.nvm_wal_bytes())? else {
            return Ok(WalPlace::FileFallback);
        };
        match WalWriter::create_nvm(tier, obj) {
            Ok(w) => Ok(WalPlace::Nvm(obj, w)),
            Err(e) => {
                tier.free(&obj);
                Err(e)
            }
        }
    }

    fn syncs_ahead(&self) -> bool {
        true
    }
}

/// At open: the matrix container's page space: the one the version lists, or (with `matrix_bytes`)
/// a new one, recorded by this open's manifest before any row is written into it. Its
/// free pages are those the version's rows do not use.
pub(crate) fn open_space(
    tier: &Arc<NvmTier>,
    opts: &Options,
    version: &Version,
    edit: &mut VersionEdit,
    released: &mut Vec<NvmObject>,
    new_id: &dyn Fn() -> u64,
) -> Result<Option<Arc<MatrixSpace>>> {
    let existing = version
        .nvm_objects
        .values()
        .find(|o| o.kind == NvmObjectKind::MatrixSpace)
        .copied();
    let no_rows = !version.tables(0).iter().any(|t| row_id(t).is_some());
    let object = match existing {
        // A container the options no longer ask for and no row uses is released with
        // this open's manifest, so its space serves the pool's other users again.
        Some(o) if opts.matrix_bytes == 0 && no_rows => {
            edit.deleted_nvm_objects.push(o.id);
            released.push(o);
            return Ok(None);
        }
        Some(o) => o,
        None if opts.matrix_bytes > 0 => {
            // The container must leave room for what else the options keep in the pool
            // (NVM WALs, memtables): refuse up front, naming the options.
            let others = opts
                .nvm_bytes_needed()
                .saturating_sub(opts.matrix_bytes)
                .saturating_sub(mezz_pmem::pool::SUPERBLOCK_SIZE);
            let free = tier.free_bytes();
            if opts.matrix_bytes.saturating_add(others) > free {
                return Err(Error::InvalidArgument(format!(
                    "the NVM pool has {free} bytes free: not enough for a matrix container of \
                     matrix_bytes {} plus {others} bytes of NVM WALs and memtables; lower \
                     matrix_bytes, or use a pool with more room (nvm_capacity sizes a new pool)",
                    opts.matrix_bytes
                )));
            }
            let id = new_id();
            let mut o = tier.alloc(id, NvmObjectKind::MatrixSpace, opts.matrix_bytes)?;
            o.weight = opts.matrix_page_bytes() as u64;
            edit.new_nvm_objects.push(o);
            o
        }
        None => return Ok(None),
    };
    let page_size = usize::try_from(object.weight).unwrap_or(0);
    let space = MatrixSpace::open(
        tier,
        object,
        page_size,
        opts.matrix_hints,
        version.all_tables().map(|(_, t)| t.as_ref()),
        &opts.key_order(),
    )
    .map_err(|e| e.in_file(tier.dir().join(POOL_FILE)))?;
    Ok(Some(Arc::new(space)))
}

/// The matrix policy (column compactions out of the container), when the options give
/// the container room; `levels` makes the policy of the levels under the container.
pub(crate) fn policy(
    opts: &Options,
    levels: &dyn Fn(&Options) -> Arc<dyn CompactionPolicy>,
) -> Option<Arc<dyn CompactionPolicy>> {
    (opts.matrix_bytes > 0)
        .then(|| Arc::new(MatrixPolicy::over(opts, levels)) as Arc<dyn CompactionPolicy>)
}

/// Fills `s.matrix`: the container's room, its rows in `v`, and the row-search counters
/// (nothing without a container).
pub(crate) fn fill_stats(s: &mut Stats, v: &Version, c: &StatsCollector, storage: &Storage) {
    let Some(space) = storage.matrix() else {
        return;
    };
    let m = &mut s.matrix;
    m.capacity_bytes = space.capacity_bytes();
    m.used_bytes = space.used_bytes();
    for t in v.tables(0) {
        if let Some(r) = row_id(t) {
            m.rows += 1;
            m.compactor_rows += usize::from(r <= v.matrix_compactor);
            m.row_bytes += t.size;
        }
    }
    m.row_bytes_written = c.matrix_row_bytes_written.load(Ordering::Relaxed);
    m.columns = c.matrix_columns.load(Ordering::Relaxed);
    let counters = space.counters();
    m.rows_searched = counters.gets.rows_searched.load(Ordering::Relaxed);
    m.rows_hinted = counters.gets.rows_hinted.load(Ordering::Relaxed);
    m.comparisons = counters.gets.comparisons.load(Ordering::Relaxed);
    m.seek_rows_searched = counters.seeks.rows_searched.load(Ordering::Relaxed);
    m.seek_rows_hinted = counters.seeks.rows_hinted.load(Ordering::Relaxed);
    m.seek_comparisons = counters.seeks.comparisons.load(Ordering::Relaxed);
}
