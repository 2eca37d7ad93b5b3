//! Matrix rows (MatrixKV's L0) behind the [`Table`] trait.
//!
//! Owns: [`RowHandle`], one row of the matrix container with its consumed prefix, opened
//! from a [`TableMeta`] whose location is `TableLocation::Row`, and [`RowHint`], the
//! cross-row hint a point read carries from a row to the next older one. The persistent
//! row, and every byte access to it, is `mezz_nvtable::matrix`; format in
//! `docs/formats/matrix-row.md`.
//!
//! Invariants: only entries `[consumed, n)` are ever read; every key-array entry and data
//! block read is checked against its checksum, so a damaged entry is a `Corruption` error
//! naming the pool, never a value. A hint narrows the search of a row only when it came
//! from the row the hints were built over (`prev_row_id`, `prev_entry_count` match).
//!
//! Thread-safety: `RowHandle` is `Send + Sync`; iterators are single-owner.

use std::path::PathBuf;
use std::sync::Arc;

use mezz_format::ikey::ValueKind;
use mezz_format::{InternalIterator, SeqNo};
use mezz_nvtable::matrix::{HintWindow, NO_PREV_ROW, RowIter, RowTable, SearchStats};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::pinned::PinnedLookup;
use crate::storage::matrix::MatrixSpace;
pub use crate::storage::matrix::RowSearchCounters;
use crate::storage::nvm::POOL_FILE;
use crate::table::{
    ChainHint, InFileIter, LookupResult, Table, TableLocation, TableMeta, TableReadOptions,
};

/// A [`ChainHint`] between matrix rows: what a point read learned in a newer row about
/// where to look in the row its hints point into (the hint's `table` is that row's id).
pub type RowHint = ChainHint;

impl RowHint {
    /// The hint for the row older than `row`, from the target's lower bound `pos` in
    /// `row` (live from `consumed`); none when `row` was built without hints.
    ///
    /// # Errors
    /// `Corruption` from a damaged key-array entry.
    fn toward_older(row: &RowTable, pos: u32, consumed: u32) -> mezz_format::Result<Option<Self>> {
        if row.prev_row_id() == NO_PREV_ROW {
            return Ok(None);
        }
        let window = row.next_window(pos, consumed)?;
        Ok(Some(ChainHint {
            table: row.prev_row_id(),
            entries: row.header().prev_entry_count,
            lo: window.lo,
            hi: window.hi,
        }))
    }

    /// The window to search in `row`, if this hint was built over it.
    fn window_in(&self, row: &RowTable) -> Option<HintWindow> {
        (self.table == row.id() && self.entries == row.num_entries()).then_some(HintWindow {
            lo: self.lo,
            hi: self.hi,
        })
    }
}

/// The hint a seek carries from a row to the next older one, shared by the row cursors of
/// one database iterator. A merging iterator seeks its children newest first, so each row's
/// seek finds here the window its newer neighbour left for it; a window is used only for
/// the same target and the row it was built over, so any other order only costs the hint.
#[derive(Debug, Default)]
pub struct SeekChain {
    last: Mutex<ChainLink>,
}

#[derive(Debug, Default)]
struct ChainLink {
    target: Vec<u8>,
    hint: Option<RowHint>,
}

impl SeekChain {
    /// The window left for `row` by the seek of `target` in the newer row, if that is what
    /// the last seek left.
    fn take(&self, target: &[u8], row: &RowTable) -> Option<HintWindow> {
        let mut l = self.last.lock();
        let h = l.hint.take()?;
        h.window_in(row).filter(|_| l.target == target)
    }

    /// Leaves `hint` for the seek of `target` in the next older row.
    fn leave(&self, target: &[u8], hint: Option<RowHint>) {
        let mut l = self.last.lock();
        if hint.is_some() {
            l.target.clear();
            l.target.extend_from_slice(target);
        }
        l.hint = hint;
    }
}

/// An open matrix row. See the module documentation.
#[derive(Debug)]
pub struct RowHandle {
    meta: TableMeta,
    row: Arc<RowTable>,
    consumed: u32,
    hints: bool,
    counters: Arc<RowSearchCounters>,
    pool_path: PathBuf,
}

impl RowHandle {
    /// Opens the row `meta` describes in `space`; `hints` lets reads use cross-row hints.
    ///
    /// # Errors
    /// `Corruption` when the row is not in the container; `InvalidArgument` for a table
    /// that is not a row.
    pub fn open(
        space: &MatrixSpace,
        meta: &TableMeta,
        hints: bool,
        counters: Arc<RowSearchCounters>,
        pool_path: PathBuf,
    ) -> Result<RowHandle> {
        let TableLocation::Row {
            row,
            header_page,
            consumed,
            ..
        } = meta.location
        else {
            return Err(Error::InvalidArgument(format!(
                "table {} is not a matrix row",
                meta.id
            )));
        };
        let t = space
            .row(row, header_page)
            .map_err(|e| e.in_file(&pool_path))?;
        Ok(RowHandle {
            meta: meta.clone(),
            row: t,
            consumed,
            hints,
            counters,
            pool_path,
        })
    }

    /// The persistent row.
    #[must_use]
    pub fn row(&self) -> &Arc<RowTable> {
        &self.row
    }

    /// Entries `[0, consumed)` are gone.
    #[must_use]
    pub fn consumed(&self) -> u32 {
        self.consumed
    }

    /// A cursor over the live entries whose seeks narrow this row's search with the window
    /// the newer row left in `chain`, and leave one for the older row.
    #[must_use]
    pub fn chained_iter(&self, chain: &Arc<SeekChain>) -> Box<dyn InternalIterator<Error>> {
        Box::new(InFileIter::new(
            ChainedRowIter {
                inner: self.row.iter(self.consumed),
                row: Arc::clone(&self.row),
                consumed: self.consumed,
                hints: self.hints,
                chain: Arc::clone(chain),
                counters: Arc::clone(&self.counters),
                status: None,
            },
            self.pool_path.clone(),
        ))
    }

    fn lookup(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        hint: &mut Option<RowHint>,
    ) -> Result<Option<LookupResult>> {
        let window = hint
            .take()
            .filter(|_| self.hints)
            .and_then(|h| h.window_in(&self.row));
        let mut stats = SearchStats::default();
        let r = self
            .row
            .get(user_key, seq, self.consumed, window, &mut stats);
        self.counters.gets.count(window.is_some(), &stats);
        let r = r?;
        if let Some(f) = r.found {
            return Ok(Some(match f.kind {
                ValueKind::Value => LookupResult::Value(f.value),
                ValueKind::Deletion => LookupResult::Deleted,
            }));
        }
        if self.hints {
            *hint = RowHint::toward_older(&self.row, r.pos, self.consumed)?;
        }
        Ok(None)
    }
}

impl Table for RowHandle {
    fn meta(&self) -> &TableMeta {
        &self.meta
    }

    fn get(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        _opts: &TableReadOptions,
    ) -> Result<Option<LookupResult>> {
        self.lookup(user_key, seq, &mut None)
            .map_err(|e| e.in_file(&self.pool_path))
    }

    fn get_chained(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        _opts: &TableReadOptions,
        hint: &mut Option<RowHint>,
    ) -> Result<Option<PinnedLookup>> {
        Ok(self
            .lookup(user_key, seq, hint)
            .map_err(|e| e.in_file(&self.pool_path))?
            .map(Into::into))
    }

    fn iter(&self, _opts: &TableReadOptions) -> Box<dyn InternalIterator<Error>> {
        Box::new(InFileIter::new(
            self.row.iter(self.consumed),
            self.pool_path.clone(),
        ))
    }

    fn verify(&self) -> Result<u64> {
        self.row
            .verify(self.consumed)
            .map_err(|e| e.in_file(&self.pool_path).into())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A row cursor whose seeks are chained across the rows of one iterator (see [`SeekChain`]).
struct ChainedRowIter {
    inner: RowIter,
    row: Arc<RowTable>,
    consumed: u32,
    hints: bool,
    chain: Arc<SeekChain>,
    counters: Arc<RowSearchCounters>,
    /// An error reading the hints this row leaves (the cursor is then invalid).
    status: Option<mezz_format::Error>,
}

impl ChainedRowIter {
    fn chained_seek(&mut self, target: &[u8], backward: bool) {
        self.status = None;
        let window = if self.hints {
            self.chain.take(target, &self.row)
        } else {
            None
        };
        let mut stats = SearchStats::default();
        let pos = if backward {
            self.inner.seek_for_prev_within(target, window, &mut stats)
        } else {
            self.inner.seek_within(target, window, &mut stats)
        };
        self.counters.seeks.count(window.is_some(), &stats);
        let hint = match pos {
            Some(p) if self.hints => RowHint::toward_older(&self.row, p, self.consumed)
                .unwrap_or_else(|e| {
                    self.status = Some(e);
                    None
                }),
            _ => None,
        };
        self.chain.leave(target, hint);
    }
}

impl InternalIterator for ChainedRowIter {
    fn valid(&self) -> bool {
        self.status.is_none() && self.inner.valid()
    }

    fn seek_to_first(&mut self) {
        self.status = None;
        self.inner.seek_to_first();
    }

    fn seek_to_last(&mut self) {
        self.status = None;
        self.inner.seek_to_last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.chained_seek(target, false);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.chained_seek(target, true);
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

    fn status(&self) -> mezz_format::Result<()> {
        match &self.status {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }
}

/// The pool file's path for a database whose NVM tier lives in `dir`.
#[must_use]
pub fn pool_path(dir: &std::path::Path) -> PathBuf {
    dir.join(POOL_FILE)
}
