//! A panic in a background job (here: the file system panics when a flush creates its
//! table) becomes the background error: `flush` and writes return it instead of waiting
//! for a thread that is gone, and reads go on.

#![allow(clippy::unwrap_used)] // test code

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mezz_env::{FaultFs, FaultOp, MemFs};
use mezzanine::{Db, Error, Options};

/// A `MemFs` whose table creations panic once the returned flag is set.
fn panicking_fs() -> (FaultFs, Arc<AtomicBool>) {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let armed = Arc::new(AtomicBool::new(false));
    let a = Arc::clone(&armed);
    fs.before_each(move |op, path| {
        if op == FaultOp::Create
            && a.load(Ordering::Acquire)
            && path.extension().is_some_and(|e| e == "sst")
        {
            panic!("injected panic creating {}", path.display());
        }
    });
    (fs, armed)
}

#[test]
fn a_panicking_flush_is_an_error_not_a_hang() {
    for jobs in [1, 2] {
        let (fs, armed) = panicking_fs();
        let opts = Options {
            fs: Arc::new(fs.clone()),
            max_background_jobs: jobs,
            ..Options::default()
        };
        let db = Db::open("/db", opts).unwrap();
        db.put(b"k", b"v").unwrap();
        armed.store(true, Ordering::Release);
        match db.flush() {
            Err(Error::Background(msg)) => {
                assert!(msg.contains("panicked"), "{jobs} jobs: {msg}");
            }
            other => panic!("{jobs} jobs: flush returned {other:?}"),
        }
        assert!(matches!(db.put(b"k2", b"v"), Err(Error::Background(_))));
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        armed.store(false, Ordering::Release);
        drop(db);
    }
}
