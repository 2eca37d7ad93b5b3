//! Helpers shared by the crate's system-call wrappers (`hint`, `mapfile`, `region`,
//! `sched`): a C return code as an `io::Result`, a file range as `off_t`s, and the error
//! of a call made only on Linux.
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
