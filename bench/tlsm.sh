#!/usr/bin/env bash
# TLSM (preset tlsm), reproduced at this machine's scale in one run. Every configuration
# runs in the same invocation, on the same machine, with the emulated NVM tier on /dev/shm
# (a memory file system: NVM without its extra latency) and the SSD tier in a directory on
# the disk (`$SSD_DIR`, default a temporary directory under /tmp).
#
#   methods-<n>.jsonl   Fig. 5(a,b) and Fig. 7(a,b): fillrandom then readrandom of n
#                       entries (16 B keys, 100 B values, 4 MiB memtable as in the paper)
#                       for tlsm with each method (ps, ps+bac, ps+bac+pb; every level in
#                       NVM: nvm_tiering=none), `leveldb-nvm` (the leveldb preset with its
#                       whole database on the NVM file system), `leveldb-nvm prefix` (the
#                       same with LevelDB's prefix-compressed blocks instead of the unified
#                       KeySet format) and `leveldb` (the preset on
#                       the disk). tlsm and leveldb-nvm keep their database directories (WAL,
#                       manifest) on /dev/shm too. Stall seconds and compaction bytes come
#                       from the same runs.
#   tiering-<n>.jsonl   Fig. 5(c,d): tlsm (ps+bac+pb) under leveled:2, lru (3/4 of the pool)
#                       and none, with a pool of $POOL bytes, as the data grows past it.
#   values-<v>.jsonl    Fig. 5(e-h): value sizes 100 B-1600 B (4 MiB memtable) and 1-16 KiB
#                       (64 MiB memtable), same total bytes: tlsm against leveldb-nvm.
#   ycsb.jsonl          YCSB A-F after a load: tlsm, leveldb-nvm, leveldb.
#   reopen.jsonl        reopen time of a filled database (tlsm and leveldb-nvm).
#   summary.md, *.svg   bench/tlsm_summary.py: the tables, the targets, the plots.
#   failures.txt        runs that ended in an error (e.g. "NVM is full" under tiering none).
# Usage: bench/tlsm.sh [--quick | --scale N] [--out DIR]   (--quick: a tenth of the data)
set -euo pipefail
cd "$(dirname "$0")/.."

out="bench/results/$(date +%F)-tlsm"
scale=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) scale=10; shift ;;
    --scale) scale="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
rm -f "$out"/*.jsonl "$out"/*.txt "$out"/*.svg "$out"/summary.md

cargo build --release -q -p mezz
mezz=target/release/mezz
ssd=${SSD_DIR:-$(mktemp -d /tmp/mezz-tlsm-ssd.XXXXXX)}
nvm=/dev/shm/mezz-tlsm-bench
trap 'rm -rf "$ssd" "$nvm" /dev/shm/mezz-tlsm-db' EXIT
pool=${POOL:-$((256 << 20))}

# One run: $1 = label, $2 = json file, then mezz bench arguments. The database directory
# and the pool are fresh for every run.
run() {
  local label=$1 json=$2; shift 2
  rm -rf "$ssd/db" "$nvm" /dev/shm/mezz-tlsm-db
  echo "== $label" | tee -a "${json%.jsonl}.txt"
  local before; before=$(wc -l <"${json%.jsonl}.txt")
  if ! "$mezz" bench --engine "mezzanine" --no-progress --json "$json" "$@" \
    >>"${json%.jsonl}.txt" 2>&1; then
    echo "$label: $(grep '^mezz:' "${json%.jsonl}.txt" | tail -1)" | tee -a "$out/failures.txt"
  fi
  tail -n +$((before + 1)) "${json%.jsonl}.txt" | grep -E '^(fill|read|ycsb|reopen)' || true
}

small=(--opt write_buffer_size=4M --opt target_file_size=4M --opt max_bytes_for_level_base=40M)
# With every level in NVM, the database directory (WAL, manifest) is on the NVM file system
# too, as leveldb-nvm's is: the two differ only in their tables.
tlsm_all_nvm=(--preset tlsm --opt nvm_tiering=none --opt nvm_capacity=3G --nvm-dir "$nvm" --db /dev/shm/mezz-tlsm-db)
ldb_nvm=(--preset leveldb --db /dev/shm/mezz-tlsm-db)
ldb=(--preset leveldb --db "$ssd/db")

# Fig. 5(a,b), Fig. 7(a,b).
for n in $((1000000 / scale)) $((2000000 / scale)) $((4000000 / scale)); do
  f="$out/methods-$n.jsonl"
  for m in ps ps+bac ps+bac+pb; do
    run "tlsm $m n=$n" "$f" "${tlsm_all_nvm[@]}" --opt nvm_table_method=$m "${small[@]}" \
      --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom
  done
  run "leveldb-nvm n=$n" "$f" "${ldb_nvm[@]}" "${small[@]}" --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom
  run "leveldb-nvm prefix n=$n" "$f" "${ldb_nvm[@]}" --opt block_format=prefix "${small[@]}" --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom
  run "leveldb n=$n" "$f" "${ldb[@]}" "${small[@]}" --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom
done

# Fig. 5(c,d): the pool holds about 1.1 M entries of 116 B with their indexes.
for n in $((1000000 / scale)) $((2000000 / scale)) $((4000000 / scale)); do
  f="$out/tiering-$n.jsonl"
  for t in leveled:2 lru none; do
    run "tlsm tiering=$t n=$n" "$f" --preset tlsm --opt nvm_tiering=$t --opt nvm_capacity=$((pool / scale)) \
      --nvm-dir "$nvm" --db "$ssd/db" "${small[@]}" --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom
  done
done

# Fig. 5(e-h): the same bytes of data at every value size.
bytes=$((256000000 / scale))
for v in 100 400 1600 1024 4096 16384; do
  wb=4M; [ $v -ge 1024 ] && [ $v -ne 1600 ] && wb=64M
  n=$((bytes / (v + 16)))
  sizes=(--opt write_buffer_size=$wb --opt target_file_size=$wb --opt max_bytes_for_level_base=40M)
  f="$out/values-$v.jsonl"
  run "tlsm value=$v" "$f" "${tlsm_all_nvm[@]}" "${sizes[@]}" --value-size $v --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom
  run "leveldb-nvm value=$v" "$f" "${ldb_nvm[@]}" "${sizes[@]}" --value-size $v --num $n --reads $((n / 5)) --benchmarks fillrandom,readrandom
done

# YCSB A-F (1 KiB records).
records=$((200000 / scale)); ops=$((100000 / scale))
ycsb=(--benchmarks ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f --num $records --ops $ops "${small[@]}")
run "tlsm ycsb" "$out/ycsb.jsonl" "${tlsm_all_nvm[@]}" "${ycsb[@]}"
run "leveldb-nvm ycsb" "$out/ycsb.jsonl" "${ldb_nvm[@]}" "${ycsb[@]}"
run "leveldb ycsb" "$out/ycsb.jsonl" "${ldb[@]}" "${ycsb[@]}"

# Reopen: recovery maps NVM tables; it reads no entry of them. Timed with and without
# pre-faulting the pool (nvm_prefault touches every page of it when opening).
n=$((2000000 / scale))
run "tlsm reopen" "$out/reopen.jsonl" "${tlsm_all_nvm[@]}" "${small[@]}" --num $n --benchmarks fillrandom,reopen
run "tlsm reopen, prefault" "$out/reopen.jsonl" "${tlsm_all_nvm[@]}" --opt nvm_prefault=true "${small[@]}" --num $n --benchmarks fillrandom,reopen
run "leveldb-nvm reopen" "$out/reopen.jsonl" "${ldb_nvm[@]}" "${small[@]}" --num $n --benchmarks fillrandom,reopen

python3 bench/tlsm_summary.py "$out" > "$out/summary.md"
cat "$out/summary.md"
