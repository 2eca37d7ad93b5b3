//! `compact_range` pushes data down to one sorted level; `verify` then checks every table
//! and the level invariants, and every key still reads back.

use mezzanine::{Db, Options, ReadOptions};

#[test]
fn compact_range_then_verify() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        level0_compaction_trigger: 2,
        max_bytes_for_level_base: 128 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).unwrap();
    // A scrambled key order so tables overlap.
    let n: u64 = 5000;
    for i in 0..n {
        let k = (i * 7919) % n;
        db.put(format!("{k:08}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].files, 0);
    assert!(s.compactions >= 1);
    let report = db.verify().unwrap();
    assert_eq!(report.entries, n);
    assert!(report.tables >= 2, "outputs are cut at target_file_size");
    for i in (0..n).step_by(13) {
        assert!(
            db.get(format!("{i:08}").as_bytes()).unwrap().is_some(),
            "{i}"
        );
    }
    let mut it = db.cursor(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    let mut count = 0;
    while it.valid() {
        if let Some(p) = &prev {
            assert!(p.as_slice() < it.key());
        }
        prev = Some(it.key().to_vec());
        count += 1;
        it.next();
    }
    assert_eq!(count, n);
    let text = db.property("mezz.stats").unwrap();
    assert!(text.contains("write amplification"), "{text}");
    assert_eq!(
        db.property("mezz.num-files-at-level0").as_deref(),
        Some("0")
    );
}
