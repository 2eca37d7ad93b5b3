"""Mezzanine: an embedded, persistent, ordered key-value store (an LSM tree), with plyvel's API.

    import mezzanine
    with mezzanine.DB("/tmp/db", create_if_missing=True) as db:
        db.put(b"key", b"value")
        assert db.get(b"key") == b"value"
        with db.write_batch(transaction=True) as wb:
            wb.put(b"a", b"1")
        for key, value in db.iterator(prefix=b"a"):
            ...
        with db.transaction() as txn:               # commits at the end; BusyError on a conflict
            txn.put(b"a", txn.get_for_update(b"a") + b"!")
        users = db.create_column_family("users", write_buffer_size=1 << 20)
        with db.write_batch() as wb:                # one atomic batch across families
            wb.put(b"k", b"default")
            wb.put(b"k", b"ann", column_family=users)
        db.checkpoint("/tmp/db-copy")               # a consistent copy, tables hard-linked
        backups = mezzanine.BackupEngine("/tmp/backups")
        backups.create_backup(db)                   # incremental; restore_latest_backup(dir)

Keys and values are ``bytes``. Errors derive from :class:`mezzanine.Error`.
"""

from ._mezzanine import (
    DB,
    BackgroundError,
    BackupEngine,
    BusyError,
    ClosedError,
    ColumnFamily,
    CorruptionError,
    Error,
    InvalidArgumentError,
    IOError,
    Iterator,
    IteratorInvalidError,
    LockedError,
    NotFoundError,
    PrefixedDB,
    RawIterator,
    Snapshot,
    Transaction,
    WriteBatch,
    __leveldb_version__,
    destroy_db,
    list_column_families,
    repair_db,
)

__all__ = [
    "DB",
    "BackupEngine",
    "PrefixedDB",
    "ColumnFamily",
    "WriteBatch",
    "Snapshot",
    "Transaction",
    "Iterator",
    "RawIterator",
    "Error",
    "IOError",
    "CorruptionError",
    "InvalidArgumentError",
    "NotFoundError",
    "LockedError",
    "ClosedError",
    "BackgroundError",
    "BusyError",
    "IteratorInvalidError",
    "destroy_db",
    "list_column_families",
    "repair_db",
    "__leveldb_version__",
]
