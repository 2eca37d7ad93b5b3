#!/usr/bin/env bash
# The C binding's cost: crates/mezz-capi/bench/putget.c (LevelDB's C API only) built from
# the same source against libmezzanine and, if installed, against LevelDB (-lleveldb),
# next to `mezz bench` on the same workloads and options (the engine's defaults: 16-byte
# keys, NUM ops per phase, VALUE_SIZE-byte values, one thread, no sync, fresh database):
#   fillseq then readrandom; fillrandom then readrandom.
# Each engine runs REPS times, alternating; the JSON result (medians, every run, and the
# ratio C API / mezz bench) goes to bench/results/<date>-capi/capi.json.
#   NUM=1000000 VALUE_SIZE=100 REPS=3 bench/capi.sh
set -euo pipefail
cd "$(dirname "$0")/.."
num=${NUM:-1000000}
vsize=${VALUE_SIZE:-100}
reps=${REPS:-3}
target="${CARGO_TARGET_DIR:-target}"
cargo build --release -p mezz -p mezz-capi
lib="$(cd "$target/release" && pwd)"
out="bench/results/$(date -u +%Y-%m-%d)-capi"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src=crates/mezz-capi/bench/putget.c
cc -O2 -std=c11 -I crates/mezz-capi/include "$src" -o "$work/putget-mezzanine" \
  "$lib/libmezzanine.so" -Wl,-rpath,"$lib"
engines=(mezzanine)
if [ -f /usr/include/leveldb/c.h ] && cc -O2 -std=c11 "$src" -o "$work/putget-leveldb" -lleveldb 2>/dev/null; then
  engines+=(leveldb)
else
  echo "capi: LevelDB's C library is not installed (scripts/setup.sh --comparators); skipping it"
fi

for rep in $(seq 1 "$reps"); do
  for e in "${engines[@]}"; do
    mkdir -p "$work/db-$e"
    "$work/putget-$e" "$work/db-$e" "$num" "$vsize" "c-api:$e" >> "$work/c.jsonl"
    rm -rf "$work/db-$e"
  done
  for b in fillseq,readrandom fillrandom,readrandom; do
    "$lib/mezz" bench --benchmarks "$b" --num "$num" --value-size "$vsize" \
      --json "$work/mezz-$rep-${b%%,*}.jsonl" > /dev/null
  done
  echo "capi: round $rep of $reps done"
done

python3 - "$work" "$out/capi.json" "$num" "$vsize" <<'PY'
import glob, json, os, statistics, subprocess, sys
work, dest, num, vsize = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = {}  # (engine, phase) -> [ops/s]
def add(engine, phase, ops):
    runs.setdefault((engine, phase), []).append(ops)
# C runs: 4 lines per run, in order seq fill, seq read, random fill, random read.
lines = [json.loads(l) for l in open(os.path.join(work, "c.jsonl"))]
groups = {}
for l in lines:
    groups.setdefault(l["engine"], []).append(l)
for engine, ls in groups.items():
    for i, l in enumerate(ls):
        group = "seq" if i % 4 < 2 else "random"
        add(engine, f"{group}:{l['benchmark']}", l["ops_per_sec"])
for f in sorted(glob.glob(os.path.join(work, "mezz-*.jsonl"))):
    group = "seq" if f.endswith("fillseq.jsonl") else "random"
    for l in open(f):
        r = json.loads(l)
        add("mezz-bench:mezzanine", f"{group}:{r['benchmark']}", r["ops_per_sec"])
phases = ["seq:fillseq", "seq:readrandom", "random:fillrandom", "random:readrandom"]
median = {f"{e}|{p}": statistics.median(v) for (e, p), v in runs.items()}
def m(e, p):
    return median.get(f"{e}|{p}")
ratios = {}
for p in phases:
    c, rust, ldb = m("c-api:mezzanine", p), m("mezz-bench:mezzanine", p), m("c-api:leveldb", p)
    ratios[p] = {
        "c_api_over_mezz_bench": c / rust if c and rust else None,
        "c_api_mezzanine_over_c_api_leveldb": c / ldb if c and ldb else None,
    }
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
result = {
    "what": "LevelDB C API put/get loop (crates/mezz-capi/bench/putget.c) vs mezz bench",
    "num": num, "value_size": vsize, "key_size": 16, "threads": 1, "sync": False,
    "git_commit": commit, "cores": os.cpu_count(),
    "median_ops_per_sec": {e: {p: m(e, p) for p in phases}
                           for e in sorted({e for e, _ in runs})},
    "ratios": ratios,
    "runs_ops_per_sec": {f"{e}|{p}": v for (e, p), v in sorted(runs.items())},
}
json.dump(result, open(dest, "w"), indent=2)
print(json.dumps({"median_ops_per_sec": result["median_ops_per_sec"], "ratios": ratios}, indent=2))
PY
echo "capi: results in $out/capi.json"
