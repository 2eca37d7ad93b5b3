//! Simulated persistent memory for crash tests: a registry of in-memory "files", each with
//! live bytes and a durable image, and the power cut that keeps only what was made durable.
//!
//! Owns: [`SimNvm`] (the registry, a cheap shared handle), [`PowerCut`], [`KeepLines`], and
//! the per-file state used by [`Region`](crate::Region) in
//! [`PersistMode::CrashSim`](crate::PersistMode::CrashSim).
//!
//! Model (64-byte cache lines are the unit, as on real hardware):
//! - The live bytes are what the program reads and writes (through the region's base).
//! - `persist(range)` snapshots the lines covering the range into the file's *pending* list
//!   (like `clwb`: the line's content at that moment is on its way to the media);
//!   `fence()` moves the file's pending lines into its durable image. So a persist without a
//!   fence is not durable, which catches a missing fence.
//! - [`SimNvm::power_cut`] builds a new registry whose files hold their durable image, plus,
//!   as chosen by [`KeepLines`], the lines whose live content differs from the durable image
//!   (written, or persisted but not fenced, when the power went: a cache may or may not have
//!   written them back).
//! - [`SimNvm::arm_cut_after`]`(n)`: when the `n`-th persist call of the registry (1-based,
//!   counted since the registry was made) starts, every durable image freezes: that persist
//!   and every later persist or fence no longer change them. The program keeps running on
//!   the live bytes; a later `power_cut` then shows the state of a power cut just before the
//!   `n`-th persist: the durable images as frozen, and, for [`KeepLines`], the live bytes as
//!   they were at that moment (files created after it are left out). Running a workload
//!   once per `n` in `1..=persist_points()` tests a power cut at every persist point.
//!
//! Paths are used as given (no normalisation); use the same spelling to create and open.
//!
//! Thread-safety: `SimNvm` is `Send + Sync` and cheap to clone (an `Arc`); clones share the
//! files. The registry has one mutex; each file has its own. `power_cut` and
//! [`SimNvm::durable_image`] read live bytes without synchronisation with writers: call them
//! when no thread writes the simulated regions (as the snapshot of a persist may mix old and
//! new bytes of a line another thread is writing, like a real write-back).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::region::{HeapBuf, LINE};

/// What a power cut keeps of the lines written (or persisted but not fenced) since their
/// last durable point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum KeepLines {
    /// Worst case: only the durable images survive.
    #[default]
    None,
    /// Every line keeps its live content (like a process crash: memory reached the media).
    All,
    /// Each such line independently survives with probability 1/2 (seeded).
    Random,
}

/// Options of [`SimNvm::power_cut`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PowerCut {
    /// What is kept of the unpersisted lines.
    pub keep_unpersisted: KeepLines,
    /// Seed of [`KeepLines::Random`]: the same seed and state give the same result.
    pub seed: u64,
}

/// Registry-wide counters and the armed cut.
#[derive(Debug)]
struct Counters {
    persists: AtomicU64,
    fences: AtomicU64,
    /// Persist number at which the durable images freeze; `u64::MAX` = not armed.
    cut_at: AtomicU64,
    frozen: AtomicBool,
}

impl Counters {
    fn new() -> Counters {
        Counters {
            persists: AtomicU64::new(0),
            fences: AtomicU64::new(0),
            cut_at: AtomicU64::new(u64::MAX),
            frozen: AtomicBool::new(false),
        }
    }
}

/// A persist waiting for its fence: `(line-aligned offset, snapshot of the lines)`.
type Pending = (usize, Box<[u8]>);

#[derive(Debug)]
struct FileState {
    durable: Vec<u8>,
    pending: Vec<Pending>,
    /// The live bytes when the armed cut happened (see [`SimNvm::arm_cut_after`]).
    live_at_cut: Option<Box<[u8]>>,
}

/// One simulated file: live bytes plus the durable image.
pub(crate) struct SimFile {
    live: HeapBuf,
    len: usize,
    state: Mutex<FileState>,
    counters: Arc<Counters>,
    /// The registry, to snapshot every file when an armed cut happens.
    registry: Weak<Inner>,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl SimFile {
    fn new(
        len: usize,
        durable: Vec<u8>,
        registry: &Arc<Inner>,
        prefault: bool,
    ) -> io::Result<SimFile> {
        let live = HeapBuf::zeroed(len)?;
        if prefault {
            live.prefault();
        }
        let n = durable.len().min(len);
        // SAFETY: `live` is a fresh allocation of at least `len >= n` bytes, not shared yet;
        // `durable` is a distinct allocation of at least `n` bytes.
        unsafe { std::ptr::copy_nonoverlapping(durable.as_ptr(), live.ptr().as_ptr(), n) };
        Ok(SimFile {
            live,
            len,
            state: Mutex::new(FileState {
                durable,
                pending: Vec::new(),
                live_at_cut: None,
            }),
            counters: Arc::clone(&registry.counters),
            registry: Arc::downgrade(registry),
        })
    }

    pub(crate) fn base(&self) -> NonNull<u8> {
        self.live.ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies the live bytes `[lo, hi)` (inside the file).
    fn live_copy(&self, lo: usize, hi: usize) -> Box<[u8]> {
        let mut out = vec![0u8; hi - lo].into_boxed_slice();
        // SAFETY: `lo <= hi <= len`, inside the live allocation; `out` is a distinct
        // allocation of `hi - lo` bytes. Concurrent writers are excluded by the module's
        // contract (or tolerated like a real write-back: see the module documentation).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.live.ptr().as_ptr().add(lo),
                out.as_mut_ptr(),
                hi - lo,
            );
        }
        out
    }

    /// `persist` of `[start, end)` (inside the file, `start < end`).
    pub(crate) fn persist(&self, start: usize, end: usize) {
        let number = self.counters.persists.fetch_add(1, Ordering::SeqCst) + 1;
        if number >= self.counters.cut_at.load(Ordering::SeqCst) {
            match self.registry.upgrade() {
                Some(inner) => inner.cut_now(),
                None => self.counters.frozen.store(true, Ordering::SeqCst),
            }
        }
        let lo = start / LINE * LINE;
        let hi = end.div_ceil(LINE).saturating_mul(LINE).min(self.len);
        let snapshot = self.live_copy(lo, hi);
        let mut state = self.state.lock();
        if self.counters.frozen.load(Ordering::SeqCst) {
            return;
        }
        state.pending.push((lo, snapshot));
    }

    /// `fence`: makes the pending lines durable (unless frozen).
    pub(crate) fn fence(&self) {
        self.counters.fences.fetch_add(1, Ordering::SeqCst);
        let mut state = self.state.lock();
        if self.counters.frozen.load(Ordering::SeqCst) {
            return;
        }
        let FileState {
            durable, pending, ..
        } = &mut *state;
        for (off, bytes) in pending.drain(..) {
            if let Some(dst) = durable.get_mut(off..off + bytes.len()) {
                dst.copy_from_slice(&bytes);
            }
        }
    }
}

#[derive(Debug)]
struct Inner {
    files: Mutex<BTreeMap<PathBuf, Arc<SimFile>>>,
    counters: Arc<Counters>,
}

impl Inner {
    /// The armed cut happens now: freeze the durable images and remember every file's live
    /// bytes, which are what the caches held at the cut. Only the first call acts. Lock
    /// order: the file map, then each file's state.
    fn cut_now(&self) {
        if self.counters.frozen.swap(true, Ordering::SeqCst) {
            return;
        }
        let files = self.files.lock();
        for file in files.values() {
            let live = file.live_copy(0, file.len);
            file.state.lock().live_at_cut = Some(live);
        }
    }
}

/// A registry of simulated NVM files (see the module documentation). Clones share it.
#[derive(Clone, Debug)]
pub struct SimNvm {
    inner: Arc<Inner>,
}

impl Default for SimNvm {
    fn default() -> Self {
        SimNvm::new()
    }
}

impl SimNvm {
    /// An empty registry.
    #[must_use]
    pub fn new() -> SimNvm {
        SimNvm {
            inner: Arc::new(Inner {
                files: Mutex::new(BTreeMap::new()),
                counters: Arc::new(Counters::new()),
            }),
        }
    }

    /// Creates a zero-filled file of `len` bytes; fails if `path` exists.
    pub(crate) fn create_file(
        &self,
        path: &Path,
        len: usize,
        prefault: bool,
    ) -> io::Result<Arc<SimFile>> {
        let mut files = self.inner.files.lock();
        if files.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("simulated NVM file {} already exists", path.display()),
            ));
        }
        let file = Arc::new(SimFile::new(len, vec![0; len], &self.inner, prefault)?);
        files.insert(path.to_path_buf(), Arc::clone(&file));
        Ok(file)
    }

    /// The file at `path`.
    pub(crate) fn open_file(&self, path: &Path) -> io::Result<Arc<SimFile>> {
        self.inner.files.lock().get(path).cloned().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("simulated NVM file {}: no such file", path.display()),
            )
        })
    }

    /// Whether a file exists at `path`.
    #[must_use]
    pub fn exists(&self, path: &Path) -> bool {
        self.inner.files.lock().contains_key(path)
    }

    /// Removes the file at `path` (regions still mapping it keep working); whether it
    /// existed.
    pub fn remove(&self, path: &Path) -> bool {
        self.inner.files.lock().remove(path).is_some()
    }

    /// Every file's path, sorted.
    #[must_use]
    pub fn paths(&self) -> Vec<PathBuf> {
        self.inner.files.lock().keys().cloned().collect()
    }

    /// Length of the file at `path`.
    #[must_use]
    pub fn file_len(&self, path: &Path) -> Option<usize> {
        self.inner.files.lock().get(path).map(|f| f.len())
    }

    /// A copy of the durable image of the file at `path`.
    #[must_use]
    pub fn durable_image(&self, path: &Path) -> Option<Vec<u8>> {
        let file = self.inner.files.lock().get(path).cloned()?;
        Some(file.state.lock().durable.clone())
    }

    /// Overwrites bytes of the file at `path`, live and durable alike (models damage of the
    /// media, for corruption tests). Call when no region of the file is in use.
    ///
    /// # Errors
    /// `NotFound` for a missing file, `InvalidInput` for a range beyond its end.
    pub fn damage(&self, path: &Path, off: usize, bytes: &[u8]) -> io::Result<()> {
        let file = self.open_file(path)?;
        let end = off
            .checked_add(bytes.len())
            .filter(|&e| e <= file.len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "range beyond the file"))?;
        let mut state = file.state.lock();
        if let Some(dst) = state.durable.get_mut(off..end) {
            dst.copy_from_slice(bytes);
        }
        // SAFETY: `[off, end)` is inside the live allocation (checked above); `bytes` is a
        // distinct allocation; the caller guarantees no region uses the file meanwhile.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                file.live.ptr().as_ptr().add(off),
                bytes.len(),
            );
        }
        Ok(())
    }

    /// Total `persist` calls on regions of this registry so far.
    #[must_use]
    pub fn persist_points(&self) -> u64 {
        self.inner.counters.persists.load(Ordering::SeqCst)
    }

    /// Total `fence` calls on regions of this registry so far.
    #[must_use]
    pub fn fence_points(&self) -> u64 {
        self.inner.counters.fences.load(Ordering::SeqCst)
    }

    /// Freezes every durable image when the `n`-th persist call (1-based, counted since the
    /// registry was made, see [`SimNvm::persist_points`]) starts; immediately if that many
    /// persists happened already. See the module documentation.
    pub fn arm_cut_after(&self, n: u64) {
        let counters = &self.inner.counters;
        counters.cut_at.store(n, Ordering::SeqCst);
        if counters.persists.load(Ordering::SeqCst) >= n {
            self.inner.cut_now();
        }
    }

    /// Whether the armed cut has happened (the durable images are frozen).
    #[must_use]
    pub fn cut_happened(&self) -> bool {
        self.inner.counters.frozen.load(Ordering::SeqCst)
    }

    /// A new, independent registry holding what a power cut now would leave (see
    /// [`KeepLines`]); everything in it is durable and its counters start at zero. `self`
    /// is unchanged and keeps working.
    ///
    /// Call when no thread writes the simulated regions.
    ///
    /// # Panics
    /// Only on allocation failure of the copies.
    #[must_use]
    pub fn power_cut(&self, cut: &PowerCut) -> SimNvm {
        let out = SimNvm::new();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(cut.seed);
        let files = self.inner.files.lock();
        let mut new_files = out.inner.files.lock();
        for (path, file) in files.iter() {
            let state = file.state.lock();
            let live = match &state.live_at_cut {
                Some(at_cut) => at_cut.clone(),
                // Created after the armed cut: it did not exist at the cut.
                None if self.cut_happened() => continue,
                None => file.live_copy(0, file.len),
            };
            let mut image = state.durable.clone();
            for (i, line) in live.chunks(LINE).enumerate() {
                let lo = i * LINE;
                let Some(dst) = image.get_mut(lo..lo + line.len()) else {
                    continue;
                };
                if dst == line {
                    continue;
                }
                let keep = match cut.keep_unpersisted {
                    KeepLines::None => false,
                    KeepLines::All => true,
                    KeepLines::Random => rng.random_bool(0.5),
                };
                if keep {
                    dst.copy_from_slice(line);
                }
            }
            let copy = match SimFile::new(file.len, image, &out.inner, false) {
                Ok(f) => f,
                Err(e) => panic!("power cut: cannot allocate a simulated file: {e}"),
            };
            new_files.insert(path.clone(), Arc::new(copy));
        }
        drop(new_files);
        out
    }
}
