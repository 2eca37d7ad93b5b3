//! A panic in a background job (here: the file system panics when a flush creates its
//! table) becomes the background error: `flush` and writes return it instead of waiting
//! for a thread that is gone, and reads go on.

#![allow(clippy::unwrap_used)] // test code

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mezz_env::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile};
use mezzanine::{Db, Error, Options};

/// A `MemFs` whose table creations panic once `armed` is set.
#[derive(Debug, Clone)]
struct PanickingFs {
    inner: MemFs,
    armed: Arc<AtomicBool>,
}

impl PanickingFs {
    fn check(&self, path: &Path) {
        if self.armed.load(Ordering::Acquire) && path.extension().is_some_and(|e| e == "sst") {
            panic!("injected panic creating {}", path.display());
        }
    }
}

impl FileSystem for PanickingFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.check(path);
        self.inner.create(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.open_append(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_read(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

#[test]
fn a_panicking_flush_is_an_error_not_a_hang() {
    for jobs in [1, 2] {
        let fs = PanickingFs {
            inner: MemFs::new(),
            armed: Arc::new(AtomicBool::new(false)),
        };
        let opts = Options {
            fs: Arc::new(fs.clone()),
            max_background_jobs: jobs,
            ..Options::default()
        };
        let db = Db::open("/db", opts).unwrap();
        db.put(b"k", b"v").unwrap();
        fs.armed.store(true, Ordering::Release);
        match db.flush() {
            Err(Error::Background(msg)) => {
                assert!(msg.contains("panicked"), "{jobs} jobs: {msg}");
            }
            other => panic!("{jobs} jobs: flush returned {other:?}"),
        }
        assert!(matches!(db.put(b"k2", b"v"), Err(Error::Background(_))));
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        fs.armed.store(false, Ordering::Release);
        drop(db);
    }
}
