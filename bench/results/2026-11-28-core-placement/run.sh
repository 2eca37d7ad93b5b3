#!/usr/bin/env bash
# 1-thread and 2-thread fills, alternating, each result with the core round trip measured
# before and after it (see analyze.py).
#
#   run.sh BIN OUT_JSONL [ROUNDS] [KEYS]
#
# BIN: a `mezz` binary with the comparators built in (scripts/build-comparators.sh release);
# ENGINES (default "mezzanine:leveldb rocksdb"). Short fills (2 M keys, a few seconds each)
# so that most runs fall inside one placement of the VM's cores.
set -euo pipefail
bin=$1
out=$2
rounds=${3:-10}
keys=${4:-2000000}
engines=${ENGINES:-mezzanine:leveldb rocksdb}
for i in $(seq 1 "$rounds"); do
  for e in $engines; do
    for t in 1 2; do
      "$bin" bench --engine "$e" --write-buffer-size 64M --cache-size 8M --bloom-bits 10 \
        --no-progress --benchmarks fillrandom --num "$keys" --value-size 100 --threads "$t" \
        --json "$out" | grep fillrandom
    done
  done
done
