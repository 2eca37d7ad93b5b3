//! Direct I/O (`use_direct_reads`, `use_direct_io_for_flush_and_compaction`): tables written
//! and read with `O_DIRECT` hold exactly what the page-cache path holds, through flushes,
//! compactions, deletes and a reopen; every table goes through the file system's direct
//! variants (and only tables: the WAL and the MANIFEST stay buffered); compactions read
//! their inputs in large chunks; a file system that refuses `O_DIRECT` is a clear error at
//! open; `mmap_reads` with `use_direct_reads` is refused.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use mezz_env::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile, WriteLifetime};
use mezzanine::{Db, Error, Options};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// How a wrapped file system was asked to create and open files: (call, file name).
#[derive(Debug, Default)]
struct Calls(Mutex<Vec<(&'static str, String)>>);

impl Calls {
    fn note(&self, call: &'static str, path: &Path) {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        self.0.lock().unwrap().push((call, name));
    }

    /// The calls made for files whose names end in `suffix`.
    fn for_files(&self, suffix: &str) -> Vec<&'static str> {
        let mut v: Vec<_> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, n)| n.ends_with(suffix))
            .map(|(c, _)| *c)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// A file system that forwards to `inner`, noting every create and open, and, if
/// `refuse_direct`, refusing the direct variants as a file system without `O_DIRECT` does.
#[derive(Debug)]
struct Wrapped {
    inner: Arc<dyn FileSystem>,
    calls: Arc<Calls>,
    refuse_direct: bool,
}

impl Wrapped {
    fn refused(&self, path: &Path) -> io::Result<()> {
        if self.refuse_direct {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "open {} with direct I/O (O_DIRECT): the file system refuses it",
                    path.display()
                ),
            ));
        }
        Ok(())
    }
}

impl FileSystem for Wrapped {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.calls.note("create", path);
        self.inner.create(path)
    }
    fn create_with_hint(
        &self,
        path: &Path,
        lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        self.calls.note("create_with_hint", path);
        self.inner.create_with_hint(path, lifetime)
    }
    fn create_direct(
        &self,
        path: &Path,
        lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        self.calls.note("create_direct", path);
        self.refused(path)?;
        self.inner.create_direct(path, lifetime)
    }
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.calls.note("create_log", path);
        self.inner.create_log(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.calls.note("open_append", path);
        self.inner.open_append(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.calls.note("open_read", path);
        self.inner.open_read(path)
    }
    fn open_read_mapped(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.calls.note("open_read_mapped", path);
        self.inner.open_read_mapped(path)
    }
    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.calls.note("open_read_direct", path);
        self.refused(path)?;
        self.inner.open_read_direct(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

/// Small memtables and tables, so a few thousand keys make many tables and compactions;
/// both direct options as given; the default (real) file system wrapped to note its calls.
fn opts(direct: bool, calls: &Arc<Calls>) -> Options {
    let mut o = Options {
        use_direct_reads: direct,
        use_direct_io_for_flush_and_compaction: direct,
        write_buffer_size: 128 << 10,
        target_file_size: 256 << 10,
        max_bytes_for_level_base: 1 << 20,
        block_cache_capacity: 256 << 10,
        ..Options::default()
    };
    o.fs = Arc::new(Wrapped {
        inner: Arc::clone(&o.fs),
        calls: Arc::clone(calls),
        refuse_direct: false,
    });
    o
}

const KEYS: u32 = 20_000;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    common::check_keys(db, model, (0..KEYS).step_by(7).map(key), when);
    let report = db.verify().unwrap();
    assert!(report.tables > 0, "{when}: {report:?}");
}

/// Opens `dir` with both direct options; `None` (after a note) if its file system refuses
/// direct I/O.
fn open_direct(dir: &Path, calls: &Arc<Calls>) -> Option<Db> {
    match Db::open(dir, opts(true, calls)) {
        Ok(db) => Some(db),
        Err(Error::InvalidArgument(m)) if m.contains("O_DIRECT") => {
            eprintln!("note: skipped: {m}");
            None
        }
        Err(e) => panic!("open with direct I/O: {e}"),
    }
}

/// The `O_DIRECT` flags of this process's open descriptors on `.sst` files under `dir`.
#[cfg(target_os = "linux")]
fn sst_descriptors_direct(dir: &Path) -> Vec<bool> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if !target.starts_with(dir) || target.extension().is_none_or(|e| e != "sst") {
            continue;
        }
        let fd = entry.file_name().to_string_lossy().into_owned();
        let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) else {
            continue;
        };
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| i64::from_str_radix(f.trim(), 8).ok())
            .unwrap();
        out.push(flags & i64::from(libc_o_direct()) != 0);
    }
    out
}

/// Linux's `O_DIRECT` on this architecture.
#[cfg(target_os = "linux")]
fn libc_o_direct() -> i32 {
    if cfg!(any(target_arch = "aarch64", target_arch = "arm")) {
        0o200_000
    } else if cfg!(any(target_arch = "powerpc", target_arch = "powerpc64")) {
        0o400_000
    } else {
        0o40_000
    }
}

#[test]
fn direct_tables_hold_what_was_written_through_compactions_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(Calls::default());
    let Some(db) = open_direct(dir.path(), &calls) else {
        return;
    };
    let mut model = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(0xD1EC7);
    for round in 0..6u32 {
        for _ in 0..8_000 {
            let i = rng.random_range(0..KEYS);
            let k = key(i);
            if rng.random_range(0..10) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let len = rng.random_range(0..300usize);
                let v = format!("{round}-{i}-{}", "v".repeat(len)).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        match round % 3 {
            0 => db.flush().unwrap(),
            1 => {
                let (a, b) = (key(KEYS / 4), key(KEYS / 2));
                db.compact_range(Some(&a), Some(&b)).unwrap();
            }
            _ => {}
        }
        db.wait_for_background().unwrap();
        check(&db, &model, &format!("round {round}"));
    }
    // Every table is open now (the scan and the verification read them all): a full
    // compaction reads its inputs in chunks, not block by block.
    let before = db.stats();
    db.compact_range(None, None).unwrap();
    let after = db.stats();
    let (reads, bytes) = (
        after.units[0].reads - before.units[0].reads,
        after.units[0].read_bytes - before.units[0].read_bytes,
    );
    assert!(after.compactions > before.compactions);
    assert!(
        reads > 0 && bytes / reads >= 32 << 10,
        "a compaction read {bytes} bytes in {reads} reads"
    );
    check(&db, &model, "after a full compaction");
    #[cfg(target_os = "linux")]
    {
        let flags = sst_descriptors_direct(dir.path());
        assert!(!flags.is_empty(), "no table is open");
        assert!(flags.iter().all(|&d| d), "a table is open without O_DIRECT");
    }
    db.close().unwrap();
    drop(db);
    // Tables only went through the direct variants; the WAL and MANIFEST stayed buffered.
    assert_eq!(
        calls.for_files(".sst"),
        ["create_direct", "open_read_direct"]
    );
    for suffix in [".log", "CURRENT", "OPTIONS-000001"] {
        let c = calls.for_files(suffix);
        assert!(!c.iter().any(|c| c.ends_with("direct")), "{suffix}: {c:?}");
    }
    assert!(!calls.for_files(".log").is_empty());

    // Reopened with direct I/O, then without: the same data.
    let Some(db) = open_direct(dir.path(), &calls) else {
        panic!("direct I/O worked, then was refused");
    };
    check(&db, &model, "reopened with direct I/O");
    db.close().unwrap();
    drop(db);
    let db = Db::open(dir.path(), opts(false, &calls)).unwrap();
    check(&db, &model, "reopened without direct I/O");
    db.close().unwrap();
}

/// Only one of the two options: each side works alone.
#[test]
fn either_option_alone_works() {
    for (reads, writes) in [(true, false), (false, true)] {
        let dir = tempfile::tempdir().unwrap();
        let calls = Arc::new(Calls::default());
        let mut o = opts(false, &calls);
        o.use_direct_reads = reads;
        o.use_direct_io_for_flush_and_compaction = writes;
        let db = match Db::open(dir.path(), o) {
            Ok(db) => db,
            Err(Error::InvalidArgument(m)) if m.contains("O_DIRECT") => {
                eprintln!("note: skipped: {m}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let mut model = BTreeMap::new();
        for i in 0..KEYS {
            let v = format!("{i}-{}", "w".repeat((i % 97) as usize)).into_bytes();
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.compact_range(None, None).unwrap();
        check(&db, &model, &format!("reads {reads}, writes {writes}"));
        db.close().unwrap();
        let want_create = if writes {
            "create_direct"
        } else {
            "create_with_hint"
        };
        let want_open = if reads {
            "open_read_direct"
        } else {
            "open_read"
        };
        assert_eq!(calls.for_files(".sst"), [want_create, want_open]);
    }
}

/// A file system that refuses `O_DIRECT` makes `Db::open` fail with `InvalidArgument`
/// naming the option and the directory, before any table is written; without the options
/// the same directory opens.
#[test]
fn a_file_system_without_direct_io_is_a_clear_error_at_open() {
    for (reads, writes, name) in [
        (true, false, "use_direct_reads"),
        (false, true, "use_direct_io_for_flush_and_compaction"),
        (
            true,
            true,
            "use_direct_reads and use_direct_io_for_flush_and_compaction",
        ),
    ] {
        let fs = MemFs::new();
        let calls = Arc::new(Calls::default());
        let o = Options {
            fs: Arc::new(Wrapped {
                inner: Arc::new(fs.clone()),
                calls: Arc::clone(&calls),
                refuse_direct: true,
            }),
            use_direct_reads: reads,
            use_direct_io_for_flush_and_compaction: writes,
            ..Options::default()
        };
        match Db::open("/db", o.clone()) {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.starts_with(name), "{m}");
                assert!(m.contains("/db") && m.contains("O_DIRECT"), "{m}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(
            calls
                .for_files(".sst")
                .iter()
                .all(|c| *c == "open_read_direct")
        );
        let o = Options {
            use_direct_reads: false,
            use_direct_io_for_flush_and_compaction: false,
            ..o
        };
        let db = Db::open("/db", o).unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
    }
}

/// On /dev/shm (tmpfs), the real file system either takes `O_DIRECT` (Linux 6.6 and later)
/// and the database works, or refuses it and open says so: never a panic, never a table
/// written buffered.
#[test]
fn dev_shm_either_works_or_is_refused_clearly() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("note: skipped: no /dev/shm");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let calls = Arc::new(Calls::default());
    match Db::open(dir.path(), opts(true, &calls)) {
        Ok(db) => {
            eprintln!("note: /dev/shm takes O_DIRECT on this kernel");
            for i in 0..5000 {
                db.put(&key(i), b"value").unwrap();
            }
            db.flush().unwrap();
            assert_eq!(db.get(&key(4321)).unwrap().as_deref(), Some(&b"value"[..]));
            db.close().unwrap();
            assert_eq!(
                calls.for_files(".sst"),
                ["create_direct", "open_read_direct"]
            );
        }
        Err(Error::InvalidArgument(m)) => {
            eprintln!("note: /dev/shm refuses O_DIRECT: {m}");
            assert!(m.contains("use_direct_reads"), "{m}");
            assert!(m.contains(&dir.path().display().to_string()), "{m}");
        }
        Err(e) => panic!("not a clear refusal: {e}"),
    }
}

#[test]
fn mmap_reads_with_direct_reads_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        mmap_reads: true,
        use_direct_reads: true,
        ..Options::default()
    };
    match Db::open(dir.path(), o) {
        Err(Error::InvalidArgument(m)) => {
            assert!(
                m.contains("mmap_reads") && m.contains("use_direct_reads"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!dir.path().join("CURRENT").exists(), "nothing is written");
    // Direct writes with mapped reads are fine: the tables are read through the page cache.
    let o = Options {
        mmap_reads: true,
        use_direct_io_for_flush_and_compaction: true,
        ..Options::default()
    };
    o.validate().unwrap();
}
