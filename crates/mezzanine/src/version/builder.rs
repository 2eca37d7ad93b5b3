//! [`VersionBuilder`]: applies any number of version edits to a base [`Version`] and builds
//! the resulting version once, as LevelDB's `VersionSet::Builder` does.
//!
//! Owns: the changes accumulated since the base (per level: the base's tables deleted and
//! the tables added, in the order they were added; the compact pointers, live NVM objects
//! and db id as they stand after the edits applied so far).
//!
//! Invariants: after every successful [`VersionBuilder::apply`], the accumulated changes are
//! exactly what folding [`Version::apply`] over the same edits would have produced, and the
//! same edits are refused with the same errors (a level out of range, deleting a table that
//! is not there, adding a table twice at a level, an NVM object that overlaps a live one or
//! is added twice, deleting a missing NVM object), earlier edits of the same builder taken
//! into account. Tables of the base that no edit touches keep their `Arc<TableMeta>`. Levels
//! are sorted once, in [`VersionBuilder::finish`], with the orderings `Version::apply` uses
//! (a stable sort: tables that compare equal keep the order folding would have given them).
//! After a failed `apply` the builder holds part of that edit and must be discarded.
//!
//! Thread-safety: a builder is owned by one thread; it borrows its base immutably.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::storage::nvm::NvmObject;
use crate::table::TableMeta;
use crate::version::VersionEdit;

use super::Version;

/// What the edits so far changed at one level.
#[derive(Debug, Default)]
struct LevelChanges {
    /// Ids of the base's tables at this level; built on the first change to the level.
    base_ids: Option<HashSet<u64>>,
    /// Base tables deleted (a table deleted and added again is also in `added`).
    deleted: HashSet<u64>,
    /// Tables added and not deleted since, by the order they were added in (a table added
    /// again after a deletion moves to the end, as it does when edits are folded).
    added: BTreeMap<u64, Arc<TableMeta>>,
    /// Id of an added table -> its key in `added`.
    added_order: HashMap<u64, u64>,
}

impl LevelChanges {
    fn is_unchanged(&self) -> bool {
        self.deleted.is_empty() && self.added.is_empty()
    }

    fn base_ids(&mut self, base: &[Arc<TableMeta>]) -> &HashSet<u64> {
        self.base_ids
            .get_or_insert_with(|| base.iter().map(|t| t.id).collect())
    }

    /// Whether table `id` is at this level after the changes so far.
    fn contains(&mut self, base: &[Arc<TableMeta>], id: u64) -> bool {
        self.added_order.contains_key(&id)
            || (!self.deleted.contains(&id) && self.base_ids(base).contains(&id))
    }

    /// Removes table `id`; false if it is not at this level.
    fn delete(&mut self, base: &[Arc<TableMeta>], id: u64) -> bool {
        if let Some(order) = self.added_order.remove(&id) {
            self.added.remove(&order);
            // A base table deleted, added again and deleted again is already in `deleted`.
            return true;
        }
        if self.deleted.contains(&id) || !self.base_ids(base).contains(&id) {
            return false;
        }
        self.deleted.insert(id);
        true
    }
}

/// The changes at `level` and the base's tables there (`None` for a level out of range).
fn level_of<'v, 'a>(
    levels: &'v mut [LevelChanges],
    base: &'a Version,
    level: usize,
) -> Option<(&'v mut LevelChanges, &'a [Arc<TableMeta>])> {
    Some((levels.get_mut(level)?, base.levels.get(level)?.as_slice()))
}

/// Accumulates version edits on top of a base version; see the module documentation.
#[derive(Debug)]
pub struct VersionBuilder<'a> {
    base: &'a Version,
    levels: Vec<LevelChanges>,
    compact_pointers: Vec<Vec<u8>>,
    nvm_objects: BTreeMap<u64, NvmObject>,
    db_id: Option<[u8; 16]>,
    matrix_compactor: u64,
    /// The next key of `LevelChanges::added` (one sequence for every level).
    next_order: u64,
}

impl<'a> VersionBuilder<'a> {
    /// A builder with no edits applied yet: [`VersionBuilder::finish`] would give `base`.
    #[must_use]
    pub fn new(base: &'a Version) -> Self {
        Self {
            base,
            levels: base
                .levels
                .iter()
                .map(|_| LevelChanges::default())
                .collect(),
            compact_pointers: base.compact_pointers.clone(),
            nvm_objects: base.nvm_objects.clone(),
            db_id: base.db_id,
            matrix_compactor: base.matrix_compactor,
            next_order: 0,
        }
    }

    /// Applies `edit` on top of the edits applied so far, with the checks and in the order
    /// of [`Version::apply`]: compact pointers, deleted tables, new tables, db id, deleted
    /// NVM objects, new NVM objects.
    ///
    /// # Errors
    /// `Corruption` (offset 0) if the edit names a level out of range, deletes a table that
    /// is not there, adds one twice at a level, adds an NVM object that overlaps a live one
    /// or is added twice, or deletes an NVM object that does not exist. The builder must then
    /// be discarded.
    pub fn apply(&mut self, edit: &VersionEdit) -> Result<()> {
        let n = self.levels.len();
        let bad = |m: String| Error::corruption(0, m);
        for (level, key) in &edit.compact_pointers {
            let p = self
                .compact_pointers
                .get_mut(*level)
                .ok_or_else(|| bad(format!("compact pointer for level {level} >= {n}")))?;
            p.clone_from(key);
        }
        for (level, id) in &edit.deleted_tables {
            let Some((l, base)) = level_of(&mut self.levels, self.base, *level) else {
                return Err(bad(format!("deleted table {id} at level {level} >= {n}")));
            };
            if !l.delete(base, *id) {
                return Err(bad(format!("deleted table {id} is not at level {level}")));
            }
        }
        for (level, meta) in &edit.new_tables {
            let Some((l, base)) = level_of(&mut self.levels, self.base, *level) else {
                return Err(bad(format!(
                    "new table {} at level {level} >= {n}",
                    meta.id
                )));
            };
            if l.contains(base, meta.id) {
                return Err(bad(format!(
                    "table {} added twice at level {level}",
                    meta.id
                )));
            }
            let order = self.next_order;
            self.next_order += 1;
            l.added.insert(order, Arc::new(meta.clone()));
            l.added_order.insert(meta.id, order);
        }
        if let Some(id) = edit.db_id {
            self.db_id = Some(id);
        }
        if let Some(r) = edit.matrix_compactor {
            self.matrix_compactor = r;
        }
        for id in &edit.deleted_nvm_objects {
            if self.nvm_objects.remove(id).is_none() {
                return Err(bad(format!("deleted NVM object {id} does not exist")));
            }
        }
        for o in &edit.new_nvm_objects {
            let end = o.offset.checked_add(o.len);
            // A live extent whose end does not fit a u64 reaches to the end of the pool.
            let overlaps = self.nvm_objects.values().any(|x| {
                end.is_none_or(|e| x.offset < e && o.offset < x.offset.saturating_add(x.len))
            });
            if overlaps || self.nvm_objects.contains_key(&o.id) {
                return Err(bad(format!(
                    "NVM object {} at {}+{} overlaps a live one or is added twice",
                    o.id, o.offset, o.len
                )));
            }
            self.nvm_objects.insert(o.id, *o);
        }
        Ok(())
    }

    /// The version the base and the edits applied make, each level sorted once (L0 newest
    /// first, deeper levels by smallest internal key).
    #[must_use]
    pub fn finish(self) -> Version {
        let levels = self
            .levels
            .into_iter()
            .zip(&self.base.levels)
            .map(|(changes, base)| {
                if changes.is_unchanged() {
                    return base.clone();
                }
                let mut l: Vec<Arc<TableMeta>> =
                    Vec::with_capacity(base.len() + changes.added.len());
                l.extend(
                    base.iter()
                        .filter(|t| !changes.deleted.contains(&t.id))
                        .cloned(),
                );
                l.extend(changes.added.into_values());
                l
            })
            .collect();
        let mut v = Version {
            levels,
            compact_pointers: self.compact_pointers,
            nvm_objects: self.nvm_objects,
            db_id: self.db_id,
            matrix_compactor: self.matrix_compactor,
            order: self.base.order.clone(),
        };
        v.sort_levels();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::nvm::NvmObjectKind;
    use crate::table::TableLocation;
    use crate::version::tests::meta;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    const LEVELS: usize = 4;

    /// Asserts that two versions hold the same tables per level in the same order, the same
    /// compact pointers, NVM objects and db id.
    fn assert_same(a: &Version, b: &Version, what: &str) {
        assert_eq!(a.levels.len(), b.levels.len(), "{what}: number of levels");
        for (l, (x, y)) in a.levels.iter().zip(&b.levels).enumerate() {
            let x: Vec<&TableMeta> = x.iter().map(|t| &**t).collect();
            let y: Vec<&TableMeta> = y.iter().map(|t| &**t).collect();
            assert_eq!(x, y, "{what}: level {l}");
        }
        assert_eq!(a.compact_pointers, b.compact_pointers, "{what}: pointers");
        assert_eq!(a.nvm_objects, b.nvm_objects, "{what}: NVM objects");
        assert_eq!(a.db_id, b.db_id, "{what}: db id");
        assert_eq!(a.matrix_compactor, b.matrix_compactor, "{what}: compactor");
    }

    /// `Version::apply` as it was before the builder: a clone of the whole version, the edit
    /// applied to it, every level sorted. The reference the builder is checked against.
    fn apply_by_cloning(base: &Version, edit: &VersionEdit) -> Result<Version> {
        let mut v = base.clone();
        let n = v.levels.len();
        let bad = |m: String| Error::corruption(0, m);
        for (level, key) in &edit.compact_pointers {
            let p = v
                .compact_pointers
                .get_mut(*level)
                .ok_or_else(|| bad(format!("compact pointer for level {level} >= {n}")))?;
            p.clone_from(key);
        }
        for (level, id) in &edit.deleted_tables {
            let l = v
                .levels
                .get_mut(*level)
                .ok_or_else(|| bad(format!("deleted table {id} at level {level} >= {n}")))?;
            let before = l.len();
            l.retain(|t| t.id != *id);
            if l.len() == before {
                return Err(bad(format!("deleted table {id} is not at level {level}")));
            }
        }
        for (level, meta) in &edit.new_tables {
            let l = v
                .levels
                .get_mut(*level)
                .ok_or_else(|| bad(format!("new table {} at level {level} >= {n}", meta.id)))?;
            if l.iter().any(|t| t.id == meta.id) {
                return Err(bad(format!(
                    "table {} added twice at level {level}",
                    meta.id
                )));
            }
            l.push(Arc::new(meta.clone()));
        }
        if let Some(id) = edit.db_id {
            v.db_id = Some(id);
        }
        for id in &edit.deleted_nvm_objects {
            if v.nvm_objects.remove(id).is_none() {
                return Err(bad(format!("deleted NVM object {id} does not exist")));
            }
        }
        for o in &edit.new_nvm_objects {
            let end = o.offset.checked_add(o.len);
            let overlaps = v.nvm_objects.values().any(|x| {
                end.is_none_or(|e| x.offset < e && o.offset < x.offset.saturating_add(x.len))
            });
            if overlaps || v.nvm_objects.contains_key(&o.id) {
                return Err(bad(format!(
                    "NVM object {} at {}+{} overlaps a live one or is added twice",
                    o.id, o.offset, o.len
                )));
            }
            v.nvm_objects.insert(o.id, *o);
        }
        v.sort_levels();
        Ok(v)
    }

    type Outcome = std::result::Result<Version, (usize, String)>;

    /// Folds `apply` over `edits`, edit by edit: the version, or the index and text of the
    /// first error.
    fn fold(
        base: &Version,
        edits: &[VersionEdit],
        apply: fn(&Version, &VersionEdit) -> Result<Version>,
    ) -> Outcome {
        let mut v = base.clone();
        for (i, e) in edits.iter().enumerate() {
            v = apply(&v, e).map_err(|err| (i, err.to_string()))?;
        }
        Ok(v)
    }

    /// Folds both `Version::apply` and the reference over `edits`; they must agree.
    fn fold_both(base: &Version, edits: &[VersionEdit]) -> Outcome {
        let by_apply = fold(base, edits, Version::apply);
        let by_cloning = fold(base, edits, apply_by_cloning);
        match (&by_apply, &by_cloning) {
            (Ok(a), Ok(c)) => assert_same(a, c, "Version::apply against the reference"),
            (Err(a), Err(c)) => assert_eq!(a, c, "Version::apply against the reference"),
            _ => panic!("Version::apply gives {by_apply:?}, the reference {by_cloning:?}"),
        }
        by_apply
    }

    /// One builder over `edits`: as [`fold`].
    fn build(base: &Version, edits: &[VersionEdit]) -> Outcome {
        let mut b = VersionBuilder::new(base);
        for (i, e) in edits.iter().enumerate() {
            b.apply(e).map_err(|err| (i, err.to_string()))?;
        }
        Ok(b.finish())
    }

    fn obj(id: u64, offset: u64, len: u64) -> NvmObject {
        NvmObject {
            id,
            kind: if id.is_multiple_of(2) {
                NvmObjectKind::Wal
            } else {
                NvmObjectKind::Memtable
            },
            offset,
            len,
            weight: 0,
        }
    }

    /// The state random edits are generated against (kept by folding `Version::apply`).
    struct Gen {
        rng: StdRng,
        next_id: u64,
        /// Ids deleted once (they may come back, as a trivial move re-adds an id).
        retired: Vec<u64>,
        /// NVM slots of 4 KiB: which object holds each.
        slots: Vec<Option<u64>>,
    }

    impl Gen {
        fn new(seed: u64) -> Self {
            Self {
                rng: StdRng::seed_from_u64(seed),
                next_id: 1,
                retired: Vec::new(),
                slots: vec![None; 16],
            }
        }

        fn table(&mut self, id: u64) -> TableMeta {
            // Few distinct keys and sequence numbers, so that levels have ties.
            let lo = char::from(b'a' + self.rng.random_range(0..4u8)).to_string();
            let hi = format!("{lo}{}", self.rng.random_range(0..3u8));
            let s = self.rng.random_range(1..6u64);
            let mut t = meta(id, &lo, &hi, (s, s + self.rng.random_range(0..2u64)), id);
            if self.rng.random_bool(0.3) {
                t.location = TableLocation::Nvm {
                    object: self.rng.random_range(1..100),
                };
            }
            t
        }

        /// A random edit that applies to `v`.
        fn valid_edit(&mut self, v: &Version) -> VersionEdit {
            let mut e = VersionEdit::default();
            let mut gone: Vec<(usize, u64)> = Vec::new();
            for (level, t) in v.all_tables() {
                if self.rng.random_bool(0.06) {
                    e.deleted_tables.push((level, t.id));
                    gone.push((level, t.id));
                }
            }
            for _ in 0..self.rng.random_range(0..4) {
                let level = self.rng.random_range(0..LEVELS);
                let id = if self.rng.random_bool(0.2) && !self.retired.is_empty() {
                    // An id deleted by an earlier edit comes back.
                    let i = self.rng.random_range(0..self.retired.len());
                    self.retired.swap_remove(i)
                } else if let Some(&(_, id)) = gone.iter().find(|_| self.rng.random_bool(0.3)) {
                    // A move: deleted above, added in this edit (at any level).
                    gone.retain(|&(_, g)| g != id);
                    id
                } else {
                    self.next_id += 1;
                    self.next_id
                };
                let live_there = v.tables(level).iter().any(|t| t.id == id)
                    && !e.deleted_tables.contains(&(level, id));
                let added_here = e.new_tables.iter().any(|(l, t)| *l == level && t.id == id);
                if !live_there && !added_here {
                    let t = self.table(id);
                    e.new_tables.push((level, t));
                }
            }
            self.retired.extend(
                e.deleted_tables
                    .iter()
                    .map(|&(_, id)| id)
                    .filter(|id| !e.new_tables.iter().any(|(_, t)| t.id == *id)),
            );
            if self.rng.random_bool(0.3) {
                let level = self.rng.random_range(0..LEVELS);
                let key = self.table(0).largest;
                e.compact_pointers.push((level, key));
            }
            if self.rng.random_bool(0.1) {
                e.db_id = Some([self.rng.random(); 16]);
            }
            for slot in 0..self.slots.len() {
                match self.slots[slot] {
                    Some(id) if self.rng.random_bool(0.2) => {
                        e.deleted_nvm_objects.push(id);
                        self.slots[slot] = None;
                    }
                    None if self.rng.random_bool(0.1) => {
                        self.next_id += 1;
                        let len = self.rng.random_range(1..=4096);
                        e.new_nvm_objects
                            .push(obj(self.next_id, slot as u64 * 4096, len));
                        self.slots[slot] = Some(self.next_id);
                    }
                    _ => {}
                }
            }
            e
        }

        /// `e` with one mistake that `Version::apply` refuses on a version where `e`
        /// applies (or nothing, if the mistake picked is impossible there).
        fn spoil(&mut self, v: &Version, mut e: VersionEdit) -> VersionEdit {
            let live: Vec<(usize, u64)> = v.all_tables().map(|(l, t)| (l, t.id)).collect();
            match self.rng.random_range(0..8) {
                0 => e.compact_pointers.push((LEVELS + 1, b"k".to_vec())),
                1 => e.deleted_tables.push((LEVELS, 1)),
                2 => {
                    let t = self.table(1);
                    e.new_tables.push((LEVELS + 3, t));
                }
                // A table deleted twice, or one that never was there.
                3 => match e.deleted_tables.first() {
                    Some(&d) => e.deleted_tables.push(d),
                    None => e.deleted_tables.push((0, 1 << 40)),
                },
                // A table added where it already is (from an earlier edit or this one).
                4 => match live.iter().find(|x| !e.deleted_tables.contains(x)) {
                    Some(&(level, id)) => {
                        let t = self.table(id);
                        e.new_tables.push((level, t));
                    }
                    None => {
                        let t = self.table(1 << 41);
                        e.new_tables.push((1, t.clone()));
                        e.new_tables.push((1, t));
                    }
                },
                // An NVM object overlapping a live one, or one with a live id.
                5 => match v.nvm_objects.values().next() {
                    Some(o) if self.rng.random_bool(0.5) => {
                        e.new_nvm_objects
                            .push(obj(1 << 42, o.offset + o.len - 1, 10));
                    }
                    Some(o) => e.new_nvm_objects.push(obj(o.id, 1 << 30, 10)),
                    None => {
                        e.new_nvm_objects.push(obj(1 << 42, 1 << 30, 100));
                        e.new_nvm_objects.push(obj(1 << 43, (1 << 30) + 50, 100));
                    }
                },
                // An NVM object whose extent overflows, next to a live one.
                6 => e.new_nvm_objects.push(obj(1 << 44, u64::MAX - 5, 10)),
                _ => e.deleted_nvm_objects.push(1 << 45),
            }
            e
        }
    }

    #[test]
    fn builder_equals_folding_apply_on_random_valid_edits() {
        for seed in 0..200 {
            let mut g = Gen::new(seed);
            // A base that is not empty, so that the builder also deletes and keeps base
            // tables.
            let mut base = Version::new(LEVELS);
            for _ in 0..g.rng.random_range(0..5) {
                let e = g.valid_edit(&base);
                base = base.apply(&e).unwrap();
            }
            let mut v = base.clone();
            let mut edits = Vec::new();
            for _ in 0..g.rng.random_range(1..80) {
                let e = g.valid_edit(&v);
                v = v.apply(&e).unwrap();
                edits.push(e);
            }
            let built = build(&base, &edits).unwrap();
            assert_same(&built, &v, &format!("seed {seed}"));
            assert_same(&built, &fold_both(&base, &edits).unwrap(), "fold");
            // Every prefix agrees too.
            let k = g.rng.random_range(0..edits.len());
            let folded = fold_both(&base, &edits[..k]).unwrap();
            assert_same(&build(&base, &edits[..k]).unwrap(), &folded, "prefix");
        }
    }

    #[test]
    fn builder_refuses_invalid_edits_as_apply_does() {
        let mut refused = 0;
        for seed in 0..300 {
            let mut g = Gen::new(1000 + seed);
            let base = Version::new(LEVELS);
            let mut v = base.clone();
            let mut edits = Vec::new();
            for _ in 0..g.rng.random_range(0..30) {
                let e = g.valid_edit(&v);
                v = v.apply(&e).unwrap();
                edits.push(e);
            }
            let e = g.valid_edit(&v);
            let bad = g.spoil(&v, e);
            edits.push(bad);
            // Edits after the bad one do not matter.
            edits.push(VersionEdit::default());
            let folded = fold_both(&base, &edits);
            let built = build(&base, &edits);
            match (&folded, &built) {
                (Err(f), Err(b)) => {
                    assert_eq!(f, b, "seed {seed}");
                    assert_eq!(f.0, edits.len() - 2, "seed {seed}: the spoiled edit fails");
                    refused += 1;
                }
                (Ok(f), Ok(b)) => assert_same(b, f, &format!("seed {seed}")),
                _ => panic!("seed {seed}: fold {folded:?} but builder {built:?}"),
            }
        }
        assert!(refused > 250, "only {refused} spoiled edits were refused");
    }

    #[test]
    fn unchanged_tables_keep_their_arc() {
        let base = Version::new(LEVELS)
            .apply(&VersionEdit {
                new_tables: vec![
                    (0, meta(1, "a", "c", (1, 1), 1)),
                    (1, meta(2, "a", "c", (1, 1), 1)),
                    (1, meta(3, "d", "f", (1, 1), 1)),
                ],
                ..VersionEdit::default()
            })
            .unwrap();
        let mut b = VersionBuilder::new(&base);
        b.apply(&VersionEdit {
            deleted_tables: vec![(1, 2)],
            new_tables: vec![(2, meta(4, "a", "c", (1, 1), 1))],
            ..VersionEdit::default()
        })
        .unwrap();
        b.apply(&VersionEdit {
            deleted_tables: vec![(2, 4)],
            new_tables: vec![(2, meta(2, "a", "c", (1, 1), 1))],
            ..VersionEdit::default()
        })
        .unwrap();
        let v = b.finish();
        assert!(Arc::ptr_eq(&v.tables(0)[0], &base.tables(0)[0]));
        assert!(Arc::ptr_eq(&v.tables(1)[0], &base.tables(1)[1]));
        let ids = |l: usize| v.tables(l).iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!((ids(0), ids(1), ids(2)), (vec![1], vec![3], vec![2]));
        // No edit at all gives the base back.
        let same = VersionBuilder::new(&base).finish();
        assert_same(&same, &base, "no edits");
        assert!(Arc::ptr_eq(&same.tables(1)[1], &base.tables(1)[1]));
    }

    #[test]
    fn earlier_edits_of_the_builder_count() {
        let base = Version::new(LEVELS);
        let mut b = VersionBuilder::new(&base);
        let add = VersionEdit {
            new_tables: vec![(1, meta(7, "a", "b", (1, 1), 1))],
            new_nvm_objects: vec![obj(8, 0, 4096)],
            ..VersionEdit::default()
        };
        b.apply(&add).unwrap();
        let err = b.apply(&add).unwrap_err();
        assert!(
            err.to_string().contains("table 7 added twice at level 1"),
            "{err}"
        );

        let mut b = VersionBuilder::new(&base);
        b.apply(&add).unwrap();
        let err = b
            .apply(&VersionEdit {
                new_nvm_objects: vec![obj(9, 4095, 1)],
                ..VersionEdit::default()
            })
            .unwrap_err();
        assert!(err.to_string().contains("NVM object 9"), "{err}");

        let mut b = VersionBuilder::new(&base);
        b.apply(&add).unwrap();
        b.apply(&VersionEdit {
            deleted_tables: vec![(1, 7)],
            deleted_nvm_objects: vec![8],
            ..VersionEdit::default()
        })
        .unwrap();
        for again in [
            VersionEdit {
                deleted_tables: vec![(1, 7)],
                ..VersionEdit::default()
            },
            VersionEdit {
                deleted_nvm_objects: vec![8],
                ..VersionEdit::default()
            },
        ] {
            let mut b2 = VersionBuilder::new(&base);
            b2.apply(&add).unwrap();
            b2.apply(&VersionEdit {
                deleted_tables: vec![(1, 7)],
                deleted_nvm_objects: vec![8],
                ..VersionEdit::default()
            })
            .unwrap();
            assert!(matches!(b2.apply(&again), Err(Error::Corruption { .. })));
        }
        // Deleted, the table and the object may come back.
        b.apply(&add).unwrap();
        let v = b.finish();
        assert_eq!(v.num_files(1), 1);
        assert_eq!(v.nvm_objects.len(), 1);
    }

    #[test]
    fn an_nvm_extent_ending_past_u64_max_is_checked_without_overflow() {
        let base = Version::new(LEVELS);
        let mut b = VersionBuilder::new(&base);
        // Accepted: nothing is live for it to overlap.
        b.apply(&VersionEdit {
            new_nvm_objects: vec![obj(1, u64::MAX - 5, 10)],
            ..VersionEdit::default()
        })
        .unwrap();
        // Its extent reaches to the end of the pool: an object inside it overlaps, one
        // before it does not.
        let inside = VersionEdit {
            new_nvm_objects: vec![obj(2, u64::MAX - 3, 1)],
            ..VersionEdit::default()
        };
        assert!(matches!(b.apply(&inside), Err(Error::Corruption { .. })));
        let mut b = VersionBuilder::new(&base);
        b.apply(&VersionEdit {
            new_nvm_objects: vec![obj(1, u64::MAX - 5, 10), obj(3, 0, 4096)],
            ..VersionEdit::default()
        })
        .unwrap();
        assert_eq!(b.finish().nvm_objects.len(), 2);
    }
}
