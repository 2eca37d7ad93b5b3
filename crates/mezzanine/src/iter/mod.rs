//! Iterators over the engine's sorted sources.
//!
//! Owns:
//! - [`merging_iterator`]: merges several [`InternalIterator`]s (memtables, L0 tables, one
//!   [`LevelIterator`] per deeper level) into one sorted stream, in both directions.
//! - [`read_run_iterator`]: a sorted run's iterator for a database iterator; the rows of the
//!   matrix L0 share one [`SeekChain`], so each row's seek is narrowed by the cross-row
//!   hints of the newer row (the merging iterator seeks its children newest first).
//! - [`LevelIterator`]: concatenates the non-overlapping, sorted tables of one level (L1+),
//!   opening each table lazily through the [`TableCache`].
//! - [`DbIterator`]: the user-facing iterator. It turns internal entries into user keys as
//!   of one sequence number: the newest version with `seq' <= seq` wins, deletions and
//!   older versions are hidden, and bounds (lower inclusive, upper exclusive) are applied
//!   in every direction.
//!
//! Invariants (the merging iterator): entries equal in internal key order (which the
//! engine never produces: sequence numbers are unique) are ordered by child index, the
//! lower index first, so a reverse scan is exactly the mirror of a forward scan. When the
//! iterator moves forward every child is positioned at its first entry after the current
//! one; when it moves backward every child is at its last entry before it; switching
//! direction re-seeks the other children (as LevelDB's `MergingIterator`).
//!
//! Invariants (`DbIterator`, as LevelDB's `DBIter`): moving forward, the inner iterator sits
//! on the entry being yielded; moving backward it sits just before every entry of the
//! current user key, whose key and value are then copied into the iterator.
//!
//! Errors are fail-stop: when a child fails, the merging iterator becomes invalid (rather
//! than continuing without that child, which could surface older versions of its keys) and
//! `status()` reports the first child error (`DbIterator::status()` reports it too). A level
//! iterator likewise stops at the first table that cannot be opened or read. Every iterator
//! here is an `InternalIterator<Error>` of the engine's error, so an error only the engine
//! has (`Closed`) passes through unchanged; a table's own iterator (format crate) comes in
//! through `table::InFileIter`, which converts its errors.
//!
//! Submodule `range`: [`Iter`], the `std::iter` adapter (ranges, prefixes, both ends)
//! over two `DbIterator` cursors.
//!
//! Thread-safety: iterators are `Send` and used by one thread at a time.

pub mod range;

pub use range::{Iter, KvPair};

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use mezz_format::ikey::{self, MAX_SEQ, parse_internal_key};
use mezz_format::{InternalIterator, KeyOrder, SeqNo, ValueKind};

use crate::error::{Error, Result};
use crate::gate::Gate;
use crate::table::cache::TableCache;
use crate::table::row::SeekChain;
use crate::table::{TableMeta, TableReadOptions};
use crate::version::SortedRun;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

// ---------------------------------------------------------------------------------------
// Merging iterator
// ---------------------------------------------------------------------------------------

/// An iterator over one sorted run of a version: the table's own iterator for a run of one
/// table (opened now), a [`LevelIterator`] (opening tables lazily) for a level.
///
/// # Errors
/// Opening the table of a one-table run, naming its file.
pub fn run_iterator(
    run: SortedRun<'_>,
    cache: &Arc<TableCache>,
    opts: TableReadOptions,
) -> Result<Box<dyn InternalIterator<Error>>> {
    match run {
        SortedRun::Table(t) => Ok(open_table(cache, t)?.iter(&opts)),
        SortedRun::Level(ts) => Ok(Box::new(LevelIterator::new(
            ts.to_vec(),
            Arc::clone(cache),
            opts,
        ))),
    }
}

/// As [`run_iterator`], for a database iterator: a matrix row's cursor chains its seeks
/// with the other rows of the same iterator through `chain` (cross-row hints).
///
/// # Errors
/// As [`run_iterator`].
pub fn read_run_iterator(
    run: SortedRun<'_>,
    cache: &Arc<TableCache>,
    opts: TableReadOptions,
    chain: &Arc<SeekChain>,
) -> Result<Box<dyn InternalIterator<Error>>> {
    if let SortedRun::Table(t) = run {
        let table = open_table(cache, t)?;
        if let Some(row) = table
            .as_any()
            .downcast_ref::<crate::table::row::RowHandle>()
        {
            return Ok(row.chained_iter(chain));
        }
        return Ok(table.iter(&opts));
    }
    run_iterator(run, cache, opts)
}

/// Opens `t` through the table cache; an error names its file.
fn open_table(cache: &TableCache, t: &TableMeta) -> Result<Arc<dyn crate::table::Table>> {
    cache
        .open(t)
        .map_err(|e| e.in_file(cache.storage().describe(t)))
}

/// Merges `children` (each sorted by internal key under `order`) into one sorted iterator.
/// With no child it is always invalid; with one it behaves as that child.
#[must_use]
pub fn merging_iterator(
    children: Vec<Box<dyn InternalIterator<Error>>>,
    order: &KeyOrder,
) -> Box<dyn InternalIterator<Error>> {
    Box::new(MergingIterator {
        heap: Vec::with_capacity(children.len()),
        children,
        direction: Direction::Forward,
        scratch: Vec::new(),
        order: order.clone(),
    })
}

/// A binary heap of child indices: a min-heap by (key, index) moving forward, a max-heap
/// moving backward. The top (`heap[0]`) is the current child.
struct MergingIterator {
    children: Vec<Box<dyn InternalIterator<Error>>>,
    heap: Vec<usize>,
    direction: Direction,
    /// The current key, copied while the other children are re-seeked.
    scratch: Vec<u8>,
    order: KeyOrder,
}

impl fmt::Debug for MergingIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergingIterator")
            .field("children", &self.children.len())
            .field("live", &self.heap.len())
            .field("direction", &self.direction)
            .finish()
    }
}

impl MergingIterator {
    /// Whether child `a` comes before child `b` in the current direction's order.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        let (Some(ca), Some(cb)) = (self.children.get(a), self.children.get(b)) else {
            return false;
        };
        let o = self
            .order
            .compare_internal(ca.key(), cb.key())
            .then(a.cmp(&b));
        match self.direction {
            Direction::Forward => o == Ordering::Less,
            Direction::Reverse => o == Ordering::Greater,
        }
    }

    fn sift_down(&mut self, mut pos: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * pos + 1;
            if l >= n {
                return;
            }
            let r = l + 1;
            let (Some(&hl), Some(&hp)) = (self.heap.get(l), self.heap.get(pos)) else {
                return;
            };
            let mut best = l;
            let mut hb = hl;
            if let Some(&hr) = self.heap.get(r)
                && self.before(hr, hl)
            {
                best = r;
                hb = hr;
            }
            if !self.before(hb, hp) {
                return;
            }
            self.heap.swap(pos, best);
            pos = best;
        }
    }

    /// Rebuilds the heap from every valid child. If any child failed, the merge stops
    /// (empty heap): skipping a failed child could surface older versions of its keys.
    fn rebuild(&mut self) {
        self.heap.clear();
        for (i, c) in self.children.iter().enumerate() {
            if c.valid() {
                self.heap.push(i);
            } else if c.status().is_err() {
                self.heap.clear();
                return;
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// After the top child moved: restore the heap (dropping the child if exhausted).
    fn fix_top(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        if self.children.get(top).is_some_and(|c| c.valid()) {
            self.sift_down(0);
        } else if self.children.get(top).is_some_and(|c| c.status().is_err()) {
            // Fail-stop: never continue the merge past a failed child.
            self.heap.clear();
        } else {
            self.heap.swap_remove(0);
            self.sift_down(0);
        }
    }

    fn current(&self) -> Option<&dyn InternalIterator<Error>> {
        self.heap
            .first()
            .and_then(|&i| self.children.get(i))
            .map(|c| &**c)
    }

    /// Re-positions every child but the current one for a scan in direction `dir`.
    fn switch_direction(&mut self, dir: Direction) {
        let Some(&cur) = self.heap.first() else {
            return;
        };
        self.scratch.clear();
        if let Some(c) = self.children.get(cur) {
            self.scratch.extend_from_slice(c.key());
        }
        let key = &self.scratch;
        let order = &self.order;
        for (j, child) in self.children.iter_mut().enumerate() {
            if j == cur {
                continue;
            }
            match dir {
                Direction::Forward => {
                    // Children before `cur` must skip an entry equal to the current key.
                    child.seek(key);
                    if j < cur
                        && child.valid()
                        && order.compare_internal(child.key(), key) == Ordering::Equal
                    {
                        child.next();
                    }
                }
                Direction::Reverse => {
                    // Children after `cur` must skip an entry equal to the current key.
                    child.seek_for_prev(key);
                    if j > cur
                        && child.valid()
                        && order.compare_internal(child.key(), key) == Ordering::Equal
                    {
                        child.prev();
                    }
                }
            }
        }
        self.direction = dir;
        self.rebuild();
    }
}

impl InternalIterator<Error> for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.direction = Direction::Forward;
        self.rebuild();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.direction = Direction::Reverse;
        self.rebuild();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.direction = Direction::Forward;
        self.rebuild();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.direction = Direction::Reverse;
        self.rebuild();
    }

    fn next(&mut self) {
        if self.direction != Direction::Forward {
            self.switch_direction(Direction::Forward);
        }
        let Some(&top) = self.heap.first() else {
            return;
        };
        if let Some(c) = self.children.get_mut(top) {
            c.next();
        }
        self.fix_top();
    }

    fn prev(&mut self) {
        if self.direction != Direction::Reverse {
            self.switch_direction(Direction::Reverse);
        }
        let Some(&top) = self.heap.first() else {
            return;
        };
        if let Some(c) = self.children.get_mut(top) {
            c.prev();
        }
        self.fix_top();
    }

    fn key(&self) -> &[u8] {
        self.current().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current().map_or(&[], |c| c.value())
    }

    fn entry_ref(&self) -> Option<mezz_format::EntryRef> {
        self.current().and_then(|c| c.entry_ref())
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Level iterator
// ---------------------------------------------------------------------------------------

/// Iterates one level (L1+) whose tables are sorted and do not overlap, opening each
/// table through the table cache only when the iteration reaches it.
///
/// A table that cannot be opened (or whose iterator fails) stops the iteration: the
/// iterator becomes invalid and `status()` reports the error (sticky).
pub struct LevelIterator {
    tables: Vec<Arc<TableMeta>>,
    cache: Arc<TableCache>,
    opts: TableReadOptions,
    /// Index of the table `iter` belongs to (meaningless when `iter` is `None`).
    index: usize,
    iter: Option<Box<dyn InternalIterator<Error>>>,
    err: Option<Error>,
    /// The order of the tables' keys (the storage's).
    order: KeyOrder,
}

impl fmt::Debug for LevelIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LevelIterator")
            .field("tables", &self.tables.len())
            .field("index", &self.index)
            .field("open", &self.iter.is_some())
            .field("err", &self.err)
            .finish()
    }
}

impl LevelIterator {
    /// An unpositioned iterator over `tables`. REQUIRES: `tables` sorted by key and not
    /// overlapping (every table's `largest` < the next one's `smallest`).
    #[must_use]
    pub fn new(
        tables: Vec<Arc<TableMeta>>,
        cache: Arc<TableCache>,
        opts: TableReadOptions,
    ) -> Self {
        Self {
            tables,
            order: cache.storage().order().clone(),
            cache,
            opts,
            index: 0,
            iter: None,
            err: None,
        }
    }

    fn save_error(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Drops the current table iterator, keeping its error if it has one.
    fn close_current(&mut self) {
        if let Some(it) = self.iter.take()
            && let Err(e) = it.status()
        {
            self.save_error(e);
        }
    }

    /// Makes `iter` an (unpositioned) iterator over table `i`, reusing the open one.
    /// Leaves `iter` as `None` if the table cannot be opened.
    fn open(&mut self, i: usize) {
        if self.iter.is_some() && self.index == i {
            return;
        }
        self.close_current();
        self.index = i;
        let Some(meta) = self.tables.get(i) else {
            return;
        };
        match self.cache.open(meta) {
            Ok(t) => self.iter = Some(t.iter(&self.opts)),
            Err(e) => self.save_error(e),
        }
    }

    /// Moves forward through following tables until positioned or past the last one.
    fn skip_forward(&mut self) {
        while !self.iter.as_ref().is_some_and(|it| it.valid()) {
            if self.iter.as_ref().is_some_and(|it| it.status().is_err()) {
                self.close_current();
            }
            if self.err.is_some() {
                return;
            }
            let next = if self.iter.is_some() || self.index < self.tables.len() {
                self.index + 1
            } else {
                return;
            };
            self.close_current();
            if next >= self.tables.len() {
                self.index = self.tables.len();
                return;
            }
            self.open(next);
            if let Some(it) = self.iter.as_mut() {
                it.seek_to_first();
            }
        }
    }

    /// Moves backward through preceding tables until positioned or before the first one.
    fn skip_backward(&mut self) {
        while !self.iter.as_ref().is_some_and(|it| it.valid()) {
            self.close_current();
            if self.err.is_some() {
                return;
            }
            if self.index == 0 || self.index > self.tables.len() {
                self.index = self.tables.len();
                return;
            }
            let prev = self.index - 1;
            self.open(prev);
            if let Some(it) = self.iter.as_mut() {
                it.seek_to_last();
            }
        }
    }
}

impl InternalIterator<Error> for LevelIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.iter.as_ref().is_some_and(|it| it.valid())
    }

    fn seek_to_first(&mut self) {
        if self.tables.is_empty() {
            self.close_current();
            return;
        }
        self.open(0);
        if let Some(it) = self.iter.as_mut() {
            it.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        let Some(last) = self.tables.len().checked_sub(1) else {
            self.close_current();
            return;
        };
        self.open(last);
        if let Some(it) = self.iter.as_mut() {
            it.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let i = self
            .tables
            .partition_point(|t| self.order.compare_internal(&t.largest, target) == Ordering::Less);
        if i >= self.tables.len() {
            self.close_current();
            self.index = self.tables.len();
            return;
        }
        self.open(i);
        if let Some(it) = self.iter.as_mut() {
            it.seek(target);
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self.tables.partition_point(|t| {
            self.order.compare_internal(&t.smallest, target) != Ordering::Greater
        });
        let Some(i) = i.checked_sub(1) else {
            self.close_current();
            self.index = self.tables.len();
            return;
        };
        self.open(i);
        if let Some(it) = self.iter.as_mut() {
            it.seek_for_prev(target);
        }
        self.skip_backward();
    }

    fn next(&mut self) {
        if let Some(it) = self.iter.as_mut() {
            it.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(it) = self.iter.as_mut() {
            it.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.iter.as_ref().map_or(&[], |it| it.key())
    }

    fn value(&self) -> &[u8] {
        self.iter.as_ref().map_or(&[], |it| it.value())
    }

    fn entry_ref(&self) -> Option<mezz_format::EntryRef> {
        self.iter.as_ref().and_then(|it| it.entry_ref())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.duplicate());
        }
        self.iter.as_ref().map_or(Ok(()), |it| it.status())
    }
}

// ---------------------------------------------------------------------------------------
// DbIterator
// ---------------------------------------------------------------------------------------

/// The user-facing iterator: user keys, newest visible version at its snapshot, deletions
/// hidden, bounds applied. Starts unpositioned.
///
/// It keeps the memtables and tables it reads (its "pin") alive until dropped.
pub struct DbIterator {
    inner: Box<dyn InternalIterator<Error>>,
    seq: SeqNo,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    _pin: Box<dyn Any + Send + Sync>,
    direction: Direction,
    valid: bool,
    /// Moving backward: the current user key. Moving forward: the user key being skipped.
    saved_key: Vec<u8>,
    /// The order of user keys.
    order: KeyOrder,
    /// The lower bound excludes its key (a `Bound::Excluded` start under a comparator
    /// without a byte-level successor); otherwise it is inclusive.
    lower_excl: bool,
    /// The upper bound includes its key; otherwise it is exclusive.
    upper_incl: bool,
    /// Moving backward: the current value.
    saved_value: Vec<u8>,
    /// Scratch space for seek targets.
    target: Vec<u8>,
    /// An undecodable internal key met (the entry is skipped), or `Closed`.
    err: Option<Error>,
    /// The gate of the database that made the iterator: once the database is closing the
    /// iterator is invalid and its status `Closed` (what it reads may belong to another
    /// handle after a reopen).
    gate: Option<Arc<Gate>>,
    /// Whether each step holds a pass of the gate, so that `close` waits for it: when the
    /// iterator may read NVM, whose extents the next handle may reuse. Otherwise a step
    /// only reads memtables in DRAM and immutable files (a deleted one stays readable
    /// through its descriptor), and checking the flag is enough (a pass costs two atomic
    /// read-modify-writes per step).
    step_passes: bool,
}

impl fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbIterator")
            .field("seq", &self.seq)
            .field("lower", &self.lower)
            .field("upper", &self.upper)
            .field("direction", &self.direction)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl DbIterator {
    /// Wraps `inner` (usually a merging iterator over every source of one super version).
    /// Yields user keys whose newest version with sequence number <= `seq` is a value, with
    /// `lower <= key < upper`. `pin` is dropped with the iterator.
    #[must_use]
    pub(crate) fn new(
        inner: Box<dyn InternalIterator<Error>>,
        seq: SeqNo,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        pin: Box<dyn Any + Send + Sync>,
        order: KeyOrder,
    ) -> DbIterator {
        DbIterator {
            order,
            lower_excl: false,
            upper_incl: false,
            inner,
            seq: seq.min(MAX_SEQ),
            lower,
            upper,
            _pin: pin,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            target: Vec::new(),
            err: None,
            gate: None,
            step_passes: false,
        }
    }

    /// Makes the lower bound exclusive (`lower_excl`) and the upper bound inclusive
    /// (`upper_incl`), instead of inclusive and exclusive.
    #[must_use]
    pub(crate) fn with_bound_kinds(mut self, lower_excl: bool, upper_incl: bool) -> DbIterator {
        self.lower_excl = lower_excl;
        self.upper_incl = upper_incl;
        self
    }

    /// Ties the iterator to its database's gate; `step_passes`: every step holds a pass
    /// (see the fields).
    #[must_use]
    pub(crate) fn gated(mut self, gate: Arc<Gate>, step_passes: bool) -> DbIterator {
        self.gate = Some(gate);
        self.step_passes = step_passes;
        self
    }

    /// Whether the database that made the iterator is closing or closed.
    fn db_closed(&self) -> bool {
        self.gate.as_deref().is_some_and(Gate::is_closing)
    }

    /// Runs one step with a pass of the gate (so a close waits for it), or, once the
    /// database is closing, makes the iterator invalid with status `Closed`.
    fn step(&mut self, f: impl FnOnce(&mut DbIterator)) {
        if !self.step_passes {
            if self.db_closed() {
                self.stop(Error::Closed);
            } else {
                f(self);
            }
            return;
        }
        let gate = self.gate.take();
        match gate.as_deref().map(Gate::enter) {
            Some(Err(e)) => self.stop(e),
            pass => {
                f(self);
                drop(pass);
            }
        }
        self.gate = gate;
    }

    /// Makes the iterator invalid with status `e` (unless it has an error already).
    fn stop(&mut self, e: Error) {
        self.valid = false;
        self.saved_key.clear();
        self.saved_value.clear();
        self.err.get_or_insert(e);
    }

    /// Whether positioned at an entry (never once the database is closing).
    #[must_use]
    pub fn valid(&self) -> bool {
        self.valid && !self.db_closed()
    }

    fn above_upper(&self, user_key: &[u8]) -> bool {
        let incl = self.upper_incl;
        self.upper.as_deref().is_some_and(|u| {
            let o = self.order.compare_user(user_key, u);
            if incl { o.is_gt() } else { o.is_ge() }
        })
    }

    /// Whether `user_key` is before the lower bound.
    fn below_lower(&self, user_key: &[u8]) -> bool {
        let excl = self.lower_excl;
        self.lower.as_deref().is_some_and(|l| {
            let o = self.order.compare_user(user_key, l);
            if excl { o.is_le() } else { o.is_lt() }
        })
    }

    fn corrupt_key(err: &mut Option<Error>, key: &[u8]) {
        if err.is_none() {
            *err = Some(Error::corruption(
                0,
                format!("undecodable internal key {key:02x?} during iteration"),
            ));
        }
    }

    /// Positions the inner iterator at the first entry >= `(user_key, seq)` and yields.
    fn seek_forward_from(&mut self, user_key_opt: Option<&[u8]>) {
        self.direction = Direction::Forward;
        self.saved_key.clear();
        self.saved_value.clear();
        let start: Option<&[u8]> = match (user_key_opt, self.lower.as_deref()) {
            (Some(k), Some(l)) => Some(if self.order.compare_user(k, l).is_lt() {
                l
            } else {
                k
            }),
            (Some(k), None) => Some(k),
            (None, l) => l,
        };
        match start {
            Some(k) => {
                self.target.clear();
                ikey::append_internal_key(&mut self.target, k, self.seq, ValueKind::SEEK);
                self.inner.seek(&self.target);
            }
            None => self.inner.seek_to_first(),
        }
        self.find_next_user_entry(false);
    }

    /// First key (>= lower bound).
    pub fn seek_to_first(&mut self) {
        self.step(|it| it.seek_forward_from(None));
    }

    /// Last key (< upper bound).
    pub fn seek_to_last(&mut self) {
        self.step(DbIterator::seek_to_last_step);
    }

    fn seek_to_last_step(&mut self) {
        self.direction = Direction::Reverse;
        self.saved_key.clear();
        self.saved_value.clear();
        match self.upper.as_deref() {
            Some(u) => {
                // Exclusive: the smallest internal key of `u` (everything before it is
                // < `u`); inclusive: the largest (every version of `u` is <= it).
                self.target.clear();
                if self.upper_incl {
                    ikey::append_internal_key(&mut self.target, u, 0, ValueKind::Deletion);
                } else {
                    ikey::append_internal_key(&mut self.target, u, MAX_SEQ, ValueKind::SEEK);
                }
                self.inner.seek_for_prev(&self.target);
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// First key >= `key` (and >= the lower bound).
    pub fn seek(&mut self, key: &[u8]) {
        self.step(|it| it.seek_forward_from(Some(key)));
    }

    /// Last key <= `key` (and < the upper bound).
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.step(|it| it.seek_for_prev_step(key));
    }

    fn seek_for_prev_step(&mut self, key: &[u8]) {
        if self.above_upper(key) {
            self.seek_to_last_step();
            return;
        }
        self.direction = Direction::Reverse;
        self.saved_key.clear();
        self.saved_value.clear();
        // The largest internal key of `key`: every version of `key` is <= it.
        self.target.clear();
        ikey::append_internal_key(&mut self.target, key, 0, ValueKind::Deletion);
        self.inner.seek_for_prev(&self.target);
        self.find_prev_user_entry();
    }

    /// Next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        self.step(DbIterator::next_step);
    }

    fn next_step(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            // The inner iterator is just before the entries of the current key (or off the
            // front): step into them; `saved_key` already names the key to skip.
            self.direction = Direction::Forward;
            if self.inner.valid() {
                self.inner.next();
            } else {
                self.target.clear();
                ikey::append_internal_key(
                    &mut self.target,
                    &self.saved_key,
                    MAX_SEQ,
                    ValueKind::SEEK,
                );
                self.inner.seek(&self.target);
            }
        } else {
            // Skip the rest of the current key's versions.
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(ikey::user_key(self.inner.key()));
            self.inner.next();
        }
        self.find_next_user_entry(true);
    }

    /// Previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        self.step(DbIterator::prev_step);
    }

    fn prev_step(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // The inner iterator is on the current entry: move before every entry of the
            // current key (newer, invisible versions included).
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(ikey::user_key(self.inner.key()));
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    return;
                }
                if self
                    .order
                    .compare_user(ikey::user_key(self.inner.key()), &self.saved_key)
                    .is_lt()
                {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    /// Moving forward from the inner position, finds the first visible value (skipping
    /// versions of `saved_key` when `skipping`).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        while self.inner.valid() {
            let k = self.inner.key();
            match parse_internal_key(k) {
                None => Self::corrupt_key(&mut self.err, k),
                Some(p) => {
                    if self.above_upper(p.user_key) {
                        break;
                    }
                    if p.seq <= self.seq && !(self.lower_excl && self.below_lower(p.user_key)) {
                        match p.kind {
                            ValueKind::Deletion => {
                                // Hides every older version of this key.
                                self.saved_key.clear();
                                self.saved_key.extend_from_slice(p.user_key);
                                skipping = true;
                            }
                            ValueKind::Value => {
                                if !(skipping
                                    && self.order.compare_user(p.user_key, &self.saved_key).is_le())
                                {
                                    self.valid = true;
                                    self.saved_key.clear();
                                    return;
                                }
                            }
                        }
                    }
                }
            }
            self.inner.next();
        }
        self.valid = false;
        self.saved_key.clear();
    }

    /// Moving backward from the inner position, finds the previous user key whose newest
    /// visible version is a value; leaves the inner iterator just before its entries.
    fn find_prev_user_entry(&mut self) {
        let mut kind = ValueKind::Deletion;
        while self.inner.valid() {
            let k = self.inner.key();
            match parse_internal_key(k) {
                None => Self::corrupt_key(&mut self.err, k),
                Some(p) => {
                    if self.below_lower(p.user_key) {
                        break;
                    }
                    let in_range = !self.above_upper(p.user_key);
                    if in_range && p.seq <= self.seq {
                        if kind != ValueKind::Deletion
                            && self.order.compare_user(p.user_key, &self.saved_key).is_lt()
                        {
                            // A visible value of a previous key: the saved key is complete.
                            break;
                        }
                        kind = p.kind;
                        self.saved_key.clear();
                        self.saved_value.clear();
                        if kind == ValueKind::Value {
                            self.saved_key.extend_from_slice(p.user_key);
                            self.saved_value.extend_from_slice(self.inner.value());
                        }
                    }
                }
            }
            self.inner.prev();
        }
        if kind == ValueKind::Deletion {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.direction = Direction::Forward;
        } else {
            self.valid = true;
        }
    }

    /// Current user key. REQUIRES: `valid()`. The slice is valid until the next step, and
    /// not after the database is closed (empty from then on).
    #[must_use]
    pub fn key(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        match self.direction {
            Direction::Forward => ikey::user_key(self.inner.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// Current value. REQUIRES: `valid()`. Valid as long as [`DbIterator::key`]'s slice.
    #[must_use]
    pub fn value(&self) -> &[u8] {
        if !self.valid() {
            return &[];
        }
        match self.direction {
            Direction::Forward => self.inner.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// The current key and value, or `None` when not positioned, also when a close began
    /// (on another thread) while they were read: they are empty then, not an entry.
    /// Valid as long as [`DbIterator::key`]'s slice.
    #[must_use]
    pub fn current(&self) -> Option<(&[u8], &[u8])> {
        let entry = (self.key(), self.value());
        self.valid().then_some(entry)
    }

    /// The first error met, if any.
    ///
    /// # Errors
    /// `Corruption` or `Io` from the tables read.
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.duplicate());
        }
        if self.db_closed() {
            return Err(Error::Closed);
        }
        self.inner.status()
    }

    /// Every (key, value) from the first key to the end, in order.
    ///
    /// # Errors
    /// The first error met while iterating.
    pub fn collect_all(mut self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        self.seek_to_first();
        while self.valid() {
            out.push((self.key().to_vec(), self.value().to_vec()));
            self.next();
        }
        self.status()?;
        Ok(out)
    }
}

/// Checks shared by the iterator tests of this crate: an `InternalIterator` against the
/// sorted entries it must produce.
#[cfg(test)]
pub(crate) mod testing {
    use std::cmp::Ordering;

    use mezz_format::SeqNo;
    use mezz_format::ikey::{ValueKind, compare_internal_keys, make_internal_key};
    use rand::RngExt;
    use rand::rngs::StdRng;

    use super::{Error, InternalIterator};

    /// A full forward scan and a full backward scan both yield exactly `all`.
    pub(crate) fn assert_scans(it: &mut dyn InternalIterator<Error>, all: &[(Vec<u8>, Vec<u8>)]) {
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        assert_eq!(got, all);
        it.seek_to_last();
        got.clear();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        got.reverse();
        assert_eq!(got, all);
    }

    /// `steps` random moves (seek_to_first/last, seek and seek_for_prev to targets drawn
    /// by `target` as (user key, sequence), next, prev), each checked against the position
    /// the same move has in `all`; no error at the end.
    pub(crate) fn assert_random_walk(
        it: &mut dyn InternalIterator<Error>,
        all: &[(Vec<u8>, Vec<u8>)],
        rng: &mut StdRng,
        steps: usize,
        mut target: impl FnMut(&mut StdRng) -> (Vec<u8>, SeqNo),
    ) {
        let mut pos: Option<usize> = None;
        for _ in 0..steps {
            match rng.random_range(0..10) {
                0 => {
                    it.seek_to_first();
                    pos = (!all.is_empty()).then_some(0);
                }
                1 => {
                    it.seek_to_last();
                    pos = all.len().checked_sub(1);
                }
                2 | 3 => {
                    let (uk, seq) = target(rng);
                    let t = make_internal_key(&uk, seq, ValueKind::SEEK);
                    it.seek(&t);
                    let i =
                        all.partition_point(|e| compare_internal_keys(&e.0, &t) == Ordering::Less);
                    pos = (i < all.len()).then_some(i);
                }
                4 | 5 => {
                    let (uk, seq) = target(rng);
                    let t = make_internal_key(&uk, seq, ValueKind::Deletion);
                    it.seek_for_prev(&t);
                    let i = all
                        .partition_point(|e| compare_internal_keys(&e.0, &t) != Ordering::Greater);
                    pos = i.checked_sub(1);
                }
                6 | 7 => {
                    if let Some(p) = pos {
                        it.next();
                        pos = (p + 1 < all.len()).then_some(p + 1);
                    }
                }
                _ => {
                    if let Some(p) = pos {
                        it.prev();
                        pos = p.checked_sub(1);
                    }
                }
            }
            assert_eq!(it.valid(), pos.is_some());
            if let Some(p) = pos {
                assert_eq!(it.key(), &all[p].0[..]);
                assert_eq!(it.value(), &all[p].1[..]);
            }
        }
        it.status().unwrap();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::memtable::MemTable;
    use mezz_format::ikey::{compare_internal_keys, make_internal_key};
    use mezz_format::iter::EmptyIterator;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use std::collections::BTreeMap;

    /// A sorted, Vec-backed internal iterator for tests.
    #[derive(Debug)]
    pub(crate) struct VecIter {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        pos: Option<usize>,
    }

    impl VecIter {
        /// REQUIRES: nothing; the entries are sorted here.
        pub(crate) fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
            entries.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            Self { entries, pos: None }
        }
    }

    impl InternalIterator<Error> for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) {
            self.pos = if self.entries.is_empty() {
                None
            } else {
                Some(0)
            };
        }
        fn seek_to_last(&mut self) {
            self.pos = self.entries.len().checked_sub(1);
        }
        fn seek(&mut self, target: &[u8]) {
            let i = self
                .entries
                .partition_point(|e| compare_internal_keys(&e.0, target) == Ordering::Less);
            self.pos = (i < self.entries.len()).then_some(i);
        }
        fn seek_for_prev(&mut self, target: &[u8]) {
            let i = self
                .entries
                .partition_point(|e| compare_internal_keys(&e.0, target) != Ordering::Greater);
            self.pos = i.checked_sub(1);
        }
        fn next(&mut self) {
            let p = self.pos.expect("valid");
            self.pos = (p + 1 < self.entries.len()).then_some(p + 1);
        }
        fn prev(&mut self) {
            let p = self.pos.expect("valid");
            self.pos = p.checked_sub(1);
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.pos.expect("valid")].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.pos.expect("valid")].1
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    /// Random user keys over a tiny alphabet, so prefixes of each other are common.
    fn random_user_key(rng: &mut StdRng) -> Vec<u8> {
        let len = rng.random_range(0..=3);
        (0..len).map(|_| b"abc"[rng.random_range(0..3)]).collect()
    }

    struct Case {
        children: Vec<Box<dyn InternalIterator<Error>>>,
        /// Every entry (internal key, value), sorted.
        all: Vec<(Vec<u8>, Vec<u8>)>,
        max_seq: SeqNo,
    }

    /// Random entries spread over 1..=5 children; one child may be a memtable. Some
    /// entries are copied into a second child (which the engine never does, but the merge
    /// must still order them by child index); with `distinct_copies` the copy's value names
    /// its child, so the order is visible.
    fn random_case(rng: &mut StdRng, distinct_copies: bool) -> Case {
        let n_children = rng.random_range(1..=5);
        let n_entries = rng.random_range(0..60);
        let mut parts: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); n_children];
        let mut all = Vec::new();
        for seq in 1..=n_entries as u64 {
            let uk = random_user_key(rng);
            let kind = if rng.random_bool(0.3) {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let ik = make_internal_key(&uk, seq, kind);
            let first = rng.random_range(0..n_children);
            let mut owners = vec![first];
            if rng.random_bool(0.1) {
                let second = rng.random_range(0..n_children);
                if second != first {
                    owners.push(second);
                }
            }
            for c in owners {
                let value = match (kind, distinct_copies) {
                    (ValueKind::Deletion, _) => Vec::new(),
                    (ValueKind::Value, true) => format!("v{seq}c{c}").into_bytes(),
                    (ValueKind::Value, false) => format!("v{seq}").into_bytes(),
                };
                parts[c].push((ik.clone(), value.clone()));
                all.push((ik.clone(), value, c));
            }
        }
        all.sort_by(|a, b| compare_internal_keys(&a.0, &b.0).then(a.2.cmp(&b.2)));
        let all = all.into_iter().map(|(k, v, _)| (k, v)).collect();
        let use_mem = rng.random_bool(0.3);
        let children = parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| -> Box<dyn InternalIterator<Error>> {
                if i == 0 && use_mem {
                    let m = Arc::new(MemTable::new(0, 64 << 20, mezz_format::KeyOrder::default()));
                    for (k, v) in &p {
                        let pk = parse_internal_key(k).unwrap();
                        m.add(pk.seq, pk.kind, pk.user_key, v).unwrap();
                    }
                    m.iter()
                } else {
                    Box::new(VecIter::new(p))
                }
            })
            .collect();
        Case {
            children,
            all,
            max_seq: n_entries as u64,
        }
    }

    /// The visible (key, value) pairs at `seq` within the bounds.
    fn model(
        all: &[(Vec<u8>, Vec<u8>)],
        seq: SeqNo,
        lower: &Option<Vec<u8>>,
        upper: &Option<Vec<u8>>,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut newest: BTreeMap<Vec<u8>, (SeqNo, ValueKind, Vec<u8>)> = BTreeMap::new();
        for (k, v) in all {
            let p = parse_internal_key(k).unwrap();
            if p.seq > seq {
                continue;
            }
            let e = newest
                .entry(p.user_key.to_vec())
                .or_insert((p.seq, p.kind, v.clone()));
            if p.seq >= e.0 {
                *e = (p.seq, p.kind, v.clone());
            }
        }
        newest
            .into_iter()
            .filter(|(k, (_, kind, _))| {
                *kind == ValueKind::Value
                    && lower.as_ref().is_none_or(|l| k >= l)
                    && upper.as_ref().is_none_or(|u| k < u)
            })
            .map(|(k, (_, _, v))| (k, v))
            .collect()
    }

    fn check_merging(rng: &mut StdRng, case: Case) {
        let Case { children, all, .. } = case;
        let mut it = merging_iterator(children, &mezz_format::KeyOrder::default());
        testing::assert_scans(it.as_mut(), &all);
        testing::assert_random_walk(it.as_mut(), &all, rng, 40, |rng| {
            (random_user_key(rng), rng.random_range(0..70))
        });
    }

    #[test]
    fn merging_iterator_matches_sorted_union() {
        let mut rng = StdRng::seed_from_u64(0x5eed_0001);
        for _ in 0..3000 {
            let case = random_case(&mut rng, true);
            check_merging(&mut rng, case);
        }
    }

    fn random_bound(rng: &mut StdRng) -> Option<Vec<u8>> {
        rng.random_bool(0.4).then(|| random_user_key(rng))
    }

    fn scan_forward(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn scan_reverse(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        out.reverse();
        out
    }

    fn check_db_iterator(rng: &mut StdRng, case: Case) {
        let Case {
            children,
            all,
            max_seq,
        } = case;
        let seq = rng.random_range(0..=max_seq + 1);
        let lower = random_bound(rng);
        let upper = random_bound(rng);
        let expect = model(&all, seq, &lower, &upper);
        let ctx = format!("seq {seq} lower {lower:?} upper {upper:?} all {all:?}");
        let mut it = DbIterator::new(
            merging_iterator(children, &mezz_format::KeyOrder::default()),
            seq,
            lower.clone(),
            upper.clone(),
            Box::new(()),
            mezz_format::KeyOrder::default(),
        );
        assert!(!it.valid());
        assert_eq!(scan_forward(&mut it), expect, "forward: {ctx}");
        assert_eq!(scan_reverse(&mut it), expect, "reverse: {ctx}");

        // Random seeks followed by mixed next/prev, checked step by step.
        let mut pos: Option<usize> = None;
        let mut log = Vec::new();
        for _ in 0..40 {
            let op = rng.random_range(0..10);
            match op {
                0 => {
                    it.seek_to_first();
                    pos = (!expect.is_empty()).then_some(0);
                    log.push("seek_to_first".to_string());
                }
                1 => {
                    it.seek_to_last();
                    pos = expect.len().checked_sub(1);
                    log.push("seek_to_last".to_string());
                }
                2 | 3 => {
                    let k = random_user_key(rng);
                    it.seek(&k);
                    let i = expect.partition_point(|e| e.0 < k);
                    pos = (i < expect.len()).then_some(i);
                    log.push(format!("seek {k:?}"));
                }
                4 | 5 => {
                    let k = random_user_key(rng);
                    it.seek_for_prev(&k);
                    let i = expect.partition_point(|e| e.0 <= k);
                    pos = i.checked_sub(1);
                    log.push(format!("seek_for_prev {k:?}"));
                }
                6 | 7 => {
                    if let Some(p) = pos {
                        it.next();
                        pos = (p + 1 < expect.len()).then_some(p + 1);
                        log.push("next".to_string());
                    }
                }
                _ => {
                    if let Some(p) = pos {
                        it.prev();
                        pos = p.checked_sub(1);
                        log.push("prev".to_string());
                    }
                }
            }
            assert_eq!(it.valid(), pos.is_some(), "{log:?} {ctx}");
            if let Some(p) = pos {
                assert_eq!(it.key(), &expect[p].0[..], "{log:?} {ctx}");
                assert_eq!(it.value(), &expect[p].1[..], "{log:?} {ctx}");
            }
        }
        it.status().unwrap();
    }

    #[test]
    fn db_iterator_matches_model() {
        let mut rng = StdRng::seed_from_u64(0x5eed_0002);
        for _ in 0..5000 {
            let case = random_case(&mut rng, false);
            check_db_iterator(&mut rng, case);
        }
    }

    #[test]
    fn db_iterator_many_versions_of_few_keys() {
        // Long runs of versions per key stress the skipping and the reverse scan.
        let mut rng = StdRng::seed_from_u64(0x5eed_0003);
        for _ in 0..500 {
            let mut all = Vec::new();
            let mut parts = vec![Vec::new(); 3];
            for seq in 1..=200u64 {
                let uk = vec![b'k', rng.random_range(b'a'..=b'e')];
                let kind = if rng.random_bool(0.5) {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                let v = if kind == ValueKind::Value {
                    seq.to_le_bytes().to_vec()
                } else {
                    Vec::new()
                };
                let e = (make_internal_key(&uk, seq, kind), v);
                parts[rng.random_range(0..3)].push(e.clone());
                all.push(e);
            }
            all.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            let children = parts
                .into_iter()
                .map(|p| Box::new(VecIter::new(p)) as Box<dyn InternalIterator<Error>>)
                .collect();
            check_db_iterator(
                &mut rng,
                Case {
                    children,
                    all,
                    max_seq: 200,
                },
            );
        }
    }

    #[test]
    fn db_iterator_basic_and_collect_all() {
        let m = Arc::new(MemTable::new(1, 64 << 20, mezz_format::KeyOrder::default()));
        m.add(1, ValueKind::Value, b"a", b"1").unwrap();
        m.add(2, ValueKind::Value, b"b", b"2").unwrap();
        m.add(3, ValueKind::Deletion, b"a", b"").unwrap();
        m.add(4, ValueKind::Value, b"c", b"3").unwrap();
        let pin = Arc::clone(&m);
        let it = DbIterator::new(
            m.iter(),
            10,
            None,
            None,
            Box::new(pin),
            mezz_format::KeyOrder::default(),
        );
        assert_eq!(
            it.collect_all().unwrap(),
            vec![
                (b"b".to_vec(), b"2".to_vec()),
                (b"c".to_vec(), b"3".to_vec())
            ]
        );
        let it = DbIterator::new(
            m.iter(),
            2,
            None,
            Some(b"b".to_vec()),
            Box::new(()),
            mezz_format::KeyOrder::default(),
        );
        assert_eq!(
            it.collect_all().unwrap(),
            vec![(b"a".to_vec(), b"1".to_vec())]
        );
    }

    /// A table iterator (of the format crate, wrapped as the engine wraps it) whose status
    /// is a corruption.
    fn bad_table() -> Box<dyn InternalIterator<Error>> {
        Box::new(crate::table::InFileIter::new(
            EmptyIterator::with_error("bad block"),
            "bad.sst".into(),
        ))
    }

    /// An engine iterator that fails with an error only the engine has.
    struct ClosedIter;

    impl InternalIterator<Error> for ClosedIter {
        fn valid(&self) -> bool {
            false
        }
        fn seek_to_first(&mut self) {}
        fn seek_to_last(&mut self) {}
        fn seek(&mut self, _target: &[u8]) {}
        fn seek_for_prev(&mut self, _target: &[u8]) {}
        fn next(&mut self) {}
        fn prev(&mut self) {}
        fn key(&self) -> &[u8] {
            &[]
        }
        fn value(&self) -> &[u8] {
            &[]
        }
        fn status(&self) -> Result<()> {
            Err(Error::Closed)
        }
    }

    #[test]
    fn an_engine_error_passes_through_the_iterators_unchanged() {
        let ok: Box<dyn InternalIterator<Error>> = Box::new(VecIter::new(vec![(
            make_internal_key(b"a", 1, ValueKind::Value),
            b"x".to_vec(),
        )]));
        let mut m = merging_iterator(
            vec![ok, Box::new(ClosedIter)],
            &mezz_format::KeyOrder::default(),
        );
        m.seek_to_first();
        assert!(!m.valid());
        assert!(matches!(m.status(), Err(Error::Closed)));
        let mut it = DbIterator::new(
            m,
            MAX_SEQ,
            None,
            None,
            Box::new(()),
            mezz_format::KeyOrder::default(),
        );
        it.seek_to_first();
        assert!(!it.valid());
        assert!(matches!(it.status(), Err(Error::Closed)));
        // A table's error keeps its kind and gains the file.
        let mut m = merging_iterator(vec![bad_table()], &mezz_format::KeyOrder::default());
        m.seek_to_first();
        match m.status() {
            Err(Error::Corruption { file, detail, .. }) => {
                assert_eq!(file.as_deref(), Some(std::path::Path::new("bad.sst")));
                assert_eq!(detail.to_string(), "bad block");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_propagate_through_status() {
        let ok: Box<dyn InternalIterator<Error>> = Box::new(VecIter::new(vec![(
            make_internal_key(b"a", 1, ValueKind::Value),
            b"x".to_vec(),
        )]));
        let bad = bad_table();
        let mut m = merging_iterator(vec![ok, bad], &mezz_format::KeyOrder::default());
        m.seek_to_first();
        // Fail-stop: a failed child stops the merge instead of being skipped.
        assert!(!m.valid());
        assert!(m.status().unwrap_err().is_corruption());

        let ok: Box<dyn InternalIterator<Error>> = Box::new(VecIter::new(vec![]));
        let bad = bad_table();
        let mut it = DbIterator::new(
            merging_iterator(vec![ok, bad], &mezz_format::KeyOrder::default()),
            MAX_SEQ,
            None,
            None,
            Box::new(()),
            mezz_format::KeyOrder::default(),
        );
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
        assert!(it.collect_all().is_err());

        // An undecodable internal key is skipped and reported.
        let junk: Box<dyn InternalIterator<Error>> = Box::new(VecIter::new(vec![
            (b"short".to_vec(), b"?".to_vec()),
            (make_internal_key(b"z", 1, ValueKind::Value), b"v".to_vec()),
        ]));
        let mut it = DbIterator::new(
            junk,
            MAX_SEQ,
            None,
            None,
            Box::new(()),
            mezz_format::KeyOrder::default(),
        );
        it.seek_to_first();
        assert_eq!(it.key(), b"z");
        assert!(it.status().unwrap_err().is_corruption());
    }

    #[test]
    fn duplicate_error_keeps_details() {
        let e = Error::corruption(42, "bad").in_file("x.sst");
        match e.duplicate() {
            Error::Corruption {
                file,
                offset,
                detail,
            } => {
                assert_eq!(file.as_deref(), Some(std::path::Path::new("x.sst")));
                assert_eq!(offset, 42);
                assert_eq!(detail.to_string(), "bad");
            }
            other => panic!("{other:?}"),
        }
        let io = Error::from(std::io::Error::new(std::io::ErrorKind::NotFound, "gone"));
        match io.duplicate() {
            Error::Io { source, .. } => assert_eq!(source.kind(), std::io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
    }
}
