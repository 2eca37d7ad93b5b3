//! Invalid options and impossible open modes are refused with `InvalidArgument` before
//! anything is written.

use mezzanine::{Db, Error, Options};

fn assert_invalid(r: mezzanine::Result<Db>, what: &str) {
    match r {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(what), "{msg}"),
        other => panic!("expected InvalidArgument about {what}, got {other:?}"),
    }
}

#[test]
fn bad_options_are_invalid_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = Options {
        write_buffer_size: 10,
        ..Options::default()
    };
    assert_invalid(Db::open(&path, o), "write_buffer_size");
    let o = Options {
        level0_slowdown_trigger: 2,
        level0_stop_trigger: 1,
        ..Options::default()
    };
    assert_invalid(Db::open(&path, o), "level0");
    let o = Options {
        max_background_jobs: 0,
        ..Options::default()
    };
    assert_invalid(Db::open(&path, o), "max_background_jobs");
    assert!(
        !path.exists(),
        "a refused open must not create the directory"
    );
}

#[test]
fn open_modes_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert_invalid(Db::open(&path, o.clone()), "create_if_missing");
    Db::open(&path, Options::default())
        .unwrap()
        .close()
        .unwrap();
    let o = Options {
        error_if_exists: true,
        ..Options::default()
    };
    assert_invalid(Db::open(&path, o), "error_if_exists");
    let o = Options {
        create_if_missing: false,
        ..Options::default()
    };
    Db::open(&path, o).unwrap();
}
