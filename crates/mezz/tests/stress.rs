//! `mezz stress` end to end: the real executable starts itself as the child, kills it (every
//! round: the child has no ops cap), and verifies; a second invocation continues on the same
//! database; `--open-kill-percent 100` kills every child while it opens (or just after) and
//! the database still verifies; clean exits under an ops cap fail the run unless allowed; a
//! tampered expected-state file is reported as a violation with exit code 1.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

fn mezz_stress(db: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mezz"))
        .arg("stress")
        .arg("--db")
        .arg(db)
        .args(["--keys", "100", "--quiet"])
        .args(extra)
        .output()
        .unwrap()
}

/// Asserts that a `mezz stress` run succeeded (printing its output if not); returns its
/// stdout.
fn succeeded(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn stress_rounds_pass_and_continue_on_the_same_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "3",
            "--seed",
            "11",
            "--max-kill-delay-ms",
            "300",
        ],
    );
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("stress: 3 rounds, 3 kills (100.0% of rounds; "),
        "{stdout}"
    );
    assert!(stdout.contains(", 0 clean exits"), "{stdout}");
    assert!(dir.path().join("db.expected").exists());

    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "2",
            "--seed",
            "12",
            "--max-kill-delay-ms",
            "300",
        ],
    );
    succeeded(&out);

    // The database removed, its expected state left behind: refused as a setup error,
    // not checked (which would report every recorded key as lost).
    std::fs::remove_dir_all(&db).unwrap();
    let out = mezz_stress(&db, &["--rounds", "1", "--seed", "13"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("holds no database"), "{stderr}");
}

/// `--families 3`: keys spread over three column families (batches span them), under a
/// preset whose families keep NVM tables next to the database.
#[test]
fn stress_rounds_over_column_families_pass() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "3",
            "--seed",
            "13",
            "--max-kill-delay-ms",
            "300",
            "--families",
            "3",
            "--preset",
            "tlsm",
        ],
    );
    let stdout = succeeded(&out);
    assert!(stdout.contains("stress: 3 rounds, 3 kills"), "{stdout}");
    assert!(db.join("cf-1").is_dir() && db.join("cf-2").is_dir());
}

#[test]
fn novelsm_survives_kills_with_its_nvm_tier_next_to_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    // The third run kills every child while it opens (recovering its NVM memtables).
    for (seed, extra, open_kills) in [
        ("21", "nvm_memtable=mutable", "10"),
        ("22", "nvm_memtable=immutable", "10"),
        ("23", "nvm_memtable=mutable", "100"),
    ] {
        let out = mezz_stress(
            &db,
            &[
                "--preset",
                "novelsm",
                "--opt",
                extra,
                "--opt",
                "wal_on_nvm=true",
                "--rounds",
                "3",
                "--seed",
                seed,
                "--max-kill-delay-ms",
                "300",
                "--open-kill-percent",
                open_kills,
            ],
        );
        let stdout = succeeded(&out);
        assert!(stdout.contains("stress: 3 rounds, 3 kills"), "{stdout}");
        if open_kills == "100" {
            let (_, during, after) = open_kill_counts(&stdout);
            assert_eq!(during + after, 3, "{stdout}");
        }
    }
    assert!(dir.path().join("db.nvm").join("NVM-POOL").exists());
}

/// The composed designs (`mezzanine`: NVM tables under LRU tiering), without and with its
/// mutable NVM memtable in front: kill -9 at random, with
/// kills during open in the second run, and every round verifies.
#[test]
fn mezzanine_survives_kills_with_its_nvm_tier_next_to_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (seed, extra, open_kills) in [
        ("31", "nvm_memtable=off", "10"),
        ("32", "nvm_memtable=mutable", "50"),
    ] {
        let out = mezz_stress(
            &db,
            &[
                "--preset",
                "mezzanine",
                "--opt",
                extra,
                "--rounds",
                "3",
                "--seed",
                seed,
                "--max-kill-delay-ms",
                "400",
                "--open-kill-percent",
                open_kills,
            ],
        );
        let stdout = succeeded(&out);
        assert!(stdout.contains("stress: 3 rounds, 3 kills"), "{stdout}");
    }
    assert!(dir.path().join("db.nvm").join("NVM-POOL").exists());
}

#[test]
fn a_tampered_expected_state_is_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    // A capped child may exit before the kill: allowed here.
    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "1",
            "--ops-per-round",
            "50",
            "--allow-clean-exits",
        ],
    );
    succeeded(&out);
    // Claim that key 5 holds a version that was never written.
    let mut st =
        mezz_testkit::stress::ExpectedState::open(&dir.path().join("db.expected")).unwrap();
    let mut slot = st.slot(5);
    slot.committed = Some(1_000_000);
    slot.max_version = 1_000_000;
    st.set(5, slot).unwrap();
    drop(st);
    // At most one op (fixed by the seed, and not a write of key 5), so that the child
    // cannot overwrite the tampered key before the check.
    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "1",
            "--ops-per-round",
            "1",
            "--allow-clean-exits",
            "--max-kill-delay-ms",
            "0",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("key 5: expected version 1000000 (pending -), found"),
        "{stderr}"
    );
}

#[test]
fn clean_exits_fail_the_run_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    // One op per child and a kill delay of up to ten minutes: the children exit first (no
    // open kills, which could strike first).
    let args = [
        "--rounds",
        "2",
        "--ops-per-round",
        "1",
        "--max-kill-delay-ms",
        "600000",
        "--open-kill-percent",
        "0",
    ];
    let out = mezz_stress(&db, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "stress: 2 rounds, 0 kills (0.0% of rounds; 0 during open, 0 just after it), 2 \
             clean exits"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("only 0 of 2 rounds killed the child"),
        "{stderr}"
    );
    let out = mezz_stress(&db, &[&args[..], &["--allow-clean-exits"]].concat());
    succeeded(&out);
}

/// The counts in `K kills (P% of rounds; O during open, A just after it)`.
fn open_kill_counts(stdout: &str) -> (u64, u64, u64) {
    let num = |s: &str, before: &str| -> u64 {
        let head = &s[..s.find(before).unwrap_or_else(|| panic!("{before:?}: {s}"))];
        head.rsplit(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    (
        num(stdout, " kills ("),
        num(stdout, " during open"),
        num(stdout, " just after it)"),
    )
}

#[test]
fn open_kills_strike_every_round_and_the_database_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    // Some workload first, so that the opens have WALs to replay.
    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "2",
            "--seed",
            "31",
            "--max-kill-delay-ms",
            "300",
            "--open-kill-percent",
            "0",
        ],
    );
    let stdout = succeeded(&out);
    assert_eq!(open_kill_counts(&stdout), (2, 0, 0), "{stdout}");
    // Every round an open kill, each followed by the check of every key, and a full
    // `Db::verify` every other round and after the last.
    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "6",
            "--seed",
            "32",
            "--open-kill-percent",
            "100",
            "--max-open-kill-delay-ms",
            "2",
            "--verify-every",
            "2",
        ],
    );
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("stress: 6 rounds, 6 kills (100.0% of rounds; "),
        "{stdout}"
    );
    let (kills, during, after) = open_kill_counts(&stdout);
    assert_eq!((kills, during + after), (6, 6), "{stdout}");
    assert!(stdout.contains(", 0 clean exits"), "{stdout}");
    assert!(stdout.contains("3 full verifications"), "{stdout}");
    // And a later run (ordinary kills) still finds every key as expected.
    let out = mezz_stress(
        &db,
        &[
            "--rounds",
            "1",
            "--seed",
            "33",
            "--max-kill-delay-ms",
            "100",
            "--open-kill-percent",
            "0",
        ],
    );
    succeeded(&out);
}

#[test]
fn a_bad_option_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = mezz_stress(&dir.path().join("db"), &["--opt", "no_such_option=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("db.expected").exists());
    let out = mezz_stress(&dir.path().join("db"), &["--open-kill-percent", "101"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("db.expected").exists());
}
