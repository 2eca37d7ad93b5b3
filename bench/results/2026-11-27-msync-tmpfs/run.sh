#!/usr/bin/env bash
# The suite's fill-mem (300 K x 100 B, one memtable) and fill-sustained (12.5 M x 100 B)
# workloads with the suite's options, for the presets `leveldb` and `novelsm`, with a binary
# whose msync-mode NVM on /dev/shm makes msync calls ($BEFORE) and one that flushes cache
# lines instead ($AFTER), alternating. Usage: BEFORE=... AFTER=... run.sh OUT_DIR ROUNDS
set -euo pipefail
out="$1"; rounds="${2:-1}"
nvm=/dev/shm/mezz-msync-tmpfs
args=(--engine mezzanine:leveldb,mezzanine:novelsm --nvm-dir "$nvm" --write-buffer-size 64M
      --cache-size 8M --bloom-bits 10 --no-progress
      --opt nvm_capacity=160M --opt nvm_memtable_size=64M --benchmarks fillrandom --value-size 100)
for r in $(seq 1 "$rounds"); do
  for which in before after; do
    bin=$AFTER; [ "$which" = before ] && bin=$BEFORE
    for w in mem:300000 sustained:12500000; do
      rm -rf "$nvm"; mkdir -p "$nvm"
      "$bin" bench "${args[@]}" --num "${w#*:}" --json "$out/$which-fill-${w%%:*}-r$r.jsonl" \
        > "$out/$which-fill-${w%%:*}-r$r.txt"
    done
  done
done
rm -rf "$nvm"
