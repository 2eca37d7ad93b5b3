//! Option handles: `leveldb_options_t` (database options), read and write options, and the
//! objects LevelDB's options point to (cache, filter policy, comparator, env, logger).
//!
//! `leveldb_options_t` records what the caller set; [`leveldb_options_t::engine_options`]
//! builds the engine's `Options` at open: the preset's values (default `leveldb`), then
//! every setter in call order, so `mezzanine_options_set_preset` may come at any point.
//! LevelDB's own defaults are kept where they change behaviour (`create_if_missing` is
//! false); tuning options a caller leaves alone keep the preset's values. Sizes are clipped
//! to LevelDB's ranges, as LevelDB's `SanitizeOptions` does. The objects an options handle
//! points to are copied into it when set, so destroying them early cannot dangle.
//!
//! Thread safety: none needed; an options object is used by one thread at a time.

use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::Arc;

use engine::{Comparator, Options, Preset, ReadOptions, WriteOptions};

use crate::{no_errptr, with_errptr};

/// One setter call, replayed over the preset at open.
#[derive(Debug, Clone)]
pub(crate) enum Setting {
    CreateIfMissing(bool),
    ErrorIfExists(bool),
    ParanoidChecks(bool),
    WriteBufferSize(usize),
    MaxOpenFiles(usize),
    BlockCacheCapacity(usize),
    BlockSize(usize),
    BlockRestartInterval(usize),
    TargetFileSize(u64),
    BloomBitsPerKey(u32),
    NvmDir(Option<PathBuf>),
    NvmCapacity(u64),
    /// `mezzanine_options_set(name, value)`.
    Named(String, String),
}

impl Setting {
    fn apply(&self, o: &mut Options) -> engine::Result<()> {
        match self {
            Setting::CreateIfMissing(v) => o.create_if_missing = *v,
            Setting::ErrorIfExists(v) => o.error_if_exists = *v,
            Setting::ParanoidChecks(v) => o.paranoid_checks = *v,
            Setting::WriteBufferSize(v) => o.write_buffer_size = *v,
            Setting::MaxOpenFiles(v) => o.max_open_files = *v,
            Setting::BlockCacheCapacity(v) => o.block_cache_capacity = *v,
            Setting::BlockSize(v) => o.block_size = *v,
            Setting::BlockRestartInterval(v) => o.block_restart_interval = *v,
            Setting::TargetFileSize(v) => o.target_file_size = *v,
            Setting::BloomBitsPerKey(v) => o.bloom_bits_per_key = *v,
            Setting::NvmDir(v) => o.nvm_dir.clone_from(v),
            Setting::NvmCapacity(v) => o.nvm_capacity = *v,
            Setting::Named(k, v) => o.set(k, v)?,
        }
        Ok(())
    }
}

/// A custom comparator as recorded by `leveldb_options_set_comparator`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ComparatorFns {
    state: *mut c_void,
    compare: Option<CompareFn>,
    name: Option<NameFn>,
}

/// Database options (`leveldb_options_create`).
#[derive(Debug)]
pub struct leveldb_options_t {
    pub(crate) preset: Preset,
    pub(crate) settings: Vec<Setting>,
    pub(crate) comparator: Option<ComparatorFns>,
    /// `rocksdb_options_set_create_missing_column_families`: families named at
    /// `rocksdb_open_column_families` that the database lacks are created.
    pub(crate) create_missing_column_families: bool,
}

impl leveldb_options_t {
    /// The engine options these settings describe.
    pub(crate) fn engine_options(&self) -> Result<Options, String> {
        let mut o = Options::preset(self.preset);
        o.create_if_missing = false; // LevelDB's default
        for s in &self.settings {
            s.apply(&mut o).map_err(|e| crate::status_text(&e))?;
        }
        o.comparator = self.engine_comparator()?;
        Ok(o)
    }

    /// The caller's comparator as the engine's, if one is set: its name read now (LevelDB
    /// reads it once too), its compare callback called for every comparison.
    pub(crate) fn engine_comparator(&self) -> Result<Option<Arc<dyn Comparator>>, String> {
        let Some(c) = self.comparator else {
            return Ok(None);
        };
        let Some(name_fn) = c.name else {
            return Err("Invalid argument: comparator has no name function".to_string());
        };
        // SAFETY: a comparator's `name` callback takes its state and returns a
        // NUL-terminated string (LevelDB's contract); the state outlives the options.
        let name = unsafe { crate::c_str(name_fn(c.state), "comparator name") }
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .map_err(|e| format!("Invalid argument: {e}"))?;
        let Some(compare) = c.compare else {
            return Err(format!(
                "Invalid argument: comparator \"{name}\" has no compare function"
            ));
        };
        Ok(Some(Arc::new(CComparator {
            state: c.state,
            compare,
            name,
        })))
    }
}

/// A comparator of C callbacks (`leveldb_comparator_create`) as the engine's.
struct CComparator {
    state: *mut c_void,
    compare: CompareFn,
    name: String,
}

// SAFETY: LevelDB's contract for a comparator: its callbacks may be called from any thread,
// concurrently, for as long as a database opened with it is open; the state is the
// caller's and is only passed back to those callbacks.
unsafe impl Send for CComparator {}
// SAFETY: as for `Send`: the engine only calls the thread-safe callbacks through `&self`.
unsafe impl Sync for CComparator {}

impl Comparator for CComparator {
    fn name(&self) -> &str {
        &self.name
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        // SAFETY: the caller's compare callback with its state; both slices are valid for
        // the call and the callback only reads them (LevelDB's contract).
        let r = unsafe {
            (self.compare)(
                self.state,
                a.as_ptr().cast(),
                a.len(),
                b.as_ptr().cast(),
                b.len(),
            )
        };
        r.cmp(&0)
    }
}

/// Runs `f` on the options behind `opt` (nothing if NULL or on panic).
fn with_opts(opt: *mut leveldb_options_t, f: impl FnOnce(&mut leveldb_options_t)) {
    no_errptr((), || {
        // SAFETY: `opt` is NULL or a live handle from `leveldb_options_create`, used by one
        // thread at a time.
        if let Some(o) = unsafe { opt.as_mut() } {
            f(o);
        }
    });
}

/// Records `s` on `opt`.
fn push(opt: *mut leveldb_options_t, s: Setting) {
    with_opts(opt, |o| o.settings.push(s));
}

/// `v` clipped to `[lo, hi]` (LevelDB's `ClipToRange`).
fn clip(v: usize, lo: usize, hi: usize) -> usize {
    v.clamp(lo, hi)
}

/// New database options: LevelDB's defaults (`create_if_missing` false) over the
/// `leveldb` preset.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_options_create() -> *mut leveldb_options_t {
    Box::into_raw(Box::new(leveldb_options_t {
        preset: Preset::Leveldb,
        settings: Vec::new(),
        comparator: None,
        create_missing_column_families: false,
    }))
}

/// Destroys options. NULL is allowed.
///
/// # Safety
/// `opt` must be NULL or a live handle from `leveldb_options_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_destroy(opt: *mut leveldb_options_t) {
    if !opt.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_options_create`, destroyed once.
        drop(unsafe { Box::from_raw(opt) });
    }
}

/// Records a comparator: the database orders its keys with it. Its name is recorded when
/// the database is created and must match at every open ("comparator name mismatch"
/// otherwise), as in LevelDB. The engine keeps no bloom filters under a custom comparator
/// (they hash bytes, and a comparator may equate keys whose bytes differ). NULL clears it.
///
/// # Safety
/// `opt` and `cmp` must each be NULL or a live handle of their type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_comparator(
    opt: *mut leveldb_options_t,
    cmp: *mut leveldb_comparator_t,
) {
    // SAFETY: `cmp` is NULL or a live comparator handle.
    let c = unsafe { cmp.as_ref() }.map(|c| c.fns);
    with_opts(opt, |o| o.comparator = c);
}

/// Records a filter policy: a bloom policy sets the engine's bloom bits per key; a custom
/// policy is accepted and unused (the engine builds its own bloom filters; filters only let
/// reads skip tables, so results are unchanged). NULL keeps the preset's bloom filters.
///
/// # Safety
/// `opt` and `policy` must each be NULL or a live handle of their type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_filter_policy(
    opt: *mut leveldb_options_t,
    policy: *mut leveldb_filterpolicy_t,
) {
    // SAFETY: `policy` is NULL or a live filter policy handle.
    let bits = unsafe { policy.as_ref() }.and_then(|p| p.bloom_bits);
    if let Some(bits) = bits {
        push(opt, Setting::BloomBitsPerKey(bits));
    }
}

/// Create the database if it is missing (default: false).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_create_if_missing(opt: *mut leveldb_options_t, v: u8) {
    push(opt, Setting::CreateIfMissing(v != 0));
}

/// Fail at open if the database exists (default: false).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_error_if_exists(opt: *mut leveldb_options_t, v: u8) {
    push(opt, Setting::ErrorIfExists(v != 0));
}

/// Whole-file checks on open and any WAL damage is an error (default: false).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_paranoid_checks(opt: *mut leveldb_options_t, v: u8) {
    push(opt, Setting::ParanoidChecks(v != 0));
}

/// Accepted and ignored: the engine always uses the operating system's file system.
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_env(
    _opt: *mut leveldb_options_t,
    _env: *mut leveldb_env_t,
) {
}

/// Accepted. LevelDB's C API has no way to make a `leveldb_logger_t`, so the info log is
/// the `LOG` file in the database directory (earlier ones kept as `LOG.old.<micros>`), as
/// LevelDB's with no logger set.
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_info_log(
    _opt: *mut leveldb_options_t,
    _log: *mut leveldb_logger_t,
) {
}

/// Memtable size in bytes, clipped to [64 KiB, 1 GiB] (default: the preset's, 64 MiB).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_write_buffer_size(
    opt: *mut leveldb_options_t,
    v: usize,
) {
    push(opt, Setting::WriteBufferSize(clip(v, 64 << 10, 1 << 30)));
}

/// Table cache entries, clipped to [74, 50000] as LevelDB does (default: 1000).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_max_open_files(opt: *mut leveldb_options_t, v: c_int) {
    let v = usize::try_from(v).unwrap_or(0);
    push(opt, Setting::MaxOpenFiles(clip(v, 64 + 10, 50000)));
}

/// The block cache capacity becomes `cache`'s (each database has its own cache of that
/// size; LevelDB can share one between databases). NULL keeps the preset's 8 MiB.
///
/// # Safety
/// `opt` and `cache` must each be NULL or a live handle of their type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_cache(
    opt: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
) {
    // SAFETY: `cache` is NULL or a live cache handle.
    if let Some(c) = unsafe { cache.as_ref() } {
        push(opt, Setting::BlockCacheCapacity(c.capacity));
    }
}

/// Data block size, clipped to [1 KiB, 4 MiB] (default: 4 KiB).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_block_size(opt: *mut leveldb_options_t, v: usize) {
    push(opt, Setting::BlockSize(clip(v, 1 << 10, 4 << 20)));
}

/// Keys between restart points (used by the prefix-compressed block format; the default
/// KeySet format has none). Values below 1 become 1.
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_block_restart_interval(
    opt: *mut leveldb_options_t,
    v: c_int,
) {
    let v = usize::try_from(v).unwrap_or(1).max(1);
    push(opt, Setting::BlockRestartInterval(v));
}

/// Target table size, clipped to [1 MiB, 1 GiB] (default: the preset's, 64 MiB).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_max_file_size(opt: *mut leveldb_options_t, v: usize) {
    push(
        opt,
        Setting::TargetFileSize(clip(v, 1 << 20, 1 << 30) as u64),
    );
}

/// Accepted and ignored: the engine does not compress blocks yet, whatever is asked.
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_compression(_opt: *mut leveldb_options_t, _v: c_int) {}

// ---- comparators ----

/// A comparator's compare callback.
type CompareFn =
    unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> c_int;
/// A comparator's or filter policy's name callback.
type NameFn = unsafe extern "C" fn(*mut c_void) -> *const c_char;
/// A destructor callback.
type DestructorFn = unsafe extern "C" fn(*mut c_void);

/// A custom comparator (`leveldb_comparator_create`).
#[derive(Debug)]
pub struct leveldb_comparator_t {
    fns: ComparatorFns,
    destructor: Option<DestructorFn>,
}

/// Wraps C callbacks as a comparator (see `leveldb_options_set_comparator`). The callbacks
/// must be thread-safe and outlive every database opened with it.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_comparator_create(
    state: *mut c_void,
    destructor: Option<DestructorFn>,
    compare: Option<CompareFn>,
    name: Option<NameFn>,
) -> *mut leveldb_comparator_t {
    Box::into_raw(Box::new(leveldb_comparator_t {
        fns: ComparatorFns {
            state,
            compare,
            name,
        },
        destructor,
    }))
}

/// Calls the comparator's destructor and frees it. NULL is allowed.
///
/// # Safety
/// `cmp` must be NULL or a live comparator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_comparator_destroy(cmp: *mut leveldb_comparator_t) {
    if cmp.is_null() {
        return;
    }
    // SAFETY: created by `Box::into_raw` in `leveldb_comparator_create`, destroyed once.
    let c = unsafe { Box::from_raw(cmp) };
    if let Some(d) = c.destructor {
        // SAFETY: the caller's destructor, called once with the state it was given for.
        unsafe { d(c.fns.state) };
    }
}

// ---- filter policies ----

/// A filter policy: LevelDB's bloom policy, or C callbacks (accepted, never called).
#[derive(Debug)]
pub struct leveldb_filterpolicy_t {
    /// `Some(bits per key)` for a bloom policy, `None` for a custom one.
    bloom_bits: Option<u32>,
    state: *mut c_void,
    destructor: Option<DestructorFn>,
}

/// A custom filter policy. It is accepted so that code written for LevelDB runs unchanged,
/// but the engine never calls it: tables carry the engine's own bloom filters, and a filter
/// only lets a read skip a table, so results do not change.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_filterpolicy_create(
    state: *mut c_void,
    destructor: Option<DestructorFn>,
    _create_filter: Option<
        unsafe extern "C" fn(
            *mut c_void,
            *const *const c_char,
            *const usize,
            c_int,
            *mut usize,
        ) -> *mut c_char,
    >,
    _key_may_match: Option<
        unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> u8,
    >,
    _name: Option<NameFn>,
) -> *mut leveldb_filterpolicy_t {
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        bloom_bits: None,
        state,
        destructor,
    }))
}

/// A bloom filter policy: sets the engine's `bloom_bits_per_key` (clipped to 1..=64).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_filterpolicy_create_bloom(
    bits_per_key: c_int,
) -> *mut leveldb_filterpolicy_t {
    let bits = u32::try_from(bits_per_key.clamp(1, 64)).unwrap_or(10);
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        bloom_bits: Some(bits),
        state: std::ptr::null_mut(),
        destructor: None,
    }))
}

/// Calls a custom policy's destructor and frees the policy. NULL is allowed.
///
/// # Safety
/// `policy` must be NULL or a live filter policy handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t) {
    if policy.is_null() {
        return;
    }
    // SAFETY: created by `Box::into_raw` in a `leveldb_filterpolicy_create*`, destroyed once.
    let p = unsafe { Box::from_raw(policy) };
    if let Some(d) = p.destructor {
        // SAFETY: the caller's destructor, called once with its state.
        unsafe { d(p.state) };
    }
}

// ---- caches, env, logger ----

/// A block cache size (`leveldb_cache_create_lru`).
#[derive(Debug)]
pub struct leveldb_cache_t {
    capacity: usize,
}

/// A cache of `capacity` bytes: each database opened with it gets a block cache of that
/// capacity.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t {
    Box::into_raw(Box::new(leveldb_cache_t { capacity }))
}

/// Frees a cache handle. NULL is allowed.
///
/// # Safety
/// `cache` must be NULL or a live cache handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_cache_destroy(cache: *mut leveldb_cache_t) {
    if !cache.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_cache_create_lru`, destroyed once.
        drop(unsafe { Box::from_raw(cache) });
    }
}

/// The default environment (the only one: the operating system's file system).
#[derive(Debug)]
pub struct leveldb_env_t {
    _private: u8,
}

/// An info logger. There is no constructor in the C API; only NULL can be passed.
#[derive(Debug)]
pub struct leveldb_logger_t {
    _private: u8,
}

/// The default environment.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_create_default_env() -> *mut leveldb_env_t {
    Box::into_raw(Box::new(leveldb_env_t { _private: 0 }))
}

/// Frees an environment handle. NULL is allowed.
///
/// # Safety
/// `env` must be NULL or a live env handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_env_destroy(env: *mut leveldb_env_t) {
    if !env.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_create_default_env`, destroyed once.
        drop(unsafe { Box::from_raw(env) });
    }
}

/// A directory for tests (created if missing): `$TEST_TMPDIR`, else
/// `<temp dir>/mezzaninetest-<euid>`. A `malloc`ed string (free with `leveldb_free`), NULL
/// if it cannot be created.
///
/// # Safety
/// `env` must be NULL or a live env handle (it is not used).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_env_get_test_directory(_env: *mut leveldb_env_t) -> *mut c_char {
    no_errptr(std::ptr::null_mut(), || {
        let dir = match std::env::var_os("TEST_TMPDIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => {
                // SAFETY: `geteuid` has no preconditions and cannot fail.
                let uid = unsafe { libc::geteuid() };
                std::env::temp_dir().join(format!("mezzaninetest-{uid}"))
            }
        };
        if std::fs::create_dir_all(&dir).is_err() {
            return std::ptr::null_mut();
        }
        crate::malloc_cstring(&dir.to_string_lossy())
    })
}

// ---- read and write options ----

/// Options of one read or iterator.
#[derive(Debug, Default)]
pub struct leveldb_readoptions_t {
    pub(crate) ro: ReadOptions,
    /// The database the snapshot (if any) belongs to.
    pub(crate) snapshot_owner: Option<usize>,
}

/// Default read options (checksums as the engine verifies them, fill the cache, latest
/// state).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t {
    Box::into_raw(Box::default())
}

/// Frees read options. NULL is allowed.
///
/// # Safety
/// `opt` must be NULL or a live read options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_destroy(opt: *mut leveldb_readoptions_t) {
    if !opt.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_readoptions_create`, destroyed once.
        drop(unsafe { Box::from_raw(opt) });
    }
}

/// Runs `f` on the read options behind `opt` (nothing if NULL).
fn with_ro(opt: *mut leveldb_readoptions_t, f: impl FnOnce(&mut leveldb_readoptions_t)) {
    no_errptr((), || {
        // SAFETY: `opt` is NULL or a live read options handle, used by one thread at a time.
        if let Some(o) = unsafe { opt.as_mut() } {
            f(o);
        }
    });
}

/// Verify the checksum of every block read, cached ones included.
///
/// # Safety
/// `opt` must be NULL or a live read options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_verify_checksums(
    opt: *mut leveldb_readoptions_t,
    v: u8,
) {
    with_ro(opt, |o| o.ro.verify_checksums = v != 0);
}

/// Put blocks read into the block cache (default: true).
///
/// # Safety
/// `opt` must be NULL or a live read options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_fill_cache(
    opt: *mut leveldb_readoptions_t,
    v: u8,
) {
    with_ro(opt, |o| o.ro.fill_cache = v != 0);
}

/// Read as of `snap` (NULL: the latest state). The read options keep the snapshot pinned
/// until they are destroyed or given another snapshot.
///
/// # Safety
/// `opt` and `snap` must each be NULL or a live handle of their type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_snapshot(
    opt: *mut leveldb_readoptions_t,
    snap: *const crate::db::leveldb_snapshot_t,
) {
    // SAFETY: `snap` is NULL or a live snapshot handle.
    let s = unsafe { snap.as_ref() }.map(|s| (s.snap.clone(), s.owner));
    with_ro(opt, |o| {
        o.snapshot_owner = s.as_ref().map(|(_, owner)| *owner);
        o.ro.snapshot = s.map(|(snap, _)| snap);
    });
}

/// Options of one write.
#[derive(Debug, Default)]
pub struct leveldb_writeoptions_t {
    pub(crate) wo: WriteOptions,
}

/// Default write options (not synced).
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t {
    Box::into_raw(Box::default())
}

/// Frees write options. NULL is allowed.
///
/// # Safety
/// `opt` must be NULL or a live write options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writeoptions_destroy(opt: *mut leveldb_writeoptions_t) {
    if !opt.is_null() {
        // SAFETY: created by `Box::into_raw` in `leveldb_writeoptions_create`, destroyed once.
        drop(unsafe { Box::from_raw(opt) });
    }
}

/// Return from a write only once it is on stable storage.
///
/// # Safety
/// `opt` must be NULL or a live write options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writeoptions_set_sync(opt: *mut leveldb_writeoptions_t, v: u8) {
    no_errptr((), || {
        // SAFETY: `opt` is NULL or a live write options handle, used by one thread at a time.
        if let Some(o) = unsafe { opt.as_mut() } {
            o.wo.sync = v != 0;
        }
    });
}

// ---- mezzanine_ additions to options ----

/// Sets the preset the options start from (`leveldb`, `novelsm`, `tlsm`, `matrixkv`,
/// `mezzanine`: `Preset::ALL`). Every other setter applies on top of it, whatever the call
/// order.
///
/// # Safety
/// `opt` must be NULL or a live options handle; `name` NULL or a NUL-terminated string;
/// `errptr` NULL or a valid `char**`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_options_set_preset(
    opt: *mut leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: `opt` is NULL or a live options handle used by one thread at a time.
        let o = unsafe { opt.as_mut() }.ok_or("Invalid argument: options is NULL")?;
        // SAFETY: `name` is NULL or a NUL-terminated string.
        let name = unsafe { crate::c_str(name, "preset name") }?;
        let name =
            std::str::from_utf8(name).map_err(|_| "Invalid argument: preset name is not UTF-8")?;
        o.preset = crate::status(Preset::parse(name))?;
        Ok(())
    });
}

/// Sets one engine option by name, as `mezz bench --opt name=value` does (names and
/// values: `docs/c-api.md`, the OPTIONS file). `preset` is `mezzanine_options_set_preset`.
/// Errors (unknown name, bad value) are reported now.
///
/// # Safety
/// As [`mezzanine_options_set_preset`]; `value` NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_options_set(
    opt: *mut leveldb_options_t,
    name: *const c_char,
    value: *const c_char,
    errptr: *mut *mut c_char,
) {
    with_errptr(errptr, (), || {
        // SAFETY: `opt` is NULL or a live options handle used by one thread at a time.
        let o = unsafe { opt.as_mut() }.ok_or("Invalid argument: options is NULL")?;
        // SAFETY: `name` and `value` are NULL or NUL-terminated strings.
        let (name, value) = unsafe {
            (
                crate::c_str(name, "option name")?,
                crate::c_str(value, "option value")?,
            )
        };
        let name =
            std::str::from_utf8(name).map_err(|_| "Invalid argument: option name is not UTF-8")?;
        let value = std::str::from_utf8(value)
            .map_err(|_| "Invalid argument: option value is not UTF-8")?;
        if name == "preset" {
            o.preset = crate::status(Preset::parse(value.trim()))?;
            return Ok(());
        }
        let s = Setting::Named(name.to_string(), value.to_string());
        crate::status(s.apply(&mut Options::default()))?;
        o.settings.push(s);
        Ok(())
    });
}

/// Puts the NVM tier's pool in directory `dir` (a DAX mount, `/dev/shm`, ...). NULL
/// removes the tier again.
///
/// # Safety
/// `opt` must be NULL or a live options handle; `dir` NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_options_set_nvm_dir(
    opt: *mut leveldb_options_t,
    dir: *const c_char,
) {
    // SAFETY: `dir` is NULL or a NUL-terminated string.
    let dir = unsafe { crate::c_str(dir, "dir") }.ok().map(|d| {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(d))
    });
    push(opt, Setting::NvmDir(dir));
}

/// Bytes of the NVM pool (rounded up to 4 KiB; default 1 GiB).
///
/// # Safety
/// `opt` must be NULL or a live options handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mezzanine_options_set_nvm_capacity(
    opt: *mut leveldb_options_t,
    bytes: u64,
) {
    push(opt, Setting::NvmCapacity(bytes));
}
