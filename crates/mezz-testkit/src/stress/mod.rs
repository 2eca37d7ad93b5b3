//! The kill -9 crash harness behind `mezz stress`: a parent process repeatedly starts a
//! child that writes to a real database on disk, kills it with SIGKILL while it works,
//! reopens the database and checks every key against an expected-state file.
//!
//! Owns: the child workload ([`run_child`], [`child_main`]), the parent loop
//! ([`run_parent`]), the per-round check ([`verify_round`], [`check_slots`]) and their
//! configuration and report types. The expected-state file lives in [`state`]; the
//! self-checking keys and values in [`value`].
//!
//! The child prints [`OPENING_LINE`] on stdout just before it calls `Db::open`, then
//! opens the database, prints [`READY_LINE`] and runs a seeded random workload on keys
//! `0..keys`: puts, deletes, batches of distinct keys, `sync = true` writes, flushes, range
//! compactions, point reads and bounded forward and backward scans. Before each write it
//! marks the keys pending in the expected-state file (with fresh versions); after the
//! acknowledgement it commits them. Its reads must see exactly the committed state (it is
//! the only writer).
//!
//! The child does not stop by itself: it runs until it is killed. In most rounds the parent
//! waits for the ready line, so that a slow start (process creation, recovery at open)
//! does not use up the delay, then sleeps a delay drawn from the seed (up to
//! [`StressConfig::max_kill_delay`]) and sends SIGKILL; the kill therefore falls in the
//! workload. In a share of the rounds ([`StressConfig::open_kill_percent`], default
//! [`DEFAULT_OPEN_KILL_PERCENT`] %, chosen from the round's seed by
//! [`StressConfig::open_kill`]) the parent instead sends SIGKILL a short delay (up to
//! [`StressConfig::max_open_kill_delay`]) after it reads the opening line: an *open kill*,
//! which falls in recovery (WAL replay, the new manifest, removal of obsolete files, NVM
//! memtable recovery) or, when the open finished first, in the first moments after it
//! (the child is killed all the same). Whether the child had printed its ready line when it
//! died tells the two apart exactly; the report counts open kills of each kind.
//!
//! Only the safety limits end a child otherwise: an optional cap on ops
//! ([`ChildConfig::ops`], `--ops-per-round`; the child then closes the database and exits
//! 0, a *clean exit* that tests no crash), a time limit well past the largest delay, and
//! the parent's death (both exit [`EXIT_NOT_KILLED`], a failure). The report counts kills
//! and clean exits apart, and the run fails when clean exits are more than
//! [`MAX_CLEAN_EXIT_PERCENT`] % of the rounds, unless
//! [`StressConfig::allow_clean_exits`] is set.
//!
//! After the kill, for every key the database must hold the committed version, or the
//! pending version if the slot is pending (a kill is a process crash: the operating system
//! keeps every byte written, so every acknowledged write survives, `sync` or not). The keys
//! of one batch must be all applied or none, and all applied once any of them was committed.
//! A scan must list the keys in order and agree with the point reads. The parent then
//! settles pending slots to what it found and starts the next round with a seed derived
//! from the base seed and the round number; every few rounds it also runs `Db::verify`.
//! A round's workload, its kind of kill (open kill or not) and its kill delay come from
//! the seed; the exact kill instant depends on timing.
//!
//! Invariants: only one process writes the expected-state file at a time (the child while
//! it runs, the parent between children); versions of a key only grow, so a stale or
//! resurrected value never passes for a pending one.
//!
//! Thread-safety: single-threaded in the child; the parent reads the child's stdout on a
//! helper thread.

pub mod state;
pub mod value;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mezzanine::{ColumnFamily, Db, Options, Preset, ReadOptions, WriteBatch, WriteOptions};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

pub use state::{ExpectedState, Slot};
use value::{decode_value, encode_value, key_bytes, parse_key};

use crate::crash::run_seed;

/// Environment variable a test binary uses to recognise that it was started as a child.
pub const CHILD_ENV: &str = "MEZZ_STRESS_CHILD";
/// Exit code of a child that found a violation.
pub const EXIT_VIOLATION: i32 = 2;
/// Exit code of a child that failed for another reason (bad arguments, an engine error).
pub const EXIT_ERROR: i32 = 3;
/// Exit code of a child that stopped because it was not killed in time: it reached its
/// time limit, or its parent is gone.
pub const EXIT_NOT_KILLED: i32 = 4;
/// The line a child prints on stdout just before it calls `Db::open`. In an open kill round
/// the parent's kill delay starts when it reads a line ending with this.
pub const OPENING_LINE: &str = "mezz-stress: opening the database";
/// The line a child prints on stdout once the database is open, just before its first op.
/// In other rounds the parent's kill delay starts when it reads a line ending with this.
pub const READY_LINE: &str = "mezz-stress: workload started";
/// How long the parent waits for [`READY_LINE`] before it kills the child and fails.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// A child's time limit is the largest kill delay plus this.
pub const CHILD_GRACE: Duration = Duration::from_secs(60);
/// A run fails when more than this percentage of its rounds ended in a clean exit (unless
/// [`StressConfig::allow_clean_exits`]).
pub const MAX_CLEAN_EXIT_PERCENT: u64 = 10;
/// Default share of the rounds, in percent, whose kill is an open kill (see
/// [`StressConfig::open_kill`]).
pub const DEFAULT_OPEN_KILL_PERCENT: u8 = 10;
/// Default of [`StressConfig::max_open_kill_delay`], in milliseconds: about the time a
/// stress database takes to open (1 to 5 ms on the development machine).
pub const DEFAULT_MAX_OPEN_KILL_DELAY_MS: u64 = 5;
/// Default of [`StressConfig::max_open_kill_delay`].
pub const DEFAULT_MAX_OPEN_KILL_DELAY: Duration =
    Duration::from_millis(DEFAULT_MAX_OPEN_KILL_DELAY_MS);
/// Mixed into a round's seed for the open-kill draw, so that it is independent of the
/// workload drawn from the same seed.
const OPEN_KILL_SALT: u64 = 0x6f70_656e_6b69_6c6c;

/// What one child process does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildConfig {
    /// The database directory.
    pub db: PathBuf,
    /// The expected-state file.
    pub state: PathBuf,
    /// The round number (for messages).
    pub round: u64,
    /// Seed of this round's workload.
    pub seed: u64,
    /// Cap on ops: after this many the child closes the database and exits cleanly (if
    /// not killed first). 0: no cap, the child runs until killed.
    pub ops: u64,
    /// The child gives up with [`EXIT_NOT_KILLED`] if it is still running this many
    /// milliseconds after printing [`READY_LINE`]. 0: no limit.
    pub time_limit_ms: u64,
    /// Size of the key space; must match the expected-state file.
    pub keys: u32,
    /// Preset name the options start from.
    pub preset: String,
    /// Option overrides, each `name=value` as `Options::set` takes them.
    pub opts: Vec<String>,
    /// Column families the keys are spread over (key `k` lives in family `k % families`:
    /// 0 is the default family, `i` the family `cf<i>`, with the same options); a batch
    /// then spans families. 1: the default family only.
    pub families: u32,
}

impl ChildConfig {
    /// The command-line arguments that describe this configuration (what `mezz stress
    /// --child` and [`ChildConfig::from_args`] accept).
    #[must_use]
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            "--db".to_string(),
            self.db.to_string_lossy().into_owned(),
            "--state".to_string(),
            self.state.to_string_lossy().into_owned(),
            "--round".to_string(),
            self.round.to_string(),
            "--seed".to_string(),
            self.seed.to_string(),
            "--ops-per-round".to_string(),
            self.ops.to_string(),
            "--time-limit-ms".to_string(),
            self.time_limit_ms.to_string(),
            "--keys".to_string(),
            self.keys.to_string(),
            "--preset".to_string(),
            self.preset.clone(),
        ];
        for o in &self.opts {
            a.push("--opt".to_string());
            a.push(o.clone());
        }
        if self.families != 1 {
            a.push("--families".to_string());
            a.push(self.families.to_string());
        }
        a
    }

    /// Parses what [`ChildConfig::to_args`] produced.
    ///
    /// # Errors
    /// A message naming the bad or missing argument.
    pub fn from_args(args: &[String]) -> Result<Self, String> {
        let mut c = ChildConfig {
            db: PathBuf::new(),
            state: PathBuf::new(),
            round: 0,
            seed: 0,
            ops: 0,
            time_limit_ms: 0,
            keys: 0,
            preset: Preset::Leveldb.name().to_string(),
            opts: Vec::new(),
            families: 1,
        };
        let (mut db, mut st) = (false, false);
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let v = it
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))?
                .clone();
            let num = |v: &str| -> Result<u64, String> {
                v.parse().map_err(|_| format!("{flag}: bad number {v:?}"))
            };
            match flag.as_str() {
                "--db" => {
                    c.db = PathBuf::from(v);
                    db = true;
                }
                "--state" => {
                    c.state = PathBuf::from(v);
                    st = true;
                }
                "--round" => c.round = num(&v)?,
                "--seed" => c.seed = num(&v)?,
                "--ops-per-round" => c.ops = num(&v)?,
                "--time-limit-ms" => c.time_limit_ms = num(&v)?,
                "--keys" => {
                    c.keys =
                        u32::try_from(num(&v)?).map_err(|_| format!("--keys {v} too large"))?;
                }
                "--preset" => c.preset = v,
                "--opt" => c.opts.push(v),
                "--families" => {
                    c.families = u32::try_from(num(&v)?)
                        .ok()
                        .filter(|&f| f >= 1)
                        .ok_or_else(|| format!("--families {v}: 1 or more"))?;
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if !db || !st {
            return Err("--db and --state are required".into());
        }
        Ok(c)
    }
}

/// What `mezz stress` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StressConfig {
    /// The database directory.
    pub db: PathBuf,
    /// Rounds (child runs) to do.
    pub rounds: u64,
    /// Base seed; round `r` uses a seed derived from it and `r`.
    pub seed: u64,
    /// Safety cap on a child's ops: a child that reaches it exits cleanly instead of being
    /// killed. Default 0: no cap, every child runs until killed.
    pub ops_per_round: u64,
    /// Size of the key space. Default 1000.
    pub keys: u32,
    /// Preset name. Default `leveldb`.
    pub preset: String,
    /// Option overrides, `name=value`, applied after [`stress_options`]' defaults.
    pub opts: Vec<String>,
    /// Column families the keys are spread over (see [`ChildConfig::families`]).
    /// Default 1.
    pub families: u32,
    /// Once the child reports that its workload started, it is killed after a random delay
    /// (drawn from the seed) of up to this. Default 2 s.
    pub max_kill_delay: Duration,
    /// Share of the rounds, in percent (0 to 100), whose child is killed by an *open kill*
    /// instead: a short delay after it reports that it is about to open the database (see
    /// [`StressConfig::open_kill`]). 0: none. Default [`DEFAULT_OPEN_KILL_PERCENT`].
    pub open_kill_percent: u8,
    /// An open kill comes after a random delay (drawn from the round's seed) of up to this
    /// after the child's [`OPENING_LINE`]. Default [`DEFAULT_MAX_OPEN_KILL_DELAY`], about
    /// the time a stress database takes to open, so that most open kills fall inside
    /// `Db::open` and the others just after it.
    pub max_open_kill_delay: Duration,
    /// Do not fail the run when more than [`MAX_CLEAN_EXIT_PERCENT`] % of the rounds end in
    /// a clean exit (for runs that cap `ops_per_round` on purpose). Default false.
    pub allow_clean_exits: bool,
    /// Run `Db::verify` after every this many rounds (and after the last). Default 3.
    pub verify_every: u64,
    /// Print one line per round to stderr.
    pub verbose: bool,
}

impl StressConfig {
    /// The defaults for a database at `db`.
    #[must_use]
    pub fn new(db: impl Into<PathBuf>, rounds: u64, seed: u64) -> Self {
        Self {
            db: db.into(),
            rounds,
            seed,
            ops_per_round: 0,
            keys: 1000,
            preset: Preset::Leveldb.name().to_string(),
            opts: Vec::new(),
            families: 1,
            max_kill_delay: Duration::from_secs(2),
            open_kill_percent: DEFAULT_OPEN_KILL_PERCENT,
            max_open_kill_delay: DEFAULT_MAX_OPEN_KILL_DELAY,
            allow_clean_exits: false,
            verify_every: 3,
            verbose: false,
        }
    }

    /// The expected-state file: beside the database directory, named `<dir>.expected`.
    #[must_use]
    pub fn state_path(&self) -> PathBuf {
        let db: PathBuf = self.db.components().collect();
        let mut s = db.into_os_string();
        s.push(".expected");
        PathBuf::from(s)
    }

    /// The child configuration of round `round`.
    #[must_use]
    pub fn child(&self, round: u64) -> ChildConfig {
        ChildConfig {
            db: self.db.clone(),
            state: self.state_path(),
            round,
            seed: run_seed(self.seed, round),
            ops: self.ops_per_round,
            time_limit_ms: u64::try_from((self.max_kill_delay + CHILD_GRACE).as_millis())
                .unwrap_or(u64::MAX),
            keys: self.keys,
            preset: self.preset.clone(),
            opts: self.opts.clone(),
            families: self.families,
        }
    }

    /// Whether round `round` ends in an open kill, and if so its delay after the child's
    /// [`OPENING_LINE`]. Both are drawn from the round's seed (the seed of
    /// [`StressConfig::child`]), so a round's kind of kill does not depend on the rounds
    /// before it: a round is an open kill with probability `open_kill_percent` %, and its
    /// delay is uniform in `0..=max_open_kill_delay` (whole microseconds).
    #[must_use]
    pub fn open_kill(&self, round: u64) -> Option<Duration> {
        let mut rng =
            Xoshiro256PlusPlus::seed_from_u64(run_seed(self.seed, round) ^ OPEN_KILL_SALT);
        let hit = rng.random_range(0..100u8) < self.open_kill_percent;
        let max_us = u64::try_from(self.max_open_kill_delay.as_micros()).unwrap_or(u64::MAX);
        let us = rng.random_range(0..=max_us);
        hit.then(|| Duration::from_micros(us))
    }
}

/// The options both processes use: the preset, then small memtables and tables so that a
/// round of a few thousand ops flushes and compacts (write buffer 64 KiB, table 64 KiB,
/// L1 256 KiB, L0 trigger 2; NVM memtables 1 MiB in a 16 MiB pool), then `opts`
/// (`name=value`).
///
/// # Errors
/// A message for an unknown preset or option, or options that do not validate.
pub fn stress_options(preset: &str, opts: &[String]) -> Result<Options, String> {
    let mut o = Options::preset(Preset::parse(preset).map_err(|e| e.to_string())?);
    o.write_buffer_size = 64 * 1024;
    o.target_file_size = 64 * 1024;
    o.max_bytes_for_level_base = 256 * 1024;
    o.level0_compaction_trigger = 2;
    // NVM presets: NVM memtables of 1 MiB in a 16 MiB pool.
    o.nvm_memtable_size = 1 << 20;
    o.nvm_capacity = 16 << 20;
    crate::option_sets::with_small_matrix(&mut o);
    for kv in opts {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--opt {kv:?}: expected name=value"))?;
        o.set(k.trim(), v).map_err(|e| e.to_string())?;
    }
    o.validate().map_err(|e| e.to_string())?;
    Ok(o)
}

/// What a key was found to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// No value.
    Absent,
    /// A valid value of this version.
    Version(u64),
    /// A value that does not decode, or belongs to another key.
    Bad(String),
}

impl Found {
    /// Decodes a value read for key `k`.
    #[must_use]
    pub fn from_value(k: u32, v: Option<&[u8]>) -> Found {
        match v.map(decode_value) {
            None => Found::Absent,
            Some(Ok((vk, version))) if vk == k => Found::Version(version),
            Some(Ok((vk, version))) => {
                Found::Bad(format!("the value of key {vk} (version {version})"))
            }
            Some(Err(e)) => Found::Bad(format!("a corrupt value ({e})")),
        }
    }

    /// The version, `None` for no value or a bad value.
    #[must_use]
    pub fn version(&self) -> Option<u64> {
        match self {
            Found::Version(v) => Some(*v),
            Found::Absent | Found::Bad(_) => None,
        }
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Absent => f.write_str("none"),
            Found::Version(v) => write!(f, "{v}"),
            Found::Bad(s) => f.write_str(s),
        }
    }
}

/// A key holding what it must not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Round number.
    pub round: u64,
    /// The round's seed.
    pub seed: u64,
    /// Key index.
    pub key: u32,
    /// The committed version (`None`: no value).
    pub expected: Option<u64>,
    /// The pending write, if any (`Some(None)`: a delete).
    pub pending: Option<Option<u64>>,
    /// What was found.
    pub found: Found,
    /// Where it was seen (after a kill, a live read in the child, ...).
    pub context: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let expected = self
            .expected
            .map_or_else(|| "none".to_string(), |v| v.to_string());
        let pending = match self.pending {
            None => "-".to_string(),
            Some(None) => "delete".to_string(),
            Some(Some(v)) => v.to_string(),
        };
        write!(
            f,
            "round {} seed {} key {}: expected version {expected} (pending {pending}), found {}",
            self.round, self.seed, self.key, self.found
        )?;
        if !self.context.is_empty() {
            write!(f, " [{}]", self.context)?;
        }
        Ok(())
    }
}

/// Why a stress run failed.
#[derive(Debug)]
pub enum StressFailure {
    /// A key holds a value it must not.
    Violation(Violation),
    /// The keys of one batch were not applied all or none.
    TornBatch {
        /// Round number.
        round: u64,
        /// The round's seed.
        seed: u64,
        /// The batch id.
        batch: u64,
        /// Key by key, what was pending and what was found.
        detail: String,
    },
    /// The engine returned an error.
    Db {
        /// Round number.
        round: u64,
        /// The round's seed.
        seed: u64,
        /// What was being done.
        what: String,
        /// The error.
        error: String,
    },
    /// A child exited with an error (not killed, not a clean exit).
    Child {
        /// Round number.
        round: u64,
        /// The round's seed.
        seed: u64,
        /// Its exit status.
        status: String,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// A child stopped because it was not killed in time (its time limit passed, or its
    /// parent is gone).
    NotKilled {
        /// Round number.
        round: u64,
        /// The round's seed.
        seed: u64,
        /// What happened.
        detail: String,
    },
    /// Every round passed its checks, but too many children exited cleanly (more than
    /// [`MAX_CLEAN_EXIT_PERCENT`] % of the rounds): the run tested too few crashes.
    TooFewKills(StressSummary),
    /// Bad configuration, or an I/O error of the harness itself.
    Setup(String),
}

impl fmt::Display for StressFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StressFailure::Violation(v) => v.fmt(f),
            StressFailure::TornBatch {
                round,
                seed,
                batch,
                detail,
            } => write!(
                f,
                "round {round} seed {seed} batch {batch}: torn batch: {detail}"
            ),
            StressFailure::Db {
                round,
                seed,
                what,
                error,
            } => write!(f, "round {round} seed {seed}: {what}: {error}"),
            StressFailure::Child {
                round,
                seed,
                status,
                stderr,
            } => write!(
                f,
                "round {round} seed {seed}: child failed ({status}): {}",
                stderr.trim()
            ),
            StressFailure::NotKilled {
                round,
                seed,
                detail,
            } => write!(f, "round {round} seed {seed}: child not killed: {detail}"),
            StressFailure::TooFewKills(s) => write!(
                f,
                "only {} of {} rounds killed the child; {} children reached the \
                 --ops-per-round cap and exited cleanly (more than {MAX_CLEAN_EXIT_PERCENT}% \
                 of the rounds): raise or drop the cap, or pass --allow-clean-exits",
                s.kills, s.rounds, s.exits
            ),
            StressFailure::Setup(s) => write!(f, "stress: {s}"),
        }
    }
}

impl std::error::Error for StressFailure {}

impl From<Violation> for StressFailure {
    fn from(v: Violation) -> Self {
        StressFailure::Violation(v)
    }
}

/// Checks what was found for every key against the slots: each key holds its committed
/// version or its pending one, and each batch's pending keys were applied all or none (all,
/// if any key of the batch was committed).
///
/// # Errors
/// The first violation (by key), then the first torn batch.
pub fn check_slots(
    slots: &[Slot],
    found: &[Found],
    round: u64,
    seed: u64,
) -> Result<(), StressFailure> {
    if slots.len() != found.len() {
        return Err(StressFailure::Setup(format!(
            "{} slots but {} keys found",
            slots.len(),
            found.len()
        )));
    }
    for (k, (s, f)) in (0u32..).zip(slots.iter().zip(found)) {
        let ok = !matches!(f, Found::Bad(_)) && s.allows(f.version());
        if !ok {
            return Err(Violation {
                round,
                seed,
                key: k,
                expected: s.committed,
                pending: s.pending,
                found: f.clone(),
                context: "after reopen".into(),
            }
            .into());
        }
    }
    // Batch id -> (acknowledged, [(key, pending, applied)]).
    type Members = Vec<(u32, Option<u64>, bool)>;
    let mut batches: BTreeMap<u64, (bool, Members)> = BTreeMap::new();
    for (k, (s, f)) in (0u32..).zip(slots.iter().zip(found)) {
        if s.batch == 0 {
            continue;
        }
        let e = batches.entry(s.batch).or_default();
        e.0 |= s.batch_acked;
        if let Some(p) = s.pending
            && p != s.committed
        {
            e.1.push((k, p, f.version() == p));
        }
    }
    for (batch, (acked, members)) in batches {
        let applied = members.iter().filter(|m| m.2).count();
        let torn = if acked {
            applied != members.len()
        } else {
            applied != 0 && applied != members.len()
        };
        if torn {
            let detail = members
                .iter()
                .map(|(k, p, a)| {
                    let p = p.map_or_else(|| "delete".to_string(), |v| v.to_string());
                    format!(
                        "key {k} pending {p} {}",
                        if *a { "applied" } else { "not applied" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let detail = if acked {
                format!("acknowledged (some keys committed) but {detail}")
            } else {
                detail
            };
            return Err(StressFailure::TornBatch {
                round,
                seed,
                batch,
                detail,
            });
        }
    }
    Ok(())
}

/// Reads every key of an open database (point reads, plus a full scan that must list keys
/// in order, inside the key space, and agree with the point reads), then checks them with
/// [`check_slots`].
///
/// # Errors
/// A violation, a torn batch, or an engine error.
pub fn verify_round(
    db: &Db,
    st: &ExpectedState,
    round: u64,
    seed: u64,
) -> Result<Vec<Found>, StressFailure> {
    verify_round_in(db, st, round, seed, 1)
}

/// The column families of a stress database with keys spread over `families` (see
/// [`ChildConfig::families`]), created if missing: index `i` holds family `i`.
///
/// # Errors
/// An engine error creating one.
pub fn stress_families(
    db: &Db,
    options: &Options,
    families: u32,
) -> mezzanine::Result<Vec<ColumnFamily>> {
    (0..families.max(1))
        .map(|i| {
            if i == 0 {
                return Ok(db.default_column_family());
            }
            let name = format!("cf{i}");
            match db.column_family(&name) {
                Some(cf) => Ok(cf),
                None => db.create_column_family(&name, options),
            }
        })
        .collect()
}

/// [`verify_round`] of a database whose keys are spread over `families` column families:
/// every key read from its family, and a full scan of every family, which must hold only
/// its own keys.
///
/// # Errors
/// As [`verify_round`].
pub fn verify_round_in(
    db: &Db,
    st: &ExpectedState,
    round: u64,
    seed: u64,
    families: u32,
) -> Result<Vec<Found>, StressFailure> {
    let dberr = |what: String, e: mezzanine::Error| StressFailure::Db {
        round,
        seed,
        what,
        error: e.to_string(),
    };
    let keys = st.keys();
    let families = families.max(1);
    let cfs: Vec<ColumnFamily> = (0..families)
        .map(|i| {
            if i == 0 {
                Some(db.default_column_family())
            } else {
                db.column_family(&format!("cf{i}"))
            }
        })
        .collect::<Option<_>>()
        .ok_or_else(|| StressFailure::Db {
            round,
            seed,
            what: "column families after reopen".into(),
            error: format!("expected {families}, found {:?}", db.column_families()),
        })?;
    let cf_of = |k: u32| &cfs[(k % families) as usize];
    let mut found = Vec::with_capacity(keys as usize);
    for k in 0..keys {
        let v = db
            .get_cf(cf_of(k), &key_bytes(k))
            .map_err(|e| dberr(format!("get key {k}"), e))?;
        found.push(Found::from_value(k, v.as_deref()));
    }
    check_slots(st.slots(), &found, round, seed)?;
    let mut seen = vec![false; keys as usize];
    let scan_err = |detail: String| StressFailure::Db {
        round,
        seed,
        what: "full scan after reopen".into(),
        error: detail,
    };
    for (fam, cf) in (0u32..).zip(&cfs) {
        let mut it = db
            .cursor_cf(cf, &ReadOptions::default())
            .map_err(|e| dberr("iter".into(), e))?;
        it.seek_to_first();
        let mut prev: Option<u32> = None;
        while it.valid() {
            let Some(k) = parse_key(it.key()).filter(|&k| k < keys && k % families == fam) else {
                return Err(scan_err(format!(
                    "unknown key {:?} in family {fam}",
                    String::from_utf8_lossy(it.key())
                )));
            };
            if prev.is_some_and(|p| p >= k) {
                return Err(scan_err(format!("key {k} after key {prev:?}")));
            }
            let f = Found::from_value(k, Some(it.value()));
            let want = found.get(k as usize).cloned().unwrap_or(Found::Absent);
            if f != want {
                return Err(scan_err(format!(
                    "key {k}: scan found {f}, point read found {want}"
                )));
            }
            if let Some(s) = seen.get_mut(k as usize) {
                *s = true;
            }
            prev = Some(k);
            it.next();
        }
        it.status().map_err(|e| dberr("full scan".into(), e))?;
    }
    for (k, (s, f)) in (0u32..).zip(seen.iter().zip(&found)) {
        if !s && *f != Found::Absent {
            return Err(scan_err(format!(
                "key {k}: point read found {f}, the scan did not list it"
            )));
        }
    }
    Ok(found)
}

/// Counts of a child run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChildReport {
    /// Ops run.
    pub ops: u64,
}

/// The child workload state.
struct ChildRun<'a> {
    cfg: &'a ChildConfig,
    db: Db,
    /// The column family of key `k` is `cfs[k % cfs.len()]`.
    cfs: Vec<ColumnFamily>,
    st: ExpectedState,
    rng: Xoshiro256PlusPlus,
}

impl ChildRun<'_> {
    fn dberr(&self, what: String, e: &mezzanine::Error) -> StressFailure {
        StressFailure::Db {
            round: self.cfg.round,
            seed: self.cfg.seed,
            what,
            error: e.to_string(),
        }
    }

    fn ioerr(&self, e: &io::Error) -> StressFailure {
        StressFailure::Setup(format!("{}: {e}", self.st.path().display()))
    }

    fn violation(&self, k: u32, found: Found, context: String) -> StressFailure {
        let s = self.st.slot(k);
        StressFailure::Violation(Violation {
            round: self.cfg.round,
            seed: self.cfg.seed,
            key: k,
            expected: s.committed,
            pending: s.pending,
            found,
            context,
        })
    }

    fn cf(&self, k: u32) -> &ColumnFamily {
        &self.cfs[k as usize % self.cfs.len()]
    }

    fn value_len(&mut self) -> usize {
        if self.rng.random_bool(0.05) {
            self.rng.random_range(1000..4000)
        } else {
            self.rng.random_range(16..400)
        }
    }

    fn put(&mut self, k: u32, sync: bool) -> Result<(), StressFailure> {
        let v = self.st.begin_put(k, 0).map_err(|e| self.ioerr(&e))?;
        let len = self.value_len();
        let mut b = WriteBatch::new();
        b.put_cf(self.cf(k), &key_bytes(k), &encode_value(k, v, len));
        self.db
            .write(&WriteOptions { sync }, b)
            .map_err(|e| self.dberr(format!("put key {k}"), &e))?;
        self.st.commit(k).map_err(|e| self.ioerr(&e))
    }

    fn delete(&mut self, k: u32, sync: bool) -> Result<(), StressFailure> {
        self.st.begin_delete(k, 0).map_err(|e| self.ioerr(&e))?;
        let mut b = WriteBatch::new();
        b.delete_cf(self.cf(k), &key_bytes(k));
        self.db
            .write(&WriteOptions { sync }, b)
            .map_err(|e| self.dberr(format!("delete key {k}"), &e))?;
        self.st.commit(k).map_err(|e| self.ioerr(&e))
    }

    fn batch(&mut self, sync: bool) -> Result<(), StressFailure> {
        let n = self.rng.random_range(2..=8);
        let keys: BTreeSet<u32> = (0..n)
            .map(|_| self.rng.random_range(0..self.cfg.keys))
            .collect();
        // Unique within this round (the ops counter grows every op); the parent clears
        // batch ids between rounds.
        let id = self.st.ops() + 1;
        let mut b = WriteBatch::new();
        for &k in &keys {
            if self.rng.random_bool(0.7) {
                let v = self.st.begin_put(k, id).map_err(|e| self.ioerr(&e))?;
                let len = self.value_len();
                b.put_cf(self.cf(k), &key_bytes(k), &encode_value(k, v, len));
            } else {
                self.st.begin_delete(k, id).map_err(|e| self.ioerr(&e))?;
                b.delete_cf(self.cf(k), &key_bytes(k));
            }
        }
        self.db
            .write(&WriteOptions { sync }, b)
            .map_err(|e| self.dberr(format!("batch of {} keys", keys.len()), &e))?;
        for k in keys {
            self.st.commit(k).map_err(|e| self.ioerr(&e))?;
        }
        Ok(())
    }

    fn check_get(&mut self, k: u32) -> Result<(), StressFailure> {
        let v = self
            .db
            .get_cf(self.cf(k), &key_bytes(k))
            .map_err(|e| self.dberr(format!("get key {k}"), &e))?;
        let f = Found::from_value(k, v.as_deref());
        if f.version() != self.st.slot(k).committed || matches!(f, Found::Bad(_)) {
            return Err(self.violation(k, f, "live point read in the child".into()));
        }
        Ok(())
    }

    /// Scans `[lo, hi)` forward or backward, with iterator bounds or with seeks, and checks
    /// that exactly the committed keys of the range come out, in order, at their versions.
    fn check_scan(&mut self) -> Result<(), StressFailure> {
        let keys = self.cfg.keys;
        let lo = self.rng.random_range(0..keys);
        let hi = lo.saturating_add(self.rng.random_range(1..=64)).min(keys);
        let forward = self.rng.random_bool(0.6);
        let bounded = self.rng.random_bool(0.5);
        // With column families: the scan reads one family, which holds every
        // `families`-th key.
        let families = self.cfs.len() as u32;
        let fam = if families > 1 {
            self.rng.random_range(0..families)
        } else {
            0
        };
        let cf = self.cfs[fam as usize].clone();
        let mut ro = ReadOptions::default();
        if bounded {
            ro.lower_bound = Some(key_bytes(lo));
            ro.upper_bound = Some(key_bytes(hi));
        }
        let ctx = format!(
            "live {} {} scan of keys {lo}..{hi} in the child",
            if forward { "forward" } else { "backward" },
            if bounded { "bounded" } else { "seek" }
        );
        let mut it = self
            .db
            .cursor_cf(&cf, &ro)
            .map_err(|e| self.dberr("iter".into(), &e))?;
        match (forward, bounded) {
            (true, true) => it.seek_to_first(),
            (true, false) => it.seek(&key_bytes(lo)),
            (false, true) => it.seek_to_last(),
            (false, false) => it.seek_for_prev(&key_bytes(hi.saturating_sub(1))),
        }
        let mut seen: Vec<(u32, Found)> = Vec::new();
        while it.valid() {
            let Some(k) = parse_key(it.key()) else {
                let shown = String::from_utf8_lossy(it.key()).into_owned();
                return Err(self.dberr(
                    ctx,
                    &mezzanine::Error::InvalidArgument(format!("unknown key {shown:?}")),
                ));
            };
            if k % families != fam {
                return Err(self.violation(
                    k,
                    Found::from_value(k, Some(it.value())),
                    format!("{ctx}: a key of another column family"),
                ));
            }
            if k < lo || k >= hi {
                if bounded {
                    return Err(self.violation(
                        k,
                        Found::from_value(k, Some(it.value())),
                        format!("{ctx}: key outside the bounds"),
                    ));
                }
                break;
            }
            seen.push((k, Found::from_value(k, Some(it.value()))));
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        it.status().map_err(|e| self.dberr(ctx.clone(), &e))?;
        drop(it);
        if !forward {
            seen.reverse();
        }
        if let Some(w) = seen
            .windows(2)
            .find(|w| w.first().map(|a| a.0) >= w.get(1).map(|b| b.0))
        {
            let k = w.get(1).map_or(0, |b| b.0);
            return Err(self.violation(k, Found::Bad("out of order".into()), ctx));
        }
        let mut seen = seen.into_iter().peekable();
        for k in (lo..hi).filter(|k| k % families == fam) {
            let want = self.st.slot(k).committed;
            let got = match seen.peek() {
                Some((sk, _)) if *sk == k => seen.next().map_or(Found::Absent, |(_, f)| f),
                _ => Found::Absent,
            };
            if matches!(got, Found::Bad(_)) || got.version() != want {
                return Err(self.violation(k, got, ctx));
            }
        }
        Ok(())
    }

    fn step(&mut self) -> Result<(), StressFailure> {
        let keys = self.cfg.keys;
        let sync = self.rng.random_bool(0.05);
        let k = self.rng.random_range(0..keys);
        match self.rng.random_range(0..1000u32) {
            0..400 => self.put(k, sync)?,
            400..550 => self.delete(k, sync)?,
            550..700 => self.batch(sync)?,
            700..880 => self.check_get(k)?,
            880..950 => self.check_scan()?,
            950..990 => self.put(k, true)?,
            990..996 => self
                .db
                .flush()
                .map_err(|e| self.dberr("flush".into(), &e))?,
            _ => {
                let hi = k.saturating_add(self.rng.random_range(1..200)).min(keys);
                let (a, b) = (key_bytes(k), key_bytes(hi));
                self.db
                    .compact_range_cf(self.cf(k), Some(&a), Some(&b))
                    .map_err(|e| self.dberr("compact_range".into(), &e))?;
            }
        }
        self.st.add_ops(1).map_err(|e| self.ioerr(&e))
    }
}

/// A point in a child's start that it reports (see [`run_child`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStage {
    /// About to call `Db::open` (the options and the expected-state file are checked).
    Opening,
    /// The database is open; the workload starts.
    Started,
}

impl ChildStage {
    /// The line [`child_main`] prints for this stage: [`OPENING_LINE`] or [`READY_LINE`].
    #[must_use]
    pub fn line(self) -> &'static str {
        match self {
            ChildStage::Opening => OPENING_LINE,
            ChildStage::Started => READY_LINE,
        }
    }
}

/// Runs a child: checks the options and opens the expected-state file, calls
/// `report(ChildStage::Opening)`, opens the database, calls `report(ChildStage::Started)`
/// ([`child_main`] prints [`ChildStage::line`] for each), then runs the workload until it
/// is killed. Only the safety limits end it: after `cfg.ops` ops (if not 0) it closes the
/// database and returns; past `cfg.time_limit_ms` (if not 0) after the start, or once its
/// parent process is gone, it stops with [`StressFailure::NotKilled`].
///
/// # Errors
/// A violation seen by a live read, an engine error, a bad setup, an error of `report`, or
/// a child not killed in time.
pub fn run_child(
    cfg: &ChildConfig,
    mut report: impl FnMut(ChildStage) -> io::Result<()>,
) -> Result<ChildReport, StressFailure> {
    let options = stress_options(&cfg.preset, &cfg.opts).map_err(StressFailure::Setup)?;
    let st = ExpectedState::open(&cfg.state)
        .map_err(|e| StressFailure::Setup(format!("{}: {e}", cfg.state.display())))?;
    if st.keys() != cfg.keys {
        return Err(StressFailure::Setup(format!(
            "expected-state file has {} keys, --keys is {}",
            st.keys(),
            cfg.keys
        )));
    }
    if let Some(k) = st.slots().iter().position(|s| s.pending.is_some()) {
        return Err(StressFailure::Setup(format!(
            "expected-state file has a pending slot (key {k}): the parent did not settle it"
        )));
    }
    let parent = std::os::unix::process::parent_id();
    report(ChildStage::Opening)
        .map_err(|e| StressFailure::Setup(format!("reporting the open: {e}")))?;
    let db = Db::open(&cfg.db, options.clone()).map_err(|e| StressFailure::Db {
        round: cfg.round,
        seed: cfg.seed,
        what: "open in the child".into(),
        error: e.to_string(),
    })?;
    let cfs = stress_families(&db, &options, cfg.families).map_err(|e| StressFailure::Db {
        round: cfg.round,
        seed: cfg.seed,
        what: "column families in the child".into(),
        error: e.to_string(),
    })?;
    let mut run = ChildRun {
        cfg,
        db,
        cfs,
        st,
        rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
    };
    report(ChildStage::Started)
        .map_err(|e| StressFailure::Setup(format!("reporting the start: {e}")))?;
    let started = Instant::now();
    let limit = Duration::from_millis(cfg.time_limit_ms);
    let not_killed = |detail: String| StressFailure::NotKilled {
        round: cfg.round,
        seed: cfg.seed,
        detail,
    };
    let mut ops = 0u64;
    while cfg.ops == 0 || ops < cfg.ops {
        run.step()?;
        ops += 1;
        if ops.is_multiple_of(16) {
            if cfg.time_limit_ms != 0 && started.elapsed() >= limit {
                return Err(not_killed(format!(
                    "still running {} ms after it started its workload ({ops} ops)",
                    started.elapsed().as_millis()
                )));
            }
            if std::os::unix::process::parent_id() != parent {
                return Err(not_killed(format!(
                    "its parent (pid {parent}) is gone ({ops} ops)"
                )));
            }
        }
    }
    run.db
        .close()
        .map_err(|e| run.dberr("close in the child".into(), &e))?;
    Ok(ChildReport { ops })
}

/// [`run_child`] for a `main`: prints [`OPENING_LINE`] on stdout just before it opens the
/// database and [`READY_LINE`] when the workload starts, prints a failure to stderr and
/// returns the process exit code (0 after an ops cap, [`EXIT_VIOLATION`],
/// [`EXIT_NOT_KILLED`] or [`EXIT_ERROR`]). The lines are written (and flushed) to the
/// process's own stdout and stderr, past any test-harness capture.
#[must_use]
pub fn child_main(cfg: &ChildConfig) -> i32 {
    let report = |stage: ChildStage| {
        let mut out = io::stdout().lock();
        writeln!(out, "{}", stage.line())?;
        out.flush()
    };
    match run_child(cfg, report) {
        Ok(_) => 0,
        Err(e) => {
            // Nothing more to do if stderr is gone too.
            let _ = writeln!(io::stderr().lock(), "{e}");
            match e {
                StressFailure::Violation(_) | StressFailure::TornBatch { .. } => EXIT_VIOLATION,
                StressFailure::NotKilled { .. } => EXIT_NOT_KILLED,
                _ => EXIT_ERROR,
            }
        }
    }
}

/// Counts of a stress run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StressSummary {
    /// Rounds done.
    pub rounds: u64,
    /// Rounds whose child was killed with SIGKILL: the crashes tested. Includes the open
    /// kills.
    pub kills: u64,
    /// Kills that were open kills (timed from the child's [`OPENING_LINE`], see
    /// [`StressConfig::open_kill`]), whether they fell inside the open or just after it.
    pub open_kills: u64,
    /// Of the open kills, those that struck after the child had printed [`READY_LINE`]: the
    /// open had finished first, so the kill fell in the first moments of the workload
    /// (while work the open started, such as flushes of recovered memtables, may still run).
    /// The others (`open_kills - open_kills_after_open`) struck inside `Db::open`.
    pub open_kills_after_open: u64,
    /// Rounds whose child exited cleanly before the kill (it reached the `ops_per_round`
    /// cap): no crash tested.
    pub exits: u64,
    /// Ops the children acknowledged (as counted in the expected-state file).
    pub ops: u64,
    /// Keys checked after reopens.
    pub keys_verified: u64,
    /// `Db::verify` runs.
    pub verifies: u64,
    /// Wall time.
    pub elapsed: Duration,
}

impl StressSummary {
    /// Kills per round, from 0 to 1 (0 for no rounds).
    #[must_use]
    pub fn kill_ratio(&self) -> f64 {
        if self.rounds == 0 {
            0.0
        } else {
            self.kills as f64 / self.rounds as f64
        }
    }

    /// Open kills that struck inside `Db::open` (before the child printed [`READY_LINE`]).
    #[must_use]
    pub fn kills_during_open(&self) -> u64 {
        self.open_kills.saturating_sub(self.open_kills_after_open)
    }

    /// Whether more than [`MAX_CLEAN_EXIT_PERCENT`] % of the rounds ended in a clean exit.
    #[must_use]
    pub fn too_few_kills(&self) -> bool {
        self.exits * 100 > self.rounds * MAX_CLEAN_EXIT_PERCENT
    }
}

impl fmt::Display for StressSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stress: {} rounds, {} kills ({:.1}% of rounds; {} during open, {} just after it), \
             {} clean exits, {} ops, {} keys verified, {} full verifications, {:.1} s",
            self.rounds,
            self.kills,
            self.kill_ratio() * 100.0,
            self.kills_during_open(),
            self.open_kills_after_open,
            self.exits,
            self.ops,
            self.keys_verified,
            self.verifies,
            self.elapsed.as_secs_f64()
        )
    }
}

fn setup<E: fmt::Display>(what: &str) -> impl FnOnce(E) -> StressFailure + '_ {
    move |e| StressFailure::Setup(format!("{what}: {e}"))
}

/// Opens the expected-state file, or creates it for a new database. The two belong
/// together: a file that records writes beside a missing or empty database is refused
/// (checking against it would report every key it records as lost), as is a database
/// without its file.
fn open_state(cfg: &StressConfig) -> Result<ExpectedState, StressFailure> {
    let path = cfg.state_path();
    let non_empty = std::fs::read_dir(&cfg.db).is_ok_and(|mut d| d.next().is_some());
    if path.exists() {
        let st = ExpectedState::open(&path).map_err(setup("expected-state file"))?;
        if st.keys() != cfg.keys {
            return Err(StressFailure::Setup(format!(
                "{} was made for {} keys, not {}",
                path.display(),
                st.keys(),
                cfg.keys
            )));
        }
        if !non_empty && st.ops() > 0 {
            return Err(StressFailure::Setup(format!(
                "{} records {} acknowledged ops but {} holds no database: it belongs to a \
                 database that is gone (remove it to start afresh)",
                path.display(),
                st.ops(),
                cfg.db.display()
            )));
        }
        return Ok(st);
    }
    if non_empty {
        return Err(StressFailure::Setup(format!(
            "{} holds files but {} does not exist: not a stress database",
            cfg.db.display(),
            path.display()
        )));
    }
    ExpectedState::create(&path, cfg.keys).map_err(setup("expected-state file"))
}

/// When the parent kills a round's child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillAt {
    /// This long after it reads [`READY_LINE`]: in the workload.
    AfterReady(Duration),
    /// This long after it reads [`OPENING_LINE`] (or [`READY_LINE`], should that come
    /// first): an open kill.
    AfterOpening(Duration),
}

/// How a round's child ended.
#[derive(Debug)]
struct ChildEnd {
    status: ExitStatus,
    stderr: String,
    /// We sent the SIGKILL and the child died of it.
    killed: bool,
    /// Time from spawning to the child's [`OPENING_LINE`] (`None`: it did not print it).
    opening_after: Option<Duration>,
    /// Time from spawning to the child's [`READY_LINE`] (`None`: it did not print it, so
    /// a kill struck before the open finished).
    ready_after: Option<Duration>,
    /// Neither [`READY_LINE`] nor an open kill came within [`READY_TIMEOUT`], so the child
    /// was killed.
    ready_timed_out: bool,
}

/// A line the reader thread saw, and when.
type Seen = (ChildStage, Instant);

/// Reads the child's stdout to its end on a helper thread and sends each of
/// [`OPENING_LINE`] and [`READY_LINE`] once, with the instant it was read. A line that ends
/// with one counts: a test binary as the child prints `test <name> ... ` first.
fn watch_stdout(stdout: std::process::ChildStdout) -> mpsc::Receiver<Seen> {
    let (tx, rx) = mpsc::channel();
    // Not joined: it ends by itself at the end of stdout.
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = Vec::new();
        let mut sent = [false; 2];
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = line.trim_ascii_end();
                    for (i, stage) in [ChildStage::Opening, ChildStage::Started]
                        .into_iter()
                        .enumerate()
                    {
                        if !sent[i] && line.ends_with(stage.line().as_bytes()) {
                            sent[i] = true;
                            if tx.send((stage, Instant::now())).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        }
    });
    rx
}

/// Watches a child's (piped) stdout and kills it with SIGKILL at `at` unless it exits
/// first. A child that exits without the line its kill waits for is waited for; one that
/// neither prints it nor exits within [`READY_TIMEOUT`] is killed and reported as timed
/// out. `spawned` is when the spawn began.
fn watch_and_kill(mut child: Child, spawned: Instant, at: KillAt) -> io::Result<ChildEnd> {
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the child's stdout is not piped, so its start cannot be seen",
        ));
    };
    let rx = watch_stdout(stdout);
    let poll = Duration::from_millis(2);
    let mut opening: Option<Instant> = None;
    let mut ready: Option<Instant> = None;
    let mut stdout_open = true;
    let mut exited = false;
    let mut ready_timed_out = false;
    loop {
        // The kill instant, once the line it counts from has come.
        let deadline = match at {
            KillAt::AfterReady(d) => ready.map(|t| t + d),
            KillAt::AfterOpening(d) => opening.or(ready).map(|t| t + d),
        };
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
        if deadline.is_none() && spawned.elapsed() >= READY_TIMEOUT {
            ready_timed_out = true;
            break;
        }
        let wait = deadline.map_or(poll, |d| poll.min(d - now));
        if stdout_open {
            match rx.recv_timeout(wait) {
                Ok((ChildStage::Opening, t)) => opening = Some(t),
                Ok((ChildStage::Started, t)) => ready = Some(t),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // Stdout closed: only the exit (or the deadline) is left to wait for.
                Err(mpsc::RecvTimeoutError::Disconnected) => stdout_open = false,
            }
        } else {
            std::thread::sleep(wait);
        }
        if child.try_wait()?.is_some() {
            exited = true;
            break;
        }
    }
    if !exited {
        // Fails only if the child was already reaped, which cannot happen here.
        let _ = child.kill();
    }
    let out = child.wait_with_output()?;
    // Whatever the child printed before it died is in the pipe: read it to its end, so that
    // whether the open finished before the kill is known exactly. Bounded, in case a
    // grandchild holds the pipe open.
    let drained = Instant::now() + Duration::from_secs(2);
    while stdout_open {
        match rx.recv_timeout(drained.saturating_duration_since(Instant::now())) {
            Ok((ChildStage::Opening, t)) => opening = opening.or(Some(t)),
            Ok((ChildStage::Started, t)) => ready = ready.or(Some(t)),
            Err(_) => stdout_open = false,
        }
    }
    Ok(ChildEnd {
        killed: !exited && out.status.signal() == Some(9),
        status: out.status,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        opening_after: opening.map(|t| t.saturating_duration_since(spawned)),
        ready_after: ready.map(|t| t.saturating_duration_since(spawned)),
        ready_timed_out,
    })
}

/// Runs `cfg.rounds` rounds: spawn a child with `spawn` (which must pipe the child's stdout
/// and stderr), wait for its [`READY_LINE`] and kill it after a random delay (or, in an
/// open-kill round, see [`StressConfig::open_kill`], kill it a short random delay after its
/// [`OPENING_LINE`]), reopen and verify, settle pending slots. At the end, fail if too many children exited cleanly
/// instead of being killed (see [`StressSummary::too_few_kills`]).
///
/// # Errors
/// The first violation, torn batch, engine error, failed child or setup error; then
/// [`StressFailure::TooFewKills`] (with the counts) unless `cfg.allow_clean_exits`.
pub fn run_parent(
    cfg: &StressConfig,
    mut spawn: impl FnMut(&ChildConfig) -> io::Result<Child>,
) -> Result<StressSummary, StressFailure> {
    let started = Instant::now();
    if cfg.keys == 0 {
        return Err(StressFailure::Setup("--keys must be at least 1".into()));
    }
    if cfg.open_kill_percent > 100 {
        return Err(StressFailure::Setup(format!(
            "--open-kill-percent {} is over 100",
            cfg.open_kill_percent
        )));
    }
    let options = stress_options(&cfg.preset, &cfg.opts).map_err(StressFailure::Setup)?;
    let mut st = open_state(cfg)?;
    let ops_before = st.ops();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x6b69_6c6c);
    let mut sum = StressSummary::default();
    let max_ms = u64::try_from(cfg.max_kill_delay.as_millis()).unwrap_or(u64::MAX);
    for round in 0..cfg.rounds {
        let child_cfg = cfg.child(round);
        let seed = child_cfg.seed;
        // Drawn in every round, so that open kills do not shift the other rounds' delays.
        let delay = Duration::from_millis(rng.random_range(0..=max_ms));
        let open_kill = cfg.open_kill(round);
        let at = open_kill.map_or(KillAt::AfterReady(delay), KillAt::AfterOpening);
        let ops_at_start = st.ops();
        let spawned = Instant::now();
        let child = spawn(&child_cfg).map_err(setup("spawning the child"))?;
        let end = watch_and_kill(child, spawned, at).map_err(setup("child"))?;
        if end.ready_timed_out {
            let line = if open_kill.is_some() {
                OPENING_LINE
            } else {
                READY_LINE
            };
            return Err(StressFailure::Child {
                round,
                seed,
                status: format!(
                    "no {line:?} line within {} s, killed",
                    READY_TIMEOUT.as_secs()
                ),
                stderr: end.stderr,
            });
        }
        if end.killed {
            sum.kills += 1;
            if open_kill.is_some() {
                sum.open_kills += 1;
                if end.ready_after.is_some() {
                    sum.open_kills_after_open += 1;
                }
            }
        } else if end.status.success() {
            sum.exits += 1;
        } else if end.status.code() == Some(EXIT_NOT_KILLED) {
            let said = end.stderr.trim();
            let prefix = format!("round {round} seed {seed}: child not killed: ");
            return Err(StressFailure::NotKilled {
                round,
                seed,
                detail: said.strip_prefix(&prefix).unwrap_or(said).to_string(),
            });
        } else {
            return Err(StressFailure::Child {
                round,
                seed,
                status: end.status.to_string(),
                stderr: end.stderr,
            });
        }

        // Reopen, verify, settle.
        st = ExpectedState::open(&cfg.state_path()).map_err(setup("expected-state file"))?;
        let dberr = |what: &str, e: mezzanine::Error| StressFailure::Db {
            round,
            seed,
            what: what.to_string(),
            error: e.to_string(),
        };
        let db = Db::open(&cfg.db, options.clone()).map_err(|e| dberr("reopen after kill", e))?;
        // A child killed before it made the families leaves none (and no key in them).
        stress_families(&db, &options, cfg.families)
            .map_err(|e| dberr("column families after kill", e))?;
        let found = verify_round_in(&db, &st, round, seed, cfg.families)?;
        sum.keys_verified += u64::from(st.keys());
        for (k, f) in (0u32..).zip(&found) {
            let s = st.slot(k);
            if s.pending.is_some() || s.batch != 0 {
                st.resolve(k, f.version())
                    .map_err(setup("expected-state file"))?;
            }
        }
        let last = round + 1 == cfg.rounds;
        if cfg.verify_every > 0 && ((round + 1) % cfg.verify_every == 0 || last) {
            db.verify().map_err(|e| dberr("Db::verify", e))?;
            sum.verifies += 1;
        }
        db.close().map_err(|e| dberr("close after verify", e))?;
        sum.rounds += 1;
        if cfg.verbose {
            let ms = |d: Option<Duration>| {
                d.map_or_else(|| "-".to_string(), |d| d.as_millis().to_string())
            };
            let (opening, ready) = (ms(end.opening_after), ms(end.ready_after));
            let how = match (end.killed, open_kill) {
                (false, _) => "exited cleanly (ops cap), not killed".to_string(),
                (true, None) => format!("killed {} ms into its workload", delay.as_millis()),
                (true, Some(d)) => format!(
                    "open kill {:.2} ms after its opening line, {}",
                    d.as_secs_f64() * 1000.0,
                    if end.ready_after.is_some() {
                        "just after the open"
                    } else {
                        "during the open"
                    }
                ),
            };
            eprintln!(
                "round {round} seed {seed}: {how} (opening after {opening} ms, started after \
                 {ready} ms), {} ops, {} keys ok",
                st.ops() - ops_at_start,
                st.keys()
            );
        }
    }
    sum.ops = st.ops() - ops_before;
    sum.elapsed = started.elapsed();
    if !cfg.allow_clean_exits && sum.too_few_kills() {
        return Err(StressFailure::TooFewKills(sum));
    }
    Ok(sum)
}
