//! A device model of an SSD with parallel units, and a file-system wrapper that charges I/O
//! to it.
//!
//! Owns:
//! - [`UnitParams`]: the service times of one unit (a channel / die group of a flash SSD, or a
//!   separate device), with [`UnitParams::flash`] defaults.
//! - [`DeviceModel`]: the pure core, no I/O and no clock. Each unit is a FIFO queue described
//!   by the time it becomes idle (`busy_until`); [`DeviceModel::submit`] returns when an
//!   operation completes and keeps per-unit statistics ([`UnitStats`]).
//! - [`Layout`]: how the files of a directory map onto units (one dedicated unit, or striped
//!   over all of them like a conventional FTL).
//! - [`UnitFs`]: a [`FileSystem`] wrapper. Files directly inside a mapped directory are
//!   charged to the model: a read waits for its completion; appends are programmed page by
//!   page without blocking the writer unless the unit's backlog exceeds the device write
//!   buffer; `sync` waits for every program of the file. Every other path, and every metadata
//!   operation, passes straight through.
//! - [`Clock`]: real time (sleeping) or a shared virtual counter (deterministic tests).
//! - [`DeviceSpec`]: a `key=value,...` string that configures all of the above from a CLI.
//! - [`simulate_mix`]: a deterministic virtual-time, fio-like read/write mix on the model.
//!
//! Invariants: for every unit, `busy_until` never decreases, and an operation starts no earlier
//! than both its submission time and the completion of every operation submitted to that unit
//! before it (FIFO). Times are nanoseconds; arithmetic saturates instead of overflowing.
//!
//! Thread-safety: [`DeviceModel`] is a plain value (`&mut self`). [`UnitFs`] keeps it behind
//! one `parking_lot::Mutex`, held only to compute completion times, never while waiting; clones
//! of a `UnitFs` and the files it opened share the model. With [`Clock::Virtual`] results are
//! deterministic only if the calls happen in a deterministic order (e.g. one thread).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// Most units a device may have (a sanity bound against absurd configurations).
pub const MAX_UNITS: usize = 1024;
/// Most outstanding I/Os (`jobs * queue_depth`) of a [`simulate_mix`] run.
const MAX_SLOTS: usize = 1 << 20;

/// An invalid configuration: a bad spec string, an out-of-range unit, a zero size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitsError(String);

impl UnitsError {
    fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl fmt::Display for UnitsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitsError {}

impl From<UnitsError> for io::Error {
    fn from(e: UnitsError) -> Self {
        io::Error::new(io::ErrorKind::InvalidInput, e)
    }
}

/// Service times of one unit. All times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitParams {
    /// Fixed cost of a read (array sensing, tR, plus controller overhead).
    pub read_base_ns: u64,
    /// Transfer time per KiB read.
    pub read_ns_per_kib: u64,
    /// Fixed cost of programming one page (tPROG); a write of `b` bytes programs
    /// `ceil(b / page_bytes)` pages.
    pub write_base_ns: u64,
    /// Transfer time per KiB written.
    pub write_ns_per_kib: u64,
    /// Program unit in bytes (at least 1).
    pub page_bytes: u64,
    /// Extra time paid by a read that arrives while the unit has a write queued or running, or
    /// less than `penalty_window_ns` after its last write completed.
    pub read_after_write_penalty_ns: u64,
    /// See `read_after_write_penalty_ns`.
    pub penalty_window_ns: u64,
}

impl UnitParams {
    /// One unit of a flash SSD of the Samsung 960 Pro class (48-layer MLC V-NAND behind an
    /// NVMe controller). Sources and reasoning:
    /// - `read_base_ns` = 60 µs: MLC/TLC NAND page read tR is about 50–90 µs; the 960 Pro's
    ///   specified 4 KiB random read at QD1 is 14k IOPS (Samsung spec sheet, as reproduced in
    ///   AnandTech's 960 Pro review, 2016), i.e. ≈ 71 µs end to end, of which ≈ 5 µs is the
    ///   4 KiB transfer below and a few µs the host's NVMe stack.
    /// - `read_ns_per_kib` = 1.28 µs: the flash channel moves 800 MB/s (Toggle DDR at
    ///   800 MT/s on an 8-bit bus, the interface of that V-NAND generation): 1 KiB / 800 MB/s.
    /// - `write_base_ns` = 600 µs per 16 KiB page: MLC tPROG is about 500–900 µs (datasheet
    ///   class values; Grupp et al., "The Bleak Future of NAND Flash Memory", FAST 2012, report
    ///   MLC program latencies of this order, several times SLC's). A real die programs several
    ///   planes (and both MLC bits) per tPROG, so one unit here is a scaled-down program stream
    ///   (≈ 26 MB/s), not a whole die.
    /// - `write_ns_per_kib` = 1.28 µs: the same channel transfer as reads.
    /// - `page_bytes` = 16 KiB: the page size of 3D V-NAND of that generation.
    /// - `read_after_write_penalty_ns` = 60 µs within `penalty_window_ns` = 1 ms: a modelling
    ///   assumption, not a datasheet value. Reads soon after programs on the same unit suffer
    ///   program interference, program-suspend overhead and garbage collection; we charge one
    ///   extra tR (as a read retry would) for a window of ≈ 1.5 tPROG. Set either to 0 to
    ///   disable.
    #[must_use]
    pub fn flash() -> Self {
        Self {
            read_base_ns: 60_000,
            read_ns_per_kib: 1_280,
            write_base_ns: 600_000,
            write_ns_per_kib: 1_280,
            page_bytes: 16 * KIB,
            read_after_write_penalty_ns: 60_000,
            penalty_window_ns: 1_000_000,
        }
    }

    /// These parameters with every time multiplied by `factor` (rounded to the nanosecond).
    /// Fails unless `factor` is finite and positive.
    pub fn scaled(&self, factor: f64) -> Result<Self, UnitsError> {
        if !factor.is_finite() || factor <= 0.0 {
            return Err(UnitsError::new(format!(
                "scale factor must be finite and positive, got {factor}"
            )));
        }
        let s = |ns: u64| -> u64 {
            let v = (ns as f64 * factor).round();
            if v >= u64::MAX as f64 {
                u64::MAX
            } else {
                v as u64
            }
        };
        Ok(Self {
            read_base_ns: s(self.read_base_ns),
            read_ns_per_kib: s(self.read_ns_per_kib),
            write_base_ns: s(self.write_base_ns),
            write_ns_per_kib: s(self.write_ns_per_kib),
            page_bytes: self.page_bytes,
            read_after_write_penalty_ns: s(self.read_after_write_penalty_ns),
            penalty_window_ns: s(self.penalty_window_ns),
        })
    }

    /// Service time of a read of `bytes` (without the read-after-write penalty).
    #[must_use]
    pub fn read_ns(&self, bytes: u64) -> u64 {
        self.read_base_ns
            .saturating_add(per_kib(bytes, self.read_ns_per_kib))
    }

    /// Service time of a write of `bytes`: `ceil(bytes / page_bytes)` programs plus transfer.
    #[must_use]
    pub fn write_ns(&self, bytes: u64) -> u64 {
        self.pages(bytes)
            .saturating_mul(self.write_base_ns)
            .saturating_add(per_kib(bytes, self.write_ns_per_kib))
    }

    /// Pages programmed by a write of `bytes`.
    #[must_use]
    pub fn pages(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.page_bytes.max(1))
    }
}

/// `bytes * ns_per_kib / 1024`, rounded up, saturating.
fn per_kib(bytes: u64, ns_per_kib: u64) -> u64 {
    let v = (u128::from(bytes) * u128::from(ns_per_kib)).div_ceil(u128::from(KIB));
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// The kind of a device operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoKind {
    /// A read.
    Read,
    /// A write (page programs).
    Write,
}

/// Counters of one unit since creation or the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitStats {
    /// Read operations.
    pub reads: u64,
    /// Write operations (each programs one or more pages).
    pub writes: u64,
    /// Pages programmed.
    pub programs: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Time spent serving operations.
    pub busy_ns: u64,
    /// Total time reads waited in the queue before their service started.
    pub read_wait_ns: u64,
    /// Total time writes waited in the queue before their service started.
    pub write_wait_ns: u64,
    /// Reads that paid the read-after-write penalty.
    pub penalized_reads: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct UnitState {
    busy_until: u64,
    /// Completion time of the last write submitted, if any.
    last_write_end: Option<u64>,
    stats: UnitStats,
}

/// N units, each a FIFO queue. Pure: the caller supplies the submission time.
#[derive(Debug, Clone)]
pub struct DeviceModel {
    params: UnitParams,
    units: Vec<UnitState>,
}

impl DeviceModel {
    /// A device of `units` idle units. Fails if `units` is not in `1..=MAX_UNITS` or
    /// `params.page_bytes` is 0.
    pub fn new(params: UnitParams, units: usize) -> Result<Self, UnitsError> {
        if units == 0 || units > MAX_UNITS {
            return Err(UnitsError::new(format!(
                "a device needs 1..={MAX_UNITS} units, got {units}"
            )));
        }
        if params.page_bytes == 0 {
            return Err(UnitsError::new("page size must be positive"));
        }
        Ok(Self {
            params,
            units: vec![UnitState::default(); units],
        })
    }

    /// The unit parameters.
    #[must_use]
    pub fn params(&self) -> &UnitParams {
        &self.params
    }

    /// Number of units.
    #[must_use]
    pub fn units(&self) -> usize {
        self.units.len()
    }

    /// Submits an operation of `bytes` to `unit` at time `now_ns` and returns its completion
    /// time. It starts when the unit has finished everything submitted before it (or at
    /// `now_ns` if idle). A read pays the read-after-write penalty if the unit's last write
    /// completes after `now_ns - penalty_window_ns` (i.e. is queued, running, or finished less
    /// than a window ago). An operation of 0 bytes does nothing and completes at `now_ns`.
    /// Fails if `unit` is out of range.
    pub fn submit(
        &mut self,
        now_ns: u64,
        unit: usize,
        kind: IoKind,
        bytes: u64,
    ) -> Result<u64, UnitsError> {
        let n = self.units.len();
        let params = self.params;
        let u = self
            .units
            .get_mut(unit)
            .ok_or_else(|| UnitsError::new(format!("unit {unit} out of range (0..{n})")))?;
        if bytes == 0 {
            return Ok(now_ns);
        }
        let start = now_ns.max(u.busy_until);
        let wait = start - now_ns;
        let service = match kind {
            IoKind::Read => {
                let penalized = u
                    .last_write_end
                    .is_some_and(|end| now_ns < end.saturating_add(params.penalty_window_ns))
                    && params.read_after_write_penalty_ns > 0;
                u.stats.reads = u.stats.reads.saturating_add(1);
                u.stats.bytes_read = u.stats.bytes_read.saturating_add(bytes);
                u.stats.read_wait_ns = u.stats.read_wait_ns.saturating_add(wait);
                let mut t = params.read_ns(bytes);
                if penalized {
                    u.stats.penalized_reads = u.stats.penalized_reads.saturating_add(1);
                    t = t.saturating_add(params.read_after_write_penalty_ns);
                }
                t
            }
            IoKind::Write => {
                u.stats.writes = u.stats.writes.saturating_add(1);
                u.stats.programs = u.stats.programs.saturating_add(params.pages(bytes));
                u.stats.bytes_written = u.stats.bytes_written.saturating_add(bytes);
                u.stats.write_wait_ns = u.stats.write_wait_ns.saturating_add(wait);
                params.write_ns(bytes)
            }
        };
        let end = start.saturating_add(service);
        u.busy_until = end;
        u.stats.busy_ns = u.stats.busy_ns.saturating_add(service);
        if kind == IoKind::Write {
            u.last_write_end = Some(end);
        }
        Ok(end)
    }

    /// When `unit` becomes idle (None if out of range).
    #[must_use]
    pub fn busy_until(&self, unit: usize) -> Option<u64> {
        self.units.get(unit).map(|u| u.busy_until)
    }

    /// Work queued on `unit` ahead of `now_ns` (0 if idle or out of range).
    #[must_use]
    pub fn backlog_ns(&self, now_ns: u64, unit: usize) -> u64 {
        self.busy_until(unit)
            .map_or(0, |b| b.saturating_sub(now_ns))
    }

    /// Per-unit statistics, indexed by unit.
    #[must_use]
    pub fn stats(&self) -> Vec<UnitStats> {
        self.units.iter().map(|u| u.stats).collect()
    }

    /// Zeroes the statistics (not the queues).
    pub fn reset_stats(&mut self) {
        for u in &mut self.units {
            u.stats = UnitStats::default();
        }
    }
}

/// Splits `len` bytes at `offset` of a file striped over `group` units (stripe `stripe`
/// bytes, the file's first stripe on unit `first`) into `(unit index in group, bytes)` pieces,
/// merging consecutive pieces on the same unit.
fn stripe_pieces(
    offset: u64,
    len: u64,
    stripe: u64,
    first: u64,
    group: usize,
) -> Vec<(usize, u64)> {
    let mut out: Vec<(usize, u64)> = Vec::new();
    let stripe = stripe.max(1);
    let group = (group.max(1)) as u64;
    let end = offset.saturating_add(len);
    let mut o = offset;
    while o < end {
        let idx = o / stripe;
        let stripe_end = idx.saturating_add(1).saturating_mul(stripe).min(end);
        let piece = stripe_end - o;
        // `group` fits in usize, so the remainder does too.
        let unit = (first.wrapping_add(idx) % group) as usize;
        match out.last_mut() {
            Some((u, b)) if *u == unit => *b += piece,
            _ => out.push((unit, piece)),
        }
        o = stripe_end;
    }
    out
}

/// How the files of one directory map onto units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Every byte of every file lives on this unit.
    Dedicated(usize),
    /// A file's bytes are spread over all units: the byte at offset `o` of file `f` lives on
    /// unit `(h(name of f) + o / stripe_bytes) % N`, `h` being FNV-1a of the file name. The
    /// placement follows the name the file is opened under (a renamed file moves).
    Striped {
        /// Stripe size in bytes (at least 1).
        stripe_bytes: u64,
    },
    /// Like [`Layout::Striped`], over the `count` units starting at `first` only (a group
    /// of units a device gives one directory).
    StripedOver {
        /// The group's first unit.
        first: usize,
        /// Units in the group (at least 1).
        count: usize,
        /// Stripe size in bytes (at least 1).
        stripe_bytes: u64,
    },
}

/// FNV-1a, 64 bits: stable across runs and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Where one file's bytes live.
#[derive(Debug, Clone, Copy)]
struct Placement {
    layout: Layout,
    name_hash: u64,
}

impl Placement {
    fn pieces(&self, units: usize, offset: u64, len: u64) -> Vec<(usize, u64)> {
        match self.layout {
            Layout::Dedicated(u) => vec![(u, len)],
            Layout::Striped { stripe_bytes } => {
                stripe_pieces(offset, len, stripe_bytes, self.name_hash, units)
            }
            Layout::StripedOver {
                first,
                count,
                stripe_bytes,
            } => stripe_pieces(offset, len, stripe_bytes, self.name_hash, count)
                .into_iter()
                .map(|(u, b)| (first + u, b))
                .collect(),
        }
    }
}

/// Real time or a shared virtual counter. Clones share the virtual counter (or epoch).
#[derive(Debug, Clone)]
pub enum Clock {
    /// Wall-clock time since the given epoch; waiting sleeps.
    Real(Instant),
    /// A shared virtual nanosecond counter; waiting advances it to the deadline.
    Virtual(Arc<AtomicU64>),
}

/// The part of a real-clock wait spent yielding instead of sleeping.
const SPIN_NS: u64 = 20_000;
/// Cap on one observed sleep overshoot fed to the estimate (a preemption is not slack).
const MAX_OVERSHOOT_NS: u64 = 200_000;
/// Running estimate (EWMA, weight 1/8) of how late `thread::sleep` wakes up: on Linux the
/// default timer slack alone is 50 µs. Process-wide, as the cause is the OS timer.
static SLEEP_OVERSHOOT_NS: AtomicU64 = AtomicU64::new(50_000);

impl Clock {
    /// A real clock whose epoch is now.
    #[must_use]
    pub fn real() -> Self {
        Self::Real(Instant::now())
    }

    /// A virtual clock at 0.
    #[must_use]
    pub fn new_virtual() -> Self {
        Self::Virtual(Arc::new(AtomicU64::new(0)))
    }

    /// Nanoseconds since the epoch (real) or the counter (virtual).
    #[must_use]
    pub fn now_ns(&self) -> u64 {
        match self {
            Self::Real(epoch) => u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Self::Virtual(t) => t.load(Ordering::Acquire),
        }
    }

    /// Returns once `now_ns() >= deadline_ns`. Real: sleeps until ≈ 20 µs before the deadline
    /// (ending the sleep early by the estimated wake-up overshoot of `thread::sleep`, which is
    /// learnt as it goes), then yields until the deadline. Virtual: advances the counter to the
    /// deadline (never back).
    pub fn wait_until(&self, deadline_ns: u64) {
        match self {
            Self::Virtual(t) => {
                t.fetch_max(deadline_ns, Ordering::AcqRel);
            }
            Self::Real(_) => loop {
                let now = self.now_ns();
                if now >= deadline_ns {
                    return;
                }
                let left = deadline_ns - now;
                let est = SLEEP_OVERSHOOT_NS.load(Ordering::Relaxed);
                let margin = SPIN_NS.saturating_add(est);
                if left > margin {
                    let asked = left - margin;
                    std::thread::sleep(Duration::from_nanos(asked));
                    let slept = self.now_ns().saturating_sub(now);
                    let over = slept.saturating_sub(asked).min(MAX_OVERSHOOT_NS);
                    SLEEP_OVERSHOOT_NS.store((est * 7 + over) / 8, Ordering::Relaxed);
                } else {
                    std::thread::yield_now();
                }
            },
        }
    }

    /// Advances a virtual clock by `ns`; a real clock sleeps for `ns`.
    pub fn advance(&self, ns: u64) {
        self.wait_until(self.now_ns().saturating_add(ns));
    }
}

/// Everything a [`UnitFs`] needs besides the mappings and the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Service times of each unit.
    pub params: UnitParams,
    /// Number of units (at least 1).
    pub units: usize,
    /// Per-unit device write buffer: a writer blocks while the unit has more than this many
    /// bytes' worth of page programs (converted to time at `params.write_ns(page)` per page)
    /// queued ahead of now.
    pub write_buffer_bytes: u64,
}

impl DeviceConfig {
    /// `units` flash units ([`UnitParams::flash`]) with a 4 MiB write buffer each.
    #[must_use]
    pub fn flash(units: usize) -> Self {
        Self {
            params: UnitParams::flash(),
            units,
            write_buffer_bytes: 4 * MIB,
        }
    }

    /// The write buffer as queued time per unit.
    fn backlog_bound_ns(&self) -> u64 {
        let page = self.params.page_bytes.max(1);
        self.write_buffer_bytes
            .div_ceil(page)
            .saturating_mul(self.params.write_ns(page))
    }
}

/// State shared by a `UnitFs`, its clones and its files.
#[derive(Debug)]
struct Device {
    model: Mutex<DeviceModel>,
    /// The model's unit count and page size (fixed at creation).
    units: usize,
    page_bytes: u64,
    clock: Clock,
    backlog_bound_ns: u64,
}

impl Device {
    /// Submits the pieces of one I/O at the current time; returns (completion of its last
    /// piece, the time until which a writer must wait for the backlog bound).
    fn submit(&self, pieces: &[(usize, u64)], kind: IoKind) -> io::Result<(u64, u64)> {
        let mut model = self.model.lock();
        let now = self.clock.now_ns();
        let mut done = now;
        let mut throttle = now;
        for &(unit, bytes) in pieces {
            done = done.max(model.submit(now, unit, kind, bytes)?);
            if kind == IoKind::Write {
                let busy = model.busy_until(unit).unwrap_or(now);
                throttle = throttle.max(busy.saturating_sub(self.backlog_bound_ns));
            }
        }
        Ok((done, throttle))
    }
}

/// A [`FileSystem`] wrapper charging the I/O of files in mapped directories to a
/// [`DeviceModel`]. Clones share the model.
#[derive(Clone)]
pub struct UnitFs {
    inner: Arc<dyn FileSystem>,
    mappings: Arc<Vec<(PathBuf, Layout)>>,
    device: Arc<Device>,
}

impl fmt::Debug for UnitFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnitFs")
            .field("inner", &self.inner)
            .field("mappings", &self.mappings)
            .field("units", &self.device.units)
            .finish_non_exhaustive()
    }
}

impl UnitFs {
    /// Wraps `inner`. Files directly inside a directory of `mappings` are modelled with its
    /// layout; other paths pass through. Fails (`InvalidInput`) on 0 units, a 0 page size, a
    /// dedicated unit out of range, a 0 stripe, or a directory mapped twice.
    pub fn new(
        inner: Arc<dyn FileSystem>,
        config: DeviceConfig,
        mappings: Vec<(PathBuf, Layout)>,
        clock: Clock,
    ) -> io::Result<Self> {
        let model = DeviceModel::new(config.params, config.units)?;
        for (i, (dir, layout)) in mappings.iter().enumerate() {
            match *layout {
                Layout::Dedicated(u) if u >= config.units => {
                    return Err(UnitsError::new(format!(
                        "{}: unit {u} out of range (0..{})",
                        dir.display(),
                        config.units
                    ))
                    .into());
                }
                Layout::Striped { stripe_bytes: 0 }
                | Layout::StripedOver {
                    stripe_bytes: 0, ..
                } => {
                    return Err(UnitsError::new(format!(
                        "{}: stripe must be positive",
                        dir.display()
                    ))
                    .into());
                }
                Layout::StripedOver { first, count, .. }
                    if count == 0 || first.saturating_add(count) > config.units =>
                {
                    return Err(UnitsError::new(format!(
                        "{}: units {first}..{} out of range (0..{})",
                        dir.display(),
                        first.saturating_add(count),
                        config.units
                    ))
                    .into());
                }
                _ => {}
            }
            if mappings.iter().take(i).any(|(d, _)| d == dir) {
                return Err(UnitsError::new(format!("{} mapped twice", dir.display())).into());
            }
        }
        Ok(Self {
            inner,
            mappings: Arc::new(mappings),
            device: Arc::new(Device {
                units: config.units,
                page_bytes: config.params.page_bytes,
                model: Mutex::new(model),
                clock,
                backlog_bound_ns: config.backlog_bound_ns(),
            }),
        })
    }

    /// The wrapped file system.
    #[must_use]
    pub fn inner(&self) -> &Arc<dyn FileSystem> {
        &self.inner
    }

    /// The clock the model runs on.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.device.clock
    }

    /// Per-unit statistics, indexed by unit.
    #[must_use]
    pub fn unit_stats(&self) -> Vec<UnitStats> {
        self.device.model.lock().stats()
    }

    /// Zeroes the per-unit statistics (queued work stays queued).
    pub fn reset_stats(&self) {
        self.device.model.lock().reset_stats();
    }

    /// The placement of `path`, if it is directly inside a mapped directory.
    fn placement(&self, path: &Path) -> Option<Placement> {
        let parent = path.parent()?;
        let name = path.file_name()?;
        self.mappings
            .iter()
            .find(|(dir, _)| dir.as_path() == parent)
            .map(|(_, layout)| Placement {
                layout: *layout,
                name_hash: fnv1a(name.as_encoded_bytes()),
            })
    }

    fn wrap_reader(
        &self,
        inner: Arc<dyn RandomAccessFile>,
        path: &Path,
    ) -> Arc<dyn RandomAccessFile> {
        match self.placement(path) {
            None => inner,
            Some(placement) => Arc::new(UnitRandomAccessFile {
                inner,
                placement,
                device: Arc::clone(&self.device),
            }),
        }
    }

    fn wrap_writer(&self, inner: Box<dyn WritableFile>, path: &Path) -> Box<dyn WritableFile> {
        match self.placement(path) {
            None => inner,
            Some(placement) => {
                let start = inner.size();
                Box::new(UnitWritableFile {
                    inner,
                    placement,
                    device: Arc::clone(&self.device),
                    submitted: start,
                    pending: 0,
                    last_done: 0,
                })
            }
        }
    }
}

impl FileSystem for UnitFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.create(path)?;
        Ok(self.wrap_writer(f, path))
    }

    fn create_with_hint(
        &self,
        path: &Path,
        lifetime: crate::WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.create_with_hint(path, lifetime)?;
        Ok(self.wrap_writer(f, path))
    }

    fn create_direct(
        &self,
        path: &Path,
        lifetime: crate::WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.create_direct(path, lifetime)?;
        Ok(self.wrap_writer(f, path))
    }

    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.create_log(path)?;
        Ok(self.wrap_writer(f, path))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.open_append(path)?;
        Ok(self.wrap_writer(f, path))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let inner = self.inner.open_read(path)?;
        Ok(self.wrap_reader(inner, path))
    }

    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let inner = self.inner.open_read_direct(path)?;
        Ok(self.wrap_reader(inner, path))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.hard_link(from, to)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

/// A writer whose appended bytes are programmed on the model, page by page. A partial page is
/// programmed by `flush` or `sync` (the next bytes start a new page); bytes still pending when
/// the writer is dropped are never programmed.
#[derive(Debug)]
pub struct UnitWritableFile {
    inner: Box<dyn WritableFile>,
    placement: Placement,
    device: Arc<Device>,
    /// File offset of the first byte not yet submitted to the model.
    submitted: u64,
    /// Bytes appended but not yet submitted (less than a page after each call).
    pending: u64,
    /// Completion time of the last program submitted for this file.
    last_done: u64,
}

impl UnitWritableFile {
    /// Submits `len` pending bytes as programs, then waits while a unit is over its backlog
    /// bound.
    fn program(&mut self, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let pieces = self
            .placement
            .pieces(self.device.units, self.submitted, len);
        let (done, throttle) = self.device.submit(&pieces, IoKind::Write)?;
        self.submitted = self.submitted.saturating_add(len);
        self.pending -= len;
        self.last_done = self.last_done.max(done);
        self.device.clock.wait_until(throttle);
        Ok(())
    }
}

impl WritableFile for UnitWritableFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.inner.append(data)?;
        self.pending = self.pending.saturating_add(data.len() as u64);
        let page = self.device.page_bytes.max(1);
        let full = self.pending / page * page;
        self.program(full)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()?;
        self.program(self.pending)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()?;
        self.program(self.pending)?;
        self.device.clock.wait_until(self.last_done);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn close(&mut self) -> io::Result<()> {
        self.inner.close()?;
        self.program(self.pending)
    }
    fn set_early_writeback(&mut self, on: bool) {
        self.inner.set_early_writeback(on);
    }
}

/// A reader whose reads wait for their completion on the model.
#[derive(Debug)]
pub struct UnitRandomAccessFile {
    inner: Arc<dyn RandomAccessFile>,
    placement: Placement,
    device: Arc<Device>,
}

impl RandomAccessFile for UnitRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact_at(offset, buf)?;
        if buf.is_empty() {
            return Ok(());
        }
        let pieces = self
            .placement
            .pieces(self.device.units, offset, buf.len() as u64);
        let (done, _) = self.device.submit(&pieces, IoKind::Read)?;
        self.device.clock.wait_until(done);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

/// The parameter profile of a [`DeviceSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// [`UnitParams::flash`].
    Flash,
}

impl Profile {
    /// The profile's unit parameters.
    #[must_use]
    pub fn params(self) -> UnitParams {
        match self {
            Self::Flash => UnitParams::flash(),
        }
    }
}

/// The layout kind of a [`DeviceSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecLayout {
    /// Directory `i` is dedicated to unit `i % units`.
    Dedicated,
    /// Every directory is striped over all units.
    Striped,
}

/// A device configuration parsed from `units=4,layout=dedicated,stripe=64k,scale=2,
/// profile=flash,buffer=4m,wide=0` (every key optional, in any order; the defaults are those
/// values with `scale=1`). Sizes take an optional binary suffix `k`, `m` or `g`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceSpec {
    /// Number of units.
    pub units: usize,
    /// How directories map onto units.
    pub layout: SpecLayout,
    /// Stripe size for [`SpecLayout::Striped`].
    pub stripe_bytes: u64,
    /// Multiplies every service time.
    pub scale: f64,
    /// Unit parameters before scaling.
    pub profile: Profile,
    /// Per-unit write buffer ([`DeviceConfig::write_buffer_bytes`]).
    pub write_buffer_bytes: u64,
    /// With [`SpecLayout::Dedicated`]: the first directory is striped over the first `wide`
    /// units (a wide unit for small, hot tables) and directory `i >= 1` is dedicated to unit
    /// `wide + (i - 1) % (units - wide)`. 0 (the default): no wide directory.
    pub wide: usize,
}

impl Default for DeviceSpec {
    fn default() -> Self {
        Self {
            units: 4,
            layout: SpecLayout::Dedicated,
            stripe_bytes: 64 * KIB,
            scale: 1.0,
            profile: Profile::Flash,
            write_buffer_bytes: 4 * MIB,
            wide: 0,
        }
    }
}

fn parse_size(key: &str, v: &str) -> Result<u64, UnitsError> {
    let lower = v.to_ascii_lowercase();
    let (digits, mult) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], KIB),
        Some(b'm') => (&lower[..lower.len() - 1], MIB),
        Some(b'g') => (&lower[..lower.len() - 1], GIB),
        _ => (lower.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| {
            UnitsError::new(format!(
                "{key}: expected a size like 65536, 64k or 4m, got {v:?}"
            ))
        })
}

fn fmt_size(bytes: u64) -> String {
    for (suffix, unit) in [("g", GIB), ("m", MIB), ("k", KIB)] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

impl DeviceSpec {
    /// Parses a spec string. Fails on an empty or unknown key, a repeated key, a malformed
    /// value, 0 units, a 0 stripe, or a scale that is not finite and positive.
    pub fn parse(s: &str) -> Result<Self, UnitsError> {
        let mut spec = Self::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in s.split(',').map(str::trim) {
            if item.is_empty() {
                if s.trim().is_empty() {
                    continue;
                }
                return Err(UnitsError::new(format!("empty item in device spec {s:?}")));
            }
            let (key, value) = item.split_once('=').ok_or_else(|| {
                UnitsError::new(format!("expected key=value in device spec, got {item:?}"))
            })?;
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) {
                return Err(UnitsError::new(format!("{key} given twice in device spec")));
            }
            match key {
                "units" => {
                    spec.units = value
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0 && n <= MAX_UNITS)
                        .ok_or_else(|| {
                            UnitsError::new(format!(
                                "units: expected an integer in 1..={MAX_UNITS}, got {value:?}"
                            ))
                        })?;
                }
                "layout" => {
                    spec.layout = match value {
                        "dedicated" => SpecLayout::Dedicated,
                        "striped" => SpecLayout::Striped,
                        _ => {
                            return Err(UnitsError::new(format!(
                                "layout: expected dedicated or striped, got {value:?}"
                            )));
                        }
                    };
                }
                "stripe" => {
                    spec.stripe_bytes = parse_size(key, value)?;
                    if spec.stripe_bytes == 0 {
                        return Err(UnitsError::new("stripe: must be positive"));
                    }
                }
                "scale" => {
                    let f = value.parse::<f64>().map_err(|_| {
                        UnitsError::new(format!("scale: expected a number, got {value:?}"))
                    })?;
                    if !f.is_finite() || f <= 0.0 {
                        return Err(UnitsError::new(format!(
                            "scale: must be finite and positive, got {value:?}"
                        )));
                    }
                    spec.scale = f;
                }
                "profile" => {
                    spec.profile = match value {
                        "flash" => Profile::Flash,
                        _ => {
                            return Err(UnitsError::new(format!(
                                "profile: expected flash, got {value:?}"
                            )));
                        }
                    };
                }
                "buffer" => spec.write_buffer_bytes = parse_size(key, value)?,
                "wide" => {
                    spec.wide = value.parse::<usize>().map_err(|_| {
                        UnitsError::new(format!("wide: expected an integer, got {value:?}"))
                    })?;
                }
                _ => {
                    return Err(UnitsError::new(format!(
                        "unknown device spec key {key:?} (expected units, layout, stripe, \
                         scale, profile, buffer or wide)"
                    )));
                }
            }
            seen.push(key);
        }
        if spec.wide > 0 && (spec.layout != SpecLayout::Dedicated || spec.wide >= spec.units) {
            return Err(UnitsError::new(format!(
                "wide={} needs layout=dedicated and fewer than units={} units",
                spec.wide, spec.units
            )));
        }
        Ok(spec)
    }

    /// The device configuration this spec describes.
    pub fn config(&self) -> Result<DeviceConfig, UnitsError> {
        Ok(DeviceConfig {
            params: self.profile.params().scaled(self.scale)?,
            units: self.units,
            write_buffer_bytes: self.write_buffer_bytes,
        })
    }

    /// The mapping of `dirs`: directory `i` on unit `i % units` (dedicated) or every directory
    /// striped over all units.
    #[must_use]
    pub fn mappings(&self, dirs: &[PathBuf]) -> Vec<(PathBuf, Layout)> {
        dirs.iter()
            .enumerate()
            .map(|(i, d)| {
                let layout = match self.layout {
                    SpecLayout::Dedicated if self.wide > 0 => {
                        if i == 0 {
                            Layout::StripedOver {
                                first: 0,
                                count: self.wide,
                                stripe_bytes: self.stripe_bytes,
                            }
                        } else {
                            let narrow = self.units.saturating_sub(self.wide).max(1);
                            Layout::Dedicated(self.wide + (i - 1) % narrow)
                        }
                    }
                    SpecLayout::Dedicated => Layout::Dedicated(i % self.units.max(1)),
                    SpecLayout::Striped => Layout::Striped {
                        stripe_bytes: self.stripe_bytes,
                    },
                };
                (d.clone(), layout)
            })
            .collect()
    }

    /// A [`UnitFs`] over `inner` with `dirs` mapped as this spec says.
    pub fn build(
        &self,
        inner: Arc<dyn FileSystem>,
        dirs: &[PathBuf],
        clock: Clock,
    ) -> io::Result<UnitFs> {
        UnitFs::new(inner, self.config()?, self.mappings(dirs), clock)
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layout = match self.layout {
            SpecLayout::Dedicated => "dedicated",
            SpecLayout::Striped => "striped",
        };
        let profile = match self.profile {
            Profile::Flash => "flash",
        };
        write!(
            f,
            "units={},layout={layout},stripe={},scale={},profile={profile},buffer={}",
            self.units,
            fmt_size(self.stripe_bytes),
            self.scale,
            fmt_size(self.write_buffer_bytes)
        )?;
        if self.wide > 0 {
            write!(f, ",wide={}", self.wide)?;
        }
        Ok(())
    }
}

/// Which units reads and writes of [`simulate_mix`] use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrangement {
    /// Every I/O is striped over all units (a conventional SSD).
    Shared,
    /// Reads are striped over the first `read_units` units, writes over the rest.
    Isolated {
        /// Units reserved for reads (1 ..= units - 1).
        read_units: usize,
    },
}

/// How [`simulate_mix`] turns the read share into reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MixMode {
    /// `round(jobs * read_pct / 100)` jobs only read and the others only write: independent
    /// foreground reads and background (compaction) writes, as in an LSM-tree.
    SplitJobs,
    /// Every job draws the kind of each I/O: a read with probability `read_pct` % (fio's
    /// `rwmixread`). A job waiting for a write issues no read meanwhile.
    PerIo,
}

/// A fio-like read/write mix on a virtual-time [`DeviceModel`].
///
/// `jobs` jobs run closed loops, each keeping `queue_depth` I/Os outstanding and issuing the
/// next as soon as one completes; `mode` says which I/Os are reads. Reads are uniformly random,
/// aligned `read_bytes` reads over a 64 GiB span; writes are sequential `write_bytes` writes,
/// each job in its own file, as a compaction writes. Writes complete when programmed (no write
/// buffer). Units serve their queues in FIFO order (no read priority, no program suspend).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixConfig {
    /// Service times of each unit.
    pub params: UnitParams,
    /// Number of units.
    pub units: usize,
    /// Share of the jobs that read, 0..=100.
    pub read_pct: u32,
    /// Size of each read.
    pub read_bytes: u64,
    /// Size of each write.
    pub write_bytes: u64,
    /// Stripe size over the units of a group.
    pub stripe_bytes: u64,
    /// Number of jobs.
    pub jobs: usize,
    /// Outstanding I/Os per job.
    pub queue_depth: usize,
    /// Virtual run time; I/Os completing later are not counted.
    pub duration_ns: u64,
    /// Seed of the readers' offsets.
    pub seed: u64,
    /// Which units reads and writes use.
    pub arrangement: Arrangement,
    /// Which I/Os are reads.
    pub mode: MixMode,
}

impl MixConfig {
    /// 4 flash units, 4 KiB random reads, 128 KiB sequential writes, 16 KiB stripes, 16 jobs
    /// at queue depth 1, split jobs, one virtual second, the given read share and arrangement.
    #[must_use]
    pub fn flash(read_pct: u32, arrangement: Arrangement) -> Self {
        Self {
            params: UnitParams::flash(),
            units: 4,
            read_pct,
            read_bytes: 4 * KIB,
            write_bytes: 128 * KIB,
            stripe_bytes: 16 * KIB,
            jobs: 16,
            queue_depth: 1,
            duration_ns: 1_000_000_000,
            seed: 1,
            arrangement,
            mode: MixMode::SplitJobs,
        }
    }
}

/// Throughput and read latency of a [`simulate_mix`] run (I/Os completed within the duration).
#[derive(Debug, Clone, PartialEq)]
pub struct MixResult {
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Read throughput in MB/s (10^6 bytes).
    pub read_mb_s: f64,
    /// Write throughput in MB/s (10^6 bytes).
    pub write_mb_s: f64,
    /// Reads per second.
    pub read_iops: f64,
    /// Writes per second.
    pub write_iops: f64,
    /// Median read latency (0 without reads).
    pub read_p50_ns: u64,
    /// 99th-percentile read latency (0 without reads).
    pub read_p99_ns: u64,
    /// Per-unit statistics at the end of the run.
    pub unit_stats: Vec<UnitStats>,
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.clamp(1, sorted.len()) - 1)
        .copied()
        .unwrap_or(0)
}

/// Runs the mix in virtual time. Deterministic: the same config gives the same result.
/// Fails on 0 units, jobs, queue depth, sizes, stripe or duration, a read share above 100, or
/// an isolated arrangement that leaves no unit to reads or to writes.
pub fn simulate_mix(cfg: &MixConfig) -> Result<MixResult, UnitsError> {
    if cfg.read_pct > 100 {
        return Err(UnitsError::new("read_pct must be 0..=100"));
    }
    let slots = cfg
        .jobs
        .checked_mul(cfg.queue_depth)
        .filter(|&n| n > 0 && n <= MAX_SLOTS)
        .ok_or_else(|| {
            UnitsError::new(format!(
                "jobs * queue_depth must be in 1..={MAX_SLOTS}, got {} * {}",
                cfg.jobs, cfg.queue_depth
            ))
        })?;
    if cfg.read_bytes == 0 || cfg.write_bytes == 0 || cfg.stripe_bytes == 0 {
        return Err(UnitsError::new("I/O sizes and stripe must be positive"));
    }
    if cfg.duration_ns == 0 {
        return Err(UnitsError::new("duration must be positive"));
    }
    let mut model = DeviceModel::new(cfg.params, cfg.units)?;
    let (read_group, write_group): (Range<usize>, Range<usize>) = match cfg.arrangement {
        Arrangement::Shared => (0..cfg.units, 0..cfg.units),
        Arrangement::Isolated { read_units } => {
            if read_units == 0 || read_units >= cfg.units {
                return Err(UnitsError::new(format!(
                    "isolated: read_units must be 1..={}, got {read_units}",
                    cfg.units.saturating_sub(1)
                )));
            }
            (0..read_units, read_units..cfg.units)
        }
    };
    let jobs = cfg.jobs as u64;
    let read_jobs = usize::try_from((jobs * u64::from(cfg.read_pct) + 50) / 100)
        .unwrap_or(cfg.jobs)
        .min(cfg.jobs);
    let span_blocks = (64 * GIB / cfg.read_bytes).max(1);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    // Next write offset of each writer job; writer j writes its own file at j * 1 TiB.
    let mut write_pos: Vec<u64> = (0..cfg.jobs as u64).map(|j| j << 40).collect();
    // (time the slot issues its next I/O, slot); slot / queue_depth is its job.
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
        (0..slots).map(|slot| Reverse((0, slot))).collect();
    let mut latencies: Vec<u64> = Vec::new();
    let (mut reads, mut writes) = (0u64, 0u64);
    while let Some(Reverse((t, slot))) = heap.pop() {
        if t >= cfg.duration_ns {
            break;
        }
        let job = slot / cfg.queue_depth;
        let is_read = match cfg.mode {
            MixMode::SplitJobs => job < read_jobs,
            MixMode::PerIo => rng.random_range(0..100u32) < cfg.read_pct,
        };
        let (group, offset, len, kind) = if is_read {
            let block = rng.random_range(0..span_blocks);
            (
                &read_group,
                block * cfg.read_bytes,
                cfg.read_bytes,
                IoKind::Read,
            )
        } else {
            let pos = write_pos
                .get_mut(job)
                .ok_or_else(|| UnitsError::new("job out of range"))?;
            let offset = *pos;
            *pos = pos.saturating_add(cfg.write_bytes);
            (&write_group, offset, cfg.write_bytes, IoKind::Write)
        };
        let mut done = t;
        for (idx, bytes) in stripe_pieces(offset, len, cfg.stripe_bytes, 0, group.len()) {
            done = done.max(model.submit(t, group.start + idx, kind, bytes)?);
        }
        if done <= cfg.duration_ns {
            if is_read {
                reads += 1;
                latencies.push(done - t);
            } else {
                writes += 1;
            }
        }
        // Zero service times must not stall virtual time.
        heap.push(Reverse((done.max(t + 1), slot)));
    }
    latencies.sort_unstable();
    let secs = cfg.duration_ns as f64 / 1e9;
    Ok(MixResult {
        reads,
        writes,
        read_mb_s: reads as f64 * cfg.read_bytes as f64 / 1e6 / secs,
        write_mb_s: writes as f64 * cfg.write_bytes as f64 / 1e6 / secs,
        read_iops: reads as f64 / secs,
        write_iops: writes as f64 / secs,
        read_p50_ns: percentile(&latencies, 50.0),
        read_p99_ns: percentile(&latencies, 99.0),
        unit_stats: model.stats(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemFs;

    /// Round numbers: read = 10 µs + 1 µs/KiB, program = 100 µs per 4 KiB page + 1 µs/KiB,
    /// penalty 5 µs within 50 µs.
    fn simple() -> UnitParams {
        UnitParams {
            read_base_ns: 10_000,
            read_ns_per_kib: 1_000,
            write_base_ns: 100_000,
            write_ns_per_kib: 1_000,
            page_bytes: 4 * KIB,
            read_after_write_penalty_ns: 5_000,
            penalty_window_ns: 50_000,
        }
    }

    #[test]
    fn service_times() {
        let p = simple();
        assert_eq!(p.read_ns(4 * KIB), 14_000);
        assert_eq!(p.read_ns(1), 10_001); // 1/1024 µs rounds up to 1 ns
        assert_eq!(p.write_ns(4 * KIB), 104_000);
        assert_eq!(p.write_ns(4 * KIB + 1), 204_001);
        assert_eq!(p.pages(0), 0);
        let f = UnitParams::flash();
        assert_eq!(f.read_ns(4 * KIB), 65_120);
        assert_eq!(f.write_ns(16 * KIB), 620_480);
        let s = f.scaled(2.5).expect("scale");
        assert_eq!(s.read_base_ns, 150_000);
        assert_eq!(s.write_base_ns, 1_500_000);
        assert_eq!(s.read_ns_per_kib, 3_200);
        assert_eq!(s.penalty_window_ns, 2_500_000);
        assert_eq!(s.page_bytes, 16 * KIB);
        assert!(f.scaled(0.0).is_err());
        assert!(f.scaled(f64::NAN).is_err());
        assert!(f.scaled(-1.0).is_err());
    }

    #[test]
    fn read_waits_behind_write_on_same_unit_only() {
        let mut m = DeviceModel::new(simple(), 2).expect("model");
        assert_eq!(m.submit(0, 0, IoKind::Write, 4 * KIB), Ok(104_000));
        // Same unit: waits for the program (104 µs), then pays read + penalty.
        assert_eq!(
            m.submit(1_000, 0, IoKind::Read, 4 * KIB),
            Ok(104_000 + 14_000 + 5_000)
        );
        // Other unit: served at once, no penalty.
        assert_eq!(m.submit(1_000, 1, IoKind::Read, 4 * KIB), Ok(15_000));
        let s = m.stats();
        assert_eq!(s[0].reads, 1);
        assert_eq!(s[0].writes, 1);
        assert_eq!(s[0].programs, 1);
        assert_eq!(s[0].bytes_written, 4 * KIB);
        assert_eq!(s[0].read_wait_ns, 103_000);
        assert_eq!(s[0].write_wait_ns, 0);
        assert_eq!(s[0].busy_ns, 104_000 + 19_000);
        assert_eq!(s[0].penalized_reads, 1);
        assert_eq!(s[1].read_wait_ns, 0);
        assert_eq!(s[1].penalized_reads, 0);
        assert_eq!(m.backlog_ns(100_000, 0), 23_000);
        assert_eq!(m.backlog_ns(200_000, 0), 0);
        // Out of range: an error, not a panic.
        assert!(m.submit(0, 2, IoKind::Read, 1).is_err());
        // Zero bytes: nothing happens.
        assert_eq!(m.submit(7, 1, IoKind::Write, 0), Ok(7));
        assert_eq!(m.stats()[1].writes, 0);
        m.reset_stats();
        assert_eq!(m.stats()[0], UnitStats::default());
        assert_eq!(m.busy_until(0), Some(123_000));
    }

    #[test]
    fn penalty_applies_inside_window_only() {
        let mut m = DeviceModel::new(simple(), 1).expect("model");
        let w = m.submit(0, 0, IoKind::Write, 4 * KIB).expect("write");
        assert_eq!(w, 104_000);
        // Last instant inside the window (write end + 50 µs - 1 ns).
        let t = w + 50_000 - 1;
        assert_eq!(m.submit(t, 0, IoKind::Read, 4 * KIB), Ok(t + 19_000));
        // At the window's end: no penalty.
        let t = w + 50_000 + 100_000;
        assert_eq!(m.submit(t, 0, IoKind::Read, 4 * KIB), Ok(t + 14_000));
        let mut m = DeviceModel::new(simple(), 1).expect("model");
        m.submit(0, 0, IoKind::Write, 4 * KIB).expect("write");
        assert_eq!(
            m.submit(w + 50_000, 0, IoKind::Read, 4 * KIB),
            Ok(w + 64_000)
        );
        assert_eq!(m.stats()[0].penalized_reads, 0);
        // A unit that never wrote never penalizes.
        let mut m = DeviceModel::new(simple(), 1).expect("model");
        assert_eq!(m.submit(0, 0, IoKind::Read, 4 * KIB), Ok(14_000));
        assert!(DeviceModel::new(simple(), 0).is_err());
    }

    #[test]
    fn stripes_split_and_wrap() {
        assert_eq!(stripe_pieces(0, 10, 4, 0, 3), vec![(0, 4), (1, 4), (2, 2)]);
        assert_eq!(stripe_pieces(6, 8, 4, 1, 3), vec![(2, 2), (0, 4), (1, 2)]);
        // Wraps to the same unit: merged.
        assert_eq!(stripe_pieces(0, 12, 4, 5, 1), vec![(0, 12)]);
        assert_eq!(stripe_pieces(3, 0, 4, 0, 2), vec![]);
    }

    fn mem_with_dirs(dirs: &[&str]) -> Arc<dyn FileSystem> {
        let mem = MemFs::new();
        for d in dirs {
            mem.create_dir_all(Path::new(d)).expect("mkdir");
        }
        Arc::new(mem)
    }

    fn cfg(units: usize, buffer: u64) -> DeviceConfig {
        DeviceConfig {
            params: simple(),
            units,
            write_buffer_bytes: buffer,
        }
    }

    /// Tables created and opened through the direct variants are charged to the model as
    /// the buffered ones are.
    #[test]
    fn direct_variants_are_charged_to_the_model() {
        let inner = mem_with_dirs(&["/db/a"]);
        let clock = Clock::new_virtual();
        let fs = UnitFs::new(
            inner,
            cfg(1, MIB),
            vec![(PathBuf::from("/db/a"), Layout::Dedicated(0))],
            clock,
        )
        .expect("fs");
        let p = Path::new("/db/a/1.sst");
        let mut w = fs
            .create_direct(p, crate::WriteLifetime::Short)
            .expect("create");
        w.append(&[7u8; 8192]).expect("append");
        w.sync().expect("sync");
        let r = fs.open_read_direct(p).expect("open");
        let mut buf = [0u8; 4096];
        r.read_exact_at(4096, &mut buf).expect("read");
        assert_eq!(buf, [7u8; 4096]);
        let s = fs.unit_stats()[0];
        assert_eq!(
            (s.bytes_written, s.reads, s.bytes_read),
            (8192, 1, 4096),
            "{s:?}"
        );
    }

    #[test]
    fn unit_fs_models_mapped_dirs_only() {
        let inner = mem_with_dirs(&["/db/a", "/db/b", "/db/other"]);
        let clock = Clock::new_virtual();
        let fs = UnitFs::new(
            inner,
            cfg(2, MIB),
            vec![
                (PathBuf::from("/db/a"), Layout::Dedicated(0)),
                (PathBuf::from("/db/b/"), Layout::Dedicated(1)),
            ],
            clock.clone(),
        )
        .expect("fs");

        // Unmapped: no time passes, nothing counted.
        let mut w = fs.create(Path::new("/db/other/x")).expect("create");
        w.append(&[1u8; 8192]).expect("append");
        w.sync().expect("sync");
        assert_eq!(
            fs.read_all(Path::new("/db/other/x")).expect("read").len(),
            8192
        );
        assert_eq!(clock.now_ns(), 0);
        assert_eq!(fs.unit_stats(), vec![UnitStats::default(); 2]);

        // Mapped: appends of full pages are programmed without blocking.
        let mut w = fs.create(Path::new("/db/a/1.sst")).expect("create");
        w.append(&[2u8; 6 * 1024]).expect("append"); // one page programmed, 2 KiB pending
        assert_eq!(clock.now_ns(), 0);
        assert_eq!(fs.unit_stats()[0].programs, 1);
        // A read on the other unit does not wait for it.
        let mut wb = fs.create(Path::new("/db/b/2.sst")).expect("create");
        wb.append(&[3u8; 1024]).expect("append");
        wb.sync().expect("sync"); // partial page: 100 µs + 1 µs
        assert_eq!(clock.now_ns(), 101_000);
        let rb = fs.open_read(Path::new("/db/b/2.sst")).expect("open");
        let mut buf = [0u8; 1024];
        rb.read_exact_at(0, &mut buf).expect("read");
        // Within the penalty window of b's write: 10 + 1 + 5 µs.
        assert_eq!(clock.now_ns(), 117_000);
        assert_eq!(buf, [3u8; 1024]);

        // A read on unit 0 queues behind the first page (done at 104 µs): it is past that.
        // sync programs the 2 KiB partial page (102 µs) starting at 117 µs and waits for it.
        w.sync().expect("sync");
        assert_eq!(clock.now_ns(), 117_000 + 102_000);
        let s = fs.unit_stats();
        assert_eq!(s[0].programs, 2);
        assert_eq!(s[0].bytes_written, 6 * 1024);
        assert_eq!(s[1].reads, 1);
        assert_eq!(s[1].penalized_reads, 1);

        // Appends queue programs; a read behind them waits for all of them.
        w.append(&[4u8; 8 * 1024]).expect("append"); // two pages: 2 × 104 µs
        let t0 = clock.now_ns();
        let r = fs.open_read(Path::new("/db/a/1.sst")).expect("open");
        r.read_exact_at(0, &mut buf).expect("read");
        assert_eq!(clock.now_ns(), t0 + 208_000 + 11_000 + 5_000);
        assert_eq!(fs.unit_stats()[0].read_wait_ns, 208_000);
        assert_eq!(buf, [2u8; 1024]);

        // Metadata passes through.
        fs.rename(Path::new("/db/a/1.sst"), Path::new("/db/a/3.sst"))
            .expect("rename");
        assert!(fs.exists(Path::new("/db/a/3.sst")));
        let mut names = fs.list_dir(Path::new("/db/a")).expect("list");
        names.sort();
        assert_eq!(names, vec!["3.sst".to_string()]);
        fs.reset_stats();
        assert_eq!(fs.unit_stats(), vec![UnitStats::default(); 2]);
    }

    #[test]
    fn writer_blocks_only_over_the_write_buffer() {
        let inner = mem_with_dirs(&["/d"]);
        let clock = Clock::new_virtual();
        // Buffer of 2 pages: bound = 2 × 104 µs = 208 µs of queued programs.
        let fs = UnitFs::new(
            inner,
            cfg(1, 8 * KIB),
            vec![(PathBuf::from("/d"), Layout::Dedicated(0))],
            clock.clone(),
        )
        .expect("fs");
        let mut w = fs.create(Path::new("/d/f")).expect("create");
        w.append(&[0u8; 8 * 1024]).expect("append");
        assert_eq!(clock.now_ns(), 0); // 208 µs queued: at the bound, no wait
        w.append(&[0u8; 4 * 1024]).expect("append");
        // 312 µs queued: waits until the backlog is back to 208 µs.
        assert_eq!(clock.now_ns(), 104_000);
        w.sync().expect("sync");
        assert_eq!(clock.now_ns(), 312_000);
        assert_eq!(w.size(), 12 * 1024);
        assert_eq!(
            fs.read_all(Path::new("/d/f")).expect("read").len(),
            12 * 1024
        );
    }

    #[test]
    fn striped_reads_split_and_complete_with_the_last_piece() {
        let inner = mem_with_dirs(&["/s"]);
        let clock = Clock::new_virtual();
        let fs = UnitFs::new(
            inner,
            cfg(4, MIB),
            vec![(
                PathBuf::from("/s"),
                Layout::Striped {
                    stripe_bytes: 4 * KIB,
                },
            )],
            clock.clone(),
        )
        .expect("fs");
        let mut w = fs.create(Path::new("/s/t")).expect("create");
        w.append(&[9u8; 32 * 1024]).expect("append"); // 8 pages over 4 units: 2 each
        let s = fs.unit_stats();
        assert_eq!(
            s.iter().map(|u| u.programs).collect::<Vec<_>>(),
            vec![2, 2, 2, 2]
        );
        w.sync().expect("sync");
        assert_eq!(clock.now_ns(), 208_000); // units program in parallel
        clock.advance(1_000_000); // past every penalty window
        let r = fs.open_read(Path::new("/s/t")).expect("open");
        let mut buf = vec![0u8; 6 * 1024];
        let t0 = clock.now_ns();
        r.read_exact_at(2 * 1024, &mut buf).expect("read"); // pieces of 2 KiB and 4 KiB
        assert_eq!(clock.now_ns(), t0 + 14_000); // the 4 KiB piece is the last
        let reads: u64 = fs.unit_stats().iter().map(|u| u.reads).sum();
        assert_eq!(reads, 2);
        assert_eq!(buf, vec![9u8; 6 * 1024]);
    }

    #[test]
    fn open_append_continues_the_stripe_and_threads_share_the_model() {
        let inner = mem_with_dirs(&["/s", "/d0", "/d1"]);
        let clock = Clock::new_virtual();
        let fs = UnitFs::new(
            inner,
            cfg(2, MIB),
            vec![
                (
                    PathBuf::from("/s"),
                    Layout::Striped {
                        stripe_bytes: 4 * KIB,
                    },
                ),
                (PathBuf::from("/d0"), Layout::Dedicated(0)),
                (PathBuf::from("/d1"), Layout::Dedicated(1)),
            ],
            clock.clone(),
        )
        .expect("fs");
        let mut w = fs.create(Path::new("/s/f")).expect("create");
        w.append(&[1u8; 4 * 1024]).expect("append");
        w.sync().expect("sync");
        drop(w);
        let first: Vec<u64> = fs.unit_stats().iter().map(|u| u.programs).collect();
        let mut w = fs.open_append(Path::new("/s/f")).expect("open_append");
        w.append(&[2u8; 4 * 1024]).expect("append");
        w.sync().expect("sync");
        // The second stripe lives on the other unit.
        let now: Vec<u64> = fs.unit_stats().iter().map(|u| u.programs).collect();
        assert_eq!(now.iter().sum::<u64>(), 2);
        assert_eq!(now, vec![1, 1]);
        assert_ne!(first, now);

        for d in ["/d0/x", "/d1/x"] {
            let mut w = fs.create(Path::new(d)).expect("create");
            w.append(&[3u8; 1024]).expect("append");
            w.sync().expect("sync");
        }
        fs.reset_stats();
        std::thread::scope(|s| {
            for d in ["/d0/x", "/d1/x", "/d0/x", "/d1/x"] {
                let fs = fs.clone();
                s.spawn(move || {
                    let r = fs.open_read(Path::new(d)).expect("open");
                    let mut buf = [0u8; 512];
                    for _ in 0..100 {
                        r.read_exact_at(0, &mut buf).expect("read");
                    }
                });
            }
        });
        let s = fs.unit_stats();
        assert_eq!((s[0].reads, s[1].reads), (200, 200));
        assert_eq!(s[0].bytes_read, 200 * 512);
    }

    #[test]
    fn bad_mappings_are_rejected() {
        let inner = mem_with_dirs(&["/d"]);
        let c = Clock::new_virtual();
        let bad = |m: Vec<(PathBuf, Layout)>, units| {
            UnitFs::new(Arc::clone(&inner), cfg(units, 0), m, c.clone())
                .map(|_| ())
                .map_err(|e| (e.kind(), e.to_string()))
        };
        assert_eq!(
            bad(vec![(PathBuf::from("/d"), Layout::Dedicated(2))], 2),
            Err((
                io::ErrorKind::InvalidInput,
                "/d: unit 2 out of range (0..2)".into()
            ))
        );
        assert!(
            bad(
                vec![(PathBuf::from("/d"), Layout::Striped { stripe_bytes: 0 })],
                2
            )
            .is_err()
        );
        assert!(bad(vec![], 0).is_err());
        let twice = vec![
            (PathBuf::from("/d"), Layout::Dedicated(0)),
            (PathBuf::from("/d"), Layout::Dedicated(1)),
        ];
        assert!(bad(twice, 2).is_err());
    }

    #[test]
    fn spec_parses_displays_and_builds() {
        let s = DeviceSpec::parse("units=4,layout=striped,stripe=64k,scale=2,profile=flash")
            .expect("spec");
        assert_eq!(s.units, 4);
        assert_eq!(s.layout, SpecLayout::Striped);
        assert_eq!(s.stripe_bytes, 65_536);
        assert_eq!(s.scale, 2.0);
        assert_eq!(
            s.to_string(),
            "units=4,layout=striped,stripe=64k,scale=2,profile=flash,buffer=4m"
        );
        assert_eq!(DeviceSpec::parse(&s.to_string()), Ok(s));
        assert_eq!(DeviceSpec::parse(""), Ok(DeviceSpec::default()));
        let odd =
            DeviceSpec::parse(" scale = 0.5 , stripe=1000, buffer=1G ,units=3").expect("spec");
        assert_eq!(
            odd.to_string(),
            "units=3,layout=dedicated,stripe=1000,scale=0.5,profile=flash,buffer=1g"
        );
        assert_eq!(odd.config().expect("config").params.write_base_ns, 300_000);

        for (bad, msg) in [
            ("units=0", "units: expected an integer in 1..=1024"),
            ("units=x", "units: expected an integer in 1..=1024"),
            ("units=1025", "units: expected an integer in 1..=1024"),
            ("layout=raid", "layout: expected dedicated or striped"),
            ("stripe=0", "stripe: must be positive"),
            ("stripe=12q", "stripe: expected a size"),
            ("stripe=99999999999g", "stripe: expected a size"),
            ("scale=-1", "scale: must be finite and positive"),
            ("scale=inf", "scale: must be finite and positive"),
            ("scale=fast", "scale: expected a number"),
            ("profile=optane", "profile: expected flash"),
            ("units=2,units=3", "units given twice"),
            ("units=2,,scale=1", "empty item"),
            ("units", "expected key=value"),
            ("speed=1", "unknown device spec key"),
        ] {
            let err = DeviceSpec::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(msg), "{bad}: {err}");
        }

        let dirs = [
            PathBuf::from("/x0"),
            PathBuf::from("/x1"),
            PathBuf::from("/x2"),
        ];
        let ded = DeviceSpec::parse("units=2").expect("spec");
        assert_eq!(
            ded.mappings(&dirs)
                .iter()
                .map(|(_, l)| *l)
                .collect::<Vec<_>>(),
            vec![
                Layout::Dedicated(0),
                Layout::Dedicated(1),
                Layout::Dedicated(0)
            ]
        );
        assert_eq!(
            s.mappings(&dirs)[2].1,
            Layout::Striped {
                stripe_bytes: 65_536
            }
        );
        let inner = mem_with_dirs(&["/x0", "/x1", "/x2"]);
        let fs = ded
            .build(inner, &dirs, Clock::new_virtual())
            .expect("build");
        assert_eq!(fs.unit_stats().len(), 2);
    }

    #[test]
    fn real_clock_waits_roughly_accurately() {
        let clock = Clock::real();
        let mut late: Vec<u64> = Vec::new();
        for i in 0..200u64 {
            let deadline = clock.now_ns() + 50_000 + (i % 10) * 100_000;
            clock.wait_until(deadline);
            let now = clock.now_ns();
            assert!(now >= deadline, "returned {} ns early", deadline - now);
            late.push(now - deadline);
        }
        late.sort_unstable();
        println!(
            "real clock overshoot: p50 {} ns, p90 {} ns, p99 {} ns, max {} ns",
            late[100], late[180], late[198], late[199]
        );
        // This only catches gross errors such as paying the whole timer slack on every wait
        // or sleeping far too long: those make every wait late, the fastest one included.
        // On a shared machine any share of waits may be descheduled (CI measured a median of
        // 3.3 ms beside a build), so the bound is on the fastest wait, not the median.
        assert!(late[0] < 1_000_000, "fastest overshoot {} ns", late[0]);
        let c = Clock::new_virtual();
        c.wait_until(5);
        c.wait_until(3);
        assert_eq!(c.now_ns(), 5);
        c.advance(10);
        assert_eq!(c.now_ns(), 15);
    }

    fn mix(read_pct: u32, arrangement: Arrangement) -> MixResult {
        let mut c = MixConfig::flash(read_pct, arrangement);
        c.duration_ns = 200_000_000;
        simulate_mix(&c).expect("mix")
    }

    #[test]
    fn mix_shared_reads_collapse_isolated_reads_hold() {
        let shared_ro = mix(100, Arrangement::Shared);
        let shared_50 = mix(50, Arrangement::Shared);
        let iso = Arrangement::Isolated { read_units: 2 };
        let iso_ro = mix(100, iso);
        let iso_50 = mix(50, iso);
        // 4 units at ≈ 65 µs per 4 KiB read: ≈ 61k IOPS read-only.
        assert!(shared_ro.read_iops > 55_000.0, "{shared_ro:?}");
        assert_eq!(shared_ro.writes, 0);
        // Shared: far below half of read-only.
        assert!(
            shared_50.read_iops < 0.25 * shared_ro.read_iops,
            "{} vs {}",
            shared_50.read_iops,
            shared_ro.read_iops
        );
        assert!(shared_50.read_p99_ns > 10 * shared_ro.read_p99_ns);
        // Isolated: the read units keep (nearly) their read-only throughput.
        assert!(
            iso_50.read_iops > 0.9 * iso_ro.read_iops,
            "{iso_50:?} vs {iso_ro:?}"
        );
        assert!(iso_ro.read_iops > 0.45 * shared_ro.read_iops);
        assert!(iso_50.write_mb_s > 0.0);
        // Isolated writes never touch the read units, and vice versa.
        assert_eq!(iso_50.unit_stats[0].writes + iso_50.unit_stats[1].writes, 0);
        assert_eq!(iso_50.unit_stats[2].reads + iso_50.unit_stats[3].reads, 0);
        // Write-only: no reads.
        assert_eq!(mix(0, Arrangement::Shared).reads, 0);
        // Per-I/O mixing (fio's rwmixread): a job blocked on a write issues no reads, so
        // isolation does not save the reads.
        let per_io = |read_pct| {
            let mut c = MixConfig::flash(read_pct, iso);
            c.duration_ns = 200_000_000;
            c.mode = MixMode::PerIo;
            simulate_mix(&c).expect("mix")
        };
        let (ro, half) = (per_io(100), per_io(50));
        assert!(half.read_iops < 0.25 * ro.read_iops, "{half:?} vs {ro:?}");
        assert!(half.writes > 0);
    }

    #[test]
    fn mix_is_deterministic_and_validates() {
        let a = mix(50, Arrangement::Shared);
        assert_eq!(a, mix(50, Arrangement::Shared));
        let mut c = MixConfig::flash(50, Arrangement::Shared);
        c.duration_ns = 50_000_000;
        let base = simulate_mix(&c).expect("mix");
        c.seed = 2;
        assert_ne!(simulate_mix(&c).expect("mix").unit_stats, base.unit_stats);
        for bad in [
            MixConfig { read_pct: 101, ..c },
            MixConfig { units: 0, ..c },
            MixConfig { jobs: 0, ..c },
            MixConfig {
                jobs: usize::MAX,
                queue_depth: 2,
                ..c
            },
            MixConfig { read_bytes: 0, ..c },
            MixConfig {
                arrangement: Arrangement::Isolated { read_units: 4 },
                ..c
            },
            MixConfig {
                arrangement: Arrangement::Isolated { read_units: 0 },
                ..c
            },
        ] {
            assert!(simulate_mix(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_wide_directory_stripes_over_its_group_and_the_rest_are_dedicated() {
        let spec = DeviceSpec::parse("units=6,layout=dedicated,wide=2,stripe=4k").expect("spec");
        assert_eq!(
            spec.to_string(),
            "units=6,layout=dedicated,stripe=4k,scale=1,profile=flash,buffer=4m,wide=2"
        );
        let dirs: Vec<PathBuf> = (0..5).map(|i| PathBuf::from(format!("/u{i}"))).collect();
        let m: Vec<Layout> = spec.mappings(&dirs).into_iter().map(|(_, l)| l).collect();
        assert_eq!(
            m,
            vec![
                Layout::StripedOver {
                    first: 0,
                    count: 2,
                    stripe_bytes: 4096
                },
                Layout::Dedicated(2),
                Layout::Dedicated(3),
                Layout::Dedicated(4),
                Layout::Dedicated(5),
            ]
        );
        let p = Placement {
            layout: m[0],
            name_hash: 0,
        };
        let pieces = p.pieces(6, 0, 3 * 4096);
        assert_eq!(pieces, vec![(0, 4096), (1, 4096), (0, 4096)]);
        assert!(DeviceSpec::parse("units=4,wide=4").is_err());
        assert!(DeviceSpec::parse("units=4,layout=striped,wide=1").is_err());
        let bad = UnitFs::new(
            Arc::new(crate::MemFs::new()),
            DeviceConfig::flash(2),
            vec![(
                PathBuf::from("/d"),
                Layout::StripedOver {
                    first: 1,
                    count: 2,
                    stripe_bytes: 4096,
                },
            )],
            Clock::new_virtual(),
        );
        assert!(bad.is_err());
    }
}
