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
