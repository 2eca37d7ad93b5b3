//! Replays the checked-in fuzz corpus (`fuzz/corpus/<target>/`, seeds and regressions) through
//! the fuzzing entry points on the stable toolchain, so every build checks that no decoder
//! panics on an input that once made one fail. `generate_fuzz_seeds` (ignored) rewrites the
//! seed files from the current encoders.

use std::path::PathBuf;

use mezz_format::fuzzing;

type Target = (&'static str, fn(&[u8]));

const TARGETS: &[Target] = &[
    ("keyset_block", fuzzing::fuzz_keyset_block),
    ("prefix_block", fuzzing::fuzz_prefix_block),
    ("sst_table", fuzzing::fuzz_sst_table),
    ("bloom_filter", fuzzing::fuzz_bloom_filter),
    ("log_record", fuzzing::fuzz_log_record),
];

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// Runs every file of the target's corpus; returns how many ran and the paths that panicked.
fn replay(target: &str, f: fn(&[u8])) -> (usize, Vec<String>) {
    let dir = corpus_dir(target);
    mezz_format::fuzzing::replay_corpus(&dir, f)
        .unwrap_or_else(|e| panic!("corpus {} unreadable: {e}", dir.display()))
}

#[test]
fn corpus_replays_without_panics() {
    let mut failures = Vec::new();
    for (target, f) in TARGETS {
        let (n, failed) = replay(target, *f);
        assert!(n > 0, "corpus of {target} is empty");
        failures.extend(failed);
    }
    assert!(failures.is_empty(), "inputs that panic: {failures:?}");
}

#[test]
fn every_target_has_its_seeds() {
    for (target, name, _) in fuzzing::seed_corpus() {
        assert!(
            corpus_dir(target).join(&name).is_file(),
            "seed {target}/{name} missing: run `cargo test -p mezz-format --test fuzz_corpus \
             -- --ignored generate_fuzz_seeds`"
        );
    }
}

/// The table seeds are the current writer's bytes: a table written without compression
/// changes only with a deliberate format change (which regenerates the seeds and keeps the
/// old files as `layout1-*`-style inputs, see below).
#[test]
fn uncompressed_table_seeds_are_unchanged() {
    let mut n = 0;
    for (target, name, bytes) in fuzzing::seed_corpus() {
        if target != "sst_table" || name.contains("lz4") || name.contains("zstd") {
            continue;
        }
        let on_disk = std::fs::read(corpus_dir(target).join(&name)).unwrap();
        assert!(on_disk == bytes, "seed {name}: the writer's bytes changed");
        n += 1;
    }
    assert!(n >= 5);
}

/// Blocks and tables written before KeySet layouts 2 and 3 (the `layout1-*` files: 16-byte
/// entry records; `layout2-*`: 8-byte records, before layout 3) read back the same entries
/// as the same seeds written now, in layout 3 where their keys share one length.
#[test]
fn layout_1_keyset_files_read_as_before() {
    use mezz_format::block::{Block, BlockFormat};
    use std::sync::Arc;

    let read = |target: &str, name: &str| std::fs::read(corpus_dir(target).join(name)).unwrap();
    let version = |bytes: &[u8]| bytes[bytes.len() - 2];
    let block_entries = |bytes: Vec<u8>| {
        let block = Arc::new(Block::new(bytes, BlockFormat::KeySet).unwrap());
        fuzzing::iterator_entries(&mut block.iter(&mezz_format::KeyOrder::default()))
    };
    for n in [0, 1, 5, 40] {
        let old = read("keyset_block", &format!("layout1-keyset-{n}"));
        let new = read("keyset_block", &format!("seed-keyset-{n}"));
        assert_eq!(version(&old), 1);
        // The seeds' keys share one length: layout 3 from 5 entries, layout 2 below.
        let layout = if n >= 5 { 3 } else { 2 };
        assert_eq!(
            version(&new),
            layout,
            "seed-keyset-{n} is written in layout {layout}"
        );
        assert!(new.len() < old.len() || n == 0);
        assert_eq!(block_entries(old), block_entries(new.clone()), "keyset-{n}");
        if n >= 5 {
            let two = read("keyset_block", &format!("layout2-keyset-{n}"));
            assert_eq!(version(&two), 2);
            assert!(new.len() < two.len());
            assert_eq!(block_entries(two), block_entries(new), "keyset-{n}");
        }
    }
    for name in ["keyset-bloom", "keyset-nofilter", "keyset-lz4"] {
        let new = fuzzing::table_entries(&read("sst_table", &format!("seed-sst-{name}")))
            .unwrap_or_else(|e| panic!("seed-sst-{name}: {e}"));
        for layout in ["layout1", "layout2"] {
            let old = fuzzing::table_entries(&read("sst_table", &format!("{layout}-sst-{name}")))
                .unwrap_or_else(|e| panic!("{layout}-sst-{name}: {e}"));
            assert!(!old.is_empty());
            assert_eq!(old, new, "sst {name} against {layout}");
        }
    }
}

#[test]
#[ignore = "rewrites the seed files under fuzz/corpus"]
fn generate_fuzz_seeds() {
    for (target, name, bytes) in fuzzing::seed_corpus() {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
