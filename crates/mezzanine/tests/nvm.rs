//! The NVM tier end to end: NoveLSM's NVM memtable (mutable and immutable), the WAL on NVM,
//! parallel reads, recovery by mapping, simulated power cuts, damaged pools.

#![allow(clippy::unwrap_used)] // helpers shared by the tests below

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mezz_env::{CrashOptions, KeepUnsynced, MemFs};
use mezz_pmem::{KeepLines, PowerCut, SimNvm};
use mezzanine::options::{NvmMemtable, PersistMode};
use mezzanine::{Db, Error, Options, Preset, ReadOptions, WriteOptions};

fn small(mut o: Options) -> Options {
    o.write_buffer_size = 64 << 10;
    o.nvm_memtable_size = 1 << 20;
    o.nvm_capacity = 8 << 20;
    o.target_file_size = 64 << 10;
    o.max_bytes_for_level_base = 256 << 10;
    o.nvm_prefault = false;
    o
}

/// A directory for the pool: on /dev/shm where it exists (the `msync` mode persists there
/// with cache-line flushes, not disk writes), else a temporary directory.
fn nvm_dir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

fn on_disk(preset: Preset, nvm: &Path) -> Options {
    let mut o = small(Options::preset(preset));
    o.nvm_dir = Some(nvm.to_path_buf());
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_003).into_bytes()
}

/// Writes `n` puts (every seventh key deleted again) and returns the model.
fn fill(db: &Db, n: u64, sync: bool) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    let wo = WriteOptions { sync };
    for i in 0..n {
        let k = key(i);
        let v = format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
        db.put_opt(&wo, &k, &v).unwrap();
        model.insert(k.clone(), v);
        if i % 7 == 3 {
            let d = key(i / 2);
            db.delete_opt(&wo, &d).unwrap();
            model.remove(&d);
        }
    }
    model
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]), "key {k:?}");
    }
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut got = BTreeMap::new();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    assert_eq!(got.len(), model.len());
    assert!(got == *model, "scan differs from the model");
}

#[test]
fn mutable_nvm_memtable_serves_reads_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let o = on_disk(Preset::Novelsm, nvm.path());
    assert_eq!(o.nvm_memtable, NvmMemtable::Mutable);
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let model = fill(&db, 30_000, false);
    check(&db, &model);
    let s = db.stats();
    assert!(s.nvm_bytes_written > 0, "nothing persisted to NVM");
    assert!(s.flushes > 0);
    db.close().unwrap();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    check(&db, &model);
    // More writes after recovery, then flush everything and check again.
    let more = fill(&db, 5_000, false);
    let mut all = model.clone();
    for i in 0..5_000u64 {
        all.remove(&key(i));
        all.remove(&key(i / 2));
    }
    all.extend(more);
    // `fill` of the second round rewrote keys 0..5000 and deleted some: rebuild exactly.
    let mut expect = model;
    let mut i = 0u64;
    while i < 5_000 {
        let k = key(i);
        let v = format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
        expect.insert(k, v);
        if i % 7 == 3 {
            expect.remove(&key(i / 2));
        }
        i += 1;
    }
    check(&db, &expect);
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    check(&db, &expect);
    db.close().unwrap();
}

#[test]
fn immutable_nvm_memtable_takes_flushed_memtables() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = on_disk(Preset::Novelsm, nvm.path());
    o.nvm_memtable = NvmMemtable::Immutable;
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let model = fill(&db, 30_000, false);
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    check(&db, &model);
    assert!(db.stats().nvm_bytes_written > 0);
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    check(&db, &model);
    db.close().unwrap();
}

#[test]
fn wal_on_nvm_keeps_synced_writes_and_leaves_no_log_files() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = on_disk(Preset::Leveldb, nvm.path());
    o.wal_on_nvm = true;
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let model = fill(&db, 5_000, true);
    check(&db, &model);
    db.close().unwrap();
    let logs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count();
    assert_eq!(logs, 0, "WAL files on the SSD despite wal_on_nvm");
    let db = Db::open(dir.path(), o).unwrap();
    check(&db, &model);
    db.close().unwrap();
}

#[test]
fn parallel_reads_return_the_newest_version() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = on_disk(Preset::Novelsm, nvm.path());
    o.parallel_reads = true;
    let db = Db::open(dir.path(), o).unwrap();
    let model = fill(&db, 20_000, false);
    check(&db, &model);
    db.compact_range(None, None).unwrap();
    let model2 = fill(&db, 3_000, false);
    let mut expect = model;
    for (k, v) in model2 {
        expect.insert(k, v);
    }
    for i in 0..3_000u64 {
        if i % 7 == 3 {
            expect.remove(&key(i / 2));
        }
    }
    for (k, v) in &expect {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]));
    }
    db.close().unwrap();
}

#[test]
fn an_nvm_database_needs_its_nvm_dir_and_its_own_pool() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let o = on_disk(Preset::Novelsm, nvm.path());
    let db = Db::open(dir.path(), o.clone()).unwrap();
    fill(&db, 3_000, false);
    db.close().unwrap();
    // Without nvm_dir: refused, not silently missing data.
    let mut plain = small(Options::default());
    plain.nvm_dir = None;
    match Db::open(dir.path(), plain) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("nvm_dir"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // A second, new database pointed at the same pool: refused.
    let dir2 = tempfile::tempdir().unwrap();
    match Db::open(dir2.path(), o.clone()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("another database"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // The preset without nvm_dir is an option error naming the fix.
    match Db::open(dir2.path(), small(Options::preset(Preset::Novelsm))) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("nvm_dir"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// An open that creates a database and is killed after it made the NVM pool but before
/// the manifest named the database's id leaves a pool behind: the next open of the same
/// directory reclaims it (its IDENTITY file names the pool's id), where another database's
/// pool is refused. (Found by `mezz stress` killing children during their first open.)
#[test]
fn an_interrupted_creation_leaves_a_pool_the_next_open_reclaims() {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let o = sim_options(Preset::Novelsm, &fs, &sim);
    let db = Db::open("/db", o.clone()).unwrap();
    db.close().unwrap();
    drop(db);
    // What the kill leaves: IDENTITY and the pool, no CURRENT or manifest yet.
    let files = mezz_env::FileSystem::list_dir(&fs, Path::new("/db")).unwrap();
    assert!(files.iter().any(|f| f == "IDENTITY"), "{files:?}");
    for f in &files {
        if f.starts_with("CURRENT") || f.starts_with("MANIFEST") {
            mezz_env::FileSystem::remove_file(&fs, &Path::new("/db").join(f)).unwrap();
        }
    }
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", o.clone()).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    // Without the IDENTITY that names it, the pool is another database's.
    for f in mezz_env::FileSystem::list_dir(&fs, Path::new("/db")).unwrap() {
        mezz_env::FileSystem::remove_file(&fs, &Path::new("/db").join(f)).unwrap();
    }
    match Db::open("/db", o) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("another database"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn damaged_pool_files_are_typed_errors() {
    for damage in ["magic", "checksum", "truncate"] {
        let dir = tempfile::tempdir().unwrap();
        let nvm = nvm_dir();
        let o = on_disk(Preset::Novelsm, nvm.path());
        let db = Db::open(dir.path(), o.clone()).unwrap();
        fill(&db, 3_000, false);
        db.close().unwrap();
        let pool = nvm.path().join("NVM-POOL");
        let mut bytes = std::fs::read(&pool).unwrap();
        match damage {
            "magic" => bytes[0] ^= 0xff,
            "checksum" => bytes[20] ^= 0x01,
            _ => bytes.truncate(bytes.len() / 2),
        }
        std::fs::write(&pool, &bytes).unwrap();
        match Db::open(dir.path(), o) {
            Err(Error::Corruption { file, .. }) => {
                assert_eq!(file.as_deref(), Some(pool.as_path()), "{damage}")
            }
            other => panic!("{damage}: expected Corruption, got {other:?}"),
        }
    }
}

/// Options on simulated media: MemFs for the files, SimNvm (crashsim) for the pool.
fn sim_options(preset: Preset, fs: &MemFs, sim: &SimNvm) -> Options {
    let mut o = small(Options::preset(preset));
    o.fs = Arc::new(fs.clone());
    o.nvm_dir = Some("/nvm".into());
    o.nvm_persistence = PersistMode::CrashSim;
    o.nvm_sim = Some(sim.clone());
    o
}

#[test]
fn power_cut_keeps_every_acknowledged_write_in_each_nvm_mode() {
    for (mode, wal_on_nvm) in [
        (NvmMemtable::Mutable, false),
        (NvmMemtable::Immutable, false),
        (NvmMemtable::Off, true),
        (NvmMemtable::Mutable, true),
    ] {
        for seed in 0..3u64 {
            let fs = MemFs::new();
            let sim = SimNvm::new();
            let mut o = sim_options(Preset::Novelsm, &fs, &sim);
            o.nvm_memtable = mode;
            o.wal_on_nvm = wal_on_nvm;
            let db = Db::open("/db", o.clone()).unwrap();
            let model = fill(&db, 8_000 + seed * 1_000, true);
            // Power cut while the database is open: only what was made durable survives.
            let (fs2, sim2) = crate::common::power_cut_images(
                &fs,
                &sim,
                if seed % 2 == 0 {
                    KeepLines::None
                } else {
                    KeepLines::Random
                },
                seed,
            );
            drop(db);
            let o2 = sim_options(Preset::Novelsm, &fs2, &sim2);
            let o2 = Options {
                nvm_memtable: mode,
                wal_on_nvm,
                ..o2
            };
            let db = Db::open("/db", o2).unwrap_or_else(|e| panic!("{mode:?}/{wal_on_nvm}: {e}"));
            check(&db, &model);
            db.close().unwrap();
        }
    }
}

/// The deterministic batch `i` of the exhaustive test: one to three puts or deletes.
fn batch_of(i: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    (0..=(i % 3))
        .map(|j| {
            let k = format!("k{:03}", (i * 7 + j * 13) % 97).into_bytes();
            if (i + j) % 5 == 4 {
                (k, None)
            } else {
                (k, Some(format!("v{i}.{j}").into_bytes()))
            }
        })
        .collect()
}

fn apply_batch(db: &Db, i: u64) {
    let mut b = mezzanine::WriteBatch::new();
    for (k, v) in batch_of(i) {
        match v {
            Some(v) => b.put(&k, &v),
            None => b.delete(&k),
        }
    }
    db.write(&WriteOptions { sync: false }, b).unwrap();
}

fn model_after(
    base: &BTreeMap<Vec<u8>, Vec<u8>>,
    from: u64,
    to: u64,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = base.clone();
    for i in from..to {
        for (k, v) in batch_of(i) {
            match v {
                Some(v) => m.insert(k, v),
                None => m.remove(&k),
            };
        }
    }
    m
}

fn scan_all(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut got = BTreeMap::new();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    got
}

/// A power cut at every persist point of a short run of write batches going into the
/// mutable NVM memtable (no WAL): recovery holds exactly the batches acknowledged before
/// the cut, possibly the one in flight, whole or not at all, and nothing later.
#[test]
fn power_cut_at_every_persist_point_of_nvm_memtable_writes() {
    const OPS: u64 = 12;
    let setup = |fs: &MemFs, sim: &SimNvm| -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
        let mut o = sim_options(Preset::Novelsm, fs, sim);
        o.write_buffer_size = 4096;
        let db = Db::open("/db", o).unwrap();
        // Fill the DRAM memtable until writes go to an NVM memtable, and let its flush end:
        // from here on the file system is idle and every write lands in NVM only.
        let mut base = BTreeMap::new();
        let at_open = db.stats().nvm_bytes_written;
        let mut in_nvm = 0;
        for n in 0..10_000u64 {
            let (k, v) = (format!("base{n:05}").into_bytes(), vec![b'b'; 64]);
            db.put(&k, &v).unwrap();
            base.insert(k, v);
            // A few writes past the switch to the NVM memtable.
            if db.stats().nvm_bytes_written > at_open {
                in_nvm += 1;
                if in_nvm == 3 {
                    break;
                }
            }
        }
        db.wait_for_background().unwrap();
        assert!(
            db.stats().nvm_bytes_written > 0,
            "no write reached the NVM memtable"
        );
        (db, base)
    };
    // A dry run counts the persist points of the measured phase.
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let (db, _) = setup(&fs, &sim);
    let p0 = sim.persist_points();
    for i in 0..OPS {
        apply_batch(&db, i);
    }
    let p1 = sim.persist_points();
    drop(db);
    assert!(
        p1 > p0 + OPS,
        "writes did not go to the NVM memtable: {p0} {p1}"
    );
    for cut in p0 + 1..=p1 + 1 {
        for keep in [KeepLines::None, KeepLines::Random] {
            let (fs, sim) = (MemFs::new(), SimNvm::new());
            let (db, base) = setup(&fs, &sim);
            assert_eq!(sim.persist_points(), p0, "the setup is not deterministic");
            sim.arm_cut_after(cut);
            let mut observed_at = OPS;
            for i in 0..OPS {
                apply_batch(&db, i);
                if sim.cut_happened() && observed_at == OPS {
                    observed_at = i;
                }
            }
            let (fs2, sim2) = crate::common::power_cut_images(&fs, &sim, keep, cut);
            drop(db);
            let db = Db::open("/db", sim_options(Preset::Novelsm, &fs2, &sim2))
                .unwrap_or_else(|e| panic!("cut {cut} {keep:?}: reopen: {e}"));
            let got = scan_all(&db);
            // The cut happened during batch `observed_at` (first seen after it returned):
            // the batches before it returned before the cut and must be there; it may or
            // may not have made it, whole; later ones started after the cut.
            let ok =
                (observed_at..=(observed_at + 1).min(OPS)).any(|r| got == model_after(&base, 0, r));
            if !ok {
                let want = model_after(&base, 0, observed_at);
                let extra: Vec<_> = got
                    .iter()
                    .filter(|(k, v)| want.get(*k) != Some(v))
                    .collect();
                let missing: Vec<_> = want
                    .iter()
                    .filter(|(k, v)| got.get(*k) != Some(v))
                    .collect();
                panic!(
                    "cut at persist {cut} ({keep:?}), observed after batch {observed_at}: \
                     recovered state is not a whole-batch prefix; differs from the prefix \
                     of {observed_at} by {extra:?} / missing {missing:?}"
                );
            }
            db.close().unwrap();
            // Reopened under `immutable`, whose flushes merge into NVM memtables: a group
            // the cut left partial in the recovered NVM memtable stays invisible (that
            // memtable never receives a merge, which would lift its commit word).
            let mut o = sim_options(Preset::Novelsm, &fs2, &sim2);
            o.nvm_memtable = NvmMemtable::Immutable;
            let db = Db::open("/db", o).unwrap();
            let mut want = got.clone();
            for i in 100..110 {
                apply_batch(&db, i);
                for (k, v) in batch_of(i) {
                    match v {
                        Some(v) => want.insert(k, v),
                        None => want.remove(&k),
                    };
                }
                db.flush().unwrap();
            }
            db.wait_for_background().unwrap();
            assert!(
                scan_all(&db) == want,
                "cut at persist {cut} ({keep:?}): after a reopen in immutable mode"
            );
            db.close().unwrap();
        }
    }
}

/// The mutable NVM memtable sets its reserve word ahead of the writes (most write groups do
/// not write it). After a clean close the next open continues the sequence without a gap;
/// after a power cut it continues above every recovered write (a later write of a
/// recovered key wins), at most `RESERVE_LEASE` above the last one.
#[test]
fn sequence_numbers_continue_after_a_clean_close_and_after_a_power_cut() {
    use mezzanine::internals::RESERVE_LEASE;
    let fs = MemFs::new();
    let sim = SimNvm::new();
    let o = sim_options(Preset::Novelsm, &fs, &sim);
    let db = Db::open("/db", o.clone()).unwrap();
    // 64 KiB of DRAM memtable, then the writes go to the (1 MiB) NVM memtable.
    let mut model = fill(&db, 2_000, false);
    assert!(db.stats().nvm_bytes_written > 0, "no write reached NVM");
    let last = db.stats().last_sequence;
    db.close().unwrap();
    let db = Db::open("/db", o.clone()).unwrap();
    assert_eq!(
        db.stats().last_sequence,
        last,
        "a clean close leaves no gap"
    );
    check(&db, &model);
    for i in 2_000..3_000u64 {
        let v = format!("more-{i}").into_bytes();
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    let last = db.stats().last_sequence;
    let fs2 = fs.crash_clone(&CrashOptions {
        keep_unsynced: KeepUnsynced::All,
        seed: 1,
    });
    let sim2 = sim.power_cut(&PowerCut {
        keep_unpersisted: KeepLines::None,
        seed: 1,
    });
    drop(db);
    let o2 = sim_options(Preset::Novelsm, &fs2, &sim2);
    let db = Db::open("/db", o2.clone()).unwrap();
    check(&db, &model);
    let recovered = db.stats().last_sequence;
    assert!(
        recovered >= last && recovered <= last + RESERVE_LEASE,
        "last sequence {last} before the cut, {recovered} after"
    );
    for i in (0..3_000u64).step_by(7) {
        db.put(&key(i), b"newest").unwrap();
        model.insert(key(i), b"newest".to_vec());
    }
    check(&db, &model);
    let last = db.stats().last_sequence;
    db.close().unwrap();
    let db = Db::open("/db", o2).unwrap();
    assert_eq!(db.stats().last_sequence, last);
    check(&db, &model);
    db.close().unwrap();
}
