//! Measures `Db::get` (copies the value) against `Db::get_pinned` (borrows the cached
//! block) on SST-resident data with a warm block cache: `cargo run --release -p mezzanine
//! --example get_pinned [value_size ...]`. Prints ns per lookup for each (and for a pinned
//! lookup copied into a `Vec`, what `get` would cost on the pinned path), best of 5 rounds.

use std::hint::black_box;
use std::time::Instant;

use mezzanine::{Db, Options, Result};

const KEYS: u64 = 200_000;
const LOOKUPS: u64 = 500_000;

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key0000000000000";
    k[3..].copy_from_slice(format!("{i:013}").as_bytes());
    k
}

/// A fixed permutation walk: `i * step mod KEYS` with `step` coprime to `KEYS`.
fn nth(i: u64) -> u64 {
    (i.wrapping_mul(7_919)) % KEYS
}

fn run(value_size: usize) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("mezz-get-pinned-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Options {
        block_cache_capacity: 1 << 30,
        ..Options::default()
    };
    let db = Db::open(&dir, opts)?;
    let value = vec![0x5au8; value_size];
    for i in 0..KEYS {
        db.put(&key(i), &value)?;
    }
    db.flush()?;
    db.compact_range(None, None)?;
    for i in 0..KEYS {
        black_box(db.get(&key(i))?); // warm the block cache
    }
    let (mut best_get, mut best_pinned, mut best_copy) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..5 {
        let t = Instant::now();
        let mut sum = 0usize;
        for i in 0..LOOKUPS {
            sum += db.get(&key(nth(i)))?.map_or(0, |v| v.len());
        }
        best_get = best_get.min(t.elapsed().as_nanos() as f64 / LOOKUPS as f64);
        black_box(sum);
        let t = Instant::now();
        let mut sum = 0usize;
        for i in 0..LOOKUPS {
            sum += db.get_pinned(&key(nth(i)))?.map_or(0, |v| v.len());
        }
        best_pinned = best_pinned.min(t.elapsed().as_nanos() as f64 / LOOKUPS as f64);
        black_box(sum);
        // What `get` would cost on top of the pinned lookup (one copy into a `Vec`).
        let t = Instant::now();
        let mut sum = 0usize;
        for i in 0..LOOKUPS {
            sum += db
                .get_pinned(&key(nth(i)))?
                .map_or(0, |v| black_box(v.into_vec()).len());
        }
        best_copy = best_copy.min(t.elapsed().as_nanos() as f64 / LOOKUPS as f64);
        black_box(sum);
    }
    println!(
        "value {value_size:>5} B: get {best_get:6.0} ns, get_pinned {best_pinned:6.0} ns ({:+.1}%), \
         get_pinned + into_vec {best_copy:6.0} ns ({:+.1}%)",
        (best_pinned / best_get - 1.0) * 100.0,
        (best_copy / best_get - 1.0) * 100.0
    );
    db.close()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn main() -> Result<()> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100, 1024, 4096]
    } else {
        sizes
    };
    for s in sizes {
        run(s)?;
    }
    Ok(())
}
