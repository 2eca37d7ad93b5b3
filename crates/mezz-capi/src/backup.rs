//! Checkpoints and backups under RocksDB's C names (`rocksdb_checkpoint_*`,
//! `rocksdb_backup_engine_*`, `include/mezzanine/c.h`), over this library's `leveldb_t`
//! and `leveldb_options_t` handles.
//!
//! Owns: the handles `rocksdb_checkpoint_t` (names a database handle, checked against the
//! registry at each use), `rocksdb_backup_engine_t` (a `BackupEngine`), the backup list
//! `rocksdb_backup_engine_info_t` and the (empty) `rocksdb_restore_options_t`. Each is a
//! `Box` handed to C and taken back once by its destroy/close function.
//!
//! Thread safety: a backup engine, checkpoint object or info list is used by one thread at
//! a time (as in RocksDB); the database it names may be used by others meanwhile.

use std::ffi::{OsStr, c_char};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use engine::{BackupEngine, BackupInfo};

use crate::db::{leveldb_t, lookup};
use crate::options::leveldb_options_t;
use crate::{c_str, no_errptr, status, with_errptr};

/// A checkpoint object (`rocksdb_checkpoint_object_create`): the database it copies.
#[derive(Debug)]
pub struct rocksdb_checkpoint_t {
    db: *mut leveldb_t,
}

/// A backup engine over one backup directory.
#[derive(Debug)]
pub struct rocksdb_backup_engine_t {
    engine: BackupEngine,
}

/// The backups of a backup engine when it was asked, oldest first.
#[derive(Debug)]
pub struct rocksdb_backup_engine_info_t {
    list: Vec<BackupInfo>,
}

/// Restore options: none are used (a restore always checks every file and refuses a
/// directory that holds a database).
#[derive(Debug)]
pub struct rocksdb_restore_options_t {
    _unused: u8,
}

/// A directory path from a C string; `what` names it in errors.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string.
unsafe fn dir_path(p: *const c_char, what: &str) -> Result<PathBuf, String> {
    // SAFETY: per the caller's guarantee.
    let b = unsafe { c_str(p, what) }?;
    if b.is_empty() {
        return Err(format!("Invalid argument: {what} is empty"));
    }
    Ok(PathBuf::from(OsStr::from_bytes(b)))
}

/// A checkpoint object for `db`; NULL (with an error) if `db` is not open.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_checkpoint_object_create(
    db: *mut leveldb_t,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_checkpoint_t {
    with_errptr(errptr, std::ptr::null_mut(), || {
        lookup(db)?;
        Ok(Box::into_raw(Box::new(rocksdb_checkpoint_t { db })))
    })
}

/// Writes a checkpoint of the object's database to `checkpoint_dir` (which must not
/// exist). `log_size_for_flush` is ignored: the memtables always go into the copy as a
/// table, and no WAL is copied.
///
/// # Safety
/// `checkpoint` NULL or a live handle from `rocksdb_checkpoint_object_create`;
/// `checkpoint_dir` NULL or NUL-terminated; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_checkpoint_create(
    checkpoint: *mut rocksdb_checkpoint_t,
    checkpoint_dir: *const c_char,
    log_size_for_flush: u64,
    errptr: *mut *mut c_char,
) {
    let _ = log_size_for_flush;
    with_errptr(errptr, (), || {
        if checkpoint.is_null() {
            return Err("Invalid argument: checkpoint is NULL".to_string());
        }
        // SAFETY: non-null and live per the caller's guarantee.
        let db = lookup(unsafe { &*checkpoint }.db)?;
        // SAFETY: NULL or NUL-terminated per the caller's guarantee.
        let dir = unsafe { dir_path(checkpoint_dir, "checkpoint_dir") }?;
        status(db.checkpoint(&dir)).map(drop)
    });
}

/// Frees a checkpoint object (not the database). NULL is allowed.
///
/// # Safety
/// `checkpoint` NULL or a live handle from `rocksdb_checkpoint_object_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_checkpoint_object_destroy(checkpoint: *mut rocksdb_checkpoint_t) {
    if !checkpoint.is_null() {
        // SAFETY: made by `Box::into_raw` in `rocksdb_checkpoint_object_create`, freed once.
        drop(unsafe { Box::from_raw(checkpoint) });
    }
}

/// Opens (creating if missing) the backup directory `path`. `options` is not used (NULL
/// is allowed).
///
/// # Safety
/// `path` NULL or NUL-terminated; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_open(
    options: *const leveldb_options_t,
    path: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_backup_engine_t {
    let _ = options;
    with_errptr(errptr, std::ptr::null_mut(), || {
        // SAFETY: NULL or NUL-terminated per the caller's guarantee.
        let dir = unsafe { dir_path(path, "path") }?;
        let engine = status(BackupEngine::open(&dir))?;
        Ok(Box::into_raw(Box::new(rocksdb_backup_engine_t { engine })))
    })
}

/// The engine behind `be`, or an error if NULL.
///
/// # Safety
/// `be` NULL or a live handle from `rocksdb_backup_engine_open`, used by no other thread.
unsafe fn engine<'a>(be: *mut rocksdb_backup_engine_t) -> Result<&'a mut BackupEngine, String> {
    if be.is_null() {
        return Err("Invalid argument: backup engine is NULL".to_string());
    }
    // SAFETY: non-null, live and not shared per the caller's guarantee.
    Ok(&mut unsafe { &mut *be }.engine)
}

/// Backs up `db` (incrementally: tables already in the directory are not copied).
///
/// # Safety
/// `be` NULL or a live handle from `rocksdb_backup_engine_open`; `db` NULL or from
/// `leveldb_open`; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_create_new_backup(
    be: *mut rocksdb_backup_engine_t,
    db: *mut leveldb_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let e = unsafe { engine(be) }?;
        let d = lookup(db)?;
        status(e.create_backup(&d)).map(drop)
    });
}

/// Deletes all but the newest `num_backups_to_keep` backups and the files no remaining
/// backup needs.
///
/// # Safety
/// As [`rocksdb_backup_engine_create_new_backup`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_purge_old_backups(
    be: *mut rocksdb_backup_engine_t,
    num_backups_to_keep: u32,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let e = unsafe { engine(be) }?;
        status(e.purge_old(num_backups_to_keep as usize)).map(drop)
    });
}

/// Re-reads every file of backup `backup_id` and checks its size and crc32c; a mismatch
/// is a `Corruption: ...` error naming the file.
///
/// # Safety
/// As [`rocksdb_backup_engine_create_new_backup`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_verify_backup(
    be: *mut rocksdb_backup_engine_t,
    backup_id: u32,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let e = unsafe { engine(be) }?;
        status(e.verify(u64::from(backup_id))).map(drop)
    });
}

/// Restores `backup_id` into `db_dir`, which must not hold a database (RocksDB's
/// overwrites one; this refuses). `wal_dir` and `restore_options` are not used (NULL is
/// allowed).
///
/// # Safety
/// `be` as [`rocksdb_backup_engine_create_new_backup`]; `db_dir` NULL or NUL-terminated;
/// `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_restore_db_from_backup(
    be: *mut rocksdb_backup_engine_t,
    db_dir: *const c_char,
    wal_dir: *const c_char,
    restore_options: *const rocksdb_restore_options_t,
    backup_id: u32,
    errptr: *mut *mut c_char,
) {
    let _ = (wal_dir, restore_options);
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let e = unsafe { engine(be) }?;
        // SAFETY: NULL or NUL-terminated per the caller's guarantee.
        let dir = unsafe { dir_path(db_dir, "db_dir") }?;
        status(e.restore(u64::from(backup_id), &dir)).map(drop)
    });
}

/// Restores the newest backup, as [`rocksdb_backup_engine_restore_db_from_backup`].
///
/// # Safety
/// As [`rocksdb_backup_engine_restore_db_from_backup`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_restore_db_from_latest_backup(
    be: *mut rocksdb_backup_engine_t,
    db_dir: *const c_char,
    wal_dir: *const c_char,
    restore_options: *const rocksdb_restore_options_t,
    errptr: *mut *mut c_char,
) {
    let _ = (wal_dir, restore_options);
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let e = unsafe { engine(be) }?;
        // SAFETY: NULL or NUL-terminated per the caller's guarantee.
        let dir = unsafe { dir_path(db_dir, "db_dir") }?;
        let list = status(e.list())?;
        let newest = list
            .last()
            .ok_or_else(|| "Invalid argument: the backup directory holds no backup".to_string())?;
        status(e.restore(newest.id, &dir)).map(drop)
    });
}

/// The backups, oldest first; NULL on error (a damaged meta file is not reported here:
/// use `rocksdb_backup_engine_verify_backup`). Free with
/// `rocksdb_backup_engine_info_destroy`.
///
/// # Safety
/// `be` NULL or a live handle from `rocksdb_backup_engine_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_get_backup_info(
    be: *mut rocksdb_backup_engine_t,
) -> *const rocksdb_backup_engine_info_t {
    no_errptr(std::ptr::null(), || {
        // SAFETY: per the caller's guarantee.
        let Ok(e) = (unsafe { engine(be) }) else {
            return std::ptr::null();
        };
        match e.list() {
            Ok(list) => Box::into_raw(Box::new(rocksdb_backup_engine_info_t { list })),
            Err(_) => std::ptr::null(),
        }
    })
}

/// Entry `index` of `info`, if both are valid.
///
/// # Safety
/// `info` NULL or a live list from `rocksdb_backup_engine_get_backup_info`.
unsafe fn entry<'a>(
    info: *const rocksdb_backup_engine_info_t,
    index: libc::c_int,
) -> Option<&'a BackupInfo> {
    if info.is_null() {
        return None;
    }
    // SAFETY: non-null and live per the caller's guarantee.
    let list = &unsafe { &*info }.list;
    usize::try_from(index).ok().and_then(|i| list.get(i))
}

/// How many backups `info` lists (0 for NULL).
///
/// # Safety
/// `info` NULL or a live list from `rocksdb_backup_engine_get_backup_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_count(
    info: *const rocksdb_backup_engine_info_t,
) -> libc::c_int {
    if info.is_null() {
        return 0;
    }
    // SAFETY: non-null and live per the caller's guarantee.
    libc::c_int::try_from(unsafe { &*info }.list.len()).unwrap_or(libc::c_int::MAX)
}

/// When backup `index` was taken (seconds since the Unix epoch; 0 for a bad index).
///
/// # Safety
/// As [`rocksdb_backup_engine_info_count`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_timestamp(
    info: *const rocksdb_backup_engine_info_t,
    index: libc::c_int,
) -> i64 {
    // SAFETY: per the caller's guarantee.
    unsafe { entry(info, index) }.map_or(0, |b| i64::try_from(b.timestamp).unwrap_or(i64::MAX))
}

/// The id of backup `index` (0 for a bad index).
///
/// # Safety
/// As [`rocksdb_backup_engine_info_count`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_backup_id(
    info: *const rocksdb_backup_engine_info_t,
    index: libc::c_int,
) -> u32 {
    // SAFETY: per the caller's guarantee.
    unsafe { entry(info, index) }.map_or(0, |b| u32::try_from(b.id).unwrap_or(u32::MAX))
}

/// The bytes of backup `index`'s files (0 for a bad index).
///
/// # Safety
/// As [`rocksdb_backup_engine_info_count`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_size(
    info: *const rocksdb_backup_engine_info_t,
    index: libc::c_int,
) -> u64 {
    // SAFETY: per the caller's guarantee.
    unsafe { entry(info, index) }.map_or(0, |b| b.size)
}

/// How many files backup `index` has (0 for a bad index).
///
/// # Safety
/// As [`rocksdb_backup_engine_info_count`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_number_files(
    info: *const rocksdb_backup_engine_info_t,
    index: libc::c_int,
) -> u32 {
    // SAFETY: per the caller's guarantee.
    unsafe { entry(info, index) }.map_or(0, |b| u32::try_from(b.num_files).unwrap_or(u32::MAX))
}

/// Frees a list from `rocksdb_backup_engine_get_backup_info`. NULL is allowed.
///
/// # Safety
/// `info` NULL or a live list from `rocksdb_backup_engine_get_backup_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_info_destroy(
    info: *const rocksdb_backup_engine_info_t,
) {
    if !info.is_null() {
        // SAFETY: made by `Box::into_raw` in `rocksdb_backup_engine_get_backup_info`,
        // freed once.
        drop(unsafe { Box::from_raw(info.cast_mut()) });
    }
}

/// Closes a backup engine. NULL is allowed.
///
/// # Safety
/// `be` NULL or a live handle from `rocksdb_backup_engine_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_backup_engine_close(be: *mut rocksdb_backup_engine_t) {
    if !be.is_null() {
        // SAFETY: made by `Box::into_raw` in `rocksdb_backup_engine_open`, freed once.
        drop(unsafe { Box::from_raw(be) });
    }
}

/// Restore options (none are used). Free with `rocksdb_restore_options_destroy`.
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_restore_options_create() -> *mut rocksdb_restore_options_t {
    Box::into_raw(Box::new(rocksdb_restore_options_t { _unused: 0 }))
}

/// Frees restore options. NULL is allowed.
///
/// # Safety
/// `opt` NULL or a live handle from `rocksdb_restore_options_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_restore_options_destroy(opt: *mut rocksdb_restore_options_t) {
    if !opt.is_null() {
        // SAFETY: made by `Box::into_raw` in `rocksdb_restore_options_create`, freed once.
        drop(unsafe { Box::from_raw(opt) });
    }
}
