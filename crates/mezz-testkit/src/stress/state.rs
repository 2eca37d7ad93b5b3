//! The expected-state file of the kill -9 harness: what the database must hold for each key
//! after the writer process is killed at any instant.
//!
//! Owns: [`ExpectedState`], [`Slot`] and the file layout. The file is a 64-byte header
//! followed by one 64-byte slot per key, all little-endian:
//! - header: magic `MEZZEXP1` (8), key count `u32`, reserved `u32`, acknowledged ops `u64`,
//!   40 reserved bytes;
//! - slot: committed version `u64` (0 = no value), pending version `u64` (0 = delete),
//!   largest version ever used `u64`, batch id `u64` (0 = none), flags `u32` (bit 0: pending,
//!   bit 1: the batch id belongs to a write that was acknowledged), 20 reserved bytes,
//!   checksum `u32` (low half of FNV-1a 64 over the first 60 bytes).
//!
//! Every update writes one whole slot with a positional write (`FileExt::write_at`) inside
//! one page, so a process killed at any instant leaves each slot either before or after the
//! update. The write protocol: mark the slot pending (with a fresh version), issue the
//! database write, and commit the slot once the write is acknowledged. After a kill, a key
//! must hold its committed version, or its pending version if the slot is pending.
//!
//! Thread-safety: one writer process at a time; methods take `&mut self`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::value::fnv1a64;

/// Magic bytes at the start of the file.
const MAGIC: &[u8; 8] = b"MEZZEXP1";
/// Bytes of the header.
const HEADER_LEN: u64 = 64;
/// Bytes of one slot.
pub const SLOT_LEN: usize = 64;
/// Offset of the acknowledged-ops counter in the header.
const OPS_OFFSET: u64 = 16;

const FLAG_PENDING: u32 = 1;
const FLAG_BATCH_ACKED: u32 = 2;

/// What the database must hold for one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slot {
    /// The acknowledged value's version; `None` if the key has no value (never written or
    /// deleted).
    pub committed: Option<u64>,
    /// A write issued but not (known to be) acknowledged: `Some(Some(v))` a put of version
    /// `v`, `Some(None)` a delete.
    pub pending: Option<Option<u64>>,
    /// The largest version ever given to this key; new puts use a larger one.
    pub max_version: u64,
    /// Id of the batch that last wrote (or is writing) this key; 0 for single writes.
    pub batch: u64,
    /// Whether the batch `batch` was acknowledged (some of its slots may still be pending
    /// if the writer was killed while committing them).
    pub batch_acked: bool,
}

impl Slot {
    /// Whether `found` (the version read from the database, `None` for no value) is allowed.
    #[must_use]
    pub fn allows(&self, found: Option<u64>) -> bool {
        found == self.committed || self.pending == Some(found)
    }

    /// Encodes the slot.
    #[must_use]
    pub fn encode(&self) -> [u8; SLOT_LEN] {
        let mut b = [0u8; SLOT_LEN];
        let mut flags = 0;
        if self.pending.is_some() {
            flags |= FLAG_PENDING;
        }
        if self.batch_acked {
            flags |= FLAG_BATCH_ACKED;
        }
        let fields: [(usize, &[u8]); 5] = [
            (0, &self.committed.unwrap_or(0).to_le_bytes()),
            (8, &self.pending.flatten().unwrap_or(0).to_le_bytes()),
            (16, &self.max_version.to_le_bytes()),
            (24, &self.batch.to_le_bytes()),
            (32, &flags.to_le_bytes()),
        ];
        for (at, bytes) in fields {
            if let Some(dst) = b.get_mut(at..at + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
        }
        let sum = checksum(&b);
        if let Some(dst) = b.get_mut(SLOT_LEN - 4..) {
            dst.copy_from_slice(&sum.to_le_bytes());
        }
        b
    }

    /// Decodes a slot.
    ///
    /// # Errors
    /// `InvalidData` if the checksum or the flags are wrong.
    pub fn decode(b: &[u8]) -> io::Result<Slot> {
        let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
        if b.len() != SLOT_LEN {
            return Err(bad("slot has the wrong size"));
        }
        let u64_at = |at: usize| -> u64 {
            b.get(at..at + 8)
                .and_then(|s| <[u8; 8]>::try_from(s).ok())
                .map_or(0, u64::from_le_bytes)
        };
        let u32_at = |at: usize| -> u32 {
            b.get(at..at + 4)
                .and_then(|s| <[u8; 4]>::try_from(s).ok())
                .map_or(0, u32::from_le_bytes)
        };
        if u32_at(SLOT_LEN - 4) != checksum(b) {
            return Err(bad("slot checksum mismatch"));
        }
        let flags = u32_at(32);
        if flags & !(FLAG_PENDING | FLAG_BATCH_ACKED) != 0 {
            return Err(bad("slot has unknown flags"));
        }
        let version = |v: u64| (v != 0).then_some(v);
        Ok(Slot {
            committed: version(u64_at(0)),
            pending: (flags & FLAG_PENDING != 0).then(|| version(u64_at(8))),
            max_version: u64_at(16),
            batch: u64_at(24),
            batch_acked: flags & FLAG_BATCH_ACKED != 0,
        })
    }
}

fn checksum(slot: &[u8]) -> u32 {
    let body = slot.get(..SLOT_LEN - 4).unwrap_or(slot);
    (fnv1a64(body) & 0xffff_ffff) as u32
}

fn slot_offset(k: u32) -> u64 {
    HEADER_LEN + u64::from(k) * SLOT_LEN as u64
}

/// The expected-state file, with an in-memory copy of every slot.
#[derive(Debug)]
pub struct ExpectedState {
    path: PathBuf,
    file: File,
    slots: Vec<Slot>,
    ops: u64,
}

impl ExpectedState {
    /// Creates (or truncates) the file for `keys` keys, none of them holding a value.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(path: &Path, keys: u32) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        let mut header = [0u8; HEADER_LEN as usize];
        if let Some(d) = header.get_mut(..8) {
            d.copy_from_slice(MAGIC);
        }
        if let Some(d) = header.get_mut(8..12) {
            d.copy_from_slice(&keys.to_le_bytes());
        }
        file.write_all_at(&header, 0)?;
        let empty = Slot::default().encode();
        let mut all = Vec::with_capacity(keys as usize * SLOT_LEN);
        for _ in 0..keys {
            all.extend_from_slice(&empty);
        }
        file.write_all_at(&all, HEADER_LEN)?;
        file.sync_all()?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            slots: vec![Slot::default(); keys as usize],
            ops: 0,
        })
    }

    /// Opens an existing file and reads every slot.
    ///
    /// # Errors
    /// I/O errors; `InvalidData` for a bad magic, a short file or a damaged slot (naming
    /// the key).
    pub fn open(path: &Path) -> io::Result<Self> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let mut header = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0)
            .map_err(|e| bad(format!("{}: header: {e}", path.display())))?;
        if header.get(..8) != Some(MAGIC.as_slice()) {
            return Err(bad(format!(
                "{}: not an expected-state file (bad magic)",
                path.display()
            )));
        }
        let le = |at: usize, n: usize| -> u64 {
            header.get(at..at + n).map_or(0, |s| {
                s.iter()
                    .rev()
                    .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
            })
        };
        let keys = u32::try_from(le(8, 4)).unwrap_or(0);
        let ops = le(OPS_OFFSET as usize, 8);
        let expected_len = slot_offset(keys);
        let len = file.metadata()?.len();
        if len != expected_len {
            return Err(bad(format!(
                "{}: {len} bytes, expected {expected_len} for {keys} keys",
                path.display()
            )));
        }
        let mut all = vec![0u8; keys as usize * SLOT_LEN];
        file.read_exact_at(&mut all, HEADER_LEN)?;
        let mut slots = Vec::with_capacity(keys as usize);
        for (k, chunk) in all.chunks_exact(SLOT_LEN).enumerate() {
            slots.push(
                Slot::decode(chunk)
                    .map_err(|e| bad(format!("{}: key {k}: {e}", path.display())))?,
            );
        }
        Ok(Self {
            path: path.to_path_buf(),
            file,
            slots,
            ops,
        })
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of keys.
    #[must_use]
    pub fn keys(&self) -> u32 {
        u32::try_from(self.slots.len()).unwrap_or(u32::MAX)
    }

    /// Acknowledged ops recorded so far (over every round).
    #[must_use]
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// The slot of key `k` (a default slot for a key out of range).
    #[must_use]
    pub fn slot(&self, k: u32) -> Slot {
        self.slots.get(k as usize).copied().unwrap_or_default()
    }

    /// Every slot, by key.
    #[must_use]
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Replaces the slot of key `k`, in memory and in the file.
    ///
    /// # Errors
    /// I/O errors; `InvalidInput` for a key out of range.
    pub fn set(&mut self, k: u32, slot: Slot) -> io::Result<()> {
        let s = self.slots.get_mut(k as usize).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("key {k} out of range"))
        })?;
        *s = slot;
        self.file.write_all_at(&slot.encode(), slot_offset(k))
    }

    /// Marks key `k` pending with a put of a fresh version (returned), as part of batch
    /// `batch` (0 for a single write).
    ///
    /// # Errors
    /// As [`ExpectedState::set`].
    pub fn begin_put(&mut self, k: u32, batch: u64) -> io::Result<u64> {
        let mut s = self.slot(k);
        let v = s.max_version + 1;
        s.max_version = v;
        s.pending = Some(Some(v));
        s.batch = batch;
        s.batch_acked = false;
        self.set(k, s)?;
        Ok(v)
    }

    /// Marks key `k` pending with a delete, as part of batch `batch` (0 for a single write).
    ///
    /// # Errors
    /// As [`ExpectedState::set`].
    pub fn begin_delete(&mut self, k: u32, batch: u64) -> io::Result<()> {
        let mut s = self.slot(k);
        s.pending = Some(None);
        s.batch = batch;
        s.batch_acked = false;
        self.set(k, s)
    }

    /// Commits key `k`'s pending write (its write was acknowledged). No-op if not pending.
    ///
    /// # Errors
    /// As [`ExpectedState::set`].
    pub fn commit(&mut self, k: u32) -> io::Result<()> {
        let mut s = self.slot(k);
        let Some(p) = s.pending.take() else {
            return Ok(());
        };
        s.committed = p;
        s.batch_acked = s.batch != 0;
        self.set(k, s)
    }

    /// Settles key `k` to what the database was found to hold after a kill: the committed
    /// version becomes `found` and the slot stops being pending.
    ///
    /// # Errors
    /// As [`ExpectedState::set`].
    pub fn resolve(&mut self, k: u32, found: Option<u64>) -> io::Result<()> {
        let mut s = self.slot(k);
        s.committed = found;
        s.pending = None;
        s.batch = 0;
        s.batch_acked = false;
        if let Some(v) = found {
            s.max_version = s.max_version.max(v);
        }
        self.set(k, s)
    }

    /// Adds `n` to the acknowledged-ops counter in the header.
    ///
    /// # Errors
    /// I/O errors.
    pub fn add_ops(&mut self, n: u64) -> io::Result<()> {
        self.ops += n;
        self.file.write_all_at(&self.ops.to_le_bytes(), OPS_OFFSET)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip() {
        let slots = [
            Slot::default(),
            Slot {
                committed: Some(7),
                pending: Some(None),
                max_version: 9,
                batch: 3,
                batch_acked: false,
            },
            Slot {
                committed: None,
                pending: Some(Some(10)),
                max_version: 10,
                batch: 0,
                batch_acked: false,
            },
            Slot {
                committed: Some(u64::MAX),
                pending: None,
                max_version: u64::MAX,
                batch: 42,
                batch_acked: true,
            },
        ];
        for s in slots {
            assert_eq!(Slot::decode(&s.encode()).unwrap(), s);
        }
    }

    #[test]
    fn damaged_slots_are_rejected() {
        let b = Slot {
            committed: Some(1),
            ..Slot::default()
        }
        .encode();
        for i in 0..SLOT_LEN {
            let mut c = b;
            c[i] ^= 1;
            assert!(Slot::decode(&c).is_err(), "flip at {i}");
        }
        assert!(Slot::decode(&b[..SLOT_LEN - 1]).is_err());
    }

    #[test]
    fn allows_committed_or_pending_only() {
        let s = Slot {
            committed: Some(3),
            pending: Some(Some(4)),
            max_version: 4,
            ..Slot::default()
        };
        assert!(s.allows(Some(3)));
        assert!(s.allows(Some(4)));
        assert!(!s.allows(None));
        assert!(!s.allows(Some(2)));
        let d = Slot {
            committed: Some(3),
            pending: Some(None),
            ..Slot::default()
        };
        assert!(d.allows(None));
        assert!(d.allows(Some(3)));
        let c = Slot {
            committed: Some(3),
            ..Slot::default()
        };
        assert!(!c.allows(None));
    }
}
