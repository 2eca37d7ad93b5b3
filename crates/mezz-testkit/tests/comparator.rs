//! Custom comparators, model-based: random op logs (puts, deletes, batches, gets, forward
//! and backward scans with bounds, seeks, ranges, prefixes, snapshots, flushes, range
//! compactions, reopens) against a model ordered by the same comparator, under every
//! preset with tiny sizes, for a reverse-bytewise order and an ASCII case-insensitive one
//! (where keys whose bytes differ are the same key). Also: the recorded comparator name is
//! checked at open, both ways.
//!
//! A failure names the seed, preset and comparator; `MEZZ_CMP_SEED=<s>` reruns one seed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use mezz_env::MemFs;
use mezz_format::order::{CaseInsensitive, ReverseBytewise};
use mezz_format::{Comparator, KeyOrder};
use mezz_testkit::tiny_options;
use mezzanine::{Db, Error, Options, Preset, ReadOptions, WriteBatch};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// The model: entries sorted by the comparator; a key equal (under it) to a stored one
/// replaces it, spelling included (the newest write's bytes are what reads return).
#[derive(Clone)]
struct Model {
    order: KeyOrder,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Model {
    fn find(&self, k: &[u8]) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(e, _)| self.order.compare_user(e, k))
    }
    fn put(&mut self, k: &[u8], v: &[u8]) {
        match self.find(k) {
            Ok(i) => self.entries[i] = (k.to_vec(), v.to_vec()),
            Err(i) => self.entries.insert(i, (k.to_vec(), v.to_vec())),
        }
    }
    fn delete(&mut self, k: &[u8]) {
        if let Ok(i) = self.find(k) {
            self.entries.remove(i);
        }
    }
    fn get(&self, k: &[u8]) -> Option<Vec<u8>> {
        self.find(k).ok().map(|i| self.entries[i].1.clone())
    }
    fn cmp(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.order.compare_user(a, b)
    }
    /// The entries inside the Rust range `(lo, hi)`.
    fn range(&self, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.entries
            .iter()
            .filter(|(k, _)| {
                let above = match lo {
                    Bound::Included(l) => self.cmp(k, l).is_ge(),
                    Bound::Excluded(l) => self.cmp(k, l).is_gt(),
                    Bound::Unbounded => true,
                };
                let below = match hi {
                    Bound::Included(h) => self.cmp(k, h).is_le(),
                    Bound::Excluded(h) => self.cmp(k, h).is_lt(),
                    Bound::Unbounded => true,
                };
                above && below
            })
            .cloned()
            .collect()
    }
}

/// Keys over a small alphabet with both cases, so prefixes, equal spellings under the
/// case-insensitive order and long shared prefixes all occur.
fn key(rng: &mut StdRng) -> Vec<u8> {
    let len = rng.random_range(0..6usize);
    let mut k = b"k".to_vec();
    for _ in 0..len {
        k.push(
            *[b'a', b'B', b'b', b'A', b'z', 0u8, 0xff]
                .get(rng.random_range(0..7usize))
                .unwrap(),
        );
    }
    k
}

fn value(rng: &mut StdRng, i: usize) -> Vec<u8> {
    let n = rng.random_range(0..300usize);
    let mut v = format!("v{i}-").into_bytes();
    v.resize(v.len() + n, b'x');
    v
}

fn options(preset: Preset, cmp: &Arc<dyn Comparator>, fs: &Arc<MemFs>) -> Options {
    let mut o = tiny_options(preset);
    o.fs = Arc::clone(fs) as Arc<dyn mezz_env::FileSystem>;
    o.comparator = Some(Arc::clone(cmp));
    o
}

fn collect(it: mezzanine::Iter) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.collect::<Result<Vec<_>, _>>().unwrap()
}

fn bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.random_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

/// One run: `ops` random operations, checked against the model as they go.
fn run(seed: u64, ops: usize, preset: Preset, cmp: Arc<dyn Comparator>) {
    let ctx = format!(
        "seed {seed}, preset {}, comparator {}",
        preset.name(),
        cmp.name()
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = Arc::new(MemFs::new());
    let opts = options(preset, &cmp, &fs);
    let mut db = Db::open("/db", opts.clone()).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    let mut model = Model {
        order: KeyOrder::custom(Arc::clone(&cmp)),
        entries: Vec::new(),
    };
    let mut snaps: Vec<(mezzanine::Snapshot, Model)> = Vec::new();
    for i in 0..ops {
        let what = rng.random_range(0..100);
        match what {
            0..=39 => {
                let (k, v) = (key(&mut rng), value(&mut rng, i));
                db.put(&k, &v).unwrap();
                model.put(&k, &v);
            }
            40..=49 => {
                let k = key(&mut rng);
                db.delete(&k).unwrap();
                model.delete(&k);
            }
            50..=54 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.random_range(1..8) {
                    let k = key(&mut rng);
                    if rng.random_bool(0.7) {
                        let v = value(&mut rng, i);
                        b.put(&k, &v);
                        model.put(&k, &v);
                    } else {
                        b.delete(&k);
                        model.delete(&k);
                    }
                }
                db.write(&Default::default(), b).unwrap();
            }
            55..=69 => {
                let k = key(&mut rng);
                assert_eq!(
                    db.get(&k).unwrap(),
                    model.get(&k),
                    "{ctx}: op {i}: get {k:?}"
                );
            }
            70..=77 => {
                let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                let want = model.range(&lo, &hi);
                let valid = match (&lo, &hi) {
                    (
                        Bound::Included(l) | Bound::Excluded(l),
                        Bound::Included(h) | Bound::Excluded(h),
                    ) => {
                        let o = model.cmp(l, h);
                        !(o.is_gt()
                            || (o.is_eq()
                                && matches!((&lo, &hi), (Bound::Excluded(_), Bound::Excluded(_)))))
                    }
                    _ => true,
                };
                let mut it = db.range((lo.clone(), hi.clone()));
                if !valid {
                    assert!(
                        matches!(it.next(), Some(Err(Error::InvalidArgument(_)))),
                        "{ctx}"
                    );
                    continue;
                }
                if rng.random_bool(0.5) {
                    assert_eq!(collect(it), want, "{ctx}: op {i}: range {lo:?}..{hi:?}");
                } else {
                    let mut rev = want.clone();
                    rev.reverse();
                    let got: Vec<_> = it.rev().collect::<Result<_, _>>().unwrap();
                    assert_eq!(got, rev, "{ctx}: op {i}: reverse range {lo:?}..{hi:?}");
                }
            }
            78..=81 => {
                let mut p = key(&mut rng);
                p.truncate(rng.random_range(1..=p.len().max(1)));
                let want: Vec<_> = model
                    .entries
                    .iter()
                    .filter(|(k, _)| k.starts_with(&p))
                    .cloned()
                    .collect();
                assert_eq!(collect(db.prefix(&p)), want, "{ctx}: op {i}: prefix {p:?}");
            }
            82..=86 => {
                // A cursor: seek / seek_for_prev, then a few steps either way.
                let t = key(&mut rng);
                let mut c = db.cursor(&ReadOptions::default()).unwrap();
                let forward = rng.random_bool(0.5);
                let mut pos = if forward {
                    c.seek(&t);
                    model
                        .entries
                        .partition_point(|(k, _)| model.cmp(k, &t).is_lt())
                        as isize
                } else {
                    c.seek_for_prev(&t);
                    model
                        .entries
                        .partition_point(|(k, _)| model.cmp(k, &t).is_le())
                        as isize
                        - 1
                };
                for _ in 0..4 {
                    let want = usize::try_from(pos).ok().and_then(|p| model.entries.get(p));
                    match want {
                        Some((k, v)) => {
                            assert!(c.valid(), "{ctx}: op {i}: cursor at {t:?} invalid");
                            assert_eq!((c.key(), c.value()), (&k[..], &v[..]), "{ctx}: op {i}");
                        }
                        None => {
                            assert!(!c.valid(), "{ctx}: op {i}: cursor at {t:?} past the end");
                            break;
                        }
                    }
                    if rng.random_bool(0.5) {
                        c.next();
                        pos += 1;
                    } else {
                        c.prev();
                        pos -= 1;
                    }
                }
                c.status().unwrap();
            }
            87..=89 => {
                snaps.push((db.snapshot(), model.clone()));
                if snaps.len() > 3 {
                    snaps.remove(0);
                }
            }
            90..=91 => {
                if let Some((s, m)) = snaps.last() {
                    let got = collect(db.iter_opt(&s.read_options()));
                    assert_eq!(got, m.entries, "{ctx}: op {i}: snapshot scan");
                }
            }
            92..=94 => db.flush().unwrap(),
            95..=97 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                let (lo, hi) = if model.cmp(&a, &b).is_le() {
                    (a, b)
                } else {
                    (b, a)
                };
                db.compact_range(Some(&lo), Some(&hi)).unwrap();
            }
            _ => {
                snaps.clear();
                db.close().unwrap();
                db = Db::open("/db", opts.clone())
                    .unwrap_or_else(|e| panic!("{ctx}: op {i}: reopen: {e}"));
            }
        }
    }
    assert_eq!(collect(db.iter()), model.entries, "{ctx}: final scan");
    let mut rev = model.entries.clone();
    rev.reverse();
    let got: Vec<_> = db.iter().rev().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, rev, "{ctx}: final reverse scan");
    db.close().unwrap();
}

fn comparators() -> Vec<Arc<dyn Comparator>> {
    vec![Arc::new(ReverseBytewise), Arc::new(CaseInsensitive)]
}

#[test]
fn every_preset_follows_a_custom_order() {
    let seeds: Vec<u64> = match std::env::var("MEZZ_CMP_SEED") {
        Ok(s) => vec![s.parse().expect("MEZZ_CMP_SEED is a number")],
        Err(_) => (0..Preset::ALL.len() as u64 * 4).collect(),
    };
    for seed in seeds {
        let preset = Preset::ALL[seed as usize % Preset::ALL.len()];
        for cmp in comparators() {
            run(seed, 3_000, preset, cmp);
        }
    }
}

#[test]
fn the_comparator_name_is_checked_at_open() {
    let fs = Arc::new(MemFs::new());
    let rev: Arc<dyn Comparator> = Arc::new(ReverseBytewise);
    let o = options(Preset::Leveldb, &rev, &fs);
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let mut bytewise = o.clone();
    bytewise.comparator = None;
    match Db::open("/db", bytewise.clone()) {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("comparator name mismatch"), "{m}");
            assert!(m.contains("mezzanine.ReverseBytewiseComparator"), "{m}");
        }
        other => panic!("opened under another comparator: {:?}", other.map(|_| ())),
    }
    // The right one opens it, in its order.
    let db = Db::open("/db", o).unwrap();
    let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.unwrap().0).collect();
    assert_eq!(keys, [b"b".to_vec(), b"a".to_vec()]);
    db.close().unwrap();
    // And a bytewise database refuses a custom comparator.
    let fs2 = Arc::new(MemFs::new());
    bytewise.fs = Arc::clone(&fs2) as Arc<dyn mezz_env::FileSystem>;
    Db::open("/db", bytewise.clone()).unwrap().close().unwrap();
    let mut custom = bytewise;
    custom.comparator = Some(Arc::new(CaseInsensitive));
    assert!(
        matches!(Db::open("/db", custom), Err(Error::InvalidArgument(m)) if m.contains("comparator name mismatch"))
    );
}

#[test]
fn transactions_and_indexed_batches_follow_the_order() {
    let fs = Arc::new(MemFs::new());
    let ci: Arc<dyn Comparator> = Arc::new(CaseInsensitive);
    let db = Db::open("/db", options(Preset::Leveldb, &ci, &fs)).unwrap();
    db.put(b"Apple", b"1").unwrap();
    db.put(b"banana", b"2").unwrap();
    db.flush().unwrap();
    // A transaction's own write is found under another spelling, and its merged iterator
    // shows one key per equal spelling, in the database's order.
    let mut t = db.begin_transaction(&mezzanine::TxnOptions::default());
    t.put(b"APPLE", b"3").unwrap();
    assert_eq!(t.get(b"apple").unwrap(), Some(b"3".to_vec()));
    let keys: Vec<Vec<u8>> = t
        .iter(&ReadOptions::default())
        .unwrap()
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(keys, [b"APPLE".to_vec(), b"banana".to_vec()]);
    // Another writer's update of the same key, spelled differently, is a conflict.
    let mut u = db.begin_transaction(&mezzanine::TxnOptions::default());
    assert_eq!(u.get_for_update(b"BANANA").unwrap(), Some(b"2".to_vec()));
    db.put(b"Banana", b"4").unwrap();
    u.put(b"banana", b"5").unwrap();
    assert!(matches!(u.commit(), Err(Error::Busy(_))));
    t.commit().unwrap();
    assert_eq!(db.get(b"apple").unwrap(), Some(b"3".to_vec()));
    // A batch ordered otherwise is refused against this database.
    let wb = mezzanine::WriteBatchWithIndex::new();
    assert!(matches!(
        wb.get_from_batch_and_db(&db, &ReadOptions::default(), b"x"),
        Err(Error::InvalidArgument(_))
    ));
    db.close().unwrap();
}

#[test]
fn a_checkpoint_keeps_the_order_and_its_name() {
    let fs = Arc::new(MemFs::new());
    let rev: Arc<dyn Comparator> = Arc::new(ReverseBytewise);
    let o = options(Preset::Novelsm, &rev, &fs);
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..500u32 {
        db.put(format!("k{i:04}").as_bytes(), b"v").unwrap();
    }
    db.flush().unwrap();
    db.put(b"k9999", b"in a memtable").unwrap();
    db.checkpoint("/copy").unwrap();
    db.close().unwrap();
    // The copy is an SSD database: it opens with the default preset, in the same order.
    let mut c = options(Preset::Leveldb, &rev, &fs);
    c.nvm_dir = None;
    let copy = Db::open("/copy", c.clone()).unwrap();
    let keys: Vec<Vec<u8>> = copy.iter().map(|kv| kv.unwrap().0).collect();
    assert_eq!(keys.len(), 501);
    assert_eq!(keys.first().map(Vec::as_slice), Some(&b"k9999"[..]));
    assert!(keys.windows(2).all(|w| w[0] > w[1]));
    copy.close().unwrap();
    c.comparator = None;
    assert!(
        matches!(Db::open("/copy", c), Err(Error::InvalidArgument(m)) if m.contains("comparator name mismatch"))
    );
}
