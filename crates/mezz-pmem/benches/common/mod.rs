//! Helpers shared by this crate's benchmarks.

use std::sync::Arc;

use mezz_pmem::{PersistMode, Region, RegionOptions};

/// The value of the environment variable `name` as a number, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A pre-faulted region of `len` bytes in `mode`: anonymous for `Volatile`, else a pool
/// file under `/dev/shm` (or the temporary directory) in flush emulation, removed once
/// mapped. `name` tells the benchmarks' files apart.
pub fn region(name: &str, len: usize, mode: PersistMode) -> Arc<Region> {
    let opts = RegionOptions {
        emulate_adr: true,
        prefault: true,
        ..RegionOptions::with_mode(mode)
    };
    if mode == PersistMode::Volatile {
        return Region::anonymous(len, &opts).expect("anonymous region");
    }
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("mezz-{name}-bench-{}.pool", std::process::id()));
    let region = Region::create(&path, len, &opts).expect("pool file");
    let _ = std::fs::remove_file(&path);
    region
}
