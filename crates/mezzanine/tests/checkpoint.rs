//! `Db::checkpoint` end to end: a checkpoint taken while a writer runs holds every write
//! acknowledged before the call and is the state at one point between the acknowledged
//! writes; checkpoints of the NVM presets open with the default preset (no NVM directory)
//! and with their own preset on a fresh NVM directory; the source stays usable; a target
//! that exists is refused.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mezz_env::{CrashOptions, FaultFs, FaultRule, FileSystem, KeepUnsynced, MemFs, Trigger};

use common::{
    check, collect, key, nvm_dir, scan, small_matrixkv_options, small_mezzanine_options, workload,
};
use mezzanine::{ColumnFamily, Db, Options, Preset, ReadOptions, WriteBatch, WriteOptions};

fn small(mut o: Options) -> Options {
    o.write_buffer_size = 32 << 10;
    o.target_file_size = 32 << 10;
    o.max_bytes_for_level_base = 128 << 10;
    o.block_size = 1024;
    o.nvm_capacity = 16 << 20;
    o.nvm_prefault = false;
    o
}

fn writer_key(i: u64) -> Vec<u8> {
    format!("w{i:08}").into_bytes()
}

/// A writer thread puts `w00000000`, `w00000001`, ... in order (each acknowledged before
/// the next). The checkpoint must hold a prefix of them that includes every key
/// acknowledged before the call, and nothing else changed.
#[test]
fn checkpoint_during_writes_is_a_prefix_with_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path().join("db"), small(Options::default())).unwrap());
    // Data that compactions move about meanwhile.
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 6000, 0);
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (Arc::clone(&db), Arc::clone(&acked), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                db.put(&writer_key(i), format!("v{i}").as_bytes()).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    let mut checks = Vec::new();
    for round in 0..4 {
        while acked.load(Ordering::Acquire) < 2000 * (round + 1) {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        let target = dir.path().join(format!("ckpt{round}"));
        let info = db.checkpoint(&target).unwrap();
        let after = acked.load(Ordering::Acquire);
        assert!(
            info.linked + info.copied + info.materialised > 0,
            "{info:?}"
        );
        checks.push((target, before, after));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    for (target, before, after) in checks {
        let copy = Db::open(&target, Options::default()).unwrap();
        let got = scan(&copy, &ReadOptions::default());
        let mut n = 0;
        while got.contains_key(&writer_key(n)) {
            n += 1;
        }
        assert!(
            n >= before,
            "{target:?}: {n} writes, {before} acknowledged before"
        );
        assert!(
            n <= after + 1,
            "{target:?}: {n} writes, {after} acknowledged after"
        );
        let writes = got.keys().filter(|k| k.starts_with(b"w")).count() as u64;
        assert_eq!(writes, n, "{target:?}: the writes are not a prefix");
        let rest: BTreeMap<_, _> = got
            .into_iter()
            .filter(|(k, _)| !k.starts_with(b"w"))
            .collect();
        assert!(rest == model, "{target:?}: the data written before differs");
        copy.verify().unwrap();
        copy.close().unwrap();
    }
    // The source goes on.
    db.put(b"after", b"1").unwrap();
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn an_existing_target_is_refused_and_a_leftover_temp_dir_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    let target = dir.path().join("ckpt");
    std::fs::create_dir(&target).unwrap();
    let err = db.checkpoint(&target).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    std::fs::remove_dir(&target).unwrap();
    // A leftover of an interrupted checkpoint.
    let tmp = dir.path().join("ckpt.tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join("000001.sst"), b"half a table").unwrap();
    db.checkpoint(&target).unwrap();
    assert!(!tmp.exists());
    let copy = Db::open(&target, Options::default()).unwrap();
    assert_eq!(copy.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// Writes, checkpoints, writes more; the checkpoint opens with the default preset (no NVM
/// directory) and with `reopen` (the preset on a fresh NVM directory), equal to the model
/// at the checkpoint both times, and takes writes.
fn nvm_preset_round_trip(name: &str, open: impl Fn(&Path, &Path) -> Options) {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let db = Db::open(
        dir.path().join("db"),
        open(&dir.path().join("db"), nvm.path()),
    )
    .unwrap();
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 20_000, 0);
    check(&db, &model);
    let target = dir.path().join("ckpt");
    let info = db.checkpoint(&target).unwrap();
    println!("{name}: {info:?}");
    assert!(
        info.materialised > 0,
        "{name}: nothing in NVM or memtables? {info:?}"
    );
    let mut later = model.clone();
    workload(&db, &mut later, 3000, 1);
    check(&db, &later);
    db.close().unwrap();

    let copy = Db::open(&target, Options::default()).unwrap();
    check(&copy, &model);
    copy.verify().unwrap();
    copy.put(b"new", b"1").unwrap();
    copy.close().unwrap();
    model.insert(b"new".to_vec(), b"1".to_vec());

    let fresh = nvm_dir();
    let copy = Db::open(&target, open(&target, fresh.path())).unwrap();
    check(&copy, &model);
    workload(&copy, &mut model, 3000, 2);
    check(&copy, &model);
    copy.close().unwrap();
    // The source is unchanged by it all.
    let db = Db::open(
        dir.path().join("db"),
        open(&dir.path().join("db"), nvm.path()),
    )
    .unwrap();
    check(&db, &later);
}

#[test]
fn novelsm_checkpoint_opens_with_and_without_nvm() {
    nvm_preset_round_trip("novelsm", |_, nvm| {
        let mut o = small(Options::preset(Preset::Novelsm));
        o.nvm_memtable_size = 1 << 20;
        o.nvm_dir = Some(nvm.to_path_buf());
        o
    });
}

#[test]
fn novelsm_immutable_nvm_memtables_checkpoint_opens_with_and_without_nvm() {
    nvm_preset_round_trip("novelsm immutable", |_, nvm| {
        let mut o = small(Options::preset(Preset::Novelsm));
        o.nvm_memtable = mezzanine::options::NvmMemtable::Immutable;
        o.nvm_memtable_size = 1 << 20;
        o.nvm_dir = Some(nvm.to_path_buf());
        o
    });
}

#[test]
fn tlsm_checkpoint_opens_with_and_without_nvm() {
    nvm_preset_round_trip("tlsm", |_, nvm| {
        let mut o = small(Options::preset(Preset::Tlsm));
        o.level0_compaction_trigger = 2;
        o.nvm_dir = Some(nvm.to_path_buf());
        o
    });
}

#[test]
fn matrixkv_checkpoint_opens_with_and_without_nvm() {
    nvm_preset_round_trip("matrixkv", |_, nvm| small_matrixkv_options(nvm));
}

/// The designs composed: rows of the container and NVM tables at L1 are both written out.
#[test]
fn mezzanine_checkpoint_opens_with_and_without_nvm() {
    nvm_preset_round_trip("mezzanine", |_, nvm| small_mezzanine_options(nvm));
}

/// Tables spread over several SSD directories all land in the copy's directory, which opens
/// without `ssd_paths`.
#[test]
fn tables_of_several_ssd_directories_land_in_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let units: Vec<_> = (0..2)
        .map(|i| dir.path().join(format!("unit{i}")))
        .collect();
    let o = Options {
        ssd_paths: units.clone(),
        ..small(Options::default())
    };
    let db = Db::open(dir.path().join("db"), o).unwrap();
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 8000, 0);
    db.wait_for_background().unwrap();
    let in_units: usize = units
        .iter()
        .map(|u| {
            std::fs::read_dir(u)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension() == Some("sst".as_ref()))
                .count()
        })
        .sum();
    assert!(in_units > 0);
    let info = db.checkpoint(dir.path().join("ckpt")).unwrap();
    assert!(info.linked >= in_units, "{info:?}");
    let copy = Db::open(dir.path().join("ckpt"), Options::default()).unwrap();
    check(&copy, &model);
    copy.verify().unwrap();
}

// --- Column families --------------------------------------------------------------------

/// Every key of family `cf` of `db`.
fn scan_cf(db: &Db, cf: &ColumnFamily) -> BTreeMap<Vec<u8>, Vec<u8>> {
    collect(db.cursor_cf(cf, &ReadOptions::default()).unwrap())
}

/// `workload` into family `cf`: puts and deletes of `n` keys, recorded in `model`.
fn family_workload(
    db: &Db,
    cf: &ColumnFamily,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    n: u64,
    round: u64,
) {
    for i in 0..n {
        let k = key(i % 2000);
        let v = format!(
            "{}-{round}-{i}-{}",
            cf.name(),
            "x".repeat((i % 50) as usize)
        );
        db.put_cf(cf, &k, v.as_bytes()).unwrap();
        model.insert(k, v.into_bytes());
        if i % 11 == 5 {
            let d = key((i / 3) % 2000);
            db.delete_cf(cf, &d).unwrap();
            model.remove(&d);
        }
    }
}

/// Three families (the default, `a`, `b`; a family created and dropped before is absent)
/// while a writer commits batches that put the same counter under `w<counter>` in every
/// family: each checkpoint holds, in every family, the same prefix of the batches (a batch
/// is wholly in the copy or wholly absent), every batch acknowledged before the call, the
/// data written before, and `last_sequence` is the sequence number of the copy's last
/// batch exactly.
#[test]
fn checkpoint_of_column_families_holds_whole_batches_in_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path().join("db"), small(Options::default())).unwrap());
    let gone = db
        .create_column_family("gone", &small(Options::default()))
        .unwrap();
    db.put_cf(&gone, b"k", b"v").unwrap();
    db.drop_column_family(&gone).unwrap();
    let a = db
        .create_column_family("a", &small(Options::default()))
        .unwrap();
    // A smaller memtable: its fill switches every family's memtable often.
    let mut bo = small(Options::default());
    bo.write_buffer_size = 16 << 10;
    let b = db.create_column_family("b", &bo).unwrap();
    let cfs = [db.default_column_family(), a.clone(), b.clone()];
    let mut models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); 3];
    for (cf, model) in cfs.iter().zip(models.iter_mut()) {
        family_workload(&db, cf, model, 4000, 0);
    }
    // The end of each batch's sequence numbers (only the writer writes from now on).
    let ends = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop, ends) = (
            Arc::clone(&db),
            Arc::clone(&acked),
            Arc::clone(&stop),
            Arc::clone(&ends),
        );
        let cfs = cfs.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = WriteBatch::new();
                let v = format!("v{i}-{}", "y".repeat((i % 30) as usize));
                for cf in &cfs {
                    batch.put_cf(cf, &writer_key(i), v.as_bytes());
                }
                db.write(&WriteOptions::default(), batch).unwrap();
                ends.lock().push(db.snapshot().sequence());
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    let mut checks = Vec::new();
    for round in 0..4 {
        while acked.load(Ordering::Acquire) < 1500 * (round + 1) {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        let target = dir.path().join(format!("ckpt{round}"));
        let info = db.checkpoint(&target).unwrap();
        let after = acked.load(Ordering::Acquire);
        // Every family's files are listed, under `cf-<id>/`.
        for id in [a.id(), b.id()] {
            let prefix = format!("cf-{id}/");
            assert!(
                info.others.contains(&format!("{prefix}CURRENT")),
                "{info:?}"
            );
            assert!(
                info.tables.iter().any(|t| t.starts_with(&prefix)),
                "{info:?}"
            );
        }
        checks.push((target, info, before, after));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let ends = ends.lock().clone();
    for (target, info, before, after) in checks {
        assert_eq!(
            Db::list_column_families(&target, &Options::default()).unwrap(),
            ["default", "a", "b"]
        );
        let copy = Db::open(&target, Options::default()).unwrap();
        assert_eq!(copy.column_families(), ["default", "a", "b"]);
        let mut counts = Vec::new();
        for (cf, model) in cfs.iter().zip(&models) {
            let ccf = copy.column_family(cf.name()).unwrap();
            assert_eq!(ccf.id(), cf.id());
            let got = scan_cf(&copy, &ccf);
            let mut n = 0;
            while got.contains_key(&writer_key(n)) {
                n += 1;
            }
            let writes = got.keys().filter(|k| k.starts_with(b"w")).count() as u64;
            assert_eq!(writes, n, "{target:?} {}: not a prefix", cf.name());
            let rest: BTreeMap<_, _> = got
                .into_iter()
                .filter(|(k, _)| !k.starts_with(b"w"))
                .collect();
            assert!(
                rest == *model,
                "{target:?} {}: the data written before differs",
                cf.name()
            );
            counts.push(n);
        }
        let n = counts[0];
        assert!(
            counts.iter().all(|&c| c == n),
            "{target:?}: the families hold different batches: {counts:?}"
        );
        assert!(
            n >= before,
            "{target:?}: {n} batches, {before} acknowledged before"
        );
        assert!(
            n <= after + 1,
            "{target:?}: {n} batches, {after} acknowledged after"
        );
        // `last_sequence` is that of the copy's last batch, and the copy reads from it.
        assert_eq!(info.last_sequence, ends[n as usize - 1], "{target:?}");
        assert_eq!(copy.snapshot().sequence(), info.last_sequence);
        copy.verify().unwrap();
        // The next family id continues the source's (ids are never reused).
        let c = copy
            .create_column_family("c", &small(Options::default()))
            .unwrap();
        assert_eq!(c.id(), b.id() + 1);
        copy.close().unwrap();
    }
    // The source goes on.
    db.put_cf(&a, b"after", b"1").unwrap();
    assert_eq!(db.get_cf(&a, b"after").unwrap().as_deref(), Some(&b"1"[..]));
}

/// A database with an NVM directory whose families put their levels in NVM (TLSM's NVM
/// tables) and their L0 in a matrix container (MatrixKV): the checkpoint materialises
/// them, and the copy opens with every family, without an NVM directory and with the
/// preset on a fresh one (the copy's families keep their data on SSD: the source's NVM
/// directories are not the copy's).
#[test]
fn checkpoint_of_nvm_families_opens_with_and_without_nvm() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let tlsm = |nvm: &Path| {
        let mut o = small(Options::preset(Preset::Tlsm));
        o.level0_compaction_trigger = 2;
        o.nvm_dir = Some(nvm.to_path_buf());
        o
    };
    let db_path = dir.path().join("db");
    let db = Db::open(&db_path, tlsm(nvm.path())).unwrap();
    let hot = db.create_column_family("hot", &tlsm(nvm.path())).unwrap();
    let matrix = db
        .create_column_family("matrix", &small_matrixkv_options(nvm.path()))
        .unwrap();
    let plain = db
        .create_column_family("plain", &small(Options::default()))
        .unwrap();
    // NoveLSM's immutable NVM memtables: full memtables merged into the family's NVM list.
    let mut novel_opts = small(Options::default());
    novel_opts.nvm_dir = Some(nvm.path().to_path_buf());
    novel_opts.nvm_prefault = false;
    novel_opts.set("nvm_memtable", "immutable").unwrap();
    novel_opts.nvm_memtable_size = 1 << 20;
    novel_opts.nvm_capacity = 8 << 20;
    let novel = db.create_column_family("novel", &novel_opts).unwrap();
    let cfs = [db.default_column_family(), hot, matrix, plain, novel];
    let mut models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); cfs.len()];
    for round in 0..3 {
        for (cf, model) in cfs.iter().zip(models.iter_mut()) {
            family_workload(&db, cf, model, 3000, round);
        }
    }
    let nvm_files = |s: mezzanine::Stats| s.levels.iter().map(|l| l.nvm_files).sum::<usize>();
    assert!(nvm_files(db.stats_cf(&cfs[1]).unwrap()) > 0);
    assert!(db.stats_cf(&cfs[4]).unwrap().nvm_bytes_written > 0);
    let target = dir.path().join("ckpt");
    let info = db.checkpoint(&target).unwrap();
    println!("{info:?}");
    assert!(
        info.tables.iter().any(|t| t.starts_with("cf-1/"))
            && info.tables.iter().any(|t| t.starts_with("cf-2/")),
        "{info:?}"
    );
    let mut later = models.clone();
    for (cf, model) in cfs.iter().zip(later.iter_mut()) {
        family_workload(&db, cf, model, 1000, 9);
    }
    db.close().unwrap();

    let check_all = |copy: &Db, models: &[BTreeMap<Vec<u8>, Vec<u8>>], what: &str| {
        assert_eq!(
            copy.column_families(),
            ["default", "hot", "matrix", "plain", "novel"]
        );
        for (cf, model) in cfs.iter().zip(models) {
            let ccf = copy.column_family(cf.name()).unwrap();
            assert!(
                scan_cf(copy, &ccf) == *model,
                "{what}: family {} differs",
                cf.name()
            );
        }
        copy.verify().unwrap();
    };
    let copy = Db::open(&target, Options::default()).unwrap();
    check_all(&copy, &models, "without NVM");
    let hot_copy = copy.column_family("hot").unwrap();
    let text = copy.property_cf(&hot_copy, "mezz.options").unwrap();
    assert!(text.contains("nvm_tiering=off"), "{text}");
    copy.put_cf(&hot_copy, b"new", b"1").unwrap();
    copy.close().unwrap();
    models[1].insert(b"new".to_vec(), b"1".to_vec());

    let fresh = nvm_dir();
    let copy = Db::open(&target, tlsm(fresh.path())).unwrap();
    check_all(&copy, &models, "with a fresh NVM directory");
    for (cf, model) in cfs.iter().zip(models.iter_mut()) {
        let ccf = copy.column_family(cf.name()).unwrap();
        family_workload(&copy, &ccf, model, 2000, 5);
    }
    check_all(&copy, &models, "after writes");
    copy.close().unwrap();
    // The copy's families made no NVM pool of their own, here or in the source's directory.
    assert!(!fresh.path().join("cf-1").exists());
    // The source is unchanged by it all.
    let db = Db::open(&db_path, tlsm(nvm.path())).unwrap();
    for (cf, model) in cfs.iter().zip(&later) {
        let scf = db.column_family(cf.name()).unwrap();
        assert!(scan_cf(&db, &scf) == *model, "source family {}", cf.name());
    }
}

/// A checkpoint of a database with families that stops at each of its file operations in
/// turn (every operation on the copy's paths fails from the `n`-th on, its clean-up
/// included: what a crash there leaves), followed by a power cut (nothing unsynced kept,
/// or a random prefix of it): the source opens with
/// every family as it was, the target is no database or a complete one, and the source,
/// still open, takes a checkpoint once the faults stop.
#[test]
fn a_checkpoint_of_families_stopped_at_any_step_leaves_the_source_sound() {
    let mem = MemFs::new();
    let faulty = FaultFs::new(Arc::new(mem.clone()));
    let opts = |fs: Arc<dyn FileSystem>| Options {
        fs,
        ..small(Options::default())
    };
    let db = Db::open("/db", opts(Arc::new(faulty.clone()))).unwrap();
    let cfs = [
        db.default_column_family(),
        db.create_column_family("a", &small(Options::default()))
            .unwrap(),
        db.create_column_family("b", &small(Options::default()))
            .unwrap(),
    ];
    let mut models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); 3];
    for (cf, model) in cfs.iter().zip(models.iter_mut()) {
        family_workload(&db, cf, model, 1500, 0);
    }
    db.flush().unwrap();
    // Some in the memtables too (synced: a power cut keeps them).
    for i in 0..50u64 {
        let mut b = WriteBatch::new();
        for (cf, model) in cfs.iter().zip(models.iter_mut()) {
            b.put_cf(cf, &writer_key(i), b"m");
            model.insert(writer_key(i), b"m".to_vec());
        }
        db.write(&WriteOptions { sync: true }, b).unwrap();
    }
    let check_families = |d: &Db, what: &str| {
        assert_eq!(d.column_families(), ["default", "a", "b"], "{what}");
        for (cf, model) in cfs.iter().zip(&models) {
            let c = d.column_family(cf.name()).unwrap();
            assert!(scan_cf(d, &c) == *model, "{what}: family {}", cf.name());
        }
    };
    // No compaction changes the tables from one try to the next.
    db.wait_for_background().unwrap();
    // How many operations on the copy's paths a whole checkpoint makes.
    let ops = Arc::new(AtomicU64::new(0));
    {
        let ops = Arc::clone(&ops);
        faulty.before_each(move |_, p| {
            if p.to_string_lossy().contains("/ckpt") {
                ops.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    db.checkpoint("/ckpt-count").unwrap();
    let total = ops.load(Ordering::Relaxed);
    assert!(total > 20, "a checkpoint of {total} operations only");
    let mut complete = 0;
    for n in 0..total {
        faulty.add_rule(FaultRule::new(None, Trigger::After(n)).on_path("/ckpt"));
        // A target of its own each time: this file system keeps empty directories, and a
        // checkpoint refuses a target that exists.
        let target = format!("/ckpt-{n}");
        let res = db.checkpoint(&target);
        faulty.clear_rules();
        assert!(
            res.is_err(),
            "stopped at operation {n} of {total}, it succeeded"
        );
        assert!(faulty.injected() > 0);
        let crashed = mem.crash_clone(&CrashOptions {
            keep_unsynced: if n % 2 == 0 {
                KeepUnsynced::None
            } else {
                KeepUnsynced::RandomPrefix
            },
            seed: n,
        });
        let crashed: Arc<dyn FileSystem> = Arc::new(crashed);
        // The target is no database, or a complete copy (stopped after its `CURRENT`).
        if crashed.exists(&Path::new(&target).join("CURRENT")) {
            let copy = Db::open(&target, opts(Arc::clone(&crashed))).unwrap();
            check_families(&copy, &format!("step {n}: the copy"));
            copy.close().unwrap();
            complete += 1;
        }
        let source = Db::open("/db", opts(crashed)).unwrap();
        check_families(&source, &format!("step {n}: the source"));
        source.close().unwrap();
    }
    println!("a checkpoint stopped at each of its {total} operations: {complete} complete copies");
    db.checkpoint("/ckpt").unwrap();
    let copy = Db::open("/ckpt", opts(Arc::new(mem.clone()))).unwrap();
    check_families(&copy, "the finished copy");
    copy.verify().unwrap();
    check_families(&db, "the source");
}

/// A family dropped while the checkpoint copies its tables (its files are deleted with it)
/// makes the checkpoint fail with `Busy`, leaving no copy; the next one holds the others.
#[test]
fn a_family_dropped_during_its_copy_fails_the_checkpoint_with_busy() {
    let mem = MemFs::new();
    let faulty = FaultFs::new(Arc::new(mem.clone()));
    let opts = Options {
        fs: Arc::new(faulty.clone()),
        ..small(Options::default())
    };
    let db = Arc::new(Db::open("/db", opts.clone()).unwrap());
    let a = db
        .create_column_family("a", &small(Options::default()))
        .unwrap();
    let b = db
        .create_column_family("b", &small(Options::default()))
        .unwrap();
    let mut model = BTreeMap::new();
    family_workload(&db, &a, &mut BTreeMap::new(), 3000, 0);
    family_workload(&db, &b, &mut model, 1000, 0);
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    assert!(
        db.stats_cf(&a)
            .unwrap()
            .levels
            .iter()
            .map(|l| l.files)
            .sum::<usize>()
            >= 2
    );
    // At the copy's first file of family `a` (this file system cannot link: the tables are
    // copied one by one), `a` is dropped.
    let dropped = Arc::new(AtomicBool::new(false));
    {
        let (db, a, dropped) = (Arc::clone(&db), a.clone(), Arc::clone(&dropped));
        let dir = format!("/ckpt.tmp/cf-{}/", a.id());
        faulty.before_each(move |_, p| {
            if p.to_string_lossy().starts_with(&dir) && !dropped.swap(true, Ordering::AcqRel) {
                db.drop_column_family(&a).unwrap();
            }
        });
    }
    let err = db.checkpoint("/ckpt").unwrap_err();
    assert!(dropped.load(Ordering::Acquire));
    assert!(matches!(err, mezzanine::Error::Busy(_)), "{err}");
    assert!(err.to_string().contains("\"a\""), "{err}");
    assert!(!faulty.exists(Path::new("/ckpt/CURRENT")));
    db.checkpoint("/ckpt2").unwrap();
    let copy = Db::open("/ckpt2", opts).unwrap();
    assert_eq!(copy.column_families(), ["default", "b"]);
    assert!(scan_cf(&copy, &copy.column_family("b").unwrap()) == model);
}
