//! The storage layer: where a table's bytes live, and the operations on those places.
//!
//! Owns: [`Storage`], which resolves a [`TableLocation`] (an SST file in one of the SSD
//! directories, or an NVM object) to something to read or write, and owns create, remove,
//! sync and list per directory and per NVM pool; and [`nvm`] (the NVM pool and its
//! objects). Nothing else in the engine builds a table's path: flushes and compactions
//! create tables here (through a table sink), the table cache opens them here, and clean-up
//! removes them here.
//!
//! Directories: index 0 is the database directory (which also holds the WALs, the MANIFEST,
//! CURRENT and the other metadata files); further indexes are the `ssd_paths` (parallel
//! units) that hold table files only. A table records its directory index in the manifest
//! (`TableLocation::Sst { path_id }`), so the order of the directories must stay the same
//! from one open to the next: each further directory holds a `UNIT` file naming the database
//! and its index, checked at open ([`Storage::check_units`]), so a missing, swapped or
//! foreign directory is refused with a clear error. With further directories, new tables go
//! only to them ([`Storage::table_units`]); tables already in the database directory stay
//! readable there. Every SST read and write is counted per directory ([`UnitIo`]); an SST
//! written with a pace syncs itself every so many bytes (placement's write pacing).
//!
//! Direct I/O (`use_direct_reads`, `use_direct_io_for_flush_and_compaction`): tables are
//! then opened and created through the file system's direct variants
//! (`FileSystem::open_read_direct`, `FileSystem::create_direct`), and open checks that every
//! directory's file system takes `O_DIRECT` ([`Storage::check_direct_io`]). Table readers
//! read compaction inputs and verifications [`SCAN_READAHEAD`] bytes at a time
//! ([`Storage::scan_readahead`]), since the kernel reads nothing ahead for them.
//!
//! Invariants: a table's location never changes while it is in a version (moving a table
//! between tiers makes a new table); removing a table that is gone already is not an error
//! (clean-up is best effort and idempotent).
//!
//! Thread-safety: `Storage` is immutable after construction and shared through `Arc`; the
//! file system and the NVM tier do their own locking.

pub mod matrix;
pub mod nvm;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::{FileSystem, RandomAccessFile, WritableFile, WriteLifetime};
use mezz_format::KeyOrder;
use mezz_util::counter::StripedCounters;

use crate::base::meta::{TableLocation, TableMeta};
use crate::error::{Error, Result};
use crate::filename::{self, FileType};
pub use crate::stats::UnitStats;
use nvm::NvmTier;

/// The places one database keeps its tables: SSD directories and, optionally, an NVM pool.
#[derive(Debug)]
pub struct Storage {
    fs: Arc<dyn FileSystem>,
    /// SSD directories by index; `dirs[0]` is the database directory.
    dirs: Vec<PathBuf>,
    /// I/O counters per directory.
    io: Vec<Arc<UnitIo>>,
    nvm: Option<Arc<NvmTier>>,
    /// The matrix container's page space (MatrixKV's L0 rows), if the database has one.
    matrix: Option<Arc<matrix::MatrixSpace>>,
    /// SSTs are read through memory mappings (`mmap_reads`).
    mapped_reads: bool,
    /// SSTs are read with direct I/O (`use_direct_reads`).
    direct_reads: bool,
    /// SSTs are written with direct I/O (`use_direct_io_for_flush_and_compaction`).
    direct_writes: bool,
    /// The order of keys in every table (`Options::comparator`).
    order: KeyOrder,
}

/// Bytes a whole-table scan (a compaction's input, a verification) reads at a time from an
/// SST read with direct I/O: RocksDB's `compaction_readahead_size` for direct I/O.
pub const SCAN_READAHEAD: usize = 2 << 20;

/// SST I/O through one directory since open: reads, read bytes, writes, write bytes
/// (`UnitIo::READS` ...), striped by thread (reader threads add on every block read).
#[derive(Debug, Default)]
pub struct UnitIo(StripedCounters<4>);

impl UnitIo {
    const READS: usize = 0;
    const READ_BYTES: usize = 1;
    const WRITES: usize = 2;
    const WRITE_BYTES: usize = 3;
}

/// The write-lifetime hint for an SST of `level`: upper levels are rewritten soon, the
/// deeper a level the longer its tables live.
#[must_use]
pub fn write_life_for_level(level: usize) -> WriteLifetime {
    match level {
        0 | 1 => WriteLifetime::Short,
        2 => WriteLifetime::Medium,
        3 => WriteLifetime::Long,
        _ => WriteLifetime::Extreme,
    }
}

pub use crate::filename::UNIT_FILE;

/// The text of a `UNIT` file: the database id and the directory's index.
fn unit_text(db_id: &[u8; 16], index: u32) -> String {
    format!(
        "mezzanine unit {index} of database {}\n",
        mezz_pmem::pool::db_id_hex(db_id)
    )
}

/// Parses a `UNIT` file: (index, database id hex).
fn parse_unit(bytes: &[u8]) -> Option<(u32, String)> {
    let text = std::str::from_utf8(bytes).ok()?.strip_suffix('\n')?;
    let rest = text.strip_prefix("mezzanine unit ")?;
    let (index, id) = rest.split_once(" of database ")?;
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((index.parse().ok()?, id.to_string()))
}

/// An SST being written: its appends are counted against its unit, and with a `pace`
/// it is synced whenever `pace` bytes were appended since its last sync (placement's
/// write pacing: at most that much of it queues on the unit ahead of a read).
struct CountedWrite {
    inner: Box<dyn WritableFile>,
    io: Arc<UnitIo>,
    /// 0: never synced early.
    pace: u64,
    unsynced: u64,
}

impl std::fmt::Debug for CountedWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl WritableFile for CountedWrite {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.io.0.add(UnitIo::WRITES, 1);
        self.io.0.add(UnitIo::WRITE_BYTES, data.len() as u64);
        self.inner.append(data)?;
        self.unsynced += data.len() as u64;
        if self.pace > 0 && self.unsynced >= self.pace {
            self.sync()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()?;
        self.unsynced = 0;
        Ok(())
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn close(&mut self) -> io::Result<()> {
        self.inner.close()
    }
    fn set_early_writeback(&mut self, on: bool) {
        self.inner.set_early_writeback(on);
    }
}

struct CountedRead {
    inner: Arc<dyn RandomAccessFile>,
    io: Arc<UnitIo>,
}

impl std::fmt::Debug for CountedRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl RandomAccessFile for CountedRead {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.io.0.add(UnitIo::READS, 1);
        self.io.0.add(UnitIo::READ_BYTES, buf.len() as u64);
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl Storage {
    /// Storage over the database directory `db_dir` (index 0), the further SSD directories
    /// `more_dirs` (indexes 1, 2, ...) and the NVM tier, if any.
    #[must_use]
    pub fn new(
        fs: Arc<dyn FileSystem>,
        db_dir: PathBuf,
        more_dirs: Vec<PathBuf>,
        nvm: Option<Arc<NvmTier>>,
    ) -> Self {
        let mut dirs = Vec::with_capacity(1 + more_dirs.len());
        dirs.push(db_dir);
        dirs.extend(more_dirs);
        let io = dirs.iter().map(|_| Arc::default()).collect();
        Self {
            fs,
            dirs,
            io,
            nvm,
            matrix: None,
            mapped_reads: false,
            direct_reads: false,
            direct_writes: false,
            order: KeyOrder::bytewise(),
        }
    }

    /// The same storage, its tables ordered by `order` (`Options::comparator`; bytewise
    /// unless set).
    #[must_use]
    pub fn with_order(mut self, order: KeyOrder) -> Self {
        self.order = order;
        self
    }

    /// The order of keys in every table.
    #[must_use]
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

    /// The same storage, reading SSTs through memory mappings if `on` (`mmap_reads`; where
    /// the file system maps reads, see `FileSystem::open_read_mapped`).
    #[must_use]
    pub fn with_mapped_reads(mut self, on: bool) -> Self {
        self.mapped_reads = on;
        self
    }

    /// The same storage, reading SSTs with direct I/O if `reads` (`use_direct_reads`) and
    /// writing them with direct I/O if `writes` (`use_direct_io_for_flush_and_compaction`;
    /// where the file system does direct I/O, see `FileSystem::open_read_direct` and
    /// `FileSystem::create_direct`). Direct reads take precedence over mapped ones (the
    /// options refuse both together).
    #[must_use]
    pub fn with_direct_io(mut self, reads: bool, writes: bool) -> Self {
        self.direct_reads = reads;
        self.direct_writes = writes;
        self
    }

    /// Bytes a scan of a whole SST (a compaction's input, a verification) should read at a
    /// time: [`SCAN_READAHEAD`] with direct reads, where the kernel reads nothing ahead; 0
    /// (one read per block, the kernel's read-ahead doing the rest) otherwise.
    #[must_use]
    pub fn scan_readahead(&self) -> usize {
        if self.direct_reads { SCAN_READAHEAD } else { 0 }
    }

    /// Checks, at open, that the file system of every SSD directory takes direct I/O if
    /// the options ask for it, by opening a file already there (the database directory's
    /// `LOCK`, a further directory's `UNIT`) with it, as RocksDB opens its `IDENTITY` file
    /// with direct reads at open.
    ///
    /// # Errors
    /// `InvalidArgument` naming the option and the directory if its file system refuses
    /// direct I/O (the file opens without it); `Io` naming the file if it does not open
    /// at all.
    pub fn check_direct_io(&self) -> Result<()> {
        let option = match (self.direct_reads, self.direct_writes) {
            (false, false) => return Ok(()),
            (true, false) => "use_direct_reads",
            (false, true) => "use_direct_io_for_flush_and_compaction",
            (true, true) => "use_direct_reads and use_direct_io_for_flush_and_compaction",
        };
        for (i, dir) in self.dirs.iter().enumerate() {
            let probe = if i == 0 {
                filename::lock_file(dir)
            } else {
                dir.join(UNIT_FILE)
            };
            let Err(e) = self.fs.open_read_direct(&probe) else {
                continue;
            };
            if self.fs.open_read(&probe).is_err() {
                return Err(Error::from(e).in_file(&probe));
            }
            return Err(Error::InvalidArgument(format!(
                "{option}: the file system of {} does not support direct I/O (O_DIRECT) \
                 ({e}); turn {} off or keep the database on a file system that supports it",
                dir.display(),
                if self.direct_reads && self.direct_writes {
                    "both options"
                } else {
                    "the option"
                }
            )));
        }
        Ok(())
    }

    /// The same storage with the matrix container's page space `m`.
    #[must_use]
    pub fn with_matrix(mut self, m: Option<Arc<matrix::MatrixSpace>>) -> Self {
        self.matrix = m;
        self
    }

    /// The matrix container's page space, if the database has one.
    #[must_use]
    pub fn matrix(&self) -> Option<&Arc<matrix::MatrixSpace>> {
        self.matrix.as_ref()
    }

    /// The directory indexes new tables go to: the further SSD directories if there are
    /// any, else the database directory.
    #[must_use]
    pub fn table_units(&self) -> Vec<u32> {
        if self.dirs.len() == 1 {
            vec![0]
        } else {
            (1..self.dirs.len())
                .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
                .collect()
        }
    }

    /// Checks (and, where allowed, prepares) every further SSD directory at open:
    /// - a missing directory is created if the database keeps nothing there and
    ///   `create_if_missing` allows, else refused;
    /// - its `UNIT` file must name this database and this index (a directory of another
    ///   database, or one moved to another position of `ssd_paths`, is refused);
    /// - a directory without `UNIT` gets one (a new unit), unless the version keeps tables
    ///   there (then the directory is not the one the database wrote to).
    ///
    /// Returns the largest table number found in any directory (0 if none), so new file
    /// numbers stay above leftovers. `temp_number` allocates numbers for temporary files.
    ///
    /// # Errors
    /// `InvalidArgument` naming the directory for each refusal above; `Corruption` for an
    /// unreadable `UNIT`; `Io`.
    pub fn check_units(
        &self,
        db_id: &[u8; 16],
        create_if_missing: bool,
        tables: &[&TableMeta],
        temp_number: &dyn Fn() -> u64,
    ) -> Result<u64> {
        let id_hex = mezz_pmem::pool::db_id_hex(db_id);
        for (i, dir) in self.dirs.iter().enumerate().skip(1) {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            let kept = tables
                .iter()
                .filter(|t| t.location == TableLocation::Sst { path_id: index })
                .count();
            let position = i - 1;
            if !self.fs.exists(dir) {
                if kept > 0 || !create_if_missing {
                    return Err(Error::InvalidArgument(format!(
                        "SSD directory {} (ssd_paths[{position}]) does not exist{}",
                        dir.display(),
                        if kept > 0 {
                            format!(", and the database keeps {kept} tables there")
                        } else {
                            " (create_if_missing is false)".into()
                        }
                    )));
                }
                self.fs
                    .create_dir_all(dir)
                    .map_err(|e| Error::from(e).in_file(dir))?;
                // The new directory's entry becomes durable before anything names it.
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    self.fs
                        .sync_dir(parent)
                        .map_err(|e| Error::from(e).in_file(parent))?;
                }
            }
            let unit = dir.join(UNIT_FILE);
            if self.fs.exists(&unit) {
                let bytes = self
                    .fs
                    .read_all(&unit)
                    .map_err(|e| Error::from(e).in_file(&unit))?;
                let (found, owner) = parse_unit(&bytes).ok_or_else(|| Error::Corruption {
                    file: Some(unit.clone()),
                    offset: 0,
                    detail: "not a UNIT file (\"mezzanine unit <n> of database <id>\")".into(),
                })?;
                if owner != id_hex {
                    return Err(Error::InvalidArgument(format!(
                        "SSD directory {} (ssd_paths[{position}]) belongs to another database \
                         ({owner}, this one is {id_hex})",
                        dir.display()
                    )));
                }
                if found != index {
                    return Err(Error::InvalidArgument(format!(
                        "SSD directory {} is unit {found} of this database (ssd_paths[{}]) but \
                         is given as ssd_paths[{position}]: the order of ssd_paths must not \
                         change between opens",
                        dir.display(),
                        found.saturating_sub(1)
                    )));
                }
            } else {
                if kept > 0 {
                    return Err(Error::InvalidArgument(format!(
                        "SSD directory {} (ssd_paths[{position}]) has no {UNIT_FILE} file, but \
                         the database keeps {kept} tables in its unit {index}: it is not the \
                         directory the database wrote to",
                        dir.display()
                    )));
                }
                filename::write_file_atomically(
                    self.fs.as_ref(),
                    dir,
                    &unit,
                    unit_text(db_id, index).as_bytes(),
                    temp_number(),
                )?;
            }
        }
        Ok(self
            .list_tables()?
            .iter()
            .map(|&(n, _)| n)
            .max()
            .unwrap_or(0))
    }

    /// Per-directory bytes (of `tables`: the current version's) and I/O since open.
    #[must_use]
    pub fn unit_stats<'t>(&self, tables: impl Iterator<Item = &'t TableMeta>) -> Vec<UnitStats> {
        let mut out: Vec<UnitStats> = self
            .dirs
            .iter()
            .zip(&self.io)
            .enumerate()
            .map(|(i, (dir, io))| UnitStats {
                path_id: u32::try_from(i).unwrap_or(u32::MAX),
                path: dir.clone(),
                reads: io.0.get(UnitIo::READS),
                read_bytes: io.0.get(UnitIo::READ_BYTES),
                writes: io.0.get(UnitIo::WRITES),
                write_bytes: io.0.get(UnitIo::WRITE_BYTES),
                ..UnitStats::default()
            })
            .collect();
        for t in tables {
            if let TableLocation::Sst { path_id } = t.location
                && let Some(u) = out.get_mut(path_id as usize)
            {
                u.tables += 1;
                u.bytes += t.size;
            }
        }
        out
    }

    fn unit_io(&self, path_id: u32) -> Arc<UnitIo> {
        self.io.get(path_id as usize).cloned().unwrap_or_default()
    }

    /// Returns the extents of `objects` to the NVM pool (no-op without an NVM tier).
    pub fn free_nvm(&self, objects: &[nvm::NvmObject]) {
        if let Some(tier) = &self.nvm {
            for o in objects {
                tier.free(o);
            }
        }
    }

    /// From here on the NVM pool gives out nothing (at close: its free list is this
    /// handle's view, which the next open of the database does not share).
    pub fn close_nvm(&self) {
        if let Some(tier) = &self.nvm {
            tier.close();
        }
    }

    /// Gives the matrix container's pages that none of the `alive` tables uses back to it
    /// (no-op without a container).
    pub fn release_unused_rows<'a>(&self, alive: impl Iterator<Item = &'a TableMeta>) {
        if let Some(space) = &self.matrix {
            space.release_unused(alive);
        }
    }

    /// The records of NVM log `obj` (a WAL in the pool) and the pool file's path (for
    /// errors).
    ///
    /// # Errors
    /// `InvalidArgument` without an NVM tier; `Corruption` from a damaged log header.
    pub fn read_nvm_log(&self, obj: &nvm::NvmObject) -> Result<(Vec<u8>, PathBuf)> {
        let tier = self
            .nvm
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("NVM WAL without an NVM tier".into()))?;
        Ok((tier.read_log(obj)?, tier.dir().join(nvm::POOL_FILE)))
    }

    /// Whether tables' bytes are read straight from mapped memory (an NVM pool or a matrix
    /// container): an iterator over them must then hold off a close at every step.
    #[must_use]
    pub fn maps_table_bytes(&self) -> bool {
        self.nvm.is_some() || self.matrix.is_some()
    }

    /// Fills the NVM pool's fields of `s` (bytes persisted, the emulated cost); nothing
    /// without a pool.
    pub fn fill_nvm_stats(&self, s: &mut crate::stats::Stats) {
        if let Some(t) = &self.nvm {
            s.nvm_bytes_written = t.bytes_persisted();
            let r = t.region_stats();
            s.nvm_emulated_delay_micros = r.emulated_delay_ns / 1000;
            s.nvm_emulated_read_accesses = r.read_accesses;
            s.nvm_emulated_cache_hits = r.read_cache_hits;
            s.nvm_emulated_write_accesses = r.write_accesses;
        }
    }

    /// The number of SSD directories (the database directory and `ssd_paths`).
    #[must_use]
    pub fn dir_count(&self) -> usize {
        self.dirs.len()
    }

    /// The database directory (index 0).
    #[must_use]
    pub fn db_dir(&self) -> &Path {
        &self.dirs[0]
    }

    /// Number of SSD directories (at least 1).
    #[must_use]
    #[cfg(test)]
    pub fn num_dirs(&self) -> usize {
        self.dirs.len()
    }

    /// The NVM tier, if the database has one open.
    #[must_use]
    pub fn nvm(&self) -> Option<&Arc<NvmTier>> {
        self.nvm.as_ref()
    }

    /// SSD directory `path_id`.
    ///
    /// # Errors
    /// `Corruption` for an index no directory has (a manifest naming more directories than
    /// the options give).
    pub fn dir(&self, path_id: u32) -> Result<&Path> {
        self.dirs
            .get(path_id as usize)
            .map(PathBuf::as_path)
            .ok_or_else(|| {
                Error::corruption(
                    0,
                    format!(
                        "a table is in SSD directory {path_id}, but only {} are configured",
                        self.dirs.len()
                    ),
                )
            })
    }

    /// The SST file of table `id` in directory `path_id`.
    fn sst_path(&self, id: u64, path_id: u32) -> Result<PathBuf> {
        Ok(filename::sst_file(self.dir(path_id)?, id))
    }

    /// The file holding the bytes of table `id` at `location`: its SST file, or the NVM
    /// pool file for a table in NVM. Errors about a table name this path.
    ///
    /// # Errors
    /// As [`Storage::dir`]; `InvalidArgument` for an NVM location without an NVM tier.
    pub fn table_path(&self, id: u64, location: TableLocation) -> Result<PathBuf> {
        match location {
            TableLocation::Sst { path_id } => self.sst_path(id, path_id),
            TableLocation::Nvm { .. } | TableLocation::Row { .. } => {
                Ok(self.nvm_tier()?.dir().join(nvm::POOL_FILE))
            }
        }
    }

    /// [`Storage::table_path`] for errors: never fails (an unresolvable location gives the
    /// database directory's would-be SST path).
    #[must_use]
    pub fn describe(&self, meta: &TableMeta) -> PathBuf {
        self.table_path(meta.id, meta.location)
            .unwrap_or_else(|_| filename::sst_file(self.db_dir(), meta.id))
    }

    fn nvm_tier(&self) -> Result<&Arc<NvmTier>> {
        self.nvm.as_ref().ok_or_else(|| {
            Error::InvalidArgument("a table is in NVM, but no NVM tier is open (nvm_dir)".into())
        })
    }

    /// Creates the SST file of table `id` in directory `path_id`, with a write-lifetime
    /// hint (and with direct I/O under `use_direct_io_for_flush_and_compaction`); returns
    /// its path too. With `pace` > 0 the file syncs itself every `pace` bytes appended
    /// (the placement's write pacing, `JobPlacement::pace_bytes`).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn create_sst(
        &self,
        id: u64,
        path_id: u32,
        lifetime: WriteLifetime,
        pace: u64,
    ) -> Result<(PathBuf, Box<dyn WritableFile>)> {
        let path = self.sst_path(id, path_id)?;
        let file = if self.direct_writes {
            self.fs.create_direct(&path, lifetime)
        } else {
            self.fs.create_with_hint(&path, lifetime)
        }
        .map_err(|e| Error::from(e).in_file(&path))?;
        let file = Box::new(CountedWrite {
            inner: file,
            io: self.unit_io(path_id),
            pace,
            unsynced: 0,
        });
        Ok((path, file))
    }

    /// Opens the SST file of table `id` in directory `path_id` for reading (with direct I/O
    /// under `use_direct_reads`, through a mapping under `mmap_reads`).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn open_sst(&self, id: u64, path_id: u32) -> Result<(PathBuf, Arc<dyn RandomAccessFile>)> {
        let path = self.sst_path(id, path_id)?;
        let file = if self.direct_reads {
            self.fs.open_read_direct(&path)
        } else if self.mapped_reads {
            self.fs.open_read_mapped(&path)
        } else {
            self.fs.open_read(&path)
        }
        .map_err(|e| Error::from(e).in_file(&path))?;
        let file: Arc<dyn RandomAccessFile> = Arc::new(CountedRead {
            inner: file,
            io: self.unit_io(path_id),
        });
        Ok((path, file))
    }

    /// The size in bytes of the table's stored form (its file's size, for an SST).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn table_size(&self, meta: &TableMeta) -> Result<u64> {
        match meta.location {
            TableLocation::Sst { path_id } => {
                let path = self.sst_path(meta.id, path_id)?;
                self.fs
                    .file_size(&path)
                    .map_err(|e| Error::from(e).in_file(&path))
            }
            TableLocation::Nvm { object } => {
                let tier = self.nvm_tier()?;
                Ok(meta
                    .nvm_refs
                    .iter()
                    .filter(|r| r.object != object)
                    .filter_map(|r| tier.object(r.object).map(|x| x.len))
                    .chain(tier.object(object).map(|x| x.len))
                    .sum())
            }
            TableLocation::Row { .. } => Ok(meta.size),
        }
    }

    /// Removes the stored form of table `id` at `location`, best effort (a table that is
    /// gone already is not an error; a failure leaves a file the next open removes). An NVM
    /// table's extent is released through the manifest, not here.
    pub fn remove_table(&self, id: u64, location: TableLocation) {
        if let TableLocation::Sst { path_id } = location
            && let Ok(dir) = self.dir(path_id)
        {
            let _ = self.fs.remove_file(&filename::sst_file(dir, id));
        }
    }

    /// Syncs SSD directory `path_id` (after creating files in it, before a manifest edit
    /// names them).
    ///
    /// # Errors
    /// `Io` naming the directory.
    pub fn sync_dir(&self, path_id: u32) -> Result<()> {
        let dir = self.dir(path_id)?;
        self.fs
            .sync_dir(dir)
            .map_err(|e| Error::from(e).in_file(dir))
    }

    /// Every SST file in every SSD directory: (table id, location).
    ///
    /// # Errors
    /// `Io` naming the directory that could not be listed.
    pub fn list_tables(&self) -> Result<Vec<(u64, TableLocation)>> {
        let mut out = Vec::new();
        for (i, dir) in self.dirs.iter().enumerate() {
            let path_id = u32::try_from(i).unwrap_or(u32::MAX);
            let names = self
                .fs
                .list_dir(dir)
                .map_err(|e| Error::from(e).in_file(dir))?;
            for name in names {
                if let Some((FileType::Sst, n)) = filename::parse_file_name(&name) {
                    out.push((n, TableLocation::Sst { path_id }));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_creates_lists_and_removes_tables_per_directory() {
        let fs: Arc<dyn FileSystem> = Arc::new(mezz_env::MemFs::new());
        for d in ["/db", "/ssd1"] {
            fs.create_dir_all(Path::new(d)).unwrap();
        }
        let s = Storage::new(
            Arc::clone(&fs),
            PathBuf::from("/db"),
            vec![PathBuf::from("/ssd1")],
            None,
        );
        assert_eq!(s.num_dirs(), 2);
        let (p0, mut f0) = s.create_sst(7, 0, WriteLifetime::Short, 0).unwrap();
        let (p1, mut f1) = s.create_sst(8, 1, WriteLifetime::Extreme, 0).unwrap();
        f0.append(b"x").unwrap();
        f1.append(b"yy").unwrap();
        drop((f0, f1));
        assert_eq!(p0, filename::sst_file(Path::new("/db"), 7));
        assert_eq!(p1, filename::sst_file(Path::new("/ssd1"), 8));
        s.sync_dir(1).unwrap();
        let mut listed = s.list_tables().unwrap();
        listed.sort_by_key(|t| t.0);
        assert_eq!(
            listed,
            vec![
                (7, TableLocation::Sst { path_id: 0 }),
                (8, TableLocation::Sst { path_id: 1 })
            ]
        );
        let (_, r) = s.open_sst(8, 1).unwrap();
        assert_eq!(r.size(), 2);
        s.remove_table(8, TableLocation::Sst { path_id: 1 });
        s.remove_table(8, TableLocation::Sst { path_id: 1 });
        assert_eq!(s.list_tables().unwrap().len(), 1);
        // A directory index the options do not give is a clear error, not a panic.
        assert!(matches!(s.dir(5), Err(Error::Corruption { .. })));
        assert!(matches!(
            s.table_path(1, TableLocation::Nvm { object: 3 }),
            Err(Error::InvalidArgument(_))
        ));
    }
}
