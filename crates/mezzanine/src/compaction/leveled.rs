//! The leveled compaction policy (LevelDB's, with RocksDB's pending-bytes estimate and
//! gradual write slowdown): L0 tables overlap and are compacted into L1 when there are
//! `level0_compaction_trigger` of them; every deeper level is one sorted run with a target
//! size growing by `max_bytes_for_level_multiplier`, compacted one table at a time into the
//! next: the table whose overlap with the next level is the smallest share of its size
//! (RocksDB's default), or round robin by compact pointer (LevelDB's), by `compaction_pri`.
//!
//! Owns: [`LeveledPolicy`] (the [`CompactionPolicy`] of every preset so far) and its pure
//! planning functions ([`pick_compaction`], [`manual_plan`], [`bottom_plan`],
//! [`level_scores`], [`estimate_pending_compaction_bytes`]).
//!
//! Invariants: an L0 plan takes every L0 table overlapping its range (so no older L0 version
//! of a key stays above a newer one moved down); plans never conflict with running claims.
//!
//! Thread-safety: pure functions over immutable inputs.

use std::sync::Arc;

use mezz_format::KeyOrder;

use crate::compaction::policy::{
    Claims, CompactionPlan, CompactionPolicy, CompactionReason, StallCause, WritePressure,
};
use crate::options::{CompactionPri, Options};
use crate::table::TableMeta;
use crate::version::{SortedRun, Version};

/// The leveled policy over a set of options.
#[derive(Debug, Clone)]
pub struct LeveledPolicy {
    opts: Options,
}

impl LeveledPolicy {
    /// The policy with the triggers and sizes of `opts`.
    #[must_use]
    pub fn new(opts: &Options) -> Self {
        Self { opts: opts.clone() }
    }
}

fn progress(value: f64, start: f64, stop: f64) -> f64 {
    if stop <= start {
        1.0
    } else {
        ((value - start) / (stop - start)).clamp(0.0, 1.0)
    }
}

impl CompactionPolicy for LeveledPolicy {
    fn pick(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan> {
        pick_compaction(version, &self.opts, claims)
    }

    fn manual(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan> {
        manual_plan(version, &self.opts, level, begin, end)
    }

    fn manual_in_place(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan> {
        bottom_plan(version, level, begin, end)
    }

    fn seek_plan(
        &self,
        version: &Version,
        claims: &Claims,
        level: usize,
        id: u64,
    ) -> Option<CompactionPlan> {
        seek_plan(version, &self.opts, claims, level, id)
    }

    fn pending_bytes(&self, version: &Version) -> u64 {
        estimate_pending_compaction_bytes(version, &self.opts)
    }

    /// Stops at `level0_stop_trigger` L0 tables or `hard_pending_compaction_bytes`; slows
    /// down from `level0_slowdown_trigger` / `soft_pending_compaction_bytes` on, the
    /// further along towards the stop the slower (the larger of the two wins; ties go to
    /// L0).
    fn write_pressure(&self, version: &Version, pending: u64) -> WritePressure {
        let o = &self.opts;
        let l0 = version.num_files(0);
        if l0 >= o.level0_stop_trigger {
            return WritePressure::Stop(StallCause::L0);
        }
        if pending >= o.hard_pending_compaction_bytes {
            return WritePressure::Stop(StallCause::PendingBytes);
        }
        let l0_p = (l0 >= o.level0_slowdown_trigger).then(|| {
            progress(
                l0 as f64,
                o.level0_slowdown_trigger as f64,
                o.level0_stop_trigger as f64,
            )
        });
        let bytes_p = (pending >= o.soft_pending_compaction_bytes).then(|| {
            progress(
                pending as f64,
                o.soft_pending_compaction_bytes as f64,
                o.hard_pending_compaction_bytes as f64,
            )
        });
        let (cause, progress) = match (l0_p, bytes_p) {
            (Some(a), Some(b)) if b > a => (StallCause::PendingBytes, b),
            (Some(a), _) => (StallCause::L0, a),
            (None, Some(b)) => (StallCause::PendingBytes, b),
            (None, None) => return WritePressure::None,
        };
        WritePressure::Slowdown { cause, progress }
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
            } else if version.level_overlaps(level) {
                version.num_files(0) as f64 / opts.level0_compaction_trigger as f64
            } else {
                version.level_bytes(level) as f64 / opts.max_bytes_for_level(level) as f64
            }
        })
        .collect()
}

fn user_range(tables: &[Arc<TableMeta>], order: &KeyOrder) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut it = tables.iter();
    let first = it.next()?;
    let mut lo = first.smallest_user_key();
    let mut hi = first.largest_user_key();
    for t in it {
        lo = order.min_user(lo, t.smallest_user_key());
        hi = order.max_user(hi, t.largest_user_key());
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
        let (lo, hi) = user_range(&inputs, &version.order)?;
        next_inputs = version.overlapping(output_level, Some(&lo), Some(&hi));
        if !version.level_overlaps(level) {
            break;
        }
        let all: Vec<_> = inputs.iter().chain(&next_inputs).cloned().collect();
        let (lo, hi) = user_range(&all, &version.order)?;
        let widened = version.overlapping(0, Some(&lo), Some(&hi));
        if widened.len() == inputs.len() {
            break;
        }
        inputs = widened;
    }
    let all: Vec<_> = inputs.iter().chain(&next_inputs).cloned().collect();
    let (lo, hi) = user_range(&all, &version.order)?;
    let grandparents = version.overlapping(output_level + 1, Some(&lo), Some(&hi));
    let gp_bytes: u64 = grandparents.iter().map(|t| t.size).sum();
    // A moved table keeps its blocks: only where both levels use the same codec (as
    // RocksDB's `InputCompressionMatchesOutput`).
    let same_codec = opts.compression.for_level(level) == opts.compression.for_level(output_level);
    let trivial_move = reason != CompactionReason::Manual
        && inputs.len() == 1
        && next_inputs.is_empty()
        && same_codec
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

/// The leveled planner: tries the levels with a score >= 1, highest first (ties to the
/// upper level), and plans the first compaction that conflicts with no claim. L0 takes its
/// oldest table plus every L0 table overlapping the growing range, and the overlapping L1
/// tables (one L0 compaction at a time, so L0 drains oldest first); Ln takes the first
/// table in `compaction_pri` order (see `candidates`) whose plan is free, and the
/// overlapping L(n+1) tables. A single input with nothing to merge below, little
/// grandparent overlap and the same compression on both levels becomes a trivial move.
#[must_use]
pub fn pick_compaction(
    version: &Version,
    opts: &Options,
    claims: &Claims,
) -> Option<CompactionPlan> {
    let mut scored: Vec<(usize, f64)> = level_scores(version, opts)
        .into_iter()
        .enumerate()
        .filter(|&(_, s)| s >= 1.0)
        .collect();
    // Highest score first; ties go to the upper level.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    for (level, score) in scored {
        let free = |p: &CompactionPlan| !claims.conflicts(p);
        let plan = if version.level_overlaps(level) {
            if claims.reads_level(level) {
                continue;
            }
            let oldest = version.tables(level).last()?;
            complete_plan(
                version,
                opts,
                level,
                vec![Arc::clone(oldest)],
                score,
                CompactionReason::L0FileCount,
            )
            .filter(free)
        } else {
            candidates(version, opts, level).into_iter().find_map(|t| {
                complete_plan(
                    version,
                    opts,
                    level,
                    vec![Arc::clone(t)],
                    score,
                    CompactionReason::LevelSize,
                )
                .filter(free)
            })
        };
        if plan.is_some() {
            return plan;
        }
    }
    None
}

/// LevelDB's seek compaction: table `id` of `level`, which point reads searched in vain
/// often enough, into the next level, with the overlapping tables there; `None` if it is
/// no longer at `level`, `level` is the last, or the plan conflicts with a claim. A level of
/// overlapping tables (L0) compacts from its oldest table, as for its table count, so that
/// it drains oldest first.
#[must_use]
pub fn seek_plan(
    version: &Version,
    opts: &Options,
    claims: &Claims,
    level: usize,
    id: u64,
) -> Option<CompactionPlan> {
    if level + 1 >= version.num_levels() {
        return None;
    }
    let tables = version.tables(level);
    let table = tables.iter().find(|t| t.id == id)?;
    let first = if version.level_overlaps(level) {
        if claims.reads_level(level) {
            return None;
        }
        tables.last()?
    } else {
        table
    };
    complete_plan(
        version,
        opts,
        level,
        vec![Arc::clone(first)],
        0.0,
        CompactionReason::Seek,
    )
    .filter(|p| !claims.conflicts(p))
}

/// The tables of sorted level `level` in the order the planner tries them (see
/// [`CompactionPri`]): by the ratio of their overlap with the next level to their own size,
/// smallest first (ties in key order), or round robin from the compact pointer.
fn candidates<'a>(version: &'a Version, opts: &Options, level: usize) -> Vec<&'a Arc<TableMeta>> {
    let tables = version.tables(level);
    match opts.compaction_pri {
        CompactionPri::RoundRobin => {
            let ptr = version
                .compact_pointers
                .get(level)
                .map_or(&[][..], Vec::as_slice);
            let start = tables
                .iter()
                .position(|t| {
                    ptr.is_empty() || version.order.compare_internal(&t.largest, ptr).is_gt()
                })
                .unwrap_or(0);
            (0..tables.len())
                .filter_map(|i| tables.get((start + i) % tables.len()))
                .collect()
        }
        CompactionPri::MinOverlappingRatio => {
            let below = SortedRun::Level(version.tables(level + 1));
            let mut ratio: Vec<(u128, usize)> = tables
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let overlap: u64 = below
                        .overlapping(t.smallest_user_key(), t.largest_user_key(), &version.order)
                        .iter()
                        .map(|b| b.size)
                        .sum();
                    // Fixed point, as RocksDB: overlap * 1024 / size.
                    (u128::from(overlap) * 1024 / u128::from(t.size.max(1)), i)
                })
                .collect();
            ratio.sort_unstable();
            ratio
                .into_iter()
                .filter_map(|(_, i)| tables.get(i))
                .collect()
        }
    }
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
    if version.level_overlaps(level) || inputs.is_empty() {
        return None;
    }
    let (lo, hi) = user_range(&inputs, &version.order)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::VersionEdit;
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

    /// Claims of running jobs, each (input level, table, smallest, largest).
    fn claimed(jobs: &[(usize, u64, &str, &str)]) -> Claims {
        let mut c = Claims::new();
        for &(level, id, lo, hi) in jobs {
            c.claim(&crate::compaction::policy::tests::plan(
                level,
                &[(id, lo, hi)],
                &[],
            ));
        }
        c
    }

    /// Golden table: (description, version, claims of running jobs) -> expected (level, inputs,
    /// next inputs, trivial move) or no compaction.
    #[test]
    fn picker_golden_cases() {
        type Expect = Option<(usize, Vec<u64>, Vec<u64>, bool)>;
        let cases: Vec<(&str, Version, Claims, Expect)> = vec![
            (
                "below every trigger",
                version(&[
                    &[(1, "a", "c", 10), (2, "b", "d", 10)],
                    &[(3, "a", "z", 500)],
                ]),
                Claims::new(),
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
                Claims::new(),
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
                Claims::new(),
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
                Claims::new(),
                Some((0, vec![1], vec![], true)),
            ),
            (
                "L1 over target: first table after the (empty) compact pointer",
                version(&[
                    &[],
                    &[(1, "a", "c", 600), (2, "d", "f", 600)],
                    &[(3, "b", "e", 10), (4, "g", "h", 10)],
                ]),
                Claims::new(),
                Some((1, vec![1], vec![3], false)),
            ),
            (
                "a running job holding the only overlapping output table blocks the pick",
                version(&[
                    &[],
                    &[(1, "a", "c", 600), (2, "d", "f", 600)],
                    &[(3, "b", "e", 10)],
                ]),
                claimed(&[(2, 3, "b", "e")]),
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
                Claims::new(),
                Some((2, vec![2], vec![3], false)),
            ),
            (
                "last level never compacts",
                version(&[&[], &[], &[], &[(1, "a", "c", 1 << 40)]]),
                Claims::new(),
                None,
            ),
        ];
        for (desc, v, claims, expect) in cases {
            let got = pick_compaction(&v, &opts(), &claims)
                .map(|p| (p.level, ids(&p.inputs), ids(&p.next_inputs), p.trivial_move));
            assert_eq!(got, expect, "{desc}");
        }
    }

    /// Jobs claim tables, not levels: while one L1 -> L2 compaction runs, another on a
    /// disjoint key range of the same levels is picked; one overlapping it is not, and L0
    /// compactions run one at a time.
    #[test]
    fn a_running_job_blocks_only_what_it_claims() {
        let v = version(&[
            &[],
            &[(1, "a", "c", 900), (2, "d", "f", 900), (3, "g", "i", 900)],
            &[(4, "a", "b", 10), (5, "d", "e", 10), (6, "h", "i", 10)],
        ]);
        let o = opts();
        let mut claims = Claims::new();
        let first = pick_compaction(&v, &o, &claims).unwrap();
        assert_eq!((first.level, ids(&first.inputs)), (1, vec![1]));
        claims.claim(&first);
        let second = pick_compaction(&v, &o, &claims).unwrap();
        assert_eq!((second.level, ids(&second.inputs)), (1, vec![2]));
        assert!(!claims.conflicts(&second));
        claims.claim(&second);
        let third = pick_compaction(&v, &o, &claims).unwrap();
        assert_eq!(ids(&third.inputs), vec![3]);
        claims.claim(&third);
        assert!(
            pick_compaction(&v, &o, &claims).is_none(),
            "every L1 table is taken"
        );

        let l0 = version(&[
            &[
                (1, "a", "b", 10),
                (2, "c", "d", 10),
                (3, "e", "f", 10),
                (4, "g", "h", 10),
            ],
            &[],
        ]);
        let mut claims = Claims::new();
        let p = pick_compaction(&l0, &o, &claims).unwrap();
        assert_eq!((p.level, ids(&p.inputs)), (0, vec![1]));
        claims.claim(&p);
        assert!(
            pick_compaction(&l0, &o, &claims).is_none(),
            "one L0 compaction at a time"
        );
    }

    #[test]
    fn compact_pointer_round_robin() {
        let mut v = version(&[
            &[],
            &[(1, "a", "c", 600), (2, "d", "f", 600), (3, "g", "i", 600)],
        ]);
        let o = Options {
            compaction_pri: CompactionPri::RoundRobin,
            ..opts()
        };
        let mut picked = Vec::new();
        for _ in 0..4 {
            let p = pick_compaction(&v, &o, &Claims::new()).unwrap();
            picked.push(p.inputs[0].id);
            let e = VersionEdit {
                compact_pointers: vec![(1, p.inputs[0].largest.clone())],
                ..VersionEdit::default()
            };
            v = v.apply(&e).unwrap();
        }
        assert_eq!(picked, vec![1, 2, 3, 1]);
    }

    /// A table is moved (not rewritten) only between levels of the same codec, so every
    /// table is stored with its level's compression.
    #[test]
    fn no_trivial_move_across_codecs() {
        use mezz_format::compress::Compression;
        let v = version(&[&[], &[(1, "a", "c", 600), (2, "d", "f", 600)]]);
        let o = opts();
        assert!(
            pick_compaction(&v, &o, &Claims::new())
                .unwrap()
                .trivial_move
        );
        let o = Options {
            compression: crate::options::LevelCompression::per_level(vec![
                Compression::None,
                Compression::Lz4,
                Compression::Zstd,
            ]),
            ..opts()
        };
        let p = pick_compaction(&v, &o, &Claims::new()).unwrap();
        assert!(!p.trivial_move, "{p:?}");
        // Deeper levels repeat the last codec: L2 -> L3 may move again.
        let w = version(&[&[], &[], &[(1, "a", "c", 60_000), (2, "d", "f", 60_000)]]);
        assert!(
            pick_compaction(&w, &o, &Claims::new())
                .unwrap()
                .trivial_move
        );
    }

    /// `min_overlapping_ratio` takes the table that rewrites the fewest next-level bytes per
    /// byte it moves down, whatever its place in the key space; ties go in key order.
    #[test]
    fn min_overlapping_ratio_picks_the_cheapest_table() {
        let v = version(&[
            &[],
            &[(1, "a", "c", 600), (2, "d", "f", 600), (3, "g", "i", 600)],
            &[
                (10, "a", "b", 3000),
                (11, "c", "c", 3000),
                (12, "d", "e", 500),
                (13, "g", "h", 1000),
            ],
        ]);
        let p = pick_compaction(&v, &opts(), &Claims::new()).unwrap();
        assert_eq!(ids(&p.inputs), vec![2]);
        assert_eq!(ids(&p.next_inputs), vec![12]);
        // A claim on the cheapest leaves the next cheapest.
        let mut claims = Claims::new();
        claims.claim(&p);
        let q = pick_compaction(&v, &opts(), &claims).unwrap();
        assert_eq!(ids(&q.inputs), vec![3]);
        // Equal ratios: key order.
        let flat = version(&[&[], &[(1, "a", "c", 600), (2, "d", "f", 600)]]);
        let r = pick_compaction(&flat, &opts(), &Claims::new()).unwrap();
        assert_eq!(ids(&r.inputs), vec![1]);
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
}
