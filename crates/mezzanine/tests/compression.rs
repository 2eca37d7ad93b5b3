//! Per-level block compression end to end: every SST is written with the codec of the level
//! it is written to (flushes to L0, compactions to deeper levels), reads back through gets,
//! scans and the block cache, survives reopening (also under other compression options,
//! since the codec is recorded per block), and the database verifies (what `mezz check`
//! runs).
//!
//! The level of each table comes from replaying the MANIFEST; its codec from the table's
//! own properties.

#![allow(clippy::unwrap_used)] // in the functions shared by the tests below

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use mezz_env::{FileSystem, PosixFs};
use mezz_format::log::{LogRead, LogReader};
use mezz_format::sst::{TableProperties, TableReader};
use mezzanine::internals::TableLocation;
use mezzanine::internals::VersionEdit;
use mezzanine::options::{Compression, LevelCompression};
use mezzanine::{BlockFormat, Db, Options, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u64) -> Vec<u8> {
    format!("user{:08}", (i * 7919) % 1_000_003).into_bytes()
}

/// Compressible values of varied length.
fn value(i: u64, round: u64) -> Vec<u8> {
    let word = ["alpha", "beta", "gamma", "delta"][(i % 4) as usize];
    format!("{round}:{i}:{}", word.repeat(10 + (i % 20) as usize)).into_bytes()
}

fn options(compression: &str) -> Options {
    let mut o = Options {
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        max_bytes_for_level_base: 96 << 10,
        level0_compaction_trigger: 2,
        num_levels: 5,
        block_cache_capacity: 256 << 10,
        ..Options::default()
    };
    o.set("compression", compression).unwrap();
    o.validate().unwrap();
    o
}

/// Writes `n` keys (round `round`), deletes every 11th, mirroring it into `model`.
fn write(db: &Db, model: &mut Model, n: u64, round: u64) {
    for i in 0..n {
        db.put(&key(i), &value(i, round)).unwrap();
        model.insert(key(i), value(i, round));
    }
    for i in (0..n).step_by(11) {
        db.delete(&key(i)).unwrap();
        model.remove(&key(i));
    }
}

/// Every key of the model reads back, absent keys are absent, a scan sees exactly the
/// model, and `verify` passes.
fn check(db: &Db, model: &Model, n: u64) {
    for i in 0..n {
        assert_eq!(
            db.get(&key(i)).unwrap().as_ref(),
            model.get(&key(i)),
            "key {i}"
        );
    }
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut want = model.iter();
    while it.valid() {
        let (k, v) = want.next().expect("scan returns more than the model");
        assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
        it.next();
    }
    assert!(want.next().is_none(), "scan ended early");
    // `verify` counts every stored entry, tombstones and older versions included.
    let report = db.verify().unwrap();
    assert!(report.entries as usize >= model.len() && report.tables > 0);
}

/// The live SSTs and their levels, from replaying the MANIFEST that CURRENT names.
fn live_tables(dir: &Path) -> Vec<(usize, u64)> {
    let fs = PosixFs::new();
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let file = fs.open_read(&dir.join(current.trim())).unwrap();
    let mut reader = LogReader::new(file);
    let mut live: HashMap<u64, usize> = HashMap::new();
    loop {
        match reader.read_record() {
            LogRead::Record { data, offset } => {
                let edit = VersionEdit::decode(&data, offset).unwrap();
                for (_, id) in &edit.deleted_tables {
                    live.remove(id);
                }
                for (level, meta) in &edit.new_tables {
                    assert!(matches!(meta.location, TableLocation::Sst { path_id: 0 }));
                    live.insert(meta.id, *level);
                }
            }
            LogRead::Eof => break,
            other => panic!("manifest: {other:?}"),
        }
    }
    let mut v: Vec<(usize, u64)> = live.into_iter().map(|(id, l)| (l, id)).collect();
    v.sort_unstable();
    v
}

fn properties(dir: &Path, id: u64) -> TableProperties {
    let path = dir.join(format!("{id:06}.sst"));
    let fs = PosixFs::new();
    let size = fs.file_size(&path).unwrap();
    let file = fs.open_read(&path).unwrap();
    TableReader::open(
        Arc::clone(&file),
        size,
        0,
        None,
        &mezz_format::KeyOrder::default(),
    )
    .unwrap()
    .properties()
    .clone()
}

/// Checks that every live table has the codec `want` gives its level; returns the codecs
/// seen per level.
fn tables_follow_levels(dir: &Path, want: &LevelCompression) -> BTreeMap<usize, Compression> {
    let mut seen = BTreeMap::new();
    let tables = live_tables(dir);
    assert!(!tables.is_empty());
    for (level, id) in tables {
        let p = properties(dir, id);
        let c = want.for_level(level);
        assert_eq!(p.compression, c, "table {id} at L{level}");
        if c == Compression::None {
            assert_eq!(p.num_compressed_blocks, 0);
        } else {
            assert!(
                p.num_compressed_blocks > 0,
                "table {id} at L{level}: nothing compressed"
            );
            assert!(
                p.data_size < p.uncompressed_block_bytes,
                "table {id}: {} stored bytes for {} bytes of blocks",
                p.data_size,
                p.uncompressed_block_bytes
            );
        }
        seen.insert(level, c);
    }
    seen
}

#[test]
fn per_level_compression_survives_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let n = 12_000;
    let mut model = Model::new();
    let o = options("none,lz4,zstd");
    let levels = o.compression.clone();
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        write(&db, &mut model, n, 1);
        write(&db, &mut model, n / 2, 2);
        db.flush().unwrap();
        db.wait_for_background().unwrap();
        check(&db, &model, n);
        let seen = tables_follow_levels(dir.path(), &levels);
        assert!(
            seen.values().any(|c| *c == Compression::Lz4)
                && seen.values().any(|c| *c == Compression::Zstd),
            "the tree should reach L1 and L2: {seen:?}"
        );
        db.close().unwrap();
    }
    // Reopen with the same options: everything reads back from the compressed tables.
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        check(&db, &model, n);
        // New writes at L0 are raw again, and push more data down.
        write(&db, &mut model, n / 3, 3);
        db.flush().unwrap();
        db.wait_for_background().unwrap();
        check(&db, &model, n);
        tables_follow_levels(dir.path(), &levels);
        db.close().unwrap();
    }
}

#[test]
fn changing_the_compression_keeps_old_tables_readable() {
    let dir = tempfile::tempdir().unwrap();
    let n = 8_000;
    let mut model = Model::new();
    {
        let db = Db::open(dir.path(), options("lz4")).unwrap();
        write(&db, &mut model, n, 1);
        db.flush().unwrap();
        db.wait_for_background().unwrap();
        tables_follow_levels(dir.path(), &LevelCompression::uniform(Compression::Lz4));
        check(&db, &model, n);
        db.close().unwrap();
    }
    // Without compression: the LZ4 tables still read; a full compaction rewrites them raw.
    {
        let db = Db::open(dir.path(), options("none")).unwrap();
        check(&db, &model, n);
        db.compact_range(None, None).unwrap();
        check(&db, &model, n);
        tables_follow_levels(dir.path(), &LevelCompression::none());
        db.close().unwrap();
    }
    // Zstd everywhere, prefix blocks, no block cache.
    {
        let mut o = options("zstd");
        o.block_format = BlockFormat::Prefix;
        o.block_cache_capacity = 0;
        o.zstd_level = 7;
        let db = Db::open(dir.path(), o).unwrap();
        write(&db, &mut model, n / 2, 2);
        db.compact_range(None, None).unwrap();
        check(&db, &model, n);
        tables_follow_levels(dir.path(), &LevelCompression::uniform(Compression::Zstd));
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options("none")).unwrap();
    check(&db, &model, n);
    db.close().unwrap();
}
