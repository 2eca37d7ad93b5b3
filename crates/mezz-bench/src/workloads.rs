//! The db_bench workloads and the per-thread loop that drives them.
//!
//! Benchmarks (names as in LevelDB's db_bench; `--benchmarks` takes a comma-separated list,
//! run in order against one database; `name@N` runs that one benchmark with `N` threads):
//!
//! | name               | what it does                                                          |
//! |--------------------|-----------------------------------------------------------------------|
//! | `fillseq`          | write `num` keys in ascending order into a fresh database             |
//! | `fillrandom`       | write `num` keys in random order into a fresh database                |
//! | `overwrite`        | write `num` random keys into the existing database                    |
//! | `fillsync`         | `fillrandom` with `sync = true` on every write, and only `num / 100` writes |
//! | `readrandom`       | read `reads` random keys (counts found / not found)                   |
//! | `readseq`          | read `reads` entries in ascending order with an iterator              |
//! | `readreverse`      | read `reads` entries in descending order with an iterator             |
//! | `seekrandom`       | `reads` seeks to random keys, reading the entry found                 |
//! | `deleterandom`     | delete `num` random keys                                              |
//! | `readwhilewriting` | `threads` readers do `readrandom` while one more thread keeps writing random keys; only the reads count towards ops/s |
//! | `stats`            | print the engine's statistics (measures nothing)                      |
//! | `ycsb-load`        | YCSB load: insert `num` records (`"user"` + hashed key number, 1000-byte records) into a fresh database |
//! | `ycsb-a` … `ycsb-f`| YCSB core workloads A–F, `--ops` operations over the loaded records (see [`crate::ycsb`]) |
//! | `ycsb-r10`, `ycsb-r90` | YCSB-style mixes of 10 % and 90 % reads (the rest updates), zipfian |
//! | `rmw-plain`        | `reads` read-modify-writes of 1–4 random keys (uniform), each key read then written with its own put (no atomicity) |
//! | `rmw-batch`        | the same, the writes of one operation in one atomic write batch (reads not isolated) |
//! | `rmw-txn`          | the same in an optimistic transaction: each key read with `get_for_update`, written, committed; a conflict is retried in a new transaction (the retry counts in the operation's time) |
//! | `fillrandom-cf`    | `fillrandom` over [`CF_FAMILIES`] column families (`cf0`...): key number `k` goes to family `k mod 4`; into a fresh database |
//! | `readrandom-cf`    | `readrandom` of the keys `fillrandom-cf` wrote, each from its family |
//! | `batch-cf`         | `num / 4` atomic write batches, each of one random key in every one of the 4 families |
//!
//! Key numbers are drawn uniformly from `[0, num)`; keys and values are made by
//! [`crate::keygen`]. `--sync` makes every write synchronous. With `threads > 1` each thread
//! does its share of the operations (`fillseq` gives each thread a contiguous range of key
//! numbers; `readseq` / `readreverse` start each thread at its own share's first key).
//! The `fill*` benchmarks and `ycsb-load` start from an empty database: the driver destroys
//! and reopens it first (and skips them with `--use-existing`). The YCSB workloads A–F run
//! over the records loaded earlier in the run; when nothing was loaded yet, the driver loads
//! `num` records first (not measured).
//!
//! Open loop (`rate`): each counted thread gets an equal share of the rate and a fixed
//! schedule of intended start times; an operation that starts late (the engine fell behind)
//! is timed from its intended start, so stalls show up as latency instead of being hidden
//! by a slower request rate (coordinated omission). The time actually spent in the engine
//! is recorded apart as the service time. An operation counting `n` entries (a `readseq`
//! chunk) takes `n` slots of the schedule.
//!
//! Thread-safety: [`run_worker`] is called once per thread with a shared [`WorkerCtx`]; each
//! worker owns its rng, value generator and [`ThreadMetrics`], and shares only the engine,
//! the progress counter and the stop flag.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::{Direction, KvEngine};
use crate::error::{BenchError, Result};
use crate::keygen::{ValueGenerator, format_key_into};
use crate::metrics::{OpKind, ThreadMetrics};
use crate::ycsb::{YcsbRun, run_ycsb_worker};

/// Column families of the `*-cf` benchmarks.
pub const CF_FAMILIES: usize = 4;

/// Keys one `rmw-*` operation reads and writes, at most.
const RMW_MAX_KEYS: usize = 4;
/// Entries read per iterator call by `readseq` / `readreverse`.
const SCAN_CHUNK: usize = 1000;
/// Operations a worker completes between updates of the shared progress counter.
const PROGRESS_BATCH: u64 = 1000;

/// One db_bench workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Benchmark {
    /// Sequential writes into a fresh database.
    FillSeq,
    /// Random writes into a fresh database.
    FillRandom,
    /// Random writes into the existing database.
    Overwrite,
    /// Synchronous random writes (`num / 100`) into a fresh database.
    FillSync,
    /// Random point reads.
    ReadRandom,
    /// Forward iteration.
    ReadSeq,
    /// Backward iteration.
    ReadReverse,
    /// Random seeks.
    SeekRandom,
    /// Random deletes.
    DeleteRandom,
    /// Random reads with one concurrent writer.
    ReadWhileWriting,
    /// Print the engine's statistics.
    Stats,
    /// Close the database (without flushing) and open it again, timing the open: the
    /// recovery of whatever was in memory (WAL replay, or mapping an NVM memtable back).
    Reopen,
    /// YCSB load phase: insert `num` records into a fresh database.
    YcsbLoad,
    /// YCSB A: 50 % reads, 50 % updates, zipfian.
    YcsbA,
    /// YCSB B: 95 % reads, 5 % updates, zipfian.
    YcsbB,
    /// YCSB C: reads only, zipfian.
    YcsbC,
    /// YCSB D: 95 % reads of the latest keys, 5 % inserts.
    YcsbD,
    /// YCSB E: 95 % short scans, 5 % inserts, zipfian.
    YcsbE,
    /// YCSB F: 50 % reads, 50 % read-modify-writes, zipfian.
    YcsbF,
    /// A YCSB mix of 10 % reads and 90 % updates, zipfian (for read/write mixes beside
    /// A's 50 %).
    YcsbR10,
    /// A YCSB mix of 90 % reads and 10 % updates, zipfian.
    YcsbR90,
    /// Read-modify-writes of 1–4 random keys, each key put alone.
    RmwPlain,
    /// Read-modify-writes of 1–4 random keys, the puts in one write batch.
    RmwBatch,
    /// Read-modify-writes of 1–4 random keys in an optimistic transaction.
    RmwTxn,
    /// `fillrandom` over [`CF_FAMILIES`] column families.
    FillRandomCf,
    /// `readrandom` over the column families of `fillrandom-cf`.
    ReadRandomCf,
    /// Atomic batches of one random key in each of [`CF_FAMILIES`] families.
    BatchCf,
}

impl Benchmark {
    /// Every benchmark, in the order of the table above.
    pub const ALL: &'static [Benchmark] = &[
        Benchmark::FillSeq,
        Benchmark::FillRandom,
        Benchmark::Overwrite,
        Benchmark::FillSync,
        Benchmark::ReadRandom,
        Benchmark::ReadSeq,
        Benchmark::ReadReverse,
        Benchmark::SeekRandom,
        Benchmark::DeleteRandom,
        Benchmark::ReadWhileWriting,
        Benchmark::Stats,
        Benchmark::Reopen,
        Benchmark::YcsbLoad,
        Benchmark::YcsbA,
        Benchmark::YcsbB,
        Benchmark::YcsbC,
        Benchmark::YcsbD,
        Benchmark::YcsbE,
        Benchmark::YcsbF,
        Benchmark::YcsbR10,
        Benchmark::YcsbR90,
        Benchmark::RmwPlain,
        Benchmark::RmwBatch,
        Benchmark::RmwTxn,
        Benchmark::FillRandomCf,
        Benchmark::ReadRandomCf,
        Benchmark::BatchCf,
    ];

    /// The db_bench name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::FillSync => "fillsync",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadSeq => "readseq",
            Benchmark::ReadReverse => "readreverse",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::DeleteRandom => "deleterandom",
            Benchmark::ReadWhileWriting => "readwhilewriting",
            Benchmark::Stats => "stats",
            Benchmark::Reopen => "reopen",
            Benchmark::YcsbLoad => "ycsb-load",
            Benchmark::YcsbA => "ycsb-a",
            Benchmark::YcsbB => "ycsb-b",
            Benchmark::YcsbC => "ycsb-c",
            Benchmark::YcsbD => "ycsb-d",
            Benchmark::YcsbE => "ycsb-e",
            Benchmark::YcsbF => "ycsb-f",
            Benchmark::YcsbR10 => "ycsb-r10",
            Benchmark::YcsbR90 => "ycsb-r90",
            Benchmark::RmwPlain => "rmw-plain",
            Benchmark::RmwBatch => "rmw-batch",
            Benchmark::RmwTxn => "rmw-txn",
            Benchmark::FillRandomCf => "fillrandom-cf",
            Benchmark::ReadRandomCf => "readrandom-cf",
            Benchmark::BatchCf => "batch-cf",
        }
    }

    /// Parses one name.
    ///
    /// # Errors
    /// `InvalidArgument` naming the known benchmarks.
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                BenchError::InvalidArgument(format!(
                    "unknown benchmark {name:?} (known: {})",
                    Self::ALL
                        .iter()
                        .map(|b| b.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// Whether the benchmark starts from an empty database.
    #[must_use]
    pub fn needs_fresh_db(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq
                | Benchmark::FillRandom
                | Benchmark::FillSync
                | Benchmark::YcsbLoad
                | Benchmark::FillRandomCf
        )
    }

    /// Whether the benchmark is YCSB's (load or a workload).
    #[must_use]
    pub fn is_ycsb(self) -> bool {
        matches!(
            self,
            Benchmark::YcsbLoad
                | Benchmark::YcsbA
                | Benchmark::YcsbB
                | Benchmark::YcsbC
                | Benchmark::YcsbD
                | Benchmark::YcsbE
                | Benchmark::YcsbF
                | Benchmark::YcsbR10
                | Benchmark::YcsbR90
        )
    }

    /// Whether the benchmark writes (so write amplification means something).
    #[must_use]
    pub fn writes(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq
                | Benchmark::FillRandom
                | Benchmark::Overwrite
                | Benchmark::FillSync
                | Benchmark::DeleteRandom
                | Benchmark::ReadWhileWriting
                | Benchmark::YcsbLoad
                | Benchmark::YcsbA
                | Benchmark::YcsbB
                | Benchmark::YcsbD
                | Benchmark::YcsbE
                | Benchmark::YcsbF
                | Benchmark::YcsbR10
                | Benchmark::YcsbR90
                | Benchmark::RmwPlain
                | Benchmark::RmwBatch
                | Benchmark::RmwTxn
                | Benchmark::FillRandomCf
                | Benchmark::BatchCf
        )
    }

    /// Operations the counted workers perform in total (for the progress bar and the
    /// per-thread shares). For the YCSB workloads A–F, `reads` is the operation count.
    #[must_use]
    pub fn total_ops(self, num: u64, reads: u64) -> u64 {
        match self {
            Benchmark::FillSeq
            | Benchmark::FillRandom
            | Benchmark::Overwrite
            | Benchmark::DeleteRandom
            | Benchmark::YcsbLoad
            | Benchmark::FillRandomCf => num,
            Benchmark::FillSync => num / 100,
            Benchmark::BatchCf => num / CF_FAMILIES as u64,
            Benchmark::ReadRandom
            | Benchmark::ReadSeq
            | Benchmark::ReadReverse
            | Benchmark::SeekRandom
            | Benchmark::ReadWhileWriting
            | Benchmark::YcsbA
            | Benchmark::YcsbB
            | Benchmark::YcsbC
            | Benchmark::YcsbD
            | Benchmark::YcsbE
            | Benchmark::YcsbF
            | Benchmark::YcsbR10
            | Benchmark::YcsbR90
            | Benchmark::RmwPlain
            | Benchmark::RmwBatch
            | Benchmark::RmwTxn
            | Benchmark::ReadRandomCf => reads,
            Benchmark::Stats => 0,
            Benchmark::Reopen => 1,
        }
    }

    /// The operation whose latency heads the benchmark's report line.
    #[must_use]
    pub fn primary_op(self) -> OpKind {
        match self {
            Benchmark::FillSeq
            | Benchmark::FillRandom
            | Benchmark::Overwrite
            | Benchmark::FillSync
            | Benchmark::Stats
            | Benchmark::Reopen
            | Benchmark::FillRandomCf
            | Benchmark::BatchCf => OpKind::Write,
            Benchmark::ReadRandom
            | Benchmark::ReadWhileWriting
            | Benchmark::YcsbA
            | Benchmark::YcsbB
            | Benchmark::YcsbC
            | Benchmark::YcsbD
            | Benchmark::YcsbF
            | Benchmark::YcsbR10
            | Benchmark::YcsbR90
            | Benchmark::ReadRandomCf => OpKind::Read,
            Benchmark::YcsbLoad => OpKind::Insert,
            Benchmark::RmwPlain | Benchmark::RmwBatch | Benchmark::RmwTxn => {
                OpKind::ReadModifyWrite
            }
            Benchmark::YcsbE => OpKind::Scan,
            Benchmark::ReadSeq | Benchmark::ReadReverse => OpKind::Scan,
            Benchmark::SeekRandom => OpKind::Seek,
            Benchmark::DeleteRandom => OpKind::Delete,
        }
    }

    /// Threads the benchmark runs with `threads` requested: one more for the writer of
    /// `readwhilewriting`.
    #[must_use]
    pub fn worker_threads(self, threads: usize) -> usize {
        match self {
            Benchmark::ReadWhileWriting => threads + 1,
            _ => threads,
        }
    }
}

/// One item of a benchmark list: a benchmark and, if given, its own thread count
/// (`readrandom@2`), which overrides the run's `--threads` for that benchmark only, so one
/// database state can be measured with 1 and with 2 threads back to back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The benchmark.
    pub bench: Benchmark,
    /// Its thread count; `None` = the run's.
    pub threads: Option<usize>,
}

impl From<Benchmark> for Step {
    fn from(bench: Benchmark) -> Self {
        Step {
            bench,
            threads: None,
        }
    }
}

impl Step {
    /// Parses `name` or `name@threads`.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name or a thread count outside 1..=1024.
    pub fn parse(item: &str) -> Result<Self> {
        let Some((name, n)) = item.split_once('@') else {
            return Ok(Benchmark::parse(item)?.into());
        };
        let bench = Benchmark::parse(name.trim())?;
        let threads = n
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|t| (1..=1024).contains(t))
            .ok_or_else(|| {
                BenchError::InvalidArgument(format!(
                    "{item:?}: the thread count after '@' must be in 1..=1024"
                ))
            })?;
        Ok(Step {
            bench,
            threads: Some(threads),
        })
    }

    /// Parses a comma-separated list (empty items are ignored).
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name, a bad thread count or an empty list.
    pub fn parse_list(list: &str) -> Result<Vec<Self>> {
        let v = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Self::parse)
            .collect::<Result<Vec<_>>>()?;
        if v.is_empty() {
            return Err(BenchError::InvalidArgument("no benchmark given".into()));
        }
        Ok(v)
    }

    /// The name as given: `readrandom` or `readrandom@2`.
    #[must_use]
    pub fn label(&self) -> String {
        match self.threads {
            Some(t) => format!("{}@{t}", self.bench.name()),
            None => self.bench.name().to_string(),
        }
    }
}

/// The share of `total` operations done by thread `t` of `threads`, as `(first, count)`:
/// the shares are contiguous, in thread order, and add up to `total`.
#[must_use]
pub fn share(total: u64, threads: usize, t: usize) -> (u64, u64) {
    let threads = threads.max(1) as u64;
    let t = t as u64;
    let base = total / threads;
    let extra = total % threads;
    let count = base + u64::from(t < extra);
    let first = t * base + t.min(extra);
    (first, count)
}

/// Everything a worker needs; shared by reference between the workers of one benchmark.
#[derive(Debug)]
pub struct WorkerCtx<'a> {
    /// The benchmark.
    pub bench: Benchmark,
    /// The engine under test.
    pub engine: &'a dyn KvEngine,
    /// Key space size (`--num`).
    pub num: u64,
    /// Reads to do in total (`--reads`).
    pub reads: u64,
    /// Key size in bytes.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
    /// Counted worker threads (readers, for `readwhilewriting`).
    pub threads: usize,
    /// Make every write synchronous.
    pub sync: bool,
    /// Base seed of the workers' random number generators.
    pub seed: u64,
    /// When the benchmark started.
    pub start: Instant,
    /// The value buffer (each worker forks its own generator).
    pub values: &'a ValueGenerator,
    /// Counted operations completed so far, updated in batches.
    pub progress: &'a AtomicU64,
    /// Set when workers must stop: an error elsewhere, or the readers of
    /// `readwhilewriting` are done (which stops the writer).
    pub stop: &'a AtomicBool,
    /// Open loop: the total intended rate of the counted threads, in operations per second
    /// (`None`: closed loop, each thread issues its next operation as soon as the last one
    /// finished).
    pub rate: Option<f64>,
    /// What the YCSB benchmarks share (`None` for the others).
    pub ycsb: Option<&'a YcsbRun<'a>>,
}

/// What one operation did.
#[derive(Debug)]
pub(crate) struct Done {
    /// Operation kind.
    pub kind: OpKind,
    /// Operations (entries) it counts for.
    pub n: u64,
    /// Bytes of keys and values moved.
    pub bytes: u64,
    /// Bytes of keys and values written.
    pub written: u64,
    /// For reads: whether the key was found.
    pub found: Option<bool>,
}

impl Done {
    /// One write of `kind`.
    pub fn write(kind: OpKind, key_len: usize, value_len: usize) -> Self {
        let b = (key_len + value_len) as u64;
        Done {
            kind,
            n: 1,
            bytes: b,
            written: b,
            found: None,
        }
    }

    /// One read of `kind` that got `v`.
    pub fn read(kind: OpKind, key_len: usize, v: Option<&[u8]>) -> Self {
        Done {
            kind,
            n: 1,
            bytes: v.map_or(0, |v| (key_len + v.len()) as u64),
            written: 0,
            found: Some(v.is_some()),
        }
    }
}

/// The open-loop schedule of one thread: intended start times, in nanoseconds since the
/// benchmark's start.
struct Schedule {
    next_due: f64,
    interval: f64,
}

impl Schedule {
    /// Thread `t` of `threads` sharing `rate` operations per second: each thread runs at
    /// `rate / threads`, the threads' schedules staggered evenly.
    fn new(rate: f64, threads: usize, t: usize) -> Self {
        let interval = 1e9 * threads.max(1) as f64 / rate.max(1e-9);
        Self {
            next_due: interval * t as f64 / threads.max(1) as f64,
            interval,
        }
    }

    /// Waits until the next intended start; returns it. Sleeps while far from it, then
    /// spins, so that the start is not late by a sleep's granularity (nor by a yield that
    /// hands the core to another process for a whole time slice).
    fn wait(&self, start: Instant) -> Instant {
        let due = start + Duration::from_nanos(self.next_due as u64);
        loop {
            let now = Instant::now();
            if now >= due {
                return due;
            }
            let left = due - now;
            if left > Duration::from_micros(300) {
                std::thread::sleep(left - Duration::from_micros(200));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// Runs operations until `op` returns `None`, `limit` operations have run, or the stop flag
/// is set; times each one and records it. Counted operations follow the open-loop schedule
/// of thread `t` when `ctx.rate` is set.
pub(crate) fn drive(
    ctx: &WorkerCtx<'_>,
    m: &mut ThreadMetrics,
    t: usize,
    limit: Option<u64>,
    counted: bool,
    mut op: impl FnMut(u64) -> Result<Option<Done>>,
) -> Result<()> {
    let mut pending = 0u64;
    let mut i = 0u64;
    let mut schedule = ctx
        .rate
        .filter(|_| counted)
        .map(|r| Schedule::new(r, ctx.threads, t));
    // An uncounted worker (the writer of `readwhilewriting`) does at least one operation,
    // so that it is measured even when the readers finish before it is scheduled.
    while limit.is_none_or(|l| i < l) && (!counted && i == 0 || !ctx.stop.load(Ordering::Relaxed)) {
        let intended = schedule.as_ref().map(|s| s.wait(ctx.start));
        let t0 = Instant::now();
        let Some(d) = op(i)? else { break };
        let t1 = Instant::now();
        let n = d.n.max(1);
        let per_op = |from: Instant| {
            u64::try_from(t1.duration_since(from).as_nanos() / u128::from(n)).unwrap_or(u64::MAX)
        };
        if let (Some(s), Some(due)) = (schedule.as_mut(), intended) {
            // Latency from the intended start; the service time apart.
            m.record(
                d.kind,
                per_op(due),
                d.n,
                t1.duration_since(ctx.start),
                counted,
            );
            m.record_service(d.kind, per_op(t0), d.n)?;
            s.next_due += s.interval * n as f64;
        } else {
            m.record(
                d.kind,
                per_op(t0),
                d.n,
                t1.duration_since(ctx.start),
                counted,
            );
        }
        if counted {
            m.bytes += d.bytes;
            m.written += d.written;
            match d.found {
                Some(true) => m.found += 1,
                Some(false) => m.not_found += 1,
                None => {}
            }
            pending += d.n;
            if pending >= PROGRESS_BATCH {
                ctx.progress.fetch_add(pending, Ordering::Relaxed);
                pending = 0;
            }
        }
        i += 1;
    }
    ctx.progress.fetch_add(pending, Ordering::Relaxed);
    Ok(())
}

/// Runs worker `t` of the benchmark: counted workers are `0..ctx.threads`; for
/// `readwhilewriting`, worker `ctx.threads` is the writer, which runs until the stop flag is
/// set.
///
/// # Errors
/// The first engine error met (the caller sets the stop flag so the others stop too).
pub fn run_worker(ctx: &WorkerCtx<'_>, t: usize) -> Result<ThreadMetrics> {
    let mut m = ThreadMetrics::new()?;
    let seed = ctx
        .seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(t as u64 + 1);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut values = ctx.values.fork(t.wrapping_mul(7919));
    let mut key = vec![0u8; ctx.key_size];
    let ks = ctx.key_size as u64;
    let vs = ctx.value_size;
    let num = ctx.num.max(1);
    let e = ctx.engine;
    let total = ctx.bench.total_ops(ctx.num, ctx.reads);
    let (first, count) = share(total, ctx.threads, t);

    match ctx.bench {
        Benchmark::FillSeq => drive(ctx, &mut m, t, Some(count), true, |i| {
            format_key_into(first + i, &mut key);
            e.put(&key, values.generate(vs), ctx.sync)?;
            Ok(Some(write_done(ks, vs)))
        })?,
        Benchmark::FillRandom | Benchmark::Overwrite | Benchmark::FillSync => {
            let sync = ctx.sync || ctx.bench == Benchmark::FillSync;
            drive(ctx, &mut m, t, Some(count), true, |_| {
                format_key_into(rng.random_range(0..num), &mut key);
                e.put(&key, values.generate(vs), sync)?;
                Ok(Some(write_done(ks, vs)))
            })?;
        }
        Benchmark::ReadWhileWriting if t >= ctx.threads => {
            drive(ctx, &mut m, t, None, false, |_| {
                format_key_into(rng.random_range(0..num), &mut key);
                e.put(&key, values.generate(vs), ctx.sync)?;
                Ok(Some(write_done(ks, vs)))
            })?;
        }
        Benchmark::ReadRandom | Benchmark::ReadWhileWriting => {
            drive(ctx, &mut m, t, Some(count), true, |_| {
                format_key_into(rng.random_range(0..num), &mut key);
                let v = e.get(&key)?;
                Ok(Some(Done::read(OpKind::Read, key.len(), v.as_deref())))
            })?;
        }
        Benchmark::SeekRandom => drive(ctx, &mut m, t, Some(count), true, |_| {
            format_key_into(rng.random_range(0..num), &mut key);
            let r = e.scan(Some(&key), 1, Direction::Forward)?;
            Ok(Some(Done {
                kind: OpKind::Seek,
                n: 1,
                bytes: r.bytes,
                written: 0,
                found: Some(r.last_key.as_deref() == Some(&key[..])),
            }))
        })?,
        Benchmark::DeleteRandom => drive(ctx, &mut m, t, Some(count), true, |_| {
            format_key_into(rng.random_range(0..num), &mut key);
            e.delete(&key, ctx.sync)?;
            Ok(Some(Done {
                kind: OpKind::Delete,
                n: 1,
                bytes: ks,
                written: ks,
                found: None,
            }))
        })?,
        Benchmark::ReadSeq | Benchmark::ReadReverse => {
            let dir = if ctx.bench == Benchmark::ReadSeq {
                Direction::Forward
            } else {
                Direction::Reverse
            };
            read_sequential(ctx, &mut m, t, dir, first, count)?;
        }
        Benchmark::Stats | Benchmark::Reopen => {}
        Benchmark::FillRandomCf => {
            e.column_families(CF_FAMILIES)?;
            drive(ctx, &mut m, t, Some(count), true, |_| {
                let k = rng.random_range(0..num);
                format_key_into(k, &mut key);
                e.put_cf(family_of(k), &key, values.generate(vs), ctx.sync)?;
                Ok(Some(write_done(ks, vs)))
            })?;
        }
        Benchmark::ReadRandomCf => {
            e.column_families(CF_FAMILIES)?;
            drive(ctx, &mut m, t, Some(count), true, |_| {
                let k = rng.random_range(0..num);
                format_key_into(k, &mut key);
                let v = e.get_cf(family_of(k), &key)?;
                Ok(Some(Done::read(OpKind::Read, key.len(), v.as_deref())))
            })?;
        }
        Benchmark::BatchCf => {
            e.column_families(CF_FAMILIES)?;
            let mut keys = vec![vec![0u8; ctx.key_size]; CF_FAMILIES];
            drive(ctx, &mut m, t, Some(count), true, |_| {
                for k in &mut keys {
                    format_key_into(rng.random_range(0..num), k);
                }
                let v = values.generate(vs);
                let puts: Vec<(usize, &[u8], &[u8])> = keys
                    .iter()
                    .enumerate()
                    .map(|(f, k)| (f, &k[..], v))
                    .collect();
                e.write_batch_cf(&puts, ctx.sync)?;
                let b = CF_FAMILIES as u64 * (ks + vs as u64);
                Ok(Some(Done {
                    kind: OpKind::Write,
                    n: 1,
                    bytes: b,
                    written: b,
                    found: None,
                }))
            })?;
        }
        Benchmark::RmwPlain | Benchmark::RmwBatch | Benchmark::RmwTxn => {
            let mut keys: Vec<Vec<u8>> = Vec::with_capacity(RMW_MAX_KEYS);
            drive(ctx, &mut m, t, Some(count), true, |_| {
                let n = rng.random_range(1..=RMW_MAX_KEYS);
                keys.clear();
                for _ in 0..n {
                    let mut k = vec![0u8; ctx.key_size];
                    format_key_into(rng.random_range(0..num), &mut k);
                    keys.push(k);
                }
                let v = values.generate(vs);
                let found = match ctx.bench {
                    Benchmark::RmwTxn => e.rmw_transaction(&keys, v, ctx.sync)?.found,
                    bench => {
                        let mut found = 0;
                        for k in &keys {
                            found += usize::from(e.get(k)?.is_some());
                        }
                        if bench == Benchmark::RmwBatch {
                            let puts: Vec<(&[u8], &[u8])> =
                                keys.iter().map(|k| (&k[..], v)).collect();
                            e.write_batch(&puts, ctx.sync)?;
                        } else {
                            for k in &keys {
                                e.put(k, v, ctx.sync)?;
                            }
                        }
                        found
                    }
                };
                let b = (n as u64) * (ks + vs as u64);
                Ok(Some(Done {
                    kind: OpKind::ReadModifyWrite,
                    n: 1,
                    bytes: b,
                    written: b,
                    found: Some(found == n),
                }))
            })?;
        }
        Benchmark::YcsbLoad
        | Benchmark::YcsbA
        | Benchmark::YcsbB
        | Benchmark::YcsbC
        | Benchmark::YcsbD
        | Benchmark::YcsbE
        | Benchmark::YcsbF
        | Benchmark::YcsbR10
        | Benchmark::YcsbR90 => {
            let y = ctx.ycsb.ok_or_else(|| {
                BenchError::InvalidArgument(format!("{} needs its YCSB state", ctx.bench.name()))
            })?;
            run_ycsb_worker(ctx, y, t, &mut m, &mut rng, &mut values)?;
        }
    }
    Ok(m)
}

/// The family of key number `k` in the `*-cf` benchmarks.
fn family_of(k: u64) -> usize {
    usize::try_from(k % CF_FAMILIES as u64).unwrap_or(0)
}

fn write_done(key_size: u64, value_size: usize) -> Done {
    Done::write(OpKind::Write, key_size as usize, value_size)
}

/// `readseq` / `readreverse`: `count` entries in chunks of [`SCAN_CHUNK`]. Thread 0 starts
/// at the first (last) key; thread `t > 0` at its share's first key number (counted from the
/// other end for `readreverse`). Each chunk after the first starts again at the previous
/// chunk's last key and skips it. Stops early at the end of the data.
fn read_sequential(
    ctx: &WorkerCtx<'_>,
    m: &mut ThreadMetrics,
    t: usize,
    dir: Direction,
    first: u64,
    count: u64,
) -> Result<()> {
    let mut start: Option<Vec<u8>> = (first > 0).then(|| {
        let n = match dir {
            Direction::Forward => first,
            Direction::Reverse => ctx.num.saturating_sub(1).saturating_sub(first),
        };
        let mut k = vec![0u8; ctx.key_size];
        format_key_into(n, &mut k);
        k
    });
    let mut skip_first = false;
    let mut remaining = count;
    drive(ctx, m, t, None, true, |_| {
        if remaining == 0 {
            return Ok(None);
        }
        let want = usize::try_from(remaining)
            .unwrap_or(usize::MAX)
            .min(SCAN_CHUNK);
        let extra = usize::from(skip_first);
        let r = ctx.engine.scan(start.as_deref(), want + extra, dir)?;
        let got = r.entries.saturating_sub(extra) as u64;
        if got == 0 {
            return Ok(None);
        }
        remaining = remaining.saturating_sub(got);
        // The end of the data: finish after this chunk.
        if r.entries < want + extra {
            remaining = 0;
        }
        start = r.last_key;
        skip_first = true;
        // Bytes of the skipped entry are not known apart: count the chunk's average.
        let bytes = r.bytes.saturating_mul(got) / (r.entries.max(1) as u64);
        Ok(Some(Done {
            kind: OpKind::Scan,
            n: got,
            bytes,
            written: 0,
            found: None,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip_and_lists_parse() {
        for &b in Benchmark::ALL {
            assert_eq!(Benchmark::parse(b.name()).unwrap(), b);
        }
        assert_eq!(
            Step::parse_list("fillseq, readrandom,,").unwrap(),
            vec![Benchmark::FillSeq.into(), Benchmark::ReadRandom.into()]
        );
        let e = Step::parse_list("fillseq,nope").unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("readwhilewriting"), "{e}");
        assert!(Step::parse_list(" , ").is_err());
    }

    #[test]
    fn a_step_may_name_its_own_thread_count() {
        let v = Step::parse_list("fillrandom,readrandom, readrandom@2").unwrap();
        assert_eq!(v[1], Benchmark::ReadRandom.into());
        assert_eq!(
            v[2],
            Step {
                bench: Benchmark::ReadRandom,
                threads: Some(2)
            }
        );
        assert_eq!(v[2].label(), "readrandom@2");
        assert_eq!(v[1].label(), "readrandom");
        for bad in [
            "readrandom@0",
            "readrandom@",
            "readrandom@x",
            "readrandom@2000",
        ] {
            let e = Step::parse_list(bad).unwrap_err().to_string();
            assert!(e.contains("1..=1024"), "{bad}: {e}");
        }
        assert!(Step::parse_list("nope@2").is_err());
    }

    #[test]
    fn shares_are_contiguous_and_cover_the_total() {
        for total in [0u64, 1, 7, 100, 1001] {
            for threads in 1..=5 {
                let mut next = 0;
                for t in 0..threads {
                    let (first, count) = share(total, threads, t);
                    assert_eq!(first, next, "total {total} threads {threads} t {t}");
                    next += count;
                }
                assert_eq!(next, total);
            }
        }
    }

    #[test]
    fn fillsync_does_a_hundredth_of_the_writes() {
        assert_eq!(Benchmark::FillSync.total_ops(100_000, 5), 1000);
        assert_eq!(Benchmark::FillRandom.total_ops(100_000, 5), 100_000);
        assert_eq!(Benchmark::ReadRandom.total_ops(100_000, 5), 5);
        assert_eq!(Benchmark::ReadWhileWriting.worker_threads(2), 3);
    }
}
