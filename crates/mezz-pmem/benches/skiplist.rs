//! Inserts/s and gets/s of the arena skip list against `crossbeam_skiplist::SkipMap` (the
//! memtable it is meant to replace), single-threaded and with two threads.
//!
//! Workload: N random 16-byte keys with 100-byte values (N = 1 M by default; `SKL_VALUE`
//! sets another value length), inserted in
//! random order into a fresh structure, then every key looked up once in another random
//! order, then the structure is dropped (its drop time is printed too). With two threads,
//! each inserts (then looks up) half of the keys concurrently.
//!
//! Variants: the arena list on a pre-faulted arena with transparent huge pages (the
//! default), on pre-faulted 4 KiB pages, on lazily faulted 4 KiB pages (first touch of each
//! page paid during the inserts; the time to create a pre-faulted arena is printed in
//! parentheses), and crossbeam's `SkipMap<Vec<u8>, Vec<u8>>` with owned copies of each key
//! and value (what the current memtable does).
//!
//! Two more variants put the list on a media arena (the NVM memtable): on an anonymous
//! `Region` in `volatile` mode (checksums and media hooks, nothing persisted), and on a
//! pool file mapped in `adr` mode with flush emulation (`clwb` + `sfence`: every insert
//! persists its node and its level-0 link, two fences), on `/dev/shm` when present.
//!
//! Run: `cargo bench -p mezz-pmem --bench skiplist` (release profile). Environment:
//! `SKL_N` (number of keys), `SKL_REPS` (repetitions; the best run is printed),
//! `SKL_ONLY` (run only the structures whose name contains this text), `SKL_VALUE` (value
//! length in bytes, 100 by default).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_skiplist::SkipMap;
use mezz_pmem::skiplist::{MAX_HEIGHT, node_size};
mod common;

use common::env_usize;
use mezz_pmem::{Arena, ArenaOptions, Bytewise, Media, PersistMode, SkipList};

const KEY_LEN: usize = 16;

struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Arena bytes for `n` nodes: the expected tower is 4/3 links; leave room for tall towers.
fn arena_capacity(n: usize, value_len: usize) -> usize {
    // Each node may also start a line further on media (its head kept in one line).
    node_size(MAX_HEIGHT, 0, 0)
        + n * (node_size(2, KEY_LEN, value_len) + 8 + mezz_pmem::region::LINE)
}

/// Runs `f(part)` on `threads` threads over disjoint interleaved parts of `items`; returns
/// the wall time.
fn timed<T: Sync>(threads: usize, items: &[T], f: impl Fn(&[T], usize) + Sync) -> Duration {
    let start = Instant::now();
    if threads == 1 {
        f(items, 0);
    } else {
        let chunk = items.len().div_ceil(threads);
        std::thread::scope(|s| {
            for (t, part) in items.chunks(chunk).enumerate() {
                let f = &f;
                s.spawn(move || f(part, t));
            }
        });
    }
    start.elapsed()
}

fn mops(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64() / 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let n = env_usize("SKL_N", 1_000_000);
    let reps = env_usize("SKL_REPS", 2).max(1);
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let keys: Vec<[u8; KEY_LEN]> = (0..n)
        .map(|_| {
            let mut k = [0u8; KEY_LEN];
            k[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
            k[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
            k
        })
        .collect();
    let mut lookups = keys.clone();
    for i in (1..lookups.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        lookups.swap(i, j);
    }
    let value_len = env_usize("SKL_VALUE", 100);
    let value = vec![0x5Au8; value_len];

    println!(
        "{n} keys x ({KEY_LEN} B key + {value_len} B value), best of {reps}; M ops/s (wall time)"
    );
    println!(
        "{:<46} {:>7} {:>22} {:>22} {:>11}",
        "structure", "threads", "insert", "get", "drop"
    );
    let only = std::env::var("SKL_ONLY").unwrap_or_default();
    let heap = |options: ArenaOptions| Source::Heap(options);
    for threads in [1, 2] {
        for (label, source) in [
            ("huge pages, prefault", heap(ArenaOptions::default())),
            (
                "4 KiB pages, prefault",
                heap(ArenaOptions {
                    prefault: true,
                    huge_pages: false,
                }),
            ),
            (
                "4 KiB pages, lazy",
                heap(ArenaOptions {
                    prefault: false,
                    huge_pages: false,
                }),
            ),
            ("media, volatile", Source::Media(PersistMode::Volatile)),
            ("media, adr emulated", Source::Media(PersistMode::Adr)),
        ] {
            let name = format!("arena list, {label}");
            if !name.contains(&only) {
                continue;
            }
            let prefault = !matches!(
                source,
                Source::Heap(ArenaOptions {
                    prefault: false,
                    ..
                })
            );
            let mut best = (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
            for _ in 0..reps {
                let t0 = Instant::now();
                let arena = source.arena(arena_capacity(n, value_len));
                let create = t0.elapsed();
                let list = Arc::new(SkipList::new(arena, Bytewise).expect("arena holds the head"));
                let ins = timed(threads, &keys, |part, _| {
                    for k in part {
                        list.insert(k, &value).expect("insert");
                    }
                });
                assert_eq!(list.len(), n);
                let get = timed(threads, &lookups, |part, _| {
                    let mut found = 0usize;
                    for k in part {
                        found += list
                            .get(k)
                            .expect("a DRAM list is never corrupt")
                            .map_or(0, <[u8]>::len);
                    }
                    assert_eq!(black_box(found), part.len() * value_len);
                });
                let t0 = Instant::now();
                drop(list);
                let dropped = t0.elapsed();
                best = (
                    best.0.min(ins),
                    best.1.min(get),
                    best.2.min(create),
                    best.3.min(dropped),
                );
            }
            let name = if prefault {
                format!("{name} ({:.0} ms)", best.2.as_secs_f64() * 1e3)
            } else {
                name
            };
            report(&name, threads, n, best.0, best.1, best.3);
        }

        if !"crossbeam SkipMap".contains(&only) {
            continue;
        }
        let mut best = (Duration::MAX, Duration::MAX, Duration::MAX);
        for _ in 0..reps {
            let map: SkipMap<Vec<u8>, Vec<u8>> = SkipMap::new();
            let ins = timed(threads, &keys, |part, _| {
                for k in part {
                    map.insert(k.to_vec(), value.to_vec());
                }
            });
            assert_eq!(map.len(), n);
            let get = timed(threads, &lookups, |part, _| {
                let mut found = 0usize;
                for k in part {
                    found += map.get(&k[..]).map_or(0, |e| e.value().len());
                }
                assert_eq!(black_box(found), part.len() * value_len);
            });
            let t0 = Instant::now();
            drop(map);
            let dropped = t0.elapsed();
            best = (best.0.min(ins), best.1.min(get), best.2.min(dropped));
        }
        report(
            "crossbeam SkipMap<Vec<u8>,Vec<u8>>",
            threads,
            n,
            best.0,
            best.1,
            best.2,
        );
    }
}

/// Where a benchmarked list's arena lives.
#[derive(Clone, Copy)]
enum Source {
    /// Heap memory with these options.
    Heap(ArenaOptions),
    /// A pre-faulted region in this mode: anonymous for `Volatile`, else a pool file
    /// (flush emulation on for `Adr`), removed once mapped.
    Media(PersistMode),
}

impl Source {
    fn arena(self, capacity: usize) -> Arena {
        match self {
            Source::Heap(options) => Arena::with_options(capacity, options),
            Source::Media(mode) => {
                let len = capacity.next_multiple_of(4096);
                let region = common::region("skl", len, mode);
                let media: Arc<dyn Media> = region;
                Arena::on_media(media, 0, len).expect("arena on the region")
            }
        }
    }
}

fn report(name: &str, threads: usize, n: usize, ins: Duration, get: Duration, dropped: Duration) {
    println!(
        "{:<46} {:>7} {:>9.2} ({:>8.0} ms) {:>9.2} ({:>8.0} ms) {:>8.1} ms",
        name,
        threads,
        mops(n, ins),
        ins.as_secs_f64() * 1e3,
        mops(n, get),
        get.as_secs_f64() * 1e3,
        dropped.as_secs_f64() * 1e3
    );
}
