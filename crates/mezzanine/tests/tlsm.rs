//! TLSM end to end: NVM tables under each method and tiering policy, checked against a
//! model through flushes, compactions, moves to SSD, buffer reclamation and reopen.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{check, nvm_dir, workload};
use mezzanine::options::{NvmTableMethod, NvmTiering};
use mezzanine::{Db, Options, Preset};

fn options(nvm: &Path, method: NvmTableMethod, tiering: NvmTiering) -> Options {
    let mut o = Options::preset(Preset::Tlsm);
    o.write_buffer_size = 32 << 10;
    o.target_file_size = 32 << 10;
    o.max_bytes_for_level_base = 128 << 10;
    o.level0_compaction_trigger = 2;
    o.block_size = 1024;
    o.nvm_capacity = 16 << 20;
    o.nvm_prefault = false;
    o.nvm_dir = Some(nvm.to_path_buf());
    o.nvm_table_method = method;
    o.nvm_tiering = tiering;
    o
}

#[test]
fn every_method_and_tiering_matches_the_model_across_reopen() {
    for method in [
        NvmTableMethod::Ps,
        NvmTableMethod::PsBac,
        NvmTableMethod::PsBacPb,
    ] {
        for tiering in [
            NvmTiering::Leveled(1),
            NvmTiering::Lru(256 << 10),
            NvmTiering::Full,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let nvm = nvm_dir();
            let o = options(nvm.path(), method, tiering);
            let mut model = BTreeMap::new();
            {
                let db = Db::open(dir.path(), o.clone()).unwrap();
                workload(&db, &mut model, 8000, 0);
                db.wait_for_background().unwrap();
                check(&db, &model);
                let s = db.stats();
                assert!(s.compactions > 0, "{method:?} {tiering:?}: no compaction");
                let nvm_files: usize = s.levels.iter().map(|l| l.nvm_files).sum();
                assert!(
                    nvm_files > 0 || s.nvm_tables.tier_moves > 0,
                    "{method:?} {tiering:?}: no NVM table\n{s}"
                );
                if let NvmTiering::Lru(budget) = tiering {
                    assert!(
                        s.nvm_tables.tier_moves > 0,
                        "{method:?}: no move to SSD\n{s}"
                    );
                    if method == NvmTableMethod::PsBacPb {
                        // Flushed tables move as copies of their buffers' blocks.
                        assert!(s.nvm_tables.moved_block_bytes > 0, "{s}");
                    }
                    // Moves run after the budget is passed: at most a few tables over it.
                    assert!(s.nvm_tables.allocated_bytes < budget + (256 << 10), "{s}");
                }

                db.verify().unwrap();
            }
            let db = Db::open(dir.path(), o.clone()).unwrap();
            check(&db, &model);
            workload(&db, &mut model, 4000, 1);
            db.compact_range(None, None).unwrap();
            check(&db, &model);
            db.verify().unwrap();
        }
    }
}

mod power_cut {
    use std::collections::BTreeMap;

    use mezz_env::{CrashOptions, KeepUnsynced, MemFs};
    use mezz_pmem::{KeepLines, PowerCut, SimNvm};
    use mezzanine::options::{NvmTableMethod, NvmTiering};
    use mezzanine::{Db, Options, Preset, ReadOptions, WriteOptions};

    fn sim_options(
        fs: &MemFs,
        sim: &SimNvm,
        method: NvmTableMethod,
        tiering: NvmTiering,
    ) -> Options {
        let mut o = crate::common::power_cut_options(Preset::Tlsm, fs, sim);
        o.nvm_capacity = 4 << 20;
        o.max_bytes_for_level_base = 12 << 10;
        o.level0_compaction_trigger = 2;
        o.nvm_table_method = method;
        o.nvm_tiering = tiering;
        // Reclaim eagerly, so that the short run below rewrites tables too.
        o.nvm_gc_live_ratio = 0.9;
        o.nvm_gc_pool_share = 0.0;
        o
    }

    /// Synced writes (acknowledged and durable before any background work runs), with
    /// overwrites so that compactions drop entries and buffers become partly dead.
    fn setup(
        fs: &MemFs,
        sim: &SimNvm,
        method: NvmTableMethod,
        tiering: NvmTiering,
    ) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
        let db = Db::open("/db", sim_options(fs, sim, method, tiering)).unwrap();
        let wo = WriteOptions { sync: true };
        let mut model = BTreeMap::new();
        for i in 0..900u64 {
            let k = format!("k{:05}", (i * 7919) % 400).into_bytes();
            let v = format!("v{i}-{}", "y".repeat((i % 40) as usize)).into_bytes();
            db.put_opt(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
        (db, model)
    }

    fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
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

    /// Checks a reopened database: every table verifies, more background work runs, the
    /// data still equals `model`; then closes it. `what` names the case in failures.
    fn verify_work_close(db: Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
        db.verify()
            .unwrap_or_else(|e| panic!("{what}: verify: {e}"));
        db.run_background_work(usize::MAX)
            .unwrap_or_else(|e| panic!("{what}: work: {e}"));
        assert!(scan(&db) == *model, "{what}: after more work");
        db.close().unwrap();
    }

    /// A power cut at every persist point of the background work that follows acknowledged
    /// writes (flushes into NVM tables, compactions between them, moves to SSD, rewrites
    /// that free buffers): reopening recovers exactly the acknowledged data, every table
    /// verifies, and the database goes on working.
    fn at_every_persist_point(
        method: NvmTableMethod,
        tiering: NvmTiering,
        stride: u64,
    ) -> (u64, u64) {
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let (db, _) = setup(&fs, &sim, method, tiering);
        let p0 = sim.persist_points();
        db.run_background_work(usize::MAX).unwrap();
        let p1 = sim.persist_points();
        let s = db.stats();
        assert!(s.compactions > 0, "{method:?}\n{s}");
        if method != NvmTableMethod::Ps && tiering == NvmTiering::Full {
            assert!(
                s.nvm_tables.rewrites > 0,
                "{method:?}: no buffer reclaimed\n{s}"
            );
        }
        if let NvmTiering::Lru(_) = tiering {
            assert!(
                s.nvm_tables.tier_moves > 0,
                "{method:?}: no move to SSD\n{s}"
            );
        }
        assert!(
            s.nvm_tables.objects > 0 || s.nvm_tables.tier_moves > 0,
            "{method:?}: no NVM table was written\n{s}"
        );
        drop(db);
        let mut checked = 0;
        let mut resumed = 0;
        let mut cut = p0 + 1;
        while cut <= p1 + 1 {
            for keep in [KeepLines::None, KeepLines::Random] {
                let (fs, sim) = (MemFs::new(), SimNvm::new());
                let (db, model) = setup(&fs, &sim, method, tiering);
                assert_eq!(sim.persist_points(), p0, "the setup is not deterministic");
                sim.arm_cut_after(cut);
                let _ = db.run_background_work(usize::MAX);
                let (fs2, sim2) = crate::common::power_cut_images(&fs, &sim, keep, cut);
                drop(db);
                let db = Db::open("/db", sim_options(&fs2, &sim2, method, tiering))
                    .unwrap_or_else(|e| panic!("{method:?} cut {cut} {keep:?}: reopen: {e}"));
                assert!(
                    scan(&db) == model,
                    "{method:?} cut {cut} {keep:?}: recovered state differs"
                );
                resumed += db.stats().nvm_tables.resumed_compactions;
                verify_work_close(db, &model, &format!("{method:?} cut {cut} {keep:?}"));
                checked += 1;
            }
            cut += stride;
        }
        assert!(
            resumed > 0,
            "{method:?}: no cut left a compaction to resume"
        );
        (p1 - p0, checked)
    }

    /// Small enough that the background work moves tables to SSD.
    const LRU: NvmTiering = NvmTiering::Lru(96 << 10);

    /// A compaction into NVM tables cut short by a power failure is finished at the next
    /// open. When that open runs under options that keep much more of the pool for NVM
    /// memtables (here a mutable NVM memtable of `memtable` bytes, and the tiering
    /// `at_reopen`), the pool may have no room to finish it there: under a tiering that
    /// allows SSTs the rest of its outputs are SSTs; under `none` the open gives up its
    /// outputs (its inputs are all still in the version). Either way the open succeeds with
    /// every acknowledged write. Returns how many cuts were given up, how many were
    /// resumed and how many were checked.
    fn reopen_with_less_room_at_every_point(
        memtable: usize,
        at_reopen: NvmTiering,
    ) -> (u64, u64, u64) {
        let (method, tiering) = (NvmTableMethod::PsBacPb, NvmTiering::Full);
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let (db, _) = setup(&fs, &sim, method, tiering);
        let p0 = sim.persist_points();
        db.run_background_work(usize::MAX).unwrap();
        let p1 = sim.persist_points();
        drop(db);
        let heavier = |fs: &MemFs, sim: &SimNvm| {
            let mut o = sim_options(fs, sim, method, tiering);
            o.nvm_tiering = at_reopen;
            o.nvm_memtable = mezzanine::options::NvmMemtable::Mutable;
            o.nvm_memtable_size = memtable;
            o
        };
        let (mut given_up, mut finished, mut checked) = (0, 0, 0);
        for cut in p0 + 1..=p1 + 1 {
            let (fs, sim) = (MemFs::new(), SimNvm::new());
            let (db, model) = setup(&fs, &sim, method, tiering);
            sim.arm_cut_after(cut);
            let _ = db.run_background_work(usize::MAX);
            // Two identical images of the moment of the cut.
            let image = || {
                let crash = CrashOptions {
                    keep_unsynced: KeepUnsynced::None,
                    seed: cut,
                };
                let cut = PowerCut {
                    keep_unpersisted: KeepLines::None,
                    seed: cut,
                };
                (fs.crash_clone(&crash), sim.power_cut(&cut))
            };
            let (fs_same, sim_same) = image();
            let (fs2, sim2) = image();
            drop(db);
            let resumed = {
                let db = Db::open("/db", sim_options(&fs_same, &sim_same, method, tiering))
                    .unwrap_or_else(|e| panic!("cut {cut}: reopen: {e}"));
                db.stats().nvm_tables.resumed_compactions
            };
            let db = Db::open("/db", heavier(&fs2, &sim2))
                .unwrap_or_else(|e| panic!("cut {cut}: reopen with less room: {e}"));
            assert!(scan(&db) == model, "cut {cut}: recovered state differs");
            if resumed > 0 {
                if db.stats().nvm_tables.resumed_compactions == 0 {
                    given_up += 1;
                } else {
                    finished += 1;
                }
            }
            if at_reopen == NvmTiering::Full {
                // Every table in NVM, and the pool kept for the memtables: further work
                // would find it full (an error the test of full pools covers).
                db.close().unwrap();
            } else {
                verify_work_close(db, &model, &format!("cut {cut}, less room"));
            }
            checked += 1;
        }
        (given_up, finished, checked)
    }

    #[test]
    fn an_interrupted_compaction_without_room_to_finish_is_given_up() {
        // Two NVM memtables of 1984 KiB take all but about 100 KiB of the 4 MiB pool, less
        // than the interrupted compactions' tables need beside them; `none` keeps every
        // table in NVM.
        let (given_up, _, checked) =
            reopen_with_less_room_at_every_point(1984 << 10, NvmTiering::Full);
        assert!(checked > 20, "{checked}");
        assert!(given_up > 0, "no cut was given up ({checked} checked)");
    }

    #[test]
    fn an_interrupted_compaction_without_room_is_finished_in_ssts_where_allowed() {
        // The same pool, with NVM tables off at the reopen: the rest of every interrupted
        // compaction is written as SSTs, none is given up.
        let (given_up, finished, checked) =
            reopen_with_less_room_at_every_point(1984 << 10, NvmTiering::Off);
        assert!(checked > 20, "{checked}");
        assert_eq!(given_up, 0, "{finished} finished, {checked} checked");
        assert!(finished > 0, "no cut left a compaction to finish");
    }

    #[test]
    fn power_cut_at_every_persist_point_ps_bac_pb_full_nvm() {
        let (points, checked) =
            at_every_persist_point(NvmTableMethod::PsBacPb, NvmTiering::Full, 1);
        assert!(points > 20, "{points}");
        assert!(checked >= 2 * points);
    }

    #[test]
    fn power_cut_at_every_persist_point_ps_bac_pb_lru() {
        let (points, _) = at_every_persist_point(NvmTableMethod::PsBacPb, LRU, 1);
        assert!(points > 20, "{points}");
    }

    #[test]
    fn power_cut_at_persist_points_ps_bac_full_nvm() {
        // `ps+bac` persists node by node on flushes: every 7th point keeps the test short.
        let (points, _) = at_every_persist_point(NvmTableMethod::PsBac, NvmTiering::Full, 7);
        assert!(points > 20, "{points}");
    }

    #[test]
    fn power_cut_at_persist_points_ps_lru() {
        let (points, _) = at_every_persist_point(NvmTableMethod::Ps, LRU, 7);
        assert!(points > 20, "{points}");
    }
}

/// Byte-addressable compaction leaves dead entries in the buffers it points into; an
/// overwrite-heavy run with a few long-lived keys must not fill NVM with them once the pool
/// fills up. The same run without reclamation (a live-share threshold of 0) shows what
/// would be leaked; in a pool that the run leaves more than half free, nothing is rewritten
/// (the dead entries cost no room that anything needs, and the rewrites would cost writes).
#[test]
fn overwrites_do_not_fill_nvm_with_dead_entries() {
    let run = |ratio: f64, capacity: u64| {
        let dir = tempfile::tempdir().unwrap();
        let nvm = nvm_dir();
        let mut o = options(nvm.path(), NvmTableMethod::PsBacPb, NvmTiering::Full);
        o.nvm_capacity = capacity;
        o.nvm_gc_live_ratio = ratio;
        let db = Db::open(dir.path(), o).unwrap();
        let mut model = BTreeMap::new();
        // Hot keys overwritten every round, and a few cold keys written once among them:
        // every buffer keeps a few entries live for good.
        for round in 0..30u64 {
            for i in 0..600u64 {
                let k = format!("hot{i:05}").into_bytes();
                let v = format!("r{round}-{}", "z".repeat(80)).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
                if i % 30 == 0 {
                    let k = format!("cold{round:03}-{i:05}").into_bytes();
                    db.put(&k, b"cold").unwrap();
                    model.insert(k, b"cold".to_vec());
                }
            }
        }
        db.wait_for_background().unwrap();
        check(&db, &model);
        db.stats().nvm_tables
    };
    let roomy = 64 << 20;
    let without = run(0.0, roomy);
    assert_eq!(without.rewrites, 0);
    // A pool of which the unreclaimed run would take more than half: reclaiming starts.
    let tight = without.allocated_bytes * 3 / 2;
    let with = run(0.5, tight);
    println!("reclaiming in {tight}: {with:?}\nnot reclaiming: {without:?}");
    assert!(with.rewrites > 0, "{with:?}");
    assert!(
        with.allocated_bytes * 10 < without.allocated_bytes * 8,
        "reclaiming: {with:?}; not reclaiming: {without:?}"
    );
    // At most half the pool or twice the live bytes, and the few tables written since the
    // last reclaim.
    assert!(
        with.allocated_bytes <= (tight / 2).max(with.live_bytes * 2) + (256 << 10),
        "the pool holds more than half its room and twice the live bytes: {with:?}"
    );
    // The same run in a pool it leaves more than half free: no rewrite.
    let roomy_run = run(0.5, roomy);
    assert_eq!(roomy_run.rewrites, 0, "{roomy_run:?}");
}

/// `ps+bac+pb` tables under LRU tiering with no budget (nothing moves to SSD by age) in a
/// pool of `capacity` bytes.
fn unbounded_lru(nvm: &Path, capacity: u64) -> Options {
    let mut o = options(nvm, NvmTableMethod::PsBacPb, NvmTiering::Lru(u64::MAX));
    o.nvm_capacity = capacity;
    o
}

/// Six rounds of 2,000 new keys (`key(round, i)`) with values of about 400 bytes: about
/// 4.9 MB in all.
fn write_rounds(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, key: impl Fn(u64, u64) -> String) {
    for round in 0..6 {
        for i in 0..2_000u64 {
            let k = key(round, i).into_bytes();
            let v = format!("{i}-{}", "v".repeat(400)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
}

/// A WAL meant for NVM (`wal_on_nvm`) whose pool has no free range left for it (here: NVM
/// tables written under options that kept no WAL there) is a file instead: opens, writes
/// and flushes go on, nothing is lost, and the stats count the fallback.
#[test]
fn a_wal_without_room_in_nvm_falls_back_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let tables = unbounded_lru(nvm.path(), 4 << 20);
    let mut model = BTreeMap::new();
    let db = Db::open(dir.path(), tables.clone()).unwrap();
    write_rounds(&db, &mut model, |round, i| format!("k{round}-{i:06}"));
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    let s = db.stats();
    let mut with_wal = tables.clone();
    with_wal.wal_on_nvm = true;
    let free = tables.nvm_capacity - s.nvm_tables.allocated_bytes;
    assert!(
        free < with_wal.nvm_wal_bytes(),
        "the NVM tables left {free} bytes: room for a WAL, the test needs none\n{s}"
    );
    db.close().unwrap();

    let db = Db::open(dir.path(), with_wal.clone()).unwrap();
    assert!(db.stats().nvm_wal_fallbacks >= 1);
    for i in 0..3_000u64 {
        let k = format!("late-{i:06}").into_bytes();
        let v = format!("late-{i}").into_bytes();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.nvm_wal_fallbacks >= 2, "{s}");
    assert!(s.to_string().contains("WALs in files for want of NVM room"));
    check(&db, &model);
    // Unflushed writes in a fallback WAL survive a reopen.
    db.put(b"last", b"unflushed").unwrap();
    model.insert(b"last".to_vec(), b"unflushed".to_vec());
    drop(db);
    let db = Db::open(dir.path(), with_wal).unwrap();
    check(&db, &model);
    db.close().unwrap();
}

/// Under LRU tiering every merge writes NVM tables while the pool has room; once it has
/// none, merges write SSTs instead, and the stats count them (one reason the NVM tables
/// can hold less than the budget). A pool with room for everything counts none.
#[test]
fn merges_without_nvm_room_write_ssts_and_are_counted() {
    let run = |capacity: u64| {
        let dir = tempfile::tempdir().unwrap();
        let nvm = nvm_dir();
        let db = Db::open(dir.path(), unbounded_lru(nvm.path(), capacity)).unwrap();
        let mut model = BTreeMap::new();
        // Every round spans the whole key range, so flushes overlap and merges copy.
        write_rounds(&db, &mut model, |round, i| format!("k{i:06}-{round}"));
        db.flush().unwrap();
        db.wait_for_background().unwrap();
        check(&db, &model);
        db.stats()
    };
    let tight = run(4 << 20);
    let n = &tight.nvm_tables;
    assert!(n.merges_to_ssd_for_room > 0, "{tight}");
    assert!(n.bytes_to_ssd_for_room > 0, "{tight}");
    assert!(n.nvm_input_bytes_to_ssd > 0, "{tight}");
    let ssts_below_l0: usize = tight
        .levels
        .iter()
        .filter(|l| l.level > 0)
        .map(|l| l.files - l.nvm_files)
        .sum();
    assert!(ssts_below_l0 > 0, "{tight}");
    assert!(tight.to_string().contains("of SSTs for want of NVM room"));

    let roomy = run(64 << 20);
    assert_eq!(roomy.nvm_tables.merges_to_ssd_for_room, 0, "{roomy}");
    assert_eq!(roomy.nvm_tables.bytes_to_ssd_for_room, 0, "{roomy}");
    assert_eq!(roomy.nvm_tables.nvm_input_bytes_to_ssd, 0, "{roomy}");
}

/// A flushed `ps+bac+pb` table larger than a buffer chunk (4 MiB of blocks, the sink's
/// `BUFFER_CHUNK_BYTES`) takes
/// several buffer objects, each written when its blocks fill it: every entry reads back
/// from them, across a reopen (the objects as the manifest recorded them) and after a
/// compaction that points into them.
#[test]
fn a_table_larger_than_a_buffer_chunk_spans_several_buffers() {
    const BUFFER_CHUNK_BYTES: usize = 4 << 20;
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = options(nvm.path(), NvmTableMethod::PsBacPb, NvmTiering::Full);
    let table_bytes = 3 * BUFFER_CHUNK_BYTES + (BUFFER_CHUNK_BYTES / 2);
    o.write_buffer_size = table_bytes + (1 << 20);
    o.target_file_size = o.write_buffer_size as u64 * 2;
    o.max_bytes_for_level_base = o.target_file_size * 4;
    o.level0_compaction_trigger = 4;
    o.block_size = 4096;
    o.nvm_capacity = 96 << 20;
    let mut model = BTreeMap::new();
    let value = |i: u64| format!("{i:08}-{}", "v".repeat(1000)).into_bytes();
    let n = (table_bytes / 1024) as u64;
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for i in 0..n {
            let k = format!("key{:010}", i * 7919 % n).into_bytes();
            db.put(&k, &value(i)).unwrap();
            model.insert(k, value(i));
        }
        db.flush().unwrap();
        db.wait_for_background().unwrap();
        let s = db.stats();
        let nvm_files: usize = s.levels.iter().map(|l| l.nvm_files).sum();
        assert_eq!(nvm_files, 1, "{s}");
        // One index object and one buffer per chunk.
        let chunks = table_bytes.div_ceil(BUFFER_CHUNK_BYTES);
        assert!(
            s.nvm_tables.objects > chunks,
            "{} objects for a table of {table_bytes} bytes\n{s}",
            s.nvm_tables.objects
        );
        check(&db, &model);
        db.verify().unwrap();
    }
    let db = Db::open(dir.path(), o).unwrap();
    check(&db, &model);
    for i in (0..n).step_by(3) {
        let k = format!("key{i:010}").into_bytes();
        db.put(&k, b"over").unwrap();
        model.insert(k, b"over".to_vec());
    }
    db.compact_range(None, None).unwrap();
    check(&db, &model);
    db.verify().unwrap();
}
