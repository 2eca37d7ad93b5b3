//! Write batches: updates collected by the caller and applied atomically by
//! `leveldb_write`.
//!
//! A put or delete given a NULL key or value with a nonzero length cannot be reported (the
//! functions return nothing), so it marks the batch invalid instead: `leveldb_write` then
//! fails with the reason, and `leveldb_writebatch_clear` resets it.
//!
//! Thread safety: a batch is used by one thread at a time.

use std::ffi::{c_char, c_void};

use engine::{ValueKind, WriteBatch};

use crate::{bytes, no_errptr};

/// A write batch (`leveldb_writebatch_create`).
#[derive(Debug, Default)]
pub struct leveldb_writebatch_t {
    pub(crate) batch: WriteBatch,
    /// Why the batch cannot be written, if a call gave it invalid arguments.
    pub(crate) invalid: Option<String>,
}

/// Runs `f` on the batch behind `b` (nothing if NULL or on panic).
pub(crate) fn with_batch(b: *mut leveldb_writebatch_t, f: impl FnOnce(&mut leveldb_writebatch_t)) {
    no_errptr((), || {
        // SAFETY: `b` is NULL or a live batch handle used by one thread at a time.
        if let Some(b) = unsafe { b.as_mut() } {
            f(b);
        }
    });
}

/// An empty batch.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t {
    Box::into_raw(Box::default())
}

/// Frees a batch. NULL is allowed.
///
/// # Safety
/// `b` must be NULL or a live batch handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_destroy(b: *mut leveldb_writebatch_t) {
    if !b.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_writebatch_create`, destroyed once.
        drop(unsafe { Box::from_raw(b) });
    }
}

/// Removes every update (and clears an invalid mark).
///
/// # Safety
/// `b` must be NULL or a live batch handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_clear(b: *mut leveldb_writebatch_t) {
    with_batch(b, |b| {
        b.batch.clear();
        b.invalid = None;
    });
}

/// Adds a put of `key` to `val`.
///
/// # Safety
/// `b` NULL or a live batch; `key`/`val` NULL or pointing to `klen`/`vlen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_put(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    with_batch(b, |b| {
        // SAFETY: per the caller's guarantee on `key` and `val`.
        match unsafe {
            bytes(key, klen, "key").and_then(|k| bytes(val, vlen, "value").map(|v| (k, v)))
        } {
            Ok((k, v)) => b.batch.put(k, v),
            Err(e) => {
                b.invalid.get_or_insert(e);
            }
        }
    });
}

/// Adds a delete of `key`.
///
/// # Safety
/// `b` NULL or a live batch; `key` NULL or pointing to `klen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_delete(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
) {
    with_batch(b, |b| {
        // SAFETY: per the caller's guarantee on `key`.
        match unsafe { bytes(key, klen, "key") } {
            Ok(k) => b.batch.delete(k),
            Err(e) => {
                b.invalid.get_or_insert(e);
            }
        }
    });
}

/// A batch's put callback.
type PutFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize);
/// A batch's delete callback.
type DeleteFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize);

/// Calls `put` or `deleted` for each update, in order. A NULL callback skips its kind.
///
/// # Safety
/// `b` NULL or a live batch; the callbacks must not modify or free the batch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_iterate(
    b: *const leveldb_writebatch_t,
    state: *mut c_void,
    put: Option<PutFn>,
    deleted: Option<DeleteFn>,
) {
    no_errptr((), || {
        // SAFETY: `b` is NULL or a live batch handle.
        let Some(b) = (unsafe { b.as_ref() }) else {
            return;
        };
        for op in b.batch.iter() {
            let (k, v) = (op.key, op.value);
            match op.kind {
                ValueKind::Value => {
                    if let Some(f) = put {
                        // SAFETY: the caller's callback; the slices outlive the call.
                        unsafe {
                            f(
                                state,
                                k.as_ptr().cast(),
                                k.len(),
                                v.as_ptr().cast(),
                                v.len(),
                            )
                        };
                    }
                }
                ValueKind::Deletion => {
                    if let Some(f) = deleted {
                        // SAFETY: the caller's callback; the slice outlives the call.
                        unsafe { f(state, k.as_ptr().cast(), k.len()) };
                    }
                }
            }
        }
    });
}

/// Appends every update of `source` to `destination` (`source` may be `destination`).
///
/// # Safety
/// Each of `destination` and `source` must be NULL or a live batch handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_append(
    destination: *mut leveldb_writebatch_t,
    source: *const leveldb_writebatch_t,
) {
    no_errptr((), || {
        // SAFETY: `source` is NULL or a live batch; it is copied before `destination` is
        // borrowed mutably, so the two may be the same batch.
        let Some((src, invalid)) =
            (unsafe { source.as_ref() }).map(|s| (s.batch.clone(), s.invalid.clone()))
        else {
            return;
        };
        with_batch(destination, |d| {
            for op in src.iter() {
                match op.kind {
                    ValueKind::Value => d.batch.put(op.key, op.value),
                    ValueKind::Deletion => d.batch.delete(op.key),
                }
            }
            if let Some(e) = invalid {
                d.invalid.get_or_insert(e);
            }
        });
    });
}
