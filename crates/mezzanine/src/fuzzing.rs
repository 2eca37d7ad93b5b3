//! Fuzzing entry points for the engine's own decoders (the write batch, the version edit),
//! shared by the cargo-fuzz targets (`fuzz/fuzz_targets/`) and the stable corpus replay test
//! (`tests/fuzz_corpus.rs`), plus [`seed_corpus`], the generator of the checked-in seeds.
//! The decoders of `mezz-format` have theirs in `mezz_format::fuzzing`.
//!
//! Contract: every `fuzz_*` function accepts arbitrary bytes and must not panic on them;
//! when the decoder accepts the input, the function exercises the result and checks the
//! encode/decode roundtrip, panicking if it does not hold (a bug in the codec).
//!
//! Thread-safety: stateless functions; each call owns its data.

use mezz_format::ValueKind;

use crate::batch::WriteBatch;
use crate::manifest::{COMPARATOR_NAME, MANIFEST_FORMAT_VERSION, VersionEdit};
use crate::storage::nvm::{NvmObject, NvmObjectKind};
use crate::table::{TableLocation, TableMeta};

/// Decodes `data` as a write batch (a WAL record payload); if accepted, iterates its
/// updates and checks that re-encoding them gives a batch that decodes to the same ones.
pub fn fuzz_write_batch(data: &[u8]) {
    let Ok(batch) = WriteBatch::from_data(data.to_vec()) else {
        return;
    };
    assert_eq!(batch.data(), data, "from_data must keep the bytes");
    assert_eq!(batch.approximate_size(), data.len());
    let ops: Vec<_> = batch.iter().collect();
    assert_eq!(ops.len(), batch.len(), "count disagrees with the records");
    assert_eq!(batch.is_empty(), ops.is_empty());
    let user_bytes: u64 = ops
        .iter()
        .map(|op| (op.key.len() + op.value.len()) as u64)
        .sum();
    assert_eq!(batch.user_bytes(), user_bytes);
    let mut again = WriteBatch::new();
    for op in &ops {
        match op.kind {
            ValueKind::Value => again.put_cf(&op.family, op.key, op.value),
            ValueKind::Deletion => {
                assert!(op.value.is_empty(), "a deletion carries a value");
                again.delete_cf(&op.family, op.key);
            }
        }
    }
    again.set_sequence(batch.sequence());
    assert_eq!(again.sequence(), batch.sequence());
    let decoded = match WriteBatch::from_data(again.data().to_vec()) {
        Ok(b) => b,
        Err(e) => panic!("a re-encoded batch does not decode: {e}"),
    };
    assert!(
        decoded.iter().eq(ops.iter().copied()),
        "write batch roundtrip changed the updates"
    );
    // Group commit appends batches; the result must stay a valid batch.
    let mut joined = decoded.clone();
    joined.append(&batch);
    match WriteBatch::from_data(joined.data().to_vec()) {
        Ok(j) => assert_eq!(j.len(), 2 * ops.len()),
        Err(e) => panic!("two appended batches do not decode: {e}"),
    }
}

/// Decodes `data` as a version edit (a MANIFEST record payload); if accepted, checks that
/// encoding it and decoding again gives the same edit, and that the encoding is stable.
pub fn fuzz_version_edit(data: &[u8]) {
    let Ok(edit) = VersionEdit::decode(data, 0) else {
        return;
    };
    let mut enc = Vec::new();
    edit.encode(&mut enc);
    let again = match VersionEdit::decode(&enc, 0) {
        Ok(e) => e,
        Err(e) => panic!("a re-encoded version edit does not decode: {e}"),
    };
    // Encoding marks an edit with column-family records with their format version.
    let families = !edit.families_added.is_empty() || !edit.families_dropped.is_empty();
    let want = VersionEdit {
        format_version: if families {
            Some(
                edit.format_version
                    .unwrap_or(0)
                    .max(crate::manifest::FAMILIES_FORMAT_VERSION),
            )
        } else {
            edit.format_version
        },
        ..edit.clone()
    };
    assert_eq!(again, want, "version edit roundtrip changed the edit");
    let mut enc2 = Vec::new();
    again.encode(&mut enc2);
    assert_eq!(enc2, enc, "version edit encoding is not stable");
    // The same record deeper in a (large) manifest decodes the same way.
    assert_eq!(
        VersionEdit::decode(data, 1 << 40).ok().as_ref(),
        Some(&edit)
    );
}

fn sample_table(id: u64, lo: &[u8], hi: &[u8]) -> TableMeta {
    TableMeta {
        id,
        location: TableLocation::Sst { path_id: 0 },
        size: 4096 * id,
        smallest: mezz_format::ikey::make_internal_key(lo, 10 * id, ValueKind::Value),
        largest: mezz_format::ikey::make_internal_key(hi, 10 * id + 5, ValueKind::Deletion),
        smallest_seq: 10 * id,
        largest_seq: 10 * id + 5,
        num_entries: 100 + id,
        num_deletions: id,
        nvm_refs: Vec::new(),
        pinned: Default::default(),
        seeks: Default::default(),
    }
}

/// [`sample_table`], but stored in the NVM pool, in NVM object `object`.
fn sample_nvm_table(id: u64, lo: &[u8], hi: &[u8], object: u64) -> TableMeta {
    TableMeta {
        location: TableLocation::Nvm { object },
        ..sample_table(id, lo, hi)
    }
}

/// The seed inputs of this crate's fuzz targets: `(target, file name, bytes)`, written by
/// the real encoders.
#[must_use]
pub fn seed_corpus() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut s: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let mut b = WriteBatch::new();
    s.push(("write_batch", "seed-batch-empty".into(), b.data().to_vec()));
    b.set_sequence(42);
    b.put(b"key1", b"value1");
    s.push((
        "write_batch",
        "seed-batch-one-put".into(),
        b.data().to_vec(),
    ));
    b.delete(b"key0");
    b.put(b"", b"");
    b.put(b"key2", &[0xab; 200]);
    b.delete(b"");
    s.push(("write_batch", "seed-batch-mixed".into(), b.data().to_vec()));
    let mut big = WriteBatch::new();
    big.set_sequence(1 << 40);
    for i in 0..64u32 {
        let k = format!("user{i:05}");
        if i % 4 == 3 {
            big.delete(k.as_bytes());
        } else {
            big.put(k.as_bytes(), &vec![b'v'; (i % 9) as usize * 3]);
        }
    }
    s.push(("write_batch", "seed-batch-64".into(), big.data().to_vec()));

    let edits: Vec<(&str, VersionEdit)> = vec![
        (
            "first",
            VersionEdit {
                format_version: Some(MANIFEST_FORMAT_VERSION),
                comparator: Some(COMPARATOR_NAME.to_string()),
                log_number: Some(3),
                next_file_number: Some(9),
                last_sequence: Some(1234),
                ..VersionEdit::default()
            },
        ),
        (
            "flush",
            VersionEdit {
                log_number: Some(12),
                last_sequence: Some(5000),
                new_tables: vec![(0, sample_table(11, b"apple", b"mango"))],
                ..VersionEdit::default()
            },
        ),
        (
            "compaction",
            VersionEdit {
                next_file_number: Some(30),
                compact_pointers: vec![(1, sample_table(1, b"a", b"k").largest)],
                deleted_tables: vec![(0, 11), (1, 7), (1, 8)],
                new_tables: vec![
                    (1, sample_table(21, b"a", b"f")),
                    (1, sample_table(22, b"g", b"k")),
                    (2, sample_table(23, b"l", b"z\xff")),
                ],
                ..VersionEdit::default()
            },
        ),
        (
            "nvm-tables",
            VersionEdit {
                last_sequence: Some(7000),
                new_nvm_objects: vec![NvmObject {
                    id: 41,
                    kind: NvmObjectKind::Wal,
                    offset: 1 << 21,
                    len: 1 << 20,
                    weight: 0,
                }],
                deleted_nvm_objects: vec![33],
                deleted_tables: vec![(0, 31)],
                new_tables: vec![
                    (0, sample_nvm_table(40, b"b", b"q", 40)),
                    (1, sample_nvm_table(42, b"a", b"c", 1 << 35)),
                    (1, sample_table(43, b"d", b"y")),
                ],
                ..VersionEdit::default()
            },
        ),
        ("empty", VersionEdit::default()),
    ];
    for (name, e) in edits {
        let mut enc = Vec::new();
        e.encode(&mut enc);
        s.push(("version_edit", format!("seed-edit-{name}"), enc));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_decode_and_survive_damage() {
        let seeds = seed_corpus();
        assert!(seeds.len() >= 8);
        let nvm_tables = seeds
            .iter()
            .filter(|(target, ..)| *target == "version_edit")
            .filter_map(|(_, _, bytes)| VersionEdit::decode(bytes, 0).ok())
            .flat_map(|e| e.new_tables)
            .filter(|(_, t)| matches!(t.location, TableLocation::Nvm { .. }))
            .count();
        assert!(nvm_tables > 0, "no seed has a table on NVM");
        for (target, name, bytes) in &seeds {
            let ok = match *target {
                "write_batch" => WriteBatch::from_data(bytes.clone()).is_ok(),
                "version_edit" => VersionEdit::decode(bytes, 0).is_ok(),
                _ => false,
            };
            assert!(ok, "seed {name} of {target} does not decode");
            let f: fn(&[u8]) = if *target == "write_batch" {
                fuzz_write_batch
            } else {
                fuzz_version_edit
            };
            f(bytes);
            for cut in 0..bytes.len() {
                f(&bytes[..cut]);
            }
            let mut flipped = bytes.clone();
            for i in 0..flipped.len() {
                flipped[i] ^= 0x81;
                f(&flipped);
                flipped[i] ^= 0x81;
            }
        }
    }
}
