//! Fault-injection tests: a `FaultFs` over a `MemFs` fails writes or syncs during flushes,
//! compactions and manifest updates. The database must report the failure (later writes
//! get `Error::Background`), keep serving reads, never panic, and, reopened on the clean
//! file system after a power cut, hold every write acknowledged with `sync`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use mezz_env::{CrashOptions, FaultFs, FaultOp, FaultRule, KeepUnsynced, MemFs, Trigger};
use mezzanine::{Db, Error, Options, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const DIR: &str = "db";
const SYNC: WriteOptions = WriteOptions { sync: true };

fn options(fs: Arc<dyn mezz_env::FileSystem>) -> Options {
    let mut o = Options::default();
    o.fs = fs;
    o.write_buffer_size = 64 * 1024;
    o.target_file_size = 16 * 1024;
    o.max_bytes_for_level_base = 64 * 1024;
    o.level0_compaction_trigger = 8;
    o.level0_slowdown_trigger = 20;
    o.level0_stop_trigger = 36;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(tag: usize) -> Vec<u8> {
    mezz_testkit::make_value(tag as u64, 40 + tag % 60)
}

/// A database over a `FaultFs` over a `MemFs`.
struct Setup {
    mem: MemFs,
    faults: FaultFs,
    db: Db,
    expected: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Setup {
    fn new() -> Self {
        let mem = MemFs::new();
        let faults = FaultFs::new(Arc::new(mem.clone()));
        let db = Db::open(DIR, options(Arc::new(faults.clone()))).unwrap();
        Self {
            mem,
            faults,
            db,
            expected: BTreeMap::new(),
        }
    }

    /// Synced puts of keys `range`, all acknowledged.
    fn put_synced(&mut self, range: std::ops::Range<usize>, tag: usize) {
        for i in range {
            let v = value(tag + i);
            self.db.put_opt(&SYNC, &key(i), &v).unwrap();
            self.expected.insert(key(i), v);
        }
    }

    fn reads_still_work(&self) {
        for (k, v) in &self.expected {
            assert_eq!(self.db.get(k).unwrap().as_ref(), Some(v), "{k:?}");
        }
    }

    /// Later writes are refused with `Error::Background`.
    fn writes_are_refused(&self) {
        let e = self.db.put(b"after", b"failure").unwrap_err();
        assert!(
            matches!(e, Error::Background(_)),
            "expected Background, got {e}"
        );
    }

    /// A power cut now, then a reopen on the clean file system: every acknowledged synced
    /// write is there.
    fn power_cut_and_check(self) {
        let durable = self.mem.crash_clone(&CrashOptions {
            keep_unsynced: KeepUnsynced::None,
            seed: 7,
        });
        drop(self.db);
        let db = Db::open(DIR, options(Arc::new(durable))).unwrap();
        for (k, v) in &self.expected {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{k:?} lost");
        }
        db.verify().unwrap();
    }
}

#[test]
fn sst_write_error_during_flush() {
    let mut s = Setup::new();
    s.put_synced(0..200, 0);
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Write), Trigger::After(0)).on_path(".sst"));
    assert!(
        s.db.flush().is_err(),
        "flush must report the failed table write"
    );
    assert!(s.faults.injected() > 0);
    s.writes_are_refused();
    s.reads_still_work();
    s.power_cut_and_check();
}

#[test]
fn sst_sync_error_during_flush() {
    let mut s = Setup::new();
    s.put_synced(0..200, 0);
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Sync), Trigger::After(0)).on_path(".sst"));
    assert!(
        s.db.flush().is_err(),
        "flush must report the failed table sync"
    );
    s.writes_are_refused();
    s.reads_still_work();
    s.power_cut_and_check();
}

#[test]
fn manifest_write_error_during_flush() {
    let mut s = Setup::new();
    s.put_synced(0..200, 0);
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Write), Trigger::After(0)).on_path("MANIFEST"));
    assert!(
        s.db.flush().is_err(),
        "flush must report the failed manifest write"
    );
    s.writes_are_refused();
    s.reads_still_work();
    s.power_cut_and_check();
}

#[test]
fn sst_write_error_during_compaction() {
    let mut s = Setup::new();
    for round in 0..4 {
        s.put_synced(round * 100..round * 100 + 150, round * 1_000);
        s.db.flush().unwrap();
    }
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Write), Trigger::After(0)).on_path(".sst"));
    assert!(
        s.db.compact_range(None, None).is_err(),
        "compaction must report the failed table write"
    );
    s.writes_are_refused();
    s.reads_still_work();
    s.power_cut_and_check();
}

/// A failed WAL sync: that write is not acknowledged, nothing panics, and everything
/// acknowledged before it survives a power cut.
#[test]
fn wal_sync_error() {
    let mut s = Setup::new();
    s.put_synced(0..50, 0);
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Sync), Trigger::Once(0)).on_path(".log"));
    let r = s.db.put_opt(&SYNC, b"unlucky", b"write");
    assert!(
        r.is_err(),
        "a write whose WAL sync failed must not be acknowledged"
    );
    s.reads_still_work();
    s.power_cut_and_check();
}

/// Per key: the last acknowledged value, and the values of later writes that failed (which
/// may or may not have reached the WAL).
type Outcomes = (Option<Vec<u8>>, Vec<Vec<u8>>);

/// Whether `db` holds, for every key, its acknowledged value or one of its failed ones.
fn holds_acknowledged(db: &Db, state: &BTreeMap<Vec<u8>, Outcomes>, when: &str) {
    for (k, (acked, failed)) in state {
        let got = db
            .get(k)
            .unwrap_or_else(|e| panic!("{when}: get {:?}: {e}", String::from_utf8_lossy(k)));
        let ok = got == *acked || got.as_ref().is_some_and(|g| failed.contains(g));
        assert!(
            ok,
            "{when}: {:?} holds a value of length {:?}, acknowledged length {:?}",
            String::from_utf8_lossy(k),
            got.map(|g| g.len()),
            acked.as_ref().map(Vec::len)
        );
    }
}

/// Random write and sync failures on every file while a workload of synced puts runs, with
/// flushes and compactions in the background. After each failure the process "restarts"
/// (the handle is dropped and the database reopened on the same files, faults off during
/// the open) and the workload goes on. No panic; after every restart and after a final
/// power cut every acknowledged write is there (a key whose later write failed may hold
/// either value).
#[test]
fn random_faults_never_lose_acknowledged_writes() {
    for seed in 0..4u64 {
        let mem = MemFs::new();
        let faults = FaultFs::new(Arc::new(mem.clone()));
        let mut o = options(Arc::new(faults.clone()));
        o.write_buffer_size = 8 * 1024;
        o.level0_compaction_trigger = 2;
        let mut db = Db::open(DIR, o.clone()).unwrap();
        for op in [FaultOp::Write, FaultOp::Sync] {
            faults.add_rule(FaultRule::new(
                Some(op),
                Trigger::Probability {
                    p: 0.01,
                    seed: seed * 10 + op as u64,
                },
            ));
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let mut state: BTreeMap<Vec<u8>, Outcomes> = BTreeMap::new();
        let (mut acked, mut restarts) = (0, 0);
        for n in 0..1_500 {
            let k = key(rng.random_range(0..100));
            let v = value(seed as usize * 10_000 + n);
            let entry = state.entry(k.clone()).or_default();
            match db.put_opt(&SYNC, &k, &v) {
                Ok(()) => {
                    *entry = (Some(v), Vec::new());
                    acked += 1;
                }
                Err(_) => {
                    entry.1.push(v);
                    faults.set_enabled(false);
                    drop(db);
                    db = Db::open(DIR, o.clone())
                        .unwrap_or_else(|e| panic!("seed {seed}, op {n}: reopen: {e}"));
                    restarts += 1;
                    holds_acknowledged(&db, &state, &format!("seed {seed}, restart {restarts}"));
                    faults.set_enabled(true);
                }
            }
        }
        assert!(
            restarts > 0 && acked > 500,
            "seed {seed}: {restarts} restarts, {acked} acked"
        );
        let durable = mem.crash_clone(&CrashOptions {
            keep_unsynced: KeepUnsynced::None,
            seed,
        });
        drop(db);
        let db = Db::open(DIR, options(Arc::new(durable))).unwrap();
        holds_acknowledged(&db, &state, &format!("seed {seed}, after a power cut"));
    }
}

/// Read errors on tables are errors, never "absent" and never an older version from a lower
/// level: with new versions in L0 over old ones in L1 and random read failures, every get
/// and every scanned entry is the newest value or an error.
#[test]
fn table_read_errors_never_surface_older_versions() {
    let mem = MemFs::new();
    let faults = FaultFs::new(Arc::new(mem.clone()));
    let mut o = options(Arc::new(faults.clone()));
    o.block_cache_capacity = 0;
    o.block_size = 512;
    let db = Db::open(DIR, o).unwrap();
    let n = 300;
    for i in 0..n {
        db.put(&key(i), &value(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..n {
        db.put(&key(i), &value(10_000 + i)).unwrap();
    }
    db.flush().unwrap();
    faults.add_rule(
        FaultRule::new(
            Some(FaultOp::Read),
            Trigger::Probability { p: 0.2, seed: 5 },
        )
        .on_path(".sst"),
    );
    let mut errors = 0;
    for i in 0..n {
        match db.get(&key(i)) {
            Ok(v) => assert_eq!(v, Some(value(10_000 + i)), "get key {i}"),
            Err(_) => errors += 1,
        }
    }
    for round in 0..20 {
        let mut it = db.cursor(&mezzanine::ReadOptions::default()).unwrap();
        it.seek_to_first();
        while it.valid() {
            let i: usize = std::str::from_utf8(&it.key()[3..])
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(
                it.value(),
                value(10_000 + i).as_slice(),
                "scan {round}: key {i} shows an overwritten value"
            );
            it.next();
        }
        if it.status().is_err() {
            errors += 1;
        }
    }
    assert!(faults.injected() > 0 && errors > 0);
    faults.set_enabled(false);
    for i in 0..n {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(10_000 + i)));
    }
}

/// Failing to delete obsolete files loses nothing and panics nowhere.
#[test]
fn failed_file_removal_loses_nothing() {
    let mut s = Setup::new();
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Remove), Trigger::After(0)));
    for round in 0..4 {
        s.put_synced(round * 50..round * 50 + 120, round * 1_000);
        let _ = s.db.flush();
    }
    let _ = s.db.compact_range(None, None);
    s.reads_still_work();
    s.faults.clear_rules();
    s.power_cut_and_check();
}

/// A rename failure while opening (installing CURRENT) fails the open cleanly; a later open
/// without faults finds everything.
#[test]
fn rename_error_during_open() {
    let mut s = Setup::new();
    s.put_synced(0..100, 0);
    s.db.close().unwrap();
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Rename), Trigger::After(0)));
    let r = Db::open(DIR, options(Arc::new(s.faults.clone())));
    assert!(r.is_err(), "open must report the failed rename");
    drop(r);
    s.faults.clear_rules();
    s.db = Db::open(DIR, options(Arc::new(s.faults.clone()))).unwrap();
    s.reads_still_work();
    s.power_cut_and_check();
}

// ---- Column families ----
//
// The same rules with two column families besides the default one (`cf-1/`, `cf-2/`, each
// with options of its own): faults while batches span the families, during the flush that
// switches and flushes every family together, during a family's compaction, while a
// family is created or dropped, and while the database reopens. Every acknowledged write
// of every family survives; a failed batch is present in every family it wrote or in none.

/// Names of the families besides the default one (ids 1 and 2).
const FAMILIES: [&str; 2] = ["fam-a", "fam-b"];

/// Options of family `i` of [`FAMILIES`]: another memtable and block size, compression.
fn family_opts(i: usize) -> Options {
    let mut o = Options::default();
    if i == 0 {
        o.write_buffer_size = 32 * 1024;
        o.block_size = 1024;
        o.target_file_size = 16 * 1024;
        o.max_bytes_for_level_base = 64 * 1024;
    } else {
        o.block_size = 4096;
        o.bloom_bits_per_key = 16;
        o.set("compression", "lz4").unwrap();
    }
    o
}

/// A value of family `f` (0 = default), distinct across families.
fn fam_value(f: usize, tag: usize) -> Vec<u8> {
    mezz_testkit::make_value(((f as u64) << 40) | tag as u64, 40 + tag % 60)
}

/// One map per live family, by name.
type FamilyState = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// A database with families over a `FaultFs` over a `MemFs`.
struct FamSetup {
    mem: MemFs,
    faults: FaultFs,
    db: Db,
    expected: FamilyState,
}

impl FamSetup {
    fn new() -> Self {
        let mem = MemFs::new();
        let faults = FaultFs::new(Arc::new(mem.clone()));
        let db = Db::open(DIR, options(Arc::new(faults.clone()))).unwrap();
        let mut expected = FamilyState::new();
        expected.insert("default".into(), BTreeMap::new());
        for (i, name) in FAMILIES.iter().enumerate() {
            db.create_column_family(name, &family_opts(i)).unwrap();
            expected.insert((*name).into(), BTreeMap::new());
        }
        Self {
            mem,
            faults,
            db,
            expected,
        }
    }

    fn cf(&self, name: &str) -> mezzanine::ColumnFamily {
        self.db.column_family(name).expect(name)
    }

    /// Synced batches, one per key of `range`, each writing the key in every family.
    fn batches_synced(&mut self, range: std::ops::Range<usize>, tag: usize) {
        let names: Vec<String> = self.expected.keys().cloned().collect();
        for i in range {
            let mut b = WriteBatch::new();
            let mut wrote = Vec::new();
            for (f, name) in names.iter().enumerate() {
                let v = fam_value(f, tag + i);
                b.put_cf(&self.cf(name), &key(i), &v);
                wrote.push((name.clone(), v));
            }
            self.db.write(&SYNC, b).unwrap();
            for (name, v) in wrote {
                self.expected.get_mut(&name).unwrap().insert(key(i), v);
            }
        }
    }

    fn reads_still_work(&self) {
        holds_exactly(&self.db, &self.expected, "live");
    }

    /// Later writes to every family are refused with `Error::Background`.
    fn writes_are_refused(&self) {
        for name in self.expected.keys() {
            let e = self
                .db
                .put_cf(&self.cf(name), b"after", b"failure")
                .unwrap_err();
            assert!(
                matches!(e, Error::Background(_)),
                "{name}: expected Background, got {e}"
            );
        }
    }

    /// A power cut now, then a reopen on the clean file system: every family holds every
    /// acknowledged write.
    fn power_cut_and_check(self) {
        let durable = self.mem.crash_clone(&CrashOptions {
            keep_unsynced: KeepUnsynced::None,
            seed: 7,
        });
        drop(self.db);
        let db = Db::open(DIR, options(Arc::new(durable))).unwrap();
        holds_exactly(&db, &self.expected, "after a power cut");
        db.verify().unwrap();
    }
}

/// Every family named in `state` is live in `db` and holds exactly its map (gets and a
/// scan); no other family is live.
fn holds_exactly(db: &Db, state: &FamilyState, when: &str) {
    let mut names: Vec<String> = state.keys().cloned().collect();
    names.sort_by_key(|n| (n != "default", db.column_family(n).map(|c| c.id())));
    assert_eq!(db.column_families(), names, "{when}: the live families");
    for (name, map) in state {
        let cf = db.column_family(name).unwrap();
        for (k, v) in map {
            let got = db
                .get_cf(&cf, k)
                .unwrap_or_else(|e| panic!("{when}: {name}: get {k:?}: {e}"));
            assert_eq!(got.as_ref(), Some(v), "{when}: {name}: {k:?}");
        }
        let mut it = db
            .cursor_cf(&cf, &mezzanine::ReadOptions::default())
            .unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            assert_eq!(
                map.get(it.key()).map(Vec::as_slice),
                Some(it.value()),
                "{when}: {name}: scan shows {:?}",
                String::from_utf8_lossy(it.key())
            );
            n += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(n, map.len(), "{when}: {name}: scan length");
    }
}

/// A fault during the flush that flushes every family (tables, table syncs and manifests
/// of one family): the flush reports it, the family refuses later writes, reads of every
/// family work, and a power cut keeps every acknowledged batch.
#[test]
fn family_errors_during_flush() {
    for (op, path) in [
        (FaultOp::Write, "cf-1/0"),
        (FaultOp::Sync, "cf-2/0"),
        (FaultOp::Write, "cf-1/MANIFEST"),
        (FaultOp::Sync, "cf-2/MANIFEST"),
    ] {
        let mut s = FamSetup::new();
        s.batches_synced(0..200, 0);
        s.faults
            .add_rule(FaultRule::new(Some(op), Trigger::After(0)).on_path(path));
        assert!(
            s.db.flush().is_err(),
            "{op:?} on {path}: flush must report the failure"
        );
        assert!(
            s.faults.injected() > 0,
            "{op:?} on {path}: nothing injected"
        );
        s.writes_are_refused();
        s.reads_still_work();
        s.power_cut_and_check();
    }
}

/// A failed table write in a family's compaction.
#[test]
fn family_table_write_error_during_compaction() {
    let mut s = FamSetup::new();
    for round in 0..4 {
        s.batches_synced(round * 100..round * 100 + 150, round * 1_000);
        s.db.flush().unwrap();
    }
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Write), Trigger::After(0)).on_path("cf-1/0"));
    let cf = s.cf("fam-a");
    assert!(
        s.db.compact_range_cf(&cf, None, None).is_err(),
        "compaction must report the failed table write"
    );
    s.reads_still_work();
    s.power_cut_and_check();
}

/// A failed WAL sync of a batch spanning the families: not acknowledged; after a process
/// crash the batch is in every family or in none, and a power cut keeps everything
/// acknowledged before it.
#[test]
fn wal_sync_error_on_a_batch_across_families() {
    let mut s = FamSetup::new();
    s.batches_synced(0..50, 0);
    s.faults
        .add_rule(FaultRule::new(Some(FaultOp::Sync), Trigger::Once(0)).on_path(".log"));
    let mut b = WriteBatch::new();
    for name in s.expected.keys() {
        b.put_cf(&s.cf(name), b"unlucky", name.as_bytes());
    }
    assert!(
        s.db.write(&SYNC, b).is_err(),
        "a batch whose WAL sync failed must not be acknowledged"
    );
    s.reads_still_work();
    let crashed = s.mem.crash_clone(&CrashOptions {
        keep_unsynced: KeepUnsynced::All,
        seed: 3,
    });
    let db = Db::open(DIR, options(Arc::new(crashed))).unwrap();
    let present: Vec<bool> = s
        .expected
        .keys()
        .map(|n| {
            let got = db
                .get_cf(&db.column_family(n).unwrap(), b"unlucky")
                .unwrap();
            assert!(
                got.is_none() || got.as_deref() == Some(n.as_bytes()),
                "{n}: {got:?}"
            );
            got.is_some()
        })
        .collect();
    assert!(
        present.iter().all(|&p| p) || present.iter().all(|&p| !p),
        "a failed batch is in some families only: {present:?}"
    );
    drop(db);
    s.faults.clear_rules();
    s.power_cut_and_check();
}

/// Faults while a family is created (in its directory, in a sync of a directory under the
/// database's, or in the database's manifest that records it) or dropped (the record, or the deletion of its files): the call reports the
/// failure; after a process crash or a power cut and a clean reopen, a family whose
/// creation failed is absent or empty, a family whose drop failed is gone or holds every
/// acknowledged write, and the other families hold theirs.
#[test]
fn faults_while_families_are_created_and_dropped() {
    let cases: [(&str, FaultOp, &str); 7] = [
        ("create", FaultOp::Create, "cf-3/"),
        ("create", FaultOp::SyncDir, DIR),
        ("create", FaultOp::Write, "db/MANIFEST"),
        ("create", FaultOp::Sync, "db/MANIFEST"),
        ("drop", FaultOp::Write, "db/MANIFEST"),
        ("drop", FaultOp::Sync, "db/MANIFEST"),
        ("drop", FaultOp::Remove, "cf-2/"),
    ];
    for (call, op, path) in cases {
        for keep in [KeepUnsynced::All, KeepUnsynced::None] {
            let what = format!("{call} with {op:?} failing on {path}, then {keep:?}");
            let mut s = FamSetup::new();
            s.batches_synced(0..120, 0);
            s.db.flush().unwrap();
            s.batches_synced(100..160, 5_000);
            s.faults
                .add_rule(FaultRule::new(Some(op), Trigger::After(0)).on_path(path));
            let r = match call {
                "create" => {
                    s.db.create_column_family("fam-c", &family_opts(0))
                        .map(|_| ())
                }
                _ => s.db.drop_column_family(&s.cf("fam-b")),
            };
            assert!(s.faults.injected() > 0, "{what}: nothing injected");
            if op != FaultOp::Remove {
                assert!(r.is_err(), "{what}: the call must report the failure");
            }
            let crashed = s.mem.crash_clone(&CrashOptions {
                keep_unsynced: keep,
                seed: 11,
            });
            drop(s.db);
            let mut o = options(Arc::new(crashed.clone()));
            o.fs = Arc::new(crashed);
            let db = Db::open(DIR, o).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let mut state = s.expected.clone();
            match call {
                "create" => {
                    if let Some(cf) = db.column_family("fam-c") {
                        assert_eq!(
                            db.get_cf(&cf, &key(1)).unwrap(),
                            None,
                            "{what}: fam-c holds data"
                        );
                        state.insert("fam-c".into(), BTreeMap::new());
                    }
                }
                _ => {
                    if db.column_family("fam-b").is_none() {
                        state.remove("fam-b");
                    }
                }
            }
            holds_exactly(&db, &state, &what);
            db.verify().unwrap();
            // The database goes on: a family can be created and written.
            let cf = db.create_column_family("fam-d", &family_opts(1)).unwrap();
            db.put_cf(&cf, b"k", b"v").unwrap();
            db.flush().unwrap();
            db.close().unwrap();
        }
    }
}

/// An update of a batch: family, key, value (`None`: a deletion).
type Update = (String, Vec<u8>, Option<Vec<u8>>);

/// Per family and key: the last acknowledged value, and the values of later writes that
/// failed (which may or may not have been applied).
type FamilyOutcomes = BTreeMap<String, BTreeMap<Vec<u8>, Outcomes>>;

/// Checks `db` against `state` after a restart: every key holds its acknowledged value or
/// one of its failed ones (an empty one: absent, a failed deletion); the failed batch
/// `last_failed` (family, key, value or `None` for a deletion) is present
/// whole or absent whole, and `state` is updated to what the database now holds (a failed
/// write that did not survive this reopen can never appear later).
fn settle(db: &Db, state: &mut FamilyOutcomes, last_failed: &[Update], when: &str) {
    // The failed batch's updates that change what was acknowledged (deleting an absent
    // key cannot tell whether the batch survived).
    let telling: Vec<_> = last_failed
        .iter()
        .filter(|(name, k, v)| state[name].get(k).map_or(&None, |o| &o.0) != v)
        .collect();
    let live: Vec<String> = db.column_families();
    for (name, keys) in state.iter_mut() {
        assert!(live.contains(name), "{when}: family {name} is gone");
        let cf = db.column_family(name).unwrap();
        for (k, (acked, failed)) in keys.iter_mut() {
            let got = db
                .get_cf(&cf, k)
                .unwrap_or_else(|e| panic!("{when}: {name}: get {k:?}: {e}"));
            let ok = got == *acked || failed.contains(got.as_ref().unwrap_or(&Vec::new()));
            assert!(
                ok,
                "{when}: {name}: {:?} holds a value of length {:?}, acknowledged length {:?}",
                String::from_utf8_lossy(k),
                got.as_ref().map(Vec::len),
                acked.as_ref().map(Vec::len)
            );
            *acked = got;
            failed.clear();
        }
    }
    if !telling.is_empty() {
        let present: Vec<bool> = telling
            .iter()
            .map(|(name, k, v)| state[name][k].0 == *v)
            .collect();
        assert!(
            present.iter().all(|&p| p) || present.iter().all(|&p| !p),
            "{when}: a failed batch across families survived in part: {present:?}"
        );
    }
}

/// The random-fault workload with families: synced batches over random families (each a
/// few keys in one to three families, the same key in several), single puts and deletes
/// in a family, flushes, family flushes and compactions, and a fourth family created and
/// dropped now and then, while writes and syncs fail at random. After each failure the
/// process restarts (the handle is dropped and the database reopened on the same files,
/// one reopen in four with the faults still on: a failed reopen is retried without them).
/// After every restart each family holds its acknowledged writes, the failed batch is
/// whole or absent, and a final power cut keeps everything. `MEZZ_FAULT_SEED=<s>` runs one
/// seed; `MEZZ_FAULT_OPS=<n>` changes the length.
#[test]
fn random_faults_across_families_never_lose_acknowledged_writes() {
    let seeds: Vec<u64> = match std::env::var("MEZZ_FAULT_SEED") {
        Ok(s) => vec![s.parse().expect("MEZZ_FAULT_SEED")],
        Err(_) => (0..3).collect(),
    };
    let ops: usize = std::env::var("MEZZ_FAULT_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(800);
    for seed in seeds {
        random_faults_with_families(seed, ops);
    }
}

fn random_faults_with_families(seed: u64, ops: usize) {
    let ctx = |n: usize| format!("seed {seed}, op {n} (rerun: MEZZ_FAULT_SEED={seed})");
    let mem = MemFs::new();
    let faults = FaultFs::new(Arc::new(mem.clone()));
    let mut o = options(Arc::new(faults.clone()));
    o.write_buffer_size = 8 * 1024;
    o.level0_compaction_trigger = 2;
    let mut db = Db::open(DIR, o.clone()).unwrap();
    let mut state: FamilyOutcomes = BTreeMap::new();
    state.insert("default".into(), BTreeMap::new());
    for (i, name) in FAMILIES.iter().enumerate() {
        let mut fo = family_opts(i);
        fo.write_buffer_size = 4 * 1024 * (i + 1);
        fo.level0_compaction_trigger = 2;
        db.create_column_family(name, &fo).unwrap();
        state.insert((*name).into(), BTreeMap::new());
    }
    for op in [FaultOp::Write, FaultOp::Sync] {
        faults.add_rule(FaultRule::new(
            Some(op),
            Trigger::Probability {
                p: 0.01,
                seed: seed * 10 + op as u64,
            },
        ));
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut acked, mut restarts, mut transient) = (0, 0, 0);
    for n in 0..ops {
        let names: Vec<String> = state.keys().cloned().collect();
        // What the op writes (family, key, value; `None` deletes), or none.
        let mut writes: Vec<Update> = Vec::new();
        // The family the op creates or drops.
        let mut pending_family: Option<String> = None;
        let r: mezzanine::Result<()> = match rng.random_range(0..100) {
            0..85 => {
                let mut b = WriteBatch::new();
                if rng.random_range(0..100) < 80 {
                    let k = key(rng.random_range(0..80));
                    for (f, name) in names.iter().enumerate() {
                        if rng.random_bool(0.6) || f == 0 && writes.is_empty() {
                            let v = fam_value(f, seed as usize * 100_000 + n);
                            let cf = db.column_family(name).unwrap();
                            b.put_cf(&cf, &k, &v);
                            writes.push((name.clone(), k.clone(), Some(v)));
                        }
                    }
                }
                // One more update: a put or a deletion of another key, in any family.
                let k2 = key(80 + rng.random_range(0..40));
                let name = &names[rng.random_range(0..names.len())];
                let cf = db.column_family(name).unwrap();
                if rng.random_bool(0.7) {
                    let v = fam_value(7, seed as usize * 100_000 + n);
                    b.put_cf(&cf, &k2, &v);
                    writes.push((name.clone(), k2, Some(v)));
                } else {
                    b.delete_cf(&cf, &k2);
                    writes.push((name.clone(), k2, None));
                }
                db.write(&SYNC, b)
            }
            85..90 => db.flush(),
            90..94 => {
                let name = &names[rng.random_range(0..names.len())];
                db.flush_cf(&db.column_family(name).unwrap())
            }
            94..96 => {
                let name = &names[rng.random_range(0..names.len())];
                db.compact_range_cf(&db.column_family(name).unwrap(), None, None)
            }
            _ => match names.iter().find(|n| n.starts_with("tmp-")) {
                Some(name) => {
                    pending_family = Some(name.clone());
                    let r = db.drop_column_family(&db.column_family(name).unwrap());
                    if r.is_ok() {
                        state.remove(name);
                    }
                    r
                }
                None => {
                    transient += 1;
                    let name = format!("tmp-{transient}");
                    pending_family = Some(name.clone());
                    let r = db
                        .create_column_family(&name, &family_opts(transient % 2))
                        .map(|_| ());
                    if r.is_ok() {
                        state.insert(name, BTreeMap::new());
                    }
                    r
                }
            },
        };
        match r {
            Ok(()) => {
                for (name, k, v) in writes {
                    state.get_mut(&name).unwrap().insert(k, (v, Vec::new()));
                }
                acked += 1;
            }
            Err(_) => {
                for (name, k, v) in &writes {
                    // A failed deletion: "absent" is a possible outcome (an empty value
                    // stands for it; no value written is empty).
                    state
                        .get_mut(name)
                        .unwrap()
                        .entry(k.clone())
                        .or_default()
                        .1
                        .push(v.clone().unwrap_or_default());
                }
                drop(db);
                restarts += 1;
                let with_faults = rng.random_bool(0.25);
                faults.set_enabled(with_faults);
                db = match Db::open(DIR, o.clone()) {
                    Ok(db) => db,
                    Err(e) => {
                        assert!(with_faults, "{}: reopen: {e}", ctx(n));
                        faults.set_enabled(false);
                        Db::open(DIR, o.clone())
                            .unwrap_or_else(|e| panic!("{}: second reopen: {e}", ctx(n)))
                    }
                };
                faults.set_enabled(false);
                // Only the family whose create or drop failed may have come or gone; one
                // that came is empty.
                for name in db.column_families() {
                    if let std::collections::btree_map::Entry::Vacant(slot) =
                        state.entry(name.clone())
                    {
                        assert_eq!(
                            Some(&name),
                            pending_family.as_ref(),
                            "{}: family {name} appeared",
                            ctx(n)
                        );
                        let cf = db.column_family(&name).unwrap();
                        let mut it = db
                            .cursor_cf(&cf, &mezzanine::ReadOptions::default())
                            .unwrap();
                        it.seek_to_first();
                        assert!(!it.valid(), "{}: family {name} came with data", ctx(n));
                        slot.insert(BTreeMap::new());
                    }
                }
                state.retain(|name, _| {
                    let gone = db.column_family(name).is_none();
                    assert!(
                        !gone || Some(name) == pending_family.as_ref(),
                        "{}: family {name} is gone",
                        ctx(n)
                    );
                    !gone
                });
                settle(
                    &db,
                    &mut state,
                    &writes,
                    &format!("{}, restart {restarts}", ctx(n)),
                );
                faults.set_enabled(true);
            }
        }
    }
    eprintln!("seed {seed}: {ops} ops, {acked} acknowledged, {restarts} restarts");
    assert!(
        restarts > 0 && acked > ops / 3,
        "seed {seed}: {restarts} restarts, {acked} acked"
    );
    let durable = mem.crash_clone(&CrashOptions {
        keep_unsynced: KeepUnsynced::None,
        seed,
    });
    drop(db);
    let db = Db::open(DIR, options(Arc::new(durable))).unwrap();
    settle(
        &db,
        &mut state,
        &[],
        &format!("seed {seed}, after a power cut (rerun: MEZZ_FAULT_SEED={seed})"),
    );
    db.verify().unwrap();
}
