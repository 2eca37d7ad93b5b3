"""Mezzanine: an embedded, persistent, ordered key-value store (an LSM tree), with plyvel's API.

    import mezzanine
    with mezzanine.DB("/tmp/db", create_if_missing=True) as db:
        db.put(b"key", b"value")
        assert db.get(b"key") == b"value"
        with db.write_batch(transaction=True) as wb:
            wb.put(b"a", b"1")
        for key, value in db.iterator(prefix=b"a"):
            ...

Keys and values are ``bytes``. Errors derive from :class:`mezzanine.Error`.
"""

from ._mezzanine import (
    DB,
    BackgroundError,
    ClosedError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    IOError,
    Iterator,
    LockedError,
    NotFoundError,
    PrefixedDB,
    Snapshot,
    WriteBatch,
)

__all__ = [
    "DB",
    "PrefixedDB",
    "WriteBatch",
    "Snapshot",
    "Iterator",
    "Error",
    "IOError",
    "CorruptionError",
    "InvalidArgumentError",
    "NotFoundError",
    "LockedError",
    "ClosedError",
    "BackgroundError",
]
