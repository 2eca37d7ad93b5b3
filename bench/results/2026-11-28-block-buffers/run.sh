#!/bin/bash
# run.sh OUT ROUNDS OLD_BIN NEW_BIN DB NVM_DIR: alternate two builds of mezz on one existing
# 8 M-key database (made with the same options and `--benchmarks fillrandom --num 8000000`),
# appending to OUT.old.jsonl and OUT.new.jsonl.
set -eu
out=$1; rounds=$2; old=$3; new=$4; db=$5; nvm=$6
opts=(--nvm-dir "$nvm" --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress
      --opt nvm_capacity=160M --opt nvm_memtable_size=64M)
for _ in $(seq "$rounds"); do
  for v in old new; do
    bin=$old; [ "$v" = new ] && bin=$new
    "$bin" bench --engine mezzanine:novelsm --db "$db" --use-existing "${opts[@]}" \
      --benchmarks readrandom,readrandom@2,readrandom,readrandom@2,readrandom \
      --num 8000000 --reads 1000000 --json "$out.$v.jsonl" > /dev/null
  done
done
