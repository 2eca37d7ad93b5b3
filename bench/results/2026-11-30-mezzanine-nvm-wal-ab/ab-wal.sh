#!/bin/bash
# A/B of wal_on_nvm for the mezzanine preset at the quick mezzanine-section shapes (4 KiB
# fill + reads + reopen; 100-byte fill + reads), alternating. usage: ab-wal.sh MEZZ OUTDIR ROUNDS
set -u
mezz=$1; out=$2; rounds=${3:-2}
mkdir -p "$out"
ssd=$(mktemp -d /tmp/mezz-ab-ssd.XXXXXX)
nvmroot=$(mktemp -d /tmp/mezz-ab-nvmfs.XXXXXX)
mount -t tmpfs -o huge=always tmpfs "$nvmroot"
mz=(--engine mezzanine:mezzanine --nvm-dir "$nvmroot/nvm" --opt nvm_capacity=256M --opt nvm_memtable_size=32M
    --direct-io --nvm-profile optane --no-progress --db "$ssd/db")
fill=(--num 100000 --reads 20000 --value-size 4096 --write-buffer-size 16M --cache-size 8M
      --benchmarks fillrandom,readrandom,reopen --drop-caches-before-reopen)
small=(--num 400000 --reads 50000 --value-size 100 --write-buffer-size 16M --cache-size 8M
       --benchmarks fillrandom,readrandom)
for r in $(seq 1 "$rounds"); do
  for shape in fill small; do
    for w in false true; do
      rm -rf "$ssd/db" "$nvmroot/nvm"
      label="$shape-wal_on_nvm-$w-$r"
      if [ $shape = fill ]; then args=("${fill[@]}"); else args=("${small[@]}"); fi
      "$mezz" bench --json "$out/$label.jsonl" "${mz[@]}" --opt wal_on_nvm=$w "${args[@]}" >"$out/$label.txt" 2>&1
      echo "$label: $(grep -E '^(fillrandom|readrandom|reopen)' "$out/$label.txt" | cut -c1-60 | tr '\n' '|')"
    done
  done
done
umount "$nvmroot"; rmdir "$nvmroot"; rm -rf "$ssd"
