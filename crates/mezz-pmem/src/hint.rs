//! Advice to the kernel about files: write-lifetime hints (Linux `fcntl(F_SET_RW_HINT)`) and
//! early writeback (`sync_file_range(SYNC_FILE_RANGE_WRITE)`); and to the CPU about memory
//! ([`prefetch`]).
//!
//! Owns: [`set_write_life_hint`], [`start_writeback`] and [`prefetch`], the calls outside
//! the persistent-memory mapping code that need `unsafe`; they live here so the workspace
//! keeps its unsafe code in one crate. A lifetime hint tells the device (through the
//! kernel) how long the data written to the file will live, so flash with streams or FDP
//! can keep data of similar lifetime together. Early writeback starts writing a range of
//! dirty pages without waiting for it, so a later `fdatasync` finds little left to write
//! (measured on this project's ext4 test machine: the `fdatasync` of a 64 MiB log written
//! without it took 33-42 ms, with it every 1 MiB 0.2-0.3 ms).
//!
//! Invariants: both are advisory: a kernel or file system without support returns an
//! error, which callers may ignore; neither changes what is read back, and neither makes
//! anything durable (only `fsync`/`fdatasync` do).
//!
//! Thread-safety: stateless.

use std::fs::File;
use std::io;

/// Asks the CPU to start loading the cache line holding `value` (x86-64 `prefetcht0`; a
/// no-op elsewhere). Unlike a load, it never holds up the instructions after it, so a
/// cache miss the caller knows it will take overlaps the work it does first (the memtable
/// key filter: a load there cost 100-byte fills 8 % of their rate).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: a prefetch is only a hint: it never faults and changes no memory; the
    // address is that of a live reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(value).cast::<i8>(),
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = value;
}

/// `RWH_WRITE_LIFE_SHORT` .. `RWH_WRITE_LIFE_EXTREME` (include/uapi/linux/fcntl.h).
pub const WRITE_LIFE_SHORT: u64 = 2;
/// Medium lifetime.
pub const WRITE_LIFE_MEDIUM: u64 = 3;
/// Long lifetime.
pub const WRITE_LIFE_LONG: u64 = 4;
/// Extremely long lifetime.
pub const WRITE_LIFE_EXTREME: u64 = 5;

/// Sets the write-lifetime hint of `file`'s inode (`hint` is one of the constants above).
///
/// # Errors
/// The kernel's error (e.g. `EINVAL` where the file system does not take hints); always
/// `Unsupported` off Linux.
#[cfg(target_os = "linux")]
pub fn set_write_life_hint(file: &File, hint: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    /// `F_LINUX_SPECIFIC_BASE + 12`.
    const F_SET_RW_HINT: libc::c_int = 1024 + 12;
    let value: u64 = hint;
    // SAFETY: `file` owns an open descriptor for the duration of the call, and
    // F_SET_RW_HINT reads one u64 through the pointer, which points at a live local.
    crate::sys::check(unsafe { libc::fcntl(file.as_raw_fd(), F_SET_RW_HINT, &raw const value) })
}

/// Sets the write-lifetime hint of `file`'s inode: unsupported off Linux.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn set_write_life_hint(_file: &File, _hint: u64) -> io::Result<()> {
    Err(crate::sys::unsupported("write-lifetime hints need Linux"))
}

/// Starts writeback of the dirty pages of `file` in `offset..offset + len` and returns
/// without waiting for it to finish (it may wait for room in the device's queue).
///
/// # Errors
/// The kernel's error; always `Unsupported` off Linux.
#[cfg(target_os = "linux")]
pub fn start_writeback(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (offset, len) = crate::sys::file_range(offset, len, "writeback range")?;
    // SAFETY: `file` owns an open descriptor for the duration of the call; the call reads
    // no memory of this process.
    crate::sys::check(unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    })
}

/// Starts writeback of a range of `file`: unsupported off Linux.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn start_writeback(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Err(crate::sys::unsupported("early writeback needs Linux"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_is_set_or_refused_cleanly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = File::create(dir.path().join("t")).expect("create");
        // Depending on the kernel and file system this succeeds or returns an error; it
        // must never crash, and the file stays usable.
        let _ = set_write_life_hint(&f, WRITE_LIFE_LONG);
        let _ = set_write_life_hint(&f, 99);
        f.set_len(10).expect("file still usable");
    }

    #[test]
    fn writeback_leaves_the_bytes_as_written() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w");
        let mut f = File::create(&path).expect("create");
        f.write_all(&[7u8; 10_000]).expect("write");
        // Linux: accepted on a regular file; elsewhere refused. Never a crash, never a change.
        let r = start_writeback(&f, 0, 10_000);
        if cfg!(target_os = "linux") {
            r.expect("sync_file_range on a regular file");
        }
        let _ = start_writeback(&f, 5_000, 100_000);
        assert!(start_writeback(&f, u64::MAX, 1).is_err());
        let mut back = Vec::new();
        File::open(&path)
            .expect("open")
            .read_to_end(&mut back)
            .expect("read");
        assert_eq!(back, vec![7u8; 10_000]);
    }
}
