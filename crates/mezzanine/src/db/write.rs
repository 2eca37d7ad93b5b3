//! The write path: group commit, back-pressure and memtable switches.
//!
//! A writer that finds the `write` lock free and nobody queued commits its batch alone at
//! once. Otherwise it queues its batch, then tries to take the `write` lock. Whoever holds it is the
//! leader: it takes a group from the front of the queue (at most `MAX_GROUP_BYTES`, always
//! at least one batch), waits for room (stalls), assigns sequence numbers, appends one WAL
//! record for the whole group (synced if any member asked for `sync`), inserts the group
//! into the memtable, publishes the last sequence and hands every member its result. On
//! release it wakes the writer now at the front of the queue, which tries to lead next.
//!
//! Invariants: sequence numbers are assigned, logged and published in queue order, only
//! under the `write` lock; the active memtable and its WAL change only under that lock.
//! The `state` lock is never held while writing the WAL or the memtable.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::batch::WriteBatch;
use crate::compaction::{StallCause, WritePressure};
use crate::error::{Error, Result};
use crate::manifest::VersionEdit;
use crate::memtable::MemTable;
use crate::memtable::set::NextActive;
use crate::stats::{StatsCollector, WriteTrace};
use crate::storage::nvm::NvmObjectKind;
use crate::wal::WalWriter;

use super::{DbInner, Pending, Slot, State, WriteState};

use crate::options::MAX_GROUP_BYTES;
/// Write delays are slept in chunks of at least this many nanoseconds.
const MIN_SLEEP_NANOS: u64 = 1_000_000;
/// The delayed write rate never falls below this fraction of `delayed_write_rate`.
const MIN_RATE_FRACTION: f64 = 0.05;
/// Stalled writers re-check their condition at least this often.
const STALL_POLL: Duration = Duration::from_millis(50);

impl Slot {
    fn finish(&self, r: Result<()>) {
        let mut s = self.m.lock();
        s.result = Some(r);
        self.cv.notify_one();
    }

    fn wake(&self) {
        let mut s = self.m.lock();
        s.wake = true;
        self.cv.notify_one();
    }

    /// Waits until this writer has a result or is told to try to lead.
    fn wait(&self) -> Option<Result<()>> {
        let mut s = self.m.lock();
        while s.result.is_none() && !s.wake {
            self.cv.wait(&mut s);
        }
        s.wake = false;
        s.result.take()
    }

    fn take_result(&self) -> Option<Result<()>> {
        self.m.lock().result.take()
    }
}

/// Microseconds since `t`.
fn micros(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The error of a call that must wait for background work when, with
/// `manual_background`, no job is due (it would wait forever).
fn no_job(what: &str) -> Error {
    Error::Background(format!(
        "{what} waits for background work, but no flush or compaction is due"
    ))
}

impl DbInner {
    /// Queues `batch` and returns once it is applied (or failed).
    pub(super) fn write(&self, sync: bool, batch: WriteBatch) -> Result<()> {
        self.check_open()?;
        if batch.is_empty() {
            return Ok(());
        }
        // Fast path: nobody is writing or waiting, so this batch is a group of one and
        // needs no queue slot.
        if let Some(mut ws) = self.write.try_lock() {
            if self.queue.lock().is_empty() {
                let mut batch = batch;
                let t = Instant::now();
                ws.trace = WriteTrace::default();
                let r = self
                    .make_room_for_write(&mut ws, batch.approximate_size())
                    .and_then(|mem| self.commit(&mut ws, &mem, &mut batch, sync));
                self.finish_trace(&mut ws, t);
                drop(ws);
                self.wake_next_writer();
                return r;
            }
            // Others are queued: go behind them, and make sure one of them is awake to lead.
            drop(ws);
            self.wake_next_writer();
        }
        let slot = Arc::new(Slot::default());
        self.queue.lock().push_back(Pending {
            batch,
            sync,
            slot: Arc::clone(&slot),
        });
        loop {
            if let Some(mut ws) = self.write.try_lock() {
                if let Some(r) = slot.take_result() {
                    drop(ws);
                    self.wake_next_writer();
                    return r;
                }
                self.lead_group(&mut ws);
                drop(ws);
                self.wake_next_writer();
                if let Some(r) = slot.take_result() {
                    return r;
                }
                continue;
            }
            if let Some(r) = slot.wait() {
                return r;
            }
        }
    }

    /// Tells the writer at the front of the queue to try to lead. Call after releasing
    /// the `write` lock.
    pub(super) fn wake_next_writer(&self) {
        if let Some(p) = self.queue.lock().front() {
            p.slot.wake();
        }
    }

    fn take_group(&self) -> Vec<Pending> {
        let mut q = self.queue.lock();
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
        group
    }

    /// Commits one group. REQUIRES: the caller holds the `write` lock (`ws`).
    fn lead_group(&self, ws: &mut WriteState) {
        let group = self.take_group();
        if group.is_empty() {
            return;
        }
        let bytes: usize = group.iter().map(|p| p.batch.approximate_size()).sum();
        let sync = group.iter().any(|p| p.sync);
        let mut slots = Vec::with_capacity(group.len());
        let mut combined: Option<WriteBatch> = None;
        for p in group {
            slots.push(p.slot);
            match combined.as_mut() {
                None => combined = Some(p.batch),
                Some(c) => c.append(&p.batch),
            }
        }
        let Some(mut batch) = combined else {
            return;
        };
        let t = Instant::now();
        ws.trace = WriteTrace::default();
        let result = self
            .make_room_for_write(ws, bytes)
            .and_then(|mem| self.commit(ws, &mem, &mut batch, sync));
        self.finish_trace(ws, t);
        match result {
            Ok(()) => {
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

    /// Records the trace of the group that started at `start` (kept when it was slow).
    fn finish_trace(&self, ws: &mut WriteState, start: Instant) {
        let mut t = ws.trace;
        t.total = start.elapsed().as_micros() as u64;
        if t.total >= 1000 {
            self.stats.slow_writes.lock().record(t);
        }
    }

    /// Logs and applies one group. REQUIRES: the `write` lock.
    fn commit(
        &self,
        ws: &mut WriteState,
        mem: &MemTable,
        batch: &mut WriteBatch,
        sync: bool,
    ) -> Result<()> {
        let first = self.last_seq.load(Ordering::Relaxed) + 1;
        let count = batch.len() as u64;
        batch.set_sequence(first);
        let stats = &self.stats;
        if mem.is_nvm() {
            // NoveLSM's mutable NVM memtable: no WAL, every group durable in place. Older
            // WALs' tails must be durable first, or a power cut could keep these writes and
            // lose earlier acknowledged ones (a hole in the history).
            let t = Instant::now();
            self.sync_closed_wals(u64::MAX)?;
            ws.trace.older_wal_sync += micros(t);
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
            StatsCollector::add(&stats.write_groups, 1);
            StatsCollector::add(&stats.user_bytes_written, user_bytes);
            self.last_seq.store(first + count - 1, Ordering::Release);
            return Ok(());
        }
        if let Some(wal) = ws.wal.as_mut() {
            let data = batch.data();
            if sync {
                // A synced write may not be acknowledged while an older WAL's tail is not
                // durable (recovery stops at the first torn tail).
                let t = Instant::now();
                self.sync_closed_wals(u64::MAX)?;
                ws.trace.older_wal_sync += micros(t);
            }
            let t = Instant::now();
            let appended = wal.append(data, sync);
            ws.trace.wal += micros(t);
            if let Err(e) = appended {
                self.wal_failed.store(true, Ordering::Release);
                self.set_bg_error(&format!("WAL append failed: {e}"));
                return Err(e);
            }
            // A WAL in NVM is not an SSD write (the pool's persisted bytes count it).
            if wal.nvm_object().is_none() {
                StatsCollector::add(&stats.wal_bytes_written, data.len() as u64);
            }
            if sync {
                StatsCollector::add(&stats.wal_syncs, 1);
            }
        }
        let t = Instant::now();
        let inserted = mem.insert_batch(batch);
        ws.trace.insert += micros(t);
        let user_bytes = inserted?;
        StatsCollector::add(&stats.write_groups, 1);
        StatsCollector::add(&stats.user_bytes_written, user_bytes);
        self.last_seq.store(first + count - 1, Ordering::Release);
        Ok(())
    }

    pub(super) fn set_bg_error(&self, msg: &str) {
        let mut st = self.state.lock();
        if st.bg_error.is_none() {
            st.bg_error = Some(msg.to_string());
        }
        drop(st);
        self.done_cv.notify_all();
    }

    fn check_writable(&self, st: &State) -> Result<()> {
        if let Some(e) = &st.bg_error {
            return Err(Error::Background(e.clone()));
        }
        if st.shutting_down || self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Waits until the group of `bytes` may be written: hard stops wait for background
    /// work, slowdowns sleep to follow the delayed write rate, and a full memtable is
    /// switched. Returns the active memtable the group goes into (it changes only under the
    /// `write` lock, which the caller keeps). REQUIRES: the `write` lock (`ws`).
    fn make_room_for_write(&self, ws: &mut WriteState, bytes: usize) -> Result<Arc<MemTable>> {
        let o = &self.opts;
        let mut stopped = false;
        loop {
            let mut st = self.state.lock();
            self.check_writable(&st)?;
            let pressure = self
                .policy
                .write_pressure(&st.version, st.pending_compaction_bytes);
            let mem = st.mems.active();
            let mem_full = if mem.is_nvm() {
                // Room for the whole group, every entry a worst-case node.
                mem.nvm_room() < crate::memtable::nvm_list::room_needed(bytes / 8 + 1, bytes) + 4096
            } else {
                mem.approximate_memory_usage() >= o.write_buffer_size
                    || ws.wal.as_ref().is_some_and(|w| !w.has_room(bytes))
            };
            let stop = if let WritePressure::Stop(cause) = pressure {
                Some(cause)
            } else if mem_full && st.mems.immutables().len() + 1 >= o.max_write_buffer_number {
                Some(StallCause::Memtables)
            } else {
                None
            };
            if let Some(cause) = stop {
                if !stopped {
                    stopped = true;
                    StatsCollector::add(&self.stats.stopped_writes, 1);
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
            if mem_full {
                let empty_dram = mem.is_empty() && !mem.is_nvm();
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
                return Ok(mem);
            };
            let rate = (o.delayed_write_rate as f64 * (1.0 - p).max(MIN_RATE_FRACTION)).max(1.0);
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
            let list = self.closed_wals.lock();
            if list.is_empty() {
                return Ok(());
            }
            list.iter().filter(|w| w.number <= up_to).cloned().collect()
        };
        for w in &pending {
            let mut g = w.writer.lock();
            if let Some(wal) = g.as_mut() {
                if let Err(e) = wal.sync() {
                    self.wal_failed.store(true, Ordering::Release);
                    self.set_bg_error(&format!("WAL sync failed: {e}"));
                    return Err(e);
                }
                *g = None;
            }
        }
        self.closed_wals
            .lock()
            .retain(|w| w.writer.lock().is_some());
        Ok(())
    }

    /// `Err` once a WAL append or sync has failed: syncing any log after that could make
    /// newer writes durable behind lost ones.
    pub(super) fn check_wal_intact(&self) -> Result<()> {
        if self.wal_failed.load(Ordering::Acquire) {
            return Err(Error::Background(
                "a WAL append or sync failed earlier; no log is synced after it".to_string(),
            ));
        }
        Ok(())
    }

    /// Makes the active memtable immutable and starts a new one with a new WAL.
    /// REQUIRES: the `write` lock (`ws`), room for one more immutable memtable.
    pub(super) fn switch_memtable(&self, ws: &mut WriteState) -> Result<()> {
        // The new memtable (and its WAL) first: if creating it fails, nothing has changed
        // (the old memtable and WAL stay active).
        let number = self.new_file_number();
        // NoveLSM, mutable: a full DRAM memtable hands over to an NVM memtable (no WAL),
        // a full NVM memtable to a new DRAM one. Without room in the pool, stay in DRAM.
        let next = {
            let st = self.state.lock();
            self.mem_policy().next_active(st.mems.active())
        };
        if next == NextActive::NvmIfRoom
            && let Some(mem) = self.new_nvm_memtable(number)?
        {
            let mem = Arc::new(mem);
            self.install_new_memtable(ws, mem, None);
            return Ok(());
        }
        let wal = self.new_wal(number)?;
        // The old WAL is synced off the write path (by its memtable's flush, or sooner by a
        // `sync` write): syncing up to a whole memtable's worth of log here would stall
        // every writer for as long. Until then a power cut may tear its tail; recovery then
        // stops at the tear (point in time), which loses no acknowledged-durable write
        // because a `sync` write first syncs every older WAL.
        let mem = Arc::new(MemTable::new(number));
        self.install_new_memtable(ws, mem, wal);
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
        if let Some(w) = ws.wal.take() {
            self.closed_wals.lock().push(Arc::new(super::ClosedWal {
                number: w.number(),
                writer: parking_lot::Mutex::new(Some(w)),
            }));
        }
        ws.wal = wal;
        let mut st = self.state.lock();
        st.mems.switch(mem);
        self.install_super_version(&mut st);
        drop(st);
        self.bg_cv.notify_all();
    }

    /// A new WAL numbered `number` (in NVM with `wal_on_nvm`, recorded in the manifest
    /// before use), or `None` without `use_wal`.
    pub(super) fn new_wal(&self, number: u64) -> Result<Option<WalWriter>> {
        if !self.opts.use_wal {
            return Ok(None);
        }
        if self.opts.wal_on_nvm
            && let Some(tier) = self.nvm()
        {
            let obj = tier.alloc(number, NvmObjectKind::Wal, self.opts.nvm_wal_bytes())?;
            let w = self.start_nvm_object(tier, obj, || WalWriter::create_nvm(tier, obj))?;
            return Ok(Some(w));
        }
        // The directory entry becomes durable with the WAL's first sync (a `sync` write, or
        // the sync of the closed WAL by its flush): off the switch, which holds every writer.
        let w = WalWriter::create(self.fs.as_ref(), &self.path, number)?
            .with_deferred_dir_sync(Arc::clone(&self.fs), &self.path);
        Ok(Some(w))
    }

    /// Initialises the freshly allocated `obj` with `init` (returning its extent to the pool
    /// if that fails), then records it in the manifest. If the manifest write fails, the
    /// extent stays allocated until the next open, which derives free space from the
    /// manifest: nothing leaks for good.
    fn start_nvm_object<T>(
        &self,
        tier: &crate::storage::nvm::NvmTier,
        obj: crate::storage::nvm::NvmObject,
        init: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let made = match init() {
            Ok(m) => m,
            Err(e) => {
                tier.free(&obj);
                return Err(e);
            }
        };
        let edit = VersionEdit {
            new_nvm_objects: vec![obj],
            ..VersionEdit::default()
        };
        self.log_and_apply(edit, None, &[])?;
        Ok(made)
    }

    /// A new, empty NVM memtable numbered `number`, recorded in the manifest; `None` when
    /// the pool has no room for one.
    pub(super) fn new_nvm_memtable(&self, number: u64) -> Result<Option<MemTable>> {
        let Some(tier) = self.nvm() else {
            return Ok(None);
        };
        let len = (self.opts.nvm_memtable_size + crate::memtable::nvm_list::LIST_PREFIX) as u64;
        let Ok(obj) = tier.alloc(number, NvmObjectKind::Memtable, len) else {
            return Ok(None);
        };
        let list = self.start_nvm_object(tier, obj, || {
            crate::memtable::nvm_list::NvmList::create(tier, obj)
        })?;
        Ok(Some(MemTable::nvm(number, list)))
    }

    /// `Db::flush`: switches a non-empty memtable and waits until it (and every older
    /// immutable memtable) is flushed.
    pub(super) fn flush(&self) -> Result<()> {
        self.check_open()?;
        let target = {
            let mut ws = self.write.lock();
            let r = (|| -> Result<Option<u64>> {
                let mut st = self.state.lock();
                if st.mems.active().is_empty() {
                    return Ok(None);
                }
                loop {
                    self.check_writable(&st)?;
                    if st.mems.immutables().len() + 1 < self.opts.max_write_buffer_number {
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
        let mut st = self.state.lock();
        let target = match target {
            Some(t) => t,
            None => match st.mems.immutables().first() {
                Some(m) => m.id(),
                None => return Ok(()),
            },
        };
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(e.clone()));
            }
            // Memtables are flushed oldest first: once `target` is gone, so is every
            // memtable older than it.
            if !st.mems.has_immutable(target) {
                return Ok(());
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            if !self.wait_for_job(&mut st, STALL_POLL) {
                return Err(no_job("flush"));
            }
        }
    }
}
