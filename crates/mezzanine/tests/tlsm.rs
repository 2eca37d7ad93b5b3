//! TLSM end to end: NVM tables under each method and tiering policy, checked against a
//! model through flushes, compactions, moves to SSD, buffer reclamation and reopen.

#![allow(clippy::unwrap_used)] // helpers shared by the tests below

use std::collections::BTreeMap;
use std::path::Path;

use mezzanine::options::{NvmTableMethod, NvmTiering};
use mezzanine::{Db, Options, Preset, ReadOptions};

fn nvm_dir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

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

fn key(i: u64) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_003).into_bytes()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model.iter().step_by(7) {
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
    // Backwards too.
    it.seek_to_last();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.prev();
    }
    it.status().unwrap();
    assert_eq!(n, model.len());
}

fn workload(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, n: u64, round: u64) {
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
                assert!(nvm_files > 0, "{method:?} {tiering:?}: no NVM table\n{s}");
                if let NvmTiering::Lru(budget) = tiering {
                    assert!(
                        s.nvm_tables.tier_moves > 0,
                        "{method:?}: no move to SSD\n{s}"
                    );
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
