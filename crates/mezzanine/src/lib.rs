//! # Mezzanine
//!
//! An embedded, persistent, ordered key-value store (an LSM tree) for machines whose storage
//! comes in tiers: DRAM, byte-addressable persistent memory, and SSD.
//!
//! ```
//! use mezzanine::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path(), Options::default())?;
//! db.put(b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?.as_deref(), Some(&b"world"[..]));
//! let mut batch = WriteBatch::new();
//! batch.put(b"a", b"1");
//! batch.delete(b"hello");
//! db.write(&WriteOptions { sync: true }, batch)?;
//! let mut it = db.iter(&ReadOptions::default())?;
//! it.seek_to_first();
//! while it.valid() {
//!     println!("{:?} = {:?}", it.key(), it.value());
//!     it.next();
//! }
//! db.close()?;
//! # Ok::<(), mezzanine::Error>(())
//! ```
//!
//! Layout: `options` (one `Options` struct and its presets), `db` (open, recovery, the write
//! path with group commit, reads, snapshots, properties), `batch` (`WriteBatch`), `memtable`,
//! `wal`, `sst` (table cache, block cache, the `Table` abstraction), `version` (version
//! edits, manifest, version set, super versions), `compaction` (pure planners + executor),
//! `iter` (merging and user-facing iterators), `stats`.

pub mod batch;
pub mod compaction;
pub mod db;
pub mod error;
pub mod filename;
#[doc(hidden)]
pub mod fuzzing;
pub mod iter;
pub mod manifest;
pub mod memtable;
pub mod options;
pub mod parallel;
pub mod stats;
pub mod storage;
pub mod table;
pub mod version;
pub mod wal;

pub use batch::WriteBatch;
pub use db::Db;
pub use error::{Error, Result};
pub use iter::DbIterator;
pub use mezz_format::{SeqNo, ValueKind};
pub use options::{
    BlockFormat, Options, Preset, ReadOptions, RecoveryMode, Snapshot, WriteOptions,
};
pub use stats::Stats;
