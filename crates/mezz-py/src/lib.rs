//! The `mezzanine` Python extension (`mezzanine._mezzanine`): plyvel's API over [`Db`].
//!
//! Owns the Python classes `DB`, `PrefixedDB`, `ColumnFamily` (`DB.column_family()`),
//! `WriteBatch`, `Snapshot`, `Iterator` and `Transaction` (an optimistic transaction,
//! `DB.transaction()`), and
//! the exception hierarchy (`Error` and one subclass per error kind). Keys and values are
//! `bytes` (a `str` raises `TypeError`); every call into the engine releases the GIL.
//!
//! Invariants: a `DB` and everything made from it share one [`Shared`], whose database is
//! `None` once closed (every later call raises `ClosedError`); a column family view reads
//! and writes its family (a batch made from it too); a prefixed view adds its
//! prefix to every key it writes, reads or seeks and strips it from every key it returns.
//! An `Iterator` models plyvel's cursor "between" entries: `Gap::Before` means just before
//! the cursor's (valid) entry.
//!
//! Thread-safety: every class is `Send + Sync` (mutable state behind a `Mutex`); the engine
//! handle is shared through `Arc` and may be used from many Python threads at once.

use std::path::PathBuf;
use std::sync::{Arc, Weak};

use mezzanine::{
    ColumnFamily, Db, DbIterator, Options, ReadOptions, Snapshot, Transaction, TxnOptions,
    WriteBatch, WriteOptions,
};
use parking_lot::{Mutex, RwLock};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyTuple, PyType};

create_exception!(
    mezzanine,
    Error,
    PyException,
    "Base class of Mezzanine's errors."
);
create_exception!(mezzanine, IOError, Error, "An I/O error from the storage.");
create_exception!(
    mezzanine,
    CorruptionError,
    Error,
    "Data on disk failed a checksum or invariant."
);
create_exception!(
    mezzanine,
    NotFoundError,
    Error,
    "No database at the path (create_if_missing is false)."
);
create_exception!(
    mezzanine,
    LockedError,
    Error,
    "The database is already open (its LOCK is held)."
);
create_exception!(
    mezzanine,
    BackgroundError,
    Error,
    "A background job failed; writes are refused until reopened."
);

create_exception!(
    mezzanine,
    BusyError,
    Error,
    "A transaction's commit conflicted with another write; nothing was written (retry it)."
);

create_exception!(
    mezzanine,
    IteratorInvalidError,
    Error,
    "A raw iterator is not on an entry (plyvel's IteratorInvalidError)."
);

/// `ClosedError(Error, RuntimeError)`: what plyvel raises for a closed database, snapshot or
/// iterator is a `RuntimeError`; ours is one too, and a `mezzanine.Error`.
static CLOSED_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// `InvalidArgumentError(Error, ValueError)`: plyvel raises `ValueError` for bad arguments.
static INVALID_ARGUMENT_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// An exception class `name` of the package with `bases`.
fn exception_type<'py>(
    py: Python<'py>,
    name: &str,
    doc: &str,
    bases: &[Bound<'py, PyType>],
) -> PyResult<Bound<'py, PyType>> {
    let dict = PyDict::new(py);
    dict.set_item("__module__", "mezzanine")?;
    dict.set_item("__doc__", doc)?;
    let t =
        py.import("builtins")?
            .getattr("type")?
            .call1((name, PyTuple::new(py, bases)?, dict))?;
    Ok(t.cast_into::<PyType>()?)
}

/// An exception of the class in `cell` (made when the module loads).
fn err_of(cell: &'static PyOnceLock<Py<PyType>>, msg: String) -> PyErr {
    Python::attach(|py| match cell.get(py) {
        Some(t) => PyErr::from_type(t.bind(py).clone(), msg),
        None => Error::new_err(msg),
    })
}

fn closed_err(msg: impl Into<String>) -> PyErr {
    err_of(&CLOSED_ERROR, msg.into())
}

fn invalid_err(msg: impl Into<String>) -> PyErr {
    err_of(&INVALID_ARGUMENT_ERROR, msg.into())
}

/// A key or value argument: `bytes` (borrowed), or another bytes-like object (`bytearray`,
/// `memoryview`) copied, as plyvel takes them; anything else (`str`, `int`, `None`) is a
/// `TypeError`.
struct Buf<'a>(std::borrow::Cow<'a, [u8]>);

impl std::ops::Deref for Buf<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Buf<'a> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
            // `bytes` borrowed in place, `bytearray` copied (pyo3's `Cow` conversion).
            return <std::borrow::Cow<'a, [u8]> as FromPyObject<'a, 'py>>::extract(obj).map(Buf);
        }
        if obj.cast::<PyMemoryView>().is_ok() {
            let bytes = obj.call_method0("tobytes")?;
            let b = bytes.cast::<PyBytes>()?;
            return Ok(Buf(std::borrow::Cow::Owned(b.as_bytes().to_vec())));
        }
        let type_name = obj.get_type().name()?;
        Err(PyTypeError::new_err(format!(
            "a bytes-like object is required, not '{type_name}'"
        )))
    }
}

/// Maps an engine error to its Python exception.
fn to_py(e: mezzanine::Error) -> PyErr {
    use mezzanine::Error as E;
    let msg = e.to_string();
    match e {
        E::Io { .. } => IOError::new_err(msg),
        E::Corruption { .. } | E::UnsupportedVersion { .. } => CorruptionError::new_err(msg),
        E::InvalidArgument(m) if m.contains("create_if_missing is false") => {
            NotFoundError::new_err(msg)
        }
        E::InvalidArgument(_) => invalid_err(msg),
        E::Locked(_) => LockedError::new_err(msg),
        E::Background(_) => BackgroundError::new_err(msg),
        E::Closed => closed_err(msg),
        E::Busy(_) => BusyError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// What a `DB` and all its views, batches, snapshots and iterators share.
#[derive(Debug)]
struct Shared {
    db: RwLock<Option<Arc<Db>>>,
    /// The database `close()` took out of `db`, while anything still holds it: a `close()`
    /// on another thread meanwhile closes it too, which waits for the first close to finish
    /// (so it does not return while the LOCK is still held).
    closing: Mutex<Weak<Db>>,
    name: String,
}

impl Shared {
    fn db(&self) -> PyResult<Arc<Db>> {
        self.db
            .read()
            .clone()
            .ok_or_else(|| closed_err("database is closed"))
    }
}

/// A database handle: a column family (`None`: the default one) and a key prefix within
/// it (empty for the family itself).
#[derive(Debug, Clone)]
struct Handle {
    shared: Arc<Shared>,
    cf: Option<ColumnFamily>,
    prefix: Vec<u8>,
}

fn with_prefix(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + key.len());
    k.extend_from_slice(prefix);
    k.extend_from_slice(key);
    k
}

fn read_options(
    snapshot: Option<Snapshot>,
    verify_checksums: Option<bool>,
    fill_cache: Option<bool>,
) -> ReadOptions {
    ReadOptions {
        snapshot,
        verify_checksums: verify_checksums.unwrap_or(false),
        fill_cache: fill_cache.unwrap_or(true),
        ..ReadOptions::default()
    }
}

impl Handle {
    fn key(&self, key: &[u8]) -> Vec<u8> {
        with_prefix(&self.prefix, key)
    }

    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        ro: &ReadOptions,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let db = self.shared.db()?;
        if let Some(cf) = &self.cf {
            let k = self.key(key);
            let v = py.detach(|| db.get_cf_opt(cf, ro, &k)).map_err(to_py)?;
            return Ok(v.map(|v| PyBytes::new(py, &v)));
        }
        let v = if self.prefix.is_empty() {
            py.detach(|| db.get_pinned_opt(ro, key))
        } else {
            let k = self.key(key);
            py.detach(|| db.get_pinned_opt(ro, &k))
        }
        .map_err(to_py)?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    fn put(&self, py: Python<'_>, key: &[u8], value: &[u8], sync: bool) -> PyResult<()> {
        let db = self.shared.db()?;
        let wo = WriteOptions { sync };
        if let Some(cf) = &self.cf {
            let mut b = WriteBatch::new();
            b.put_cf(cf, &self.key(key), value);
            return py.detach(|| db.write(&wo, b)).map_err(to_py);
        }
        if self.prefix.is_empty() {
            py.detach(|| db.put_opt(&wo, key, value))
        } else {
            let k = self.key(key);
            py.detach(|| db.put_opt(&wo, &k, value))
        }
        .map_err(to_py)
    }

    fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        let db = self.shared.db()?;
        let k = self.key(key);
        let wo = WriteOptions { sync };
        if let Some(cf) = &self.cf {
            let mut b = WriteBatch::new();
            b.delete_cf(cf, &k);
            return py.detach(|| db.write(&wo, b)).map_err(to_py);
        }
        py.detach(|| db.delete_opt(&wo, &k)).map_err(to_py)
    }

    /// A cursor over the handle's family.
    fn cursor(&self, py: Python<'_>, db: &Db, ro: &ReadOptions) -> PyResult<DbIterator> {
        match &self.cf {
            Some(cf) => py.detach(|| db.cursor_cf(cf, ro)),
            None => py.detach(|| db.cursor(ro)),
        }
        .map_err(to_py)
    }

    /// Adds a put of `key` (under the prefix, in the family) to `b`.
    fn batch_put(&self, b: &mut WriteBatch, key: &[u8], value: &[u8]) {
        match &self.cf {
            Some(cf) => b.put_cf(cf, &self.key(key), value),
            None => b.put(&self.key(key), value),
        }
    }

    /// Adds a delete of `key` (under the prefix, in the family) to `b`.
    fn batch_delete(&self, b: &mut WriteBatch, key: &[u8]) {
        match &self.cf {
            Some(cf) => b.delete_cf(cf, &self.key(key)),
            None => b.delete(&self.key(key)),
        }
    }

    /// The same family with `prefix` added to the key prefix.
    fn prefixed(&self, prefix: &[u8]) -> Handle {
        Handle {
            shared: Arc::clone(&self.shared),
            cf: self.cf.clone(),
            prefix: with_prefix(&self.prefix, prefix),
        }
    }

    /// A raw cursor over the view's keys (plyvel's `raw_iterator`).
    fn raw_iterator(&self, py: Python<'_>, snapshot: Option<Snapshot>) -> PyResult<PyRawIterator> {
        let db = self.shared.db()?;
        let ro = ReadOptions {
            snapshot,
            lower_bound: (!self.prefix.is_empty()).then(|| self.prefix.clone()),
            upper_bound: prefix_end(&self.prefix),
            ..ReadOptions::default()
        };
        let cursor = self.cursor(py, &db, &ro)?;
        Ok(PyRawIterator {
            cursor: Mutex::new(Some(cursor)),
            prefix: self.prefix.clone(),
        })
    }

    fn iterator(
        &self,
        py: Python<'_>,
        snapshot: Option<Snapshot>,
        spec: IterSpec,
    ) -> PyResult<PyIterator> {
        let db = self.shared.db()?;
        let b = spec.bounds(&self.prefix)?;
        let ro = ReadOptions {
            snapshot,
            lower_bound: b.lower,
            upper_bound: b.upper,
            lower_bound_exclusive: b.lower_excl,
            upper_bound_inclusive: b.upper_incl,
            verify_checksums: spec.verify_checksums,
            fill_cache: spec.fill_cache,
        };
        let cursor = self.cursor(py, &db, &ro)?;
        Ok(PyIterator {
            state: Mutex::new(Some(IterState {
                cursor,
                // Iteration starts at the low end, or at the high end for a reverse iterator.
                gap: if spec.reverse { Gap::End } else { Gap::Start },
            })),
            reverse: spec.reverse,
            include_key: spec.include_key,
            include_value: spec.include_value,
            strip: self.prefix.len(),
            prefix: self.prefix.clone(),
        })
    }
}

/// The arguments of `iterator()`, as plyvel names them.
#[derive(Debug, Clone)]
struct IterSpec {
    reverse: bool,
    start: Option<Vec<u8>>,
    stop: Option<Vec<u8>>,
    include_start: bool,
    include_stop: bool,
    prefix: Option<Vec<u8>>,
    include_key: bool,
    include_value: bool,
    verify_checksums: bool,
    fill_cache: bool,
}

/// The smallest key after every key starting with `p` (`None`: no such key).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Cursor bounds (`None` = unbounded): inclusive lower and exclusive upper unless a flag
/// says otherwise (`start` excluded, `stop` included: no successor key is made up, so they
/// hold under any comparator).
struct Bounds {
    lower: Option<Vec<u8>>,
    lower_excl: bool,
    upper: Option<Vec<u8>>,
    upper_incl: bool,
}

impl IterSpec {
    /// Cursor bounds inside the view's `outer` prefix. A prefix (`prefix=`, or the view's)
    /// is the byte range of its keys: under a custom comparator, as under plyvel, the
    /// comparator must keep keys with a common prefix together for it to mean "keys
    /// starting with".
    fn bounds(&self, outer: &[u8]) -> PyResult<Bounds> {
        if self.prefix.is_some() && (self.start.is_some() || self.stop.is_some()) {
            return Err(PyTypeError::new_err(
                "'prefix' cannot be used together with 'start' or 'stop'",
            ));
        }
        let b = match &self.prefix {
            Some(p) => Bounds {
                lower: Some(with_prefix(outer, p)),
                lower_excl: false,
                upper: prefix_end(&with_prefix(outer, p)),
                upper_incl: false,
            },
            None => {
                let (lower, lower_excl) = match &self.start {
                    Some(s) => (with_prefix(outer, s), !self.include_start),
                    None => (outer.to_vec(), false),
                };
                let (upper, upper_incl) = match &self.stop {
                    Some(s) => (Some(with_prefix(outer, s)), self.include_stop),
                    None => (prefix_end(outer), false),
                };
                Bounds {
                    lower: Some(lower),
                    lower_excl,
                    upper,
                    upper_incl,
                }
            }
        };
        Ok(Bounds {
            lower: b.lower.filter(|l| !l.is_empty() || b.lower_excl),
            ..b
        })
    }
}

/// Extracts an optional bytes argument (`TypeError` for anything but `bytes`/`None`).
fn opt_bytes(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<u8>>> {
    match v {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => Ok(Some(
            o.cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err("keys must be bytes"))?
                .as_bytes()
                .to_vec(),
        )),
    }
}

// ---------------------------------------------------------------------------------------
// DB
// ---------------------------------------------------------------------------------------

/// A Mezzanine database (plyvel's `DB`).
#[pyclass(frozen, module = "mezzanine", name = "DB")]
#[derive(Debug)]
struct PyDb {
    h: Handle,
}

/// Sets a plyvel-named or Mezzanine option from a Python value.
fn set_option(opts: &mut Options, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let text = if let Ok(b) = value.extract::<bool>() {
        b.to_string()
    } else if let Ok(i) = value.extract::<i64>() {
        i.to_string()
    } else if let Ok(f) = value.extract::<f64>() {
        f.to_string()
    } else if let Ok(p) = value.extract::<PathBuf>() {
        p.to_string_lossy().into_owned()
    } else {
        value.str()?.to_string()
    };
    opts.set(name, &text).map_err(to_py)
}

/// A Python callable as the engine's comparator (plyvel's `comparator=`).
struct PyComparator {
    func: Py<PyAny>,
    name: String,
}

impl mezzanine::Comparator for PyComparator {
    fn name(&self) -> &str {
        &self.name
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        Python::attach(|py| {
            let r = self
                .func
                .call1(py, (PyBytes::new(py, a), PyBytes::new(py, b)))
                .and_then(|v| v.extract::<i64>(py));
            match r {
                Ok(n) => n.cmp(&0),
                Err(e) => {
                    // Like plyvel: keys were being placed by this order, and no answer is
                    // safe to make up.
                    e.print(py);
                    eprintln!("FATAL ERROR: exception raised from a custom comparator");
                    std::process::abort()
                }
            }
        })
    }
}

/// plyvel's checks of `comparator` / `comparator_name`, and the comparator they give.
fn py_comparator(
    comparator: Option<Bound<'_, PyAny>>,
    comparator_name: Option<Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<dyn mezzanine::Comparator>>> {
    let Some(func) = comparator.filter(|c| !c.is_none()) else {
        if comparator_name.is_some_and(|n| !n.is_none()) {
            return Err(PyValueError::new_err(
                "'comparator_name' is only valid with 'comparator'",
            ));
        }
        return Ok(None);
    };
    if !func.is_callable() {
        return Err(PyTypeError::new_err("comparator must be a callable"));
    }
    let name = comparator_name
        .and_then(|n| n.cast::<PyBytes>().ok().map(|b| b.as_bytes().to_vec()))
        .ok_or_else(|| PyTypeError::new_err("comparator_name must be a byte string"))?;
    let name = String::from_utf8(name)
        .map_err(|_| PyValueError::new_err("comparator_name must be UTF-8"))?;
    Ok(Some(Arc::new(PyComparator {
        func: func.unbind(),
        name,
    })))
}

/// Default options with each keyword argument set by name (see [`set_option`]).
fn options_from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut opts = Options::default();
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            set_option(&mut opts, &k.extract::<String>()?, &v)?;
        }
    }
    Ok(opts)
}

#[pymethods]
impl PyDb {
    /// Opens (or creates) the database in directory `name`. Keyword arguments: plyvel's
    /// (`create_if_missing`, `error_if_exists`, `paranoid_checks`, `write_buffer_size`,
    /// `max_open_files`, `lru_cache_size`, `block_size`, `block_restart_interval`,
    /// `max_file_size`, `compression`, `bloom_filter_bits`), `preset` (`"leveldb"`,
    /// `"novelsm"`, `"tlsm"`, `"matrixkv"`, `"mezzanine"`; all but `"leveldb"` need
    /// `nvm_dir`) and any Mezzanine option by name (e.g. `nvm_dir`, `nvm_memtable`,
    /// `nvm_persistence`, `wal_on_nvm`, `parallel_reads`).
    ///
    /// `comparator` (a callable `(a: bytes, b: bytes) -> int`, negative, zero or positive)
    /// with `comparator_name` (bytes, recorded in the database and checked at every open)
    /// orders the keys instead of bytewise, as plyvel's do. It is called from the engine's
    /// threads (taking the GIL); it must not raise: an exception is printed and the process
    /// aborts, as under plyvel, since an order that fails midway cannot be kept.
    #[new]
    #[pyo3(signature = (name, create_if_missing=false, error_if_exists=false, paranoid_checks=None,
        write_buffer_size=None, max_open_files=None, lru_cache_size=None, block_size=None,
        block_restart_interval=None, max_file_size=None, compression=Some("snappy".to_string()),
        bloom_filter_bits=None, comparator=None, comparator_name=None, preset=None, **options))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: PathBuf,
        create_if_missing: bool,
        error_if_exists: bool,
        paranoid_checks: Option<bool>,
        write_buffer_size: Option<u64>,
        max_open_files: Option<u64>,
        lru_cache_size: Option<u64>,
        block_size: Option<u64>,
        block_restart_interval: Option<u64>,
        max_file_size: Option<u64>,
        compression: Option<String>,
        bloom_filter_bits: Option<u32>,
        comparator: Option<Bound<'_, PyAny>>,
        comparator_name: Option<Bound<'_, PyAny>>,
        preset: Option<String>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyDb> {
        let mut opts = Options {
            comparator: py_comparator(comparator, comparator_name)?,
            ..Options::default()
        };
        if let Some(p) = preset {
            opts.set("preset", &p).map_err(to_py)?;
        }
        // plyvel's default 'snappy' (and None) leave the engine's `compression` as it is;
        // anything else is the engine's option (`lz4`, `zstd`, or one per level).
        if let Some(c) = compression.as_deref().filter(|c| *c != "snappy") {
            opts.set("compression", c).map_err(to_py)?;
        }
        opts.create_if_missing = create_if_missing;
        opts.error_if_exists = error_if_exists;
        let sets: [(&str, Option<String>); 8] = [
            ("paranoid_checks", paranoid_checks.map(|v| v.to_string())),
            (
                "write_buffer_size",
                write_buffer_size.map(|v| v.to_string()),
            ),
            ("max_open_files", max_open_files.map(|v| v.to_string())),
            (
                "block_cache_capacity",
                lru_cache_size.map(|v| v.to_string()),
            ),
            ("block_size", block_size.map(|v| v.to_string())),
            (
                "block_restart_interval",
                block_restart_interval.map(|v| v.to_string()),
            ),
            ("target_file_size", max_file_size.map(|v| v.to_string())),
            (
                "bloom_bits_per_key",
                bloom_filter_bits.map(|v| v.to_string()),
            ),
        ];
        for (k, v) in sets {
            if let Some(v) = v {
                opts.set(k, &v).map_err(to_py)?;
            }
        }
        if let Some(d) = options {
            for (k, v) in d.iter() {
                let k: String = k.extract()?;
                if k == "preset" || k == "create_if_missing" || k == "error_if_exists" {
                    continue;
                }
                set_option(&mut opts, &k, &v)?;
            }
        }
        let display = name.to_string_lossy().into_owned();
        let db = py.detach(|| Db::open(&name, opts)).map_err(to_py)?;
        Ok(PyDb {
            h: Handle {
                shared: Arc::new(Shared {
                    db: RwLock::new(Some(Arc::new(db))),
                    closing: Mutex::new(Weak::new()),
                    name: display,
                }),
                cf: None,
                prefix: Vec::new(),
            },
        })
    }

    /// The database directory.
    #[getter]
    fn name(&self) -> String {
        self.h.shared.name.clone()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.h.shared.db.read().is_none()
    }

    /// Closes the database (idempotent); later calls raise `ClosedError`. Returns once the
    /// calls in flight on other threads have finished and the LOCK is released, also when
    /// another thread's `close()` is running.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let db = {
            let mut open = self.h.shared.db.write();
            let mut closing = self.h.shared.closing.lock();
            match open.take() {
                Some(db) => {
                    *closing = Arc::downgrade(&db);
                    Some(db)
                }
                None => closing.upgrade(),
            }
        };
        match db {
            Some(db) => py.detach(|| match db.close() {
                Ok(()) | Err(mezzanine::Error::Closed) => Ok(()),
                Err(e) => Err(e),
            }),
            None => Ok(()),
        }
        .map_err(to_py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// The value of `key`, or `default`.
    #[pyo3(signature = (key, default=None, *, verify_checksums=None, fill_cache=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Buf<'_>,
        default: Option<Bound<'py, PyAny>>,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ro = read_options(None, verify_checksums, fill_cache);
        Ok(match self.h.get(py, &key, &ro)? {
            Some(v) => Some(v.into_any()),
            None => default,
        })
    }

    /// Sets `key` to `value`.
    #[pyo3(signature = (key, value, sync=false))]
    fn put(&self, py: Python<'_>, key: Buf<'_>, value: Buf<'_>, sync: bool) -> PyResult<()> {
        self.h.put(py, &key, &value, sync)
    }

    /// Deletes `key`.
    #[pyo3(signature = (key, sync=false))]
    fn delete(&self, py: Python<'_>, key: Buf<'_>, sync: bool) -> PyResult<()> {
        self.h.delete(py, &key, sync)
    }

    /// A write batch (a context manager; with `transaction=True` nothing is written if
    /// the block raises).
    #[pyo3(signature = (transaction=false, sync=false))]
    fn write_batch(&self, transaction: bool, sync: bool) -> PyWriteBatch {
        PyWriteBatch::new(self.h.clone(), transaction, sync)
    }

    /// An optimistic transaction (a context manager that commits when the block ends,
    /// and rolls back if it raises); its reads see a snapshot taken now plus its own
    /// writes. A commit that conflicts raises `BusyError` and writes nothing.
    #[pyo3(signature = (sync=false, set_snapshot=true))]
    fn transaction(&self, sync: bool, set_snapshot: bool) -> PyResult<PyTransaction> {
        let db = self.h.shared.db()?;
        let opts = TxnOptions {
            write_options: WriteOptions { sync },
            set_snapshot,
            ..TxnOptions::default()
        };
        Ok(PyTransaction {
            h: self.h.clone(),
            txn: Mutex::new(Some(db.begin_transaction(&opts))),
        })
    }

    /// An iterator over a range (plyvel's arguments).
    #[pyo3(signature = (reverse=false, start=None, stop=None, include_start=true,
        include_stop=false, prefix=None, include_key=true, include_value=true,
        verify_checksums=None, fill_cache=None, snapshot=None))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        py: Python<'_>,
        reverse: bool,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        include_start: bool,
        include_stop: bool,
        prefix: Option<&Bound<'_, PyAny>>,
        include_key: bool,
        include_value: bool,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
        snapshot: Option<&Bound<'_, PySnapshot>>,
    ) -> PyResult<PyIterator> {
        let spec = IterSpec::from_args(
            reverse,
            (start, stop, include_start, include_stop, prefix),
            (include_key, include_value),
            (verify_checksums, fill_cache),
        )?;
        self.h.iterator(py, snapshot_of(snapshot)?, spec)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        self.h.iterator(py, None, IterSpec::default_spec())
    }

    /// A consistent read view.
    fn snapshot(&self) -> PyResult<PySnapshot> {
        PySnapshot::new(&self.h)
    }

    /// A raw cursor (plyvel's `raw_iterator`): `seek_to_first`, `seek_to_last`, `seek`,
    /// `next`, `prev`, `valid`, `key`, `value`, `item`.
    fn raw_iterator(&self, py: Python<'_>) -> PyResult<PyRawIterator> {
        self.h.raw_iterator(py, None)
    }

    /// A view of the keys starting with `prefix` (the prefix is stripped from keys).
    fn prefixed_db(slf: &Bound<'_, Self>, prefix: &[u8]) -> PyPrefixedDb {
        PyPrefixedDb {
            h: slf.get().h.prefixed(prefix),
            db: slf.clone().unbind(),
        }
    }

    /// Approximate bytes on disk of keys in `[start, stop)`.
    fn approximate_size(&self, py: Python<'_>, start: &[u8], stop: &[u8]) -> PyResult<u64> {
        let db = self.h.shared.db()?;
        py.detach(|| db.approximate_size(Some(start), Some(stop)))
            .map_err(to_py)
    }

    /// `approximate_size` of each `(start, stop)` pair.
    #[pyo3(signature = (*ranges))]
    fn approximate_sizes(
        &self,
        py: Python<'_>,
        ranges: Vec<(Vec<u8>, Vec<u8>)>,
    ) -> PyResult<Vec<u64>> {
        let db = self.h.shared.db()?;
        let rs: Vec<_> = ranges
            .iter()
            .map(|(s, e)| (Some(s.as_slice()), Some(e.as_slice())))
            .collect();
        py.detach(|| db.approximate_sizes(&rs)).map_err(to_py)
    }

    /// Compacts the tables overlapping `[start, stop]` (`None` = unbounded).
    #[pyo3(signature = (start=None, stop=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        stop: Option<&[u8]>,
    ) -> PyResult<()> {
        let db = self.h.shared.db()?;
        py.detach(|| db.compact_range(start, stop)).map_err(to_py)
    }

    /// Makes a consistent, openable copy of the database in the new directory `path` while
    /// writes go on (RocksDB's checkpoint): tables hard-linked, memtables and NVM data
    /// written as tables, every column family at one sequence number. Returns a dict:
    /// `last_sequence` (the copy holds every write up to it and none above), `linked`,
    /// `copied`, `materialised` (tables), `table_bytes`. Raises `InvalidArgumentError` if
    /// `path` exists.
    fn checkpoint<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let db = self.h.shared.db()?;
        let info = py.detach(|| db.checkpoint(&path)).map_err(to_py)?;
        let d = PyDict::new(py);
        d.set_item("last_sequence", info.last_sequence)?;
        d.set_item("linked", info.linked)?;
        d.set_item("copied", info.copied)?;
        d.set_item("materialised", info.materialised)?;
        d.set_item("table_bytes", info.table_bytes)?;
        Ok(d)
    }

    /// A named engine property (`leveldb.stats`, `leveldb.sstables`, `mezz.levels`, ...)
    /// as bytes, or `None`; the name is `bytes` (as plyvel's) or `str`.
    fn get_property<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let name = if let Ok(b) = name.cast::<PyBytes>() {
            String::from_utf8_lossy(b.as_bytes()).into_owned()
        } else if let Ok(s) = name.extract::<String>() {
            s
        } else {
            return Err(PyTypeError::new_err("property name must be bytes"));
        };
        Ok(self
            .h
            .shared
            .db()?
            .property(&name)
            .map(|v| PyBytes::new(py, v.as_bytes())))
    }

    /// Creates column family `name` with options given by name as keyword arguments
    /// (`write_buffer_size`, `block_size`, `bloom_bits_per_key`, `compression`, ...,
    /// recorded: later opens use them) and returns it. Raises `InvalidArgumentError` if it
    /// exists.
    #[pyo3(signature = (name, **options))]
    fn create_column_family(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyColumnFamily> {
        let opts = options_from_kwargs(options)?;
        let h = &slf.get().h;
        let db = h.shared.db()?;
        let cf = py
            .detach(|| db.create_column_family(name, &opts))
            .map_err(to_py)?;
        Ok(PyColumnFamily::new(slf, cf))
    }

    /// The column family `name` (`"default"` too); `KeyError` if there is none.
    fn column_family(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyColumnFamily> {
        let db = slf.get().h.shared.db()?;
        match db.column_family(name) {
            Some(cf) => Ok(PyColumnFamily::new(slf, cf)),
            None => Err(pyo3::exceptions::PyKeyError::new_err(name.to_string())),
        }
    }

    /// The names of the live column families, `"default"` first.
    fn column_families(&self) -> PyResult<Vec<String>> {
        Ok(self.h.shared.db()?.column_families())
    }

    /// Drops a column family (a `ColumnFamily` or its name): its data is deleted, and every
    /// view of it raises `InvalidArgumentError` from then on.
    fn drop_column_family(&self, py: Python<'_>, column_family: &Bound<'_, PyAny>) -> PyResult<()> {
        let db = self.h.shared.db()?;
        let cf = if let Ok(c) = column_family.cast::<PyColumnFamily>() {
            c.get().cf()?
        } else {
            let name: String = column_family.extract()?;
            db.column_family(&name)
                .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(name.clone()))?
        };
        py.detach(|| db.drop_column_family(&cf)).map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<mezzanine.DB name={:?}{}>",
            self.h.shared.name,
            if self.closed() { " closed" } else { "" }
        )
    }
}

/// The snapshot of an optional `snapshot=` argument.
fn snapshot_of(snapshot: Option<&Bound<'_, PySnapshot>>) -> PyResult<Option<Snapshot>> {
    snapshot.map(|s| s.get().snapshot()).transpose()
}

/// The range arguments of `iterator()`: start, stop, include_start, include_stop, prefix.
type RangeArgs<'a, 'py> = (
    Option<&'a Bound<'py, PyAny>>,
    Option<&'a Bound<'py, PyAny>>,
    bool,
    bool,
    Option<&'a Bound<'py, PyAny>>,
);

impl IterSpec {
    /// The spec of one `iterator()` call (every class's `iterator` takes plyvel's
    /// arguments): `reverse`, the range, (include_key, include_value) and
    /// (verify_checksums, fill_cache).
    fn from_args(
        reverse: bool,
        (start, stop, include_start, include_stop, prefix): RangeArgs<'_, '_>,
        (include_key, include_value): (bool, bool),
        (verify_checksums, fill_cache): (Option<bool>, Option<bool>),
    ) -> PyResult<IterSpec> {
        Ok(IterSpec {
            reverse,
            start: opt_bytes(start)?,
            stop: opt_bytes(stop)?,
            include_start,
            include_stop,
            prefix: opt_bytes(prefix)?,
            include_key,
            include_value,
            verify_checksums: verify_checksums.unwrap_or(false),
            fill_cache: fill_cache.unwrap_or(true),
        })
    }

    fn default_spec() -> IterSpec {
        IterSpec {
            reverse: false,
            start: None,
            stop: None,
            include_start: true,
            include_stop: false,
            prefix: None,
            include_key: true,
            include_value: true,
            verify_checksums: false,
            fill_cache: true,
        }
    }
}

// ---------------------------------------------------------------------------------------
// PrefixedDB
// ---------------------------------------------------------------------------------------

/// A view of the keys of a database that start with a prefix (plyvel's `PrefixedDB`).
#[pyclass(frozen, module = "mezzanine", name = "PrefixedDB")]
#[derive(Debug)]
struct PyPrefixedDb {
    h: Handle,
    /// The `DB` object it was made from (plyvel's `PrefixedDB.db` is that object).
    db: Py<PyDb>,
}

#[pymethods]
impl PyPrefixedDb {
    /// The prefix (including the prefixes of enclosing views).
    #[getter]
    fn prefix<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.h.prefix)
    }

    /// The underlying database (the `DB` object this view was made from).
    #[getter]
    fn db(&self, py: Python<'_>) -> Py<PyDb> {
        self.db.clone_ref(py)
    }

    #[pyo3(signature = (key, default=None, *, verify_checksums=None, fill_cache=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Buf<'_>,
        default: Option<Bound<'py, PyAny>>,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ro = read_options(None, verify_checksums, fill_cache);
        Ok(match self.h.get(py, &key, &ro)? {
            Some(v) => Some(v.into_any()),
            None => default,
        })
    }

    #[pyo3(signature = (key, value, sync=false))]
    fn put(&self, py: Python<'_>, key: Buf<'_>, value: Buf<'_>, sync: bool) -> PyResult<()> {
        self.h.put(py, &key, &value, sync)
    }

    #[pyo3(signature = (key, sync=false))]
    fn delete(&self, py: Python<'_>, key: Buf<'_>, sync: bool) -> PyResult<()> {
        self.h.delete(py, &key, sync)
    }

    #[pyo3(signature = (transaction=false, sync=false))]
    fn write_batch(&self, transaction: bool, sync: bool) -> PyWriteBatch {
        PyWriteBatch::new(self.h.clone(), transaction, sync)
    }

    #[pyo3(signature = (reverse=false, start=None, stop=None, include_start=true,
        include_stop=false, prefix=None, include_key=true, include_value=true,
        verify_checksums=None, fill_cache=None, snapshot=None))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        py: Python<'_>,
        reverse: bool,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        include_start: bool,
        include_stop: bool,
        prefix: Option<&Bound<'_, PyAny>>,
        include_key: bool,
        include_value: bool,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
        snapshot: Option<&Bound<'_, PySnapshot>>,
    ) -> PyResult<PyIterator> {
        let spec = IterSpec::from_args(
            reverse,
            (start, stop, include_start, include_stop, prefix),
            (include_key, include_value),
            (verify_checksums, fill_cache),
        )?;
        self.h.iterator(py, snapshot_of(snapshot)?, spec)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        self.h.iterator(py, None, IterSpec::default_spec())
    }

    fn snapshot(&self) -> PyResult<PySnapshot> {
        PySnapshot::new(&self.h)
    }

    /// A raw cursor (plyvel's `raw_iterator`): `seek_to_first`, `seek_to_last`, `seek`,
    /// `next`, `prev`, `valid`, `key`, `value`, `item`.
    fn raw_iterator(&self, py: Python<'_>) -> PyResult<PyRawIterator> {
        self.h.raw_iterator(py, None)
    }

    fn prefixed_db(&self, py: Python<'_>, prefix: &[u8]) -> PyPrefixedDb {
        PyPrefixedDb {
            h: self.h.prefixed(prefix),
            db: self.db.clone_ref(py),
        }
    }
}

// ---------------------------------------------------------------------------------------
// ColumnFamily
// ---------------------------------------------------------------------------------------

/// One column family of a `DB` (`DB.column_family(name)`, `DB.create_column_family(name)`):
/// the `DB` methods over the family's own key space. A write batch made from it writes to
/// the family; a snapshot of the `DB` reads every family at the same point.
#[pyclass(frozen, module = "mezzanine", name = "ColumnFamily")]
#[derive(Debug)]
struct PyColumnFamily {
    h: Handle,
    db: Py<PyDb>,
}

impl PyColumnFamily {
    fn new(db: &Bound<'_, PyDb>, cf: ColumnFamily) -> PyColumnFamily {
        PyColumnFamily {
            h: Handle {
                shared: Arc::clone(&db.get().h.shared),
                cf: Some(cf),
                prefix: Vec::new(),
            },
            db: db.clone().unbind(),
        }
    }

    fn cf(&self) -> PyResult<ColumnFamily> {
        self.h
            .cf
            .clone()
            .ok_or_else(|| invalid_err("not a column family"))
    }
}

#[pymethods]
impl PyColumnFamily {
    /// The family's name.
    #[getter]
    fn name(&self) -> PyResult<String> {
        Ok(self.cf()?.name().to_string())
    }

    /// The family's id (0: the default family).
    #[getter]
    fn id(&self) -> PyResult<u32> {
        Ok(self.cf()?.id())
    }

    /// The `DB` object it was taken from.
    #[getter]
    fn db(&self, py: Python<'_>) -> Py<PyDb> {
        self.db.clone_ref(py)
    }

    #[pyo3(signature = (key, default=None, *, verify_checksums=None, fill_cache=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Buf<'_>,
        default: Option<Bound<'py, PyAny>>,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ro = read_options(None, verify_checksums, fill_cache);
        Ok(match self.h.get(py, &key, &ro)? {
            Some(v) => Some(v.into_any()),
            None => default,
        })
    }

    #[pyo3(signature = (key, value, sync=false))]
    fn put(&self, py: Python<'_>, key: Buf<'_>, value: Buf<'_>, sync: bool) -> PyResult<()> {
        self.h.put(py, &key, &value, sync)
    }

    #[pyo3(signature = (key, sync=false))]
    fn delete(&self, py: Python<'_>, key: Buf<'_>, sync: bool) -> PyResult<()> {
        self.h.delete(py, &key, sync)
    }

    /// A write batch whose puts and deletes go to this family (unless they name another).
    #[pyo3(signature = (transaction=false, sync=false))]
    fn write_batch(&self, transaction: bool, sync: bool) -> PyWriteBatch {
        PyWriteBatch::new(self.h.clone(), transaction, sync)
    }

    #[pyo3(signature = (reverse=false, start=None, stop=None, include_start=true,
        include_stop=false, prefix=None, include_key=true, include_value=true,
        verify_checksums=None, fill_cache=None, snapshot=None))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        py: Python<'_>,
        reverse: bool,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        include_start: bool,
        include_stop: bool,
        prefix: Option<&Bound<'_, PyAny>>,
        include_key: bool,
        include_value: bool,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
        snapshot: Option<&Bound<'_, PySnapshot>>,
    ) -> PyResult<PyIterator> {
        let spec = IterSpec::from_args(
            reverse,
            (start, stop, include_start, include_stop, prefix),
            (include_key, include_value),
            (verify_checksums, fill_cache),
        )?;
        self.h.iterator(py, snapshot_of(snapshot)?, spec)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        self.h.iterator(py, None, IterSpec::default_spec())
    }

    /// A read view of this family (a snapshot of the whole database, read here).
    fn snapshot(&self) -> PyResult<PySnapshot> {
        PySnapshot::new(&self.h)
    }

    /// A raw cursor over the family (plyvel's `raw_iterator`).
    fn raw_iterator(&self, py: Python<'_>) -> PyResult<PyRawIterator> {
        self.h.raw_iterator(py, None)
    }

    /// A view of the family's keys starting with `prefix`.
    fn prefixed_db(&self, py: Python<'_>, prefix: &[u8]) -> PyPrefixedDb {
        PyPrefixedDb {
            h: self.h.prefixed(prefix),
            db: self.db.clone_ref(py),
        }
    }

    /// Compacts the family's tables overlapping `[start, stop]` (`None` = unbounded).
    #[pyo3(signature = (start=None, stop=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        stop: Option<&[u8]>,
    ) -> PyResult<()> {
        let db = self.h.shared.db()?;
        let cf = self.cf()?;
        py.detach(|| db.compact_range_cf(&cf, start, stop))
            .map_err(to_py)
    }

    /// A named engine property of the family, as `DB.get_property`.
    fn get_property<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let name = if let Ok(b) = name.cast::<PyBytes>() {
            String::from_utf8_lossy(b.as_bytes()).into_owned()
        } else if let Ok(s) = name.extract::<String>() {
            s
        } else {
            return Err(PyTypeError::new_err("property name must be bytes"));
        };
        let cf = self.cf()?;
        Ok(self
            .h
            .shared
            .db()?
            .property_cf(&cf, &name)
            .map(|v| PyBytes::new(py, v.as_bytes())))
    }

    fn __repr__(&self) -> String {
        format!(
            "<mezzanine.ColumnFamily {:?} of {:?}>",
            self.h.cf.as_ref().map_or("", |c| c.name()),
            self.h.shared.name
        )
    }
}

// ---------------------------------------------------------------------------------------
// WriteBatch
// ---------------------------------------------------------------------------------------

/// Buffered puts and deletes applied atomically by `write()` (plyvel's `WriteBatch`).
#[pyclass(frozen, module = "mezzanine", name = "WriteBatch")]
#[derive(Debug)]
struct PyWriteBatch {
    h: Handle,
    batch: Mutex<WriteBatch>,
    transaction: bool,
    sync: bool,
}

impl PyWriteBatch {
    /// The handle a put or delete goes through: the batch's own, or `cf`'s (which must
    /// belong to the same database).
    fn target(&self, cf: Option<&Bound<'_, PyColumnFamily>>) -> PyResult<Handle> {
        match cf {
            None => Ok(self.h.clone()),
            Some(cf) => {
                let h = &cf.get().h;
                if !Arc::ptr_eq(&h.shared, &self.h.shared) {
                    return Err(invalid_err("the column family belongs to another database"));
                }
                Ok(h.clone())
            }
        }
    }

    fn new(h: Handle, transaction: bool, sync: bool) -> PyWriteBatch {
        PyWriteBatch {
            h,
            batch: Mutex::new(WriteBatch::new()),
            transaction,
            sync,
        }
    }
}

#[pymethods]
impl PyWriteBatch {
    /// Buffers a put (raises `ClosedError` once the database is closed, as plyvel does).
    /// `column_family` (a `ColumnFamily` of the same database) puts the key in that family
    /// instead of the batch's own, so one batch can span families, applied atomically.
    #[pyo3(signature = (key, value, column_family=None))]
    fn put(
        &self,
        key: Buf<'_>,
        value: Buf<'_>,
        column_family: Option<&Bound<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        self.h.shared.db()?;
        let h = self.target(column_family)?;
        h.batch_put(&mut self.batch.lock(), &key, &value);
        Ok(())
    }

    /// Buffers a delete (in `column_family` if given, as `put`).
    #[pyo3(signature = (key, column_family=None))]
    fn delete(
        &self,
        key: Buf<'_>,
        column_family: Option<&Bound<'_, PyColumnFamily>>,
    ) -> PyResult<()> {
        self.h.shared.db()?;
        let h = self.target(column_family)?;
        h.batch_delete(&mut self.batch.lock(), &key);
        Ok(())
    }

    /// Appends every update buffered in `source` (another batch) to this one.
    fn append(&self, source: &Bound<'_, PyWriteBatch>) {
        let other = source.get();
        if std::ptr::eq(other, self) {
            let copy = self.batch.lock().clone();
            self.batch.lock().append(&copy);
        } else {
            let theirs = other.batch.lock().clone();
            self.batch.lock().append(&theirs);
        }
    }

    /// The size of the batch's encoded form in bytes (LevelDB's `ApproximateSize`).
    fn approximate_size(&self) -> usize {
        self.batch.lock().approximate_size()
    }

    /// Discards every buffered update.
    fn clear(&self) {
        *self.batch.lock() = WriteBatch::new();
    }

    /// Applies the buffered updates atomically and empties the batch.
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.h.shared.db()?;
        let batch = std::mem::take(&mut *self.batch.lock());
        let wo = WriteOptions { sync: self.sync };
        py.detach(|| db.write(&wo, batch)).map_err(to_py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Writes the batch, unless it is a transaction and the block raised.
    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let raised = exc_type.is_some_and(|t| !t.is_none());
        if self.transaction && raised {
            self.clear();
        } else {
            self.write(py)?;
        }
        Ok(false)
    }

    fn __len__(&self) -> usize {
        self.batch.lock().len()
    }
}

// ---------------------------------------------------------------------------------------
// Transaction
// ---------------------------------------------------------------------------------------

/// An optimistic transaction (`DB.transaction()`): reads see its snapshot plus its own
/// writes; `get_for_update` and every write mark the key, and `commit` raises `BusyError`
/// (writing nothing) if another writer wrote a marked key after the snapshot. `None` once
/// committed.
#[pyclass(frozen, module = "mezzanine", name = "Transaction")]
#[derive(Debug)]
struct PyTransaction {
    h: Handle,
    txn: Mutex<Option<Transaction>>,
}

impl PyTransaction {
    /// Runs `f` on the open transaction; `InvalidArgumentError` once it is finished.
    fn with<T>(&self, f: impl FnOnce(&mut Transaction) -> mezzanine::Result<T>) -> PyResult<T> {
        let mut g = self.txn.lock();
        let t = g
            .as_mut()
            .ok_or_else(|| invalid_err("the transaction is finished (committed)"))?;
        f(t).map_err(to_py)
    }
}

#[pymethods]
impl PyTransaction {
    /// The value of `key` as the transaction sees it, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Buf<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = self.h.key(&key);
        let v = py.detach(|| self.with(|t| t.get(&k)))?;
        Ok(match v {
            Some(v) => Some(PyBytes::new(py, &v).into_any()),
            None => default,
        })
    }

    /// As `get`, and marks `key`: the commit fails if another writer writes it after the
    /// transaction's snapshot.
    #[pyo3(signature = (key, default=None))]
    fn get_for_update<'py>(
        &self,
        py: Python<'py>,
        key: Buf<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = self.h.key(&key);
        let v = py.detach(|| self.with(|t| t.get_for_update(&k)))?;
        Ok(match v {
            Some(v) => Some(PyBytes::new(py, &v).into_any()),
            None => default,
        })
    }

    /// Sets `key` to `value` in the transaction.
    fn put(&self, key: Buf<'_>, value: Buf<'_>) -> PyResult<()> {
        let k = self.h.key(&key);
        self.with(|t| t.put(&k, &value))
    }

    /// Deletes `key` in the transaction.
    fn delete(&self, key: Buf<'_>) -> PyResult<()> {
        let k = self.h.key(&key);
        self.with(|t| t.delete(&k))
    }

    /// Remembers the transaction's writes and marks, for `rollback_to_savepoint`.
    fn set_savepoint(&self) -> PyResult<()> {
        self.with(|t| {
            t.set_savepoint();
            Ok(())
        })
    }

    /// Undoes what the transaction did since its newest savepoint.
    fn rollback_to_savepoint(&self) -> PyResult<()> {
        self.with(Transaction::rollback_to_savepoint)
    }

    /// Discards every write and mark (the transaction can be used again).
    fn rollback(&self) -> PyResult<()> {
        self.with(|t| {
            t.rollback();
            Ok(())
        })
    }

    /// Validates and writes the transaction atomically; raises `BusyError` on a conflict.
    /// The transaction is finished either way.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let t = self
            .txn
            .lock()
            .take()
            .ok_or_else(|| invalid_err("the transaction is finished (committed)"))?;
        py.detach(|| t.commit()).map_err(to_py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits, unless the block raised: then the transaction is dropped unwritten.
    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.txn.lock().take();
        } else if self.txn.lock().is_some() {
            self.commit(py)?;
        }
        Ok(false)
    }
}

// ---------------------------------------------------------------------------------------
// Snapshot
// ---------------------------------------------------------------------------------------

/// A consistent read view (plyvel's `Snapshot`); a context manager that releases it.
#[pyclass(frozen, module = "mezzanine", name = "Snapshot")]
#[derive(Debug)]
struct PySnapshot {
    h: Handle,
    snap: Mutex<Option<Snapshot>>,
}

impl PySnapshot {
    fn new(h: &Handle) -> PyResult<PySnapshot> {
        let db = h.shared.db()?;
        Ok(PySnapshot {
            h: h.clone(),
            snap: Mutex::new(Some(db.snapshot())),
        })
    }

    fn snapshot(&self) -> PyResult<Snapshot> {
        self.snap
            .lock()
            .clone()
            .ok_or_else(|| closed_err("snapshot is released"))
    }
}

#[pymethods]
impl PySnapshot {
    /// A raw cursor over the snapshot (plyvel's `raw_iterator`).
    fn raw_iterator(&self, py: Python<'_>) -> PyResult<PyRawIterator> {
        self.h.raw_iterator(py, Some(self.snapshot()?))
    }

    /// The value of `key` as of the snapshot, or `default`.
    #[pyo3(signature = (key, default=None, *, verify_checksums=None, fill_cache=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Buf<'_>,
        default: Option<Bound<'py, PyAny>>,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ro = read_options(Some(self.snapshot()?), verify_checksums, fill_cache);
        Ok(match self.h.get(py, &key, &ro)? {
            Some(v) => Some(v.into_any()),
            None => default,
        })
    }

    /// An iterator as of the snapshot (the arguments of `DB.iterator`).
    #[pyo3(signature = (reverse=false, start=None, stop=None, include_start=true,
        include_stop=false, prefix=None, include_key=true, include_value=true,
        verify_checksums=None, fill_cache=None))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        py: Python<'_>,
        reverse: bool,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        include_start: bool,
        include_stop: bool,
        prefix: Option<&Bound<'_, PyAny>>,
        include_key: bool,
        include_value: bool,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
    ) -> PyResult<PyIterator> {
        let spec = IterSpec::from_args(
            reverse,
            (start, stop, include_start, include_stop, prefix),
            (include_key, include_value),
            (verify_checksums, fill_cache),
        )?;
        self.h.iterator(py, Some(self.snapshot()?), spec)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        self.h
            .iterator(py, Some(self.snapshot()?), IterSpec::default_spec())
    }

    /// Releases the snapshot (idempotent).
    fn close(&self) {
        self.snap.lock().take();
    }

    /// Same as `close()`.
    fn release(&self) {
        self.close();
    }

    /// Whether the snapshot was released.
    #[getter]
    fn closed(&self) -> bool {
        self.snap.lock().is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

// ---------------------------------------------------------------------------------------
// Iterator
// ---------------------------------------------------------------------------------------

/// Where the iterator sits between entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gap {
    /// Before the first entry of the range.
    Start,
    /// After the last entry.
    End,
    /// Just before the cursor's entry (the cursor is valid).
    Before,
}

#[derive(Debug)]
struct IterState {
    cursor: DbIterator,
    gap: Gap,
}

type Entry = (Vec<u8>, Vec<u8>);

impl IterState {
    /// The current entry; `Closed` (or the cursor's error) when a close began since
    /// `valid()` (`DbIterator::current`).
    fn entry(&self) -> mezzanine::Result<Entry> {
        match self.cursor.current() {
            Some((k, v)) => Ok((k.to_vec(), v.to_vec())),
            None => Err(self
                .cursor
                .status()
                .err()
                .unwrap_or(mezzanine::Error::Closed)),
        }
    }

    /// The entry after the gap (moving the gap past it).
    fn forward(&mut self) -> mezzanine::Result<Option<Entry>> {
        match self.gap {
            // No step, but a closed database still raises (`Closed`).
            Gap::End => return self.cursor.status().map(|()| None),
            Gap::Start => self.cursor.seek_to_first(),
            Gap::Before => {}
        }
        if !self.cursor.valid() {
            self.gap = Gap::End;
            self.cursor.status()?;
            return Ok(None);
        }
        let e = self.entry()?;
        self.cursor.next();
        self.gap = if self.cursor.valid() {
            Gap::Before
        } else {
            Gap::End
        };
        self.cursor.status()?;
        Ok(Some(e))
    }

    /// The entry before the gap (moving the gap before it).
    fn backward(&mut self) -> mezzanine::Result<Option<Entry>> {
        match self.gap {
            Gap::Start => return self.cursor.status().map(|()| None),
            Gap::End => self.cursor.seek_to_last(),
            Gap::Before => self.cursor.prev(),
        }
        if !self.cursor.valid() {
            self.gap = Gap::Start;
            self.cursor.status()?;
            return Ok(None);
        }
        self.gap = Gap::Before;
        Ok(Some(self.entry()?))
    }
}

/// A cursor over a range (plyvel's `Iterator`): `next()` (the `for` protocol) and
/// `prev()`, `seek_to_start()`, `seek_to_stop()`, `seek(target)`; a reverse iterator
/// swaps the directions.
#[pyclass(frozen, module = "mezzanine", name = "Iterator")]
#[derive(Debug)]
struct PyIterator {
    state: Mutex<Option<IterState>>,
    reverse: bool,
    include_key: bool,
    include_value: bool,
    /// Bytes of view prefix stripped from returned keys.
    strip: usize,
    prefix: Vec<u8>,
}

impl PyIterator {
    fn step(&self, py: Python<'_>, forward: bool) -> PyResult<Option<Py<PyAny>>> {
        let r = py.detach(|| {
            let mut g = self.state.lock();
            let Some(st) = g.as_mut() else {
                return Err(mezzanine::Error::Closed);
            };
            if forward != self.reverse {
                st.forward()
            } else {
                st.backward()
            }
        });
        let Some((k, v)) = r.map_err(to_py)? else {
            return Ok(None);
        };
        let key = k.get(self.strip..).unwrap_or_default();
        Ok(Some(match (self.include_key, self.include_value) {
            (true, true) => (PyBytes::new(py, key), PyBytes::new(py, &v))
                .into_pyobject(py)?
                .into_any()
                .unbind(),
            (true, false) => PyBytes::new(py, key).into_any().unbind(),
            (false, true) => PyBytes::new(py, &v).into_any().unbind(),
            // plyvel yields None for each entry.
            (false, false) => py.None(),
        }))
    }

    /// Moves the gap with `f`; raises `ClosedError` if the database is closed (as `next()`
    /// and `prev()` do).
    fn set_gap(&self, f: impl FnOnce(&mut IterState) + Send) -> PyResult<()> {
        let mut g = self.state.lock();
        let st = g.as_mut().ok_or_else(|| closed_err("iterator is closed"))?;
        f(st);
        match st.cursor.status() {
            Err(e @ mezzanine::Error::Closed) => Err(to_py(e)),
            _ => Ok(()),
        }
    }
}

#[pymethods]
impl PyIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.step(py, true)
    }

    /// Moves one step back and returns that entry (the one the last `next()` returned);
    /// raises `StopIteration` at the start.
    fn prev(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.step(py, false)?
            .ok_or_else(|| pyo3::exceptions::PyStopIteration::new_err(()))
    }

    /// Moves before the range's first key (in key order, as plyvel: a forward iterator's
    /// `next()` then returns the first entry, a reverse iterator's raises `StopIteration`).
    fn seek_to_start(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.set_gap(|st| st.gap = Gap::Start))
    }

    /// Moves past the range's last key (in key order: a reverse iterator's `next()` then
    /// returns the last entry, a forward iterator's raises `StopIteration`).
    fn seek_to_stop(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.set_gap(|st| st.gap = Gap::End))
    }

    /// Moves just before the first key >= `target` (a reverse iterator's `next()` then
    /// returns the last key < `target`).
    fn seek(&self, py: Python<'_>, target: &[u8]) -> PyResult<()> {
        let t = with_prefix(&self.prefix, target);
        py.detach(|| {
            self.set_gap(|st| {
                st.cursor.seek(&t);
                st.gap = if st.cursor.valid() {
                    Gap::Before
                } else {
                    Gap::End
                };
            })
        })
    }

    /// Releases the iterator (idempotent).
    fn close(&self) {
        self.state.lock().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

/// A raw cursor (plyvel's `RawIterator`): positioned on an entry or not (`valid()`); `key()`,
/// `value()`, `item()`, `next()` and `prev()` raise `IteratorInvalidError` when it is not,
/// and every method raises `ClosedError` once it (or its database) is closed.
#[pyclass(frozen, module = "mezzanine", name = "RawIterator")]
#[derive(Debug)]
struct PyRawIterator {
    cursor: Mutex<Option<DbIterator>>,
    /// The view's prefix: added to seek targets, stripped from keys.
    prefix: Vec<u8>,
}

impl PyRawIterator {
    /// Runs `f` on the open cursor; `ClosedError` when the iterator (or its database) is
    /// closed.
    fn with<T>(&self, f: impl FnOnce(&mut DbIterator) -> T) -> PyResult<T> {
        let mut g = self.cursor.lock();
        let c = g.as_mut().ok_or_else(|| closed_err("iterator is closed"))?;
        let out = f(c);
        match c.status() {
            Err(e) => Err(to_py(e)),
            Ok(()) => Ok(out),
        }
    }

    /// Runs `f` on the cursor if it is on an entry, else `IteratorInvalidError`.
    fn on_entry<T>(&self, f: impl FnOnce(&mut DbIterator) -> T) -> PyResult<T> {
        self.with(|c| c.valid().then(|| f(c)))?
            .ok_or_else(|| IteratorInvalidError::new_err("iterator is not on an entry"))
    }
}

#[pymethods]
impl PyRawIterator {
    /// Whether the cursor is on an entry.
    fn valid(&self) -> PyResult<bool> {
        self.with(|c| c.valid())
    }

    fn seek_to_first(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.with(DbIterator::seek_to_first))
    }

    fn seek_to_last(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.with(DbIterator::seek_to_last))
    }

    /// Moves to the first key >= `target`.
    fn seek(&self, py: Python<'_>, target: Buf<'_>) -> PyResult<()> {
        let t = with_prefix(&self.prefix, &target);
        py.detach(|| self.with(|c| c.seek(&t)))
    }

    fn next(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.on_entry(DbIterator::next))
    }

    fn prev(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.on_entry(DbIterator::prev))
    }

    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let n = self.prefix.len();
        let k = self.on_entry(|c| c.key().get(n..).unwrap_or_default().to_vec())?;
        Ok(PyBytes::new(py, &k))
    }

    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.on_entry(|c| c.value().to_vec())?;
        Ok(PyBytes::new(py, &v))
    }

    /// `(key, value)` of the entry.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.prefix.len();
        let (k, v) = self.on_entry(|c| {
            (
                c.key().get(n..).unwrap_or_default().to_vec(),
                c.value().to_vec(),
            )
        })?;
        PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])
    }

    /// Releases the cursor (idempotent).
    fn close(&self) {
        self.cursor.lock().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

/// Incremental backups of databases into one directory (python-rocksdb's `BackupEngine`,
/// the engine's `BackupEngine`): tables are copied once into `shared/` and shared between
/// backups, every file's crc32c is recorded and checked on verify and restore.
#[pyclass(frozen, module = "mezzanine", name = "BackupEngine")]
#[derive(Debug)]
struct PyBackupEngine {
    engine: Mutex<mezzanine::BackupEngine>,
}

fn backup_info_dict<'py>(
    py: Python<'py>,
    info: &mezzanine::BackupInfo,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("backup_id", info.id)?;
    d.set_item("timestamp", info.timestamp)?;
    d.set_item("sequence", info.sequence)?;
    d.set_item("size", info.size)?;
    d.set_item("num_files", info.num_files)?;
    Ok(d)
}

#[pymethods]
impl PyBackupEngine {
    /// Opens (or creates) the backup directory `path`.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let engine = py
            .detach(|| mezzanine::BackupEngine::open(&path))
            .map_err(to_py)?;
        Ok(Self {
            engine: Mutex::new(engine),
        })
    }

    /// Backs up `db` (an open `DB`, with all its column families) while writes go on;
    /// returns the new backup's info (`backup_id`, `timestamp`, `sequence`, `size`,
    /// `num_files`).
    fn create_backup<'py>(
        &self,
        py: Python<'py>,
        db: &Bound<'py, PyDb>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let db = db.get().h.shared.db()?;
        let created = py
            .detach(|| self.engine.lock().create_backup(&db))
            .map_err(to_py)?;
        backup_info_dict(py, &created.info)
    }

    /// The backups, oldest first, each a dict as `create_backup` returns.
    fn get_backup_info<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let list = py.detach(|| self.engine.lock().list()).map_err(to_py)?;
        list.iter().map(|i| backup_info_dict(py, i)).collect()
    }

    /// Re-reads every file of backup `backup_id` and checks its size and crc32c; raises
    /// `CorruptionError` if one is missing or does not match.
    fn verify_backup(&self, py: Python<'_>, backup_id: u64) -> PyResult<()> {
        py.detach(|| self.engine.lock().verify(backup_id).map(|_| ()))
            .map_err(to_py)
    }

    /// Restores backup `backup_id` into `db_dir`, which must not hold a database; every
    /// file's checksum is checked as it is copied.
    fn restore_backup(&self, py: Python<'_>, backup_id: u64, db_dir: PathBuf) -> PyResult<()> {
        py.detach(|| self.engine.lock().restore(backup_id, &db_dir).map(|_| ()))
            .map_err(to_py)
    }

    /// Restores the newest backup into `db_dir` (see `restore_backup`).
    fn restore_latest_backup(&self, py: Python<'_>, db_dir: PathBuf) -> PyResult<()> {
        py.detach(|| {
            let engine = self.engine.lock();
            let newest = engine.list()?.last().map(|i| i.id);
            match newest {
                Some(id) => engine.restore(id, &db_dir).map(|_| Ok(())),
                None => Ok(Err(NotFoundError::new_err(format!(
                    "no backup in {}",
                    engine.dir().display()
                )))),
            }
        })
        .map_err(to_py)?
    }

    /// Deletes backup `backup_id` (and the shared tables no other backup needs).
    fn delete_backup(&self, py: Python<'_>, backup_id: u64) -> PyResult<()> {
        py.detach(|| self.engine.lock().delete(backup_id))
            .map_err(to_py)
    }

    /// Deletes every backup but the newest `num_backups_to_keep`; returns the deleted ids.
    fn purge_old_backups(&self, py: Python<'_>, num_backups_to_keep: usize) -> PyResult<Vec<u64>> {
        py.detach(|| self.engine.lock().purge_old(num_backups_to_keep))
            .map_err(to_py)
    }
}

/// Deletes the database in `name` (plyvel's `destroy_db`, LevelDB's `DestroyDB`): its files,
/// its NVM pool (with `nvm_dir=`), then the directory if nothing else is left in it.
#[pyfunction]
#[pyo3(signature = (name, **kwargs))]
fn destroy_db(py: Python<'_>, name: PathBuf, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let opts = options_from_kwargs(kwargs)?;
    py.detach(|| mezzanine::destroy_db(&name, &opts))
        .map_err(to_py)
}

/// plyvel's `repair_db` (LevelDB's `RepairDB`, the engine's `repair_db`): rebuilds the
/// database in `name` from what still reads, keeping what it cannot use in `name/lost/`.
/// Keyword arguments are options by name, as for `DB` (`preset`, `nvm_dir`, ...; they must
/// name the database's NVM directory if it has one). Returns nothing, as plyvel's does;
/// what was kept and lost is written to the database's `LOG`. Raises only if the repair
/// itself fails (a missing directory, an open database, an I/O error).
#[pyfunction]
#[pyo3(signature = (name, **kwargs))]
fn repair_db(py: Python<'_>, name: PathBuf, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let opts = options_from_kwargs(kwargs)?;
    py.detach(|| mezzanine::repair_db(&name, &opts).map(|_| ()))
        .map_err(to_py)
}

/// The names of the column families of the closed database in `name`, `"default"` first
/// (keyword arguments: options by name, as for `DB`).
#[pyfunction]
#[pyo3(signature = (name, **kwargs))]
fn list_column_families(
    py: Python<'_>,
    name: PathBuf,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    let opts = options_from_kwargs(kwargs)?;
    py.detach(|| Db::list_column_families(&name, &opts))
        .map_err(to_py)
}

/// The native module `mezzanine._mezzanine` (re-exported by the `mezzanine` package).
#[pymodule]
fn _mezzanine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyDb>()?;
    m.add_class::<PyPrefixedDb>()?;
    m.add_class::<PyColumnFamily>()?;
    m.add_class::<PyWriteBatch>()?;
    m.add_class::<PyTransaction>()?;
    m.add_class::<PySnapshot>()?;
    m.add_class::<PyIterator>()?;
    m.add_class::<PyRawIterator>()?;
    m.add_class::<PyBackupEngine>()?;
    m.add(
        "IteratorInvalidError",
        py.get_type::<IteratorInvalidError>(),
    )?;
    m.add_function(wrap_pyfunction!(destroy_db, m)?)?;
    m.add_function(wrap_pyfunction!(repair_db, m)?)?;
    m.add_function(wrap_pyfunction!(list_column_families, m)?)?;
    // The LevelDB API version the package implements (as the C API's
    // `leveldb_major_version` / `leveldb_minor_version`).
    m.add("__leveldb_version__", "1.23")?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("IOError", py.get_type::<IOError>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    let base = py.get_type::<Error>();
    let invalid = exception_type(
        py,
        "InvalidArgumentError",
        "A bad option or argument (also a ValueError, as plyvel raises).",
        &[base.clone(), py.get_type::<PyValueError>()],
    )?;
    m.add("InvalidArgumentError", &invalid)?;
    let _ = INVALID_ARGUMENT_ERROR.set(py, invalid.unbind());
    let closed = exception_type(
        py,
        "ClosedError",
        "The database (or snapshot, or iterator) is closed (also a RuntimeError, as plyvel \
         raises).",
        &[base, py.get_type::<PyRuntimeError>()],
    )?;
    m.add("ClosedError", &closed)?;
    let _ = CLOSED_ERROR.set(py, closed.unbind());
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    m.add("BackgroundError", py.get_type::<BackgroundError>())?;
    m.add("BusyError", py.get_type::<BusyError>())?;
    Ok(())
}
