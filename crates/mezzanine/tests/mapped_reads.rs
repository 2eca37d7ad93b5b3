//! `mmap_reads`: tables read through memory mappings return exactly what the `pread` path
//! returns, through flushes, compactions and a reopen, and the mappings really are there.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use mezzanine::{Db, Options};

fn opts(mapped: bool) -> Options {
    Options {
        mmap_reads: mapped,
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    common::check_keys(db, model, (0..4000u32).map(key), when);
}

#[test]
fn mapped_table_reads_return_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(true)).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..4u32 {
        for i in (0..4000u32).filter(|i| (i + round) % 3 != 0) {
            let k = key(i);
            if (i + round) % 11 == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("{round}-{i}-{}", "x".repeat((i % 200) as usize)).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.flush().unwrap();
        check(&db, &model, &format!("round {round}"));
    }
    db.compact_range(None, None).unwrap();
    check(&db, &model, "after a full compaction");
    #[cfg(target_os = "linux")]
    {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let dir_name = dir.path().to_string_lossy().to_string();
        assert!(
            maps.lines()
                .any(|l| l.contains(&dir_name) && l.ends_with(".sst")),
            "no table of {dir_name} is mapped"
        );
    }
    db.close().unwrap();
    drop(db);
    // Reopened both ways: the same data.
    for mapped in [true, false] {
        let db = Db::open(dir.path(), opts(mapped)).unwrap();
        check(&db, &model, &format!("reopened, mmap_reads = {mapped}"));
        db.close().unwrap();
    }
}
