//! `repair_db` (LevelDB's `RepairDB`) end to end: a database of several tables and
//! unflushed writes in a log is damaged one way at a time (manifest deleted or corrupted,
//! `CURRENT` deleted, one table truncated or with a flipped byte in a data block, a log with
//! a torn tail), repaired and reopened; every key outside the damaged part must read back
//! its newest surviving value (deleted keys stay deleted), checked against a model; the
//! report must say what was lost. The NVM presets run the cases that leave their NVM
//! objects reachable, and the one that does not.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mezzanine::{
    Db, Error, Options, Preset, ReadOptions, RepairReport, WriteBatch, WriteOptions, repair_db,
};

const ROUNDS: usize = 5;
/// Rounds `0..FLUSHED` are flushed, the last stays in the log (or the NVM memtable).
const FLUSHED: usize = ROUNDS - 1;

/// Every write to a key: (round, value or `None` for a delete), in order.
type History = BTreeMap<Vec<u8>, Vec<(usize, Option<Vec<u8>>)>>;

fn base_options(preset: Option<Preset>, nvm: Option<&Path>) -> Options {
    let mut o = match (preset, nvm) {
        (Some(Preset::Matrixkv), Some(n)) => common::small_matrixkv_options(n),
        (Some(Preset::Mezzanine), Some(n)) => common::small_mezzanine_options(n),
        (Some(p), _) => Options::preset(p),
        (None, _) => Options::default(),
    };
    if !matches!(preset, Some(Preset::Matrixkv | Preset::Mezzanine)) {
        o.write_buffer_size = 1 << 20;
        o.block_size = 1024;
        o.nvm_memtable_size = 1 << 20;
        o.nvm_capacity = 16 << 20;
        o.nvm_prefault = false;
    }
    // Every flush stays a table of its own.
    o.level0_compaction_trigger = 100;
    o.level0_slowdown_trigger = 200;
    o.level0_stop_trigger = 300;
    if let Some(n) = nvm {
        o.nvm_dir = Some(n.to_path_buf());
    }
    o
}

/// Writes `ROUNDS` rounds, flushing after each but the last: round `r` writes its own keys
/// `r<r>-<i>`, overwrites the shared keys, and deletes some keys of round 0.
fn fill(db: &Db) -> History {
    let mut h = History::new();
    let put = |h: &mut History, r: usize, k: Vec<u8>, v: Vec<u8>| {
        db.put(&k, &v).unwrap();
        h.entry(k).or_default().push((r, Some(v)));
    };
    for r in 0..ROUNDS {
        for i in 0..150 {
            let k = format!("r{r}-{i:04}").into_bytes();
            let v = format!("value {r}-{i} {}", "x".repeat(40 + i % 20)).into_bytes();
            put(&mut h, r, k, v);
        }
        for j in 0..20 {
            put(
                &mut h,
                r,
                format!("shared-{j:02}").into_bytes(),
                format!("shared {j} of round {r}").into_bytes(),
            );
        }
        if r > 0 {
            for i in (r..150).step_by(10) {
                let k = format!("r0-{i:04}").into_bytes();
                db.delete(&k).unwrap();
                h.entry(k).or_default().push((r, None));
            }
        }
        if r < FLUSHED {
            db.flush().unwrap();
        }
    }
    h
}

/// What the database holds if the writes of the rounds in `lost` are gone.
fn model(h: &History, lost: &[usize]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    h.iter()
        .filter_map(|(k, events)| {
            let last = events.iter().rev().find(|(r, _)| !lost.contains(r))?;
            last.1.clone().map(|v| (k.clone(), v))
        })
        .collect()
}

/// The database reads exactly `want` (point reads of every key ever written, and a scan).
fn check_exact(db: &Db, h: &History, want: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for k in h.keys() {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            want.get(k),
            "key {}",
            String::from_utf8_lossy(k)
        );
    }
    assert_eq!(&common::scan(db, &ReadOptions::default()), want);
}

/// Every key reads its value in `full` or in `without` (the part that was damaged may or may
/// not have survived); keys whose history does not touch the rounds in `damaged` must read
/// exactly. Returns how many keys read as in `without` but not as in `full`.
fn check_between(db: &Db, h: &History, damaged: &[usize]) -> usize {
    let full = model(h, &[]);
    let without = model(h, damaged);
    let mut differ = 0;
    for (k, events) in h {
        let got = db.get(k).unwrap();
        let touched = events.iter().any(|(r, _)| damaged.contains(r));
        let name = String::from_utf8_lossy(k);
        if touched {
            assert!(
                got.as_ref() == full.get(k) || got.as_ref() == without.get(k),
                "key {name}: {got:?}"
            );
            differ += usize::from(got.as_ref() != full.get(k));
        } else {
            assert_eq!(got.as_ref(), full.get(k), "key {name}");
        }
    }
    let scanned = common::scan(db, &ReadOptions::default());
    for (k, v) in &scanned {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "scan and get agree");
    }
    differ
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
        })
        .collect();
    v.sort();
    v
}

/// The log holding the unflushed round (the other is an empty spare).
fn largest_log(dir: &Path) -> Option<PathBuf> {
    files(dir, ".log")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
}

fn logs_with_data(r: &RepairReport) -> Vec<&mezzanine::repair::ReplayedLog> {
    r.logs_replayed.iter().filter(|l| l.entries > 0).collect()
}

fn manifests(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"))
        })
        .collect();
    v.sort();
    v
}

/// A filled, closed database: its directory, NVM directory and options.
struct Filled {
    dir: tempfile::TempDir,
    _nvm: Option<tempfile::TempDir>,
    opts: Options,
    history: History,
}

fn filled(preset: Option<Preset>) -> Filled {
    let dir = tempfile::tempdir().unwrap();
    let nvm = match preset {
        Some(Preset::Novelsm | Preset::Tlsm | Preset::Matrixkv | Preset::Mezzanine) => {
            Some(common::nvm_dir())
        }
        _ => None,
    };
    let opts = base_options(preset, nvm.as_ref().map(tempfile::TempDir::path));
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let history = fill(&db);
    db.close().unwrap();
    Filled {
        dir,
        _nvm: nvm,
        opts,
        history,
    }
}

fn repair_and_open(f: &Filled) -> (RepairReport, Db) {
    let report = repair_db(f.dir.path(), &f.opts).unwrap();
    println!("{report}");
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    db.verify().unwrap();
    (report, db)
}

/// After a repair the database takes writes and keeps them over a reopen.
fn still_works(db: Db, f: &Filled) {
    db.put(b"after-repair", b"yes").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    assert_eq!(
        db.get(b"after-repair").unwrap().as_deref(),
        Some(&b"yes"[..])
    );
    db.close().unwrap();
}

#[test]
fn an_intact_database_repairs_to_itself() {
    let f = filled(None);
    let (report, db) = repair_and_open(&f);
    check_exact(&db, &f.history, &model(&f.history, &[]));
    assert_eq!(report.tables_kept.len(), FLUSHED);
    assert!(report.tables_rewritten.is_empty() && report.dropped.is_empty());
    assert_eq!(logs_with_data(&report).len(), 1, "{report}");
    assert!(report.logs_replayed.iter().all(|l| l.bytes_dropped == 0));
    assert_eq!((report.entries_lost, report.bytes_lost), (0, 0));
    assert!(report.max_sequence >= 5 * 150);
    assert!(
        f.dir.path().join("lost").is_dir(),
        "the old log and manifest are kept"
    );
    still_works(db, &f);
}

#[test]
fn a_deleted_manifest_loses_nothing() {
    let f = filled(None);
    for m in manifests(f.dir.path()) {
        std::fs::remove_file(m).unwrap();
    }
    assert!(Db::open(f.dir.path(), f.opts.clone()).is_err());
    let (report, db) = repair_and_open(&f);
    assert!(
        report.manifest.contains("none found"),
        "{}",
        report.manifest
    );
    check_exact(&db, &f.history, &model(&f.history, &[]));
    still_works(db, &f);
}

#[test]
fn a_corrupted_manifest_loses_nothing() {
    let f = filled(None);
    let m = manifests(f.dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&m).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(&m, bytes).unwrap();
    assert!(Db::open(f.dir.path(), f.opts.clone()).is_err());
    let (report, db) = repair_and_open(&f);
    assert!(report.manifest.contains("damaged") || report.manifest.contains("edit at"));
    check_exact(&db, &f.history, &model(&f.history, &[]));
    still_works(db, &f);
}

#[test]
fn a_deleted_current_loses_nothing() {
    let f = filled(None);
    std::fs::remove_file(f.dir.path().join("CURRENT")).unwrap();
    let (report, db) = repair_and_open(&f);
    assert!(report.manifest.contains("newest"), "{}", report.manifest);
    check_exact(&db, &f.history, &model(&f.history, &[]));
    still_works(db, &f);
}

#[test]
fn a_truncated_table_is_dropped_and_only_its_writes_are_lost() {
    let f = filled(None);
    let ssts = files(f.dir.path(), ".sst");
    assert_eq!(ssts.len(), FLUSHED, "one table per flushed round");
    // Round 1's table (the second flush).
    let victim = &ssts[1];
    let len = std::fs::metadata(victim).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(victim)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let (report, db) = repair_and_open(&f);
    assert_eq!(report.dropped.len(), 1, "{report}");
    assert_eq!(report.dropped[0].bytes, Some(len / 2));
    assert!(report.bytes_lost >= len / 2);
    assert_eq!(report.tables_kept.len(), FLUSHED - 1);
    let name = victim.file_name().unwrap();
    assert!(f.dir.path().join("lost").join(name).exists());
    check_exact(&db, &f.history, &model(&f.history, &[1]));
    still_works(db, &f);
}

#[test]
fn a_table_with_a_flipped_byte_keeps_its_readable_blocks() {
    let f = filled(None);
    let ssts = files(f.dir.path(), ".sst");
    let victim = &ssts[2];
    let mut bytes = std::fs::read(victim).unwrap();
    bytes[1500] ^= 0x01; // inside the second data block (1 KiB blocks)
    std::fs::write(victim, bytes).unwrap();
    let (report, db) = repair_and_open(&f);
    assert_eq!(report.tables_rewritten.len(), 1, "{report}");
    let t = &report.tables_rewritten[0];
    let lost = t.entries_lost.unwrap();
    assert!(lost > 0 && lost < 100, "one block's entries: {lost}");
    assert!(t.entries_kept > 100, "{}", t.entries_kept);
    assert!(t.damage.contains("block at"), "{}", t.damage);
    assert_eq!(report.entries_lost, lost);
    let differ = check_between(&db, &f.history, &[2]);
    assert!(differ > 0 && differ as u64 <= lost, "{differ} keys differ");
    assert!(
        f.dir
            .path()
            .join("lost")
            .join(victim.file_name().unwrap())
            .exists()
    );
    still_works(db, &f);
}

#[test]
fn a_log_with_a_torn_tail_keeps_its_records_before_the_tear() {
    let f = filled(None);
    let log = largest_log(f.dir.path()).unwrap();
    let len = std::fs::metadata(&log).unwrap().len();
    // Garbage over the last 100 bytes: the last records no longer verify.
    let mut bytes = std::fs::read(&log).unwrap();
    let n = bytes.len();
    for b in &mut bytes[n - 100..] {
        *b = 0xa5;
    }
    std::fs::write(&log, bytes).unwrap();
    let (report, db) = repair_and_open(&f);
    let logs = logs_with_data(&report);
    assert_eq!(logs.len(), 1, "{report}");
    let l = logs[0];
    assert!(l.stopped.is_some(), "{report}");
    assert!(l.bytes_dropped > 0 && l.bytes_dropped <= len, "{l:?}");
    assert!(l.entries > 100, "{l:?}");
    let differ = check_between(&db, &f.history, &[FLUSHED]);
    assert!(differ > 0, "the torn records are lost");
    still_works(db, &f);
}

#[test]
fn repair_refuses_an_open_database_and_a_missing_directory() {
    let f = filled(None);
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    assert!(matches!(
        repair_db(f.dir.path(), &f.opts),
        Err(Error::Locked(_))
    ));
    db.close().unwrap();
    let gone = f.dir.path().join("nothing-here");
    assert!(matches!(
        repair_db(&gone, &f.opts),
        Err(Error::InvalidArgument(_))
    ));
    // A directory without tables, logs or manifests: nothing to rebuild from.
    let empty = tempfile::tempdir().unwrap();
    match repair_db(empty.path(), &f.opts) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("found no"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert!(!empty.path().join("CURRENT").exists());
}

#[test]
fn the_report_goes_to_the_info_log() {
    let f = filled(None);
    repair_db(f.dir.path(), &f.opts).unwrap();
    let log = std::fs::read_to_string(f.dir.path().join("LOG")).unwrap();
    assert!(log.contains("repair finished"), "{log}");
    assert!(log.contains("185 entries"), "{log}");
}

/// A database whose older data was compacted into deeper levels: the tables are placed
/// again so that newer versions still shadow older ones.
#[test]
fn a_compacted_database_keeps_newest_values_and_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let opts = base_options(None, None);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut history = fill(&db);
    db.compact_range(None, None).unwrap();
    for j in 0..20 {
        let k = format!("shared-{j:02}").into_bytes();
        if j % 2 == 0 {
            db.delete(&k).unwrap();
            history.entry(k).or_default().push((9, None));
        } else {
            let v = b"after the compaction".to_vec();
            db.put(&k, &v).unwrap();
            history.entry(k).or_default().push((9, Some(v)));
        }
    }
    db.flush().unwrap();
    db.close().unwrap();
    for m in manifests(dir.path()) {
        std::fs::remove_file(m).unwrap();
    }
    repair_db(dir.path(), &opts).unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    check_exact(&db, &history, &model(&history, &[]));
}

fn nvm_preset_survives(preset: Preset) {
    // CURRENT deleted: the newest manifest still locates every NVM object.
    let f = filled(Some(preset));
    std::fs::remove_file(f.dir.path().join("CURRENT")).unwrap();
    let (report, db) = repair_and_open(&f);
    check_exact(&db, &f.history, &model(&f.history, &[]));
    assert_eq!(report.entries_lost, 0, "{report}");
    still_works(db, &f);

    // Repaired twice: everything is found again (the first repair's tables, and the key
    // written after it).
    let (report, db) = repair_and_open(&f);
    assert_eq!(report.entries_lost, 0, "{report}");
    let mut want = model(&f.history, &[]);
    want.insert(b"after-repair".to_vec(), b"yes".to_vec());
    check_exact(&db, &f.history, &want);
    db.close().unwrap();
}

fn nvm_preset_without_manifest(preset: Preset) {
    // The manifest deleted: what only NVM held cannot be found; the pool is kept in
    // `lost/`, and every value read is one that was written.
    let f = filled(Some(preset));
    for m in manifests(f.dir.path()) {
        std::fs::remove_file(m).unwrap();
    }
    let (report, db) = repair_and_open(&f);
    let nvm = f.opts.nvm_dir.clone().unwrap();
    assert!(nvm.join("lost").join("NVM-POOL").exists(), "{report}");
    assert!(
        report.dropped.iter().any(|d| d.what.contains("NVM pool")),
        "{report}"
    );
    let differ = check_between(&db, &f.history, &(0..ROUNDS).collect::<Vec<_>>());
    println!("{differ} keys lost");
    still_works(db, &f);
}

#[test]
fn novelsm_repairs() {
    nvm_preset_survives(Preset::Novelsm);
    nvm_preset_without_manifest(Preset::Novelsm);
}

#[test]
fn tlsm_repairs() {
    nvm_preset_survives(Preset::Tlsm);
    nvm_preset_without_manifest(Preset::Tlsm);
}

#[test]
fn matrixkv_repairs() {
    nvm_preset_survives(Preset::Matrixkv);
    nvm_preset_without_manifest(Preset::Matrixkv);
}

#[test]
fn mezzanine_repairs() {
    nvm_preset_survives(Preset::Mezzanine);
    nvm_preset_without_manifest(Preset::Mezzanine);
}

#[test]
fn a_torn_log_under_an_nvm_preset() {
    for preset in [
        Preset::Novelsm,
        Preset::Tlsm,
        Preset::Matrixkv,
        Preset::Mezzanine,
    ] {
        let f = filled(Some(preset));
        let Some(log) = largest_log(f.dir.path()) else {
            continue;
        };
        let mut bytes = std::fs::read(&log).unwrap();
        let n = bytes.len();
        if n < 200 {
            continue;
        }
        for b in &mut bytes[n - 100..] {
            *b = 0xa5;
        }
        std::fs::write(&log, bytes).unwrap();
        let (_, db) = repair_and_open(&f);
        check_between(&db, &f.history, &[FLUSHED]);
        db.close().unwrap();
    }
}

#[test]
fn destroy_removes_what_a_repair_moved_aside() {
    let f = filled(Some(Preset::Novelsm));
    for m in manifests(f.dir.path()) {
        std::fs::remove_file(m).unwrap();
    }
    repair_db(f.dir.path(), &f.opts).unwrap();
    let nvm = f.opts.nvm_dir.clone().unwrap();
    assert!(f.dir.path().join("lost").is_dir() && nvm.join("lost").is_dir());
    mezzanine::destroy_db(f.dir.path(), &f.opts).unwrap();
    assert!(!f.dir.path().exists(), "the directory is gone");
    assert!(!nvm.join("lost").exists(), "the pool's lost/ is gone");
}

/// Tables in a further SSD directory are found there, kept there, and the database opens
/// with its units; without `IDENTITY`, the identity comes from a unit's `UNIT` file.
#[test]
fn tables_in_further_ssd_directories_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let unit = tempfile::tempdir().unwrap();
    let mut opts = base_options(None, None);
    opts.ssd_paths = vec![unit.path().to_path_buf()];
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let history = fill(&db);
    db.close().unwrap();
    let in_unit = files(unit.path(), ".sst").len();
    assert!(in_unit > 0, "the placement used the unit");
    for m in manifests(dir.path()) {
        std::fs::remove_file(m).unwrap();
    }
    std::fs::remove_file(dir.path().join("IDENTITY")).unwrap();
    let report = repair_db(dir.path(), &opts).unwrap();
    assert_eq!(report.tables_kept.len(), FLUSHED, "{report}");
    assert_eq!(
        files(unit.path(), ".sst").len(),
        in_unit,
        "kept where they were"
    );
    let db = Db::open(dir.path(), opts).unwrap();
    check_exact(&db, &history, &model(&history, &[]));
}

/// Tables whose sequence ranges interleave and whose keys overlap cannot be placed level by
/// level: they are merged into one run, the newest version of each key kept.
#[test]
fn interleaved_tables_are_merged_newest_first() {
    let opts = base_options(None, None);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for value in [&b"old"[..], b"new"] {
        for i in 0..100 {
            db.put(format!("k{i:03}").as_bytes(), value).unwrap(); // seqs 1..=100, 101..=200
        }
        db.flush().unwrap();
    }
    db.close().unwrap();
    // A table of another database with sequence numbers 50..=150 over the same keys.
    let other = tempfile::tempdir().unwrap();
    let db = Db::open(other.path(), opts.clone()).unwrap();
    for i in 0..49 {
        db.put(format!("filler{i:03}").as_bytes(), b"f").unwrap();
    }
    db.flush().unwrap();
    for i in 0..=100 {
        db.put(format!("k{i:03}").as_bytes(), b"other").unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let foreign = files(other.path(), ".sst").pop().unwrap();
    std::fs::copy(&foreign, dir.path().join("000900.sst")).unwrap();

    let report = repair_db(dir.path(), &opts).unwrap();
    assert!(report.manifest.contains("merged"), "{report}");
    assert_eq!(report.max_sequence, 200);
    let last = opts.num_levels - 1;
    assert_eq!(report.tables_per_level[last], 1, "{report}");
    let db = Db::open(dir.path(), opts).unwrap();
    db.verify().unwrap();
    for i in 0..100 {
        let k = format!("k{i:03}");
        assert_eq!(
            db.get(k.as_bytes()).unwrap().as_deref(),
            Some(&b"new"[..]),
            "{k}"
        );
    }
    assert_eq!(db.get(b"k100").unwrap().as_deref(), Some(&b"other"[..]));
    assert_eq!(common::scan(&db, &ReadOptions::default()).len(), 101);
}

/// A damaged entry inside an NVM table (TLSM) or a matrix row (MatrixKV): the table is
/// copied up to the entry that fails its checksum, the report says what was lost, and the
/// pool is kept in the NVM directory's `lost/`.
#[test]
fn a_damaged_nvm_table_keeps_what_reads() {
    for preset in [Preset::Tlsm, Preset::Matrixkv, Preset::Mezzanine] {
        let f = filled(Some(preset));
        let nvm = f.opts.nvm_dir.clone().unwrap();
        let pool = nvm.join("NVM-POOL");
        let mut bytes = std::fs::read(&pool).unwrap();
        let needle = b"value 1-42 ";
        let mut flipped = 0;
        let mut at = 0;
        while let Some(p) = bytes[at..].windows(needle.len()).position(|w| w == needle) {
            bytes[at + p + 6] ^= 0x01; // the '1' of the round
            flipped += 1;
            at += p + needle.len();
        }
        assert!(flipped > 0, "{preset:?}: the value is in the pool");
        std::fs::write(&pool, bytes).unwrap();
        let (report, db) = repair_and_open(&f);
        let damaged: Vec<_> = report
            .tables_rewritten
            .iter()
            .filter(|t| !t.damage.is_empty())
            .collect();
        assert_eq!(damaged.len(), 1, "{preset:?}: {report}");
        assert!(damaged[0].entries_kept < 185, "{report}");
        assert!(nvm.join("lost").join("NVM-POOL").exists(), "{report}");
        let differ = check_between(&db, &f.history, &[1]);
        assert!(differ > 0, "{preset:?}");
        still_works(db, &f);
    }
}

/// A further SSD directory that is gone is reported, and what the others hold is kept.
#[test]
fn a_missing_ssd_directory_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let opts = base_options(None, None);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let history = fill(&db);
    db.close().unwrap();
    let mut with_unit = opts.clone();
    with_unit.ssd_paths = vec![dir.path().join("no-such-unit")];
    let report = repair_db(dir.path(), &with_unit).unwrap();
    assert!(
        report
            .dropped
            .iter()
            .any(|d| d.what.contains("no-such-unit")),
        "{report}"
    );
    let db = Db::open(dir.path(), opts).unwrap();
    check_exact(&db, &history, &model(&history, &[]));
}

/// NoveLSM's NVM memtables (both modes) are copied into tables: with small DRAM memtables the
/// unflushed round spills into one.
#[test]
fn novelsm_nvm_memtables_are_copied() {
    use mezzanine::options::NvmMemtable;
    for mode in [NvmMemtable::Mutable, NvmMemtable::Immutable] {
        let dir = tempfile::tempdir().unwrap();
        let nvm = common::nvm_dir();
        let mut opts = base_options(Some(Preset::Novelsm), Some(nvm.path()));
        opts.nvm_memtable = mode;
        opts.write_buffer_size = 8 << 10;
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let history = fill(&db);
        db.close().unwrap();
        std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
        let report = repair_db(dir.path(), &opts).unwrap();
        assert!(
            report
                .tables_rewritten
                .iter()
                .any(|t| t.source.starts_with("NVM memtable") && t.entries_kept > 0),
            "{mode:?}: {report}"
        );
        assert_eq!(report.entries_lost, 0, "{report}");
        let db = Db::open(dir.path(), opts).unwrap();
        check_exact(&db, &history, &model(&history, &[]));
    }
}

#[test]
fn a_database_in_a_custom_order_repairs_in_that_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = base_options(None, None);
    opts.comparator = Some(std::sync::Arc::new(mezzanine::ReverseBytewise));
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let history = fill(&db);
    db.close().unwrap();
    for m in manifests(dir.path()) {
        std::fs::remove_file(m).unwrap();
    }
    let report = repair_db(dir.path(), &opts).unwrap();
    println!("{report}");
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    db.verify().unwrap();
    let want = model(&history, &[]);
    for k in history.keys() {
        assert_eq!(db.get(k).unwrap().as_ref(), want.get(k), "{k:?}");
    }
    let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.unwrap().0).collect();
    let mut expected: Vec<Vec<u8>> = want.keys().cloned().collect();
    expected.reverse();
    assert_eq!(keys, expected);
    db.close().unwrap();
    // The rebuilt manifest records the order: the bytewise default is refused.
    assert!(matches!(
        Db::open(dir.path(), base_options(None, None)),
        Err(mezzanine::Error::InvalidArgument(m)) if m.contains("comparator name mismatch")
    ));
}

// Column families: each `cf-<id>` engine is repaired as the default family's, the logs'
// family updates go to their family, and the new manifest records the families.

/// The column families of the fixture, in creation order (ids 1 and 2), and the block size
/// each is created with (so their options can be told from the database's).
const FAMILIES: [(&str, usize); 2] = [("alpha", 2048), ("beta", 4096)];

/// A closed database with two column families besides the default, filled in `ROUNDS`
/// rounds (all flushed but the last, which only the WAL holds): every family gets keys of
/// its own per round; batches span the three families, overwriting a shared key in each
/// and deleting keys of round 0. `histories[0]` is the default family's.
struct FilledFamilies {
    dir: tempfile::TempDir,
    _nvm: Option<tempfile::TempDir>,
    opts: Options,
    histories: Vec<History>,
}

fn family_options(block_size: usize) -> Options {
    let mut o = base_options(None, None);
    o.block_size = block_size;
    o
}

fn filled_families() -> FilledFamilies {
    filled_families_with(None)
}

/// [`filled_families`] with `preset` for every family (and an NVM directory if it needs
/// one).
fn filled_families_with(preset: Option<Preset>) -> FilledFamilies {
    let dir = tempfile::tempdir().unwrap();
    let nvm = preset.map(|_| common::nvm_dir());
    let opts = base_options(preset, nvm.as_ref().map(tempfile::TempDir::path));
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut cfs = vec![db.default_column_family()];
    for (name, block) in FAMILIES {
        let mut o = opts.clone();
        o.block_size = block;
        cfs.push(db.create_column_family(name, &o).unwrap());
    }
    let mut histories = vec![History::new(); cfs.len()];
    for r in 0..ROUNDS {
        for i in 0..120 {
            for (f, cf) in cfs.iter().enumerate() {
                let k = format!("f{f}-r{r}-{i:04}").into_bytes();
                let v = format!("value {f} {r}-{i} {}", "y".repeat(30 + i % 25)).into_bytes();
                db.put_cf(cf, &k, &v).unwrap();
                histories[f].entry(k).or_default().push((r, Some(v)));
            }
            if i % 8 == 0 {
                let mut batch = WriteBatch::new();
                for (f, cf) in cfs.iter().enumerate() {
                    let k = format!("shared-{i:04}").into_bytes();
                    let v = format!("shared {f} {r}-{i}").into_bytes();
                    batch.put_cf(cf, &k, &v);
                    histories[f].entry(k).or_default().push((r, Some(v)));
                    if r > 0 {
                        let gone = format!("f{f}-r0-{i:04}").into_bytes();
                        batch.delete_cf(cf, &gone);
                        histories[f].entry(gone).or_default().push((r, None));
                    }
                }
                db.write(&WriteOptions::default(), batch).unwrap();
            }
        }
        if r < FLUSHED {
            // Memtables switch together: every family flushes.
            db.flush().unwrap();
        }
    }
    db.close().unwrap();
    FilledFamilies {
        dir,
        _nvm: nvm,
        opts,
        histories,
    }
}

fn family_dir(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("cf-{id}"))
}

/// Every family of `db` (the default, then `names` in id order) reads exactly its model.
fn check_families(db: &Db, names: &[&str], wants: &[BTreeMap<Vec<u8>, Vec<u8>>]) {
    let mut all = vec!["default"];
    all.extend_from_slice(names);
    assert_eq!(db.column_families(), all);
    for (name, want) in all.iter().zip(wants) {
        let cf = db.column_family(name).unwrap();
        let got = common::collect(db.cursor_cf(&cf, &ReadOptions::default()).unwrap());
        assert_eq!(got.len(), want.len(), "family {name}: number of keys");
        assert!(&got == want, "family {name}: contents differ");
    }
}

/// After a repair every family takes writes above what its tables hold (the sequence
/// continues above every family's) and keeps them over a reopen; a new family gets a new
/// id, above every id the repair saw (`above`).
fn families_still_work(dir: &Path, opts: &Options, names: &[&str], above: u32) {
    let db = Db::open(dir, opts.clone()).unwrap();
    for name in names.iter().chain(["default"].iter()) {
        let cf = db.column_family(name).unwrap();
        db.put_cf(&cf, b"shared-0000", b"after repair").unwrap();
        assert_eq!(
            db.get_cf(&cf, b"shared-0000").unwrap().as_deref(),
            Some(&b"after repair"[..]),
            "family {name}"
        );
    }
    let new = db
        .create_column_family("new", &base_options(None, None))
        .unwrap();
    assert!(new.id() > above, "new family id {}", new.id());
    db.close().unwrap();
    let db = Db::open(dir, opts.clone()).unwrap();
    for name in names.iter().chain(["default"].iter()) {
        let cf = db.column_family(name).unwrap();
        assert_eq!(
            db.get_cf(&cf, b"shared-0000").unwrap().as_deref(),
            Some(&b"after repair"[..]),
            "family {name} after reopen"
        );
    }
    db.close().unwrap();
}

fn remove_manifests(dir: &Path) {
    for m in manifests(dir) {
        std::fs::remove_file(m).unwrap();
    }
}

#[test]
fn column_families_are_repaired_with_their_names_when_manifests_are_damaged() {
    let f = filled_families();
    // The families' manifests are gone; the database's last record is damaged (the
    // records of the families come before it).
    for id in 1..=2 {
        remove_manifests(&family_dir(f.dir.path(), id));
    }
    let m = manifests(f.dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&m).unwrap();
    let at = bytes.len() - 6;
    bytes[at] ^= 0x40;
    std::fs::write(&m, bytes).unwrap();
    assert!(Db::open(f.dir.path(), f.opts.clone()).is_err());
    let report = repair_db(f.dir.path(), &f.opts).unwrap();
    println!("{report}");
    assert_eq!(report.families.len(), 2, "{report}");
    for (fam, (name, _)) in report.families.iter().zip(FAMILIES) {
        assert_eq!((fam.name.as_str(), fam.name_recovered), (name, false));
        assert_eq!(fam.options_from, "manifest");
        assert_eq!(fam.report.tables_kept.len(), FLUSHED, "{report}");
        assert!(fam.report.manifest.contains("none found"), "{report}");
        // The unflushed round reached the family's tables from the database's log.
        let from_log: u64 = fam.report.logs_replayed.iter().map(|l| l.entries).sum();
        assert!(from_log >= 120, "{report}");
        assert!(fam.report.max_sequence <= report.max_sequence);
    }
    // The default family's log replay did not keep the families' updates.
    let default_entries: u64 = report.logs_replayed.iter().map(|l| l.entries).sum();
    let family_entries: u64 = report.logs_replayed.iter().map(|l| l.family_entries).sum();
    assert!(default_entries >= 120 && family_entries >= 240, "{report}");
    assert!(report.family_entries_dropped.is_empty() && report.dropped.is_empty());
    assert!(report.to_string().contains("column families: 2"));
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    db.verify().unwrap();
    let wants: Vec<_> = f.histories.iter().map(|h| model(h, &[])).collect();
    check_families(&db, &["alpha", "beta"], &wants);
    for (name, block) in FAMILIES {
        let text = db
            .property_cf(&db.column_family(name).unwrap(), "mezz.options")
            .unwrap();
        assert!(text.contains(&format!("block_size={block}")), "{text}");
    }
    db.close().unwrap();
    families_still_work(f.dir.path(), &f.opts, &["alpha", "beta"], 2);
}

#[test]
fn column_families_without_any_manifest_get_recovered_names() {
    let f = filled_families();
    remove_manifests(f.dir.path());
    std::fs::remove_file(f.dir.path().join("CURRENT")).unwrap();
    for id in 1..=2 {
        remove_manifests(&family_dir(f.dir.path(), id));
    }
    let report = repair_db(f.dir.path(), &f.opts).unwrap();
    println!("{report}");
    let names = ["recovered-cf-1", "recovered-cf-2"];
    for (fam, name) in report.families.iter().zip(names) {
        assert_eq!((fam.name.as_str(), fam.name_recovered), (name, true));
        assert!(
            fam.options_from.starts_with("cf-") && fam.options_from.contains("OPTIONS-"),
            "{}",
            fam.options_from
        );
    }
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    db.verify().unwrap();
    let wants: Vec<_> = f.histories.iter().map(|h| model(h, &[])).collect();
    check_families(&db, &names, &wants);
    // The options came back from the families' OPTIONS files.
    for (name, (_, block)) in names.iter().zip(FAMILIES) {
        let text = db
            .property_cf(&db.column_family(name).unwrap(), "mezz.options")
            .unwrap();
        assert!(text.contains(&format!("block_size={block}")), "{text}");
    }
    db.close().unwrap();
    // The recovered name is recorded: the info log says so, and the next repair keeps it.
    let info: String = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("LOG"))
        })
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(info.contains("recovered as \"recovered-cf-1\""), "{info}");
    let again = repair_db(f.dir.path(), &f.opts).unwrap();
    assert!(again.families.iter().all(|fam| !fam.name_recovered));
    families_still_work(f.dir.path(), &f.opts, &names, 2);
}

#[test]
fn a_dropped_column_family_does_not_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let opts = base_options(None, None);
    let saved = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let a = db.create_column_family("a", &family_options(1024)).unwrap();
        let b = db.create_column_family("b", &family_options(1024)).unwrap();
        for i in 0..200 {
            let k = format!("k{i:04}").into_bytes();
            db.put_cf(&a, &k, b"in a").unwrap();
            db.put_cf(&b, &k, b"in b").unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    // A copy of b's directory, put back after the drop: what a crash between the drop's
    // record and the directory's deletion leaves.
    let b_dir = family_dir(dir.path(), 2);
    copy_dir(&b_dir, saved.path());
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let a = db.column_family("a").unwrap();
        let b = db.column_family("b").unwrap();
        let mut batch = WriteBatch::new();
        batch.put_cf(&a, b"unflushed", b"a");
        batch.put_cf(&b, b"unflushed", b"b");
        batch.put(b"unflushed", b"default");
        db.write(&WriteOptions::default(), batch).unwrap();
        db.drop_column_family(&b).unwrap();
        db.close().unwrap();
    }
    assert!(!b_dir.exists());
    copy_dir(saved.path(), &b_dir);
    remove_manifests(&family_dir(dir.path(), 1));
    let report = repair_db(dir.path(), &opts).unwrap();
    println!("{report}");
    assert_eq!(report.families_reclaimed, vec![2], "{report}");
    assert!(!b_dir.exists(), "the dropped family's directory is deleted");
    assert_eq!(report.families.len(), 1);
    // b's update in the log is counted, not replayed anywhere.
    assert_eq!(report.family_entries_dropped.get(&2), Some(&1), "{report}");
    assert!(
        report
            .dropped
            .iter()
            .any(|d| d.what.contains("column family 2"))
    );
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    assert_eq!(db.column_families(), vec!["default", "a"]);
    let a = db.column_family("a").unwrap();
    assert_eq!(
        db.get_cf(&a, b"k0007").unwrap().as_deref(),
        Some(&b"in a"[..])
    );
    assert_eq!(
        db.get_cf(&a, b"unflushed").unwrap().as_deref(),
        Some(&b"a"[..])
    );
    assert_eq!(
        db.get(b"unflushed").unwrap().as_deref(),
        Some(&b"default"[..])
    );
    assert_eq!(db.get(b"k0007").unwrap(), None);
    db.close().unwrap();
    // The new manifest records the drop (the old ones are in lost/): the directory put back
    // once more is deleted again.
    copy_dir(saved.path(), &b_dir);
    let again = repair_db(dir.path(), &opts).unwrap();
    assert_eq!(again.families_reclaimed, vec![2], "{again}");
    assert!(!b_dir.exists());
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    assert_eq!(db.column_families(), vec!["default", "a"]);
    // The dropped id is not used again.
    let c = db.create_column_family("c", &opts).unwrap();
    assert_eq!(c.id(), 3);
    db.close().unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_damaged_table_of_a_column_family_loses_only_its_writes() {
    let f = filled_families();
    let alpha = family_dir(f.dir.path(), 1);
    let ssts = files(&alpha, ".sst");
    assert_eq!(ssts.len(), FLUSHED, "one table per flushed round");
    let victim = &ssts[1];
    let len = std::fs::metadata(victim).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(victim)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let report = repair_db(f.dir.path(), &f.opts).unwrap();
    println!("{report}");
    let fam = &report.families[0];
    assert_eq!(fam.name, "alpha");
    assert_eq!(fam.report.dropped.len(), 1, "{report}");
    assert_eq!(fam.report.dropped[0].bytes, Some(len / 2));
    assert_eq!(fam.report.tables_kept.len(), FLUSHED - 1);
    assert!(
        alpha
            .join("lost")
            .join(victim.file_name().unwrap())
            .exists()
    );
    assert!(report.dropped.is_empty() && report.families[1].report.dropped.is_empty());
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    db.verify().unwrap();
    let wants = vec![
        model(&f.histories[0], &[]),
        model(&f.histories[1], &[1]),
        model(&f.histories[2], &[]),
    ];
    check_families(&db, &["alpha", "beta"], &wants);
    db.close().unwrap();
    families_still_work(f.dir.path(), &f.opts, &["alpha", "beta"], 2);
}

/// Random writes, deletes and batches across three families and the default, flushed now
/// and then, the last ones only in the WAL; every manifest deleted; repaired: every family
/// (under its recovered name) reads what a `BTreeMap` per family says.
#[test]
fn random_writes_across_families_survive_losing_every_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let opts = base_options(None, None);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    const N: usize = 4;
    let mut models = vec![BTreeMap::<Vec<u8>, Vec<u8>>::new(); N];
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let mut cfs = vec![db.default_column_family()];
        for i in 1..N {
            let mut o = family_options(1024);
            o.write_buffer_size = 64 << 10 << i;
            cfs.push(db.create_column_family(&format!("m{i}"), &o).unwrap());
        }
        for step in 0..6000u64 {
            let mut batch = WriteBatch::new();
            let ops = 1 + next(4);
            for _ in 0..ops {
                let f = next(N as u64) as usize;
                let k = format!("key{:05}", next(1500)).into_bytes();
                if next(5) == 0 {
                    batch.delete_cf(&cfs[f], &k);
                    models[f].remove(&k);
                } else {
                    let v = format!("v{step} {}", "z".repeat(next(60) as usize)).into_bytes();
                    batch.put_cf(&cfs[f], &k, &v);
                    models[f].insert(k, v);
                }
            }
            db.write(&WriteOptions::default(), batch).unwrap();
            if next(1500) == 0 {
                db.flush().unwrap();
            }
        }
        db.close().unwrap();
    }
    remove_manifests(dir.path());
    for id in 1..N as u32 {
        remove_manifests(&family_dir(dir.path(), id));
    }
    let report = repair_db(dir.path(), &opts).unwrap();
    println!("{report}");
    assert_eq!(report.families.len(), N - 1);
    assert!(report.dropped.is_empty(), "{report}");
    let names: Vec<String> = (1..N).map(|i| format!("recovered-cf-{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    db.verify().unwrap();
    check_families(&db, &names, &models);
    db.close().unwrap();
}

/// A column family's tables in a further SSD directory (`<ssd_path>/cf-<id>`) are found and
/// kept there.
#[test]
fn a_column_family_s_tables_in_further_ssd_directories_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let unit = tempfile::tempdir().unwrap();
    let mut opts = base_options(None, None);
    opts.ssd_paths = vec![unit.path().to_path_buf()];
    let mut want = BTreeMap::new();
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let a = db.create_column_family("a", &opts).unwrap();
        for r in 0..3 {
            for i in 0..300 {
                let k = format!("k{i:04}").into_bytes();
                let v = format!("round {r} {}", "w".repeat(50)).into_bytes();
                db.put_cf(&a, &k, &v).unwrap();
                want.insert(k, v);
            }
            db.flush().unwrap();
        }
        db.close().unwrap();
    }
    let in_unit = files(&unit.path().join("cf-1"), ".sst").len();
    assert!(in_unit > 0, "the family's placement used the unit");
    remove_manifests(dir.path());
    remove_manifests(&family_dir(dir.path(), 1));
    let report = repair_db(dir.path(), &opts).unwrap();
    println!("{report}");
    let fam = &report.families[0];
    assert!(fam.report.dropped.is_empty(), "{report}");
    assert_eq!(fam.report.tables_kept.len(), 3, "{report}");
    assert_eq!(files(&unit.path().join("cf-1"), ".sst").len(), in_unit);
    let db = Db::open(dir.path(), opts).unwrap();
    db.verify().unwrap();
    check_families(&db, &["recovered-cf-1"], &[BTreeMap::new(), want]);
    db.close().unwrap();
}

/// TLSM families (their tables in NVM, each in its own pool under `<nvm_dir>/cf-<id>`):
/// with `CURRENT` gone everywhere, the manifests still locate every NVM table and nothing is
/// lost; with the families' manifests gone, their pools go to their `lost/`, and every
/// value a family then reads is one that was written to it.
#[test]
fn tlsm_column_families_repair() {
    let f = filled_families_with(Some(Preset::Tlsm));
    std::fs::remove_file(f.dir.path().join("CURRENT")).unwrap();
    for id in 1..=2 {
        std::fs::remove_file(family_dir(f.dir.path(), id).join("CURRENT")).unwrap();
    }
    let report = repair_db(f.dir.path(), &f.opts).unwrap();
    println!("{report}");
    assert_eq!(report.entries_lost, 0, "{report}");
    for fam in &report.families {
        assert_eq!(fam.report.entries_lost, 0, "{report}");
        assert!(fam.report.dropped.is_empty(), "{report}");
        assert!(
            !fam.report.tables_rewritten.is_empty(),
            "NVM tables copied: {report}"
        );
    }
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    db.verify().unwrap();
    let wants: Vec<_> = f.histories.iter().map(|h| model(h, &[])).collect();
    check_families(&db, &["alpha", "beta"], &wants);
    db.close().unwrap();
    families_still_work(f.dir.path(), &f.opts, &["alpha", "beta"], 2);

    let f = filled_families_with(Some(Preset::Tlsm));
    for id in 1..=2 {
        remove_manifests(&family_dir(f.dir.path(), id));
    }
    let report = repair_db(f.dir.path(), &f.opts).unwrap();
    println!("{report}");
    let nvm = f.opts.nvm_dir.clone().unwrap();
    for fam in &report.families {
        assert!(
            nvm.join(format!("cf-{}", fam.id))
                .join("lost")
                .join("NVM-POOL")
                .exists(),
            "{report}"
        );
        assert!(
            fam.report
                .dropped
                .iter()
                .any(|d| d.what.contains("NVM pool")),
            "{report}"
        );
    }
    let db = Db::open(f.dir.path(), f.opts.clone()).unwrap();
    db.verify().unwrap();
    assert_eq!(
        common::scan(&db, &ReadOptions::default()),
        model(&f.histories[0], &[]),
        "the default family lost nothing"
    );
    for (i, name) in ["alpha", "beta"].iter().enumerate() {
        let cf = db.column_family(name).unwrap();
        let got = common::collect(db.cursor_cf(&cf, &ReadOptions::default()).unwrap());
        let h = &f.histories[i + 1];
        assert!(!got.is_empty(), "the unflushed round came from the log");
        for (k, v) in &got {
            let written = h
                .get(k)
                .is_some_and(|events| events.iter().any(|(_, e)| e.as_ref() == Some(v)));
            assert!(written, "family {name}: {k:?} reads a value never written");
        }
    }
    db.close().unwrap();
}
