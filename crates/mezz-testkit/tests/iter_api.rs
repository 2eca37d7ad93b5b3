//! Model-based property test of the `std::iter` read API (`Db::iter`, `range`, `prefix`,
//! `multi_get`, `get_pinned`, snapshots through the `*_opt` variants): random writes
//! (puts, deletes, flushes, range compactions, with tiny options so data spreads over
//! memtables, L0 and deeper levels) applied to the database and to a `BTreeMap`; then random
//! queries whose answers must equal the model's `BTreeMap::range` with the same bounds,
//! walked forward, backward and with both ends mixed.
//!
//! CI runs fixed seeds for every preset; `MEZZ_ITER_SEEDS=<n>` runs more. A failure names
//! its seed and preset.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ops::Bound;

use mezz_testkit::tiny_options;
use mezzanine::{Db, Error, Options, Preset, ReadOptions};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys from a small alphabet so ranges and prefixes hit many of them; some are prefixes of
/// others, some contain 0x00 and 0xff (the bytes bound arithmetic is about).
fn random_key(rng: &mut StdRng) -> Vec<u8> {
    const ALPHABET: &[u8] = b"\x00ab\xff";
    let len = rng.random_range(0..4);
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
        .collect()
}

fn random_bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.random_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(random_key(rng)),
        _ => Bound::Excluded(random_key(rng)),
    }
}

/// Whether `BTreeMap::range` accepts the bounds (it panics otherwise).
fn valid(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let key = |b: &Bound<Vec<u8>>| match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k.clone()),
        Bound::Unbounded => None,
    };
    match (key(lo), key(hi)) {
        (Some(s), Some(e)) => {
            s < e || (s == e && !matches!((lo, hi), (Bound::Excluded(_), Bound::Excluded(_))))
        }
        _ => true,
    }
}

fn as_slices(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Walks `db_it` and `model_it` with the same random sequence of front/back steps and
/// checks every item is equal, until both are exhausted.
fn walk_mixed<'a>(
    rng: &mut StdRng,
    mut db_it: mezzanine::Iter,
    mut model_it: impl DoubleEndedIterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>,
    what: &str,
) {
    let back_percent = rng.random_range(0..=100);
    for step in 0.. {
        let back = rng.random_range(0..100) < back_percent;
        let (got, want) = if back {
            (db_it.next_back(), model_it.next_back())
        } else {
            (db_it.next(), model_it.next())
        };
        let got = got.map(|r| r.unwrap());
        let want = want.map(|(k, v)| (k.clone(), v.clone()));
        assert_eq!(
            got,
            want,
            "{what}: step {step} ({})",
            if back { "back" } else { "front" }
        );
        if want.is_none() {
            // Exhausted from one end means exhausted from both (fused, ends met).
            assert!(
                db_it.next().is_none() && db_it.next_back().is_none(),
                "{what}"
            );
            return;
        }
    }
}

fn check_queries(rng: &mut StdRng, db: &Db, ro: &ReadOptions, model: &Model, tag: &str) {
    // Everything, forward and backward.
    let all: Vec<_> = db.iter_opt(ro).map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want, "{tag}: iter");
    let mut rev: Vec<_> = db.iter_opt(ro).rev().map(|r| r.unwrap()).collect();
    rev.reverse();
    assert_eq!(rev, want, "{tag}: iter().rev()");
    for q in 0..40 {
        let (lo, hi) = (random_bound(rng), random_bound(rng));
        let what = format!("{tag}: range {lo:?}..{hi:?} (query {q})");
        let range = (as_slices(&lo), as_slices(&hi));
        if !valid(&lo, &hi) {
            let mut it = db.range_opt::<&[u8], _>(ro, range);
            assert!(
                matches!(it.next(), Some(Err(Error::InvalidArgument(_)))),
                "{what}"
            );
            assert!(it.next().is_none(), "{what}");
            continue;
        }
        walk_mixed(
            rng,
            db.range_opt::<&[u8], _>(ro, range),
            model.range::<[u8], _>(range),
            &what,
        );
        let p = random_key(rng);
        let what = format!("{tag}: prefix {p:?} (query {q})");
        walk_mixed(
            rng,
            db.prefix_opt(ro, &p),
            model
                .iter()
                .filter(|(k, _)| k.starts_with(&p))
                .collect::<Vec<_>>()
                .into_iter(),
            &what,
        );
    }
    let keys: Vec<Vec<u8>> = (0..20).map(|_| random_key(rng)).collect();
    let got = db.multi_get_opt(ro, &keys).unwrap();
    let want: Vec<_> = keys.iter().map(|k| model.get(k).cloned()).collect();
    assert_eq!(got, want, "{tag}: multi_get");
    for k in &keys {
        let got = db.get_pinned_opt(ro, k).unwrap().map(|v| v.to_vec());
        assert_eq!(got, model.get(k).cloned(), "{tag}: get_pinned {k:?}");
    }
}

fn run_seed(preset: Preset, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts: Options = tiny_options(preset);
    opts.create_if_missing = true;
    let db = Db::open(dir.path(), opts).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = Model::new();
    let mut snapshots = Vec::new();
    for round in 0..6 {
        for _ in 0..rng.random_range(50..400) {
            let k = random_key(&mut rng);
            if rng.random_range(0..4) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let len = rng.random_range(0..300);
                let v: Vec<u8> = (0..len).map(|i| (i as u8) ^ (round as u8)).collect();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        match rng.random_range(0..4) {
            0 => db.flush().unwrap(),
            1 => db.compact_range(None, None).unwrap(),
            _ => {}
        }
        if rng.random_range(0..2) == 0 {
            snapshots.push((db.snapshot(), model.clone()));
        }
        let tag = format!("{} seed {seed} round {round}", preset.name());
        check_queries(&mut rng, &db, &ReadOptions::default(), &model, &tag);
        for (i, (snap, snap_model)) in snapshots.iter().enumerate() {
            let tag = format!("{tag} snapshot {i}");
            check_queries(&mut rng, &db, &snap.read_options(), snap_model, &tag);
        }
    }
}

#[test]
fn range_prefix_rev_mixed_and_multi_get_match_a_btreemap() {
    let seeds: u64 = std::env::var("MEZZ_ITER_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    for &preset in Preset::ALL {
        for seed in 0..seeds {
            run_seed(preset, seed);
        }
    }
}

#[test]
fn iteration_is_a_consistent_view() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), tiny_options(Preset::Leveldb)).unwrap();
    for i in 0..100u32 {
        db.put(&i.to_be_bytes(), b"old").unwrap();
    }
    let mut it = db.iter();
    let first = it.next().unwrap().unwrap();
    // Writes after the iterator was made are not seen by either end.
    for i in 0..200u32 {
        db.put(&i.to_be_bytes(), b"new").unwrap();
    }
    db.flush().unwrap();
    assert_eq!(first.1, b"old");
    let rest: Vec<_> = it.map(|r| r.unwrap()).collect();
    assert_eq!(rest.len(), 99);
    assert!(rest.iter().all(|(_, v)| v == b"old"));
}

#[test]
fn a_closed_database_yields_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), tiny_options(Preset::Leveldb)).unwrap();
    db.close().unwrap();
    let mut it = db.iter();
    assert!(matches!(it.next(), Some(Err(Error::Closed))));
    assert!(it.next().is_none());
    assert!(matches!(db.multi_get([b"a"]), Err(Error::Closed)));
    assert!(matches!(db.get_pinned(b"a"), Err(Error::Closed)));
}

#[test]
fn get_pinned_borrows_sst_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"mem", b"1").unwrap();
    assert!(!db.get_pinned(b"mem").unwrap().unwrap().is_pinned());
    db.flush().unwrap();
    let v = db.get_pinned(b"mem").unwrap().unwrap();
    assert!(v.is_pinned());
    assert_eq!(&*v, b"1");
    assert_eq!(db.get_pinned(b"none").unwrap(), None);
}

#[test]
fn approximate_sizes_count_overlapping_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..1000u32 {
        db.put(format!("k{i:04}").as_bytes(), &[7u8; 100]).unwrap();
    }
    assert_eq!(
        db.approximate_size(None, None).unwrap(),
        0,
        "memtables not counted"
    );
    db.flush().unwrap();
    let all = db.approximate_size(None, None).unwrap();
    assert!(all > 100_000, "{all}");
    assert_eq!(db.approximate_size(Some(b"z"), None).unwrap(), 0);
    assert_eq!(db.approximate_size(None, Some(b"k")).unwrap(), 0);
    let sizes = db
        .approximate_sizes(&[(Some(b"k0100"), Some(b"k0200")), (Some(b"a"), Some(b"b"))])
        .unwrap();
    assert_eq!(sizes[1], 0);
    assert!(sizes[0] > 0 && sizes[0] <= all);
    assert!(db.approximate_size(Some(b"b"), Some(b"a")).is_err());
}
