//! fjall through its own API, without the harness or the adapter: `fillrandom` then
//! `readrandom` (16-byte keys, values from the harness's generator), with the configuration
//! the `fjall` adapter uses (`src/engines/fjall.rs`, written out again here on purpose),
//! each operation timed. `bench/check-fjall.sh` runs it beside `mezz bench --engine fjall`
//! on the same workload to check that the adapter adds no overhead.
//!
//! ```sh
//! cargo run --release -p mezz-bench --features fjall --example fjall_direct -- \
//!     DIR NUM READS [VALUE_SIZE] [CACHE_BYTES] [MEMTABLE_BYTES] [BLOOM_BITS]
//! ```
//!
//! DIR must not exist (it is created and left behind). Prints one JSON object per benchmark.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fjall::config::{
    BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    PartitioningPolicy, PinningPolicy,
};
use fjall::{CompressionType, Database, KeyspaceCreateOptions};
use hdrhistogram::Histogram;
use mezz_bench::keygen::{ValueGenerator, format_key_into};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn arg(args: &[String], i: usize, default: Option<u64>) -> Res<u64> {
    match (args.get(i), default) {
        (Some(s), _) => Ok(s.parse()?),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(format!("argument {i} missing (see the example's header)").into()),
    }
}

fn report(name: &str, n: u64, elapsed: Duration, h: &Histogram<u64>, found: Option<u64>) {
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{{\"benchmark\":\"{name}\",\"ops\":{n},\"elapsed_secs\":{:.3},\"ops_per_sec\":{:.0},\
         \"p50_us\":{:.2},\"p99_us\":{:.2},\"p999_us\":{:.2},\"max_us\":{:.1},\"found\":{}}}",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        us(0.5),
        us(0.99),
        us(0.999),
        h.max() as f64 / 1000.0,
        found.map_or("null".to_string(), |f| f.to_string()),
    );
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).ok_or("DIR missing")?);
    let num = arg(&args, 2, None)?;
    let reads = arg(&args, 3, None)?;
    let value_size = usize::try_from(arg(&args, 4, Some(100))?)?;
    let cache = arg(&args, 5, Some(8 << 20))?;
    let memtable = arg(&args, 6, Some(64 << 20))?;
    let bloom_bits = arg(&args, 7, Some(10))? as f32;
    if dir.exists() {
        return Err(format!("{} exists", dir.display()).into());
    }

    let db = Database::builder(&dir)
        .cache_size(cache)
        .worker_threads(2)
        .journal_compression(CompressionType::None)
        .open()?;
    let ks = db.keyspace("default", || {
        KeyspaceCreateOptions::default()
            .max_memtable_size(memtable)
            .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(bloom_bits),
            )))
            .filter_block_pinning_policy(PinningPolicy::all(true))
            .index_block_pinning_policy(PinningPolicy::all(true))
            .filter_block_partitioning_policy(PartitioningPolicy::all(false))
            .index_block_partitioning_policy(PartitioningPolicy::all(false))
            .data_block_compression_policy(CompressionPolicy::all(CompressionType::None))
            .index_block_compression_policy(CompressionPolicy::all(CompressionType::None))
    })?;

    let mut key = [0u8; 16];
    let mut values = ValueGenerator::new(value_size);
    let mut rng = SmallRng::seed_from_u64(301);
    let mut h = Histogram::<u64>::new(3)?;
    let start = Instant::now();
    for _ in 0..num {
        format_key_into(rng.random_range(0..num), &mut key);
        let t0 = Instant::now();
        ks.insert(key, values.generate(value_size))?;
        h.record(u64::try_from(t0.elapsed().as_nanos())?)?;
    }
    report("fillrandom", num, start.elapsed(), &h, None);

    // Settle as the harness does: no flush outstanding, no compaction running, twice.
    let mut idle = 0;
    while idle < 2 {
        idle = if db.outstanding_flushes() == 0 && db.active_compactions() == 0 {
            idle + 1
        } else {
            0
        };
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut h = Histogram::<u64>::new(3)?;
    let mut found = 0u64;
    let start = Instant::now();
    for _ in 0..reads {
        format_key_into(rng.random_range(0..num), &mut key);
        let t0 = Instant::now();
        let v = ks.get(key)?;
        h.record(u64::try_from(t0.elapsed().as_nanos())?)?;
        found += u64::from(v.is_some());
    }
    report("readrandom", reads, start.elapsed(), &h, Some(found));
    Ok(())
}
