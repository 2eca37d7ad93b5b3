//! Cost of the NVM memtable's write-group protocols on the persistent skip list: one entry
//! per group (a single-threaded fill), on a pool file under `/dev/shm` (or the temporary
//! directory) in `adr` mode with flush emulation (`clwb` + `sfence`), pre-faulted.
//!
//! - `words fenced, clwb`: reserve word stored, flushed and fenced, insert (node fence, link
//!   fence), commit word stored, flushed and fenced: four fences per group, each word a
//!   plain store into the line the previous group's flush evicted (the engine before
//!   `Media::store_word_uncached`).
//! - `words staged, clwb`: the same words flushed without fences of their own: the reserve
//!   word in the node's fence, the commit word in the link's (`insert_with_then`).
//! - `words fenced`: as `words fenced, clwb` with `PersistentWord::publish` (non-temporal
//!   stores on this media).
//! - `words staged`: as `words staged, clwb` with `PersistentWord::stage`.
//! - `reserve leased`: as `words staged`, the reserve word written by one group in 4096
//!   (set that far ahead): what the engine does for a write group of one entry.
//! - `insert only`: the insert's two fences, no words (the floor of this list's protocol).
//! - `volatile`: the same inserts on an anonymous region in `volatile` mode (no persists).
//!
//! The variants run in turn, `GC_REPS` rounds (default 3), each on a fresh list of `GC_N`
//! entries (default 500 K) of 16-byte keys and 100-byte values in random order; the best
//! round of each is printed in ns per group. Run: `cargo bench -p mezz-pmem --bench
//! group_commit`.

#![allow(clippy::unwrap_used)] // A benchmark binary: failing loudly is fine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mezz_pmem::skiplist::{MAX_HEIGHT, node_size};
mod common;

use common::env_usize;
use mezz_pmem::{Arena, Bytewise, Media, PersistMode, PersistentWord, SkipList};

const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 100;
/// Bytes before the list: the words live in the first line, as in the engine's extents.
const PREFIX: usize = 4096;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    WordsFencedClwb,
    WordsStagedClwb,
    WordsFenced,
    WordsStaged,
    Leased,
    InsertOnly,
    Volatile,
}

fn run(variant: Variant, keys: &[[u8; KEY_LEN]]) -> Duration {
    let capacity =
        node_size(MAX_HEIGHT, 0, 0) + keys.len() * (node_size(2, KEY_LEN, VALUE_LEN) + 8);
    let len = (PREFIX + capacity).next_multiple_of(4096);
    let mode = if variant == Variant::Volatile {
        PersistMode::Volatile
    } else {
        PersistMode::Adr
    };
    let media: Arc<dyn Media> = common::region("gc", len, mode);
    let commit = PersistentWord::new(Arc::clone(&media), 0).unwrap();
    let reserve = PersistentWord::new(Arc::clone(&media), 8).unwrap();
    let m = Arc::clone(&media);
    // The words written as before `store_word_uncached`: a plain store, then a flush.
    let clwb_word = move |off: usize, v: u64, fence: bool| {
        // SAFETY: the word is 8-aligned inside the media (offset 0 or 8 of a page-aligned
        // mapping) and only accessed atomically, by this thread.
        unsafe {
            std::sync::atomic::AtomicU64::from_ptr(m.base().as_ptr().add(off).cast::<u64>())
                .store(v, std::sync::atomic::Ordering::Release);
        }
        m.persist(off, 8).unwrap();
        if fence {
            m.fence().unwrap();
        }
    };
    let list = SkipList::new(
        Arena::on_media(media, PREFIX, len - PREFIX).unwrap(),
        Bytewise,
    )
    .unwrap();
    let value = [0x5Au8; VALUE_LEN];
    let start = Instant::now();
    for (seq, k) in (1u64..).zip(keys) {
        let fill = |kb: &mut [u8], vb: &mut [u8]| {
            kb.copy_from_slice(k);
            vb.copy_from_slice(&value);
        };
        match variant {
            Variant::WordsFencedClwb => {
                clwb_word(8, seq, true);
                list.insert_with(KEY_LEN, VALUE_LEN, fill).unwrap();
                clwb_word(0, seq, true);
            }
            Variant::WordsStagedClwb => {
                clwb_word(8, seq, false);
                list.insert_with_then(KEY_LEN, VALUE_LEN, fill, || {
                    clwb_word(0, seq, false);
                    Ok(())
                })
                .unwrap();
            }
            Variant::WordsFenced => {
                reserve.publish(seq).unwrap();
                list.insert_with(KEY_LEN, VALUE_LEN, fill).unwrap();
                commit.publish(seq).unwrap();
            }
            Variant::WordsStaged => {
                reserve.stage(seq).unwrap();
                list.insert_with_then(KEY_LEN, VALUE_LEN, fill, || commit.stage(seq))
                    .unwrap();
            }
            Variant::Leased => {
                // The engine's reserve lease: one group in 4096 writes the word.
                if seq % 4096 == 1 {
                    reserve.stage(seq + 4096).unwrap();
                }
                list.insert_with_then(KEY_LEN, VALUE_LEN, fill, || commit.stage(seq))
                    .unwrap();
            }
            Variant::InsertOnly | Variant::Volatile => {
                list.insert_with(KEY_LEN, VALUE_LEN, fill).unwrap();
            }
        }
    }
    start.elapsed()
}

fn main() {
    let n = env_usize("GC_N", 500_000);
    let reps = env_usize("GC_REPS", 3).max(1);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<[u8; KEY_LEN]> = (0..n)
        .map(|_| {
            let mut k = [0u8; KEY_LEN];
            for half in k.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                half.copy_from_slice(&x.to_le_bytes());
            }
            k
        })
        .collect();
    let variants = [
        Variant::WordsFencedClwb,
        Variant::WordsStagedClwb,
        Variant::WordsFenced,
        Variant::WordsStaged,
        Variant::Leased,
        Variant::InsertOnly,
        Variant::Volatile,
    ];
    let mut best = [Duration::MAX; 7];
    for _ in 0..reps {
        for (i, &v) in variants.iter().enumerate() {
            best[i] = best[i].min(run(v, &keys));
        }
    }
    println!("{n} groups of one entry (16 B key, 100 B value), best of {reps}");
    println!("variant              ns/group");
    for (v, d) in variants.iter().zip(best) {
        let name = match v {
            Variant::WordsFencedClwb => "words fenced, clwb",
            Variant::WordsStagedClwb => "words staged, clwb",
            Variant::WordsFenced => "words fenced",
            Variant::WordsStaged => "words staged",
            Variant::Leased => "reserve leased",
            Variant::InsertOnly => "insert only",
            Variant::Volatile => "volatile",
        };
        println!("{name:<20} {:>8.0}", d.as_nanos() as f64 / n as f64);
    }
}
