//! [`WriteBatchWithIndex`]: a write batch that keeps an ordered index of its own updates,
//! so that reads through it see the batch's writes first ([`get_from_batch`],
//! [`get_from_batch_and_db`], and [`BatchDbIterator`], the batch merged with a database
//! iterator). Transactions (`db::txn`) keep their writes in one.
//!
//! Owns: the batch (the updates in the order they were made, which is what a write
//! commits), the index (each key's newest update, as the offset of its record in the
//! batch), and the savepoints (marks of the batch to cut it back to).
//!
//! Invariants: the index holds exactly the keys the batch updates, each mapped to the
//! offset of the key's last record in the batch; after a rollback to a savepoint the index
//! is rebuilt from the batch. Keys are ordered by the batch's key order (bytewise unless
//! made with [`WriteBatchWithIndex::with_order`]; a transaction's batch takes its
//! database's) in the index and in the merge with the database; reading it against a
//! database of another order is refused.
//!
//! Thread-safety: a plain value (`Send + Sync`); updates need `&mut self`. A
//! [`BatchDbIterator`] copies the batch's entries of its range when it is made, so the
//! batch may change (or go away) while the iterator is used; the iterator does not see
//! those changes.
//!
//! [`get_from_batch`]: WriteBatchWithIndex::get_from_batch
//! [`get_from_batch_and_db`]: WriteBatchWithIndex::get_from_batch_and_db

use std::cmp::Ordering;
use std::collections::BTreeMap;

use mezz_format::{KeyOrder, ValueKind};

use super::Db;
use crate::batch::{BatchMark, WriteBatch};
use crate::error::{Error, Result};
use crate::iter::DbIterator;
use crate::options::ReadOptions;

/// A key of the index, ordered by its batch's key order (equal keys under it are one key).
#[derive(Debug, Clone)]
struct IndexKey(Vec<u8>, KeyOrder);

impl Ord for IndexKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.1.compare_user(&self.0, &other.0)
    }
}

impl PartialEq for IndexKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for IndexKey {}

impl PartialOrd for IndexKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What a batch says of a key: its newest update in the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchValue<'a> {
    /// The batch puts this value.
    Put(&'a [u8]),
    /// The batch deletes the key.
    Deleted,
}

/// A write batch with an ordered index of its own updates (RocksDB's
/// `WriteBatchWithIndex`): reads through it see its writes over the database's.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mezzanine::{Db, Options, ReadOptions, WriteBatchWithIndex, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"a", b"old")?;
/// db.put(b"b", b"kept")?;
/// let mut wb = WriteBatchWithIndex::new();
/// wb.put(b"a", b"new");
/// wb.delete(b"b");
/// wb.put(b"c", b"added");
/// assert_eq!(wb.get_from_batch_and_db(&db, &ReadOptions::default(), b"a")?, Some(b"new".to_vec()));
/// assert_eq!(wb.get_from_batch_and_db(&db, &ReadOptions::default(), b"b")?, None);
/// let merged: Vec<_> = wb.iter_with_db(&db, &ReadOptions::default())?.collect::<Result<_, _>>()?;
/// assert_eq!(merged, [(b"a".to_vec(), b"new".to_vec()), (b"c".to_vec(), b"added".to_vec())]);
/// db.write(&WriteOptions::default(), wb.into_batch())?; // one atomic batch
/// assert_eq!(db.get(b"b")?, None);
/// # Ok::<(), mezzanine::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    /// Each key updated, to the offset of its newest record in `batch`.
    index: BTreeMap<IndexKey, usize>,
    savepoints: Vec<BatchMark>,
    /// The order of the keys (the database's it is read with).
    order: KeyOrder,
}

impl WriteBatchWithIndex {
    /// An empty batch, its keys in bytewise order.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch, its keys in `order` (that of the database it will be read with:
    /// `Options::key_order()`).
    #[must_use]
    pub fn with_order(order: KeyOrder) -> Self {
        Self {
            order,
            ..Self::default()
        }
    }

    /// Fails unless `db` orders keys as this batch does.
    fn check_order(&self, db: &Db) -> Result<()> {
        let theirs = db.inner.storage.order();
        if theirs == &self.order {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "the batch orders keys by {:?}, the database by {:?}",
                self.order.name(),
                theirs.name()
            )))
        }
    }

    /// Adds a put of `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        let at = WriteBatch::mark_offset(self.batch.mark());
        self.batch.put(key, value);
        self.index
            .insert(IndexKey(key.to_vec(), self.order.clone()), at);
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        let at = WriteBatch::mark_offset(self.batch.mark());
        self.batch.delete(key);
        self.index
            .insert(IndexKey(key.to_vec(), self.order.clone()), at);
    }

    /// Number of updates (every put and delete, a key updated twice counting twice).
    #[must_use]
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// Whether the batch holds no update.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Number of distinct keys the batch updates.
    #[must_use]
    pub fn num_keys(&self) -> usize {
        self.index.len()
    }

    /// Removes every update and every savepoint.
    pub fn clear(&mut self) {
        self.batch.clear();
        self.index.clear();
        self.savepoints.clear();
    }

    /// The updates, in the order they were made: what a write of this batch applies.
    #[must_use]
    pub fn batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// The updates as a plain batch (for `Db::write`).
    #[must_use]
    pub fn into_batch(self) -> WriteBatch {
        self.batch
    }

    /// The batch's newest update of `key`, if it has one.
    #[must_use]
    pub fn get_from_batch(&self, key: &[u8]) -> Option<BatchValue<'_>> {
        let at = *self
            .index
            .get(&IndexKey(key.to_vec(), self.order.clone()))?;
        let op = self.batch.op_at(at)?;
        Some(match op.kind {
            ValueKind::Value => BatchValue::Put(op.value),
            ValueKind::Deletion => BatchValue::Deleted,
        })
    }

    /// The value of `key` as this batch would leave it: the batch's own update if it has
    /// one, else the database's value as read with `opts` (a snapshot, or the latest
    /// state).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_from_batch_and_db(
        &self,
        db: &Db,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.check_order(db)?;
        match self.get_from_batch(key) {
            Some(BatchValue::Put(v)) => Ok(Some(v.to_vec())),
            Some(BatchValue::Deleted) => Ok(None),
            None => db.get_opt(opts, key),
        }
    }

    /// An iterator over the database (read with `opts`: a snapshot, bounds) with this
    /// batch's updates laid over it: keys the batch puts show its values, keys it deletes
    /// are absent. It starts unpositioned (call a seek method, or use it as a
    /// `std::iter::Iterator` from the first key); it sees the batch as it is now.
    ///
    /// # Errors
    /// As [`Db::cursor`].
    pub fn iter_with_db(&self, db: &Db, opts: &ReadOptions) -> Result<BatchDbIterator> {
        self.check_order(db)?;
        Ok(self.iter_with_base(db.cursor(opts)?, opts))
    }

    /// The batch's updates within `opts`'s bounds laid over `base` (an iterator made with
    /// the same bounds).
    pub(crate) fn iter_with_base(&self, base: DbIterator, opts: &ReadOptions) -> BatchDbIterator {
        let o = &self.order;
        let above_lower = |k: &[u8]| {
            opts.lower_bound.as_deref().is_none_or(|lo| {
                let c = o.compare_user(k, lo);
                if opts.lower_bound_exclusive {
                    c.is_gt()
                } else {
                    c.is_ge()
                }
            })
        };
        let below_upper = |k: &[u8]| {
            opts.upper_bound.as_deref().is_none_or(|hi| {
                let c = o.compare_user(k, hi);
                if opts.upper_bound_inclusive {
                    c.is_le()
                } else {
                    c.is_lt()
                }
            })
        };
        let delta = self
            .index
            .iter()
            .filter(|(k, _)| above_lower(&k.0) && below_upper(&k.0))
            .filter_map(|(k, &at)| {
                let op = self.batch.op_at(at)?;
                let v = (op.kind == ValueKind::Value).then(|| op.value.to_vec());
                Some((k.0.clone(), v))
            })
            .collect();
        BatchDbIterator {
            order: self.order.clone(),
            base,
            delta,
            pos: 0,
            current: Current::None,
            positioned: false,
            finished: false,
        }
    }

    /// Remembers the batch as it is now, for [`WriteBatchWithIndex::rollback_to_savepoint`].
    /// Savepoints nest.
    pub fn set_savepoint(&mut self) {
        self.savepoints.push(self.batch.mark());
    }

    /// Drops every update made since the newest savepoint, and that savepoint.
    ///
    /// # Errors
    /// `InvalidArgument` if there is no savepoint (the batch is unchanged).
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let m = self.savepoints.pop().ok_or_else(|| {
            Error::InvalidArgument("rollback_to_savepoint: no savepoint is set".into())
        })?;
        self.batch.truncate_to(m);
        self.index.clear();
        for (at, op) in self.batch.ops_with_offsets() {
            self.index
                .insert(IndexKey(op.key.to_vec(), self.order.clone()), at);
        }
        Ok(())
    }

    /// Forgets the newest savepoint, keeping the updates made since.
    ///
    /// # Errors
    /// `InvalidArgument` if there is no savepoint.
    pub fn pop_savepoint(&mut self) -> Result<()> {
        self.savepoints
            .pop()
            .map(|_| ())
            .ok_or_else(|| Error::InvalidArgument("pop_savepoint: no savepoint is set".into()))
    }
}

/// Which side the merged iterator is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Current {
    None,
    Base,
    Delta,
}

/// A database iterator with a batch's updates laid over it (RocksDB's
/// `BaseDeltaIterator`), forward only: made by [`WriteBatchWithIndex::iter_with_db`] and
/// `Transaction::iter`. Use it as a cursor (`seek_to_first`, `seek`, `valid`, `key`,
/// `value`, `next`, `status`) or as a `std::iter::Iterator` of `Result<(key, value)>`,
/// which starts at the first key unless a seek placed it.
#[derive(Debug)]
pub struct BatchDbIterator {
    /// The order of keys (the batch's and the database's).
    order: KeyOrder,
    base: DbIterator,
    /// The batch's newest update of each key in range, in key order (`None`: deleted).
    delta: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pos: usize,
    current: Current,
    positioned: bool,
    /// Set once the `std::iter::Iterator` has returned its end (or error).
    finished: bool,
}

impl BatchDbIterator {
    /// Positions at the first key.
    pub fn seek_to_first(&mut self) {
        self.base.seek_to_first();
        self.pos = 0;
        self.positioned = true;
        self.finished = false;
        self.settle();
    }

    /// Positions at the first key at or after `key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.base.seek(key);
        self.pos = self
            .delta
            .partition_point(|(k, _)| self.order.compare_user(k, key) == Ordering::Less);
        self.positioned = true;
        self.finished = false;
        self.settle();
    }

    /// Whether the iterator is at an entry.
    #[must_use]
    pub fn valid(&self) -> bool {
        self.current != Current::None
    }

    /// Moves to the next key. REQUIRES: `valid()` (otherwise nothing happens).
    pub fn next(&mut self) {
        match self.current {
            Current::None => return,
            Current::Base => self.base.next(),
            Current::Delta => self.pos += 1,
        }
        self.settle();
    }

    /// The current key (empty when not `valid()`).
    #[must_use]
    pub fn key(&self) -> &[u8] {
        match self.current {
            Current::None => &[],
            Current::Base => self.base.key(),
            Current::Delta => self.delta.get(self.pos).map_or(&[], |(k, _)| k),
        }
    }

    /// The current value (empty when not `valid()`).
    #[must_use]
    pub fn value(&self) -> &[u8] {
        match self.current {
            Current::None => &[],
            Current::Base => self.base.value(),
            Current::Delta => self
                .delta
                .get(self.pos)
                .and_then(|(_, v)| v.as_deref())
                .unwrap_or(&[]),
        }
    }

    /// The database iterator's error, if it met one (it is then not `valid()`).
    ///
    /// # Errors
    /// As `DbIterator::status`.
    pub fn status(&self) -> Result<()> {
        self.base.status()
    }

    /// Moves to the next entry to show, from the base's and the delta's positions: the
    /// smaller key of the two; on a tie the batch's update wins (the base steps past the
    /// key); the batch's deletes are skipped.
    fn settle(&mut self) {
        loop {
            let delta = self.delta.get(self.pos);
            let base_key = self.base.valid().then(|| self.base.key());
            let take_delta = match (base_key, delta) {
                (None, None) => {
                    self.current = Current::None;
                    return;
                }
                (Some(_), None) => {
                    self.current = Current::Base;
                    return;
                }
                (None, Some(_)) => true,
                (Some(b), Some((d, _))) => match self.order.compare_user(b, d) {
                    Ordering::Less => {
                        self.current = Current::Base;
                        return;
                    }
                    Ordering::Equal => {
                        self.base.next();
                        true
                    }
                    Ordering::Greater => true,
                },
            };
            if take_delta {
                if self.delta.get(self.pos).is_some_and(|(_, v)| v.is_some()) {
                    self.current = Current::Delta;
                    return;
                }
                self.pos += 1;
            }
        }
    }
}

impl Iterator for BatchDbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.positioned {
            self.seek_to_first();
        }
        if self.finished {
            return None;
        }
        if !self.valid() {
            // An error ends the iteration after it is reported once.
            self.finished = true;
            return self.base.status().err().map(Err);
        }
        let kv = (self.key().to_vec(), self.value().to_vec());
        BatchDbIterator::next(self);
        Some(Ok(kv))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        (dir, db)
    }

    #[test]
    fn the_index_keeps_each_keys_newest_update() {
        let mut wb = WriteBatchWithIndex::new();
        assert!(wb.is_empty());
        wb.put(b"k", b"1");
        wb.put(b"k", b"2");
        wb.delete(b"d");
        assert_eq!(wb.get_from_batch(b"k"), Some(BatchValue::Put(b"2")));
        assert_eq!(wb.get_from_batch(b"d"), Some(BatchValue::Deleted));
        assert_eq!(wb.get_from_batch(b"x"), None);
        wb.delete(b"k");
        assert_eq!(wb.get_from_batch(b"k"), Some(BatchValue::Deleted));
        wb.put(b"d", b"back");
        assert_eq!(wb.get_from_batch(b"d"), Some(BatchValue::Put(b"back")));
        assert_eq!((wb.len(), wb.num_keys()), (5, 2));
        wb.clear();
        assert!(wb.is_empty());
        assert_eq!(wb.get_from_batch(b"d"), None);
    }

    #[test]
    fn savepoints_cut_the_batch_and_the_index_back() {
        let mut wb = WriteBatchWithIndex::new();
        assert!(wb.rollback_to_savepoint().is_err());
        wb.put(b"a", b"1");
        wb.set_savepoint();
        wb.put(b"a", b"2");
        wb.put(b"b", b"2");
        wb.set_savepoint();
        wb.delete(b"a");
        wb.rollback_to_savepoint().unwrap();
        assert_eq!(wb.get_from_batch(b"a"), Some(BatchValue::Put(b"2")));
        wb.rollback_to_savepoint().unwrap();
        assert_eq!(wb.get_from_batch(b"a"), Some(BatchValue::Put(b"1")));
        assert_eq!(wb.get_from_batch(b"b"), None);
        assert_eq!(wb.len(), 1);
        assert!(wb.rollback_to_savepoint().is_err());
        wb.set_savepoint();
        wb.put(b"c", b"3");
        wb.pop_savepoint().unwrap();
        assert!(wb.pop_savepoint().is_err());
        assert_eq!(wb.len(), 2);
    }

    #[test]
    fn reads_see_the_batch_over_the_database() {
        let (_d, db) = db();
        for k in [&b"a"[..], b"b", b"c", b"e"] {
            db.put(k, b"db").unwrap();
        }
        let snap = db.snapshot();
        db.put(b"f", b"after-snapshot").unwrap();
        let mut wb = WriteBatchWithIndex::new();
        wb.put(b"b", b"wb");
        wb.delete(b"c");
        wb.put(b"d", b"wb");
        wb.delete(b"zz");
        wb.put(b"0", b"wb");
        let ro = ReadOptions::default();
        assert_eq!(
            wb.get_from_batch_and_db(&db, &ro, b"a").unwrap(),
            Some(b"db".to_vec())
        );
        assert_eq!(
            wb.get_from_batch_and_db(&db, &ro, b"b").unwrap(),
            Some(b"wb".to_vec())
        );
        assert_eq!(wb.get_from_batch_and_db(&db, &ro, b"c").unwrap(), None);
        let all: Vec<(Vec<u8>, Vec<u8>)> = wb
            .iter_with_db(&db, &ro)
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> = [
            ("0", "wb"),
            ("a", "db"),
            ("b", "wb"),
            ("d", "wb"),
            ("e", "db"),
            ("f", "after-snapshot"),
        ]
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
        assert_eq!(all, want);
        // At the snapshot, with bounds, from a seek.
        let ro = ReadOptions {
            lower_bound: Some(b"a".to_vec()),
            upper_bound: Some(b"f".to_vec()),
            ..snap.read_options()
        };
        let mut it = wb.iter_with_db(&db, &ro).unwrap();
        it.seek(b"bb");
        let mut keys = Vec::new();
        while it.valid() {
            keys.push(it.key().to_vec());
            it.next();
        }
        it.status().unwrap();
        assert_eq!(keys, [b"d".to_vec(), b"e".to_vec()]);
        let n = wb.iter_with_db(&db, &ro).unwrap().count();
        assert_eq!(n, 4, "a, b, d, e");
        // Written, it is one batch.
        db.write(&crate::WriteOptions::default(), wb.into_batch())
            .unwrap();
        assert_eq!(db.get(b"c").unwrap(), None);
        assert_eq!(db.get(b"d").unwrap(), Some(b"wb".to_vec()));
    }

    #[test]
    fn the_merge_matches_a_model_on_random_batches() {
        use rand::rngs::StdRng;
        use rand::{RngExt, SeedableRng};
        let (_d, db) = db();
        let mut rng = StdRng::seed_from_u64(11);
        let mut model = std::collections::BTreeMap::new();
        for i in 0..200u32 {
            if rng.random_bool(0.5) {
                let k = format!("{:03}", rng.random_range(0..100)).into_bytes();
                db.put(&k, &i.to_le_bytes()).unwrap();
                model.insert(k, i.to_le_bytes().to_vec());
            }
        }
        for round in 0..20 {
            let mut wb = WriteBatchWithIndex::new();
            let mut m = model.clone();
            for j in 0..rng.random_range(0..40) {
                let k = format!("{:03}", rng.random_range(0..110)).into_bytes();
                if rng.random_bool(0.3) {
                    wb.delete(&k);
                    m.remove(&k);
                } else {
                    let v = format!("r{round}-{j}").into_bytes();
                    wb.put(&k, &v);
                    m.insert(k, v);
                }
            }
            let got: Vec<_> = wb
                .iter_with_db(&db, &ReadOptions::default())
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
            let want: Vec<_> = m.into_iter().collect();
            assert_eq!(got, want, "round {round}");
        }
    }
}
