//! Tables spread over several SSD directories (`ssd_paths`): every placement keeps every
//! value, reopening finds every table, and a missing, swapped, foreign or dropped directory
//! is refused with an error that names it.

use std::path::{Path, PathBuf};

use mezzanine::{Db, Error, Options, PlacementPolicy};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat((i % 90) as usize)).into_bytes()
}

/// Small memtables and tables so a few thousand writes make several levels.
fn options(units: &[PathBuf], placement: PlacementPolicy) -> Options {
    Options {
        write_buffer_size: 32 << 10,
        target_file_size: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_compaction_trigger: 2,
        ssd_paths: units.to_vec(),
        placement,
        ..Options::default()
    }
}

fn write(db: &Db, n: u32, round: u32) {
    for i in 0..n {
        db.put(&key(i), &value(i, round)).expect("put");
    }
    for i in (0..n).step_by(5) {
        db.delete(&key(i)).expect("delete");
    }
}

fn check(db: &Db, n: u32, round: u32) {
    for i in 0..n {
        let want = (i % 5 != 0).then(|| value(i, round));
        assert_eq!(db.get(&key(i)).expect("get"), want, "key {i}");
    }
}

fn ssts(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("list")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        })
        .count()
}

fn setup(n_units: usize) -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
    let root = tempfile::tempdir().expect("tempdir");
    let db = root.path().join("db");
    let units = (0..n_units)
        .map(|i| root.path().join(format!("unit{i}")))
        .collect();
    (root, db, units)
}

#[test]
fn every_placement_spreads_tables_over_the_units_and_keeps_every_value() {
    for placement in [
        PlacementPolicy::Striped,
        PlacementPolicy::PerFile,
        PlacementPolicy::Isolated,
    ] {
        let (_root, path, units) = setup(3);
        let db = Db::open(&path, options(&units, placement)).expect("open");
        write(&db, 4000, 1);
        db.flush().expect("flush");
        db.wait_for_background().expect("background");
        write(&db, 4000, 2);
        db.flush().expect("flush");
        db.wait_for_background().expect("background");
        check(&db, 4000, 2);
        let stats = db.stats();
        assert_eq!(stats.units.len(), 4, "{placement:?}");
        // New tables go to the units only; the database directory keeps none.
        assert_eq!(stats.units[0].tables, 0, "{placement:?}");
        assert_eq!(ssts(&path), 0, "{placement:?}");
        let used = stats.units[1..].iter().filter(|u| u.tables > 0).count();
        assert!(
            used >= 2,
            "{placement:?} used {used} units: {:?}",
            stats.units
        );
        let written: u64 = stats.units.iter().map(|u| u.write_bytes).sum();
        assert!(written > 0);
        assert!(
            stats.units[1..].iter().any(|u| u.reads > 0),
            "{placement:?}"
        );
        let on_disk: usize = units.iter().map(|u| ssts(u)).sum();
        let in_version: u64 = stats.units.iter().map(|u| u.tables).sum();
        assert_eq!(
            on_disk as u64, in_version,
            "{placement:?}: no file left behind"
        );
        let text = db.property("mezz.stats").expect("stats");
        assert!(text.contains("** Units **"), "{text}");
        db.close().expect("close");

        // Reopened with the same directories (and another policy): everything is found.
        let db = Db::open(&path, options(&units, PlacementPolicy::Isolated)).expect("reopen");
        check(&db, 4000, 2);
        db.verify().expect("verify");
        db.close().expect("close");
    }
}

fn open_err(path: &Path, o: Options) -> String {
    match Db::open(path, o) {
        Err(Error::InvalidArgument(m)) => m,
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("expected the open to fail"),
    }
}

#[test]
fn a_swapped_missing_dropped_or_foreign_directory_is_refused() {
    let (root, path, units) = setup(2);
    {
        let db = Db::open(&path, options(&units, PlacementPolicy::Striped)).expect("open");
        write(&db, 3000, 1);
        db.flush().expect("flush");
        db.wait_for_background().expect("background");
        assert!(units.iter().all(|u| ssts(u) > 0), "both units hold tables");
        db.close().expect("close");
    }
    // Swapped order.
    let swapped = vec![units[1].clone(), units[0].clone()];
    let m = open_err(&path, options(&swapped, PlacementPolicy::Striped));
    assert!(m.contains("order of ssd_paths"), "{m}");
    // One directory dropped from the options.
    let m = open_err(&path, options(&units[..1], PlacementPolicy::Striped));
    assert!(m.contains("SSD directory 2"), "{m}");
    // A directory that is gone.
    let moved = root.path().join("moved");
    std::fs::rename(&units[1], &moved).expect("rename");
    let m = open_err(&path, options(&units, PlacementPolicy::Striped));
    assert!(m.contains("does not exist") && m.contains("keeps"), "{m}");
    // An empty directory in its place: not the one the database wrote to.
    std::fs::create_dir(&units[1]).expect("mkdir");
    let m = open_err(&path, options(&units, PlacementPolicy::Striped));
    assert!(m.contains("no UNIT file"), "{m}");
    std::fs::remove_dir(&units[1]).expect("rmdir");
    std::fs::rename(&moved, &units[1]).expect("rename back");
    // Another database's unit.
    let other = root.path().join("other");
    let other_unit = root.path().join("other-unit");
    Db::open(
        &other,
        options(std::slice::from_ref(&other_unit), PlacementPolicy::Striped),
    )
    .expect("other db")
    .close()
    .expect("close");
    let m = open_err(
        &path,
        options(&[units[0].clone(), other_unit], PlacementPolicy::Striped),
    );
    assert!(m.contains("belongs to another database"), "{m}");
    // The database directory itself, or a directory given twice.
    let m = open_err(
        &path,
        options(std::slice::from_ref(&path), PlacementPolicy::Striped),
    );
    assert!(m.contains("database directory itself"), "{m}");
    let m = open_err(
        &path,
        options(
            &[units[0].clone(), units[0].clone()],
            PlacementPolicy::Striped,
        ),
    );
    assert!(m.contains("given twice"), "{m}");
    // Nothing was harmed: the right directories still open with every value.
    let db = Db::open(&path, options(&units, PlacementPolicy::Striped)).expect("reopen");
    check(&db, 3000, 1);
    db.close().expect("close");
}

#[test]
fn units_can_be_added_to_an_existing_database() {
    let (_root, path, units) = setup(3);
    {
        // First without further directories: tables in the database directory.
        let db = Db::open(&path, options(&[], PlacementPolicy::Isolated)).expect("open");
        write(&db, 2000, 1);
        db.flush().expect("flush");
        db.wait_for_background().expect("background");
        assert!(ssts(&path) > 0);
        db.close().expect("close");
    }
    {
        let db = Db::open(&path, options(&units[..2], PlacementPolicy::Isolated)).expect("open");
        check(&db, 2000, 1);
        write(&db, 2000, 2);
        db.flush().expect("flush");
        db.wait_for_background().expect("background");
        check(&db, 2000, 2);
        db.close().expect("close");
    }
    // A third unit appended later.
    let db = Db::open(&path, options(&units, PlacementPolicy::Isolated)).expect("open");
    check(&db, 2000, 2);
    write(&db, 2000, 3);
    db.compact_range(None, None).expect("compact");
    check(&db, 2000, 3);
    assert_eq!(
        ssts(&path),
        0,
        "a full compaction moves every table to the units"
    );
    db.close().expect("close");
}
