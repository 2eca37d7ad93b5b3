//! The idiomatic read API of [`Db`]: `std::iter` iterators over everything, a range or a
//! prefix ([`Iter`]), `multi_get` and `get_pinned` (values that borrow their block).
//!
//! Owns no state: every method loads one read view (super version, then sequence number;
//! see `DbInner::read_view`) and reads through it, so an iterator's two ends and every key
//! of one `multi_get` see the same state.
//!
//! Thread-safety: as `Db`, every method may be called from many threads; the returned
//! [`Iter`] is `Send` and used by one thread at a time.

use std::ops::RangeBounds;
use std::sync::Arc;

use mezz_format::SeqNo;

use super::{Db, DbInner, GetStart};
use crate::error::Result;
use crate::iter::Iter;
use crate::iter::range::{CursorBounds, intersect, prefix_to_bounds, range_to_bounds};
use crate::options::{ReadOptions, Snapshot};
use crate::pinned::{PinnedLookup, PinnedValue};
use crate::state::SuperVersion;
use crate::table::{LookupResult, TableMeta};

impl Snapshot {
    /// Read options that read as of this snapshot (the other fields default), for the
    /// `*_opt` methods of [`Db`].
    #[must_use]
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            snapshot: Some(self.clone()),
            ..ReadOptions::default()
        }
    }
}

impl DbInner {
    /// An [`Iter`] over one read view with `bounds` intersected with `opts`'s bounds.
    fn range_iter(self: &Arc<Self>, opts: &ReadOptions, bounds: CursorBounds) -> Iter {
        if let Err(e) = self.check_open() {
            return Iter::failed(e);
        }
        let (sv, seq) = self.read_view(opts);
        let sv = arc_swap::Guard::into_inner(sv);
        let order = sv.version.order.clone();
        let b = intersect(opts, bounds, &order);
        let opts = ReadOptions {
            lower_bound: b.lower,
            upper_bound: b.upper,
            lower_bound_exclusive: b.lower_excl,
            upper_bound_inclusive: b.upper_incl,
            ..opts.clone()
        };
        let inner = Arc::clone(self);
        Iter::new(
            Box::new(move || {
                let _pass = inner.enter()?;
                inner.iter_in(Arc::clone(&sv), seq, &opts)
            }),
            order,
            b.prefix,
        )
    }

    /// The newest value of `key` at `seq` in `sv`, borrowing its data block when it comes
    /// from an SST.
    fn get_pinned_in(
        &self,
        sv: &SuperVersion,
        seq: SeqNo,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<PinnedValue>> {
        if self.read_pool.is_some() {
            return Ok(self.get_in(sv, seq, opts, key)?.map(PinnedValue::owned));
        }
        if let Some(r) = Self::memtables_get(sv, key, seq)? {
            return Ok(match r {
                LookupResult::Value(v) => Some(PinnedValue::owned(v)),
                LookupResult::Deleted => None,
            });
        }
        let topts = Self::table_read_options(opts);
        let v = &sv.version;
        let cache = &self.table_cache;
        // L0 rows of a matrix container pass cross-row hints down to older rows.
        let mut hint = None;
        let mut probe = |t: &TableMeta| -> Result<Option<PinnedLookup>> {
            let path = || cache.storage().describe(t);
            let table = cache.open(t).map_err(|e| e.in_file(path()))?;
            table
                .get_chained(key, seq, &topts, &mut hint)
                .map_err(|e| e.in_file(path()))
        };
        for level in 0..v.num_levels() {
            for run in v.level_runs(level) {
                if let Some(t) = run.table_for(key, &v.order)
                    && let Some(r) = probe(t)?
                {
                    return Ok(match r {
                        PinnedLookup::Value(v) => Some(v),
                        PinnedLookup::Deleted => None,
                    });
                }
            }
        }
        Ok(None)
    }
}

impl Db {
    /// Every key-value pair in key order, as of now. Double-ended: `.rev()` walks from the
    /// last key.
    ///
    /// Errors (the database is closed, a table cannot be read) are yielded as items.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = mezzanine::Db::open(dir.path(), mezzanine::Options::default())?;
    /// db.put(b"a", b"1")?;
    /// db.put(b"b", b"2")?;
    /// let keys: Vec<Vec<u8>> = db.iter().rev().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"b".to_vec(), b"a".to_vec()]);
    /// # Ok::<(), mezzanine::Error>(())
    /// ```
    #[must_use]
    pub fn iter(&self) -> Iter {
        self.iter_opt(&ReadOptions::default())
    }

    /// As [`Db::iter`], reading with `opts` (a snapshot, bounds, cache and checksum
    /// choices).
    #[must_use]
    pub fn iter_opt(&self, opts: &ReadOptions) -> Iter {
        self.inner.range_iter(opts, CursorBounds::default())
    }

    /// The pairs whose keys fall in `range`, in key order, with exactly the semantics of
    /// `BTreeMap::range` (`a..b`, `a..=b`, `..b`, `a..`, `..`, and `(Bound, Bound)` pairs
    /// with excluded starts). Keys may be anything that is `AsRef<[u8]>` (`&[u8]`, `Vec<u8>`,
    /// `&str`, ...). A `(Bound<&[u8]>, Bound<&[u8]>)` pair or a range of byte-string
    /// literals matches two `RangeBounds` impls: name the key type, as in
    /// `db.range::<&[u8], _>((Bound::Excluded(a), Bound::Unbounded))`.
    ///
    /// Where `BTreeMap::range` panics (start after end; start equal to end with both
    /// excluded) this yields one `InvalidArgument` error instead.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = mezzanine::Db::open(dir.path(), mezzanine::Options::default())?;
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     db.put(k, b"v")?;
    /// }
    /// let mut it = db.range("b"..="d");
    /// assert_eq!(it.next().transpose()?.map(|(k, _)| k), Some(b"b".to_vec()));
    /// assert_eq!(it.next_back().transpose()?.map(|(k, _)| k), Some(b"d".to_vec()));
    /// assert_eq!(it.next().transpose()?.map(|(k, _)| k), Some(b"c".to_vec()));
    /// assert!(it.next_back().is_none()); // the two ends met
    /// # Ok::<(), mezzanine::Error>(())
    /// ```
    pub fn range<K, R>(&self, range: R) -> Iter
    where
        K: AsRef<[u8]>,
        R: RangeBounds<K>,
    {
        self.range_opt(&ReadOptions::default(), range)
    }

    /// As [`Db::range`], reading with `opts`; the range is intersected with
    /// `opts.lower_bound` / `opts.upper_bound`.
    pub fn range_opt<K, R>(&self, opts: &ReadOptions, range: R) -> Iter
    where
        K: AsRef<[u8]>,
        R: RangeBounds<K>,
    {
        match range_to_bounds(&range, &self.inner.storage.order().clone()) {
            Ok(bounds) => self.inner.range_iter(opts, bounds),
            Err(e) => Iter::failed(e),
        }
    }

    /// The pairs whose keys start with `prefix`, in key order (double-ended).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = mezzanine::Db::open(dir.path(), mezzanine::Options::default())?;
    /// db.put(b"user:1", b"ann")?;
    /// db.put(b"user:2", b"bob")?;
    /// db.put(b"video:1", b"x")?;
    /// assert_eq!(db.prefix(b"user:").count(), 2);
    /// # Ok::<(), mezzanine::Error>(())
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Iter {
        self.prefix_opt(&ReadOptions::default(), prefix)
    }

    /// As [`Db::prefix`], reading with `opts`.
    pub fn prefix_opt(&self, opts: &ReadOptions, prefix: impl AsRef<[u8]>) -> Iter {
        self.inner.range_iter(
            opts,
            prefix_to_bounds(prefix.as_ref(), self.inner.storage.order()),
        )
    }

    /// The values of many keys, in the order of `keys`, all read from one view of the
    /// database (one super version and sequence number).
    ///
    /// # Errors
    /// The first error met (as [`Db::get`]).
    pub fn multi_get<I>(&self, keys: I) -> Result<Vec<Option<Vec<u8>>>>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.multi_get_opt(&ReadOptions::default(), keys)
    }

    /// As [`Db::multi_get`], reading with `opts`.
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn multi_get_opt<I>(&self, opts: &ReadOptions, keys: I) -> Result<Vec<Option<Vec<u8>>>>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let _pass = self.inner.enter()?;
        let (sv, seq) = self.inner.read_view(opts);
        keys.into_iter()
            .map(|k| {
                let start = GetStart::now();
                let r = self.inner.get_in(&sv, seq, opts, k.as_ref());
                self.inner.finish_get(&start);
                r
            })
            .collect()
    }

    /// The value of `key` without copying it where possible: a value found in an SST
    /// borrows the data block holding it (kept alive by the returned value even if the
    /// block cache evicts it); a value found in a memtable is a copy.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = mezzanine::Db::open(dir.path(), mezzanine::Options::default())?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?;
    /// let v = db.get_pinned(b"k")?.expect("present");
    /// assert_eq!(&*v, b"v");
    /// # Ok::<(), mezzanine::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_pinned(&self, key: &[u8]) -> Result<Option<PinnedValue>> {
        self.get_pinned_opt(&ReadOptions::default(), key)
    }

    /// As [`Db::get_pinned`], reading with `opts`.
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_pinned_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<PinnedValue>> {
        let start = GetStart::now();
        let r = self.inner.enter().and_then(|_pass| {
            let (sv, seq) = self.inner.read_view(opts);
            self.inner.get_pinned_in(&sv, seq, opts, key)
        });
        self.inner.finish_get(&start);
        r
    }
}
