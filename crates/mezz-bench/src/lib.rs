//! # mezz-bench
//!
//! Mezzanine's benchmark harness, in the style of LevelDB's `db_bench`: named workloads
//! (see [`workloads`] for the list), run by several threads against one engine, measured
//! per benchmark (throughput, latency percentiles per operation kind, a per-second
//! throughput timeline, engine-reported write amplification and stall time, CPU time, peak
//! RSS, bytes written to storage), reported as one human line and one JSON line each.
//!
//! ```no_run
//! use mezz_bench::{BenchConfig, MezzFactory, Step, build_options, run};
//! let factory = MezzFactory::new(build_options(Some("leveldb"), &[])?);
//! let cfg = BenchConfig {
//!     benchmarks: Step::parse_list("fillrandom,readrandom")?,
//!     num: 100_000,
//!     ..BenchConfig::default()
//! };
//! let results = run(&cfg, &factory, &mut std::io::stdout())?;
//! println!("{}", results[0].ops_per_sec);
//! # Ok::<(), mezz_bench::BenchError>(())
//! ```
//!
//! Layout: [`engine`] (the `KvEngine` / `EngineFactory` seam every engine adapter
//! implements), [`mezz_engine`] (the Mezzanine adapter), [`workloads`] (benchmark names and
//! the per-thread loops), [`keygen`] (keys and values), [`metrics`] (histograms, timeline,
//! stall seconds), [`sysinfo`] (`/proc` readers, machine facts), [`memlimit`] (the memory cgroup of
//! `--memory-limit`), [`report`] (result record,
//! human line, JSON), [`runner`] (directory handling, threads, measurement).

pub mod engine;
pub mod engines;
pub mod error;
pub mod keygen;
pub mod memlimit;
pub mod metrics;
pub mod mezz_engine;
pub mod plot;
pub mod report;
pub mod runner;
pub mod suite;
pub mod sysinfo;
pub mod workloads;
pub mod ycsb;

pub use engine::{Direction, EngineCounters, EngineFactory, KvEngine, ScanResult, TxnOutcome};
pub use error::{BenchError, Result};
pub use memlimit::{MemoryBudget, MemoryCgroup};
pub use mezz_engine::{
    MezzEngine, MezzFactory, UnitsSetup, build_options, options_json, parse_opt, unit_dirs,
};
pub use report::BenchResult;
pub use runner::{BenchConfig, run};
pub use suite::{EngineSpec, Sweep, run_suite};
pub use workloads::{Benchmark, Step};
