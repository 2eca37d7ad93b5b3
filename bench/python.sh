#!/usr/bin/env bash
# The Python binding's overhead: the same put/get loops (NUM sequential puts of 16-byte keys
# and 100-byte values, then NUM random gets) through the `mezzanine` package, through plyvel
# on LevelDB, and natively through `mezz bench` (fillseq, readrandom); writes one JSON file
# with the three and the ratios to bench/results/<date>-python/python.json.
# usage: bench/python.sh [NUM]   (default 200000). Release builds throughout.
# plyvel needs LevelDB's headers: ./scripts/setup.sh --comparators installs libleveldb-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
num="${1:-200000}"
value=100
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
venv="$target/python-bench-venv"
out="bench/results/$(date +%F)-python"
mkdir -p "$out"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check ./python   # a release wheel
plyvel_note=""
work_log="$out/plyvel-install.log"
if ! "$venv/bin/pip" install -q --disable-pip-version-check plyvel 2>"$work_log"; then
  plyvel_note="plyvel did not build (see plyvel-install.log; it needs libleveldb-dev)"
fi
cargo build --release -q -p mezz
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$venv/bin/python" bench/python_bench.py mezzanine "$work/py-mezz" "$num" "$value" > "$work/py-mezz.json"
if [ -z "$plyvel_note" ]; then
  rm -f "$work_log"
  "$venv/bin/python" bench/python_bench.py plyvel "$work/py-leveldb" "$num" "$value" > "$work/py-leveldb.json"
else
  echo '{}' > "$work/py-leveldb.json"
fi
"$target/release/mezz" bench --db "$work/native" --benchmarks fillseq,readrandom --num "$num" \
  --key-size 16 --value-size "$value" --json "$work/native.json" > "$work/native.txt"

python3 - "$work" "$out/python.json" "$plyvel_note" <<'PY'
import json, sys, platform
work, dest, note = sys.argv[1], sys.argv[2], sys.argv[3]
py = json.load(open(f"{work}/py-mezz.json"))
lv = json.load(open(f"{work}/py-leveldb.json"))
native = {}
for line in open(f"{work}/native.json"):
    r = json.loads(line)
    name = r.get("benchmark") or r.get("name")
    us = r.get("micros_per_op") or r.get("us_per_op")
    if us is None and r.get("ops_per_sec"):
        us = 1e6 / r["ops_per_sec"]
    native[name] = us
res = {
    "workload": f"{py['num']} sequential puts then {py['num']} random gets, 16 B keys, {py['value_size']} B values, 1 thread",
    "native_mezz_bench_us_per_op": {"fillseq": native.get("fillseq"), "readrandom": native.get("readrandom")},
    "python_mezzanine_us_per_op": {"fillseq": py["fillseq_us_per_op"], "readrandom": py["readrandom_us_per_op"]},
    "python_plyvel_leveldb_us_per_op": {"fillseq": lv.get("fillseq_us_per_op"), "readrandom": lv.get("readrandom_us_per_op")},
    "overhead_ratio_python_over_native": {
        b: (py[f"{b}_us_per_op"] / native[b]) if native.get(b) else None for b in ("fillseq", "readrandom")
    },
    "python_mezzanine_over_plyvel": {
        b: (py[f"{b}_us_per_op"] / lv[f"{b}_us_per_op"]) if lv.get(f"{b}_us_per_op") else None
        for b in ("fillseq", "readrandom")
    },
    "python": platform.python_version(),
    "note": note or None,
}
json.dump(res, open(dest, "w"), indent=2)
print(json.dumps(res, indent=2))
PY
