//! Memtable switches that start an NVM object (an NVM memtable under `nvm_memtable =
//! mutable`, a WAL in NVM under `wal_on_nvm`) find it made ready and recorded in the
//! manifest by the flush job of the switch before, so the switch, which holds every
//! writer, writes no manifest record; a spare left over at a close or a crash is released
//! by the next open without losing or reviving anything.

#![allow(clippy::unwrap_used)] // helpers shared by the tests below

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{key, scan};
use mezz_env::{
    CrashOptions, FaultFs, FaultOp, FaultRule, FileSystem, KeepUnsynced, MemFs, Trigger,
};
use mezz_pmem::{KeepLines, PowerCut, SimNvm};
use mezzanine::options::{NvmMemtable, PersistMode};
use mezzanine::{Db, Options, Preset, ReadOptions, WriteOptions};

/// The configurations whose switches start NVM objects.
const MODES: [(NvmMemtable, bool); 3] = [
    (NvmMemtable::Mutable, false),
    (NvmMemtable::Mutable, true),
    (NvmMemtable::Off, true),
];

fn options(fs: Arc<dyn FileSystem>, sim: &SimNvm, mode: NvmMemtable, wal_on_nvm: bool) -> Options {
    let mut o = Options::preset(Preset::Novelsm);
    o.fs = fs;
    o.nvm_dir = Some("/nvm".into());
    o.nvm_persistence = PersistMode::CrashSim;
    o.nvm_sim = Some(sim.clone());
    o.nvm_memtable = mode;
    o.wal_on_nvm = wal_on_nvm;
    o.write_buffer_size = 64 << 10;
    o.nvm_memtable_size = 256 << 10;
    o.nvm_prefault = false;
    o.manual_background = true;
    o.nvm_capacity = (8 << 20).max(o.nvm_bytes_needed() + (1 << 20));
    o
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat((i % 40) as usize)).into_bytes()
}

/// Writes until `switches` memtable switches have happened, running the due background
/// work after each one; from the first switch's flush on, every write to a MANIFEST file
/// fails. Returns the model of what was written.
fn write_through_switches(
    db: &Db,
    faulty: &FaultFs,
    switches: usize,
    what: &str,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    let mut seen = 0;
    for i in 0.. {
        db.put(&key(i), &value(i))
            .unwrap_or_else(|e| panic!("{what}: put {i} after {seen} switches: {e}"));
        model.insert(key(i), value(i));
        if db.stats().immutable_memtables > 0 {
            seen += 1;
            // The flush (and the spare it makes ready) writes the manifest.
            faulty.clear_rules();
            while db.run_background_work(8).unwrap() > 0 {}
            if seen == switches {
                break;
            }
            faulty.add_rule(
                FaultRule::new(Some(FaultOp::Write), Trigger::After(0)).on_path("MANIFEST"),
            );
            faulty.add_rule(
                FaultRule::new(Some(FaultOp::Sync), Trigger::After(0)).on_path("MANIFEST"),
            );
        }
    }
    model
}

#[test]
fn a_switch_after_the_first_writes_no_manifest_record() {
    for (mode, wal_on_nvm) in MODES {
        let what = format!("{mode:?}, wal_on_nvm {wal_on_nvm}");
        let mem = MemFs::new();
        let faulty = FaultFs::new(Arc::new(mem.clone()));
        let sim = SimNvm::new();
        let db = Db::open(
            "/db",
            options(Arc::new(faulty.clone()), &sim, mode, wal_on_nvm),
        )
        .unwrap();
        // Six switches: under `mutable`, three from DRAM to NVM and three back.
        let model = write_through_switches(&db, &faulty, 6, &what);
        assert_eq!(faulty.injected(), 0, "{what}: a switch wrote the manifest");
        assert!(
            scan(&db, &ReadOptions::default()) == model,
            "{what}: the database differs from the model"
        );
        db.close().unwrap();
        let db = Db::open(
            "/db",
            options(Arc::new(mem.clone()), &sim, mode, wal_on_nvm),
        )
        .unwrap();
        assert!(
            scan(&db, &ReadOptions::default()) == model,
            "{what}: reopened, the database differs from the model"
        );
        db.close().unwrap();
    }
}

#[test]
fn a_spare_left_by_a_crash_or_a_close_is_released_by_the_next_open() {
    for (mode, wal_on_nvm) in MODES {
        for crash in [false, true] {
            let what = format!("{mode:?}, wal_on_nvm {wal_on_nvm}, crash {crash}");
            let sim = SimNvm::new();
            let mut mem = MemFs::new();
            let mut sim = sim;
            let mut model = BTreeMap::new();
            // Each round leaves a spare behind; a pool of the least size the options need
            // has no room for a leaked one, so a later round would put its WALs in files.
            for round in 0..4u64 {
                let faulty = FaultFs::new(Arc::new(mem.clone()));
                let mut o = options(Arc::new(faulty.clone()), &sim, mode, wal_on_nvm);
                o.nvm_memtable_size = 512 << 10;
                o.nvm_capacity = o.nvm_bytes_needed().max(1 << 20);
                // Strict recovery: an empty spare log newer than every other must not make
                // the newest log look as if it lost its tail.
                o.recovery_mode = mezzanine::options::RecoveryMode::AbsoluteConsistency;
                let db =
                    Db::open("/db", o).unwrap_or_else(|e| panic!("{what}, round {round}: {e}"));
                assert!(
                    scan(&db, &ReadOptions::default()) == model,
                    "{what}, round {round}: the database differs from the model"
                );
                // Two switches and their flushes: a spare is ready for the third.
                model.extend(write_through_switches(&db, &faulty, 2, &what));
                assert_eq!(
                    db.stats().nvm_wal_fallbacks,
                    0,
                    "{what}, round {round}: the pool ran short"
                );
                // A synced write: it must survive a power cut, as everything before it.
                let v = format!("{round}").into_bytes();
                db.put_opt(&WriteOptions { sync: true }, b"synced", &v)
                    .unwrap();
                model.insert(b"synced".to_vec(), v);
                if crash {
                    let fs = mem.crash_clone(&CrashOptions {
                        keep_unsynced: KeepUnsynced::None,
                        seed: round,
                    });
                    let cut = sim.power_cut(&PowerCut {
                        keep_unpersisted: KeepLines::None,
                        seed: round,
                    });
                    drop(db);
                    (mem, sim) = (fs, cut);
                } else {
                    db.close().unwrap();
                }
            }
        }
    }
}
