//! `mezzanine_` additions (`include/mezzanine/c.h`): what LevelDB's C API has no name for.
//! The option setters live with the other options (`options.rs`).
//!
//! Thread safety: as the `leveldb_t` functions.

use std::ffi::c_char;

use crate::db::{leveldb_t, lookup};
use crate::{malloc_cstring, status, with_errptr};

/// The engine's statistics as text (what `mezz stats` prints): a `malloc`ed string to free
/// with `leveldb_free`, NULL on error.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_stats_text(
    db: *mut leveldb_t,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    with_errptr(errptr, std::ptr::null_mut(), || {
        let d = lookup(db)?;
        Ok(malloc_cstring(&d.stats().to_string()))
    })
}

/// The engine's statistics as one JSON object (the `Stats` struct's fields): a `malloc`ed
/// string to free with `leveldb_free`, NULL on error.
///
/// # Safety
/// As [`mezzanine_stats_text`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_stats_json(
    db: *mut leveldb_t,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    with_errptr(errptr, std::ptr::null_mut(), || {
        let d = lookup(db)?;
        let json = serde_json::to_string(&d.stats())
            .map_err(|e| format!("IO error: stats as JSON: {e}"))?;
        Ok(malloc_cstring(&json))
    })
}

/// Flushes the memtable to a table and waits until it is durable.
///
/// # Safety
/// As [`mezzanine_stats_text`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_flush(db: *mut leveldb_t, errptr: *mut *mut c_char) {
    with_errptr(errptr, (), || status(lookup(db)?.flush()));
}

/// Closes the database like `leveldb_close`, but reports the first error met while closing
/// (a failed final sync, a background error). The handle is freed either way.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_close(db: *mut leveldb_t, errptr: *mut *mut c_char) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        let r = status(d.close());
        drop(d);
        // SAFETY: `db` is a live handle from `leveldb_open` (it was just found open).
        unsafe { crate::db::leveldb_close(db) };
        r
    });
}

/// The library's version, e.g. `"0.1.0"` (a static string: do not free).
#[unsafe(no_mangle)]
pub extern "C" fn mezzanine_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
