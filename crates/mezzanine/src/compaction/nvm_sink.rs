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
//! A table's entries are gathered in DRAM (keys and references; values only when they are
//! copied) until the merge loop cuts it, so its objects are allocated at their exact size.
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
use mezz_format::sst::{BLOCK_TYPE_RAW, append_block_frame};
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

/// An entry of the table being gathered.
/// A gathered entry: its key (and, when copied, its value right after it) in the sink's
/// byte arena (`NvmSink::bytes`), so gathering costs no allocation per entry.
struct Pending {
    /// Where the key starts in the arena.
    key_at: usize,
    key_len: usize,
    /// Whether the value follows the key in the arena (the entry is copied).
    copied: bool,
    /// Where it lives, when it is pointed at.
    at: Option<EntryRef>,
    /// Where its key sits in the block `at` points at, when the input showed it there.
    key_off: Option<u32>,
    value_len: usize,
}

/// A gathered entry seen through the arena.
struct Entry<'b> {
    key: &'b [u8],
    /// The value, when the entry is copied.
    value: Option<&'b [u8]>,
    at: Option<EntryRef>,
    key_off: Option<u32>,
    value_len: usize,
}

impl Pending {
    fn view<'b>(&self, bytes: &'b [u8]) -> Entry<'b> {
        let key_end = self.key_at + self.key_len;
        Entry {
            key: &bytes[self.key_at..key_end],
            value: self
                .copied
                .then(|| &bytes[key_end..key_end + self.value_len]),
            at: self.at,
            key_off: self.key_off,
            value_len: self.value_len,
        }
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
    /// The gathered entries' keys and copied values.
    bytes: Vec<u8>,
    cur_bytes: u64,
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
        let copied: u64 = self
            .cur
            .iter()
            .filter(|e| e.copied)
            .map(|e| (e.key_len + e.value_len) as u64)
            .sum();
        let inputs = self.out.inputs.as_ref().map_or(0, Vec::len);
        copied + copied / 8 + index_len(self.cur.len() as u64, inputs, self.bloom_bits)
    }

    /// Writes the gathered entries as one table.
    fn write_current(&mut self) -> Result<()> {
        let mut pending = std::mem::take(&mut self.cur);
        let mut bytes = std::mem::take(&mut self.bytes);
        self.cur_bytes = 0;
        if pending.is_empty() {
            return Ok(());
        }
        let entries: Vec<Entry<'_>> = pending.iter().map(|p| p.view(&bytes)).collect();
        let written = self.write_entries(&entries);
        drop(entries);
        // The arena and the list keep their capacity for the next table.
        pending.clear();
        bytes.clear();
        self.cur = pending;
        self.bytes = bytes;
        written
    }

    /// Writes `entries` as one table.
    fn write_entries(&mut self, entries: &[Entry<'_>]) -> Result<()> {
        let region = Arc::clone(self.tier.region());
        let id = (self.new_file_number)();
        let encode_start = Instant::now();
        // Copied entries: into a new buffer (`pb`) or inline (`ps`, `ps+bac`).
        let mut refs: Vec<Option<EntryRef>> = entries.iter().map(|e| e.at).collect();
        // Where each copied entry's key sits in its block of the new buffer (known from the
        // DRAM copy, so the index needs no read of the buffer to find it).
        let mut key_offs: Vec<Option<u32>> = entries.iter().map(|e| e.key_off).collect();
        let mut inline_bytes = 0u64;
        let mut buffer: Option<NvmObject> = None;
        let mut data_bytes = 0u64;
        if self.method.persistent_buffer() {
            let mut data = Vec::new();
            let mut w = KeySetWriter::new(IndexKind::ValueRef);
            let mut pending: Vec<usize> = Vec::new();
            let flush = |w: &mut KeySetWriter,
                         pending: &mut Vec<usize>,
                         data: &mut Vec<u8>,
                         refs: &mut Vec<Option<EntryRef>>,
                         key_offs: &mut Vec<Option<u32>>|
             -> Result<()> {
                if w.is_empty() {
                    return Ok(());
                }
                let at = data.len() as u64;
                let contents = w.finish();
                let clen = contents.len() as u32;
                let block = KeySetRef::parse_trailer(contents, at)?;
                for (slot, &i) in pending.iter().enumerate() {
                    if let (Some(e), Some(r)) = (entries.get(i), refs.get_mut(i)) {
                        *r = Some(EntryRef {
                            block: at,
                            block_len: clen,
                            slot: slot as u32,
                            crc: entry_crc(e.key, e.value.unwrap_or_default()),
                        });
                    }
                    if let (Some(k), Some(o)) = (block.key(slot), key_offs.get_mut(i)) {
                        *o = Some((k.as_ptr() as usize - contents.as_ptr() as usize) as u32);
                    }
                }
                append_block_frame(data, contents, BLOCK_TYPE_RAW);
                pending.clear();
                w.reset();
                Ok(())
            };
            for (i, e) in entries.iter().enumerate() {
                let Some(v) = e.value else { continue };
                w.add_with_value(e.key, v);
                pending.push(i);
                if w.estimated_size() >= self.block_size {
                    flush(&mut w, &mut pending, &mut data, &mut refs, &mut key_offs)?;
                }
            }
            flush(&mut w, &mut pending, &mut data, &mut refs, &mut key_offs)?;
            if !data.is_empty() {
                let bid = (self.new_file_number)();
                let mut obj = self.tier.alloc_table_object(
                    bid,
                    NvmObjectKind::TableBuffer,
                    ptable::BUFFER_HEADER_LEN + data.len() as u64,
                )?;
                obj.weight = entries
                    .iter()
                    .filter_map(|e| {
                        e.value
                            .as_ref()
                            .map(|v| entry_weight(e.key, v.len(), false))
                    })
                    .sum();
                self.unrecorded.push(obj);
                let data_at = ptable::write_buffer(&region, obj.extent(), bid, &data)?;
                for (r, e) in refs.iter_mut().zip(entries) {
                    if e.value.is_some()
                        && let Some(r) = r
                    {
                        r.block += data_at;
                    }
                }
                data_bytes = data.len() as u64;
                buffer = Some(obj);
            }
        } else {
            for e in entries {
                if let Some(v) = e.value {
                    inline_bytes += inline_block_len(e.key.len(), v.len()) as u64;
                }
            }
        }
        let encode_nanos = encode_start.elapsed().as_nanos() as u64;
        let inputs = self.out.inputs.clone().unwrap_or_default();
        let len = index_len(entries.len() as u64, inputs.len(), self.bloom_bits) + inline_bytes;
        let mut idx = self
            .tier
            .alloc_table_object(id, NvmObjectKind::TableIndex, len)?;
        idx.weight = if self.method.persistent_buffer() {
            0
        } else {
            entries
                .iter()
                .filter_map(|e| e.value.as_ref().map(|v| entry_weight(e.key, v.len(), true)))
                .sum()
        };
        self.unrecorded.push(idx);
        let resumable = self.out.inputs.is_some();
        if resumable && let Some(rec) = self.recorder {
            let objs: Vec<NvmObject> = buffer.iter().copied().chain([idx]).collect();
            rec.record(&objs)?;
            self.unrecorded.retain(|o| !objs.contains(o));
            self.recorded.extend(objs);
        }
        // A shared byte prefix of the first and last keys is shared by all only in bytewise
        // order.
        let prefix_len = match (entries.first(), entries.last()) {
            (Some(f), Some(l)) if self.order.is_bytewise() => {
                let (a, b) = (user_key(f.key), user_key(l.key));
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
        let node_by_node = !self.method.persistent_buffer();
        let mut last_ck = b.bytes_written();
        let mut meta = NvmMetaBuilder::default();
        for ((e, r), key_off) in entries.iter().zip(&refs).zip(&key_offs) {
            match (r, e.value) {
                (Some(r), _) => {
                    // A known offset: the entry was copied into this table's own buffer,
                    // or the input iterator showed its key in place.
                    match key_off {
                        Some(o) => b.add_ref_at(e.key, *r, *o)?,
                        None => b.add_ref(e.key, *r)?,
                    }
                    let owner = match (e.value.is_some(), buffer) {
                        (true, Some(buf)) => Some((buf.id, false)),
                        _ => self.source_of(r.block),
                    };
                    let (owner, inline) = owner.ok_or_else(|| {
                        Error::corruption(
                            r.block,
                            "an NVM entry reference outside every input object",
                        )
                    })?;
                    meta.add(e.key, e.value_len, owner, inline);
                }
                (None, Some(v)) => {
                    b.add_inline(e.key, v)?;
                    meta.add(e.key, v.len(), id, true);
                }
                (None, None) => {
                    return Err(Error::InvalidArgument(
                        "NVM sink: an entry with neither a value nor a reference".into(),
                    ));
                }
            }
            // `ps` persists node by node (the paper's persistent skip list); resumable
            // outputs checkpoint every CHECKPOINT_BYTES.
            let per_node = node_by_node && e.value.is_some();
            if per_node || (resumable && b.bytes_written() - last_ck >= CHECKPOINT_BYTES) {
                b.checkpoint()?;
                last_ck = b.bytes_written();
            }
        }
        let index_bytes = b.finish()?;
        let Some(meta) = meta.finish(id, |o| buffer.is_some_and(|b| b.id == o)) else {
            return Ok(());
        };
        let objects: Vec<NvmObject> = self
            .unrecorded
            .iter()
            .filter(|o| o.id == id || buffer.is_some_and(|b| b.id == o.id))
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
        let key_at = self.bytes.len();
        self.bytes.extend_from_slice(key);
        if point.is_none() {
            self.bytes.extend_from_slice(value);
        }
        self.cur.push(Pending {
            key_at,
            key_len: key.len(),
            copied: point.is_none(),
            at: point,
            key_off,
            value_len: value.len(),
        });
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
