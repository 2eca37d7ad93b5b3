//! Direct I/O (`O_DIRECT`) for table files: reads and writes that bypass the page cache.
//!
//! Owns: [`DirectRandomAccessFile`] and [`DirectWritableFile`], which [`crate::PosixFs`]
//! hands out from [`crate::FileSystem::open_read_direct`] and
//! [`crate::FileSystem::create_direct`] (RocksDB's `use_direct_reads` and
//! `use_direct_io_for_flush_and_compaction`).
//!
//! `O_DIRECT` needs every transfer's file offset, length and memory address aligned to the
//! device's logical block size. Both files align to [`DIRECT_IO_ALIGN`] (4 KiB), a multiple
//! of every common logical block size (512 B and 4 KiB), so no query of the device is
//! needed. Aligned memory comes from a `Vec<u8>` over-allocated by one alignment unit and
//! used from its first aligned address (address arithmetic only: the crate has no
//! `unsafe`).
//!
//! Invariants:
//! - A reader returns exactly the bytes a buffered `pread` would: it reads the aligned
//!   cover of the requested range and copies the range out. `O_DIRECT` reads come back
//!   short at the end of the file, so the last, partial block reads fine; a request that
//!   itself reaches past the end is `UnexpectedEof`.
//! - A writer's `size()` is exactly the bytes appended. Appends gather in an aligned buffer
//!   of [`DIRECT_WRITE_BUFFER_SIZE`] (RocksDB's `writable_file_max_buffer_size`), written
//!   whole when full; `flush` writes only its whole blocks (the unaligned tail stays
//!   buffered); `sync` and `close` write the tail padded with zeros to a whole block, then
//!   truncate the file to its true length (`ftruncate`), as RocksDB's `PosixWritableFile`
//!   does, and `sync` then `fdatasync`s: `O_DIRECT` bypasses the page cache but not the
//!   device's volatile cache, nor the file's size in its metadata. After `sync` the tail
//!   stays in the buffer; the next write rewrites its block in place.
//! - A full buffer is written behind: a thread of the writer's own (started with its first
//!   full buffer) writes it while appends fill a second one, so a flush or compaction does
//!   not wait for the device at every MiB. At most one write is in flight; `flush`,
//!   `sync`, `close` and the next full buffer wait for it, and its error surfaces there
//!   (after which every call fails: the file misses a buffer). Without the overlap a
//!   compaction thread alternates merging, reading and writing, each waiting for the
//!   others.
//! - Early writeback (`sync_file_range`) is never started: there are no dirty pages.
//!
//! Thread-safety: a reader takes `&self` (positional reads; each thread reuses its own
//! scratch buffer); a writer is owned by one thread (`&mut self`), its write-behind thread
//! only ever holds a buffer the writer handed over and no longer touches.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::posix::with_path;
use crate::{RandomAccessFile, WritableFile};

/// Alignment of every direct transfer's file offset, length and memory address.
pub const DIRECT_IO_ALIGN: usize = 4096;

/// Bytes a direct writer gathers before it writes them (a multiple of [`DIRECT_IO_ALIGN`]).
pub const DIRECT_WRITE_BUFFER_SIZE: usize = 1 << 20;

/// Reads up to this size reuse a per-thread scratch buffer; larger ones allocate their own.
const MAX_KEPT_SCRATCH: usize = 4 << 20;

const ALIGN: u64 = DIRECT_IO_ALIGN as u64;

/// The `open(2)` flag, where the platform has one.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
const O_DIRECT: Option<i32> = Some(libc::O_DIRECT);
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
const O_DIRECT: Option<i32> = None;

/// `n` rounded up to a multiple of the alignment.
fn round_up(n: u64) -> u64 {
    n.div_ceil(ALIGN) * ALIGN
}

/// A writer's buffer memory: [`DIRECT_WRITE_BUFFER_SIZE`] and one alignment unit.
fn new_storage() -> Vec<u8> {
    vec![0u8; DIRECT_WRITE_BUFFER_SIZE + DIRECT_IO_ALIGN]
}

/// Where the first aligned byte of `v` is.
fn aligned_start(v: &[u8]) -> usize {
    let misalignment = v.as_ptr().addr() % DIRECT_IO_ALIGN;
    (DIRECT_IO_ALIGN - misalignment) % DIRECT_IO_ALIGN
}

/// Opens `path` with `O_DIRECT` and `options`; a file system that refuses direct I/O
/// (`EINVAL` at open, as tmpfs before Linux 6.6 does) gets an error saying so.
fn open_direct(options: &mut OpenOptions, path: &Path, what: &str) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(flag) = O_DIRECT else {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{what} {} with direct I/O: this platform has no O_DIRECT",
                path.display()
            ),
        ));
    };
    options.custom_flags(flag).open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::EINVAL) {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{what} {} with direct I/O (O_DIRECT): the file system refuses it ({e})",
                    path.display()
                ),
            )
        } else {
            with_path(e, what, path)
        }
    })
}

/// Opens `path` for direct positional reads.
pub(crate) fn open_read(path: &Path) -> io::Result<DirectRandomAccessFile> {
    let file = open_direct(OpenOptions::new().read(true), path, "open")?;
    let size = file
        .metadata()
        .map_err(|e| with_path(e, "stat", path))?
        .len();
    Ok(DirectRandomAccessFile {
        file,
        size,
        path: path.to_path_buf(),
    })
}

/// Creates (or truncates) `path` for direct appends.
pub(crate) fn create(path: &Path) -> io::Result<File> {
    open_direct(
        OpenOptions::new().write(true).create(true).truncate(true),
        path,
        "create",
    )
}

thread_local! {
    /// Each thread's scratch buffer for the aligned cover of a read.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A positional reader over a file opened with `O_DIRECT` (see the module documentation).
#[derive(Debug)]
pub struct DirectRandomAccessFile {
    file: File,
    size: u64,
    path: PathBuf,
}

impl DirectRandomAccessFile {
    /// Reads the aligned range at `first` into `dst` (aligned, a whole number of blocks)
    /// until it is full or the file ends; returns the bytes read.
    fn read_aligned(&self, first: u64, dst: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < dst.len() {
            match self.file.read_at(&mut dst[done..], first + done as u64) {
                Ok(0) => break,
                Ok(n) => {
                    done += n;
                    // A read that ends inside a block ended at the end of the file (and the
                    // next offset would not be aligned).
                    if done % DIRECT_IO_ALIGN != 0 {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn read_range(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let past_end = |got: u64| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("past the end of the file ({got} bytes there)"),
            )
        };
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| past_end(0))?;
        let first = offset / ALIGN * ALIGN;
        let span = usize::try_from(round_up(end) - first)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read too large"))?;
        let skip = (offset - first) as usize;
        // An aligned request into an aligned buffer needs no copy.
        if skip == 0 && span == buf.len() && aligned_start(buf) == 0 {
            let got = self.read_aligned(first, buf)?;
            return if got < buf.len() {
                Err(past_end(first + got as u64))
            } else {
                Ok(())
            };
        }
        let mut copy_out = |scratch: &mut Vec<u8>| {
            if scratch.len() < span + DIRECT_IO_ALIGN {
                scratch.resize(span + DIRECT_IO_ALIGN, 0);
            }
            let start = aligned_start(scratch);
            let window = &mut scratch[start..start + span];
            let got = self.read_aligned(first, window)?;
            if got < skip + buf.len() {
                return Err(past_end(first + got as u64));
            }
            buf.copy_from_slice(&window[skip..skip + buf.len()]);
            Ok(())
        };
        if span + DIRECT_IO_ALIGN <= MAX_KEPT_SCRATCH {
            SCRATCH.with(|s| copy_out(&mut s.borrow_mut()))
        } else {
            copy_out(&mut Vec::new())
        }
    }
}

impl RandomAccessFile for DirectRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.read_range(offset, buf).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "read {} bytes at {offset} of {} (direct I/O): {e}",
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

/// An appender over a file opened with `O_DIRECT` (see the module documentation).
#[derive(Debug)]
pub struct DirectWritableFile {
    file: File,
    path: PathBuf,
    /// [`DIRECT_WRITE_BUFFER_SIZE`] + one alignment unit of bytes; the aligned buffer is
    /// `storage[start..start + DIRECT_WRITE_BUFFER_SIZE]`. Never resized, so it never moves.
    storage: Vec<u8>,
    start: usize,
    /// File offset of the buffer's first byte (a multiple of the alignment): every byte
    /// before it is in the file.
    base: u64,
    /// Bytes of the buffer holding appended data.
    filled: usize,
    /// The buffer's data is in the file too (written padded by `sync` or `close`, the file
    /// truncated to `size()`): nothing to write until the next append.
    tail_in_file: bool,
    /// `close` ran: only `sync` and `size` may follow.
    closed: bool,
    /// The thread writing the previous full buffer while this one fills (started with
    /// the first full buffer; `None` before, or when no thread could be started).
    behind: Option<WriteBehind>,
    /// A write behind failed: every later call fails (the file is incomplete).
    failed: bool,
}

/// One full buffer for the write-behind thread: `storage[start..start +
/// DIRECT_WRITE_BUFFER_SIZE]` at `offset`.
struct BehindJob {
    storage: Vec<u8>,
    start: usize,
    offset: u64,
}

/// The write-behind thread of a [`DirectWritableFile`] and the one write it may have in
/// flight. Dropping it ends the thread (after its write) and waits for it.
struct WriteBehind {
    jobs: Option<crossbeam_channel::Sender<BehindJob>>,
    done: crossbeam_channel::Receiver<(Vec<u8>, io::Result<()>)>,
    in_flight: bool,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for WriteBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBehind")
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl WriteBehind {
    /// A thread writing to a duplicate of `file`'s descriptor.
    fn start(file: &File, path: &Path) -> io::Result<Self> {
        let file = file.try_clone()?;
        let path = path.to_path_buf();
        let (jobs, rx) = crossbeam_channel::bounded::<BehindJob>(1);
        let (tx, done) = crossbeam_channel::bounded(1);
        let thread = std::thread::Builder::new()
            .name("mezz-write-behind".into())
            .spawn(move || {
                for job in rx {
                    let r = file
                        .write_all_at(
                            &job.storage[job.start..job.start + DIRECT_WRITE_BUFFER_SIZE],
                            job.offset,
                        )
                        .map_err(|e| with_path(e, "write (direct I/O)", &path));
                    if tx.send((job.storage, r)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Self {
            jobs: Some(jobs),
            done,
            in_flight: false,
            thread: Some(thread),
        })
    }

    /// Waits for the write in flight, if any: its buffer back, or its error.
    fn wait(&mut self) -> io::Result<Option<Vec<u8>>> {
        if !self.in_flight {
            return Ok(None);
        }
        self.in_flight = false;
        let (storage, r) = self
            .done
            .recv()
            .map_err(|_| io::Error::other("the write-behind thread ended"))?;
        r.map(|()| Some(storage))
    }

    fn submit(&mut self, job: BehindJob) -> io::Result<()> {
        debug_assert!(!self.in_flight);
        self.jobs
            .as_ref()
            .and_then(|j| j.send(job).ok())
            .ok_or_else(|| io::Error::other("the write-behind thread ended"))?;
        self.in_flight = true;
        Ok(())
    }
}

impl Drop for WriteBehind {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl DirectWritableFile {
    /// A writer appending to `file`, created empty at `path` with `O_DIRECT`.
    pub(crate) fn new(file: File, path: &Path) -> Self {
        let storage = new_storage();
        let start = aligned_start(&storage);
        Self {
            file,
            path: path.to_path_buf(),
            storage,
            start,
            base: 0,
            filled: 0,
            tail_in_file: true,
            closed: false,
            behind: None,
            failed: false,
        }
    }

    /// Fails once a write behind has failed (the file misses a buffer).
    fn check_failed(&self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other(format!(
                "{}: an earlier write (direct I/O) failed",
                self.path.display()
            )));
        }
        Ok(())
    }

    /// Waits for the write behind in flight, if any; returns its buffer for reuse.
    fn drain(&mut self) -> io::Result<Option<Vec<u8>>> {
        self.check_failed()?;
        let Some(b) = self.behind.as_mut() else {
            return Ok(None);
        };
        b.wait().inspect_err(|_| self.failed = true)
    }

    /// Hands the full buffer to the write-behind thread and goes on in another (the one
    /// the previous write returned). Without a thread (none could be started) the buffer
    /// is written here.
    fn write_full_buffer(&mut self) -> io::Result<()> {
        let spare = self.drain()?;
        if self.behind.is_none() {
            self.behind = WriteBehind::start(&self.file, &self.path).ok();
        }
        let Some(b) = self.behind.as_mut() else {
            return self.write_blocks(DIRECT_WRITE_BUFFER_SIZE);
        };
        let next = spare.unwrap_or_else(new_storage);
        let storage = std::mem::replace(&mut self.storage, next);
        let job = BehindJob {
            storage,
            start: self.start,
            offset: self.base,
        };
        self.start = aligned_start(&self.storage);
        b.submit(job).inspect_err(|_| self.failed = true)
    }

    fn buffer(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + DIRECT_WRITE_BUFFER_SIZE]
    }

    /// Writes the first `len` bytes of the buffer (a whole number of blocks) at `base`.
    fn write_blocks(&mut self, len: usize) -> io::Result<()> {
        debug_assert_eq!(len % DIRECT_IO_ALIGN, 0);
        let (base, start) = (self.base, self.start);
        self.file
            .write_all_at(&self.storage[start..start + len], base)
            .map_err(|e| with_path(e, "write (direct I/O)", &self.path))
    }

    /// Writes the buffered tail padded to a whole block and truncates the file to the
    /// bytes appended (nothing to do if the tail is in the file already).
    fn write_tail(&mut self) -> io::Result<()> {
        self.drain()?;
        if self.tail_in_file {
            return Ok(());
        }
        let filled = self.filled;
        let padded = round_up(filled as u64) as usize;
        self.buffer()[filled..padded].fill(0);
        self.write_blocks(padded)?;
        self.file
            .set_len(self.base + filled as u64)
            .map_err(|e| with_path(e, "truncate", &self.path))?;
        self.tail_in_file = true;
        Ok(())
    }
}

impl WritableFile for DirectWritableFile {
    fn append(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.check_failed()?;
        if self.closed {
            return Err(io::Error::other(format!(
                "append to {}: the file is closed",
                self.path.display()
            )));
        }
        while !data.is_empty() {
            let filled = self.filled;
            let n = (DIRECT_WRITE_BUFFER_SIZE - filled).min(data.len());
            self.buffer()[filled..filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            self.tail_in_file = false;
            data = &data[n..];
            if self.filled == DIRECT_WRITE_BUFFER_SIZE {
                // On error the writer is not usable reliably (as a buffered one): the
                // caller deletes the file. The write goes on behind the next buffer's
                // appends; its error surfaces at the next call that waits for it.
                self.write_full_buffer()?;
                self.base += DIRECT_WRITE_BUFFER_SIZE as u64;
                self.filled = 0;
                self.tail_in_file = true;
            }
        }
        Ok(())
    }

    /// Writes the buffer's whole blocks; an unaligned tail stays buffered (direct I/O
    /// cannot write part of a block) until `sync` or `close`.
    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        if self.tail_in_file {
            return Ok(());
        }
        let whole = self.filled / DIRECT_IO_ALIGN * DIRECT_IO_ALIGN;
        if whole == 0 {
            return Ok(());
        }
        self.write_blocks(whole)?;
        let (start, filled) = (self.start, self.filled);
        self.storage
            .copy_within(start + whole..start + filled, start);
        self.base += whole as u64;
        self.filled -= whole;
        self.tail_in_file = self.filled == 0;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.write_tail()?;
        self.file
            .sync_data()
            .map_err(|e| with_path(e, "sync", &self.path))
    }

    fn size(&self) -> u64 {
        self.base + self.filled as u64
    }

    fn close(&mut self) -> io::Result<()> {
        self.write_tail()?;
        self.closed = true;
        Ok(())
    }
}

impl Drop for DirectWritableFile {
    fn drop(&mut self) {
        // Best effort, as a buffered writer's drop: callers that care call `sync`/`close`.
        let _ = self.write_tail();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FileSystem, PosixFs, WriteLifetime};
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    /// A directory under the system's temporary directory, if its file system takes
    /// `O_DIRECT` (else a note is printed and the test is skipped).
    fn direct_dir() -> Option<tempfile::TempDir> {
        let dir = tempfile::tempdir().expect("temporary directory");
        match create(&dir.path().join("probe")) {
            Ok(_) => Some(dir),
            Err(e) => {
                eprintln!(
                    "note: skipped: {} refuses O_DIRECT ({e})",
                    dir.path().display()
                );
                None
            }
        }
    }

    fn pattern(len: usize, seed: u64) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..len).map(|_| rng.random()).collect()
    }

    /// Unaligned appends of many sizes (around the block and buffer sizes), with flushes
    /// and syncs between them: the file always holds exactly what was appended, `size()`
    /// is exact after every call, and after each sync the file's length is exact.
    #[test]
    fn unaligned_appends_of_many_sizes_hold_exactly_what_was_written() {
        let Some(dir) = direct_dir() else { return };
        let fs = PosixFs::new();
        let path = dir.path().join("t.sst");
        let mut w = fs.create_direct(&path, WriteLifetime::Short).unwrap();
        let data = pattern(5 * DIRECT_WRITE_BUFFER_SIZE + 12_345, 7);
        let sizes = [
            1,
            7,
            100,
            4095,
            4096,
            4097,
            8191,
            65_536,
            DIRECT_WRITE_BUFFER_SIZE - 1,
            DIRECT_WRITE_BUFFER_SIZE,
            DIRECT_WRITE_BUFFER_SIZE + 1,
            3,
            2 * DIRECT_WRITE_BUFFER_SIZE + 5,
        ];
        let mut at = 0;
        let mut rng = StdRng::seed_from_u64(1);
        for (i, &n) in sizes.iter().cycle().enumerate() {
            if at == data.len() {
                break;
            }
            let n = n.min(data.len() - at);
            w.append(&data[at..at + n]).unwrap();
            at += n;
            assert_eq!(w.size(), at as u64);
            match rng.random_range(0..4) {
                0 => w.flush().unwrap(),
                1 => {
                    w.sync().unwrap();
                    assert_eq!(fs.file_size(&path).unwrap(), at as u64, "after sync {i}");
                    assert_eq!(fs.read_all(&path).unwrap(), &data[..at]);
                }
                _ => {}
            }
            // Flushed bytes are in the file: a prefix of the data, whole blocks only.
            let len = fs.file_size(&path).unwrap() as usize;
            assert!(len <= at, "file longer ({len}) than appended ({at})");
        }
        w.close().unwrap();
        assert_eq!(w.size(), data.len() as u64);
        assert_eq!(fs.file_size(&path).unwrap(), data.len() as u64);
        w.sync().unwrap();
        assert!(w.append(b"x").is_err(), "append after close");
        drop(w);
        assert_eq!(fs.read_all(&path).unwrap(), data);
    }

    /// `flush` writes whole blocks only; `sync` writes the padded tail and truncates to the
    /// exact length; appends after a sync rewrite the tail's block in place; dropping the
    /// writer writes what was buffered.
    #[test]
    fn flush_writes_whole_blocks_and_sync_truncates_to_the_exact_length() {
        let Some(dir) = direct_dir() else { return };
        let fs = PosixFs::new();
        let path = dir.path().join("f.sst");
        let mut w = fs.create_direct(&path, WriteLifetime::Long).unwrap();
        let data = pattern(3 * DIRECT_IO_ALIGN + 100, 3);
        w.append(&data[..DIRECT_IO_ALIGN + 10]).unwrap();
        w.flush().unwrap();
        assert_eq!(fs.file_size(&path).unwrap(), ALIGN);
        w.sync().unwrap();
        assert_eq!(fs.file_size(&path).unwrap(), ALIGN + 10);
        w.append(&data[DIRECT_IO_ALIGN + 10..]).unwrap();
        w.sync().unwrap();
        assert_eq!(fs.read_all(&path).unwrap(), data);
        // A sync with nothing new appended changes nothing.
        w.sync().unwrap();
        assert_eq!(fs.read_all(&path).unwrap(), data);
        w.append(b"tail").unwrap();
        drop(w);
        let mut want = data.clone();
        want.extend_from_slice(b"tail");
        assert_eq!(fs.read_all(&path).unwrap(), want);
        // An empty file stays empty.
        let empty = dir.path().join("e.sst");
        let mut w = fs.create_direct(&empty, WriteLifetime::Short).unwrap();
        w.sync().unwrap();
        w.close().unwrap();
        assert_eq!(fs.file_size(&empty).unwrap(), 0);
    }

    /// Reads at unaligned offsets and lengths, reads of the last partial block, reads that
    /// reach past the end (`UnexpectedEof`), empty reads, and aligned reads into aligned
    /// buffers all return what a buffered read returns.
    #[test]
    fn reads_at_any_offset_match_buffered_reads() {
        let Some(dir) = direct_dir() else { return };
        let fs = PosixFs::new();
        let path = dir.path().join("r.sst");
        let len = 5 * DIRECT_IO_ALIGN + 1234;
        let data = pattern(len, 9);
        std::fs::write(&path, &data).unwrap();
        let r = fs.open_read_direct(&path).unwrap();
        assert_eq!(r.size(), len as u64);
        let b = fs.open_read(&path).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let mut cases: Vec<(usize, usize)> = vec![
            (0, 1),
            (0, len),
            (len - 1, 1),
            (len - 1234, 1234),
            (len - 1300, 1300),
            (4095, 2),
            (4096, 4096),
            (100, 3 * DIRECT_IO_ALIGN),
            (len, 0),
        ];
        for _ in 0..300 {
            let off = rng.random_range(0..len);
            let n = rng.random_range(0..=(len - off).min(3 * DIRECT_IO_ALIGN));
            cases.push((off, n));
        }
        for (off, n) in cases {
            let mut got = vec![0u8; n];
            let mut want = vec![0u8; n];
            r.read_exact_at(off as u64, &mut got).unwrap();
            b.read_exact_at(off as u64, &mut want).unwrap();
            assert_eq!(got, want, "{n} bytes at {off}");
            assert_eq!(got, &data[off..off + n]);
        }
        // Past the end: the request itself, not the aligned cover, decides.
        for (off, n) in [(len - 10, 11), (len, 1), (len + 5000, 10)] {
            let mut buf = vec![0u8; n];
            let e = r.read_exact_at(off as u64, &mut buf).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{n} at {off}: {e}");
            assert!(e.to_string().contains("r.sst"), "{e}");
        }
        // An aligned read into an aligned buffer (read in place).
        let mut v = vec![0u8; 3 * DIRECT_IO_ALIGN];
        let s = aligned_start(&v);
        let window = &mut v[s..s + 2 * DIRECT_IO_ALIGN];
        r.read_exact_at(ALIGN, window).unwrap();
        assert_eq!(window, &data[DIRECT_IO_ALIGN..3 * DIRECT_IO_ALIGN]);
        // Larger than the kept scratch buffer.
        let big = pattern(MAX_KEPT_SCRATCH + 3 * DIRECT_IO_ALIGN + 17, 4);
        std::fs::write(&path, &big).unwrap();
        let r = fs.open_read_direct(&path).unwrap();
        let mut all = vec![0u8; big.len() - 3];
        r.read_exact_at(3, &mut all).unwrap();
        assert_eq!(all, &big[3..]);
    }

    /// The `O_DIRECT` flag of an open file, from `/proc/self/fdinfo` (Linux).
    #[cfg(target_os = "linux")]
    fn has_o_direct(file: &File) -> bool {
        use std::os::fd::AsRawFd;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", file.as_raw_fd()))
            .expect("fdinfo");
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| i64::from_str_radix(f.trim(), 8).ok())
            .expect("flags line");
        flags & i64::from(libc::O_DIRECT) != 0
    }

    /// Both files really bypass the page cache: their descriptors carry `O_DIRECT`.
    #[cfg(target_os = "linux")]
    #[test]
    fn files_are_opened_with_o_direct() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("o.sst");
        let w = DirectWritableFile::new(create(&path).unwrap(), &path);
        assert!(has_o_direct(&w.file));
        drop(w);
        let r = open_read(&path).unwrap();
        assert!(has_o_direct(&r.file));
        let buffered = File::open(&path).unwrap();
        assert!(!has_o_direct(&buffered));
    }

    /// A file written directly reads back through a direct reader, a table's whole life.
    #[test]
    fn direct_writes_read_back_through_direct_reads() {
        let Some(dir) = direct_dir() else { return };
        let fs = PosixFs::new();
        let path = dir.path().join("rw.sst");
        let data = pattern(DIRECT_WRITE_BUFFER_SIZE + 777, 11);
        let mut w = fs.create_direct(&path, WriteLifetime::Medium).unwrap();
        for chunk in data.chunks(1000) {
            w.append(chunk).unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let r = fs.open_read_direct(&path).unwrap();
        assert_eq!(r.size(), data.len() as u64);
        let mut tail = vec![0u8; 777];
        r.read_exact_at(DIRECT_WRITE_BUFFER_SIZE as u64, &mut tail)
            .unwrap();
        assert_eq!(tail, &data[DIRECT_WRITE_BUFFER_SIZE..]);
        let e = fs
            .open_read_direct(&dir.path().join("missing"))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("missing"), "{e}");
    }

    /// A full buffer written behind that fails (here: a descriptor opened read-only) fails
    /// the call that waits for it and every call after: no sync reports a file complete
    /// that misses a buffer.
    #[test]
    fn a_failed_write_behind_fails_the_next_call_and_every_later_one() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("ro.sst");
        drop(create(&path).unwrap());
        let ro = open_direct(OpenOptions::new().read(true), &path, "open").unwrap();
        let mut w = DirectWritableFile::new(ro, &path);
        let data = pattern(DIRECT_WRITE_BUFFER_SIZE + 100, 3);
        // The full buffer is handed over; the append itself may still succeed.
        let _ = w.append(&data);
        let e = w.sync().unwrap_err();
        assert!(e.to_string().contains("ro.sst"), "{e}");
        assert!(w.append(b"more").is_err());
        assert!(w.flush().is_err());
        assert!(w.sync().is_err());
        assert!(w.close().is_err());
    }

    /// Many full buffers back to back (each written behind the next one's appends) and a
    /// sync between them: the file holds every byte in order.
    #[test]
    fn buffers_written_behind_land_in_order() {
        let Some(dir) = direct_dir() else { return };
        let path = dir.path().join("b.sst");
        let mut w = DirectWritableFile::new(create(&path).unwrap(), &path);
        let data = pattern(9 * DIRECT_WRITE_BUFFER_SIZE + 4321, 5);
        for (i, chunk) in data.chunks(DIRECT_WRITE_BUFFER_SIZE / 3 + 17).enumerate() {
            w.append(chunk).unwrap();
            if i == 13 {
                w.sync().unwrap();
            }
        }
        w.close().unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), data);
    }
}
