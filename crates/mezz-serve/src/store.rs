//! The data model over the engine: Redis strings and hashes as engine keys (the encoding
//! is specified in `docs/serve.md`), per-key lock stripes for read-modify-write commands,
//! and the cursor table of SCAN / HSCAN.
//!
//! Encoding (every engine key starts with a one-byte namespace):
//! - `k` + key: the key's metadata. Value `s` + bytes for a string; `h` + version (u64 BE)
//!   + field count (u64 BE) for a hash.
//! - `f` + key length (u32 BE) + key + version (u64 BE) + field: one hash field's value.
//!
//! SCAN and KEYS read only the `k` namespace, so they see top-level keys only. A hash's
//! fields carry its version: a blind SET over a hash replaces the metadata and the old
//! fields are no longer reachable (see docs/serve.md on their space).
//!
//! Invariants: every command that reads before it writes holds the exclusive stripe lock
//! of each key it changes; blind writes (SET without options, MSET) hold the shared one.
//! So a read-modify-write never interleaves with another write to the same key, while blind
//! writes to one key still run concurrently (and share a WAL sync). Stripes of several keys
//! are taken in ascending order (no deadlock).
//!
//! Every write goes through `commit::Committer` (group commit).
//!
//! Thread-safety: `Store` is `Send + Sync`, shared by every connection.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use mezzanine::{Db, ReadOptions, WriteBatch, WriteOptions};
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::commit::{CommitError, Committer};
use crate::glob;

/// Largest string value (Redis's `proto-max-bulk-len`), for APPEND and SETRANGE.
pub const MAX_STRING: usize = 512 * 1024 * 1024;

const STRIPES: usize = 1024;
const CURSORS_KEPT: usize = 65_536;
const META: u8 = b'k';
const FIELD: u8 = b'f';
const T_STRING: u8 = b's';
const T_HASH: u8 = b'h';

/// How a data command fails; `Display` is the Redis error line.
#[derive(Debug)]
pub enum StoreError {
    /// The key holds another type.
    WrongType,
    /// A value that should be an integer is not.
    NotInteger,
    /// INCR/DECR would overflow.
    Overflow,
    /// A string would exceed `MAX_STRING`.
    TooBig,
    /// A SCAN cursor this server did not hand out (or has forgotten).
    BadCursor,
    /// A stored value the encoding does not allow.
    Corrupt(String),
    /// The engine failed.
    Engine(mezzanine::Error),
    /// The engine failed the write group this command's batch was part of.
    Group(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            StoreError::NotInteger => f.write_str("ERR value is not an integer or out of range"),
            StoreError::Overflow => f.write_str("ERR increment or decrement would overflow"),
            StoreError::TooBig => {
                f.write_str("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
            }
            StoreError::BadCursor => f.write_str("ERR invalid cursor"),
            StoreError::Corrupt(m) => write!(f, "ERR corrupt stored value: {m}"),
            StoreError::Engine(e) => write!(f, "ERR engine: {e}"),
            StoreError::Group(e) => write!(f, "ERR engine: {e}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<mezzanine::Error> for StoreError {
    fn from(e: mezzanine::Error) -> Self {
        StoreError::Engine(e)
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, StoreError>;

/// A key's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meta {
    /// A string and its bytes.
    Str(Vec<u8>),
    /// A hash: its version and field count.
    Hash {
        /// Tags the fields of this incarnation of the hash.
        version: u64,
        /// Number of fields.
        len: u64,
    },
}

/// The engine key whose tombstone a synced read-modify-write command writes to wait for
/// the WAL sync (namespace `_`: reserved for the server, never a Redis key).
const SYNC_KEY: &[u8] = b"_sync";

/// Blind writes deferred until `prepare` or `settle`, and their keys.
type Deferred = (WriteBatch, Vec<Vec<u8>>);

thread_local! {
    /// Whether this thread wrote since its last `settle` and owes a sync.
    static SYNC_OWED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether a deferred write of this thread failed since its last `settle`.
    static SYNC_FAILED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// With `--sync`: this thread's plain SETs and MSETs not yet written. Each connection
    /// has its own thread, so this is the connection's.
    static PENDING: std::cell::RefCell<Option<Deferred>> = const { std::cell::RefCell::new(None) };
}

fn map_commit(e: CommitError) -> StoreError {
    match e {
        CommitError::Engine(e) => StoreError::Engine(e),
        CommitError::Group(msg) => StoreError::Group(msg),
    }
}

fn meta_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(META);
    k.extend_from_slice(key);
    k
}

fn string_value(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() + 1);
    out.push(T_STRING);
    out.extend_from_slice(v);
    out
}

fn hash_value(version: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(17);
    out.push(T_HASH);
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out
}

/// The prefix of every field key of one hash incarnation.
fn field_prefix(key: &[u8], version: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 13);
    k.push(FIELD);
    let len = u32::try_from(key.len()).unwrap_or(u32::MAX);
    k.extend_from_slice(&len.to_be_bytes());
    k.extend_from_slice(key);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

fn field_key(key: &[u8], version: u64, field: &[u8]) -> Vec<u8> {
    let mut k = field_prefix(key, version);
    k.extend_from_slice(field);
    k
}

/// Decodes a metadata value.
///
/// # Errors
/// `Corrupt` for an unknown tag or a short hash header.
pub fn decode_meta(v: &[u8]) -> Result<Meta> {
    match v.split_first() {
        Some((&T_STRING, rest)) => Ok(Meta::Str(rest.to_vec())),
        Some((&T_HASH, rest)) => {
            let version = rest
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes);
            let len = rest
                .get(8..16)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes);
            match (version, len, rest.len()) {
                (Some(version), Some(len), 16) => Ok(Meta::Hash { version, len }),
                _ => Err(StoreError::Corrupt("short hash metadata".into())),
            }
        }
        Some((t, _)) => Err(StoreError::Corrupt(format!("unknown type tag {t:#04x}"))),
        None => Err(StoreError::Corrupt("empty metadata".into())),
    }
}

/// The smallest key greater than every key starting with `prefix` (None: no bound).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last < 0xff {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

fn stripe_of(key: &[u8]) -> usize {
    // FNV-1a.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    usize::try_from(h % STRIPES as u64).unwrap_or(0)
}

fn stripes_of<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Vec<usize> {
    let mut s: Vec<usize> = keys.into_iter().map(stripe_of).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Positions kept for SCAN / HSCAN cursors: id -> the last key returned.
#[derive(Debug, Default)]
struct Cursors {
    next: u64,
    by_id: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

/// One page of a SCAN.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ScanPage {
    /// The cursor to pass next (0: the scan is complete).
    pub cursor: u64,
    /// The items found (keys for SCAN; field, value pairs flattened for HSCAN).
    pub items: Vec<Vec<u8>>,
}

/// Filters of a SCAN.
#[derive(Debug, Default, Clone)]
pub struct ScanFilter {
    /// MATCH pattern.
    pub pattern: Option<Vec<u8>>,
    /// TYPE filter: `string` or `hash`.
    pub type_name: Option<Vec<u8>>,
}

/// The strings and hashes of one database.
#[derive(Debug)]
pub struct Store {
    db: Db,
    wopts: WriteOptions,
    stripes: Vec<RwLock<()>>,
    committer: Committer,
    version: AtomicU64,
    cursors: Mutex<Cursors>,
}

/// Guards of the shared stripe locks of a set of keys.
type Shared<'a> = Vec<RwLockReadGuard<'a, ()>>;
/// Guards of the exclusive stripe locks of a set of keys.
type Exclusive<'a> = Vec<RwLockWriteGuard<'a, ()>>;

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl Store {
    /// Wraps an open database; `sync` makes every write wait for its WAL sync.
    #[must_use]
    pub fn new(db: Db, sync: bool) -> Store {
        let start = now_micros();
        Store {
            db,
            wopts: WriteOptions { sync },
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
            committer: Committer::default(),
            // Hash versions grow from the clock at start, so a version is never reused
            // across restarts (unless the clock goes back).
            version: AtomicU64::new(start),
            cursors: Mutex::new(Cursors {
                next: start % 1_000_000_007 + 1,
                ..Cursors::default()
            }),
        }
    }

    /// The engine handle.
    #[must_use]
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Whether writes are synced.
    #[must_use]
    pub fn sync(&self) -> bool {
        self.wopts.sync
    }

    fn shared<'a>(&'a self, keys: impl IntoIterator<Item = &'a [u8]>) -> Shared<'a> {
        stripes_of(keys)
            .into_iter()
            .filter_map(|i| self.stripes.get(i).map(RwLock::read))
            .collect()
    }

    fn exclusive<'a>(&'a self, keys: impl IntoIterator<Item = &'a [u8]>) -> Exclusive<'a> {
        stripes_of(keys)
            .into_iter()
            .filter_map(|i| self.stripes.get(i).map(RwLock::write))
            .collect()
    }

    /// Writes this thread's deferred blind writes (with `--sync`), unsynced: called before
    /// any command but a plain SET or MSET, so that it reads them. If the write fails, the
    /// thread's next `settle` fails too (their `+OK`s must not be sent).
    ///
    /// # Errors
    /// The engine's error.
    pub fn prepare(&self) -> Result<()> {
        let r = self.write_pending(false);
        if r.is_err() {
            SYNC_FAILED.with(|c| c.set(true));
        }
        r.map(|_| ())
    }

    fn write_pending(&self, sync: bool) -> Result<bool> {
        let Some((b, keys)) = PENDING.with(|p| p.borrow_mut().take()) else {
            return Ok(false);
        };
        let _g = self.shared(keys.iter().map(Vec::as_slice));
        self.committer
            .write(&self.db, &WriteOptions { sync }, b)
            .map_err(map_commit)?;
        if !sync {
            SYNC_OWED.with(|c| c.set(true));
        }
        Ok(true)
    }

    /// Makes this thread's writes durable (with `--sync`; without it there is nothing to
    /// do): writes the deferred blind writes with sync on, or, if there are none but earlier
    /// writes went out unsynced, one tombstone of `SYNC_KEY` with sync on. Both go through
    /// the group commit, so concurrent connections share the fsync; the sync covers every
    /// earlier write (the WAL is a sequential log, and the engine syncs every older WAL
    /// before a synced write). The server calls it before
    /// it sends the replies of a read's requests.
    ///
    /// # Errors
    /// The engine's error (now or in an earlier `prepare`): the writes may not be durable.
    pub fn settle(&self) -> Result<()> {
        if SYNC_FAILED.with(|c| c.replace(false)) {
            PENDING.with(|p| p.borrow_mut().take());
            SYNC_OWED.with(|c| c.set(false));
            return Err(StoreError::Group(
                "an earlier write of this connection failed".into(),
            ));
        }
        if self.write_pending(true)? {
            SYNC_OWED.with(|c| c.set(false));
            return Ok(());
        }
        if !SYNC_OWED.with(|c| c.replace(false)) {
            return Ok(());
        }
        let mut b = WriteBatch::new();
        b.delete(SYNC_KEY);
        self.committer
            .write(&self.db, &self.wopts, b)
            .map_err(map_commit)
    }

    /// Writes a batch through the group commit. With `--sync` it does not wait for the
    /// fsync: the thread then owes a sync, which `settle` pays (so a pipeline of writes,
    /// and a read-modify-write holding its stripe lock, do not wait for one fsync each).
    fn write(&self, batch: WriteBatch) -> Result<()> {
        let r = self
            .committer
            .write(&self.db, &WriteOptions { sync: false }, batch)
            .map_err(map_commit);
        if self.wopts.sync {
            SYNC_OWED.with(|c| c.set(true));
        }
        r
    }

    /// The metadata of `key`.
    ///
    /// # Errors
    /// Engine errors, `Corrupt`.
    pub fn meta(&self, key: &[u8]) -> Result<Option<Meta>> {
        match self.db.get(&meta_key(key))? {
            None => Ok(None),
            Some(v) => decode_meta(&v).map(Some),
        }
    }

    /// GET: the string value of `key`.
    ///
    /// # Errors
    /// `WrongType` for a hash.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.meta(key)? {
            None => Ok(None),
            Some(Meta::Str(v)) => Ok(Some(v)),
            Some(Meta::Hash { .. }) => Err(StoreError::WrongType),
        }
    }

    /// MGET: values of strings, `None` for missing keys and other types.
    ///
    /// # Errors
    /// Engine errors.
    pub fn mget(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let mk: Vec<Vec<u8>> = keys.iter().map(|k| meta_key(k)).collect();
        let vals = self.db.multi_get(mk.iter().map(Vec::as_slice))?;
        Ok(vals
            .into_iter()
            .map(|v| match v.as_deref().map(decode_meta) {
                Some(Ok(Meta::Str(s))) => Some(s),
                _ => None,
            })
            .collect())
    }

    /// SET without options: a blind write.
    ///
    /// # Errors
    /// Engine errors.
    pub fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.wopts.sync {
            PENDING.with(|p| {
                let mut p = p.borrow_mut();
                let (b, keys) = p.get_or_insert_with(Default::default);
                b.put(&meta_key(key), &string_value(value));
                keys.push(key.to_vec());
            });
            return Ok(());
        }
        let _g = self.shared([key]);
        let mut b = WriteBatch::new();
        b.put(&meta_key(key), &string_value(value));
        self.write(b)
    }

    /// SET with NX / XX / GET. Returns (whether it was set, the old value if `get`).
    ///
    /// # Errors
    /// `WrongType` with `get` on a hash.
    pub fn set_with(
        &self,
        key: &[u8],
        value: &[u8],
        nx: bool,
        xx: bool,
        get: bool,
    ) -> Result<(bool, Option<Vec<u8>>)> {
        let _g = self.exclusive([key]);
        let old = self.meta(key)?;
        let old_value = match (&old, get) {
            (Some(Meta::Hash { .. }), true) => return Err(StoreError::WrongType),
            (Some(Meta::Str(v)), true) => Some(v.clone()),
            _ => None,
        };
        if (nx && old.is_some()) || (xx && old.is_none()) {
            return Ok((false, old_value));
        }
        let mut b = WriteBatch::new();
        self.drop_fields(&mut b, key, old.as_ref())?;
        b.put(&meta_key(key), &string_value(value));
        self.write(b)?;
        Ok((true, old_value))
    }

    /// MSET: blind writes of every pair, atomically.
    ///
    /// # Errors
    /// Engine errors.
    pub fn mset(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let _g = (!self.wopts.sync).then(|| self.shared(pairs.iter().map(|p| p.0)));
        let size = pairs
            .iter()
            .map(|(k, v)| WriteBatch::put_size(k, v) + 2)
            .sum();
        let mut b = WriteBatch::with_capacity(size);
        // One key buffer and one value buffer for every pair.
        let (mut mk, mut mv) = (vec![META], vec![T_STRING]);
        for (k, v) in pairs {
            mk.truncate(1);
            mk.extend_from_slice(k);
            mv.truncate(1);
            mv.extend_from_slice(v);
            b.put(&mk, &mv);
        }
        if self.wopts.sync {
            PENDING.with(|p| {
                let mut p = p.borrow_mut();
                let (pb, keys) = p.get_or_insert_with(Default::default);
                pb.append(&b);
                keys.extend(pairs.iter().map(|(k, _)| k.to_vec()));
            });
            return Ok(());
        }
        self.write(b)
    }

    /// Adds deletes of every field of the hash `old` describes (if it is one).
    fn drop_fields(&self, b: &mut WriteBatch, key: &[u8], old: Option<&Meta>) -> Result<()> {
        if let Some(Meta::Hash { version, .. }) = old {
            for kv in self.db.prefix(field_prefix(key, *version)) {
                let (k, _) = kv?;
                b.delete(&k);
            }
        }
        Ok(())
    }

    /// DEL / UNLINK: deletes keys (and a hash's fields); returns how many existed.
    ///
    /// # Errors
    /// Engine errors.
    pub fn del(&self, keys: &[Vec<u8>]) -> Result<i64> {
        let _g = self.exclusive(keys.iter().map(Vec::as_slice));
        let mut b = WriteBatch::new();
        let mut n = 0;
        let mut seen = std::collections::HashSet::new();
        for k in keys {
            if !seen.insert(k.as_slice()) {
                continue;
            }
            if let Some(m) = self.meta(k)? {
                n += 1;
                self.drop_fields(&mut b, k, Some(&m))?;
                b.delete(&meta_key(k));
            }
        }
        if !b.is_empty() {
            self.write(b)?;
        }
        Ok(n)
    }

    /// EXISTS: how many of `keys` exist (a key named twice counts twice).
    ///
    /// # Errors
    /// Engine errors.
    pub fn exists(&self, keys: &[Vec<u8>]) -> Result<i64> {
        let mk: Vec<Vec<u8>> = keys.iter().map(|k| meta_key(k)).collect();
        let vals = self.db.multi_get(mk.iter().map(Vec::as_slice))?;
        Ok(vals
            .iter()
            .filter(|v| v.is_some())
            .count()
            .try_into()
            .unwrap_or(i64::MAX))
    }

    /// INCRBY: adds `delta` to the integer in `key` (missing = 0); returns the new value.
    ///
    /// # Errors
    /// `NotInteger`, `Overflow`, `WrongType`.
    pub fn incr_by(&self, key: &[u8], delta: i64) -> Result<i64> {
        let _g = self.exclusive([key]);
        let cur = match self.meta(key)? {
            None => 0,
            Some(Meta::Str(v)) => crate::resp::parse_i64(&v).ok_or(StoreError::NotInteger)?,
            Some(Meta::Hash { .. }) => return Err(StoreError::WrongType),
        };
        let new = cur.checked_add(delta).ok_or(StoreError::Overflow)?;
        let mut b = WriteBatch::new();
        b.put(&meta_key(key), &string_value(new.to_string().as_bytes()));
        self.write(b)?;
        Ok(new)
    }

    /// Read-modify-write of a string: `f` gets the current bytes (empty if missing) and
    /// changes them; returns the new length.
    fn modify_string(
        &self,
        key: &[u8],
        f: impl FnOnce(&mut Vec<u8>) -> Result<()>,
    ) -> Result<usize> {
        let _g = self.exclusive([key]);
        let mut v = match self.meta(key)? {
            None => Vec::new(),
            Some(Meta::Str(v)) => v,
            Some(Meta::Hash { .. }) => return Err(StoreError::WrongType),
        };
        f(&mut v)?;
        let mut b = WriteBatch::new();
        b.put(&meta_key(key), &string_value(&v));
        self.write(b)?;
        Ok(v.len())
    }

    /// APPEND: returns the new length.
    ///
    /// # Errors
    /// `WrongType`, `TooBig`.
    pub fn append(&self, key: &[u8], tail: &[u8]) -> Result<usize> {
        self.modify_string(key, |v| {
            if v.len().saturating_add(tail.len()) > MAX_STRING {
                return Err(StoreError::TooBig);
            }
            v.extend_from_slice(tail);
            Ok(())
        })
    }

    /// SETRANGE: overwrites from `offset`, zero-padding; returns the new length. An empty
    /// `data` does not create a missing key (as Redis).
    ///
    /// # Errors
    /// `WrongType`, `TooBig`.
    pub fn setrange(&self, key: &[u8], offset: usize, data: &[u8]) -> Result<usize> {
        if data.is_empty() {
            return match self.meta(key)? {
                None => Ok(0),
                Some(Meta::Str(v)) => Ok(v.len()),
                Some(Meta::Hash { .. }) => Err(StoreError::WrongType),
            };
        }
        let end = offset.checked_add(data.len()).ok_or(StoreError::TooBig)?;
        if end > MAX_STRING {
            return Err(StoreError::TooBig);
        }
        self.modify_string(key, |v| {
            if v.len() < end {
                v.resize(end, 0);
            }
            if let Some(dst) = v.get_mut(offset..end) {
                dst.copy_from_slice(data);
            }
            Ok(())
        })
    }

    fn next_version(&self) -> u64 {
        self.version.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The hash's (version, len), `None` if missing.
    fn hash_meta(&self, key: &[u8]) -> Result<Option<(u64, u64)>> {
        match self.meta(key)? {
            None => Ok(None),
            Some(Meta::Hash { version, len }) => Ok(Some((version, len))),
            Some(Meta::Str(_)) => Err(StoreError::WrongType),
        }
    }

    /// HSET: sets fields; returns how many were new.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<i64> {
        let _g = self.exclusive([key]);
        let (version, mut len) = match self.hash_meta(key)? {
            Some(m) => m,
            None => (self.next_version(), 0),
        };
        let mut b = WriteBatch::new();
        let mut added = 0;
        let mut new_in_batch = std::collections::HashSet::new();
        for (f, v) in pairs {
            let fk = field_key(key, version, f);
            if self.db.get(&fk)?.is_none() && new_in_batch.insert(fk.clone()) {
                added += 1;
            }
            b.put(&fk, v);
        }
        len += added;
        b.put(&meta_key(key), &hash_value(version, len));
        self.write(b)?;
        Ok(i64::try_from(added).unwrap_or(i64::MAX))
    }

    /// HGET.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.hash_meta(key)? {
            None => Ok(None),
            Some((version, _)) => Ok(self.db.get(&field_key(key, version, field))?),
        }
    }

    /// HMGET.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hmget(&self, key: &[u8], fields: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        match self.hash_meta(key)? {
            None => Ok(vec![None; fields.len()]),
            Some((version, _)) => {
                let ks: Vec<Vec<u8>> = fields.iter().map(|f| field_key(key, version, f)).collect();
                Ok(self.db.multi_get(ks.iter().map(Vec::as_slice))?)
            }
        }
    }

    /// HDEL: returns how many fields existed; deletes the hash when it becomes empty.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hdel(&self, key: &[u8], fields: &[Vec<u8>]) -> Result<i64> {
        let _g = self.exclusive([key]);
        let Some((version, len)) = self.hash_meta(key)? else {
            return Ok(0);
        };
        let mut b = WriteBatch::new();
        let mut removed = std::collections::HashSet::new();
        for f in fields {
            let fk = field_key(key, version, f);
            if !removed.contains(&fk) && self.db.get(&fk)?.is_some() {
                b.delete(&fk);
                removed.insert(fk);
            }
        }
        let n = u64::try_from(removed.len()).unwrap_or(u64::MAX);
        if n == 0 {
            return Ok(0);
        }
        let left = len.saturating_sub(n);
        if left == 0 {
            b.delete(&meta_key(key));
        } else {
            b.put(&meta_key(key), &hash_value(version, left));
        }
        self.write(b)?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }

    /// HLEN.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hlen(&self, key: &[u8]) -> Result<i64> {
        Ok(self
            .hash_meta(key)?
            .map_or(0, |(_, len)| i64::try_from(len).unwrap_or(i64::MAX)))
    }

    /// HGETALL: field, value pairs in field order.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hgetall(&self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let Some((version, _)) = self.hash_meta(key)? else {
            return Ok(Vec::new());
        };
        let prefix = field_prefix(key, version);
        let mut out = Vec::new();
        for kv in self.db.prefix(&prefix) {
            let (k, v) = kv?;
            out.push((k.get(prefix.len()..).unwrap_or_default().to_vec(), v));
        }
        Ok(out)
    }

    fn cursor_start(&self, cursor: u64) -> Result<Option<Vec<u8>>> {
        if cursor == 0 {
            return Ok(None);
        }
        self.cursors
            .lock()
            .by_id
            .get(&cursor)
            .cloned()
            .map(Some)
            .ok_or(StoreError::BadCursor)
    }

    fn cursor_save(&self, last: Vec<u8>) -> u64 {
        let mut c = self.cursors.lock();
        c.next = c.next.wrapping_add(1).max(1);
        let id = c.next;
        c.by_id.insert(id, last);
        c.order.push_back(id);
        while c.order.len() > CURSORS_KEPT {
            if let Some(old) = c.order.pop_front() {
                c.by_id.remove(&old);
            }
        }
        id
    }

    /// Walks the engine keys under `prefix` after `after` (the suffix past the prefix),
    /// looking at up to `count` entries; `keep` decides what to return for each. Returns
    /// the page with a cursor on the last entry looked at (0 at the end).
    fn scan_prefix(
        &self,
        prefix: &[u8],
        cursor: u64,
        count: usize,
        mut keep: impl FnMut(&[u8], &[u8], &mut Vec<Vec<u8>>) -> Result<()>,
    ) -> Result<ScanPage> {
        let after = self.cursor_start(cursor)?;
        let opts = ReadOptions {
            lower_bound: Some(prefix.to_vec()),
            upper_bound: prefix_end(prefix),
            ..ReadOptions::default()
        };
        let mut it = self.db.cursor(&opts)?;
        match &after {
            None => it.seek(prefix),
            Some(a) => {
                let mut k = prefix.to_vec();
                k.extend_from_slice(a);
                k.push(0);
                it.seek(&k);
            }
        }
        let mut page = ScanPage::default();
        let mut looked = 0;
        let mut last = None;
        while it.valid() && looked < count.max(1) {
            let suffix = it.key().get(prefix.len()..).unwrap_or_default();
            keep(suffix, it.value(), &mut page.items)?;
            last = Some(suffix.to_vec());
            looked += 1;
            it.next();
        }
        it.status()?;
        if it.valid()
            && let Some(last) = last
        {
            page.cursor = self.cursor_save(last);
        }
        Ok(page)
    }

    /// SCAN: top-level keys after the cursor, matching the filter.
    ///
    /// # Errors
    /// `BadCursor`, engine errors.
    pub fn scan(&self, cursor: u64, filter: &ScanFilter, count: usize) -> Result<ScanPage> {
        self.scan_prefix(&[META], cursor, count, |key, value, out| {
            if filter
                .pattern
                .as_ref()
                .is_some_and(|p| !glob::matches(p, key))
            {
                return Ok(());
            }
            if let Some(t) = &filter.type_name {
                let is = match value.first() {
                    Some(&T_STRING) => &b"string"[..],
                    Some(&T_HASH) => b"hash",
                    _ => b"",
                };
                if !t.eq_ignore_ascii_case(is) {
                    return Ok(());
                }
            }
            out.push(key.to_vec());
            Ok(())
        })
    }

    /// HSCAN: fields and values after the cursor, fields matching `pattern`.
    ///
    /// # Errors
    /// `WrongType`, `BadCursor`.
    pub fn hscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<ScanPage> {
        let Some((version, _)) = self.hash_meta(key)? else {
            // Like Redis: a missing key is an empty, complete scan (the cursor is ignored).
            return Ok(ScanPage::default());
        };
        self.scan_prefix(&field_prefix(key, version), cursor, count, |f, v, out| {
            if pattern.is_none_or(|p| glob::matches(p, f)) {
                out.push(f.to_vec());
                out.push(v.to_vec());
            }
            Ok(())
        })
    }

    /// KEYS: every top-level key matching `pattern`, in key order.
    ///
    /// # Errors
    /// Engine errors.
    pub fn keys(&self, pattern: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut prefix = vec![META];
        prefix.extend_from_slice(&glob::literal_prefix(pattern));
        let mut out = Vec::new();
        for kv in self.db.prefix(&prefix) {
            let (k, _) = kv?;
            let key = k.get(1..).unwrap_or_default();
            if glob::matches(pattern, key) {
                out.push(key.to_vec());
            }
        }
        Ok(out)
    }

    /// DBSIZE: the number of top-level keys (counted by a scan of the metadata: exact
    /// for one snapshot, linear in the number of keys).
    ///
    /// # Errors
    /// Engine errors.
    pub fn dbsize(&self) -> Result<u64> {
        let mut n = 0;
        for kv in self.db.prefix([META]) {
            kv?;
            n += 1;
        }
        Ok(n)
    }

    /// FLUSHDB: deletes every key (all stripes held exclusively meanwhile).
    ///
    /// # Errors
    /// Engine errors.
    pub fn flushdb(&self) -> Result<()> {
        let _all: Exclusive<'_> = self.stripes.iter().map(RwLock::write).collect();
        let mut b = WriteBatch::new();
        for kv in self.db.iter() {
            let (k, _) = kv?;
            b.delete(&k);
            if b.len() >= 10_000 {
                self.write(std::mem::take(&mut b))?;
            }
        }
        if !b.is_empty() {
            self.write(b)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mezzanine::Options;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        (dir, Store::new(db, false))
    }

    #[test]
    fn strings_and_hashes_keep_their_types() {
        let (_d, s) = store();
        s.set(b"a", b"1").expect("set");
        assert_eq!(
            s.hset(b"h", &[(b"f", b"v"), (b"g", b"w"), (b"f", b"x")])
                .expect("hset"),
            2
        );
        assert!(matches!(s.get(b"h"), Err(StoreError::WrongType)));
        assert!(matches!(s.hget(b"a", b"f"), Err(StoreError::WrongType)));
        assert_eq!(s.hget(b"h", b"f").expect("hget"), Some(b"x".to_vec()));
        assert_eq!(s.hlen(b"h").expect("hlen"), 2);
        assert_eq!(
            s.keys(b"*").expect("keys"),
            vec![b"a".to_vec(), b"h".to_vec()]
        );
        assert_eq!(s.dbsize().expect("dbsize"), 2);
        // A SET over a hash makes it a string; a new HSET starts an empty hash.
        s.set(b"h", b"s").expect("set");
        assert_eq!(s.get(b"h").expect("get"), Some(b"s".to_vec()));
        assert_eq!(s.del(&[b"h".to_vec()]).expect("del"), 1);
        assert_eq!(s.hset(b"h", &[(b"z", b"1")]).expect("hset"), 1);
        assert_eq!(
            s.hgetall(b"h").expect("hgetall"),
            vec![(b"z".to_vec(), b"1".to_vec())]
        );
        assert_eq!(
            s.hdel(b"h", &[b"z".to_vec(), b"z".to_vec()]).expect("hdel"),
            1
        );
        assert_eq!(s.meta(b"h").expect("meta"), None);
    }

    #[test]
    fn del_of_a_hash_removes_its_fields() {
        let (_d, s) = store();
        s.hset(b"h", &[(b"f", b"v")]).expect("hset");
        assert_eq!(
            s.del(&[b"h".to_vec(), b"h".to_vec(), b"nope".to_vec()])
                .expect("del"),
            1
        );
        assert_eq!(s.db().iter().count(), 0, "no engine key is left");
    }

    #[test]
    fn scan_cursor_survives_writes() {
        let (_d, s) = store();
        for i in 0..50 {
            s.set(format!("k{i:02}").as_bytes(), b"v").expect("set");
        }
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            let page = s.scan(cursor, &ScanFilter::default(), 7).expect("scan");
            seen.extend(page.items);
            // Writes between pages: a key before the cursor and one far after it.
            s.set(b"a-before", b"v").expect("set");
            cursor = page.cursor;
            if cursor == 0 {
                break;
            }
        }
        let want: Vec<Vec<u8>> = (0..50).map(|i| format!("k{i:02}").into_bytes()).collect();
        assert_eq!(seen, want);
        assert!(matches!(
            s.scan(12345, &ScanFilter::default(), 10),
            Err(StoreError::BadCursor)
        ));
    }

    #[test]
    fn incr_append_setrange() {
        let (_d, s) = store();
        assert_eq!(s.incr_by(b"n", 5).expect("incr"), 5);
        assert_eq!(s.incr_by(b"n", -7).expect("incr"), -2);
        s.set(b"m", &i64::MAX.to_string().into_bytes())
            .expect("set");
        assert!(matches!(s.incr_by(b"m", 1), Err(StoreError::Overflow)));
        s.set(b"t", b"x1").expect("set");
        assert!(matches!(s.incr_by(b"t", 1), Err(StoreError::NotInteger)));
        assert_eq!(s.append(b"t", b"yz").expect("append"), 4);
        assert_eq!(s.setrange(b"t", 6, b"!").expect("setrange"), 7);
        assert_eq!(s.get(b"t").expect("get"), Some(b"x1yz\0\0!".to_vec()));
        assert!(matches!(
            s.setrange(b"t", MAX_STRING, b"x"),
            Err(StoreError::TooBig)
        ));
    }

    #[test]
    fn synced_writes_share_one_sync_at_settle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let s = Store::new(db, true);
        let syncs = s.db().stats().wal_syncs;
        assert_eq!(s.incr_by(b"n", 2).expect("incr"), 2);
        assert_eq!(s.hset(b"h", &[(b"f", b"v")]).expect("hset"), 1);
        assert_eq!(s.db().stats().wal_syncs, syncs, "no sync before settle");
        s.settle().expect("settle");
        assert_eq!(s.db().stats().wal_syncs, syncs + 1, "one sync for both");
        // Blind writes wait for settle, and are written with its sync.
        s.set(b"b", b"1").expect("set");
        s.mset(&[(b"c", b"2")]).expect("mset");
        let syncs = s.db().stats().wal_syncs;
        s.prepare().expect("prepare");
        assert_eq!(s.get(b"b").expect("get"), Some(b"1".to_vec()));
        s.set(b"d", b"3").expect("set");
        s.settle().expect("settle");
        assert_eq!(s.db().stats().wal_syncs, syncs + 1);
        assert_eq!(s.get(b"d").expect("get"), Some(b"3".to_vec()));
        s.del(&[b"b".to_vec(), b"c".to_vec(), b"d".to_vec()])
            .expect("del");
        s.settle().expect("settle");
        // The sync record is not a key.
        assert_eq!(
            s.keys(b"*").expect("keys"),
            vec![b"h".to_vec(), b"n".to_vec()]
        );
        assert_eq!(s.dbsize().expect("dbsize"), 2);
        // A command that writes nothing owes no sync.
        let before = s.db().stats().wal_syncs;
        assert!(!s.set_with(b"n", b"x", true, false, false).expect("nx").0);
        s.settle().expect("settle");
        assert_eq!(s.db().stats().wal_syncs, before);
    }

    #[test]
    fn concurrent_incr_loses_nothing() {
        let (_d, s) = store();
        let s = std::sync::Arc::new(s);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..250 {
                        s.incr_by(b"c", 1).expect("incr");
                        s.set(b"other", b"x").expect("set");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        assert_eq!(s.get(b"c").expect("get"), Some(b"1000".to_vec()));
    }
}
