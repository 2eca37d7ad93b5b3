//! The Mezzanine adapter: [`MezzFactory`] holds the `Options` (a preset plus `key=value`
//! overrides applied with `Options::set`), [`MezzEngine`] drives one open `mezzanine::Db`.
//!
//! Thread-safety: `Db` is `Send + Sync`, so `MezzEngine` is shared by reference between
//! worker threads; each scan uses its own iterator.

use std::path::Path;
use std::sync::Arc;

use mezzanine::filename::{FileType, parse_file_name};
use mezzanine::{Db, Options, ReadOptions, WriteOptions};

use crate::engine::{Direction, EngineCounters, EngineFactory, KvEngine, ScanResult};
use crate::error::{BenchError, Result};

const NAME: &str = "mezzanine";

/// Splits a `key=value` option argument.
///
/// # Errors
/// `InvalidArgument` when there is no `=` or the key is empty.
pub fn parse_opt(arg: &str) -> Result<(String, String)> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(BenchError::InvalidArgument(format!(
            "option {arg:?} is not of the form key=value"
        ))),
    }
}

/// Builds engine options: the preset (default `leveldb`) first, then each `(key, value)`
/// override in order, then validation.
///
/// # Errors
/// `InvalidArgument` for an unknown preset, unknown option, unparsable or invalid value.
pub fn build_options(preset: Option<&str>, overrides: &[(String, String)]) -> Result<Options> {
    let mut o = Options::default();
    let invalid = |e: mezzanine::Error| BenchError::InvalidArgument(e.to_string());
    if let Some(p) = preset {
        o.set("preset", p).map_err(invalid)?;
    }
    for (k, v) in overrides {
        if k == "preset" {
            return Err(BenchError::InvalidArgument(
                "set the preset with --preset, not --opt preset=...".into(),
            ));
        }
        o.set(k, v).map_err(invalid)?;
    }
    // `crashsim` in a benchmark: the simulated NVM lives in this process (it measures the
    // simulator's cost; nothing survives the process).
    if o.nvm_persistence == mezzanine::options::PersistMode::CrashSim && o.nvm_sim.is_none() {
        o.nvm_sim = Some(mezzanine::options::SimNvm::new());
    }
    o.validate().map_err(invalid)?;
    Ok(o)
}

/// The options as a JSON object `{name: value}`, read from `Options::to_text()` so that it
/// always lists every serialisable field.
#[must_use]
pub fn options_json(o: &Options) -> serde_json::Value {
    let map = o
        .to_text()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect::<serde_json::Map<_, _>>();
    serde_json::Value::Object(map)
}

/// Opens Mezzanine databases with one fixed set of options.
#[derive(Debug, Clone)]
pub struct MezzFactory {
    options: Options,
}

impl MezzFactory {
    /// A factory for `options`.
    #[must_use]
    pub fn new(options: Options) -> Self {
        Self { options }
    }

    /// The options databases are opened with.
    #[must_use]
    pub fn options(&self) -> &Options {
        &self.options
    }
}

impl EngineFactory for MezzFactory {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn version(&self) -> String {
        format!("mezzanine {}", env!("CARGO_PKG_VERSION"))
    }

    fn config_json(&self) -> serde_json::Value {
        serde_json::json!({
            "preset": self.options.preset.name(),
            "options": options_json(&self.options),
        })
    }

    fn open(&self, dir: &Path) -> Result<Arc<dyn KvEngine>> {
        let db = Db::open(dir, self.options.clone())?;
        Ok(Arc::new(MezzEngine { db }))
    }

    fn is_engine_dir(&self, dir: &Path) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        let mut has_current = false;
        for e in entries {
            let Ok(e) = e else { return false };
            let is_file = e.file_type().is_ok_and(|t| t.is_file());
            match e.file_name().to_str().and_then(parse_file_name) {
                Some((t, _)) if is_file => has_current |= t == FileType::Current,
                _ => return false,
            }
        }
        has_current
    }

    fn destroy(&self, dir: &Path) -> Result<()> {
        let read = |d: &Path| std::fs::read_dir(d).map_err(|e| BenchError::io(d, e));
        // Check everything first so that a refusal deletes nothing.
        let mut doomed = Vec::new();
        for e in read(dir)? {
            let e = e.map_err(|e| BenchError::io(dir, e))?;
            let is_file = e.file_type().is_ok_and(|t| t.is_file());
            if !is_file || e.file_name().to_str().and_then(parse_file_name).is_none() {
                return Err(BenchError::InvalidArgument(format!(
                    "{} holds {:?}, which is not a Mezzanine file: refusing to delete it",
                    dir.display(),
                    e.file_name()
                )));
            }
            doomed.push(e.path());
        }
        for p in doomed {
            std::fs::remove_file(&p).map_err(|e| BenchError::io(&p, e))?;
        }
        // The NVM pool belongs to the database: a new one could not reuse it.
        if let Some(nvm) = &self.options.nvm_dir {
            let pool = nvm.join(mezzanine::storage::nvm::POOL_FILE);
            if let Some(sim) = &self.options.nvm_sim {
                sim.remove(&pool);
            } else if pool.exists() {
                std::fs::remove_file(&pool).map_err(|e| BenchError::io(&pool, e))?;
            }
        }
        Ok(())
    }
}

/// An open Mezzanine database under test.
#[derive(Debug)]
pub struct MezzEngine {
    db: Db,
}

impl MezzEngine {
    /// Wraps an already open database.
    #[must_use]
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// The database.
    #[must_use]
    pub fn db(&self) -> &Db {
        &self.db
    }
}

impl KvEngine for MezzEngine {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        Ok(self.db.put_opt(&WriteOptions { sync }, key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        Ok(self.db.delete_opt(&WriteOptions { sync }, key)?)
    }

    fn scan(&self, start: Option<&[u8]>, n: usize, direction: Direction) -> Result<ScanResult> {
        let mut it = self.db.cursor(&ReadOptions::default())?;
        match (direction, start) {
            (Direction::Forward, Some(k)) => it.seek(k),
            (Direction::Forward, None) => it.seek_to_first(),
            (Direction::Reverse, Some(k)) => it.seek_for_prev(k),
            (Direction::Reverse, None) => it.seek_to_last(),
        }
        let mut r = ScanResult::default();
        let mut last = Vec::new();
        while r.entries < n && it.valid() {
            r.entries += 1;
            r.bytes += (it.key().len() + it.value().len()) as u64;
            last.clear();
            last.extend_from_slice(it.key());
            if r.entries == n {
                break;
            }
            match direction {
                Direction::Forward => it.next(),
                Direction::Reverse => it.prev(),
            }
        }
        it.status()?;
        if r.entries > 0 {
            r.last_key = Some(last);
        }
        Ok(r)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn wait_for_background(&self) -> Result<()> {
        Ok(self.db.wait_for_background()?)
    }

    fn stats_json(&self) -> serde_json::Value {
        serde_json::to_value(self.db.stats()).unwrap_or(serde_json::Value::Null)
    }

    fn stats_text(&self) -> Option<String> {
        self.db.property("mezz.stats")
    }

    fn counters(&self) -> Option<EngineCounters> {
        let s = self.db.stats();
        Some(EngineCounters {
            user_bytes_written: s.user_bytes_written,
            storage_bytes_written: s.wal_bytes_written
                + s.flush_bytes_written
                + s.compaction_bytes_written,
            stall_micros: s.stalls.total_micros(),
            nvm_bytes_written: s.nvm_bytes_written,
        })
    }

    fn close(&self) -> Result<()> {
        Ok(self.db.close()?)
    }
}
