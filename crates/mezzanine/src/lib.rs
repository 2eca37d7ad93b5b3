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
//! let mut it = db.cursor(&ReadOptions::default())?;
//! it.seek_to_first();
//! while it.valid() {
//!     println!("{:?} = {:?}", it.key(), it.value());
//!     it.next();
//! }
//! db.close()?;
//! # Ok::<(), mezzanine::Error>(())
//! ```
//!
//! Layout (one folder per concept; `docs/impl.md` maps where each design plugs in):
//! - `options/`: one `Options` struct, its presets, validation and text form.
//! - `db/`: the `Db` handle: open/recovery, the write path with group commit, reads,
//!   snapshots, background jobs, properties.
//! - `memtable/`: DRAM and NVM memtables (`nvm_list`) and the memtable set (`set`), which
//!   owns every memtable in read order and builds super versions.
//! - `storage/`: where table bytes live (SSD directories, the NVM pool: `nvm`).
//! - `table/`: the `Table` trait, SSTs (`sst`) and the table cache (`cache`).
//! - `manifest/`: version edits and the MANIFEST file.
//! - `version/`: versions as levels of sorted runs, super versions.
//! - `compaction/`: policies (`policy`, `leveled`), the executor and table sinks.
//! - `iter/`: merging, level and user-facing iterators.
//! - `batch`, `wal`, `stats`, `filename`, `parallel`, `error`.

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
