#!/usr/bin/env bash
# A/B of the return of SSTs into NVM: BEFORE and AFTER are two release builds of `mezz`
# (scripts/build-comparators.sh release, one per commit). NVM_DIR: a directory on a tmpfs
# mounted with huge=always; SSD_DIR: a directory on the disk. Writes <name>.jsonl here.
# Usage: ab.sh BEFORE AFTER NVM_DIR SSD_DIR
set -euo pipefail
before=$1; after=$2; nvm=$3; ssd=$4; out=$(dirname "$0")
run() { # name bin kind extra...
  local name=$1 bin=$2 kind=$3; shift 3
  rm -rf "$ssd/db" "$nvm/nvm"; mkdir -p "$nvm/nvm"
  local mz=(--engine mezzanine:mezzanine --nvm-dir "$nvm/nvm" --opt nvm_capacity=1G --opt nvm_memtable_size=128M
            --direct-io --nvm-profile optane --no-progress --db "$ssd/db")
  local a
  case $kind in
    fill) a=(--num 1000000 --reads 100000 --value-size 4096 --write-buffer-size 64M --cache-size 8M
             --benchmarks fillrandom,readrandom,reopen --drop-caches-before-reopen) ;;
    ycsb) a=(--num 200000 --ops 100000 --ycsb-fields 4 --ycsb-field-size 1024 --write-buffer-size 64M
             --cache-size 8M --benchmarks ycsb-load,ycsb-b,ycsb-c,ycsb-d) ;;
    small) a=(--num 4000000 --reads 100000 --value-size 100 --write-buffer-size 64M --cache-size 8M
              --benchmarks fillrandom,readrandom) ;;
  esac
  "$bin" bench "${mz[@]}" "${a[@]}" "$@" --json "$out/$name.jsonl"
}
for r in 1 2; do run sBh$r "$before" small --opt wal_on_nvm=true; run sBr$r "$after" small --opt wal_on_nvm=true; done
for r in 1 2; do run fAh$r "$before" fill; run fAr$r "$after" fill; done
for r in 1 2; do run yAh$r "$before" ycsb; run yAr$r "$after" ycsb; done
