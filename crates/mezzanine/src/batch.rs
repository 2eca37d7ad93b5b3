//! `WriteBatch`: a list of puts and deletes applied atomically.
//!
//! Owns the batch encoding, which is also the payload of one WAL record (LevelDB's layout):
//!
//! ```text
//! sequence: u64 LE | count: u32 LE | record*
//! record := kind: u8 (0 = deletion, 1 = value) | varint32 key_len | key
//!           [ | varint32 value_len | value ]        (only for kind = value)
//!         | kind: u8 (4 = deletion in a family, 5 = value in a family)
//!           | varint32 family | varint32 key_len | key
//!           [ | varint32 value_len | value ]        (only for kind = 5)
//! ```
//!
//! Records of kinds 0 and 1 belong to the default column family (id 0), so batches written
//! before column families existed decode unchanged; an update of another family carries
//! its id (kinds 4 and 5; an update of family 0 is always written with kind 0 or 1).
//! Every record of a batch takes the next sequence number, whatever its family.
//!
//! Invariants: `rep` always holds the 12-byte header, and the header's count equals the
//! number of well-formed records that follow. Batches built with `put`/`delete` hold this by
//! construction; batches decoded from bytes (`from_data`) are fully validated first, so
//! iterating a `WriteBatch` never meets malformed records.
//!
//! Thread-safety: a plain value (`Send + Sync`); mutation needs `&mut self`.

use mezz_format::{SeqNo, ValueKind};

use crate::error::{Error, Result};

/// Bytes of the header: sequence (8) + count (4).
const HEADER_LEN: usize = 12;

/// A group of updates applied atomically by `Db::write`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
}

/// One update of a batch, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// `Value` for a put, `Deletion` for a delete.
    pub kind: ValueKind,
    /// The user key.
    pub key: &'a [u8],
    /// The value (empty for a delete).
    pub value: &'a [u8],
    /// The column family the update belongs to (0: the default family).
    pub family: u32,
}

/// The record kind of a deletion in a column family other than the default.
const FAMILY_DELETION: u8 = 4;
/// The record kind of a value in a column family other than the default.
const FAMILY_VALUE: u8 = 5;

/// What names a column family to a batch: its id (`u32`), or a handle (`ColumnFamily`).
pub trait FamilyId {
    /// The family's id (0: the default family).
    fn family_id(&self) -> u32;
}

impl FamilyId for u32 {
    fn family_id(&self) -> u32 {
        *self
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self {
            rep: vec![0; HEADER_LEN],
        }
    }
}

fn put_varint32(buf: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Decodes a varint32 at `*pos`, advancing it; `None` if truncated or longer than 5 bytes.
fn get_varint32(buf: &[u8], pos: &mut usize) -> Option<u32> {
    let mut result: u32 = 0;
    for i in 0..5 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        let shift = 7 * i;
        if i == 4 && b > 0x0f {
            return None; // would overflow 32 bits
        }
        result |= u32::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(result);
        }
    }
    None
}

/// Reads a varint32-length-prefixed slice at `*pos`.
fn get_length_prefixed<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = get_varint32(buf, pos)? as usize;
    let end = pos.checked_add(len)?;
    let s = buf.get(*pos..end)?;
    *pos = end;
    Some(s)
}

/// Decodes the record at `*pos`; `Err(detail)` if malformed.
fn decode_record<'a>(
    buf: &'a [u8],
    pos: &mut usize,
) -> std::result::Result<BatchOp<'a>, &'static str> {
    let mut kind_byte = *buf.get(*pos).ok_or("truncated record")?;
    *pos += 1;
    let mut family = 0;
    if kind_byte == FAMILY_DELETION || kind_byte == FAMILY_VALUE {
        family = get_varint32(buf, pos).ok_or("bad column family id")?;
        if family == 0 {
            return Err("a family record names the default family");
        }
        kind_byte -= FAMILY_DELETION;
    }
    let kind = ValueKind::from_u8(kind_byte).ok_or("unknown record kind")?;
    let key = get_length_prefixed(buf, pos).ok_or("bad key length")?;
    let value = match kind {
        ValueKind::Value => get_length_prefixed(buf, pos).ok_or("bad value length")?,
        ValueKind::Deletion => &[],
    };
    Ok(BatchOp {
        kind,
        key,
        value,
        family,
    })
}

/// Iterator over the updates of a batch, in insertion order.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    rep: &'a [u8],
    pos: usize,
    remaining: u32,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = BatchOp<'a>;

    fn next(&mut self) -> Option<BatchOp<'a>> {
        if self.remaining == 0 {
            return None;
        }
        // The batch was validated on construction, so this cannot fail; stop if it does.
        match decode_record(self.rep, &mut self.pos) {
            Ok(op) => {
                self.remaining -= 1;
                Some(op)
            }
            Err(_) => {
                self.remaining = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining as usize))
    }
}

impl WriteBatch {
    /// An empty batch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for `bytes` bytes of updates without reallocating (RocksDB's
    /// `reserved_bytes`): each update takes its key and value, a kind byte and a length
    /// prefix of up to 5 bytes per key and value ([`WriteBatch::put_size`]).
    #[must_use]
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN.saturating_add(bytes));
        rep.resize(HEADER_LEN, 0);
        Self { rep }
    }

    /// The bytes a put of `key` and `value` takes in a batch, at most (for
    /// [`WriteBatch::with_capacity`]).
    #[must_use]
    pub fn put_size(key: &[u8], value: &[u8]) -> usize {
        1 + 5 + key.len() + 5 + value.len()
    }

    fn count(&self) -> u32 {
        self.rep
            .get(8..HEADER_LEN)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    }

    fn set_count(&mut self, n: u32) {
        if let Some(b) = self.rep.get_mut(8..HEADER_LEN) {
            b.copy_from_slice(&n.to_le_bytes());
        }
    }

    /// Adds a put of `key` to `value`.
    ///
    /// Keys and values longer than `u32::MAX` bytes are not supported (the encoding uses
    /// 32-bit lengths); such a key or value is truncated to `u32::MAX` bytes.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.put_cf(&0, key, value);
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.delete_cf(&0, key);
    }

    /// Adds a put of `key` to `value` in column family `cf` (a `ColumnFamily` handle or an
    /// id; 0 is the default family, as [`WriteBatch::put`]).
    pub fn put_cf(&mut self, cf: &impl FamilyId, key: &[u8], value: &[u8]) {
        self.push_kind(cf.family_id(), ValueKind::Value);
        Self::push_slice(&mut self.rep, key);
        Self::push_slice(&mut self.rep, value);
        let c = self.count();
        self.set_count(c.wrapping_add(1));
    }

    /// Adds a delete of `key` in column family `cf`.
    pub fn delete_cf(&mut self, cf: &impl FamilyId, key: &[u8]) {
        self.push_kind(cf.family_id(), ValueKind::Deletion);
        Self::push_slice(&mut self.rep, key);
        let c = self.count();
        self.set_count(c.wrapping_add(1));
    }

    fn push_kind(&mut self, family: u32, kind: ValueKind) {
        if family == 0 {
            self.rep.push(kind as u8);
        } else {
            self.rep.push(FAMILY_DELETION + kind as u8);
            put_varint32(&mut self.rep, family);
        }
    }

    /// The column families other than the default that updates of this batch belong to,
    /// ascending, without repeats.
    #[must_use]
    pub fn families(&self) -> Vec<u32> {
        let mut f: Vec<u32> = self
            .iter()
            .map(|op| op.family)
            .filter(|&f| f != 0)
            .collect();
        f.sort_unstable();
        f.dedup();
        f
    }

    /// Whether some update belongs to a column family other than the default.
    #[must_use]
    pub fn has_families(&self) -> bool {
        self.iter().any(|op| op.family != 0)
    }

    fn push_slice(rep: &mut Vec<u8>, s: &[u8]) {
        let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
        put_varint32(rep, len);
        rep.extend_from_slice(s.get(..len as usize).unwrap_or(s));
    }

    /// Number of updates.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count() as usize
    }

    /// Whether the batch holds no update.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every update (and resets the sequence number).
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    /// Encoded size in bytes (header included).
    #[must_use]
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// The updates in insertion order.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            rep: &self.rep,
            pos: HEADER_LEN,
            remaining: self.count(),
        }
    }

    /// The sequence number of the first update (the next ones follow, +1 each).
    #[must_use]
    pub(crate) fn sequence(&self) -> SeqNo {
        self.rep
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    }

    /// Sets the sequence number of the first update.
    pub(crate) fn set_sequence(&mut self, seq: SeqNo) {
        if let Some(b) = self.rep.get_mut(..8) {
            b.copy_from_slice(&seq.to_le_bytes());
        }
    }

    /// The encoded batch: the payload of its WAL record.
    #[must_use]
    pub(crate) fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Decodes and fully validates an encoded batch (a WAL record payload).
    ///
    /// # Errors
    /// `Corruption` (offset relative to the start of `data`) if the header is short, a
    /// record is malformed or truncated, bytes trail the last record, or the header's count
    /// disagrees with the records present.
    pub(crate) fn from_data(data: Vec<u8>) -> Result<WriteBatch> {
        if data.len() < HEADER_LEN {
            return Err(Error::corruption(
                0,
                format!("write batch too short: {} bytes < {HEADER_LEN}", data.len()),
            ));
        }
        let batch = WriteBatch { rep: data };
        let expected = batch.count();
        let mut pos = HEADER_LEN;
        let mut found: u32 = 0;
        while pos < batch.rep.len() {
            let start = pos;
            if let Err(detail) = decode_record(&batch.rep, &mut pos) {
                return Err(Error::corruption(
                    start as u64,
                    format!("write batch record {found}: {detail}"),
                ));
            }
            found = found.checked_add(1).ok_or_else(|| {
                Error::corruption(start as u64, "write batch holds too many records")
            })?;
        }
        if found != expected {
            return Err(Error::corruption(
                8,
                format!("write batch count mismatch: header says {expected}, found {found}"),
            ));
        }
        Ok(batch)
    }

    /// Appends every update of `other` after this batch's updates (LevelDB's
    /// `WriteBatch::Append`; group commit uses it too). Keeps this batch's sequence number.
    pub fn append(&mut self, other: &WriteBatch) {
        let c = self.count().wrapping_add(other.count());
        self.rep
            .extend_from_slice(other.rep.get(HEADER_LEN..).unwrap_or(&[]));
        self.set_count(c);
    }

    /// Sum of the key and value lengths of every update (the user bytes written).
    #[must_use]
    pub(crate) fn user_bytes(&self) -> u64 {
        self.iter()
            .map(|op| (op.key.len() + op.value.len()) as u64)
            .sum()
    }
}

/// A point in a batch's history (its size and count), to cut the batch back to
/// ([`WriteBatch::truncate_to`]): what savepoints of indexed batches keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchMark {
    bytes: usize,
    count: u32,
}

impl WriteBatch {
    /// The batch's current end, for [`WriteBatch::truncate_to`]; also the offset at which
    /// the next update's record starts ([`WriteBatch::op_at`]).
    #[must_use]
    pub(crate) fn mark(&self) -> BatchMark {
        BatchMark {
            bytes: self.rep.len(),
            count: self.count(),
        }
    }

    /// The offset of a mark: where the record added after it starts.
    #[must_use]
    pub(crate) fn mark_offset(m: BatchMark) -> usize {
        m.bytes
    }

    /// Drops every update added after `m` (a mark of this batch, taken since its last
    /// `clear`). A mark beyond the batch's end leaves the batch unchanged.
    pub(crate) fn truncate_to(&mut self, m: BatchMark) {
        if m.bytes >= HEADER_LEN && m.bytes <= self.rep.len() {
            self.rep.truncate(m.bytes);
            self.set_count(m.count);
        }
    }

    /// The update whose record starts at byte `offset` (a [`WriteBatch::mark_offset`] taken
    /// just before it was added), or `None` if no record starts there.
    #[must_use]
    pub(crate) fn op_at(&self, offset: usize) -> Option<BatchOp<'_>> {
        if offset < HEADER_LEN {
            return None;
        }
        let mut pos = offset;
        decode_record(&self.rep, &mut pos).ok()
    }

    /// The updates in insertion order, each with the offset its record starts at.
    pub(crate) fn ops_with_offsets(&self) -> impl Iterator<Item = (usize, BatchOp<'_>)> + '_ {
        let mut pos = HEADER_LEN;
        let mut remaining = self.count();
        std::iter::from_fn(move || {
            if remaining == 0 {
                return None;
            }
            let start = pos;
            match decode_record(&self.rep, &mut pos) {
                Ok(op) => {
                    remaining -= 1;
                    Some((start, op))
                }
                Err(_) => {
                    remaining = 0;
                    None
                }
            }
        })
    }
}

impl<'a> IntoIterator for &'a WriteBatch {
    type Item = BatchOp<'a>;
    type IntoIter = BatchIter<'a>;
    fn into_iter(self) -> BatchIter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    fn ops(b: &WriteBatch) -> Vec<(ValueKind, Vec<u8>, Vec<u8>)> {
        b.iter()
            .map(|o| (o.kind, o.key.to_vec(), o.value.to_vec()))
            .collect()
    }

    #[test]
    fn family_records_roundtrip_and_old_records_are_the_default_family() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.put_cf(&3, b"b", b"2");
        b.delete_cf(&300, b"c");
        b.put_cf(&0, b"d", b"4");
        b.delete(b"e");
        b.set_sequence(7);
        let d = WriteBatch::from_data(b.data().to_vec()).unwrap();
        let got: Vec<(u32, ValueKind, Vec<u8>, Vec<u8>)> = d
            .iter()
            .map(|o| (o.family, o.kind, o.key.to_vec(), o.value.to_vec()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, ValueKind::Value, b"a".to_vec(), b"1".to_vec()),
                (3, ValueKind::Value, b"b".to_vec(), b"2".to_vec()),
                (300, ValueKind::Deletion, b"c".to_vec(), vec![]),
                (0, ValueKind::Value, b"d".to_vec(), b"4".to_vec()),
                (0, ValueKind::Deletion, b"e".to_vec(), vec![]),
            ]
        );
        assert_eq!(d.families(), vec![3, 300]);
        assert!(d.has_families());
        // An update of family 0 is written in the old layout: an old reader decodes it.
        let mut old = WriteBatch::new();
        old.put_cf(&0, b"k", b"v");
        let mut legacy = vec![0u8; HEADER_LEN];
        legacy[8] = 1;
        legacy.extend_from_slice(&[1, 1, b'k', 1, b'v']);
        assert_eq!(old.data(), &legacy[..]);
        assert!(!old.has_families());
        // A family record naming family 0, or with a truncated id, is corrupt.
        let mut bad = vec![0u8; HEADER_LEN];
        bad[8] = 1;
        bad.extend_from_slice(&[FAMILY_VALUE, 0, 1, b'k', 1, b'v']);
        assert!(WriteBatch::from_data(bad).is_err());
        let mut bad = vec![0u8; HEADER_LEN];
        bad[8] = 1;
        bad.extend_from_slice(&[FAMILY_DELETION, 0x80]);
        assert!(WriteBatch::from_data(bad).is_err());
    }

    #[test]
    fn roundtrip_through_bytes() {
        let mut b = WriteBatch::new();
        assert!(b.is_empty());
        b.put(b"k1", b"v1");
        b.delete(b"k2");
        b.put(b"", b"");
        let big = vec![7u8; 300];
        b.put(&big, &big);
        b.set_sequence(12345);
        assert_eq!(b.len(), 4);
        assert_eq!(b.sequence(), 12345);
        assert_eq!(b.user_bytes(), 2 + 2 + 2 + 600);

        let d = WriteBatch::from_data(b.data().to_vec()).unwrap();
        assert_eq!(d.sequence(), 12345);
        assert_eq!(
            ops(&d),
            vec![
                (ValueKind::Value, b"k1".to_vec(), b"v1".to_vec()),
                (ValueKind::Deletion, b"k2".to_vec(), vec![]),
                (ValueKind::Value, vec![], vec![]),
                (ValueKind::Value, big.clone(), big.clone()),
            ]
        );
        assert_eq!(d, b);
    }

    #[test]
    fn a_batch_sized_for_its_put_holds_it_without_growing() {
        for (k, v) in [
            (&b""[..], &b""[..]),
            (b"key", b"value"),
            (&[1; 200][..], &[2; 70_000][..]),
        ] {
            let mut sized = WriteBatch::with_capacity(WriteBatch::put_size(k, v));
            let room = sized.rep.capacity();
            sized.put(k, v);
            assert_eq!(sized.rep.capacity(), room, "the put reallocated");
            let mut plain = WriteBatch::new();
            plain.put(k, v);
            assert_eq!(sized, plain, "the same batch either way");
        }
        let mut del = WriteBatch::with_capacity(WriteBatch::put_size(b"k", &[]));
        assert!(del.is_empty());
        let room = del.rep.capacity();
        del.delete(b"k");
        assert_eq!(del.rep.capacity(), room, "the delete reallocated");
        assert_eq!(
            ops(&del),
            vec![(ValueKind::Deletion, b"k".to_vec(), vec![])]
        );
    }

    #[test]
    fn clear_and_append() {
        let mut a = WriteBatch::new();
        a.put(b"a", b"1");
        a.set_sequence(10);
        let mut b = WriteBatch::new();
        b.delete(b"b");
        b.put(b"c", b"3");
        b.set_sequence(99);
        a.append(&b);
        assert_eq!(a.len(), 3);
        assert_eq!(a.sequence(), 10);
        let keys: Vec<_> = a.iter().map(|o| o.key.to_vec()).collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        WriteBatch::from_data(a.data().to_vec()).unwrap();
        let size_before = a.approximate_size();
        a.clear();
        assert!(a.is_empty());
        assert_eq!(a.sequence(), 0);
        assert!(a.approximate_size() < size_before);
        assert_eq!(a.iter().count(), 0);
    }

    #[test]
    fn marks_cut_a_batch_back_and_offsets_find_records() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        let m = b.mark();
        let off = WriteBatch::mark_offset(m);
        b.delete(b"b");
        b.put(b"c", b"3");
        let op = b.op_at(off).unwrap();
        assert_eq!((op.kind, op.key), (ValueKind::Deletion, &b"b"[..]));
        let offs: Vec<_> = b
            .ops_with_offsets()
            .map(|(o, op)| (o, op.key.to_vec()))
            .collect();
        assert_eq!(offs.len(), 3);
        assert_eq!(offs[1], (off, b"b".to_vec()));
        assert!(b.op_at(0).is_none());
        b.truncate_to(m);
        assert_eq!(
            ops(&b),
            vec![(ValueKind::Value, b"a".to_vec(), b"1".to_vec())]
        );
        WriteBatch::from_data(b.data().to_vec()).unwrap();
        // A mark past the end changes nothing.
        let far = BatchMark {
            bytes: 1000,
            count: 9,
        };
        b.truncate_to(far);
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn from_data_rejects_bad_input() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        b.delete(b"gone");
        let good = b.data().to_vec();

        // Short header.
        let e = WriteBatch::from_data(good[..5].to_vec()).unwrap_err();
        assert!(e.is_corruption());
        // Every truncation inside the records.
        for cut in HEADER_LEN + 1..good.len() {
            let e = WriteBatch::from_data(good[..cut].to_vec()).unwrap_err();
            assert!(e.is_corruption(), "cut at {cut}");
        }
        // Truncation at a record boundary: count mismatch.
        let e = WriteBatch::from_data(good[..HEADER_LEN].to_vec()).unwrap_err();
        assert!(e.is_corruption());
        // Bad kind.
        let mut bad = good.clone();
        bad[HEADER_LEN] = 9;
        match WriteBatch::from_data(bad).unwrap_err() {
            Error::Corruption { offset, .. } => assert_eq!(offset, HEADER_LEN as u64),
            e => panic!("unexpected {e:?}"),
        }
        // Count larger than the records.
        let mut bad = good.clone();
        bad[8] = 3;
        assert!(WriteBatch::from_data(bad).unwrap_err().is_corruption());
        // Trailing garbage.
        let mut bad = good.clone();
        bad.push(1);
        assert!(WriteBatch::from_data(bad).unwrap_err().is_corruption());
        // Huge length varint.
        let mut bad = good[..HEADER_LEN + 1].to_vec();
        bad.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(WriteBatch::from_data(bad).unwrap_err().is_corruption());
        // Overlong varint.
        let mut bad = good[..HEADER_LEN + 1].to_vec();
        bad.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
        assert!(WriteBatch::from_data(bad).unwrap_err().is_corruption());
    }

    #[test]
    fn from_data_never_panics_on_random_bytes() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut b = WriteBatch::new();
        for i in 0..20u32 {
            if i % 3 == 0 {
                b.delete(&i.to_le_bytes());
            } else {
                b.put(&i.to_le_bytes(), &vec![i as u8; i as usize * 10]);
            }
        }
        let good = b.data().to_vec();
        for _ in 0..5000 {
            let mut data = if rng.random_bool(0.5) {
                let n = rng.random_range(0..64);
                (0..n).map(|_| rng.random::<u8>()).collect::<Vec<u8>>()
            } else {
                good.clone()
            };
            // Flip a few random bytes.
            for _ in 0..rng.random_range(0..4) {
                if !data.is_empty() {
                    let i = rng.random_range(0..data.len());
                    data[i] = rng.random();
                }
            }
            if let Ok(d) = WriteBatch::from_data(data) {
                // A batch that validates iterates exactly `len()` records.
                assert_eq!(d.iter().count(), d.len());
            }
        }
    }
}
