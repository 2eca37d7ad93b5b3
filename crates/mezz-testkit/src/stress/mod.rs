//! The kill -9 crash harness behind `mezz stress`: a parent process repeatedly starts a
//! child that writes to a real database on disk, kills it with SIGKILL at a random moment,
//! reopens the database and checks every key against an expected-state file.
//!
//! Owns: the child workload ([`run_child`], [`child_main`]), the parent loop
//! ([`run_parent`]), the per-round check ([`verify_round`], [`check_slots`]) and their
//! configuration and report types. The expected-state file lives in [`state`]; the
//! self-checking keys and values in [`value`].
//!
//! The child opens the database and runs a seeded random workload on keys `0..keys`: puts,
//! deletes, batches of distinct keys, `sync = true` writes, flushes, range compactions,
//! point reads and bounded forward and backward scans. Before each write it marks the keys
//! pending in the expected-state file (with fresh versions); after the acknowledgement it
//! commits them. Its reads must see exactly the committed state (it is the only writer).
//!
//! After the kill, for every key the database must hold the committed version, or the
//! pending version if the slot is pending (a kill is a process crash: the operating system
//! keeps every byte written, so every acknowledged write survives, `sync` or not). The keys
//! of one batch must be all applied or none, and all applied once any of them was committed.
//! A scan must list the keys in order and agree with the point reads. The parent then
//! settles pending slots to what it found and starts the next round with a seed derived
//! from the base seed and the round number; every few rounds it also runs `Db::verify`.
//!
//! Invariants: only one process writes the expected-state file at a time (the child while
//! it runs, the parent between children); versions of a key only grow, so a stale or
//! resurrected value never passes for a pending one.
//!
//! Thread-safety: single-threaded in both processes.

pub mod state;
pub mod value;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use mezzanine::{Db, Options, Preset, ReadOptions, WriteBatch, WriteOptions};
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
    /// Ops to run before exiting cleanly (if not killed first).
    pub ops: u64,
    /// Size of the key space; must match the expected-state file.
    pub keys: u32,
    /// Preset name the options start from.
    pub preset: String,
    /// Option overrides, each `name=value` as `Options::set` takes them.
    pub opts: Vec<String>,
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
            "--keys".to_string(),
            self.keys.to_string(),
            "--preset".to_string(),
            self.preset.clone(),
        ];
        for o in &self.opts {
            a.push("--opt".to_string());
            a.push(o.clone());
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
            keys: 0,
            preset: Preset::Leveldb.name().to_string(),
            opts: Vec::new(),
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
                "--keys" => {
                    c.keys =
                        u32::try_from(num(&v)?).map_err(|_| format!("--keys {v} too large"))?;
                }
                "--preset" => c.preset = v,
                "--opt" => c.opts.push(v),
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
    /// Ops a child runs before exiting on its own. Default 10 000.
    pub ops_per_round: u64,
    /// Size of the key space. Default 1000.
    pub keys: u32,
    /// Preset name. Default `leveldb`.
    pub preset: String,
    /// Option overrides, `name=value`, applied after [`stress_options`]' defaults.
    pub opts: Vec<String>,
    /// The child is killed after a random delay up to this. Default 2 s.
    pub max_kill_delay: Duration,
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
            ops_per_round: 10_000,
            keys: 1000,
            preset: Preset::Leveldb.name().to_string(),
            opts: Vec::new(),
            max_kill_delay: Duration::from_secs(2),
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
            keys: self.keys,
            preset: self.preset.clone(),
            opts: self.opts.clone(),
        }
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
    let dberr = |what: String, e: mezzanine::Error| StressFailure::Db {
        round,
        seed,
        what,
        error: e.to_string(),
    };
    let keys = st.keys();
    let mut found = Vec::with_capacity(keys as usize);
    for k in 0..keys {
        let v = db
            .get(&key_bytes(k))
            .map_err(|e| dberr(format!("get key {k}"), e))?;
        found.push(Found::from_value(k, v.as_deref()));
    }
    check_slots(st.slots(), &found, round, seed)?;
    let mut it = db
        .iter(&ReadOptions::default())
        .map_err(|e| dberr("iter".into(), e))?;
    it.seek_to_first();
    let mut seen = vec![false; keys as usize];
    let mut prev: Option<u32> = None;
    let scan_err = |detail: String| StressFailure::Db {
        round,
        seed,
        what: "full scan after reopen".into(),
        error: detail,
    };
    while it.valid() {
        let Some(k) = parse_key(it.key()).filter(|&k| k < keys) else {
            return Err(scan_err(format!(
                "unknown key {:?}",
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
        self.db
            .put_opt(
                &WriteOptions { sync },
                &key_bytes(k),
                &encode_value(k, v, len),
            )
            .map_err(|e| self.dberr(format!("put key {k}"), &e))?;
        self.st.commit(k).map_err(|e| self.ioerr(&e))
    }

    fn delete(&mut self, k: u32, sync: bool) -> Result<(), StressFailure> {
        self.st.begin_delete(k, 0).map_err(|e| self.ioerr(&e))?;
        self.db
            .delete_opt(&WriteOptions { sync }, &key_bytes(k))
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
                b.put(&key_bytes(k), &encode_value(k, v, len));
            } else {
                self.st.begin_delete(k, id).map_err(|e| self.ioerr(&e))?;
                b.delete(&key_bytes(k));
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
            .get(&key_bytes(k))
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
            .iter(&ro)
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
        for k in lo..hi {
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
                    .compact_range(Some(&a), Some(&b))
                    .map_err(|e| self.dberr("compact_range".into(), &e))?;
            }
        }
        self.st.add_ops(1).map_err(|e| self.ioerr(&e))
    }
}

/// Runs a child: opens the database and the expected-state file and runs `cfg.ops` ops
/// (unless killed first), then closes the database.
///
/// # Errors
/// A violation seen by a live read, an engine error, or a bad setup.
pub fn run_child(cfg: &ChildConfig) -> Result<ChildReport, StressFailure> {
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
    let db = Db::open(&cfg.db, options).map_err(|e| StressFailure::Db {
        round: cfg.round,
        seed: cfg.seed,
        what: "open in the child".into(),
        error: e.to_string(),
    })?;
    let mut run = ChildRun {
        cfg,
        db,
        st,
        rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
    };
    for _ in 0..cfg.ops {
        run.step()?;
    }
    run.db
        .close()
        .map_err(|e| run.dberr("close in the child".into(), &e))?;
    Ok(ChildReport { ops: cfg.ops })
}

/// [`run_child`] for a `main`: prints a failure to stderr and returns the process exit code
/// (0, [`EXIT_VIOLATION`] or [`EXIT_ERROR`]).
#[must_use]
pub fn child_main(cfg: &ChildConfig) -> i32 {
    match run_child(cfg) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("{e}");
            match e {
                StressFailure::Violation(_) | StressFailure::TornBatch { .. } => EXIT_VIOLATION,
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
    /// Children killed with SIGKILL.
    pub kills: u64,
    /// Children that finished their ops and exited cleanly.
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

impl fmt::Display for StressSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stress: {} rounds, {} kills, {} clean exits, {} ops, {} keys verified, {} full \
             verifications, {:.1} s",
            self.rounds,
            self.kills,
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

/// Opens the expected-state file, or creates it for a new database.
fn open_state(cfg: &StressConfig) -> Result<ExpectedState, StressFailure> {
    let path = cfg.state_path();
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
        return Ok(st);
    }
    let non_empty = std::fs::read_dir(&cfg.db).is_ok_and(|mut d| d.next().is_some());
    if non_empty {
        return Err(StressFailure::Setup(format!(
            "{} holds files but {} does not exist: not a stress database",
            cfg.db.display(),
            path.display()
        )));
    }
    ExpectedState::create(&path, cfg.keys).map_err(setup("expected-state file"))
}

/// Waits for the child to exit on its own or for `delay` to pass, then kills it. Returns its
/// exit status, stderr, and whether it was killed.
fn kill_after(mut child: Child, delay: Duration) -> io::Result<(ExitStatus, String, bool)> {
    let start = Instant::now();
    let mut exited = false;
    while start.elapsed() < delay {
        if child.try_wait()?.is_some() {
            exited = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if !exited {
        // Fails only if the child was already reaped, which cannot happen here.
        let _ = child.kill();
    }
    let out = child.wait_with_output()?;
    let killed = !exited && out.status.signal() == Some(9);
    Ok((
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        killed,
    ))
}

/// Runs `cfg.rounds` rounds: spawn a child with `spawn` (which should pipe the child's
/// stderr and discard its stdout), kill it after a random delay, reopen and verify, settle
/// pending slots.
///
/// # Errors
/// The first violation, torn batch, engine error, failed child or setup error.
pub fn run_parent(
    cfg: &StressConfig,
    mut spawn: impl FnMut(&ChildConfig) -> io::Result<Child>,
) -> Result<StressSummary, StressFailure> {
    let started = Instant::now();
    if cfg.keys == 0 {
        return Err(StressFailure::Setup("--keys must be at least 1".into()));
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
        let delay = Duration::from_millis(rng.random_range(0..=max_ms));
        let child = spawn(&child_cfg).map_err(setup("spawning the child"))?;
        let (status, stderr, killed) = kill_after(child, delay).map_err(setup("child"))?;
        if killed {
            sum.kills += 1;
        } else if status.success() {
            sum.exits += 1;
        } else {
            return Err(StressFailure::Child {
                round,
                seed,
                status: status.to_string(),
                stderr,
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
        let found = verify_round(&db, &st, round, seed)?;
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
            eprintln!(
                "round {round} seed {seed}: {} after {} ms, {} ops so far, {} keys ok",
                if killed { "killed" } else { "exited" },
                delay.as_millis(),
                st.ops() - ops_before,
                st.keys()
            );
        }
    }
    sum.ops = st.ops() - ops_before;
    sum.elapsed = started.elapsed();
    Ok(sum)
}
