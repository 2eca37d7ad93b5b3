//! The NVM tier of one open database: its pool and the extents (objects) the engine keeps
//! in it (WALs on NVM, NoveLSM's persistent skip-list memtables, TLSM's NVM tables and
//! their buffers; matrix rows later).
//!
//! Owns: [`NvmTier`] (the pool file under `Options::nvm_dir`, its allocator, the
//! persistence mode), [`NvmObject`] (one extent as the manifest records it) and
//! [`NvmLogFile`] (a WAL in an extent). What lives inside an extent belongs to its user: the
//! persistent skip list of a memtable is `crate::memtable::nvm_list`. Formats:
//! `docs/formats/nvm-pool.md` (pool, superblock, extents, NVM logs).
//!
//! Invariants:
//! - Every extent in use is recorded in the manifest as an `NvmObject` *before* anything
//!   that must survive a crash is written into it; on open, the pool's free space is
//!   derived from the recovered version (whatever it does not list is free), so a crash
//!   leaks nothing.
//! - An object's extent returns to the allocator only after the manifest edit deleting it
//!   is durable and no reader can reach it any more.
//! - Every write into NVM becomes durable only through `persist` + `fence` of the pool's
//!   region (in `mezz-pmem`; this crate holds no `unsafe`).
//!
//! Thread-safety: `NvmTier` is shared (`Arc`); allocation takes a mutex.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::WritableFile;
use mezz_pmem::region::{Emulation, Region, RegionOptions};
use mezz_pmem::{Extent, Media, PersistMode, Pool};
use parking_lot::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::options::Options;

pub use crate::filename::POOL_FILE;

/// What an NVM object (an extent of the NVM pool) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvmObjectKind {
    /// A WAL kept in NVM (`wal_on_nvm`); the object's id is the WAL number.
    Wal,
    /// A persistent skip-list memtable (NoveLSM); the id is the memtable's number.
    Memtable,
    /// The index (persistent skip list) of an NVM table; the id is the table's number.
    TableIndex,
    /// A persistent buffer of KeySet blocks that NVM tables point into.
    TableBuffer,
    /// The page space of the matrix container (MatrixKV's L0): rows live in its pages.
    MatrixSpace,
}

impl NvmObjectKind {
    /// Whether the object holds (parts of) NVM tables.
    #[must_use]
    pub fn is_table(self) -> bool {
        matches!(self, NvmObjectKind::TableIndex | NvmObjectKind::TableBuffer)
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            NvmObjectKind::Wal => 1,
            NvmObjectKind::Memtable => 2,
            NvmObjectKind::TableIndex => 3,
            NvmObjectKind::TableBuffer => 4,
            NvmObjectKind::MatrixSpace => 5,
        }
    }
    pub(crate) fn from_code(c: u8) -> Option<Self> {
        match c {
            1 => Some(NvmObjectKind::Wal),
            2 => Some(NvmObjectKind::Memtable),
            3 => Some(NvmObjectKind::TableIndex),
            4 => Some(NvmObjectKind::TableBuffer),
            5 => Some(NvmObjectKind::MatrixSpace),
            _ => None,
        }
    }
}

/// One live object of the NVM pool, as the manifest records it. Whatever the recovered
/// version does not list is free space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NvmObject {
    /// WAL number or memtable number (file-number space: unique per database).
    pub id: u64,
    /// What it holds.
    pub kind: NvmObjectKind,
    /// Offset of its extent in the pool.
    pub offset: u64,
    /// Length of its extent in bytes.
    pub len: u64,
    /// For an object of NVM tables: the bytes of entries written into it (see
    /// `compaction::nvm_sink::entry_weight`); its live share is the part of them live
    /// tables still use. 0 for other objects, and for table objects holding only nodes.
    /// For the matrix container's space: its page size.
    pub weight: u64,
}

impl NvmObject {
    /// The object's extent of the pool.
    #[must_use]
    pub fn extent(&self) -> Extent {
        Extent {
            offset: self.offset,
            len: self.len,
        }
    }

    /// The object's length scaled by its live share: `live` of its `weight` entry bytes
    /// (capped at the weight). An object without entry bytes counts whole.
    #[must_use]
    pub fn live_len(&self, live: u64) -> u64 {
        if self.weight == 0 {
            return self.len;
        }
        (u128::from(self.len) * u128::from(live.min(self.weight)) / u128::from(self.weight)) as u64
    }
}

/// Whether a job that failed with `e` writes its tables as SSTs instead: the NVM pool had
/// no room for an NVM table, and the tiering allows SSTs (all but `none`).
#[must_use]
pub fn falls_back_to_ssd(e: &Error, tiering: crate::options::NvmTiering) -> bool {
    tiering.allows_ssd() && is_pool_full(e)
}

/// `len` rounded up to the pool's extent alignment: what an object of `len` bytes takes.
fn extent_len(len: u64) -> u64 {
    len.div_ceil(mezz_pmem::pool::EXTENT_ALIGN) * mezz_pmem::pool::EXTENT_ALIGN
}

/// The extents NVM tables of `bytes` in all take at the least: their bytes in whole
/// extents, and one more for the second object (buffer and index are allocated apart).
fn table_extents_len(bytes: u64) -> u64 {
    extent_len(bytes).saturating_add(mezz_pmem::pool::EXTENT_ALIGN)
}

/// Whether `e` says the NVM pool had no free range large enough for an allocation.
#[must_use]
pub fn is_pool_full(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::StorageFull)
}

/// The NVM tier of an open database. See the module documentation.
#[derive(Debug)]
#[allow(dead_code)] // set for diagnostics and tests; not read by the engine
pub struct NvmTier {
    pool: Mutex<Pool>,
    /// Every object the engine holds (recovered ones and those allocated since), by id:
    /// how NVM tables find the extents of the objects they reference.
    objects: Mutex<std::collections::HashMap<u64, NvmObject>>,
    region: Arc<Region>,
    dir: PathBuf,
    #[allow(dead_code)] // set for diagnostics and tests; not read by the engine
    mode: PersistMode,
    /// Bytes the pool's other users (the NVM WALs and memtables the options keep there) may
    /// hold at once; NVM tables leave free the part of it they do not hold now, in one
    /// range, so a table never starves them.
    table_reserve: u64,
    /// Set when the database closes: the free list is this handle's view of the pool,
    /// which a later open rebuilds from its manifest, so nothing is given out after.
    closed: std::sync::atomic::AtomicBool,
    /// Extents given back so far ([`NvmTier::free`]): the pool's room can only have grown
    /// when this changed.
    frees: std::sync::atomic::AtomicU64,
    /// `frees` when a return to NVM last found no room after all (see
    /// [`NvmTier::has_room_for_return`]); `u64::MAX`: none did.
    return_fell_short_at: std::sync::atomic::AtomicU64,
}

fn pmem_err(e: mezz_format::Error, path: &Path) -> Error {
    e.in_file(path).into()
}

impl NvmTier {
    /// The region options `opts` asks for. The pool is one region: every object in it (WALs,
    /// memtables, NVM tables and buffers, the matrix container's pages) is charged the
    /// cost of `nvm_profile` and the per-line knobs.
    fn region_options(opts: &Options) -> RegionOptions {
        RegionOptions {
            mode: opts.nvm_persistence,
            emulate_adr: opts.nvm_emulate_adr,
            emulation: Emulation {
                profile: opts.nvm_profile,
                read_ns_per_line: opts.nvm_read_latency_ns,
                write_ns_per_line: opts.nvm_write_latency_ns,
                persist_bytes_per_sec: opts.nvm_persist_bandwidth,
            },
            prefault: opts.nvm_prefault,
            sim: opts.nvm_sim.clone(),
        }
    }

    /// Opens the pool of `opts.nvm_dir` for database `db_id`. `live`: the NVM objects the
    /// recovered version lists (everything else is free). `creating`: the database is new,
    /// so the pool must not exist yet (an existing one belongs to another database).
    ///
    /// # Errors
    /// `InvalidArgument` (no `nvm_dir`, a pool of another database, a mode the mapping
    /// cannot provide), `Corruption` (a damaged pool, objects outside it), `Io`.
    pub fn open(
        opts: &Options,
        db_id: [u8; 16],
        live: &[NvmObject],
        creating: bool,
    ) -> Result<Arc<NvmTier>> {
        let dir = opts
            .nvm_dir
            .clone()
            .ok_or_else(|| Error::InvalidArgument("the NVM tier needs nvm_dir".into()))?;
        let ropts = Self::region_options(opts);
        let path = dir.join(POOL_FILE);
        let exists = if opts.nvm_persistence == PersistMode::CrashSim {
            opts.nvm_sim.as_ref().is_some_and(|s| s.exists(&path))
        } else {
            path.exists()
        };
        let pool = if exists {
            let extents: Vec<Extent> = live.iter().map(NvmObject::extent).collect();
            // A database being created owns no pool yet, unless an earlier attempt to
            // create this same database (same id, from its IDENTITY file) was interrupted
            // after making one: nothing in it is recorded anywhere (`live` is empty), so it
            // opens empty. Any other pool is another database's.
            Pool::open(&dir, POOL_FILE, db_id, &ropts, &extents).map_err(|e| {
                if creating {
                    Error::InvalidArgument(format!(
                        "{} already holds an NVM pool (of another database): remove it or \
                         choose another nvm_dir",
                        path.display()
                    ))
                } else {
                    pmem_err(e, &path)
                }
            })?
        } else {
            if !live.is_empty() {
                return Err(Error::Corruption {
                    file: Some(path),
                    offset: 0,
                    detail: format!(
                        "the NVM pool is missing but the manifest lists {} objects in it",
                        live.len()
                    )
                    .into(),
                });
            }
            if opts.nvm_persistence != PersistMode::CrashSim {
                std::fs::create_dir_all(&dir).map_err(|e| Error::from(e).in_file(&dir))?;
            }
            Pool::create_atomic(&dir, POOL_FILE, opts.nvm_capacity, db_id, &ropts)
                .map_err(|e| pmem_err(e, &path))?
        };
        // A pool keeps the size it was created with: the options in force
        // now must fit in it, as `validate` checks `nvm_capacity` for a new one.
        let need = opts.nvm_bytes_needed();
        if pool.capacity() < need {
            return Err(Error::InvalidArgument(format!(
                "the NVM pool {} holds {} bytes (its nvm_capacity when it was created), \
                 but these options keep up to {need} bytes in NVM (nvm_memtable_size \
                 {}, wal_on_nvm {}, max_write_buffer_number {}): use smaller NVM sizes",
                path.display(),
                pool.capacity(),
                opts.nvm_memtable_size,
                opts.wal_on_nvm,
                opts.max_write_buffer_number
            )));
        }
        let region = Arc::clone(pool.region());
        Ok(Arc::new(NvmTier {
            pool: Mutex::new(pool),
            objects: Mutex::new(live.iter().map(|o| (o.id, *o)).collect()),
            region,
            dir,
            mode: opts.nvm_persistence,
            table_reserve: opts.nvm_transient_bytes(),
            closed: std::sync::atomic::AtomicBool::new(false),
            frees: std::sync::atomic::AtomicU64::new(0),
            return_fell_short_at: std::sync::atomic::AtomicU64::new(u64::MAX),
        }))
    }

    /// The pool's directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes persisted so far (statistics).
    #[must_use]
    pub fn bytes_persisted(&self) -> u64 {
        self.region.bytes_persisted()
    }

    /// The pool region's counters: persists, and the accesses and delay the emulated
    /// cost (`nvm_profile`) charged so far.
    #[must_use]
    pub fn region_stats(&self) -> mezz_pmem::RegionStats {
        self.region.stats()
    }

    /// Free bytes of the pool.
    #[must_use]
    pub fn free_bytes(&self) -> u64 {
        self.pool.lock().free_bytes()
    }

    /// Allocates an extent of `len` bytes for object `id`. The caller records the object in
    /// the manifest before relying on its contents.
    ///
    /// # Errors
    /// An `Io` error of kind `StorageFull` ([`is_pool_full`]) when no free range of the pool
    /// holds `len` bytes.
    pub fn alloc(&self, id: u64, kind: NvmObjectKind, len: u64) -> Result<NvmObject> {
        let pool = self.pool_to_alloc()?;
        let need = extent_len(len);
        if pool.largest_free() < need {
            return Err(self.pool_full(format!(
                "NVM is full: no free extent of {need} bytes for a {kind:?} object (the largest \
                 has {}; {} free of {})",
                pool.largest_free(),
                pool.free_bytes(),
                pool.data_len()
            )));
        }
        let e = pool.alloc(len).map_err(|e| match e {
            e @ mezz_format::Error::Io { .. } => Error::from(e),
            other => Error::InvalidArgument(format!("NVM pool: {other}")),
        })?;
        drop(pool);
        Ok(self.record(id, kind, e))
    }

    /// The locked pool, to allocate from: `Closed` once the database closed
    /// ([`NvmTier::close`]).
    fn pool_to_alloc(&self) -> Result<MutexGuard<'_, Pool>> {
        let pool = self.pool.lock();
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(pool)
    }

    /// The `StorageFull` error of a pool without a free range for an allocation
    /// ([`is_pool_full`]).
    fn pool_full(&self, detail: String) -> Error {
        Error::Io {
            path: Some(self.dir.join(POOL_FILE)),
            source: io::Error::new(io::ErrorKind::StorageFull, detail),
        }
    }

    /// Records extent `e`, just allocated, as object `id`.
    fn record(&self, id: u64, kind: NvmObjectKind, e: mezz_pmem::Extent) -> NvmObject {
        let obj = NvmObject {
            id,
            kind,
            offset: e.offset,
            len: e.len,
            weight: 0,
        };
        self.objects.lock().insert(id, obj);
        obj
    }

    /// Allocates a WAL for memtable `number` (`wal_on_nvm`): `None` when no free range of
    /// the pool holds one, and the caller writes the WAL as a file instead (as durable,
    /// only slower; recovery replays files and NVM logs alike, by number).
    ///
    /// # Errors
    /// The part of the reserve for NVM WALs and memtables that they do not hold now (the
    /// ones holding their extents take that much of it already): NVM tables leave it free.
    fn table_headroom(&self) -> u64 {
        let held: u64 = self
            .objects
            .lock()
            .values()
            .filter(|o| matches!(o.kind, NvmObjectKind::Wal | NvmObjectKind::Memtable))
            .map(|o| o.len)
            .sum();
        self.table_reserve.saturating_sub(held)
    }

    /// Whether an object of `len` bytes would find a free range now (for the objects the
    /// reserve is kept for: NVM WALs and memtables).
    #[must_use]
    pub fn has_room_for(&self, len: u64) -> bool {
        self.pool.lock().largest_free() >= extent_len(len)
    }

    /// Whether NVM tables of about `bytes` in all would find room now (beside the
    /// headroom the WALs and memtables need): a job that would not is better written to
    /// SSTs at once than abandoned when the pool runs out half way.
    ///
    /// A table takes at least two objects (a buffer and an index), each rounded up to whole
    /// extents: the room asked is `bytes` rounded up plus one more extent. Asking for
    /// `bytes` alone let a return of a table of 1,776 bytes be planned into a free range of
    /// one extent, fall back to an SST for want of the second, and be planned again, forever.
    #[must_use]
    pub fn has_room_for_tables(&self, bytes: u64) -> bool {
        let headroom = self.table_headroom();
        self.pool.lock().largest_free() >= table_extents_len(bytes).saturating_add(headroom)
    }

    /// [`NvmTier::has_room_for_tables`] for a return of an SST to NVM (TLSM's tiering),
    /// unless a return found no room after all and no extent was freed since: a table's
    /// room in NVM is an estimate from its SST (compressed blocks and small entries take
    /// more in NVM), and a return that falls back to an SST leaves the pool as it was, so
    /// planning it again at once would repeat it without end.
    #[must_use]
    pub fn has_room_for_return(&self, bytes: u64) -> bool {
        use std::sync::atomic::Ordering;
        self.return_fell_short_at.load(Ordering::Acquire) != self.frees.load(Ordering::Acquire)
            && self.has_room_for_tables(bytes)
    }

    /// Notes that a return to NVM found no room after all (see
    /// [`NvmTier::has_room_for_return`]).
    pub fn note_return_fell_short(&self) {
        use std::sync::atomic::Ordering;
        self.return_fell_short_at
            .store(self.frees.load(Ordering::Acquire), Ordering::Release);
    }

    /// As [`NvmTier::alloc`], but for a full pool.
    pub fn alloc_wal(&self, number: u64, len: u64) -> Result<Option<NvmObject>> {
        match self.alloc(number, NvmObjectKind::Wal, len) {
            Ok(obj) => Ok(Some(obj)),
            Err(e) if is_pool_full(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`NvmTier::alloc`] for an NVM table's objects: a pool without room is an `Io`
    /// error of kind `StorageFull` (see [`falls_back_to_ssd`]), so callers can fall back to SSTs.
    ///
    /// # Errors
    /// `StorageFull` as above; others as [`NvmTier::alloc`].
    pub fn alloc_table_object(&self, id: u64, kind: NvmObjectKind, len: u64) -> Result<NvmObject> {
        let headroom = self.table_headroom();
        let pool = self.pool_to_alloc()?;
        let need = extent_len(len);
        // A free range must hold the table and still the reserve's unused part, so that the
        // WALs and memtables the options keep in NVM always find room after it.
        if pool.largest_free() < need.saturating_add(headroom) {
            return Err(self.pool_full(format!(
                "NVM is full: an NVM table needs {need} bytes beside the {headroom} of the \
                 {} bytes kept for NVM WALs and memtables that they do not hold now, the \
                 largest free extent has {} ({} free of {}; raise nvm_capacity or use an \
                 nvm_tiering that moves tables to SSD)",
                self.table_reserve,
                pool.largest_free(),
                pool.free_bytes(),
                pool.data_len()
            )));
        }
        // Tables fill the pool from the top, WALs and memtables from the bottom, so table
        // objects never cut up the ranges the others reuse.
        let e = pool.alloc_high(len).map_err(|e| match e {
            e @ mezz_format::Error::Io { .. } => Error::from(e),
            other => Error::InvalidArgument(format!("NVM pool: {other}")),
        })?;
        drop(pool);
        Ok(self.record(id, kind, e))
    }

    /// The object `id`, if the engine holds it.
    #[must_use]
    pub fn object(&self, id: u64) -> Option<NvmObject> {
        self.objects.lock().get(&id).copied()
    }

    /// The mapped pool.
    #[must_use]
    pub fn region(&self) -> &Arc<mezz_pmem::Region> {
        &self.region
    }

    /// Refuses every allocation from now on (`Closed`): the database closed, and its next
    /// open rebuilds the free list from the manifest. Frees still return extents to this
    /// handle's (now unused) free list, which changes nothing in the pool.
    pub fn close(&self) {
        let _pool = self.pool.lock();
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Returns `obj`'s extent to the allocator. Only after the manifest no longer needs it
    /// and nothing reads it.
    pub fn free(&self, obj: &NvmObject) {
        self.objects.lock().remove(&obj.id);
        // A double free (a bug) is refused by the allocator and changes nothing.
        let _ = self.pool.lock().free(obj.extent());
        self.frees.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    pub(crate) fn media(&self) -> Arc<dyn Media> {
        Arc::clone(&self.region) as Arc<dyn Media>
    }

    pub(crate) fn extent_range(&self, obj: &NvmObject) -> Result<(usize, usize)> {
        let bad = || Error::Corruption {
            file: Some(self.dir.join(POOL_FILE)),
            offset: obj.offset,
            detail: format!("NVM object {} does not fit the pool", obj.id).into(),
        };
        let start = usize::try_from(obj.offset).map_err(|_| bad())?;
        let len = usize::try_from(obj.len).map_err(|_| bad())?;
        if start
            .checked_add(len)
            .is_none_or(|end| end > self.region.len())
        {
            return Err(bad());
        }
        Ok((start, len))
    }

    /// A WAL writer appending to the NVM log in `obj` (WAL number `obj.id`).
    ///
    /// # Errors
    /// `Io` when persisting the log header fails.
    pub fn create_log(self: &Arc<Self>, obj: NvmObject) -> Result<NvmLogFile> {
        let w =
            mezz_pmem::nvmlog::NvmLogWriter::create(Arc::clone(&self.region), obj.extent(), obj.id)
                .map_err(|e| e.in_file(self.dir.join(POOL_FILE)))?;
        Ok(NvmLogFile {
            writer: w,
            size: 0,
            capacity: obj.len,
        })
    }

    /// Whether the log `obj` holds no durable record (its header checked as `read_log`
    /// checks it, its records not read).
    ///
    /// # Errors
    /// As `read_log`.
    pub fn log_is_empty(&self, obj: &NvmObject) -> Result<bool> {
        self.read_log_with(obj, mezz_pmem::nvmlog::NvmLogReader::durable_len)
            .map(|len| len == 0)
    }

    /// The durable bytes of the NVM log in `obj`.
    ///
    /// # Errors
    /// `Corruption` for a damaged log header.
    pub fn read_log(&self, obj: &NvmObject) -> Result<Vec<u8>> {
        self.read_log_with(obj, mezz_pmem::nvmlog::NvmLogReader::open)
    }

    /// Reads the log in `obj`'s extent with `read` (which returns the log number it found
    /// and what it read); a `Corruption` in the pool file unless that is log `obj.id`.
    fn read_log_with<T>(
        &self,
        obj: &NvmObject,
        read: impl FnOnce(&Region, Extent) -> mezz_format::Result<(u64, T)>,
    ) -> Result<T> {
        let (number, got) =
            read(&self.region, obj.extent()).map_err(|e| e.in_file(self.dir.join(POOL_FILE)))?;
        if number != obj.id {
            return Err(Error::Corruption {
                file: Some(self.dir.join(POOL_FILE)),
                offset: obj.offset,
                detail: format!(
                    "NVM log at this extent is log {number}, manifest says {}",
                    obj.id
                )
                .into(),
            });
        }
        Ok(got)
    }
}

/// A WAL "file" in NVM: the engine's log framing writes into it like into a file; `sync`
/// persists what was appended and publishes the new durable tail.
#[derive(Debug)]
#[allow(dead_code)] // set for diagnostics and tests; not read by the engine
pub struct NvmLogFile {
    writer: mezz_pmem::nvmlog::NvmLogWriter,
    size: u64,
    #[allow(dead_code)] // set for diagnostics and tests; not read by the engine
    capacity: u64,
}

impl NvmLogFile {
    /// Bytes of record data the log can still take.
    #[must_use]
    #[cfg(test)]
    pub fn room(&self) -> u64 {
        self.capacity.saturating_sub(self.size + 4096)
    }
}

impl WritableFile for NvmLogFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        match self.writer.append(data) {
            Ok(mezz_pmem::Appended::Written) => {}
            Ok(mezz_pmem::Appended::Full) => {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "the NVM log's extent is full",
                ));
            }
            Err(e) => return Err(io::Error::other(e.to_string())),
        }
        self.size += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        // Appends land in the mapping directly: a process crash keeps them.
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.writer
            .sync()
            .map_err(|e| io::Error::other(e.to_string()))
    }
    fn size(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{NvmTiering, SimNvm};
    use mezz_pmem::pool::EXTENT_ALIGN;

    /// A simulated pool of 1 MiB with nothing reserved for WALs or memtables.
    fn tier() -> Arc<NvmTier> {
        let opts = Options {
            nvm_dir: Some("/nvm".into()),
            nvm_persistence: PersistMode::CrashSim,
            nvm_sim: Some(SimNvm::new()),
            nvm_capacity: 1 << 20,
            nvm_tiering: NvmTiering::Lru(1 << 20),
            nvm_prefault: false,
            ..Options::default()
        };
        NvmTier::open(&opts, [7; 16], &[], true).unwrap()
    }

    /// Takes all of the pool's largest free range but `left` bytes.
    fn fill_but(t: &NvmTier, id: u64, left: u64) -> NvmObject {
        let free = t.pool.lock().largest_free();
        t.alloc_table_object(id, NvmObjectKind::TableBuffer, free - left)
            .unwrap()
    }

    #[test]
    fn a_table_needs_room_for_two_extents() {
        let t = tier();
        assert_eq!(t.table_headroom(), 0);
        fill_but(&t, 1, EXTENT_ALIGN);
        // One extent is free: a table of 1,776 bytes takes a buffer and an index.
        assert!(!t.has_room_for_tables(1776));
        let a = t.alloc_table_object(2, NvmObjectKind::TableBuffer, 1776);
        assert!(a.is_ok());
        assert!(is_pool_full(
            &t.alloc_table_object(3, NvmObjectKind::TableIndex, 100)
                .unwrap_err()
        ));
    }

    #[test]
    fn a_return_that_fell_short_waits_for_a_free() {
        let t = tier();
        let big = fill_but(&t, 1, 16 * EXTENT_ALIGN);
        assert!(t.has_room_for_return(1776));
        t.note_return_fell_short();
        // Nothing was freed: the pool is as it was when the return found no room.
        assert!(!t.has_room_for_return(1776));
        assert!(t.has_room_for_tables(1776));
        let small = t
            .alloc_table_object(2, NvmObjectKind::TableIndex, 100)
            .unwrap();
        assert!(!t.has_room_for_return(1776));
        t.free(&small);
        assert!(t.has_room_for_return(1776));
        t.free(&big);
        assert!(t.has_room_for_return(1 << 19));
    }
}
