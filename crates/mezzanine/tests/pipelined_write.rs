//! Groups are inserted outside the write lock (a pipelined write) and published in order:
//! a snapshot sees every write numbered up to its sequence, and no memtable switch or
//! flush loses a write still being inserted.
#![allow(clippy::unwrap_used)] // in the helpers of the test below

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mezzanine::{Db, Options, ReadOptions};

const WRITERS: usize = 3;
const PUTS: usize = 3000;

/// Rounds of the test below, each on a new database: a publication out of order shows in
/// a round only if a snapshot falls into it.
const ROUNDS: usize = 15;

#[test]
fn every_write_up_to_a_snapshot_is_visible_in_it() {
    for _ in 0..ROUNDS {
        one_round();
    }
}

fn one_round() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        // Small memtables: many switches and flushes while groups are being inserted.
        write_buffer_size: 128 << 10,
        target_file_size: 128 << 10,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    // Every put is one batch of one new key: one sequence number each.
    let base = db.snapshot().sequence();
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for i in 0..PUTS {
                    db.put(format!("w{w}-{i:05}").as_bytes(), &[b'v'; 40])
                        .unwrap();
                }
            })
        })
        .collect();
    let reader = {
        let db = Arc::clone(&db);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut checks = 0;
            while !done.load(Ordering::Acquire) || checks == 0 {
                let snap = db.snapshot();
                let at = ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..ReadOptions::default()
                };
                let seen = common::count(&db, &at);
                assert_eq!(
                    seen,
                    snap.sequence() - base,
                    "a snapshot at sequence {} misses writes numbered below it",
                    snap.sequence()
                );
                checks += 1;
            }
            checks
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Release);
    let checks = reader.join().unwrap();
    assert!(checks > 0);
    let total = (WRITERS * PUTS) as u64;
    assert_eq!(db.snapshot().sequence() - base, total);
    assert_eq!(common::count(&db, &ReadOptions::default()), total);
    // Nothing was lost to a switch or a flush: all there after a reopen too.
    db.flush().unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(common::count(&db, &ReadOptions::default()), total);
}
