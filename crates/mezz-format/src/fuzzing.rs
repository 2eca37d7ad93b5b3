//! Fuzzing entry points: one `fuzz_<decoder>` function per decoder of this crate, shared by
//! the cargo-fuzz targets (`fuzz/fuzz_targets/`) and by the stable corpus replay test
//! (`tests/fuzz_corpus.rs`), plus [`seed_corpus`], the generator of the checked-in seeds.
//!
//! Contract: every `fuzz_*` function accepts arbitrary bytes, runs the decoder, and when
//! the decoder accepts the input, exercises the result (iterates every entry both ways,
//! seeks to a few keys, calls every accessor). Bad bytes must give an error, never a panic,
//! never an allocation sized by an unchecked length. The functions also check properties
//! that hold for *every* accepted input (forward and backward iteration agree, a seek to a
//! stored key finds it, a table that passes `verify` iterates to the same entry count, ...)
//! and panic when one fails: a panic here is a bug in the decoder, or in the property.
//!
//! Iteration is bounded (see [`MAX_STEPS`]) so that a decoder that never ends shows up as a
//! failed check rather than a hang.
//!
//! Thread-safety: stateless functions; each call owns its data.

use std::cmp::Ordering;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use mezz_env::{RandomAccessFile, WritableFile};

use crate::block::{Block, BlockBuilder, BlockFormat, IndexKind, KeySetRef, KeySetWriter};
use crate::checksum::{crc32c, crc32c_extend, mask};
use crate::coding::get_fixed64;
use crate::filter::{BloomBuilder, BloomFilter};
use crate::ikey::{
    MAX_SEQ, ValueKind, compare_internal_keys, make_internal_key, parse_internal_key,
};
use crate::iter::InternalIterator;
use crate::log::{LOG_BLOCK_SIZE, LogRead, LogReader, LogWriter};
use crate::order::KeyOrder;
use crate::sst::{Compression, FOOTER_LEN, TableBuilder, TableBuilderOptions, TableReader};

/// Upper bound on the entries visited by one forward walk. Every entry takes at least a
/// few bytes of input, so a walk over an input of at most 64 KiB never reaches it unless the
/// iterator fails to advance.
pub const MAX_STEPS: usize = 1 << 17;

/// Upper bound on `prev` steps of one backward walk. A backward step in a prefix block
/// re-scans its restart region, so a hostile block with one restart point and thousands of
/// entries costs quadratic time; the bound keeps a fuzz run fast without losing coverage.
const MAX_BACK_STEPS: usize = 2048;

/// Number of stored keys used as seek targets.
const SEEK_KEYS: usize = 8;

// ---------------------------------------------------------------------------------------
// In-memory files
// ---------------------------------------------------------------------------------------

/// A read-only file over a byte vector.
#[derive(Debug)]
struct BytesFile(Vec<u8>);

impl RandomAccessFile for BytesFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|start| self.0.get(start..start.checked_add(buf.len())?))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

/// An append-only buffer shared between a writer and its creator.
#[derive(Debug, Clone, Default)]
struct SharedVec(Arc<Mutex<Vec<u8>>>);

impl SharedVec {
    fn bytes(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl WritableFile for SharedVec {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn size(&self) -> u64 {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len() as u64
    }
}

// ---------------------------------------------------------------------------------------
// Iterator exercise
// ---------------------------------------------------------------------------------------

/// What a forward and a backward walk saw.
#[derive(Debug)]
struct Walk {
    /// Keys in forward order.
    keys: Vec<Vec<u8>>,
    /// The forward walk reached the end (no error, no step bound).
    forward_complete: bool,
    /// Keys in backward order (at most [`MAX_BACK_STEPS`]).
    back: Vec<Vec<u8>>,
    /// The backward walk ended without error.
    back_ok: bool,
}

impl Walk {
    /// Whether the forward keys strictly increase in internal-key order.
    fn strictly_sorted(&self) -> bool {
        self.keys
            .windows(2)
            .all(|w| matches!(w, [a, b] if compare_internal_keys(a, b) == Ordering::Less))
    }
}

/// Walks `it` forward from the first entry and backward from the last one, touching every
/// key and value.
fn walk<I: InternalIterator>(it: &mut I) -> Walk {
    let mut keys = Vec::new();
    it.seek_to_first();
    while it.valid() && keys.len() < MAX_STEPS {
        keys.push(it.key().to_vec());
        std::hint::black_box(it.value().len());
        it.next();
    }
    let forward_complete = !it.valid() && it.status().is_ok();
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() && back.len() < MAX_BACK_STEPS {
        back.push(it.key().to_vec());
        std::hint::black_box(it.value().len());
        it.prev();
    }
    let back_ok = it.status().is_ok();
    Walk {
        keys,
        forward_complete,
        back,
        back_ok,
    }
}

/// Checks that a complete backward walk saw the forward keys in reverse.
fn check_directions_agree(w: &Walk, what: &str) {
    if !(w.forward_complete && w.back_ok) {
        return;
    }
    let expect: Vec<&Vec<u8>> = w.keys.iter().rev().take(w.back.len()).collect();
    let got: Vec<&Vec<u8>> = w.back.iter().collect();
    assert_eq!(
        got, expect,
        "{what}: backward iteration disagrees with forward iteration"
    );
    if w.back.len() < MAX_BACK_STEPS {
        assert_eq!(
            w.back.len(),
            w.keys.len(),
            "{what}: backward iteration saw a different number of entries"
        );
    }
}

/// Seek targets: a few stored keys (evenly spread) and a few synthetic ones.
fn seek_targets(keys: &[Vec<u8>], data: &[u8]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let step = (keys.len() / SEEK_KEYS).max(1);
    let mut stored: Vec<Vec<u8>> = keys.iter().step_by(step).take(SEEK_KEYS).cloned().collect();
    if let Some(last) = keys.last() {
        stored.push(last.clone());
    }
    let prefix = data.get(..data.len().min(24)).unwrap_or_default();
    let mut synthetic = vec![
        Vec::new(),
        prefix.to_vec(),
        make_internal_key(prefix, 0, ValueKind::Value),
        vec![0xff; 16],
    ];
    for k in stored.iter().take(2) {
        // Near a stored key: one byte longer, and the same user key one sequence newer
        // (just before it in internal-key order).
        let mut longer = k.clone();
        longer.push(0);
        synthetic.push(longer);
        if let Some(p) = parse_internal_key(k)
            && let Some(seq) = p.seq.checked_add(1).filter(|&s| s <= MAX_SEQ)
        {
            synthetic.push(make_internal_key(p.user_key, seq, p.kind));
        }
    }
    (stored, synthetic)
}

/// Seeks to every target in both directions, with a direction change after each seek.
/// With `sorted`, checks the seek contracts: `seek(t)` lands on the first key `>= t` and
/// `seek_for_prev(t)` on the last key `<= t`; a stored target is found exactly.
fn exercise_seeks<I: InternalIterator>(
    it: &mut I,
    keys: &[Vec<u8>],
    data: &[u8],
    sorted: bool,
    what: &str,
) {
    let (stored, synthetic) = seek_targets(keys, data);
    for (target, is_stored) in stored
        .iter()
        .map(|t| (t, true))
        .chain(synthetic.iter().map(|t| (t, false)))
    {
        it.seek(target);
        let ok = it.status().is_ok();
        if sorted && ok {
            let expect = keys
                .iter()
                .find(|k| compare_internal_keys(k, target) != Ordering::Less);
            let got = it.valid().then(|| it.key().to_vec());
            assert_eq!(got.as_ref(), expect, "{what}: seek to {target:?}");
            if is_stored {
                assert!(it.valid(), "{what}: seek to a stored key found nothing");
            }
        }
        if it.valid() {
            std::hint::black_box(it.value().len());
            it.prev();
            if it.valid() {
                std::hint::black_box((it.key().len(), it.value().len()));
                it.next();
            }
        }
        it.seek_for_prev(target);
        let ok = it.status().is_ok();
        if sorted && ok {
            let expect = keys
                .iter()
                .rev()
                .find(|k| compare_internal_keys(k, target) != Ordering::Greater);
            let got = it.valid().then(|| it.key().to_vec());
            assert_eq!(got.as_ref(), expect, "{what}: seek_for_prev to {target:?}");
        }
        if it.valid() {
            std::hint::black_box(it.value().len());
            it.next();
            if it.valid() {
                std::hint::black_box((it.key().len(), it.value().len()));
                it.prev();
            }
        }
        std::hint::black_box(it.status().is_ok());
    }
}

// ---------------------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------------------

/// Calls every accessor of a parsed KeySet run.
fn exercise_keyset_ref(ks: &KeySetRef<'_>, data: &[u8]) {
    let n = ks.num_entries();
    std::hint::black_box((ks.index_kind(), ks.as_bytes().len()));
    for i in 0..n.min(MAX_STEPS) {
        let key = ks.key(i);
        assert!(
            key.is_some(),
            "KeySet: entry {i} of a parsed run has no key"
        );
        assert!(
            ks.index_field(i).is_some(),
            "KeySet: entry {i} has no index"
        );
        let value = ks.value(i);
        if ks.index_kind() == IndexKind::ValueRef {
            assert!(value.is_some(), "KeySet: entry {i} has no value");
        }
        if let Some(k) = key {
            // A lower bound; it points at `i` or before only if the run is sorted.
            assert!(
                ks.find(k, &KeyOrder::default()) <= n,
                "KeySet: find out of range"
            );
        }
    }
    assert!(ks.key(n).is_none() && ks.index_field(n).is_none() && ks.value(n).is_none());
    std::hint::black_box(ks.find(
        data.get(..data.len().min(16)).unwrap_or_default(),
        &KeyOrder::default(),
    ));
}

fn fuzz_block(data: &[u8], format: BlockFormat) {
    let Ok(block) = Block::new(data.to_vec(), format) else {
        return;
    };
    let block = Arc::new(block);
    assert_eq!(block.format(), format);
    assert_eq!(block.len_bytes(), data.len());
    assert_eq!(block.contents(), data);
    assert_eq!(block.file_offset(), 0);
    let n = block.num_entries();
    if let Some(ks) = block.keyset() {
        assert_eq!(format, BlockFormat::KeySet);
        assert_eq!(ks.num_entries(), n);
        exercise_keyset_ref(&ks, data);
    }
    let mut it = block.iter(&KeyOrder::default());
    assert!(!it.valid(), "a new block iterator must be unpositioned");
    let w = walk(&mut it);
    // Prefix blocks whose restart points do not start entries decode without error but
    // iterate differently backward; `check_entries` (used by table verification) finds them.
    let consistent = block.check_entries().is_ok();
    if w.forward_complete {
        assert_eq!(w.keys.len(), n, "iteration and num_entries disagree");
    }
    if consistent {
        check_directions_agree(&w, "block");
    }
    let sorted = consistent && w.forward_complete && w.strictly_sorted();
    exercise_seeks(&mut it, &w.keys, data, sorted, "block");
}

/// Decodes `data` as a KeySet block (and as a bare KeySet run) and exercises the result.
pub fn fuzz_keyset_block(data: &[u8]) {
    if let Ok(ks) = KeySetRef::parse(data, 0) {
        exercise_keyset_ref(&ks, data);
    }
    if let Ok(ks) = KeySetRef::parse_trailer(data, 0) {
        // Only the trailer is checked: accessors must still stay in bounds.
        for i in 0..ks.num_entries().min(64) {
            std::hint::black_box((ks.key(i), ks.value(i), ks.index_field(i)));
        }
        std::hint::black_box(ks.find(
            data.get(..data.len().min(16)).unwrap_or_default(),
            &KeyOrder::default(),
        ));
    }
    fuzz_block(data, BlockFormat::KeySet);
}

/// Decodes `data` as a prefix-compressed block and exercises the result.
pub fn fuzz_prefix_block(data: &[u8]) {
    fuzz_block(data, BlockFormat::Prefix);
}

// ---------------------------------------------------------------------------------------
// SST
// ---------------------------------------------------------------------------------------

fn pad8(len: u64) -> u64 {
    (8 - len % 8) % 8
}

/// Rewrites the checksum of the block at `(offset, size)` (contents, then padding to 8
/// bytes, then masked crc32c u32 | type u8) so that it verifies. Out-of-range handles are
/// left alone.
fn repair_block_crc(file: &mut [u8], offset: u64, size: u64) -> Option<()> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    let trailer = end.checked_add(usize::try_from(pad8(size)).ok()?)?;
    let ty = *file.get(trailer.checked_add(4)?)?;
    let crc = mask(crc32c_extend(crc32c(file.get(start..end)?), &[ty]));
    file.get_mut(trailer..trailer + 4)?
        .copy_from_slice(&crc.to_le_bytes());
    Some(())
}

fn handle_at(b: &[u8], pos: usize) -> Option<(u64, u64)> {
    Some((get_fixed64(b, pos)?, get_fixed64(b, pos.checked_add(8)?)?))
}

/// Makes every checksum of a table-shaped input verify (footer, meta blocks, and the data
/// blocks the index points at), so that the fuzzer reaches the structure checks behind
/// them. Returns `None` if the input has no footer.
fn repair_checksums(mut file: Vec<u8>) -> Option<Vec<u8>> {
    let f = file.len().checked_sub(FOOTER_LEN)?;
    let footer = file.get(f..)?.to_vec();
    let (index_off, index_size) = handle_at(&footer, 0)?;
    for pos in [16, 32] {
        let (off, size) = handle_at(&footer, pos)?;
        repair_block_crc(&mut file, off, size);
    }
    repair_block_crc(&mut file, index_off, index_size);
    let index = usize::try_from(index_off)
        .ok()
        .zip(usize::try_from(index_size).ok())
        .and_then(|(s, n)| file.get(s..s.checked_add(n)?))
        .map(<[u8]>::to_vec);
    if let Some(index) = index
        && let Ok(ks) = KeySetRef::parse(&index, 0)
    {
        for i in 0..ks.num_entries().min(4096) {
            if let Some((off, size)) = ks.value(i).and_then(|v| handle_at(v, 0)) {
                repair_block_crc(&mut file, off, size);
            }
        }
    }
    let crc = mask(crc32c(footer.get(..60)?));
    file.get_mut(f + 60..f + 64)?
        .copy_from_slice(&crc.to_le_bytes());
    Some(file)
}

/// Every entry of the table in `data` (internal key, value) after `verify` passed; for
/// tests that compare tables written by different builds.
///
/// # Errors
/// Whatever opening, verifying or iterating the table reports.
pub fn table_entries(data: &[u8]) -> crate::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let len = data.len() as u64;
    let file: Arc<dyn RandomAccessFile> = Arc::new(BytesFile(data.to_vec()));
    let table = Arc::new(TableReader::open(file, len, 7, None, &KeyOrder::default())?);
    table.verify()?;
    let mut it = table.iter(false);
    let out = iterator_entries(&mut it);
    it.status()?;
    Ok(out)
}

/// Every entry `it` yields from its first, as (key, value) copies.
pub fn iterator_entries(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

fn fuzz_table_once(data: Vec<u8>) {
    let len = data.len() as u64;
    let file: Arc<dyn RandomAccessFile> = Arc::new(BytesFile(data.clone()));
    let Ok(table) = TableReader::open(file, len, 7, None, &KeyOrder::default()) else {
        return;
    };
    let table = Arc::new(table);
    let props = table.properties().clone();
    assert_eq!(props.file_size, len);
    assert_eq!(table.file_size(), len);
    assert_eq!(table.cache_id(), 7);
    std::hint::black_box((table.counters().snapshot(), table.read_counters()));
    let verified = table.verify();
    let mut it = table.iter(false);
    let w = walk(&mut it);
    if let Ok(count) = &verified {
        assert!(
            w.forward_complete,
            "table passed verify but iteration failed: {:?}",
            it.status()
        );
        assert_eq!(w.keys.len() as u64, *count, "verify and iteration disagree");
        assert_eq!(props.num_entries, *count);
        assert!(w.strictly_sorted(), "verified table iterates out of order");
    }
    // A table that passes `verify` promises consistent iteration and seeks.
    let consistent = verified.is_ok();
    if consistent {
        check_directions_agree(&w, "table");
    }
    exercise_seeks(&mut it, &w.keys, &data, consistent, "table");
    let (stored, synthetic) = seek_targets(&w.keys, &data);
    for k in &stored {
        let got = table.get(k, true);
        if consistent {
            let got = got.ok().flatten().map(|(k, _)| k);
            assert_eq!(got.as_ref(), Some(k), "table: get of a stored key");
        }
        std::hint::black_box(table.approximate_offset_of(k));
    }
    for k in &synthetic {
        std::hint::black_box((table.get(k, false).is_ok(), table.approximate_offset_of(k)));
        std::hint::black_box(table.may_contain(k));
    }
}

/// Opens `data` as a whole SST file, verifies it, iterates it both ways, seeks and looks
/// up a few keys. Runs twice: on the bytes as given, and with every checksum repaired (so
/// that mutations reach the index, filter, properties and data-block decoders, and the
/// LZ4 and Zstd decompressors of compressed data blocks).
pub fn fuzz_sst_table(data: &[u8]) {
    fuzz_table_once(data.to_vec());
    if let Some(repaired) = repair_checksums(data.to_vec())
        && repaired != data
    {
        fuzz_table_once(repaired);
    }
}

// ---------------------------------------------------------------------------------------
// Bloom filter
// ---------------------------------------------------------------------------------------

/// Decodes `data` as a bloom filter and probes it; then builds a filter over keys cut from
/// `data` and checks it has no false negative.
pub fn fuzz_bloom_filter(data: &[u8]) {
    if let Ok(f) = BloomFilter::from_bytes(data.to_vec()) {
        assert!(f.len_bytes() > 0 && f.len_bytes() < data.len());
        for k in data.chunks(7).take(64) {
            std::hint::black_box(f.may_contain(k));
        }
        std::hint::black_box((f.may_contain(b""), f.may_contain_hash(0)));
    }
    let bits = data.first().map_or(10, |&b| u32::from(b % 32));
    let keys: Vec<&[u8]> = data
        .get(1..)
        .unwrap_or_default()
        .chunks(5)
        .take(512)
        .collect();
    let mut b = BloomBuilder::new(bits);
    for k in &keys {
        b.add_key(k);
    }
    let built = b.finish();
    let f = match BloomFilter::from_bytes(built) {
        Ok(f) => f,
        Err(e) => panic!("a built filter does not decode: {e}"),
    };
    for k in &keys {
        assert!(f.may_contain(k), "bloom filter: false negative");
    }
}

// ---------------------------------------------------------------------------------------
// Log framing
// ---------------------------------------------------------------------------------------

/// Reads `data` as a log file until `Eof`, checking that the reader always progresses;
/// then writes records cut from `data` and checks they read back unchanged.
pub fn fuzz_log_record(data: &[u8]) {
    let len = data.len() as u64;
    let mut reader = LogReader::new(Arc::new(BytesFile(data.to_vec())));
    // Every result but Eof moves past at least one byte, or reports the end.
    let bound = data.len() * 2 + 16;
    let mut last_offset: Option<u64> = None;
    let mut ended = false;
    for _ in 0..bound {
        match reader.read_record() {
            LogRead::Record { data: rec, offset } => {
                assert!(
                    offset < len && rec.len() as u64 <= len,
                    "record out of range"
                );
                assert!(
                    last_offset.is_none_or(|o| offset > o),
                    "records not in file order"
                );
                last_offset = Some(offset);
            }
            LogRead::Corrupt { offset, detail, .. } => {
                assert!(offset <= len, "corruption offset {offset} beyond the file");
                std::hint::black_box(detail);
            }
            LogRead::Eof => {
                ended = true;
                break;
            }
        }
        assert!(reader.last_record_end() <= len);
    }
    assert!(ended, "log reader did not reach Eof within {bound} reads");
    assert!(reader.io_error().is_none());
    assert_eq!(reader.read_record(), LogRead::Eof, "Eof must be sticky");

    // Roundtrip: records cut at every 0x00 byte (empty records included).
    let records: Vec<&[u8]> = data.split(|&b| b == 0).take(256).collect();
    let out = SharedVec::default();
    let mut w = LogWriter::new(Box::new(out.clone()));
    for r in &records {
        if let Err(e) = w.add_record(r) {
            panic!("log writer failed in memory: {e}");
        }
    }
    let written = out.bytes();
    assert_eq!(w.size(), written.len() as u64);
    let mut reader = LogReader::new(Arc::new(BytesFile(written)));
    for (i, r) in records.iter().enumerate() {
        match reader.read_record() {
            LogRead::Record { data, .. } => assert_eq!(&data, r, "log record {i} changed"),
            other => panic!("log record {i} did not read back: {other:?}"),
        }
    }
    assert_eq!(reader.read_record(), LogRead::Eof);
}

// ---------------------------------------------------------------------------------------
// Seeds
// ---------------------------------------------------------------------------------------

/// Sorted internal keys `k{i:04}` (every third one a deletion, some with two versions)
/// with values of varied length.
fn sample_entries(n: usize, value_len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    let mut i = 0usize;
    while v.len() < n {
        let uk = format!("key{i:04}");
        let kind = if i % 3 == 2 {
            ValueKind::Deletion
        } else {
            ValueKind::Value
        };
        let seq = 100 + i as u64;
        if i.is_multiple_of(5) {
            v.push((
                make_internal_key(uk.as_bytes(), seq + 1000, ValueKind::Value),
                vec![b'n'; value_len / 2],
            ));
        }
        let val = match kind {
            ValueKind::Deletion => Vec::new(),
            ValueKind::Value => vec![b'a' + (i % 26) as u8; value_len + i % 7],
        };
        v.push((make_internal_key(uk.as_bytes(), seq, kind), val));
        i += 1;
    }
    v.truncate(n);
    v
}

fn block_seed(format: BlockFormat, restart_interval: usize, n: usize) -> Vec<u8> {
    let mut b = BlockBuilder::new(format, restart_interval);
    for (k, v) in sample_entries(n, 12) {
        b.add(&k, &v);
    }
    b.finish().to_vec()
}

fn table_seed(opts: TableBuilderOptions, n: usize) -> Vec<u8> {
    let out = SharedVec::default();
    let mut t = TableBuilder::new(Box::new(out.clone()), opts);
    for (k, v) in sample_entries(n, 20) {
        if t.add(&k, &v).is_err() {
            return Vec::new();
        }
    }
    if t.finish().is_err() {
        return Vec::new();
    }
    out.bytes()
}

fn log_seed(records: &[Vec<u8>], truncate_by: usize, zero_tail: usize) -> Vec<u8> {
    log_seed_sealed(records, false, truncate_by, zero_tail)
}

/// As `log_seed`; `sealed`: an END marker after the records (a sealed WAL).
fn log_seed_sealed(
    records: &[Vec<u8>],
    sealed: bool,
    truncate_by: usize,
    zero_tail: usize,
) -> Vec<u8> {
    let out = SharedVec::default();
    let mut w = LogWriter::new(Box::new(out.clone()));
    for r in records {
        if w.add_record(r).is_err() {
            return Vec::new();
        }
    }
    if sealed && w.add_end().is_err() {
        return Vec::new();
    }
    let mut bytes = out.bytes();
    bytes.truncate(bytes.len().saturating_sub(truncate_by));
    bytes.resize(bytes.len() + zero_tail, 0);
    bytes
}

/// The seed inputs of this crate's fuzz targets: `(target, file name, bytes)`. Valid,
/// realistic encodings (and a few damaged ones) written by this crate's own builders.
#[must_use]
pub fn seed_corpus() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut s: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    for n in [0, 1, 5, 40] {
        s.push((
            "keyset_block",
            format!("seed-keyset-{n}"),
            block_seed(BlockFormat::KeySet, 16, n),
        ));
    }
    let mut opaque = KeySetWriter::new(IndexKind::Opaque);
    for (i, (k, _)) in sample_entries(6, 0).iter().enumerate() {
        opaque.add_with_index(k, 0x1000 * i as u64 + 7);
    }
    s.push((
        "keyset_block",
        "seed-keyset-opaque".into(),
        opaque.finish().to_vec(),
    ));
    for (n, interval) in [(0, 16), (1, 16), (12, 1), (30, 4), (40, 16)] {
        s.push((
            "prefix_block",
            format!("seed-prefix-{n}-r{interval}"),
            block_seed(BlockFormat::Prefix, interval, n),
        ));
    }
    let none = Compression::None;
    for (name, format, bloom, block_size, n, compression) in [
        ("keyset-bloom", BlockFormat::KeySet, 10, 256, 40, none),
        ("keyset-nofilter", BlockFormat::KeySet, 0, 512, 20, none),
        ("keyset-empty", BlockFormat::KeySet, 10, 4096, 0, none),
        ("prefix-bloom", BlockFormat::Prefix, 10, 256, 40, none),
        ("prefix-nofilter", BlockFormat::Prefix, 0, 4096, 8, none),
        (
            "keyset-lz4",
            BlockFormat::KeySet,
            10,
            256,
            40,
            Compression::Lz4,
        ),
        (
            "prefix-zstd",
            BlockFormat::Prefix,
            0,
            512,
            40,
            Compression::Zstd,
        ),
    ] {
        let opts = TableBuilderOptions {
            block_size,
            block_format: format,
            restart_interval: 4,
            bloom_bits_per_key: bloom,
            compression,
            zstd_level: 3,
            order: KeyOrder::default(),
        };
        s.push(("sst_table", format!("seed-sst-{name}"), table_seed(opts, n)));
    }
    for (n, bits) in [(0, 10), (1, 10), (50, 10), (200, 4), (30, 20)] {
        let mut b = BloomBuilder::new(bits);
        for (k, _) in sample_entries(n, 0) {
            if let Some(p) = parse_internal_key(&k) {
                b.add_key(p.user_key);
            }
        }
        s.push((
            "bloom_filter",
            format!("seed-bloom-{n}-b{bits}"),
            b.finish(),
        ));
    }
    let small: Vec<Vec<u8>> = sample_entries(6, 30).into_iter().map(|(k, _)| k).collect();
    s.push((
        "log_record",
        "seed-log-small".into(),
        log_seed(&small, 0, 0),
    ));
    s.push((
        "log_record",
        "seed-log-empty-records".into(),
        log_seed(&[Vec::new(), vec![1], Vec::new()], 0, 0),
    ));
    let spanning = vec![
        vec![b'x'; 100],
        vec![b'y'; LOG_BLOCK_SIZE + 500],
        vec![b'z'; 10],
    ];
    s.push((
        "log_record",
        "seed-log-spanning".into(),
        log_seed(&spanning, 0, 0),
    ));
    s.push((
        "log_record",
        "seed-log-torn-tail".into(),
        log_seed(&small, 9, 0),
    ));
    s.push((
        "log_record",
        "seed-log-zero-tail".into(),
        log_seed(&small, 0, 64),
    ));
    s.push((
        "log_record",
        "seed-log-sealed-zero-tail".into(),
        log_seed_sealed(&small, true, 0, 4096),
    ));
    s
}

/// Runs every file of the corpus directory `dir` through `f`, in name order, catching
/// panics; returns how many files ran and the paths of those that panicked. The corpus
/// replay tests of every crate with fuzz targets use it.
///
/// # Errors
/// An I/O error listing or reading `dir`.
pub fn replay_corpus(dir: &std::path::Path, f: fn(&[u8])) -> io::Result<(usize, Vec<String>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    let mut failed = Vec::new();
    for path in &files {
        let data = std::fs::read(path)?;
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&data)));
        if run.is_err() {
            failed.push(path.display().to_string());
        }
    }
    Ok((files.len(), failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_decode() {
        let seeds = seed_corpus();
        assert!(seeds.len() >= 20);
        for (target, name, bytes) in &seeds {
            let ok = match *target {
                "keyset_block" => Block::new(bytes.clone(), BlockFormat::KeySet).is_ok(),
                "prefix_block" => Block::new(bytes.clone(), BlockFormat::Prefix).is_ok(),
                "bloom_filter" => BloomFilter::from_bytes(bytes.clone()).is_ok(),
                "sst_table" => {
                    let len = bytes.len() as u64;
                    TableReader::open(
                        Arc::new(BytesFile(bytes.clone())),
                        len,
                        0,
                        None,
                        &KeyOrder::default(),
                    )
                    .and_then(|t| t.verify())
                    .is_ok()
                }
                "log_record" => !bytes.is_empty(),
                _ => false,
            };
            assert!(ok, "seed {name} of {target} does not decode");
        }
    }

    #[test]
    fn compressed_seeds_hold_compressed_blocks() {
        for (target, name, bytes) in seed_corpus() {
            if target != "sst_table" || !(name.contains("lz4") || name.contains("zstd")) {
                continue;
            }
            let len = bytes.len() as u64;
            let t = TableReader::open(
                Arc::new(BytesFile(bytes)),
                len,
                0,
                None,
                &KeyOrder::default(),
            )
            .unwrap();
            let p = t.properties();
            assert_ne!(p.compression, Compression::None, "{name}");
            assert!(p.num_compressed_blocks > 0, "{name}: no block compressed");
        }
    }

    #[test]
    fn repair_fixes_checksums_and_keeps_valid_tables() {
        let seeds = seed_corpus();
        let (_, _, table) = seeds
            .iter()
            .find(|(t, n, _)| *t == "sst_table" && n.contains("keyset-bloom"))
            .unwrap();
        let mut bad = table.clone();
        // Flip a byte inside the first data block's contents: its checksum then fails.
        bad[20] ^= 0x01;
        let open = |b: &Vec<u8>| {
            let len = b.len() as u64;
            TableReader::open(
                Arc::new(BytesFile(b.clone())),
                len,
                0,
                None,
                &KeyOrder::default(),
            )
            .unwrap()
            .verify()
        };
        assert!(open(&bad).unwrap_err().is_corruption());
        let repaired = repair_checksums(bad).unwrap();
        assert_ne!(&repaired, table);
        // The checksum now verifies; what remains is the changed key or value itself.
        let _ = open(&repaired);
        let mut untouched = table.clone();
        untouched = repair_checksums(untouched).unwrap();
        assert_eq!(&untouched, table, "repair must not change a valid table");
    }

    #[test]
    fn every_target_survives_its_seeds_and_simple_damage() {
        for (target, _, bytes) in seed_corpus() {
            let f: fn(&[u8]) = match target {
                "keyset_block" => fuzz_keyset_block,
                "prefix_block" => fuzz_prefix_block,
                "sst_table" => fuzz_sst_table,
                "bloom_filter" => fuzz_bloom_filter,
                _ => fuzz_log_record,
            };
            f(&bytes);
            f(&bytes[..bytes.len() / 2]);
            let mut flipped = bytes.clone();
            if let Some(b) = flipped.get_mut(bytes.len() / 3) {
                *b ^= 0x40;
            }
            f(&flipped);
        }
    }
}
