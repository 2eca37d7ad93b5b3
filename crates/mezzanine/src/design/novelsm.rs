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
use crate::memtable::nvm_list::{NvmList, room_needed};
use crate::options::{NvmMemtable, Options, RecoveryMode};
use crate::stats::StatsCollector;
use crate::storage::nvm::NvmObjectKind;
use crate::version::VersionEdit;

use super::{Host, MemtableDesign, NextActive};

/// NoveLSM's memtable choices, from `Options::nvm_memtable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NvmMemtables {
    mode: NvmMemtable,
    /// `Options::nvm_memtable_large_entry` (0: off).
    large_entry: usize,
}

impl NvmMemtables {
    /// The design, when the options keep memtables in NVM.
    pub(crate) fn for_options(opts: &Options) -> Option<Self> {
        (opts.nvm_memtable != NvmMemtable::Off).then_some(NvmMemtables {
            mode: opts.nvm_memtable,
            large_entry: opts.nvm_memtable_large_entry,
        })
    }

    /// Whether the entries of `mem` averaged at least `large_entry` bytes (with their
    /// bookkeeping, as `MemTable::approximate_memory_usage` counts them). A memtable that
    /// counts no entry says nothing of them: false. The count is read once: a memtable
    /// taking its first insert meanwhile may already look non-empty (its entry linked)
    /// while it still counts none (its count raised after the link).
    fn holds_large_entries(&self, mem: &MemTable) -> bool {
        let entries = mem.len();
        if self.large_entry == 0 || entries == 0 {
            return false;
        }
        mem.approximate_memory_usage() / entries >= self.large_entry
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
                let Some(m) = new_nvm_memtable(host, number, None)? else {
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

/// A new, empty NVM memtable numbered `number`, recorded in the manifest; `None` when the
/// pool has no room for one (or the database has no NVM tier). `follows`: the number of the
/// active memtable (and of its WAL) when the new one becomes the active memtable after it
/// (a receiver takes no writes: `None`).
///
/// A memtable that follows one takes writes before the WALs older than it are durable
/// under the default recovery mode, which ends at a WAL that lost its tail and drops such a
/// memtable after it: it carries the deferred mark (see the engine's write path, which
/// logs no group for an NVM memtable), and the directory entry of the WAL it follows is
/// made durable first, so that after a power cut recovery finds that WAL and sees whether
/// it lost its tail. Under `AbsoluteConsistency` (or `paranoid_checks`) a lost tail is an
/// error on open, so it is not marked and its writes wait for the older WALs, as every
/// `sync` write does.
fn new_nvm_memtable(
    host: &dyn Host,
    number: u64,
    follows: Option<u64>,
) -> Result<Option<MemTable>> {
    let Some(tier) = host.storage().nvm() else {
        return Ok(None);
    };
    let opts = host.opts();
    let follows =
        follows.filter(|_| opts.recovery_mode_in_force() == RecoveryMode::TolerateCorruptTail);
    if let Some(wal) = follows {
        host.make_wal_entries_durable(wal)?;
    }
    let deferred = follows.is_some();
    let len = opts.nvm_memtable_len();
    let Ok(obj) = tier.alloc(number, NvmObjectKind::Memtable, len) else {
        return Ok(None);
    };
    // Initialised first (its extent goes back to the pool if that fails), then recorded.
    let list = match NvmList::create(tier, obj, deferred, &opts.key_order()) {
        Ok(l) => l,
        Err(e) => {
            tier.free(&obj);
            return Err(e);
        }
    };
    host.record_nvm_object(obj)?;
    Ok(Some(MemTable::nvm_new(number, list)))
}

impl MemtableDesign for NvmMemtables {
    fn new_memtable(
        &self,
        host: &dyn Host,
        number: u64,
        follows: Option<u64>,
    ) -> Result<Option<MemTable>> {
        new_nvm_memtable(host, number, follows)
    }

    /// Under `immutable`, NVM memtables older than every WAL memtable go below them as
    /// full ones waiting for their flush (the shape that mode keeps).
    fn seals_recovered_nvm_memtables(&self) -> bool {
        self.mode == NvmMemtable::Immutable
    }

    /// NVM memtables: a mutable one's writes wait for no WAL, so the WALs before it are
    /// synced as soon as possible.
    fn syncs_wals_ahead(&self) -> bool {
        true
    }

    /// Under `mutable`, a DRAM memtable hands over to an NVM one and an NVM one to a DRAM
    /// one; under `overflow`, a DRAM memtable to an NVM one when a new DRAM one would
    /// wait for a flush, or when its entries were large (`nvm_memtable_large_entry`);
    /// under `immutable`, always DRAM.
    fn next_active(&self, full: &MemTable, dram_full: bool) -> NextActive {
        if full.is_nvm() {
            return NextActive::Dram;
        }
        match self.mode {
            NvmMemtable::Mutable => NextActive::NvmIfRoom,
            NvmMemtable::Overflow if dram_full => NextActive::NvmIfRoom,
            NvmMemtable::Overflow if self.holds_large_entries(full) => NextActive::NvmIfAmpleRoom,
            _ => NextActive::Dram,
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
        let dram = MemTable::new(1, 64 << 20, mezz_format::KeyOrder::default());
        let mutable = NvmMemtables::for_options(&with_mode(NvmMemtable::Mutable)).unwrap();
        assert_eq!(mutable.next_active(&dram, false), NextActive::NvmIfRoom);
        assert!(!mutable.merges_into_nvm(&dram));
        let immutable = NvmMemtables::for_options(&with_mode(NvmMemtable::Immutable)).unwrap();
        assert_eq!(immutable.next_active(&dram, true), NextActive::Dram);
        assert!(immutable.merges_into_nvm(&dram));
        assert!(immutable.keeps_recovered_memtables(false));
        assert!(NvmMemtables::for_options(&with_mode(NvmMemtable::Off)).is_none());
        let off = memtable_design(&with_mode(NvmMemtable::Off));
        assert_eq!(off.next_active(&dram, true), NextActive::Dram);
        assert!(!off.keeps_recovered_memtables(false));
        assert!(off.keeps_recovered_memtables(true));
    }

    #[test]
    fn overflow_goes_to_nvm_only_when_the_dram_memtables_are_taken() {
        let dram = MemTable::new(1, 64 << 20, mezz_format::KeyOrder::default());
        let overflow = NvmMemtables::for_options(&with_mode(NvmMemtable::Overflow)).unwrap();
        assert_eq!(overflow.next_active(&dram, true), NextActive::NvmIfRoom);
        assert_eq!(overflow.next_active(&dram, false), NextActive::Dram);
        assert!(!overflow.merges_into_nvm(&dram));
        let mutable = NvmMemtables::for_options(&with_mode(NvmMemtable::Mutable)).unwrap();
        assert_eq!(mutable.next_active(&dram, true), NextActive::NvmIfRoom);
    }

    /// Entries averaging `nvm_memtable_large_entry` bytes or more hand over to an NVM
    /// memtable under `overflow` with DRAM memtables free; smaller ones, an empty memtable
    /// or the rule turned off (0) do not.
    #[test]
    fn overflow_hands_large_entries_to_nvm() {
        let order = mezz_format::KeyOrder::default();
        let fill = |value_len: usize| {
            let m = MemTable::new(1, 64 << 20, order.clone());
            for i in 0..100u64 {
                m.add(
                    i + 1,
                    mezz_format::ValueKind::Value,
                    &i.to_be_bytes(),
                    &vec![7u8; value_len],
                )
                .unwrap();
            }
            m
        };
        let overflow = NvmMemtables::for_options(&Options {
            nvm_memtable_large_entry: 2 << 10,
            ..with_mode(NvmMemtable::Overflow)
        })
        .unwrap();
        assert_eq!(
            overflow.next_active(&fill(4096), false),
            NextActive::NvmIfAmpleRoom
        );
        assert_eq!(
            overflow.next_active(&fill(2048), false),
            NextActive::NvmIfAmpleRoom
        );
        // With the DRAM memtables all taken, the hand-over spares the writers a wait.
        assert_eq!(
            overflow.next_active(&fill(4096), true),
            NextActive::NvmIfRoom
        );
        assert_eq!(overflow.next_active(&fill(1000), false), NextActive::Dram);
        assert_eq!(overflow.next_active(&fill(100), false), NextActive::Dram);
        let empty = MemTable::new(1, 64 << 20, order.clone());
        assert_eq!(overflow.next_active(&empty, false), NextActive::Dram);
        // Off by default.
        let off = NvmMemtables::for_options(&with_mode(NvmMemtable::Overflow)).unwrap();
        assert_eq!(off.next_active(&fill(4096), false), NextActive::Dram);
        assert_eq!(off.next_active(&fill(4096), true), NextActive::NvmIfRoom);
        // The rule is `overflow`'s: `immutable` never makes an active NVM memtable.
        let immutable = NvmMemtables::for_options(&Options {
            nvm_memtable_large_entry: 2 << 10,
            ..with_mode(NvmMemtable::Immutable)
        })
        .unwrap();
        assert_eq!(immutable.next_active(&fill(4096), false), NextActive::Dram);
    }
}
