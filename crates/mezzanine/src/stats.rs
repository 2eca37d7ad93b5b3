//! Statistics: counters, latency histograms, write amplification, stall time by cause.
//!
//! `Stats` is a plain snapshot struct for programs; `Display` renders it as the text of
//! `property("mezz.stats")`. The live counters are owned by the engine (see `StatsCollector`
//! below when implemented) and are updated with relaxed atomics: a `Stats` snapshot is
//! consistent per field, not across fields.

use serde::Serialize;

/// Files and bytes at one level, and the compaction traffic into it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LevelStats {
    /// Level number (0 = L0).
    pub level: usize,
    /// Live tables at this level.
    pub files: usize,
    /// Bytes of those tables.
    pub bytes: u64,
    /// Compactions whose output went to this level.
    pub compactions: u64,
    /// Bytes read by those compactions.
    pub bytes_read: u64,
    /// Bytes written by those compactions (or by flushes, for L0).
    pub bytes_written: u64,
}

/// Time writers spent delayed or stopped, by cause.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct StallStats {
    /// Delayed because L0 reached `level0_slowdown_trigger`.
    pub l0_slowdown_micros: u64,
    /// Stopped because L0 reached `level0_stop_trigger`.
    pub l0_stop_micros: u64,
    /// Stopped because `max_write_buffer_number` memtables were waiting for a flush.
    pub memtable_stop_micros: u64,
    /// Delayed because pending compaction bytes passed the soft limit.
    pub pending_bytes_slowdown_micros: u64,
    /// Stopped because pending compaction bytes passed the hard limit.
    pub pending_bytes_stop_micros: u64,
    /// Number of write groups that were delayed.
    pub delayed_writes: u64,
    /// Number of write groups that were stopped.
    pub stopped_writes: u64,
}

impl StallStats {
    /// Total stall time in microseconds, all causes.
    #[must_use]
    pub fn total_micros(&self) -> u64 {
        self.l0_slowdown_micros
            + self.l0_stop_micros
            + self.memtable_stop_micros
            + self.pending_bytes_slowdown_micros
            + self.pending_bytes_stop_micros
    }
}

/// A latency distribution summary, in nanoseconds.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct LatencySummary {
    /// Operations recorded.
    pub count: u64,
    /// Mean.
    pub mean_nanos: u64,
    /// Median.
    pub p50_nanos: u64,
    /// 99th percentile.
    pub p99_nanos: u64,
    /// 99.9th percentile.
    pub p999_nanos: u64,
    /// Maximum.
    pub max_nanos: u64,
}

/// A snapshot of the engine's statistics.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Stats {
    /// One entry per level.
    pub levels: Vec<LevelStats>,
    /// Bytes of keys and values accepted by `put`/`delete`/`write`.
    pub user_bytes_written: u64,
    /// Bytes appended to WAL files.
    pub wal_bytes_written: u64,
    /// WAL syncs performed (one per synced write group).
    pub wal_syncs: u64,
    /// Write groups committed (group commit: one WAL append per group).
    pub write_groups: u64,
    /// Bytes written to SSTs by flushes.
    pub flush_bytes_written: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Time spent in flushes.
    pub flush_micros: u64,
    /// Bytes read from SSTs by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written to SSTs by compactions.
    pub compaction_bytes_written: u64,
    /// Compactions completed (including trivial moves).
    pub compactions: u64,
    /// Compactions that only moved a table to the next level.
    pub trivial_moves: u64,
    /// Time spent in compactions.
    pub compaction_micros: u64,
    /// Stall time by cause.
    pub stalls: StallStats,
    /// Latency of `get`.
    pub get_latency: LatencySummary,
    /// Latency of `put` / `delete` / `write` (from the call to its return).
    pub write_latency: LatencySummary,
    /// Bytes of data blocks built (the encode step of flush and compaction).
    pub encode_bytes: u64,
    /// Time spent building data blocks.
    pub encode_micros: u64,
    /// Bytes of blocks read and checked from files (the decode step of reads).
    pub decode_bytes: u64,
    /// Time spent reading, checking and parsing blocks.
    pub decode_micros: u64,
    /// Block cache hits.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Table lookups skipped because the bloom filter said "absent".
    pub bloom_negatives: u64,
    /// The last sequence number assigned.
    pub last_sequence: u64,
    /// Bytes in the active memtable.
    pub memtable_bytes: u64,
    /// Immutable memtables waiting for a flush.
    pub immutable_memtables: usize,
    /// Live snapshots.
    pub snapshots: usize,
}

impl Stats {
    /// Bytes written to the SSD (WAL + flush + compaction) divided by user bytes written;
    /// 0 when nothing was written.
    #[must_use]
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.wal_bytes_written + self.flush_bytes_written + self.compaction_bytes_written) as f64
            / self.user_bytes_written as f64
    }

    /// Bytes written to SSTs (flush + compaction) divided by user bytes written.
    #[must_use]
    pub fn sst_write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.flush_bytes_written + self.compaction_bytes_written) as f64 / self.user_bytes_written as f64
    }
}
