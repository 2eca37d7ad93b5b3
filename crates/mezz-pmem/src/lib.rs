//! Mezzanine's persistent-memory layer: the primitives, and the one crate of the workspace
//! that holds `unsafe` code. The formats built on them (MatrixKV's matrix container,
//! TLSM's NVM tables, the cost calibration kernels) live in `mezz-nvtable`, which reaches
//! NVM only through the safe [`extent`] API here.
//!
//! Owns:
//! - [`region`]: a mapped region of (possibly emulated) persistent memory — a file mapped
//!   shared, a heap buffer, or a simulated file ([`sim`]: crash simulation) — with the
//!   persist/fence primitives of each [`PersistMode`]; [`media`]: the [`Media`] trait, the
//!   seam between a region and the structures on it, with their cost hooks;
//! - [`extent`]: the safe byte access to a region for the formats above this crate: a
//!   writer's exclusive claim on a range ([`ExtentWriter`]) and bounds-checked reads of
//!   published bytes (a copy, a borrow in place, a volatile word load);
//! - [`pool`] and [`alloc`]: the pool file (superblock, data area) and its extent allocator
//!   ([`Extent`], [`FreeList`]); [`nvmlog`]: the single-writer NVM log (the WAL on NVM);
//!   [`word`]: the persistent commit word ([`PersistentWord`]);
//! - [`arena`]: a fixed-capacity byte region addressed by `u32` offsets, with a lock-free
//!   bump allocator; on its own heap memory (optionally pre-faulted and on huge pages) or on
//!   a sub-range of a [`Media`] (an NVM extent), with persist/fence/latency hooks forwarded
//!   to the media;
//! - [`skiplist`]: a concurrent, insert-only skip list whose nodes live in an arena and link
//!   to each other by offsets — the DRAM memtable's index on a heap arena, and on a
//!   persistent media arena the crash-consistent NVM memtable (checksummed nodes, a
//!   persist-then-link insert protocol, [`SkipList::recover`] after a power cut; format in
//!   `docs/formats/nvm-skiplist.md`);
//! - [`cost`]: the emulated cost of an NVM tier: named device profiles ([`NvmProfile`]:
//!   `dram`, `optane`, `optane-6`, `cxl`) with their published figures, the charge of an
//!   access, and the shared bandwidth channels, applied by [`Region`] to every access the
//!   data structures report through the [`Media`] hooks, and the spin-wait [`Clock`] the
//!   charges wait on;
//! - [`hint`]: the write-lifetime hint and early-writeback system calls for files,
//!   [`mapfile`]: the shared mapping and space reservation behind the memory-mapped WAL
//!   writer, and [`sched`]: the background threads' CPU priority (unsafe code outside
//!   persistent memory, kept here so no other crate needs any).
//!
//! Invariants: structures inside an arena hold offsets, never pointers, so they stay valid
//! wherever the region is mapped. Every `unsafe` block carries a `// SAFETY:` comment; the
//! safe reads of [`extent`] rely on the extent-lifetime rule its module states. The
//! crate's tests run under Miri (`cargo +nightly miri test -p mezz-pmem`, and
//! `-p mezz-nvtable` for the formats' use of the extent API).
//!
//! Thread-safety: [`Arena`] and [`SkipList`] are `Send + Sync` (the list when its comparator
//! is); concurrent inserts and lock-free reads are allowed. See each module.
//!
//! ```
//! use mezz_pmem::{Arena, Bytewise, InsertError, SkipList};
//!
//! let list = SkipList::new(Arena::new(1 << 16), Bytewise).unwrap();
//! list.insert(b"b", b"2").unwrap();
//! list.insert(b"a", b"1").unwrap();
//! assert_eq!(list.insert(b"a", b"x"), Err(InsertError::Duplicate));
//! assert_eq!(list.get(b"a").unwrap(), Some(&b"1"[..]));
//!
//! let mut c = list.cursor();
//! c.seek_ge(b"aa");
//! assert_eq!(c.key(), b"b");
//! c.prev();
//! assert_eq!(c.key(), b"a");
//! ```

pub mod alloc;
pub mod arena;
pub mod cost;
pub mod cpucache;
pub mod extent;
pub mod hint;
pub mod mapfile;
pub mod media;
pub mod nvmlog;
pub mod pool;
pub mod region;
pub mod sched;
pub mod sim;
pub mod skiplist;
mod spin;
mod sys;
pub mod word;

pub use alloc::{Extent, FreeList};
pub use arena::{Arena, ArenaError, ArenaOptions};
pub use cost::{CostModel, NvmProfile};
pub use extent::ExtentWriter;
pub use media::Media;
pub use nvmlog::{Appended, NvmLogReader, NvmLogWriter};
pub use pool::Pool;
pub use region::{Emulation, FlushInstruction, PersistMode, Region, RegionOptions, RegionStats};
pub use sim::{KeepLines, PowerCut, SimNvm};
pub use skiplist::{
    Bytewise, Comparator, CorruptNode, Cursor, InsertError, Iter, RecoverError, RecoveryReport,
    SkipList,
};
pub use spin::Clock;
pub use word::PersistentWord;
