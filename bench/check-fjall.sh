#!/usr/bin/env bash
# Cross-checks the fjall adapter of `mezz bench` against a minimal program that drives fjall
# through its own API (crates/mezz-bench/examples/fjall_direct.rs) with the adapter's
# configuration, on the same workload: fillrandom of NUM keys (16-byte keys, 100-byte
# values, one thread, no sync), wait until fjall is idle, readrandom of READS keys; 64 MiB
# memtable, 8 MiB block cache, 10 bloom bits, no compression. fjall has no db_bench of its
# own in its repository, hence the direct program.
#
#   bench/check-fjall.sh [--num N] [--reads R] [--rounds K] [--out DIR]
#
# Defaults: 2 M keys, 1 M reads, 3 rounds (the two alternate, each on a fresh database),
# results in bench/results/<date>-comparator-check/: fjall.json (every round, medians,
# adapter / direct ratios, whether each is within ±30 %, the load average),
# fjall-direct-<k>.txt, fjall-mezz-<k>.jsonl. Builds what it needs (release profile,
# feature fjall) unless MEZZ_BIN and FJALL_DIRECT name the binaries; WORK_DIR is the
# scratch directory (default the system's temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."

num=2000000
reads=1000000
rounds=3
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --num) num="$2"; shift ;;
    --reads) reads="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "check-fjall: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out="${out:-bench/results/$(date -u +%Y-%m-%d)-comparator-check}"
if [ -z "${MEZZ_BIN:-}" ] || [ -z "${FJALL_DIRECT:-}" ]; then
  cargo build --release -p mezz --features fjall
  cargo build --release -p mezz-bench --features fjall --example fjall_direct
fi
target="${CARGO_TARGET_DIR:-target}"
bin="${MEZZ_BIN:-$target/release/mezz}"
direct="${FJALL_DIRECT:-$target/release/examples/fjall_direct}"
mkdir -p "$out"
work=$(mktemp -d "${WORK_DIR:-${TMPDIR:-/tmp}}/check-fjall.XXXXXX")
trap 'rm -rf "$work"' EXIT

mezz_args=(bench --engine fjall --benchmarks fillrandom,readrandom --num "$num"
  --reads "$reads" --key-size 16 --value-size 100 --threads 1 --write-buffer-size 64M
  --cache-size 8M --bloom-bits 10 --no-progress)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for k in $(seq 1 "$rounds"); do
  echo "== round $k/$rounds: fjall_direct"
  rm -rf "$work/direct"
  "$direct" "$work/direct" "$num" "$reads" 100 $((8 << 20)) $((64 << 20)) 10 \
    | tee "$out/fjall-direct-$k.txt"
  rm -rf "$work/direct"
  echo "== round $k/$rounds: mezz bench --engine fjall"
  rm -rf "$work/mezz" "$out/fjall-mezz-$k.jsonl"
  "$bin" "${mezz_args[@]}" --db "$work/mezz" --json "$out/fjall-mezz-$k.jsonl" \
    | grep -E '^(fillrandom|readrandom) '
  rm -rf "$work/mezz"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$out" "$rounds" "$load_before" "$load_after" "$bin" "$direct" "$num" "$reads" \
  "${mezz_args[*]}" <<'EOF'
import json, statistics, sys
out, rounds, load_before, load_after, mezz_bin, direct_bin, num, reads, ma = sys.argv[1:]
rounds = int(rounds)
direct, mezz = [], []
for k in range(1, rounds + 1):
    direct.append({j["benchmark"]: j for j in map(json.loads, open(f"{out}/fjall-direct-{k}.txt"))})
    r = {}
    for line in open(f"{out}/fjall-mezz-{k}.jsonl"):
        j = json.loads(line)
        lat = j["latency"][j["primary_op"]]
        r[j["benchmark"]] = {"ops_per_sec": j["ops_per_sec"], "p50_us": lat["p50_us"],
                             "p99_us": lat["p99_us"], "p999_us": lat["p999_us"],
                             "max_us": lat["max_us"], "found": j.get("found")}
    mezz.append(r)
summary, ok = {}, True
for bench in ["fillrandom", "readrandom"]:
    s = {}
    for metric in ["ops_per_sec", "p50_us", "p99_us", "p999_us"]:
        a = statistics.median(r[bench][metric] for r in mezz)
        b = statistics.median(r[bench][metric] for r in direct)
        ratio = a / b if b else None
        within = ratio is not None and 0.7 <= ratio <= 1.3
        if metric in ("ops_per_sec", "p50_us", "p99_us"):
            ok &= within
        s[metric] = {"adapter_median": a, "direct_median": b, "adapter_over_direct": ratio,
                     "within_30_percent": within}
    summary[bench] = s
result = {
    "what": "fjall adapter of mezz bench against fjall driven directly (examples/fjall_direct.rs), same configuration",
    "rounds": rounds, "summary": summary, "within_30_percent": ok,
    "judged_on": "median ops/s, p50 and p99 of both benchmarks (p99.9 reported only)",
    "load_average_before": load_before, "load_average_after": load_after,
    "direct": direct, "adapter": mezz,
    # Binaries named relative to the target directory (CARGO_TARGET_DIR, default target).
    "commands": {"direct": f"<target>/release/examples/fjall_direct DIR {num} {reads} 100 8388608 67108864 10",
                 "adapter": f"<target>/release/mezz {ma} --db DIR --json FILE"},
}
with open(f"{out}/fjall.json", "w") as f:
    json.dump(result, f, indent=2)
print(json.dumps({"summary": summary, "within_30_percent": ok, "load": [load_before, load_after]}, indent=2))
EOF
echo "check-fjall: results in $out/fjall.json"
