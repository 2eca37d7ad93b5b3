//! Per-call options: `WriteOptions` for one write, `ReadOptions` for one read or iterator,
//! and the `Snapshot` a read may pin.
//!
//! A `Snapshot` keeps its sequence number pinned until its last clone is dropped. All three
//! are `Send + Sync` values owned by the caller.

use std::sync::Arc;

use mezz_format::SeqNo;

/// Options of one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Return only once the write is on stable storage (the WAL is synced). Default: false
    /// (the write survives a process crash but not a power cut).
    pub sync: bool,
}

/// A consistent read view: a sequence number pinned until the snapshot is dropped.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) seq: SeqNo,
    pub(crate) _guard: Arc<crate::base::snapshot::SnapshotGuard>,
}

impl Snapshot {
    /// The sequence number the snapshot reads at.
    #[must_use]
    pub fn sequence(&self) -> SeqNo {
        self.seq
    }
}

/// Options of one read or iterator.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Read as of this snapshot. Default: `None` (the latest state).
    pub snapshot: Option<Snapshot>,
    /// Inclusive lower bound on user keys seen by an iterator. Default: none.
    pub lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound on user keys seen by an iterator. Default: none.
    pub upper_bound: Option<Vec<u8>>,
    /// Makes `lower_bound` exclusive (for orders without a byte-level successor, where
    /// "after `k`" cannot be written as an inclusive bound). Default: false.
    pub lower_bound_exclusive: bool,
    /// Makes `upper_bound` inclusive. Default: false.
    pub upper_bound_inclusive: bool,
    /// Put blocks read into the block cache. Default: true (false for scans that should not
    /// evict the working set).
    pub fill_cache: bool,
    /// Verify checksums of every block read even if cached. Default: false.
    pub verify_checksums: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            lower_bound_exclusive: false,
            upper_bound_inclusive: false,
            fill_cache: true,
            verify_checksums: false,
        }
    }
}
