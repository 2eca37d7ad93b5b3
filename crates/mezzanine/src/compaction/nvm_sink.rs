//! The NVM table sink (TLSM): flush and compaction outputs written as NVM tables.
//!
//! Owns: [`NvmSink`] (a [`TableSink`] whose tables are persistent skip lists in NVM) and
//! [`NvmRecorder`] (how a compaction records its output objects in the manifest before it
//! writes them, so an interrupted one can resume).
//!
//! What each method writes (option `nvm_table_method`):
//! - an entry that comes with an [`EntryRef`] (it lives in an NVM table already) and a
//!   method with byte-addressable compaction (`ps+bac`, `ps+bac+pb`): a node pointing at it;
//!   nothing of the entry is copied;
//! - any other entry: `ps+bac+pb` copies it into a new persistent buffer (KeySet blocks, the
//!   SST data-block layout, written with one bulk copy) and points at it; `ps` and `ps+bac`
//!   write it inside the table's own object as a one-entry block, node by node, each node
//!   persisted before the next (the paper's persistent skip list).
//!
//! A table's entries are gathered in DRAM (keys and references) until the merge loop cuts
//! it, so its index object is allocated at its exact size. `ps+bac+pb` encodes each copied
//! entry into a KeySet block as it arrives; finished blocks collect in a DRAM chunk that is
//! written, one bulk copy, as a buffer object of its exact size when it reaches
//! [`BUFFER_CHUNK_BYTES`] and when the table is cut. A table's copied entries so take one or
//! more buffers, and gathering holds at most a chunk of their bytes in DRAM (a table of a
//! 64 MiB memtable once staged all of them, twice). `ps` and `ps+bac` keep each copied
//! value beside its key until the table is written inline.
//! Compaction outputs record their objects through the [`NvmRecorder`] before writing and
//! checkpoint their index every [`CHECKPOINT_BYTES`]; flush outputs are recorded by the
//! edit that installs them (a crash before it frees them: the flush is redone from the WAL).
//!
//! Invariants: as [`TableSink`]'s; every object the sink allocated and no edit recorded is
//! freed by `abandon`; recorded ones are handed to [`NvmRecorder::forget`].
//!
//! Thread-safety: a sink belongs to one job on one thread.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use mezz_format::block::{IndexKind, KeySetRef, KeySetWriter};
use mezz_format::ikey::{parse_internal_key, user_key};
use mezz_format::sst::{BLOCK_TYPE_RAW, EncodeClock, append_block_frame_parts};
use mezz_format::{EntryRef, ValueKind};
use mezz_nvtable::ptable::{
    self, PTableBuilder, PTableHeader, entry_crc, index_len, inline_block_len,
};

use crate::compaction::sink::{TableSink, WrittenTable};
use crate::error::{Error, Result};
use crate::options::{NvmTableMethod, Options};
use crate::storage::nvm::{NvmObject, NvmObjectKind, NvmTier};
use crate::table::{NvmRef, TableLocation, TableMeta};

/// Bytes of index between two checkpoints of a compaction output.
pub const CHECKPOINT_BYTES: u64 = 64 << 10;

/// Bytes of finished blocks that make a persistent buffer be written (`ps+bac+pb`): the
/// blocks gathered reach this, and are written as one buffer object. The last buffer of a
/// table is smaller; a block never straddles two.
pub const BUFFER_CHUNK_BYTES: usize = 4 << 20;

/// Records a compaction's output objects in the manifest before they are written.
pub trait NvmRecorder: Sync {
    /// Appends an edit listing `objects` (durable when this returns).
    ///
    /// # Errors
    /// The manifest write failed.
    fn record(&self, objects: &[NvmObject]) -> Result<()>;
    /// Releases recorded objects of a job that failed: an edit deleting them, then their
    /// extents. Best effort (recovery releases what this cannot).
    fn forget(&self, objects: &[NvmObject]);
}

/// The bytes an entry takes in the object holding it: its share of a buffer's blocks, or
/// its one-entry block inside a table's object (`inline`). A table's `nvm_refs` sum these,
/// so an object's live share is the sum over live tables divided by its length.
#[must_use]
pub fn entry_weight(key: &[u8], value_len: usize, inline: bool) -> u64 {
    if inline {
        inline_block_len(key.len(), value_len) as u64
    } else {
        (key.len().div_ceil(8) * 8 + value_len + 16) as u64
    }
}

/// The metadata of an NVM table, gathered entry by entry in key order (by the sink as it
/// writes a table, and by recovery from a table a crash left behind).
#[derive(Debug, Default)]
pub(crate) struct NvmMetaBuilder {
    smallest: Vec<u8>,
    largest: Vec<u8>,
    seqs: Option<(u64, u64)>,
    entries: u64,
    deletions: u64,
    logical: u64,
    per_object: BTreeMap<u64, u64>,
}

impl NvmMetaBuilder {
    /// Records an entry whose bytes live in object `owner` (`inline`: inside a table's own
    /// object, as a one-entry block).
    pub(crate) fn add(&mut self, key: &[u8], value_len: usize, owner: u64, inline: bool) {
        if self.entries == 0 {
            self.smallest = key.to_vec();
        }
        self.largest.clear();
        self.largest.extend_from_slice(key);
        self.entries += 1;
        self.logical += (key.len() + value_len) as u64;
        *self.per_object.entry(owner).or_default() += entry_weight(key, value_len, inline);
        if let Some(p) = parse_internal_key(key) {
            let (lo, hi) = self.seqs.unwrap_or((p.seq, p.seq));
            self.seqs = Some((lo.min(p.seq), hi.max(p.seq)));
            if p.kind == ValueKind::Deletion {
                self.deletions += 1;
            }
        }
    }

    /// The metadata of table `id` (`None` without entries). Its own object is always among
    /// its references (so it is freed with the table); `created` says which objects it
    /// wrote.
    pub(crate) fn finish(mut self, id: u64, created: impl Fn(u64) -> bool) -> Option<TableMeta> {
        if self.entries == 0 {
            return None;
        }
        self.per_object.entry(id).or_default();
        let (smallest_seq, largest_seq) = self.seqs.unwrap_or_default();
        Some(TableMeta {
            id,
            location: TableLocation::Nvm { object: id },
            size: self.logical,
            smallest: self.smallest,
            largest: self.largest,
            smallest_seq,
            largest_seq,
            num_entries: self.entries,
            num_deletions: self.deletions,
            nvm_refs: self
                .per_object
                .into_iter()
                .map(|(object, bytes)| NvmRef {
                    object,
                    bytes,
                    created: object == id || created(object),
                })
                .collect(),
            pinned: Default::default(),
            seeks: Default::default(),
        })
    }
}

/// A gathered entry: its key (and, when it is copied inline, its value right after it) in
/// the sink's byte arena (`NvmSink::bytes`), so gathering costs no allocation per entry.
struct Pending {
    /// Where the key starts in the arena.
    key_at: usize,
    key_len: usize,
    /// Whether the value follows the key in the arena (copied inline: `ps`, `ps+bac`).
    value_in_arena: bool,
    /// Where it lives: where it is pointed at, or where it was copied into a buffer (an
    /// offset in the chunk being gathered until that chunk is written, then in the region).
    at: Option<EntryRef>,
    /// Where its key sits in the block `at` points at, when known.
    key_off: Option<u32>,
    value_len: usize,
    /// `crc32c(key ++ value)`, for an entry copied into a buffer.
    crc: u32,
    /// The buffer object it was copied into, once written.
    buffer: Option<u64>,
}

impl Pending {
    fn key<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        &bytes[self.key_at..self.key_at + self.key_len]
    }

    /// The value kept in the arena, for an entry copied inline.
    fn inline_value<'b>(&self, bytes: &'b [u8]) -> Option<&'b [u8]> {
        let key_end = self.key_at + self.key_len;
        self.value_in_arena
            .then(|| &bytes[key_end..key_end + self.value_len])
    }
}

/// How a job's outputs are headed.
#[derive(Debug, Clone)]
pub struct NvmOutput {
    /// The level the tables are written for.
    pub level: usize,
    /// For a compaction: the ids of its input tables (its outputs are resumable); `None`
    /// for a flush or a rewrite.
    pub inputs: Option<Vec<u64>>,
}

/// A [`TableSink`] writing NVM tables. See the module documentation.
pub struct NvmSink<'a> {
    tier: &'a Arc<NvmTier>,
    new_file_number: &'a (dyn Fn() -> u64 + Sync),
    recorder: Option<&'a dyn NvmRecorder>,
    out: NvmOutput,
    method: NvmTableMethod,
    bloom_bits: u32,
    block_size: usize,
    order: mezz_format::KeyOrder,
    /// Extents of the objects entries may point into: (start, end, object id, holds
    /// inline entries), sorted.
    sources: Vec<(u64, u64, u64, bool)>,
    cur: Vec<Pending>,
    /// The gathered entries' keys, and the values copied inline.
    bytes: Vec<u8>,
    cur_bytes: u64,
    /// Key and value bytes of the copied entries of the table being gathered.
    cur_copied: u64,
    /// `ps+bac+pb`: the block being filled with copied entries, and their indexes in `cur`.
    block: KeySetWriter,
    block_entries: Vec<usize>,
    /// Finished blocks (framed) not written to NVM yet, the indexes in `cur` of their
    /// entries, and the entries' weight.
    chunk: Vec<u8>,
    chunk_entries: Vec<usize>,
    chunk_weight: u64,
    /// The buffer objects written for the table being gathered, and their data bytes.
    cur_buffers: Vec<NvmObject>,
    cur_data_bytes: u64,
    /// Time spent encoding the table being gathered's blocks.
    encode: EncodeClock,
    written: Vec<WrittenTable>,
    /// Allocated, not recorded by any edit yet.
    unrecorded: Vec<NvmObject>,
    /// Recorded by the recorder (compaction outputs).
    recorded: Vec<NvmObject>,
    /// Copy the entries that live in these objects, even where it could point at them
    /// (a rewrite that frees mostly dead objects).
    evacuate: Vec<(u64, u64)>,
}

impl std::fmt::Debug for NvmSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmSink")
            .field("out", &self.out)
            .field("method", &self.method)
            .field("written", &self.written.len())
            .finish_non_exhaustive()
    }
}

impl<'a> NvmSink<'a> {
    /// A sink writing NVM tables for `out`. `sources`: the NVM objects the job's input
    /// tables reference (entries pointing into them are attributed to them).
    #[must_use]
    pub fn new(
        tier: &'a Arc<NvmTier>,
        opts: &Options,
        out: NvmOutput,
        new_file_number: &'a (dyn Fn() -> u64 + Sync),
        recorder: Option<&'a dyn NvmRecorder>,
        sources: &[NvmObject],
    ) -> Self {
        let mut s: Vec<(u64, u64, u64, bool)> = sources
            .iter()
            .map(|o| {
                (
                    o.offset,
                    o.offset + o.len,
                    o.id,
                    o.kind == NvmObjectKind::TableIndex,
                )
            })
            .collect();
        s.sort_unstable();
        s.dedup();
        Self {
            tier,
            new_file_number,
            recorder,
            out,
            method: opts.nvm_table_method,
            bloom_bits: if opts.key_order().filters_allowed() {
                opts.bloom_bits_per_key
            } else {
                0
            },
            block_size: opts.block_size.max(256),
            order: opts.key_order(),
            sources: s,
            cur: Vec::new(),
            bytes: Vec::new(),
            cur_bytes: 0,
            cur_copied: 0,
            block: KeySetWriter::new(IndexKind::ValueRef),
            block_entries: Vec::new(),
            chunk: Vec::new(),
            chunk_entries: Vec::new(),
            chunk_weight: 0,
            cur_buffers: Vec::new(),
            cur_data_bytes: 0,
            encode: EncodeClock::default(),
            written: Vec::new(),
            unrecorded: Vec::new(),
            recorded: Vec::new(),
            evacuate: Vec::new(),
        }
    }

    /// Copies the entries that live in `objects` into objects of its own (a rewrite whose
    /// point is to stop pointing into them), and keeps pointing at the others.
    pub fn evacuate(&mut self, objects: Vec<u64>) {
        self.evacuate = self
            .sources
            .iter()
            .filter(|s| objects.contains(&s.2))
            .map(|s| (s.0, s.1))
            .collect();
    }

    /// The object holding `block` and whether it holds inline entries.
    fn source_of(&self, block: u64) -> Option<(u64, bool)> {
        let i = self.sources.partition_point(|&(s, ..)| s <= block);
        i.checked_sub(1)
            .and_then(|i| self.sources.get(i))
            .filter(|&&(_, e, ..)| block < e)
            .map(|&(_, _, id, inline)| (id, inline))
    }

    /// Pool bytes the table being gathered will take when written: the entries it copies
    /// (an eighth more for their block framing) and its index.
    #[must_use]
    pub fn current_room_needed(&self) -> u64 {
        let copied = self.cur_copied;
        let inputs = self.out.inputs.as_ref().map_or(0, Vec::len);
        copied + copied / 8 + index_len(self.cur.len() as u64, inputs, self.bloom_bits)
    }

    /// Finishes the block being filled (`ps+bac+pb`): frames it into the chunk and notes
    /// where each of its entries landed. Writes the chunk when it is full.
    fn finish_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        let at = self.chunk.len();
        let parts = self.block.finish_parts();
        let clen: usize = parts.iter().map(|p| p.len()).sum();
        append_block_frame_parts(&mut self.chunk, &parts, BLOCK_TYPE_RAW);
        let contents = self.chunk.get(at..at + clen).unwrap_or_default();
        let block = KeySetRef::parse_trailer(contents, at as u64)?;
        for (slot, &i) in self.block_entries.iter().enumerate() {
            let key_off = block
                .key(slot)
                .map(|k| (k.as_ptr() as usize - contents.as_ptr() as usize) as u32);
            if let Some(p) = self.cur.get_mut(i) {
                p.at = Some(EntryRef {
                    block: at as u64,
                    block_len: clen as u32,
                    slot: slot as u32,
                    crc: p.crc,
                });
                p.key_off = key_off;
            }
        }
        self.chunk_entries.append(&mut self.block_entries);
        self.block.reset();
        self.encode.end_block(start);
        if self.chunk.len() >= BUFFER_CHUNK_BYTES {
            self.write_chunk()?;
        }
        Ok(())
    }

    /// Writes the chunk's blocks as one buffer object (one bulk copy) and points its
    /// entries into it.
    fn write_chunk(&mut self) -> Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let bid = (self.new_file_number)();
        let mut obj = self.tier.alloc_table_object(
            bid,
            NvmObjectKind::TableBuffer,
            ptable::BUFFER_HEADER_LEN + self.chunk.len() as u64,
        )?;
        obj.weight = self.chunk_weight;
        self.unrecorded.push(obj);
        let data_at = ptable::write_buffer(self.tier.region(), obj.extent(), bid, &self.chunk)?;
        for &i in &self.chunk_entries {
            if let Some(p) = self.cur.get_mut(i) {
                if let Some(r) = p.at.as_mut() {
                    r.block += data_at;
                }
                p.buffer = Some(bid);
            }
        }
        self.cur_data_bytes += self.chunk.len() as u64;
        self.cur_buffers.push(obj);
        self.chunk.clear();
        self.chunk_entries.clear();
        self.chunk_weight = 0;
        Ok(())
    }

    /// Writes the gathered entries as one table.
    fn write_current(&mut self) -> Result<()> {
        self.finish_block()?;
        self.write_chunk()?;
        let mut pending = std::mem::take(&mut self.cur);
        let mut bytes = std::mem::take(&mut self.bytes);
        let buffers = std::mem::take(&mut self.cur_buffers);
        let data_bytes = std::mem::take(&mut self.cur_data_bytes);
        let encode_nanos = std::mem::take(&mut self.encode).nanos();
        self.cur_bytes = 0;
        self.cur_copied = 0;
        let written = if pending.is_empty() {
            Ok(())
        } else {
            self.write_index(&pending, &bytes, &buffers, data_bytes, encode_nanos)
        };
        // The arena and the list keep their capacity for the next table.
        pending.clear();
        bytes.clear();
        self.cur = pending;
        self.bytes = bytes;
        written
    }

    /// Writes the index of one table over `entries` (keys and inline values in `bytes`),
    /// whose copied entries went to `buffers` (`data_bytes` of blocks, encoded in
    /// `encode_nanos`).
    fn write_index(
        &mut self,
        entries: &[Pending],
        bytes: &[u8],
        buffers: &[NvmObject],
        data_bytes: u64,
        encode_nanos: u64,
    ) -> Result<()> {
        let region = Arc::clone(self.tier.region());
        let id = (self.new_file_number)();
        let inline_bytes: u64 = entries
            .iter()
            .filter(|p| p.value_in_arena)
            .map(|p| inline_block_len(p.key_len, p.value_len) as u64)
            .sum();
        let inputs = self.out.inputs.clone().unwrap_or_default();
        let len = index_len(entries.len() as u64, inputs.len(), self.bloom_bits) + inline_bytes;
        let mut idx = self
            .tier
            .alloc_table_object(id, NvmObjectKind::TableIndex, len)?;
        idx.weight = entries
            .iter()
            .filter(|p| p.value_in_arena)
            .map(|p| entry_weight(p.key(bytes), p.value_len, true))
            .sum();
        self.unrecorded.push(idx);
        let resumable = self.out.inputs.is_some();
        if resumable && let Some(rec) = self.recorder {
            let objs: Vec<NvmObject> = buffers.iter().copied().chain([idx]).collect();
            rec.record(&objs)?;
            self.unrecorded.retain(|o| !objs.contains(o));
            self.recorded.extend(objs);
        }
        // A shared byte prefix of the first and last keys is shared by all only in bytewise
        // order.
        let prefix_len = match (entries.first(), entries.last()) {
            (Some(f), Some(l)) if self.order.is_bytewise() => {
                let (a, b) = (user_key(f.key(bytes)), user_key(l.key(bytes)));
                a.iter().zip(b).take_while(|(x, y)| x == y).count()
            }
            _ => 0,
        };
        let header = PTableHeader {
            id,
            level: self.out.level as u32,
            kind: u32::from(resumable),
            inputs,
            prefix_len: prefix_len as u32,
        };
        let mut b =
            PTableBuilder::create(region, idx.extent(), &header, self.bloom_bits, &self.order)?;
        let mut last_ck = b.bytes_written();
        let mut meta = NvmMetaBuilder::default();
        for p in entries {
            let key = p.key(bytes);
            match (p.at, p.inline_value(bytes)) {
                (Some(r), _) => {
                    // A known offset: the entry was copied into one of this table's
                    // buffers, or the input iterator showed its key in place.
                    match p.key_off {
                        Some(o) => b.add_ref_at(key, r, o)?,
                        None => b.add_ref(key, r)?,
                    }
                    let owner = match p.buffer {
                        Some(buf) => Some((buf, false)),
                        None => self.source_of(r.block),
                    };
                    let (owner, inline) = owner.ok_or_else(|| {
                        Error::corruption(
                            r.block,
                            "an NVM entry reference outside every input object",
                        )
                    })?;
                    meta.add(key, p.value_len, owner, inline);
                }
                (None, Some(v)) => {
                    b.add_inline(key, v)?;
                    meta.add(key, v.len(), id, true);
                }
                (None, None) => {
                    return Err(Error::InvalidArgument(
                        "NVM sink: an entry with neither a value nor a reference".into(),
                    ));
                }
            }
            // `ps` persists node by node (the paper's persistent skip list: an entry copied
            // inline exists only without a persistent buffer); resumable outputs checkpoint
            // every CHECKPOINT_BYTES.
            if p.value_in_arena || (resumable && b.bytes_written() - last_ck >= CHECKPOINT_BYTES) {
                b.checkpoint()?;
                last_ck = b.bytes_written();
            }
        }
        let index_bytes = b.finish()?;
        let Some(meta) = meta.finish(id, |o| buffers.iter().any(|b| b.id == o)) else {
            return Ok(());
        };
        let objects: Vec<NvmObject> = self
            .unrecorded
            .iter()
            .filter(|o| o.id == id || buffers.iter().any(|b| b.id == o.id))
            .copied()
            .collect();
        self.written.push(WrittenTable {
            meta,
            encode_nanos,
            data_bytes,
            bytes_written: data_bytes + index_bytes,
            objects,
            copied_block_bytes: 0,
        });
        Ok(())
    }
}

impl TableSink for NvmSink<'_> {
    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add_located(key, value, None)
    }

    fn add_located(&mut self, key: &[u8], value: &[u8], at: Option<EntryRef>) -> Result<()> {
        let point = at.filter(|r| {
            self.method.byte_addressable()
                && !self
                    .evacuate
                    .iter()
                    .any(|&(s, e)| r.block >= s && r.block < e)
        });
        self.cur_bytes += (key.len() + value.len()) as u64;
        let key_off = point
            .and_then(|r| mezz_nvtable::ptable::key_offset_in_place(self.tier.region(), key, r));
        let copied = point.is_none();
        let into_buffer = copied && self.method.persistent_buffer();
        let key_at = self.bytes.len();
        self.bytes.extend_from_slice(key);
        if copied && !into_buffer {
            self.bytes.extend_from_slice(value);
        }
        if copied {
            self.cur_copied += (key.len() + value.len()) as u64;
        }
        self.cur.push(Pending {
            key_at,
            key_len: key.len(),
            value_in_arena: copied && !into_buffer,
            at: point,
            key_off,
            value_len: value.len(),
            crc: if into_buffer {
                entry_crc(key, value)
            } else {
                0
            },
            buffer: None,
        });
        if into_buffer {
            let start = self.encode.start_add();
            self.block.add_with_value(key, value);
            let full = self.block.estimated_size() >= self.block_size;
            self.encode.end_add(start, key.len() + value.len());
            self.block_entries.push(self.cur.len() - 1);
            self.chunk_weight += entry_weight(key, value.len(), false);
            if full {
                self.finish_block()?;
            }
        }
        Ok(())
    }

    fn current_bytes(&self) -> Option<u64> {
        (!self.cur.is_empty()).then_some(self.cur_bytes)
    }

    fn finish_table(&mut self) -> Result<()> {
        self.write_current()
    }

    fn finish(&mut self) -> Result<Vec<WrittenTable>> {
        self.write_current()?;
        // Objects recorded early stay recorded; the installing edit records the rest.
        self.unrecorded.clear();
        self.recorded.clear();
        Ok(std::mem::take(&mut self.written))
    }

    fn abandon(&mut self) {
        self.cur.clear();
        self.bytes.clear();
        self.block.reset();
        self.block_entries.clear();
        self.chunk.clear();
        self.chunk_entries.clear();
        self.chunk_weight = 0;
        self.cur_buffers.clear();
        self.written.clear();
        for o in self.unrecorded.drain(..) {
            self.tier.free(&o);
        }
        if !self.recorded.is_empty()
            && let Some(r) = self.recorder
        {
            r.forget(&self.recorded);
        }
        self.recorded.clear();
    }
}
