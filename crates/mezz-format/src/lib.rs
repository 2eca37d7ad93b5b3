//! Pure encodings of Mezzanine's persisted and in-memory structures.
//!
//! Owns: little-endian coding, checksums, the internal key, the unified KeySet block
//! (JigsawDB) and LevelDB's prefix-compressed block, bloom filters, block compression (LZ4,
//! Zstd), the SST builder and reader, the log framing shared by the WAL and the MANIFEST, the
//! internal iterator trait, and the error of all of these ([`Error`], whose corruption
//! [`CorruptionDetail`] keeps checksums and magic numbers as fields).
//!
//! Layering: this crate knows nothing of versions, levels, compaction or the engine's
//! options. It depends on `mezz-env` only for file handles, and on `mezz-util` for the
//! runtime utilities a table reader uses (striped read counters, spare block buffers,
//! read-wait traces). Every decoder returns a typed [`Error`] on bad input — never a panic,
//! never an unbounded allocation (lengths are checked against the bytes actually present).
//!
//! Format specs: `docs/formats/keyset.md`, `docs/formats/sst.md`, `docs/formats/wal.md`.

pub mod block;
pub mod checksum;
pub mod coding;
pub mod compress;
pub mod error;
pub mod filter;
#[doc(hidden)]
pub mod fuzzing;
pub mod ikey;
pub mod iter;
pub mod log;
pub mod order;
pub mod sst;
#[cfg(test)]
mod testfile;

pub use error::{CorruptionDetail, Error, Result};
pub use ikey::{SeqNo, ValueKind};
pub use iter::{EntryRef, InternalIterator};
pub use order::{Comparator, KeyOrder};
