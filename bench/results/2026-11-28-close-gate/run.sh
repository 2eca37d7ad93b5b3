#!/usr/bin/env bash
# A/B of the close gate (every public call and, with an NVM tier, every iterator step
# passes the handle's gate): OLD_BIN and NEW_BIN are release builds of `mezz` before and
# after it, run in alternating rounds on fresh temporary databases.
#   run.sh OUT_DIR ROUNDS OLD_BIN NEW_BIN
set -euo pipefail
out=$1 rounds=$2 old=$3 new=$4
mkdir -p "$out"
for r in $(seq "$rounds"); do
  for v in old new; do
    bin=$old; [ "$v" = new ] && bin=$new
    "$bin" bench --benchmarks fillrandom,readseq,readrandom,readrandom@2 --num 500000 \
      --no-progress --json "$out/$v.jsonl" >/dev/null
    "$bin" bench --preset novelsm --benchmarks fillrandom,readseq,readrandom --num 500000 \
      --no-progress --json "$out/$v-novelsm.jsonl" >/dev/null
  done
done
