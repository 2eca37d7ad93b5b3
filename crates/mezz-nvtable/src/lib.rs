//! Mezzanine's table formats in (possibly emulated) persistent memory, built on the
//! primitives of `mezz-pmem` and holding no `unsafe` code.
//!
//! Owns:
//! - [`matrix`]: MatrixKV's matrix container of level 0: a page space over one pool extent,
//!   row tables (one flushed memtable each, committed by a word) linked by cross-row hints,
//!   and the container that splits its rows into receiver and compactor (format in
//!   `docs/formats/matrix-row.md`);
//! - [`ptable`]: TLSM's NVM tables: persistent buffers of KeySet blocks and immutable skip
//!   lists whose nodes point at entries in them, with checkpoints and resume after a crash
//!   (format in `docs/formats/nvm-table.md`);
//! - [`calibrate`]: the measurement kernels that check the emulated NVM cost against its
//!   profile (the engine of `mezz nvm-calibrate`).
//!
//! Invariants: every byte of NVM is reached through the safe extent API of `mezz-pmem`
//! (`mezz_pmem::extent`): writes through a claim of the range (`Region::claim`, an
//! `ExtentWriter`), reads of published bytes (`Region::read_published`,
//! `Region::published`, `Region::load_volatile_u64`), bounds checked on every call. The
//! formats keep the rule those reads rely on: a range is written only before it is
//! published (a row's commit word, a table's footer word, a buffer's header) and is not
//! written again while a reader can reach it. Every access is reported to the region's
//! cost hooks ([`mezz_pmem::Media`]) by the format itself. `unsafe` is forbidden here.
//!
//! Thread-safety: see each module; in short, readers (`RowTable`, `PTable`) are
//! `Send + Sync` and immutable, builders and iterators belong to one thread.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod calibrate;
pub mod matrix;
pub mod ptable;
