//! A log file appended through a shared memory mapping (the real file system's WAL writer,
//! when [`PosixFs::with_mapped_logs`](crate::PosixFs::with_mapped_logs) asks for it).
//!
//! Owns: [`MappedLogFile`]: a writer that reserves the file one window at a time
//! ([`WINDOW`] bytes: `fallocate`, so a full disk is an error here and never a `SIGBUS` at
//! a store) and copies small appends into a `MAP_SHARED` mapping of that window when the
//! writer flushes: a `memcpy` into the page cache, no system call, and it survives a crash
//! of the process as a `write` would. `sync` is `fdatasync`, which writes back pages
//! dirtied through a mapping like any others.
//!
//! Appends of at least [`DIRECT_BYTES`] go to the file with one `pwrite`, together with
//! the small appends staged before them (a record's header): copying a large record into
//! a mapping costs a page fault per page (each reads and zeroes a fresh page of the file
//! first), which measured slower than the system call (fills of 4 KiB values: 88-99 K
//! against 103-107 K ops/s), while for records of about 100 bytes the mapping is 1.5x as
//! fast. The page cache is shared, so the two kinds of stores mix freely.
//!
//! Invariants:
//! - `written <= reserved`: the file is `reserved` bytes long while the writer is open, and
//!   bytes past `written` are zero (fresh space from `fallocate`); `staged` holds the
//!   appends after `written`, not yet in the file (`size` counts them).
//! - `close` (or drop) writes what is staged, unmaps, and truncates the file to `written`,
//!   so a closed log holds exactly what was appended. A log whose writer never closed it
//!   (the process died) may end in up to one window of zeros, which the log reader reports
//!   as a zero-filled (torn) tail.
//! - After a failed append, flush or close the writer refuses further appends: the file's
//!   tail is undefined.
//!
//! Thread-safety: a writer is owned by one thread at a time (`&mut self`), like every
//! `WritableFile`.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::posix::{Writeback, WritebackCursor, with_path};
use crate::{AllocateFn, MapWindowFn, MappedWindow, WritableFile};

/// Bytes reserved and mapped at a time.
pub(crate) const WINDOW: usize = 1 << 20;

/// Appends at least this large are written with `pwrite` rather than copied into the
/// mapping (see the module comment).
pub(crate) const DIRECT_BYTES: usize = 2048;

/// A log file written through a memory mapping of its current window.
#[derive(Debug)]
pub(crate) struct MappedLogFile {
    file: File,
    path: PathBuf,
    map: MapWindowFn,
    allocate: AllocateFn,
    /// The mapped window and its file offset (a multiple of [`WINDOW`]).
    window: Option<(u64, Box<dyn MappedWindow>)>,
    /// Small appends not yet in the file.
    staged: Vec<u8>,
    /// Bytes in the file.
    written: u64,
    /// The file's length: zero past `written` (windows reserved with `fallocate`).
    reserved: u64,
    /// Set once the writer must not append any more (closed, or an operation failed).
    done: bool,
    /// Early writeback, if the file system asks for it.
    writeback: WritebackCursor,
}

impl MappedLogFile {
    /// A writer for the new, empty file `file`; reserves and maps its first window, so a
    /// file system that cannot do either fails here (the caller then writes the file the
    /// ordinary way).
    pub(crate) fn create(
        file: File,
        path: &Path,
        map: MapWindowFn,
        allocate: AllocateFn,
        writeback: Option<Writeback>,
    ) -> io::Result<Self> {
        let mut w = Self {
            file,
            path: path.to_path_buf(),
            map,
            allocate,
            window: None,
            staged: Vec::with_capacity(DIRECT_BYTES),
            written: 0,
            reserved: 0,
            done: false,
            writeback: WritebackCursor::new(writeback, 0),
        };
        w.map_window_at(0)?;
        Ok(w)
    }

    /// Reserves window-sized steps until the file is at least `end` bytes long.
    fn reserve(&mut self, end: u64) -> io::Result<()> {
        while self.reserved < end {
            (self.allocate)(&self.file, self.reserved, WINDOW as u64)
                .map_err(|e| with_path(e, "reserve log space in", &self.path))?;
            self.reserved += WINDOW as u64;
        }
        Ok(())
    }

    /// Maps the window holding file offset `pos`, reserving it first if need be.
    fn map_window_at(&mut self, pos: u64) -> io::Result<()> {
        let offset = pos / WINDOW as u64 * WINDOW as u64;
        self.window = None;
        self.reserve(offset + WINDOW as u64)?;
        let window =
            (self.map)(&self.file, offset, WINDOW).map_err(|e| with_path(e, "map", &self.path))?;
        self.window = Some((offset, window));
        Ok(())
    }

    /// Copies the staged bytes into the mapping.
    fn copy_staged(&mut self) -> io::Result<()> {
        let mut from = 0;
        while from < self.staged.len() {
            let pos = self.written;
            let (start, window) = match self.window.as_mut() {
                Some((start, w)) if pos >= *start && pos < *start + WINDOW as u64 => (*start, w),
                _ => {
                    self.map_window_at(pos)?;
                    continue;
                }
            };
            let at = (pos - start) as usize;
            let n = (WINDOW - at).min(self.staged.len() - from);
            let bytes = window.bytes_mut();
            let Some(dst) = bytes.get_mut(at..at + n) else {
                return Err(io::Error::other(format!(
                    "{}: mapped window of {} bytes is shorter than expected",
                    self.path.display(),
                    bytes.len()
                )));
            };
            dst.copy_from_slice(&self.staged[from..from + n]);
            self.written += n as u64;
            from += n;
        }
        self.staged.clear();
        Ok(())
    }

    /// Writes the staged bytes and then `data` with one `pwrite` (which reserves no space:
    /// past the reserved windows it grows the file itself, and a full disk is its error).
    fn write_direct(&mut self, data: &[u8]) -> io::Result<()> {
        self.staged.extend_from_slice(data);
        let end = self.written + self.staged.len() as u64;
        self.file
            .write_all_at(&self.staged, self.written)
            .map_err(|e| with_path(e, "write", &self.path))?;
        self.written = end;
        self.reserved = self.reserved.max(end);
        self.staged.clear();
        Ok(())
    }

    /// Runs `op`; after a failure the writer takes no more appends.
    fn guarded(&mut self, op: impl FnOnce(&mut Self) -> io::Result<()>) -> io::Result<()> {
        if self.done {
            return Err(io::Error::other(format!(
                "{}: the log is closed or failed earlier",
                self.path.display()
            )));
        }
        let result = op(self);
        if result.is_err() {
            self.done = true;
            self.window = None;
            self.staged.clear();
        }
        result
    }
}

impl WritableFile for MappedLogFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.guarded(|w| {
            if data.len() >= DIRECT_BYTES {
                w.write_direct(data)?;
                w.writeback.advance(&w.file, w.written);
            } else {
                w.staged.extend_from_slice(data);
            }
            Ok(())
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        self.guarded(|w| {
            w.copy_staged()?;
            w.writeback.advance(&w.file, w.written);
            Ok(())
        })
    }

    fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.file
            .sync_data()
            .map_err(|e| with_path(e, "sync", &self.path))?;
        self.writeback.synced(self.written);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.written + self.staged.len() as u64
    }

    fn close(&mut self) -> io::Result<()> {
        if self.done && self.reserved == self.written {
            return Ok(());
        }
        let flushed = if self.done { Ok(()) } else { self.flush() };
        self.done = true;
        self.window = None;
        flushed?;
        self.file
            .set_len(self.written)
            .map_err(|e| with_path(e, "truncate", &self.path))?;
        self.reserved = self.written;
        Ok(())
    }
}

impl Drop for MappedLogFile {
    fn drop(&mut self) {
        // Best effort: a log left longer than its records ends in zeros, which readers
        // treat as a torn tail.
        let _ = self.close();
    }
}
