//! Process and machine facts read from `/proc` (Linux): CPU time, peak RSS, bytes written
//! to storage, cores, memory, kernel, CPU model, and the git commit being measured; and
//! one measured fact, the round trip of a cache line between two cores
//! ([`core_round_trip_ns`]).
//!
//! Every reader returns `None` (or `"unknown"`) when the file is missing or unparsable, so
//! the harness runs, with fewer facts, where `/proc` is absent. The parsers are pure
//! functions over the files' text. Thread-safety: stateless.

use std::process::Command;

use serde::{Deserialize, Serialize};

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, fixed at 100 in the Linux
/// user-space ABI on the platforms we run on).
const CLOCK_TICKS_PER_SEC: f64 = 100.0;

/// Process counters at one instant; subtract two with [`ProcSnapshot::since`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ProcSnapshot {
    /// User CPU seconds of the whole process (every thread, including finished ones).
    pub cpu_user_secs: Option<f64>,
    /// System CPU seconds of the whole process.
    pub cpu_sys_secs: Option<f64>,
    /// Bytes the process caused to be written to storage (`write_bytes` of `/proc/self/io`).
    pub storage_write_bytes: Option<u64>,
    /// CPU seconds the whole machine was busy (every CPU, every process, the kernel's
    /// threads too: `user + nice + system + irq + softirq` of `/proc/stat`).
    pub machine_busy_secs: Option<f64>,
    /// CPU seconds the hypervisor ran something else while this machine's CPUs wanted to
    /// run (`steal` of `/proc/stat`).
    pub machine_steal_secs: Option<f64>,
}

impl ProcSnapshot {
    /// Reads the current process's counters.
    #[must_use]
    pub fn now() -> Self {
        let user_sys = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| parse_stat_cpu_ticks(&s));
        let (user, sys) = ticks_to_secs(user_sys);
        let (busy, steal) = ticks_to_secs(
            std::fs::read_to_string("/proc/stat")
                .ok()
                .and_then(|s| parse_machine_cpu_ticks(&s)),
        );
        Self {
            cpu_user_secs: user,
            cpu_sys_secs: sys,
            storage_write_bytes: std::fs::read_to_string("/proc/self/io")
                .ok()
                .and_then(|s| parse_io_write_bytes(&s)),
            machine_busy_secs: busy,
            machine_steal_secs: steal,
        }
    }

    /// The counters accumulated between `earlier` and `self`.
    #[must_use]
    pub fn since(&self, earlier: &ProcSnapshot) -> ProcSnapshot {
        ProcSnapshot {
            cpu_user_secs: secs_since(self.cpu_user_secs, earlier.cpu_user_secs),
            cpu_sys_secs: secs_since(self.cpu_sys_secs, earlier.cpu_sys_secs),
            storage_write_bytes: self
                .storage_write_bytes
                .zip(earlier.storage_write_bytes)
                .map(|(a, b)| a.saturating_sub(b)),
            machine_busy_secs: secs_since(self.machine_busy_secs, earlier.machine_busy_secs),
            machine_steal_secs: secs_since(self.machine_steal_secs, earlier.machine_steal_secs),
        }
    }
}

/// A pair of clock-tick counts in seconds (both `None` when unknown).
fn ticks_to_secs(ticks: Option<(u64, u64)>) -> (Option<f64>, Option<f64>) {
    ticks.map_or((None, None), |(a, b)| {
        (
            Some(a as f64 / CLOCK_TICKS_PER_SEC),
            Some(b as f64 / CLOCK_TICKS_PER_SEC),
        )
    })
}

/// Seconds from `earlier` to `now` (never negative), if both are known.
fn secs_since(now: Option<f64>, earlier: Option<f64>) -> Option<f64> {
    now.zip(earlier).map(|(a, b)| (a - b).max(0.0))
}

/// `(busy, steal)` clock ticks of the whole machine from the text of `/proc/stat` (its
/// `cpu` line: busy = user + nice + system + irq + softirq; guest time is inside user).
#[must_use]
pub fn parse_machine_cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    // user nice system idle iowait irq softirq steal ...
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)?;
    Some((busy, *f.get(7)?))
}

/// `(utime, stime)` in clock ticks from the text of `/proc/<pid>/stat`.
///
/// The command name (field 2) is in parentheses and may itself hold spaces or parentheses,
/// so fields are counted from the last `)`.
#[must_use]
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After ")" come field 3 (state) onwards; utime and stime are fields 14 and 15.
    let utime = fields.nth(11)?.parse().ok()?;
    let stime = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// The value in bytes of a `Name:   123 kB` line of `/proc/self/status` or `/proc/meminfo`.
#[must_use]
pub fn parse_kb_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let v = l.strip_prefix(name)?.strip_prefix(':')?.trim();
        let kb: u64 = v.strip_suffix("kB").unwrap_or(v).trim().parse().ok()?;
        kb.checked_mul(1024)
    })
}

/// `write_bytes` from the text of `/proc/self/io`.
#[must_use]
pub fn parse_io_write_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:")?.trim().parse().ok())
}

/// The process's peak resident set size so far (`VmHWM`), in bytes.
#[must_use]
pub fn peak_rss_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_kb_field(&s, "VmHWM"))
}

/// The machine a benchmark ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MachineInfo {
    /// Hardware threads available to the process.
    pub cores: usize,
    /// Total memory in bytes (`MemTotal`), if known.
    pub mem_total_bytes: Option<u64>,
    /// The CPU model, if known.
    pub cpu_model: Option<String>,
    /// The kernel release, if known.
    pub kernel: Option<String>,
    /// `git rev-parse HEAD` of the working directory, or `"unknown"`.
    pub git_commit: String,
}

impl MachineInfo {
    /// Collects the facts about this machine.
    #[must_use]
    pub fn collect() -> Self {
        Self {
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            mem_total_bytes: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|s| parse_kb_field(&s, "MemTotal")),
            cpu_model: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|s| parse_cpu_model(&s)),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
            git_commit: git_commit(),
        }
    }
}

/// Cache-line exchanges per round of [`core_round_trip_ns`].
const PROBE_EXCHANGES: u64 = 4_000;
/// Rounds of [`core_round_trip_ns`]; it reports the median round.
const PROBE_ROUNDS: u64 = 5;

/// The round trip, in nanoseconds, of a cache line passed back and forth between two
/// threads: the median of `PROBE_ROUNDS` rounds of `PROBE_EXCHANGES` exchanges, a few
/// milliseconds in all. On an otherwise idle machine the two threads run on two cores, so
/// this is what every write to a line the other core holds costs. A virtual machine's
/// cores can be placed by the host on one shared cache or across caches (on a 2-vCPU AMD
/// EPYC VM: about 85 or about 400 ns, changing from one minute to the next), and every
/// multi-threaded result depends on which; the harness measures it before and after each
/// benchmark. `None` with fewer than two cores. Several microseconds mean the two threads
/// shared one core (the machine was busy).
#[must_use]
pub fn core_round_trip_ns() -> Option<f64> {
    use std::sync::atomic::{AtomicU64, Ordering};
    if std::thread::available_parallelism().map_or(1, std::num::NonZero::get) < 2 {
        return None;
    }
    // Spins until `flag` holds `want`, yielding now and then so that two threads on one
    // core still make progress.
    fn await_value(flag: &AtomicU64, want: u64) {
        let mut spins = 0u32;
        while flag.load(Ordering::Acquire) != want {
            spins += 1;
            if spins.is_multiple_of(1024) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
    let flag = AtomicU64::new(0);
    let total = PROBE_EXCHANGES * PROBE_ROUNDS;
    let mut rounds: Vec<f64> = std::thread::scope(|s| {
        let flag = &flag;
        s.spawn(move || {
            for i in 0..total {
                await_value(flag, 2 * i + 1);
                flag.store(2 * i + 2, Ordering::Release);
            }
        });
        (0..PROBE_ROUNDS)
            .map(|r| {
                let start = std::time::Instant::now();
                for i in r * PROBE_EXCHANGES..(r + 1) * PROBE_EXCHANGES {
                    flag.store(2 * i + 1, Ordering::Release);
                    await_value(flag, 2 * i + 2);
                }
                start.elapsed().as_secs_f64() * 1e9 / PROBE_EXCHANGES as f64
            })
            .collect()
    });
    rounds.sort_by(f64::total_cmp);
    rounds.get(rounds.len() / 2).copied()
}

/// The first `model name` of `/proc/cpuinfo`.
#[must_use]
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string())
    })
}

/// The commit checked out in the current directory, or `"unknown"`.
#[must_use]
pub fn git_commit() -> String {
    Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_cpu_ticks_are_fields_14_and_15() {
        let stat = "4242 (my (weird) prog) S 1 4242 4242 0 -1 4194560 1234 0 0 0 \
                    517 83 0 0 20 0 3 0 12345 1000000 500 18446744073709551615";
        assert_eq!(parse_stat_cpu_ticks(stat), Some((517, 83)));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
        assert_eq!(parse_stat_cpu_ticks("1 (x) S 1 2"), None);
    }

    #[test]
    fn kb_fields_are_converted_to_bytes() {
        let status = "Name:\tmezz\nVmPeak:\t  20000 kB\nVmHWM:\t    1536 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_kb_field(status, "VmHWM"), Some(1536 * 1024));
        assert_eq!(parse_kb_field(status, "VmSwap"), None);
        let meminfo = "MemTotal:       24576000 kB\nMemFree:         1000 kB\n";
        assert_eq!(parse_kb_field(meminfo, "MemTotal"), Some(24_576_000 * 1024));
    }

    #[test]
    fn io_write_bytes_is_parsed() {
        let io = "rchar: 10\nwchar: 20\nread_bytes: 4096\nwrite_bytes: 81920\n\
                  cancelled_write_bytes: 0\n";
        assert_eq!(parse_io_write_bytes(io), Some(81920));
        assert_eq!(parse_io_write_bytes("rchar: 1\n"), None);
    }

    #[test]
    fn core_round_trip_is_measured_on_two_cores() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let rt = core_round_trip_ns();
        if cores < 2 {
            assert_eq!(rt, None);
        } else {
            // A positive, finite time: at least one cache-line transfer each way.
            let rt = rt.expect("two cores");
            assert!(rt.is_finite() && rt > 0.0, "{rt}");
        }
    }

    #[test]
    fn cpu_model_is_the_first_model_name() {
        let c =
            "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(parse_cpu_model(c).as_deref(), Some("AMD EPYC 7B13"));
    }

    #[test]
    fn snapshot_difference_saturates() {
        let a = ProcSnapshot {
            cpu_user_secs: Some(1.0),
            cpu_sys_secs: Some(0.5),
            storage_write_bytes: Some(100),
            machine_busy_secs: Some(10.0),
            machine_steal_secs: Some(2.0),
        };
        let b = ProcSnapshot {
            cpu_user_secs: Some(3.0),
            cpu_sys_secs: None,
            storage_write_bytes: Some(50),
            machine_busy_secs: Some(14.5),
            machine_steal_secs: None,
        };
        let d = b.since(&a);
        assert_eq!(d.cpu_user_secs, Some(2.0));
        assert_eq!(d.cpu_sys_secs, None);
        assert_eq!(d.storage_write_bytes, Some(0));
        assert_eq!(d.machine_busy_secs, Some(4.5));
        assert_eq!(d.machine_steal_secs, None);
    }

    #[test]
    fn machine_ticks_come_from_the_cpu_line() {
        let stat = "cpu  100 5 40 9000 7 3 2 11 0 0\ncpu0 50 2 20 4500 3 1 1 5 0 0\nintr 1\n";
        assert_eq!(parse_machine_cpu_ticks(stat), Some((150, 11)));
        // Kernels without a steal column, and text without a cpu line.
        assert_eq!(parse_machine_cpu_ticks("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse_machine_cpu_ticks("intr 1\n"), None);
    }
}
