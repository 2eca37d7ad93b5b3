//! [`SuperVersion`]: what a reader pins — the memtables and the version, consistent with
//! each other — and the read-order rule every install checks.
//!
//! Invariant: the memtables and L0 tables, in the order reads consult them, hold strictly
//! older sequence numbers one after the other.
//!
//! Thread-safety: immutable, shared through `Arc` (an `ArcSwap` in the engine).

use std::sync::Arc;

use mezz_format::SeqNo;

use crate::memtable::MemTable;
use crate::version::Version;

/// What a reader pins: the memtables and the version, consistent with each other.
#[derive(Debug)]
pub struct SuperVersion {
    /// The active memtable.
    pub mem: Arc<MemTable>,
    /// Immutable memtables waiting for a flush, newest first.
    pub imms: Vec<Arc<MemTable>>,
    /// NVM memtables below the DRAM ones (`nvm_memtable = immutable`): the receiver, then
    /// the full ones waiting for their flush, newest first.
    pub nvm: Vec<Arc<MemTable>>,
    /// The tables.
    pub version: Arc<Version>,
}

/// One container in the read order, for [`SuperVersion::check_read_order`].
#[derive(Debug, Clone, Copy)]
enum ReadRun {
    Memtable { id: u64, nvm: bool },
    L0 { id: u64 },
}

impl std::fmt::Display for ReadRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadRun::Memtable { id, nvm: true } => write!(f, "NVM memtable {id}"),
            ReadRun::Memtable { id, nvm: false } => write!(f, "memtable {id}"),
            ReadRun::L0 { id } => write!(f, "L0 table {id}"),
        }
    }
}

impl SuperVersion {
    /// The containers a point read consults, in the order it consults them: the active
    /// memtable, the immutable ones, the NVM ones, then the L0 tables; each with its
    /// (smallest, largest) sequence number. Empty memtables are left out.
    fn read_order(&self) -> impl Iterator<Item = (ReadRun, SeqNo, SeqNo)> + '_ {
        let mems = std::iter::once(&self.mem)
            .chain(self.imms.iter())
            .chain(self.nvm.iter())
            .filter(|m| !m.is_empty())
            .map(|m| {
                let run = ReadRun::Memtable {
                    id: m.id(),
                    nvm: m.is_nvm(),
                };
                (run, m.min_seq(), m.max_seq())
            });
        let l0 = self
            .version
            .tables(0)
            .iter()
            .map(|t| (ReadRun::L0 { id: t.id }, t.smallest_seq, t.largest_seq));
        mems.chain(l0)
    }

    /// Checks the rule point reads and iterators rely on: the memtables and L0 tables, in
    /// the order reads consult them, hold strictly older data one after the other (every
    /// sequence number of a later container is below every one of an earlier container),
    /// so the first container holding a key holds its newest version. A violation is
    /// described (the engine refuses further writes rather than serve stale values).
    /// Allocates nothing unless it finds a violation (it runs at every install).
    ///
    /// # Errors
    /// A description of the first pair out of order.
    pub fn check_read_order(&self) -> std::result::Result<(), String> {
        let mut newer: Option<(ReadRun, SeqNo)> = None;
        for (run, lo, hi) in self.read_order() {
            if let Some((prev, prev_lo)) = newer
                && hi >= prev_lo
            {
                return Err(format!(
                    "read order violated: {run} (sequence numbers up to {hi}) is consulted \
                     after {prev} (from {prev_lo})"
                ));
            }
            newer = Some((run, lo));
        }
        Ok(())
    }
}
