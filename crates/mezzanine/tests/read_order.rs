//! Reads take the first version they find, consulting the active memtable, the immutable
//! ones, the NVM ones and then the tables: that is right only while every container holds
//! older data than the one consulted before it. These tests drive the paths that once broke
//! the rule (a switch of `nvm_memtable` mode at reopen, an immutable memtable that cannot
//! be merged into the NVM receiver, a full NVM pool, a merge under a positioned iterator)
//! with deterministic background work (`manual_background`), so each one fails the same
//! way every time if the rule breaks again.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use mezz_env::MemFs;
use mezz_pmem::SimNvm;
use mezzanine::options::{NvmMemtable, PersistMode};
use mezzanine::{Db, Options, Preset, ReadOptions};

/// NoveLSM with a simulated pool on `fs`/`sim`, small sizes, no background threads.
fn manual(mode: NvmMemtable, fs: &MemFs, sim: &SimNvm) -> Options {
    let mut o = Options::preset(Preset::Novelsm);
    o.fs = Arc::new(fs.clone());
    o.nvm_dir = Some("/nvm".into());
    o.nvm_persistence = PersistMode::CrashSim;
    o.nvm_sim = Some(sim.clone());
    o.nvm_prefault = false;
    o.nvm_memtable = mode;
    o.write_buffer_size = 16 << 10;
    o.nvm_memtable_size = 256 << 10;
    o.nvm_capacity = 8 << 20;
    o.target_file_size = 16 << 10;
    o.max_bytes_for_level_base = 64 << 10;
    o.manual_background = true;
    o
}

fn filler(db: &Db, tag: &str, bytes: usize) {
    for i in 0..bytes / 1000 {
        db.put(format!("f-{tag}-{i:05}").as_bytes(), &[b'x'; 1000])
            .unwrap();
    }
}

fn value(db: &Db, key: &[u8]) -> Option<Vec<u8>> {
    db.get(key).unwrap()
}

/// `k` reads `want` now, after all background work, and after a reopen under `o`.
fn newest_survives(db: Db, o: &Options, want: &[u8]) {
    assert_eq!(value(&db, b"k").as_deref(), Some(want));
    db.wait_for_background().unwrap();
    assert_eq!(value(&db, b"k").as_deref(), Some(want));
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", o.clone()).unwrap();
    assert_eq!(value(&db, b"k").as_deref(), Some(want));
}

/// Every key with its value, by a forward scan.
fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut m = BTreeMap::new();
    while it.valid() {
        m.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    m
}

/// Mutable mode leaves an older DRAM memtable (its WAL kept) beside a newer NVM memtable;
/// reopened in immutable mode, the DRAM memtable is merged into a new NVM receiver while
/// the newer NVM memtable still waits above it. That NVM memtable must not reach L0 while
/// the receiver, holding older data, is still consulted before L0.
#[test]
fn mutable_then_immutable_keeps_the_newest_value() {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let db = Db::open("/db", manual(NvmMemtable::Mutable, &fs, &sim)).unwrap();
    db.put(b"k", b"v1").unwrap();
    // Fill the DRAM memtable: the next write switches to an NVM memtable (mutable mode).
    filler(&db, "a", 20 << 10);
    assert_eq!(db.stats().immutable_memtables, 1, "the DRAM memtable waits");
    db.put(b"k", b"v2").unwrap();
    db.close().unwrap();

    let db = Db::open("/db", manual(NvmMemtable::Immutable, &fs, &sim)).unwrap();
    assert_eq!(value(&db, b"k").as_deref(), Some(&b"v2"[..]));
    db.wait_for_background().unwrap();
    assert_eq!(value(&db, b"k").as_deref(), Some(&b"v2"[..]));
    assert_eq!(
        scan(&db).get(&b"k"[..]).map(Vec::as_slice),
        Some(&b"v2"[..])
    );
    db.compact_range(None, None).unwrap();
    assert_eq!(value(&db, b"k").as_deref(), Some(&b"v2"[..]));
    db.close().unwrap();
    let db = Db::open("/db", manual(NvmMemtable::Immutable, &fs, &sim)).unwrap();
    assert_eq!(value(&db, b"k").as_deref(), Some(&b"v2"[..]));
}

fn wal_files(fs: &MemFs) -> usize {
    wal_names(fs).len()
}

/// The names of the WAL files in `/db`.
fn wal_names(fs: &MemFs) -> Vec<String> {
    use mezz_env::FileSystem;
    fs.list_dir(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect()
}

/// Overflow mode: a full DRAM memtable hands over to a new DRAM memtable (and WAL) while
/// the DRAM memtables have room, and to an NVM memtable only when they are all taken
/// (`max_write_buffer_number`, flushes held back here). The newest value is read from the
/// NVM memtable above two older DRAM ones, after their flush, and after a reopen; later,
/// with the DRAM memtables flushed, a full NVM memtable hands back to DRAM.
#[test]
fn overflow_goes_to_nvm_only_when_the_dram_memtables_are_taken() {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let o = manual(NvmMemtable::Overflow, &fs, &sim);
    assert_eq!(o.max_write_buffer_number, 2);
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"k", b"v1").unwrap();
    assert_eq!(wal_files(&fs), 1);
    // The first switch: one DRAM memtable waits, the new active one is DRAM too (a WAL).
    filler(&db, "a", 20 << 10);
    assert_eq!(db.stats().immutable_memtables, 1);
    assert_eq!(
        wal_files(&fs),
        2,
        "a DRAM memtable and its WAL while DRAM has room"
    );
    db.put(b"k", b"v2").unwrap();
    // The second: both DRAM memtables taken, so an NVM memtable (no new WAL) instead of a
    // stall.
    filler(&db, "b", 20 << 10);
    assert_eq!(db.stats().immutable_memtables, 2);
    assert_eq!(wal_files(&fs), 2, "an NVM memtable takes no WAL");
    assert_eq!(db.stats().stalls.memtable_stop_micros, 0);
    db.put(b"k", b"v3").unwrap();
    assert_eq!(value(&db, b"k").as_deref(), Some(&b"v3"[..]));
    db.wait_for_background().unwrap();
    assert_eq!(db.stats().immutable_memtables, 0);
    assert_eq!(value(&db, b"k").as_deref(), Some(&b"v3"[..]));
    // DRAM has room again: the NVM memtable, once full, hands over to a DRAM one.
    filler(&db, "c", 300 << 10);
    db.put(b"k", b"v4").unwrap();
    newest_survives(db, &o, b"v4");
}

/// `overflow` with `nvm_memtable_large_entry`: with the flushes kept up (DRAM always has
/// room), DRAM memtables of large entries hand over to NVM memtables, which take no WAL,
/// while small entries keep to DRAM memtables and their WALs, as with the rule off. The
/// newest value wins across them, after all background work and a reopen.
#[test]
fn overflow_hands_large_entries_to_nvm_while_dram_has_room() {
    // The WALs made while `value_len`-byte entries are written with the flushes kept up.
    let wals_made = |large_entry: usize, value_len: usize| {
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let mut o = manual(NvmMemtable::Overflow, &fs, &sim);
        o.nvm_memtable_large_entry = large_entry;
        let db = Db::open("/db", o.clone()).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..(600 << 10) / value_len {
            db.put(format!("f-{i:06}").as_bytes(), &vec![b'x'; value_len])
                .unwrap();
            if i % 97 == 0 {
                db.put(b"k", format!("v{i}").as_bytes()).unwrap();
            }
            if db.stats().immutable_memtables > 0 {
                db.wait_for_background().unwrap();
            }
            seen.extend(wal_names(&fs));
            assert_eq!(db.stats().stalls.memtable_stop_micros, 0);
        }
        db.put(b"k", b"last").unwrap();
        newest_survives(db, &o, b"last");
        seen.len()
    };
    let (large_on, large_off) = (wals_made(900, 1000), wals_made(0, 1000));
    assert!(
        large_on * 4 < large_off,
        "1000-byte entries: {large_on} WALs with the rule, {large_off} without"
    );
    assert_eq!(
        wals_made(900, 100),
        wals_made(0, 100),
        "100-byte entries keep to DRAM memtables"
    );
}

/// Immutable mode: a memtable too large for the receiver goes to L0 directly; the older
/// data in the receiver must reach L0 before it.
#[test]
fn a_memtable_too_large_for_the_receiver_does_not_hide_behind_it() {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let mut o = manual(NvmMemtable::Immutable, &fs, &sim);
    o.nvm_memtable_size = 64 << 10;
    o.write_buffer_size = 128 << 10;
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"k", b"v1").unwrap();
    db.flush().unwrap();
    db.put(b"k", b"v2").unwrap();
    filler(&db, "a", 100 << 10);
    db.flush().unwrap();
    newest_survives(db, &o, b"v2");
}

/// Immutable mode with a pool that holds exactly two NVM memtables: once the receiver and
/// one full NVM memtable fill it, flushed memtables go to L0 directly, and must not end up
/// below the NVM memtables holding older versions.
#[test]
fn a_full_pool_does_not_leave_stale_versions_above_l0() {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let mut o = manual(NvmMemtable::Immutable, &fs, &sim);
    // The smallest pool (1 MiB) holds two memtables of 504 KiB, and no third.
    o.nvm_memtable_size = 504 << 10;
    o.nvm_capacity = 1 << 20;
    assert!(o.nvm_bytes_needed() <= o.nvm_capacity);
    assert!(o.nvm_capacity - o.nvm_bytes_needed() < o.nvm_memtable_size as u64);
    let db = Db::open("/db", o.clone()).unwrap();
    for round in 0..120 {
        let v = format!("v{round}");
        db.put(b"k", v.as_bytes()).unwrap();
        filler(&db, &round.to_string(), 12 << 10);
        db.flush().unwrap();
        assert_eq!(
            value(&db, b"k").as_deref(),
            Some(v.as_bytes()),
            "round {round}"
        );
    }
    newest_survives(db, &o, b"v119");
}

/// `validate` refuses a pool that cannot hold two NVM memtables with their headers and
/// the superblock (such a pool was accepted once, and its fallback to L0 served stale
/// versions).
#[test]
fn a_pool_too_small_for_two_nvm_memtables_is_refused() {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let mut o = manual(NvmMemtable::Immutable, &fs, &sim);
    o.nvm_memtable_size = 512 << 10;
    o.nvm_capacity = 1 << 20;
    let e = Db::open("/db", o.clone()).unwrap_err();
    assert!(
        matches!(&e, mezzanine::Error::InvalidArgument(m) if m.contains("nvm_capacity")),
        "{e}"
    );
    o.nvm_capacity = o.nvm_bytes_needed();
    Db::open("/db", o).unwrap();
}

/// An iterator keeps showing what it showed when created while a flushed memtable is
/// merged into the NVM receiver under it, in either direction.
#[test]
fn an_iterator_does_not_see_a_merge_under_it() {
    let (fs, sim) = (MemFs::new(), SimNvm::new());
    let db = Db::open("/db", manual(NvmMemtable::Immutable, &fs, &sim)).unwrap();
    let key = |i: u32| format!("k{i:03}").into_bytes();
    let mut model = BTreeMap::new();
    // Even keys in the receiver.
    for i in (0..200).step_by(2) {
        db.put(&key(i), b"old").unwrap();
        model.insert(key(i), b"old".to_vec());
    }
    db.flush().unwrap();
    // Odd keys and new versions of some even ones in an immutable DRAM memtable.
    let mut i = 1;
    while db.stats().immutable_memtables == 0 {
        let k = key(i % 200);
        let v = format!("new{i}").into_bytes();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        i += 3;
    }
    // The switch happened on the last put, which went to the new memtable: leave it out
    // of what the iterator must show only if it is newer than the iterator (it is not).
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek(&key(100));
    assert!(it.valid());
    // Merge the immutable memtable into the receiver while `it` is positioned.
    assert!(db.run_background_work(1).unwrap() >= 1);
    assert_eq!(db.stats().immutable_memtables, 0);
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let mut pos = keys
        .iter()
        .position(|k| k.as_slice() >= &key(100)[..])
        .unwrap();
    let moves = [
        1, 1, -1, 1, 1, 1, -1, -1, -1, 1, -1, 1, 1, -1, 1, 1, 1, 1, -1, 1,
    ];
    for (n, &m) in moves.iter().enumerate() {
        assert_eq!(it.key(), keys[pos].as_slice(), "move {n}");
        assert_eq!(it.value(), model[keys[pos]].as_slice(), "move {n}");
        if m > 0 {
            it.next();
            pos += 1;
        } else {
            it.prev();
            pos -= 1;
        }
    }
    it.status().unwrap();
}

/// Point reads consult each memtable's key filter before its search: a key whose bits the
/// filter missed would be read from an older container (a stale value) or not at all.
/// Every way an entry enters a memtable is driven here: DRAM inserts, NVM inserts
/// (mutable mode), the merge of DRAM memtables into the NVM receiver (immutable mode), and
/// NVM memtables recovered at open (no filter), then written to again.
#[test]
fn memtable_key_filters_never_hide_the_newest_version() {
    for mode in [NvmMemtable::Mutable, NvmMemtable::Immutable] {
        let (fs, sim) = (MemFs::new(), SimNvm::new());
        let o = manual(mode, &fs, &sim);
        let mut db = Db::open("/db", o.clone()).unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let check = |db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str| {
            for k in 0..500u32 {
                let key = format!("k{k:04}").into_bytes();
                assert_eq!(
                    value(db, &key),
                    model.get(&key).cloned(),
                    "{mode:?}, {when}, key {k}"
                );
            }
        };
        for round in 0..8u32 {
            if round == 4 {
                db.close().unwrap();
                drop(db);
                db = Db::open("/db", o.clone()).unwrap();
                check(&db, &model, "after the reopen");
            }
            for i in 0..300u32 {
                let key = format!("k{:04}", (i * 7 + round * 13) % 500).into_bytes();
                if i % 10 == 9 {
                    db.delete(&key).unwrap();
                    model.remove(&key);
                } else {
                    let v = format!("{round}-{i}-{}", "v".repeat(60)).into_bytes();
                    db.put(&key, &v).unwrap();
                    model.insert(key, v);
                }
            }
            check(
                &db,
                &model,
                &format!("round {round}, before background work"),
            );
            db.wait_for_background().unwrap();
            check(
                &db,
                &model,
                &format!("round {round}, after background work"),
            );
        }
    }
}
