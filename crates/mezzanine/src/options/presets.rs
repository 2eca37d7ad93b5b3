//! Presets: one named combination of options per design the engine implements.
//!
//! Invariant: `Options::preset(Preset::Leveldb)` is every field at its default in the option
//! table, and is `Options::default()`; every other preset is the `leveldb` one with a few
//! fields changed. Plain values; no shared state.

use std::fmt;

use super::{NvmMemtable, NvmTiering, Options};
use crate::error::{Error, Result};

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
    /// TLSM: the `leveldb` baseline with NVM as a middle tier: flushes and compactions of
    /// the upper levels write NVM tables (a persistent buffer filled by one bulk copy, a
    /// persistent skip list of pointers over it; compactions between NVM levels only write
    /// pointers), and the table that has stayed in NVM longest moves to an SST file when NVM
    /// tables fill 3/4 of the pool (less its other users) (`nvm_tiering = lru`). Needs
    /// `nvm_dir`.
    Tlsm,
    /// MatrixKV: L0 is a matrix container in NVM (`matrix_bytes`, 1/2 of the pool): each
    /// flush appends one row (one bulk copy), column compactions drain the oldest rows into
    /// L1 a key range at a time; L1 is as large as the container (wide, flat levels); the
    /// WAL is in NVM too (`wal_on_nvm`). Writes slow down and stop on container bytes, not
    /// L0 file counts. Needs `nvm_dir`.
    Matrixkv,
    /// Mezzanine: the designs composed, as measured best on the tiered testbed. When the
    /// DRAM memtables are all taken, writes go on in place into a mutable NVM memtable
    /// instead of waiting for a flush (NoveLSM's, `nvm_memtable = overflow`, 128 MiB); flushes and compactions write NVM tables with
    /// byte-addressable compaction, the longest-resident moving to SSTs once NVM tables
    /// fill their share of the pool (TLSM, `nvm_tiering = lru`). MatrixKV's NVM WAL
    /// (`wal_on_nvm`) and matrix container (`matrix_bytes`) compose with these but did not
    /// pay on the testbed, so they are off. What each part buys: docs/impl.md, "The
    /// mezzanine preset". Needs `nvm_dir`. Column families need `nvm_memtable = immutable`.
    Mezzanine,
}

impl Preset {
    /// Every preset that exists; test harnesses iterate over this so a new preset joins them
    /// automatically.
    pub const ALL: &'static [Preset] = &[
        Preset::Leveldb,
        Preset::Novelsm,
        Preset::Tlsm,
        Preset::Matrixkv,
        Preset::Mezzanine,
    ];

    /// The preset's name as written in OPTIONS files and on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Preset::Leveldb => "leveldb",
            Preset::Novelsm => "novelsm",
            Preset::Tlsm => "tlsm",
            Preset::Matrixkv => "matrixkv",
            Preset::Mezzanine => "mezzanine",
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

impl Default for Options {
    fn default() -> Self {
        Self::preset(Preset::Leveldb)
    }
}

impl Options {
    /// The options of a preset.
    #[must_use]
    pub fn preset(preset: Preset) -> Self {
        match preset {
            Preset::Leveldb => Self::leveldb(),
            Preset::Novelsm => Self {
                preset,
                nvm_memtable: NvmMemtable::Mutable,
                ..Self::leveldb()
            },
            Preset::Tlsm => Self {
                preset,
                nvm_tiering: NvmTiering::Lru(0),
                ..Self::leveldb()
            },
            // The container is half the default pool; L1 is as large as it.
            Preset::Matrixkv => Self {
                preset,
                matrix_bytes: 512 << 20,
                max_bytes_for_level_base: 512 << 20,
                wal_on_nvm: true,
                seek_compaction: false,
                ..Self::leveldb()
            },
            // NVM tables under LRU tiering have 3/4 of the pool; an NVM memtable of 128 MiB
            // takes writes only when the DRAM ones are all taken (`overflow`), made in the
            // quarter the tables leave (no reserve of its own).
            Preset::Mezzanine => Self {
                preset,
                nvm_memtable: NvmMemtable::Overflow,
                nvm_memtable_size: 128 << 20,
                nvm_tiering: NvmTiering::Lru(0),
                seek_compaction: false,
                ..Self::leveldb()
            },
        }
    }
}
