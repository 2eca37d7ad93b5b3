//! Write pacing under `isolated` placement (`placement_write_pace`): a table written to a
//! unit that already holds live tables is synced every `pace` bytes while it is written, so
//! no more than about that much of it is ever queued ahead of a read of the unit; a table
//! written to a unit with no live table, and every table under `striped` or with pacing
//! off, is synced once, when it is finished. Every value stays readable.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mezz_env::{FileLock, FileSystem, RandomAccessFile, WritableFile, WriteLifetime};
use mezzanine::{Db, Options, PlacementPolicy};

/// Per SST file: (syncs, the most bytes ever appended since its last sync).
type Log = Arc<Mutex<HashMap<PathBuf, (u32, u64)>>>;

#[derive(Debug)]
struct Tracked {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    unsynced: u64,
    log: Log,
}

impl WritableFile for Tracked {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.unsynced += data.len() as u64;
        let mut log = self.log.lock().unwrap();
        let e = log.entry(self.path.clone()).or_default();
        e.1 = e.1.max(self.unsynced);
        drop(log);
        self.inner.append(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.unsynced = 0;
        self.log
            .lock()
            .unwrap()
            .entry(self.path.clone())
            .or_default()
            .0 += 1;
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

/// Forwards to `inner`; SST files it creates note their syncs in `log`.
#[derive(Debug)]
struct Fs {
    inner: Arc<dyn FileSystem>,
    log: Log,
}

impl Fs {
    fn track(&self, path: &Path, f: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        if path.extension().is_none_or(|e| e != "sst") {
            return f;
        }
        Box::new(Tracked {
            inner: f,
            path: path.to_path_buf(),
            unsynced: 0,
            log: Arc::clone(&self.log),
        })
    }
}

impl FileSystem for Fs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.create(path)?;
        Ok(self.track(path, f))
    }
    fn create_with_hint(&self, path: &Path, l: WriteLifetime) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.create_with_hint(path, l)?;
        Ok(self.track(path, f))
    }
    fn create_direct(&self, path: &Path, l: WriteLifetime) -> io::Result<Box<dyn WritableFile>> {
        let f = self.inner.create_direct(path, l)?;
        Ok(self.track(path, f))
    }
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.create_log(path)
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

const PACE: u64 = 8 << 10;
const BLOCK: u64 = 4 << 10;

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes()
}

/// Writes enough over three units to compact onto units that hold live tables, checks that
/// the values read back, and returns the sync log.
fn run(placement: PlacementPolicy, pace: u64) -> HashMap<PathBuf, (u32, u64)> {
    let root = tempfile::tempdir().unwrap();
    let log: Log = Arc::default();
    let units: Vec<PathBuf> = (0..3).map(|i| root.path().join(format!("u{i}"))).collect();
    let mut o = Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        level0_compaction_trigger: 2,
        block_size: BLOCK as usize,
        ssd_paths: units,
        placement,
        placement_write_pace: pace,
        ..Options::default()
    };
    o.fs = Arc::new(Fs {
        inner: Arc::clone(&o.fs),
        log: Arc::clone(&log),
    });
    let db = Db::open(root.path().join("db"), o).unwrap();
    let value = vec![b'v'; 200];
    for i in 0..12_000 {
        db.put(&key(i), &value).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    for i in (0..12_000).step_by(13) {
        assert_eq!(
            db.get(&key(i)).unwrap().as_deref(),
            Some(&value[..]),
            "key {i}"
        );
    }
    drop(db);
    log.lock().unwrap().clone()
}

#[test]
fn isolated_syncs_a_table_on_a_unit_serving_reads_every_pace_bytes() {
    let log = run(PlacementPolicy::Isolated, PACE);
    let paced: Vec<_> = log.values().filter(|(syncs, _)| *syncs > 1).collect();
    assert!(!paced.is_empty(), "no table was paced: {log:?}");
    for (path, (syncs, most)) in &log {
        // A paced table syncs once its writes since the last sync reach the pace; they
        // come a block at a time, so one block (and its trailer) can pass it.
        if *syncs > 1 {
            assert!(
                *most <= PACE + BLOCK + 64,
                "{}: {most} bytes unsynced",
                path.display()
            );
        }
    }
    // Tables on units with no live table were written unpaced: some table is synced once
    // even though it is larger than the pace.
    assert!(
        log.values()
            .any(|(syncs, most)| *syncs == 1 && *most > 2 * PACE),
        "every table was paced: {log:?}"
    );
}

#[test]
fn without_isolation_or_with_pacing_off_every_table_is_synced_once() {
    for (placement, pace) in [
        (PlacementPolicy::Isolated, 0),
        (PlacementPolicy::Striped, PACE),
    ] {
        let log = run(placement, pace);
        assert!(!log.is_empty());
        for (path, (syncs, _)) in &log {
            assert_eq!(*syncs, 1, "{placement:?} pace {pace}: {}", path.display());
        }
    }
}
