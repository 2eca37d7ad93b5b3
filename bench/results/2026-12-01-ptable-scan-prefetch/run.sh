#!/bin/bash
# One YCSB load + YCSB-E run of the papers' TLSM shape at the same NVM cost as LevelDB-NVM
# (the `dram` profile; every file on a memory file system), as in bench/papers.
# usage: run.sh LABEL MEZZ_BINARY [ENGINE]   (ENGINE: mezzanine:tlsm, default, or leveldb)
# NVM_FS: a memory file system directory (default /dev/shm; bench/papers mounts a tmpfs
# with huge=always); results in LABEL.txt and LABEL.jsonl here.
set -eu
label=$1; bin=$2; eng=${3:-mezzanine:tlsm}
fs=${NVM_FS:-/dev/shm}; out=$(cd "$(dirname "$0")" && pwd)
rm -rf "$fs/ab-nvm" "$fs/ab-db"
nvm=()
[ "$eng" = mezzanine:tlsm ] && nvm=(--opt nvm_tiering=none --opt nvm_capacity=4G --nvm-dir "$fs/ab-nvm")
"$bin" bench --engine "$eng" --nvm-profile dram --no-progress "${nvm[@]}" --db "$fs/ab-db" \
  --write-buffer-size 4M --cache-size 8M --bloom-bits 0 --opt target_file_size=4M \
  --opt max_bytes_for_level_base=40M --benchmarks ycsb-load,ycsb-e --num 400000 --ops 100000 \
  --json "$out/$label.jsonl" >"$out/$label.txt" 2>&1
rm -rf "$fs/ab-nvm" "$fs/ab-db"
