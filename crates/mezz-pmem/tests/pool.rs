//! Pool files (superblock checks, allocation, recovery from live extents) and the NVM
//! append log, on real files and under the crash simulation.

#![allow(clippy::unwrap_used)] // Tests may unwrap, helpers included.

use std::path::Path;

use mezz_format::Error;
use mezz_pmem::pool::{DATA_OFFSET, EXTENT_ALIGN, POOL_VERSION, Superblock};
use mezz_pmem::{
    Appended, Extent, FreeList, KeepLines, NvmLogReader, NvmLogWriter, PersistMode, Pool, PowerCut,
    RegionOptions, SimNvm,
};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

const ID: [u8; 16] = *b"0123456789abcdef";
const PAGE: u64 = EXTENT_ALIGN;

fn msync() -> RegionOptions {
    RegionOptions::with_mode(PersistMode::Msync)
}

/// Rewrites bytes of a file.
fn patch(path: &Path, off: usize, bytes: &[u8]) {
    let mut data = std::fs::read(path).unwrap();
    data[off..off + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, data).unwrap();
}

fn corruption_offset(e: &Error) -> u64 {
    match e {
        Error::Corruption {
            file: Some(_),
            offset,
            ..
        } => *offset,
        other => panic!("expected a corruption naming the file, got {other:?}"),
    }
}

#[test]
fn create_then_open_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::create(dir.path(), "NVM-POOL", 10 * PAGE - 5, ID, &msync()).unwrap();
    assert_eq!(pool.capacity(), 10 * PAGE, "rounded up to 4 KiB");
    assert_eq!(pool.data_len(), 9 * PAGE);
    assert_eq!(pool.free_bytes(), 9 * PAGE);
    assert_eq!(pool.path(), dir.path().join("NVM-POOL"));
    let a = pool.alloc(100).unwrap();
    assert_eq!(
        a,
        Extent {
            offset: DATA_OFFSET,
            len: PAGE
        }
    );
    let b = pool.alloc_zeroed(PAGE + 1).unwrap();
    assert_eq!(b.len, 2 * PAGE);
    drop(pool);
    assert!(matches!(
        Pool::create(dir.path(), "NVM-POOL", 10 * PAGE, ID, &msync()),
        Err(Error::Io { .. })
    ));
    let pool = Pool::open(dir.path(), "NVM-POOL", ID, &msync(), &[b]).unwrap();
    assert_eq!(pool.free_bytes(), 7 * PAGE);
    assert_eq!(
        *pool.superblock(),
        Superblock {
            version: POOL_VERSION,
            flags: 0,
            db_id: ID,
            capacity: 10 * PAGE,
            data_offset: DATA_OFFSET,
        }
    );
    // `a` was not passed as live: it is free again and is handed out first.
    assert_eq!(pool.alloc(PAGE).unwrap(), a);
}

/// `create_atomic` leaves the pool under its name only with a durable superblock: a
/// leftover of an interrupted creation (`<name>.creating`, here all zeros) is replaced,
/// the result opens, and an existing pool is never overwritten.
#[test]
fn create_atomic_replaces_a_leftover_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("POOL.creating"), vec![0u8; 8192]).unwrap();
    let pool = Pool::create_atomic(dir.path(), "POOL", 64 * PAGE, ID, &msync()).unwrap();
    assert_eq!(pool.capacity(), 64 * PAGE);
    drop(pool);
    assert!(!dir.path().join("POOL.creating").exists());
    Pool::open(dir.path(), "POOL", ID, &msync(), &[]).unwrap();
    let again = Pool::create_atomic(dir.path(), "POOL", 64 * PAGE, ID, &msync());
    assert!(again.is_err(), "an existing pool must not be overwritten");
    Pool::open(dir.path(), "POOL", ID, &msync(), &[]).unwrap();
}

#[test]
fn tiny_capacity_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Pool::create(dir.path(), "p", PAGE, ID, &msync()),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn damaged_superblocks_give_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p");
    let fresh = || {
        let _ = std::fs::remove_file(&path);
        drop(Pool::create(dir.path(), "p", 4 * PAGE, ID, &msync()).unwrap());
    };
    let open = || Pool::open(dir.path(), "p", ID, &msync(), &[]);

    fresh();
    patch(&path, 0, b"X");
    assert_eq!(corruption_offset(&open().unwrap_err()), 0, "bad magic");

    fresh();
    let crc = std::fs::read(&path).unwrap()[48];
    patch(&path, 48, &[crc ^ 1]);
    assert_eq!(
        corruption_offset(&open().unwrap_err()),
        48,
        "flipped checksum"
    );

    fresh();
    patch(&path, 33, &[0x55]); // capacity changed: checksum no longer matches
    assert_eq!(corruption_offset(&open().unwrap_err()), 48);

    // A newer version with a valid checksum.
    fresh();
    let mut sb = Superblock {
        version: POOL_VERSION + 1,
        flags: 0,
        db_id: ID,
        capacity: 4 * PAGE,
        data_offset: DATA_OFFSET,
    };
    patch(&path, 0, &sb.encode());
    assert!(matches!(
        open().unwrap_err(),
        Error::UnsupportedVersion { found, supported, .. } if found == POOL_VERSION + 1 && supported == POOL_VERSION
    ));

    // Bad geometry with a valid checksum.
    fresh();
    sb.version = POOL_VERSION;
    sb.capacity = 4 * PAGE + 1;
    patch(&path, 0, &sb.encode());
    assert_eq!(corruption_offset(&open().unwrap_err()), 32);

    // Truncated: shorter than the capacity, shorter than the superblock, empty.
    for len in [3 * PAGE, 40, 0] {
        fresh();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len)
            .unwrap();
        let e = open().unwrap_err();
        assert_eq!(corruption_offset(&e), len, "truncated to {len}: {e}");
        assert!(e.to_string().contains("truncated"), "{e}");
    }

    // Another database's pool.
    fresh();
    let e = Pool::open(dir.path(), "p", *b"fedcba9876543210", &msync(), &[]).unwrap_err();
    assert_eq!(corruption_offset(&e), 16);
    assert!(e.to_string().contains("belongs to database"), "{e}");

    // Missing file.
    assert!(matches!(
        Pool::open(dir.path(), "nope", ID, &msync(), &[]),
        Err(Error::Io { .. })
    ));
}

#[test]
fn bad_live_extents_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    drop(Pool::create(dir.path(), "p", 8 * PAGE, ID, &msync()).unwrap());
    let bad: [&[Extent]; 5] = [
        &[
            Extent {
                offset: DATA_OFFSET,
                len: 2 * PAGE,
            },
            Extent {
                offset: DATA_OFFSET + PAGE,
                len: PAGE,
            },
        ],
        &[Extent {
            offset: 7 * PAGE,
            len: 2 * PAGE,
        }],
        &[Extent {
            offset: 0,
            len: PAGE,
        }],
        &[Extent {
            offset: DATA_OFFSET + 64,
            len: PAGE,
        }],
        &[Extent {
            offset: DATA_OFFSET,
            len: 0,
        }],
    ];
    for live in bad {
        let e = Pool::open(dir.path(), "p", ID, &msync(), live).unwrap_err();
        assert!(e.is_corruption(), "{live:?}: {e}");
    }
}

#[test]
fn full_pool_and_bad_frees_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::create(dir.path(), "p", 4 * PAGE, ID, &msync()).unwrap();
    let a = pool.alloc(3 * PAGE).unwrap();
    let e = pool.alloc(1).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("full")),
        "{e}"
    );
    assert!(matches!(pool.alloc(0), Err(Error::InvalidArgument(_))));
    pool.free(a).unwrap();
    assert!(
        matches!(pool.free(a), Err(Error::InvalidArgument(_))),
        "double free"
    );
    assert_eq!(pool.free_bytes(), 3 * PAGE);
    assert_eq!(pool.largest_free(), 3 * PAGE);
}

/// Seeded random alloc/free against a page bitmap; then reopen from the live set.
#[test]
fn allocator_matches_a_reference_model() {
    let dir = tempfile::tempdir().unwrap();
    const PAGES: u64 = 64;
    let pool = Pool::create(dir.path(), "m", (PAGES + 1) * PAGE, ID, &msync()).unwrap();
    let mut used = vec![false; PAGES as usize];
    let mut live: Vec<Extent> = Vec::new();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let page_of = |off: u64| ((off - DATA_OFFSET) / PAGE) as usize;
    for step in 0..3000 {
        if live.is_empty() || rng.random_bool(0.55) {
            let want = rng.random_range(1..=6 * PAGE);
            let pages = want.div_ceil(PAGE) as usize;
            // First fit in the model.
            let fit = (0..=used.len().saturating_sub(pages))
                .find(|&p| used[p..p + pages].iter().all(|u| !u));
            match (pool.alloc(want), fit) {
                (Ok(e), Some(p)) => {
                    assert_eq!(page_of(e.offset), p, "step {step}");
                    assert_eq!(e.len, pages as u64 * PAGE);
                    used[p..p + pages].iter_mut().for_each(|u| *u = true);
                    live.push(e);
                }
                (Err(_), None) => {}
                (got, model) => panic!("step {step}: pool {got:?}, model {model:?}"),
            }
        } else {
            let e = live.swap_remove(rng.random_range(0..live.len()));
            pool.free(e).unwrap();
            let p = page_of(e.offset);
            used[p..p + (e.len / PAGE) as usize]
                .iter_mut()
                .for_each(|u| *u = false);
        }
        let free_pages = used.iter().filter(|u| !**u).count() as u64;
        assert_eq!(pool.free_bytes(), free_pages * PAGE, "step {step}");
    }
    let free_before = pool.free_bytes();
    drop(pool);
    let reopened = Pool::open(dir.path(), "m", ID, &msync(), &live).unwrap();
    assert_eq!(reopened.free_bytes(), free_before);
    // Every free page can be allocated and never overlaps a live extent.
    let mut got = Vec::new();
    while let Ok(e) = reopened.alloc(PAGE) {
        got.push(e);
    }
    assert_eq!(got.len() as u64 * PAGE, free_before);
    for g in got {
        assert!(!used[page_of(g.offset)], "reallocated a live page");
    }
}

#[test]
fn free_list_ranges_are_coalesced() {
    let mut f = FreeList::new(0, 8 * PAGE, PAGE);
    let es: Vec<Extent> = (0..8).map(|_| f.alloc(PAGE).unwrap()).collect();
    for e in es.iter().rev().step_by(2) {
        f.free(*e).unwrap();
    }
    assert_eq!(f.ranges().count(), 4);
    for e in es.iter().step_by(2) {
        f.free(*e).unwrap();
    }
    assert_eq!(
        f.ranges().collect::<Vec<_>>(),
        vec![Extent {
            offset: 0,
            len: 8 * PAGE
        }]
    );
}

#[test]
fn pool_works_under_crash_simulation() {
    let sim = SimNvm::new();
    let opts = RegionOptions::crash_sim(&sim);
    let dir = Path::new("db");
    let pool = Pool::create(dir, "NVM-POOL", 16 * PAGE, ID, &opts).unwrap();
    let e = pool.alloc(PAGE).unwrap();
    drop(pool);
    let after = sim.power_cut(&PowerCut::default());
    let opts2 = RegionOptions::crash_sim(&after);
    let pool = Pool::open(dir, "NVM-POOL", ID, &opts2, &[e]).unwrap();
    assert_eq!(pool.free_bytes(), 14 * PAGE);
    // A superblock that was never persisted does not survive: damage it and check.
    after.damage(&dir.join("NVM-POOL"), 0, b"\0").unwrap();
    assert!(
        Pool::open(dir, "NVM-POOL", ID, &opts2, &[])
            .unwrap_err()
            .is_corruption()
    );
}

// ---- NVM log ----

fn log_setup(sim: &SimNvm) -> (Pool, Extent) {
    let pool = Pool::create(
        Path::new("db"),
        "NVM-POOL",
        8 * PAGE,
        ID,
        &RegionOptions::crash_sim(sim),
    )
    .unwrap();
    let e = pool.alloc(2 * PAGE).unwrap();
    (pool, e)
}

#[test]
fn log_append_sync_reopen() {
    for mode in [
        PersistMode::Msync,
        PersistMode::Adr,
        PersistMode::Eadr,
        PersistMode::Volatile,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let opts = RegionOptions {
            mode,
            emulate_adr: true,
            ..RegionOptions::default()
        };
        let pool = Pool::create(dir.path(), "p", 8 * PAGE, ID, &opts).unwrap();
        let e = pool.alloc(2 * PAGE).unwrap();
        let mut w = NvmLogWriter::create(pool.region().clone(), e, 42).unwrap();
        assert_eq!(w.append(b"first;").unwrap(), Appended::Written);
        assert_eq!(w.append(b"second;").unwrap(), Appended::Written);
        assert_eq!(w.written(), 13);
        assert_eq!(w.synced(), 0);
        // Before sync the reader sees nothing.
        assert_eq!(
            NvmLogReader::open(pool.region(), e).unwrap(),
            (42, Vec::new())
        );
        w.sync().unwrap();
        assert_eq!(w.synced(), 13);
        assert_eq!(w.append(b"unsynced").unwrap(), Appended::Written);
        assert_eq!(
            NvmLogReader::open(pool.region(), e).unwrap(),
            (42, b"first;second;".to_vec())
        );
        drop(w);
        drop(pool);
        let pool = Pool::open(dir.path(), "p", ID, &opts, &[e]).unwrap();
        assert_eq!(
            NvmLogReader::open(pool.region(), e).unwrap(),
            (42, b"first;second;".to_vec())
        );
    }
}

#[test]
fn log_full_and_exclusive() {
    let sim = SimNvm::new();
    let (pool, e) = log_setup(&sim);
    let mut w = NvmLogWriter::create(pool.region().clone(), e, 1).unwrap();
    let room = w.remaining();
    assert_eq!(room, e.len - 128);
    assert_eq!(
        w.append(&vec![1; room as usize + 1]).unwrap(),
        Appended::Full
    );
    assert_eq!(w.written(), 0);
    assert_eq!(
        w.append(&vec![1; room as usize]).unwrap(),
        Appended::Written
    );
    assert_eq!(w.append(b"x").unwrap(), Appended::Full);
    // A second writer over an overlapping extent is refused while the first lives.
    let overlapping = Extent {
        offset: e.offset + PAGE,
        len: PAGE,
    };
    assert!(matches!(
        NvmLogWriter::create(pool.region().clone(), overlapping, 2),
        Err(Error::InvalidArgument(_))
    ));
    drop(w);
    NvmLogWriter::create(pool.region().clone(), overlapping, 2).unwrap();
    // Bad extents.
    for bad in [
        Extent {
            offset: e.offset + 8,
            len: PAGE,
        },
        Extent {
            offset: e.offset,
            len: 128,
        },
        Extent {
            offset: 7 * PAGE,
            len: 2 * PAGE,
        },
    ] {
        assert!(matches!(
            NvmLogWriter::create(pool.region().clone(), bad, 3),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn log_power_cut_keeps_synced_bytes_only() {
    for keep in [KeepLines::None, KeepLines::Random, KeepLines::All] {
        for seed in 0..4 {
            let sim = SimNvm::new();
            let (pool, e) = log_setup(&sim);
            let mut w = NvmLogWriter::create(pool.region().clone(), e, 9).unwrap();
            assert_eq!(w.append(&[7; 300]).unwrap(), Appended::Written);
            w.sync().unwrap();
            assert_eq!(w.append(&[8; 500]).unwrap(), Appended::Written);
            let after = sim.power_cut(&PowerCut {
                keep_unpersisted: keep,
                seed,
            });
            let pool2 = Pool::open(
                Path::new("db"),
                "NVM-POOL",
                ID,
                &RegionOptions::crash_sim(&after),
                &[e],
            )
            .unwrap();
            // The tail only moves in sync: unsynced appends never show, whatever lines
            // reached the media.
            assert_eq!(
                NvmLogReader::open(pool2.region(), e).unwrap(),
                (9, vec![7; 300]),
                "{keep:?}"
            );
        }
    }
}

/// A power cut at every persist point of a log's life, keeping a random subset of the
/// unpersisted lines: the pool opens once its creation returned, the log reads once its
/// creation returned, and the reader gets whole synced appends, at least those whose `sync`
/// returned before the cut.
#[test]
fn log_power_cut_at_every_persist_point() {
    // Returns the extent and the persist points after pool creation, log creation, and
    // each sync.
    let run = |sim: &SimNvm| {
        let (pool, e) = log_setup(sim);
        let mut points = vec![sim.persist_points()];
        let mut w = NvmLogWriter::create(pool.region().clone(), e, 5).unwrap();
        points.push(sim.persist_points());
        for i in 0..5u8 {
            assert_eq!(w.append(&[i; 100]).unwrap(), Appended::Written);
            w.sync().unwrap();
            points.push(sim.persist_points());
        }
        (e, points)
    };
    let points = run(&SimNvm::new()).1;
    let total = *points.last().unwrap();
    assert!(total >= 10);
    for seed in 0..3 {
        for n in 1..=total + 1 {
            let sim = SimNvm::new();
            sim.arm_cut_after(n);
            let (e, _) = run(&sim);
            let after = sim.power_cut(&PowerCut {
                keep_unpersisted: KeepLines::Random,
                seed: seed * 1000 + n,
            });
            // A stage is durable when its last persist point is before the cut.
            let done = |stage: usize| points[stage] < n;
            let opts = RegionOptions::crash_sim(&after);
            let pool = match Pool::open(Path::new("db"), "NVM-POOL", ID, &opts, &[e]) {
                Ok(p) => p,
                Err(err) => {
                    assert!(!done(0), "cut {n}: pool lost after create returned: {err}");
                    continue;
                }
            };
            match NvmLogReader::open(pool.region(), e) {
                Ok((num, bytes)) => {
                    assert_eq!(num, 5);
                    assert_eq!(bytes.len() % 100, 0, "cut {n}");
                    let synced = (0..5).filter(|&k| done(2 + k)).count();
                    assert!(bytes.len() / 100 >= synced, "cut {n}: lost a synced append");
                    for (i, chunk) in bytes.chunks(100).enumerate() {
                        assert_eq!(chunk, &[i as u8; 100][..], "cut {n}");
                    }
                }
                Err(err) => {
                    assert!(err.is_corruption(), "cut {n}: {err}");
                    assert!(!done(1), "cut {n}: log lost after create returned");
                }
            }
        }
    }
}

#[test]
fn log_header_damage_is_detected() {
    let sim = SimNvm::new();
    let (pool, e) = log_setup(&sim);
    let mut w = NvmLogWriter::create(pool.region().clone(), e, 3).unwrap();
    assert_eq!(w.append(b"abc").unwrap(), Appended::Written);
    w.sync().unwrap();
    drop(w);
    let path = Path::new("db").join("NVM-POOL");
    let at = e.offset as usize;
    // Tail beyond the extent.
    let bad_tail = (e.len).to_le_bytes();
    sim.damage(&path, at + 64, &bad_tail).unwrap();
    let err = NvmLogReader::open(pool.region(), e).unwrap_err();
    assert_eq!(corruption_offset(&err), e.offset + 64);
    // Bad header checksum.
    sim.damage(&path, at + 16, &[0xFF]).unwrap();
    assert_eq!(
        corruption_offset(&NvmLogReader::open(pool.region(), e).unwrap_err()),
        e.offset + 32
    );
    // Bad magic.
    sim.damage(&path, at, b"\0").unwrap();
    assert_eq!(
        corruption_offset(&NvmLogReader::open(pool.region(), e).unwrap_err()),
        e.offset
    );
    // Wrong extent length recorded: reading with a different extent.
    let mut w = NvmLogWriter::create(pool.region().clone(), e, 4).unwrap();
    w.sync().unwrap();
    drop(w);
    let shorter = Extent {
        offset: e.offset,
        len: PAGE,
    };
    assert_eq!(
        corruption_offset(&NvmLogReader::open(pool.region(), shorter).unwrap_err()),
        e.offset + 24
    );
    assert_eq!(pool.region().stats().persists, sim.persist_points());
}
