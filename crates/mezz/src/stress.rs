//! `mezz stress`: the kill -9 crash harness (see `mezz_testkit::stress`).
//!
//! `mezz stress --db DIR --rounds N --seed S [--preset P] [--ops-per-round M] [--keys K]
//! [--opt name=value ...]` starts this same executable again as a child
//! (`mezz stress --child ...`, a hidden mode) that writes to the database, kills it with
//! SIGKILL after a random delay, reopens the database and checks every key against the
//! expected-state file `DIR.expected`; then it starts the next round. A second run on the
//! same directory continues where the first stopped.
//!
//! Exit codes: 0 when every round passed (a summary goes to stdout); 1 when a check failed
//! (the message names round, seed and key: `round R seed S key K: expected version V
//! (pending P), found F`); 2 for a usage or setup error. In child mode: the child's own
//! codes (0, 2 for a violation, 3 for other errors).
//!
//! Thread-safety: single-threaded.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use mezz_testkit::stress::{
    ChildConfig, StressConfig, StressFailure, child_main, run_parent, stress_options,
};

/// Arguments of `mezz stress`.
#[derive(Debug, Clone, clap::Args)]
pub struct StressArgs {
    /// The database directory (created if missing). The expected state is kept beside it,
    /// in `<DIR>.expected`.
    #[arg(long, value_name = "DIR")]
    pub db: PathBuf,
    /// Rounds to run: each starts a child, kills it, reopens and verifies.
    #[arg(long, default_value_t = 10)]
    pub rounds: u64,
    /// Base seed; round R runs with a seed derived from it and R (printed on failure).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Start from this preset's options (default: leveldb); the harness then sets small
    /// memtables and tables (64 KiB) unless `--opt` overrides them.
    #[arg(long, default_value = "leveldb")]
    pub preset: String,
    /// Ops a child runs before exiting by itself, if it is not killed first.
    #[arg(long, default_value_t = 10_000)]
    pub ops_per_round: u64,
    /// Size of the key space (keys `k0000000` ..).
    #[arg(long, default_value_t = 1000)]
    pub keys: u32,
    /// Set one engine option, `name=value` (repeatable).
    #[arg(long = "opt", value_name = "NAME=VALUE")]
    pub opts: Vec<String>,
    /// The child is killed after a random delay of up to this many milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub max_kill_delay_ms: u64,
    /// Run a full `Db::verify` after every this many rounds and after the last (0: never).
    #[arg(long, default_value_t = 3)]
    pub verify_every: u64,
    /// Do not print a line per round.
    #[arg(long)]
    pub quiet: bool,
    /// Run as the child (used by the parent).
    #[arg(long, hide = true)]
    pub child: bool,
    /// The expected-state file (child mode).
    #[arg(long, hide = true)]
    pub state: Option<PathBuf>,
    /// The round number (child mode).
    #[arg(long, hide = true, default_value_t = 0)]
    pub round: u64,
}

/// Runs `mezz stress` and returns the process exit code.
#[must_use]
pub fn run(args: StressArgs) -> i32 {
    if args.child {
        let Some(state) = args.state.clone() else {
            eprintln!("mezz stress --child: --state is required");
            return 2;
        };
        let cfg = ChildConfig {
            db: args.db,
            state,
            round: args.round,
            seed: args.seed,
            ops: args.ops_per_round,
            keys: args.keys,
            preset: args.preset,
            opts: args.opts,
        };
        return child_main(&cfg);
    }
    let mut args = args;
    // A preset with an NVM tier gets one next to the database unless told otherwise.
    if !args
        .opts
        .iter()
        .any(|o| o.trim_start().starts_with("nvm_dir="))
        && stress_options(&args.preset, &args.opts).is_err()
    {
        let mut with_nvm = args.opts.clone();
        with_nvm.push(format!(
            "nvm_dir={}",
            args.db.with_extension("nvm").display()
        ));
        if stress_options(&args.preset, &with_nvm).is_ok() {
            args.opts = with_nvm;
        }
    }
    if let Err(e) = stress_options(&args.preset, &args.opts) {
        eprintln!("mezz stress: {e}");
        return 2;
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mezz stress: cannot find the mezz executable: {e}");
            return 2;
        }
    };
    let cfg = StressConfig {
        ops_per_round: args.ops_per_round,
        keys: args.keys,
        preset: args.preset,
        opts: args.opts,
        max_kill_delay: Duration::from_millis(args.max_kill_delay_ms),
        verify_every: args.verify_every,
        verbose: !args.quiet,
        ..StressConfig::new(args.db, args.rounds, args.seed)
    };
    let spawn = |child: &ChildConfig| {
        Command::new(&exe)
            .arg("stress")
            .arg("--child")
            .args(child.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
    };
    match run_parent(&cfg, spawn) {
        Ok(summary) => {
            println!("{summary}");
            0
        }
        Err(e @ StressFailure::Setup(_)) => {
            eprintln!("mezz {e}");
            2
        }
        Err(e) => {
            eprintln!("mezz stress: FAILED: {e}");
            1
        }
    }
}
