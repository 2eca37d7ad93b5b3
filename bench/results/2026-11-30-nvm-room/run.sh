#!/bin/bash
# The mezzanine preset at the papers' 4 KiB fill+read shape with a given LRU budget.
# usage: run.sh LABEL [extra opts...]  (from the repository root; JSON lines to ./LABEL.jsonl)
label=$1; shift
ssd=$(mktemp -d)
nvm=${SHM:-/dev/shm}/mezz-budget-nvm
rm -rf $nvm
"${MEZZ_BIN:-target/rocksdb-release/release/mezz}" bench --engine mezzanine:mezzanine --direct-io --nvm-profile optane --no-progress \
  --nvm-dir $nvm --opt nvm_capacity=1G --opt nvm_memtable_size=128M "$@" --db $ssd/db \
  --num 1000000 --reads 100000 --value-size 4096 --write-buffer-size 64M --cache-size 8M \
  --benchmarks fillrandom,readrandom,stats --json $label.jsonl 2>&1 | grep -E "^fillrandom|^readrandom|^L[0-9] " | cut -c1-150
rm -rf $ssd $nvm
