//! The RocksDB adapter (cargo features `rocksdb` and `rocksdb-release`), through the
//! `rocksdb` crate 0.20.1.
//!
//! Which library runs is decided when the crate is built: with `ROCKSDB_LIB_DIR` (set by the
//! workspace's cargo config) it links Debian's `librocksdb` 7.8.3, which is built with
//! assertions on; with `ROCKSDB_COMPILE=1` it compiles the crate's bundled RocksDB 7.9.2
//! from source with `NDEBUG` (the `rocksdb-release` feature insists on that).
//! [`RocksDbFactory::version`] reports which one, with the version the library wrote in its
//! `LOG`.
//!
//! Configuration (the same for every run, listed by `config_json`): `write_buffer_size`,
//! a block-based table with an LRU block cache and a bloom filter, no compression (LZ4 on
//! every level, bottommost included, with `EngineSetup::compress`),
//! `max_background_jobs = 2`, `max_bytes_for_level_base` = 256 MiB (RocksDB's default),
//! `level_compaction_dynamic_level_bytes` left at its default (off in 7.x), statistics on;
//! with `EngineSetup::direct_io`, `use_direct_reads`, `use_direct_io_for_flush_and_compaction`
//! and a 2 MiB `compaction_readahead_size`.
//! The `rocksdb-l0-nvm` variant puts the WAL in `<nvm>/wal` and gives `db_paths` two
//! entries, `<nvm>/sst` with a target size of `max_bytes_for_level_base` and then `dir`:
//! RocksDB places each level in the first path whose target size still holds all levels up
//! to it, estimating L0's size as `max_bytes_for_level_base` (`GetPathId` in its compaction
//! picker), so L0 alone lands on the NVM path and L1 and deeper levels in `dir`, as in the
//! MatrixKV paper's RocksDB-L0-NVM (placement follows target sizes, not actual level
//! membership: an L0 that grows past its target still stays on the NVM path). `<nvm>` is
//! recorded in the marker file in `dir`. With an NVM budget (`EngineSetup::nvm_bytes`) its
//! L0 triggers keep L0 within it (`l0_triggers_within`): the paper's RocksDB-L0-NVM
//! "enlarges L0 into" its NVM. Without one, RocksDB's file triggers (4 / 20 / 36) let L0
//! hold up to 36 memtables on the NVM path, whatever the budget.
//!
//! Counters come from RocksDB's statistics: storage bytes = `rocksdb.wal.bytes` +
//! `rocksdb.flush.write.bytes` + `rocksdb.compact.write.bytes`, stall time =
//! `rocksdb.stall.micros`; user bytes (key + value lengths) are counted by the adapter.
//! Thread-safety: `DB` is shared by all threads; the lock only guards `close`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use rocksdb::{BlockBasedOptions, Cache, DB, DBCompressionType, DBPath, Options, WriteOptions};

use crate::engine::{Direction, EngineCounters, EngineFactory, KvEngine, ScanResult};
use crate::engines::{
    EngineSetup, NVM_MARKER, dir_holds_only, is_lsm_file_name, l0_triggers_within, nvm_location,
    read_nvm_marker, remove_empty_dir, remove_files,
};
use crate::error::{BenchError, Result};

/// RocksDB's default `max_bytes_for_level_base`, set explicitly so the NVM path's target
/// size is derived from a known value.
const MAX_BYTES_FOR_LEVEL_BASE: u64 = 256 << 20;
/// Background threads for flushes and compactions.
const MAX_BACKGROUND_JOBS: i32 = 2;
/// `compaction_readahead_size` with direct I/O (`EngineSetup::direct_io`): RocksDB's
/// recommended 2 MiB.
const COMPACTION_READAHEAD_DIRECT: usize = 2 << 20;
/// How long `wait_for_background` waits before giving up.
const WAIT_LIMIT: Duration = Duration::from_secs(3600);

/// Whether an environment value means "yes" the way `librocksdb-sys`'s build script reads
/// `ROCKSDB_COMPILE` (`1` or `true`, any case).
const fn is_true(v: Option<&str>) -> bool {
    match v {
        Some(s) => {
            let b = s.as_bytes();
            (b.len() == 1 && b[0] == b'1')
                || (b.len() == 4
                    && b[0] | 0x20 == b't'
                    && b[1] | 0x20 == b'r'
                    && b[2] | 0x20 == b'u'
                    && b[3] | 0x20 == b'e')
        }
        None => false,
    }
}

/// Whether `librocksdb-sys` compiled the bundled RocksDB (with `NDEBUG`) rather than linking
/// a system library: the same decision its build script makes from the same variables.
pub const BUNDLED: bool =
    is_true(option_env!("ROCKSDB_COMPILE")) || option_env!("ROCKSDB_LIB_DIR").is_none();

#[cfg(feature = "rocksdb-release")]
const _: () = assert!(
    BUNDLED,
    "the rocksdb-release feature needs ROCKSDB_COMPILE=1 when building (see \
     scripts/build-comparators.sh release)"
);

fn engine_err(name: &str, e: rocksdb::Error) -> BenchError {
    BenchError::engine(name, e.into_string())
}

fn poisoned(name: &str) -> BenchError {
    BenchError::engine(name, "lock poisoned by a panicking thread")
}

/// Opens RocksDB databases with one fixed configuration.
#[derive(Debug)]
pub struct RocksDbFactory {
    setup: EngineSetup,
    /// The NVM root of the `rocksdb-l0-nvm` variant.
    nvm_root: Option<PathBuf>,
    version: OnceLock<String>,
}

impl RocksDbFactory {
    /// A factory for plain RocksDB (`nvm_root == None`) or for `rocksdb-l0-nvm`.
    #[must_use]
    pub fn new(setup: EngineSetup, nvm_root: Option<PathBuf>) -> Self {
        Self {
            setup,
            nvm_root,
            version: OnceLock::new(),
        }
    }

    /// The L0 triggers (compaction, slowdown, stop) of `rocksdb-l0-nvm` under an NVM
    /// budget; `None` for RocksDB's defaults.
    fn l0_triggers(&self) -> Option<(i32, i32, i32)> {
        let nvm = self.setup.nvm_bytes?;
        self.nvm_root.as_ref()?;
        Some(l0_triggers_within(nvm, self.setup.write_buffer_size))
    }

    fn name_str(&self) -> &'static str {
        if self.nvm_root.is_some() {
            "rocksdb-l0-nvm"
        } else {
            "rocksdb"
        }
    }

    /// The options every database of this factory is opened with (without the paths).
    fn base_options(&self) -> Result<Options> {
        let s = &self.setup;
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(s.write_buffer_size);
        o.set_max_background_jobs(MAX_BACKGROUND_JOBS);
        o.set_max_bytes_for_level_base(MAX_BYTES_FOR_LEVEL_BASE);
        let compression = if s.compress {
            DBCompressionType::Lz4
        } else {
            DBCompressionType::None
        };
        o.set_compression_type(compression);
        o.set_bottommost_compression_type(compression);
        o.enable_statistics();
        if let Some((compaction, slowdown, stop)) = self.l0_triggers() {
            o.set_level_zero_file_num_compaction_trigger(compaction);
            o.set_level_zero_slowdown_writes_trigger(slowdown);
            o.set_level_zero_stop_writes_trigger(stop);
        }
        if s.direct_io {
            // Table reads and flush/compaction writes bypass the page cache; compaction
            // inputs are read 2 MiB at a time, as RocksDB recommends with direct I/O (the
            // kernel reads nothing ahead for them).
            o.set_use_direct_reads(true);
            o.set_use_direct_io_for_flush_and_compaction(true);
            o.set_compaction_readahead_size(COMPACTION_READAHEAD_DIRECT);
        }
        let mut t = BlockBasedOptions::default();
        let cache = Cache::new_lru_cache(s.block_cache_bytes)
            .map_err(|e| engine_err(self.name_str(), e))?;
        t.set_block_cache(&cache);
        if s.bloom_bits > 0 {
            t.set_bloom_filter(f64::from(s.bloom_bits), false);
        }
        o.set_block_based_table_factory(&t);
        Ok(o)
    }

    /// The version RocksDB writes in its `LOG`, found by opening a scratch database once.
    fn library_version(&self) -> String {
        let probe = || -> Option<String> {
            let t = tempfile::tempdir().ok()?;
            let mut o = Options::default();
            o.create_if_missing(true);
            drop(DB::open(&o, t.path()).ok()?);
            log_version(t.path())
        };
        probe().unwrap_or_else(|| "(version unknown)".into())
    }
}

/// The `RocksDB version: X.Y.Z` a database wrote in `dir/LOG`.
fn log_version(dir: &Path) -> Option<String> {
    let log = std::fs::read_to_string(dir.join("LOG")).ok()?;
    log.lines().find_map(|l| {
        l.split_once("RocksDB version: ")
            .map(|(_, v)| v.trim().to_string())
    })
}

impl EngineFactory for RocksDbFactory {
    fn name(&self) -> String {
        self.name_str().to_string()
    }

    fn config_json(&self) -> serde_json::Value {
        let s = &self.setup;
        let mut j = serde_json::json!({
            "engine": self.name_str(),
            "write_buffer_size": s.write_buffer_size,
            "block_cache": "lru",
            "block_cache_bytes": s.block_cache_bytes,
            "bloom_bits_per_key": s.bloom_bits,
            "compression": if s.compress { "lz4 (also bottommost)" } else { "none" },
            "max_background_jobs": MAX_BACKGROUND_JOBS,
            "max_bytes_for_level_base": MAX_BYTES_FOR_LEVEL_BASE,
            "level_compaction_dynamic_level_bytes": "default (false)",
            "statistics": true,
            "sync": s.sync,
            "bundled_build": BUNDLED,
            "use_direct_reads": s.direct_io,
            "use_direct_io_for_flush_and_compaction": s.direct_io,
            "compaction_readahead_size": if s.direct_io {
                serde_json::json!(COMPACTION_READAHEAD_DIRECT)
            } else {
                serde_json::json!("default")
            },
        });
        if let (Some(root), Some(m)) = (&self.nvm_root, j.as_object_mut()) {
            m.insert("nvm_dir".into(), root.display().to_string().into());
            let triggers = match self.l0_triggers() {
                Some((c, s, stop)) => serde_json::json!({
                    "level0_file_num_compaction_trigger": c,
                    "level0_slowdown_writes_trigger": s,
                    "level0_stop_writes_trigger": stop,
                }),
                None => serde_json::json!("RocksDB's defaults (4 / 20 / 36 files; no NVM budget)"),
            };
            m.insert("l0_triggers".into(), triggers);
            m.insert("wal_dir".into(), "<nvm_dir>/<db>/wal".into());
            m.insert(
                "db_paths".into(),
                serde_json::json!([
                    {"path": "<nvm_dir>/<db>/sst", "target_size": MAX_BYTES_FOR_LEVEL_BASE},
                    {"path": "<dir>", "target_size": u64::MAX},
                ]),
            );
        }
        j
    }

    fn direct_io(&self) -> bool {
        self.setup.direct_io
    }

    fn version(&self) -> String {
        self.version
            .get_or_init(|| {
                let build = if BUNDLED {
                    "bundled release build, NDEBUG"
                } else {
                    "Debian librocksdb, assertions on"
                };
                format!("rocksdb {} ({build})", self.library_version())
            })
            .clone()
    }

    fn open(&self, dir: &Path) -> Result<Arc<dyn KvEngine>> {
        let name = self.name_str();
        let mut o = self.base_options()?;
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
        if let Some(root) = &self.nvm_root {
            let nvm = nvm_location(dir, root, name)?;
            let (wal, sst) = (nvm.join("wal"), nvm.join("sst"));
            for d in [&wal, &sst] {
                std::fs::create_dir_all(d).map_err(|e| BenchError::io(d, e))?;
            }
            o.set_wal_dir(&wal);
            let paths = [
                DBPath::new(&sst, MAX_BYTES_FOR_LEVEL_BASE).map_err(|e| engine_err(name, e))?,
                DBPath::new(dir, u64::MAX).map_err(|e| engine_err(name, e))?,
            ];
            o.set_db_paths(&paths);
        }
        let db = DB::open(&o, dir).map_err(|e| engine_err(name, e))?;
        let mut sync_opts = WriteOptions::default();
        sync_opts.set_sync(true);
        let mut async_opts = WriteOptions::default();
        async_opts.set_sync(self.setup.sync);
        Ok(Arc::new(RocksDbEngine {
            name,
            db: RwLock::new(Some(db)),
            options: o,
            sync_opts,
            async_opts,
            user_bytes: AtomicU64::new(0),
        }))
    }

    fn is_engine_dir(&self, dir: &Path) -> bool {
        let accept = |n: &str| is_lsm_file_name(n) || (self.nvm_root.is_some() && n == NVM_MARKER);
        dir_holds_only(dir, &accept, "CURRENT")
            || (self.nvm_root.is_some() && dir_holds_only(dir, &accept, NVM_MARKER))
    }

    fn destroy(&self, dir: &Path) -> Result<()> {
        let name = self.name_str();
        let nvm = if self.nvm_root.is_some() {
            read_nvm_marker(dir)
        } else {
            None
        };
        // Check the NVM side before deleting anything in `dir`, which holds its marker.
        if let Some(nvm) = &nvm {
            for sub in ["wal", "sst"] {
                remove_files(&nvm.join(sub), name, &is_lsm_file_name)?;
                remove_empty_dir(&nvm.join(sub))?;
            }
            remove_empty_dir(nvm)?;
        }
        let keep_marker = self.nvm_root.is_some();
        remove_files(dir, name, &|n| {
            is_lsm_file_name(n) || (keep_marker && n == NVM_MARKER)
        })
    }
}

/// An open RocksDB database under test.
pub struct RocksDbEngine {
    name: &'static str,
    db: RwLock<Option<DB>>,
    /// The options the database was opened with: they own its statistics object.
    options: Options,
    sync_opts: WriteOptions,
    async_opts: WriteOptions,
    user_bytes: AtomicU64,
}

impl std::fmt::Debug for RocksDbEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksDbEngine")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl RocksDbEngine {
    /// Runs `f` on the open database.
    fn with_db<T>(&self, f: impl FnOnce(&DB) -> Result<T>) -> Result<T> {
        let guard = self.db.read().map_err(|_| poisoned(self.name))?;
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(BenchError::engine(self.name, "database is closed")),
        }
    }

    fn write_opts(&self, sync: bool) -> &WriteOptions {
        if sync {
            &self.sync_opts
        } else {
            &self.async_opts
        }
    }

    fn int_property(db: &DB, name: &str) -> u64 {
        db.property_int_value(name).ok().flatten().unwrap_or(0)
    }

    /// The `COUNT` of each ticker in RocksDB's statistics dump.
    fn tickers(&self) -> Vec<(String, u64)> {
        let text = self.options.get_statistics().unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let (name, rest) = l.split_once(" COUNT : ")?;
                Some((name.trim().to_string(), rest.trim().parse().ok()?))
            })
            .collect()
    }
}

impl KvEngine for RocksDbEngine {
    fn name(&self) -> String {
        self.name.to_string()
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.with_db(|db| {
            db.put_opt(key, value, self.write_opts(sync))
                .map_err(|e| engine_err(self.name, e))
        })?;
        self.user_bytes
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with_db(|db| {
            db.get_pinned(key)
                .map(|v| v.map(|v| v.to_vec()))
                .map_err(|e| engine_err(self.name, e))
        })
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.with_db(|db| {
            db.delete_opt(key, self.write_opts(sync))
                .map_err(|e| engine_err(self.name, e))
        })?;
        self.user_bytes
            .fetch_add(key.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn scan(&self, start: Option<&[u8]>, n: usize, direction: Direction) -> Result<ScanResult> {
        self.with_db(|db| {
            let mut it = db.raw_iterator();
            match (direction, start) {
                (Direction::Forward, Some(k)) => it.seek(k),
                (Direction::Forward, None) => it.seek_to_first(),
                (Direction::Reverse, Some(k)) => it.seek_for_prev(k),
                (Direction::Reverse, None) => it.seek_to_last(),
            }
            let mut r = ScanResult::default();
            let mut last = Vec::new();
            while r.entries < n {
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                r.entries += 1;
                r.bytes += (k.len() + v.len()) as u64;
                last.clear();
                last.extend_from_slice(k);
                if r.entries == n {
                    break;
                }
                match direction {
                    Direction::Forward => it.next(),
                    Direction::Reverse => it.prev(),
                }
            }
            it.status().map_err(|e| engine_err(self.name, e))?;
            if r.entries > 0 {
                r.last_key = Some(last);
            }
            Ok(r)
        })
    }

    fn flush(&self) -> Result<()> {
        self.with_db(|db| db.flush().map_err(|e| engine_err(self.name, e)))
    }

    fn wait_for_background(&self) -> Result<()> {
        let started = Instant::now();
        loop {
            let busy = self.with_db(|db| {
                Ok([
                    "rocksdb.num-running-flushes",
                    "rocksdb.num-running-compactions",
                    "rocksdb.mem-table-flush-pending",
                    "rocksdb.compaction-pending",
                ]
                .iter()
                .any(|p| Self::int_property(db, p) > 0))
            })?;
            if !busy {
                return Ok(());
            }
            if started.elapsed() > WAIT_LIMIT {
                return Err(BenchError::engine(
                    self.name,
                    "background work still pending after an hour",
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stats_json(&self) -> serde_json::Value {
        let tickers = self
            .tickers()
            .into_iter()
            .filter(|(_, v)| *v > 0)
            .map(|(k, v)| (k, serde_json::Value::from(v)))
            .collect::<serde_json::Map<_, _>>();
        serde_json::Value::Object(tickers)
    }

    fn stats_text(&self) -> Option<String> {
        self.with_db(|db| Ok(db.property_value("rocksdb.stats").ok().flatten()))
            .ok()
            .flatten()
    }

    fn counters(&self) -> Option<EngineCounters> {
        let t = self.tickers();
        if t.is_empty() {
            return None;
        }
        let get = |name: &str| t.iter().find(|(k, _)| k == name).map_or(0, |(_, v)| *v);
        Some(EngineCounters {
            user_bytes_written: self.user_bytes.load(Ordering::Relaxed),
            storage_bytes_written: get("rocksdb.wal.bytes")
                + get("rocksdb.flush.write.bytes")
                + get("rocksdb.compact.write.bytes"),
            stall_micros: get("rocksdb.stall.micros"),
            nvm_bytes_written: 0,
        })
    }

    fn close(&self) -> Result<()> {
        let mut guard = self.db.write().map_err(|_| poisoned(self.name))?;
        // Dropping the handle flushes nothing (the WAL holds unflushed writes) and closes
        // the database, releasing its LOCK.
        drop(guard.take());
        Ok(())
    }
}
