//! Approximate on-disk sizes of key ranges, from table metadata only (no table is read).
//!
//! Owns `Db::approximate_size(s)`. Estimate: the bytes of every table (any tier) of the
//! current version whose user-key range overlaps the queried range. A table straddling an
//! end of the range counts in full, so the figure is an upper bound at table granularity
//! (a range inside one large table reports that table's size); memtables are not counted
//! (as LevelDB's `GetApproximateSizes`).
//!
//! Thread-safety: reads one published version; callable from any thread.

use std::ops::Bound;

use super::Db;
use crate::error::Result;
use crate::iter::range::{CursorBounds, range_to_bounds};
use crate::version::Version;

/// Bytes of the tables of `v` overlapping `[lower, upper)`.
fn overlapping_bytes(v: &Version, b: &CursorBounds) -> u64 {
    let o = &v.order;
    v.all_tables()
        .filter(|(_, t)| {
            let below = b
                .upper
                .as_deref()
                .is_some_and(|u| o.compare_user(t.smallest_user_key(), u).is_ge());
            let above = b
                .lower
                .as_deref()
                .is_some_and(|l| o.compare_user(t.largest_user_key(), l).is_lt());
            !below && !above
        })
        .map(|(_, t)| t.size)
        .sum()
}

/// A key range `[start, end)` for [`Db::approximate_sizes`] (`None` = unbounded).
pub type KeyRange<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

impl Db {
    /// Approximate bytes on disk (SSD and NVM tables) of keys in `[start, end)` (`None` =
    /// unbounded), from table metadata: tables overlapping the range count in full, the
    /// memtables not at all.
    ///
    /// # Errors
    /// `Closed`; `InvalidArgument` if `start > end`.
    pub fn approximate_size(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<u64> {
        Ok(self
            .approximate_sizes(&[(start, end)])?
            .first()
            .copied()
            .unwrap_or(0))
    }

    /// [`Db::approximate_size`] of each range, all against one version.
    ///
    /// # Errors
    /// As [`Db::approximate_size`].
    pub fn approximate_sizes(&self, ranges: &[KeyRange<'_>]) -> Result<Vec<u64>> {
        let _pass = self.inner.enter()?;
        let sv = self.inner.versions.super_version.load_full();
        ranges
            .iter()
            .map(|&(s, e)| {
                let start = s.map_or(Bound::Unbounded, Bound::Included);
                let end = e.map_or(Bound::Unbounded, Bound::Excluded);
                let bounds = range_to_bounds::<&[u8], _>(&(start, end), &sv.version.order)?;
                Ok(overlapping_bytes(&sv.version, &bounds))
            })
            .collect()
    }
}
