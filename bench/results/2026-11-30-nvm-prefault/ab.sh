#!/bin/bash
# A/B of nvm_prefault for the NVM-table presets: the quick mezzanine-section fill shape.
# usage: ab.sh MEZZ OUTDIR ROUNDS
set -u
mezz=$1; out=$2; rounds=${3:-2}
mkdir -p "$out"
ssd=$(mktemp -d /tmp/mezz-ab-ssd.XXXXXX)
nvmroot=$(mktemp -d /tmp/mezz-ab-nvmfs.XXXXXX)
mount -t tmpfs -o huge=always tmpfs "$nvmroot"
for r in $(seq 1 "$rounds"); do
  for preset in mezzanine tlsm; do
    for pf in false true; do
      rm -rf "$ssd/db" "$nvmroot/nvm"
      label="$preset-prefault-$pf-$r"
      extra=()
      [ "$preset" = mezzanine ] && extra=(--opt nvm_memtable_size=32M)
      "$mezz" bench --json "$out/$label.jsonl" --engine "mezzanine:$preset" --nvm-dir "$nvmroot/nvm" \
        --opt nvm_capacity=256M "${extra[@]}" --opt nvm_prefault=$pf --direct-io --nvm-profile optane \
        --no-progress --db "$ssd/db" --num 100000 --reads 20000 --value-size 4096 \
        --write-buffer-size 16M --cache-size 8M --benchmarks fillrandom,readrandom >"$out/$label.txt" 2>&1
      echo "$label: $(grep -E '^fillrandom' "$out/$label.txt" | cut -c1-120)"
    done
  done
done
umount "$nvmroot"; rmdir "$nvmroot"; rm -rf "$ssd"
