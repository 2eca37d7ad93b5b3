//! Model-based test: random op logs (puts, deletes, batches, gets, scans, iterator walks,
//! snapshots, flushes, range compactions, reopens) applied to the database and to a
//! `BTreeMap` model, with tiny options so flushes and compactions happen all the time.
//!
//! CI runs 16 fixed seeds of 3,000 ops each on `MemFs` (and a few special mixes), plus one
//! seed on the real file system. `MEZZ_MODEL_LONG=<n>` adds a run of `n` seeds of 20,000 ops each
//! (`MEZZ_MODEL_SEED=<s>` picks the first seed of that run). A failing seed is shrunk and
//! printed as a regression test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use std::sync::Arc;

use std::path::Path;

use mezz_env::{MemFs, PosixFs};
use mezz_testkit::{
    GenConfig, Harness, NamedOptions, Op, OptionSets, SeekStart, Step, check_seed, run_log,
    tiny_options,
};
use mezzanine::Preset;

const CI_OPS: usize = 3_000;
const LONG_OPS: usize = 20_000;

/// One option set per preset: the preset with tiny sizes.
fn tiny_sets() -> Vec<NamedOptions> {
    Preset::ALL
        .iter()
        .map(|&p| NamedOptions {
            name: format!("{}/tiny", p.name()),
            options: tiny_options(p),
        })
        .collect()
}

/// Runs `seeds` on `MemFs`, each under one tiny preset chosen round-robin, with background
/// threads for odd seeds and deterministic background work (`manual_background`) for even
/// ones; `MEZZ_BACKGROUND=threads|manual` runs every seed in that mode.
fn run_seeds(seeds: &[u64], ops: usize) {
    let sets = tiny_sets();
    let mode = std::env::var("MEZZ_BACKGROUND").unwrap_or_default();
    for &seed in seeds {
        let mut set = sets[seed as usize % sets.len()].clone();
        let manual = match mode.as_str() {
            "threads" => false,
            "manual" => true,
            _ => seed % 2 == 0,
        };
        if manual {
            set.options.manual_background = true;
            set.name.push_str("+manual");
        }
        eprintln!("model: seed {seed}, {ops} ops, {}", set.name);
        check_seed(seed, ops, &GenConfig::default(), &OptionSets(vec![set]));
    }
}

// Sixteen CI seeds split over two tests so they run on both cores.
#[test]
fn model_memfs_seeds_1_to_8() {
    run_seeds(&[1, 2, 3, 4, 5, 6, 7, 8], CI_OPS);
}

#[test]
fn model_memfs_seeds_9_to_16() {
    run_seeds(&[9, 10, 11, 12, 13, 14, 15, 16], CI_OPS);
}

/// A small key space and many deletes: deep version chains and many tombstones that
/// compaction must drop only when no snapshot and no lower level still needs them.
#[test]
fn model_memfs_hot_keys_and_deletes() {
    let mut cfg = GenConfig {
        num_keys: 24,
        hot_percent: 60,
        ..GenConfig::default()
    };
    cfg.mix.delete = 250;
    cfg.mix.take_snapshot = 40;
    cfg.mix.compact_range = 20;
    let set = tiny_sets().remove(0);
    for seed in [101, 102] {
        eprintln!("model (hot keys): seed {seed}");
        check_seed(seed, CI_OPS, &cfg, &OptionSets(vec![set.clone()]));
    }
}

/// Values up to 300 KiB (WAL records spanning many 32 KiB log blocks, tables larger than
/// their target size) and a larger key space (deeper trees).
#[test]
fn model_memfs_huge_values_and_many_keys() {
    let cfg = GenConfig {
        num_keys: 3_000,
        big_value_percent: 2,
        big_value_len: 100 * 1024..300 * 1024,
        ..GenConfig::default()
    };
    let set = tiny_sets().remove(0);
    for seed in [201, 202] {
        eprintln!("model (huge values): seed {seed}");
        check_seed(seed, CI_OPS, &cfg, &OptionSets(vec![set.clone()]));
    }
}

/// The same kind of log on the real file system (a temporary directory).
#[test]
fn model_posix_one_seed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let ops = mezz_testkit::OpGenerator::new(11, GenConfig::default()).generate(CI_OPS);
    let options = tiny_options(Preset::ALL[0]);
    if let Err(f) = run_log(&ops, Arc::new(PosixFs::new()), &path, &options) {
        panic!("model on PosixFs, seed 11: {f}");
    }
}

/// The long mode: `MEZZ_MODEL_LONG=<n>` seeds of 20,000 ops (skipped when unset).
#[test]
fn model_long() {
    let Some(n) = std::env::var("MEZZ_MODEL_LONG")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return;
    };
    let first = std::env::var("MEZZ_MODEL_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1_000);
    let seeds: Vec<u64> = (first..first + n).collect();
    run_seeds(&seeds, LONG_OPS);
}

/// The harness itself: a database that differs from the model is caught at the op that
/// shows it, by gets, scans, held iterators and the final check alike.
#[test]
fn harness_catches_a_divergence() {
    let fs = Arc::new(MemFs::new());
    let mut h = Harness::open(fs, Path::new("db"), tiny_options(Preset::ALL[0])).unwrap();
    let put = |k: &[u8], v: &[u8]| Op::Put {
        key: k.to_vec(),
        value: v.to_vec(),
    };
    h.apply(0, &put(b"a", b"1")).unwrap();
    h.apply(1, &put(b"b", b"1")).unwrap();
    h.apply(
        2,
        &Op::IterOpen {
            lower: None,
            upper: None,
            start: SeekStart::First,
        },
    )
    .unwrap();
    // Behind the model's back.
    h.db().put(b"a", b"2").unwrap();
    let f = h.apply(3, &Op::Get { key: b"a".to_vec() }).unwrap_err();
    assert_eq!(f.op_index, Some(3));
    assert!(
        f.expected.contains("\"1\"") && f.found.contains("\"2\""),
        "{f}"
    );
    let scan = Op::Iterate {
        lower: None,
        upper: None,
        reverse: false,
        limit: 10,
    };
    assert!(h.apply(4, &scan).is_err());
    // The iterator opened before the stray write still agrees with the model.
    h.apply(
        5,
        &Op::IterStep {
            iter: 0,
            steps: vec![Step::Next, Step::Prev],
        },
    )
    .unwrap();
    assert!(h.final_check().is_err());
}

/// The failure pipeline end to end: a real, deterministic failure (options that refuse to
/// reopen an existing database make the first `Reopen` fail) is found, shrunk to the one op
/// that shows it, and printed as a regression test.
#[test]
fn failures_are_shrunk_and_printed_as_tests() {
    let mut options = tiny_options(Preset::ALL[0]);
    options.error_if_exists = true;
    let sets = OptionSets(vec![NamedOptions {
        name: "refuses-reopen".into(),
        options,
    }]);
    let mut cfg = GenConfig::default();
    cfg.mix.reopen = 40;
    let f = mezz_testkit::find_failure(3, 400, &cfg, &sets)
        .expect("the log holds a reopen, which must fail");
    assert_eq!(f.first.option_set, "refuses-reopen");
    assert!(
        matches!(f.first.failure.op, Some(Op::Reopen)),
        "{}",
        f.first
    );
    assert_eq!(f.ops, vec![Op::Reopen]);
    assert!(f.last.is_some());
    let report = f.report();
    assert!(report.contains("seed 3"), "{report}");
    assert!(
        report.contains("fn seed_3()") && report.contains("Op::Reopen,"),
        "{report}"
    );
}

/// Data written under one option set reads the same under every other: each `Reopen` of
/// the log switches to the next option set (block formats, block sizes, level counts, bloom
/// filters, triggers all change between opens).
#[test]
fn reopen_under_changing_options() {
    reopen_under_changing_options_in(&OptionSets::standard(), false);
}

/// The same with deterministic background work: every seed replays exactly.
#[test]
fn reopen_under_changing_options_manual() {
    reopen_under_changing_options_in(&OptionSets::standard().manual(), true);
}

fn reopen_under_changing_options_in(sets: &OptionSets, manual: bool) {
    let mut cfg = GenConfig::default();
    cfg.mix.reopen = 25;
    let seeds: Vec<u64> = match std::env::var("MEZZ_REOPEN_SEEDS") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![301, 302],
    };
    for seed in seeds {
        let ops = mezz_testkit::OpGenerator::new(seed, cfg.clone()).generate(CI_OPS);
        let fs = Arc::new(MemFs::new());
        let mut first = tiny_options(Preset::ALL[0]);
        first.manual_background = manual;
        let mut h = Harness::open(fs, Path::new("db"), first).unwrap();
        let mut next = 0;
        for (i, op) in ops.iter().enumerate() {
            if *op == Op::Reopen {
                // Never fewer levels than a previous set used: files may live that deep.
                let set = &sets.0[next % sets.len()];
                next += 1;
                let mut o = set.options.clone();
                o.num_levels = o.num_levels.max(7);
                h.set_options(o);
            }
            if let Err(f) = h.apply(i, op) {
                panic!("seed {seed}, after {next} option switches: {f}");
            }
        }
        h.final_check().unwrap();
        assert!(next > 10, "seed {seed}: only {next} reopens");
    }
}

/// The model under the reverse-bytewise comparator: one seed per preset and block format
/// (`OptionSets::reverse_order`; the runner stores keys through `KeyCodec`, so the model's
/// bytewise order is the database's reverse order).
#[test]
fn model_under_the_reverse_order() {
    for (i, set) in OptionSets::reverse_order().0.into_iter().enumerate() {
        eprintln!("model: seed {}, {CI_OPS} ops, {}", 500 + i, set.name);
        check_seed(
            500 + i as u64,
            CI_OPS,
            &GenConfig::default(),
            &OptionSets(vec![set]),
        );
    }
}
