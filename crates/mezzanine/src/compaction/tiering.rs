//! TLSM's tiering on top of leveled compaction: which NVM tables move to SSD, which are
//! rewritten to free NVM space, and which levels' outputs are NVM tables.
//!
//! Owns: [`TieredPolicy`] (a [`CompactionPolicy`] that wraps the leveled one), and the
//! pure helpers it decides with: [`lru_held_bytes`], [`object_live_bytes`],
//! [`pool_wants_room`] and [`gc_candidate`].
//!
//! What it adds to the leveled policy, in order of priority:
//! 1. **LRU tiering** (`nvm_tiering = lru[:BYTES]`): while NVM tables hold more than the
//!    budget (their objects' live shares, [`lru_held_bytes`]), the NVM table that has
//!    stayed in NVM longest (lowest id) moves to an SST file at its level (reason
//!    [`CompactionReason::TierMove`]).
//! 2. **Upper levels first** (LRU tiering): when a flush or merge found the pool full and
//!    wrote SSTs at L0 or L1 while a deeper level holds NVM tables, and NVM tables hold,
//!    with such an SST, more than 7/8 of their budget, the oldest NVM table at the deepest
//!    level that has them moves to SSD (reason [`CompactionReason::TierMove`]). Upper
//!    levels take every flush and most merges: an SST there is read and rewritten by each
//!    of them, a table at the deepest level by few. The next merge into the upper level
//!    (or item 5) then writes its tables in NVM.
//! 3. **Buffer reclamation**: byte-addressable compaction leaves entries no live table
//!    points at in the objects its inputs pointed into. An object whose live share falls
//!    below `nvm_gc_live_ratio` has one live table that points into it rewritten in place,
//!    copying the entries it holds there (reason [`CompactionReason::NvmGc`]); once no live
//!    table points into it, the object is freed. Only while the pool's table objects take
//!    `nvm_gc_pool_share` of their budget ([`pool_wants_room`]): below that, the dead
//!    entries cost nothing and the rewrites would.
//! 4. Everything else is the leveled policy's, except that under `leveled:K` a trivial move
//!    from level K to K+1 becomes a merge (an NVM table must not land in an SST level).
//! 5. **Return to NVM** (LRU tiering, when nothing above has work): a merge that found the
//!    pool full wrote SSTs at a level kept in NVM (the pool's other users, memtables and
//!    WALs in NVM, and the inputs of merges in flight take its room for a while). Once NVM
//!    tables hold, with it, at most 7/8 of their budget and the pool has room for it, the
//!    newest such SST of the shallowest level that has one is copied into an NVM table at
//!    its level (reason [`CompactionReason::TierReturn`]). The 1/8 between that mark and
//!    the budget keeps a return from being undone by the next LRU move. A return that
//!    found no room after all (the room is an estimate) is not planned again until the
//!    pool frees an extent (the pool's room, `NvmTier::has_room_for_return`).
//!
//! Invariants: pure functions of the version, the options and the claims (and, for a
//! return, the pool's free ranges now: [`TieredPolicy::with_room`]); the plans it adds
//! take one table, write at its own level (`output_level == level`), and keep every entry
//! (see `CompactionReason::keeps_its_table`), so the level's ordering and contents do not change.
//!
//! Thread-safety: stateless, `Send + Sync`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::compaction::leveled::LeveledPolicy;
use crate::compaction::policy::{
    Claims, CompactionPlan, CompactionPolicy, CompactionReason, WritePressure, nvm_table_room,
};
use crate::options::{NvmTiering, Options};
use crate::table::{TableLocation, TableMeta};
use crate::version::Version;

/// Per NVM object: the bytes of it that live tables point at (their `nvm_refs`).
#[must_use]
pub fn object_live_bytes(version: &Version) -> BTreeMap<u64, u64> {
    live_bytes_of(version, |_| true)
}

/// Per NVM object that a table `counted` points into: the bytes those tables point at.
fn live_bytes_of(version: &Version, counted: impl Fn(&TableMeta) -> bool) -> BTreeMap<u64, u64> {
    let mut live = BTreeMap::new();
    for (_, t) in version.all_tables().filter(|(_, t)| counted(t)) {
        for r in &t.nvm_refs {
            *live.entry(r.object).or_insert(0u64) += r.bytes;
        }
    }
    live
}

/// Objects of NVM tables worth reclaiming, with their live share: those no live table
/// created (their writer is gone; other tables' pointers keep them alive) whose live bytes
/// are under `ratio` of the entry bytes written into them.
#[must_use]
pub fn reclaimable(version: &Version, ratio: f64) -> BTreeMap<u64, f64> {
    let live = object_live_bytes(version);
    let created: BTreeSet<u64> = version
        .all_tables()
        .flat_map(|(_, t)| t.nvm_refs.iter().filter(|r| r.created).map(|r| r.object))
        .collect();
    version
        .nvm_objects
        .values()
        .filter(|o| o.kind.is_table() && o.weight > 0 && !created.contains(&o.id))
        .filter_map(|o| {
            let l = live.get(&o.id).copied().unwrap_or(0);
            let share = l as f64 / o.weight as f64;
            (l > 0 && share < ratio).then_some((o.id, share))
        })
        .collect()
}

/// The object most worth reclaiming (the lowest live share among [`reclaimable`]).
#[must_use]
pub fn gc_candidate(version: &Version, ratio: f64) -> Option<u64> {
    reclaimable(version, ratio)
        .into_iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(id, _)| id)
}

/// Whether the pool's NVM-table objects (live and dead bytes alike) take at least
/// `nvm_gc_pool_share` of the NVM-table budget, so that reclaiming buffers is worth its
/// writes. Below that share the dead entries fit in the room the budget leaves.
///
/// Reclaiming a buffer that random keys spread over every table of a level means rewriting
/// every one of those tables' indexes: in TLSM's fill (4 M records of 100 bytes, a 4 GiB
/// pool holding 0.6 GB) it took 1,034 rewrites and 1.3 GB of writes to keep 43 MB less in
/// a pool that was 86 % free.
#[must_use]
pub fn pool_wants_room(version: &Version, opts: &Options) -> bool {
    let held: u64 = version
        .nvm_objects
        .values()
        .filter(|o| o.kind.is_table())
        .map(|o| o.len)
        .sum();
    held as f64 >= opts.nvm_gc_pool_share * opts.nvm_table_budget() as f64
}

/// The NVM table bytes LRU tiering holds against its budget: each table object's length,
/// scaled by the share of its entry bytes that unclaimed live tables still point at.
/// - An object only claimed tables point into (inputs of a compaction in flight) counts
///   nothing: it is freed when that compaction ends, whose outputs count instead.
/// - An object no table points into yet (a compaction's output recorded before it ends)
///   counts whole.
/// - An object without entry bytes (a persistent-buffer table's index) counts whole.
///
/// Byte-addressable compaction of random keys makes every output table point into every
/// input buffer: moving one table to SSD frees no buffer, only its share of each. Counting
/// whole objects made the policy move table after table until whole buffers were freed (11
/// tables of 67 MB to free 100 MB over the budget in the papers' YCSB load). The dead share
/// is reclaimed by the buffer GC (`nvm_gc_live_ratio`), or when the last table pointing
/// into the buffer goes.
#[must_use]
pub fn lru_held_bytes(version: &Version, claims: &Claims) -> u64 {
    let pointed = object_live_bytes(version);
    let live = live_bytes_of(version, |t| !claims.is_claimed(t.id));
    version
        .nvm_objects
        .values()
        .filter(|o| o.kind.is_table())
        .map(|o| match live.get(&o.id) {
            Some(&l) => o.live_len(l),
            None if pointed.contains_key(&o.id) => 0,
            None => o.len,
        })
        .sum()
}

/// The levels that every flush reaches (L0, and L1 by the next merge): an SST there
/// makes room below (see the module documentation, item 2). Deeper levels keep LRU order.
const UPPER_LEVELS: usize = 1;

/// A plan that rewrites table `t` of `level` in place.
fn in_place(level: usize, t: &Arc<TableMeta>, reason: CompactionReason) -> CompactionPlan {
    CompactionPlan {
        level,
        output_level: level,
        inputs: vec![Arc::clone(t)],
        next_inputs: Vec::new(),
        grandparents: Vec::new(),
        trivial_move: false,
        score: 1.0,
        reason,
    }
}

/// Whether the NVM pool has room now for NVM tables of the given bytes (the pool's free
/// ranges as they are, beside the headroom its other users need).
pub type PoolRoom = Arc<dyn Fn(u64) -> bool + Send + Sync>;

/// The leveled policy plus TLSM's tiering. See the module documentation.
pub struct TieredPolicy {
    inner: LeveledPolicy,
    opts: Options,
    /// The pool's room now, for returns to NVM (none: the version's objects alone decide).
    room: Option<PoolRoom>,
}

impl std::fmt::Debug for TieredPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TieredPolicy")
            .field("inner", &self.inner)
            .field("room", &self.room.is_some())
            .finish_non_exhaustive()
    }
}

impl TieredPolicy {
    /// The policy for `opts`.
    #[must_use]
    pub fn new(opts: &Options) -> Self {
        Self {
            inner: LeveledPolicy::new(opts),
            opts: opts.clone(),
            room: None,
        }
    }

    /// The policy for `opts` over a pool whose room `room` tells: a return to NVM is
    /// planned only when the pool can take the table now (a merge that found no room
    /// would write an SST again, and the next pick would plan the same return).
    #[must_use]
    pub fn with_room(opts: &Options, room: PoolRoom) -> Self {
        Self {
            room: Some(room),
            ..Self::new(opts)
        }
    }

    fn lru_move(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan> {
        if !matches!(self.opts.nvm_tiering, NvmTiering::Lru(_))
            || lru_held_bytes(version, claims) <= self.opts.nvm_table_budget()
        {
            return None;
        }
        let (level, t) = version
            .all_tables()
            // NVM tables only: a matrix row (in NVM too) leaves L0 through columns.
            .filter(|(_, t)| {
                matches!(t.location, TableLocation::Nvm { .. }) && !claims.is_claimed(t.id)
            })
            .min_by_key(|(_, t)| t.id)?;
        let plan = in_place(level, t, CompactionReason::TierMove);
        (!claims.conflicts(&plan)).then_some(plan)
    }

    /// See the module documentation, item 2.
    fn make_room_above(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan> {
        if !matches!(self.opts.nvm_tiering, NvmTiering::Lru(_)) {
            return None;
        }
        let (upper, sst) = version
            .all_tables()
            .filter(|(level, t)| {
                *level <= UPPER_LEVELS && matches!(t.location, TableLocation::Sst { .. })
            })
            .min_by_key(|(level, t)| (*level, std::cmp::Reverse(t.id)))?;
        let need = nvm_table_room(sst.size);
        if lru_held_bytes(version, claims).saturating_add(need)
            <= self.opts.nvm_table_budget() / 8 * 7
        {
            return None;
        }
        let (level, t) = version
            .all_tables()
            .filter(|(level, t)| {
                *level > upper
                    && matches!(t.location, TableLocation::Nvm { .. })
                    && !claims.is_claimed(t.id)
            })
            .min_by_key(|(level, t)| (std::cmp::Reverse(*level), t.id))?;
        let plan = in_place(level, t, CompactionReason::TierMove);
        (!claims.conflicts(&plan)).then_some(plan)
    }

    /// See the module documentation, item 5.
    fn tier_return(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan> {
        if !matches!(self.opts.nvm_tiering, NvmTiering::Lru(_)) {
            return None;
        }
        let ssts = || {
            version.all_tables().filter(|(level, t)| {
                matches!(t.location, TableLocation::Sst { .. }) && self.opts.level_in_nvm(*level)
            })
        };
        // The shallowest level first (as item 2 makes room for), its newest SST: a deeper
        // one returned first would take the room item 2 made and be moved out again. While
        // that level's SSTs are all in compactions, nothing returns (a deeper one would
        // still be moved out again).
        let top = ssts().map(|(level, _)| level).min()?;
        let (level, t) = ssts()
            .filter(|(level, t)| *level == top && !claims.is_claimed(t.id))
            .min_by_key(|(_, t)| std::cmp::Reverse(t.id))?;
        let need = nvm_table_room(t.size);
        let budget = self.opts.nvm_table_budget();
        if lru_held_bytes(version, claims).saturating_add(need) > budget / 8 * 7 {
            return None;
        }
        let pool_used: u64 = version.nvm_objects.values().map(|o| o.len).sum();
        if pool_used.saturating_add(need) > self.opts.nvm_capacity / 8 * 7
            || self.room.as_ref().is_some_and(|room| !room(need))
        {
            return None;
        }
        let plan = in_place(level, t, CompactionReason::TierReturn);
        (!claims.conflicts(&plan)).then_some(plan)
    }

    /// Under `leveled:k`, a table leaving the NVM levels is rewritten as SSTs, never moved.
    fn no_move_out_of_nvm(&self, mut plan: CompactionPlan) -> CompactionPlan {
        if let NvmTiering::Leveled(k) = self.opts.nvm_tiering
            && plan.trivial_move
            && plan.level <= k
            && plan.output_level > k
        {
            plan.trivial_move = false;
        }
        plan
    }

    fn reclaim(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan> {
        if !self.opts.nvm_table_method.byte_addressable() {
            return None;
        }
        if !pool_wants_room(version, &self.opts) {
            return None;
        }
        let victim = gc_candidate(version, self.opts.nvm_gc_live_ratio)?;
        let (level, t) = version
            .all_tables()
            .filter(|(_, t)| t.nvm_refs.iter().any(|r| r.object == victim))
            .find(|(_, t)| !claims.is_claimed(t.id))?;
        let plan = in_place(level, t, CompactionReason::NvmGc);
        (!claims.conflicts(&plan)).then_some(plan)
    }
}

impl CompactionPolicy for TieredPolicy {
    fn pick(&self, version: &Version, claims: &Claims) -> Option<CompactionPlan> {
        if let Some(p) = self.lru_move(version, claims) {
            return Some(p);
        }
        if let Some(p) = self.make_room_above(version, claims) {
            return Some(p);
        }
        if let Some(p) = self.reclaim(version, claims) {
            return Some(p);
        }
        match self.inner.pick(version, claims) {
            Some(plan) => Some(self.no_move_out_of_nvm(plan)),
            None => self.tier_return(version, claims),
        }
    }

    fn seek_plan(
        &self,
        version: &Version,
        claims: &Claims,
        level: usize,
        id: u64,
    ) -> Option<CompactionPlan> {
        let plan = self.inner.seek_plan(version, claims, level, id)?;
        Some(self.no_move_out_of_nvm(plan))
    }

    fn manual(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan> {
        self.inner.manual(version, level, begin, end)
    }

    fn manual_in_place(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<CompactionPlan> {
        self.inner.manual_in_place(version, level, begin, end)
    }

    fn pending_bytes(&self, version: &Version) -> u64 {
        self.inner.pending_bytes(version)
    }

    fn write_pressure(&self, version: &Version, pending_bytes: u64) -> WritePressure {
        self.inner.write_pressure(version, pending_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::VersionEdit;
    use crate::storage::nvm::NvmObject;
    use crate::storage::nvm::NvmObjectKind;
    use crate::version::tests::meta;

    fn nvm_table(id: u64, lo: &str, hi: &str, refs: &[(u64, u64)]) -> TableMeta {
        let mut t = meta(id, lo, hi, (id, id), 100);
        t.location = TableLocation::Nvm { object: id };
        t.nvm_refs = refs
            .iter()
            .map(|&(object, bytes)| crate::table::NvmRef {
                object,
                bytes,
                created: object == id,
            })
            .collect();
        t
    }

    fn obj(id: u64, kind: NvmObjectKind, offset: u64, len: u64) -> NvmObject {
        NvmObject {
            id,
            kind,
            offset,
            len,
            weight: len.saturating_sub(4096),
        }
    }

    fn version(tables: &[(usize, TableMeta)], objects: &[NvmObject]) -> Version {
        let e = VersionEdit {
            new_tables: tables.to_vec(),
            new_nvm_objects: objects.to_vec(),
            ..VersionEdit::default()
        };
        Version::new(4).apply(&e).unwrap()
    }

    #[test]
    fn lru_moves_the_oldest_nvm_table_once_over_budget() {
        let mut o = Options {
            nvm_tiering: NvmTiering::Lru(10_000),
            ..Options::default()
        };
        let p = TieredPolicy::new(&o);
        // Object 5: 8 KiB holding 4 KiB of entries, all live; object 9: an index (no
        // entry bytes), counted whole.
        let objs = [
            obj(5, NvmObjectKind::TableIndex, 4096, 8192),
            obj(9, NvmObjectKind::TableIndex, 16384, 4096),
        ];
        let v = version(
            &[
                (1, nvm_table(9, "m", "p", &[(9, 0)])),
                (0, nvm_table(5, "a", "c", &[(5, 4096)])),
            ],
            &objs,
        );
        assert_eq!(lru_held_bytes(&v, &Claims::new()), 12_288);
        let plan = p.pick(&v, &Claims::new()).unwrap();
        assert_eq!(plan.reason, CompactionReason::TierMove);
        assert_eq!((plan.level, plan.output_level), (0, 0));
        assert_eq!(plan.inputs[0].id, 5);
        // Within budget: nothing to move.
        o.nvm_tiering = NvmTiering::Lru(20_000);
        assert!(TieredPolicy::new(&o).pick(&v, &Claims::new()).is_none());
        // While table 5 moves, its object counts as freed: 4,096 bytes stay, within budget.
        let mut c = Claims::new();
        c.claim(&plan);
        o.nvm_tiering = NvmTiering::Lru(10_000);
        assert_eq!(lru_held_bytes(&v, &c), 4096);
        assert!(TieredPolicy::new(&o).pick(&v, &c).is_none());
        // Still over budget without it: a claimed table is skipped, the next one moves.
        o.nvm_tiering = NvmTiering::Lru(2_000);
        let next = TieredPolicy::new(&o).pick(&v, &c).unwrap();
        assert_eq!(next.inputs[0].id, 9);
    }

    #[test]
    fn an_sst_at_an_nvm_level_returns_once_the_pool_has_room() {
        // L1: NVM table 5 (8 KiB object) and SSTs 11 and 12 that merges wrote for want of
        // pool room; no level is over its target, so the leveled policy has nothing to do.
        let mut o = Options {
            nvm_tiering: NvmTiering::Lru(100_000),
            nvm_capacity: 1 << 20,
            ..Options::default()
        };
        let objs = [obj(5, NvmObjectKind::TableIndex, 4096, 8192)];
        let v = version(
            &[
                (1, nvm_table(5, "a", "c", &[(5, 4096)])),
                (1, meta(11, "d", "f", (1, 1), 1000)),
                (1, meta(12, "g", "i", (2, 2), 1000)),
            ],
            &objs,
        );
        let plan = TieredPolicy::new(&o).pick(&v, &Claims::new()).unwrap();
        assert_eq!(plan.reason, CompactionReason::TierReturn);
        assert_eq!((plan.level, plan.output_level), (1, 1));
        assert_eq!(plan.inputs[0].id, 12, "the newest SST first");
        // Table 12 on its way: table 11 is next.
        let mut c = Claims::new();
        c.claim(&plan);
        assert_eq!(TieredPolicy::new(&o).pick(&v, &c).unwrap().inputs[0].id, 11);
        // 8,192 held + 1,250 for the table is over 7/8 of a 10,000-byte budget: it stays
        // (a return would be undone by the next LRU move).
        o.nvm_tiering = NvmTiering::Lru(10_000);
        assert!(TieredPolicy::new(&o).pick(&v, &Claims::new()).is_none());
        // Room in the budget but not in the pool (its other users hold it).
        o.nvm_tiering = NvmTiering::Lru(100_000);
        o.nvm_capacity = 10_000;
        assert!(TieredPolicy::new(&o).pick(&v, &Claims::new()).is_none());
        // A pool whose free ranges cannot take it now (fragmented, or held by objects the
        // version does not list yet).
        o.nvm_capacity = 1 << 20;
        let full = TieredPolicy::with_room(&o, Arc::new(|_| false));
        assert!(full.pick(&v, &Claims::new()).is_none());
        let roomy = TieredPolicy::with_room(&o, Arc::new(|_| true));
        assert!(roomy.pick(&v, &Claims::new()).is_some());
        // Only LRU tiering returns tables.
        o.nvm_tiering = NvmTiering::Full;
        assert!(TieredPolicy::new(&o).pick(&v, &Claims::new()).is_none());
    }

    #[test]
    fn an_sst_above_nvm_tables_has_the_deepest_oldest_one_move_to_ssd() {
        // L1: NVM table 20 and SST 21 (a merge found the pool full); L2: NVM tables 5 and
        // 9, L3: NVM tables 7 and 8 and SST 3. 4 x 8 KiB + 4 KiB held, with SST 21's
        // 1,250 bytes, is over 7/8 of a 40,000-byte budget (and within it: no LRU move).
        let mut o = Options {
            nvm_tiering: NvmTiering::Lru(40_000),
            nvm_capacity: 1 << 20,
            ..Options::default()
        };
        let objs = [
            obj(5, NvmObjectKind::TableIndex, 4096, 8192),
            obj(7, NvmObjectKind::TableIndex, 12_288, 8192),
            obj(8, NvmObjectKind::TableIndex, 20_480, 8192),
            obj(9, NvmObjectKind::TableIndex, 28_672, 8192),
            obj(20, NvmObjectKind::TableIndex, 36_864, 4096),
        ];
        let tables = [
            (1, nvm_table(20, "a", "c", &[(20, 0)])),
            (1, meta(21, "d", "f", (1, 1), 1000)),
            (2, nvm_table(5, "a", "c", &[(5, 4096)])),
            (2, nvm_table(9, "d", "f", &[(9, 4096)])),
            (3, nvm_table(7, "a", "b", &[(7, 4096)])),
            (3, nvm_table(8, "c", "d", &[(8, 4096)])),
            (3, meta(3, "e", "f", (3, 3), 1000)),
        ];
        let v = version(&tables, &objs);
        assert_eq!(lru_held_bytes(&v, &Claims::new()), 36_864);
        let plan = TieredPolicy::new(&o).pick(&v, &Claims::new()).unwrap();
        assert_eq!(plan.reason, CompactionReason::TierMove);
        assert_eq!((plan.level, plan.output_level), (3, 3));
        assert_eq!(
            plan.inputs[0].id, 7,
            "the oldest table of the deepest NVM level"
        );
        // Table 7 on its way: 28,672 + 1,250 is within 7/8 of the budget, nothing more moves.
        let mut c = Claims::new();
        c.claim(&plan);
        assert!(TieredPolicy::new(&o).make_room_above(&v, &c).is_none());
        // With a smaller budget the next one is table 8, then L2's oldest.
        o.nvm_tiering = NvmTiering::Lru(30_000);
        let next = TieredPolicy::new(&o).make_room_above(&v, &c).unwrap();
        assert_eq!(next.inputs[0].id, 8);
        c.claim(&next);
        o.nvm_tiering = NvmTiering::Lru(20_000);
        assert_eq!(
            TieredPolicy::new(&o)
                .make_room_above(&v, &c)
                .unwrap()
                .inputs[0]
                .id,
            5
        );
        // SSTs only at the deepest level (below every NVM table): nothing moves.
        let v = version(
            &[tables[0].clone(), tables[2].clone(), tables[6].clone()],
            &objs,
        );
        o.nvm_tiering = NvmTiering::Lru(10_000);
        assert!(
            TieredPolicy::new(&o)
                .make_room_above(&v, &Claims::new())
                .is_none()
        );
        // Room made: L1's SST returns before a newer SST of a deeper level (which would take
        // the room and be moved out again).
        let mut t = tables.to_vec();
        t.push((3, meta(30, "g", "h", (4, 4), 1000)));
        let v = version(&t, &objs);
        o.nvm_tiering = NvmTiering::Lru(100_000);
        let back = TieredPolicy::new(&o).pick(&v, &Claims::new()).unwrap();
        assert_eq!(back.reason, CompactionReason::TierReturn);
        assert_eq!((back.level, back.inputs[0].id), (1, 21));
        // L1's SST in a compaction: no deeper SST returns meanwhile.
        let mut c = Claims::new();
        c.claim(&in_place(1, &v.levels[1][1], CompactionReason::Seek));
        assert_eq!(v.levels[1][1].id, 21);
        assert!(TieredPolicy::new(&o).tier_return(&v, &c).is_none());
        // Only LRU tiering moves tables.
        let v = version(&tables, &objs);
        o.nvm_tiering = NvmTiering::Full;
        assert!(
            TieredPolicy::new(&o)
                .make_room_above(&v, &Claims::new())
                .is_none()
        );
    }

    #[test]
    fn a_merge_in_flight_does_not_push_other_tables_out() {
        // Table 5 (buffer 5) is being merged; its output's buffer 7 is recorded before the
        // merge ends and no table points into it yet: 8 KiB + 8 KiB over a 12 KiB budget,
        // but buffer 5 is freed at the end, so table 9 stays in NVM.
        let o = Options {
            nvm_tiering: NvmTiering::Lru(12_000),
            ..Options::default()
        };
        let objs = [
            obj(5, NvmObjectKind::TableBuffer, 4096, 8192),
            obj(7, NvmObjectKind::TableBuffer, 12288, 8192),
            obj(9, NvmObjectKind::TableIndex, 20480, 100),
        ];
        let merged = nvm_table(5, "a", "c", &[(5, 4096)]);
        let other = nvm_table(9, "m", "p", &[(9, 0)]);
        let v = version(&[(0, merged.clone()), (1, other.clone())], &objs);
        let mut c = Claims::new();
        c.claim(&in_place(
            0,
            &Arc::new(merged.clone()),
            CompactionReason::Manual,
        ));
        assert_eq!(lru_held_bytes(&v, &c), 8192 + 100);
        assert!(TieredPolicy::new(&o).pick(&v, &c).is_none());
        // Without the claim, the oldest table moves.
        let plan = TieredPolicy::new(&o).pick(&v, &Claims::new()).unwrap();
        assert_eq!(plan.inputs[0].id, 5);
        // An unclaimed table pointing into buffer 5 keeps it live: table 6 moves.
        let sharer = nvm_table(6, "e", "f", &[(5, 4096)]);
        let v = version(&[(0, merged), (0, sharer), (1, other)], &objs);
        assert_eq!(lru_held_bytes(&v, &c), 8192 + 8192 + 100);
        let plan = TieredPolicy::new(&o).pick(&v, &c).unwrap();
        assert_eq!(plan.reason, CompactionReason::TierMove);
        assert_eq!(plan.inputs[0].id, 6);
    }

    #[test]
    fn moving_a_table_out_of_a_shared_buffer_counts_its_share_as_gone() {
        // Buffer 3 (12 KiB, 8 KiB of entries) is shared half and half by tables 7 and 8,
        // each with its own 4 KiB index: 20 KiB over a 15,000-byte budget.
        let o = Options {
            nvm_tiering: NvmTiering::Lru(15_000),
            ..Options::default()
        };
        let objs = [
            obj(3, NvmObjectKind::TableBuffer, 4096, 12_288),
            obj(7, NvmObjectKind::TableIndex, 16_384, 4096),
            obj(8, NvmObjectKind::TableIndex, 20_480, 4096),
        ];
        let t7 = nvm_table(7, "a", "f", &[(3, 4096), (7, 0)]);
        let t8 = nvm_table(8, "g", "k", &[(3, 4096), (8, 0)]);
        let v = version(&[(1, t7.clone()), (1, t8.clone())], &objs);
        assert_eq!(lru_held_bytes(&v, &Claims::new()), 20_480);
        let plan = TieredPolicy::new(&o).pick(&v, &Claims::new()).unwrap();
        assert_eq!(plan.inputs[0].id, 7);
        // Table 7 on its way to SSD: half of buffer 3 is dead, 6 KiB of it count, plus
        // table 8's index: within budget, so table 8 stays (counting whole objects, 16 KiB
        // would stay and table 8 would move too, freeing buffer 3 only then).
        let mut c = Claims::new();
        c.claim(&plan);
        assert_eq!(lru_held_bytes(&v, &c), 6144 + 4096);
        assert!(TieredPolicy::new(&o).pick(&v, &c).is_none());
        // Once it has moved (its index freed with it), the same.
        let v = version(&[(1, t8)], &[objs[0], objs[2]]);
        assert_eq!(lru_held_bytes(&v, &Claims::new()), 6144 + 4096);
    }

    #[test]
    fn a_mostly_dead_buffer_in_a_half_full_pool_has_a_table_pointing_into_it_rewritten() {
        // Table objects of 22,288 bytes in a pool of 40,000: over half of it.
        let mut o = Options {
            nvm_tiering: NvmTiering::Full,
            nvm_capacity: 40_000,
            ..Options::default()
        };
        let objs = [
            obj(3, NvmObjectKind::TableBuffer, 4096, 14_096),
            obj(7, NvmObjectKind::TableIndex, 20480, 4096),
            obj(8, NvmObjectKind::TableIndex, 24576, 4096),
        ];
        // Tables 7 and 8 point at 4,000 of the buffer's 10,000 bytes: below 0.5.
        let v = version(
            &[
                (1, nvm_table(7, "a", "f", &[(3, 2000), (7, 0)])),
                (1, nvm_table(8, "g", "k", &[(3, 2000), (8, 0)])),
            ],
            &objs,
        );
        assert_eq!(gc_candidate(&v, 0.5), Some(3));
        assert_eq!(gc_candidate(&v, 0.3), None);
        let plan = TieredPolicy::new(&o).pick(&v, &Claims::new()).unwrap();
        assert_eq!(plan.reason, CompactionReason::NvmGc);
        assert_eq!((plan.level, plan.output_level), (1, 1));
        // In a pool of 50,000 the same objects take under half: the dead bytes stay, until
        // the share asked for is lower.
        let roomy = Options {
            nvm_capacity: 50_000,
            ..o.clone()
        };
        assert!(!pool_wants_room(&v, &roomy));
        assert!(TieredPolicy::new(&roomy).pick(&v, &Claims::new()).is_none());
        let eager = Options {
            nvm_gc_pool_share: 0.4,
            ..roomy
        };
        let plan = TieredPolicy::new(&eager).pick(&v, &Claims::new()).unwrap();
        assert_eq!(plan.reason, CompactionReason::NvmGc);
        // Table objects whose own table is live are never candidates.
        let v = version(&[(1, nvm_table(7, "a", "f", &[(7, 10)]))], &objs[1..2]);
        assert_eq!(gc_candidate(&v, 0.99), None);
        // `ps` never points, so it never reclaims.
        o.nvm_table_method = crate::options::NvmTableMethod::Ps;
        let v = version(
            &[(1, nvm_table(7, "a", "f", &[(3, 2000), (7, 0)]))],
            &objs[..2],
        );
        assert!(TieredPolicy::new(&o).reclaim(&v, &Claims::new()).is_none());
    }
}
