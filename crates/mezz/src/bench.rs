//! `mezz bench`: db_bench-style and YCSB benchmarks through `mezz-bench` (see that crate's
//! `workloads` and `ycsb` modules for the benchmark names), of Mezzanine and of the
//! comparator engines compiled in, closed or open loop, with sweeps and plots.
//!
//! Engine knobs: `--write-buffer-size`, `--cache-size`, `--bloom-bits` and `--nvm-dir` are
//! given to every comparator (defaults 64 MiB, 8 MiB, 10, none: the `leveldb` preset's
//! values); Mezzanine gets them as option overrides (`write_buffer_size`,
//! `block_cache_capacity`, `bloom_bits_per_key`, `nvm_dir`) only when they are given, so a
//! preset keeps its own values otherwise; `--opt` overrides everything. `--compress` turns
//! on each engine's fast block codec: Mezzanine `compression=lz4`, RocksDB LZ4, LevelDB
//! Snappy, fjall LZ4. `--direct-io` turns on direct I/O for table files where an engine
//! has it: Mezzanine `use_direct_reads` and `use_direct_io_for_flush_and_compaction`,
//! RocksDB the same two with a 2 MiB compaction read-ahead; LevelDB and fjall run buffered
//! (a note says so). Every result records `direct_io` in its configuration.
//! `--nvm-profile NAME` gives Mezzanine's NVM tier an emulated device cost (the option
//! `nvm_profile`: `dram`, `optane`, `optane-6`, `cxl`), recorded as `nvm_profile` in every
//! Mezzanine result. `--memory-limit SIZE` runs the whole process in a memory cgroup of
//! that size (`mezz_bench::memlimit`), heap and page cache together, recorded as
//! `memory_limit_bytes` in every result's configuration and the group's peak as
//! `process.cgroup_peak_bytes`.

use std::path::{Path, PathBuf};

use mezz_bench::engines::{self, EngineSetup};
use mezz_bench::suite::setup_json;
use mezz_bench::ycsb::YcsbParams;
use mezz_bench::{
    BenchConfig, BenchError, EngineFactory, EngineSpec, MezzFactory, Step, Sweep, UnitsSetup,
};

use crate::common::{CliError, EngineArgs, Result};

/// Arguments of `mezz bench` (boxed: they are many).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    inner: Box<BenchArgs>,
}

/// The flags of `mezz bench`.
#[derive(Debug, clap::Args)]
struct BenchArgs {
    /// Database directory (default: a temporary directory deleted at the end). Must be
    /// absent, empty or a database of the engine (which is destroyed) unless
    /// --use-existing. With several engines each runs in DB/<engine>; with several sweep
    /// points, in .../<point>.
    #[arg(long)]
    db: Option<PathBuf>,
    /// Comma-separated benchmarks: fillseq, fillrandom, overwrite, fillsync, readrandom,
    /// readseq, readreverse, seekrandom, deleterandom, readwhilewriting, stats, reopen, ycsb-load,
    /// ycsb-a, ycsb-b, ycsb-c, ycsb-d, ycsb-e, ycsb-f, ycsb-r10, ycsb-r90 (10 % and 90 % reads,
    /// the rest updates), rmw-plain, rmw-batch, rmw-txn (read-modify-writes of 1-4 keys: plain
    /// puts, one batch, an optimistic transaction). `name@N` runs that benchmark with N threads instead of --threads
    /// (e.g. `fillrandom,readrandom,readrandom@2`: one database read by 1 and by 2 threads).
    #[arg(long, default_value = "fillrandom,readrandom")]
    benchmarks: String,
    /// Number of keys (YCSB: records loaded by ycsb-load).
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Number of reads (default: --num).
    #[arg(long)]
    reads: Option<u64>,
    /// Operations of each YCSB workload A-F (default: --num).
    #[arg(long)]
    ops: Option<u64>,
    /// Key size in bytes (db_bench benchmarks; YCSB keys are "user" + a hashed number).
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// Value size in bytes (db_bench benchmarks).
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// YCSB fields per record (a record is stored as one value of fields x field size).
    #[arg(long, default_value_t = 10)]
    ycsb_fields: usize,
    /// YCSB bytes per field.
    #[arg(long, default_value_t = 100)]
    ycsb_field_size: usize,
    /// Longest scan of ycsb-e (lengths are uniform in 1..=N).
    #[arg(long, default_value_t = 100)]
    ycsb_scan_length: usize,
    /// Worker threads (readwhilewriting adds one writer).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Open loop: issue this many operations per second in total (shared by the threads),
    /// each timed from its scheduled start, so that stalls show as latency. Default:
    /// closed loop.
    #[arg(long, value_name = "OPS_PER_SEC")]
    rate: Option<f64>,
    /// Make every write synchronous.
    #[arg(long)]
    sync: bool,
    /// Keep the data in --db and skip the fill and load benchmarks.
    #[arg(long)]
    use_existing: bool,
    /// `reopen` drops the kernel's page cache between the close and the timed open, so
    /// recovery reads the device (needs root; the result's `engine_stats.page_cache_dropped`
    /// says whether it happened).
    #[arg(long)]
    drop_caches_before_reopen: bool,
    /// Append one JSON object per benchmark to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw PNG plots (throughput over time, latency CDF) per benchmark into this directory.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Run nothing: redraw the plots of the results in this JSON-lines file into --plot.
    #[arg(long, value_name = "FILE", requires = "plot")]
    replot: Option<PathBuf>,
    /// Seed of the key generators.
    #[arg(long, default_value_t = 301)]
    seed: u64,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Print the engines compiled into this binary (comma-separated) and exit.
    #[arg(long)]
    list_engines: bool,
    /// Comma-separated engines, run one after another on fresh directories: mezzanine,
    /// mezzanine:PRESET (e.g. mezzanine:novelsm), rocksdb, rocksdb-l0-nvm, leveldb,
    /// leveldb-nvm, fjall (comparators need their cargo feature).
    #[arg(long = "engine", default_value = "mezzanine")]
    engines: String,
    /// Memtable size of every engine (e.g. 64M). Default: 64 MiB (Mezzanine: its preset's).
    #[arg(long, value_parser = parse_size)]
    write_buffer_size: Option<u64>,
    /// Block cache of every engine (e.g. 8M). Default: 8 MiB (Mezzanine: its preset's).
    #[arg(long, value_parser = parse_size)]
    cache_size: Option<u64>,
    /// Bloom filter bits per key of every engine. Default: 10 (Mezzanine: its preset's).
    #[arg(long)]
    bloom_bits: Option<u32>,
    /// Compress data blocks in every engine with its fast codec: Mezzanine LZ4 on every
    /// level (the option `compression=lz4`; `--opt compression=...` still overrides),
    /// RocksDB LZ4, LevelDB Snappy, fjall LZ4. Default: no engine compresses.
    #[arg(long)]
    compress: bool,
    /// Read and write table files with direct I/O (O_DIRECT, bypassing the page cache) in
    /// every engine that has it: Mezzanine `use_direct_reads` and
    /// `use_direct_io_for_flush_and_compaction` (`--opt` still overrides), RocksDB the same
    /// two options with a 2 MiB `compaction_readahead_size`. LevelDB and fjall have none and
    /// run buffered. Each result records `direct_io`. Default: off (the page cache).
    #[arg(long)]
    direct_io: bool,
    /// Run under a memory budget (e.g. 140M): before any engine opens, the process moves
    /// into a new memory cgroup limited to SIZE, so that its heap and the page cache it
    /// faults in are charged together and reclaimed at the limit (how an engine without
    /// direct I/O gets the DRAM budget of one with it). Needs a writable cgroup memory
    /// controller (v1 or v2; usually root): without one the command fails rather than run
    /// unlimited. Each result records `memory_limit_bytes` and the group's peak,
    /// `process.cgroup_peak_bytes`. Keep the engines' files off tmpfs (/dev/shm) meanwhile:
    /// their pages would count and could not be reclaimed. Default: no limit.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    memory_limit: Option<u64>,
    /// Emulated NVM directory (e.g. under /dev/shm) for engines with an NVM tier or "-nvm"
    /// variants; each engine and sweep point gets a fresh subdirectory when several run.
    /// Default: a temporary directory on /dev/shm (else the system's temporary directory),
    /// removed at the end; one left by a killed run is removed by the next run.
    #[arg(long)]
    nvm_dir: Option<PathBuf>,
    /// The NVM bytes of comparators whose NVM is a directory (not Mezzanine, whose pool is
    /// `nvm_capacity`): rocksdb-l0-nvm keeps its L0 within them, as the MatrixKV paper's
    /// RocksDB-L0-NVM enlarges L0 to its NVM (compaction at 7/8, slowdown at 15/16, stop at
    /// all of it, in memtable-sized files). Default: none (RocksDB's L0 file triggers,
    /// under which L0 may hold up to 36 memtables on the NVM path).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    nvm_budget: Option<u64>,
    /// Mezzanine: the emulated cost of its NVM tier, a device profile: dram, optane,
    /// optane-6 or cxl (the option `nvm_profile`; `--opt` still overrides; docs/impl.md,
    /// "Emulated NVM cost"). Recorded as `nvm_profile` in every Mezzanine result. Other
    /// engines keep their NVM files on plain memory (a note says so). Default: the
    /// preset's (`dram`, no cost).
    #[arg(long, value_name = "NAME", value_parser = parse_nvm_profile)]
    nvm_profile: Option<mezzanine::options::NvmProfile>,
    /// Run the benchmarks once per value size (comma-separated, e.g. 64,256,1024,4096),
    /// each on a fresh database; YCSB records take the point's size too.
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    value_size_sweep: Vec<u64>,
    /// Run the benchmarks once per key count (comma-separated, e.g. 1000000,4000000), each
    /// on a fresh database.
    #[arg(long, value_delimiter = ',')]
    num_sweep: Vec<u64>,
    /// Mezzanine: spread tables over this many SSD directories beside the database
    /// directory (DB.u0, DB.u1, ...; the `ssd_paths` option), placed by the `placement`
    /// option (--opt placement=striped|per_file|isolated). Default: 0 (tables in DB).
    #[arg(long, default_value_t = 0)]
    units: usize,
    /// Mezzanine with --units: charge the I/O of those directories to a device model of an
    /// SSD with parallel units, e.g. "units=4,layout=dedicated,scale=1" (layout=striped
    /// spreads every file over every unit, as a conventional SSD does; see mezz-env's
    /// `DeviceSpec`). Default: none (the real file system only).
    #[arg(long, value_name = "SPEC", requires = "units")]
    device: Option<String>,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Parses a size: a number with an optional `K`, `M` or `G` suffix (powers of 1024, `iB`
/// or `B` allowed after it).
pub(crate) fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("{s:?} is not a size (e.g. 4096, 64K, 8M, 1G)"))
}

/// Parses an NVM profile name (the error lists the profiles).
fn parse_nvm_profile(s: &str) -> std::result::Result<mezzanine::options::NvmProfile, String> {
    s.parse::<mezzanine::options::NvmProfile>()
        .map_err(|e| e.to_string())
}

fn to_usize(v: u64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| CliError::Failed(format!("{what} {v} is too large")))
}

impl BenchArgs {
    /// The knobs every comparator gets, with the NVM directory of one run.
    fn setup(&self, nvm: Option<&Path>) -> Result<EngineSetup> {
        let d = EngineSetup::default();
        Ok(EngineSetup {
            write_buffer_size: match self.write_buffer_size {
                Some(v) => to_usize(v, "--write-buffer-size")?,
                None => d.write_buffer_size,
            },
            block_cache_bytes: match self.cache_size {
                Some(v) => to_usize(v, "--cache-size")?,
                None => d.block_cache_bytes,
            },
            bloom_bits: self.bloom_bits.unwrap_or(d.bloom_bits),
            nvm_dir: nvm.map(Path::to_path_buf),
            sync: self.sync,
            compress: self.compress,
            direct_io: self.direct_io,
            nvm_bytes: self.nvm_budget,
        })
    }

    /// Mezzanine's factory: preset (`preset` if given, else `--preset`), then the knobs
    /// given, then `--opt`.
    fn mezz_factory(
        &self,
        preset: Option<&str>,
        nvm: Option<&Path>,
    ) -> Result<Box<dyn EngineFactory>> {
        let mut knobs: Vec<(&str, String)> = Vec::new();
        if let Some(v) = self.write_buffer_size {
            knobs.push(("write_buffer_size", v.to_string()));
        }
        if let Some(v) = self.cache_size {
            knobs.push(("block_cache_capacity", v.to_string()));
        }
        if let Some(v) = self.bloom_bits {
            knobs.push(("bloom_bits_per_key", v.to_string()));
        }
        if self.direct_io {
            knobs.push(("use_direct_reads", "true".into()));
            knobs.push(("use_direct_io_for_flush_and_compaction", "true".into()));
        }
        if self.compress {
            knobs.push(("compression", "lz4".into()));
        }
        if let Some(p) = self.nvm_profile {
            knobs.push(("nvm_profile", p.name().to_string()));
        }
        let nvm_text = nvm.map(|p| p.display().to_string());
        if let Some(p) = &nvm_text {
            let mut probe = mezzanine::Options::default();
            if let Err(e) = probe.set("nvm_dir", p) {
                return Err(CliError::Failed(format!(
                    "--nvm-dir cannot be applied to mezzanine: this build's options have no \
                     NVM directory ({e})"
                )));
            }
            knobs.push(("nvm_dir", p.clone()));
        }
        let defaults: Vec<(&str, &str)> = knobs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut engine = self.engine.clone();
        if let Some(p) = preset {
            engine.preset = Some(p.to_string());
        }
        let device = match &self.device {
            Some(spec) => Some(
                mezz_env::DeviceSpec::parse(spec)
                    .map_err(|e| CliError::Failed(format!("--device {spec:?}: {e}")))?,
            ),
            None => None,
        };
        Ok(Box::new(
            MezzFactory::new(engine.options(&defaults)?).with_units(UnitsSetup {
                count: self.units,
                device,
            }),
        ))
    }

    /// The factory of engine `name` for a run with NVM directory `nvm`.
    fn factory(&self, name: &str, nvm: Option<&Path>) -> Result<Box<dyn EngineFactory>> {
        if name == "mezzanine" {
            self.mezz_factory(None, nvm)
        } else if let Some(preset) = name.strip_prefix("mezzanine:") {
            self.mezz_factory(Some(preset), nvm)
        } else {
            Ok(engines::factory(name, &self.setup(nvm)?)?)
        }
    }

    fn config(&self) -> Result<BenchConfig> {
        let record_size = self
            .ycsb_fields
            .checked_mul(self.ycsb_field_size)
            .ok_or_else(|| CliError::Failed("YCSB record size overflows".into()))?;
        Ok(BenchConfig {
            benchmarks: Step::parse_list(&self.benchmarks)?,
            num: self.num,
            reads: self.reads,
            key_size: self.key_size,
            value_size: self.value_size,
            threads: self.threads,
            sync: self.sync,
            db: self.db.clone(),
            use_existing: self.use_existing,
            drop_caches_before_reopen: self.drop_caches_before_reopen,
            json: self.json.clone(),
            seed: self.seed,
            progress: !self.no_progress,
            ops: self.ops,
            rate: self.rate,
            ycsb: YcsbParams {
                record_size,
                max_scan_length: self.ycsb_scan_length,
            },
            nvm_dir: self.nvm_dir.clone(),
            point: None,
            engine_label: None,
            knobs: setup_json(&self.setup(self.nvm_dir.as_deref())?),
            memory_budget: None,
        })
    }
}

/// A run's temporary NVM directory `<base>/mezz-nvm-XXXXXX`, and beside it the file
/// `<dir>.owner`, locked (`flock`) for as long as the run holds the directory. Both are
/// removed when it is dropped; a run killed before that (SIGKILL) leaves them, its lock
/// released by its death, and the next run's [`TempNvmDir::create`] removes every
/// directory whose owner file it can lock: no live run holds that lock, whatever PID
/// namespace it runs in. A directory without an owner file is left alone.
#[derive(Debug)]
struct TempNvmDir {
    dir: tempfile::TempDir,
    owner: PathBuf,
    /// Holds the lock.
    _lock: std::fs::File,
}

impl TempNvmDir {
    const PREFIX: &'static str = "mezz-nvm-";
    const OWNER: &'static str = ".owner";

    fn create(base: &Path) -> std::io::Result<TempNvmDir> {
        Self::remove_abandoned(base);
        let dir = tempfile::Builder::new()
            .prefix(Self::PREFIX)
            .tempdir_in(base)?;
        let with_suffix = |suffix: &str| {
            let mut p = dir.path().as_os_str().to_owned();
            p.push(suffix);
            PathBuf::from(p)
        };
        let owner = with_suffix(Self::OWNER);
        // Locked under another name, then renamed into place: another run's sweep never
        // sees the owner file unlocked.
        let unlocked = with_suffix(".owner.new");
        let lock = std::fs::File::create(&unlocked)?;
        let locked = lock
            .try_lock()
            .map_err(|e| std::io::Error::other(format!("cannot lock: {e}")))
            .and_then(|()| std::fs::rename(&unlocked, &owner));
        if let Err(e) = locked {
            let _ = std::fs::remove_file(&unlocked);
            return Err(std::io::Error::other(format!("{}: {e}", owner.display())));
        }
        Ok(TempNvmDir {
            dir,
            owner,
            _lock: lock,
        })
    }

    /// Removes the directories of runs that ended without removing them (their owner file
    /// can be locked). Best effort: what cannot be removed stays.
    fn remove_abandoned(base: &Path) {
        let Ok(entries) = std::fs::read_dir(base) else {
            return;
        };
        for e in entries.filter_map(std::result::Result::ok) {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(dir) = name
                .strip_suffix(Self::OWNER)
                .filter(|d| d.starts_with(Self::PREFIX))
            else {
                continue;
            };
            let owner = e.path();
            let Ok(f) = std::fs::OpenOptions::new().write(true).open(&owner) else {
                continue;
            };
            if f.try_lock().is_ok() {
                let _ = std::fs::remove_dir_all(base.join(dir));
                let _ = std::fs::remove_file(&owner);
            }
        }
    }
}

impl Drop for TempNvmDir {
    fn drop(&mut self) {
        // The directory goes with `dir`'s own drop, right after this.
        let _ = std::fs::remove_file(&self.owner);
    }
}

/// Runs `mezz bench`.
pub fn run(args: &mut Args) -> Result<()> {
    // Joined first so that it is left last: the temporary NVM directory below (tmpfs pages
    // charged to the group) is removed before the group is emptied and removed.
    let cgroup = match args.inner.memory_limit {
        Some(limit) if !args.inner.list_engines && args.inner.replot.is_none() => {
            Some(mezz_bench::MemoryCgroup::join(limit)?)
        }
        _ => None,
    };
    // Without --nvm-dir, engines with an NVM tier get a temporary one on /dev/shm (memory
    // emulating NVM) where it exists, removed at the end (and by a later run if this one
    // is killed: see `TempNvmDir`).
    let _nvm_temp = if args.inner.nvm_dir.is_none() && !args.inner.list_engines {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let t = TempNvmDir::create(&base)
            .map_err(|e| CliError::Failed(format!("{}: {e}", base.display())))?;
        args.inner.nvm_dir = Some(t.dir.path().to_path_buf());
        Some(t)
    } else {
        None
    };
    let a: &BenchArgs = &args.inner;
    if a.list_engines {
        println!("{}", mezz_bench::engines::compiled_in().join(","));
        return Ok(());
    }
    if let (Some(file), Some(dir)) = (&a.replot, &a.plot) {
        let text = std::fs::read_to_string(file)
            .map_err(|e| CliError::Failed(format!("{}: {e}", file.display())))?;
        let results = mezz_bench::BenchResult::from_json_lines(&text)
            .map_err(|e| CliError::Failed(format!("{}: {e}", file.display())))?;
        let files = mezz_bench::plot::write_plots(&results, dir)?;
        println!("plots: {} files in {}", files.len(), dir.display());
        return Ok(());
    }
    let mut cfg = a.config()?;
    cfg.validate()?;
    if let Some(g) = &cgroup {
        cfg.memory_budget = Some(g.budget());
        println!(
            "note: memory cgroup {} limits this process to {} MiB, heap and page cache together",
            g.dir().display(),
            g.budget().limit_bytes >> 20
        );
    }
    let names: Vec<String> = a
        .engines
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(BenchError::InvalidArgument("--engine: no engine given".into()).into());
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(CliError::Failed(format!("--engine: {n} is named twice")));
        }
    }
    // Build every factory once before running anything, so that an engine that is not
    // compiled in (or lacks its NVM directory) fails before the others spend their time.
    for n in &names {
        let f = a.factory(n, a.nvm_dir.as_deref())?;
        if a.direct_io && !f.direct_io() {
            println!(
                "note: {n} has no direct I/O: it runs through the page cache (direct_io: false)"
            );
        }
        if let Some(p) = a.nvm_profile
            && n != "mezzanine"
            && !n.starts_with("mezzanine:")
        {
            println!(
                "note: {n} does not emulate --nvm-profile {p}: its NVM files are plain memory"
            );
        }
    }
    let specs: Vec<EngineSpec<'_>> = names
        .iter()
        .map(|n| {
            let name = n.clone();
            EngineSpec {
                name: n.clone(),
                make: Box::new(move |nvm: Option<&Path>| {
                    a.factory(&name, nvm).map_err(|e| {
                        BenchError::InvalidArgument(match e {
                            CliError::Failed(m) => m,
                            CliError::NotFound => format!("{name}: not found"),
                        })
                    })
                }),
            }
        })
        .collect();
    let sweep = Sweep {
        value_sizes: a
            .value_size_sweep
            .iter()
            .map(|&v| to_usize(v, "--value-size-sweep"))
            .collect::<Result<Vec<_>>>()?,
        nums: a.num_sweep.clone(),
    };
    mezz_bench::run_suite(
        &cfg,
        &specs,
        &sweep,
        a.plot.as_deref(),
        &mut std::io::stdout().lock(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's temporary NVM directory and its owner file go when it ends; those of a run
    /// that died (its owner file no longer locked) go with the next run's start; a live
    /// run's, and a directory without an owner file, stay.
    #[test]
    fn abandoned_temp_nvm_dirs_are_removed_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        let live = TempNvmDir::create(base.path()).unwrap();
        std::fs::write(live.dir.path().join("pool"), b"x").unwrap();
        // A dead run's leftovers: its directory and an owner file nobody locks.
        let dead = base.path().join("mezz-nvm-dead01");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("pool"), b"x").unwrap();
        std::fs::write(base.path().join("mezz-nvm-dead01.owner"), b"").unwrap();
        let legacy = base.path().join("mezz-nvm-legacy");
        std::fs::create_dir(&legacy).unwrap();
        let next = TempNvmDir::create(base.path()).unwrap();
        assert!(!dead.exists(), "a dead run's directory is removed");
        assert!(!base.path().join("mezz-nvm-dead01.owner").exists());
        assert!(live.dir.path().join("pool").exists(), "a live run's stays");
        assert!(live.owner.exists());
        assert!(legacy.exists(), "no owner file: left alone");
        let (dir, owner) = (live.dir.path().to_path_buf(), live.owner.clone());
        drop(live);
        assert!(
            !dir.exists() && !owner.exists(),
            "removed when the run ends"
        );
        assert!(next.dir.path().exists());
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("8M"), Ok(8 << 20));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("").is_err());
    }
}
