//! `mezz nvm-calibrate`: checks that the emulated NVM cost gives what each profile says.
//!
//! On one file of two areas (`--size` each, 1 GiB by default: larger than the CPU caches)
//! under `--dir` (`/dev/shm` by default), mapped once per profile through
//! `mezz_nvtable::calibrate`, it measures with the profile's charges applied: (a) random
//! dependent 64-byte reads (a pointer chase over a random cyclic permutation of the lines,
//! one access per load); (b) a sequential scan in 256-byte loads, reported as one access
//! streaming on; (c) read bandwidth, 1 and 2 threads, 4-64 KiB copies; (d) write bandwidth
//! with persistence (copy, persist, fence, as the engine writes), 1 and 2 threads; (e)
//! random persisted 64-byte writes. The `dram` profile runs first: the host's own figures.
//! Every row of another profile runs in turns with the same measurement on a `dram`
//! mapping of the file, which says what this host gives under the same conditions.
//!
//! Each row compares the profile's figure with the measurement (`ok` within 20 %). A row
//! that misses is `host` when the host cannot reach the figure (its own memory is slower,
//! or the accesses are latency-bound) and the measurement is within 20 % of what the model
//! predicts on this host (the profile's charges on top of the host's own time, measured in
//! turns), else `MISS` (the model is wrong). Every measurement is the best of `--reps` short runs: on a
//! shared machine a run the scheduler interrupted is slower, and none can be faster than
//! the emulation allows (its waits are spins that cannot be cut short, its channels never
//! grant more than their rate and one burst). `--json FILE` appends one JSON object per row.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mezz_nvtable::calibrate::{Calibration, Sample};
use mezz_pmem::{CostModel, NvmProfile, RegionStats};

use crate::common::{CliError, Result};

/// Arguments of `mezz nvm-calibrate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Profile to check: dram, optane, optane-6, cxl, or `all`. The host's own figures
    /// (profile dram) are measured first in every case.
    #[arg(long, default_value = "all")]
    profile: String,
    /// Bytes of each of the two areas of the calibration file (the read area holds the
    /// pointer chase, the write area takes the writes), e.g. 1G. At least 64 MiB to be
    /// larger than the CPU caches.
    #[arg(long, default_value = "1G", value_parser = crate::bench::parse_size)]
    size: u64,
    /// Directory of the calibration file (removed at the end). Default: /dev/shm, else the
    /// system's temporary directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Append one JSON object per row to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Loads of the pointer chase per run (each run goes on along the cycle, so the runs
    /// together visit reps x steps distinct lines).
    #[arg(long, default_value_t = 200_000)]
    steps: u64,
    /// Seconds of each bandwidth run.
    #[arg(long, default_value_t = 0.1)]
    seconds: f64,
    /// Runs of each measurement; the best is kept (a run the scheduler interrupted is
    /// slower, never faster: the emulation's waits cannot be cut short).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Instead of the table of figures: the pointer chase over read areas of these sizes
    /// (comma-separated, e.g. 256K,1M,4M,64M), under each profile and on the host's own
    /// memory, in turns: the working set where the profile's CPU cache model stops serving
    /// the chase, beside the one where the host's caches do.
    #[arg(long, value_delimiter = ',', value_parser = crate::bench::parse_size)]
    working_sets: Vec<u64>,
}

/// The unit of a row's figure and measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    /// Nanoseconds (lower is better).
    Ns,
    /// GB/s, 10^9 bytes per second (higher is better).
    Gbps,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Gbps => "GB/s",
        }
    }
}

/// One line of the table.
#[derive(Clone, Debug)]
struct Row {
    profile: NvmProfile,
    /// Which measurement: `a-random-read`, `b-seq-read`, ...
    name: &'static str,
    threads: usize,
    access: usize,
    unit: Unit,
    /// What the profile says (its published figure, or what the model makes of it for
    /// this access pattern); `None` for the host's rows.
    figure: Option<f64>,
    /// What the model predicts on this host (the profile's charges on top of the host's
    /// own time), when it differs from the figure.
    predicted: Option<f64>,
    measured: f64,
    /// The `dram` measurement of the same row.
    host: Option<f64>,
    status: &'static str,
    note: String,
    sample: Sample,
    /// What the region charged during the row (every run of it).
    charged: RegionStats,
}

impl Row {
    fn ratio(&self) -> Option<f64> {
        self.figure.filter(|f| *f > 0.0).map(|f| self.measured / f)
    }
}

fn within(measured: f64, want: f64) -> bool {
    want > 0.0 && (measured / want - 1.0).abs() <= 0.2
}

/// Whether `a` is worse than `b` in `unit` (slower).
fn worse(unit: Unit, a: f64, b: f64) -> bool {
    match unit {
        Unit::Ns => a > b,
        Unit::Gbps => a < b,
    }
}

/// Decides a row's status and note from its figure, prediction and host figure.
fn judge(row: &mut Row) {
    let Some(figure) = row.figure else {
        row.status = "host";
        return;
    };
    if within(row.measured, figure) {
        row.status = "ok";
        return;
    }
    match row.predicted {
        // The host itself falls short of the figure (the prediction, the profile's
        // charges on top of the host's own time, is worse than it) and the emulation gives
        // what the model predicts here.
        Some(p) if worse(row.unit, p, figure) && within(row.measured, p) => {
            row.status = "host";
            let host = row
                .host
                .map(|h| format!("{h:.1} {}", row.unit.name()))
                .unwrap_or_default();
            row.note = format!(
                "out of reach here: the host itself gives {host}; the model predicts {p:.1} on \
                 this host"
            );
        }
        Some(p) => {
            row.status = "MISS";
            row.note = format!("the model predicts {p:.1} here; measured differs");
        }
        None => {
            row.status = "MISS";
        }
    }
}

/// The best sample by `unit` (the fastest).
fn pick(unit: Unit, metric: &impl Fn(&Sample) -> f64, samples: Vec<Sample>) -> Sample {
    samples
        .into_iter()
        .reduce(|a, b| {
            let (ma, mb) = (metric(&a), metric(&b));
            let b_better = match unit {
                Unit::Ns => mb < ma,
                Unit::Gbps => mb > ma,
            };
            if b_better { b } else { a }
        })
        .unwrap_or_default()
}

/// What a bandwidth kernel gave, run in turns on a profile's and the host's mappings.
struct Run {
    /// The profile's best run.
    sample: Sample,
    /// The host's best bandwidth, in GB/s (`None` when measuring `dram` itself).
    host: Option<f64>,
    /// What the profile's region charged during every run.
    charged: RegionStats,
}

/// Runs the bandwidth `kernel` `reps` times on the profile's mapping `c` and, in turns, on
/// the host's `h` (when measuring a profile other than `dram`); keeps the best of each.
fn in_turns(
    c: &mut Calibration,
    mut h: Option<&mut Calibration>,
    reps: usize,
    mut kernel: impl FnMut(&mut Calibration) -> Sample,
) -> Run {
    let before = c.stats();
    let mut ps = Vec::new();
    let mut hs = Vec::new();
    for _ in 0..reps.max(1) {
        if let Some(h) = h.as_deref_mut() {
            hs.push(kernel(h));
        }
        ps.push(kernel(c));
    }
    let best = |samples| pick(Unit::Gbps, &Sample::gb_per_sec, samples);
    Run {
        sample: best(ps),
        host: (!hs.is_empty()).then(|| best(hs).gb_per_sec()),
        charged: delta(&c.stats(), &before),
    }
}

/// One measured row before judging.
struct Measured {
    name: &'static str,
    threads: usize,
    access: usize,
    unit: Unit,
    figure: f64,
    predicted: Option<f64>,
    measured: f64,
    host: Option<f64>,
    sample: Sample,
    /// What the region charged during the row (every run of it).
    charged: RegionStats,
    /// Said of the row when it passes.
    note: String,
}

impl Measured {
    /// A row in GB/s: `run` against the profile's `figure` and the model's prediction.
    fn gbps(
        name: &'static str,
        threads: usize,
        access: usize,
        figure: f64,
        predicted: Option<f64>,
        run: &Run,
    ) -> Measured {
        Measured {
            name,
            threads,
            access,
            unit: Unit::Gbps,
            figure,
            predicted,
            measured: run.sample.gb_per_sec(),
            host: run.host,
            sample: run.sample,
            charged: run.charged,
            note: String::new(),
        }
    }
}

/// Measures every row for one profile. `host_cal`: a `dram` mapping of the same file
/// (`None` when measuring `dram` itself), run in turns with the profile's for every row, so
/// that each row is compared with the host's own figure under the same conditions (the
/// machine may be shared); the pointer chases of the two take turns along one cycle.
fn measure(c: &mut Calibration, mut host_cal: Option<&mut Calibration>, args: &Args) -> Vec<Row> {
    let profile = c.profile();
    let m: CostModel = profile.model();
    let reps = args.reps;
    let min = Duration::from_secs_f64(args.seconds.max(0.01));
    let gb = |bps: u64| bps as f64 / 1e9;
    let per_line = |gbps: f64| if gbps > 0.0 { 64.0 / gbps } else { 0.0 };
    let extra = m.read_extra_ns() as f64;
    let mut out: Vec<Measured> = Vec::new();

    // (a) random dependent 64 B reads.
    let before = c.stats();
    let ns_op = |s: &Sample| s.ns_per_op(1);
    // Three chases take turns along the cycle: the host's own, the host's with a plain spin
    // of the profile's added latency after each load, and the profile's.
    let mut added: Vec<f64> = Vec::new();
    let mut spaced: Vec<f64> = Vec::new();
    let (s, h) = {
        let mut ps = Vec::new();
        let mut hs = Vec::new();
        // Three times the runs of the other rows: the added latency is a small difference
        // of two noisy figures.
        for _ in 0..3 * reps.max(1) {
            let mut host_spaced = None;
            if let Some(h) = host_cal.as_deref_mut() {
                h.set_chase_position(c.chase_position());
                hs.push(h.random_reads(args.steps));
                let r = h.random_reads_spaced(args.steps, m.read_extra_ns());
                host_spaced = Some(r.ns_per_op(1) - extra);
                c.set_chase_position(h.chase_position());
            }
            let r = c.random_reads(args.steps);
            if let Some(hs) = host_spaced {
                added.push(r.ns_per_op(1) - hs);
                spaced.push(hs);
            }
            ps.push(r);
        }
        let host = (!hs.is_empty()).then(|| pick(Unit::Ns, &ns_op, hs));
        (pick(Unit::Ns, &ns_op, ps), host)
    };
    // The latency the profile adds: over the host's own latency when its loads are as far
    // apart (the spaced chase, less its spin), the median of runs made one after the other
    // (the host's latency drifts between runs on a shared machine).
    let quartiles = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let q = |f: usize| v.get(v.len() * f / 4).copied();
        (q(1), q(2), q(3))
    };
    let (added_q1, added, added_q3) = quartiles(added);
    let host_spaced = quartiles(spaced).1;
    let charged = delta(&c.stats(), &before);
    let host_a = h.map(|h| h.ns_per_op(1));
    out.push(Measured {
        name: "a-random-read",
        threads: 1,
        access: 64,
        unit: Unit::Ns,
        figure: f64::from(m.read_random_ns),
        predicted: host_a.map(|h| h + extra),
        measured: s.ns_per_op(1),
        host: host_a,
        sample: s,
        charged,
        note: String::new(),
    });
    if let Some(added) = added {
        out.push(Measured {
            name: "a-random-read-added",
            threads: 1,
            access: 64,
            unit: Unit::Ns,
            figure: extra,
            predicted: None,
            measured: added,
            host: host_spaced,
            sample: s,
            charged,
            note: match (host_spaced, host_a, added_q1, added_q3) {
                (Some(sp), Some(h), Some(q1), Some(q3)) => format!(
                    "median of {} paired runs (quartiles {q1:.0}-{q3:.0}) over the host's own \
                     {sp:.0} ns with loads this far apart ({h:.0} ns back to back)",
                    3 * reps.max(1)
                ),
                _ => String::new(),
            },
        });
    }

    // (b) a sequential scan, 256 B loads, one access streaming on.
    let run = in_turns(
        c,
        host_cal.as_deref_mut(),
        reps,
        Calibration::sequential_reads,
    );
    let predicted = run.host.map(|h| h.min(gb(m.read_bytes_per_sec)));
    out.push(Measured::gbps(
        "b-seq-read",
        1,
        256,
        gb(m.read_bytes_per_sec),
        predicted,
        &run,
    ));
    out.push(Measured {
        name: "b-seq-read-per-line",
        threads: 1,
        access: 64,
        unit: Unit::Ns,
        figure: per_line(gb(m.read_bytes_per_sec)),
        predicted: predicted.map(per_line),
        measured: per_line(run.sample.gb_per_sec()),
        host: run.host.map(per_line),
        sample: run.sample,
        charged: run.charged,
        note: String::new(),
    });

    // (c) read bandwidth and (d) write bandwidth with persistence.
    for (name, write) in [("c-read-bw", false), ("d-write-bw", true)] {
        let (bw, lat) = if write {
            (m.write_bytes_per_sec, f64::from(m.write_extra_ns))
        } else {
            (m.read_bytes_per_sec, extra)
        };
        for threads in [1, 2] {
            for access in [4096, 16 << 10, 64 << 10] {
                let run = in_turns(c, host_cal.as_deref_mut(), reps, |c| {
                    if write {
                        c.write_bandwidth(threads, access, min)
                    } else {
                        c.read_bandwidth(threads, access, min)
                    }
                });
                // On this host: each thread pays its own copy time (the host's rate per
                // thread) plus the profile's latency per access; all share the channel.
                let predicted = run.host.map(|h| {
                    let per_thread_ns = access as f64 / (h / threads as f64);
                    (threads as f64 * access as f64 / (per_thread_ns + lat)).min(gb(bw))
                });
                out.push(Measured::gbps(
                    name,
                    threads,
                    access,
                    gb(bw),
                    predicted,
                    &run,
                ));
            }
        }
    }

    // (e) random persisted 64 B writes: the device moves a whole unit for each.
    let unit_bytes = m.units_spanned(0, 64).max(64) as f64;
    let effective = gb(m.write_bytes_per_sec) * 64.0 / unit_bytes;
    let wlat = f64::from(m.write_extra_ns);
    for threads in [1, 2] {
        let run = in_turns(c, host_cal.as_deref_mut(), reps, |c| {
            c.random_persisted_writes(threads, min)
        });
        let predicted = run.host.map(|h| {
            let per_thread_ns = 64.0 / (h / threads as f64);
            (threads as f64 * 64.0 / (per_thread_ns + wlat)).min(effective)
        });
        out.push(Measured::gbps(
            "e-rand-write-64B",
            threads,
            64,
            effective,
            predicted,
            &run,
        ));
        // Per write, per thread: the device's time for `threads` writes, or the latency.
        let ns_of = |gbps: f64| {
            if gbps > 0.0 {
                threads as f64 * 64.0 / gbps
            } else {
                0.0
            }
        };
        out.push(Measured {
            name: "e-rand-write-64B-ns",
            threads,
            access: 64,
            unit: Unit::Ns,
            figure: ns_of(effective).max(wlat),
            predicted: predicted.map(|p| ns_of(p).max(wlat)),
            measured: run.sample.ns_per_op(threads),
            host: run.host.map(ns_of),
            sample: run.sample,
            charged: run.charged,
            note: String::new(),
        });
    }

    let is_host = profile == NvmProfile::Dram;
    out.into_iter()
        .map(|x| {
            let mut row = Row {
                profile,
                name: x.name,
                threads: x.threads,
                access: x.access,
                unit: x.unit,
                figure: (!is_host).then_some(x.figure),
                predicted: if is_host { None } else { x.predicted },
                measured: x.measured,
                host: x.host,
                status: "",
                note: String::new(),
                sample: x.sample,
                charged: x.charged,
            };
            judge(&mut row);
            if row.note.is_empty() {
                row.note = x.note;
            }
            if is_host && x.name == "a-random-read" {
                row.note = "the paper's DRAM: 81 ns".into();
            }
            row
        })
        .collect()
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn fmt_access(b: usize) -> String {
    if b >= 1024 {
        format!("{}K", b / 1024)
    } else {
        b.to_string()
    }
}

fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<9} {:<21} {:>3} {:>6} {:>5} {:>8} {:>9} {:>6}  {:<6} note",
        "profile", "row", "thr", "access", "unit", "profile", "measured", "ratio", "status"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<9} {:<21} {:>3} {:>6} {:>5} {:>8} {:>9} {:>6}  {:<6} {}",
            r.profile.name(),
            r.name,
            r.threads,
            fmt_access(r.access),
            r.unit.name(),
            r.figure.map_or_else(|| "-".to_string(), fmt_num),
            fmt_num(r.measured),
            r.ratio()
                .map_or_else(|| "-".to_string(), |x| format!("{x:.2}")),
            r.status,
            r.note
        );
    }
    s
}

fn json(r: &Row, area: usize) -> serde_json::Value {
    serde_json::json!({
        "benchmark": "nvm-calibrate",
        "profile": r.profile.name(),
        "row": r.name,
        "threads": r.threads,
        "access_bytes": r.access,
        "unit": r.unit.name(),
        "figure": r.figure,
        "predicted": r.predicted,
        "measured": r.measured,
        "ratio": r.ratio(),
        "host": r.host,
        "status": r.status,
        "note": r.note,
        "ops": r.sample.ops,
        "bytes": r.sample.bytes,
        "elapsed_ns": u64::try_from(r.sample.elapsed.as_nanos()).unwrap_or(u64::MAX),
        // Over every run of the row (the best run is what `measured` reports).
        "emulated_delay_ns": r.charged.emulated_delay_ns,
        "read_accesses": r.charged.read_accesses,
        "read_device_bytes": r.charged.read_device_bytes,
        "write_accesses": r.charged.write_accesses,
        "write_device_bytes": r.charged.write_device_bytes,
        "device_bytes_per_read": per(r.charged.read_device_bytes, r.charged.read_accesses),
        "device_bytes_per_write": per(r.charged.write_device_bytes, r.charged.write_accesses),
        "area_bytes": area,
        "model": model_json(r.profile.model()),
    })
}

/// The counters `now` has beyond `before`.
fn delta(now: &RegionStats, before: &RegionStats) -> RegionStats {
    RegionStats {
        persists: now.persists - before.persists,
        fences: now.fences - before.fences,
        bytes_persisted: now.bytes_persisted - before.bytes_persisted,
        emulated_delay_ns: now.emulated_delay_ns - before.emulated_delay_ns,
        read_accesses: now.read_accesses - before.read_accesses,
        read_device_bytes: now.read_device_bytes - before.read_device_bytes,
        read_cache_hits: now.read_cache_hits - before.read_cache_hits,
        write_accesses: now.write_accesses - before.write_accesses,
        write_device_bytes: now.write_device_bytes - before.write_device_bytes,
    }
}

/// `bytes / accesses`, `None` without accesses.
fn per(bytes: u64, accesses: u64) -> Option<f64> {
    (accesses > 0).then(|| bytes as f64 / accesses as f64)
}

fn model_json(m: CostModel) -> serde_json::Value {
    serde_json::json!({
        "read_random_ns": m.read_random_ns,
        "read_seq_ns": m.read_seq_ns,
        "dram_read_ns": m.dram_read_ns,
        "write_extra_ns": m.write_extra_ns,
        "access_bytes": m.access_bytes,
        "read_bytes_per_sec": m.read_bytes_per_sec,
        "write_bytes_per_sec": m.write_bytes_per_sec,
        "cache_bytes": m.cache_bytes,
    })
}

/// Runs `mezz nvm-calibrate`.
pub fn run(args: &Args) -> Result<()> {
    let profiles: Vec<NvmProfile> = if args.profile.trim().eq_ignore_ascii_case("all") {
        NvmProfile::ALL.to_vec()
    } else {
        let p: NvmProfile = args
            .profile
            .parse()
            .map_err(|e: <NvmProfile as std::str::FromStr>::Err| CliError::Failed(e.to_string()))?;
        vec![p]
    };
    let area = usize::try_from(args.size)
        .map_err(|_| CliError::Failed(format!("--size {} is too large", args.size)))?;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None if Path::new("/dev/shm").is_dir() => PathBuf::from("/dev/shm"),
        None => std::env::temp_dir(),
    };
    let tmp = tempfile::Builder::new()
        .prefix("mezz-calibrate-")
        .tempdir_in(&dir)
        .map_err(|e| CliError::Failed(format!("{}: {e}", dir.display())))?;
    if !args.working_sets.is_empty() {
        return working_sets(args, &profiles, tmp.path());
    }
    let path = tmp.path().join("calibration");
    eprintln!(
        "preparing {} ({} bytes: a read area with a pointer chase, a write area)",
        path.display(),
        2 * area
    );
    Calibration::prepare(&path, area, 0x5eed).map_err(failed)?;
    let mut all: Vec<Row> = Vec::new();
    let mut order = vec![NvmProfile::Dram];
    order.extend(profiles.iter().copied().filter(|p| *p != NvmProfile::Dram));
    for p in order {
        eprintln!("measuring profile {p}");
        let mut c = Calibration::open(&path, area, p).map_err(failed)?;
        let mut h = if p == NvmProfile::Dram {
            None
        } else {
            Some(Calibration::open(&path, area, NvmProfile::Dram).map_err(failed)?)
        };
        all.extend(measure(&mut c, h.as_mut(), args));
    }
    let text = table(&all);
    print!("{text}");
    if let Some(file) = &args.json {
        append_json_lines(file, all.iter().map(|r| json(r, c_area(area))))?;
    }
    Ok(())
}

/// Appends one JSON object per line to `file` (created if missing).
fn append_json_lines(file: &Path, rows: impl Iterator<Item = serde_json::Value>) -> Result<()> {
    let err = |e: std::io::Error| CliError::Failed(format!("{}: {e}", file.display()));
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(err)?;
    for r in rows {
        writeln!(f, "{r}").map_err(err)?;
    }
    Ok(())
}

/// `--working-sets`: for each size, a chase file of that read area; the host's chase and
/// each profile's take turns along one cycle (after a warm-up pass of two laps each), best
/// of `--reps` runs. Prints one row per size and profile; `--json` appends them.
fn working_sets(args: &Args, profiles: &[NvmProfile], dir: &Path) -> Result<()> {
    let mut rows = Vec::new();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{:<9} {:>12} {:>10} {:>12} {:>10} {:>14} {:>12}",
        "profile", "read area", "host ns", "profile ns", "added ns", "charged/load", "model cache"
    );
    for &size in &args.working_sets {
        let area = usize::try_from(size)
            .map_err(|_| CliError::Failed(format!("working set {size} is too large")))?;
        let path = dir.join(format!("ws-{size}"));
        Calibration::prepare(&path, area, 0x5eed).map_err(failed)?;
        for &p in profiles.iter().filter(|p| **p != NvmProfile::Dram) {
            let mut c = Calibration::open(&path, area, p).map_err(failed)?;
            let mut h = Calibration::open(&path, area, NvmProfile::Dram).map_err(failed)?;
            let lap = (c.area() / 64) as u64;
            h.random_reads(2 * lap);
            c.random_reads(2 * lap);
            let (mut best_h, mut best_p) = (f64::INFINITY, f64::INFINITY);
            let before = c.stats();
            let mut loads = 0u64;
            for _ in 0..args.reps.max(1) {
                h.set_chase_position(c.chase_position());
                best_h = best_h.min(h.random_reads(args.steps).ns_per_op(1));
                c.set_chase_position(h.chase_position());
                best_p = best_p.min(c.random_reads(args.steps).ns_per_op(1));
                loads += args.steps;
            }
            let d = delta(&c.stats(), &before);
            let charged = d.read_accesses as f64 / loads.max(1) as f64;
            let m = p.model();
            let _ = writeln!(
                text,
                "{:<9} {:>12} {:>10.1} {:>12.1} {:>10.1} {:>14.3} {:>12}",
                p.name(),
                area,
                best_h,
                best_p,
                best_p - best_h,
                charged,
                m.cache_bytes
            );
            rows.push(serde_json::json!({
                "kind": "working_set",
                "profile": p.name(),
                "area_bytes": c.area(),
                "steps": args.steps,
                "reps": args.reps,
                "host_ns_per_load": best_h,
                "profile_ns_per_load": best_p,
                "added_ns_per_load": best_p - best_h,
                "charged_accesses_per_load": charged,
                "cache_hits_per_load": d.read_cache_hits as f64 / loads.max(1) as f64,
                "model": model_json(m),
            }));
        }
        std::fs::remove_file(&path)
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    }
    print!("{text}");
    if let Some(file) = &args.json {
        append_json_lines(file, rows.into_iter())?;
    }
    Ok(())
}

fn c_area(area: usize) -> usize {
    area / 4096 * 4096
}

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(e.to_string())
}
