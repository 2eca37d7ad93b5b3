//! The real file system, through `std::fs`.
//!
//! Owns: [`PosixFs`] and its file types: a buffered appender ([`PosixWritableFile`]), a
//! positional reader ([`PosixRandomAccessFile`]) and an exclusive lock guard ([`PosixFileLock`]);
//! the direct-I/O files of `create_direct` and `open_read_direct` live in `direct.rs`.
//!
//! Invariants:
//! - A writer's `size()` is the file's length at open plus every byte appended since, buffered
//!   or not. `sync` flushes the buffer, then `fdatasync`s the file.
//! - A lock is held both as an OS advisory lock (`flock` through `File::try_lock`, which excludes
//!   other processes) and as an entry in a process-wide registry of canonical paths (which
//!   excludes a second holder inside this process, since `flock` locks are per open file
//!   description and POSIX record locks are per process). The guard releases both on drop.
//!
//! - Early writeback (optional) is advice: it never changes what a file holds or when it is
//!   durable. Started in the background, it runs on one process-wide helper thread
//!   (`mezz-writeback`) on a duplicate of the file's descriptor.
//!
//! Thread-safety: `PosixFs` is stateless apart from the lock registry, which is behind a
//! `Mutex`, and the writeback helper's queue; it may be shared freely. Readers use `pread`
//! and take `&self`.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::direct::DirectWritableFile;
use crate::mapped::MappedLogFile;
use crate::worker::Worker;
use crate::{
    FileLock, FileSystem, MappedFile, MappedWindow, RandomAccessFile, WritableFile, WriteLifetime,
};

/// Size of a writer's in-memory buffer; appends at least this large bypass it.
const WRITE_BUFFER_SIZE: usize = 64 * 1024;

/// Canonical paths of the lock files held by this process.
static HELD_LOCKS: LazyLock<Mutex<HashSet<PathBuf>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

/// Sets a Linux write-lifetime hint (`RWH_WRITE_LIFE_*`, 2..=5) on an open file.
pub type WriteHintFn = fn(&File, u64) -> io::Result<()>;

/// Starts writeback of a file's dirty pages in `offset..offset + len` without waiting for
/// it (for example `sync_file_range(SYNC_FILE_RANGE_WRITE)`).
pub type WritebackFn = fn(&File, u64, u64) -> io::Result<()>;

/// Early writeback: every `bytes` bytes handed to the kernel, `start` is called on them, by
/// the writer itself or (`background`) by the helper thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Writeback {
    pub(crate) start: WritebackFn,
    pub(crate) bytes: u64,
    pub(crate) background: bool,
}

/// Maps `len` bytes of `file` from `offset` (a multiple of the page size) writable and
/// shared (for example `mmap(MAP_SHARED)`).
pub type MapWindowFn = fn(&File, u64, usize) -> io::Result<Box<dyn MappedWindow>>;

/// Maps the first `len` bytes of `file` read-only and shared (for example
/// `mmap(PROT_READ, MAP_SHARED)`).
pub type MapReadFn = fn(&File, usize) -> io::Result<Box<dyn MappedFile>>;

/// Reserves disk space for `offset..offset + len` of `file`, growing it to at least
/// `offset + len` bytes of zeros (for example `fallocate` with mode 0), so that stores into
/// a mapping of that range never need space the disk does not have.
pub type AllocateFn = fn(&File, u64, u64) -> io::Result<()>;

/// One writer's early writeback: its configuration and where the last started range ended.
#[derive(Debug)]
pub(crate) struct WritebackCursor {
    config: Option<Writeback>,
    /// End of the range whose writeback was last started (or that was last synced).
    to: u64,
    /// Turned off by the file's owner (`WritableFile::set_early_writeback`).
    off: bool,
}

impl WritebackCursor {
    /// Writeback per `config` (none if `None`) of what is written after `from` bytes.
    pub(crate) fn new(config: Option<Writeback>, from: u64) -> Self {
        Self {
            config,
            to: from,
            off: false,
        }
    }

    /// Turns starting writeback off or back on (`WritableFile::set_early_writeback`).
    pub(crate) fn set_on(&mut self, on: bool) {
        self.off = !on;
    }

    /// Starts writeback of what was handed to the kernel since the last start (`written`
    /// bytes of `file` in all), once that is at least the configured amount: on the helper
    /// thread or here, as configured. Errors are ignored: the call is advice.
    pub(crate) fn advance(&mut self, file: &File, written: u64) {
        let Some(w) = self.config.filter(|_| !self.off) else {
            return;
        };
        if written.saturating_sub(self.to) >= w.bytes {
            let (offset, len) = (self.to, written - self.to);
            if w.background {
                start_in_background(w.start, file, offset, len);
            } else {
                let _ = (w.start)(file, offset, len);
            }
            self.to = written;
        }
    }

    /// The first `written` bytes are durable: no writeback to start for them any more.
    pub(crate) fn synced(&mut self, written: u64) {
        self.to = written;
    }
}

/// The thread that starts writeback of ranges handed to it (`mezz-writeback`).
static WRITEBACK: Worker = Worker::new("mezz-writeback");

/// Hands `offset..offset + len` of `file` to the writeback helper thread, or starts its
/// writeback here if the helper or a duplicate descriptor cannot be had.
///
/// Why a helper: starting writeback submits block I/O, which wakes the block layer's
/// high-priority workers on the submitting CPU, and they preempt the thread that submitted.
/// For a WAL that thread is the one a client waits on (measured: an open-loop client woke
/// `kblockd` about once per MiB of WAL and was preempted about 2.7 times as often as
/// RocksDB's, which starts no writeback on its WAL by default).
pub(crate) fn start_in_background(start: WritebackFn, file: &File, offset: u64, len: u64) {
    let queued = file.try_clone().is_ok_and(|dup| {
        WRITEBACK
            .run(Box::new(move || {
                let _ = start(&dup, offset, len);
            }))
            .is_ok()
    });
    if !queued {
        let _ = start(file, offset, len);
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFs {
    /// Passes [`WriteLifetime`] hints to the kernel, if set (the system call needs
    /// `unsafe`, which this crate does not hold: the caller injects it).
    write_hint: Option<WriteHintFn>,
    /// Starts writeback of what files wrote, every so many bytes, if set (injected for the
    /// same reason).
    writeback: Option<Writeback>,
    /// Writes logs ([`FileSystem::create_log`]) through a memory mapping, if set.
    mapped_logs: Option<(MapWindowFn, AllocateFn)>,
    /// Reads finished files ([`FileSystem::open_read_mapped`]) through a memory mapping,
    /// if set.
    mapped_reads: Option<MapReadFn>,
}

impl PosixFs {
    /// Returns a handle to the real file system (write-lifetime hints are not passed on).
    #[must_use]
    pub fn new() -> Self {
        Self {
            write_hint: None,
            writeback: None,
            mapped_logs: None,
            mapped_reads: None,
        }
    }

    /// The real file system, passing write-lifetime hints on with `set_hint` (for example
    /// `fcntl(F_SET_RW_HINT)`); its errors are ignored, since hints are advisory.
    #[must_use]
    pub fn with_write_hints(set_hint: WriteHintFn) -> Self {
        Self {
            write_hint: Some(set_hint),
            writeback: None,
            mapped_logs: None,
            mapped_reads: None,
        }
    }

    /// Every file written through this file system calls `start` on each further `bytes`
    /// bytes it hands to the kernel (`bytes` 0: never), so the kernel writes them back
    /// while the file grows and a later sync has little left to wait for (RocksDB's
    /// `bytes_per_sync`). Advisory: its errors are ignored, and it makes nothing durable.
    #[must_use]
    pub fn with_writeback(mut self, start: WritebackFn, bytes: u64) -> Self {
        self.writeback = (bytes > 0).then_some(Writeback {
            start,
            bytes,
            background: false,
        });
        self
    }

    /// As [`PosixFs::with_writeback`], but for files created without a lifetime hint (WALs,
    /// manifests: written on the caller's thread) `start` runs on a helper thread (one per
    /// process) instead of the thread that writes, so a WAL writer never submits the I/O
    /// itself; tables (created with a hint, written by background threads) keep starting
    /// it themselves. A range is handed over with a duplicate of the file's descriptor, so
    /// the writer may close the file meanwhile.
    #[must_use]
    pub fn with_background_writeback(mut self, start: WritebackFn, bytes: u64) -> Self {
        self.writeback = (bytes > 0).then_some(Writeback {
            start,
            bytes,
            background: true,
        });
        self
    }

    /// Logs created with [`FileSystem::create_log`] are written through a shared memory
    /// mapping (`map`) of space reserved ahead (`allocate`) a window of 1 MiB at a time, so
    /// an append is a copy into the page cache rather than a `write` system call (measured
    /// on this project's 2-vCPU VM: the `write` path was 29 % of a single-threaded fill of
    /// 100-byte values). Closing the writer truncates the file to what was appended; a
    /// writer that never closed (a crash) leaves up to 1 MiB of zeros after the records,
    /// which the log reader reports as a torn tail. Where reserving or mapping fails (a file
    /// system without `fallocate`), the log is written the ordinary way. Other files are
    /// unaffected.
    #[must_use]
    pub fn with_mapped_logs(mut self, map: MapWindowFn, allocate: AllocateFn) -> Self {
        self.mapped_logs = Some((map, allocate));
        self
    }

    /// Files opened with [`FileSystem::open_read_mapped`] (finished tables) are read
    /// through a read-only shared mapping of the whole file made by `map`: a read is a copy
    /// from the page cache without a system call, and the pages it touches are mapped into
    /// the process, where a kernel that pages out cold page cache on its own (DAMON's
    /// `pageout` of unmapped file pages, for one) leaves them alone. An empty file, or one
    /// `map` fails on, is read the ordinary way. The file must not shrink while it is
    /// open: a read of a page past a truncated end is a `SIGBUS` (the same contract as
    /// LevelDB's and RocksDB's memory-mapped table reads).
    #[must_use]
    pub fn with_mapped_reads(mut self, map: MapReadFn) -> Self {
        self.mapped_reads = Some(map);
        self
    }

    /// A writer appending to `file` (`size` bytes long), with this file system's writeback.
    /// `hinted`: the file was created with a lifetime hint (a table, which background
    /// threads write), so its writeback starts on the writing thread, which runs at the
    /// background threads' priority, even where others' goes to the helper (measured: with
    /// tables' writeback on the helper too, reads right after a fill, while compactions
    /// ran, were 7-8 % slower in two pairs of runs).
    fn writer(&self, file: File, path: &Path, size: u64, hinted: bool) -> Box<dyn WritableFile> {
        let writeback = self.writeback.map(|w| Writeback {
            background: w.background && !hinted,
            ..w
        });
        Box::new(PosixWritableFile::new(file, path, size, writeback))
    }
}

/// Creates (or truncates) `path` for writing, and for reading too if `readable` (a shared
/// writable mapping of it needs that).
fn create_truncated(path: &Path, readable: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(readable)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| with_path(e, "create", path))
}

/// Linux's `RWH_WRITE_LIFE_SHORT..EXTREME` for a lifetime.
fn lifetime_hint(lifetime: WriteLifetime) -> u64 {
    match lifetime {
        WriteLifetime::Short => 2,
        WriteLifetime::Medium => 3,
        WriteLifetime::Long => 4,
        WriteLifetime::Extreme => 5,
    }
}

/// Adds the path to an error's message, keeping its kind.
pub(crate) fn with_path(err: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

impl FileSystem for PosixFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = create_truncated(path, false)?;
        Ok(self.writer(file, path, 0, false))
    }

    fn create_with_hint(
        &self,
        path: &Path,
        lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        let file = create_truncated(path, false)?;
        if let Some(set_hint) = self.write_hint {
            // Advisory: a kernel or file system without hints refuses it, which changes
            // nothing.
            let _ = set_hint(&file, lifetime_hint(lifetime));
        }
        Ok(self.writer(file, path, 0, true))
    }

    fn create_direct(
        &self,
        path: &Path,
        lifetime: WriteLifetime,
    ) -> io::Result<Box<dyn WritableFile>> {
        let file = crate::direct::create(path)?;
        if let Some(set_hint) = self.write_hint {
            let _ = set_hint(&file, lifetime_hint(lifetime));
        }
        // No early writeback: direct writes leave no dirty pages to start it on.
        Ok(Box::new(DirectWritableFile::new(file, path)))
    }

    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let Some((map, allocate)) = self.mapped_logs else {
            return self.create(path);
        };
        let file = create_truncated(path, true)?;
        // A writer that fails to reserve or map its first window truncates the file back to
        // empty as it drops; the log is then written the ordinary way.
        if let Ok(w) = file
            .try_clone()
            .and_then(|dup| MappedLogFile::create(dup, path, map, allocate, self.writeback))
        {
            return Ok(Box::new(w));
        }
        Ok(self.writer(file, path, 0, false))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| with_path(e, "open for append", path))?;
        let len = file
            .metadata()
            .map_err(|e| with_path(e, "stat", path))?
            .len();
        Ok(self.writer(file, path, len, false))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| with_path(e, "open", path))?;
        let size = file
            .metadata()
            .map_err(|e| with_path(e, "stat", path))?
            .len();
        Ok(Arc::new(PosixRandomAccessFile {
            file,
            size,
            path: path.to_path_buf(),
        }))
    }

    fn open_read_mapped(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let Some(map) = self.mapped_reads else {
            return self.open_read(path);
        };
        let file = File::open(path).map_err(|e| with_path(e, "open", path))?;
        let size = file
            .metadata()
            .map_err(|e| with_path(e, "stat", path))?
            .len();
        let mapped = usize::try_from(size)
            .ok()
            .filter(|&len| len > 0)
            .and_then(|len| map(&file, len).ok());
        Ok(match mapped {
            Some(map) => Arc::new(MappedRandomAccessFile {
                map,
                size,
                path: path.to_path_buf(),
            }),
            None => Arc::new(PosixRandomAccessFile {
                file,
                size,
                path: path.to_path_buf(),
            }),
        })
    }

    fn open_read_direct(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(crate::direct::open_read(path)?))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)
            .map_err(|e| with_path(e, "stat", path))?
            .len())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path).map_err(|e| with_path(e, "remove", path))
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path).map_err(|e| with_path(e, "remove", path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("rename {} to {}: {e}", from.display(), to.display()),
            )
        })
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("link {} to {}: {e}", from.display(), to.display()),
            )
        })
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path).map_err(|e| with_path(e, "create directory", path))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(path).map_err(|e| with_path(e, "list", path))? {
            let entry = entry.map_err(|e| with_path(e, "list", path))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let dir = File::open(path).map_err(|e| with_path(e, "open directory", path))?;
        dir.sync_all()
            .map_err(|e| with_path(e, "sync directory", path))
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| with_path(e, "open lock file", path))?;
        let canonical = fs::canonicalize(path).map_err(|e| with_path(e, "resolve", path))?;
        {
            let mut held = HELD_LOCKS.lock();
            if !held.insert(canonical.clone()) {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("lock {}: already held in this process", path.display()),
                ));
            }
        }
        match file.try_lock() {
            Ok(()) => Ok(Box::new(PosixFileLock {
                file,
                path: canonical,
            })),
            Err(err) => {
                HELD_LOCKS.lock().remove(&canonical);
                Err(match err {
                    fs::TryLockError::WouldBlock => io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!("lock {}: held by another process", path.display()),
                    ),
                    fs::TryLockError::Error(e) => with_path(e, "lock", path),
                })
            }
        }
    }
}

/// A buffered appender over a real file.
#[derive(Debug)]
pub struct PosixWritableFile {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    /// Bytes in the file plus bytes in `buf`.
    size: u64,
    /// Early writeback, if the file system asks for it (from the file's size at open).
    writeback: WritebackCursor,
}

impl PosixWritableFile {
    fn new(file: File, path: &Path, size: u64, writeback: Option<Writeback>) -> Self {
        Self {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER_SIZE),
            size,
            writeback: WritebackCursor::new(writeback, size),
        }
    }

    /// Bytes handed to the kernel so far.
    fn written(&self) -> u64 {
        self.size - self.buf.len() as u64
    }

    /// Starts writeback of what was handed to the kernel, as the file system asks.
    fn maybe_start_writeback(&mut self) {
        let written = self.written();
        self.writeback.advance(&self.file, written);
    }

    fn write_buffer(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all(&self.buf);
        // On error the file may hold any prefix of the buffer; the writer is not usable
        // reliably after a failed write, so the buffer is dropped either way rather than
        // written twice.
        self.buf.clear();
        result.map_err(|e| with_path(e, "write", &self.path))?;
        self.maybe_start_writeback();
        Ok(())
    }
}

impl WritableFile for PosixWritableFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.buf.len() + data.len() > WRITE_BUFFER_SIZE {
            self.write_buffer()?;
        }
        if data.len() >= WRITE_BUFFER_SIZE {
            self.file
                .write_all(data)
                .map_err(|e| with_path(e, "write", &self.path))?;
            self.size += data.len() as u64;
            self.maybe_start_writeback();
        } else {
            self.buf.extend_from_slice(data);
            self.size += data.len() as u64;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_buffer()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.write_buffer()?;
        self.file
            .sync_data()
            .map_err(|e| with_path(e, "sync", &self.path))?;
        // Everything written is durable: no writeback to start for it any more.
        self.writeback.synced(self.written());
        Ok(())
    }

    fn set_early_writeback(&mut self, on: bool) {
        self.writeback.set_on(on);
    }

    fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for PosixWritableFile {
    fn drop(&mut self) {
        // Best effort: an error here has nowhere to go; callers that care call `flush`/`sync`.
        let _ = self.write_buffer();
    }
}

/// A positional reader over a real file.
#[derive(Debug)]
pub struct PosixRandomAccessFile {
    file: File,
    size: u64,
    path: PathBuf,
}

impl RandomAccessFile for PosixRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "read {} bytes at {offset} of {}: {e}",
                    buf.len(),
                    self.path.display()
                ),
            )
        })
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// A positional reader over a read-only mapping of a whole file (see
/// [`PosixFs::with_mapped_reads`]).
#[derive(Debug)]
pub struct MappedRandomAccessFile {
    map: Box<dyn MappedFile>,
    size: u64,
    path: PathBuf,
}

impl RandomAccessFile for MappedRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        crate::read_bytes_at(self.map.bytes(), offset, buf, &self.path)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// An exclusive lock on a file, held by this process until dropped.
#[derive(Debug)]
pub struct PosixFileLock {
    file: File,
    path: PathBuf,
}

impl FileLock for PosixFileLock {}

impl Drop for PosixFileLock {
    fn drop(&mut self) {
        // Closing the file would release the OS lock too; unlock explicitly anyway.
        let _ = self.file.unlock();
        HELD_LOCKS.lock().remove(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_link_names_the_same_bytes_and_refuses_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::new();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        let mut w = fs.create(&a).unwrap();
        w.append(b"table bytes").unwrap();
        w.close().unwrap();
        fs.hard_link(&a, &b).unwrap();
        assert_eq!(fs.read_all(&b).unwrap(), b"table bytes");
        fs.remove_file(&a).unwrap();
        assert_eq!(fs.read_all(&b).unwrap(), b"table bytes");
        let err = fs.hard_link(&b, &b).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains("link"), "{err}");
    }

    /// Ranges passed to the first test's writeback function.
    static STARTED: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

    fn record_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
        // The range was handed to the kernel before it is passed on.
        assert!(file.metadata()?.len() >= offset + len);
        STARTED.lock().push((offset, len));
        Ok(())
    }

    /// Ranges passed to the second test's writeback function, with whether the file held
    /// them then and the name of the thread that ran it.
    type BackgroundStart = (u64, u64, bool, Option<String>);
    static STARTED_BG: Mutex<Vec<BackgroundStart>> = Mutex::new(Vec::new());

    fn record_background(file: &File, offset: u64, len: u64) -> io::Result<()> {
        let held = file.metadata()?.len() >= offset + len;
        let thread = std::thread::current().name().map(str::to_owned);
        STARTED_BG.lock().push((offset, len, held, thread));
        Ok(())
    }

    /// Writes the test's pattern of appends, flushes and one sync through `fs`; returns
    /// the bytes written and the size at the sync.
    fn write_pattern(fs: &PosixFs, path: &Path) -> (Vec<u8>, u64) {
        let mut w = fs.create(path).unwrap();
        let mut expect = Vec::new();
        for i in 0..3000u32 {
            let rec = vec![(i % 251) as u8; 100 + (i as usize % 7) * 50];
            w.append(&rec).unwrap();
            expect.extend_from_slice(&rec);
            if i % 10 == 0 {
                w.flush().unwrap();
            }
        }
        let big = vec![9u8; WRITE_BUFFER_SIZE * 3];
        w.append(&big).unwrap();
        expect.extend_from_slice(&big);
        w.sync().unwrap();
        let synced = w.size();
        w.append(&[1u8; 1000]).unwrap();
        expect.extend_from_slice(&[1u8; 1000]);
        w.flush().unwrap();
        (expect, synced)
    }

    /// Background writeback starts consecutive ranges of at least the configured size up to
    /// the last sync, on the helper thread, each after its bytes reached the file, even
    /// once the writer has closed it; the file holds exactly what was written.
    #[test]
    fn background_writeback_starts_ranges_on_the_helper() {
        let dir = tempfile::tempdir().unwrap();
        let every = 100_000u64;
        let path = dir.path().join("bg.log");
        let fs = PosixFs::new().with_background_writeback(record_background, every);
        let (expect, synced) = write_pattern(&fs, &path);
        // Wait for the helper: the ranges end within `every` of the synced size.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let started = loop {
            let got = STARTED_BG.lock().clone();
            let covered = got.iter().map(|r| r.1).sum::<u64>();
            if covered + every > synced || std::time::Instant::now() > deadline {
                break got;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(started.len() >= 5, "{started:?}");
        let mut at = 0;
        for (offset, len, held, thread) in &started {
            assert_eq!(*offset, at, "ranges are consecutive: {started:?}");
            assert!(*len >= every, "{started:?}");
            assert!(
                held,
                "range {offset}+{len} passed on before the file held it"
            );
            assert_eq!(thread.as_deref(), Some("mezz-writeback"));
            at = offset + len;
        }
        assert!(at <= synced && at + every > synced, "{started:?}");
        assert_eq!(fs.read_all(&path).unwrap(), expect);
    }

    /// Ranges passed to the third test's writeback function, with the thread that ran it.
    static STARTED_HINT: Mutex<Vec<(u64, Option<String>)>> = Mutex::new(Vec::new());

    fn record_hinted(_file: &File, offset: u64, _len: u64) -> io::Result<()> {
        let thread = std::thread::current().name().map(str::to_owned);
        STARTED_HINT.lock().push((offset, thread));
        Ok(())
    }

    /// Files created with a lifetime hint (tables, written by background threads) start
    /// their writeback on the thread that writes them, even with background writeback.
    #[test]
    fn hinted_files_start_writeback_on_their_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::new().with_background_writeback(record_hinted, 100_000);
        let me = std::thread::current().name().map(str::to_owned);
        let path = dir.path().join("t.sst");
        let mut w = fs.create_with_hint(&path, WriteLifetime::Short).unwrap();
        w.append(&vec![3u8; WRITE_BUFFER_SIZE * 5]).unwrap();
        w.sync().unwrap();
        drop(w);
        // Started before `append` returned, on this thread.
        let started = std::mem::take(&mut *STARTED_HINT.lock());
        assert_eq!(started.len(), 1, "{started:?}");
        assert_eq!(started[0], (0, me));
    }

    /// Writeback is started on consecutive ranges of at least the configured size, once
    /// their bytes left the buffer, never over bytes already synced, and never changes
    /// what the file holds.
    #[test]
    fn writeback_starts_on_each_range_handed_to_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let every = 100_000u64;
        let fs = PosixFs::new().with_writeback(record_writeback, every);
        let path = dir.path().join("w.log");
        let (expect, synced) = write_pattern(&fs, &path);
        let started = std::mem::take(&mut *STARTED.lock());
        assert!(started.len() >= 5, "{started:?}");
        let mut at = 0;
        for &(offset, len) in &started {
            assert_eq!(offset, at, "ranges are consecutive: {started:?}");
            assert!(len >= every, "{started:?}");
            at = offset + len;
        }
        assert!(at <= synced);
        assert_eq!(fs.read_all(&path).unwrap(), expect);
        // Bytes 0: never called.
        let fs = PosixFs::new().with_writeback(record_writeback, 0);
        let mut w = fs.create(&dir.path().join("n.log")).unwrap();
        w.append(&vec![9u8; WRITE_BUFFER_SIZE * 3]).unwrap();
        w.sync().unwrap();
        assert!(STARTED.lock().is_empty());
    }

    fn refuse_to_map(_file: &File, _offset: u64, _len: usize) -> io::Result<Box<dyn MappedWindow>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no mappings here",
        ))
    }

    fn reserve_with_set_len(file: &File, offset: u64, len: u64) -> io::Result<()> {
        file.set_len(offset + len)
    }

    /// A file system that cannot map a log writes it the ordinary way: nothing reserved is
    /// left behind, and the file holds exactly what was appended.
    #[test]
    fn a_log_that_cannot_be_mapped_is_written_normally() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000003.log");
        let fs = PosixFs::new().with_mapped_logs(refuse_to_map, reserve_with_set_len);
        let mut w = fs.create_log(&path).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
        w.append(b"one ").unwrap();
        w.append(b"two").unwrap();
        w.flush().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one two");
        w.close().unwrap();
        w.sync().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one two");
    }

    #[test]
    fn write_read_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::new();
        let path = dir.path().join("a.log");
        let mut w = fs.create(&path).unwrap();
        w.append(b"hello ").unwrap();
        assert_eq!(w.size(), 6);
        let big = vec![7u8; WRITE_BUFFER_SIZE + 10];
        w.append(&big).unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.size(), 6 + big.len() as u64 + 5);
        w.sync().unwrap();
        drop(w);

        assert!(fs.exists(&path));
        assert_eq!(fs.file_size(&path).unwrap(), 6 + big.len() as u64 + 5);
        let all = fs.read_all(&path).unwrap();
        assert_eq!(&all[..6], b"hello ");
        assert_eq!(&all[6..6 + big.len()], &big[..]);
        assert_eq!(&all[6 + big.len()..], b"world");

        let r = fs.open_read(&path).unwrap();
        let mut buf = [0u8; 5];
        r.read_exact_at(r.size() - 5, &mut buf).unwrap();
        assert_eq!(&buf, b"world");
        let err = r.read_exact_at(r.size() - 2, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn buffered_bytes_reach_the_file_on_flush_and_drop() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::new();
        let path = dir.path().join("b");
        let mut w = fs.create(&path).unwrap();
        w.append(b"abc").unwrap();
        w.flush().unwrap();
        assert_eq!(fs.read_all(&path).unwrap(), b"abc");
        w.append(b"def").unwrap();
        drop(w);
        assert_eq!(fs.read_all(&path).unwrap(), b"abcdef");
    }

    #[test]
    fn open_append_continues_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::new();
        let path = dir.path().join("c");
        let mut w = fs.create(&path).unwrap();
        w.append(b"12345").unwrap();
        w.sync().unwrap();
        drop(w);
        let mut w = fs.open_append(&path).unwrap();
        assert_eq!(w.size(), 5);
        w.append(b"678").unwrap();
        assert_eq!(w.size(), 8);
        w.sync().unwrap();
        drop(w);
        assert_eq!(fs.read_all(&path).unwrap(), b"12345678");
        // create truncates.
        drop(fs.create(&path).unwrap());
        assert_eq!(fs.file_size(&path).unwrap(), 0);
    }

    #[test]
    fn directory_operations() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::new();
        let sub = dir.path().join("x").join("y");
        fs.create_dir_all(&sub).unwrap();
        fs.create_dir_all(&sub).unwrap();
        assert!(fs.exists(&sub));
        drop(fs.create(&sub.join("one")).unwrap());
        drop(fs.create(&sub.join("two")).unwrap());
        fs.rename(&sub.join("two"), &sub.join("three")).unwrap();
        fs.sync_dir(&sub).unwrap();
        let mut names = fs.list_dir(&sub).unwrap();
        names.sort();
        assert_eq!(names, vec!["one".to_string(), "three".to_string()]);
        fs.remove_file(&sub.join("one")).unwrap();
        assert!(!fs.exists(&sub.join("one")));
        let err = fs.open_read(&sub.join("one")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("one"));
    }

    #[test]
    fn lock_conflicts_within_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::new();
        let path = dir.path().join("LOCK");
        let guard = fs.lock(&path).unwrap();
        let err = fs.lock(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert!(err.to_string().contains("LOCK"));
        // The same file through another spelling of its path is still the same lock.
        let other = dir.path().join(".").join("LOCK");
        assert_eq!(
            fs.lock(&other).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        drop(guard);
        let again = fs.lock(&path).unwrap();
        drop(again);
    }
}
