//! Comparator engines for side-by-side benchmarks: RocksDB, LevelDB and fjall adapters
//! behind cargo features, plus their "on NVM" variants.
//!
//! [`factory`] turns an engine name (one of [`ENGINE_NAMES`]) and an [`EngineSetup`] (the
//! options every comparator is given the same way: memtable size, block cache, bloom bits,
//! NVM path, sync) into an [`EngineFactory`]. An engine that this binary was built without
//! is still a known name: asking for it returns an `InvalidArgument` error that names the
//! cargo feature to build with, so the default build needs no C or C++ library.
//!
//! Invariants: every factory opens its database in the harness's directory `dir`; the
//! "-nvm" variants put some or all of their files in a directory under
//! `EngineSetup::nvm_dir` that is recorded in a marker file ([`NVM_MARKER`]) in `dir`, so
//! that reopening `dir` finds it again and `destroy` removes both. `destroy` refuses (and
//! deletes nothing) when a directory holds a file that is not the engine's.
//! Thread-safety: factories are `Send + Sync` and used from the driving thread; the
//! engines they open are shared by the worker threads.

use std::path::{Path, PathBuf};

use crate::engine::EngineFactory;
use crate::error::{BenchError, Result};

#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;

/// Options given to every comparator engine in the same way, so that side-by-side runs
/// compare like with like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSetup {
    /// Bytes of memtable before a flush (RocksDB/LevelDB `write_buffer_size`).
    pub write_buffer_size: usize,
    /// Bytes of block cache (uncompressed data blocks).
    pub block_cache_bytes: usize,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits: u32,
    /// The emulated NVM directory, required by the "-nvm" variants.
    pub nvm_dir: Option<PathBuf>,
    /// Whether every write syncs its log (the harness also passes `sync` per write; an
    /// engine syncs when either asks).
    pub sync: bool,
    /// Compress data blocks with each engine's fast codec: RocksDB LZ4 (every level,
    /// bottommost included), LevelDB Snappy (the only codec LevelDB 1.23 has), fjall LZ4
    /// (data blocks). Mezzanine is not built from this: `mezz bench --compress` gives it
    /// `compression=lz4`. Default: false (no engine compresses).
    pub compress: bool,
    /// Read and write table files with direct I/O (`O_DIRECT`, bypassing the page cache)
    /// in engines that have it: RocksDB `use_direct_reads` and
    /// `use_direct_io_for_flush_and_compaction` with a 2 MiB `compaction_readahead_size`.
    /// LevelDB and fjall have no direct I/O and ignore it (their results record
    /// `direct_io: false`). Mezzanine is not built from this: `mezz bench --direct-io` gives
    /// it its two options of the same names. Default: false.
    pub direct_io: bool,
    /// The NVM bytes a comparator whose NVM is a directory may use. `rocksdb-l0-nvm` keeps
    /// its L0 within them ([`l0_triggers_within`]), as the MatrixKV paper's RocksDB-L0-NVM
    /// "enlarges L0 into" the NVM. Default: none (RocksDB's own L0 file triggers, under
    /// which L0 may grow to 36 memtables).
    pub nvm_bytes: Option<u64>,
}

/// RocksDB's L0 triggers (compaction, slowdown, stop; in files) that keep an L0 of
/// memtable-sized files within `nvm_bytes`: compaction at 7/8 of it, slowdown at 15/16,
/// stop at all of it, rounded to whole files. These are the MatrixKV paper's code's own
/// container triggers (7, 7.5 and 8 GiB of an 8 GiB container) applied to RocksDB's L0;
/// compaction comes at least one file before the stop, so a stop always has a compaction to
/// wait for.
#[must_use]
pub fn l0_triggers_within(nvm_bytes: u64, write_buffer_size: usize) -> (i32, i32, i32) {
    let files = nvm_bytes / (write_buffer_size.max(1) as u64);
    let stop = i32::try_from(files).unwrap_or(i32::MAX).max(2);
    let share = |num: i64, den: i64| {
        let v = (i64::from(stop) * num + den / 2) / den;
        i32::try_from(v).unwrap_or(i32::MAX)
    };
    let compaction = share(7, 8).clamp(1, stop - 1);
    let slowdown = share(15, 16).clamp(compaction, stop);
    (compaction, slowdown, stop)
}

impl Default for EngineSetup {
    fn default() -> Self {
        Self {
            write_buffer_size: 64 << 20,
            block_cache_bytes: 8 << 20,
            bloom_bits: 10,
            nvm_dir: None,
            sync: false,
            compress: false,
            direct_io: false,
            nvm_bytes: None,
        }
    }
}

impl EngineSetup {
    /// The NVM directory, or the error an "-nvm" variant gives without one.
    #[cfg_attr(not(any(feature = "rocksdb", feature = "leveldb")), allow(dead_code))]
    fn require_nvm(&self, name: &str) -> Result<PathBuf> {
        self.nvm_dir.clone().ok_or_else(|| {
            BenchError::InvalidArgument(format!(
                "{name} places files on the NVM path: give it a directory (--nvm-dir)"
            ))
        })
    }
}

/// Every engine name, compiled in or not.
pub const ENGINE_NAMES: &[&str] = &[
    "mezzanine",
    "rocksdb",
    "rocksdb-l0-nvm",
    "leveldb",
    "leveldb-nvm",
    "fjall",
];

/// A factory for the non-Mezzanine engine `name`, configured by `setup`.
///
/// # Errors
/// `InvalidArgument` when the engine is not compiled into this binary (the message names
/// the cargo feature to build with), when an "-nvm" variant has no `setup.nvm_dir`, for
/// `mezzanine` (whose factory is built from its own options) and for unknown names.
#[cfg_attr(
    not(any(feature = "rocksdb", feature = "leveldb", feature = "fjall")),
    allow(unused_variables)
)]
pub fn factory(name: &str, setup: &EngineSetup) -> Result<Box<dyn EngineFactory>> {
    match name {
        "mezzanine" => Err(BenchError::InvalidArgument(
            "mezzanine is not a comparator engine: build its factory from its options \
             (MezzFactory)"
                .into(),
        )),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(rocksdb::RocksDbFactory::new(setup.clone(), None))),
        #[cfg(feature = "rocksdb")]
        "rocksdb-l0-nvm" => Ok(Box::new(rocksdb::RocksDbFactory::new(
            setup.clone(),
            Some(setup.require_nvm(name)?),
        ))),
        #[cfg(feature = "leveldb")]
        "leveldb" => Ok(Box::new(leveldb::LevelDbFactory::new(setup.clone(), None))),
        #[cfg(feature = "leveldb")]
        "leveldb-nvm" => Ok(Box::new(leveldb::LevelDbFactory::new(
            setup.clone(),
            Some(setup.require_nvm(name)?),
        ))),
        #[cfg(feature = "fjall")]
        "fjall" => Ok(Box::new(fjall::FjallFactory::new(setup.clone()))),
        #[cfg(not(feature = "rocksdb"))]
        "rocksdb" | "rocksdb-l0-nvm" => Err(not_compiled(
            name,
            "build with `--features rocksdb` (Debian's library) or `--features \
             rocksdb-release` (bundled release build)",
        )),
        #[cfg(not(feature = "leveldb"))]
        "leveldb" | "leveldb-nvm" => Err(not_compiled(
            name,
            "build with `--features leveldb` (Debian's library)",
        )),
        #[cfg(not(feature = "fjall"))]
        "fjall" => Err(not_compiled(name, "build with `--features fjall`")),
        _ => Err(BenchError::InvalidArgument(format!(
            "unknown engine {name:?}; known engines: {}",
            ENGINE_NAMES.join(", ")
        ))),
    }
}

/// The engines this binary has compiled in (always including `mezzanine`).
#[must_use]
pub fn compiled_in() -> Vec<&'static str> {
    let mut v = vec!["mezzanine"];
    if cfg!(feature = "rocksdb") {
        v.extend(["rocksdb", "rocksdb-l0-nvm"]);
    }
    if cfg!(feature = "leveldb") {
        v.extend(["leveldb", "leveldb-nvm"]);
    }
    if cfg!(feature = "fjall") {
        v.push("fjall");
    }
    v
}

#[cfg_attr(
    all(feature = "rocksdb", feature = "leveldb", feature = "fjall"),
    allow(dead_code)
)]
fn not_compiled(name: &str, how: &str) -> BenchError {
    BenchError::InvalidArgument(format!("{name} is not compiled in: {how}"))
}

/// The file in a "-nvm" variant's `dir` that records where its NVM-side files are.
pub const NVM_MARKER: &str = "NVM_PATH";

/// The NVM-side directory recorded in `dir`'s marker, if any.
#[cfg_attr(not(any(feature = "rocksdb", feature = "leveldb")), allow(dead_code))]
pub(crate) fn read_nvm_marker(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join(NVM_MARKER)).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// The NVM-side directory of the database in `dir`: the one its marker records, or else a
/// new directory `<nvm_root>/<engine>-<hash of dir>` (which must not exist yet, so stale
/// files are never adopted), created and recorded in a new marker.
///
/// # Errors
/// `InvalidArgument` when the new directory already exists; `Io` errors.
#[cfg_attr(not(any(feature = "rocksdb", feature = "leveldb")), allow(dead_code))]
pub(crate) fn nvm_location(dir: &Path, nvm_root: &Path, engine: &str) -> Result<PathBuf> {
    if let Some(p) = read_nvm_marker(dir) {
        std::fs::create_dir_all(&p).map_err(|e| BenchError::io(&p, e))?;
        return Ok(p);
    }
    std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
    std::fs::create_dir_all(nvm_root).map_err(|e| BenchError::io(nvm_root, e))?;
    let canon = dir.canonicalize().map_err(|e| BenchError::io(dir, e))?;
    let root = nvm_root
        .canonicalize()
        .map_err(|e| BenchError::io(nvm_root, e))?;
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        canon.hash(&mut h);
        h.finish()
    };
    let p = root.join(format!("{engine}-{hash:016x}"));
    if p.exists() {
        return Err(BenchError::InvalidArgument(format!(
            "{} already exists but {} records no NVM path: remove it by hand",
            p.display(),
            dir.display()
        )));
    }
    std::fs::create_dir_all(&p).map_err(|e| BenchError::io(&p, e))?;
    let text = p.to_str().ok_or_else(|| {
        BenchError::InvalidArgument(format!("{} is not valid UTF-8", p.display()))
    })?;
    let marker = dir.join(NVM_MARKER);
    std::fs::write(&marker, format!("{text}\n")).map_err(|e| BenchError::io(&marker, e))?;
    Ok(p)
}

/// Whether `name` is a file name RocksDB or LevelDB creates in a database directory (or in
/// a WAL / `db_paths` directory).
#[cfg_attr(not(any(feature = "rocksdb", feature = "leveldb")), allow(dead_code))]
pub(crate) fn is_lsm_file_name(name: &str) -> bool {
    let numbered = |suffix: &str| {
        name.strip_suffix(suffix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    matches!(name, "CURRENT" | "LOCK" | "LOG" | "IDENTITY")
        || name.starts_with("LOG.old")
        || name.starts_with("MANIFEST-")
        || name.starts_with("OPTIONS-")
        || [".log", ".sst", ".ldb", ".dbtmp", ".blob"]
            .iter()
            .any(|s| numbered(s))
}

/// Whether every entry of `dir` is a regular file `accept` recognises, and `required` is
/// among them (an empty or missing directory is not an engine directory).
#[cfg_attr(not(any(feature = "rocksdb", feature = "leveldb")), allow(dead_code))]
pub(crate) fn dir_holds_only(dir: &Path, accept: &dyn Fn(&str) -> bool, required: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut found = false;
    for e in entries {
        let Ok(e) = e else { return false };
        let is_file = e.file_type().is_ok_and(|t| t.is_file());
        match e.file_name().to_str() {
            Some(n) if is_file && accept(n) => found |= n == required,
            _ => return false,
        }
    }
    found
}

/// Deletes every file of `dir` after checking that each one is a regular file `accept`
/// recognises; deletes nothing when one is not. A missing directory is left alone.
///
/// # Errors
/// `InvalidArgument` naming the first foreign entry; `Io` errors.
#[cfg_attr(not(any(feature = "rocksdb", feature = "leveldb")), allow(dead_code))]
pub(crate) fn remove_files(dir: &Path, engine: &str, accept: &dyn Fn(&str) -> bool) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(BenchError::io(dir, e)),
    };
    let mut doomed = Vec::new();
    for e in entries {
        let e = e.map_err(|e| BenchError::io(dir, e))?;
        let is_file = e.file_type().is_ok_and(|t| t.is_file());
        if !is_file || !e.file_name().to_str().is_some_and(accept) {
            return Err(BenchError::InvalidArgument(format!(
                "{} holds {:?}, which is not a {engine} file: refusing to delete it",
                dir.display(),
                e.file_name()
            )));
        }
        doomed.push(e.path());
    }
    for p in doomed {
        std::fs::remove_file(&p).map_err(|e| BenchError::io(&p, e))?;
    }
    Ok(())
}

/// Removes the directory `dir` if it exists and is empty.
///
/// # Errors
/// `Io` errors other than "not found".
#[cfg_attr(not(any(feature = "rocksdb", feature = "leveldb")), allow(dead_code))]
pub(crate) fn remove_empty_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(BenchError::io(dir, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l0_triggers_keep_l0_within_the_nvm_budget() {
        // The papers' shape: 256 MiB of NVM, 64 MiB memtables.
        assert_eq!(l0_triggers_within(256 << 20, 64 << 20), (3, 4, 4));
        // The MatrixKV paper's: 8 GiB of NVM, 64 MiB memtables (its 7 / 7.5 / 8 GiB).
        assert_eq!(l0_triggers_within(8 << 30, 64 << 20), (112, 120, 128));
        // Less than two memtables: compaction at one file, stop at two.
        assert_eq!(l0_triggers_within(64 << 20, 64 << 20), (1, 2, 2));
        assert_eq!(l0_triggers_within(0, 64 << 20), (1, 2, 2));
        for (nvm, wb) in [
            (100u64 << 20, 7usize << 20),
            (1 << 30, 3 << 20),
            (5 << 20, 1 << 20),
        ] {
            let (c, s, stop) = l0_triggers_within(nvm, wb);
            assert!(
                1 <= c && c < stop && c <= s && s <= stop,
                "{nvm} {wb}: {c} {s} {stop}"
            );
            assert!(u64::try_from(stop).unwrap_or(0) * wb as u64 <= nvm.max(2 * wb as u64));
        }
    }

    #[test]
    fn unknown_and_mezzanine_names_are_refused() {
        let s = EngineSetup::default();
        assert!(matches!(
            factory("nope", &s),
            Err(BenchError::InvalidArgument(_))
        ));
        assert!(matches!(
            factory("mezzanine", &s),
            Err(BenchError::InvalidArgument(_))
        ));
        assert!(compiled_in().contains(&"mezzanine"));
        for name in compiled_in() {
            assert!(ENGINE_NAMES.contains(&name));
        }
    }

    #[test]
    fn engines_not_compiled_in_name_their_feature() {
        let s = EngineSetup {
            nvm_dir: Some(PathBuf::from("nvm")),
            ..EngineSetup::default()
        };
        for name in ENGINE_NAMES.iter().filter(|n| !compiled_in().contains(n)) {
            let Err(BenchError::InvalidArgument(msg)) = factory(name, &s) else {
                panic!("{name} should not be available");
            };
            assert!(msg.contains("--features"), "{msg}");
        }
    }

    #[test]
    fn lsm_file_names() {
        for n in [
            "CURRENT",
            "LOCK",
            "LOG",
            "LOG.old.1700000000",
            "MANIFEST-000004",
            "OPTIONS-000007",
            "IDENTITY",
            "000003.log",
            "000012.sst",
            "000012.ldb",
        ] {
            assert!(is_lsm_file_name(n), "{n}");
        }
        for n in ["notes.txt", ".log", "abc.sst", "CURRENT2", "NVM_PATH"] {
            assert!(!is_lsm_file_name(n), "{n}");
        }
    }

    #[test]
    fn nvm_location_is_recorded_and_reused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("db");
        let nvm = t.path().join("nvm");
        let p = nvm_location(&dir, &nvm, "x").unwrap();
        assert!(p.is_dir());
        assert_eq!(read_nvm_marker(&dir).as_deref(), Some(p.as_path()));
        assert_eq!(nvm_location(&dir, &nvm, "x").unwrap(), p);
        // A lost marker does not adopt the existing directory.
        std::fs::remove_file(dir.join(NVM_MARKER)).unwrap();
        assert!(nvm_location(&dir, &nvm, "x").is_err());
    }

    #[test]
    fn remove_files_refuses_foreign_files() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("CURRENT"), b"x").unwrap();
        std::fs::write(t.path().join("notes.txt"), b"x").unwrap();
        assert!(!dir_holds_only(t.path(), &is_lsm_file_name, "CURRENT"));
        assert!(remove_files(t.path(), "rocksdb", &is_lsm_file_name).is_err());
        assert!(t.path().join("CURRENT").exists());
        std::fs::remove_file(t.path().join("notes.txt")).unwrap();
        assert!(dir_holds_only(t.path(), &is_lsm_file_name, "CURRENT"));
        remove_files(t.path(), "rocksdb", &is_lsm_file_name).unwrap();
        assert!(!t.path().join("CURRENT").exists());
    }
}
