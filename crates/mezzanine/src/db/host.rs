//! The database handle as the host of the designs' components (`design::Host`): the
//! services a flush target or memtable design calls back into, each a thin wrapper over
//! the engine's own method.
//!
//! Invariant: a service takes the locks its engine method takes, in the engine's order
//! (`install` the `manifest` then the `state` lock; the memtable-set accessors the `state`
//! lock alone), so a component never holds one across a call.
//!
//! Thread-safety: `DbInner` is `Sync`; components call these from the flush job and from
//! open.

use std::sync::Arc;

use mezz_format::SeqNo;

use crate::compaction::nvm_sink::NvmRecorder;
use crate::design::Host;
use crate::error::Result;
use crate::options::Options;
use crate::placement::Placement;
use crate::state::{MemtableSet, SuperVersion};
use crate::stats::StatsCollector;
use crate::storage::Storage;
use crate::storage::nvm::NvmObject;
use crate::table::cache::TableCache;
use crate::table::{Table, TableMeta};
use crate::version::VersionEdit;

use super::DbInner;

impl Host for DbInner {
    fn opts(&self) -> &Options {
        &self.opts
    }

    fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    fn stats(&self) -> &StatsCollector {
        &self.stats
    }

    fn log(&self, msg: std::fmt::Arguments<'_>) {
        self.info_log.log(msg);
    }

    fn placement(&self) -> &dyn Placement {
        self.placement.as_ref()
    }

    fn new_file_number(&self) -> u64 {
        DbInner::new_file_number(self)
    }

    fn snapshots(&self) -> Vec<SeqNo> {
        self.versions.snapshots.list()
    }

    fn current(&self) -> Arc<SuperVersion> {
        self.versions.super_version.load_full()
    }

    fn table_cache(&self) -> &Arc<TableCache> {
        &self.table_cache
    }

    fn recorder(&self) -> &dyn NvmRecorder {
        self
    }

    fn open_table(&self, meta: &TableMeta) -> Result<Arc<dyn Table>> {
        self.table_cache.open(meta)
    }

    fn compaction_pending(&self) -> bool {
        let st = self.jobs.state.lock();
        DbInner::compaction_pending(self, &st)
    }

    fn install(
        &self,
        edit: VersionEdit,
        flushed: Option<u64>,
        on_install: &mut dyn FnMut(&mut MemtableSet),
    ) -> Result<()> {
        self.log_and_apply_ext(edit, flushed, &[], &mut |st| on_install(&mut st.mems))
    }

    fn update_memtables(&self, change: &mut dyn FnMut(&mut MemtableSet) -> bool) {
        let mut st = self.jobs.state.lock();
        if change(&mut st.mems) {
            self.install_super_version(&mut st);
            drop(st);
            self.jobs.bg_cv.notify_all();
        }
    }

    fn with_memtables(&self, read: &mut dyn FnMut(&MemtableSet)) {
        read(&self.jobs.state.lock().mems);
    }

    fn record_nvm_object(&self, obj: NvmObject) -> Result<()> {
        let edit = VersionEdit {
            new_nvm_objects: vec![obj],
            ..VersionEdit::default()
        };
        self.log_and_apply(edit, None, &[])
    }

    fn make_wal_entries_durable(&self, number: u64) -> Result<()> {
        DbInner::make_wal_entries_durable(self, number)
    }

    fn retire_wal(&self, id: u64) {
        self.remove_wal_file(id);
    }

    fn purge_obsolete(&self) {
        DbInner::purge_obsolete(self);
    }
}
