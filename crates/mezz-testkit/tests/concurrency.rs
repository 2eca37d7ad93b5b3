//! Concurrency test: 4 writer threads, 4 reader threads and a thread issuing manual flushes
//! and range compactions, on one database with tiny options, so flushes and compactions run
//! in the background all along. The work is bounded
//! by op counts, never by time.
//!
//! Writer `w` owns the keys `w<w>-<slot>-a` / `w<w>-<slot>-b` and writes each pair in one
//! batch with the same, increasing version number (some slots are also deleted, as a pair).
//! Readers check:
//! - monotonic reads: a key that is never deleted never shows an older version than the
//!   same reader saw before;
//! - atomic batches: an iterator (including one held open and walked slowly while tables
//!   are compacted away under it), or two gets at one snapshot, see both keys of a pair with
//!   the same version, or neither;
//!
//! and at the end every last acknowledged write is present, before and after a reopen.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use mezz_env::MemFs;
use mezzanine::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const WRITERS: usize = 4;
const READERS: usize = 4;
const SLOTS: usize = 32;
/// Slots `>= STABLE_SLOTS` are sometimes deleted; the others only ever grow in version.
const STABLE_SLOTS: usize = 24;
const BATCHES_PER_WRITER: u64 = 5_000;
const DIR: &str = "db";

fn options(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.fs = Arc::new(fs.clone());
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.level0_compaction_trigger = 2;
    o.block_size = 1024;
    o
}

fn pair_key(w: usize, slot: usize, half: char) -> Vec<u8> {
    format!("w{w}-{slot:02}-{half}").into_bytes()
}

fn pair_value(version: u64, pad: usize) -> Vec<u8> {
    let mut v = format!("v{version:010}:").into_bytes();
    v.resize(v.len() + pad, b'.');
    v
}

fn version_of(v: &[u8]) -> u64 {
    std::str::from_utf8(&v[1..11]).unwrap().parse().unwrap()
}

/// The final state one writer acknowledged: slot -> Some(version) or None (deleted).
type Acked = HashMap<usize, Option<u64>>;

fn writer(db: &Db, w: usize, start: &Barrier) -> Acked {
    let mut rng = StdRng::seed_from_u64(w as u64);
    let mut acked = Acked::new();
    start.wait();
    for version in 1..=BATCHES_PER_WRITER {
        let slot = rng.random_range(0..SLOTS);
        let mut b = WriteBatch::new();
        let delete = slot >= STABLE_SLOTS && rng.random_bool(0.3);
        if delete {
            b.delete(&pair_key(w, slot, 'a'));
            b.delete(&pair_key(w, slot, 'b'));
        } else {
            let v = pair_value(version, rng.random_range(0..300));
            b.put(&pair_key(w, slot, 'a'), &v);
            b.put(&pair_key(w, slot, 'b'), &v);
        }
        let sync = version % 97 == 0;
        db.write(&WriteOptions { sync }, b)
            .unwrap_or_else(|e| panic!("writer {w}, version {version}: {e}"));
        acked.insert(slot, (!delete).then_some(version));
    }
    acked
}

/// Gets of stable keys: versions never go backwards for this reader.
fn get_reader(db: &Db, r: usize, done: &AtomicBool, checks: &AtomicUsize) {
    let mut rng = StdRng::seed_from_u64(100 + r as u64);
    let mut seen: HashMap<Vec<u8>, u64> = HashMap::new();
    while !done.load(Ordering::Acquire) {
        for _ in 0..50 {
            let k = pair_key(
                rng.random_range(0..WRITERS),
                rng.random_range(0..STABLE_SLOTS),
                if rng.random_bool(0.5) { 'a' } else { 'b' },
            );
            let got = db
                .get(&k)
                .unwrap_or_else(|e| panic!("reader {r}: get: {e}"));
            let Some(v) = got else {
                assert!(
                    !seen.contains_key(&k),
                    "reader {r}: {} vanished",
                    String::from_utf8_lossy(&k)
                );
                continue;
            };
            let version = version_of(&v);
            let last = seen.entry(k.clone()).or_insert(version);
            assert!(
                version >= *last,
                "reader {r}: {} went back from version {} to {version}",
                String::from_utf8_lossy(&k),
                *last
            );
            *last = version;
            checks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Scans of one writer's range (forward or backward): pairs always agree.
fn scan_reader(db: &Db, r: usize, done: &AtomicBool, checks: &AtomicUsize) {
    let mut rng = StdRng::seed_from_u64(200 + r as u64);
    while !done.load(Ordering::Acquire) {
        let w = rng.random_range(0..WRITERS);
        let ro = ReadOptions {
            lower_bound: Some(format!("w{w}-").into_bytes()),
            upper_bound: Some(format!("w{w}.").into_bytes()),
            ..ReadOptions::default()
        };
        let reverse = rng.random_bool(0.5);
        let mut it = db.cursor(&ro).unwrap();
        let mut entries = Vec::new();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        while it.valid() {
            entries.push((it.key().to_vec(), it.value().to_vec()));
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()
            .unwrap_or_else(|e| panic!("reader {r}: scan: {e}"));
        if reverse {
            entries.reverse();
        }
        let mut by_slot: HashMap<String, Vec<(char, u64)>> = HashMap::new();
        for (k, v) in &entries {
            let k = String::from_utf8(k.clone()).unwrap();
            let (slot, half) = k.rsplit_once('-').unwrap();
            by_slot
                .entry(slot.to_string())
                .or_default()
                .push((half.chars().next().unwrap(), version_of(v)));
        }
        for (slot, halves) in by_slot {
            assert_eq!(
                halves.len(),
                2,
                "reader {r}: scan saw half a pair at {slot}: {halves:?}"
            );
            assert_eq!(
                halves[0].1, halves[1].1,
                "reader {r}: scan saw a torn batch at {slot}: {halves:?}"
            );
        }
        checks.fetch_add(1, Ordering::Relaxed);
    }
}

/// One iterator over everything, walked slowly while writers, flushes and compactions go
/// on (its tables must stay readable): pairs always agree; then a fresh one.
fn slow_iterator_reader(db: &Db, r: usize, done: &AtomicBool, checks: &AtomicUsize) {
    while !done.load(Ordering::Acquire) {
        let mut it = db.cursor(&ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut pending: Option<(Vec<u8>, u64)> = None;
        let mut n = 0;
        while it.valid() {
            let k = it.key().to_vec();
            let version = version_of(it.value());
            match pending.take() {
                Some((a, va)) if a[..a.len() - 1] == k[..k.len() - 1] => assert_eq!(
                    va,
                    version,
                    "reader {r}: held iterator saw a torn batch at {}",
                    String::from_utf8_lossy(&k)
                ),
                Some((a, _)) => panic!(
                    "reader {r}: held iterator saw half a pair at {}",
                    String::from_utf8_lossy(&a)
                ),
                None => pending = Some((k, version)),
            }
            n += 1;
            if n % 8 == 0 {
                thread::yield_now();
            }
            it.next();
        }
        it.status()
            .unwrap_or_else(|e| panic!("reader {r}: held iterator: {e}"));
        assert!(
            pending.is_none(),
            "reader {r}: held iterator ended on half a pair"
        );
        checks.fetch_add(1, Ordering::Relaxed);
    }
}

/// Two gets at one snapshot: pairs always agree.
fn snapshot_reader(db: &Db, r: usize, done: &AtomicBool, checks: &AtomicUsize) {
    let mut rng = StdRng::seed_from_u64(300 + r as u64);
    while !done.load(Ordering::Acquire) {
        let ro = ReadOptions {
            snapshot: Some(db.snapshot()),
            ..ReadOptions::default()
        };
        for _ in 0..20 {
            let (w, slot) = (rng.random_range(0..WRITERS), rng.random_range(0..SLOTS));
            let a = db.get_opt(&ro, &pair_key(w, slot, 'a')).unwrap();
            let b = db.get_opt(&ro, &pair_key(w, slot, 'b')).unwrap();
            assert_eq!(
                a.as_deref().map(version_of),
                b.as_deref().map(version_of),
                "reader {r}: snapshot saw a torn batch at w{w} slot {slot}"
            );
            checks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn check_final(db: &Db, acked: &[Acked], when: &str) {
    for (w, a) in acked.iter().enumerate() {
        for slot in 0..SLOTS {
            let want = a.get(&slot).copied().flatten();
            for half in ['a', 'b'] {
                let got = db.get(&pair_key(w, slot, half)).unwrap();
                assert_eq!(
                    got.as_deref().map(version_of),
                    want,
                    "{when}: writer {w} slot {slot}{half}: last acknowledged write missing"
                );
            }
        }
    }
}

#[test]
fn writers_and_readers_with_background_compaction() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open(DIR, options(&fs)).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(WRITERS));

    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let (db, done, checks) = (Arc::clone(&db), Arc::clone(&done), Arc::clone(&checks));
            thread::spawn(move || match r % 4 {
                0 => get_reader(&db, r, &done, &checks),
                1 => slow_iterator_reader(&db, r, &done, &checks),
                2 => scan_reader(&db, r, &done, &checks),
                _ => snapshot_reader(&db, r, &done, &checks),
            })
        })
        .collect();
    // Manual flushes and range compactions racing the background ones.
    let maintenance = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(999);
            let mut rounds = 0u32;
            while !done.load(Ordering::Acquire) {
                if rng.random_bool(0.5) {
                    db.flush().unwrap_or_else(|e| panic!("manual flush: {e}"));
                } else {
                    let w = rng.random_range(0..WRITERS);
                    let (a, b) = (
                        format!("w{w}-"),
                        format!("w{w}-{:02}", rng.random_range(0..SLOTS)),
                    );
                    db.compact_range(Some(a.as_bytes()), Some(b.as_bytes()))
                        .unwrap_or_else(|e| panic!("manual compaction: {e}"));
                }
                rounds += 1;
                thread::yield_now();
            }
            rounds
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, start) = (Arc::clone(&db), Arc::clone(&start));
            thread::spawn(move || writer(&db, w, &start))
        })
        .collect();
    let acked: Vec<Acked> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    done.store(true, Ordering::Release);
    for h in readers {
        h.join().unwrap();
    }
    assert!(maintenance.join().unwrap() > 0);
    assert!(checks.load(Ordering::Relaxed) > 0);

    check_final(&db, &acked, "after the writers");
    db.wait_for_background().unwrap();
    let stats = db.stats();
    assert!(stats.flushes > 0, "tiny options should have flushed");
    assert!(stats.compactions > 0, "tiny options should have compacted");
    db.verify().unwrap();
    db.close().unwrap();
    drop(db);

    let db = Db::open(DIR, options(&fs)).unwrap();
    check_final(&db, &acked, "after reopen");
    db.compact_range(None, None).unwrap();
    check_final(&db, &acked, "after a full compaction");
    db.verify().unwrap();
}

/// Many threads calling `put` with `sync` at once (group commit): every acknowledged write
/// is readable, and survives a power cut (only synced data kept).
#[test]
fn concurrent_synced_writes_survive_a_power_cut() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open(DIR, options(&fs)).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let db = Arc::clone(&db);
            thread::spawn(move || {
                for i in 0..200u64 {
                    let k = format!("t{t}-{i:04}");
                    db.put_opt(
                        &WriteOptions { sync: true },
                        k.as_bytes(),
                        &pair_value(i, 8),
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let crashed = fs.crash_clone(&mezz_env::CrashOptions {
        keep_unsynced: mezz_env::KeepUnsynced::None,
        seed: 1,
    });
    drop(db);
    let db = Db::open(DIR, options(&crashed)).unwrap();
    for t in 0..8 {
        for i in 0..200u64 {
            let k = format!("t{t}-{i:04}");
            let got = db.get(k.as_bytes()).unwrap();
            assert_eq!(
                got.as_deref().map(version_of),
                Some(i),
                "{k} lost after a power cut"
            );
        }
    }
}
