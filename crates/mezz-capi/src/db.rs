//! Database handles: open / close / destroy / repair, reads and writes, snapshots,
//! properties, approximate sizes and compaction.
//!
//! A `leveldb_t*` is a token: the open `Db` lives in a process-wide registry keyed by the
//! token's address, and every call looks it up there. So a NULL, closed or foreign pointer
//! is reported as an error instead of being dereferenced. `leveldb_close` removes the entry
//! (calls already running keep their `Arc<Db>` and finish, and the close waits for them;
//! later ones fail); closing a token twice is a no-op, but a close while another thread's
//! close of it runs waits for that one. A token's address is never handed out again (see
//! [`LAST_TOKEN`]), so a stale pointer, say one another thread still holds while the handle
//! is closed and the directory opened again, keeps failing instead of reaching the newer
//! database.
//!
//! Thread safety: the registry is behind a read-write lock held only to look a handle up;
//! `Db` is `Send + Sync`, so one handle may be used from many threads.

use std::collections::HashMap;
use std::ffi::{OsStr, c_char};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use engine::{Db, ReadOptions, Snapshot, WriteOptions};
use parking_lot::{Mutex, RwLock};

use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};
use crate::{bytes, c_str, malloc_copy, malloc_cstring, no_errptr, status, with_errptr};

/// An open database, as C sees it: an opaque token (see the module comment). Never
/// constructed or dereferenced: only its address means something.
#[derive(Debug)]
pub enum leveldb_t {}

/// The number of the last token handed out. Tokens are consecutive numbers, never
/// reused, so a stale pointer (one another thread still holds while the handle is closed
/// and the directory opened again) keeps failing instead of reaching the newer database.
/// A token is never dereferenced, so no memory stands behind it.
static LAST_TOKEN: AtomicUsize = AtomicUsize::new(0);

/// A token never handed out before: a nonzero address, aligned like an allocation's.
fn new_token() -> *mut leveldb_t {
    let n = LAST_TOKEN.fetch_add(1, Ordering::Relaxed) + 1;
    std::ptr::without_provenance_mut(n << 4)
}

/// Open databases by token address.
static OPEN: LazyLock<RwLock<HashMap<usize, Arc<Db>>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// Databases `leveldb_close` has taken out of [`OPEN`] and is closing, by token address: a
/// `leveldb_close` of the same handle on another thread meanwhile waits for that close
/// (the engine's second close does), instead of returning while the LOCK is still held.
static CLOSING: LazyLock<Mutex<HashMap<usize, Arc<Db>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The open database behind `db`.
pub(crate) fn lookup(db: *const leveldb_t) -> Result<Arc<Db>, String> {
    if db.is_null() {
        return Err("Invalid argument: db is NULL".to_string());
    }
    OPEN.read().get(&(db as usize)).cloned().ok_or_else(|| {
        "Invalid argument: db is not an open database (closed, or never opened)".to_string()
    })
}

/// A pinned read view (`leveldb_create_snapshot`).
#[derive(Debug)]
pub struct leveldb_snapshot_t {
    pub(crate) snap: Snapshot,
    /// The token of the database it was taken on.
    pub(crate) owner: usize,
}

/// The engine read options behind `opt` (NULL: defaults), checked against `db`.
pub(crate) fn read_options(
    opt: *const leveldb_readoptions_t,
    db: *const leveldb_t,
) -> Result<ReadOptions, String> {
    // SAFETY: `opt` is NULL or a live read options handle.
    match unsafe { opt.as_ref() } {
        None => Ok(ReadOptions::default()),
        Some(o) => {
            if o.snapshot_owner.is_some_and(|owner| owner != db as usize) {
                return Err(
                    "Invalid argument: the read options' snapshot belongs to another database"
                        .to_string(),
                );
            }
            Ok(o.ro.clone())
        }
    }
}

/// The engine write options behind `opt` (NULL: defaults).
/// Writes `batch` with `options`, unless a call that built it was invalid (`invalid`: what
/// was wrong), which LevelDB reports at the write.
pub(crate) fn write_checked(
    d: &Db,
    options: *const leveldb_writeoptions_t,
    batch: &engine::WriteBatch,
    invalid: Option<&str>,
) -> Result<(), String> {
    if let Some(e) = invalid {
        return Err(format!(
            "Invalid argument: the batch holds an invalid update: {e}"
        ));
    }
    status(d.write(&write_options(options), batch.clone()))
}

pub(crate) fn write_options(opt: *const leveldb_writeoptions_t) -> WriteOptions {
    // SAFETY: `opt` is NULL or a live write options handle.
    unsafe { opt.as_ref() }.map(|o| o.wo).unwrap_or_default()
}

/// A database path from a C string.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn db_path(name: *const c_char) -> Result<PathBuf, String> {
    // SAFETY: per the caller's guarantee.
    let n = unsafe { c_str(name, "name") }?;
    if n.is_empty() {
        return Err("Invalid argument: name is empty".to_string());
    }
    Ok(PathBuf::from(OsStr::from_bytes(n)))
}

/// The options behind `options`, or an error if NULL.
pub(crate) fn options<'a>(
    options: *const leveldb_options_t,
) -> Result<&'a leveldb_options_t, String> {
    // SAFETY: `options` is NULL or a live options handle.
    unsafe { options.as_ref() }.ok_or_else(|| "Invalid argument: options is NULL".to_string())
}

/// Opens the database in directory `name`. NULL on error (reported through `errptr`).
///
/// # Safety
/// `options` NULL or a live options handle; `name` NULL or a NUL-terminated string;
/// `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_open(
    options_: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut leveldb_t {
    with_errptr(errptr, std::ptr::null_mut(), || {
        let o = options(options_)?;
        // SAFETY: `name` is NULL or NUL-terminated.
        let path = unsafe { db_path(name) }?;
        let db = status(Db::open(&path, o.engine_options()?))?;
        Ok(register(db))
    })
}

/// Hands an open database to C: its new token.
pub(crate) fn register(db: Db) -> *mut leveldb_t {
    let token = new_token();
    OPEN.write().insert(token as usize, Arc::new(db));
    token
}

/// Closes the database once the calls in flight on it have finished; the handle then
/// names no database, for good. NULL, or a handle already closed, is a no-op; a close of a
/// handle another thread is closing waits for that close. Iterators and snapshots still
/// alive stay safe to use and destroy.
///
/// # Safety
/// `db` must be NULL or a pointer returned by `leveldb_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_close(db: *mut leveldb_t) {
    no_errptr((), || {
        if db.is_null() {
            return;
        }
        let key = db as usize;
        let d = {
            let mut open = OPEN.write();
            let mut closing = CLOSING.lock();
            match open.remove(&key) {
                Some(d) => {
                    closing.insert(key, Arc::clone(&d));
                    d
                }
                None => match closing.get(&key) {
                    Some(d) => Arc::clone(d),
                    None => return,
                },
            }
        };
        // A second close (another thread's, in flight) waits here for the first.
        let _ = d.close();
        CLOSING.lock().remove(&key);
    });
}

/// Sets `key` to `val`. NULL write options are the defaults.
///
/// # Safety
/// Handles NULL or live; `key`/`val` NULL or pointing to `keylen`/`vallen` bytes; `errptr`
/// NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_put(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        // SAFETY: per the caller's guarantee on `key` and `val`.
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "value")?) };
        status(d.put_opt(&write_options(options), k, v))
    });
}

/// Deletes `key` (not an error if it is absent).
///
/// # Safety
/// As [`leveldb_put`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_delete(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, keylen, "key") }?;
        status(d.delete_opt(&write_options(options), k))
    });
}

/// Applies `batch` atomically. The batch is left unchanged.
///
/// # Safety
/// As [`leveldb_put`]; `batch` NULL or a live batch handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_write(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    batch: *mut crate::batch::leveldb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        // SAFETY: `batch` is NULL or a live batch handle.
        let b = unsafe { batch.as_ref() }.ok_or("Invalid argument: batch is NULL")?;
        write_checked(&d, options, &b.batch, b.invalid.as_deref())
    });
}

/// The value of `key`: a `malloc`ed copy (free with `leveldb_free`) whose length goes to
/// `*vallen`; NULL with `*vallen = 0` if the key is absent or on error. A present empty
/// value is a non-NULL pointer with `*vallen = 0`. NULL read options are the defaults.
///
/// # Safety
/// As [`leveldb_put`]; `vallen` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_get(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    let set_len = |n: usize| {
        if !vallen.is_null() {
            // SAFETY: `vallen` is non-null and writable per the caller's guarantee.
            unsafe { *vallen = n };
        }
    };
    set_len(0);
    with_errptr(errptr, std::ptr::null_mut(), || {
        let d = lookup(db)?;
        let ro = read_options(options, db)?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, keylen, "key") }?;
        match status(d.get_opt(&ro, k))? {
            None => Ok(std::ptr::null_mut()),
            Some(v) => {
                let p = malloc_copy(&v);
                if p.is_null() {
                    return Err("IO error: out of memory copying the value".to_string());
                }
                set_len(v.len());
                Ok(p)
            }
        }
    })
}

/// The value of LevelDB's property `name` (its names mapped to the engine's), read through
/// `prop` (an engine property by name) and `memtable_bytes`.
pub(crate) fn leveldb_property(
    name: &str,
    prop: impl Fn(&str) -> Option<String>,
    memtable_bytes: impl Fn() -> Option<u64>,
) -> Option<String> {
    match name {
        "leveldb.stats" => prop("mezz.stats"),
        "leveldb.sstables" => prop("mezz.levels"),
        "leveldb.approximate-memory-usage" => memtable_bytes().map(|b| b.to_string()),
        _ => match name.strip_prefix("leveldb.num-files-at-level") {
            Some(n) => prop(&format!("mezz.num-files-at-level{n}")),
            None => prop(name),
        },
    }
}

/// The bounds of `leveldb_compact_range` and its family variant: NULL is unbounded.
///
/// # Safety
/// Each key NULL or pointing to its length's bytes, valid for `'a`.
pub(crate) unsafe fn range_keys<'a>(
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    // SAFETY: per the caller's guarantee.
    unsafe {
        (
            (!start_key.is_null())
                .then(|| bytes(start_key, start_key_len, "start").unwrap_or_default()),
            (!limit_key.is_null())
                .then(|| bytes(limit_key, limit_key_len, "limit").unwrap_or_default()),
        )
    }
}

/// Pins the current state. NULL if `db` is not an open database.
///
/// # Safety
/// `db` must be NULL or a pointer returned by `leveldb_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_create_snapshot(db: *mut leveldb_t) -> *const leveldb_snapshot_t {
    no_errptr(std::ptr::null(), || match lookup(db) {
        Ok(d) => Box::into_raw(Box::new(leveldb_snapshot_t {
            snap: d.snapshot(),
            owner: db as usize,
        })),
        Err(_) => std::ptr::null(),
    })
}

/// Releases a snapshot (also after its database was closed; `db` is not needed). NULL is
/// allowed.
///
/// # Safety
/// `snapshot` must be NULL or a live snapshot handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_release_snapshot(
    _db: *mut leveldb_t,
    snapshot: *const leveldb_snapshot_t,
) {
    if !snapshot.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_create_snapshot`, released once.
        drop(unsafe { Box::from_raw(snapshot.cast_mut()) });
    }
}

/// A property as a `malloc`ed string (free with `leveldb_free`), NULL if unknown.
/// LevelDB names map to the engine's: `leveldb.stats`, `leveldb.num-files-at-level<N>`,
/// `leveldb.sstables` (files and bytes per level), `leveldb.approximate-memory-usage`
/// (memtable bytes); the engine's own `mezz.*` names work too.
///
/// # Safety
/// `db` NULL or a pointer returned by `leveldb_open`; `propname` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_property_value(
    db: *mut leveldb_t,
    propname: *const c_char,
) -> *mut c_char {
    no_errptr(std::ptr::null_mut(), || {
        let Ok(d) = lookup(db) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `propname` is NULL or NUL-terminated.
        let Ok(name) = (unsafe { c_str(propname, "property") }) else {
            return std::ptr::null_mut();
        };
        let Ok(name) = std::str::from_utf8(name) else {
            return std::ptr::null_mut();
        };
        let value = leveldb_property(name, |n| d.property(n), || Some(d.stats().memtable_bytes));
        value.map_or(std::ptr::null_mut(), |v| malloc_cstring(&v))
    })
}

/// For each range `[start[i], limit[i])`, the approximate bytes of table storage it uses
/// (the sizes of the tables it touches; data still in memtables is not counted). A NULL
/// array, a NULL key with a nonzero length or a closed `db` gives 0s.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; each array NULL or holding `num_ranges` entries, each
/// key pointing to its length's bytes; `sizes` NULL or writable for `num_ranges` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_approximate_sizes(
    db: *mut leveldb_t,
    num_ranges: libc::c_int,
    range_start_key: *const *const c_char,
    range_start_key_len: *const usize,
    range_limit_key: *const *const c_char,
    range_limit_key_len: *const usize,
    sizes: *mut u64,
) {
    no_errptr((), || {
        let n = usize::try_from(num_ranges).unwrap_or(0);
        if sizes.is_null() || n == 0 {
            return;
        }
        // SAFETY: `sizes` is non-null and writable for `n` entries.
        let out = unsafe { std::slice::from_raw_parts_mut(sizes, n) };
        out.fill(0);
        let Ok(d) = lookup(db) else {
            return;
        };
        if range_start_key.is_null()
            || range_start_key_len.is_null()
            || range_limit_key.is_null()
            || range_limit_key_len.is_null()
        {
            return;
        }
        for (i, slot) in out.iter_mut().enumerate() {
            // SAFETY: every array holds `n` entries; each key points to its length's bytes.
            let range = unsafe {
                let s = bytes(
                    *range_start_key.add(i),
                    *range_start_key_len.add(i),
                    "start",
                );
                let l = bytes(
                    *range_limit_key.add(i),
                    *range_limit_key_len.add(i),
                    "limit",
                );
                s.and_then(|s| l.map(|l| (s, l)))
            };
            // LevelDB gives 0 for an empty or reversed range.
            if let Ok((s, l)) = range
                && s < l
            {
                *slot = d.approximate_size(Some(s), Some(l)).unwrap_or(0);
            }
        }
    });
}

/// Compacts the tables overlapping `[start, limit]` (NULL start: from the first key; NULL
/// limit: to the last) and waits. Errors are dropped, as LevelDB's signature has no errptr.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; each key NULL or pointing to its length's bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_compact_range(
    db: *mut leveldb_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    no_errptr((), || {
        let Ok(d) = lookup(db) else {
            return;
        };
        // SAFETY: each key is NULL or points to its length's bytes.
        let (s, l) = unsafe { range_keys(start_key, start_key_len, limit_key, limit_key_len) };
        let _ = d.compact_range(s, l);
    });
}

/// Removes the database's files (those the engine names: tables, logs, manifests,
/// `CURRENT`, `LOCK`, `IDENTITY`, `OPTIONS-*`, temporaries), its NVM pool if the options
/// name an NVM directory, and the directory if it is then empty. A missing directory is not
/// an error; an open database is.
///
/// # Safety
/// As [`leveldb_open`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_destroy_db(
    options_: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let o = options(options_)?;
        // SAFETY: `name` is NULL or NUL-terminated.
        let path = unsafe { db_path(name) }?;
        engine::destroy_db(&path, &o.engine_options()?).map_err(|e| match e {
            engine::Error::Locked(_) => format!(
                "IO error: lock {}: the database is open",
                engine::filename::lock_file(&path).display()
            ),
            e => crate::status_text(&e),
        })
    });
}

/// Rebuilds the database from what still reads (LevelDB's `RepairDB`, the engine's
/// `repair_db`): keeps the tables that verify, rewrites the readable blocks of damaged ones,
/// replays the logs up to their first damaged record, writes a new manifest, and moves what
/// it could not use to `lost/` in the database directory. Damage worked around is written
/// to the info log (`LOG`, or the options' logger), not returned: `*errptr` is set only if
/// the repair itself fails (a missing directory, an open database, an I/O error writing
/// the new state).
///
/// # Safety
/// As [`leveldb_open`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_repair_db(
    options_: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let o = options(options_)?;
        // SAFETY: `name` is NULL or NUL-terminated.
        let path = unsafe { db_path(name) }?;
        engine::repair_db(&path, &o.engine_options()?)
            .map(|_| ())
            .map_err(|e| match e {
                engine::Error::Locked(_) => format!(
                    "IO error: lock {}: the database is open",
                    engine::filename::lock_file(&path).display()
                ),
                e => crate::status_text(&e),
            })
    });
}
