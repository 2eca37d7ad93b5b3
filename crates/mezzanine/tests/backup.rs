//! `BackupEngine` end to end: incremental backups of a run restored one by one and checked
//! against the model at the moment each was taken; purge and delete keep what remaining
//! backups need; a damaged file is found by `verify` and refused by `restore`; a backup of
//! an NVM preset restores as an SSD database; and a process killed at a random moment
//! while it writes, checkpoints and backs up leaves its database, its finished checkpoints
//! and every finished backup sound.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{check, nvm_dir, scan, workload};
use mezzanine::{BackupEngine, Db, Error, Options, Preset, ReadOptions};

fn small(mut o: Options) -> Options {
    o.write_buffer_size = 32 << 10;
    o.target_file_size = 32 << 10;
    o.max_bytes_for_level_base = 128 << 10;
    o.block_size = 1024;
    o.nvm_capacity = 16 << 20;
    o.nvm_prefault = false;
    o
}

fn shared_files(backups: &Path) -> usize {
    std::fs::read_dir(backups.join("shared")).unwrap().count()
}

#[test]
fn every_backup_of_a_run_restores_to_the_model_at_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join("backups");
    // Background work only when asked: a compaction between two backups could rewrite
    // every earlier table, and then nothing would be shared (seed 626619286 of a soak).
    let opts = Options {
        manual_background: true,
        ..small(Options::default())
    };
    let db = Db::open(dir.path().join("db"), opts).unwrap();
    let mut engine = BackupEngine::open(&backups).unwrap();
    let mut model = BTreeMap::new();
    let mut models = Vec::new();
    workload(&db, &mut model, 6000, 0);
    for round in 0..5 {
        // New keys above the rest: the tables of earlier rounds stay as they are.
        for i in 0..(300 * (round + 1)) {
            let k = format!("zz{round:03}-{i:05}").into_bytes();
            let v = format!("v{round}-{i}").into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
        let made = engine.create_backup(&db).unwrap();
        println!("{made:?}");
        assert_eq!(made.info.id, round + 1);
        if round > 0 {
            assert!(made.tables_shared > 0, "nothing shared: {made:?}");
        }
        models.push(model.clone());
    }
    let list = engine.list().unwrap();
    assert_eq!(
        list.iter().map(|b| b.id).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert!(list.windows(2).all(|w| w[0].sequence < w[1].sequence));
    let restore_all = |engine: &BackupEngine, ids: &[u64], tag: &str| {
        for &id in ids {
            engine.verify(id).unwrap();
            let target = dir.path().join(format!("restore-{tag}-{id}"));
            engine.restore(id, &target).unwrap();
            let copy = Db::open(&target, Options::default()).unwrap();
            check(&copy, &models[id as usize - 1]);
            copy.verify().unwrap();
        }
    };
    restore_all(&engine, &[1, 2, 3, 4, 5], "a");

    let before = shared_files(&backups);
    // Compact everything so that new backups share nothing with the old ones.
    db.compact_range(None, None).unwrap();
    assert_eq!(engine.purge_old(2).unwrap(), [1, 2, 3]);
    assert_eq!(
        engine
            .list()
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect::<Vec<_>>(),
        [4, 5]
    );
    assert!(shared_files(&backups) <= before);
    assert!(!backups.join("private/1").exists());
    restore_all(&engine, &[4, 5], "b");
    engine.delete(4).unwrap();
    restore_all(&engine, &[5], "c");
    let err = engine.delete(4).unwrap_err();
    assert!(err.to_string().contains("no backup 4"), "{err}");
    let made = engine.create_backup(&db).unwrap();
    assert_eq!(made.info.id, 6);
    models.push(model.clone());
    engine.purge_old(0).unwrap();
    assert!(engine.list().unwrap().is_empty());
    assert_eq!(shared_files(&backups), 0);
}

#[test]
fn a_damaged_backup_file_is_found_by_verify_and_refused_by_restore() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join("backups");
    let db = Db::open(dir.path().join("db"), small(Options::default())).unwrap();
    let mut engine = BackupEngine::open(&backups).unwrap();
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 4000, 0);
    engine.create_backup(&db).unwrap();
    workload(&db, &mut model, 1000, 1);
    engine.create_backup(&db).unwrap();
    // One byte of the largest shared table flipped.
    let mut shared: Vec<_> = std::fs::read_dir(backups.join("shared"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    shared.sort_by_key(|p| std::fs::metadata(p).unwrap().len());
    let victim = shared.last().unwrap();
    let mut bytes = std::fs::read(victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(victim, &bytes).unwrap();
    let name = victim.file_name().unwrap().to_str().unwrap().to_string();
    let mut damaged = Vec::new();
    for b in engine.list().unwrap() {
        match engine.verify(b.id) {
            Ok(_) => {}
            Err(e @ Error::Corruption { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&name) && text.contains("crc32c"), "{text}");
                damaged.push(b.id);
                let target = dir.path().join(format!("restore-{}", b.id));
                let err = engine.restore(b.id, &target).unwrap_err();
                assert!(matches!(err, Error::Corruption { .. }), "{err}");
                assert!(err.to_string().contains(&name), "{err}");
                assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(!damaged.is_empty());
    // A missing file too (in a backup that holds it); and a damaged meta file.
    std::fs::remove_file(victim).unwrap();
    let id = damaged[0];
    let err = engine.verify(id).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    let meta = backups.join("meta").join(id.to_string());
    let mut text = std::fs::read(&meta).unwrap();
    text[30] ^= 0x01;
    std::fs::write(&meta, &text).unwrap();
    let err = engine.verify(id).unwrap_err();
    assert!(err.to_string().contains("checksum"), "{err}");
    // A restore into a database is refused.
    let err = engine.restore(2, dir.path().join("db")).unwrap_err();
    assert!(err.to_string().contains("holds a database"), "{err}");
}

#[test]
fn a_backup_of_tlsm_restores_as_an_ssd_database() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = small(Options::preset(Preset::Tlsm));
    o.level0_compaction_trigger = 2;
    o.nvm_dir = Some(nvm.path().to_path_buf());
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    let mut engine = BackupEngine::open(dir.path().join("backups")).unwrap();
    let mut model = BTreeMap::new();
    workload(&db, &mut model, 8000, 0);
    let id = engine.create_backup(&db).unwrap().info.id;
    workload(&db, &mut model.clone(), 2000, 1);
    engine.restore(id, dir.path().join("plain")).unwrap();
    let copy = Db::open(dir.path().join("plain"), Options::default()).unwrap();
    check(&copy, &model);
    engine.restore(id, dir.path().join("tlsm")).unwrap();
    let fresh = nvm_dir();
    o.nvm_dir = Some(fresh.path().to_path_buf());
    let copy = Db::open(dir.path().join("tlsm"), o).unwrap();
    check(&copy, &model);
}

// --- Crashes: a child process killed at a random moment ---------------------------------

const CHILD_ENV: &str = "MEZZ_BACKUP_CRASH_CHILD";
const KEYS_PER_ROUND: u64 = 1500;
const KILLS: usize = 4;

fn round_key(round: u64, i: u64) -> Vec<u8> {
    format!("r{round:04}-{i:05}").into_bytes()
}

fn round_value(round: u64, i: u64) -> Vec<u8> {
    format!("value-{round}-{i}-{}", "y".repeat((i % 40) as usize)).into_bytes()
}

/// The state after `rounds` complete rounds.
fn model_after(rounds: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for r in 0..rounds {
        for i in 0..KEYS_PER_ROUND {
            m.insert(round_key(r, i), round_value(r, i));
        }
    }
    if rounds > 0 {
        m.insert(b"rounds".to_vec(), rounds.to_string().into_bytes());
    }
    m
}

/// The number of complete rounds `db` holds (its `rounds` key), after checking that it
/// holds exactly them, plus at most a prefix of the next round when `partial` is allowed.
fn check_rounds(db: &Db, partial: bool, what: &str) -> u64 {
    let got = scan(db, &ReadOptions::default());
    let rounds: u64 = got
        .get(&b"rounds"[..])
        .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
    let mut want = model_after(rounds);
    if partial {
        let mut i = 0;
        while i < KEYS_PER_ROUND && got.contains_key(&round_key(rounds, i)) {
            want.insert(round_key(rounds, i), round_value(rounds, i));
            i += 1;
        }
    }
    assert_eq!(got.len(), want.len(), "{what}: {rounds} rounds");
    assert!(
        got == want,
        "{what}: differs from the model after {rounds} rounds"
    );
    rounds
}

/// The child: rounds of writes, each followed by a checkpoint and a backup, until killed.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let db = Db::open(dir.join("db"), small(Options::default())).unwrap();
    let mut engine = BackupEngine::open(dir.join("backups")).unwrap();
    let start = check_rounds(&db, true, "child start");
    for round in start.. {
        for i in 0..KEYS_PER_ROUND {
            db.put(&round_key(round, i), &round_value(round, i))
                .unwrap();
        }
        db.put(b"rounds", (round + 1).to_string().as_bytes())
            .unwrap();
        db.checkpoint(dir.join(format!("ckpt-{round}"))).unwrap();
        engine.create_backup(&db).unwrap();
    }
}

/// Kills the child at random moments (several times over one directory), and checks after
/// each kill.
#[test]
fn a_process_killed_during_checkpoints_and_backups_leaves_everything_sound() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let seed: u64 = std::env::var("MEZZ_BACKUP_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("seed {seed} (MEZZ_BACKUP_CRASH_SEED)");
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut kills_in_backup = 0;
    let mut kills_in_checkpoint = 0;
    for kill in 0..KILLS {
        let mut child = std::process::Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100 + next() % 1000));
        let _ = child.kill();
        child.wait().unwrap();
        let during_backup = dir.path().join("backups/tmp").exists();
        kills_in_backup += usize::from(during_backup);
        // A checkpoint of its own, or the one a backup starts with.
        let in_backup_tmp = std::fs::read_dir(dir.path().join("backups/tmp"))
            .into_iter()
            .flatten()
            .any(|e| e.unwrap().file_name().to_str().unwrap().ends_with(".tmp"));
        let during_checkpoint = in_backup_tmp
            || std::fs::read_dir(dir.path()).unwrap().any(|e| {
                let name = e.unwrap().file_name();
                let name = name.to_str().unwrap();
                name.starts_with("ckpt-") && name.ends_with(".tmp")
            });
        kills_in_checkpoint += usize::from(during_checkpoint);
        // The database: every acknowledged write (a process crash loses none), at most a
        // prefix of the round being written.
        let db = Db::open(dir.path().join("db"), small(Options::default())).unwrap();
        let rounds = check_rounds(&db, true, &format!("kill {kill}: the database"));
        db.close().unwrap();
        // Every finished checkpoint opens and holds complete rounds.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            if name.starts_with("ckpt-") && !name.ends_with(".tmp") {
                let c = Db::open(&p, Options::default()).unwrap();
                let r = check_rounds(&c, false, &format!("kill {kill}: {name}"));
                assert!(r <= rounds);
            }
        }
        // Every backup verifies and restores to complete rounds, in order.
        let engine = BackupEngine::open(dir.path().join("backups")).unwrap();
        let mut last = 0;
        for b in engine.list().unwrap() {
            engine.verify(b.id).unwrap();
            let target = dir.path().join(format!("restored-{kill}-{}", b.id));
            engine.restore(b.id, &target).unwrap();
            let c = Db::open(&target, Options::default()).unwrap();
            let r = check_rounds(&c, false, &format!("kill {kill}: backup {}", b.id));
            assert!(r > last && r <= rounds, "backup {} holds {r} rounds", b.id);
            last = r;
            drop(c);
            std::fs::remove_dir_all(&target).unwrap();
        }
        println!(
            "kill {kill}: {rounds} rounds, {} backups, during a backup: {during_backup}, \
             during a checkpoint: {during_checkpoint}",
            engine.list().unwrap().len()
        );
    }
    println!(
        "of {KILLS} kills, {kills_in_backup} during a backup, {kills_in_checkpoint} during a \
         checkpoint (a backup's own checkpoint counts for both)"
    );
}
