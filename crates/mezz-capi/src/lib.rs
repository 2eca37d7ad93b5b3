//! Mezzanine's C API: LevelDB 1.23's `leveldb/c.h`, function for function, plus a few
//! `mezzanine_` additions (`include/mezzanine/c.h`) and RocksDB's names for optimistic
//! transactions and indexed write batches (`include/mezzanine/transaction.h`) and for column
//! families (`include/mezzanine/column_family.h`). Built as `libmezzanine.so` and
//! `libmezzanine.a`; `docs/c-api.md` maps LevelDB's options to the engine's.
//!
//! What this layer owns: the opaque handles handed to C (each a `Box` turned into a raw
//! pointer and back exactly once, by its `*_destroy` / `leveldb_close`), the copies of
//! results into `malloc`ed memory, and the translation of engine errors into LevelDB's
//! `char** errptr` convention.
//!
//! Invariants at the boundary:
//! - No panic crosses into C: every exported function runs its body under
//!   [`catch_unwind`](std::panic::catch_unwind); a panic becomes an error through `errptr`
//!   (or the function's documented "nothing" result when it has no `errptr`).
//! - A NULL handle or a NULL (pointer, nonzero length) pair is reported, never dereferenced.
//!   A NULL `errptr` is allowed: the error is then dropped.
//! - Database handles are checked against a registry of open handles, so a closed (or
//!   never opened) `leveldb_t*` is an error, not a use after free. Other handles are plain
//!   owned boxes: using one after its `*_destroy` is undefined, as in LevelDB.
//!
//! Thread safety: as LevelDB's. A `leveldb_t*` may be used from many threads at once; an
//! iterator, write batch or options object by one thread at a time.

#![allow(non_camel_case_types)]

mod backup;
mod batch;
mod cf;
mod db;
mod ext;
mod iter;
mod options;
mod txn;

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Writes `msg` to `*errptr` as a fresh `malloc`ed C string, freeing the previous message
/// first (LevelDB's `SaveError`). Does nothing when `errptr` is NULL.
pub(crate) fn set_error(errptr: *mut *mut c_char, msg: &str) {
    if errptr.is_null() {
        return;
    }
    let s = malloc_cstring(msg);
    // SAFETY: `errptr` is non-null and, per the C API's contract, points to a writable
    // `char*` that is either NULL or a string this library (or the caller) `malloc`ed.
    unsafe {
        let old = *errptr;
        if !old.is_null() {
            libc::free(old.cast());
        }
        *errptr = s;
    }
}

/// `bytes` copied into `malloc`ed memory (at least one byte, so a found empty value is not
/// NULL). NULL if `malloc` fails.
pub(crate) fn malloc_copy(bytes: &[u8]) -> *mut c_char {
    // SAFETY: `malloc` with a nonzero size; the result is checked for NULL before use.
    let p: *mut u8 = unsafe { libc::malloc(bytes.len().max(1)) }.cast();
    if p.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `p` holds at least `bytes.len()` bytes and cannot overlap `bytes` (fresh).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
    p.cast()
}

/// `s` as a `malloc`ed NUL-terminated string (interior NULs become `?`).
pub(crate) fn malloc_cstring(s: &str) -> *mut c_char {
    let mut v: Vec<u8> = s.bytes().map(|b| if b == 0 { b'?' } else { b }).collect();
    v.push(0);
    malloc_copy(&v)
}

/// The `len` bytes at `p`. (NULL, 0) is the empty slice; (NULL, n > 0) is an error naming
/// `what`.
///
/// # Safety
/// A non-null `p` must point to `len` readable bytes that stay valid and unmodified for `'a`.
pub(crate) unsafe fn bytes<'a>(
    p: *const c_char,
    len: usize,
    what: &str,
) -> Result<&'a [u8], String> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(format!(
            "Invalid argument: {what} is NULL with length {len}"
        ));
    }
    if len > isize::MAX as usize {
        return Err(format!(
            "Invalid argument: {what} length {len} is too large"
        ));
    }
    // SAFETY: `p` is non-null and the caller guarantees `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// The NUL-terminated string at `p`; NULL is an error naming `what`.
///
/// # Safety
/// A non-null `p` must point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a [u8], String> {
    if p.is_null() {
        return Err(format!("Invalid argument: {what} is NULL"));
    }
    // SAFETY: non-null, NUL-terminated per the caller's guarantee.
    Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
}

/// A panic payload as text.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs `f` for a function with an `errptr`: an `Err(msg)` or a panic is stored through
/// `errptr` and `fallback` is returned.
pub(crate) fn with_errptr<T>(
    errptr: *mut *mut c_char,
    fallback: T,
    f: impl FnOnce() -> Result<T, String>,
) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(msg)) => {
            set_error(errptr, &msg);
            fallback
        }
        Err(p) => {
            set_error(
                errptr,
                &format!(
                    "Internal error: panic in libmezzanine: {}",
                    panic_message(&*p)
                ),
            );
            fallback
        }
    }
}

/// Runs `f` for a function without an `errptr`: a panic returns `fallback` (the panic
/// message has already been printed to stderr by the panic hook).
pub(crate) fn no_errptr<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// The LevelDB-style text of an engine error (`"Corruption: ..."`, `"IO error: ..."`,
/// `"Invalid argument: ..."`, `"Not implemented: ..."`; a transaction conflict is
/// RocksDB's `"Resource busy: ..."`).
pub(crate) fn status_text(e: &engine::Error) -> String {
    use engine::Error as E;
    match e {
        E::Corruption { .. } => format!("Corruption: {e}"),
        E::Io { path, source } => match path {
            Some(p) => format!("IO error: {}: {source}", p.display()),
            None => format!("IO error: {source}"),
        },
        E::InvalidArgument(m) => format!("Invalid argument: {m}"),
        E::UnsupportedVersion { .. } => format!("Not implemented: {e}"),
        // RocksDB's `Status::Busy`: a transaction's conflict at commit.
        E::Busy(m) => format!("Resource busy: {m}"),
        _ => format!("IO error: {e}"),
    }
}

/// `f`'s engine error as LevelDB-style text.
pub(crate) fn status<T>(r: engine::Result<T>) -> Result<T, String> {
    r.map_err(|e| status_text(&e))
}

/// The LevelDB ABI version this library implements (1.23).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_major_version() -> libc::c_int {
    1
}

/// See [`leveldb_major_version`].
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_minor_version() -> libc::c_int {
    23
}

/// Frees memory this library returned (`leveldb_get`, `leveldb_property_value`, error
/// strings, ...). NULL is allowed.
///
/// # Safety
/// `ptr` must be NULL or a pointer this library `malloc`ed and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_free(ptr: *mut libc::c_void) {
    // SAFETY: per the contract, `ptr` is NULL or a live `malloc` result; `free(NULL)` is a
    // no-op.
    unsafe { libc::free(ptr) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(err: &mut *mut c_char) -> Option<String> {
        if err.is_null() {
            return None;
        }
        // SAFETY: set by `set_error`: a malloc'ed NUL-terminated string.
        let s = unsafe { CStr::from_ptr(*err) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: malloc'ed by this library, freed once.
        unsafe { libc::free((*err).cast()) };
        *err = std::ptr::null_mut();
        Some(s)
    }

    #[test]
    fn a_panic_becomes_an_error_through_errptr() {
        let mut err: *mut c_char = std::ptr::null_mut();
        let v = with_errptr(&mut err, 7, || -> Result<i32, String> { panic!("boom") });
        assert_eq!(v, 7);
        let msg = take(&mut err).unwrap();
        assert!(
            msg.starts_with("Internal error: panic in libmezzanine: boom"),
            "{msg}"
        );
        assert_eq!(no_errptr(3, || -> i32 { panic!("again") }), 3);
    }

    #[test]
    fn set_error_replaces_the_previous_message_and_tolerates_null() {
        let mut err: *mut c_char = std::ptr::null_mut();
        set_error(&mut err, "first");
        set_error(&mut err, "second\0with nul");
        assert_eq!(take(&mut err).unwrap(), "second?with nul");
        set_error(std::ptr::null_mut(), "dropped");
    }

    #[test]
    fn null_with_length_is_an_error_and_null_empty_is_empty() {
        // SAFETY: NULL pointers are never read.
        unsafe {
            assert_eq!(bytes(std::ptr::null(), 0, "key").unwrap(), b"");
            let e = bytes(std::ptr::null(), 3, "key").unwrap_err();
            assert_eq!(e, "Invalid argument: key is NULL with length 3");
        }
    }
}
