//! A sink that writes NVM tables while the pool has room for another one, then SSTs.
//!
//! Owns: [`SpillSink`], the output of a merge under a tiering that allows SSTs (every
//! tiering but `none`). A leveled merge into a large level has many inputs: the SST ones
//! are copied into NVM, so the whole merge rarely fits beside what the pool already holds.
//! Deciding the tier for the whole merge at its start then writes all of it to SSTs, and
//! the NVM share of the data falls to what small merges keep there. This sink decides at
//! each cut between output tables instead: the first tables go to NVM while another table
//! of `target_file_size` still fits beside the reserve of the NVM WALs and memtables, the
//! rest to SSTs.
//!
//! Invariants:
//! - Outputs are in key order: every NVM table precedes every SST (the switch happens once,
//!   at a cut between tables, and never back).
//! - A resumable merge (NVM outputs recorded as they are written) stays correct across a
//!   crash: its recorded NVM tables are a prefix of its output, so recovery resumes after
//!   their last key; the SSTs written after the switch are not named by any edit and are
//!   removed as orphans at open.
//! - `abandon` removes the tables of both sinks; `finish` makes both durable and returns
//!   the NVM tables, then the SSTs.
//!
//! Thread-safety: one job on one thread, as every sink.

use std::sync::Arc;

use mezz_format::EntryRef;

use crate::compaction::nvm_sink::NvmSink;
use crate::compaction::sink::{SstSink, TableSink, WrittenTable};
use crate::error::Result;
use crate::storage::nvm::NvmTier;

/// NVM tables first, SSTs once the pool has no room for another table. See the module
/// documentation.
pub struct SpillSink<'a, F: FnMut() -> SstSink<'a>> {
    tier: &'a Arc<NvmTier>,
    nvm: NvmSink<'a>,
    /// Makes the SST sink when the merge spills (the SST placement of a job starts then).
    make_sst: F,
    sst: Option<SstSink<'a>>,
}

impl<'a, F: FnMut() -> SstSink<'a>> SpillSink<'a, F> {
    /// A sink writing `nvm`'s tables while `tier` has room for one more like the last,
    /// then the SSTs of the sink `make_sst` makes.
    pub fn new(tier: &'a Arc<NvmTier>, nvm: NvmSink<'a>, make_sst: F) -> Self {
        Self {
            tier,
            nvm,
            make_sst,
            sst: None,
        }
    }

    fn active(&mut self) -> &mut dyn TableSink {
        match self.sst.as_mut() {
            Some(s) => s,
            None => &mut self.nvm,
        }
    }
}

impl<'a, F: FnMut() -> SstSink<'a>> TableSink for SpillSink<'a, F> {
    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.active().add(key, value)
    }

    fn add_located(&mut self, key: &[u8], value: &[u8], at: Option<EntryRef>) -> Result<()> {
        self.active().add_located(key, value, at)
    }

    fn add_keyset_block(&mut self, contents: &[u8]) -> Result<bool> {
        self.active().add_keyset_block(contents)
    }

    fn current_bytes(&self) -> Option<u64> {
        match &self.sst {
            Some(s) => s.current_bytes(),
            None => self.nvm.current_bytes(),
        }
    }

    fn finish_table(&mut self) -> Result<()> {
        if let Some(s) = self.sst.as_mut() {
            return s.finish_table();
        }
        let like_last = self.nvm.current_room_needed();
        self.nvm.finish_table()?;
        if !self.tier.has_room_for_tables(like_last) {
            self.sst = Some((self.make_sst)());
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Vec<WrittenTable>> {
        // The NVM sink's one fallible step first (its open table), then the SSTs: when
        // either fails, both sinks still hold what they wrote and `abandon` removes it.
        self.nvm.finish_table()?;
        let ssts = match self.sst.as_mut() {
            Some(s) => s.finish()?,
            None => Vec::new(),
        };
        let mut out = self.nvm.finish()?;
        out.extend(ssts);
        Ok(out)
    }

    fn abandon(&mut self) {
        if let Some(s) = self.sst.as_mut() {
            s.abandon();
        }
        self.nvm.abandon();
    }
}
