//! A snapshot keeps seeing the state it was taken at, through flushes and compactions
//! that would otherwise drop the old versions and deletion markers.

use mezzanine::{Db, Options, ReadOptions};

fn small_options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        level0_compaction_trigger: 2,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

#[test]
fn snapshot_survives_flush_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..2000 {
        db.put(&key(i), b"old").unwrap();
    }
    let snap = db.snapshot();
    for i in 0..2000 {
        if i % 2 == 0 {
            db.delete(&key(i)).unwrap();
        } else {
            db.put(&key(i), b"new").unwrap();
        }
    }
    db.put(b"only-new", b"1").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_background().unwrap();
    assert_eq!(db.stats().levels[0].files, 0, "compact_range empties L0");

    let at_snap = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    for i in (0..2000).step_by(97) {
        assert_eq!(
            db.get_opt(&at_snap, &key(i)).unwrap().as_deref(),
            Some(&b"old"[..])
        );
        let latest = db.get(&key(i)).unwrap();
        if i % 2 == 0 {
            assert_eq!(latest, None);
        } else {
            assert_eq!(latest.as_deref(), Some(&b"new"[..]));
        }
    }
    assert_eq!(db.get_opt(&at_snap, b"only-new").unwrap(), None);

    let mut it = db.cursor(&at_snap).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), b"old");
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 2000);
    assert_eq!(db.stats().snapshots, 1);

    // Once the snapshot is gone, a full compaction drops the old versions and the
    // deletion markers: only the 1000 live keys plus "only-new" remain.
    drop(it);
    drop(at_snap);
    drop(snap);
    assert_eq!(db.stats().snapshots, 0);
    db.compact_range(None, None).unwrap();
    let report = db.verify().unwrap();
    assert_eq!(report.entries, 1001);
}

/// A flush writes of each key the newest version and, for each live snapshot, the newest
/// version that snapshot sees; the versions those hide never reach a table. Deletion
/// markers are kept.
#[test]
fn a_flush_keeps_only_the_versions_someone_can_read() {
    let dir = tempfile::tempdir().unwrap();
    // Two flushes stay below the default L0 trigger: no compaction merges them.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", b"a1").unwrap();
    db.put(b"a", b"a2").unwrap();
    let snap = db.snapshot();
    db.put(b"a", b"a3").unwrap();
    db.put(b"a", b"a4").unwrap();
    db.put(b"b", b"b1").unwrap();
    db.delete(b"b").unwrap();
    db.put(b"c", b"c1").unwrap();
    db.delete(b"c").unwrap();
    db.put(b"c", b"c2").unwrap();
    db.flush().unwrap();
    // a4, a2 (the snapshot's), b's deletion, c2.
    assert_eq!(db.verify().unwrap().entries, 4);
    let at = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt(&at, b"a").unwrap().as_deref(), Some(&b"a2"[..]));
    assert_eq!(db.get_opt(&at, b"b").unwrap(), None);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"a4"[..]));
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"c2"[..]));
    drop(snap);
    // Without snapshots: the newest version of each key only.
    db.put(b"d", b"d1").unwrap();
    db.put(b"d", b"d2").unwrap();
    db.flush().unwrap();
    assert_eq!(db.verify().unwrap().entries, 5);
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"d2"[..]));
}
