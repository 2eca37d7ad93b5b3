#!/usr/bin/env bash
# The suite's fill-4k workload (250 K x 4 KiB fillrandom, suite options) for the `novelsm`
# preset and RocksDB, alternating, ROUNDS times. Usage: run.sh OUT_DIR ROUNDS [MEZZ_BIN]
set -euo pipefail
out="$1"; rounds="${2:-3}"; bin="${3:-target/rocksdb-release/release/mezz}"
nvm=/dev/shm/mezz-fill4k
for r in $(seq 1 "$rounds"); do
  for e in mezzanine:novelsm rocksdb; do
    rm -rf "$nvm"; mkdir -p "$nvm"
    "$bin" bench --engine "$e" --nvm-dir "$nvm" --write-buffer-size 64M --cache-size 8M \
      --bloom-bits 10 --no-progress --opt nvm_capacity=160M --opt nvm_memtable_size=64M \
      --benchmarks fillrandom --num 250000 --value-size 4096 \
      --json "$out/${e//:/-}-r$r.jsonl" > "$out/${e//:/-}-r$r.txt"
  done
done
rm -rf "$nvm"
