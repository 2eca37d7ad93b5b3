//! A second process opening a database another process has open gets a clear error (the
//! LOCK file), never a second writer.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn mezz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mezz"))
}

/// A long-running reader that holds the database open. Its NVM directory is given (next
/// to the database): without one, `mezz bench` makes a temporary one under /dev/shm, which
/// the kill at the end of the test would leave behind.
fn spawn_holder(db: &str) -> Child {
    let nvm = format!("{db}-nvm");
    mezz()
        .args(["bench", "--db", db, "--nvm-dir", &nvm, "--use-existing"])
        .arg("--benchmarks")
        .args(["readrandom", "--num", "1000", "--reads", "1000000000"])
        .arg("--no-progress")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mezz bench")
}

#[test]
fn second_process_gets_a_clear_locked_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let put = mezz().args(["put", db, "a", "1"]).status().unwrap();
    assert!(put.success());

    // Until the holder has the database open, a probe may win the race for the LOCK (and
    // the holder then exits with the same error): respawn it until it holds the lock.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut holder = spawn_holder(db);
    let mut last = String::new();
    let mut locked = false;
    while Instant::now() < deadline {
        if holder.try_wait().unwrap().is_some() {
            holder = spawn_holder(db);
        }
        std::thread::sleep(Duration::from_millis(100));
        let out = mezz().args(["get", db, "a"]).output().unwrap();
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() == Some(2) && last.contains("already open") {
            locked = true;
            break;
        }
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(
        locked,
        "second open never reported the lock; last stderr: {last}"
    );
    assert_eq!(last.lines().count(), 1, "one-line error: {last}");

    // Once the holder is gone the database opens again, data intact.
    let out = mezz().args(["get", db, "a"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
}
