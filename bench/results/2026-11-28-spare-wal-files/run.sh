#!/bin/bash
# Open-loop runs (../2026-11-28-deferred-wal-sync/run.sh) of the `leveldb` preset before and
# after spare WAL files (the switch no longer creates its WAL file), in alternating rounds.
#   run.sh OLD_BIN NEW_BIN ROUNDS
here=$(cd "$(dirname "$0")" && pwd)
ENGINE=mezzanine:leveldb OUT=$here exec "$here/../2026-11-28-deferred-wal-sync/run.sh" "$@"
