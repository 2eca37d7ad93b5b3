//! Measurement of one benchmark: latency histograms per operation kind, a per-second
//! throughput timeline, byte and found/not-found counts, and the summaries derived from
//! them (percentiles, "stall seconds").
//!
//! Each worker thread owns a [`ThreadMetrics`] and records into it without synchronisation;
//! the driver merges them once the threads have joined. Latencies are recorded in
//! nanoseconds (HDR histogram, 3 significant digits, 1 ns to 1 hour); summaries report
//! microseconds. In open-loop runs the main histograms hold the latency measured from each
//! operation's intended start, and a second set holds the service time (from its actual
//! start).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};

/// The kinds of operation a benchmark times separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// A put.
    Write,
    /// A point lookup.
    Read,
    /// A delete.
    Delete,
    /// A seek (positioning an iterator and reading one entry).
    Seek,
    /// One step of a sequential scan (db_bench), or one short range scan (YCSB E).
    Scan,
    /// A YCSB update (a put of an existing key).
    Update,
    /// A YCSB insert (a put of a new key).
    Insert,
    /// A YCSB read-modify-write (a get then a put of the same key).
    ReadModifyWrite,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 8] = [
        OpKind::Write,
        OpKind::Read,
        OpKind::Delete,
        OpKind::Seek,
        OpKind::Scan,
        OpKind::Update,
        OpKind::Insert,
        OpKind::ReadModifyWrite,
    ];

    /// The kind's name in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Read => "read",
            OpKind::Delete => "delete",
            OpKind::Seek => "seek",
            OpKind::Scan => "scan",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::ReadModifyWrite => "rmw",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Percentiles of one latency histogram, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencySummary {
    /// Operations recorded.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
}

impl LatencySummary {
    /// Summarises a histogram of nanoseconds (all zero when it is empty).
    #[must_use]
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let us = |nanos: u64| nanos as f64 / 1000.0;
        Self {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// Quantiles at which [`ThreadMetrics::cdf`] samples a latency distribution: every 5 %
/// up to 95 %, then the tail on a logarithmic scale up to 99.999 %.
const CDF_QUANTILES: &[f64] = &[
    0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8,
    0.85, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.997, 0.998, 0.999, 0.9995, 0.9997, 0.9998, 0.9999,
    0.99995, 0.99999,
];

/// Longest latency a histogram tracks (longer ones are clamped): one hour.
const MAX_TRACKED_NANOS: u64 = 3_600_000_000_000;

fn new_histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_TRACKED_NANOS, 3)
        .map_err(|e| BenchError::InvalidArgument(format!("histogram: {e}")))
}

/// What one thread (or, once merged, one benchmark) measured.
#[derive(Debug, Clone)]
pub struct ThreadMetrics {
    histograms: Vec<Histogram<u64>>,
    /// Service times (open loop only; empty otherwise).
    service: Vec<Histogram<u64>>,
    /// Operations completed in each second since the benchmark started.
    timeline: Vec<u64>,
    /// Operations that count towards the benchmark's ops/s.
    pub ops: u64,
    /// Bytes of keys and values moved by those operations.
    pub bytes: u64,
    /// Bytes of keys and values those operations wrote.
    pub written: u64,
    /// Reads that found their key.
    pub found: u64,
    /// Reads that did not find their key.
    pub not_found: u64,
}

impl ThreadMetrics {
    /// Empty metrics.
    ///
    /// # Errors
    /// Never in practice (the histogram parameters are constant and valid).
    pub fn new() -> Result<Self> {
        let histograms = OpKind::ALL
            .iter()
            .map(|_| new_histogram())
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            histograms,
            service: Vec::new(),
            timeline: Vec::new(),
            ops: 0,
            bytes: 0,
            written: 0,
            found: 0,
            not_found: 0,
        })
    }

    /// Records `n` operations of `kind` that took `nanos` each and completed `at` after the
    /// benchmark started; `counted` says whether they count towards the benchmark's ops/s
    /// (a background writer's puts do not, in `readwhilewriting`).
    pub fn record(&mut self, kind: OpKind, nanos: u64, n: u64, at: Duration, counted: bool) {
        if let Some(h) = self.histograms.get_mut(kind.index()) {
            h.saturating_record_n(nanos.max(1), n);
        }
        if counted {
            self.ops += n;
            let sec = usize::try_from(at.as_secs()).unwrap_or(usize::MAX);
            if sec < (1 << 24) {
                if self.timeline.len() <= sec {
                    self.timeline.resize(sec + 1, 0);
                }
                if let Some(c) = self.timeline.get_mut(sec) {
                    *c += n;
                }
            }
        }
    }

    /// Records the service time of `n` operations of `kind` (open loop: from the actual
    /// start of each operation, while [`ThreadMetrics::record`] gets the latency from its
    /// intended start).
    ///
    /// # Errors
    /// Never in practice (creating the histograms on first use cannot fail).
    pub fn record_service(&mut self, kind: OpKind, nanos: u64, n: u64) -> Result<()> {
        if self.service.is_empty() {
            self.service = OpKind::ALL
                .iter()
                .map(|_| new_histogram())
                .collect::<Result<Vec<_>>>()?;
        }
        if let Some(h) = self.service.get_mut(kind.index()) {
            h.saturating_record_n(nanos.max(1), n);
        }
        Ok(())
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &ThreadMetrics) {
        for (h, o) in self.histograms.iter_mut().zip(&other.histograms) {
            // Histograms with the same bounds cannot fail to add.
            let _ = h.add(o);
        }
        if self.service.is_empty() && !other.service.is_empty() {
            self.service = other.service.clone();
        } else {
            for (h, o) in self.service.iter_mut().zip(&other.service) {
                let _ = h.add(o);
            }
        }
        if self.timeline.len() < other.timeline.len() {
            self.timeline.resize(other.timeline.len(), 0);
        }
        for (a, b) in self.timeline.iter_mut().zip(&other.timeline) {
            *a += b;
        }
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.written += other.written;
        self.found += other.found;
        self.not_found += other.not_found;
    }

    /// The latency summary of `kind` (`count == 0` if none was recorded).
    #[must_use]
    pub fn latency(&self, kind: OpKind) -> LatencySummary {
        self.histograms
            .get(kind.index())
            .map(LatencySummary::from_histogram)
            .unwrap_or_default()
    }

    /// Summaries of every kind that recorded at least one operation.
    #[must_use]
    pub fn latencies(&self) -> Vec<(OpKind, LatencySummary)> {
        OpKind::ALL
            .iter()
            .map(|&k| (k, self.latency(k)))
            .filter(|(_, s)| s.count > 0)
            .collect()
    }

    /// Service-time summaries (open loop) of every kind that recorded one.
    #[must_use]
    pub fn service_latencies(&self) -> Vec<(OpKind, LatencySummary)> {
        OpKind::ALL
            .iter()
            .filter_map(|&k| {
                let s = LatencySummary::from_histogram(self.service.get(k.index())?);
                (s.count > 0).then_some((k, s))
            })
            .collect()
    }

    /// The latency distribution of `kind` as `[latency_us, quantile]` points (quantile 1.0
    /// at the maximum); empty if nothing was recorded. Enough to redraw a CDF.
    #[must_use]
    pub fn cdf(&self, kind: OpKind) -> Vec<[f64; 2]> {
        let Some(h) = self.histograms.get(kind.index()).filter(|h| !h.is_empty()) else {
            return Vec::new();
        };
        let mut v: Vec<[f64; 2]> = CDF_QUANTILES
            .iter()
            .map(|&q| [h.value_at_quantile(q) as f64 / 1000.0, q])
            .collect();
        v.push([h.max() as f64 / 1000.0, 1.0]);
        v
    }

    /// Operations completed in each second, for a run that lasted `elapsed` (trailing empty
    /// seconds included).
    #[must_use]
    pub fn timeline(&self, elapsed: Duration) -> Vec<u64> {
        let mut t = self.timeline.clone();
        let secs = usize::try_from(elapsed.as_secs()).unwrap_or(usize::MAX);
        let want = if elapsed.subsec_nanos() > 0 {
            secs.saturating_add(1)
        } else {
            secs
        };
        if t.len() < want && want < (1 << 24) {
            t.resize(want, 0);
        }
        t
    }
}

/// The number of whole seconds of a run whose throughput was under half the run's mean.
///
/// `timeline[i]` is the number of operations completed in second `i`; `elapsed` is the run's
/// length. Only whole seconds are judged (the last, partial second would always look slow),
/// and the mean is that of the whole seconds. A run shorter than a second has no stall
/// seconds.
#[must_use]
pub fn stall_seconds(timeline: &[u64], elapsed: Duration) -> usize {
    stall_second_list(timeline, elapsed).len()
}

/// Which seconds [`stall_seconds`] counts: indexes (seconds since the start) of the whole
/// seconds whose throughput was under half the mean of the whole seconds.
#[must_use]
pub fn stall_second_list(timeline: &[u64], elapsed: Duration) -> Vec<usize> {
    let whole = usize::try_from(elapsed.as_secs())
        .unwrap_or(usize::MAX)
        .min(timeline.len());
    let Some(full) = timeline.get(..whole) else {
        return Vec::new();
    };
    if full.is_empty() {
        return Vec::new();
    }
    let mean = full.iter().sum::<u64>() as f64 / full.len() as f64;
    full.iter()
        .enumerate()
        .filter(|&(_, &c)| (c as f64) < 0.5 * mean)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn stall_seconds_counts_whole_seconds_under_half_the_mean() {
        // Mean of the 5 whole seconds = 80; threshold 40: only the 10 and the 30 are slow.
        let t = [100, 100, 10, 30, 160, 1];
        assert_eq!(stall_seconds(&t, secs(5.2)), 2);
        assert_eq!(stall_second_list(&t, secs(5.2)), vec![2, 3]);
    }

    #[test]
    fn stall_seconds_ignores_the_partial_last_second() {
        assert_eq!(stall_seconds(&[100, 100, 100, 2], secs(3.01)), 0);
    }

    #[test]
    fn stall_seconds_of_short_or_steady_runs_is_zero() {
        assert_eq!(stall_seconds(&[500], secs(0.5)), 0);
        assert_eq!(stall_seconds(&[], secs(0.0)), 0);
        assert_eq!(stall_seconds(&[50, 50, 50, 50], secs(4.0)), 0);
    }

    #[test]
    fn stall_seconds_counts_empty_seconds() {
        // A run stopped for a whole second records nothing in it.
        assert_eq!(stall_seconds(&[100, 0, 100, 100], secs(4.0)), 1);
    }

    #[test]
    fn percentiles_come_from_the_recorded_distribution() {
        let mut m = ThreadMetrics::new().unwrap();
        // 1..=1000 microseconds, once each.
        for us in 1..=1000u64 {
            m.record(OpKind::Read, us * 1000, 1, secs(0.1), true);
        }
        let s = m.latency(OpKind::Read);
        assert_eq!(s.count, 1000);
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.01 + 0.001;
        assert!(close(s.p50_us, 500.0), "{s:?}");
        assert!(close(s.p90_us, 900.0), "{s:?}");
        assert!(close(s.p99_us, 990.0), "{s:?}");
        assert!(close(s.p999_us, 999.0), "{s:?}");
        assert!(close(s.max_us, 1000.0), "{s:?}");
        assert!(close(s.mean_us, 500.5), "{s:?}");
        assert_eq!(m.latency(OpKind::Write).count, 0);
        assert_eq!(m.latencies().len(), 1);
    }

    #[test]
    fn cdf_is_monotone_and_ends_at_the_maximum() {
        let mut m = ThreadMetrics::new().unwrap();
        assert!(m.cdf(OpKind::Read).is_empty());
        for us in 1..=1000u64 {
            m.record(OpKind::Read, us * 1000, 1, secs(0.1), true);
        }
        let c = m.cdf(OpKind::Read);
        assert!(
            c.windows(2)
                .all(|w| w[0][0] <= w[1][0] && w[0][1] <= w[1][1])
        );
        let last = c.last().unwrap();
        assert_eq!(last[1], 1.0);
        assert!((last[0] - 1000.0).abs() < 1.0, "{last:?}");
        let median = c.iter().find(|p| p[1] == 0.5).unwrap();
        assert!((median[0] - 500.0).abs() < 5.0, "{median:?}");
    }

    #[test]
    fn service_times_are_kept_apart_and_merged() {
        let mut a = ThreadMetrics::new().unwrap();
        let mut b = ThreadMetrics::new().unwrap();
        assert!(a.service_latencies().is_empty());
        a.record(OpKind::Read, 9_000, 1, secs(0.1), true);
        b.record_service(OpKind::Read, 1_000, 3).unwrap();
        a.merge(&b);
        let s = a.service_latencies();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].1.count, 3);
        assert_eq!(a.latency(OpKind::Read).count, 1);
    }

    #[test]
    fn record_n_weights_the_histogram() {
        let mut m = ThreadMetrics::new().unwrap();
        m.record(OpKind::Scan, 1_000, 99, secs(0.0), true);
        m.record(OpKind::Scan, 1_000_000, 1, secs(0.0), true);
        let s = m.latency(OpKind::Scan);
        assert_eq!(s.count, 100);
        assert!(s.p50_us < 2.0, "{s:?}");
        assert!(s.max_us > 900.0, "{s:?}");
        assert_eq!(m.ops, 100);
    }

    #[test]
    fn merge_adds_counts_timelines_and_histograms() {
        let mut a = ThreadMetrics::new().unwrap();
        let mut b = ThreadMetrics::new().unwrap();
        a.record(OpKind::Write, 5_000, 1, secs(0.5), true);
        b.record(OpKind::Write, 7_000, 1, secs(2.5), true);
        b.record(OpKind::Read, 7_000, 1, secs(2.5), false);
        b.found = 3;
        a.merge(&b);
        assert_eq!(a.ops, 2);
        assert_eq!(a.found, 3);
        assert_eq!(a.latency(OpKind::Write).count, 2);
        assert_eq!(a.latency(OpKind::Read).count, 1);
        assert_eq!(a.timeline(secs(2.7)), vec![1, 0, 1]);
        assert_eq!(a.timeline(secs(4.5)), vec![1, 0, 1, 0, 0]);
    }
}
