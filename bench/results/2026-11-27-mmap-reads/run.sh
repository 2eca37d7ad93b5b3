#!/usr/bin/env bash
# mmap_reads off and on, same binary, the suite's open-loop workload (200 K YCSB records,
# then 60 s of YCSB A at 20 K requests/s), alternating, two rounds per preset.
#   bench/results/2026-11-27-mmap-reads/run.sh [MEZZ_BIN]
set -euo pipefail
cd "$(dirname "$0")/../../.."
bin=${1:-target/rocksdb-release/release/mezz}
out=bench/results/2026-11-27-mmap-reads
for round in 1 2; do
  for preset in leveldb novelsm; do
    for mapped in false true; do
      rm -rf /dev/shm/mezz-mr && mkdir -p /dev/shm/mezz-mr
      "$bin" bench --engine "mezzanine:$preset" --nvm-dir /dev/shm/mezz-mr \
        --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress \
        --opt nvm_capacity=160M --opt nvm_memtable_size=64M --opt "mmap_reads=$mapped" \
        --benchmarks ycsb-load,ycsb-a --num 200000 --ops 1200000 --rate 20000 \
        --json "$out/$preset-mmap-$mapped.jsonl" > /dev/null
    done
  done
done
rm -rf /dev/shm/mezz-mr
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| preset | mmap_reads | round | read p99 / p99.9 / max µs | update p99 / p99.9 / max µs | block reads waited (slow reads) |")
print("|---|---|---|---|---|---|")
for preset in ("leveldb", "novelsm"):
    for mapped in ("false", "true"):
        rows = [json.loads(l) for l in open(f"{out}/{preset}-mmap-{mapped}.jsonl")]
        for i, r in enumerate(x for x in rows if x["benchmark"] == "ycsb-a"):
            lat = r["latency"]
            f = lambda k: f"{lat[k]['p99_us']:.1f} / {lat[k]['p999_us']:.0f} / {lat[k]['max_us']:.0f}"
            w = r["engine_stats"]["slow_reads"]["waits"]
            print(f"| {preset} | {mapped} | {i + 1} | {f('read')} | {f('update')} | "
                  f"{w['block_read'] / 1000:.1f} ms in {w['block_reads']} |")
PY
