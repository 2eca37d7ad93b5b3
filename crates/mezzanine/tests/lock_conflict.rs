//! A second handle on an open database is refused with `Error::Locked`; closing (or
//! dropping) the first handle releases the LOCK.

use mezzanine::{Db, Error, Options};

#[test]
fn second_open_in_the_same_process_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::Locked(p)) => assert_eq!(p, dir.path()),
        other => panic!("expected Locked, got {other:?}"),
    }
    // The failed open did not disturb the first handle.
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    assert!(matches!(db.get(b"k"), Err(Error::Closed)));
    assert!(matches!(db.put(b"k", b"w"), Err(Error::Closed)));

    let db2 = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db2.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db2);
    // Dropping releases the lock too.
    Db::open(dir.path(), Options::default()).unwrap();
}
