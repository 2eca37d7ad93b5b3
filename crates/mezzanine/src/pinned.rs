//! [`PinnedValue`]: a value read without copying it out of the block that holds it.
//!
//! Owns the value type `Db::get_pinned` returns and the point-lookup result tables give it
//! ([`PinnedLookup`]). A value found in an SST keeps its data block (an `Arc` shared with
//! the block cache) alive and derefs into it; a value found anywhere else (a memtable, a
//! table type without a pinned lookup) is an owned copy.
//!
//! Invariant: for the `Block` form, `range` lies inside `block.contents()` (checked when
//! the value is made, so deref never panics).
//!
//! Thread-safety: `PinnedValue` is `Send + Sync`; the block it pins is immutable.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use mezz_format::block::Block;

use crate::base::meta::LookupResult;

/// A value that borrows the storage it was read from where it can: derefs to `[u8]`.
///
/// Holding it keeps one data block in memory (even if the block cache evicts it), so do
/// not hoard many of them; call [`PinnedValue::into_vec`] (or `to_vec()`) to keep a copy.
#[derive(Clone)]
pub struct PinnedValue {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Owned(Vec<u8>),
    Block {
        block: Arc<Block>,
        range: Range<usize>,
    },
}

impl PinnedValue {
    /// A value owning its bytes.
    #[must_use]
    pub fn owned(v: Vec<u8>) -> PinnedValue {
        PinnedValue {
            repr: Repr::Owned(v),
        }
    }

    /// A value at `range` inside `block`'s contents; `None` if the range is out of bounds.
    #[must_use]
    pub fn in_block(block: Arc<Block>, range: Range<usize>) -> Option<PinnedValue> {
        block.contents().get(range.clone())?;
        Some(PinnedValue {
            repr: Repr::Block { block, range },
        })
    }

    /// Whether the value points into a (cached) data block rather than owning a copy.
    #[must_use]
    pub fn is_pinned(&self) -> bool {
        matches!(self.repr, Repr::Block { .. })
    }

    /// The value as an owned vector (copies only if pinned).
    #[must_use]
    pub fn into_vec(self) -> Vec<u8> {
        match self.repr {
            Repr::Owned(v) => v,
            Repr::Block { .. } => self.deref().to_vec(),
        }
    }
}

impl Deref for PinnedValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.repr {
            Repr::Owned(v) => v,
            Repr::Block { block, range } => block.contents().get(range.clone()).unwrap_or(&[]),
        }
    }
}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for PinnedValue {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for PinnedValue {}

impl PartialEq<[u8]> for PinnedValue {
    fn eq(&self, other: &[u8]) -> bool {
        &**self == other
    }
}

impl PartialEq<&[u8]> for PinnedValue {
    fn eq(&self, other: &&[u8]) -> bool {
        &**self == *other
    }
}

impl fmt::Debug for PinnedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedValue")
            .field("pinned", &self.is_pinned())
            .field("value", &&**self)
            .finish()
    }
}

/// Result of a pinned point lookup in a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinnedLookup {
    /// The newest visible version is a value.
    Value(PinnedValue),
    /// The newest visible version is a deletion.
    Deleted,
}

impl From<LookupResult> for PinnedLookup {
    fn from(r: LookupResult) -> Self {
        match r {
            LookupResult::Value(v) => PinnedLookup::Value(PinnedValue::owned(v)),
            LookupResult::Deleted => PinnedLookup::Deleted,
        }
    }
}
