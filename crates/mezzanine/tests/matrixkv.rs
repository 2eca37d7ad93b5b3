//! MatrixKV end to end: L0 as a matrix container in NVM, column compactions into L1,
//! checked against a model through flushes, switches, columns, page recycling and reopen.

#![allow(clippy::unwrap_used)] // helpers shared by the tests below

use std::collections::BTreeMap;
use std::path::Path;

use mezzanine::{Db, Options, Preset, ReadOptions};

fn nvm_dir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

fn options(nvm: &Path) -> Options {
    let mut o = Options::preset(Preset::Matrixkv);
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
fn rows_columns_and_reopen_match_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let o = options(nvm.path());
    let mut model = BTreeMap::new();
    {
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
        db.verify().unwrap();
    }
    let db = Db::open(dir.path(), o.clone()).unwrap();
    check(&db, &model);
    workload(&db, &mut model, 4000, 9);
    check(&db, &model);
    db.verify().unwrap();
}
