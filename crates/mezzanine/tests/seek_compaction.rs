//! Read-triggered compaction (`Options::seek_compaction`, LevelDB's seek compaction): point
//! reads that search a table in vain and then look further make it due for compaction.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::Arc;

use mezzanine::{Db, Options, Preset, Stats};

/// Three L0 tables, each holding every key of its own round (500 keys over the same
/// range), filters of `bloom_bits_per_key`, and an L0 trigger above three: nothing is due
/// for size.
fn three_l0_tables(seek_compaction: bool, bloom_bits_per_key: u32) -> Db {
    let o = Options {
        fs: Arc::new(mezz_env::MemFs::new()),
        manual_background: true,
        bloom_bits_per_key,
        level0_compaction_trigger: 8,
        level0_slowdown_trigger: 16,
        level0_stop_trigger: 24,
        seek_compaction,
        ..Options::preset(Preset::Leveldb)
    };
    let db = Db::open("/db", o).unwrap();
    for round in 0..3u32 {
        for i in 0..500u32 {
            let k = format!("k{:05}", i * 3 + round);
            db.put(k.as_bytes(), format!("v{round}").as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.run_background_work(usize::MAX).unwrap();
    assert_eq!(db.stats().levels[0].files, 3, "{}", db.stats());
    db
}

/// Reads `n` keys of the oldest table (not its first, which is below the newer tables'
/// ranges): each searches the newest table in vain, then the next one.
fn read_oldest(db: &Db, n: u32) {
    for i in 0..n {
        let k = format!("k{:05}", (i % 499 + 1) * 3);
        assert_eq!(db.get(k.as_bytes()).unwrap().as_deref(), Some(&b"v0"[..]));
    }
}

/// Reads `n` keys of the oldest table, runs the background work that is due, and checks
/// the L0 tables and the seek compactions so far.
fn read_then_expect(db: &Db, n: u32, l0_files: usize, seek_compactions: u64) {
    read_oldest(db, n);
    db.run_background_work(usize::MAX).unwrap();
    let s: Stats = db.stats();
    assert_eq!(
        (s.levels[0].files, s.seek_compactions),
        (l0_files, seek_compactions),
        "{s}"
    );
}

#[test]
fn reads_that_search_l0_tables_in_vain_compact_them() {
    let db = three_l0_tables(true, 0);
    // Below the newest table's allowed searches (100 for a small table): nothing yet.
    read_then_expect(&db, 99, 3, 0);
    // The 100th wasted search of the newest table makes L0 due: all of it (it overlaps)
    // goes to L1, oldest first.
    read_then_expect(&db, 1, 0, 1);
    read_oldest(&db, 500);
    for round in 0..3u32 {
        for i in [0u32, 250, 499] {
            let k = format!("k{:05}", i * 3 + round);
            assert_eq!(
                db.get(k.as_bytes()).unwrap().as_deref(),
                Some(format!("v{round}").as_bytes())
            );
        }
    }
    db.verify().unwrap();
}

#[test]
fn without_seek_compaction_reads_leave_the_tables_as_they_are() {
    let db = three_l0_tables(false, 0);
    read_then_expect(&db, 2000, 3, 0);
}

#[test]
fn searches_a_bloom_filter_answers_are_not_charged() {
    // Each read probes the two newer tables' filters, which answer (but for their few
    // false positives, far fewer than 100 per table in 2,000 reads).
    let db = three_l0_tables(true, 10);
    read_then_expect(&db, 2000, 3, 0);
}
