#!/bin/bash
# Open-loop runs (../2026-11-27-wal-unsynced/ol.sh: 200 K-record load, 60 s of YCSB-A at
# 20 K requests/s, the suite's options) of one engine before and after a change, in
# alternating rounds; here `novelsm` before and after the first write into an NVM memtable
# stopped waiting for the sync of the WAL before it. ENGINE (default mezzanine:novelsm)
# and OUT (default this directory) let another change reuse it
# (../2026-11-28-spare-wal-files/run.sh).
#   run.sh OLD_BIN NEW_BIN ROUNDS
old=$1; new=$2; rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here}
ol=$here/../2026-11-27-wal-unsynced/ol.sh
for (( r = 1; r <= rounds; r++ )); do
  for v in before after; do
    case $v in
      before) bin=$old ;;
      after) bin=$new ;;
    esac
    ENGINE=${ENGINE:-mezzanine:novelsm} "$ol" "$bin" "$out/$v-$r.jsonl"
  done
done
python3 "$here/../2026-11-28-disk-stall-wal/table.py" "$out"/*.jsonl
