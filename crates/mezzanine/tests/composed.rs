//! The designs composed along the whole data path (the `mezzanine` preset with MatrixKV's
//! parts added): a matrix container as L0 in NVM whose column compactions drain into NVM
//! tables at L1 (TLSM's `leveled:1`), with the WAL in NVM; and the same with NoveLSM's
//! mutable NVM memtable in front of the container. Checked
//! against a model through random writes, overwrites and deletes, columns, compactions into
//! SST levels, close and reopen; and power cuts inside column compactions into NVM tables.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;

use common::{nvm_dir, scan, small_mezzanine_options};
use mezzanine::options::{NvmMemtable, NvmTiering};
use mezzanine::{Db, Options, Preset, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A small deterministic generator (xorshift64*), so that a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` random operations over `keys` keys: puts of values of 1..300 bytes (overwrites, as
/// keys repeat) and one delete in 10, applied to `db` and `model`. Returns every key
/// touched (deleted ones too, so the check reads keys that must be absent).
fn random_writes(db: &Db, model: &mut Model, rng: &mut Rng, n: u64, keys: u64) -> Vec<Vec<u8>> {
    let mut touched = Vec::new();
    for i in 0..n {
        let k = format!("key{:06}", rng.below(keys)).into_bytes();
        if rng.below(10) == 0 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let len = 1 + rng.below(300) as usize;
            let mut v = format!("v{i}-{}-", rng.next()).into_bytes();
            v.resize(len.max(v.len()), b'a' + (i % 26) as u8);
            db.put(&k, &v).unwrap();
            model.insert(k.clone(), v);
        }
        touched.push(k);
    }
    touched.sort();
    touched.dedup();
    touched
}

/// Every touched key reads back its last value (or nothing) through `get`, and a full
/// forward iteration equals the model, as does a backward one.
fn check_all(db: &Db, model: &Model, touched: &[Vec<u8>], when: &str) {
    for k in touched {
        assert_eq!(
            db.get(k).unwrap().as_deref(),
            model.get(k).map(Vec::as_slice),
            "{when}: get {}",
            String::from_utf8_lossy(k)
        );
    }
    let got = scan(db, &ReadOptions::default());
    assert_eq!(got.len(), model.len(), "{when}: scan length");
    assert!(got == *model, "{when}: the scan differs from the model");
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    assert!(
        back.into_iter().eq(model.clone()),
        "{when}: the backward scan differs from the model"
    );
}

fn composed_round_trip(o: &Options, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let mut rng = Rng(0x6d65_7a7a_616e_696e);
    let mut touched = Vec::new();
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for round in 0..4 {
            touched.extend(random_writes(&db, &mut model, &mut rng, 6000, 2500));
            check_all(&db, &model, &touched, &format!("{what} round {round}"));
        }
        db.wait_for_background().unwrap();
        touched.sort();
        touched.dedup();
        check_all(&db, &model, &touched, &format!("{what} after the writes"));
        let s = db.stats();
        println!("{what}:\n{s}");
        assert!(s.matrix.columns > 0, "{what}: no column compaction\n{s}");
        assert!(
            s.levels[1].nvm_files > 0,
            "{what}: L1 holds no NVM table\n{s}"
        );
        assert_eq!(
            s.levels[1].nvm_files, s.levels[1].files,
            "{what}: an SST in L1, an NVM level\n{s}"
        );
        assert!(
            s.levels.iter().skip(2).all(|l| l.nvm_files == 0),
            "{what}: an NVM table below L1 under leveled:1\n{s}"
        );
        db.verify().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), o.clone()).unwrap();
    check_all(&db, &model, &touched, &format!("{what} after reopen"));
    assert!(db.stats().levels[1].nvm_files > 0);
    touched.extend(random_writes(&db, &mut model, &mut rng, 4000, 2500));
    touched.sort();
    touched.dedup();
    db.compact_range(None, None).unwrap();
    check_all(
        &db,
        &model,
        &touched,
        &format!("{what} after compact_range"),
    );
    db.verify().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    check_all(
        &db,
        &model,
        &touched,
        &format!("{what} after the second reopen"),
    );
    db.close().unwrap();
}

/// The preset is the composition it claims to be: an NVM memtable that takes writes when
/// the DRAM ones are all taken (`overflow`), NVM tables under LRU tiering (the NVM WAL and
/// the container are additions the tests here make).
#[test]
fn the_mezzanine_preset_is_the_composition_it_claims() {
    let o = Options::preset(Preset::Mezzanine);
    assert_eq!(o.matrix_bytes, 0);
    assert!(!o.wal_on_nvm);
    assert_eq!(o.nvm_memtable, mezzanine::options::NvmMemtable::Overflow);
    assert_eq!(o.nvm_tiering, NvmTiering::Lru(0));
    assert_eq!(Preset::parse("mezzanine").unwrap(), Preset::Mezzanine);
    assert!(Preset::ALL.contains(&Preset::Mezzanine));
}

/// Columns drain the container into NVM tables at L1; every key reads back its last value
/// before and after a reopen.
#[test]
fn columns_drain_into_nvm_tables_and_survive_reopen() {
    let nvm = nvm_dir();
    composed_round_trip(&small_mezzanine_options(nvm.path()), "mezzanine");
}

/// The same with NoveLSM's mutable NVM memtable in front of the container.
#[test]
fn a_mutable_nvm_memtable_in_front_of_the_composition() {
    let nvm = nvm_dir();
    let mut o = small_mezzanine_options(nvm.path());
    o.nvm_memtable = NvmMemtable::Mutable;
    o.nvm_memtable_size = 256 << 10;
    o.validate().unwrap();
    composed_round_trip(&o, "mezzanine + mutable NVM memtable");
}

/// Background work run by the writers (`manual_background`): the same interleaving on
/// every run, columns with two fetch threads.
#[test]
fn manual_background_and_column_threads() {
    let nvm = nvm_dir();
    let mut o = small_mezzanine_options(nvm.path());
    o.manual_background = true;
    o.column_threads = 2;
    composed_round_trip(&o, "mezzanine, manual background, 2 column threads");
}

/// The other tierings a container composes with: `lru` (tables move to SSD past a budget,
/// never the container's rows, which are in NVM too), `leveled:2` and `none` (every level
/// NVM tables). Each matches the model across a reopen, and its tables are where the
/// tiering puts them.
#[test]
fn a_container_over_each_tiering() {
    for tiering in [
        NvmTiering::Lru(256 << 10),
        NvmTiering::Leveled(2),
        NvmTiering::Full,
    ] {
        let what = format!("mezzanine, nvm_tiering {tiering:?}");
        let nvm = nvm_dir();
        let mut o = small_mezzanine_options(nvm.path());
        o.nvm_tiering = tiering;
        o.max_bytes_for_level_base = 256 << 10;
        o.nvm_capacity = 32 << 20;
        o.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut model = Model::new();
        let mut rng = Rng(0x7469_6572);
        let mut touched = Vec::new();
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for _ in 0..4 {
            touched.extend(random_writes(&db, &mut model, &mut rng, 6000, 4000));
        }
        db.wait_for_background().unwrap();
        touched.sort();
        touched.dedup();
        check_all(&db, &model, &touched, &what);
        let s = db.stats();
        assert!(s.matrix.columns > 0, "{what}\n{s}");
        // Below L0 (whose `nvm_files` are the container's rows).
        let nvm_files: usize = s.levels.iter().skip(1).map(|l| l.nvm_files).sum();
        match tiering {
            NvmTiering::Lru(_) => {
                assert!(s.nvm_tables.tier_moves > 0, "{what}: no move to SSD\n{s}");
                // Moves take NVM tables only: rows leave L0 through columns.
                assert_eq!(s.levels[0].files, s.matrix.rows, "{what}: an L0 SST\n{s}");
            }
            NvmTiering::Leveled(k) => {
                assert!(s.levels[1].nvm_files > 0, "{what}\n{s}");
                assert!(
                    s.levels.iter().skip(k + 1).all(|l| l.nvm_files == 0),
                    "{what}: an NVM table below L{k}\n{s}"
                );
            }
            _ => {
                let files: usize = s.levels.iter().skip(1).map(|l| l.files).sum();
                assert!(nvm_files > 0 && nvm_files == files, "{what}: an SST\n{s}");
            }
        }
        db.verify().unwrap();
        db.close().unwrap();
        let db = Db::open(dir.path(), o).unwrap();
        check_all(&db, &model, &touched, &format!("{what}, after reopen"));
        db.close().unwrap();
    }
}

/// A pool with little room beside the container and the WALs: a column that finds it full
/// writes its tables as SSTs instead (`leveled:1` allows them), at L1 beside the NVM
/// tables there; nothing is lost, and the database reopens.
#[test]
fn columns_fall_back_to_ssts_when_the_pool_is_full() {
    let nvm = nvm_dir();
    let mut o = small_mezzanine_options(nvm.path());
    o.nvm_capacity = (1 << 20).max(o.nvm_bytes_needed() + (160 << 10));
    o.validate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let mut rng = Rng(0x706f_6f6c);
    let mut touched = Vec::new();
    let mut saw_sst_in_l1 = false;
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        for round in 0..4 {
            touched.extend(random_writes(&db, &mut model, &mut rng, 6000, 2500));
            db.wait_for_background().unwrap();
            let s = db.stats();
            saw_sst_in_l1 |= s.levels[1].files > s.levels[1].nvm_files;
            check_all(&db, &model, &touched, &format!("full pool, round {round}"));
        }
        let s = db.stats();
        println!("{s}");
        assert!(s.matrix.columns > 0, "{s}");
        assert!(
            saw_sst_in_l1,
            "no column (or L1 compaction) fell back to SSTs\n{s}"
        );
        db.verify().unwrap();
        db.close().unwrap();
    }
    touched.sort();
    touched.dedup();
    let db = Db::open(dir.path(), o).unwrap();
    check_all(&db, &model, &touched, "full pool, after reopen");
    db.verify().unwrap();
    db.close().unwrap();
}

/// Power cuts inside column compactions that write NVM tables: their outputs are recorded
/// in the manifest before they are written, and a column is never resumed (the rows'
/// consumed counts are in its edit only), so the next open drops the orphan outputs and
/// the next column redoes the work. No acknowledged synced write is lost, and the NVM
/// objects the manifest lists after the reopen are those of the state before the column
/// or after it, never more (the pool's free space is rebuilt from that list at every open
/// and the dropped outputs are freed at once).
mod power_cut {
    use std::collections::BTreeMap;

    use mezz_env::MemFs;
    use mezz_pmem::{KeepLines, SimNvm};
    use mezzanine::options::NvmTableMethod;
    use mezzanine::{Db, Options, Preset, ReadOptions, WriteOptions};

    type Model = BTreeMap<Vec<u8>, Vec<u8>>;

    /// The NVM tables the manifest lists: (objects, bytes of them).
    type Objects = (usize, u64);

    fn objects(db: &Db) -> Objects {
        let s = db.stats().nvm_tables;
        (s.objects, s.allocated_bytes)
    }

    /// A column compaction of the uncut run: the persist points it spanned, and the NVM
    /// tables listed before and after it.
    #[derive(Debug, Clone, Copy)]
    struct Column {
        points: (u64, u64),
        before: Objects,
        after: Objects,
    }

    fn sim_options(fs: &MemFs, sim: &SimNvm, method: NvmTableMethod) -> Options {
        // The preset with an NVM WAL and a container over NVM tables at L1 (its mutable
        // NVM memtable off: the cuts are to land in columns).
        let mut o = crate::common::power_cut_options(Preset::Mezzanine, fs, sim);
        o.nvm_memtable = mezzanine::options::NvmMemtable::Off;
        o.nvm_tiering = mezzanine::options::NvmTiering::Leveled(1);
        o.wal_on_nvm = true;
        o.matrix_bytes = 64 << 10;
        o.matrix_page_size = 4096;
        o.nvm_table_method = method;
        o
    }

    /// Synced writes with background work, one job at a time, after every 100: flushes into
    /// rows, switches, columns into NVM tables at L1, compactions of L1 into SSTs. Returns
    /// the database, the writes acknowledged (all before the armed cut, if any, which can
    /// only happen inside background work) and the column compactions run.
    fn setup(fs: &MemFs, sim: &SimNvm, method: NvmTableMethod, n: u64) -> (Db, Model, Vec<Column>) {
        let db = Db::open("/db", sim_options(fs, sim, method)).unwrap();
        let wo = WriteOptions { sync: true };
        let mut model = BTreeMap::new();
        let mut columns = Vec::new();
        'writes: for i in 0..n {
            let k = format!("k{:05}", (i * 7919) % 400).into_bytes();
            let v = format!("v{i}-{}", "y".repeat((i % 40) as usize)).into_bytes();
            db.put_opt(&wo, &k, &v).unwrap();
            model.insert(k, v);
            if i % 100 == 99 {
                loop {
                    let (p, c, before) = (
                        sim.persist_points(),
                        db.stats().matrix.columns,
                        objects(&db),
                    );
                    let ran = db.run_background_work(1);
                    if sim.cut_happened() {
                        break 'writes;
                    }
                    if db.stats().matrix.columns > c {
                        columns.push(Column {
                            points: (p, sim.persist_points()),
                            before,
                            after: objects(&db),
                        });
                    }
                    if ran.unwrap() == 0 {
                        break;
                    }
                }
            }
        }
        (db, model, columns)
    }

    fn scan(db: &Db) -> Model {
        crate::common::scan(db, &ReadOptions::default())
    }

    /// Cuts at the persist points of column compactions (every `stride`-th), each with no
    /// unpersisted line kept and with a random subset kept. Returns the points and cuts.
    fn cut_inside_columns(method: NvmTableMethod, stride: usize) -> (usize, usize) {
        const N: u64 = 1500;
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let (db, _, columns) = setup(&fs, &sim, method, N);
        let s = db.stats();
        assert!(s.matrix.columns > 0, "{s}");
        assert!(
            columns.iter().any(|c| c.after.0 > c.before.0),
            "{method:?}: no column wrote an NVM table\n{columns:?}\n{s}"
        );
        assert!(s.levels[1].nvm_files > 0, "{method:?}\n{s}");
        drop(db);
        let cuts: Vec<(u64, Column)> = columns
            .iter()
            .filter(|c| c.after.0 > c.before.0)
            .flat_map(|c| (c.points.0 + 1..=c.points.1).map(move |p| (p, *c)))
            .collect();
        let mut checked = 0;
        for &(cut, column) in cuts.iter().step_by(stride) {
            for keep in [KeepLines::None, KeepLines::Random] {
                let what = format!("{method:?} cut {cut} {keep:?} ({column:?})");
                let (fs, sim) = (MemFs::new(), SimNvm::new());
                sim.arm_cut_after(cut);
                let (db, model, _) = setup(&fs, &sim, method, N);
                assert!(sim.cut_happened(), "{what}: the run is not deterministic");
                let (fs2, sim2) = crate::common::power_cut_images(&fs, &sim, keep, cut);
                drop(db);
                let db = Db::open("/db", sim_options(&fs2, &sim2, method))
                    .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
                assert!(scan(&db) == model, "{what}: recovered state differs");
                let after_open = objects(&db);
                assert!(
                    after_open == column.before || after_open == column.after,
                    "{what}: the manifest lists NVM tables {after_open:?} after the reopen"
                );
                assert_eq!(
                    db.stats().nvm_tables.resumed_compactions,
                    0,
                    "{what}: a column was resumed"
                );
                db.verify()
                    .unwrap_or_else(|e| panic!("{what}: verify: {e}"));
                db.close().unwrap();
                // Nothing was left for a second open to drop.
                let db = Db::open("/db", sim_options(&fs2, &sim2, method))
                    .unwrap_or_else(|e| panic!("{what}: second reopen: {e}"));
                assert_eq!(objects(&db), after_open, "{what}: second reopen");
                db.run_background_work(usize::MAX)
                    .unwrap_or_else(|e| panic!("{what}: work: {e}"));
                assert!(scan(&db) == model, "{what}: after more work");
                db.verify()
                    .unwrap_or_else(|e| panic!("{what}: verify after work: {e}"));
                db.close().unwrap();
                checked += 1;
            }
        }
        println!(
            "{method:?}: {} persist points inside columns into NVM tables, {checked} cuts checked",
            cuts.len()
        );
        (cuts.len(), checked)
    }

    #[test]
    fn power_cuts_inside_columns_into_nvm_tables_ps_bac_pb() {
        let (points, checked) = cut_inside_columns(NvmTableMethod::PsBacPb, 1);
        assert!(points >= 10, "{points} persist points");
        assert!(checked >= 2 * points.min(10));
    }

    #[test]
    fn power_cuts_inside_columns_into_nvm_tables_ps() {
        let (points, _) = cut_inside_columns(NvmTableMethod::Ps, 5);
        assert!(points >= 10, "{points} persist points");
    }
}

/// A merge whose inputs are SSTs under `lru` tiering, into a pool that holds only part of
/// its output: the first tables are NVM tables while the pool has room for another, the
/// rest SSTs, in key order (before, such a merge wrote SSTs only, as its whole copy did
/// not fit). Nothing is lost, across a reopen and a second merge.
#[test]
fn a_merge_writes_nvm_tables_while_the_pool_has_room_then_ssts() {
    let nvm = nvm_dir();
    let mut o = Options::preset(Preset::Mezzanine);
    o.nvm_memtable = NvmMemtable::Off;
    o.write_buffer_size = 32 << 10;
    o.target_file_size = 32 << 10;
    o.max_bytes_for_level_base = 256 << 10;
    o.block_size = 1024;
    o.nvm_prefault = false;
    o.nvm_dir = Some(nvm.path().to_path_buf());
    o.nvm_capacity = 1 << 20;
    // A budget above the pool: no table moves to SSD, only the pool's room decides.
    o.nvm_tiering = NvmTiering::Lru(64 << 20);
    o.validate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let mut rng = Rng(0x0073_7069_6c6c);
    // The data first as SSTs only (about 2.5 MB live, more than the pool).
    let mut ssts = o.clone();
    ssts.nvm_tiering = NvmTiering::Off;
    let mut touched = Vec::new();
    {
        let db = Db::open(dir.path(), ssts).unwrap();
        touched.extend(random_writes(&db, &mut model, &mut rng, 30_000, 15_000));
        db.compact_range(None, None).unwrap();
        assert!(db.stats().levels.iter().all(|l| l.nvm_files == 0));
        db.close().unwrap();
    }
    touched.sort();
    touched.dedup();
    let db = Db::open(dir.path(), o.clone()).unwrap();
    check_all(&db, &model, &touched, "before the merge");
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    println!("{s}");
    let mixed = s
        .levels
        .iter()
        .find(|l| l.nvm_files > 0 && l.files > l.nvm_files);
    assert!(
        mixed.is_some(),
        "no level holds both NVM tables and SSTs after the merge\n{s}"
    );
    check_all(&db, &model, &touched, "after the merge");
    db.verify().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    check_all(&db, &model, &touched, "after reopen");
    touched.extend(random_writes(&db, &mut model, &mut rng, 5_000, 15_000));
    touched.sort();
    touched.dedup();
    db.compact_range(None, None).unwrap();
    check_all(&db, &model, &touched, "after a second merge");
    db.verify().unwrap();
    db.close().unwrap();
}
