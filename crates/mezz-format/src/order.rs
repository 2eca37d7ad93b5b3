//! The order of user keys: the default bytewise order or a caller's [`Comparator`], and the
//! internal-key order built on it ([`KeyOrder`]).
//!
//! Owns: the comparator trait users implement, and the one value ([`KeyOrder`]) that every
//! sorted structure of the engine is handed (blocks, tables, skip lists, NVM tables, matrix
//! rows, iterators, compaction picking, version ranges).
//!
//! Invariants: a `KeyOrder` is a total order on user keys; internal keys order by user key
//! under it, then by trailer descending (newest first), exactly as
//! [`crate::ikey::compare_internal_keys`] does for the bytewise order. The bytewise order is
//! `KeyOrder::default()` and costs no indirect call: every method matches on the variant
//! and, for bytewise, compares bytes inline.
//!
//! Byte-level shortcuts (shortened index separators, key-prefix fingerprints, cross-row
//! prefix hints, key filters) are valid for the bytewise order only or, for filters, for
//! comparators that never equate keys with different bytes; code asks
//! [`KeyOrder::is_bytewise`] / [`KeyOrder::filters_allowed`] before using one.
//!
//! Thread-safety: `KeyOrder` is `Clone + Send + Sync` (an `Arc` to the comparator); a
//! [`Comparator`] must be `Send + Sync`.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::ikey::{trailer, user_key};

/// The name of the bytewise order, as LevelDB names its default comparator (a database
/// created by LevelDB with the default order records this name too).
pub const BYTEWISE_NAME: &str = "leveldb.BytewiseComparator";

/// A total order on user keys, chosen by the application when a database is created.
///
/// The name is recorded in the database and checked at every open: opening with a
/// comparator of another name fails ("comparator name mismatch"), as in LevelDB. Change
/// the name whenever the order changes.
pub trait Comparator: Send + Sync {
    /// The comparator's name, recorded in the database.
    fn name(&self) -> &str;

    /// Compares two user keys. Must be a total order, and the same for the life of the
    /// database.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// Whether two keys whose bytes differ may compare equal (for example under a
    /// case-insensitive order). When it may (the default, the safe answer), the engine
    /// keeps no hash-based key filters (bloom filters of tables and memtables), since
    /// they hash bytes and would miss an equal key spelled differently. Return `false`
    /// when equality means equal bytes, to keep them.
    fn can_keys_with_different_bytes_be_equal(&self) -> bool {
        true
    }
}

/// The order of user keys and internal keys in one database: bytewise, or a caller's
/// [`Comparator`].
#[derive(Clone, Default)]
pub struct KeyOrder {
    custom: Option<Arc<dyn Comparator>>,
}

impl fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyOrder({})", self.name())
    }
}

impl PartialEq for KeyOrder {
    /// Two orders are equal when they have the same name (the identity the database
    /// records).
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for KeyOrder {}

impl KeyOrder {
    /// The bytewise order (the default).
    #[must_use]
    pub const fn bytewise() -> Self {
        Self { custom: None }
    }

    /// The order of `cmp`.
    #[must_use]
    pub fn custom(cmp: Arc<dyn Comparator>) -> Self {
        Self { custom: Some(cmp) }
    }

    /// Whether this is the bytewise order (byte-level shortcuts are valid).
    #[inline]
    #[must_use]
    pub fn is_bytewise(&self) -> bool {
        self.custom.is_none()
    }

    /// Whether hash-based key filters may be used: keys equal under this order have equal
    /// bytes.
    #[must_use]
    pub fn filters_allowed(&self) -> bool {
        self.custom
            .as_ref()
            .is_none_or(|c| !c.can_keys_with_different_bytes_be_equal())
    }

    /// The order's name ([`BYTEWISE_NAME`] for bytewise).
    #[must_use]
    pub fn name(&self) -> &str {
        self.custom.as_ref().map_or(BYTEWISE_NAME, |c| c.name())
    }

    /// The caller's comparator, if the order is not bytewise.
    #[must_use]
    pub fn comparator(&self) -> Option<&Arc<dyn Comparator>> {
        self.custom.as_ref()
    }

    /// Compares two user keys.
    #[inline]
    #[must_use]
    pub fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        match &self.custom {
            None => a.cmp(b),
            Some(c) => c.compare(a, b),
        }
    }

    /// Whether two user keys are the same key under this order.
    #[inline]
    #[must_use]
    pub fn same_user(&self, a: &[u8], b: &[u8]) -> bool {
        match &self.custom {
            None => a == b,
            Some(c) => c.compare(a, b) == Ordering::Equal,
        }
    }

    /// Compares two internal keys: user key under this order, then trailer descending.
    #[inline]
    #[must_use]
    pub fn compare_internal(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.compare_user(user_key(a), user_key(b)) {
            Ordering::Equal => trailer(b).cmp(&trailer(a)),
            o => o,
        }
    }

    /// [`KeyOrder::compare_internal`], comparing bytewise user keys a word at a time
    /// (see [`crate::ikey::compare_internal_keys_wordwise`]: faster for memtable inserts).
    #[inline]
    #[must_use]
    pub fn compare_internal_wordwise(&self, a: &[u8], b: &[u8]) -> Ordering {
        match &self.custom {
            None => crate::ikey::compare_internal_keys_wordwise(a, b),
            Some(_) => self.compare_internal(a, b),
        }
    }

    /// The smaller of two user keys under this order.
    #[must_use]
    pub fn min_user<'a>(&self, a: &'a [u8], b: &'a [u8]) -> &'a [u8] {
        if self.compare_user(b, a) == Ordering::Less {
            b
        } else {
            a
        }
    }

    /// The larger of two user keys under this order.
    #[must_use]
    pub fn max_user<'a>(&self, a: &'a [u8], b: &'a [u8]) -> &'a [u8] {
        if self.compare_user(b, a) == Ordering::Greater {
            b
        } else {
            a
        }
    }
}

/// The reverse of the bytewise order (a test and example comparator; LevelDB's tests use
/// the same one).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReverseBytewise;

impl Comparator for ReverseBytewise {
    fn name(&self) -> &str {
        "mezzanine.ReverseBytewiseComparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
    fn can_keys_with_different_bytes_be_equal(&self) -> bool {
        false
    }
}

/// ASCII case-insensitive order: `"Key"` and `"KEY"` are the same key (a test and example
/// comparator: equal keys with different bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct CaseInsensitive;

impl Comparator for CaseInsensitive {
    fn name(&self) -> &str {
        "mezzanine.CaseInsensitiveComparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.iter()
            .map(u8::to_ascii_lowercase)
            .cmp(b.iter().map(u8::to_ascii_lowercase))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ikey::{ValueKind, make_internal_key};

    #[test]
    fn bytewise_matches_compare_internal_keys() {
        let o = KeyOrder::default();
        let keys = [
            make_internal_key(b"a", 1, ValueKind::Value),
            make_internal_key(b"a", 2, ValueKind::Deletion),
            make_internal_key(b"ab", 0, ValueKind::Value),
            make_internal_key(b"b", 9, ValueKind::Value),
        ];
        for a in &keys {
            for b in &keys {
                assert_eq!(
                    o.compare_internal(a, b),
                    crate::ikey::compare_internal_keys(a, b)
                );
                assert_eq!(
                    o.compare_internal_wordwise(a, b),
                    crate::ikey::compare_internal_keys(a, b)
                );
            }
        }
        assert!(o.is_bytewise() && o.filters_allowed());
        assert_eq!(o.name(), BYTEWISE_NAME);
    }

    #[test]
    fn reverse_orders_user_keys_backwards_and_seqs_newest_first() {
        let o = KeyOrder::custom(Arc::new(ReverseBytewise));
        let a1 = make_internal_key(b"a", 1, ValueKind::Value);
        let a2 = make_internal_key(b"a", 2, ValueKind::Value);
        let b1 = make_internal_key(b"b", 1, ValueKind::Value);
        assert_eq!(o.compare_internal(&b1, &a1), Ordering::Less);
        assert_eq!(o.compare_internal(&a2, &a1), Ordering::Less);
        assert_eq!(o.compare_internal_wordwise(&b1, &a2), Ordering::Less);
        assert!(!o.is_bytewise() && o.filters_allowed());
        assert_eq!(o.min_user(b"a", b"b"), b"b");
    }

    #[test]
    fn case_insensitive_equates_spellings_and_forbids_filters() {
        let o = KeyOrder::custom(Arc::new(CaseInsensitive));
        assert!(o.same_user(b"Key", b"kEY"));
        assert_eq!(o.compare_user(b"a", b"B"), Ordering::Less);
        assert!(!o.filters_allowed());
        assert_ne!(o, KeyOrder::default());
    }
}
