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

use mezz_format::ikey::{compare_internal_keys, parse_internal_key};
use mezz_format::{InternalIterator, SeqNo, ValueKind};

use crate::compaction::leveled::max_grandparent_overlap;
use crate::compaction::policy::CompactionPlan;
use crate::compaction::sink::{SstSink, TableSink, WrittenTable};
use crate::error::{Error, Result};
use crate::iter::{merging_iterator, run_iterator};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::placement::{JobInfo, Placement};
use crate::storage::Storage;
use crate::table::cache::TableCache;
use crate::table::{TableMeta, TableReadOptions};
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

/// Which "stripe" between consecutive snapshots a sequence number falls in: 0 = visible
/// to the oldest snapshot (or no snapshots at all).
fn stripe(snapshots: &[SeqNo], seq: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seq)
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
            if user_key <= t.largest_user_key() {
                if user_key >= t.smallest_user_key() {
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
    let ropts = TableReadOptions {
        fill_cache: false,
        verify_checksums: ctx.opts.paranoid_checks,
    };
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for run in version
        .runs_of(plan.level, &plan.inputs)
        .chain(version.runs_of(plan.output_level, &plan.next_inputs))
    {
        children.push(run_iterator(run, ctx.table_cache, ropts)?);
    }
    let mut iter = merging_iterator(children);
    let inputs: Vec<Arc<TableMeta>> = plan.all_inputs().cloned().collect();
    let placement = ctx.placement.begin(&JobInfo {
        version,
        output_level: plan.output_level,
        inputs: &inputs,
    });
    let mut sink = SstSink::new(
        ctx.storage,
        ctx.opts,
        plan.output_level,
        ctx.new_file_number,
        placement,
    );
    let outputs = merge_into(ctx, version, plan, iter.as_mut(), &mut sink)
        .and_then(|()| sink.finish())
        .inspect_err(|_| sink.abandon())?;
    let mut edit = VersionEdit::default();
    for t in &plan.inputs {
        edit.deleted_tables.push((plan.level, t.id));
    }
    for t in &plan.next_inputs {
        edit.deleted_tables.push((plan.output_level, t.id));
    }
    for w in &outputs {
        edit.new_tables.push((plan.output_level, w.meta.clone()));
    }
    if let Some(last) = plan
        .inputs
        .iter()
        .max_by(|a, b| compare_internal_keys(&a.largest, &b.largest))
    {
        edit.compact_pointers
            .push((plan.level, last.largest.clone()));
    }
    Ok(CompactionResult {
        edit,
        bytes_read: plan.input_bytes(),
        bytes_written: outputs.iter().map(|w| w.meta.size).sum(),
        outputs,
    })
}

/// The merge loop: drops what no reader can see and cuts output tables between user keys
/// at about `target_file_size` (or earlier, where the grandparent overlap would grow too
/// large). Shared by every sink.
fn merge_into(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
    iter: &mut dyn InternalIterator,
    sink: &mut dyn TableSink,
) -> Result<()> {
    let max_gp = max_grandparent_overlap(ctx.opts);
    let mut base_ptrs = vec![0usize; version.num_levels()];
    let mut user_key: Vec<u8> = Vec::new();
    let mut have_key = false;
    let mut last_stripe: Option<usize> = None;
    let mut gp_index = 0usize;
    let mut gp_overlap = 0u64;
    let mut gp_seen_key = false;
    iter.seek_to_first();
    while iter.valid() {
        let ikey = iter.key();
        let parsed = parse_internal_key(ikey).ok_or_else(|| {
            Error::corruption(
                0,
                format!("compaction input has a malformed internal key {ikey:?}"),
            )
        })?;
        if !have_key || parsed.user_key != user_key.as_slice() {
            // Between user keys: the only place an output may be cut.
            while let Some(g) = plan.grandparents.get(gp_index)
                && compare_internal_keys(ikey, &g.largest).is_gt()
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
            user_key.clear();
            user_key.extend_from_slice(parsed.user_key);
            have_key = true;
            last_stripe = None;
        }
        let s = stripe(ctx.snapshots, parsed.seq);
        let drop = if last_stripe == Some(s) {
            true
        } else {
            parsed.kind == ValueKind::Deletion
                && s == 0
                && is_base_level_for_key(
                    version,
                    plan.output_level,
                    parsed.user_key,
                    &mut base_ptrs,
                )
        };
        last_stripe = Some(s);
        if !drop {
            sink.add(ikey, iter.value())?;
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
