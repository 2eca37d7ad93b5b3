//! The cost of a checkpoint and of backups of a database of about `GIB` GiB, taken while a
//! writer fills it: `cargo run --release -p mezzanine --example backup_cost -- DIR [GIB
//! [FAMILIES]]`.
//!
//! Fills `DIR/db` with random keys and 1 KiB values up to the size asked (not timed), then
//! starts one writer thread that keeps putting random keys at full speed, and times, one
//! after the other (after 3 s of the writer alone): a checkpoint (`DIR/ckpt`), a first
//! backup into `DIR/backups`, then (after 3 s more of the writer) a second, incremental
//! one, then a verify and a restore of the second. Prints one JSON object: the times, what
//! each step linked, copied and wrote, and the writer's throughput during each step and
//! while nothing else ran. `DIR` must not hold a database; it is left behind for
//! inspection. With `FAMILIES` > 0, that many column families are created besides the
//! default one, and the fill and the writer spread their puts over all of them in turn
//! (the copies then hold every family at one sequence number).

#![allow(clippy::unwrap_used, clippy::expect_used)] // an example

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mezzanine::{BackupEngine, ColumnFamily, Db, Options};

const VALUE: usize = 1024;

fn key(rng: &mut u64) -> [u8; 16] {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&rng.to_be_bytes());
    k[8..].copy_from_slice(&(!*rng).to_le_bytes());
    k
}

fn dir_bytes(p: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        n += if m.is_dir() {
            dir_bytes(&e.path())
        } else {
            m.len()
        };
    }
    n
}

/// Runs `f` while the writer runs; returns its result, seconds, and the writer's puts/s.
fn timed<T>(writes: &AtomicU64, f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (w0, t0) = (writes.load(Ordering::Relaxed), Instant::now());
    let r = f();
    let secs = t0.elapsed().as_secs_f64();
    let w = writes.load(Ordering::Relaxed) - w0;
    (r, secs, w as f64 / secs)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(args.get(1).expect("usage: backup_cost DIR [GIB]"));
    let gib: f64 = args
        .get(2)
        .map_or(1.0, |s| s.parse().expect("GIB: a number"));
    let target = (gib * f64::from(1u32 << 30)) as u64;
    let families: usize = args
        .get(3)
        .map_or(0, |s| s.parse().expect("FAMILIES: a number"));
    let db = Arc::new(Db::open(dir.join("db"), Options::default()).unwrap());
    let mut cfs: Vec<ColumnFamily> = vec![db.default_column_family()];
    for i in 1..=families {
        cfs.push(
            db.create_column_family(&format!("cf{i}"), &Options::default())
                .unwrap(),
        );
    }
    let cfs = Arc::new(cfs);
    let value = vec![b'v'; VALUE];
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let t0 = Instant::now();
    let mut n = 0u64;
    while n * (VALUE as u64 + 16) < target {
        let cf = &cfs[n as usize % cfs.len()];
        db.put_cf(cf, &key(&mut rng), &value).unwrap();
        n += 1;
    }
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    let fill_secs = t0.elapsed().as_secs_f64();
    let db_bytes = dir_bytes(&dir.join("db"));

    let writes = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, writes, stop, value, cfs) = (
            Arc::clone(&db),
            Arc::clone(&writes),
            Arc::clone(&stop),
            value.clone(),
            Arc::clone(&cfs),
        );
        std::thread::spawn(move || {
            let mut rng = 0x2545_f491_4f6c_dd1du64;
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                db.put_cf(&cfs[i % cfs.len()], &key(&mut rng), &value)
                    .unwrap();
                i += 1;
                writes.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let ((), _, alone_rate) = timed(&writes, || std::thread::sleep(Duration::from_secs(3)));
    let db_bytes_at_checkpoint = dir_bytes(&dir.join("db"));
    let (ckpt, ckpt_secs, ckpt_rate) = timed(&writes, || db.checkpoint(dir.join("ckpt")).unwrap());
    let mut engine = BackupEngine::open(dir.join("backups")).unwrap();
    let (b1, b1_secs, b1_rate) = timed(&writes, || engine.create_backup(&db).unwrap());
    std::thread::sleep(Duration::from_secs(3));
    let (b2, b2_secs, b2_rate) = timed(&writes, || engine.create_backup(&db).unwrap());
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let t = Instant::now();
    engine.verify(b2.info.id).unwrap();
    let verify_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    engine.restore(b2.info.id, dir.join("restored")).unwrap();
    let restore_secs = t.elapsed().as_secs_f64();
    let restored = Db::open(dir.join("restored"), Options::default()).unwrap();
    assert_eq!(restored.column_families().len(), families + 1);
    restored.verify().unwrap();
    drop(restored);
    db.close().unwrap();

    println!(
        "{}",
        serde_json::json!({
            "value_bytes": VALUE,
            "column_families": families + 1,
            "fill": { "puts": n, "seconds": fill_secs, "db_bytes": db_bytes },
            "writer_puts_per_sec_alone": alone_rate,
            "db_bytes_at_checkpoint": db_bytes_at_checkpoint,
            "checkpoint": {
                "seconds": ckpt_secs, "writer_puts_per_sec": ckpt_rate,
                "last_sequence": ckpt.last_sequence, "linked": ckpt.linked,
                "copied": ckpt.copied, "materialised": ckpt.materialised,
                "table_bytes": ckpt.table_bytes,
            },
            "backup_1": {
                "seconds": b1_secs, "writer_puts_per_sec": b1_rate, "files": b1.info.num_files,
                "bytes": b1.info.size, "tables_copied": b1.tables_copied,
                "tables_shared": b1.tables_shared, "bytes_written": b1.bytes_copied,
            },
            "backup_2_after_3s_more_writes": {
                "seconds": b2_secs, "writer_puts_per_sec": b2_rate, "files": b2.info.num_files,
                "bytes": b2.info.size, "tables_copied": b2.tables_copied,
                "tables_shared": b2.tables_shared, "bytes_written": b2.bytes_copied,
            },
            "verify_backup_2_seconds": verify_secs,
            "restore_backup_2_seconds": restore_secs,
            "backup_dir_bytes": dir_bytes(&dir.join("backups")),
        })
    );
}
