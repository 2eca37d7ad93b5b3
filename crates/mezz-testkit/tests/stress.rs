//! The kill -9 harness (see `mezz_testkit::stress`): the expected-state file, the per-key and
//! per-batch checks on hand-made cases, a short real run whose children are this test
//! binary started again (the `MEZZ_STRESS_CHILD` variable makes it run the child workload
//! instead of the test) and killed with SIGKILL, and the parent's kill accounting with
//! stand-in children (`sh`) whose fate does not depend on timing.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::Duration;

use mezz_testkit::stress::value::{encode_value, key_bytes};
use mezz_testkit::stress::{
    CHILD_ENV, ChildConfig, ExpectedState, Found, READY_LINE, Slot, StressConfig, StressFailure,
    StressSummary, check_slots, child_main, run_child, run_parent, stress_options, verify_round,
};
use mezzanine::Db;

/// Five rounds of a child writing 200 keys, each killed within 400 ms of starting its
/// workload. The child has no ops cap, so every round ends in a kill.
#[test]
fn kill9_rounds_keep_every_acknowledged_write() {
    if let Ok(args) = std::env::var(CHILD_ENV) {
        let args: Vec<String> = args.lines().map(str::to_string).collect();
        let cfg = ChildConfig::from_args(&args).unwrap();
        std::process::exit(child_main(&cfg));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = StressConfig::new(dir.path().join("db"), 5, 42);
    cfg.keys = 200;
    cfg.max_kill_delay = Duration::from_millis(400);
    cfg.verify_every = 2;
    let exe = std::env::current_exe().unwrap();
    let summary = run_parent(&cfg, |child| {
        Command::new(&exe)
            .args([
                "kill9_rounds_keep_every_acknowledged_write",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, child.to_args().join("\n"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    println!("{summary}");
    assert_eq!(summary.rounds, 5);
    assert_eq!((summary.kills, summary.exits), (5, 0), "{summary}");
    assert!(
        summary
            .to_string()
            .contains("5 kills (100.0% of rounds), 0 clean exits")
    );
    assert_eq!(summary.keys_verified, 5 * 200);
    assert_eq!(summary.verifies, 3);
    // The state file is left settled: nothing pending.
    let st = ExpectedState::open(&cfg.state_path()).unwrap();
    assert!(st.slots().iter().all(|s| s.pending.is_none()));
    assert_eq!(st.ops(), summary.ops);
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
    let mut started = false;
    child.ops = 40;
    let report = run_child(&child, || {
        started = true;
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(started);
    assert_eq!(report.ops, 40);
    // No ops cap: only the time limit (or a kill) ends it.
    child.ops = 0;
    child.time_limit_ms = 1;
    let err = run_child(&child, || Ok(())).unwrap_err();
    assert!(
        matches!(&err, StressFailure::NotKilled { round: 0, detail, .. } if detail.contains("still running")),
        "{err}"
    );
}
