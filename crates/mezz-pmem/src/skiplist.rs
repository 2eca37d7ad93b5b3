//! A concurrent skip list whose nodes live in an [`Arena`] and link to each other by `u32`
//! offsets (after LevelDB's `db/skiplist.h`, Pebble's `internal/arenaskl` and RocksDB's
//! `InlineSkipList`).
//!
//! Owns: the entries (key bytes, value bytes) inserted into one arena, ordered by a
//! [`Comparator`] fixed at construction, and the cursors over them.
//!
//! Node layout (native-endian `u32` fields, little-endian on the supported targets; every
//! node 4-aligned):
//! ```text
//! +0   key_len   u32
//! +4   value_len u32
//! +8   height    u32          1..=MAX_HEIGHT
//! +12  tower     [u32; height] offset of the next node at each level, 0 = end of list
//! ...  key bytes, then value bytes
//! ```
//! The head node is the first allocation of the arena: it has `MAX_HEIGHT` links and an
//! empty key that no comparison ever looks at.
//!
//! Invariants:
//! 1. Entries are never removed or modified; a node's header, key and value are written
//!    once, before the node is published, and never again. Only the tower links change.
//! 2. At every level, following the links from the head visits keys in strictly increasing
//!    comparator order: no two nodes hold equal keys (a duplicate insert is refused).
//! 3. A node is linked level 0 first, then upwards; so a node reached through a link at level
//!    `i` already has its links at levels below `i` initialised and published.
//! 4. Every link points at a node of the same arena (or is 0): nodes hold offsets, never
//!    pointers, so the same structure can later live in a persistent mapping.
//!
//! Thread-safety: [`SkipList`] is `Send + Sync` when its comparator is. Any number of
//! threads may call [`SkipList::insert`] at the same time (each link is set with a
//! compare-and-swap; a failed swap recomputes the neighbours at that level, starting from the
//! known predecessor), concurrently with lock-free readers ([`SkipList::get`], [`Cursor`]). A
//! node's contents are published by the `Release` swap that links it at level 0 and read by
//! readers after an `Acquire` load of a link, so a reader that finds a node sees it whole. A
//! reader sees every entry whose insert happened-before the read (returned earlier on the
//! same thread, or was signalled to the reader through a `Release`/`Acquire` pair such as
//! [`SkipList::len`]), and may or may not see entries inserted concurrently.
//!
//! Searches prefetch the successor one level down while comparing at the current level, so
//! that the cache misses of a descent overlap (≈ 20 % more inserts and gets per second on a
//! list far larger than the CPU caches, measured here).

use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering as AtomicOrdering};

use crate::arena::Arena;

/// Maximum height of a node's tower. With a branching factor of 4, twelve levels index
/// about 4^12 = 16 M entries efficiently.
pub const MAX_HEIGHT: usize = 12;

/// Bytes of a node's fixed header (`key_len`, `value_len`, `height`).
const HEADER_SIZE: usize = 12;
/// Size of one link.
const LINK_SIZE: usize = 4;
/// The null offset: end of a list.
const NIL: u32 = 0;

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

/// Why an insert was refused. In both cases the list is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The arena has not enough room left for the node.
    Full,
    /// An entry with an equal key is already in the list (some arena space may have been
    /// used by the refused node).
    Duplicate,
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsertError::Full => f.write_str("skip list arena is full"),
            InsertError::Duplicate => f.write_str("key already present in the skip list"),
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
}

impl<C: Comparator> SkipList<C> {
    /// Creates an empty list in `arena`, ordered by `cmp`.
    ///
    /// Fails with [`InsertError::Full`] if the arena cannot hold the head node
    /// (`node_size(MAX_HEIGHT, 0, 0)` bytes).
    pub fn new(arena: Arena, cmp: C) -> Result<Self, InsertError> {
        let head = arena
            .alloc(node_size(MAX_HEIGHT, 0, 0), 4)
            .ok_or(InsertError::Full)?;
        let list = SkipList {
            arena,
            cmp,
            head,
            height: AtomicU32::new(1),
            len: AtomicUsize::new(0),
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
        Ok(list)
    }

    /// Number of entries. Every entry counted is visible to searches and scans that start
    /// after this call (the count is read with `Acquire`, and incremented with `Release`
    /// after the entry is linked).
    pub fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Acquire)
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// The comparator ordering the keys.
    pub fn comparator(&self) -> &C {
        &self.cmp
    }

    /// Inserts a copy of `key` and `value`.
    ///
    /// Fails with [`InsertError::Full`] when the arena has no room for the node (nothing is
    /// linked) and with [`InsertError::Duplicate`] when an equal key is present.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<(), InsertError> {
        self.insert_with(key.len(), value.len(), |k, v| {
            k.copy_from_slice(key);
            v.copy_from_slice(value);
        })
    }

    /// Inserts an entry whose key and value are written in place by `fill`, which receives
    /// the key buffer (`key_len` bytes) and the value buffer (`value_len` bytes) inside the
    /// arena, and must write all of both. Avoids building the key in a temporary buffer.
    /// (The buffers are fresh arena memory: zero, unless the arena was written outside its
    /// allocations before the list took it.)
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
        let height = random_height();
        let key_len32 = u32::try_from(key_len).map_err(|_| InsertError::Full)?;
        let value_len32 = u32::try_from(value_len).map_err(|_| InsertError::Full)?;
        let size = key_len
            .checked_add(value_len)
            .and_then(|kv| kv.checked_add(node_size(height, 0, 0)))
            .ok_or(InsertError::Full)?;
        let node = self.arena.alloc(size, 4).ok_or(InsertError::Full)?;

        // Initialise the node before anyone can see it (it is published below).
        self.arena
            .atomic_u32(node)
            .store(key_len32, AtomicOrdering::Relaxed);
        self.arena
            .atomic_u32(node + 4)
            .store(value_len32, AtomicOrdering::Relaxed);
        self.arena
            .atomic_u32(node + 8)
            .store(height as u32, AtomicOrdering::Relaxed);
        let kv_off = node + (HEADER_SIZE + LINK_SIZE * height) as u32;
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
        // SAFETY: the key bytes were written by this thread above; from here on they are
        // never written again (invariant 1).
        let key = unsafe { self.arena.bytes(kv_off, key_len) };

        // Raise the list height if this tower is taller.
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

        // Find the neighbours of `key` at every level, from the top.
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next = [NIL; MAX_HEIGHT];
        let mut before = self.head;
        let mut stop = NIL;
        for level in (0..list_height).rev() {
            let (p, n) = self.find_splice(key, level, before, stop);
            stop = n;
            prev[level] = p;
            next[level] = n;
            before = p;
        }
        if next[0] != NIL && self.cmp.compare(key, self.key(next[0])) == Ordering::Equal {
            return Err(InsertError::Duplicate);
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
                    Ok(_) => break,
                    Err(_) => {
                        let (p, n) = self.find_splice(key, level, prev[level], NIL);
                        if level == 0
                            && n != NIL
                            && self.cmp.compare(key, self.key(n)) == Ordering::Equal
                        {
                            // Lost a race against an equal key; nothing is linked yet.
                            return Err(InsertError::Duplicate);
                        }
                        prev[level] = p;
                        next[level] = n;
                    }
                }
            }
        }
        self.len.fetch_add(1, AtomicOrdering::Release);
        Ok(())
    }

    /// The value stored under a key equal to `key`, if any.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let n = self.find_ge(key);
        if n != NIL && self.cmp.compare(self.key(n), key) == Ordering::Equal {
            Some(self.value(n))
        } else {
            None
        }
    }

    /// A cursor over this list, initially not positioned.
    pub fn cursor(&self) -> Cursor<&Self> {
        Cursor::new(self)
    }

    /// An iterator over all entries in key order, as `(key, value)`.
    pub fn iter(&self) -> Iter<'_, C> {
        Iter {
            list: self,
            node: self.next_of(self.head, 0),
        }
    }

    // ---- node access -------------------------------------------------------------------
    //
    // Every `node` passed to these helpers is the head or an offset loaded from a link of
    // this list (with `Acquire`), or a node being inserted by the current thread: by
    // invariants 1 and 4, its header, key and value are initialised, published and immutable.

    /// The link of `node` at `level`.
    #[inline]
    fn link(&self, node: u32, level: usize) -> &AtomicU32 {
        self.arena
            .atomic_u32(node + (HEADER_SIZE + LINK_SIZE * level) as u32)
    }

    /// The next node after `node` at `level` (NIL at the end).
    #[inline]
    fn next_of(&self, node: u32, level: usize) -> u32 {
        self.link(node, level).load(AtomicOrdering::Acquire)
    }

    /// A field of `node`'s header: 0 = key_len, 4 = value_len, 8 = height.
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
        let off = node + (HEADER_SIZE + LINK_SIZE * height) as u32;
        // SAFETY: `node` is published or owned by this thread (see above), so its key bytes
        // were written before this read happens and are never written again.
        unsafe { self.arena.bytes(off, key_len) }
    }

    /// The value of `node`.
    #[inline]
    fn value(&self, node: u32) -> &[u8] {
        let (key_len, value_len) = (self.field(node, 0), self.field(node, 4));
        let height = self.field(node, 8);
        let off = node + (HEADER_SIZE + LINK_SIZE * height + key_len) as u32;
        // SAFETY: as in `key`: the value bytes are written once, before publication.
        unsafe { self.arena.bytes(off, value_len) }
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
    fn find_splice(&self, key: &[u8], level: usize, mut before: u32, stop: u32) -> (u32, u32) {
        loop {
            let next = self.next_of(before, level);
            if level > 0 {
                self.prefetch(self.next_of(before, level - 1));
            }
            if next == NIL
                || next == stop
                || self.cmp.compare(key, self.key(next)) != Ordering::Greater
            {
                return (before, next);
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
    fn find_boundary(&self, key: &[u8], inclusive: bool) -> (u32, u32) {
        let mut x = self.head;
        let mut n = NIL;
        // The node that ended the walk at the level above: known not to advance, so it is
        // not compared again when the walk below reaches it.
        let mut stop = NIL;
        let mut level = self.height.load(AtomicOrdering::Relaxed) as usize;
        while level > 0 {
            level -= 1;
            loop {
                n = self.next_of(x, level);
                if level > 0 {
                    self.prefetch(self.next_of(x, level - 1));
                }
                if n == NIL || n == stop {
                    break;
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
        (if x == self.head { NIL } else { x }, n)
    }

    /// The first node whose key is `>= key`, or NIL.
    fn find_ge(&self, key: &[u8]) -> u32 {
        self.find_boundary(key, false).1
    }

    /// The first node whose key is `> key`, or NIL.
    fn find_gt(&self, key: &[u8]) -> u32 {
        self.find_boundary(key, true).1
    }

    /// The last node whose key is `< key`, or NIL.
    fn find_lt(&self, key: &[u8]) -> u32 {
        self.find_boundary(key, false).0
    }

    /// The last node whose key is `<= key`, or NIL.
    fn find_le(&self, key: &[u8]) -> u32 {
        self.find_boundary(key, true).0
    }

    /// The last node of the list, or NIL.
    fn find_last(&self) -> u32 {
        let mut x = self.head;
        let mut level = self.height.load(AtomicOrdering::Relaxed) as usize;
        while level > 0 {
            level -= 1;
            loop {
                let next = self.next_of(x, level);
                if next == NIL {
                    break;
                }
                x = next;
            }
        }
        if x == self.head { NIL } else { x }
    }
}

impl<C> fmt::Debug for SkipList<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len.load(AtomicOrdering::Relaxed))
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
/// positioned may or may not be visited.
pub struct Cursor<L> {
    list: L,
    node: u32,
}

impl<C, L> Cursor<L>
where
    C: Comparator,
    L: Deref<Target = SkipList<C>>,
{
    /// A cursor over `list`, not positioned.
    pub fn new(list: L) -> Self {
        Cursor { list, node: NIL }
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
        self.node = self.list.find_ge(key);
    }

    /// Moves to the first entry whose key is `> key`.
    pub fn seek_gt(&mut self, key: &[u8]) {
        self.node = self.list.find_gt(key);
    }

    /// Moves to the last entry whose key is `< key`.
    pub fn seek_lt(&mut self, key: &[u8]) {
        self.node = self.list.find_lt(key);
    }

    /// Moves to the last entry whose key is `<= key`.
    pub fn seek_le(&mut self, key: &[u8]) {
        self.node = self.list.find_le(key);
    }

    /// Moves to the first entry.
    pub fn first(&mut self) {
        self.node = self.list.next_of(self.list.head, 0);
    }

    /// Moves to the last entry.
    pub fn last(&mut self) {
        self.node = self.list.find_last();
    }

    /// Moves to the next entry (becomes invalid past the last one). No-op when invalid.
    pub fn next(&mut self) {
        if self.node != NIL {
            self.node = self.list.next_of(self.node, 0);
        }
    }

    /// Moves to the previous entry (becomes invalid before the first one). No-op when
    /// invalid.
    pub fn prev(&mut self) {
        if self.node != NIL {
            self.node = self.list.find_lt(self.list.key(self.node));
        }
    }
}

impl<L> fmt::Debug for Cursor<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cursor").field("node", &self.node).finish()
    }
}

/// Forward iterator over a [`SkipList`]'s entries, as `(key, value)` pairs.
pub struct Iter<'a, C> {
    list: &'a SkipList<C>,
    node: u32,
}

impl<'a, C: Comparator> Iterator for Iter<'a, C> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.node == NIL {
            return None;
        }
        let item = (self.list.key(self.node), self.list.value(self.node));
        self.node = self.list.next_of(self.node, 0);
        Some(item)
    }
}

impl<C> fmt::Debug for Iter<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("node", &self.node).finish()
    }
}
