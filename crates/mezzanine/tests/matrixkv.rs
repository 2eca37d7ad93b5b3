//! MatrixKV end to end: L0 as a matrix container in NVM, column compactions into L1,
//! checked against a model through flushes, switches, columns, page recycling and reopen.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use common::{check, key, nvm_dir, small_matrixkv_options, workload};
use mezzanine::{Db, ReadOptions};

/// A database with the test's options whose background work runs only when the writers
/// (or the test) run it: the same interleaving on every run.
fn open_manual(dir: &Path, nvm: &Path) -> Db {
    let mut o = small_matrixkv_options(nvm);
    o.manual_background = true;
    Db::open(dir, o).unwrap()
}

/// Columns streamed from the rows (one thread) and fetched into DRAM (two threads).
#[test]
fn rows_columns_and_reopen_match_the_model() {
    for threads in [1, 2] {
        rows_columns_and_reopen(threads);
    }
}

fn rows_columns_and_reopen(column_threads: usize) {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = small_matrixkv_options(nvm.path());
    o.column_threads = column_threads;
    let mut model = BTreeMap::new();
    let ssts_before = {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for round in 0..3 {
            workload(&db, &mut model, 8000, round);
            check(&db, &model);
        }
        db.wait_for_background().unwrap();
        check(&db, &model);
        let s = db.stats();
        println!("{s}");
        assert!(s.compactions > 0, "no column compaction\n{s}");
        // Drained to below the switch point: room for the memtable replayed at open.
        assert!(
            s.matrix.capacity_bytes - s.matrix.used_bytes >= 4 * o.write_buffer_size as u64,
            "{s}"
        );
        db.verify().unwrap();
        // An L0 SST is written only when readers pinned the pages a flush needed.
        s.levels[0].files - s.matrix.rows
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    check(&db, &model);
    // The WAL replayed at open became rows too: no L0 SST was added.
    let s = db.stats();
    assert!(s.levels[0].files - s.matrix.rows <= ssts_before, "{s}");
    workload(&db, &mut model, 4000, 9);
    check(&db, &model);
    db.verify().unwrap();
}

/// A flush whose row does not fit in the container's free pages waits for the column
/// compaction that frees some, rather than writing an L0 SST: driven by the writers alone
/// (`manual_background`), so the interleaving is the same on every run. The rows' live
/// bytes undercount the pages that partly drained rows still hold, so a check on the live
/// bytes alone lets such a flush through.
#[test]
fn a_flush_without_room_waits_for_a_column() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let db = open_manual(dir.path(), nvm.path());
    let mut model = BTreeMap::new();
    for round in 0..4 {
        workload(&db, &mut model, 8000, round);
        let s = db.stats();
        assert_eq!(
            s.levels[0].files, s.matrix.rows,
            "an L0 SST was written\n{s}"
        );
    }
    while db.run_background_work(16).unwrap() > 0 {}
    let s = db.stats();
    assert!(s.matrix.columns > 0, "{s}");
    assert_eq!(
        s.levels[0].files, s.matrix.rows,
        "an L0 SST was written\n{s}"
    );
    check(&db, &model);
}

/// Reads and seeks with and without cross-row hints give the same answers; with hints,
/// older rows' searches are narrowed and take fewer key comparisons.
#[test]
fn hints_narrow_row_searches_without_changing_answers() {
    let run = |hints: bool| {
        let dir = tempfile::tempdir().unwrap();
        let nvm = nvm_dir();
        let mut o = small_matrixkv_options(nvm.path());
        // A container that never switches: every row stays, so reads cross many rows.
        o.matrix_bytes = 4 << 20;
        o.matrix_switch_fraction = 0.95;
        o.matrix_hints = hints;
        let db = Db::open(dir.path(), o).unwrap();
        let mut model = BTreeMap::new();
        workload(&db, &mut model, 12_000, 0);
        db.flush().unwrap();
        for i in 0..4000u64 {
            let k = key(i * 7);
            assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "{k:?}");
        }
        // Seeks, both ways, on one cursor (its rows' seeks are chained), each followed by a
        // step in the other direction.
        let mut it = db.cursor(&ReadOptions::default()).unwrap();
        for i in 0..1500u64 {
            let t = key(i * 13 % 3100);
            let first = |it: &mezzanine::DbIterator| {
                it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
            };
            let model_kv = |e: Option<(&Vec<u8>, &Vec<u8>)>| e.map(|(k, v)| (k.clone(), v.clone()));
            if i % 2 == 0 {
                it.seek(&t);
                assert_eq!(
                    first(&it),
                    model_kv(model.range(t.clone()..).next()),
                    "seek {t:?}"
                );
                if it.valid() {
                    let k = it.key().to_vec();
                    it.prev();
                    assert_eq!(first(&it), model_kv(model.range(..k).next_back()), "prev");
                }
            } else {
                it.seek_for_prev(&t);
                assert_eq!(
                    first(&it),
                    model_kv(model.range(..=t.clone()).next_back()),
                    "seek_for_prev {t:?}"
                );
                if it.valid() {
                    let k = it.key().to_vec();
                    it.next();
                    let after = model.range((Bound::Excluded(k), Bound::Unbounded)).next();
                    assert_eq!(first(&it), model_kv(after), "next");
                }
            }
            it.status().unwrap();
        }
        db.stats().matrix
    };
    let with = run(true);
    let without = run(false);
    assert!(with.rows >= 8, "{with:?}");
    assert_eq!(without.rows_hinted, 0);
    assert!(with.rows_hinted > 0, "{with:?}");
    assert!(
        with.comparisons < without.comparisons,
        "hints did not cut comparisons: {} vs {}",
        with.comparisons,
        without.comparisons
    );
    assert_eq!(without.seek_rows_hinted, 0);
    assert!(with.seek_rows_hinted > 0, "{with:?}");
    assert_eq!(with.seek_rows_searched, without.seek_rows_searched);
    assert!(
        with.seek_comparisons < without.seek_comparisons,
        "hints did not cut seek comparisons: {} vs {}",
        with.seek_comparisons,
        without.seek_comparisons
    );
}

/// Column compactions give pages back: a long overwrite run stays within the container
/// and the pages in use stay below its size.
#[test]
fn drained_pages_are_reused() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let o = small_matrixkv_options(nvm.path());
    let db = Db::open(dir.path(), o).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..6 {
        workload(&db, &mut model, 10_000, round);
    }
    db.wait_for_background().unwrap();
    let s = db.stats();
    assert!(s.matrix.columns >= 5, "{s}");
    // Far more was written into rows than the container holds: its pages were reused.
    assert!(
        s.matrix.row_bytes_written > 4 * s.matrix.capacity_bytes,
        "{s}"
    );
    assert!(s.matrix.used_bytes <= s.matrix.capacity_bytes, "{s}");
    check(&db, &model);
}

/// An iterator and a snapshot taken before columns drain rows and their pages are reused
/// keep reading the state they saw, with background threads running; the pages come back
/// once they are dropped.
#[test]
fn readers_pin_drained_rows_until_they_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    // Background work at chosen points, so the run is the same every time.
    let db = open_manual(dir.path(), nvm.path());
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 6000, 0);
    db.flush().unwrap();
    let before = model.clone();
    let live_at_pin = db.stats().matrix.row_bytes;
    assert!(live_at_pin > 0, "{}", db.stats());
    let snap = db.snapshot();
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    // Enough writes for several switches, columns and reused pages.
    for round in 1..5 {
        workload(&db, &mut model, 10_000, round);
        db.run_background_work(usize::MAX).unwrap();
    }
    let s = db.stats();
    assert!(s.matrix.columns >= 1, "{s}");
    // The readers pin the rows they saw, drained or not: their pages are not back yet.
    let pinned = s.matrix.used_bytes;
    assert!(pinned >= live_at_pin, "{s}");
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    for (k, v) in before.iter().step_by(5) {
        assert_eq!(
            db.get_opt(&ro, k).unwrap().as_deref(),
            Some(&v[..]),
            "{k:?}"
        );
    }
    let mut got = BTreeMap::new();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    assert!(got == before, "the old iterator's view changed");
    drop(it);
    drop(snap);
    drop(ro);
    // Once they let go, the next clean-up gives the pages back.
    workload(&db, &mut model, 10_000, 9);
    db.run_background_work(usize::MAX).unwrap();
    let s = db.stats();
    assert!(s.matrix.used_bytes < pinned, "pages did not come back\n{s}");
    check(&db, &model);
    db.verify().unwrap();
}

/// A power cut at every persist point of the background work after acknowledged (synced)
/// writes: flushes into rows, switches, column compactions and the rows written into
/// recycled pages. Reopening recovers exactly the acknowledged data, every table verifies,
/// and the database goes on working.
mod power_cut {
    use std::collections::BTreeMap;

    use mezz_env::MemFs;
    use mezz_pmem::{KeepLines, SimNvm};
    use mezzanine::{Db, Options, Preset, ReadOptions, WriteOptions};

    type Model = BTreeMap<Vec<u8>, Vec<u8>>;

    fn sim_options(fs: &MemFs, sim: &SimNvm) -> Options {
        let mut o = crate::common::power_cut_options(Preset::Matrixkv, fs, sim);
        o.matrix_bytes = 64 << 10;
        o.matrix_page_size = 4096;
        o
    }

    /// Synced writes with background work after every 100: flushes into rows, switches,
    /// columns, and rows written into pages drained rows gave back. Returns the database,
    /// the writes acknowledged before the armed cut (if any) happened, and the persist
    /// points each background step spanned. The cut can only happen inside background work
    /// (the caller arms it there), so no write is in flight when it does.
    fn setup(fs: &MemFs, sim: &SimNvm, n: u64) -> (Db, Model, Vec<(u64, u64)>) {
        let db = Db::open("/db", sim_options(fs, sim)).unwrap();
        let wo = WriteOptions { sync: true };
        let mut model = BTreeMap::new();
        let mut spans = Vec::new();
        for i in 0..n {
            let k = format!("k{:05}", (i * 7919) % 400).into_bytes();
            let v = format!("v{i}-{}", "y".repeat((i % 40) as usize)).into_bytes();
            db.put_opt(&wo, &k, &v).unwrap();
            model.insert(k, v);
            if i % 100 == 99 {
                let p = sim.persist_points();
                let _ = db.run_background_work(usize::MAX);
                spans.push((p, sim.persist_points()));
                if sim.cut_happened() {
                    break;
                }
            }
        }
        (db, model, spans)
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

    #[test]
    fn power_cut_at_every_persist_point_of_rows_and_columns() {
        const N: u64 = 1500;
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let (db, _, spans) = setup(&fs, &sim, N);
        let s = db.stats();
        assert!(s.matrix.columns > 0, "{s}");
        assert!(
            s.matrix.row_bytes_written > s.matrix.capacity_bytes,
            "the setup never reused a page\n{s}"
        );
        drop(db);
        // Every persist point of the background work (the cut falls at the start of it).
        let cuts: Vec<u64> = spans.iter().flat_map(|&(a, b)| a + 1..=b).collect();
        let mut checked = 0;
        for &cut in &cuts {
            for keep in [KeepLines::None, KeepLines::Random] {
                let (fs, sim) = (MemFs::new(), SimNvm::new());
                sim.arm_cut_after(cut);
                let (db, model, _) = setup(&fs, &sim, N);
                assert!(
                    sim.cut_happened(),
                    "cut {cut}: the run is not deterministic"
                );
                let (fs2, sim2) = crate::common::power_cut_images(&fs, &sim, keep, cut);
                drop(db);
                let db = Db::open("/db", sim_options(&fs2, &sim2))
                    .unwrap_or_else(|e| panic!("cut {cut} {keep:?}: reopen: {e}"));
                assert!(
                    scan(&db) == model,
                    "cut {cut} {keep:?}: recovered state differs"
                );
                db.verify()
                    .unwrap_or_else(|e| panic!("cut {cut} {keep:?}: verify: {e}"));
                db.run_background_work(usize::MAX)
                    .unwrap_or_else(|e| panic!("cut {cut} {keep:?}: work: {e}"));
                assert!(scan(&db) == model, "cut {cut}: after more work");
                db.close().unwrap();
                checked += 1;
            }
        }
        println!(
            "{} persist points of background work, {checked} cuts checked",
            cuts.len()
        );
        assert!(cuts.len() >= 30, "{} persist points", cuts.len());
    }
}

/// A write group larger than a row of small pages can list (985 pages of 4 KiB: its page
/// list must fit in its header page) is flushed as an L0 SST: no background error, every
/// key readable, before and after a reopen. Before, the row's build failed and the flush's
/// error stopped every later write.
#[test]
fn a_write_group_too_large_for_a_row_becomes_an_sst() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = small_matrixkv_options(nvm.path());
    o.matrix_bytes = 16 << 20;
    o.nvm_capacity = 64 << 20;
    // A WAL in NVM bounds a group to about a memtable plus 1 MiB; a WAL file does not.
    o.wal_on_nvm = false;
    assert_eq!(o.matrix_page_bytes(), 4096);
    let value = |i: u32| format!("{i:06}").repeat(682).into_bytes(); // 4,092 bytes
    let db = Db::open(dir.path(), o.clone()).unwrap();
    // 1,200 values of 4 KiB: one group of about 4.7 MiB, a row of about 1,200 pages.
    let mut b = mezzanine::WriteBatch::new();
    for i in 0..1200u32 {
        b.put(format!("big{i:05}").as_bytes(), &value(i));
    }
    db.write(&mezzanine::WriteOptions::default(), b).unwrap();
    db.put(b"after", b"the group").unwrap();
    db.flush().unwrap();
    db.put(b"later", b"write").unwrap();
    let s = db.stats();
    assert!(s.levels[0].files > s.matrix.rows, "no L0 SST\n{s}");
    let reads = |db: &Db| {
        for i in (0..1200u32).step_by(7) {
            let got = db.get(format!("big{i:05}").as_bytes()).unwrap();
            assert_eq!(got.as_deref(), Some(value(i).as_slice()), "big{i:05}");
        }
        assert_eq!(db.get(b"later").unwrap().as_deref(), Some(&b"write"[..]));
    };
    reads(&db);
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    reads(&db);
    db.close().unwrap();
}
