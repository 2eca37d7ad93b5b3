//! Conformance of the comparator engines: one generic check, [`conformance`], run against
//! every engine this test binary has compiled in (`--features rocksdb,leveldb,fjall`; with
//! no feature only the API's refusals are checked).
//!
//! Each engine must: put/get/delete, scan forward and backward from a bound or an end and
//! stop after `n` entries, keep its data across close and reopen (with and without a
//! flush), be recognised by `is_engine_dir`, refuse to destroy a directory holding a file
//! that is not its own, and leave no file behind (in `dir` or on the NVM path) after
//! `destroy`. Every engine runs the check twice: without compression and with its fast
//! codec (`EngineSetup::compress`).

#![allow(clippy::unwrap_used)]
#![cfg_attr(
    not(any(feature = "rocksdb", feature = "leveldb", feature = "fjall")),
    allow(dead_code, unused_imports)
)]

use std::path::Path;

use mezz_bench::engines::{ENGINE_NAMES, EngineSetup, compiled_in, factory};
use mezz_bench::{BenchError, Direction, EngineFactory, KvEngine};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, gen_: u32) -> Vec<u8> {
    format!("value-{i}-{gen_}-{}", "x".repeat((i % 7) as usize * 10)).into_bytes()
}

fn scan_keys(e: &dyn KvEngine, start: Option<&[u8]>, n: usize, d: Direction) -> (usize, Vec<u8>) {
    let r = e.scan(start, n, d).unwrap();
    (r.entries, r.last_key.unwrap_or_default())
}

/// Regular files under `p`, recursively.
fn count_files(p: &Path) -> usize {
    std::fs::read_dir(p).map_or(0, |d| {
        d.map(|e| e.unwrap().path())
            .map(|q| if q.is_dir() { count_files(&q) } else { 1 })
            .sum()
    })
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).map_or(true, |mut d| d.next().is_none())
}

/// The generic check every comparator passes. `nvm` is the NVM root the factory was set up
/// with, if any.
fn conformance(f: &dyn EngineFactory, root: &Path, nvm: Option<&Path>) {
    let dir = root.join("db");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(
        !f.is_engine_dir(&dir),
        "an empty directory is not a database"
    );
    assert!(!f.version().is_empty());
    assert!(f.config_json().is_object());

    let e = f.open(&dir).unwrap();
    assert_eq!(e.name(), f.name());
    // Keys 0, 2, 4, ..., 198 with generation 0.
    for i in (0..200).step_by(2) {
        e.put(&key(i), &value(i, 0), false).unwrap();
    }
    e.put(&key(10), &value(10, 1), true).unwrap();
    assert_eq!(e.get(&key(10)).unwrap(), Some(value(10, 1)));
    assert_eq!(e.get(&key(4)).unwrap(), Some(value(4, 0)));
    assert_eq!(e.get(&key(5)).unwrap(), None);
    e.delete(&key(4), false).unwrap();
    e.delete(&key(5), true).unwrap();
    assert_eq!(e.get(&key(4)).unwrap(), None);

    // 99 live keys: 0, 2, 6, 8, ..., 198.
    let all = e.scan(None, usize::MAX, Direction::Forward).unwrap();
    assert_eq!(all.entries, 99);
    assert_eq!(all.last_key.as_deref(), Some(&key(198)[..]));
    let expect_bytes: u64 = (0..200)
        .step_by(2)
        .filter(|&i| i != 4)
        .map(|i| (key(i).len() + value(i, u32::from(i == 10)).len()) as u64)
        .sum();
    assert_eq!(all.bytes, expect_bytes);
    assert_eq!(scan_keys(&*e, None, 3, Direction::Forward), (3, key(6)));
    assert_eq!(
        scan_keys(&*e, Some(&key(3)), 2, Direction::Forward),
        (2, key(8))
    );
    assert_eq!(
        scan_keys(&*e, Some(&key(8)), 1, Direction::Forward),
        (1, key(8))
    );
    assert_eq!(scan_keys(&*e, Some(&key(199)), 5, Direction::Forward).0, 0);
    assert_eq!(scan_keys(&*e, None, 2, Direction::Reverse), (2, key(196)));
    assert_eq!(
        scan_keys(&*e, Some(&key(7)), 2, Direction::Reverse),
        (2, key(2))
    );
    assert_eq!(
        scan_keys(&*e, Some(&key(8)), 1, Direction::Reverse),
        (1, key(8))
    );
    assert_eq!(
        scan_keys(&*e, Some(&key(999)), 1, Direction::Reverse),
        (1, key(198))
    );
    assert_eq!(scan_keys(&*e, Some(b"a"), 1, Direction::Reverse).0, 0);
    assert_eq!(scan_keys(&*e, None, 0, Direction::Forward).0, 0);
    let rev = e.scan(None, usize::MAX, Direction::Reverse).unwrap();
    assert_eq!((rev.entries, rev.bytes), (99, expect_bytes));
    assert_eq!(rev.last_key.as_deref(), Some(&key(0)[..]));

    if let Some(c) = e.counters() {
        assert!(c.user_bytes_written >= expect_bytes);
        assert!(c.storage_bytes_written > 0, "{c:?}");
    }
    let _ = e.stats_json();
    let _ = e.stats_text();

    // Reopen without a flush: the log brings the writes back.
    e.close().unwrap();
    assert!(
        e.get(&key(0)).is_err(),
        "a closed engine refuses operations"
    );
    drop(e);
    assert!(f.is_engine_dir(&dir));
    let e = f.open(&dir).unwrap();
    assert_eq!(e.get(&key(10)).unwrap(), Some(value(10, 1)));
    assert_eq!(e.get(&key(4)).unwrap(), None);
    e.put(&key(201), &value(201, 0), false).unwrap();
    e.flush().unwrap();
    e.wait_for_background().unwrap();
    e.close().unwrap();
    drop(e);
    if let Some(nvm) = nvm {
        // The variant's flushed table (and log) live on the NVM path, not in `dir`.
        assert!(count_files(nvm) > 0, "nothing on the NVM path");
        let tables_in_dir = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                let n = n.to_string_lossy();
                n.ends_with(".sst") || n.ends_with(".ldb") || n.ends_with(".log")
            })
            .count();
        assert_eq!(tables_in_dir, 0, "tables or logs in dir");
    }

    // Reopen after a flush: the tables hold the data.
    let e = f.open(&dir).unwrap();
    assert_eq!(e.get(&key(201)).unwrap(), Some(value(201, 0)));
    assert_eq!(e.get(&key(198)).unwrap(), Some(value(198, 0)));
    assert_eq!(
        e.scan(None, usize::MAX, Direction::Forward)
            .unwrap()
            .entries,
        100
    );
    e.close().unwrap();
    drop(e);

    // A foreign file makes the directory not the engine's, and destroy refuses it.
    let foreign = dir.join("notes.txt");
    std::fs::write(&foreign, b"mine").unwrap();
    assert!(!f.is_engine_dir(&dir));
    assert!(matches!(
        f.destroy(&dir),
        Err(BenchError::InvalidArgument(_))
    ));
    assert!(foreign.exists());
    std::fs::remove_file(&foreign).unwrap();

    assert!(f.is_engine_dir(&dir));
    f.destroy(&dir).unwrap();
    assert!(dir.is_dir(), "destroy leaves the directory itself");
    assert!(is_empty_dir(&dir), "destroy removes every engine file");
    assert!(!f.is_engine_dir(&dir));
    if let Some(nvm) = nvm {
        assert!(is_empty_dir(nvm), "destroy removes the NVM-side files");
    }

    // A destroyed database reopens empty.
    let e = f.open(&dir).unwrap();
    assert_eq!(e.get(&key(10)).unwrap(), None);
    e.close().unwrap();
    drop(e);
    f.destroy(&dir).unwrap();
}

/// Runs [`conformance`] for `name` in fresh temporary directories, without and with
/// compression.
fn check(name: &str) {
    check_with(name, false);
    check_with(name, true);
}

fn check_with(name: &str, compress: bool) {
    let t = tempfile::tempdir().unwrap();
    let nvm = t.path().join("nvm");
    let setup = EngineSetup {
        write_buffer_size: 1 << 20,
        block_cache_bytes: 1 << 20,
        nvm_dir: Some(nvm.clone()),
        compress,
        ..EngineSetup::default()
    };
    let f = factory(name, &setup).unwrap();
    assert_eq!(f.name(), name);
    let c = f.config_json()["compression"].as_str().unwrap().to_string();
    assert_eq!(c.starts_with("none"), !compress, "{name}: {c}");
    let uses_nvm = name.ends_with("-nvm");
    conformance(&*f, t.path(), uses_nvm.then_some(nvm.as_path()));
    if uses_nvm {
        // Without an NVM path the variant is refused.
        let plain = EngineSetup::default();
        assert!(matches!(
            factory(name, &plain),
            Err(BenchError::InvalidArgument(_))
        ));
    } else {
        assert!(is_empty_dir(&nvm), "{name} wrote to the NVM path");
    }
}

#[test]
fn every_compiled_in_engine_is_known_and_available() {
    let setup = EngineSetup {
        nvm_dir: Some("nvm".into()),
        ..EngineSetup::default()
    };
    for name in ENGINE_NAMES {
        let r = factory(name, &setup);
        if *name == "mezzanine" {
            assert!(r.is_err());
        } else {
            assert_eq!(r.is_ok(), compiled_in().contains(name), "{name}");
        }
    }
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_conforms() {
    check("rocksdb");
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_l0_nvm_conforms() {
    check("rocksdb-l0-nvm");
}

/// The value of `name=` in the newest RocksDB `OPTIONS-*` file of `dir`.
#[cfg(feature = "rocksdb")]
fn rocksdb_option(dir: &Path, name: &str) -> Option<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("OPTIONS-")
        })
        .collect();
    files.sort();
    let text = std::fs::read_to_string(files.last()?).unwrap();
    text.lines().find_map(|l| {
        l.trim()
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix('='))
            .map(str::to_string)
    })
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_l0_nvm_keeps_l0_within_an_nvm_budget() {
    let t = tempfile::tempdir().unwrap();
    let nvm = t.path().join("nvm");
    let dir = t.path().join("db");
    for (budget, want) in [
        (Some(8u64 << 20), ["7", "8", "8"]),
        (None, ["4", "20", "36"]),
    ] {
        let setup = EngineSetup {
            write_buffer_size: 1 << 20,
            nvm_dir: Some(nvm.clone()),
            nvm_bytes: budget,
            ..EngineSetup::default()
        };
        let f = factory("rocksdb-l0-nvm", &setup).unwrap();
        let c = f.config_json();
        assert_eq!(c["l0_triggers"].is_object(), budget.is_some(), "{c}");
        let e = f.open(&dir).unwrap();
        e.put(b"k", b"v", false).unwrap();
        e.close().unwrap();
        let names = [
            "level0_file_num_compaction_trigger",
            "level0_slowdown_writes_trigger",
            "level0_stop_writes_trigger",
        ];
        for (n, w) in names.iter().zip(want) {
            assert_eq!(
                rocksdb_option(&dir, n).as_deref(),
                Some(w),
                "{n} with {budget:?}"
            );
        }
        f.destroy(&dir).unwrap();
    }
    // Plain RocksDB has no NVM path: the budget does not apply to it.
    let setup = EngineSetup {
        write_buffer_size: 1 << 20,
        nvm_bytes: Some(8 << 20),
        ..EngineSetup::default()
    };
    let f = factory("rocksdb", &setup).unwrap();
    let e = f.open(&dir).unwrap();
    e.close().unwrap();
    assert_eq!(
        rocksdb_option(&dir, "level0_stop_writes_trigger").as_deref(),
        Some("36")
    );
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_version_names_the_library() {
    let f = factory("rocksdb", &EngineSetup::default()).unwrap();
    let v = f.version();
    assert!(v.starts_with("rocksdb 7."), "{v}");
    assert!(v.contains("NDEBUG") || v.contains("assertions on"), "{v}");
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_conforms() {
    check("leveldb");
}

#[cfg(feature = "leveldb")]
#[test]
fn leveldb_nvm_conforms() {
    check("leveldb-nvm");
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_conforms() {
    check("fjall");
}

/// `EngineSetup::direct_io`: RocksDB runs with direct reads and writes (and still
/// conforms); LevelDB and fjall, which have no direct I/O, say they run without it.
#[test]
fn direct_io_is_on_where_the_engine_has_it() {
    let names = compiled_in();
    for name in names
        .iter()
        .filter(|n| **n != "mezzanine" && !n.ends_with("-nvm"))
    {
        let t = tempfile::tempdir().unwrap();
        let setup = EngineSetup {
            write_buffer_size: 1 << 20,
            block_cache_bytes: 1 << 20,
            direct_io: true,
            ..EngineSetup::default()
        };
        let f = factory(name, &setup).unwrap();
        assert_eq!(f.direct_io(), *name == "rocksdb", "{name}");
        if *name == "rocksdb" {
            let c = f.config_json();
            assert_eq!(c["use_direct_reads"], true, "{c}");
            assert_eq!(c["use_direct_io_for_flush_and_compaction"], true, "{c}");
            conformance(&*f, t.path(), None);
        }
    }
}
