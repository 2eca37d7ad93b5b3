#!/bin/bash
# A/B of two mezz binaries for the mezzanine preset at the full mezzanine-section shapes
# (4 KiB fill + reads + reopen; 100-byte fill), alternating.
# usage: ab-full.sh OLD_MEZZ NEW_MEZZ OUTDIR ROUNDS [SHAPES]
set -u
old=$1; new=$2; out=$3; rounds=${4:-2}; shapes=${5:-"fill small"}
mkdir -p "$out"
ssd=$(mktemp -d /tmp/mezz-ab-ssd.XXXXXX)
nvmroot=$(mktemp -d /tmp/mezz-ab-nvmfs.XXXXXX)
mount -t tmpfs -o huge=always tmpfs "$nvmroot"
mz=(--engine mezzanine:mezzanine --nvm-dir "$nvmroot/nvm" --opt nvm_capacity=1G --opt nvm_memtable_size=128M
    --direct-io --nvm-profile optane --no-progress --db "$ssd/db")
fill=(--num 1000000 --reads 100000 --value-size 4096 --write-buffer-size 64M --cache-size 8M
      --benchmarks fillrandom,readrandom,reopen --drop-caches-before-reopen)
small=(--num 18000000 --value-size 100 --write-buffer-size 64M --cache-size 8M
       --benchmarks fillrandom)
for r in $(seq 1 "$rounds"); do
  for shape in $shapes; do
    for b in old new; do
      rm -rf "$ssd/db" "$nvmroot/nvm"
      label="$shape-$b-$r"
      case $shape in fill) args=("${fill[@]}");; small) args=("${small[@]}");; esac
      bin=$old; [ $b = new ] && bin=$new
      "$bin" bench --json "$out/$label.jsonl" "${mz[@]}" "${args[@]}" >"$out/$label.txt" 2>&1
      echo "$label: $(grep -E '^(fillrandom|readrandom|reopen)' "$out/$label.txt" | cut -c1-60 | tr '\n' '|') $(grep -o '"nvm_memtable_handbacks":[0-9]*' "$out/$label.jsonl" | tail -1)"
    done
  done
done
umount "$nvmroot"; rmdir "$nvmroot"; rm -rf "$ssd"
