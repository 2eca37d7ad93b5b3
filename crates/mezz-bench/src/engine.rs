//! The engine seam: [`KvEngine`] is what every workload drives, [`EngineFactory`] opens and
//! destroys one kind of engine in a directory.
//!
//! The harness only ever talks to these two traits, so adapters for other engines (RocksDB,
//! LevelDB, fjall, ...) can be added behind cargo features without touching the workloads.
//! Thread-safety: a `KvEngine` is shared by every worker thread of a benchmark (`Send +
//! Sync`, called concurrently); a factory is used from the driving thread only.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;

/// Which way a scan walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending keys.
    Forward,
    /// Descending keys.
    Reverse,
}

/// What one scan saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanResult {
    /// Entries visited.
    pub entries: usize,
    /// Bytes of keys and values visited.
    pub bytes: u64,
    /// The last key visited (`None` when `entries == 0`).
    pub last_key: Option<Vec<u8>>,
}

/// Raw, cumulative engine counters; the harness takes the difference of two snapshots to
/// report write amplification and stall time for one benchmark's interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineCounters {
    /// Bytes of keys and values accepted from users.
    pub user_bytes_written: u64,
    /// Bytes the engine wrote to storage on their behalf (WAL, flushes, compactions).
    pub storage_bytes_written: u64,
    /// Microseconds writers spent slowed down or stopped by the engine.
    pub stall_micros: u64,
    /// Bytes the engine made durable on its NVM tier (0 for engines without one; engines
    /// whose files merely sit on an NVM path count those in `storage_bytes_written`).
    pub nvm_bytes_written: u64,
}

impl EngineCounters {
    /// Counters accumulated between `earlier` and `self` (saturating, in case an engine
    /// restarted its counters, e.g. after a reopen).
    #[must_use]
    pub fn since(&self, earlier: &EngineCounters) -> EngineCounters {
        EngineCounters {
            user_bytes_written: self
                .user_bytes_written
                .saturating_sub(earlier.user_bytes_written),
            storage_bytes_written: self
                .storage_bytes_written
                .saturating_sub(earlier.storage_bytes_written),
            stall_micros: self.stall_micros.saturating_sub(earlier.stall_micros),
            nvm_bytes_written: self
                .nvm_bytes_written
                .saturating_sub(earlier.nvm_bytes_written),
        }
    }

    /// Storage bytes written per user byte written; `None` when no user byte was written.
    #[must_use]
    pub fn write_amplification(&self) -> Option<f64> {
        (self.user_bytes_written > 0)
            .then(|| self.storage_bytes_written as f64 / self.user_bytes_written as f64)
    }
}

/// What one read-modify-write transaction did ([`KvEngine::rmw_transaction`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnOutcome {
    /// Keys found by the committed attempt's reads.
    pub found: usize,
    /// Attempts refused with a conflict before the one that committed.
    pub retries: u64,
}

/// A key-value engine under test. Every method may be called from several threads at once.
pub trait KvEngine: Send + Sync {
    /// A short name for reports, e.g. `mezzanine`.
    fn name(&self) -> String;

    /// Sets `key` to `value`; with `sync`, returns once the write is durable.
    ///
    /// # Errors
    /// The engine's error.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()>;

    /// The value of `key`, if any.
    ///
    /// # Errors
    /// The engine's error.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Deletes `key`; with `sync`, returns once the delete is durable.
    ///
    /// # Errors
    /// The engine's error.
    fn delete(&self, key: &[u8], sync: bool) -> Result<()>;

    /// Visits up to `n` entries in `direction`, starting at the first key `>= start`
    /// (forward) or the last key `<= start` (reverse); `start == None` starts at the first
    /// (forward) or last (reverse) key.
    ///
    /// # Errors
    /// The engine's error.
    fn scan(&self, start: Option<&[u8]>, n: usize, direction: Direction) -> Result<ScanResult>;

    /// Applies `puts` atomically, as one write batch; with `sync`, returns once durable.
    ///
    /// # Errors
    /// The engine's error; `InvalidArgument` for an engine without write batches (the
    /// default).
    fn write_batch(&self, puts: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        let _ = (puts, sync);
        Err(crate::error::BenchError::InvalidArgument(format!(
            "{} has no write batches in this harness",
            self.name()
        )))
    }

    /// Makes sure column families `0..n` of the `*-cf` benchmarks exist (creating them
    /// with the database's options, or finding them after a reopen).
    ///
    /// # Errors
    /// The engine's error; `InvalidArgument` for an engine without column families (the
    /// default).
    fn column_families(&self, n: usize) -> Result<()> {
        let _ = n;
        Err(crate::error::BenchError::InvalidArgument(format!(
            "{} has no column families in this harness",
            self.name()
        )))
    }

    /// Sets `key` to `value` in column family `family` (set up by `column_families`).
    ///
    /// # Errors
    /// As [`KvEngine::column_families`].
    fn put_cf(&self, family: usize, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let _ = (family, key, value, sync);
        self.column_families(0)
    }

    /// The value of `key` in column family `family`.
    ///
    /// # Errors
    /// As [`KvEngine::column_families`].
    fn get_cf(&self, family: usize, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _ = (family, key);
        self.column_families(0).map(|()| None)
    }

    /// Applies `puts` (family, key, value) atomically, as one write batch.
    ///
    /// # Errors
    /// As [`KvEngine::column_families`].
    fn write_batch_cf(&self, puts: &[(usize, &[u8], &[u8])], sync: bool) -> Result<()> {
        let _ = (puts, sync);
        self.column_families(0)
    }

    /// Reads each of `keys` for update and sets it to `value` in one transaction, then
    /// commits; on a conflict, runs the whole transaction again until it commits.
    ///
    /// # Errors
    /// The engine's error; `InvalidArgument` for an engine without transactions (the
    /// default).
    fn rmw_transaction(&self, keys: &[Vec<u8>], value: &[u8], sync: bool) -> Result<TxnOutcome> {
        let _ = (keys, value, sync);
        Err(crate::error::BenchError::InvalidArgument(format!(
            "{} has no transactions in this harness",
            self.name()
        )))
    }

    /// Flushes in-memory writes to storage.
    ///
    /// # Errors
    /// The engine's error.
    fn flush(&self) -> Result<()>;

    /// Waits until no background work (flush, compaction) is pending.
    ///
    /// # Errors
    /// The engine's error.
    fn wait_for_background(&self) -> Result<()>;

    /// The engine's own statistics, as JSON (`null` when it has none).
    fn stats_json(&self) -> serde_json::Value;

    /// The engine's human-readable statistics, if it has any.
    fn stats_text(&self) -> Option<String> {
        None
    }

    /// Cumulative counters, if the engine reports them.
    fn counters(&self) -> Option<EngineCounters> {
        None
    }

    /// Cumulative write amplification reported by the engine, if any.
    fn write_amplification(&self) -> Option<f64> {
        self.counters().and_then(|c| c.write_amplification())
    }

    /// Cumulative stall time reported by the engine, if any.
    fn stall_micros(&self) -> Option<u64> {
        self.counters().map(|c| c.stall_micros)
    }

    /// Closes the engine, releasing its directory. Later calls may fail.
    ///
    /// # Errors
    /// The engine's error.
    fn close(&self) -> Result<()>;
}

impl std::fmt::Debug for dyn KvEngine + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KvEngine({})", self.name())
    }
}

/// Opens, recognises and destroys one kind of engine. The configuration the engine is opened
/// with lives in the factory, so a benchmark can reopen a fresh database with it.
pub trait EngineFactory: Send + Sync {
    /// The engine's name, e.g. `mezzanine`.
    fn name(&self) -> String;

    /// The configuration as JSON (preset, every option): embedded in every result.
    fn config_json(&self) -> serde_json::Value;

    /// Whether the engine reads and writes its table files with direct I/O (`O_DIRECT`,
    /// bypassing the page cache): recorded as `direct_io` in every result's configuration.
    /// Default: false (an engine without direct I/O).
    fn direct_io(&self) -> bool {
        false
    }

    /// The engine's version and build, e.g. `mezzanine 0.1.0` or
    /// `rocksdb 7.8.3 (Debian library, assertions on)`: embedded in every result.
    fn version(&self) -> String;

    /// Opens (creating if missing) the database in `dir`.
    ///
    /// # Errors
    /// The engine's error.
    fn open(&self, dir: &Path) -> Result<Arc<dyn KvEngine>>;

    /// Whether `dir` holds a database of this engine (and nothing else), so that destroying
    /// it loses nothing the user put there by hand.
    fn is_engine_dir(&self, dir: &Path) -> bool;

    /// Deletes the database files in `dir` (which must be closed), leaving `dir` itself.
    ///
    /// # Errors
    /// `InvalidArgument` if `dir` holds files that are not the engine's; `Io` errors.
    fn destroy(&self, dir: &Path) -> Result<()>;

    /// Every directory holding the SSD data of the database in `dir` (for space
    /// accounting): `dir` itself, plus any table directories the engine keeps beside it.
    fn data_dirs(&self, dir: &Path) -> Vec<std::path::PathBuf> {
        vec![dir.to_path_buf()]
    }
}
