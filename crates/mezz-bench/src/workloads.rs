//! The db_bench workloads and the per-thread loop that drives them.
//!
//! Benchmarks (names as in LevelDB's db_bench; `--benchmarks` takes a comma-separated list,
//! run in order against one database):
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
//!
//! Key numbers are drawn uniformly from `[0, num)`; keys and values are made by
//! [`crate::keygen`]. `--sync` makes every write synchronous. With `threads > 1` each thread
//! does its share of the operations (`fillseq` gives each thread a contiguous range of key
//! numbers; `readseq` / `readreverse` start each thread at its own share's first key).
//! The `fill*` benchmarks start from an empty database: the driver destroys and reopens it
//! first (and skips them with `--use-existing`).
//!
//! Thread-safety: [`run_worker`] is called once per thread with a shared [`WorkerCtx`]; each
//! worker owns its rng, value generator and [`ThreadMetrics`], and shares only the engine,
//! the progress counter and the stop flag.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::engine::{Direction, KvEngine};
use crate::error::{BenchError, Result};
use crate::keygen::{ValueGenerator, format_key_into};
use crate::metrics::{OpKind, ThreadMetrics};

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

    /// Parses a comma-separated list (empty items are ignored).
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name or an empty list.
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

    /// Whether the benchmark starts from an empty database.
    #[must_use]
    pub fn needs_fresh_db(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::FillSync
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
        )
    }

    /// Operations the counted workers perform in total (for the progress bar and the
    /// per-thread shares).
    #[must_use]
    pub fn total_ops(self, num: u64, reads: u64) -> u64 {
        match self {
            Benchmark::FillSeq
            | Benchmark::FillRandom
            | Benchmark::Overwrite
            | Benchmark::DeleteRandom => num,
            Benchmark::FillSync => num / 100,
            Benchmark::ReadRandom
            | Benchmark::ReadSeq
            | Benchmark::ReadReverse
            | Benchmark::SeekRandom
            | Benchmark::ReadWhileWriting => reads,
            Benchmark::Stats => 0,
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
            | Benchmark::Stats => OpKind::Write,
            Benchmark::ReadRandom | Benchmark::ReadWhileWriting => OpKind::Read,
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
}

/// What one operation did.
struct Done {
    kind: OpKind,
    n: u64,
    bytes: u64,
    found: Option<bool>,
}

/// Runs operations until `op` returns `None`, `limit` operations have run, or the stop flag
/// is set; times each one and records it.
fn drive(
    ctx: &WorkerCtx<'_>,
    m: &mut ThreadMetrics,
    limit: Option<u64>,
    counted: bool,
    mut op: impl FnMut(u64) -> Result<Option<Done>>,
) -> Result<()> {
    let mut pending = 0u64;
    let mut i = 0u64;
    while limit.is_none_or(|l| i < l) && !ctx.stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        let Some(d) = op(i)? else { break };
        let t1 = Instant::now();
        let nanos = t1.duration_since(t0).as_nanos();
        let per_op = u64::try_from(nanos / u128::from(d.n.max(1))).unwrap_or(u64::MAX);
        m.record(d.kind, per_op, d.n, t1.duration_since(ctx.start), counted);
        if counted {
            m.bytes += d.bytes;
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
        Benchmark::FillSeq => drive(ctx, &mut m, Some(count), true, |i| {
            format_key_into(first + i, &mut key);
            e.put(&key, values.generate(vs), ctx.sync)?;
            Ok(Some(write_done(ks, vs)))
        })?,
        Benchmark::FillRandom | Benchmark::Overwrite | Benchmark::FillSync => {
            let sync = ctx.sync || ctx.bench == Benchmark::FillSync;
            drive(ctx, &mut m, Some(count), true, |_| {
                format_key_into(rng.random_range(0..num), &mut key);
                e.put(&key, values.generate(vs), sync)?;
                Ok(Some(write_done(ks, vs)))
            })?;
        }
        Benchmark::ReadWhileWriting if t >= ctx.threads => {
            drive(ctx, &mut m, None, false, |_| {
                format_key_into(rng.random_range(0..num), &mut key);
                e.put(&key, values.generate(vs), ctx.sync)?;
                Ok(Some(write_done(ks, vs)))
            })?;
        }
        Benchmark::ReadRandom | Benchmark::ReadWhileWriting => {
            drive(ctx, &mut m, Some(count), true, |_| {
                format_key_into(rng.random_range(0..num), &mut key);
                let v = e.get(&key)?;
                Ok(Some(Done {
                    kind: OpKind::Read,
                    n: 1,
                    bytes: v.as_ref().map_or(0, |v| ks + v.len() as u64),
                    found: Some(v.is_some()),
                }))
            })?;
        }
        Benchmark::SeekRandom => drive(ctx, &mut m, Some(count), true, |_| {
            format_key_into(rng.random_range(0..num), &mut key);
            let r = e.scan(Some(&key), 1, Direction::Forward)?;
            Ok(Some(Done {
                kind: OpKind::Seek,
                n: 1,
                bytes: r.bytes,
                found: Some(r.last_key.as_deref() == Some(&key[..])),
            }))
        })?,
        Benchmark::DeleteRandom => drive(ctx, &mut m, Some(count), true, |_| {
            format_key_into(rng.random_range(0..num), &mut key);
            e.delete(&key, ctx.sync)?;
            Ok(Some(Done {
                kind: OpKind::Delete,
                n: 1,
                bytes: ks,
                found: None,
            }))
        })?,
        Benchmark::ReadSeq | Benchmark::ReadReverse => {
            let dir = if ctx.bench == Benchmark::ReadSeq {
                Direction::Forward
            } else {
                Direction::Reverse
            };
            read_sequential(ctx, &mut m, dir, first, count)?;
        }
        Benchmark::Stats => {}
    }
    Ok(m)
}

fn write_done(key_size: u64, value_size: usize) -> Done {
    Done {
        kind: OpKind::Write,
        n: 1,
        bytes: key_size + value_size as u64,
        found: None,
    }
}

/// `readseq` / `readreverse`: `count` entries in chunks of [`SCAN_CHUNK`]. Thread 0 starts
/// at the first (last) key; thread `t > 0` at its share's first key number (counted from the
/// other end for `readreverse`). Each chunk after the first starts again at the previous
/// chunk's last key and skips it. Stops early at the end of the data.
fn read_sequential(
    ctx: &WorkerCtx<'_>,
    m: &mut ThreadMetrics,
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
    drive(ctx, m, None, true, |_| {
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
            Benchmark::parse_list("fillseq, readrandom,,").unwrap(),
            vec![Benchmark::FillSeq, Benchmark::ReadRandom]
        );
        let e = Benchmark::parse_list("fillseq,nope")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope") && e.contains("readwhilewriting"), "{e}");
        assert!(Benchmark::parse_list(" , ").is_err());
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
