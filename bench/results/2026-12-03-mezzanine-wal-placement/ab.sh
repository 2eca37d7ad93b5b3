#!/usr/bin/env bash
# A/B of the mezzanine preset's WAL placement, full papers shape (1 M x 4 KiB, 1 GiB pool).
set -u
B=${MEZZ_BIN:-target/release/mezz}
out=${OUT:?}
rounds=${ROUNDS:-2}
common=(--engine mezzanine:mezzanine --nvm-dir ${NVM:?}/nvm --opt nvm_capacity=1G --opt nvm_memtable_size=128M
  --direct-io --nvm-profile optane --no-progress --db ${SSD:?}/db --num 1000000 --reads 100000 --value-size 4096
  --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom,readrandom,reopen --drop-caches-before-reopen)
declare -A cfg=(
  [nice0]="--opt background_nice=0"
  [leveled1]="--opt nvm_tiering=leveled:1"
  [leveled1-nvm-wal]="--opt nvm_tiering=leveled:1 --opt wal_on_nvm=true"
  [file-wal]=""
  [nvm-wal]="--opt wal_on_nvm=true"
  [nvm-wal-same-budget]="--opt wal_on_nvm=true --opt nvm_tiering=lru:805303296"
)
for r in $(seq 1 $rounds); do
  for c in ${CONFIGS:-file-wal nvm-wal nvm-wal-same-budget}; do
    rm -rf ${SSD:?}/db ${NVM:?}/nvm
    echo "== $c round $r"
    # shellcheck disable=SC2086
    $B bench "${common[@]}" ${cfg[$c]} --json "$out/$c.jsonl" 2>&1 | grep -E '^(fill|read|reopen)' | cut -c1-200
  done
done
