//! Single-threaded behaviour of the arena skip list, checked against a `BTreeMap` model:
//! inserts and duplicates, exact gets, every seek flavour, forward and backward iteration,
//! a full arena, empty keys and values, large values, and a custom comparator.

mod common;

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::Bound;
use std::sync::Arc;

use common::{Rng, scale};
use mezz_pmem::skiplist::node_size;
use mezz_pmem::{Arena, ArenaOptions, Bytewise, Comparator, Cursor, InsertError, SkipList};

const LAZY: ArenaOptions = ArenaOptions {
    prefault: false,
    huge_pages: true,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn new_list(capacity: usize) -> SkipList<Bytewise> {
    SkipList::new(Arena::with_options(capacity, LAZY), Bytewise)
        .expect("the arena holds the head node")
}

fn model_ge<'m>(m: &'m Model, k: &[u8]) -> Option<(&'m Vec<u8>, &'m Vec<u8>)> {
    m.range::<[u8], _>((Bound::Included(k), Bound::Unbounded))
        .next()
}
fn model_gt<'m>(m: &'m Model, k: &[u8]) -> Option<(&'m Vec<u8>, &'m Vec<u8>)> {
    m.range::<[u8], _>((Bound::Excluded(k), Bound::Unbounded))
        .next()
}
fn model_lt<'m>(m: &'m Model, k: &[u8]) -> Option<(&'m Vec<u8>, &'m Vec<u8>)> {
    m.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(k)))
        .next_back()
}
fn model_le<'m>(m: &'m Model, k: &[u8]) -> Option<(&'m Vec<u8>, &'m Vec<u8>)> {
    m.range::<[u8], _>((Bound::Unbounded, Bound::Included(k)))
        .next_back()
}

fn assert_at<L>(c: &Cursor<L>, want: Option<(&Vec<u8>, &Vec<u8>)>, what: &str)
where
    L: std::ops::Deref<Target = SkipList<Bytewise>>,
{
    match want {
        Some((k, v)) => {
            assert!(c.valid(), "{what}: expected {k:?}, cursor invalid");
            assert_eq!(c.key(), &k[..], "{what}: key");
            assert_eq!(c.value(), &v[..], "{what}: value");
        }
        None => {
            assert!(!c.valid(), "{what}: expected invalid, at {:?}", c.key());
            assert_eq!(c.key(), b"", "{what}: invalid cursor has an empty key");
        }
    }
}

/// Compares the whole list with the model: length, forward and backward iteration.
fn assert_same(list: &SkipList<Bytewise>, model: &Model) {
    assert_eq!(list.len(), model.len());
    assert_eq!(list.is_empty(), model.is_empty());
    let forward: Vec<(Vec<u8>, Vec<u8>)> =
        list.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(forward, want, "forward iteration");

    let mut c = list.cursor();
    c.first();
    for (k, v) in model {
        assert_at(&c, Some((k, v)), "cursor forward");
        c.next();
    }
    assert!(!c.valid());
    c.next();
    assert!(!c.valid(), "next on an invalid cursor stays invalid");

    c.last();
    for (k, v) in model.iter().rev() {
        assert_at(&c, Some((k, v)), "cursor backward");
        c.prev();
    }
    assert!(!c.valid());
    c.prev();
    assert!(!c.valid(), "prev on an invalid cursor stays invalid");
}

#[test]
fn model_random_inserts_seeks_and_walks() {
    for seed in 0..scale(4, 1) as u64 {
        let mut rng = Rng::new(seed + 1);
        let list = new_list(1 << 22);
        let mut model = Model::new();
        let ops = scale(3000, 150);
        for i in 0..ops {
            let key = rng.small_key(7);
            let vlen = rng.below(20);
            let value = rng.bytes(vlen);
            let got = list.insert(&key, &value);
            match model.entry(key) {
                Entry::Occupied(e) => {
                    assert_eq!(got, Err(InsertError::Duplicate), "duplicate {:?}", e.key());
                }
                Entry::Vacant(e) => {
                    assert_eq!(got, Ok(()), "insert {:?}", e.key());
                    e.insert(value);
                }
            }

            // Point lookups and seeks for a random probe, present or not.
            let probe = rng.small_key(8);
            assert_eq!(
                list.get(&probe).unwrap(),
                model.get(&probe).map(|v| &v[..]),
                "get {probe:?}"
            );
            let mut c = list.cursor();
            assert!(!c.valid(), "a new cursor is not positioned");
            c.seek_ge(&probe);
            assert_at(&c, model_ge(&model, &probe), "seek_ge");
            c.seek_gt(&probe);
            assert_at(&c, model_gt(&model, &probe), "seek_gt");
            c.seek_lt(&probe);
            assert_at(&c, model_lt(&model, &probe), "seek_lt");
            c.seek_le(&probe);
            assert_at(&c, model_le(&model, &probe), "seek_le");

            // A random walk of next/prev steps from a seek, mirrored in the model.
            if i % 16 == 0 {
                let keys: Vec<&Vec<u8>> = model.keys().collect();
                let mut pos = keys.partition_point(|k| k.as_slice() < probe.as_slice()) as isize;
                c.seek_ge(&probe);
                for _ in 0..8 {
                    if pos < 0 || pos as usize >= keys.len() {
                        assert!(!c.valid());
                        break;
                    }
                    assert_eq!(c.key(), &keys[pos as usize][..]);
                    if rng.below(2) == 0 {
                        c.next();
                        pos += 1;
                    } else {
                        c.prev();
                        pos -= 1;
                    }
                }
            }
        }
        assert_same(&list, &model);
        for (k, v) in &model {
            assert_eq!(list.get(k).unwrap(), Some(&v[..]));
        }
    }
}

#[test]
fn empty_list() {
    let list = new_list(4096);
    assert_same(&list, &Model::new());
    assert_eq!(list.get(b"").unwrap(), None);
    let mut c = list.cursor();
    c.seek_ge(b"k");
    assert!(!c.valid());
    c.seek_gt(b"k");
    assert!(!c.valid());
    c.seek_lt(b"k");
    assert!(!c.valid());
    c.seek_le(b"k");
    assert!(!c.valid());
    c.first();
    assert!(!c.valid());
    c.last();
    assert!(!c.valid());
    assert_eq!(c.value(), b"");
}

#[test]
fn zero_length_keys_and_values() {
    let list = new_list(4096);
    list.insert(b"", b"empty key").unwrap();
    list.insert(b"k", b"").unwrap();
    list.insert(b"\0", b"").unwrap();
    assert_eq!(list.insert(b"", b"again"), Err(InsertError::Duplicate));
    assert_eq!(list.get(b"").unwrap(), Some(&b"empty key"[..]));
    assert_eq!(list.get(b"k").unwrap(), Some(&b""[..]));
    assert_eq!(list.get(b"\0").unwrap(), Some(&b""[..]));
    let mut c = list.cursor();
    c.first();
    assert_eq!(c.key(), b"", "the empty key sorts first");
    assert!(c.valid(), "an entry with an empty key is a valid position");
    c.seek_lt(b"\0");
    assert_eq!((c.key(), c.value()), (&b""[..], &b"empty key"[..]));
    c.prev();
    assert!(!c.valid());
    c.seek_le(b"");
    assert!(c.valid());
    assert_eq!(c.value(), b"empty key");
    let all: Vec<_> = list.iter().collect();
    assert_eq!(
        all,
        vec![
            (&b""[..], &b"empty key"[..]),
            (&b"\0"[..], &b""[..]),
            (&b"k"[..], &b""[..])
        ]
    );
}

#[test]
fn large_values() {
    let big = scale(1 << 20, 1 << 14);
    let list = new_list(4 * big + 4096);
    let mut rng = Rng::new(7);
    let mut model = Model::new();
    for i in 0..3u8 {
        let value = rng.bytes(big + i as usize);
        let key = vec![i; big / 4];
        list.insert(&key, &value).unwrap();
        model.insert(key, value);
    }
    assert_same(&list, &model);
    for (k, v) in &model {
        assert_eq!(list.get(k).unwrap().map(<[u8]>::len), Some(v.len()));
        assert_eq!(list.get(k).unwrap(), Some(&v[..]));
    }
    // A fourth one does not fit: refused whole.
    let used = list.memory_usage();
    assert_eq!(list.insert(b"x", &vec![1u8; big]), Err(InsertError::Full));
    assert_eq!(list.memory_usage(), used);
    assert_eq!(list.get(b"x").unwrap(), None);
}

#[test]
fn full_arena_refuses_whole_nodes() {
    let capacity = scale(64 << 10, 8 << 10);
    let list = new_list(capacity);
    let mut rng = Rng::new(3);
    let mut model = Model::new();
    let mut refused = Vec::new();
    // Fill with random sizes until several inserts are refused.
    while refused.len() < 20 {
        let klen = 1 + rng.below(24);
        let key = rng.bytes(klen);
        let vlen = rng.below(200);
        let value = rng.bytes(vlen);
        match list.insert(&key, &value) {
            Ok(()) => {
                assert!(model.insert(key, value).is_none());
            }
            // The node is allocated before the duplicate check: a present key may be
            // refused as Full too.
            Err(InsertError::Full) => refused.push(key),
            Err(InsertError::Duplicate) => assert!(model.contains_key(&key)),
            Err(e @ (InsertError::Persist(_) | InsertError::Corrupt(_))) => {
                panic!("a heap arena persists nothing and is never recovered: {e}")
            }
        }
        assert!(list.memory_usage() <= capacity);
    }
    assert_same(&list, &model);
    for key in &refused {
        if !model.contains_key(key) {
            assert_eq!(
                list.get(key).unwrap(),
                None,
                "a refused node is not visible"
            );
        }
    }
    // A failed allocation reserves nothing: an entry that still fits goes in (the worst
    // case: the tallest tower, after alignment padding).
    let left = capacity - list.memory_usage();
    if left >= node_size(mezz_pmem::skiplist::MAX_HEIGHT, 0, 0) + 4 {
        list.insert(b"", b"").unwrap();
        model.insert(Vec::new(), Vec::new());
        assert_same(&list, &model);
    }
}

#[test]
fn arena_too_small_for_the_head() {
    let err = SkipList::new(Arena::new(16), Bytewise).unwrap_err();
    assert_eq!(err, InsertError::Full);
    assert_eq!(err.to_string(), "skip list arena is full");
}

#[test]
fn insert_with_writes_in_place() {
    let list = new_list(4096);
    list.insert_with(6, 3, |k, v| {
        assert_eq!((k.len(), v.len()), (6, 3));
        assert!(
            k.iter().chain(v.iter()).all(|&b| b == 0),
            "buffers start zeroed"
        );
        k.copy_from_slice(b"abc\0\0\x07");
        v.copy_from_slice(b"val");
    })
    .unwrap();
    assert_eq!(list.get(b"abc\0\0\x07").unwrap(), Some(&b"val"[..]));
    let r = list.insert_with(6, 0, |k, _| k.copy_from_slice(b"abc\0\0\x07"));
    assert_eq!(r, Err(InsertError::Duplicate));
    assert_eq!(list.len(), 1);
}

/// Orders keys by reversed bytes, to show that the comparator given at construction (not
/// byte order) decides the order of iteration and the meaning of the seeks.
#[test]
fn custom_comparator_decides_the_order() {
    fn reverse(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        b.cmp(a)
    }
    let list = SkipList::new(Arena::new(4096), reverse as fn(&[u8], &[u8]) -> _).unwrap();
    for k in [&b"b"[..], b"d", b"a", b"c"] {
        list.insert(k, k).unwrap();
    }
    let keys: Vec<&[u8]> = list.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![&b"d"[..], b"c", b"b", b"a"]);
    assert_eq!(
        list.comparator().compare(b"a", b"b"),
        std::cmp::Ordering::Greater
    );
    let mut c = list.cursor();
    c.seek_ge(b"bb");
    assert_eq!(
        c.key(),
        b"b",
        "the first key at or after \"bb\" in reversed order"
    );
    c.seek_lt(b"bb");
    assert_eq!(c.key(), b"c");

    // A closure works too.
    let by_len =
        SkipList::new(Arena::new(4096), |a: &[u8], b: &[u8]| a.len().cmp(&b.len())).unwrap();
    by_len.insert(b"xyz", b"").unwrap();
    by_len.insert(b"q", b"").unwrap();
    assert_eq!(
        by_len.insert(b"abc", b""),
        Err(InsertError::Duplicate),
        "equal under the comparator"
    );
    assert_eq!(by_len.get(b"zzz").unwrap(), Some(&b""[..]));
}

#[test]
fn cursor_can_own_an_arc_of_the_list() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SkipList<Bytewise>>();
    assert_send_sync::<Cursor<Arc<SkipList<Bytewise>>>>();

    let list = Arc::new(new_list(4096));
    list.insert(b"a", b"1").unwrap();
    list.insert(b"b", b"2").unwrap();
    let mut c = Cursor::new(Arc::clone(&list));
    // The cursor and the Arc can move to another thread together.
    let got = std::thread::spawn(move || {
        c.seek_ge(b"a");
        c.next();
        (c.key().to_vec(), c.value().to_vec())
    })
    .join()
    .unwrap();
    assert_eq!(got, (b"b".to_vec(), b"2".to_vec()));
}

/// The list initialises its head itself: bytes written into the arena before the list took
/// it (outside any allocation) do not show up as links.
#[test]
fn dirty_arena_does_not_leak_into_the_list() {
    let arena = Arena::new(4096);
    for off in (8..256).step_by(4) {
        arena
            .atomic_u32(off)
            .store(0xFFFF_FFF0, std::sync::atomic::Ordering::Relaxed);
    }
    let list = SkipList::new(arena, Bytewise).unwrap();
    assert_eq!(list.capacity(), 4096);
    assert_same(&list, &Model::new());
    list.insert(b"k", b"v").unwrap();
    let mut model = Model::new();
    model.insert(b"k".to_vec(), b"v".to_vec());
    assert_same(&list, &model);
}

/// A list built in a recycled arena (its bytes still the old list's: other keys, links and
/// lengths everywhere) matches a model: nothing of the old list is ever read.
#[test]
fn a_recycled_arena_hosts_a_new_list() {
    let mut rng = Rng::new(77);
    let old = SkipList::new(
        Arena::with_options(
            4 << 20,
            ArenaOptions {
                prefault: false,
                huge_pages: false,
            },
        ),
        Bytewise,
    )
    .unwrap();
    for i in 0..20_000u32 {
        let k = format!("old{:08}", rng.below(1 << 30)).into_bytes();
        let _ = old.insert(&k, &i.to_le_bytes().repeat(8));
    }
    let mut arena = old.into_arena();
    let used = arena.used();
    assert!(used > 1 << 20);
    assert!(arena.recycle());
    assert!(arena.used() < 64);
    let list = SkipList::new(arena, Bytewise).unwrap();
    assert!(list.is_empty());
    let mut model = Model::new();
    for i in 0..5_000u32 {
        let k = format!("new{:06}", rng.below(100_000)).into_bytes();
        let v = format!("v{i}").into_bytes();
        if list.insert(&k, &v).is_ok() {
            model.entry(k).or_insert(v);
        }
    }
    assert_same(&list, &model);
}
