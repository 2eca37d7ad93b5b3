//! MatrixKV's compaction of a matrix-container L0: the policy and the column compaction.
//!
//! Owns: [`MatrixPolicy`] (a [`CompactionPolicy`] wrapping the leveled one) and
//! [`run_column`] (one column compaction, run by the executor for plans of reason
//! [`CompactionReason::Column`]).
//!
//! The policy, when L0 holds only matrix rows:
//! 1. The rows with an id up to `Version::matrix_compactor` are the compactor. While it has
//!    rows, the next job is a column compaction of them. When it is empty and the rows (the
//!    receiver) hold `matrix_switch_fraction` of the container, every row becomes the
//!    compactor (the job's edit records the new compactor; no byte moves).
//! 2. Levels >= 1 are the policy of the levels' own ([`MatrixPolicy::over`]: leveled, or
//!    TLSM's tiering when the levels under the container are NVM tables), with L0's
//!    file-count triggers out of play (rows leave L0 only through columns, never by a
//!    trivial move).
//! 3. Writers slow down from 85 % of the container's bytes and stop at 95 % (rows' live
//!    bytes; never before a switch is due), and the leveled pending-bytes triggers still
//!    apply. A flush whose row would not fit waits for a running or due column instead of
//!    writing an L0 SST, and that column goes ahead of the levels' compactions: further
//!    memtables wait as memtables, not as a stop on the container (a reserve of one row
//!    stopped writers at three rows of a four-row container, and a reserve per memtable
//!    while most of a small container was free).
//!
//! When L0 also holds an SST (a flush found the container full, or recovery replayed a
//! WAL), the plain leveled policy compacts the whole of L0 (rows and SSTs) into L1, which
//! keeps the read order: no key of a newer L0 table moves below an older row.
//!
//! A column compaction ([`run_column`]): the planner (`compaction::column::plan_column`,
//! pure) cuts the compactor's live data along L1's table boundaries into a column `[start,
//! end]` of about `af · target_file_size` bytes (at most 1/8 of the container); the entries
//! of every compactor row up to `end` (fetched by `column_threads` threads when the column
//! is small enough to hold in DRAM) are merged with the L1 tables overlapping the column
//! into new L1 tables; each row's table is replaced by one over the same row with a larger
//! consumed count (or dropped once drained). Pages a drained prefix no longer uses go back
//! to the container once no reader holds the old table (see `storage::matrix`).
//!
//! Invariants: rows drain as prefixes, cut between user keys, and a column holds every
//! version of its keys from every compactor row, so an L1 key never has a newer version in a
//! compactor row below it; the receiver rows (newer) stay above L1 in the read order.
//!
//! Thread-safety: the policy is stateless; a column compaction runs on one background
//! thread and uses scoped threads for the fetch.

use std::sync::Arc;

use mezz_format::ikey::user_key;
use mezz_format::{InternalIterator, KeyOrder};

use crate::compaction::column::{ColumnBounds, ColumnCursor, RowKeySizes, plan_column};
use crate::compaction::executor::{CompactionContext, CompactionResult};
use crate::compaction::policy::{
    Claims, CompactionPlan, CompactionPolicy, CompactionReason, StallCause, WritePressure,
};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::table::row::RowHandle;
use crate::table::{Table, TableLocation, TableMeta, TableReadOptions};
use crate::version::Version;

/// Writers slow down once the rows' bytes reach this share of the container (or less, see
/// `MatrixPolicy::new`)...
const SLOWDOWN_FRACTION: f64 = 0.85;
/// ... and stop at this share (or less).
const STOP_FRACTION: f64 = 0.95;
/// A column whose row data is at most this large is fetched into DRAM by parallel threads;
/// a larger one is streamed from the rows.
const MAX_FETCH_BYTES: u64 = 128 << 20;

/// The row id of a matrix row table, `None` for any other table.
#[must_use]
pub fn row_id(t: &TableMeta) -> Option<u64> {
    match t.location {
        TableLocation::Row { row, .. } => Some(row),
        _ => None,
    }
}

/// The policy of a database whose L0 is a matrix container. See the module documentation.
#[derive(Debug, Clone)]
pub struct MatrixPolicy {
    /// The levels' policy with the options as given (for an L0 that holds SSTs too).
    plain: Arc<dyn CompactionPolicy>,
    /// The levels' policy with L0's file-count triggers out of play.
    deeper: Arc<dyn CompactionPolicy>,
    capacity: u64,
    /// Row bytes at which the receiver becomes the compactor (`matrix_switch_fraction`).
    switch_at: u64,
    /// Bytes of the row one memtable makes, at most (entries, key array, header).
    row_bytes: u64,
    /// Writers slow down from this many row bytes...
    slowdown_at: u64,
    /// ... and stop at this many: room stays for one row.
    stop_at: u64,
}

impl MatrixPolicy {
    /// The policy for `opts` (`matrix_bytes > 0`) over leveled levels.
    #[cfg(test)]
    #[must_use]
    pub fn new(opts: &Options) -> Self {
        Self::over(opts, &|o| {
            Arc::new(crate::compaction::leveled::LeveledPolicy::new(o))
        })
    }

    /// The policy for `opts` (`matrix_bytes > 0`), the levels under the container
    /// compacted by the policy `levels` makes for the options it is given.
    #[must_use]
    pub fn over(opts: &Options, levels: &dyn Fn(&Options) -> Arc<dyn CompactionPolicy>) -> Self {
        let deeper = Options {
            level0_compaction_trigger: usize::MAX / 4,
            level0_slowdown_trigger: usize::MAX / 4,
            level0_stop_trigger: usize::MAX / 4,
            ..opts.clone()
        };
        let capacity = opts.matrix_bytes.max(1);
        // A memtable's row: its bytes plus a quarter for the key array and block trailers.
        let row_bytes = opts.write_buffer_size as u64 / 4 * 5;
        let of = |f: f64| (capacity as f64 * f) as u64;
        // Writers never stop before a switch is due: at the stop, a column can always run.
        // No row's room is held back below the stop: a memtable whose row does not fit
        // waits for a column as a memtable (`flush_waits_for_compaction`), and the column
        // goes first from then on (`pick`), so writers go on into the memtables meanwhile.
        // A reserve of one row stopped writers at three rows of a four-row container, the
        // moment a column came due, for as long as the compaction ahead of it ran (stops
        // of 80-150 ms at 5,000 writes a second in the papers' open-loop YCSB-A).
        let switch_at = of(opts.matrix_switch_fraction).max(1);
        let stop_at = of(STOP_FRACTION).max(switch_at);
        let slowdown_at = of(SLOWDOWN_FRACTION).max(switch_at).min(stop_at);
        Self {
            plain: levels(opts),
            deeper: levels(&deeper),
            capacity,
            switch_at,
            row_bytes,
            slowdown_at,
            stop_at,
        }
    }

    /// The live bytes of the matrix rows in L0.
    fn row_bytes_of(version: &Version) -> u64 {
        version
            .tables(0)
            .iter()
            .filter(|t| row_id(t).is_some())
            .map(|t| t.size)
            .sum()
    }

    /// Whether another memtable's row fits beside `rows` bytes of rows.
    fn row_fits(&self, rows: u64) -> bool {
        rows.saturating_add(self.row_bytes) <= self.capacity
    }

    /// Whether L0 is rows only (the matrix policy's own case).
    fn rows_only(version: &Version) -> bool {
        version.tables(0).iter().all(|t| row_id(t).is_some())
    }

    /// The leveled policy that applies to `version`.
    fn leveled(&self, version: &Version) -> &dyn CompactionPolicy {
        if Self::rows_only(version) {
            self.deeper.as_ref()
        } else {
            self.plain.as_ref()
        }
    }

    /// The column compaction the container needs, if any.
    fn column_plan(&self, version: &Version) -> Option<CompactionPlan> {
        let rows = version.tables(0);
        if rows.is_empty() || !Self::rows_only(version) {
            return None;
        }
        let compactor: Vec<Arc<TableMeta>> = rows
            .iter()
            .filter(|t| row_id(t).is_some_and(|r| r <= version.matrix_compactor))
            .cloned()
            .collect();
        let bytes: u64 = rows.iter().map(|t| t.size).sum();
        let inputs = if !compactor.is_empty() {
            compactor
        } else if bytes >= self.switch_at {
            rows.to_vec()
        } else {
            return None;
        };
        let order = &version.order;
        let lo = inputs
            .iter()
            .map(|t| t.smallest_user_key())
            .min_by(|a, b| order.compare_user(a, b))?
            .to_vec();
        let hi = inputs
            .iter()
            .map(|t| t.largest_user_key())
            .max_by(|a, b| order.compare_user(a, b))?
            .to_vec();
        let next_inputs = version.overlapping(1, Some(&lo), Some(&hi));
        let grandparents = version.overlapping(2, Some(&lo), Some(&hi));
        Some(CompactionPlan {
            level: 0,
            output_level: 1,
            inputs,
            next_inputs,
            grandparents,
            trivial_move: false,
            score: bytes as f64 / self.switch_at as f64,
            reason: CompactionReason::Column,
        })
    }
}

/// A plan that would move a row out of L0 whole becomes a merge (rows stay in the
/// container).
fn no_row_moves(mut plan: CompactionPlan) -> CompactionPlan {
    if plan.trivial_move && plan.inputs.iter().any(|t| row_id(t).is_some()) {
        plan.trivial_move = false;
    }
    plan
}

impl CompactionPolicy for MatrixPolicy {
    fn pick(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan> {
        let leveled = || {
            self.leveled(version)
                .pick(version, claims)
                .map(no_row_moves)
        };
        let Some(column) = self
            .column_plan(version)
            .filter(|plan| !claims.conflicts(plan))
        else {
            return leveled();
        };
        // While the container has room (below the slowdown), a level over its target goes
        // first. A column merges its rows with every L1 table in its key range, so an L1
        // that only columns ever wrote (columns back to back, the next switch due before
        // a sweep ends) grew to the whole database and made each column rewrite several
        // times its rows' bytes: 27.8 GB of L1 writes for 4.1 GB of rows in the papers'
        // 4 KiB fill, against 2.3 GB for all of L2.
        // A flush whose row does not fit waits for the column: it goes first too.
        let rows = Self::row_bytes_of(version);
        if rows < self.slowdown_at
            && self.row_fits(rows)
            && let Some(plan) = leveled()
        {
            return Some(plan);
        }
        Some(column)
    }

    fn manual(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan> {
        self.plain.manual(version, level, begin, end)
    }

    fn manual_in_place(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan> {
        self.plain.manual_in_place(version, level, begin, end)
    }

    fn pending_bytes(&self, version: &Version) -> u64 {
        self.leveled(version).pending_bytes(version)
    }

    /// A flush waits for a column while the rows leave no room for another row.
    fn flush_waits_for_compaction(&self, version: &Version) -> bool {
        Self::rows_only(version) && !self.row_fits(Self::row_bytes_of(version))
    }

    fn write_pressure(&self, version: &Version, pending: u64) -> WritePressure {
        let base = self.leveled(version).write_pressure(version, pending);
        // With an SST in L0 the plain leveled policy decides alone: no column can run, so
        // a stop on the container's bytes would wait for nothing.
        if matches!(base, WritePressure::Stop(_)) || !Self::rows_only(version) {
            return base;
        }
        let rows = Self::row_bytes_of(version);
        if rows >= self.stop_at {
            return WritePressure::Stop(StallCause::L0);
        }
        if rows >= self.slowdown_at {
            let p =
                (rows - self.slowdown_at) as f64 / (self.stop_at - self.slowdown_at).max(1) as f64;
            return match base {
                WritePressure::Slowdown { progress, .. } if progress > p => base,
                _ => WritePressure::Slowdown {
                    cause: StallCause::L0,
                    progress: p,
                },
            };
        }
        base
    }
}

/// Entries held in DRAM, as an iterator (a column's fetched share of one row).
struct VecIter {
    items: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    order: KeyOrder,
}

impl InternalIterator<Error> for VecIter {
    fn valid(&self) -> bool {
        self.pos < self.items.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self.items.len().saturating_sub(1);
        if self.items.is_empty() {
            self.pos = 0;
        }
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self.items.partition_point(|(k, _)| {
            self.order.compare_internal(k, target) == std::cmp::Ordering::Less
        });
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let p = self.items.partition_point(|(k, _)| {
            self.order.compare_internal(k, target) != std::cmp::Ordering::Greater
        });
        self.pos = if p == 0 { self.items.len() } else { p - 1 };
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = if self.pos == 0 {
            self.items.len()
        } else {
            self.pos - 1
        };
    }
    fn key(&self) -> &[u8] {
        &self.items[self.pos].0
    }
    fn value(&self) -> &[u8] {
        &self.items[self.pos].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// A row's iterator cut after the last entry whose user key is <= `end` (forward only: a
/// compaction input).
struct UpTo {
    inner: Box<dyn InternalIterator<Error>>,
    end: Vec<u8>,
    order: KeyOrder,
}

impl UpTo {
    fn in_range(&self) -> bool {
        self.inner.valid()
            && self
                .order
                .compare_user(user_key(self.inner.key()), &self.end)
                .is_le()
    }
}

impl InternalIterator<Error> for UpTo {
    fn valid(&self) -> bool {
        self.in_range()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        let target =
            mezz_format::ikey::make_internal_key(&self.end, 0, mezz_format::ValueKind::Deletion);
        self.inner.seek_for_prev(&target);
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
        self.inner.status()
    }
}

/// Reads a row's entries with user keys <= `end` into DRAM.
fn fetch(
    t: &Arc<dyn Table>,
    end: &[u8],
    opts: &TableReadOptions,
    order: &KeyOrder,
) -> Result<VecIter> {
    let mut it = UpTo {
        inner: t.iter(opts),
        end: end.to_vec(),
        order: order.clone(),
    };
    it.seek_to_first();
    let mut items = Vec::new();
    while it.valid() {
        items.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    Ok(VecIter {
        items,
        pos: 0,
        order: order.clone(),
    })
}

/// A column holds at most this share of the container: the paper's columns (320-640 MiB)
/// are 4-8 % of its 8 GiB container, so that pages come back while the receiver fills; a
/// column as large as the container frees nothing until it ends, and writers stop meanwhile.
const MAX_COLUMN_SHARE: u64 = 8;

/// The column bounds for `opts`: `af · target_file_size / 2` to `af · target_file_size`,
/// `af` the level size multiplier, with the upper bound at most 1/8 of the container
/// (`matrix_bytes`).
#[must_use]
pub fn column_bounds(opts: &Options) -> ColumnBounds {
    let paper = ColumnBounds::from_sst_size(
        opts.max_bytes_for_level_multiplier.round() as u64,
        opts.target_file_size,
    );
    if opts.matrix_bytes == 0 {
        return paper;
    }
    ColumnBounds::up_to(
        paper
            .upper
            .min((opts.matrix_bytes / MAX_COLUMN_SHARE).max(1)),
    )
}

/// The threads that fetch a column for option `column_threads` on a machine of `cores`:
/// `0` is one per two cores. On emulated NVM (DRAM) the fetch is one more copy: a fill of
/// 500 K x 4 KiB values ran at 42-46 K ops/s with two fetch threads on 2 cores and at 51-52 K
/// with the entries streamed from the rows; a fetch pays where NVM reads are slow and cores
/// are free, as on the paper's machine.
fn fetch_threads(column_threads: usize, cores: usize) -> usize {
    match column_threads {
        0 => (cores / 2).max(1),
        n => n,
    }
}

/// The executor's merge of a column: the plan, its input iterator, and the bytes the column
/// takes from the rows; returns the result to install.
pub(crate) type ColumnMerge<'a> =
    dyn Fn(&CompactionPlan, &mut dyn InternalIterator<Error>, u64) -> Result<CompactionResult> + 'a;

/// Runs one column compaction of `plan` (reason [`CompactionReason::Column`]): see the
/// module documentation. `merge` is the executor's merge of an input iterator into output
/// tables for a plan, given the bytes the column takes from the rows.
///
/// # Errors
/// Corruption / I/O errors from the rows, L1 or the outputs.
pub(crate) fn run_column(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
    merge: &ColumnMerge<'_>,
) -> Result<CompactionResult> {
    let ropts = TableReadOptions {
        fill_cache: false,
        verify_checksums: ctx.opts.paranoid_checks,
        whole_table_scan: true,
    };
    let open = |t: &Arc<TableMeta>| -> Result<Arc<dyn Table>> {
        ctx.table_cache
            .open(t)
            .map_err(|e| e.in_file(ctx.storage.describe(t)))
    };
    let tables: Vec<Arc<dyn Table>> = plan.inputs.iter().map(open).collect::<Result<_>>()?;
    let rows: Vec<&RowHandle> = tables
        .iter()
        .map(|t| {
            t.as_any().downcast_ref::<RowHandle>().ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "column compaction input {} is not a matrix row",
                    t.meta().id
                ))
            })
        })
        .collect::<Result<_>>()?;
    // Per row: its data blocks keyed by their largest user key, plus its first live key
    // (no bytes), so that the column starts at the rows' true smallest key and takes every
    // L1 table from there.
    let sizes: Vec<RowKeySizes> = rows
        .iter()
        .map(|r| {
            let mut items = r.row().block_summary(r.consumed())?;
            items.push((r.meta().smallest_user_key().to_vec(), 0));
            Ok(RowKeySizes::new(items, &version.order))
        })
        .collect::<Result<_>>()?;
    let l1: Vec<Arc<TableMeta>> = plan.next_inputs.clone();
    let Some(col) = plan_column(
        &sizes,
        &l1,
        &ColumnCursor::Start,
        column_bounds(ctx.opts),
        &version.order,
    ) else {
        return Err(Error::InvalidArgument(
            "column compaction of rows without live data".into(),
        ));
    };
    // The inputs of this column: every compactor row (up to `end`), the L1 tables in it.
    let narrowed = CompactionPlan {
        next_inputs: col.l1_inputs.clone(),
        grandparents: version.overlapping(2, Some(&col.start), Some(&col.end)),
        ..plan.clone()
    };
    let threads = fetch_threads(
        ctx.opts.column_threads,
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
    )
    .clamp(1, tables.len().max(1));
    let mut children: Vec<Box<dyn InternalIterator<Error>>> = Vec::new();
    if col.row_bytes <= MAX_FETCH_BYTES && threads > 1 {
        // Fetch the rows' share of the column in parallel, `threads` rows at a time.
        let fetched: Vec<Result<VecIter>> = std::thread::scope(|s| {
            let chunks: Vec<_> = tables
                .chunks(tables.len().div_ceil(threads))
                .map(|chunk| {
                    let end = &col.end;
                    let ropts = &ropts;
                    let order = &version.order;
                    s.spawn(move || {
                        chunk
                            .iter()
                            .map(|t| fetch(t, end, ropts, order))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            chunks
                .into_iter()
                .flat_map(|h| {
                    h.join().unwrap_or_else(|_| {
                        vec![Err(Error::InvalidArgument(
                            "a column fetch thread panicked".into(),
                        ))]
                    })
                })
                .collect()
        });
        for f in fetched {
            children.push(Box::new(f?));
        }
    } else {
        for t in &tables {
            children.push(Box::new(UpTo {
                inner: t.iter(&ropts),
                end: col.end.clone(),
                order: version.order.clone(),
            }));
        }
    }
    for run in version.runs_of(1, &narrowed.next_inputs) {
        children.push(crate::iter::run_iterator(run, ctx.table_cache, ropts)?);
    }
    let mut iter = crate::iter::merging_iterator(children, &version.order);
    let mut result = merge(&narrowed, iter.as_mut(), col.row_bytes)?;
    result.bytes_read = col.total_bytes();
    // Replace each row's table with one over its remaining entries (none once drained).
    for r in &rows {
        let mut stats = mezz_nvtable::matrix::SearchStats::default();
        let consumed = r.row().user_key_end(&col.end, r.consumed(), &mut stats)?;
        let space = match r.meta().location {
            TableLocation::Row { space, .. } => space,
            _ => continue,
        };
        if let Some(meta) =
            crate::storage::matrix::row_meta((ctx.new_file_number)(), space, r.row(), consumed)?
        {
            result.edit.new_tables.push((0, meta));
        }
    }
    // The first column of a sweep makes its rows the compactor.
    let newest = plan
        .inputs
        .iter()
        .filter_map(|t| row_id(t))
        .max()
        .unwrap_or(0);
    if newest > version.matrix_compactor {
        result.edit.matrix_compactor = Some(newest);
    }
    result.edit.compact_pointers.clear();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::VersionEdit;
    use crate::version::tests::meta;

    fn row(id: u64, size: u64) -> TableMeta {
        TableMeta {
            location: TableLocation::Row {
                space: 1,
                row: id,
                header_page: 0,
                consumed: 0,
            },
            ..meta(id, "a", "z", (id * 10, id * 10 + 9), size)
        }
    }

    /// A version holding `tables` (level, table).
    fn version_of(tables: impl IntoIterator<Item = (usize, TableMeta)>) -> Version {
        Version::new(7)
            .apply(&VersionEdit {
                new_tables: tables.into_iter().collect(),
                ..VersionEdit::default()
            })
            .unwrap()
    }

    #[test]
    fn fetch_threads_default_to_one_per_two_cores() {
        assert_eq!(fetch_threads(0, 1), 1);
        assert_eq!(fetch_threads(0, 2), 1);
        assert_eq!(fetch_threads(0, 32), 16);
        assert_eq!(fetch_threads(3, 2), 3);
    }

    /// Columns follow the paper's `af · target_file_size` until that passes 1/8 of the
    /// container.
    #[test]
    fn columns_are_a_fraction_of_the_container() {
        let opts = |tfs: u64, matrix: u64| Options {
            target_file_size: tfs,
            matrix_bytes: matrix,
            max_bytes_for_level_multiplier: 10.0,
            ..Options::default()
        };
        let b = column_bounds(&opts(4 << 20, 512 << 20));
        assert_eq!((b.lower, b.upper), (20 << 20, 40 << 20));
        let b = column_bounds(&opts(64 << 20, 512 << 20));
        assert_eq!((b.lower, b.upper), (32 << 20, 64 << 20));
        let b = column_bounds(&opts(64 << 20, 8 << 30));
        assert_eq!((b.lower, b.upper), (320 << 20, 640 << 20));
    }

    /// Regression (soak): the stop threshold was rounded down below the switch point, so
    /// writers stopped while no column was due and nothing ever woke them. Wherever writers
    /// stop, a column must be due.
    #[test]
    fn writers_never_stop_without_a_column_due() {
        for (wbs, n_mem, cap_mul, frac) in [
            (8 << 10, 6usize, 8u64, 0.6),
            (8 << 10, 2, 8, 0.6),
            (64 << 20, 2, 8, 0.6),
            (256 << 10, 4, 8, 0.95),
            (4 << 10, 8, 16, 0.05),
        ] {
            let opts = Options {
                write_buffer_size: wbs,
                max_write_buffer_number: n_mem,
                matrix_bytes: cap_mul * wbs as u64,
                matrix_switch_fraction: frac,
                ..Options::default()
            };
            let p = MatrixPolicy::new(&opts);
            // Rows up to the stop, in steps of a hundredth of the container.
            let step = (opts.matrix_bytes / 100).max(1);
            let mut sizes = Vec::new();
            loop {
                sizes.push(step);
                let v = version_of((0..sizes.len() as u64).map(|i| (0, row(i + 1, step))));
                if let WritePressure::Stop(_) = p.write_pressure(&v, 0) {
                    assert!(
                        p.pick(&v, &Claims::new()).is_some(),
                        "stopped with no column due: {wbs} {n_mem} {cap_mul} {frac}"
                    );
                    break;
                }
                assert!(sizes.len() < 200, "never stopped");
            }
        }
    }

    /// With room in the container, an L1 over its target is compacted into L2 before the
    /// next column; once the rows reach the slowdown, the column goes first.
    #[test]
    fn an_oversized_l1_goes_first_while_the_container_has_room() {
        let opts = Options {
            write_buffer_size: 1 << 20,
            matrix_bytes: 100 << 20,
            max_bytes_for_level_base: 10 << 20,
            ..Options::default()
        };
        let p = MatrixPolicy::new(&opts);
        let version = |rows: u64| {
            let mut new_tables: Vec<(usize, TableMeta)> =
                (1..=rows).map(|i| (0, row(i, 10 << 20))).collect();
            // L1: 40 MiB in four tables, four times its target.
            for (i, (lo, hi)) in [("a", "f"), ("g", "l"), ("m", "r"), ("s", "z")]
                .into_iter()
                .enumerate()
            {
                let id = 100 + i as u64;
                new_tables.push((1, meta(id, lo, hi, (id, id), 10 << 20)));
            }
            version_of(new_tables)
        };
        // 70 MiB of rows: past the switch (60 %), below the slowdown (85 %).
        let plan = p.pick(&version(7), &Claims::new()).unwrap();
        assert_eq!((plan.level, plan.reason), (1, CompactionReason::LevelSize));
        // 90 MiB: the column first.
        let plan = p.pick(&version(9), &Claims::new()).unwrap();
        assert_eq!((plan.level, plan.reason), (0, CompactionReason::Column));
    }

    /// A container of four memtables' rows holding three: writers go on (the fourth
    /// memtable fills while a column runs), the flush of the fourth row waits for that
    /// column, and the column goes ahead of an oversized L1.
    #[test]
    fn a_row_without_room_waits_for_the_column_while_writers_go_on() {
        let opts = Options {
            write_buffer_size: 16 << 20,
            matrix_bytes: 64 << 20,
            max_bytes_for_level_base: 10 << 20,
            ..Options::default()
        };
        let p = MatrixPolicy::new(&opts);
        let l1 = (1, meta(100, "a", "z", (100, 100), 40 << 20));
        let v = version_of((1..=3).map(|i| (0, row(i, 17 << 20))).chain([l1]));
        assert!(
            !matches!(p.write_pressure(&v, 0), WritePressure::Stop(_)),
            "writers stopped with three rows of four"
        );
        assert!(p.flush_waits_for_compaction(&v));
        let plan = p.pick(&v, &Claims::new()).unwrap();
        assert_eq!((plan.level, plan.reason), (0, CompactionReason::Column));
    }
}
