//! A log file appended through a shared memory mapping (the real file system's WAL writer,
//! when [`PosixFs::with_mapped_logs`](crate::PosixFs::with_mapped_logs) asks for it).
//!
//! Owns: [`MappedLogFile`]: a writer that reserves the file one window at a time
//! ([`WINDOW`] bytes: `fallocate`, so a full disk is an error here and never a `SIGBUS` at
//! a store) and copies appends into a `MAP_SHARED` mapping of that window. An append is
//! a `memcpy` into the page cache: no system call, and it survives a crash of the process
//! as a `write` would. `sync` is `fdatasync`, which writes back pages dirtied through a
//! mapping like any others.
//!
//! Invariants:
//! - `size <= reserved`; the file is `reserved` bytes long while the writer is open, and
//!   bytes in `size..reserved` are zero (fresh space from `fallocate`).
//! - `close` (or drop) unmaps and truncates the file to `size`, so a closed log holds
//!   exactly what was appended. A log whose writer never closed it (the process died)
//!   ends in up to one window of zeros, which the log reader reports as a zero-filled
//!   (torn) tail.
//! - After a failed append or close the writer refuses further appends: the file's tail
//!   is undefined.
//!
//! Thread-safety: a writer is owned by one thread at a time (`&mut self`), like every
//! `WritableFile`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::posix::{Writeback, start_writeback, with_path};
use crate::{AllocateFn, MapWindowFn, MappedWindow, WritableFile};

/// Bytes reserved and mapped at a time.
pub(crate) const WINDOW: usize = 1 << 20;

/// A log file written through a memory mapping of its current window.
#[derive(Debug)]
pub(crate) struct MappedLogFile {
    file: File,
    path: PathBuf,
    map: MapWindowFn,
    allocate: AllocateFn,
    /// The mapped window and its file offset (`None` before the first append that needs
    /// one, and after close or an error).
    window: Option<(u64, Box<dyn MappedWindow>)>,
    /// Bytes appended.
    size: u64,
    /// The file's length: reserved with `fallocate`, zero past `size`.
    reserved: u64,
    /// Set once the writer must not append any more (closed, or an operation failed).
    done: bool,
    /// Early writeback, if the file system asks for it.
    writeback: Option<Writeback>,
    /// End of the range whose writeback was last started.
    writeback_to: u64,
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
            size: 0,
            reserved: 0,
            done: false,
            writeback,
            writeback_to: 0,
        };
        w.next_window()?;
        Ok(w)
    }

    /// Reserves and maps the window that starts at `size` (a multiple of [`WINDOW`]).
    fn next_window(&mut self) -> io::Result<()> {
        let offset = self.size;
        self.window = None;
        if self.reserved < offset + WINDOW as u64 {
            (self.allocate)(&self.file, offset, WINDOW as u64)
                .map_err(|e| with_path(e, "reserve log space in", &self.path))?;
            self.reserved = offset + WINDOW as u64;
        }
        let window =
            (self.map)(&self.file, offset, WINDOW).map_err(|e| with_path(e, "map", &self.path))?;
        self.window = Some((offset, window));
        Ok(())
    }

    fn append_inner(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let room = match &self.window {
                Some((start, _)) => (start + WINDOW as u64 - self.size) as usize,
                None => 0,
            };
            if room == 0 {
                self.next_window()?;
                continue;
            }
            let Some((start, window)) = self.window.as_mut() else {
                continue;
            };
            let n = room.min(data.len());
            let at = (self.size - *start) as usize;
            let bytes = window.bytes_mut();
            let Some(dst) = bytes.get_mut(at..at + n) else {
                return Err(io::Error::other(format!(
                    "{}: mapped window of {} bytes is shorter than expected",
                    self.path.display(),
                    bytes.len()
                )));
            };
            dst.copy_from_slice(&data[..n]);
            self.size += n as u64;
            data = &data[n..];
        }
        if let Some(w) = self.writeback
            && self.size.saturating_sub(self.writeback_to) >= w.bytes
        {
            start_writeback(
                w,
                &self.file,
                self.writeback_to,
                self.size - self.writeback_to,
            );
            self.writeback_to = self.size;
        }
        Ok(())
    }
}

impl WritableFile for MappedLogFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if self.done {
            return Err(io::Error::other(format!(
                "append to {}: the log is closed or failed earlier",
                self.path.display()
            )));
        }
        let result = self.append_inner(data);
        if result.is_err() {
            self.done = true;
            self.window = None;
        }
        result
    }

    fn flush(&mut self) -> io::Result<()> {
        // Appended bytes are in the page cache already.
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file
            .sync_data()
            .map_err(|e| with_path(e, "sync", &self.path))?;
        self.writeback_to = self.size;
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn close(&mut self) -> io::Result<()> {
        self.window = None;
        if self.done && self.reserved == self.size {
            return Ok(());
        }
        self.done = true;
        self.file
            .set_len(self.size)
            .map_err(|e| with_path(e, "truncate", &self.path))?;
        self.reserved = self.size;
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
