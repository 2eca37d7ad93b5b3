//! Options: one struct for the whole engine, its presets, validation, and the text form
//! written to the `OPTIONS-<n>` file and embedded in every benchmark result.
//!
//! Every field documents its default. `Options::default()` is the `leveldb` preset.
//! `Options::set("name", "value")` parses one field by name (the CLI's `--opt k=v`), and
//! `Options::to_text()` / `Options::from_text()` round-trip every serialisable field.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use mezz_env::{FileSystem, PosixFs};
use mezz_format::SeqNo;
pub use mezz_format::block::BlockFormat;
pub use mezz_pmem::{PersistMode, SimNvm};

use crate::error::{Error, Result};

/// The most levels a database can have (`num_levels`).
pub const MAX_NUM_LEVELS: usize = 32;

/// The most bytes of batches one group commit takes (a WAL in NVM is sized to hold one
/// such group beyond a memtable's worth of records).
pub const MAX_GROUP_BYTES: usize = 1 << 20;

/// A named combination of options, one per design the engine implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// The classic baseline: WAL + DRAM memtable + SST levels on SSD, leveled compaction,
    /// size ratio 10. The default until the NVM presets exist.
    Leveldb,
    /// NoveLSM: the `leveldb` baseline plus a persistent skip-list memtable in NVM
    /// (`nvm_memtable = mutable`: when the DRAM memtable fills, writes go in place and
    /// durably into the NVM memtable, without a log). Needs `nvm_dir`.
    Novelsm,
}

impl Preset {
    /// Every preset that exists; test harnesses iterate over this so a new preset joins them
    /// automatically.
    pub const ALL: &'static [Preset] = &[Preset::Leveldb, Preset::Novelsm];

    /// The preset's name as written in OPTIONS files and on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Preset::Leveldb => "leveldb",
            Preset::Novelsm => "novelsm",
        }
    }

    /// Parses a preset name.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name.
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown preset {s:?} (known: {})",
                    Self::ALL
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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

impl RecoveryMode {
    fn name(self) -> &'static str {
        match self {
            RecoveryMode::TolerateCorruptTail => "tolerate_corrupt_tail",
            RecoveryMode::AbsoluteConsistency => "absolute_consistency",
        }
    }
    fn parse(s: &str) -> Result<Self> {
        match s {
            "tolerate_corrupt_tail" => Ok(Self::TolerateCorruptTail),
            "absolute_consistency" => Ok(Self::AbsoluteConsistency),
            _ => Err(Error::InvalidArgument(format!(
                "unknown recovery_mode {s:?}"
            ))),
        }
    }
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

impl NvmMemtable {
    fn name(self) -> &'static str {
        match self {
            NvmMemtable::Off => "off",
            NvmMemtable::Immutable => "immutable",
            NvmMemtable::Mutable => "mutable",
        }
    }
    fn parse(s: &str) -> Result<Self> {
        match s {
            "off" | "none" => Ok(Self::Off),
            "immutable" => Ok(Self::Immutable),
            "mutable" => Ok(Self::Mutable),
            _ => Err(Error::InvalidArgument(format!(
                "unknown nvm_memtable {s:?} (off|immutable|mutable)"
            ))),
        }
    }
}

fn block_format_name(f: BlockFormat) -> &'static str {
    match f {
        BlockFormat::KeySet => "keyset",
        BlockFormat::Prefix => "prefix",
    }
}

fn parse_block_format(s: &str) -> Result<BlockFormat> {
    match s {
        "keyset" => Ok(BlockFormat::KeySet),
        "prefix" => Ok(BlockFormat::Prefix),
        _ => Err(Error::InvalidArgument(format!(
            "unknown block_format {s:?} (keyset|prefix)"
        ))),
    }
}

/// Every option of the engine. Build with `Options::default()` or `Options::preset(..)`,
/// adjust fields, and pass to `Db::open`; `Db::open` calls [`Options::validate`].
#[derive(Clone)]
pub struct Options {
    /// The design this configuration starts from. Default: `Preset::Leveldb`.
    pub preset: Preset,
    /// The file system all I/O goes through (tests pass an in-memory or fault-injecting
    /// one). Default: the real file system. Not written to the OPTIONS file.
    pub fs: Arc<dyn FileSystem>,

    // ---- opening ----
    /// Create the database if it does not exist. Default: true.
    pub create_if_missing: bool,
    /// Fail if the database already exists. Default: false.
    pub error_if_exists: bool,
    /// Verify every checksum on every read, including compaction inputs, and treat any WAL
    /// damage as an error. Default: false (block checksums are still verified on every read
    /// from the file system; this adds whole-file checks on open).
    pub paranoid_checks: bool,
    /// How recovery treats a damaged WAL. Default: `TolerateCorruptTail`.
    pub recovery_mode: RecoveryMode,

    // ---- write path ----
    /// Bytes of the DRAM memtable before it is switched to immutable and flushed.
    /// Default: 64 MiB.
    pub write_buffer_size: usize,
    /// Memtables (mutable + immutable) kept in memory before writes stop to wait for a flush.
    /// Default: 2.
    pub max_write_buffer_number: usize,
    /// Write a WAL. Without it, writes since the last flush are lost on a crash. Default: true.
    pub use_wal: bool,

    // ---- tables ----
    /// Target size of a data block before compression, in bytes. Default: 4096.
    pub block_size: usize,
    /// Layout of data blocks: the unified, 8-byte aligned KeySet block (searchable in place)
    /// or LevelDB's prefix-compressed block. Default: `BlockFormat::KeySet`.
    pub block_format: BlockFormat,
    /// Keys between restart points in prefix-compressed blocks. Default: 16.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key (0 disables filters). Default: 10.
    pub bloom_bits_per_key: u32,
    /// Capacity of the block cache in bytes (0 disables it). Default: 8 MiB.
    pub block_cache_capacity: usize,
    /// Number of open tables kept in the table cache. Default: 1000.
    pub max_open_files: usize,
    /// Target size of an SST written by compaction. Default: 64 MiB.
    pub target_file_size: u64,

    // ---- compaction ----
    /// Number of levels. Default: 7.
    pub num_levels: usize,
    /// Number of L0 tables that triggers an L0→L1 compaction. Default: 4.
    pub level0_compaction_trigger: usize,
    /// Number of L0 tables at which writes start to be slowed down (gradually, more as L0
    /// grows). Default: 20.
    pub level0_slowdown_trigger: usize,
    /// Number of L0 tables at which writes stop until compaction catches up. Default: 36.
    pub level0_stop_trigger: usize,
    /// Target size of L1 in bytes. Default: 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels. Default: 10.
    pub max_bytes_for_level_multiplier: f64,
    /// Estimated bytes of pending compaction at which writes start to be slowed down.
    /// Default: 64 GiB.
    pub soft_pending_compaction_bytes: u64,
    /// Estimated bytes of pending compaction at which writes stop. Default: 256 GiB.
    pub hard_pending_compaction_bytes: u64,
    /// Write rate (bytes/s) allowed when the slowdown starts; it falls as the debt grows.
    /// Default: 16 MiB/s.
    pub delayed_write_rate: u64,
    /// Background threads for flushes and compactions. Default: 2.
    pub max_background_jobs: usize,

    // ---- NVM tier (see docs/formats/nvm-pool.md) ----
    /// Directory of the NVM pool file (a DAX mount, `/dev/shm`, or any directory).
    /// Default: none (no NVM tier).
    pub nvm_dir: Option<PathBuf>,
    /// Bytes of the NVM pool (rounded up to 4 KiB). Default: 1 GiB.
    pub nvm_capacity: u64,
    /// How NVM writes become durable: `adr` (cache-line flushes + fence; needs a DAX
    /// mapping unless `nvm_emulate_adr`), `eadr` (fence only), `msync` (any file system),
    /// `volatile` (nothing is made durable: NVM contents survive a process crash on a
    /// mapped file, not a power cut — for CXL/DRAM-like media; keep the WAL on the SSD and
    /// no NVM memtable if power cuts matter) or `crashsim` (tests). Default: `msync`.
    pub nvm_persistence: PersistMode,
    /// Run `adr` on a mapping without MAP_SYNC (e.g. `/dev/shm`) so benchmarks pay the flush
    /// cost; data is then only as durable as the file system makes it. Default: false.
    pub nvm_emulate_adr: bool,
    /// Emulated extra latency per 64-byte line read from NVM, in ns. Default: 0 (off).
    pub nvm_read_latency_ns: u32,
    /// Emulated extra latency per 64-byte line written to NVM, in ns. Default: 0 (off).
    pub nvm_write_latency_ns: u32,
    /// Emulated cap on NVM persist bandwidth, bytes/s. Default: 0 (unlimited).
    pub nvm_persist_bandwidth: u64,
    /// Touch every page of the pool when opening it, so first-touch page faults are not
    /// paid on the write path. Default: true.
    pub nvm_prefault: bool,
    /// The simulated NVM for `nvm_persistence = crashsim` (tests). Not written to the
    /// OPTIONS file. Default: none.
    pub nvm_sim: Option<SimNvm>,
    /// Deterministic background work (tests): no background threads are started. Flushes
    /// and compactions run only inside [`crate::Db::run_background_work`], or inline in a
    /// call that would otherwise wait for them (a writer at a stop trigger or without a
    /// free memtable, `flush`, `compact_range`, `wait_for_background`). A test that
    /// chooses those points from its seed replays every interleaving exactly. Not written
    /// to the OPTIONS file. Default: false.
    pub manual_background: bool,
    /// Keep the WAL in NVM (same record format, persisted per group commit) instead of the
    /// SSD. Needs `nvm_dir`. Default: false.
    pub wal_on_nvm: bool,
    /// NoveLSM's NVM memtable. Needs `nvm_dir`. Default: `off`.
    pub nvm_memtable: NvmMemtable,
    /// Bytes of one NVM memtable. Default: 256 MiB.
    pub nvm_memtable_size: usize,
    /// Probe the memtables and the SST levels concurrently on a small thread pool for
    /// `get` (NoveLSM's parallel reads); the newest hit wins. Default: false.
    pub parallel_reads: bool,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl Default for Options {
    fn default() -> Self {
        Self::preset(Preset::Leveldb)
    }
}

const MIB: usize = 1 << 20;

impl Options {
    /// The options of a preset.
    #[must_use]
    pub fn preset(preset: Preset) -> Self {
        match preset {
            Preset::Leveldb => Self {
                preset,
                fs: Arc::new(PosixFs::new()),
                create_if_missing: true,
                error_if_exists: false,
                paranoid_checks: false,
                recovery_mode: RecoveryMode::TolerateCorruptTail,
                write_buffer_size: 64 * MIB,
                max_write_buffer_number: 2,
                use_wal: true,
                block_size: 4096,
                block_format: BlockFormat::KeySet,
                block_restart_interval: 16,
                bloom_bits_per_key: 10,
                block_cache_capacity: 8 * MIB,
                max_open_files: 1000,
                target_file_size: 64 * MIB as u64,
                num_levels: 7,
                level0_compaction_trigger: 4,
                level0_slowdown_trigger: 20,
                level0_stop_trigger: 36,
                max_bytes_for_level_base: 256 * MIB as u64,
                max_bytes_for_level_multiplier: 10.0,
                soft_pending_compaction_bytes: 64 << 30,
                hard_pending_compaction_bytes: 256 << 30,
                delayed_write_rate: 16 * MIB as u64,
                max_background_jobs: 2,
                nvm_dir: None,
                nvm_capacity: 1 << 30,
                nvm_persistence: PersistMode::Msync,
                nvm_emulate_adr: false,
                nvm_read_latency_ns: 0,
                nvm_write_latency_ns: 0,
                nvm_persist_bandwidth: 0,
                nvm_prefault: true,
                nvm_sim: None,
                manual_background: false,
                wal_on_nvm: false,
                nvm_memtable: NvmMemtable::Off,
                nvm_memtable_size: 256 * MIB,
                parallel_reads: false,
            },
            Preset::Novelsm => Self {
                preset,
                nvm_memtable: NvmMemtable::Mutable,
                ..Self::preset(Preset::Leveldb)
            },
        }
    }

    /// Whether these options use an NVM tier.
    #[must_use]
    pub fn has_nvm(&self) -> bool {
        self.nvm_dir.is_some()
    }

    /// Checks every field and their relations.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.write_buffer_size < 4096 {
            return bad(format!(
                "write_buffer_size {} < 4096",
                self.write_buffer_size
            ));
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be >= 2".into());
        }
        if !(256..=(64 * MIB)).contains(&self.block_size) {
            return bad(format!("block_size {} not in 256..=64MiB", self.block_size));
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be >= 1".into());
        }
        if self.bloom_bits_per_key > 64 {
            return bad(format!(
                "bloom_bits_per_key {} > 64",
                self.bloom_bits_per_key
            ));
        }
        if self.max_open_files < 16 {
            return bad(format!("max_open_files {} < 16", self.max_open_files));
        }
        if self.target_file_size < 4096 {
            return bad(format!("target_file_size {} < 4096", self.target_file_size));
        }
        if !(2..=MAX_NUM_LEVELS).contains(&self.num_levels) {
            return bad(format!(
                "num_levels {} not in 2..={MAX_NUM_LEVELS}",
                self.num_levels
            ));
        }
        if self.level0_compaction_trigger == 0 {
            return bad("level0_compaction_trigger must be >= 1".into());
        }
        if self.level0_slowdown_trigger < self.level0_compaction_trigger {
            return bad("level0_slowdown_trigger must be >= level0_compaction_trigger".into());
        }
        if self.level0_stop_trigger < self.level0_slowdown_trigger {
            return bad("level0_stop_trigger must be >= level0_slowdown_trigger".into());
        }
        if self.max_bytes_for_level_base < 4096 {
            return bad("max_bytes_for_level_base must be >= 4096".into());
        }
        if !(self.max_bytes_for_level_multiplier >= 2.0
            && self.max_bytes_for_level_multiplier <= 1000.0)
        {
            return bad(format!(
                "max_bytes_for_level_multiplier {} not in 2..=1000",
                self.max_bytes_for_level_multiplier
            ));
        }
        if self.hard_pending_compaction_bytes < self.soft_pending_compaction_bytes {
            return bad(
                "hard_pending_compaction_bytes must be >= soft_pending_compaction_bytes".into(),
            );
        }
        if self.delayed_write_rate == 0 {
            return bad("delayed_write_rate must be > 0".into());
        }
        if !(1..=64).contains(&self.max_background_jobs) {
            return bad(format!(
                "max_background_jobs {} not in 1..=64",
                self.max_background_jobs
            ));
        }
        if self.nvm_dir.is_none() {
            if self.wal_on_nvm {
                return bad("wal_on_nvm needs nvm_dir".into());
            }
            if self.nvm_memtable != NvmMemtable::Off {
                return bad(format!(
                    "nvm_memtable={} (preset {}) needs nvm_dir (e.g. --nvm-dir /dev/shm/mezz-nvm)",
                    self.nvm_memtable.name(),
                    self.preset
                ));
            }
        } else {
            if self.nvm_capacity < 1 << 20 {
                return bad(format!("nvm_capacity {} < 1 MiB", self.nvm_capacity));
            }
            if self.nvm_persistence == PersistMode::CrashSim && self.nvm_sim.is_none() {
                return bad("nvm_persistence=crashsim needs a simulated NVM (nvm_sim)".into());
            }
        }
        if self.nvm_memtable != NvmMemtable::Off {
            if self.nvm_memtable_size < 64 << 10 || self.nvm_memtable_size > (4usize << 30) - 4096 {
                return bad(format!(
                    "nvm_memtable_size {} not in 64 KiB..4 GiB",
                    self.nvm_memtable_size
                ));
            }
            if !self.use_wal {
                return bad("an NVM memtable needs use_wal=true".into());
            }
        }
        if self.nvm_dir.is_some() {
            let need = self.nvm_bytes_needed();
            if need > self.nvm_capacity {
                return bad(format!(
                    "nvm_capacity {} cannot hold what the options keep in NVM: {need} bytes \
                     (the pool's superblock{}{})",
                    self.nvm_capacity,
                    if self.nvm_memtable == NvmMemtable::Off {
                        String::new()
                    } else {
                        format!(
                            ", two NVM memtables of nvm_memtable_size {} (one filling, one \
                             being flushed) with their headers",
                            self.nvm_memtable_size
                        )
                    },
                    if self.wal_on_nvm {
                        format!(
                            ", max_write_buffer_number {} + 1 WALs sized for write_buffer_size {}",
                            self.max_write_buffer_number, self.write_buffer_size
                        )
                    } else {
                        String::new()
                    }
                ));
            }
        }
        Ok(())
    }

    /// Bytes of one WAL in NVM (`wal_on_nvm`): a memtable's worth of records plus one
    /// maximal write group and slack.
    #[must_use]
    pub fn nvm_wal_bytes(&self) -> u64 {
        (self.write_buffer_size + self.write_buffer_size / 4 + MAX_GROUP_BYTES + (64 << 10)) as u64
    }

    /// The least pool size the NVM options need: the superblock, two NVM memtables (one
    /// filling, one being flushed) and, with `wal_on_nvm`, one WAL per memtable that may
    /// exist at once plus one (an open keeps the WALs of the memtables it recovers and
    /// creates a new one before any of them is flushed); every extent rounded up to the
    /// pool's alignment.
    #[must_use]
    pub fn nvm_bytes_needed(&self) -> u64 {
        let align =
            |n: u64| n.div_ceil(mezz_pmem::pool::EXTENT_ALIGN) * mezz_pmem::pool::EXTENT_ALIGN;
        let mut need = mezz_pmem::pool::SUPERBLOCK_SIZE;
        if self.nvm_memtable != NvmMemtable::Off {
            need += 2 * align(
                self.nvm_memtable_size as u64 + crate::memtable::nvm_list::LIST_PREFIX as u64,
            );
        }
        if self.wal_on_nvm {
            need += (self.max_write_buffer_number as u64 + 1) * align(self.nvm_wal_bytes());
        }
        need
    }

    /// The names of every field accepted by [`Options::set`], in OPTIONS-file order.
    pub const FIELDS: &'static [&'static str] = &[
        "preset",
        "create_if_missing",
        "error_if_exists",
        "paranoid_checks",
        "recovery_mode",
        "write_buffer_size",
        "max_write_buffer_number",
        "use_wal",
        "block_size",
        "block_format",
        "block_restart_interval",
        "bloom_bits_per_key",
        "block_cache_capacity",
        "max_open_files",
        "target_file_size",
        "num_levels",
        "level0_compaction_trigger",
        "level0_slowdown_trigger",
        "level0_stop_trigger",
        "max_bytes_for_level_base",
        "max_bytes_for_level_multiplier",
        "soft_pending_compaction_bytes",
        "hard_pending_compaction_bytes",
        "delayed_write_rate",
        "max_background_jobs",
        "nvm_dir",
        "nvm_capacity",
        "nvm_persistence",
        "nvm_emulate_adr",
        "nvm_read_latency_ns",
        "nvm_write_latency_ns",
        "nvm_persist_bandwidth",
        "nvm_prefault",
        "wal_on_nvm",
        "nvm_memtable",
        "nvm_memtable_size",
        "parallel_reads",
    ];

    /// The value of one field as text, or `None` for an unknown name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "preset" => self.preset.name().to_string(),
            "create_if_missing" => self.create_if_missing.to_string(),
            "error_if_exists" => self.error_if_exists.to_string(),
            "paranoid_checks" => self.paranoid_checks.to_string(),
            "recovery_mode" => self.recovery_mode.name().to_string(),
            "write_buffer_size" => self.write_buffer_size.to_string(),
            "max_write_buffer_number" => self.max_write_buffer_number.to_string(),
            "use_wal" => self.use_wal.to_string(),
            "block_size" => self.block_size.to_string(),
            "block_format" => block_format_name(self.block_format).to_string(),
            "block_restart_interval" => self.block_restart_interval.to_string(),
            "bloom_bits_per_key" => self.bloom_bits_per_key.to_string(),
            "block_cache_capacity" => self.block_cache_capacity.to_string(),
            "max_open_files" => self.max_open_files.to_string(),
            "target_file_size" => self.target_file_size.to_string(),
            "num_levels" => self.num_levels.to_string(),
            "level0_compaction_trigger" => self.level0_compaction_trigger.to_string(),
            "level0_slowdown_trigger" => self.level0_slowdown_trigger.to_string(),
            "level0_stop_trigger" => self.level0_stop_trigger.to_string(),
            "max_bytes_for_level_base" => self.max_bytes_for_level_base.to_string(),
            "max_bytes_for_level_multiplier" => self.max_bytes_for_level_multiplier.to_string(),
            "soft_pending_compaction_bytes" => self.soft_pending_compaction_bytes.to_string(),
            "hard_pending_compaction_bytes" => self.hard_pending_compaction_bytes.to_string(),
            "delayed_write_rate" => self.delayed_write_rate.to_string(),
            "max_background_jobs" => self.max_background_jobs.to_string(),
            "nvm_dir" => self
                .nvm_dir
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            "nvm_capacity" => self.nvm_capacity.to_string(),
            "nvm_persistence" => self.nvm_persistence.to_string(),
            "nvm_emulate_adr" => self.nvm_emulate_adr.to_string(),
            "nvm_read_latency_ns" => self.nvm_read_latency_ns.to_string(),
            "nvm_write_latency_ns" => self.nvm_write_latency_ns.to_string(),
            "nvm_persist_bandwidth" => self.nvm_persist_bandwidth.to_string(),
            "nvm_prefault" => self.nvm_prefault.to_string(),
            "wal_on_nvm" => self.wal_on_nvm.to_string(),
            "nvm_memtable" => self.nvm_memtable.name().to_string(),
            "nvm_memtable_size" => self.nvm_memtable_size.to_string(),
            "parallel_reads" => self.parallel_reads.to_string(),
            _ => return None,
        })
    }

    /// Sets one field from text. Setting `preset` resets every other field to that preset's
    /// value (so put it first). Sizes accept a `K`, `M` or `G` suffix (powers of 1024).
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown field or a value that does not parse.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let v = value.trim();
        match name {
            "preset" => {
                let fs = Arc::clone(&self.fs);
                let sim = self.nvm_sim.take();
                let manual = self.manual_background;
                *self = Options::preset(Preset::parse(v)?);
                self.fs = fs;
                self.nvm_sim = sim;
                self.manual_background = manual;
            }
            "create_if_missing" => self.create_if_missing = parse_bool(name, v)?,
            "error_if_exists" => self.error_if_exists = parse_bool(name, v)?,
            "paranoid_checks" => self.paranoid_checks = parse_bool(name, v)?,
            "recovery_mode" => self.recovery_mode = RecoveryMode::parse(v)?,
            "write_buffer_size" => self.write_buffer_size = parse_size(name, v)?,
            "max_write_buffer_number" => self.max_write_buffer_number = parse_size(name, v)?,
            "use_wal" => self.use_wal = parse_bool(name, v)?,
            "block_size" => self.block_size = parse_size(name, v)?,
            "block_format" => self.block_format = parse_block_format(v)?,
            "block_restart_interval" => self.block_restart_interval = parse_size(name, v)?,
            "bloom_bits_per_key" => {
                self.bloom_bits_per_key = u32::try_from(parse_size::<u64>(name, v)?)
                    .map_err(|_| Error::InvalidArgument(format!("{name}: {v:?} too large")))?;
            }
            "block_cache_capacity" => self.block_cache_capacity = parse_size(name, v)?,
            "max_open_files" => self.max_open_files = parse_size(name, v)?,
            "target_file_size" => self.target_file_size = parse_size(name, v)?,
            "num_levels" => self.num_levels = parse_size(name, v)?,
            "level0_compaction_trigger" => self.level0_compaction_trigger = parse_size(name, v)?,
            "level0_slowdown_trigger" => self.level0_slowdown_trigger = parse_size(name, v)?,
            "level0_stop_trigger" => self.level0_stop_trigger = parse_size(name, v)?,
            "max_bytes_for_level_base" => self.max_bytes_for_level_base = parse_size(name, v)?,
            "max_bytes_for_level_multiplier" => {
                self.max_bytes_for_level_multiplier = v.parse().map_err(|_| {
                    Error::InvalidArgument(format!("{name}: {v:?} is not a number"))
                })?;
            }
            "soft_pending_compaction_bytes" => {
                self.soft_pending_compaction_bytes = parse_size(name, v)?
            }
            "hard_pending_compaction_bytes" => {
                self.hard_pending_compaction_bytes = parse_size(name, v)?
            }
            "delayed_write_rate" => self.delayed_write_rate = parse_size(name, v)?,
            "max_background_jobs" => self.max_background_jobs = parse_size(name, v)?,
            "nvm_dir" => self.nvm_dir = (!v.is_empty()).then(|| PathBuf::from(v)),
            "nvm_capacity" => self.nvm_capacity = parse_size(name, v)?,
            "nvm_persistence" => {
                self.nvm_persistence = v
                    .parse()
                    .map_err(|e| Error::InvalidArgument(format!("nvm_persistence: {e}")))?;
            }
            "nvm_emulate_adr" => self.nvm_emulate_adr = parse_bool(name, v)?,
            "nvm_read_latency_ns" => self.nvm_read_latency_ns = parse_size(name, v)?,
            "nvm_write_latency_ns" => self.nvm_write_latency_ns = parse_size(name, v)?,
            "nvm_persist_bandwidth" => self.nvm_persist_bandwidth = parse_size(name, v)?,
            "nvm_prefault" => self.nvm_prefault = parse_bool(name, v)?,
            "wal_on_nvm" => self.wal_on_nvm = parse_bool(name, v)?,
            "nvm_memtable" => self.nvm_memtable = NvmMemtable::parse(v)?,
            "nvm_memtable_size" => self.nvm_memtable_size = parse_size(name, v)?,
            "parallel_reads" => self.parallel_reads = parse_bool(name, v)?,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "unknown option {name:?} (known: {})",
                    Self::FIELDS.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// The OPTIONS-file text: a header comment then one `name=value` line per field.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut s = String::from("# Mezzanine options\n");
        for f in Self::FIELDS {
            if let Some(v) = self.get(f) {
                s.push_str(f);
                s.push('=');
                s.push_str(&v);
                s.push('\n');
            }
        }
        s
    }

    /// Parses OPTIONS-file text (as written by [`Options::to_text`]); blank lines and `#`
    /// comments are skipped.
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed line, unknown field or bad value.
    pub fn from_text(text: &str) -> Result<Self> {
        let mut o = Options::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line.split_once('=').ok_or_else(|| {
                Error::InvalidArgument(format!("malformed options line {line:?}"))
            })?;
            o.set(k.trim(), v)?;
        }
        Ok(o)
    }

    /// The multiplier-derived target size of `level` (>= 1) in bytes.
    #[must_use]
    pub fn max_bytes_for_level(&self, level: usize) -> u64 {
        let mut b = self.max_bytes_for_level_base as f64;
        for _ in 1..level {
            b *= self.max_bytes_for_level_multiplier;
        }
        b as u64
    }
}

fn parse_bool(name: &str, v: &str) -> Result<bool> {
    match v {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(Error::InvalidArgument(format!(
            "{name}: {v:?} is not a boolean"
        ))),
    }
}

fn parse_size<T: TryFrom<u64>>(name: &str, v: &str) -> Result<T> {
    let bad = || Error::InvalidArgument(format!("{name}: {v:?} is not a size"));
    let (num, mult) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 1u64 << 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 1u64 << 30),
        _ => (v, 1),
    };
    let n: u64 = num.trim().parse().map_err(|_| bad())?;
    let n = n.checked_mul(mult).ok_or_else(bad)?;
    T::try_from(n).map_err(|_| bad())
}

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
    pub(crate) _guard: Arc<crate::db::SnapshotGuard>,
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
            fill_cache: true,
            verify_checksums: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_validates_and_roundtrips() {
        let o = Options::default();
        o.validate().unwrap();
        let t = o.to_text();
        let o2 = Options::from_text(&t).unwrap();
        assert_eq!(o2.to_text(), t);
    }

    #[test]
    fn set_parses_sizes_and_rejects_junk() {
        let mut o = Options::default();
        o.set("write_buffer_size", "4M").unwrap();
        assert_eq!(o.write_buffer_size, 4 << 20);
        o.set("block_format", "prefix").unwrap();
        assert_eq!(o.block_format, BlockFormat::Prefix);
        assert!(o.set("write_buffer_size", "lots").is_err());
        assert!(o.set("no_such_option", "1").is_err());
        assert!(o.set("preset", "nope").is_err());
    }

    #[test]
    fn validate_rejects_inconsistent_triggers() {
        let o = Options {
            level0_stop_trigger: 2,
            ..Options::default()
        };
        let e = o.validate().unwrap_err();
        assert!(e.to_string().contains("level0_stop_trigger"), "{e}");
    }
}
