#!/usr/bin/env bash
# The DRAM memtable's key filter, before and after: the suite's fill-100 workload (8 M
# fillrandom of 100-byte values, then 1 M reads by one thread and 1 M by two, on the
# same database), 64 MiB memtables, 8 MiB block cache, 10 bloom bits; two alternating
# rounds of two release builds. BEFORE and AFTER are `mezz` binaries of the commits
# before and with the filter.
set -euo pipefail
cd "$(dirname "$0")/../../.."
rm -rf /dev/shm/mezz-mf && mkdir -p /dev/shm/mezz-mf
PRESETS="leveldb novelsm" BENCH_ARGS="--benchmarks fillrandom,readrandom,readrandom@2 \
  --reads 1000000 --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress \
  --nvm-dir /dev/shm/mezz-mf --opt nvm_capacity=160M --opt nvm_memtable_size=64M" \
  bench/before_after.sh "$1" "$2" bench/results/2026-11-27-memtable-filter 2 8000000
rm -rf /dev/shm/mezz-mf
