//! Replays the checked-in corpus of the `resp_request` fuzz target
//! (`fuzz/corpus/resp_request/`) on the stable toolchain: no input may panic the parser,
//! and parsing in pieces must agree with parsing whole.

use std::path::PathBuf;

#[test]
fn resp_corpus_replays_without_panics() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/resp_request");
    let mut n = 0;
    let mut failed = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.expect("entry").path();
        let data = std::fs::read(&path).expect("corpus file");
        let r = std::panic::catch_unwind(|| mezz_serve::fuzzing::fuzz_resp_request(&data));
        if r.is_err() {
            failed.push(path.display().to_string());
        }
        n += 1;
    }
    assert!(n >= 10, "corpus has {n} inputs");
    assert!(failed.is_empty(), "inputs that panic: {failed:?}");
}

#[test]
fn the_fuzz_check_can_fail() {
    // The target asserts that piecewise and whole parses agree; a parser that lost bytes
    // between calls would panic here. Feed a valid pipeline in every piece size.
    for step in 0u8..17 {
        let mut data = vec![step];
        data.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\nPING\r\n*1\r\n$4\r\nPING\r\n");
        mezz_serve::fuzzing::fuzz_resp_request(&data);
    }
}
