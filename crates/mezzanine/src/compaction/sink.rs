//! Table sinks: where a flush or a compaction writes its output tables.
//!
//! Owns: the [`TableSink`] trait (add entries, cut between tables, finish durably, abandon),
//! [`SstSink`] (SST files through the storage layer, each placed in an SSD directory by the
//! job's [`JobPlacement`]) and [`write_table`] (a whole iterator into one table, as flushes
//! do). The merge loop (`compaction::executor`) and the flush only talk to a `TableSink`,
//! so another kind of output (NVM tables, matrix rows) is one more sink; where SSTs go is
//! the placement's business (`crate::placement`).
//!
//! Invariants: a sink's tables are durable once `finish` returns (each file synced, then
//! every directory that received one synced), before any manifest edit names them; a
//! failed or abandoned sink leaves no file behind that a version could name; empty tables
//! are never produced.
//!
//! Thread-safety: a sink belongs to one job on one thread.

use std::path::PathBuf;
use std::sync::Arc;

use mezz_format::ikey::parse_internal_key;
use mezz_format::sst::{TableBuilder, TableBuilderOptions};
use mezz_format::{InternalIterator, SeqNo};

use crate::compaction::executor::HiddenVersions;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::placement::JobPlacement;
use crate::storage::Storage;
use crate::table::{TableLocation, TableMeta};

/// A finished table and what writing it cost.
#[derive(Debug, Clone)]
pub struct WrittenTable {
    /// The table's metadata (for the version edit).
    pub meta: TableMeta,
    /// Nanoseconds spent building data blocks.
    pub encode_nanos: u64,
    /// Bytes of data blocks.
    pub data_bytes: u64,
    /// Bytes physically written for the table (the SST file; for an NVM table the buffer
    /// and index bytes, not the entries it points at).
    pub bytes_written: u64,
    /// NVM objects allocated for the table that the edit installing it must record (empty
    /// for SSTs, and for objects recorded before they were written).
    pub objects: Vec<crate::storage::nvm::NvmObject>,
    /// Bytes of data blocks copied whole from NVM buffers (not re-encoded).
    pub copied_block_bytes: u64,
}

/// The output of one flush or compaction: a sequence of tables, each a sorted run of
/// internal keys, cut where the caller says.
pub trait TableSink {
    /// Appends an entry (internal key, value) to the current output table, starting one if
    /// none is open. Keys arrive in increasing internal-key order.
    ///
    /// # Errors
    /// I/O errors writing the table.
    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// As [`TableSink::add`], with where the entry lives when it is in byte-addressable
    /// memory already (an NVM table's entry): a sink may point at it instead of copying it.
    ///
    /// # Errors
    /// As [`TableSink::add`].
    fn add_located(
        &mut self,
        key: &[u8],
        value: &[u8],
        _at: Option<mezz_format::EntryRef>,
    ) -> Result<()> {
        self.add(key, value)
    }
    /// Adds a whole KeySet run (a data block's contents, e.g. a block of an NVM buffer) to
    /// the current output table as one block, copied, not re-encoded. Returns `false`
    /// (nothing done) when this sink cannot; the caller then adds the entries one by one.
    ///
    /// # Errors
    /// As [`TableSink::add`]; a run whose keys are out of order.
    fn add_keyset_block(&mut self, _contents: &[u8]) -> Result<bool> {
        Ok(false)
    }
    /// Bytes written to the current output table so far; `None` if none is open.
    fn current_bytes(&self) -> Option<u64>;
    /// Finishes the current output table (if one is open); the next `add` starts another.
    ///
    /// # Errors
    /// I/O errors finishing the table.
    fn finish_table(&mut self) -> Result<()>;
    /// Finishes the current table and makes every table written durable; returns them in
    /// the order written.
    ///
    /// # Errors
    /// I/O errors; the tables stay (the caller decides whether to abandon them).
    fn finish(&mut self) -> Result<Vec<WrittenTable>>;
    /// Removes every table written so far, and the one being written.
    fn abandon(&mut self);
}

/// The table-builder options the engine's options ask for, for a table of `level` (its
/// compression is the level's).
#[must_use]
pub fn table_builder_options(opts: &Options, level: usize) -> TableBuilderOptions {
    TableBuilderOptions {
        block_size: opts.block_size,
        block_format: opts.block_format,
        restart_interval: opts.block_restart_interval,
        bloom_bits_per_key: opts.bloom_bits_per_key,
        compression: opts.compression.for_level(level),
        zstd_level: i32::try_from(opts.zstd_level).unwrap_or(i32::MAX),
        order: opts.key_order(),
    }
}

/// An SST being written.
struct OpenSst {
    id: u64,
    path_id: u32,
    path: PathBuf,
    builder: TableBuilder,
}

/// A [`TableSink`] writing SST files through the storage layer.
pub struct SstSink<'a> {
    storage: &'a Arc<Storage>,
    builder_options: TableBuilderOptions,
    new_file_number: &'a (dyn Fn() -> u64 + Sync),
    placement: Box<dyn JobPlacement>,
    output_level: usize,
    current: Option<OpenSst>,
    written: Vec<WrittenTable>,
}

impl std::fmt::Debug for SstSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstSink")
            .field("output_level", &self.output_level)
            .field("current", &self.current.as_ref().map(|c| c.id))
            .field("written", &self.written.len())
            .finish_non_exhaustive()
    }
}

impl<'a> SstSink<'a> {
    /// A sink writing SSTs for `output_level`, numbering them with `new_file_number` and
    /// placing them with the job's `placement`.
    #[must_use]
    pub fn new(
        storage: &'a Arc<Storage>,
        opts: &Options,
        output_level: usize,
        new_file_number: &'a (dyn Fn() -> u64 + Sync),
        placement: Box<dyn JobPlacement>,
    ) -> Self {
        Self {
            storage,
            builder_options: table_builder_options(opts, output_level),
            new_file_number,
            placement,
            output_level,
            current: None,
            written: Vec::new(),
        }
    }

    fn open_output(&mut self) -> Result<&mut OpenSst> {
        let id = (self.new_file_number)();
        let path_id = self.placement.place(id);
        let (path, file) = self.storage.create_sst(
            id,
            path_id,
            crate::storage::write_life_for_level(self.output_level),
            self.placement.pace_bytes(path_id),
        )?;
        Ok(self.current.insert(OpenSst {
            id,
            path_id,
            path,
            builder: TableBuilder::new(file, self.builder_options.clone()),
        }))
    }
}

impl TableSink for SstSink<'_> {
    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let out = match self.current.as_mut() {
            Some(out) => out,
            None => self.open_output()?,
        };
        out.builder
            .add(key, value)
            .map_err(|e| e.in_file(&out.path).into())
    }

    fn add_keyset_block(&mut self, contents: &[u8]) -> Result<bool> {
        let out = match self.current.as_mut() {
            Some(out) => out,
            None => self.open_output()?,
        };
        out.builder
            .add_keyset_block(contents)
            .map_err(|e| e.in_file(&out.path).into())
    }

    fn current_bytes(&self) -> Option<u64> {
        self.current.as_ref().map(|c| c.builder.file_size())
    }

    fn finish_table(&mut self) -> Result<()> {
        let Some(out) = self.current.take() else {
            return Ok(());
        };
        let location = TableLocation::Sst {
            path_id: out.path_id,
        };
        if out.builder.num_entries() == 0 {
            out.builder.abandon();
            self.storage.remove_table(out.id, location);
            return Ok(());
        }
        let encode_nanos = out.builder.encode_nanos();
        let copied_block_bytes = out.builder.copied_block_bytes();
        let props = match out.builder.finish() {
            Ok(p) => p,
            Err(e) => {
                self.storage.remove_table(out.id, location);
                return Err(e.in_file(&out.path).into());
            }
        };
        self.written.push(WrittenTable {
            meta: TableMeta::from_properties(out.id, location, &props),
            encode_nanos,
            data_bytes: props.data_size,
            bytes_written: props.file_size,
            objects: Vec::new(),
            copied_block_bytes,
        });
        Ok(())
    }

    fn finish(&mut self) -> Result<Vec<WrittenTable>> {
        self.finish_table()?;
        let mut dirs: Vec<u32> = self
            .written
            .iter()
            .filter_map(|w| match w.meta.location {
                TableLocation::Sst { path_id } => Some(path_id),
                TableLocation::Nvm { .. } | TableLocation::Row { .. } => None,
            })
            .collect();
        dirs.sort_unstable();
        dirs.dedup();
        for d in dirs {
            self.storage.sync_dir(d)?;
        }
        Ok(std::mem::take(&mut self.written))
    }

    fn abandon(&mut self) {
        if let Some(out) = self.current.take() {
            out.builder.abandon();
            self.storage.remove_table(
                out.id,
                TableLocation::Sst {
                    path_id: out.path_id,
                },
            );
        }
        for w in self.written.drain(..) {
            self.storage.remove_table(w.meta.id, w.meta.location);
        }
    }
}

/// Writes the entries of `iter` (from its first: a memtable's) into one table of `sink`
/// and finishes the sink (the table is durable, its directory synced); `None` if nothing
/// was written (no table is left behind).
///
/// Like a compaction, it keeps of each user key the newest version, plus for every live
/// snapshot (`snapshots`, ascending) the newest version visible to it; the versions a
/// newer one of the same stripe hides are dropped (RocksDB's flush does the same; LevelDB's
/// writes them all and leaves them to compaction). Deletion markers are kept: only a
/// compaction knows whether the levels below hold the key.
///
/// # Errors
/// I/O errors, or the iterator's error; the partial table is removed.
pub fn write_table(
    sink: &mut dyn TableSink,
    iter: &mut dyn InternalIterator<Error>,
    snapshots: &[SeqNo],
    order: &mezz_format::KeyOrder,
) -> Result<Option<WrittenTable>> {
    iter.seek_to_first();
    let res = (|| -> Result<Vec<WrittenTable>> {
        let mut versions = HiddenVersions::new(order.clone());
        while iter.valid() {
            let ikey = iter.key();
            let p = parse_internal_key(ikey).ok_or_else(|| {
                Error::corruption(0, format!("a memtable holds a malformed key {ikey:?}"))
            })?;
            let (_, hidden, _) = versions.next(snapshots, p.user_key, p.seq);
            if !hidden {
                sink.add(ikey, iter.value())?;
            }
            iter.next();
        }
        iter.status()?;
        sink.finish()
    })();
    match res {
        Ok(mut tables) => Ok(tables.pop()),
        Err(e) => {
            sink.abandon();
            Err(e)
        }
    }
}
