//! TLSM: the upper levels as NVM tables (skip-list indexes over persistent buffers of
//! KeySet blocks), compacted byte-addressably (outputs point at their inputs' entries), with
//! tiering between NVM and SSD (option `nvm_tiering`).
//!
//! Components: a flush writes NVM tables to L0 when L0 is an NVM level ([`NvmTableTarget`];
//! when the pool is full and the tiering allows SSTs, it passes the memtable on to the SST
//! target); the tiering compaction policy; compactions record the NVM objects their outputs
//! point into. Recovery of interrupted NVM compactions runs at open (`db::nvm_recovery`).
//!
//! Thread-safety: stateless components.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::compaction::nvm_sink::{NvmOutput, NvmSink};
use crate::compaction::tiering::TieredPolicy;
use crate::compaction::{CompactionPolicy, write_table};
use crate::error::Result;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::stats::{Stats, StatsCollector};
use crate::storage::Storage;
use crate::storage::nvm::{NvmObjectKind, NvmTier, falls_back_to_ssd};
use crate::version::Version;

use super::leveldb::table_output;
use super::{FlushStep, FlushTarget, Host};

/// A flush writes NVM tables to L0 (L0 is an NVM level).
#[derive(Debug)]
pub(crate) struct NvmTableTarget;

impl NvmTableTarget {
    /// The target, when the options keep L0 in NVM and the database has an NVM tier.
    pub(crate) fn for_options(opts: &Options, storage: &Storage) -> Option<Self> {
        (storage.nvm().is_some() && opts.level_in_nvm(0)).then_some(NvmTableTarget)
    }
}

impl FlushTarget for NvmTableTarget {
    fn write<'a>(
        &'a self,
        host: &'a dyn Host,
        m: &Arc<MemTable>,
        _may_wait: bool,
    ) -> Result<FlushStep<'a>> {
        let Some(tier) = host.storage().nvm() else {
            return Ok(FlushStep::Pass);
        };
        let new_file = || host.new_file_number();
        let snapshots = host.snapshots();
        let out = NvmOutput {
            level: 0,
            inputs: None,
        };
        let mut sink = NvmSink::new(tier, host.opts(), out, &new_file, None, &[]);
        let mut iter = m.iter();
        match write_table(&mut sink, iter.as_mut(), &snapshots, m.order())
            .and_then(|w| iter.status().map(|()| w))
        {
            Ok(w) => Ok(FlushStep::Written(Box::new(table_output(w)))),
            // NVM filled up under a tiering that allows SSTs: the flush writes an SST.
            Err(e) if falls_back_to_ssd(&e, host.opts().nvm_tiering) => Ok(FlushStep::Pass),
            Err(e) => Err(e),
        }
    }
}

/// The tiering policy, when the options tier levels over NVM (`nvm`: the pool, whose room
/// decides when an SST returns into NVM).
pub(crate) fn policy(
    opts: &Options,
    nvm: Option<&Arc<NvmTier>>,
) -> Option<Arc<dyn CompactionPolicy>> {
    records_nvm_refs(opts).then(|| {
        let p = match nvm {
            Some(tier) => {
                let tier = Arc::clone(tier);
                TieredPolicy::with_room(opts, Arc::new(move |b| tier.has_room_for_return(b)))
            }
            None => TieredPolicy::new(opts),
        };
        Arc::new(p) as Arc<dyn CompactionPolicy>
    })
}

/// Whether compactions write NVM tables (and so record the objects they point into).
pub(crate) fn records_nvm_refs(opts: &Options) -> bool {
    opts.nvm_tiering.enabled()
}

/// Fills `s.nvm_tables`: the NVM tables' objects in `v`, their live share, and the
/// tiering's counters.
pub(crate) fn fill_stats(s: &mut Stats, v: &Version, c: &StatsCollector) {
    let live = crate::compaction::tiering::object_live_bytes(v);
    let n = &mut s.nvm_tables;
    for o in v.nvm_objects.values().filter(|o| {
        matches!(
            o.kind,
            NvmObjectKind::TableIndex | NvmObjectKind::TableBuffer
        )
    }) {
        n.objects += 1;
        n.allocated_bytes += o.len;
        let own = v.all_tables().any(|(_, t)| t.id == o.id);
        // The object's share that live tables use, in bytes of the object.
        n.live_bytes += if own {
            o.len
        } else {
            o.live_len(live.get(&o.id).copied().unwrap_or(0))
        };
    }
    n.tier_moves = c.nvm_tier_moves.load(Ordering::Relaxed);
    n.rewrites = c.nvm_rewrites.load(Ordering::Relaxed);
    n.tier_returns = c.nvm_tier_returns.load(Ordering::Relaxed);
    n.resumed_compactions = c.nvm_resumed_compactions.load(Ordering::Relaxed);
    n.moved_block_bytes = c.nvm_moved_block_bytes.load(Ordering::Relaxed);
    n.moved_encoded_bytes = c.nvm_moved_encoded_bytes.load(Ordering::Relaxed);
    n.merges_to_ssd_for_room = c.nvm_merges_to_ssd_for_room.load(Ordering::Relaxed);
    n.bytes_to_ssd_for_room = c.nvm_bytes_to_ssd_for_room.load(Ordering::Relaxed);
    n.nvm_input_bytes_to_ssd = c.nvm_input_bytes_to_ssd.load(Ordering::Relaxed);
}
