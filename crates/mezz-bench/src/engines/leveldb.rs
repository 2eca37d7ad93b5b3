//! The LevelDB adapter (cargo feature `leveldb`): a hand-written `extern "C"` binding of
//! the part of `leveldb/c.h` the harness needs, linked against the system `libleveldb`
//! (Debian's `libleveldb-dev`, 1.23).
//!
//! This is the only module of the crate with `unsafe` code: every call into the C library
//! is an `unsafe` block with a `// SAFETY:` comment. The invariants it relies on: every
//! pointer the library returns is checked for null before use; each object created with a
//! `*_create` / `leveldb_open` call is destroyed exactly once, by the Rust value that owns
//! it (`Drop`), after everything that refers to it (iterators before the database, the
//! database before its options, cache and filter policy); strings the library allocates
//! (`errptr`, `leveldb_get` values, property values) are copied and released with
//! `leveldb_free`; keys and values passed in are borrowed slices the library copies before
//! returning.
//!
//! Configuration (listed by `config_json`): `write_buffer_size`, an LRU block cache of
//! `block_cache_bytes`, a bloom filter of `bloom_bits` bits per key, **no compression** (to
//! match Mezzanine's default; Snappy, LevelDB's only codec, with `EngineSetup::compress`),
//! `create_if_missing`; `sync` writes use `leveldb_writeoptions_set_sync`.
//! The `leveldb-nvm` variant opens the whole database (WAL, SSTs, MANIFEST) in a directory
//! under the NVM path, recorded in the marker file that is then the only file in `dir`.
//!
//! Counters: user bytes (key + value lengths) are counted here; storage bytes are the sum of
//! the `Write(MB)` column of the `leveldb.stats` property (flushes and compactions, whole
//! MiB as LevelDB prints them) plus an estimate of the WAL bytes (each write's batch: 12
//! header bytes, a tag, two varint lengths, key and value, plus the 7-byte log record
//! header; block padding is not counted). LevelDB reports no stall time: `stall_micros()`
//! is `None`. Thread-safety: LevelDB's `DB` is safe to use from several threads at once
//! (its documented contract); the lock here only orders `close` after every other call.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::engine::{Direction, EngineCounters, EngineFactory, KvEngine, ScanResult};
use crate::engines::{
    EngineSetup, NVM_MARKER, dir_holds_only, is_lsm_file_name, nvm_location, read_nvm_marker,
    remove_empty_dir, remove_files,
};
use crate::error::{BenchError, Result};

/// The part of `leveldb/c.h` used here. Opaque types are zero-sized `repr(C)` structs
/// behind raw pointers; `size_t` is `usize` and `uint8_t` is `u8` on the supported
/// (64-bit Linux) targets.
mod ffi {
    use std::ffi::{c_char, c_int, c_void};

    macro_rules! opaque {
        ($($name:ident),*) => {$(
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*};
    }
    opaque!(
        leveldb_t,
        leveldb_options_t,
        leveldb_readoptions_t,
        leveldb_writeoptions_t,
        leveldb_iterator_t,
        leveldb_cache_t,
        leveldb_filterpolicy_t
    );

    #[link(name = "leveldb")]
    unsafe extern "C" {
        pub fn leveldb_open(
            options: *const leveldb_options_t,
            name: *const c_char,
            errptr: *mut *mut c_char,
        ) -> *mut leveldb_t;
        pub fn leveldb_close(db: *mut leveldb_t);
        pub fn leveldb_put(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            key: *const c_char,
            keylen: usize,
            val: *const c_char,
            vallen: usize,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_delete(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            key: *const c_char,
            keylen: usize,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_get(
            db: *mut leveldb_t,
            options: *const leveldb_readoptions_t,
            key: *const c_char,
            keylen: usize,
            vallen: *mut usize,
            errptr: *mut *mut c_char,
        ) -> *mut c_char;
        pub fn leveldb_create_iterator(
            db: *mut leveldb_t,
            options: *const leveldb_readoptions_t,
        ) -> *mut leveldb_iterator_t;
        pub fn leveldb_property_value(db: *mut leveldb_t, propname: *const c_char) -> *mut c_char;
        pub fn leveldb_compact_range(
            db: *mut leveldb_t,
            start_key: *const c_char,
            start_key_len: usize,
            limit_key: *const c_char,
            limit_key_len: usize,
        );

        pub fn leveldb_iter_destroy(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8;
        pub fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_seek(it: *mut leveldb_iterator_t, k: *const c_char, klen: usize);
        pub fn leveldb_iter_next(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_prev(it: *mut leveldb_iterator_t);
        pub fn leveldb_iter_key(it: *const leveldb_iterator_t, klen: *mut usize) -> *const c_char;
        pub fn leveldb_iter_value(it: *const leveldb_iterator_t, vlen: *mut usize)
        -> *const c_char;
        pub fn leveldb_iter_get_error(it: *const leveldb_iterator_t, errptr: *mut *mut c_char);

        pub fn leveldb_options_create() -> *mut leveldb_options_t;
        pub fn leveldb_options_destroy(o: *mut leveldb_options_t);
        pub fn leveldb_options_set_filter_policy(
            o: *mut leveldb_options_t,
            p: *mut leveldb_filterpolicy_t,
        );
        pub fn leveldb_options_set_create_if_missing(o: *mut leveldb_options_t, v: u8);
        pub fn leveldb_options_set_write_buffer_size(o: *mut leveldb_options_t, v: usize);
        pub fn leveldb_options_set_cache(o: *mut leveldb_options_t, c: *mut leveldb_cache_t);
        pub fn leveldb_options_set_compression(o: *mut leveldb_options_t, v: c_int);

        pub fn leveldb_filterpolicy_create_bloom(
            bits_per_key: c_int,
        ) -> *mut leveldb_filterpolicy_t;
        pub fn leveldb_filterpolicy_destroy(p: *mut leveldb_filterpolicy_t);

        pub fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
        pub fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t);
        pub fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
        pub fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t);
        pub fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: u8);

        pub fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t;
        pub fn leveldb_cache_destroy(c: *mut leveldb_cache_t);

        pub fn leveldb_free(ptr: *mut c_void);
        pub fn leveldb_major_version() -> c_int;
        pub fn leveldb_minor_version() -> c_int;
    }
}

/// `leveldb_no_compression` in `c.h`.
const NO_COMPRESSION: c_int = 0;
/// `leveldb_snappy_compression` in `c.h` (a library built without Snappy stores blocks raw).
const SNAPPY_COMPRESSION: c_int = 1;
/// LevelDB 1.23's `kL0_CompactionTrigger`.
const L0_COMPACTION_TRIGGER: usize = 4;
/// LevelDB 1.23's `kNumLevels`.
const NUM_LEVELS: usize = 7;
/// How long `wait_for_background` waits before giving up.
const WAIT_LIMIT: Duration = Duration::from_secs(3600);

/// Takes ownership of an error string the library set through `errptr`.
fn take_error(name: &str, err: *mut c_char) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null `errptr` result is a NUL-terminated string the library allocated
    // with malloc; it is read once here and released with `leveldb_free` right after.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: `err` came from the library and is freed exactly once.
    unsafe { ffi::leveldb_free(err.cast::<c_void>()) };
    Err(BenchError::engine(name, msg))
}

/// The LevelDB version the linked library reports.
fn library_version() -> (i32, i32) {
    // SAFETY: both functions take no arguments and return constants.
    unsafe { (ffi::leveldb_major_version(), ffi::leveldb_minor_version()) }
}

/// Opens LevelDB databases with one fixed configuration.
#[derive(Debug, Clone)]
pub struct LevelDbFactory {
    setup: EngineSetup,
    /// The NVM root of the `leveldb-nvm` variant.
    nvm_root: Option<PathBuf>,
}

impl LevelDbFactory {
    /// A factory for plain LevelDB (`nvm_root == None`) or for `leveldb-nvm`.
    #[must_use]
    pub fn new(setup: EngineSetup, nvm_root: Option<PathBuf>) -> Self {
        Self { setup, nvm_root }
    }

    fn name_str(&self) -> &'static str {
        if self.nvm_root.is_some() {
            "leveldb-nvm"
        } else {
            "leveldb"
        }
    }
}

impl EngineFactory for LevelDbFactory {
    fn name(&self) -> String {
        self.name_str().to_string()
    }

    fn config_json(&self) -> serde_json::Value {
        let s = &self.setup;
        let mut j = serde_json::json!({
            "engine": self.name_str(),
            "write_buffer_size": s.write_buffer_size,
            "block_cache": "lru",
            "block_cache_bytes": s.block_cache_bytes,
            "bloom_bits_per_key": s.bloom_bits,
            "compression": if s.compress { "snappy" } else { "none" },
            "create_if_missing": true,
            "sync": s.sync,
        });
        if let (Some(root), Some(m)) = (&self.nvm_root, j.as_object_mut()) {
            m.insert("nvm_dir".into(), root.display().to_string().into());
            m.insert(
                "placement".into(),
                "every file in <nvm_dir>/<db>; dir holds only the NVM_PATH marker".into(),
            );
        }
        j
    }

    fn version(&self) -> String {
        let (major, minor) = library_version();
        format!("leveldb {major}.{minor} (system libleveldb)")
    }

    fn open(&self, dir: &Path) -> Result<Arc<dyn KvEngine>> {
        let name = self.name_str();
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
        let db_dir = match &self.nvm_root {
            Some(root) => nvm_location(dir, root, name)?,
            None => dir.to_path_buf(),
        };
        let path = CString::new(db_dir.as_os_str().as_encoded_bytes()).map_err(|_| {
            BenchError::InvalidArgument(format!("{} contains a NUL byte", db_dir.display()))
        })?;
        let handles = Handles::new(name, &self.setup)?;
        let mut err = std::ptr::null_mut();
        // SAFETY: `handles.options` is a live options object, `path` a NUL-terminated string
        // and `err` a valid out-pointer; all outlive the call.
        let db = unsafe { ffi::leveldb_open(handles.options.as_ptr(), path.as_ptr(), &mut err) };
        take_error(name, err)?;
        let db = NonNull::new(db).ok_or_else(|| BenchError::engine(name, "leveldb_open failed"))?;
        Ok(Arc::new(LevelDbEngine {
            name,
            db: RwLock::new(Some(DbHandle(db))),
            handles,
            user_bytes: AtomicU64::new(0),
            wal_bytes: AtomicU64::new(0),
        }))
    }

    fn is_engine_dir(&self, dir: &Path) -> bool {
        if self.nvm_root.is_some() {
            dir_holds_only(dir, &|n| n == NVM_MARKER, NVM_MARKER)
        } else {
            dir_holds_only(dir, &is_lsm_file_name, "CURRENT")
        }
    }

    fn destroy(&self, dir: &Path) -> Result<()> {
        let name = self.name_str();
        if self.nvm_root.is_none() {
            return remove_files(dir, name, &is_lsm_file_name);
        }
        if let Some(nvm) = read_nvm_marker(dir) {
            remove_files(&nvm, name, &is_lsm_file_name)?;
            remove_empty_dir(&nvm)?;
        }
        remove_files(dir, name, &|n| n == NVM_MARKER)
    }
}

/// The objects a database is opened with, destroyed (after the database) on drop.
struct Handles {
    options: NonNull<ffi::leveldb_options_t>,
    cache: NonNull<ffi::leveldb_cache_t>,
    filter: Option<NonNull<ffi::leveldb_filterpolicy_t>>,
    read: NonNull<ffi::leveldb_readoptions_t>,
    write_sync: NonNull<ffi::leveldb_writeoptions_t>,
    write_default: NonNull<ffi::leveldb_writeoptions_t>,
}

impl Handles {
    fn new(name: &str, s: &EngineSetup) -> Result<Self> {
        let null = |what: &str| BenchError::engine(name, format!("{what} returned null"));
        // SAFETY: the create functions take plain values and return new objects (or null,
        // checked below); each is owned by the returned `Handles`, which destroys it once.
        let (options, cache, filter, read, write_sync, write_default) = unsafe {
            (
                ffi::leveldb_options_create(),
                ffi::leveldb_cache_create_lru(s.block_cache_bytes),
                if s.bloom_bits > 0 {
                    ffi::leveldb_filterpolicy_create_bloom(
                        c_int::try_from(s.bloom_bits).unwrap_or(c_int::MAX),
                    )
                } else {
                    std::ptr::null_mut()
                },
                ffi::leveldb_readoptions_create(),
                ffi::leveldb_writeoptions_create(),
                ffi::leveldb_writeoptions_create(),
            )
        };
        // Wrap before checking so that whatever was created is freed on an early return.
        let h = Partial {
            options,
            cache,
            filter,
            read,
            write_sync,
            write_default,
        };
        let h = Self {
            options: NonNull::new(h.options).ok_or_else(|| null("leveldb_options_create"))?,
            cache: NonNull::new(h.cache).ok_or_else(|| null("leveldb_cache_create_lru"))?,
            filter: if s.bloom_bits > 0 {
                Some(NonNull::new(h.filter).ok_or_else(|| null("leveldb_filterpolicy_create"))?)
            } else {
                None
            },
            read: NonNull::new(h.read).ok_or_else(|| null("leveldb_readoptions_create"))?,
            write_sync: NonNull::new(h.write_sync)
                .ok_or_else(|| null("leveldb_writeoptions_create"))?,
            write_default: NonNull::new(h.write_default)
                .ok_or_else(|| null("leveldb_writeoptions_create"))?,
        }
        .adopt(h);
        let o = h.options.as_ptr();
        // SAFETY: `o`, the cache, the filter policy and the write options are live objects
        // owned by `h`; the options keep pointers to the cache and policy, which `h` frees
        // only after the options (see `Drop`).
        unsafe {
            ffi::leveldb_options_set_create_if_missing(o, 1);
            ffi::leveldb_options_set_write_buffer_size(o, s.write_buffer_size);
            ffi::leveldb_options_set_cache(o, h.cache.as_ptr());
            if let Some(f) = h.filter {
                ffi::leveldb_options_set_filter_policy(o, f.as_ptr());
            }
            ffi::leveldb_options_set_compression(
                o,
                if s.compress {
                    SNAPPY_COMPRESSION
                } else {
                    NO_COMPRESSION
                },
            );
            ffi::leveldb_writeoptions_set_sync(h.write_sync.as_ptr(), 1);
            ffi::leveldb_writeoptions_set_sync(h.write_default.as_ptr(), u8::from(s.sync));
        }
        Ok(h)
    }

    /// Marks a fully checked `Partial` as owned by `self` (so it frees nothing itself).
    fn adopt(self, mut p: Partial) -> Self {
        p.disarm();
        self
    }
}

/// Objects created but not yet checked for null: freed on drop unless disarmed.
struct Partial {
    options: *mut ffi::leveldb_options_t,
    cache: *mut ffi::leveldb_cache_t,
    filter: *mut ffi::leveldb_filterpolicy_t,
    read: *mut ffi::leveldb_readoptions_t,
    write_sync: *mut ffi::leveldb_writeoptions_t,
    write_default: *mut ffi::leveldb_writeoptions_t,
}

impl Partial {
    fn disarm(&mut self) {
        self.options = std::ptr::null_mut();
        self.cache = std::ptr::null_mut();
        self.filter = std::ptr::null_mut();
        self.read = std::ptr::null_mut();
        self.write_sync = std::ptr::null_mut();
        self.write_default = std::ptr::null_mut();
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        // SAFETY: each non-null pointer is an object created by its `*_create` function
        // that nothing else owns yet (a disarmed `Partial` holds only nulls); none is used
        // by an open database.
        unsafe {
            if !self.options.is_null() {
                ffi::leveldb_options_destroy(self.options);
            }
            if !self.cache.is_null() {
                ffi::leveldb_cache_destroy(self.cache);
            }
            if !self.filter.is_null() {
                ffi::leveldb_filterpolicy_destroy(self.filter);
            }
            if !self.read.is_null() {
                ffi::leveldb_readoptions_destroy(self.read);
            }
            if !self.write_sync.is_null() {
                ffi::leveldb_writeoptions_destroy(self.write_sync);
            }
            if !self.write_default.is_null() {
                ffi::leveldb_writeoptions_destroy(self.write_default);
            }
        }
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        // SAFETY: `Handles` owns each object and frees it once. It is dropped only after the
        // database that used the options is closed (`LevelDbEngine`'s `Drop` closes the
        // database first, and `LevelDbFactory::open` drops `Handles` only when the open
        // failed). The options go before the cache and filter policy they point to.
        unsafe {
            ffi::leveldb_options_destroy(self.options.as_ptr());
            ffi::leveldb_cache_destroy(self.cache.as_ptr());
            if let Some(f) = self.filter {
                ffi::leveldb_filterpolicy_destroy(f.as_ptr());
            }
            ffi::leveldb_readoptions_destroy(self.read.as_ptr());
            ffi::leveldb_writeoptions_destroy(self.write_sync.as_ptr());
            ffi::leveldb_writeoptions_destroy(self.write_default.as_ptr());
        }
    }
}

// SAFETY: the handles are only read after construction (LevelDB copies what it needs from
// options at open; read and write options are passed by const pointer), and LevelDB's
// objects have no thread affinity.
unsafe impl Send for Handles {}
// SAFETY: as above: shared use is read-only, which LevelDB allows from any thread.
unsafe impl Sync for Handles {}

/// An open `leveldb_t`.
struct DbHandle(NonNull<ffi::leveldb_t>);

// SAFETY: LevelDB documents that a `DB` may be used from several threads at once without
// external synchronisation, and it has no thread affinity.
unsafe impl Send for DbHandle {}
// SAFETY: as above.
unsafe impl Sync for DbHandle {}

/// An iterator, destroyed on drop (always before its database: it lives inside a read
/// guard of the database lock).
struct Iter(NonNull<ffi::leveldb_iterator_t>);

impl Iter {
    fn valid(&self) -> bool {
        // SAFETY: `self.0` is a live iterator.
        unsafe { ffi::leveldb_iter_valid(self.0.as_ptr()) != 0 }
    }

    /// The current entry, copied into `last` (key) and measured; the iterator must be valid.
    fn entry_len(&self, last: &mut Vec<u8>) -> usize {
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: the iterator is live and valid (checked by the caller), so key and value
        // point to `klen` / `vlen` readable bytes until the iterator moves, which cannot
        // happen while `&self` is borrowed here.
        unsafe {
            let k = ffi::leveldb_iter_key(self.0.as_ptr(), &mut klen);
            let _ = ffi::leveldb_iter_value(self.0.as_ptr(), &mut vlen);
            last.clear();
            last.extend_from_slice(std::slice::from_raw_parts(k.cast::<u8>(), klen));
        }
        klen + vlen
    }

    fn step(&mut self, direction: Direction) {
        // SAFETY: the iterator is live and valid (checked by the caller before stepping).
        unsafe {
            match direction {
                Direction::Forward => ffi::leveldb_iter_next(self.0.as_ptr()),
                Direction::Reverse => ffi::leveldb_iter_prev(self.0.as_ptr()),
            }
        }
    }

    fn status(&self, name: &str) -> Result<()> {
        let mut err = std::ptr::null_mut();
        // SAFETY: live iterator and a valid out-pointer.
        unsafe { ffi::leveldb_iter_get_error(self.0.as_ptr(), &mut err) };
        take_error(name, err)
    }
}

impl Drop for Iter {
    fn drop(&mut self) {
        // SAFETY: the iterator was created by `leveldb_create_iterator` and is destroyed
        // once, while its database is still open.
        unsafe { ffi::leveldb_iter_destroy(self.0.as_ptr()) };
    }
}

/// An open LevelDB database under test.
pub struct LevelDbEngine {
    name: &'static str,
    db: RwLock<Option<DbHandle>>,
    handles: Handles,
    user_bytes: AtomicU64,
    wal_bytes: AtomicU64,
}

impl std::fmt::Debug for LevelDbEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelDbEngine")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Bytes of a varint32 encoding of `n`.
fn varint_len(mut n: usize) -> u64 {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// Sums the `Write(MB)` column of `leveldb.stats`, in bytes.
fn stats_write_bytes(stats: &str) -> u64 {
    let mb: f64 = stats
        .lines()
        .skip_while(|l| !l.starts_with("---"))
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() == 6)
                .then(|| cols[5].parse::<f64>().ok())
                .flatten()
        })
        .sum();
    (mb * 1_048_576.0) as u64
}

/// Whether `leveldb.sstables` shows a level LevelDB would still compact: at least
/// `L0_COMPACTION_TRIGGER` files in level 0, or a level `1..NUM_LEVELS - 1` over its size
/// limit (10 MiB × 10^(level - 1)).
fn compaction_needed(sstables: &str) -> bool {
    let mut files = [0usize; NUM_LEVELS];
    let mut bytes = [0u64; NUM_LEVELS];
    let mut level = 0usize;
    for line in sstables.lines() {
        if let Some(rest) = line.strip_prefix("--- level ") {
            level = rest
                .trim_end_matches(" ---")
                .trim()
                .parse()
                .unwrap_or(0)
                .min(NUM_LEVELS - 1);
        } else if let Some((_, rest)) = line.trim_start().split_once(':') {
            let size: u64 = rest
                .split('[')
                .next()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            files[level] += 1;
            bytes[level] += size;
        }
    }
    if files[0] >= L0_COMPACTION_TRIGGER {
        return true;
    }
    let mut limit = 10.0 * 1_048_576.0;
    for b in bytes.iter().take(NUM_LEVELS - 1).skip(1) {
        if *b as f64 > limit {
            return true;
        }
        limit *= 10.0;
    }
    false
}

impl LevelDbEngine {
    /// Runs `f` on the open database.
    fn with_db<T>(&self, f: impl FnOnce(*mut ffi::leveldb_t) -> Result<T>) -> Result<T> {
        let guard = self
            .db
            .read()
            .map_err(|_| BenchError::engine(self.name, "lock poisoned by a panicking thread"))?;
        match guard.as_ref() {
            Some(db) => f(db.0.as_ptr()),
            None => Err(BenchError::engine(self.name, "database is closed")),
        }
    }

    fn write_opts(&self, sync: bool) -> *const ffi::leveldb_writeoptions_t {
        if sync {
            self.handles.write_sync.as_ptr()
        } else {
            self.handles.write_default.as_ptr()
        }
    }

    fn property(&self, prop: &CStr) -> Option<String> {
        self.with_db(|db| {
            // SAFETY: `db` is open (the read guard is held) and `prop` is NUL-terminated.
            let v = unsafe { ffi::leveldb_property_value(db, prop.as_ptr()) };
            if v.is_null() {
                return Ok(None);
            }
            // SAFETY: a non-null result is a malloc'ed NUL-terminated string, copied here
            // and freed once with `leveldb_free`.
            let s = unsafe { CStr::from_ptr(v) }.to_string_lossy().into_owned();
            // SAFETY: as above.
            unsafe { ffi::leveldb_free(v.cast::<c_void>()) };
            Ok(Some(s))
        })
        .ok()
        .flatten()
    }

    fn count_write(&self, key: &[u8], value: Option<&[u8]>) {
        let v = value.map_or(0, <[u8]>::len);
        let mut rec = 12 + 1 + varint_len(key.len()) + key.len() as u64 + 7;
        if value.is_some() {
            rec += varint_len(v) + v as u64;
        }
        self.wal_bytes.fetch_add(rec, Ordering::Relaxed);
        self.user_bytes
            .fetch_add((key.len() + v) as u64, Ordering::Relaxed);
    }
}

impl KvEngine for LevelDbEngine {
    fn name(&self) -> String {
        self.name.to_string()
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.with_db(|db| {
            let mut err = std::ptr::null_mut();
            // SAFETY: `db` is open, the write options are live, key and value are valid
            // slices for the call (LevelDB copies them), `err` is a valid out-pointer.
            unsafe {
                ffi::leveldb_put(
                    db,
                    self.write_opts(sync),
                    key.as_ptr().cast::<c_char>(),
                    key.len(),
                    value.as_ptr().cast::<c_char>(),
                    value.len(),
                    &mut err,
                );
            }
            take_error(self.name, err)
        })?;
        self.count_write(key, Some(value));
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with_db(|db| {
            let (mut err, mut len) = (std::ptr::null_mut(), 0usize);
            // SAFETY: `db` is open, the read options are live, `key` is valid for the call,
            // `len` and `err` are valid out-pointers.
            let v = unsafe {
                ffi::leveldb_get(
                    db,
                    self.handles.read.as_ptr(),
                    key.as_ptr().cast::<c_char>(),
                    key.len(),
                    &mut len,
                    &mut err,
                )
            };
            take_error(self.name, err)?;
            if v.is_null() {
                return Ok(None);
            }
            // SAFETY: a non-null result points to `len` malloc'ed bytes owned by us: copied
            // here and freed once with `leveldb_free`.
            let out = unsafe { std::slice::from_raw_parts(v.cast::<u8>(), len) }.to_vec();
            // SAFETY: as above.
            unsafe { ffi::leveldb_free(v.cast::<c_void>()) };
            Ok(Some(out))
        })
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.with_db(|db| {
            let mut err = std::ptr::null_mut();
            // SAFETY: `db` is open, the write options are live, `key` is valid for the
            // call, `err` is a valid out-pointer.
            unsafe {
                ffi::leveldb_delete(
                    db,
                    self.write_opts(sync),
                    key.as_ptr().cast::<c_char>(),
                    key.len(),
                    &mut err,
                );
            }
            take_error(self.name, err)
        })?;
        self.count_write(key, None);
        Ok(())
    }

    fn scan(&self, start: Option<&[u8]>, n: usize, direction: Direction) -> Result<ScanResult> {
        self.with_db(|db| {
            // SAFETY: `db` is open and stays open while the returned iterator lives (both
            // are inside this read guard); the read options are live.
            let it = unsafe { ffi::leveldb_create_iterator(db, self.handles.read.as_ptr()) };
            let mut it =
                Iter(NonNull::new(it).ok_or_else(|| BenchError::engine(self.name, "no iterator"))?);
            let p = it.0.as_ptr();
            // SAFETY: `p` is the live iterator owned by `it`; `k` is valid for the call.
            unsafe {
                match (direction, start) {
                    (Direction::Forward, Some(k)) => {
                        ffi::leveldb_iter_seek(p, k.as_ptr().cast::<c_char>(), k.len());
                    }
                    (Direction::Forward, None) => ffi::leveldb_iter_seek_to_first(p),
                    (Direction::Reverse, Some(k)) => {
                        // seek_for_prev: the first key >= k, then back one unless equal.
                        ffi::leveldb_iter_seek(p, k.as_ptr().cast::<c_char>(), k.len());
                        if ffi::leveldb_iter_valid(p) == 0 {
                            ffi::leveldb_iter_seek_to_last(p);
                        } else {
                            let mut klen = 0usize;
                            let kp = ffi::leveldb_iter_key(p, &mut klen);
                            if std::slice::from_raw_parts(kp.cast::<u8>(), klen) != k {
                                ffi::leveldb_iter_prev(p);
                            }
                        }
                    }
                    (Direction::Reverse, None) => ffi::leveldb_iter_seek_to_last(p),
                }
            }
            let mut r = ScanResult::default();
            let mut last = Vec::new();
            while r.entries < n && it.valid() {
                r.entries += 1;
                r.bytes += it.entry_len(&mut last) as u64;
                if r.entries == n {
                    break;
                }
                it.step(direction);
            }
            it.status(self.name)?;
            if r.entries > 0 {
                r.last_key = Some(last);
            }
            Ok(r)
        })
    }

    fn flush(&self) -> Result<()> {
        // `CompactRange` first writes the memtable to level 0 and waits for it; the empty
        // range ["", ""] then overlaps no table, so nothing else is compacted.
        static EMPTY: [u8; 1] = [0];
        self.with_db(|db| {
            let k = EMPTY.as_ptr().cast::<c_char>();
            // SAFETY: `db` is open; the start and limit keys are zero-length slices of a
            // static (non-null, so LevelDB reads them as bounds rather than "unbounded").
            unsafe { ffi::leveldb_compact_range(db, k, 0, k, 0) };
            Ok(())
        })
    }

    fn wait_for_background(&self) -> Result<()> {
        let started = Instant::now();
        let mut idle_polls = 0;
        while idle_polls < 2 {
            let sst = self.property(c"leveldb.sstables").unwrap_or_default();
            idle_polls = if compaction_needed(&sst) {
                0
            } else {
                idle_polls + 1
            };
            if started.elapsed() > WAIT_LIMIT {
                return Err(BenchError::engine(
                    self.name,
                    "compaction still needed after an hour",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn stats_json(&self) -> serde_json::Value {
        let stats = self.property(c"leveldb.stats").unwrap_or_default();
        serde_json::json!({
            "user_bytes_written": self.user_bytes.load(Ordering::Relaxed),
            "wal_bytes_estimated": self.wal_bytes.load(Ordering::Relaxed),
            "table_bytes_written": stats_write_bytes(&stats),
            "approximate_memory_usage": self
                .property(c"leveldb.approximate-memory-usage")
                .and_then(|s| s.trim().parse::<u64>().ok()),
        })
    }

    fn stats_text(&self) -> Option<String> {
        self.property(c"leveldb.stats")
    }

    fn counters(&self) -> Option<EngineCounters> {
        let stats = self.property(c"leveldb.stats")?;
        Some(EngineCounters {
            user_bytes_written: self.user_bytes.load(Ordering::Relaxed),
            storage_bytes_written: self.wal_bytes.load(Ordering::Relaxed)
                + stats_write_bytes(&stats),
            stall_micros: 0,
            nvm_bytes_written: 0,
        })
    }

    fn stall_micros(&self) -> Option<u64> {
        None
    }

    fn close(&self) -> Result<()> {
        let mut guard = self
            .db
            .write()
            .map_err(|_| BenchError::engine(self.name, "lock poisoned by a panicking thread"))?;
        if let Some(db) = guard.take() {
            // SAFETY: the write guard excludes every other use (no iterator is alive), and
            // the handle was taken out, so the database is closed exactly once.
            unsafe { ffi::leveldb_close(db.0.as_ptr()) };
        }
        Ok(())
    }
}

impl Drop for LevelDbEngine {
    fn drop(&mut self) {
        let db = match self.db.get_mut() {
            Ok(db) => db.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(db) = db {
            // SAFETY: `&mut self` excludes every other use; the handle was taken out, so the
            // database is closed once, before `self.handles` is dropped.
            unsafe { ffi::leveldb_close(db.0.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stats_and_sstables() {
        let stats = "                               Compactions\n\
                     Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
                     --------------------------------------------------\n  \
                     0        2        4         0        0         4\n  \
                     1        5       10         1       12        11\n";
        assert_eq!(stats_write_bytes(stats), 15 * 1_048_576);
        let few = "--- level 0 ---\n 5:1000['a' @ 1 : 1 .. 'b' @ 2 : 1]\n--- level 1 ---\n";
        assert!(!compaction_needed(few));
        let l0 = "--- level 0 ---\n 5:1['a']\n 6:1['a']\n 7:1['a']\n 8:1['a']\n";
        assert!(compaction_needed(l0));
        let l1 = "--- level 0 ---\n--- level 1 ---\n 9:20000000['a' .. 'b']\n";
        assert!(compaction_needed(l1));
        assert_eq!(varint_len(127), 1);
        assert_eq!(varint_len(128), 2);
    }
}
