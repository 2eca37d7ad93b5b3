//! Metamorphic test: one random op log run under every option set (every preset crossed
//! with the variations of `OptionSets::standard`: tiny memtables and tables, L0 triggers
//! 1/2/3, prefix and KeySet blocks, 256-byte blocks, no bloom filter, no block cache), and
//! every preset under the reverse-bytewise comparator (`OptionSets::reverse_order`, keys
//! stored through `KeyCodec`); every history must equal the model's and each other's.
//!
//! CI: 8 seeds of 2,000 ops. `MEZZ_META_LONG=<n>` runs `n` more seeds of 5,000 ops;
//! `MEZZ_OPTION_SETS=a,b` narrows the sets (substring match), e.g. to chase one failure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use mezz_testkit::{GenConfig, OptionSets, check_seed};

const CI_OPS: usize = 2_000;
const LONG_OPS: usize = 5_000;

fn run_seeds(seeds: &[u64]) {
    let sets = OptionSets::from_env();
    for &seed in seeds {
        eprintln!(
            "metamorphic: seed {seed}, {CI_OPS} ops, {} option sets",
            sets.len()
        );
        check_seed(seed, CI_OPS, &GenConfig::default(), &sets);
    }
}

#[test]
fn metamorphic_seeds_1_to_4() {
    run_seeds(&[1, 2, 3, 4]);
}

#[test]
fn metamorphic_seeds_5_to_8() {
    run_seeds(&[5, 6, 7, 8]);
}

#[test]
fn metamorphic_long() {
    let Some(n) = std::env::var("MEZZ_META_LONG")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return;
    };
    let first = std::env::var("MEZZ_META_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(10_000);
    let sets = OptionSets::from_env();
    for seed in first..first + n {
        eprintln!("metamorphic (long): seed {seed}, {LONG_OPS} ops");
        check_seed(seed, LONG_OPS, &GenConfig::default(), &sets);
    }
}
