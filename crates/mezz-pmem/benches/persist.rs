//! Cost of one persist + fence per persistence mode, for 64-byte and 4 KiB ranges, on a
//! region under `/dev/shm` (or the temporary directory when it does not exist). Prints
//! nanoseconds per operation. Run: `cargo bench -p mezz-pmem --bench persist`.

#![allow(clippy::unwrap_used)] // A benchmark binary: failing loudly is fine.

use std::path::Path;
use std::time::Instant;

use mezz_pmem::{Media, PersistMode, Region, RegionOptions, SimNvm};

const LEN: usize = 16 << 20;

fn main() {
    let dir = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let sim = SimNvm::new();
    println!("mode      size   ns/op (write + persist + fence)");
    for mode in PersistMode::ALL {
        let opts = RegionOptions {
            mode,
            emulate_adr: true,
            prefault: true,
            sim: Some(sim.clone()),
            ..RegionOptions::default()
        };
        let region = Region::create(&dir.path().join(mode.name()), LEN, &opts).unwrap();
        for size in [64usize, 4096] {
            let data = vec![0x5Au8; size];
            let ops = if mode == PersistMode::Msync {
                2_000
            } else {
                50_000
            };
            let start = Instant::now();
            for i in 0..ops {
                let off = (i * size) % (LEN - size);
                // SAFETY: one thread uses the region; the range is inside it.
                unsafe { region.write_at(off, &data) };
                region.persist(off, size).unwrap();
                region.fence().unwrap();
            }
            let ns = start.elapsed().as_nanos() / ops as u128;
            println!("{:<9} {size:>5} {ns:>8}", mode.name());
        }
    }
}
