//! NoveLSM: memtables in NVM (option `nvm_memtable`). `immutable`: full DRAM memtables are
//! merged, entry by entry (no serialisation), into an NVM memtable (the receiver) below
//! them, which goes to L0 when full; `mutable`: every other active memtable is an NVM one,
//! written in place with no WAL. Both are mapped back at open instead of replayed.
//!
//! Components: [`NvmMemtables`], the memtable design of both modes. The NVM memtable's
//! format is `memtable::nvm_list`; the memtable set (`state::set`) keeps the receiver and
//! the sealed NVM memtables in read order.
//!
//! Thread-safety: stateless beyond its mode; `absorb` runs on the flush job (one at a
//! time), the only one that moves memtables.

use std::sync::Arc;
use std::time::Instant;

use crate::error::Result;
use crate::memtable::MemTable;
use crate::memtable::nvm_list::room_needed;
use crate::options::{NvmMemtable, Options};
use crate::stats::StatsCollector;
use crate::version::VersionEdit;

use super::{Host, MemtableDesign, NextActive};

/// NoveLSM's memtable choices, from `Options::nvm_memtable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NvmMemtables {
    mode: NvmMemtable,
}

impl NvmMemtables {
    /// The design, when the options keep memtables in NVM.
    pub(crate) fn for_options(opts: &Options) -> Option<Self> {
        (opts.nvm_memtable != NvmMemtable::Off).then_some(NvmMemtables {
            mode: opts.nvm_memtable,
        })
    }

    /// Whether the immutable memtable `imm` is merged into the NVM receiver (`immutable`
    /// mode, a DRAM memtable) rather than written to an L0 table.
    fn merges_into_nvm(&self, imm: &MemTable) -> bool {
        self.mode == NvmMemtable::Immutable && !imm.is_nvm()
    }

    /// `immutable`: merges the DRAM memtable `imm` into the NVM receiver, then records the
    /// flush (its WAL becomes obsolete). Seals a receiver without room and starts a new one.
    /// Returns false (nothing done) when no NVM memtable can take `imm`: the flush targets
    /// write it instead.
    fn merge_into_nvm(&self, host: &dyn Host, imm: &Arc<MemTable>, start: Instant) -> Result<bool> {
        let need = room_needed(imm.len(), imm.approximate_memory_usage());
        if need + 4096 > host.opts().nvm_memtable_size {
            return Ok(false);
        }
        let mut current = None;
        host.with_memtables(&mut |mems| current = mems.receiver().cloned());
        let recv = match current {
            Some(r) if r.room() >= need => r,
            _ => {
                let number = host.new_file_number();
                // Not deferred: a receiver takes only memtables whose WALs are durable.
                let Some(m) = host.new_nvm_memtable(number, None)? else {
                    return Ok(false);
                };
                let m = Arc::new(m);
                host.update_memtables(&mut |mems| {
                    mems.replace_receiver(Arc::clone(&m));
                    true
                });
                m
            }
        };
        let Some(list) = recv.nvm_list() else {
            return Ok(false);
        };
        list.reserve((imm.min_seq(), imm.max_seq()))?;
        list.begin_merge();
        let mut it = imm.iter();
        it.seek_to_first();
        while it.valid() {
            recv.add_merged(it.key(), it.value())?;
            it.next();
        }
        it.status()?;
        drop(it);
        list.sync()?;
        // The receiver's range grows in the same step that retires `imm`: the two never
        // both appear to hold the merged sequence numbers.
        host.install(VersionEdit::default(), Some(imm.id()), &mut |_| {
            recv.note_external_insert(list);
        })?;
        host.retire_wal(imm.id());
        let s = host.stats();
        StatsCollector::add(&s.flushes, 1);
        StatsCollector::add(&s.flush_micros, start.elapsed().as_micros() as u64);
        host.purge_obsolete();
        Ok(true)
    }
}

impl MemtableDesign for NvmMemtables {
    /// Under `mutable`, a DRAM memtable hands over to an NVM one and an NVM one to a DRAM
    /// one; under `immutable`, always DRAM.
    fn next_active(&self, full: &MemTable) -> NextActive {
        if self.mode == NvmMemtable::Mutable && !full.is_nvm() {
            NextActive::NvmIfRoom
        } else {
            NextActive::Dram
        }
    }

    /// Under `immutable`, a DRAM memtable is merged into the NVM receiver.
    fn absorb(&self, host: &dyn Host, imm: &Arc<MemTable>, start: Instant) -> Result<bool> {
        if self.merges_into_nvm(imm) {
            return self.merge_into_nvm(host, imm, start);
        }
        Ok(false)
    }

    /// Recovered WAL memtables stay memtables: they stay above the NVM ones.
    fn keeps_recovered_memtables(&self, _nvm_memtables_recovered: bool) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::memtable_design;

    fn with_mode(mode: NvmMemtable) -> Options {
        Options {
            nvm_memtable: mode,
            ..Options::default()
        }
    }

    #[test]
    fn novelsm_choices_follow_the_mode() {
        let dram = MemTable::new(1, 64 << 20);
        let mutable = NvmMemtables::for_options(&with_mode(NvmMemtable::Mutable)).unwrap();
        assert_eq!(mutable.next_active(&dram), NextActive::NvmIfRoom);
        assert!(!mutable.merges_into_nvm(&dram));
        let immutable = NvmMemtables::for_options(&with_mode(NvmMemtable::Immutable)).unwrap();
        assert_eq!(immutable.next_active(&dram), NextActive::Dram);
        assert!(immutable.merges_into_nvm(&dram));
        assert!(immutable.keeps_recovered_memtables(false));
        assert!(NvmMemtables::for_options(&with_mode(NvmMemtable::Off)).is_none());
        let off = memtable_design(&with_mode(NvmMemtable::Off));
        assert_eq!(off.next_active(&dram), NextActive::Dram);
        assert!(!off.keeps_recovered_memtables(false));
        assert!(off.keeps_recovered_memtables(true));
    }
}
