//! Optimistic transactions and indexed write batches under RocksDB's C names
//! (`include/mezzanine/transaction.h`): `rocksdb_optimistictransactiondb_*`,
//! `rocksdb_optimistictransaction_options_*`, `rocksdb_transaction_*`,
//! `rocksdb_writebatch_wi_*`. They take this library's `leveldb_*` options and handles
//! where RocksDB's take `rocksdb_*` ones.
//!
//! An optimistic transaction database is an open database: its handle is the same token as
//! the `leveldb_t*` `rocksdb_optimistictransactiondb_get_base_db` returns (every `Db` runs
//! transactions), so it is checked against the registry of open databases like any other.
//! A transaction owns a clone of the engine handle; used after its database is closed, its
//! calls fail with the engine's "closed" error. A conflict at commit is reported as
//! RocksDB's `Status::Busy` text, `"Resource busy: ..."`.
//!
//! A committed transaction (committed or failed with "Resource busy") stays a valid handle
//! to destroy (or to pass as `old_txn` to `rocksdb_transaction_begin`); other calls on it
//! report that it is finished. Thread safety: a transaction or indexed batch is used by one
//! thread at a time, as in RocksDB.

use std::ffi::c_char;

use engine::{BatchValue, Transaction, TxnOptions, WriteBatchWithIndex};

use crate::db::{leveldb_t, lookup, read_options, write_checked, write_options};
use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};
use crate::{bytes, malloc_copy, no_errptr, status, with_errptr};

/// An optimistic transaction database: the token of an open `leveldb_t` (see the module
/// comment). Never dereferenced.
#[derive(Debug)]
pub enum rocksdb_optimistictransactiondb_t {}

/// Options of `rocksdb_transaction_begin`.
#[derive(Debug)]
pub struct rocksdb_optimistictransaction_options_t {
    set_snapshot: bool,
}

/// A transaction; `None` once committed.
#[derive(Debug)]
pub struct rocksdb_transaction_t {
    txn: Option<Transaction>,
    /// The token of the database it runs on (for read options' snapshots).
    owner: usize,
}

/// An indexed write batch.
#[derive(Debug, Default)]
pub struct rocksdb_writebatch_wi_t {
    wb: WriteBatchWithIndex,
    /// Why the batch cannot be written, if a call gave it invalid arguments (as
    /// `leveldb_writebatch_t`).
    invalid: Option<String>,
}

fn base(db: *mut rocksdb_optimistictransactiondb_t) -> *mut leveldb_t {
    db.cast()
}

/// Copies `v` for C into `malloc`ed memory, its length to `*vallen`.
fn give_value(v: Option<Vec<u8>>, vallen: *mut usize) -> Result<*mut c_char, String> {
    let Some(v) = v else {
        return Ok(std::ptr::null_mut());
    };
    let p = malloc_copy(&v);
    if p.is_null() {
        return Err("IO error: out of memory copying the value".to_string());
    }
    if !vallen.is_null() {
        // SAFETY: `vallen` is non-null and writable per the caller's guarantee.
        unsafe { *vallen = v.len() };
    }
    Ok(p)
}

fn zero(vallen: *mut usize) {
    if !vallen.is_null() {
        // SAFETY: `vallen` is non-null and writable per the caller's guarantee.
        unsafe { *vallen = 0 };
    }
}

/// Opens (or creates) a database for optimistic transactions: `leveldb_open`.
///
/// # Safety
/// As `leveldb_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_open(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_optimistictransactiondb_t {
    // SAFETY: forwarded under the same contract.
    unsafe { crate::db::leveldb_open(options, name, errptr) }.cast()
}

/// The plain database handle of `db`: the same open database (do not close it apart;
/// `rocksdb_optimistictransactiondb_close` closes both).
///
/// # Safety
/// `db` NULL or from `rocksdb_optimistictransactiondb_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_get_base_db(
    db: *mut rocksdb_optimistictransactiondb_t,
) -> *mut leveldb_t {
    base(db)
}

/// Releases a handle from `rocksdb_optimistictransactiondb_get_base_db`: nothing to do,
/// the handle is the transaction database's own.
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_optimistictransactiondb_close_base_db(_base: *mut leveldb_t) {}

/// Closes the database (`leveldb_close`).
///
/// # Safety
/// `db` NULL or from `rocksdb_optimistictransactiondb_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransactiondb_close(
    db: *mut rocksdb_optimistictransactiondb_t,
) {
    // SAFETY: a token from `leveldb_open` (or NULL / stale: reported by the registry).
    unsafe { crate::db::leveldb_close(base(db)) }
}

/// Default transaction options (a snapshot at begin).
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_optimistictransaction_options_create()
-> *mut rocksdb_optimistictransaction_options_t {
    Box::into_raw(Box::new(rocksdb_optimistictransaction_options_t {
        set_snapshot: true,
    }))
}

/// Frees transaction options. NULL is allowed.
///
/// # Safety
/// `opt` NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransaction_options_destroy(
    opt: *mut rocksdb_optimistictransaction_options_t,
) {
    if !opt.is_null() {
        // SAFETY: created by `Box::into_raw` above, destroyed once.
        drop(unsafe { Box::from_raw(opt) });
    }
}

/// Whether a transaction takes a snapshot when it begins (default 1; RocksDB's default is
/// 0: this library's transactions are snapshot-isolated unless told otherwise).
///
/// # Safety
/// `opt` NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_optimistictransaction_options_set_set_snapshot(
    opt: *mut rocksdb_optimistictransaction_options_t,
    v: u8,
) {
    no_errptr((), || {
        // SAFETY: NULL or a live handle used by one thread.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.set_snapshot = v != 0;
        }
    });
}

/// Begins a transaction. `old_txn`, if not NULL, is reused (RocksDB's convention): it is
/// reset to a new transaction and returned. NULL if `db` is not open.
///
/// # Safety
/// `db` NULL or from `rocksdb_optimistictransactiondb_open`; options NULL (defaults) or
/// live handles; `old_txn` NULL or a live transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_begin(
    db: *mut rocksdb_optimistictransactiondb_t,
    write_options_: *const leveldb_writeoptions_t,
    txn_options: *const rocksdb_optimistictransaction_options_t,
    old_txn: *mut rocksdb_transaction_t,
) -> *mut rocksdb_transaction_t {
    no_errptr(std::ptr::null_mut(), || {
        let Ok(d) = lookup(base(db)) else {
            return std::ptr::null_mut();
        };
        let opts = TxnOptions {
            write_options: write_options(write_options_),
            // SAFETY: NULL or a live options handle.
            set_snapshot: unsafe { txn_options.as_ref() }.is_none_or(|o| o.set_snapshot),
            ..TxnOptions::default()
        };
        let t = rocksdb_transaction_t {
            txn: Some(d.begin_transaction(&opts)),
            owner: db as usize,
        };
        // SAFETY: NULL or a live transaction used by one thread.
        match unsafe { old_txn.as_mut() } {
            Some(old) => {
                *old = t;
                old_txn
            }
            None => Box::into_raw(Box::new(t)),
        }
    })
}

/// Frees a transaction, rolling back what it did not commit. NULL is allowed.
///
/// # Safety
/// `txn` NULL or a live transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_destroy(txn: *mut rocksdb_transaction_t) {
    if !txn.is_null() {
        // SAFETY: created by `Box::into_raw` in `rocksdb_transaction_begin`, destroyed once.
        drop(unsafe { Box::from_raw(txn) });
    }
}

/// The live transaction behind `txn`.
///
/// # Safety
/// `txn` NULL or a live transaction used by this thread only.
unsafe fn live<'a>(
    txn: *mut rocksdb_transaction_t,
) -> Result<&'a mut rocksdb_transaction_t, String> {
    // SAFETY: per the caller's guarantee.
    let t = unsafe { txn.as_mut() }.ok_or("Invalid argument: txn is NULL")?;
    if t.txn.is_none() {
        return Err("Invalid argument: the transaction is finished (committed)".to_string());
    }
    Ok(t)
}

fn txn_of(t: &mut rocksdb_transaction_t) -> Result<&mut Transaction, String> {
    t.txn
        .as_mut()
        .ok_or_else(|| "Invalid argument: the transaction is finished (committed)".to_string())
}

/// Commits: writes the transaction's updates atomically, or fails with "Resource busy"
/// (writing nothing) if a key it marked was written after its snapshot. Either way the
/// transaction is finished.
///
/// # Safety
/// `txn` NULL or a live transaction; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_commit(
    txn: *mut rocksdb_transaction_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let t = unsafe { live(txn) }?;
        let txn = t
            .txn
            .take()
            .ok_or("Invalid argument: the transaction is finished")?;
        status(txn.commit())
    });
}

/// Discards the transaction's writes and marks; it can be used again.
///
/// # Safety
/// As [`rocksdb_transaction_commit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_rollback(
    txn: *mut rocksdb_transaction_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let t = unsafe { live(txn) }?;
        txn_of(t)?.rollback();
        Ok(())
    });
}

/// Sets a savepoint (nothing on a NULL or finished transaction).
///
/// # Safety
/// `txn` NULL or a live transaction.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_set_savepoint(txn: *mut rocksdb_transaction_t) {
    no_errptr((), || {
        // SAFETY: per the caller's guarantee.
        if let Ok(t) = unsafe { live(txn) }
            && let Ok(t) = txn_of(t)
        {
            t.set_savepoint();
        }
    });
}

/// Undoes what the transaction did since its newest savepoint.
///
/// # Safety
/// As [`rocksdb_transaction_commit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_rollback_to_savepoint(
    txn: *mut rocksdb_transaction_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let t = unsafe { live(txn) }?;
        status(txn_of(t)?.rollback_to_savepoint())
    });
}

/// Reads `key` as the transaction sees it (`leveldb_get`'s conventions for the result).
/// Read options' snapshot, if set, replaces the transaction's for this read.
///
/// # Safety
/// `txn` NULL or a live transaction; `options` NULL or live; `key` NULL or `klen` bytes;
/// `vlen` NULL or writable; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get(
    txn: *mut rocksdb_transaction_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    zero(vlen);
    with_errptr(errptr, std::ptr::null_mut(), || {
        // SAFETY: per the caller's guarantee.
        let t = unsafe { live(txn) }?;
        let ro = read_options(options, t.owner as *const leveldb_t)?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, klen, "key") }?;
        give_value(status(txn_of(t)?.get_opt(&ro, k))?, vlen)
    })
}

/// As [`rocksdb_transaction_get`], and marks `key` for validation at commit. `exclusive`
/// is accepted for RocksDB's signature and ignored (an optimistic transaction takes no
/// lock). The read options are not used beyond RocksDB's signature: the read sees the
/// transaction's snapshot.
///
/// # Safety
/// As [`rocksdb_transaction_get`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_get_for_update(
    txn: *mut rocksdb_transaction_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    klen: usize,
    vlen: *mut usize,
    exclusive: u8,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    let _ = exclusive;
    zero(vlen);
    with_errptr(errptr, std::ptr::null_mut(), || {
        // SAFETY: per the caller's guarantee.
        let t = unsafe { live(txn) }?;
        read_options(options, t.owner as *const leveldb_t)?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, klen, "key") }?;
        give_value(status(txn_of(t)?.get_for_update(k))?, vlen)
    })
}

/// Puts `key` = `val` in the transaction.
///
/// # Safety
/// `txn` NULL or a live transaction; `key`/`val` NULL or `klen`/`vlen` bytes; `errptr`
/// NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_put(
    txn: *mut rocksdb_transaction_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let t = unsafe { live(txn) }?;
        // SAFETY: per the caller's guarantee on `key` and `val`.
        let (k, v) = unsafe { (bytes(key, klen, "key")?, bytes(val, vlen, "value")?) };
        status(txn_of(t)?.put(k, v))
    });
}

/// Deletes `key` in the transaction.
///
/// # Safety
/// As [`rocksdb_transaction_put`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_transaction_delete(
    txn: *mut rocksdb_transaction_t,
    key: *const c_char,
    klen: usize,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: per the caller's guarantee.
        let t = unsafe { live(txn) }?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, klen, "key") }?;
        status(txn_of(t)?.delete(k))
    });
}

/// An empty indexed batch. `reserved_bytes` is a hint RocksDB takes (ignored);
/// `overwrite_key` is accepted for RocksDB's signature: the index always keeps each key's
/// newest update.
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_writebatch_wi_create(
    reserved_bytes: usize,
    overwrite_key: u8,
) -> *mut rocksdb_writebatch_wi_t {
    let _ = (reserved_bytes, overwrite_key);
    Box::into_raw(Box::default())
}

/// Frees an indexed batch. NULL is allowed.
///
/// # Safety
/// `b` NULL or a live indexed batch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_destroy(b: *mut rocksdb_writebatch_wi_t) {
    if !b.is_null() {
        // SAFETY: created by `Box::into_raw` in `rocksdb_writebatch_wi_create`, once.
        drop(unsafe { Box::from_raw(b) });
    }
}

/// Runs `f` on the batch behind `b` (nothing if NULL or on panic).
fn with_wi(b: *mut rocksdb_writebatch_wi_t, f: impl FnOnce(&mut rocksdb_writebatch_wi_t)) {
    no_errptr((), || {
        // SAFETY: `b` is NULL or a live batch used by one thread at a time.
        if let Some(b) = unsafe { b.as_mut() } {
            f(b);
        }
    });
}

/// Adds a put. Invalid arguments (NULL with a length) mark the batch invalid: its write
/// then fails with the reason.
///
/// # Safety
/// `b` NULL or live; `key`/`val` NULL or `klen`/`vlen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_put(
    b: *mut rocksdb_writebatch_wi_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    with_wi(b, |b| {
        // SAFETY: per the caller's guarantee on `key` and `val`.
        match unsafe {
            bytes(key, klen, "key").and_then(|k| bytes(val, vlen, "value").map(|v| (k, v)))
        } {
            Ok((k, v)) => b.wb.put(k, v),
            Err(e) => {
                b.invalid.get_or_insert(e);
            }
        }
    });
}

/// Adds a delete.
///
/// # Safety
/// `b` NULL or live; `key` NULL or `klen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_delete(
    b: *mut rocksdb_writebatch_wi_t,
    key: *const c_char,
    klen: usize,
) {
    with_wi(b, |b| {
        // SAFETY: per the caller's guarantee on `key`.
        match unsafe { bytes(key, klen, "key") } {
            Ok(k) => b.wb.delete(k),
            Err(e) => {
                b.invalid.get_or_insert(e);
            }
        }
    });
}

/// The number of updates in the batch (0 for NULL).
///
/// # Safety
/// `b` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_count(b: *mut rocksdb_writebatch_wi_t) -> i32 {
    no_errptr(0, || {
        // SAFETY: NULL or a live batch.
        unsafe { b.as_ref() }.map_or(0, |b| i32::try_from(b.wb.len()).unwrap_or(i32::MAX))
    })
}

/// Removes every update (and clears an invalid mark).
///
/// # Safety
/// `b` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_clear(b: *mut rocksdb_writebatch_wi_t) {
    with_wi(b, |b| {
        b.wb.clear();
        b.invalid = None;
    });
}

/// The batch's own value of `key` (`leveldb_get`'s conventions; NULL when the batch
/// deletes the key or does not update it). `options` is accepted for RocksDB's signature.
///
/// # Safety
/// `b` NULL or live; `key` NULL or `keylen` bytes; `vallen` NULL or writable; `errptr`
/// NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_get_from_batch(
    b: *mut rocksdb_writebatch_wi_t,
    options: *const leveldb_options_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    let _ = options;
    zero(vallen);
    with_errptr(errptr, std::ptr::null_mut(), || {
        // SAFETY: NULL or a live batch.
        let b = unsafe { b.as_ref() }.ok_or("Invalid argument: batch is NULL")?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, keylen, "key") }?;
        let v = match b.wb.get_from_batch(k) {
            Some(BatchValue::Put(v)) => Some(v.to_vec()),
            _ => None,
        };
        give_value(v, vallen)
    })
}

/// The value of `key` as the batch would leave `db`: its own update, else `db`'s value
/// read with `options`.
///
/// # Safety
/// As [`rocksdb_writebatch_wi_get_from_batch`]; `db` NULL or from `leveldb_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_wi_get_from_batch_and_db(
    b: *mut rocksdb_writebatch_wi_t,
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    zero(vallen);
    with_errptr(errptr, std::ptr::null_mut(), || {
        // SAFETY: NULL or a live batch.
        let b = unsafe { b.as_ref() }.ok_or("Invalid argument: batch is NULL")?;
        let d = lookup(db)?;
        let ro = read_options(options, db)?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, keylen, "key") }?;
        give_value(status(b.wb.get_from_batch_and_db(&d, &ro, k))?, vallen)
    })
}

/// Writes the batch's updates to `db` as one atomic batch; the batch is unchanged.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; `options` NULL or live; `b` NULL or live; `errptr`
/// NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_write_writebatch_wi(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    b: *mut rocksdb_writebatch_wi_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        // SAFETY: NULL or a live batch.
        let b = unsafe { b.as_ref() }.ok_or("Invalid argument: batch is NULL")?;
        write_checked(&d, options, b.wb.batch(), b.invalid.as_deref())
    });
}
