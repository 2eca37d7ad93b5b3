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
//! The next window is prepared ahead, on a helper thread ([`prepare_in_background`]): as
//! soon as the log's end enters a window, the helper reserves the one after it and maps
//! it, and the writer takes it when it gets there; old windows are unmapped on the helper
//! too. While most of the log's recent bytes were copied into the mapping (small
//! records), the helper also faults the window's pages in (`MappedWindow::prefault`), so
//! the writer's stores take no page fault (open-loop YCSB A at 20 K requests/s, 1 KiB
//! values: update p99 60-127 µs in four runs before, 26-57 µs in four after). While most
//! went with `pwrite` (large records) it does not: faulting in pages that `pwrite` fills
//! anyway cost the helper more than it saved the writer, which slowed fills of 4 KiB
//! values by about 10 % on 2 cores.
//!
//! Invariants:
//! - `written <= reserved`: the file is at least `reserved` bytes long while the writer is
//!   open (at most `prepared_to`, the end of the last window given to the helper), and
//!   bytes past `written` are zero (fresh space from `fallocate`); `staged` holds the
//!   appends after `written`, not yet in the file (`size` counts them).
//! - `close` (or drop) writes what is staged, unmaps, and truncates the file to `written`,
//!   so a closed log holds exactly what was appended. A log whose writer never closed it
//!   (the process died) may end in up to one window of zeros, which the log reader reports
//!   as a zero-filled (torn) tail.
//! - After a failed append, flush or close the writer refuses further appends: the file's
//!   tail is undefined.
//! - At most one window is being prepared at a time, always the one after the log's end;
//!   `close` waits for it before truncating, so no reservation lands after the truncation.
//!
//! Thread-safety: a writer is owned by one thread at a time (`&mut self`), like every
//! `WritableFile`. The helper thread (one per process, `mezz-logwindow`) only touches
//! windows the writer does not hold: the one it prepares, until it hands it over through
//! a channel, and retired ones, which it unmaps.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::posix::{Writeback, WritebackCursor, with_path};
use crate::worker::{Job, Worker};
use crate::{AllocateFn, MapWindowFn, MappedWindow, WritableFile};

/// Bytes reserved and mapped at a time.
pub(crate) const WINDOW: usize = 1 << 20;

/// Appends at least this large are written with `pwrite` rather than copied into the
/// mapping (see the module comment).
pub(crate) const DIRECT_BYTES: usize = 2048;

/// The thread that prepares and unmaps windows (`mezz-logwindow`).
static WINDOWS: Worker = Worker::new("mezz-logwindow");

/// The result of preparing a window on the helper.
type Prepared = io::Result<Box<dyn MappedWindow>>;

/// A window being prepared on the helper thread: reserved, mapped, faulted in.
#[derive(Debug)]
struct Ahead {
    /// The window's file offset.
    offset: u64,
    /// Where the helper sends the window; disconnected if the job is gone.
    rx: crossbeam_channel::Receiver<Prepared>,
}

/// Starts preparing the window at `offset` of `file` on the helper thread; `None` if the
/// helper or a second descriptor of the file cannot be had (the writer then maps the
/// window itself when it needs it).
fn prepare_in_background(
    file: &File,
    offset: u64,
    map: MapWindowFn,
    allocate: AllocateFn,
    prefault: bool,
) -> Option<Ahead> {
    let file = file.try_clone().ok()?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    let job: Job = Box::new(move || {
        let prepared = allocate(&file, offset, WINDOW as u64)
            .and_then(|()| map(&file, offset, WINDOW))
            .map(|mut w| {
                if prefault {
                    w.prefault();
                }
                w
            });
        // The writer may have gone (closed, or moved past this window): the window is
        // then unmapped here.
        let _ = tx.send(prepared);
    });
    WINDOWS.run(job).ok()?;
    Some(Ahead { offset, rx })
}

/// A log file written through a memory mapping of its current window.
#[derive(Debug)]
pub(crate) struct MappedLogFile {
    file: File,
    path: PathBuf,
    map: MapWindowFn,
    allocate: AllocateFn,
    /// The mapped window and its file offset (a multiple of [`WINDOW`]).
    window: Option<(u64, Box<dyn MappedWindow>)>,
    /// The next window, being prepared on the helper thread.
    ahead: Option<Ahead>,
    /// End of the furthest window given to the helper to prepare: the file may be that
    /// long even where `reserved` does not say so (a preparation the writer did not take).
    prepared_to: u64,
    /// Small appends not yet in the file.
    staged: Vec<u8>,
    /// Bytes in the file.
    written: u64,
    /// Bytes recently copied into the mapping and written with `pwrite` (halved at each
    /// window the log enters): whether the next window is faulted in ahead.
    recent_mapped: u64,
    recent_direct: u64,
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
            ahead: None,
            prepared_to: 0,
            staged: Vec::with_capacity(DIRECT_BYTES),
            written: 0,
            recent_mapped: 0,
            recent_direct: 0,
            reserved: 0,
            done: false,
            writeback: WritebackCursor::new(writeback, 0),
        };
        w.map_window_at(0)?;
        w.look_ahead();
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

    /// Maps the window holding file offset `pos`, reserving it first if need be: the
    /// window prepared ahead if it is that one (and its preparation worked), else here.
    fn map_window_at(&mut self, pos: u64) -> io::Result<()> {
        let offset = pos / WINDOW as u64 * WINDOW as u64;
        if let Some(ahead) = self.ahead.take_if(|a| a.offset == offset)
            && let Ok(Ok(window)) = ahead.rx.recv()
        {
            self.install_window(offset, window);
            return Ok(());
        }
        self.retire_window();
        self.reserve(offset + WINDOW as u64)?;
        let window =
            (self.map)(&self.file, offset, WINDOW).map_err(|e| with_path(e, "map", &self.path))?;
        self.install_window(offset, window);
        Ok(())
    }

    /// Makes `window`, the reserved window at `offset`, the mapped one.
    fn install_window(&mut self, offset: u64, window: Box<dyn MappedWindow>) {
        self.retire_window();
        self.reserved = self.reserved.max(offset + WINDOW as u64);
        self.window = Some((offset, window));
    }

    /// Unmaps the current window, on the helper thread if there is one.
    fn retire_window(&mut self) {
        if let Some(old) = self.window.take() {
            // Without a helper the job, and so the window, is dropped here.
            let _ = WINDOWS.run(Box::new(move || drop(old)));
        }
    }

    /// Once the log's end is in a window, moves the mapping there (taking the window
    /// prepared ahead, if it is ready) and starts preparing the window after it. Never
    /// waits for the helper, except for a window the log jumped past (a `pwrite` of more
    /// than a window). Advice: a failure only leaves the writer to map windows itself.
    fn look_ahead(&mut self) {
        let here = self.written / WINDOW as u64 * WINDOW as u64;
        let next = here + WINDOW as u64;
        if let Some(ahead) = self.ahead.take() {
            if ahead.offset >= next {
                self.ahead = Some(ahead);
                return;
            }
            if ahead.offset == here {
                match ahead.rx.try_recv() {
                    Ok(Ok(window)) => self.install_window(here, window),
                    // The writer maps this window itself when it stores into it.
                    Ok(Err(_)) | Err(crossbeam_channel::TryRecvError::Disconnected) => {}
                    Err(crossbeam_channel::TryRecvError::Empty) => {
                        self.ahead = Some(ahead);
                        return;
                    }
                }
            } else {
                // Dropped once its helper is done with it: its reservation is only space
                // the truncation at `close` gives back.
                let _ = ahead.rx.recv();
            }
        }
        let prefault = !self.mostly_direct();
        self.recent_mapped /= 2;
        self.recent_direct /= 2;
        self.ahead = prepare_in_background(&self.file, next, self.map, self.allocate, prefault);
        if self.ahead.is_some() {
            self.prepared_to = self.prepared_to.max(next + WINDOW as u64);
        }
    }

    /// Whether most of the log's recent bytes went with `pwrite` (large records): then
    /// windows are not faulted in ahead, and a flush writes what is staged with `pwrite`.
    fn mostly_direct(&self) -> bool {
        self.recent_direct > self.recent_mapped
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
            self.recent_mapped += n as u64;
            from += n;
        }
        self.staged.clear();
        self.look_ahead();
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
        self.recent_direct += end - self.written;
        self.written = end;
        self.reserved = self.reserved.max(end);
        self.staged.clear();
        self.look_ahead();
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
            if w.mostly_direct() {
                // Large records lately: their windows are not faulted in ahead, and a
                // small tail (a record's last fragment after a block boundary) copied
                // into one would take a page fault that reads the page in (4 KiB values:
                // 15 % of the writer's time), where a `pwrite` takes none.
                w.write_direct(&[])?;
            } else {
                w.copy_staged()?;
            }
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

    fn set_early_writeback(&mut self, on: bool) {
        self.writeback.set_on(on);
    }

    fn close(&mut self) -> io::Result<()> {
        // A window still being prepared could grow the file after the truncation.
        if let Some(ahead) = self.ahead.take() {
            let _ = ahead.rx.recv();
        }
        if self.done && self.reserved.max(self.prepared_to) == self.written {
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
        self.prepared_to = self.written;
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
