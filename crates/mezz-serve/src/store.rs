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
//! Writes are staged, not written at once: every command that writes adds its writes to
//! one pending batch (and to an overlay by engine key, which every point read consults
//! first), and `Store::commit` gives the engine the whole batch in one write (one fsync
//! with `--sync`). The server commits once per round of its event loop, before it sends
//! the round's replies, so the writes of every connection in a round share one WAL write;
//! a command that scans the engine (SCAN, KEYS, HGETALL, DBSIZE, a DEL of a hash...) first
//! writes the staged batch, unsynced, so that it sees every earlier write.
//!
//! Invariants: every command that reads before it writes holds the exclusive stripe lock
//! of each key it changes; blind writes (SET without options, MSET) hold the shared one.
//! So a read-modify-write never interleaves with another write to the same key. Stripes
//! of several keys are taken in ascending order (no deadlock). A command's writes are
//! staged under one lock, so a commit holds all of them or none. A write is in the
//! overlay until the engine has it (the overlay is cleared under the same lock, after the
//! engine write), so a point read sees it in one place or the other.
//!
//! Thread-safety: `Store` is `Send + Sync`, shared by every connection.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use mezzanine::{Db, ReadOptions, WriteBatch, WriteOptions};
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

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

/// The engine key whose tombstone `Store::commit` writes, synced, when writes went to the
/// engine unsynced since the last commit and none is left to carry the sync (namespace
/// `_`: reserved for the server, never a Redis key).
const SYNC_KEY: &[u8] = b"_sync";

/// Staged bytes past which the staged writes go to the engine before the next commit
/// (unsynced: the commit still syncs them), so one huge pipeline does not hold its
/// writes in memory twice.
const PENDING_BYTES: usize = 4 << 20;

/// Writes staged since the last commit, by engine key (`None`: a delete): the last write
/// of each key, which the commit gives the engine as one batch and every point read
/// consults first. Earlier writes of a key in the same commit are dropped: the batch is
/// applied atomically, so no reader (and no recovery) can ever see them.
#[derive(Debug)]
struct Pending {
    overlay: HashMap<Vec<u8>, Option<Vec<u8>>>,
    /// Bytes staged since the last engine write (overwritten ones included).
    bytes: usize,
    /// Staged writes went to the engine unsynced since the last commit (`--sync`).
    owed_sync: bool,
    /// A write to the engine failed since the last commit: the commit fails.
    failed: Option<String>,
}

impl Pending {
    fn put(&mut self, k: Vec<u8>, v: Vec<u8>) {
        self.bytes += k.len() + v.len();
        match self.overlay.get_mut(&k) {
            Some(slot) => *slot = Some(v),
            None => {
                self.overlay.insert(k, Some(v));
            }
        }
    }

    fn delete(&mut self, k: Vec<u8>) {
        self.bytes += k.len();
        match self.overlay.get_mut(&k) {
            Some(slot) => *slot = None,
            None => {
                self.overlay.insert(k, None);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.overlay.is_empty()
    }

    /// The engine batch of the staged writes (the overlay stays until the engine has it).
    fn batch(&self) -> WriteBatch {
        let size = self
            .overlay
            .iter()
            .map(|(k, v)| WriteBatch::put_size(k, v.as_deref().unwrap_or_default()))
            .sum();
        let mut b = WriteBatch::with_capacity(size);
        for (k, v) in &self.overlay {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        b
    }

    /// Forgets the staged writes once the engine has them (or failed to take them).
    fn clear(&mut self) {
        self.overlay.clear();
        self.bytes = 0;
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

/// `decode_meta` of a value read whole, without copying a string's bytes again.
fn decode_meta_owned(mut v: Vec<u8>) -> Result<Meta> {
    if v.first() == Some(&T_STRING) {
        v.remove(0);
        return Ok(Meta::Str(v));
    }
    decode_meta(&v)
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
    sync: bool,
    stripes: Vec<RwLock<()>>,
    pending: Mutex<Pending>,
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
            sync,
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
            pending: Mutex::new(Pending {
                overlay: HashMap::new(),
                bytes: 0,
                owed_sync: false,
                failed: None,
            }),
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
        self.sync
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

    /// Writes the staged writes to the engine now, unsynced (a commit still syncs them):
    /// the commands that scan the engine call it first, so the scan sees every earlier
    /// write. A failure also fails the next commit.
    fn drain(&self) -> Result<()> {
        let mut p = self.pending.lock();
        self.drain_locked(&mut p)
    }

    fn drain_locked(&self, p: &mut Pending) -> Result<()> {
        if p.is_empty() {
            return Ok(());
        }
        let r = self.db.write(&WriteOptions { sync: false }, p.batch());
        // Held under the lock until the engine has the writes, so a read sees each
        // write in the overlay or in the engine.
        p.clear();
        match r {
            Ok(()) => {
                p.owed_sync |= self.sync;
                Ok(())
            }
            Err(e) => {
                p.failed.get_or_insert_with(|| e.to_string());
                Err(StoreError::Engine(e))
            }
        }
    }

    /// Stages writes: `f` adds them; past `PENDING_BYTES` they go to the engine.
    fn stage(&self, f: impl FnOnce(&mut Pending)) -> Result<()> {
        let mut p = self.pending.lock();
        f(&mut p);
        if p.bytes > PENDING_BYTES {
            self.drain_locked(&mut p)?;
        }
        Ok(())
    }

    /// Makes every write since the last commit durable as the options say: one engine
    /// write of the staged writes (synced with `--sync`; then, if nothing was staged but
    /// writes went out unsynced, one synced tombstone of `SYNC_KEY`, since the sync covers
    /// every earlier write of the sequential WAL). The server calls it once per round of
    /// its event loop, after running the requests that arrived and before sending their
    /// replies: the writes of every connection in a round share one WAL write and one
    /// fsync.
    ///
    /// # Errors
    /// The engine's error, now or in a write since the last commit: the writes since then
    /// may not be durable, and no reply that depends on them may be sent.
    pub fn commit(&self) -> Result<()> {
        let mut p = self.pending.lock();
        let failed = p.failed.take();
        let r = if !p.is_empty() {
            self.db.write(&WriteOptions { sync: self.sync }, p.batch())
        } else if p.owed_sync {
            let mut b = WriteBatch::new();
            b.delete(SYNC_KEY);
            self.db.write(&WriteOptions { sync: true }, b)
        } else {
            Ok(())
        };
        p.clear();
        p.owed_sync = false;
        drop(p);
        r?;
        match failed {
            Some(msg) => Err(StoreError::Group(msg)),
            None => Ok(()),
        }
    }

    /// The value of an engine key: the staged write if there is one, else the engine's.
    fn read(&self, k: &[u8]) -> Result<Option<Vec<u8>>> {
        {
            let p = self.pending.lock();
            // (An empty overlay is not hashed into: most reads come in rounds that write
            // nothing.)
            if !p.overlay.is_empty()
                && let Some(v) = p.overlay.get(k)
            {
                return Ok(v.clone());
            }
        }
        Ok(self.db.get(k)?)
    }

    /// `read` of several engine keys (one engine `multi_get` for those not staged).
    fn read_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut out: Vec<Option<Option<Vec<u8>>>> = {
            let p = self.pending.lock();
            keys.iter().map(|k| p.overlay.get(k).cloned()).collect()
        };
        let missing: Vec<&[u8]> = keys
            .iter()
            .zip(&out)
            .filter(|(_, o)| o.is_none())
            .map(|(k, _)| k.as_slice())
            .collect();
        if !missing.is_empty() {
            let mut found = self.db.multi_get(missing)?.into_iter();
            for o in &mut out {
                if o.is_none() {
                    *o = Some(found.next().flatten());
                }
            }
        }
        Ok(out.into_iter().map(Option::flatten).collect())
    }

    /// The metadata of `key`.
    ///
    /// # Errors
    /// Engine errors, `Corrupt`.
    pub fn meta(&self, key: &[u8]) -> Result<Option<Meta>> {
        match self.read(&meta_key(key))? {
            None => Ok(None),
            Some(v) => decode_meta_owned(v).map(Some),
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
        let vals = self.read_many(&mk)?;
        Ok(vals
            .into_iter()
            .map(|v| match v.map(decode_meta_owned) {
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
        let _g = self.shared([key]);
        self.stage(|p| p.put(meta_key(key), string_value(value)))
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
        let mut dels = Vec::new();
        self.drop_fields(&mut dels, key, old.as_ref())?;
        self.stage(|p| {
            dels.into_iter().for_each(|k| p.delete(k));
            p.put(meta_key(key), string_value(value));
        })?;
        Ok((true, old_value))
    }

    /// MSET: blind writes of every pair, atomically.
    ///
    /// # Errors
    /// Engine errors.
    pub fn mset(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let _g = self.shared(pairs.iter().map(|p| p.0));
        self.stage(|p| {
            for (k, v) in pairs {
                p.put(meta_key(k), string_value(v));
            }
        })
    }

    /// Adds the keys of every field of the hash `old` describes (if it is one) to `dels`.
    /// Scans the engine, so it first writes the staged writes.
    fn drop_fields(&self, dels: &mut Vec<Vec<u8>>, key: &[u8], old: Option<&Meta>) -> Result<()> {
        if let Some(Meta::Hash { version, .. }) = old {
            self.drain()?;
            for kv in self.db.prefix(field_prefix(key, *version)) {
                let (k, _) = kv?;
                dels.push(k);
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
        let mut dels = Vec::new();
        let mut n = 0;
        let mut seen = std::collections::HashSet::new();
        for k in keys {
            if !seen.insert(k.as_slice()) {
                continue;
            }
            if let Some(m) = self.meta(k)? {
                n += 1;
                self.drop_fields(&mut dels, k, Some(&m))?;
                dels.push(meta_key(k));
            }
        }
        if !dels.is_empty() {
            self.stage(|p| dels.into_iter().for_each(|k| p.delete(k)))?;
        }
        Ok(n)
    }

    /// EXISTS: how many of `keys` exist (a key named twice counts twice).
    ///
    /// # Errors
    /// Engine errors.
    pub fn exists(&self, keys: &[Vec<u8>]) -> Result<i64> {
        let mk: Vec<Vec<u8>> = keys.iter().map(|k| meta_key(k)).collect();
        let vals = self.read_many(&mk)?;
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
        self.stage(|p| p.put(meta_key(key), string_value(new.to_string().as_bytes())))?;
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
        let len = v.len();
        v.insert(0, T_STRING);
        self.stage(|p| p.put(meta_key(key), v))?;
        Ok(len)
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
        let mut puts = Vec::with_capacity(pairs.len() + 1);
        let mut added = 0;
        let mut new_in_batch = std::collections::HashSet::new();
        for (f, v) in pairs {
            let fk = field_key(key, version, f);
            if self.read(&fk)?.is_none() && new_in_batch.insert(fk.clone()) {
                added += 1;
            }
            puts.push((fk, v.to_vec()));
        }
        len += added;
        puts.push((meta_key(key), hash_value(version, len)));
        self.stage(|p| puts.into_iter().for_each(|(k, v)| p.put(k, v)))?;
        Ok(i64::try_from(added).unwrap_or(i64::MAX))
    }

    /// HGET.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.hash_meta(key)? {
            None => Ok(None),
            Some((version, _)) => self.read(&field_key(key, version, field)),
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
                self.read_many(&ks)
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
        let mut removed = std::collections::HashSet::new();
        for f in fields {
            let fk = field_key(key, version, f);
            if !removed.contains(&fk) && self.read(&fk)?.is_some() {
                removed.insert(fk);
            }
        }
        let n = u64::try_from(removed.len()).unwrap_or(u64::MAX);
        if n == 0 {
            return Ok(0);
        }
        let left = len.saturating_sub(n);
        self.stage(|p| {
            removed.into_iter().for_each(|k| p.delete(k));
            if left == 0 {
                p.delete(meta_key(key));
            } else {
                p.put(meta_key(key), hash_value(version, left));
            }
        })?;
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
        self.drain()?;
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
        self.drain()?;
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
        self.drain()?;
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
        self.drain()?;
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
        self.drain()?;
        let mut dels = Vec::new();
        for kv in self.db.iter() {
            let (k, _) = kv?;
            dels.push(k);
            if dels.len() >= 10_000 {
                self.stage(|p| dels.drain(..).for_each(|k| p.delete(k)))?;
            }
        }
        self.stage(|p| dels.into_iter().for_each(|k| p.delete(k)))
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
        s.commit().expect("commit");
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
    fn a_commit_writes_every_staged_write_with_one_sync() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let s = Store::new(db, true);
        let syncs = s.db().stats().wal_syncs;
        assert_eq!(s.incr_by(b"n", 2).expect("incr"), 2);
        assert_eq!(
            s.incr_by(b"n", 3).expect("incr"),
            5,
            "reads see staged writes"
        );
        assert_eq!(s.hset(b"h", &[(b"f", b"v")]).expect("hset"), 1);
        assert_eq!(s.hset(b"h", &[(b"f", b"w")]).expect("hset"), 0);
        s.set(b"b", b"1").expect("set");
        s.mset(&[(b"c", b"2"), (b"d", b"3")]).expect("mset");
        assert_eq!(
            s.mget(&[b"b".to_vec(), b"x".to_vec(), b"d".to_vec()])
                .expect("mget"),
            vec![Some(b"1".to_vec()), None, Some(b"3".to_vec())]
        );
        assert_eq!(s.db().get(b"kb").expect("engine get"), None, "staged only");
        assert_eq!(s.db().stats().wal_syncs, syncs, "no sync before the commit");
        s.commit().expect("commit");
        assert_eq!(s.db().stats().wal_syncs, syncs + 1, "one sync for all");
        assert_eq!(s.db().get(b"kb").expect("engine get"), Some(b"s1".to_vec()));
        // A scan writes the staged writes first (unsynced); the commit then syncs them
        // with a tombstone of the sync key, which is no key of the data.
        let syncs = s.db().stats().wal_syncs;
        s.del(&[b"b".to_vec(), b"c".to_vec(), b"d".to_vec()])
            .expect("del");
        assert_eq!(
            s.keys(b"*").expect("keys"),
            vec![b"h".to_vec(), b"n".to_vec()]
        );
        assert_eq!(s.db().stats().wal_syncs, syncs, "the scan did not sync");
        s.commit().expect("commit");
        assert_eq!(s.db().stats().wal_syncs, syncs + 1);
        assert_eq!(s.dbsize().expect("dbsize"), 2);
        assert_eq!(s.hgetall(b"h").expect("hgetall").len(), 1);
        // A command that writes nothing owes no sync.
        let before = s.db().stats().wal_syncs;
        assert!(!s.set_with(b"n", b"x", true, false, false).expect("nx").0);
        s.commit().expect("commit");
        assert_eq!(s.db().stats().wal_syncs, before);
        // The data survives a reopen.
        let Store { db, .. } = s;
        db.close().expect("close");
        let s = Store::new(
            Db::open(dir.path(), Options::default()).expect("reopen"),
            true,
        );
        assert_eq!(s.get(b"n").expect("get"), Some(b"5".to_vec()));
        assert_eq!(s.hget(b"h", b"f").expect("hget"), Some(b"w".to_vec()));
    }

    #[test]
    fn a_commit_writes_only_the_last_write_of_each_key() {
        let (_d, s) = store();
        let seq = s.db().stats().last_sequence;
        for _ in 0..100 {
            s.incr_by(b"n", 1).expect("incr");
            s.set(b"a", b"x").expect("set");
        }
        s.del(&[b"a".to_vec()]).expect("del");
        s.commit().expect("commit");
        assert_eq!(
            s.db().stats().last_sequence,
            seq + 2,
            "one engine entry per key: n = 100 and the delete of a"
        );
        assert_eq!(s.db().get(b"kn").expect("get"), Some(b"s100".to_vec()));
        assert_eq!(s.db().get(b"ka").expect("get"), None);
    }

    #[test]
    fn a_failed_write_fails_the_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let s = Store::new(db, false);
        s.set(b"a", b"1").expect("set");
        s.db().close().expect("close");
        assert!(
            s.commit().is_err(),
            "the staged write did not reach the engine"
        );
        // A scan's write fails too, and so does the next commit.
        s.set(b"a", b"1").expect("set");
        assert!(s.keys(b"*").is_err());
        assert!(s.commit().is_err());
        assert!(s.commit().is_ok(), "nothing is owed any more");
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
        s.commit().expect("commit");
        assert_eq!(s.db().get(b"kc").expect("get"), Some(b"s1000".to_vec()));
    }
}
