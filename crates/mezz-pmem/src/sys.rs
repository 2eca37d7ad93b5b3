//! Helpers shared by the crate's system-call wrappers (`hint`, `mapfile`, `region`,
//! `sched`): a C return code as an `io::Result`, a file range as `off_t`s, the error of a
//! call made only on Linux, and populating a mapping's page tables in steps.
//!
//! Owns nothing; stateless and thread-safe.

use std::io;

/// `Ok` for a system call that returned 0, else the thread's `errno` as the error.
#[cfg(target_os = "linux")]
pub(crate) fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `offset` and `len` as `off_t`s; `InvalidInput` (naming `what`) past `i64::MAX`.
#[cfg(target_os = "linux")]
pub(crate) fn file_range(
    offset: u64,
    len: u64,
    what: &str,
) -> io::Result<(libc::off_t, libc::off_t)> {
    match (libc::off_t::try_from(offset), libc::off_t::try_from(len)) {
        (Ok(offset), Ok(len)) => Ok((offset, len)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} past i64::MAX"),
        )),
    }
}

/// Populates the page tables of `[base, base + len)` writable (`MADV_POPULATE_WRITE`,
/// Linux 5.14+: as a store would fault them in, without changing a byte), `step` bytes
/// per call: each call holds the process's address-space lock for reading, and a thread
/// changing a mapping meanwhile (an allocator growing its heap with `mprotect`, on a
/// foreground thread) waits for the whole call; a traced open-loop run showed requests
/// blocked behind the populate of a whole 1 MiB WAL window (0.7-1 ms). Before each step
/// asks `go_on`; stops at the first failing call (a kernel before 5.14: EINVAL), leaving
/// the rest to fault in on first use.
///
/// # Safety
/// `[base, base + len)` must lie in one writable mapping that stays mapped until this
/// returns; for a shared file mapping, the file must cover the range.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn populate_in_steps(
    base: *mut u8,
    len: usize,
    step: usize,
    go_on: impl Fn() -> bool,
) {
    let mut off = 0;
    while off < len && go_on() {
        let n = step.min(len - off);
        // SAFETY: `[off, off + n)` lies inside `[base, base + len)` (`off < len`,
        // `n <= len - off`), which the caller keeps mapped and writable (and covered by
        // its file). The advice only populates page tables.
        let rc = unsafe { libc::madvise(base.add(off).cast(), n, libc::MADV_POPULATE_WRITE) };
        if rc != 0 {
            return;
        }
        off += n;
    }
}

/// The error of a call this crate makes only on Linux (`what`: why, for the message).
#[cfg(not(target_os = "linux"))]
pub(crate) fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, what.to_owned())
}

/// Whether the open file `fd` lives on a memory file system (tmpfs or ramfs): one without a
/// medium, where `fsync`/`msync` do nothing and nothing survives a power cut. `false` when
/// `fstatfs` fails.
#[cfg(target_os = "linux")]
pub(crate) fn on_memory_fs(fd: std::os::fd::RawFd) -> bool {
    /// `f_type` of tmpfs and of ramfs (`linux/magic.h`).
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `st` is a writable `statfs` buffer for the call to fill; `fd` is an open file
    // descriptor borrowed from the caller; the result is read only when the call succeeded.
    let rc = unsafe { libc::fstatfs(fd, st.as_mut_ptr()) };
    if rc != 0 {
        return false;
    }
    // SAFETY: `fstatfs` returned 0, so it initialised the buffer.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)] // `f_type`'s integer type differs between targets
    let f_type = st.f_type as i64;
    f_type == TMPFS_MAGIC || f_type == RAMFS_MAGIC
}
