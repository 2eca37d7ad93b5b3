//! YCSB core workloads: the key choosers of YCSB's `CoreWorkload` (zipfian, scrambled
//! zipfian, skewed latest, uniform), its key names and record layout, the operation mixes
//! of workloads A–F, and the per-thread loops that run them.
//!
//! Definitions, as in YCSB 0.17 (`site.ycsb.generator` and `site.ycsb.workloads`):
//!
//! - **Zipfian** ([`Zipfian`]): Gray et al.'s "Quickly generating billion-record synthetic
//!   databases" method, constant θ = 0.99; `zeta(n) = Σ_{i=1..n} 1/i^θ` precomputed (and
//!   extended incrementally when the item count grows); item 0 is the most popular.
//! - **Scrambled zipfian** ([`ScrambledZipfian`], YCSB's `requestdistribution=zipfian`): a
//!   zipfian over 10^10 items (with YCSB's precomputed `zetan = 26.46902820178302`), each
//!   drawn item FNV-1a-64 hashed, modulo the key count: popular keys are spread over the key
//!   space instead of being the smallest numbers.
//! - **Skewed latest** ([`SkewedLatest`]): `newest - zipfian(count)`: the most recently
//!   inserted key is the most popular.
//! - **Uniform**: every existing key equally likely.
//! - **Keys**: `"user"` followed by the decimal of `fnvhash64(keynum)` (YCSB's
//!   `orderedinserts = false`: insert order is hashed, so loads write in random key order).
//! - **Records**: YCSB's 10 fields × 100 bytes are stored as one value of
//!   `fields × field_size` bytes (1000 B by default) without field names; an update
//!   rewrites the whole record (a blind put), a read-modify-write reads it and puts it back.
//!
//! Workloads (operation proportions; key chooser for reads, updates, scan starts):
//!
//! | name       | read | update | insert | scan | read-modify-write | chooser          |
//! |------------|------|--------|--------|------|-------------------|------------------|
//! | `ycsb-load`| –    | –      | 100 %  | –    | –                 | key numbers 0..num in order (hashed) |
//! | `ycsb-a`   | 50 % | 50 %   |        |      |                   | scrambled zipfian |
//! | `ycsb-b`   | 95 % | 5 %    |        |      |                   | scrambled zipfian |
//! | `ycsb-c`   | 100 %|        |        |      |                   | scrambled zipfian |
//! | `ycsb-d`   | 95 % |        | 5 %    |      |                   | latest           |
//! | `ycsb-e`   |      |        | 5 %    | 95 % |                   | scrambled zipfian; scan length uniform in 1..=100 |
//! | `ycsb-f`   | 50 % |        |        |      | 50 %              | scrambled zipfian |
//!
//! Inserts during D and E extend the key space: new key numbers come from a counter shared
//! by the threads ([`YcsbKeySpace`]), and readers choose only among acknowledged keys (like
//! YCSB's `AcknowledgedCounterGenerator`; a key whose insert is still in flight on another
//! thread may be drawn and is then counted as not found). As in YCSB, the zipfian chooser
//! of D/E is sized for the keys expected to be inserted (`2 × ops × insert proportion`
//! more) and redraws keys not inserted yet.
//!
//! Thread-safety: generators are per thread (each worker owns its own, cloned from the
//! precomputed ones); [`YcsbKeySpace`] is shared through atomics.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::RngExt;

use crate::error::Result;
use crate::metrics::{OpKind, ThreadMetrics};
use crate::workloads::{Benchmark, Done, WorkerCtx, drive, share};

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Items of the zipfian behind the scrambled zipfian generator (YCSB's `ITEM_COUNT`).
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// `zeta(SCRAMBLED_ITEM_COUNT, 0.99)`, as precomputed by YCSB.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of `v`, then the
/// absolute value of the result read as a signed 64-bit number.
#[must_use]
pub fn fnv_hash64(v: u64) -> u64 {
    let mut h = FNV_OFFSET_BASIS_64;
    let mut v = v;
    for _ in 0..8 {
        h ^= v & 0xff;
        v >>= 8;
        h = h.wrapping_mul(FNV_PRIME_64);
    }
    (h as i64).unsigned_abs()
}

/// `initial + Σ_{i=from..to} 1/(i+1)^θ`: extends `zeta(from)` to `zeta(to)`.
#[must_use]
pub fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// The key of YCSB key number `keynum`: `user` + decimal of its FNV hash, into `out`.
pub fn ycsb_key_into(keynum: u64, out: &mut Vec<u8>) {
    out.clear();
    // Writing into a Vec cannot fail.
    let _ = write!(out, "user{}", fnv_hash64(keynum));
}

/// The key of YCSB key number `keynum`.
#[must_use]
pub fn ycsb_key(keynum: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(24);
    ycsb_key_into(keynum, &mut k);
    k
}

/// Zipfian-distributed integers in `[base, base + items)`, item `base` the most popular
/// (YCSB's `ZipfianGenerator`).
#[derive(Debug, Clone)]
pub struct Zipfian {
    base: u64,
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Over `items` items starting at `base` with constant `theta` (computes `zeta(items)`:
    /// linear in `items`).
    #[must_use]
    pub fn new(base: u64, items: u64, theta: f64) -> Self {
        Self::with_zetan(base, items, theta, zeta(0, items, theta, 0.0))
    }

    /// Like [`Zipfian::new`] with `zeta(items)` already known.
    #[must_use]
    pub fn with_zetan(base: u64, items: u64, theta: f64, zetan: f64) -> Self {
        let items = items.max(1);
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Self {
            base,
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta,
            zetan,
            eta: 0.0,
            count_for_zeta: items,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// The number of items.
    #[must_use]
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The next value over the generator's own item count.
    pub fn next<R: rand::Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        self.next_with_count(rng, self.items)
    }

    /// The next value over `item_count` items (YCSB's `nextLong(itemcount)`): when the
    /// count differs from the one `zeta` was computed for, `zeta` is extended (a larger
    /// count: incrementally) or recomputed (a smaller one).
    pub fn next_with_count<R: rand::Rng + ?Sized>(&mut self, rng: &mut R, item_count: u64) -> u64 {
        let item_count = item_count.max(1);
        if item_count != self.count_for_zeta {
            self.zetan = if item_count > self.count_for_zeta {
                zeta(self.count_for_zeta, item_count, self.theta, self.zetan)
            } else {
                zeta(0, item_count, self.theta, 0.0)
            };
            self.count_for_zeta = item_count;
            self.eta = self.eta_for(item_count);
        }
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1.min(item_count - 1);
        }
        let v = (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        self.base + v.min(item_count - 1)
    }
}

/// Zipfian popularity with the popular items scattered over `[min, min + items)` (YCSB's
/// `ScrambledZipfianGenerator` with its default constant).
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: u64,
    items: u64,
    inner: Zipfian,
}

impl ScrambledZipfian {
    /// Over `items` items starting at `min`.
    #[must_use]
    pub fn new(min: u64, items: u64) -> Self {
        Self {
            min,
            items: items.max(1),
            inner: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
        }
    }

    /// The next value.
    pub fn next<R: rand::Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        self.min + fnv_hash64(self.inner.next(rng)) % self.items
    }
}

/// Skewed towards the newest item (YCSB's `SkewedLatestGenerator`): `newest - z` with `z`
/// zipfian over the current item count.
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipf: Zipfian,
}

impl SkewedLatest {
    /// For an initial key count `count` (computes `zeta(count)`).
    #[must_use]
    pub fn new(count: u64) -> Self {
        Self {
            zipf: Zipfian::new(0, count.max(1), ZIPFIAN_CONSTANT),
        }
    }

    /// The next key number when keys `0..count` exist.
    pub fn next<R: rand::Rng + ?Sized>(&mut self, rng: &mut R, count: u64) -> u64 {
        let count = count.max(1);
        (count - 1) - self.zipf.next_with_count(rng, count)
    }
}

/// The key numbers in use, shared by every thread (and carried from one benchmark to the
/// next): key numbers `0..acknowledged()` have been inserted.
#[derive(Debug, Default)]
pub struct YcsbKeySpace {
    next: AtomicU64,
    acked: AtomicU64,
}

impl YcsbKeySpace {
    /// A key space whose keys `0..count` exist.
    #[must_use]
    pub fn new(count: u64) -> Self {
        Self {
            next: AtomicU64::new(count),
            acked: AtomicU64::new(count),
        }
    }

    /// Number of keys readers may choose from.
    #[must_use]
    pub fn acknowledged(&self) -> u64 {
        self.acked.load(Ordering::Acquire)
    }

    /// Resets to `count` existing keys (after a load into a fresh database).
    pub fn reset(&self, count: u64) {
        self.next.store(count, Ordering::Release);
        self.acked.store(count, Ordering::Release);
    }

    /// Allocates the number of a new key.
    pub fn allocate(&self) -> u64 {
        self.next.fetch_add(1, Ordering::AcqRel)
    }

    /// Marks key number `keynum` inserted.
    pub fn acknowledge(&self, keynum: u64) {
        self.acked.fetch_max(keynum + 1, Ordering::AcqRel);
    }
}

/// One YCSB operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum YcsbOp {
    /// Read one record.
    Read,
    /// Overwrite one record.
    Update,
    /// Insert a new record.
    Insert,
    /// Scan a short range.
    Scan,
    /// Read a record and write it back.
    ReadModifyWrite,
}

/// How keys are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDistribution {
    /// Scrambled zipfian.
    Zipfian,
    /// Skewed towards the newest keys.
    Latest,
    /// Uniform.
    Uniform,
}

/// A workload's operation proportions (summing to 1) and key distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YcsbSpec {
    /// Proportion of reads.
    pub read: f64,
    /// Proportion of updates.
    pub update: f64,
    /// Proportion of inserts.
    pub insert: f64,
    /// Proportion of scans.
    pub scan: f64,
    /// Proportion of read-modify-writes.
    pub rmw: f64,
    /// Key distribution of reads, updates, scans and read-modify-writes.
    pub distribution: KeyDistribution,
}

impl YcsbSpec {
    /// The spec of YCSB workload `bench` (`None` for `ycsb-load` and non-YCSB benchmarks).
    #[must_use]
    pub fn of(bench: Benchmark) -> Option<Self> {
        let s = |read, update, insert, scan, rmw, distribution| YcsbSpec {
            read,
            update,
            insert,
            scan,
            rmw,
            distribution,
        };
        use KeyDistribution::{Latest, Zipfian};
        Some(match bench {
            Benchmark::YcsbA => s(0.5, 0.5, 0.0, 0.0, 0.0, Zipfian),
            Benchmark::YcsbB => s(0.95, 0.05, 0.0, 0.0, 0.0, Zipfian),
            Benchmark::YcsbC => s(1.0, 0.0, 0.0, 0.0, 0.0, Zipfian),
            Benchmark::YcsbD => s(0.95, 0.0, 0.05, 0.0, 0.0, Latest),
            Benchmark::YcsbE => s(0.0, 0.0, 0.05, 0.95, 0.0, Zipfian),
            Benchmark::YcsbF => s(0.5, 0.0, 0.0, 0.0, 0.5, Zipfian),
            Benchmark::YcsbR10 => s(0.1, 0.9, 0.0, 0.0, 0.0, Zipfian),
            Benchmark::YcsbR90 => s(0.9, 0.1, 0.0, 0.0, 0.0, Zipfian),
            _ => return None,
        })
    }

    /// The operation for a uniform draw `u` in `[0, 1)`.
    #[must_use]
    pub fn choose(&self, u: f64) -> YcsbOp {
        let mut acc = self.read;
        if u < acc {
            return YcsbOp::Read;
        }
        acc += self.update;
        if u < acc {
            return YcsbOp::Update;
        }
        acc += self.insert;
        if u < acc {
            return YcsbOp::Insert;
        }
        acc += self.scan;
        if u < acc {
            return YcsbOp::Scan;
        }
        if self.rmw > 0.0 {
            return YcsbOp::ReadModifyWrite;
        }
        // Rounding at the top end: the last operation with a non-zero proportion.
        [
            (self.scan, YcsbOp::Scan),
            (self.insert, YcsbOp::Insert),
            (self.update, YcsbOp::Update),
        ]
        .into_iter()
        .find(|(p, _)| *p > 0.0)
        .map_or(YcsbOp::Read, |(_, op)| op)
    }
}

/// YCSB parameters of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YcsbParams {
    /// Bytes of one record (fields × field size).
    pub record_size: usize,
    /// Longest scan of workload E (scan lengths are uniform in `1..=max_scan_length`).
    pub max_scan_length: usize,
}

impl Default for YcsbParams {
    fn default() -> Self {
        Self {
            record_size: 1000,
            max_scan_length: 100,
        }
    }
}

/// What the driver prepares once per YCSB benchmark and the workers share.
#[derive(Debug)]
pub struct YcsbRun<'a> {
    /// The key space (shared across benchmarks).
    pub keys: &'a YcsbKeySpace,
    /// Parameters.
    pub params: YcsbParams,
    /// Keys when the benchmark started.
    pub initial_keys: u64,
    /// Item count of the scrambled zipfian chooser (existing keys plus the inserts
    /// expected, as YCSB sizes it).
    pub zipf_items: u64,
    /// The latest-key chooser with `zeta` computed for `initial_keys` (workload D only).
    pub latest: Option<SkewedLatest>,
}

impl<'a> YcsbRun<'a> {
    /// Prepares benchmark `bench` doing `ops` operations over `keys`.
    #[must_use]
    pub fn new(bench: Benchmark, ops: u64, keys: &'a YcsbKeySpace, params: YcsbParams) -> Self {
        let initial_keys = keys.acknowledged();
        let spec = YcsbSpec::of(bench);
        let expected_new = spec.map_or(0, |s| (ops as f64 * s.insert * 2.0) as u64);
        Self {
            keys,
            params,
            initial_keys,
            zipf_items: initial_keys.saturating_add(expected_new).max(1),
            latest: spec
                .filter(|s| s.distribution == KeyDistribution::Latest)
                .map(|_| SkewedLatest::new(initial_keys)),
        }
    }
}

/// Per-thread key chooser.
enum Chooser {
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
    Uniform,
}

impl Chooser {
    fn next<R: rand::Rng + ?Sized>(&mut self, rng: &mut R, keys: &YcsbKeySpace) -> u64 {
        let count = keys.acknowledged().max(1);
        match self {
            Chooser::Zipfian(z) => loop {
                let k = z.next(rng);
                if k < count {
                    return k;
                }
            },
            Chooser::Latest(l) => l.next(rng, count),
            Chooser::Uniform => rng.random_range(0..count),
        }
    }
}

/// Runs worker `t` of a YCSB benchmark (`ycsb-load` or a workload): `count` operations
/// starting at operation `first` of `total`.
///
/// # Errors
/// The first engine error met.
pub(crate) fn run_ycsb_worker(
    ctx: &WorkerCtx<'_>,
    y: &YcsbRun<'_>,
    t: usize,
    m: &mut ThreadMetrics,
    rng: &mut rand::rngs::SmallRng,
    values: &mut crate::keygen::ValueGenerator,
) -> Result<()> {
    let total = ctx.bench.total_ops(ctx.num, ctx.reads);
    let (first, count) = share(total, ctx.threads, t);
    let e = ctx.engine;
    let rs = y.params.record_size;
    let mut key = Vec::with_capacity(32);
    let Some(spec) = YcsbSpec::of(ctx.bench) else {
        // ycsb-load: key numbers first..first+count, hashed.
        return drive(ctx, m, t, Some(count), true, |i| {
            ycsb_key_into(first + i, &mut key);
            e.put(&key, values.generate(rs), ctx.sync)?;
            Ok(Some(Done::write(OpKind::Insert, key.len(), rs)))
        });
    };
    let mut chooser = match spec.distribution {
        KeyDistribution::Zipfian => Chooser::Zipfian(ScrambledZipfian::new(0, y.zipf_items)),
        KeyDistribution::Latest => Chooser::Latest(
            y.latest
                .clone()
                .unwrap_or_else(|| SkewedLatest::new(y.initial_keys)),
        ),
        KeyDistribution::Uniform => Chooser::Uniform,
    };
    let max_scan = y.params.max_scan_length.max(1);
    drive(ctx, m, t, Some(count), true, |_| {
        let op = spec.choose(rng.random());
        Ok(Some(match op {
            YcsbOp::Read => {
                ycsb_key_into(chooser.next(rng, y.keys), &mut key);
                let v = e.get(&key)?;
                Done::read(OpKind::Read, key.len(), v.as_deref())
            }
            YcsbOp::Update => {
                ycsb_key_into(chooser.next(rng, y.keys), &mut key);
                e.put(&key, values.generate(rs), ctx.sync)?;
                Done::write(OpKind::Update, key.len(), rs)
            }
            YcsbOp::Insert => {
                let n = y.keys.allocate();
                ycsb_key_into(n, &mut key);
                e.put(&key, values.generate(rs), ctx.sync)?;
                y.keys.acknowledge(n);
                Done::write(OpKind::Insert, key.len(), rs)
            }
            YcsbOp::Scan => {
                ycsb_key_into(chooser.next(rng, y.keys), &mut key);
                let len = rng.random_range(1..=max_scan);
                let r = e.scan(Some(&key), len, crate::engine::Direction::Forward)?;
                Done {
                    kind: OpKind::Scan,
                    n: 1,
                    bytes: r.bytes,
                    written: 0,
                    found: None,
                }
            }
            YcsbOp::ReadModifyWrite => {
                ycsb_key_into(chooser.next(rng, y.keys), &mut key);
                let v = e.get(&key)?;
                e.put(&key, values.generate(rs), ctx.sync)?;
                let mut d = Done::read(OpKind::ReadModifyWrite, key.len(), v.as_deref());
                d.bytes += (key.len() + rs) as u64;
                d.written = (key.len() + rs) as u64;
                d
            }
        }))
    })
}

/// Average length of the keys of key numbers `0..count` (estimated from a sample).
#[must_use]
pub fn average_key_len(count: u64) -> f64 {
    let sample = count.clamp(1, 1000);
    let step = (count / sample).max(1);
    let total: usize = (0..sample).map(|i| ycsb_key(i * step).len()).sum();
    total as f64 / sample as f64
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    use super::*;

    #[test]
    fn fnv_hash_matches_ycsb() {
        // FNV-1a over eight zero bytes, then the absolute value as a signed number.
        let mut h = FNV_OFFSET_BASIS_64;
        for _ in 0..8 {
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        assert_eq!(fnv_hash64(0), (h as i64).unsigned_abs());
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
        assert!(fnv_hash64(12_345) <= i64::MAX as u64);
        let k = ycsb_key(7);
        assert!(k.starts_with(b"user"));
        assert!(k[4..].iter().all(u8::is_ascii_digit));
        assert_eq!(
            String::from_utf8(k).unwrap(),
            format!("user{}", fnv_hash64(7))
        );
    }

    #[test]
    fn zeta_is_the_generalised_harmonic_number_and_extends() {
        let z3 = zeta(0, 3, 0.99, 0.0);
        let want = 1.0 + 1.0 / 2f64.powf(0.99) + 1.0 / 3f64.powf(0.99);
        assert!((z3 - want).abs() < 1e-12);
        let z10 = zeta(0, 10, 0.99, 0.0);
        assert!((zeta(3, 10, 0.99, z3) - z10).abs() < 1e-12);
    }

    #[test]
    fn scrambled_zetan_constant_is_close_to_the_sum() {
        // The sum over 10^10 terms is too long for a test: check the integral bound
        // zeta(n) ≈ zeta(m) + ∫_m^n x^-θ dx with m = 10^6.
        let m = 1_000_000u64;
        let zm = zeta(0, m, 0.99, 0.0);
        let tail = ((1e10f64).powf(0.01) - (m as f64).powf(0.01)) / 0.01;
        assert!((zm + tail - SCRAMBLED_ZETAN).abs() < 0.01, "{}", zm + tail);
    }

    #[test]
    fn zipfian_top_items_follow_one_over_i_to_the_theta() {
        let n = 1000u64;
        let mut z = Zipfian::new(0, n, ZIPFIAN_CONSTANT);
        let mut rng = SmallRng::seed_from_u64(42);
        let samples = 1_000_000u64;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            let v = z.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        let zn = zeta(0, n, 0.99, 0.0);
        let p = |i: usize| 1.0 / ((i + 1) as f64).powf(0.99) / zn;
        let f = |i: usize| counts[i] as f64 / samples as f64;
        // Items 0 and 1 are exact in Gray et al.'s method (up to sampling noise)...
        for i in [0, 1] {
            assert!(
                (f(i) - p(i)).abs() <= 0.02 * p(i),
                "item {i}: {} vs {}",
                f(i),
                p(i)
            );
        }
        // ...later ranks follow the power law approximately (item 2 is the worst, ≈ +17 %)...
        for i in 2..20 {
            assert!(
                (f(i) - p(i)).abs() <= 0.2 * p(i),
                "item {i}: {} vs {}",
                f(i),
                p(i)
            );
        }
        // ...and the mass of the top k items is within 5 % of the definition's.
        for k in [3usize, 10, 100, 500] {
            let got: f64 = (0..k).map(f).sum();
            let want: f64 = (0..k).map(p).sum();
            assert!(
                (got - want).abs() <= 0.05 * want,
                "top {k}: {got} vs {want}"
            );
        }
        // Popularity decreases with the rank overall.
        let head: u64 = counts[..10].iter().sum();
        let tail: u64 = counts[n as usize - 10..].iter().sum();
        assert!(head > 50 * tail, "{head} vs {tail}");
    }

    #[test]
    fn zipfian_grows_its_item_count_like_a_fresh_one() {
        let mut grown = Zipfian::new(0, 100, 0.99);
        let fresh = Zipfian::new(0, 500, 0.99);
        let mut rng = SmallRng::seed_from_u64(1);
        let v = grown.next_with_count(&mut rng, 500);
        assert!(v < 500);
        assert!((grown.zetan - fresh.zetan).abs() < 1e-9);
        assert!((grown.eta - fresh.eta).abs() < 1e-9);
    }

    #[test]
    fn scrambled_zipfian_spreads_the_hottest_keys() {
        let n = 100_000u64;
        let mut z = ScrambledZipfian::new(0, n);
        let mut rng = SmallRng::seed_from_u64(7);
        let samples = 300_000;
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for _ in 0..samples {
            let v = z.next(&mut rng);
            assert!(v < n);
            *counts.entry(v).or_default() += 1;
        }
        let mut top: Vec<(u64, u64)> = counts.into_iter().collect();
        top.sort_by_key(|b| std::cmp::Reverse(b.1));
        // The hottest key gets ≈ 1/zeta(10^10) of the draws, as zipfian item 0 does.
        let f = top[0].1 as f64 / samples as f64;
        let p = 1.0 / SCRAMBLED_ZETAN;
        assert!((f - p).abs() < 0.15 * p, "{f} vs {p}");
        // ...but the 20 hottest keys are scattered, not the smallest numbers.
        let hot: Vec<u64> = top[..20].iter().map(|&(k, _)| k).collect();
        assert!(hot.iter().filter(|&&k| k < n / 10).count() <= 8, "{hot:?}");
        assert!(hot.iter().any(|&k| k > n / 2), "{hot:?}");
    }

    #[test]
    fn latest_prefers_the_newest_keys() {
        let mut l = SkewedLatest::new(10_000);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for _ in 0..200_000 {
            let v = l.next(&mut rng, 10_000);
            assert!(v < 10_000);
            *counts.entry(v).or_default() += 1;
        }
        let (best, _) = counts.iter().max_by_key(|&(_, c)| *c).unwrap();
        assert_eq!(*best, 9_999);
        // After inserts, the newest key leads.
        let mut after: HashMap<u64, u64> = HashMap::new();
        for _ in 0..100_000 {
            *after.entry(l.next(&mut rng, 10_100)).or_default() += 1;
        }
        let (best, _) = after.iter().max_by_key(|&(_, c)| *c).unwrap();
        assert_eq!(*best, 10_099);
    }

    #[test]
    fn uniform_chooser_passes_chi_square() {
        let keys = YcsbKeySpace::new(100);
        let mut c = Chooser::Uniform;
        let mut rng = SmallRng::seed_from_u64(11);
        let samples = 100_000u64;
        let mut counts = [0u64; 100];
        for _ in 0..samples {
            counts[c.next(&mut rng, &keys) as usize] += 1;
        }
        let e = samples as f64 / 100.0;
        let chi2: f64 = counts.iter().map(|&o| (o as f64 - e).powi(2) / e).sum();
        // 99 degrees of freedom: the 99.9th percentile is ≈ 148.
        assert!(chi2 < 148.0, "chi2 = {chi2}");
    }

    #[test]
    fn scan_lengths_are_uniform_in_1_to_100() {
        let mut rng = SmallRng::seed_from_u64(5);
        let mut counts = [0u64; 101];
        for _ in 0..101_000 {
            let l: usize = rng.random_range(1..=100);
            counts[l] += 1;
        }
        assert_eq!(counts[0], 0);
        let e = 1010.0;
        let chi2: f64 = counts[1..]
            .iter()
            .map(|&o| (o as f64 - e).powi(2) / e)
            .sum();
        assert!(chi2 < 148.0, "chi2 = {chi2}");
    }

    #[test]
    fn operation_mixes_match_the_definitions() {
        let mut rng = SmallRng::seed_from_u64(9);
        for (b, want) in [
            (Benchmark::YcsbA, [0.5, 0.5, 0.0, 0.0, 0.0]),
            (Benchmark::YcsbB, [0.95, 0.05, 0.0, 0.0, 0.0]),
            (Benchmark::YcsbC, [1.0, 0.0, 0.0, 0.0, 0.0]),
            (Benchmark::YcsbD, [0.95, 0.0, 0.05, 0.0, 0.0]),
            (Benchmark::YcsbE, [0.0, 0.0, 0.05, 0.95, 0.0]),
            (Benchmark::YcsbF, [0.5, 0.0, 0.0, 0.0, 0.5]),
        ] {
            let spec = YcsbSpec::of(b).unwrap();
            let mut got = [0u64; 5];
            let n = 100_000;
            for _ in 0..n {
                let i = match spec.choose(rng.random()) {
                    YcsbOp::Read => 0,
                    YcsbOp::Update => 1,
                    YcsbOp::Insert => 2,
                    YcsbOp::Scan => 3,
                    YcsbOp::ReadModifyWrite => 4,
                };
                got[i] += 1;
            }
            for i in 0..5 {
                let f = got[i] as f64 / n as f64;
                assert!((f - want[i]).abs() < 0.01, "{b:?} op {i}: {f}");
            }
        }
        assert!(YcsbSpec::of(Benchmark::YcsbLoad).is_none());
        assert_eq!(
            YcsbSpec::of(Benchmark::YcsbC).unwrap().choose(0.9999),
            YcsbOp::Read
        );
    }

    #[test]
    fn zipfian_chooser_redraws_keys_not_inserted_yet() {
        let keys = YcsbKeySpace::new(50);
        let mut c = Chooser::Zipfian(ScrambledZipfian::new(0, 1000));
        let mut rng = SmallRng::seed_from_u64(2);
        for _ in 0..10_000 {
            assert!(c.next(&mut rng, &keys) < 50);
        }
        let n = keys.allocate();
        assert_eq!(n, 50);
        keys.acknowledge(n);
        assert_eq!(keys.acknowledged(), 51);
    }
}
