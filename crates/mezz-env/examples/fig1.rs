//! Prints read throughput against the read share of a mix on the simulated flash device
//! (`simulate_mix`), for a conventional SSD (every I/O striped over all units) and for units
//! isolated between reads and writes. Deterministic (virtual time).
//!
//! Usage: `cargo run -p mezz-env --example fig1 [split|per-io] [--json]` (`--json`: one
//! JSON object per line instead of the table).

use mezz_env::{Arrangement, MixConfig, MixMode, MixResult, simulate_mix};

fn run(read_pct: u32, arrangement: Arrangement, mode: MixMode) -> Result<MixResult, String> {
    let cfg = MixConfig {
        mode,
        ..MixConfig::flash(read_pct, arrangement)
    };
    simulate_mix(&cfg).map_err(|e| e.to_string())
}

fn json_line(arrangement: &str, pct: u32, r: &MixResult, read_only: &MixResult) -> String {
    format!(
        "{{\"arrangement\":\"{arrangement}\",\"read_pct\":{pct},\"read_mb_s\":{:.3},\
         \"write_mb_s\":{:.3},\"read_iops\":{:.1},\"write_iops\":{:.1},\"read_p50_us\":{},\
         \"read_p99_us\":{},\"read_share_of_read_only\":{:.4}}}",
        r.read_mb_s,
        r.write_mb_s,
        r.read_iops,
        r.write_iops,
        r.read_p50_ns / 1000,
        r.read_p99_ns / 1000,
        r.read_mb_s / read_only.read_mb_s
    )
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let mode = match args.iter().find(|a| *a != "--json").map(String::as_str) {
        None | Some("split") => MixMode::SplitJobs,
        Some("per-io") => MixMode::PerIo,
        Some(other) => return Err(format!("unknown mode {other:?}: expected split or per-io")),
    };
    let iso = Arrangement::Isolated { read_units: 2 };
    let shared_ro = run(100, Arrangement::Shared, mode)?;
    let iso_ro = run(100, iso, mode)?;
    if !json {
        println!("mode {mode:?}; 4 flash units, 4 KiB random reads, 128 KiB sequential writes");
        println!(
            "read%   shared: read MB/s  (% of RO)  p99 µs  write MB/s |  isolated 2+2: read MB/s  (% of RO)  p99 µs  write MB/s"
        );
    }
    for pct in [100, 90, 75, 50, 25, 10, 0] {
        let s = run(pct, Arrangement::Shared, mode)?;
        let i = run(pct, iso, mode)?;
        if json {
            println!("{}", json_line("shared", pct, &s, &shared_ro));
            println!("{}", json_line("isolated-2+2", pct, &i, &iso_ro));
            continue;
        }
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
