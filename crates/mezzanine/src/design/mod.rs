//! The designs as components of the engine. Each seed design is a module here that
//! implements the engine's extension points; [`Design::assemble`] picks them from the
//! options, in this one place, and the database handle (`db/`) calls them without asking
//! which design is running.
//!
//! Extension points:
//! - [`FlushTarget`]: what a flush produces. The targets are tried in order until one
//!   writes the memtable (or asks the flush to wait): a matrix row (`matrixkv`), NVM tables
//!   (`tlsm`), an SST (`leveldb`, always last, so every flush has somewhere to go).
//! - [`MemtableDesign`]: where memtables live and go — what replaces a full active memtable
//!   (an NVM memtable under NoveLSM's `mutable` mode), what happens to a full one before L0
//!   (NoveLSM's merge into an NVM memtable), what recovery keeps; the plain design keeps
//!   DRAM memtables and sends them straight to L0.
//! - The compaction policy ([`Design::policy`]): leveled (`leveldb`) or tiering over NVM
//!   levels (`tlsm`) for the levels, under column compaction out of the matrix container
//!   (`matrixkv`) when L0 is one. The designs compose: a matrix container over NVM-table
//!   levels drains its columns into NVM tables.
//! - Whether compactions report the NVM objects their tables point into
//!   ([`Design::records_nvm_refs`], TLSM's byte-addressable compaction).
//!
//! Components reach the engine only through [`Host`], which the database handle
//! implements: new file numbers, the current version, version installation, the memtable
//! set, clean-up. Adding a design means a module here and a line in [`Design::assemble`].
//!
//! Thread-safety: components are `Send + Sync` and stateless beyond what they are built
//! with; the engine runs one flush at a time (the flush job), so a target never races
//! another flush.

pub mod leveldb;
pub mod matrixkv;
pub mod novelsm;
pub mod tlsm;
pub mod tlsm_recovery;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Instant;

use mezz_format::SeqNo;

use crate::compaction::CompactionPolicy;
use crate::compaction::nvm_sink::NvmRecorder;
use crate::error::Result;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::placement::Placement;
use crate::state::{MemtableSet, SuperVersion};
use crate::stats::StatsCollector;
use crate::storage::Storage;
use crate::storage::nvm::NvmObject;
use crate::table::cache::TableCache;
use crate::table::{Table, TableMeta};
use crate::version::VersionEdit;
use crate::wal::WalWriter;

/// What the engine offers its components. Implemented by the database handle.
pub(crate) trait Host: Sync {
    /// The options the database was opened with.
    fn opts(&self) -> &Options;
    /// Where tables and NVM objects live.
    fn storage(&self) -> &Arc<Storage>;
    /// The engine's counters.
    fn stats(&self) -> &StatsCollector;
    /// Writes a line to the info log (`LOG`).
    fn log(&self, msg: std::fmt::Arguments<'_>);
    /// Decides which SSD unit each new table goes to.
    fn placement(&self) -> &dyn Placement;
    /// A new file (and table, row, NVM object) number.
    fn new_file_number(&self) -> u64;
    /// The live snapshots' sequence numbers, ascending.
    fn snapshots(&self) -> Vec<SeqNo>;
    /// The published super version (read without the state lock).
    fn current(&self) -> Arc<SuperVersion>;
    /// The table cache.
    fn table_cache(&self) -> &Arc<TableCache>;
    /// Records the NVM objects a compaction's outputs point into before it writes them.
    fn recorder(&self) -> &dyn NvmRecorder;
    /// The open table for `meta`.
    ///
    /// # Errors
    /// As the table cache's `open`.
    fn open_table(&self, meta: &TableMeta) -> Result<Arc<dyn Table>>;
    /// Whether a compaction is running or due (one may free room a flush waits for).
    fn compaction_pending(&self) -> bool;
    /// Appends `edit` to the manifest and installs the new version; `flushed`: the
    /// immutable memtable it retires (the log number moves past it); `on_install` adjusts
    /// the memtable set under the same lock, before the new super version is published.
    ///
    /// # Errors
    /// A manifest write or an edit that does not apply (both become the background error).
    fn install(
        &self,
        edit: VersionEdit,
        flushed: Option<u64>,
        on_install: &mut dyn FnMut(&mut MemtableSet),
    ) -> Result<()>;
    /// Runs `change` on the memtable set under the state lock; when it returns true, a
    /// new super version is published and background threads are woken.
    fn update_memtables(&self, change: &mut dyn FnMut(&mut MemtableSet) -> bool);
    /// Reads the memtable set under the state lock.
    fn with_memtables(&self, read: &mut dyn FnMut(&MemtableSet));
    /// Records the freshly written NVM object `obj` in the manifest (before it is used).
    ///
    /// # Errors
    /// As [`Host::install`].
    fn record_nvm_object(&self, obj: NvmObject) -> Result<()>;
    /// Makes the directory entries of WALs numbered up to `number` durable.
    ///
    /// # Errors
    /// `Io` from the directory sync.
    fn make_wal_entries_durable(&self, number: u64) -> Result<()>;
    /// The WAL of memtable `id` (and the closed ones before it) is no longer needed: its
    /// file is deleted.
    fn retire_wal(&self, id: u64);
    /// Deletes the stored form of what no live version holds any more.
    fn purge_obsolete(&self);
}

/// What a flush target made of a memtable.
pub(crate) enum FlushStep<'a> {
    /// Written: install `FlushOutput::edit`.
    Written(Box<FlushOutput<'a>>),
    /// Not written: the next target takes the memtable.
    Pass,
    /// Not written, and no target should be tried now: the flush is retried once a
    /// compaction has run (the target's space is full, and a compaction may free some).
    Wait,
}

/// A flush's output, installed by the engine in one edit with the memtable's retirement.
pub(crate) struct FlushOutput<'a> {
    /// The new L0 table (none for an empty memtable) and the NVM objects it needs.
    pub edit: VersionEdit,
    /// For a table built through a table sink: (bytes written, data bytes encoded,
    /// nanoseconds encoding). Counted as flush bytes and L0 I/O.
    pub table: Option<(u64, u64, u64)>,
    /// Run once the install was tried, with whether it succeeded.
    pub after_install: Option<Box<dyn FnOnce(bool) + 'a>>,
}

/// What a flush produces: one of the designs' L0 formats. See the module documentation.
pub(crate) trait FlushTarget: Send + Sync + Debug {
    /// Writes `m` as a new L0 table (not installed yet).
    ///
    /// # Errors
    /// I/O or corruption while writing.
    fn write<'a>(
        &'a self,
        host: &'a dyn Host,
        m: &Arc<MemTable>,
        may_wait: bool,
    ) -> Result<FlushStep<'a>>;

    /// Whether the target's space fell short of room at its last write (a flush then
    /// waits for a compaction that may free some, when one is running or due).
    fn short_of_room(&self) -> bool {
        false
    }

    /// At open, before the engine runs: writes memtable `m` (replayed from a WAL) as a new
    /// L0 table, not installed (the open's edit names it); `None` to leave it to the next
    /// target. `new_id` gives new file numbers.
    ///
    /// # Errors
    /// I/O or corruption while writing.
    fn write_replayed(
        &self,
        _m: &Arc<MemTable>,
        _opts: &Options,
        _new_id: &dyn Fn() -> u64,
    ) -> Result<Option<TableMeta>> {
        Ok(None)
    }
}

/// What a full memtable hands over to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NextActive {
    /// A new DRAM memtable fed by a new WAL.
    Dram,
    /// A new NVM memtable (no WAL: its inserts are durable in place), if the pool has room.
    NvmIfRoom,
    /// A new NVM memtable if the pool has room for it and, beside it, for the NVM table
    /// its flush will write (a hand-over by choice, not to spare the writers a wait: one
    /// whose flush would find the pool full would write an SST at L0 and push NVM tables
    /// to SSD to make room above). Not made ahead as a spare.
    NvmIfAmpleRoom,
}

/// Where memtables live and go: what replaces a full active memtable, what happens to a
/// full memtable before the flush writes it to L0, what recovery keeps. The plain design
/// (the defaults): DRAM memtables fed by WALs, straight to L0.
pub(crate) trait MemtableDesign: Send + Sync + Debug {
    /// What replaces the full active memtable `full`; `dram_full`: the DRAM memtables
    /// are all taken (`max_write_buffer_number`), so a new DRAM memtable would make the
    /// writers wait for a flush.
    fn next_active(&self, _full: &MemTable, _dram_full: bool) -> NextActive {
        NextActive::Dram
    }

    /// Takes the immutable memtable `imm` somewhere other than L0 (returns true: it is
    /// flushed), or leaves it to the flush targets (returns false).
    ///
    /// # Errors
    /// I/O or corruption while moving it.
    fn absorb(&self, _host: &dyn Host, _imm: &Arc<MemTable>, _start: Instant) -> Result<bool> {
        Ok(false)
    }

    /// A new memtable of the design's own kind, numbered `number`, recorded in the
    /// manifest, for [`NextActive::NvmIfRoom`]: `None` when there is no room for one (the
    /// switch then makes a DRAM memtable). `follows`: the active memtable's number when
    /// the new one becomes the active one after it.
    ///
    /// # Errors
    /// Allocation, initialisation or the manifest record failed.
    fn new_memtable(
        &self,
        _host: &dyn Host,
        _number: u64,
        _follows: Option<u64>,
    ) -> Result<Option<MemTable>> {
        Ok(None)
    }

    /// Whether recovery puts NVM memtables mapped back (when all are older than the
    /// WALs' memtables) below the DRAM ones, as full memtables waiting for their flush.
    fn seals_recovered_nvm_memtables(&self) -> bool {
        false
    }

    /// Whether closed WALs are synced ahead of need from the start (their memtables'
    /// writes may otherwise wait on them).
    fn syncs_wals_ahead(&self) -> bool {
        false
    }

    /// Whether recovery keeps the WALs' memtables as memtables instead of writing them to
    /// L0 (`nvm_memtables_recovered`: NVM memtables were mapped back, which the WALs'
    /// memtables must stay above).
    fn keeps_recovered_memtables(&self, nvm_memtables_recovered: bool) -> bool {
        nvm_memtables_recovered
    }
}

/// Where a new WAL goes.
pub(crate) enum WalPlace {
    /// In NVM: the object (allocated, written, not recorded yet) and its writer.
    Nvm(NvmObject, WalWriter),
    /// A file, as the design asks.
    File,
    /// A file, because the design's place had no room (counted).
    FileFallback,
}

/// Where write-ahead logs live: files (the plain design) or NVM objects (MatrixKV's
/// `wal_on_nvm`).
pub(crate) trait WalPlacement: Send + Sync + Debug {
    /// Where WAL `number` goes; an NVM WAL is allocated and created here (its extent
    /// freed again if that fails) and recorded by the caller.
    ///
    /// # Errors
    /// Creating the NVM WAL failed.
    fn place(&self, _storage: &Storage, _opts: &Options, _number: u64) -> Result<WalPlace> {
        Ok(WalPlace::File)
    }

    /// Whether closed WALs are synced ahead of need from the start (an NVM WAL's sync
    /// costs nothing, and its writer must be gone before the flush releases its object).
    fn syncs_ahead(&self) -> bool {
        false
    }
}

/// The memtable design `opts` ask for.
fn memtable_design(opts: &Options) -> Box<dyn MemtableDesign> {
    match novelsm::NvmMemtables::for_options(opts) {
        Some(n) => Box::new(n),
        None => Box::new(leveldb::DramMemtables),
    }
}

/// Whether the options keep anything in NVM (the tier is opened only then, or when the
/// database already keeps objects there).
pub(crate) fn uses_nvm(opts: &Options) -> bool {
    novelsm::NvmMemtables::for_options(opts).is_some()
        || tlsm::records_nvm_refs(opts)
        || matrixkv::uses_nvm(opts)
}

/// Where WALs go under `opts`.
fn wal_placement(opts: &Options) -> Box<dyn WalPlacement> {
    match matrixkv::NvmWals::for_options(opts) {
        Some(w) => Box::new(w),
        None => Box::new(leveldb::FileWals),
    }
}

/// The components of an open database, assembled from its options.
#[derive(Debug)]
pub(crate) struct Design {
    targets: Vec<Box<dyn FlushTarget>>,
    memtables: Box<dyn MemtableDesign>,
    wals: Box<dyn WalPlacement>,
    policy: Arc<dyn CompactionPolicy>,
    records_nvm_refs: bool,
}

impl Design {
    /// The components `opts` ask for, over `storage` (whose NVM tier and matrix space
    /// exist when the options use them).
    pub(crate) fn assemble(opts: &Options, storage: &Storage) -> Design {
        let mut targets: Vec<Box<dyn FlushTarget>> = Vec::new();
        if let Some(t) = matrixkv::RowTarget::for_options(opts, storage) {
            targets.push(Box::new(t));
        }
        if let Some(t) = tlsm::NvmTableTarget::for_options(opts, storage) {
            targets.push(Box::new(t));
        }
        targets.push(Box::new(leveldb::SstTarget));
        let memtables = memtable_design(opts);
        // The levels' policy (TLSM's tiering over NVM tables, else leveled), under the
        // matrix container's column compactions when L0 is one.
        let levels =
            |o: &Options| tlsm::policy(o, storage.nvm()).unwrap_or_else(|| leveldb::policy(o));
        let policy = matrixkv::policy(opts, &levels).unwrap_or_else(|| levels(opts));
        Design {
            targets,
            memtables,
            wals: wal_placement(opts),
            policy,
            records_nvm_refs: tlsm::records_nvm_refs(opts),
        }
    }

    /// The flush targets, in the order they are tried.
    pub(crate) fn flush_targets(&self) -> &[Box<dyn FlushTarget>] {
        &self.targets
    }

    /// Whether a flush target's space is short of room (see [`FlushTarget::short_of_room`]).
    pub(crate) fn flush_short_of_room(&self) -> bool {
        self.targets.iter().any(|t| t.short_of_room())
    }

    /// What happens to a full memtable before L0.
    pub(crate) fn memtables(&self) -> &dyn MemtableDesign {
        self.memtables.as_ref()
    }

    /// Whether closed WALs are synced ahead of need from the start (the memtable design
    /// or the WAL placement asks).
    pub(crate) fn syncs_wals_ahead(&self) -> bool {
        self.memtables.syncs_wals_ahead() || self.wals.syncs_ahead()
    }

    /// Where WALs go.
    pub(crate) fn wals(&self) -> &dyn WalPlacement {
        self.wals.as_ref()
    }

    /// The compaction policy.
    pub(crate) fn policy(&self) -> &Arc<dyn CompactionPolicy> {
        &self.policy
    }

    /// What recovery does at open, once the engine is assembled and before its threads
    /// start: each design's repair of what a crash left half done. Every step runs
    /// whatever the options (an earlier open's options may have left its structures).
    ///
    /// # Errors
    /// As the steps.
    pub(crate) fn recover(&self, host: &dyn Host) -> Result<()> {
        tlsm_recovery::recover(host)
    }

    /// Fills the designs' sections of `s` (NVM tables, the matrix container) from the
    /// current version `v`, the counters `c` and `storage`.
    pub(crate) fn fill_stats(
        &self,
        s: &mut crate::stats::Stats,
        v: &crate::version::Version,
        c: &StatsCollector,
        storage: &Storage,
    ) {
        tlsm::fill_stats(s, v, c);
        matrixkv::fill_stats(s, v, c, storage);
    }

    /// Whether compactions record the NVM objects their outputs point into.
    pub(crate) fn records_nvm_refs(&self) -> bool {
        self.records_nvm_refs
    }
}
