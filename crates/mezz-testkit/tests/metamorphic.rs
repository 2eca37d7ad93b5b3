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

/// The same op logs with a mirror column family: every write also goes into the family
/// `mirror`, in the same batch (`Harness::with_mirror_family`). Under every option set
/// (the presets with an NVM memtable excepted: column families refuse them) the history
/// must equal the reference run's without the family, snapshot reads of the mirror must
/// show what the snapshot shows, and after every reopen and at the end the mirror must
/// hold exactly the model's contents.
#[test]
fn metamorphic_with_a_mirror_column_family() {
    use mezz_env::MemFs;
    use mezz_testkit::{OpGenerator, run_log, run_log_with};
    use std::path::Path;
    use std::sync::Arc;
    let sets = OptionSets::from_env();
    for (seed, n_ops) in [(31, 1_500), (32, 800)] {
        let ops = OpGenerator::new(seed, GenConfig::default()).generate(n_ops);
        let reference = sets.iter().next().unwrap();
        let want = run_log(
            &ops,
            Arc::new(MemFs::new()),
            Path::new("/mirror-db"),
            &reference.options,
        )
        .unwrap_or_else(|f| panic!("seed {seed}, {}: {f}", reference.name));
        let mut ran = 0;
        for set in sets.iter() {
            if set.options.nvm_memtable.in_place() {
                continue;
            }
            let got = run_log_with(
                &ops,
                Arc::new(MemFs::new()),
                Path::new("/mirror-db"),
                &set.options,
                true,
            )
            .unwrap_or_else(|f| panic!("seed {seed}, {} with a mirror family: {f}", set.name));
            if let Some(i) = want.iter().zip(&got).position(|(a, b)| a != b) {
                panic!(
                    "seed {seed}, {} with a mirror family: op {i} ({:?}) showed {} where {} \
                     showed {}",
                    set.name, ops[i], got[i], reference.name, want[i]
                );
            }
            assert_eq!(want.len(), got.len());
            ran += 1;
        }
        eprintln!("metamorphic with a mirror family: seed {seed}, {n_ops} ops, {ran} option sets");
        assert!(ran > 0);
    }
}
