//! `mezz bench`: db_bench-style benchmarks of Mezzanine through `mezz-bench` (see that
//! crate's `workloads` module for the benchmark names).

use std::path::PathBuf;

use mezz_bench::{BenchConfig, Benchmark, MezzFactory};

use crate::common::{EngineArgs, Result};

/// Arguments of `mezz bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Database directory (default: a temporary directory deleted at the end). Must be
    /// absent, empty or a Mezzanine database (which is destroyed) unless --use-existing.
    #[arg(long)]
    db: Option<PathBuf>,
    /// Comma-separated benchmarks: fillseq, fillrandom, overwrite, fillsync, readrandom,
    /// readseq, readreverse, seekrandom, deleterandom, readwhilewriting, stats.
    #[arg(long, default_value = "fillrandom,readrandom")]
    benchmarks: String,
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Number of reads (default: --num).
    #[arg(long)]
    reads: Option<u64>,
    /// Key size in bytes.
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Worker threads (readwhilewriting adds one writer).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Make every write synchronous.
    #[arg(long)]
    sync: bool,
    /// Keep the data in --db and skip the fill benchmarks.
    #[arg(long)]
    use_existing: bool,
    /// Append one JSON object per benchmark to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seed of the key generators.
    #[arg(long, default_value_t = 301)]
    seed: u64,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Runs `mezz bench`.
pub fn run(a: &Args) -> Result<()> {
    let factory = MezzFactory::new(a.engine.options(&[])?);
    let cfg = BenchConfig {
        benchmarks: Benchmark::parse_list(&a.benchmarks)?,
        num: a.num,
        reads: a.reads,
        key_size: a.key_size,
        value_size: a.value_size,
        threads: a.threads,
        sync: a.sync,
        db: a.db.clone(),
        use_existing: a.use_existing,
        json: a.json.clone(),
        seed: a.seed,
        progress: !a.no_progress,
    };
    mezz_bench::run(&cfg, &factory, &mut std::io::stdout().lock())?;
    Ok(())
}
