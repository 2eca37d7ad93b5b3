//! Memtables: a concurrent skip list of internal keys, in DRAM or in NVM.
//!
//! Owns: the entries written since the last switch (one per put/delete, every version kept),
//! ordered by internal key (user key ascending, sequence number descending), and the
//! [`InternalIterator`] over them used by reads, scans and flushes. A memtable's entries
//! live either in DRAM (the default, fed through a WAL) or in an NVM skip list
//! ([`crate::memtable::nvm_list::NvmList`], NoveLSM: durable per insert, recovered by
//! mapping); both behave the same to readers.
//!
//! DRAM layout: the skip list of `mezz_pmem::skiplist` over one heap arena (after LevelDB's
//! and RocksDB's arena memtables): each entry is one node holding its links, the internal
//! key (`user_key | trailer`) and the value, written in place by one bump allocation. The
//! arena is sized when the memtable is made ([`MemTable::new`]: the engine asks for
//! `write_buffer_size` plus room for the largest write group) and reserves address space
//! only: pages are touched as entries arrive. A dropped memtable's arena is kept for the
//! next memtable (its pages are mapped already), or freed in one call, on a background
//! thread. Beside the arena, a DRAM memtable keeps a bloom filter of its user keys
//! (`filter`, 1/64 of its capacity): a point read for a key it does not hold, which is
//! most reads once the data outgrows one memtable, costs one load instead of a
//! skip-list search.
//!
//! Invariants: entries are never removed or modified; adding the same (user key, seq, kind)
//! twice keeps one entry (the engine never does it: sequence numbers are unique). An entry
//! that does not fit the arena is refused with an error, never half-written; the engine
//! checks [`MemTable::room`] before it inserts a write group.
//!
//! Thread-safety: `MemTable` is `Send + Sync`; `add` may be called from several threads at
//! once, concurrently with `get` and iterators. An iterator sees every entry added before it
//! was positioned and may or may not see entries added concurrently (readers filter those by
//! sequence number anyway).

mod filter;
pub mod nvm_list;

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use mezz_format::ikey::{self, TRAILER_LEN};
use mezz_format::{InternalIterator, KeyOrder, SeqNo, ValueKind};
use mezz_pmem::skiplist::{Cursor, InsertError, SkipList};
use mezz_pmem::{Arena, ArenaOptions};
use mezz_util::spare::Kept;

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::table::LookupResult;
use filter::KeyFilter;
use nvm_list::{IkeyCmp, NvmList};

pub use crate::base::limits::MAX_DRAM_CAPACITY;

/// Bytes a DRAM entry is counted for beyond its key, trailer and value: the expected node
/// header, tower (4/3 links of 4 bytes on average) and alignment. Memory is counted by this
/// estimate, not by the arena's use, so that when a memtable switches depends only on what
/// was written (node heights are random): a seed replays the same flushes.
const DRAM_ENTRY_OVERHEAD: usize = 24;

/// A DRAM memtable's key filter has one byte per this many bytes of its capacity: one bit
/// per 8 bytes, about 19 bits per entry of a 16-byte key and a 100-byte value (a 64 MiB
/// memtable: a 1 MiB filter, about 0.3 % false positives).
const FILTER_BYTES_PER_BYTE: usize = 64;

pub use nvm_list::room_needed;

/// The nice value the memtable-freeing thread should run at (the highest any open
/// database asked for).
static RECLAIM_NICE: AtomicI32 = AtomicI32::new(0);

/// Asks the thread that frees dropped memtables to run at nice value `nice` (or lower
/// priority, if another database asked for that).
pub(crate) fn set_reclaim_nice(nice: i32) {
    RECLAIM_NICE.fetch_max(nice, AtomicOrdering::Relaxed);
}

type DramList = Arc<SkipList<IkeyCmp>>;

/// Arenas of dropped DRAM memtables kept for the next ones: their pages are mapped
/// already, where a fresh mapping would take a page fault (several µs on a VM) per 4 KiB
/// on the write path, about 16 K of them per 64 MiB memtable. At most `MAX_SPARES`.
static SPARES: Spares<Arena> = Spares::new();
const MAX_SPARES: usize = 2;

/// Up to `MAX_SPARES` things kept for reuse, shared by every database of the process.
struct Spares<T>(std::sync::Mutex<Kept<T>>);

impl<T> Spares<T> {
    const fn new() -> Self {
        Spares(std::sync::Mutex::new(Kept::new(MAX_SPARES)))
    }

    /// A kept one that `fits`, if any.
    fn take(&self, fits: impl Fn(&T) -> bool) -> Option<T> {
        self.lock().take(fits)
    }

    /// Keeps `item` if there is room (drops it otherwise).
    fn keep(&self, item: T) {
        self.lock().keep(item);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept<T>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Filters of dropped memtables, cleared, for the next ones: a fresh filter's pages are
/// faulted in by the inserts that set its bits, each page twice (a read maps the shared
/// zero page, the write copies it and shoots down the other core's TLB entry): with 4 KiB
/// values, about 6 % of the writer's time. Only filters of at least `MIN_SPARE_FILTER`
/// bytes are kept, at most `MAX_SPARES`.
static SPARE_FILTERS: Spares<KeyFilter> = Spares::new();
const MIN_SPARE_FILTER: usize = 64 << 10;

/// A cleared filter of `bytes` bytes: a spare of that size if one is kept, else a new one.
fn new_filter(bytes: usize) -> KeyFilter {
    let words = bytes.div_ceil(8).max(1);
    let spare = (bytes >= MIN_SPARE_FILTER)
        .then(|| SPARE_FILTERS.take(|f| f.words() == words))
        .flatten();
    spare.unwrap_or_else(|| KeyFilter::with_bytes(bytes))
}

/// Clears `filter` and keeps it as a spare if there is room.
fn recycle_filter(mut filter: KeyFilter) {
    filter.clear();
    SPARE_FILTERS.keep(filter);
}

/// What the reclaim thread frees or keeps: a dropped DRAM memtable's list, or a dropped
/// memtable's key filter.
enum Reclaim {
    List(DramList),
    Filter(KeyFilter),
    /// Answered once every list held when it arrives has been retried (tests wait on it
    /// instead of a clock: the thread may run at a low priority on a loaded machine).
    #[cfg(test)]
    Barrier(crossbeam_channel::Sender<()>),
}

/// A spare arena of at least `capacity` bytes and at most twice that, if one is kept.
fn take_spare(capacity: usize) -> Option<Arena> {
    SPARES.take(|a| a.capacity() >= capacity && a.capacity() <= capacity.saturating_mul(2))
}

/// Frees `list` when this is its last holder, keeping its arena as a spare if there is
/// room; hands it back while someone else still holds it.
fn try_recycle(list: DramList) -> Option<DramList> {
    let list = match Arc::try_unwrap(list) {
        Ok(list) => list,
        Err(shared) => return Some(shared),
    };
    let mut arena = list.into_arena();
    if arena.capacity() < 1 << 20 || !arena.recycle() {
        return None;
    }
    SPARES.keep(arena);
    None
}

/// How often the reclaim thread retries lists that were still held when they arrived.
const RECLAIM_RETRY: std::time::Duration = std::time::Duration::from_millis(5);

/// Frees DRAM memtables on a background thread. Returning a full arena to the system
/// (unmapping tens of MiB) takes milliseconds; whichever thread drops the last reference
/// would pay it, often a reader or writer that happened to hold the last super version
/// naming a flushed memtable. Dropping hands the list to this thread instead (falling back
/// to freeing in place if it cannot be started).
///
/// The list arrives as a clone: the dropping `MemTable` still holds its own reference for a
/// moment, and an iterator may hold one for long. The thread keeps every list it receives
/// until its own reference is the last (retrying each `RECLAIM_RETRY`), so the free always
/// happens here. (It used to drop a list it was not the last holder of, which left the free
/// to whichever holder went last: measured, the flush thread freeing a 64 MiB memtable in
/// 7.6-8.4 ms while holding the state lock, and a writer waiting for that lock as long.)
///
/// The thread runs at the nice value of the background threads of the databases opened
/// (the highest asked for; see `Options::background_nice`), lowered before each drop.
fn reclaim_later(item: Reclaim) {
    static RECLAIMER: std::sync::OnceLock<Option<crossbeam_channel::Sender<Reclaim>>> =
        std::sync::OnceLock::new();
    let tx = RECLAIMER.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::unbounded::<Reclaim>();
        std::thread::Builder::new()
            .name("mezz-reclaim".into())
            .spawn(move || {
                let mut applied = 0;
                let mut held: Vec<DramList> = Vec::new();
                loop {
                    // Lists still held elsewhere are retried each RECLAIM_RETRY.
                    let received = if held.is_empty() {
                        match rx.recv() {
                            Ok(list) => Some(list),
                            Err(_) => break,
                        }
                    } else {
                        match rx.recv_timeout(RECLAIM_RETRY) {
                            Ok(list) => Some(list),
                            Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
                        }
                    };
                    let nice = RECLAIM_NICE.load(AtomicOrdering::Relaxed);
                    if nice > applied {
                        applied = nice;
                        // Advisory: where the kernel refuses, the thread runs as it is.
                        let _ = mezz_pmem::sched::lower_current_thread_priority(nice);
                    }
                    #[cfg(test)]
                    let mut barrier = None;
                    match received {
                        Some(Reclaim::List(list)) => held.push(list),
                        Some(Reclaim::Filter(filter)) => recycle_filter(filter),
                        #[cfg(test)]
                        Some(Reclaim::Barrier(done)) => barrier = Some(done),
                        None => {}
                    }
                    held = held.into_iter().filter_map(try_recycle).collect();
                    #[cfg(test)]
                    if let Some(done) = barrier {
                        let _ = done.send(());
                    }
                }
            })
            .ok()
            .map(|_| tx)
    });
    if let Some(tx) = tx
        && let Err(crossbeam_channel::SendError(item)) = tx.send(item)
    {
        drop(item);
    }
}

/// Where a memtable's entries live.
#[derive(Debug)]
enum Store {
    Dram(DramList),
    Nvm(NvmList),
}

/// The write buffer. See the module documentation.
#[derive(Debug)]
pub struct MemTable {
    id: u64,
    store: Store,
    /// The user keys of the entries (see `filter`); `None` for a recovered NVM list, whose
    /// entries arrived before this process.
    filter: Option<KeyFilter>,
    /// Bytes used: DRAM, by the estimate of `DRAM_ENTRY_OVERHEAD`; NVM, as the list last
    /// reported.
    memory: AtomicUsize,
    max_seq: AtomicU64,
    min_seq: AtomicU64,
}

impl MemTable {
    /// An empty DRAM memtable whose arena holds up to `capacity` bytes of entries
    /// (clamped to `4096..=`[`MAX_DRAM_CAPACITY`]; address space only until entries
    /// arrive: see [`room_needed`]). `id` identifies it (the engine uses the number of its
    /// WAL); `order` orders its keys. It keeps a key filter when the order allows one
    /// ([`KeyOrder::filters_allowed`]).
    #[must_use]
    pub fn new(id: u64, capacity: usize, order: KeyOrder) -> Self {
        let capacity = capacity.clamp(4096, MAX_DRAM_CAPACITY);
        let arena = take_spare(capacity).unwrap_or_else(|| {
            Arena::with_options(
                capacity,
                ArenaOptions {
                    // Pages are touched by inserts as the memtable fills, so a switch
                    // never pays for a whole memtable's page faults at once.
                    prefault: false,
                    // Not asked for: where Linux gives huge pages only on request, it also
                    // compacts memory synchronously to find them, stalling the writer
                    // that touches the page for milliseconds (measured: open-loop p99
                    // from 53 µs to 3 ms).
                    huge_pages: false,
                },
            )
        });
        let filters = order.filters_allowed();
        let list = match SkipList::new(arena, IkeyCmp(order)) {
            Ok(l) => l,
            // Unreachable: 4096 bytes hold the head node many times over.
            Err(e) => unreachable!("a skip list head does not fit 4096 bytes: {e}"),
        };
        let filter = filters.then(|| new_filter(capacity / FILTER_BYTES_PER_BYTE));
        Self::with_store(id, Store::Dram(Arc::new(list)), filter)
    }

    /// The order of this memtable's keys.
    #[must_use]
    pub fn order(&self) -> &KeyOrder {
        match &self.store {
            Store::Dram(list) => &list.comparator().0,
            Store::Nvm(list) => list.order(),
        }
    }

    fn with_store(id: u64, store: Store, filter: Option<KeyFilter>) -> Self {
        Self {
            id,
            store,
            filter,
            memory: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            min_seq: AtomicU64::new(u64::MAX),
        }
    }

    /// A memtable over a recovered NVM skip list; `id` is its NVM object's id. It keeps no
    /// key filter: recovery maps the list and reads none of its keys.
    pub(crate) fn nvm(id: u64, list: NvmList) -> Self {
        let m = Self::with_store(id, Store::Nvm(list), None);
        if let Store::Nvm(l) = &m.store {
            let (lo, hi) = l.seq_range();
            m.max_seq.store(hi, AtomicOrdering::Relaxed);
            m.min_seq.store(lo, AtomicOrdering::Relaxed);
            m.memory.store(l.used(), AtomicOrdering::Relaxed);
        }
        m
    }

    /// A memtable over a new, empty NVM skip list, with a key filter sized for it when its
    /// order allows one: every entry then arrives through [`MemTable::add`] or
    /// [`MemTable::add_merged`].
    pub(crate) fn nvm_new(id: u64, list: NvmList) -> Self {
        let mut m = Self::nvm(id, list);
        if m.order().filters_allowed() {
            m.filter = Some(new_filter(m.capacity() / FILTER_BYTES_PER_BYTE));
        }
        m
    }

    /// A DRAM memtable with the same id and entries as `self` and room for `extra` more
    /// bytes (at least twice the capacity): for WAL replay, where a log may hold more than
    /// one memtable of the options in force.
    ///
    /// # Errors
    /// `InvalidArgument` when no arena can hold that much ([`MAX_DRAM_CAPACITY`]).
    pub fn grown(&self, extra: usize) -> Result<MemTable> {
        let list = match &self.store {
            Store::Dram(l) => Arc::clone(l),
            Store::Nvm(_) => {
                return Err(Error::InvalidArgument(
                    "an NVM memtable cannot be grown".to_string(),
                ));
            }
        };
        // The copy draws new tower heights, so it may take more arena than the original:
        // size it for the worst case (every node a full tower, the head node counted as
        // one more entry), never by the original's use. The memory estimate counts each
        // entry's internal key and value, and more.
        let used = room_needed(self.len() + 1, self.approximate_memory_usage());
        let want = used
            .saturating_add(extra)
            .max(self.capacity().saturating_mul(2));
        if used.saturating_add(extra) > MAX_DRAM_CAPACITY {
            return Err(Error::InvalidArgument(format!(
                "memtable {} would need {} bytes: more than one DRAM memtable holds ({})",
                self.id,
                used.saturating_add(extra),
                MAX_DRAM_CAPACITY
            )));
        }
        let m = MemTable::new(self.id, want, list.comparator().0.clone());
        let mut it = Cursor::new(list);
        it.first();
        while it.valid() {
            m.add_internal(it.key(), it.value())?;
            it.next();
        }
        m.max_seq.store(self.max_seq(), AtomicOrdering::Relaxed);
        m.min_seq.store(self.min_seq(), AtomicOrdering::Relaxed);
        Ok(m)
    }

    /// The NVM skip list, for an NVM memtable.
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

    /// The NVM object holding this memtable's entries (an NVM memtable's: its id), which
    /// the edit that flushes it releases; `None` for a DRAM memtable.
    #[must_use]
    pub fn own_nvm_object(&self) -> Option<u64> {
        self.is_nvm().then_some(self.id)
    }

    /// The NVM object holding this memtable's entries; `None` for a DRAM memtable.
    #[must_use]
    pub fn nvm_object(&self) -> Option<crate::storage::nvm::NvmObject> {
        self.nvm_list().map(NvmList::object)
    }

    /// Whether each write group is durable once inserted (an NVM memtable): such a
    /// memtable is fed by no WAL.
    #[must_use]
    pub fn durable_in_place(&self) -> bool {
        self.is_nvm()
    }

    /// Whether the memtable must make way for a group needing `need` bytes of room: an NVM
    /// memtable when its extent lacks the room, a DRAM one also once it holds
    /// `write_buffer_size` bytes.
    #[must_use]
    pub fn is_full(&self, need: usize, write_buffer_size: usize) -> bool {
        if self.is_nvm() {
            self.room() < need
        } else {
            self.approximate_memory_usage() >= write_buffer_size || self.room() < need
        }
    }

    /// For a memtable durable in place whose writes the WALs older than it must precede
    /// in the history: `Some(deferred)` while those WALs are not known durable (`deferred`:
    /// its writes need not wait for them, recovery drops the memtable if one lost its
    /// tail); `None` once they are, and for every other memtable.
    #[must_use]
    pub fn awaits_older_wals(&self) -> Option<bool> {
        self.nvm_list()
            .filter(|l| !l.predecessors_durable())
            .map(NvmList::is_deferred)
    }

    /// Records that the WALs older than this memtable are durable (see
    /// [`MemTable::awaits_older_wals`]).
    pub fn set_older_wals_durable(&self) {
        if let Some(l) = self.nvm_list() {
            l.set_predecessors_durable();
        }
    }

    /// Whether the memtable holds writes acknowledged before the WALs older than it were
    /// durable (a recovered NVM memtable with the deferred mark).
    #[must_use]
    pub fn written_ahead_of_older_wals(&self) -> bool {
        self.nvm_list().is_some_and(NvmList::is_deferred)
    }

    /// Makes what survives a close exact (an NVM memtable's reserve word); nothing for a
    /// DRAM memtable.
    ///
    /// # Errors
    /// A failed persist.
    pub fn settle(&self) -> Result<()> {
        match self.nvm_list() {
            Some(l) => l.settle_reserve(),
            None => Ok(()),
        }
    }

    /// Once the edit that flushed it is durable: an NVM memtable marks its list obsolete
    /// (recovery will not map it back); nothing for a DRAM memtable.
    pub fn retire_after_flush(&self) {
        if let Some(l) = self.nvm_list() {
            l.mark_obsolete();
        }
    }

    /// Adds one entry. `value` is ignored for deletions. REQUIRES: `seq <= MAX_SEQ`, and no
    /// other entry with the same user key and `seq`.
    ///
    /// # Errors
    /// Out of space (the engine checks [`MemTable::room`] first, so this is a bug, reported
    /// instead of losing the entry) or, for an NVM memtable, a failed persist.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) -> Result<()> {
        self.add_entry(seq, kind, user_key, value, false)
    }

    /// [`MemTable::add`]; with `commit`, in an NVM memtable the entry is a whole write group
    /// and is committed with it ([`NvmList::add_committed`]).
    fn add_entry(
        &self,
        seq: SeqNo,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        commit: bool,
    ) -> Result<()> {
        let value = if kind == ValueKind::Deletion {
            &[][..]
        } else {
            value
        };
        let pending = self.filter.as_ref().map(|f| f.prepare(user_key));
        let inserted = match &self.store {
            Store::Dram(list) => {
                let trailer = ikey::pack_trailer(seq, kind).to_le_bytes();
                let k = user_key.len();
                let r = list.insert_with(k + TRAILER_LEN, value.len(), |kb, vb| {
                    kb[..k].copy_from_slice(user_key);
                    kb[k..].copy_from_slice(&trailer);
                    vb.copy_from_slice(value);
                });
                self.dram_inserted(r).map(|()| {
                    self.memory.fetch_add(
                        k + TRAILER_LEN + value.len() + DRAM_ENTRY_OVERHEAD,
                        AtomicOrdering::Relaxed,
                    );
                })
            }
            Store::Nvm(list) => if commit {
                list.add_committed(seq, kind, user_key, value)
            } else {
                list.add(seq, kind, user_key, value)
            }
            .map(|used| self.memory.store(used, AtomicOrdering::Relaxed)),
        };
        // Before the group publishes `seq`: every reader that can see the entry finds the
        // key's bits.
        if let Some(p) = pending {
            p.commit();
        }
        inserted?;
        self.note_seqs(seq, seq);
        Ok(())
    }

    /// Widens the sequence range held to `lo..=hi`.
    ///
    /// Reads before it writes: `min_seq` is set by the first insert only (and `max_seq` is
    /// already past `hi` when a later group was inserted first), so an insert that has
    /// nothing to change does not take the line for writing.
    fn note_seqs(&self, lo: SeqNo, hi: SeqNo) {
        if self.max_seq.load(AtomicOrdering::Relaxed) < hi {
            self.max_seq.fetch_max(hi, AtomicOrdering::Relaxed);
        }
        if self.min_seq.load(AtomicOrdering::Relaxed) > lo {
            self.min_seq.fetch_min(lo, AtomicOrdering::Relaxed);
        }
    }

    /// Inserts the entries of `batch` (more than one) into the NVM list `list` (this
    /// memtable's) all at once ([`NvmList::add_group`]: three fences in all instead of two
    /// per entry and two more), and commits them.
    fn insert_nvm_group(&self, list: &NvmList, batch: &WriteBatch) -> Result<u64> {
        let first = batch.sequence();
        let mut keys = Vec::with_capacity(batch.approximate_size());
        let mut user_bytes = 0u64;
        let mut pending = Vec::with_capacity(batch.len());
        for (seq, op) in (first..).zip(batch.iter()) {
            keys.extend_from_slice(op.key);
            keys.extend_from_slice(&ikey::pack_trailer(seq, op.kind).to_le_bytes());
            user_bytes += (op.key.len() + op.value.len()) as u64;
            if let Some(f) = &self.filter {
                pending.push(f.prepare(op.key));
            }
        }
        let mut entries = Vec::with_capacity(batch.len());
        let mut at = 0;
        for op in batch.iter() {
            let end = at + op.key.len() + TRAILER_LEN;
            let value = if op.kind == ValueKind::Deletion {
                &[][..]
            } else {
                op.value
            };
            entries.push((&keys[at..end], value));
            at = end;
        }
        let last = first + batch.len() as u64 - 1;
        let inserted = list
            .add_group(&entries, (first, last))
            .map(|used| self.memory.store(used, AtomicOrdering::Relaxed));
        // Before the group publishes its sequence numbers (see `add_entry`).
        for p in pending {
            p.commit();
        }
        inserted?;
        self.note_seqs(first, last);
        Ok(user_bytes)
    }

    /// Adds an entry given as an encoded internal key (DRAM only; the caller keeps the
    /// sequence range).
    fn add_internal(&self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        let Store::Dram(list) = &self.store else {
            return Err(Error::InvalidArgument(
                "add_internal on an NVM memtable".to_string(),
            ));
        };
        if let Some(f) = &self.filter {
            f.add(ikey::user_key(internal_key));
        }
        self.dram_inserted(list.insert(internal_key, value))?;
        self.memory.fetch_add(
            internal_key.len() + value.len() + DRAM_ENTRY_OVERHEAD,
            AtomicOrdering::Relaxed,
        );
        Ok(())
    }

    fn dram_inserted(&self, r: std::result::Result<(), InsertError>) -> Result<()> {
        match r {
            // The same internal key twice is one entry (see the module invariants).
            Ok(()) | Err(InsertError::Duplicate) => Ok(()),
            Err(InsertError::Full) => Err(Error::InvalidArgument(format!(
                "memtable {} is full ({} of {} bytes used): an entry was refused",
                self.id,
                self.capacity().saturating_sub(self.room()),
                self.capacity()
            ))),
            Err(e) => Err(Error::InvalidArgument(format!("memtable {}: {e}", self.id))),
        }
    }

    /// Adds every update of `batch`, numbered from `batch.sequence()` up by one per update;
    /// returns the user bytes (keys + values) added. In NVM, every entry is durable when
    /// this returns.
    ///
    /// # Errors
    /// As [`MemTable::add`].
    pub fn insert_batch(&self, batch: &WriteBatch) -> Result<u64> {
        if let Store::Nvm(list) = &self.store {
            let first = batch.sequence();
            list.reserve((first, first + (batch.len() as u64).saturating_sub(1)))?;
            let mut ops = batch.iter();
            return match (ops.next(), ops.next()) {
                (None, _) => list.sync().map(|()| 0),
                // A group of one entry: its commit shares the insert's last fence.
                (Some(op), None) => self
                    .add_entry(first, op.kind, op.key, op.value, true)
                    .map(|()| (op.key.len() + op.value.len()) as u64),
                _ => self.insert_nvm_group(list, batch),
            };
        }
        self.insert_family(batch, 0)
    }

    /// Adds the updates of `batch` that belong to column family `family`, each numbered
    /// with its place in the batch (`batch.sequence()` + its index, whatever the family of
    /// the updates before it); returns the user bytes added. A database's memtable holds one
    /// family's updates: its own (the default family's, through [`MemTable::insert_batch`],
    /// or a column family's, whose memtables the database fills from the shared write
    /// path). DRAM only: a column family's updates never reach an active NVM memtable
    /// (`nvm_memtable = mutable` does not combine with families; under `immutable` the
    /// active memtable is always a DRAM one).
    ///
    /// # Errors
    /// As [`MemTable::add`]; `InvalidArgument` on an NVM memtable for a family other than 0.
    pub fn insert_family(&self, batch: &WriteBatch, family: u32) -> Result<u64> {
        self.insert_family_after(batch, family, 0)
    }

    /// [`MemTable::insert_family`], skipping the updates numbered `after` or lower (WAL
    /// replay into a column family whose tables hold them already).
    ///
    /// # Errors
    /// As [`MemTable::insert_family`].
    pub fn insert_family_after(&self, batch: &WriteBatch, family: u32, after: u64) -> Result<u64> {
        if family != 0 && matches!(self.store, Store::Nvm(_)) {
            return Err(Error::InvalidArgument(
                "a column family's updates in an NVM memtable".to_string(),
            ));
        }
        let mut user_bytes = 0;
        for (seq, op) in (batch.sequence()..).zip(batch.iter()) {
            if op.family != family || (after > 0 && seq <= after) {
                continue;
            }
            self.add(seq, op.kind, op.key, op.value)?;
            user_bytes += (op.key.len() + op.value.len()) as u64;
        }
        Ok(user_bytes)
    }

    /// Adds an entry given as an encoded internal key to an NVM memtable, during the merge
    /// of a DRAM memtable into it (the receiver); the caller reserved the sequence range
    /// and refreshes the counters afterwards ([`MemTable::note_external_insert`]).
    ///
    /// # Errors
    /// `InvalidArgument` on a DRAM memtable; otherwise as [`MemTable::add`].
    pub(crate) fn add_merged(&self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        let Store::Nvm(list) = &self.store else {
            return Err(Error::InvalidArgument(
                "add_merged on a DRAM memtable".to_string(),
            ));
        };
        if let Some(f) = &self.filter {
            f.add(ikey::user_key(internal_key));
        }
        list.add_internal(internal_key, value)?;
        Ok(())
    }

    /// Refreshes the counters after entries were added to the NVM list by
    /// [`MemTable::add_merged`] (a merge of a DRAM memtable into the receiver).
    pub(crate) fn note_external_insert(&self, list: &NvmList) {
        let (lo, hi) = list.seq_range();
        self.note_seqs(lo, hi);
        self.memory.store(list.used(), AtomicOrdering::Relaxed);
    }

    /// Bytes the memtable can still take (compare with [`room_needed`]).
    #[must_use]
    pub fn room(&self) -> usize {
        match &self.store {
            Store::Nvm(l) => l.remaining(),
            Store::Dram(l) => l.capacity().saturating_sub(l.memory_usage()),
        }
    }

    /// Bytes the memtable can hold in all.
    #[must_use]
    pub fn capacity(&self) -> usize {
        match &self.store {
            Store::Nvm(l) => l.used() + l.remaining(),
            Store::Dram(l) => l.capacity(),
        }
    }

    /// The newest entry for `user_key` with sequence number <= `seq`, if any.
    ///
    /// # Errors
    /// `Corruption` from an NVM memtable whose search reached a damaged node.
    pub fn get(&self, user_key: &[u8], seq: SeqNo) -> Result<Option<LookupResult>> {
        if let Some(f) = &self.filter
            && !f.may_contain(user_key)
        {
            return Ok(None);
        }
        let list = match &self.store {
            Store::Dram(list) => list,
            Store::Nvm(list) => return list.get(user_key, seq),
        };
        let trailer = ikey::pack_trailer(seq.min(ikey::MAX_SEQ), ValueKind::SEEK).to_le_bytes();
        // The lookup key on the stack for the usual key sizes: a point read allocates only
        // the value it returns.
        let mut stack = [0u8; 128];
        let heap;
        let target: &[u8] = if user_key.len() + TRAILER_LEN <= stack.len() {
            let n = user_key.len();
            stack[..n].copy_from_slice(user_key);
            stack[n..n + TRAILER_LEN].copy_from_slice(&trailer);
            &stack[..n + TRAILER_LEN]
        } else {
            heap = [user_key, &trailer[..]].concat();
            &heap
        };
        let mut c = Cursor::new(&**list);
        c.seek_ge(target);
        if !c.valid() {
            return Ok(None);
        }
        let k = c.key();
        if !list.comparator().0.same_user(ikey::user_key(k), user_key) {
            return Ok(None);
        }
        Ok(match ValueKind::from_u8((ikey::trailer(k) & 0xff) as u8) {
            Some(ValueKind::Value) => Some(LookupResult::Value(c.value().to_vec())),
            Some(ValueKind::Deletion) | None => Some(LookupResult::Deleted),
        })
    }

    /// A bidirectional iterator over every entry (internal keys), starting unpositioned. It
    /// keeps the memtable's entries alive.
    #[must_use]
    pub fn iter(self: &Arc<Self>) -> Box<dyn InternalIterator<Error>> {
        match &self.store {
            Store::Nvm(list) => list.iter(),
            Store::Dram(list) => Box::new(MemTableIter {
                cursor: Cursor::new(Arc::clone(list)),
            }),
        }
    }

    /// Bytes used: keys, values and skip-list nodes (in DRAM, estimated per entry the same
    /// way every run: see `DRAM_ENTRY_OVERHEAD`).
    #[must_use]
    pub fn approximate_memory_usage(&self) -> usize {
        self.memory.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries (a recovered NVM memtable counts its entries on the first call:
    /// O(n) once).
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Dram(list) => list.len(),
            Store::Nvm(list) => list.len(),
        }
    }

    /// Whether the memtable holds no entry (O(1)).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        match &self.store {
            Store::Dram(list) => list.is_empty(),
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
        // The arena goes to the reclaim thread, which frees it once nothing else (an
        // iterator, say) holds it. Small arenas are not worth a hand-over.
        if let Store::Dram(list) = &self.store
            && list.memory_usage() > 1 << 20
        {
            reclaim_later(Reclaim::List(Arc::clone(list)));
        }
        // Cleared there and kept for the next memtable.
        if let Some(filter) = self.filter.take_if(|f| f.words() * 8 >= MIN_SPARE_FILTER) {
            reclaim_later(Reclaim::Filter(filter));
        }
    }
}

/// Iterator over a DRAM memtable: a skip-list cursor that holds the list.
struct MemTableIter {
    cursor: Cursor<DramList>,
}

impl std::fmt::Debug for MemTableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTableIter")
            .field("valid", &self.cursor.valid())
            .finish()
    }
}

impl InternalIterator<Error> for MemTableIter {
    fn valid(&self) -> bool {
        self.cursor.valid()
    }

    fn seek_to_first(&mut self) {
        self.cursor.first();
    }

    fn seek_to_last(&mut self) {
        self.cursor.last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.cursor.seek_ge(target);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cursor.seek_le(target);
    }

    fn next(&mut self) {
        self.cursor.next();
    }

    fn prev(&mut self) {
        self.cursor.prev();
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mezz_format::ikey::{make_internal_key, parse_internal_key};
    use std::cmp::Ordering;

    fn lk(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
        make_internal_key(user_key, seq, ValueKind::SEEK)
    }

    fn val(v: &[u8]) -> Option<LookupResult> {
        Some(LookupResult::Value(v.to_vec()))
    }

    /// A dropped memtable's list that someone else still holds (an iterator, here the
    /// test) stays with the reclaim thread rather than being let go: the last holder is
    /// then the reclaim thread, which frees it, never a foreground or flush thread.
    #[test]
    fn the_reclaim_thread_keeps_lists_still_held_elsewhere_and_frees_them() {
        let m = MemTable::new(9, 4 << 20, mezz_format::KeyOrder::default());
        let value = [7u8; 1000];
        let mut seq = 1;
        while m.approximate_memory_usage() <= 2 << 20 {
            m.add(
                seq,
                ValueKind::Value,
                format!("k{seq:06}").as_bytes(),
                &value,
            )
            .unwrap();
            seq += 1;
        }
        let Store::Dram(list) = &m.store else {
            unreachable!("a DRAM memtable")
        };
        let probe = Arc::clone(list);
        drop(m);
        // The memtable's own reference is gone at once; the reclaim thread's stays.
        assert_eq!(Arc::strong_count(&probe), 2);
        std::thread::sleep(RECLAIM_RETRY * 20);
        assert_eq!(
            Arc::strong_count(&probe),
            2,
            "the reclaim thread let go of a list someone else still held"
        );
        let weak = Arc::downgrade(&probe);
        drop(probe);
        // Wait for the reclaim thread's next pass rather than a clock: it runs at the
        // background threads' priority, which a loaded machine may starve for seconds
        // (a 20-second deadline failed once under a CI run and a soak).
        let (tx, rx) = crossbeam_channel::bounded(1);
        reclaim_later(Reclaim::Barrier(tx));
        rx.recv().expect("the reclaim thread answers");
        assert_eq!(
            weak.strong_count(),
            0,
            "the reclaim thread did not free the list on its pass after the last holder let go"
        );
    }

    #[test]
    fn the_key_filter_never_hides_an_entry() {
        let key = |i: u64| format!("user{i:08}").into_bytes();
        let m = MemTable::new(1, 1 << 20, mezz_format::KeyOrder::default());
        assert!(m.filter.is_some(), "a DRAM memtable keeps a key filter");
        for i in 0..3000u64 {
            let kind = if i % 3 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            m.add(i + 1, kind, &key(i), &i.to_le_bytes()).unwrap();
        }
        // `grown` copies the entries through the other insert path.
        let g = m.grown(1 << 20).unwrap();
        for t in [&m, &g] {
            for i in 0..3000u64 {
                let want = if i % 3 == 0 {
                    LookupResult::Deleted
                } else {
                    LookupResult::Value(i.to_le_bytes().to_vec())
                };
                assert_eq!(t.get(&key(i), ikey::MAX_SEQ).unwrap(), Some(want), "{i}");
                // Older than the entry: not there yet, whatever the filter says.
                assert_eq!(t.get(&key(i), i).unwrap(), None, "{i}");
            }
            for i in 3000..6000u64 {
                assert_eq!(t.get(&key(i), ikey::MAX_SEQ).unwrap(), None, "{i}");
            }
        }
    }

    #[test]
    fn get_at_snapshots_and_deletions() {
        let m = MemTable::new(3, 64 << 20, mezz_format::KeyOrder::default());
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
        let m = MemTable::new(1, 64 << 20, mezz_format::KeyOrder::default());
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
        let m = Arc::new(MemTable::new(1, 64 << 20, mezz_format::KeyOrder::default()));
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
        let m = Arc::new(MemTable::new(9, 64 << 20, mezz_format::KeyOrder::default()));
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

    /// An arena without room refuses the entry with an error (never a panic, never a
    /// half-written entry); what was added before stays readable.
    #[test]
    fn a_full_memtable_refuses_an_entry_with_an_error() {
        let m = MemTable::new(4, 4096, mezz_format::KeyOrder::default());
        let mut added = 0u64;
        let err = loop {
            let k = format!("key{added:05}");
            match m.add(added + 1, ValueKind::Value, k.as_bytes(), &[7u8; 100]) {
                Ok(()) => added += 1,
                Err(e) => break e,
            }
            assert!(added < 1000, "a 4 KiB memtable took {added} entries");
        };
        assert!(added > 10, "only {added} entries fit 4 KiB");
        assert!(err.to_string().contains("memtable 4 is full"), "{err}");
        assert!(m.room() < room_needed(1, 108));
        assert_eq!(m.len() as u64, added);
        for i in 0..added {
            let k = format!("key{i:05}");
            assert_eq!(
                m.get(k.as_bytes(), ikey::MAX_SEQ).unwrap(),
                val(&[7u8; 100])
            );
        }
    }

    /// `grown` copies every entry (same id, sequence range and order) into a memtable with
    /// room for what the caller asked.
    #[test]
    fn grown_keeps_every_entry_and_makes_room() {
        let (m, expect) = filled(300);
        // The copy draws its own tower heights: the room promised must hold whatever they
        // are, so grow many times (each with new heights).
        for extra in [0, 1, 4096, m.capacity(), 4 * m.capacity()] {
            for _ in 0..8 {
                let g = m.grown(extra).unwrap();
                assert!(g.room() >= extra, "room {} < {extra}", g.room());
            }
        }
        let extra = 4 * m.capacity();
        let g = m.grown(extra).unwrap();
        assert_eq!(g.id(), m.id());
        assert_eq!(g.len(), m.len());
        assert_eq!((g.min_seq(), g.max_seq()), (m.min_seq(), m.max_seq()));
        assert_eq!(g.approximate_memory_usage(), m.approximate_memory_usage());
        assert!(g.room() >= extra);
        let g = Arc::new(g);
        let mut it = g.iter();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push(it.key().to_vec());
            it.next();
        }
        assert_eq!(got, expect);
        assert!(
            MemTable::new(1, 4096, mezz_format::KeyOrder::default())
                .grown(MAX_DRAM_CAPACITY)
                .is_err()
        );
    }
}
