//! The registry of live snapshots: which sequence numbers a compaction must keep visible.
//! Below options (a `Snapshot` in `ReadOptions` holds a guard) and the engine (which
//! registers snapshots and reads the list before it compacts).
//!
//! Invariant: a sequence number is listed while any guard for it lives.
//!
//! Thread-safety: one leaf mutex; `Send + Sync`.

use std::collections::BTreeMap;
use std::sync::Arc;

use mezz_format::SeqNo;
use parking_lot::Mutex;

/// The registry of live snapshots: sequence number -> number of live handles.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    seqs: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    /// Live snapshot sequence numbers, ascending.
    pub(crate) fn list(&self) -> Vec<SeqNo> {
        self.seqs.lock().keys().copied().collect()
    }

    /// Registers a snapshot at the sequence `seq()` returns, read under the registry's
    /// lock; the guard keeps it registered.
    pub(crate) fn register(
        list: &Arc<Self>,
        seq: impl FnOnce() -> SeqNo,
    ) -> (SeqNo, SnapshotGuard) {
        let mut m = list.seqs.lock();
        let seq = seq();
        *m.entry(seq).or_insert(0) += 1;
        drop(m);
        (
            seq,
            SnapshotGuard {
                list: Arc::clone(list),
                seq,
            },
        )
    }

    /// Live snapshot handles.
    pub(crate) fn count(&self) -> usize {
        self.seqs.lock().values().sum()
    }
}

/// Keeps a snapshot's sequence number registered while any clone of the snapshot lives.
#[derive(Debug)]
pub struct SnapshotGuard {
    list: Arc<SnapshotList>,
    seq: SeqNo,
}

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        let mut m = self.list.seqs.lock();
        if let Some(n) = m.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.seq);
            }
        }
    }
}
