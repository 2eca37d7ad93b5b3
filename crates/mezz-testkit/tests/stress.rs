//! The kill -9 harness (see `mezz_testkit::stress`): the expected-state file, the per-key and
//! per-batch checks on hand-made cases, short real runs whose children are this test binary
//! started again (the `MEZZ_STRESS_CHILD` variable makes it run the child workload instead
//! of the test) and killed with SIGKILL, in their workload or while they open the database
//! (open kills), and the parent's kill accounting with stand-in children (`sh`) whose fate
//! does not depend on timing.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::Duration;

use mezz_testkit::stress::value::{encode_value, key_bytes};
use mezz_testkit::stress::{
    CHILD_ENV, ChildConfig, ChildStage, ExpectedState, Found, OPENING_LINE, READY_LINE, Slot,
    StressConfig, StressFailure, StressSummary, check_slots, child_main, run_child, run_parent,
    stress_options, verify_round,
};
use mezzanine::Db;

/// In a test started as a child (see [`spawn_self`]): runs the child workload and exits.
fn run_as_child_if_asked() {
    if let Ok(args) = std::env::var(CHILD_ENV) {
        let args: Vec<String> = args.lines().map(str::to_string).collect();
        let cfg = ChildConfig::from_args(&args).unwrap();
        std::process::exit(child_main(&cfg));
    }
}

/// Spawns this test binary running only `test` (which must call [`run_as_child_if_asked`]
/// first) as a child of configuration `child`.
fn spawn_self(test: &str, child: &ChildConfig) -> std::io::Result<std::process::Child> {
    Command::new(std::env::current_exe()?)
        .args([test, "--exact", "--test-threads=1"])
        .env(CHILD_ENV, child.to_args().join("\n"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
}

/// Five rounds of a child writing 200 keys, each killed within 400 ms of starting its
/// workload (or, in a round whose seed picks an open kill, while it opens the database).
/// The child has no ops cap, so every round ends in a kill.
#[test]
fn kill9_rounds_keep_every_acknowledged_write() {
    run_as_child_if_asked();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 5, 42);
    cfg.keys = 200;
    cfg.max_kill_delay = Duration::from_millis(400);
    cfg.verify_every = 2;
    let summary = run_parent(&cfg, |child| {
        spawn_self("kill9_rounds_keep_every_acknowledged_write", child)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    println!("{summary}");
    assert_eq!(summary.rounds, 5);
    assert_eq!((summary.kills, summary.exits), (5, 0), "{summary}");
    let open_kills = (0..5).filter(|&r| cfg.open_kill(r).is_some()).count() as u64;
    assert_eq!(summary.open_kills, open_kills, "{summary}");
    assert!(
        summary.to_string().contains("5 kills (100.0% of rounds; "),
        "{summary}"
    );
    assert!(summary.to_string().contains(", 0 clean exits"), "{summary}");
    assert_eq!(summary.keys_verified, 5 * 200);
    assert_eq!(summary.verifies, 3);
    // The state file is left settled: nothing pending.
    let st = ExpectedState::open(&cfg.state_path()).unwrap();
    assert!(st.slots().iter().all(|s| s.pending.is_none()));
    assert_eq!(st.ops(), summary.ops);
}

/// The same over three column families: key `k` lives in family `k % 3`, so batches span
/// families; every acknowledged write survives the kill and every batch is whole, in
/// every family.
#[test]
fn kill9_rounds_with_column_families_keep_every_acknowledged_write() {
    run_as_child_if_asked();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 5, 4242);
    cfg.keys = 300;
    cfg.families = 3;
    cfg.max_kill_delay = Duration::from_millis(400);
    cfg.verify_every = 2;
    let summary = run_parent(&cfg, |child| {
        spawn_self(
            "kill9_rounds_with_column_families_keep_every_acknowledged_write",
            child,
        )
    })
    .unwrap_or_else(|e| panic!("{e}"));
    println!("{summary}");
    assert_eq!(summary.rounds, 5);
    assert_eq!((summary.kills, summary.exits), (5, 0), "{summary}");
    assert_eq!(summary.keys_verified, 5 * 300);
    let db = Db::open(
        dir.path().join("db"),
        stress_options("leveldb", &[]).unwrap(),
    )
    .unwrap();
    assert_eq!(db.column_families(), vec!["default", "cf1", "cf2"]);
}

#[test]
fn expected_state_file_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.expected");
    let mut st = ExpectedState::create(&path, 10).unwrap();
    let v = st.begin_put(3, 0).unwrap();
    assert_eq!(v, 1);
    st.commit(3).unwrap();
    let v2 = st.begin_put(3, 0).unwrap();
    assert_eq!(v2, 2);
    st.begin_delete(7, 55).unwrap();
    st.add_ops(4).unwrap();
    drop(st);

    let st = ExpectedState::open(&path).unwrap();
    assert_eq!(st.keys(), 10);
    assert_eq!(st.ops(), 4);
    assert_eq!(
        st.slot(3),
        Slot {
            committed: Some(1),
            pending: Some(Some(2)),
            max_version: 2,
            batch: 0,
            batch_acked: false,
        }
    );
    assert_eq!(st.slot(7).pending, Some(None));
    assert_eq!(st.slot(7).batch, 55);
    assert_eq!(st.slot(0), Slot::default());

    // A damaged slot names its key.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[64 + 5 * 64 + 2] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let err = ExpectedState::open(&path).unwrap_err().to_string();
    assert!(err.contains("key 5"), "{err}");
    // So does a truncated file.
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert!(ExpectedState::open(&path).is_err());
}

fn slot(committed: Option<u64>, pending: Option<Option<u64>>) -> Slot {
    Slot {
        committed,
        pending,
        max_version: 9,
        ..Slot::default()
    }
}

#[test]
fn a_wrong_version_is_reported_precisely() {
    let slots = [slot(Some(5), None), slot(Some(5), Some(Some(6)))];
    // Key 0 holds a stale version.
    let found = [Found::Version(4), Found::Version(6)];
    let err = check_slots(&slots, &found, 3, 77).unwrap_err();
    assert_eq!(
        err.to_string(),
        "round 3 seed 77 key 0: expected version 5 (pending -), found 4 [after reopen]"
    );
    // Key 1 lost both its committed and its pending version.
    let found = [Found::Version(5), Found::Absent];
    let err = check_slots(&slots, &found, 3, 77).unwrap_err();
    assert_eq!(
        err.to_string(),
        "round 3 seed 77 key 1: expected version 5 (pending 6), found none [after reopen]"
    );
    // Committed or pending are both fine.
    check_slots(&slots, &[Found::Version(5), Found::Version(5)], 3, 77).unwrap();
    check_slots(&slots, &[Found::Version(5), Found::Version(6)], 3, 77).unwrap();
    // A resurrected delete and a corrupt value are violations too.
    let deleted = [slot(None, None)];
    assert!(check_slots(&deleted, &[Found::Version(2)], 0, 0).is_err());
    let bad = Found::from_value(0, Some(&encode_value(1, 2, 40)));
    assert!(matches!(bad, Found::Bad(_)));
    assert!(check_slots(&[slot(Some(2), None)], &[bad], 0, 0).is_err());
}

#[test]
fn torn_batches_are_reported() {
    let member = |committed, pending: Option<u64>, acked: bool| Slot {
        committed,
        pending: (!acked).then_some(pending),
        max_version: 9,
        batch: 12,
        batch_acked: acked,
    };
    // Two pending keys of batch 12: one applied, one not.
    let slots = [
        member(Some(1), Some(2), false),
        member(Some(3), None, false),
    ];
    let err = check_slots(&slots, &[Found::Version(2), Found::Version(3)], 1, 2).unwrap_err();
    assert!(
        matches!(err, StressFailure::TornBatch { batch: 12, .. }),
        "{err}"
    );
    // All applied or none: fine.
    check_slots(&slots, &[Found::Version(2), Found::Absent], 1, 2).unwrap();
    check_slots(&slots, &[Found::Version(1), Found::Version(3)], 1, 2).unwrap();
    // Once one key of the batch was committed, the others must be applied.
    let slots = [member(Some(2), None, true), member(Some(3), None, false)];
    assert!(check_slots(&slots, &[Found::Version(2), Found::Version(3)], 1, 2).is_err());
    check_slots(&slots, &[Found::Version(2), Found::Absent], 1, 2).unwrap();
}

#[test]
fn verify_round_reads_a_real_database() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let mut st = ExpectedState::create(&dir.path().join("db.expected"), 4).unwrap();
    let db = Db::open(&db_path, stress_options("leveldb", &[]).unwrap()).unwrap();
    let v = st.begin_put(1, 0).unwrap();
    db.put(&key_bytes(1), &encode_value(1, v, 50)).unwrap();
    st.commit(1).unwrap();
    let found = verify_round(&db, &st, 0, 9).unwrap();
    assert_eq!(found[1], Found::Version(v));
    assert_eq!(found[0], Found::Absent);

    // The database holds a version the state never committed.
    db.put(&key_bytes(2), &encode_value(2, 8, 50)).unwrap();
    let err = verify_round(&db, &st, 4, 9).unwrap_err();
    assert_eq!(
        err.to_string(),
        "round 4 seed 9 key 2: expected version none (pending -), found 8 [after reopen]"
    );
    db.close().unwrap();
}

#[test]
fn a_failing_child_stops_the_run_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 3, 1);
    cfg.keys = 8;
    cfg.max_kill_delay = Duration::from_secs(10);
    let err = run_parent(&cfg, |_| {
        Command::new("sh")
            .args(["-c", "echo boom >&2; exit 3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    })
    .unwrap_err();
    assert!(
        matches!(&err, StressFailure::Child { round: 0, stderr, .. } if stderr.trim() == "boom"),
        "{err}"
    );
}

#[test]
fn child_arguments_round_trip() {
    let cfg = StressConfig {
        opts: vec![
            "write_buffer_size=128K".into(),
            "bloom_bits_per_key=0".into(),
        ],
        families: 3,
        ..StressConfig::new("some/db/", 3, 5)
    };
    let child = cfg.child(2);
    assert_eq!(child.state, std::path::Path::new("some/db.expected"));
    assert_ne!(child.seed, cfg.child(1).seed);
    assert_eq!(ChildConfig::from_args(&child.to_args()).unwrap(), child);
    assert!(ChildConfig::from_args(&["--db".to_string()]).is_err());
    assert!(stress_options("leveldb", &["no_such_option=1".into()]).is_err());
    assert!(stress_options("leveldb", &child.opts).is_ok());
}

/// Stand-in children run `sh -c script` with piped stdout and stderr.
fn sh(script: &str) -> impl FnMut(&ChildConfig) -> std::io::Result<std::process::Child> + '_ {
    move |_| {
        Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    }
}

#[test]
fn a_child_is_killed_only_after_it_reports_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 4, 3);
    cfg.keys = 8;
    cfg.max_kill_delay = Duration::from_millis(20);
    cfg.open_kill_percent = 0;
    // Other output first, as a test binary prints; the child never exits by itself.
    let script = format!("echo other; echo '{READY_LINE}'; exec sleep 600");
    let summary = run_parent(&cfg, sh(&script)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((summary.rounds, summary.kills, summary.exits), (4, 4, 0));
    assert!((summary.kill_ratio() - 1.0).abs() < f64::EPSILON);

    // A child that exits without reporting its start is counted by its exit code.
    let err = run_parent(&cfg, sh("exit 0")).unwrap_err();
    assert!(
        matches!(&err, StressFailure::TooFewKills(s) if (s.rounds, s.kills, s.exits) == (4, 0, 4)),
        "{err}"
    );
    // A stdout that is not piped is a setup error, not a silent guess.
    let err = run_parent(&cfg, |_| {
        Command::new("sh")
            .args(["-c", "exit 0"])
            .stdout(Stdio::null())
            .spawn()
    })
    .unwrap_err();
    assert!(matches!(err, StressFailure::Setup(_)), "{err}");
}

#[test]
fn clean_exits_fail_the_run_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 3, 4);
    cfg.keys = 8;
    // Each child exits by itself long before the kill delay could pass.
    cfg.max_kill_delay = Duration::from_secs(600);
    let err = run_parent(&cfg, sh("exit 0")).unwrap_err();
    let StressFailure::TooFewKills(s) = &err else {
        panic!("{err}");
    };
    assert_eq!((s.rounds, s.kills, s.exits), (3, 0, 3));
    assert!(
        err.to_string()
            .contains("only 0 of 3 rounds killed the child"),
        "{err}"
    );
    cfg.allow_clean_exits = true;
    let s = run_parent(&cfg, sh("exit 0")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((s.rounds, s.kills, s.exits), (3, 0, 3));
}

#[test]
fn the_clean_exit_limit_is_ten_percent() {
    let at = |rounds, kills, exits| StressSummary {
        rounds,
        kills,
        exits,
        ..StressSummary::default()
    };
    assert!(!at(10, 9, 1).too_few_kills());
    assert!(at(10, 8, 2).too_few_kills());
    assert!(!at(300, 270, 30).too_few_kills());
    assert!(at(300, 269, 31).too_few_kills());
    assert!(!at(0, 0, 0).too_few_kills());
    assert!((at(4, 3, 1).kill_ratio() - 0.75).abs() < f64::EPSILON);
    assert_eq!(at(0, 0, 0).kill_ratio(), 0.0);
}

#[test]
fn a_child_stops_at_its_ops_cap_or_its_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StressConfig::new(dir.path().join("db"), 1, 6);
    ExpectedState::create(&cfg.state_path(), cfg.keys).unwrap();
    let mut child = cfg.child(0);
    assert!(child.time_limit_ms > 2000);
    let mut stages = Vec::new();
    child.ops = 40;
    let report = run_child(&child, |stage| {
        stages.push(stage);
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stages, [ChildStage::Opening, ChildStage::Started]);
    assert_eq!(report.ops, 40);
    // No ops cap: only the time limit (or a kill) ends it.
    child.ops = 0;
    child.time_limit_ms = 1;
    let err = run_child(&child, |_| Ok(())).unwrap_err();
    assert!(
        matches!(&err, StressFailure::NotKilled { round: 0, detail, .. } if detail.contains("still running")),
        "{err}"
    );
}

/// Open kills with real children: a few rounds of workload first, so that there is
/// something to recover, then rounds that all end in an open kill (1 ms at most after the
/// child's opening line), each followed by the usual check of every key. Batches of rounds
/// run until at least one kill struck inside `Db::open` (almost always the first batch).
#[test]
fn open_kills_strike_during_recovery_and_the_database_verifies() {
    run_as_child_if_asked();
    let name = "open_kills_strike_during_recovery_and_the_database_verifies";
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 3, 50);
    cfg.keys = 200;
    cfg.max_kill_delay = Duration::from_millis(300);
    cfg.open_kill_percent = 0;
    let s = run_parent(&cfg, |child| spawn_self(name, child)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((s.kills, s.open_kills), (3, 0), "{s}");

    cfg.open_kill_percent = 100;
    cfg.max_open_kill_delay = Duration::from_millis(1);
    cfg.rounds = 6;
    let mut during_open = 0;
    for batch in 0..4 {
        cfg.seed = 51 + batch;
        assert!((0..cfg.rounds).all(|r| {
            cfg.open_kill(r)
                .is_some_and(|d| d <= cfg.max_open_kill_delay)
        }));
        let s = run_parent(&cfg, |child| spawn_self(name, child)).unwrap_or_else(|e| panic!("{e}"));
        println!("{s}");
        assert_eq!((s.rounds, s.kills, s.exits), (6, 6, 0), "{s}");
        assert_eq!(s.open_kills, 6, "{s}");
        assert_eq!(s.kills_during_open() + s.open_kills_after_open, 6, "{s}");
        assert!(
            s.to_string().contains(&format!(
                "6 kills (100.0% of rounds; {} during open, {} just after it), 0 clean exits",
                s.kills_during_open(),
                s.open_kills_after_open
            )),
            "{s}"
        );
        assert_eq!(s.keys_verified, 6 * 200);
        during_open += s.kills_during_open();
        if during_open > 0 {
            break;
        }
    }
    assert!(during_open > 0, "no open kill struck inside Db::open");

    // The database verifies afterwards, and the state file is settled.
    let st = ExpectedState::open(&cfg.state_path()).unwrap();
    assert!(st.slots().iter().all(|s| s.pending.is_none()));
    let db = Db::open(&cfg.db, stress_options(&cfg.preset, &cfg.opts).unwrap()).unwrap();
    verify_round(&db, &st, 99, 0).unwrap_or_else(|e| panic!("{e}"));
    db.verify().unwrap();
    db.close().unwrap();
}

#[test]
fn open_kills_are_drawn_from_the_round_seed() {
    let mut cfg = StressConfig::new("db", 1000, 9);
    // Default: 10% of the rounds, delays up to 5 ms.
    let picked: Vec<u64> = (0..1000).filter(|&r| cfg.open_kill(r).is_some()).collect();
    assert!((60..=140).contains(&picked.len()), "{}", picked.len());
    assert!(
        (0..1000)
            .filter_map(|r| cfg.open_kill(r))
            .all(|d| d <= Duration::from_millis(5))
    );
    // Reproducible, and independent of the other settings and of the rounds before.
    let mut other = cfg.clone();
    other.max_kill_delay = Duration::from_secs(9);
    other.rounds = 3;
    assert!((0..1000).all(|r| cfg.open_kill(r) == other.open_kill(r)));
    // 0 disables them, 100 makes every round one.
    cfg.open_kill_percent = 0;
    assert!((0..1000).all(|r| cfg.open_kill(r).is_none()));
    cfg.open_kill_percent = 100;
    assert!((0..1000).all(|r| cfg.open_kill(r).is_some()));
    cfg.open_kill_percent = 101;
    let err = run_parent(&cfg, sh("exit 0")).unwrap_err();
    assert!(matches!(err, StressFailure::Setup(_)), "{err}");
}

#[test]
fn an_open_kill_is_timed_from_the_opening_line_and_reported_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 4, 7);
    cfg.keys = 8;
    cfg.open_kill_percent = 100;
    // A child stuck in its open: killed without ever printing the ready line.
    let script = format!("echo other; echo '{OPENING_LINE}'; exec sleep 600");
    let s = run_parent(&cfg, sh(&script)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((s.rounds, s.kills, s.exits), (4, 4, 0), "{s}");
    assert_eq!((s.open_kills, s.open_kills_after_open), (4, 0), "{s}");
    assert!(
        s.to_string()
            .contains("4 kills (100.0% of rounds; 4 during open, 0 just after it), 0 clean exits"),
        "{s}"
    );
    // A child whose open finished before the delay ran out is killed all the same: an open
    // kill just after the open.
    let script = format!("echo '{OPENING_LINE}'; echo '{READY_LINE}'; exec sleep 600");
    let s = run_parent(&cfg, sh(&script)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (s.kills, s.open_kills, s.open_kills_after_open),
        (4, 4, 4),
        "{s}"
    );
    assert_eq!(s.kills_during_open(), 0);
    assert!(
        s.to_string()
            .contains("(100.0% of rounds; 0 during open, 4 just after it)")
    );
    // Without open kills such a child is killed only after its ready line.
    cfg.open_kill_percent = 0;
    let s = run_parent(&cfg, sh(&script)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((s.kills, s.open_kills), (4, 0), "{s}");
}
