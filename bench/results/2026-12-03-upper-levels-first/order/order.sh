#!/usr/bin/env bash
# Does a run's leftover writeback slow the next run? YCSB (papers' mezzanine shape) then
# the 4 M x 100 B fill at once (`now`) or after `sync` and 5 s (`settled`), alternating.
set -euo pipefail
bin=$1; nvm=$2; ssd=$3; out=$4; mkdir -p "$out"
run() { local name=$1; shift; rm -rf "$ssd/db" "$nvm/nvm"; mkdir -p "$nvm/nvm"
  "$bin" bench --engine mezzanine:mezzanine --nvm-dir "$nvm/nvm" --opt nvm_capacity=1G --opt nvm_memtable_size=128M \
    --direct-io --nvm-profile optane --no-progress --db "$ssd/db" "$@" --json "$out/$name.jsonl" > "$out/$name.txt" 2>&1; }
ycsb=(--num 200000 --ops 100000 --ycsb-fields 4 --ycsb-field-size 1024 --write-buffer-size 64M --cache-size 8M --benchmarks ycsb-load,ycsb-b,ycsb-c,ycsb-d)
small=(--num 4000000 --reads 100000 --value-size 100 --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom,readrandom)
for r in 1 2; do
  run "y-now$r" "${ycsb[@]}"; run "s-now$r" "${small[@]}"
  run "y-settled$r" "${ycsb[@]}"; sync; sleep 5; run "s-settled$r" "${small[@]}"
done
