//! Corruption tests (in the spirit of LevelDB's corruption_test): damage bytes of each kind
//! of file on an in-memory file system, reopen, and check that damage is reported as a
//! typed `Error::Corruption` naming the file, that no wrong value is ever returned, and that
//! nothing panics (every case runs in the test process, so a panic fails the test).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mezz_env::{CrashOptions, FileSystem, KeepUnsynced, MemFs};
use mezz_format::sst::FOOTER_LEN;
use mezzanine::filename::{FileType, parse_file_name};
use mezzanine::{Db, Error, Options, ReadOptions, RecoveryMode, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const DIR: &str = "db";
const SYNC: WriteOptions = WriteOptions { sync: true };

fn options(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.fs = Arc::new(fs.clone());
    o
}

fn open(fs: &MemFs) -> mezzanine::Result<Db> {
    Db::open(DIR, options(fs))
}

fn open_mode(fs: &MemFs, mode: RecoveryMode) -> mezzanine::Result<Db> {
    let mut o = options(fs);
    o.recovery_mode = mode;
    Db::open(DIR, o)
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: usize, len: usize) -> Vec<u8> {
    mezz_testkit::make_value(i as u64 + 1, len)
}

/// What a process crash would leave now: every byte written, synced or not.
fn process_crash(fs: &MemFs) -> MemFs {
    fs.crash_clone(&CrashOptions {
        keep_unsynced: KeepUnsynced::All,
        seed: 0,
    })
}

/// Live files of one type, by ascending number.
fn files(fs: &MemFs, ty: FileType) -> Vec<PathBuf> {
    let mut v: Vec<(u64, PathBuf)> = fs
        .file_names()
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            let (t, n) = parse_file_name(name)?;
            (t == ty).then_some((n, p))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

fn size(fs: &MemFs, p: &Path) -> u64 {
    fs.file_size(p).unwrap()
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Asserts `e` is a corruption error naming the file called `file`.
fn assert_corruption_in(e: &Error, file: &Path) {
    match e {
        Error::Corruption { file: Some(f), .. } => assert_eq!(
            f.file_name(),
            file.file_name(),
            "corruption names the wrong file: {e}"
        ),
        other => panic!("expected Corruption in {}, got {other}", file.display()),
    }
}

/// Writes `n` keys with synced single puts (one WAL record each), then simulates a process
/// crash so the WAL holds every record whatever `close` would do.
fn wal_only_db(n: usize, value_len: usize) -> MemFs {
    let fs = MemFs::new();
    let db = open(&fs).unwrap();
    for i in 0..n {
        db.put_opt(&SYNC, &key(i), &value(i, value_len)).unwrap();
    }
    let crashed = process_crash(&fs);
    drop(db);
    crashed
}

/// The WAL holding the records written since open: the newest non-empty one.
fn newest_wal(fs: &MemFs) -> PathBuf {
    files(fs, FileType::Wal)
        .into_iter()
        .rev()
        .find(|p| size(fs, p) > 0)
        .expect("a non-empty WAL")
}

#[test]
fn wal_tail_damage_is_dropped_or_reported_per_recovery_mode() {
    let n = 100;
    let fs = wal_only_db(n, 50);
    let wal = newest_wal(&fs);
    // Damage the last record's payload.
    fs.corrupt(&wal, size(&fs, &wal) - 3, 0x55).unwrap();

    let strict = process_crash(&fs);
    let e = open_mode(&strict, RecoveryMode::AbsoluteConsistency).unwrap_err();
    assert_corruption_in(&e, &wal);

    let db = open_mode(&fs, RecoveryMode::TolerateCorruptTail).unwrap();
    for i in 0..n - 1 {
        assert_eq!(
            db.get(&key(i)).unwrap(),
            Some(value(i, 50)),
            "key {i} before the torn tail"
        );
    }
    assert_eq!(db.get(&key(n - 1)).unwrap(), None, "the torn last record");
    db.close().unwrap();
}

#[test]
fn wal_damage_followed_by_valid_records_is_corruption() {
    // 300 records of ~220 bytes span two 32 KiB log blocks.
    let fs = wal_only_db(300, 200);
    let wal = newest_wal(&fs);
    assert!(size(&fs, &wal) > 40_000);
    // Inside the first record's payload (its header is 7 bytes).
    fs.corrupt(&wal, 12, 0x01).unwrap();
    for mode in [
        RecoveryMode::TolerateCorruptTail,
        RecoveryMode::AbsoluteConsistency,
    ] {
        let copy = process_crash(&fs);
        let e = open_mode(&copy, mode).unwrap_err();
        assert_corruption_in(&e, &wal);
    }
}

/// A closed DB with `n` keys flushed into one SST (and nothing in the WAL).
fn sst_db(n: usize, value_len: usize) -> (MemFs, PathBuf) {
    let fs = MemFs::new();
    let db = open(&fs).unwrap();
    for i in 0..n {
        db.put(&key(i), &value(i, value_len)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    let ssts = files(&fs, FileType::Sst);
    assert_eq!(ssts.len(), 1, "one flush gives one table: {ssts:?}");
    let sst = ssts.into_iter().next().unwrap();
    (fs, sst)
}

/// Gets every key: each is the right value or a Corruption naming `sst`; returns how many
/// were errors.
fn gets_are_right_or_corruption(db: &Db, n: usize, value_len: usize, sst: &Path) -> usize {
    let mut errors = 0;
    for i in 0..n {
        match db.get(&key(i)) {
            Ok(v) => assert_eq!(v, Some(value(i, value_len)), "key {i}: wrong value"),
            Err(e) => {
                assert_corruption_in(&e, sst);
                errors += 1;
            }
        }
    }
    errors
}

#[test]
fn sst_data_block_damage_is_reported_with_file_and_offset() {
    let (n, len) = (500, 100);
    let (fs, sst) = sst_db(n, len);
    let file_size = size(&fs, &sst);
    // Inside the first data block's contents.
    fs.corrupt(&sst, 64, 0x40).unwrap();

    let db = open(&fs).unwrap();
    let errors = gets_are_right_or_corruption(&db, n, len, &sst);
    assert!(errors > 0, "no get noticed the damaged first block");
    match db.get(&key(0)) {
        Err(Error::Corruption { offset, .. }) => {
            assert!(offset < file_size, "offset {offset} past the file")
        }
        other => panic!("key 0 lives in the damaged block: {other:?}"),
    }

    // A scan returns only right entries, then reports the damage.
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut seen = 0;
    while it.valid() {
        let k = it.key().to_vec();
        let i: usize = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        assert_eq!(it.value(), value(i, len).as_slice());
        seen += 1;
        it.next();
    }
    let e = it.status().unwrap_err();
    assert_corruption_in(&e, &sst);
    assert!(seen < n);

    let e = db.verify().unwrap_err();
    assert_corruption_in(&e, &sst);
}

/// Damage in the footer or the index makes the table unreadable: the open or the first
/// read of the table fails with Corruption naming it; nothing reads as a wrong value or as
/// absent.
#[test]
fn sst_footer_and_index_damage_is_corruption() {
    let (n, len) = (300, 100);
    let (base, sst) = sst_db(n, len);
    let file_size = size(&base, &sst);
    let footer = file_size - FOOTER_LEN as u64;
    let cases = [
        ("magic", file_size - 1),
        ("footer index handle", footer),
        ("footer checksum", file_size - 12),
        ("index block checksum", footer - 8),
    ];
    for (what, offset) in cases {
        let fs = process_crash(&base);
        fs.corrupt(&sst, offset, 0x10).unwrap();
        match open(&fs) {
            Err(e) => assert_corruption_in(&e, &sst),
            Ok(db) => {
                let errors = gets_are_right_or_corruption(&db, n, len, &sst);
                assert_eq!(
                    errors, n,
                    "{what}: some key read from a table with a bad {what}"
                );
                let e = db.verify().unwrap_err();
                assert_corruption_in(&e, &sst);
            }
        }
    }
}

/// Damage inside the index, filter or properties block (located through the footer's
/// handles: `offset u64 | size u64` each, in that order) is detected: a bad bloom filter
/// must never turn a present key into "absent".
#[test]
fn sst_index_filter_and_properties_damage_is_detected() {
    let (n, len) = (300, 100);
    let (base, sst) = sst_db(n, len);
    let bytes = base.read_all(&sst).unwrap();
    let footer = &bytes[bytes.len() - FOOTER_LEN..];
    let handle = |i: usize| {
        let at = |o: usize| u64::from_le_bytes(footer[o..o + 8].try_into().unwrap());
        (at(16 * i), at(16 * i + 8))
    };
    for (i, what) in ["index", "filter", "properties"].iter().enumerate() {
        let (offset, size) = handle(i);
        assert!(
            size > 0 && offset + size <= bytes.len() as u64,
            "{what} handle"
        );
        for at in [offset, offset + size / 2, offset + size - 1] {
            let fs = process_crash(&base);
            fs.corrupt(&sst, at, 0x02).unwrap();
            match open(&fs) {
                Err(e) => assert_corruption_in(&e, &sst),
                Ok(db) => {
                    let errors = gets_are_right_or_corruption(&db, n, len, &sst);
                    assert_eq!(
                        errors, n,
                        "{what} byte {at}: the table was read despite damage"
                    );
                    assert_corruption_in(&db.verify().unwrap_err(), &sst);
                }
            }
        }
    }
}

/// A DB whose MANIFEST holds several edits (three flushes).
fn manifest_db() -> MemFs {
    let fs = MemFs::new();
    let db = open(&fs).unwrap();
    for round in 0..3 {
        for i in 0..50 {
            db.put(&key(i + round * 50), &value(i + round * 50, 30))
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.close().unwrap();
    fs
}

fn check_manifest_db(db: &Db) {
    for i in 0..150 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, 30)), "key {i}");
    }
}

#[test]
fn manifest_damage_fails_open_with_corruption() {
    let fs = manifest_db();
    let manifests = files(&fs, FileType::Manifest);
    let manifest = manifests.last().expect("a MANIFEST").clone();
    // Inside the first edit's payload; later edits are intact.
    fs.corrupt(&manifest, 10, 0x08).unwrap();
    for mode in [
        RecoveryMode::TolerateCorruptTail,
        RecoveryMode::AbsoluteConsistency,
    ] {
        let copy = process_crash(&fs);
        let e = open_mode(&copy, mode).unwrap_err();
        assert_corruption_in(&e, &manifest);
    }
}

/// Offsets of the records of a small log file (LevelDB framing: 7-byte headers
/// `crc u32 | len u16 | type u8`, all within the first 32 KiB block).
fn log_records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 7 <= bytes.len().min(32 * 1024) {
        let len = usize::from(u16::from_le_bytes([bytes[off + 4], bytes[off + 5]]));
        if len == 0 || off + 7 + len > bytes.len() {
            break;
        }
        out.push((off, len));
        off += 7 + len;
    }
    out
}

/// Damage inside the last, complete MANIFEST edit is not a torn append: the edit was synced
/// before the engine acted on it (deleted the WAL it made obsolete), so dropping it would
/// serve stale data. The open must fail with Corruption, or else read every key right.
#[test]
fn damaged_last_manifest_edit_is_not_a_torn_tail() {
    let fs = manifest_db();
    let manifest = files(&fs, FileType::Manifest).last().unwrap().clone();
    let records = log_records(&fs.read_all(&manifest).unwrap());
    assert!(records.len() >= 2, "records: {records:?}");
    for &(start, len) in records.iter().rev().take(2) {
        let copy = process_crash(&fs);
        copy.corrupt(&manifest, (start + 7 + len / 2) as u64, 0x04)
            .unwrap();
        match open_mode(&copy, RecoveryMode::TolerateCorruptTail) {
            Err(e) => assert_corruption_in(&e, &manifest),
            Ok(db) => {
                for i in 0..150 {
                    assert_eq!(
                        db.get(&key(i)).unwrap(),
                        Some(value(i, 30)),
                        "edit at {start} damaged: key {i} reads wrong"
                    );
                }
            }
        }
    }
}

/// A torn append at the end of the MANIFEST (a crash while writing an edit whose effects
/// never happened) loses nothing: the DB opens with every acknowledged write.
#[test]
fn torn_manifest_tail_is_tolerated() {
    let fs = manifest_db();
    let manifest = files(&fs, FileType::Manifest).last().unwrap().clone();
    let bytes = fs.read_all(&manifest).unwrap();
    // A valid-looking header and the start of its payload, cut short.
    let torn = bytes.get(..12).unwrap().to_vec();
    let mut f = fs.open_append(&manifest).unwrap();
    f.append(&torn).unwrap();
    f.sync().unwrap();
    drop(f);
    let db = open_mode(&fs, RecoveryMode::TolerateCorruptTail).unwrap();
    check_manifest_db(&db);
    db.close().unwrap();
    drop(db);
    // And the DB keeps working across another reopen.
    let db = open(&fs).unwrap();
    check_manifest_db(&db);
}

fn write_file(fs: &MemFs, path: &Path, data: &[u8]) {
    let mut f = fs.create(path).unwrap();
    f.append(data).unwrap();
    f.sync().unwrap();
}

#[test]
fn current_pointing_nowhere_is_a_clear_error() {
    let fs = manifest_db();
    let current = Path::new(DIR).join("CURRENT");
    for (content, mention) in [
        (&b"MANIFEST-999999\n"[..], "MANIFEST-999999"),
        (&b""[..], "CURRENT"),
        (&b"\xff\xfe garbage"[..], "CURRENT"),
    ] {
        let copy = process_crash(&fs);
        write_file(&copy, &current, content);
        let e = open(&copy).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(mention),
            "CURRENT = {content:?}: the error should mention {mention}: {msg}"
        );
        assert!(
            matches!(e, Error::Corruption { .. } | Error::Io { .. }),
            "CURRENT = {content:?}: {e}"
        );
    }
}

/// A damaged block in a newer table must not let a scan fall back to the older versions of
/// its keys held by a lower level: the scan stops with Corruption instead.
#[test]
fn scan_never_shows_older_versions_behind_a_damaged_block() {
    let fs = MemFs::new();
    let db = open(&fs).unwrap();
    let n = 200;
    for i in 0..n {
        db.put(&key(i), &value(i, 40)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let old: Vec<PathBuf> = files(&fs, FileType::Sst);
    for i in 0..n {
        db.put(&key(i), &value(1_000 + i, 40)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    let newest = files(&fs, FileType::Sst)
        .into_iter()
        .find(|p| !old.contains(p))
        .expect("the table of the second flush");
    fs.corrupt(&newest, 64, 0x20).unwrap();

    let db = open(&fs).unwrap();
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    while it.valid() {
        let i: usize = std::str::from_utf8(&it.key()[3..])
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            it.value(),
            value(1_000 + i, 40).as_slice(),
            "scan returned an overwritten value of key {i}"
        );
        it.next();
    }
    assert_corruption_in(&it.status().unwrap_err(), &newest);
    // Point reads of the damaged block's keys fail the same way.
    match db.get(&key(0)) {
        Err(e) => assert_corruption_in(&e, &newest),
        Ok(v) => panic!(
            "key 0 lives in the damaged block, got {:?}",
            v.map(|v| v.len())
        ),
    }
}

/// The sweep: a small DB with data in several SSTs (L0 and L1) and in the WAL; flip random
/// bytes of every kind of file, one at a time on a fresh copy, and require: no panic, every
/// value read is right or an error, no key appears that was never written, and keys lost
/// with a damaged WAL are only a suffix of the WAL's writes.
#[test]
fn random_byte_flips_never_give_wrong_values() {
    let fs = MemFs::new();
    let mut o = options(&fs);
    o.block_size = 512;
    let db = Db::open(DIR, o.clone()).unwrap();
    let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut put = |db: &Db, i: usize, tag: usize, len: usize| {
        let v = value(tag, len);
        db.put_opt(&SYNC, &key(i), &v).unwrap();
        expected.insert(key(i), v);
    };
    // Table data: two generations, compacted to L1, then one more L0 table.
    for i in 0..200 {
        put(&db, i, i, 40);
    }
    db.flush().unwrap();
    for i in (0..200).step_by(3) {
        put(&db, i, 1_000 + i, 60);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..200).step_by(7) {
        put(&db, i, 2_000 + i, 20);
    }
    db.flush().unwrap();
    // WAL-only data, on keys the tables do not hold.
    let wal_keys: Vec<Vec<u8>> = (200..260).map(key).collect();
    for i in 200..260 {
        put(&db, i, 3_000 + i, 30);
    }
    let base = process_crash(&fs);
    drop(db);

    let mut rng = StdRng::seed_from_u64(0x5eed);
    let kinds = [
        FileType::Wal,
        FileType::Sst,
        FileType::Manifest,
        FileType::Current,
        FileType::Options,
    ];
    let flips_per_kind = 24;
    let mut cases = 0;
    let mut problems = Vec::new();
    for kind in kinds {
        let targets: Vec<PathBuf> = files(&base, kind)
            .into_iter()
            .filter(|p| size(&base, p) > 0)
            .collect();
        if targets.is_empty() {
            continue;
        }
        for _ in 0..flips_per_kind {
            let target = &targets[rng.random_range(0..targets.len())];
            let offset = rng.random_range(0..size(&base, target));
            let mask = rng.random_range(1..=255u8);
            let fs = process_crash(&base);
            fs.corrupt(target, offset, mask).unwrap();
            let case = format!("{} byte {offset} ^ {mask:#04x}", name_of(target));
            cases += 1;
            let mut o = o.clone();
            o.fs = Arc::new(fs.clone());
            let Ok(db) = Db::open(DIR, o) else { continue };
            let found = check_flipped(&db, &expected, &wal_keys, kind == FileType::Wal, &case);
            if let Some(first) = found.first() {
                problems.push(format!("{first} (+{} more)", found.len() - 1));
            }
            let _ = db.verify();
            let _ = db.close();
        }
    }
    assert!(cases >= 3 * flips_per_kind, "too few files to damage");
    assert!(
        problems.is_empty(),
        "{} of {cases} damaged copies read wrong:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Checks one damaged copy; returns what went wrong (empty when all is well).
fn check_flipped(
    db: &Db,
    expected: &BTreeMap<Vec<u8>, Vec<u8>>,
    wal_keys: &[Vec<u8>],
    wal_damaged: bool,
    case: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    let show = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    // Gets.
    let mut lost = Vec::new();
    for (k, v) in expected {
        match db.get(k) {
            Ok(Some(got)) if &got != v => {
                problems.push(format!("{case}: get {} returned a wrong value", show(k)));
            }
            Ok(Some(_)) | Err(_) => {}
            Ok(None) => lost.push(k.clone()),
        }
    }
    for k in &lost {
        if !(wal_damaged && wal_keys.contains(k)) {
            problems.push(format!("{case}: get {} found nothing", show(k)));
        }
    }
    if let Some(first_lost) = wal_keys.iter().position(|k| lost.contains(k)) {
        // Only a suffix of the WAL's writes may be lost (a tolerated torn tail).
        for k in &wal_keys[first_lost..] {
            if !(lost.contains(k) || db.get(k).is_err()) {
                problems.push(format!(
                    "{case}: {} survived although an earlier write was lost",
                    show(k)
                ));
            }
        }
    }
    // A full scan: only written keys with their right values, ascending.
    let Ok(mut it) = db.cursor(&ReadOptions::default()) else {
        return problems;
    };
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    while it.valid() {
        let k = it.key().to_vec();
        if expected.get(&k).map(Vec::as_slice) != Some(it.value()) {
            problems.push(format!(
                "{case}: scan returned a wrong value for {}",
                show(&k)
            ));
            break;
        }
        if prev.as_ref().is_some_and(|p| p >= &k) {
            problems.push(format!("{case}: scan out of order at {}", show(&k)));
            break;
        }
        prev = Some(k);
        it.next();
    }
    let _ = it.status();
    problems
}

// ---- Column families ----
//
// A database with two column families besides the default one (`cf-1/` and `cf-2/`, each
// with its own manifest, CURRENT, OPTIONS and tables, and options of its own), damaged in
// a family's files, in the database manifest's family records and in the WAL records of
// batches spanning families. The rules are the default family's: damage is a Corruption
// naming the file (the family's own file, by its full path), a torn tail is dropped or
// reported as the recovery mode says, a wrong value is never returned, an acknowledged
// write is never silently lost, and the families whose files are intact read right.

/// The families besides the default one, in id order (ids 1 and 2).
const FAMILIES: [&str; 2] = ["fam-a", "fam-b"];

/// One map per family: the default family first, then [`FAMILIES`].
type FamilyMaps = Vec<BTreeMap<Vec<u8>, Vec<u8>>>;

/// Options of family `i` of [`FAMILIES`]: another block size, bloom bits, compression.
fn family_opts(fs: &MemFs, i: usize) -> Options {
    let mut o = options(fs);
    if i == 0 {
        o.block_size = 512;
        o.bloom_bits_per_key = 4;
    } else {
        o.block_size = 2048;
        o.bloom_bits_per_key = 14;
        o.set("compression", "lz4").unwrap();
    }
    o
}

/// A value of family `f` (0 = default): distinct across families, so a value read from the
/// wrong family is wrong.
fn fam_value(f: usize, tag: usize, len: usize) -> Vec<u8> {
    mezz_testkit::make_value(((f as u64) << 32) | (tag as u64 + 1), len)
}

/// The handles of every family, the default first.
fn handles(db: &Db) -> Vec<mezzanine::ColumnFamily> {
    let mut v = vec![db.default_column_family()];
    v.extend(FAMILIES.iter().map(|n| db.column_family(n).expect(n)));
    v
}

/// The directory of family `id` (1 or 2).
fn fam_dir(id: u32) -> PathBuf {
    Path::new(DIR).join(format!("cf-{id}"))
}

/// Live files of one type in directory `dir`, by ascending number.
fn files_in(fs: &MemFs, dir: &Path, ty: FileType) -> Vec<PathBuf> {
    files(fs, ty)
        .into_iter()
        .filter(|p| p.parent() == Some(dir))
        .collect()
}

/// The tables and WALs, and the damaged file `damaged` with its contents.
type Kept = (Vec<PathBuf>, Vec<u8>);

fn kept(fs: &MemFs, damaged: &Path) -> Kept {
    let mut v = files(fs, FileType::Sst);
    v.extend(files(fs, FileType::Wal));
    (v, fs.read_all(damaged).unwrap())
}

/// After a failed open: no table or WAL is gone, and the damaged file is as it was (an
/// open may rewrite the manifests of the families it opened before it failed: they name
/// the same tables).
fn assert_kept(fs: &MemFs, damaged: &Path, before: &Kept) {
    let (files_before, bytes) = before;
    let now = kept(fs, damaged);
    for f in files_before {
        assert!(now.0.contains(f), "a failed open deleted {}", f.display());
    }
    assert!(
        &now.1 == bytes,
        "a failed open changed {}",
        damaged.display()
    );
}

/// Asserts `e` is a corruption error naming exactly `file` (its path: a family's
/// `MANIFEST-000005` is not the database's).
fn assert_corruption_at(e: &Error, file: &Path) {
    match e {
        Error::Corruption { file: Some(f), .. } => assert!(
            f.ends_with(file),
            "corruption names {} instead of {}: {e}",
            f.display(),
            file.display()
        ),
        other => panic!("expected Corruption in {}, got {other}", file.display()),
    }
}

/// A database with families: three rounds of writes to every family, each flushed (the
/// families flush together), `fam-a` compacted after the second; then `wal_batches`
/// synced batches spanning the three families, left in the WAL. Returns the files as a
/// process crash leaves them, what every family holds, and the keys of each WAL batch.
fn families_db(wal_batches: usize) -> (MemFs, FamilyMaps, Vec<Vec<u8>>) {
    let fs = MemFs::new();
    let db = open(&fs).unwrap();
    for (i, name) in FAMILIES.iter().enumerate() {
        db.create_column_family(name, &family_opts(&fs, i)).unwrap();
    }
    let cfs = handles(&db);
    let mut expected: FamilyMaps = vec![BTreeMap::new(); cfs.len()];
    for round in 0..3 {
        for (f, cf) in cfs.iter().enumerate() {
            for i in round * 40..round * 40 + 80 {
                let v = fam_value(f, round * 1_000 + i, 30 + f * 10);
                db.put_cf(cf, &key(i), &v).unwrap();
                expected[f].insert(key(i), v);
            }
        }
        db.flush().unwrap();
        if round == 1 {
            db.compact_range_cf(&cfs[1], None, None).unwrap();
        }
    }
    let mut wal_keys = Vec::new();
    for j in 0..wal_batches {
        // Family 1 first: the batch's first record is a family record (kind 5).
        let k = key(500 + j);
        let mut b = WriteBatch::new();
        for f in [1, 0, 2] {
            let v = fam_value(f, 5_000 + j, 40);
            b.put_cf(&cfs[f], &k, &v);
            expected[f].insert(k.clone(), v);
        }
        db.write(&SYNC, b).unwrap();
        wal_keys.push(k);
    }
    let crashed = process_crash(&fs);
    drop(db);
    (crashed, expected, wal_keys)
}

/// Every family of `db` holds exactly `expected` (gets and scans).
fn check_families(db: &Db, expected: &FamilyMaps, what: &str) {
    for (f, cf) in handles(db).iter().enumerate() {
        let mut it = db.cursor_cf(cf, &ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut got = BTreeMap::new();
        while it.valid() {
            got.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status()
            .unwrap_or_else(|e| panic!("{what}: scan of family {f}: {e}"));
        assert!(
            got == expected[f],
            "{what}: family {f} holds {} keys, expected {}",
            got.len(),
            expected[f].len()
        );
        for (k, v) in &expected[f] {
            assert_eq!(
                db.get_cf(cf, k).unwrap().as_ref(),
                Some(v),
                "{what}: family {f}"
            );
        }
    }
}

#[test]
fn families_db_reopens_intact() {
    let (fs, expected, _) = families_db(10);
    for id in [1, 2] {
        assert!(!files_in(&fs, &fam_dir(id), FileType::Sst).is_empty());
        assert_eq!(files_in(&fs, &fam_dir(id), FileType::Current).len(), 1);
    }
    let db = open(&fs).unwrap();
    check_families(&db, &expected, "undamaged");
    db.verify().unwrap();
}

/// A damaged data block in a table of `fam-a`: its reads are right or a Corruption naming
/// that table (some are errors), a scan stops with it, `verify` reports it; the default
/// family and `fam-b` read every key right.
#[test]
fn family_table_damage_is_reported_and_other_families_stay_intact() {
    let (fs, expected, _) = families_db(5);
    let tables = files_in(&fs, &fam_dir(1), FileType::Sst);
    // The newest table (the last flush) holds keys 80..160 of fam-a.
    let sst = tables.last().unwrap().clone();
    fs.corrupt(&sst, 64, 0x40).unwrap();
    let db = open(&fs).unwrap();
    let cfs = handles(&db);
    let mut errors = 0;
    for (k, v) in &expected[1] {
        match db.get_cf(&cfs[1], k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v), "fam-a: wrong value"),
            Err(e) => {
                assert_corruption_at(&e, &sst);
                errors += 1;
            }
        }
    }
    assert!(errors > 0, "no read of fam-a noticed the damaged block");
    let mut it = db.cursor_cf(&cfs[1], &ReadOptions::default()).unwrap();
    it.seek_to_first();
    while it.valid() {
        assert_eq!(
            expected[1].get(it.key()).map(Vec::as_slice),
            Some(it.value()),
            "fam-a scan: wrong value"
        );
        it.next();
    }
    assert_corruption_at(&it.status().unwrap_err(), &sst);
    for f in [0, 2] {
        for (k, v) in &expected[f] {
            assert_eq!(
                db.get_cf(&cfs[f], k).unwrap().as_ref(),
                Some(v),
                "family {f}"
            );
        }
    }
    assert_corruption_at(&db.verify().unwrap_err(), &sst);
}

/// Damage inside a family's manifest (its first edit, later ones intact) fails the open
/// with a Corruption naming that manifest in every recovery mode; the failed open deletes
/// no table or WAL and leaves the manifest as it was; the undamaged copy opens whole.
#[test]
fn family_manifest_damage_fails_open_naming_it() {
    let (base, expected, _) = families_db(5);
    for id in [1, 2] {
        let manifest = files_in(&base, &fam_dir(id), FileType::Manifest)
            .last()
            .unwrap()
            .clone();
        let records = log_records(&base.read_all(&manifest).unwrap());
        for &(start, len) in &records {
            for mode in [
                RecoveryMode::TolerateCorruptTail,
                RecoveryMode::AbsoluteConsistency,
            ] {
                let fs = process_crash(&base);
                fs.corrupt(&manifest, (start + 7 + len / 2) as u64, 0x08)
                    .unwrap();
                let before = kept(&fs, &manifest);
                match open_mode(&fs, mode) {
                    Err(e) => {
                        assert_corruption_at(&e, &manifest);
                        assert_kept(&fs, &manifest, &before);
                    }
                    // Only the last edit may be judged a torn tail, and then only if the
                    // data it names is all there.
                    Ok(db) => check_families(
                        &db,
                        &expected,
                        &format!("{} edit at {start} damaged, {mode:?}", manifest.display()),
                    ),
                }
            }
        }
    }
    let db = open(&base).unwrap();
    check_families(&db, &expected, "the undamaged copy");
}

/// A torn append at the end of a family's manifest loses nothing, across two reopens.
#[test]
fn torn_family_manifest_tail_is_tolerated() {
    let (fs, expected, _) = families_db(5);
    let manifest = files_in(&fs, &fam_dir(2), FileType::Manifest)
        .last()
        .unwrap()
        .clone();
    let bytes = fs.read_all(&manifest).unwrap();
    let mut f = fs.open_append(&manifest).unwrap();
    f.append(bytes.get(..12).unwrap()).unwrap();
    f.sync().unwrap();
    drop(f);
    let db = open_mode(&fs, RecoveryMode::TolerateCorruptTail).unwrap();
    check_families(&db, &expected, "torn family manifest");
    db.close().unwrap();
    drop(db);
    let db = open(&fs).unwrap();
    check_families(&db, &expected, "reopened");
}

/// The database manifest's family records (`ColumnFamilyAdd`, holding the family's name
/// and options): damage in the record naming a family fails the open with a Corruption
/// naming the database's manifest, never opens the database without that family (which
/// would delete its directory), and deletes no table or WAL.
#[test]
fn damaged_family_records_of_the_database_manifest_are_corruption() {
    let (base, expected, _) = families_db(5);
    let manifest = files_in(&base, Path::new(DIR), FileType::Manifest)
        .last()
        .unwrap()
        .clone();
    let bytes = base.read_all(&manifest).unwrap();
    let records = log_records(&bytes);
    let mut cases = 0;
    for (start, len) in records {
        let payload = &bytes[start + 7..start + 7 + len];
        for name in FAMILIES {
            let Some(at) = payload
                .windows(name.len())
                .position(|w| w == name.as_bytes())
            else {
                continue;
            };
            // In the name, and in the options text after it.
            for offset in [at, at + name.len() + 4, len - 1] {
                for mode in [
                    RecoveryMode::TolerateCorruptTail,
                    RecoveryMode::AbsoluteConsistency,
                ] {
                    cases += 1;
                    let fs = process_crash(&base);
                    fs.corrupt(&manifest, (start + 7 + offset) as u64, 0x20)
                        .unwrap();
                    let before = kept(&fs, &manifest);
                    match open_mode(&fs, mode) {
                        Err(e) => {
                            assert_corruption_at(&e, &manifest);
                            assert_kept(&fs, &manifest, &before);
                        }
                        Ok(db) => check_families(
                            &db,
                            &expected,
                            &format!("{name}'s record byte {offset} damaged, {mode:?}"),
                        ),
                    }
                }
            }
        }
    }
    assert!(
        cases >= 2 * 3 * 2,
        "the manifest names no family: {cases} cases"
    );
}

/// A family's CURRENT naming no manifest, empty or garbage is a clear error naming it; a
/// family whose CURRENT is gone must not open empty (its tables and manifest are there).
#[test]
fn family_current_damage_is_a_clear_error() {
    let (base, expected, _) = families_db(5);
    let current = fam_dir(1).join("CURRENT");
    for (content, mention) in [
        (&b"MANIFEST-999999\n"[..], "MANIFEST-999999"),
        (&b""[..], "CURRENT"),
        (&b"\xff\xfe garbage"[..], "CURRENT"),
    ] {
        let fs = process_crash(&base);
        write_file(&fs, &current, content);
        let e = open(&fs).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(mention) && msg.contains("cf-1"),
            "CURRENT = {content:?}: the error should mention {mention} in cf-1: {msg}"
        );
        assert!(
            matches!(e, Error::Corruption { .. } | Error::Io { .. }),
            "CURRENT = {content:?}: {e}"
        );
    }
    let fs = process_crash(&base);
    fs.remove_file(&current).unwrap();
    match open(&fs) {
        Err(e) => assert!(e.to_string().contains("cf-1"), "{e}"),
        Ok(db) => check_families(&db, &expected, "fam-a's CURRENT removed"),
    }
}

/// A family's OPTIONS file is not what its options are read from (the database manifest
/// records them): damage there loses nothing, and the family keeps its own options.
#[test]
fn family_options_file_damage_loses_nothing() {
    let (base, expected, _) = families_db(5);
    for id in [1, 2] {
        let file = files_in(&base, &fam_dir(id), FileType::Options)
            .last()
            .unwrap()
            .clone();
        for at in [0, size(&base, &file) / 2, size(&base, &file) - 1] {
            let fs = process_crash(&base);
            fs.corrupt(&file, at, 0x11).unwrap();
            match open(&fs) {
                Err(e) => assert_corruption_at(&e, &file),
                Ok(db) => {
                    let what = format!("{} byte {at}", file.display());
                    check_families(&db, &expected, &what);
                    let cf = db.column_family(FAMILIES[id as usize - 1]).unwrap();
                    let block = db
                        .property_cf(&cf, "mezz.options")
                        .unwrap()
                        .lines()
                        .find(|l| l.starts_with("block_size"))
                        .map(str::to_string);
                    let want = family_opts(&fs, id as usize - 1).block_size.to_string();
                    assert!(
                        block.as_deref().is_some_and(|l| l.contains(&want)),
                        "{what}: the family's options changed: {block:?}"
                    );
                }
            }
        }
    }
}

/// The WAL records of batches spanning families: a damaged last batch is dropped whole (in
/// every family) under `TolerateCorruptTail` and reported under `AbsoluteConsistency`;
/// damage followed by valid batches is corruption in both modes.
#[test]
fn family_batch_wal_damage_is_all_or_nothing_per_recovery_mode() {
    let n = 30;
    let (base, expected, wal_keys) = families_db(n);
    let wal = newest_wal(&base);
    let records = log_records(&base.read_all(&wal).unwrap());
    assert_eq!(records.len(), n, "one record per batch: {records:?}");

    // The last batch.
    let (start, len) = records[n - 1];
    let fs = process_crash(&base);
    fs.corrupt(&wal, (start + 7 + len - 3) as u64, 0x55)
        .unwrap();
    let e = open_mode(&process_crash(&fs), RecoveryMode::AbsoluteConsistency).unwrap_err();
    assert_corruption_at(&e, &wal);
    let db = open_mode(&fs, RecoveryMode::TolerateCorruptTail).unwrap();
    let mut want = expected.clone();
    for m in &mut want {
        m.remove(&wal_keys[n - 1]);
    }
    check_families(&db, &want, "the last family batch torn");
    db.close().unwrap();

    // The first batch, followed by valid ones.
    let (start, len) = records[0];
    for mode in [
        RecoveryMode::TolerateCorruptTail,
        RecoveryMode::AbsoluteConsistency,
    ] {
        let fs = process_crash(&base);
        fs.corrupt(&wal, (start + 7 + len / 2) as u64, 0x01)
            .unwrap();
        assert_corruption_at(&open_mode(&fs, mode).unwrap_err(), &wal);
    }
}

/// Rewrites the payload byte `at` of the log record at `start` (a FULL fragment of `len`
/// bytes) to `byte`, with a valid checksum: damage the framing cannot see.
fn rewrite_record_byte(fs: &MemFs, file: &Path, start: usize, len: usize, at: usize, byte: u8) {
    let mut bytes = fs.read_all(file).unwrap();
    bytes[start + 7 + at] = byte;
    let crc = mezz_format::checksum::mask(mezz_format::checksum::crc32c(
        &bytes[start + 6..start + 7 + len],
    ));
    bytes[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    write_file(fs, file, &bytes);
}

/// A family batch whose record kind is unknown, or whose family record names the default
/// family (which kinds 4 and 5 never do), is a Corruption naming the WAL in every recovery
/// mode, whether it is the last batch or valid ones follow; never a silent skip.
#[test]
fn malformed_family_records_in_the_wal_are_corruption() {
    let n = 10;
    let (base, _, _) = families_db(n);
    let wal = newest_wal(&base);
    let records = log_records(&base.read_all(&wal).unwrap());
    assert_eq!(records.len(), n);
    // A batch: `first sequence u64 | count u32 | records`; its first record is fam-a's
    // put: `5 | varint32 1 | ...`.
    let payload = base.read_all(&wal).unwrap();
    let (s0, _) = records[0];
    assert_eq!(
        &payload[s0 + 7 + 12..s0 + 7 + 14],
        &[5, 1],
        "kind 5, family 1"
    );
    for (what, at, byte) in [
        ("unknown kind", 12, 9),
        ("kind 4 naming family 0", 12 + 1, 0),
        ("kind 5 naming family 0", 12 + 1, 0),
    ] {
        for &(start, len) in [records[0], records[n - 1]].iter() {
            for mode in [
                RecoveryMode::TolerateCorruptTail,
                RecoveryMode::AbsoluteConsistency,
            ] {
                let fs = process_crash(&base);
                if what.starts_with("kind 4") {
                    rewrite_record_byte(&fs, &wal, start, len, 12, 4);
                }
                rewrite_record_byte(&fs, &wal, start, len, at, byte);
                match open_mode(&fs, mode) {
                    Err(e) => assert_corruption_at(&e, &wal),
                    Ok(_) => panic!("{what} in the record at {start}, {mode:?}: opened"),
                }
            }
        }
    }
}

/// The sweep of [`random_byte_flips_never_give_wrong_values`] over a database with
/// families: random bytes of every kind of file, in the database's directory and in each
/// family's, flipped one at a time on a fresh copy. No panic, every value read right or an
/// error in every family, no key lost unless the WAL is damaged, and then only whole
/// batches from some point on, in every family at once. Seeded: `MEZZ_CORRUPTION_SEED`.
#[test]
fn random_byte_flips_with_families_never_give_wrong_values() {
    let seed = std::env::var("MEZZ_CORRUPTION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xcf5eed_u64);
    let (base, expected, wal_keys) = families_db(30);
    let mut rng = StdRng::seed_from_u64(seed);
    let flips_per_kind = 20;
    let mut cases = 0;
    let mut problems = Vec::new();
    for kind in [
        FileType::Wal,
        FileType::Sst,
        FileType::Manifest,
        FileType::Current,
        FileType::Options,
    ] {
        let targets: Vec<PathBuf> = files(&base, kind)
            .into_iter()
            .filter(|p| size(&base, p) > 0)
            .collect();
        assert!(!targets.is_empty(), "no {kind:?} file");
        for _ in 0..flips_per_kind {
            let target = &targets[rng.random_range(0..targets.len())];
            let offset = rng.random_range(0..size(&base, target));
            let mask = rng.random_range(1..=255u8);
            let fs = process_crash(&base);
            fs.corrupt(target, offset, mask).unwrap();
            let case = format!(
                "{} byte {offset} ^ {mask:#04x} (seed {seed}: MEZZ_CORRUPTION_SEED={seed})",
                target.display()
            );
            cases += 1;
            let Ok(db) = open(&fs) else { continue };
            let found =
                check_flipped_families(&db, &expected, &wal_keys, kind == FileType::Wal, &case);
            if let Some(first) = found.first() {
                problems.push(format!("{first} (+{} more)", found.len() - 1));
            }
            let _ = db.verify();
            let _ = db.close();
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {cases} damaged copies read wrong:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Checks one damaged copy with families; returns what went wrong.
fn check_flipped_families(
    db: &Db,
    expected: &FamilyMaps,
    wal_keys: &[Vec<u8>],
    wal_damaged: bool,
    case: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    let show = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    let cfs = handles(db);
    // Per family, the keys read as absent.
    let mut lost: Vec<Vec<Vec<u8>>> = vec![Vec::new(); cfs.len()];
    for (f, cf) in cfs.iter().enumerate() {
        for (k, v) in &expected[f] {
            match db.get_cf(cf, k) {
                Ok(Some(got)) if &got != v => {
                    problems.push(format!("{case}: family {f}: get {} wrong", show(k)));
                }
                Ok(Some(_)) | Err(_) => {}
                Ok(None) => {
                    if !(wal_damaged && wal_keys.contains(k)) {
                        problems.push(format!("{case}: family {f}: get {} found nothing", show(k)));
                    }
                    lost[f].push(k.clone());
                }
            }
        }
    }
    // Only whole batches from some point on may be lost (a tolerated torn tail): from the
    // first batch lost in any family, every batch is lost (or an error) in every family.
    if let Some(first) = wal_keys
        .iter()
        .position(|k| lost.iter().any(|l| l.contains(k)))
    {
        for k in &wal_keys[first..] {
            for (f, cf) in cfs.iter().enumerate() {
                if !(lost[f].contains(k) || db.get_cf(cf, k).is_err()) {
                    problems.push(format!(
                        "{case}: family {f}: {} survived although a batch up to it was lost",
                        show(k)
                    ));
                }
            }
        }
    }
    for (f, cf) in cfs.iter().enumerate() {
        let Ok(mut it) = db.cursor_cf(cf, &ReadOptions::default()) else {
            continue;
        };
        it.seek_to_first();
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            let k = it.key().to_vec();
            if expected[f].get(&k).map(Vec::as_slice) != Some(it.value()) {
                problems.push(format!("{case}: family {f}: scan wrong at {}", show(&k)));
                break;
            }
            if prev.as_ref().is_some_and(|p| p >= &k) {
                problems.push(format!(
                    "{case}: family {f}: scan out of order at {}",
                    show(&k)
                ));
                break;
            }
            prev = Some(k);
            it.next();
        }
        let _ = it.status();
    }
    problems
}
