#!/usr/bin/env bash
# A/B of the mezzanine preset: two release builds of `mezz` with the comparators
# (scripts/build-comparators.sh release): BASE (before the change) and NEW (upper levels
# first: an SST above NVM tables has the deepest level's oldest NVM table move to SSD).
# Variants of the preset: `A` as it is (file WAL on SSD), `B` with MatrixKV's NVM WAL
# (`wal_on_nvm=true`), `C` B with L1 as large as half the pool (max_bytes_for_level_base=512M,
# MatrixKV's wide level); `T` the `tlsm` preset. The shapes of bench/papers' mezzanine
# section: 1 GiB pool, 128 MiB NVM memtable, 64 MiB DRAM memtables, 8 MiB cache, optane
# cost, direct I/O (small records: 4 M x 100 B instead of 18 M). NVM_DIR: a directory on a
# tmpfs mounted with huge=always; SSD_DIR: a directory on the disk. Writes
# <shape><variant><b|n><round>.jsonl here.
# Usage: ab.sh BASE NEW NVM_DIR SSD_DIR SHAPES ROUNDS VARIANTS   e.g. ab.sh b n nvm ssd "fill small" "1 2" "A B C"
set -euo pipefail
base=$1; new=$2; nvm=$3; ssd=$4; shapes=$5; rounds=$6; variants=$7; out=$(dirname "$0")
run() { # name bin preset shape extra...
  local name=$1 bin=$2 preset=$3 shape=$4; shift 4
  rm -rf "$ssd/db" "$nvm/nvm"; mkdir -p "$nvm/nvm"
  local mz=(--engine mezzanine:$preset --nvm-dir "$nvm/nvm" --opt nvm_capacity=1G --direct-io
            --nvm-profile optane --no-progress --db "$ssd/db")
  [ "$preset" = mezzanine ] && mz+=(--opt nvm_memtable_size=128M)
  local a
  case $shape in
    fill) a=(--num 1000000 --reads 100000 --value-size 4096 --write-buffer-size 64M --cache-size 8M
             --benchmarks fillrandom,readrandom,reopen --drop-caches-before-reopen) ;;
    ycsb) a=(--num 200000 --ops 100000 --ycsb-fields 4 --ycsb-field-size 1024 --write-buffer-size 64M
             --cache-size 8M --benchmarks ycsb-load,ycsb-b,ycsb-c,ycsb-d) ;;
    small) a=(--num 4000000 --reads 100000 --value-size 100 --write-buffer-size 64M --cache-size 8M
              --benchmarks fillrandom,readrandom,reopen --drop-caches-before-reopen) ;;
  esac
  "$bin" bench "${mz[@]}" "${a[@]}" "$@" --json "$out/$name.jsonl" > "$out/$name.txt" 2>&1
}
for r in $rounds; do
  for k in $shapes; do
    for v in $variants; do
      for b in b n; do
        bin=$base; [ $b = n ] && bin=$new
        case $v in
          A) run "$k$v$b$r" "$bin" mezzanine "$k" ;;
          B) run "$k$v$b$r" "$bin" mezzanine "$k" --opt wal_on_nvm=true ;;
          C) run "$k$v$b$r" "$bin" mezzanine "$k" --opt wal_on_nvm=true --opt max_bytes_for_level_base=512M ;;
          T) run "$k$v$b$r" "$bin" tlsm "$k" ;;
        esac
      done
    done
  done
done
