//! Reopening a database returns everything written before, whether it was still only in
//! the WAL or already flushed to tables.

use mezzanine::{Db, Options};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat((i % 50) as usize)).into_bytes()
}

fn check(db: &Db, n: u32, round: u32) {
    for i in 0..n {
        let want = (i % 7 != 0).then(|| value(i, round));
        assert_eq!(db.get(&key(i)).expect("get"), want, "key {i}");
    }
}

fn write(db: &Db, n: u32, round: u32) {
    for i in 0..n {
        db.put(&key(i), &value(i, round)).expect("put");
    }
    for i in (0..n).step_by(7) {
        db.delete(&key(i)).expect("delete");
    }
}

#[test]
fn reopen_without_flush_replays_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        write(&db, 2000, 1);
        check(&db, 2000, 1);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check(&db, 2000, 1);
    // Sequence numbers continue past the recovered ones: newer writes win.
    write(&db, 2000, 2);
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check(&db, 2000, 2);
    db.verify().unwrap();
}

#[test]
fn reopen_after_flush_reads_tables() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        write(&db, 3000, 1);
        db.flush().unwrap();
        assert!(db.stats().levels[0].files >= 1);
        // Some writes after the flush stay in the WAL only.
        for i in 0..100 {
            db.put(&key(i), &value(i, 9)).unwrap();
        }
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..3000 {
        let want = if i < 100 {
            Some(value(i, 9))
        } else {
            (i % 7 != 0).then(|| value(i, 1))
        };
        assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
    }
    let report = db.verify().unwrap();
    assert!(report.tables >= 1);
}

#[test]
fn close_without_wal_flushes_the_memtable() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        use_wal: false,
        ..Options::default()
    };
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        write(&db, 500, 1);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), o).unwrap();
    check(&db, 500, 1);
    let logs = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert_eq!(logs, 0, "no WAL is written when use_wal is false");
}
