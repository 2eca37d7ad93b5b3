//! Compaction: the leveled planner (a pure function of a version and the options), the
//! executor that merges input tables into new ones, and the table writer flushes share.
//!
//! Owns: [`pick_compaction`], [`manual_plan`], [`level_scores`],
//! [`estimate_pending_compaction_bytes`] (pure, no I/O), [`run_compaction`] and
//! [`write_table`] (I/O through the `FileSystem`).
//!
//! Invariants the executor keeps:
//! - Output tables of one compaction are sorted and never split one user key's versions
//!   across two tables (cuts happen only between user keys).
//! - For each user key it keeps the newest version plus, for every live snapshot, the
//!   newest version visible to it ("stripes" between consecutive snapshots); older
//!   versions inside a stripe are dropped.
//! - A deletion marker is dropped only when it is in the oldest stripe and no level below
//!   the output level can hold the key (nothing older can resurface).
//!
//! Thread-safety: the planner is pure; the executor runs on one background thread per
//! compaction and only reads the shared table cache. Plans handed to concurrent executors
//! never share levels (the engine marks levels busy).

use std::path::Path;
use std::sync::Arc;

use mezz_env::FileSystem;
use mezz_format::ikey::{compare_internal_keys, parse_internal_key};
use mezz_format::sst::{TableBuilder, TableBuilderOptions, TableProperties};
use mezz_format::{InternalIterator, SeqNo, ValueKind};

use crate::error::{Error, Result};
use crate::filename;
use crate::iter::{LevelIterator, merging_iterator};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::table::sst::TableCache;
use crate::table::{TableLocation, TableMeta, TableReadOptions};
use crate::version::Version;

/// Why a compaction was planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionReason {
    /// L0 holds `level0_compaction_trigger` tables or more.
    L0FileCount,
    /// A level is larger than its target size.
    LevelSize,
    /// `Db::compact_range`.
    Manual,
}

/// One planned compaction: inputs from `level` and `level + 1`, output to `level + 1` (or,
/// for a manual rewrite of the bottom-most level, inputs and output both at `level`).
#[derive(Debug, Clone)]
pub struct CompactionPlan {
    /// The input level.
    pub level: usize,
    /// The output level (`level + 1`, or `level` for an in-place bottom-level rewrite).
    pub output_level: usize,
    /// Tables taken from `level`.
    pub inputs: Vec<Arc<TableMeta>>,
    /// Tables taken from `output_level` (those overlapping `inputs`).
    pub next_inputs: Vec<Arc<TableMeta>>,
    /// Tables of `output_level + 1` overlapping the inputs (outputs are cut so that none
    /// overlaps too many of them).
    pub grandparents: Vec<Arc<TableMeta>>,
    /// Move the single input table down without rewriting it.
    pub trivial_move: bool,
    /// The planner's score for the input level (>= 1 for automatic plans).
    pub score: f64,
    /// Why.
    pub reason: CompactionReason,
}

impl CompactionPlan {
    /// Bytes of all input tables.
    #[must_use]
    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .chain(&self.next_inputs)
            .map(|t| t.size)
            .sum()
    }
}

/// Bytes of grandparent overlap above which an output table is cut (and a trivial move is
/// refused): ten target files, as LevelDB.
#[must_use]
pub fn max_grandparent_overlap(opts: &Options) -> u64 {
    opts.target_file_size.saturating_mul(10)
}

/// Compaction score per level: L0 = tables / `level0_compaction_trigger`, Ln = bytes /
/// `max_bytes_for_level(n)`; the last level scores 0 (it has nowhere to go).
#[must_use]
pub fn level_scores(version: &Version, opts: &Options) -> Vec<f64> {
    let n = version.num_levels();
    (0..n)
        .map(|level| {
            if level + 1 >= n {
                0.0
            } else if level == 0 {
                version.num_files(0) as f64 / opts.level0_compaction_trigger as f64
            } else {
                version.level_bytes(level) as f64 / opts.max_bytes_for_level(level) as f64
            }
        })
        .collect()
}

fn user_range(tables: &[Arc<TableMeta>]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut it = tables.iter();
    let first = it.next()?;
    let mut lo = first.smallest_user_key();
    let mut hi = first.largest_user_key();
    for t in it {
        lo = lo.min(t.smallest_user_key());
        hi = hi.max(t.largest_user_key());
    }
    Some((lo.to_vec(), hi.to_vec()))
}

/// Fills `next_inputs` and `grandparents` for `inputs` at `level`; for L0 the inputs are
/// first closed over overlap (every L0 table overlapping the chosen range is taken, so no
/// older L0 version of a key stays above a newer one moved down).
fn complete_plan(
    version: &Version,
    opts: &Options,
    level: usize,
    mut inputs: Vec<Arc<TableMeta>>,
    score: f64,
    reason: CompactionReason,
) -> Option<CompactionPlan> {
    let output_level = level + 1;
    if output_level >= version.num_levels() || inputs.is_empty() {
        return None;
    }
    let mut next_inputs;
    loop {
        let (lo, hi) = user_range(&inputs)?;
        next_inputs = version.overlapping(output_level, Some(&lo), Some(&hi));
        if level != 0 {
            break;
        }
        let all: Vec<_> = inputs.iter().chain(&next_inputs).cloned().collect();
        let (lo, hi) = user_range(&all)?;
        let widened = version.overlapping(0, Some(&lo), Some(&hi));
        if widened.len() == inputs.len() {
            break;
        }
        inputs = widened;
    }
    let all: Vec<_> = inputs.iter().chain(&next_inputs).cloned().collect();
    let (lo, hi) = user_range(&all)?;
    let grandparents = version.overlapping(output_level + 1, Some(&lo), Some(&hi));
    let gp_bytes: u64 = grandparents.iter().map(|t| t.size).sum();
    let trivial_move = reason != CompactionReason::Manual
        && inputs.len() == 1
        && next_inputs.is_empty()
        && gp_bytes <= max_grandparent_overlap(opts);
    Some(CompactionPlan {
        level,
        output_level,
        inputs,
        next_inputs,
        grandparents,
        trivial_move,
        score,
        reason,
    })
}

/// The leveled planner: picks the level with the highest score >= 1 whose level and
/// output level are not busy (`busy_levels[l]` true = a compaction is using level `l`),
/// and plans its compaction. L0 takes its oldest table plus every L0 table overlapping the
/// growing range, and the overlapping L1 tables; Ln takes the first table after the
/// level's compact pointer (round robin) and the overlapping L(n+1) tables. A single input
/// with nothing to merge below and little grandparent overlap becomes a trivial move.
#[must_use]
pub fn pick_compaction(
    version: &Version,
    opts: &Options,
    busy_levels: &[bool],
) -> Option<CompactionPlan> {
    let busy = |l: usize| busy_levels.get(l).copied().unwrap_or(false);
    let mut scored: Vec<(usize, f64)> = level_scores(version, opts)
        .into_iter()
        .enumerate()
        .filter(|&(l, s)| s >= 1.0 && !busy(l) && !busy(l + 1))
        .collect();
    // Highest score first; ties go to the upper level.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let &(level, score) = scored.first()?;
    let tables = version.tables(level);
    let inputs = if level == 0 {
        vec![Arc::clone(tables.last()?)]
    } else {
        let ptr = version
            .compact_pointers
            .get(level)
            .map_or(&[][..], Vec::as_slice);
        let t = tables
            .iter()
            .find(|t| ptr.is_empty() || compare_internal_keys(&t.largest, ptr).is_gt())
            .or_else(|| tables.first())?;
        vec![Arc::clone(t)]
    };
    let reason = if level == 0 {
        CompactionReason::L0FileCount
    } else {
        CompactionReason::LevelSize
    };
    complete_plan(version, opts, level, inputs, score, reason)
}

/// A manual compaction of every table of `level` overlapping `[begin, end]` into
/// `level + 1` (never a trivial move, so deletions are dropped where allowed).
#[must_use]
pub fn manual_plan(
    version: &Version,
    opts: &Options,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<CompactionPlan> {
    let inputs = version.overlapping(level, begin, end);
    complete_plan(version, opts, level, inputs, 0.0, CompactionReason::Manual)
}

/// A manual rewrite in place of every table of `level` (the bottom-most level holding
/// data in the range) overlapping `[begin, end]`: it drops shadowed versions and
/// deletion markers that no compaction from above would ever reach.
#[must_use]
pub fn bottom_plan(
    version: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<CompactionPlan> {
    let inputs = version.overlapping(level, begin, end);
    if level == 0 || inputs.is_empty() {
        return None;
    }
    let (lo, hi) = user_range(&inputs)?;
    Some(CompactionPlan {
        level,
        output_level: level,
        grandparents: version.overlapping(level + 1, Some(&lo), Some(&hi)),
        inputs,
        next_inputs: Vec::new(),
        trivial_move: false,
        score: 0.0,
        reason: CompactionReason::Manual,
    })
}

/// Estimated bytes compaction must still rewrite to bring every level under its target,
/// as RocksDB estimates it: L0's bytes when L0 is over its trigger (plus all of L1, which
/// they merge into), and for each level over its target the excess times (the size ratio
/// to the next level + 1), the excess being carried into the next level.
#[must_use]
pub fn estimate_pending_compaction_bytes(version: &Version, opts: &Options) -> u64 {
    let n = version.num_levels();
    let mut estimated = 0f64;
    let mut carry = 0f64;
    let l0_triggered = version.num_files(0) >= opts.level0_compaction_trigger;
    if l0_triggered {
        carry = version.level_bytes(0) as f64;
        estimated += carry;
    }
    for level in 1..n.saturating_sub(1) {
        let level_size = version.level_bytes(level) as f64 + carry;
        if level == 1 && l0_triggered {
            estimated += version.level_bytes(1) as f64;
        }
        carry = 0.0;
        let target = opts.max_bytes_for_level(level) as f64;
        if level_size > target {
            carry = level_size - target;
            let next = version.level_bytes(level + 1) as f64;
            let ratio = if level_size > 0.0 {
                next / level_size
            } else {
                0.0
            };
            estimated += carry * (ratio + 1.0);
        }
    }
    estimated as u64
}

/// The table-builder options the engine's options ask for.
#[must_use]
pub fn table_builder_options(opts: &Options) -> TableBuilderOptions {
    TableBuilderOptions {
        block_size: opts.block_size,
        block_format: opts.block_format,
        restart_interval: opts.block_restart_interval,
        bloom_bits_per_key: opts.bloom_bits_per_key,
    }
}

/// A table being written.
struct OutputTable {
    builder: TableBuilder,
    id: u64,
}

impl std::fmt::Debug for OutputTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputTable").field("id", &self.id).finish()
    }
}

/// A finished table and what writing it cost.
#[derive(Debug, Clone)]
pub struct WrittenTable {
    /// The table's metadata (for the version edit).
    pub meta: TableMeta,
    /// Nanoseconds spent building data blocks.
    pub encode_nanos: u64,
    /// Bytes of data blocks.
    pub data_bytes: u64,
}

fn open_output(fs: &dyn FileSystem, dir: &Path, id: u64, opts: &Options) -> Result<OutputTable> {
    let path = filename::sst_file(dir, id);
    let file = fs
        .create(&path)
        .map_err(|e| Error::from(e).in_file(&path))?;
    Ok(OutputTable {
        builder: TableBuilder::new(file, table_builder_options(opts)),
        id,
    })
}

fn meta_from_properties(id: u64, p: &TableProperties) -> TableMeta {
    TableMeta {
        id,
        location: TableLocation::Sst { path_id: 0 },
        size: p.file_size,
        smallest: p.smallest_key.clone(),
        largest: p.largest_key.clone(),
        smallest_seq: p.smallest_seq,
        largest_seq: p.largest_seq,
        num_entries: p.num_entries,
        num_deletions: p.num_deletions,
    }
}

fn finish_output(
    fs: &dyn FileSystem,
    dir: &Path,
    out: OutputTable,
) -> Result<Option<WrittenTable>> {
    let path = filename::sst_file(dir, out.id);
    if out.builder.num_entries() == 0 {
        out.builder.abandon();
        let _ = fs.remove_file(&path);
        return Ok(None);
    }
    let encode_nanos = out.builder.encode_nanos();
    let props = out.builder.finish().map_err(|e| e.in_file(&path))?;
    Ok(Some(WrittenTable {
        meta: meta_from_properties(out.id, &props),
        encode_nanos,
        data_bytes: props.data_size,
    }))
}

/// Writes every entry of `iter` (from its first) into table `id`; `None` if `iter` is
/// empty (no file is left behind). The file is synced; the caller syncs the directory
/// before a manifest edit names it.
///
/// # Errors
/// I/O errors, or the iterator's error; the partial file is removed.
pub fn write_table(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    id: u64,
    iter: &mut dyn InternalIterator,
) -> Result<Option<WrittenTable>> {
    let mut out = open_output(fs, dir, id, opts)?;
    iter.seek_to_first();
    let res = (|| -> Result<()> {
        while iter.valid() {
            out.builder.add(iter.key(), iter.value())?;
            iter.next();
        }
        iter.status()
    })();
    let path = filename::sst_file(dir, id);
    match res {
        Ok(()) => finish_output(fs, dir, out).inspect_err(|_| {
            let _ = fs.remove_file(&path);
        }),
        Err(e) => {
            out.builder.abandon();
            let _ = fs.remove_file(&path);
            Err(e.in_file(path))
        }
    }
}

/// What the executor needs from the engine.
pub struct CompactionContext<'a> {
    /// The file system.
    pub fs: &'a dyn FileSystem,
    /// The DB directory.
    pub dir: &'a Path,
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
            .field("dir", &self.dir)
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
    if plan.level == 0 {
        for t in &plan.inputs {
            children.push(ctx.table_cache.open(t)?.iter(&ropts));
        }
    } else {
        children.push(Box::new(LevelIterator::new(
            plan.inputs.clone(),
            Arc::clone(ctx.table_cache),
            ropts,
        )));
    }
    if !plan.next_inputs.is_empty() {
        children.push(Box::new(LevelIterator::new(
            plan.next_inputs.clone(),
            Arc::clone(ctx.table_cache),
            ropts,
        )));
    }
    let mut iter = merging_iterator(children);
    let mut outputs: Vec<WrittenTable> = Vec::new();
    let mut current: Option<OutputTable> = None;
    let res = merge_into_outputs(
        ctx,
        version,
        plan,
        iter.as_mut(),
        &mut current,
        &mut outputs,
    );
    let res = res.and_then(|()| match current.take() {
        Some(out) => finish_output(ctx.fs, ctx.dir, out).map(|w| outputs.extend(w)),
        None => Ok(()),
    });
    if let Err(e) = res {
        if let Some(out) = current.take() {
            let id = out.id;
            out.builder.abandon();
            let _ = ctx.fs.remove_file(&filename::sst_file(ctx.dir, id));
        }
        for w in &outputs {
            let _ = ctx.fs.remove_file(&filename::sst_file(ctx.dir, w.meta.id));
        }
        return Err(e);
    }
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

fn merge_into_outputs(
    ctx: &CompactionContext<'_>,
    version: &Version,
    plan: &CompactionPlan,
    iter: &mut dyn InternalIterator,
    current: &mut Option<OutputTable>,
    outputs: &mut Vec<WrittenTable>,
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
            if let Some(out) = current.as_ref()
                && (out.builder.file_size() >= ctx.opts.target_file_size || gp_overlap > max_gp)
                && let Some(out) = current.take()
            {
                outputs.extend(finish_output(ctx.fs, ctx.dir, out)?);
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
            if current.is_none() {
                *current = Some(open_output(
                    ctx.fs,
                    ctx.dir,
                    (ctx.new_file_number)(),
                    ctx.opts,
                )?);
            }
            if let Some(out) = current.as_mut() {
                out.builder.add(ikey, iter.value())?;
            }
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
        let mut v = Version::new(4);
        let mut e = VersionEdit::default();
        for (l, ts) in levels.iter().enumerate() {
            for &(id, lo, hi, size) in *ts {
                e.new_tables.push((l, meta(id, lo, hi, (id, id), size)));
            }
        }
        v = v.apply(&e).unwrap();
        v
    }

    fn opts() -> Options {
        Options {
            level0_compaction_trigger: 4,
            max_bytes_for_level_base: 1000,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size: 100,
            ..Options::default()
        }
    }

    fn ids(ts: &[Arc<TableMeta>]) -> Vec<u64> {
        let mut v: Vec<u64> = ts.iter().map(|t| t.id).collect();
        v.sort_unstable();
        v
    }

    /// Golden table: (description, version, busy levels) -> expected (level, inputs,
    /// next inputs, trivial move) or no compaction.
    #[test]
    fn picker_golden_cases() {
        type Expect = Option<(usize, Vec<u64>, Vec<u64>, bool)>;
        let cases: Vec<(&str, Version, Vec<bool>, Expect)> = vec![
            (
                "below every trigger",
                version(&[
                    &[(1, "a", "c", 10), (2, "b", "d", 10)],
                    &[(3, "a", "z", 500)],
                ]),
                vec![],
                None,
            ),
            (
                "L0 at trigger: all overlapping L0 tables + overlapping L1",
                version(&[
                    &[
                        (1, "a", "c", 10),
                        (2, "b", "d", 10),
                        (3, "c", "e", 10),
                        (4, "x", "y", 10),
                    ],
                    &[(5, "a", "b", 10), (6, "d", "f", 10), (7, "m", "n", 10)],
                ]),
                vec![],
                Some((0, vec![1, 2, 3], vec![5, 6], false)),
            ),
            (
                "L0 closure widens through L1 overlap",
                version(&[
                    &[
                        (1, "a", "c", 10),
                        (2, "b", "d", 10),
                        (3, "g", "h", 10),
                        (4, "x", "y", 10),
                    ],
                    &[(5, "c", "g", 10)],
                ]),
                vec![],
                Some((0, vec![1, 2, 3], vec![5], false)),
            ),
            (
                "single old L0 table with empty L1 range: trivial move",
                version(&[
                    &[
                        (1, "a", "b", 10),
                        (2, "m", "n", 10),
                        (3, "p", "q", 10),
                        (4, "x", "y", 10),
                    ],
                    &[(5, "c", "d", 10)],
                ]),
                vec![],
                Some((0, vec![1], vec![], true)),
            ),
            (
                "L1 over target: first table after the (empty) compact pointer",
                version(&[
                    &[],
                    &[(1, "a", "c", 600), (2, "d", "f", 600)],
                    &[(3, "b", "e", 10), (4, "g", "h", 10)],
                ]),
                vec![],
                Some((1, vec![1], vec![3], false)),
            ),
            (
                "busy output level blocks the pick",
                version(&[
                    &[],
                    &[(1, "a", "c", 600), (2, "d", "f", 600)],
                    &[(3, "b", "e", 10)],
                ]),
                vec![false, false, true],
                None,
            ),
            (
                "L2 over target wins over a smaller L1 score",
                version(&[
                    &[],
                    &[(1, "a", "c", 1100)],
                    &[(2, "a", "c", 30_000)],
                    &[(3, "a", "b", 1)],
                ]),
                vec![],
                Some((2, vec![2], vec![3], false)),
            ),
            (
                "last level never compacts",
                version(&[&[], &[], &[], &[(1, "a", "c", 1 << 40)]]),
                vec![],
                None,
            ),
        ];
        for (desc, v, busy, expect) in cases {
            let got = pick_compaction(&v, &opts(), &busy)
                .map(|p| (p.level, ids(&p.inputs), ids(&p.next_inputs), p.trivial_move));
            assert_eq!(got, expect, "{desc}");
        }
    }

    #[test]
    fn compact_pointer_round_robin() {
        let mut v = version(&[
            &[],
            &[(1, "a", "c", 600), (2, "d", "f", 600), (3, "g", "i", 600)],
        ]);
        let mut picked = Vec::new();
        for _ in 0..4 {
            let p = pick_compaction(&v, &opts(), &[]).unwrap();
            picked.push(p.inputs[0].id);
            let e = VersionEdit {
                compact_pointers: vec![(1, p.inputs[0].largest.clone())],
                ..VersionEdit::default()
            };
            v = v.apply(&e).unwrap();
        }
        assert_eq!(picked, vec![1, 2, 3, 1]);
    }

    #[test]
    fn manual_plan_is_never_trivial() {
        let v = version(&[&[(1, "a", "b", 10)]]);
        let p = manual_plan(&v, &opts(), 0, None, None).unwrap();
        assert!(!p.trivial_move);
        assert_eq!(ids(&p.inputs), vec![1]);
        assert!(manual_plan(&v, &opts(), 1, None, None).is_none());
        let v = version(&[
            &[],
            &[(1, "a", "c", 10), (2, "d", "f", 10), (3, "g", "h", 10)],
        ]);
        let p = bottom_plan(&v, 1, Some(b"b"), Some(b"e")).unwrap();
        assert_eq!((p.level, p.output_level), (1, 1));
        assert_eq!(ids(&p.inputs), vec![1, 2]);
        assert!(bottom_plan(&v, 0, None, None).is_none());
    }

    #[test]
    fn scores_and_pending_bytes() {
        let v = version(&[
            &[(1, "a", "b", 10), (2, "a", "b", 10)],
            &[(3, "a", "z", 2000)],
            &[(4, "a", "z", 10_000)],
        ]);
        let s = level_scores(&v, &opts());
        assert!((s[0] - 0.5).abs() < 1e-9);
        assert!((s[1] - 2.0).abs() < 1e-9);
        assert!((s[2] - 1.0).abs() < 1e-9);
        assert_eq!(s[3], 0.0);
        // L1 excess 1000 × (10000/2000 + 1) = 6000; L2 then holds 11000 > 10000: 1000 × 1.
        assert_eq!(estimate_pending_compaction_bytes(&v, &opts()), 7000);
        let quiet = version(&[&[(1, "a", "b", 10)], &[(3, "a", "z", 10)]]);
        assert_eq!(estimate_pending_compaction_bytes(&quiet, &opts()), 0);
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
