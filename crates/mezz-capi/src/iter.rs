//! Iterators over a consistent snapshot of a database.
//!
//! An iterator owns what it reads (it pins the engine's view), so it stays safe to use,
//! and must still be destroyed, after its database is closed; from the moment the close
//! begins (on any thread) it is not valid, its key and value are NULL, and
//! `leveldb_iter_get_error` reports the database closed. Creating one on a closed or
//! NULL database, or seeking with a NULL key of nonzero length, gives an iterator that is
//! not valid and whose `leveldb_iter_get_error` says why. `key`/`value` on an iterator that
//! is not valid return NULL with length 0 (LevelDB requires validity there).
//!
//! Thread safety: an iterator is used by one thread at a time.

use std::ffi::c_char;

use engine::DbIterator;

use crate::db::{leveldb_t, lookup, read_options};
use crate::options::leveldb_readoptions_t;
use crate::{bytes, no_errptr, set_error, status};

/// An iterator (`leveldb_create_iterator`).
#[derive(Debug)]
pub struct leveldb_iterator_t {
    it: Option<DbIterator>,
    /// An error from creating the iterator or from a bad argument.
    err: Option<String>,
}

/// An iterator over `db` as of now (or the read options' snapshot). It starts not valid:
/// seek first. Never NULL (except if out of memory).
///
/// # Safety
/// `db` NULL or from `leveldb_open`; `options` NULL (defaults) or a live read options
/// handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_create_iterator(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
) -> *mut leveldb_iterator_t {
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let d = lookup(db)?;
        let ro = read_options(options, db)?;
        status(d.cursor(&ro))
    }));
    leveldb_iterator_t::boxed(made)
}

impl leveldb_iterator_t {
    /// The handle of an iterator made under `catch_unwind`: the iterator, or its error.
    pub(crate) fn boxed(
        made: std::thread::Result<Result<DbIterator, String>>,
    ) -> *mut leveldb_iterator_t {
        let (it, err) = match made {
            Ok(Ok(it)) => (Some(it), None),
            Ok(Err(e)) => (None, Some(e)),
            Err(_) => (
                None,
                Some("Internal error: panic in libmezzanine creating an iterator".to_string()),
            ),
        };
        Box::into_raw(Box::new(leveldb_iterator_t { it, err }))
    }
}

/// Frees an iterator. NULL is allowed.
///
/// # Safety
/// `it` must be NULL or a live iterator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_destroy(it: *mut leveldb_iterator_t) {
    if !it.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_create_iterator`, destroyed once.
        drop(unsafe { Box::from_raw(it) });
    }
}

/// Runs `f` on the engine iterator behind `it` (nothing if NULL, failed, or on panic).
fn with_it(it: *mut leveldb_iterator_t, f: impl FnOnce(&mut DbIterator)) {
    no_errptr((), || {
        // SAFETY: `it` is NULL or a live iterator handle used by one thread at a time.
        if let Some(i) = unsafe { it.as_mut() }.and_then(|i| i.it.as_mut()) {
            f(i);
        }
    });
}

/// The engine iterator behind `it`, if any.
fn get<'a>(it: *const leveldb_iterator_t) -> Option<&'a DbIterator> {
    // SAFETY: `it` is NULL or a live iterator handle.
    unsafe { it.as_ref() }.and_then(|i| i.it.as_ref())
}

/// Whether the iterator is at an entry (0 for NULL).
///
/// # Safety
/// `it` must be NULL or a live iterator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8 {
    no_errptr(0, || u8::from(get(it).is_some_and(DbIterator::valid)))
}

/// Moves to the first key.
///
/// # Safety
/// `it` must be NULL or a live iterator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t) {
    with_it(it, DbIterator::seek_to_first);
}

/// Moves to the last key.
///
/// # Safety
/// `it` must be NULL or a live iterator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t) {
    with_it(it, DbIterator::seek_to_last);
}

/// Moves to the first key >= `k`. A NULL `k` with `klen > 0` leaves the iterator not valid
/// with an error.
///
/// # Safety
/// `it` NULL or a live iterator; `k` NULL or pointing to `klen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek(
    it: *mut leveldb_iterator_t,
    k: *const c_char,
    klen: usize,
) {
    no_errptr((), || {
        // SAFETY: `it` is NULL or a live iterator handle used by one thread at a time.
        let Some(i) = (unsafe { it.as_mut() }) else {
            return;
        };
        // SAFETY: per the caller's guarantee on `k`.
        match unsafe { bytes(k, klen, "key") } {
            Ok(key) => {
                if let Some(inner) = i.it.as_mut() {
                    inner.seek(key);
                }
            }
            Err(e) => {
                // The iterator can no longer be trusted to be positioned: drop it.
                i.it = None;
                i.err.get_or_insert(e);
            }
        }
    });
}

/// Moves to the next key (nothing if not valid).
///
/// # Safety
/// `it` must be NULL or a live iterator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_next(it: *mut leveldb_iterator_t) {
    with_it(it, DbIterator::next);
}

/// Moves to the previous key (nothing if not valid).
///
/// # Safety
/// `it` must be NULL or a live iterator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_prev(it: *mut leveldb_iterator_t) {
    with_it(it, DbIterator::prev);
}

/// `data` as a pointer and length for C; NULL and 0 when `data` is `None`.
fn out(data: Option<&[u8]>, len: *mut usize) -> *const c_char {
    let (p, n) = data.map_or((std::ptr::null(), 0), |d| (d.as_ptr().cast(), d.len()));
    if !len.is_null() {
        // SAFETY: `len` is non-null and writable per the caller's guarantee.
        unsafe { *len = n };
    }
    p
}

/// The current key, valid until the iterator moves or is destroyed; NULL (length 0) if not
/// valid.
///
/// # Safety
/// `it` NULL or a live iterator; `klen` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_key(
    it: *const leveldb_iterator_t,
    klen: *mut usize,
) -> *const c_char {
    no_errptr(std::ptr::null(), || {
        out(get(it).and_then(DbIterator::current).map(|(k, _)| k), klen)
    })
}

/// The current value, as [`leveldb_iter_key`].
///
/// # Safety
/// `it` NULL or a live iterator; `vlen` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_value(
    it: *const leveldb_iterator_t,
    vlen: *mut usize,
) -> *const c_char {
    no_errptr(std::ptr::null(), || {
        out(get(it).and_then(DbIterator::current).map(|(_, v)| v), vlen)
    })
}

/// The iterator's first error, if any, through `errptr` (left unchanged if none). A NULL
/// iterator is an error.
///
/// # Safety
/// `it` NULL or a live iterator; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_get_error(
    it: *const leveldb_iterator_t,
    errptr: *mut *mut c_char,
) {
    no_errptr((), || {
        // SAFETY: `it` is NULL or a live iterator handle.
        let Some(i) = (unsafe { it.as_ref() }) else {
            set_error(errptr, "Invalid argument: iterator is NULL");
            return;
        };
        if let Some(e) = &i.err {
            set_error(errptr, e);
        } else if let Some(Err(e)) = i.it.as_ref().map(|it| status(it.status())) {
            set_error(errptr, &e);
        }
    });
}
