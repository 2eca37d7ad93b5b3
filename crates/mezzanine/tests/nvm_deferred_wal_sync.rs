//! NoveLSM's mutable NVM memtable takes writes before the WAL it follows is durable: the
//! flush thread syncs that WAL just after the switch, off the write path. What users rely
//! on, checked after simulated power cuts (files keep only synced bytes, or a random
//! prefix of the rest; NVM keeps what was persisted):
//! - what survives is always a prefix of the writes (no write kept after a lost one);
//! - a `sync` write into the NVM memtable is durable together with every write before it;
//! - once the older WAL is synced, writes into the NVM memtable survive a power cut;
//! - under `AbsoluteConsistency` writes wait for the older WAL (nothing is dropped), and a
//!   database whose NVM memtable follows a lost WAL tail does not open in that mode.

#![allow(clippy::unwrap_used)] // helpers shared by the tests below

mod common;

use common::{ordered_key as key, sim_nvm_options};
use mezz_env::{CrashOptions, FileSystem, KeepUnsynced, MemFs};
use mezz_pmem::{KeepLines, PowerCut, SimNvm};
use mezzanine::options::RecoveryMode;
use mezzanine::{Db, Error, Options, WriteOptions};

fn opts(fs: &MemFs, sim: &SimNvm, manual: bool) -> Options {
    Options {
        write_buffer_size: 32 << 10,
        // Without background threads nothing syncs the switched-out WAL behind the
        // writer's back: the power cut finds it as the writes left it.
        manual_background: manual,
        ..sim_nvm_options(fs, sim)
    }
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(100)).into_bytes()
}

/// Writes (unsynced) until the memtable has switched to an NVM one and `after` writes went
/// into it; returns how many writes were made.
fn write_into_nvm_memtable(db: &Db, after: u64) -> u64 {
    write_into_nth_nvm_memtable(db, 1, after, |_| {})
}

/// Writes (unsynced) until the `nth` NVM memtable (DRAM and NVM memtables alternate) took
/// `after` writes, calling `on_switch(k)` after the first write into the `k`th; returns how
/// many writes were made. Without background threads only writes into NVM memtables (and
/// their creation) write to NVM.
fn write_into_nth_nvm_memtable(db: &Db, nth: u64, after: u64, on_switch: impl Fn(u64)) -> u64 {
    let mut last = db.stats().nvm_bytes_written;
    let (mut n, mut phase, mut in_nvm, mut was_nvm) = (0, 0, 0, false);
    while phase < nth || in_nvm < after {
        db.put(&key(n), &value(n)).unwrap();
        n += 1;
        let now = db.stats().nvm_bytes_written;
        let is_nvm = now > last;
        last = now;
        if is_nvm && !was_nvm {
            phase += 1;
            in_nvm = 0;
            on_switch(phase);
        }
        if is_nvm {
            in_nvm += 1;
        }
        was_nvm = is_nvm;
        assert!(n < 200_000, "the writes did not reach NVM memtable {nth}");
    }
    n
}

/// Cuts the power: files keep what `keep` says, NVM keeps what was persisted.
fn power_cut(fs: &MemFs, sim: &SimNvm, keep: KeepUnsynced, seed: u64) -> (MemFs, SimNvm) {
    let fs2 = fs.crash_clone(&CrashOptions {
        keep_unsynced: keep,
        seed,
    });
    let sim2 = sim.power_cut(&PowerCut {
        keep_unpersisted: KeepLines::None,
        seed,
    });
    (fs2, sim2)
}

/// Opens a database with `o` on fresh media, writes until the NVM memtable took `after`
/// writes, and cuts the power (files keep what `keep` says); returns the media as the cut
/// left them and how many writes were made.
fn cut_after_nvm_writes(
    o: impl Fn(&MemFs, &SimNvm) -> Options,
    after: u64,
    keep: KeepUnsynced,
    seed: u64,
) -> (MemFs, SimNvm, u64) {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let db = Db::open("/db", o(&fs, &sim)).unwrap();
    let n = write_into_nvm_memtable(&db, after);
    let (fs2, sim2) = power_cut(&fs, &sim, keep, seed);
    drop(db);
    (fs2, sim2, n)
}

/// How many of the first `n` writes survived, asserting that they are a prefix.
fn surviving_prefix(db: &Db, n: u64, what: &str) -> u64 {
    let present: Vec<bool> = (0..n)
        .map(|i| match db.get(&key(i)).unwrap() {
            Some(v) => {
                assert_eq!(v, value(i), "{what}: key {i} has a wrong value");
                true
            }
            None => false,
        })
        .collect();
    let k = present.iter().take_while(|p| **p).count();
    assert!(
        present[k..].iter().all(|p| !p),
        "{what}: the surviving writes are not a prefix (first gap at {k} of {n}, later ones kept)"
    );
    k as u64
}

#[test]
fn a_power_cut_before_the_older_wal_is_synced_keeps_a_prefix() {
    for seed in 0..12u64 {
        for keep in [KeepUnsynced::None, KeepUnsynced::RandomPrefix] {
            let what = format!("seed {seed}, {keep:?}");
            let manual = |fs: &MemFs, sim: &SimNvm| opts(fs, sim, true);
            let (fs2, sim2, n) = cut_after_nvm_writes(manual, 5 + seed * 3, keep, seed);
            let db = Db::open("/db", opts(&fs2, &sim2, true))
                .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let k = surviving_prefix(&db, n, &what);
            let dropped = db.stats().nvm_memtables_dropped_at_open;
            if keep == KeepUnsynced::None {
                // Nothing of the first WAL was synced: its writes are gone, and so are the
                // NVM memtable's, which came after them.
                assert_eq!(k, 0, "{what}");
                assert_eq!(dropped, 1, "{what}: the NVM memtable is dropped");
            }
            if dropped == 0 {
                assert_eq!(
                    k, n,
                    "{what}: the WAL survived whole, so must the NVM writes"
                );
            }
            // The database goes on from the recovered state.
            db.put(b"after", b"reopen").unwrap();
            db.close().unwrap();
            let db = Db::open("/db", opts(&fs2, &sim2, true)).unwrap();
            assert_eq!(surviving_prefix(&db, n, &what), k);
            assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"reopen"[..]));
            db.close().unwrap();
        }
    }
}

/// The WAL between two NVM memtables was created by a switch, and its directory entry is
/// synced only with the directory: it must be durable before the second NVM memtable takes
/// writes, or a power cut would remove that WAL without a trace of its lost writes (and
/// keep the second NVM memtable's writes after them).
#[test]
fn a_power_cut_after_a_second_switch_into_nvm_keeps_a_prefix() {
    for seed in 0..8u64 {
        for keep in [KeepUnsynced::None, KeepUnsynced::RandomPrefix] {
            let what = format!("seed {seed}, {keep:?}");
            let (fs, sim) = (MemFs::new(), SimNvm::new());
            // Room for every memtable, so that no writer stalls and runs a flush (whose
            // table write would sync the directory, the WAL's entry with it).
            let small_nvm = |fs: &MemFs, sim: &SimNvm| Options {
                nvm_memtable_size: 128 << 10,
                max_write_buffer_number: 6,
                ..opts(fs, sim, true)
            };
            let db = Db::open("/db", small_nvm(&fs, &sim)).unwrap();
            // The first WAL is synced once writes go to the first NVM memtable (the job
            // the flush thread would run): only the WAL after that memtable can lose writes.
            let n = write_into_nth_nvm_memtable(&db, 2, 3 + seed, |k| {
                if k == 1 {
                    assert_eq!(db.run_background_work(1).unwrap(), 1);
                }
            });
            assert!(
                fs.list_dir(std::path::Path::new("/db")).unwrap().len() >= 2,
                "{what}: no WAL after the first NVM memtable"
            );
            let (fs2, sim2) = power_cut(&fs, &sim, keep, seed);
            drop(db);
            let db = Db::open("/db", small_nvm(&fs2, &sim2))
                .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            surviving_prefix(&db, n, &what);
            db.close().unwrap();
        }
    }
}

#[test]
fn a_sync_write_into_the_nvm_memtable_makes_every_earlier_write_durable() {
    for seed in 0..6u64 {
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let db = Db::open("/db", opts(&fs, &sim, true)).unwrap();
        let mut n = write_into_nvm_memtable(&db, 3 + seed);
        db.put_opt(&WriteOptions { sync: true }, &key(n), &value(n))
            .unwrap();
        n += 1;
        let (fs2, sim2) = power_cut(&fs, &sim, KeepUnsynced::None, seed);
        drop(db);
        let db = Db::open("/db", opts(&fs2, &sim2, true)).unwrap();
        assert_eq!(surviving_prefix(&db, n, &format!("seed {seed}")), n);
        assert_eq!(db.stats().nvm_memtables_dropped_at_open, 0);
        db.close().unwrap();
    }
}

#[test]
fn writes_into_the_nvm_memtable_survive_once_the_flush_thread_synced_the_older_wal() {
    for seed in 0..4u64 {
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let db = Db::open("/db", opts(&fs, &sim, false)).unwrap();
        let mut n = write_into_nvm_memtable(&db, 1);
        // The switch started the flush thread: it syncs the older WAL first, then flushes
        // that WAL's memtable.
        db.wait_for_background().unwrap();
        for _ in 0..20 + seed * 10 {
            db.put(&key(n), &value(n)).unwrap();
            n += 1;
        }
        let (fs2, sim2) = power_cut(&fs, &sim, KeepUnsynced::None, seed);
        drop(db);
        let db = Db::open("/db", opts(&fs2, &sim2, true)).unwrap();
        assert_eq!(surviving_prefix(&db, n, &format!("seed {seed}")), n);
        assert_eq!(db.stats().nvm_memtables_dropped_at_open, 0);
        db.close().unwrap();
    }
}

#[test]
fn under_absolute_consistency_nvm_writes_wait_for_the_older_wal() {
    let absolute = |fs: &MemFs, sim: &SimNvm| Options {
        recovery_mode: RecoveryMode::AbsoluteConsistency,
        ..opts(fs, sim, true)
    };
    // Written under the strict mode: nothing is lost, nothing dropped.
    let (fs2, sim2, n) = cut_after_nvm_writes(absolute, 10, KeepUnsynced::None, 1);
    let db = Db::open("/db", absolute(&fs2, &sim2)).unwrap();
    assert_eq!(surviving_prefix(&db, n, "absolute"), n);
    db.close().unwrap();

    // Written under the default mode (writes did not wait), reopened under the strict one:
    // the lost WAL tail before the NVM memtable is an error, not a silent drop.
    let manual = |fs: &MemFs, sim: &SimNvm| opts(fs, sim, true);
    let (fs2, sim2, _) = cut_after_nvm_writes(manual, 10, KeepUnsynced::None, 2);
    match Db::open("/db", absolute(&fs2, &sim2)) {
        Err(Error::Corruption { .. }) => {}
        Err(e) => panic!("expected a Corruption error, got {e}"),
        Ok(_) => panic!("a lost WAL tail before an NVM memtable opened under AbsoluteConsistency"),
    }
}
