//! The fjall adapter (cargo feature `fjall`): one fjall 3 database per directory with one
//! keyspace, `default`.
//!
//! Configuration (listed by `config_json`): the keyspace's `max_memtable_size` is the
//! setup's `write_buffer_size`, the database's block cache is `block_cache_bytes`, data
//! blocks have a bloom filter of `bloom_bits` bits per key on every level, and nothing is
//! compressed (blocks and journal are set to `CompressionType::None` explicitly) unless
//! `EngineSetup::compress` asks for LZ4 data blocks on every level (the crate's `lz4`
//! feature; index blocks and journal stay uncompressed, as Mezzanine's index).
//!
//! Index and filter blocks are pinned in memory on every level and not partitioned, which is
//! what the RocksDB adapter gets from RocksDB's defaults (`cache_index_and_filter_blocks =
//! false`: each table reader holds its whole index and full filter outside the block cache)
//! and what LevelDB does (its table cache holds them). fjall's defaults pin only L0 filters
//! and L0/L1 indexes and partition both from L3 on, so beyond L1 every lookup read its index
//! and filter blocks through the 8 MiB block cache, where the data blocks evicted them: with
//! 8 M keys readrandom ran at 14 K ops/s (p50 60 µs) instead of ≈ 150 K (docs/comparators.md).
//! Compaction: fjall's default leveled strategy (L0 trigger 4, 64 MiB tables, ratio 10, as
//! RocksDB's defaults), with `worker_threads = 2` set explicitly (fjall's default is the
//! number of cores up to 4) to match RocksDB's `max_background_jobs = 2`. No key-value
//! separation (blob files), as RocksDB's adapter uses none.
//!
//! Durability: fjall writes every insert or remove
//! into its journal and hands it to the operating system before returning (its default,
//! `manual_journal_persist = false`: like an unsynced RocksDB or LevelDB write, a process
//! crash loses nothing, a machine crash may lose the tail). A `sync` write is followed by
//! `Database::persist(PersistMode::SyncData)` (fdatasync of the journal).
//!
//! Counters: fjall reports no bytes written, so `counters()` is `None` and the harness's
//! `/proc/self/io` figures are the only storage numbers; `stats_json` gives what fjall does
//! report (disk space, journal count, table counts, compactions) plus the user bytes the
//! adapter counts. `wait_for_background` waits until fjall has no outstanding flush and no
//! running compaction twice in a row 20 ms apart (fjall exposes no "compaction pending").
//! Thread-safety: `Database` and `Keyspace` are shared by all threads; the lock only guards
//! `close`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use fjall::config::{
    BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    PartitioningPolicy, PinningPolicy,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::engine::{Direction, EngineFactory, KvEngine, ScanResult};
use crate::engines::EngineSetup;
use crate::error::{BenchError, Result};

const NAME: &str = "fjall";
const KEYSPACE: &str = "default";
/// Whether `name` is an entry fjall creates at the top of its directory: `version`,
/// `lock`, the `keyspaces` directory and the journals `<n>.jnl`.
fn is_fjall_entry(name: &str) -> bool {
    matches!(name, "version" | "lock" | "keyspaces")
        || name
            .strip_suffix(".jnl")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
/// Background threads (flushes and compactions), as RocksDB's `max_background_jobs`.
const WORKER_THREADS: usize = 2;
/// The file that identifies a fjall database.
const FJALL_MARKER: &str = "version";
/// How long `wait_for_background` waits before giving up.
const WAIT_LIMIT: Duration = Duration::from_secs(3600);

fn engine_err(e: fjall::Error) -> BenchError {
    BenchError::engine(NAME, e)
}

/// Opens fjall databases with one fixed configuration.
#[derive(Debug, Clone)]
pub struct FjallFactory {
    setup: EngineSetup,
}

impl FjallFactory {
    /// A factory for `setup` (its `nvm_dir` is not used).
    #[must_use]
    pub fn new(setup: EngineSetup) -> Self {
        Self { setup }
    }

    fn keyspace_options(&self) -> KeyspaceCreateOptions {
        let filter = if self.setup.bloom_bits > 0 {
            FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(self.setup.bloom_bits as f32),
            ))
        } else {
            FilterPolicy::disabled()
        };
        KeyspaceCreateOptions::default()
            .max_memtable_size(self.setup.write_buffer_size as u64)
            .filter_policy(filter)
            .data_block_compression_policy(CompressionPolicy::all(if self.setup.compress {
                CompressionType::Lz4
            } else {
                CompressionType::None
            }))
            .index_block_compression_policy(CompressionPolicy::all(CompressionType::None))
            .filter_block_pinning_policy(PinningPolicy::all(true))
            .index_block_pinning_policy(PinningPolicy::all(true))
            .filter_block_partitioning_policy(PartitioningPolicy::all(false))
            .index_block_partitioning_policy(PartitioningPolicy::all(false))
    }
}

impl EngineFactory for FjallFactory {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn config_json(&self) -> serde_json::Value {
        let s = &self.setup;
        serde_json::json!({
            "engine": NAME,
            "keyspace": KEYSPACE,
            "max_memtable_size": s.write_buffer_size,
            "cache_size": s.block_cache_bytes,
            "bloom_bits_per_key": s.bloom_bits,
            "compression": if s.compress {
                "lz4 data blocks (index blocks and journal: none)"
            } else {
                "none (blocks and journal)"
            },
            "manual_journal_persist": false,
            "index_and_filter_blocks": "pinned on every level, not partitioned",
            "compaction": "leveled (fjall's default)",
            "worker_threads": WORKER_THREADS,
            "kv_separation": false,
            "sync": s.sync,
            "sync_method": "persist(SyncData) after the write",
        })
    }

    fn version(&self) -> String {
        "fjall 3.1 (pure Rust)".to_string()
    }

    fn open(&self, dir: &Path) -> Result<Arc<dyn KvEngine>> {
        let db = Database::builder(dir)
            .cache_size(self.setup.block_cache_bytes as u64)
            .worker_threads(WORKER_THREADS)
            .journal_compression(CompressionType::None)
            .open()
            .map_err(engine_err)?;
        let ks = db
            .keyspace(KEYSPACE, || self.keyspace_options())
            .map_err(engine_err)?;
        Ok(Arc::new(FjallEngine {
            inner: RwLock::new(Some((db, ks))),
            sync: self.setup.sync,
            user_bytes: AtomicU64::new(0),
        }))
    }

    fn is_engine_dir(&self, dir: &Path) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        let mut has_marker = false;
        for e in entries {
            let Ok(e) = e else { return false };
            match e.file_name().to_str() {
                Some(n) if is_fjall_entry(n) => has_marker |= n == FJALL_MARKER,
                _ => return false,
            }
        }
        has_marker
    }

    fn destroy(&self, dir: &Path) -> Result<()> {
        let read = std::fs::read_dir(dir).map_err(|e| BenchError::io(dir, e))?;
        let mut doomed = Vec::new();
        for e in read {
            let e = e.map_err(|e| BenchError::io(dir, e))?;
            if !e.file_name().to_str().is_some_and(is_fjall_entry) {
                return Err(BenchError::InvalidArgument(format!(
                    "{} holds {:?}, which is not a fjall file: refusing to delete it",
                    dir.display(),
                    e.file_name()
                )));
            }
            doomed.push((e.path(), e.file_type().is_ok_and(|t| t.is_dir())));
        }
        for (p, is_dir) in doomed {
            let r = if is_dir {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
            r.map_err(|e| BenchError::io(&p, e))?;
        }
        Ok(())
    }
}

/// An open fjall database under test.
pub struct FjallEngine {
    inner: RwLock<Option<(Database, Keyspace)>>,
    sync: bool,
    user_bytes: AtomicU64,
}

impl std::fmt::Debug for FjallEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FjallEngine")
            .field("sync", &self.sync)
            .finish_non_exhaustive()
    }
}

impl FjallEngine {
    fn with<T>(&self, f: impl FnOnce(&Database, &Keyspace) -> Result<T>) -> Result<T> {
        let guard = self
            .inner
            .read()
            .map_err(|_| BenchError::engine(NAME, "lock poisoned by a panicking thread"))?;
        match guard.as_ref() {
            Some((db, ks)) => f(db, ks),
            None => Err(BenchError::engine(NAME, "database is closed")),
        }
    }

    fn persist(&self, db: &Database, sync: bool) -> Result<()> {
        if sync || self.sync {
            db.persist(PersistMode::SyncData).map_err(engine_err)?;
        }
        Ok(())
    }
}

impl KvEngine for FjallEngine {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.with(|db, ks| {
            ks.insert(key, value).map_err(engine_err)?;
            self.persist(db, sync)
        })?;
        self.user_bytes
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with(|_, ks| Ok(ks.get(key).map_err(engine_err)?.map(|v| v.to_vec())))
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.with(|db, ks| {
            ks.remove(key).map_err(engine_err)?;
            self.persist(db, sync)
        })?;
        self.user_bytes
            .fetch_add(key.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn scan(&self, start: Option<&[u8]>, n: usize, direction: Direction) -> Result<ScanResult> {
        if n == 0 {
            return Ok(ScanResult::default());
        }
        self.with(|_, ks| {
            let mut r = ScanResult::default();
            let mut visit = |g: fjall::Guard| -> Result<bool> {
                let (k, v) = g.into_inner().map_err(engine_err)?;
                r.entries += 1;
                r.bytes += (k.len() + v.len()) as u64;
                r.last_key = Some(k.to_vec());
                Ok(r.entries < n)
            };
            match (direction, start) {
                (Direction::Forward, Some(s)) => {
                    for g in ks.range::<&[u8], _>(s..) {
                        if !visit(g)? {
                            break;
                        }
                    }
                }
                (Direction::Forward, None) => {
                    for g in ks.iter() {
                        if !visit(g)? {
                            break;
                        }
                    }
                }
                (Direction::Reverse, Some(s)) => {
                    for g in ks.range::<&[u8], _>(..=s).rev() {
                        if !visit(g)? {
                            break;
                        }
                    }
                }
                (Direction::Reverse, None) => {
                    for g in ks.iter().rev() {
                        if !visit(g)? {
                            break;
                        }
                    }
                }
            }
            Ok(r)
        })
    }

    fn flush(&self) -> Result<()> {
        self.with(|_, ks| ks.rotate_memtable_and_wait().map_err(engine_err))
    }

    fn wait_for_background(&self) -> Result<()> {
        let started = Instant::now();
        let mut idle_polls = 0;
        while idle_polls < 2 {
            let idle = self
                .with(|db, _| Ok(db.outstanding_flushes() == 0 && db.active_compactions() == 0))?;
            idle_polls = if idle { idle_polls + 1 } else { 0 };
            if started.elapsed() > WAIT_LIMIT {
                return Err(BenchError::engine(
                    NAME,
                    "background work still running after an hour",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn stats_json(&self) -> serde_json::Value {
        self.with(|db, ks| {
            Ok(serde_json::json!({
                "user_bytes_written": self.user_bytes.load(Ordering::Relaxed),
                "disk_space": db.disk_space().ok(),
                "journal_count": db.journal_count(),
                "write_buffer_size": db.write_buffer_size(),
                "compactions_completed": db.compactions_completed(),
                "time_compacting_micros": db.time_compacting().as_micros() as u64,
                "table_count": ks.table_count(),
                "l0_table_count": ks.l0_table_count(),
                "approximate_len": ks.approximate_len(),
            }))
        })
        .unwrap_or(serde_json::Value::Null)
    }

    fn stats_text(&self) -> Option<String> {
        serde_json::to_string_pretty(&self.stats_json()).ok()
    }

    fn close(&self) -> Result<()> {
        let mut guard = self
            .inner
            .write()
            .map_err(|_| BenchError::engine(NAME, "lock poisoned by a panicking thread"))?;
        if let Some((db, ks)) = guard.take() {
            // Persist the journal like fjall's own drop does, then release the directory.
            db.persist(PersistMode::SyncAll).map_err(engine_err)?;
            drop(ks);
            drop(db);
        }
        Ok(())
    }
}
