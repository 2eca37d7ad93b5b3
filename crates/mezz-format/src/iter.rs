//! The one internal iterator trait, implemented by block, table, memtable, merging and level
//! iterators. Keys are *internal keys* (see [`crate::ikey`]).
//!
//! Contract (as LevelDB's `Iterator`): after any positioning call the iterator is either
//! valid or not; `key`/`value` may only be called when `valid()`; an error makes the iterator
//! invalid and is reported by `status()`.

use crate::Result;

/// A bidirectional cursor over sorted internal keys.
pub trait InternalIterator: Send {
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
    fn status(&self) -> Result<()>;
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
    fn status(&self) -> Result<()> {
        match &self.err {
            None => Ok(()),
            Some(m) => Err(crate::Error::corruption(0, m.clone())),
        }
    }
}
