//! [`Iter`]: the idiomatic iterator behind `Db::iter`, `Db::range` and `Db::prefix`.
//!
//! Owns the translation of Rust range bounds into the cursor's bounds (inclusive lower,
//! exclusive upper: an excluded lower bound `k` and an included upper bound `k` both become
//! `k ++ [0]`, the next key in bytewise order) and a double-ended adapter over two
//! [`DbIterator`] cursors, one per end, created lazily on the first call from that end.
//!
//! Invariants: both cursors read the same super version at the same sequence number, so
//! they see the same keys; the front never yields a key at or after the last key the back
//! yielded and vice versa, so mixing `next` and `next_back` meets in the middle without
//! duplicates, as `BTreeMap::range` does. After an error or after the ends meet, both ends
//! yield `None`.
//!
//! Thread-safety: `Iter` is `Send`; use it from one thread at a time.

use std::fmt;
use std::ops::{Bound, RangeBounds};

use mezz_format::KeyOrder;

use crate::error::{Error, Result};
use crate::iter::DbIterator;
use crate::options::ReadOptions;

/// One key-value pair yielded by [`Iter`].
pub type KvPair = (Vec<u8>, Vec<u8>);

/// Makes a cursor over the iterator's view (the same super version and sequence number on
/// every call).
pub(crate) type CursorFactory = Box<dyn Fn() -> Result<DbIterator> + Send + Sync>;

/// Cursor bounds (`None` = unbounded): inclusive lower and exclusive upper unless the flags
/// say otherwise, and for a prefix under a custom order the prefix the keys must start with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CursorBounds {
    pub lower: Option<Vec<u8>>,
    /// The lower bound's key is excluded.
    pub lower_excl: bool,
    pub upper: Option<Vec<u8>>,
    /// The upper bound's key is included.
    pub upper_incl: bool,
    /// Only keys starting with this (a prefix whose keys a custom order may scatter).
    pub prefix: Option<Vec<u8>>,
}

impl CursorBounds {
    /// Inclusive `lower`, exclusive `upper`.
    pub(crate) fn half_open(lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Self {
        Self {
            lower,
            upper,
            ..Self::default()
        }
    }
}

/// The smallest key after every key starting with `prefix` (`None` if there is none: the
/// prefix is empty or all `0xff`).
#[must_use]
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// `k ++ [0]`: the next key after `k` in bytewise order.
fn successor(k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 1);
    v.extend_from_slice(k);
    v.push(0);
    v
}

/// The cursor bounds of a Rust range over keys ordered by `order`. Under the bytewise
/// order an excluded start and an included end become `k ++ [0]` (the next key); under
/// another order, which has no such successor, the flags carry them.
///
/// # Errors
/// `InvalidArgument` where `BTreeMap::range` would panic: the start is after the end, or
/// they are equal and both excluded.
pub(crate) fn range_to_bounds<K, R>(range: &R, order: &KeyOrder) -> Result<CursorBounds>
where
    K: AsRef<[u8]>,
    R: RangeBounds<K>,
{
    let (start, end) = (range.start_bound(), range.end_bound());
    let key = |b: Bound<&K>| match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    if let (Some(s), Some(e)) = (key(start), key(end)) {
        let both_excluded = matches!((start, end), (Bound::Excluded(_), Bound::Excluded(_)));
        let o = order.compare_user(&s, &e);
        if o.is_gt() || (o.is_eq() && both_excluded) {
            return Err(Error::InvalidArgument(format!(
                "range start {s:02x?} is after its end {e:02x?}{}",
                if o.is_eq() { " (both excluded)" } else { "" }
            )));
        }
    }
    if !order.is_bytewise() {
        return Ok(CursorBounds {
            lower: key(start),
            lower_excl: matches!(start, Bound::Excluded(_)),
            upper: key(end),
            upper_incl: matches!(end, Bound::Included(_)),
            prefix: None,
        });
    }
    let lower = match start {
        Bound::Included(k) => Some(k.as_ref().to_vec()),
        Bound::Excluded(k) => Some(successor(k.as_ref())),
        Bound::Unbounded => None,
    };
    let upper = match end {
        Bound::Included(k) => Some(successor(k.as_ref())),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    Ok(CursorBounds::half_open(lower, upper))
}

/// The cursor bounds of the keys starting with `prefix`: a key range under the bytewise
/// order; under another order, where such keys need not be adjacent, a filter over every
/// key.
pub(crate) fn prefix_to_bounds(prefix: &[u8], order: &KeyOrder) -> CursorBounds {
    if order.is_bytewise() {
        CursorBounds::half_open(Some(prefix.to_vec()), prefix_successor(prefix))
    } else {
        CursorBounds {
            prefix: Some(prefix.to_vec()),
            ..CursorBounds::default()
        }
    }
}

/// Intersects bounds `b` with a read's bounds (the larger lower, the smaller upper; on
/// equal keys the stricter kind).
pub(crate) fn intersect(opts: &ReadOptions, b: CursorBounds, order: &KeyOrder) -> CursorBounds {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let (rl, rl_excl) = (opts.lower_bound.clone(), opts.lower_bound_exclusive);
    let (lower, lower_excl) = match (rl, b.lower) {
        (Some(x), Some(y)) => match order.compare_user(&x, &y) {
            Greater => (Some(x), rl_excl),
            Less => (Some(y), b.lower_excl),
            Equal => (Some(x), rl_excl || b.lower_excl),
        },
        (x, None) => (x, rl_excl),
        (None, y) => (y, b.lower_excl),
    };
    let (ru, ru_incl) = (opts.upper_bound.clone(), opts.upper_bound_inclusive);
    let (upper, upper_incl) = match (ru, b.upper) {
        (Some(x), Some(y)) => match order.compare_user(&x, &y) {
            Greater => (Some(y), b.upper_incl),
            Less => (Some(x), ru_incl),
            Equal => (Some(x), ru_incl && b.upper_incl),
        },
        (x, None) => (x, ru_incl),
        (None, y) => (y, b.upper_incl),
    };
    CursorBounds {
        lower,
        lower_excl,
        upper,
        upper_incl,
        prefix: b.prefix,
    }
}

/// An iterator over key-value pairs in key order, as of one consistent view of the
/// database (the latest state when it was made, or a snapshot). Implements
/// [`Iterator`] and [`DoubleEndedIterator`]; both ends may be mixed and meet in the middle.
///
/// Each item is a `Result`: an I/O error or corruption met while reading ends the
/// iteration after that item. It keeps the memtables and tables it reads alive until
/// dropped, so do not keep one open for long on a busy database.
pub struct Iter {
    factory: Option<CursorFactory>,
    /// An error to yield first (making the view failed).
    pending: Option<Error>,
    front: Option<DbIterator>,
    back: Option<DbIterator>,
    /// The last key the front yielded (`front_started` says whether there is one).
    front_last: Vec<u8>,
    front_started: bool,
    back_last: Vec<u8>,
    back_started: bool,
    done: bool,
    /// The order of keys (where the two ends meet).
    order: KeyOrder,
    /// Yield only keys starting with this (a prefix under a custom order).
    prefix: Option<Vec<u8>>,
}

impl fmt::Debug for Iter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("front", &self.front)
            .field("back", &self.back)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// Which end of an [`Iter`] a step moves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Front,
    Back,
}

impl Iter {
    /// An iterator whose cursors `factory` makes, over keys ordered by `order`, yielding
    /// only keys that start with `prefix` when given.
    pub(crate) fn new(factory: CursorFactory, order: KeyOrder, prefix: Option<Vec<u8>>) -> Iter {
        Iter {
            order,
            prefix,
            ..Self::with(Some(factory), None)
        }
    }

    /// An iterator that yields `err` once.
    pub(crate) fn failed(err: Error) -> Iter {
        Self::with(None, Some(err))
    }

    fn with(factory: Option<CursorFactory>, pending: Option<Error>) -> Iter {
        Iter {
            factory,
            pending,
            front: None,
            back: None,
            front_last: Vec::new(),
            front_started: false,
            back_last: Vec::new(),
            back_started: false,
            done: false,
            order: KeyOrder::bytewise(),
            prefix: None,
        }
    }

    /// The next item from `end` that passes the prefix filter.
    fn step(&mut self, end: End) -> Option<Result<KvPair>> {
        loop {
            let item = self.step_once(end);
            match (&item, &self.prefix) {
                (Some(Ok((k, _))), Some(p)) if !k.starts_with(p) => {}
                _ => return item,
            }
        }
    }

    fn step_once(&mut self, end: End) -> Option<Result<KvPair>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Some(Err(e));
        }
        let slot = match end {
            End::Front => &mut self.front,
            End::Back => &mut self.back,
        };
        let cursor = match slot {
            Some(c) => {
                match end {
                    End::Front => c.next(),
                    End::Back => c.prev(),
                }
                c
            }
            None => {
                let made = match &self.factory {
                    Some(f) => f(),
                    None => Err(Error::InvalidArgument("iterator has no source".into())),
                };
                let c = match made {
                    Ok(c) => slot.insert(c),
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                };
                match end {
                    End::Front => c.seek_to_first(),
                    End::Back => c.seek_to_last(),
                }
                c
            }
        };
        if !cursor.valid() {
            self.done = true;
            return cursor.status().err().map(Err);
        }
        let Some((key, value)) = cursor.current() else {
            // A close began since `valid()`.
            self.done = true;
            return Some(Err(cursor.status().err().unwrap_or(Error::Closed)));
        };
        let item = (key.to_vec(), value.to_vec());
        let crossed = match end {
            End::Front => {
                self.back_started && self.order.compare_user(&item.0, &self.back_last).is_ge()
            }
            End::Back => {
                self.front_started && self.order.compare_user(&item.0, &self.front_last).is_le()
            }
        };
        if crossed {
            self.done = true;
            return None;
        }
        let (last, started) = match end {
            End::Front => (&mut self.front_last, &mut self.front_started),
            End::Back => (&mut self.back_last, &mut self.back_started),
        };
        last.clear();
        last.extend_from_slice(&item.0);
        *started = true;
        Some(Ok(item))
    }
}

impl Iterator for Iter {
    type Item = Result<KvPair>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(End::Front)
    }
}

impl DoubleEndedIterator for Iter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(End::Back)
    }
}

impl std::iter::FusedIterator for Iter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_increments_the_last_byte_below_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn ranges_map_to_inclusive_exclusive_bounds() {
        let b = |v: &[u8]| Some(v.to_vec());
        let o = &KeyOrder::default();
        let ho = |l, u| Some(CursorBounds::half_open(l, u));
        assert_eq!(range_to_bounds(&("a".."c"), o).ok(), ho(b(b"a"), b(b"c")));
        assert_eq!(
            range_to_bounds(&("a"..="c"), o).ok(),
            ho(b(b"a"), b(b"c\0"))
        );
        let r: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Excluded(b"a"), Bound::Unbounded);
        assert_eq!(range_to_bounds::<&[u8], _>(&r, o).ok(), ho(b(b"a\0"), None));
        assert!(range_to_bounds(&("c".."a"), o).is_err());
        let r: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Excluded(b"a"), Bound::Excluded(b"a"));
        assert!(range_to_bounds::<&[u8], _>(&r, o).is_err());
        assert!(range_to_bounds(&("a".."a"), o).is_ok());
        let v = vec![1u8];
        assert!(range_to_bounds(&(v.as_slice()..), o).is_ok());
        assert!(range_to_bounds(&(..v.clone()), o).is_ok());
    }

    #[test]
    fn custom_orders_keep_bound_kinds_and_compare_by_the_order() {
        let rev = KeyOrder::custom(std::sync::Arc::new(mezz_format::order::ReverseBytewise));
        // In reverse order "c" comes before "a".
        let r = range_to_bounds(&("c"..="a"), &rev).unwrap();
        assert_eq!(r.lower.as_deref(), Some(&b"c"[..]));
        assert!(!r.lower_excl && r.upper_incl);
        assert!(range_to_bounds(&("a".."c"), &rev).is_err());
        let p = prefix_to_bounds(b"ab", &rev);
        assert_eq!(
            (p.lower, p.upper, p.prefix),
            (None, None, Some(b"ab".to_vec()))
        );
        // The read's exclusive upper "b" is stricter than the range's inclusive "a"? No:
        // in reverse order "b" < "a", so "b" (exclusive) wins.
        let ro = ReadOptions {
            upper_bound: Some(b"b".to_vec()),
            ..ReadOptions::default()
        };
        let i = intersect(&ro, r, &rev);
        assert_eq!((i.upper.as_deref(), i.upper_incl), (Some(&b"b"[..]), false));
    }
}
