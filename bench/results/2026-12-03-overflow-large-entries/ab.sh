#!/bin/bash
# A/B of the size rule: OLD and NEW are two builds of `mezz` (or one build run with and
# without `--opt nvm_memtable_large_entry=2K`); NVM is a directory on a tmpfs mounted with
# huge=always, SSD a directory on the SSD. Usage: ab.sh OLD NEW NVM SSD ROUNDS -- bench args
# e.g. ab.sh old/mezz new/mezz /mnt/nvmfs /ssd 2 -- --engine mezzanine:mezzanine \
#   --opt nvm_capacity=1G --opt nvm_memtable_size=128M --num 400000 --reads 30000 \
#   --value-size 4096 --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom,readrandom
old=$1; new=$2; nvm=$3; ssd=$4; rounds=$5; shift 6
for r in $(seq 1 "$rounds"); do
  for v in old new; do
    bin=$old; [ $v = new ] && bin=$new
    rm -rf "$nvm"/* "$ssd"/db
    "$bin" bench --nvm-dir "$nvm/nvm" --direct-io --nvm-profile optane --no-progress \
      --db "$ssd/db" "$@" 2>&1 | grep -E "^[a-z0-9-]+ +: " | sed "s/^/$v r$r /"
  done
done
