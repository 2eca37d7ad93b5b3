//! `BackupEngine` end to end: incremental backups of a run restored one by one and checked
//! against the model at the moment each was taken; purge and delete keep what remaining
//! backups need; a damaged file is found by `verify` and refused by `restore`; a backup of
//! an NVM preset restores as an SSD database; and a process killed at a random moment
//! while it writes, checkpoints and backs up leaves its database, its finished checkpoints
//! and every finished backup sound.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::{check, collect, nvm_dir, scan, workload};
use mezzanine::{
    BackupEngine, ColumnFamily, Db, Error, Options, Preset, ReadOptions, WriteBatch, WriteOptions,
};

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

/// The designs composed (rows of a matrix container, NVM tables at L1): a backup copies
/// what lives in NVM as tables, restores as an SSD database and under the preset again.
#[test]
fn a_backup_of_mezzanine_restores_as_an_ssd_database() {
    let dir = tempfile::tempdir().unwrap();
    let nvm = nvm_dir();
    let mut o = common::small_mezzanine_options(nvm.path());
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    let mut engine = BackupEngine::open(dir.path().join("backups")).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..3 {
        workload(&db, &mut model, 8000, round);
    }
    db.wait_for_background().unwrap();
    // And a row the columns have not drained yet.
    workload(&db, &mut model, 1500, 5);
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.levels[1].nvm_files > 0 && s.matrix.rows > 0, "{s}");
    let id = engine.create_backup(&db).unwrap().info.id;
    workload(&db, &mut model.clone(), 2000, 9);
    engine.restore(id, dir.path().join("plain")).unwrap();
    let copy = Db::open(dir.path().join("plain"), Options::default()).unwrap();
    check(&copy, &model);
    copy.close().unwrap();
    engine.restore(id, dir.path().join("mezzanine")).unwrap();
    let fresh = nvm_dir();
    o.nvm_dir = Some(fresh.path().to_path_buf());
    let copy = Db::open(dir.path().join("mezzanine"), o).unwrap();
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

// --- Column families ----------------------------------------------------------------------

/// Every family of `db` (by name) and its keys.
fn scan_families(db: &Db) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> {
    db.column_families()
        .into_iter()
        .map(|name| {
            let cf = db.column_family(&name).unwrap();
            let got = collect(db.cursor_cf(&cf, &ReadOptions::default()).unwrap());
            (name, got)
        })
        .collect()
}

/// The numbers of the tables in `shared/` of the default family (`<n>`) and of family
/// directories (`cf-<id>_<n>`).
fn shared_numbers(backups: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut own = BTreeSet::new();
    let mut families = BTreeSet::new();
    for e in std::fs::read_dir(backups.join("shared")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let parts: Vec<&str> = name.split('_').collect();
        match parts.as_slice() {
            [n, _, _] => own.insert((*n).to_string()),
            [_, n, _, _] => families.insert((*n).to_string()),
            _ => panic!("unexpected shared file {name}"),
        };
    }
    (own, families)
}

/// Backups of a database whose families change between them (one created, one dropped):
/// every backup restores to a database with exactly the families of its time, each equal
/// to its model; later backups share the tables of earlier ones; a family's table and the
/// default family's table of the same number are kept apart.
#[test]
fn every_backup_with_column_families_restores_to_the_models_at_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join("backups");
    let opts = Options {
        manual_background: true,
        ..small(Options::default())
    };
    let db = Db::open(dir.path().join("db"), opts.clone()).unwrap();
    let mut engine = BackupEngine::open(&backups).unwrap();
    let mut models: BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> = BTreeMap::new();
    models.insert("default".into(), BTreeMap::new());
    let mut at_backup = Vec::new();
    db.create_column_family("a", &opts).unwrap();
    models.insert("a".into(), BTreeMap::new());
    for round in 0..5u64 {
        match round {
            1 => {
                db.create_column_family("b", &opts).unwrap();
                models.insert("b".into(), BTreeMap::new());
            }
            3 => {
                db.drop_column_family(&db.column_family("a").unwrap())
                    .unwrap();
                models.remove("a");
                db.create_column_family("c", &opts).unwrap();
                models.insert("c".into(), BTreeMap::new());
            }
            _ => {}
        }
        // New keys above the rest in every family: the tables of earlier rounds stay.
        for (name, model) in &mut models {
            let cf = db.column_family(name).unwrap();
            for i in 0..(200 * (round + 1)) {
                let k = format!("zz{round:03}-{i:05}").into_bytes();
                let v = format!("{name}-{round}-{i}").into_bytes();
                db.put_cf(&cf, &k, &v).unwrap();
                model.insert(k, v);
            }
        }
        // Half the round's last keys stay in the memtables (the backup writes them).
        for (name, model) in &mut models {
            let cf = db.column_family(name).unwrap();
            let k = format!("zz{round:03}-last").into_bytes();
            if round % 2 == 0 {
                db.flush_cf(&cf).unwrap();
            }
            db.put_cf(&cf, &k, b"last").unwrap();
            model.insert(k, b"last".to_vec());
        }
        let made = engine.create_backup(&db).unwrap();
        println!("{made:?}");
        assert_eq!(made.info.id, round + 1);
        if round > 0 {
            assert!(made.tables_shared > 0, "nothing shared: {made:?}");
        }
        at_backup.push(models.clone());
    }
    // Table numbers are per family: some number is both a default family's table and a
    // family's, both kept.
    let (own, families) = shared_numbers(&backups);
    assert!(
        own.intersection(&families).next().is_some(),
        "no table number in two families: {own:?} {families:?}"
    );
    let restore_all = |engine: &BackupEngine, ids: &[u64], tag: &str| {
        for &id in ids {
            engine.verify(id).unwrap();
            let target = dir.path().join(format!("restore-{tag}-{id}"));
            engine.restore(id, &target).unwrap();
            let copy = Db::open(&target, Options::default()).unwrap();
            let want = &at_backup[id as usize - 1];
            let got = scan_families(&copy);
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "backup {id}: families"
            );
            for (name, model) in want {
                assert!(got[name] == *model, "backup {id}: family {name} differs");
            }
            copy.verify().unwrap();
            copy.close().unwrap();
        }
    };
    restore_all(&engine, &[1, 2, 3, 4, 5], "a");
    // A damaged family file is found.
    let victim = std::fs::read_dir(backups.join("private/5"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap()
        .join("CURRENT");
    let good = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, b"MANIFEST-999999\n").unwrap();
    let err = engine.verify(5).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    let err = engine
        .restore(5, dir.path().join("restore-damaged"))
        .unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(!dir.path().join("restore-damaged/CURRENT").exists());
    std::fs::write(&victim, good).unwrap();
    // Purges keep what the remaining backups need.
    db.compact_range(None, None).unwrap();
    assert_eq!(engine.purge_old(2).unwrap(), [1, 2, 3]);
    restore_all(&engine, &[4, 5], "b");
    engine.purge_old(0).unwrap();
    assert_eq!(shared_files(&backups), 0);
}

// --- Crashes with column families --------------------------------------------------------

const FAMILY_CHILD_ENV: &str = "MEZZ_BACKUP_FAMILY_CRASH_CHILD";
const FAMILIES: [&str; 2] = ["a", "b"];

/// The families' options (as the default family's).
fn family_opts() -> Options {
    small(Options::default())
}

/// The child: rounds of batches, each putting a key in every family (the same key and
/// value), each round followed by a checkpoint and a backup, until killed.
#[test]
fn family_crash_child() {
    let Ok(dir) = std::env::var(FAMILY_CHILD_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let db = Db::open(dir.join("db"), family_opts()).unwrap();
    let cfs: Vec<ColumnFamily> = std::iter::once(db.default_column_family())
        .chain(FAMILIES.iter().map(|n| db.column_family(n).unwrap()))
        .collect();
    let mut engine = BackupEngine::open(dir.join("backups")).unwrap();
    let start = check_family_rounds(&db, true, "child start");
    for round in start.. {
        for i in 0..KEYS_PER_ROUND {
            let mut b = WriteBatch::new();
            for cf in &cfs {
                b.put_cf(cf, &round_key(round, i), &round_value(round, i));
            }
            db.write(&WriteOptions::default(), b).unwrap();
        }
        let mut b = WriteBatch::new();
        for cf in &cfs {
            b.put_cf(cf, b"rounds", (round + 1).to_string().as_bytes());
        }
        db.write(&WriteOptions::default(), b).unwrap();
        db.checkpoint(dir.join(format!("ckpt-{round}"))).unwrap();
        engine.create_backup(&db).unwrap();
    }
}

/// Checks that every family of `db` holds the same keys (whole batches), and those
/// complete rounds (plus a prefix of the next when `partial`); returns the rounds.
fn check_family_rounds(db: &Db, partial: bool, what: &str) -> u64 {
    let mut names = vec!["default".to_string()];
    names.extend(FAMILIES.iter().map(|n| (*n).to_string()));
    assert_eq!(db.column_families(), names, "{what}");
    let all = scan_families(db);
    let first = &all["default"];
    for (name, got) in &all {
        assert!(
            got == first,
            "{what}: family {name} differs from the default's"
        );
    }
    check_rounds(db, partial, what)
}

/// `a_process_killed_during_checkpoints_and_backups_leaves_everything_sound` with column
/// families: after each kill the database, every finished checkpoint and every backup hold
/// the same whole batches in every family.
#[test]
fn a_process_killed_during_checkpoints_and_backups_of_families_leaves_everything_sound() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path().join("db"), family_opts()).unwrap();
        for n in FAMILIES {
            db.create_column_family(n, &family_opts()).unwrap();
        }
        db.close().unwrap();
    }
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
    let mut checked_checkpoints = 0;
    for kill in 0..KILLS {
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "family_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(FAMILY_CHILD_ENV, dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200 + next() % 1500));
        let _ = child.kill();
        child.wait().unwrap();
        let during_backup = dir.path().join("backups/tmp").exists();
        let db = Db::open(dir.path().join("db"), family_opts()).unwrap();
        let rounds = check_family_rounds(&db, true, &format!("kill {kill}: the database"));
        db.close().unwrap();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            if name.starts_with("ckpt-") && !name.ends_with(".tmp") {
                let c = Db::open(&p, Options::default()).unwrap();
                let r = check_family_rounds(&c, false, &format!("kill {kill}: {name}"));
                assert!(r <= rounds);
                checked_checkpoints += 1;
            }
        }
        let engine = BackupEngine::open(dir.path().join("backups")).unwrap();
        let mut last = 0;
        for b in engine.list().unwrap() {
            engine.verify(b.id).unwrap();
            let target = dir.path().join(format!("restored-{kill}-{}", b.id));
            engine.restore(b.id, &target).unwrap();
            let c = Db::open(&target, Options::default()).unwrap();
            let r = check_family_rounds(&c, false, &format!("kill {kill}: backup {}", b.id));
            assert!(r > last && r <= rounds, "backup {} holds {r} rounds", b.id);
            last = r;
            drop(c);
            std::fs::remove_dir_all(&target).unwrap();
        }
        println!(
            "kill {kill}: {rounds} rounds, {} backups, during a backup: {during_backup}",
            engine.list().unwrap().len()
        );
    }
    println!("{checked_checkpoints} checkpoints checked");
}
