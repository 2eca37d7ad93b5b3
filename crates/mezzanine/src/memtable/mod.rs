//! Memtables: a concurrent skip list of internal keys, in DRAM or in NVM.
//!
//! Owns: the entries written since the last switch (one per put/delete, every version kept),
//! ordered by internal key (user key ascending, sequence number descending), and the
//! [`InternalIterator`] over them used by reads, scans and flushes. A memtable's entries
//! live either in DRAM (the default, fed through a WAL) or in an NVM skip list
//! ([`crate::memtable::nvm_list::NvmList`], NoveLSM: durable per insert, recovered by mapping); both behave
//! the same to readers.
//!
//! DRAM layout: each entry is one `Arc<[u8]>` holding `user_key | trailer (8 bytes LE) | value`
//! plus the key length, stored as the key of a `crossbeam_skiplist::SkipMap` (one allocation
//! per entry). Lookups compare a borrowed `(user_key, trailer)` pair against the entries
//! through the `dyn KeyLike` borrow, so `get` and `seek` allocate nothing.
//!
//! Invariants: entries are never removed or modified; adding the same (user key, seq, kind)
//! twice keeps one entry (the engine never does it: sequence numbers are unique).
//!
//! Thread-safety: `MemTable` is `Send + Sync`; `add` may be called from several threads at
//! once, concurrently with `get` and iterators. An iterator sees every entry added before it
//! was positioned and may or may not see entries added concurrently (readers filter those by
//! sequence number anyway).

pub mod nvm_list;
pub mod set;

use std::borrow::Borrow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use crossbeam_skiplist::SkipMap;
use mezz_format::ikey::{self, TRAILER_LEN};
use mezz_format::{InternalIterator, SeqNo, ValueKind};

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::table::LookupResult;
use nvm_list::NvmList;

/// Estimated bytes per entry beyond its key and value: the skip-list node (key handle,
/// tower of 1.33 links on average, reference count), and the `Arc` header.
const ENTRY_OVERHEAD: usize = 80;

/// Something that can be compared as an internal key: a user key and a trailer.
trait KeyLike {
    fn user_key(&self) -> &[u8];
    fn trailer(&self) -> u64;
}

#[inline]
fn cmp_keylike(a_uk: &[u8], a_tr: u64, b_uk: &[u8], b_tr: u64) -> Ordering {
    match a_uk.cmp(b_uk) {
        Ordering::Equal => b_tr.cmp(&a_tr),
        o => o,
    }
}

impl PartialEq for dyn KeyLike + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for dyn KeyLike + '_ {}
impl PartialOrd for dyn KeyLike + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for dyn KeyLike + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_keylike(
            self.user_key(),
            self.trailer(),
            other.user_key(),
            other.trailer(),
        )
    }
}

/// One memtable entry: `user_key | trailer | value` in one allocation.
#[derive(Clone, Debug)]
struct MemKey {
    data: Arc<[u8]>,
    /// Length of the user key (the trailer follows it).
    key_len: u32,
}

impl MemKey {
    #[inline]
    fn internal_key(&self) -> &[u8] {
        self.data
            .get(..self.key_len as usize + TRAILER_LEN)
            .unwrap_or(&[])
    }
    #[inline]
    fn value(&self) -> &[u8] {
        self.data
            .get(self.key_len as usize + TRAILER_LEN..)
            .unwrap_or(&[])
    }
}

impl KeyLike for MemKey {
    #[inline]
    fn user_key(&self) -> &[u8] {
        self.data.get(..self.key_len as usize).unwrap_or(&[])
    }
    #[inline]
    fn trailer(&self) -> u64 {
        let k = self.key_len as usize;
        self.data
            .get(k..k + TRAILER_LEN)
            .and_then(|t| t.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    }
}

impl PartialEq for MemKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for MemKey {}
impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_keylike(
            self.user_key(),
            self.trailer(),
            other.user_key(),
            other.trailer(),
        )
    }
}

impl<'a> Borrow<dyn KeyLike + 'a> for MemKey {
    fn borrow(&self) -> &(dyn KeyLike + 'a) {
        self
    }
}

/// A borrowed lookup key.
struct LookupKey<'a> {
    user_key: &'a [u8],
    trailer: u64,
}

impl<'a> LookupKey<'a> {
    /// From an encoded internal key (a malformed one compares as user key + trailer 0).
    fn from_internal(ikey_bytes: &'a [u8]) -> Self {
        Self {
            user_key: ikey::user_key(ikey_bytes),
            trailer: ikey::trailer(ikey_bytes),
        }
    }
}

impl KeyLike for LookupKey<'_> {
    fn user_key(&self) -> &[u8] {
        self.user_key
    }
    fn trailer(&self) -> u64 {
        self.trailer
    }
}

thread_local! {
    /// Scratch buffer in which an entry is assembled before it is copied into its `Arc`.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The nice value the memtable-freeing thread should run at (the highest any open
/// database asked for).
static RECLAIM_NICE: AtomicI32 = AtomicI32::new(0);

/// Asks the thread that frees dropped memtables to run at nice value `nice` (or lower
/// priority, if another database asked for that).
pub(crate) fn set_reclaim_nice(nice: i32) {
    RECLAIM_NICE.fetch_max(nice, AtomicOrdering::Relaxed);
}

/// Frees DRAM memtables on a background thread. A full memtable holds hundreds of
/// thousands of separately allocated entries, and freeing them takes 100-200 ms; whichever
/// thread drops the last reference would pay it, often a reader or writer that happened to
/// hold the last super version naming a flushed memtable. Dropping hands the map to this
/// thread instead (falling back to freeing in place if it cannot be started).
///
/// The thread runs at the nice value of the background threads of the databases opened
/// (the highest asked for; see `Options::background_nice`), lowered before each drop.
fn reclaim_later(map: SkipMap<MemKey, ()>) {
    static RECLAIMER: std::sync::OnceLock<Option<crossbeam_channel::Sender<SkipMap<MemKey, ()>>>> =
        std::sync::OnceLock::new();
    let tx = RECLAIMER.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::unbounded::<SkipMap<MemKey, ()>>();
        std::thread::Builder::new()
            .name("mezz-reclaim".into())
            .spawn(move || {
                let mut applied = 0;
                while let Ok(map) = rx.recv() {
                    let nice = RECLAIM_NICE.load(AtomicOrdering::Relaxed);
                    if nice > applied {
                        applied = nice;
                        // Advisory: where the kernel refuses, the thread runs as it is.
                        let _ = mezz_pmem::sched::lower_current_thread_priority(nice);
                    }
                    drop(map);
                }
            })
            .ok()
            .map(|_| tx)
    });
    if let Some(tx) = tx
        && let Err(crossbeam_channel::SendError(map)) = tx.send(map)
    {
        drop(map);
    }
}

/// Where a memtable's entries live. (The DRAM variant is larger, but there is one per
/// memtable: boxing it would add an indirection to every insert for nothing.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Store {
    Dram(SkipMap<MemKey, ()>),
    Nvm(NvmList),
}

/// The write buffer. See the module documentation.
#[derive(Debug)]
pub struct MemTable {
    id: u64,
    store: Store,
    memory: AtomicUsize,
    max_seq: AtomicU64,
    min_seq: AtomicU64,
}

impl MemTable {
    /// An empty DRAM memtable. `id` identifies it (the engine uses the number of its WAL).
    #[must_use]
    pub fn new(id: u64) -> Self {
        Self::with_store(id, Store::Dram(SkipMap::new()))
    }

    fn with_store(id: u64, store: Store) -> Self {
        Self {
            id,
            store,
            memory: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            min_seq: AtomicU64::new(u64::MAX),
        }
    }

    /// A memtable over an NVM skip list (new or recovered); `id` is its NVM object's id.
    pub(crate) fn nvm(id: u64, list: NvmList) -> Self {
        let m = Self::with_store(id, Store::Nvm(list));
        if let Store::Nvm(l) = &m.store {
            let (lo, hi) = l.seq_range();
            m.max_seq.store(hi, AtomicOrdering::Relaxed);
            m.min_seq.store(lo, AtomicOrdering::Relaxed);
            m.memory.store(l.used(), AtomicOrdering::Relaxed);
        }
        m
    }

    /// The NVM skip list, for an NVM memtable.
    ///
    /// (See also the `Drop` impl: DRAM entries are freed on a background thread.)
    pub(crate) fn nvm_list(&self) -> Option<&NvmList> {
        match &self.store {
            Store::Nvm(l) => Some(l),
            Store::Dram(_) => None,
        }
    }

    /// Whether the entries live in NVM.
    #[must_use]
    pub fn is_nvm(&self) -> bool {
        matches!(self.store, Store::Nvm(_))
    }

    /// The identity given at creation.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Adds one entry. `value` is ignored for deletions. REQUIRES: `seq <= MAX_SEQ`, and no
    /// other entry with the same user key and `seq`.
    ///
    /// # Errors
    /// Only for an NVM memtable: out of space (the engine reserves room first, so this is a
    /// bug) or a failed persist.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) -> Result<()> {
        let value = if kind == ValueKind::Deletion {
            &[][..]
        } else {
            value
        };
        let map = match &self.store {
            Store::Dram(map) => map,
            Store::Nvm(list) => {
                let used = list.add(seq, kind, user_key, value)?;
                self.memory.store(used, AtomicOrdering::Relaxed);
                self.max_seq.fetch_max(seq, AtomicOrdering::Relaxed);
                self.min_seq.fetch_min(seq, AtomicOrdering::Relaxed);
                return Ok(());
            }
        };
        let trailer = ikey::pack_trailer(seq, kind);
        let data: Arc<[u8]> = SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            s.clear();
            s.extend_from_slice(user_key);
            s.extend_from_slice(&trailer.to_le_bytes());
            s.extend_from_slice(value);
            let a = Arc::from(&s[..]);
            // Don't keep a huge scratch buffer alive after an outsized value.
            if s.capacity() > 1 << 20 {
                *s = Vec::new();
            }
            a
        });
        let key_len = u32::try_from(user_key.len()).unwrap_or(u32::MAX);
        map.insert(MemKey { data, key_len }, ());
        self.memory.fetch_add(
            user_key.len() + TRAILER_LEN + value.len() + ENTRY_OVERHEAD,
            AtomicOrdering::Relaxed,
        );
        self.max_seq.fetch_max(seq, AtomicOrdering::Relaxed);
        self.min_seq.fetch_min(seq, AtomicOrdering::Relaxed);
        Ok(())
    }

    /// Adds every update of `batch`, numbered from `batch.sequence()` up by one per update;
    /// returns the user bytes (keys + values) added. In NVM, every entry is durable when
    /// this returns.
    ///
    /// # Errors
    /// As [`MemTable::add`].
    pub fn insert_batch(&self, batch: &WriteBatch) -> Result<u64> {
        if let Store::Nvm(list) = &self.store {
            list.reserve((
                batch.sequence(),
                batch.sequence() + (batch.len() as u64).saturating_sub(1),
            ))?;
        }
        let mut user_bytes = 0;
        for (seq, op) in (batch.sequence()..).zip(batch.iter()) {
            self.add(seq, op.kind, op.key, op.value)?;
            user_bytes += (op.key.len() + op.value.len()) as u64;
        }
        if let Store::Nvm(list) = &self.store {
            list.sync()?;
        }
        Ok(user_bytes)
    }

    /// Refreshes the counters after entries were added to the NVM list directly (a merge
    /// of a DRAM memtable into the receiver).
    pub(crate) fn note_external_insert(&self, list: &NvmList) {
        let (lo, hi) = list.seq_range();
        self.max_seq.fetch_max(hi, AtomicOrdering::Relaxed);
        self.min_seq.fetch_min(lo, AtomicOrdering::Relaxed);
        self.memory.store(list.used(), AtomicOrdering::Relaxed);
    }

    /// Bytes an NVM memtable can still take (`usize::MAX` for DRAM).
    #[must_use]
    pub fn nvm_room(&self) -> usize {
        match &self.store {
            Store::Nvm(l) => l.remaining(),
            Store::Dram(_) => usize::MAX,
        }
    }

    /// The newest entry for `user_key` with sequence number <= `seq`, if any.
    ///
    /// # Errors
    /// `Corruption` from an NVM memtable whose search reached a damaged node.
    pub fn get(&self, user_key: &[u8], seq: SeqNo) -> Result<Option<LookupResult>> {
        let map = match &self.store {
            Store::Dram(map) => map,
            Store::Nvm(list) => return list.get(user_key, seq),
        };
        let lookup = LookupKey {
            user_key,
            trailer: ikey::pack_trailer(seq.min(ikey::MAX_SEQ), ValueKind::SEEK),
        };
        let Some(e) = map.lower_bound(Bound::Included(&lookup as &dyn KeyLike)) else {
            return Ok(None);
        };
        let k = e.key();
        if k.user_key() != user_key {
            return Ok(None);
        }
        Ok(match ValueKind::from_u8((k.trailer() & 0xff) as u8) {
            Some(ValueKind::Value) => Some(LookupResult::Value(k.value().to_vec())),
            Some(ValueKind::Deletion) | None => Some(LookupResult::Deleted),
        })
    }

    /// A bidirectional iterator over every entry (internal keys), starting unpositioned. It
    /// keeps the memtable alive.
    #[must_use]
    pub fn iter(self: &Arc<Self>) -> Box<dyn InternalIterator> {
        if let Store::Nvm(list) = &self.store {
            return list.iter();
        }
        Box::new(MemTableIter {
            mem: Arc::clone(self),
            buf: Vec::new(),
            pos: 0,
            batch: MIN_BATCH,
        })
    }

    /// Estimated bytes used: keys, values and a per-entry overhead.
    #[must_use]
    pub fn approximate_memory_usage(&self) -> usize {
        self.memory.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries (a recovered NVM memtable counts its entries on the first call:
    /// O(n) once).
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Dram(map) => map.len(),
            Store::Nvm(list) => list.len(),
        }
    }

    /// Whether the memtable holds no entry (O(1)).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        match &self.store {
            Store::Dram(map) => map.is_empty(),
            Store::Nvm(list) => list.is_empty(),
        }
    }

    /// The largest sequence number added (0 if empty).
    #[must_use]
    pub fn max_seq(&self) -> SeqNo {
        self.max_seq.load(AtomicOrdering::Relaxed)
    }

    /// The smallest sequence number added (`u64::MAX` if empty).
    #[must_use]
    pub fn min_seq(&self) -> SeqNo {
        self.min_seq.load(AtomicOrdering::Relaxed)
    }
}

impl Drop for MemTable {
    fn drop(&mut self) {
        if let Store::Dram(map) = &mut self.store
            && !map.is_empty()
        {
            reclaim_later(std::mem::take(map));
        }
    }
}

const MIN_BATCH: usize = 4;
const MAX_BATCH: usize = 128;

/// Iterator over a memtable.
///
/// The skip list's cursors borrow the map, so the iterator cannot hold one next to the
/// `Arc` that keeps the map alive. Instead it copies a window of consecutive entry handles
/// (cheap `Arc` clones, no byte copies) into `buf`, steps inside it, and re-seeks from the
/// window's edge when it runs out. The window grows from `MIN_BATCH` to `MAX_BATCH` while
/// the scan continues in one direction, so point seeks stay cheap and long scans pay one
/// skip-list search per `MAX_BATCH` entries.
struct MemTableIter {
    mem: Arc<MemTable>,
    /// Consecutive entries in ascending order.
    buf: Vec<MemKey>,
    /// Index of the current entry in `buf`; valid iff `pos < buf.len()`.
    pos: usize,
    /// Size of the next refill.
    batch: usize,
}

impl std::fmt::Debug for MemTableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTableIter")
            .field("mem", &self.mem.id)
            .field("pos", &self.pos)
            .field("window", &self.buf.len())
            .finish()
    }
}

impl MemTableIter {
    /// Fills `buf` with up to `batch` entries starting at the first one within `bound`,
    /// ascending; positions at the first.
    fn fill_forward(&mut self, bound: Bound<&dyn KeyLike>) {
        self.buf.clear();
        self.pos = 0;
        let Store::Dram(map) = &self.mem.store else {
            return;
        };
        let mut e = map.lower_bound(bound);
        while let Some(entry) = e {
            self.buf.push(entry.key().clone());
            if self.buf.len() >= self.batch {
                break;
            }
            e = entry.next();
        }
    }

    /// Fills `buf` with up to `batch` entries ending at the last one within `bound`,
    /// ascending; positions at the last.
    fn fill_backward(&mut self, bound: Bound<&dyn KeyLike>) {
        self.buf.clear();
        let Store::Dram(map) = &self.mem.store else {
            self.pos = 0;
            return;
        };
        let mut e = map.upper_bound(bound);
        while let Some(entry) = e {
            self.buf.push(entry.key().clone());
            if self.buf.len() >= self.batch {
                break;
            }
            e = entry.prev();
        }
        self.buf.reverse();
        self.pos = self.buf.len().saturating_sub(1);
    }

    fn grow(&mut self) {
        self.batch = (self.batch * 2).min(MAX_BATCH);
    }
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.pos < self.buf.len()
    }

    fn seek_to_first(&mut self) {
        self.batch = MIN_BATCH;
        self.fill_forward(Bound::Unbounded);
    }

    fn seek_to_last(&mut self) {
        self.batch = MIN_BATCH;
        self.fill_backward(Bound::Unbounded);
    }

    fn seek(&mut self, target: &[u8]) {
        self.batch = MIN_BATCH;
        let k = LookupKey::from_internal(target);
        self.fill_forward(Bound::Included(&k as &dyn KeyLike));
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.batch = MIN_BATCH;
        let k = LookupKey::from_internal(target);
        self.fill_backward(Bound::Included(&k as &dyn KeyLike));
    }

    fn next(&mut self) {
        if self.pos + 1 < self.buf.len() {
            self.pos += 1;
            return;
        }
        let Some(last) = self.buf.last().cloned() else {
            return;
        };
        self.grow();
        self.fill_forward(Bound::Excluded(&last as &dyn KeyLike));
    }

    fn prev(&mut self) {
        if self.pos > 0 && self.pos < self.buf.len() {
            self.pos -= 1;
            return;
        }
        let Some(first) = self.buf.first().cloned() else {
            return;
        };
        self.grow();
        self.fill_backward(Bound::Excluded(&first as &dyn KeyLike));
    }

    fn key(&self) -> &[u8] {
        self.buf.get(self.pos).map_or(&[], MemKey::internal_key)
    }

    fn value(&self) -> &[u8] {
        self.buf.get(self.pos).map_or(&[], MemKey::value)
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mezz_format::ikey::{make_internal_key, parse_internal_key};

    fn lk(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
        make_internal_key(user_key, seq, ValueKind::SEEK)
    }

    fn val(v: &[u8]) -> Option<LookupResult> {
        Some(LookupResult::Value(v.to_vec()))
    }

    #[test]
    fn get_at_snapshots_and_deletions() {
        let m = MemTable::new(3);
        assert_eq!(m.id(), 3);
        assert!(m.is_empty());
        assert_eq!(m.max_seq(), 0);
        m.add(1, ValueKind::Value, b"a", b"a1").unwrap();
        m.add(2, ValueKind::Value, b"b", b"b2").unwrap();
        m.add(3, ValueKind::Value, b"a", b"a3").unwrap();
        m.add(4, ValueKind::Deletion, b"a", b"ignored").unwrap();
        m.add(5, ValueKind::Value, b"a", b"a5").unwrap();
        m.add(6, ValueKind::Deletion, b"c", b"").unwrap();
        assert_eq!(m.len(), 6);
        assert_eq!(m.max_seq(), 6);

        assert_eq!(m.get(b"a", 0).unwrap(), None);
        assert_eq!(m.get(b"a", 1).unwrap(), val(b"a1"));
        assert_eq!(m.get(b"a", 2).unwrap(), val(b"a1"));
        assert_eq!(m.get(b"a", 3).unwrap(), val(b"a3"));
        assert_eq!(m.get(b"a", 4).unwrap(), Some(LookupResult::Deleted));
        assert_eq!(m.get(b"a", 5).unwrap(), val(b"a5"));
        assert_eq!(m.get(b"a", ikey::MAX_SEQ).unwrap(), val(b"a5"));
        assert_eq!(m.get(b"b", 1).unwrap(), None);
        assert_eq!(m.get(b"b", 100).unwrap(), val(b"b2"));
        assert_eq!(m.get(b"c", 5).unwrap(), None);
        assert_eq!(m.get(b"c", 6).unwrap(), Some(LookupResult::Deleted));
        // Prefixes and extensions of stored keys are different keys.
        assert_eq!(m.get(b"", 100).unwrap(), None);
        assert_eq!(m.get(b"aa", 100).unwrap(), None);
        assert_eq!(m.get(b"d", 100).unwrap(), None);
        // Memory grows with the data.
        assert!(m.approximate_memory_usage() >= 6 * (1 + 8) + 2 + 2 + 2 + 2);
    }

    #[test]
    fn insert_batch_numbers_updates() {
        let m = MemTable::new(1);
        let mut b = WriteBatch::new();
        b.put(b"x", b"1");
        b.delete(b"y");
        b.put(b"x", b"2");
        b.set_sequence(100);
        m.insert_batch(&b).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m.max_seq(), 102);
        assert_eq!(m.get(b"x", 100).unwrap(), val(b"1"));
        assert_eq!(m.get(b"x", 101).unwrap(), val(b"1"));
        assert_eq!(m.get(b"x", 102).unwrap(), val(b"2"));
        assert_eq!(m.get(b"y", 101).unwrap(), Some(LookupResult::Deleted));
        assert_eq!(m.get(b"y", 100).unwrap(), None);
    }

    fn filled(n: u32) -> (Arc<MemTable>, Vec<Vec<u8>>) {
        let m = Arc::new(MemTable::new(1));
        let mut expect = Vec::new();
        // Keys k000..k(n-1), three versions each, inserted in scrambled order.
        for i in (0..n).map(|i| (i * 7919) % n) {
            let k = format!("k{i:04}");
            for s in 0..3u64 {
                let seq = u64::from(i) * 10 + s + 1;
                let kind = if s == 1 {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                m.add(seq, kind, k.as_bytes(), format!("v{seq}").as_bytes())
                    .unwrap();
            }
        }
        for i in 0..n {
            let k = format!("k{i:04}");
            for s in (0..3u64).rev() {
                let seq = u64::from(i) * 10 + s + 1;
                let kind = if s == 1 {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                expect.push(make_internal_key(k.as_bytes(), seq, kind));
            }
        }
        (m, expect)
    }

    #[test]
    fn iterator_order_both_directions() {
        let (m, expect) = filled(500);
        let mut it = m.iter();
        assert!(!it.valid());
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push(it.key().to_vec());
            let p = parse_internal_key(it.key()).unwrap();
            if p.kind == ValueKind::Value {
                assert_eq!(it.value(), format!("v{}", p.seq).as_bytes());
            } else {
                assert!(it.value().is_empty());
            }
            it.next();
        }
        assert_eq!(got, expect);

        it.seek_to_last();
        let mut rev = Vec::new();
        while it.valid() {
            rev.push(it.key().to_vec());
            it.prev();
        }
        rev.reverse();
        assert_eq!(rev, expect);
        it.status().unwrap();
    }

    #[test]
    fn iterator_seek_seek_for_prev_and_mixed_steps() {
        let (m, expect) = filled(200);
        let mut it = m.iter();
        // seek to an exact entry, to a lookup key between versions, and past the end.
        it.seek(&expect[30]);
        assert_eq!(it.key(), &expect[30][..]);
        it.seek(&lk(b"k0010", 1000));
        assert_eq!(it.key(), &expect[30][..]); // newest version of k0010
        it.seek(&lk(b"k0010", 102));
        assert_eq!(it.key(), &expect[31][..]); // seq 102 (the deletion)
        it.seek(&lk(b"k0010x", 1000));
        assert_eq!(it.key(), &expect[33][..]);
        it.seek(&lk(b"zzz", 1));
        assert!(!it.valid());
        it.seek(&lk(b"", ikey::MAX_SEQ));
        assert_eq!(it.key(), &expect[0][..]);

        it.seek_for_prev(&expect[30]);
        assert_eq!(it.key(), &expect[30][..]);
        // The lookup key (102, SEEK) sorts before the deletion at 102.
        it.seek_for_prev(&lk(b"k0010", 102));
        assert_eq!(it.key(), &expect[30][..]);
        it.seek_for_prev(&make_internal_key(b"k0010", 102, ValueKind::Deletion));
        assert_eq!(it.key(), &expect[31][..]);
        it.seek_for_prev(&lk(b"k0010", 1000));
        assert_eq!(it.key(), &expect[29][..]);
        it.seek_for_prev(&lk(b"a", 1));
        assert!(!it.valid());
        it.seek_for_prev(&lk(b"zzz", 1));
        assert_eq!(it.key(), &expect[expect.len() - 1][..]);

        // Random walk: next/prev across window edges must track the expected index.
        let mut idx = 300usize;
        it.seek(&expect[idx]);
        let mut x = 12345u64;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let forward = !(x >> 33).is_multiple_of(3); // drift forward, then wrap around
            if forward {
                it.next();
                idx += 1;
            } else {
                it.prev();
                idx = idx.wrapping_sub(1);
            }
            if idx >= expect.len() {
                assert!(!it.valid());
                idx = (x >> 40) as usize % expect.len();
                it.seek(&expect[idx]);
            }
            assert_eq!(it.key(), &expect[idx][..]);
        }
    }

    #[test]
    fn concurrent_adds_from_four_threads() {
        let m = Arc::new(MemTable::new(9));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let m = Arc::clone(&m);
                std::thread::spawn(move || {
                    for i in 0..5000u64 {
                        let seq = i * 4 + t + 1;
                        let key = format!("key{:05}", i % 1000);
                        m.add(seq, ValueKind::Value, key.as_bytes(), &seq.to_le_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(m.len(), 20_000);
        assert_eq!(m.max_seq(), 20_000);
        // Newest version of key i%1000: the largest seq with that key.
        for k in 0..1000u64 {
            let key = format!("key{k:05}");
            let newest = (0..20_000u64)
                .map(|s| s + 1)
                .filter(|s| ((s - 1) / 4) % 1000 == k)
                .max()
                .unwrap();
            assert_eq!(
                m.get(key.as_bytes(), ikey::MAX_SEQ).unwrap(),
                Some(LookupResult::Value(newest.to_le_bytes().to_vec()))
            );
        }
        // The iterator yields every entry in strictly increasing internal-key order.
        let mut it = m.iter();
        it.seek_to_first();
        let mut n = 0;
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            if let Some(p) = &prev {
                assert_eq!(
                    ikey::compare_internal_keys(p, it.key()),
                    Ordering::Less,
                    "order violated"
                );
            }
            prev = Some(it.key().to_vec());
            n += 1;
            it.next();
        }
        assert_eq!(n, 20_000);
    }
}
