//! A concurrent skip list whose nodes live in an [`Arena`] and link to each other by `u32`
//! offsets (after LevelDB's `db/skiplist.h`, Pebble's `internal/arenaskl` and RocksDB's
//! `InlineSkipList`), usable in DRAM (a heap arena: the DRAM memtable) and, opt-in, as a
//! persistent skip list on NVM (an arena on a [`Media`](crate::Media): NoveLSM's NVM
//! memtable) that survives power cuts and is recovered with [`SkipList::recover`].
//!
//! Owns: the entries (key bytes, value bytes) inserted into one arena, ordered by a
//! [`Comparator`] fixed at construction, and the cursors over them.
//!
//! Node layout (native-endian `u32` fields, little-endian on the supported targets; every
//! node 4-aligned, and on media its header, tower and key inside one cache line when they
//! fit in one; byte-by-byte description in `docs/formats/nvm-skiplist.md`):
//! ```text
//! +0   key_len   u32
//! +4   value_len u32
//! +8   height    u32          1..=MAX_HEIGHT
//! +12  checksum  u32          crc32c on media arenas (see below); unused on the heap
//! +16  tower     [u32; height] offset of the next node at each level, 0 = end of list
//! ...  key bytes, then value bytes
//! ```
//! The head node is the first allocation of the arena: it has `MAX_HEIGHT` links and an
//! empty key that no comparison ever looks at. On a media arena, the arena's first
//! [`MEDIA_HEADER`] bytes hold the list header (magic, format version, maximum height, head
//! offset, arena length, list id, checksum, and the checksummed allocation bound: no node
//! ends after it, so recovery reads no node), and every node's checksum covers the list id,
//! the node's own offset, its height, key length, value length, key and value: everything
//! but the links, which change after the node is written.
//!
//! Invariants:
//! 1. Entries are never removed or modified; a node's header, key and value are written
//!    once, before the node is published, and never again. Only the tower links change.
//! 2. At every level, following the links from the head visits keys in strictly increasing
//!    comparator order: no two nodes hold equal keys (a duplicate insert is refused).
//! 3. A node is linked level 0 first, then upwards; so a node reached through a link at level
//!    `i` already has its links at levels below `i` initialised and published.
//! 4. Every link points at a node of the same arena (or is 0): nodes hold offsets, never
//!    pointers, so the same structure can live in a persistent mapping.
//! 5. Persistence (only when the arena [`is_persistent`](Arena::is_persistent)): a node is
//!    durable (persisted and fenced) before any link to it is stored; the level-0 link that
//!    publishes it is persisted and fenced before the insert returns. Upper-level links are
//!    not persisted on their own and are stored only after the level-0 link is durable, so
//!    whatever value of them reaches the media names a durably linked node (recovery uses
//!    them as found). The allocation bound in the header covers every node before the
//!    node is linked. Inserts into a persistent list are
//!    serialized by an internal mutex, so every durable node is reachable from the head
//!    through durable level-0 links only: a later insert can never be reachable solely
//!    through a link that is not yet persisted. An insert is durable once it returned `Ok`.
//!
//! A list recovered without a walk checks each node written before the recovery when a
//! read first reaches it ([`SkipList::recover`]); every read then returns `Result`s or
//! keeps a status ([`CorruptNode`]), so damaged media is an error, never a value or a panic.
//!
//! Thread-safety: [`SkipList`] is `Send + Sync` when its comparator is. Any number of
//! threads may call [`SkipList::insert`] at the same time (each link is set with a
//! compare-and-swap; a failed swap recomputes the neighbours at that level, starting from the
//! known predecessor; on a persistent arena the inserts take turns on a mutex),
//! concurrently with lock-free readers ([`SkipList::get`], [`Cursor`]). A
//! node's contents are published by the `Release` swap that links it at level 0 and read by
//! readers after an `Acquire` load of a link, so a reader that finds a node sees it whole. A
//! reader sees every entry whose insert happened-before the read (returned earlier on the
//! same thread, or was signalled to the reader through a `Release`/`Acquire` pair such as
//! [`SkipList::len`]), and may or may not see entries inserted concurrently (on a persistent
//! arena: possibly before they are durable).
//!
//! Searches prefetch the successor one level down while comparing at the current level, so
//! that the cache misses of a descent overlap (≈ 20 % more inserts and gets per second on a
//! list far larger than the CPU caches, measured here). On a media arena the list reports
//! what it touches to the media's cost hooks (the emulated NVM cost, `crate::cost`): a
//! search, the nodes it visited as that many separate accesses of [`NODE_READ_BYTES`]
//! ([`Media::on_reads`](crate::Media::on_reads), one call per search); an entry returned
//! (a hit of `get`, a cursor landing, an iteration step), the rest of its node up to the
//! end of its value as part of the same access
//! ([`Media::on_read_continued`](crate::Media::on_read_continued)), or the whole node as
//! one access when nothing reported its start; an insert, its node and one link store into
//! each predecessor ([`Media::on_write`](crate::Media::on_write),
//! [`Media::on_writes`](crate::Media::on_writes); a persistent media charges writes where
//! they are persisted instead). Recovery reports the header and every node it checks.

use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::arena::{Arena, MEDIA_HEADER};

/// Maximum height of a node's tower. With a branching factor of 4, twelve levels index
/// about 4^12 = 16 M entries efficiently.
pub const MAX_HEIGHT: usize = 12;

/// Bytes of a node's fixed header (`key_len`, `value_len`, `height`, `checksum`).
const HEADER_SIZE: usize = 16;
/// Offset of the checksum in a node.
const CHECKSUM_AT: u32 = 12;
/// Size of one link.
const LINK_SIZE: usize = 4;
/// The null offset: end of a list.
const NIL: u32 = 0;

/// Bytes a search reports to [`Media::on_reads`](crate::Media::on_reads) per node it visits
/// (one cache line: the node's header and, usually, its key).
pub const NODE_READ_BYTES: usize = 64;

/// Magic number at offset 0 of a persistent list's arena (`"MEZZSKL"` and a 1).
pub const LIST_MAGIC: u64 = u64::from_le_bytes(*b"MEZZSKL\x01");
/// Format version of the persistent layout written by this build. Version 2 keeps the
/// allocation bound in the header (so recovery reads no node); version 1 lists (no bound)
/// are still recovered, by a walk over every node.
pub const FORMAT_VERSION: u32 = 2;
/// The first version: no allocation bound in the header.
const FORMAT_V1: u32 = 1;
/// Bytes of the list header that are written (the rest of [`MEDIA_HEADER`] is zero).
const LIST_HEADER_SIZE: usize = 56;
/// Offset of the header checksum (it covers the bytes before it).
const LIST_HEADER_CRC_AT: usize = 40;
/// Offset of the allocation bound word (version 2): the low 32 bits are the bound (no node
/// of the list ends after it), the high 32 bits their checksum. One 8-byte word, stored
/// atomically; not covered by the header checksum, as it moves while the list grows.
const END_WORD_AT: u32 = 48;
/// Largest step by which the allocation bound moves (it moves by `capacity / 64`, at least
/// 4 KiB and at most this): one persist of the header line per step of allocations.
const MAX_END_STEP: usize = 256 << 10;

/// Bytes of arena a node of `height` links with this key and value takes (before padding).
pub fn node_size(height: usize, key_len: usize, value_len: usize) -> usize {
    HEADER_SIZE + LINK_SIZE * height + key_len + value_len
}

/// A total order on byte-string keys.
///
/// Implemented by [`Bytewise`] and by every `Fn(&[u8], &[u8]) -> Ordering` (closures and
/// `fn` items such as an internal-key comparator).
pub trait Comparator {
    /// Compares two keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
}

impl<F> Comparator for F
where
    F: Fn(&[u8], &[u8]) -> Ordering,
{
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self(a, b)
    }
}

/// Lexicographic byte order (`<[u8]>::cmp`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Bytewise;

impl Comparator for Bytewise {
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }
}

/// Why an insert was refused. For `Full` and `Duplicate` the list is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The arena has not enough room left for the node.
    Full,
    /// An entry with an equal key is already in the list (some arena space may have been
    /// used by the refused node).
    Duplicate,
    /// Persisting to the media failed (the media's I/O error kind). The entry may or may
    /// not be linked in memory; it is not known to be durable. Treat the list as failed.
    Persist(io::ErrorKind),
    /// The search for the entry's place met a corrupt node of a recovered list (at this
    /// arena offset); nothing was linked.
    Corrupt(u32),
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsertError::Full => f.write_str("skip list arena is full"),
            InsertError::Duplicate => f.write_str("key already present in the skip list"),
            InsertError::Persist(kind) => {
                write!(f, "persisting to the skip list's media failed: {kind}")
            }
            InsertError::Corrupt(offset) => {
                write!(f, "corrupt skip list node at arena offset {offset}")
            }
        }
    }
}

impl std::error::Error for InsertError {}

thread_local! {
    /// Per-thread xorshift state for tower heights; never zero.
    static RNG: Cell<u64> = Cell::new(rng_seed());
}

fn rng_seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x9E37_79B9_7F4A_7C15);
    h.finish() | 1
}

/// A random tower height in `1..=MAX_HEIGHT`, each level kept with probability 1/4.
fn random_height() -> usize {
    let r = RNG.with(|c| {
        let mut x = c.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        x
    });
    let mut bits = (r >> 32) as u32;
    let mut h = 1;
    while h < MAX_HEIGHT && bits & 3 == 0 {
        h += 1;
        bits >>= 2;
    }
    h
}

/// Maps a media error to the insert error that carries it.
fn persist_err(e: io::Error) -> InsertError {
    InsertError::Persist(e.kind())
}

/// Maps a corrupt node met by an insert's search to the insert error.
#[allow(clippy::needless_pass_by_value)] // used as `map_err(corrupt_err)`
fn corrupt_err(e: CorruptNode) -> InsertError {
    InsertError::Corrupt(e.offset)
}

/// A random 64-bit list id (distinguishes a list from earlier lists in the same extent).
fn random_list_id() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x6A09_E667_F3BC_C908);
    h.finish()
}

/// The list header stored at offset 0 of a media arena (see `docs/formats/nvm-skiplist.md`),
/// with the allocation bound `end`.
fn encode_list_header(
    head: u32,
    capacity: usize,
    list_id: u64,
    end: u32,
) -> [u8; LIST_HEADER_SIZE] {
    let mut h = [0u8; LIST_HEADER_SIZE];
    h[0..8].copy_from_slice(&LIST_MAGIC.to_le_bytes());
    h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(MAX_HEIGHT as u32).to_le_bytes());
    h[16..20].copy_from_slice(&head.to_le_bytes());
    // 20..24: flags, zero in version 1.
    h[24..32].copy_from_slice(&(capacity as u64).to_le_bytes());
    h[32..40].copy_from_slice(&list_id.to_le_bytes());
    let crc = crc32c::crc32c(&h[..LIST_HEADER_CRC_AT]);
    h[LIST_HEADER_CRC_AT..LIST_HEADER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    let at = END_WORD_AT as usize;
    h[at..at + 8].copy_from_slice(&bound_word(end, list_id).to_le_bytes());
    h
}

/// The allocation bound word for bound `end` of the list `list_id`: `end` in the low 32
/// bits, `crc32c(end ‖ list_id)` (little-endian) in the high 32 bits.
fn bound_word(end: u32, list_id: u64) -> u64 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&end.to_le_bytes()), &list_id.to_le_bytes());
    u64::from(end) | u64::from(crc) << 32
}

/// The bound of a bound word, if its checksum matches.
fn bound_of(word: u64, list_id: u64) -> Option<u32> {
    let end = word as u32;
    (bound_word(end, list_id) == word).then_some(end)
}

/// How far the allocation bound of a list in an arena of `capacity` bytes moves at once.
fn end_step(capacity: usize) -> usize {
    (capacity / 64).clamp(4096, MAX_END_STEP)
}

/// The little-endian `u32` at `at` of `b` (in bounds by construction of the callers).
fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// The little-endian `u64` at `at` of `b`.
fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The seed of every node checksum of the list with this id.
fn crc_seed(list_id: u64) -> u32 {
    crc32c::crc32c(&list_id.to_le_bytes())
}

/// What [`SkipList::recover`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Format version of the recovered list: 2 (only the header and the head node were
    /// read; every other node is checked when first reached) or 1 (every node was checked
    /// by a walk).
    pub version: u32,
    /// Arena bytes in use after recovery: the header area, the head node, the recovered
    /// nodes and whatever unreachable space lies between or after them (version 2: the
    /// allocation bound of the header). New nodes go after it.
    pub bytes: usize,
}

/// A node reached while reading a recovered list that fails its checks: out of bounds,
/// misaligned, a bad height, a checksum mismatch, a key not greater than its predecessor's.
/// The persist protocol never links a node that is not durable, so this is media
/// corruption. Nothing of the node was used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorruptNode {
    /// Offset of the node (or of the node holding the bad link) in the arena.
    pub offset: u32,
    /// What is wrong.
    pub detail: String,
}

impl fmt::Display for CorruptNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "corrupt skip list node at arena offset {}: {}",
            self.offset, self.detail
        )
    }
}

impl std::error::Error for CorruptNode {}

/// Why a persistent skip list could not be recovered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecoverError {
    /// The arena is heap memory: there is nothing to recover.
    NotOnMedia,
    /// The list header at offset 0 of the arena is missing or invalid (never created, torn,
    /// corrupt, another format or another arena length).
    Header {
        /// What is wrong.
        detail: String,
    },
    /// A node reachable from the head is invalid: out of bounds, misaligned, bad height,
    /// checksum mismatch, key not greater than its predecessor's, or a cycle. The persist
    /// protocol never links a node that is not durable, so this is media corruption.
    Node {
        /// Offset of the node in the arena.
        offset: u32,
        /// What is wrong.
        detail: String,
    },
}

impl fmt::Display for RecoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecoverError::NotOnMedia => f.write_str("a heap arena holds no persistent skip list"),
            RecoverError::Header { detail } => write!(f, "bad skip list header: {detail}"),
            RecoverError::Node { offset, detail } => {
                write!(
                    f,
                    "corrupt skip list node at arena offset {offset}: {detail}"
                )
            }
        }
    }
}

impl std::error::Error for RecoverError {}

/// A validated node: its height, key and value lengths and total size.
#[derive(Clone, Copy, Debug)]
struct NodeInfo {
    height: usize,
    key_len: usize,
    value_len: usize,
    size: usize,
}

/// What a list recovered without a walk (version 2) has verified so far. Nodes and links
/// below `below` were written before the list was recovered and are checked when first
/// reached (see [`SkipList::step`]); nodes at or after it were written by this handle.
struct LazyCheck {
    /// The recovered allocation bound: every node linked before recovery ends at or below.
    below: u32,
    /// One bit per 4-byte word of the arena, set once the node starting at that word is
    /// verified, or was allocated by this handle. Bits are only ever set; nodes are
    /// immutable (invariant 1), so a verified node stays valid.
    nodes: Box<[AtomicU64]>,
    /// One bit per 4-byte word of the arena, set once the link stored in that word is
    /// verified (its value then, and every value this handle stores later, names a valid
    /// node in key order).
    links: Box<[AtomicU64]>,
    /// Entries linked before recovery, counted by a checked walk on first use of `len`.
    recovered: OnceLock<usize>,
}

impl LazyCheck {
    fn new(capacity: usize, below: u32) -> LazyCheck {
        LazyCheck {
            below,
            nodes: zeroed_bits(capacity.div_ceil(4 * 64)),
            links: zeroed_bits(capacity.div_ceil(4 * 64)),
            recovered: OnceLock::new(),
        }
    }

    #[inline]
    fn is_set(bits: &[AtomicU64], off: u32) -> bool {
        let w = (off / 4) as usize;
        bits.get(w / 64)
            .is_some_and(|b| b.load(AtomicOrdering::Relaxed) & (1 << (w % 64)) != 0)
    }

    #[inline]
    fn set(bits: &[AtomicU64], off: u32) {
        let w = (off / 4) as usize;
        if let Some(b) = bits.get(w / 64) {
            b.fetch_or(1 << (w % 64), AtomicOrdering::Relaxed);
        }
    }
}

/// `words` zeroed atomic words, allocated without touching them: the allocator hands out
/// fresh zero pages for a large request, so a 2 MiB bitmap (a 64 MiB arena) costs no page
/// faults until its words are used.
fn zeroed_bits(words: usize) -> Box<[AtomicU64]> {
    if words == 0 {
        return Box::new([]);
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(words)
        .unwrap_or_else(|_| std::alloc::handle_alloc_error(std::alloc::Layout::new::<u64>()));
    // SAFETY: `layout` has a non-zero size (`words > 0`).
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `p` points to `words` zero-initialised `AtomicU64`s (an all-zero `AtomicU64`
    // is a valid 0) allocated by the global allocator with the layout of `[AtomicU64;
    // words]`, which is the layout `Box<[AtomicU64]>` frees with; nothing else owns it.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, words)) }
}

/// A concurrent, insert-only skip list stored in an [`Arena`]. See the module
/// documentation for the layout, the invariants and the thread-safety contract.
pub struct SkipList<C> {
    arena: Arena,
    cmp: C,
    /// Offset of the head node.
    head: u32,
    /// Height of the tallest tower linked so far (1..=MAX_HEIGHT); only grows.
    height: AtomicU32,
    /// Number of entries linked.
    len: AtomicUsize,
    /// The arena is on a media: nodes carry checksums, the arena holds the list header.
    on_media: bool,
    /// The arena is persistent: inserts follow the persist protocol (invariant 5).
    durable: bool,
    /// Seed of the node checksums (from the list id); unused on the heap.
    crc_seed: u32,
    /// Serializes the inserts into a persistent list (untouched otherwise).
    insert_turn: Mutex<()>,
    /// The header keeps the allocation bound (a media list of version 2).
    end_word: bool,
    /// The list id (media lists; 0 on the heap): seeds the bound word's checksum.
    list_id: u64,
    /// Checks still owed to the nodes written before recovery (a list recovered without a
    /// walk); `None` when every reachable node is trusted.
    lazy: Option<LazyCheck>,
}

impl<C: Comparator> SkipList<C> {
    /// Creates an empty list in `arena`, ordered by `cmp`.
    ///
    /// On a media arena, also writes the list header and makes the head and the header
    /// durable (persist + fence) before returning: the list is recoverable from then on.
    ///
    /// Fails with [`InsertError::Full`] if the arena cannot hold the head node
    /// (`node_size(MAX_HEIGHT, 0, 0)` bytes), and with [`InsertError::Persist`] if the
    /// media fails.
    pub fn new(arena: Arena, cmp: C) -> Result<Self, InsertError> {
        let head = arena
            .alloc(node_size(MAX_HEIGHT, 0, 0), 4)
            .ok_or(InsertError::Full)?;
        let on_media = arena.is_on_media();
        let list_id = if on_media { random_list_id() } else { 0 };
        let list = SkipList {
            durable: arena.is_persistent(),
            arena,
            cmp,
            head,
            height: AtomicU32::new(1),
            len: AtomicUsize::new(0),
            on_media,
            crc_seed: crc_seed(list_id),
            insert_turn: Mutex::new(()),
            end_word: on_media,
            list_id,
            lazy: None,
        };
        // Initialise the whole head explicitly (the arena may have been written outside its
        // allocations before the list took it): empty key and value, every link NIL.
        list.arena
            .atomic_u32(head)
            .store(0, AtomicOrdering::Relaxed);
        list.arena
            .atomic_u32(head + 4)
            .store(0, AtomicOrdering::Relaxed);
        list.arena
            .atomic_u32(head + 8)
            .store(MAX_HEIGHT as u32, AtomicOrdering::Relaxed);
        for level in 0..MAX_HEIGHT {
            list.link(head, level).store(NIL, AtomicOrdering::Relaxed);
        }
        if on_media {
            list.arena.on_write(node_size(MAX_HEIGHT, 0, 0));
            list.arena.on_write(LIST_HEADER_SIZE);
            let crc = list.node_checksum(head, MAX_HEIGHT, 0, 0);
            list.arena
                .atomic_u32(head + CHECKSUM_AT)
                .store(crc, AtomicOrdering::Relaxed);
            // The head first, then the header that points at it: a header is never durable
            // before the node it names.
            list.arena
                .persist(head, node_size(MAX_HEIGHT, 0, 0))
                .map_err(persist_err)?;
            list.arena.fence().map_err(persist_err)?;
            let end = list.next_end(list.arena.used());
            let header = encode_list_header(head, list.arena.capacity(), list_id, end);
            // SAFETY: the header lies in the arena's reserved first MEDIA_HEADER bytes
            // (LIST_HEADER_SIZE < MEDIA_HEADER <= capacity), which no allocation covers, and
            // the list is not shared yet: nothing else reads or writes them.
            unsafe { list.arena.write(0, &header) };
            list.arena
                .persist(0, LIST_HEADER_SIZE)
                .map_err(persist_err)?;
            list.arena.fence().map_err(persist_err)?;
        }
        Ok(list)
    }

    /// The list's arena, for reuse ([`Arena::recycle`], then a new list): the entries go
    /// with the list.
    #[must_use]
    pub fn into_arena(self) -> Arena {
        self.arena
    }

    /// Number of entries. Every entry counted is visible to searches and scans that start
    /// after this call (the count is read with `Acquire`, and incremented with `Release`
    /// after the entry is linked).
    ///
    /// On a list recovered without a walk (version 2), the first call counts the recovered
    /// entries by a checked walk over level 0 (O(n)); a walk that meets a corrupt node
    /// counts the entries before it.
    pub fn len(&self) -> usize {
        let inserted = self.len.load(AtomicOrdering::Acquire);
        match &self.lazy {
            None => inserted,
            Some(lazy) => inserted + *lazy.recovered.get_or_init(|| self.recovered_entries(lazy)),
        }
    }

    /// Whether the list has no entries (O(1), also after a recovery).
    pub fn is_empty(&self) -> bool {
        self.len.load(AtomicOrdering::Acquire) == 0 && self.next_of(self.head, 0) == NIL
    }

    /// Arena bytes used so far (nodes, padding, the head node and the reserved null bytes).
    pub fn memory_usage(&self) -> usize {
        self.arena.used()
    }

    /// Size of the arena in bytes (the most [`SkipList::memory_usage`] can reach). The arena
    /// itself is not exposed: only the list may write into it, which is what makes its
    /// lock-free reads sound.
    pub fn capacity(&self) -> usize {
        self.arena.capacity()
    }

    /// Whether inserts are made durable (the arena is on a persistent media).
    pub fn is_persistent(&self) -> bool {
        self.durable
    }

    /// The comparator ordering the keys.
    pub fn comparator(&self) -> &C {
        &self.cmp
    }

    /// Inserts a copy of `key` and `value`.
    ///
    /// Fails with [`InsertError::Full`] when the arena has no room for the node (nothing is
    /// linked) and with [`InsertError::Duplicate`] when an equal key is present. On a
    /// persistent arena, the entry is durable when this returns `Ok`; see
    /// [`InsertError::Persist`] for media failures.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), InsertError> {
        self.insert_with(key.len(), value.len(), |k, v| {
            k.copy_from_slice(key);
            v.copy_from_slice(value);
        })
    }

    /// Inserts an entry whose key and value are written in place by `fill`, which receives
    /// the key buffer (`key_len` bytes) and the value buffer (`value_len` bytes) inside the
    /// arena, and must write all of both. Avoids building the key in a temporary buffer.
    /// (The buffers are fresh arena memory: zero on a fresh heap arena, but arbitrary bytes
    /// on a media arena or an arena written outside its allocations.)
    ///
    /// The node is allocated before the list is searched, so a [`InsertError::Duplicate`]
    /// leaves its arena space unused. Errors as in [`SkipList::insert`]; on `Full`, `fill`
    /// is not called.
    pub fn insert_with<F>(
        &self,
        key_len: usize,
        value_len: usize,
        fill: F,
    ) -> Result<(), InsertError>
    where
        F: FnOnce(&mut [u8], &mut [u8]),
    {
        self.insert_with_then(key_len, value_len, fill, || Ok(()))
    }

    /// [`SkipList::insert_with`], and on a persistent arena `before_fence` runs after the
    /// node is linked at level 0 and that link persisted, before the fence that makes the
    /// link durable: whatever it persists (without a fence) on the arena's media on this
    /// thread is durable when this returns `Ok`, in the same fence as the link (one fence
    /// fewer than persisting it afterwards). A power cut may then keep either without the
    /// other. On a DRAM arena, or when nothing was linked (an error), it does not run.
    ///
    /// # Errors
    /// As [`SkipList::insert_with`]; an error of `before_fence` is `InsertError::Persist`
    /// (the entry is linked but not known durable).
    pub fn insert_with_then<F, H>(
        &self,
        key_len: usize,
        value_len: usize,
        fill: F,
        before_fence: H,
    ) -> Result<(), InsertError>
    where
        F: FnOnce(&mut [u8], &mut [u8]),
        H: FnOnce() -> io::Result<()>,
    {
        let mut before_fence = Some(before_fence);
        // Persistent inserts take turns (invariant 5); DRAM inserts never touch the mutex.
        let _turn = self.durable.then(|| {
            self.insert_turn
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        });
        let (node, height, size) = self.alloc_node(key_len, value_len, fill)?;
        // Cost hook: linking stores one link into each of `height` predecessors.
        self.arena.on_writes(height, LINK_SIZE);
        // SAFETY: the key bytes were written by this thread in `alloc_node`; from here on
        // they are never written again (invariant 1).
        let key = unsafe { self.arena.bytes(self.key_offset(node, height), key_len) };

        let list_height = self.raise_height(height);

        // Find the neighbours of `key` at every level, from the top.
        let (mut prev, mut next) = self
            .find_splices(key, 0, list_height)
            .map_err(corrupt_err)?;
        if next[0] != NIL && self.cmp.compare(key, self.key(next[0])) == Ordering::Equal {
            return Err(InsertError::Duplicate);
        }

        if self.durable {
            // The node must be durable, level-0 link included, before anything links to it.
            for (level, &n) in next.iter().enumerate().take(height) {
                self.link(node, level).store(n, AtomicOrdering::Relaxed);
            }
            self.arena.persist(node, size).map_err(persist_err)?;
            self.arena.fence().map_err(persist_err)?;
        }

        // Link bottom-up. A failed swap means another node was linked between prev and next
        // at that level: search again from prev, which still precedes `key`.
        for level in 0..height {
            loop {
                self.link(node, level)
                    .store(next[level], AtomicOrdering::Relaxed);
                match self.link(prev[level], level).compare_exchange(
                    next[level],
                    node,
                    AtomicOrdering::Release,
                    AtomicOrdering::Acquire,
                ) {
                    Ok(_) => {
                        if level == 0 && self.durable {
                            // Publish durably before returning (and before upper levels,
                            // which are never persisted), with whatever the caller adds
                            // to the same fence.
                            let persisted = self
                                .arena
                                .persist(self.link_offset(prev[0], 0), LINK_SIZE)
                                .and_then(|()| before_fence.take().map_or(Ok(()), |h| h()))
                                .and_then(|()| self.arena.fence())
                                .map_err(persist_err);
                            if let Err(e) = persisted {
                                self.len.fetch_add(1, AtomicOrdering::Release);
                                return Err(e);
                            }
                        }
                        break;
                    }
                    Err(_) => {
                        let (p, n) = match self.find_splice(key, level, prev[level], NIL) {
                            Ok(found) => found,
                            Err(e) => {
                                if level > 0 {
                                    // Linked (and durable) at level 0 already.
                                    self.len.fetch_add(1, AtomicOrdering::Release);
                                }
                                return Err(corrupt_err(e));
                            }
                        };
                        if level == 0
                            && n != NIL
                            && self.cmp.compare(key, self.key(n)) == Ordering::Equal
                        {
                            // Lost a race against an equal key; nothing is linked yet.
                            return Err(InsertError::Duplicate);
                        }
                        prev[level] = p;
                        next[level] = n;
                        if level == 0 && self.durable {
                            // The node's level-0 link changed: durable before the node is
                            // linked.
                            self.link(node, 0).store(n, AtomicOrdering::Relaxed);
                            self.persist_link(node, 0)?;
                        }
                    }
                }
            }
        }
        self.len.fetch_add(1, AtomicOrdering::Release);
        Ok(())
    }

    /// Inserts every `(key, value)` of `entries`.
    ///
    /// On a persistent arena this is cheaper than one [`SkipList::insert`] per entry: all
    /// nodes are written and persisted, one fence; then every new level-0 link is stored
    /// and persisted, one more fence. It is all or nothing for errors: a duplicate (inside
    /// the batch or with the list) or a full arena links nothing. Durability: every entry is
    /// durable when it returns `Ok`; a power cut before that may leave any subset of the
    /// batch (each recovered entry whole), not necessarily a prefix.
    ///
    /// On a DRAM arena it inserts the entries one by one, in order: on an error, the entries
    /// before the failing one stay inserted.
    pub fn insert_batch(&self, entries: &[(&[u8], &[u8])]) -> Result<(), InsertError> {
        if !self.durable {
            for (k, v) in entries {
                self.insert(k, v)?;
            }
            return Ok(());
        }
        let _turn = self
            .insert_turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // 1. Write every node (nothing is reachable yet).
        let mut nodes = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let (node, height, size) = self.alloc_node(k.len(), v.len(), |kb, vb| {
                kb.copy_from_slice(k);
                vb.copy_from_slice(v);
            })?;
            nodes.push((node, height, size));
        }
        // 2. Key order; refuse duplicates inside the batch.
        nodes.sort_by(|a, b| self.cmp.compare(self.key(a.0), self.key(b.0)));
        for w in nodes.windows(2) {
            if self.cmp.compare(self.key(w[0].0), self.key(w[1].0)) == Ordering::Equal {
                return Err(InsertError::Duplicate);
            }
        }
        // 3. Level-0 neighbours in the current list (frozen: we hold the insert turn).
        let mut splices = Vec::with_capacity(nodes.len());
        for &(node, _, _) in &nodes {
            let (p, n) = self.find_level0(self.key(node)).map_err(corrupt_err)?;
            if n != NIL && self.cmp.compare(self.key(node), self.key(n)) == Ordering::Equal {
                return Err(InsertError::Duplicate);
            }
            splices.push((p, n));
        }
        // 4. Each node's level-0 successor: the next batch node if it falls in the same gap
        //    of the list, else the list node after the gap. Persist all nodes, one fence.
        for (i, &(node, height, size)) in nodes.iter().enumerate() {
            let succ = match nodes.get(i + 1) {
                Some(&(next_node, _, _)) if splices[i + 1].0 == splices[i].0 => next_node,
                _ => splices[i].1,
            };
            self.link(node, 0).store(succ, AtomicOrdering::Relaxed);
            for level in 1..height {
                self.link(node, level).store(NIL, AtomicOrdering::Relaxed);
            }
            self.arena.persist(node, size).map_err(persist_err)?;
        }
        self.arena.fence().map_err(persist_err)?;
        // 5. Publish the first node of each gap; persist those links, one fence.
        let mut result = Ok(());
        for (i, &(node, _, _)) in nodes.iter().enumerate() {
            if i == 0 || splices[i].0 != splices[i - 1].0 {
                let p = splices[i].0;
                self.arena.on_write(LINK_SIZE);
                self.link(p, 0).store(node, AtomicOrdering::Release);
                if let Err(e) = self.arena.persist(self.link_offset(p, 0), LINK_SIZE) {
                    result = Err(persist_err(e));
                }
            }
        }
        if result.is_ok() {
            result = self.arena.fence().map_err(persist_err);
        }
        self.len.fetch_add(nodes.len(), AtomicOrdering::Release);
        // 6. Upper levels, never persisted; only over nodes known durable at level 0 (an
        //    upper link must never name a node a power cut could unlink).
        result?;
        for &(node, height, _) in &nodes {
            if height > 1 {
                self.link_upper(node, height).map_err(corrupt_err)?;
            }
        }
        Ok(())
    }

    /// Allocates a node of a random height for `key_len + value_len` bytes, writes its
    /// header, lets `fill` write the key and value, and (on a media arena) stores its
    /// checksum. Returns `(offset, height, size)`. The node is not linked.
    #[inline]
    fn alloc_node<F>(
        &self,
        key_len: usize,
        value_len: usize,
        fill: F,
    ) -> Result<(u32, usize, usize), InsertError>
    where
        F: FnOnce(&mut [u8], &mut [u8]),
    {
        let height = random_height();
        let key_len32 = u32::try_from(key_len).map_err(|_| InsertError::Full)?;
        let value_len32 = u32::try_from(value_len).map_err(|_| InsertError::Full)?;
        let size = key_len
            .checked_add(value_len)
            .and_then(|kv| kv.checked_add(node_size(height, 0, 0)))
            .ok_or(InsertError::Full)?;
        // On media (where a miss costs the device's latency), the part of the node a search
        // reads (header, links, key) is kept inside one cache line when it fits, so a visit
        // is one miss, not two dependent ones (the key's address depends on the height).
        let head = if self.on_media {
            node_size(height, key_len, 0)
        } else {
            0
        };
        let node = self
            .arena
            .alloc_with_head(size, 4, head)
            .ok_or(InsertError::Full)?;

        // Initialise the node before anyone can see it (it is published by the caller).
        self.arena
            .atomic_u32(node)
            .store(key_len32, AtomicOrdering::Relaxed);
        self.arena
            .atomic_u32(node + 4)
            .store(value_len32, AtomicOrdering::Relaxed);
        self.arena
            .atomic_u32(node + 8)
            .store(height as u32, AtomicOrdering::Relaxed);
        let kv_off = self.key_offset(node, height);
        let kv = self.arena.ptr(kv_off, key_len + value_len);
        {
            // SAFETY: `kv..kv + key_len + value_len` is inside the arena (checked by `ptr`)
            // and belongs to the allocation made above, which no other thread can reach:
            // its offset has not been published yet. The two slices are disjoint halves of
            // it and are dropped before the node is published.
            let (k, v) = unsafe {
                (
                    std::slice::from_raw_parts_mut(kv, key_len),
                    std::slice::from_raw_parts_mut(kv.add(key_len), value_len),
                )
            };
            fill(k, v);
        }
        if self.on_media {
            let crc = self.node_checksum(node, height, key_len, value_len);
            self.arena
                .atomic_u32(node + CHECKSUM_AT)
                .store(crc, AtomicOrdering::Relaxed);
            self.arena.on_write(size);
        }
        if self.end_word {
            self.cover(node as usize + size)?;
        }
        if let Some(lazy) = &self.lazy {
            // Published (if ever) by the `Release` store that links the node.
            LazyCheck::set(&lazy.nodes, node);
        }
        Ok((node, height, size))
    }

    /// The allocation bound to store once allocations reach `used` bytes: `used` rounded up
    /// to the next step of [`end_step`], at most the capacity.
    fn next_end(&self, used: usize) -> u32 {
        let capacity = self.arena.capacity();
        let step = end_step(capacity);
        let end = used.div_ceil(step).saturating_mul(step).min(capacity);
        // The capacity fits in a u32 (`MAX_CAPACITY`).
        u32::try_from(end).unwrap_or(u32::MAX)
    }

    /// Makes the header's allocation bound cover `end`, the end of a node just allocated:
    /// if it does not yet, moves it a step further and persists it. No fence here: the
    /// node is persisted and fenced before anything links it, and that fence makes the new
    /// bound durable too, so a bound below a linked node never reaches the media.
    fn cover(&self, end: usize) -> Result<(), InsertError> {
        let word = self.arena.atomic_u64(END_WORD_AT);
        let mut cur = word.load(AtomicOrdering::Relaxed);
        loop {
            // Only this list writes the word, always with a valid checksum.
            if end <= cur as u32 as usize {
                return Ok(());
            }
            let new = bound_word(self.next_end(end), self.list_id);
            // Persistent lists insert in turns; a volatile one may race: keep the larger.
            match word.compare_exchange(cur, new, AtomicOrdering::Relaxed, AtomicOrdering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        self.arena.on_write(8);
        self.arena.persist(END_WORD_AT, 8).map_err(persist_err)
    }

    /// Raises the list height to at least `height`; returns the list height.
    #[inline]
    fn raise_height(&self, height: usize) -> usize {
        let mut list_height = self.height.load(AtomicOrdering::Relaxed) as usize;
        while height > list_height {
            match self.height.compare_exchange_weak(
                list_height as u32,
                height as u32,
                AtomicOrdering::Relaxed,
                AtomicOrdering::Relaxed,
            ) {
                Ok(_) => list_height = height,
                Err(h) => list_height = h as usize,
            }
        }
        list_height
    }

    /// The level-0 neighbours `(p, n)` of `key`: `p < key <= n` (head / NIL at the ends).
    fn find_level0(&self, key: &[u8]) -> Result<(u32, u32), CorruptNode> {
        let mut before = self.head;
        let mut stop = NIL;
        let mut n = NIL;
        for level in (0..self.height.load(AtomicOrdering::Relaxed) as usize).rev() {
            let (p, next) = self.find_splice(key, level, before, stop)?;
            before = p;
            stop = next;
            n = next;
        }
        Ok((before, n))
    }

    /// The neighbours (`prev[level] < key <= next[level]`) of `key` at levels
    /// `lowest..list_height`, found from the top down; the other slots hold the head / NIL.
    #[inline]
    fn find_splices(
        &self,
        key: &[u8],
        lowest: usize,
        list_height: usize,
    ) -> Result<([u32; MAX_HEIGHT], [u32; MAX_HEIGHT]), CorruptNode> {
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next = [NIL; MAX_HEIGHT];
        let mut before = self.head;
        let mut stop = NIL;
        for level in (lowest..list_height).rev() {
            let (p, n) = self.find_splice(key, level, before, stop)?;
            stop = n;
            prev[level] = p;
            next[level] = n;
            before = p;
        }
        Ok((prev, next))
    }

    /// Links `node` (already linked at level 0, `height` links) at levels `1..height`.
    fn link_upper(&self, node: u32, height: usize) -> Result<(), CorruptNode> {
        let key = self.key(node);
        self.arena.on_writes(height.saturating_sub(1), LINK_SIZE);
        let list_height = self.raise_height(height);
        let (mut prev, mut next) = self.find_splices(key, 1, list_height)?;
        for level in 1..height {
            loop {
                self.link(node, level)
                    .store(next[level], AtomicOrdering::Relaxed);
                match self.link(prev[level], level).compare_exchange(
                    next[level],
                    node,
                    AtomicOrdering::Release,
                    AtomicOrdering::Acquire,
                ) {
                    Ok(_) => break,
                    Err(_) => {
                        let (p, n) = self.find_splice(key, level, prev[level], NIL)?;
                        prev[level] = p;
                        next[level] = n;
                    }
                }
            }
        }
        Ok(())
    }

    /// Persists the link of `node` at `level` and fences.
    fn persist_link(&self, node: u32, level: usize) -> Result<(), InsertError> {
        self.arena
            .persist(self.link_offset(node, level), LINK_SIZE)
            .map_err(persist_err)?;
        self.arena.fence().map_err(persist_err)
    }

    /// The checksum of a node whose header fields and key/value bytes are written: crc32c,
    /// seeded by the list id, over the node's offset, height, key length and value length
    /// (little-endian `u32`s), then the key and value bytes.
    fn node_checksum(&self, node: u32, height: usize, key_len: usize, value_len: usize) -> u32 {
        let mut fixed = [0u8; 16];
        fixed[0..4].copy_from_slice(&node.to_le_bytes());
        fixed[4..8].copy_from_slice(&(height as u32).to_le_bytes());
        fixed[8..12].copy_from_slice(&(key_len as u32).to_le_bytes());
        fixed[12..16].copy_from_slice(&(value_len as u32).to_le_bytes());
        let crc = crc32c::crc32c_append(self.crc_seed, &fixed);
        // SAFETY: the node's key and value were written before this call (by this thread,
        // or before the node was published / the arena was handed to recovery) and are
        // never written again; the caller checked that they lie inside the arena.
        let kv = unsafe {
            self.arena
                .bytes(self.key_offset(node, height), key_len + value_len)
        };
        crc32c::crc32c_append(crc, kv)
    }

    /// The value stored under a key equal to `key`, if any.
    ///
    /// # Errors
    /// A node the search reached failed its checks (a recovered list; see
    /// [`SkipList::recover`]): nothing of it is returned.
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>, CorruptNode> {
        let n = self.find_ge(key)?;
        if n != NIL && self.cmp.compare(self.key(n), key) == Ordering::Equal {
            self.read_rest_of(n);
            Ok(Some(self.value(n)))
        } else {
            Ok(None)
        }
    }

    /// A cursor over this list, initially not positioned.
    pub fn cursor(&self) -> Cursor<&Self> {
        Cursor::new(self)
    }

    /// An iterator over all entries in key order, as `(key, value)`. On a corrupt node
    /// (a recovered list) it ends early and [`Iter::status`] tells why.
    pub fn iter(&self) -> Iter<'_, C> {
        let (node, err) = match self.step(self.head, 0) {
            Ok(n) => (n, None),
            Err(e) => (NIL, Some(e)),
        };
        Iter {
            list: self,
            node,
            err,
            budget: self.arena.capacity() / 4 + 1,
        }
    }

    // ---- node access -------------------------------------------------------------------
    //
    // Every `node` passed to these helpers is the head or an offset loaded from a link of
    // this list (with `Acquire`), or a node being inserted by the current thread: by
    // invariants 1 and 4, its header, key and value are initialised, published and immutable.

    /// Offset of the link of `node` at `level`.
    #[inline]
    fn link_offset(&self, node: u32, level: usize) -> u32 {
        node + (HEADER_SIZE + LINK_SIZE * level) as u32
    }

    /// Offset of the key of `node`, whose tower has `height` links (the value follows).
    #[inline]
    fn key_offset(&self, node: u32, height: usize) -> u32 {
        node + (HEADER_SIZE + LINK_SIZE * height) as u32
    }

    /// The link of `node` at `level`.
    #[inline]
    fn link(&self, node: u32, level: usize) -> &AtomicU32 {
        self.arena.atomic_u32(self.link_offset(node, level))
    }

    /// The next node after `node` at `level` (NIL at the end).
    #[inline]
    fn next_of(&self, node: u32, level: usize) -> u32 {
        self.link(node, level).load(AtomicOrdering::Acquire)
    }

    /// A field of `node`'s header: 0 = key_len, 4 = value_len, 8 = height, 12 = checksum.
    #[inline]
    fn field(&self, node: u32, at: u32) -> usize {
        self.arena
            .atomic_u32(node + at)
            .load(AtomicOrdering::Relaxed) as usize
    }

    /// The key of `node`.
    #[inline]
    fn key(&self, node: u32) -> &[u8] {
        let (key_len, height) = (self.field(node, 0), self.field(node, 8));
        let off = self.key_offset(node, height);
        // SAFETY: `node` is published or owned by this thread (see above), so its key bytes
        // were written before this read happens and are never written again.
        unsafe { self.arena.bytes(off, key_len) }
    }

    /// The value of `node`.
    #[inline]
    fn value(&self, node: u32) -> &[u8] {
        let (key_len, value_len) = (self.field(node, 0), self.field(node, 4));
        let height = self.field(node, 8);
        let off = self.key_offset(node, height) + key_len as u32;
        // SAFETY: as in `key`: the value bytes are written once, before publication.
        unsafe { self.arena.bytes(off, value_len) }
    }

    /// Bytes of `node` from its header to the end of its value.
    #[inline]
    fn node_bytes(&self, node: u32) -> usize {
        let (key_len, value_len, height) = (
            self.field(node, 0),
            self.field(node, 4),
            self.field(node, 8),
        );
        node_size(height, key_len, value_len)
    }

    /// Cost hook (media arenas): `node`, whose first [`NODE_READ_BYTES`] a search or step
    /// just reported, is read to the end of its value (an entry returned to the caller).
    #[inline]
    fn read_rest_of(&self, node: u32) {
        if self.on_media {
            self.arena.on_read_continued_at(
                node.saturating_add(NODE_READ_BYTES as u32),
                self.node_bytes(node).saturating_sub(NODE_READ_BYTES),
            );
        }
    }

    /// Cost hook: a cursor step read the first line of the node it landed on (`r`).
    #[inline]
    fn report_landing(&self, r: &Result<u32, CorruptNode>) {
        if let Ok(node) = r
            && *node != NIL
        {
            self.arena.on_read_at(*node, NODE_READ_BYTES);
        }
    }

    // ---- searches ----------------------------------------------------------------------

    /// Hints the CPU to load `node`'s first cache line (its header, and usually its key).
    ///
    /// A search at level `i` prefetches the successor at level `i - 1` of the node it is on
    /// while comparing the successor at level `i`: when the search goes down a level, the
    /// node it needs next is then already on its way from memory, so the two cache misses
    /// overlap instead of following each other.
    #[inline(always)]
    fn prefetch(&self, node: u32) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            // The offset may come from a link not checked yet: never out of the arena.
            if node as usize >= self.arena.capacity() {
                return;
            }
            let p = self.arena.ptr(node, 0);
            // SAFETY: a prefetch is only a hint: it never faults and has no effect on the
            // program's memory; `p` is inside (or one past) the arena anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    p.cast::<i8>().cast_const(),
                )
            };
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let _ = node;
    }

    /// Starting from `before` (which precedes `key`, or is the head), the neighbours of `key`
    /// at `level`: `(p, n)` with `p < key <= n` and `n` the successor of `p` (NIL at end).
    /// `stop` is a node already known to be `>= key` (or NIL): it is not compared again.
    #[inline]
    fn find_splice(
        &self,
        key: &[u8],
        level: usize,
        mut before: u32,
        stop: u32,
    ) -> Result<(u32, u32), CorruptNode> {
        loop {
            let next = self.step(before, level)?;
            if level > 0 {
                self.prefetch(self.next_of(before, level - 1));
            }
            if next == NIL || next == stop {
                return Ok((before, next));
            }
            self.arena.on_read_at(next, NODE_READ_BYTES);
            if self.cmp.compare(key, self.key(next)) != Ordering::Greater {
                return Ok((before, next));
            }
            before = next;
        }
    }

    /// Searches from the top for the boundary around `key`: returns `(x, n)` where `x` is
    /// the last node whose key is `< key` (`inclusive` false) or `<= key` (`inclusive`
    /// true), NIL if there is none, and `n` is the successor of `x` at level 0 as seen by
    /// the last comparison, NIL at the end.
    ///
    /// `n` must be the link value that was compared, never a fresh load of `x`'s link: a
    /// concurrent insert may have linked a node between `x` and `n` since then, and that
    /// node may be on the wrong side of `key`.
    fn find_boundary(&self, key: &[u8], inclusive: bool) -> Result<(u32, u32), CorruptNode> {
        let mut x = self.head;
        let mut n = NIL;
        // The node that ended the walk at the level above: known not to advance, so it is
        // not compared again when the walk below reaches it.
        let mut stop = NIL;
        let mut visits = 0;
        let mut level = self.height.load(AtomicOrdering::Relaxed) as usize;
        while level > 0 {
            level -= 1;
            loop {
                n = self.step(x, level)?;
                if level > 0 {
                    self.prefetch(self.next_of(x, level - 1));
                }
                if n == NIL || n == stop {
                    break;
                }
                visits += 1;
                self.arena.on_read_at(n, NODE_READ_BYTES);
                // A walk longer than the arena has 4-byte words to hold nodes went round a
                // cycle of damaged links that the per-link checks missed: an error, never
                // an endless loop.
                if visits > self.arena.capacity() / 4 + 1 {
                    return Err(CorruptNode {
                        offset: n,
                        detail: format!("search went round a cycle of links (at {x})"),
                    });
                }
                // Advance while n < key (exclusive) or n <= key (inclusive).
                let advance = match self.cmp.compare(self.key(n), key) {
                    Ordering::Less => true,
                    Ordering::Equal => inclusive,
                    Ordering::Greater => false,
                };
                if !advance {
                    stop = n;
                    break;
                }
                x = n;
            }
        }
        Ok((if x == self.head { NIL } else { x }, n))
    }

    /// The first node whose key is `>= key`, or NIL.
    fn find_ge(&self, key: &[u8]) -> Result<u32, CorruptNode> {
        Ok(self.find_boundary(key, false)?.1)
    }

    /// The first node whose key is `> key`, or NIL.
    fn find_gt(&self, key: &[u8]) -> Result<u32, CorruptNode> {
        Ok(self.find_boundary(key, true)?.1)
    }

    /// The last node whose key is `< key`, or NIL.
    fn find_lt(&self, key: &[u8]) -> Result<u32, CorruptNode> {
        Ok(self.find_boundary(key, false)?.0)
    }

    /// The last node whose key is `<= key`, or NIL.
    fn find_le(&self, key: &[u8]) -> Result<u32, CorruptNode> {
        Ok(self.find_boundary(key, true)?.0)
    }

    /// The last node of the list, or NIL.
    fn find_last(&self) -> Result<u32, CorruptNode> {
        let mut x = self.head;
        let mut level = self.height.load(AtomicOrdering::Relaxed) as usize;
        while level > 0 {
            level -= 1;
            loop {
                let next = self.step(x, level)?;
                if next == NIL {
                    break;
                }
                self.arena.on_read_at(next, NODE_READ_BYTES);
                x = next;
            }
        }
        Ok(if x == self.head { NIL } else { x })
    }
}

impl<C: Comparator> SkipList<C> {
    /// Reopens the persistent list held by `arena` (from
    /// [`Arena::recover_on_media`](crate::Arena::recover_on_media)), ordered by `cmp` (the
    /// comparator it was built with).
    ///
    /// Version 2 (what [`SkipList::new`] writes): checks the header and the head node and
    /// nothing else, in time independent of the number of entries. The allocation cursor
    /// moves to the header's allocation bound (later inserts go after it); the list height
    /// is read from the head's tower. Every other node is checked when a search, a cursor or
    /// [`SkipList::len`] first reaches it (bounds, alignment, height, checksum, key greater
    /// than its predecessor's), before any of its bytes is used; a node that fails is
    /// reported as [`CorruptNode`] by that read and never returned. Upper-level links are
    /// used as found: each is a value the link held at some time, so it names a node that
    /// was durably linked at level 0 then (invariant 5), and a search through it is correct.
    ///
    /// Version 1 (no allocation bound): walks level 0 from the head checking every node
    /// (bounds, alignment, height, checksum, keys strictly increasing, at most as many
    /// nodes as fit in the arena), rebuilds every upper-level link in place, and moves the
    /// allocation cursor past the furthest recovered node. The list stays version 1.
    ///
    /// Never panics on bad bytes (provided `cmp` does not panic on the keys that were
    /// inserted).
    ///
    /// # Errors
    /// [`RecoverError::NotOnMedia`] for a heap arena, [`RecoverError::Header`] for a
    /// missing or damaged header (or an allocation bound outside the arena),
    /// [`RecoverError::Node`] (with the node's offset) for a bad head node or, in version
    /// 1, any invalid node reachable from the head. A linked node is never silently
    /// dropped: the persist protocol makes a node durable before it is linked, so a bad
    /// linked node is corruption, not an interrupted insert.
    pub fn recover(arena: Arena, cmp: C) -> Result<(Self, RecoveryReport), RecoverError> {
        if !arena.is_on_media() {
            return Err(RecoverError::NotOnMedia);
        }
        let header_err = |detail: String| RecoverError::Header { detail };
        let mut header = [0u8; LIST_HEADER_SIZE];
        // SAFETY: the header lies in the reserved first MEDIA_HEADER bytes of the arena
        // (LIST_HEADER_SIZE < MEDIA_HEADER <= capacity); the arena was handed over by value,
        // so nothing else writes them while the copy is taken.
        header.copy_from_slice(unsafe { arena.bytes(0, LIST_HEADER_SIZE) });
        arena.on_read(LIST_HEADER_SIZE);
        if le_u64(&header, 0) != LIST_MAGIC {
            return Err(header_err("no skip list magic".to_owned()));
        }
        let stored_crc = le_u32(&header, LIST_HEADER_CRC_AT);
        if crc32c::crc32c(&header[..LIST_HEADER_CRC_AT]) != stored_crc {
            return Err(header_err("header checksum mismatch".to_owned()));
        }
        let version = le_u32(&header, 8);
        if version != FORMAT_VERSION && version != FORMAT_V1 {
            return Err(header_err(format!("unknown format version {version}")));
        }
        let max_height = le_u32(&header, 12);
        if max_height as usize != MAX_HEIGHT {
            return Err(header_err(format!(
                "maximum height {max_height}, this build uses {MAX_HEIGHT}"
            )));
        }
        let capacity = le_u64(&header, 24);
        if capacity != arena.capacity() as u64 {
            return Err(header_err(format!(
                "list was created in a {capacity}-byte arena, reopened in {} bytes",
                arena.capacity()
            )));
        }
        let head = le_u32(&header, 16);
        let list_id = le_u64(&header, 32);
        let end_word = le_u64(&header, END_WORD_AT as usize);
        let list = SkipList {
            durable: arena.is_persistent(),
            arena,
            cmp,
            head,
            height: AtomicU32::new(1),
            len: AtomicUsize::new(0),
            on_media: true,
            crc_seed: crc_seed(list_id),
            insert_turn: Mutex::new(()),
            end_word: version == FORMAT_VERSION,
            list_id,
            lazy: None,
        };
        list.arena.on_read(NODE_READ_BYTES);
        let head_info = list.check_node(head).map_err(|detail| RecoverError::Node {
            offset: head,
            detail: format!("head node: {detail}"),
        })?;
        if head_info.height != MAX_HEIGHT || head_info.key_len != 0 || head_info.value_len != 0 {
            return Err(RecoverError::Node {
                offset: head,
                detail: "head node with a key, a value or a short tower".to_owned(),
            });
        }
        let head_end = head as usize + head_info.size;
        if version == FORMAT_V1 {
            return list.recover_by_walk(head_end);
        }
        let end = bound_of(end_word, list_id)
            .ok_or_else(|| header_err("allocation bound checksum mismatch".to_owned()))?;
        if (end as usize) < head_end || end as usize > list.arena.capacity() {
            return Err(header_err(format!(
                "allocation bound {end} outside {head_end}..={}",
                list.arena.capacity()
            )));
        }
        let mut list = list;
        let lazy = LazyCheck::new(list.arena.capacity(), end);
        LazyCheck::set(&lazy.nodes, head);
        list.lazy = Some(lazy);
        // The tallest level the head links (its links are checked when followed).
        let tallest = (0..MAX_HEIGHT)
            .rev()
            .find(|&level| list.next_of(head, level) != NIL)
            .map_or(1, |level| level + 1);
        list.height.store(tallest as u32, AtomicOrdering::Relaxed);
        list.arena.set_used(end as usize);
        let report = RecoveryReport {
            version,
            bytes: end as usize,
        };
        Ok((list, report))
    }

    /// Version 1 recovery (see [`SkipList::recover`]): walks level 0 from the head, whose
    /// node ends at `head_end`, checking every node and relinking the upper levels.
    fn recover_by_walk(self, head_end: usize) -> Result<(Self, RecoveryReport), RecoverError> {
        let list = self;
        let head = list.head;
        // Walk level 0; relink the upper levels behind the walk.
        let mut last = [head; MAX_HEIGHT];
        let mut end = head_end;
        let mut tallest = 1;
        let mut entries = 0usize;
        let max_entries = list.arena.capacity() / node_size(1, 0, 0);
        let mut prev = NIL;
        let mut node = list.next_of(head, 0);
        while node != NIL {
            let node_err = |detail: String| RecoverError::Node {
                offset: node,
                detail,
            };
            if entries >= max_entries {
                return Err(node_err(
                    "more nodes than the arena can hold: a cycle".to_owned(),
                ));
            }
            list.arena.on_read(NODE_READ_BYTES);
            let info = list.check_node(node).map_err(node_err)?;
            if prev != NIL && list.cmp.compare(list.key(prev), list.key(node)) != Ordering::Less {
                return Err(node_err(format!(
                    "key not greater than the key of its predecessor at {prev}"
                )));
            }
            for (level, from) in last.iter_mut().enumerate().take(info.height).skip(1) {
                list.link(*from, level).store(node, AtomicOrdering::Relaxed);
                *from = node;
            }
            tallest = tallest.max(info.height);
            end = end.max(node as usize + info.size);
            entries += 1;
            prev = node;
            node = list.next_of(node, 0);
        }
        for (level, from) in last.iter().enumerate().skip(1) {
            list.link(*from, level).store(NIL, AtomicOrdering::Relaxed);
        }
        list.height.store(tallest as u32, AtomicOrdering::Relaxed);
        list.len.store(entries, AtomicOrdering::Release);
        list.arena.set_used(end);
        let report = RecoveryReport {
            version: FORMAT_V1,
            bytes: end,
        };
        Ok((list, report))
    }

    /// The next node after `x` at `level` (NIL at the end), `x` being the head or a node
    /// this list reached through checked links. On a list recovered without a walk, a link
    /// stored before recovery is checked the first time it is followed: the node it names
    /// must be valid ([`SkipList::check_node`], once per node), end within the recovered
    /// allocation bound, be tall enough for `level`, and hold a key greater than `x`'s
    /// (so no walk can cycle). Links this handle stored are trusted: they name nodes it
    /// checked or wrote.
    #[inline]
    fn step(&self, x: u32, level: usize) -> Result<u32, CorruptNode> {
        let n = self.next_of(x, level);
        match &self.lazy {
            None => Ok(n),
            Some(lazy) => {
                let at = self.link_offset(x, level);
                if n == NIL || at >= lazy.below || LazyCheck::is_set(&lazy.links, at) {
                    Ok(n)
                } else {
                    self.verify_link(lazy, x, level, n, at)
                }
            }
        }
    }

    /// The first check of the link at arena offset `at` (of `x` at `level`) naming `n`;
    /// see [`SkipList::step`].
    #[cold]
    #[inline(never)]
    fn verify_link(
        &self,
        lazy: &LazyCheck,
        x: u32,
        level: usize,
        n: u32,
        at: u32,
    ) -> Result<u32, CorruptNode> {
        let bad = |detail: String| CorruptNode { offset: n, detail };
        // The bits are per 4-byte word: a misaligned offset shares the bit of a node.
        if !n.is_multiple_of(4) {
            return Err(bad(format!("misaligned link from {x}")));
        }
        if !LazyCheck::is_set(&lazy.nodes, n) {
            // Nodes at or after the bound are this handle's, and were marked when allocated.
            if n >= lazy.below {
                return Err(bad(format!(
                    "linked from {x} past the recovered allocation bound {}",
                    lazy.below
                )));
            }
            let info = self.check_node(n).map_err(bad)?;
            if n as usize + info.size > lazy.below as usize {
                return Err(bad(format!(
                    "node ends past the recovered allocation bound {}",
                    lazy.below
                )));
            }
            LazyCheck::set(&lazy.nodes, n);
        }
        let height = self.field(n, 8);
        if height <= level {
            return Err(bad(format!(
                "linked from {x} at level {level} with a tower of {height}"
            )));
        }
        if x != self.head && self.cmp.compare(self.key(x), self.key(n)) != Ordering::Less {
            return Err(bad(format!(
                "key not greater than the key of its predecessor at {x}"
            )));
        }
        LazyCheck::set(&lazy.links, at);
        Ok(n)
    }

    /// Entries linked before a recovery without a walk: counted by a checked walk over
    /// level 0 (nodes at or after the recovered bound are this handle's, counted by `len`
    /// already). A walk that meets a corrupt node counts the entries before it.
    fn recovered_entries(&self, lazy: &LazyCheck) -> usize {
        let mut count = 0;
        let mut node = self.head;
        // More steps than the arena has link words means a cycle of damaged links: stop.
        let mut budget = self.arena.capacity() / 4 + 1;
        while let Ok(next) = self.step(node, 0) {
            if next == NIL || budget == 0 {
                break;
            }
            budget -= 1;
            self.arena.on_read_at(next, NODE_READ_BYTES);
            if next < lazy.below {
                count += 1;
            }
            node = next;
        }
        count
    }

    /// Checks the node at `node` without trusting any of its bytes: alignment, bounds,
    /// height and checksum. Only for nodes no thread writes (except their links, which it
    /// does not read): a list being recovered, or a node written before recovery.
    fn check_node(&self, node: u32) -> Result<NodeInfo, String> {
        let capacity = self.arena.capacity();
        if !node.is_multiple_of(4) {
            return Err("misaligned node offset".to_owned());
        }
        if node < MEDIA_HEADER {
            return Err("node offset inside the header area".to_owned());
        }
        if node as usize + HEADER_SIZE > capacity {
            return Err(format!("node offset beyond the arena ({capacity} bytes)"));
        }
        let height = self.field(node, 8);
        if !(1..=MAX_HEIGHT).contains(&height) {
            return Err(format!("height {height} out of 1..={MAX_HEIGHT}"));
        }
        let (key_len, value_len) = (self.field(node, 0), self.field(node, 4));
        let size = node_size(height, 0, 0)
            .checked_add(key_len)
            .and_then(|s| s.checked_add(value_len))
            .filter(|&s| s <= capacity - node as usize)
            .ok_or_else(|| {
                format!("key ({key_len} B) and value ({value_len} B) exceed the arena")
            })?;
        let stored = self.field(node, CHECKSUM_AT) as u32;
        // Cost hook: the checksum reads the node whole; its first line is the visit the
        // caller reports.
        self.arena.on_read_continued_at(
            node.saturating_add(NODE_READ_BYTES as u32),
            size.saturating_sub(NODE_READ_BYTES),
        );
        if self.node_checksum(node, height, key_len, value_len) != stored {
            return Err("node checksum mismatch".to_owned());
        }
        Ok(NodeInfo {
            height,
            key_len,
            value_len,
            size,
        })
    }
}

impl<C> fmt::Debug for SkipList<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len.load(AtomicOrdering::Relaxed))
            .field("persistent", &self.durable)
            .field("height", &self.height.load(AtomicOrdering::Relaxed))
            .field("arena", &self.arena)
            .finish()
    }
}

/// A position in a [`SkipList`], holding the list through `L` (`&SkipList`, `Arc<SkipList>`,
/// or any other `Deref` to it), so it can be stored next to an `Arc` without borrowing.
///
/// The cursor stores only the current node's offset. A new cursor is not positioned
/// ([`Cursor::valid`] is false). Moving forward is O(1); moving backward searches from the
/// head (O(log n)), as the nodes have no back links. Entries inserted after the cursor was
/// positioned may or may not be visited. A move that meets a corrupt node of a recovered
/// list leaves the cursor not positioned and sets [`Cursor::status`], which stays set.
pub struct Cursor<L> {
    list: L,
    node: u32,
    err: Option<CorruptNode>,
}

impl<C, L> Cursor<L>
where
    C: Comparator,
    L: Deref<Target = SkipList<C>>,
{
    /// A cursor over `list`, not positioned.
    pub fn new(list: L) -> Self {
        Cursor {
            list,
            node: NIL,
            err: None,
        }
    }

    /// The list this cursor moves over.
    pub fn list(&self) -> &SkipList<C> {
        &self.list
    }

    /// Gives back the list handle.
    pub fn into_inner(self) -> L {
        self.list
    }

    /// Whether the cursor is at an entry.
    pub fn valid(&self) -> bool {
        self.node != NIL
    }

    /// The first corrupt node a move of this cursor met, if any.
    ///
    /// # Errors
    /// That node.
    pub fn status(&self) -> Result<(), CorruptNode> {
        match &self.err {
            None => Ok(()),
            Some(e) => Err(e.clone()),
        }
    }

    /// Takes the result of a move: the node, or not positioned and the error kept.
    fn land(&mut self, r: Result<u32, CorruptNode>) {
        match r {
            Ok(n) => {
                self.node = n;
                if n != NIL {
                    // The entry landed on is read whole (its first line was the visit).
                    self.list.read_rest_of(n);
                }
            }
            Err(e) => {
                self.node = NIL;
                self.err.get_or_insert(e);
            }
        }
    }

    /// The current key; empty when not [`valid`](Cursor::valid).
    pub fn key<'a>(&'a self) -> &'a [u8]
    where
        C: 'a,
    {
        if self.node == NIL {
            return &[];
        }
        self.list.key(self.node)
    }

    /// The current value; empty when not [`valid`](Cursor::valid).
    pub fn value<'a>(&'a self) -> &'a [u8]
    where
        C: 'a,
    {
        if self.node == NIL {
            return &[];
        }
        self.list.value(self.node)
    }

    /// Moves to the first entry whose key is `>= key`.
    pub fn seek_ge(&mut self, key: &[u8]) {
        let r = self.list.find_ge(key);
        self.land(r);
    }

    /// Moves to the first entry whose key is `> key`.
    pub fn seek_gt(&mut self, key: &[u8]) {
        let r = self.list.find_gt(key);
        self.land(r);
    }

    /// Moves to the last entry whose key is `< key`.
    pub fn seek_lt(&mut self, key: &[u8]) {
        let r = self.list.find_lt(key);
        self.land(r);
    }

    /// Moves to the last entry whose key is `<= key`.
    pub fn seek_le(&mut self, key: &[u8]) {
        let r = self.list.find_le(key);
        self.land(r);
    }

    /// Moves to the first entry.
    pub fn first(&mut self) {
        let r = self.list.step(self.list.head, 0);
        self.list.report_landing(&r);
        self.land(r);
    }

    /// Moves to the last entry.
    pub fn last(&mut self) {
        let r = self.list.find_last();
        self.land(r);
    }

    /// Moves to the next entry (becomes invalid past the last one). No-op when invalid.
    pub fn next(&mut self) {
        if self.node != NIL {
            let r = self.list.step(self.node, 0);
            self.list.report_landing(&r);
            self.land(r);
        }
    }

    /// Moves to the previous entry (becomes invalid before the first one). No-op when
    /// invalid.
    pub fn prev(&mut self) {
        if self.node != NIL {
            let r = self.list.find_lt(self.list.key(self.node));
            self.land(r);
        }
    }
}

impl<L> fmt::Debug for Cursor<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cursor").field("node", &self.node).finish()
    }
}

/// Forward iterator over a [`SkipList`]'s entries, as `(key, value)` pairs. It ends early
/// at a corrupt node of a recovered list; [`Iter::status`] then tells which.
pub struct Iter<'a, C> {
    list: &'a SkipList<C>,
    node: u32,
    err: Option<CorruptNode>,
    /// Steps left before the walk counts as a cycle of damaged links: one per link word
    /// the arena can hold.
    budget: usize,
}

impl<C> Iter<'_, C> {
    /// The corrupt node that ended the iteration early, if any.
    ///
    /// # Errors
    /// That node.
    pub fn status(&self) -> Result<(), CorruptNode> {
        match &self.err {
            None => Ok(()),
            Some(e) => Err(e.clone()),
        }
    }
}

impl<'a, C: Comparator> Iterator for Iter<'a, C> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.node == NIL {
            return None;
        }
        let current = self.node;
        let item = (self.list.key(self.node), self.list.value(self.node));
        match self.list.step(self.node, 0) {
            Ok(_) if self.budget == 0 => {
                self.err = Some(CorruptNode {
                    offset: self.node,
                    detail: "iteration went round a cycle of links".to_owned(),
                });
                self.node = NIL;
            }
            Ok(n) => {
                self.budget -= 1;
                self.node = n;
            }
            Err(e) => {
                self.node = NIL;
                self.err = Some(e);
            }
        }
        // One access: the node, from its header to the end of its value.
        if self.list.on_media {
            self.list
                .arena
                .on_read_at(current, self.list.node_bytes(current));
        }
        Some(item)
    }
}

impl<C> fmt::Debug for Iter<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("node", &self.node).finish()
    }
}
