//! A `sync` write is durable together with every write before it, even when earlier writes
//! sit in WALs of switched-out memtables whose sync was still pending (they are synced off
//! the write path). A power cut right after the `sync` write returns must keep them all,
//! and recovery must open cleanly.

use std::sync::Arc;

use mezz_env::{
    CrashOptions, FaultFs, FaultOp, FaultRule, FileSystem, KeepUnsynced, MemFs, Trigger,
};
use mezzanine::{Db, Options, WriteOptions};

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()) as Arc<dyn FileSystem>,
        write_buffer_size: 16 << 10,
        ..Options::default()
    }
}

#[test]
fn sync_write_keeps_all_earlier_writes_across_wal_switches() {
    for seed in 0..20u64 {
        let fs = MemFs::new();
        let db = Db::open("/db", opts(&fs)).unwrap();
        // Enough unsynced writes for several memtable (and WAL) switches.
        let n = 400 + seed * 37;
        for i in 0..n {
            db.put(format!("k{i:05}").as_bytes(), &[b'v'; 200]).unwrap();
        }
        db.put_opt(&WriteOptions { sync: true }, b"last", b"synced")
            .unwrap();
        // Power cut: only synced bytes (and synced directory entries) survive.
        let crashed = fs.crash_clone(&CrashOptions {
            keep_unsynced: KeepUnsynced::None,
            seed,
        });
        drop(db);
        let db = Db::open("/db", opts(&crashed)).unwrap();
        assert_eq!(
            db.get(b"last").unwrap().as_deref(),
            Some(&b"synced"[..]),
            "seed {seed}"
        );
        for i in 0..n {
            assert!(
                db.get(format!("k{i:05}").as_bytes()).unwrap().is_some(),
                "seed {seed}: k{i:05} lost although a later sync write was acknowledged"
            );
        }
        db.close().unwrap();
    }
}

#[test]
fn power_cut_without_sync_recovers_a_prefix() {
    for seed in 0..20u64 {
        let fs = MemFs::new();
        let db = Db::open("/db", opts(&fs)).unwrap();
        let n = 300 + seed * 41;
        for i in 0..n {
            db.put(format!("k{i:05}").as_bytes(), &[b'v'; 200]).unwrap();
        }
        let crashed = fs.crash_clone(&CrashOptions {
            keep_unsynced: KeepUnsynced::RandomPrefix,
            seed,
        });
        drop(db);
        // Opens cleanly (a torn older WAL is a point-in-time end, not corruption) ...
        let db = Db::open("/db", opts(&crashed)).unwrap();
        // ... and what survived is a prefix of the writes.
        let present: Vec<bool> = (0..n)
            .map(|i| db.get(format!("k{i:05}").as_bytes()).unwrap().is_some())
            .collect();
        let k = present.iter().take_while(|p| **p).count();
        assert!(
            present[k..].iter().all(|p| !p),
            "seed {seed}: survivors are not a prefix (first gap at {k})"
        );
        db.close().unwrap();
    }
}

/// Regression (crash campaign seed 7889101056834849533): `close` syncs the WAL of a
/// switched-out memtable and then the active one. When the older log's sync failed, close
/// still synced the newer log, so a power cut kept the later writes and lost earlier ones.
/// Now no log is synced after a failed one: what survives is still a prefix.
#[test]
fn failed_sync_of_an_older_wal_at_close_leaves_a_prefix() {
    for seed in 0..10u64 {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let db = Db::open(
            "/db",
            Options {
                fs: Arc::new(fault.clone()) as Arc<dyn FileSystem>,
                write_buffer_size: 16 << 10,
                manual_background: true,
                ..Options::default()
            },
        )
        .unwrap();
        let logs = |fs: &MemFs| {
            fs.list_dir(std::path::Path::new("/db"))
                .unwrap()
                .iter()
                .filter(|n| n.ends_with(".log"))
                .count()
        };
        // Unsynced writes until the memtable (and its WAL) is switched once, then more
        // writes into the new WAL; the flush of the old memtable never runs.
        let mut n = 0u64;
        while logs(&mem) < 2 {
            db.put(format!("k{n:05}").as_bytes(), &[b'v'; 200]).unwrap();
            n += 1;
        }
        let extra = 5 + seed * 7;
        for _ in 0..extra {
            db.put(format!("k{n:05}").as_bytes(), &[b'v'; 200]).unwrap();
            n += 1;
        }
        // The first sync at close is the older WAL's: it fails.
        fault.add_rule(FaultRule::new(Some(FaultOp::Sync), Trigger::Once(0)).on_path(".log"));
        assert!(
            db.close().is_err(),
            "seed {seed}: the failed sync is reported"
        );
        let crashed = mem.crash_clone(&CrashOptions {
            keep_unsynced: KeepUnsynced::None,
            seed,
        });
        drop(db);
        let db = Db::open("/db", opts(&crashed)).unwrap();
        let present: Vec<bool> = (0..n)
            .map(|i| db.get(format!("k{i:05}").as_bytes()).unwrap().is_some())
            .collect();
        let k = present.iter().take_while(|p| **p).count();
        assert!(
            present[k..].iter().all(|p| !p),
            "seed {seed}: survivors are not a prefix (first gap at {k} of {n})"
        );
        db.close().unwrap();
    }
}
