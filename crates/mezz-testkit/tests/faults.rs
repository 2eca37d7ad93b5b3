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
use mezzanine::{Db, Error, Options, WriteOptions};
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
