//! The cost of the emulated NVM tier: named device profiles with their published figures,
//! the arithmetic that turns an access into added latency and device bytes, and the shared
//! bandwidth channels (token buckets) those bytes pass through.
//!
//! Owns: [`NvmProfile`] (the names: `dram`, `optane`, `optane-6`, `cxl`), [`CostModel`]
//! (one profile's figures and the charge of an access), [`Charge`], and [`Channel`] (one
//! direction's bandwidth, shared by every thread using a region). No `unsafe`, no clock of
//! its own: every function takes "now" as an argument, so the arithmetic is tested without
//! timing (`Region` supplies the clock and spins).
//!
//! The model (`docs/impl.md`, "Emulated NVM cost"):
//! - The emulation runs on real DRAM, so an access is charged the *difference* between
//!   the device's published latency and the DRAM latency published beside it in the same
//!   measurement (`read_random_ns - dram_read_ns`), not the device's whole latency.
//! - Latency is charged per *access* (one contiguous range the caller touched), not per
//!   line: the access's first internal unit pays the random-read latency; its further bytes
//!   stream (the device merges adjacent requests; the CPU's prefetchers overlap the lines
//!   of one copy) and cost bandwidth only. A caller that reads the rest of something whose
//!   start it already reported (the value after a node's key) reports a *continuation*:
//!   bandwidth only.
//! - Bandwidth: one channel per direction, shared by all threads, charging each access's
//!   bytes rounded up to the device's internal access size (Optane: 256 B, so a 64 B
//!   access costs the device 256 B). A channel is a token bucket with a burst window
//!   ([`BURST_NS`]): a thread whose accesses come slower than the channel drains them never
//!   waits; threads that together ask for more than the rate wait their turn, so over any
//!   window they get at most the rate (plus one burst).
//! - The CPU cache: a read access reported with its place whose first line is in the
//!   profile's cache model ([`crate::cpucache`], `CostModel::cache_bytes`) costs nothing.
//! - Writes: a store made durable is charged where it reaches the device: at `persist` (its
//!   range, rounded out to whole internal units) and at a non-temporal word store; on a
//!   region that is never persisted (`volatile`, heap) at the data structures' write hooks
//!   instead. Optane charges no latency for it (the write is complete once in the
//!   ADR-protected queue of the memory controller, as a DRAM write is), only bandwidth.
//!
//! Invariant: [`NvmProfile::Dram`]'s model charges nothing ([`CostModel::is_free`]).
//!
//! Thread-safety: [`Channel`] is `Sync` (one atomic, updated by compare-and-swap); the
//! other types are plain `Copy` data.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use mezz_format::{Error, Result};

/// Burst window of a bandwidth channel, in nanoseconds: how far ahead of the channel's
/// rate a thread may run before it waits. An access whose own transfer takes less than
/// this never waits on an idle channel (10 µs: 66 KB of reads or 23 KB of writes at the
/// `optane` rates), so a thread slower than the channel is not slowed further; the steady
/// rate of threads faster than the channel is the channel's rate whatever the window.
pub const BURST_NS: u64 = 10_000;

/// A named NVM device profile. See each variant for its figures and their source; the
/// model that uses them is [`CostModel`]. Parsed from its name (`FromStr`, case
/// insensitive); `Display` writes the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NvmProfile {
    /// No cost: the pool is as fast as the host's memory (the default).
    #[default]
    Dram,
    /// One Intel Optane DC persistent memory module (first generation, 100 series), from
    /// Izraelevitz et al., "Basic Performance Measurements of the Intel Optane DC
    /// Persistent Memory Module", 2019, arXiv:1903.05714:
    /// - random 64 B read latency 305 ns, against 81 ns for DRAM in the same test (so
    ///   224 ns are added per access); sequential reads about 2x faster (169 ns): the
    ///   module merges adjacent requests into one 256-byte internal access;
    /// - a store made persistent (`clwb` or `ntstore` + fence) costs about what DRAM's
    ///   does: it is complete once it reaches the ADR-protected write queue, so no latency
    ///   is added for writes, only bandwidth;
    /// - internal access size 256 B: an access smaller than 256 B costs the device 256 B
    ///   of bandwidth, reads and writes;
    /// - one module (not interleaved): about 6.6 GB/s of reads and 2.3 GB/s of writes;
    /// - a CPU cache of [`CACHE_SHARE_BYTES`] in front of it ([`crate::cpucache`]).
    ///
    /// One module's bandwidth, not the six interleaved modules' (`optane-6`): the paper's
    /// socket had 24 cores sharing 6 modules, so one module is the proportionate share of
    /// a 2-core machine such as this project's test host; and two cores cannot move 39.4
    /// GB/s even from their own DRAM, so the interleaved figure could not be checked here.
    Optane,
    /// Six interleaved Optane modules (the paper's whole socket, same source as
    /// [`NvmProfile::Optane`], same latencies and access size): about 39.4 GB/s of reads
    /// and 13.9 GB/s of writes. Meant for hosts with the cores to use it.
    Optane6,
    /// A CXL Type-3 memory expander (DRAM behind a CXL 1.1/2.0 link), byte-addressable with
    /// 64-byte lines (no larger internal access). Latency: local DRAM plus about 70-90 ns
    /// (Li et al., "Pond: CXL-Based Memory Pooling Systems for Cloud Platforms", ASPLOS
    /// 2023, arXiv:2203.00241, which compares it to a NUMA hop; Sun et al., "Demystifying
    /// CXL Memory with Genuine CXL-Ready Systems and Devices", MICRO 2023,
    /// arXiv:2303.15375, measure real devices in that range and above): the profile adds
    /// 80 ns to every access, reads and writes alike (a write made durable crosses the
    /// link too), nothing more for writes. Bandwidth: an approximation, not a measured
    /// figure from these papers: a x8 link at 32 GT/s carries about 32 GB/s per direction,
    /// of which the profile charges 26 GB/s (about 80 % after the link's flit and protocol
    /// overhead), each way.
    Cxl,
}

impl NvmProfile {
    /// Every profile, in declaration order.
    pub const ALL: [NvmProfile; 4] = [
        NvmProfile::Dram,
        NvmProfile::Optane,
        NvmProfile::Optane6,
        NvmProfile::Cxl,
    ];

    /// The name used by `Display`, `FromStr` and the `nvm_profile` option.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            NvmProfile::Dram => "dram",
            NvmProfile::Optane => "optane",
            NvmProfile::Optane6 => "optane-6",
            NvmProfile::Cxl => "cxl",
        }
    }

    /// The figures of this profile (see the variants for their sources).
    #[must_use]
    pub fn model(self) -> CostModel {
        match self {
            NvmProfile::Dram => CostModel::FREE,
            NvmProfile::Optane => CostModel {
                read_random_ns: 305,
                read_seq_ns: 169,
                dram_read_ns: 81,
                write_extra_ns: 0,
                access_bytes: 256,
                read_bytes_per_sec: 6_600_000_000,
                write_bytes_per_sec: 2_300_000_000,
                cache_bytes: CACHE_SHARE_BYTES,
            },
            NvmProfile::Optane6 => CostModel {
                read_bytes_per_sec: 39_400_000_000,
                write_bytes_per_sec: 13_900_000_000,
                cache_bytes: CACHE_SOCKET_BYTES,
                ..NvmProfile::Optane.model()
            },
            NvmProfile::Cxl => CostModel {
                read_random_ns: 81 + 80,
                read_seq_ns: 81 + 80,
                dram_read_ns: 81,
                write_extra_ns: 80,
                access_bytes: 64,
                read_bytes_per_sec: 26_000_000_000,
                write_bytes_per_sec: 26_000_000_000,
                cache_bytes: CACHE_SHARE_BYTES,
            },
        }
    }
}

impl fmt::Display for NvmProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NvmProfile {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        NvmProfile::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = NvmProfile::ALL.iter().map(|p| p.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown NVM profile {s:?} (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// The figures of a device and the charge of an access to it. All zero = free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct CostModel {
    /// Published latency of a random read of one line, in ns.
    pub read_random_ns: u32,
    /// Published latency of a read in a sequential pattern, in ns. Documentation: the
    /// model does not charge it separately (the merged, streamed part of an access costs
    /// bandwidth only; see `docs/impl.md`).
    pub read_seq_ns: u32,
    /// The DRAM read latency measured beside the device's (same paper, same test): what
    /// the host's own memory access is assumed to cost already.
    pub dram_read_ns: u32,
    /// Latency added to each write access, in ns.
    pub write_extra_ns: u32,
    /// Internal access size in bytes: every access costs the device a whole number of
    /// these (0 or 1 = no rounding).
    pub access_bytes: u32,
    /// Read bandwidth of the device, bytes per second (0 = unlimited).
    pub read_bytes_per_sec: u64,
    /// Write bandwidth of the device, bytes per second (0 = unlimited).
    pub write_bytes_per_sec: u64,
    /// Bytes of CPU cache in front of the device ([`crate::cpucache`]): a read access whose
    /// first line is there costs the device nothing (0 = no cache: every access charged).
    pub cache_bytes: u64,
}

/// The CPU cache share of the `optane` and `cxl` profiles, in bytes: two cores' slices of
/// the last-level cache of the paper's platform. Its second-generation Xeon Scalable
/// (Cascade Lake) processors have 1.375 MB of shared L3 per core (the 24-core socket of
/// Izraelevitz et al. has 33 MB), so a 2-core machine's share is 2.75 MB. The cores'
/// private L2 caches (1 MB each) are left to the DRAM side's working set (memtables,
/// block cache, stacks).
pub const CACHE_SHARE_BYTES: u64 = 2 * 1_375 * 1024 * 1024 / 1000;

/// The whole socket's last-level cache of the same platform (`optane-6`): 33 MB.
pub const CACHE_SOCKET_BYTES: u64 = 33 * 1024 * 1024;

/// What one report of accesses costs: latency to wait (at least) and bytes to pass
/// through the direction's channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Charge {
    /// Added latency, in ns.
    pub latency_ns: u64,
    /// Bytes the device moves (after rounding to its access size).
    pub device_bytes: u64,
    /// Accesses charged (continuations count none).
    pub accesses: u64,
}

impl CostModel {
    /// The model that charges nothing.
    pub const FREE: CostModel = CostModel {
        read_random_ns: 0,
        read_seq_ns: 0,
        dram_read_ns: 0,
        write_extra_ns: 0,
        access_bytes: 0,
        read_bytes_per_sec: 0,
        write_bytes_per_sec: 0,
        cache_bytes: 0,
    };

    /// Whether nothing is ever charged.
    #[must_use]
    pub fn is_free(&self) -> bool {
        self.read_extra_ns() == 0
            && self.write_extra_ns == 0
            && self.read_bytes_per_sec == 0
            && self.write_bytes_per_sec == 0
    }

    /// Latency added to a random read access: the device's minus DRAM's.
    #[must_use]
    pub fn read_extra_ns(&self) -> u64 {
        u64::from(self.read_random_ns.saturating_sub(self.dram_read_ns))
    }

    /// `len` rounded up to whole internal accesses (at least one for `len > 0`).
    #[must_use]
    pub fn round_up(&self, len: u64) -> u64 {
        let a = u64::from(self.access_bytes.max(1));
        if a.is_power_of_two() {
            // Every profile's size: no division on the charging path.
            return len.saturating_add(a - 1) & !(a - 1);
        }
        len.div_ceil(a).saturating_mul(a)
    }

    /// The bytes of the internal units that the range `[off, off + len)` touches (what a
    /// flush of that range writes back), 0 for an empty range.
    #[must_use]
    pub fn units_spanned(&self, off: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let a = u64::from(self.access_bytes.max(1));
        let end = off.saturating_add(len);
        if a.is_power_of_two() {
            return (end.saturating_add(a - 1) & !(a - 1)) - (off & !(a - 1));
        }
        let first = off / a;
        let last = (end - 1) / a;
        (last - first + 1).saturating_mul(a)
    }

    /// `accesses` separate reads of `bytes_each` contiguous bytes each: each pays the
    /// random latency once and its bytes rounded up to the access size. Empty accesses
    /// cost nothing.
    #[must_use]
    pub fn read(&self, accesses: u64, bytes_each: u64) -> Charge {
        if accesses == 0 || bytes_each == 0 {
            return Charge::default();
        }
        Charge {
            latency_ns: accesses.saturating_mul(self.read_extra_ns()),
            device_bytes: accesses.saturating_mul(self.round_up(bytes_each)),
            accesses,
        }
    }

    /// `len` more bytes of the access reported just before (read right after it): no
    /// latency; its bytes as they are (the access's start was rounded already).
    #[must_use]
    pub fn read_continued(&self, len: u64) -> Charge {
        Charge {
            latency_ns: 0,
            device_bytes: len,
            accesses: 0,
        }
    }

    /// `accesses` separate writes of `bytes_each` bytes (stores into a region that is never
    /// persisted): the write latency each, bytes rounded up to the access size. Empty
    /// accesses cost nothing.
    #[must_use]
    pub fn write(&self, accesses: u64, bytes_each: u64) -> Charge {
        if accesses == 0 || bytes_each == 0 {
            return Charge::default();
        }
        Charge {
            latency_ns: accesses.saturating_mul(u64::from(self.write_extra_ns)),
            device_bytes: accesses.saturating_mul(self.round_up(bytes_each)),
            accesses,
        }
    }

    /// A persist of `[off, off + len)`: one write access of every internal unit the range
    /// touches.
    #[must_use]
    pub fn persist(&self, off: u64, len: u64) -> Charge {
        if len == 0 {
            return Charge::default();
        }
        Charge {
            latency_ns: u64::from(self.write_extra_ns),
            device_bytes: self.units_spanned(off, len),
            accesses: 1,
        }
    }
}

/// One direction's bandwidth, shared by every thread of a region: a token bucket in the
/// form of a theoretical arrival time (the generic cell rate algorithm). Callers give times
/// in nanoseconds since an epoch of their choosing; the channel keeps picoseconds, so that
/// the cost of a small access (38.8 ns for 256 B at 6.6 GB/s) is not rounded.
#[derive(Debug)]
pub struct Channel {
    bytes_per_sec: u64,
    /// Picoseconds per byte, fixed point with 32 fraction bits (no division per request).
    ps_per_byte: u128,
    /// When the channel will have moved every byte granted so far, in picoseconds.
    tat_ps: AtomicU64,
}

impl Channel {
    /// A channel of `bytes_per_sec` (0 = unlimited: nothing ever waits).
    #[must_use]
    pub fn new(bytes_per_sec: u64) -> Channel {
        let ps_per_byte = if bytes_per_sec == 0 {
            0
        } else {
            (1_000_000_000_000u128 << 32) / u128::from(bytes_per_sec)
        };
        Channel {
            bytes_per_sec,
            ps_per_byte,
            tat_ps: AtomicU64::new(0),
        }
    }

    /// The channel's rate in bytes per second (0 = unlimited).
    #[must_use]
    pub fn rate(&self) -> u64 {
        self.bytes_per_sec
    }

    /// Picoseconds the channel takes to move `bytes`.
    #[must_use]
    pub fn cost_ps(&self, bytes: u64) -> u64 {
        u64::try_from((u128::from(bytes) * self.ps_per_byte) >> 32).unwrap_or(u64::MAX)
    }

    /// Nanoseconds (rounded down) the channel takes to move `bytes`.
    #[must_use]
    pub fn cost_ns(&self, bytes: u64) -> u64 {
        self.cost_ps(bytes) / 1000
    }

    /// Grants `bytes` at time `now` (ns) and returns the time (ns) at which the caller may
    /// go on (`<= now`: at once). See [`admit`].
    pub fn reserve(&self, now: u64, bytes: u64) -> u64 {
        let cost = self.cost_ps(bytes);
        if cost == 0 {
            return now;
        }
        let now_ps = now.saturating_mul(1000);
        let mut cur = self.tat_ps.load(Ordering::Relaxed);
        loop {
            let (tat, ready) = admit(cur, now_ps, cost, BURST_NS * 1000);
            match self
                .tat_ps
                .compare_exchange_weak(cur, tat, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return ready.div_ceil(1000),
                Err(actual) => cur = actual,
            }
        }
    }
}

/// One step of the bucket: a request costing `cost` ns of channel time arrives at `now`
/// when the channel is busy until `tat`. Returns the new `tat` (the channel busy until the
/// request's bytes are moved: it starts when the channel is free, or now if it is idle)
/// and the time the caller may go on: `burst` before the new `tat`. So a caller never
/// waits while the channel's backlog, its own request included, is within `burst`; the
/// bytes granted up to any time `t` never exceed the rate times `t - start + burst`.
#[must_use]
pub fn admit(tat: u64, now: u64, cost: u64, burst: u64) -> (u64, u64) {
    let new_tat = tat.max(now).saturating_add(cost);
    (new_tat, new_tat.saturating_sub(burst))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dram_costs_nothing() {
        let m = NvmProfile::Dram.model();
        assert!(m.is_free());
        assert_eq!(m, CostModel::FREE);
        for c in [m.read(10, 64), m.write(3, 4096), m.persist(100, 5000)] {
            assert_eq!(c.latency_ns, 0);
        }
        assert_eq!(
            Channel::new(m.read_bytes_per_sec).reserve(123, 1 << 30),
            123
        );
        for p in NvmProfile::ALL.into_iter().skip(1) {
            assert!(!p.model().is_free(), "{p}");
        }
    }

    #[test]
    fn optane_random_64b_read_costs_the_random_extra_and_256_bytes() {
        let m = NvmProfile::Optane.model();
        let c = m.read(1, 64);
        assert_eq!(c.latency_ns, 305 - 81);
        assert_eq!(c.device_bytes, 256);
        assert_eq!(c.accesses, 1);
        // 256 B of a 6.6 GB/s channel: 38 ns.
        assert_eq!(
            Channel::new(m.read_bytes_per_sec).cost_ns(c.device_bytes),
            38
        );
    }

    #[test]
    fn a_4k_read_pays_the_random_latency_once_then_streams() {
        let m = NvmProfile::Optane.model();
        let c = m.read(1, 4096);
        assert_eq!(c.latency_ns, 224, "one access, one latency");
        assert_eq!(c.device_bytes, 4096);
        // 4096 B at 6.6 GB/s: 620 ns of channel time.
        assert_eq!(Channel::new(m.read_bytes_per_sec).cost_ns(4096), 620);
        // A search that visits 10 nodes is 10 accesses.
        let s = m.read(10, 64);
        assert_eq!(s.latency_ns, 2240);
        assert_eq!(s.device_bytes, 2560);
        // The rest of the last node: bandwidth only, no rounding (its start was rounded).
        let more = m.read_continued(100);
        assert_eq!(
            (more.latency_ns, more.device_bytes, more.accesses),
            (0, 100, 0)
        );
        assert_eq!(m.read(0, 64), Charge::default());
    }

    #[test]
    fn accesses_round_up_to_the_internal_access_size() {
        let m = NvmProfile::Optane.model();
        assert_eq!(m.round_up(1), 256);
        assert_eq!(m.round_up(256), 256);
        assert_eq!(m.round_up(257), 512);
        assert_eq!(
            m.read(1, 1).device_bytes,
            256,
            "an access touches a whole unit"
        );
        assert_eq!(
            m.read(1, 0),
            Charge::default(),
            "an empty access touches nothing"
        );
        assert_eq!(m.write(4, 64).device_bytes, 1024);
        assert_eq!(m.write(4, 64).latency_ns, 0, "optane writes add no latency");
        // A persist covers the units its range touches, wherever it starts.
        assert_eq!(m.units_spanned(0, 64), 256);
        assert_eq!(m.units_spanned(200, 64), 512, "straddles two units");
        assert_eq!(m.units_spanned(256, 256), 256);
        assert_eq!(m.units_spanned(255, 2), 512);
        assert_eq!(m.units_spanned(0, 0), 0);
        assert_eq!(m.persist(8, 8).device_bytes, 256);
        assert_eq!(m.persist(8, 0), Charge::default());
        // Small random persisted writes: 4x the bytes the caller wrote.
        assert_eq!(m.persist(64 * 7, 64).device_bytes / 64, 4);
        // CXL: 64-byte lines, a latency on writes too.
        let x = NvmProfile::Cxl.model();
        assert_eq!(x.read(1, 64).device_bytes, 64);
        assert_eq!(x.read(1, 64).latency_ns, 80);
        assert_eq!(x.persist(32, 64).device_bytes, 128);
        assert_eq!(x.persist(32, 64).latency_ns, 80);
        assert_eq!(x.write(2, 8).latency_ns, 160);
    }

    #[test]
    fn profiles_parse_by_name_and_errors_list_the_names() {
        for p in NvmProfile::ALL {
            assert_eq!(p.name().parse::<NvmProfile>().unwrap(), p);
            assert_eq!(
                p.to_string().to_uppercase().parse::<NvmProfile>().unwrap(),
                p
            );
        }
        assert_eq!(
            " optane ".parse::<NvmProfile>().unwrap(),
            NvmProfile::Optane
        );
        let e = "pcm".parse::<NvmProfile>().unwrap_err().to_string();
        for want in ["\"pcm\"", "dram", "optane", "optane-6", "cxl"] {
            assert!(e.contains(want), "{e}");
        }
        assert!("".parse::<NvmProfile>().is_err());
        assert_eq!(NvmProfile::default(), NvmProfile::Dram);
    }

    #[test]
    fn a_thread_slower_than_the_channel_never_waits() {
        // 256 B at 2.3 GB/s = 111 ns of channel time, one request every 200 ns.
        let ch = Channel::new(2_300_000_000);
        assert_eq!(ch.cost_ns(256), 111);
        let mut now = 5_000;
        for _ in 0..10_000 {
            assert!(ch.reserve(now, 256) <= now);
            now += 200;
        }
        // A single access larger than the burst window waits for its excess even on an
        // idle channel: 64 KiB at 2.3 GB/s takes 28.5 µs.
        let idle = now + 1_000_000;
        let ready = ch.reserve(idle, 64 << 10);
        assert_eq!(ch.cost_ns(64 << 10), 28_493);
        assert_eq!(ready - idle, (ch.cost_ps(64 << 10) / 1000 + 1) - BURST_NS);
    }

    /// Two simulated threads, each as fast as it is allowed to be, never get more than the
    /// rate over a window (plus one burst and one request).
    #[test]
    fn two_threads_never_exceed_the_rate() {
        for (rate, bytes) in [
            (6_600_000_000u64, 256u64),
            (2_300_000_000, 4096),
            (1 << 30, 65536),
        ] {
            let ch = Channel::new(rate);
            let cost_ps = ch.cost_ps(bytes);
            // Each thread's clock: when it issues its next request (its own work takes
            // 10 ns between requests, far less than the channel needs).
            let mut clocks = [1_000u64, 1_003];
            let mut granted: Vec<(u64, u64)> = Vec::new(); // (ready time, bytes)
            for i in 0..20_000 {
                let t = i % 2;
                let now = clocks[t];
                let ready = ch.reserve(now, bytes).max(now);
                granted.push((ready, bytes));
                clocks[t] = ready + 10;
            }
            granted.sort_unstable();
            let start = 1_000;
            // Over every prefix window [start, t]: bytes released <= rate * (t - start +
            // burst) + one request.
            let mut sum = 0u64;
            for &(t, b) in &granted {
                sum += b;
                let allowed = u128::from(rate) * u128::from(t - start + BURST_NS) / 1_000_000_000
                    + u128::from(b);
                assert!(u128::from(sum) <= allowed, "{sum} > {allowed} at {t}");
            }
            // And the channel is kept busy: the total time is what the bytes need.
            let end = granted.last().unwrap().0;
            let need = cost_ps * granted.len() as u64 / 1000;
            assert!(
                end + 1 - start + BURST_NS >= need,
                "ran faster than the channel"
            );
            assert!(end - start <= need, "left the channel idle");
        }
    }

    #[test]
    fn admit_is_the_bucket_step() {
        // Idle channel: starts now, goes on at once (cost within the burst).
        assert_eq!(admit(0, 1_000, 100, 500), (1_100, 600));
        // Backlog beyond the burst: waits until the backlog is down to the burst.
        assert_eq!(admit(5_000, 1_000, 100, 500), (5_100, 4_600));
        // Unlimited channels never wait.
        assert_eq!(Channel::new(0).reserve(42, u64::MAX), 42);
    }
}
