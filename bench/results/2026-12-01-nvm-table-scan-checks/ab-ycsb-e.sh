#!/bin/bash
# A/B/C of three mezz binaries on the TLSM section's YCSB shape at the same NVM cost as
# LevelDB-NVM (the `tlsm` preset, every level in NVM, `dram` profile, 4 MiB memtables, no
# filter, 400 K records of 1 KiB): ycsb-load, then C (point reads) and E (scans), rounds
# alternating the binaries. usage: ab-ycsb-e.sh OUTDIR ROUNDS NAME=MEZZ...
set -u
out=$1; rounds=$2; shift 2
mkdir -p "$out"
nvm=/dev/shm/mezz-ab-ye-nvm; db=/dev/shm/mezz-ab-ye-db
args=(--engine mezzanine:tlsm --nvm-profile dram --no-progress --opt nvm_tiering=none --opt nvm_capacity=4G
      --nvm-dir "$nvm" --db "$db" --write-buffer-size 4M --cache-size 8M --bloom-bits 0
      --opt target_file_size=4M --opt max_bytes_for_level_base=40M --num 400000 --ops 100000
      --benchmarks ycsb-load,ycsb-c,ycsb-e)
for r in $(seq 1 "$rounds"); do
  for nb in "$@"; do
    name=${nb%%=*}; bin=${nb#*=}
    rm -rf "$nvm" "$db"
    "$bin" bench "${args[@]}" --json "$out/$name-$r.jsonl" >"$out/$name-$r.txt" 2>&1
    echo "$name $r: $(grep -E '^ycsb-(c|e)' "$out/$name-$r.txt" | cut -c1-45 | tr '\n' '|')"
  done
done
rm -rf "$nvm" "$db"
