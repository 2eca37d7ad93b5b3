//! Results of one benchmark: the [`BenchResult`] record, its one-line human rendering (in
//! db_bench's style) and its JSON-lines form.
//!
//! A `BenchResult` is plain data, built by the runner once the benchmark's threads have
//! joined. The JSON object carries the full configuration and machine facts, so that a line
//! of a results file is self-describing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::metrics::LatencySummary;
use crate::sysinfo::MachineInfo;

/// Engine-reported figures for the benchmark's interval (difference of two snapshots).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
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
}

/// Process-level figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ProcessMetrics {
    /// User CPU seconds spent during the benchmark (all threads, including the engine's).
    pub cpu_user_secs: Option<f64>,
    /// System CPU seconds spent during the benchmark.
    pub cpu_sys_secs: Option<f64>,
    /// Peak resident set size of the process so far (not reset between benchmarks).
    pub peak_rss_bytes: Option<u64>,
    /// Bytes the process caused to be written to storage during the benchmark.
    pub storage_write_bytes: Option<u64>,
}

/// Everything measured for one benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    /// The benchmark's name, e.g. `fillrandom`.
    pub benchmark: String,
    /// The engine's name.
    pub engine: String,
    /// The full configuration: engine, preset, every option, num, sizes, threads, sync, ...
    pub config: serde_json::Value,
    /// The machine.
    pub machine: MachineInfo,
    /// When the benchmark finished, in seconds since the Unix epoch.
    pub timestamp_unix: u64,
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
    /// Reads or seeks that found their key.
    pub found: u64,
    /// Reads or seeks that did not.
    pub not_found: u64,
    /// The operation kind the report line leads with.
    pub primary_op: String,
    /// Latency percentiles per operation kind (`write`, `read`, `delete`, `seek`, `scan`).
    pub latency: BTreeMap<String, LatencySummary>,
    /// Counted operations completed in each second of the run.
    pub timeline_ops_per_sec: Vec<u64>,
    /// Whole seconds whose throughput was under half the run's mean.
    pub stall_seconds: usize,
    /// Engine-reported write amplification and stall time for this benchmark.
    pub engine_interval: Option<EngineInterval>,
    /// CPU, memory and storage figures of the process.
    pub process: ProcessMetrics,
    /// The engine's statistics after the benchmark.
    pub engine_stats: serde_json::Value,
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
        if self.stall_seconds > 0 {
            let _ = write!(s, "; {} slow s", self.stall_seconds);
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
                    "; {kind} {} ops p50 {} p99 {} us",
                    l.count,
                    fmt_us(l.p50_us),
                    fmt_us(l.p99_us)
                );
            }
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
            engine: "mezzanine".into(),
            config: serde_json::json!({}),
            machine: MachineInfo {
                cores: 2,
                mem_total_bytes: None,
                cpu_model: None,
                kernel: None,
                git_commit: "unknown".into(),
            },
            timestamp_unix: 0,
            ops: 1000,
            elapsed_secs: 0.005,
            micros_per_op: 5.0,
            ops_per_sec: 200_000.0,
            mb_per_sec: 22.1,
            bytes: 116_000,
            found: 990,
            not_found: 10,
            primary_op: "read".into(),
            latency: [("read".to_string(), lat), ("write".to_string(), lat)]
                .into_iter()
                .collect(),
            timeline_ops_per_sec: vec![1000],
            stall_seconds: 0,
            engine_interval: Some(EngineInterval {
                write_amplification: Some(3.414),
                stall_micros: 1_500_000,
                user_bytes_written: 10,
                storage_bytes_written: 34,
            }),
            process: ProcessMetrics::default(),
            engine_stats: serde_json::Value::Null,
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
            "write 1000 ops p50 4.10 p99 12.0 us",
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
    }
}
