#!/usr/bin/env bash
# Memtable switches under a congested disk: the `leveldb` preset, open-loop YCSB load then A
# (200 K records, 20 K requests/s, 30 s of A; the suite's open-loop options), while `dd`
# writes 2 GB files with fdatasync in a loop beside it on the same file system. Alternates a
# binary that truncates the old WAL at the switch ($BEFORE) and one that seals it with an
# END marker and truncates it at its sync ($AFTER). Usage: BEFORE=.. AFTER=.. run.sh OUT ROUNDS
set -euo pipefail
out="$1"; rounds="${2:-2}"
scratch="${TMPDIR:-/tmp}/mezz-wal-seal-dd"
mkdir -p "$scratch"
for r in $(seq 1 "$rounds"); do
  for which in before after; do
    bin=$BEFORE; [ "$which" = after ] && bin=$AFTER
    ( while :; do dd if=/dev/zero of="$scratch/big" bs=1M count=2000 conv=fdatasync 2>/dev/null; done ) &
    ddpid=$!
    "$bin" bench --engine mezzanine:leveldb --write-buffer-size 64M --cache-size 8M \
      --bloom-bits 10 --no-progress --benchmarks ycsb-load,ycsb-a --num 200000 \
      --ops 600000 --rate 20000 --json "$out/$which-r$r.jsonl" > "$out/$which-r$r.txt"
    kill "$ddpid"; wait "$ddpid" 2>/dev/null || true
    pkill -f "of=$scratch/big" || true
    rm -f "$scratch/big"
  done
done
rmdir "$scratch" 2>/dev/null || true
