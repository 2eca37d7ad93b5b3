//! Data blocks: the unified KeySet block (JigsawDB) and LevelDB's prefix-compressed block,
//! their builders, a validated owned [`Block`] and its [`BlockIter`].
//!
//! Spec: `docs/formats/keyset.md` (KeySet) and `docs/formats/sst.md` (how blocks sit in a
//! table). All integers little-endian.
//!
//! KeySet layout (every area starts 8-byte aligned; `n` entries):
//! ```text
//! +-----------------------------------------+  offset 0
//! | key area: key 0 | pad | key 1 | pad ... |  each key starts 8-byte aligned
//! +-----------------------------------------+  key_area_len (multiple of 8)
//! | value area: value 0 value 1 ... | pad   |  values contiguous
//! +-----------------------------------------+  + value_area_len (multiple of 8)
//! | entry array, layout 1: n x 16 bytes     |
//! |   key_offset u32 | key_len u32 | index u64                |
//! | or layout 2 (ValueRef only): n x 8 bytes |
//! |   key_offset/8 u16 | key_len u16 | value_end u32          |
//! | or layout 3 (ValueRef, keys of one length): |
//! |   [value_end u32 x n | pad], only if value lengths differ |
//! |   key_len u32 | value_len u32 (u32::MAX: they differ)     |
//! +-----------------------------------------+
//! | trailer 16 bytes: n u32 | key_area_len u32 |              |
//! |   value_area_len u32 | 'K' 'S' version u8 index_kind u8 |
//! +-----------------------------------------+
//! ```
//! `key_offset` is relative to the block start; for [`IndexKind::ValueRef`] (SST blocks) the
//! index field is `value_offset << 32 | value_len`, relative to the value area. Layout 2
//! stores only where each value ends (values are contiguous, so value `i` starts where
//! value `i - 1` ends); the writer uses it whenever the run is ValueRef and every key offset
//! and length fits 16 bits, and layout 1 otherwise. Layout 3 is for ValueRef runs whose keys
//! all have one length: key `i` starts at `i * stride` (the length rounded up to 8), so no
//! record is needed, and value `i` is the `i`-th of equal lengths or ends where the
//! value-end array says; the writer uses it when it is the smaller. Entries are
//! sorted by [`crate::ikey::compare_internal_keys`], so a reader binary-searches the entry
//! array in place ([`KeySetRef::find`]) with no decode step.
//!
//! Prefix layout (LevelDB): entries `varint32 shared | varint32 non_shared |
//! varint32 value_len | key[shared..] | value`, then `restarts: u32 x num_restarts`, then
//! `num_restarts u32`. Every `restart_interval`-th entry stores its whole key.
//!
//! Invariants: [`Block::new`] validates the structure (trailer, every offset and length in
//! range, restart array in order), so a [`BlockIter`] cannot read out of range; a prefix
//! entry that is malformed inside the validated frame makes the iterator invalid with a
//! `Corruption` status. Nothing here panics on bad bytes.
//!
//! Thread-safety: a `Block` is immutable and shared as `Arc<Block>` (the block cache);
//! builders and iterators are single-owner values.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{
    get_fixed32, get_fixed64, get_varint32, put_fixed32, put_fixed64, put_varint32,
};
use crate::iter::InternalIterator;
use crate::order::KeyOrder;
use crate::{CorruptionDetail, Error, Result};

/// Data-block layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockFormat {
    /// The unified, 8-byte aligned KeySet block.
    KeySet,
    /// LevelDB's prefix-compressed block with restart points.
    Prefix,
}

impl BlockFormat {
    /// The persisted code: 0 = KeySet, 1 = Prefix.
    #[must_use]
    pub fn to_u8(self) -> u8 {
        match self {
            Self::KeySet => 0,
            Self::Prefix => 1,
        }
    }

    /// Decodes a persisted code.
    #[must_use]
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::KeySet),
            1 => Some(Self::Prefix),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// KeySet
// ---------------------------------------------------------------------------------------

/// Alignment of every area and key in a KeySet run.
pub const KEYSET_ALIGN: usize = 8;
/// Size of one entry record of a layout-1 run.
pub const KEYSET_ENTRY_LEN: usize = 16;
/// Size of one entry record of a layout-2 (compact) run.
pub const KEYSET_COMPACT_ENTRY_LEN: usize = 8;
/// Size of the KeySet trailer.
pub const KEYSET_TRAILER_LEN: usize = 16;
/// Size of the word before the trailer of a layout-3 run (`key_len u32 | value_len u32`).
pub const KEYSET_UNIFORM_HEADER_LEN: usize = 8;
/// Layout 1: 16-byte entry records (`key_offset u32 | key_len u32 | index u64`).
const KEYSET_V1: u8 = 1;
/// Layout 2, [`IndexKind::ValueRef`] only: 8-byte entry records
/// (`key_offset / 8 u16 | key_len u16 | value_end u32`).
const KEYSET_V2: u8 = 2;
/// Layout 3, [`IndexKind::ValueRef`] only: every key has the same length, so key `i` sits at
/// `i` key strides; no entry record, only a `value_end u32` per entry when the values' lengths
/// differ.
const KEYSET_V3: u8 = 3;
/// The newest KeySet layout version this build reads (it writes 1, 2 and 3).
pub const KEYSET_VERSION: u8 = KEYSET_V3;
/// Largest key offset a compact record can hold (`u16::MAX` units of 8 bytes).
const COMPACT_MAX_KEY_OFFSET: usize = 0xffff * KEYSET_ALIGN;
/// A layout-3 `value_len` meaning "the lengths differ: a value-end array follows the values".
const VARIED_VALUES: u32 = u32::MAX;

/// How a run locates its entries (the layout version, with what layout 3 keeps once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Records {
    /// Layout 1: 16-byte records.
    Wide,
    /// Layout 2: 8-byte records.
    Compact,
    /// Layout 3: keys of `key_len` bytes, each starting 8-byte aligned; values of
    /// `value_len` bytes each, or (`None`) ending where the value-end array says.
    Uniform {
        key_len: usize,
        value_len: Option<usize>,
    },
}

/// Size of one entry record in layout 2 (`compact`) or layout 1.
#[inline]
fn entry_len(compact: bool) -> usize {
    if compact {
        KEYSET_COMPACT_ENTRY_LEN
    } else {
        KEYSET_ENTRY_LEN
    }
}

impl Records {
    /// Bytes of the record area (layout 3: the value-end array, padded, and its header word)
    /// for `n` entries.
    fn area_len(self, n: usize) -> Option<usize> {
        match self {
            Self::Wide => n.checked_mul(KEYSET_ENTRY_LEN),
            Self::Compact => n.checked_mul(KEYSET_COMPACT_ENTRY_LEN),
            Self::Uniform {
                value_len: Some(_), ..
            } => Some(KEYSET_UNIFORM_HEADER_LEN),
            Self::Uniform {
                value_len: None, ..
            } => n
                .checked_mul(4)
                .map(|b| b + pad_len(b) + KEYSET_UNIFORM_HEADER_LEN),
        }
    }
}

/// What the 8-byte index field of a KeySet entry means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum IndexKind {
    /// `value_offset << 32 | value_len`, relative to the run's own value area (SST blocks).
    ValueRef = 0,
    /// Meaning defined by the owner of the run (e.g. an offset into an NVM segment); not
    /// interpreted or checked here.
    Opaque = 1,
}

impl IndexKind {
    /// Decodes a persisted code.
    #[must_use]
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::ValueRef),
            1 => Some(Self::Opaque),
            _ => None,
        }
    }
}

#[inline]
fn pad_len(len: usize) -> usize {
    (KEYSET_ALIGN - len % KEYSET_ALIGN) % KEYSET_ALIGN
}

/// Packs a value reference into an index field.
#[must_use]
#[inline]
pub fn pack_value_ref(offset: u32, len: u32) -> u64 {
    (u64::from(offset) << 32) | u64::from(len)
}

/// Splits an index field into (value offset, value length).
#[must_use]
#[inline]
pub fn unpack_value_ref(index: u64) -> (u32, u32) {
    ((index >> 32) as u32, index as u32)
}

/// Appends a layout-1 entry record (`key_offset u32 | key_len u32 | index u64`).
fn put_layout_1_record(out: &mut Vec<u8>, key_off: usize, key_len: usize, index: u64) {
    put_fixed32(out, key_off as u32);
    put_fixed32(out, key_len as u32);
    put_fixed64(out, index);
}

/// Builds a KeySet run. Keys must be added in strictly increasing internal-key order.
///
/// A value run ([`IndexKind::ValueRef`]) is finished in whichever of layouts 2 and 3 is
/// smaller (3 needs keys of one length), or in layout 1 when neither can hold it; an opaque
/// run always in layout 1.
///
/// REQUIRES: the finished run stays below 4 GiB (offsets are u32); callers bound entry
/// sizes and flush runs at a target size.
#[derive(Debug, Clone)]
pub struct KeySetWriter {
    keys: Vec<u8>,
    values: Vec<u8>,
    /// The entry records, in layout 2 while `compact` holds, else in layout 1.
    entries: Vec<u8>,
    /// Whether the run is still written in layout 2 (ValueRef, every key offset and length
    /// fits 16 bits so far).
    compact: bool,
    /// While every key added has this length (ValueRef runs only): layout 3 can hold the run.
    key_len: Option<usize>,
    /// While every value added has this length.
    value_len: Option<usize>,
    count: usize,
    kind: IndexKind,
    out: Vec<u8>,
}

impl KeySetWriter {
    /// An empty writer whose index fields have the given meaning.
    #[must_use]
    pub fn new(kind: IndexKind) -> Self {
        Self {
            keys: Vec::new(),
            values: Vec::new(),
            entries: Vec::new(),
            compact: kind == IndexKind::ValueRef,
            key_len: None,
            value_len: None,
            count: 0,
            kind,
            out: Vec::new(),
        }
    }

    fn push_entry(&mut self, key: &[u8], index: u64) {
        let key_off = self.keys.len();
        self.keys.extend_from_slice(key);
        let pad = pad_len(key.len());
        self.keys.resize(self.keys.len() + pad, 0);
        if self.compact && (key_off > COMPACT_MAX_KEY_OFFSET || key.len() > 0xffff) {
            self.switch_to_layout_1();
        }
        if self.compact {
            // ValueRef values are contiguous: the record keeps where this one ends.
            let (value_off, value_len) = unpack_value_ref(index);
            let word = (key_off / KEYSET_ALIGN) as u32 | ((key.len() as u32) << 16);
            self.entries.extend_from_slice(&word.to_le_bytes());
            self.entries
                .extend_from_slice(&(value_off + value_len).to_le_bytes());
        } else {
            put_layout_1_record(&mut self.entries, key_off, key.len(), index);
        }
        self.count += 1;
    }

    /// Rewrites the layout-2 records written so far in layout 1, for an entry layout 2
    /// cannot hold (once per run at most).
    fn switch_to_layout_1(&mut self) {
        let compact = std::mem::take(&mut self.entries);
        self.entries.reserve(compact.len() * 2);
        let mut value_start = 0u32;
        for record in compact.chunks_exact(KEYSET_COMPACT_ENTRY_LEN) {
            let (ko, kl) = KeySetRef::compact_key(get_fixed32(record, 0).unwrap_or(0));
            let value_end = get_fixed32(record, 4).unwrap_or(0);
            let index = pack_value_ref(value_start, value_end.saturating_sub(value_start));
            put_layout_1_record(&mut self.entries, ko, kl, index);
            value_start = value_end;
        }
        self.compact = false;
    }

    /// Adds an entry whose value is stored in this run's value area
    /// ([`IndexKind::ValueRef`]).
    pub fn add_with_value(&mut self, key: &[u8], value: &[u8]) {
        debug_assert_eq!(self.kind, IndexKind::ValueRef);
        if self.count == 0 {
            self.key_len = Some(key.len());
            self.value_len = Some(value.len());
        } else {
            if self.key_len != Some(key.len()) {
                self.key_len = None;
            }
            if self.value_len != Some(value.len()) {
                self.value_len = None;
            }
        }
        let index = pack_value_ref(self.values.len() as u32, value.len() as u32);
        self.values.extend_from_slice(value);
        self.push_entry(key, index);
    }

    /// Adds an entry with a caller-defined index field ([`IndexKind::Opaque`]).
    pub fn add_with_index(&mut self, key: &[u8], index: u64) {
        self.push_entry(key, index);
    }

    /// Layout 3's record shape, if the run can take it and it is smaller than layout 1 or 2.
    fn uniform(&self) -> Option<Records> {
        // Only `add_with_value` (ValueRef) sets `key_len`.
        let key_len = self.key_len.filter(|&k| u32::try_from(k).is_ok())?;
        let value_len = self
            .value_len
            .filter(|&v| u32::try_from(v).is_ok_and(|v| v != VARIED_VALUES));
        let shape = Records::Uniform { key_len, value_len };
        (shape.area_len(self.count)? < self.entries.len()).then_some(shape)
    }

    /// Where the value of the entry whose record (layout 1 or 2) is `record` ends.
    fn record_value_end(&self, record: &[u8]) -> u32 {
        if self.compact {
            get_fixed32(record, 4).unwrap_or(0)
        } else {
            let (off, len) = unpack_value_ref(get_fixed64(record, 8).unwrap_or(0));
            off + len
        }
    }

    /// Size of the run if finished now.
    #[must_use]
    pub fn estimated_size(&self) -> usize {
        let records = match self.uniform() {
            Some(shape) => shape.area_len(self.count).unwrap_or(usize::MAX),
            None => self.entries.len(),
        };
        self.keys.len()
            + self.values.len()
            + pad_len(self.values.len())
            + records
            + KEYSET_TRAILER_LEN
    }

    /// Number of entries added.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no entry was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Lays out the run and returns its bytes (valid until the next call on `self`).
    pub fn finish(&mut self) -> &[u8] {
        self.out.clear();
        self.out.reserve(self.estimated_size());
        // Layouts 1-3 share the key area: each key at an 8-byte boundary, in entry order.
        self.out.extend_from_slice(&self.keys);
        self.out.extend_from_slice(&self.values);
        self.put_tail();
        &self.out
    }

    /// Lays out the run as three pieces whose concatenation is what [`KeySetWriter::finish`]
    /// returns: the key area, the value area, then the rest (the value area's padding, the
    /// records and the trailer). A writer of the run can then copy the keys and values
    /// once, straight to their destination, instead of gathering them first. Valid until
    /// the next call on `self`.
    pub fn finish_parts(&mut self) -> [&[u8]; 3] {
        self.out.clear();
        self.put_tail();
        [&self.keys, &self.values, &self.out]
    }

    /// Appends to `out` everything of the run after its value area. The key area is a
    /// multiple of 8 bytes long, so the value area's padding depends only on its length.
    fn put_tail(&mut self) {
        let pad = pad_len(self.values.len());
        self.out.resize(self.out.len() + pad, 0);
        let version = match self.uniform() {
            Some(Records::Uniform {
                key_len, value_len, ..
            }) => {
                if value_len.is_none() {
                    // The value ends, from the records written so far.
                    let len = entry_len(self.compact);
                    for record in self.entries.chunks_exact(len) {
                        let end = self.record_value_end(record);
                        put_fixed32(&mut self.out, end);
                    }
                    let pad = pad_len(4 * self.count);
                    self.out.resize(self.out.len() + pad, 0);
                }
                put_fixed32(&mut self.out, key_len as u32);
                put_fixed32(&mut self.out, value_len.map_or(VARIED_VALUES, |v| v as u32));
                KEYSET_V3
            }
            _ => {
                self.out.extend_from_slice(&self.entries);
                if self.compact { KEYSET_V2 } else { KEYSET_V1 }
            }
        };
        put_fixed32(&mut self.out, self.count as u32);
        put_fixed32(&mut self.out, self.keys.len() as u32);
        put_fixed32(&mut self.out, (self.values.len() + pad) as u32);
        self.out
            .extend_from_slice(&[b'K', b'S', version, self.kind as u8]);
    }

    /// Clears the writer for a new run (keeps its allocations).
    pub fn reset(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.entries.clear();
        self.compact = self.kind == IndexKind::ValueRef;
        self.key_len = None;
        self.value_len = None;
        self.out.clear();
        self.count = 0;
    }
}

/// The parsed trailer of a KeySet run: where its areas are and how its entries are found.
#[derive(Debug, Clone, Copy)]
struct Shape {
    n: usize,
    key_area_len: usize,
    value_area_len: usize,
    /// Where the record area starts (after the value area).
    entries_start: usize,
    kind: IndexKind,
    records: Records,
}

/// A zero-copy view of a KeySet run.
///
/// Built by [`KeySetRef::parse`] (validates every entry, so every accessor returns `Some`
/// for `i < num_entries()`) or [`KeySetRef::parse_trailer`] (O(1); entries are checked on
/// access and a bad one reads as `None`).
#[derive(Debug, Clone, Copy)]
pub struct KeySetRef<'a> {
    data: &'a [u8],
    s: Shape,
}

/// The parsed trailer of a KeySet run ([`KeySetRef::trailer`]), kept to view the same run
/// again without reading its trailer ([`KeySetRef::with_trailer`]): a reader stepping
/// through entries of one run reads its trailer once.
#[derive(Debug, Clone, Copy)]
pub struct KeySetTrailer(Shape);

impl<'a> KeySetRef<'a> {
    /// The parsed trailer of this run.
    #[must_use]
    pub fn trailer(&self) -> KeySetTrailer {
        KeySetTrailer(self.s)
    }

    /// A view of `data` with the trailer `t` parsed from the same bytes before (by
    /// [`KeySetRef::parse_trailer`] or [`KeySetRef::parse`]). With a trailer of other
    /// bytes the view stays within `data`: entries are checked on access as after
    /// `parse_trailer`, and one that does not fit reads as `None`.
    #[must_use]
    pub fn with_trailer(data: &'a [u8], t: KeySetTrailer) -> Self {
        Self { data, s: t.0 }
    }

    /// Parses and checks the trailer and the area sizes only. `base_offset` is where `data`
    /// starts in its file (for error offsets).
    ///
    /// # Errors
    /// `Corruption` if the trailer is malformed or the areas do not add up to `data.len()`;
    /// `UnsupportedVersion` for an unknown layout version.
    pub fn parse_trailer(data: &'a [u8], base_offset: u64) -> Result<Self> {
        let corrupt = |off: usize, what: &str| {
            Error::corruption(
                base_offset.saturating_add(off as u64),
                format!("KeySet block: {what}"),
            )
        };
        let t = data
            .len()
            .checked_sub(KEYSET_TRAILER_LEN)
            .ok_or_else(|| corrupt(0, "shorter than its trailer"))?;
        let n = get_fixed32(data, t).ok_or_else(|| corrupt(t, "trailer"))? as usize;
        let key_area_len = get_fixed32(data, t + 4).ok_or_else(|| corrupt(t, "trailer"))? as usize;
        let value_area_len =
            get_fixed32(data, t + 8).ok_or_else(|| corrupt(t, "trailer"))? as usize;
        let word = get_fixed32(data, t + 12).ok_or_else(|| corrupt(t, "trailer"))?;
        let [m0, m1, version, kind] = word.to_le_bytes();
        if m0 != b'K' || m1 != b'S' {
            return Err(Error::corruption(
                base_offset.saturating_add((t + 12) as u64),
                CorruptionDetail::BadMagic {
                    what: "KeySet block trailer",
                    found: u64::from(u16::from_le_bytes([m0, m1])),
                },
            ));
        }
        if version > KEYSET_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "KeySet block",
                found: u32::from(version),
                supported: u32::from(KEYSET_VERSION),
            });
        }
        if version < KEYSET_V1 {
            return Err(corrupt(t + 14, "bad version"));
        }
        let kind = IndexKind::from_u8(kind).ok_or_else(|| corrupt(t + 15, "unknown index kind"))?;
        if version >= KEYSET_V2 && kind != IndexKind::ValueRef {
            return Err(corrupt(
                t + 15,
                &format!("layout {version} with an opaque index"),
            ));
        }
        if !key_area_len.is_multiple_of(KEYSET_ALIGN)
            || !value_area_len.is_multiple_of(KEYSET_ALIGN)
        {
            return Err(corrupt(t, "area length not 8-byte aligned"));
        }
        let records = match version {
            KEYSET_V1 => Records::Wide,
            KEYSET_V2 => Records::Compact,
            _ => Self::uniform_records(data, t, n, key_area_len, value_area_len)
                .map_err(|what| corrupt(t, what))?,
        };
        let total = records
            .area_len(n)
            .and_then(|e| e.checked_add(key_area_len))
            .and_then(|e| e.checked_add(value_area_len))
            .and_then(|e| e.checked_add(KEYSET_TRAILER_LEN));
        if total != Some(data.len()) {
            return Err(corrupt(
                t,
                &format!(
                    "areas do not add up: {n} entries, keys {key_area_len}, values \
                     {value_area_len}, block {}",
                    data.len()
                ),
            ));
        }
        Ok(Self {
            data,
            s: Shape {
                n,
                key_area_len,
                value_area_len,
                entries_start: key_area_len + value_area_len,
                kind,
                records,
            },
        })
    }

    /// Reads and checks a layout-3 header word (just before the trailer at `t`): the key
    /// area must be `n` key strides, and fixed-length values must fill the value area up to
    /// its padding.
    fn uniform_records(
        data: &[u8],
        t: usize,
        n: usize,
        key_area_len: usize,
        value_area_len: usize,
    ) -> std::result::Result<Records, &'static str> {
        let h = t
            .checked_sub(KEYSET_UNIFORM_HEADER_LEN)
            .ok_or("shorter than its layout-3 header")?;
        let key_len = get_fixed32(data, h).ok_or("layout-3 header")? as usize;
        let value_len = get_fixed32(data, h + 4).ok_or("layout-3 header")?;
        if n.checked_mul(key_len + pad_len(key_len)) != Some(key_area_len) {
            return Err("layout 3: key area is not one key stride per entry");
        }
        let value_len = (value_len != VARIED_VALUES).then_some(value_len as usize);
        if let Some(v) = value_len {
            let values = n.checked_mul(v).ok_or("layout 3: value area overflows")?;
            if values.checked_add(pad_len(values)) != Some(value_area_len) {
                return Err("layout 3: value area is not one value length per entry");
            }
        }
        Ok(Records::Uniform { key_len, value_len })
    }

    /// Parses the trailer and checks every entry (key inside the key area and 8-byte
    /// aligned; for [`IndexKind::ValueRef`], value inside the value area).
    ///
    /// # Errors
    /// `Corruption` naming the offset of the first bad field.
    pub fn parse(data: &'a [u8], base_offset: u64) -> Result<Self> {
        let r = Self::parse_trailer(data, base_offset)?;
        if let Records::Uniform {
            value_len: Some(_), ..
        } = r.s.records
        {
            // Every key and value place follows from the trailer, checked above.
            return Ok(r);
        }
        for i in 0..r.s.n {
            let e = r.record(i).unwrap_or(r.s.entries_start);
            let bad = |what: &str| {
                Error::corruption(
                    base_offset.saturating_add(e as u64),
                    format!("KeySet block: entry {i}: {what}"),
                )
            };
            // Only a value-end record (layout 2 or 3) can fail to decode here: its value
            // ends before the previous one.
            let (ko, kl, idx) = r
                .entry(i)
                .ok_or_else(|| bad("value ends before the previous value"))?;
            if !ko.is_multiple_of(KEYSET_ALIGN)
                || ko.checked_add(kl).is_none_or(|end| end > r.s.key_area_len)
            {
                return Err(bad("key outside the key area"));
            }
            if r.s.kind == IndexKind::ValueRef {
                let (vo, vl) = unpack_value_ref(idx);
                if (vo as usize)
                    .checked_add(vl as usize)
                    .is_none_or(|end| end > r.s.value_area_len)
                {
                    return Err(bad("value outside the value area"));
                }
            }
        }
        Ok(r)
    }

    /// Number of entries.
    #[must_use]
    #[inline]
    pub fn num_entries(&self) -> usize {
        self.s.n
    }

    /// What the index fields mean.
    #[must_use]
    pub fn index_kind(&self) -> IndexKind {
        self.s.kind
    }

    /// The whole run.
    #[must_use]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// Where in the run reading entry `i`'s value first touches memory, without reading
    /// anything but the trailer (already parsed): the value's first and last bytes when every
    /// value has one length (layout 3 with a fixed value length), else the record that holds
    /// where the value lies. For prefetching: unchecked, `None` past the last entry or for
    /// an empty value; an offset may lie outside the run if the trailer lies.
    #[must_use]
    #[inline]
    pub fn value_touch(&self, i: usize) -> [Option<usize>; 2] {
        if i >= self.s.n {
            return [None, None];
        }
        match self.s.records {
            Records::Uniform {
                value_len: Some(v), ..
            } if v > 0 => {
                let start = self.s.key_area_len + i * v;
                [Some(start), Some(start + v - 1)]
            }
            Records::Uniform {
                value_len: Some(_), ..
            } => [None, None],
            _ => [self.record(i), None],
        }
    }

    /// Where record `i` starts (`None` past the last entry). Layout 3: where entry `i`'s
    /// value end is (meaningful only with values of different lengths).
    #[inline]
    fn record(&self, i: usize) -> Option<usize> {
        let len = match self.s.records {
            Records::Wide => entry_len(false),
            Records::Compact => entry_len(true),
            Records::Uniform { .. } => 4,
        };
        (i < self.s.n).then(|| self.s.entries_start + i * len)
    }

    /// Key offset and length of entry `i`, whose record starts at `e` (`record(i)`).
    #[inline]
    fn entry_key(&self, i: usize, e: usize) -> Option<(usize, usize)> {
        match self.s.records {
            Records::Wide => Some((
                get_fixed32(self.data, e)? as usize,
                get_fixed32(self.data, e + 4)? as usize,
            )),
            Records::Compact => Some(Self::compact_key(get_fixed32(self.data, e)?)),
            Records::Uniform { key_len, .. } => Some((i * (key_len + pad_len(key_len)), key_len)),
        }
    }

    /// Key offset and length of a compact record's first word.
    #[inline]
    fn compact_key(word: u32) -> (usize, usize) {
        (
            (word & 0xffff) as usize * KEYSET_ALIGN,
            (word >> 16) as usize,
        )
    }

    /// Entry `i` as (key offset, key length, index field). A value-end record's index field
    /// is the value reference its value end and the previous one make (`None` if its value
    /// would end before it starts).
    #[inline]
    fn entry(&self, i: usize) -> Option<(usize, usize, u64)> {
        let e = self.record(i)?;
        let (ko, kl) = self.entry_key(i, e)?;
        // Layouts 2 and 3 (varied values) keep value ends: (where the array is, its stride).
        let ends = match self.s.records {
            Records::Wide => return Some((ko, kl, get_fixed64(self.data, e + 8)?)),
            Records::Uniform {
                value_len: Some(v), ..
            } => {
                let start = u32::try_from(i.checked_mul(v)?).ok()?;
                return Some((ko, kl, pack_value_ref(start, v as u32)));
            }
            Records::Compact => (e + 4, KEYSET_COMPACT_ENTRY_LEN),
            Records::Uniform {
                value_len: None, ..
            } => (e, 4),
        };
        let end = get_fixed32(self.data, ends.0)?;
        let start = match i {
            0 => 0,
            _ => get_fixed32(self.data, ends.0 - ends.1)?,
        };
        Some((ko, kl, pack_value_ref(start, end.checked_sub(start)?)))
    }

    /// Byte range of key `i` inside the run.
    #[inline]
    fn key_range(&self, i: usize) -> Option<(usize, usize)> {
        let (ko, kl) = self.entry_key(i, self.record(i)?)?;
        let end = ko.checked_add(kl)?;
        (end <= self.s.key_area_len).then_some((ko, end))
    }

    /// Byte range of value `i` inside the run ([`IndexKind::ValueRef`] only).
    #[inline]
    fn value_range(&self, i: usize) -> Option<(usize, usize)> {
        if self.s.kind != IndexKind::ValueRef {
            return None;
        }
        let (vo, vl) = unpack_value_ref(self.entry(i)?.2);
        let end = (vo as usize).checked_add(vl as usize)?;
        let value_start = self.s.key_area_len;
        (end <= self.s.value_area_len).then_some((value_start + vo as usize, value_start + end))
    }

    /// Key `i`.
    #[must_use]
    #[inline]
    pub fn key(&self, i: usize) -> Option<&'a [u8]> {
        let (s, e) = self.key_range(i)?;
        self.data.get(s..e)
    }

    /// Index field `i`.
    #[must_use]
    #[inline]
    pub fn index_field(&self, i: usize) -> Option<u64> {
        Some(self.entry(i)?.2)
    }

    /// Value `i` ([`IndexKind::ValueRef`] runs only).
    #[must_use]
    #[inline]
    pub fn value(&self, i: usize) -> Option<&'a [u8]> {
        let (s, e) = self.value_range(i)?;
        self.data.get(s..e)
    }

    /// Lower bound: the index of the first entry whose key is >= `ikey` in the internal-key
    /// order of `order` (`num_entries()` if none). An unreadable entry compares as greater.
    #[must_use]
    pub fn find(&self, ikey: &[u8], order: &KeyOrder) -> usize {
        let (mut lo, mut hi) = (0, self.s.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid) {
                Some(k) if order.compare_internal(k, ikey) == Ordering::Less => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }
}
// ---------------------------------------------------------------------------------------
// Prefix (LevelDB) block builder
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct PrefixBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    count: usize,
    finished: bool,
}

impl PrefixBuilder {
    fn new(restart_interval: usize) -> Self {
        Self {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            count: 0,
            finished: false,
        }
    }

    fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self
                .last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        let unshared = key.get(shared..).unwrap_or_default();
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, unshared.len() as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(unshared);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(unshared);
        self.counter += 1;
        self.count += 1;
    }

    fn estimated_size(&self) -> usize {
        self.buf.len() + self.restarts.len() * 4 + 4
    }

    fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_fixed32(&mut self.buf, r);
            }
            put_fixed32(&mut self.buf, self.restarts.len() as u32);
            self.finished = true;
        }
        &self.buf
    }

    fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.count = 0;
        self.finished = false;
    }
}

#[derive(Debug, Clone)]
enum BuilderInner {
    KeySet(KeySetWriter),
    Prefix(PrefixBuilder),
}

/// Builds one data block in either format.
#[derive(Debug, Clone)]
pub struct BlockBuilder {
    inner: BuilderInner,
}

impl BlockBuilder {
    /// A builder for `format`; `restart_interval` is used by the Prefix format only.
    #[must_use]
    pub fn new(format: BlockFormat, restart_interval: usize) -> Self {
        let inner = match format {
            BlockFormat::KeySet => BuilderInner::KeySet(KeySetWriter::new(IndexKind::ValueRef)),
            BlockFormat::Prefix => BuilderInner::Prefix(PrefixBuilder::new(restart_interval)),
        };
        Self { inner }
    }

    /// The format being built.
    #[must_use]
    pub fn format(&self) -> BlockFormat {
        match self.inner {
            BuilderInner::KeySet(_) => BlockFormat::KeySet,
            BuilderInner::Prefix(_) => BlockFormat::Prefix,
        }
    }

    /// Appends an entry.
    ///
    /// REQUIRES: `ikey` is greater than every key added since the last `reset` (internal-key
    /// order); `finish` has not been called since the last `reset`; key and value are each
    /// below 4 GiB.
    #[inline]
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) {
        match &mut self.inner {
            BuilderInner::KeySet(w) => w.add_with_value(ikey, value),
            BuilderInner::Prefix(p) => p.add(ikey, value),
        }
    }

    /// Size of the block if finished now.
    #[must_use]
    #[inline]
    pub fn estimated_size(&self) -> usize {
        match &self.inner {
            BuilderInner::KeySet(w) => w.estimated_size(),
            BuilderInner::Prefix(p) => p.estimated_size(),
        }
    }

    /// Whether no entry was added since the last reset.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of entries added since the last reset.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.inner {
            BuilderInner::KeySet(w) => w.len(),
            BuilderInner::Prefix(p) => p.count,
        }
    }

    /// Finishes the block and returns its contents (valid until the next call on `self`).
    pub fn finish(&mut self) -> &[u8] {
        match &mut self.inner {
            BuilderInner::KeySet(w) => w.finish(),
            BuilderInner::Prefix(p) => p.finish(),
        }
    }

    /// Finishes the block and returns its contents as pieces to be written one after the
    /// other (see [`KeySetWriter::finish_parts`]; a Prefix block is one piece and two empty
    /// ones). Valid until the next call on `self`.
    pub fn finish_parts(&mut self) -> [&[u8]; 3] {
        match &mut self.inner {
            BuilderInner::KeySet(w) => w.finish_parts(),
            BuilderInner::Prefix(p) => [p.finish(), &[], &[]],
        }
    }

    /// Clears the builder for the next block (keeps its allocations).
    pub fn reset(&mut self) {
        match &mut self.inner {
            BuilderInner::KeySet(w) => w.reset(),
            BuilderInner::Prefix(p) => p.reset(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Block and iterator
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Layout {
    KeySet(Shape),
    Prefix {
        restarts_offset: usize,
        num_restarts: usize,
    },
}

/// An immutable, validated block that owns its bytes.
#[derive(Debug)]
pub struct Block {
    data: Vec<u8>,
    file_offset: u64,
    layout: Layout,
}

impl Block {
    /// Validates `contents` as a block of `format`.
    ///
    /// # Errors
    /// `Corruption` (offsets relative to the block) if the structure is inconsistent.
    pub fn new(contents: Vec<u8>, format: BlockFormat) -> Result<Block> {
        Self::new_at(contents, format, 0)
    }

    /// As [`Block::new`], for a block that starts at `file_offset` in its file (errors then
    /// name absolute offsets).
    ///
    /// # Errors
    /// `Corruption` if the structure is inconsistent.
    pub fn new_at(contents: Vec<u8>, format: BlockFormat, file_offset: u64) -> Result<Block> {
        let layout = match format {
            BlockFormat::KeySet => Layout::KeySet(KeySetRef::parse(&contents, file_offset)?.s),
            BlockFormat::Prefix => Self::validate_prefix(&contents, file_offset)?,
        };
        Ok(Block {
            data: contents,
            file_offset,
            layout,
        })
    }

    fn validate_prefix(data: &[u8], base: u64) -> Result<Layout> {
        let corrupt = |off: usize, what: &str| {
            Error::corruption(
                base.saturating_add(off as u64),
                format!("prefix block: {what}"),
            )
        };
        let t = data
            .len()
            .checked_sub(4)
            .ok_or_else(|| corrupt(0, "shorter than 4 bytes"))?;
        let num = get_fixed32(data, t).ok_or_else(|| corrupt(t, "truncated"))? as usize;
        let restarts_offset = num
            .checked_mul(4)
            .and_then(|r| t.checked_sub(r))
            .ok_or_else(|| corrupt(t, &format!("restart count {num} too large")))?;
        if num == 0 && restarts_offset > 0 {
            return Err(corrupt(t, "entries but no restart point"));
        }
        let mut prev = 0usize;
        for i in 0..num {
            let p = restarts_offset + 4 * i;
            let r = get_fixed32(data, p).ok_or_else(|| corrupt(p, "truncated"))? as usize;
            let ok = if i == 0 {
                r == 0
            } else {
                r > prev && r < restarts_offset
            };
            if !ok {
                return Err(corrupt(p, &format!("restart point {i} = {r} out of order")));
            }
            prev = r;
        }
        Ok(Layout::Prefix {
            restarts_offset,
            num_restarts: num,
        })
    }

    /// The block's format.
    #[must_use]
    pub fn format(&self) -> BlockFormat {
        match self.layout {
            Layout::KeySet(_) => BlockFormat::KeySet,
            Layout::Prefix { .. } => BlockFormat::Prefix,
        }
    }

    /// Size of the contents in bytes.
    #[must_use]
    pub fn len_bytes(&self) -> usize {
        self.data.len()
    }

    /// The raw contents.
    #[must_use]
    pub fn contents(&self) -> &[u8] {
        &self.data
    }

    /// The block's buffer, for reuse ([`mezz_util::spare::give`]).
    #[must_use]
    pub fn into_contents(self) -> Vec<u8> {
        self.data
    }

    /// Where the block starts in its file (0 if unknown).
    #[must_use]
    pub fn file_offset(&self) -> u64 {
        self.file_offset
    }

    /// A zero-copy view for KeySet blocks (`None` for Prefix blocks).
    #[must_use]
    pub fn keyset(&self) -> Option<KeySetRef<'_>> {
        match self.layout {
            Layout::KeySet(s) => Some(KeySetRef {
                data: &self.data,
                s,
            }),
            Layout::Prefix { .. } => None,
        }
    }

    /// Number of entries. O(1) for KeySet; for a Prefix block this walks the entries (and
    /// counts up to the first malformed one).
    #[must_use]
    pub fn num_entries(&self) -> usize {
        match self.layout {
            Layout::KeySet(s) => s.n,
            Layout::Prefix {
                restarts_offset, ..
            } => {
                let mut off = 0;
                let mut count = 0;
                while off < restarts_offset {
                    match decode_prefix_entry(&self.data, off, restarts_offset) {
                        Some(e) => {
                            off = e.end;
                            count += 1;
                        }
                        None => break,
                    }
                }
                count
            }
        }
    }

    /// Walks every entry and checks what [`Block::new`] leaves to the iterator: for a Prefix
    /// block, that each entry decodes inside the entry area, that each restart point starts
    /// an entry, and that the entry there stores its whole key (`shared == 0`); a restart
    /// point in the middle of an entry would make backward steps and seeks decode different
    /// entries than a forward walk. KeySet blocks are fully checked by `new`. O(entries):
    /// meant for table verification, not the read path.
    ///
    /// # Errors
    /// `Corruption` naming the offset of the first bad entry or restart point.
    pub fn check_entries(&self) -> Result<()> {
        let Layout::Prefix {
            restarts_offset,
            num_restarts,
        } = self.layout
        else {
            return Ok(());
        };
        let corrupt = |off: usize, what: &str| {
            Error::corruption(
                self.file_offset.saturating_add(off as u64),
                format!("prefix block: {what}"),
            )
        };
        let restart = |i: usize| {
            (i < num_restarts)
                .then(|| get_fixed32(&self.data, restarts_offset + 4 * i))
                .flatten()
                .map(|r| r as usize)
        };
        let mut next_restart = 0;
        let mut off = 0;
        while off < restarts_offset {
            let e = decode_prefix_entry(&self.data, off, restarts_offset)
                .ok_or_else(|| corrupt(off, "malformed entry"))?;
            match restart(next_restart) {
                Some(r) if r < off => return Err(corrupt(r, "restart point inside an entry")),
                Some(r) if r == off => {
                    if e.shared != 0 {
                        return Err(corrupt(off, "restart entry shares a prefix"));
                    }
                    next_restart += 1;
                }
                _ => {}
            }
            off = e.end;
        }
        // Only an empty block's restart point 0 may sit at the end of the entry area.
        match restart(next_restart) {
            Some(r) if r < restarts_offset => Err(corrupt(r, "restart point inside an entry")),
            _ => Ok(()),
        }
    }

    /// An iterator over the block, initially unpositioned, seeking in the internal-key order
    /// of `order` (the order the block was written in).
    #[must_use]
    pub fn iter(self: &Arc<Self>, order: &KeyOrder) -> BlockIter {
        BlockIter::new(Arc::clone(self), order.clone())
    }
}

/// A decoded prefix entry header.
#[derive(Debug, Clone, Copy)]
struct PrefixEntry {
    shared: usize,
    delta_start: usize,
    delta_end: usize,
    value_end: usize,
    end: usize,
}

#[inline]
fn decode_prefix_entry(data: &[u8], off: usize, limit: usize) -> Option<PrefixEntry> {
    let (shared, p) = get_varint32(data, off)?;
    let (non_shared, p) = get_varint32(data, p)?;
    let (value_len, p) = get_varint32(data, p)?;
    let delta_end = p.checked_add(non_shared as usize)?;
    let value_end = delta_end.checked_add(value_len as usize)?;
    if value_end > limit {
        return None;
    }
    Some(PrefixEntry {
        shared: shared as usize,
        delta_start: p,
        delta_end,
        value_end,
        end: value_end,
    })
}

/// An iterator over one block, holding the block alive.
#[derive(Debug)]
pub struct BlockIter {
    block: Arc<Block>,
    valid: bool,
    /// KeySet: current entry index. Prefix: current restart region.
    idx: usize,
    /// KeySet: byte range of the current key. Prefix: unused (key in `key_buf`).
    key_range: (usize, usize),
    value_range: (usize, usize),
    /// Prefix: offset of the current entry and of the next one.
    cur: usize,
    next: usize,
    key_buf: Vec<u8>,
    err: Option<(u64, String)>,
    order: KeyOrder,
}

impl BlockIter {
    fn new(block: Arc<Block>, order: KeyOrder) -> Self {
        Self {
            order,
            block,
            valid: false,
            idx: 0,
            key_range: (0, 0),
            value_range: (0, 0),
            cur: 0,
            next: 0,
            key_buf: Vec::new(),
            err: None,
        }
    }

    /// The block being iterated.
    #[must_use]
    pub fn block(&self) -> &Arc<Block> {
        &self.block
    }

    // ---- KeySet ----

    fn ks_set(&mut self, i: usize) {
        let Some(ks) = self.block.keyset() else {
            self.valid = false;
            return;
        };
        match (ks.key_range(i), ks.value_range(i)) {
            (Some(k), Some(v)) => {
                self.idx = i;
                self.key_range = k;
                self.value_range = v;
                self.valid = true;
            }
            (Some(k), None) if ks.s.kind == IndexKind::Opaque => {
                self.idx = i;
                self.key_range = k;
                self.value_range = (0, 0);
                self.valid = true;
            }
            _ => self.valid = false,
        }
    }

    // ---- Prefix ----

    fn prefix_layout(&self) -> (usize, usize) {
        match self.block.layout {
            Layout::Prefix {
                restarts_offset,
                num_restarts,
            } => (restarts_offset, num_restarts),
            Layout::KeySet(_) => (0, 0),
        }
    }

    fn restart_point(&self, i: usize) -> usize {
        let (ro, _) = self.prefix_layout();
        get_fixed32(&self.block.data, ro + 4 * i).map_or(ro, |r| r as usize)
    }

    fn corrupt(&mut self, off: usize, what: &str) {
        self.valid = false;
        self.err = Some((
            self.block.file_offset.saturating_add(off as u64),
            format!("prefix block: {what}"),
        ));
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key_buf.clear();
        self.idx = i;
        self.next = self.restart_point(i);
    }

    /// Decodes the entry at `self.next`; invalid at the end of the entries.
    fn parse_next(&mut self) -> bool {
        let (ro, num) = self.prefix_layout();
        self.cur = self.next;
        if self.cur >= ro {
            self.valid = false;
            self.idx = num;
            return false;
        }
        let Some(e) = decode_prefix_entry(&self.block.data, self.cur, ro) else {
            self.corrupt(self.cur, "malformed entry");
            return false;
        };
        if e.shared > self.key_buf.len() {
            self.corrupt(self.cur, "shared prefix longer than the previous key");
            return false;
        }
        let Some(delta) = self.block.data.get(e.delta_start..e.delta_end) else {
            self.corrupt(self.cur, "malformed entry");
            return false;
        };
        self.key_buf.truncate(e.shared);
        self.key_buf.extend_from_slice(delta);
        self.value_range = (e.delta_end, e.value_end);
        self.next = e.end;
        while self.idx + 1 < num && self.restart_point(self.idx + 1) <= self.cur {
            self.idx += 1;
        }
        self.valid = true;
        true
    }

    /// The full key stored at restart point `i` (its `shared` must be 0).
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let (ro, _) = self.prefix_layout();
        let off = self.restart_point(i);
        let e = decode_prefix_entry(&self.block.data, off, ro)?;
        if e.shared != 0 {
            return None;
        }
        self.block.data.get(e.delta_start..e.delta_end)
    }

    fn prefix_seek(&mut self, target: &[u8]) {
        let (_, num) = self.prefix_layout();
        if num == 0 {
            self.valid = false;
            return;
        }
        // Last restart point whose key is < target.
        let (mut left, mut right) = (0usize, num - 1);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            match self.restart_key(mid) {
                Some(k) => {
                    if self.order.compare_internal(k, target) == Ordering::Less {
                        left = mid;
                    } else {
                        right = mid - 1;
                    }
                }
                None => {
                    let off = self.restart_point(mid);
                    self.corrupt(off, "malformed restart entry");
                    return;
                }
            }
        }
        self.seek_to_restart(left);
        while self.parse_next() {
            if self.order.compare_internal(&self.key_buf, target) != Ordering::Less {
                return;
            }
        }
    }

    fn prefix_prev(&mut self) {
        let original = self.cur;
        let (_, num) = self.prefix_layout();
        while self.restart_point(self.idx) >= original {
            if self.idx == 0 {
                self.valid = false;
                self.idx = num;
                self.cur = self.prefix_layout().0;
                return;
            }
            self.idx -= 1;
        }
        let start = self.idx;
        self.seek_to_restart(start);
        while self.parse_next() && self.next < original {}
    }

    fn prefix_seek_to_last(&mut self) {
        let (ro, num) = self.prefix_layout();
        if num == 0 {
            self.valid = false;
            return;
        }
        self.seek_to_restart(num - 1);
        while self.parse_next() && self.next < ro {}
    }

    fn is_keyset(&self) -> bool {
        matches!(self.block.layout, Layout::KeySet(_))
    }

    fn ks_len(&self) -> usize {
        match self.block.layout {
            Layout::KeySet(s) => s.n,
            Layout::Prefix { .. } => 0,
        }
    }
}

impl InternalIterator for BlockIter {
    #[inline]
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        if self.is_keyset() {
            self.ks_set(0);
        } else {
            self.seek_to_restart(0);
            self.parse_next();
        }
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        if self.is_keyset() {
            match self.ks_len().checked_sub(1) {
                Some(last) => self.ks_set(last),
                None => self.valid = false,
            }
        } else {
            self.prefix_seek_to_last();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        if let Some(ks) = self.block.keyset() {
            let i = ks.find(target, &self.order);
            self.ks_set(i);
        } else {
            self.prefix_seek(target);
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        if let Some(ks) = self.block.keyset() {
            let i = ks.find(target, &self.order);
            let exact = ks
                .key(i)
                .is_some_and(|k| self.order.compare_internal(k, target) == Ordering::Equal);
            if exact {
                self.ks_set(i);
            } else if let Some(p) = i.checked_sub(1) {
                self.ks_set(p);
            } else {
                self.valid = false;
            }
        } else {
            self.prefix_seek(target);
            if self.valid {
                if self.order.compare_internal(&self.key_buf, target) == Ordering::Greater {
                    self.prefix_prev();
                }
            } else if self.err.is_none() {
                self.prefix_seek_to_last();
            }
        }
    }

    fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.is_keyset() {
            self.ks_set(self.idx + 1);
        } else {
            self.parse_next();
        }
    }

    fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.is_keyset() {
            match self.idx.checked_sub(1) {
                Some(p) => self.ks_set(p),
                None => self.valid = false,
            }
        } else {
            self.prefix_prev();
        }
    }

    #[inline]
    fn key(&self) -> &[u8] {
        if self.is_keyset() {
            self.block
                .data
                .get(self.key_range.0..self.key_range.1)
                .unwrap_or_default()
        } else {
            &self.key_buf
        }
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.block
            .data
            .get(self.value_range.0..self.value_range.1)
            .unwrap_or_default()
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            None => Ok(()),
            Some((off, d)) => Err(Error::corruption(*off, d.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ikey::{ValueKind, compare_internal_keys, make_internal_key};
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    fn random_entries(rng: &mut StdRng, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut keys = std::collections::BTreeSet::new();
        while keys.len() < n {
            let klen = rng.random_range(0..12);
            let uk: Vec<u8> = (0..klen).map(|_| rng.random_range(b'a'..=b'e')).collect();
            let seq = rng.random_range(0..1000u64);
            keys.insert((uk, seq));
        }
        let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
            .into_iter()
            .map(|(uk, seq)| {
                let kind = if seq % 5 == 0 {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                let vlen = rng.random_range(0..20);
                let val: Vec<u8> = (0..vlen).map(|_| rng.random()).collect();
                (make_internal_key(&uk, seq, kind), val)
            })
            .collect();
        v.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        v
    }

    fn build(format: BlockFormat, entries: &[(Vec<u8>, Vec<u8>)]) -> Arc<Block> {
        let mut b = BlockBuilder::new(format, 4);
        for (k, v) in entries {
            b.add(k, v);
        }
        assert_eq!(b.len(), entries.len());
        let est = b.estimated_size();
        let contents = b.finish().to_vec();
        assert_eq!(contents.len(), est, "estimate is exact at finish");
        Arc::new(Block::new(contents, format).unwrap())
    }

    /// Index of the first entry >= target.
    fn lower_bound(entries: &[(Vec<u8>, Vec<u8>)], target: &[u8]) -> usize {
        entries.partition_point(|(k, _)| compare_internal_keys(k, target) == Ordering::Less)
    }

    fn check_at(it: &BlockIter, entries: &[(Vec<u8>, Vec<u8>)], want: Option<usize>) {
        match want {
            Some(i) => {
                assert!(it.valid(), "expected entry {i}");
                assert_eq!(it.key(), &entries[i].0[..]);
                assert_eq!(it.value(), &entries[i].1[..]);
            }
            None => assert!(!it.valid()),
        }
        it.status().unwrap();
    }

    fn roundtrip(format: BlockFormat, seed: u64) {
        let mut rng = StdRng::seed_from_u64(seed);
        for &n in &[0usize, 1, 2, 5, 17, 200] {
            let entries = random_entries(&mut rng, n);
            let block = build(format, &entries);
            assert_eq!(block.num_entries(), n);
            assert_eq!(block.format(), format);
            let mut it = block.iter(&KeyOrder::default());
            // Forward.
            it.seek_to_first();
            for i in 0..n {
                check_at(&it, &entries, Some(i));
                it.next();
            }
            check_at(&it, &entries, None);
            // Backward.
            it.seek_to_last();
            for i in (0..n).rev() {
                check_at(&it, &entries, Some(i));
                it.prev();
            }
            check_at(&it, &entries, None);
            // Seeks at existing and random targets.
            for _ in 0..100 {
                let target = if n > 0 && rng.random_bool(0.5) {
                    entries[rng.random_range(0..n)].0.clone()
                } else {
                    let uk: Vec<u8> = (0..rng.random_range(0..12))
                        .map(|_| rng.random_range(b'a'..=b'f'))
                        .collect();
                    make_internal_key(&uk, rng.random_range(0..1000), ValueKind::Value)
                };
                let lb = lower_bound(&entries, &target);
                it.seek(&target);
                check_at(&it, &entries, (lb < n).then_some(lb));
                if lb < n {
                    // Walk one step each way from the seek position.
                    it.prev();
                    check_at(&it, &entries, lb.checked_sub(1));
                    it.seek(&target);
                    it.next();
                    check_at(&it, &entries, (lb + 1 < n).then_some(lb + 1));
                }
                let want = if lb < n && compare_internal_keys(&entries[lb].0, &target).is_eq() {
                    Some(lb)
                } else {
                    lb.checked_sub(1)
                };
                it.seek_for_prev(&target);
                check_at(&it, &entries, want);
                if let Some(w) = want {
                    it.next();
                    check_at(&it, &entries, (w + 1 < n).then_some(w + 1));
                }
            }
        }
    }

    #[test]
    fn keyset_roundtrip() {
        roundtrip(BlockFormat::KeySet, 1);
    }

    #[test]
    fn prefix_roundtrip() {
        roundtrip(BlockFormat::Prefix, 2);
    }

    /// A view rebuilt from a kept trailer reads what `parse_trailer` does; one given other
    /// bytes stays within them (unreadable entries read as `None`, nothing panics).
    #[test]
    fn keyset_view_from_a_kept_trailer() {
        let block = |n: usize, vlen: usize| {
            let mut w = KeySetWriter::new(IndexKind::ValueRef);
            for i in 0..n {
                let k = make_internal_key(format!("k{i:04}").as_bytes(), 1, ValueKind::Value);
                w.add_with_value(&k, &vec![i as u8; vlen]);
            }
            w.finish().to_vec()
        };
        let (a, b) = (block(20, 100), block(3, 7));
        let t = KeySetRef::parse_trailer(&a, 0).unwrap();
        let again = KeySetRef::with_trailer(&a, t.trailer());
        assert_eq!(again.num_entries(), 20);
        for i in 0..21 {
            assert_eq!(
                (again.key(i), again.value(i)),
                (t.key(i), t.value(i)),
                "{i}"
            );
        }
        let wrong = KeySetRef::with_trailer(&b, t.trailer());
        for i in 0..21 {
            let _ = (wrong.key(i), wrong.value(i), wrong.index_field(i));
        }
        assert_eq!(wrong.value(19), None);
        let _ = wrong.find(b"k0010", &KeyOrder::default());
    }

    #[test]
    fn keyset_layout_is_aligned_and_searchable_in_place() {
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        let keys = [
            make_internal_key(b"a", 1, ValueKind::Value),
            make_internal_key(b"bbb", 1, ValueKind::Value),
            make_internal_key(b"cc", 1, ValueKind::Value),
        ];
        for (i, k) in keys.iter().enumerate() {
            w.add_with_value(k, &vec![i as u8; i * 3]);
        }
        let bytes = w.finish().to_vec();
        assert_eq!(bytes.len() % KEYSET_ALIGN, 0);
        let r = KeySetRef::parse(&bytes, 0).unwrap();
        assert_eq!(r.num_entries(), 3);
        let mut key_at = 0;
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(r.key(i).unwrap(), &k[..]);
            assert_eq!(r.value(i).unwrap(), &vec![i as u8; i * 3][..]);
            // Layout 2: the record's first word is key_offset / 8 | key_len << 16.
            let word = get_fixed32(&bytes, bytes.len() - 16 - 8 * (3 - i)).unwrap();
            assert_eq!((word & 0xffff) as usize * KEYSET_ALIGN, key_at);
            assert_eq!((word >> 16) as usize, k.len());
            key_at += k.len() + pad_len(k.len());
        }
        assert_eq!(r.key(3), None);
        assert_eq!(r.find(&keys[1], &KeyOrder::default()), 1);
        assert_eq!(
            r.find(
                &make_internal_key(b"b", 0, ValueKind::Value),
                &KeyOrder::default()
            ),
            1
        );
        assert_eq!(
            r.find(
                &make_internal_key(b"z", 0, ValueKind::Value),
                &KeyOrder::default()
            ),
            3
        );
        assert_eq!(r.find(b"", &KeyOrder::default()), 0);
    }

    #[test]
    fn finished_parts_are_the_finished_block() {
        let mut rng = StdRng::seed_from_u64(16);
        for format in [BlockFormat::KeySet, BlockFormat::Prefix] {
            let mut b = BlockBuilder::new(format, 4);
            // Varied keys and values (layouts 1 and 2), one key length and one value length
            // (layout 3 with a fixed value length), one key length and varied values.
            let fixed = |n: usize, vlen: usize| -> Vec<(Vec<u8>, Vec<u8>)> {
                (0..n)
                    .map(|i| {
                        let uk = format!("k{i:06}");
                        let kind = ValueKind::Value;
                        (
                            make_internal_key(uk.as_bytes(), 7, kind),
                            vec![i as u8; vlen],
                        )
                    })
                    .collect()
            };
            let varied_values: Vec<_> = fixed(40, 0)
                .into_iter()
                .enumerate()
                .map(|(i, (k, _))| (k, vec![3u8; i % 9]))
                .collect();
            for entries in [
                random_entries(&mut rng, 1),
                random_entries(&mut rng, 200),
                fixed(30, 4096),
                fixed(50, 13),
                varied_values,
            ] {
                for (k, v) in &entries {
                    b.add(k, v);
                }
                let whole = b.finish().to_vec();
                let parts = b.finish_parts().concat();
                assert_eq!(parts, whole, "{format:?}, {} entries", entries.len());
                // And the pieces make a block that reads back.
                let block = Arc::new(Block::new(parts, format).unwrap());
                let mut it = block.iter(&KeyOrder::default());
                it.seek_to_first();
                for i in 0..entries.len() {
                    check_at(&it, &entries, Some(i));
                    it.next();
                }
                check_at(&it, &entries, None);
                b.reset();
            }
        }
    }

    #[test]
    fn keyset_opaque_index_fields() {
        let mut w = KeySetWriter::new(IndexKind::Opaque);
        w.add_with_index(b"k1xxxxxxxx", 0xdead_beef_0000_0001);
        w.add_with_index(b"k2xxxxxxxx", u64::MAX);
        let bytes = w.finish().to_vec();
        let r = KeySetRef::parse(&bytes, 0).unwrap();
        assert_eq!(r.index_kind(), IndexKind::Opaque);
        assert_eq!(r.index_field(0), Some(0xdead_beef_0000_0001));
        assert_eq!(r.index_field(1), Some(u64::MAX));
        assert_eq!(r.value(0), None);
        w.reset();
        assert!(w.is_empty());
        let empty = w.finish().to_vec();
        assert_eq!(KeySetRef::parse(&empty, 0).unwrap().num_entries(), 0);
    }

    /// The trailer's version byte and the run's length for `entries` written by `w`.
    fn written(w: &mut KeySetWriter, entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        w.reset();
        for (k, v) in entries {
            w.add_with_value(k, v);
        }
        let expected = w.estimated_size();
        let bytes = w.finish().to_vec();
        assert_eq!(bytes.len(), expected, "estimated_size is the finished size");
        bytes
    }

    fn assert_reads_back(bytes: &[u8], entries: &[(Vec<u8>, Vec<u8>)]) {
        let r = KeySetRef::parse(bytes, 0).unwrap();
        assert_eq!(r.num_entries(), entries.len());
        let mut value_at = 0u32;
        for (i, (k, v)) in entries.iter().enumerate() {
            assert_eq!(r.key(i).unwrap(), &k[..]);
            assert_eq!(r.value(i).unwrap(), &v[..]);
            assert_eq!(
                r.index_field(i),
                Some(pack_value_ref(value_at, v.len() as u32))
            );
            value_at += v.len() as u32;
            assert_eq!(r.find(k, &KeyOrder::default()), i);
        }
        let block = Arc::new(Block::new(bytes.to_vec(), BlockFormat::KeySet).unwrap());
        let mut it = block.iter(&KeyOrder::default());
        it.seek_to_first();
        for (k, v) in entries {
            assert!(it.valid());
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.next();
        }
        assert!(!it.valid());
    }

    /// Value runs are written with 8-byte records (layout 2) when they fit and read back
    /// entry for entry; runs they cannot hold, and opaque runs, keep 16-byte records.
    #[test]
    fn value_runs_use_compact_records_when_they_fit() {
        let mut rng = StdRng::seed_from_u64(11);
        let entries = random_entries(&mut rng, 300);
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        let bytes = written(&mut w, &entries);
        assert_eq!(bytes[bytes.len() - 2], 2);
        let keys: usize = entries
            .iter()
            .map(|(k, _)| k.len() + pad_len(k.len()))
            .sum();
        let values: usize = entries.iter().map(|(_, v)| v.len()).sum();
        assert_eq!(
            bytes.len(),
            keys + values + pad_len(values) + 8 * entries.len() + KEYSET_TRAILER_LEN
        );
        assert_reads_back(&bytes, &entries);

        // A key longer than 16 bits can say: layout 1 for the whole run.
        let mut long = entries[..3].to_vec();
        long[1].0 = make_internal_key(&vec![b'k'; 70_000], 5, ValueKind::Value);
        long.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        let bytes = written(&mut w, &long);
        assert_eq!(bytes[bytes.len() - 2], 1);
        assert_reads_back(&bytes, &long);

        // A key starting beyond 8 x 0xffff bytes: layout 1 as well.
        let far: Vec<(Vec<u8>, Vec<u8>)> = (0..3u32)
            .map(|i| {
                let mut uk = vec![b'a'; 300_000];
                uk.extend_from_slice(&i.to_be_bytes());
                (
                    make_internal_key(&uk, 1, ValueKind::Value),
                    vec![i as u8; 3],
                )
            })
            .collect();
        let bytes = written(&mut w, &far);
        // Keys of one length: layout 3 holds them (no offsets to bound)...
        assert_eq!(bytes[bytes.len() - 2], 3);
        assert_reads_back(&bytes, &far);
        // ...but not once one key is longer.
        let mut far = far;
        far[2].0 = make_internal_key(
            &[vec![b'a'; 300_000], vec![9; 5]].concat(),
            1,
            ValueKind::Value,
        );
        let bytes = written(&mut w, &far);
        assert_eq!(bytes[bytes.len() - 2], 1);
        assert_reads_back(&bytes, &far);

        // The writer is compact again after a reset.
        let bytes = written(&mut w, &entries);
        assert_eq!(bytes[bytes.len() - 2], 2);

        let mut o = KeySetWriter::new(IndexKind::Opaque);
        o.add_with_index(b"k1xxxxxxxx", 7);
        let bytes = o.finish().to_vec();
        assert_eq!(bytes[bytes.len() - 2], 1);
    }

    /// Layout-1 value runs, as builds before layout 2 wrote them, still read.
    #[test]
    fn layout_1_value_runs_still_read() {
        let mut rng = StdRng::seed_from_u64(12);
        let entries = random_entries(&mut rng, 100);
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        for (k, v) in &entries {
            w.add_with_value(k, v);
        }
        w.switch_to_layout_1();
        let bytes = w.finish().to_vec();
        assert_eq!(bytes[bytes.len() - 2], 1);
        assert_reads_back(&bytes, &entries);
    }

    /// A compact record whose value would end before the previous one, and the compact
    /// layout with an opaque index, are corruption; a bad record found only on access reads
    /// as absent.
    #[test]
    fn bad_compact_records_are_rejected() {
        let mut rng = StdRng::seed_from_u64(13);
        let entries = random_entries(&mut rng, 20);
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        let good = written(&mut w, &entries);
        let n = good.len();
        // Entry 5's value end, moved before entry 4's.
        let e5 = n - KEYSET_TRAILER_LEN - 8 * (entries.len() - 5);
        let mut bad = good.clone();
        bad[e5 + 4..e5 + 8].copy_from_slice(&0u32.to_le_bytes());
        assert!(matches!(
            KeySetRef::parse(&bad, 0),
            Err(Error::Corruption { .. })
        ));
        let lazy = KeySetRef::parse_trailer(&bad, 0).unwrap();
        assert_eq!(lazy.value(5), None);
        assert_eq!(lazy.index_field(5), None);
        assert_eq!(lazy.key(5), Some(&entries[5].0[..]));
        // Layout 2 with an opaque index kind.
        let mut bad = good.clone();
        bad[n - 1] = IndexKind::Opaque as u8;
        assert!(matches!(
            KeySetRef::parse_trailer(&bad, 0),
            Err(Error::Corruption { .. })
        ));
        // A value end beyond the value area.
        let mut bad = good;
        bad[e5 + 4..e5 + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Block::new(bad, BlockFormat::KeySet).is_err());
    }

    fn mutate_never_panics(format: BlockFormat) {
        let mut rng = StdRng::seed_from_u64(3);
        mutated_blocks_never_panic(format, &random_entries(&mut rng, 12));
    }

    fn mutated_blocks_never_panic(format: BlockFormat, entries: &[(Vec<u8>, Vec<u8>)]) {
        let good = build(format, entries).contents().to_vec();
        let exercise = |bytes: Vec<u8>| {
            if let Ok(b) = Block::new(bytes, format) {
                let b = Arc::new(b);
                let _ = b.num_entries();
                let mut it = b.iter(&KeyOrder::default());
                let mut steps = 0;
                it.seek_to_first();
                while it.valid() && steps < 1000 {
                    let _ = (it.key(), it.value());
                    it.next();
                    steps += 1;
                }
                it.seek_to_last();
                while it.valid() && steps < 2000 {
                    it.prev();
                    steps += 1;
                }
                for (k, _) in entries {
                    it.seek(k);
                    it.seek_for_prev(k);
                    if it.valid() {
                        it.prev();
                    }
                }
                let _ = it.status();
            }
        };
        for i in 0..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= x;
                exercise(bad);
            }
        }
        for len in 0..good.len() {
            exercise(good[..len].to_vec());
        }
    }

    #[test]
    fn keyset_corruption_never_panics() {
        mutate_never_panics(BlockFormat::KeySet);
        // Layout 3, with and without its value-end array.
        let mut rng = StdRng::seed_from_u64(4);
        mutated_blocks_never_panic(BlockFormat::KeySet, &uniform_entries(&mut rng, 10, Some(5)));
        mutated_blocks_never_panic(BlockFormat::KeySet, &uniform_entries(&mut rng, 10, None));
    }

    /// `n` entries whose internal keys all have the same length (a 6-byte user key); values
    /// of `value_len` bytes each, or of random lengths.
    fn uniform_entries(
        rng: &mut StdRng,
        n: usize,
        value_len: Option<usize>,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut keys = std::collections::BTreeSet::new();
        while keys.len() < n {
            let uk: Vec<u8> = (0..6).map(|_| rng.random_range(b'a'..=b'c')).collect();
            keys.insert((uk, rng.random_range(0..1000u64)));
        }
        let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
            .into_iter()
            .map(|(uk, seq)| {
                let vlen = value_len.unwrap_or_else(|| rng.random_range(0..40));
                let val: Vec<u8> = (0..vlen).map(|_| rng.random()).collect();
                (make_internal_key(&uk, seq, ValueKind::Value), val)
            })
            .collect();
        v.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
        v
    }

    /// Value runs whose keys share one length are written in layout 3: no entry records
    /// when the values share a length too, 4 bytes per entry when they do not. They read
    /// back entry for entry, keys in place at 8-byte boundaries; a run where layout 3 would
    /// not be smaller, or whose keys differ in length, keeps layout 2.
    #[test]
    fn runs_of_one_key_length_use_layout_3() {
        let mut rng = StdRng::seed_from_u64(14);
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        let stride = 16; // 6 + 8 bytes rounded up to 8

        let fixed = uniform_entries(&mut rng, 200, Some(100));
        let bytes = written(&mut w, &fixed);
        assert_eq!(bytes[bytes.len() - 2], 3);
        let values = 200 * 100;
        assert_eq!(
            bytes.len(),
            200 * stride + values + pad_len(values) + KEYSET_UNIFORM_HEADER_LEN + 16
        );
        assert_reads_back(&bytes, &fixed);
        let r = KeySetRef::parse(&bytes, 0).unwrap();
        for i in 0..fixed.len() {
            let k = r.key(i).unwrap();
            assert_eq!(k.as_ptr() as usize - bytes.as_ptr() as usize, i * stride);
        }

        let varied = uniform_entries(&mut rng, 201, None);
        let bytes = written(&mut w, &varied);
        assert_eq!(bytes[bytes.len() - 2], 3);
        let values: usize = varied.iter().map(|(_, v)| v.len()).sum();
        assert_eq!(
            bytes.len(),
            201 * stride + values + pad_len(values) + 4 * 201 + 4 + 8 + 16
        );
        assert_reads_back(&bytes, &varied);

        // One entry: layout 3 would save nothing.
        let bytes = written(&mut w, &fixed[..1]);
        assert_eq!(bytes[bytes.len() - 2], 2);
        assert_reads_back(&bytes, &fixed[..1]);
        // Two entries of different value lengths: the value ends and the header would
        // take 16 bytes against 16 for two records, so layout 2.
        let mut two = fixed[..2].to_vec();
        two[1].1.push(1);
        let bytes = written(&mut w, &two);
        assert_eq!(bytes[bytes.len() - 2], 2);
        // The last key one byte longer: layout 2.
        let mut odd = fixed[..50].to_vec();
        let last = make_internal_key(b"zzzzzzz", 1, ValueKind::Value);
        odd.push((last, vec![0; 100]));
        let bytes = written(&mut w, &odd);
        assert_eq!(bytes[bytes.len() - 2], 2);
        assert_reads_back(&bytes, &odd);
        // Opaque runs stay in layout 1.
        let mut o = KeySetWriter::new(IndexKind::Opaque);
        for (k, _) in &fixed {
            o.add_with_index(k, 9);
        }
        let bytes = o.finish().to_vec();
        assert_eq!(bytes[bytes.len() - 2], 1);
    }

    /// `value_touch` names, from the trailer alone, the first and last byte of each value in
    /// a run of fixed-length values, the record that places the value otherwise, and nothing
    /// past the last entry or for empty values: what the NVM-table scan prefetches.
    #[test]
    fn value_touch_names_where_a_value_read_starts() {
        let mut rng = StdRng::seed_from_u64(16);
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        let fixed = uniform_entries(&mut rng, 50, Some(100));
        let bytes = written(&mut w, &fixed);
        assert_eq!(bytes[bytes.len() - 2], 3);
        let r = KeySetRef::parse_trailer(&bytes, 0).unwrap();
        let base = bytes.as_ptr() as usize;
        for i in 0..fixed.len() {
            let v = r.value(i).unwrap();
            let first = v.as_ptr() as usize - base;
            assert_eq!(r.value_touch(i), [Some(first), Some(first + v.len() - 1)]);
        }
        assert_eq!(r.value_touch(fixed.len()), [None, None]);

        let empty = uniform_entries(&mut rng, 50, Some(0));
        let bytes = written(&mut w, &empty);
        let r = KeySetRef::parse_trailer(&bytes, 0).unwrap();
        assert_eq!(r.value_touch(3), [None, None]);

        // Values of varied lengths (layout 3 with value ends) and keys of varied lengths
        // (layout 2): the record that places the value.
        for entries in [
            uniform_entries(&mut rng, 50, None),
            random_entries(&mut rng, 50),
        ] {
            let bytes = written(&mut w, &entries);
            let r = KeySetRef::parse_trailer(&bytes, 0).unwrap();
            for i in 0..entries.len() {
                let at = r.value_touch(i);
                assert_eq!(at, [r.record(i), None]);
                assert!(at[0].unwrap() < bytes.len());
            }
            assert_eq!(r.value_touch(entries.len()), [None, None]);
        }
    }

    /// A layout-3 trailer that does not describe its areas, a value end before the one
    /// before it, and layout 3 with an opaque index are corruption, never a misread.
    #[test]
    fn bad_layout_3_runs_are_rejected() {
        let mut rng = StdRng::seed_from_u64(15);
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        let fixed = written(&mut w, &uniform_entries(&mut rng, 20, Some(7)));
        let n = fixed.len();
        let h = n - KEYSET_TRAILER_LEN - KEYSET_UNIFORM_HEADER_LEN;
        let corrupt = |bytes: &[u8]| {
            matches!(
                KeySetRef::parse_trailer(bytes, 0),
                Err(Error::Corruption { .. })
            )
        };
        // Key length that does not give the key area; value length that does not fill the
        // value area; "values differ" without room for the value ends.
        for (at, v) in [
            (h, 8u32),
            (h, 17),
            (h + 4, 6),
            (h + 4, 8),
            (h + 4, u32::MAX),
        ] {
            let mut bad = fixed.clone();
            bad[at..at + 4].copy_from_slice(&v.to_le_bytes());
            assert!(corrupt(&bad), "header field at {at} set to {v}");
        }
        let mut bad = fixed.clone();
        bad[n - 1] = IndexKind::Opaque as u8;
        assert!(corrupt(&bad));

        let entries = uniform_entries(&mut rng, 20, None);
        let varied = written(&mut w, &entries);
        let n = varied.len();
        let ends = n - KEYSET_TRAILER_LEN - KEYSET_UNIFORM_HEADER_LEN - 4 * 20;
        let e5 = ends + 4 * 5;
        let mut bad = varied.clone();
        bad[e5..e5 + 4].copy_from_slice(&0u32.to_le_bytes());
        bad[e5 - 4..e5].copy_from_slice(&1u32.to_le_bytes());
        assert!(matches!(
            KeySetRef::parse(&bad, 0),
            Err(Error::Corruption { .. })
        ));
        let lazy = KeySetRef::parse_trailer(&bad, 0).unwrap();
        assert_eq!(lazy.value(5), None);
        assert_eq!(lazy.key(5), Some(&entries[5].0[..]));
        let mut bad = varied;
        bad[e5..e5 + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Block::new(bad, BlockFormat::KeySet).is_err());
    }

    #[test]
    fn prefix_corruption_never_panics() {
        mutate_never_panics(BlockFormat::Prefix);
    }

    #[test]
    fn bad_structures_are_rejected() {
        assert!(Block::new(vec![], BlockFormat::KeySet).is_err());
        assert!(Block::new(vec![0; 15], BlockFormat::KeySet).is_err());
        assert!(Block::new(vec![1, 2, 3], BlockFormat::Prefix).is_err());
        // Prefix: restart count larger than the block.
        assert!(Block::new(vec![0, 0, 0, 0, 9, 0, 0, 0], BlockFormat::Prefix).is_err());
        // KeySet: future version.
        let mut w = KeySetWriter::new(IndexKind::ValueRef);
        let mut bytes = w.finish().to_vec();
        let n = bytes.len();
        bytes[n - 2] = KEYSET_VERSION + 1;
        assert!(matches!(
            Block::new(bytes, BlockFormat::KeySet),
            Err(Error::UnsupportedVersion { .. })
        ));
        assert_eq!(
            BlockFormat::from_u8(BlockFormat::Prefix.to_u8()),
            Some(BlockFormat::Prefix)
        );
        assert_eq!(BlockFormat::from_u8(7), None);
    }
}
