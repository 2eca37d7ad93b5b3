#!/usr/bin/env bash
# Open-loop tail latency with the background threads at the process's priority
# (background_nice=0) and lowered (background_nice=19, the default), against release
# RocksDB in the same run: YCSB load of 200 K records of 1 KiB, then YCSB A (50 % reads,
# 50 % updates) open loop at 20 K requests/s for 60 s, the suite's open-loop shape (64 MiB
# memtables, 8 MiB cache, 10 bloom bits), ROUNDS rounds alternating the three.
#   <engine>-<setting>.jsonl   raw results (engine_stats holds the slow reads and writes)
#   summary.md                 p99 / p99.9 / max of reads and updates, service time p99.9
# Usage: bench/background_nice.sh [--rounds N] [--out DIR]   (default 2 rounds, ~8 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out="bench/results/$(date +%F)-background-nice"
rounds=2
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--out DIR]" >&2; exit 2 ;;
  esac
done
bin="${MEZZ_BIN:-target/rocksdb-release/release/mezz}"
[ -x "$bin" ] || { echo "$bin missing: scripts/build-comparators.sh release" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.jsonl
nvm=/dev/shm/mezz-nice
for r in $(seq 1 "$rounds"); do
  for cfg in mezzanine:leveldb/0 mezzanine:leveldb/19 rocksdb/-; do
    e="${cfg%/*}"; n="${cfg#*/}"
    opt=(); tag="$e"
    if [ "$n" != "-" ]; then opt=(--opt "background_nice=$n"); tag="$e-nice$n"; fi
    rm -rf "$nvm"; mkdir -p "$nvm"
    echo "== round $r: $tag"
    "$bin" bench --engine "$e" --benchmarks ycsb-load,ycsb-a,stats --num 200000 --ops 1200000 \
      --rate 20000 --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress \
      --nvm-dir "$nvm" "${opt[@]}" --json "$out/${tag//:/-}.jsonl" | grep -E "^ycsb-a|slow"
  done
done
rm -rf "$nvm"
python3 - "$out" > "$out/summary.md" <<'PY'
import json, os, sys
d = sys.argv[1]
print("# Open-loop YCSB A at 20 K requests/s: background priority\n")
print("| engine | round | read p99 µs | read p99.9 µs | update p99.9 µs | max µs | service p99.9 µs (read / update) | slow reads | slow write groups |")
print("|---|---|---|---|---|---|---|---|---|")
for f in sorted(os.listdir(d)):
    if not f.endswith(".jsonl"):
        continue
    rows = [json.loads(l) for l in open(os.path.join(d, f))]
    a = [r for r in rows if r["benchmark"] == "ycsb-a"]
    for i, r in enumerate(a, 1):
        L, S = r["latency"], r.get("service_latency", {})
        es = r.get("engine_stats") or {}
        sr = (es.get("slow_reads") or {}).get("reads", "-")
        sw = (es.get("slow_writes") or {}).get("groups", "-")
        mx = max(L["read"]["max_us"], L["update"]["max_us"])
        print(f"| {f[:-6]} | {i} | {L['read']['p99_us']:.1f} | {L['read']['p999_us']:.1f} | "
              f"{L['update']['p999_us']:.1f} | {mx:,.0f} | {S.get('read', {}).get('p999_us', 0):.1f} / "
              f"{S.get('update', {}).get('p999_us', 0):.1f} | {sr} | {sw} |")
PY
cat "$out/summary.md"
