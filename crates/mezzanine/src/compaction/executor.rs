//! The compaction executor: runs a plan (a trivial move, or a merge of its input runs into
//! a table sink) and returns the version edit to install.
//!
//! Owns: [`run_compaction`] (the merge loop, shared by every sink), [`trivial_move_edit`],
//! [`CompactionContext`] and [`CompactionResult`].
//!
//! Invariants the merge keeps:
//! - Output tables of one compaction are sorted and never split one user key's versions
//!   across two tables (cuts happen only between user keys).
//! - For each user key it keeps the newest version plus, for every live snapshot, the
//!   newest version visible to it ("stripes" between consecutive snapshots); older
//!   versions inside a stripe are dropped.
//! - A deletion marker is dropped only when it is in the oldest stripe and no level below
//!   the output level can hold the key (nothing older can resurface).
//!
//! Thread-safety: one executor per job, on one background thread; it only reads the
//! shared table cache and writes through its own sink.

use std::sync::Arc;

use mezz_format::KeyOrder;
use mezz_format::ikey::parse_internal_key;
use mezz_format::{InternalIterator, SeqNo, ValueKind};

use crate::compaction::leveled::max_grandparent_overlap;
use crate::compaction::nvm_sink::{NvmOutput, NvmRecorder, NvmSink};
use crate::compaction::policy::CompactionPlan;
use crate::compaction::policy::{CompactionReason, nvm_table_room};
use crate::compaction::sink::{SstSink, TableSink, WrittenTable};
use crate::compaction::spill::SpillSink;
use crate::error::{Error, Result};
use crate::iter::{merging_iterator, run_iterator};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::placement::{JobInfo, Placement};
use crate::storage::Storage;
use crate::storage::nvm::{NvmObject, falls_back_to_ssd};
use crate::table::cache::TableCache;
use crate::table::{TableLocation, TableMeta, TableReadOptions, Tier};
use crate::version::Version;

/// What the executor needs from the engine.
pub struct CompactionContext<'a> {
    /// Where output tables are created.
    pub storage: &'a Arc<Storage>,
    /// Which directory each output table goes to.
    pub placement: &'a dyn Placement,
    /// The options.
    pub opts: &'a Options,
    /// Opens input tables.
    pub table_cache: &'a Arc<TableCache>,
    /// Allocates file numbers for outputs.
    pub new_file_number: &'a (dyn Fn() -> u64 + Sync),
    /// Live snapshot sequence numbers, ascending.
    pub snapshots: &'a [SeqNo],
    /// Records NVM output objects in the manifest before they are written (resumable
    /// compactions); `None` without NVM tables.
    pub recorder: Option<&'a dyn NvmRecorder>,
}

impl std::fmt::Debug for CompactionContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionContext")
            .field("placement", &self.placement)
            .field("snapshots", &self.snapshots)
            .finish_non_exhaustive()
    }
}

/// The result of a compaction: the edit to apply and what it cost.
#[derive(Debug, Clone)]
pub struct CompactionResult {
    /// Deletes the inputs, adds the outputs, moves the compact pointer.
    pub edit: VersionEdit,
    /// Output tables.
    pub outputs: Vec<WrittenTable>,
    /// Bytes of input tables.
    pub bytes_read: u64,
    /// Bytes of output tables.
    pub bytes_written: u64,
}

impl CompactionResult {
    /// For a merge into a level that `opts`' tiering keeps in NVM, which wrote SSTs anyway
    /// (for want of pool room: [`output_tier`] chose SSD, or the merge spilled): the bytes
    /// of those SSTs, and the bytes of its NVM-table inputs they carried out of NVM (a
    /// spilling merge's in proportion to its SST bytes). `None` for other jobs.
    #[must_use]
    pub fn ssd_for_room(&self, opts: &Options, plan: &CompactionPlan) -> Option<(u64, u64)> {
        let nvm = |l: &TableLocation| matches!(l, TableLocation::Nvm { .. });
        if !opts.nvm_tiering.enabled()
            || !opts.level_in_nvm(plan.output_level)
            || plan.reason.keeps_its_table()
        {
            return None;
        }
        let sst: u64 = self
            .outputs
            .iter()
            .filter(|w| !nvm(&w.meta.location))
            .map(|w| w.bytes_written)
            .sum();
        if sst == 0 {
            return None;
        }
        let nvm_in: u64 = plan
            .all_inputs()
            .filter(|t| nvm(&t.location))
            .map(|t| t.size)
            .sum();
        let left = u128::from(nvm_in) * u128::from(sst) / u128::from(self.bytes_written.max(1));
        Some((sst, left as u64))
    }
}

/// Which "stripe" between consecutive snapshots a sequence number falls in: 0 = visible
/// to the oldest snapshot (or no snapshots at all).
fn stripe(snapshots: &[SeqNo], seq: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seq)
}

/// Which versions are hidden, over internal keys in order (user key ascending, newest
/// version first): a version is hidden when a newer version of its user key lies in the
/// same stripe between snapshots (no reader can see it). The rule every merge and flush
/// keeps.
#[derive(Debug, Default)]
pub(crate) struct HiddenVersions {
    /// The order deciding which keys are the same user key.
    order: KeyOrder,
    user_key: Vec<u8>,
    /// The stripe of the previous version of `user_key`; `None` before the first entry.
    last_stripe: Option<usize>,
}

impl HiddenVersions {
    /// No entry seen yet; user keys compared in `order`.
    pub(crate) fn new(order: KeyOrder) -> Self {
        Self {
            order,
            ..Self::default()
        }
    }

    /// Notes the next entry (`user_key` at `seq`, with the live `snapshots` ascending):
    /// whether it starts a new user key, whether it is hidden, and its stripe.
    pub(crate) fn next(
        &mut self,
        snapshots: &[SeqNo],
        user_key: &[u8],
        seq: SeqNo,
    ) -> (bool, bool, usize) {
        let s = stripe(snapshots, seq);
        let new_key = self.last_stripe.is_none() || !self.order.same_user(user_key, &self.user_key);
        if new_key {
            self.user_key.clear();
            self.user_key.extend_from_slice(user_key);
        }
        let hidden = !new_key && self.last_stripe == Some(s);
        self.last_stripe = Some(s);
        (new_key, hidden, s)
    }
}

/// Whether no level below `output_level` may hold `user_key`; `ptrs` are per-level cursors
/// that only move forward (keys arrive in increasing order).
fn is_base_level_for_key(
    version: &Version,
    output_level: usize,
    user_key: &[u8],
    ptrs: &mut [usize],
) -> bool {
    for level in output_level + 1..version.num_levels() {
        let ts = version.tables(level);
        let Some(p) = ptrs.get_mut(level) else {
            return false;
        };
        while let Some(t) = ts.get(*p) {
            if version
                .order
                .compare_user(user_key, t.largest_user_key())
                .is_le()
            {
                if version
                    .order
                    .compare_user(user_key, t.smallest_user_key())
                    .is_ge()
                {
                    return false;
                }
                break;
            }
            *p += 1;
        }
    }
    true
}

/// Builds the edit for a trivial move (no I/O).
#[must_use]
pub fn trivial_move_edit(plan: &CompactionPlan) -> VersionEdit {
    let mut edit = VersionEdit::default();
    for t in &plan.inputs {
        edit.deleted_tables.push((plan.level, t.id));
        edit.new_tables
            .push((plan.output_level, TableMeta::clone(t)));
        edit.compact_pointers.push((plan.level, t.largest.clone()));
    }
    edit
}

/// One iterator over every input of `plan`, in internal-key order (not filling the block
/// cache).
fn input_iterator(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
) -> Result<Box<dyn InternalIterator<Error>>> {
    let ropts = TableReadOptions {
        fill_cache: false,
        verify_checksums: ctx.opts.paranoid_checks,
        whole_table_scan: true,
    };
    let mut children: Vec<Box<dyn InternalIterator<Error>>> = Vec::new();
    for run in version
        .runs_of(plan.level, &plan.inputs)
        .chain(version.runs_of(plan.output_level, &plan.next_inputs))
    {
        children.push(run_iterator(run, ctx.table_cache, ropts)?);
    }
    Ok(merging_iterator(children, &version.order))
}

/// Runs a (non-trivial) compaction: merges the inputs, drops what no reader can see, and
/// writes output tables of about `target_file_size`, cut only between user keys.
///
/// # Errors
/// Corruption / I/O errors from inputs or outputs; output files written so far are removed.
pub fn run_compaction(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
) -> Result<CompactionResult> {
    if plan.reason == CompactionReason::Column {
        // A column writes NVM tables when L1 is an NVM level (the designs composed), else
        // SSTs; it copies only the bytes it takes from the rows.
        let merge = |p: &CompactionPlan, it: &mut dyn InternalIterator<Error>, row_bytes: u64| {
            let outputs = write_outputs(ctx, version, p, Some(row_bytes), |sink| {
                merge_into(ctx, version, p, it, sink, None)
            })?;
            Ok(compaction_result(p, outputs, &version.order))
        };
        return crate::compaction::matrix::run_column(ctx, version, plan, &merge);
    }
    let mut iter = input_iterator(ctx, version, plan)?;
    let outputs = write_outputs(ctx, version, plan, None, |sink| match plan.reason {
        // Both keep the one input table's every entry, at its level.
        CompactionReason::TierMove => move_to_ssd(ctx, plan, iter.as_mut(), sink),
        r if r.copies_into_nvm() => copy_into(iter.as_mut(), sink),
        _ => merge_into(ctx, version, plan, iter.as_mut(), sink, None),
    })?;
    Ok(compaction_result(plan, outputs, &version.order))
}

/// Finishes a compaction into NVM tables that a crash interrupted: `kept` are the output
/// tables it had written (the last one sealed after its last durable entry), and the merge
/// resumes after the last internal key they hold. Returns the result as if the compaction
/// had run at once (the kept tables are among its outputs).
///
/// # Errors
/// As [`run_compaction`].
pub fn resume_compaction(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
    kept: Vec<WrittenTable>,
) -> Result<CompactionResult> {
    let mut iter = input_iterator(ctx, version, plan)?;
    let last = kept.last().map(|w| w.meta.largest.clone());
    // The rest goes where a fresh merge's would: NVM tables while the pool has room, then
    // SSTs (a pool that filled up while the database was closed cannot stop the open).
    let more = write_outputs(ctx, version, plan, None, |sink| {
        merge_into(ctx, version, plan, iter.as_mut(), sink, last.as_deref())
    })?;
    let mut outputs = kept;
    outputs.extend(more);
    Ok(compaction_result(plan, outputs, &version.order))
}

/// Runs `body` on a sink of the tier `plan`'s outputs go to ([`output_tier`]; `row_bytes`
/// as there) and returns the tables it wrote. Under a tiering that allows SSTs, a merge
/// into NVM goes on in SSTs once the pool has no room for another table ([`SpillSink`]);
/// when a table still finds no room (other jobs took it meanwhile), the tables written
/// so far are abandoned and `body` runs again on an SST sink (it starts from its input's
/// first entry, or where a resumed merge starts).
fn write_outputs(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
    row_bytes: Option<u64>,
    mut body: impl FnMut(&mut dyn TableSink) -> Result<()>,
) -> Result<Vec<WrittenTable>> {
    let mut tier = output_tier(ctx, plan, row_bytes);
    loop {
        match with_sink(ctx, version, plan, tier, &mut body) {
            Err(e) if tier == Tier::Nvm && falls_back_to_ssd(&e, ctx.opts.nvm_tiering) => {
                if plan.reason == CompactionReason::TierReturn
                    && let Some(nvm) = ctx.storage.nvm()
                {
                    nvm.note_return_fell_short();
                }
                tier = Tier::Ssd;
            }
            res => return res,
        }
    }
}

/// The tier a plan's outputs go to: a tier move writes SSTs, a rewrite stays in NVM, and
/// a merge follows the tiering option (NVM only when the database has an NVM tier and, under
/// a tiering that allows SSTs, room for what it copies). `row_bytes`: for a column, the
/// bytes it takes from the matrix rows (which it copies; the rest of each row stays).
fn output_tier(ctx: &CompactionContext<'_>, plan: &CompactionPlan, row_bytes: Option<u64>) -> Tier {
    let Some(nvm) = ctx.storage.nvm() else {
        return Tier::Ssd;
    };
    if !ctx.opts.nvm_tiering.enabled() {
        return Tier::Ssd;
    }
    match plan.reason {
        CompactionReason::TierMove => Tier::Ssd,
        r if r.copies_into_nvm() => Tier::Nvm,
        _ if !ctx.opts.level_in_nvm(plan.output_level) => Tier::Ssd,
        // Under a tiering that allows SSTs, a merge whose first table the pool cannot
        // hold now writes SSTs from the start: the entries of inputs that are not NVM
        // tables are copied into new buffers.
        _ if ctx.opts.nvm_tiering.allows_ssd() => {
            let copied: u64 = plan
                .all_inputs()
                .filter(|t| match t.location {
                    TableLocation::Nvm { .. } => false,
                    TableLocation::Row { .. } => row_bytes.is_none(),
                    _ => true,
                })
                .map(|t| t.size)
                .sum::<u64>()
                + row_bytes.unwrap_or(0);
            // The merge spills into SSTs once the pool is full (`SpillSink`): it needs
            // room for its first table only.
            let first = if spills(ctx.opts, plan) {
                copied.min(spill_table_bytes(ctx.opts))
            } else {
                copied
            };
            if nvm.has_room_for_tables(first) {
                Tier::Nvm
            } else {
                Tier::Ssd
            }
        }
        _ => Tier::Nvm,
    }
}

/// The NVM objects `tables` reference, as the tier holds them.
fn referenced_objects(ctx: &CompactionContext<'_>, tables: &[Arc<TableMeta>]) -> Vec<NvmObject> {
    let Some(tier) = ctx.storage.nvm() else {
        return Vec::new();
    };
    let mut ids: Vec<u64> = tables
        .iter()
        .flat_map(|t| t.nvm_refs.iter().map(|r| r.object))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter().filter_map(|id| tier.object(id)).collect()
}

/// Runs `body` on a sink of `tier` for `plan` and finishes it; on failure the sink's
/// tables are abandoned.
fn with_sink(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
    tier: Tier,
    body: impl FnOnce(&mut dyn TableSink) -> Result<()>,
) -> Result<Vec<WrittenTable>> {
    let inputs: Vec<Arc<TableMeta>> = plan.all_inputs().cloned().collect();
    let make_sst = || {
        let placement = ctx.placement.begin(&JobInfo {
            version,
            output_level: plan.output_level,
            inputs: &inputs,
        });
        SstSink::new(
            ctx.storage,
            ctx.opts,
            plan.output_level,
            ctx.new_file_number,
            placement,
        )
    };
    let mut spill_sink;
    let mut nvm_sink;
    let mut sst_sink;
    let sink: &mut dyn TableSink = match (tier, ctx.storage.nvm()) {
        (Tier::Nvm, Some(nvm)) => {
            // A column's outputs are not resumed after a crash (its rows' consumed counts
            // are in its edit only): the next column redoes it. Neither are a copy's into
            // NVM (`copies_into_nvm`).
            let resumable =
                !(plan.reason.copies_into_nvm() || plan.reason == CompactionReason::Column);
            let mut s = NvmSink::new(
                nvm,
                ctx.opts,
                NvmOutput {
                    level: plan.output_level,
                    inputs: resumable.then(|| inputs.iter().map(|t| t.id).collect()),
                },
                ctx.new_file_number,
                ctx.recorder,
                &referenced_objects(ctx, &inputs),
            );
            if plan.reason == CompactionReason::NvmGc {
                // Copy what lives in objects worth reclaiming; keep pointing at the rest.
                let victims =
                    crate::compaction::tiering::reclaimable(version, ctx.opts.nvm_gc_live_ratio);
                s.evacuate(victims.into_keys().collect());
            }
            if spills(ctx.opts, plan) {
                spill_sink = SpillSink::new(nvm, s, make_sst);
                &mut spill_sink
            } else {
                nvm_sink = s;
                &mut nvm_sink
            }
        }
        _ => {
            sst_sink = make_sst();
            &mut sst_sink
        }
    };
    body(sink)
        .and_then(|()| sink.finish())
        .inspect_err(|_| sink.abandon())
}

/// Whether a merge into NVM tables may go on in SSTs once the pool has no room for
/// another table ([`SpillSink`]): under a tiering that allows SSTs, for every merge but a
/// rewrite of NVM tables or a return of an SST into NVM (whose point is to be in NVM).
fn spills(opts: &Options, plan: &CompactionPlan) -> bool {
    opts.nvm_tiering.allows_ssd() && !plan.reason.copies_into_nvm()
}

/// The room a merge must find in the pool to write one more NVM table: the bytes a table
/// copies at most (its entries, `target_file_size`, the cut coming after the entry that
/// passes it) and a quarter more for its index and the last entry.
fn spill_table_bytes(opts: &Options) -> u64 {
    nvm_table_room(opts.target_file_size)
}

/// Moves an NVM table to an SST (LRU tiering): every block of a persistent buffer whose
/// entries the table references all, in order, is copied into the SST as one data block
/// (JigsawDB's point: the unified block needs no re-encoding between tiers); the other
/// entries (blocks shared with entries the table does not hold, inline entries) are added
/// one by one. Falls back to [`copy_into`] for a table that is not an NVM table.
fn move_to_ssd(
    ctx: &CompactionContext<'_>,
    plan: &CompactionPlan,
    iter: &mut dyn InternalIterator<Error>,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let table = match plan.inputs.first() {
        Some(meta) => ctx.table_cache.open(meta)?,
        None => return copy_into(iter, sink),
    };
    let Some(nvm) = table.as_any().downcast_ref::<crate::table::nvm::NvmTable>() else {
        return copy_into(iter, sink);
    };
    let t = nvm.ptable();
    let refs = t.refs()?;
    let mut i = 0;
    while let Some(&r) = refs.get(i) {
        if r.slot == 0 {
            let (contents, n) = t.block_of(r)?;
            // Small blocks (a `ps` table's one-entry blocks) are not worth a block each.
            let whole = contents.len() * 2 >= ctx.opts.block_size
                && refs.get(i..i + n).is_some_and(|run| {
                    run.iter()
                        .enumerate()
                        .all(|(j, x)| x.block == r.block && x.slot as usize == j)
                });
            if whole && sink.add_keyset_block(contents)? {
                i += n;
                continue;
            }
        }
        let (k, v) = t.entry(r)?;
        sink.add(k, v)?;
        i += 1;
    }
    Ok(())
}

/// Copies every entry of `iter` (one table) into one output table, dropping nothing: a
/// tier move or a rewrite keeps the table's contents and level as they were.
fn copy_into(iter: &mut dyn InternalIterator<Error>, sink: &mut dyn TableSink) -> Result<()> {
    iter.seek_to_first();
    while iter.valid() {
        sink.add_located(iter.key(), iter.value(), iter.entry_ref())?;
        iter.next();
    }
    iter.status()
}

/// The edit and accounting of a finished compaction.
fn compaction_result(
    plan: &CompactionPlan,
    outputs: Vec<WrittenTable>,
    order: &KeyOrder,
) -> CompactionResult {
    let mut edit = VersionEdit::default();
    for t in &plan.inputs {
        edit.deleted_tables.push((plan.level, t.id));
    }
    for t in &plan.next_inputs {
        edit.deleted_tables.push((plan.output_level, t.id));
    }
    for w in &outputs {
        edit.new_tables.push((plan.output_level, w.meta.clone()));
        edit.new_nvm_objects.extend(w.objects.iter().copied());
    }
    if let Some(last) = plan
        .inputs
        .iter()
        .max_by(|a, b| order.compare_internal(&a.largest, &b.largest))
    {
        edit.compact_pointers
            .push((plan.level, last.largest.clone()));
    }
    CompactionResult {
        edit,
        bytes_read: plan.input_bytes(),
        bytes_written: outputs.iter().map(|w| w.bytes_written).sum(),
        outputs,
    }
}

/// The merge loop: drops what no reader can see and cuts output tables between user keys
/// at about `target_file_size` (or earlier, where the grandparent overlap would grow too
/// large). Shared by every sink.
/// `resume_after`: continue a compaction interrupted by a crash after the last internal
/// key its outputs hold (entries up to it are skipped; the merge state is that of having
/// just written it).
fn merge_into(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
    iter: &mut dyn InternalIterator<Error>,
    sink: &mut dyn TableSink,
    resume_after: Option<&[u8]>,
) -> Result<()> {
    let max_gp = max_grandparent_overlap(ctx.opts);
    let mut base_ptrs = vec![0usize; version.num_levels()];
    let mut versions = HiddenVersions::new(version.order.clone());
    let mut gp_index = 0usize;
    let mut gp_overlap = 0u64;
    let mut gp_seen_key = false;
    match resume_after {
        None => iter.seek_to_first(),
        Some(last) => {
            iter.seek(last);
            if iter.valid() && iter.key() == last {
                iter.next();
            }
            if let Some(p) = parse_internal_key(last) {
                versions.next(ctx.snapshots, p.user_key, p.seq);
                gp_seen_key = true;
            }
        }
    }
    while iter.valid() {
        let ikey = iter.key();
        let parsed = parse_internal_key(ikey).ok_or_else(|| {
            Error::corruption(
                0,
                format!("compaction input has a malformed internal key {ikey:?}"),
            )
        })?;
        let (new_key, hidden, s) = versions.next(ctx.snapshots, parsed.user_key, parsed.seq);
        if new_key {
            // Between user keys: the only place an output may be cut.
            while let Some(g) = plan.grandparents.get(gp_index)
                && version.order.compare_internal(ikey, &g.largest).is_gt()
            {
                if gp_seen_key {
                    gp_overlap += g.size;
                }
                gp_index += 1;
            }
            gp_seen_key = true;
            if let Some(bytes) = sink.current_bytes()
                && (bytes >= ctx.opts.target_file_size || gp_overlap > max_gp)
            {
                sink.finish_table()?;
                gp_overlap = 0;
            }
        }
        let drop = hidden
            || parsed.kind == ValueKind::Deletion
                && s == 0
                && is_base_level_for_key(
                    version,
                    plan.output_level,
                    parsed.user_key,
                    &mut base_ptrs,
                );
        if !drop {
            sink.add_located(ikey, iter.value(), iter.entry_ref())?;
        }
        iter.next();
    }
    iter.status()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::tests::meta;

    fn version(levels: &[&[(u64, &str, &str, u64)]]) -> Version {
        let mut e = VersionEdit::default();
        for (l, ts) in levels.iter().enumerate() {
            for &(id, lo, hi, size) in *ts {
                e.new_tables.push((l, meta(id, lo, hi, (id, id), size)));
            }
        }
        Version::new(4).apply(&e).unwrap()
    }

    #[test]
    fn stripes_follow_snapshots() {
        assert_eq!(stripe(&[], 5), 0);
        let snaps = [10, 20];
        assert_eq!(stripe(&snaps, 3), 0);
        assert_eq!(stripe(&snaps, 10), 0);
        assert_eq!(stripe(&snaps, 11), 1);
        assert_eq!(stripe(&snaps, 25), 2);
    }

    #[test]
    fn base_level_check_uses_lower_levels() {
        let v = version(&[&[], &[], &[(1, "d", "f", 1)], &[(2, "m", "p", 1)]]);
        let mut ptrs = vec![0; 4];
        assert!(is_base_level_for_key(&v, 1, b"a", &mut ptrs));
        assert!(!is_base_level_for_key(&v, 1, b"e", &mut ptrs));
        assert!(is_base_level_for_key(&v, 1, b"g", &mut ptrs));
        assert!(!is_base_level_for_key(&v, 1, b"n", &mut ptrs));
        assert!(is_base_level_for_key(&v, 1, b"z", &mut ptrs));
    }
}
