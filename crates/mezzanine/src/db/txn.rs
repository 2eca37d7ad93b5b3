//! Optimistic transactions with snapshot isolation: [`Transaction`], begun with
//! [`Db::begin_transaction`].
//!
//! A transaction reads a snapshot taken at its start (or at `set_snapshot`) with its own
//! writes laid over it (a [`WriteBatchWithIndex`]), and marks keys: those it reads with
//! `get_for_update` and, unless `TxnOptions::mark_writes` is off, those it writes. Each
//! marked key remembers the sequence number it was marked at (the snapshot's, or the
//! latest one when the transaction has no snapshot; the earliest when marked twice).
//! `commit` validates and writes in one step of the write path
//! (`DbInner::write_validated`): under the write lock, with every earlier write published,
//! it looks up the newest sequence number of each marked key through the whole read path
//! (memtables, NVM memtables, every level of tables) and fails with `Error::Busy`,
//! writing nothing, if any is above the key's mark; otherwise the batch is logged before
//! the lock is released, so no write can land between the check and the commit.
//!
//! Why no separate `OptimisticTransactionDb` handle: validation is part of the engine's
//! one write path, which every plain write also takes, so transactions and plain writes
//! can be mixed on one `Db` and stay atomic with respect to each other.
//!
//! Invariants: `tracked` holds each marked key once, with the smallest sequence number it
//! was marked at; `track_log` lists the keys in the order they were first marked, so a
//! rollback to a savepoint unmarks the keys marked since (`savepoints` holds the log's
//! length at each savepoint; the batch keeps its own marks).
//!
//! Thread-safety: a `Transaction` is `Send` and used by one thread at a time (its methods
//! that change it take `&mut self`); any number of transactions and plain writers may run
//! against one `Db` concurrently.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mezz_format::ikey::{self, MAX_SEQ};
use mezz_format::{InternalIterator, SeqNo, ValueKind};

use super::indexed_batch::{BatchDbIterator, BatchValue, WriteBatchWithIndex};
use super::{Db, DbInner};
use crate::error::{Error, Result};
use crate::options::{ReadOptions, Snapshot, WriteOptions};
use crate::state::SuperVersion;
use crate::stats::StatsCollector;

/// Options of a transaction ([`Db::begin_transaction`]).
#[derive(Debug, Clone)]
pub struct TxnOptions {
    /// How the commit is written (`sync`). Default: not synced.
    pub write_options: WriteOptions,
    /// Take a snapshot when the transaction begins; reads see it (plus the transaction's
    /// own writes) and conflicts are checked against it. Without one, reads see the latest
    /// state and a key conflicts if it was written after it was marked. Default: true.
    pub set_snapshot: bool,
    /// Mark every key the transaction writes, as `get_for_update` marks the keys it reads
    /// (RocksDB's optimistic transactions do): a commit then also fails if another writer
    /// wrote a key this one overwrites (no lost updates). Default: true.
    pub mark_writes: bool,
}

impl Default for TxnOptions {
    fn default() -> Self {
        Self {
            write_options: WriteOptions::default(),
            set_snapshot: true,
            mark_writes: true,
        }
    }
}

/// An optimistic transaction: see the module documentation and `docs/transactions.md`.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use mezzanine::{Db, Options, TxnOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"balance", b"10")?;
/// let mut txn = db.begin_transaction(&TxnOptions::default());
/// let v = txn.get_for_update(b"balance")?.expect("present");
/// db.put(b"balance", b"20")?;                   // another writer, after the snapshot
/// txn.put(b"balance", &[v, b"0".to_vec()].concat());
/// assert!(txn.commit().unwrap_err().is_busy()); // nothing written: retry from the start
/// assert_eq!(db.get(b"balance")?, Some(b"20".to_vec()));
/// # Ok::<(), mezzanine::Error>(())
/// ```
#[derive(Debug)]
pub struct Transaction {
    db: Arc<DbInner>,
    opts: TxnOptions,
    snapshot: Option<Snapshot>,
    batch: WriteBatchWithIndex,
    /// Marked keys, each with the sequence number it was marked at.
    tracked: BTreeMap<Vec<u8>, SeqNo>,
    /// The keys of `tracked` in the order they were first marked.
    track_log: Vec<Vec<u8>>,
    /// `track_log`'s length at each savepoint.
    savepoints: Vec<usize>,
}

impl Db {
    /// Begins an optimistic transaction (snapshot isolation; see [`Transaction`]).
    #[must_use]
    pub fn begin_transaction(&self, opts: &TxnOptions) -> Transaction {
        let mut t = Transaction {
            db: Arc::clone(&self.inner),
            opts: opts.clone(),
            snapshot: None,
            batch: WriteBatchWithIndex::with_order(self.inner.storage.order().clone()),
            tracked: BTreeMap::new(),
            track_log: Vec::new(),
            savepoints: Vec::new(),
        };
        if opts.set_snapshot {
            t.set_snapshot();
        }
        t
    }
}

impl Transaction {
    /// Takes a new snapshot: later reads see the database as of now, and keys marked from
    /// now on conflict with writes after now (keys marked before keep their mark).
    pub fn set_snapshot(&mut self) {
        self.snapshot = Some(self.db.snapshot());
    }

    /// The transaction's snapshot, if it has one.
    #[must_use]
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The read options the transaction reads the database with: `opts` with the
    /// transaction's snapshot unless `opts` names one.
    fn read_options(&self, opts: &ReadOptions) -> ReadOptions {
        let mut o = opts.clone();
        if o.snapshot.is_none() {
            o.snapshot.clone_from(&self.snapshot);
        }
        o
    }

    /// The value of `key` as this transaction sees it: its own write, else the database at
    /// its snapshot (the latest state without one).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::default(), key)
    }

    /// As [`Transaction::get`], reading the database with `opts` (whose snapshot, if it
    /// has one, replaces the transaction's for this read).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.batch.get_from_batch(key) {
            Some(BatchValue::Put(v)) => Ok(Some(v.to_vec())),
            Some(BatchValue::Deleted) => Ok(None),
            None => self.db.get(&self.read_options(opts), key),
        }
    }

    /// As [`Transaction::get`], and marks `key`: the commit fails with `Error::Busy` if
    /// another writer writes `key` after the transaction's snapshot (or, without one,
    /// after this call).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.mark(key)?;
        self.get(key)
    }

    /// Marks `key` without reading it (RocksDB's `UndoGetForUpdate` has no counterpart: a
    /// mark stays until commit, rollback, or a rollback to an earlier savepoint).
    ///
    /// # Errors
    /// `Closed`.
    pub fn mark(&mut self, key: &[u8]) -> Result<()> {
        let seq = match &self.snapshot {
            Some(s) => s.sequence(),
            None => {
                self.db.check_open()?;
                self.db.versions.last_seq.load(Ordering::Acquire)
            }
        };
        match self.tracked.get_mut(key) {
            Some(s) => *s = (*s).min(seq),
            None => {
                self.tracked.insert(key.to_vec(), seq);
                self.track_log.push(key.to_vec());
            }
        }
        Ok(())
    }

    /// Sets `key` to `value` in this transaction (seen by its reads, written by `commit`).
    ///
    /// # Errors
    /// `Closed` when the key is marked (`mark_writes`) on a transaction without a
    /// snapshot and the database is closed.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.opts.mark_writes {
            self.mark(key)?;
        }
        self.batch.put(key, value);
        Ok(())
    }

    /// Deletes `key` in this transaction.
    ///
    /// # Errors
    /// As [`Transaction::put`].
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        if self.opts.mark_writes {
            self.mark(key)?;
        }
        self.batch.delete(key);
        Ok(())
    }

    /// An iterator over what this transaction sees: the database at its snapshot (or as
    /// `opts` says) with its own writes laid over it, forward only. It sees the
    /// transaction's writes as they are when it is made. Iterating marks nothing.
    ///
    /// # Errors
    /// As [`Db::cursor`].
    pub fn iter(&self, opts: &ReadOptions) -> Result<BatchDbIterator> {
        let o = self.read_options(opts);
        Ok(self.batch.iter_with_base(self.db.cursor(&o)?, &o))
    }

    /// The transaction's writes so far.
    #[must_use]
    pub fn write_batch(&self) -> &WriteBatchWithIndex {
        &self.batch
    }

    /// Number of keys marked.
    #[must_use]
    pub fn num_marked(&self) -> usize {
        self.tracked.len()
    }

    /// Remembers the transaction's writes and marks as they are now, for
    /// [`Transaction::rollback_to_savepoint`]. Savepoints nest.
    pub fn set_savepoint(&mut self) {
        self.batch.set_savepoint();
        self.savepoints.push(self.track_log.len());
    }

    /// Undoes the writes made and unmarks the keys first marked since the newest
    /// savepoint, and drops that savepoint.
    ///
    /// # Errors
    /// `InvalidArgument` if there is no savepoint.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let Some(n) = self.savepoints.pop() else {
            return Err(Error::InvalidArgument(
                "rollback_to_savepoint: no savepoint is set".into(),
            ));
        };
        self.batch.rollback_to_savepoint()?;
        for k in self.track_log.drain(n..) {
            self.tracked.remove(&k);
        }
        Ok(())
    }

    /// Discards every write, mark and savepoint; the transaction can be used again (with
    /// the same snapshot).
    pub fn rollback(&mut self) {
        self.batch.clear();
        self.tracked.clear();
        self.track_log.clear();
        self.savepoints.clear();
    }

    /// Validates and writes the transaction atomically: if no marked key was written by
    /// another writer after its mark, the transaction's writes are applied as one batch;
    /// otherwise nothing is written.
    ///
    /// # Errors
    /// `Busy` on a conflict (retry the whole transaction: begin a new one, read again);
    /// otherwise as [`Db::write`].
    pub fn commit(self) -> Result<()> {
        self.commit_at().map(|_| ())
    }

    /// As [`Transaction::commit`], returning the sequence number of the transaction's last
    /// write (`None` if it wrote nothing): a snapshot taken at or after it sees every write
    /// of the transaction, one before its first write sees none of them.
    ///
    /// # Errors
    /// As [`Transaction::commit`].
    pub fn commit_at(self) -> Result<Option<SeqNo>> {
        if self.batch.is_empty() && self.tracked.is_empty() {
            return Ok(None);
        }
        let db = Arc::clone(&self.db);
        let start = std::time::Instant::now();
        let _pass = db.enter()?;
        let tracked = self.tracked;
        let r = db.write_validated(
            self.opts.write_options.sync,
            self.batch.into_batch(),
            |sv| {
                for (key, &marked) in &tracked {
                    if let Some(seq) = db.newest_seq_above(sv, key, marked)? {
                        return Err(Error::Busy(format!(
                            "transaction conflict on key {}: written at sequence {seq}, \
                             after the transaction's mark at {marked}",
                            printable(key)
                        )));
                    }
                }
                Ok(())
            },
        );
        db.stats
            .write_latency
            .record(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
        match &r {
            Ok(_) => StatsCollector::add(&db.stats.txn_commits, 1),
            Err(Error::Busy(_)) => StatsCollector::add(&db.stats.txn_conflicts, 1),
            Err(_) => {}
        }
        // The snapshot is released when `self.snapshot` drops, after the commit.
        drop(self.snapshot);
        r
    }
}

/// `key` for an error message: printable ASCII as is, other bytes as `\xNN`.
fn printable(key: &[u8]) -> String {
    key.iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect()
}

impl DbInner {
    /// The newest sequence number of `key` in `sv` if it is above `floor`, found through
    /// the whole read path (memtables in read order, then every level's tables), or `None`
    /// if the key's newest version is at or below `floor` or the key has none.
    ///
    /// Stops early when a container's sequence numbers are all at or below `floor`:
    /// containers are consulted newest first and every version of the key further down is
    /// older. In particular, when the memtables hold every write after `floor` (the usual
    /// case for a short transaction), no table is read.
    pub(super) fn newest_seq_above(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        floor: SeqNo,
    ) -> Result<Option<SeqNo>> {
        let target = ikey::make_internal_key(key, MAX_SEQ, ValueKind::SEEK);
        let newest_in = |it: &mut dyn InternalIterator<Error>| -> Result<Option<SeqNo>> {
            it.seek(&target);
            if it.valid() {
                let k = it.key();
                if sv.version.order.same_user(ikey::user_key(k), key) {
                    return Ok(Some(ikey::trailer(k) >> 8));
                }
                return Ok(None);
            }
            it.status()?;
            Ok(None)
        };
        let above = |seq: SeqNo| (seq > floor).then_some(seq);
        for m in std::iter::once(&sv.mem)
            .chain(sv.imms.iter())
            .chain(sv.nvm.iter())
        {
            if m.is_empty() {
                continue;
            }
            if m.max_seq() <= floor {
                return Ok(None);
            }
            if let Some(seq) = newest_in(&mut *m.iter())? {
                return Ok(above(seq));
            }
            if m.min_seq() <= floor.saturating_add(1) {
                // This memtable and the newer ones hold every write after `floor`.
                return Ok(None);
            }
        }
        let topts = DbInner::table_read_options(&ReadOptions::default());
        let v = &sv.version;
        for level in 0..v.num_levels() {
            for run in v.level_runs(level) {
                let Some(t) = run.table_for(key, &v.order) else {
                    continue;
                };
                let path = || self.table_cache.storage().describe(t);
                let table = self
                    .table_cache
                    .open_for_read(t)
                    .map_err(|e| e.in_file(path()))?;
                // The point lookup consults the table's filter: most tables lack the key.
                if table
                    .get(key, MAX_SEQ, &topts)
                    .map_err(|e| e.in_file(path()))?
                    .is_none()
                {
                    continue;
                }
                if t.largest_seq <= floor {
                    return Ok(None);
                }
                let seq = newest_in(&mut *table.iter(&topts)).map_err(|e| e.in_file(path()))?;
                return Ok(seq.and_then(above));
            }
        }
        Ok(None)
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

    fn newest(db: &Db, key: &[u8], floor: SeqNo) -> Option<SeqNo> {
        let sv = db.inner.versions.super_version.load();
        db.inner.newest_seq_above(&sv, key, floor).unwrap()
    }

    fn last_seq(db: &Db) -> SeqNo {
        db.inner.versions.last_seq.load(Ordering::Acquire)
    }

    #[test]
    fn reads_see_the_snapshot_and_the_transactions_own_writes() {
        let (_d, db) = db();
        db.put(b"a", b"1").unwrap();
        db.put(b"b", b"1").unwrap();
        let mut t = db.begin_transaction(&TxnOptions::default());
        db.put(b"a", b"2").unwrap();
        db.put(b"c", b"2").unwrap();
        assert_eq!(t.get(b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(t.get(b"c").unwrap(), None);
        t.put(b"b", b"t").unwrap();
        t.delete(b"a").unwrap();
        t.put(b"d", b"t").unwrap();
        assert_eq!(t.get(b"b").unwrap(), Some(b"t".to_vec()));
        assert_eq!(t.get(b"a").unwrap(), None);
        let seen: Vec<_> = t
            .iter(&ReadOptions::default())
            .unwrap()
            .collect::<Result<Vec<_>>>()
            .unwrap();
        assert_eq!(
            seen,
            [
                (b"b".to_vec(), b"t".to_vec()),
                (b"d".to_vec(), b"t".to_vec())
            ]
        );
        // `a` was written after the snapshot, and the transaction deletes it.
        let e = t.commit().unwrap_err();
        assert!(e.is_busy(), "{e}");
        assert!(e.to_string().contains("key a"), "{e}");
        assert_eq!(
            db.get(b"b").unwrap(),
            Some(b"1".to_vec()),
            "nothing written"
        );
    }

    #[test]
    fn a_commit_without_conflict_writes_everything_at_once() {
        let (_d, db) = db();
        db.put(b"x", b"0").unwrap();
        let mut t = db.begin_transaction(&TxnOptions::default());
        assert_eq!(t.get_for_update(b"x").unwrap(), Some(b"0".to_vec()));
        db.put(b"other", b"1").unwrap();
        t.put(b"x", b"1").unwrap();
        t.put(b"y", b"1").unwrap();
        assert_eq!(t.num_marked(), 2);
        let before = last_seq(&db);
        t.commit().unwrap();
        assert_eq!(last_seq(&db), before + 2, "one batch of two updates");
        assert_eq!(db.get(b"x").unwrap(), Some(b"1".to_vec()));
        assert_eq!(db.get(b"y").unwrap(), Some(b"1".to_vec()));
    }

    #[test]
    fn a_read_for_update_conflicts_and_a_plain_read_does_not() {
        let (_d, db) = db();
        let mut t = db.begin_transaction(&TxnOptions::default());
        t.get(b"plain").unwrap();
        t.get_for_update(b"marked").unwrap();
        t.put(b"out", b"v").unwrap();
        db.put(b"plain", b"w").unwrap();
        let mut t2 = db.begin_transaction(&TxnOptions::default());
        t2.get_for_update(b"marked").unwrap();
        t2.put(b"marked", b"t2").unwrap();
        t2.commit().unwrap();
        assert!(t.commit().unwrap_err().is_busy());
        assert_eq!(db.get(b"out").unwrap(), None);
        let s = db.stats();
        assert_eq!((s.txn_commits, s.txn_conflicts), (1, 1));
        assert!(s.to_string().contains("refused (Busy) 1"), "{s}");
    }

    #[test]
    fn blind_writes_conflict_only_when_writes_are_marked() {
        let (_d, db) = db();
        let mut t = db.begin_transaction(&TxnOptions::default());
        t.put(b"k", b"t").unwrap();
        db.put(b"k", b"other").unwrap();
        assert!(t.commit().unwrap_err().is_busy());
        let mut t = db.begin_transaction(&TxnOptions {
            mark_writes: false,
            ..TxnOptions::default()
        });
        t.put(b"k", b"t").unwrap();
        db.put(b"k", b"other").unwrap();
        t.commit().unwrap();
        assert_eq!(db.get(b"k").unwrap(), Some(b"t".to_vec()));
    }

    #[test]
    fn without_a_snapshot_a_key_conflicts_from_its_mark() {
        let (_d, db) = db();
        let mut t = db.begin_transaction(&TxnOptions {
            set_snapshot: false,
            ..TxnOptions::default()
        });
        assert!(t.snapshot().is_none());
        db.put(b"k", b"before-mark").unwrap();
        // The latest state, and no conflict with the write before the mark.
        assert_eq!(
            t.get_for_update(b"k").unwrap(),
            Some(b"before-mark".to_vec())
        );
        t.put(b"k", b"t").unwrap();
        t.commit().unwrap();
        let mut t = db.begin_transaction(&TxnOptions {
            set_snapshot: false,
            ..TxnOptions::default()
        });
        t.get_for_update(b"k").unwrap();
        db.put(b"k", b"after-mark").unwrap();
        t.set_snapshot(); // the earlier mark keeps its sequence number
        t.put(b"k", b"t2").unwrap();
        assert!(t.commit().unwrap_err().is_busy());
    }

    #[test]
    fn savepoints_undo_writes_and_marks() {
        let (_d, db) = db();
        let mut t = db.begin_transaction(&TxnOptions::default());
        assert!(t.rollback_to_savepoint().is_err());
        t.put(b"a", b"1").unwrap();
        t.set_savepoint();
        t.put(b"a", b"2").unwrap();
        t.get_for_update(b"b").unwrap();
        assert_eq!(t.num_marked(), 2);
        t.rollback_to_savepoint().unwrap();
        assert_eq!(t.num_marked(), 1, "b is unmarked");
        assert_eq!(t.get(b"a").unwrap(), Some(b"1".to_vec()));
        db.put(b"b", b"other").unwrap(); // no longer a conflict
        t.commit().unwrap();
        assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
        let mut t = db.begin_transaction(&TxnOptions::default());
        t.put(b"a", b"3").unwrap();
        t.rollback();
        assert_eq!(t.num_marked(), 0);
        db.put(b"a", b"4").unwrap();
        t.commit().unwrap(); // nothing to write, nothing marked
        assert_eq!(db.get(b"a").unwrap(), Some(b"4".to_vec()));
    }

    #[test]
    fn the_newest_sequence_is_found_in_memtables_and_tables() {
        let (_d, db) = db();
        db.put(b"k", b"1").unwrap();
        let s1 = last_seq(&db);
        assert_eq!(newest(&db, b"k", 0), Some(s1));
        assert_eq!(newest(&db, b"k", s1), None);
        assert_eq!(newest(&db, b"nope", 0), None);
        db.flush().unwrap();
        assert_eq!(newest(&db, b"k", 0), Some(s1), "in an L0 table");
        assert_eq!(newest(&db, b"k", s1), None);
        // A transaction's snapshot keeps the deletion from being dropped at the bottom.
        let snap = db.snapshot();
        db.put(b"other", b"x").unwrap();
        db.delete(b"k").unwrap();
        let s2 = last_seq(&db);
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        assert_eq!(newest(&db, b"k", 0), Some(s2), "the deletion, compacted");
        assert_eq!(newest(&db, b"k", snap.sequence()), Some(s2));
        // Writes after the floor only to other keys: not above.
        db.put(b"z", b"x").unwrap();
        assert_eq!(newest(&db, b"k", s2), None);
        assert_eq!(newest(&db, b"k", s2 - 1), Some(s2));
    }

    #[test]
    fn a_conflict_is_found_after_the_write_left_the_memtables() {
        let (_d, db) = db();
        for flush_before_commit in [false, true] {
            let mut t = db.begin_transaction(&TxnOptions::default());
            t.get_for_update(b"acct").unwrap();
            db.put(b"acct", b"other").unwrap();
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            db.put(b"unrelated", b"x").unwrap();
            if flush_before_commit {
                db.flush().unwrap();
            }
            t.put(b"acct", b"t").unwrap();
            assert!(t.commit().unwrap_err().is_busy());
            // And a key nobody wrote passes, its snapshot older than the memtables.
            let mut t = db.begin_transaction(&TxnOptions::default());
            t.get_for_update(b"quiet").unwrap();
            db.put(b"noise", b"x").unwrap();
            db.flush().unwrap();
            t.put(b"quiet", b"t").unwrap();
            t.commit().unwrap();
        }
    }

    #[test]
    fn a_closed_database_refuses_the_commit() {
        let (_d, db) = db();
        let mut t = db.begin_transaction(&TxnOptions::default());
        t.put(b"k", b"v").unwrap();
        db.close().unwrap();
        assert!(matches!(t.commit(), Err(Error::Closed)));
    }
}
