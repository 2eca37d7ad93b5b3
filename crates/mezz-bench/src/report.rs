//! Results of one benchmark: the [`BenchResult`] record, its one-line human rendering (in
//! db_bench's style) and its JSON-lines form.
//!
//! A `BenchResult` is plain data, built by the runner once the benchmark's threads have
//! joined. The JSON object carries the full configuration and machine facts, so that a line
//! of a results file is self-describing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::metrics::LatencySummary;
use crate::sysinfo::MachineInfo;

/// Engine-reported figures for the benchmark's interval (difference of two snapshots).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineInterval {
    /// Storage bytes written per user byte written during the interval (`None` if no user
    /// byte was written).
    pub write_amplification: Option<f64>,
    /// Microseconds writers were slowed down or stopped.
    pub stall_micros: u64,
    /// User bytes accepted.
    pub user_bytes_written: u64,
    /// Bytes written to storage (WAL, flushes, compactions).
    pub storage_bytes_written: u64,
    /// Bytes the engine made durable on its NVM tier.
    pub nvm_bytes_written: u64,
}

/// Process-level figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessMetrics {
    /// User CPU seconds spent during the benchmark (all threads, including the engine's).
    pub cpu_user_secs: Option<f64>,
    /// System CPU seconds spent during the benchmark.
    pub cpu_sys_secs: Option<f64>,
    /// Peak resident set size of the process so far (not reset between benchmarks).
    pub peak_rss_bytes: Option<u64>,
    /// Under `--memory-limit`: the peak memory use so far of the process's memory cgroup,
    /// heap and page cache together (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`; not
    /// reset between benchmarks); `None` without a limit or where the kernel has no such
    /// file.
    pub cgroup_peak_bytes: Option<u64>,
    /// Bytes the process caused to be written to storage during the benchmark
    /// (`write_bytes` of `/proc/self/io`, including the settling after it).
    pub storage_write_bytes: Option<u64>,
    /// `storage_write_bytes` per byte of keys and values the benchmark wrote: write
    /// amplification as the kernel saw it (counts every file the process wrote, NVM pool
    /// files on a disk-backed path included; tmpfs writes are not counted).
    pub write_amplification: Option<f64>,
    /// CPU seconds the whole machine was busy during the benchmark and its settling (every
    /// process and kernel thread: the kernel's writeback workers, other tenants' work).
    pub machine_busy_secs: Option<f64>,
    /// CPU seconds stolen by the hypervisor during the benchmark and its settling: above
    /// zero, the VM's CPUs waited for the host, and the run was slowed by it.
    pub machine_steal_secs: Option<f64>,
}

/// Space used after the benchmark (once background work finished).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpaceUsage {
    /// Bytes of the files under the database directory.
    pub db_bytes: u64,
    /// Bytes of the files under the NVM directory, if one was given.
    pub nvm_bytes: Option<u64>,
    /// Logical live bytes: keys × (key size + value size).
    pub logical_bytes: u64,
    /// `db_bytes / logical_bytes` (the NVM directory is reported apart in `nvm_bytes`: a
    /// pool is allocated whole, so its size is the tier's, not the data's).
    pub space_amplification: Option<f64>,
}

/// How durable the writes were.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Durability {
    /// Every write was synchronous.
    pub sync: bool,
    /// The engine's NVM persistence mode, when its configuration has one.
    pub nvm_persistence: Option<String>,
}

/// Everything measured for one benchmark.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchResult {
    /// The benchmark's name, e.g. `fillrandom`.
    pub benchmark: String,
    /// The engine's name.
    pub engine: String,
    /// The engine's version and build.
    pub engine_version: String,
    /// The sweep point the benchmark ran at (e.g. `value_size=256`), if sweeping.
    pub point: Option<String>,
    /// Durability of the writes.
    pub durability: Durability,
    /// The full configuration: engine, preset, every option, num, sizes, threads, sync, ...
    pub config: serde_json::Value,
    /// The machine.
    pub machine: MachineInfo,
    /// When the benchmark finished, in seconds since the Unix epoch.
    pub timestamp_unix: u64,
    /// The same instant as an ISO 8601 UTC date and time.
    pub date: String,
    /// Worker threads whose operations are counted (the run's `--threads`, or the
    /// benchmark's own `name@N`; 0 for `reopen`, which runs none; a missing field in an
    /// older file reads as 0).
    pub threads: usize,
    /// Operations counted towards throughput.
    pub ops: u64,
    /// Wall time from the start until the last counted worker finished.
    pub elapsed_secs: f64,
    /// Thread-seconds per operation, in microseconds (db_bench's "micros/op").
    pub micros_per_op: f64,
    /// Operations per wall-clock second.
    pub ops_per_sec: f64,
    /// MiB of keys and values moved per second.
    pub mb_per_sec: f64,
    /// Bytes of keys and values moved.
    pub bytes: u64,
    /// Bytes of keys and values written.
    pub written_bytes: u64,
    /// Reads or seeks that found their key.
    pub found: u64,
    /// Reads or seeks that did not.
    pub not_found: u64,
    /// The operation kind the report line leads with.
    pub primary_op: String,
    /// Latency percentiles per operation kind (`write`, `read`, `delete`, `seek`, `scan`,
    /// `update`, `insert`, `rmw`); in open loop, from each operation's intended start.
    pub latency: BTreeMap<String, LatencySummary>,
    /// Open loop only: service time percentiles per operation kind (from each operation's
    /// actual start).
    pub service_latency: BTreeMap<String, LatencySummary>,
    /// Latency distribution per operation kind as `[latency_us, quantile]` points (for
    /// CDF plots).
    pub latency_cdf: BTreeMap<String, Vec<[f64; 2]>>,
    /// Counted operations completed in each second of the run.
    pub timeline_ops_per_sec: Vec<u64>,
    /// Whole seconds whose throughput was under half the run's mean.
    pub stall_seconds: usize,
    /// Which seconds those were (seconds since the start).
    pub stall_second_list: Vec<usize>,
    /// Seconds spent after the benchmark waiting for the engine's background work (not in
    /// `elapsed_secs`; the engine and process figures include it).
    pub settle_secs: f64,
    /// Space used after the benchmark.
    pub space: Option<SpaceUsage>,
    /// Engine-reported write amplification and stall time for this benchmark.
    pub engine_interval: Option<EngineInterval>,
    /// CPU, memory and storage figures of the process.
    pub process: ProcessMetrics,
    /// The engine's statistics after the benchmark.
    pub engine_stats: serde_json::Value,
    /// The round trip of a cache line between the machine's two first cores, in
    /// nanoseconds, measured just before and just after the benchmark
    /// ([`crate::sysinfo::core_round_trip_ns`]): multi-threaded results compare only at
    /// like values.
    pub core_round_trip_ns: Option<[f64; 2]>,
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
#[must_use]
pub fn iso8601_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Microseconds with three significant figures or so: `0.42`, `12.3`, `8561`.
fn fmt_us(us: f64) -> String {
    if us < 10.0 {
        format!("{us:.2}")
    } else if us < 1000.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

impl BenchResult {
    /// Reads results from JSON lines (as written by `--json`; blank lines are skipped,
    /// fields missing from older files take their defaults).
    ///
    /// # Errors
    /// The first line that is not a result.
    pub fn from_json_lines(text: &str) -> serde_json::Result<Vec<BenchResult>> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect()
    }

    /// The result as one line of JSON.
    ///
    /// # Errors
    /// Only if serialisation fails (non-string map keys cannot occur here).
    pub fn to_json_line(&self) -> serde_json::Result<String> {
        serde_json::to_string(self)
    }

    /// The db_bench-style report line, e.g.
    /// `fillrandom   :       5.123 micros/op;    195187 ops/sec;    21.6 MB/s; p50 4.10 p90
    /// 5.02 p99 12.0 p99.9 80.2 max 8561 us; WA 3.41; stall 0.0 s`, followed for reads by
    /// `; 990 of 1000 found` and for any other operation kind measured by its count and
    /// percentiles.
    #[must_use]
    pub fn human_line(&self) -> String {
        let mut s = format!(
            "{:<12} : {:>11.3} micros/op; {:>9.0} ops/sec; {:>7.1} MB/s",
            self.benchmark, self.micros_per_op, self.ops_per_sec, self.mb_per_sec
        );
        if let Some(l) = self.latency.get(&self.primary_op) {
            let _ = write!(
                s,
                "; p50 {} p90 {} p99 {} p99.9 {} max {} us",
                fmt_us(l.p50_us),
                fmt_us(l.p90_us),
                fmt_us(l.p99_us),
                fmt_us(l.p999_us),
                fmt_us(l.max_us)
            );
        }
        if let Some(e) = &self.engine_interval {
            match e.write_amplification {
                Some(wa) => {
                    let _ = write!(s, "; WA {wa:.2}");
                }
                None => s.push_str("; WA -"),
            }
            let _ = write!(s, "; stall {:.1} s", e.stall_micros as f64 / 1e6);
        }
        if let Some(sa) = self.space.and_then(|x| x.space_amplification) {
            let _ = write!(s, "; space amp {sa:.2}");
        }
        if self.stall_seconds > 0 {
            let _ = write!(s, "; {} slow s", self.stall_seconds);
        }
        if self.threads > 1 {
            let _ = write!(s, "; {} threads", self.threads);
        }
        if let Some([before, after]) = self.core_round_trip_ns {
            let _ = write!(s, "; core round trip {before:.0}/{after:.0} ns");
        }
        if self.found + self.not_found > 0 {
            let _ = write!(
                s,
                "; {} of {} found",
                self.found,
                self.found + self.not_found
            );
        }
        for (kind, l) in &self.latency {
            if *kind != self.primary_op {
                let _ = write!(
                    s,
                    "; {kind} {} ops p50 {} p90 {} p99 {} p99.9 {} max {} us",
                    l.count,
                    fmt_us(l.p50_us),
                    fmt_us(l.p90_us),
                    fmt_us(l.p99_us),
                    fmt_us(l.p999_us),
                    fmt_us(l.max_us)
                );
            }
        }
        if let Some(limit) = self
            .config
            .get("memory_limit_bytes")
            .and_then(serde_json::Value::as_u64)
        {
            let _ = write!(s, "; mem limit {} MiB", limit >> 20);
            if let Some(peak) = self.process.cgroup_peak_bytes {
                let _ = write!(s, " (peak {} MiB)", peak >> 20);
            }
        }
        if let Some(l) = self.service_latency.get(&self.primary_op) {
            let _ = write!(
                s,
                "; service p50 {} p99 {} us",
                fmt_us(l.p50_us),
                fmt_us(l.p99_us)
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> BenchResult {
        let lat = LatencySummary {
            count: 1000,
            mean_us: 5.0,
            p50_us: 4.1,
            p90_us: 5.02,
            p99_us: 12.0,
            p999_us: 80.2,
            max_us: 8561.3,
        };
        BenchResult {
            benchmark: "readrandom".into(),
            threads: 1,
            engine: "mezzanine".into(),
            engine_version: "mezzanine 0.1.0".into(),
            point: None,
            durability: Durability {
                sync: false,
                nvm_persistence: None,
            },
            config: serde_json::json!({}),
            machine: MachineInfo {
                cores: 2,
                mem_total_bytes: None,
                cpu_model: None,
                kernel: None,
                git_commit: "unknown".into(),
            },
            timestamp_unix: 0,
            date: iso8601_utc(0),
            ops: 1000,
            elapsed_secs: 0.005,
            micros_per_op: 5.0,
            ops_per_sec: 200_000.0,
            mb_per_sec: 22.1,
            bytes: 116_000,
            written_bytes: 0,
            found: 990,
            not_found: 10,
            primary_op: "read".into(),
            latency: [("read".to_string(), lat), ("write".to_string(), lat)]
                .into_iter()
                .collect(),
            service_latency: BTreeMap::new(),
            latency_cdf: BTreeMap::new(),
            timeline_ops_per_sec: vec![1000],
            stall_seconds: 0,
            stall_second_list: Vec::new(),
            settle_secs: 0.0,
            space: Some(SpaceUsage {
                db_bytes: 300,
                nvm_bytes: None,
                logical_bytes: 200,
                space_amplification: Some(1.5),
            }),
            engine_interval: Some(EngineInterval {
                write_amplification: Some(3.414),
                stall_micros: 1_500_000,
                user_bytes_written: 10,
                storage_bytes_written: 34,
                nvm_bytes_written: 0,
            }),
            process: ProcessMetrics::default(),
            engine_stats: serde_json::Value::Null,
            core_round_trip_ns: Some([84.6, 401.2]),
        }
    }

    #[test]
    fn human_line_has_db_bench_fields_and_percentiles() {
        let l = result().human_line();
        assert!(
            l.starts_with("readrandom   :       5.000 micros/op;"),
            "{l}"
        );
        for part in [
            "200000 ops/sec",
            "22.1 MB/s",
            "p50 4.10 p90 5.02 p99 12.0 p99.9 80.2 max 8561 us",
            "WA 3.41",
            "stall 1.5 s",
            "990 of 1000 found",
            "write 1000 ops p50 4.10 p90 5.02 p99 12.0 p99.9 80.2 max 8561 us",
            "space amp 1.50",
            "core round trip 85/401 ns",
        ] {
            assert!(l.contains(part), "{part:?} missing from {l}");
        }
    }

    #[test]
    fn json_line_is_one_line_with_the_metrics() {
        let j = result().to_json_line().unwrap();
        assert!(!j.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["latency"]["read"]["p999_us"], 80.2);
        assert_eq!(v["engine_interval"]["write_amplification"], 3.414);
        assert_eq!(v["found"], 990);
        assert_eq!(v["engine_version"], "mezzanine 0.1.0");
        assert_eq!(v["date"], "1970-01-01T00:00:00Z");
        assert_eq!(v["space"]["space_amplification"], 1.5);
        assert_eq!(v["core_round_trip_ns"][1], 401.2);
        let back =
            BenchResult::from_json_lines(&format!("{j}\n\n{{\"benchmark\":\"old\"}}\n")).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].latency["read"].p999_us, 80.2);
        assert_eq!(back[0].to_json_line().unwrap(), j);
        assert_eq!(back[1].benchmark, "old");
        assert_eq!(back[1].process.cgroup_peak_bytes, None);
        assert!(back[1].config.get("memory_limit_bytes").is_none());
        assert!(BenchResult::from_json_lines("not json").is_err());
    }

    #[test]
    fn memory_limit_shows_in_the_line_and_the_json() {
        let mut r = result();
        assert!(!r.human_line().contains("mem limit"));
        r.config = serde_json::json!({"memory_limit_bytes": 146_800_640u64});
        assert!(
            r.human_line().ends_with("; mem limit 140 MiB"),
            "{}",
            r.human_line()
        );
        r.process.cgroup_peak_bytes = Some(139 << 20);
        assert!(
            r.human_line()
                .contains("; mem limit 140 MiB (peak 139 MiB)")
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json_line().unwrap()).unwrap();
        assert_eq!(v["process"]["cgroup_peak_bytes"], 139u64 << 20);
        assert_eq!(v["config"]["memory_limit_bytes"], 146_800_640u64);
    }

    #[test]
    fn iso_dates_are_civil_utc() {
        assert_eq!(iso8601_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(iso8601_utc(4_102_444_799), "2099-12-31T23:59:59Z");
    }
}
