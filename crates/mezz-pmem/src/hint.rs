//! Write-lifetime hints for files (Linux `fcntl(F_SET_RW_HINT)`).
//!
//! Owns: [`set_write_life_hint`], the one system call outside the persistent-memory mapping
//! code that needs `unsafe`; it lives here so the workspace keeps its unsafe code in one
//! crate. A hint tells the device (through the kernel) how long the data written to the
//! file will live, so flash with streams or FDP can keep data of similar lifetime together.
//!
//! Invariants: a hint is advisory: a kernel or file system without support returns an
//! error, which callers may ignore; it never changes what is read back.
//!
//! Thread-safety: stateless.

use std::fs::File;
use std::io;

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
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), F_SET_RW_HINT, &raw const value) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the write-lifetime hint of `file`'s inode: unsupported off Linux.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn set_write_life_hint(_file: &File, _hint: u64) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "write-lifetime hints need Linux",
    ))
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
}
