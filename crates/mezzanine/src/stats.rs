//! Statistics: counters, latency histograms, write amplification, stall time by cause.
//!
//! `Stats` is a plain snapshot struct for programs; `Display` renders it as the text of
//! `property("mezz.stats")`. The live counters are owned by the engine (see `StatsCollector`
//! below) and are updated with relaxed atomics: a `Stats` snapshot is
//! consistent per field, not across fields.

use serde::Serialize;

/// Files and bytes at one level, and the compaction traffic into it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LevelStats {
    /// Level number (0 = L0).
    pub level: usize,
    /// Live tables at this level.
    pub files: usize,
    /// How many of them are NVM tables.
    pub nvm_files: usize,
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
    /// Bytes appended to WAL files (a WAL kept in NVM is in `nvm_bytes_written` instead).
    pub wal_bytes_written: u64,
    /// Bytes made durable on the NVM tier (persisted ranges: NVM WAL, NVM memtables, NVM
    /// tables). Zero without an NVM tier.
    pub nvm_bytes_written: u64,
    /// WAL syncs performed (one per synced write group).
    pub wal_syncs: u64,
    /// WALs made files although `wal_on_nvm` is set, because no free range of the NVM pool
    /// could hold one (the pool taken or cut up by other objects): as durable, slower.
    pub nvm_wal_fallbacks: u64,
    /// Time threads spent in the emulated cost of the NVM tier (`nvm_profile` and the
    /// per-line knobs): the spin-waits charged for its accesses, in microseconds. Zero
    /// without an NVM tier or with the `dram` profile and no knob.
    pub nvm_emulated_delay_micros: u64,
    /// Read accesses to the NVM tier charged by `nvm_profile` (0 with `dram`).
    pub nvm_emulated_read_accesses: u64,
    /// Read accesses to the NVM tier that the profile's CPU cache model served (not
    /// charged; 0 with `dram`).
    pub nvm_emulated_cache_hits: u64,
    /// Write accesses to the NVM tier charged by `nvm_profile` (persists and word stores;
    /// 0 with `dram`).
    pub nvm_emulated_write_accesses: u64,
    /// NVM memtables the last open dropped because a WAL older than them lost its tail
    /// after a power cut (their writes came after the lost ones and were not yet durable in
    /// the history; see docs/impl.md, "The NVM tier").
    pub nvm_memtables_dropped_at_open: u64,
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
    /// Compactions point reads triggered (`Options::seek_compaction`).
    pub seek_compactions: u64,
    /// Time spent in compactions.
    pub compaction_micros: u64,
    /// Stall time by cause.
    pub stalls: StallStats,
    /// Transactions committed (those with something to write or validate).
    pub txn_commits: u64,
    /// Transaction commits refused with `Busy` (a marked key written after its mark).
    pub txn_conflicts: u64,
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
    /// Bytes and SST I/O per SSD directory (parallel unit), database directory first.
    pub units: Vec<UnitStats>,
    /// NVM tables: the space their objects take and how much of it live tables use.
    pub nvm_tables: NvmTableStats,
    /// The matrix container (MatrixKV's L0): rows, pages, columns, hint use.
    pub matrix: MatrixStats,
    /// Where slow write groups spent their time (groups of 1 ms or more), and the slowest.
    pub slow_writes: SlowWriteStats,
    /// Where slow point reads spent their time (reads of 1 ms or more), and the slowest.
    pub slow_reads: SlowReadStats,
}

/// What one write group waited on, in microseconds (the trace of a slow request: a writer's
/// latency is its wait for the groups ahead of it plus its own group's).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct WriteTrace {
    /// The whole group, from taking the write lock (a batch written alone: from the
    /// write's call) to its publication.
    pub total: u64,
    /// Waiting for the engine's state lock (to check for room), held by another thread.
    pub state_lock: u64,
    /// Sleeping in a gradual slowdown.
    pub slowdown: u64,
    /// Waiting at a stop trigger (L0, pending bytes, no free memtable).
    pub stop: u64,
    /// Switching to a new memtable (creating its WAL or NVM memtable, recording it).
    pub switch: u64,
    /// Syncing older WALs before a `sync` write or an NVM memtable insert.
    pub older_wal_sync: u64,
    /// Appending to the WAL (with its sync for a `sync` group); timed from the group's
    /// start less the phases before it, so the rest of the room check counts here.
    pub wal: u64,
    /// Inserting into the memtable (DRAM or NVM), and for a DRAM memtable waiting for
    /// the groups logged before to be published.
    pub insert: u64,
}

impl WriteTrace {
    /// The phases a group may go through before its WAL append, in microseconds.
    #[must_use]
    pub fn before_wal(&self) -> u64 {
        self.state_lock
            .saturating_add(self.slowdown)
            .saturating_add(self.stop)
            .saturating_add(self.switch)
            .saturating_add(self.older_wal_sync)
    }

    /// The phase that took the longest, by name.
    #[must_use]
    pub fn main_cause(&self) -> &'static str {
        let phases = [
            ("state lock", self.state_lock),
            ("slowdown", self.slowdown),
            ("stop", self.stop),
            ("memtable switch", self.switch),
            ("older WAL sync", self.older_wal_sync),
            ("WAL append", self.wal),
            ("memtable insert", self.insert),
        ];
        let (name, t) = phases
            .iter()
            .max_by_key(|(_, t)| *t)
            .copied()
            .unwrap_or(("", 0));
        let accounted: u64 = phases.iter().map(|(_, t)| t).sum();
        if self.total.saturating_sub(accounted) > t {
            "other (locks, scheduling)"
        } else {
            name
        }
    }

    fn add(&mut self, o: &WriteTrace) {
        self.total += o.total;
        self.state_lock += o.state_lock;
        self.slowdown += o.slowdown;
        self.stop += o.stop;
        self.switch += o.switch;
        self.older_wal_sync += o.older_wal_sync;
        self.wal += o.wal;
        self.insert += o.insert;
    }
}

/// Slow write groups: how many, their phases summed, and the slowest few.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SlowWriteStats {
    /// Groups that took 1 ms or more.
    pub groups: u64,
    /// Their phases, summed.
    pub phases: WriteTrace,
    /// The slowest groups since open, slowest first (at most 8).
    pub slowest: Vec<WriteTrace>,
}

/// A request this slow (µs) or slower is kept in the slow-request traces.
pub const SLOW_MICROS: u64 = 1000;
/// Slowest requests kept per trace.
const KEEP_SLOWEST: usize = 8;

/// Inserts `t` into `slowest` (slowest first, by `total`), keeping at most `KEEP_SLOWEST`.
fn keep_slowest<T>(slowest: &mut Vec<T>, t: T, total: impl Fn(&T) -> u64) {
    let at = slowest.partition_point(|x| total(x) >= total(&t));
    if at < KEEP_SLOWEST {
        slowest.insert(at, t);
        slowest.truncate(KEEP_SLOWEST);
    }
}

impl SlowWriteStats {
    /// Records one group's trace.
    pub fn record(&mut self, t: WriteTrace) {
        if t.total < SLOW_MICROS {
            return;
        }
        self.groups += 1;
        self.phases.add(&t);
        keep_slowest(&mut self.slowest, t, |x| x.total);
    }
}

/// What one point read waited on, in microseconds (the trace of a slow request). Work a
/// parallel read did on pool threads counts as "other".
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct ReadTrace {
    /// The whole read.
    pub total: u64,
    /// Blocks read from table files (block cache misses), and the time in those reads.
    pub block_reads: u64,
    /// See `block_reads`.
    pub block_read: u64,
    /// Tables opened (table cache misses; their index and filter reads included), and the
    /// time it took.
    pub table_opens: u64,
    /// See `table_opens`.
    pub table_open: u64,
}

impl ReadTrace {
    /// The trace of a read that took `total` microseconds and waited `w`.
    #[must_use]
    pub fn new(total: u64, w: &mezz_util::trace::ReadWaits) -> ReadTrace {
        ReadTrace {
            total,
            block_reads: w.block_reads,
            block_read: w.block_read_nanos / 1000,
            table_opens: w.table_opens,
            table_open: w.table_open_nanos / 1000,
        }
    }

    /// What took the longest, by name: table opens (which include their own block reads),
    /// block reads, or neither ("other": memtables, cached blocks, the CPU, scheduling).
    #[must_use]
    pub fn main_cause(&self) -> &'static str {
        let reads_outside_opens = self.block_read.saturating_sub(self.table_open);
        let other = self
            .total
            .saturating_sub(self.table_open.max(self.block_read));
        if self.table_open >= reads_outside_opens && self.table_open >= other {
            "table open"
        } else if reads_outside_opens >= other {
            "block reads"
        } else {
            "other (CPU, scheduling)"
        }
    }

    fn add(&mut self, o: &ReadTrace) {
        self.total += o.total;
        self.block_reads += o.block_reads;
        self.block_read += o.block_read;
        self.table_opens += o.table_opens;
        self.table_open += o.table_open;
    }
}

/// Slow point reads: how many, their waits summed, and the slowest few.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SlowReadStats {
    /// Reads that took 1 ms or more.
    pub reads: u64,
    /// Their waits, summed.
    pub waits: ReadTrace,
    /// The slowest reads since open, slowest first (at most 8).
    pub slowest: Vec<ReadTrace>,
}

impl SlowReadStats {
    /// Records one read's trace (ignored unless it is slow).
    pub fn record(&mut self, t: ReadTrace) {
        if t.total < SLOW_MICROS {
            return;
        }
        self.reads += 1;
        self.waits.add(&t);
        keep_slowest(&mut self.slowest, t, |x| x.total);
    }
}

/// The matrix container of L0 (MatrixKV).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct MatrixStats {
    /// Bytes of the container (0 without one).
    pub capacity_bytes: u64,
    /// Bytes of its pages in use (rows, including drained pages a reader still pins).
    pub used_bytes: u64,
    /// Rows in L0, and those of them in the compactor.
    pub rows: usize,
    /// Rows being drained by column compactions.
    pub compactor_rows: usize,
    /// Live bytes of the rows.
    pub row_bytes: u64,
    /// Bytes flushes wrote into rows (NVM, not counted in `flush_bytes_written`).
    pub row_bytes_written: u64,
    /// Column compactions run.
    pub columns: u64,
    /// Rows point reads searched, and how many of them a cross-row hint narrowed.
    pub rows_searched: u64,
    /// See `rows_searched`.
    pub rows_hinted: u64,
    /// Key comparisons of point reads in rows.
    pub comparisons: u64,
    /// Rows iterator seeks searched, and how many of them a cross-row hint narrowed.
    pub seek_rows_searched: u64,
    /// See `seek_rows_searched`.
    pub seek_rows_hinted: u64,
    /// Key comparisons of iterator seeks in rows.
    pub seek_comparisons: u64,
}

/// The NVM space of NVM tables (TLSM).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct NvmTableStats {
    /// NVM objects (table indexes and buffers) the manifest lists.
    pub objects: usize,
    /// Bytes of those objects.
    pub allocated_bytes: u64,
    /// Bytes of them that live tables use: entries pointed at, plus the indexes.
    pub live_bytes: u64,
    /// Tables moved to SSD by LRU tiering.
    pub tier_moves: u64,
    /// Tables rewritten to free mostly dead NVM objects.
    pub rewrites: u64,
    /// SSTs at levels kept in NVM (written there for want of pool room) that returned
    /// into NVM tables once the pool had room.
    pub tier_returns: u64,
    /// Compactions into NVM tables that a crash interrupted and the last open resumed
    /// after the outputs they had written.
    pub resumed_compactions: u64,
    /// Bytes of data blocks that moves to SSD copied whole from persistent buffers.
    pub moved_block_bytes: u64,
    /// Bytes of data blocks that moves to SSD built entry by entry (encoded).
    pub moved_encoded_bytes: u64,
    /// Merges into a level the tiering keeps in NVM that wrote SSTs (all their outputs or
    /// the tail they spilled) because the pool had no room for NVM tables. Under `lru`
    /// every level is kept in NVM, so this is every merge that wrote SSTs.
    pub merges_to_ssd_for_room: u64,
    /// Bytes of the SSTs those merges wrote.
    pub bytes_to_ssd_for_room: u64,
    /// Bytes of NVM tables that those merges took as inputs and wrote to SSTs (a merge
    /// that spilled part of its output: in proportion to its SST bytes). Entries leave NVM
    /// this way without a tier move, and nothing brings them back, so this is one reason
    /// the NVM tables can hold less than the LRU budget.
    pub nvm_input_bytes_to_ssd: u64,
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
        (self.flush_bytes_written + self.compaction_bytes_written) as f64
            / self.user_bytes_written as f64
    }
}

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mezz_format::sst::{ReadCounter, ReadCounters};
use mezz_util::counter::{StripedCounters, thread_shard};

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Shards of a [`LatencyHistogram`]: each thread records into the shard of its index, so
/// threads reading or writing at the same time do not take turns on one lock (with one
/// lock, two reader threads spent 1.7 % of their time in `record`, its cache line moving
/// between the cores on every read).
const LATENCY_SHARDS: usize = 4;

/// One shard, on cache lines of its own; its histogram is made on first use, so a
/// single-threaded user pays for one.
#[derive(Debug, Default)]
#[repr(align(128))]
struct LatencyShard(Mutex<Option<Histogram<u64>>>);

/// A latency histogram (nanoseconds, 3 significant digits, 1 ns .. 1 hour), sharded by
/// thread.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    shards: [LatencyShard; LATENCY_SHARDS],
}

fn new_latency_histogram() -> Histogram<u64> {
    #[allow(clippy::expect_used)] // constant, valid bounds
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// The calling thread's shard (threads numbered as for the striped counters).
fn latency_shard() -> usize {
    thread_shard() % LATENCY_SHARDS
}

impl LatencyHistogram {
    /// Records one latency in nanoseconds (clamped to the histogram's range).
    pub fn record(&self, nanos: u64) {
        self.shards[latency_shard()]
            .0
            .lock()
            .get_or_insert_with(new_latency_histogram)
            .saturating_record(nanos.max(1));
    }

    /// Summarises the recorded latencies.
    #[must_use]
    pub fn summary(&self) -> LatencySummary {
        let mut h = new_latency_histogram();
        for shard in &self.shards {
            if let Some(s) = &*shard.0.lock() {
                // Same bounds: adding cannot fail.
                let _ = h.add(s);
            }
        }
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            mean_nanos: h.mean() as u64,
            p50_nanos: h.value_at_quantile(0.50),
            p99_nanos: h.value_at_quantile(0.99),
            p999_nanos: h.value_at_quantile(0.999),
            max_nanos: h.max(),
        }
    }
}

/// [`StatsCollector::writes`]: user bytes written.
pub const WRITE_USER_BYTES: usize = 0;
/// [`StatsCollector::writes`]: WAL bytes written (on SSD).
pub const WRITE_WAL_BYTES: usize = 1;
/// [`StatsCollector::writes`]: write groups committed.
pub const WRITE_GROUPS: usize = 2;

/// The live counters of one open DB, updated with relaxed atomics from any thread.
/// `Db::stats()` turns them, plus the current version's shape, into a [`Stats`].
#[derive(Debug, Default)]
#[allow(missing_docs)] // each field mirrors the `Stats` field of the same name
pub struct StatsCollector {
    /// What every write group adds (`user_bytes_written`, `wal_bytes_written`,
    /// `write_groups`: indexes [`WRITE_USER_BYTES`], [`WRITE_WAL_BYTES`],
    /// [`WRITE_GROUPS`]), striped by thread: two writers inserting at once would otherwise
    /// pass these counters' line between their cores on every write.
    pub writes: StripedCounters<3>,
    pub nvm_bytes_written: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub nvm_wal_fallbacks: AtomicU64,
    pub nvm_memtables_dropped_at_open: AtomicU64,
    pub flush_bytes_written: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_micros: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub compactions: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub seek_compactions: AtomicU64,
    pub compaction_micros: AtomicU64,
    pub nvm_tier_moves: AtomicU64,
    pub nvm_rewrites: AtomicU64,
    pub nvm_tier_returns: AtomicU64,
    pub nvm_resumed_compactions: AtomicU64,
    pub nvm_moved_block_bytes: AtomicU64,
    pub nvm_moved_encoded_bytes: AtomicU64,
    pub nvm_merges_to_ssd_for_room: AtomicU64,
    pub nvm_bytes_to_ssd_for_room: AtomicU64,
    pub nvm_input_bytes_to_ssd: AtomicU64,
    pub matrix_row_bytes_written: AtomicU64,
    pub matrix_columns: AtomicU64,
    pub l0_slowdown_micros: AtomicU64,
    pub l0_stop_micros: AtomicU64,
    pub memtable_stop_micros: AtomicU64,
    pub pending_bytes_slowdown_micros: AtomicU64,
    pub pending_bytes_stop_micros: AtomicU64,
    pub delayed_writes: AtomicU64,
    pub stopped_writes: AtomicU64,
    pub txn_commits: AtomicU64,
    pub txn_conflicts: AtomicU64,
    pub encode_bytes: AtomicU64,
    pub encode_micros: AtomicU64,
    /// The read counters every SST of the DB's table cache adds to (bytes read and decode
    /// time, block cache hits and misses: `decode_bytes`, `decode_micros`,
    /// `block_cache_hits`, `block_cache_misses`), read when a snapshot is taken. Striped
    /// by thread, as is `bloom_negatives`: readers add to them on every lookup.
    pub table_reads: Arc<ReadCounters>,
    pub bloom_negatives: StripedCounters<1>,
    /// Per output level: (compactions, bytes read, bytes written).
    pub level_compactions: Mutex<Vec<(u64, u64, u64)>>,
    pub get_latency: LatencyHistogram,
    pub write_latency: LatencyHistogram,
    pub slow_writes: Mutex<SlowWriteStats>,
    pub slow_reads: Mutex<SlowReadStats>,
}

impl StatsCollector {
    /// Adds `v` to a counter.
    #[inline]
    pub fn add(counter: &AtomicU64, v: u64) {
        counter.fetch_add(v, Ordering::Relaxed);
    }

    /// Counts one committed write group of `user_bytes` (keys and values).
    #[inline]
    pub fn record_group(&self, user_bytes: u64) {
        self.writes.add(WRITE_GROUPS, 1);
        self.writes.add(WRITE_USER_BYTES, user_bytes);
    }

    /// Records a compaction (or flush, for level 0) into `level`.
    pub fn record_level_io(&self, level: usize, bytes_read: u64, bytes_written: u64) {
        let mut v = self.level_compactions.lock();
        if v.len() <= level {
            v.resize(level + 1, (0, 0, 0));
        }
        if let Some(e) = v.get_mut(level) {
            e.0 += 1;
            e.1 += bytes_read;
            e.2 += bytes_written;
        }
    }

    /// Fills every counter-derived field of a `Stats` (levels' files/bytes, memtable and
    /// snapshot fields are left for the caller).
    #[must_use]
    pub fn snapshot(&self) -> Stats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let level_io = self.level_compactions.lock().clone();
        Stats {
            levels: level_io
                .iter()
                .enumerate()
                .map(
                    |(level, &(compactions, bytes_read, bytes_written))| LevelStats {
                        level,
                        files: 0,
                        nvm_files: 0,
                        bytes: 0,
                        compactions,
                        bytes_read,
                        bytes_written,
                    },
                )
                .collect(),
            user_bytes_written: self.writes.get(WRITE_USER_BYTES),
            wal_bytes_written: self.writes.get(WRITE_WAL_BYTES),
            nvm_bytes_written: g(&self.nvm_bytes_written),
            wal_syncs: g(&self.wal_syncs),
            nvm_wal_fallbacks: g(&self.nvm_wal_fallbacks),
            nvm_memtables_dropped_at_open: g(&self.nvm_memtables_dropped_at_open),
            write_groups: self.writes.get(WRITE_GROUPS),
            flush_bytes_written: g(&self.flush_bytes_written),
            flushes: g(&self.flushes),
            flush_micros: g(&self.flush_micros),
            compaction_bytes_read: g(&self.compaction_bytes_read),
            compaction_bytes_written: g(&self.compaction_bytes_written),
            compactions: g(&self.compactions),
            trivial_moves: g(&self.trivial_moves),
            seek_compactions: g(&self.seek_compactions),
            compaction_micros: g(&self.compaction_micros),
            stalls: StallStats {
                l0_slowdown_micros: g(&self.l0_slowdown_micros),
                l0_stop_micros: g(&self.l0_stop_micros),
                memtable_stop_micros: g(&self.memtable_stop_micros),
                pending_bytes_slowdown_micros: g(&self.pending_bytes_slowdown_micros),
                pending_bytes_stop_micros: g(&self.pending_bytes_stop_micros),
                delayed_writes: g(&self.delayed_writes),
                stopped_writes: g(&self.stopped_writes),
            },
            txn_commits: g(&self.txn_commits),
            txn_conflicts: g(&self.txn_conflicts),
            get_latency: self.get_latency.summary(),
            write_latency: self.write_latency.summary(),
            encode_bytes: g(&self.encode_bytes),
            encode_micros: g(&self.encode_micros),
            decode_bytes: self.table_reads.get(ReadCounter::BytesRead),
            decode_micros: self.table_reads.get(ReadCounter::DecodeNanos) / 1000,
            block_cache_hits: self.table_reads.get(ReadCounter::CacheHits),
            block_cache_misses: self.table_reads.get(ReadCounter::CacheMisses),
            bloom_negatives: self.bloom_negatives.get(0),
            slow_writes: self.slow_writes.lock().clone(),
            slow_reads: self.slow_reads.lock().clone(),
            ..Stats::default()
        }
    }
}

fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS.get(u).copied().unwrap_or("B"))
    }
}

fn fmt_latency(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    l: &LatencySummary,
) -> std::fmt::Result {
    let us = |n: u64| n as f64 / 1000.0;
    writeln!(
        f,
        "{name:<6} count {} mean {:.1} us  p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us",
        l.count,
        us(l.mean_nanos),
        us(l.p50_nanos),
        us(l.p99_nanos),
        us(l.p999_nanos),
        us(l.max_nanos)
    )
}

impl std::fmt::Display for Stats {
    /// The text of `property("mezz.stats")`: per-level shape and compaction IO, write
    /// amplification, stalls by cause, background work, latency percentiles, encode/decode
    /// cost and cache behaviour.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "** Levels **")?;
        writeln!(
            f,
            "{:<5} {:>6} {:>12} {:>11} {:>12} {:>12}",
            "level", "files", "size", "compactions", "read", "written"
        )?;
        for l in &self.levels {
            writeln!(
                f,
                "L{:<4} {:>6} {:>12} {:>11} {:>12} {:>12}",
                l.level,
                l.files,
                fmt_bytes(l.bytes),
                l.compactions,
                fmt_bytes(l.bytes_read),
                fmt_bytes(l.bytes_written)
            )?;
        }
        if self.nvm_tables.objects > 0 {
            let n = &self.nvm_tables;
            writeln!(
                f,
                "NVM tables: {} objects, {} allocated, {} live ({:.1} %), {} moved to SSD ({} of \
                 blocks copied, {} encoded), {} back from SSD, {} rewritten; {} merges wrote {} of SSTs for \
                 want of NVM room, {} of it from NVM tables",
                n.objects,
                fmt_bytes(n.allocated_bytes),
                fmt_bytes(n.live_bytes),
                100.0 * n.live_bytes as f64 / n.allocated_bytes.max(1) as f64,
                n.tier_moves,
                fmt_bytes(n.moved_block_bytes),
                fmt_bytes(n.moved_encoded_bytes),
                n.tier_returns,
                n.rewrites,
                n.merges_to_ssd_for_room,
                fmt_bytes(n.bytes_to_ssd_for_room),
                fmt_bytes(n.nvm_input_bytes_to_ssd)
            )?;
        }
        if self.matrix.capacity_bytes > 0 {
            let m = &self.matrix;
            writeln!(
                f,
                "Matrix L0: {} rows ({} compactor), {} live, pages {} of {} in use; {} written \
                 into rows, {} columns; reads searched {} rows ({} narrowed by hints), {} \
                 comparisons; seeks searched {} rows ({} narrowed), {} comparisons",
                m.rows,
                m.compactor_rows,
                fmt_bytes(m.row_bytes),
                fmt_bytes(m.used_bytes),
                fmt_bytes(m.capacity_bytes),
                fmt_bytes(m.row_bytes_written),
                m.columns,
                m.rows_searched,
                m.rows_hinted,
                m.comparisons,
                m.seek_rows_searched,
                m.seek_rows_hinted,
                m.seek_comparisons
            )?;
        }
        if self.units.len() > 1 {
            writeln!(f, "** Units **")?;
            writeln!(
                f,
                "{:<5} {:>6} {:>12} {:>10} {:>12} {:>10} {:>12}  path",
                "unit", "tables", "size", "reads", "read", "writes", "written"
            )?;
            for u in &self.units {
                writeln!(
                    f,
                    "{:<5} {:>6} {:>12} {:>10} {:>12} {:>10} {:>12}  {}",
                    u.path_id,
                    u.tables,
                    fmt_bytes(u.bytes),
                    u.reads,
                    fmt_bytes(u.read_bytes),
                    u.writes,
                    fmt_bytes(u.write_bytes),
                    u.path.display()
                )?;
            }
        }
        writeln!(f, "** Writes **")?;
        writeln!(
            f,
            "user bytes {}  WAL bytes {}  WAL syncs {}  write groups {}  last sequence {}",
            fmt_bytes(self.user_bytes_written),
            fmt_bytes(self.wal_bytes_written),
            self.wal_syncs,
            self.write_groups,
            self.last_sequence
        )?;
        if self.nvm_wal_fallbacks > 0 {
            writeln!(
                f,
                "WALs in files for want of NVM room {}",
                self.nvm_wal_fallbacks
            )?;
        }
        if self.nvm_memtables_dropped_at_open > 0 {
            writeln!(
                f,
                "NVM memtables dropped at open (an older WAL lost its tail) {}",
                self.nvm_memtables_dropped_at_open
            )?;
        }
        if self.nvm_emulated_delay_micros > 0 {
            writeln!(
                f,
                "emulated NVM cost {:.3} s  read accesses {} (CPU cache hits {})  write accesses {}",
                self.nvm_emulated_delay_micros as f64 / 1e6,
                self.nvm_emulated_read_accesses,
                self.nvm_emulated_cache_hits,
                self.nvm_emulated_write_accesses
            )?;
        }
        writeln!(
            f,
            "write amplification {:.2} (SST only {:.2})",
            self.write_amplification(),
            self.sst_write_amplification()
        )?;
        writeln!(
            f,
            "memtable {}  immutable memtables {}  snapshots {}",
            fmt_bytes(self.memtable_bytes),
            self.immutable_memtables,
            self.snapshots
        )?;
        writeln!(f, "** Background **")?;
        writeln!(
            f,
            "flushes {}  flush written {}  flush time {:.3} s",
            self.flushes,
            fmt_bytes(self.flush_bytes_written),
            self.flush_micros as f64 / 1e6
        )?;
        writeln!(
            f,
            "compactions {} (trivial moves {}, triggered by reads {})  read {}  written {}  \
             time {:.3} s",
            self.compactions,
            self.trivial_moves,
            self.seek_compactions,
            fmt_bytes(self.compaction_bytes_read),
            fmt_bytes(self.compaction_bytes_written),
            self.compaction_micros as f64 / 1e6
        )?;
        let s = &self.stalls;
        writeln!(f, "** Stalls **")?;
        writeln!(
            f,
            "total {:.3} s  delayed groups {}  stopped groups {}",
            s.total_micros() as f64 / 1e6,
            s.delayed_writes,
            s.stopped_writes
        )?;
        writeln!(
            f,
            "L0 slowdown {:.3} s  L0 stop {:.3} s  memtable stop {:.3} s  pending-bytes slowdown {:.3} s  pending-bytes stop {:.3} s",
            s.l0_slowdown_micros as f64 / 1e6,
            s.l0_stop_micros as f64 / 1e6,
            s.memtable_stop_micros as f64 / 1e6,
            s.pending_bytes_slowdown_micros as f64 / 1e6,
            s.pending_bytes_stop_micros as f64 / 1e6
        )?;
        if self.txn_commits + self.txn_conflicts > 0 {
            writeln!(
                f,
                "** Transactions **\ncommitted {}  refused (Busy) {}",
                self.txn_commits, self.txn_conflicts
            )?;
        }
        writeln!(f, "** Latency **")?;
        fmt_latency(f, "get", &self.get_latency)?;
        fmt_latency(f, "write", &self.write_latency)?;
        let w = &self.slow_writes;
        if w.groups > 0 {
            let p = &w.phases;
            writeln!(
                f,
                "slow write groups (>= 1 ms) {}: {:.3} s in all: state lock {:.3} s, slowdown \
                 {:.3} s, stop {:.3} s, memtable switch {:.3} s, older WAL sync {:.3} s, WAL \
                 append {:.3} s, memtable insert {:.3} s",
                w.groups,
                p.total as f64 / 1e6,
                p.state_lock as f64 / 1e6,
                p.slowdown as f64 / 1e6,
                p.stop as f64 / 1e6,
                p.switch as f64 / 1e6,
                p.older_wal_sync as f64 / 1e6,
                p.wal as f64 / 1e6,
                p.insert as f64 / 1e6
            )?;
            for t in w.slowest.iter().take(3) {
                writeln!(f, "  {} us, mostly {}", t.total, t.main_cause())?;
            }
        }
        let r = &self.slow_reads;
        if r.reads > 0 {
            let w = &r.waits;
            writeln!(
                f,
                "slow reads (>= 1 ms) {}: {:.3} s in all: {} table opens {:.3} s, {} block reads \
                 {:.3} s",
                r.reads,
                w.total as f64 / 1e6,
                w.table_opens,
                w.table_open as f64 / 1e6,
                w.block_reads,
                w.block_read as f64 / 1e6
            )?;
            for t in r.slowest.iter().take(3) {
                writeln!(f, "  {} us, mostly {}", t.total, t.main_cause())?;
            }
        }
        writeln!(f, "** Encode / decode **")?;
        writeln!(
            f,
            "encode {} in {:.3} s  decode {} in {:.3} s",
            fmt_bytes(self.encode_bytes),
            self.encode_micros as f64 / 1e6,
            fmt_bytes(self.decode_bytes),
            self.decode_micros as f64 / 1e6
        )?;
        let lookups = self.block_cache_hits + self.block_cache_misses;
        let hit_rate = if lookups == 0 {
            0.0
        } else {
            self.block_cache_hits as f64 * 100.0 / lookups as f64
        };
        writeln!(
            f,
            "block cache hits {}  misses {} ({hit_rate:.1} % hits)  bloom negatives {}",
            self.block_cache_hits, self.block_cache_misses, self.bloom_negatives
        )
    }
}

/// One SSD directory's share of the database, for `Db::stats` and `mezz stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnitStats {
    /// The directory index (`0` = the database directory).
    pub path_id: u32,
    /// The directory.
    pub path: std::path::PathBuf,
    /// Tables the current version keeps there.
    pub tables: u64,
    /// Their bytes.
    pub bytes: u64,
    /// SST reads since open (block reads, footer and index reads).
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// SST appends since open.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
}

#[cfg(test)]
mod display_tests {
    use super::*;

    #[test]
    fn display_names_every_section() {
        let s = Stats {
            levels: vec![LevelStats {
                level: 0,
                files: 3,
                bytes: 3 << 20,
                ..LevelStats::default()
            }],
            user_bytes_written: 100,
            wal_bytes_written: 120,
            flush_bytes_written: 80,
            ..Stats::default()
        };
        let t = s.to_string();
        for needle in [
            "L0",
            "3.0 MiB",
            "write amplification 2.00",
            "Stalls",
            "p99",
            "block cache",
            "encode",
        ] {
            assert!(t.contains(needle), "missing {needle:?} in\n{t}");
        }
    }
}

#[cfg(test)]
mod slow_write_tests {
    use super::*;

    fn trace(total: u64, stop: u64, wal: u64) -> WriteTrace {
        WriteTrace {
            total,
            stop,
            wal,
            ..WriteTrace::default()
        }
    }

    #[test]
    fn slow_groups_are_counted_summed_and_the_slowest_kept_in_order() {
        let mut s = SlowWriteStats::default();
        s.record(trace(999, 900, 0));
        assert_eq!(s.groups, 0, "under 1 ms is not slow");
        for i in 0..20u64 {
            s.record(trace(1000 + i * 100, i * 100, 1000));
        }
        assert_eq!(s.groups, 20);
        assert_eq!(s.phases.wal, 20 * 1000);
        assert_eq!(s.phases.stop, (0..20).map(|i| i * 100).sum::<u64>());
        let totals: Vec<u64> = s.slowest.iter().map(|t| t.total).collect();
        assert_eq!(
            totals,
            (12..20).rev().map(|i| 1000 + i * 100).collect::<Vec<_>>()
        );
        assert_eq!(s.slowest[0].main_cause(), "stop");
        assert_eq!(trace(5000, 100, 4000).main_cause(), "WAL append");
        assert_eq!(
            trace(5000, 100, 100).main_cause(),
            "other (locks, scheduling)"
        );
    }

    #[test]
    fn latency_shards_add_up_to_one_summary() {
        let h = LatencyHistogram::default();
        assert_eq!(h.summary().count, 0);
        std::thread::scope(|s| {
            for t in 0..6u64 {
                let h = &h;
                s.spawn(move || {
                    for i in 1..=1000u64 {
                        h.record(i * 1000 + t);
                    }
                });
            }
        });
        h.record(5_000_000);
        let sum = h.summary();
        assert_eq!(sum.count, 6001);
        assert!(
            sum.max_nanos >= 5_000_000 && sum.max_nanos < 5_010_000,
            "{sum:?}"
        );
        // Half the records are at or below 500 µs.
        assert!((495_000..=505_000).contains(&sum.p50_nanos), "{sum:?}");
        let used = h.shards.iter().filter(|s| s.0.lock().is_some()).count();
        assert!(used > 1, "several threads, several shards");
    }

    fn read(total: u64, block_read: u64, table_open: u64) -> ReadTrace {
        ReadTrace {
            total,
            block_reads: 1,
            block_read,
            table_opens: u64::from(table_open > 0),
            table_open,
        }
    }

    #[test]
    fn slow_reads_are_counted_and_named_by_what_they_waited_on() {
        let mut s = SlowReadStats::default();
        s.record(read(999, 900, 0));
        assert_eq!(s.reads, 0, "under 1 ms is not slow");
        for i in 0..10u64 {
            s.record(read(1000 + i, 10, 0));
        }
        assert_eq!(s.reads, 10);
        assert_eq!(s.waits.block_read, 100);
        assert_eq!(s.slowest.len(), 8);
        assert_eq!(s.slowest[0].total, 1009);
        // A table open includes its own block reads.
        assert_eq!(read(3000, 2500, 2400).main_cause(), "table open");
        assert_eq!(read(3000, 2500, 100).main_cause(), "block reads");
        assert_eq!(read(3000, 200, 0).main_cause(), "other (CPU, scheduling)");
    }
}
