//! Column families under RocksDB's C names (`include/mezzanine/column_family.h`): open
//! with families, list, create, drop, and the `_cf` reads and writes, taking this
//! library's `leveldb_*` options and handles where RocksDB's take `rocksdb_*` ones.
//!
//! Owns `rocksdb_column_family_handle_t` (a boxed engine `ColumnFamily`, freed once by
//! `rocksdb_column_family_handle_destroy`) and `rocksdb_flushoptions_t`. A handle does not
//! keep its database open; using it after the database is closed is an error through
//! `errptr` (the database handle is checked against the registry, as everywhere), and
//! using it after its family was dropped is the engine's `Invalid argument`.
//!
//! Thread safety: a family handle may be used from many threads at once (the engine's
//! handle is `Sync`); destroying it while another thread uses it is undefined, as in
//! RocksDB.

use std::ffi::{c_char, c_int};

use engine::{ColumnFamily, Db, WriteBatch};

use crate::batch::leveldb_writebatch_t;
use crate::db::{
    db_path, leveldb_property, leveldb_t, lookup, options, range_keys, read_options, register,
};
use crate::iter::leveldb_iterator_t;
use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};
use crate::{bytes, c_str, malloc_copy, malloc_cstring, no_errptr, status, with_errptr};

/// A column family handle (RocksDB's `rocksdb_column_family_handle_t`).
#[derive(Debug)]
pub struct rocksdb_column_family_handle_t {
    cf: ColumnFamily,
}

/// Flush options (RocksDB's `rocksdb_flushoptions_t`): `wait` is accepted; a flush here
/// always waits.
#[derive(Debug, Default)]
pub struct rocksdb_flushoptions_t {
    wait: bool,
}

fn handle(cf: ColumnFamily) -> *mut rocksdb_column_family_handle_t {
    Box::into_raw(Box::new(rocksdb_column_family_handle_t { cf }))
}

/// The family behind `h`.
fn family<'a>(h: *const rocksdb_column_family_handle_t) -> Result<&'a ColumnFamily, String> {
    // SAFETY: `h` is NULL or a live family handle (the caller's guarantee).
    unsafe { h.as_ref() }
        .map(|h| &h.cf)
        .ok_or_else(|| "Invalid argument: column family handle is NULL".to_string())
}

/// A family name from a C string.
///
/// # Safety
/// `name` NULL or NUL-terminated.
unsafe fn family_name<'a>(name: *const c_char) -> Result<&'a str, String> {
    // SAFETY: per the caller's guarantee.
    let n = unsafe { c_str(name, "column family name") }?;
    std::str::from_utf8(n)
        .map_err(|_| "Invalid argument: column family name is not UTF-8".to_string())
}

/// Sets `*len` if `len` is non-null.
fn set_len(len: *mut usize, n: usize) {
    if !len.is_null() {
        // SAFETY: non-null and writable per the caller's guarantee.
        unsafe { *len = n };
    }
}

/// Sets `create_missing_column_families`: `rocksdb_open_column_families` creates the
/// families it names that the database lacks (with the options given for each).
///
/// # Safety
/// `opt` NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_options_set_create_missing_column_families(
    opt: *mut leveldb_options_t,
    v: u8,
) {
    no_errptr((), || {
        // SAFETY: `opt` is NULL or a live options handle used by one thread.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.create_missing_column_families = v != 0;
        }
    });
}

/// The names of the column families of the (closed) database `name`, `"default"` first,
/// as a `malloc`ed array of `*lencf` `malloc`ed strings (free with
/// `rocksdb_list_column_families_destroy`). NULL on error.
///
/// # Safety
/// `options` NULL or live; `name` NULL or NUL-terminated; `lencf` NULL or writable;
/// `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_list_column_families(
    options_: *const leveldb_options_t,
    name: *const c_char,
    lencf: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut *mut c_char {
    set_len(lencf, 0);
    with_errptr(errptr, std::ptr::null_mut(), || {
        let o = options(options_)?.engine_options()?;
        // SAFETY: `name` is NULL or NUL-terminated.
        let path = unsafe { db_path(name) }?;
        let names = status(Db::list_column_families(&path, &o))?;
        let size = names.len().max(1) * std::mem::size_of::<*mut c_char>();
        // SAFETY: `malloc` of a nonzero size, checked for NULL.
        let list: *mut *mut c_char = unsafe { libc::malloc(size) }.cast();
        if list.is_null() {
            return Err("IO error: out of memory listing column families".to_string());
        }
        for (i, n) in names.iter().enumerate() {
            // SAFETY: `list` holds `names.len()` pointers; `i` is below that.
            unsafe { list.add(i).write(malloc_cstring(n)) };
        }
        set_len(lencf, names.len());
        Ok(list)
    })
}

/// Frees a list from `rocksdb_list_column_families`. NULL is allowed.
///
/// # Safety
/// `list` NULL or a list of `len` strings from `rocksdb_list_column_families`, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_list_column_families_destroy(list: *mut *mut c_char, len: usize) {
    if list.is_null() {
        return;
    }
    for i in 0..len {
        // SAFETY: `list` holds `len` `malloc`ed strings (the caller's guarantee).
        unsafe { libc::free(list.add(i).read().cast()) };
    }
    // SAFETY: `list` was `malloc`ed by `rocksdb_list_column_families`.
    unsafe { libc::free(list.cast()) };
}

/// Opens database `name` with its column families, as RocksDB's: `column_family_names`
/// must name every family the database has (`"default"` included); each name gets a
/// handle in `column_family_handles` (in the same order). A name the database lacks is an
/// error unless `create_missing_column_families` is set, when it is created with the
/// options given beside it. The options of a family that exists already are the ones
/// recorded when it was created. NULL on error (no handle is then written).
///
/// # Safety
/// `options` NULL or live; `name` NULL or NUL-terminated; `column_family_names` and
/// `column_family_options` NULL or arrays of `num_column_families` entries (names
/// NUL-terminated, options NULL or live); `column_family_handles` NULL or room for
/// `num_column_families` pointers; `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_open_column_families(
    options_: *const leveldb_options_t,
    name: *const c_char,
    num_column_families: c_int,
    column_family_names: *const *const c_char,
    column_family_options: *const *const leveldb_options_t,
    column_family_handles: *mut *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) -> *mut leveldb_t {
    with_errptr(errptr, std::ptr::null_mut(), || {
        let opts = options(options_)?;
        let o = opts.engine_options()?;
        // SAFETY: `name` is NULL or NUL-terminated.
        let path = unsafe { db_path(name) }?;
        let n = usize::try_from(num_column_families)
            .map_err(|_| "Invalid argument: negative number of column families".to_string())?;
        if n > 0 && (column_family_names.is_null() || column_family_handles.is_null()) {
            return Err(
                "Invalid argument: column family names or handles array is NULL".to_string(),
            );
        }
        let mut wanted = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: the names array holds `n` NUL-terminated strings.
            let fam = unsafe { family_name(column_family_names.add(i).read()) }?;
            let fopts = if column_family_options.is_null() {
                None
            } else {
                // SAFETY: the options array holds `n` entries, each NULL or live.
                unsafe { column_family_options.add(i).read().as_ref() }
            };
            wanted.push((fam.to_string(), fopts));
        }
        let db = status(Db::open(&path, o))?;
        let mut handles = Vec::with_capacity(n);
        let opened = (|| {
            let listed: Vec<&str> = wanted.iter().map(|(f, _)| f.as_str()).collect();
            let missing: Vec<String> = db
                .column_families()
                .into_iter()
                .filter(|f| !listed.contains(&f.as_str()))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "Invalid argument: Column families not opened: {}",
                    missing.join(", ")
                ));
            }
            for (fam, fopts) in &wanted {
                let cf = match db.column_family(fam) {
                    Some(cf) => cf,
                    None if opts.create_missing_column_families => {
                        let fo = match fopts {
                            Some(fo) => fo.engine_options()?,
                            None => opts.engine_options()?,
                        };
                        status(db.create_column_family(fam, &fo))?
                    }
                    None => {
                        return Err(format!("Invalid argument: Column family not found: {fam}"));
                    }
                };
                handles.push(cf);
            }
            Ok(())
        })();
        if let Err(e) = opened {
            let _ = db.close();
            return Err(e);
        }
        for (i, cf) in handles.into_iter().enumerate() {
            // SAFETY: the handles array has room for `n` pointers; `i < n`.
            unsafe { column_family_handles.add(i).write(handle(cf)) };
        }
        Ok(register(db))
    })
}

/// Creates column family `column_family_name` with `column_family_options` (recorded: later
/// opens use them). NULL on error.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; `column_family_options` NULL or live (NULL: the
/// defaults of a fresh options object); `column_family_name` NULL or NUL-terminated;
/// `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_create_column_family(
    db: *mut leveldb_t,
    column_family_options: *const leveldb_options_t,
    column_family_name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut rocksdb_column_family_handle_t {
    with_errptr(errptr, std::ptr::null_mut(), || {
        let d = lookup(db)?;
        // SAFETY: NULL or NUL-terminated.
        let fam = unsafe { family_name(column_family_name) }?;
        // SAFETY: NULL or a live options handle.
        let fo = match unsafe { column_family_options.as_ref() } {
            Some(o) => o.engine_options()?,
            None => engine::Options::default(),
        };
        Ok(handle(status(d.create_column_family(fam, &fo))?))
    })
}

/// Drops the family behind `handle`: its data is deleted; the handle must still be
/// destroyed.
///
/// # Safety
/// `db` NULL or from `leveldb_open`; `handle` NULL or live; `errptr` NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_drop_column_family(
    db: *mut leveldb_t,
    handle: *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        status(d.drop_column_family(family(handle)?))
    });
}

/// Frees a family handle (the family stays). NULL is allowed.
///
/// # Safety
/// `handle` NULL or a live family handle, destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_handle_destroy(
    handle: *mut rocksdb_column_family_handle_t,
) {
    if !handle.is_null() {
        // SAFETY: created by `Box::into_raw` in this module, destroyed once.
        drop(unsafe { Box::from_raw(handle) });
    }
}

/// The family's id (0: the default family). 0 for NULL.
///
/// # Safety
/// `handle` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_handle_get_id(
    handle: *mut rocksdb_column_family_handle_t,
) -> u32 {
    no_errptr(0, || family(handle).map_or(0, ColumnFamily::id))
}

/// The family's name, `malloc`ed (not NUL-terminated in RocksDB; here it is, and
/// `*name_len` excludes the NUL). NULL for a NULL handle.
///
/// # Safety
/// `handle` NULL or live; `name_len` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_column_family_handle_get_name(
    handle: *mut rocksdb_column_family_handle_t,
    name_len: *mut usize,
) -> *mut c_char {
    set_len(name_len, 0);
    no_errptr(std::ptr::null_mut(), || match family(handle) {
        Ok(cf) => {
            set_len(name_len, cf.name().len());
            malloc_cstring(cf.name())
        }
        Err(_) => std::ptr::null_mut(),
    })
}

/// Puts `key` = `val` in the family.
///
/// # Safety
/// As `leveldb_put`; `column_family` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_put_cf(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    column_family: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        let cf = family(column_family)?;
        // SAFETY: per the caller's guarantee on `key` and `val`.
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "value")?) };
        let mut b = WriteBatch::new();
        b.put_cf(cf, k, v);
        status(d.write(&crate::db::write_options(options), b))
    });
}

/// Deletes `key` in the family.
///
/// # Safety
/// As `rocksdb_put_cf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_delete_cf(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    column_family: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        let cf = family(column_family)?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, keylen, "key") }?;
        let mut b = WriteBatch::new();
        b.delete_cf(cf, k);
        status(d.write(&crate::db::write_options(options), b))
    });
}

/// The value of `key` in the family (`malloc`ed, `*vallen` bytes), or NULL if absent or on
/// error.
///
/// # Safety
/// As `leveldb_get`; `column_family` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_get_cf(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    column_family: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    set_len(vallen, 0);
    with_errptr(errptr, std::ptr::null_mut(), || {
        let d = lookup(db)?;
        let cf = family(column_family)?;
        let ro = read_options(options, db)?;
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, keylen, "key") }?;
        match status(d.get_cf_opt(cf, &ro, k))? {
            None => Ok(std::ptr::null_mut()),
            Some(v) => {
                let p = malloc_copy(&v);
                if p.is_null() {
                    return Err("IO error: out of memory copying the value".to_string());
                }
                set_len(vallen, v.len());
                Ok(p)
            }
        }
    })
}

/// Reads `num_keys` keys, each in its own family (`column_families[i]`), as RocksDB's:
/// `values_list[i]` is a `malloc`ed value of `values_list_sizes[i]` bytes or NULL (absent
/// or failed), `errs[i]` NULL or a `malloc`ed error text.
///
/// # Safety
/// `db` NULL or open; every array NULL or of `num_keys` entries (`column_families` live
/// handles, `keys_list` pointing to `keys_list_sizes` bytes; the output arrays writable).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_multi_get_cf(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    column_families: *const *const rocksdb_column_family_handle_t,
    num_keys: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    values_list: *mut *mut c_char,
    values_list_sizes: *mut usize,
    errs: *mut *mut c_char,
) {
    no_errptr((), || {
        if num_keys == 0 || values_list.is_null() || values_list_sizes.is_null() || errs.is_null() {
            return;
        }
        let read_one = |i: usize| -> Result<Option<Vec<u8>>, String> {
            let d = lookup(db)?;
            let ro = read_options(options, db)?;
            if column_families.is_null() || keys_list.is_null() || keys_list_sizes.is_null() {
                return Err("Invalid argument: a multi_get input array is NULL".to_string());
            }
            // SAFETY: the input arrays hold `num_keys` entries and `i < num_keys`.
            let (h, kp, kl) = unsafe {
                (
                    column_families.add(i).read(),
                    keys_list.add(i).read(),
                    keys_list_sizes.add(i).read(),
                )
            };
            let cf = family(h)?;
            // SAFETY: `kp` points to `kl` bytes per the caller's guarantee.
            let k = unsafe { bytes(kp, kl, "key") }?;
            status(d.get_cf_opt(cf, &ro, k))
        };
        for i in 0..num_keys {
            let (v, len, e) = match read_one(i) {
                Ok(Some(v)) => {
                    let p = malloc_copy(&v);
                    if p.is_null() {
                        (
                            p,
                            0,
                            malloc_cstring("IO error: out of memory copying the value"),
                        )
                    } else {
                        (p, v.len(), std::ptr::null_mut())
                    }
                }
                Ok(None) => (std::ptr::null_mut(), 0, std::ptr::null_mut()),
                Err(msg) => (std::ptr::null_mut(), 0, malloc_cstring(&msg)),
            };
            // SAFETY: the output arrays hold `num_keys` writable entries; `i < num_keys`.
            unsafe {
                values_list.add(i).write(v);
                values_list_sizes.add(i).write(len);
                errs.add(i).write(e);
            }
        }
    });
}

/// An iterator over the family (see `leveldb_create_iterator`). Never NULL (except if out
/// of memory); an error shows in `leveldb_iter_get_error`.
///
/// # Safety
/// `db` NULL or open; `options` NULL or live; `column_family` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_create_iterator_cf(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    column_family: *mut rocksdb_column_family_handle_t,
) -> *mut leveldb_iterator_t {
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let d = lookup(db)?;
        let cf = family(column_family)?;
        let ro = read_options(options, db)?;
        status(d.cursor_cf(cf, &ro))
    }));
    leveldb_iterator_t::boxed(made)
}

/// A property of the family (`malloc`ed), as `leveldb_property_value`; NULL if unknown.
///
/// # Safety
/// `db` NULL or open; `column_family` NULL or live; `propname` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_property_value_cf(
    db: *mut leveldb_t,
    column_family: *mut rocksdb_column_family_handle_t,
    propname: *const c_char,
) -> *mut c_char {
    no_errptr(std::ptr::null_mut(), || {
        let (Ok(d), Ok(cf)) = (lookup(db), family(column_family)) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `propname` is NULL or NUL-terminated.
        let Ok(name) = (unsafe { c_str(propname, "property") }) else {
            return std::ptr::null_mut();
        };
        let Ok(name) = std::str::from_utf8(name) else {
            return std::ptr::null_mut();
        };
        leveldb_property(
            name,
            |n| d.property_cf(cf, n),
            || d.stats_cf(cf).ok().map(|s| s.memtable_bytes),
        )
        .map_or(std::ptr::null_mut(), |v| malloc_cstring(&v))
    })
}

/// Compacts the family's key range `[start, limit]` (NULL: unbounded), as
/// `leveldb_compact_range`.
///
/// # Safety
/// `db` NULL or open; `column_family` NULL or live; keys NULL or pointing to their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_compact_range_cf(
    db: *mut leveldb_t,
    column_family: *mut rocksdb_column_family_handle_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    no_errptr((), || {
        let (Ok(d), Ok(cf)) = (lookup(db), family(column_family)) else {
            return;
        };
        // SAFETY: each key is NULL or points to its length's bytes.
        let (s, l) = unsafe { range_keys(start_key, start_key_len, limit_key, limit_key_len) };
        let _ = d.compact_range_cf(cf, s, l);
    });
}

/// Flush options with `wait` set.
#[unsafe(no_mangle)]
pub extern "C" fn rocksdb_flushoptions_create() -> *mut rocksdb_flushoptions_t {
    Box::into_raw(Box::new(rocksdb_flushoptions_t { wait: true }))
}

/// Frees flush options. NULL is allowed.
///
/// # Safety
/// `opt` NULL or live, destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flushoptions_destroy(opt: *mut rocksdb_flushoptions_t) {
    if !opt.is_null() {
        // SAFETY: created by `rocksdb_flushoptions_create`, destroyed once.
        drop(unsafe { Box::from_raw(opt) });
    }
}

/// Sets `wait` (accepted; flushes always wait here).
///
/// # Safety
/// `opt` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flushoptions_set_wait(opt: *mut rocksdb_flushoptions_t, v: u8) {
    // SAFETY: NULL or a live handle used by one thread.
    if let Some(o) = unsafe { opt.as_mut() } {
        o.wait = v != 0;
    }
}

/// Flushes the database's memtables to tables and waits (memtables switch together, so
/// this flushes every family, as RocksDB's atomic flush).
///
/// # Safety
/// `db` NULL or open; `options` NULL or live; `errptr` NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flush(
    db: *mut leveldb_t,
    _options: *const rocksdb_flushoptions_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || status(lookup(db)?.flush()));
}

/// `rocksdb_flush` through a family handle (checked: a dropped family is an error).
///
/// # Safety
/// As `rocksdb_flush`; `column_family` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_flush_cf(
    db: *mut leveldb_t,
    _options: *const rocksdb_flushoptions_t,
    column_family: *mut rocksdb_column_family_handle_t,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        let d = lookup(db)?;
        status(d.flush_cf(family(column_family)?))
    });
}

/// Adds a put of `key` = `val` in the family to the batch.
///
/// # Safety
/// `b` NULL or live; `column_family` NULL or live; `key`/`val` NULL or of their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_put_cf(
    b: *mut leveldb_writebatch_t,
    column_family: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    crate::batch::with_batch(b, |b| {
        // SAFETY: per the caller's guarantee on `key` and `val`.
        let kv =
            unsafe { bytes(key, klen, "key").and_then(|k| Ok((k, bytes(val, vlen, "value")?))) };
        match (family(column_family), kv) {
            (Ok(cf), Ok((k, v))) => b.batch.put_cf(cf, k, v),
            (Err(e), _) | (_, Err(e)) => {
                b.invalid.get_or_insert(e);
            }
        }
    });
}

/// Adds a delete of `key` in the family to the batch.
///
/// # Safety
/// As `rocksdb_writebatch_put_cf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocksdb_writebatch_delete_cf(
    b: *mut leveldb_writebatch_t,
    column_family: *mut rocksdb_column_family_handle_t,
    key: *const c_char,
    klen: usize,
) {
    crate::batch::with_batch(b, |b| {
        // SAFETY: per the caller's guarantee on `key`.
        let k = unsafe { bytes(key, klen, "key") };
        match (family(column_family), k) {
            (Ok(cf), Ok(k)) => b.batch.delete_cf(cf, k),
            (Err(e), _) | (_, Err(e)) => {
                b.invalid.get_or_insert(e);
            }
        }
    });
}
