#!/usr/bin/env bash
# The core-engine benchmarks of docs/benchmarks.md, on the default (leveldb) preset, each on
# a fresh temporary database: 16-byte keys, 100-byte values, one thread, no sync.
#   1 M keys: the reference run (fillrandom + readrandom).
#   5 M keys (1 M reads): large enough for L0->L1 and deeper compactions, so write
#   amplification and stall time are non-trivial.
# Results (JSON lines, one object per benchmark) go to bench/results/<date>/.
set -euo pipefail
cd "$(dirname "$0")/.."
out="bench/results/$(date -u +%Y-%m-%d)"
mkdir -p "$out"
cargo build --release -p mezz
bin=target/release/mezz
$bin bench --benchmarks fillrandom,readrandom --num 1000000 --value-size 100 \
  --json "$out/core-1m.jsonl"
$bin bench --benchmarks fillrandom,readrandom --num 5000000 --reads 1000000 --value-size 100 \
  --json "$out/core-5m.jsonl"
echo "results in $out"
