//! Prints read throughput against the read share of a mix on the simulated flash device
//! (`simulate_mix`), for a conventional SSD (every I/O striped over all units) and for units
//! isolated between reads and writes. Deterministic (virtual time).
//!
//! Usage: `cargo run -p mezz-env --example fig1 [split|per-io]`

use mezz_env::{Arrangement, MixConfig, MixMode, MixResult, simulate_mix};

fn run(read_pct: u32, arrangement: Arrangement, mode: MixMode) -> Result<MixResult, String> {
    let cfg = MixConfig {
        mode,
        ..MixConfig::flash(read_pct, arrangement)
    };
    simulate_mix(&cfg).map_err(|e| e.to_string())
}

fn main() -> Result<(), String> {
    let mode = match std::env::args().nth(1).as_deref() {
        None | Some("split") => MixMode::SplitJobs,
        Some("per-io") => MixMode::PerIo,
        Some(other) => return Err(format!("unknown mode {other:?}: expected split or per-io")),
    };
    let iso = Arrangement::Isolated { read_units: 2 };
    let shared_ro = run(100, Arrangement::Shared, mode)?;
    let iso_ro = run(100, iso, mode)?;
    println!("mode {mode:?}; 4 flash units, 4 KiB random reads, 128 KiB sequential writes");
    println!(
        "read%   shared: read MB/s  (% of RO)  p99 µs  write MB/s |  isolated 2+2: read MB/s  (% of RO)  p99 µs  write MB/s"
    );
    for pct in [100, 90, 75, 50, 25, 10, 0] {
        let s = run(pct, Arrangement::Shared, mode)?;
        let i = run(pct, iso, mode)?;
        println!(
            "{pct:>5}  {:>18.1}  {:>8.1}%  {:>6}  {:>10.1} | {:>24.1}  {:>8.1}%  {:>6}  {:>10.1}",
            s.read_mb_s,
            100.0 * s.read_mb_s / shared_ro.read_mb_s,
            s.read_p99_ns / 1000,
            s.write_mb_s,
            i.read_mb_s,
            100.0 * i.read_mb_s / iso_ro.read_mb_s,
            i.read_p99_ns / 1000,
            i.write_mb_s,
        );
    }
    Ok(())
}
