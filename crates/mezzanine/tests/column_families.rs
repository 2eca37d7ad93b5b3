//! Column families end to end: create, drop and list; per-family reads and writes; batches
//! spanning families; snapshots across families; flush, compaction and reopen; per-family
//! options (memtable size, NVM off or on) in effect after a reopen; transactions and
//! indexed batches over the default family beside other families.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::nvm_dir;
use mezzanine::{ColumnFamily, Db, Error, Options, Preset, ReadOptions, WriteBatch, WriteOptions};

fn small() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        block_size: 1024,
        ..Options::default()
    }
}

fn scan_cf(db: &Db, cf: &ColumnFamily, opts: &ReadOptions) -> BTreeMap<Vec<u8>, Vec<u8>> {
    common::collect(db.cursor_cf(cf, opts).unwrap())
}

fn family_dirs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cf-"))
        .collect();
    v.sort();
    v
}

#[test]
fn families_are_separate_key_spaces_that_survive_reopen_and_drop() {
    let dir = tempfile::tempdir().unwrap();
    let o = small();
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let a = db.create_column_family("a", &small()).unwrap();
        let b = db.create_column_family("b", &small()).unwrap();
        assert!(matches!(
            db.create_column_family("a", &small()),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            db.create_column_family("default", &small()),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(db.column_families(), vec!["default", "a", "b"]);
        db.put(b"k", b"default").unwrap();
        db.put_cf(&a, b"k", b"in a").unwrap();
        db.put_cf(&b, b"k", b"in b").unwrap();
        let mut batch = WriteBatch::new();
        batch.put_cf(&a, b"x", b"1");
        batch.put_cf(&b, b"y", b"2");
        batch.put(b"z", b"3");
        batch.delete_cf(&b, b"k");
        db.write(&WriteOptions::default(), batch).unwrap();
        assert_eq!(db.get(b"k").unwrap().unwrap(), b"default");
        assert_eq!(db.get_cf(&a, b"k").unwrap().unwrap(), b"in a");
        assert_eq!(db.get_cf(&b, b"k").unwrap(), None);
        assert_eq!(db.get_cf(&a, b"y").unwrap(), None);
        assert_eq!(db.get_cf(&b, b"y").unwrap().unwrap(), b"2");
        assert_eq!(db.get(b"x").unwrap(), None);
        let ro = ReadOptions::default();
        assert_eq!(
            db.multi_get_cf(&a, &ro, [&b"x"[..], b"k", b"nope"])
                .unwrap(),
            vec![Some(b"1".to_vec()), Some(b"in a".to_vec()), None]
        );
        assert_eq!(scan_cf(&db, &a, &ro).len(), 2);
        // The default family through its handle.
        let d = db.column_family("default").unwrap();
        assert_eq!(db.get_cf(&d, b"z").unwrap().unwrap(), b"3");
        assert!(db.drop_column_family(&d).is_err());
        // A batch naming a family that does not exist is refused.
        let mut bad = WriteBatch::new();
        bad.put_cf(&99, b"k", b"v");
        assert!(matches!(
            db.write(&WriteOptions::default(), bad),
            Err(Error::InvalidArgument(_))
        ));
        db.close().unwrap();
    }
    assert_eq!(
        Db::list_column_families(dir.path(), &o).unwrap(),
        vec!["default", "a", "b"]
    );
    {
        // Recovered from the WAL (nothing was flushed).
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let a = db.column_family("a").unwrap();
        let b = db.column_family("b").unwrap();
        assert_eq!(db.get_cf(&a, b"k").unwrap().unwrap(), b"in a");
        assert_eq!(db.get_cf(&a, b"x").unwrap().unwrap(), b"1");
        assert_eq!(db.get_cf(&b, b"k").unwrap(), None);
        assert_eq!(db.get_cf(&b, b"y").unwrap().unwrap(), b"2");
        assert_eq!(db.get(b"z").unwrap().unwrap(), b"3");
        assert_eq!(family_dirs(dir.path()), vec!["cf-1", "cf-2"]);
        db.drop_column_family(&a).unwrap();
        assert!(matches!(
            db.get_cf(&a, b"k"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            db.put_cf(&a, b"k", b"v"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(db.drop_column_family(&a).is_err());
        assert_eq!(family_dirs(dir.path()), vec!["cf-2"]);
        assert!(db.column_family("a").is_none());
        // A new family never reuses an id.
        let c = db.create_column_family("a", &small()).unwrap();
        assert_eq!(c.id(), 3);
        assert_eq!(db.get_cf(&c, b"k").unwrap(), None);
        db.put_cf(&c, b"c", b"c").unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(db.column_families(), vec!["default", "b", "a"]);
    let c = db.column_family("a").unwrap();
    assert_eq!(c.id(), 3);
    assert_eq!(db.get_cf(&c, b"k").unwrap(), None);
    assert_eq!(db.get_cf(&c, b"c").unwrap().unwrap(), b"c");
    assert_eq!(family_dirs(dir.path()), vec!["cf-2", "cf-3"]);
}

#[test]
fn a_snapshot_reads_every_family_at_one_point() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let a = db.create_column_family("a", &small()).unwrap();
    for i in 0..100u32 {
        let mut batch = WriteBatch::new();
        batch.put(&i.to_be_bytes(), b"d0");
        batch.put_cf(&a, &i.to_be_bytes(), b"a0");
        db.write(&WriteOptions::default(), batch).unwrap();
    }
    let snap = db.snapshot();
    for i in 0..100u32 {
        let mut batch = WriteBatch::new();
        batch.put(&i.to_be_bytes(), b"d1");
        batch.delete_cf(&a, &i.to_be_bytes());
        db.write(&WriteOptions::default(), batch).unwrap();
    }
    // Flushes and compactions keep what the snapshot reads, in every family.
    db.flush().unwrap();
    db.compact_range_cf(&a, None, None).unwrap();
    db.compact_range(None, None).unwrap();
    let at = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    let d = db.default_column_family();
    let old_a = scan_cf(&db, &a, &at);
    let old_d = scan_cf(&db, &d, &at);
    assert_eq!(old_a.len(), 100);
    assert!(old_a.values().all(|v| v == b"a0"));
    assert!(old_d.values().all(|v| v == b"d0"));
    assert_eq!(
        db.get_cf_opt(&a, &at, &7u32.to_be_bytes())
            .unwrap()
            .unwrap(),
        b"a0"
    );
    let now = ReadOptions::default();
    assert!(scan_cf(&db, &a, &now).is_empty());
    assert!(scan_cf(&db, &d, &now).values().all(|v| v == b"d1"));
}

#[test]
fn flushes_compactions_and_reopens_keep_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let mut model: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); 3];
    let names = ["default", "one", "two"];
    for round in 0..3u32 {
        let db = Db::open(dir.path(), small()).unwrap();
        let cfs: Vec<ColumnFamily> = names
            .iter()
            .map(|n| match db.column_family(n) {
                Some(cf) => cf,
                None => db.create_column_family(n, &small()).unwrap(),
            })
            .collect();
        for i in 0..3000u32 {
            let f = (i % 3) as usize;
            let k = format!("k{:05}", (i * 7919) % 2000).into_bytes();
            let v = format!("v{round}-{i}-{}", "x".repeat(40)).into_bytes();
            if i % 11 == 0 {
                db.delete_cf(&cfs[f], &k).unwrap();
                model[f].remove(&k);
            } else {
                db.put_cf(&cfs[f], &k, &v).unwrap();
                model[f].insert(k, v);
            }
        }
        if round == 1 {
            db.flush().unwrap();
            db.compact_range_cf(&cfs[1], None, None).unwrap();
        }
        db.wait_for_background().unwrap();
        for (f, cf) in cfs.iter().enumerate() {
            assert_eq!(
                scan_cf(&db, cf, &ReadOptions::default()),
                model[f],
                "{round} {f}"
            );
        }
        // `verify` reads every family's tables.
        let own = db.stats().levels.iter().map(|l| l.files).sum::<usize>();
        let report = db.verify().unwrap();
        if round > 0 {
            assert!(
                report.tables > own,
                "{report:?}: the families' tables were not read"
            );
        }
        db.close().unwrap();
    }
}

#[test]
fn per_family_options_are_recorded_and_in_effect_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut main = small();
    main.write_buffer_size = 4 << 20;
    // The default family keeps its NVM tier off; one family puts its levels in NVM (TLSM),
    // another (cold data) stays on SSD with a small memtable.
    let mut hot = Options::preset(Preset::Tlsm);
    hot.write_buffer_size = 32 << 10;
    hot.target_file_size = 32 << 10;
    hot.nvm_dir = Some(nvm.path().to_path_buf());
    hot.nvm_capacity = 16 << 20;
    hot.nvm_prefault = false;
    let mut cold = small();
    cold.write_buffer_size = 16 << 10;
    cold.block_size = 2048;
    {
        let db = Db::open(dir.path(), main.clone()).unwrap();
        db.create_column_family("hot", &hot).unwrap();
        db.create_column_family("cold", &cold).unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), main).unwrap();
    let hot = db.column_family("hot").unwrap();
    let cold = db.column_family("cold").unwrap();
    let v = vec![b'v'; 100];
    for i in 0..2000u32 {
        let k = format!("k{i:06}").into_bytes();
        db.put(&k, &v).unwrap();
        db.put_cf(&hot, &k, &v).unwrap();
        db.put_cf(&cold, &k, &v).unwrap();
    }
    db.wait_for_background().unwrap();
    let opts_text = db.property_cf(&cold, "mezz.options").unwrap();
    assert!(opts_text.contains("write_buffer_size=16384"), "{opts_text}");
    assert!(opts_text.contains("block_size=2048"), "{opts_text}");
    // The small memtable filled many times (every family's memtable is switched with it:
    // the default's, 4 MiB, never filled, flushed as often).
    let cold_flushes = db.stats_cf(&cold).unwrap().flushes;
    assert!(cold_flushes >= 5, "{cold_flushes}");
    assert!(db.stats().flushes <= cold_flushes);
    let nvm_files = |s: mezzanine::Stats| s.levels.iter().map(|l| l.nvm_files).sum::<usize>();
    assert!(nvm_files(db.stats_cf(&hot).unwrap()) > 0);
    assert_eq!(nvm_files(db.stats_cf(&cold).unwrap()), 0);
    assert!(nvm.path().join("cf-1").join("NVM-POOL").exists());
    assert!(!nvm.path().join("cf-2").exists());
    // Dropping the NVM family frees its pool.
    db.drop_column_family(&hot).unwrap();
    assert!(!nvm.path().join("cf-1").join("NVM-POOL").exists());
    assert_eq!(db.get_cf(&cold, b"k000001").unwrap().unwrap(), v);
}

#[test]
fn immutable_nvm_memtables_serve_the_default_family_and_a_family() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    // NoveLSM's `immutable` mode: full DRAM memtables (whose updates are in the WAL) are
    // merged into a persistent skip list in NVM instead of written to L0.
    let with_nvm = |o: &mut Options| {
        o.nvm_dir = Some(nvm.path().to_path_buf());
        o.nvm_capacity = 16 << 20;
        o.nvm_prefault = false;
        o.set("nvm_memtable", "immutable").unwrap();
        o.nvm_memtable_size = 1 << 20;
    };
    let mut main = small();
    with_nvm(&mut main);
    let mut fam = small();
    fam.write_buffer_size = 32 << 10;
    with_nvm(&mut fam);
    let v = |i: u32, f: &str| format!("{f}{i:06}").repeat(10).into_bytes();
    {
        let db = Db::open(dir.path(), main.clone()).unwrap();
        let a = db.create_column_family("a", &fam).unwrap();
        let plain = db.create_column_family("plain", &small()).unwrap();
        // `mutable` NVM memtables take writes without a WAL record: refused beside
        // families, with the reason.
        let mut mutable = small();
        with_nvm(&mut mutable);
        mutable.set("nvm_memtable", "mutable").unwrap();
        match db.create_column_family("m", &mutable) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("mutable"), "{m}"),
            other => panic!("{other:?}"),
        }
        for i in 0..3000u32 {
            let k = format!("k{i:06}").into_bytes();
            let mut b = WriteBatch::new();
            b.put(&k, &v(i, "d"));
            b.put_cf(&a, &k, &v(i, "a"));
            b.put_cf(&plain, &k, &v(i, "p"));
            db.write(&WriteOptions::default(), b).unwrap();
        }
        db.wait_for_background().unwrap();
        // The default family's and `a`'s memtables went to NVM, `plain`'s did not.
        assert!(db.stats().nvm_bytes_written > 0);
        assert!(db.stats_cf(&a).unwrap().nvm_bytes_written > 0);
        assert_eq!(db.stats_cf(&plain).unwrap().nvm_bytes_written, 0);
        assert!(nvm.path().join("cf-1").join("NVM-POOL").exists());
        assert!(!nvm.path().join("cf-2").exists());
        db.close().unwrap();
    }
    // The NVM memtables are mapped back; every family holds every batch.
    let db = Db::open(dir.path(), main.clone()).unwrap();
    let a = db.column_family("a").unwrap();
    let plain = db.column_family("plain").unwrap();
    for i in (0..3000u32).step_by(7) {
        let k = format!("k{i:06}").into_bytes();
        assert_eq!(db.get(&k).unwrap().unwrap(), v(i, "d"));
        assert_eq!(db.get_cf(&a, &k).unwrap().unwrap(), v(i, "a"));
        assert_eq!(db.get_cf(&plain, &k).unwrap().unwrap(), v(i, "p"));
    }
    assert_eq!(scan_cf(&db, &a, &ReadOptions::default()).len(), 3000);
    db.close().unwrap();
    // A database with families refuses to open with `mutable` NVM memtables.
    let mut m = main;
    m.set("nvm_memtable", "mutable").unwrap();
    match Db::open(dir.path(), m) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("mutable"), "{msg}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn transactions_and_indexed_batches_over_the_default_family_beside_families() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let a = db.create_column_family("a", &small()).unwrap();
    db.put_cf(&a, b"k", b"a").unwrap();
    let mut txn = db.begin_transaction(&Default::default());
    txn.put(b"k", b"txn").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap().unwrap(), b"txn");
    assert_eq!(db.get_cf(&a, b"k").unwrap().unwrap(), b"a");
    let mut wbwi = mezzanine::WriteBatchWithIndex::new();
    wbwi.put(b"w", b"1");
    let ro = ReadOptions::default();
    assert_eq!(
        wbwi.get_from_batch_and_db(&db, &ro, b"k").unwrap().unwrap(),
        b"txn"
    );
    db.write(&WriteOptions::default(), wbwi.into_batch())
        .unwrap();
    assert_eq!(db.get(b"w").unwrap().unwrap(), b"1");
    assert_eq!(db.get_cf(&a, b"w").unwrap(), None);
}

#[test]
fn without_a_wal_families_are_flushed_at_close_and_destroy_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        use_wal: false,
        ..small()
    };
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let a = db.create_column_family("a", &small()).unwrap();
        db.put_cf(&a, b"k", b"v").unwrap();
        db.close().unwrap();
    }
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let a = db.column_family("a").unwrap();
        assert_eq!(db.get_cf(&a, b"k").unwrap().unwrap(), b"v");
        db.close().unwrap();
    }
    mezzanine::destroy_db(dir.path(), &o).unwrap();
    assert!(!dir.path().exists());
}

#[test]
fn a_family_directory_the_manifest_does_not_name_is_deleted_at_open() {
    // What a crash between the drop record and the deletion of the family's files leaves.
    let dir = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let copy = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_name() != "LOCK" {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    };
    {
        let db = Db::open(dir.path(), small()).unwrap();
        let a = db.create_column_family("a", &small()).unwrap();
        for i in 0..500u32 {
            db.put_cf(&a, &i.to_be_bytes(), &[7; 100]).unwrap();
        }
        db.flush_cf(&a).unwrap();
        db.close().unwrap();
    }
    copy(&dir.path().join("cf-1"), &saved.path().join("cf-1"));
    {
        let db = Db::open(dir.path(), small()).unwrap();
        db.drop_column_family(&db.column_family("a").unwrap())
            .unwrap();
        db.close().unwrap();
    }
    assert!(family_dirs(dir.path()).is_empty());
    copy(&saved.path().join("cf-1"), &dir.path().join("cf-1"));
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(db.column_families(), vec!["default"]);
    assert!(family_dirs(dir.path()).is_empty());
}

/// A family the manifest names whose CURRENT is gone (its tables and manifest still there)
/// is a Corruption naming that CURRENT, never a family opened afresh without the data its
/// tables hold (found by `family_current_damage_is_a_clear_error` in mezz-testkit's
/// corruption tests: the family opened empty but for the WAL's updates).
#[test]
fn a_named_family_without_its_current_is_corruption_not_an_empty_family() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), small()).unwrap();
        let a = db.create_column_family("a", &small()).unwrap();
        for i in 0..200u32 {
            db.put_cf(&a, &i.to_be_bytes(), &[7; 100]).unwrap();
        }
        db.flush().unwrap();
        db.put_cf(&a, b"in the WAL", b"1").unwrap();
        db.close().unwrap();
    }
    let current = dir.path().join("cf-1").join("CURRENT");
    let saved = std::fs::read(&current).unwrap();
    std::fs::remove_file(&current).unwrap();
    match Db::open(dir.path(), small()) {
        Err(Error::Corruption { file: Some(f), .. }) => assert_eq!(f, current),
        other => panic!(
            "expected Corruption naming cf-1/CURRENT, got {:?}",
            other.err()
        ),
    }
    // Nothing was deleted: with CURRENT back, the family opens whole.
    std::fs::write(&current, saved).unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let a = db.column_family("a").unwrap();
    assert_eq!(scan_cf(&db, &a, &ReadOptions::default()).len(), 201);
}

#[test]
fn a_power_cut_after_a_flush_keeps_every_family() {
    use mezz_env::{CrashOptions, FileSystem, KeepUnsynced, MemFs};
    let fs = MemFs::new();
    let o = Options {
        fs: std::sync::Arc::new(fs.clone()) as std::sync::Arc<dyn FileSystem>,
        ..small()
    };
    let db = Db::open("/d", o.clone()).unwrap();
    let a = db.create_column_family("a", &small()).unwrap();
    let mut b = WriteBatch::new();
    b.put(b"k", b"d");
    b.put_cf(&a, b"k", b"a");
    db.write(&WriteOptions::default(), b).unwrap();
    db.flush_cf(&a).unwrap();
    // The family's flush is installed when `flush_cf` returns (its counter may lag).
    assert_eq!(db.stats_cf(&a).unwrap().levels[0].files, 1);
    let clone = fs.crash_clone(&CrashOptions {
        keep_unsynced: KeepUnsynced::None,
        seed: 1,
    });
    let co = Options {
        fs: std::sync::Arc::new(clone) as std::sync::Arc<dyn FileSystem>,
        ..o
    };
    let r = Db::open("/d", co).unwrap();
    let ra = r.column_family("a").unwrap();
    assert_eq!(r.get(b"k").unwrap().unwrap(), b"d");
    assert_eq!(r.get_cf(&ra, b"k").unwrap().unwrap(), b"a");
}

#[test]
fn repair_keeps_column_families() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), small()).unwrap();
        let a = db.create_column_family("a", &small()).unwrap();
        db.put_cf(&a, b"k", b"v").unwrap();
        db.put(b"k", b"default").unwrap();
        db.close().unwrap();
    }
    // (Damage of every kind: `tests/repair.rs`.)
    let report = mezzanine::repair_db(dir.path(), &small()).unwrap();
    assert_eq!(report.families.len(), 1, "{report}");
    assert_eq!(report.families[0].name, "a");
    let db = Db::open(dir.path(), small()).unwrap();
    let a = db.column_family("a").unwrap();
    assert_eq!(db.get_cf(&a, b"k").unwrap().unwrap(), b"v");
    assert_eq!(db.get(b"k").unwrap().unwrap(), b"default");
}

/// A checkpoint holds the live families (their tests: `tests/checkpoint.rs`), not one
/// dropped before it.
#[test]
fn a_checkpoint_holds_the_live_families_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), small()).unwrap();
    let a = db.create_column_family("a", &small()).unwrap();
    let b = db.create_column_family("b", &small()).unwrap();
    db.put_cf(&a, b"k", b"a").unwrap();
    db.put_cf(&b, b"k", b"b").unwrap();
    db.drop_column_family(&a).unwrap();
    db.checkpoint(dir.path().join("ckpt")).unwrap();
    let copy = Db::open(dir.path().join("ckpt"), small()).unwrap();
    assert_eq!(copy.column_families(), ["default", "b"]);
    let b = copy.column_family("b").unwrap();
    assert_eq!(copy.get_cf(&b, b"k").unwrap().unwrap(), b"b");
    assert!(
        !dir.path()
            .join("ckpt")
            .join(format!("cf-{}", a.id()))
            .exists()
    );
}

/// Writers commit batches that put the same counter into one key of every family while
/// readers take snapshots and check that every family shows the same counter for each
/// key: a snapshot never sees half a batch, under flushes and compactions by the
/// background threads. Meanwhile another family is created, written and dropped over and
/// over: its writers get `InvalidArgument` once it is gone, never a panic.
#[test]
fn concurrent_cross_family_batches_are_seen_whole_by_snapshots() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        write_buffer_size: 16 << 10,
        ..small()
    };
    let db = Arc::new(Db::open(dir.path(), o.clone()).unwrap());
    let fo = Options {
        write_buffer_size: 8 << 10,
        ..small()
    };
    let cfs: Vec<ColumnFamily> = std::iter::once(db.default_column_family())
        .chain((0..2).map(|i| db.create_column_family(&format!("f{i}"), &fo).unwrap()))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for w in 0..3u64 {
        let (db, cfs, stop, counter) = (
            Arc::clone(&db),
            cfs.clone(),
            Arc::clone(&stop),
            Arc::clone(&counter),
        );
        threads.push(std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let k = format!("k{:03}", (i * 7 + w * 31) % 64);
                let v = format!("{n:010}-{}", "x".repeat((n % 50) as usize));
                let mut b = WriteBatch::new();
                for cf in &cfs {
                    b.put_cf(cf, k.as_bytes(), v.as_bytes());
                }
                db.write(&WriteOptions::default(), b).unwrap();
                i += 1;
            }
        }));
    }
    {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                let t = db
                    .create_column_family(&format!("tmp{round}"), &small())
                    .unwrap();
                for j in 0..50u32 {
                    db.put_cf(&t, &j.to_be_bytes(), b"v").unwrap();
                }
                db.drop_column_family(&t).unwrap();
                assert!(matches!(
                    db.put_cf(&t, b"k", b"v"),
                    Err(Error::InvalidArgument(_))
                ));
            }
        }));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    let mut checks = 0;
    while std::time::Instant::now() < deadline {
        let snap = db.snapshot();
        let ro = ReadOptions {
            snapshot: Some(snap),
            ..ReadOptions::default()
        };
        let maps: Vec<_> = cfs.iter().map(|cf| scan_cf(&db, cf, &ro)).collect();
        for m in &maps[1..] {
            assert!(*m == maps[0], "a snapshot saw half a batch");
        }
        checks += 1;
        if checks % 8 == 0 {
            db.flush_cf(&cfs[1]).unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(checks > 5);
    // And after a reopen.
    let db = Arc::try_unwrap(db).unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(db.column_families(), vec!["default", "f0", "f1"]);
    let cfs: Vec<ColumnFamily> = ["default", "f0", "f1"]
        .iter()
        .map(|n| db.column_family(n).unwrap())
        .collect();
    let maps: Vec<_> = cfs
        .iter()
        .map(|cf| scan_cf(&db, cf, &ReadOptions::default()))
        .collect();
    assert_eq!(maps[0].len(), 64);
    for m in &maps[1..] {
        assert!(*m == maps[0]);
    }
}

#[test]
fn a_family_cursor_made_before_close_answers_closed_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let a = db.create_column_family("a", &small()).unwrap();
    db.put_cf(&a, b"k", b"v").unwrap();
    let mut it = db.cursor_cf(&a, &ReadOptions::default()).unwrap();
    db.close().unwrap();
    it.seek_to_first();
    assert!(!it.valid());
    assert!(matches!(it.status(), Err(Error::Closed)));
    assert!(matches!(db.get_cf(&a, b"k"), Err(Error::Closed)));
    assert!(matches!(db.put_cf(&a, b"k", b"w"), Err(Error::Closed)));
    drop(db);
    // The LOCKs are free: it opens again at once.
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(
        db.get_cf(&db.column_family("a").unwrap(), b"k")
            .unwrap()
            .unwrap(),
        b"v"
    );
}

#[test]
fn a_family_with_bad_options_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    // NVM tables without an NVM directory: the family's options do not validate.
    let mut bad = Options::preset(Preset::Tlsm);
    bad.nvm_dir = None;
    assert!(db.create_column_family("bad", &bad).is_err());
    let mut nvm_memtable = small();
    nvm_memtable.set("nvm_memtable", "mutable").unwrap();
    assert!(matches!(
        db.create_column_family("bad", &nvm_memtable),
        Err(Error::InvalidArgument(_))
    ));
    assert!(family_dirs(dir.path()).is_empty());
    assert_eq!(db.column_families(), vec!["default"]);
    let ok = db.create_column_family("ok", &small()).unwrap();
    db.put_cf(&ok, b"k", b"v").unwrap();
    assert_eq!(db.get_cf(&ok, b"k").unwrap().unwrap(), b"v");
}

#[test]
fn a_family_with_ssd_paths_keeps_its_tables_there_and_drop_removes_them() {
    let root = tempfile::tempdir().unwrap();
    let unit = root.path().join("unit0");
    std::fs::create_dir_all(&unit).unwrap();
    let db = Db::open(root.path().join("db"), small()).unwrap();
    let fo = Options {
        ssd_paths: vec![unit.clone()],
        ..small()
    };
    let a = db.create_column_family("a", &fo).unwrap();
    for i in 0..3000u32 {
        db.put_cf(&a, &i.to_be_bytes(), &[1; 64]).unwrap();
    }
    db.flush_cf(&a).unwrap();
    let ssts = |d: &Path| {
        std::fs::read_dir(d).map_or(0, |r| {
            r.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sst"))
            })
            .count()
        })
    };
    assert!(ssts(&unit.join("cf-1")) > 0);
    db.close().unwrap();
    let db = Db::open(root.path().join("db"), small()).unwrap();
    let a = db.column_family("a").unwrap();
    assert_eq!(
        db.get_cf(&a, &7u32.to_be_bytes()).unwrap().unwrap(),
        [1; 64]
    );
    db.drop_column_family(&a).unwrap();
    assert_eq!(
        ssts(&unit.join("cf-1")),
        0,
        "the dropped family's tables are left"
    );
}

#[test]
fn changed_family_options_are_recorded_and_used_from_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), small()).unwrap();
        let a = db.create_column_family("a", &small()).unwrap();
        db.put_cf(&a, b"k", b"v").unwrap();
        db.set_column_family_options(&a, &[("write_buffer_size", "32K"), ("block_size", "2048")])
            .unwrap();
        // Options that change the files' layout, the default family, bad values: refused.
        for bad in [
            ("num_levels", "4"),
            ("nvm_tiering", "leveled:1"),
            ("write_buffer_size", "12"),
            ("no_such_option", "1"),
        ] {
            assert!(
                matches!(
                    db.set_column_family_options(&a, &[bad]),
                    Err(Error::InvalidArgument(_))
                ),
                "{bad:?}"
            );
        }
        let d = db.default_column_family();
        assert!(
            db.set_column_family_options(&d, &[("block_size", "2048")])
                .is_err()
        );
        // In effect from the next open.
        let text = db.property_cf(&a, "mezz.options").unwrap();
        assert!(text.contains("write_buffer_size=65536"), "{text}");
        db.close().unwrap();
    }
    for _ in 0..2 {
        // Twice: the second open reads them from the manifest the first one wrote.
        let db = Db::open(dir.path(), small()).unwrap();
        let a = db.column_family("a").unwrap();
        let text = db.property_cf(&a, "mezz.options").unwrap();
        assert!(text.contains("write_buffer_size=32768"), "{text}");
        assert!(text.contains("block_size=2048"), "{text}");
        assert_eq!(db.get_cf(&a, b"k").unwrap().unwrap(), b"v");
        db.close().unwrap();
    }
}
