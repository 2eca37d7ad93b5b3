//! The column planner of the matrix container (MatrixKV's column compaction): which key
//! range of the compactor rows to merge into L1 next.
//!
//! Owns: [`plan_column`], a pure function, and its inputs and output ([`RowKeySizes`],
//! [`ColumnCursor`], [`ColumnBounds`], [`ColumnPlan`]). It reads no table and knows nothing
//! of NVM: each compactor row is described by the sizes of its live data per user key (per
//! entry, or coarser, e.g. per data block keyed by the block's largest user key:
//! `RowTable::block_summary`), and L1 by its tables' metadata.
//!
//! The plan, as in the paper: L1's table boundaries cut the key space into units — one L1
//! table (with the gap before it), or, where no L1 table lies, one user key of row data. The
//! column starts at the first row key after the cursor and grows unit by unit until its data
//! (the row bytes inside it plus the bytes of the L1 tables it overlaps) reaches the lower
//! bound; a unit that would carry it past the upper bound is left out if the column already
//! holds row data. When no row data lies after the cursor the planner wraps to the start of
//! the key space.
//!
//! Invariants of every plan:
//! 1. No L1 table is split: every L1 table overlapping `[start, end]` is an input, whole, and
//!    none reaches past `end` (tables sharing a user key at their boundary go together).
//! 2. No user key is split: the column holds every version of each user key in it (row items
//!    with equal keys, in one row or in several, fall in the same unit).
//! 3. The column holds row data (`row_bytes > 0`), and the next cursor is after `end`, or the
//!    start of the key space when no row data lies beyond `end`.
//!
//! With the matrix container, rows drain as prefixes (`Container::consume_column(start,
//! end)` removes every entry up to `end` and refuses a column that would skip live entries
//! below `start`). A sweep from the start of the key space keeps that true: pass back each
//! plan's `next_cursor`, and let a fresh compactor start from [`ColumnCursor::Start`] (a
//! sweep ends with `next_cursor == Start` once the last column took the rows' remaining
//! data).
//!
//! Thread-safety: pure functions over immutable inputs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use mezz_format::KeyOrder;

use crate::table::TableMeta;

/// Where the next column starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum ColumnCursor {
    /// At the start of the key space.
    #[default]
    Start,
    /// Strictly after this user key.
    After(Vec<u8>),
}

/// The live data of one compactor row: bytes per user key, in user-key order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowKeySizes {
    keys: Vec<Vec<u8>>,
    /// `cum[i]` = bytes of items `0..i` (one more element than `keys`).
    cum: Vec<u64>,
    /// The order of `keys`.
    order: KeyOrder,
}

impl RowKeySizes {
    /// Builds the description from `(user key, bytes)` items in any order, sorted by
    /// `order`; items with equal keys are merged (their bytes added).
    #[must_use]
    pub fn new(items: impl IntoIterator<Item = (Vec<u8>, u64)>, order: &KeyOrder) -> RowKeySizes {
        let mut items: Vec<(Vec<u8>, u64)> = items.into_iter().collect();
        items.sort_by(|a, b| order.compare_user(&a.0, &b.0));
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(items.len());
        let mut cum = Vec::with_capacity(items.len() + 1);
        cum.push(0u64);
        for (k, b) in items {
            let total = cum.last().copied().unwrap_or(0).saturating_add(b);
            if keys.last().is_some_and(|l| order.same_user(l, &k)) {
                if let Some(last) = cum.last_mut() {
                    *last = total;
                }
            } else {
                keys.push(k);
                cum.push(total);
            }
        }
        RowKeySizes {
            keys,
            cum,
            order: order.clone(),
        }
    }

    /// Total bytes.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.cum.last().copied().unwrap_or(0)
    }

    /// Number of distinct user keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the row has no data.
    #[must_use]
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Index of the first key after `cursor`.
    fn first_after(&self, cursor: &ColumnCursor) -> usize {
        match cursor {
            ColumnCursor::Start => 0,
            ColumnCursor::After(c) => self
                .keys
                .partition_point(|k| self.order.compare_user(k, c).is_le()),
        }
    }

    /// Index of the first key above `k`.
    fn first_above(&self, k: &[u8]) -> usize {
        self.keys
            .partition_point(|x| self.order.compare_user(x, k).is_le())
    }

    /// Bytes of items `[from, to)`.
    fn bytes(&self, from: usize, to: usize) -> u64 {
        let at = |i: usize| self.cum.get(i).copied().unwrap_or(self.total_bytes());
        at(to).saturating_sub(at(from))
    }

    /// Bytes of the items after `cursor` with a key <= `end`.
    #[must_use]
    #[cfg(test)]
    pub fn bytes_between(&self, cursor: &ColumnCursor, end: &[u8]) -> u64 {
        let from = self.first_after(cursor);
        self.bytes(from, self.first_above(end).max(from))
    }
}

/// How much data one column should hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnBounds {
    /// Grow the column until its data reaches this many bytes.
    pub lower: u64,
    /// Do not grow it past this many bytes (unless its first unit alone is larger).
    pub upper: u64,
}

impl ColumnBounds {
    /// The paper's bounds for amplification factor `af` and SST size `sst_size`:
    /// `af · sst_size / 2` to `af · sst_size` (320 to 640 MiB for 10 and 64 MiB).
    #[must_use]
    pub fn from_sst_size(af: u64, sst_size: u64) -> ColumnBounds {
        ColumnBounds::up_to(af.saturating_mul(sst_size))
    }

    /// Columns of `upper / 2` to `upper` bytes.
    #[must_use]
    pub fn up_to(upper: u64) -> ColumnBounds {
        ColumnBounds {
            lower: upper / 2,
            upper,
        }
    }
}

/// One column to compact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnPlan {
    /// Smallest user key of row data in the column (inclusive).
    pub start: Vec<u8>,
    /// Largest user key in the column (inclusive): the rows give up every entry whose user
    /// key is in `[start, end]`.
    pub end: Vec<u8>,
    /// The L1 tables overlapping `[start, end]`, whole, in key order.
    pub l1_inputs: Vec<Arc<TableMeta>>,
    /// Row bytes in `[start, end]`.
    pub row_bytes: u64,
    /// Bytes of the L1 inputs.
    pub l1_bytes: u64,
    /// Where the next column starts.
    pub next_cursor: ColumnCursor,
    /// Whether no row data lay after the cursor, so the column starts over from the start of
    /// the key space.
    pub wrapped: bool,
    /// The data stayed below the lower bound: the rows ran out of data, or the next unit
    /// would have passed the upper bound.
    pub below_lower: bool,
    /// The data exceeds the upper bound: the column's first unit (an L1 table with its row
    /// data) is already larger.
    pub above_upper: bool,
}

impl ColumnPlan {
    /// Row bytes plus L1 bytes.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.row_bytes.saturating_add(self.l1_bytes)
    }
}

/// Where the column stood before its last unit was added (to take that unit back).
/// A row's next key in the planner's heap, ordered by the key under the database's order,
/// then by row and index (as the tuple `(key, row, index)` orders under bytewise keys).
struct HeapItem<'a> {
    key: &'a [u8],
    row: usize,
    index: usize,
    order: &'a KeyOrder,
}

impl<'a> HeapItem<'a> {
    fn new(key: &'a [u8], row: usize, index: usize, order: &'a KeyOrder) -> Self {
        Self {
            key,
            row,
            index,
            order,
        }
    }
}

impl PartialEq for HeapItem<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for HeapItem<'_> {}

impl PartialOrd for HeapItem<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HeapItem<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order
            .compare_user(self.key, other.key)
            .then(self.row.cmp(&other.row))
            .then(self.index.cmp(&other.index))
    }
}

#[derive(Debug, Clone)]
struct Taken {
    end: Vec<u8>,
    row_bytes: u64,
    l1_bytes: u64,
    inputs: usize,
}

/// Plans the next column (see the module documentation): `rows` are the compactor rows' live
/// data, `l1` the L1 tables (any order; a version's L1 is sorted and non-overlapping),
/// `cursor` where the previous column ended. `None` when the rows hold no data.
///
/// REQUIRES: `bounds.lower <= bounds.upper` (a smaller upper bound is taken as the lower).
#[must_use]
pub fn plan_column(
    rows: &[RowKeySizes],
    l1: &[Arc<TableMeta>],
    cursor: &ColumnCursor,
    bounds: ColumnBounds,
    order: &KeyOrder,
) -> Option<ColumnPlan> {
    let lt = |a: &[u8], b: &[u8]| order.compare_user(a, b).is_lt();
    let upper = bounds.upper.max(bounds.lower);
    let after_cursor = rows.iter().any(|r| r.first_after(cursor) < r.len());
    let wrapped = !after_cursor && *cursor != ColumnCursor::Start;
    let from = if after_cursor {
        cursor.clone()
    } else {
        ColumnCursor::Start
    };

    // The rows' next keys, smallest first: (key, row, index of that key in the row).
    let mut heap: BinaryHeap<Reverse<HeapItem<'_>>> = rows
        .iter()
        .enumerate()
        .filter_map(|(r, row)| {
            let i = row.first_after(&from);
            row.keys
                .get(i)
                .map(|k| Reverse(HeapItem::new(k, r, i, order)))
        })
        .collect();
    let start = heap.peek()?.0.key.to_vec();

    let mut tables: Vec<&Arc<TableMeta>> = l1.iter().collect();
    tables.sort_by(|a, b| order.compare_internal(&a.smallest, &b.smallest));
    // The first table that can overlap the column: the first whose largest user key is at
    // or after `start`.
    let mut ti = tables.partition_point(|t| lt(t.largest_user_key(), &start));

    let mut inputs: Vec<Arc<TableMeta>> = Vec::new();
    let (mut row_bytes, mut l1_bytes) = (0u64, 0u64);
    let mut end: Option<Vec<u8>> = None;
    let mut before: Option<Taken> = None;
    let (mut below_lower, mut above_upper) = (true, false);

    while let Some(next_key) = heap.peek().map(|h| h.0.key) {
        // The next unit: the next L1 table if it starts at or before the next row key (with
        // every table chained to it by a shared boundary user key), else that row key.
        let mut unit_end = next_key.to_vec();
        let mut unit_tables = Vec::new();
        if let Some(t) = tables.get(ti)
            && !lt(next_key, t.smallest_user_key())
        {
            unit_end = t.largest_user_key().to_vec();
            unit_tables.push(Arc::clone(t));
            ti += 1;
            while let Some(t) = tables.get(ti)
                && !lt(&unit_end, t.smallest_user_key())
            {
                if lt(&unit_end, t.largest_user_key()) {
                    unit_end = t.largest_user_key().to_vec();
                }
                unit_tables.push(Arc::clone(t));
                ti += 1;
            }
        }
        // Take every row item up to the unit's end.
        let mut unit_rows = 0u64;
        while let Some((k, r, i)) = heap.peek().map(|h| (h.0.key, h.0.row, h.0.index)) {
            if lt(&unit_end, k) {
                break;
            }
            heap.pop();
            let Some(row) = rows.get(r) else { continue };
            let next = row.first_above(&unit_end);
            unit_rows = unit_rows.saturating_add(row.bytes(i, next));
            if let Some(k) = row.keys.get(next) {
                heap.push(Reverse(HeapItem::new(k, r, next, order)));
            }
        }
        let unit_l1: u64 = unit_tables.iter().map(|t| t.size).sum();
        let taken = Taken {
            end: end.clone().unwrap_or_default(),
            row_bytes,
            l1_bytes,
            inputs: inputs.len(),
        };
        row_bytes = row_bytes.saturating_add(unit_rows);
        l1_bytes = l1_bytes.saturating_add(unit_l1);
        inputs.extend(unit_tables);
        end = Some(unit_end);
        let total = row_bytes.saturating_add(l1_bytes);
        if total >= bounds.lower {
            if total > upper && taken.row_bytes > 0 {
                before = Some(taken);
            } else {
                below_lower = false;
                above_upper = total > upper;
            }
            break;
        }
    }
    if let Some(t) = before {
        end = Some(t.end);
        row_bytes = t.row_bytes;
        l1_bytes = t.l1_bytes;
        inputs.truncate(t.inputs);
    }
    let end = end?;
    let more = rows.iter().any(|r| r.first_above(&end) < r.len());
    Some(ColumnPlan {
        start,
        next_cursor: if more {
            ColumnCursor::After(end.clone())
        } else {
            ColumnCursor::Start
        },
        end,
        l1_inputs: inputs,
        row_bytes,
        l1_bytes,
        wrapped,
        below_lower,
        above_upper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::tests::meta;

    fn row(items: &[(&str, u64)]) -> RowKeySizes {
        RowKeySizes::new(
            items.iter().map(|&(k, b)| (k.as_bytes().to_vec(), b)),
            &mezz_format::KeyOrder::default(),
        )
    }

    fn l1(tables: &[(u64, &str, &str, u64)]) -> Vec<Arc<TableMeta>> {
        tables
            .iter()
            .map(|&(id, lo, hi, size)| Arc::new(meta(id, lo, hi, (id, id), size)))
            .collect()
    }

    fn ids(p: &ColumnPlan) -> Vec<u64> {
        p.l1_inputs.iter().map(|t| t.id).collect()
    }

    fn after(k: &str) -> ColumnCursor {
        ColumnCursor::After(k.as_bytes().to_vec())
    }

    fn bounds(lower: u64, upper: u64) -> ColumnBounds {
        ColumnBounds { lower, upper }
    }

    /// Checks the invariants of a plan against its inputs.
    fn check(p: &ColumnPlan, rows: &[RowKeySizes], tables: &[Arc<TableMeta>]) {
        assert!(p.start <= p.end, "{p:?}");
        assert!(p.row_bytes > 0, "{p:?}");
        let (s, e) = (p.start.as_slice(), p.end.as_slice());
        for t in tables {
            let overlaps = t.smallest_user_key() <= e && t.largest_user_key() >= s;
            let input = p.l1_inputs.iter().any(|x| x.id == t.id);
            assert_eq!(overlaps, input, "table {} in {p:?}", t.id);
            if input {
                assert!(t.largest_user_key() <= e, "table {} split by {p:?}", t.id);
            }
        }
        let l1: u64 = p.l1_inputs.iter().map(|t| t.size).sum();
        assert_eq!(l1, p.l1_bytes);
        let exact: u64 = rows
            .iter()
            .map(|r| {
                r.keys
                    .iter()
                    .zip(r.cum.windows(2))
                    .filter(|(k, _)| k.as_slice() >= s && k.as_slice() <= e)
                    .map(|(_, w)| w[1] - w[0])
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(exact, p.row_bytes, "{p:?}");
    }

    #[test]
    fn column_row_key_sizes_merge_and_count() {
        let r = RowKeySizes::new(
            vec![
                (b"c".to_vec(), 5),
                (b"a".to_vec(), 1),
                (b"c".to_vec(), 7),
                (b"b".to_vec(), 2),
            ],
            &mezz_format::KeyOrder::default(),
        );
        assert_eq!(r.len(), 3);
        assert_eq!(r.total_bytes(), 15);
        assert_eq!(r.bytes_between(&ColumnCursor::Start, b"b"), 3);
        assert_eq!(r.bytes_between(&after("a"), b"c"), 14);
        assert_eq!(r.bytes_between(&after("c"), b"z"), 0);
        assert_eq!(r.bytes_between(&after("b"), b"a"), 0);
        assert!(RowKeySizes::new(Vec::new(), &mezz_format::KeyOrder::default()).is_empty());
        assert_eq!(
            ColumnBounds::from_sst_size(10, 64 << 20),
            bounds(320 << 20, 640 << 20)
        );
    }

    #[test]
    fn column_with_empty_l1_cuts_between_row_keys() {
        let rows = vec![
            row(&[("a", 10), ("c", 10), ("e", 10), ("g", 10)]),
            row(&[("b", 10), ("c", 10), ("f", 10)]),
        ];
        let p = plan_column(
            &rows,
            &[],
            &ColumnCursor::Start,
            bounds(35, 100),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p, &rows, &[]);
        // a 10, b 10, c 20 (both rows: the user key is not split) -> 40 >= 35.
        assert_eq!(
            (p.start.as_slice(), p.end.as_slice()),
            (&b"a"[..], &b"c"[..])
        );
        assert_eq!((p.row_bytes, p.l1_bytes), (40, 0));
        assert!(!p.below_lower && !p.above_upper && !p.wrapped);
        assert_eq!(p.next_cursor, after("c"));
        // The next column continues after "c" and takes the rest, below the lower bound.
        let p2 = plan_column(
            &rows,
            &[],
            &p.next_cursor,
            bounds(35, 100),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p2, &rows, &[]);
        assert_eq!(
            (p2.start.as_slice(), p2.end.as_slice()),
            (&b"e"[..], &b"g"[..])
        );
        assert_eq!(p2.row_bytes, 30);
        assert!(p2.below_lower);
        assert_eq!(p2.next_cursor, ColumnCursor::Start);
        // Nothing at all.
        assert!(
            plan_column(
                &[],
                &[],
                &ColumnCursor::Start,
                bounds(1, 2),
                &mezz_format::KeyOrder::default()
            )
            .is_none()
        );
        assert!(
            plan_column(
                &[RowKeySizes::default()],
                &[],
                &after("x"),
                bounds(1, 2),
                &mezz_format::KeyOrder::default()
            )
            .is_none()
        );
    }

    #[test]
    fn column_with_one_l1_table_takes_it_whole() {
        let rows = vec![row(&[("a", 5), ("d", 5), ("f", 5), ("m", 5), ("x", 5)])];
        let tables = l1(&[(7, "c", "g", 100)]);
        // "a" alone (5) is short; the table unit [.., g] brings d, f and 100 L1 bytes.
        let p = plan_column(
            &rows,
            &tables,
            &ColumnCursor::Start,
            bounds(50, 500),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p, &rows, &tables);
        assert_eq!(
            (p.start.as_slice(), p.end.as_slice()),
            (&b"a"[..], &b"g"[..])
        );
        assert_eq!(ids(&p), vec![7]);
        assert_eq!((p.row_bytes, p.l1_bytes), (15, 100));
        assert_eq!(p.next_cursor, after("g"));
        // After the table: the gap holds row keys only.
        let p2 = plan_column(
            &rows,
            &tables,
            &p.next_cursor,
            bounds(8, 500),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p2, &rows, &tables);
        assert_eq!(
            (p2.start.as_slice(), p2.end.as_slice()),
            (&b"m"[..], &b"x"[..])
        );
        assert!(ids(&p2).is_empty());
        // A cursor inside the table: the column still takes the whole table.
        let p3 = plan_column(
            &rows,
            &tables,
            &after("e"),
            bounds(1, 500),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p3, &rows, &tables);
        assert_eq!(
            (p3.start.as_slice(), p3.end.as_slice()),
            (&b"f"[..], &b"g"[..])
        );
        assert_eq!(ids(&p3), vec![7]);
        assert!(!p3.below_lower);
    }

    #[test]
    fn column_cursor_wraps_around() {
        let rows = vec![row(&[("b", 10), ("d", 10)]), row(&[("c", 10)])];
        let tables = l1(&[(1, "a", "b", 30), (2, "c", "c", 30), (3, "x", "z", 30)]);
        let p = plan_column(
            &rows,
            &tables,
            &after("d"),
            bounds(35, 1000),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p, &rows, &tables);
        assert!(p.wrapped);
        assert_eq!(p.start, b"b");
        // Table 1 with "b" (40) reaches the lower bound.
        assert_eq!(ids(&p), vec![1]);
        assert_eq!(p.end, b"b");
        assert_eq!(p.next_cursor, after("b"));
        // A cursor beyond every key wraps as well; the last column of a sweep hands back
        // Start and takes no table without row data ("x".."z").
        let q = plan_column(
            &rows,
            &tables,
            &after("zz"),
            bounds(1000, 2000),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&q, &rows, &tables);
        assert!(q.wrapped && q.below_lower);
        assert_eq!(q.end, b"d");
        assert_eq!(ids(&q), vec![1, 2]);
        assert_eq!(q.next_cursor, ColumnCursor::Start);
        // From Start nothing wraps.
        assert!(
            !plan_column(
                &rows,
                &tables,
                &ColumnCursor::Start,
                bounds(1, 2),
                &mezz_format::KeyOrder::default()
            )
            .unwrap()
            .wrapped
        );
    }

    #[test]
    fn column_that_cannot_reach_the_lower_bound() {
        let rows = vec![row(&[("a", 1), ("b", 1)]), row(&[("b", 1), ("c", 1)])];
        let tables = l1(&[(4, "b", "b", 10)]);
        let p = plan_column(
            &rows,
            &tables,
            &ColumnCursor::Start,
            bounds(1000, 2000),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p, &rows, &tables);
        assert!(p.below_lower && !p.above_upper);
        assert_eq!(
            (p.start.as_slice(), p.end.as_slice()),
            (&b"a"[..], &b"c"[..])
        );
        assert_eq!((p.row_bytes, p.l1_bytes), (4, 10));
        assert_eq!(p.next_cursor, ColumnCursor::Start);
    }

    #[test]
    fn column_stops_before_a_unit_past_the_upper_bound() {
        let rows = vec![row(&[("a", 10), ("b", 10), ("m", 10), ("q", 10)])];
        let tables = l1(&[(5, "k", "p", 1000), (6, "s", "t", 10)]);
        // a + b = 20 < 50; the next unit (table 5 with "m") would reach 1030 > 100: leave it.
        let p = plan_column(
            &rows,
            &tables,
            &ColumnCursor::Start,
            bounds(50, 100),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p, &rows, &tables);
        assert_eq!(p.end, b"b");
        assert!(ids(&p).is_empty());
        assert!(p.below_lower && !p.above_upper);
        // Starting at that table, it is the first unit and is taken although too large.
        let p2 = plan_column(
            &rows,
            &tables,
            &p.next_cursor,
            bounds(50, 100),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p2, &rows, &tables);
        assert_eq!(ids(&p2), vec![5]);
        assert_eq!(p2.end, b"p");
        assert!(p2.above_upper && !p2.below_lower);
        assert_eq!(p2.next_cursor, after("p"));
        // The last column: "q" and, in the gap after the tables, nothing more.
        let p3 = plan_column(
            &rows,
            &tables,
            &p2.next_cursor,
            bounds(50, 100),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p3, &rows, &tables);
        assert_eq!(
            (p3.start.as_slice(), p3.end.as_slice()),
            (&b"q"[..], &b"q"[..])
        );
        assert!(ids(&p3).is_empty());
        assert_eq!(p3.next_cursor, ColumnCursor::Start);
    }

    #[test]
    fn column_keeps_tables_sharing_a_boundary_user_key_together() {
        let rows = vec![row(&[("a", 1), ("e", 1), ("h", 1)])];
        // Tables 1 and 2 both hold versions of user key "e".
        let tables = l1(&[(2, "e", "g", 5), (1, "c", "e", 5)]);
        let p = plan_column(
            &rows,
            &tables,
            &ColumnCursor::Start,
            bounds(3, 100),
            &mezz_format::KeyOrder::default(),
        )
        .unwrap();
        check(&p, &rows, &tables);
        assert_eq!(ids(&p), vec![1, 2]);
        assert_eq!(p.end, b"g");
    }

    #[test]
    fn column_over_skewed_rows_stays_within_bounds() {
        // One row holds 1,000 keys densely packed in "k0000".."k0999"; the others a few keys
        // spread over the whole space. L1 cuts the space every 100 keys.
        let mut rows = vec![RowKeySizes::new(
            (0..1000).map(|i| (format!("k{i:04}").into_bytes(), 100)),
            &mezz_format::KeyOrder::default(),
        )];
        for r in 0..3 {
            rows.push(RowKeySizes::new(
                (0..10).map(|i| (format!("k{:04}", i * 997 % 1000 + r).into_bytes(), 50)),
                &mezz_format::KeyOrder::default(),
            ));
        }
        let tables: Vec<Arc<TableMeta>> = (0..10u64)
            .map(|t| {
                let lo = format!("k{:04}", t * 100);
                let hi = format!("k{:04}", t * 100 + 99);
                Arc::new(meta(t + 1, &lo, &hi, (1, 1), 3000))
            })
            .collect();
        let b = bounds(20_000, 40_000);
        let mut cursor = ColumnCursor::Start;
        let mut covered = 0u64;
        let mut columns = 0;
        loop {
            let p = plan_column(
                &rows,
                &tables,
                &cursor,
                b,
                &mezz_format::KeyOrder::default(),
            )
            .unwrap();
            check(&p, &rows, &tables);
            assert!(!p.wrapped);
            if p.next_cursor != ColumnCursor::Start {
                assert!(!p.below_lower && !p.above_upper, "{p:?}");
                assert!((b.lower..=b.upper).contains(&p.total_bytes()));
            }
            covered += p.row_bytes;
            columns += 1;
            cursor = p.next_cursor.clone();
            if cursor == ColumnCursor::Start {
                break;
            }
        }
        // A sweep covers all row data exactly once.
        let all: u64 = rows.iter().map(RowKeySizes::total_bytes).sum();
        assert_eq!(covered, all);
        assert!(columns >= 4, "{columns} columns");
    }

    /// Random inputs: every plan keeps its invariants, and a sweep from Start covers every
    /// row byte exactly once.
    #[test]
    fn column_random_sweeps_cover_all_data_once() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        for seed in 0..50u64 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let nrows = rng.random_range(1..6);
            let rows: Vec<RowKeySizes> = (0..nrows)
                .map(|_| {
                    let n = rng.random_range(0..40);
                    RowKeySizes::new(
                        (0..n).map(|_| {
                            (
                                format!("{:03}", rng.random_range(0..200)).into_bytes(),
                                rng.random_range(1..50),
                            )
                        }),
                        &mezz_format::KeyOrder::default(),
                    )
                })
                .collect();
            let mut tables = Vec::new();
            let mut k = rng.random_range(0..20u64);
            let mut id = 1;
            while k < 200 {
                let len = rng.random_range(0..15u64);
                tables.push(Arc::new(meta(
                    id,
                    &format!("{k:03}"),
                    &format!("{:03}", k + len),
                    (1, 1),
                    rng.random_range(0..400),
                )));
                id += 1;
                // Sometimes the next table starts on this one's last user key.
                k += len + rng.random_range(0..20);
            }
            let lower = rng.random_range(1..300);
            let b = bounds(lower, lower + rng.random_range(0..300));
            let all: u64 = rows.iter().map(RowKeySizes::total_bytes).sum();
            let mut cursor = ColumnCursor::Start;
            let mut covered = 0;
            let mut last_end: Option<Vec<u8>> = None;
            for _ in 0..1000 {
                let Some(p) = plan_column(
                    &rows,
                    &tables,
                    &cursor,
                    b,
                    &mezz_format::KeyOrder::default(),
                ) else {
                    assert_eq!(all, 0);
                    break;
                };
                check(&p, &rows, &tables);
                assert!(!p.wrapped, "seed {seed}");
                if let Some(e) = &last_end {
                    assert!(p.start > *e, "seed {seed}: columns overlap");
                }
                covered += p.row_bytes;
                last_end = Some(p.end.clone());
                cursor = p.next_cursor;
                if cursor == ColumnCursor::Start {
                    break;
                }
            }
            assert_eq!(covered, all, "seed {seed}");
        }
    }
}
