//! The database handle: open/recovery, the write path with group commit, reads, snapshots,
//! flush and compaction scheduling, properties, close.
//!
//! Layout: `mod.rs` (the public `Db`, reads, snapshots, properties, verify), `write.rs`
//! (group commit, back-pressure, memtable switch), `background.rs` (flush and compaction
//! threads, version installation, obsolete-file GC), `open.rs` (recovery), `repair.rs`
//! (`repair_db`: rebuilding a damaged database from what reads), `read_api.rs`
//! (the `std::iter` reads: `iter`/`range`/`prefix`, `multi_get`, `get_pinned`), `sizes.rs`
//! (approximate sizes of key ranges), `host.rs` (the engine's services to the design
//! components of `crate::design`, which decide every design-specific step),
//! `indexed_batch.rs` (`WriteBatchWithIndex`: a batch readable before it is written) and
//! `txn.rs` (optimistic transactions, validated by `write.rs`'s `write_validated`) and
//! `family.rs` (column families: each non-default family an engine of its own, fed by
//! this one's write path; `docs/column-families.md`). The implementation guide is
//! `docs/impl.md`.
//!
//! Locks (never taken in the reverse order), each owned by one part of [`DbInner`]:
//! 1. `write` ([`WritePipeline`]) — held by the write-group leader (and by `flush`/`close`):
//!    owns the WAL and the active memtable pointer. Memtable switches happen only under it.
//! 2. `manifest` ([`VersionState`]) — serialises version changes (manifest append +
//!    install).
//! 3. `state` ([`Scheduler`]) — short critical sections only, never held across I/O:
//!    memtable lists, the current version, background bookkeeping, the sticky background
//!    error.
//!
//! `family_switch` is taken under `write` across a memtable switch and the column
//! families' switches that go with it (a family's `write` lock is taken under it: the
//! database's `write` lock always before a family engine's). `families` (the live column
//! families) is a leaf lock, like `queue` (pending writers) and `snapshots`. Readers take
//! neither `write` nor `manifest`: they load the current `SuperVersion` from an `ArcSwap`
//! and never block writers.
//!
//! Thread-safety: `Db` is `Send + Sync`; every method may be called from many threads.

mod background;
mod checkpoint;
mod family;
mod host;
mod indexed_batch;
mod open;
mod read_api;
mod repair;
mod sizes;
mod txn;
mod write;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use arc_swap::{ArcSwap, Guard};
use mezz_env::{FileLock, FileSystem};
use mezz_format::SeqNo;
use mezz_format::iter::InternalIterator;
use parking_lot::{Condvar, Mutex};

use crate::base::snapshot::SnapshotList;
use crate::batch::WriteBatch;
use crate::compaction::{Claims, CompactionPolicy};
use crate::design::Design;
use crate::error::{Error, Result};
use crate::gate::{Gate, Pass};
use crate::iter::{DbIterator, merging_iterator, read_run_iterator};
use crate::manifest::Manifest;
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, Snapshot, WriteOptions};
use crate::placement::Placement;
use crate::state::MemtableSet;
use crate::state::SuperVersion;
use crate::stats::{LevelStats, ReadTrace, SLOW_MICROS, Stats, StatsCollector};
use crate::storage::Storage;
use crate::table::cache::TableCache;
use crate::table::row::SeekChain;
use crate::table::{LookupResult, TableLocation, TableMeta, TableReadOptions};
use crate::version::Version;
use crate::wal::WalWriter;

pub use checkpoint::CheckpointInfo;
pub use family::{CHANGEABLE_FAMILY_OPTIONS, ColumnFamily, DEFAULT_COLUMN_FAMILY};
pub use indexed_batch::{BatchDbIterator, BatchValue, WriteBatchWithIndex};
pub use repair::{
    Dropped, FamilyRepair, LOST_DIR, RepairReport, ReplayedLog, RewrittenTable, repair_db,
};
pub use txn::{Transaction, TxnOptions};

/// What `Db::verify` checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Tables read.
    pub tables: usize,
    /// Entries read from them.
    pub entries: u64,
    /// Bytes of table files read.
    pub bytes: u64,
}

/// The state the write-group leader owns (behind `DbInner::write`).
#[derive(Debug)]
pub(crate) struct WriteState {
    /// The WAL feeding `mem` (`None` when `use_wal` is off).
    wal: Option<WalWriter>,
    /// Nanoseconds of write delay owed but not yet slept (delays are slept in chunks).
    delay_debt_nanos: u64,
    /// The rate writes ran at before any slowdown (the slowdown starts from it).
    free_rate: write::FreeRate,
    /// What the group being committed has waited on so far (empty between groups:
    /// `finish_trace` takes it).
    trace: crate::stats::WriteTrace,
    /// The last sequence number assigned to a logged group. Groups are published
    /// (`DbInner::last_seq`) in this order, after their memtable insert, which runs
    /// outside this lock: `last_seq <= last_assigned`.
    last_assigned: u64,
    /// Bytes of groups with updates of other column families logged in the active WAL (a
    /// memtable's worth switches it: see `make_room_for_write`).
    family_bytes: u64,
}

/// Background bookkeeping behind `DbInner::state`.
#[derive(Debug)]
pub(crate) struct State {
    /// Every memtable, in read order (the only owner of the active memtable).
    mems: MemtableSet,
    version: Arc<Version>,
    /// WALs below this number are obsolete (recorded in the manifest).
    log_number: u64,
    flush_running: bool,
    /// The tables and key ranges running compactions hold.
    claims: Claims,
    /// Compactions running (on background threads, or run by a caller of
    /// `run_background_work`); at most `max_background_jobs - 1` with two threads or more
    /// (see `DbInner::run_one_job`).
    bg_compactions: usize,
    /// The table (level, id) that point reads searched in vain often enough to compact
    /// it (`Options::seek_compaction`), until a compaction is planned for it.
    seek_compaction: Option<(usize, u64)>,
    /// The sticky background error.
    bg_error: Option<String>,
    shutting_down: bool,
    pending_compaction_bytes: u64,
    /// Tables removed from the current version, deleted once nothing holds them.
    obsolete: Vec<(u64, TableLocation, Weak<TableMeta>)>,
    /// NVM objects the manifest no longer lists, freed once no table that points into
    /// them is held.
    obsolete_nvm: Vec<(crate::storage::nvm::NvmObject, Vec<Weak<TableMeta>>)>,
}

/// A writer waiting in the group-commit queue.
#[derive(Debug)]
pub(crate) struct Pending {
    batch: WriteBatch,
    sync: bool,
    slot: Arc<Slot>,
}

/// Where a queued writer waits for its result (or to be told to try to lead).
#[derive(Debug, Default)]
pub(crate) struct Slot {
    m: Mutex<SlotState>,
    cv: Condvar,
    /// Whether the state holds a result or a wake-up: what a waiter spins on before it
    /// parks. Written only under `m`; the state under `m` is the authority.
    ready: AtomicBool,
}

#[derive(Debug, Default)]
struct SlotState {
    result: Option<Result<()>>,
    wake: bool,
    /// The waiter sleeps on `cv` (so a result or wake-up must notify it).
    parked: bool,
    /// The writer's share of its group's memtable insert, handed over by the leader.
    job: Option<write::InsertJob>,
}

/// Everything an open database shares between the handle and its background threads: the
/// parts every path reads (options, storage, the design, caches, the gate), and three parts
/// that each own their lock — the write pipeline (`write`), the version state (`manifest`)
/// and the background scheduler (`state`, with its condition variables). Locks are taken
/// in that order; see the module documentation.
#[derive(Debug)]
pub(crate) struct DbInner {
    path: PathBuf,
    opts: Options,
    fs: Arc<dyn FileSystem>,
    stats: Arc<StatsCollector>,
    /// Where tables (and the NVM pool's objects) live.
    storage: Arc<Storage>,
    /// Decides what to compact and how hard to hold writers back.
    policy: Arc<dyn CompactionPolicy>,
    /// The designs' components, assembled from the options (`design`).
    design: Design,
    /// Decides which directory each new table goes to.
    placement: Arc<dyn Placement>,
    table_cache: Arc<TableCache>,
    /// Admits public calls and makes `close` wait for those in flight (shared with the
    /// iterators, which pass it on every step).
    gate: Arc<Gate>,
    lock: Mutex<Option<Box<dyn FileLock>>>,
    /// The info log (`LOG`, or the caller's `info_log`).
    info_log: Arc<crate::info_log::InfoLog>,
    /// The pool of parallel reads (`parallel_reads`).
    read_pool: Option<crate::parallel::ReadPool>,
    /// The write pipeline: group commit, the WALs, memtable switches.
    writes: WritePipeline,
    /// The versions: the MANIFEST, the published super version, sequence and file numbers.
    versions: VersionState,
    /// The background scheduler: the state its jobs change, and their signals.
    jobs: Scheduler,
    /// The column families other than the default (`family`); a leaf lock.
    families: parking_lot::RwLock<family::Families>,
    /// Whether `families` holds a live family (the write path looks for updates of other
    /// families only then).
    has_families: AtomicBool,
    /// In a column family's engine: the database's (whose WALs hold its updates).
    parent: std::sync::OnceLock<Weak<DbInner>>,
    /// Held across a memtable switch and the switch of the families' memtables that goes
    /// with it, so that a flush, which waits for the families' flushes first, cannot look
    /// at them in between (see `flush_families`). Taken after `write`, before the others.
    family_switch: Mutex<()>,
}

/// The write pipeline: the leader's state behind the `write` lock, the queue of waiting
/// writers, the WALs of switched-out memtables, and the spare the next switch starts with.
#[derive(Debug)]
pub(crate) struct WritePipeline {
    write: Mutex<WriteState>,
    queue: Mutex<VecDeque<Pending>>,
    /// The queue's length, stored under its lock: what the write path checks without
    /// taking it.
    queued: AtomicUsize,
    /// WALs of switched-out memtables whose tails may not be durable yet, oldest first:
    /// each leaves the list when synced, or unsynced when its memtable's flush is
    /// installed.
    closed_wals: Mutex<Vec<Arc<ClosedWal>>>,
    /// Set when a WAL append or sync failed. From then on no WAL is synced again: a failed
    /// sync may have dropped that log's tail, and a later sync of a newer log would make
    /// later writes durable after lost ones (a hole that recovery cannot see, because a
    /// log that lost its tail ends cleanly).
    wal_failed: AtomicBool,
    /// Closed WALs are made durable ahead of need, off the write path: synced by their
    /// memtable's flush before it writes, and written back by the kernel as they grow
    /// (early writeback). Set from the start when the design asks (NVM memtables: a write
    /// into one first syncs every closed WAL; NVM WALs), and by the first `sync` write
    /// (which does too). Unset, a WAL is never synced while the database is open (its
    /// memtable's flush makes it obsolete), so a WAL deleted within the kernel's writeback
    /// delay never reaches the disk: half the bytes written in a fill without `sync`
    /// (RocksDB does the same).
    sync_wals_ahead: AtomicBool,
    /// The highest WAL number whose directory entry is known durable (a new WAL file's
    /// entry is synced with the directory only before its first sync, off the switch).
    /// Before an NVM memtable with the deferred mark is made, the entry of the WAL it
    /// follows is made durable: a power cut must leave that WAL on disk, where recovery
    /// sees whether it lost its tail (`DbInner::make_wal_entries_durable`).
    wal_entries_durable: AtomicU64,
    /// The object the next memtable switch starts with, made ready and recorded in the
    /// manifest off the write path (see `DbInner::prepare_spare`). Lock order: taken
    /// before `manifest` and `state`; a switch takes it under the `write` lock, so a spare
    /// always belongs to the active memtable of the moment.
    spare: Mutex<Option<Spare>>,
}

/// The version state: the MANIFEST (behind the `manifest` lock, which serialises version
/// changes), the super version readers load without a lock, the sequence and file
/// counters, and the live snapshots.
#[derive(Debug)]
pub(crate) struct VersionState {
    manifest: Mutex<Manifest>,
    super_version: ArcSwap<SuperVersion>,
    /// The last sequence number visible to readers.
    last_seq: AtomicU64,
    next_file: AtomicU64,
    /// Switch to a new manifest once the current one is larger (64 MiB; tests lower it).
    max_manifest_bytes: AtomicU64,
    snapshots: Arc<SnapshotList>,
}

/// The background scheduler: the state behind the `state` lock (memtable set, current
/// version, claims, the sticky error, obsolete files), the signals its jobs wait on and
/// give, and its threads.
#[derive(Debug)]
pub(crate) struct Scheduler {
    state: Mutex<State>,
    /// Background threads wait here for work.
    bg_cv: Condvar,
    /// Signalled whenever a background job finishes (stalled writers, `flush`, waits).
    done_cv: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// An object made ready by a background job for the switch away from memtable
/// `for_active`, so that the switch writes no manifest record (NVM objects) and creates no
/// file (WAL files) on the write path.
#[derive(Debug)]
pub(crate) struct Spare {
    /// The id of the active memtable this spare follows. Its own number is larger.
    for_active: u64,
    kind: SpareKind,
}

/// What a spare is.
#[derive(Debug)]
pub(crate) enum SpareKind {
    /// An empty NVM memtable, for a DRAM memtable's switch under `nvm_memtable = mutable`.
    Memtable(Arc<MemTable>),
    /// A WAL, for a switch to a DRAM memtable: in NVM under `wal_on_nvm`, else a file.
    Wal(crate::wal::WalWriter),
}

/// The WAL of a memtable that was switched out. Its tail is synced off the write path: by
/// the background flush of its memtable, or earlier by a `sync` write (which must not be
/// acknowledged while an older WAL could still lose its tail). `writer` is `None` once
/// synced.
#[derive(Debug)]
pub(crate) struct ClosedWal {
    number: u64,
    writer: Mutex<Option<WalWriter>>,
}

/// An open database. `Send + Sync`: share it between threads with `Arc<Db>`.
#[derive(Debug)]
pub struct Db {
    inner: Arc<DbInner>,
}

/// Switch to a new manifest once the current one is larger than this.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

fn elapsed_nanos(t: Instant) -> u64 {
    nanos_between(t, Instant::now())
}

/// Nanoseconds from `t` to `end` (0 if `end` is earlier).
fn nanos_between(t: Instant, end: Instant) -> u64 {
    u64::try_from(end.saturating_duration_since(t).as_nanos()).unwrap_or(u64::MAX)
}

/// When a point read began, and what its thread had waited on by then (see
/// `DbInner::finish_get`).
struct GetStart {
    at: Instant,
    waits: mezz_util::trace::ReadWaits,
}

impl GetStart {
    fn now() -> GetStart {
        GetStart {
            at: Instant::now(),
            waits: mezz_util::trace::current(),
        }
    }
}

/// Who runs [`levels_get`].
enum Searcher<'a> {
    /// A parallel-read job: it stops early (with `None`) once the flag is set.
    Parallel(&'a AtomicBool),
    /// The reading thread. With a slot, the first table searched in vain before another
    /// one is charged a wasted search (LevelDB's seek statistics); when that makes it due
    /// for compaction, the slot is set to its level and id.
    Caller(Option<&'a mut Option<(usize, u64)>>),
}

/// The newest entry for `key` at `seq` in `levels` of `v`: the sorted runs of each level
/// newest first, in each run the one table whose range may hold the key. See [`Searcher`].
fn levels_get(
    cache: &TableCache,
    v: &Version,
    levels: std::ops::Range<usize>,
    seq: SeqNo,
    topts: &TableReadOptions,
    key: &[u8],
    searcher: Searcher<'_>,
) -> Result<Option<LookupResult>> {
    // L0 rows of a matrix container pass cross-row hints down to older rows.
    let mut hint = None;
    // The entry, and whether the table was searched past its filter (`charging`: only
    // then is that asked).
    let mut probe = |t: &TableMeta, charging: bool| -> Result<(Option<LookupResult>, bool)> {
        let path = || cache.storage().describe(t);
        let table = cache.open_for_read(t).map_err(|e| e.in_file(path()))?;
        let r = table
            .get_chained(key, seq, topts, &mut hint)
            .map_err(|e| e.in_file(path()))?;
        let searched = charging && r.is_none() && table.may_contain(key);
        Ok((
            r.map(|r| match r {
                crate::pinned::PinnedLookup::Value(v) => LookupResult::Value(v.into_vec()),
                crate::pinned::PinnedLookup::Deleted => LookupResult::Deleted,
            }),
            searched,
        ))
    };
    let (cancel, mut seek) = match searcher {
        Searcher::Parallel(c) => (Some(c), None),
        Searcher::Caller(slot) => (None, slot),
    };
    let cancelled = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    // The first table searched in vain (past its filter: a probe its filter answered
    // costs little), until the next search charges it.
    let mut missed: Option<(usize, &Arc<TableMeta>)> = None;
    for level in levels {
        if cancelled() {
            return Ok(None);
        }
        for run in v.level_runs(level) {
            let Some(t) = run.table_for(key, &v.order) else {
                continue;
            };
            if let Some((l, first)) = missed.take()
                && let Some(out) = seek.take()
                && first.charge_seek()
            {
                *out = Some((l, first.id));
            }
            let (r, searched) = probe(t, seek.is_some() && missed.is_none())?;
            if let Some(r) = r {
                return Ok(Some(r));
            }
            if searched {
                missed = Some((level, t));
            }
        }
    }
    Ok(None)
}

impl DbInner {
    /// Admits a public call (see [`Gate`]): held for the call's whole duration, it keeps
    /// `close` waiting.
    ///
    /// # Errors
    /// `Closed` once the handle is closing or closed.
    fn enter(&self) -> Result<Pass<'_>> {
        self.gate.enter()
    }

    /// `Closed` once the handle is closing or closed (for checks inside a call that holds
    /// a pass, or of work that must not start once a close began).
    fn check_open(&self) -> Result<()> {
        if self.gate.is_closing() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    fn new_file_number(&self) -> u64 {
        self.versions.next_file.fetch_add(1, Ordering::Relaxed)
    }

    /// Publishes a new super version built from `st`. If its containers are not in
    /// sequence-number order (a bug: reads could return a stale version), the sticky
    /// background error is set so that no write is acknowledged on top of it.
    fn install_super_version(&self, st: &mut State) {
        let sv = st.mems.super_version(Arc::clone(&st.version));
        if let Err(e) = sv.check_read_order()
            && st.bg_error.is_none()
        {
            st.bg_error = Some(format!("internal error: {e}"));
            self.jobs.done_cv.notify_all();
        }
        self.versions.super_version.store(Arc::new(sv));
    }

    fn table_read_options(opts: &ReadOptions) -> TableReadOptions {
        TableReadOptions {
            fill_cache: opts.fill_cache,
            verify_checksums: opts.verify_checksums,
            whole_table_scan: false,
        }
    }

    /// What a read looks at: the current super version and the sequence number it reads
    /// at (the snapshot's, or the last published one).
    ///
    /// The super version is loaded **before** the sequence number. Every table it names
    /// was installed before the sequence is loaded, and a compaction drops a version of a
    /// key only when its own inputs hold a newer one (or, with live snapshots, a newer
    /// one in the same snapshot stripe), all of which were published by then: so whatever
    /// a compaction removed from this super version is shadowed by a version the read
    /// sees. The other order is wrong: a flush plus a compaction installed between the two
    /// loads could replace the version visible at the (older) sequence by one above it,
    /// and the read would fall through to an even older version further down. Writes
    /// published after the super version was loaded may land in a newer memtable that the
    /// read does not see; those are newer than everything it does see (a memtable holds a
    /// contiguous range of sequence numbers and a batch never spans two), so the read
    /// still sees a prefix of the history, and every write acknowledged before the read
    /// started is in it.
    ///
    /// The super version comes as an `arc_swap` guard: a point read borrows it without
    /// touching its reference count, a cache line that two reader threads would otherwise
    /// pass back and forth on every read. Whatever keeps it longer (an iterator) takes an
    /// `Arc` with [`Guard::into_inner`].
    fn read_view(&self, opts: &ReadOptions) -> (Guard<Arc<SuperVersion>>, SeqNo) {
        self.read_view_with(opts, || ())
    }

    /// [`DbInner::read_view`], running `between` after loading the super version and
    /// before loading the sequence number (tests force interleavings with it).
    fn read_view_with(
        &self,
        opts: &ReadOptions,
        between: impl FnOnce(),
    ) -> (Guard<Arc<SuperVersion>>, SeqNo) {
        let sv = self.versions.super_version.load();
        between();
        let seq = opts.snapshot.as_ref().map_or_else(
            || self.versions.last_seq.load(Ordering::Acquire),
            Snapshot::sequence,
        );
        (sv, seq)
    }

    fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _pass = self.enter()?;
        let (sv, seq) = self.read_view(opts);
        self.get_in(&sv, seq, opts, key)
    }

    /// Records a point read that began at `start`: its latency, and what it waited on
    /// when it was slow.
    fn finish_get(&self, start: &GetStart) {
        let nanos = elapsed_nanos(start.at);
        self.stats.get_latency.record(nanos);
        if nanos / 1000 >= SLOW_MICROS {
            let w = mezz_util::trace::current().since(&start.waits);
            self.stats
                .slow_reads
                .lock()
                .record(ReadTrace::new(nanos / 1000, &w));
        }
    }

    /// The newest value of `key` at `seq` in `sv`.
    fn get_in(
        &self,
        sv: &SuperVersion,
        seq: SeqNo,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let found = |r: LookupResult| match r {
            LookupResult::Value(v) => Some(v),
            LookupResult::Deleted => None,
        };
        if let Some(pool) = &self.read_pool {
            return Ok(self.get_parallel(pool, sv, seq, opts, key)?.and_then(found));
        }
        if let Some(r) = Self::memtables_get(sv, key, seq)? {
            return Ok(found(r));
        }
        Ok(self
            .tables_get(&sv.version, seq, opts, key)?
            .and_then(found))
    }

    /// The newest entry for `key` at `seq` in the memtables of `sv` (DRAM and NVM).
    fn memtables_get(sv: &SuperVersion, key: &[u8], seq: SeqNo) -> Result<Option<LookupResult>> {
        if let Some(r) = sv.mem.get(key, seq)? {
            return Ok(Some(r));
        }
        for m in sv.imms.iter().chain(sv.nvm.iter()) {
            if let Some(r) = m.get(key, seq)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// The newest entry for `key` at `seq` in the tables of `v`.
    fn tables_get(
        &self,
        v: &Version,
        seq: SeqNo,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<LookupResult>> {
        let topts = Self::table_read_options(opts);
        let mut due = None;
        let r = levels_get(
            &self.table_cache,
            v,
            0..v.num_levels(),
            seq,
            &topts,
            key,
            Searcher::Caller(self.opts.seek_compaction.then_some(&mut due)),
        );
        if let Some((level, id)) = due {
            self.seek_compaction_due(level, id);
        }
        r
    }

    /// Point reads searched table `id` of `level` in vain often enough: it is compacted
    /// next when no compaction is due for size (one such table at a time, as in LevelDB).
    fn seek_compaction_due(&self, level: usize, id: u64) {
        if level + 1 >= self.opts.num_levels {
            return;
        }
        let mut st = self.jobs.state.lock();
        if st.seek_compaction.is_none() {
            st.seek_compaction = Some((level, id));
            drop(st);
            self.jobs.bg_cv.notify_all();
        }
    }

    /// `get` with parallel reads: the SST levels are split into one contiguous group per
    /// reader thread, each probed on the pool, while the memtables are probed here; the
    /// newest hit wins.
    fn get_parallel(
        &self,
        pool: &crate::parallel::ReadPool,
        sv: &SuperVersion,
        seq: SeqNo,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<LookupResult>> {
        let v = &sv.version;
        let n = v.num_levels();
        let deepest = v.deepest_nonempty_level().map_or(0, |l| l + 1);
        if deepest == 0 {
            return Self::memtables_get(sv, key, seq);
        }
        let topts = Self::table_read_options(opts);
        let cancel = Arc::new(AtomicBool::new(false));
        let groups = pool.size().min(deepest);
        let per = deepest.div_ceil(groups);
        let mut pending = Vec::with_capacity(groups);
        for g in 0..groups {
            let levels = (g * per)..((g + 1) * per).min(deepest).min(n);
            let (tx, rx) = crossbeam_channel::bounded(1);
            let (cache, version) = (Arc::clone(&self.table_cache), Arc::clone(v));
            let (job_key, job_cancel) = (key.to_vec(), Arc::clone(&cancel));
            // Run here if the pool is shut down: the answer arrives on `rx` either way.
            pool.submit(move || {
                let r = levels_get(
                    &cache,
                    &version,
                    levels,
                    seq,
                    &topts,
                    &job_key,
                    Searcher::Parallel(&job_cancel),
                );
                let _ = tx.send(r);
            });
            pending.push(rx);
        }
        if let Some(r) = Self::memtables_get(sv, key, seq)? {
            cancel.store(true, Ordering::Relaxed);
            return Ok(Some(r));
        }
        // Newest group first: its hit shadows every deeper one.
        for rx in pending {
            let r = rx
                .recv()
                .map_err(|_| Error::Background("a parallel read job was lost".into()))??;
            if r.is_some() {
                cancel.store(true, Ordering::Relaxed);
                return Ok(r);
            }
        }
        Ok(None)
    }

    fn cursor(&self, opts: &ReadOptions) -> Result<DbIterator> {
        let _pass = self.enter()?;
        let (sv, seq) = self.read_view(opts);
        self.iter_in(Guard::into_inner(sv), seq, opts)
    }

    /// An iterator over `sv` at `seq`; it keeps `sv` (and the snapshot) alive.
    fn iter_in(&self, sv: Arc<SuperVersion>, seq: SeqNo, opts: &ReadOptions) -> Result<DbIterator> {
        let topts = Self::table_read_options(opts);
        let mut children: Vec<Box<dyn InternalIterator<Error>>> = Vec::new();
        children.push(sv.mem.iter());
        for m in sv.imms.iter().chain(sv.nvm.iter()) {
            children.push(m.iter());
        }
        let chain = Arc::new(SeekChain::default());
        for (_, run) in sv.version.runs() {
            children.push(read_run_iterator(run, &self.table_cache, topts, &chain)?);
        }
        let order = sv.version.order.clone();
        let pin: Box<dyn std::any::Any + Send + Sync> = Box::new((sv, opts.snapshot.clone()));
        Ok(DbIterator::new(
            merging_iterator(children, &order),
            seq,
            opts.lower_bound.clone(),
            opts.upper_bound.clone(),
            pin,
            order,
        )
        .with_bound_kinds(opts.lower_bound_exclusive, opts.upper_bound_inclusive)
        .gated(Arc::clone(&self.gate), self.storage.maps_table_bytes()))
    }

    fn snapshot(&self) -> Snapshot {
        // The sequence is read under the registry lock: a compaction reads the registry
        // under the same lock after picking its inputs, so it either sees this snapshot or
        // only compacts entries at or below its sequence.
        let (seq, guard) = SnapshotList::register(&self.versions.snapshots, || {
            self.versions.last_seq.load(Ordering::Acquire)
        });
        Snapshot {
            seq,
            _guard: Arc::new(guard),
        }
    }

    fn stats(&self) -> Stats {
        let mut s = self.stats.snapshot();
        let sv = self.versions.super_version.load_full();
        let n = sv.version.num_levels();
        if s.levels.len() < n {
            let start = s.levels.len();
            s.levels.extend((start..n).map(|level| LevelStats {
                level,
                ..LevelStats::default()
            }));
        }
        for (level, ls) in s.levels.iter_mut().enumerate() {
            ls.files = sv.version.num_files(level);
            ls.bytes = sv.version.level_bytes(level);
            ls.nvm_files = sv
                .version
                .tables(level)
                .iter()
                .filter(|t| t.tier() == crate::table::Tier::Nvm)
                .count();
        }
        self.design
            .fill_stats(&mut s, &sv.version, &self.stats, &self.storage);
        s.last_sequence = self.versions.last_seq.load(Ordering::Acquire);
        s.memtable_bytes = sv.mem.approximate_memory_usage() as u64;
        s.immutable_memtables = sv.imms.len();
        self.storage.fill_nvm_stats(&mut s);
        s.snapshots = self.versions.snapshots.count();
        s.units = self
            .storage
            .unit_stats(sv.version.all_tables().map(|(_, t)| t.as_ref()));
        s
    }

    fn property(&self, name: &str) -> Option<String> {
        let _pass = self.enter().ok()?;
        // LevelDB's names (`leveldb.`) answer as LevelDB's do, where Mezzanine has one.
        match name {
            "mezz.stats" | "leveldb.stats" => Some(self.stats().to_string()),
            "mezz.options" => Some(self.opts.to_text()),
            "mezz.levels" => {
                let v = Arc::clone(&self.versions.super_version.load().version);
                let mut s = String::from("level files bytes\n");
                for level in 0..v.num_levels() {
                    s.push_str(&format!(
                        "L{level} {} {}\n",
                        v.num_files(level),
                        v.level_bytes(level)
                    ));
                }
                Some(s)
            }
            // LevelDB's `DebugString` of the version: each level's tables as
            // `id:size[smallest .. largest]` (internal keys escaped).
            "leveldb.sstables" => {
                let v = Arc::clone(&self.versions.super_version.load().version);
                let mut s = String::new();
                for level in 0..v.num_levels() {
                    s.push_str(&format!("--- level {level} ---\n"));
                    for t in v.tables(level) {
                        s.push_str(&format!(
                            " {}:{}[{} .. {}]\n",
                            t.id,
                            t.size,
                            t.smallest.escape_ascii(),
                            t.largest.escape_ascii()
                        ));
                    }
                }
                Some(s)
            }
            "leveldb.approximate-memory-usage" => {
                let sv = self.versions.super_version.load();
                let bytes: usize = std::iter::once(&sv.mem)
                    .chain(&sv.imms)
                    .map(|m| m.approximate_memory_usage())
                    .sum();
                Some(bytes.to_string())
            }
            _ => {
                let n: usize = name
                    .strip_prefix("mezz.num-files-at-level")
                    .or_else(|| name.strip_prefix("leveldb.num-files-at-level"))?
                    .parse()
                    .ok()?;
                let v = Arc::clone(&self.versions.super_version.load().version);
                (n < v.num_levels()).then(|| v.num_files(n).to_string())
            }
        }
    }

    fn verify(&self) -> Result<VerifyReport> {
        let _pass = self.enter()?;
        let sv = self.versions.super_version.load_full();
        let v = &sv.version;
        v.check_invariants()?;
        let mut report = VerifyReport::default();
        let topts = TableReadOptions {
            fill_cache: false,
            verify_checksums: true,
            whole_table_scan: false,
        };
        for (level, t) in v.all_tables() {
            let path = self.storage.describe(t);
            let bad = |offset: u64, detail: String| Error::Corruption {
                file: Some(path.clone()),
                offset,
                detail: detail.into(),
            };
            // An NVM table's size is the bytes of its entries (which may live in buffers
            // other tables share); only an SST's stored size must match it.
            let size = self.storage.table_size(t)?;
            if t.tier() == crate::table::Tier::Ssd && size != t.size {
                return Err(bad(
                    0,
                    format!(
                        "L{level} table {}: file size {size}, manifest says {}",
                        t.id, t.size
                    ),
                ));
            }
            let table = self.table_cache.open(t).map_err(|e| e.in_file(&path))?;
            let entries = table.verify().map_err(|e| e.in_file(&path))?;
            if entries != t.num_entries {
                return Err(bad(
                    0,
                    format!(
                        "L{level} table {}: {entries} entries, manifest says {}",
                        t.id, t.num_entries
                    ),
                ));
            }
            let mut it = table.iter(&topts);
            it.seek_to_first();
            let first = it.valid().then(|| it.key().to_vec());
            it.seek_to_last();
            let last = it.valid().then(|| it.key().to_vec());
            it.status().map_err(|e| e.in_file(&path))?;
            if first.as_deref() != Some(t.smallest.as_slice())
                || last.as_deref() != Some(t.largest.as_slice())
            {
                return Err(bad(
                    0,
                    format!(
                        "L{level} table {}: key range differs from the manifest's",
                        t.id
                    ),
                ));
            }
            report.tables += 1;
            report.entries += entries;
            report.bytes += size;
        }
        Ok(report)
    }
}

impl Db {
    /// Opens (or creates, per `options.create_if_missing`) the database in directory `path`.
    ///
    /// # Errors
    /// `InvalidArgument` for bad options, `Locked` if another handle has the DB open,
    /// `Corruption` / `Io` if recovery fails.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = open::open(path.as_ref(), options)?;
        Ok(Db { inner })
    }

    /// Sets `key` to `value` (default write options).
    ///
    /// # Errors
    /// I/O errors, `Background` after a failed background job, `Closed`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_opt(&WriteOptions::default(), key, value)
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn put_opt(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        // One allocation of the right size, not a few growing ones.
        let mut b = WriteBatch::with_capacity(WriteBatch::put_size(key, value));
        b.put(key, value);
        self.write(opts, b)
    }

    /// Deletes `key` (default write options).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.delete_opt(&WriteOptions::default(), key)
    }

    /// Deletes `key`.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete_opt(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        // A delete takes no more room than a put of an empty value.
        let mut b = WriteBatch::with_capacity(WriteBatch::put_size(key, &[]));
        b.delete(key);
        self.write(opts, b)
    }

    /// Applies a batch atomically.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        let start = Instant::now();
        let r = self
            .inner
            .enter()
            .and_then(|_pass| self.inner.write(opts.sync, batch, start));
        // A batch applied alone reports when (its group's trace read the clock there).
        let end = match r {
            Ok(Some(end)) => end,
            _ => Instant::now(),
        };
        (self.inner.stats.write_latency).record(nanos_between(start, end));
        r.map(|_| ())
    }

    /// The value of `key` in the latest state.
    ///
    /// # Errors
    /// `Corruption` / `Io` from reading tables, `Closed`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::default(), key)
    }

    /// The value of `key` as of `opts.snapshot` (or the latest state).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let start = GetStart::now();
        let r = self.inner.get(opts, key);
        self.inner.finish_get(&start);
        r
    }

    /// An iterator over a consistent snapshot, honouring `opts.lower_bound` /
    /// `opts.upper_bound`. It starts unpositioned: call a seek method first.
    ///
    /// # Errors
    /// `Closed`, or an error opening a table.
    pub fn cursor(&self, opts: &ReadOptions) -> Result<DbIterator> {
        self.inner.cursor(opts)
    }

    /// Pins the current state for consistent reads.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// Flushes the memtable to an SST and waits until it is durable.
    ///
    /// # Errors
    /// I/O errors, `Closed`.
    pub fn flush(&self) -> Result<()> {
        let _pass = self.inner.enter()?;
        self.inner.flush()
    }

    /// Writes a consistent copy of the database to `dir` (which must not exist) while
    /// writes go on: the copy holds every write acknowledged before the call, and is the
    /// state at one sequence number (`CheckpointInfo::last_sequence`). SST files are
    /// hard-linked (copied across file systems); data in NVM and in memtables is written
    /// as SSTs, so the copy is an SSD-only database that opens with any preset, with or
    /// without an NVM directory of its own. Every live column family is in the copy (in
    /// `dir/cf-<id>`), at the same sequence number, as an SSD family.
    ///
    /// # Errors
    /// `InvalidArgument` if `dir` exists; I/O errors (the partial copy is removed);
    /// `Busy` if a column family was dropped while its tables were copied; `Closed`.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointInfo> {
        let _pass = self.inner.enter()?;
        self.inner.checkpoint(dir.as_ref())
    }

    /// Compacts every table overlapping `[begin, end]` (`None` = unbounded) down to the
    /// bottom-most level that holds data, and waits.
    ///
    /// # Errors
    /// I/O errors, `Closed`.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let _pass = self.inner.enter()?;
        self.inner.compact_range(begin, end)
    }

    /// Waits until no flush or compaction is pending or running, in every column family.
    ///
    /// # Errors
    /// A background error, `Closed`.
    pub fn wait_for_background(&self) -> Result<()> {
        let _pass = self.inner.enter()?;
        self.inner.wait_for_background()?;
        // And every column family's.
        for f in self.inner.live_families() {
            let _fpass = f.db.enter()?;
            f.db.wait_for_background()?;
        }
        Ok(())
    }

    /// Runs up to `max_jobs` due background jobs (flushes first, then compactions) on the
    /// calling thread and returns how many ran. With `Options::manual_background` this is
    /// where background work happens, so a test can choose its moments from a seed; with
    /// background threads it only adds a worker for a while.
    ///
    /// # Errors
    /// The background error (if a job failed), `Closed`.
    pub fn run_background_work(&self, max_jobs: usize) -> Result<usize> {
        let _pass = self.inner.enter()?;
        self.inner.run_background_work(max_jobs)
    }

    /// A named property: `mezz.stats` (the statistics as text), `mezz.levels` (files and
    /// bytes per level), `mezz.num-files-at-level<N>`, `mezz.options`; and LevelDB's
    /// `leveldb.stats`, `leveldb.sstables` (every table per level), `leveldb.num-files-at-
    /// level<N>`, `leveldb.approximate-memory-usage` (bytes of the memtables).
    #[must_use]
    pub fn property(&self, name: &str) -> Option<String> {
        self.inner.property(name)
    }

    /// The statistics as a struct.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// Closes the handle: calls that start from now on (on any thread, and the next step
    /// of any iterator made by this handle) return `Closed`; calls already running are
    /// waited for (a manual compaction stops before its next compaction job, a stalled
    /// writer gives up with `Closed`); then the background threads finish their current
    /// job and stop, the WAL is synced (without a WAL: the memtable is flushed), and the
    /// LOCK is released last. When `close` returns, nothing this handle started touches
    /// the database any more, so it may be opened again at once. Dropping the handle
    /// closes it too.
    ///
    /// # Errors
    /// The first error met while closing; `Closed` if already closed (a close running on
    /// another thread is waited for first).
    pub fn close(&self) -> Result<()> {
        self.close_handle()
    }

    /// Closes once (see [`Db::close`]).
    fn close_handle(&self) -> Result<()> {
        let inner = &self.inner;
        if !inner.gate.shut() {
            inner.gate.wait_finished();
            return Err(Error::Closed);
        }
        // Stalled writers and waiting calls look at the gate when woken.
        inner.jobs.done_cv.notify_all();
        inner.wake_next_writer();
        inner.gate.wait_idle();
        // Without a WAL the memtable's writes would be lost: flushed while the background
        // threads still run.
        let flushed = if inner.opts.use_wal {
            Ok(())
        } else {
            inner.flush()
        };
        let closed = inner.shutdown();
        // The column families' engines stop after this one's flushes (which flush them).
        let families = inner.close_families();
        inner.gate.finish();
        flushed.and(closed).and(families)
    }

    /// Reads every table and verifies every checksum and the version's invariants (key
    /// order inside tables, no overlap between tables of one level >= 1, key ranges that
    /// match the recorded metadata), in every column family. Used by `mezz check`.
    ///
    /// # Errors
    /// The first `Corruption` found, naming the file and offset.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut r = self.inner.verify()?;
        // And every column family's tables.
        for f in self.inner.live_families() {
            let fr = f.db.verify()?;
            r.tables += fr.tables;
            r.entries += fr.entries;
            r.bytes += fr.bytes;
        }
        Ok(r)
    }

    /// The database directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if !self.inner.gate.is_closing() {
            let _ = self.close_handle();
        }
    }
}

/// Deletes the database in `dir` (LevelDB's `DestroyDB`): every file the engine names
/// (tables, logs, manifests, `CURRENT`, `OPTIONS`, `IDENTITY`, temp files), the NVM pool
/// in `opts.nvm_dir` if there is one, what a repair moved to `lost/` (in both), then `LOCK`
/// and the directory itself if nothing else is left in it. Files the engine does not name stay. A missing directory is not an
/// error.
///
/// # Errors
/// `Locked` while the database is open (in this process or another); `Io` naming the first
/// file that could not be removed (the others are still tried).
pub fn destroy_db(dir: &Path, opts: &Options) -> Result<()> {
    use crate::filename::{FileType, POOL_FILE, lock_file, parse_file_name};
    if !opts.fs.exists(dir) {
        return Ok(());
    }
    let lock_path = lock_file(dir);
    let lock = opts.fs.lock(&lock_path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            Error::Locked(dir.to_path_buf())
        } else {
            Error::from(e).in_file(&lock_path)
        }
    })?;
    let names = opts
        .fs
        .list_dir(dir)
        .map_err(|e| Error::from(e).in_file(dir))?;
    let mut first_err = None;
    // The column families' directories (and their NVM pools).
    for name in names
        .iter()
        .filter(|n| family::parse_family_dir(n).is_some())
    {
        if let Err(e) = family::reclaim_family_dir(opts, &dir.join(name)) {
            first_err.get_or_insert(e);
        }
    }
    let mut remove = |path: &Path| {
        if let Err(e) = opts.fs.remove_file(path) {
            first_err.get_or_insert(Error::from(e).in_file(path));
        }
    };
    for name in names {
        match parse_file_name(&name) {
            Some((FileType::Lock, _)) | None => {}
            Some(_) => remove(&dir.join(&name)),
        }
    }
    // What a repair moved aside (`repair_db`): the engine's files in `lost/`.
    let lost = dir.join(repair::LOST_DIR);
    for name in opts.fs.list_dir(&lost).unwrap_or_default() {
        if repair::is_engine_file(&name) {
            remove(&lost.join(&name));
        }
    }
    let _ = opts.fs.remove_dir(&lost);
    if let Some(nvm) = &opts.nvm_dir {
        let pool = nvm.join(POOL_FILE);
        if opts.fs.exists(&pool) {
            remove(&pool);
        }
        let lost = nvm.join(repair::LOST_DIR);
        for name in opts.fs.list_dir(&lost).unwrap_or_default() {
            if repair::is_engine_file(&name) {
                remove(&lost.join(&name));
            }
        }
        let _ = opts.fs.remove_dir(&lost);
    }
    drop(lock);
    let _ = opts.fs.remove_file(&lock_path);
    // Only if empty, as LevelDB.
    let _ = opts.fs.remove_dir(dir);
    first_err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filename;

    #[test]
    fn approximate_size_counts_the_tables_a_range_touches() {
        let db = mem_db();
        for i in 0..100u32 {
            db.put(format!("k{i:04}").as_bytes(), &[b'v'; 100]).unwrap();
        }
        let size = |a: &[u8], b: &[u8]| db.approximate_size(Some(a), Some(b)).unwrap();
        assert_eq!(size(b"a", b"z"), 0, "memtables are not counted");
        db.flush().unwrap();
        let all = size(b"a", b"z");
        assert!(all > 100 * 100, "{all}");
        assert_eq!(size(b"k0050", b"k0060"), all);
        assert_eq!(size(b"x", b"z"), 0);
        assert_eq!(size(b"a", b"k0000"), 0, "the end is exclusive");
        assert!(db.approximate_size(Some(b"z"), Some(b"a")).is_err());
    }

    #[test]
    fn db_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Db>();
    }

    fn manifests(fs: &dyn FileSystem, dir: &Path) -> Vec<u64> {
        let mut v: Vec<u64> = fs
            .list_dir(dir)
            .unwrap()
            .iter()
            .filter_map(|n| match filename::parse_file_name(n) {
                Some((filename::FileType::Manifest, n)) => Some(n),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Default options on a fresh in-memory file system (returned too).
    fn mem_fs_options() -> (Arc<dyn FileSystem>, Options) {
        let fs: Arc<dyn FileSystem> = Arc::new(mezz_env::MemFs::new());
        let opts = Options {
            fs: Arc::clone(&fs),
            ..Options::default()
        };
        (fs, opts)
    }

    fn mem_db() -> Db {
        let opts = Options {
            fs: Arc::new(mezz_env::MemFs::new()),
            ..Options::default()
        };
        Db::open("/db", opts).unwrap()
    }

    /// Writes `entries` (internal keys, inline values) into `obj` as a complete NVM table
    /// (a filter of `bloom` bits per key) whose header says a compaction of table `input`
    /// into `level` wrote it.
    fn write_resumable_output(
        tier: &crate::storage::nvm::NvmTier,
        obj: crate::storage::nvm::NvmObject,
        level: usize,
        input: u64,
        entries: &[(Vec<u8>, Vec<u8>)],
        bloom: u32,
        order: &mezz_format::KeyOrder,
    ) {
        use mezz_nvtable::ptable::{PTableBuilder, PTableHeader};
        let header = PTableHeader {
            id: obj.id,
            level: u32::try_from(level).unwrap(),
            kind: 1,
            inputs: vec![input],
            prefix_len: 0,
        };
        let mut b = PTableBuilder::create(
            Arc::clone(tier.region()),
            obj.extent(),
            &header,
            bloom,
            order,
        )
        .unwrap();
        for (k, v) in entries {
            b.add_inline(k, v).unwrap();
        }
        b.finish().unwrap();
    }

    /// A `tlsm` database on a simulated NVM pool (background work run by the caller) holding
    /// 300 keys in NVM tables, and the keys' values.
    fn tlsm_db_in_sim_nvm() -> (Db, Options, std::collections::BTreeMap<Vec<u8>, Vec<u8>>) {
        let opts = Options {
            fs: Arc::new(mezz_env::MemFs::new()),
            nvm_dir: Some("/nvm".into()),
            nvm_sim: Some(crate::options::SimNvm::new()),
            nvm_persistence: crate::options::PersistMode::CrashSim,
            nvm_capacity: 16 << 20,
            nvm_prefault: false,
            nvm_tiering: crate::options::NvmTiering::Full,
            manual_background: true,
            write_buffer_size: 4 << 10,
            ..Options::preset(crate::Preset::Tlsm)
        };
        let db = Db::open("/db", opts.clone()).unwrap();
        let mut model = std::collections::BTreeMap::new();
        for i in 0..300u32 {
            let (k, v) = (format!("k{i:04}"), format!("v{i}-{}", "x".repeat(40)));
            db.put(k.as_bytes(), v.as_bytes()).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        db.flush().unwrap();
        db.run_background_work(usize::MAX).unwrap();
        (db, opts, model)
    }

    /// Regression (the lifecycle stress, TLSM with manual background work): an NVM object
    /// the manifest records, whose own header never became durable, may sit in an extent
    /// that still holds the header of an older table, freed before. When that old header
    /// names input tables that are all live, recovery took the old table for an output of
    /// an interrupted compaction of those inputs and resumed after its last key: the
    /// inputs' other keys were dropped, the old table's keys came back, and outputs came
    /// out of key order (the open failed: "tables ... overlap or are out of order").
    /// Recovery drops such an object: nothing of it was written.
    #[test]
    fn an_old_header_in_a_reused_nvm_extent_is_not_resumed() {
        use crate::compaction::nvm_sink::NvmRecorder;
        use crate::storage::nvm::NvmObjectKind;
        use mezz_format::ValueKind;
        use mezz_format::ikey::make_internal_key;
        use mezz_nvtable::ptable::{index_len, inline_block_len};

        let (db, opts, model) = tlsm_db_in_sim_nvm();
        let inner = &db.inner;
        let (level, input) = {
            let v = Arc::clone(&inner.jobs.state.lock().version);
            let (l, t) = v
                .all_tables()
                .find(|(_, t)| matches!(t.location, crate::table::TableLocation::Nvm { .. }))
                .expect("an NVM table");
            (l, t.id)
        };
        let tier = Arc::clone(inner.storage.nvm().unwrap());
        let order = inner.storage.order().clone();
        let bloom = inner.opts.bloom_bits_per_key;
        // The old table: one key none of the live tables holds, its header naming the live
        // table as its input. Written, then freed without any edit recording it.
        let (key, value) = (make_internal_key(b"zz-old", 1, ValueKind::Value), b"old");
        let len = index_len(1, 1, bloom) + inline_block_len(key.len(), value.len()) as u64;
        let old = tier
            .alloc_table_object(inner.new_file_number(), NvmObjectKind::TableIndex, len)
            .unwrap();
        write_resumable_output(
            &tier,
            old,
            level,
            input,
            &[(key, value.to_vec())],
            bloom,
            &order,
        );
        tier.free(&old);
        // A new object of the same size gets its extent and is recorded; the power cut
        // comes before its header is written.
        let new = tier
            .alloc_table_object(inner.new_file_number(), NvmObjectKind::TableIndex, len)
            .unwrap();
        assert_eq!(
            new.extent(),
            old.extent(),
            "the freed extent was not reused"
        );
        inner.record(&[new]).unwrap();
        db.close().unwrap();

        let db = Db::open("/db", opts).unwrap();
        assert_eq!(
            db.get(b"zz-old").unwrap(),
            None,
            "the old table's key came back"
        );
        for (k, v) in &model {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()), "{k:?}");
        }
        db.verify().unwrap();
        db.close().unwrap();
    }

    /// Two recorded, complete outputs of one input set whose key ranges overlap were not
    /// written by one run of that compaction (seen once in a lifecycle run). Recovery keeps
    /// neither and runs the compaction again from its inputs: the open succeeds, the forged
    /// outputs' old values do not come back, and every key keeps its value.
    #[test]
    fn overlapping_outputs_of_one_input_set_are_not_resumed() {
        use crate::compaction::nvm_sink::NvmRecorder;
        use crate::storage::nvm::NvmObjectKind;
        use mezz_format::ValueKind;
        use mezz_format::ikey::make_internal_key;
        use mezz_nvtable::ptable::{index_len, inline_block_len};

        let (db, opts, model) = tlsm_db_in_sim_nvm();
        let inner = &db.inner;
        let (level, input, lo, hi) = {
            let v = Arc::clone(&inner.jobs.state.lock().version);
            let (l, t) = v
                .all_tables()
                .find(|(_, t)| matches!(t.location, crate::table::TableLocation::Nvm { .. }))
                .expect("an NVM table");
            (
                l,
                t.id,
                t.smallest_user_key().to_vec(),
                t.largest_user_key().to_vec(),
            )
        };
        assert!(lo < hi, "the input table holds one key");
        let tier = Arc::clone(inner.storage.nvm().unwrap());
        let order = inner.storage.order().clone();
        let bloom = inner.opts.bloom_bits_per_key;
        // Two complete outputs naming the live table as their input: [lo, hi] and
        // [lo, hi] again, with old values (sequence 1).
        for tag in ["first", "second"] {
            let entries: Vec<(Vec<u8>, Vec<u8>)> = [&lo, &hi]
                .iter()
                .map(|k| {
                    (
                        make_internal_key(k, 1, ValueKind::Value),
                        format!("old-{tag}").into_bytes(),
                    )
                })
                .collect();
            let len = index_len(2, 1, bloom)
                + entries
                    .iter()
                    .map(|(k, v)| inline_block_len(k.len(), v.len()) as u64)
                    .sum::<u64>();
            let obj = tier
                .alloc_table_object(inner.new_file_number(), NvmObjectKind::TableIndex, len)
                .unwrap();
            inner.record(&[obj]).unwrap();
            write_resumable_output(&tier, obj, level, input, &entries, bloom, &order);
        }
        db.close().unwrap();

        let db = Db::open("/db", opts).unwrap();
        for (k, v) in &model {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()), "{k:?}");
        }
        db.verify().unwrap();
        db.close().unwrap();
    }

    /// Regression: after a background error nothing more is appended to the manifest. A
    /// failed manifest append can leave a partial record at the end; a later edit landing
    /// behind it would turn that torn tail into mid-file corruption and fail the next open
    /// (found by the fault-injection crash campaign, where a compaction finished after a
    /// flush's manifest write had failed).
    #[test]
    fn no_manifest_edit_after_a_background_error() {
        let db = mem_db();
        db.put(b"a", b"1").unwrap();
        db.flush().unwrap();
        let before = db.inner.versions.manifest.lock().size();
        db.inner.set_bg_error("manifest write failed: injected");
        let r = db
            .inner
            .log_and_apply(crate::manifest::VersionEdit::default(), None, &[]);
        assert!(matches!(r, Err(Error::Background(_))), "{r:?}");
        assert_eq!(db.inner.versions.manifest.lock().size(), before);
        assert!(matches!(db.put(b"b", b"2"), Err(Error::Background(_))));
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    }

    /// Writes `k = v3`, flushes and compacts everything: `k = v2` (still in the memtable
    /// before this) is then gone from every table, shadowed by `v3`.
    fn overwrite_flush_and_compact(db: &Db) {
        db.put(b"k", b"v3").unwrap();
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let v = &db.inner.versions.super_version.load().version;
        assert_eq!(v.num_files(0), 0, "everything left L0");
    }

    /// A read loads its super version before its sequence number, so a flush and a
    /// compaction that land between the two loads (here forced through the hook) cannot
    /// hide the version the read must see: with the opposite order the read would run at
    /// a sequence below `v3` against tables that no longer hold `v2` (dropped as shadowed
    /// by `v3`) and fall through to `v1`, or to nothing.
    #[test]
    fn a_compaction_between_the_view_loads_hides_nothing_from_get() {
        let db = mem_db();
        db.put(b"k", b"v1").unwrap();
        db.compact_range(None, None).unwrap();
        db.put(b"k", b"v2").unwrap();
        let ro = ReadOptions::default();
        let (sv, seq) = db
            .inner
            .read_view_with(&ro, || overwrite_flush_and_compact(&db));
        let got = db.inner.get_in(&sv, seq, &ro, b"k").unwrap();
        assert_eq!(got.as_deref(), Some(&b"v3"[..]));
        drop(sv);
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v3"[..]));
    }

    /// The same interleaving for an iterator.
    #[test]
    fn a_compaction_between_the_view_loads_hides_nothing_from_iterators() {
        let db = mem_db();
        db.put(b"k", b"v1").unwrap();
        db.compact_range(None, None).unwrap();
        db.put(b"k", b"v2").unwrap();
        let ro = ReadOptions::default();
        let (sv, seq) = db
            .inner
            .read_view_with(&ro, || overwrite_flush_and_compact(&db));
        let mut it = db.inner.iter_in(Guard::into_inner(sv), seq, &ro).unwrap();
        it.seek_to_first();
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&b"k"[..], &b"v3"[..]));
        it.next();
        assert!(!it.valid());
        it.status().unwrap();
    }

    /// A manifest naming a table in an SSD directory the options do not configure is refused
    /// at open with a clear error, not at the first read of that table.
    #[test]
    fn a_table_in_an_unconfigured_directory_is_refused_at_open() {
        let (fs, opts) = mem_fs_options();
        let dir = Path::new("/db");
        let db = Db::open(dir, opts.clone()).unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
        drop(db);
        let r = crate::manifest::recover_manifest(
            fs.as_ref(),
            dir,
            opts.num_levels,
            crate::options::RecoveryMode::AbsoluteConsistency,
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        let mut t = TableMeta::clone(&r.version.tables(0)[0]);
        t.id = r.next_file_number + 10;
        t.location = TableLocation::Sst { path_id: 3 };
        let v = r
            .version
            .apply(&crate::manifest::VersionEdit {
                new_tables: vec![(3, t)],
                ..crate::manifest::VersionEdit::default()
            })
            .unwrap();
        let n = r.next_file_number + 20;
        crate::manifest::write_new_manifest(
            fs.as_ref(),
            dir,
            n,
            &v,
            r.log_number,
            n + 2,
            r.last_sequence,
        )
        .unwrap();
        crate::manifest::set_current(fs.as_ref(), dir, n, n + 1).unwrap();
        match Db::open(dir, opts) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("SSD directory 3"), "{m}"),
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn a_large_manifest_is_replaced_by_a_snapshot() {
        let (fs, opts) = mem_fs_options();
        let dir = Path::new("/db");
        let db = Db::open(dir, opts.clone()).unwrap();
        let first = manifests(fs.as_ref(), dir);
        assert_eq!(first.len(), 1);
        db.inner
            .versions
            .max_manifest_bytes
            .store(1, Ordering::Relaxed);
        for round in 0..3u8 {
            db.put(&[b'k', round], &[round]).unwrap();
            db.flush().unwrap();
        }
        let now = manifests(fs.as_ref(), dir);
        assert_eq!(now.len(), 1, "the old manifest is deleted");
        assert!(now[0] > first[0], "a new manifest took over");
        drop(db);
        let db = Db::open(dir, opts).unwrap();
        for round in 0..3u8 {
            assert_eq!(db.get(&[b'k', round]).unwrap(), Some(vec![round]));
        }
        assert_eq!(db.stats().levels[0].files, 3);
    }
}
