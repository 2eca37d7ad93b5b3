//! In-process crash tests: random workloads on a [`MemFs`], simulated crashes at random
//! moments, and a check of what a fresh database on the crashed file system recovers.
//!
//! Owns: the workload driver ([`run_one`], [`run_campaign`]), the acknowledged-write
//! [`History`] and its prefix check ([`History::find_prefix`]), and the report types.
//!
//! How a run goes: a seeded workload (puts, deletes, multi-op batches, `sync = true` and
//! `sync = false` writes, `flush`, `compact_range`, clean reopens) runs with tiny options so
//! that flushes and compactions happen all the time. A *crash point* is a
//! [`MemFs::crash_clone`] taken
//! - between two ops, right away ([`PointKind::BetweenOps`], background work may be running)
//!   or after `wait_for_background` ([`PointKind::Quiescent`]);
//! - from a second thread at a random moment while the workload runs
//!   ([`PointKind::Concurrent`]);
//! - after the last op ([`PointKind::End`]).
//!
//! With the fault variant ([`CrashConfig::faults`]) the database runs on a [`FaultFs`] over
//! the `MemFs`, and one sync or write error is injected at a random call; the workload goes
//! on for a few ops (a write that fails is *pending*: it may or may not survive) and reads
//! must still be served.
//!
//! What is checked at every crash point, on a database opened on the clone:
//! - it opens, its keys come out of a scan in strictly increasing order, every value decodes
//!   (no torn or misplaced value) and the scan agrees with point reads;
//! - its state equals the model state after some prefix of the history (pending entries may
//!   be skipped), and that prefix holds every entry that had to survive: with
//!   [`KeepUnsynced::None`] / [`KeepUnsynced::RandomPrefix`] (power cut) every write
//!   acknowledged with `sync = true` and everything before a successful `flush()` or clean
//!   close; with [`KeepUnsynced::All`] (process crash) every acknowledged write. A prefix
//!   rules out reordering, resurrected deletes and torn batches;
//! - it accepts new writes, and a second reopen shows exactly the recovered state plus them.
//!
//! Invariants: the history entry at index `i` writes values of version `i + 1`, so a
//! recovered value names the op that wrote it.
//!
//! Thread-safety: a run uses its own thread plus, for concurrent crash points, one crasher
//! thread that touches only the `MemFs` and a few atomics.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mezz_env::{
    CrashOptions, FaultFs, FaultOp, FaultRule, FileSystem, KeepUnsynced, MemFs, Trigger,
};
use mezzanine::options::{NvmMemtable, NvmTableMethod, NvmTiering};
use mezzanine::{
    BlockFormat, Db, Options, PlacementPolicy, Preset, ReadOptions, WriteBatch, WriteOptions,
};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::stress::value::{decode_value, encode_value, key_bytes, parse_key};

/// Directory of the database inside the `MemFs`.
pub const CRASH_DB: &str = "/crash-db";
/// Environment variable: total crash points of a campaign (see [`points_from_env`]).
pub const POINTS_ENV: &str = "MEZZ_CRASH_POINTS";
/// Environment variable: run only this seed (see [`run_campaign`]).
pub const SEED_ENV: &str = "MEZZ_CRASH_SEED";
/// Environment variable: how many times to run the seed of `MEZZ_CRASH_SEED`.
pub const REPEAT_ENV: &str = "MEZZ_CRASH_REPEAT";

/// Cap on the branches [`History::find_prefix`] explores for pending entries.
const MAX_BRANCHES: usize = 256;

/// One key written by a history entry: `Some(version)` for a put, `None` for a delete.
pub type KeyWrite = (u32, Option<u64>);

/// One write op of the history (a put, a delete, or a batch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The keys written, in batch order (a later write of the same key wins).
    pub writes: Vec<KeyWrite>,
    /// Written with `sync = true`.
    pub sync: bool,
    /// The write returned an error: it may or may not have been applied.
    pub maybe: bool,
}

/// The write ops issued so far, in order, over key indexes `0..keys`.
#[derive(Debug, Clone)]
pub struct History {
    keys: usize,
    entries: Vec<Entry>,
}

fn count_mismatches(state: &[Option<u64>], rec: &[Option<u64>]) -> usize {
    state.iter().zip(rec).filter(|(a, b)| a != b).count()
}

/// Applies `e` to `state`, keeping `mism` (the number of keys where `state` and `rec`
/// differ) up to date. Keys outside the state are ignored.
fn apply(state: &mut [Option<u64>], mism: &mut usize, e: &Entry, rec: &[Option<u64>]) {
    for &(k, v) in &e.writes {
        let k = k as usize;
        let (Some(slot), Some(r)) = (state.get_mut(k), rec.get(k)) else {
            continue;
        };
        let before = *slot != *r;
        *slot = v;
        let after = *slot != *r;
        match (before, after) {
            (true, false) => *mism = mism.saturating_sub(1),
            (false, true) => *mism += 1,
            _ => {}
        }
    }
}

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| format!("v{v}"))
}

impl History {
    /// An empty history over `keys` keys.
    #[must_use]
    pub fn new(keys: u32) -> Self {
        Self {
            keys: keys as usize,
            entries: Vec::new(),
        }
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry was pushed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, oldest first.
    #[must_use]
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The version the next entry's puts must carry.
    #[must_use]
    pub fn next_version(&self) -> u64 {
        self.entries.len() as u64 + 1
    }

    /// Appends an entry.
    pub fn push(&mut self, e: Entry) {
        self.entries.push(e);
    }

    /// Marks entry `index` as pending (its write failed).
    pub fn set_maybe(&mut self, index: usize) {
        if let Some(e) = self.entries.get_mut(index) {
            e.maybe = true;
        }
    }

    /// The state after the first `n` entries, applying pending ones too.
    #[must_use]
    pub fn state_after(&self, n: usize) -> Vec<Option<u64>> {
        let mut state = vec![None; self.keys];
        let rec = state.clone();
        let mut m = 0;
        for e in self.entries.iter().take(n) {
            apply(&mut state, &mut m, e, &rec);
        }
        state
    }

    /// Finds a prefix length `p` in `min_len..=max_len` such that the model state after the
    /// first `p` entries, with any choice of pending entries skipped, equals `recovered`.
    ///
    /// # Errors
    /// A description of the closest prefix and the keys that differ when none matches.
    pub fn find_prefix(
        &self,
        recovered: &[Option<u64>],
        min_len: usize,
        max_len: usize,
    ) -> Result<usize, String> {
        let max_len = max_len.min(self.entries.len());
        if recovered.len() != self.keys {
            return Err(format!(
                "recovered state has {} keys, history {}",
                recovered.len(),
                self.keys
            ));
        }
        if min_len > max_len {
            return Err(format!(
                "required prefix {min_len} is longer than the {max_len} entries issued"
            ));
        }
        let start = vec![None; self.keys];
        let mism = count_mismatches(&start, recovered);
        let mut stack = vec![(0usize, start, mism)];
        let mut branches = 0usize;
        while let Some((mut i, mut state, mut mism)) = stack.pop() {
            loop {
                if i >= min_len && mism == 0 {
                    return Ok(i);
                }
                let Some(e) = self.entries.get(i).filter(|_| i < max_len) else {
                    break;
                };
                if e.maybe && branches < MAX_BRANCHES {
                    branches += 1;
                    stack.push((i + 1, state.clone(), mism));
                }
                apply(&mut state, &mut mism, e, recovered);
                i += 1;
            }
        }
        Err(self.describe_mismatch(recovered, min_len, max_len))
    }

    /// Explains why no prefix in `min_len..=max_len` matches: the closest prefix (all
    /// pending entries applied) and the keys that differ there.
    fn describe_mismatch(&self, rec: &[Option<u64>], min_len: usize, max_len: usize) -> String {
        let mut state = self.state_after(min_len);
        let mut best = (count_mismatches(&state, rec), min_len, state.clone());
        let mut mism = best.0;
        for i in min_len..max_len {
            if let Some(e) = self.entries.get(i) {
                apply(&mut state, &mut mism, e, rec);
            }
            if mism < best.0 {
                best = (mism, i + 1, state.clone());
            }
        }
        let (n, p, expected) = best;
        let mut out = format!(
            "no history prefix in {min_len}..={max_len} matches the recovered state; closest is \
             prefix {p} with {n} differing keys:"
        );
        for (k, (want, got)) in expected.iter().zip(rec).enumerate() {
            if want == got {
                continue;
            }
            let origin = got
                .and_then(|v| usize::try_from(v).ok())
                .and_then(|v| v.checked_sub(1))
                .map_or_else(String::new, |i| match self.entries.get(i) {
                    Some(e) => format!(
                        " (written by op {i}{}{}{})",
                        if e.sync { ", sync" } else { "" },
                        if e.maybe { ", failed" } else { "" },
                        if i >= max_len { ", NOT YET ISSUED" } else { "" }
                    ),
                    None => " (written by no op)".to_string(),
                });
            let last_write = self
                .entries
                .iter()
                .take(p)
                .rposition(|e| e.writes.iter().any(|&(kk, _)| kk as usize == k))
                .map_or_else(String::new, |i| format!(", last written by op {i}"));
            out.push_str(&format!(
                "\n  key {k}: recovered {}{origin}, expected {}{last_write}",
                show(*got),
                show(*want)
            ));
            if out.len() > 4000 {
                out.push_str("\n  ...");
                break;
            }
        }
        out
    }
}

/// Where a crash point was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// Between two ops, without waiting for background work.
    BetweenOps,
    /// Between two ops, after `wait_for_background`.
    Quiescent,
    /// From a second thread while the workload runs.
    Concurrent,
    /// After the last op of the run.
    End,
}

/// What one run does.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    /// Seed of the workload, the options, the crash schedule and the crash clones.
    pub seed: u64,
    /// Ops in the workload (writes, flushes, compactions, reads, reopens).
    pub ops: usize,
    /// Size of the key space.
    pub keys: u32,
    /// Crash points taken between ops (plus one at the end).
    pub between_points: usize,
    /// Crash points taken from a second thread.
    pub concurrent_points: usize,
    /// What crashes keep of unsynced data; each point picks one at random.
    pub modes: Vec<KeepUnsynced>,
    /// Run on a [`FaultFs`] and inject one sync or write error.
    pub faults: bool,
}

impl CrashConfig {
    /// Power cuts (`None` and `RandomPrefix`), between ops and from a second thread.
    #[must_use]
    pub fn power_cut(seed: u64) -> Self {
        Self {
            seed,
            ops: 400,
            keys: 128,
            between_points: 20,
            concurrent_points: 10,
            modes: vec![KeepUnsynced::None, KeepUnsynced::RandomPrefix],
            faults: false,
        }
    }

    /// Process crashes (`All`): every acknowledged write must survive.
    #[must_use]
    pub fn process_crash(seed: u64) -> Self {
        Self {
            modes: vec![KeepUnsynced::All],
            ..Self::power_cut(seed)
        }
    }

    /// One injected sync or write error, then crashes of every kind.
    #[must_use]
    pub fn fault(seed: u64) -> Self {
        Self {
            ops: 300,
            between_points: 8,
            concurrent_points: 4,
            modes: vec![
                KeepUnsynced::None,
                KeepUnsynced::RandomPrefix,
                KeepUnsynced::All,
            ],
            faults: true,
            ..Self::power_cut(seed)
        }
    }
}

/// Counts from one or more runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Runs done.
    pub runs: usize,
    /// Crash points checked.
    pub points: usize,
    /// Crash points per kind: between ops, quiescent, concurrent, end.
    pub by_kind: [usize; 4],
    /// Ops executed.
    pub ops: usize,
    /// Write ops acknowledged.
    pub acked: usize,
    /// Errors injected by the fault file system.
    pub faults_injected: u64,
    /// Writes that returned an error (pending in the history).
    pub failed_writes: usize,
    /// Clean reopens inside workloads.
    pub reopens: usize,
}

impl CrashReport {
    fn add(&mut self, o: &CrashReport) {
        self.runs += o.runs;
        self.points += o.points;
        for (a, b) in self.by_kind.iter_mut().zip(o.by_kind) {
            *a += b;
        }
        self.ops += o.ops;
        self.acked += o.acked;
        self.faults_injected += o.faults_injected;
        self.failed_writes += o.failed_writes;
        self.reopens += o.reopens;
    }

    fn count(&mut self, kind: PointKind) {
        self.points += 1;
        let i = match kind {
            PointKind::BetweenOps => 0,
            PointKind::Quiescent => 1,
            PointKind::Concurrent => 2,
            PointKind::End => 3,
        };
        if let Some(c) = self.by_kind.get_mut(i) {
            *c += 1;
        }
    }
}

impl fmt::Display for CrashReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [b, q, c, e] = self.by_kind;
        write!(
            f,
            "{} runs, {} crash points ({b} between ops, {q} quiescent, {c} concurrent, {e} at \
             end), {} ops, {} acknowledged writes, {} reopens, {} faults injected, {} failed \
             writes",
            self.runs,
            self.points,
            self.ops,
            self.acked,
            self.reopens,
            self.faults_injected,
            self.failed_writes
        )
    }
}

/// A failed check, with what is needed to reproduce it.
#[derive(Debug, Clone)]
pub struct CrashFailure {
    /// Seed of the run (reproduce with `MEZZ_CRASH_SEED=<seed>`).
    pub seed: u64,
    /// Where it happened: the crash point (index, kind, mode, op counts) or the op.
    pub at: String,
    /// What was wrong.
    pub detail: String,
}

impl fmt::Display for CrashFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "crash test failed: seed {} at {}: {}\n(rerun this seed with {SEED_ENV}={}; \
             background timing varies, so it is repeated {REPEAT_ENV} times, default 20)",
            self.seed, self.at, self.detail, self.seed
        )
    }
}

impl std::error::Error for CrashFailure {}

/// A crash clone and what the workload had reached when it was taken.
#[derive(Debug)]
struct Point {
    index: usize,
    kind: PointKind,
    keep: KeepUnsynced,
    clone_seed: u64,
    /// Entries that must be in the recovered prefix.
    required: usize,
    /// Entries issued when the clone was complete (the prefix cannot be longer).
    issued: usize,
    fs: MemFs,
    /// The simulated NVM at the same instant (for databases with an NVM tier).
    nvm: Option<mezzanine::options::SimNvm>,
}

impl Point {
    fn describe(&self) -> String {
        format!(
            "crash point {} ({:?}, keep_unsynced {:?}, clone seed {}, required prefix {}, \
             issued {})",
            self.index, self.kind, self.keep, self.clone_seed, self.required, self.issued
        )
    }
}

/// Progress counters the crasher thread reads. Written only by the workload thread.
#[derive(Debug, Default)]
struct Progress {
    /// Entries whose write was started.
    issued: AtomicUsize,
    /// Entries whose write returned (Ok or an error).
    acked: AtomicUsize,
    /// Entries covered by a sync: a synced write, a successful flush or clean close.
    durable: AtomicUsize,
    done: AtomicBool,
}

/// Takes a crash clone now. `acked` and `durable` are read before the clone, `issued`
/// after it, so the clone holds at least the first and at most the last.
fn take_point(
    mem: &MemFs,
    nvm: Option<&mezzanine::options::SimNvm>,
    progress: &Progress,
    index: usize,
    kind: PointKind,
    keep: KeepUnsynced,
    clone_seed: u64,
) -> Point {
    let acked = progress.acked.load(Ordering::SeqCst);
    let durable = progress.durable.load(Ordering::SeqCst);
    // Files and NVM are cut at one instant (file operations wait meanwhile).
    let (fs, nvm) = mem.crash_clone_with(
        &CrashOptions {
            keep_unsynced: keep,
            seed: clone_seed,
        },
        || {
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
    let issued = progress.issued.load(Ordering::SeqCst);
    let required = match keep {
        KeepUnsynced::All => acked,
        KeepUnsynced::None | KeepUnsynced::RandomPrefix => durable,
    };
    Point {
        index,
        kind,
        keep,
        clone_seed,
        required,
        issued,
        fs,
        nvm,
    }
}

/// The presets drawn (uniformly) before `mezzanine` was added, in `Preset::ALL`'s order.
const BEFORE_MEZZANINE: &[Preset] = &[
    Preset::Leveldb,
    Preset::Novelsm,
    Preset::Tlsm,
    Preset::Matrixkv,
];

/// Options for crash runs: tiny memtables and tables so that flushes and compactions happen
/// every few dozen ops; the rest varies with `rng`.
pub fn crash_options(rng: &mut Xoshiro256PlusPlus) -> Options {
    // The presets that existed before `mezzanine` are drawn as they were then; a generator
    // of its own (seeded from a copy of `rng`) then makes a fifth of the runs `mezzanine`
    // runs. So four seeds in five (a soak's report, a regression test's) keep the run they
    // named, and the salt keeps the regression seeds of tests/crash.rs on theirs. A preset
    // added to `Preset::ALL` later must join the draw the same way: the test
    // `every_preset_is_drawn` fails until it does.
    let mut preset = pick(rng, BEFORE_MEZZANINE, Preset::Leveldb);
    let mut p_rng =
        Xoshiro256PlusPlus::seed_from_u64(rng.clone().random::<u64>() ^ 0x6d65_7a7a_616e_696e);
    if p_rng.random_range(0..5) == 0 {
        preset = Preset::Mezzanine;
    }
    let mut o = Options::preset(preset);
    o.write_buffer_size = pick(rng, &[4, 8, 16, 32], 8) * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.block_size = pick(rng, &[256, 1024, 4096], 1024);
    o.level0_compaction_trigger = rng.random_range(1..=4);
    o.max_background_jobs = rng.random_range(1..=2);
    o.block_format = if rng.random_bool(0.5) {
        BlockFormat::KeySet
    } else {
        BlockFormat::Prefix
    };
    if preset == Preset::Novelsm {
        o.nvm_memtable = pick(
            rng,
            &[
                NvmMemtable::Mutable,
                NvmMemtable::Immutable,
                NvmMemtable::Overflow,
            ],
            NvmMemtable::Mutable,
        );
        o.wal_on_nvm = rng.random_bool(0.5);
    }
    // Half the runs spread their tables over 2-4 SSD directories. Drawn from a generator
    // of their own (seeded from a copy of `rng`), so every other choice a seed makes stays
    // what it was before directories were added.
    let mut units_rng =
        Xoshiro256PlusPlus::seed_from_u64(rng.clone().random::<u64>() ^ 0x756e_6974);
    if units_rng.random_bool(0.5) {
        let n = units_rng.random_range(2..=4);
        let placement = pick(
            &mut units_rng,
            &[
                PlacementPolicy::Striped,
                PlacementPolicy::PerFile,
                PlacementPolicy::Isolated,
            ],
            PlacementPolicy::Isolated,
        );
        crate::option_sets::with_units(&mut o, n, placement);
    }
    // TLSM and Mezzanine runs vary how NVM tables are built and tiered, from a generator
    // of their own (other presets' seeds keep every choice). Half the Mezzanine runs add
    // a matrix container over the NVM tables (every tiering below is one a container
    // composes with: not `leveled:0`).
    if matches!(preset, Preset::Tlsm | Preset::Mezzanine) {
        let mut t_rng =
            Xoshiro256PlusPlus::seed_from_u64(rng.clone().random::<u64>() ^ 0x746c_736d);
        o.nvm_table_method = pick(
            &mut t_rng,
            &[
                NvmTableMethod::Ps,
                NvmTableMethod::PsBac,
                NvmTableMethod::PsBacPb,
            ],
            NvmTableMethod::PsBacPb,
        );
        o.nvm_tiering = pick(
            &mut t_rng,
            &[
                NvmTiering::Lru(64 << 10),
                NvmTiering::Leveled(1),
                NvmTiering::Full,
            ],
            NvmTiering::Full,
        );
        o.nvm_gc_live_ratio = pick(&mut t_rng, &[0.5, 0.9], 0.5);
        if o.nvm_gc_live_ratio > 0.5 {
            // Eager reclaim: whatever the pool holds, so that short runs rewrite tables.
            o.nvm_gc_pool_share = 0.0;
        }
        if preset == Preset::Mezzanine {
            // Sized by `with_simulated_nvm` below.
            if t_rng.random_bool(0.5) {
                o.matrix_bytes = 1;
            }
            // The preset's NVM memtable (`overflow`) in one run of three, NoveLSM's
            // `mutable` in one, none in one.
            match t_rng.random_range(0..3) {
                0 => o.nvm_memtable = NvmMemtable::Off,
                1 => o.nvm_memtable = NvmMemtable::Mutable,
                _ => {}
            }
            // MatrixKV's NVM WAL in half.
            o.wal_on_nvm = t_rng.random_bool(0.5);
            // Half the `overflow` runs hand memtables of large entries to NVM too (the
            // threshold is low enough for the workload's entries to reach it).
            if o.nvm_memtable == NvmMemtable::Overflow && t_rng.random_bool(0.5) {
                o.nvm_memtable_large_entry = 48;
            }
        }
    }
    // Half the runs with deterministic background work: flushes and compactions run only
    // at the workload's background steps and inline in calls that would wait for them.
    o.manual_background = rng.random_bool(0.5);
    crate::option_sets::with_simulated_nvm(&mut o);
    o
}

/// A random element of `items` (`default` if it is empty).
fn pick<T: Copy>(rng: &mut Xoshiro256PlusPlus, items: &[T], default: T) -> T {
    items
        .get(rng.random_range(0..items.len().max(1)))
        .copied()
        .unwrap_or(default)
}

fn with_fs(opts: &Options, fs: Arc<dyn FileSystem>) -> Options {
    let mut o = opts.clone();
    o.fs = fs;
    o
}

/// Reads the whole database: a forward scan (keys strictly increasing, inside the key space,
/// values decoding to their own key) cross-checked against a point read of every key.
///
/// # Errors
/// A description of the first problem.
pub fn read_state(db: &Db, keys: u32) -> Result<Vec<Option<u64>>, String> {
    read_state_in(db, None, keys)
}

/// [`read_state`] of column family `cf` (`None`: the default family).
///
/// # Errors
/// As [`read_state`].
pub fn read_state_in(
    db: &Db,
    cf: Option<&mezzanine::ColumnFamily>,
    keys: u32,
) -> Result<Vec<Option<u64>>, String> {
    let mut scanned: Vec<Option<u64>> = vec![None; keys as usize];
    let mut it = match cf {
        Some(cf) => db.cursor_cf(cf, &ReadOptions::default()),
        None => db.cursor(&ReadOptions::default()),
    }
    .map_err(|e| format!("iter: {e}"))?;
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    while it.valid() {
        let key = it.key().to_vec();
        if prev.as_ref().is_some_and(|p| *p >= key) {
            return Err(format!(
                "scan out of order: {:?} after {:?}",
                String::from_utf8_lossy(&key),
                prev.as_deref().map(String::from_utf8_lossy)
            ));
        }
        let k = parse_key(&key)
            .filter(|&k| k < keys)
            .ok_or_else(|| format!("scan found unknown key {:?}", String::from_utf8_lossy(&key)))?;
        let (vk, version) =
            decode_value(it.value()).map_err(|e| format!("scan: key {k}: bad value: {e}"))?;
        if vk != k {
            return Err(format!("scan: key {k} holds the value of key {vk}"));
        }
        if let Some(s) = scanned.get_mut(k as usize) {
            *s = Some(version);
        }
        prev = Some(key);
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    for (k, s) in (0..keys).zip(&scanned) {
        let got = match cf {
            Some(cf) => db.get_cf(cf, &key_bytes(k)),
            None => db.get(&key_bytes(k)),
        }
        .map_err(|e| format!("get key {k}: {e}"))?;
        let got = match got {
            None => None,
            Some(v) => {
                let (vk, version) =
                    decode_value(&v).map_err(|e| format!("get key {k}: bad value: {e}"))?;
                if vk != k {
                    return Err(format!("get key {k} returned the value of key {vk}"));
                }
                Some(version)
            }
        };
        if got != *s {
            return Err(format!(
                "key {k}: get returns {} but the scan saw {}",
                show(got),
                show(*s)
            ));
        }
    }
    Ok(scanned)
}

/// Opens a database on the crash clone and checks it (see the module docs).
fn check_point(
    p: &Point,
    history: &History,
    opts: &Options,
    keys: u32,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<(), String> {
    // Listed before the database opens on the clone (recovery changes the files).
    let files: Vec<String> =
        p.fs.file_names()
            .iter()
            .map(|f| {
                let size = p.fs.file_size(f).unwrap_or(0);
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
                format!("{} ({size} B)", name.unwrap_or_default())
            })
            .collect();
    check_point_inner(p, history, opts, keys, rng)
        .map_err(|d| format!("{d}\nfiles left by the crash: {}", files.join(", ")))
}

fn check_point_inner(
    p: &Point,
    history: &History,
    opts: &Options,
    keys: u32,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<(), String> {
    let fs: Arc<dyn FileSystem> = Arc::new(p.fs.clone());
    let mut o = with_fs(opts, Arc::clone(&fs));
    o.nvm_sim.clone_from(&p.nvm);
    let db = Db::open(CRASH_DB, o.clone()).map_err(|e| format!("reopen after crash: {e}"))?;
    let recovered = read_state(&db, keys).map_err(|e| format!("after crash: {e}"))?;
    history.find_prefix(&recovered, p.required, p.issued)?;

    // The recovered database accepts writes, and a second reopen shows them.
    let mut expected = recovered;
    for j in 0..4u64 {
        let k = rng.random_range(0..keys);
        let sync = WriteOptions {
            sync: rng.random_bool(0.5),
        };
        if rng.random_bool(0.7) {
            let version = (1 << 40) + j;
            let v = encode_value(k, version, rng.random_range(16..200));
            db.put_opt(&sync, &key_bytes(k), &v)
                .map_err(|e| format!("put after recovery: {e}"))?;
            if let Some(e) = expected.get_mut(k as usize) {
                *e = Some(version);
            }
        } else {
            db.delete_opt(&sync, &key_bytes(k))
                .map_err(|e| format!("delete after recovery: {e}"))?;
            if let Some(e) = expected.get_mut(k as usize) {
                *e = None;
            }
        }
    }
    db.close()
        .map_err(|e| format!("close after recovery: {e}"))?;
    drop(db);
    let db = Db::open(CRASH_DB, o).map_err(|e| format!("second reopen: {e}"))?;
    let again = read_state(&db, keys).map_err(|e| format!("after second reopen: {e}"))?;
    if again != expected {
        let diff: Vec<String> = again
            .iter()
            .zip(&expected)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(8)
            .map(|(k, (a, b))| format!("key {k}: found {}, expected {}", show(*a), show(*b)))
            .collect();
        return Err(format!(
            "second reopen differs from the recovered state plus 4 new writes: {}",
            diff.join("; ")
        ));
    }
    db.close().map_err(|e| format!("final close: {e}"))?;
    Ok(())
}

/// The fault a fault run injects, picked from the run's seed.
fn pick_fault(rng: &mut Xoshiro256PlusPlus) -> (FaultRule, String) {
    const CHOICES: &[(FaultOp, Option<&str>, u64)] = &[
        (FaultOp::Sync, Some(".log"), 40),
        (FaultOp::Sync, Some("MANIFEST"), 10),
        (FaultOp::Sync, Some(".sst"), 10),
        (FaultOp::Sync, None, 60),
        (FaultOp::Write, Some(".log"), 300),
        (FaultOp::Write, Some(".sst"), 100),
        (FaultOp::Write, Some("MANIFEST"), 20),
        (FaultOp::Write, None, 400),
        (FaultOp::SyncDir, None, 10),
    ];
    let (op, path, range) = CHOICES
        .get(rng.random_range(0..CHOICES.len()))
        .copied()
        .unwrap_or((FaultOp::Sync, None, 40));
    let n = rng.random_range(0..range);
    let mut rule = FaultRule::new(Some(op), Trigger::Once(n));
    if let Some(p) = path {
        rule = rule.on_path(p);
    }
    let text = format!("{op:?} #{n} on {}", path.unwrap_or("any path"));
    (rule, text)
}

/// Live state of a run's workload thread.
struct Workload<'a> {
    cfg: &'a CrashConfig,
    rng: Xoshiro256PlusPlus,
    mem: MemFs,
    fault: Option<FaultFs>,
    fault_text: Option<String>,
    opts: Options,
    db: Option<Db>,
    history: History,
    /// Per key: the value after every acknowledged write.
    current: Vec<Option<u64>>,
    /// Per key: values of failed writes after the last acknowledged write of the key.
    pending: Vec<Vec<Option<u64>>>,
    progress: &'a Progress,
    report: CrashReport,
    /// Writes after the first injected fault.
    after_fault: usize,
    /// The first error an op returned (after an injected fault), for failure messages.
    first_error: Option<String>,
    /// What each op did, with the history length when it finished, for failure messages.
    events: Vec<(usize, String)>,
}

impl Workload<'_> {
    fn fail(&self, at: String, detail: String) -> CrashFailure {
        self.fail_upto(at, detail, usize::MAX)
    }

    /// A failure showing the last ops that finished with at most `upto` history entries.
    fn fail_upto(&self, at: String, detail: String, upto: usize) -> CrashFailure {
        let recent: Vec<&str> = self
            .events
            .iter()
            .filter(|(n, _)| *n <= upto)
            .rev()
            .take(12)
            .map(|(_, e)| e.as_str())
            .collect();
        let mut detail = detail;
        if !recent.is_empty() {
            detail.push_str("\nlast ops before the crash point (newest first):");
            for e in recent {
                detail.push_str("\n  ");
                detail.push_str(e);
            }
        }
        let fault = self.fault_text.as_ref().map_or_else(String::new, |f| {
            let first = self
                .first_error
                .as_ref()
                .map_or_else(String::new, |e| format!("; first error: {e}"));
            format!(" [fault {f}{first}]")
        });
        CrashFailure {
            seed: self.cfg.seed,
            at: format!("{at}{fault}"),
            detail,
        }
    }

    fn injected(&self) -> u64 {
        self.fault.as_ref().map_or(0, FaultFs::injected)
    }

    fn db(&self) -> Result<&Db, CrashFailure> {
        self.db
            .as_ref()
            .ok_or_else(|| self.fail("workload".into(), "database not open".into()))
    }

    /// An error from a non-write op: tolerated only after an injected fault.
    fn tolerate(&mut self, i: usize, what: &str, e: &mezzanine::Error) -> Result<(), CrashFailure> {
        if self.injected() > 0 {
            if self.first_error.is_none() {
                self.first_error = Some(format!("op {i} {what}: {e}"));
            }
            Ok(())
        } else {
            Err(self.fail(format!("op {i}"), format!("{what}: unexpected error: {e}")))
        }
    }

    /// Issues one write entry and records its outcome.
    fn event(&mut self, text: String) {
        self.events.push((self.history.len(), text));
    }

    fn write(&mut self, i: usize, entry: Entry) -> Result<(), CrashFailure> {
        let mut batch = WriteBatch::new();
        for &(k, v) in &entry.writes {
            match v {
                Some(version) => {
                    let len = self.rng.random_range(16..300);
                    batch.put(&key_bytes(k), &encode_value(k, version, len));
                }
                None => batch.delete(&key_bytes(k)),
            }
        }
        let sync = entry.sync;
        let index = self.history.len();
        let what = match entry.writes.as_slice() {
            [(k, Some(_))] => format!("put key {k}"),
            [(k, None)] => format!("delete key {k}"),
            w => format!("batch of {}", w.len()),
        };
        self.history.push(entry);
        self.progress.issued.store(index + 1, Ordering::SeqCst);
        let result = self.db()?.write(&WriteOptions { sync }, batch);
        let entry = self.history.entries().get(index).cloned();
        let writes = entry.map(|e| e.writes).unwrap_or_default();
        match result {
            Ok(()) => {
                for (k, v) in writes {
                    if let (Some(c), Some(p)) = (
                        self.current.get_mut(k as usize),
                        self.pending.get_mut(k as usize),
                    ) {
                        *c = v;
                        p.clear();
                    }
                }
                self.event(format!(
                    "op {i}: {what} (entry {index}, v{}{}): ok",
                    index + 1,
                    if sync { ", sync" } else { "" }
                ));
                self.report.acked += 1;
                self.progress.acked.store(index + 1, Ordering::SeqCst);
                if sync {
                    self.progress.durable.store(index + 1, Ordering::SeqCst);
                }
            }
            Err(e) => {
                self.tolerate(i, "write", &e)?;
                self.event(format!(
                    "op {i}: {what} (entry {index}, v{}{}): FAILED: {e}",
                    index + 1,
                    if sync { ", sync" } else { "" }
                ));
                self.history.set_maybe(index);
                for (k, v) in writes {
                    if let Some(p) = self.pending.get_mut(k as usize) {
                        p.push(v);
                    }
                }
                self.report.failed_writes += 1;
                self.progress.acked.store(index + 1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Everything acknowledged so far is durable (after a successful flush or close).
    fn barrier(&self) {
        let acked = self.progress.acked.load(Ordering::SeqCst);
        self.progress.durable.store(acked, Ordering::SeqCst);
    }

    /// Reads a key and checks it against the model (acknowledged state, or a failed write).
    fn check_read(&self, i: usize, k: u32) -> Result<(), CrashFailure> {
        let got = self
            .db()?
            .get(&key_bytes(k))
            .map_err(|e| self.fail(format!("op {i}"), format!("get key {k}: {e}")))?;
        let got = match got {
            None => None,
            Some(v) => match decode_value(&v) {
                Ok((vk, version)) if vk == k => Some(version),
                Ok((vk, _)) => {
                    return Err(self.fail(
                        format!("op {i}"),
                        format!("get key {k} returned the value of key {vk}"),
                    ));
                }
                Err(e) => {
                    return Err(
                        self.fail(format!("op {i}"), format!("get key {k}: bad value: {e}"))
                    );
                }
            },
        };
        let want = self.current.get(k as usize).copied().flatten();
        let ok = got == want
            || self
                .pending
                .get(k as usize)
                .is_some_and(|p| p.contains(&got));
        if ok {
            Ok(())
        } else {
            Err(self.fail(
                format!("op {i}"),
                format!(
                    "live read of key {k}: found {}, expected {}",
                    show(got),
                    show(want)
                ),
            ))
        }
    }

    /// Closes and reopens the database. If an injected fault makes either fail, the
    /// workload stops with no database open.
    fn reopen(&mut self, i: usize) -> Result<(), CrashFailure> {
        if let Some(db) = self.db.take() {
            match db.close() {
                Ok(()) => self.barrier(),
                Err(e) => return self.tolerate(i, "close", &e),
            }
        }
        let fs: Arc<dyn FileSystem> = match &self.fault {
            Some(f) => Arc::new(f.clone()),
            None => Arc::new(self.mem.clone()),
        };
        match Db::open(CRASH_DB, with_fs(&self.opts, fs)) {
            Ok(db) => self.db = Some(db),
            Err(e) => {
                self.event(format!("op {i}: reopen: FAILED: {e}"));
                return self.tolerate(i, "reopen", &e);
            }
        }
        self.event(format!("op {i}: close and reopen: ok"));
        self.report.reopens += 1;
        Ok(())
    }

    /// Runs op `i` of the workload.
    fn step(&mut self, i: usize) -> Result<(), CrashFailure> {
        let keys = self.cfg.keys;
        let faulted = self.injected() > 0;
        let sync = self.rng.random_bool(0.15);
        let r = self.rng.random_range(0..1000u32);
        let version = self.history.next_version();
        self.report.ops += 1;
        match r {
            0..450 => {
                let k = self.rng.random_range(0..keys);
                let e = Entry {
                    writes: vec![(k, Some(version))],
                    sync,
                    maybe: false,
                };
                self.write(i, e)?;
            }
            450..600 => {
                let k = self.rng.random_range(0..keys);
                let e = Entry {
                    writes: vec![(k, None)],
                    sync,
                    maybe: false,
                };
                self.write(i, e)?;
            }
            600..800 => {
                let n = self.rng.random_range(2..=8);
                let writes = (0..n)
                    .map(|_| {
                        let k = self.rng.random_range(0..keys);
                        (k, self.rng.random_bool(0.75).then_some(version))
                    })
                    .collect();
                self.write(
                    i,
                    Entry {
                        writes,
                        sync,
                        maybe: false,
                    },
                )?;
            }
            800..900 => {
                let k = self.rng.random_range(0..keys);
                self.check_read(i, k)?;
            }
            900..930 => match self.db()?.flush() {
                Ok(()) => {
                    self.barrier();
                    self.event(format!("op {i}: flush: ok"));
                }
                Err(e) => {
                    self.tolerate(i, "flush", &e)?;
                    self.event(format!("op {i}: flush: FAILED: {e}"));
                }
            },
            930..945 => {
                let a = self.rng.random_range(0..keys);
                let b = self.rng.random_range(a..keys);
                let (ka, kb) = (key_bytes(a), key_bytes(b));
                let full = self.rng.random_bool(0.3);
                let res = if full {
                    self.db()?.compact_range(None, None)
                } else {
                    self.db()?.compact_range(Some(&ka), Some(&kb))
                };
                match res {
                    Ok(()) => self.event(format!("op {i}: compact_range {a}..{b}: ok")),
                    Err(e) => {
                        self.tolerate(i, "compact_range", &e)?;
                        self.event(format!("op {i}: compact_range {a}..{b}: FAILED: {e}"));
                    }
                }
            }
            945..950 if !faulted => self.reopen(i)?,
            950..965 => {
                let jobs = self.rng.random_range(1..=3);
                match self.db()?.run_background_work(jobs) {
                    Ok(n) => self.event(format!("op {i}: background work: {n} jobs")),
                    Err(e) => {
                        self.tolerate(i, "background work", &e)?;
                        self.event(format!("op {i}: background work: FAILED: {e}"));
                    }
                }
            }
            _ => {
                let k = self.rng.random_range(0..keys);
                self.check_read(i, k)?;
            }
        }
        if faulted {
            self.after_fault += 1;
        }
        Ok(())
    }
}

/// One crasher thread: waits until the workload reaches each target op, sleeps a little
/// and takes a crash clone.
fn crasher(
    mem: &MemFs,
    nvm: Option<&mezzanine::options::SimNvm>,
    progress: &Progress,
    targets: &[usize],
    modes: &[KeepUnsynced],
    seed: u64,
    first_index: usize,
) -> Vec<Point> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = Vec::new();
    for (n, &t) in targets.iter().enumerate() {
        while progress.issued.load(Ordering::SeqCst) < t && !progress.done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(20));
        }
        if progress.done.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_micros(rng.random_range(0..300)));
        let keep = pick_mode(&mut rng, modes);
        out.push(take_point(
            mem,
            nvm,
            progress,
            first_index + n,
            PointKind::Concurrent,
            keep,
            rng.random(),
        ));
    }
    out
}

/// Runs one seeded workload with its crash points and checks each of them.
///
/// # Errors
/// The first failed check.
pub fn run_one(cfg: &CrashConfig) -> Result<CrashReport, CrashFailure> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let opts = crash_options(&mut rng);
    let mem = MemFs::new();
    let (fault, fault_rule) = if cfg.faults {
        let f = FaultFs::new(Arc::new(mem.clone()));
        f.set_enabled(false);
        let (rule, text) = pick_fault(&mut rng);
        (Some(f), Some((rule, text)))
    } else {
        (None, None)
    };
    let fs: Arc<dyn FileSystem> = match &fault {
        Some(f) => Arc::new(f.clone()),
        None => Arc::new(mem.clone()),
    };
    let fail = |at: &str, detail: String| CrashFailure {
        seed: cfg.seed,
        at: at.to_string(),
        detail,
    };
    let db = Db::open(CRASH_DB, with_fs(&opts, fs)).map_err(|e| fail("open", e.to_string()))?;
    let mut fault_text = None;
    if let (Some(f), Some((rule, text))) = (&fault, fault_rule) {
        f.add_rule(rule);
        f.set_enabled(true);
        fault_text = Some(text);
    }

    // Crash schedule: op indexes for points between ops and for the crasher thread.
    let between: BTreeSet<usize> = (0..cfg.between_points)
        .map(|_| rng.random_range(0..cfg.ops.max(1)))
        .collect();
    let mut targets: Vec<usize> = (0..cfg.concurrent_points)
        .map(|_| rng.random_range(0..cfg.ops.max(1)))
        .collect();
    targets.sort_unstable();
    let crasher_seed: u64 = rng.random();
    let workload_seed: u64 = rng.random();

    let progress = Progress::default();
    let mut w = Workload {
        cfg,
        rng: Xoshiro256PlusPlus::seed_from_u64(workload_seed),
        mem: mem.clone(),
        fault,
        fault_text,
        opts: opts.clone(),
        db: Some(db),
        history: History::new(cfg.keys),
        current: vec![None; cfg.keys as usize],
        pending: vec![Vec::new(); cfg.keys as usize],
        progress: &progress,
        report: CrashReport {
            runs: 1,
            ..CrashReport::default()
        },
        after_fault: 0,
        first_error: None,
        events: Vec::new(),
    };
    let mut check_rng = Xoshiro256PlusPlus::seed_from_u64(crasher_seed ^ 0x5eed);

    let (result, concurrent) = std::thread::scope(|s| {
        let crash_thread = s.spawn(|| {
            crasher(
                &mem,
                opts.nvm_sim.as_ref(),
                &progress,
                &targets,
                &cfg.modes,
                crasher_seed,
                cfg.between_points + 1,
            )
        });
        let result = (|| -> Result<(), CrashFailure> {
            let mut point_index = 0;
            for i in 0..cfg.ops {
                if between.contains(&i) {
                    let quiescent = w.rng.random_bool(0.3);
                    if quiescent && let Err(e) = w.db()?.wait_for_background() {
                        w.tolerate(i, "wait_for_background", &e)?;
                    }
                    let kind = if quiescent {
                        PointKind::Quiescent
                    } else {
                        PointKind::BetweenOps
                    };
                    let keep = pick_mode(&mut w.rng, &cfg.modes);
                    let p = take_point(
                        &mem,
                        opts.nvm_sim.as_ref(),
                        &progress,
                        point_index,
                        kind,
                        keep,
                        w.rng.random(),
                    );
                    point_index += 1;
                    check_point(&p, &w.history, &opts, cfg.keys, &mut check_rng).map_err(|d| {
                        w.fail_upto(format!("{} before op {i}", p.describe()), d, p.issued)
                    })?;
                    w.report.count(kind);
                }
                w.step(i)?;
                if w.db.is_none() || (w.injected() > 0 && fault_done(&w)) {
                    break;
                }
            }
            // Reads are still served after an injected fault.
            if w.injected() > 0 && w.db.is_some() {
                for _ in 0..8 {
                    let k = w.rng.random_range(0..cfg.keys);
                    w.check_read(cfg.ops, k)?;
                }
            }
            let keep = pick_mode(&mut w.rng, &cfg.modes);
            let p = take_point(
                &mem,
                opts.nvm_sim.as_ref(),
                &progress,
                point_index,
                PointKind::End,
                keep,
                w.rng.random(),
            );
            check_point(&p, &w.history, &opts, cfg.keys, &mut check_rng)
                .map_err(|d| w.fail_upto(p.describe(), d, p.issued))?;
            w.report.count(PointKind::End);
            Ok(())
        })();
        progress.done.store(true, Ordering::SeqCst);
        let concurrent = crash_thread
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (result, concurrent)
    });
    result?;
    for p in &concurrent {
        check_point(p, &w.history, &opts, cfg.keys, &mut check_rng)
            .map_err(|d| w.fail_upto(p.describe(), d, p.issued))?;
        w.report.count(PointKind::Concurrent);
    }
    if let Some(db) = w.db.take() {
        // After an injected fault, closing may report it again; and the fault may be
        // injected by the close itself (its trigger is the n-th matching call, and the
        // close's WAL sync can be that call), so the count is taken after it.
        let closed = db.close();
        if w.injected() == 0 {
            closed.map_err(|e| w.fail("final close".into(), e.to_string()))?;
        }
    }
    w.report.faults_injected = w.injected();
    Ok(w.report)
}

/// After a fault, the workload goes on for a few ops, or until three writes failed.
fn fault_done(w: &Workload<'_>) -> bool {
    w.after_fault >= 30 || w.report.failed_writes >= 3
}

fn pick_mode(rng: &mut Xoshiro256PlusPlus, modes: &[KeepUnsynced]) -> KeepUnsynced {
    pick(rng, modes, KeepUnsynced::None)
}

/// The total number of crash points a campaign should check: `MEZZ_CRASH_POINTS` if set
/// and valid, else `default`.
#[must_use]
pub fn points_from_env(default: usize) -> usize {
    std::env::var(POINTS_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Environment variable: a value mixed into every campaign's base seed, so that a soak
/// runs fresh seeds (failures still name the run's own seed for `MEZZ_CRASH_SEED`).
pub const BASE_ENV: &str = "MEZZ_CRASH_BASE";

/// The value of environment variable `name`, if set and valid (surrounding spaces
/// ignored).
#[must_use]
pub fn env_value<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// `default` mixed with the number in environment variable `name` when that is set and
/// valid (how a soak gets fresh seeds from a base).
#[must_use]
pub fn base_seed_from(name: &str, default: u64) -> u64 {
    env_value::<u64>(name).map_or(default, |b| run_seed(default, b))
}

/// `default` mixed with `MEZZ_CRASH_BASE` when that is set and valid.
#[must_use]
pub fn base_seed(default: u64) -> u64 {
    base_seed_from(BASE_ENV, default)
}

/// The seed in `MEZZ_CRASH_SEED`, if set and valid.
#[must_use]
pub fn seed_from_env() -> Option<u64> {
    env_value(SEED_ENV)
}

/// How many times a seed given in `MEZZ_CRASH_SEED` is run: `MEZZ_CRASH_REPEAT`, default 20.
#[must_use]
pub fn repeat_from_env() -> usize {
    std::env::var(REPEAT_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(20)
}

/// A well-mixed seed for run `i` of a campaign with base seed `base` (splitmix64).
#[must_use]
pub fn run_seed(base: u64, i: u64) -> u64 {
    let mut z = base
        .wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs seeded runs until `points` crash points were checked. With `MEZZ_CRASH_SEED` set,
/// runs that one seed only, `MEZZ_CRASH_REPEAT` times (default 20) since background timing
/// varies. `make` builds a run's configuration from its seed.
///
/// # Errors
/// The first failed check.
pub fn run_campaign(
    base_seed: u64,
    points: usize,
    make: impl Fn(u64) -> CrashConfig,
) -> Result<CrashReport, CrashFailure> {
    let mut total = CrashReport::default();
    if let Some(seed) = seed_from_env() {
        // Background jobs make the timing, and so some crash points, vary between runs of
        // one seed: repeat it.
        for _ in 0..repeat_from_env() {
            total.add(&run_one(&make(seed))?);
        }
        return Ok(total);
    }
    let mut i = 0u64;
    while total.points < points {
        total.add(&run_one(&make(run_seed(base_seed, i)))?);
        i += 1;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Crash runs draw every preset of `Preset::ALL` (a new one must be added to the draw)
    /// and their options validate; under `mezzanine` there are NVM tables, and a container
    /// (in some runs) never with `leveled:0`.
    #[test]
    fn every_preset_is_drawn() {
        let mut drawn = BTreeSet::new();
        let mut containers = 0;
        for seed in 0..400u64 {
            let o = crash_options(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
            o.validate()
                .unwrap_or_else(|e| panic!("seed {seed} ({}): {e}", o.preset));
            if o.preset == Preset::Mezzanine {
                assert!(o.nvm_tiering.enabled(), "seed {seed}");
                if o.matrix_bytes > 0 {
                    assert_ne!(o.nvm_tiering, NvmTiering::Leveled(0), "seed {seed}");
                    containers += 1;
                }
            }
            drawn.insert(o.preset.name());
        }
        let all: BTreeSet<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(drawn, all);
        assert!(containers > 0, "no mezzanine run had a matrix container");
    }

    fn put(k: u32, v: u64, sync: bool) -> Entry {
        Entry {
            writes: vec![(k, Some(v))],
            sync,
            maybe: false,
        }
    }

    fn del(k: u32) -> Entry {
        Entry {
            writes: vec![(k, None)],
            sync: false,
            maybe: false,
        }
    }

    /// put k0 v1; put k1 v2 (sync); batch {k0 del, k2 v3}; put k1 v4; delete k1.
    fn sample() -> History {
        let mut h = History::new(3);
        h.push(put(0, 1, false));
        h.push(put(1, 2, true));
        h.push(Entry {
            writes: vec![(0, None), (2, Some(3))],
            sync: false,
            maybe: false,
        });
        h.push(put(1, 4, false));
        h.push(del(1));
        h
    }

    #[test]
    fn every_prefix_state_is_accepted() {
        let h = sample();
        for n in 0..=h.len() {
            assert_eq!(h.find_prefix(&h.state_after(n), 0, h.len()), Ok(n));
        }
        assert_eq!(h.state_after(3), vec![None, Some(2), Some(3)]);
    }

    #[test]
    fn a_lost_synced_write_is_rejected() {
        let h = sample();
        // Only op 0 survived, but op 1 was synced.
        let err = h.find_prefix(&h.state_after(1), 2, h.len()).unwrap_err();
        assert!(err.contains("key 1"), "{err}");
    }

    #[test]
    fn a_torn_batch_is_rejected() {
        let h = sample();
        // The batch's put of k2 survived but not its delete of k0.
        let torn = vec![Some(1), Some(2), Some(3)];
        assert!(h.find_prefix(&torn, 0, h.len()).is_err());
    }

    #[test]
    fn reordering_and_resurrection_are_rejected() {
        let h = sample();
        // k1 = v4 (op 3) without the batch (op 2): a reordering.
        assert!(
            h.find_prefix(&[Some(1), Some(4), None], 0, h.len())
                .is_err()
        );
        // k1 back to v2 after its delete with everything else at the end state.
        assert!(
            h.find_prefix(&[None, Some(2), Some(3)], 4, h.len())
                .is_err()
        );
        // A value from an op not issued yet at the crash.
        assert!(h.find_prefix(&h.state_after(4), 0, 3).is_err());
    }

    #[test]
    fn pending_entries_may_be_skipped_or_applied() {
        let mut h = History::new(2);
        h.push(put(0, 1, false));
        h.push(put(1, 2, false));
        h.set_maybe(1);
        h.push(put(0, 3, true));
        // Failed op 1 skipped, synced op 2 present.
        assert_eq!(h.find_prefix(&[Some(3), None], 3, 3), Ok(3));
        // Failed op 1 applied.
        assert_eq!(h.find_prefix(&[Some(3), Some(2)], 3, 3), Ok(3));
        // Synced op 2 missing.
        assert!(h.find_prefix(&[Some(1), Some(2)], 3, 3).is_err());
    }

    #[test]
    fn later_write_in_a_batch_wins() {
        let mut h = History::new(1);
        h.push(Entry {
            writes: vec![(0, Some(1)), (0, None)],
            sync: false,
            maybe: false,
        });
        assert_eq!(h.state_after(1), vec![None]);
        assert!(h.find_prefix(&[Some(1)], 1, 1).is_err());
    }

    #[test]
    fn run_seeds_differ_and_repeat() {
        assert_ne!(run_seed(1, 0), run_seed(1, 1));
        assert_ne!(run_seed(1, 0), run_seed(2, 0));
        assert_eq!(run_seed(7, 3), run_seed(7, 3));
    }
}
