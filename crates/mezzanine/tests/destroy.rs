//! `destroy_db` (LevelDB's `DestroyDB`): removes what the engine wrote and the directory if
//! nothing else is left; refuses an open database; leaves files it does not know.

use mezzanine::{Db, Error, Options, destroy_db};

#[test]
fn destroy_removes_the_database_and_its_directory() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    let opts = Options {
        create_if_missing: true,
        ..Options::default()
    };
    let db = Db::open(&dir, opts.clone()).unwrap();
    for i in 0..1000u32 {
        db.put(format!("k{i}").as_bytes(), &[7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    // Open: refused, nothing removed.
    assert!(matches!(destroy_db(&dir, &opts), Err(Error::Locked(_))));
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&[7u8; 100][..]));
    db.close().unwrap();
    destroy_db(&dir, &opts).unwrap();
    assert!(!dir.exists());
    // A missing directory is not an error; a new database starts empty.
    destroy_db(&dir, &opts).unwrap();
    let db = Db::open(&dir, opts.clone()).unwrap();
    assert_eq!(db.get(b"k1").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn destroy_keeps_files_it_does_not_know_and_their_directory() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    let opts = Options {
        create_if_missing: true,
        ..Options::default()
    };
    Db::open(&dir, opts.clone()).unwrap().close().unwrap();
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    destroy_db(&dir, &opts).unwrap();
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["notes.txt"]);
}
