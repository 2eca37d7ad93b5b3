//! Memory-mapped windows of ordinary files, for the real file system's log writer
//! ([`mezz_env::PosixFs::with_mapped_logs`]): [`map_window`] maps a range of a file shared
//! and writable, [`allocate`] reserves its disk space first (`fallocate`), so that no
//! store into the mapping can hit a full disk (which would be a `SIGBUS`, not an error);
//! and read-only mappings of whole files for table reads
//! ([`mezz_env::PosixFs::with_mapped_reads`]): [`map_read`].
//!
//! Owns: [`FileWindow`] and [`ReadMapping`], one `MAP_SHARED` mapping each, unmapped when
//! dropped.
//!
//! Invariants: a mapping's pointer and length describe one live mapping for as long as its
//! handle exists; a window is only reached through `&mut FileWindow`, a read mapping only
//! read.
//!
//! Thread-safety: both are `Send + Sync` (plain memory; a window's mutable access needs
//! `&mut`, a read mapping is never written through).

use std::fs::File;
use std::io;
use std::ptr::NonNull;

use mezz_env::{MappedFile, MappedWindow};

/// One `MAP_SHARED` mapping of a file, unmapped when dropped: what [`ReadMapping`] and
/// [`FileWindow`] hold.
#[derive(Debug)]
struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `file` from `offset` (a multiple of the page size), shared, with
    /// protection `prot`.
    #[cfg(target_os = "linux")]
    fn new(file: &File, offset: i64, len: usize, prot: libc::c_int) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a fresh mapping (null hint) of an open descriptor; no existing memory of
        // the process is affected. The result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                offset,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))?;
        Ok(Self { base, len })
    }
}

/// Bytes unmapped per system call when a mapping drops. The kernel zaps the pages of an
/// unmapped range holding the process's address-space lock (for reading, after the
/// mapping itself is gone), and a foreground thread changing a mapping meanwhile (the
/// allocator's `mprotect`) waits for it: a window of dirty shared pages takes a while.
/// In steps of 64 pages no thread waits long.
#[cfg(target_os = "linux")]
const UNMAP_STEP: usize = 256 << 10;

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            let mut off = 0;
            while off < self.len {
                let n = UNMAP_STEP.min(self.len - off);
                // SAFETY: `[off, off + n)` lies inside the mapping made in `Mapping::new`
                // (`base`/`len`), page aligned (`off` is a multiple of UNMAP_STEP, a
                // multiple of the page size); its owner (a read mapping or a window) hands
                // out references only borrowed from itself, so none outlives it. Unmapping
                // a piece of a mapping leaves the rest mapped for the next steps.
                unsafe {
                    libc::munmap(self.base.as_ptr().add(off).cast(), n);
                }
                off += n;
            }
        }
    }
}

/// A shared, read-only mapping of the start of a file (see [`map_read`]).
#[derive(Debug)]
pub struct ReadMapping(Mapping);

// SAFETY: the handle owns its mapping, which is never written through; reading shared
// memory from several threads races on nothing.
unsafe impl Send for ReadMapping {}
// SAFETY: as above.
unsafe impl Sync for ReadMapping {}

impl MappedFile for ReadMapping {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `base..base + len` is one live read-only mapping made by `map_read`,
        // unmapped only when the handle drops. The file it maps is one the engine no
        // longer writes (a finished table); `map_read`'s caller promises it does not shrink
        // while mapped.
        unsafe { std::slice::from_raw_parts(self.0.base.as_ptr(), self.0.len) }
    }
}

/// Maps the first `len` bytes of `file` read-only and shared. The file must be at least
/// `len` bytes long and must not shrink while the mapping lives (a read past its end is a
/// `SIGBUS`).
///
/// # Errors
/// The kernel's error from `mmap`; `InvalidInput` for `len` 0; `Unsupported` off Linux.
#[cfg(target_os = "linux")]
pub fn map_read(file: &File, len: usize) -> io::Result<Box<dyn MappedFile>> {
    Ok(Box::new(ReadMapping(Mapping::new(
        file,
        0,
        len,
        libc::PROT_READ,
    )?)))
}

/// Maps a file for reading: unsupported off Linux.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn map_read(_file: &File, _len: usize) -> io::Result<Box<dyn MappedFile>> {
    Err(crate::sys::unsupported("mapped table reads need Linux"))
}

/// A shared, writable mapping of a range of a file.
#[derive(Debug)]
pub struct FileWindow(Mapping);

/// Bytes of a window populated per system call by [`MappedWindow::prefault`]: 16 pages,
/// so the address-space lock is never held long (see `sys::populate_in_steps`).
#[cfg(target_os = "linux")]
const POPULATE_STEP: usize = 64 << 10;

// SAFETY: the window owns its mapping; the bytes are only reached through `&mut self`
// (`bytes_mut`), so moving or sharing the handle between threads races on nothing.
unsafe impl Send for FileWindow {}
// SAFETY: as above: `&FileWindow` gives no access to the bytes.
unsafe impl Sync for FileWindow {}

impl MappedWindow for FileWindow {
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `base..base + len` is one live mapping made readable and writable by
        // `map_window`, unmapped only when the window drops; `&mut self` makes this the only
        // reference into it. Stores into a shared file mapping are defined for the range
        // the file covers, which `allocate` grew before the window was mapped.
        unsafe { std::slice::from_raw_parts_mut(self.0.base.as_ptr(), self.0.len) }
    }

    #[cfg(target_os = "linux")]
    fn prefault(&mut self) {
        // SAFETY: `base..base + len` is one live, writable mapping owned by this window
        // (`&mut self`: nothing else uses it or unmaps it meanwhile), within the range
        // `allocate` made the file cover.
        unsafe {
            crate::sys::populate_in_steps(self.0.base.as_ptr(), self.0.len, POPULATE_STEP, || true)
        }
    }
}

/// Maps `len` bytes of `file` from `offset` (a multiple of the page size) shared and
/// writable. The caller makes sure the file covers the range (see [`allocate`]) before
/// storing into it.
///
/// # Errors
/// The kernel's error from `mmap`; `InvalidInput` for a range past `i64::MAX`;
/// `Unsupported` off Linux.
#[cfg(target_os = "linux")]
pub fn map_window(file: &File, offset: u64, len: usize) -> io::Result<Box<dyn MappedWindow>> {
    let (off, _) = crate::sys::file_range(offset, 0, "map offset")?;
    Ok(Box::new(FileWindow(Mapping::new(
        file,
        off,
        len,
        libc::PROT_READ | libc::PROT_WRITE,
    )?)))
}

/// Maps a window of a file: unsupported off Linux.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn map_window(_file: &File, _offset: u64, _len: usize) -> io::Result<Box<dyn MappedWindow>> {
    Err(crate::sys::unsupported("mapped log windows need Linux"))
}

/// Reserves disk space for `offset..offset + len` of `file` (`fallocate`, mode 0): the
/// file grows to at least `offset + len` bytes, the new bytes read as zeros.
///
/// # Errors
/// The kernel's error (`ENOSPC`, or `EOPNOTSUPP` where the file system cannot reserve);
/// `InvalidInput` for a range past `i64::MAX`; `Unsupported` off Linux.
#[cfg(target_os = "linux")]
pub fn allocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (off, len) = crate::sys::file_range(offset, len, "reserved range")?;
    // SAFETY: `file` owns an open descriptor for the duration of the call; the call reads
    // no memory of this process.
    crate::sys::check(unsafe { libc::fallocate(file.as_raw_fd(), 0, off, len) })
}

/// Reserves space in a file: unsupported off Linux.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn allocate(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Err(crate::sys::unsupported("reserving file space needs Linux"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mezz_env::{FileSystem, PosixFs};
    use std::path::Path;

    fn mapped_fs() -> PosixFs {
        PosixFs::new().with_mapped_logs(map_window, allocate)
    }

    /// Appends `n` records of varied sizes (small ones copied into the mapping, large ones
    /// written directly, some crossing 1 MiB windows, one larger than a window); returns
    /// the bytes appended.
    fn append_records(w: &mut dyn mezz_env::WritableFile, n: u32) -> Vec<u8> {
        let mut expect = Vec::new();
        for i in 0..n {
            let len = if i == n / 2 {
                2_500_000
            } else {
                1 + (i as usize * 7919) % 9000
            };
            let rec: Vec<u8> = (0..len).map(|j| (i as usize + j) as u8 | 1).collect();
            w.append(&rec).unwrap();
            expect.extend_from_slice(&rec);
            if i % 17 == 0 {
                w.flush().unwrap();
            }
        }
        expect
    }

    /// A mapped reader returns what `pread` returns, anywhere in the file, refuses reads
    /// past the end with `UnexpectedEof`, and an empty file falls back to `pread`.
    #[test]
    fn mapped_reads_return_the_files_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000009.sst");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let fs = PosixFs::new().with_mapped_reads(map_read);
        let mapped = fs.open_read_mapped(&path).unwrap();
        let plain = fs.open_read(&path).unwrap();
        assert_eq!(mapped.size(), data.len() as u64);
        assert!(
            format!("{mapped:?}").contains("MappedRandomAccessFile"),
            "{mapped:?}"
        );
        for (off, len) in [
            (0, 1),
            (4095, 2),
            (123_456, 4096),
            (299_000, 1000),
            (0, 300_000),
        ] {
            let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
            mapped.read_exact_at(off, &mut a).unwrap();
            plain.read_exact_at(off, &mut b).unwrap();
            assert_eq!(a, b);
            assert_eq!(a, data[off as usize..off as usize + len]);
        }
        for (off, len) in [(299_999, 2), (300_000, 1), (u64::MAX, 1)] {
            let e = mapped.read_exact_at(off, &mut vec![0u8; len]).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{off}: {e}");
            assert!(e.to_string().contains("000009.sst"), "{e}");
        }
        // Without the mapping function, or for an empty file: the ordinary reader.
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        let f = fs.open_read_mapped(&empty).unwrap();
        assert!(format!("{f:?}").contains("PosixRandomAccessFile"), "{f:?}");
        let f = PosixFs::new().open_read_mapped(&path).unwrap();
        assert!(format!("{f:?}").contains("PosixRandomAccessFile"), "{f:?}");
    }

    /// What a reader sees is exactly what was appended, across windows, after `close`, and
    /// `sync` works after it; the writer refuses appends once closed.
    #[test]
    fn a_closed_log_holds_exactly_its_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000007.log");
        let fs = mapped_fs();
        let mut w = fs.create_log(&path).unwrap();
        let expect = append_records(w.as_mut(), 700);
        assert_eq!(w.size(), expect.len() as u64);
        w.sync().unwrap();
        w.close().unwrap();
        w.sync().unwrap();
        assert!(w.append(b"late").is_err());
        assert_eq!(std::fs::read(&path).unwrap(), expect);
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), expect);
    }

    /// Small appends next to large ones (copied into the mapping, and written with
    /// `pwrite`, in windows prepared ahead or not yet) are visible to readers after each
    /// flush, in order.
    #[test]
    fn small_appends_beside_large_ones_are_visible_after_each_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000010.log");
        let fs = mapped_fs();
        let mut w = fs.create_log(&path).unwrap();
        let mut expect = Vec::new();
        let mut add = |w: &mut Box<dyn mezz_env::WritableFile>, len: usize, flush: bool| {
            let rec: Vec<u8> = (0..len).map(|j| (expect.len() + j) as u8 | 1).collect();
            w.append(&rec).unwrap();
            expect.extend_from_slice(&rec);
            if flush {
                w.flush().unwrap();
                let now = std::fs::read(&path).unwrap();
                assert_eq!(
                    &now[..expect.len()],
                    &expect[..],
                    "after {} bytes",
                    expect.len()
                );
            }
        };
        for round in 0..40 {
            add(&mut w, 4100 + round * 13, false);
            add(&mut w, 7, false);
            add(&mut w, 300 + round, true);
            // Small records only, across the next pages.
            for _ in 0..(round % 5) * 20 {
                add(&mut w, 100, true);
            }
        }
        // Then small records only, for more than a window: the log goes back to copying
        // them into windows (faulted in ahead once most recent bytes went that way).
        for i in 0..12_000 {
            add(&mut w, 100 + i % 50, i % 97 == 0);
        }
        add(&mut w, 5000, true);
        w.close().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expect);
    }

    /// Dropping the writer closes it: the file is truncated to its appends.
    #[test]
    fn dropping_the_writer_truncates_the_reserved_space() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000008.log");
        let fs = mapped_fs();
        let mut w = fs.create_log(&path).unwrap();
        w.append(b"hello").unwrap();
        w.flush().unwrap();
        // While open, the file is one reserved window (1 MiB) long, or two once the next
        // window is prepared ahead, zeros after the appends, and flushed appends are
        // visible to readers.
        let open = std::fs::read(&path).unwrap();
        assert!(
            open.len() == 1 << 20 || open.len() == 2 << 20,
            "{}",
            open.len()
        );
        assert_eq!(&open[..5], b"hello");
        assert!(open[5..].iter().all(|&b| b == 0));
        // The helper reserves the next window ahead of the writer.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::fs::metadata(&path).unwrap().len() != 2 << 20 {
            assert!(
                std::time::Instant::now() < deadline,
                "no window prepared ahead"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
    }

    /// A writer that never closes (the process died) leaves its records followed by zeros,
    /// which the log reader reports as a torn tail after every record.
    #[test]
    fn an_unclosed_log_reads_as_its_records_then_a_torn_tail() {
        use mezz_format::log::{LogRead, LogReader, LogWriter};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000009.log");
        let fs = mapped_fs();
        let mut log = LogWriter::new(fs.create_log(&path).unwrap());
        // Small records: copied into the mapping, so the reserved window's zeros follow.
        let records: Vec<Vec<u8>> = (0..50u8)
            .map(|i| vec![i; 100 + usize::from(i) * 37])
            .collect();
        for r in &records {
            log.add_record(r).unwrap();
        }
        log.flush().unwrap();
        // Simulates the crash: the writer is leaked, never closed.
        std::mem::forget(log);
        let mut reader = LogReader::new(fs.open_read(&path).unwrap());
        for r in &records {
            match reader.read_record() {
                LogRead::Record { data, .. } => assert_eq!(&data, r),
                other => panic!("expected a record, got {other:?}"),
            }
        }
        assert!(matches!(
            reader.read_record(),
            LogRead::Corrupt { at_tail: true, .. }
        ));
    }

    /// Other files are written as before, and a file system that maps logs still creates
    /// them where the path is valid only (errors name the path).
    #[test]
    fn other_files_and_errors_are_unaffected() {
        let dir = tempfile::tempdir().unwrap();
        let fs = mapped_fs();
        let path = dir.path().join("MANIFEST-000001");
        let mut w = fs.create(&path).unwrap();
        w.append(b"abc").unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        let err = fs
            .create_log(Path::new("/nonexistent-dir/000001.log"))
            .unwrap_err();
        assert!(err.to_string().contains("000001.log"), "{err}");
    }
}
