#!/usr/bin/env bash
# MatrixKV (preset matrixkv) against RocksDB-L0-NVM, RocksDB, LevelDB-NVM, NoveLSM and the
# leveldb preset, reproduced at this machine's scale in one run. Every engine runs in the
# same invocation with the same DRAM budget (64 MiB memtables, 8 MiB block cache, 10 bloom
# bits, no compression, no sync, 16-byte keys, one client thread) and, for the engines with
# an NVM L0, the same NVM budget of 512 MiB:
#   mezzanine:matrixkv  matrix container of 512 MiB (matrix_bytes, the preset's) in a 1 GiB
#                       pool, L1 as large as the container, WAL in NVM;
#   rocksdb-l0-nvm      WAL and the db_paths entry holding L0 (target 256 MiB, fixed by
#                       the adapter) in NVM; L1 and deeper on the SSD;
#   mezzanine:novelsm   two NVM memtables of 256 MiB (nvm_memtable_size) in a 1 GiB pool;
#   leveldb-nvm         LevelDB 1.23 with every file in NVM (the whole data set: an upper
#                       bound, not the same budget);
#   rocksdb, mezzanine:leveldb   everything on the SSD.
# NVM is emulated on a memory file system (--nvm-dir, default /dev/shm/mezz-matrixkv: no
# extra latency, msync persistence, which runs as cache-line flushes there); the SSD side is
# a directory on the disk ($SSD_DIR, default a new temporary directory under /tmp).
#
#   fill.jsonl       Fig. 10(a) at 4 KiB, Fig. 12, Fig. 13: fillrandom of FILL entries of
#                    4 KiB (default 1 M, 4.1 GB: 8x the NVM budget, 30x the DRAM budget);
#                    per-second throughput, stall seconds, write amplification. matrixkv
#                    also runs with 4 MiB tables (columns of 20-40 MiB instead of 320-640),
#                    and, outside the common NVM budget, with a 2 GiB container.
#   values-<v>.jsonl Fig. 10(a): fillrandom of SWEEP bytes (default 1 GiB) of entries with
#                    values of 64 B, 256 B, 1 KiB, 4 KiB and 16 KiB.
#   ycsb.jsonl       Table 2: YCSB load of RECORDS records of 4 KiB (4 fields of 1 KiB;
#                    default 500 K, 2 GB), then YCSB A (50 % reads, 50 % updates, zipfian),
#                    both open loop at 20 K requests/s (the A phase: OPS requests, default
#                    1 M, 50 s); latency from each request's intended start.
#   fig16.jsonl      Fig. 16: matrixkv with a narrow L1 (max_bytes_for_level_base = 1/8 of
#                    the container, 64 MiB) and the wide L1 of the preset (512 MiB), the same
#                    fill as fill.jsonl.
#   hints.jsonl      cross-row hints: matrixkv with matrix_hints=true and =false, 8 MiB
#                    memtables (so about 50 rows) and matrix_switch_fraction=0.95, so that a
#                    fill of 100 K entries of 4 KiB (0.78 of the container) stays in rows;
#                    then 100 K random reads and 100 K random seeks. The row counters (rows
#                    searched, rows narrowed by hints, key comparisons; `seek_` ones for
#                    seeks) are in engine_stats.matrix of the JSON.
#   *.txt            each run's output (the hint runs end with the engine's statistics).
#   failures.txt     runs that ended in an error.
#   machine.txt      load average and the busiest processes before and after the run.
#   summary.md, *.svg  bench/matrixkv_summary.py: the tables, the targets, the plots.
#
# Usage: bench/matrixkv.sh [--quick | --large] [--out DIR] [--nvm-dir DIR] [--engines LIST]
#                          [--experiments LIST]   (default fill,ycsb,fig16,hints,values)
#   default  about 30 minutes on 2 vCPUs;
#   --quick  a tenth of every size (the NVM L0 does not fill: checks that it all runs);
#   --large  the paper's shape at 4 KiB: a fill of 20 GB (5 M entries), a load of 5 M
#            records, SWEEP 4 GiB per value size (many hours; leveldb-nvm needs the whole
#            data set in memory on the NVM file system and is skipped when it does not fit).
#            The NVM budget stays 512 MiB (2.5 % of the data; the paper's was 10 %), since
#            the RocksDB adapter fixes its NVM path at that size.
# The binary: $MEZZ_BIN if set, else target/rocksdb-release/release/mezz (the release RocksDB
# build, see docs/comparators.md) if present, else `scripts/build-comparators.sh release`
# (15-30 minutes), else `scripts/build-comparators.sh debian` (Debian's RocksDB, built with
# assertions on: its numbers understate RocksDB). Every JSON line records the library that ran
# (engine_version). Engines not compiled in are skipped with a note.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=default
out=""
nvm=/dev/shm/mezz-matrixkv
engines="mezzanine:matrixkv,rocksdb-l0-nvm,rocksdb,leveldb-nvm,mezzanine:novelsm,mezzanine:leveldb"
experiments="fill,ycsb,fig16,hints,values"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --large) mode=large ;;
    --out) out="$2"; shift ;;
    --nvm-dir) nvm="$2"; shift ;;
    --engines) engines="$2"; shift ;;
    --experiments) experiments="$2"; shift ;;
    -h|--help) sed -n '2,50p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--quick | --large] [--out DIR] [--nvm-dir DIR] [--engines LIST] [--experiments LIST]" >&2; exit 2 ;;
  esac
  shift
done

# Sizes. hint_n fills 0.78 of the 512 MiB container with 4 KiB values whatever the mode
# (a tenth in --quick).
case "$mode" in
  quick)   fill=100000;  sweep=$(((1 << 30) / 10)); records=50000;   ops=100000;  hint_n=10000 ;;
  default) fill=1000000; sweep=$((1 << 30));      records=500000;  ops=1000000; hint_n=100000 ;;
  large)   fill=5000000; sweep=$((4 << 30));      records=5000000; ops=1000000; hint_n=100000 ;;
esac
rate=20000
suffix="-matrixkv"
[ "$mode" != default ] && suffix="-matrixkv-$mode"
out="${out:-bench/results/$(date +%F)$suffix}"
mkdir -p "$out"
rm -f "$out"/*.jsonl "$out"/*.txt "$out"/*.svg "$out"/summary.md

# The binary.
if [ -n "${MEZZ_BIN:-}" ]; then
  bin="$MEZZ_BIN"
elif [ -x target/rocksdb-release/release/mezz ]; then
  bin=target/rocksdb-release/release/mezz
elif scripts/build-comparators.sh release >/dev/null 2>&1; then
  bin=target/rocksdb-release/release/mezz
elif scripts/build-comparators.sh debian >/dev/null 2>&1; then
  echo "bench/matrixkv.sh: the release RocksDB build failed; using Debian's RocksDB" \
       "(assertions on: not a fair RocksDB)" >&2
  bin=target/release/mezz
else
  echo "bench/matrixkv.sh: comparators unavailable (scripts/setup.sh --comparators);" \
       "running Mezzanine alone" >&2
  cargo build --release -q -p mezz
  bin=target/release/mezz
fi
compiled=$("$bin" bench --list-engines 2>/dev/null || echo mezzanine)
run_engines=()
for e in ${engines//,/ }; do
  if echo ",$compiled," | grep -q ",${e%%:*},"; then
    run_engines+=("$e")
  else
    echo "$e: not compiled into $bin: skipped" | tee -a "$out/failures.txt" >&2
  fi
done

if [ -n "${SSD_DIR:-}" ]; then
  ssd=$SSD_DIR
  trap 'rm -rf "$ssd/db" "$nvm"' EXIT
else
  ssd=$(mktemp -d /tmp/mezz-matrixkv-ssd.XXXXXX)
  trap 'rm -rf "$ssd" "$nvm"' EXIT
fi

machine() {
  { echo "== $1 ($(date -u +%FT%TZ))"; uptime; ps -eo pcpu,comm --sort=-pcpu | head -8; } >>"$out/machine.txt"
}
machine "before"
echo "bench/matrixkv.sh: $mode run of ${run_engines[*]} with $bin ($("$bin" --version 2>/dev/null || true)), results in $out"

common=(--cache-size 8M --bloom-bits 10 --key-size 16 --no-progress)

# One run of one engine on fresh directories: $1 = engine, $2 = json file, then mezz bench
# arguments. The NVM directory is given only to the engines with an NVM side. The memtable
# size is $wb (64M unless a caller sets it).
run() {
  local engine=$1 json=$2; shift 2
  local log="${json%.jsonl}.txt"
  rm -rf "$ssd/db" "$nvm"
  mkdir -p "$nvm"
  local nvm_args=()
  case "$engine" in
    mezzanine:matrixkv|mezzanine:novelsm|mezzanine:tlsm|*-nvm) nvm_args=(--nvm-dir "$nvm") ;;
  esac
  echo "== $engine $*" | tee -a "$log"
  local before; before=$(wc -l <"$log")
  if ! "$bin" bench --engine "$engine" --db "$ssd/db" "${nvm_args[@]}" "${common[@]}" \
      --write-buffer-size "${wb:-64M}" --json "$json" "$@" >>"$log" 2>&1; then
    echo "$engine $*: $(grep -E '^(mezz|Error|error)' "$log" | tail -1)" | tee -a "$out/failures.txt"
  fi
  tail -n +$((before + 1)) "$log" | grep -E '^(fill|read|ycsb)' || true
  rm -rf "$ssd/db" "$nvm"
}

# leveldb-nvm keeps the whole data set on the NVM file system: skip it when that does not fit.
fits() { # $1 = engine, $2 = bytes of data
  [ "$1" != leveldb-nvm ] && return 0
  mkdir -p "$nvm"
  local avail; avail=$(df -B1 --output=avail "$nvm" | tail -1)
  if [ "$avail" -lt $(($2 * 3 / 2)) ]; then
    echo "leveldb-nvm: $2 bytes of data do not fit in $nvm ($avail bytes free): skipped" | tee -a "$out/failures.txt"
    return 1
  fi
}

want() { echo ",$experiments," | grep -q ",$1,"; }

# Fig. 10(a) at 4 KiB, Fig. 12, Fig. 13: the long random fill. matrixkv runs twice: as the
# preset is (64 MiB tables, so a column holds 320-640 MiB: most of a 512 MiB container and
# its L1), and with 4 MiB tables, which gives columns of 20-40 MiB, the paper's ratio of
# column to container (320-640 MB columns in an 8 GB container).
if want fill; then
for e in "${run_engines[@]}"; do
  fits "$e" $((fill * 4112)) || continue
  run "$e" "$out/fill.jsonl" --benchmarks fillrandom --num "$fill" --value-size 4096
  if [ "$e" = mezzanine:matrixkv ]; then
    run "$e" "$out/fill.jsonl" --benchmarks fillrandom --num "$fill" --value-size 4096 \
      --opt target_file_size=4M
    # Outside the common NVM budget, for reference: a container of 32 rows instead of 8.
    run "$e" "$out/fill.jsonl" --benchmarks fillrandom --num "$fill" --value-size 4096 \
      --opt matrix_bytes=2G --opt nvm_capacity=3G --opt max_bytes_for_level_base=2G
  fi
done
fi

# Table 2: open-loop YCSB A at 20 K requests/s after a load (both at that rate).
if want ycsb; then
for e in "${run_engines[@]}"; do
  fits "$e" $((records * 4120)) || continue
  run "$e" "$out/ycsb.jsonl" --benchmarks ycsb-load,ycsb-a --num "$records" --ops "$ops" \
    --ycsb-fields 4 --ycsb-field-size 1024 --rate "$rate"
done
fi

if printf '%s\n' "${run_engines[@]}" | grep -qx mezzanine:matrixkv; then
  # Fig. 16: narrow against wide L1 (the container is 512 MiB).
  if want fig16; then
    for base in 64M 512M; do
      run mezzanine:matrixkv "$out/fig16.jsonl" --benchmarks fillrandom --num "$fill" \
        --value-size 4096 --opt max_bytes_for_level_base=$base
    done
  fi
  # Cross-row hints: rows accumulate (no compactor before 0.95 of the container), then reads.
  if want hints; then
    for h in true false; do
      wb=8M run mezzanine:matrixkv "$out/hints.jsonl" --benchmarks fillrandom,readrandom,seekrandom,stats \
        --num "$hint_n" --reads "$hint_n" --value-size 4096 \
        --opt matrix_switch_fraction=0.95 --opt matrix_hints=$h
    done
  fi
fi

# Fig. 10(a): the same bytes at every value size.
if want values; then
  for v in 64 256 1024 4096 16384; do
    n=$((sweep / (16 + v)))
    for e in "${run_engines[@]}"; do
      fits "$e" "$sweep" || continue
      run "$e" "$out/values-$v.jsonl" --benchmarks fillrandom --num "$n" --value-size "$v"
    done
  done
fi

machine "after"
python3 bench/matrixkv_summary.py "$out" > "$out/summary.md"
cat "$out/summary.md"
