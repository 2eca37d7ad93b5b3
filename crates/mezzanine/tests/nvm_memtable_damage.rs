//! A damaged entry of an NVM memtable (NoveLSM) found after a reopen: the reopen itself
//! succeeds (it reads no entry), and every read that reaches the entry (get, scan,
//! cursor) fails with `Corruption` naming the pool file; the damaged bytes are never
//! returned as a value, and nothing panics.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::path::Path;

use common::nvm_dir;
use mezzanine::options::NvmMemtable;
use mezzanine::{Db, Error, Options, Preset, ReadOptions};

fn options(nvm: &Path) -> Options {
    let mut o = Options::preset(Preset::Novelsm);
    o.write_buffer_size = 64 << 10;
    o.nvm_memtable_size = 1 << 20;
    o.nvm_capacity = 8 << 20;
    o.nvm_prefault = false;
    o.nvm_dir = Some(nvm.to_path_buf());
    // No background flush of the recovered NVM memtable: the reads below meet it.
    o.manual_background = true;
    o
}

const N: u64 = 3_000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("needle-{i:06}-{}", "v".repeat(40)).into_bytes()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn is_pool_corruption(e: &Error, pool: &Path) -> bool {
    matches!(e, Error::Corruption { file: Some(f), .. } if f == pool)
}

/// Writes `N` entries (the last ones land in the NVM memtable), closes, damages one byte
/// (`in_key`: of the key, else of the value) of the newest entry whose value is in the
/// pool, and returns its index.
fn damaged_db(dir: &Path, nvm: &Path, in_key: bool) -> u64 {
    let o = options(nvm);
    assert_eq!(o.nvm_memtable, NvmMemtable::Mutable);
    let db = Db::open(dir, o).unwrap();
    for i in 0..N {
        db.put(&key(i), &value(i)).unwrap();
    }
    db.close().unwrap();
    let pool = nvm.join("NVM-POOL");
    let mut bytes = std::fs::read(&pool).unwrap();
    let (i, at) = (0..N)
        .rev()
        .find_map(|i| find(&bytes, &value(i)).map(|at| (i, at)))
        .expect("no value in the NVM pool");
    // In a node, the internal key (user key + 8-byte trailer) directly precedes the value.
    let at = if in_key { at - 8 - 2 } else { at + 10 };
    bytes[at] ^= 0x20;
    std::fs::write(&pool, &bytes).unwrap();
    i
}

fn check_reads(dir: &Path, nvm: &Path, damaged: u64) {
    let pool = nvm.join("NVM-POOL");
    let db = Db::open(dir, options(nvm)).expect("the reopen reads no entry");
    // A get of the damaged entry: Corruption, never a value.
    match db.get(&key(damaged)) {
        Err(e) => assert!(is_pool_corruption(&e, &pool), "{e}"),
        Ok(v) => panic!("damaged entry read as {v:?}"),
    }
    // Other gets: the value written, or Corruption (a search that passes the damaged
    // node), never anything else.
    let mut corrupt_gets = 0;
    for i in 0..N {
        match db.get(&key(i)) {
            Ok(v) => assert_eq!(v, Some(value(i)), "key {i}"),
            Err(e) => {
                assert!(is_pool_corruption(&e, &pool), "{e}");
                corrupt_gets += 1;
            }
        }
    }
    assert!(corrupt_gets >= 1);
    // A scan stops with Corruption; what it returned before is what was written.
    let mut seen = 0;
    let mut failed = false;
    for kv in db.iter() {
        match kv {
            Ok((k, v)) => {
                let i: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                assert_eq!(v, value(i));
                assert_ne!(i, damaged, "damaged entry returned by a scan");
                seen += 1;
            }
            Err(e) => {
                assert!(is_pool_corruption(&e, &pool), "{e}");
                failed = true;
                break;
            }
        }
    }
    assert!(
        failed,
        "a scan over the damaged entry did not fail ({seen} entries)"
    );
    // The cursor API: a seek onto the entry is not valid and reports Corruption.
    let mut c = db.cursor(&ReadOptions::default()).unwrap();
    c.seek(&key(damaged));
    assert!(!c.valid() || c.key() != key(damaged));
    match c.status() {
        Err(e) => assert!(is_pool_corruption(&e, &pool), "{e}"),
        Ok(()) => panic!("a seek onto the damaged entry reported no error"),
    }
    // Backwards from the end too.
    let last = db.iter().next_back();
    if let Some(Ok((k, v))) = last {
        let i: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        assert_eq!(v, value(i));
    }
    db.close().unwrap();
}

#[test]
fn damaged_value_byte_is_corruption_on_read_not_on_open() {
    let (dir, nvm) = (tempfile::tempdir().unwrap(), nvm_dir());
    let i = damaged_db(dir.path(), nvm.path(), false);
    check_reads(dir.path(), nvm.path(), i);
}

#[test]
fn damaged_key_byte_is_corruption_on_read_not_on_open() {
    let (dir, nvm) = (tempfile::tempdir().unwrap(), nvm_dir());
    let i = damaged_db(dir.path(), nvm.path(), true);
    check_reads(dir.path(), nvm.path(), i);
}
