//! `mezz stress`: the kill -9 crash harness (see `mezz_testkit::stress`).
//!
//! `mezz stress --db DIR --rounds N --seed S [--preset P] [--keys K] [--opt name=value ...]`
//! starts this same executable again as a child (`mezz stress --child ...`, a hidden mode)
//! that prints an opening line, opens the database, prints a ready line and writes until
//! it is killed. Once the ready line arrives the parent waits a random delay
//! (`--max-kill-delay-ms`, drawn from the seed), kills the child with SIGKILL, reopens the
//! database and checks every key against the expected-state file `DIR.expected`; then it
//! starts the next round. A second run on the same directory continues where the first
//! stopped.
//!
//! In `--open-kill-percent P` % of the rounds (default 10, drawn from the round's seed; 0:
//! none) the kill is an *open kill* instead: it comes a random delay of up to
//! `--max-open-kill-delay-ms` (default 5) after the opening line, so that it falls inside
//! `Db::open` (recovery) or just after it. The summary counts both kinds: `K kills (P% of
//! rounds; O during open, A just after it)`, where O open kills struck before the child
//! printed its ready line and A after it (both included in K).
//!
//! `--ops-per-round M` caps a child's ops (default: no cap); a child that reaches the cap
//! exits cleanly, which tests no crash. The summary counts rounds, kills and clean exits,
//! and the run fails when clean exits are more than 10% of the rounds, unless
//! `--allow-clean-exits` is given.
//!
//! Exit codes: 0 when every round passed (a summary goes to stdout); 1 when a check failed
//! (the message names round, seed and key: `round R seed S key K: expected version V
//! (pending P), found F`), a child failed or was not killed in time, or too few rounds
//! killed the child (the summary still goes to stdout); 2 for a usage or setup error (among
//! them a `DIR.expected` that records writes beside a missing or empty DIR: the database it
//! belonged to is gone, so checking against it would report false losses). In
//! child mode: the child's own codes (0 after an ops cap, 2 for a violation, 3 for other
//! errors, 4 when not killed in time).
//!
//! Thread-safety: single-threaded.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use mezz_testkit::stress::{
    ChildConfig, DEFAULT_MAX_OPEN_KILL_DELAY_MS, DEFAULT_OPEN_KILL_PERCENT, StressConfig,
    StressFailure, child_main, run_parent, stress_options,
};

/// Arguments of `mezz stress`.
#[derive(Debug, Clone, clap::Args)]
pub struct StressArgs {
    /// The database directory (created if missing). The expected state is kept beside it,
    /// in `<DIR>.expected`.
    #[arg(long, value_name = "DIR")]
    pub db: PathBuf,
    /// Rounds to run: each starts a child, kills it while it writes (or while it opens the
    /// database, see `--open-kill-percent`), reopens and verifies.
    #[arg(long, default_value_t = 10)]
    pub rounds: u64,
    /// Base seed; round R runs with a seed derived from it and R (printed on failure).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Start from this preset's options (default: leveldb); the harness then sets small
    /// memtables and tables (64 KiB) unless `--opt` overrides them.
    #[arg(long, default_value = "leveldb")]
    pub preset: String,
    /// Safety cap on a child's ops (0: no cap). A child runs until it is killed; one that
    /// reaches the cap first exits cleanly, which tests no crash and counts as a clean exit.
    #[arg(long, default_value_t = 0, value_name = "M")]
    pub ops_per_round: u64,
    /// Size of the key space (keys `k0000000` ..).
    #[arg(long, default_value_t = 1000)]
    pub keys: u32,
    /// Column families the keys are spread over (key `k` in family `k % N`; batches then
    /// span families). 1: the default family only.
    #[arg(long, default_value_t = 1)]
    pub families: u32,
    /// Set one engine option, `name=value` (repeatable).
    #[arg(long = "opt", value_name = "NAME=VALUE")]
    pub opts: Vec<String>,
    /// Once the child reports that its workload started, it is killed after a random delay
    /// (drawn from the seed) of up to this many milliseconds. A child still running 60 s
    /// past this stops by itself and fails the run.
    #[arg(long, default_value_t = 2000)]
    pub max_kill_delay_ms: u64,
    /// Percentage of the rounds (drawn from each round's seed) whose child is killed while
    /// it opens and recovers the database instead: a random delay of up to
    /// `--max-open-kill-delay-ms` after it reports that it is about to open (0: never). An
    /// open kill counts as a kill; the summary reports those that struck during the open and
    /// just after it apart.
    #[arg(long, default_value_t = DEFAULT_OPEN_KILL_PERCENT, value_name = "P",
          value_parser = clap::value_parser!(u8).range(0..=100))]
    pub open_kill_percent: u8,
    /// Largest delay, in milliseconds, between the child's report that it is about to open
    /// the database and an open kill (drawn in microseconds). About the time a stress
    /// database takes to open, so that most open kills fall during the open.
    #[arg(long, default_value_t = DEFAULT_MAX_OPEN_KILL_DELAY_MS)]
    pub max_open_kill_delay_ms: u64,
    /// Pass even when more than 10% of the rounds end in a clean exit instead of a kill
    /// (for runs that cap `--ops-per-round` on purpose).
    #[arg(long)]
    pub allow_clean_exits: bool,
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
    /// Stop, as not killed, this long after the workload started (child mode; 0: never).
    #[arg(long, hide = true, default_value_t = 0)]
    pub time_limit_ms: u64,
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
            time_limit_ms: args.time_limit_ms,
            keys: args.keys,
            preset: args.preset,
            opts: args.opts,
            families: args.families,
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
        open_kill_percent: args.open_kill_percent,
        max_open_kill_delay: Duration::from_millis(args.max_open_kill_delay_ms),
        allow_clean_exits: args.allow_clean_exits,
        verify_every: args.verify_every,
        verbose: !args.quiet,
        families: args.families,
        ..StressConfig::new(args.db, args.rounds, args.seed)
    };
    let spawn = |child: &ChildConfig| {
        Command::new(&exe)
            .arg("stress")
            .arg("--child")
            .args(child.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
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
        Err(StressFailure::TooFewKills(summary)) => {
            println!("{summary}");
            eprintln!(
                "mezz stress: FAILED: {}",
                StressFailure::TooFewKills(summary)
            );
            1
        }
        Err(e) => {
            eprintln!("mezz stress: FAILED: {e}");
            1
        }
    }
}
