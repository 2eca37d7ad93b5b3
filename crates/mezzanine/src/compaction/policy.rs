//! The compaction-policy seam: what a policy decides, and the claims of running jobs.
//!
//! Owns: [`CompactionPolicy`] (pick the next compaction, plan a manual one, estimate the
//! pending work, say how hard writers must be held back), [`CompactionPlan`] (what one job
//! does), [`Claims`] (the tables and key ranges that running jobs hold) and
//! [`WritePressure`]. The leveled policy (`compaction::leveled`) is today's only one;
//! TLSM's tiering and MatrixKV's column compaction are further implementations.
//!
//! Invariants: a policy is a pure function of the version, its options and the claims (no
//! I/O, no engine state), with one exception: TLSM's tiering asks the NVM pool whether a
//! free range would take a table now before it plans a return from SSD (a read of the
//! allocator under its own lock, `compaction::tiering`). A plan is only started when it conflicts with no claim (see
//! [`Claims::conflicts`]), so two running jobs never read or write the same table, and never
//! write overlapping key ranges into one level.
//!
//! Thread-safety: policies are `Send + Sync` and stateless; `Claims` lives under the
//! engine's state lock.

use std::sync::Arc;

use mezz_format::KeyOrder;

use crate::table::TableMeta;
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
    /// LRU tiering: an NVM table moves to an SST file at its level.
    TierMove,
    /// An NVM table is rewritten so that a mostly dead NVM object can be freed.
    NvmGc,
    /// LRU tiering: an SST at a level kept in NVM (written there for want of pool room)
    /// returns into an NVM table at its level once the pool has room again.
    TierReturn,
    /// MatrixKV: a column of the matrix container's compactor rows merges into L1.
    Column,
    /// Point reads searched a table in vain often enough (`Options::seek_compaction`).
    Seek,
}

impl CompactionReason {
    /// Whether the job copies one table at its own level, keeping every entry (a tier
    /// move, a rewrite, a return): the level's contents do not change.
    #[must_use]
    pub fn keeps_its_table(self) -> bool {
        matches!(
            self,
            CompactionReason::TierMove | CompactionReason::NvmGc | CompactionReason::TierReturn
        )
    }

    /// Whether the job copies one table into NVM tables at its own level (a rewrite, a
    /// return from SSD): its point is to be in NVM, so it never goes on in SSTs, and its
    /// outputs are not resumed after a crash (the input stays; the policy plans it again).
    #[must_use]
    pub fn copies_into_nvm(self) -> bool {
        matches!(self, CompactionReason::NvmGc | CompactionReason::TierReturn)
    }
}

/// The room the pool must have for an NVM table copying `bytes` of entries: a quarter
/// more for its index (and, for a merge's cut, the entry that passes the target size).
#[must_use]
pub fn nvm_table_room(bytes: u64) -> u64 {
    bytes.saturating_add(bytes / 4)
}

/// One planned compaction: inputs from `level` and `level + 1`, output to `level + 1` (or,
/// for a manual rewrite of the bottom-most level, inputs and output both at `level`).
#[derive(Debug, Clone)]
#[allow(dead_code)] // set for diagnostics and tests; not read by the engine
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
    #[allow(dead_code)] // set for diagnostics and tests; not read by the engine
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

    /// Every input table (from `level`, then from `output_level`).
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<TableMeta>> {
        self.inputs.iter().chain(&self.next_inputs)
    }

    /// The user-key range the plan reads and writes (`None` for a plan without inputs),
    /// keys ordered by `order`.
    #[must_use]
    pub fn user_range(&self, order: &KeyOrder) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut it = self.all_inputs();
        let first = it.next()?;
        let (mut lo, mut hi) = (first.smallest_user_key(), first.largest_user_key());
        for t in it {
            lo = order.min_user(lo, t.smallest_user_key());
            hi = order.max_user(hi, t.largest_user_key());
        }
        Some((lo.to_vec(), hi.to_vec()))
    }
}

/// Why writers are held back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallCause {
    /// Too many L0 tables (the policy's trigger).
    L0,
    /// Too many bytes of pending compaction.
    PendingBytes,
    /// Every memtable is full (decided by the memtable set, not the policy).
    Memtables,
}

/// How hard the shape of the tree must hold writers back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WritePressure {
    /// Write at full speed.
    None,
    /// Slow down: `progress` from 0 (just over the slowdown trigger) to 1 (at the stop).
    Slowdown {
        /// What is behind.
        cause: StallCause,
        /// How close to the stop, 0..=1.
        progress: f64,
    },
    /// Stop until background work catches up.
    Stop(StallCause),
}

/// A compaction policy. See the module documentation.
pub trait CompactionPolicy: Send + Sync + std::fmt::Debug {
    /// The next compaction the tree needs, among those that conflict with no claim.
    fn pick(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan>;
    /// A manual compaction of every table of `level` overlapping `[begin, end]` (`None` =
    /// unbounded) into the next level; never a trivial move.
    fn manual(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan>;
    /// A manual rewrite in place of the tables of `level` (the deepest holding data in the
    /// range) overlapping `[begin, end]`, which drops what nothing above would ever reach.
    fn manual_in_place(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan>;
    /// A compaction of table `id` of `level`, which point reads searched in vain often
    /// enough (`Options::seek_compaction`), if one may start beside the claims. Default:
    /// none (a policy without read-triggered compactions).
    fn seek_plan(
        &self,
        _version: &Version,
        _claims: &Claims,
        _level: usize,
        _id: u64,
    ) -> Option<CompactionPlan> {
        None
    }
    /// Estimated bytes compaction must still rewrite to bring the tree into shape.
    fn pending_bytes(&self, version: &Version) -> u64;
    /// How hard writers must be held back, given the version and its pending bytes.
    fn write_pressure(&self, version: &Version, pending_bytes: u64) -> WritePressure;
    /// Whether a flush should wait for a compaction that is running or due, because its
    /// output would not fit where flushes go (MatrixKV: the container has no room for
    /// another row until a column drains one). Default: never.
    fn flush_waits_for_compaction(&self, _version: &Version) -> bool {
        false
    }
}

/// What one running job holds.
#[derive(Debug, Clone)]
struct Claim {
    job: u64,
    tables: Vec<u64>,
    levels: (usize, usize),
    range: Option<(Vec<u8>, Vec<u8>)>,
}

/// The tables (and key ranges per level) held by running compactions. A plan conflicts
/// with a claim if it takes one of its tables, or if their key ranges overlap and they
/// touch a common level (one reads or writes a level the other writes, over the same keys).
#[derive(Debug, Default, Clone)]
pub struct Claims {
    claims: Vec<Claim>,
    next_job: u64,
    /// The order key ranges are compared in.
    order: KeyOrder,
}

/// The handle of a claim, to release it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimId(u64);

fn ranges_overlap(
    a: &Option<(Vec<u8>, Vec<u8>)>,
    b: &Option<(Vec<u8>, Vec<u8>)>,
    order: &KeyOrder,
) -> bool {
    match (a, b) {
        (Some((alo, ahi)), Some((blo, bhi))) => {
            order.compare_user(alo, bhi).is_le() && order.compare_user(blo, ahi).is_le()
        }
        _ => false,
    }
}

impl Claims {
    /// No claims (key ranges compared bytewise).
    #[must_use]
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// No claims; key ranges compared in `order`.
    #[must_use]
    pub fn with_order(order: KeyOrder) -> Self {
        Self {
            order,
            ..Self::default()
        }
    }

    /// Whether no job holds anything.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }

    /// Whether table `id` is held by a running job.
    #[must_use]
    pub fn is_claimed(&self, id: u64) -> bool {
        self.claims.iter().any(|c| c.tables.contains(&id))
    }

    /// Whether a running job reads from `level` (has input tables there).
    #[must_use]
    pub fn reads_level(&self, level: usize) -> bool {
        self.claims.iter().any(|c| c.levels.0 == level)
    }

    /// Whether `plan` may not start beside the running jobs.
    #[must_use]
    pub fn conflicts(&self, plan: &CompactionPlan) -> bool {
        let range = plan.user_range(&self.order);
        let levels = [plan.level, plan.output_level];
        self.claims.iter().any(|c| {
            plan.all_inputs().any(|t| c.tables.contains(&t.id))
                || (ranges_overlap(&range, &c.range, &self.order)
                    && (levels.contains(&c.levels.0) || levels.contains(&c.levels.1)))
        })
    }

    /// Records that a job runs `plan`. REQUIRES: `!self.conflicts(plan)`.
    pub fn claim(&mut self, plan: &CompactionPlan) -> ClaimId {
        let job = self.next_job;
        self.next_job += 1;
        self.claims.push(Claim {
            job,
            tables: plan.all_inputs().map(|t| t.id).collect(),
            levels: (plan.level, plan.output_level),
            range: plan.user_range(&self.order),
        });
        ClaimId(job)
    }

    /// Releases the claim of a finished job.
    pub fn release(&mut self, id: ClaimId) {
        self.claims.retain(|c| c.job != id.0);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::version::tests::meta;

    /// A plan from `level` taking `inputs` and `next` (id, smallest, largest user key).
    pub(crate) fn plan(
        level: usize,
        inputs: &[(u64, &str, &str)],
        next: &[(u64, &str, &str)],
    ) -> CompactionPlan {
        let m = |&(id, lo, hi): &(u64, &str, &str)| Arc::new(meta(id, lo, hi, (id, id), 10));
        CompactionPlan {
            level,
            output_level: level + 1,
            inputs: inputs.iter().map(m).collect(),
            next_inputs: next.iter().map(m).collect(),
            grandparents: Vec::new(),
            trivial_move: false,
            score: 1.0,
            reason: CompactionReason::LevelSize,
        }
    }

    #[test]
    fn claims_conflict_on_shared_tables_and_on_overlapping_ranges_of_a_shared_level() {
        let mut c = Claims::new();
        let a = plan(1, &[(1, "a", "c")], &[(2, "b", "d")]);
        assert!(!c.conflicts(&a));
        let id = c.claim(&a);
        assert!(c.is_claimed(1) && c.is_claimed(2) && !c.is_claimed(3));
        // Same table.
        assert!(c.conflicts(&plan(2, &[(2, "b", "d")], &[])));
        // Disjoint keys on the same levels: runs beside it.
        assert!(!c.conflicts(&plan(1, &[(3, "m", "p")], &[(4, "m", "n")])));
        // Overlapping keys written into a level it writes.
        assert!(c.conflicts(&plan(1, &[(5, "c", "c")], &[])));
        // Overlapping keys, but levels it does not touch.
        assert!(!c.conflicts(&plan(3, &[(6, "a", "z")], &[])));
        // Overlapping keys read from the level it writes.
        assert!(c.conflicts(&plan(2, &[(7, "a", "b")], &[])));
        assert!(c.reads_level(1) && !c.reads_level(2));
        c.release(id);
        assert!(c.is_empty());
        assert!(!c.conflicts(&a));
    }
}
