//! Mezzanine's persistent-memory layer, and the one crate of the workspace that holds
//! `unsafe` code.
//!
//! Owns, for now:
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
//!   data structures report through the [`Media`] hooks;
//! - [`calibrate`]: measurement kernels that check the emulated cost against its profile
//!   (the engine of `mezz nvm-calibrate`);
//! - [`hint`]: the write-lifetime hint and early-writeback system calls for files, and
//!   [`mapfile`]: the shared mapping and space reservation behind the memory-mapped WAL
//!   writer (unsafe code outside persistent memory, kept here so no other crate needs any).
//!
//! Later: mapping an NVM region (or a file emulating one), persist/fence primitives,
//! persistence modes and crash simulation, so that the same offset-linked skip list can
//! serve as the persistent NVM memtable.
//!
//! Invariants: structures inside an arena hold offsets, never pointers, so they stay valid
//! wherever the region is mapped. Every `unsafe` block carries a `// SAFETY:` comment; the
//! crate's tests run under Miri (`cargo +nightly miri test -p mezz-pmem`).
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
pub mod calibrate;
pub mod cost;
pub mod extent;
pub mod hint;
pub mod mapfile;
pub mod matrix;
pub mod media;
pub mod nvmlog;
pub mod pool;
pub mod ptable;
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
