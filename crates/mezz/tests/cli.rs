//! The `mezz` binary driven as a user would: exit codes, output formats, error messages.

use std::path::Path;
use std::process::{Command, Output};

fn mezz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mezz"))
        .args(args)
        .output()
        .expect("run mezz")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

fn ok(args: &[&str]) -> String {
    let o = mezz(args);
    assert!(
        o.status.success(),
        "mezz {args:?} failed: {}{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

#[test]
fn put_get_delete_scan_check_stats() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = path(&db);
    for (k, v) in [("b", "2"), ("a", "1"), ("c", "three"), ("d", "4")] {
        ok(&["put", db, k, v]);
    }
    assert_eq!(ok(&["get", db, "c"]), "three\n");

    let o = mezz(&["get", db, "zz"]);
    assert_eq!(o.status.code(), Some(1), "absent key exits 1");
    assert_eq!(stdout(&o), "");

    ok(&["delete", db, "b"]);
    assert_eq!(mezz(&["get", db, "b"]).status.code(), Some(1));

    assert_eq!(ok(&["scan", db]), "a\t1\nc\tthree\nd\t4\n");
    assert_eq!(ok(&["scan", db, "--from", "b", "--to", "d"]), "c\tthree\n");
    assert_eq!(
        ok(&["scan", db, "--reverse", "--limit", "2"]),
        "d\t4\nc\tthree\n"
    );
    assert_eq!(ok(&["scan", db, "--limit", "0"]), "");

    let check = ok(&["check", db]);
    assert!(check.starts_with("OK: "), "{check}");
    assert!(!ok(&["stats", db]).trim().is_empty());

    // Options are accepted by every subcommand that opens the database.
    assert_eq!(
        ok(&[
            "get",
            db,
            "a",
            "--preset",
            "leveldb",
            "--opt",
            "block_cache_capacity=1M"
        ]),
        "1\n"
    );
}

#[cfg(unix)]
#[test]
fn bytes_that_are_not_text_are_escaped() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let st = Command::new(env!("CARGO_BIN_EXE_mezz"))
        .arg("put")
        .arg(&db)
        .arg(OsStr::from_bytes(b"k\xff\x01"))
        .arg("tab\there")
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(ok(&["scan", path(&db)]), "k\\xff\\x01\ttab\\there\n");
}

#[test]
fn errors_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for args in [
        vec!["get", path(&missing), "k"],
        vec!["scan", path(&missing)],
        vec!["check", path(&missing)],
        vec!["put", path(&missing), "k", "v", "--opt", "no_such_option=1"],
        vec!["put", path(&missing), "k", "v", "--opt", "block_size"],
        vec!["put", path(&missing), "k", "v", "--preset", "nope"],
        vec!["bench", "--benchmarks", "nope"],
    ] {
        let o = mezz(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.starts_with("mezz: "), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(
        !missing.exists(),
        "reading commands must not create a database"
    );
}

#[test]
fn check_reports_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let dbs = path(&db);
    ok(&["put", dbs, "key", "value"]);
    // Reopening the database recovers the WAL into a table.
    assert_eq!(ok(&["get", dbs, "key"]), "value\n");
    // Flip bytes at the start of every table so that verification has something to find.
    let mut damaged = 0;
    for e in std::fs::read_dir(&db).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sst") {
            let mut b = std::fs::read(&p).unwrap();
            for byte in b.iter_mut().take(16) {
                *byte ^= 0x5a;
            }
            std::fs::write(&p, b).unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0, "recovery left no table to damage");
    let o = mezz(&["check", dbs]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).starts_with("mezz: "), "{}", stderr(&o));
}

#[test]
fn bench_writes_a_table_and_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.jsonl");
    let db = dir.path().join("benchdb");
    let out = ok(&[
        "bench",
        "--num",
        "1000",
        "--benchmarks",
        "fillseq,readrandom",
        "--db",
        path(&db),
        "--json",
        path(&json),
        "--opt",
        "write_buffer_size=64K",
    ]);
    assert!(out.contains("fillseq      :"), "{out}");
    assert!(out.contains("ops/sec"), "{out}");
    assert!(out.contains("1000 of 1000 found"), "{out}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["benchmark"], "fillseq");
    assert_eq!(lines[0]["ops"], 1000);
    assert_eq!(lines[0]["config"]["options"]["write_buffer_size"], "65536");
    assert_eq!(lines[1]["found"], 1000);

    // The directory now holds a Mezzanine database: a second run may replace it...
    ok(&[
        "bench",
        "--num",
        "100",
        "--benchmarks",
        "fillrandom",
        "--db",
        path(&db),
    ]);
    // ...and the data can be benchmarked in place.
    let reuse = ok(&[
        "bench",
        "--num",
        "100",
        "--benchmarks",
        "fillseq,readrandom",
        "--db",
        path(&db),
        "--use-existing",
    ]);
    assert!(reuse.contains("skipped"), "{reuse}");

    // A directory holding anything else is refused and left alone.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
    let o = mezz(&["bench", "--num", "10", "--db", path(&foreign)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("refusing"), "{}", stderr(&o));
    assert_eq!(std::fs::read(foreign.join("notes.txt")).unwrap(), b"mine");
}

fn json_lines(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .expect("read the JSON results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn bench_runs_ycsb_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ycsb.jsonl");
    let out = ok(&[
        "bench",
        "--benchmarks",
        "ycsb-load,ycsb-a,ycsb-d,ycsb-e,ycsb-f",
        "--num",
        "300",
        "--ops",
        "200",
        "--ycsb-fields",
        "4",
        "--ycsb-field-size",
        "25",
        "--json",
        path(&json),
        "--opt",
        "write_buffer_size=64K",
    ]);
    assert!(out.contains("ycsb-load    :"), "{out}");
    assert!(out.contains("records of 100 bytes"), "{out}");
    let lines = json_lines(&json);
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l["benchmark"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ycsb-load", "ycsb-a", "ycsb-d", "ycsb-e", "ycsb-f"]);
    assert_eq!(lines[0]["ops"], 300);
    assert_eq!(lines[0]["latency"]["insert"]["count"], 300);
    assert_eq!(lines[1]["ops"], 200);
    assert_eq!(lines[1]["not_found"], 0);
    assert!(lines[1]["latency"]["update"]["p90_us"].is_number());
    assert!(lines[3]["latency"]["scan"]["count"].as_u64().unwrap() > 0);
    assert!(lines[4]["latency"]["rmw"]["count"].as_u64().unwrap() > 0);
    for l in &lines {
        assert!(
            l["engine_version"]
                .as_str()
                .unwrap()
                .starts_with("mezzanine"),
            "{l}"
        );
        assert!(l["date"].as_str().unwrap().ends_with('Z'));
        assert_eq!(l["durability"]["sync"], false);
        assert_eq!(l["config"]["ycsb_record_size"], 100);
        assert!(l["config"]["knobs"]["write_buffer_size"].is_number());
        assert!(l["space"]["db_bytes"].as_u64().unwrap() > 0, "{l}");
        assert!(l["latency_cdf"].is_object());
        assert!(l["stall_second_list"].is_array());
    }
}

#[test]
fn bench_sweeps_open_loop_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.jsonl");
    let db = dir.path().join("db");
    let plots = dir.path().join("plots");
    let out = ok(&[
        "bench",
        "--benchmarks",
        "fillrandom,readrandom",
        "--num",
        "200",
        "--value-size-sweep",
        "64,1K",
        "--num-sweep",
        "100,200",
        "--rate",
        "20000",
        "--db",
        path(&db),
        "--json",
        path(&json),
        "--plot",
        path(&plots),
    ]);
    let lines = json_lines(&json);
    assert_eq!(lines.len(), 8, "2 benchmarks x 4 points");
    let points: Vec<&str> = lines.iter().map(|l| l["point"].as_str().unwrap()).collect();
    assert_eq!(points[0], "value_size=64,num=100");
    assert_eq!(points[7], "value_size=1024,num=200");
    assert_eq!(lines[7]["config"]["value_size"], 1024);
    assert_eq!(lines[7]["config"]["num"], 200);
    assert_eq!(lines[7]["config"]["rate"], 20000.0);
    assert_eq!(lines[7]["ops"], 200);
    assert!(
        lines[7]["service_latency"]["read"]["count"]
            .as_u64()
            .unwrap()
            == 200
    );
    // Each point ran on its own fresh database.
    for p in ["value_size-64_num-100", "value_size-1024_num-200"] {
        assert!(db.join(p).join("CURRENT").exists(), "{p}");
    }
    // One comparison table at the end.
    assert!(out.contains("vs mezza"), "{out}");
    assert!(
        plots
            .join("fillrandom-value_size_64_num_100-throughput.png")
            .exists()
    );
    assert!(
        plots
            .join("readrandom-value_size_1024_num_200-latency-cdf.png")
            .exists()
    );
    // The JSON lines are enough to redraw them.
    let again = dir.path().join("again");
    let o = ok(&["bench", "--replot", path(&json), "--plot", path(&again)]);
    assert!(o.contains("plots: 16 files"), "{o}");
    assert!(
        again
            .join("readrandom-value_size_64_num_200-throughput.png")
            .exists()
    );
}

#[test]
fn bench_engines_that_are_not_built_in_fail_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (engine, want) in [
        ("mezzanine,rocksdb", "rocksdb"),
        ("nope", "unknown engine"),
        ("mezzanine,mezzanine", "twice"),
    ] {
        let o = mezz(&[
            "bench",
            "--engine",
            engine,
            "--num",
            "10",
            "--db",
            path(&db),
        ]);
        if engine.contains("rocksdb") && o.status.success() {
            continue; // built with the rocksdb feature
        }
        assert_eq!(o.status.code(), Some(2), "{engine}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{engine}: {}", stderr(&o));
        assert!(!db.join("mezzanine").exists(), "{engine}: nothing ran");
    }
}

#[test]
fn bench_compares_engines_and_presets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let json = dir.path().join("engines.jsonl");
    let out = ok(&[
        "bench",
        "--engine",
        "mezzanine,mezzanine:leveldb",
        "--benchmarks",
        "fillseq",
        "--num",
        "100",
        "--write-buffer-size",
        "256K",
        "--db",
        path(&db),
        "--json",
        path(&json),
    ]);
    let lines = json_lines(&json);
    let engines: Vec<&str> = lines
        .iter()
        .map(|l| l["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, ["mezzanine", "mezzanine:leveldb"]);
    for l in &lines {
        assert_eq!(l["config"]["options"]["write_buffer_size"], "262144");
        assert_eq!(l["config"]["knobs"]["write_buffer_size"], 262_144);
    }
    assert!(db.join("mezzanine").join("CURRENT").exists());
    assert!(db.join("mezzanine:leveldb").join("CURRENT").exists());
    assert!(out.contains("vs mezza"), "{out}");
}

#[test]
fn bench_records_the_nvm_profile_in_every_result() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.jsonl");
    let nvm = dir.path().join("nvm");
    ok(&[
        "bench",
        "--engine",
        "mezzanine:novelsm",
        "--num",
        "300",
        "--benchmarks",
        "fillseq,readrandom",
        "--nvm-dir",
        path(&nvm),
        "--nvm-profile",
        "optane",
        "--json",
        path(&json),
        "--opt",
        "write_buffer_size=64K",
    ]);
    let lines = json_lines(&json);
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["config"]["nvm_profile"], "optane", "{l}");
        assert_eq!(l["config"]["options"]["nvm_profile"], "optane", "{l}");
    }
    let o = mezz(&["bench", "--num", "10", "--nvm-profile", "pcm"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("pcm") && err.contains("optane") && err.contains("cxl"),
        "{err}"
    );
}

#[test]
fn nvm_calibrate_prints_every_row_and_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("calibration.jsonl");
    let out = ok(&[
        "nvm-calibrate",
        "--profile",
        "optane",
        "--size",
        "4M",
        "--steps",
        "2000",
        "--seconds",
        "0.002",
        "--reps",
        "1",
        "--dir",
        path(dir.path()),
        "--json",
        path(&json),
    ]);
    for row in [
        "a-random-read",
        "a-random-read-added",
        "b-seq-read",
        "c-read-bw",
        "d-write-bw",
        "e-rand-write-64B",
    ] {
        assert!(out.contains(&format!("optane    {row} ")), "{row}: {out}");
    }
    let lines = json_lines(&json);
    // The host's rows (dram) and the profile's: every one judged.
    assert!(lines.iter().any(|l| l["profile"] == "dram"));
    let optane: Vec<_> = lines.iter().filter(|l| l["profile"] == "optane").collect();
    assert_eq!(optane.len(), 20);
    for l in &optane {
        assert!(
            ["ok", "host", "MISS"].contains(&l["status"].as_str().unwrap()),
            "{l}"
        );
        assert!(l["figure"].as_f64().unwrap() > 0.0, "{l}");
    }
    // A random persisted 64-byte write costs the module a whole 256-byte unit.
    let e = optane
        .iter()
        .find(|l| l["row"] == "e-rand-write-64B")
        .unwrap();
    assert_eq!(e["device_bytes_per_write"], 256.0);
    let o = mezz(&["nvm-calibrate", "--profile", "pcm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("optane-6"), "{}", stderr(&o));
}

/// `nvm-calibrate --working-sets`: the profile's CPU cache model serves a chase over a
/// read area well inside it and charges nearly every load of one twice its size (counts of
/// charged accesses, not times).
#[test]
fn nvm_calibrate_working_sets_show_the_cache_model() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ws.jsonl");
    let out = ok(&[
        "nvm-calibrate",
        "--profile",
        "optane",
        "--working-sets",
        "512K,8M",
        "--steps",
        "20000",
        "--reps",
        "1",
        "--dir",
        path(dir.path()),
        "--json",
        path(&json),
    ]);
    assert!(out.contains("model cache"), "{out}");
    let lines = json_lines(&json);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let charged = |area: u64| {
        lines.iter().find(|l| l["area_bytes"] == area).unwrap()["charged_accesses_per_load"]
            .as_f64()
            .unwrap()
    };
    assert!(charged(512 << 10) < 0.01, "{lines:?}");
    assert!(charged(8 << 20) > 0.9, "{lines:?}");
    assert_eq!(lines[0]["kind"], "working_set");
}

/// `mezz serve`: starts on a free port (printed on stderr), answers a Redis client, stops on
/// SHUTDOWN with exit code 0 and leaves the write in the database.
#[test]
fn serve_answers_resp_and_shuts_down_cleanly() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mezz"))
        .args(["serve", path(&db), "--bind", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start mezz serve");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("listening line");
    let addr = line
        .trim()
        .strip_prefix("mezz serve: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    let mut s = std::net::TcpStream::connect(&addr).expect("connect");
    s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nPING\r\n")
        .expect("send");
    let mut got = [0u8; 12];
    s.read_exact(&mut got).expect("replies");
    assert_eq!(&got, b"+OK\r\n+PONG\r\n");
    s.write_all(b"SHUTDOWN\r\n").expect("shutdown");
    let status = child.wait().expect("wait");
    assert!(status.success(), "mezz serve exited with {status}");
    // The engine key of string `k` is `k` ++ `k`, its value `s` ++ the bytes (docs/serve.md).
    assert_eq!(ok(&["get", path(&db), "kk"]), "shello\n");
}

#[test]
fn serve_rejects_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (args, want) in [
        (
            vec!["--protected-mode", "maybe"],
            "--protected-mode takes yes or no",
        ),
        (
            vec!["--cluster-node", "127.0.0.1:7000=0-100"],
            "needs --cluster-slots",
        ),
        (vec!["--cluster-slots", "5-3"], "bad slot range"),
        (vec!["--bind", "nonsense"], "bad --bind"),
    ] {
        let mut a = vec!["serve", path(&db)];
        if !args.contains(&"--bind") {
            a.extend(["--bind", "127.0.0.1:0"]);
        }
        a.extend(args);
        let o = mezz(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}");
        assert!(stderr(&o).contains(want), "{a:?}: {}", stderr(&o));
    }
}

#[test]
fn repair_rebuilds_a_database_without_its_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let dbs = path(&db);
    ok(&["put", dbs, "a", "1"]);
    ok(&["put", dbs, "b", "2"]);
    ok(&["delete", dbs, "a"]);
    let mut removed = 0;
    for e in std::fs::read_dir(&db).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("MANIFEST-") || name == "CURRENT" {
            std::fs::remove_file(&p).unwrap();
            removed += 1;
        }
    }
    assert!(removed >= 2);
    assert_eq!(mezz(&["get", dbs, "b"]).status.code(), Some(2));
    let out = ok(&["repair", dbs]);
    assert!(out.starts_with("repaired "), "{out}");
    assert!(out.contains("manifest: none found"), "{out}");
    assert!(out.contains("max sequence: 3"), "{out}");
    assert_eq!(ok(&["get", dbs, "b"]), "2\n");
    assert_eq!(
        mezz(&["get", dbs, "a"]).status.code(),
        Some(1),
        "still deleted"
    );
    // A repair that cannot run (no such directory) fails with exit code 2.
    let o = mezz(&["repair", path(&dir.path().join("missing"))]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).starts_with("mezz: repair of"), "{}", stderr(&o));
}

#[test]
fn repair_prints_the_column_families() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    {
        let d = mezzanine::Db::open(&db, mezzanine::Options::default()).unwrap();
        let a = d
            .create_column_family("a", &mezzanine::Options::default())
            .unwrap();
        let b = d
            .create_column_family("b", &mezzanine::Options::default())
            .unwrap();
        d.put_cf(&a, b"k", b"in a").unwrap();
        d.put_cf(&b, b"k", b"in b").unwrap();
        d.close().unwrap();
    }
    // Intact: the families keep their names. Then without the database's manifest: made up.
    let out = ok(&["repair", path(&db)]);
    assert!(
        out.starts_with(&format!(
            "repaired {}\ncolumn families: a (id 1), b (id 2)\n",
            path(&db)
        )),
        "{out}"
    );
    assert!(
        out.contains("column families: 2\n  a (id 1), options from manifest:"),
        "{out}"
    );
    for e in std::fs::read_dir(&db).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("MANIFEST-") || name == "CURRENT" {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let out = ok(&["repair", path(&db)]);
    assert!(
        out.contains(
            "column families: recovered-cf-1 (id 1, name recovered), recovered-cf-2 (id 2, \
             name recovered)\n"
        ),
        "{out}"
    );
    let d = mezzanine::Db::open(&db, mezzanine::Options::default()).unwrap();
    let b = d.column_family("recovered-cf-2").unwrap();
    assert_eq!(d.get_cf(&b, b"k").unwrap().as_deref(), Some(&b"in b"[..]));
}

#[test]
fn checkpoint_backup_list_verify_purge_restore() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = path(&db);
    let backups = dir.path().join("backups");
    let backups = path(&backups);
    ok(&["put", db, "a", "1"]);
    let out = ok(&["checkpoint", db, path(&dir.path().join("ckpt"))]);
    assert!(out.starts_with("checkpoint "), "{out}");
    assert_eq!(ok(&["get", path(&dir.path().join("ckpt")), "a"]), "1\n");
    let o = mezz(&["checkpoint", db, path(&dir.path().join("ckpt"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));

    let out = ok(&["backup", db, backups]);
    assert!(out.starts_with("backup 1 "), "{out}");
    ok(&["put", db, "b", "2"]);
    assert!(ok(&["backup", db, backups]).starts_with("backup 2 "));
    let list = ok(&["backup", "--list", backups]);
    assert_eq!(list.lines().count(), 3, "{list}");
    assert!(list.lines().nth(2).unwrap().starts_with("2\t"), "{list}");
    let verify = ok(&["backup", "--verify", backups]);
    assert_eq!(verify.lines().count(), 2, "{verify}");
    assert!(ok(&["backup", "--verify", "--id", "1", backups]).contains("backup 1: OK"));

    // The newest by default, or the one asked for.
    ok(&["restore", backups, path(&dir.path().join("r2"))]);
    assert_eq!(ok(&["scan", path(&dir.path().join("r2"))]), "a\t1\nb\t2\n");
    ok(&[
        "restore",
        backups,
        path(&dir.path().join("r1")),
        "--id",
        "1",
    ]);
    assert_eq!(ok(&["scan", path(&dir.path().join("r1"))]), "a\t1\n");
    let o = mezz(&["restore", backups, db]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("holds a database"), "{}", stderr(&o));

    // A damaged private file: verify and restore fail with the file's name.
    let current = dir.path().join("backups/private/2/CURRENT");
    let mut bytes = std::fs::read(&current).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&current, bytes).unwrap();
    let o = mezz(&["backup", "--verify", "--id", "2", backups]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("private/2/CURRENT"), "{}", stderr(&o));
    let o = mezz(&["restore", backups, path(&dir.path().join("r3"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("crc32c"), "{}", stderr(&o));

    assert!(ok(&["backup", "--purge", "1", backups]).contains("deleted 1 backups [1]"));
    let list = ok(&["backup", "--list", backups]);
    assert_eq!(list.lines().count(), 2, "{list}");
    ok(&["backup", "--delete", "2", backups]);
    assert_eq!(ok(&["backup", "--list", backups]).lines().count(), 1);

    // Usage errors.
    let o = mezz(&["backup", "--list", db, backups]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("only BACKUPDIR"), "{}", stderr(&o));
    let o = mezz(&["backup", "--list", path(&dir.path().join("nothing"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no backup directory"), "{}", stderr(&o));
    let o = mezz(&[
        "restore",
        path(&dir.path().join("nothing")),
        path(&dir.path().join("r4")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a backup directory"),
        "{}",
        stderr(&o)
    );
}

/// `--memory-limit` either runs in a memory cgroup of that size, recorded in every result,
/// and removes the cgroup at the end, or (no writable cgroup: not root, no memory
/// controller) fails before running anything with one line saying what is missing. Both
/// outcomes are checked; nothing else is accepted.
#[test]
fn bench_memory_limit_is_recorded_or_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.jsonl");
    let o = mezz(&[
        "bench",
        "--memory-limit",
        "512M",
        "--engine",
        "mezzanine",
        "--num",
        "2000",
        "--benchmarks",
        "fillrandom",
        "--no-progress",
        "--json",
        path(&json),
    ]);
    let (out, err) = (stdout(&o), stderr(&o));
    if o.status.success() {
        let lines = json_lines(&json);
        assert_eq!(lines.len(), 1, "{out}");
        let l = &lines[0];
        assert_eq!(l["benchmark"], "fillrandom", "{l}");
        assert_eq!(l["config"]["memory_limit_bytes"], 536_870_912u64, "{l}");
        let peak = &l["process"]["cgroup_peak_bytes"];
        assert!(
            peak.is_null() || peak.as_u64().is_some_and(|p| p > 0 && p <= 536_870_912),
            "{l}"
        );
        assert!(out.contains("mem limit 512 MiB"), "{out}");
        // The group named in the note is gone once the command has exited.
        let note = out
            .lines()
            .find_map(|x| x.strip_prefix("note: memory cgroup "))
            .unwrap_or_else(|| panic!("no cgroup note in {out}"));
        let group = note.split(" limits ").next().unwrap();
        assert!(group.contains("mezz-bench-"), "{note}");
        assert!(!Path::new(group).exists(), "{group} was not removed");
    } else {
        assert_eq!(o.status.code(), Some(2), "{out}{err}");
        assert!(err.starts_with("mezz: --memory-limit: "), "{err}");
        assert!(
            err.contains("memory cgroup") && err.contains("not run"),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!json.exists(), "a refused run wrote results");
    }
    // Without the option the field is there, null.
    let plain = dir.path().join("plain.jsonl");
    ok(&[
        "bench",
        "--num",
        "200",
        "--benchmarks",
        "fillseq",
        "--no-progress",
        "--json",
        path(&plain),
    ]);
    let l = &json_lines(&plain)[0];
    assert!(l["config"]["memory_limit_bytes"].is_null(), "{l}");
    assert!(l["process"]["cgroup_peak_bytes"].is_null(), "{l}");
}

/// The README's first command (the main job) benchmarks the `mezzanine` preset on a
/// temporary database with the NVM tier emulated: run the same arguments at a small size.
#[test]
fn the_readme_main_job_runs_the_mezzanine_preset() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("read README.md");
    let main_job = readme
        .lines()
        .find(|l| l.contains("cargo run --release -p mezz -- bench"))
        .expect("the README's main job");
    let args: Vec<&str> = main_job
        .split(" -- ")
        .nth(1)
        .expect("mezz arguments")
        .split('#')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(args, ["bench", "--preset", "mezzanine"], "{main_job}");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("main.jsonl");
    let mut run: Vec<&str> = args.clone();
    run.extend(["--num", "3000", "--no-progress", "--json", path(&json)]);
    let out = ok(&run);
    assert!(
        out.contains("fillrandom   :") && out.contains("readrandom   :"),
        "{out}"
    );
    let lines = json_lines(&json);
    assert_eq!(lines[0]["config"]["options"]["preset"], "mezzanine");
    assert_eq!(lines[0]["config"]["options"]["nvm_memtable"], "overflow");
    assert_eq!(lines[0]["config"]["options"]["nvm_tiering"], "lru");
    assert!(
        lines[0]["config"]["nvm_dir"].as_str().is_some(),
        "the main job runs with an NVM tier: {}",
        lines[0]["config"]
    );
}
