//! The one internal iterator trait, implemented by block, table, memtable, merging and level
//! iterators. Keys are *internal keys* (see [`crate::ikey`]).
//!
//! Contract (as LevelDB's `Iterator`): after any positioning call the iterator is either
//! valid or not; `key`/`value` may only be called when `valid()`; an error makes the iterator
//! invalid and is reported by `status()`.
//!
//! The error `status()` reports is the trait's parameter `E`, by default this crate's
//! [`Error`]: every iterator of this crate (and of `mezz-pmem`) reports format errors. An
//! iterator of a layer above reports that layer's error: the engine's iterators (memtables,
//! merging, levels) are `InternalIterator<mezzanine::Error>`, so an error only the engine has
//! (the database closed under an iterator) passes through them unchanged; the engine wraps
//! an iterator of this crate in an adapter that converts its errors.

use crate::Error;

/// Where an entry lives in byte-addressable memory: the KeySet block holding it (offset of
/// the block contents in the memory region, contents length) and its slot, plus the
/// checksum of the entry (`crc32c(key ++ value)`). Persistent tables in NVM are lists of
/// such references, so a compaction between them can point at entries instead of copying
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryRef {
    /// Byte offset of the block contents in the region.
    pub block: u64,
    /// Length of the block contents (the 8-byte block trailer follows the padding).
    pub block_len: u32,
    /// Index of the entry in the block.
    pub slot: u32,
    /// `crc32c(key ++ value)` of the entry.
    pub crc: u32,
}

/// A bidirectional cursor over sorted internal keys, reporting errors of type `E`.
pub trait InternalIterator<E = Error>: Send {
    /// Whether the iterator is positioned at an entry.
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry whose internal key is >= `target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last entry whose internal key is <= `target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry. REQUIRES: `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. REQUIRES: `valid()`.
    fn prev(&mut self);
    /// The current internal key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    ///
    /// # Errors
    /// The error that made the iterator invalid.
    fn status(&self) -> Result<(), E>;
    /// Where the current entry lives in byte-addressable memory, for iterators over
    /// persistent tables (`None` for every other source, the default). REQUIRES: `valid()`.
    fn entry_ref(&self) -> Option<EntryRef> {
        None
    }
}

/// An iterator over nothing (optionally carrying an error).
#[derive(Debug, Default)]
pub struct EmptyIterator {
    err: Option<String>,
}

impl EmptyIterator {
    /// An empty iterator whose `status` is the given error (as a corruption message).
    #[must_use]
    pub fn with_error(msg: impl Into<String>) -> Self {
        Self {
            err: Some(msg.into()),
        }
    }
}

impl InternalIterator for EmptyIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _target: &[u8]) {}
    fn seek_for_prev(&mut self, _target: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<(), Error> {
        match &self.err {
            None => Ok(()),
            Some(m) => Err(Error::corruption(0, m.clone())),
        }
    }
}
