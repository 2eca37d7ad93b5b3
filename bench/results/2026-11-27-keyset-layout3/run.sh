#!/usr/bin/env bash
# The suite's fill-100 workload (8 M x 100 B fillrandom, then 1 M readrandom) with the
# suite's options, for a binary before KeySet layout 3 ($BEFORE) and one after ($AFTER),
# alternating, with RocksDB in each round. Usage: BEFORE=... AFTER=... run.sh OUT_DIR ROUNDS
set -euo pipefail
out="$1"; rounds="${2:-1}"
nvm=/dev/shm/mezz-layout3
args=(--nvm-dir "$nvm" --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress
      --opt nvm_capacity=160M --opt nvm_memtable_size=64M
      --benchmarks fillrandom,readrandom --num 8000000 --reads 1000000 --value-size 100)
for r in $(seq 1 "$rounds"); do
  for which in after before; do
    bin=$AFTER; [ "$which" = before ] && bin=$BEFORE
    rm -rf "$nvm"; mkdir -p "$nvm"
    "$bin" bench --engine mezzanine:leveldb,mezzanine:novelsm "${args[@]}" \
      --json "$out/$which-r$r.jsonl" > "$out/$which-r$r.txt"
  done
  rm -rf "$nvm"; mkdir -p "$nvm"
  "$AFTER" bench --engine rocksdb "${args[@]}" --json "$out/rocksdb-r$r.jsonl" > "$out/rocksdb-r$r.txt"
done
rm -rf "$nvm"
