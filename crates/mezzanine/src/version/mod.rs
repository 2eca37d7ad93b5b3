//! Versions: which tables make up the database at one moment, and the super version a reader
//! pins (memtables + version).
//!
//! Owns: the immutable [`Version`] (tables per level, seen as [`SortedRun`]s: L0 one run
//! per table, every deeper level one run; `Version::level_overlaps` is the one place that
//! says which), [`VersionBuilder`] (applies many edits to a base at once, as manifest
//! replay does).
//!
//! Invariants of a `Version`:
//! - L0 is sorted newest first (by `largest_seq`, then id, descending); its tables may
//!   overlap.
//! - Every level >= 1 is sorted by smallest internal key and its tables do not overlap in
//!   user keys (one user key's versions never span two tables of a level).
//! - A `Version` is never mutated after construction; `Version::apply` builds a new one that
//!   shares the unchanged `Arc<TableMeta>`s. A table file may be deleted only once no live
//!   `Version` holds its `Arc<TableMeta>` (the engine watches the `Arc`'s strong count).
//!
//! Thread-safety: `Version` is immutable and shared through `Arc`.

use std::cmp::Ordering;
use std::sync::Arc;

use mezz_format::KeyOrder;

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::storage::nvm::NvmObject;
use crate::table::{TableLocation, TableMeta};

mod builder;
pub mod edit;
pub use builder::VersionBuilder;
pub use edit::VersionEdit;

/// The tables of the database at one moment. Immutable; see the module invariants.
#[derive(Debug, Clone)]
pub struct Version {
    /// Tables per level (index 0 = L0).
    pub levels: Vec<Vec<Arc<TableMeta>>>,
    /// Per level: where the next round-robin compaction starts (an internal key; empty =
    /// from the beginning).
    pub compact_pointers: Vec<Vec<u8>>,
    /// Live NVM objects, by id (ascending = creation order).
    pub nvm_objects: std::collections::BTreeMap<u64, NvmObject>,
    /// The database's identity, once recorded.
    pub db_id: Option<[u8; 16]>,
    /// The matrix container's compactor: the L0 rows with a row id up to this one (`0` =
    /// none). Column compactions drain them; newer rows are the receiver.
    pub matrix_compactor: u64,
    /// The order of user keys (levels >= 1 are sorted by it; recorded by name in the
    /// manifest).
    pub order: KeyOrder,
}

/// A sorted run: tables whose key ranges do not overlap, in key order. A read consults the
/// runs of a version newest first and stops at the first that holds the key; an iterator
/// merges one child per run.
#[derive(Debug, Clone, Copy)]
pub enum SortedRun<'a> {
    /// One table of a level whose tables overlap (L0): a run of its own.
    Table(&'a Arc<TableMeta>),
    /// The tables of a level whose tables do not overlap (L1 and deeper), in key order.
    Level(&'a [Arc<TableMeta>]),
}

impl<'a> SortedRun<'a> {
    /// The run's tables, in key order.
    #[must_use]
    pub fn tables(&self) -> &'a [Arc<TableMeta>] {
        match *self {
            SortedRun::Table(t) => std::slice::from_ref(t),
            SortedRun::Level(ts) => ts,
        }
    }

    /// The one table of the run whose key range may hold `user_key` (keys ordered by
    /// `order`).
    #[must_use]
    pub fn table_for(&self, user_key: &[u8], order: &KeyOrder) -> Option<&'a Arc<TableMeta>> {
        let ts = self.tables();
        let i = ts.partition_point(|t| order.compare_user(t.largest_user_key(), user_key).is_lt());
        ts.get(i)
            .filter(|t| order.compare_user(t.smallest_user_key(), user_key).is_le())
    }

    /// The run's tables whose user-key range intersects `[lo, hi]`: two binary searches, no
    /// copy (what [`Version::overlapping`] gives for a sorted level, without the scan).
    #[must_use]
    pub fn overlapping(&self, lo: &[u8], hi: &[u8], order: &KeyOrder) -> &'a [Arc<TableMeta>] {
        let ts = self.tables();
        let first = ts.partition_point(|t| order.compare_user(t.largest_user_key(), lo).is_lt());
        let end = ts.partition_point(|t| order.compare_user(t.smallest_user_key(), hi).is_le());
        ts.get(first..end.max(first)).unwrap_or(&[])
    }
}

fn l0_order(a: &Arc<TableMeta>, b: &Arc<TableMeta>) -> Ordering {
    b.largest_seq.cmp(&a.largest_seq).then(b.id.cmp(&a.id))
}

impl Version {
    /// Checks that every table of this version is somewhere `storage` can reach: an SST in
    /// a configured directory, or an NVM table whose objects (its own and every one its
    /// entries live in) the version lists. Open runs it, so a mismatch is refused up front
    /// instead of failing reads later.
    ///
    /// # Errors
    /// `InvalidArgument` for a table in a directory index the options do not configure, or
    /// in NVM without an NVM tier; `Corruption` for a table in (or pointing into) an NVM
    /// object the version does not list.
    pub fn check_reachable(&self, storage: &Storage) -> Result<()> {
        let version = self;
        for (level, t) in version.all_tables() {
            match t.location {
                TableLocation::Sst { path_id } => {
                    if path_id as usize >= storage.dir_count() {
                        return Err(Error::InvalidArgument(format!(
                            "the database keeps table {} (L{level}) in SSD directory \
                             {path_id} (ssd_paths[{}]), but ssd_paths gives only {} \
                             directories",
                            t.id,
                            path_id.saturating_sub(1),
                            storage.dir_count() - 1
                        )));
                    }
                }
                TableLocation::Nvm { object } => {
                    if !version.nvm_objects.contains_key(&object) {
                        return Err(Error::corruption(
                            0,
                            format!(
                                "table {} (L{level}) is in NVM object {object}, which the \
                                 manifest does not list",
                                t.id
                            ),
                        ));
                    }
                    if storage.nvm().is_none() {
                        return Err(Error::InvalidArgument(format!(
                            "table {} (L{level}) is in NVM, but no NVM tier is configured \
                             (nvm_dir)",
                            t.id
                        )));
                    }
                    for r in &t.nvm_refs {
                        let o = &r.object;
                        if !version.nvm_objects.contains_key(o) {
                            return Err(Error::corruption(
                                0,
                                format!(
                                    "table {} (L{level}) points into NVM object {o}, which \
                                     the manifest does not list",
                                    t.id
                                ),
                            ));
                        }
                    }
                }
                TableLocation::Row { space, row, .. } => {
                    let known = storage.matrix().is_some_and(|m| m.object().id == space);
                    if !version.nvm_objects.contains_key(&space) || !known {
                        return Err(Error::corruption(
                            0,
                            format!(
                                "table {} (L{level}) is matrix row {row} in NVM object \
                                 {space}, which is not the database's matrix container",
                                t.id
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// An empty version with `num_levels` levels.
    #[must_use]
    pub fn new(num_levels: usize) -> Self {
        Self {
            levels: vec![Vec::new(); num_levels],
            compact_pointers: vec![Vec::new(); num_levels],
            nvm_objects: std::collections::BTreeMap::new(),
            db_id: None,
            matrix_compactor: 0,
            order: KeyOrder::bytewise(),
        }
    }

    /// The same version under the key order `order` (levels re-sorted by it).
    #[must_use]
    pub fn with_order(mut self, order: KeyOrder) -> Self {
        self.order = order;
        self.sort_levels();
        self
    }

    /// Number of levels.
    #[must_use]
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Tables at `level` (empty for a level out of range).
    #[must_use]
    pub fn tables(&self, level: usize) -> &[Arc<TableMeta>] {
        self.levels.get(level).map_or(&[], Vec::as_slice)
    }

    /// Number of tables at `level`.
    #[must_use]
    pub fn num_files(&self, level: usize) -> usize {
        self.tables(level).len()
    }

    /// Bytes of the tables at `level`.
    #[must_use]
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.tables(level).iter().map(|t| t.size).sum()
    }

    /// Every table, with its level.
    pub fn all_tables(&self) -> impl Iterator<Item = (usize, &Arc<TableMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, ts)| ts.iter().map(move |t| (l, t)))
    }

    /// The deepest level holding a table, if any.
    #[must_use]
    pub fn deepest_nonempty_level(&self) -> Option<usize> {
        self.levels.iter().rposition(|l| !l.is_empty())
    }

    /// Tables of `level` whose user-key range intersects `[begin, end]` (`None` =
    /// unbounded).
    #[must_use]
    pub fn overlapping(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<TableMeta>> {
        self.tables(level)
            .iter()
            .filter(|t| {
                begin.is_none_or(|b| self.order.compare_user(t.largest_user_key(), b).is_ge())
                    && end.is_none_or(|e| self.order.compare_user(t.smallest_user_key(), e).is_le())
            })
            .cloned()
            .collect()
    }

    /// Whether the tables of `level` may overlap each other (each is then a sorted run of
    /// its own, newest first), or form one sorted run. Only L0 overlaps in the leveled
    /// shape; this is the one place that says so.
    #[must_use]
    pub fn level_overlaps(&self, level: usize) -> bool {
        level == 0
    }

    /// The sorted runs of `tables`, a subset of `level` in the level's order: one per table
    /// if the level overlaps, else one run (none if `tables` is empty).
    pub fn runs_of<'a>(
        &self,
        level: usize,
        tables: &'a [Arc<TableMeta>],
    ) -> impl Iterator<Item = SortedRun<'a>> + 'a {
        let overlaps = self.level_overlaps(level);
        let each = if overlaps { tables } else { &[] };
        let whole = (!overlaps && !tables.is_empty()).then_some(SortedRun::Level(tables));
        each.iter().map(SortedRun::Table).chain(whole)
    }

    /// The sorted runs of `level`, newest first.
    pub fn level_runs(&self, level: usize) -> impl Iterator<Item = SortedRun<'_>> + '_ {
        self.runs_of(level, self.tables(level))
    }

    /// Every sorted run with its level, in the order reads consult them (newest first).
    pub fn runs(&self) -> impl Iterator<Item = (usize, SortedRun<'_>)> + '_ {
        (0..self.num_levels()).flat_map(move |l| self.level_runs(l).map(move |r| (l, r)))
    }

    /// For a level >= 1: the one table whose range may hold `user_key`.
    #[must_use]
    #[cfg(test)]
    pub fn find_table(&self, level: usize, user_key: &[u8]) -> Option<&Arc<TableMeta>> {
        SortedRun::Level(self.tables(level)).table_for(user_key, &mezz_format::KeyOrder::default())
    }

    /// A new version with `edit` applied (compact pointers, deletions, then additions).
    /// Several edits in a row are better applied with one [`VersionBuilder`].
    ///
    /// # Errors
    /// `Corruption` if the edit names a level out of range, deletes a table that is not
    /// there or adds one twice, adds an NVM object that overlaps a live one or is added
    /// twice, or deletes an NVM object that does not exist.
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version> {
        let mut b = VersionBuilder::new(self);
        b.apply(edit)?;
        Ok(b.finish())
    }

    /// Like [`Version::apply`] but reuses the caller's `Arc`s for moved tables (a trivial
    /// move keeps the same `Arc<TableMeta>`, so the file is never seen as obsolete).
    ///
    /// # Errors
    /// As [`Version::apply`].
    pub fn apply_with(&self, edit: &VersionEdit, moved: &[Arc<TableMeta>]) -> Result<Version> {
        let mut v = self.apply(edit)?;
        if moved.is_empty() {
            return Ok(v);
        }
        for level in &mut v.levels {
            for t in level.iter_mut() {
                if let Some(m) = moved.iter().find(|m| m.id == t.id) {
                    *t = Arc::clone(m);
                }
            }
        }
        Ok(v)
    }

    fn sort_levels(&mut self) {
        let order = &self.order;
        for (i, l) in self.levels.iter_mut().enumerate() {
            if i == 0 {
                l.sort_by(l0_order);
            } else {
                l.sort_by(|a, b| order.compare_internal(&a.smallest, &b.smallest));
            }
        }
    }

    /// Checks the ordering invariants of levels >= 1.
    ///
    /// # Errors
    /// `Corruption` naming the two overlapping tables.
    pub fn check_invariants(&self) -> Result<()> {
        for (level, ts) in self.levels.iter().enumerate() {
            if self.level_overlaps(level) {
                continue;
            }
            for w in ts.windows(2) {
                if let [a, b] = w
                    && self
                        .order
                        .compare_user(a.largest_user_key(), b.smallest_user_key())
                        .is_ge()
                {
                    return Err(Error::corruption(
                        0,
                        format!(
                            "level {level}: tables {} and {} overlap or are out of order",
                            a.id, b.id
                        ),
                    ));
                }
            }
        }
        for (level, t) in self.all_tables() {
            if self.order.compare_internal(&t.smallest, &t.largest) == Ordering::Greater {
                return Err(Error::corruption(
                    0,
                    format!("level {level}: table {} has smallest > largest", t.id),
                ));
            }
        }
        Ok(())
    }

    /// An edit that recreates this version from nothing (the first record of a new
    /// manifest).
    #[must_use]
    pub fn snapshot_edit(&self) -> VersionEdit {
        VersionEdit {
            format_version: Some(edit::MANIFEST_BASE_VERSION),
            comparator: Some(self.order.name().to_string()),
            compact_pointers: self
                .compact_pointers
                .iter()
                .enumerate()
                .filter(|(_, k)| !k.is_empty())
                .map(|(l, k)| (l, k.clone()))
                .collect(),
            new_tables: self
                .all_tables()
                .map(|(l, t)| (l, TableMeta::clone(t)))
                .collect(),
            db_id: self.db_id,
            new_nvm_objects: self.nvm_objects.values().copied().collect(),
            matrix_compactor: (self.matrix_compactor != 0).then_some(self.matrix_compactor),
            ..VersionEdit::default()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::storage::nvm::NvmObjectKind;
    use crate::table::TableLocation;
    use mezz_format::ValueKind;
    use mezz_format::ikey::make_internal_key;

    /// An SST table `id` at path 0 covering user keys `lo..=hi` with sequence numbers
    /// `seq.0..=seq.1` (also used by the tests of `compaction`, `manifest` and the builder).
    pub(crate) fn meta(id: u64, lo: &str, hi: &str, seq: (u64, u64), size: u64) -> TableMeta {
        TableMeta {
            id,
            location: TableLocation::Sst { path_id: 0 },
            size,
            smallest: make_internal_key(lo.as_bytes(), seq.1, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), seq.0, ValueKind::Value),
            smallest_seq: seq.0,
            largest_seq: seq.1,
            num_entries: 10,
            num_deletions: 1,
            nvm_refs: Vec::new(),
            pinned: Default::default(),
            seeks: Default::default(),
        }
    }

    #[test]
    fn nvm_objects_are_tracked_and_overlaps_refused() {
        let obj = |id, offset, len| NvmObject {
            id,
            kind: NvmObjectKind::Wal,
            offset,
            len,
            weight: 0,
        };
        let v = Version::new(3)
            .apply(&VersionEdit {
                new_nvm_objects: vec![obj(5, 4096, 4096), obj(6, 8192, 4096)],
                ..VersionEdit::default()
            })
            .unwrap();
        assert_eq!(v.nvm_objects.len(), 2);
        let overlap = VersionEdit {
            new_nvm_objects: vec![obj(7, 8000, 100)],
            ..VersionEdit::default()
        };
        assert!(matches!(v.apply(&overlap), Err(Error::Corruption { .. })));
        let v = v
            .apply(&VersionEdit {
                deleted_nvm_objects: vec![5],
                ..VersionEdit::default()
            })
            .unwrap();
        assert_eq!(v.nvm_objects.keys().copied().collect::<Vec<_>>(), vec![6]);
        let again = VersionEdit {
            deleted_nvm_objects: vec![5],
            ..VersionEdit::default()
        };
        assert!(v.apply(&again).is_err());
        // The snapshot edit recreates them.
        let snap = Version::new(3).apply(&v.snapshot_edit()).unwrap();
        assert_eq!(snap.nvm_objects, v.nvm_objects);
    }

    #[test]
    fn apply_sorts_levels_and_checks_deletions() {
        let v = Version::new(4);
        let e = VersionEdit {
            new_tables: vec![
                (0, meta(1, "a", "z", (1, 10), 1)),
                (0, meta(2, "a", "z", (11, 20), 1)),
                (1, meta(4, "m", "p", (1, 1), 1)),
                (1, meta(3, "a", "c", (1, 1), 1)),
            ],
            ..VersionEdit::default()
        };
        let v = v.apply(&e).unwrap();
        let ids = |l: usize| v.tables(l).iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(0), vec![2, 1], "L0 newest first");
        assert_eq!(ids(1), vec![3, 4], "L1 by smallest key");
        v.check_invariants().unwrap();
        assert_eq!(v.find_table(1, b"b").map(|t| t.id), Some(3));
        assert_eq!(v.find_table(1, b"d").map(|t| t.id), None);
        assert_eq!(v.find_table(1, b"p").map(|t| t.id), Some(4));
        assert_eq!(v.overlapping(1, Some(b"c"), Some(b"m")).len(), 2);
        assert_eq!(v.overlapping(1, Some(b"d"), Some(b"l")).len(), 0);
        let del_missing = VersionEdit {
            deleted_tables: vec![(2, 1)],
            ..VersionEdit::default()
        };
        assert!(v.apply(&del_missing).is_err());
        let overlap = VersionEdit {
            new_tables: vec![(1, meta(5, "b", "d", (1, 1), 1))],
            ..VersionEdit::default()
        };
        assert!(v.apply(&overlap).unwrap().check_invariants().is_err());
    }

    #[test]
    fn locations_the_storage_cannot_reach_are_refused() {
        use crate::storage::nvm::{NvmObject, NvmObjectKind};
        use std::path::PathBuf;
        let fs: Arc<dyn mezz_env::FileSystem> = Arc::new(mezz_env::MemFs::new());
        let s = Storage::new(fs, PathBuf::from("/db"), vec![PathBuf::from("/ssd1")], None);
        let at = |location| {
            let mut m = meta(9, "a", "b", (1, 1), 10);
            m.location = location;
            Version::new(4)
                .apply(&VersionEdit {
                    new_tables: vec![(2, m)],
                    new_nvm_objects: vec![NvmObject {
                        id: 5,
                        kind: NvmObjectKind::Memtable,
                        offset: 4096,
                        len: 4096,
                        weight: 0,
                    }],
                    ..VersionEdit::default()
                })
                .unwrap()
        };
        at(TableLocation::Sst { path_id: 1 })
            .check_reachable(&s)
            .unwrap();
        match at(TableLocation::Sst { path_id: 2 }).check_reachable(&s) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("SSD directory 2"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            at(TableLocation::Nvm { object: 5 }).check_reachable(&s),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            at(TableLocation::Nvm { object: 6 }).check_reachable(&s),
            Err(Error::Corruption { .. })
        ));
    }
}
