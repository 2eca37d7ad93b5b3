//! With tiny memtables and L0 triggers (2 / 3 / 4), sustained writes outrun compaction:
//! the write path slows down or stops (and says so in the statistics) instead of letting
//! L0 grow without bound, and no write is lost; the write statistics and slow-group
//! traces account for the waits.

use std::collections::BTreeMap;
use std::sync::Arc;

use mezzanine::{Db, Options, ReadOptions};

#[test]
fn back_pressure_engages_and_data_stays_correct() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        write_buffer_size: 64 << 10,
        level0_compaction_trigger: 2,
        level0_slowdown_trigger: 3,
        level0_stop_trigger: 4,
        target_file_size: 64 << 10,
        delayed_write_rate: 4 << 20,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), o).unwrap());
    let threads = 2u32;
    let per_thread = 8_000u32;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    // Scrambled keys so every L0 table overlaps all of L1.
                    let k = (i.wrapping_mul(2_654_435_761) % per_thread) * threads + t;
                    db.put(
                        format!("{k:08}").as_bytes(),
                        format!("{k}-{:0>100}", i).as_bytes(),
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = db.stats();
    assert!(
        s.stalls.delayed_writes + s.stalls.stopped_writes > 0,
        "back-pressure never engaged: {s:?}"
    );
    assert!(s.stalls.total_micros() > 0);
    // Every write's latency is counted once, and a slow group's phases (each timed from
    // the clock reads the group shares) add up to no more than its total.
    assert_eq!(s.write_latency.count, u64::from(threads * per_thread));
    for t in &s.slow_writes.slowest {
        assert!(t.total >= 1000, "{t:?}");
        let phases = t.before_wal() + t.wal + t.insert;
        assert!(phases <= t.total + 2, "phases {phases} > total: {t:?}");
    }
    assert!(
        s.levels[0].files <= 4 + 1,
        "L0 stays bounded by the stop trigger (plus one racing flush)"
    );
    db.wait_for_background().unwrap();

    let mut model = BTreeMap::new();
    for t in 0..threads {
        for i in 0..per_thread {
            let k = (i.wrapping_mul(2_654_435_761) % per_thread) * threads + t;
            model.insert(format!("{k:08}"), format!("{k}-{:0>100}", i));
        }
    }
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    for (k, v) in &model {
        assert!(it.valid(), "missing {k}");
        assert_eq!(it.key(), k.as_bytes());
        assert_eq!(it.value(), v.as_bytes());
        it.next();
    }
    assert!(!it.valid());
    it.status().unwrap();
    db.verify().unwrap();
}
