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
use mezzanine::{Db, Error, Options, ReadOptions, RecoveryMode, WriteOptions};
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
