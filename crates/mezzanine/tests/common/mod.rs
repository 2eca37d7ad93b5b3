//! Helpers shared by end-to-end tests (the NVM designs' above all): a directory for the
//! emulated NVM pool, options for the `novelsm` preset on simulated media (for power cuts),
//! small `matrixkv` and `mezzanine` options, a key spread and keys in write order, forward
//! scans (into a map, or counted), a mixed workload mirrored into a model, and checks of a
//! database against that model (point reads, a forward and a backward scan; or reads of
//! given keys and a forward scan).

#![allow(clippy::unwrap_used, dead_code)] // test helpers; not every test uses each one

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mezz_env::{FileSystem, MemFs};
use mezz_pmem::SimNvm;
use mezzanine::options::PersistMode;
use mezzanine::{Db, Options, Preset, ReadOptions};

/// A fresh directory for an NVM pool: on /dev/shm when it exists (a memory file system, as
/// emulated NVM), else in the system's temporary directory.
pub fn nvm_dir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// The `novelsm` preset with its files on `fs` and its pool on the simulated NVM `sim`
/// (which a test can cut the power of), 1 MiB NVM memtables in an 8 MiB pool.
pub fn sim_nvm_options(fs: &MemFs, sim: &SimNvm) -> Options {
    let mut o = Options::preset(Preset::Novelsm);
    o.fs = Arc::new(fs.clone()) as Arc<dyn FileSystem>;
    o.nvm_memtable_size = 1 << 20;
    o.nvm_capacity = 8 << 20;
    o.nvm_prefault = false;
    o.nvm_dir = Some("/nvm".into());
    o.nvm_persistence = PersistMode::CrashSim;
    o.nvm_sim = Some(sim.clone());
    o
}

/// `preset` for power cuts during background work: its files on `fs` behind a gate that
/// stops every change at the instant the simulated NVM `sim` loses power (so both crash
/// images are of one moment), the pool (16 MiB) on `sim`, deterministic background work,
/// 4 KiB memtables (up to 8) and tables, L1 of 64 KiB, 512-byte blocks.
pub fn power_cut_options(preset: Preset, fs: &MemFs, sim: &SimNvm) -> Options {
    let mut o = Options::preset(preset);
    let gate = mezz_env::FaultFs::new(Arc::new(fs.clone()));
    let s = sim.clone();
    gate.freeze_when(move || s.cut_happened());
    o.fs = Arc::new(gate);
    o.nvm_dir = Some("/nvm".into());
    o.nvm_persistence = PersistMode::CrashSim;
    o.nvm_sim = Some(sim.clone());
    o.nvm_capacity = 16 << 20;
    o.nvm_prefault = false;
    o.manual_background = true;
    o.write_buffer_size = 4 << 10;
    o.max_write_buffer_number = 8;
    o.target_file_size = 4 << 10;
    o.max_bytes_for_level_base = 64 << 10;
    o.block_size = 512;
    o
}

/// The two images a power cut leaves, seeded by `seed`: the files of `fs` without their
/// unsynced writes, and the simulated NVM `sim` keeping `keep` of its unpersisted lines.
pub fn power_cut_images(
    fs: &MemFs,
    sim: &SimNvm,
    keep: mezz_pmem::KeepLines,
    seed: u64,
) -> (MemFs, SimNvm) {
    let fs2 = fs.crash_clone(&mezz_env::CrashOptions {
        keep_unsynced: mezz_env::KeepUnsynced::None,
        seed,
    });
    let sim2 = sim.power_cut(&mezz_pmem::PowerCut {
        keep_unpersisted: keep,
        seed,
    });
    (fs2, sim2)
}

/// The `matrixkv` preset, small: 32 KiB memtables and tables, 1 KiB blocks, a 512 KiB
/// matrix container of 4 KiB pages in a 16 MiB pool in `nvm` (not pre-faulted).
pub fn small_matrixkv_options(nvm: &Path) -> Options {
    small_with_container(Options::preset(Preset::Matrixkv), nvm)
}

/// The designs composed along the whole data path: the `mezzanine` preset (NVM tables)
/// with MatrixKV's NVM WAL and matrix container added over NVM-table levels, scaled as
/// [`small_matrixkv_options`] scales `matrixkv`: 32 KiB memtables and tables, a 512 KiB
/// container of 4 KiB pages, L1 (NVM tables under `leveled:1`) of 512 KiB, in a 16 MiB
/// pool in `nvm` (not pre-faulted). The preset's mutable NVM memtable is off here (tests
/// turn it on; 256 KiB when they do).
pub fn small_mezzanine_options(nvm: &Path) -> Options {
    let mut o = Options::preset(Preset::Mezzanine);
    o.nvm_memtable = mezzanine::options::NvmMemtable::Off;
    o.nvm_memtable_size = 256 << 10;
    o.wal_on_nvm = true;
    o.nvm_tiering = mezzanine::options::NvmTiering::Leveled(1);
    small_with_container(o, nvm)
}

/// `o` scaled small with a matrix container: 32 KiB memtables and tables, 1 KiB blocks, L1
/// of 512 KiB, a 512 KiB container of 4 KiB pages, a 16 MiB pool in `nvm` (not
/// pre-faulted).
fn small_with_container(mut o: Options, nvm: &Path) -> Options {
    o.write_buffer_size = 32 << 10;
    o.target_file_size = 32 << 10;
    o.max_bytes_for_level_base = 512 << 10;
    o.block_size = 1024;
    o.matrix_bytes = 512 << 10;
    o.matrix_page_size = 4096;
    o.nvm_capacity = 16 << 20;
    o.nvm_prefault = false;
    o.nvm_dir = Some(nvm.to_path_buf());
    o
}

/// Key `i` in write order: keys sort as they were written.
pub fn ordered_key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// Key `i` of 100,003, spread over the key space.
pub fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_003).into_bytes()
}

/// Every entry `db` shows to a forward scan with `opts`.
pub fn scan(db: &Db, opts: &ReadOptions) -> BTreeMap<Vec<u8>, Vec<u8>> {
    collect(db.cursor(opts).unwrap())
}

/// Every entry of `it` from its first, in order.
pub fn collect(mut it: mezzanine::DbIterator) -> BTreeMap<Vec<u8>, Vec<u8>> {
    it.seek_to_first();
    let mut got = BTreeMap::new();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    got
}

/// How many entries `db` shows to a forward scan with `opts`.
pub fn count(db: &Db, opts: &ReadOptions) -> u64 {
    let mut it = db.cursor(opts).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    n
}

/// Every 7th key of `model` by `get`, then a forward scan equal to `model`, then a backward
/// scan of the same length.
pub fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]), "key {k:?}");
    }
    let got = scan(db, &ReadOptions::default());
    assert_eq!(got.len(), model.len());
    assert!(got == *model, "scan differs from the model");
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_last();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.prev();
    }
    it.status().unwrap();
    assert_eq!(n, model.len());
}

/// `get` of each of `keys` (present or not) as in `model`, then a forward scan equal to
/// `model`; `when` names the check in a failure.
pub fn check_keys(
    db: &Db,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    keys: impl IntoIterator<Item = Vec<u8>>,
    when: &str,
) {
    for k in keys {
        assert_eq!(
            db.get(&k).unwrap(),
            model.get(&k).cloned(),
            "{when}: key {}",
            String::from_utf8_lossy(&k)
        );
    }
    assert_eq!(&scan(db, &ReadOptions::default()), model, "{when}: scan");
}

/// `n` puts over 3,000 keys with values of varying length (round `round` in them), and a
/// delete after every 11th, applied to `db` and `model`.
pub fn workload(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, n: u64, round: u64) {
    for i in 0..n {
        let k = key(i % 3000);
        let v = format!("value-{round}-{i}-{}", "x".repeat((i % 60) as usize)).into_bytes();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        if i % 11 == 5 {
            let d = key((i / 3) % 3000);
            db.delete(&d).unwrap();
            model.remove(&d);
        }
    }
}
