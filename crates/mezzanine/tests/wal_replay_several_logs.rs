//! Recovery replays every WAL at or above the manifest's log number, oldest first — not
//! just one. Flushes are made to fail (their manifest edit cannot be synced) so that several
//! memtables' WALs are left behind.

use std::path::Path;
use std::sync::Arc;

use mezz_env::{FaultFs, FaultOp, FaultRule, FileSystem, MemFs, Trigger};
use mezz_format::coding::put_varint32;
use mezzanine::internals::{WalWriter, seal_existing};
use mezzanine::{Db, Error, Options};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn only_wal(fs: &dyn FileSystem, dir: &Path) -> std::path::PathBuf {
    let logs: Vec<String> = fs
        .list_dir(dir)
        .expect("list the DB directory")
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    dir.join(&logs[0])
}

fn wal_count(fs: &dyn FileSystem, dir: &Path) -> usize {
    fs.list_dir(dir)
        .expect("list the DB directory")
        .iter()
        .filter(|n| n.ends_with(".log"))
        .count()
}

#[test]
fn wals_left_by_failed_flushes_are_replayed() {
    let mem: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let fault = Arc::new(FaultFs::new(Arc::clone(&mem)));
    let dir = Path::new("/db");
    let o = Options {
        fs: fault.clone(),
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 4,
        ..Options::default()
    };
    let db = Db::open(dir, o.clone()).unwrap();
    // From now on the manifest cannot be synced: every flush fails and its WAL stays.
    fault.add_rule(FaultRule::new(Some(FaultOp::Sync), Trigger::After(0)).on_path("MANIFEST"));
    let value = vec![b'v'; 200];
    let mut acked = 0u32;
    for i in 0..5000 {
        // Overwrite earlier keys too, so replay order matters: the last write must win.
        let k = key(i % 100);
        let mut v = value.clone();
        v.extend_from_slice(i.to_string().as_bytes());
        match db.put(&k, &v) {
            Ok(()) => acked = i + 1,
            Err(Error::Background(_)) => break,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(
        acked > 100,
        "the first memtable filled before the failed flush: {acked}"
    );
    drop(db);
    assert!(
        wal_count(mem.as_ref(), dir) >= 2,
        "several WALs are left for recovery"
    );

    fault.clear_rules();
    let db = Db::open(dir, o).unwrap();
    for k in 0..100u32 {
        // The newest acknowledged write of key k.
        let last = (0..acked).rev().find(|i| i % 100 == k).unwrap();
        let mut want = value.clone();
        want.extend_from_slice(last.to_string().as_bytes());
        assert_eq!(db.get(&key(k)).unwrap(), Some(want), "key {k}");
    }
    // Recovery wrote the replayed data to tables and deleted the old WALs.
    assert_eq!(wal_count(mem.as_ref(), dir), 1);
    assert!(db.stats().last_sequence >= u64::from(acked));
    assert!(db.verify().unwrap().tables >= 1);
}

/// A WAL record in the documented batch layout: sequence u64 LE | count u32 LE | records
/// `kind u8 | varint32 key length | key | [varint32 value length | value]`.
fn batch_record(seq: u64, ops: &[(&[u8], Option<&[u8]>)]) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&seq.to_le_bytes());
    r.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for (k, v) in ops {
        r.push(u8::from(v.is_some()));
        put_varint32(&mut r, k.len() as u32);
        r.extend_from_slice(k);
        if let Some(v) = v {
            put_varint32(&mut r, v.len() as u32);
            r.extend_from_slice(v);
        }
    }
    r
}

/// A database in memory at `/db` holding `puts` in its one WAL, closed, that WAL sealed
/// (as a switch would have) so newer WALs can follow it: the file system, the directory,
/// the options, and the last sequence number.
fn closed_db_with(puts: &[(&[u8], &[u8])]) -> (Arc<dyn FileSystem>, &'static Path, Options, u64) {
    let mem: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let o = Options {
        fs: Arc::clone(&mem),
        ..Options::default()
    };
    let db = Db::open(dir, o.clone()).expect("open");
    for (k, v) in puts {
        db.put(k, v).expect("put");
    }
    let seq = db.stats().last_sequence;
    db.close().expect("close");
    seal_existing(mem.as_ref(), &only_wal(mem.as_ref(), dir)).expect("seal the WAL");
    (mem, dir, o, seq)
}

#[test]
fn three_wals_are_replayed_oldest_first() {
    let (mem, dir, o, seq) = closed_db_with(&[
        (b"a", b"from-first-wal"),
        (b"b", b"from-first-wal"),
        (b"c", b"from-first-wal"),
    ]);

    // Two newer WALs, as a crash with two unflushed memtables would leave them: every
    // WAL but the newest sealed at its switch.
    let mut w = WalWriter::create(mem.as_ref(), dir, 1000, false).unwrap();
    w.append(
        &batch_record(seq + 1, &[(b"a", Some(b"second")), (b"d", Some(b"second"))]),
        true,
    )
    .unwrap();
    w.append(&batch_record(seq + 3, &[(b"b", None)]), true)
        .unwrap();
    w.seal().unwrap();
    w.sync().unwrap();
    drop(w);
    let mut w = WalWriter::create(mem.as_ref(), dir, 1001, false).unwrap();
    w.append(
        &batch_record(seq + 4, &[(b"a", Some(b"third")), (b"e", Some(b"third"))]),
        true,
    )
    .unwrap();
    drop(w);
    assert_eq!(wal_count(mem.as_ref(), dir), 3);

    let db = Db::open(dir, o.clone()).unwrap();
    let get = |k: &[u8]| db.get(k).unwrap();
    assert_eq!(get(b"a").as_deref(), Some(&b"third"[..]));
    assert_eq!(get(b"b"), None);
    assert_eq!(get(b"c").as_deref(), Some(&b"from-first-wal"[..]));
    assert_eq!(get(b"d").as_deref(), Some(&b"second"[..]));
    assert_eq!(get(b"e").as_deref(), Some(&b"third"[..]));
    assert_eq!(db.stats().last_sequence, seq + 5);
    // New writes get sequence numbers past the replayed ones, so they win.
    db.put(b"a", b"fourth").unwrap();
    drop(db);
    let db = Db::open(dir, o).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"fourth"[..]));
    assert_eq!(wal_count(mem.as_ref(), dir), 1, "replayed WALs are deleted");
}

/// A WAL older than the newest that ends without its END marker lost its tail (it was
/// never synced, and a power cut kept part of it): recovery keeps its records and stops
/// there, so no newer write survives an older lost one; under `AbsoluteConsistency` it is
/// a `Corruption`.
#[test]
fn an_older_wal_without_its_end_marker_ends_recovery() {
    let (mem, dir, o, seq) = closed_db_with(&[(b"a", b"first")]);

    // WAL 1000 lost its sealed tail: its first record survived, not its END marker.
    let mut w = WalWriter::create(mem.as_ref(), dir, 1000, false).unwrap();
    w.append(&batch_record(seq + 1, &[(b"b", Some(b"second"))]), true)
        .unwrap();
    drop(w);
    let mut w = WalWriter::create(mem.as_ref(), dir, 1001, false).unwrap();
    w.append(&batch_record(seq + 2, &[(b"c", Some(b"third"))]), true)
        .unwrap();
    drop(w);

    let strict = Options {
        recovery_mode: mezzanine::RecoveryMode::AbsoluteConsistency,
        ..o.clone()
    };
    match Db::open(dir, strict) {
        Err(Error::Corruption { file, .. }) => {
            assert_eq!(file.as_deref(), Some(&*dir.join("001000.log")));
        }
        other => panic!("expected a Corruption naming 001000.log, got {other:?}"),
    }

    let db = Db::open(dir, o).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(db.get(b"c").unwrap(), None, "a write after the lost tail");
    assert_eq!(db.stats().last_sequence, seq + 1);
}
