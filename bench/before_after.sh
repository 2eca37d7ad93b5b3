#!/usr/bin/env bash
# Before/after comparison of two release `mezz` binaries on the same machine, in one run:
# alternating rounds, each preset on a fresh temporary database (NVM emulated on /dev/shm).
#
#   [PRESETS="leveldb novelsm novelsm-imm"] [BENCH_ARGS="..."] \
#     bench/before_after.sh BEFORE_MEZZ AFTER_MEZZ OUT_DIR [ROUNDS] [NUM]
#
# BENCH_ARGS replaces the default `--benchmarks fillrandom,overwrite,readrandom` (for example
# an open-loop run: `--benchmarks ycsb-load,ycsb-a --ops 400000 --rate 20000`).
# Writes OUT_DIR/{before,after}-<preset>.jsonl (one JSON line per benchmark and round) and
# prints a table of ops/s per round, and of p99 / p99.9 / max latency of each benchmark's
# requests (from their intended start in an open-loop run).
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-2} num=${5:-500000}
mkdir -p "$out"
read -r -a presets <<< "${PRESETS:-leveldb novelsm novelsm-imm}"
args_for() {
  case $1 in
    novelsm-imm) echo "--preset novelsm --opt nvm_memtable=immutable" ;;
    *) echo "--preset $1" ;;
  esac
}
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    bin=$before; [ "$side" = after ] && bin=$after
    for p in "${presets[@]}"; do
      # shellcheck disable=SC2046
      "$bin" bench $(args_for "$p") ${BENCH_ARGS:---benchmarks fillrandom,overwrite,readrandom} \
        --num "$num" --seed 7 --json "$out/$side-$p.jsonl" >/dev/null
    done
  done
done
python3 - "$out" "${presets[@]}" <<'PY'
import json, sys, collections
out, presets = sys.argv[1], sys.argv[2:]
print("| preset | benchmark | before (per round) | after (per round) |")
print("|---|---|---|---|")
for p in presets:
    rows = collections.defaultdict(lambda: {"before": [], "after": []})
    for side in ("before", "after"):
        for line in open(f"{out}/{side}-{p}.jsonl"):
            r = json.loads(line)
            name = r.get("benchmark") or r.get("name")
            if (r.get("threads") or 1) > 1:
                name = f"{name}@{r['threads']}"
            ops = r.get("ops_per_sec") or r.get("throughput_ops")
            lat = (r.get("latency") or {}).get(r.get("primary_op") or "", {})
            rows[name][side].append((ops, lat))
    for b, v in rows.items():
        f = lambda xs: " / ".join(f"{x/1000:.1f} K" for x, _ in xs)
        print(f"| {p} | {b} | {f(v['before'])} | {f(v['after'])} |")
    for b, v in rows.items():
        f = lambda xs: " / ".join(
            f"{l.get('p99_us', 0):.0f}, {l.get('p999_us', 0):.0f}, {l.get('max_us', 0):.0f}"
            for _, l in xs)
        print(f"| {p} | {b} p99, p99.9, max µs | {f(v['before'])} | {f(v['after'])} |")
PY
