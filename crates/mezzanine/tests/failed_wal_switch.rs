//! Regression: a memtable switch whose new WAL cannot be created must change nothing. An
//! earlier version had already detached the old WAL, so writes after the failed switch went
//! into the memtable with no WAL at all and a `sync` write was acknowledged without being
//! logged (found by the fault-injection crash campaign).

use std::sync::Arc;

use mezz_env::{
    CrashOptions, FaultFs, FaultOp, FaultRule, FileSystem, KeepUnsynced, MemFs, Trigger,
};
use mezzanine::{Db, Error, Options, WriteOptions};

#[test]
fn sync_write_after_a_failed_wal_switch_is_durable() {
    let mem = MemFs::new();
    let faulty = FaultFs::new(Arc::new(mem.clone()));
    let opts = Options {
        fs: Arc::new(faulty.clone()) as Arc<dyn FileSystem>,
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    db.put(b"before", b"1").unwrap();
    // The open created one WAL; the next WAL creation (the flush's switch) fails once.
    faulty.add_rule(FaultRule::new(Some(FaultOp::Create), Trigger::Once(0)).on_path(".log"));
    assert!(db.flush().is_err(), "the switch should have failed");
    assert_eq!(faulty.injected(), 1);
    // The database goes on with its old memtable and WAL.
    db.put_opt(&WriteOptions { sync: true }, b"after", b"2")
        .unwrap();
    let crashed = mem.crash_clone(&CrashOptions {
        keep_unsynced: KeepUnsynced::None,
        seed: 1,
    });
    drop(db);
    let reopened = Db::open(
        "/db",
        Options {
            fs: Arc::new(crashed) as Arc<dyn FileSystem>,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(reopened.get(b"after").unwrap().as_deref(), Some(&b"2"[..]));
    // `before` was written without sync before `after`, in the same WAL: synced with it.
    assert_eq!(reopened.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(!matches!(reopened.get(b"x"), Err(Error::Corruption { .. })));
}
