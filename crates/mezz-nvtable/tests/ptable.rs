//! Persistent tables: buffers, reference and inline tables, verification, damage, and a
//! power cut at every persist point of building (and resuming) a table.

#![allow(clippy::unwrap_used)] // Tests may unwrap, helpers included.

use std::path::Path;
use std::sync::Arc;

use mezz_format::InternalIterator;
use mezz_format::block::{IndexKind, KeySetRef, KeySetWriter};
use mezz_format::ikey::{ValueKind, make_internal_key, user_key};
use mezz_format::iter::EntryRef;
use mezz_format::sst::{BLOCK_TYPE_RAW, append_block_frame};
use mezz_nvtable::ptable::{
    PTable, PTableBuilder, PTableHeader, PTableIter, check_buffer, entry_crc, index_len,
    inline_block_len, write_buffer,
};
use mezz_pmem::sim::{KeepLines, PowerCut};
use mezz_pmem::{Extent, Pool, RegionOptions, SimNvm};

const ID: [u8; 16] = [7; 16];
const PAGE: u64 = 4096;

thread_local! {
    /// Keys of this thread's test are `key~~~~~~~~~~NNNNNN`: every fingerprint (8 bytes
    /// after the tables' 3-byte prefix) ties, so every search decides on whole keys.
    static LONG_KEYS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn ikey(i: u32, seq: u64) -> Vec<u8> {
    let k = if LONG_KEYS.get() {
        format!("key~~~~~~~~~~{i:06}")
    } else {
        format!("key{i:06}")
    };
    make_internal_key(k.as_bytes(), seq, ValueKind::Value)
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat((i % 37) as usize)).into_bytes()
}

fn pool(sim: &SimNvm) -> Pool {
    Pool::create(
        Path::new("db"),
        "NVM-POOL",
        4096 * PAGE,
        ID,
        &RegionOptions::crash_sim(sim),
    )
    .unwrap()
}

/// Builds the data section of a buffer holding `keys` (blocks of about 1 KiB) and the
/// references of its entries relative to the section's start.
fn buffer_data(keys: &[u32], seq: u64) -> (Vec<u8>, Vec<(Vec<u8>, EntryRef)>) {
    let mut data = Vec::new();
    let mut refs = Vec::new();
    let mut w = KeySetWriter::new(IndexKind::ValueRef);
    let mut pending: Vec<(Vec<u8>, u32)> = Vec::new();
    let mut flush =
        |w: &mut KeySetWriter, pending: &mut Vec<(Vec<u8>, u32)>, data: &mut Vec<u8>| {
            if w.is_empty() {
                return;
            }
            let at = data.len() as u64;
            let contents = w.finish().to_vec();
            append_block_frame(data, &contents, BLOCK_TYPE_RAW);
            for (slot, (k, i)) in pending.drain(..).enumerate() {
                let v = value(i);
                refs.push((
                    k.clone(),
                    EntryRef {
                        block: at,
                        block_len: contents.len() as u32,
                        slot: slot as u32,
                        crc: entry_crc(&k, &v),
                    },
                ));
            }
            w.reset();
        };
    for &i in keys {
        let k = ikey(i, seq);
        w.add_with_value(&k, &value(i));
        pending.push((k, i));
        if w.estimated_size() > 1024 {
            flush(&mut w, &mut pending, &mut data);
        }
    }
    flush(&mut w, &mut pending, &mut data);
    (data, refs)
}

/// Writes a buffer + reference table of `keys`; returns (table extent, buffer extent).
fn build_ref_table(pool: &Pool, keys: &[u32], seq: u64, id: u64) -> (Extent, Extent) {
    let (data, refs) = buffer_data(keys, seq);
    let be = pool.alloc(data.len() as u64 + 64).unwrap();
    let at = write_buffer(pool.region(), be, id + 1000, &data).unwrap();
    let te = pool.alloc(index_len(refs.len() as u64, 0, 10)).unwrap();
    let h = PTableHeader {
        id,
        level: 0,
        kind: 0,
        inputs: vec![],
        prefix_len: 3,
    };
    let mut b = index_builder(pool, te, &h);
    for (k, mut r) in refs {
        r.block += at;
        b.add_ref(&k, r).unwrap();
    }
    b.finish().unwrap();
    (te, be)
}

/// A builder of an index with a 10-bit bloom filter in `extent`, bytewise order.
fn index_builder(pool: &Pool, extent: Extent, h: &PTableHeader) -> PTableBuilder {
    PTableBuilder::create(
        pool.region().clone(),
        extent,
        h,
        10,
        &mezz_format::KeyOrder::default(),
    )
    .unwrap()
}

/// Opens the table whose index is `te` over the buffer `be`.
fn open_table(pool: &Pool, te: Extent, be: Extent) -> Arc<PTable> {
    Arc::new(
        PTable::open(
            pool.region().clone(),
            te,
            &[be],
            &mezz_format::KeyOrder::default(),
        )
        .unwrap(),
    )
}

fn collect(t: &Arc<PTable>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = PTableIter::new(Arc::clone(t));
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

#[test]
fn reference_table_round_trips() {
    let sim = SimNvm::new();
    let pool = pool(&sim);
    let keys: Vec<u32> = (0..2000).map(|i| i * 2).collect();
    let (te, be) = build_ref_table(&pool, &keys, 5, 1);
    assert_eq!(check_buffer(pool.region(), be).unwrap().id, 1001);
    let t = open_table(&pool, te, be);
    assert_eq!(t.num_entries(), 2000);
    assert_eq!(t.verify().unwrap(), 2000);
    let all = collect(&t);
    assert_eq!(all.len(), 2000);
    for (n, (k, v)) in all.iter().enumerate() {
        assert_eq!(k, &ikey(keys[n], 5));
        assert_eq!(v, &value(keys[n]));
    }
    // Point seeks, present and absent.
    for i in [0u32, 1, 2, 999, 1000, 3998, 3999] {
        let got = t.seek(&ikey(i, 100)).unwrap();
        let want = keys.iter().find(|&&k| k >= i);
        match (got, want) {
            (Some((k, v, _)), Some(&w)) => {
                assert_eq!(k, ikey(w, 5).as_slice());
                assert_eq!(v, value(w).as_slice());
            }
            (None, None) => {}
            (g, w) => panic!("seek {i}: got {:?}, want {w:?}", g.map(|x| x.0.to_vec())),
        }
        assert!(t.may_contain(user_key(&ikey(i, 1))) || i % 2 == 1);
    }
    // Backwards.
    let mut it = PTableIter::new(Arc::clone(&t));
    it.seek_to_last();
    let mut n = 0;
    while it.valid() {
        n += 1;
        assert_eq!(it.key(), ikey(keys[2000 - n], 5).as_slice());
        it.prev();
    }
    assert_eq!(n, 2000);
    it.seek_for_prev(&ikey(11, 0));
    assert_eq!(it.key(), ikey(10, 5).as_slice());
}

#[test]
fn inline_table_round_trips_and_compaction_points_at_inputs() {
    let sim = SimNvm::new();
    let pool = pool(&sim);
    // An inline table of the odd keys.
    let odd: Vec<u32> = (0..500).map(|i| i * 2 + 1).collect();
    let need = index_len(500, 0, 10)
        + odd
            .iter()
            .map(|&i| inline_block_len(ikey(i, 9).len(), value(i).len()) as u64)
            .sum::<u64>();
    let ie = pool.alloc(need).unwrap();
    let h = PTableHeader {
        id: 2,
        level: 0,
        kind: 0,
        inputs: vec![],
        prefix_len: 3,
    };
    let mut b = index_builder(&pool, ie, &h);
    for &i in &odd {
        b.add_inline(&ikey(i, 9), &value(i)).unwrap();
    }
    b.finish().unwrap();
    let inl = Arc::new(
        PTable::open(
            pool.region().clone(),
            ie,
            &[],
            &mezz_format::KeyOrder::default(),
        )
        .unwrap(),
    );
    assert_eq!(inl.verify().unwrap(), 500);
    // A buffer table of the even keys.
    let even: Vec<u32> = (0..500).map(|i| i * 2).collect();
    let (te, be) = build_ref_table(&pool, &even, 5, 3);
    let buf = open_table(&pool, te, be);
    // Merge both by reference only.
    let oe = pool.alloc(index_len(1000, 2, 10)).unwrap();
    let h = PTableHeader {
        id: 4,
        level: 1,
        kind: 1,
        inputs: vec![2, 3],
        prefix_len: 3,
    };
    let before = pool.region().bytes_persisted();
    let mut out = index_builder(&pool, oe, &h);
    let mut a = PTableIter::new(inl);
    let mut c = PTableIter::new(buf);
    a.seek_to_first();
    c.seek_to_first();
    while a.valid() || c.valid() {
        let take_a = !c.valid()
            || (a.valid() && mezz_format::ikey::compare_internal_keys(a.key(), c.key()).is_lt());
        let it = if take_a { &mut a } else { &mut c };
        out.add_ref(it.key(), it.entry_ref().unwrap()).unwrap();
        it.next();
    }
    out.finish().unwrap();
    // Only nodes were written: far fewer bytes than the entries themselves.
    let index_bytes = pool.region().bytes_persisted() - before;
    assert!(index_bytes < index_len(1000, 2, 10) + 4096, "{index_bytes}");
    let merged = Arc::new(
        PTable::open(
            pool.region().clone(),
            oe,
            &[ie, be],
            &mezz_format::KeyOrder::default(),
        )
        .unwrap(),
    );
    assert_eq!(merged.header().inputs, vec![2, 3]);
    assert_eq!(merged.verify().unwrap(), 1000);
    let all = collect(&merged);
    for (n, (k, v)) in all.iter().enumerate() {
        assert_eq!(k, &ikey(n as u32, if n % 2 == 1 { 9 } else { 5 }));
        assert_eq!(v, &value(n as u32));
    }
    // Without the buffer's extent the references are refused.
    match PTable::open(
        pool.region().clone(),
        oe,
        &[ie],
        &mezz_format::KeyOrder::default(),
    ) {
        Ok(blind) => assert!(blind.verify().unwrap_err().is_corruption()),
        Err(e) => assert!(e.is_corruption(), "{e}"),
    }
}

#[test]
fn damage_is_reported_never_returned() {
    let sim = SimNvm::new();
    let pool = pool(&sim);
    let keys: Vec<u32> = (0..300).collect();
    let (te, be) = build_ref_table(&pool, &keys, 5, 1);
    drop(pool);
    // Flip one byte inside the first block's value area.
    let after = sim.power_cut(&PowerCut::default());
    let path = Path::new("db").join("NVM-POOL");
    after
        .damage(&path, (be.offset + 64 + 100) as usize, b"\xff")
        .unwrap();
    let pool = Pool::open(
        Path::new("db"),
        "NVM-POOL",
        ID,
        &RegionOptions::crash_sim(&after),
        &[te, be],
    )
    .unwrap();
    let t = open_table(&pool, te, be);
    assert!(t.verify().unwrap_err().is_corruption());
    let mut it = PTableIter::new(Arc::clone(&t));
    it.seek_to_first();
    let mut seen = 0;
    while it.valid() {
        seen += 1;
        it.next();
    }
    let err = it.status().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(seen < 300);
    // A damaged header is refused at open.
    after
        .damage(&path, (te.offset + 20) as usize, b"\x01")
        .unwrap();
    assert!(
        PTable::open(
            pool.region().clone(),
            te,
            &[be],
            &mezz_format::KeyOrder::default()
        )
        .unwrap_err()
        .is_corruption()
    );
}

/// Builds a compaction output of `n` inline entries with a checkpoint every 7, then
/// finishes it. Returns the extent.
fn build_resumable(pool: &Pool, n: u32) -> Extent {
    let need = index_len(u64::from(n), 3, 10)
        + (0..n)
            .map(|i| inline_block_len(ikey(i, 1).len(), value(i).len()) as u64)
            .sum::<u64>();
    let e = pool.alloc(need).unwrap();
    let h = PTableHeader {
        id: 9,
        level: 2,
        kind: 1,
        inputs: vec![4, 5, 6],
        prefix_len: 3,
    };
    let mut b = index_builder(pool, e, &h);
    for i in 0..n {
        b.add_inline(&ikey(i, 1), &value(i)).unwrap();
        if i % 7 == 6 {
            b.checkpoint().unwrap();
        }
    }
    b.finish().unwrap();
    e
}

#[test]
fn power_cut_at_every_persist_point_keeps_a_prefix_that_resumes() {
    const N: u32 = 60;
    let probe = SimNvm::new();
    let p = pool(&probe);
    let start = probe.persist_points();
    let e0 = build_resumable(&p, N);
    let total = probe.persist_points();
    drop(p);
    let mut resumed_mid = 0;
    for seed in 0..2u64 {
        for cut in start + 1..=total + 1 {
            let sim = SimNvm::new();
            sim.arm_cut_after(cut);
            let p = pool(&sim);
            let e = build_resumable(&p, N);
            assert_eq!(e, e0);
            drop(p);
            let after = sim.power_cut(&PowerCut {
                keep_unpersisted: if seed == 0 {
                    KeepLines::None
                } else {
                    KeepLines::Random
                },
                seed: cut,
            });
            let p = Pool::open(
                Path::new("db"),
                "NVM-POOL",
                ID,
                &RegionOptions::crash_sim(&after),
                &[e],
            )
            .unwrap();
            let done = match PTable::open(
                p.region().clone(),
                e,
                &[],
                &mezz_format::KeyOrder::default(),
            ) {
                Ok(t) => {
                    // Complete: everything is there.
                    assert_eq!(t.verify().unwrap(), u64::from(N), "cut {cut}");
                    continue;
                }
                Err(err) => err,
            };
            assert!(done.is_corruption(), "cut {cut}: {done}");
            // Incomplete: resume keeps a prefix and continues after it.
            let (mut b, h) = match PTableBuilder::resume(
                p.region().clone(),
                e,
                &[],
                10,
                &mezz_format::KeyOrder::default(),
            ) {
                Ok(x) => x,
                Err(err) => {
                    // Only before the header was durable.
                    assert!(err.is_corruption(), "cut {cut}: {err}");
                    continue;
                }
            };
            assert_eq!(h.inputs, vec![4, 5, 6]);
            let kept = b.num_entries() as u32;
            if kept > 0 && kept < N {
                resumed_mid += 1;
            }
            if kept > 0 {
                assert_eq!(b.last_key(), ikey(kept - 1, 1).as_slice(), "cut {cut}");
            }
            for i in kept..N {
                b.add_inline(&ikey(i, 1), &value(i)).unwrap();
            }
            b.finish().unwrap();
            let t = Arc::new(
                PTable::open(
                    p.region().clone(),
                    e,
                    &[],
                    &mezz_format::KeyOrder::default(),
                )
                .unwrap(),
            );
            assert_eq!(t.verify().unwrap(), u64::from(N), "cut {cut}");
            let all = collect(&t);
            for (i, (k, v)) in all.iter().enumerate() {
                assert_eq!(k, &ikey(i as u32, 1));
                assert_eq!(v, &value(i as u32));
            }
        }
    }
    assert!(
        resumed_mid > 10,
        "only {resumed_mid} cuts resumed mid-table"
    );
}

/// A builder told where each key sits (`add_ref_at`, as a flush that wrote the buffer itself)
/// writes the same index as one that reads each key back from the buffer (`add_ref`), and
/// refuses an offset that leaves the block.
#[test]
fn known_key_offsets_build_the_same_index_as_reading_them() {
    let sim = SimNvm::new();
    let pool = pool(&sim);
    let keys: Vec<u32> = (0..1500).map(|i| i * 3).collect();
    let (data, refs) = buffer_data(&keys, 7);
    let be = pool.alloc(data.len() as u64 + 64).unwrap();
    let at = write_buffer(pool.region(), be, 2000, &data).unwrap();
    let h = PTableHeader {
        id: 1,
        level: 0,
        kind: 0,
        inputs: vec![],
        prefix_len: 0,
    };
    let len = index_len(refs.len() as u64, 0, 10);
    let new_builder = || {
        let te = pool.alloc(len).unwrap();
        let b = index_builder(&pool, te, &h);
        (te, b)
    };
    let build = |known: bool| {
        let (te, mut b) = new_builder();
        for (k, r) in &refs {
            let block = &data[r.block as usize..r.block as usize + r.block_len as usize];
            let ks = KeySetRef::parse_trailer(block, r.block).unwrap();
            let off = ks.key(r.slot as usize).unwrap().as_ptr() as usize - block.as_ptr() as usize;
            let mut r = *r;
            r.block += at;
            if known {
                b.add_ref_at(k, r, off as u32).unwrap();
            } else {
                b.add_ref(k, r).unwrap();
            }
        }
        b.finish().unwrap();
        te
    };
    let (read, known) = (build(false), build(true));
    let (read, known) = (open_table(&pool, read, be), open_table(&pool, known, be));
    assert_eq!(known.verify().unwrap(), 1500);
    assert_eq!(collect(&known), collect(&read));
    for i in [0u32, 1, 2, 3, 2000, 4497, 4498] {
        let k = ikey(i, 100);
        let (a, b) = (known.seek(&k).unwrap(), read.seek(&k).unwrap());
        assert_eq!(a.map(|x| x.0.to_vec()), b.map(|x| x.0.to_vec()), "seek {i}");
    }

    // An offset past the block's end is refused, and nothing is added.
    let (_, mut b) = new_builder();
    let (k, mut r) = refs[0].clone();
    r.block += at;
    let err = b.add_ref_at(&k, r, r.block_len).unwrap_err();
    assert!(err.to_string().contains("outside its block"), "{err}");
}

/// A search starts from the table's DRAM copy of every 16th key (its fences), then walks
/// the two lowest levels in NVM. Every forward and backward seek, on keys present and
/// absent, before, between and after the fences, agrees with a sorted model, for tables
/// with no fence, one, and many; with keys whose fingerprints order them (the fences'
/// fingerprints decide) and with keys whose fingerprints all tie (whole keys decide).
#[test]
fn seeks_from_the_dram_fences_agree_with_a_sorted_model() {
    let sim = SimNvm::new();
    let pool = pool(&sim);
    let shapes = [(1u64, 1u32), (3, 15), (5, 16), (7, 17), (9, 33), (11, 700)];
    for (long, (id, n)) in [false, true]
        .into_iter()
        .flat_map(|l| shapes.into_iter().map(move |s| (l, s)))
    {
        LONG_KEYS.set(long);
        let id = id + if long { 100 } else { 0 };
        let keys: Vec<u32> = (0..n).map(|i| i * 2 + 1).collect();
        let (te, be) = build_ref_table(&pool, &keys, 5, id);
        let t = open_table(&pool, te, be);
        assert_eq!(t.fence_bytes(), 0, "fences are built by the first search");
        let mut it = PTableIter::new(Arc::clone(&t));
        for probe in 0..=(2 * n + 1) {
            // Above the stored sequence number: sorts before the stored entry of `probe`.
            let target = ikey(probe, 100);
            let at_or_after = keys.iter().find(|&&k| k >= probe);
            let got = t.seek(&target).unwrap().map(|e| e.0.to_vec());
            assert_eq!(got, at_or_after.map(|&k| ikey(k, 5)), "n {n} seek {probe}");
            it.seek(&target);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                at_or_after.map(|&k| ikey(k, 5)),
                "n {n} iterator seek {probe}"
            );
            // Below the stored sequence number: the stored entry of `probe` sorts first.
            it.seek_for_prev(&ikey(probe, 1));
            let at_or_before = keys.iter().rev().find(|&&k| k <= probe);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                at_or_before.map(|&k| ikey(k, 5)),
                "n {n} seek_for_prev {probe}"
            );
            // And strictly before: `prev` from the entry found.
            it.seek(&ikey(probe, 100));
            if it.valid() {
                it.prev();
            } else {
                it.seek_to_last();
            }
            let before = keys.iter().rev().find(|&&k| k < probe);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                before.map(|&k| ikey(k, 5)),
                "n {n} prev of seek {probe}"
            );
        }
        // Targets outside the table's key prefix ("key"): before and after every key.
        let outside = |k: &[u8], seq| make_internal_key(k, seq, ValueKind::Value);
        let first = t.seek(&outside(b"a", 1)).unwrap().map(|e| e.0.to_vec());
        assert_eq!(first, Some(ikey(keys[0], 5)), "n {n}");
        assert!(t.seek(&outside(b"z", 1)).unwrap().is_none(), "n {n}");
        it.seek_for_prev(&outside(b"z", 1));
        assert_eq!(it.key(), ikey(keys[n as usize - 1], 5).as_slice(), "n {n}");
        it.seek_for_prev(&outside(b"a", 1));
        assert!(!it.valid(), "n {n}");
        it.status().unwrap();
        // One key in 16 is held in DRAM; a table of fewer than 16 has none.
        if n >= 16 {
            let per_key = t.fence_bytes() / (n as usize / 16);
            assert!(
                (20..200).contains(&per_key),
                "n {n}: {per_key} bytes a fence"
            );
        } else {
            assert_eq!(t.fence_bytes(), 0, "n {n}");
        }
    }
}
