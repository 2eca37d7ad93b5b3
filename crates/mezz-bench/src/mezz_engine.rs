//! The Mezzanine adapter: [`MezzFactory`] holds the `Options` (a preset plus `key=value`
//! overrides applied with `Options::set`), [`MezzEngine`] drives one open `mezzanine::Db`.
//!
//! Thread-safety: `Db` is `Send + Sync`, so `MezzEngine` is shared by reference between
//! worker threads; each scan uses its own iterator.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::{Clock, DeviceSpec, UnitFs};

use mezzanine::filename::{FileType, parse_file_name};
use mezzanine::{Db, Options, ReadOptions, WriteOptions};

use crate::engine::{Direction, EngineCounters, EngineFactory, KvEngine, ScanResult, TxnOutcome};
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

/// Tables spread over SSD directories beside the database directory, optionally through
/// the device model of an SSD with parallel units.
#[derive(Debug, Clone)]
pub struct UnitsSetup {
    /// Number of SSD directories (`<db>.u0`, `<db>.u1`, ...), given as `ssd_paths`.
    pub count: usize,
    /// The device model the directories are mapped to (`None`: the real file system only).
    pub device: Option<DeviceSpec>,
}

/// The SSD directories of the database in `dir` under `units`: `<dir>.u0`, `<dir>.u1`, ...
#[must_use]
pub fn unit_dirs(dir: &Path, count: usize) -> Vec<PathBuf> {
    let name = dir
        .file_name()
        .map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned());
    (0..count)
        .map(|i| dir.with_file_name(format!("{name}.u{i}")))
        .collect()
}

/// Whether `name` is a column family's directory (`cf-<id>`).
fn is_family_dir(name: &str) -> bool {
    name.strip_prefix("cf-")
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

/// Opens Mezzanine databases with one fixed set of options.
#[derive(Debug, Clone)]
pub struct MezzFactory {
    options: Options,
    units: Option<UnitsSetup>,
}

impl MezzFactory {
    /// A factory for `options`.
    #[must_use]
    pub fn new(options: Options) -> Self {
        Self {
            options,
            units: None,
        }
    }

    /// Spreads each database's tables over SSD directories beside it (see [`UnitsSetup`]).
    #[must_use]
    pub fn with_units(mut self, units: UnitsSetup) -> Self {
        self.units = (units.count > 0).then_some(units);
        self
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

    fn direct_io(&self) -> bool {
        self.options.use_direct_reads || self.options.use_direct_io_for_flush_and_compaction
    }

    fn config_json(&self) -> serde_json::Value {
        serde_json::json!({
            "preset": self.options.preset.name(),
            "nvm_profile": self.options.nvm_profile.name(),
            "options": options_json(&self.options),
            "units": self.units.as_ref().map_or(0, |u| u.count),
            "device": self.units.as_ref().and_then(|u| u.device.as_ref()).map(ToString::to_string),
        })
    }

    fn data_dirs(&self, dir: &Path) -> Vec<PathBuf> {
        let mut v = vec![dir.to_path_buf()];
        v.extend(unit_dirs(dir, self.units.as_ref().map_or(0, |u| u.count)));
        v
    }

    fn open(&self, dir: &Path) -> Result<Arc<dyn KvEngine>> {
        let mut options = self.options.clone();
        let mut device = None;
        if let Some(units) = &self.units {
            let dirs = unit_dirs(dir, units.count);
            options.ssd_paths.clone_from(&dirs);
            if let Some(spec) = &units.device {
                let fs = Arc::new(
                    spec.build(Arc::clone(&options.fs), &dirs, Clock::real())
                        .map_err(|e| BenchError::InvalidArgument(format!("--device: {e}")))?,
                );
                options.fs = Arc::clone(&fs) as Arc<dyn mezz_env::FileSystem>;
                device = Some(fs);
            }
        }
        let db = Db::open(dir, options.clone())?;
        Ok(Arc::new(MezzEngine {
            db,
            device,
            family_options: options,
            families: std::sync::OnceLock::new(),
            families_init: std::sync::Mutex::new(()),
        }))
    }

    fn is_engine_dir(&self, dir: &Path) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        let mut has_current = false;
        for e in entries {
            let Ok(e) = e else { return false };
            let is_file = e.file_type().is_ok_and(|t| t.is_file());
            if e.file_type().is_ok_and(|t| t.is_dir())
                && e.file_name().to_str().is_some_and(is_family_dir)
            {
                continue;
            }
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
        let mut families = false;
        for e in read(dir)? {
            let e = e.map_err(|e| BenchError::io(dir, e))?;
            let is_file = e.file_type().is_ok_and(|t| t.is_file());
            // A column family's directory (`cf-<id>`) of Mezzanine files: the engine's
            // `destroy_db` removes it (and its NVM pool) below.
            if e.file_type().is_ok_and(|t| t.is_dir())
                && e.file_name().to_str().is_some_and(is_family_dir)
            {
                for f in read(&e.path())? {
                    let f = f.map_err(|err| BenchError::io(e.path(), err))?;
                    if !f.file_type().is_ok_and(|t| t.is_file())
                        || f.file_name().to_str().and_then(parse_file_name).is_none()
                    {
                        return Err(BenchError::InvalidArgument(format!(
                            "{} holds {:?}, which is not a Mezzanine file: refusing to delete it",
                            e.path().display(),
                            f.file_name()
                        )));
                    }
                }
                families = true;
                continue;
            }
            if !is_file || e.file_name().to_str().and_then(parse_file_name).is_none() {
                return Err(BenchError::InvalidArgument(format!(
                    "{} holds {:?}, which is not a Mezzanine file: refusing to delete it",
                    dir.display(),
                    e.file_name()
                )));
            }
            doomed.push(e.path());
        }
        // The SSD directories beside it hold table files, their UNIT file and leftovers
        // of interrupted writes only.
        for unit in unit_dirs(dir, self.units.as_ref().map_or(0, |u| u.count)) {
            let Ok(entries) = std::fs::read_dir(&unit) else {
                continue;
            };
            for e in entries {
                let e = e.map_err(|e| BenchError::io(&unit, e))?;
                let name = e.file_name();
                let name = name.to_string_lossy();
                let ours = name == mezzanine::filename::UNIT_FILE
                    || matches!(
                        parse_file_name(&name),
                        Some((FileType::Sst | FileType::Temp, _))
                    );
                if !ours || !e.file_type().is_ok_and(|t| t.is_file()) {
                    return Err(BenchError::InvalidArgument(format!(
                        "{} holds {name:?}, which is not a Mezzanine file: refusing to delete it",
                        unit.display()
                    )));
                }
                doomed.push(e.path());
            }
        }
        if families {
            mezzanine::destroy_db(dir, &self.options)?;
        }
        for p in doomed {
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                // Gone with the families' `destroy_db` above.
                Err(e) if families && e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(BenchError::io(&p, e)),
            }
        }
        // The NVM pool belongs to the database: a new one could not reuse it.
        if let Some(nvm) = &self.options.nvm_dir {
            let pool = nvm.join(mezzanine::filename::POOL_FILE);
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
    /// The device model its table directories go through, if any.
    device: Option<Arc<UnitFs>>,
    /// The options a column family of the `*-cf` benchmarks is created with (the
    /// database's).
    family_options: Options,
    /// The families of the `*-cf` benchmarks (`cf0`, `cf1`, ...), once made or found.
    families: std::sync::OnceLock<Vec<mezzanine::ColumnFamily>>,
    /// Held while `families` is filled.
    families_init: std::sync::Mutex<()>,
}

impl MezzEngine {
    /// Wraps an already open database.
    #[must_use]
    pub fn new(db: Db) -> Self {
        Self {
            db,
            device: None,
            family_options: Options::default(),
            families: std::sync::OnceLock::new(),
            families_init: std::sync::Mutex::new(()),
        }
    }

    /// Family `i` of the `*-cf` benchmarks.
    fn family(&self, i: usize) -> Result<&mezzanine::ColumnFamily> {
        let fams = self.families.get().ok_or_else(|| {
            BenchError::InvalidArgument("the column families were not set up".into())
        })?;
        fams.get(i % fams.len().max(1)).ok_or_else(|| {
            BenchError::InvalidArgument("the column families were not set up".into())
        })
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

    fn write_batch(&self, puts: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        let mut b = mezzanine::WriteBatch::new();
        for (k, v) in puts {
            b.put(k, v);
        }
        Ok(self.db.write(&WriteOptions { sync }, b)?)
    }

    fn column_families(&self, n: usize) -> Result<()> {
        let _g = self
            .families_init
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = self.families.get() {
            if f.len() == n {
                return Ok(());
            }
            return Err(BenchError::InvalidArgument(format!(
                "{} column families were set up, not {n}",
                f.len()
            )));
        }
        let mut fams = Vec::with_capacity(n);
        for i in 0..n {
            let name = format!("cf{i}");
            fams.push(match self.db.column_family(&name) {
                Some(cf) => cf,
                None => self.db.create_column_family(&name, &self.family_options)?,
            });
        }
        let _ = self.families.set(fams);
        Ok(())
    }

    fn put_cf(&self, family: usize, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let mut b = mezzanine::WriteBatch::new();
        b.put_cf(self.family(family)?, key, value);
        Ok(self.db.write(&WriteOptions { sync }, b)?)
    }

    fn get_cf(&self, family: usize, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_cf(self.family(family)?, key)?)
    }

    fn write_batch_cf(&self, puts: &[(usize, &[u8], &[u8])], sync: bool) -> Result<()> {
        let mut b = mezzanine::WriteBatch::new();
        for (f, k, v) in puts {
            b.put_cf(self.family(*f)?, k, v);
        }
        Ok(self.db.write(&WriteOptions { sync }, b)?)
    }

    fn rmw_transaction(&self, keys: &[Vec<u8>], value: &[u8], sync: bool) -> Result<TxnOutcome> {
        let opts = mezzanine::TxnOptions {
            write_options: WriteOptions { sync },
            ..mezzanine::TxnOptions::default()
        };
        let mut retries = 0;
        loop {
            let mut txn = self.db.begin_transaction(&opts);
            let mut found = 0;
            for k in keys {
                found += usize::from(txn.get_for_update(k)?.is_some());
                txn.put(k, value)?;
            }
            match txn.commit() {
                Ok(()) => return Ok(TxnOutcome { found, retries }),
                Err(e) if e.is_busy() => retries += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn wait_for_background(&self) -> Result<()> {
        Ok(self.db.wait_for_background()?)
    }

    fn stats_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.db.stats()).unwrap_or(serde_json::Value::Null);
        if let (Some(fs), Some(map)) = (&self.device, v.as_object_mut()) {
            let units: Vec<serde_json::Value> = fs
                .unit_stats()
                .iter()
                .map(|u| {
                    serde_json::json!({
                        "reads": u.reads,
                        "writes": u.writes,
                        "programs": u.programs,
                        "bytes_read": u.bytes_read,
                        "bytes_written": u.bytes_written,
                        "busy_ns": u.busy_ns,
                        "read_wait_ns": u.read_wait_ns,
                        "write_wait_ns": u.write_wait_ns,
                        "penalized_reads": u.penalized_reads,
                    })
                })
                .collect();
            map.insert("device_units".into(), serde_json::Value::Array(units));
        }
        v
    }

    fn stats_text(&self) -> Option<String> {
        self.db.property("mezz.stats")
    }

    fn counters(&self) -> Option<EngineCounters> {
        let s = self.db.stats();
        let mut c = EngineCounters {
            user_bytes_written: s.user_bytes_written,
            storage_bytes_written: s.wal_bytes_written
                + s.flush_bytes_written
                + s.compaction_bytes_written,
            stall_micros: s.stalls.total_micros(),
            nvm_bytes_written: s.nvm_bytes_written,
        };
        // The column families: their updates (logged in the database's WAL, counted
        // above) and their tables.
        for name in self.db.column_families().iter().skip(1) {
            if let Some(f) = self.db.column_family(name)
                && let Ok(fs) = self.db.stats_cf(&f)
            {
                c.user_bytes_written += fs.user_bytes_written;
                c.storage_bytes_written += fs.flush_bytes_written + fs.compaction_bytes_written;
                c.stall_micros += fs.stalls.total_micros();
                c.nvm_bytes_written += fs.nvm_bytes_written;
            }
        }
        Some(c)
    }

    fn close(&self) -> Result<()> {
        Ok(self.db.close()?)
    }
}
