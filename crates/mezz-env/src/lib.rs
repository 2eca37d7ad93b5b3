//! File-system abstraction for Mezzanine.
//!
//! Owns: the [`FileSystem`] trait through which the engine does *all* file I/O, and its
//! implementations:
//! - [`PosixFs`]: the real file system (std::fs, `pread`, `fsync`, `flock` via std), and
//!   direct I/O (`O_DIRECT`) for tables when asked (module `direct`).
//! - [`MemFs`]: an in-memory file system that remembers what was synced and can simulate a
//!   crash (power cut): unsynced bytes are dropped (optionally keeping a random part), and
//!   files created or renamed since the last directory sync vanish or revert.
//! - [`FaultFs`]: a wrapper that injects I/O errors on read / write / sync / rename / create
//!   by countdown or probability.
//! - [`UnitFs`] (module `units`): a wrapper that charges the I/O of files in mapped directories
//!   to a [`DeviceModel`] of an SSD with parallel units (per-unit FIFO queues, flash service
//!   times, a write buffer), in real or virtual time; plus [`DeviceSpec`] to configure it from a
//!   string and [`simulate_mix`], a deterministic fio-like read/write mix on the model.
//! - [`PrefetchFile`] (module `prefetch`): a file read once from start to end, its next
//!   chunks read ahead on a thread while the caller works on the current one.
//!
//! A crash test writes through a [`MemFs`], takes [`MemFs::crash_clone`] and reopens the
//! database on the clone:
//!
//! ```
//! use std::path::Path;
//! use mezz_env::{CrashOptions, FileSystem, KeepUnsynced, MemFs};
//!
//! let fs = MemFs::new();
//! fs.create_dir_all(Path::new("/db"))?;
//! let mut wal = fs.create(Path::new("/db/000001.log"))?;
//! wal.append(b"synced")?;
//! wal.sync()?;
//! fs.sync_dir(Path::new("/db"))?;
//! wal.append(b" and lost")?;
//!
//! let after = fs.crash_clone(&CrashOptions { keep_unsynced: KeepUnsynced::None, seed: 1 });
//! assert_eq!(after.read_all(Path::new("/db/000001.log"))?, b"synced");
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Invariants: a byte is durable only after `WritableFile::sync` on its file returned Ok;
//! a file's existence (create, rename, remove) is durable only after `FileSystem::sync_dir`
//! on its parent directory returned Ok.
//!
//! Thread-safety: every `FileSystem` is `Send + Sync` and may be used from many threads at
//! once. A `WritableFile` is owned by one writer at a time (`&mut self`); a
//! `RandomAccessFile` is shared (`&self`, positional reads).

use std::fmt::Debug;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod direct;
mod fault;
mod mapped;
mod mem;
mod posix;
mod prefetch;
mod units;
mod worker;

pub use direct::{
    DIRECT_IO_ALIGN, DIRECT_WRITE_BUFFER_SIZE, DirectRandomAccessFile, DirectWritableFile,
};
pub use fault::{FaultFs, FaultOp, FaultRule, Trigger, is_injected};
pub use mem::{CrashOptions, KeepUnsynced, MemFs};
pub use posix::{AllocateFn, MapReadFn, MapWindowFn, PosixFs, WriteHintFn};
pub use prefetch::{PREFETCH_CHUNK, PREFETCH_CHUNKS_AHEAD, PrefetchFile};
pub use units::{
    Arrangement, Clock, DeviceConfig, DeviceModel, DeviceSpec, IoKind, Layout, MAX_UNITS,
    MixConfig, MixMode, MixResult, Profile, SpecLayout, UnitFs, UnitParams, UnitRandomAccessFile,
    UnitStats, UnitWritableFile, UnitsError, simulate_mix,
};

/// A file opened for appending. Writes may be buffered until `flush` or `sync`.
pub trait WritableFile: Send + Sync + Debug {
    /// Appends `data` at the end of the file.
    fn append(&mut self, data: &[u8]) -> io::Result<()>;
    /// Pushes buffered bytes to the operating system (not necessarily to stable storage).
    /// A file written with direct I/O ([`FileSystem::create_direct`]) pushes only whole
    /// blocks: an unaligned tail stays buffered until `sync` or `close`.
    fn flush(&mut self) -> io::Result<()>;
    /// Makes every byte appended so far durable (flush + fdatasync).
    fn sync(&mut self) -> io::Result<()>;
    /// Bytes appended so far (including buffered ones).
    fn size(&self) -> u64;
    /// Ends appending: the file then holds exactly the bytes appended (nothing buffered,
    /// no space reserved past them), visible to other readers, not necessarily durable.
    /// Only `sync` and `size` may follow. The default flushes.
    fn close(&mut self) -> io::Result<()> {
        self.flush()
    }
    /// Turns this file's early writeback (see `PosixFs::with_writeback`) off or back on.
    /// Off, the kernel writes the file back when it chooses, or never if the file is
    /// deleted first; back on, the next append starts writeback of everything not yet
    /// started. Advice: never changes what the file holds or when it is durable. Default:
    /// nothing (a file system without early writeback).
    fn set_early_writeback(&mut self, on: bool) {
        let _ = on;
    }
}

/// A writable shared mapping of a range of a file, unmapped when dropped (made by the
/// function given to [`PosixFs::with_mapped_logs`]; the mapping code lives in the crate that
/// holds the workspace's `unsafe`).
pub trait MappedWindow: Send + Sync + Debug {
    /// The mapped bytes: stores into them reach the file's page cache directly.
    fn bytes_mut(&mut self) -> &mut [u8];

    /// Faults every page of the window in, writable, so that later stores into it (and
    /// `pwrite`s over its range) find their pages in the page cache and mapped. Advice:
    /// errors are ignored. The default does nothing.
    fn prefault(&mut self) {}
}

/// A read-only shared mapping of a whole file, unmapped when dropped (made by the function
/// given to [`PosixFs::with_mapped_reads`]; the mapping code lives in the crate that holds
/// the workspace's `unsafe`).
pub trait MappedFile: Send + Sync + Debug {
    /// The mapped bytes: the file's page cache, read in place.
    fn bytes(&self) -> &[u8];
}

/// Copies `buf.len()` bytes at `offset` of `bytes` (the whole content of the file at
/// `path`) into `buf`: the positional read of a file held in memory (a `MemFs` file, a
/// mapped table). A range past the end is `UnexpectedEof`, as `pread` would report it.
pub(crate) fn read_bytes_at(
    bytes: &[u8],
    offset: u64,
    buf: &mut [u8],
    path: &Path,
) -> io::Result<()> {
    let src = usize::try_from(offset)
        .ok()
        .and_then(|start| bytes.get(start..start.checked_add(buf.len())?))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read {} bytes at {offset} of {}: past the end ({} bytes)",
                    buf.len(),
                    path.display(),
                    bytes.len()
                ),
            )
        })?;
    buf.copy_from_slice(src);
    Ok(())
}

/// A file opened for positional reads, shareable between threads.
pub trait RandomAccessFile: Send + Sync + Debug {
    /// Reads exactly `buf.len()` bytes at `offset`; fails with `UnexpectedEof` if the file is
    /// shorter.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// The file's size in bytes when it was opened.
    fn size(&self) -> u64;
}

/// How long the data written to a file is expected to live, relative to the other files
/// (Linux's write-lifetime hints: a device with streams or flexible data placement keeps
/// data of similar lifetime together, so it is erased together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteLifetime {
    /// Rewritten soon (L0 and L1 tables).
    Short,
    /// L2 tables.
    Medium,
    /// L3 tables.
    Long,
    /// The deepest levels, rewritten least often.
    Extreme,
}

/// A held lock on a file; released when dropped.
pub trait FileLock: Send + Sync + Debug {}

/// The file-system operations the engine uses. Paths are absolute or relative to the process'
/// working directory; the engine always passes paths inside its DB directory.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// [`FileSystem::create`] with a hint of how long the data will live; the hint is
    /// advisory (a file system that cannot pass it on ignores it, as the default does).
    fn create_with_hint(
        &self,
        path: &Path,
        _lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Creates (or truncates) a log file that is only appended to and read back after the
    /// writer is gone (a WAL). A file system may write it differently from other files
    /// (the real one, when asked, through a memory mapping); the one difference a reader
    /// can see is that, if the writer never reached [`WritableFile::close`] (a crash), the
    /// file may end in zero bytes after what was appended. The default is `create`.
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// [`FileSystem::create_with_hint`] for a file whose writes bypass the page cache where
    /// the file system can (the real one: `O_DIRECT`, see [`DirectWritableFile`]), for the
    /// tables flushes and compactions write (`use_direct_io_for_flush_and_compaction`).
    /// What the file holds, `size`, `sync` and `close` behave as for `create_with_hint`'s
    /// files; `flush` pushes only whole blocks. A file system that refuses direct I/O fails
    /// here (`InvalidInput`, naming the path). The default is `create_with_hint`.
    fn create_direct(
        &self,
        path: &Path,
        lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        self.create_with_hint(path, lifetime)
    }
    /// Opens an existing file for appending at its end (used to reuse a WAL).
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens an existing file for positional reads.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>>;
    /// Opens an existing file that nothing writes any more (a finished table) for
    /// positional reads through a read-only memory mapping where the file system maps
    /// reads ([`PosixFs::with_mapped_reads`]); reads return the same bytes as
    /// [`FileSystem::open_read`]'s. The default is `open_read`.
    fn open_read_mapped(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.open_read(path)
    }
    /// Opens an existing file that nothing writes any more (a finished table) for
    /// positional reads that bypass the page cache where the file system can (the real
    /// one: `O_DIRECT`, see [`DirectRandomAccessFile`]; `use_direct_reads`); reads return
    /// the same bytes as [`FileSystem::open_read`]'s. A file system that refuses direct I/O
    /// fails here (`InvalidInput`, naming the path). The default is `open_read`.
    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.open_read(path)
    }
    /// Reads a whole file into memory.
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let f = self.open_read(path)?;
        let len = usize::try_from(f.size())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large"))?;
        let mut buf = vec![0u8; len];
        f.read_exact_at(0, &mut buf)?;
        Ok(buf)
    }
    /// Whether a file or directory exists.
    fn exists(&self, path: &Path) -> bool;
    /// The size of a file in bytes.
    fn file_size(&self, path: &Path) -> io::Result<u64>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Atomically renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes `to` a second name of the existing file `from` (a hard link), for files that
    /// are never written again (a checkpoint's tables). Fails if `to` exists, if the two
    /// paths are on different file systems, or where the file system has no links: the
    /// default returns `Unsupported`, and the caller copies instead.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let _ = (from, to);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system has no hard links",
        ))
    }
    /// Creates a directory and its parents; Ok if it exists.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory (`destroy_db`'s last step). The default does nothing: file
    /// systems whose directories exist only through their files (the in-memory ones) have
    /// nothing to remove.
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let _ = path;
        Ok(())
    }
    /// Names (not paths) of the entries of a directory, in no particular order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (created if missing). Fails with
    /// `io::ErrorKind::WouldBlock` if another holder, in this process or another, has it.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>>;
}

/// Joins a directory and a file name.
#[must_use]
pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}
