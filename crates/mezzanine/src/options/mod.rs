//! Options: one struct for the whole engine, its presets, validation, and the text form
//! written to the `OPTIONS-<n>` file and embedded in every benchmark result.
//!
//! Every option is declared once, in the table below: name, type, default (the `leveldb`
//! preset), docs, codec (how its value is written and parsed) and, optionally, a check on
//! its value alone. The struct, `Default`, `get`, `set`, `Options::FIELDS` and the text form
//! are generated from it (`declare.rs`); checks that relate several fields are written by
//! hand in `validate.rs`. `Options::set("name", "value")` parses one field by name (the
//! CLI's `--opt k=v`), and `Options::to_text()` / `Options::from_text()` round-trip every
//! serialisable field.
//!
//! `Options` is plain data, `Clone + Send + Sync`; a database keeps its own copy.

#[macro_use]
mod declare;
mod derived;
mod parse;
mod presets;
mod read_write;
mod text;
mod validate;
mod values;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use mezz_env::{FileSystem, PosixFs};
pub use mezz_format::block::BlockFormat;
pub use mezz_format::compress::Compression;
pub use mezz_pmem::{NvmProfile, PersistMode, SimNvm};

use self::declare::{count_serialised, serialised_names};
use self::parse::{Codec, Dir, Dirs, Flag, Float, Name, PerLevel, Size, Tiering};
use self::text::unknown_option;
use crate::error::{Error, Result};

pub use self::presets::Preset;
pub use self::read_write::{ReadOptions, Snapshot, WriteOptions};
pub use self::values::{
    CompactionPri, LevelCompression, NvmMemtable, NvmTableMethod, NvmTiering, PlacementPolicy,
    RecoveryMode,
};

/// The most levels a database can have (`num_levels`).
pub const MAX_NUM_LEVELS: usize = 32;

/// The most bytes of batches one group commit takes (a WAL in NVM is sized to hold one
/// such group beyond a memtable's worth of records).
pub const MAX_GROUP_BYTES: usize = 1 << 20;

const MIB: usize = 1 << 20;

/// Every file the default file system writes (WALs, tables, manifests) has the kernel start
/// writing back each further this many bytes (`sync_file_range`), so the `fdatasync` that
/// ends it waits for at most about this much: a NoveLSM switch to the NVM memtable syncs the
/// 64 MiB WAL before it, which took 33-55 ms without and under 1 ms with. For WALs and
/// manifests the requests run on a helper thread, not on the writer: started by the WAL
/// writer itself, they woke the block layer's workers on its CPU, which then preempted it.
/// Tables start their own, on the background threads that write them. A WAL that nothing
/// will sync (no NVM memtables, no WALs in NVM, no `sync` write yet) starts none: deleted
/// within the kernel's writeback delay, it never reaches the disk.
pub const DEFAULT_BYTES_PER_SYNC: u64 = 1 << 20;

declare_options! {
    /// Every option of the engine. Build with `Options::default()` or `Options::preset(..)`,
    /// adjust fields, and pass to `Db::open`; `Db::open` calls [`Options::validate`].
    #[derive(Clone)]
    pub struct Options {
        /// The design this configuration starts from. Default: `Preset::Leveldb`.
        preset: Preset = Preset::Leveldb, Name;
        /// The file system all I/O goes through (tests pass an in-memory or fault-injecting
        /// one). Default: the real file system, passing write-lifetime hints on and starting
        /// writeback every [`DEFAULT_BYTES_PER_SYNC`] bytes written to a file (for WALs and
        /// manifests on a helper thread), and able to write WALs (`wal_mmap`) and read
        /// tables (`mmap_reads`) through memory mappings. Not written to the OPTIONS file.
        fs: Arc<dyn FileSystem> = Arc::new(
            PosixFs::with_write_hints(mezz_pmem::hint::set_write_life_hint)
                .with_background_writeback(
                    mezz_pmem::hint::start_writeback,
                    DEFAULT_BYTES_PER_SYNC,
                )
                .with_mapped_logs(mezz_pmem::mapfile::map_window, mezz_pmem::mapfile::allocate)
                .with_mapped_reads(mezz_pmem::mapfile::map_read),
        ), Internal;
        /// Where the info log goes: `None` for the `LOG` file in the database directory
        /// (the previous one kept as `LOG.old.<micros>`), or a caller's logger. Not written
        /// to the OPTIONS file. Default: `None`.
        info_log: Option<Arc<dyn crate::info_log::Logger>> = None, Internal;
        /// The order of keys: `None` for bytewise (LevelDB's
        /// `leveldb.BytewiseComparator`), or a caller's [`mezz_format::Comparator`]. Its
        /// name is recorded in the manifest when the database is created and checked at
        /// every open ("comparator name mismatch"). Not written to the OPTIONS file.
        /// Default: `None`.
        comparator: Option<Arc<dyn mezz_format::Comparator>> = None, Internal;

        // ---- opening ----
        /// Create the database if it does not exist. Default: true.
        create_if_missing: bool = true, Flag;
        /// Fail if the database already exists. Default: false.
        error_if_exists: bool = false, Flag;
        /// Verify every checksum on every read, including compaction inputs, and treat any WAL
        /// damage as an error. Default: false (block checksums are still verified on every read
        /// from the file system; this adds whole-file checks on open).
        paranoid_checks: bool = false, Flag;
        /// How recovery treats a damaged WAL. Default: `TolerateCorruptTail`.
        recovery_mode: RecoveryMode = RecoveryMode::TolerateCorruptTail, Name;

        // ---- write path ----
        /// Bytes of the DRAM memtable before it is switched to immutable and flushed.
        /// Default: 64 MiB.
        write_buffer_size: usize = 64 * MIB, Size,
            check |v| *v >= 4096, "{v} < 4096";
        /// Memtables (mutable + immutable) kept in memory before writes stop to wait for a flush.
        /// Default: 2.
        max_write_buffer_number: usize = 2, Size,
            check |v| *v >= 2, "must be >= 2";
        /// Write a WAL. Without it, writes since the last flush are lost on a crash. Default: true.
        use_wal: bool = true, Flag;
        /// Append to WAL files through a shared memory mapping of space reserved 1 MiB at a
        /// time, instead of one `write` system call per write group (RocksDB's
        /// `allow_mmap_writes`, for logs only). An append is then a copy into the page
        /// cache: it survives a crash of the process as a `write` does, and `sync` is the
        /// same `fdatasync`. After a crash the newest WAL ends in zeros, which recovery
        /// drops as a torn tail; so it applies only where a torn tail is tolerated
        /// (`recovery_mode = tolerate_corrupt_tail`, no `paranoid_checks`), and only on a
        /// file system that maps logs (the default one does). Default: true.
        wal_mmap: bool = true, Flag;

        // ---- tables ----
        /// Read SST files through a read-only memory mapping of each whole file instead of
        /// one `pread` per block (RocksDB's `allow_mmap_reads`; LevelDB maps its tables on
        /// 64-bit machines). A block read is then a copy from the page cache without a
        /// system call, and the pages read stay mapped into the process, which keeps them
        /// out of the reach of a kernel that pages out cold, unmapped page cache by itself
        /// (DAMON's `pageout`, as on this project's test machine). Each open table holds
        /// one mapping (`max_open_files` bounds them); a table file shortened by another
        /// program while open is a `SIGBUS` on the next read of its lost pages, not an
        /// error. Only on a file system that maps reads (the default one does; others
        /// read the ordinary way). Default: false.
        mmap_reads: bool = false, Flag;
        /// Read SST files with direct I/O (`O_DIRECT`), bypassing the operating system's
        /// page cache (RocksDB's `use_direct_reads`): the block cache is then the only DRAM
        /// that holds table data, and a block it misses is read from the device. Compaction
        /// inputs and `verify` read 2 MiB at a time (RocksDB's
        /// `compaction_readahead_size` with direct I/O); point reads and user scans read one
        /// block at a time. Cannot be combined with `mmap_reads`. On a file system that
        /// refuses `O_DIRECT`, `Db::open` fails with `InvalidArgument` naming the option and
        /// the directory. Only on a file system that reads directly (the default one does;
        /// others read the ordinary way). Default: false.
        use_direct_reads: bool = false, Flag;
        /// Write the SST files of flushes and compactions with direct I/O (`O_DIRECT`),
        /// bypassing the page cache (RocksDB's `use_direct_io_for_flush_and_compaction`):
        /// each table is written 1 MiB at a time from an aligned buffer, its last block
        /// padded and the file then truncated to its length. WALs, the MANIFEST and the
        /// other metadata files stay buffered. On a file system that refuses `O_DIRECT`,
        /// `Db::open` fails as for `use_direct_reads`. Default: false.
        use_direct_io_for_flush_and_compaction: bool = false, Flag;
        /// Target size of a data block before compression, in bytes. Default: 4096.
        block_size: usize = 4096, Size,
            check |v| (256..=64 * MIB).contains(v), "{v} not in 256..=64MiB";
        /// Layout of data blocks: the unified, 8-byte aligned KeySet block (searchable in place)
        /// or LevelDB's prefix-compressed block. Default: `BlockFormat::KeySet`.
        block_format: BlockFormat = BlockFormat::KeySet, Name;
        /// Keys between restart points in prefix-compressed blocks. Default: 16.
        block_restart_interval: usize = 16, Size,
            check |v| *v >= 1, "must be >= 1";
        /// Bloom filter bits per key (0 disables filters). Default: 10.
        bloom_bits_per_key: u32 = 10, Size,
            check |v| *v <= 64, "{v} > 64";
        /// Compression of SST data blocks, per level: `none`, `lz4` or `zstd` for every
        /// level, or a comma-separated list with one entry per level from L0, the last
        /// entry repeating for deeper levels (e.g. `none,none,lz4,lz4,zstd`). A block is
        /// stored compressed only if that saves at least 12.5 %; index, filter and
        /// properties blocks are never compressed. Tables in the NVM tier (memtables, WALs)
        /// are not SSTs and are never compressed. Default: `none` (tables are written as
        /// without compression).
        compression: LevelCompression = LevelCompression::none(), PerLevel;
        /// Zstd compression level for levels whose `compression` is `zstd` (1 fastest ..=
        /// 22 smallest). Default: 3, the library's default.
        zstd_level: u32 = 3, Size,
            check |v| (1..=22).contains(v), "{v} not in 1..=22";
        /// Capacity of the block cache in bytes (0 disables it). Default: 8 MiB.
        block_cache_capacity: usize = 8 * MIB, Size;
        /// Most tables open at once: half are kept in the table cache, half pinned by point
        /// reads to the versions that name them (see docs/impl.md). Default: 1000.
        max_open_files: usize = 1000, Size,
            check |v| *v >= 16, "{v} < 16";
        /// Target size of an SST written by compaction. Default: 64 MiB.
        target_file_size: u64 = 64 << 20, Size,
            check |v| *v >= 4096, "{v} < 4096";
        /// More SSD directories for table files, each a parallel unit (its own device, or a
        /// directory the device model maps to one): new tables go to these instead of the
        /// database directory, which keeps the WALs and metadata. Their order must stay the
        /// same from one open to the next (each holds a `UNIT` file naming its position).
        /// Written comma-separated. Default: none (tables in the database directory).
        ssd_paths: Vec<PathBuf> = Vec::new(), Dirs;
        /// How new tables are spread over `ssd_paths`: `striped`, `per_file` or `isolated`
        /// (see `crate::placement`). Default: `isolated`.
        placement: PlacementPolicy = PlacementPolicy::Isolated, Name;
        /// How many of the first `ssd_paths` are wide units (their device spreads each of
        /// them over several parallel units): `isolated` places L0 and L1 tables (small,
        /// hot, written by every flush) there and deeper tables on the others; fewer than
        /// `ssd_paths` (ignored without them). Default: 0.
        placement_wide_paths: usize = 0, Size;
        /// Under `isolated`: a table written to a unit that holds live tables (so serves
        /// foreground reads) is synced every this many bytes while it is written, so at most
        /// this much of its writes is queued on the unit ahead of a read; a unit with no live
        /// table is written unpaced. 0: never paced. Ignored without `ssd_paths`.
        /// Default: 64 KiB.
        placement_write_pace: u64 = 64 << 10, Size;

        // ---- compaction ----
        /// Number of levels. Default: 7.
        num_levels: usize = 7, Size,
            check |v| (2..=MAX_NUM_LEVELS).contains(v), "{v} not in 2..={MAX_NUM_LEVELS}";
        /// Number of L0 tables that triggers an L0→L1 compaction. Default: 4.
        level0_compaction_trigger: usize = 4, Size,
            check |v| *v >= 1, "must be >= 1";
        /// Number of L0 tables at which writes start to be slowed down (gradually, more as L0
        /// grows). Default: 20.
        level0_slowdown_trigger: usize = 20, Size;
        /// Number of L0 tables at which writes stop until compaction catches up. Default: 36.
        level0_stop_trigger: usize = 36, Size;
        /// Target size of L1 in bytes. Default: 256 MiB.
        max_bytes_for_level_base: u64 = 256 << 20, Size,
            check |v| *v >= 4096, "must be >= 4096";
        /// Size ratio between adjacent levels. Default: 10.
        max_bytes_for_level_multiplier: f64 = 10.0, Float,
            check |v| (2.0..=1000.0).contains(v), "{v} not in 2..=1000";
        /// Which table of a level over its target is compacted next:
        /// `min_overlapping_ratio` (the one whose overlap with the next level is the
        /// smallest share of its size, RocksDB's default) or `round_robin` (LevelDB's).
        /// Default: `CompactionPri::MinOverlappingRatio`.
        compaction_pri: CompactionPri = CompactionPri::MinOverlappingRatio, Name;
        /// Read-triggered compaction (LevelDB's seek compaction): a table that point reads
        /// consulted without finding their key, then had to look below, is compacted into
        /// the next level once that happened `max(100, size / 16 KiB)` times (a wasted
        /// table search costs about as much as compacting 16 KiB), when no compaction is
        /// due for size. A probe its bloom filter answered is not counted (LevelDB counts
        /// it): it costs little.
        /// Default: true, as in LevelDB and the designs built on it (`leveldb`, `novelsm`,
        /// `tlsm`); false in `matrixkv` (RocksDB's design has none) and `mezzanine`.
        seek_compaction: bool = true, Flag;
        /// Estimated bytes of pending compaction at which writes start to be slowed down.
        /// Default: 64 GiB.
        soft_pending_compaction_bytes: u64 = 64 << 30, Size;
        /// Estimated bytes of pending compaction at which writes stop. Default: 256 GiB.
        hard_pending_compaction_bytes: u64 = 256 << 30, Size;
        /// Lowest write rate (bytes/s) a slowdown starts from: it starts from this or the
        /// rate writes ran at before it, whichever is higher, and falls as the debt grows
        /// toward the stop. Default: 16 MiB/s.
        delayed_write_rate: u64 = 16 << 20, Size,
            check |v| *v > 0, "must be > 0";
        /// Background threads for flushes and compactions. Default: 2.
        max_background_jobs: usize = 2, Size,
            check |v| (1..=64).contains(v), "{v} not in 1..=64";
        /// Nice value (0-19, Linux) the compaction threads and the thread that frees dropped
        /// memtables run at. With two background threads or more, the first runs only
        /// flushes (what writers may wait on) at the process's priority and the others only
        /// compactions; a single thread runs both at the process's priority. A higher value
        /// lets a foreground request take a core at once instead of waiting a scheduler time
        /// slice behind a compaction (docs/benchmarks.md: on 2 cores the open-loop p99.9 fell
        /// from milliseconds to hundreds of microseconds); 0 leaves them at the process's
        /// priority. Compactions still get any core the foreground leaves idle. Default: 19
        /// (RocksDB's `CpuPriority::kLow`).
        background_nice: usize = 19, Size,
            check |v| *v <= 19, "{v} > 19";

        // ---- NVM tier (see docs/formats/nvm-pool.md) ----
        /// Directory of the NVM pool file (a DAX mount, `/dev/shm`, or any directory).
        /// Default: none (no NVM tier).
        nvm_dir: Option<PathBuf> = None, Dir;
        /// Bytes of the NVM pool (rounded up to 4 KiB). Default: 1 GiB.
        nvm_capacity: u64 = 1 << 30, Size;
        /// How NVM writes become durable: `adr` (cache-line flushes + fence; needs a DAX
        /// mapping unless `nvm_emulate_adr`), `eadr` (fence only), `msync` (any file system;
        /// on tmpfs or ramfs, such as `/dev/shm`, where `msync` does nothing, it flushes cache
        /// lines and fences as `adr` does instead), `volatile` (nothing is made durable: NVM contents survive a process crash on a
        /// mapped file, not a power cut — for CXL/DRAM-like media; keep the WAL on the SSD and
        /// no NVM memtable if power cuts matter) or `crashsim` (tests). Default: `msync`.
        nvm_persistence: PersistMode = PersistMode::Msync, Name;
        /// Run `adr` on a mapping without MAP_SYNC (e.g. `/dev/shm`) so benchmarks pay the flush
        /// cost; data is then only as durable as the file system makes it. Default: false.
        nvm_emulate_adr: bool = false, Flag;
        /// The cost the NVM tier charges, as a named device profile applied to every access
        /// of every structure in the pool (WALs, memtables, NVM tables, the matrix): `dram`
        /// (no cost), `optane` (one Optane DC module: 305 ns random reads, 256-byte
        /// internal accesses, 6.6 GB/s reads and 2.3 GB/s writes shared by all threads),
        /// `optane-6` (six interleaved modules: 39.4 / 13.9 GB/s) or `cxl` (a CXL memory
        /// expander: 80 ns more than DRAM per access, 64-byte lines). The emulation spins
        /// the accessing thread; `Stats::nvm_emulated_delay_micros` counts it. Figures,
        /// sources and the model: docs/impl.md, "Emulated NVM cost". Default: `dram`.
        nvm_profile: NvmProfile = NvmProfile::Dram, Name;
        /// Emulated extra latency per 64-byte line read from NVM, in ns, added to what
        /// `nvm_profile` charges. Default: 0 (off).
        nvm_read_latency_ns: u32 = 0, Size;
        /// Emulated extra latency per 64-byte line written to NVM, in ns, added to what
        /// `nvm_profile` charges. Default: 0 (off).
        nvm_write_latency_ns: u32 = 0, Size;
        /// Emulated cap on NVM persist bandwidth, bytes/s, enforced on persists apart from
        /// `nvm_profile`'s write bandwidth. Default: 0 (unlimited).
        nvm_persist_bandwidth: u64 = 0, Size;
        /// Touch every page of the pool when opening it, so first-touch page faults are not
        /// paid on the write path (a new page of a memory file system is allocated and
        /// cleared on its first write, up to milliseconds per MiB in a virtual machine;
        /// persistent memory pays nothing there). Default: true.
        nvm_prefault: bool = true, Flag;
        /// The simulated NVM for `nvm_persistence = crashsim` (tests). Not written to the
        /// OPTIONS file. Default: none.
        nvm_sim: Option<SimNvm> = None, Internal;
        /// Deterministic background work (tests): no background threads are started. Flushes
        /// and compactions run only inside [`crate::Db::run_background_work`], or inline in a
        /// call that would otherwise wait for them (a writer at a stop trigger or without a
        /// free memtable, `flush`, `compact_range`, `wait_for_background`). A test that
        /// chooses those points from its seed replays every interleaving exactly. Not written
        /// to the OPTIONS file. Default: false.
        manual_background: bool = false, Internal;
        /// Keep the WAL in NVM (same record format, persisted per group commit) instead of the
        /// SSD. A WAL for which the pool has no free range is a file on the SSD instead
        /// (`Stats::nvm_wal_fallbacks`). Needs `nvm_dir`. Default: false.
        wal_on_nvm: bool = false, Flag;
        /// NoveLSM's NVM memtable. Needs `nvm_dir`. Default: `off`.
        nvm_memtable: NvmMemtable = NvmMemtable::Off, Name;
        /// Bytes of one NVM memtable. Default: 256 MiB.
        nvm_memtable_size: usize = 256 * MIB, Size;
        /// Under `nvm_memtable = overflow`: a full DRAM memtable whose entries averaged at
        /// least this many bytes (key, value and the entry's bookkeeping) hands over to an
        /// NVM memtable even while DRAM memtables are free, as under `mutable`: for large
        /// entries an in-place NVM insert, which writes no WAL, costs less than a DRAM
        /// insert and its WAL record; for small ones the search through the device's
        /// latency costs more. With LRU-tiered NVM tables the larger memtables' flushes
        /// can push more tables to SSD (see `docs/impl.md`). 0: only when the DRAM
        /// memtables are all taken. Default: 0 (off).
        nvm_memtable_large_entry: usize = 0, Size;
        /// Probe the memtables and the SST levels concurrently on a small thread pool for
        /// `get` (NoveLSM's parallel reads); the newest hit wins. Default: false.
        parallel_reads: bool = false, Flag;
        /// Which levels are NVM tables (TLSM): `off`, `leveled:K`, `lru[:BYTES]` or `none`
        /// (every level in NVM). Needs `nvm_dir`. See [`NvmTiering`]. Default: `off`.
        nvm_tiering: NvmTiering = NvmTiering::Off, Tiering;
        /// How NVM tables are built: `ps`, `ps+bac` or `ps+bac+pb` (see [`NvmTableMethod`]).
        /// Default: `ps+bac+pb`.
        nvm_table_method: NvmTableMethod = NvmTableMethod::PsBacPb, Name;
        /// Byte-addressable compaction leaves dead entries in the buffers its inputs point
        /// into; a buffer whose live share falls below this fraction has the tables that
        /// still point into it rewritten, so it can be freed. Default: 0.5.
        nvm_gc_live_ratio: f64 = 0.5, Float,
            check |v| (0.0..1.0).contains(v), "{v} not in 0..1";
        /// Buffers are reclaimed only once the pool's NVM-table objects take this share of
        /// the NVM-table budget (`Options::nvm_table_budget`): below it the pool has room
        /// for the dead entries, and rewriting tables to free them would cost writes for
        /// nothing. The pool then holds at most the larger of this share of the budget and
        /// the live bytes over `nvm_gc_live_ratio`. `0` reclaims whenever a buffer is
        /// mostly dead. Default: 0.5.
        nvm_gc_pool_share: f64 = 0.5, Float,
            check |v| (0.0..=1.0).contains(v), "{v} not in 0..=1";

        // ---- MatrixKV: L0 as a matrix container in NVM (docs/formats/matrix-row.md) ----
        /// Bytes of the matrix container that holds L0 in the NVM pool: each flush writes one
        /// row there instead of an L0 SST, and column compactions drain rows into L1. `0`
        /// turns it off. Needs `nvm_dir`. Default: 0.
        matrix_bytes: u64 = 0, Size;
        /// Page size of the container (a power of two, 4 KiB..1 GiB): partly drained rows
        /// give back whole pages. `0` picks it from `write_buffer_size`
        /// (`Options::matrix_page_bytes`: a 256th of it, a power of two from 4 KiB to
        /// 256 KiB). Fixed when the container is made: a reopen keeps the pages it has.
        /// Default: 0.
        matrix_page_size: usize = 0, Size,
            check |v| *v == 0 || (v.is_power_of_two() && (4096..=1 << 30).contains(v)),
            "{v} is neither 0 nor a power of two in 4 KiB..1 GiB";
        /// The receiver rows become the compactor once they hold this share of the
        /// container. Default: 0.6.
        matrix_switch_fraction: f64 = 0.6, Float,
            check |v| (0.05..=0.95).contains(v), "{v} not in 0.05..=0.95";
        /// Narrow each older row's search with the cross-row hints of the newer row.
        /// Default: true.
        matrix_hints: bool = true, Flag;
        /// Threads that fetch a column's entries from the compactor rows into DRAM before
        /// the merge; `1` streams the entries from the rows into the merge instead (no
        /// copy); `0` = one per two cores (the writers and the other background jobs keep
        /// the rest busy), so a 2-core machine streams. Default: 0.
        column_threads: usize = 0, Size,
            check |v| *v <= 64, "{v} > 64";
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}
