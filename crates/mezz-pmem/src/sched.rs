//! CPU priority of the calling thread (Linux `setpriority` on a thread id).
//!
//! Owns: [`lower_current_thread_priority`], a system call that needs `unsafe`; it lives here
//! so the workspace keeps its unsafe code in one crate. The engine runs its background work
//! (flushes, compactions, freeing memtables) at a lower priority so that, on a machine with
//! few cores, a foreground request is not kept waiting for a scheduler time slice behind it
//! (RocksDB offers the same through `Env::LowerThreadPoolCPUPriority`).
//!
//! Invariants: the priority only ever goes down (the nice value up): an unprivileged thread
//! may not raise it again, so a request for a nice value at or below the current one is
//! left alone.
//!
//! Thread-safety: affects only the calling thread.

use std::io;

/// Raises the calling thread's nice value to `nice` (0..=19; higher is a lower priority)
/// unless it is already at least that.
///
/// # Errors
/// The kernel's error; always `Unsupported` off Linux.
#[cfg(target_os = "linux")]
pub fn lower_current_thread_priority(nice: i32) -> io::Result<()> {
    let nice = nice.clamp(0, 19);
    // SAFETY: gettid takes no argument and cannot fail.
    let tid = unsafe { libc::gettid() };
    let who = libc::id_t::try_from(tid).map_err(|_| io::Error::other("negative thread id"))?;
    // On Linux a thread is a task: PRIO_PROCESS with a thread id names that thread alone.
    // getpriority returns -1 both for nice -1 and on error: either way it is below any
    // target, and setpriority below decides.
    // SAFETY: getpriority reads no memory of ours; `which` and `who` are plain integers.
    let current = unsafe { libc::getpriority(libc::PRIO_PROCESS, who) };
    if current >= nice {
        return Ok(());
    }
    // SAFETY: setpriority reads no memory of ours; `which`, `who` and the value are plain
    // integers.
    crate::sys::check(unsafe { libc::setpriority(libc::PRIO_PROCESS, who, nice) })
}

/// Off Linux: not supported.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn lower_current_thread_priority(_nice: i32) -> io::Result<()> {
    Err(crate::sys::unsupported("thread priorities are Linux-only"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice_of_this_thread() -> i32 {
        // SAFETY: as in lower_current_thread_priority.
        let tid = unsafe { libc::gettid() };
        // SAFETY: as in lower_current_thread_priority.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) }
    }

    #[test]
    fn the_priority_of_this_thread_only_goes_down() {
        let main_before = nice_of_this_thread();
        std::thread::spawn(|| {
            let before = nice_of_this_thread();
            let target = (before + 5).min(19);
            lower_current_thread_priority(target).unwrap();
            assert_eq!(nice_of_this_thread(), target);
            // A request for a higher priority is left alone (and is not an error).
            lower_current_thread_priority(before).unwrap();
            assert_eq!(nice_of_this_thread(), target);
        })
        .join()
        .unwrap();
        // Another thread kept its own priority.
        assert_eq!(nice_of_this_thread(), main_before);
    }
}
