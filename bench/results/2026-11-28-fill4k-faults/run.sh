#!/bin/bash
# run.sh OUT ROUNDS BIN_A BIN_B ENGINE...: 250 K x 4 KiB fills (the suite's fill-4k options),
# alternating the two builds (A then B in even rounds, B then A in odd ones); results in
# OUT.a.jsonl and OUT.b.jsonl. Summarise with analyze.py OUT.a.jsonl OUT.b.jsonl.
set -euo pipefail
out=$1; rounds=$2; a=$3; b=$4; shift 4
nvm=$(mktemp -d /dev/shm/mezz-f4k-XXXXXX)
trap 'rm -rf "$nvm"' EXIT
for ((i = 0; i < rounds; i++)); do
  order="a b"; [ $((i % 2)) = 1 ] && order="b a"
  for x in $order; do
    bin=$a; [ "$x" = b ] && bin=$b
    for e in "$@"; do
      rm -rf "$nvm"/*
      "$bin" bench --engine "$e" --nvm-dir "$nvm" --write-buffer-size 64M --cache-size 8M \
        --bloom-bits 10 --no-progress --opt nvm_capacity=160M --opt nvm_memtable_size=64M \
        --benchmarks fillrandom --num 250000 --value-size 4096 --json "$out.$x.jsonl" \
        | grep fillrandom
    done
  done
done
