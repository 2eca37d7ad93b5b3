//! Recovery of NVM tables at open (TLSM Algorithm 3): what a crash left half done.
//!
//! Owns: [`recover`], the TLSM component's step of the engine's open. The manifest lists every NVM object the engine
//! uses. An object of NVM tables that no table of the recovered version references was
//! being written when the process stopped:
//! - a flush's or a rewrite's objects are never recorded before their table is installed,
//!   so none is left over (the flush is redone from the WAL, the rewrite planned again);
//! - a compaction records each output's objects before writing them. If every input of
//!   that compaction is still in the version, the compaction resumes: complete outputs are
//!   kept, the last one is sealed after its last durable entry, and the merge continues
//!   after the last key they hold; one edit then installs all outputs and retires the
//!   inputs. Otherwise (inputs gone, a damaged header) the objects are dropped. Only a
//!   chain is kept: outputs in id order, each after the one before in key order, none
//!   after an incomplete or dropped one; outputs that overlap were not written by one run,
//!   so none of them is kept and the compaction runs again from its start.
//! - an object whose header names another table was recorded and given an extent that
//!   still held a freed table's header; its own header never became durable, so nothing
//!   of it was written: it is dropped (resuming from the old header would take a freed
//!   table for an output of its inputs).
//!
//! Cost: the headers of the left-over objects, the entries of the kept outputs (to rebuild
//! their metadata) and the rest of the interrupted merge; never a scan of the other NVM
//! tables.
//!
//! Thread-safety: runs during open, before any background thread starts; reaches the
//! engine through [`Host`].

use std::collections::BTreeMap;
use std::sync::Arc;

use mezz_format::InternalIterator;
use mezz_nvtable::ptable::{PTable, PTableBuilder, PTableIter};
use mezz_pmem::Extent;

use crate::compaction::nvm_sink::NvmMetaBuilder;
use crate::compaction::{
    CompactionContext, CompactionPlan, CompactionReason, WrittenTable, resume_compaction,
};
use crate::error::Result;
use crate::storage::nvm::{NvmObject, NvmObjectKind, NvmTier};
use crate::table::TableMeta;
use crate::version::VersionEdit;

use super::Host;

/// Rebuilds the metadata of output table `obj` (complete) by reading its entries.
fn kept_meta(
    tier: &NvmTier,
    obj: &NvmObject,
    sources: &[NvmObject],
    created_buffers: &[u64],
    order: &mezz_format::KeyOrder,
) -> Result<Option<WrittenTable>> {
    let data: Vec<Extent> = sources
        .iter()
        .filter(|o| o.id != obj.id)
        .map(NvmObject::extent)
        .collect();
    let t = Arc::new(PTable::open(
        Arc::clone(tier.region()),
        obj.extent(),
        &data,
        order,
    )?);
    let mut it = PTableIter::new(Arc::clone(&t));
    it.seek_to_first();
    let mut meta = NvmMetaBuilder::default();
    while it.valid() {
        let (k, vlen) = (it.key(), it.value().len());
        // The table opened with `sources` as its extents, so every reference is in one.
        let r = it.entry_ref().ok_or_else(|| {
            crate::error::Error::corruption(obj.offset, "NVM table entry without a reference")
        })?;
        let o = sources
            .iter()
            .find(|o| r.block >= o.offset && r.block < o.offset + o.len)
            .ok_or_else(|| {
                crate::error::Error::corruption(r.block, "NVM entry outside the table's objects")
            })?;
        meta.add(k, vlen, o.id, o.kind == NvmObjectKind::TableIndex);
        it.next();
    }
    it.status()?;
    Ok(meta
        .finish(obj.id, |o| created_buffers.contains(&o))
        .map(|meta| WrittenTable {
            meta,
            encode_nanos: 0,
            data_bytes: 0,
            bytes_written: 0,
            objects: Vec::new(),
            copied_block_bytes: 0,
        }))
}

/// A table as `#id Ln [smallest..largest]` (user keys, escaped), for errors.
fn show_table(level: usize, t: &TableMeta) -> String {
    format!(
        "#{} L{level} [{}..{}]",
        t.id,
        t.smallest_user_key().escape_ascii(),
        t.largest_user_key().escape_ascii()
    )
}

/// The inputs and outputs of a resumed compaction (kept outputs marked), for the error of
/// an edit that does not apply.
fn describe_resume(plan: &CompactionPlan, edit: &VersionEdit, kept: &[u64]) -> String {
    let inputs: Vec<String> = plan
        .inputs
        .iter()
        .map(|t| show_table(plan.level, t))
        .chain(
            plan.next_inputs
                .iter()
                .map(|t| show_table(plan.output_level, t)),
        )
        .collect();
    let outputs: Vec<String> = edit
        .new_tables
        .iter()
        .map(|(l, t)| {
            let mark = if kept.contains(&t.id) { " kept" } else { "" };
            format!("{}{mark}", show_table(*l, t))
        })
        .collect();
    format!(
        "inputs {}; outputs {}",
        inputs.join(", "),
        outputs.join(", ")
    )
}

/// See the module documentation. Runs at every open with an NVM tier (tables of an earlier
/// open's options may be there whatever this open's options are).
///
/// # Errors
/// Manifest writes and reads of the interrupted compaction's inputs.
pub(crate) fn recover(host: &dyn Host) -> Result<()> {
    {
        let Some(tier) = host.storage().nvm().cloned() else {
            return Ok(());
        };
        let version = Arc::clone(&host.current().version);
        let order = host.storage().order().clone();
        let bloom_bits = if order.filters_allowed() {
            host.opts().bloom_bits_per_key
        } else {
            0
        };
        let referenced: std::collections::HashSet<u64> = version
            .all_tables()
            .flat_map(|(_, t)| t.nvm_refs.iter().map(|r| r.object))
            .collect();
        let orphans: Vec<NvmObject> = version
            .nvm_objects
            .values()
            .filter(|o| {
                matches!(
                    o.kind,
                    NvmObjectKind::TableIndex | NvmObjectKind::TableBuffer
                ) && !referenced.contains(&o.id)
            })
            .copied()
            .collect();
        if orphans.is_empty() {
            return Ok(());
        }
        let tables: BTreeMap<u64, (usize, Arc<TableMeta>)> = version
            .all_tables()
            .map(|(l, t)| (t.id, (l, Arc::clone(t))))
            .collect();
        // Interrupted compactions, by their input sets.
        let mut groups: BTreeMap<Vec<u64>, (u32, Vec<NvmObject>)> = BTreeMap::new();
        let mut drop_objs: Vec<NvmObject> = Vec::new();
        let buffers: Vec<NvmObject> = orphans
            .iter()
            .filter(|o| o.kind == NvmObjectKind::TableBuffer)
            .copied()
            .collect();
        for o in orphans
            .iter()
            .filter(|o| o.kind == NvmObjectKind::TableIndex)
        {
            match mezz_nvtable::ptable::read_header(tier.region(), o.extent()) {
                // A header naming another id is an older object's, left in an extent
                // that was freed and given to this one, whose own header never became
                // durable: nothing of this object was written.
                Ok(h) if h.id != o.id => {
                    host.log(format_args!(
                        "recovery: NVM object #{} [{}+{}] holds the header of #{}: dropped",
                        o.id, o.offset, o.len, h.id
                    ));
                    drop_objs.push(*o);
                }
                Ok(h)
                    if h.kind == 1
                        && !h.inputs.is_empty()
                        && h.inputs.iter().all(|id| tables.contains_key(id)) =>
                {
                    let mut key = h.inputs.clone();
                    key.sort_unstable();
                    groups
                        .entry(key)
                        .or_insert((h.level, Vec::new()))
                        .1
                        .push(*o);
                }
                Ok(h) => {
                    host.log(format_args!(
                        "recovery: NVM object #{} [{}+{}] (kind {}, inputs {:?}) is not an \
                         output of a resumable compaction: dropped",
                        o.id, o.offset, o.len, h.kind, h.inputs
                    ));
                    drop_objs.push(*o);
                }
                Err(e) => {
                    host.log(format_args!(
                        "recovery: NVM object #{} [{}+{}] has no valid header ({e}): dropped",
                        o.id, o.offset, o.len
                    ));
                    drop_objs.push(*o);
                }
            }
        }
        let mut used_buffers: Vec<u64> = Vec::new();
        let buffer_ids: Vec<u64> = buffers.iter().map(|b| b.id).collect();
        for (inputs, (out_level, mut outs)) in groups {
            outs.sort_by_key(|o| o.id);
            let out_level = out_level as usize;
            let mut plan = CompactionPlan {
                level: out_level,
                output_level: out_level,
                inputs: Vec::new(),
                next_inputs: Vec::new(),
                grandparents: Vec::new(),
                trivial_move: false,
                score: 1.0,
                reason: CompactionReason::LevelSize,
            };
            for id in &inputs {
                if let Some((l, t)) = tables.get(id) {
                    if *l < out_level {
                        plan.level = *l;
                        plan.inputs.push(Arc::clone(t));
                    } else {
                        plan.next_inputs.push(Arc::clone(t));
                    }
                }
            }
            if plan.inputs.is_empty() {
                plan.inputs = std::mem::take(&mut plan.next_inputs);
            }
            // A level's tables are read as one sorted run: in key order, as planned.
            let by_key = |a: &Arc<TableMeta>, b: &Arc<TableMeta>| {
                order.compare_internal(&a.smallest, &b.smallest)
            };
            if plan.level > 0 {
                plan.inputs.sort_by(by_key);
            }
            plan.next_inputs.sort_by(by_key);
            // The objects the outputs may point into.
            let mut sources: Vec<NvmObject> = plan
                .all_inputs()
                .flat_map(|t| {
                    t.nvm_refs
                        .iter()
                        .filter_map(|r| version.nvm_objects.get(&r.object))
                })
                .copied()
                .collect();
            sources.extend(buffers.iter().copied());
            sources.extend(outs.iter().copied());
            let mut kept = Vec::new();
            let mut kept_objs: Vec<NvmObject> = Vec::new();
            let mut group_buffers: Vec<u64> = Vec::new();
            // One run writes its outputs one after another, in key order, each complete
            // before the next is recorded: what was kept must be such a chain. Past a
            // dropped or incomplete output nothing is kept (it would not continue the
            // kept prefix); outputs that overlap were not written by one run, and none of
            // them is kept (the compaction runs again from its start; its inputs are all
            // in the version).
            let mut cut = false;
            for o in &outs {
                if cut {
                    host.log(format_args!(
                        "recovery: output #{} of the compaction of {inputs:?} follows a \
                         dropped or incomplete one: dropped",
                        o.id
                    ));
                    drop_objs.push(*o);
                    continue;
                }
                let data: Vec<Extent> = sources
                    .iter()
                    .filter(|s| s.id != o.id)
                    .map(NvmObject::extent)
                    .collect();
                let mut state = "complete";
                if PTable::open(Arc::clone(tier.region()), o.extent(), &data, &order).is_err() {
                    // Incomplete: keep its durable prefix.
                    match PTableBuilder::resume(
                        Arc::clone(tier.region()),
                        o.extent(),
                        &data,
                        bloom_bits,
                        &order,
                    ) {
                        Ok((b, _)) => {
                            b.finish()?;
                            state = "sealed after its durable prefix";
                            cut = true;
                        }
                        Err(e) => {
                            host.log(format_args!(
                                "recovery: output #{} of the compaction of {inputs:?} cannot \
                                 be resumed ({e}): dropped",
                                o.id
                            ));
                            drop_objs.push(*o);
                            cut = true;
                            continue;
                        }
                    }
                }
                match kept_meta(&tier, o, &sources, &buffer_ids, &order) {
                    Ok(Some(w))
                        if kept.last().is_some_and(|p: &WrittenTable| {
                            order
                                .compare_internal(&p.meta.largest, &w.meta.smallest)
                                .is_ge()
                        }) =>
                    {
                        host.log(format_args!(
                            "recovery: output #{} of the compaction of {inputs:?} overlaps the \
                             output before it: no output is kept, the compaction runs again",
                            o.id
                        ));
                        drop_objs.push(*o);
                        drop_objs.append(&mut kept_objs);
                        kept.clear();
                        group_buffers.clear();
                        cut = true;
                    }
                    Ok(Some(w)) => {
                        host.log(format_args!(
                            "recovery: output {} [{}+{}] of the compaction of {inputs:?} kept \
                             ({state})",
                            show_table(out_level, &w.meta),
                            o.offset,
                            o.len
                        ));
                        for r in &w.meta.nvm_refs {
                            if buffers.iter().any(|b| b.id == r.object) {
                                group_buffers.push(r.object);
                            }
                        }
                        kept.push(w);
                        kept_objs.push(*o);
                    }
                    other => {
                        host.log(format_args!(
                            "recovery: output #{} of the compaction of {inputs:?} is empty or \
                             unreadable ({:?}): dropped",
                            o.id,
                            other.err()
                        ));
                        drop_objs.push(*o);
                        cut = true;
                    }
                }
            }
            // Outputs are cut between user keys in key order, so the kept ones are a
            // prefix of the merge; resume after the last key they hold.
            let snapshots = Vec::new();
            let new_file = || host.new_file_number();
            let ctx = CompactionContext {
                storage: host.storage(),
                placement: host.placement(),
                opts: host.opts(),
                table_cache: host.table_cache(),
                new_file_number: &new_file,
                snapshots: &snapshots,
                recorder: Some(host.recorder()),
            };
            let resumed = !kept.is_empty();
            let kept_ids: Vec<u64> = kept.iter().map(|w| w.meta.id).collect();
            match resume_compaction(&ctx, &version, &plan, kept) {
                Ok(result) => {
                    let shape = describe_resume(&plan, &result.edit, &kept_ids);
                    host.log(format_args!("recovery: resumed a compaction: {shape}"));
                    host.install(result.edit, None, &mut |_| {}).map_err(|e| {
                        crate::error::Error::Background(format!(
                            "resuming an interrupted compaction: {e} ({shape})"
                        ))
                    })?;
                    used_buffers.extend(group_buffers);
                    if resumed {
                        crate::stats::StatsCollector::add(&host.stats().nvm_resumed_compactions, 1);
                    }
                }
                // The options this open runs under keep more of the pool for NVM WALs and
                // memtables than those the compaction started under: no room to finish it
                // in NVM, and a tiering (`none`) that allows no SSTs (the others finish it
                // in SSTs). Its inputs are all still in the version, so give up the outputs
                // it had written; the compaction runs again later under these options.
                Err(e) if crate::storage::nvm::is_pool_full(&e) => {
                    drop_objs.extend(kept_objs);
                }
                Err(e) => return Err(e),
            }
        }
        drop_objs.extend(
            buffers
                .iter()
                .filter(|b| !used_buffers.contains(&b.id))
                .copied(),
        );
        if !drop_objs.is_empty() {
            let edit = VersionEdit {
                deleted_nvm_objects: drop_objs.iter().map(|o| o.id).collect(),
                ..VersionEdit::default()
            };
            host.install(edit, None, &mut |_| {})?;
            for o in &drop_objs {
                tier.free(o);
            }
        }
        Ok(())
    }
}
