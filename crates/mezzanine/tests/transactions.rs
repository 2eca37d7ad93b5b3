//! Optimistic transactions under concurrent threads, checked against serial execution, on
//! the default design and on the NVM presets `novelsm`, `matrixkv` and `mezzanine` (a
//! matrix container over NVM tables), with memtables small enough that flushes and
//! compactions run while transactions are open (so conflicts are found in tables as well
//! as in memtables):
//!
//! - a bank: threads move money between accounts with `get_for_update` + `put`, retrying
//!   on `Busy`, while a plain writer adds unrelated keys and a reader sums snapshots; the
//!   total never changes, and every account ends at its start plus the committed
//!   transfers in and out of it;
//! - a history checker: concurrent transactions of random reads, reads for update, puts,
//!   deletes and savepoints record what they saw and did; the committed history must obey
//!   snapshot isolation (each committed transaction's reads equal the state at its
//!   snapshot plus its own writes; no committed transaction marked a key that another
//!   committed transaction wrote after its snapshot), the final state must be
//!   the committed writes applied in commit order, and every `Busy` must be explained by a
//!   committed write to a marked key after the snapshot.
//!
//! Workloads come from a seed (`MEZZ_TXN_SEED`, else a fixed one), printed on failure; the
//! thread interleaving is the scheduler's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{nvm_dir, small_matrixkv_options, small_mezzanine_options};
use mezzanine::{Db, Options, Preset, ReadOptions, SeqNo, TxnOptions};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

fn seed() -> u64 {
    std::env::var("MEZZ_TXN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_129)
}

/// The designs the tests run on, with options that make memtables flush often.
fn designs(nvm: &std::path::Path) -> Vec<(&'static str, Options)> {
    for d in ["novelsm", "matrixkv", "mezzanine"] {
        std::fs::create_dir_all(nvm.join(d)).unwrap();
    }
    let default = Options {
        write_buffer_size: 32 << 10,
        target_file_size: 32 << 10,
        ..Options::default()
    };
    let mut novelsm = Options::preset(Preset::Novelsm);
    novelsm.write_buffer_size = 32 << 10;
    novelsm.target_file_size = 32 << 10;
    novelsm.nvm_memtable_size = 256 << 10;
    novelsm.nvm_capacity = 16 << 20;
    novelsm.nvm_prefault = false;
    novelsm.nvm_dir = Some(nvm.join("novelsm"));
    vec![
        ("default", default),
        ("novelsm", novelsm),
        ("matrixkv", small_matrixkv_options(&nvm.join("matrixkv"))),
        ("mezzanine", small_mezzanine_options(&nvm.join("mezzanine"))),
    ]
}

fn account(i: usize) -> Vec<u8> {
    format!("acct{i:03}").into_bytes()
}

fn balance(v: Option<Vec<u8>>) -> i64 {
    let v = v.expect("every account exists");
    String::from_utf8(v).unwrap().parse().unwrap()
}

/// One committed transfer.
#[derive(Debug, Clone, Copy)]
struct Transfer {
    from: usize,
    to: usize,
    amount: i64,
}

fn bank(name: &str, opts: Options, seed: u64) {
    const ACCOUNTS: usize = 12;
    const START: i64 = 1_000;
    const THREADS: u64 = 4;
    const TRANSFERS: usize = 150;
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    for i in 0..ACCOUNTS {
        db.put(&account(i), START.to_string().as_bytes()).unwrap();
    }
    let total = START * ACCOUNTS as i64;
    let stop = Arc::new(AtomicBool::new(false));
    // A plain writer: values large enough to switch memtables while transfers run.
    let noise = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.put(format!("noise{:06}", i % 5000).as_bytes(), &[b'n'; 400])
                    .unwrap();
                i += 1;
            }
            i
        })
    };
    // A reader: every snapshot holds the total.
    let reader = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut sums = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let snap = db.snapshot();
                let ro = snap.read_options();
                let sum: i64 = (0..ACCOUNTS)
                    .map(|i| balance(db.get_opt(&ro, &account(i)).unwrap()))
                    .sum();
                assert_eq!(sum, total, "seed {seed}: a snapshot saw money made or lost");
                sums += 1;
            }
            sums
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (t + 1).wrapping_mul(0x9e37_79b9));
                let mut done = Vec::new();
                let mut retries = 0u64;
                for _ in 0..TRANSFERS {
                    let from = rng.random_range(0..ACCOUNTS);
                    let to = (from + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
                    let amount = rng.random_range(1..50i64);
                    loop {
                        let mut txn = db.begin_transaction(&TxnOptions::default());
                        let a = balance(txn.get_for_update(&account(from)).unwrap());
                        let b = balance(txn.get_for_update(&account(to)).unwrap());
                        txn.put(&account(from), (a - amount).to_string().as_bytes())
                            .unwrap();
                        txn.put(&account(to), (b + amount).to_string().as_bytes())
                            .unwrap();
                        match txn.commit() {
                            Ok(()) => break,
                            Err(e) if e.is_busy() => retries += 1,
                            Err(e) => panic!("seed {seed}: commit failed: {e}"),
                        }
                    }
                    done.push(Transfer { from, to, amount });
                }
                (done, retries)
            })
        })
        .collect();
    let mut transfers = Vec::new();
    let mut retries = 0;
    for w in workers {
        let (d, r) = w.join().unwrap();
        transfers.extend(d);
        retries += r;
    }
    stop.store(true, Ordering::Relaxed);
    let noise_writes = noise.join().unwrap();
    let sums = reader.join().unwrap();
    let mut want = [START; ACCOUNTS];
    for t in &transfers {
        want[t.from] -= t.amount;
        want[t.to] += t.amount;
    }
    for (i, w) in want.iter().enumerate() {
        assert_eq!(
            balance(db.get(&account(i)).unwrap()),
            *w,
            "{name}, seed {seed}: account {i} lost a committed transfer"
        );
    }
    let stats = db.stats();
    println!(
        "{name}: {} transfers, {retries} retries on Busy, {noise_writes} plain writes, \
         {sums} snapshot sums, {} flushes",
        transfers.len(),
        stats.flushes
    );
}

#[test]
fn a_bank_keeps_its_total_and_every_committed_transfer() {
    let nvm = nvm_dir();
    let seed = seed();
    for (name, opts) in designs(nvm.path()) {
        bank(name, opts, seed);
    }
}

/// A transaction's writes by key (`None`: deleted).
type Writes = BTreeMap<u8, Option<Vec<u8>>>;
/// The versions of a key: (sequence number, value), oldest first.
type Versions = Vec<(SeqNo, Option<Vec<u8>>)>;

/// One operation a transaction made, as it saw it.
#[derive(Debug, Clone)]
enum Op {
    /// A read (marked or not) of `key` that returned `seen`; `own` is the transaction's
    /// own write of the key at that time, if it had one.
    Read {
        key: u8,
        seen: Option<Vec<u8>>,
        own: Option<Option<Vec<u8>>>,
    },
}

/// What one transaction did.
#[derive(Debug, Clone)]
struct Record {
    id: String,
    snapshot: SeqNo,
    ops: Vec<Op>,
    /// Its final writes (after savepoint rollbacks), by key.
    writes: Writes,
    marked: BTreeSet<u8>,
    /// The sequence number of its last write, if it committed (`Some(None)`: committed
    /// with nothing to write); `None` if it got `Busy`.
    commit: Option<Option<SeqNo>>,
}

fn key_name(k: u8) -> Vec<u8> {
    format!("h{k:02}").into_bytes()
}

/// Runs one random transaction; returns its record.
fn random_txn(db: &Db, rng: &mut StdRng, id: String, keys: u8) -> Record {
    let mut txn = db.begin_transaction(&TxnOptions::default());
    let snapshot = txn.snapshot().expect("a snapshot").sequence();
    let mut ops = Vec::new();
    let mut writes: Writes = BTreeMap::new();
    let mut marked = BTreeSet::new();
    let mut saved: Option<(Writes, BTreeSet<u8>)> = None;
    let n = rng.random_range(1..8);
    for i in 0..n {
        let k = rng.random_range(0..keys);
        let kn = key_name(k);
        match rng.random_range(0..10) {
            0..=2 => {
                let seen = txn.get(&kn).unwrap();
                ops.push(Op::Read {
                    key: k,
                    seen,
                    own: writes.get(&k).cloned(),
                });
            }
            3..=4 => {
                let seen = txn.get_for_update(&kn).unwrap();
                marked.insert(k);
                ops.push(Op::Read {
                    key: k,
                    seen,
                    own: writes.get(&k).cloned(),
                });
            }
            5..=7 => {
                let v = format!("{id}.{i}").into_bytes();
                txn.put(&kn, &v).unwrap();
                writes.insert(k, Some(v));
                marked.insert(k);
            }
            8 => {
                txn.delete(&kn).unwrap();
                writes.insert(k, None);
                marked.insert(k);
            }
            _ => match saved.take() {
                None => {
                    txn.set_savepoint();
                    saved = Some((writes.clone(), marked.clone()));
                }
                Some((w, m)) => {
                    txn.rollback_to_savepoint().unwrap();
                    writes = w;
                    marked = m;
                }
            },
        }
    }
    let commit = match txn.commit_at() {
        Ok(seq) => Some(seq),
        Err(e) if e.is_busy() => None,
        Err(e) => panic!("{id}: commit failed: {e}"),
    };
    Record {
        id,
        snapshot,
        ops,
        writes,
        marked,
        commit,
    }
}

/// Checks a history of transactions (and the initial state, written at `initial_seq`)
/// against snapshot isolation; returns the state the committed writes leave.
fn check_history(
    records: &[Record],
    initial: &BTreeMap<u8, Vec<u8>>,
    initial_seq: SeqNo,
    ctx: &str,
) -> BTreeMap<u8, Vec<u8>> {
    // Every version of every key: (sequence number, value), oldest first.
    let mut versions: BTreeMap<u8, Versions> = BTreeMap::new();
    for (k, v) in initial {
        versions
            .entry(*k)
            .or_default()
            .push((initial_seq, Some(v.clone())));
    }
    let mut committed: Vec<(&Record, SeqNo)> = records
        .iter()
        .filter_map(|r| match r.commit {
            Some(Some(seq)) => Some((r, seq)),
            _ => None,
        })
        .collect();
    committed.sort_by_key(|(_, s)| *s);
    for w in committed.windows(2) {
        assert!(w[0].1 < w[1].1, "{ctx}: two commits at one sequence");
    }
    for (r, seq) in &committed {
        for (k, v) in &r.writes {
            versions.entry(*k).or_default().push((*seq, v.clone()));
        }
    }
    let state_at = |k: u8, seq: SeqNo| -> Option<Vec<u8>> {
        versions
            .get(&k)
            .and_then(|vs| vs.iter().rev().find(|(s, _)| *s <= seq))
            .and_then(|(_, v)| v.clone())
    };
    // Reads: the snapshot plus the transaction's own writes.
    for r in records.iter().filter(|r| r.commit.is_some()) {
        for op in &r.ops {
            let Op::Read { key, seen, own } = op;
            let want = match own {
                Some(v) => v.clone(),
                None => state_at(*key, r.snapshot),
            };
            assert_eq!(
                seen, &want,
                "{ctx}: {} read key {key} at snapshot {} and saw {seen:?}, not {want:?}",
                r.id, r.snapshot
            );
        }
    }
    // First committer wins: a later commit that marked a key an earlier one wrote must
    // have taken its snapshot after the earlier one committed. (A key both only read for
    // update is no conflict: neither changed it.) Read-only transactions take their place
    // at their validation, which the history does not record; their reads are checked
    // above.
    for (i, (a, a_seq)) in committed.iter().enumerate() {
        for (b, _) in &committed[i + 1..] {
            if let Some(k) = a.writes.keys().find(|k| b.marked.contains(k)) {
                assert!(
                    b.snapshot >= *a_seq,
                    "{ctx}: {} (snapshot {}) marked key {k}, which {} wrote at {a_seq}, \
                     yet both committed",
                    b.id,
                    b.snapshot,
                    a.id
                );
            }
        }
    }
    // Every Busy is explained by a committed write to a marked key after the snapshot.
    for r in records.iter().filter(|r| r.commit.is_none()) {
        let explained = committed
            .iter()
            .any(|(c, seq)| *seq > r.snapshot && c.writes.keys().any(|k| r.marked.contains(k)));
        assert!(explained, "{ctx}: {} got Busy without a conflict", r.id);
    }
    versions
        .iter()
        .filter_map(|(k, vs)| vs.last().and_then(|(_, v)| v.clone()).map(|v| (*k, v)))
        .collect()
}

fn history(name: &str, opts: Options, seed: u64) {
    const THREADS: u64 = 4;
    const TXNS: usize = 250;
    const KEYS: u8 = 24;
    let ctx = format!("{name}, seed {seed}");
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    let mut initial = BTreeMap::new();
    for k in (0..KEYS).step_by(2) {
        let v = format!("init{k}").into_bytes();
        db.put(&key_name(k), &v).unwrap();
        initial.insert(k, v);
    }
    let initial_seq = db.snapshot().sequence();
    let stop = Arc::new(AtomicBool::new(false));
    let noise = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.put(format!("z{:06}", i % 4000).as_bytes(), &[b'z'; 300])
                    .unwrap();
                i += 1;
            }
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed.wrapping_add(t * 7919));
                (0..TXNS)
                    .map(|i| random_txn(&db, &mut rng, format!("t{t}-{i}"), KEYS))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut records = Vec::new();
    for w in workers {
        records.extend(w.join().unwrap());
    }
    let random_busy = records.iter().filter(|r| r.commit.is_none()).count();
    // Whether the random workers conflicted depends on the schedule (on a loaded machine
    // they may run one after another), so the history also holds one conflict that no
    // schedule avoids: two transactions mark the same key, the first commits, the second
    // must get Busy. The checker checks it with the rest.
    records.extend(forced_conflict(&db, 1));
    stop.store(true, Ordering::Relaxed);
    noise.join().unwrap();
    let want = check_history(&records, &initial, initial_seq, &ctx);
    let got: BTreeMap<u8, Vec<u8>> = db
        .prefix_opt(&ReadOptions::default(), b"h")
        .map(|kv| {
            let (k, v) = kv.unwrap();
            let k: u8 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            (k, v)
        })
        .collect();
    assert_eq!(
        got, want,
        "{ctx}: the final state is not the committed history's"
    );
    let busy = records.iter().filter(|r| r.commit.is_none()).count();
    println!(
        "{ctx}: {} transactions, {busy} got Busy ({random_busy} of the random ones), {} flushes",
        records.len(),
        db.stats().flushes
    );
    assert!(
        busy > 0,
        "{ctx}: no conflict at all: the checker checked little"
    );
}

/// Two transactions that both mark key `k` and write it, interleaved on this thread: the
/// first commits, the second gets `Busy`. Their records, first then second.
fn forced_conflict(db: &Db, k: u8) -> Vec<Record> {
    let kn = key_name(k);
    let mut txns: Vec<_> = (0..2)
        .map(|_| db.begin_transaction(&TxnOptions::default()))
        .collect();
    let mut records = Vec::new();
    for (i, txn) in txns.iter_mut().enumerate() {
        let snapshot = txn.snapshot().expect("a snapshot").sequence();
        let seen = txn.get_for_update(&kn).unwrap();
        let v = format!("forced-{i}").into_bytes();
        txn.put(&kn, &v).unwrap();
        records.push(Record {
            id: format!("forced-{i}"),
            snapshot,
            ops: vec![Op::Read {
                key: k,
                seen,
                own: None,
            }],
            writes: [(k, Some(v))].into_iter().collect(),
            marked: [k].into_iter().collect(),
            commit: None,
        });
    }
    for (txn, r) in txns.into_iter().zip(records.iter_mut()) {
        r.commit = match txn.commit_at() {
            Ok(seq) => Some(seq),
            Err(e) if e.is_busy() => None,
            Err(e) => panic!("{}: commit failed: {e}", r.id),
        };
    }
    assert!(
        records[0].commit.is_some(),
        "the first of two conflicting commits wins"
    );
    assert!(
        records[1].commit.is_none(),
        "the second of two conflicting commits gets Busy"
    );
    records
}

#[test]
fn committed_histories_obey_snapshot_isolation() {
    let nvm = nvm_dir();
    let seed = seed();
    for (name, opts) in designs(nvm.path()) {
        history(name, opts, seed);
    }
}

/// The checker itself: a history that breaks each rule is caught.
#[test]
fn the_checker_catches_broken_histories() {
    let initial: BTreeMap<u8, Vec<u8>> = [(1, b"a".to_vec())].into_iter().collect();
    let rec =
        |id: &str, snapshot, commit, writes: &[(u8, &str)], reads: &[(u8, Option<&str>)]| Record {
            id: id.into(),
            snapshot,
            ops: reads
                .iter()
                .map(|(k, v)| Op::Read {
                    key: *k,
                    seen: v.map(|v| v.as_bytes().to_vec()),
                    own: None,
                })
                .collect(),
            writes: writes
                .iter()
                .map(|(k, v)| (*k, Some(v.as_bytes().to_vec())))
                .collect(),
            marked: writes.iter().map(|(k, _)| *k).collect(),
            commit,
        };
    let fine = [
        rec("a", 10, Some(Some(11)), &[(1, "x")], &[(1, Some("a"))]),
        rec("b", 11, Some(Some(12)), &[(1, "y")], &[(1, Some("x"))]),
        rec("c", 10, None, &[(1, "z")], &[]),
    ];
    let end = check_history(&fine, &initial, 10, "fine");
    assert_eq!(end.get(&1), Some(&b"y".to_vec()));
    let broken: [&[Record]; 3] = [
        // A stale read.
        &[rec(
            "a",
            11,
            Some(Some(12)),
            &[(2, "x")],
            &[(1, Some("old"))],
        )],
        // A lost update: both wrote key 1 from the same snapshot.
        &[
            rec("a", 10, Some(Some(11)), &[(1, "x")], &[]),
            rec("b", 10, Some(Some(12)), &[(1, "y")], &[]),
        ],
        // Busy with nobody to blame.
        &[rec("a", 10, None, &[(1, "x")], &[])],
    ];
    for (i, h) in broken.iter().enumerate() {
        let h = h.to_vec();
        let caught = std::panic::catch_unwind(|| check_history(&h, &initial, 10, "broken"));
        assert!(caught.is_err(), "broken history {i} passed the checker");
    }
}

/// On every design, a conflicting write is found after a flush (and a compaction) moved it
/// out of the memtables into the design's tables (NVM memtables, the matrix container,
/// SSTs), and a transaction whose keys nobody wrote still commits.
#[test]
fn conflicts_are_found_wherever_the_write_went() {
    let nvm = nvm_dir();
    for (name, opts) in designs(nvm.path()) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        for compact in [false, true] {
            let ctx = format!("{name}, compact {compact}");
            let mut t = db.begin_transaction(&TxnOptions::default());
            t.get_for_update(b"hot").unwrap();
            let mut quiet = db.begin_transaction(&TxnOptions::default());
            quiet.get_for_update(b"cold").unwrap();
            db.put(b"hot", b"other").unwrap();
            db.flush().unwrap();
            if compact {
                db.compact_range(None, None).unwrap();
            }
            for i in 0..200u32 {
                db.put(format!("fill{i:04}").as_bytes(), &[b'f'; 200])
                    .unwrap();
            }
            t.put(b"hot", b"mine").unwrap();
            let e = t.commit().unwrap_err();
            assert!(e.is_busy(), "{ctx}: {e}");
            quiet.put(b"cold", b"mine").unwrap();
            quiet.commit().unwrap();
            assert_eq!(db.get(b"hot").unwrap(), Some(b"other".to_vec()), "{ctx}");
            assert_eq!(db.get(b"cold").unwrap(), Some(b"mine".to_vec()), "{ctx}");
        }
    }
}
