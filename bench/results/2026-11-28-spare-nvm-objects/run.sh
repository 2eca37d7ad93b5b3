#!/bin/bash
# Open-loop runs (../2026-11-27-wal-unsynced/ol.sh: 200 K-record load, 60 s of YCSB-A at
# 20 K requests/s, the suite's options) of `novelsm` before and after spare NVM objects,
# and after with its WAL in NVM, in alternating rounds; DISTURB=1 runs
# ../2026-11-28-disk-stall-wal/disturb.sh beside each run.
#   run.sh OLD_BIN NEW_BIN ROUNDS
old=$1; new=$2; rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
ol=$here/../2026-11-27-wal-unsynced/ol.sh
scratch=${TMPDIR:-/tmp}/mezz-disturb
mkdir -p "$scratch"
tag=${DISTURB:+disturbed-}
for (( r = 1; r <= rounds; r++ )); do
  for v in before after after-walnvm; do
    pid=
    if [ -n "$DISTURB" ]; then
      "$here/../2026-11-28-disk-stall-wal/disturb.sh" "$scratch" 256 2 & pid=$!
    fi
    case $v in
      before) ENGINE=mezzanine:novelsm "$ol" "$old" "$here/$tag$v-$r.jsonl" ;;
      after) ENGINE=mezzanine:novelsm "$ol" "$new" "$here/$tag$v-$r.jsonl" ;;
      after-walnvm) ENGINE=mezzanine:novelsm "$ol" "$new" "$here/$tag$v-$r.jsonl" \
               --opt wal_on_nvm=true --opt nvm_capacity=400M ;;
    esac
    if [ -n "$pid" ]; then kill "$pid"; wait "$pid" 2>/dev/null; fi
  done
done
python3 "$here/../2026-11-28-disk-stall-wal/table.py" "$here/$tag"*.jsonl
