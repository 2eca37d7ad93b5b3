#!/usr/bin/env bash
# Cross-checks the RocksDB adapter of `mezz bench` against RocksDB's own db_bench, both on the
# release RocksDB 7.9.2 built from the librocksdb-sys crate's bundled source (the same
# librocksdb.a, see scripts/build-db-bench.sh), on the same workload and options:
# fillrandom of NUM keys (16-byte keys, 100-byte values, one thread, no sync), wait for
# compactions, then readrandom of READS keys; 64 MiB write buffer, 8 MiB LRU block cache,
# 10-bit full bloom filter, no compression, max_background_jobs = 2,
# max_bytes_for_level_base = 256 MiB, statistics on. db_bench's defaults that differ from
# RocksDB's Options defaults (which the adapter keeps) are set back to them: pipelined
# writes off, delayed_write_rate 0 (RocksDB derives 16 MiB/s), table cache shard bits 6,
# block cache shard bits automatic and high-priority pool 0.5 (NewLRUCache's defaults),
# perf level "count" (the library's default, db_bench disables it), no malloc stats dump,
# index shortening of separators only, top-level index and filter pinned, hard pending
# compaction limit 256 GiB. The two OPTIONS files RocksDB writes are compared key by key
# afterwards: any difference other than paths is reported (and in the JSON); the ones left
# do not act on these workloads (docs/comparators.md).
#
#   bench/check-rocksdb.sh [--num N] [--reads R] [--rounds K] [--out DIR]
#
# Defaults: 1 M keys, 1 M reads, 3 rounds (db_bench and the adapter alternate, each on a
# fresh database), results in bench/results/<date>-comparator-check/: rocksdb.json (every
# round, medians, adapter / db_bench ratios, whether each is within ±30 %, the options
# comparison, the load average), db_bench-<k>.txt, mezz-<k>.jsonl. Needs
# `scripts/build-comparators.sh release` and `scripts/build-db-bench.sh` (MEZZ_BIN and
# DB_BENCH override the binaries; WORK_DIR the scratch directory, default the system's
# temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."

num=1000000
reads=1000000
rounds=3
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --num) num="$2"; shift ;;
    --reads) reads="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "check-rocksdb: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out="${out:-bench/results/$(date -u +%Y-%m-%d)-comparator-check}"
target="${CARGO_TARGET_DIR:-target/rocksdb-release}"
bin="${MEZZ_BIN:-$target/release/mezz}"
db_bench="${DB_BENCH:-$target/db_bench/db_bench}"
for b in "$bin" "$db_bench"; do
  if [ ! -x "$b" ]; then
    echo "check-rocksdb: $b missing: run scripts/build-comparators.sh release and" \
         "scripts/build-db-bench.sh" >&2
    exit 1
  fi
done
"$bin" bench --list-engines | tr ',' '\n' | grep -qx rocksdb \
  || { echo "check-rocksdb: $bin has no rocksdb engine" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d "${WORK_DIR:-${TMPDIR:-/tmp}}/check-rocksdb.XXXXXX")
trap 'rm -rf "$work"' EXIT

db_bench_args=(--benchmarks=fillrandom,waitforcompaction,readrandom --num="$num"
  --reads="$reads" --key_size=16 --value_size=100 --threads=1 --sync=false
  --write_buffer_size=67108864 --max_write_buffer_number=2 --cache_size=8388608
  --cache_numshardbits=-1 --cache_high_pri_pool_ratio=0.5 --bloom_bits=10
  --compression_type=none --max_background_jobs=2 --max_bytes_for_level_base=268435456
  --statistics=1 --perf_level=2 --enable_pipelined_write=false --delayed_write_rate=0
  --table_cache_numshardbits=6 --dump_malloc_stats=false --histogram=1 --seed=301
  --compression_ratio=0.5 --index_shortening_mode=1 --pin_top_level_index_and_filter=true
  --hard_pending_compaction_bytes_limit=274877906944)
mezz_args=(bench --engine rocksdb --benchmarks fillrandom,readrandom --num "$num"
  --reads "$reads" --key-size 16 --value-size 100 --threads 1 --write-buffer-size 64M
  --cache-size 8M --bloom-bits 10 --no-progress --seed 301)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for k in $(seq 1 "$rounds"); do
  echo "== round $k/$rounds: db_bench"
  rm -rf "$work/db_bench"
  "$db_bench" --db="$work/db_bench" "${db_bench_args[@]}" > "$out/db_bench-$k.txt" 2>&1
  grep -E '^(fillrandom|readrandom) ' "$out/db_bench-$k.txt"
  cp "$(ls -t "$work"/db_bench/OPTIONS-* | head -n 1)" "$work/OPTIONS.db_bench"
  echo "== round $k/$rounds: mezz bench --engine rocksdb"
  rm -rf "$work/mezz" "$out/mezz-$k.jsonl"
  "$bin" "${mezz_args[@]}" --db "$work/mezz" --json "$out/mezz-$k.jsonl" \
    | grep -E '^(fillrandom|readrandom) '
  cp "$(ls -t "$work"/mezz/OPTIONS-* | head -n 1)" "$work/OPTIONS.mezz"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$out" "$rounds" "$work" "$load_before" "$load_after" "$bin" "$db_bench" \
  "${db_bench_args[*]}" "${mezz_args[*]}" <<'EOF'
import configparser, json, re, statistics, sys
out, rounds, work, load_before, load_after, mezz_bin, db_bench_bin, dba, ma = sys.argv[1:]
rounds = int(rounds)

def db_bench_round(path):
    text = open(path).read()
    res = {}
    for m in re.finditer(r"^(fillrandom|readrandom)\s*:\s*([\d.]+) micros/op (\d+) ops/sec", text, re.M):
        res[m.group(1)] = {"ops_per_sec": float(m.group(3)), "micros_per_op": float(m.group(2))}
    # The histogram sections follow the benchmark lines in order: write, then read.
    for op, bench in [("write", "fillrandom"), ("read", "readrandom")]:
        m = re.search(r"Microseconds per %s:\n.*?Max: ([\d.]+).*?Percentiles: P50: ([\d.]+) "
                      r"P75: [\d.]+ P99: ([\d.]+) P99.9: ([\d.]+)" % op, text, re.S)
        if m and bench in res:
            res[bench].update(p50_us=float(m.group(2)), p99_us=float(m.group(3)),
                              p999_us=float(m.group(4)), max_us=float(m.group(1)))
    found = re.search(r"readrandom .*\((\d+) of (\d+) found\)", text)
    if found and "readrandom" in res:
        res["readrandom"]["found"] = int(found.group(1))
    m = re.search(r"RocksDB:\s+version (\S+)", text)
    res["version"] = m.group(1) if m else None
    return res

def mezz_round(path):
    res = {}
    for line in open(path):
        r = json.loads(line)
        lat = r["latency"][r["primary_op"]]
        res[r["benchmark"]] = {"ops_per_sec": r["ops_per_sec"], "micros_per_op": r["micros_per_op"],
                               "p50_us": lat["p50_us"], "p99_us": lat["p99_us"],
                               "p999_us": lat["p999_us"], "max_us": lat["max_us"]}
        if r["benchmark"] == "readrandom":
            res["readrandom"]["found"] = r.get("found")
        res["version"] = r.get("engine_version")
    return res

def options(path):
    c = configparser.ConfigParser(interpolation=None, strict=False)
    c.optionxform = str
    c.read(path)
    return {f"{s}.{k}": v for s in c.sections() for k, v in c[s].items()}

db = [db_bench_round(f"{out}/db_bench-{k}.txt") for k in range(1, rounds + 1)]
mz = [mezz_round(f"{out}/mezz-{k}.jsonl") for k in range(1, rounds + 1)]
o_db, o_mz = options(f"{work}/OPTIONS.db_bench"), options(f"{work}/OPTIONS.mezz")
skip = ("wal_dir", "db_log_dir", "db_host_id")
diff = {k: {"db_bench": o_db.get(k), "adapter": o_mz.get(k)}
        for k in sorted(set(o_db) | set(o_mz))
        if o_db.get(k) != o_mz.get(k) and not k.endswith(skip) and not k.startswith("Version.")}

summary = {}
ok = True
for bench in ["fillrandom", "readrandom"]:
    s = {}
    for metric in ["ops_per_sec", "p50_us", "p99_us", "p999_us"]:
        a = [r[bench][metric] for r in mz if metric in r.get(bench, {})]
        b = [r[bench][metric] for r in db if metric in r.get(bench, {})]
        if not a or not b:
            continue
        ma_, mb_ = statistics.median(a), statistics.median(b)
        ratio = ma_ / mb_ if mb_ else None
        within = ratio is not None and 0.7 <= ratio <= 1.3
        if metric in ("ops_per_sec", "p50_us", "p99_us"):
            ok &= within
        s[metric] = {"adapter_median": ma_, "db_bench_median": mb_,
                     "adapter_over_db_bench": ratio, "within_30_percent": within}
    summary[bench] = s

result = {
    "what": "RocksDB adapter of mezz bench against RocksDB's db_bench, same library and options",
    "rocksdb_version": {"db_bench": db[0].get("version"), "adapter": mz[0].get("version")},
    "rounds": rounds,
    "summary": summary,
    "within_30_percent": ok,
    "judged_on": "median ops/s, p50 and p99 of both benchmarks (p99.9 reported only)",
    "options_differences": diff,
    "load_average_before": load_before,
    "load_average_after": load_after,
    "db_bench": db,
    "adapter": mz,
    # Binaries named relative to the target directory (CARGO_TARGET_DIR, default
    # target/rocksdb-release), as built by the scripts.
    "commands": {"db_bench": f"<target>/db_bench/db_bench --db=DIR {dba}",
                 "adapter": f"<target>/release/mezz {ma} --db DIR --json FILE"},
}
with open(f"{out}/rocksdb.json", "w") as f:
    json.dump(result, f, indent=2)
print(json.dumps({"summary": summary, "within_30_percent": ok,
                  "options_differences": diff, "load": [load_before, load_after]}, indent=2))
EOF
echo "check-rocksdb: results in $out/rocksdb.json"
