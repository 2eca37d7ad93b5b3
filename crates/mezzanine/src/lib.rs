//! # Mezzanine
//!
//! An embedded, persistent, ordered key-value store (an LSM tree) for machines whose storage
//! comes in tiers: DRAM, byte-addressable persistent memory, and SSD.
//!
//! ```
//! use mezzanine::{Db, Options, WriteBatch, WriteOptions};
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path(), Options::default())?;
//! db.put(b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?.as_deref(), Some(&b"world"[..]));
//! let mut batch = WriteBatch::new();                      // applied atomically
//! batch.put(b"user:1", b"ann");
//! batch.put(b"user:2", b"bob");
//! batch.delete(b"hello");
//! db.write(&WriteOptions { sync: true }, batch)?;        // durable when it returns
//!
//! for kv in db.iter() {                                   // everything, in key order
//!     let (key, value) = kv?;
//!     println!("{key:?} = {value:?}");
//! }
//! let users: Vec<_> = db.prefix(b"user:").collect::<Result<_, _>>()?;
//! assert_eq!(users.len(), 2);
//! let last = db.range("user:".."user:~").next_back().transpose()?; // BTreeMap::range semantics
//! assert_eq!(last, Some((b"user:2".to_vec(), b"bob".to_vec())));
//!
//! let snap = db.snapshot();                               // a consistent view
//! db.put(b"user:3", b"cy")?;
//! assert_eq!(db.prefix_opt(&snap.read_options(), b"user:").count(), 2);
//! assert_eq!(db.multi_get([&b"user:1"[..], b"user:3"])?, [Some(b"ann".to_vec()), Some(b"cy".to_vec())]);
//!
//! let mut cursor = db.cursor(&Default::default())?;      // seeks: the cursor API
//! cursor.seek(b"user:2");
//! assert_eq!(cursor.key(), b"user:2");
//! db.close()?;
//! # Ok::<(), mezzanine::Error>(())
//! ```
//!
//! Layout (one folder per concept; `docs/impl.md` maps where each design plugs in):
//! - `options/`: one `Options` struct, its presets, validation and text form.
//! - `db/`: the `Db` handle: open/recovery, the write path with group commit, reads,
//!   snapshots, optimistic transactions and indexed write batches, background jobs,
//!   properties.
//! - `memtable/`: DRAM and NVM memtables (`nvm_list`) and the memtable set (`set`), which
//!   owns every memtable in read order and builds super versions.
//! - `storage/`: where table bytes live (SSD directories, the NVM pool: `nvm`).
//! - `placement/`: which SSD directory (parallel unit) each new table goes to.
//! - `table/`: the `Table` trait, SSTs (`sst`) and the table cache (`cache`).
//! - `manifest/`: version edits and the MANIFEST file.
//! - `version/`: versions as levels of sorted runs, super versions.
//! - `compaction/`: policies (`policy`, `leveled`), the executor and table sinks.
//! - `iter/`: merging, level and user-facing iterators.
//! - `batch`, `wal`, `stats`, `filename`, `parallel`, `error`.

pub mod backup;
pub(crate) mod base;
pub(crate) mod batch;
pub(crate) mod compaction;
pub(crate) mod db;
pub(crate) mod design;
pub mod error;
pub mod filename;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod gate;
pub mod info_log;
pub(crate) mod iter;
pub(crate) mod manifest;
pub(crate) mod memtable;
pub mod options;
pub(crate) mod parallel;
pub(crate) mod pinned;
pub(crate) mod placement;
pub(crate) mod state;
pub mod stats;
pub(crate) mod storage;
pub(crate) mod table;
pub(crate) mod version;
pub(crate) mod wal;

pub use backup::{BackupCreated, BackupEngine, BackupInfo};
pub use batch::{FamilyId, WriteBatch};
pub use db::{
    BatchDbIterator, BatchValue, CHANGEABLE_FAMILY_OPTIONS, CheckpointInfo, ColumnFamily,
    DEFAULT_COLUMN_FAMILY, Db, Transaction, TxnOptions, WriteBatchWithIndex, destroy_db, repair_db,
};
/// What [`repair_db`] found and did.
pub mod repair {
    pub use crate::db::{
        Dropped, FamilyRepair, LOST_DIR, RepairReport, ReplayedLog, RewrittenTable,
    };
}
pub use db::RepairReport;
pub use error::{Error, Result};
pub use iter::{DbIterator, Iter, KvPair};
pub use mezz_format::order::{BYTEWISE_NAME, CaseInsensitive, ReverseBytewise};
pub use mezz_format::{Comparator, KeyOrder, SeqNo, ValueKind};
pub use options::{
    BlockFormat, Options, PlacementPolicy, Preset, ReadOptions, RecoveryMode, Snapshot,
    WriteOptions,
};
pub use pinned::PinnedValue;
pub use stats::Stats;

/// Internals that tools and tests outside the crate reach (not a stable API).
#[doc(hidden)]
pub mod internals {
    pub use crate::memtable::nvm_list::RESERVE_LEASE;
    pub use crate::table::TableLocation;
    pub use crate::version::VersionEdit;
    pub use crate::wal::{WalWriter, seal_existing};
}
