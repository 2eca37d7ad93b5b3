//! The memtable set: every memtable of an open database, in the order reads consult them.
//!
//! Owns: [`MemtableSet`] — the active memtable, the immutable ones waiting for their flush,
//! and NoveLSM's NVM memtables below them (the receiver that full DRAM memtables are merged
//! into, and the full ones waiting for their flush to L0). What goes where is decided by
//! the design (`design::novelsm`); the set is the only place memtables are added, moved or
//! removed, and the only place a [`SuperVersion`] is built.
//!
//! Invariants (the read-order rule, checked by `SuperVersion::check_read_order` at every
//! install): active, then immutables newest first, then the receiver, then the sealed NVM
//! memtables newest first; each holds strictly older sequence numbers than the one before.
//! Flushes take the oldest immutable (or, with none, the oldest sealed NVM memtable) first.
//!
//! Thread-safety: the set is plain data behind the engine's `state` lock; the active
//! memtable changes only while the `write` lock is also held.

use std::sync::Arc;

use crate::memtable::MemTable;
use crate::state::SuperVersion;
use crate::version::Version;

/// A job the memtable set has ready: the memtable to flush next.
#[derive(Debug, Clone)]
pub enum FlushJob {
    /// The oldest immutable memtable.
    Immutable(Arc<MemTable>),
    /// The oldest sealed NVM memtable (no immutable memtable is waiting).
    SealedNvm(Arc<MemTable>),
}

/// The memtables of an open database. See the module documentation.
#[derive(Debug, Clone)]
pub struct MemtableSet {
    active: Arc<MemTable>,
    /// Immutable memtables, newest first.
    imms: Vec<Arc<MemTable>>,
    /// `nvm_memtable = immutable`: the NVM memtable full DRAM memtables are merged into.
    receiver: Option<Arc<MemTable>>,
    /// `nvm_memtable = immutable`: full NVM memtables waiting for their flush to L0, newest
    /// first (all older than the receiver).
    sealed: Vec<Arc<MemTable>>,
}

impl MemtableSet {
    /// A set with `active` and the recovered memtables (each list newest first).
    #[must_use]
    pub fn new(
        active: Arc<MemTable>,
        imms: Vec<Arc<MemTable>>,
        sealed: Vec<Arc<MemTable>>,
    ) -> Self {
        Self {
            active,
            imms,
            receiver: None,
            sealed,
        }
    }

    /// The active memtable.
    #[must_use]
    pub fn active(&self) -> &Arc<MemTable> {
        &self.active
    }

    /// The immutable memtables, newest first.
    #[must_use]
    pub fn immutables(&self) -> &[Arc<MemTable>] {
        &self.imms
    }

    /// The memtables held in DRAM: the immutable ones and the active one, when they are not
    /// NVM memtables (NoveLSM's mutable ones take no DRAM: the pool bounds them). What
    /// `max_write_buffer_number` limits.
    #[must_use]
    pub fn dram_memtables(&self) -> usize {
        self.imms.iter().filter(|m| !m.is_nvm()).count() + usize::from(!self.active.is_nvm())
    }

    /// Whether the immutable memtable `id` still waits for its flush.
    #[must_use]
    pub fn has_immutable(&self, id: u64) -> bool {
        self.imms.iter().any(|m| m.id() == id)
    }

    /// Whether any memtable waits for a flush (immutable or sealed NVM).
    #[must_use]
    pub fn has_pending_flush(&self) -> bool {
        !self.imms.is_empty() || !self.sealed.is_empty()
    }

    /// The next flush: the oldest immutable memtable first, then the oldest sealed NVM one.
    #[must_use]
    pub fn next_flush(&self) -> Option<FlushJob> {
        self.imms
            .last()
            .cloned()
            .map(FlushJob::Immutable)
            .or_else(|| self.sealed.last().cloned().map(FlushJob::SealedNvm))
    }

    /// Makes `new` the active memtable; the old one becomes the newest immutable.
    pub fn switch(&mut self, new: Arc<MemTable>) {
        let old = std::mem::replace(&mut self.active, new);
        self.imms.insert(0, old);
    }

    /// Replaces the active memtable, which must be empty, by `new` (same id and WAL, more
    /// room): no entry moves and nothing becomes immutable.
    pub fn replace_empty_active(&mut self, new: Arc<MemTable>) {
        debug_assert!(self.active.is_empty() && self.active.id() == new.id());
        self.active = new;
    }

    /// Removes the flushed immutable memtable `id`.
    pub fn remove_immutable(&mut self, id: u64) {
        self.imms.retain(|m| m.id() != id);
    }

    /// The WAL number recovery starts from once the immutable memtable `flushed` is gone:
    /// the smallest number of a DRAM memtable left (each DRAM memtable's number is its
    /// WAL's).
    #[must_use]
    pub fn log_number_after_flush(&self, flushed: u64) -> u64 {
        self.imms
            .iter()
            .map(|m| m.id())
            .filter(|&m| m != flushed)
            .chain(std::iter::once(self.active.id()))
            .min()
            .unwrap_or(self.active.id())
    }

    /// The NVM receiver, if one is open.
    #[must_use]
    pub fn receiver(&self) -> Option<&Arc<MemTable>> {
        self.receiver.as_ref()
    }

    /// Makes `new` the receiver; the old receiver (if any) becomes the newest sealed one.
    pub fn replace_receiver(&mut self, new: Arc<MemTable>) {
        if let Some(old) = self.receiver.replace(new) {
            self.sealed.insert(0, old);
        }
    }

    /// Seals the receiver (it becomes the newest sealed NVM memtable); false if there was
    /// none.
    pub fn seal_receiver(&mut self) -> bool {
        match self.receiver.take() {
            Some(r) => {
                self.sealed.insert(0, r);
                true
            }
            None => false,
        }
    }

    /// The oldest sealed NVM memtable.
    #[must_use]
    pub fn oldest_sealed(&self) -> Option<&Arc<MemTable>> {
        self.sealed.last()
    }

    /// Removes the flushed sealed NVM memtable `id`.
    pub fn remove_sealed(&mut self, id: u64) {
        self.sealed.retain(|m| m.id() != id);
    }

    /// What a reader pins: these memtables and `version`.
    #[must_use]
    pub fn super_version(&self, version: Arc<Version>) -> SuperVersion {
        SuperVersion {
            mem: Arc::clone(&self.active),
            imms: self.imms.clone(),
            nvm: self
                .receiver
                .iter()
                .chain(self.sealed.iter())
                .cloned()
                .collect(),
            version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> MemtableSet {
        MemtableSet::new(
            Arc::new(MemTable::new(5, 64 << 20, mezz_format::KeyOrder::default())),
            Vec::new(),
            Vec::new(),
        )
    }

    #[test]
    fn switches_flush_oldest_first_and_track_the_log_number() {
        let mut s = set();
        assert!(s.next_flush().is_none());
        s.switch(Arc::new(MemTable::new(
            6,
            64 << 20,
            mezz_format::KeyOrder::default(),
        )));
        s.switch(Arc::new(MemTable::new(
            7,
            64 << 20,
            mezz_format::KeyOrder::default(),
        )));
        assert_eq!(s.active().id(), 7);
        let ids: Vec<u64> = s.immutables().iter().map(|m| m.id()).collect();
        assert_eq!(ids, vec![6, 5]);
        match s.next_flush() {
            Some(FlushJob::Immutable(m)) => assert_eq!(m.id(), 5),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.log_number_after_flush(5), 6);
        s.remove_immutable(5);
        assert!(!s.has_immutable(5) && s.has_immutable(6));
        assert_eq!(s.log_number_after_flush(6), 7);
        let sv = s.super_version(Arc::new(Version::new(2)));
        assert_eq!(sv.mem.id(), 7);
        assert_eq!(sv.imms.len(), 1);
    }
}
