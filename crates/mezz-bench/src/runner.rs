//! The driver: prepares the database directory, runs each benchmark's worker threads,
//! measures around them, and writes the report lines and JSON lines.
//!
//! Directory rules (like db_bench's `--use_existing_db`): without `--db`, a fresh temporary
//! directory is used and deleted at the end. With `--db DIR` and no `--use-existing`, `DIR`
//! must be absent, empty, or hold a database of the engine (which is destroyed); anything
//! else is refused, so the harness never deletes files it did not create. With
//! `--use-existing` the data is kept and the `fill*` benchmarks are skipped.
//!
//! After each benchmark the driver waits for the engine's background work (flushes,
//! compactions) before taking the engine and process counters, so write amplification
//! includes the work the benchmark left pending, and measures the space used.
//!
//! Thread-safety: `run` is called from one thread; it spawns scoped workers per benchmark
//! and joins them before measuring.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::{EngineFactory, KvEngine};
use crate::error::{BenchError, Result};
use crate::keygen::ValueGenerator;
use crate::memlimit::MemoryBudget;
use crate::metrics::{OpKind, ThreadMetrics, stall_second_list};
use crate::report::{
    BenchResult, Durability, EngineInterval, ProcessMetrics, SpaceUsage, iso8601_utc,
};
use crate::sysinfo::{MachineInfo, ProcSnapshot, peak_rss_bytes};
use crate::workloads::{Benchmark, Step, WorkerCtx, run_worker};
use crate::ycsb::{YcsbKeySpace, YcsbParams, YcsbRun, average_key_len};

/// Runs shorter than this get no progress bar.
const PROGRESS_DELAY: Duration = Duration::from_secs(2);
/// How often the driver looks at its workers.
const POLL: Duration = Duration::from_millis(20);

/// What to run and how (everything but the engine's own options, which live in the
/// [`EngineFactory`]).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Benchmarks, run in order, each with its own thread count if it names one.
    pub benchmarks: Vec<Step>,
    /// Number of keys (`--num`). Default: 1,000,000.
    pub num: u64,
    /// Number of reads (`--reads`); `None` = `num`.
    pub reads: Option<u64>,
    /// Key size in bytes. Default: 16.
    pub key_size: usize,
    /// Value size in bytes. Default: 100.
    pub value_size: usize,
    /// Worker threads. Default: 1.
    pub threads: usize,
    /// Make every write synchronous. Default: false.
    pub sync: bool,
    /// Database directory; `None` = a temporary directory deleted at the end.
    pub db: Option<PathBuf>,
    /// Keep the data already in `db` (and skip the `fill*` benchmarks). Default: false.
    pub use_existing: bool,
    /// `reopen` drops the kernel's page cache (`sync`, then 3 into
    /// `/proc/sys/vm/drop_caches`) between the close and the timed open, so recovery reads
    /// the device; where that is not allowed (not root) the result records
    /// `cold: false`. Default: false (the files may still be cached).
    pub drop_caches_before_reopen: bool,
    /// Append one JSON object per benchmark to this file. Default: none.
    pub json: Option<PathBuf>,
    /// Base seed of the workers' random number generators. Default: 301.
    pub seed: u64,
    /// Show a progress bar on stderr for long runs (only if stderr is a terminal).
    /// Default: true.
    pub progress: bool,
    /// Operations of the YCSB workloads A–F (`--ops`); `None` = `num`.
    pub ops: Option<u64>,
    /// Open loop: total intended operations per second of the counted threads (`--rate`);
    /// `None` = closed loop. Default: none.
    pub rate: Option<f64>,
    /// YCSB record size and scan length.
    pub ycsb: YcsbParams,
    /// The engine's NVM directory, if any: its files count in the space used.
    pub nvm_dir: Option<PathBuf>,
    /// The sweep point this run is, e.g. `value_size=256` (labels the results).
    pub point: Option<String>,
    /// The engine's name in the results, when it differs from the engine's own (e.g.
    /// `mezzanine:novelsm` for a preset). Default: none.
    pub engine_label: Option<String>,
    /// Knobs every engine was given alike (write buffer, cache, bloom bits, ...), as JSON;
    /// `null` when not set by the caller.
    pub knobs: serde_json::Value,
    /// The memory cgroup limit the process runs under (`--memory-limit`), recorded as
    /// `memory_limit_bytes` in the configuration, its group's peak as
    /// `process.cgroup_peak_bytes`. Default: none (both `null`).
    pub memory_budget: Option<MemoryBudget>,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            benchmarks: vec![Benchmark::FillRandom.into(), Benchmark::ReadRandom.into()],
            num: 1_000_000,
            reads: None,
            key_size: 16,
            value_size: 100,
            threads: 1,
            sync: false,
            db: None,
            use_existing: false,
            drop_caches_before_reopen: false,
            json: None,
            seed: 301,
            progress: true,
            ops: None,
            rate: None,
            ycsb: YcsbParams::default(),
            nvm_dir: None,
            point: None,
            engine_label: None,
            knobs: serde_json::Value::Null,
            memory_budget: None,
        }
    }
}

impl BenchConfig {
    /// Reads to do: `reads`, or `num` when unset.
    #[must_use]
    pub fn effective_reads(&self) -> u64 {
        self.reads.unwrap_or(self.num)
    }

    /// YCSB operations to do: `ops`, or `num` when unset.
    #[must_use]
    pub fn effective_ops(&self) -> u64 {
        self.ops.unwrap_or(self.num)
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(BenchError::InvalidArgument(m.to_string()));
        if self.benchmarks.is_empty() {
            return bad("no benchmark given");
        }
        if self.num == 0 {
            return bad("--num must be at least 1");
        }
        if !(1..=4096).contains(&self.key_size) {
            return bad("--key-size must be in 1..=4096");
        }
        if self.value_size > (64 << 20) {
            return bad("--value-size must be at most 64 MiB");
        }
        if !(1..=1024).contains(&self.threads) {
            return bad("--threads must be in 1..=1024");
        }
        if self.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            return bad("--rate must be a positive number of operations per second");
        }
        if self.ycsb.record_size > (64 << 20) {
            return bad("YCSB records must be at most 64 MiB");
        }
        if self.ycsb.max_scan_length == 0 {
            return bad("the YCSB scan length must be at least 1");
        }
        Ok(())
    }

    /// The configuration as JSON, merged with the engine's (`engine`, `preset`, `options`).
    #[must_use]
    pub fn to_json(&self, factory: &dyn EngineFactory) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("engine".into(), factory.name().into());
        if let serde_json::Value::Object(engine) = factory.config_json() {
            m.extend(engine);
        }
        m.insert("direct_io".into(), factory.direct_io().into());
        let benchmarks: Vec<String> = self.benchmarks.iter().map(Step::label).collect();
        let rest = serde_json::json!({
            "benchmarks": benchmarks,
            "num": self.num,
            "reads": self.effective_reads(),
            "key_size": self.key_size,
            "value_size": self.value_size,
            "threads": self.threads,
            "sync": self.sync,
            "seed": self.seed,
            "use_existing": self.use_existing,
            "db": self.db.as_ref().map(|p| p.display().to_string()),
            "ops": self.effective_ops(),
            "rate": self.rate,
            "ycsb_record_size": self.ycsb.record_size,
            "ycsb_max_scan_length": self.ycsb.max_scan_length,
            "nvm_dir": self.nvm_dir.as_ref().map(|p| p.display().to_string()),
            "point": self.point,
            "knobs": self.knobs,
            "memory_limit_bytes": self.memory_budget.as_ref().map(|b| b.limit_bytes),
        });
        if let serde_json::Value::Object(rest) = rest {
            m.extend(rest);
        }
        serde_json::Value::Object(m)
    }
}

/// Where the database lives for the run.
enum DbDir {
    /// `db` inside a temporary directory (removed at the end with whatever the engine kept
    /// beside `db`, such as table directories).
    Temp {
        /// The temporary directory (`_root`: only held, never read, until the end).
        _root: tempfile::TempDir,
        /// The database directory inside it.
        db: PathBuf,
    },
    Given(PathBuf),
}

impl DbDir {
    fn path(&self) -> &Path {
        match self {
            DbDir::Temp { db, .. } => db,
            DbDir::Given(p) => p,
        }
    }
}

/// Resolves and prepares the database directory. Returns it and whether it may hold data.
fn prepare_dir(cfg: &BenchConfig, factory: &dyn EngineFactory) -> Result<(DbDir, bool)> {
    let Some(dir) = &cfg.db else {
        let t = tempfile::Builder::new()
            .prefix("mezz-bench-")
            .tempdir()
            .map_err(|e| BenchError::io(std::env::temp_dir(), e))?;
        let db = t.path().join("db");
        std::fs::create_dir(&db).map_err(|e| BenchError::io(&db, e))?;
        return Ok((DbDir::Temp { _root: t, db }, false));
    };
    let mut has_data = false;
    if dir.exists() {
        if !dir.is_dir() {
            return Err(BenchError::InvalidArgument(format!(
                "--db {} exists and is not a directory",
                dir.display()
            )));
        }
        let non_empty = std::fs::read_dir(dir)
            .map_err(|e| BenchError::io(dir, e))?
            .next()
            .is_some();
        if non_empty {
            if cfg.use_existing {
                has_data = true;
            } else if factory.is_engine_dir(dir) {
                factory.destroy(dir)?;
            } else {
                return Err(BenchError::InvalidArgument(format!(
                    "--db {} is not empty and does not hold a {} database: refusing to \
                     delete it (pass --use-existing to benchmark the data in it)",
                    dir.display(),
                    factory.name()
                )));
            }
        }
    } else {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
    }
    Ok((DbDir::Given(dir.clone()), has_data))
}

/// The db_bench-style header: sizes, entries, raw data size.
fn header(cfg: &BenchConfig, factory: &dyn EngineFactory, dir: &Path) -> String {
    let entry = (cfg.key_size + cfg.value_size) as f64;
    let n = cfg.num as f64;
    format!(
        "Engine:     {}\nDirectory:  {}\nKeys:       {} bytes each\nValues:     {} bytes \
         each ({} bytes after compression)\nEntries:    {}\nReads:      {}\nThreads:    {}\n\
         RawSize:    {:.1} MB (estimated)\n{}",
        factory.name(),
        dir.display(),
        cfg.key_size,
        cfg.value_size,
        cfg.value_size / 2,
        cfg.num,
        cfg.effective_reads(),
        cfg.threads,
        entry * n / 1_048_576.0,
        extra_header(cfg)
    )
}

/// Header lines for YCSB, open loop and sweep points, then the rule.
fn extra_header(cfg: &BenchConfig) -> String {
    let mut s = String::new();
    if cfg.benchmarks.iter().any(|s| s.bench.is_ycsb()) {
        s.push_str(&format!(
            "YCSB:       records of {} bytes, {} operations per workload, scans of 1..={}\n",
            cfg.ycsb.record_size,
            cfg.effective_ops(),
            cfg.ycsb.max_scan_length
        ));
    }
    if let Some(r) = cfg.rate {
        s.push_str(&format!(
            "Open loop:  {r} operations/s in total, latency from intended start\n"
        ));
    }
    if let Some(p) = &cfg.point {
        s.push_str(&format!("Point:      {p}\n"));
    }
    if let Some(b) = &cfg.memory_budget {
        s.push_str(&format!(
            "Memory:     limit {} MiB (memory cgroup: heap and page cache)\n",
            b.limit_bytes >> 20
        ));
    }
    s + &"-".repeat(48)
}

/// Runs every benchmark of `cfg` on the engine `factory` opens, printing the header and one
/// line per benchmark to `out`, appending JSON lines to `cfg.json`. Returns the results.
///
/// # Errors
/// A bad configuration or directory, the first engine error, or an I/O error on the JSON
/// file.
pub fn run(
    cfg: &BenchConfig,
    factory: &dyn EngineFactory,
    out: &mut dyn Write,
) -> Result<Vec<BenchResult>> {
    cfg.validate()?;
    let out_err = |e: std::io::Error| BenchError::io("<stdout>", e);
    let mut json = match &cfg.json {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| BenchError::io(p, e))?,
        ),
        None => None,
    };
    let (dir, mut has_data) = prepare_dir(cfg, factory)?;
    let config_json = cfg.to_json(factory);
    let shared = Shared {
        machine: MachineInfo::collect(),
        durability: Durability {
            sync: cfg.sync,
            nvm_persistence: config_json["options"]["nvm_persistence"]
                .as_str()
                .map(str::to_string),
        },
        config_json,
        version: factory.version(),
        values: ValueGenerator::new(cfg.value_size.max(cfg.ycsb.record_size)),
        keys: YcsbKeySpace::new(if has_data { cfg.num } else { 0 }),
        data_dirs: factory.data_dirs(dir.path()),
    };
    writeln!(out, "{}", header(cfg, factory, dir.path())).map_err(out_err)?;

    let mut engine = factory.open(dir.path())?;
    let mut results = Vec::new();
    for (index, &step) in cfg.benchmarks.iter().enumerate() {
        let bench = step.bench;
        let threads = step.threads.unwrap_or(cfg.threads);
        if bench == Benchmark::Stats {
            let text = engine
                .stats_text()
                .unwrap_or_else(|| engine.stats_json().to_string());
            writeln!(out, "{text}").map_err(out_err)?;
            continue;
        }
        if bench == Benchmark::Reopen {
            engine.close()?;
            drop(engine);
            let cold = cfg.drop_caches_before_reopen && drop_page_cache();
            let start = Instant::now();
            engine = factory.open(dir.path())?;
            let secs = start.elapsed().as_secs_f64();
            let r = BenchResult {
                benchmark: bench.name().to_string(),
                engine: factory.name(),
                engine_version: shared.version.clone(),
                point: cfg.point.clone(),
                durability: shared.durability.clone(),
                config: shared.config_json.clone(),
                machine: shared.machine.clone(),
                timestamp_unix: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                ops: 1,
                elapsed_secs: secs,
                micros_per_op: secs * 1e6,
                ops_per_sec: 1.0 / secs.max(1e-9),
                primary_op: "open".to_string(),
                engine_stats: serde_json::json!({ "page_cache_dropped": cold }),
                ..BenchResult::default()
            };
            writeln!(
                out,
                "{:<12} : {:>11.3} ms to open (recovery{})",
                bench.name(),
                secs * 1e3,
                if cold { ", page cache dropped" } else { "" }
            )
            .map_err(out_err)?;
            if let (Some(f), Some(p)) = (json.as_mut(), cfg.json.as_ref()) {
                let line = serde_json::to_string(&r)
                    .map_err(|e| BenchError::InvalidArgument(format!("JSON: {e}")))?;
                writeln!(f, "{line}")
                    .and_then(|()| f.flush())
                    .map_err(|e| BenchError::io(p, e))?;
            }
            results.push(r);
            continue;
        }
        if bench.needs_fresh_db() {
            if cfg.use_existing {
                writeln!(
                    out,
                    "{:<12} : skipped (--use-existing keeps the existing data)",
                    bench.name()
                )
                .map_err(out_err)?;
                continue;
            }
            if has_data {
                engine.close()?;
                drop(engine);
                factory.destroy(dir.path())?;
                engine = factory.open(dir.path())?;
            }
            shared.keys.reset(0);
        }
        let seed = cfg.seed.wrapping_add((index as u64) << 32);
        if bench.is_ycsb() && bench != Benchmark::YcsbLoad && shared.keys.acknowledged() == 0 {
            writeln!(
                out,
                "{:<12} : loading {} records first (not measured)",
                bench.name(),
                cfg.num
            )
            .map_err(out_err)?;
            run_one(
                cfg,
                Benchmark::YcsbLoad,
                threads,
                &engine,
                &shared,
                seed ^ 1,
            )?;
            shared.keys.reset(cfg.num);
        }
        let r = run_one(cfg, bench, threads, &engine, &shared, seed)?;
        if bench == Benchmark::YcsbLoad {
            shared.keys.reset(cfg.num);
        }
        has_data = true;
        writeln!(out, "{}", r.human_line()).map_err(out_err)?;
        if let (Some(f), Some(p)) = (json.as_mut(), cfg.json.as_ref()) {
            let line = r
                .to_json_line()
                .map_err(|e| BenchError::InvalidArgument(format!("JSON: {e}")))?;
            writeln!(f, "{line}")
                .and_then(|()| f.flush())
                .map_err(|e| BenchError::io(p, e))?;
        }
        results.push(r);
    }
    engine.close()?;
    drop(engine);
    if let DbDir::Temp { _root: t, db } = dir {
        // Through the factory first: an engine may keep files outside its directory (an
        // NVM pool, the "-nvm" variants' files) that only it knows about.
        factory.destroy(&db)?;
        let p = t.path().to_path_buf();
        t.close().map_err(|e| BenchError::io(p, e))?;
    }
    Ok(results)
}

/// Counts a worker as finished when dropped, even if it panics.
struct FinishGuard<'a>(&'a AtomicUsize);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

fn new_progress_bar(bench: Benchmark, total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:>12} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} (eta {eta})",
    ) {
        bar.set_style(style);
    }
    bar.set_message(bench.name());
    bar
}

/// What the benchmarks of one run share.
struct Shared {
    machine: MachineInfo,
    durability: Durability,
    config_json: serde_json::Value,
    version: String,
    values: ValueGenerator,
    keys: YcsbKeySpace,
    /// Every directory holding the database's SSD data (`db` and any table directories).
    data_dirs: Vec<PathBuf>,
}

/// Bytes allocated to the files under `dir` (recursively; symbolic links are not followed;
/// `st_blocks × 512`, so a sparse, preallocated NVM pool counts only the pages it uses).
/// Unreadable entries count as empty.
#[must_use]
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(std::result::Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| {
                use std::os::unix::fs::MetadataExt as _;
                m.blocks().saturating_mul(512)
            }),
            _ => 0,
        })
        .sum()
}

/// Runs one benchmark and measures it.
fn run_one(
    cfg: &BenchConfig,
    bench: Benchmark,
    threads: usize,
    engine: &Arc<dyn KvEngine>,
    shared: &Shared,
    seed: u64,
) -> Result<BenchResult> {
    let counted = threads;
    let workers = bench.worker_threads(threads);
    let reads = if bench.is_ycsb() {
        cfg.effective_ops()
    } else {
        cfg.effective_reads()
    };
    let total = bench.total_ops(cfg.num, reads);
    let ycsb = bench
        .is_ycsb()
        .then(|| YcsbRun::new(bench, total, &shared.keys, cfg.ycsb));
    let progress = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let counted_done = AtomicUsize::new(0);
    let others_done = AtomicUsize::new(0);
    let show_progress = cfg.progress && std::io::stderr().is_terminal();

    let round_trip_before = crate::sysinfo::core_round_trip_ns();
    let counters_before = engine.counters();
    let proc_before = ProcSnapshot::now();
    let start = Instant::now();
    let ctx = WorkerCtx {
        bench,
        engine: engine.as_ref(),
        num: cfg.num,
        reads,
        key_size: cfg.key_size,
        value_size: cfg.value_size,
        threads: counted,
        sync: cfg.sync,
        seed,
        start,
        values: &shared.values,
        progress: &progress,
        stop: &stop,
        rate: cfg.rate,
        ycsb: ycsb.as_ref(),
    };

    let outcomes: Vec<std::thread::Result<Result<(ThreadMetrics, Instant)>>> =
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|t| {
                    let ctx = &ctx;
                    let done = if t < counted {
                        &counted_done
                    } else {
                        &others_done
                    };
                    s.spawn(move || {
                        let _guard = FinishGuard(done);
                        let r = run_worker(ctx, t).map(|m| (m, Instant::now()));
                        if r.is_err() {
                            ctx.stop.store(true, Ordering::Relaxed);
                        }
                        r
                    })
                })
                .collect();
            let mut bar: Option<ProgressBar> = None;
            while counted_done.load(Ordering::Acquire) < counted
                && others_done.load(Ordering::Acquire) + counted_done.load(Ordering::Acquire)
                    < workers
            {
                std::thread::sleep(POLL);
                if show_progress && bar.is_none() && start.elapsed() >= PROGRESS_DELAY {
                    bar = Some(new_progress_bar(bench, total));
                }
                if let Some(b) = &bar {
                    b.set_position(progress.load(Ordering::Relaxed));
                }
            }
            // The counted workers are done (or one failed): stop the writer, if any.
            stop.store(true, Ordering::Relaxed);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            handles.into_iter().map(|h| h.join()).collect()
        });

    let mut merged = ThreadMetrics::new()?;
    let mut end = start;
    for (t, o) in outcomes.into_iter().enumerate() {
        let (m, finished) = o.map_err(|p| {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            BenchError::ThreadPanic(msg)
        })??;
        if t < counted {
            end = end.max(finished);
        }
        merged.merge(&m);
    }
    let elapsed = end.duration_since(start);
    // Settle: let the engine finish what the benchmark left pending, then measure.
    let settle_start = Instant::now();
    engine.wait_for_background()?;
    let settle_secs = settle_start.elapsed().as_secs_f64();
    let proc_delta = ProcSnapshot::now().since(&proc_before);
    let core_round_trip_ns = round_trip_before.zip(crate::sysinfo::core_round_trip_ns());
    let engine_interval = engine
        .counters()
        .zip(counters_before)
        .map(|(after, before)| {
            let d = after.since(&before);
            EngineInterval {
                write_amplification: d.write_amplification(),
                stall_micros: d.stall_micros,
                user_bytes_written: d.user_bytes_written,
                storage_bytes_written: d.storage_bytes_written,
                nvm_bytes_written: d.nvm_bytes_written,
            }
        });
    let (live_keys, entry_bytes) = if bench.is_ycsb() {
        let keys = if bench == Benchmark::YcsbLoad {
            cfg.num
        } else {
            shared.keys.acknowledged()
        };
        (keys, average_key_len(keys) + cfg.ycsb.record_size as f64)
    } else {
        (cfg.num, (cfg.key_size + cfg.value_size) as f64)
    };
    let logical_bytes = (live_keys as f64 * entry_bytes) as u64;
    let db_bytes = shared.data_dirs.iter().map(|d| dir_bytes(d)).sum();
    let nvm_bytes = cfg.nvm_dir.as_deref().map(dir_bytes);
    let space = SpaceUsage {
        db_bytes,
        nvm_bytes,
        logical_bytes,
        // The SSD side only: an NVM pool is allocated (and pre-faulted) whole, so its bytes
        // say how big the tier is, not how much the data takes; they are reported apart.
        space_amplification: (logical_bytes > 0).then(|| db_bytes as f64 / logical_bytes as f64),
    };
    let secs = elapsed.as_secs_f64().max(1e-9);
    let ops = merged.ops;
    let timeline = merged.timeline(elapsed);
    let stall_list = stall_second_list(&timeline, elapsed);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let kinds = |v: Vec<(OpKind, crate::metrics::LatencySummary)>| {
        v.into_iter()
            .map(|(k, s)| (k.name().to_string(), s))
            .collect()
    };
    Ok(BenchResult {
        benchmark: bench.name().to_string(),
        engine: cfg.engine_label.clone().unwrap_or_else(|| engine.name()),
        engine_version: shared.version.clone(),
        point: cfg.point.clone(),
        durability: shared.durability.clone(),
        config: shared.config_json.clone(),
        machine: shared.machine.clone(),
        timestamp_unix: now,
        date: iso8601_utc(now),
        threads: counted,
        ops,
        elapsed_secs: elapsed.as_secs_f64(),
        micros_per_op: if ops == 0 {
            0.0
        } else {
            secs * 1e6 * counted as f64 / ops as f64
        },
        ops_per_sec: ops as f64 / secs,
        mb_per_sec: merged.bytes as f64 / 1_048_576.0 / secs,
        bytes: merged.bytes,
        written_bytes: merged.written,
        found: merged.found,
        not_found: merged.not_found,
        primary_op: bench.primary_op().name().to_string(),
        latency: kinds(merged.latencies()),
        service_latency: kinds(merged.service_latencies()),
        latency_cdf: merged
            .latencies()
            .into_iter()
            .map(|(k, _)| (k.name().to_string(), merged.cdf(k)))
            .collect(),
        stall_seconds: stall_list.len(),
        stall_second_list: stall_list,
        settle_secs,
        space: Some(space),
        timeline_ops_per_sec: timeline,
        engine_interval,
        process: ProcessMetrics {
            cpu_user_secs: proc_delta.cpu_user_secs,
            cpu_sys_secs: proc_delta.cpu_sys_secs,
            peak_rss_bytes: peak_rss_bytes(),
            cgroup_peak_bytes: cfg
                .memory_budget
                .as_ref()
                .and_then(MemoryBudget::peak_bytes),
            storage_write_bytes: proc_delta.storage_write_bytes,
            write_amplification: proc_delta
                .storage_write_bytes
                .filter(|_| merged.written > 0)
                .map(|b| b as f64 / merged.written as f64),
            machine_busy_secs: proc_delta.machine_busy_secs,
            machine_steal_secs: proc_delta.machine_steal_secs,
        },
        engine_stats: engine.stats_json(),
        core_round_trip_ns: core_round_trip_ns.map(|(b, a)| [b, a]),
    })
}

/// Writes every dirty page back and drops the kernel's clean page cache, dentries and
/// inodes (`sync`, then `3` into `/proc/sys/vm/drop_caches`), so that the next reads reach
/// the device. Returns whether the cache was dropped (it needs root; elsewhere it is not).
fn drop_page_cache() -> bool {
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", b"3").is_ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::RwLock;
    use std::sync::atomic::AtomicU64;

    use super::*;
    use crate::engine::{Direction, EngineCounters, ScanResult};

    /// A `BTreeMap` engine: exercises the harness without the real engine. It reports
    /// twice the user bytes as storage bytes (write amplification 2).
    #[derive(Default)]
    struct MapEngine {
        map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
        user_bytes: AtomicU64,
        /// Every thread that read (thread ids are never reused).
        readers: std::sync::Mutex<std::collections::HashSet<std::thread::ThreadId>>,
    }

    impl KvEngine for MapEngine {
        fn name(&self) -> String {
            "map".into()
        }
        fn put(&self, k: &[u8], v: &[u8], _sync: bool) -> Result<()> {
            self.user_bytes
                .fetch_add((k.len() + v.len()) as u64, Ordering::Relaxed);
            self.map.write().unwrap().insert(k.to_vec(), v.to_vec());
            Ok(())
        }
        fn get(&self, k: &[u8]) -> Result<Option<Vec<u8>>> {
            self.readers
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            Ok(self.map.read().unwrap().get(k).cloned())
        }
        fn delete(&self, k: &[u8], _sync: bool) -> Result<()> {
            self.user_bytes.fetch_add(k.len() as u64, Ordering::Relaxed);
            self.map.write().unwrap().remove(k);
            Ok(())
        }
        fn scan(&self, start: Option<&[u8]>, n: usize, d: Direction) -> Result<ScanResult> {
            let map = self.map.read().unwrap();
            let entries: Vec<(&Vec<u8>, &Vec<u8>)> = match (d, start) {
                (Direction::Forward, Some(s)) => map.range(s.to_vec()..).take(n).collect(),
                (Direction::Forward, None) => map.iter().take(n).collect(),
                (Direction::Reverse, Some(s)) => map.range(..=s.to_vec()).rev().take(n).collect(),
                (Direction::Reverse, None) => map.iter().rev().take(n).collect(),
            };
            Ok(ScanResult {
                entries: entries.len(),
                bytes: entries
                    .iter()
                    .map(|(k, v)| (k.len() + v.len()) as u64)
                    .sum(),
                last_key: entries.last().map(|(k, _)| (*k).clone()),
            })
        }
        fn flush(&self) -> Result<()> {
            Ok(())
        }
        fn wait_for_background(&self) -> Result<()> {
            Ok(())
        }
        fn stats_json(&self) -> serde_json::Value {
            serde_json::json!({ "entries": self.map.read().unwrap().len() })
        }
        fn counters(&self) -> Option<EngineCounters> {
            let u = self.user_bytes.load(Ordering::Relaxed);
            Some(EngineCounters {
                user_bytes_written: u,
                storage_bytes_written: 2 * u,
                stall_micros: 0,
                nvm_bytes_written: 0,
            })
        }
        fn close(&self) -> Result<()> {
            Ok(())
        }
    }

    /// Databases are directories holding a `MAPDB` marker; contents live in memory and
    /// survive a reopen of the same directory (so `--use-existing` can be tested).
    #[derive(Default)]
    struct MapFactory {
        dbs: std::sync::Mutex<BTreeMap<PathBuf, Arc<MapEngine>>>,
    }

    impl EngineFactory for MapFactory {
        fn name(&self) -> String {
            "map".into()
        }
        fn config_json(&self) -> serde_json::Value {
            serde_json::json!({ "preset": "none", "options": { "x": "1" } })
        }
        fn version(&self) -> String {
            "map 1".into()
        }
        fn open(&self, dir: &Path) -> Result<Arc<dyn KvEngine>> {
            std::fs::write(dir.join("MAPDB"), b"").map_err(|e| BenchError::io(dir, e))?;
            let mut dbs = self.dbs.lock().unwrap();
            let e = dbs.entry(dir.to_path_buf()).or_default();
            Ok(Arc::clone(e) as Arc<dyn KvEngine>)
        }
        fn is_engine_dir(&self, dir: &Path) -> bool {
            let names: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names == ["MAPDB"]
        }
        fn destroy(&self, dir: &Path) -> Result<()> {
            self.dbs.lock().unwrap().remove(dir);
            std::fs::remove_file(dir.join("MAPDB")).map_err(|e| BenchError::io(dir, e))
        }
    }

    fn cfg(list: &str, num: u64, threads: usize) -> BenchConfig {
        BenchConfig {
            benchmarks: Step::parse_list(list).unwrap(),
            num,
            threads,
            progress: false,
            ..BenchConfig::default()
        }
    }

    fn by_name<'a>(rs: &'a [BenchResult], name: &str) -> &'a BenchResult {
        rs.iter().find(|r| r.benchmark == name).unwrap()
    }

    #[test]
    fn every_benchmark_runs_and_counts_what_it_did() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("out.jsonl");
        let mut c = cfg(
            "fillseq,readrandom,readseq,readreverse,seekrandom,overwrite,readwhilewriting,\
             deleterandom,stats,fillsync",
            2000,
            2,
        );
        c.json = Some(json.clone());
        let mut out = Vec::new();
        let rs = run(&c, &MapFactory::default(), &mut out).unwrap();
        assert_eq!(rs.len(), 9, "stats measures nothing");

        let fill = by_name(&rs, "fillseq");
        assert_eq!(fill.ops, 2000);
        assert_eq!(fill.bytes, 2000 * 116);
        assert_eq!(fill.latency["write"].count, 2000);
        let wa = fill.engine_interval.unwrap().write_amplification.unwrap();
        assert!((wa - 2.0).abs() < 1e-9, "{wa}");

        // After fillseq every key exists.
        let rr = by_name(&rs, "readrandom");
        assert_eq!((rr.ops, rr.found, rr.not_found), (2000, 2000, 0));
        assert!(rr.engine_interval.unwrap().write_amplification.is_none());
        for name in ["readseq", "readreverse"] {
            let r = by_name(&rs, name);
            assert_eq!(r.ops, 2000, "{name}");
            assert_eq!(r.latency["scan"].count, 2000, "{name}");
        }
        let sr = by_name(&rs, "seekrandom");
        assert_eq!((sr.found, sr.not_found), (2000, 0));

        let rww = by_name(&rs, "readwhilewriting");
        assert_eq!(rww.ops, 2000, "only the reads count");
        assert_eq!(rww.latency["read"].count, 2000);
        assert!(
            rww.latency.contains_key("write"),
            "the writer is measured too"
        );

        let del = by_name(&rs, "deleterandom");
        assert_eq!(del.ops, 2000);
        assert_eq!(by_name(&rs, "fillsync").ops, 20);

        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("readrandom   :"), "{text}");
        assert!(text.contains("micros/op"), "{text}");
        assert!(
            text.contains("\"entries\""),
            "stats prints the engine's stats: {text}"
        );

        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&json)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 9);
        let first = &lines[0];
        assert_eq!(first["benchmark"], "fillseq");
        assert_eq!(first["config"]["engine"], "map");
        assert_eq!(first["config"]["num"], 2000);
        assert_eq!(first["config"]["threads"], 2);
        assert_eq!(first["config"]["options"]["x"], "1");
        assert!(first["machine"]["cores"].as_u64().unwrap() >= 1);
        assert!(first["machine"]["git_commit"].is_string());
        assert!(first["latency"]["write"]["p99_us"].is_number());
        assert!(first["timeline_ops_per_sec"].is_array());
    }

    #[test]
    fn read_modify_writes_run_as_puts_batches_and_transactions() {
        let factory = crate::MezzFactory::new(mezzanine::Options::default());
        let c = cfg("fillseq,rmw-plain,rmw-batch,rmw-txn,rmw-txn@2", 500, 1);
        let rs = run(&c, &factory, &mut Vec::new()).unwrap();
        for name in ["rmw-plain", "rmw-batch", "rmw-txn"] {
            let r = by_name(&rs, name);
            assert_eq!((r.ops, r.found, r.not_found), (500, 500, 0), "{name}");
            assert_eq!(r.latency["rmw"].count, 500, "{name}");
            assert!(
                r.written_bytes >= 500 * 116,
                "{name}: 1-4 keys written each"
            );
        }
        let last = rs.last().unwrap();
        assert_eq!(last.threads, 2);
        let commits = last.engine_stats["txn_commits"].as_u64().unwrap();
        assert_eq!(commits, 1000, "every transaction committed once");
        // An engine without transactions says so.
        let e = run(
            &cfg("rmw-txn", 10, 1),
            &MapFactory::default(),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no transactions"), "{e}");
    }

    #[test]
    fn column_family_benchmarks_spread_keys_over_families_and_find_them_again() {
        let factory = crate::MezzFactory::new(mezzanine::Options::default());
        let mut c = cfg(
            "fillrandom-cf,readrandom-cf,reopen,readrandom-cf@2,batch-cf,readrandom",
            800,
            1,
        );
        c.seed = 7;
        let rs = run(&c, &factory, &mut Vec::new()).unwrap();
        let fill = by_name(&rs, "fillrandom-cf");
        assert_eq!(fill.ops, 800);
        let reads: Vec<&BenchResult> = rs
            .iter()
            .filter(|r| r.benchmark == "readrandom-cf")
            .collect();
        assert_eq!(reads.len(), 2);
        for r in &reads {
            assert_eq!(r.found + r.not_found, 800);
            // Random draws of 800 out of 800 key numbers written at random: most were
            // written, each to the family it is read from (after a reopen too).
            assert!(r.found > 400, "{} of 800 found", r.found);
        }
        let batch = by_name(&rs, "batch-cf");
        assert_eq!(batch.ops, 200, "num / 4 batches");
        // The default family holds nothing: every key went to a family of its own.
        let plain = by_name(&rs, "readrandom");
        assert_eq!((plain.found, plain.not_found), (0, 800));
        // An engine without column families says so.
        let e = run(
            &cfg("fillrandom-cf", 10, 1),
            &MapFactory::default(),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no column families"), "{e}");
    }

    #[test]
    fn a_benchmark_with_its_own_thread_count_runs_that_many_threads() {
        let factory = MapFactory::default();
        let dir = tempfile::tempdir().unwrap();
        let mut c = cfg("fillseq,readrandom,readrandom@2", 1000, 1);
        c.db = Some(dir.path().to_path_buf());
        let rs = run(&c, &factory, &mut Vec::new()).unwrap();
        let threads: Vec<usize> = rs.iter().map(|r| r.threads).collect();
        assert_eq!(threads, [1, 1, 2]);
        for r in &rs[1..] {
            assert_eq!((r.benchmark.as_str(), r.found), ("readrandom", 1000));
        }
        assert!(
            rs[2].human_line().contains("; 2 threads;"),
            "{}",
            rs[2].human_line()
        );
        assert!(!rs[1].human_line().contains("threads"));
        // One reader thread for the first read run, two for the second, on the same data.
        let engine = Arc::clone(&factory.dbs.lock().unwrap()[dir.path()]);
        assert_eq!(engine.readers.lock().unwrap().len(), 3);
        assert_eq!(c.to_json(&factory)["benchmarks"][2], "readrandom@2");
    }

    #[test]
    fn ycsb_load_and_workloads_count_their_operation_kinds() {
        let factory = MapFactory::default();
        let mut c = cfg(
            "ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f",
            500,
            2,
        );
        c.ops = Some(400);
        c.ycsb.record_size = 50;
        let rs = run(&c, &factory, &mut Vec::new()).unwrap();
        assert_eq!(rs.len(), 7);
        let load = by_name(&rs, "ycsb-load");
        assert_eq!(load.ops, 500);
        assert_eq!(load.latency["insert"].count, 500);
        assert_eq!(load.primary_op, "insert");
        let space = load.space.unwrap();
        assert!(space.logical_bytes > 500 * 50, "{space:?}");
        for r in &rs[1..] {
            assert_eq!(r.ops, 400, "{}", r.benchmark);
            assert!(r.engine_version == "map 1");
        }
        let a = by_name(&rs, "ycsb-a");
        assert_eq!(a.latency["read"].count + a.latency["update"].count, 400);
        assert_eq!(a.not_found, 0, "every read finds a loaded record");
        assert!(a.written_bytes > 0);
        assert_eq!(by_name(&rs, "ycsb-c").latency["read"].count, 400);
        let d = by_name(&rs, "ycsb-d");
        let d_inserts = d.latency["insert"].count;
        assert!(d_inserts > 0 && d_inserts < 60, "{d_inserts}");
        let e = by_name(&rs, "ycsb-e");
        assert_eq!(e.latency["scan"].count + e.latency["insert"].count, 400);
        let f = by_name(&rs, "ycsb-f");
        assert_eq!(f.latency["read"].count + f.latency["rmw"].count, 400);
        assert_eq!(f.not_found, 0);
        // D and E inserted new records: the database holds more than the load.
        let stats = &f.engine_stats["entries"];
        let e_inserts = e.latency["insert"].count;
        assert_eq!(stats.as_u64().unwrap(), 500 + d_inserts + e_inserts);
        assert!(f.latency_cdf.contains_key("rmw"));
    }

    #[test]
    fn ycsb_workloads_load_first_when_nothing_was_loaded() {
        let mut out = Vec::new();
        let mut c = cfg("ycsb-c", 300, 1);
        c.ops = Some(100);
        let rs = run(&c, &MapFactory::default(), &mut out).unwrap();
        assert_eq!(rs.len(), 1);
        assert_eq!((rs[0].found, rs[0].not_found), (100, 0));
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains("loading 300 records first")
        );
    }

    #[test]
    fn open_loop_records_service_times_and_keeps_the_rate() {
        let mut c = cfg("fillseq", 200, 2);
        c.rate = Some(2000.0);
        let rs = run(&c, &MapFactory::default(), &mut Vec::new()).unwrap();
        let r = &rs[0];
        assert_eq!(r.ops, 200);
        assert_eq!(r.service_latency["write"].count, 200);
        // 200 operations at 2000/s take about 0.1 s: never much less.
        assert!(r.elapsed_secs >= 0.09, "{}", r.elapsed_secs);
        assert_eq!(r.config["rate"], 2000.0);
        let bad = BenchConfig {
            rate: Some(0.0),
            ..cfg("fillseq", 10, 1)
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn results_carry_version_date_durability_and_space() {
        let mut c = cfg("fillrandom", 300, 1);
        c.sync = true;
        let rs = run(&c, &MapFactory::default(), &mut Vec::new()).unwrap();
        let r = &rs[0];
        assert_eq!(r.engine_version, "map 1");
        assert!(r.date.ends_with('Z') && r.date.len() == 20, "{}", r.date);
        assert!(r.durability.sync);
        assert_eq!(r.durability.nvm_persistence, None);
        let s = r.space.unwrap();
        assert_eq!(s.logical_bytes, 300 * 116);
        assert_eq!(r.written_bytes, 300 * 116);
        assert!(r.latency["write"].p90_us > 0.0);
    }

    #[test]
    fn fill_benchmarks_start_from_an_empty_database() {
        let mut out = Vec::new();
        let rs = run(
            &cfg("fillseq,fillrandom,readrandom", 1000, 1),
            &MapFactory::default(),
            &mut out,
        )
        .unwrap();
        // fillrandom's random keys cover only part of the key space: had fillseq's data
        // been kept, every read would find its key.
        let rr = by_name(&rs, "readrandom");
        assert!(rr.not_found > 0, "{:?}", (rr.found, rr.not_found));
    }

    #[test]
    fn a_foreign_non_empty_directory_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious.txt");
        std::fs::write(&precious, b"keep me").unwrap();
        let mut c = cfg("fillseq", 10, 1);
        c.db = Some(dir.path().to_path_buf());
        let e = run(&c, &MapFactory::default(), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("refusing"), "{e}");
        assert_eq!(std::fs::read(&precious).unwrap(), b"keep me");
    }

    #[test]
    fn use_existing_keeps_the_data_and_skips_fills() {
        let dir = tempfile::tempdir().unwrap();
        let factory = MapFactory::default();
        let mut c = cfg("fillseq", 500, 1);
        c.db = Some(dir.path().join("db"));
        run(&c, &factory, &mut Vec::new()).unwrap();

        let mut again = cfg("fillrandom,readrandom", 500, 1);
        again.db = c.db.clone();
        again.use_existing = true;
        let mut out = Vec::new();
        let rs = run(&again, &factory, &mut out).unwrap();
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].found, 500);
        assert!(String::from_utf8(out).unwrap().contains("skipped"));

        // Without --use-existing, an engine directory is destroyed and starts empty.
        let mut fresh = cfg("readrandom", 500, 1);
        fresh.db = c.db.clone();
        let rs = run(&fresh, &factory, &mut Vec::new()).unwrap();
        assert_eq!(rs[0].found, 0);
    }

    #[test]
    fn bad_configurations_are_rejected() {
        let f = MapFactory::default();
        for c in [
            cfg("fillseq", 0, 1),
            cfg("fillseq", 10, 0),
            BenchConfig {
                key_size: 0,
                ..cfg("fillseq", 10, 1)
            },
        ] {
            assert!(matches!(
                run(&c, &f, &mut Vec::new()),
                Err(BenchError::InvalidArgument(_))
            ));
        }
    }

    #[test]
    fn config_json_lists_the_run_and_every_engine_option() {
        let factory = crate::MezzFactory::new(crate::build_options(None, &[]).unwrap());
        let c = cfg("fillrandom,readrandom", 1234, 3);
        let j = c.to_json(&factory);
        assert_eq!(j["engine"], "mezzanine");
        assert_eq!(j["preset"], "leveldb");
        for f in mezzanine::Options::FIELDS {
            assert!(j["options"][f].is_string(), "option {f} missing from {j}");
        }
        assert_eq!(j["num"], 1234);
        assert_eq!(j["reads"], 1234);
        assert_eq!(j["key_size"], 16);
        assert_eq!(j["value_size"], 100);
        assert_eq!(j["threads"], 3);
        assert_eq!(j["sync"], false);
        assert_eq!(
            j["benchmarks"],
            serde_json::json!(["fillrandom", "readrandom"])
        );
        assert_eq!(j["direct_io"], false);
        // Either direct option on: the result says direct I/O was on.
        for name in ["use_direct_reads", "use_direct_io_for_flush_and_compaction"] {
            let o = crate::build_options(None, &[(name.to_string(), "true".to_string())]);
            let factory = crate::MezzFactory::new(o.unwrap());
            assert_eq!(c.to_json(&factory)["direct_io"], true, "{name}");
            assert_eq!(c.to_json(&factory)["options"][name], "true");
        }
        // An engine without direct I/O records false.
        assert_eq!(c.to_json(&MapFactory::default())["direct_io"], false);
    }

    #[test]
    fn tiny_run_on_mezzanine() {
        let opts = crate::build_options(
            None,
            &[("write_buffer_size".to_string(), "64K".to_string())],
        )
        .unwrap();
        let factory = crate::MezzFactory::new(opts);
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let mut c = cfg(
            "fillseq,readrandom,readseq,readreverse,seekrandom,overwrite,deleterandom",
            2000,
            2,
        );
        c.db = Some(db.clone());
        let rs = run(&c, &factory, &mut Vec::new()).unwrap();
        let fill = by_name(&rs, "fillseq");
        assert_eq!(fill.ops, 2000);
        let e = fill.engine_interval.unwrap();
        assert_eq!(e.user_bytes_written, 2000 * 116, "{e:?}");
        assert!(
            e.write_amplification.unwrap() >= 1.0,
            "the WAL alone is >= 1: {e:?}"
        );
        let rr = by_name(&rs, "readrandom");
        assert_eq!((rr.found, rr.not_found), (2000, 0));
        assert_eq!(by_name(&rs, "readseq").ops, 2000);
        assert_eq!(by_name(&rs, "readreverse").ops, 2000);
        assert_eq!(by_name(&rs, "seekrandom").found, 2000);
        assert!(rs.iter().all(|r| r.engine_stats.is_object()));

        // What is left is a Mezzanine database, which the factory recognises and destroys.
        assert!(factory.is_engine_dir(&db));
        factory.destroy(&db).unwrap();
        assert_eq!(std::fs::read_dir(&db).unwrap().count(), 0);
        std::fs::write(db.join("other"), b"x").unwrap();
        assert!(!factory.is_engine_dir(&db));
        assert!(factory.destroy(&db).is_err());
        assert!(db.join("other").exists());
    }
}
