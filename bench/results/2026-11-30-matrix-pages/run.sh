#!/usr/bin/env bash
# The matrixkv preset's random 4 KiB fill (1 M records, a 256 MiB container in a 1 GiB
# pool, L1 of 256 MiB, direct I/O, the optane NVM profile) with small memtables, under the
# container's default pages (a 256th of the memtable) and under the fixed 256 KiB pages of
# the earlier default. Usage: run.sh OUT_DIR (MEZZ_BIN: the mezz binary).
set -euo pipefail
out=$1
mezz=${MEZZ_BIN:-target/release/mezz}
mkdir -p "$out"
ssd=$(mktemp -d <tmpdir>)
nvm=<shm>/mezz-pages-nvm
trap 'rm -rf "$ssd" "$nvm"' EXIT
for wb in 4M 2M; do
  for pages in default 256K; do
    rm -rf "$ssd/db" "$nvm"
    opt=()
    [ "$pages" = default ] || opt=(--opt matrix_page_size=$pages)
    label="wb$wb-pages$pages"
    echo "== $label"
    "$mezz" bench --engine mezzanine:matrixkv --direct-io --nvm-profile optane --no-progress \
      --nvm-dir "$nvm" --db "$ssd/db" --opt matrix_bytes=256M --opt max_bytes_for_level_base=256M \
      --opt nvm_capacity=1G "${opt[@]}" --num 1000000 --value-size 4096 --write-buffer-size $wb \
      --cache-size 8M --json "$out/$label.jsonl" --benchmarks fillrandom,stats >"$out/$label.txt" 2>&1
    grep -E "^fillrandom|L0 slowdown" "$out/$label.txt"
  done
done
