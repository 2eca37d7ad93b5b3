//! The reference model: an ordered map with snapshots, and the read semantics every
//! Mezzanine iterator must match.
//!
//! Owns: [`Model`] (the latest state plus frozen snapshots) and [`View`] (reads over one
//! state: `get`, bounded scans, iterator walks).
//!
//! Invariants: a snapshot is an immutable `Arc` of the map as it was when taken; writes
//! after it never change it. Bounds follow `ReadOptions`: lower inclusive, upper exclusive,
//! in every direction; `seek(k)` finds the first key >= `k` inside the bounds and
//! `seek_for_prev(k)` the last key <= `k` inside the bounds.
//!
//! Thread-safety: plain data; not shared between threads by the kit.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::op::{BatchOp, SeekStart, Step};

/// An ordered key-value state.
pub type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// A key-value pair as returned by scans.
pub type Entry = (Vec<u8>, Vec<u8>);

/// The model of a database: the latest state, copied on snapshot.
#[derive(Debug, Clone, Default)]
pub struct Model {
    map: Map,
}

impl Model {
    /// An empty model.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.map.insert(key.to_vec(), value.to_vec());
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.map.remove(key);
    }

    /// Applies a batch in order.
    pub fn apply_batch(&mut self, batch: &[BatchOp]) {
        for op in batch {
            match op {
                BatchOp::Put { key, value } => self.put(key, value),
                BatchOp::Delete { key } => self.delete(key),
            }
        }
    }

    /// A frozen copy of the current state.
    #[must_use]
    pub fn snapshot(&self) -> Arc<Map> {
        Arc::new(self.map.clone())
    }

    /// Reads over the latest state.
    #[must_use]
    pub fn view(&self) -> View<'_> {
        View(&self.map)
    }

    /// The latest state.
    #[must_use]
    pub fn map(&self) -> &Map {
        &self.map
    }
}

/// Reads over one state (the latest one or a snapshot).
#[derive(Debug, Clone, Copy)]
pub struct View<'a>(pub &'a Map);

/// A pair of `BTreeMap` range bounds over byte-string keys.
type Range<'b> = (Bound<&'b [u8]>, Bound<&'b [u8]>);

/// The bounds of one iterator, as `BTreeMap` range bounds; `None` for an empty range.
fn range_bounds<'b>(lower: Option<&'b [u8]>, upper: Option<&'b [u8]>) -> Option<Range<'b>> {
    if let (Some(l), Some(u)) = (lower, upper)
        && l >= u
    {
        return None;
    }
    Some((
        lower.map_or(Bound::Unbounded, Bound::Included),
        upper.map_or(Bound::Unbounded, Bound::Excluded),
    ))
}

impl<'a> View<'a> {
    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.0.get(key).cloned()
    }

    /// Up to `limit` entries inside `[lower, upper)`, ascending, or descending if `reverse`.
    #[must_use]
    pub fn scan(
        &self,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        reverse: bool,
        limit: usize,
    ) -> Vec<Entry> {
        let Some(r) = range_bounds(lower, upper) else {
            return Vec::new();
        };
        let it = self.0.range::<[u8], _>(r);
        let clone = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
        if reverse {
            it.rev().take(limit).map(clone).collect()
        } else {
            it.take(limit).map(clone).collect()
        }
    }

    fn entry(&self, k: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        self.0
            .get_key_value(k)
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
    }

    /// First key >= `target` inside the bounds.
    fn seek(&self, lower: Option<&[u8]>, upper: Option<&[u8]>, target: &[u8]) -> Option<&'a [u8]> {
        let from = match lower {
            Some(l) if l > target => l,
            _ => target,
        };
        let k = self
            .0
            .range::<[u8], _>((Bound::Included(from), Bound::Unbounded))
            .next()?
            .0;
        match upper {
            Some(u) if k.as_slice() >= u => None,
            _ => Some(k.as_slice()),
        }
    }

    /// Last key <= `target` inside the bounds.
    fn seek_for_prev(
        &self,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        target: &[u8],
    ) -> Option<&'a [u8]> {
        let upper_b = match upper {
            Some(u) if u <= target => Bound::Excluded(u),
            _ => Bound::Included(target),
        };
        let k = self
            .0
            .range::<[u8], _>((Bound::Unbounded, upper_b))
            .next_back()?
            .0;
        match lower {
            Some(l) if k.as_slice() < l => None,
            _ => Some(k.as_slice()),
        }
    }

    /// First key > `cur` inside the bounds.
    fn next_after(&self, upper: Option<&[u8]>, cur: &[u8]) -> Option<&'a [u8]> {
        let k = self
            .0
            .range::<[u8], _>((Bound::Excluded(cur), Bound::Unbounded))
            .next()?
            .0;
        match upper {
            Some(u) if k.as_slice() >= u => None,
            _ => Some(k.as_slice()),
        }
    }

    /// Last key < `cur` inside the bounds.
    fn prev_before(&self, lower: Option<&[u8]>, cur: &[u8]) -> Option<&'a [u8]> {
        let k = self
            .0
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(cur)))
            .next_back()?
            .0;
        match lower {
            Some(l) if k.as_slice() < l => None,
            _ => Some(k.as_slice()),
        }
    }

    /// The positions an iterator with these bounds takes: after `start`, then after each
    /// step, stopping at the first invalid position (which is recorded as `None`).
    #[must_use]
    pub fn walk(
        &self,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        start: &SeekStart,
        steps: &[Step],
    ) -> Vec<Option<Entry>> {
        let pos = self.position(lower, upper, start);
        let mut out = vec![self.record(pos)];
        out.extend(self.steps_from(lower, upper, pos, steps));
        out
    }

    /// The entry at key `pos`, if any.
    #[must_use]
    pub fn record(&self, pos: Option<&[u8]>) -> Option<Entry> {
        pos.and_then(|k| self.entry(k))
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
    }

    /// The positions after each of `steps` taken from key `pos` (nothing when `pos` is
    /// `None`), stopping at the first invalid position (recorded as `None`).
    #[must_use]
    pub fn steps_from(
        &self,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        mut pos: Option<&'a [u8]>,
        steps: &[Step],
    ) -> Vec<Option<Entry>> {
        let mut out = Vec::with_capacity(steps.len());
        for step in steps {
            let Some(cur) = pos else { break };
            pos = match step {
                Step::Next => self.next_after(upper, cur),
                Step::Prev => self.prev_before(lower, cur),
            };
            out.push(self.record(pos));
        }
        out
    }

    /// The key an iterator with these bounds is at after `start`.
    #[must_use]
    pub fn position(
        &self,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        start: &SeekStart,
    ) -> Option<&'a [u8]> {
        if range_bounds(lower, upper).is_none() {
            None
        } else {
            match start {
                SeekStart::First => self.seek(lower, upper, b""),
                SeekStart::Last => match upper {
                    Some(u) => self.prev_before(lower, u),
                    None => self
                        .0
                        .keys()
                        .next_back()
                        .map(Vec::as_slice)
                        .filter(|k| lower.is_none_or(|l| *k >= l)),
                },
                SeekStart::Seek(t) => self.seek(lower, upper, t),
                SeekStart::SeekForPrev(t) => self.seek_for_prev(lower, upper, t),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(keys: &[&str]) -> Model {
        let mut m = Model::new();
        for k in keys {
            m.put(k.as_bytes(), format!("v{k}").as_bytes());
        }
        m
    }

    fn keys(w: &[Option<Entry>]) -> Vec<Option<String>> {
        w.iter()
            .map(|p| {
                p.as_ref()
                    .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            })
            .collect()
    }

    #[test]
    fn snapshot_is_frozen() {
        let mut m = model(&["a", "b"]);
        let s = m.snapshot();
        m.delete(b"a");
        m.put(b"c", b"x");
        assert_eq!(View(&s).get(b"a"), Some(b"va".to_vec()));
        assert_eq!(View(&s).get(b"c"), None);
        assert_eq!(m.view().get(b"a"), None);
    }

    #[test]
    fn scan_honours_bounds_and_direction() {
        let m = model(&["", "a", "b", "c", "d"]);
        let v = m.view();
        let k = |e: Vec<Entry>| e.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            k(v.scan(Some(b"a"), Some(b"d"), false, 10)),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert_eq!(
            k(v.scan(Some(b"a"), Some(b"d"), true, 2)),
            vec![b"c".to_vec(), b"b".to_vec()]
        );
        assert_eq!(k(v.scan(None, Some(b"a"), false, 10)), vec![Vec::new()]);
        assert!(v.scan(Some(b"c"), Some(b"c"), false, 10).is_empty());
        assert!(v.scan(Some(b"d"), Some(b"a"), true, 10).is_empty());
    }

    #[test]
    fn walk_matches_iterator_semantics() {
        let m = model(&["a", "b", "c", "d"]);
        let v = m.view();
        let w = v.walk(
            Some(b"b"),
            Some(b"d"),
            &SeekStart::Seek(b"a".to_vec()),
            &[Step::Next, Step::Prev, Step::Prev, Step::Next],
        );
        assert_eq!(
            keys(&w),
            vec![Some("b".into()), Some("c".into()), Some("b".into()), None]
        );
        let w = v.walk(
            None,
            Some(b"c"),
            &SeekStart::SeekForPrev(b"zz".to_vec()),
            &[Step::Prev],
        );
        assert_eq!(keys(&w), vec![Some("b".into()), Some("a".into())]);
        let w = v.walk(
            Some(b"bb"),
            None,
            &SeekStart::Last,
            &[Step::Prev, Step::Prev],
        );
        assert_eq!(keys(&w), vec![Some("d".into()), Some("c".into()), None]);
        let w = v.walk(Some(b"e"), None, &SeekStart::Last, &[Step::Next]);
        assert_eq!(keys(&w), vec![None]);
        let w = v.walk(
            Some(b"b"),
            None,
            &SeekStart::SeekForPrev(b"a".to_vec()),
            &[],
        );
        assert_eq!(keys(&w), vec![None]);
        let w = v.walk(None, None, &SeekStart::Seek(b"bz".to_vec()), &[]);
        assert_eq!(keys(&w), vec![Some("c".into())]);
    }
}
