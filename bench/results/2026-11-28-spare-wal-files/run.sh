#!/bin/bash
# Open-loop runs (../2026-11-27-wal-unsynced/ol.sh: 200 K-record load, 60 s of YCSB-A at
# 20 K requests/s, the suite's options) of the `leveldb` preset before and after spare WAL files (the switch no longer creates
# its WAL file), in alternating rounds.
#   run.sh OLD_BIN NEW_BIN ROUNDS
old=$1; new=$2; rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
ol=$here/../2026-11-27-wal-unsynced/ol.sh
for (( r = 1; r <= rounds; r++ )); do
  for v in before after; do
    case $v in
      before) bin=$old ;;
      after) bin=$new ;;
    esac
    ENGINE=mezzanine:leveldb "$ol" "$bin" "$here/$v-$r.jsonl"
  done
done
python3 "$here/../2026-11-28-disk-stall-wal/table.py" "$here"/*.jsonl
