//! The write path: group commit, back-pressure and memtable switches.
//!
//! A writer that finds the `write` lock free and nobody queued commits its batch alone at
//! once. Otherwise it queues its batch, then tries to take the `write` lock. Whoever holds
//! it is the leader: it takes a group from the front of the queue (at most
//! `MAX_GROUP_BYTES`, always at least one batch), waits for room (stalls), assigns
//! sequence numbers and appends one WAL record for the whole group (synced if any member
//! asked for `sync`). Into a DRAM memtable it then releases the lock, waking the writer now
//! at the front of the queue, which tries to lead next, and inserts the group while the
//! next group is logged (RocksDB's pipelined write); once every group logged before it is
//! published, it publishes the group's last sequence and hands every member its result.
//! Into an NVM memtable (no WAL) the group is inserted and published under the lock.
//!
//! Into a DRAM memtable (a concurrent skip list) the group is inserted in parallel, as
//! RocksDB's `allow_concurrent_memtable_write` does: the leader hands each member whose
//! writer is still awake (spinning or yielding, not parked) its own batch, numbered in
//! group order, and inserts the rest itself; it publishes the group's last sequence only
//! when every part is in. Queued writers spin, then yield, for up to `WAIT_YIELD` before
//! they park, since a group commits faster than a futex wake-up on a busy core.
//!
//! Why the insert runs outside the lock: with two writers in a closed loop, each one's
//! next batch arrived while the other led its group, after that leader had taken its group
//! from the queue, so groups were of one batch and ran one after the other, the second
//! writer spinning (a third of the writers' time in a 2-thread fill).
//!
//! A transaction's commit (`write_validated`) takes the `write` lock without queueing,
//! waits until every logged group is published, validates its marked keys against the
//! current super version and logs its batch as a group of its own before releasing the
//! lock, so that no write lands between its check and its commit.
//!
//! Invariants: sequence numbers are assigned and logged in queue order, only under the
//! `write` lock (`WriteState::last_assigned`), and published in the same order
//! (`last_seq`), each group after its memtable insert; groups are logged and not yet
//! published exactly while `last_seq < last_assigned`, and the active memtable is not
//! switched, replaced or flushed while any is (`wait_for_inserts`). The active memtable and its
//! WAL change only under the `write` lock. A member's insert job runs before its leader
//! publishes the group (the leader waits for every job, or takes it back). A memtable entry
//! above the published sequence is invisible to readers. The `state` lock is never held
//! while writing the WAL or the memtable, nor while waiting for inserts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::batch::WriteBatch;
use crate::compaction::{StallCause, WritePressure};
use crate::design::{Host, NextActive, WalPlace};
use crate::error::{Error, Result};
use crate::manifest::VersionEdit;
use crate::memtable::MemTable;
use crate::state::SuperVersion;
use crate::stats::StatsCollector;
use crate::wal::WalWriter;

use super::{DbInner, Pending, Slot, SlotState, Spare, SpareKind, State, WriteState};

use crate::options::MAX_GROUP_BYTES;
/// Write delays are slept in chunks of at least this many nanoseconds.
const MIN_SLEEP_NANOS: u64 = 1_000_000;
/// The delayed write rate never falls below this fraction of the rate it starts from.
const MIN_RATE_FRACTION: f64 = 0.05;
/// Bytes written without back-pressure over which the free write rate is measured.
const RATE_WINDOW_BYTES: u64 = 4 << 20;

/// The rate writes run at while nothing holds them back (bytes/s), measured over windows of
/// [`RATE_WINDOW_BYTES`] that no slowdown or stop interrupted, smoothed over the last few.
/// A slowdown starts from it (or from `delayed_write_rate` if that is higher): writers are
/// braked from the pace they had, toward the stop, instead of dropping at once to a fixed
/// rate far below what the background work drains (which left a core idle while the one
/// compaction caught up). Owned by the write-group leader (`WriteState`).
#[derive(Debug, Default)]
pub(crate) struct FreeRate {
    since: Option<Instant>,
    bytes: u64,
    rate: f64,
}

impl FreeRate {
    /// Counts a group of `bytes` written without back-pressure.
    fn note(&mut self, bytes: usize) {
        let Some(since) = self.since else {
            self.since = Some(Instant::now());
            self.bytes = 0;
            return;
        };
        self.bytes += bytes as u64;
        if self.bytes >= RATE_WINDOW_BYTES {
            let secs = since.elapsed().as_secs_f64().max(1e-6);
            let r = self.bytes as f64 / secs;
            self.rate = if self.rate == 0.0 {
                r
            } else {
                0.5 * (self.rate + r)
            };
            self.since = Some(Instant::now());
            self.bytes = 0;
        }
    }

    /// A slowdown or stop interrupts the window being measured.
    fn interrupt(&mut self) {
        self.since = None;
    }

    /// The measured rate (0 before the first window).
    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }
}

/// A queued writer spins this many times on its slot before yielding its core.
const WAIT_SPINS: u32 = 200;
/// A queued writer yields its core for at most this long before it parks.
const WAIT_YIELD: Duration = Duration::from_micros(100);
/// Stalled writers re-check their condition at least this often.
const STALL_POLL: Duration = Duration::from_millis(50);

/// A follower's share of its group's memtable insert: its own batch, numbered by the
/// leader after the group's WAL record was written.
#[derive(Debug)]
pub(crate) struct InsertJob {
    mem: Arc<MemTable>,
    batch: WriteBatch,
    group: Arc<GroupInsert>,
}

/// What the members of a group inserting in parallel report to the leader.
#[derive(Debug, Default)]
struct GroupInsert {
    /// Jobs handed out and not yet done.
    pending: AtomicUsize,
    user_bytes: AtomicU64,
    error: Mutex<Option<Error>>,
}

impl InsertJob {
    fn run(self) {
        match self.mem.insert_batch(&self.batch) {
            Ok(b) => {
                self.group.user_bytes.fetch_add(b, Ordering::Relaxed);
            }
            Err(e) => {
                self.group.error.lock().get_or_insert(e);
            }
        }
        self.group.pending.fetch_sub(1, Ordering::Release);
    }
}

/// A group whose sequence numbers are assigned and whose WAL record is written
/// ([`DbInner::log_group`]), still to be inserted into its DRAM memtable and published
/// ([`DbInner::apply_logged`]).
struct Logged {
    mem: Arc<MemTable>,
    first: u64,
    count: u64,
    /// What the group waited on under the `write` lock.
    trace: crate::stats::WriteTrace,
    /// When the group took the `write` lock.
    start: Instant,
    /// When its insert started (its WAL append's end).
    insert_start: Instant,
}

/// The members of a group of several writers, for a parallel memtable insert: their slots
/// and their own batches, in group order, and which of them is the leader's.
struct GroupParts<'a> {
    slots: &'a [Arc<Slot>],
    batches: Vec<WriteBatch>,
    leader: usize,
}

/// Why a queued writer stopped waiting.
enum Woken {
    /// Its batch is committed (or failed).
    Done(Result<()>),
    /// It is at the front of the queue: it should try to lead.
    Lead,
    /// The leader handed it its batch to insert into the memtable.
    Insert(InsertJob),
}

impl Slot {
    fn finish(&self, r: Result<()>) {
        let mut s = self.m.lock();
        s.result = Some(r);
        self.post(&s);
    }

    fn wake(&self) {
        let mut s = self.m.lock();
        s.wake = true;
        self.post(&s);
    }

    /// Hands the waiter `job` unless it is parked (waking it would cost more than the
    /// insert): then the job comes back.
    fn give(&self, job: InsertJob) -> std::result::Result<(), InsertJob> {
        let mut s = self.m.lock();
        if s.parked {
            return Err(job);
        }
        s.job = Some(job);
        self.post(&s);
        Ok(())
    }

    /// Takes back a job given to this waiter that it has not started (a member descheduled
    /// on a busy core would otherwise hold up its whole group).
    fn take_back(&self) -> Option<InsertJob> {
        let mut s = self.m.lock();
        let job = s.job.take();
        self.sync_ready(&s);
        job
    }

    /// Publishes a result, wake-up or job in `s` (held): a spinning waiter sees `ready`, a
    /// parked one is notified.
    fn post(&self, s: &SlotState) {
        self.sync_ready(s);
        if s.parked {
            self.cv.notify_one();
        }
    }

    /// Sets `ready` from `s` (held): whether a result, a wake-up or a job is waiting.
    fn sync_ready(&self, s: &SlotState) {
        self.ready.store(
            s.result.is_some() || s.wake || s.job.is_some(),
            Ordering::Release,
        );
    }

    /// Waits until this writer has a result, a job, or is told to try to lead. A group
    /// commits in microseconds, far less than a futex sleep and wake-up cost on a busy
    /// core, so the waiter first spins briefly, then yields its core for up to
    /// `WAIT_YIELD` (as RocksDB's writers do), and only then parks.
    fn wait(&self) -> Woken {
        spin_until(WAIT_YIELD, || self.ready.load(Ordering::Acquire));
        let mut s = self.m.lock();
        while s.result.is_none() && !s.wake && s.job.is_none() {
            s.parked = true;
            self.cv.wait(&mut s);
        }
        s.parked = false;
        let woken = if let Some(job) = s.job.take() {
            Woken::Insert(job)
        } else if let Some(r) = s.result.take() {
            Woken::Done(r)
        } else {
            s.wake = false;
            Woken::Lead
        };
        self.sync_ready(&s);
        woken
    }

    fn take_result(&self) -> Option<Result<()>> {
        let mut s = self.m.lock();
        let r = s.result.take();
        self.sync_ready(&s);
        r
    }
}

/// Spins, then yields the core, until `done()` or `limit` has passed; returns whether
/// `done()` held.
fn spin_until(limit: Duration, done: impl Fn() -> bool) -> bool {
    for _ in 0..WAIT_SPINS {
        if done() {
            return true;
        }
        std::hint::spin_loop();
    }
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Microseconds since `t`.
fn micros(t: Instant) -> u64 {
    micros_between(t, Instant::now())
}

/// Microseconds from `t` to `end` (0 if `end` is earlier).
fn micros_between(t: Instant, end: Instant) -> u64 {
    u64::try_from(end.saturating_duration_since(t).as_micros()).unwrap_or(u64::MAX)
}

/// The error of a call that must wait for background work when, with
/// `manual_background`, no job is due (it would wait forever).
fn no_job(what: &str) -> Error {
    Error::Background(format!(
        "{what} waits for background work, but no flush or compaction is due"
    ))
}

impl DbInner {
    /// Queues `batch` and returns once it is applied (or failed). `start` is when the
    /// caller's write began: a batch that goes alone (nobody else writing) times its
    /// group from there, and the time it was applied is returned (`None` for a batch
    /// applied in a group or an empty one), so that a write costs as few clock reads as
    /// its latency and trace need.
    /// REQUIRES: the caller holds a pass of the gate.
    pub(super) fn write(
        &self,
        sync: bool,
        batch: WriteBatch,
        start: Instant,
    ) -> Result<Option<Instant>> {
        if batch.is_empty() {
            return Ok(None);
        }
        if batch.has_families() {
            self.check_families(&batch)?;
        }
        // Fast path: nobody is writing or waiting, so this batch is a group of one and
        // needs no queue slot.
        if let Some(mut ws) = self.writes.write.try_lock() {
            // `queued`, not the queue's lock: two writers taking turns on this path would
            // otherwise pass that lock's line between their cores twice per write.
            if self.writes.queued.load(Ordering::Acquire) == 0 {
                let mut batch = batch;
                let r = self
                    .make_room_for_write(&mut ws, batch.approximate_size(), batch.len())
                    .and_then(|mem| self.log_group(&mut ws, &mem, &mut batch, sync, start));
                return self.release_and_apply(ws, r, start, &batch, None).map(Some);
            }
            // Others are queued: go behind them, and make sure one of them is awake to lead.
            drop(ws);
            self.wake_next_writer();
        }
        let slot = Arc::new(Slot::default());
        {
            let mut q = self.writes.queue.lock();
            q.push_back(Pending {
                batch,
                sync,
                slot: Arc::clone(&slot),
            });
            self.writes.queued.store(q.len(), Ordering::Release);
        }
        // Pairs with the fence in `wake_next_writer`: either the `write` lock's holder
        // sees this writer queued when it releases the lock, or this writer's `try_lock`
        // below sees the lock free.
        std::sync::atomic::fence(Ordering::SeqCst);
        loop {
            if let Some(ws) = self.writes.write.try_lock() {
                if let Some(r) = slot.take_result() {
                    drop(ws);
                    self.wake_next_writer();
                    return r.map(|()| None);
                }
                // Releases the lock (and wakes the next writer) once the group is logged.
                self.lead_group(ws, &slot);
                if let Some(r) = slot.take_result() {
                    return r.map(|()| None);
                }
                continue;
            }
            match slot.wait() {
                Woken::Done(r) => return r.map(|()| None),
                Woken::Lead => {}
                Woken::Insert(job) => job.run(),
            }
        }
    }

    /// Commits `batch` after `validate` accepted it, the two atomic with respect to every
    /// other write: the caller takes the `write` lock (every group is logged under it),
    /// waits until every group logged before is inserted and published, runs `validate`
    /// on the current super version (which then holds every acknowledged write, and
    /// nothing can be added to it until the lock is released), and logs the batch before
    /// releasing the lock. An error from `validate` (a transaction's `Busy`) writes
    /// nothing. The batch is a group of its own: it does not join queued writers' groups,
    /// and the pipelining of inserts pauses while it validates. An empty batch is only
    /// validated. Returns the sequence number of the batch's last update (`None` for an
    /// empty batch): a read at it or later sees the whole batch.
    /// REQUIRES: the caller holds a pass of the gate.
    pub(super) fn write_validated(
        &self,
        sync: bool,
        mut batch: WriteBatch,
        validate: impl FnOnce(&SuperVersion) -> Result<()>,
    ) -> Result<Option<u64>> {
        if batch.has_families() {
            self.check_families(&batch)?;
        }
        let mut ws = self.writes.write.lock();
        let t = Instant::now();
        let logged = (|| {
            let mem = if batch.is_empty() {
                None
            } else {
                Some(self.make_room_for_write(&mut ws, batch.approximate_size(), batch.len())?)
            };
            self.wait_for_inserts(&ws);
            let sv = self.versions.super_version.load();
            validate(&sv)?;
            match mem {
                Some(mem) => self.log_group(&mut ws, &mem, &mut batch, sync, t),
                None => Ok(None),
            }
        })();
        self.release_and_apply(ws, logged, t, &batch, None)?;
        Ok((!batch.is_empty()).then(|| batch.sequence() + batch.len() as u64 - 1))
    }

    /// Tells the writer at the front of the queue to try to lead. Call after releasing
    /// the `write` lock.
    pub(super) fn wake_next_writer(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.writes.queued.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(p) = self.writes.queue.lock().front() {
            p.slot.wake();
        }
    }

    fn take_group(&self) -> Vec<Pending> {
        let mut q = self.writes.queue.lock();
        let mut group = Vec::new();
        let mut bytes = 0usize;
        while let Some(p) = q.front() {
            let size = p.batch.approximate_size();
            if !group.is_empty() && bytes + size > MAX_GROUP_BYTES {
                break;
            }
            bytes += size;
            if let Some(p) = q.pop_front() {
                group.push(p);
            }
        }
        self.writes.queued.store(q.len(), Ordering::Release);
        group
    }

    /// Commits one group: logs it under the `write` lock (`ws`, released as soon as the
    /// group is logged, when the next writer is woken), then inserts and publishes it.
    /// `own` is the leader's slot.
    fn lead_group(&self, mut ws: MutexGuard<'_, WriteState>, own: &Arc<Slot>) {
        let group = self.take_group();
        if group.is_empty() {
            drop(ws);
            self.wake_next_writer();
            return;
        }
        let bytes: usize = group.iter().map(|p| p.batch.approximate_size()).sum();
        let sync = group.iter().any(|p| p.sync);
        let (slots, mut batches): (Vec<Arc<Slot>>, Vec<WriteBatch>) =
            group.into_iter().map(|p| (p.slot, p.batch)).unzip();
        // One WAL record for the group; the members' own batches stay apart when several
        // can go into the memtable in parallel.
        let (mut batch, parts) = if batches.len() == 1 {
            (batches.pop().unwrap_or_default(), None)
        } else {
            let mut c = batches[0].clone();
            for b in &batches[1..] {
                c.append(b);
            }
            let leader = slots.iter().position(|s| Arc::ptr_eq(s, own)).unwrap_or(0);
            let parts = GroupParts {
                slots: &slots,
                batches,
                leader,
            };
            (c, Some(parts))
        };
        let t = Instant::now();
        let logged = self
            .make_room_for_write(&mut ws, bytes, batch.len())
            .and_then(|mem| self.log_group(&mut ws, &mem, &mut batch, sync, t));
        let result = self.release_and_apply(ws, logged, t, &batch, parts);
        match result {
            Ok(_) => {
                for s in &slots {
                    s.finish(Ok(()));
                }
            }
            Err(e) => {
                for s in &slots {
                    s.finish(Err(e.duplicate()));
                }
            }
        }
    }

    /// Records the trace of the group that started at `start` (kept when it was slow);
    /// returns when it ended.
    fn finish_trace(&self, ws: &mut WriteState, start: Instant) -> Instant {
        // Taken, so the next group starts from an empty trace.
        let t = std::mem::take(&mut ws.trace);
        let end = Instant::now();
        self.record_trace(t, start, end);
        end
    }

    /// Records `t`, the trace of a group from `start` to `end`, if the group was slow.
    fn record_trace(&self, mut t: crate::stats::WriteTrace, start: Instant, end: Instant) {
        t.total = micros_between(start, end);
        if t.total >= crate::stats::SLOW_MICROS {
            self.stats.slow_writes.lock().record(t);
        }
    }

    /// Logs one group, `batch`, under the `write` lock (`ws`): assigns its sequence
    /// numbers and appends its WAL record. Into an NVM memtable (no WAL) the group is also
    /// inserted and published here, and `None` returned. Into a DRAM memtable the insert
    /// and the publication are left to [`DbInner::apply_logged`], after the lock is
    /// released: the next group can be logged while this one is inserted (RocksDB's
    /// pipelined write). Until then `last_seq < ws.last_assigned`. `start` is when the
    /// group took the lock. REQUIRES: the `write` lock.
    fn log_group(
        &self,
        ws: &mut WriteState,
        mem: &Arc<MemTable>,
        batch: &mut WriteBatch,
        sync: bool,
        start: Instant,
    ) -> Result<Option<Logged>> {
        let first = ws.last_assigned + 1;
        let count = batch.len() as u64;
        batch.set_sequence(first);
        let stats = &self.stats;
        if mem.durable_in_place() {
            // Published here, in order: the groups still being inserted (into the DRAM
            // memtable before this one) go first.
            self.wait_for_inserts(ws);
            // NoveLSM's mutable NVM memtable: no WAL, every group persisted in place. It is
            // durable in the history once the older WALs' tails are: a power cut that tore
            // one of them must not keep these writes (a hole in the history). A list with
            // the deferred mark lets recovery see to that (it drops the list when an older
            // WAL lost its tail), so its groups do not wait here for the sync of up to a
            // memtable's worth of log: the flush thread syncs those WALs right after the
            // switch (`sync_wals_under_nvm`). A `sync` group must be durable when
            // acknowledged, so it syncs them itself unless that is done.
            if let Some(deferred) = mem.awaits_older_wals() {
                if sync || !deferred {
                    let t = Instant::now();
                    self.sync_wals_under(mem)?;
                    ws.trace.older_wal_sync += micros(t);
                } else {
                    self.check_wal_intact()?;
                }
            }
            let t = Instant::now();
            let inserted = mem.insert_batch(batch);
            ws.trace.insert += micros(t);
            let user_bytes = match inserted {
                Ok(b) => b,
                Err(e) => {
                    self.set_bg_error(&format!("NVM memtable insert failed: {e}"));
                    return Err(e);
                }
            };
            stats.record_group(user_bytes);
            ws.last_assigned = first + count - 1;
            self.versions
                .last_seq
                .store(first + count - 1, Ordering::Release);
            return Ok(None);
        }
        // Updates of other column families: their memtables must have room before the group
        // is logged (a stall waits here), and they are inserted before it is published.
        let mut mem = Arc::clone(mem);
        let families = if self.has_families.load(Ordering::Acquire) && batch.has_families() {
            let fams = self.families_of(batch);
            if fams.iter().any(|f| f.db.family_memtable_full(batch)) {
                // A family's memtable is switched only with this engine's (see
                // `switch_memtable`): forced here, with the back-pressure of a full one.
                ws.family_bytes = u64::MAX;
                mem = self.make_room_for_write(ws, batch.approximate_size(), batch.len())?;
            }
            let mut with_mems = Vec::with_capacity(fams.len());
            for f in fams {
                let m = f.db.make_family_room(batch)?;
                with_mems.push((f, m));
            }
            Some(with_mems)
        } else {
            None
        };
        let mut wal_end = None;
        if let Some(wal) = ws.wal.as_mut() {
            let data = batch.data();
            if sync {
                if !self.writes.sync_wals_ahead.swap(true, Ordering::AcqRel) {
                    // From now on WALs are made durable ahead, this one from here.
                    wal.set_early_writeback(true);
                }
                // A synced write may not be acknowledged while an older WAL's tail is not
                // durable (recovery stops at the first torn tail).
                let t = Instant::now();
                self.sync_closed_wals(u64::MAX)?;
                ws.trace.older_wal_sync += micros(t);
            }
            let appended = wal.append(data, sync);
            // One clock read: the append is timed from the group's start, less the phases
            // traced before it (the room check's remaining work, a few loads, counts as
            // the append's).
            let now = Instant::now();
            ws.trace.wal += micros_between(start, now).saturating_sub(ws.trace.before_wal());
            wal_end = Some(now);
            if let Err(e) = appended {
                self.writes.wal_failed.store(true, Ordering::Release);
                self.set_bg_error(&format!("WAL append failed: {e}"));
                return Err(e);
            }
            // A WAL in NVM is not an SSD write (the pool's persisted bytes count it).
            if wal.nvm_object().is_none() {
                stats
                    .writes
                    .add(crate::stats::WRITE_WAL_BYTES, data.len() as u64);
            }
            if sync {
                StatsCollector::add(&stats.wal_syncs, 1);
            }
        }
        if let Some(fams) = families {
            for (f, m) in &fams {
                if let Err(e) = f.db.insert_family_batch(m, batch, f.id) {
                    // Logged but not inserted: no write may be acknowledged after it.
                    self.set_bg_error(&format!(
                        "insert into column family {:?} failed: {e}",
                        f.record.name
                    ));
                    return Err(e);
                }
            }
            ws.family_bytes = ws
                .family_bytes
                .saturating_add(batch.approximate_size() as u64);
        }
        ws.last_assigned = first + count - 1;
        Ok(Some(Logged {
            mem,
            first,
            count,
            trace: std::mem::take(&mut ws.trace),
            start,
            // One clock read between the phases: the insert is timed from the WAL
            // append's end.
            insert_start: wal_end.unwrap_or_else(Instant::now),
        }))
    }

    /// Releases the `write` lock (`ws`) and wakes the next writer, then applies a group
    /// `log_group` logged (`logged`; its trace is recorded as the lock is released when
    /// the group was applied there, or failed). `batch` is the group's batch, `parts` its
    /// members' own batches. Returns when the group was applied (published).
    fn release_and_apply(
        &self,
        mut ws: MutexGuard<'_, WriteState>,
        logged: Result<Option<Logged>>,
        start: Instant,
        batch: &WriteBatch,
        parts: Option<GroupParts<'_>>,
    ) -> Result<Instant> {
        let logged = match logged {
            Ok(Some(l)) => l,
            done => {
                let end = self.finish_trace(&mut ws, start);
                drop(ws);
                self.wake_next_writer();
                return done.map(|_| end);
            }
        };
        drop(ws);
        self.wake_next_writer();
        self.apply_logged(logged, batch, parts)
    }

    /// Inserts a logged group into its DRAM memtable (each member whose writer is awake
    /// inserting its own part when `parts` is given), then publishes its sequence numbers
    /// once every group logged before it is published: readers never see a group before
    /// an older one. Runs without the `write` lock. Returns when it was published.
    fn apply_logged(
        &self,
        g: Logged,
        batch: &WriteBatch,
        parts: Option<GroupParts<'_>>,
    ) -> Result<Instant> {
        let inserted = match parts {
            Some(parts) => Self::insert_parts(&g.mem, g.first, parts),
            None => g.mem.insert_batch(batch),
        };
        // The group before this one is inserted by another thread, which needs no lock.
        let previous = g.first - 1;
        spin_until(Duration::MAX, || {
            self.versions.last_seq.load(Ordering::Acquire) == previous
        });
        // The insert phase ends at the publication (it includes waiting for the groups
        // before): one clock read for the trace and the write's latency.
        let end = Instant::now();
        // Published even after a failed insert (the database is then failed: no write is
        // accepted), so that the groups after it are not held forever.
        self.versions
            .last_seq
            .store(g.first + g.count - 1, Ordering::Release);
        let mut trace = g.trace;
        trace.insert += micros_between(g.insert_start, end);
        self.record_trace(trace, g.start, end);
        match inserted {
            Ok(user_bytes) => {
                self.stats.record_group(user_bytes);
                Ok(end)
            }
            Err(e) => {
                self.set_bg_error(&format!("memtable insert failed: {e}"));
                Err(e)
            }
        }
    }

    /// Waits until every group logged so far is inserted and published. Call with the
    /// `write` lock held (no group is logged meanwhile) before the active memtable
    /// changes, or to see every logged write.
    pub(super) fn wait_for_inserts(&self, ws: &WriteState) {
        spin_until(Duration::MAX, || !self.inserts_pending(ws));
    }

    /// Whether a group logged (under the `write` lock, `ws`) is not yet inserted and
    /// published. Groups are published in the order they were logged, the last one
    /// setting `last_seq` to `last_assigned` (a group that fails to log assigns nothing).
    fn inserts_pending(&self, ws: &WriteState) -> bool {
        self.versions.last_seq.load(Ordering::Acquire) != ws.last_assigned
    }

    /// Inserts the members' batches of a group into the DRAM memtable `mem`, numbered from
    /// `first` in group order (the order of the WAL record): each awake member's writer
    /// inserts its own, the leader its own and those of parked writers; returns once all
    /// are in, with the user bytes added.
    fn insert_parts(mem: &Arc<MemTable>, first: u64, parts: GroupParts<'_>) -> Result<u64> {
        let group = Arc::new(GroupInsert::default());
        let mut seq = first;
        let mut here = Vec::new();
        let mut given = Vec::new();
        for (i, (slot, mut b)) in parts.slots.iter().zip(parts.batches).enumerate() {
            b.set_sequence(seq);
            seq += b.len() as u64;
            if i == parts.leader {
                here.push(b);
                continue;
            }
            group.pending.fetch_add(1, Ordering::Relaxed);
            let job = InsertJob {
                mem: Arc::clone(mem),
                batch: b,
                group: Arc::clone(&group),
            };
            match slot.give(job) {
                Ok(()) => given.push(slot),
                Err(job) => {
                    group.pending.fetch_sub(1, Ordering::Relaxed);
                    here.push(job.batch);
                }
            }
        }
        let mut user_bytes = 0;
        let mut error = None;
        for b in &here {
            match mem.insert_batch(b) {
                Ok(n) => user_bytes += n,
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        // What a member has not picked up yet (its writer not running: two cores shared
        // with background work), the leader inserts itself, rather than wait for it.
        for slot in given {
            if let Some(job) = slot.take_back() {
                job.run();
            }
        }
        // The members' inserts are short and their writers awake: wait without parking.
        spin_until(Duration::MAX, || group.pending.load(Ordering::Acquire) == 0);
        if let Some(e) = error.or_else(|| group.error.lock().take()) {
            return Err(e);
        }
        Ok(user_bytes + group.user_bytes.load(Ordering::Relaxed))
    }

    /// In a column family's engine: waits until its active memtable has room for the
    /// updates of `batch` (switching it, or stalling for its background work, as a write
    /// would). Called by the database's write path before the batch is logged.
    /// Returns the active memtable, which stays active until the database's `write` lock
    /// (held by the caller) is released: a family's memtable is switched only under it.
    pub(super) fn make_family_room(&self, batch: &WriteBatch) -> Result<Arc<MemTable>> {
        let mut ws = self.writes.write.lock();
        self.make_room_for_write(&mut ws, batch.approximate_size(), batch.len())
    }

    /// In a column family's engine: inserts the updates of `batch` that belong to family
    /// `family` into `mem`, the active memtable [`DbInner::make_family_room`] returned
    /// under the same hold of the database's `write` lock, and publishes them.
    pub(super) fn insert_family_batch(
        &self,
        mem: &MemTable,
        batch: &WriteBatch,
        family: u32,
    ) -> Result<()> {
        let mut ws = self.writes.write.lock();
        self.insert_family_into(&mut ws, mem, batch, family, 0)
    }

    fn insert_family_into(
        &self,
        ws: &mut WriteState,
        mem: &MemTable,
        batch: &WriteBatch,
        family: u32,
        after: u64,
    ) -> Result<()> {
        let last = batch.sequence() + (batch.len() as u64).saturating_sub(1);
        let user_bytes = mem.insert_family_after(batch, family, after)?;
        self.stats.record_group(user_bytes);
        ws.last_assigned = ws.last_assigned.max(last);
        self.versions.last_seq.fetch_max(last, Ordering::AcqRel);
        Ok(())
    }

    /// In a column family's engine, at recovery: inserts the updates of `batch` (a WAL
    /// record) that belong to family `family` and are numbered above `after`, with the
    /// sequence numbers the WAL gave them, and publishes them.
    pub(super) fn apply_family_batch(
        &self,
        batch: &WriteBatch,
        family: u32,
        after: u64,
    ) -> Result<()> {
        let mut ws = self.writes.write.lock();
        let mem = self.make_room_for_write(&mut ws, batch.approximate_size(), batch.len())?;
        self.insert_family_into(&mut ws, &mem, batch, family, after)
    }

    pub(super) fn set_bg_error(&self, msg: &str) {
        let mut st = self.jobs.state.lock();
        if st.bg_error.is_none() {
            st.bg_error = Some(msg.to_string());
        }
        drop(st);
        self.jobs.done_cv.notify_all();
    }

    /// The sticky background error, or `Closed` once the handle is closing (a stalled
    /// writer gives up then, so that `close` does not wait for it).
    fn check_writable(&self, st: &State) -> Result<()> {
        Self::check_background(st)?;
        self.check_open()
    }

    /// The sticky background error, or `Closed` once the background threads stop.
    fn check_background(st: &State) -> Result<()> {
        if let Some(e) = &st.bg_error {
            return Err(Error::Background(e.clone()));
        }
        if st.shutting_down {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// What the design would replace the active memtable with if it were switched now
    /// (`dram_full`: the DRAM memtables are all taken, `max_write_buffer_number`). A
    /// hand-over by choice ([`NextActive::NvmIfAmpleRoom`]) is settled here, against the
    /// pool as it is now: never returned.
    fn next_active_now(&self, st: &State) -> NextActive {
        let dram_full = st.mems.dram_memtables() >= self.opts.max_write_buffer_number;
        match self
            .design
            .memtables()
            .next_active(st.mems.active(), dram_full)
        {
            NextActive::NvmIfAmpleRoom if self.ample_room_for_nvm_memtable() => {
                NextActive::NvmIfRoom
            }
            NextActive::NvmIfAmpleRoom => NextActive::Dram,
            other => other,
        }
    }

    /// Whether a switch of the full active memtable now would make an NVM memtable the
    /// active one (the design asks for one and the pool has room for it).
    fn switches_to_nvm(&self, st: &State) -> bool {
        self.next_active_now(st) == NextActive::NvmIfRoom
            && self
                .storage
                .nvm()
                .is_some_and(|t| t.has_room_for(self.opts.nvm_memtable_len()))
    }

    /// For [`NextActive::NvmIfAmpleRoom`]: whether the pool has room for an NVM memtable
    /// and for the NVM table its flush writes (with the headroom NVM tables leave).
    fn ample_room_for_nvm_memtable(&self) -> bool {
        let len = self.opts.nvm_memtable_len();
        self.storage.nvm().is_some_and(|t| {
            t.has_room_for_tables(
                len.saturating_add(crate::compaction::policy::nvm_table_room(len)),
            )
        })
    }

    /// Waits until the group of `bytes` may be written: hard stops wait for background
    /// work, slowdowns sleep to follow the delayed write rate, and a full memtable is
    /// switched. Returns the active memtable the group goes into (it changes only under the
    /// `write` lock, which the caller keeps). REQUIRES: the `write` lock (`ws`).
    fn make_room_for_write(
        &self,
        ws: &mut WriteState,
        bytes: usize,
        entries: usize,
    ) -> Result<Arc<MemTable>> {
        let o = &self.opts;
        let mut stopped = false;
        // Arena bytes the group takes at most (every node a full tower), plus slack.
        let need = crate::memtable::room_needed(entries, bytes) + 4096;
        loop {
            // The wait is timed only when there is one (no clock read on the fast path).
            let mut st = match self.jobs.state.try_lock() {
                Some(st) => st,
                None => {
                    let t = Instant::now();
                    let st = self.jobs.state.lock();
                    ws.trace.state_lock += micros(t);
                    st
                }
            };
            self.check_writable(&st)?;
            let pressure = self
                .policy
                .write_pressure(&st.version, st.pending_compaction_bytes);
            let mem = st.mems.active();
            // The WAL also holds the other column families' updates: past a memtable's
            // worth of them it is switched (and, through the flush, every family flushed),
            // so that it does not grow without bound while this memtable fills slowly.
            // (Switching only at the families' whole memtables' worth, the sum of their
            // sizes, made writes spread over four families 1.2x slower and batches across
            // them 1.4x slower: larger memtables cost more per insert than the extra
            // flushes, which run beside the writer; `bench/results/2026-11-29-colfam-cost-2`.)
            let families_full =
                ws.family_bytes >= o.write_buffer_size as u64 || ws.family_bytes == u64::MAX;
            let mem_full = mem.is_full(need, o.write_buffer_size)
                || families_full
                || ws.wal.as_ref().is_some_and(|w| !w.has_room(bytes));
            let stop = if let WritePressure::Stop(cause) = pressure {
                Some(cause)
            } else if mem_full
                && st.mems.dram_memtables() >= o.max_write_buffer_number
                && !self.switches_to_nvm(&st)
            {
                // Only DRAM memtables count: a switch without room in the NVM pool stays
                // in DRAM, so NVM memtables waiting for their flush are bounded by the pool.
                // A switch to an NVM memtable adds none (`overflow` makes one just when
                // the DRAM memtables are all taken).
                Some(StallCause::Memtables)
            } else {
                None
            };
            if let Some(cause) = stop {
                ws.free_rate.interrupt();
                if !stopped {
                    stopped = true;
                    StatsCollector::add(&self.stats.stopped_writes, 1);
                    self.info_log.log(format_args!(
                        "write stopped ({cause:?}): waiting for background work"
                    ));
                }
                let t = Instant::now();
                if !self.wait_for_job(&mut st, STALL_POLL) {
                    return Err(no_job("a write"));
                }
                let micros = t.elapsed().as_micros() as u64;
                ws.trace.stop += micros;
                let c = match cause {
                    StallCause::L0 => &self.stats.l0_stop_micros,
                    StallCause::PendingBytes => &self.stats.pending_bytes_stop_micros,
                    StallCause::Memtables => &self.stats.memtable_stop_micros,
                };
                StatsCollector::add(c, micros);
                continue;
            }
            if mem_full && self.inserts_pending(ws) {
                // Groups logged into this memtable are still being inserted: it does not
                // change under them (and whether it is empty is not known yet).
                drop(st);
                self.wait_for_inserts(ws);
                continue;
            }
            if mem_full {
                let empty_dram = mem.is_empty() && !mem.durable_in_place() && !families_full;
                if empty_dram && mem.room() < need {
                    // A group larger than a whole memtable: the empty one gives way to one
                    // sized for it (same WAL), instead of a switch that would leave an
                    // empty memtable to flush.
                    let bigger = Arc::new(MemTable::new(
                        mem.id(),
                        o.memtable_capacity().max(need.saturating_mul(2)),
                        mem.order().clone(),
                    ));
                    if bigger.room() < need {
                        return Err(Error::InvalidArgument(format!(
                            "a write group of {bytes} bytes ({entries} updates) does not fit \
                             one memtable; write smaller batches"
                        )));
                    }
                    st.mems.replace_empty_active(bigger);
                    self.install_super_version(&mut st);
                    continue;
                }
                drop(st);
                if empty_dram {
                    // Only a WAL in NVM can be "full" while its memtable is empty: the
                    // group is larger than a whole NVM log.
                    return Err(Error::InvalidArgument(format!(
                        "a write group of {bytes} bytes does not fit a WAL in NVM; write \
                         smaller batches or raise write_buffer_size"
                    )));
                }
                let t = Instant::now();
                let switched = self.switch_memtable(ws);
                ws.trace.switch += micros(t);
                switched?;
                continue;
            }
            // Gradual slowdown: the allowed rate falls as the debt approaches the stop.
            let mem = Arc::clone(mem);
            drop(st);
            let WritePressure::Slowdown { cause, progress: p } = pressure else {
                ws.delay_debt_nanos = 0;
                ws.free_rate.note(bytes);
                return Ok(mem);
            };
            ws.free_rate.interrupt();
            let start = (o.delayed_write_rate as f64).max(ws.free_rate.rate());
            let rate = (start * (1.0 - p).max(MIN_RATE_FRACTION)).max(1.0);
            ws.delay_debt_nanos += (bytes as f64 * 1e9 / rate) as u64;
            if ws.delay_debt_nanos >= MIN_SLEEP_NANOS {
                let nanos = std::mem::take(&mut ws.delay_debt_nanos);
                std::thread::sleep(Duration::from_nanos(nanos));
                ws.trace.slowdown += nanos / 1000;
                StatsCollector::add(&self.stats.delayed_writes, 1);
                let c = match cause {
                    StallCause::PendingBytes => &self.stats.pending_bytes_slowdown_micros,
                    _ => &self.stats.l0_slowdown_micros,
                };
                StatsCollector::add(c, nanos / 1000);
            }
            return Ok(mem);
        }
    }

    /// Syncs every closed WAL numbered `up_to` or lower that is not synced yet, oldest
    /// first. A failure is sticky (background error): the WAL's tail is then not durable,
    /// and no WAL is synced again (see `wal_failed`).
    pub(super) fn sync_closed_wals(&self, up_to: u64) -> Result<()> {
        self.check_wal_intact()?;
        let pending: Vec<Arc<super::ClosedWal>> = {
            let list = self.writes.closed_wals.lock();
            if list.is_empty() {
                return Ok(());
            }
            list.iter().filter(|w| w.number <= up_to).cloned().collect()
        };
        for w in &pending {
            let mut g = w.writer.lock();
            if let Some(wal) = g.as_mut() {
                if let Err(e) = wal.sync() {
                    self.writes.wal_failed.store(true, Ordering::Release);
                    self.set_bg_error(&format!("WAL sync failed: {e}"));
                    return Err(e);
                }
                // Dropping the writer gives back the reserved space after the END marker
                // (a mapped log is truncated to its records; a failure leaves only zeros
                // after the marker, which readers never reach).
                *g = None;
            }
        }
        self.writes
            .closed_wals
            .lock()
            .retain(|w| w.writer.lock().is_some());
        Ok(())
    }

    /// Syncs every WAL older than the NVM memtable `mem` (all of them closed) and records in
    /// its list that they are durable: its writes are then durable in the history.
    pub(super) fn sync_wals_under(&self, mem: &MemTable) -> Result<()> {
        self.sync_closed_wals(mem.id())?;
        mem.set_older_wals_durable();
        Ok(())
    }

    /// Drops the closed WALs numbered `up_to` or lower without syncing them: their
    /// memtables are in synced tables now, so their records are needed no more.
    pub(super) fn forget_closed_wals(&self, up_to: u64) {
        let forgotten: Vec<Arc<super::ClosedWal>> = {
            let mut list = self.writes.closed_wals.lock();
            let (old, keep) = list.drain(..).partition(|w| w.number <= up_to);
            *list = keep;
            old
        };
        // Dropping a writer outside the list's lock: a mapped log is truncated to its
        // records first, which can wait on the file system.
        drop(forgotten);
    }

    /// `Err` once a WAL append or sync has failed: syncing any log after that could make
    /// newer writes durable behind lost ones.
    pub(super) fn check_wal_intact(&self) -> Result<()> {
        if self.writes.wal_failed.load(Ordering::Acquire) {
            return Err(Error::Background(
                "a WAL append or sync failed earlier; no log is synced after it".to_string(),
            ));
        }
        Ok(())
    }

    /// Makes the active memtable immutable and starts a new one with a new WAL; then
    /// switches every column family's memtable that holds anything: a family's immutable
    /// memtable holds only updates of closed WALs, which its flush syncs first (see
    /// `flush_memtable`), and this engine's flush waits for the families' (see
    /// `flush_families`), so no WAL becomes obsolete while a family still needs it.
    /// REQUIRES: the `write` lock (`ws`), room for one more immutable memtable.
    pub(super) fn switch_memtable(&self, ws: &mut WriteState) -> Result<()> {
        if !self.has_families.load(Ordering::Acquire) {
            return self.switch_own_memtable(ws);
        }
        // This memtable's flush must not look at the families before they are switched
        // too; theirs must not start before this memtable's WAL is closed (their flushes
        // sync the closed WALs): this one first, then theirs, as one step.
        let _switching = self.family_switch.lock();
        self.switch_own_memtable(ws)?;
        self.switch_families()
    }

    /// In a column family's engine: switches its active memtable if it holds anything
    /// (the database's write path holds its own `write` lock, and switched its memtable).
    pub(super) fn switch_family_memtable(&self) -> Result<()> {
        let mut ws = self.writes.write.lock();
        self.wait_for_inserts(&ws);
        if self.versions.super_version.load().mem.is_empty() {
            return Ok(());
        }
        self.switch_own_memtable(&mut ws)
    }

    /// In a column family's engine: whether its active memtable has no room for `batch`
    /// (the database's write path then switches every memtable first).
    pub(super) fn family_memtable_full(&self, batch: &WriteBatch) -> bool {
        let need = crate::memtable::room_needed(batch.len(), batch.approximate_size());
        self.versions
            .super_version
            .load()
            .mem
            .is_full(need, self.opts.write_buffer_size)
    }

    fn switch_own_memtable(&self, ws: &mut WriteState) -> Result<()> {
        // No group may still be inserting into the memtable that becomes immutable.
        self.wait_for_inserts(ws);
        // The new memtable (and its WAL) first: if creating it fails, nothing has changed
        // (the old memtable and WAL stay active).
        // NoveLSM, mutable: a full DRAM memtable hands over to an NVM memtable (no WAL),
        // a full NVM memtable to a new DRAM one (`overflow`: to NVM when a new DRAM
        // memtable would wait for a flush, or, with `nvm_memtable_large_entry`, after
        // large entries if the pool has room for the flush too). Without room in the
        // pool, stay in DRAM.
        let (next, active) = {
            let st = self.jobs.state.lock();
            (self.next_active_now(&st), st.mems.active().id())
        };
        // A spare made ready in the background saves this switch a manifest write. The
        // `spare` lock is held until the new memtable is installed: a spare made meanwhile
        // would follow the memtable being switched out.
        let mut slot = self.writes.spare.lock();
        let mut spare = slot.take();
        if let Some(s) = spare.take_if(|s| s.for_active != active) {
            // Never the case (see `prepare_spare`); a spare for another memtable could
            // carry a number below the active one's, so it is released, not used (an empty
            // WAL file left below newer logs would read as one that lost its tail).
            debug_assert_eq!(s.for_active, active, "a spare outlived its memtable");
            self.release_spare(Some(s.kind))?;
        }
        let (number, wal) = match spare.map(|s| s.kind) {
            Some(SpareKind::Memtable(mem)) if next == NextActive::NvmIfRoom => {
                self.install_new_memtable(ws, mem, None);
                return Ok(());
            }
            Some(SpareKind::Wal(mut w)) if next == NextActive::Dram => {
                // A `sync` write may have turned early writeback on since the spare was made.
                w.set_early_writeback(self.writes.sync_wals_ahead.load(Ordering::Acquire));
                (w.number(), Some(w))
            }
            other => {
                // No spare (a spare's kind follows from the active memtable, so `other`
                // holds one only if that rule is broken): the switch starts the object.
                self.release_spare(other)?;
                let number = self.new_file_number();
                if next == NextActive::NvmIfRoom
                    && let Some(mem) =
                        self.design
                            .memtables()
                            .new_memtable(self, number, Some(active))?
                {
                    self.install_new_memtable(ws, Arc::new(mem), None);
                    return Ok(());
                }
                (number, self.new_wal(number)?)
            }
        };
        // The old WAL is synced off the write path (by its memtable's flush, or sooner by a
        // `sync` write): syncing up to a whole memtable's worth of log here would stall
        // every writer for as long. Until then a power cut may tear its tail; recovery then
        // stops at the tear (point in time), which loses no acknowledged-durable write
        // because a `sync` write first syncs every older WAL.
        let mem = Arc::new(MemTable::new(
            number,
            self.opts.memtable_capacity(),
            self.storage.order().clone(),
        ));
        self.install_new_memtable(ws, mem, wal);
        drop(slot);
        Ok(())
    }

    /// Makes `mem` (fed by `wal`) the active memtable; the old one becomes immutable and
    /// its WAL (if any) joins the closed WALs.
    fn install_new_memtable(
        &self,
        ws: &mut WriteState,
        mem: Arc<MemTable>,
        wal: Option<WalWriter>,
    ) {
        if let Some(mut w) = ws.wal.take() {
            // Newer writes go to the next WAL: this one must end visibly at its records, or
            // a crash could leave it a zero-filled (reserved) tail that ends recovery before
            // the newer logs. An END marker says so without truncating the file here (the
            // truncation waits for the log's sync, off the write path).
            if let Err(e) = w.seal() {
                self.writes.wal_failed.store(true, Ordering::Release);
                self.set_bg_error(&format!("WAL close failed: {e}"));
            }
            self.writes
                .closed_wals
                .lock()
                .push(Arc::new(super::ClosedWal {
                    number: w.number(),
                    writer: parking_lot::Mutex::new(Some(w)),
                }));
        }
        ws.wal = wal;
        ws.family_bytes = 0;
        let mut st = self.jobs.state.lock();
        st.mems.switch(mem);
        self.install_super_version(&mut st);
        drop(st);
        self.jobs.bg_cv.notify_all();
    }

    /// A new WAL numbered `number` where the design places it (an NVM WAL is recorded in
    /// the manifest before use; without room for it, a file), or `None` without `use_wal`.
    pub(super) fn new_wal(&self, number: u64) -> Result<Option<WalWriter>> {
        if !self.opts.use_wal {
            return Ok(None);
        }
        match self
            .design
            .wals()
            .place(&self.storage, &self.opts, number)?
        {
            WalPlace::Nvm(obj, w) => {
                self.record_nvm_object(obj)?;
                return Ok(Some(w));
            }
            WalPlace::FileFallback => StatsCollector::add(&self.stats.nvm_wal_fallbacks, 1),
            WalPlace::File => {}
        }
        self.new_wal_file(number).map(Some)
    }

    /// Creates WAL file `number`.
    fn new_wal_file(&self, number: u64) -> Result<WalWriter> {
        // The directory entry becomes durable with the WAL's first sync (a `sync` write, or
        // the sync of the closed WAL by its flush), or with the next directory sync (a
        // flush's table): off the switch, which holds every writer.
        let mut w =
            WalWriter::create(self.fs.as_ref(), &self.path, number, self.opts.wal_mapped())?
                .with_deferred_dir_sync(Arc::clone(&self.fs), &self.path);
        w.set_early_writeback(self.writes.sync_wals_ahead.load(Ordering::Acquire));
        Ok(w)
    }

    /// Makes the object the next memtable switch needs ready, so that the switch (which
    /// holds every writer) neither writes the manifest nor creates a file: an empty NVM
    /// memtable (recorded in the manifest) when the active memtable is a DRAM one under
    /// `nvm_memtable = mutable`; when the next memtable is a DRAM one, its WAL: in NVM
    /// (recorded) under `wal_on_nvm`, else a file. Nothing when the pool has no room (the
    /// switch then allocates as before), when a spare for the active memtable exists, or
    /// without `use_wal` when the next memtable is a DRAM one. Run by the flush job, which a
    /// switch starts. A spare unused at close is an empty object or file that the next open
    /// releases or deletes.
    ///
    /// Holds the `spare` lock throughout: a switch meanwhile waits for it, so a spare is
    /// never made for a memtable that is no longer active.
    pub(super) fn prepare_spare(&self) -> Result<()> {
        let mut slot = self.writes.spare.lock();
        let (next, active) = {
            let st = self.jobs.state.lock();
            if st.shutting_down || st.bg_error.is_some() {
                return Ok(());
            }
            let a = st.mems.active();
            // As if the DRAM memtables had room when the switch comes (the flush just
            // started is usually done by then): `overflow` keeps a WAL ready and makes its
            // NVM memtable at the switch when it needs one.
            (self.design.memtables().next_active(a, false), a.id())
        };
        if let Some(s) = slot.as_ref() {
            // A switch takes the spare under this lock before it installs a new memtable.
            debug_assert_eq!(s.for_active, active, "a spare outlived its memtable");
            return Ok(());
        }
        let kind = match next {
            // Made at the switch, if the pool has room then: a spare would hold the room
            // idle while the active memtable fills.
            NextActive::NvmIfAmpleRoom => return Ok(()),
            NextActive::NvmIfRoom => {
                match self.design.memtables().new_memtable(
                    self,
                    self.new_file_number(),
                    Some(active),
                )? {
                    Some(m) => SpareKind::Memtable(Arc::new(m)),
                    None => return Ok(()),
                }
            }
            NextActive::Dram if self.opts.use_wal => {
                let number = self.new_file_number();
                match self
                    .design
                    .wals()
                    .place(&self.storage, &self.opts, number)?
                {
                    WalPlace::Nvm(obj, w) => {
                        self.record_nvm_object(obj)?;
                        SpareKind::Wal(w)
                    }
                    // No room where the design puts WALs: the switch tries again.
                    WalPlace::FileFallback => return Ok(()),
                    // A WAL file, created (its first window reserved and mapped) here rather
                    // than by the switch: creating a file can wait on the file system's
                    // journal. Unused at a crash or close, it is an empty file that the next
                    // open deletes. If it cannot be created, the switch tries itself and
                    // reports the error to the writer.
                    WalPlace::File => match self.new_wal_file(number) {
                        Ok(w) => SpareKind::Wal(w),
                        Err(_) => return Ok(()),
                    },
                }
            }
            NextActive::Dram => return Ok(()),
        };
        *slot = Some(Spare {
            for_active: active,
            kind,
        });
        Ok(())
    }

    /// Gives a spare the switch could not use back to the pool, with a manifest record.
    /// (Its number is above the active memtable's, so no flush has released it.)
    fn release_spare(&self, spare: Option<SpareKind>) -> Result<()> {
        let Some(spare) = spare else {
            return Ok(());
        };
        let obj = match spare {
            SpareKind::Memtable(m) => m.nvm_object(),
            SpareKind::Wal(w) => {
                let obj = w.nvm_object();
                if obj.is_none() {
                    // A WAL file: nothing records it; an open would delete it too.
                    let path = crate::filename::wal_file(&self.path, w.number());
                    drop(w);
                    let _ = self.fs.remove_file(&path);
                }
                obj
            }
        };
        let Some(obj) = obj else {
            return Ok(());
        };
        let edit = VersionEdit {
            deleted_nvm_objects: vec![obj.id],
            ..VersionEdit::default()
        };
        self.log_and_apply(edit, None, &[])?;
        self.storage.free_nvm(&[obj]);
        Ok(())
    }

    /// Makes the directory entries of WALs numbered up to `number` durable (one directory
    /// sync, unless an earlier one covered them).
    pub(super) fn make_wal_entries_durable(&self, number: u64) -> Result<()> {
        if !self.opts.use_wal || self.writes.wal_entries_durable.load(Ordering::Acquire) >= number {
            return Ok(());
        }
        self.fs
            .sync_dir(&self.path)
            .map_err(|e| Error::from(e).in_file(&self.path))?;
        self.writes
            .wal_entries_durable
            .fetch_max(number, Ordering::AcqRel);
        Ok(())
    }

    /// In a column family's engine: waits until every memtable switched out so far is
    /// flushed.
    pub(super) fn wait_for_flushes(&self) -> Result<()> {
        let mut st = self.jobs.state.lock();
        // The newest: memtables are flushed oldest first, so once it is gone so is every
        // older one.
        let Some(target) = st.mems.immutables().last().map(|m| m.id()) else {
            return Ok(());
        };
        self.wait_until_flushed(&mut st, target)
    }

    /// Waits, under `st`, until immutable memtable `target` (and so every older one) is
    /// flushed.
    fn wait_until_flushed(
        &self,
        st: &mut parking_lot::MutexGuard<'_, super::State>,
        target: u64,
    ) -> Result<()> {
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(e.clone()));
            }
            if !st.mems.has_immutable(target) {
                return Ok(());
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            if !self.wait_for_job(st, STALL_POLL) {
                return Err(no_job("flush"));
            }
        }
    }

    /// `Db::flush`: switches a non-empty memtable and waits until it (and every older
    /// immutable memtable) is flushed. A flush does not give up when a close begins (the
    /// background work it waits for goes on until the close stops it): `close` itself
    /// runs one without a WAL, after the gate shut.
    pub(super) fn flush(&self) -> Result<()> {
        // A column family's memtable is switched only with the database's (see
        // `switch_memtable`): the database's flush switches and flushes it.
        if let Some(p) = self.parent.get().and_then(std::sync::Weak::upgrade) {
            return p.flush();
        }
        let target = {
            let mut ws = self.writes.write.lock();
            // Every write logged before the call is in the memtable it flushes.
            self.wait_for_inserts(&ws);
            let r = (|| -> Result<Option<u64>> {
                let mut st = self.jobs.state.lock();
                if st.mems.active().is_empty() && !self.families_hold_updates() {
                    return Ok(None);
                }
                loop {
                    Self::check_background(&st)?;
                    if st.mems.dram_memtables() < self.opts.max_write_buffer_number {
                        break;
                    }
                    if !self.wait_for_job(&mut st, STALL_POLL) {
                        return Err(no_job("flush"));
                    }
                }
                let id = st.mems.active().id();
                drop(st);
                self.switch_memtable(&mut ws)?;
                Ok(Some(id))
            })();
            drop(ws);
            self.wake_next_writer();
            r?
        };
        let mut st = self.jobs.state.lock();
        let target = match target {
            Some(t) => t,
            None => match st.mems.immutables().first() {
                Some(m) => m.id(),
                None => return Ok(()),
            },
        };
        self.wait_until_flushed(&mut st, target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::LookupResult;
    use mezz_format::ikey::parse_internal_key;

    /// The free rate counts only whole windows written without back-pressure: none before
    /// the first, and a window a slowdown or stop interrupts is dropped, not counted with
    /// the time the writer was held back.
    #[test]
    fn the_free_rate_counts_only_uninterrupted_windows() {
        let mut r = FreeRate::default();
        let group = 64 << 10;
        let groups = (RATE_WINDOW_BYTES / group as u64) as usize;
        for _ in 0..groups {
            r.note(group);
        }
        assert_eq!(r.rate(), 0.0, "the first group only starts the window");
        r.note(group);
        let first = r.rate();
        assert!(first > 0.0);
        // Half a window, interrupted, then a pause: none of it is measured.
        for _ in 0..groups / 2 {
            r.note(group);
        }
        r.interrupt();
        std::thread::sleep(std::time::Duration::from_millis(200));
        for _ in 0..groups {
            r.note(group);
        }
        assert_eq!(r.rate(), first, "no whole window since the interruption");
        r.note(group);
        // The new window's rate, out of the smoothing (`rate = (first + window) / 2`): 4 MiB
        // noted in far less than the pause; had the pause been counted, at most 20 MiB/s.
        let window = 2.0 * r.rate() - first;
        assert!(window > 40.0 * f64::from(1 << 20), "{window} bytes/s");
    }

    fn batch(writer: u8, n: usize) -> WriteBatch {
        let mut b = WriteBatch::new();
        for i in 0..n {
            b.put(format!("w{writer}-{i:04}").as_bytes(), &[writer; 8]);
        }
        b
    }

    /// A write held up by another thread holding the state lock is traced as a slow group
    /// whose time is the state-lock wait, so a slow write names what it waited on.
    #[test]
    fn a_write_waiting_for_the_state_lock_is_traced_as_such() {
        let opts = crate::Options {
            fs: Arc::new(mezz_env::MemFs::new()),
            ..crate::Options::default()
        };
        let db = crate::Db::open("/db", opts).unwrap();
        db.put(b"warm", b"up").unwrap();
        let inner = Arc::clone(&db.inner);
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let st = inner.jobs.state.lock();
            held_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(40));
            drop(st);
        });
        held_rx.recv().unwrap();
        db.put(b"k", b"v").unwrap();
        holder.join().unwrap();
        let slow = db.stats().slow_writes;
        assert_eq!(slow.groups, 1, "{slow:?}");
        let t = slow.slowest[0];
        assert!(t.state_lock >= 20_000, "{t:?}");
        assert!(t.total >= t.state_lock);
        assert_eq!(t.main_cause(), "state lock");
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }

    /// A member whose writer is not running (descheduled, not parked) never picks up its
    /// part: the leader takes it back and inserts it, instead of waiting for that writer.
    #[test]
    fn parts_not_picked_up_are_inserted_by_the_leader() {
        let mem = Arc::new(MemTable::new(1, 1 << 20, mezz_format::KeyOrder::default()));
        // No thread waits on the members' slots, and none is parked.
        let slots: Vec<Arc<Slot>> = (0..3).map(|_| Arc::new(Slot::default())).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        let (m, s) = (Arc::clone(&mem), slots.clone());
        std::thread::spawn(move || {
            let parts = GroupParts {
                slots: &s,
                batches: vec![batch(0, 4), batch(1, 2), batch(2, 3)],
                leader: 1,
            };
            let _ = tx.send(DbInner::insert_parts(&m, 10, parts));
        });
        let bytes = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the leader waited for members that never ran")
            .unwrap();
        assert_eq!(mem.len(), 9);
        assert_eq!(bytes, 9 * (7 + 8));
        for slot in &slots {
            assert!(slot.m.lock().job.is_none(), "a job was left behind");
            assert!(!slot.ready.load(Ordering::Acquire));
        }
        let mut it = mem.iter();
        it.seek_to_first();
        let mut seqs = Vec::new();
        while it.valid() {
            let k = parse_internal_key(it.key()).unwrap();
            seqs.push((k.user_key[1] - b'0', k.seq));
            it.next();
        }
        seqs.sort_by_key(|&(_, q)| q);
        let owners: Vec<u8> = seqs.iter().map(|&(w, _)| w).collect();
        assert_eq!(owners, [0, 0, 0, 0, 1, 1, 2, 2, 2]);
        assert_eq!(seqs.first().map(|s| s.1), Some(10));
    }

    /// A group's parts land in the memtable numbered in group order, whichever thread
    /// inserts each: awake members insert their own, a parked one's is inserted by the
    /// leader, and the leader returns only when every part is in.
    #[test]
    fn group_parts_are_inserted_in_order_by_whoever_is_awake() {
        for parked in [false, true] {
            let mem = Arc::new(MemTable::new(1, 1 << 20, mezz_format::KeyOrder::default()));
            let leader = Arc::new(Slot::default());
            let members: Vec<Arc<Slot>> = (0..3).map(|_| Arc::new(Slot::default())).collect();
            let helpers: Vec<_> = members
                .iter()
                .map(|slot| {
                    let slot = Arc::clone(slot);
                    std::thread::spawn(move || {
                        // Each member waits like a queued writer until its result comes.
                        loop {
                            match slot.wait() {
                                Woken::Done(r) => return r,
                                Woken::Lead => {}
                                Woken::Insert(job) => job.run(),
                            }
                        }
                    })
                })
                .collect();
            if parked {
                // Long past WAIT_YIELD: the members sleep on their condition variables.
                std::thread::sleep(Duration::from_millis(50));
            }
            // Group order: member 0, the leader, members 1 and 2; sizes differ.
            let slots = [
                Arc::clone(&members[0]),
                Arc::clone(&leader),
                Arc::clone(&members[1]),
                Arc::clone(&members[2]),
            ];
            let parts = GroupParts {
                slots: &slots,
                batches: vec![batch(0, 5), batch(9, 3), batch(1, 7), batch(2, 1)],
                leader: 1,
            };
            let bytes = DbInner::insert_parts(&mem, 100, parts).unwrap();
            // Every part is in once insert_parts returns.
            assert_eq!(mem.len(), 16, "parked {parked}");
            assert_eq!(bytes, 16 * (7 + 8));
            for m in &members {
                m.finish(Ok(()));
            }
            for h in helpers {
                h.join().unwrap().unwrap();
            }
            let mut seqs = Vec::new();
            let mut it = mem.iter();
            it.seek_to_first();
            while it.valid() {
                let p = parse_internal_key(it.key()).unwrap();
                seqs.push((p.user_key.to_vec(), p.seq));
                it.next();
            }
            let seq_of = |k: &str| seqs.iter().find(|(u, _)| u == k.as_bytes()).unwrap().1;
            assert_eq!(seq_of("w0-0000"), 100);
            assert_eq!(seq_of("w0-0004"), 104);
            assert_eq!(seq_of("w9-0000"), 105);
            assert_eq!(seq_of("w9-0002"), 107);
            assert_eq!(seq_of("w1-0000"), 108);
            assert_eq!(seq_of("w1-0006"), 114);
            assert_eq!(seq_of("w2-0000"), 115);
            assert_eq!(
                mem.get(b"w2-0000", 114).unwrap(),
                None,
                "an entry is invisible below its sequence"
            );
            assert!(matches!(
                mem.get(b"w2-0000", 115).unwrap(),
                Some(LookupResult::Value(_))
            ));
        }
    }
}
