#!/bin/bash
# The TLSM section's random-read shape of `bench/papers` at the same NVM cost as
# LevelDB-NVM: fillrandom of 4 M records of 100 bytes, then 800 K random reads (4 MiB
# memtables and tables, no filter, every file on a memory file system).
# usage: reads.sh LABEL MEZZ_BINARY [ENGINE]   (ENGINE: mezzanine:tlsm, default, or leveldb)
# Results in LABEL.txt and LABEL.jsonl in OUT_DIR (default: this script's directory);
# EXTRA_OPTS: more `mezz bench` arguments (e.g. "--opt wal_on_nvm=true").
set -eu
label=$1; bin=$2; eng=${3:-mezzanine:tlsm}
fs=${NVM_FS:-/dev/shm}; out=${OUT_DIR:-$(cd "$(dirname "$0")" && pwd)}
rm -rf "$fs/ab-nvm" "$fs/ab-db"
nvm=()
[ "$eng" = mezzanine:tlsm ] && nvm=(--opt nvm_tiering=none --opt nvm_capacity=4G
  --opt nvm_table_method=ps+bac+pb --nvm-dir "$fs/ab-nvm")
"$bin" bench --engine "$eng" --nvm-profile dram --no-progress "${nvm[@]}" --db "$fs/ab-db" \
  --write-buffer-size 4M --cache-size 8M --bloom-bits 0 --opt target_file_size=4M \
  --opt max_bytes_for_level_base=40M --benchmarks fillrandom,readrandom --num 4000000 \
  --reads 800000 ${EXTRA_OPTS:-} --json "$out/$label.jsonl" >"$out/$label.txt" 2>&1
rm -rf "$fs/ab-nvm" "$fs/ab-db"
