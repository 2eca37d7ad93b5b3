#!/usr/bin/env bash
# JigsawDB's claim, rerun: the unified KeySet block format against LevelDB's prefix-
# compressed blocks (option block_format), same engine, same workload, one run:
# fillrandom of N entries (16 B keys, 100 B values, 4 MiB memtables so flushes and
# compactions run all along), then N/5 readrandom with a small block cache (reads decode
# blocks), three rounds each, alternating formats. The engine counts the time spent
# building data blocks (encode) and reading, checking and parsing them (decode).
#   <format>.jsonl     the raw results
#   summary.md         total time, the encode share of flush + compaction time, the decode
#                      share of read time, and the ratios (bench/jigsaw_summary.py)
# Usage: bench/jigsaw.sh [--quick] [--out DIR]   (--quick: a tenth of the data)
set -euo pipefail
cd "$(dirname "$0")/.."

out="bench/results/$(date +%F)-jigsaw"
scale=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) scale=10; shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
rm -f "$out"/*.jsonl "$out"/summary.md

cargo build --release -q -p mezz
n=$((2000000 / scale))
for round in 1 2 3; do
  for f in keyset prefix; do
    echo "== $f round $round"
    target/release/mezz bench --preset leveldb --opt block_format=$f --no-progress \
      --opt write_buffer_size=4M --opt target_file_size=4M --opt max_bytes_for_level_base=40M \
      --cache-size 1M --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom \
      --json "$out/$f.jsonl" | grep -E '^(fill|read)'
  done
done
python3 bench/jigsaw_summary.py "$out" > "$out/summary.md"
cat "$out/summary.md"
