#!/bin/bash
# Open-loop runs (../2026-11-27-wal-unsynced/ol.sh: 200 K-record load, 60 s of YCSB-A at
# 20 K requests/s) of three configurations in alternating rounds, each with disturb.sh
# writing beside it.
#   run.sh BIN ROUNDS [MB PERIOD]
bin=$1; rounds=${2:-2}; mb=${3:-256}; period=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
ol=$here/../2026-11-27-wal-unsynced/ol.sh
scratch=${TMPDIR:-/tmp}/mezz-disturb
mkdir -p "$scratch"
for (( r = 1; r <= rounds; r++ )); do
  for v in nv nvwal lv; do
    "$here/disturb.sh" "$scratch" "$mb" "$period" & pid=$!
    case $v in
      nv) ENGINE=mezzanine:novelsm "$ol" "$bin" "$here/$v$r.jsonl" ;;
      nvwal) ENGINE=mezzanine:novelsm "$ol" "$bin" "$here/$v$r.jsonl" \
               --opt wal_on_nvm=true --opt nvm_capacity=400M ;;
      lv) ENGINE=mezzanine:leveldb "$ol" "$bin" "$here/$v$r.jsonl" ;;
    esac
    kill "$pid"; wait "$pid" 2>/dev/null
  done
done
python3 "$here/table.py" "$here"/*.jsonl
