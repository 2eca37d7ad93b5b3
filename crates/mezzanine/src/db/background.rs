//! Background work: flush and compaction threads, version installation, obsolete-file
//! deletion, manual compaction, waiting and shutdown.
//!
//! Scheduling: `max_background_jobs` threads share one loop. A flush (the memtable set's
//! oldest immutable memtable first, one at a time so L0 stays ordered by sequence) has
//! priority over compaction; the compaction policy picks plans that conflict with no
//! running job's claims (tables and key ranges), so compactions run concurrently wherever
//! they are disjoint. With two threads or more, at most `max_background_jobs - 1`
//! compactions run at once (RocksDB's split of its background jobs), so a flush never
//! waits for a thread.
//!
//! Version changes go through [`DbInner::log_and_apply`]: under the `manifest` lock it
//! builds the new version, appends the edit to the MANIFEST and syncs it, and only then
//! installs the version (and a new super version) under the `state` lock.
//!
//! A failed flush, compaction or manifest write sets the sticky background error: writes
//! then fail with `Error::Background`, reads go on.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::compaction::nvm_sink::NvmRecorder;
use crate::compaction::{CompactionContext, CompactionPlan, run_compaction, trivial_move_edit};
use crate::design::{FlushOutput, FlushStep};
use crate::error::{Error, Result};
use crate::filename;
use crate::manifest::{VersionEdit, set_current, write_new_manifest};
use crate::memtable::MemTable;
use crate::state::MemtableSet;
use crate::state::set::FlushJob;
use crate::stats::StatsCollector;
use crate::storage::nvm::{NvmObject, NvmObjectKind};
use crate::table::{TableLocation, TableMeta};

use super::DbInner;

/// Which background jobs a thread runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Jobs {
    /// Flushes first, then compactions (one background thread, or work run by the caller).
    All,
    /// Flushes only: the thread writers may wait on, at the process's priority.
    Flushes,
    /// Compactions only (at `background_nice`).
    Compactions,
}

impl DbInner {
    /// The loop of one background thread.
    pub(super) fn background_loop(self: &Arc<Self>, jobs: Jobs) {
        let mut st = self.jobs.state.lock();
        loop {
            if st.shutting_down {
                return;
            }
            if !self.run_one_job(&mut st, jobs) {
                self.jobs.bg_cv.wait_for(&mut st, Duration::from_secs(1));
            }
        }
    }

    /// Runs one background job of the kinds `jobs` allows if one is due, releasing `st`
    /// while it works: the flush of the oldest immutable memtable first (writers may wait
    /// for it), then the flush of the oldest full NVM memtable of `nvm_memtable =
    /// immutable`, then a compaction. Returns whether a job ran. A failure becomes the
    /// sticky background error.
    pub(super) fn run_one_job(
        &self,
        st: &mut parking_lot::MutexGuard<'_, super::State>,
        jobs: Jobs,
    ) -> bool {
        if st.bg_error.is_some() || st.shutting_down {
            return false;
        }
        if jobs != Jobs::Compactions && self.run_flush(st) {
            return true;
        }
        if jobs == Jobs::Flushes {
            return false;
        }
        // At most `threads - 1` compactions at once, counting those a caller of
        // `run_background_work` runs: the flush thread has its core's share (the background
        // threads alone never exceed it, as one of them runs only flushes).
        let threads = self.opts.max_background_jobs;
        if !self.opts.manual_background && threads >= 2 && st.bg_compactions + 1 >= threads {
            return false;
        }
        if let Some(plan) = self
            .policy
            .pick(&st.version, &st.claims)
            .or_else(|| self.seek_plan(st))
        {
            let claim = st.claims.claim(&plan);
            st.bg_compactions += 1;
            let r = parking_lot::MutexGuard::unlocked(st, || self.run_plan(&plan));
            st.bg_compactions -= 1;
            st.claims.release(claim);
            self.finish_job(st, &r, "compaction");
            return true;
        }
        false
    }

    /// The compaction point reads asked for (`Options::seek_compaction`), once nothing is
    /// due for size. The request is dropped once planned or once its table has left its
    /// level; kept while the plan conflicts with a running job.
    fn seek_plan(&self, st: &mut super::State) -> Option<CompactionPlan> {
        let (level, id) = st.seek_compaction?;
        if !st.version.tables(level).iter().any(|t| t.id == id) {
            st.seek_compaction = None;
            return None;
        }
        let plan = self.policy.seek_plan(&st.version, &st.claims, level, id)?;
        st.seek_compaction = None;
        Some(plan)
    }

    /// Runs the next flush if one is due and may run; returns whether one ran.
    fn run_flush(&self, st: &mut parking_lot::MutexGuard<'_, super::State>) -> bool {
        if self.sync_wals_under_nvm(st) {
            return true;
        }
        // A flush whose output has no room yet waits for the compaction that makes some
        // (running, or picked next below); with nothing to wait for it goes ahead.
        // A matrix container whose free pages fell short of the last row waits the same way
        // (rows' live bytes undercount the pages that drained rows and pinned tables hold).
        let no_room = self.policy.flush_waits_for_compaction(&st.version)
            || self.design.flush_short_of_room();
        let flush_waits = no_room && self.compaction_pending(st);
        if !st.flush_running
            && !flush_waits
            && let Some(job) = st.mems.next_flush()
        {
            st.flush_running = true;
            // A switch started this flush: the NVM object the next switch needs is made
            // ready first, off the write path (`prepare_spare`); if the pool had no room
            // for it, again after the flush, which may have freed some (its memtable's WAL,
            // or its NVM memtable).
            let r = parking_lot::MutexGuard::unlocked(st, || {
                self.prepare_spare()?;
                match &job {
                    FlushJob::SealedNvm(m) => self.flush_sealed_nvm(m),
                    FlushJob::Immutable(m) => self.flush_memtable(m),
                }?;
                self.prepare_spare()
            });
            st.flush_running = false;
            self.finish_job(st, &r, "flush");
            return true;
        }
        false
    }

    /// When the active memtable is an NVM one whose writes did not wait for the WALs older
    /// than it (the deferred mark), syncs those WALs, first of all flush work: until then a
    /// power cut may drop its writes (recovery drops the list when an older WAL lost its
    /// tail). Returns whether it ran (a failed sync becomes the background error).
    fn sync_wals_under_nvm(&self, st: &mut parking_lot::MutexGuard<'_, super::State>) -> bool {
        let active = st.mems.active();
        if active.awaits_older_wals() != Some(true) {
            return false;
        }
        let active = Arc::clone(active);
        let r = parking_lot::MutexGuard::unlocked(st, || self.sync_wals_under(&active));
        self.finish_job(st, &r, "WAL sync");
        true
    }

    /// Whether a compaction is running or due (one may free room a flush waits for).
    pub(super) fn compaction_pending(&self, st: &super::State) -> bool {
        !st.claims.is_empty() || self.policy.pick(&st.version, &st.claims).is_some()
    }

    /// Ends a background job: its failure (if no earlier one) becomes the sticky background
    /// error; then waiting writers, `flush` callers and background threads are woken.
    fn finish_job(&self, st: &mut super::State, r: &Result<()>, what: &str) {
        if let Err(e) = r
            && st.bg_error.is_none()
        {
            st.bg_error = Some(format!("{what} failed: {e}"));
            self.info_log.log(format_args!(
                "background error, writes refused until reopened: {what} failed: {e}"
            ));
        }
        self.jobs.done_cv.notify_all();
        self.jobs.bg_cv.notify_all();
    }

    /// Waits for background work to change the state behind `st`: with background threads,
    /// for a job to finish (or `timeout`); with `manual_background`, by running one job
    /// here, or, when none may start here because another caller's thread runs one (a
    /// flush, or a compaction holding claims), by waiting for a job to finish (or
    /// `timeout`), with `st` released. Returns false only in manual mode when no job is due
    /// or running anywhere (the caller would wait forever).
    pub(super) fn wait_for_job(
        &self,
        st: &mut parking_lot::MutexGuard<'_, super::State>,
        timeout: Duration,
    ) -> bool {
        if self.opts.manual_background {
            if self.run_one_job(st, Jobs::All) {
                return true;
            }
            if st.flush_running || st.bg_compactions > 0 || !st.claims.is_empty() {
                self.jobs.done_cv.wait_for(st, timeout);
                return true;
            }
            return false;
        }
        self.jobs.bg_cv.notify_all();
        self.jobs.done_cv.wait_for(st, timeout);
        true
    }

    /// `Db::run_background_work`: runs up to `max_jobs` due background jobs on the calling
    /// thread; returns how many ran.
    /// REQUIRES: the caller holds a pass of the gate.
    pub(super) fn run_background_work(&self, max_jobs: usize) -> Result<usize> {
        let mut st = self.jobs.state.lock();
        let mut ran = 0;
        while ran < max_jobs && self.run_one_job(&mut st, Jobs::All) {
            ran += 1;
        }
        if let Some(e) = &st.bg_error {
            return Err(Error::Background(e.clone()));
        }
        drop(st);
        self.purge_obsolete();
        Ok(ran)
    }

    /// Writes `imm` to one L0 table, records it (and the new log number) in the manifest,
    /// drops the memtable and deletes its WAL.
    fn flush_memtable(&self, imm: &Arc<MemTable>) -> Result<()> {
        let start = Instant::now();
        // When WALs are made durable ahead of need, the memtable's WAL (and older ones)
        // become durable first, off the write path; otherwise the table written here
        // makes them obsolete unsynced.
        if self.writes.sync_wals_ahead.load(Ordering::Acquire) {
            self.sync_closed_wals(imm.id())?;
        }
        self.sync_parent_wals()?;
        // The column families' updates in this memtable's WAL reach their tables first: the
        // flush below makes that WAL obsolete.
        self.flush_families()?;
        if self.design.memtables().absorb(self, imm, start)? {
            return Ok(());
        }
        // Every NVM memtable below the immutable ones holds older data: they reach L0
        // first, or they would be consulted before a newer L0 table.
        self.drain_nvm_memtables()?;
        if !self.write_l0(imm, start, Some(imm.id()), true, &mut |_| {})? {
            // No room in the matrix container yet: the memtable stays queued until a
            // column compaction frees pages.
            return Ok(());
        }
        self.forget_closed_wals(imm.id());
        self.remove_wal_file(imm.id());
        Ok(())
    }

    /// Deletes the file of WAL `id` (with `use_wal`).
    pub(super) fn remove_wal_file(&self, id: u64) {
        if self.opts.use_wal {
            let _ = self.fs.remove_file(&filename::wal_file(&self.path, id));
        }
    }

    /// Writes memtable `m` to one L0 table and installs it with one manifest edit, which
    /// also releases `m`'s NVM object (if it has one) and, with `flushed`, moves the log
    /// number (see [`DbInner::log_and_apply`]); `on_install` adjusts the memtable set under
    /// the same lock. Then counts the flush and deletes what became obsolete.
    ///
    /// The design's flush targets are tried in order (`design::FlushTarget`); false when
    /// one asked to wait (only with `may_wait`): nothing was written, the flush is retried
    /// later.
    pub(super) fn write_l0(
        &self,
        m: &Arc<MemTable>,
        start: Instant,
        flushed: Option<u64>,
        may_wait: bool,
        on_install: &mut dyn FnMut(&mut MemtableSet),
    ) -> Result<bool> {
        let mut output = None;
        for target in self.design.flush_targets() {
            match target.write(self, m, may_wait)? {
                FlushStep::Written(out) => {
                    output = Some(out);
                    break;
                }
                FlushStep::Wait => return Ok(false),
                FlushStep::Pass => {}
            }
        }
        let Some(out) = output else {
            return Err(Error::Background(
                "no flush target took the memtable".to_string(),
            ));
        };
        let FlushOutput {
            mut edit,
            table,
            after_install,
        } = *out;
        if let Some(object) = m.own_nvm_object() {
            edit.deleted_nvm_objects.push(object);
        }
        let made: Vec<String> = edit
            .new_tables
            .iter()
            .map(|(_, t)| format!("#{} ({} bytes, {:?})", t.id, t.size, t.tier()))
            .collect();
        let installed =
            self.log_and_apply_ext(edit, flushed, &[], &mut |st| on_install(&mut st.mems));
        if let Some(after) = after_install {
            after(installed.is_ok());
        }
        installed?;
        m.retire_after_flush();
        self.info_log.log(format_args!(
            "flush: memtable {} ({} entries) -> L0 {} in {} ms",
            m.id(),
            m.len(),
            if made.is_empty() {
                "nothing".to_string()
            } else {
                made.join(", ")
            },
            start.elapsed().as_millis()
        ));
        let s = &self.stats;
        StatsCollector::add(&s.flushes, 1);
        StatsCollector::add(&s.flush_micros, start.elapsed().as_micros() as u64);
        if let Some((bytes, data_bytes, encode_nanos)) = table {
            StatsCollector::add(&s.flush_bytes_written, bytes);
            StatsCollector::add(&s.encode_bytes, data_bytes);
            StatsCollector::add(&s.encode_micros, encode_nanos / 1000);
            s.record_level_io(0, 0, bytes);
        }
        self.purge_obsolete();
        Ok(true)
    }

    /// Seals the NVM receiver and writes every full NVM memtable to L0, oldest first. An
    /// immutable memtable that cannot be merged into the receiver (it is an NVM memtable
    /// itself, it is too large, or the pool is full) must go to L0 directly; the NVM
    /// memtables below it hold older data and so must be in L0 before it.
    /// REQUIRES: called from the flush job (`flush_running`), the only one that moves
    /// memtables.
    fn drain_nvm_memtables(&self) -> Result<()> {
        {
            let mut st = self.jobs.state.lock();
            if st.mems.seal_receiver() {
                self.install_super_version(&mut st);
            }
        }
        loop {
            let Some(m) = self.jobs.state.lock().mems.oldest_sealed().cloned() else {
                return Ok(());
            };
            self.flush_sealed_nvm(&m)?;
        }
    }

    /// Writes the oldest full NVM memtable (`nvm_memtable = immutable`) to an L0 table and
    /// releases its extent.
    fn flush_sealed_nvm(&self, m: &Arc<MemTable>) -> Result<()> {
        let mid = m.id();
        self.write_l0(m, Instant::now(), None, false, &mut |mems| {
            mems.remove_sealed(mid);
        })
        .map(|_| ())
    }

    /// Executes a compaction plan (trivial move or merge) and installs its result.
    fn run_plan(&self, plan: &CompactionPlan) -> Result<()> {
        let start = Instant::now();
        let s = &self.stats;
        if plan.trivial_move {
            self.log_and_apply(trivial_move_edit(plan), None, &plan.inputs)?;
            StatsCollector::add(&s.trivial_moves, 1);
            self.info_log.log(format_args!(
                "moved {} tables L{} -> L{} ({:?})",
                plan.inputs.len(),
                plan.level,
                plan.output_level,
                plan.reason
            ));
        } else {
            let version = Arc::clone(&self.jobs.state.lock().version);
            let snapshots = self.versions.snapshots.list();
            let new_file = || self.new_file_number();
            let ctx = CompactionContext {
                storage: &self.storage,
                placement: self.placement.as_ref(),
                opts: &self.opts,
                table_cache: &self.table_cache,
                new_file_number: &new_file,
                snapshots: &snapshots,
                recorder: self
                    .design
                    .records_nvm_refs()
                    .then_some(self as &dyn NvmRecorder),
            };
            let inputs = || plan.all_inputs().map(|t| t.id).collect::<Vec<_>>();
            let result = run_compaction(&ctx, &version, plan).inspect_err(|e| {
                self.info_log
                    .log(format_args!("compaction of {:?} failed: {e}", inputs()));
            })?;
            // On failure the outputs stay: the edit may have reached the manifest even
            // though its sync failed, so only recovery (which knows) may delete them.
            self.log_and_apply(result.edit.clone(), None, &[])
                .inspect_err(|e| {
                    self.info_log.log(format_args!(
                        "compaction of {:?} not installed ({e}); its outputs are left for \
                         recovery",
                        inputs()
                    ));
                })?;
            StatsCollector::add(&s.compaction_bytes_read, result.bytes_read);
            StatsCollector::add(&s.compaction_bytes_written, result.bytes_written);
            for w in &result.outputs {
                let encoded = w.data_bytes.saturating_sub(w.copied_block_bytes);
                StatsCollector::add(&s.encode_bytes, encoded);
                StatsCollector::add(&s.encode_micros, w.encode_nanos / 1000);
                if plan.reason == crate::compaction::CompactionReason::TierMove {
                    StatsCollector::add(&s.nvm_moved_block_bytes, w.copied_block_bytes);
                    StatsCollector::add(&s.nvm_moved_encoded_bytes, encoded);
                }
            }
            if self.storage.nvm().is_some()
                && let Some((sst, left)) = result.ssd_for_room(&self.opts, plan)
            {
                StatsCollector::add(&s.nvm_merges_to_ssd_for_room, 1);
                StatsCollector::add(&s.nvm_bytes_to_ssd_for_room, sst);
                StatsCollector::add(&s.nvm_input_bytes_to_ssd, left);
            }
            s.record_level_io(plan.output_level, result.bytes_read, result.bytes_written);
            let ids = |ts: &mut dyn Iterator<Item = u64>| {
                ts.map(|id| format!("#{id}")).collect::<Vec<_>>().join(" ")
            };
            self.info_log.log(format_args!(
                "compaction ({:?}) L{} -> L{}: {} + {} tables in ({} + {}), {} out ({}); read \
                 {} bytes, wrote {} bytes in {} ms",
                plan.reason,
                plan.level,
                plan.output_level,
                plan.inputs.len(),
                plan.next_inputs.len(),
                ids(&mut plan.inputs.iter().map(|t| t.id)),
                ids(&mut plan.next_inputs.iter().map(|t| t.id)),
                result.outputs.len(),
                ids(&mut result.outputs.iter().map(|w| w.meta.id)),
                result.bytes_read,
                result.bytes_written,
                start.elapsed().as_millis()
            ));
        }
        match plan.reason {
            crate::compaction::CompactionReason::TierMove => {
                StatsCollector::add(&s.nvm_tier_moves, 1);
            }
            crate::compaction::CompactionReason::NvmGc => {
                StatsCollector::add(&s.nvm_rewrites, 1);
            }
            crate::compaction::CompactionReason::TierReturn => {
                StatsCollector::add(&s.nvm_tier_returns, 1);
            }
            crate::compaction::CompactionReason::Column => {
                StatsCollector::add(&s.matrix_columns, 1);
            }
            crate::compaction::CompactionReason::Seek => {
                StatsCollector::add(&s.seek_compactions, 1);
            }
            _ => {}
        }
        StatsCollector::add(&s.compactions, 1);
        StatsCollector::add(&s.compaction_micros, start.elapsed().as_micros() as u64);
        self.purge_obsolete();
        Ok(())
    }

    /// Appends `edit` to the manifest (synced) and installs the resulting version.
    /// `flushed`: the id of the immutable memtable this edit flushed (it is removed, and the
    /// log number moves to the oldest memtable left). `moved`: tables kept by identity.
    pub(super) fn log_and_apply(
        &self,
        edit: VersionEdit,
        flushed: Option<u64>,
        moved: &[Arc<TableMeta>],
    ) -> Result<()> {
        self.log_and_apply_ext(edit, flushed, moved, &mut |_| {})
    }

    /// [`DbInner::log_and_apply`], running `on_install` on the state (under its lock) just
    /// before the new super version is published. NVM WALs that the new log number makes
    /// obsolete are released in the same edit and their extents freed once it is durable.
    pub(super) fn log_and_apply_ext(
        &self,
        mut edit: VersionEdit,
        flushed: Option<u64>,
        moved: &[Arc<TableMeta>],
        on_install: &mut dyn FnMut(&mut super::State),
    ) -> Result<()> {
        let mut manifest = self.versions.manifest.lock();
        let (base, log_number) = {
            let st = self.jobs.state.lock();
            // After a background error (a failed manifest write above all: the file may end
            // in a partial record) nothing more is appended: a later edit would land behind
            // the partial record and turn a torn tail into mid-file corruption.
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(e.clone()));
            }
            let ln = match flushed {
                Some(id) => st.mems.log_number_after_flush(id),
                None => st.log_number,
            };
            (Arc::clone(&st.version), ln)
        };
        let mut freed_wals = Vec::new();
        if flushed.is_some() {
            edit.log_number = Some(log_number);
            for o in base.nvm_objects.values() {
                if o.kind == NvmObjectKind::Wal && o.id < log_number {
                    edit.deleted_nvm_objects.push(o.id);
                    freed_wals.push(*o);
                }
            }
        }
        let dead_objects = dead_nvm_objects(&base, &mut edit);
        edit.next_file_number = Some(self.versions.next_file.load(Ordering::Relaxed));
        edit.last_sequence = Some(self.versions.last_seq.load(Ordering::Acquire));
        let new_version = base
            .apply_with(&edit, moved)
            .and_then(|v| v.check_invariants().map(|()| v))
            .map_err(|e| {
                let msg = format!("version edit does not apply: {e}");
                self.set_bg_error(&msg);
                Error::Background(msg)
            })?;
        let res = if manifest.size() > self.versions.max_manifest_bytes.load(Ordering::Relaxed) {
            let number = self.new_file_number();
            let old = manifest.number();
            write_new_manifest(
                self.fs.as_ref(),
                &self.path,
                number,
                &new_version,
                log_number,
                self.versions.next_file.load(Ordering::Relaxed),
                self.versions.last_seq.load(Ordering::Acquire),
            )
            .and_then(|mut m| {
                // The column families (those of this edit applied) go into the new manifest.
                let (mut records, mut next_id) = {
                    let f = self.families.read();
                    (f.records(), f.next_id)
                };
                for r in &edit.families_added {
                    next_id = next_id.max(r.id + 1);
                    records.insert(r.id, r.clone());
                }
                for id in &edit.families_dropped {
                    next_id = next_id.max(id + 1);
                    records.remove(id);
                }
                if let Some(fe) = crate::manifest::family_snapshot_edit(&records, next_id) {
                    m.append(&fe)?;
                }
                set_current(self.fs.as_ref(), &self.path, number, self.new_file_number())?;
                *manifest = m;
                let _ = self
                    .fs
                    .remove_file(&filename::manifest_file(&self.path, old));
                Ok(())
            })
        } else {
            manifest.append(&edit)
        };
        if let Err(e) = res {
            self.set_bg_error(&format!("manifest write failed: {e}"));
            return Err(e);
        }
        let new_version = Arc::new(new_version);
        let mut st = self.jobs.state.lock();
        for (_, id) in &edit.deleted_tables {
            if new_version.all_tables().any(|(_, t)| t.id == *id) {
                continue;
            }
            if let Some((_, t)) = base.all_tables().find(|(_, t)| t.id == *id) {
                st.obsolete.push((*id, t.location, Arc::downgrade(t)));
            }
        }
        for o in dead_objects {
            // Every table that points into `o` and may still be read: those this edit
            // removes, and those removed earlier that an old version still holds.
            let mut holders: Vec<_> = base
                .all_tables()
                .filter(|(_, t)| t.nvm_refs.iter().any(|r| r.object == o.id))
                .map(|(_, t)| Arc::downgrade(t))
                .collect();
            holders.extend(
                st.obsolete
                    .iter()
                    .filter(|(_, _, w)| {
                        w.upgrade()
                            .is_some_and(|t| t.nvm_refs.iter().any(|r| r.object == o.id))
                    })
                    .map(|(_, _, w)| w.clone()),
            );
            st.obsolete_nvm.push((o, holders));
        }
        st.pending_compaction_bytes = self.policy.pending_bytes(&new_version);
        st.version = new_version;
        st.log_number = log_number;
        if let Some(id) = flushed {
            st.mems.remove_immutable(id);
        }
        on_install(&mut st);
        self.install_super_version(&mut st);
        drop(st);
        drop(manifest);
        self.storage.free_nvm(&freed_wals);
        self.jobs.done_cv.notify_all();
        self.jobs.bg_cv.notify_all();
        Ok(())
    }

    /// Deletes the stored form of obsolete tables that no live version (reader, iterator,
    /// compaction) holds any more.
    pub(super) fn purge_obsolete(&self) {
        let (dead, dead_objects): (Vec<(u64, TableLocation)>, Vec<NvmObject>) = {
            let mut st = self.jobs.state.lock();
            let mut objs = Vec::new();
            st.obsolete_nvm.retain(|(o, holders)| {
                if holders.iter().all(|w| w.strong_count() == 0) {
                    objs.push(*o);
                    false
                } else {
                    true
                }
            });
            let mut dead = Vec::new();
            st.obsolete.retain(|(id, loc, w)| {
                if w.strong_count() == 0 {
                    dead.push((*id, *loc));
                    false
                } else {
                    true
                }
            });
            // Matrix rows: pages no table a reader may hold still uses go back to the
            // container, under the state lock so that no row is installed meanwhile.
            let pinned: Vec<Arc<TableMeta>> = st
                .obsolete
                .iter()
                .filter_map(|(_, _, w)| w.upgrade())
                .collect();
            let current = st.version.all_tables().map(|(_, t)| t.as_ref());
            self.storage
                .release_unused_rows(current.chain(pinned.iter().map(AsRef::as_ref)));
            (dead, objs)
        };
        for (id, loc) in dead {
            self.table_cache.evict(id, loc);
            self.storage.remove_table(id, loc);
        }
        self.storage.free_nvm(&dead_objects);
    }

    /// `Db::compact_range`.
    /// REQUIRES: the caller holds a pass of the gate. Once a close begins, no further
    /// compaction job starts: the call returns `Closed` (the job running finishes first).
    pub(super) fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush()?;
        let deepest = {
            let st = self.jobs.state.lock();
            let v = &st.version;
            (0..v.num_levels())
                .filter(|&l| !v.overlapping(l, begin, end).is_empty())
                .max()
        };
        let Some(deepest) = deepest else {
            return Ok(());
        };
        let last = deepest.max(1).min(self.opts.num_levels - 1);
        for level in 0..last {
            self.manual_compact_level(level, begin, end, false)?;
        }
        if deepest >= 1 {
            // Data already at the bottom only loses its garbage if rewritten in place.
            self.manual_compact_level(deepest, begin, end, true)?;
        }
        self.purge_obsolete();
        Ok(())
    }

    /// Compacts the tables of `level` overlapping the range into `level + 1` (or rewrites
    /// them in place, `in_place`), waiting until no other compaction uses those levels.
    fn manual_compact_level(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        in_place: bool,
    ) -> Result<()> {
        let mut st = self.jobs.state.lock();
        let plan = loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(e.clone()));
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            self.check_open()?;
            let plan = if in_place {
                self.policy.manual_in_place(&st.version, level, begin, end)
            } else {
                self.policy.manual(&st.version, level, begin, end)
            };
            match plan {
                Some(p) if !st.claims.conflicts(&p) => break p,
                Some(_) => {}
                None => return Ok(()),
            }
            self.wait_for_job(&mut st, Duration::from_millis(50));
        };
        let claim = st.claims.claim(&plan);
        drop(st);
        let r = self.run_plan(&plan);
        let mut st = self.jobs.state.lock();
        st.claims.release(claim);
        self.finish_job(&mut st, &r, "manual compaction");
        r
    }

    /// `Db::wait_for_background`.
    /// REQUIRES: the caller holds a pass of the gate. Gives up with `Closed` once a close
    /// begins.
    pub(super) fn wait_for_background(&self) -> Result<()> {
        let mut st = self.jobs.state.lock();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(e.clone()));
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            self.check_open()?;
            let busy = st.flush_running
                || !st.claims.is_empty()
                || st.mems.has_pending_flush()
                || self.policy.pick(&st.version, &st.claims).is_some();
            if !busy || !self.wait_for_job(&mut st, Duration::from_millis(50)) {
                break;
            }
        }
        drop(st);
        self.purge_obsolete();
        Ok(())
    }

    /// Stops the background threads (after their current job), syncs the WAL, deletes
    /// obsolete files and releases the LOCK, last. REQUIRES: the gate is shut and no call
    /// is in flight (`Db::close`), so nothing else touches the database meanwhile.
    pub(super) fn shutdown(&self) -> Result<()> {
        {
            let mut st = self.jobs.state.lock();
            st.shutting_down = true;
        }
        self.jobs.bg_cv.notify_all();
        self.jobs.done_cv.notify_all();
        let threads: Vec<_> = std::mem::take(&mut *self.jobs.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        // The active WAL is synced only after every older one: if an older log could not
        // be synced, syncing the newest would keep later writes and lose earlier ones.
        let mut first_err = self.sync_closed_wals(u64::MAX).err();
        if first_err.is_none() {
            let mut ws = self.writes.write.lock();
            if let Some(w) = ws.wal.as_mut()
                && let Err(e) = w.sync()
            {
                self.writes.wal_failed.store(true, Ordering::Release);
                first_err.get_or_insert(e);
            }
        }
        // NVM memtables still in use keep their entries across the close: their reserve
        // words become exact, so the next open continues the sequence without a gap (under
        // the `write` lock, which NVM inserts hold).
        let mut ws = self.writes.write.lock();
        let sv = self.versions.super_version.load_full();
        for m in std::iter::once(&sv.mem).chain(&sv.imms).chain(&sv.nvm) {
            if let Err(e) = m.settle() {
                first_err.get_or_insert(e);
            }
        }
        // Every log writer ends here, not when the last holder of this handle's state
        // (an iterator, a binding's handle) lets go: a writer's drop truncates its file to
        // what it wrote, which after a reopen could cut what the next handle appended to
        // that file (the END marker that seals it, say).
        ws.wal = None;
        drop(ws);
        let closed_wals = std::mem::take(&mut *self.writes.closed_wals.lock());
        for w in closed_wals {
            w.writer.lock().take();
        }
        self.writes.spare.lock().take();
        // No parallel read job outlives the close either.
        if let Some(pool) = &self.read_pool {
            pool.shutdown();
        }
        self.wake_next_writer();
        self.purge_obsolete();
        // From here on the NVM pool gives out nothing: its free list is this handle's
        // view, which the next open of the database does not share.
        self.storage.close_nvm();
        self.info_log.log(format_args!("closed"));
        self.info_log.close();
        self.lock.lock().take();
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The NVM objects of tables that `edit` deletes from `base` which no table of the result
/// references any more: they are added to `edit.deleted_nvm_objects` (so the manifest stops
/// listing them in the same edit) and returned, to be freed once no reader holds a table
/// that points into them.
fn dead_nvm_objects(base: &crate::version::Version, edit: &mut VersionEdit) -> Vec<NvmObject> {
    if edit.deleted_tables.is_empty() {
        return Vec::new();
    }
    let deleted: std::collections::HashSet<u64> =
        edit.deleted_tables.iter().map(|(_, id)| *id).collect();
    let mut still: std::collections::HashSet<u64> = base
        .all_tables()
        .filter(|(_, t)| !deleted.contains(&t.id))
        .flat_map(|(_, t)| t.nvm_refs.iter().map(|r| r.object))
        .collect();
    still.extend(
        edit.new_tables
            .iter()
            .flat_map(|(_, t)| t.nvm_refs.iter().map(|r| r.object)),
    );
    let mut dead = Vec::new();
    for (_, t) in base.all_tables().filter(|(_, t)| deleted.contains(&t.id)) {
        for r in &t.nvm_refs {
            if still.contains(&r.object)
                || edit.deleted_nvm_objects.contains(&r.object)
                || dead.iter().any(|o: &NvmObject| o.id == r.object)
            {
                continue;
            }
            if let Some(o) = base.nvm_objects.get(&r.object) {
                edit.deleted_nvm_objects.push(o.id);
                dead.push(*o);
            }
        }
    }
    dead
}

/// NVM objects as `#id [offset+len]`, for the info log.
fn show_objects(objects: &[NvmObject]) -> String {
    let v: Vec<String> = objects
        .iter()
        .map(|o| format!("#{} [{}+{}]", o.id, o.offset, o.len))
        .collect();
    v.join(", ")
}

impl NvmRecorder for DbInner {
    fn record(&self, objects: &[NvmObject]) -> Result<()> {
        let edit = VersionEdit {
            new_nvm_objects: objects.to_vec(),
            ..VersionEdit::default()
        };
        let r = self.log_and_apply(edit, None, &[]);
        self.info_log.log(format_args!(
            "NVM objects {} recorded for a compaction's output{}",
            show_objects(objects),
            if r.is_ok() {
                ""
            } else {
                " (manifest write failed)"
            }
        ));
        r
    }

    fn forget(&self, objects: &[NvmObject]) {
        let edit = VersionEdit {
            deleted_nvm_objects: objects.iter().map(|o| o.id).collect(),
            ..VersionEdit::default()
        };
        let r = self.log_and_apply(edit, None, &[]);
        self.info_log.log(format_args!(
            "NVM objects {} of a failed compaction {}",
            show_objects(objects),
            if r.is_ok() {
                "released"
            } else {
                "left for recovery (manifest write failed)"
            }
        ));
        if r.is_ok() {
            self.storage.free_nvm(objects);
        }
    }
}
