//! `close` racing calls on other threads: once `close` returns, nothing the handle started
//! touches the database any more, and every later call (and every step of an iterator it
//! made) returns `Closed`.
//!
//! The regression: a `compact_range` on thread A is held inside the creation of its first
//! output table (a file system that blocks there on request); thread B closes the database
//! and opens it again. Before the fix `close` returned at once, B's reopen succeeded, and
//! A, released, finished its compaction on the closed handle: it appended its edit to the
//! old manifest and deleted its input tables, which the reopened handle's version still
//! named, so reads failed with "no such file": acknowledged data was gone. Now `close`
//! waits for A.
//!
//! The same file system also holds a job while other threads wait for it under
//! `manual_background` (found by the lifecycle stress, whose workers do the background
//! work): a caller that cannot start a job because another caller's thread runs one waits
//! for it, instead of failing ("no flush or compaction is due") or spinning with the state
//! lock held (a `compact_range` behind another one's claims never returned).

#![allow(clippy::unwrap_used)]

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use mezz_env::{FaultFs, FaultOp, MemFs};
use mezzanine::{Db, Error, Options};

/// The hold notice's sender and the release's receiver, while a hold is armed.
type Armed = Arc<Mutex<Option<(Sender<()>, Receiver<()>)>>>;

/// A fault file system over a `MemFs` that, once armed, holds the next creation of an
/// `.sst` file until the test releases it: it reports the hold on `held` and waits on
/// `release`.
#[derive(Debug)]
struct HoldFs {
    fs: FaultFs,
    armed: Armed,
}

impl HoldFs {
    fn new() -> Arc<HoldFs> {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let armed = Armed::default();
        let a = Arc::clone(&armed);
        fs.before_each(move |op, path| {
            if op != FaultOp::Create || path.extension().is_none_or(|e| e != "sst") {
                return;
            }
            let Some((held, release)) = a.lock().unwrap().take() else {
                return;
            };
            held.send(()).unwrap();
            // A dropped sender releases too.
            let _ = release.recv();
        });
        Arc::new(HoldFs { fs, armed })
    }

    /// Arms the hold; returns the receiver of the hold notice and the sender that
    /// releases it.
    fn arm(&self) -> (Receiver<()>, Sender<()>) {
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel();
        *self.armed.lock().unwrap() = Some((held_tx, release_rx));
        (held_rx, release_tx)
    }
}

const DIR: &str = "/db";

fn options(fs: &Arc<HoldFs>) -> Options {
    Options {
        fs: Arc::new(fs.fs.clone()),
        ..Options::default()
    }
}

/// Calls `f` on `db` on a new thread; the receiver hears when the call returned.
fn spawn_call<T: Send + 'static>(
    db: &Arc<Db>,
    f: impl FnOnce(&Db) -> T + Send + 'static,
) -> (thread::JoinHandle<T>, Receiver<()>) {
    let db = Arc::clone(db);
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let r = f(&db);
        let _ = tx.send(());
        r
    });
    (h, rx)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Two L0 tables (the second overwrites half of the first's keys), and the value each key
/// must have.
fn two_l0_tables(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut expect = Vec::new();
    for i in 0..400 {
        db.put(&key(i), format!("v1-{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    for i in (0..400).step_by(2) {
        db.put(&key(i), format!("v2-{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    for i in 0..400 {
        let v = if i % 2 == 0 { "v2" } else { "v1" };
        expect.push((key(i), format!("{v}-{i}").into_bytes()));
    }
    expect
}

fn assert_holds(db: &Db, expect: &[(Vec<u8>, Vec<u8>)]) {
    for (k, v) in expect {
        let got = db.get(k).unwrap_or_else(|e| {
            panic!("get {:?} after the reopen: {e}", String::from_utf8_lossy(k))
        });
        assert_eq!(
            got.as_deref(),
            Some(v.as_slice()),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
    let all: Vec<_> = db.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(all.len(), expect.len());
    db.verify().unwrap();
}

/// The interleaving of the report (see the module documentation), with a second thread
/// closing at the same time: neither close returns while the compaction is held, and the
/// reopened handle reads every acknowledged write.
#[test]
fn close_waits_for_a_compaction_running_on_another_thread() {
    let fs = HoldFs::new();
    let db = Arc::new(Db::open(DIR, options(&fs)).unwrap());
    let expect = two_l0_tables(&db);

    let (held, release) = fs.arm();
    let a = spawn_call(&db, |d| d.compact_range(None, None)).0;
    held.recv().unwrap();

    // B: close, then open again at once. C: a second close at the same moment.
    let (reopened_tx, reopened_rx) = mpsc::channel();
    let b = {
        let (db, fs) = (Arc::clone(&db), Arc::clone(&fs));
        thread::spawn(move || {
            let closed = db.close();
            let reopened = Db::open(DIR, options(&fs));
            reopened_tx.send(()).unwrap();
            (closed, reopened)
        })
    };
    let c = spawn_call(&db, |d| d.close()).0;
    // Before the fix B reopened within milliseconds; now it cannot while A is held.
    let reopened_while_held = reopened_rx.recv_timeout(Duration::from_millis(500)).is_ok();
    release.send(()).unwrap();

    let compacted = a.join().unwrap();
    assert!(
        matches!(compacted, Ok(()) | Err(Error::Closed)),
        "compact_range: {compacted:?}"
    );
    let (closed, reopened) = b.join().unwrap();
    let second = c.join().unwrap();
    // One of the two closes closed the handle, the other found it closed.
    assert!(
        matches!(
            (&closed, &second),
            (Ok(()), Err(Error::Closed)) | (Err(Error::Closed), Ok(()))
        ),
        "closes: {closed:?}, {second:?}"
    );
    let db2 = reopened.expect("reopen after close");
    assert_holds(&db2, &expect);
    assert!(
        !reopened_while_held,
        "close returned (and the database reopened) while a compaction on another thread was \
         still running"
    );
    drop(db2);
    // And once more from a fresh open, after the reopened handle closed.
    let db3 = Db::open(DIR, options(&fs)).unwrap();
    assert_holds(&db3, &expect);
}

/// After `close`, every call returns `Closed`, and an iterator or cursor made before it
/// stops with `Closed` at its next step instead of reading what may by then belong to
/// another handle.
#[test]
fn every_call_after_close_returns_closed() {
    let fs = HoldFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    let expect = two_l0_tables(&db);
    let mut cursor = db.cursor(&mezzanine::ReadOptions::default()).unwrap();
    cursor.seek_to_first();
    assert!(cursor.valid());
    let mut iter = db.iter();
    assert!(iter.next().unwrap().is_ok());
    let snapshot = db.snapshot();
    db.close().unwrap();

    let closed = |what: &str, r: Result<(), Error>| {
        assert!(matches!(r, Err(Error::Closed)), "{what}: {r:?}");
    };
    closed("put", db.put(b"k", b"v"));
    closed("delete", db.delete(b"k"));
    closed(
        "write",
        db.write(&Default::default(), mezzanine::WriteBatch::new()),
    );
    closed("get", db.get(b"k").map(|_| ()));
    closed(
        "get at a snapshot",
        db.get_opt(&snapshot.read_options(), b"k").map(|_| ()),
    );
    closed("get_pinned", db.get_pinned(b"k").map(|_| ()));
    closed("multi_get", db.multi_get([b"k"]).map(|_| ()));
    closed("cursor", db.cursor(&Default::default()).map(|_| ()));
    closed("flush", db.flush());
    closed("compact_range", db.compact_range(None, None));
    closed("wait_for_background", db.wait_for_background());
    closed("run_background_work", db.run_background_work(1).map(|_| ()));
    closed("verify", db.verify().map(|_| ()));
    closed(
        "approximate_size",
        db.approximate_size(None, None).map(|_| ()),
    );
    closed("close", db.close());
    closed("iter", db.iter().next().expect("an error item").map(|_| ()));
    assert_eq!(db.property("mezz.levels"), None);

    // The iterators made before the close.
    assert!(
        !cursor.valid(),
        "a cursor of a closed database is not valid"
    );
    assert!(cursor.key().is_empty() && cursor.value().is_empty());
    cursor.next();
    assert!(!cursor.valid());
    closed("cursor status", cursor.status());
    cursor.seek_to_first();
    assert!(!cursor.valid());
    closed("cursor status after a seek", cursor.status());
    match iter.next() {
        Some(Err(Error::Closed)) => {}
        other => panic!("iter after close: {other:?}"),
    }
    drop((cursor, iter, snapshot));

    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_holds(&db, &expect);
}

/// With `manual_background`, `flush` runs the flush on the calling thread: held in the
/// creation of its L0 table while another thread closes, it is waited for, and the
/// reopened database holds every write.
#[test]
fn close_waits_for_a_flush_run_on_the_callers_thread() {
    let fs = HoldFs::new();
    let opts = Options {
        manual_background: true,
        ..options(&fs)
    };
    let db = Arc::new(Db::open(DIR, opts.clone()).unwrap());
    for i in 0..100 {
        db.put(&key(i), b"v").unwrap();
    }
    let (held, release) = fs.arm();
    let a = spawn_call(&db, |d| d.flush()).0;
    held.recv().unwrap();
    let (b, closed_rx) = spawn_call(&db, |d| d.close());
    let closed_while_held = closed_rx.recv_timeout(Duration::from_millis(300)).is_ok();
    release.send(()).unwrap();
    a.join().unwrap().unwrap();
    b.join().unwrap().unwrap();
    assert!(
        !closed_while_held,
        "close returned while a flush was running"
    );
    let db = Db::open(DIR, opts).unwrap();
    assert_eq!(
        db.stats().levels[0].files,
        1,
        "the flush's table is installed"
    );
    for i in 0..100 {
        assert_eq!(db.get(&key(i)).unwrap().as_deref(), Some(&b"v"[..]));
    }
}

/// An iterator of a closed handle that outlives a reopen stops with `Closed`, and dropping
/// it (the last holder of the old handle's state) changes nothing the new handle wrote:
/// the old handle's log writers ended inside `close` (a writer's drop truncates its file
/// to what it wrote).
#[test]
fn an_iterator_outliving_close_leaves_the_logs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    let mut old_iter = db.iter();
    db.close().unwrap();

    let db2 = Db::open(dir.path(), Options::default()).unwrap();
    db2.put(b"b", b"2").unwrap();
    assert!(matches!(old_iter.next(), Some(Err(Error::Closed))));
    drop(old_iter);
    drop(db);
    db2.close().unwrap();

    let db3 = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db3.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db3.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
}

/// A writer stalled behind a flush (here held in the creation of its table) gives up with
/// `Closed` once a close begins, instead of keeping the close waiting; the close then
/// waits for the flush, and every acknowledged write is there after a reopen.
#[test]
fn a_writer_stalled_at_close_gives_up_with_closed() {
    let fs = HoldFs::new();
    let opts = Options {
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 2,
        ..options(&fs)
    };
    let db = Arc::new(Db::open(DIR, opts.clone()).unwrap());
    let (held, release) = fs.arm();
    let (stalled_tx, stalled_rx) = mpsc::channel();
    let writer = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            let mut acked = Vec::new();
            for i in 0.. {
                match db.put(&key(i), &[b'v'; 1000]) {
                    Ok(()) => acked.push(i),
                    Err(e) => {
                        stalled_tx.send(()).unwrap();
                        return (acked, e);
                    }
                }
            }
            unreachable!()
        })
    };
    held.recv().unwrap();
    // The writer fills the second memtable and stalls: it cannot return while the flush
    // is held, until the close begins.
    assert!(stalled_rx.recv_timeout(Duration::from_millis(200)).is_err());
    let closer = spawn_call(&db, |d| d.close()).0;
    let gave_up = stalled_rx.recv_timeout(Duration::from_secs(10)).is_ok();
    release.send(()).unwrap();
    let (acked, err) = writer.join().unwrap();
    closer.join().unwrap().unwrap();
    assert!(
        gave_up,
        "the stalled writer kept waiting after the close began"
    );
    assert!(matches!(err, Error::Closed), "{err:?}");
    assert!(acked.len() > 64, "{} writes before the stall", acked.len());
    let db = Db::open(DIR, opts).unwrap();
    for i in acked {
        assert_eq!(
            db.get(&key(i)).unwrap().map(|v| v.len()),
            Some(1000),
            "key {i}"
        );
    }
}

/// Options with `manual_background` on the holding file system.
fn manual(fs: &Arc<HoldFs>) -> Options {
    Options {
        manual_background: true,
        ..options(fs)
    }
}

/// Two threads flush under `manual_background`; the first runs the flush (held in its
/// table's creation), the second waits for it and succeeds.
#[test]
fn a_manual_flush_waits_for_the_flush_another_thread_runs() {
    let fs = HoldFs::new();
    let db = Arc::new(Db::open(DIR, manual(&fs)).unwrap());
    for i in 0..100 {
        db.put(&key(i), b"v").unwrap();
    }
    let (held, release) = fs.arm();
    let a = spawn_call(&db, |d| d.flush()).0;
    held.recv().unwrap();
    let (b, done_rx) = spawn_call(&db, |d| d.flush());
    let b_returned_while_held = done_rx.recv_timeout(Duration::from_millis(200)).is_ok();
    release.send(()).unwrap();
    let (ra, rb) = (a.join().unwrap(), b.join().unwrap());
    assert!(
        ra.is_ok() && rb.is_ok(),
        "first flush {ra:?}, second flush {rb:?}"
    );
    assert!(
        !b_returned_while_held,
        "the second flush returned before the flush it waits for"
    );
    assert_eq!(db.stats().levels[0].files, 1);
}

/// Two `compact_range` calls under `manual_background`: the second waits for the first's
/// job (whose claims it conflicts with) with the state lock released, so the first can
/// install its result, and both return.
#[test]
fn a_manual_compact_range_waits_for_another_threads_compaction() {
    let fs = HoldFs::new();
    let db = Arc::new(Db::open(DIR, manual(&fs)).unwrap());
    let expect = two_l0_tables(&db);
    let (held, release) = fs.arm();
    let a = spawn_call(&db, |d| d.compact_range(None, None)).0;
    held.recv().unwrap();
    let (b, done_rx) = spawn_call(&db, |d| d.compact_range(None, None));
    thread::sleep(Duration::from_millis(100));
    release.send(()).unwrap();
    assert!(
        done_rx.recv_timeout(Duration::from_secs(30)).is_ok(),
        "the second compact_range never returned after the first one's job was released"
    );
    let (ra, rb) = (a.join().unwrap(), b.join().unwrap());
    assert!(ra.is_ok() && rb.is_ok(), "first {ra:?}, second {rb:?}");
    assert_eq!(db.stats().levels[0].files, 0);
    assert_holds(&db, &expect);
}
