//! The engine's own value types of options. Their names in OPTIONS files are in `parse.rs`.
//!
//! Plain values (`Copy`, or `Clone` for lists): freely shared between threads.

use mezz_format::compress::Compression;

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

/// Which table of a level (>= 1) over its target the leveled policy compacts next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompactionPri {
    /// The table whose overlap with the next level, in bytes, is the smallest share of its
    /// own size (RocksDB's `kMinOverlappingRatio`, its default since 6.x): fewer bytes of
    /// the next level are rewritten per byte moved down. The default.
    #[default]
    MinOverlappingRatio,
    /// The table after the level's compact pointer, cycling through the key space
    /// (LevelDB's choice).
    RoundRobin,
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
    /// When the DRAM memtable fills, writes go directly (in place, persisted, without a
    /// WAL) into an NVM memtable while the DRAM one is flushed; when the NVM memtable fills
    /// it is flushed in turn and writes go to a new DRAM memtable. They are durable once the
    /// WAL before them is synced, which the flush thread does right after the switch (a
    /// `sync` write does it itself if that has not happened yet); a power cut before then
    /// drops them with that WAL's lost tail, keeping a prefix of the history.
    Mutable,
    /// As `mutable`, but a full DRAM memtable hands over to an NVM memtable only when the
    /// DRAM memtables are all taken (`max_write_buffer_number`: the writes would wait for a
    /// flush otherwise); else to a new DRAM memtable and WAL, as without NVM. Writes
    /// then take the DRAM path while flushes keep up (an insert into a skip list in NVM
    /// pays the device's read latency at every node its search visits) and the NVM one
    /// when they fall behind, instead of stalling.
    Overflow,
}

impl NvmMemtable {
    /// Whether writes may go in place into an NVM memtable, without a WAL record
    /// (`mutable`, `overflow`).
    #[must_use]
    pub fn in_place(self) -> bool {
        matches!(self, NvmMemtable::Mutable | NvmMemtable::Overflow)
    }
}

/// Which tables live in NVM (TLSM's tiering policies). With anything but `Off`, flushes
/// and compactions write *NVM tables* (persistent skip lists over persistent buffers) for
/// the levels this policy keeps in NVM, and SST files for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NvmTiering {
    /// No NVM tables: every level is SST files. The default.
    #[default]
    Off,
    /// `leveled:K`: levels 0..=K are NVM tables, deeper levels SST files.
    Leveled(usize),
    /// `lru:BYTES`: every output is an NVM table while NVM tables hold less than BYTES
    /// (each object counted by the share of its entries live tables still point at);
    /// above it the table that has stayed in NVM longest moves to an SST file (same level).
    /// `lru` alone: BYTES = 3/4 of `nvm_capacity` less what NVM WALs and memtables need.
    Lru(u64),
    /// `none` (no tiering, "full NVM"): every level is NVM tables; when the pool is full a
    /// flush fails with an error that says so (writes stop; nothing is lost).
    Full,
}

impl NvmTiering {
    /// Whether any table lives in NVM.
    #[must_use]
    pub fn enabled(self) -> bool {
        self != NvmTiering::Off
    }

    /// Whether tables this tiering would put in NVM may be SSTs instead when the pool
    /// has no room (every tiering but `none`, which keeps every level in NVM).
    #[must_use]
    pub fn allows_ssd(self) -> bool {
        self != NvmTiering::Full
    }
}

/// How NVM tables are built (the three methods of the TLSM paper, for its ablation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NvmTableMethod {
    /// `ps`: persistent skip list only. Each entry is written inside the list (as a
    /// one-entry block before its node, persisted node by node), and compactions copy every
    /// entry into new lists.
    Ps,
    /// `ps+bac`: as `ps` for flushes; compactions between NVM levels write only nodes that
    /// point at the entries of their inputs (byte-addressable compaction).
    PsBac,
    /// `ps+bac+pb`: a flush writes a persistent buffer of KeySet blocks with one bulk copy
    /// and a list of pointer nodes over it; compactions point. The default.
    #[default]
    PsBacPb,
}

impl NvmTableMethod {
    /// Whether compactions between NVM levels point at their inputs' entries.
    #[must_use]
    pub fn byte_addressable(self) -> bool {
        self != NvmTableMethod::Ps
    }
    /// Whether flushes write a persistent buffer.
    #[must_use]
    pub fn persistent_buffer(self) -> bool {
        self == NvmTableMethod::PsBacPb
    }
}

/// The compression of SST data blocks at each level: entry `i` for level `i`, the last
/// entry for every deeper level. Never empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LevelCompression(Vec<Compression>);

impl LevelCompression {
    /// No compression at any level (the default).
    #[must_use]
    pub fn none() -> Self {
        Self(vec![Compression::None])
    }

    /// `c` at every level.
    #[must_use]
    pub fn uniform(c: Compression) -> Self {
        Self(vec![c])
    }

    /// `levels[i]` at level `i`, the last one below; no compression if `levels` is empty.
    #[must_use]
    pub fn per_level(levels: Vec<Compression>) -> Self {
        if levels.is_empty() {
            Self::none()
        } else {
            Self(levels)
        }
    }

    /// The compression of tables written to `level`.
    #[must_use]
    pub fn for_level(&self, level: usize) -> Compression {
        self.0
            .get(level)
            .or(self.0.last())
            .copied()
            .unwrap_or_default()
    }

    /// The entries as given (at least one).
    #[must_use]
    pub fn levels(&self) -> &[Compression] {
        &self.0
    }
}

impl Default for LevelCompression {
    fn default() -> Self {
        Self::none()
    }
}

impl std::fmt::Display for LevelCompression {
    /// The entries' names, comma-separated (`none,lz4,zstd`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(c.name())?;
        }
        Ok(())
    }
}

/// How new tables are spread over the SSD directories (option `placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PlacementPolicy {
    /// Each new table to the next unit in turn (maximum spread).
    Striped,
    /// Each table to the unit its file number maps to (one table, one unit, static).
    PerFile,
    /// Units chosen by level, size and what running jobs read and write. The default.
    #[default]
    Isolated,
}

impl PlacementPolicy {
    /// The name used in options (`striped`, `per_file`, `isolated`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Striped => "striped",
            Self::PerFile => "per_file",
            Self::Isolated => "isolated",
        }
    }

    /// Parses a name (`per-file` is accepted for `per_file`).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "striped" => Some(Self::Striped),
            "per_file" | "per-file" => Some(Self::PerFile),
            "isolated" => Some(Self::Isolated),
            _ => None,
        }
    }
}
