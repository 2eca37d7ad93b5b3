//! The engine's own enum types of options. Their names in OPTIONS files are in `parse.rs`.
//!
//! Plain `Copy` values: freely shared between threads.

/// How recovery treats damage in the write-ahead log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RecoveryMode {
    /// A torn or corrupt *tail* of the newest log (what a crash during an append leaves) is
    /// dropped silently; corruption followed by valid records is an error. The default.
    #[default]
    TolerateCorruptTail,
    /// Any damage in any log is a `Corruption` error (paranoid).
    AbsoluteConsistency,
}

/// Whether and how a memtable lives in NVM (NoveLSM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NvmMemtable {
    /// No NVM memtable. The default.
    #[default]
    Off,
    /// A large NVM memtable below the DRAM memtable: each full DRAM memtable is merged into
    /// it (entry by entry, no serialisation); it is flushed to an SST when it fills.
    Immutable,
    /// When the DRAM memtable fills, writes go directly (in place, durably, without a WAL)
    /// into an NVM memtable while the DRAM one is flushed; when the NVM memtable fills it
    /// is flushed in turn and writes go to a new DRAM memtable.
    Mutable,
}
