//! Encode and decode cost per entry of the two data-block formats (KeySet, LevelDB's prefix
//! blocks), without sampling and without I/O: what `bench/papers --paper jigsaw` counts
//! inside flushes and compactions, measured alone. 16-byte user keys (zero-padded decimal
//! numbers, as `mezz bench` writes them) and 100-byte values, sorted; 200,000 entries; the
//! fastest of 7 rounds. Prints nanoseconds per entry:
//! - `block`: adding every entry to a data-block builder and finishing each 4 KiB block
//!   into the pieces a table writes (the format's encode: what JigsawDB removes);
//! - `table`: `TableBuilder::add` on a file that discards its bytes (encode plus the index,
//!   the bloom filter and the properties, which both formats pay alike), and what the
//!   builder's own sampled counter (`encode_nanos`, the engine's `encode_micros`) says;
//! - `decode`: walking every entry of the finished blocks (key and value of each), as a
//!   compaction's input iterators do.
//!
//! Run: `cargo bench -p mezz-format --bench encode`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // A benchmark binary.

use std::hint::black_box;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use mezz_env::WritableFile;
use mezz_format::block::{Block, BlockBuilder, BlockFormat};
use mezz_format::ikey::append_internal_key;
use mezz_format::sst::{TableBuilder, TableBuilderOptions};
use mezz_format::{InternalIterator, KeyOrder, ValueKind};

const N: usize = 200_000;
const ROUNDS: usize = 7;

#[derive(Debug)]
struct Discard(u64);

impl WritableFile for Discard {
    fn append(&mut self, d: &[u8]) -> io::Result<()> {
        self.0 += d.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0
    }
}

fn fastest(mut f: impl FnMut() -> f64) -> f64 {
    (0..ROUNDS).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn main() {
    // Sorted distinct keys from a space of 5 M, as a 5 M-key fill's tables hold them.
    let mut nums: Vec<u64> = (0..N as u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) % 5_000_000)
        .collect();
    nums.sort_unstable();
    nums.dedup();
    let keys: Vec<Vec<u8>> = nums
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut k = Vec::with_capacity(24);
            append_internal_key(
                &mut k,
                format!("{n:016}").as_bytes(),
                i as u64 + 1,
                ValueKind::Value,
            );
            k
        })
        .collect();
    let n = keys.len() as f64;
    let value = vec![b'v'; 100];
    println!(
        "{} entries of 16 + 8 + 100 bytes; ns per entry, fastest of {ROUNDS} rounds",
        keys.len()
    );
    println!("format   block   table  (encode_nanos says)  decode  block bytes/entry");
    for format in [BlockFormat::KeySet, BlockFormat::Prefix] {
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        let block = fastest(|| {
            // Timed per block: the adds and the finish into the pieces a table writes
            // (`finish_parts`, as `TableBuilder` does); keeping a copy is not timed.
            blocks.clear();
            let mut b = BlockBuilder::new(format, 16);
            let mut ns = 0u128;
            let mut keys = keys.iter().peekable();
            while keys.peek().is_some() {
                let t = Instant::now();
                for k in keys.by_ref() {
                    b.add(k, &value);
                    if b.estimated_size() >= 4096 {
                        break;
                    }
                }
                let parts = black_box(b.finish_parts());
                ns += t.elapsed().as_nanos();
                blocks.push(parts.concat());
                b.reset();
            }
            ns as f64 / n
        });
        let bytes: usize = blocks.iter().map(Vec::len).sum();
        let mut counted = 0.0;
        let table = fastest(|| {
            let opts = TableBuilderOptions {
                block_format: format,
                ..TableBuilderOptions::default()
            };
            let mut tb = TableBuilder::new(Box::new(Discard(0)), opts);
            let t = Instant::now();
            for k in &keys {
                tb.add(k, &value).unwrap();
            }
            let ns = t.elapsed().as_nanos() as f64 / n;
            counted = tb.encode_nanos() as f64 / n;
            tb.finish().unwrap();
            ns
        });
        let parsed: Vec<Arc<Block>> = blocks
            .iter()
            .map(|b| Arc::new(Block::new(b.clone(), format).unwrap()))
            .collect();
        let order = KeyOrder::bytewise();
        let decode = fastest(|| {
            let t = Instant::now();
            let mut sum = 0usize;
            for b in &parsed {
                let mut it = b.iter(&order);
                it.seek_to_first();
                while it.valid() {
                    sum += it.key().len() + it.value().len();
                    it.next();
                }
            }
            black_box(sum);
            t.elapsed().as_nanos() as f64 / n
        });
        println!(
            "{:<7} {block:>6.1} {table:>7.1}  {counted:>18.1} {decode:>7.1}  {:>17.1}",
            format!("{format:?}"),
            bytes as f64 / n
        );
    }
}
