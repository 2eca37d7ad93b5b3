//! Comparator engines for side-by-side benchmarks: RocksDB, LevelDB and fjall adapters
//! behind cargo features, plus their "on NVM" variants.
//!
//! [`factory`] turns an engine name (one of [`ENGINE_NAMES`]) and an [`EngineSetup`] (the
//! options every comparator is given the same way: memtable size, block cache, bloom bits,
//! NVM path, sync) into an [`EngineFactory`]. An engine that this binary was built without
//! is still a known name: asking for it returns an `InvalidArgument` error that names the
//! cargo feature to build with, so the default build needs no C or C++ library.
//!
//! Invariants: every factory opens its database in the harness's directory `dir`; the
//! "-nvm" variants put some or all of their files under `EngineSetup::nvm_dir`, and their
//! `destroy` removes those too. Thread-safety: factories are `Send + Sync` and used from
//! the driving thread; the engines they open are shared by the worker threads.

use std::path::PathBuf;

use crate::engine::EngineFactory;
use crate::error::{BenchError, Result};

/// Options given to every comparator engine in the same way, so that side-by-side runs
/// compare like with like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSetup {
    /// Bytes of memtable before a flush (RocksDB/LevelDB `write_buffer_size`).
    pub write_buffer_size: usize,
    /// Bytes of block cache (uncompressed data blocks).
    pub block_cache_bytes: usize,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits: u32,
    /// The emulated NVM directory, required by the "-nvm" variants.
    pub nvm_dir: Option<PathBuf>,
    /// Whether the engine syncs its log on every write by default (the harness also passes
    /// `sync` per write; an engine syncs when either asks).
    pub sync: bool,
}

impl Default for EngineSetup {
    fn default() -> Self {
        Self {
            write_buffer_size: 64 << 20,
            block_cache_bytes: 8 << 20,
            bloom_bits: 10,
            nvm_dir: None,
            sync: false,
        }
    }
}

/// Every engine name, compiled in or not.
pub const ENGINE_NAMES: &[&str] = &[
    "mezzanine",
    "rocksdb",
    "rocksdb-l0-nvm",
    "leveldb",
    "leveldb-nvm",
    "fjall",
];

/// A factory for the non-Mezzanine engine `name`, configured by `setup`.
///
/// # Errors
/// `InvalidArgument` when the engine is not compiled into this binary (the message names
/// the cargo feature to build with), when an "-nvm" variant has no `setup.nvm_dir`, for
/// `mezzanine` (whose factory is built from its own options) and for unknown names.
pub fn factory(name: &str, setup: &EngineSetup) -> Result<Box<dyn EngineFactory>> {
    let _ = setup;
    match name {
        "mezzanine" => Err(BenchError::InvalidArgument(
            "mezzanine is not a comparator engine: build its factory from its options \
             (MezzFactory)"
                .into(),
        )),
        "rocksdb" | "rocksdb-l0-nvm" => Err(not_compiled(
            name,
            "build with `--features rocksdb` (Debian's library) or `--features \
             rocksdb-release` (bundled release build)",
        )),
        "leveldb" | "leveldb-nvm" => Err(not_compiled(
            name,
            "build with `--features leveldb` (Debian's library)",
        )),
        "fjall" => Err(not_compiled(name, "build with `--features fjall`")),
        _ => Err(BenchError::InvalidArgument(format!(
            "unknown engine {name:?}; known engines: {}",
            ENGINE_NAMES.join(", ")
        ))),
    }
}

/// The engines this binary has compiled in (always including `mezzanine`).
#[must_use]
pub fn compiled_in() -> Vec<&'static str> {
    vec!["mezzanine"]
}

fn not_compiled(name: &str, how: &str) -> BenchError {
    BenchError::InvalidArgument(format!("{name} is not compiled in: {how}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_mezzanine_names_are_refused() {
        let s = EngineSetup::default();
        assert!(matches!(
            factory("nope", &s),
            Err(BenchError::InvalidArgument(_))
        ));
        assert!(matches!(
            factory("mezzanine", &s),
            Err(BenchError::InvalidArgument(_))
        ));
        assert!(compiled_in().contains(&"mezzanine"));
        for name in compiled_in() {
            assert!(ENGINE_NAMES.contains(&name));
        }
    }
}
