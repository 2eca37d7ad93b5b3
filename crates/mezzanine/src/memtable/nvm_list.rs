//! NoveLSM's persistent skip-list memtable: [`NvmList`], one memtable's entries in one
//! extent of the NVM pool (`crate::storage::nvm`). Format: `docs/formats/nvm-skiplist.md`.
//!
//! Invariants:
//! - The extent's prefix holds the commit, reserve and low words; entries above the commit
//!   word belong to a write group a crash cut short and are never visible.
//! - The reserve word is durable above every entry's sequence number before that entry is
//!   (set up to `RESERVE_LEASE` ahead; exact after `settle_reserve`).
//! - A list that takes writes before the WALs older than it are durable carries the
//!   deferred mark (`DEFERRED_MARK`) from its creation on (see [`NvmList::create`]);
//!   recovery drops such a list when an older WAL lost its tail.
//! - Inserts (and `reserve`, `commit`) come from one thread at a time: the words ride on
//!   the fences of that thread's inserts.
//! - The list frees its extent when the last handle drops, after it was marked obsolete
//!   (the manifest no longer lists it).
//!
//! Thread-safety: `NvmList` allows concurrent readers with inserts (inserts into a
//! persistent list take turns inside the skip list).

use std::cmp::Ordering as CmpOrdering;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mezz_format::ikey::{self, MAX_SEQ, TRAILER_LEN};
use mezz_format::{InternalIterator, KeyOrder, SeqNo, ValueKind};
use mezz_pmem::skiplist::{Comparator, CorruptNode, Cursor, InsertError, SkipList};
use mezz_pmem::{Arena, PersistentWord};

pub use crate::base::limits::LIST_PREFIX;
pub use crate::base::limits::room_needed;
use crate::error::{Error, Result};
use crate::storage::nvm::{NvmObject, NvmTier, POOL_FILE};
use crate::table::LookupResult;

/// The deferred mark, XORed with the object's id, in the prefix word at offset 24: the
/// list may hold writes acknowledged before every WAL older than it was durable (a mutable
/// NVM memtable of NoveLSM, whose first writes do not wait for the sync of the WAL it
/// follows). Any other value (zero, or the stale bytes of a list written before the mark
/// existed, when that sync always came first): no such write.
pub const DEFERRED_MARK: u64 = 0x4445_4645_5252_4544; // "DEFERRED"

/// How far above a group's last sequence number the reserve word is set, so that only one
/// group in this many writes it (each write of a word costs the writer a trip to memory).
/// After a crash, new sequence numbers start up to this far above the last one used.
pub const RESERVE_LEASE: SeqNo = 4096;

fn insert_err(e: InsertError, obj: &NvmObject) -> Error {
    match e {
        InsertError::Persist(kind) => Error::Io {
            path: None,
            source: io::Error::new(kind, format!("persisting NVM memtable {} failed", obj.id)),
        },
        InsertError::Corrupt(offset) => Error::Corruption {
            file: None,
            offset: obj.offset + (LIST_PREFIX as u64) + u64::from(offset),
            detail: format!("NVM memtable {}: corrupt skip list node", obj.id).into(),
        },
        other => Error::InvalidArgument(format!("NVM memtable {}: {other}", obj.id)),
    }
}

/// The smallest sequence number at or below `committed` in `list` (one pass).
fn min_visible_seq(list: &SkipList<IkeyCmp>, committed: SeqNo) -> Option<SeqNo> {
    let mut c = Cursor::new(list);
    c.first();
    let mut min = None;
    while c.valid() {
        let seq = ikey::trailer(c.key()) >> 8;
        if seq <= committed && min.is_none_or(|m| seq < m) {
            min = Some(seq);
        }
        c.next();
    }
    min
}

/// The order of internal keys (user key ascending under the database's key order, then
/// sequence number descending).
#[derive(Debug, Clone, Default)]
pub struct IkeyCmp(pub KeyOrder);

impl Comparator for IkeyCmp {
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> CmpOrdering {
        self.0.compare_internal_wordwise(a, b)
    }
}

/// A memtable's persistent skip list in one NVM extent. See the module documentation.
///
/// Write groups are atomic: every entry of a group is inserted (each durable on its own),
/// then the commit word is set to the group's last sequence number. After a crash, entries
/// above the recovered commit word (a group cut short) stay in the list but are invisible:
/// reads clamp their sequence number to `visible_max`, iterators skip them.
#[derive(Debug)]
pub struct NvmList {
    tier: Arc<NvmTier>,
    obj: NvmObject,
    list: Arc<SkipList<IkeyCmp>>,
    commit: PersistentWord,
    /// The reserve word: set before a group is inserted, it bounds the sequence numbers
    /// physically present (so recovery needs no pass over the entries). Set
    /// `RESERVE_LEASE` ahead of the group, so that most groups do not write it; set to the
    /// exact bound when the database closes (`settle_reserve`).
    reserve: Option<PersistentWord>,
    /// The value of the reserve word (a DRAM copy: reading the word itself would miss the
    /// cache after each non-temporal store).
    reserved: AtomicU64,
    /// Whether the low word is set (a DRAM copy, as `reserved`).
    low_set: AtomicBool,
    /// The low word: published before the first group is inserted, the smallest sequence
    /// number the list holds (so recovery knows the list's range without a pass).
    low: Option<PersistentWord>,
    min_seq: AtomicU64,
    max_seq: AtomicU64,
    /// The largest sequence number physically present (visible or not).
    physical_max_seq: AtomicU64,
    /// Entries above this sequence number are invisible (`u64::MAX`: none hidden). Set
    /// from the commit word on recovery; lifted by the next commit (a recovered list that
    /// receives merges again gets the cut-short group's entries re-supplied from its WAL).
    visible_max: AtomicU64,
    /// Set once the manifest no longer lists the object: the extent is freed on drop.
    obsolete: AtomicBool,
    /// Whether the list carries the deferred mark (read from NVM on recovery).
    deferred: bool,
    /// Set once every WAL older than the list is known durable (synced, in this process):
    /// from then on a write into the list needs no sync of older WALs, even a `sync` one.
    predecessors_durable: AtomicBool,
}

impl NvmList {
    /// The order of the list's keys.
    #[must_use]
    pub fn order(&self) -> &KeyOrder {
        &self.list.comparator().0
    }

    /// A new, empty persistent skip list in `obj`. `deferred`: the list will take writes
    /// before the WALs older than it are durable, and carries the deferred mark (durable
    /// before this returns, so before any write); otherwise the mark's word is cleared.
    ///
    /// # Errors
    /// `Io` when persisting the list header fails.
    pub fn create(
        tier: &Arc<NvmTier>,
        obj: NvmObject,
        deferred: bool,
        order: &KeyOrder,
    ) -> Result<NvmList> {
        let (start, len) = tier.extent_range(&obj)?;
        let word = Self::prefix_word(tier, &obj, start, 0)?;
        word.publish(0)?;
        let reserve = Self::prefix_word(tier, &obj, start, 8)?;
        reserve.publish(0)?;
        let low = Self::prefix_word(tier, &obj, start, 16)?;
        low.publish(0)?;
        let mark = Self::prefix_word(tier, &obj, start, 24)?;
        mark.publish(if deferred { DEFERRED_MARK ^ obj.id } else { 0 })?;
        let arena = Arena::on_media(
            tier.media(),
            start + LIST_PREFIX,
            len.saturating_sub(LIST_PREFIX),
        )
        .map_err(|e| Error::InvalidArgument(format!("NVM memtable arena: {e}")))?;
        let list = SkipList::new(arena, IkeyCmp(order.clone())).map_err(|e| insert_err(e, &obj))?;
        let mut l = NvmList::new(Arc::clone(tier), obj, list, word, (u64::MAX, 0), u64::MAX);
        l.reserve = Some(reserve);
        l.low = Some(low);
        l.deferred = deferred;
        Ok(l)
    }

    /// Maps the persistent skip list of `obj` back: reads its prefix words, the list header
    /// and the head node, and nothing else (format 2; see `SkipList::recover`). Each other
    /// node is checked (bounds, checksum, key order) when a read first reaches it; a damaged
    /// one is a `Corruption` error of that read.
    ///
    /// # Errors
    /// `Corruption` naming the pool file and offset.
    pub fn recover(tier: &Arc<NvmTier>, obj: NvmObject, order: &KeyOrder) -> Result<NvmList> {
        let (start, len) = tier.extent_range(&obj)?;
        let path = tier.dir().join(POOL_FILE);
        let word = Self::prefix_word(tier, &obj, start, 0)?;
        let committed = word.load();
        let arena = Arena::recover_on_media(
            tier.media(),
            start + LIST_PREFIX,
            len.saturating_sub(LIST_PREFIX),
        )
        .map_err(|e| Error::Corruption {
            file: Some(path.clone()),
            offset: obj.offset,
            detail: format!("NVM memtable {}: {e}", obj.id).into(),
        })?;
        let (list, _report) =
            SkipList::recover(arena, IkeyCmp(order.clone())).map_err(|e| Error::Corruption {
                file: Some(path.clone()),
                offset: obj.offset,
                detail: format!("NVM memtable {}: {e}", obj.id).into(),
            })?;
        // No pass over the entries: the commit word is the largest visible sequence number,
        // the reserve word bounds every sequence number physically present.
        let reserve = Self::prefix_word(tier, &obj, start, 8)?;
        let reserved = reserve.load().max(committed);
        let low = Self::prefix_word(tier, &obj, start, 16)?;
        let range = if list.is_empty() {
            (u64::MAX, 0)
        } else {
            let lo = low.load();
            if lo == 0 || lo > committed {
                // A pool written before the low word existed: one pass finds it.
                (
                    min_visible_seq(&list, committed).unwrap_or(u64::MAX),
                    committed,
                )
            } else {
                (lo, committed)
            }
        };
        let mut l = NvmList::new(Arc::clone(tier), obj, list, word, range, committed);
        l.physical_max_seq.store(reserved, Ordering::Relaxed);
        l.reserved.store(reserved, Ordering::Relaxed);
        l.low_set.store(low.load() != 0, Ordering::Relaxed);
        l.reserve = Some(reserve);
        l.low = Some(low);
        l.deferred = Self::prefix_word(tier, &obj, start, 24)?.load() == DEFERRED_MARK ^ obj.id;
        Ok(l)
    }

    /// The commit word (`at` = 0), the reserve word (`at` = 8), the low word (`at` = 16)
    /// or the deferred mark (`at` = 24) of the NVM memtable whose extent starts at `start`.
    fn prefix_word(
        tier: &NvmTier,
        obj: &NvmObject,
        start: usize,
        at: usize,
    ) -> Result<PersistentWord> {
        PersistentWord::new(tier.media(), start + at).ok_or_else(|| Error::Corruption {
            file: Some(tier.dir().join(POOL_FILE)),
            offset: obj.offset,
            detail: format!("NVM object {} is not 8-byte aligned", obj.id).into(),
        })
    }

    fn new(
        tier: Arc<NvmTier>,
        obj: NvmObject,
        list: SkipList<IkeyCmp>,
        commit: PersistentWord,
        (lo, hi): (SeqNo, SeqNo),
        visible_max: SeqNo,
    ) -> Self {
        Self {
            tier,
            obj,
            list: Arc::new(list),
            commit,
            reserve: None,
            reserved: AtomicU64::new(0),
            low_set: AtomicBool::new(false),
            low: None,
            min_seq: AtomicU64::new(lo),
            max_seq: AtomicU64::new(hi),
            physical_max_seq: AtomicU64::new(hi),
            visible_max: AtomicU64::new(visible_max),
            obsolete: AtomicBool::new(false),
            deferred: false,
            predecessors_durable: AtomicBool::new(false),
        }
    }

    /// Whether the list carries the deferred mark: it may hold writes acknowledged before
    /// the WALs older than it were durable, so recovery drops it when one of them lost its
    /// tail.
    #[must_use]
    pub fn is_deferred(&self) -> bool {
        self.deferred
    }

    /// Whether every WAL older than the list is known durable (see
    /// [`NvmList::set_predecessors_durable`]).
    #[must_use]
    pub fn predecessors_durable(&self) -> bool {
        self.predecessors_durable.load(Ordering::Acquire)
    }

    /// Records that every WAL older than the list is durable. REQUIRES: their sync returned.
    pub fn set_predecessors_durable(&self) {
        self.predecessors_durable.store(true, Ordering::Release);
    }

    /// The largest sequence number physically in the list, including entries of a group
    /// a crash cut short (new sequence numbers must stay above it).
    #[must_use]
    pub fn physical_max_seq(&self) -> SeqNo {
        self.physical_max_seq.load(Ordering::Relaxed)
    }

    /// Announces that entries with sequence numbers in `first..=seq` are about to be
    /// inserted by this thread: the words are persisted without a fence of their own, so
    /// they are durable before any of those entries is (each insert fences its node before
    /// linking it).
    ///
    /// # Errors
    /// `Io` from persisting the reserve word.
    pub fn reserve(&self, (first, seq): (SeqNo, SeqNo)) -> Result<()> {
        // Sequence numbers only grow: the first group's first one is the smallest.
        if let Some(w) = &self.low
            && !self.low_set.load(Ordering::Relaxed)
        {
            w.stage(first)?;
            self.low_set.store(true, Ordering::Relaxed);
        }
        if let Some(w) = &self.reserve
            && self.reserved.load(Ordering::Relaxed) < seq
        {
            let lease = seq.saturating_add(RESERVE_LEASE).min(MAX_SEQ);
            w.stage(lease)?;
            self.reserved.store(lease, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Sets the reserve word to the exact bound (the largest sequence number physically in
    /// the list) when it holds a lease above it: called when the database closes, so that
    /// the next open continues the sequence without a gap. REQUIRES: no insert runs.
    ///
    /// # Errors
    /// `Io` from persisting the word (the lease stays: still a bound).
    pub fn settle_reserve(&self) -> Result<()> {
        if let Some(w) = &self.reserve {
            let exact = self.physical_max_seq.load(Ordering::Relaxed);
            if exact < self.reserved.load(Ordering::Relaxed) {
                w.publish(exact)?;
                self.reserved.store(exact, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Hides entries above the current commit word from readers until the next commit: a
    /// merge into the receiver inserts while readers iterate it, and they must neither see
    /// half a merge nor meet entries appearing under a positioned iterator (the entries stay
    /// readable in the DRAM memtable being merged).
    pub fn begin_merge(&self) {
        self.visible_max
            .store(self.commit.load(), Ordering::Release);
    }

    /// Publishes `seq` as the last sequence number whose group is wholly in the list
    /// (durable on `Ok`).
    ///
    /// # Errors
    /// `Io` from persisting the commit word.
    pub fn commit(&self, seq: SeqNo) -> Result<()> {
        self.commit.publish(seq)?;
        self.visible_max.store(u64::MAX, Ordering::Release);
        Ok(())
    }

    /// The NVM object holding the list.
    #[must_use]
    pub fn object(&self) -> NvmObject {
        self.obj
    }

    /// Marks the object released (its manifest deletion is durable): the extent returns to
    /// the pool when the last reader lets go.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    /// (smallest, largest) sequence number held; `(u64::MAX, 0)` when empty.
    #[must_use]
    pub fn seq_range(&self) -> (SeqNo, SeqNo) {
        (
            self.min_seq.load(Ordering::Relaxed),
            self.max_seq.load(Ordering::Relaxed),
        )
    }

    /// Arena bytes used.
    #[must_use]
    pub fn used(&self) -> usize {
        self.list.memory_usage()
    }

    /// Arena bytes left.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.list
            .capacity()
            .saturating_sub(self.list.memory_usage())
    }

    /// Entries (a recovered list counts them on the first call: O(n) once).
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether the list is empty (O(1)).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Adds one entry, durable on return; returns the arena bytes used. An entry already
    /// present (same user key and sequence: a replay of something already merged) is
    /// skipped.
    ///
    /// # Errors
    /// Out of room (a bug: callers reserve room first) or a failed persist.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) -> Result<usize> {
        self.insert(seq, kind, user_key, value, false)
    }

    /// Adds the one entry of a write group and commits it (`seq` becomes the commit word),
    /// both durable on return. The commit word is persisted in the fence that makes the
    /// entry's link durable, so a power cut may keep either without the other: the entry
    /// without the commit is invisible (a group cut short), the commit without the entry
    /// is a group of one entry that never became visible; both are writes not yet
    /// acknowledged. Call [`NvmList::reserve`] first, as for any group.
    ///
    /// # Errors
    /// As [`NvmList::add`].
    pub fn add_committed(
        &self,
        seq: SeqNo,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<usize> {
        let used = self.insert(seq, kind, user_key, value, true)?;
        self.visible_max.store(u64::MAX, Ordering::Release);
        Ok(used)
    }

    /// Adds the entries of one write group, numbered `first..=last` (internal keys and
    /// values, in any order), and commits it (`last` becomes the commit word): durable on
    /// return. All nodes are persisted under one fence, all their level-0 links under a
    /// second, the commit word under a third, so a power cut keeps the whole group or
    /// hides what it kept. Entries already present (a replay) are skipped, as by
    /// [`NvmList::add`]. Call [`NvmList::reserve`] first, as for any group.
    ///
    /// # Errors
    /// As [`NvmList::add`].
    pub fn add_group(
        &self,
        entries: &[(&[u8], &[u8])],
        (first, last): (SeqNo, SeqNo),
    ) -> Result<usize> {
        match self.list.insert_batch(entries) {
            Ok(()) => {}
            // All or nothing: nothing is linked. Entry by entry, skipping those present.
            // (Never on the write path, whose sequence numbers are new: the nodes written
            // by `insert_batch` stay unused, so this second copy needs room the caller
            // reserved for one.)
            Err(InsertError::Duplicate) => {
                for (k, v) in entries {
                    self.add_internal(k, v)?;
                }
            }
            Err(e) => return Err(insert_err(e, &self.obj)),
        }
        self.note_seqs(first, last);
        self.commit(last)?;
        Ok(self.used())
    }

    /// [`NvmList::add`]; with `commit`, also stages the commit word at `seq` in the
    /// insert's last fence (or publishes it, when the entry was present already).
    fn insert(
        &self,
        seq: SeqNo,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        commit: bool,
    ) -> Result<usize> {
        let trailer = ikey::pack_trailer(seq, kind);
        let fill = |k: &mut [u8], v: &mut [u8]| {
            let (uk, tr) = k.split_at_mut(user_key.len());
            uk.copy_from_slice(user_key);
            tr.copy_from_slice(&trailer.to_le_bytes());
            v.copy_from_slice(value);
        };
        let key_len = user_key.len() + TRAILER_LEN;
        let r = if commit {
            self.list
                .insert_with_then(key_len, value.len(), fill, || self.commit.stage(seq))
        } else {
            self.list.insert_with(key_len, value.len(), fill)
        };
        match r {
            Ok(()) => {}
            Err(InsertError::Duplicate) => {
                if commit {
                    self.commit.publish(seq)?;
                }
            }
            Err(e) => return Err(insert_err(e, &self.obj)),
        }
        self.note_seqs(seq, seq);
        Ok(self.used())
    }

    /// Widens the sequence range held (and physically present) to `lo..=hi`.
    fn note_seqs(&self, lo: SeqNo, hi: SeqNo) {
        self.min_seq.fetch_min(lo, Ordering::Relaxed);
        self.max_seq.fetch_max(hi, Ordering::Relaxed);
        self.physical_max_seq.fetch_max(hi, Ordering::Relaxed);
    }

    /// Adds an entry given as an encoded internal key.
    ///
    /// # Errors
    /// As [`NvmList::add`].
    pub fn add_internal(&self, internal_key: &[u8], value: &[u8]) -> Result<usize> {
        let Some(pk) = ikey::parse_internal_key(internal_key) else {
            return Err(Error::corruption(0, "malformed internal key in memtable"));
        };
        self.add(pk.seq, pk.kind, pk.user_key, value)
    }

    /// Commits everything inserted so far: publishes the largest sequence number as the
    /// commit word (each insert is already durable on its own).
    ///
    /// # Errors
    /// `Io` from persisting the commit word.
    pub fn sync(&self) -> Result<()> {
        self.commit(self.max_seq.load(Ordering::Relaxed))
    }

    /// The error for a damaged node found by a read.
    fn corrupt(&self, e: &CorruptNode) -> Error {
        corruption(&self.tier, &self.obj, e)
    }

    /// The newest entry for `user_key` at or below `seq`.
    ///
    /// # Errors
    /// `Corruption` if the search reached a damaged node (nothing of it is returned).
    pub fn get(&self, user_key: &[u8], seq: SeqNo) -> Result<Option<LookupResult>> {
        let seq = seq
            .min(self.visible_max.load(Ordering::Acquire))
            .min(ikey::MAX_SEQ);
        let target = ikey::make_internal_key(user_key, seq, ValueKind::SEEK);
        let mut c = Cursor::new(&*self.list);
        c.seek_ge(&target);
        c.status().map_err(|e| self.corrupt(&e))?;
        if !c.valid() {
            return Ok(None);
        }
        let k = c.key();
        if !self
            .list
            .comparator()
            .0
            .same_user(ikey::user_key(k), user_key)
        {
            return Ok(None);
        }
        Ok(match ValueKind::from_u8((ikey::trailer(k) & 0xff) as u8) {
            Some(ValueKind::Value) => Some(LookupResult::Value(c.value().to_vec())),
            Some(ValueKind::Deletion) | None => Some(LookupResult::Deleted),
        })
    }

    /// A bidirectional iterator over every entry; it keeps the list alive.
    #[must_use]
    pub fn iter(&self) -> Box<dyn InternalIterator<Error>> {
        // The iterator sees what was committed when it was made, and nothing that is
        // inserted later: a merge into the receiver inserts entries (older than what the
        // reader may see, so not hidden by its sequence number) while the DRAM memtable
        // being merged still serves them; entries appearing under a positioned cursor
        // would break the merging iterator's order when it changes direction. Later
        // inserts always carry sequence numbers above the commit word.
        let visible_max = self
            .visible_max
            .load(Ordering::Acquire)
            .min(self.commit.load());
        Box::new(NvmListIter {
            cursor: Cursor::new(Arc::clone(&self.list)),
            visible_max,
            tier: Arc::clone(&self.tier),
            obj: self.obj,
        })
    }
}

impl Drop for NvmList {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            self.tier.free(&self.obj);
        }
    }
}

/// Iterator over an NVM skip list.
struct NvmListIter {
    cursor: Cursor<Arc<SkipList<IkeyCmp>>>,
    visible_max: SeqNo,
    /// For the error naming a damaged node.
    tier: Arc<NvmTier>,
    obj: NvmObject,
}

impl NvmListIter {
    fn hidden(&self) -> bool {
        self.cursor.valid() && (ikey::trailer(self.cursor.key()) >> 8) > self.visible_max
    }
    fn skip_forward(&mut self) {
        while self.hidden() {
            self.cursor.next();
        }
    }
    fn skip_backward(&mut self) {
        while self.hidden() {
            self.cursor.prev();
        }
    }
}

impl std::fmt::Debug for NvmListIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmListIter")
            .field("valid", &self.cursor.valid())
            .finish()
    }
}

impl InternalIterator<Error> for NvmListIter {
    fn valid(&self) -> bool {
        self.cursor.valid()
    }
    fn seek_to_first(&mut self) {
        self.cursor.first();
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        self.cursor.last();
        self.skip_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        self.cursor.seek_ge(target);
        self.skip_forward();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cursor.seek_le(target);
        self.skip_backward();
    }
    fn next(&mut self) {
        self.cursor.next();
        self.skip_forward();
    }
    fn prev(&mut self) {
        self.cursor.prev();
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        if self.cursor.valid() {
            self.cursor.key()
        } else {
            &[]
        }
    }
    fn value(&self) -> &[u8] {
        if self.cursor.valid() {
            self.cursor.value()
        } else {
            &[]
        }
    }
    fn status(&self) -> Result<()> {
        self.cursor
            .status()
            .map_err(|e| corruption(&self.tier, &self.obj, &e))
    }
}

/// The `Corruption` error for damaged node `e` of the NVM memtable in `obj`: the pool file
/// and the node's offset in it.
fn corruption(tier: &NvmTier, obj: &NvmObject, e: &CorruptNode) -> Error {
    Error::Corruption {
        file: Some(tier.dir().join(POOL_FILE)),
        offset: obj.offset + (LIST_PREFIX as u64) + u64::from(e.offset),
        detail: format!("NVM memtable {}: {}", obj.id, e.detail).into(),
    }
}
