//! A mapped region of (possibly emulated) persistent memory, and the persistence modes.
//!
//! Owns: [`Region`], the one implementation of [`Media`] backed by NVM: a file mapped
//! `MAP_SHARED` (optionally `MAP_SYNC` on a DAX file system), a heap buffer
//! ([`Region::anonymous`]), or a simulated file of a [`SimNvm`] registry (mode
//! [`PersistMode::CrashSim`]). Also the options ([`RegionOptions`], [`PersistMode`],
//! [`Emulation`]) and the persist/fence primitives of every mode:
//!
//! | mode | `persist(range)` | `fence()` | durable after a power cut |
//! |---|---|---|---|
//! | `Adr` | `clwb` (else `clflushopt`, else `clflush`) of each 64-byte line | `sfence` | yes, on a DAX mapping |
//! | `Eadr` | nothing (caches are in the persistence domain) | `sfence` | yes, on eADR hardware |
//! | `Msync` | records the page-aligned range | `msync(MS_SYNC)` of the recorded ranges | yes, on any file system with a medium |
//! | `Volatile` | nothing | nothing | no |
//! | `CrashSim` | snapshots the 64-byte lines into a pending list | moves pending lines to the durable image | what [`SimNvm::power_cut`] keeps |
//!
//! On targets other than x86-64, `Adr` and `Eadr` fall back to `Msync` for file mappings.
//!
//! `Msync` on a memory file system (tmpfs, ramfs: an NVM tier emulated on `/dev/shm`) runs
//! `Adr`'s cache-line flushes and `sfence` instead ([`Region::msync_by_flush`]). There
//! `msync` is a system call that does nothing (the file system has no medium to write to:
//! a process crash keeps every store either way, a power cut loses the file either way), so
//! skipping it changes no guarantee, and the flushes charge what persisting costs on real
//! persistent memory instead of a system call per fence.
//!
//! Invariants: `base()` is page aligned (4 KiB or more), valid for `len()` bytes, initialised
//! and fixed for the region's life; the mapping is removed on drop only. A file-backed
//! region never grows. `persist` ignores the parts of a range beyond the region.
//!
//! Pre-faulting (`RegionOptions::prefault`): a new file is populated before
//! [`Region::create`] returns; an existing file ([`Region::open`]) is populated by a
//! background thread (`madvise(MADV_POPULATE_WRITE)`, 256 KiB at a time; the region's drop
//! stops it and waits for its current step), so reopening a large pool does not wait for
//! its page tables.
//!
//! Emulated cost ([`Emulation`], model and profiles in [`crate::cost`]): a region mapped
//! with a profile other than `dram` charges every access the data structures report
//! through the [`Media`] read hooks (latency per access, bytes on a shared read channel),
//! and every durable write where it reaches the device: `persist` (the range rounded out
//! to the profile's access size) and the non-temporal word store; a region that is never
//! persisted (`volatile`, heap) charges the write hooks instead. Charges are spin-waits of
//! the calling thread, counted in [`RegionStats`]. The older per-line knobs add to it.
//!
//! Thread-safety: `Region` is `Send + Sync`; `persist`, `fence`, and the latency hooks may be
//! called from any thread. `fence` completes every `persist` that returned before it started,
//! whichever thread made it. Access to the bytes through `base()` follows the protocol of
//! the data structure using them (see [`Media`]).

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fmt;
use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mezz_format::{Error, Result};
use parking_lot::Mutex;

use crate::Media;
use crate::cost::{Channel, Charge, CostModel, NvmProfile};
use crate::sim::{SimFile, SimNvm};

/// Size of a cache line: the unit of flushing and of the crash simulation.
pub const LINE: usize = 64;

/// Alignment of heap-backed regions and of simulated files.
pub(crate) const HEAP_ALIGN: usize = 4096;

/// Page size used for pre-faulting.
const TOUCH_STEP: usize = 4096;

/// How writes to a region are made durable. See the module documentation for the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PersistMode {
    /// Flush cache lines (`clwb`/`clflushopt`/`clflush`) then `sfence`; needs a DAX mapping
    /// (`MAP_SYNC`) unless [`RegionOptions::emulate_adr`] is set.
    Adr,
    /// Extended ADR: the caches are persistent, so persist is free and fence is `sfence`.
    Eadr,
    /// `msync(MS_SYNC)` of the dirty pages at each fence: correct on any file system.
    #[default]
    Msync,
    /// Nothing is durable: the region is a cache (DRAM, CXL memory).
    Volatile,
    /// Tests: a [`SimNvm`] keeps a durable image updated only by persist + fence.
    CrashSim,
}

impl PersistMode {
    /// Every mode, in declaration order.
    pub const ALL: [PersistMode; 5] = [
        PersistMode::Adr,
        PersistMode::Eadr,
        PersistMode::Msync,
        PersistMode::Volatile,
        PersistMode::CrashSim,
    ];

    /// The lower-case name used by `Display` and `FromStr`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PersistMode::Adr => "adr",
            PersistMode::Eadr => "eadr",
            PersistMode::Msync => "msync",
            PersistMode::Volatile => "volatile",
            PersistMode::CrashSim => "crashsim",
        }
    }
}

impl fmt::Display for PersistMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PersistMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        PersistMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown persistence mode {s:?} (expected adr, eadr, msync, volatile or crashsim)"
                ))
            })
    }
}

/// Latency and bandwidth emulation of slow persistent memory: a device profile (the cost
/// model of [`crate::cost`]) and, on top of it, the older per-line knobs. All off (the
/// default: profile `dram`, knobs zero) = the host's memory as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Emulation {
    /// The device profile: latency per access and shared read/write bandwidth, charged by
    /// the read hooks ([`Media::on_read`], [`Media::on_reads`],
    /// [`Media::on_read_continued`]), by `persist` and non-temporal word stores on a
    /// persistent region, and by the write hooks on a region that is never persisted.
    pub profile: NvmProfile,
    /// Extra nanoseconds per 64-byte line read, added to the profile's charge by the read
    /// hooks (every access's lines).
    pub read_ns_per_line: u32,
    /// Extra nanoseconds per 64-byte line written, added by the write hooks
    /// ([`Media::on_write`], [`Media::on_writes`]), on every kind of region.
    pub write_ns_per_line: u32,
    /// Cap on the bytes persisted per second (0 = no cap), enforced in `persist` (a channel
    /// of its own, apart from the profile's write bandwidth).
    pub persist_bytes_per_sec: u64,
}

impl Emulation {
    /// Whether every knob is off.
    #[must_use]
    pub fn is_off(&self) -> bool {
        *self == Emulation::default()
    }
}

/// How to map a region.
#[derive(Clone, Debug, Default)]
pub struct RegionOptions {
    /// Persistence mode.
    pub mode: PersistMode,
    /// With [`PersistMode::Adr`]: when the file system cannot map with `MAP_SYNC` (not DAX),
    /// map normally and still pay the flush instructions (for benchmarks on tmpfs). Without
    /// it, `Adr` on a non-DAX file fails. Nothing is durable in that case beyond what the
    /// kernel writes back on its own.
    pub emulate_adr: bool,
    /// Latency/bandwidth emulation.
    pub emulation: Emulation,
    /// Touch every page after mapping, so first-touch page faults are not paid later: before
    /// [`Region::create`] returns, and in the background after [`Region::open`] of a file.
    pub prefault: bool,
    /// The registry of simulated files; required by [`PersistMode::CrashSim`], ignored by the
    /// other modes.
    pub sim: Option<SimNvm>,
}

impl RegionOptions {
    /// Options with `mode` and everything else default.
    #[must_use]
    pub fn with_mode(mode: PersistMode) -> Self {
        RegionOptions {
            mode,
            ..RegionOptions::default()
        }
    }

    /// [`PersistMode::CrashSim`] options over `sim`.
    #[must_use]
    pub fn crash_sim(sim: &SimNvm) -> Self {
        RegionOptions {
            mode: PersistMode::CrashSim,
            sim: Some(sim.clone()),
            ..RegionOptions::default()
        }
    }
}

/// Counters of a region (for statistics and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RegionStats {
    /// `persist` calls with a non-empty in-range part (counted in every mode).
    pub persists: u64,
    /// `fence` calls.
    pub fences: u64,
    /// Bytes covered by those `persist` calls (before rounding to lines or pages).
    pub bytes_persisted: u64,
    /// Nanoseconds of emulated delay charged so far (latency and bandwidth emulation): the
    /// time the hooks and `persist` spun.
    pub emulated_delay_ns: u64,
    /// Read accesses charged by the profile (a continuation is not one).
    pub read_accesses: u64,
    /// Bytes the emulated device read for them (rounded to its access size).
    pub read_device_bytes: u64,
    /// Read accesses the profile's CPU cache model served (not charged, not counted in
    /// `read_accesses`).
    pub read_cache_hits: u64,
    /// Write accesses charged by the profile (persists, word stores, or the write hooks of
    /// a region that is never persisted).
    pub write_accesses: u64,
    /// Bytes the emulated device wrote for them (rounded out to its access size).
    pub write_device_bytes: u64,
}

/// Which flush instruction `Adr` uses on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushInstruction {
    /// `clwb`: write back, keep the line cached.
    Clwb,
    /// `clflushopt`: write back and evict, weakly ordered.
    Clflushopt,
    /// `clflush`: write back and evict, ordered.
    Clflush,
    /// Not x86-64: `Adr` falls back to `msync`.
    None,
}

impl FlushInstruction {
    /// The instruction this CPU supports best (detected once, then cached).
    #[must_use]
    pub fn detect() -> FlushInstruction {
        static DETECTED: std::sync::OnceLock<FlushInstruction> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(detect_flush)
    }
}

#[cfg(target_arch = "x86_64")]
fn detect_flush() -> FlushInstruction {
    // CPUID leaf 7 sub-leaf 0 exists on every x86-64 CPU with clflushopt/clwb; on older
    // CPUs the bits read as zero and clflush (baseline x86-64) remains.
    let leaf = std::arch::x86_64::__cpuid_count(7, 0);
    if leaf.ebx & (1 << 24) != 0 {
        FlushInstruction::Clwb
    } else if leaf.ebx & (1 << 23) != 0 {
        FlushInstruction::Clflushopt
    } else {
        FlushInstruction::Clflush
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_flush() -> FlushInstruction {
    FlushInstruction::None
}

/// A zeroed, `HEAP_ALIGN`-aligned heap allocation, freed on drop.
pub(crate) struct HeapBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: `HeapBuf` owns its allocation like a `Box<[u8]>`; the pointer is only an address.
// Concurrent byte access goes through raw pointers whose users follow the `Media` protocol.
unsafe impl Send for HeapBuf {}
// SAFETY: see `Send`; `&HeapBuf` only exposes the address and the length.
unsafe impl Sync for HeapBuf {}

impl HeapBuf {
    /// Allocates `len` (> 0) zero bytes.
    pub(crate) fn zeroed(len: usize) -> io::Result<HeapBuf> {
        let layout = Layout::from_size_align(len.max(1), HEAP_ALIGN)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("cannot allocate {len} bytes"),
            )
        })?;
        Ok(HeapBuf { ptr, layout })
    }

    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    /// Writes a zero into every page (the allocation is zero already) so that the
    /// operating system maps the pages now. Call before the buffer is shared.
    pub(crate) fn prefault(&self) {
        let mut off = 0;
        while off < self.len() {
            // SAFETY: `off < len`, so the byte is inside the allocation; the buffer is not
            // shared yet (callers run this at creation), so nothing else accesses it.
            unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(off), 0) };
            off += TOUCH_STEP;
        }
    }
}

impl Drop for HeapBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(self.layout)` and is freed only here.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

impl fmt::Debug for HeapBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapBuf").field("len", &self.len()).finish()
    }
}

/// Where a region's bytes live.
enum Backing {
    /// A file mapped with `mmap`, unmapped on drop.
    #[cfg(target_os = "linux")]
    Mapped {
        /// Whether `MAP_SYNC` was granted (a DAX mapping).
        map_sync: bool,
    },
    /// Heap memory ([`Region::anonymous`]), kept for its `Drop`.
    Heap { _buf: HeapBuf },
    /// A simulated file of a [`SimNvm`].
    Sim(Arc<SimFile>),
}

/// A bandwidth channel on a cache line of its own (its compare-and-swap is the one write
/// every charging thread makes to shared memory).
#[repr(align(64))]
#[derive(Debug)]
struct Padded(Channel);

/// The emulation's counters of one thread slot (see [`thread_slot`]), on a cache line of
/// its own.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Shard {
    emulated_ns: AtomicU64,
    read_accesses: AtomicU64,
    read_device_bytes: AtomicU64,
    read_cache_hits: AtomicU64,
    write_accesses: AtomicU64,
    write_device_bytes: AtomicU64,
}

/// Threads that can own a counter shard at a time; any further thread counts in one more
/// shard, shared.
const SLOTS: usize = 32;
/// Shards of the emulation's counters: one per slot, and the shared one last.
const SHARDS: usize = SLOTS + 1;

/// Slots given back by threads that ended.
static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Slots never given out yet start here.
static NEXT_SLOT: AtomicU64 = AtomicU64::new(0);

/// A thread's slot, given back when the thread ends.
struct SlotGuard(Option<usize>);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            FREE_SLOTS.lock().push(i);
        }
    }
}

thread_local! {
    static SLOT: SlotGuard = SlotGuard(take_slot());
}

fn take_slot() -> Option<usize> {
    if let Some(i) = FREE_SLOTS.lock().pop() {
        return Some(i);
    }
    let i = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    usize::try_from(i).ok().filter(|&i| i < SLOTS)
}

/// The calling thread's counter slot: `Some(i)` while it owns shard `i` of every region
/// (the only thread that writes it, so it adds with a plain load and store instead of a
/// locked instruction, which on x86 also waits for the thread's pending stores: 10 ns or
/// more per counter); `None` for a thread beyond [`SLOTS`], or one ending.
fn thread_slot() -> Option<usize> {
    SLOT.try_with(|s| s.0).ok().flatten()
}

/// Adds `v` to `counter` of a shard: a plain load and store when the calling thread owns
/// it (`exclusive`), an atomic add in the shared shard.
fn add(counter: &AtomicU64, v: u64, exclusive: bool) {
    if exclusive {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(v),
            Ordering::Relaxed,
        );
    } else {
        counter.fetch_add(v, Ordering::Relaxed);
    }
}

/// Everything a charge of the profile reads or writes, in one page of its own (aligned to
/// 4 KiB): under random accesses to a large region every page a charge touches misses the
/// TLB, and in a virtual machine each such miss costs tens of ns.
#[repr(C, align(4096))]
#[derive(Debug)]
struct Emu {
    /// The profile's figures (`emulation.profile.model()`).
    model: CostModel,
    /// Whether the profile charges anything (false for `dram`): the hooks return at once.
    costed: bool,
    /// The spin-waits' clock (a copy, next to the counters).
    clock: crate::spin::Clock,
    /// The profile's read and write bandwidth, shared by every thread using the region.
    reads: Padded,
    writes: Padded,
    /// The emulation's counters (summed by `stats`).
    shards: [Shard; SHARDS],
}

// The charge's state fits in its page.
const _: () = assert!(std::mem::size_of::<Emu>() == 4096);

/// A region of persistent memory: see the module documentation.
pub struct Region {
    base: NonNull<u8>,
    len: usize,
    mode: PersistMode,
    path: Option<PathBuf>,
    backing: Backing,
    flush: FlushInstruction,
    emulation: Emulation,
    /// The mode `persist` and `fence` run: `mode`, except `Adr` for `Msync` on a memory file
    /// system (see the module documentation).
    persist_as: PersistMode,
    /// `Msync`: page-aligned `[start, end)` ranges persisted since the last fence.
    dirty: Mutex<Vec<(usize, usize)>>,
    /// Held while a fence syncs, so a concurrent fence cannot return before ranges taken by
    /// another one are durable.
    sync_lock: Mutex<()>,
    /// Bandwidth emulation: the instant the persist "channel" becomes free.
    channel_free_at: Mutex<Option<Instant>>,
    /// What the profile's charges touch, in one page.
    emu: Emu,
    /// The CPU cache in front of the device (`cost.cache_bytes`), shared by the process's
    /// regions of the same profile; `None` when nothing is charged or the profile has none.
    cache: Option<Arc<crate::cpucache::CpuCache>>,
    persists: AtomicU64,
    fences: AtomicU64,
    bytes_persisted: AtomicU64,
    /// Ranges `[start, end)` claimed exclusively by a writer (see [`Claim`]).
    claims: Mutex<Vec<(usize, usize)>>,
    /// The thread pre-faulting a reopened file and its stop flag (stopped and joined on
    /// drop, before the mapping goes).
    populating: Mutex<
        Option<(
            Arc<std::sync::atomic::AtomicBool>,
            std::thread::JoinHandle<()>,
        )>,
    >,
}

// SAFETY: the region owns its mapping or buffer (or shares a simulated file that is itself
// `Send + Sync`); the base pointer is only an address. Every `&self` method uses atomics or
// mutexes; byte access through `base()` is governed by the `Media` protocol of its users.
unsafe impl Send for Region {}
// SAFETY: see `Send` above.
unsafe impl Sync for Region {}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("mode", &self.mode)
            .field("persist_as", &self.persist_as)
            .field("map_sync", &self.is_map_sync())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

fn io_err(path: &Path, source: io::Error) -> Error {
    Error::Io {
        path: Some(path.to_path_buf()),
        source,
    }
}

impl Region {
    /// Creates the file `path` of `len` bytes (it must not exist) and maps it. With
    /// [`PersistMode::CrashSim`] the file is created in `opts.sim` instead of the file system.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero length, `CrashSim` without `sim`, or `Adr` on a file
    /// system without DAX (unless `emulate_adr`); `Io` when the file exists or cannot be
    /// created or mapped. A file created by a failed call is removed.
    pub fn create(path: &Path, len: usize, opts: &RegionOptions) -> Result<Arc<Region>> {
        if len == 0 {
            return Err(invalid(format!(
                "cannot create an empty NVM region at {}",
                path.display()
            )));
        }
        if opts.mode == PersistMode::CrashSim {
            let sim = sim_of(opts)?;
            let file = sim.create_file(path, len, opts.prefault)?;
            return Ok(Arc::new(Region::from_sim(path, file, opts)));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| io_err(path, e))?;
        let made = file
            .set_len(len as u64)
            .map_err(|e| io_err(path, e))
            .and_then(|()| Region::map_file(path, &file, len, opts));
        if made.is_err() {
            drop(file);
            // Best effort: the error being returned is the interesting one.
            let _ = std::fs::remove_file(path);
        }
        made.map(Arc::new)
    }

    /// Maps the existing file `path` at its current size (or opens the simulated file of
    /// that path with [`PersistMode::CrashSim`]).
    ///
    /// # Errors
    /// `Io` when the file is missing or cannot be mapped; `InvalidArgument` for an empty
    /// file, `CrashSim` without `sim`, or `Adr` without DAX (unless `emulate_adr`).
    pub fn open(path: &Path, opts: &RegionOptions) -> Result<Arc<Region>> {
        if opts.mode == PersistMode::CrashSim {
            let sim = sim_of(opts)?;
            let file = sim.open_file(path)?;
            return Ok(Arc::new(Region::from_sim(path, file, opts)));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_err(path, e))?;
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        let len = usize::try_from(len).map_err(|_| {
            invalid(format!(
                "{}: file too large to map ({len} bytes)",
                path.display()
            ))
        })?;
        if len == 0 {
            return Err(invalid(format!(
                "{}: cannot map an empty file as an NVM region",
                path.display()
            )));
        }
        let mapped = RegionOptions {
            prefault: false,
            ..opts.clone()
        };
        let region = Region::map_file(path, &file, len, &mapped)?;
        if opts.prefault {
            region.populate_in_background();
        }
        Ok(Arc::new(region))
    }

    /// Populates the page tables of a file mapping from a background thread, in steps of
    /// 256 KiB (each call holds the process's address-space lock for reading, which a
    /// foreground thread changing a mapping, e.g. the allocator's `mprotect`, waits for),
    /// until done or until the region drops (which stops the thread and waits for
    /// its current step before unmapping). Best effort: a kernel without
    /// `MADV_POPULATE_WRITE` (before Linux 5.14) leaves the pages to fault in on first use.
    #[cfg(target_os = "linux")]
    fn populate_in_background(&self) {
        const STEP: usize = 256 << 10;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (base, len) = (self.base.as_ptr() as usize, self.len);
        let stopped = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name("mezz-nvm-populate".to_owned())
            .spawn(move || {
                // SAFETY: `[base, base + len)` is the region's writable file mapping, which
                // stays mapped while this thread runs: the region's drop sets `stopped`,
                // then joins the thread before unmapping, and the file covers the whole
                // mapping (it never grows or shrinks).
                unsafe {
                    crate::sys::populate_in_steps(base as *mut u8, len, STEP, || {
                        !stopped.load(Ordering::Acquire)
                    });
                }
            });
        // No thread (resource limits): the pages fault in on first use instead.
        if let Ok(handle) = spawned {
            *self.populating.lock() = Some((stop, handle));
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn populate_in_background(&self) {}

    /// A heap-backed region of `len` zero bytes (DRAM), never persistent: `Adr`/`Eadr` still
    /// execute their flush/fence instructions (so their cost can be measured), the other
    /// modes' persist and fence do nothing. `CrashSim` is refused (use a [`SimNvm`] path).
    ///
    /// # Errors
    /// `InvalidArgument` for a zero length or `CrashSim`; `Io` when allocation fails.
    pub fn anonymous(len: usize, opts: &RegionOptions) -> Result<Arc<Region>> {
        if len == 0 {
            return Err(invalid("cannot create an empty NVM region".to_string()));
        }
        if opts.mode == PersistMode::CrashSim {
            return Err(invalid(
                "anonymous regions cannot use the crashsim mode: create the region by path \
                 with RegionOptions::sim set"
                    .to_string(),
            ));
        }
        let buf = HeapBuf::zeroed(len)?;
        if opts.prefault {
            buf.prefault();
        }
        let base = buf.ptr();
        Ok(Arc::new(Region::new(
            base,
            len,
            None,
            Backing::Heap { _buf: buf },
            opts,
        )))
    }

    fn new(
        base: NonNull<u8>,
        len: usize,
        path: Option<PathBuf>,
        backing: Backing,
        opts: &RegionOptions,
    ) -> Region {
        let model = opts.emulation.profile.model();
        let cache = (!model.is_free() && model.cache_bytes > 0)
            .then(|| crate::cpucache::shared(model.cache_bytes));
        if let Some(c) = &cache {
            // A new mapping starts cold: lines an earlier mapping at these addresses left in
            // the model are not this one's.
            c.evict_range(base.as_ptr() as u64, len as u64);
        }
        Region {
            base,
            len,
            mode: opts.mode,
            path,
            backing,
            flush: FlushInstruction::detect(),
            emulation: opts.emulation,
            persist_as: opts.mode,
            dirty: Mutex::new(Vec::new()),
            sync_lock: Mutex::new(()),
            channel_free_at: Mutex::new(None),
            emu: Emu {
                model,
                costed: !model.is_free(),
                reads: Padded(Channel::new(model.read_bytes_per_sec)),
                writes: Padded(Channel::new(model.write_bytes_per_sec)),
                shards: std::array::from_fn(|_| Shard::default()),
                clock: if model.is_free() {
                    // Not calibrated for a region that never spins on it.
                    crate::spin::Clock::uncalibrated()
                } else {
                    crate::spin::Clock::get()
                },
            },
            cache,
            persists: AtomicU64::new(0),
            fences: AtomicU64::new(0),
            bytes_persisted: AtomicU64::new(0),
            claims: Mutex::new(Vec::new()),
            populating: Mutex::new(None),
        }
    }

    fn from_sim(path: &Path, file: Arc<SimFile>, opts: &RegionOptions) -> Region {
        let base = file.base();
        let len = file.len();
        Region::new(
            base,
            len,
            Some(path.to_path_buf()),
            Backing::Sim(file),
            opts,
        )
    }

    #[cfg(target_os = "linux")]
    fn map_file(
        path: &Path,
        file: &std::fs::File,
        len: usize,
        opts: &RegionOptions,
    ) -> Result<Region> {
        use std::os::fd::AsRawFd;
        /// `MAP_SYNC` (Linux, every architecture with DAX support).
        const MAP_SYNC: libc::c_int = 0x80000;
        let fd = file.as_raw_fd();
        let populate = if opts.prefault { libc::MAP_POPULATE } else { 0 };
        let map = |flags: libc::c_int| -> io::Result<NonNull<u8>> {
            // SAFETY: a fresh mapping (null hint) of `len` bytes of an open file descriptor;
            // no existing memory is affected. The result is checked against MAP_FAILED.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    flags | populate,
                    fd,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            NonNull::new(p.cast::<u8>())
                .ok_or_else(|| io::Error::other("mmap returned a null mapping"))
        };
        let (base, map_sync) = if opts.mode == PersistMode::Adr {
            match map(libc::MAP_SHARED_VALIDATE | MAP_SYNC) {
                Ok(p) => (p, true),
                Err(e) if opts.emulate_adr => {
                    let _ = e;
                    (map(libc::MAP_SHARED).map_err(|e| io_err(path, e))?, false)
                }
                Err(e) => {
                    return Err(invalid(format!(
                        "{}: persistence mode adr needs a DAX file system (mmap with MAP_SYNC \
                         failed: {e}); set nvm_emulate_adr to run adr's cache-line flushes on \
                         an ordinary mapping (not durable), or use mode msync",
                        path.display()
                    )));
                }
            }
        } else {
            (map(libc::MAP_SHARED).map_err(|e| io_err(path, e))?, false)
        };
        let mut region = Region::new(
            base,
            len,
            Some(path.to_path_buf()),
            Backing::Mapped { map_sync },
            opts,
        );
        if opts.mode == PersistMode::Msync
            && crate::sys::on_memory_fs(fd)
            && cfg!(target_arch = "x86_64")
        {
            region.persist_as = PersistMode::Adr;
        }
        if opts.prefault {
            region.touch_pages();
        }
        Ok(region)
    }

    #[cfg(not(target_os = "linux"))]
    fn map_file(
        path: &Path,
        _file: &std::fs::File,
        _len: usize,
        _opts: &RegionOptions,
    ) -> Result<Region> {
        Err(invalid(format!(
            "{}: file-backed NVM regions are supported on Linux only",
            path.display()
        )))
    }

    /// Reads one byte of every page (a volatile load each) so the kernel maps them now. A
    /// read of the whole region: call it before the region is shared, or while every byte
    /// of it is published (nothing writes it; see [`crate::extent`]).
    pub fn touch_pages(&self) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: `off < len`, inside the mapping; a read of an initialised byte (file
            // mappings read as the file's content, zero in holes) that nothing writes
            // meanwhile (the region is not shared yet, or wholly published: see above).
            unsafe { std::ptr::read_volatile(self.base.as_ptr().add(off)) };
            off += TOUCH_STEP;
        }
    }

    /// The persistence mode.
    #[must_use]
    pub fn mode(&self) -> PersistMode {
        self.mode
    }

    /// Whether this `Msync` region is a file on a memory file system, persisted with cache-line
    /// flushes and `sfence` instead of `msync` (see the module documentation).
    #[must_use]
    pub fn msync_by_flush(&self) -> bool {
        self.mode == PersistMode::Msync && self.persist_as == PersistMode::Adr
    }

    /// The file (or simulated file) path; `None` for anonymous regions.
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the mapping was granted `MAP_SYNC` (a real DAX mapping).
    #[must_use]
    pub fn is_map_sync(&self) -> bool {
        match &self.backing {
            #[cfg(target_os = "linux")]
            Backing::Mapped { map_sync } => *map_sync,
            Backing::Heap { .. } | Backing::Sim(_) => false,
        }
    }

    /// The flush instruction `Adr` uses here.
    #[must_use]
    pub fn flush_instruction(&self) -> FlushInstruction {
        self.flush
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> RegionStats {
        RegionStats {
            persists: self.persists.load(Ordering::Relaxed),
            fences: self.fences.load(Ordering::Relaxed),
            bytes_persisted: self.bytes_persisted.load(Ordering::Relaxed),
            emulated_delay_ns: self.sum(|s| &s.emulated_ns),
            read_accesses: self.sum(|s| &s.read_accesses),
            read_device_bytes: self.sum(|s| &s.read_device_bytes),
            read_cache_hits: self.sum(|s| &s.read_cache_hits),
            write_accesses: self.sum(|s| &s.write_accesses),
            write_device_bytes: self.sum(|s| &s.write_device_bytes),
        }
    }

    /// The emulation this region was mapped with.
    #[must_use]
    pub fn emulation(&self) -> Emulation {
        self.emulation
    }

    /// The device profile this region charges (`dram`: nothing).
    #[must_use]
    pub fn profile(&self) -> NvmProfile {
        self.emulation.profile
    }

    /// Bytes covered by `persist` calls so far (see [`RegionStats::bytes_persisted`]).
    #[must_use]
    pub fn bytes_persisted(&self) -> u64 {
        self.bytes_persisted.load(Ordering::Relaxed)
    }

    /// Copies `buf.len()` bytes at `off` out of the region.
    ///
    /// # Safety
    /// No other thread may write `[off, off + buf.len())` during the call.
    ///
    /// # Panics
    /// If the range is not inside the region.
    pub unsafe fn read_at(&self, off: usize, buf: &mut [u8]) {
        self.check(off, buf.len());
        // SAFETY: the range is inside the region (checked); the caller excludes concurrent
        // writers; `buf` is a distinct Rust allocation, so the ranges do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.as_ptr().add(off), buf.as_mut_ptr(), buf.len());
        }
    }

    /// Copies `data` into the region at `off` (not persisted: call [`Media::persist`]).
    ///
    /// # Safety
    /// No other thread may read or write `[off, off + data.len())` during the call.
    ///
    /// # Panics
    /// If the range is not inside the region.
    pub unsafe fn write_at(&self, off: usize, data: &[u8]) {
        self.check(off, data.len());
        // SAFETY: the range is inside the region (checked); the caller excludes concurrent
        // access; `data` cannot overlap the region's memory mutably borrowed by nobody else.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.as_ptr().add(off), data.len());
        }
    }

    fn check(&self, off: usize, len: usize) {
        assert!(
            off.checked_add(len).is_some_and(|end| end <= self.len),
            "range {off}+{len} outside region of {} bytes",
            self.len
        );
    }

    fn file_backed(&self) -> bool {
        match &self.backing {
            #[cfg(target_os = "linux")]
            Backing::Mapped { .. } => true,
            Backing::Heap { .. } | Backing::Sim(_) => false,
        }
    }

    /// A counter summed over the shards.
    fn sum(&self, field: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        self.emu
            .shards
            .iter()
            .map(|s| field(s).load(Ordering::Relaxed))
            .sum()
    }

    /// The calling thread's shard of the counters, and whether it owns it.
    fn shard(&self) -> (&Shard, bool) {
        match thread_slot() {
            Some(i) => (&self.emu.shards[i], true),
            None => (&self.emu.shards[SLOTS], false),
        }
    }

    /// Spins for `ns` nanoseconds and counts them.
    fn delay(&self, ns: u64) {
        if ns == 0 {
            return;
        }
        let (shard, own) = self.shard();
        add(&shard.emulated_ns, ns, own);
        spin_until(Instant::now() + Duration::from_nanos(ns));
    }

    /// Charges the profile's `charge` on the read (`write` false) or write channel: counts
    /// it, reserves its bytes on the channel, and spins until both its latency has passed
    /// and the channel lets the caller go on (the latency and the transfer overlap).
    fn charge(&self, charge: Charge, write: bool) {
        let channel = if write {
            &self.emu.writes.0
        } else {
            &self.emu.reads.0
        };
        let waits = charge.latency_ns != 0 || channel.rate() != 0;
        // The clock is read first, so that the bookkeeping below is part of the wait
        // rather than added to it. A read's wait starts when its bytes have arrived; a
        // write's at once.
        let now = if waits {
            self.emu.clock.now_ns(!write)
        } else {
            0
        };
        let (shard, own) = self.shard();
        let (accesses, bytes) = if write {
            (&shard.write_accesses, &shard.write_device_bytes)
        } else {
            (&shard.read_accesses, &shard.read_device_bytes)
        };
        if charge.accesses > 0 {
            add(accesses, charge.accesses, own);
        }
        add(bytes, charge.device_bytes, own);
        if !waits {
            return;
        }
        let ready = channel.reserve(now, charge.device_bytes);
        let until = now.saturating_add(charge.latency_ns).max(ready);
        let wait = until - now;
        if wait == 0 {
            return;
        }
        add(&shard.emulated_ns, wait, own);
        self.emu.clock.spin_until_ns(until);
    }

    /// The address of byte `off` of the region, as the CPU cache model keys its lines.
    #[inline]
    fn addr(&self, off: usize) -> u64 {
        (self.base.as_ptr() as u64).wrapping_add(off as u64)
    }

    /// Whether the CPU cache model serves a read of `len` bytes at `off` (a miss loads it;
    /// false without a model).
    #[inline]
    fn cached(&self, off: usize, len: usize) -> bool {
        self.cache
            .as_ref()
            .is_some_and(|c| c.read(self.addr(off), len))
    }

    /// The per-line knob `ns_per_line` for `accesses` accesses of `bytes_each` bytes.
    fn per_line(ns_per_line: u32, accesses: usize, bytes_each: usize) -> u64 {
        (accesses as u64)
            .saturating_mul(bytes_each.div_ceil(LINE) as u64)
            .saturating_mul(u64::from(ns_per_line))
    }

    /// The profile's charge of a durable write of `[off, off + len)` reaching the device
    /// (a persist or a non-temporal store), on a region that is persisted.
    fn charge_durable_write(&self, off: usize, len: usize) {
        if self.emu.costed {
            self.charge(self.emu.model.persist(off as u64, len as u64), true);
        }
    }

    /// Bandwidth cap: reserves `bytes` on the persist channel and waits for its turn.
    fn throttle(&self, bytes: u64) {
        let rate = self.emulation.persist_bytes_per_sec;
        if rate == 0 {
            return;
        }
        let cost = Duration::from_nanos(
            u64::try_from(u128::from(bytes) * 1_000_000_000 / u128::from(rate)).unwrap_or(u64::MAX),
        );
        let now = Instant::now();
        let done = {
            let mut free_at = self.channel_free_at.lock();
            let start = free_at.map_or(now, |t| t.max(now));
            let done = start + cost;
            *free_at = Some(done);
            done
        };
        let wait = done.saturating_duration_since(now);
        let (shard, own) = self.shard();
        add(
            &shard.emulated_ns,
            u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX),
            own,
        );
        spin_until(done);
    }

    /// `Msync`: records the page-aligned cover of `[start, end)`.
    fn record_dirty(&self, start: usize, end: usize) {
        let page = page_size();
        let lo = start / page * page;
        let hi = end.div_ceil(page).saturating_mul(page);
        let mut dirty = self.dirty.lock();
        if let Some(last) = dirty.last_mut()
            && lo <= last.1
            && hi >= last.0
        {
            last.0 = last.0.min(lo);
            last.1 = last.1.max(hi);
            return;
        }
        dirty.push((lo, hi));
        if dirty.len() >= 1024 {
            merge_ranges(&mut dirty);
        }
    }

    /// `Msync` fence: msyncs the recorded ranges.
    fn sync_dirty(&self) -> io::Result<()> {
        let _syncing = self.sync_lock.lock();
        let mut ranges = std::mem::take(&mut *self.dirty.lock());
        if ranges.is_empty() {
            return Ok(());
        }
        merge_ranges(&mut ranges);
        for (lo, hi) in ranges {
            self.msync(lo, hi)?;
        }
        Ok(())
    }

    #[cfg(target_os = "linux")]
    fn msync(&self, lo: usize, hi: usize) -> io::Result<()> {
        if !self.file_backed() {
            return Ok(());
        }
        let hi = hi.min(self.len.div_ceil(page_size()) * page_size());
        if hi <= lo {
            return Ok(());
        }
        // SAFETY: `[lo, hi)` is page aligned and inside the mapping (rounded up to whole
        // pages, which the kernel maps); msync does not change memory contents.
        crate::sys::check(unsafe {
            libc::msync(self.base.as_ptr().add(lo).cast(), hi - lo, libc::MS_SYNC)
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn msync(&self, _lo: usize, _hi: usize) -> io::Result<()> {
        Ok(())
    }

    /// `Adr`: flushes every line of `[start, end)`.
    #[cfg(target_arch = "x86_64")]
    fn flush_lines(&self, start: usize, end: usize) {
        let first = start / LINE * LINE;
        let mut off = first;
        while off < end {
            // SAFETY: `off < end <= len`, so the address is inside the region. The flush
            // instructions only write back/evict a cache line; they do not change memory
            // contents and need no alignment. The instruction was detected as supported.
            unsafe {
                let p = self.base.as_ptr().add(off);
                match self.flush {
                    FlushInstruction::Clwb => {
                        std::arch::asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags));
                    }
                    FlushInstruction::Clflushopt => {
                        std::arch::asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags));
                    }
                    FlushInstruction::Clflush | FlushInstruction::None => {
                        std::arch::asm!("clflush [{0}]", in(reg) p, options(nostack, preserves_flags));
                    }
                }
            }
            off += LINE;
        }
    }
}

/// An exclusive claim of a writer on a byte range of a region, released on drop.
#[derive(Debug)]
pub(crate) struct Claim {
    region: Arc<Region>,
    range: (usize, usize),
}

impl Claim {
    /// Claims `[off, off + len)` of `region`.
    ///
    /// # Errors
    /// `InvalidArgument` when the range overlaps a range claimed by a live writer.
    pub(crate) fn new(region: &Arc<Region>, off: usize, len: usize) -> Result<Claim> {
        let range = (off, off.saturating_add(len));
        let mut claims = region.claims.lock();
        if let Some(&(lo, hi)) = claims
            .iter()
            .find(|&&(lo, hi)| lo < range.1 && range.0 < hi)
        {
            return Err(invalid(format!(
                "NVM range [{}, {}) is already in use by a writer over [{lo}, {hi})",
                range.0, range.1
            )));
        }
        claims.push(range);
        Ok(Claim {
            region: Arc::clone(region),
            range,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut claims = self.region.claims.lock();
        if let Some(i) = claims.iter().position(|&r| r == self.range) {
            claims.swap_remove(i);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn sfence() {
    // SAFETY: `sfence` only orders stores and flushes; it touches no memory or register.
    unsafe { std::arch::asm!("sfence", options(nostack, preserves_flags)) };
}

fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// Sorts and merges overlapping or touching ranges.
fn merge_ranges(ranges: &mut Vec<(usize, usize)>) {
    ranges.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for &(lo, hi) in ranges.iter() {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    *ranges = out;
}

/// The system page size (cached), 4096 when unknown.
fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sysconf has no preconditions.
            let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            usize::try_from(v).ok().filter(|&p| p > 0).unwrap_or(4096)
        }
        #[cfg(not(target_os = "linux"))]
        {
            4096
        }
    })
}

fn sim_of(opts: &RegionOptions) -> Result<&SimNvm> {
    opts.sim.as_ref().ok_or_else(|| {
        invalid(
            "persistence mode crashsim needs a simulated NVM registry (RegionOptions::sim)"
                .to_string(),
        )
    })
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.populating.lock().take() {
            stop.store(true, Ordering::Release);
            // A panic in it would only have ended the pre-faulting early.
            let _ = handle.join();
        }
        #[cfg(target_os = "linux")]
        if let Backing::Mapped { .. } = self.backing {
            // SAFETY: `base`/`len` describe the mapping made in `map_file`, unmapped only
            // here; no reference into it outlives the region (users hold the `Arc`).
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
    }
}

impl Media for Region {
    fn base(&self) -> NonNull<u8> {
        self.base
    }

    fn len(&self) -> usize {
        self.len
    }

    fn persist(&self, off: usize, len: usize) -> io::Result<()> {
        let end = off.saturating_add(len).min(self.len);
        if off >= end {
            return Ok(());
        }
        let bytes = (end - off) as u64;
        self.persists.fetch_add(1, Ordering::Relaxed);
        self.bytes_persisted.fetch_add(bytes, Ordering::Relaxed);
        self.throttle(bytes);
        if self.is_persistent() {
            self.charge_durable_write(off, end - off);
        }
        if let Some(cache) = &self.cache {
            // Written back and evicted (`clwb` as on the profile's CPUs).
            cache.evict_range(self.addr(off), bytes);
        }
        match self.persist_as {
            PersistMode::Adr => {
                #[cfg(target_arch = "x86_64")]
                self.flush_lines(off, end);
                #[cfg(not(target_arch = "x86_64"))]
                self.record_dirty(off, end);
            }
            PersistMode::Eadr => {
                #[cfg(not(target_arch = "x86_64"))]
                self.record_dirty(off, end);
            }
            PersistMode::Msync => {
                if self.file_backed() {
                    self.record_dirty(off, end);
                }
            }
            PersistMode::Volatile => {}
            PersistMode::CrashSim => {
                if let Backing::Sim(file) = &self.backing {
                    file.persist(off, end);
                }
            }
        }
        Ok(())
    }

    fn fence(&self) -> io::Result<()> {
        self.fences.fetch_add(1, Ordering::Relaxed);
        match self.persist_as {
            PersistMode::Adr | PersistMode::Eadr => {
                #[cfg(target_arch = "x86_64")]
                {
                    sfence();
                    Ok(())
                }
                #[cfg(not(target_arch = "x86_64"))]
                self.sync_dirty()
            }
            PersistMode::Msync => self.sync_dirty(),
            PersistMode::Volatile => Ok(()),
            PersistMode::CrashSim => {
                if let Backing::Sim(file) = &self.backing {
                    file.fence();
                }
                Ok(())
            }
        }
    }

    fn is_persistent(&self) -> bool {
        match self.mode {
            PersistMode::Volatile => false,
            PersistMode::CrashSim => true,
            PersistMode::Adr | PersistMode::Eadr | PersistMode::Msync => self.file_backed(),
        }
    }

    fn store_word_uncached(&self, off: usize, v: u64) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.persist_as == PersistMode::Adr
            && off.is_multiple_of(8)
            && off.checked_add(8).is_some_and(|end| end <= self.len)
        {
            self.persists.fetch_add(1, Ordering::Relaxed);
            self.bytes_persisted.fetch_add(8, Ordering::Relaxed);
            self.throttle(8);
            if self.is_persistent() {
                self.charge_durable_write(off, 8);
            }
            if let Some(cache) = &self.cache {
                cache.evict(self.addr(off));
            }
            // SAFETY: `[off, off + 8)` lies inside the mapping (checked above) and is
            // 8-aligned (the base is page aligned), so the store is one aligned 8-byte
            // write, atomic like the word's other accesses. A non-temporal store changes
            // only those 8 bytes; the later `sfence` of `fence` orders it before any later
            // store and makes it durable as `clwb` + `sfence` would.
            unsafe {
                std::arch::x86_64::_mm_stream_si64(
                    self.base.as_ptr().add(off).cast::<i64>(),
                    v.cast_signed(),
                );
            }
            return true;
        }
        let _ = (off, v);
        false
    }

    fn on_read(&self, len: usize) {
        self.on_reads(1, len);
    }

    fn on_read_at(&self, off: usize, len: usize) {
        if self.cached(off, len) {
            let (shard, own) = self.shard();
            add(&shard.read_cache_hits, 1, own);
            return;
        }
        self.on_read(len);
    }

    fn on_read_continued_at(&self, off: usize, len: usize) {
        if !self.cached(off, len) {
            self.on_read_continued(len);
        }
    }

    fn charges_reads(&self) -> bool {
        self.emu.costed || self.emulation.read_ns_per_line != 0
    }

    fn on_reads(&self, accesses: usize, bytes_each: usize) {
        if accesses == 0 || bytes_each == 0 {
            return;
        }
        if self.emu.costed {
            self.charge(
                self.emu.model.read(accesses as u64, bytes_each as u64),
                false,
            );
        }
        self.delay(Self::per_line(
            self.emulation.read_ns_per_line,
            accesses,
            bytes_each,
        ));
    }

    fn on_read_continued(&self, len: usize) {
        if len == 0 {
            return;
        }
        if self.emu.costed {
            self.charge(self.emu.model.read_continued(len as u64), false);
        }
        self.delay(Self::per_line(self.emulation.read_ns_per_line, 1, len));
    }

    fn on_write(&self, len: usize) {
        self.on_writes(1, len);
    }

    fn on_writes(&self, accesses: usize, bytes_each: usize) {
        if accesses == 0 || bytes_each == 0 {
            return;
        }
        // A persistent region is charged where the bytes reach the device (`persist`, the
        // non-temporal word store); one that is never persisted, here.
        if self.emu.costed && !self.is_persistent() {
            self.charge(
                self.emu.model.write(accesses as u64, bytes_each as u64),
                true,
            );
        }
        self.delay(Self::per_line(
            self.emulation.write_ns_per_line,
            accesses,
            bytes_each,
        ));
    }
}
