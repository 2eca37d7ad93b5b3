//! Multi-threaded lifecycle stress: worker threads call every kind of `Db` method on one
//! shared handle while a controller thread closes and reopens the database, or crashes it,
//! at random moments; after every reopen every key is checked against a model that allows
//! for the calls that were in flight.
//!
//! Owns: the seeded runner ([`run_one`], [`run_default`], [`run_long`]), the per-worker write
//! model ([`KeyHistory`] and its search [`KeyHistory::find_match`]), the option sets it runs
//! under ([`lifecycle_sets`], [`long_sets`]), and the report and failure types.
//!
//! How a run goes. The database lives on a [`FaultFs`] over a [`MemFs`] (the file systems of
//! `crash.rs`), with a simulated NVM where the options use one. `workers` threads (4) each
//! own a disjoint range of keys, so each one's writes form a sequential history, and issue
//! random puts, deletes, batches (some with `sync = true`), gets, `multi_get`s, cursor walks,
//! `iter`/`range` walks (both directions), cursors and `Iter`s held open across later calls,
//! reads at a snapshot, `flush`, `compact_range`, `run_background_work` (the only
//! background work under `manual_background` besides what calls do inline), `property`,
//! `stats`, `verify` and `wait_for_background`. The handle sits in a slot
//! (`RwLock<Option<Arc<Handle>>>`); a worker that gets `Error::Closed` may call its old
//! handle a few more times (it must answer `Closed` or correctly) and then waits for the
//! next handle in the slot. The controller (the calling thread) fires the seed's events at
//! op counts drawn from the seed:
//! - a clean close: the slot is emptied, `close()` is called (sometimes from two threads
//!   at once), then `Db::open` again on the same file system;
//! - a crash: a [`MemFs::crash_clone_with`] taken while the workers run, cutting the
//!   simulated NVM at the same instant (as `crash.rs` does) and freezing the old file
//!   system there (every later change fails, so the old handle's leftovers cannot matter),
//!   then `Db::open` on the clone (under absolute consistency an open that refuses the
//!   torn log a crash left is recovered once with `tolerate_corrupt_tail`, then closed and
//!   opened with the set's options).
//!
//! What is checked:
//! - after every reopen, a scan and a point read of every key (`crash::read_state`); per
//!   worker, the state must be its history's state after some prefix (writes with an
//!   unknown outcome, that returned an error or were still in flight, may be left out; a
//!   batch is applied whole or not at all) that holds every write that had to survive:
//!   every acknowledged one after a clean close or a process crash
//!   ([`KeepUnsynced::All`]); after a power cut every acknowledged `sync` write and what a
//!   successful `flush` of the worker covered, and never a write issued after the crash;
//! - every read during the run (gets, `multi_get`, walks, held cursors and `Iter`s, reads at a
//!   snapshot against the state when the snapshot or iterator was made) returns such a
//!   state for the keys it saw; values decode to their own key;
//! - errors: on a file system that was not crashed only `Closed`, and only from a handle
//!   whose close began; nothing panics;
//! - a handle whose `close()` returned persists nothing more to the NVM pool (the next
//!   handle maps the same one);
//! - the close contract (collected as violations; the run goes on and fails at its end):
//!   a call made after `close` returned gets `Closed`; a cursor or `Iter` made before it
//!   answers `Closed` at its next positioning call, and an `Iter` never yields a pair that a
//!   close emptied (a cursor's `key`/`value` are read, as documented, only while `valid()`
//!   holds after them); of two concurrent closes the one that
//!   returns `Err(Closed)` does so only once the LOCK is free; `Db::open` right after
//!   `close` returned is not refused for the LOCK.
//!
//! Invariants of the model: write `n` of worker `w` puts values of version
//! `(w + 1) << 40 | n`, so a value names the write it came from. A history is reset to the
//! observed state after each reopen check (writes still in flight stay as unknown), so the
//! search stays small.
//!
//! A run that stops making progress (a deadlock, a call that never returns) is reported
//! by a watchdog thread, which exits the process (see [`run_one`]).
//!
//! Thread-safety: a run uses the calling thread (the controller), `workers` worker
//! threads, a watchdog thread and, for concurrent closes, a second closer thread. The worker
//! models are behind one `Mutex` each (held only for bookkeeping, never across a database
//! call); the handle slot is an `RwLock`; counters are atomics. Each worker thread owns its
//! random generator and held iterators.

use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use mezz_env::{CrashOptions, FaultFs, FileSystem, KeepUnsynced, MemFs};
use mezzanine::options::{NvmMemtable, SimNvm};
use mezzanine::{
    Db, DbIterator, Error, Iter, Options, Preset, ReadOptions, RecoveryMode, WriteBatch,
    WriteOptions,
};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::crash::{base_seed_from, env_value, read_state, read_state_in, run_seed};
use crate::option_sets::{NamedOptions, OptionSets, tiny_options};
use crate::stress::value::{decode_value, encode_value, key_bytes, parse_key};

/// Directory of the database inside the `MemFs`.
pub const DB_DIR: &str = "/lifecycle-db";
/// Environment variable: replay this seed (see [`run_default`]).
pub const SEED_ENV: &str = "MEZZ_LIFECYCLE_SEED";
/// Environment variable: comma-separated option set names (exact, else substrings).
pub const SET_ENV: &str = "MEZZ_LIFECYCLE_SET";
/// Environment variable: `short` (default) or `long`, the size of a replayed run.
pub const SIZE_ENV: &str = "MEZZ_LIFECYCLE_SIZE";
/// Environment variable: how many times a replayed seed runs (default 10).
pub const REPEAT_ENV: &str = "MEZZ_LIFECYCLE_REPEAT";
/// Environment variable: number of seeds of the long variant ([`run_long`]).
pub const LONG_ENV: &str = "MEZZ_LIFECYCLE_LONG";
/// Environment variable: a value mixed into the base seed (the soak's fresh seeds).
pub const BASE_ENV: &str = "MEZZ_LIFECYCLE_BASE";

/// Cap on the branches [`KeyHistory::find_match`] explores for writes of unknown outcome.
const MAX_BRANCHES: usize = 1 << 14;
/// How far the workers may run past the op count of an event the controller has not
/// started yet (keeps the events inside the run on a loaded machine).
const PACE_SLACK: usize = 48;
/// Most contract violations kept for the report.
const MAX_VIOLATIONS: usize = 24;
/// Ops of a worker kept for failure messages.
const RECENT_OPS: usize = 10;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn pause(micros: u64) {
    std::thread::sleep(Duration::from_micros(micros));
}

/// Version `n` of worker `w`.
fn version(w: usize, n: u64) -> u64 {
    ((w as u64 + 1) << 40) | n
}

/// `w<worker>.<n>` for a version, `none` for no value.
fn show(v: Option<u64>) -> String {
    v.map_or_else(
        || "none".to_string(),
        |v| format!("w{}.{}", (v >> 40).saturating_sub(1), v & ((1 << 40) - 1)),
    )
}

// ---------------------------------------------------------------------------------------
// The model

/// What is known of a write's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Issued, not returned yet: it may or may not be applied.
    InFlight,
    /// Returned `Ok`: it must be applied.
    Acked,
    /// Returned an error (`Closed`, or anything on a crashed file system): it may or may
    /// not be applied.
    Failed,
}

/// One write of a worker: a put, a delete or a batch over the worker's key indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// Increasing per worker; never reused.
    pub id: u64,
    /// `(key index, Some(version) | None for a delete)`, in batch order.
    pub writes: Vec<(u32, Option<u64>)>,
    /// Written with `sync = true`.
    pub sync: bool,
    /// What the call returned so far.
    pub outcome: Outcome,
}

/// The keys of one worker: the state last observed (`base`) and the writes issued since,
/// in order.
#[derive(Debug, Clone, Default)]
pub struct KeyHistory {
    /// Value version per key index, as observed at the last check (`None`: no value).
    pub base: Vec<Option<u64>>,
    /// Writes issued since, oldest first.
    pub writes: Vec<Write>,
}

fn apply(state: &mut [Option<u64>], mism: &mut usize, w: &Write, want: &[Option<Option<u64>>]) {
    for &(k, v) in &w.writes {
        let k = k as usize;
        let (Some(slot), Some(want)) = (state.get_mut(k), want.get(k)) else {
            continue;
        };
        let Some(want) = want else {
            *slot = v;
            continue;
        };
        let before = *slot != *want;
        *slot = v;
        let after = *slot != *want;
        match (before, after) {
            (true, false) => *mism = mism.saturating_sub(1),
            (false, true) => *mism += 1,
            _ => {}
        }
    }
}

impl KeyHistory {
    /// An empty history over `keys` keys, none of which has a value.
    #[must_use]
    pub fn new(keys: u32) -> Self {
        Self {
            base: vec![None; keys as usize],
            writes: Vec::new(),
        }
    }

    /// Index of the first write whose id is at least `id`.
    #[must_use]
    pub fn index_of(&self, id: u64) -> usize {
        self.writes.partition_point(|w| w.id < id)
    }

    /// One past the index of the last acknowledged write.
    #[must_use]
    pub fn acked_len(&self) -> usize {
        self.writes
            .iter()
            .rposition(|w| w.outcome == Outcome::Acked)
            .map_or(0, |i| i + 1)
    }

    /// Finds `p` in `min..=max` such that `base` plus the first `p` writes (any of them
    /// whose outcome is not `Acked` may be left out, whole) agrees with `observed` on every
    /// key it names. Keys not named are not compared.
    ///
    /// # Errors
    /// Why no such prefix exists: the closest one and the keys that differ there.
    pub fn find_match(
        &self,
        observed: &[(u32, Option<u64>)],
        min: usize,
        max: usize,
    ) -> Result<usize, String> {
        let max = max.min(self.writes.len());
        if min > max {
            return Err(format!(
                "required prefix {min} is longer than the {max} writes issued"
            ));
        }
        let mut want: Vec<Option<Option<u64>>> = vec![None; self.base.len()];
        for &(k, v) in observed {
            match want.get_mut(k as usize) {
                Some(slot) => *slot = Some(v),
                None => return Err(format!("key index {k} outside the worker's keys")),
            }
        }
        let start = self.base.clone();
        let mism = start
            .iter()
            .zip(&want)
            .filter(|(s, w)| w.is_some_and(|w| w != **s))
            .count();
        // The last write (below `max`) of each key: once past it, a key that differs from
        // what was read stays different, and the branch is abandoned.
        let mut last_touch: Vec<Option<usize>> = vec![None; self.base.len()];
        for (i, w) in self.writes.iter().enumerate().take(max) {
            for &(k, _) in &w.writes {
                if let Some(t) = last_touch.get_mut(k as usize) {
                    *t = Some(i);
                }
            }
        }
        let dead = |state: &[Option<u64>], i: usize| {
            state
                .iter()
                .zip(&want)
                .zip(&last_touch)
                .any(|((s, w), t)| w.is_some_and(|w| w != *s) && t.is_none_or(|t| t < i))
        };
        let mut stack = vec![(0usize, start, mism)];
        let mut branches = 0usize;
        let mut capped = false;
        while let Some((mut i, mut state, mut mism)) = stack.pop() {
            loop {
                if i >= min && mism == 0 {
                    return Ok(i);
                }
                let Some(w) = self.writes.get(i).filter(|_| i < max) else {
                    break;
                };
                // A write of unknown outcome branches (applied, or left out) only if it
                // writes a key that was read; a failed one (usually refused) is first tried
                // left out, one in flight first tried applied.
                let observed = w
                    .writes
                    .iter()
                    .any(|&(k, _)| want.get(k as usize).is_some_and(Option::is_some));
                if w.outcome != Outcome::Acked && observed {
                    if dead(&state, i) {
                        break;
                    }
                    if branches >= MAX_BRANCHES {
                        capped = true;
                    } else if w.outcome == Outcome::Failed {
                        branches += 1;
                        let (mut applied, mut m) = (state.clone(), mism);
                        apply(&mut applied, &mut m, w, &want);
                        stack.push((i + 1, applied, m));
                        i += 1;
                        continue;
                    } else {
                        branches += 1;
                        stack.push((i + 1, state.clone(), mism));
                    }
                }
                apply(&mut state, &mut mism, w, &want);
                i += 1;
            }
        }
        let mut out = self.describe_mismatch(&want, min, max);
        if capped {
            out.push_str(&format!(
                "\n(the search was capped at {MAX_BRANCHES} branches over writes of unknown \
                 outcome)"
            ));
        }
        Err(out)
    }

    /// The closest prefix in `min..=max` (every write applied) and the keys that differ.
    fn describe_mismatch(&self, want: &[Option<Option<u64>>], min: usize, max: usize) -> String {
        let mut state = self.base.clone();
        let mut mism = 0;
        let count = |state: &[Option<u64>]| {
            state
                .iter()
                .zip(want)
                .filter(|(s, w)| w.is_some_and(|w| w != **s))
                .count()
        };
        for w in self.writes.iter().take(min) {
            apply(&mut state, &mut mism, w, want);
        }
        let mut best = (count(&state), min, state.clone());
        for i in min..max {
            if let Some(w) = self.writes.get(i) {
                apply(&mut state, &mut mism, w, want);
            }
            let n = count(&state);
            if n < best.0 {
                best = (n, i + 1, state.clone());
            }
        }
        let (n, p, expected) = best;
        let mut out = format!(
            "no prefix of the {} writes since the last check, of length {min}..={max}, gives \
             the state read; closest is {p} with {n} differing keys:",
            self.writes.len()
        );
        for (k, (exp, got)) in expected.iter().zip(want).enumerate() {
            let Some(got) = got else { continue };
            if exp == got {
                continue;
            }
            let origin = match got {
                None => String::new(),
                Some(v) => match self.writes.iter().position(|w| {
                    w.writes
                        .iter()
                        .any(|&(kk, vv)| kk as usize == k && vv == Some(*v))
                }) {
                    Some(i) => self.describe_write(i, max),
                    None if self.base.get(k) == Some(&Some(*v)) => {
                        " (the value at the last check)".into()
                    }
                    None => {
                        " (written by no write since the last check: stale or resurrected)".into()
                    }
                },
            };
            let last = self
                .writes
                .iter()
                .take(p)
                .rposition(|w| w.writes.iter().any(|&(kk, _)| kk as usize == k))
                .map_or_else(
                    || " (the value at the last check)".to_string(),
                    |i| self.describe_write(i, max),
                );
            out.push_str(&format!(
                "\n  key {k}: read {}{origin}, expected {}{last}",
                show(*got),
                show(*exp)
            ));
            if out.len() > 3000 {
                out.push_str("\n  ...");
                break;
            }
        }
        out
    }

    fn describe_write(&self, i: usize, max: usize) -> String {
        self.writes.get(i).map_or_else(String::new, |w| {
            format!(
                " (write #{} at index {i}: {} keys, {:?}{}{})",
                w.id,
                w.writes.len(),
                w.outcome,
                if w.sync { ", sync" } else { "" },
                if i >= max {
                    ", issued after the crash"
                } else {
                    ""
                }
            )
        })
    }
}

/// A worker's history and its durability marks.
#[derive(Debug)]
struct WorkerModel {
    hist: KeyHistory,
    next_id: u64,
    /// Acknowledged writes with a smaller id survive a power cut (a `sync` write or a
    /// successful flush of this worker covered them).
    durable_id: u64,
    /// One past the id of the newest acknowledged write.
    acked_id: u64,
}

impl WorkerModel {
    fn new(keys: u32) -> Self {
        Self {
            hist: KeyHistory::new(keys),
            next_id: 0,
            durable_id: 0,
            acked_id: 0,
        }
    }

    fn register(&mut self, writes: Vec<(u32, Option<u64>)>, sync: bool) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.hist.writes.push(Write {
            id,
            writes,
            sync,
            outcome: Outcome::InFlight,
        });
        id
    }

    /// Records the outcome of write `id`; a write voided by a crash is not found.
    fn record(&mut self, id: u64, ok: bool) {
        let Some(w) = self.hist.writes.iter_mut().rev().find(|w| w.id == id) else {
            return;
        };
        w.outcome = if ok { Outcome::Acked } else { Outcome::Failed };
        if ok {
            self.acked_id = self.acked_id.max(id + 1);
            if w.sync {
                self.durable_id = self.durable_id.max(id + 1);
            }
        }
    }

    /// After a check: the observed state becomes the base; writes still in flight stay.
    fn reset(&mut self, observed: Vec<Option<u64>>) {
        self.hist.base = observed;
        self.hist.writes.retain(|w| w.outcome == Outcome::InFlight);
    }
}

// ---------------------------------------------------------------------------------------
// Configuration, reports

/// What one run does.
#[derive(Debug, Clone)]
pub struct LifecycleConfig {
    /// Seed of the workers' ops, the events and the crash clones.
    pub seed: u64,
    /// `short` or `long` (named in the replay command).
    pub size: &'static str,
    /// Worker threads.
    pub workers: usize,
    /// Keys of each worker.
    pub keys_per_worker: u32,
    /// Ops of each worker.
    pub ops_per_worker: usize,
    /// Close/reopen and crash events of the controller.
    pub events: usize,
    /// Share of the events that are crashes, in percent.
    pub crash_percent: u32,
    /// Every write also goes, in the same batch, into the column family
    /// [`crate::MIRROR_FAMILY`] (made at the first open), and every reopen check requires
    /// it to hold exactly what the default family holds: a batch spanning families is
    /// whole after closes and crashes. Ignored under an NVM memtable (no column families).
    pub mirror_family: bool,
}

impl LifecycleConfig {
    /// The CI size: 4 workers × 1,500 ops, 12 events.
    #[must_use]
    pub fn short(seed: u64) -> Self {
        Self {
            seed,
            size: "short",
            workers: 4,
            keys_per_worker: 40,
            ops_per_worker: 3000,
            events: 16,
            crash_percent: 35,
            mirror_family: false,
        }
    }

    /// The soak size: 4 workers × 6,000 ops, 40 events.
    #[must_use]
    pub fn long(seed: u64) -> Self {
        Self {
            size: "long",
            keys_per_worker: 64,
            ops_per_worker: 6000,
            events: 40,
            ..Self::short(seed)
        }
    }

    /// The size named by `MEZZ_LIFECYCLE_SIZE` (`long`, else short).
    #[must_use]
    pub fn from_env(seed: u64) -> Self {
        match std::env::var(SIZE_ENV).as_deref().map(str::trim) {
            Ok("long") => Self::long(seed),
            _ => Self::short(seed),
        }
    }
}

/// Counts from one or more runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LifecycleReport {
    /// Runs done.
    pub runs: usize,
    /// Worker ops done.
    pub ops: u64,
    /// Writes acknowledged.
    pub acked: u64,
    /// Writes that returned an error (outcome unknown).
    pub failed_writes: u64,
    /// `Closed` errors the workers got.
    pub closed_errors: u64,
    /// Clean closes followed by a reopen (the final one included).
    pub clean_reopens: u64,
    /// Of those, closes called from two threads at once.
    pub double_closes: u64,
    /// Crashes followed by a reopen.
    pub crashes: u64,
    /// Reads checked against the model during the runs.
    pub live_checks: u64,
    /// Keys checked after reopens.
    pub keys_checked: u64,
    /// Calls and iterator steps checked to answer `Closed` after a close returned.
    pub after_close_checks: u64,
    /// Flushes and compactions the handles ran (their stats just before each close).
    pub flushes: u64,
    /// See `flushes`.
    pub compactions: u64,
}

impl LifecycleReport {
    /// Adds the counts of `o`.
    pub fn add(&mut self, o: &LifecycleReport) {
        self.runs += o.runs;
        self.ops += o.ops;
        self.acked += o.acked;
        self.failed_writes += o.failed_writes;
        self.closed_errors += o.closed_errors;
        self.clean_reopens += o.clean_reopens;
        self.double_closes += o.double_closes;
        self.crashes += o.crashes;
        self.live_checks += o.live_checks;
        self.keys_checked += o.keys_checked;
        self.after_close_checks += o.after_close_checks;
        self.flushes += o.flushes;
        self.compactions += o.compactions;
    }
}

impl fmt::Display for LifecycleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} lifecycle runs, {} ops ({} acknowledged writes, {} failed writes, {} Closed \
             errors), {} clean reopens ({} with two concurrent closes), {} crashes, {} live \
             read checks, {} keys checked after reopen, {} after-close checks, {} flushes, {} \
             compactions",
            self.runs,
            self.ops,
            self.acked,
            self.failed_writes,
            self.closed_errors,
            self.clean_reopens,
            self.double_closes,
            self.crashes,
            self.live_checks,
            self.keys_checked,
            self.after_close_checks,
            self.flushes,
            self.compactions
        )
    }
}

/// A failed run, with what is needed to replay it.
#[derive(Debug, Clone)]
pub struct LifecycleFailure {
    /// Seed of the run.
    pub seed: u64,
    /// Option set name.
    pub set: String,
    /// `short` or `long`.
    pub size: &'static str,
    /// The first failed check (empty when only violations were found), and where the
    /// history of the run (the controller's phases, every handle's `LOG`) was saved.
    pub detail: String,
    /// Contract violations found (the run went on after each).
    pub violations: Vec<String>,
    /// The controller's events as they happened (op counts at each).
    pub schedule: Vec<String>,
}

impl fmt::Display for LifecycleFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "lifecycle stress failed: seed {}, option set {} ({} run)",
            self.seed, self.set, self.size
        )?;
        if !self.detail.is_empty() {
            writeln!(f, "{}", self.detail)?;
        }
        if !self.violations.is_empty() {
            writeln!(f, "close contract violations ({}):", self.violations.len())?;
            for v in &self.violations {
                writeln!(f, "  - {v}")?;
            }
        }
        writeln!(f, "controller schedule (total ops when each event began):")?;
        for s in &self.schedule {
            writeln!(f, "  {s}")?;
        }
        write!(
            f,
            "replay (thread timing varies, so the seed runs {REPEAT_ENV} times, default 10):\n  \
             {SEED_ENV}={} {SET_ENV}={} {SIZE_ENV}={} cargo test -p mezz-testkit --test \
             lifecycle lifecycle_every_preset -- --nocapture",
            self.seed, self.set, self.size
        )
    }
}

impl std::error::Error for LifecycleFailure {}

// ---------------------------------------------------------------------------------------
// Option sets

/// The tiny options of every preset (and `novelsm` with the immutable NVM memtable too),
/// named `tiny/<preset>`, with background threads and with `manual_background`
/// (`+manual`).
#[must_use]
pub fn lifecycle_sets() -> OptionSets {
    let mut v = Vec::new();
    for &p in Preset::ALL {
        v.push(NamedOptions {
            name: format!("tiny/{}", p.name()),
            options: tiny_options(p),
        });
        if p == Preset::Novelsm {
            let mut o = tiny_options(p);
            o.nvm_memtable = NvmMemtable::Immutable;
            v.push(NamedOptions {
                name: format!("tiny/{}-immutable", p.name()),
                options: o,
            });
        }
    }
    OptionSets(v).both_modes()
}

/// Every set a lifecycle run may use: [`lifecycle_sets`] and every standard set
/// ([`OptionSets::standard`]) in both background modes.
#[must_use]
pub fn all_sets() -> OptionSets {
    let mut v = lifecycle_sets().0;
    v.extend(OptionSets::standard().both_modes().0);
    OptionSets(v)
}

/// The sets of seed `i` of the long variant: every [`lifecycle_sets`] set, and two standard
/// sets ([`OptionSets::standard`]) in both background modes, in turn, so that consecutive
/// seeds cover every standard set.
#[must_use]
pub fn long_sets(i: u64) -> OptionSets {
    let mut v = lifecycle_sets().0;
    let standard = OptionSets::standard().0;
    let n = standard.len().max(1);
    let first = usize::try_from(i % n as u64).unwrap_or(0) * 2;
    let picked: Vec<NamedOptions> = (0..2)
        .filter_map(|j| standard.get((first + j) % n).cloned())
        .collect();
    v.extend(OptionSets(picked).both_modes().0);
    OptionSets(v)
}

/// `sets` narrowed to the background modes of `MEZZ_BACKGROUND` (`threads`, `manual`, or
/// `both`, the default), then by `MEZZ_LIFECYCLE_SET` (comma-separated; a name equal to a
/// set picks that set, else it matches as a substring) when it is set.
#[must_use]
pub fn filter_from_env(sets: OptionSets) -> OptionSets {
    let sets = match std::env::var("MEZZ_BACKGROUND").as_deref().map(str::trim) {
        Ok("threads") => OptionSets(
            sets.0
                .into_iter()
                .filter(|s| !s.options.manual_background)
                .collect(),
        ),
        Ok("manual") => OptionSets(
            sets.0
                .into_iter()
                .filter(|s| s.options.manual_background)
                .collect(),
        ),
        _ => sets,
    };
    let Ok(filter) = std::env::var(SET_ENV) else {
        return sets;
    };
    if filter.trim().is_empty() {
        return sets;
    }
    let pats: Vec<&str> = filter.split(',').map(str::trim).collect();
    let exact: Vec<NamedOptions> = sets
        .iter()
        .filter(|s| pats.contains(&s.name.as_str()))
        .cloned()
        .collect();
    if !exact.is_empty() {
        return OptionSets(exact);
    }
    OptionSets(
        sets.0
            .into_iter()
            .filter(|s| pats.iter().any(|p| s.name.contains(p)))
            .collect(),
    )
}

// ---------------------------------------------------------------------------------------
// Shared state of a run

/// One open database handle and what the controller did to it.
#[derive(Debug)]
struct Handle {
    db: Db,
    /// Increases with every open.
    epoch: u64,
    /// The controller began closing (or crashing) it: `Closed` is expected from here on.
    closing: AtomicBool,
    /// `close()` returned: iterators made before must answer `Closed`.
    closed: AtomicBool,
    /// Its file system was frozen by a crash: any error is tolerated.
    frozen: Arc<AtomicBool>,
    /// A crash voided its writes: reads from it are not checked against the model.
    crashed: AtomicBool,
}

impl Handle {
    fn new(db: Db, epoch: u64, frozen: Arc<AtomicBool>) -> Self {
        Self {
            db,
            epoch,
            closing: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            frozen,
            crashed: AtomicBool::new(false),
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    ops: AtomicU64,
    acked: AtomicU64,
    failed_writes: AtomicU64,
    closed_errors: AtomicU64,
    live_checks: AtomicU64,
    after_close_checks: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[derive(Debug)]
struct Shared {
    cfg: LifecycleConfig,
    manual: bool,
    slot: RwLock<Option<Arc<Handle>>>,
    models: Vec<Mutex<WorkerModel>>,
    /// Reads from handles older than this generation are not checked (a crash voided
    /// writes they may show).
    checkable_from: AtomicU64,
    ops_done: AtomicUsize,
    workers_done: AtomicUsize,
    /// Op count of the next event the controller has not begun (`usize::MAX`: none).
    pace: AtomicUsize,
    stop: AtomicBool,
    failure: Mutex<Option<String>>,
    violations: Mutex<Vec<String>>,
    counters: Counters,
    /// The controller's events as they happened.
    log: Mutex<Vec<String>>,
    /// What each worker is doing, and the controller (for the hang report).
    doing: Vec<Mutex<&'static str>>,
    phase: Mutex<String>,
    /// Bumped by every op and every controller phase (the watchdog's progress).
    progress: AtomicU64,
    /// The engine's info log; the controller's phases are written into it too.
    run_log: Arc<RunLog>,
}

impl Shared {
    fn fail(&self, detail: String) {
        let mut f = lock(&self.failure);
        if f.is_none() {
            *f = Some(detail);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn violation(&self, v: String) {
        let mut vs = lock(&self.violations);
        if vs.len() < MAX_VIOLATIONS {
            vs.push(v);
        }
    }

    fn set_doing(&self, w: usize, what: &'static str) {
        if let Some(d) = self.doing.get(w) {
            *lock(d) = what;
        }
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    fn set_phase(&self, what: String) {
        self.run_log.push(format!("controller: {what}"));
        *lock(&self.phase) = what;
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    /// What every thread is doing, for the hang report.
    fn threads_report(&self) -> String {
        let mut out = format!("controller: {}", lock(&self.phase));
        for (w, d) in self.doing.iter().enumerate() {
            out.push_str(&format!("; worker {w}: {}", lock(d)));
        }
        out
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn current(&self) -> Option<Arc<Handle>> {
        self.slot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn publish(&self, h: Option<Arc<Handle>>) -> Option<Arc<Handle>> {
        let mut slot = self.slot.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *slot, h)
    }

    /// Whether reads from `h` are checked against the model.
    fn checkable(&self, h: &Handle) -> bool {
        !h.crashed.load(Ordering::SeqCst) && h.epoch >= self.checkable_from.load(Ordering::SeqCst)
    }

    fn all_workers_done(&self) -> bool {
        self.workers_done.load(Ordering::SeqCst) >= self.cfg.workers
    }
}

/// Counts a worker as done when dropped (also when it panics).
struct DoneGuard<'a>(&'a Shared);

impl Drop for DoneGuard<'_> {
    fn drop(&mut self) {
        self.0.workers_done.fetch_add(1, Ordering::SeqCst);
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_else(|| "a non-string panic".to_string())
}

// ---------------------------------------------------------------------------------------
// Workers

/// Keys (local indexes) with the version read for each (`None`: no value).
type Observed = Vec<(u32, Option<u64>)>;

/// What a walk over a key interval saw: keys (in walk order) with their versions, and
/// whether it reached the end of the interval.
struct Walk {
    seen: Vec<(u32, Option<u64>)>,
    complete: bool,
}

/// An iterator (a cursor or an `Iter`) held open across later ops.
struct Held<I> {
    it: I,
    h: Arc<Handle>,
    /// The worker's history when it was made (`None`: not checked).
    view: Option<KeyHistory>,
    lo: u32,
    hi: u32,
    reverse: bool,
    seen: Vec<(u32, Option<u64>)>,
    steps_left: usize,
}

/// A cursor held open across later ops.
type HeldCursor = Held<DbIterator>;
/// An `Iter` held open across later ops.
type HeldIter = Held<Iter>;

struct Worker<'a> {
    w: usize,
    shared: &'a Shared,
    rng: Xoshiro256PlusPlus,
    h: Arc<Handle>,
    /// The handle answered `Closed` (or failed after a crash): switch to the next one.
    dead: bool,
    /// Calls still made on a dead handle before switching.
    stale_left: u32,
    /// Writes issued so far (the next version number).
    writes: u64,
    op: usize,
    held_cursor: Option<HeldCursor>,
    held_iter: Option<HeldIter>,
    recent: VecDeque<String>,
}

impl<'a> Worker<'a> {
    fn keys(&self) -> u32 {
        self.shared.cfg.keys_per_worker
    }

    /// Global key index of local key `k`.
    fn global(&self, k: u32) -> u32 {
        u32::try_from(self.w).unwrap_or(0) * self.keys() + k
    }

    fn key(&self, k: u32) -> Vec<u8> {
        key_bytes(self.global(k))
    }

    fn note(&mut self, text: String) {
        if self.recent.len() >= RECENT_OPS {
            self.recent.pop_front();
        }
        self.recent
            .push_back(format!("op {} on handle {}: {text}", self.op, self.h.epoch));
    }

    fn failure(&self, detail: &str) -> String {
        let mut out = format!("worker {} at op {}: {detail}", self.w, self.op);
        if !self.recent.is_empty() {
            out.push_str("\n  its last ops (oldest first):");
            for r in &self.recent {
                out.push_str("\n    ");
                out.push_str(r);
            }
        }
        out
    }

    /// The handle to call: the current one, a dead one a few more times, or the next one
    /// the controller publishes (`None` once the run stops).
    fn handle(&mut self) -> Option<Arc<Handle>> {
        if self.dead {
            if self.stale_left > 0 {
                self.stale_left -= 1;
                return Some(Arc::clone(&self.h));
            }
            self.shared.set_doing(self.w, "waiting for the next handle");
            loop {
                if self.shared.stopped() {
                    return None;
                }
                if let Some(h) = self.shared.current()
                    && h.epoch > self.h.epoch
                {
                    self.h = h;
                    self.dead = false;
                    break;
                }
                pause(30);
            }
        } else if self.rng.random_bool(0.02)
            && let Some(h) = self.shared.current()
            && h.epoch > self.h.epoch
        {
            // Picks up a newer handle without having met `Closed` on the old one.
            self.h = h;
        }
        Some(Arc::clone(&self.h))
    }

    /// An error from a call on `h`: `Closed` once its close began, anything after a crash
    /// froze its file system; anything else fails the run.
    fn tolerate(&mut self, h: &Handle, what: &str, e: &Error) -> Result<(), String> {
        if matches!(e, Error::Closed) {
            if !h.closing.load(Ordering::SeqCst) && !h.frozen.load(Ordering::SeqCst) {
                return Err(self.failure(&format!(
                    "{what} returned Closed on handle {}, which nobody closed",
                    h.epoch
                )));
            }
            bump(&self.shared.counters.closed_errors);
        } else if !h.frozen.load(Ordering::SeqCst) {
            return Err(self.failure(&format!(
                "{what} on handle {} (closing: {}): unexpected error: {e}",
                h.epoch,
                h.closing.load(Ordering::SeqCst)
            )));
        }
        if h.epoch == self.h.epoch && !self.dead {
            self.dead = true;
            self.stale_left = self.rng.random_range(0..3);
        }
        Ok(())
    }

    /// After close returned: `r` must be `Err(Closed)`.
    fn expect_closed<T>(&self, h: &Handle, what: &str, r: &mezzanine::Result<T>, closed: bool) {
        if !closed {
            return;
        }
        bump(&self.shared.counters.after_close_checks);
        if !matches!(r, Err(Error::Closed)) && !h.frozen.load(Ordering::SeqCst) {
            let got = match r {
                Ok(_) => "Ok".to_string(),
                Err(e) => e.to_string(),
            };
            self.shared.violation(format!(
                "worker {} op {}: {what} on handle {} began after close() returned but answered \
                 {got}, not Closed",
                self.w, self.op, h.epoch
            ));
        }
    }

    /// Decodes a value read for global key `g`.
    fn decode(&self, what: &str, g: u32, v: &[u8]) -> Result<u64, String> {
        match decode_value(v) {
            Ok((vk, ver)) if vk == g => Ok(ver),
            Ok((vk, _)) => {
                Err(self.failure(&format!("{what}: key {g} holds the value of key {vk}")))
            }
            Err(e) => Err(self.failure(&format!("{what}: key {g}: bad value: {e}"))),
        }
    }

    /// The worker's history now, if reads from `h` are checked.
    fn view(&self, h: &Handle) -> Option<KeyHistory> {
        let m = lock(&self.shared.models[self.w]);
        self.shared.checkable(h).then(|| m.hist.clone())
    }

    /// Checks what a read from `h` saw against the worker's history now.
    fn check_live(
        &self,
        h: &Handle,
        what: &str,
        observed: &[(u32, Option<u64>)],
    ) -> Result<(), String> {
        let m = lock(&self.shared.models[self.w]);
        if !self.shared.checkable(h) || observed.is_empty() {
            return Ok(());
        }
        bump(&self.shared.counters.live_checks);
        let n = m.hist.writes.len();
        m.hist.find_match(observed, n, n).map(|_| ()).map_err(|d| {
            self.failure(&format!(
                "{what} read a state the model does not allow: {d}"
            ))
        })
    }

    /// Checks `observed` against a history captured when a snapshot or iterator was made.
    fn check_view(
        &self,
        h: &Handle,
        view: Option<&KeyHistory>,
        what: &str,
        observed: &[(u32, Option<u64>)],
    ) -> Result<(), String> {
        let Some(view) = view else { return Ok(()) };
        if !self.shared.checkable(h) || observed.is_empty() {
            return Ok(());
        }
        bump(&self.shared.counters.live_checks);
        let n = view.writes.len();
        view.find_match(observed, n, n).map(|_| ()).map_err(|d| {
            self.failure(&format!(
                "{what} read a state the model did not allow when it was made: {d}"
            ))
        })
    }

    /// Turns the keys a walk over `lo..hi` saw into per-key observations: keys between
    /// its start and where it stopped that it did not see have no value.
    fn interval(
        &self,
        what: &str,
        lo: u32,
        hi: u32,
        reverse: bool,
        walk: &Walk,
    ) -> Result<Vec<(u32, Option<u64>)>, String> {
        let mut prev: Option<u32> = None;
        for &(k, _) in &walk.seen {
            if k < lo || k >= hi {
                return Err(self.failure(&format!(
                    "{what} over {lo}..{hi} yielded key index {k} outside it"
                )));
            }
            if let Some(p) = prev
                && ((!reverse && k <= p) || (reverse && k >= p))
            {
                return Err(self.failure(&format!(
                    "{what} over {lo}..{hi} ({}) yielded key {k} after {p}",
                    if reverse { "backward" } else { "forward" }
                )));
            }
            prev = Some(k);
        }
        let (a, b) = match (reverse, walk.complete, prev) {
            (_, true, _) => (lo, hi),
            (false, false, Some(last)) => (lo, last + 1),
            (true, false, Some(last)) => (last, hi),
            (_, false, None) => return Ok(Vec::new()),
        };
        let mut out: Vec<(u32, Option<u64>)> = (a..b).map(|k| (k, None)).collect();
        for &(k, v) in &walk.seen {
            if let Some(slot) = out.get_mut((k - a) as usize) {
                slot.1 = v;
            }
        }
        Ok(out)
    }

    /// The cursor's key and value, or `None` when its database began closing while they
    /// were read (`key` and `value` are empty from then on, as documented): `valid()` is
    /// checked again after reading them.
    fn cursor_entry(it: &DbIterator) -> Option<(Vec<u8>, Vec<u8>)> {
        let entry = (it.key().to_vec(), it.value().to_vec());
        it.valid().then_some(entry)
    }

    /// Local index and version of a pair an `Iter` yielded on `h`. No value the workers
    /// write is empty: an empty one (or an empty key) yielded while `h` is closing is a
    /// close contract violation (the step should have answered `Closed`; the walk stops
    /// there, `None`), and a failure otherwise.
    fn iter_pair(
        &self,
        h: &Handle,
        what: &str,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<(u32, Option<u64>)>, String> {
        if value.is_empty() || key.is_empty() {
            let text = format!(
                "{what} on handle {} yielded key {:?} with an empty value (no write has one), \
                 not Err(Closed)",
                h.epoch,
                String::from_utf8_lossy(key)
            );
            if h.closing.load(Ordering::SeqCst) {
                self.shared.violation(format!(
                    "worker {} op {}: {text}, while the handle was closing",
                    self.w, self.op
                ));
                return Ok(None);
            }
            return Err(self.failure(&text));
        }
        self.pair(what, key, value).map(Some)
    }

    /// Local index and version of a key-value pair yielded by a walk.
    fn pair(&self, what: &str, key: &[u8], value: &[u8]) -> Result<(u32, Option<u64>), String> {
        let base = self.global(0);
        let g = parse_key(key)
            .filter(|g| *g >= base && *g < base + self.keys())
            .ok_or_else(|| {
                self.failure(&format!(
                    "{what} yielded key {:?}, outside the worker's keys",
                    String::from_utf8_lossy(key)
                ))
            })?;
        let ver = self.decode(what, g, value)?;
        Ok((g - base, Some(ver)))
    }

    /// A random sub-range `lo..hi` of the worker's keys.
    fn sub_range(&mut self) -> (u32, u32) {
        let n = self.keys();
        if self.rng.random_bool(0.3) {
            return (0, n);
        }
        let a = self.rng.random_range(0..n);
        let b = self.rng.random_range(a + 1..=n);
        (a, b)
    }

    fn bounds(&self, lo: u32, hi: u32) -> ReadOptions {
        ReadOptions {
            lower_bound: Some(self.key(lo)),
            upper_bound: Some(self.key(hi)),
            ..ReadOptions::default()
        }
    }

    fn value_for(&mut self, k: u32, ver: u64) -> Vec<u8> {
        let len = self.rng.random_range(16..400);
        encode_value(self.global(k), ver, len)
    }

    // -- writes ---------------------------------------------------------------------------

    /// Issues one write (a put, delete or batch of the given keys) and records its outcome.
    fn write(&mut self, writes: Vec<(u32, Option<u64>)>, sync: bool) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let closed_before = h.closed.load(Ordering::SeqCst);
        let shared = self.shared;
        let model = &shared.models[self.w];
        let id = {
            let mut m = lock(model);
            // A crash voids every later write of its handle.
            (!h.crashed.load(Ordering::SeqCst)).then(|| m.register(writes.clone(), sync))
        };
        let opts = WriteOptions { sync };
        let mirror = if shared.cfg.mirror_family {
            h.db.column_family(crate::MIRROR_FAMILY)
        } else {
            None
        };
        let (what, r) = match writes.as_slice() {
            _ if mirror.is_some() => {
                let mut b = WriteBatch::new();
                for &(k, v) in &writes {
                    match v {
                        Some(ver) => {
                            let val = self.value_for(k, ver);
                            b.put(&self.key(k), &val);
                            if let Some(m) = &mirror {
                                b.put_cf(m, &self.key(k), &val);
                            }
                        }
                        None => {
                            b.delete(&self.key(k));
                            if let Some(m) = &mirror {
                                b.delete_cf(m, &self.key(k));
                            }
                        }
                    }
                }
                ("batch", h.db.write(&opts, b))
            }
            [(k, Some(ver))] => {
                let v = self.value_for(*k, *ver);
                ("put", h.db.put_opt(&opts, &self.key(*k), &v))
            }
            [(k, None)] => ("delete", h.db.delete_opt(&opts, &self.key(*k))),
            _ => {
                let mut b = WriteBatch::new();
                for &(k, v) in &writes {
                    match v {
                        Some(ver) => {
                            let val = self.value_for(k, ver);
                            b.put(&self.key(k), &val);
                        }
                        None => b.delete(&self.key(k)),
                    }
                }
                ("batch", h.db.write(&opts, b))
            }
        };
        self.expect_closed(&h, what, &r, closed_before);
        let ok = r.is_ok();
        let text = format!(
            "{what} {}{}: {}",
            writes
                .iter()
                .map(|(k, v)| format!("{k}={}", show(*v)))
                .collect::<Vec<_>>()
                .join(","),
            if sync { " sync" } else { "" },
            match &r {
                Ok(()) => "ok".to_string(),
                Err(e) => e.to_string(),
            }
        );
        self.note(text);
        if let Some(id) = id {
            lock(model).record(id, ok);
        }
        match r {
            Ok(()) => bump(&self.shared.counters.acked),
            Err(e) => {
                bump(&self.shared.counters.failed_writes);
                self.tolerate(&h, what, &e)?;
            }
        }
        Ok(())
    }

    fn next_version(&mut self) -> u64 {
        self.writes += 1;
        version(self.w, self.writes)
    }

    fn put(&mut self) -> Result<(), String> {
        let k = self.rng.random_range(0..self.keys());
        let ver = self.next_version();
        let sync = self.rng.random_bool(0.12);
        self.write(vec![(k, Some(ver))], sync)
    }

    fn delete(&mut self) -> Result<(), String> {
        let k = self.rng.random_range(0..self.keys());
        let sync = self.rng.random_bool(0.12);
        self.write(vec![(k, None)], sync)
    }

    fn batch(&mut self) -> Result<(), String> {
        let n = self.rng.random_range(2..=6);
        let ver = self.next_version();
        let writes = (0..n)
            .map(|_| {
                let k = self.rng.random_range(0..self.keys());
                (k, self.rng.random_bool(0.8).then_some(ver))
            })
            .collect();
        let sync = self.rng.random_bool(0.12);
        self.write(writes, sync)
    }

    // -- reads ----------------------------------------------------------------------------

    fn get(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let k = self.rng.random_range(0..self.keys());
        let closed = h.closed.load(Ordering::SeqCst);
        let r = h.db.get(&self.key(k));
        self.expect_closed(&h, "get", &r, closed);
        self.note(format!("get {k}: {}", r.as_ref().map_or("error", |_| "ok")));
        match r {
            Ok(v) => {
                let ver = v
                    .map(|v| self.decode("get", self.global(k), &v))
                    .transpose()?;
                self.check_live(&h, "get", &[(k, ver)])
            }
            Err(e) => self.tolerate(&h, "get", &e),
        }
    }

    /// Reads of several keys: `multi_get` (one view), at a snapshot or not.
    fn multi_get_at(
        &mut self,
        h: &Handle,
        ro: Option<&ReadOptions>,
        ks: &[u32],
    ) -> Result<Option<Observed>, String> {
        let keys: Vec<Vec<u8>> = ks.iter().map(|&k| self.key(k)).collect();
        let closed = h.closed.load(Ordering::SeqCst);
        let r = match ro {
            Some(ro) => h.db.multi_get_opt(ro, keys.iter().map(Vec::as_slice)),
            None => h.db.multi_get(keys.iter().map(Vec::as_slice)),
        };
        self.expect_closed(h, "multi_get", &r, closed);
        match r {
            Ok(vals) => {
                if vals.len() != ks.len() {
                    return Err(self.failure(&format!(
                        "multi_get of {} keys returned {} values",
                        ks.len(),
                        vals.len()
                    )));
                }
                let mut out = Vec::new();
                for (&k, v) in ks.iter().zip(vals) {
                    let ver = v
                        .map(|v| self.decode("multi_get", self.global(k), &v))
                        .transpose()?;
                    out.push((k, ver));
                }
                Ok(Some(out))
            }
            Err(e) => {
                self.tolerate(h, "multi_get", &e)?;
                Ok(None)
            }
        }
    }

    fn random_keys(&mut self) -> Vec<u32> {
        let n = self.rng.random_range(1..=8);
        (0..n)
            .map(|_| self.rng.random_range(0..self.keys()))
            .collect()
    }

    fn multi_get(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let ks = self.random_keys();
        let obs = self.multi_get_at(&h, None, &ks)?;
        self.note(format!(
            "multi_get {ks:?}: {}",
            if obs.is_some() { "ok" } else { "error" }
        ));
        match obs {
            Some(obs) => self.check_live(&h, "multi_get", &obs),
            None => Ok(()),
        }
    }

    /// Walks a fresh cursor over part of the worker's keys.
    fn cursor_walk(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let (lo, hi) = self.sub_range();
        let reverse = self.rng.random_bool(0.5);
        let limit = self.rng.random_range(1..=(hi - lo) as usize + 1);
        let closed = h.closed.load(Ordering::SeqCst);
        let r = h.db.cursor(&self.bounds(lo, hi));
        self.expect_closed(&h, "cursor", &r, closed);
        let mut it = match r {
            Ok(it) => it,
            Err(e) => {
                self.note(format!("cursor {lo}..{hi}: {e}"));
                return self.tolerate(&h, "cursor", &e);
            }
        };
        let how = self.rng.random_bool(0.5);
        match (reverse, how) {
            (false, true) => it.seek_to_first(),
            (false, false) => it.seek(&self.key(lo)),
            (true, true) => it.seek_to_last(),
            (true, false) => it.seek_for_prev(&self.key(hi - 1)),
        }
        let mut walk = Walk {
            seen: Vec::new(),
            complete: false,
        };
        while it.valid() && walk.seen.len() < limit {
            let Some((k, v)) = Self::cursor_entry(&it) else {
                break;
            };
            walk.seen.push(self.pair("cursor", &k, &v)?);
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        // `valid()` before `status()`: a close beginning in between makes the status
        // `Closed`, never a walk that looks complete.
        let ended = !it.valid();
        let status = it.status();
        walk.complete = ended && status.is_ok();
        self.note(format!(
            "cursor {lo}..{hi} {}: {} keys, {}",
            if reverse { "backward" } else { "forward" },
            walk.seen.len(),
            status
                .as_ref()
                .map_or_else(ToString::to_string, |()| "ok".into())
        ));
        if let Err(e) = status {
            self.tolerate(&h, "cursor walk", &e)?;
        }
        let obs = self.interval("cursor walk", lo, hi, reverse, &walk)?;
        self.check_live(&h, "cursor walk", &obs)
    }

    /// Walks `db.range` / `db.iter_opt` / `db.prefix`-free ranges over part of the keys.
    fn iter_walk(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let (lo, hi) = self.sub_range();
        let reverse = self.rng.random_bool(0.5);
        let limit = self.rng.random_range(1..=(hi - lo) as usize + 1);
        let it = if self.rng.random_bool(0.5) {
            h.db.range(self.key(lo)..self.key(hi))
        } else {
            h.db.iter_opt(&self.bounds(lo, hi))
        };
        let (walk, err) = self.walk_iter(&h, it, reverse, limit)?;
        self.note(format!(
            "iter {lo}..{hi} {}: {} keys{}",
            if reverse { "backward" } else { "forward" },
            walk.seen.len(),
            err.as_ref().map_or_else(String::new, |e| format!(", {e}"))
        ));
        if let Some(e) = err {
            self.tolerate(&h, "iter", &e)?;
        }
        let obs = self.interval("iter", lo, hi, reverse, &walk)?;
        self.check_live(&h, "iter", &obs)
    }

    fn walk_iter(
        &self,
        h: &Handle,
        mut it: Iter,
        reverse: bool,
        limit: usize,
    ) -> Result<(Walk, Option<Error>), String> {
        let mut walk = Walk {
            seen: Vec::new(),
            complete: false,
        };
        while walk.seen.len() < limit {
            let item = if reverse { it.next_back() } else { it.next() };
            match item {
                None => {
                    walk.complete = true;
                    break;
                }
                Some(Ok((k, v))) => match self.iter_pair(h, "iter", &k, &v)? {
                    Some(p) => walk.seen.push(p),
                    None => return Ok((walk, Some(Error::Closed))),
                },
                Some(Err(e)) => return Ok((walk, Some(e))),
            }
        }
        Ok((walk, None))
    }

    /// Reads at a snapshot, with a few writes between taking it and reading.
    fn snapshot_reads(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let snap = h.db.snapshot();
        let view = self.view(&h);
        for _ in 0..self.rng.random_range(0..=2) {
            if self.rng.random_bool(0.7) {
                self.put()?;
            } else {
                self.batch()?;
            }
        }
        let ro = snap.read_options();
        let obs = if self.rng.random_bool(0.5) {
            let ks = self.random_keys();
            self.multi_get_at(&h, Some(&ro), &ks)?
        } else {
            let (lo, hi) = self.sub_range();
            let ro = ReadOptions {
                lower_bound: Some(self.key(lo)),
                upper_bound: Some(self.key(hi)),
                ..ro
            };
            let reverse = self.rng.random_bool(0.5);
            let (walk, err) = self.walk_iter(&h, h.db.iter_opt(&ro), reverse, usize::MAX)?;
            if let Some(e) = err {
                self.tolerate(&h, "iter at a snapshot", &e)?;
            }
            Some(self.interval("iter at a snapshot", lo, hi, reverse, &walk)?)
        };
        self.note(format!(
            "snapshot reads: {}",
            if obs.is_some() { "ok" } else { "error" }
        ));
        match obs {
            Some(obs) => self.check_view(&h, view.as_ref(), "read at a snapshot", &obs),
            None => Ok(()),
        }
    }

    // -- held iterators -------------------------------------------------------------------

    fn open_held_cursor(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let (lo, hi) = self.sub_range();
        let view = self.view(&h);
        let mut it = match h.db.cursor(&self.bounds(lo, hi)) {
            Ok(it) => it,
            Err(e) => return self.tolerate(&h, "cursor", &e),
        };
        let reverse = self.rng.random_bool(0.5);
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let steps_left = self.rng.random_range(1..=(hi - lo) as usize + 2);
        self.note(format!("held cursor {lo}..{hi} opened"));
        let held = HeldCursor {
            it,
            h,
            view,
            lo,
            hi,
            reverse,
            seen: Vec::new(),
            steps_left,
        };
        self.check_held_cursor(held, false)
    }

    /// Records the cursor's position and checks it; keeps it unless it ended.
    fn check_held_cursor(
        &mut self,
        mut held: HeldCursor,
        closed_before: bool,
    ) -> Result<(), String> {
        if closed_before {
            bump(&self.shared.counters.after_close_checks);
            let status = held.it.status();
            if held.it.valid() {
                self.shared.violation(format!(
                    "worker {} op {}: a cursor made before close() on handle {} still yields \
                     keys after close() returned",
                    self.w, self.op, held.h.epoch
                ));
            } else if !(matches!(status, Err(Error::Closed))
                || (held.h.frozen.load(Ordering::SeqCst) && status.is_err()))
            {
                self.shared.violation(format!(
                    "worker {} op {}: a cursor made before close() on handle {} reports {} at \
                     its first positioning after close() returned, not Closed",
                    self.w,
                    self.op,
                    held.h.epoch,
                    status.map_or_else(|e| e.to_string(), |()| "Ok (the end)".into())
                ));
            }
            // One check per iterator: it is dropped after its first step past the close.
            held.steps_left = 0;
        }
        if let Some((k, v)) = held
            .it
            .valid()
            .then(|| Self::cursor_entry(&held.it))
            .flatten()
        {
            let p = self.pair("held cursor", &k, &v)?;
            held.seen.push(p);
            let walk = Walk {
                seen: held.seen.clone(),
                complete: false,
            };
            let obs = self.interval("held cursor", held.lo, held.hi, held.reverse, &walk)?;
            self.check_view(&held.h, held.view.as_ref(), "held cursor", &obs)?;
            if held.steps_left > 0 {
                self.held_cursor = Some(held);
            }
            return Ok(());
        }
        match held.it.status() {
            Ok(()) => {
                let walk = Walk {
                    seen: held.seen.clone(),
                    complete: true,
                };
                let obs = self.interval("held cursor", held.lo, held.hi, held.reverse, &walk)?;
                self.check_view(&held.h, held.view.as_ref(), "held cursor", &obs)
            }
            Err(e) => {
                let h = Arc::clone(&held.h);
                self.tolerate(&h, "held cursor", &e)
            }
        }
    }

    fn step_held_cursor(&mut self) -> Result<(), String> {
        let Some(mut held) = self.held_cursor.take() else {
            return Ok(());
        };
        let closed_before = held.h.closed.load(Ordering::SeqCst);
        held.steps_left = held.steps_left.saturating_sub(1);
        if held.reverse {
            held.it.prev();
        } else {
            held.it.next();
        }
        self.note(format!("held cursor step: valid {}", held.it.valid()));
        self.check_held_cursor(held, closed_before)
    }

    fn open_held_iter(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let (lo, hi) = self.sub_range();
        let view = self.view(&h);
        let it = if self.rng.random_bool(0.5) {
            h.db.range(self.key(lo)..self.key(hi))
        } else {
            h.db.iter_opt(&self.bounds(lo, hi))
        };
        let steps_left = self.rng.random_range(1..=(hi - lo) as usize + 2);
        self.note(format!("held iter {lo}..{hi} opened"));
        self.held_iter = Some(HeldIter {
            it,
            h,
            view,
            lo,
            hi,
            reverse: self.rng.random_bool(0.5),
            seen: Vec::new(),
            steps_left,
        });
        self.step_held_iter()
    }

    fn step_held_iter(&mut self) -> Result<(), String> {
        let Some(mut held) = self.held_iter.take() else {
            return Ok(());
        };
        let closed_before = held.h.closed.load(Ordering::SeqCst);
        held.steps_left = held.steps_left.saturating_sub(1);
        let item = if held.reverse {
            held.it.next_back()
        } else {
            held.it.next()
        };
        self.note(format!(
            "held iter step: {}",
            match &item {
                None => "end".to_string(),
                Some(Ok(_)) => "a key".to_string(),
                Some(Err(e)) => e.to_string(),
            }
        ));
        if closed_before {
            bump(&self.shared.counters.after_close_checks);
            let frozen = held.h.frozen.load(Ordering::SeqCst);
            let bad = match &item {
                Some(Err(Error::Closed)) => None,
                Some(Err(_)) if frozen => None,
                Some(Err(e)) => Some(e.to_string()),
                Some(Ok(_)) => Some("a key".to_string()),
                None => Some("the end".to_string()),
            };
            if let Some(bad) = bad {
                self.shared.violation(format!(
                    "worker {} op {}: an Iter made before close() on handle {} yields {bad} \
                     after close() returned, not Err(Closed)",
                    self.w, self.op, held.h.epoch
                ));
            }
            // One check per iterator: it is dropped after its first step past the close.
            held.steps_left = 0;
        }
        let complete = match item {
            Some(Ok((k, v))) => match self.iter_pair(&held.h, "held iter", &k, &v)? {
                Some(p) => {
                    held.seen.push(p);
                    false
                }
                None => {
                    let h = Arc::clone(&held.h);
                    return self.tolerate(&h, "held iter", &Error::Closed);
                }
            },
            None => true,
            Some(Err(e)) => {
                let h = Arc::clone(&held.h);
                return self.tolerate(&h, "held iter", &e);
            }
        };
        let walk = Walk {
            seen: held.seen.clone(),
            complete,
        };
        let obs = self.interval("held iter", held.lo, held.hi, held.reverse, &walk)?;
        self.check_view(&held.h, held.view.as_ref(), "held iter", &obs)?;
        if !complete && held.steps_left > 0 {
            self.held_iter = Some(held);
        }
        Ok(())
    }

    // -- maintenance ----------------------------------------------------------------------

    /// Runs a call that returns nothing to check but its error.
    fn call<T>(
        &mut self,
        what: &str,
        f: impl FnOnce(&Db) -> mezzanine::Result<T>,
    ) -> Result<Option<T>, String> {
        let Some(h) = self.handle() else {
            return Ok(None);
        };
        let closed = h.closed.load(Ordering::SeqCst);
        let r = f(&h.db);
        self.expect_closed(&h, what, &r, closed);
        self.note(format!(
            "{what}: {}",
            r.as_ref().map_or_else(ToString::to_string, |_| "ok".into())
        ));
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) => {
                self.tolerate(&h, what, &e)?;
                Ok(None)
            }
        }
    }

    fn flush(&mut self) -> Result<(), String> {
        let Some(h) = self.handle() else {
            return Ok(());
        };
        let shared = self.shared;
        // Everything this worker had acknowledged before the flush began survives a
        // power cut once it succeeds.
        let covered = lock(&shared.models[self.w]).next_id;
        let closed = h.closed.load(Ordering::SeqCst);
        let r = h.db.flush();
        self.expect_closed(&h, "flush", &r, closed);
        self.note(format!(
            "flush: {}",
            r.as_ref()
                .map_or_else(ToString::to_string, |()| "ok".into())
        ));
        match r {
            Ok(()) => {
                let mut m = lock(&shared.models[self.w]);
                if !h.crashed.load(Ordering::SeqCst) {
                    m.durable_id = m.durable_id.max(covered);
                }
                Ok(())
            }
            Err(e) => self.tolerate(&h, "flush", &e),
        }
    }

    fn compact_range(&mut self) -> Result<(), String> {
        let total = self.keys() * u32::try_from(self.shared.cfg.workers).unwrap_or(1);
        if self.rng.random_bool(0.25) {
            self.call("compact_range (all)", |db| db.compact_range(None, None))?;
        } else {
            let a = self.rng.random_range(0..total);
            let b = self.rng.random_range(a..total);
            let (ka, kb) = (key_bytes(a), key_bytes(b));
            self.call("compact_range", |db| db.compact_range(Some(&ka), Some(&kb)))?;
        }
        Ok(())
    }

    fn step(&mut self) -> Result<(), String> {
        if self.held_cursor.is_some() && self.rng.random_bool(0.3) {
            self.step_held_cursor()?;
        }
        if self.held_iter.is_some() && self.rng.random_bool(0.3) {
            self.step_held_iter()?;
        }
        let bg_share = if self.shared.manual { 80 } else { 15 };
        let r = self.rng.random_range(0..1000u32);
        let what = match r {
            0..260 => "put",
            260..340 => "delete",
            340..460 => "batch",
            460..540 => "get",
            540..580 => "multi_get",
            580..630 => "cursor walk",
            630..680 => "iter walk",
            680..730 => "held iterator",
            730..770 => "snapshot reads",
            770..795 => "flush",
            795..815 => "compact_range",
            815..845 => "property or stats",
            845..852 => "verify",
            852..858 => "wait_for_background",
            r if (858..858 + bg_share).contains(&r) => "run_background_work",
            _ => "put",
        };
        self.shared.set_doing(self.w, what);
        match r {
            0..260 => self.put(),
            260..340 => self.delete(),
            340..460 => self.batch(),
            460..540 => self.get(),
            540..580 => self.multi_get(),
            580..630 => self.cursor_walk(),
            630..680 => self.iter_walk(),
            680..710 if self.held_cursor.is_none() => self.open_held_cursor(),
            710..730 if self.held_iter.is_none() => self.open_held_iter(),
            730..770 => self.snapshot_reads(),
            770..795 => self.flush(),
            795..815 => self.compact_range(),
            815..835 => {
                let name = match self.rng.random_range(0..4) {
                    0 => "mezz.stats",
                    1 => "mezz.levels",
                    2 => "mezz.options",
                    _ => "mezz.num-files-at-level0",
                };
                if let Some(h) = self.handle() {
                    let p = h.db.property(name);
                    self.note(format!("property {name}: {}", p.is_some()));
                }
                Ok(())
            }
            835..845 => {
                if let Some(h) = self.handle() {
                    let s = h.db.stats();
                    self.note(format!("stats: {} flushes", s.flushes));
                }
                Ok(())
            }
            845..852 => self.call("verify", Db::verify).map(|_| ()),
            852..858 => self
                .call("wait_for_background", Db::wait_for_background)
                .map(|_| ()),
            r if (858..858 + bg_share).contains(&r) => {
                let jobs = self.rng.random_range(1..=3);
                self.call("run_background_work", |db| db.run_background_work(jobs))
                    .map(|_| ())
            }
            _ => self.put(),
        }
    }

    /// Waits while the workers are past an event the controller has not begun.
    fn pace(&self) {
        loop {
            let p = self.shared.pace.load(Ordering::SeqCst);
            if p == usize::MAX
                || self.shared.ops_done.load(Ordering::SeqCst) <= p.saturating_add(PACE_SLACK)
                || self.shared.stopped()
            {
                return;
            }
            pause(20);
        }
    }

    fn run(&mut self) -> Result<(), String> {
        for i in 0..self.shared.cfg.ops_per_worker {
            if self.shared.stopped() {
                return Ok(());
            }
            self.shared.set_doing(self.w, "pacing");
            self.pace();
            self.op = i;
            self.step()?;
            self.shared.ops_done.fetch_add(1, Ordering::SeqCst);
            bump(&self.shared.counters.ops);
        }
        Ok(())
    }
}

fn worker_main(shared: &Shared, w: usize, seed: u64) {
    let _done = DoneGuard(shared);
    let Some(h) = shared.current() else { return };
    let mut worker = Worker {
        w,
        shared,
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        h,
        dead: false,
        stale_left: 0,
        writes: 0,
        op: 0,
        held_cursor: None,
        held_iter: None,
        recent: VecDeque::new(),
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(detail)) => shared.fail(detail),
        Err(p) => shared.fail(worker.failure(&format!("panicked: {}", panic_text(&*p)))),
    }
}

// ---------------------------------------------------------------------------------------
// The controller

/// An event of the controller's schedule.
#[derive(Debug, Clone)]
enum EventKind {
    /// Close (from two threads at once when `twice`), then reopen.
    Close {
        twice: bool,
        /// Make a cursor and an `Iter` before the close and step them after it.
        probe: bool,
        /// `Db::verify` after the reopen.
        verify: bool,
    },
    /// Crash (clone the files and cut NVM at one instant), then reopen on the clone.
    Crash { keep: KeepUnsynced, clone_seed: u64 },
}

#[derive(Debug, Clone)]
struct Event {
    at: usize,
    kind: EventKind,
}

fn schedule(cfg: &LifecycleConfig, rng: &mut Xoshiro256PlusPlus) -> Vec<Event> {
    let total = cfg.workers * cfg.ops_per_worker;
    let (lo, hi) = (total / 20, (total * 19 / 20).max(total / 20 + 1));
    let mut ats: Vec<usize> = (0..cfg.events).map(|_| rng.random_range(lo..hi)).collect();
    ats.sort_unstable();
    ats.into_iter()
        .map(|at| {
            let kind = if rng.random_range(0..100) < cfg.crash_percent {
                let keep = match rng.random_range(0..3) {
                    0 => KeepUnsynced::None,
                    1 => KeepUnsynced::RandomPrefix,
                    _ => KeepUnsynced::All,
                };
                EventKind::Crash {
                    keep,
                    clone_seed: rng.random(),
                }
            } else {
                EventKind::Close {
                    twice: rng.random_bool(0.3),
                    probe: rng.random_bool(0.5),
                    verify: rng.random_bool(0.25),
                }
            };
            Event { at, kind }
        })
        .collect()
}

/// The history of a run, saved to a file when it fails: the controller's phases,
/// timestamped as the engine's `LOG` lines are, and each handle's `LOG`, taken from the
/// run's file system once the handle is closed (a crashed handle's from the file system it
/// wrote, which the crash froze). The engine writes its `LOG` as usual, so a run's timing is
/// the one a user's database has.
#[derive(Debug, Default)]
struct RunLog {
    lines: Mutex<Vec<String>>,
}

impl RunLog {
    fn push(&self, line: String) {
        let t = mezzanine::info_log::timestamp(std::time::SystemTime::now());
        lock(&self.lines).push(format!("{t} {line}"));
    }

    /// Appends the `LOG` of the database in `fs` (`what`: whose it is).
    fn take_log(&self, fs: &MemFs, what: &str) {
        let bytes = fs
            .read_all(&Path::new(DB_DIR).join("LOG"))
            .unwrap_or_default();
        let mut l = lock(&self.lines);
        l.push(format!("== LOG of {what}"));
        l.extend(String::from_utf8_lossy(&bytes).lines().map(str::to_string));
        l.push(format!("== end of the LOG of {what}"));
    }

    /// Writes the history, with the `LOG` of the database in `fs` last, to a file in the
    /// temporary directory named after the run; returns its path.
    fn save(&self, fs: &MemFs, seed: u64, set: &str) -> Option<Box<Path>> {
        self.take_log(fs, "the last handle (or failed open)");
        let name = format!("mezz-lifecycle-{seed}-{}.log", set.replace('/', "_"));
        let path = std::env::temp_dir().join(name);
        let mut text = String::new();
        for l in lock(&self.lines).iter() {
            text.push_str(l);
            text.push('\n');
        }
        std::fs::write(&path, text).ok()?;
        Some(path.into_boxed_path())
    }
}

/// The file system and options the controller opens the database with.
struct DbEnv {
    mem: MemFs,
    fault: FaultFs,
    frozen: Arc<AtomicBool>,
    opts: Options,
    epoch: u64,
    /// Make the mirror column family at the first open (`LifecycleConfig::mirror_family`).
    mirror: bool,
}

impl DbEnv {
    fn new(mem: MemFs, opts: Options) -> Self {
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let frozen = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&frozen);
        fault.freeze_when(move || f.load(Ordering::SeqCst));
        Self {
            mem,
            fault,
            frozen,
            opts,
            epoch: 0,
            mirror: false,
        }
    }

    fn open(&mut self) -> mezzanine::Result<Handle> {
        self.open_with(|_| {})
    }

    /// Opens with the options changed by `f` (for this open only).
    fn open_with(&mut self, f: impl FnOnce(&mut Options)) -> mezzanine::Result<Handle> {
        let mut o = self.opts.clone();
        f(&mut o);
        o.fs = Arc::new(self.fault.clone());
        let db = Db::open(DB_DIR, o.clone())?;
        if self.mirror && db.column_family(crate::MIRROR_FAMILY).is_none() {
            // The first open (of an empty database): made before any write.
            db.create_column_family(crate::MIRROR_FAMILY, &o)?;
        }
        self.epoch += 1;
        Ok(Handle::new(db, self.epoch, Arc::clone(&self.frozen)))
    }
}

struct Controller<'a> {
    shared: &'a Shared,
    env: DbEnv,
    clean_reopens: u64,
    double_closes: u64,
    crashes: u64,
    keys_checked: u64,
    flushes: u64,
    compactions: u64,
}

/// How the state after a reopen is bounded, per worker.
enum Bound {
    /// Clean close: every acknowledged write.
    Clean,
    /// Crash: the histories when the crash was taken, the required and the issued ids.
    Crash(Vec<(KeyHistory, u64, u64)>),
}

impl Controller<'_> {
    fn ops_now(&self) -> String {
        let total = self.shared.ops_done.load(Ordering::SeqCst);
        let next: Vec<String> = self
            .shared
            .models
            .iter()
            .map(|m| lock(m).next_id.to_string())
            .collect();
        format!(
            "at {total} ops (writes issued per worker: {})",
            next.join("/")
        )
    }

    fn fail(&self, detail: String) -> String {
        format!("controller: {detail}")
    }

    /// Counts the work `h` did (before it is closed).
    fn count_work(&mut self, h: &Handle) {
        let s = h.db.stats();
        self.flushes += s.flushes;
        self.compactions += s.compactions;
    }

    /// Reads every key of the new handle and checks each worker's keys; resets the
    /// histories to what was read.
    fn check_reopened(&mut self, db: &Db, bound: Bound, what: &str) -> Result<(), String> {
        let cfg = &self.shared.cfg;
        let total = cfg.keys_per_worker * u32::try_from(cfg.workers).unwrap_or(1);
        let state = read_state(db, total).map_err(|e| self.fail(format!("after {what}: {e}")))?;
        if self.env.mirror {
            let cf = db
                .column_family(crate::MIRROR_FAMILY)
                .ok_or_else(|| self.fail(format!("after {what}: the mirror family is gone")))?;
            let mirrored = read_state_in(db, Some(&cf), total)
                .map_err(|e| self.fail(format!("after {what}: the mirror family: {e}")))?;
            if let Some(k) = (0..state.len()).find(|&k| state[k] != mirrored[k]) {
                return Err(self.fail(format!(
                    "after {what}: key {k} is at {:?} in the default family, {:?} in the \
                     mirror family (a batch spanning families was split)",
                    state[k], mirrored[k]
                )));
            }
        }
        for (w, model) in self.shared.models.iter().enumerate() {
            let k = cfg.keys_per_worker as usize;
            let observed: Vec<Option<u64>> = state.iter().skip(w * k).take(k).copied().collect();
            let pairs: Vec<(u32, Option<u64>)> = (0u32..).zip(observed.iter().copied()).collect();
            let mut m = lock(model);
            let r = match &bound {
                Bound::Clean => {
                    let min = m.hist.acked_len();
                    let max = m.hist.writes.len();
                    m.hist.find_match(&pairs, min, max)
                }
                Bound::Crash(snaps) => match snaps.get(w) {
                    Some((hist, required, issued)) => {
                        let min = hist.index_of(*required);
                        let max = hist.index_of(*issued);
                        hist.find_match(&pairs, min, max)
                    }
                    None => Err("no history taken at the crash".into()),
                },
            };
            r.map_err(|d| self.fail(format!("after {what}, worker {w}'s keys: {d}")))?;
            m.reset(observed);
            self.keys_checked += k as u64;
        }
        Ok(())
    }

    /// A cursor and (when the database is not empty) an `Iter` that yielded a pair, made
    /// before a close.
    fn probes(h: &Handle) -> Option<(DbIterator, Option<Iter>)> {
        let mut c = h.db.cursor(&ReadOptions::default()).ok()?;
        c.seek_to_first();
        let mut it = h.db.iter();
        let started = matches!(it.next(), Some(Ok(_)));
        Some((c, started.then_some(it)))
    }

    /// Closes `h` (from two threads at once when `twice`) and checks the close contract.
    fn close(&mut self, h: &Handle, twice: bool) -> Result<(), String> {
        let lock_path = Path::new(DB_DIR).join("LOCK");
        let fault = self.env.fault.clone();
        // Ok(true) when this call closed the handle, Ok(false) when it answered Closed.
        let closer = |who: &str| -> Result<bool, String> {
            match h.db.close() {
                Ok(()) => Ok(true),
                Err(Error::Closed) if twice => {
                    // The handle must be fully closed by now: its LOCK released.
                    if let Err(e) = fault.lock(&lock_path) {
                        self.shared.violation(format!(
                            "handle {}: the {who} of two concurrent close() calls returned \
                             Err(Closed) while the LOCK was still held ({e}): before the handle \
                             was fully closed",
                            h.epoch
                        ));
                    }
                    Ok(false)
                }
                Err(e) => Err(format!("close of handle {} ({who} closer): {e}", h.epoch)),
            }
        };
        if twice {
            let barrier = Barrier::new(2);
            let (a, b) = std::thread::scope(|s| {
                let t = s.spawn(|| {
                    barrier.wait();
                    closer("second")
                });
                barrier.wait();
                let a = closer("first");
                let b = t.join().unwrap_or_else(|p| {
                    Err(format!("second closer panicked: {}", panic_text(&*p)))
                });
                (a, b)
            });
            let (a, b) = (a.map_err(|d| self.fail(d))?, b.map_err(|d| self.fail(d))?);
            if a == b {
                self.shared.violation(format!(
                    "handle {}: of two concurrent close() calls, {} returned Ok",
                    h.epoch,
                    if a { "both" } else { "neither" }
                ));
            }
            self.double_closes += 1;
        } else {
            closer("only").map_err(|d| self.fail(d))?;
        }
        h.closed.store(true, Ordering::SeqCst);
        // Calls beginning now get `Closed`.
        let c = &self.shared.counters;
        let checks: [(&str, mezzanine::Result<()>); 3] = [
            ("get", h.db.get(&key_bytes(0)).map(|_| ())),
            ("flush", h.db.flush()),
            (
                "run_background_work",
                h.db.run_background_work(1).map(|_| ()),
            ),
        ];
        for (what, r) in checks {
            bump(&c.after_close_checks);
            if !matches!(r, Err(Error::Closed)) {
                self.shared.violation(format!(
                    "handle {}: {what} after close() returned answered {}, not Closed",
                    h.epoch,
                    r.map_or_else(|e| e.to_string(), |()| "Ok".into())
                ));
            }
        }
        Ok(())
    }

    fn clean_event(&mut self, twice: bool, probe: bool, verify: bool) -> Result<(), String> {
        let Some(h) = self.shared.publish(None) else {
            return Err(self.fail("no handle to close".into()));
        };
        h.closing.store(true, Ordering::SeqCst);
        self.count_work(&h);
        let probes = if probe { Self::probes(&h) } else { None };
        self.shared
            .set_phase(format!("closing handle {} (twice: {twice})", h.epoch));
        self.close(&h, twice)?;
        // Nothing of a closed handle may write to NVM any more (the next handle maps the
        // same pool): its persist count must not move while the checks below run.
        let persisted = self.env.opts.nvm_sim.as_ref().map(SimNvm::persist_points);
        self.shared
            .run_log
            .take_log(&self.env.mem, &format!("handle {}", h.epoch));
        if let Some((mut c, it)) = probes {
            // The next positioning call of each must answer `Closed`.
            if c.valid() {
                c.next();
            } else {
                c.seek_to_first();
            }
            let c_ok = !c.valid() && matches!(c.status(), Err(Error::Closed));
            bump(&self.shared.counters.after_close_checks);
            let i_ok = it.is_none_or(|mut it| {
                bump(&self.shared.counters.after_close_checks);
                matches!(it.next(), Some(Err(Error::Closed)))
            });
            if !c_ok || !i_ok {
                self.shared.violation(format!(
                    "handle {}: after close() returned, a cursor made before it {} and an Iter \
                     made before it {}",
                    h.epoch,
                    if c_ok {
                        "answered Closed"
                    } else {
                        "did not answer Closed"
                    },
                    if i_ok {
                        "answered Closed (or was not made)"
                    } else {
                        "did not answer Closed"
                    }
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(2));
        let now = self.env.opts.nvm_sim.as_ref().map(SimNvm::persist_points);
        if now != persisted {
            self.shared.violation(format!(
                "handle {}: NVM persists went on after close() returned ({persisted:?} -> \
                 {now:?})",
                h.epoch
            ));
        }
        self.shared
            .set_phase(format!("reopening after closing handle {}", h.epoch));
        let new = self.env.open().map_err(|e| {
            self.fail(format!(
                "reopen after close() of handle {} returned: {e}",
                h.epoch
            ))
        })?;
        self.shared
            .set_phase(format!("checking handle {}", new.epoch));
        self.check_reopened(
            &new.db,
            Bound::Clean,
            &format!("a clean close of handle {}", h.epoch),
        )?;
        if verify {
            new.db
                .verify()
                .map_err(|e| self.fail(format!("verify after reopen: {e}")))?;
        }
        self.clean_reopens += 1;
        self.shared.publish(Some(Arc::new(new)));
        Ok(())
    }

    fn crash_event(&mut self, keep: KeepUnsynced, clone_seed: u64) -> Result<(), String> {
        let Some(h) = self.shared.current() else {
            return Err(self.fail("no handle to crash".into()));
        };
        let required: Vec<u64> = self
            .shared
            .models
            .iter()
            .map(|m| {
                let m = lock(m);
                match keep {
                    KeepUnsynced::All => m.acked_id,
                    KeepUnsynced::None | KeepUnsynced::RandomPrefix => m.durable_id,
                }
            })
            .collect();
        // Files and NVM are cut at one instant, and the old file system freezes there.
        let frozen = Arc::clone(&self.env.frozen);
        let nvm = self.env.opts.nvm_sim.clone();
        let (clone, cut) = self.env.mem.crash_clone_with(
            &CrashOptions {
                keep_unsynced: keep,
                seed: clone_seed,
            },
            || {
                frozen.store(true, Ordering::SeqCst);
                nvm.map(|sim| {
                    sim.power_cut(&mezz_pmem::PowerCut {
                        keep_unpersisted: match keep {
                            KeepUnsynced::All => mezz_pmem::KeepLines::All,
                            KeepUnsynced::None => mezz_pmem::KeepLines::None,
                            KeepUnsynced::RandomPrefix => mezz_pmem::KeepLines::Random,
                        },
                        seed: clone_seed,
                    })
                })
            },
        );
        let issued: Vec<u64> = self.shared.models.iter().map(|m| lock(m).next_id).collect();
        self.shared.publish(None);
        h.closing.store(true, Ordering::SeqCst);
        h.crashed.store(true, Ordering::SeqCst);
        self.shared
            .checkable_from
            .store(self.env.epoch + 1, Ordering::SeqCst);
        // Every write of the crashed handle is void from here on: what it may have left
        // is in the clone, checked against the histories taken now.
        let snaps: Vec<(KeyHistory, u64, u64)> = self
            .shared
            .models
            .iter()
            .zip(required.iter().zip(&issued))
            .map(|(m, (&r, &i))| {
                let mut m = lock(m);
                let snap = m.hist.clone();
                m.hist.writes.clear();
                (snap, r, i)
            })
            .collect();
        self.count_work(&h);
        // Its file system is frozen: the close may fail, which does not matter.
        self.shared
            .set_phase(format!("closing crashed handle {}", h.epoch));
        let _ = h.db.close();
        h.closed.store(true, Ordering::SeqCst);
        self.shared
            .run_log
            .take_log(&self.env.mem, &format!("handle {} (crashed)", h.epoch));
        self.env = DbEnv {
            epoch: self.env.epoch,
            ..DbEnv::new(clone, {
                let mut o = self.env.opts.clone();
                if o.nvm_sim.is_some() {
                    o.nvm_sim = cut;
                }
                o
            })
        };
        self.shared
            .set_phase(format!("reopening after a crash of handle {}", h.epoch));
        let what = format!(
            "a crash of handle {} ({keep:?}, clone seed {clone_seed})",
            h.epoch
        );
        let strict = self.env.opts.recovery_mode_in_force() == RecoveryMode::AbsoluteConsistency;
        let new = match self.env.open() {
            Ok(new) => new,
            // Absolute consistency refuses the torn log tail a crash may leave, as
            // documented: recover once tolerating it, then the options of the set again.
            Err(e @ Error::Corruption { .. }) if strict => {
                lock(&self.shared.log).push(format!(
                    "  the open after {what} refused a damaged log (absolute consistency): \
                     {e}; recovered with tolerate_corrupt_tail, closed, reopened"
                ));
                let relaxed = self
                    .env
                    .open_with(|o| {
                        o.paranoid_checks = false;
                        o.recovery_mode = RecoveryMode::TolerateCorruptTail;
                    })
                    .map_err(|e| self.fail(format!("tolerant reopen after {what}: {e}")))?;
                self.check_reopened(&relaxed.db, Bound::Crash(snaps), &what)?;
                relaxed
                    .db
                    .close()
                    .map_err(|e| self.fail(format!("close after the tolerant reopen: {e}")))?;
                let new = self.env.open().map_err(|e| {
                    self.fail(format!(
                        "reopen with the set's options after a tolerant recovery from {what}: {e}"
                    ))
                })?;
                self.check_reopened(
                    &new.db,
                    Bound::Clean,
                    "the reopen after a tolerant recovery",
                )?;
                self.crashes += 1;
                self.shared.publish(Some(Arc::new(new)));
                return Ok(());
            }
            Err(e) => return Err(self.fail(format!("reopen after {what}: {e}"))),
        };
        self.shared
            .set_phase(format!("checking handle {}", new.epoch));
        self.check_reopened(&new.db, Bound::Crash(snaps), &what)?;
        self.crashes += 1;
        self.shared.publish(Some(Arc::new(new)));
        Ok(())
    }

    fn run(&mut self, events: &[Event]) -> Result<(), String> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.shared.cfg.seed ^ 0xc047);
        for (i, ev) in events.iter().enumerate() {
            self.shared
                .set_phase(format!("waiting for op {} (event {i})", ev.at));
            self.shared.pace.store(ev.at, Ordering::SeqCst);
            while self.shared.ops_done.load(Ordering::SeqCst) < ev.at
                && !self.shared.all_workers_done()
                && !self.shared.stopped()
            {
                pause(20);
            }
            if self.shared.stopped() {
                return Ok(());
            }
            if self.shared.all_workers_done() {
                lock(&self.shared.log).push(format!(
                    "event {i} (at {}): skipped, the workers had finished",
                    ev.at
                ));
                continue;
            }
            self.shared.pace.store(
                events.get(i + 1).map_or(usize::MAX, |e| e.at),
                Ordering::SeqCst,
            );
            pause(rng.random_range(0..300));
            let line = format!(
                "event {i} (target {}): {:?} {}",
                ev.at,
                ev.kind,
                self.ops_now()
            );
            lock(&self.shared.log).push(line);
            match ev.kind {
                EventKind::Close {
                    twice,
                    probe,
                    verify,
                } => self.clean_event(twice, probe, verify)?,
                EventKind::Crash { keep, clone_seed } => self.crash_event(keep, clone_seed)?,
            }
        }
        self.shared.pace.store(usize::MAX, Ordering::SeqCst);
        self.shared
            .set_phase("waiting for the workers to finish".into());
        while !self.shared.all_workers_done() {
            pause(100);
        }
        if self.shared.stopped() {
            return Ok(());
        }
        // The final clean close, reopen and full check.
        lock(&self.shared.log).push(format!("final close {}", self.ops_now()));
        self.clean_event(false, false, true)?;
        if let Some(h) = self.shared.publish(None) {
            self.shared
                .set_phase(format!("last close of handle {}", h.epoch));
            self.count_work(&h);
            h.closing.store(true, Ordering::SeqCst);
            h.db.close()
                .map_err(|e| self.fail(format!("last close: {e}")))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Runs

/// Environment variable: seconds without any progress after which a run is reported as
/// hung (default 120; see [`run_one`]).
pub const STALL_ENV: &str = "MEZZ_LIFECYCLE_STALL_SECS";

fn stall_secs() -> u64 {
    env_value(STALL_ENV).unwrap_or(120)
}

/// Runs one seeded lifecycle stress under `set`.
///
/// A hang (no op and no controller step for `MEZZ_LIFECYCLE_STALL_SECS` seconds, default
/// 120: a deadlock, or a call that never returns) cannot be failed by returning, since the
/// stuck threads cannot be stopped: a watchdog thread then prints the failure (seed, set,
/// schedule, what each thread was doing) and exits the process with status 2.
///
/// # Errors
/// The first failed check, or the close contract violations found.
pub fn run_one(
    cfg: &LifecycleConfig,
    set: &NamedOptions,
) -> Result<LifecycleReport, LifecycleFailure> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let events = schedule(cfg, &mut rng);
    let mut opts = set.options.clone();
    if opts.nvm_sim.is_some() {
        opts.nvm_sim = Some(SimNvm::new());
    }
    let run_log = Arc::new(RunLog::default());
    let fail = |detail: String,
                violations: Vec<String>,
                schedule: Vec<String>,
                fs: &MemFs|
     -> LifecycleFailure {
        let saved = run_log.save(fs, cfg.seed, &set.name).map_or_else(
            || "(the history of the run could not be saved)".to_string(),
            |p| {
                format!(
                    "the history of the run (phases, every handle's LOG): {}",
                    p.display()
                )
            },
        );
        LifecycleFailure {
            seed: cfg.seed,
            set: set.name.clone(),
            size: cfg.size,
            detail: format!("{detail}\n{saved}"),
            violations,
            schedule,
        }
    };
    let cfg = &LifecycleConfig {
        mirror_family: cfg.mirror_family && !opts.nvm_memtable.in_place(),
        ..cfg.clone()
    };
    let mut env = DbEnv::new(MemFs::new(), opts.clone());
    env.mirror = cfg.mirror_family;
    let first = env
        .open()
        .map_err(|e| fail(format!("open: {e}"), Vec::new(), Vec::new(), &env.mem))?;
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        manual: opts.manual_background,
        slot: RwLock::new(Some(Arc::new(first))),
        models: (0..cfg.workers)
            .map(|_| Mutex::new(WorkerModel::new(cfg.keys_per_worker)))
            .collect(),
        checkable_from: AtomicU64::new(0),
        ops_done: AtomicUsize::new(0),
        workers_done: AtomicUsize::new(0),
        pace: AtomicUsize::new(usize::MAX),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        violations: Mutex::new(Vec::new()),
        counters: Counters::default(),
        log: Mutex::new(Vec::new()),
        doing: (0..cfg.workers).map(|_| Mutex::new("starting")).collect(),
        phase: Mutex::new("starting".into()),
        progress: AtomicU64::new(0),
        run_log: Arc::clone(&run_log),
    });
    let worker_seeds: Vec<u64> = (0..cfg.workers).map(|_| rng.random()).collect();
    let threads: Vec<_> = worker_seeds
        .iter()
        .enumerate()
        .map(|(w, &seed)| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || worker_main(&shared, w, seed))
        })
        .collect();
    let finished = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (shared, finished) = (Arc::clone(&shared), Arc::clone(&finished));
        let header = format!(
            "seed {}, option set {} ({} run)",
            cfg.seed, set.name, cfg.size
        );
        let replay = format!(
            "{SEED_ENV}={} {SET_ENV}={} {SIZE_ENV}={}",
            cfg.seed, set.name, cfg.size
        );
        std::thread::spawn(move || watchdog(&shared, &finished, &header, &replay))
    };
    let mut ctl = Controller {
        shared: &shared,
        env,
        clean_reopens: 0,
        double_closes: 0,
        crashes: 0,
        keys_checked: 0,
        flushes: 0,
        compactions: 0,
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctl.run(&events)));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(d)) => shared.fail(d),
        Err(p) => shared.fail(format!("controller panicked: {}", panic_text(&*p))),
    }
    shared.stop.store(true, Ordering::SeqCst);
    for t in threads {
        if let Err(p) = t.join() {
            shared.fail(format!("worker thread panicked: {}", panic_text(&*p)));
        }
    }
    finished.store(true, Ordering::SeqCst);
    let _ = watchdog.join();
    // Drop the handles before reporting (the slot may hold one after a failure).
    shared.publish(None);
    let violations = lock(&shared.violations).clone();
    let failure = lock(&shared.failure).clone();
    let log = lock(&shared.log).clone();
    if failure.is_some() || !violations.is_empty() {
        return Err(fail(
            failure.unwrap_or_default(),
            violations,
            log,
            &ctl.env.mem,
        ));
    }
    let c = &shared.counters;
    Ok(LifecycleReport {
        runs: 1,
        ops: c.ops.load(Ordering::Relaxed),
        acked: c.acked.load(Ordering::Relaxed),
        failed_writes: c.failed_writes.load(Ordering::Relaxed),
        closed_errors: c.closed_errors.load(Ordering::Relaxed),
        clean_reopens: ctl.clean_reopens,
        double_closes: ctl.double_closes,
        crashes: ctl.crashes,
        live_checks: c.live_checks.load(Ordering::Relaxed),
        keys_checked: ctl.keys_checked,
        flushes: ctl.flushes,
        compactions: ctl.compactions,
        after_close_checks: c.after_close_checks.load(Ordering::Relaxed),
    })
}

/// Exits the process when the run makes no progress for [`stall_secs`] (see [`run_one`]).
fn watchdog(shared: &Shared, finished: &AtomicBool, header: &str, replay: &str) {
    let limit = stall_secs();
    let mut last = shared.progress.load(Ordering::Relaxed);
    let mut still = 0u64;
    while !finished.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        let now = shared.progress.load(Ordering::Relaxed);
        if now != last {
            (last, still) = (now, 0);
            continue;
        }
        still += 1;
        if still < limit * 10 {
            continue;
        }
        let mut out = format!(
            "lifecycle stress HUNG: {header}: no op finished and the controller made no step \
             for {limit} s\n  {}\n",
            shared.threads_report()
        );
        if let Some(f) = lock(&shared.failure).as_ref() {
            out.push_str(&format!("first failure before the hang: {f}\n"));
        }
        for v in lock(&shared.violations).iter() {
            out.push_str(&format!("close contract violation: {v}\n"));
        }
        out.push_str("controller schedule (total ops when each event began):\n");
        for l in lock(&shared.log).iter() {
            out.push_str(&format!("  {l}\n"));
        }
        out.push_str(&format!(
            "replay: {replay} cargo test -p mezz-testkit --test lifecycle \
             lifecycle_every_preset -- --nocapture"
        ));
        eprintln!("{out}");
        std::process::exit(2);
    }
}

/// `default` mixed with `MEZZ_LIFECYCLE_BASE` when that is set and valid.
#[must_use]
pub fn base_seed(default: u64) -> u64 {
    base_seed_from(BASE_ENV, default)
}

/// The seed in `MEZZ_LIFECYCLE_SEED`, if set and valid.
#[must_use]
pub fn seed_from_env() -> Option<u64> {
    env_value(SEED_ENV)
}

fn repeat_from_env() -> usize {
    env_value(REPEAT_ENV).unwrap_or(10)
}

/// Runs `seed` under each of `sets`; `progress` is called after each run.
///
/// # Errors
/// The first failed run.
pub fn run_sets(
    cfg: &LifecycleConfig,
    sets: &OptionSets,
    mut progress: impl FnMut(&NamedOptions, &LifecycleReport),
) -> Result<LifecycleReport, LifecycleFailure> {
    let mut total = LifecycleReport::default();
    for (j, set) in sets.iter().enumerate() {
        let c = LifecycleConfig {
            seed: run_seed(cfg.seed, j as u64),
            ..cfg.clone()
        };
        let r = run_one(&c, set)?;
        progress(set, &r);
        total.add(&r);
    }
    Ok(total)
}

/// The CI test: every [`lifecycle_sets`] set once (short runs, each with its own seed
/// derived from `base`). With `MEZZ_LIFECYCLE_SEED`, replays that seed instead
/// (`MEZZ_LIFECYCLE_REPEAT` times, default 10, at the size of `MEZZ_LIFECYCLE_SIZE`) under
/// the sets named by `MEZZ_LIFECYCLE_SET` (default: every set a run may use).
///
/// # Errors
/// The first failed run.
pub fn run_default(base: u64) -> Result<LifecycleReport, LifecycleFailure> {
    if let Some(seed) = seed_from_env() {
        let sets = filter_from_env(all_sets());
        let mut total = LifecycleReport::default();
        for _ in 0..repeat_from_env() {
            for set in sets.iter() {
                total.add(&run_one(&LifecycleConfig::from_env(seed), set)?);
            }
        }
        return Ok(total);
    }
    let sets = filter_from_env(lifecycle_sets());
    run_sets(&LifecycleConfig::short(base), &sets, |set, r| {
        println!("lifecycle {}: {r}", set.name);
    })
}

/// The long variant: `MEZZ_LIFECYCLE_LONG` seeds (`None` when unset), seed `i` under
/// [`long_sets`]`(i)` (narrowed by `MEZZ_LIFECYCLE_SET`), long runs, base seed from
/// `MEZZ_LIFECYCLE_BASE`. Prints one line per seed.
///
/// # Errors
/// The first failed run.
pub fn run_long(default_base: u64) -> Option<Result<LifecycleReport, LifecycleFailure>> {
    let n: u64 = std::env::var(LONG_ENV).ok()?.trim().parse().ok()?;
    let base = base_seed(default_base);
    let mut total = LifecycleReport::default();
    for i in 0..n {
        let sets = filter_from_env(long_sets(base.wrapping_add(i)));
        let seed = run_seed(base, i);
        match run_sets(&LifecycleConfig::long(seed), &sets, |_, _| {}) {
            Ok(r) => {
                println!("lifecycle seed {i} ({seed}): {r}");
                total.add(&r);
            }
            Err(f) => return Some(Err(f)),
        }
    }
    Some(Ok(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed run's history holds the controller's phases and each handle's `LOG` lines,
    /// in the order they were taken.
    #[test]
    fn run_log_keeps_phases_and_each_handles_log() {
        let fs = MemFs::new();
        let dir = Path::new(DB_DIR);
        fs.create_dir_all(dir).unwrap();
        let write_log = |text: &str| {
            let mut f = fs.create(&dir.join("LOG")).unwrap();
            f.append(text.as_bytes()).unwrap();
            f.close().unwrap();
        };
        let log = RunLog::default();
        log.push("closing handle 1".into());
        write_log("first handle line\n");
        log.take_log(&fs, "handle 1");
        write_log("second handle line\n");
        let path = log.save(&fs, 7, "tlsm/parallel-reads").unwrap();
        assert!(
            path.to_string_lossy()
                .ends_with("mezz-lifecycle-7-tlsm_parallel-reads.log")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing from:\n{text}"))
        };
        assert!(at("closing handle 1") < at("== LOG of handle 1"));
        assert!(at("== LOG of handle 1") < at("first handle line"));
        assert!(at("first handle line") < at("second handle line"));
        // Phases carry the LOG's timestamp format.
        let phase = text.lines().next().unwrap();
        assert_eq!(phase.as_bytes()[4], b'/', "{phase}");
    }

    fn w(id: u64, writes: Vec<(u32, Option<u64>)>, outcome: Outcome) -> Write {
        Write {
            id,
            writes,
            sync: false,
            outcome,
        }
    }

    /// k0 = 1 (acked); batch {k0 = 2, k1 = 2} failed; k1 = 3 acked; k2 = 4 in flight.
    fn sample() -> KeyHistory {
        KeyHistory {
            base: vec![None, Some(9), None],
            writes: vec![
                w(0, vec![(0, Some(1))], Outcome::Acked),
                w(1, vec![(0, Some(2)), (1, Some(2))], Outcome::Failed),
                w(2, vec![(1, Some(3))], Outcome::Acked),
                w(3, vec![(2, Some(4))], Outcome::InFlight),
            ],
        }
    }

    fn all(v: &[Option<u64>]) -> Vec<(u32, Option<u64>)> {
        (0u32..).zip(v.iter().copied()).collect()
    }

    #[test]
    fn acked_writes_are_required_and_unknown_ones_optional() {
        let h = sample();
        let (min, max) = (h.acked_len(), h.writes.len());
        assert_eq!(min, 3);
        // The failed batch applied or not, the in-flight write applied or not.
        for s in [
            [Some(1), Some(3), None],
            [Some(2), Some(3), None],
            [Some(1), Some(3), Some(4)],
            [Some(2), Some(3), Some(4)],
        ] {
            assert!(h.find_match(&all(&s), min, max).is_ok(), "{s:?}");
        }
        // An acknowledged write lost.
        let err = h
            .find_match(&all(&[None, Some(3), None]), min, max)
            .unwrap_err();
        assert!(err.contains("key 0"), "{err}");
        // A stale value.
        assert!(
            h.find_match(&all(&[Some(1), Some(9), None]), min, max)
                .is_err()
        );
        // A value nobody wrote.
        let err = h
            .find_match(&all(&[Some(1), Some(3), Some(7)]), min, max)
            .unwrap_err();
        assert!(err.contains("written by no write"), "{err}");
    }

    #[test]
    fn a_torn_batch_and_a_reordering_are_rejected() {
        let h = KeyHistory {
            base: vec![None, None],
            writes: vec![
                w(0, vec![(0, Some(1)), (1, Some(1))], Outcome::Failed),
                w(1, vec![(0, Some(2))], Outcome::Failed),
            ],
        };
        // Half of the batch.
        assert!(h.find_match(&all(&[Some(1), None]), 0, 2).is_err());
        assert!(h.find_match(&all(&[None, Some(1)]), 0, 2).is_err());
        // The later write without the batch is fine (the batch failed), both are fine.
        assert!(h.find_match(&all(&[Some(2), None]), 0, 2).is_ok());
        assert!(h.find_match(&all(&[Some(2), Some(1)]), 0, 2).is_ok());
        // A write after the crash (max 1) cannot show.
        assert!(h.find_match(&all(&[Some(2), None]), 0, 1).is_err());
        // Acked writes: the older one cannot win over the newer one.
        let h = KeyHistory {
            base: vec![None],
            writes: vec![
                w(0, vec![(0, Some(1))], Outcome::Acked),
                w(1, vec![(0, Some(2))], Outcome::Acked),
            ],
        };
        assert!(h.find_match(&all(&[Some(1)]), 2, 2).is_err());
        // After a power cut that only had to keep write 0, either is fine.
        assert!(h.find_match(&all(&[Some(1)]), 1, 2).is_ok());
        assert!(h.find_match(&all(&[None]), 1, 2).is_err());
    }

    #[test]
    fn many_unknown_writes_do_not_blow_up_the_search() {
        // 60 failed writes, one per key: none applied, all applied, every other one.
        let writes = (0..60u32)
            .map(|k| {
                w(
                    u64::from(k),
                    vec![(k, Some(u64::from(k) + 1))],
                    Outcome::Failed,
                )
            })
            .collect();
        let h = KeyHistory {
            base: vec![None; 60],
            writes,
        };
        let none = vec![None; 60];
        let all: Vec<Option<u64>> = (1..=60).map(Some).collect();
        let half: Vec<Option<u64>> = (0..60u64).map(|k| (k % 2 == 0).then_some(k + 1)).collect();
        for s in [&none, &all, &half] {
            assert!(h.find_match(&super::tests::all(s), 0, 60).is_ok(), "{s:?}");
        }
        let mut bad = half.clone();
        bad[59] = Some(7);
        let err = h.find_match(&super::tests::all(&bad), 0, 60).unwrap_err();
        assert!(!err.contains("capped"), "{err}");
    }

    #[test]
    fn partial_observations_compare_only_the_keys_seen() {
        let h = sample();
        let n = h.writes.len();
        assert!(h.find_match(&[(1, Some(3))], n, n).is_ok());
        assert!(h.find_match(&[(1, Some(2))], n, n).is_err());
        // The failed batch either wholly or not at all, across the keys seen.
        assert!(h.find_match(&[(0, Some(2))], n, n).is_ok());
        assert!(h.find_match(&[(0, Some(2)), (1, Some(3))], n, n).is_ok());
        assert!(h.find_match(&[(5, None)], n, n).is_err());
    }

    #[test]
    fn reset_keeps_only_writes_in_flight() {
        let mut m = WorkerModel::new(3);
        let a = m.register(vec![(0, Some(1))], true);
        let b = m.register(vec![(1, Some(2))], false);
        m.record(a, true);
        assert_eq!((m.acked_id, m.durable_id), (1, 1));
        m.reset(vec![Some(1), None, None]);
        assert_eq!(m.hist.writes.len(), 1);
        m.record(b, false);
        assert_eq!(m.hist.writes[0].outcome, Outcome::Failed);
        // A voided write (cleared by a crash) is ignored.
        m.hist.writes.clear();
        m.record(b, true);
        assert!(m.hist.writes.is_empty());
    }

    #[test]
    fn sets_cover_every_preset_in_both_modes() {
        let sets = lifecycle_sets();
        assert_eq!(sets.len(), 2 * (Preset::ALL.len() + 1));
        for s in sets.iter() {
            s.options
                .validate()
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        assert!(sets.find("tiny/novelsm-immutable+manual").is_some());
        let standard = OptionSets::standard().both_modes().len();
        let mut covered = std::collections::BTreeSet::new();
        // Each seed runs two standard sets (of `standard / 2`, in both modes): an odd
        // number of sets takes one seed more.
        for i in 0..(standard as u64).div_ceil(4) {
            assert_eq!(long_sets(i).len(), sets.len() + 4);
            for s in long_sets(i).iter() {
                covered.insert(s.name.clone());
            }
        }
        assert_eq!(covered.len(), sets.len() + standard);
    }
}
