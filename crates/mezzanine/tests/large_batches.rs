//! Write batches larger than a whole memtable: the batch goes into one memtable sized for
//! it (never split, never refused), and recovery replays it whether the WAL's memtable is
//! flushed at open (`leveldb`) or kept as a memtable (`novelsm`, whose NVM memtables are
//! mapped back).

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;

use common::{check, nvm_dir};
use mezzanine::{Db, Options, Preset, WriteBatch, WriteOptions};

fn options(preset: Preset, nvm: &std::path::Path) -> Options {
    let mut o = Options::preset(preset);
    o.write_buffer_size = 64 << 10;
    o.target_file_size = 256 << 10;
    o.nvm_memtable_size = 1 << 20;
    o.nvm_capacity = 16 << 20;
    o.nvm_prefault = false;
    if preset != Preset::Leveldb {
        o.nvm_dir = Some(nvm.to_path_buf());
    }
    o
}

#[test]
fn a_batch_larger_than_a_memtable_is_written_whole_and_recovered() {
    for preset in [Preset::Leveldb, Preset::Novelsm] {
        let dir = tempfile::tempdir().unwrap();
        let nvm = nvm_dir();
        let o = options(preset, nvm.path());
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..50u32 {
            let (k, v) = (format!("small{i:03}").into_bytes(), vec![b's'; 50]);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        // About 9 MB in one batch: 140 memtables' worth of `write_buffer_size`, and
        // more than the arena of one memtable of these options.
        let mut b = WriteBatch::new();
        for i in 0..40_000u32 {
            let k = format!("big{:06}", (i * 7919) % 40_000).into_bytes();
            let v = format!("{i:08}-{}", "b".repeat(200)).into_bytes();
            b.put(&k, &v);
            model.insert(k, v);
        }
        db.write(&WriteOptions { sync: true }, b).unwrap();
        for i in 0..50u32 {
            let (k, v) = (format!("small{i:03}").into_bytes(), vec![b't'; 60]);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        check(&db, &model);
        // Reopen without a flush: the WAL holding the batch is replayed.
        drop(db);
        let db = Db::open(dir.path(), o.clone()).unwrap();
        check(&db, &model);
        // And once more after its tables are written and compacted.
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        check(&db, &model);
        db.close().unwrap();
        let db = Db::open(dir.path(), o).unwrap();
        check(&db, &model);
        db.close().unwrap();
    }
}

/// A WAL written under a large `write_buffer_size` is replayed into the memtables of a
/// much smaller one.
#[test]
fn a_wal_larger_than_the_new_memtables_is_replayed() {
    for preset in [Preset::Leveldb, Preset::Novelsm] {
        let dir = tempfile::tempdir().unwrap();
        let nvm = nvm_dir();
        let mut big = options(preset, nvm.path());
        big.write_buffer_size = 64 << 20;
        let db = Db::open(dir.path(), big).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..60_000u32 {
            let k = format!("k{:06}", (i * 7919) % 60_000).into_bytes();
            let v = format!("{i}-{}", "v".repeat(100)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        drop(db);
        let db = Db::open(dir.path(), options(preset, nvm.path())).unwrap();
        check(&db, &model);
        db.close().unwrap();
    }
}
