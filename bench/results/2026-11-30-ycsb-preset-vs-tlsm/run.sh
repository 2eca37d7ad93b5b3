#!/bin/bash
# The papers' mezzanine YCSB shape for one engine config. usage: run.sh LABEL engine-args...
label=$1; shift
ssd=$(mktemp -d)
nvm=${SHM:-/dev/shm}/mezz-ycsbx-nvm
rm -rf $nvm
"${MEZZ_BIN:-target/rocksdb-release/release/mezz}" bench "$@" --direct-io --nvm-profile optane --no-progress \
  --nvm-dir $nvm --opt nvm_capacity=1G --db $ssd/db \
  --num 200000 --ops 100000 --ycsb-fields 4 --ycsb-field-size 1024 --write-buffer-size 64M \
  --cache-size 8M --benchmarks ycsb-load,ycsb-b,ycsb-c,ycsb-d,stats --json $label.jsonl 2>&1 | grep -E "^ycsb|memtable" | cut -c1-110
rm -rf $ssd $nvm
