//! Iterators: merging iterator over internal iterators, and the user-facing `DbIterator`.
//!
//! (API skeleton: bodies are being filled in.)

use crate::error::Result;

/// The user-facing iterator: user keys, newest visible version at its snapshot, deletions
/// hidden, bounds applied. Starts unpositioned.
#[derive(Debug)]
pub struct DbIterator {}

impl DbIterator {
    /// Whether positioned at an entry.
    #[must_use]
    pub fn valid(&self) -> bool {
        todo!()
    }
    /// First key (>= lower bound).
    pub fn seek_to_first(&mut self) {
        todo!()
    }
    /// Last key (< upper bound).
    pub fn seek_to_last(&mut self) {
        todo!()
    }
    /// First key >= `key`.
    pub fn seek(&mut self, key: &[u8]) {
        let _ = key;
        todo!()
    }
    /// Last key <= `key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        let _ = key;
        todo!()
    }
    /// Next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        todo!()
    }
    /// Previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        todo!()
    }
    /// Current user key. REQUIRES: `valid()`.
    #[must_use]
    pub fn key(&self) -> &[u8] {
        todo!()
    }
    /// Current value. REQUIRES: `valid()`.
    #[must_use]
    pub fn value(&self) -> &[u8] {
        todo!()
    }
    /// The first error met, if any.
    ///
    /// # Errors
    /// `Corruption` or `Io` from the tables read.
    pub fn status(&self) -> Result<()> {
        todo!()
    }
}
