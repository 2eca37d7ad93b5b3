//! A pool file of persistent memory: a checked superblock followed by a data area that is
//! handed out in extents.
//!
//! Owns: [`Pool`] (one mapped pool file, its superblock, and the volatile free list of its
//! data area). The on-media format is described in `docs/formats/nvm-pool.md`.
//!
//! Layout: the first [`SUPERBLOCK_SIZE`] bytes hold the superblock (only its first 64 bytes
//! are used, see [`Superblock`]); the data area is `[DATA_OFFSET, capacity)`. Extents are
//! aligned to [`EXTENT_ALIGN`] (4 KiB) in offset and length, so that two extents never
//! share a page (an `msync` of one never writes another) or a cache line.
//!
//! Invariants:
//! 1. The superblock is written and made durable once, by [`Pool::create`], and never
//!    changes; [`Pool::open`] refuses a pool whose superblock is damaged, whose file is
//!    shorter than its capacity, or which belongs to another database, with typed errors
//!    (never a panic).
//! 2. No allocation state is stored in the pool: the caller records the extents it uses in
//!    its own durable metadata (the engine's manifest) and passes them back to `open`;
//!    everything else is free. An extent allocated but not yet recorded when the power
//!    fails is therefore free again after recovery.
//! 3. The bytes of a freshly allocated extent are whatever was there before (use
//!    [`Pool::alloc_zeroed`] for zeros).
//!
//! Thread-safety: `Pool` is `Send + Sync`; `alloc`/`free` take an internal mutex. The bytes
//! of an extent belong to whoever allocated it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_format::{Error, Result};
use parking_lot::Mutex;

use crate::Media;
use crate::alloc::{Extent, FreeList};
use crate::region::{PersistMode, Region, RegionOptions};

/// Magic number at offset 0 of a pool file.
pub const POOL_MAGIC: [u8; 8] = *b"MZNVPOOL";

/// Format version written by this build (and the newest one it reads).
pub const POOL_VERSION: u32 = 1;

/// Bytes reserved for the superblock at the start of the pool.
pub const SUPERBLOCK_SIZE: u64 = 4096;

/// Offset of the data area.
pub const DATA_OFFSET: u64 = SUPERBLOCK_SIZE;

/// Alignment of extent offsets and lengths (and granularity of pool capacities).
pub const EXTENT_ALIGN: u64 = 4096;

/// Encoded length of the superblock (the rest of its 4 KiB is zero).
pub const SUPERBLOCK_LEN: usize = 64;

const CRC_AT: usize = 48;

/// The decoded superblock of a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// Format version.
    pub version: u32,
    /// Flags (none defined: 0).
    pub flags: u32,
    /// Identity of the database owning the pool.
    pub db_id: [u8; 16],
    /// Total size of the pool file in bytes (a multiple of [`EXTENT_ALIGN`]).
    pub capacity: u64,
    /// Offset of the data area ([`DATA_OFFSET`]).
    pub data_offset: u64,
}

impl Superblock {
    /// Encodes the 64-byte superblock, checksum included.
    #[must_use]
    pub fn encode(&self) -> [u8; SUPERBLOCK_LEN] {
        let mut b = [0u8; SUPERBLOCK_LEN];
        b[0..8].copy_from_slice(&POOL_MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b[16..32].copy_from_slice(&self.db_id);
        b[32..40].copy_from_slice(&self.capacity.to_le_bytes());
        b[40..48].copy_from_slice(&self.data_offset.to_le_bytes());
        let crc = crc32c::crc32c(&b[..CRC_AT]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a superblock: magic, checksum, version, then the geometry
    /// (`capacity` a multiple of [`EXTENT_ALIGN`] above [`DATA_OFFSET`], `data_offset ==
    /// DATA_OFFSET`). Errors carry no file name (add it with [`Error::in_file`]).
    ///
    /// # Errors
    /// `Corruption` (bad magic, checksum, geometry) or `UnsupportedVersion`.
    pub fn decode(b: &[u8; SUPERBLOCK_LEN]) -> Result<Superblock> {
        if b[0..8] != POOL_MAGIC {
            return Err(Error::corruption(
                0,
                format!("not an NVM pool: bad magic {:02x?}", &b[0..8]),
            ));
        }
        let stored = u32::from_le_bytes([b[CRC_AT], b[CRC_AT + 1], b[CRC_AT + 2], b[CRC_AT + 3]]);
        let actual = crc32c::crc32c(&b[..CRC_AT]);
        if stored != actual {
            return Err(Error::corruption(
                CRC_AT as u64,
                format!(
                    "NVM pool superblock checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
                ),
            ));
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let version = u32_at(8);
        if version == 0 || version > POOL_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "NVM pool",
                found: version,
                supported: POOL_VERSION,
            });
        }
        let mut db_id = [0u8; 16];
        db_id.copy_from_slice(&b[16..32]);
        let sb = Superblock {
            version,
            flags: u32_at(12),
            db_id,
            capacity: u64_at(32),
            data_offset: u64_at(40),
        };
        if sb.data_offset != DATA_OFFSET {
            return Err(Error::corruption(
                40,
                format!(
                    "NVM pool data offset {} (expected {DATA_OFFSET})",
                    sb.data_offset
                ),
            ));
        }
        if sb.capacity <= DATA_OFFSET || !sb.capacity.is_multiple_of(EXTENT_ALIGN) {
            return Err(Error::corruption(
                32,
                format!(
                    "NVM pool capacity {} is not a multiple of {EXTENT_ALIGN} above {DATA_OFFSET}",
                    sb.capacity
                ),
            ));
        }
        Ok(sb)
    }
}

/// One pool file (see the module documentation).
pub struct Pool {
    path: PathBuf,
    region: Arc<Region>,
    superblock: Superblock,
    free: Mutex<FreeList>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("path", &self.path)
            .field("capacity", &self.superblock.capacity)
            .field("free_bytes", &self.free_bytes())
            .field("mode", &self.region.mode())
            .finish_non_exhaustive()
    }
}

/// A database id as 32 lowercase hex digits (how pool errors and the database's
/// `IDENTITY` file write it).
#[must_use]
pub fn db_id_hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl Pool {
    /// Creates the pool file `dir/name` of `capacity` bytes (rounded up to 4 KiB; at least
    /// one data page), writes its superblock and makes it durable. Fails if the file exists.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad capacity or mode options; `Io` from creating/mapping or
    /// the first persist.
    pub fn create(
        dir: &Path,
        name: &str,
        capacity: u64,
        db_id: [u8; 16],
        opts: &RegionOptions,
    ) -> Result<Pool> {
        let path = dir.join(name);
        let capacity = capacity
            .checked_next_multiple_of(EXTENT_ALIGN)
            .filter(|&c| c > DATA_OFFSET)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "NVM pool capacity {capacity} must be above {DATA_OFFSET} bytes"
                ))
            })?;
        let len = usize::try_from(capacity).map_err(|_| {
            Error::InvalidArgument(format!(
                "NVM pool capacity {capacity} does not fit in memory"
            ))
        })?;
        let region = Region::create(&path, len, opts)?;
        let superblock = Superblock {
            version: POOL_VERSION,
            flags: 0,
            db_id,
            capacity,
            data_offset: DATA_OFFSET,
        };
        let bytes = superblock.encode();
        // SAFETY: the region was just created and is not shared with anyone yet; the range
        // is inside it (capacity > DATA_OFFSET > SUPERBLOCK_LEN).
        unsafe { region.write_at(0, &bytes) };
        region.on_write(bytes.len());
        region
            .persist(0, SUPERBLOCK_LEN)
            .and_then(|()| region.fence())
            .map_err(|e| Error::from(e).in_file(&path))?;
        let free = FreeList::new(DATA_OFFSET, capacity, EXTENT_ALIGN);
        Ok(Pool {
            path,
            region,
            superblock,
            free: Mutex::new(free),
        })
    }

    /// [`Pool::create`], but the pool appears under `dir/name` only once its superblock is
    /// durable: it is made as `dir/name.creating` (any leftover of an interrupted attempt is
    /// removed first), then renamed, and the directory synced. A process killed during the
    /// creation leaves no `name` file, or one with a whole superblock, never a file of zeros
    /// that no database could claim. (With [`PersistMode::CrashSim`] the file lives in the
    /// simulator, which has no directory to tear: this is `create`.)
    ///
    /// # Errors
    /// As [`Pool::create`], plus `Io` from the rename or the directory sync; `Io` when
    /// `name` exists.
    pub fn create_atomic(
        dir: &Path,
        name: &str,
        capacity: u64,
        db_id: [u8; 16],
        opts: &RegionOptions,
    ) -> Result<Pool> {
        if opts.mode == PersistMode::CrashSim {
            return Pool::create(dir, name, capacity, db_id, opts);
        }
        let path = dir.join(name);
        if path.exists() {
            return Err(Error::from(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the NVM pool file exists",
            ))
            .in_file(&path));
        }
        let tmp_name = format!("{name}.creating");
        let tmp = dir.join(&tmp_name);
        match std::fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::from(e).in_file(&tmp)),
        }
        let mut pool = Pool::create(dir, &tmp_name, capacity, db_id, opts)?;
        std::fs::rename(&tmp, &path)
            .and_then(|()| std::fs::File::open(dir)?.sync_all())
            .map_err(|e| Error::from(e).in_file(&path))?;
        pool.path = path;
        Ok(pool)
    }

    /// Opens the pool file `dir/name`, checks its superblock and identity, and makes every
    /// part of the data area not covered by `live` free.
    ///
    /// # Errors
    /// - `Corruption` (with the file and offset): bad magic or checksum, bad geometry, a file
    ///   shorter than the superblock or than its capacity, a pool of another database
    ///   (`db_id` mismatch, offset 16), or `live` extents that are empty, unaligned,
    ///   outside the data area or overlapping.
    /// - `UnsupportedVersion`: a newer format.
    /// - `Io`: the file is missing or cannot be mapped; `InvalidArgument`: mode options.
    pub fn open(
        dir: &Path,
        name: &str,
        db_id: [u8; 16],
        opts: &RegionOptions,
        live: &[Extent],
    ) -> Result<Pool> {
        let path = dir.join(name);
        let corrupt = |offset: u64, detail: String| Error::Corruption {
            file: Some(path.clone()),
            offset,
            detail: detail.into(),
        };
        let truncated = |len: u64| {
            corrupt(
                len,
                format!("NVM pool truncated: {len} bytes, shorter than its superblock"),
            )
        };
        if opts.mode != PersistMode::CrashSim {
            let len = std::fs::metadata(&path)
                .map_err(|e| Error::from(e).in_file(&path))?
                .len();
            if len < SUPERBLOCK_LEN as u64 {
                return Err(truncated(len));
            }
        }
        let region = Region::open(&path, opts)?;
        let len = region.len() as u64;
        if len < SUPERBLOCK_LEN as u64 {
            return Err(truncated(len));
        }
        let mut bytes = [0u8; SUPERBLOCK_LEN];
        // SAFETY: the range is inside the region (checked above). Nobody writes a pool's
        // superblock after `create` made it durable.
        unsafe { region.read_at(0, &mut bytes) };
        region.on_read(bytes.len());
        let superblock = Superblock::decode(&bytes).map_err(|e| e.in_file(&path))?;
        if len < superblock.capacity {
            return Err(corrupt(
                len,
                format!(
                    "NVM pool truncated: file has {len} bytes, its superblock says {}",
                    superblock.capacity
                ),
            ));
        }
        if superblock.db_id != db_id {
            return Err(corrupt(
                16,
                format!(
                    "NVM pool belongs to database {}, not {}",
                    db_id_hex(&superblock.db_id),
                    db_id_hex(&db_id)
                ),
            ));
        }
        let free = FreeList::from_live(DATA_OFFSET, superblock.capacity, EXTENT_ALIGN, live)
            .map_err(|e| corrupt(e.offset, format!("NVM pool extents: {}", e.detail)))?;
        Ok(Pool {
            path,
            region,
            superblock,
            free: Mutex::new(free),
        })
    }

    /// Allocates an extent of at least `len` bytes (rounded up to [`EXTENT_ALIGN`]); its
    /// bytes are not initialised (old content).
    ///
    /// # Errors
    /// `InvalidArgument` for `len == 0` or when no free range is large enough (the message
    /// says how much is free and the largest free range).
    pub fn alloc(&self, len: u64) -> Result<Extent> {
        let mut free = self.free.lock();
        if len == 0 {
            return Err(Error::InvalidArgument(
                "cannot allocate an empty NVM extent".to_string(),
            ));
        }
        free.alloc(len).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "NVM pool {} is full: cannot allocate {len} bytes ({} bytes free, largest free \
                 range {} bytes)",
                self.path.display(),
                free.free_bytes(),
                free.largest_free()
            ))
        })
    }

    /// Like [`Pool::alloc`], from the top of the pool ([`FreeList::alloc_high`]).
    ///
    /// # Errors
    /// As [`Pool::alloc`].
    pub fn alloc_high(&self, len: u64) -> Result<Extent> {
        let mut free = self.free.lock();
        if len == 0 {
            return Err(Error::InvalidArgument(
                "cannot allocate an empty NVM extent".to_string(),
            ));
        }
        free.alloc_high(len).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "NVM pool {} is full: cannot allocate {len} bytes ({} bytes free, largest free \
                 range {} bytes)",
                self.path.display(),
                free.free_bytes(),
                free.largest_free()
            ))
        })
    }

    /// Like [`Pool::alloc`], then fills the extent with zeros and makes them durable.
    ///
    /// # Errors
    /// As `alloc`, plus `Io` from persisting.
    pub fn alloc_zeroed(&self, len: u64) -> Result<Extent> {
        let e = self.alloc(len)?;
        let (off, n) = (e.offset as usize, e.len as usize);
        // SAFETY: the extent was just allocated, so nobody else uses its bytes; it lies
        // inside the region (the free list only holds ranges of `[DATA_OFFSET, capacity)`
        // and the region is at least `capacity` long).
        unsafe { std::ptr::write_bytes(self.region.base().as_ptr().add(off), 0, n) };
        self.region.on_write(n);
        self.region
            .persist(off, n)
            .and_then(|()| self.region.fence())
            .map_err(|err| Error::from(err).in_file(&self.path))?;
        Ok(e)
    }

    /// Returns an extent to the free list (coalescing with free neighbours).
    ///
    /// # Errors
    /// `InvalidArgument` when `e` is not an allocated extent of this pool (unaligned,
    /// outside the data area, or overlapping free space: a double free).
    pub fn free(&self, e: Extent) -> Result<()> {
        self.free.lock().free(e).map_err(|err| {
            Error::InvalidArgument(format!("NVM pool {}: {}", self.path.display(), err.detail))
        })
    }

    /// Free bytes of the data area.
    #[must_use]
    pub fn free_bytes(&self) -> u64 {
        self.free.lock().free_bytes()
    }

    /// The largest extent that can be allocated now.
    #[must_use]
    pub fn largest_free(&self) -> u64 {
        self.free.lock().largest_free()
    }

    /// Total size of the pool (superblock included).
    #[must_use]
    pub fn capacity(&self) -> u64 {
        self.superblock.capacity
    }

    /// Size of the data area (what can be allocated in an empty pool).
    #[must_use]
    pub fn data_len(&self) -> u64 {
        self.superblock.capacity - DATA_OFFSET
    }

    /// The decoded superblock.
    #[must_use]
    pub fn superblock(&self) -> &Superblock {
        &self.superblock
    }

    /// The mapped region: data structures place themselves at `extent.offset` in it.
    #[must_use]
    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    /// Path of the pool file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}
