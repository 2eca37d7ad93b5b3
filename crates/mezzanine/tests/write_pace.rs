//! Write pacing under `isolated` placement (`placement_write_pace`): a table written to a
//! unit that already holds live tables is synced every `pace` bytes while it is written, so
//! no more than about that much of it is ever queued ahead of a read of the unit; a table
//! written to a unit with no live table, and every table under `striped` or with pacing
//! off, is synced once, when it is finished. Every value stays readable.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mezz_env::{FaultFs, FaultOp, FileSystem, MemFs};
use mezzanine::{Db, Options, PlacementPolicy};

/// Per SST file: its size at each of its syncs.
type Syncs = Arc<Mutex<HashMap<PathBuf, Vec<u64>>>>;

/// An in-memory file system that notes, at the start of every sync of an SST file, the
/// file's size then (a `MemFs` file's size is every byte appended so far).
fn noting_syncs() -> (Arc<dyn FileSystem>, Syncs) {
    let mem: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let fs = FaultFs::new(Arc::clone(&mem));
    let syncs: Syncs = Arc::default();
    let log = Arc::clone(&syncs);
    fs.before_each(move |op, path: &Path| {
        if op == FaultOp::Sync && path.extension().is_some_and(|e| e == "sst") {
            let size = mem.file_size(path).unwrap();
            log.lock()
                .unwrap()
                .entry(path.to_path_buf())
                .or_default()
                .push(size);
        }
    });
    (Arc::new(fs), syncs)
}

const PACE: u64 = 8 << 10;
const BLOCK: u64 = 4 << 10;

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes()
}

/// Writes enough over three units to compact onto units that hold live tables, checks that
/// the values read back, and returns per SST file (syncs, the most bytes ever appended
/// since its last sync).
fn run(placement: PlacementPolicy, pace: u64) -> HashMap<PathBuf, (u32, u64)> {
    let (fs, syncs) = noting_syncs();
    let units: Vec<PathBuf> = (0..3).map(|i| PathBuf::from(format!("/u{i}"))).collect();
    let o = Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        level0_compaction_trigger: 2,
        block_size: BLOCK as usize,
        ssd_paths: units,
        placement,
        placement_write_pace: pace,
        fs,
        ..Options::default()
    };
    let db = Db::open("/db", o).unwrap();
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
    let syncs = syncs.lock().unwrap();
    syncs
        .iter()
        .map(|(path, sizes)| {
            let most = sizes
                .iter()
                .scan(0, |last, &size| Some(size - std::mem::replace(last, size)))
                .max()
                .unwrap_or(0);
            (path.clone(), (sizes.len() as u32, most))
        })
        .collect()
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
