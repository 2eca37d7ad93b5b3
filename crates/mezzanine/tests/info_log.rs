//! The info log: a `LOG` in the database directory saying what the engine did (options at
//! open, recovery, flushes, compactions, close), rotated at the next open; or the caller's
//! logger (option `info_log`), in which case no `LOG` is written.

use std::sync::Arc;

use mezzanine::info_log::Logger;
use mezzanine::{Db, Options};
use parking_lot::Mutex;

fn fill(db: &Db, n: u32) {
    for i in 0..n {
        db.put(format!("key{i:06}").as_bytes(), &[1u8; 100])
            .expect("put");
    }
}

#[test]
fn the_log_file_tells_what_happened_and_rotates() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    fill(&db, 5000);
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    for expected in [
        "creating",
        "options:",
        "write_buffer_size=",
        "recovered:",
        "flush: memtable",
        "compaction",
        "closed",
    ] {
        assert!(log.contains(expected), "LOG lacks {expected:?}:\n{log}");
    }
    // Every line starts with a UTC timestamp.
    for line in log.lines() {
        let b = line.as_bytes();
        assert!(
            b.len() > 27 && b[4] == b'/' && b[10] == b'-' && b[19] == b'.',
            "{line}"
        );
    }
    let db = Db::open(dir.path(), opts).unwrap();
    db.close().unwrap();
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(
        log.contains("recovering") && !log.contains("creating"),
        "{log}"
    );
    // The recovery line says how long the open's steps took.
    let recovered = log.lines().find(|l| l.contains("recovered:")).unwrap();
    for step in ["ms (manifest ", "nvm ", "wal replay ", "install "] {
        assert!(recovered.contains(step), "{step:?} missing: {recovered}");
    }
    let old: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("LOG.old."))
        .collect();
    assert_eq!(old.len(), 1, "{old:?}");
}

#[derive(Debug, Default)]
struct Lines(Mutex<Vec<String>>);

impl Logger for Lines {
    fn log(&self, line: &str) {
        self.0.lock().push(line.to_string());
    }
}

#[test]
fn a_caller_logger_takes_the_lines_instead_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let lines = Arc::new(Lines::default());
    let opts = Options {
        write_buffer_size: 64 << 10,
        info_log: Some(lines.clone()),
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    fill(&db, 2000);
    db.flush().unwrap();
    db.close().unwrap();
    assert!(!dir.path().join("LOG").exists());
    let got = lines.0.lock();
    assert!(got.iter().any(|l| l.contains("flush: memtable")), "{got:?}");
    assert!(
        got.last().is_some_and(|l| l.ends_with(" closed")),
        "{got:?}"
    );
}

/// An old info log's name carries a time (`LOG.old.<micros>`), not a file number: new
/// files keep being numbered after the database's own files.
#[test]
fn old_info_logs_do_not_raise_file_numbers() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3u32 {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        fill(&db, 10 + round);
        db.flush().unwrap();
        db.close().unwrap();
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("LOG.old.")
    }));
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_suffix(".sst")
            .or_else(|| name.strip_suffix(".log"))
            .or_else(|| name.strip_prefix("MANIFEST-"))
        {
            let n: u64 = n.parse().unwrap();
            assert!(n < 1000, "{name}");
        }
    }
}
