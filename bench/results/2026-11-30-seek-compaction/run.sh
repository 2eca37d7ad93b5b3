#!/usr/bin/env bash
# Read-triggered compaction (seek_compaction) on and off, on the same databases: the TLSM
# section's shape of bench/papers at LevelDB-NVM's NVM cost (`tlsm`, ps+bac+pb, every level
# in NVM, 16 B keys, 100 B values, 4 MiB memtables and tables, no bloom filter, `dram`
# profile, everything on /dev/shm). Each round fills one database (1 M random records),
# copies it (pool and directory), then reads 200 K random keys from each copy, one with
# `seek_compaction=true`, one with `false` (`--use-existing`), and the same for LevelDB
# 1.23 on /dev/shm (LevelDB-NVM, which has its own seek compaction) as the reference.
# EXTRA (environment): more `mezz bench` options for the `tlsm` runs (fill and reads), e.g.
# `--opt level0_compaction_trigger=8` so that fills leave L0 tables below the trigger.
#   run.sh <mezz binary> <output dir> [rounds]
set -euo pipefail
mezz=$1; out=$2; rounds=${3:-3}
read -r -a extra <<<"${EXTRA:-}"
mkdir -p "$out"
shm=/dev/shm/mezz-seek
small=(--write-buffer-size 4M --cache-size 8M --bloom-bits 0
       --opt target_file_size=4M --opt max_bytes_for_level_base=40M --no-progress)
tlsm=(--engine mezzanine:tlsm --nvm-profile dram --opt nvm_tiering=none --opt nvm_capacity=4G
      --opt nvm_table_method=ps+bac+pb ${extra[@]+"${extra[@]}"})
for r in $(seq 1 "$rounds"); do
  rm -rf "$shm"; mkdir -p "$shm"
  "$mezz" bench "${tlsm[@]}" "${small[@]}" --nvm-dir "$shm/nvm" --db "$shm/db" \
    --num 1000000 --benchmarks fillrandom --json "$out/fill-$r.jsonl" >"$out/fill-$r.txt" 2>&1
  for sc in true false; do
    rm -rf "$shm/nvm-$sc" "$shm/db-$sc"
    cp -a "$shm/nvm" "$shm/nvm-$sc"; cp -a "$shm/db" "$shm/db-$sc"
  done
  for sc in true false; do
    "$mezz" bench "${tlsm[@]}" "${small[@]}" --nvm-dir "$shm/nvm-$sc" --db "$shm/db-$sc" --use-existing \
      --opt seek_compaction=$sc --num 1000000 --reads 200000 --benchmarks readrandom \
      --json "$out/read-$r-$sc.jsonl" >"$out/read-$r-$sc.txt" 2>&1
    rm -rf "$shm/nvm-$sc" "$shm/db-$sc"
  done
  rm -rf "$shm"; mkdir -p "$shm"
  "$mezz" bench --engine leveldb "${small[@]}" --db "$shm/ldb" --num 1000000 --reads 200000 \
    --benchmarks fillrandom,readrandom --json "$out/leveldb-$r.jsonl" >"$out/leveldb-$r.txt" 2>&1
done
rm -rf "$shm"
python3 - "$out" "$rounds" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rec(path, bench):
    for l in open(path):
        d = json.loads(l)
        if d["benchmark"] == bench:
            return d
print("| round | L0 tables after the fill | seek on: µs/read | seek compactions | seek off: µs/read | LevelDB-NVM µs/read |")
print("|---|---|---|---|---|---|")
for r in range(1, rounds + 1):
    f = rec(f"{out}/fill-{r}.jsonl", "fillrandom")
    l0 = f["engine_stats"]["levels"][0]["files"]
    on = rec(f"{out}/read-{r}-true.jsonl", "readrandom")
    off = rec(f"{out}/read-{r}-false.jsonl", "readrandom")
    ldb = rec(f"{out}/leveldb-{r}.jsonl", "readrandom")
    print(f"| {r} | {l0} | {on['micros_per_op']:.2f} | {on['engine_stats']['seek_compactions']} | "
          f"{off['micros_per_op']:.2f} | {ldb['micros_per_op']:.2f} |")
PY
