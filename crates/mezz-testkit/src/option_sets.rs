//! The option sets a log is run under: every preset, and variations that make flushes,
//! compactions, multi-level trees and unusual block layouts happen with little data.
//!
//! Owns: [`NamedOptions`], [`OptionSets`], [`tiny_options`].
//!
//! Invariants: every set validates (`Options::validate`); presets come from `Preset::ALL`,
//! so a new preset joins every metamorphic run without a change here. Sets that use the NVM
//! tier get a simulated one ([`with_simulated_nvm`]); the runner gives every new database
//! its own.
//!
//! Thread-safety: plain data.

use mezzanine::options::{
    Compression, LevelCompression, NvmMemtable, NvmTableMethod, NvmTiering, PersistMode, SimNvm,
};
use mezzanine::{BlockFormat, Options, PlacementPolicy, Preset};

/// Where the simulated NVM pool of a test database lives.
pub const SIM_NVM_DIR: &str = "/nvm";

/// Where the further SSD directories of a test database live (`/units/u0`, ...).
pub const UNITS_DIR: &str = "/units";

/// Gives options that use the NVM tier (an NVM memtable, the WAL on NVM, NVM tables) a simulated one:
/// `nvm_persistence = crashsim` on a fresh [`SimNvm`] (so power cuts can be simulated), a
/// small pool and small NVM memtables. Options without NVM use are left alone.
pub fn with_simulated_nvm(o: &mut Options) {
    if o.nvm_memtable == NvmMemtable::Off
        && !o.wal_on_nvm
        && !o.nvm_tiering.enabled()
        && o.matrix_bytes == 0
        && !o.has_nvm()
    {
        return;
    }
    o.nvm_dir = Some(SIM_NVM_DIR.into());
    o.nvm_persistence = PersistMode::CrashSim;
    o.nvm_sim = Some(SimNvm::new());
    o.nvm_memtable_size = 256 << 10;
    o.nvm_prefault = false;
    with_small_matrix(o);
    // Under `none` tiering every table stays in NVM: beside NVM WALs and a container the
    // pool needs room for all of a log's data (and the dead entries GC has yet to free).
    let tables = if o.nvm_tiering == NvmTiering::Full {
        8 << 20
    } else {
        1 << 20
    };
    o.nvm_capacity = (8 << 20).max(o.nvm_bytes_needed() + tables);
}

/// A matrix container (MatrixKV) scaled to test sizes: memtables of at most 256 KiB, 4 KiB
/// pages and room for 8 memtables, so rows switch to the compactor and drain every few
/// flushes. Options without a container are left alone.
pub fn with_small_matrix(o: &mut Options) {
    if o.matrix_bytes == 0 {
        return;
    }
    o.write_buffer_size = o.write_buffer_size.min(256 << 10);
    o.matrix_page_size = 4096;
    o.matrix_bytes = (8 * o.write_buffer_size as u64).max(64 << 10);
}

/// An option set with a name for reports (`<preset>/<variation>`).
#[derive(Debug, Clone)]
pub struct NamedOptions {
    /// `<preset>/<variation>`, e.g. `leveldb/tiny-sst`.
    pub name: String,
    /// The options (their `fs` is replaced by the runner).
    pub options: Options,
}

/// Small memtable and tables so that a few thousand ops flush and compact many times.
/// `write_buffer_size` 8 KiB, `target_file_size` 8 KiB, `max_bytes_for_level_base`
/// 32 KiB, `block_size` 1 KiB, L0 trigger 2.
#[must_use]
pub fn tiny_options(preset: Preset) -> Options {
    let mut o = Options::preset(preset);
    o.write_buffer_size = 8 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.block_size = 1024;
    o.level0_compaction_trigger = 2;
    with_simulated_nvm(&mut o);
    o
}

type Variation = (&'static str, fn(&mut Options));

fn tiny_memtable(o: &mut Options) {
    o.write_buffer_size = 8 * 1024;
}

fn tiny_sst(o: &mut Options) {
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
}

/// The variations applied to every preset. Each one keeps the preset's other choices.
const VARIATIONS: &[Variation] = &[
    ("default", |_| {}),
    ("tiny-memtable", tiny_memtable),
    ("tiny-sst", tiny_sst),
    ("l0-trigger-1", |o| {
        tiny_sst(o);
        o.level0_compaction_trigger = 1;
    }),
    ("l0-trigger-2", |o| {
        tiny_sst(o);
        o.write_buffer_size = 4 * 1024;
        o.level0_compaction_trigger = 2;
    }),
    ("l0-trigger-3", |o| {
        tiny_sst(o);
        o.level0_compaction_trigger = 3;
    }),
    ("prefix-blocks", |o| {
        tiny_sst(o);
        o.block_format = BlockFormat::Prefix;
        o.block_restart_interval = 4;
    }),
    ("keyset-blocks", |o| {
        tiny_sst(o);
        o.block_format = BlockFormat::KeySet;
    }),
    ("block-256", |o| {
        tiny_sst(o);
        o.block_size = 256;
    }),
    ("no-bloom", |o| {
        tiny_sst(o);
        o.bloom_bits_per_key = 0;
    }),
    ("no-cache", |o| {
        tiny_sst(o);
        o.block_cache_capacity = 0;
    }),
    ("compressed", |o| {
        // LZ4 for flushes (L0), Zstd for compaction outputs; blocks that do not shrink
        // enough stay raw, so tables mix both kinds.
        tiny_sst(o);
        o.compression = LevelCompression::per_level(vec![Compression::Lz4, Compression::Zstd]);
    }),
    ("one-background-job", |o| {
        tiny_memtable(o);
        o.max_background_jobs = 1;
        o.num_levels = 3;
    }),
    ("two-levels", |o| {
        tiny_sst(o);
        o.num_levels = 2;
    }),
    ("stall-prone", |o| {
        tiny_sst(o);
        o.write_buffer_size = 4 * 1024;
        o.level0_compaction_trigger = 1;
        o.level0_slowdown_trigger = 2;
        o.level0_stop_trigger = 3;
        o.delayed_write_rate = 64 * 1024 * 1024;
    }),
    ("small-table-cache", |o| {
        tiny_sst(o);
        o.block_size = 256;
        o.max_open_files = 16;
        o.block_cache_capacity = 4 * 1024;
    }),
    ("paranoid-restart-1", |o| {
        tiny_sst(o);
        o.paranoid_checks = true;
        o.block_format = BlockFormat::Prefix;
        o.block_restart_interval = 1;
    }),
    ("nvm-wal", |o| {
        tiny_sst(o);
        o.wal_on_nvm = true;
    }),
    ("nvm-immutable-memtable", |o| {
        tiny_sst(o);
        o.nvm_memtable = NvmMemtable::Immutable;
    }),
    // NoveLSM's mutable NVM memtable in front of whatever L0 the preset has (a matrix
    // container under `matrixkv`).
    ("nvm-mutable-memtable", |o| {
        tiny_sst(o);
        o.nvm_memtable = NvmMemtable::Mutable;
    }),
    // The preset's `overflow` NVM memtable, taking memtables of large entries while DRAM
    // has room (a threshold the generated entries reach).
    ("nvm-overflow-large-entries", |o| {
        tiny_sst(o);
        o.nvm_memtable = NvmMemtable::Overflow;
        o.nvm_memtable_large_entry = 48;
    }),
    ("parallel-reads", |o| {
        tiny_sst(o);
        o.parallel_reads = true;
    }),
    ("units-2-striped", |o| {
        tiny_sst(o);
        with_units(o, 2, PlacementPolicy::Striped);
    }),
    ("units-3-isolated", |o| {
        tiny_sst(o);
        with_units(o, 3, PlacementPolicy::Isolated);
    }),
    ("units-4-per-file", |o| {
        tiny_sst(o);
        with_units(o, 4, PlacementPolicy::PerFile);
    }),
    ("nvm-tables-ps-leveled-1", |o| {
        tiny_sst(o);
        o.nvm_tiering = NvmTiering::Leveled(1);
        o.nvm_table_method = NvmTableMethod::Ps;
    }),
    ("nvm-tables-bac-lru", |o| {
        tiny_sst(o);
        o.nvm_tiering = NvmTiering::Lru(64 << 10);
        o.nvm_table_method = NvmTableMethod::PsBac;
        o.nvm_gc_live_ratio = 0.9;
        o.nvm_gc_pool_share = 0.0;
    }),
    ("nvm-tables-pb-full", |o| {
        tiny_sst(o);
        o.nvm_tiering = NvmTiering::Full;
        o.nvm_gc_live_ratio = 0.9;
        o.nvm_gc_pool_share = 0.0;
    }),
];

/// Spreads the tables of `o` over `n` SSD directories (`/units/u0` ...) with `placement`.
pub fn with_units(o: &mut Options, n: usize, placement: PlacementPolicy) {
    o.ssd_paths = (0..n).map(|i| format!("{UNITS_DIR}/u{i}").into()).collect();
    o.placement = placement;
}

/// A list of named option sets.
#[derive(Debug, Clone)]
pub struct OptionSets(pub Vec<NamedOptions>);

impl OptionSets {
    /// Every preset in `Preset::ALL` crossed with every variation.
    #[must_use]
    pub fn standard() -> Self {
        let mut v = Vec::new();
        for &p in Preset::ALL {
            for (name, f) in VARIATIONS {
                let mut o = Options::preset(p);
                f(&mut o);
                with_simulated_nvm(&mut o);
                v.push(NamedOptions {
                    name: format!("{}/{name}", p.name()),
                    options: o,
                });
            }
        }
        Self(v)
    }

    /// Every preset in `Preset::ALL` with tiny tables under the reverse-bytewise comparator
    /// (the runner stores keys through [`crate::KeyCodec`], so the model and the other
    /// sets' histories still apply). Not among [`OptionSets::standard`]: those may replace
    /// one another across a reopen, which a comparator forbids.
    #[must_use]
    pub fn reverse_order() -> Self {
        let mut v = Vec::new();
        for &p in Preset::ALL {
            for (name, f) in [
                ("reverse-order", tiny_sst as fn(&mut Options)),
                ("reverse-order-prefix-blocks", |o: &mut Options| {
                    tiny_sst(o);
                    o.block_format = BlockFormat::Prefix;
                    o.block_restart_interval = 4;
                }),
            ] {
                let mut o = Options::preset(p);
                f(&mut o);
                o.comparator = Some(std::sync::Arc::new(mezzanine::ReverseBytewise));
                with_simulated_nvm(&mut o);
                v.push(NamedOptions {
                    name: format!("{}/{name}", p.name()),
                    options: o,
                });
            }
        }
        Self(v)
    }

    /// [`OptionSets::standard`] and [`OptionSets::reverse_order`] in the background modes
    /// named by `MEZZ_BACKGROUND`
    /// (`threads`, `manual` or `both`, the default: see [`OptionSets::both_modes`]),
    /// narrowed to the names listed (comma-separated, matched as substrings, e.g.
    /// `novelsm/default+manual`) in the environment variable `MEZZ_OPTION_SETS` when it is
    /// set.
    #[must_use]
    pub fn from_env() -> Self {
        let mut standard = Self::standard();
        standard.0.extend(Self::reverse_order().0);
        let all = match std::env::var("MEZZ_BACKGROUND").as_deref() {
            Ok("threads") => standard,
            Ok("manual") => standard.manual(),
            _ => standard.both_modes(),
        };
        match std::env::var("MEZZ_OPTION_SETS") {
            Ok(filter) if !filter.trim().is_empty() => {
                let pats: Vec<&str> = filter.split(',').map(str::trim).collect();
                Self(
                    all.0
                        .into_iter()
                        .filter(|n| pats.iter().any(|p| n.name.contains(p)))
                        .collect(),
                )
            }
            _ => all,
        }
    }

    /// The set named `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<&NamedOptions> {
        self.0.iter().find(|n| n.name == name)
    }

    /// The same sets with deterministic background work (`manual_background`: no
    /// background threads; flushes and compactions run at the log's `Op::Background`
    /// points and inline where a call would wait for them), named `<set>+manual`.
    #[must_use]
    pub fn manual(&self) -> Self {
        Self(
            self.0
                .iter()
                .map(|n| {
                    let mut o = n.options.clone();
                    o.manual_background = true;
                    NamedOptions {
                        name: format!("{}+manual", n.name),
                        options: o,
                    }
                })
                .collect(),
        )
    }

    /// These sets with background threads followed by the same sets in manual mode.
    #[must_use]
    pub fn both_modes(&self) -> Self {
        let mut v = self.0.clone();
        v.extend(self.manual().0);
        Self(v)
    }

    /// Number of sets.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The sets in order.
    pub fn iter(&self) -> std::slice::Iter<'_, NamedOptions> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_validates_and_names_are_unique() {
        let sets = OptionSets::standard();
        assert_eq!(sets.len(), Preset::ALL.len() * VARIATIONS.len());
        let mut names = std::collections::BTreeSet::new();
        for s in sets.iter() {
            s.options
                .validate()
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
            assert!(names.insert(s.name.clone()), "duplicate {}", s.name);
        }
        tiny_options(Preset::ALL[0]).validate().unwrap();
        assert!(sets.find("leveldb/block-256").is_some());
        for &p in Preset::ALL {
            let c = &sets
                .find(&format!("{}/compressed", p.name()))
                .unwrap()
                .options
                .compression;
            assert_eq!(c.for_level(0), Compression::Lz4);
            assert_eq!(c.for_level(3), Compression::Zstd);
        }
        let both = sets.both_modes();
        assert_eq!(both.len(), 2 * sets.len());
        assert!(
            both.find("novelsm/default+manual")
                .unwrap()
                .options
                .manual_background
        );
        assert!(
            !both
                .find("novelsm/default")
                .unwrap()
                .options
                .manual_background
        );
    }
}
