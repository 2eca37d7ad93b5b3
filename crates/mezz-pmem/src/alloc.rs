//! Extent allocation inside a pool: a coalescing free list ordered by offset.
//!
//! Owns: [`Extent`] (a byte range of a pool) and [`FreeList`] (the free ranges of a pool's
//! data area). The free list is volatile: it is never written to NVM. On open it is derived
//! from the extents the caller's metadata still references ([`FreeList::from_live`]), so
//! space allocated but never recorded before a crash returns to the free list.
//!
//! Invariants of a [`FreeList`]:
//! 1. Every free range lies inside `[start, end)`, has a non-zero length, and its offset
//!    and length are multiples of the alignment.
//! 2. Free ranges never overlap or touch: neighbours are merged on free.
//! 3. `free_bytes()` is the sum of the free ranges' lengths.
//!
//! Allocation is first fit by offset (lowest address that fits), which keeps the data
//! near the start of the pool.
//!
//! Thread-safety: `FreeList` is plain data (`Send + Sync`); the pool wraps it in a mutex.

use std::collections::BTreeMap;

/// A byte range `[offset, offset + len)` of a pool file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Extent {
    /// Offset of the first byte from the start of the pool file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

impl Extent {
    /// One past the last byte (saturating).
    #[must_use]
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// Why a free list could not be built or an extent not freed: the offending offset and a
/// description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtentError {
    /// Offset of the offending extent.
    pub offset: u64,
    /// What was wrong.
    pub detail: String,
}

/// The free ranges of `[start, end)`, all aligned to `align` (see the module invariants).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeList {
    start: u64,
    end: u64,
    align: u64,
    /// offset -> length.
    free: BTreeMap<u64, u64>,
    free_bytes: u64,
}

impl FreeList {
    /// A list where all of `[start, end)` is free. `start` and `end` are rounded to `align`
    /// (a power of two; `start` up, `end` down).
    #[must_use]
    pub fn new(start: u64, end: u64, align: u64) -> FreeList {
        let align = align.max(1).next_power_of_two();
        let start = start.next_multiple_of(align);
        let end = end / align * align;
        let mut free = BTreeMap::new();
        let mut free_bytes = 0;
        if end > start {
            free.insert(start, end - start);
            free_bytes = end - start;
        }
        FreeList {
            start,
            end: end.max(start),
            align,
            free,
            free_bytes,
        }
    }

    /// A list where everything of `[start, end)` outside `live` is free.
    ///
    /// # Errors
    /// An extent of `live` that is empty, unaligned, outside `[start, end)`, or overlaps
    /// another one.
    pub fn from_live(
        start: u64,
        end: u64,
        align: u64,
        live: &[Extent],
    ) -> Result<FreeList, ExtentError> {
        let mut list = FreeList::new(start, end, align);
        let mut sorted = live.to_vec();
        sorted.sort_unstable();
        let mut cursor = list.start;
        let mut free = BTreeMap::new();
        let mut prev: Option<Extent> = None;
        for e in sorted {
            list.check_shape(e)?;
            if let Some(p) = prev
                && e.offset < p.end()
            {
                return Err(ExtentError {
                    offset: e.offset,
                    detail: format!(
                        "live extent [{}, {}) overlaps live extent [{}, {})",
                        e.offset,
                        e.end(),
                        p.offset,
                        p.end()
                    ),
                });
            }
            if e.offset > cursor {
                free.insert(cursor, e.offset - cursor);
            }
            cursor = e.end();
            prev = Some(e);
        }
        if list.end > cursor {
            free.insert(cursor, list.end - cursor);
        }
        list.free_bytes = free.values().sum();
        list.free = free;
        Ok(list)
    }

    fn check_shape(&self, e: Extent) -> Result<(), ExtentError> {
        let detail = if e.len == 0 {
            "empty extent".to_string()
        } else if !e.offset.is_multiple_of(self.align) || !e.len.is_multiple_of(self.align) {
            format!(
                "extent [{}, +{}) is not aligned to {} bytes",
                e.offset, e.len, self.align
            )
        } else if e.offset < self.start || e.offset.checked_add(e.len).is_none_or(|x| x > self.end)
        {
            format!(
                "extent [{}, +{}) is outside the data area [{}, {})",
                e.offset, e.len, self.start, self.end
            )
        } else {
            return Ok(());
        };
        Err(ExtentError {
            offset: e.offset,
            detail,
        })
    }

    /// The alignment of offsets and lengths.
    #[must_use]
    pub fn align(&self) -> u64 {
        self.align
    }

    /// Sum of the free ranges.
    #[must_use]
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Length of the largest free range (the largest allocation that can succeed).
    #[must_use]
    pub fn largest_free(&self) -> u64 {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// The free ranges in offset order.
    pub fn ranges(&self) -> impl Iterator<Item = Extent> + '_ {
        self.free
            .iter()
            .map(|(&offset, &len)| Extent { offset, len })
    }

    /// Allocates `len` bytes rounded up to the alignment, first fit; `None` when no free
    /// range is large enough (or `len` is 0).
    pub fn alloc(&mut self, len: u64) -> Option<Extent> {
        if len == 0 {
            return None;
        }
        let len = len.checked_next_multiple_of(self.align)?;
        let (&offset, &have) = self.free.iter().find(|&(_, &have)| have >= len)?;
        self.free.remove(&offset);
        if have > len {
            self.free.insert(offset + len, have - len);
        }
        self.free_bytes -= len;
        Some(Extent { offset, len })
    }

    /// As [`FreeList::alloc`], but from the top: the end of the highest free range that
    /// fits. Objects of one kind allocated from the top and the others from the bottom do
    /// not fragment each other's space.
    pub fn alloc_high(&mut self, len: u64) -> Option<Extent> {
        if len == 0 {
            return None;
        }
        let len = len.checked_next_multiple_of(self.align)?;
        let (&offset, &have) = self.free.iter().rev().find(|&(_, &have)| have >= len)?;
        if have > len {
            self.free.insert(offset, have - len);
        } else {
            self.free.remove(&offset);
        }
        self.free_bytes -= len;
        Some(Extent {
            offset: offset + have - len,
            len,
        })
    }

    /// Returns `e` to the free list, merging it with touching free neighbours.
    ///
    /// # Errors
    /// `e` is empty, unaligned, outside the area, or overlaps free space (a double free).
    /// Nothing changes then.
    pub fn free(&mut self, e: Extent) -> Result<(), ExtentError> {
        self.check_shape(e)?;
        let overlap = |o: u64, l: u64| ExtentError {
            offset: e.offset,
            detail: format!(
                "freeing [{}, {}) which overlaps free space [{}, {}) (double free?)",
                e.offset,
                e.end(),
                o,
                o + l
            ),
        };
        let before = self
            .free
            .range(..=e.offset)
            .next_back()
            .map(|(&o, &l)| (o, l));
        let after = self.free.range(e.offset..).next().map(|(&o, &l)| (o, l));
        if let Some((o, l)) = before
            && o + l > e.offset
        {
            return Err(overlap(o, l));
        }
        if let Some((o, l)) = after
            && o < e.end()
        {
            return Err(overlap(o, l));
        }
        let mut offset = e.offset;
        let mut len = e.len;
        if let Some((o, l)) = before
            && o + l == e.offset
        {
            self.free.remove(&o);
            offset = o;
            len += l;
        }
        if let Some((o, l)) = after
            && o == e.end()
        {
            self.free.remove(&o);
            len += l;
        }
        self.free.insert(offset, len);
        self.free_bytes += e.len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 4096;

    fn ext(offset: u64, len: u64) -> Extent {
        Extent { offset, len }
    }

    #[test]
    fn alloc_rounds_up_and_is_first_fit() {
        let mut f = FreeList::new(A, 11 * A, A);
        assert_eq!(f.free_bytes(), 10 * A);
        assert_eq!(f.alloc(1), Some(ext(A, A)));
        assert_eq!(f.alloc(A + 1), Some(ext(2 * A, 2 * A)));
        assert_eq!(f.alloc(0), None);
        assert_eq!(f.free_bytes(), 7 * A);
        f.free(ext(A, A)).unwrap();
        // The hole at A is first and large enough for one page.
        assert_eq!(f.alloc(A), Some(ext(A, A)));
        // Too large for any range.
        assert_eq!(f.alloc(8 * A), None);
        assert_eq!(f.alloc(7 * A), Some(ext(4 * A, 7 * A)));
        assert_eq!(f.free_bytes(), 0);
        assert_eq!(f.alloc(1), None);
    }

    #[test]
    fn free_coalesces_both_sides() {
        let mut f = FreeList::new(0, 3 * A, A);
        let a = f.alloc(A).unwrap();
        let b = f.alloc(A).unwrap();
        let c = f.alloc(A).unwrap();
        f.free(a).unwrap();
        f.free(c).unwrap();
        assert_eq!(f.ranges().count(), 2);
        f.free(b).unwrap();
        assert_eq!(f.ranges().collect::<Vec<_>>(), vec![ext(0, 3 * A)]);
        assert_eq!(f.largest_free(), 3 * A);
    }

    #[test]
    fn free_rejects_double_free_and_bad_shapes() {
        let mut f = FreeList::new(A, 5 * A, A);
        let a = f.alloc(2 * A).unwrap();
        f.free(a).unwrap();
        let before = f.clone();
        assert!(f.free(a).is_err());
        assert!(f.free(ext(A, 0)).is_err());
        assert!(f.free(ext(A + 1, A)).is_err());
        assert!(f.free(ext(0, A)).is_err());
        assert!(f.free(ext(5 * A, A)).is_err());
        assert!(f.free(ext(A, u64::MAX - A + 1)).is_err());
        assert_eq!(f, before);
    }

    #[test]
    fn from_live_frees_the_complement() {
        let live = [ext(3 * A, A), ext(A, A)];
        let f = FreeList::from_live(A, 6 * A, A, &live).unwrap();
        assert_eq!(
            f.ranges().collect::<Vec<_>>(),
            vec![ext(2 * A, A), ext(4 * A, 2 * A)]
        );
        assert_eq!(f.free_bytes(), 3 * A);
        let none = FreeList::from_live(A, 6 * A, A, &[]).unwrap();
        assert_eq!(none, FreeList::new(A, 6 * A, A));
    }

    #[test]
    fn from_live_rejects_overlap_and_out_of_range() {
        let e = FreeList::from_live(A, 6 * A, A, &[ext(A, 2 * A), ext(2 * A, A)]).unwrap_err();
        assert_eq!(e.offset, 2 * A);
        assert!(e.detail.contains("overlaps"), "{}", e.detail);
        let e = FreeList::from_live(A, 6 * A, A, &[ext(5 * A, 2 * A)]).unwrap_err();
        assert!(e.detail.contains("outside"), "{}", e.detail);
        assert!(FreeList::from_live(A, 6 * A, A, &[ext(0, A)]).is_err());
        assert!(FreeList::from_live(A, 6 * A, A, &[ext(A + 8, A)]).is_err());
    }

    #[test]
    fn alloc_high_takes_the_top_of_the_highest_range_that_fits() {
        let mut f = FreeList::new(0, 16 * 4096, 4096);
        let low = f.alloc(4096).unwrap();
        let high = f.alloc_high(2 * 4096).unwrap();
        assert_eq!(low.offset, 0);
        assert_eq!((high.offset, high.len), (14 * 4096, 2 * 4096));
        assert_eq!(f.free_bytes(), 13 * 4096);
        // A range that fits exactly is taken whole.
        f.free(low).unwrap();
        let all = f.alloc_high(14 * 4096).unwrap();
        assert_eq!((all.offset, all.len), (0, 14 * 4096));
        assert!(f.alloc_high(4096).is_none());
        f.free(high).unwrap();
        f.free(all).unwrap();
        assert_eq!(f.largest_free(), 16 * 4096);
    }
}
