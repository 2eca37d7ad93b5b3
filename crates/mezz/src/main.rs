//! `mezz`: the Mezzanine command-line tool.
//!
//! One module per subcommand (`put`, `get`, `delete`, `scan`, `stats`, `check`, `repair`,
//! `bench`, `stress`, `nvm-calibrate` in `calibrate`, `serve`; `checkpoint`, `backup` and
//! `restore` in `backup`);
//! `common` holds what they share: the database arguments (`DB`, `--preset`, `--opt k=v`),
//! opening the database, byte escaping, and the error type. A new subcommand is one more
//! module plus one variant of [`Command`].
//!
//! Exit codes: 0 on success, 1 when `get` finds no value, 2 on any error (a one-line
//! message on stderr) and on usage errors.

mod backup;
mod bench;
mod calibrate;
mod check;
mod common;
mod delete;
mod get;
mod put;
mod repair;
mod scan;
mod serve;
mod stats;
mod stress;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::common::CliError;

/// The Mezzanine key-value store: inspect, modify, check and benchmark databases.
#[derive(Debug, Parser)]
#[command(name = "mezz", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Set KEY to VALUE (creates the database if missing).
    Put(put::Args),
    /// Print the value of KEY (exit code 1 if absent).
    Get(get::Args),
    /// Delete KEY.
    Delete(delete::Args),
    /// Print `key<TAB>value` lines of a key range.
    Scan(scan::Args),
    /// Print the database's statistics.
    Stats(stats::Args),
    /// Verify every table and checksum; non-zero exit on corruption.
    Check(check::Args),
    /// Rebuild a damaged database from what still reads (LevelDB's RepairDB) and print what
    /// was kept and lost; what could not be used is moved to DB/lost/.
    Repair(repair::Args),
    /// Write a consistent copy of the database to DIR (tables hard-linked; data in NVM and
    /// memtables written as tables): an SSD database that opens with any preset.
    Checkpoint(backup::CheckpointArgs),
    /// Back up DB incrementally into BACKUPDIR (only tables not there yet are copied);
    /// with only BACKUPDIR: --list, --verify [--id N], --purge N (keep the newest N),
    /// --delete ID.
    Backup(backup::BackupArgs),
    /// Restore a backup (the newest, or --id N) into DB, checking every file's checksum.
    Restore(backup::RestoreArgs),
    /// Run db_bench-style benchmarks.
    Bench(bench::Args),
    /// Kill -9 crash test: a child runs a random workload until it is killed, at a random
    /// moment after its workload started (or, in a seeded share of rounds, while it opens
    /// and recovers the database); after each kill the database is reopened and every key
    /// checked. The summary counts kills, kills during open and clean exits.
    Stress(stress::StressArgs),
    /// Check the emulated NVM cost against its profiles: random and sequential reads, read
    /// and write bandwidth, small persisted writes, on a region under /dev/shm; prints the
    /// profile's figure, the measurement and their ratio per row.
    NvmCalibrate(calibrate::Args),
    /// Serve the database over the Redis protocol (RESP2/RESP3): strings, hashes, SCAN,
    /// AUTH, protected mode, a static cluster slot map (docs/serve.md).
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Put(a) => put::run(&a),
        Command::Get(a) => get::run(&a),
        Command::Delete(a) => delete::run(&a),
        Command::Scan(a) => scan::run(&a),
        Command::Stats(a) => stats::run(&a),
        Command::Check(a) => check::run(&a),
        Command::Repair(a) => repair::run(&a),
        Command::Checkpoint(a) => backup::checkpoint(&a),
        Command::Backup(a) => backup::backup(&a),
        Command::Restore(a) => backup::restore(&a),
        Command::Bench(mut a) => bench::run(&mut a),
        Command::NvmCalibrate(a) => calibrate::run(&a),
        Command::Serve(a) => serve::run(&a),
        Command::Stress(a) => return ExitCode::from(u8::try_from(stress::run(a)).unwrap_or(2)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::NotFound) => {
            eprintln!("mezz: not found");
            ExitCode::from(1)
        }
        Err(CliError::Failed(msg)) => {
            eprintln!("mezz: {msg}");
            ExitCode::from(2)
        }
    }
}
