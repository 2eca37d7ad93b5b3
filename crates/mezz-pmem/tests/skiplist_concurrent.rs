//! Concurrent behaviour of the arena skip list: several writers inserting at once (with
//! contended duplicates), readers running during the inserts, and writers racing to fill
//! the arena.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Rng, scale};
use mezz_pmem::{Arena, ArenaOptions, Bytewise, InsertError, SkipList};

const LAZY: ArenaOptions = ArenaOptions {
    prefault: false,
    huge_pages: true,
};
const WRITERS: usize = 4;

/// Key `i` of writer `w`: interleaved across writers so that they insert next to each other.
fn key(w: usize, i: usize) -> Vec<u8> {
    format!("key{:08}/{w}", i * 7919 % 100_003).into_bytes()
}

fn value_of(k: &[u8]) -> Vec<u8> {
    k.iter().rev().copied().collect()
}

/// Checks that a full scan is strictly increasing and that each value matches its key.
fn check_scan(list: &SkipList<Bytewise>) -> usize {
    let mut n = 0;
    let mut prev: Option<&[u8]> = None;
    for (k, v) in list.iter() {
        if let Some(p) = prev {
            assert!(p < k, "scan out of order: {p:?} then {k:?}");
        }
        assert_eq!(v, value_of(k), "value of {k:?}");
        prev = Some(k);
        n += 1;
    }
    n
}

#[test]
fn concurrent_writers_and_readers() {
    let per_writer = scale(20_000, 60);
    let shared = scale(500, 10);
    let list = Arc::new(
        SkipList::new(
            Arena::with_options(scale(64 << 20, 1 << 20), LAZY),
            Bytewise,
        )
        .unwrap(),
    );
    // progress[w] = number of writer w's own keys known to be inserted.
    let progress: Arc<Vec<AtomicUsize>> =
        Arc::new((0..WRITERS).map(|_| AtomicUsize::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let shared_wins = Arc::new(AtomicUsize::new(0));

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (list, progress, shared_wins) = (
                Arc::clone(&list),
                Arc::clone(&progress),
                Arc::clone(&shared_wins),
            );
            std::thread::spawn(move || {
                for i in 0..per_writer {
                    let k = key(w, i);
                    list.insert(&k, &value_of(&k)).unwrap();
                    progress[w].store(i + 1, Ordering::Release);
                    // Every writer also tries the same shared keys: exactly one must win each.
                    if i < shared {
                        let s = format!("key{:08}/shared", i * 7919 % 100_003).into_bytes();
                        match list.insert(&s, &value_of(&s)) {
                            Ok(()) => {
                                shared_wins.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => assert_eq!(e, InsertError::Duplicate),
                        }
                    }
                }
            })
        })
        .collect();

    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (list, progress, done) =
                (Arc::clone(&list), Arc::clone(&progress), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut rng = Rng::new(100 + r);
                let mut rounds = 0;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    // Every key whose insert returned before this point must be found.
                    for (w, p) in progress.iter().enumerate() {
                        let known = p.load(Ordering::Acquire);
                        if known > 0 {
                            for _ in 0..4 {
                                let k = key(w, rng.below(known));
                                assert_eq!(
                                    list.get(&k).unwrap(),
                                    Some(&value_of(&k)[..]),
                                    "lost {k:?}"
                                );
                            }
                            let mut c = list.cursor();
                            let k = key(w, known - 1);
                            c.seek_ge(&k);
                            assert_eq!(c.key(), &k[..]);
                            c.prev();
                            assert!(!c.valid() || c.key() < &k[..]);
                        }
                    }
                    let before = list.len();
                    let n = check_scan(&list);
                    assert!(
                        n >= before,
                        "a scan sees at least the entries counted before it"
                    );
                    rounds += 1;
                    if finished {
                        return rounds;
                    }
                }
            })
        })
        .collect();

    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() >= 1);
    }

    let wins = shared_wins.load(Ordering::Relaxed);
    assert_eq!(wins, shared, "each shared key inserted exactly once");
    assert_eq!(list.len(), WRITERS * per_writer + shared);
    assert_eq!(check_scan(&list), list.len());
    for w in 0..WRITERS {
        for i in 0..per_writer {
            let k = key(w, i);
            assert_eq!(list.get(&k).unwrap(), Some(&value_of(&k)[..]));
        }
    }
    // Backward iteration agrees with forward iteration.
    let forward: Vec<Vec<u8>> = list.iter().map(|(k, _)| k.to_vec()).collect();
    let mut backward = Vec::new();
    let mut c = list.cursor();
    c.last();
    while c.valid() && backward.len() < scale(2000, 50) {
        backward.push(c.key().to_vec());
        c.prev();
    }
    let tail: Vec<Vec<u8>> = forward.iter().rev().take(backward.len()).cloned().collect();
    assert_eq!(backward, tail);
}

#[test]
fn concurrent_writers_racing_to_fill_the_arena() {
    let capacity = scale(256 << 10, 8 << 10);
    let list = Arc::new(SkipList::new(Arena::new(capacity), Bytewise).unwrap());
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let list = Arc::clone(&list);
            std::thread::spawn(move || {
                let mut rng = Rng::new(w as u64 + 1);
                let (mut ok, mut full) = (Vec::new(), Vec::new());
                let mut i = 0;
                while full.len() < 10 {
                    let k = key(w, i);
                    let mut v = value_of(&k);
                    v.resize(rng.below(100), b'.');
                    match list.insert(&k, &v) {
                        Ok(()) => ok.push((k, v)),
                        Err(InsertError::Full) => full.push(k),
                        Err(InsertError::Duplicate) => panic!("no duplicates here: {k:?}"),
                        Err(e @ (InsertError::Persist(_) | InsertError::Corrupt(_))) => {
                            panic!("a heap arena persists nothing and is never recovered: {e}")
                        }
                    }
                    i += 1;
                }
                (ok, full)
            })
        })
        .collect();
    let mut inserted = BTreeSet::new();
    let mut n = 0;
    for h in writers {
        let (ok, full) = h.join().unwrap();
        for (k, v) in ok {
            assert_eq!(list.get(&k).unwrap(), Some(&v[..]));
            inserted.insert(k);
            n += 1;
        }
        for k in full {
            assert_eq!(
                list.get(&k).unwrap(),
                None,
                "a refused node is not visible: {k:?}"
            );
        }
    }
    assert_eq!(list.len(), n);
    let scanned: BTreeSet<Vec<u8>> = list.iter().map(|(k, _)| k.to_vec()).collect();
    assert_eq!(scanned, inserted);
    assert!(list.memory_usage() <= capacity);
}

/// All writers insert the same keys in the same order, so they collide on every key: each
/// key must be inserted exactly once, whichever writer wins, and the list must stay strictly
/// ordered (a lost race at level 0 is refused as a duplicate, never linked twice).
#[test]
fn writers_colliding_on_every_key() {
    let keys = scale(20_000, 25);
    let list = Arc::new(
        SkipList::new(
            Arena::with_options(scale(16 << 20, 1 << 20), LAZY),
            Bytewise,
        )
        .unwrap(),
    );
    let barrier = Arc::new(std::sync::Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (list, barrier) = (Arc::clone(&list), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let mut wins = 0;
                for i in 0..keys {
                    let k = key(0, i);
                    match list.insert(&k, &value_of(&k)) {
                        Ok(()) => wins += 1,
                        Err(e) => assert_eq!(e, InsertError::Duplicate),
                    }
                }
                wins
            })
        })
        .collect();
    let wins: usize = writers.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(wins, keys);
    assert_eq!(list.len(), keys);
    assert_eq!(check_scan(&list), keys);
    for i in 0..keys {
        let k = key(0, i);
        assert_eq!(list.get(&k).unwrap(), Some(&value_of(&k)[..]));
    }
}
