#!/usr/bin/env bash
# The NVM-tier benchmarks of docs/benchmarks.md: NoveLSM (`novelsm` preset) in every
# persistence mode against the `leveldb` preset with the same DRAM budget (64 MiB memtable,
# 8 MiB block cache), on a fresh temporary database each, NVM emulated on /dev/shm.
#   - fillrandom + readrandom + reopen (recovery time), 16-byte keys, 100-byte values;
#   - the same data left in memory for both designs (LevelDB with a 256 MiB memtable), to
#     compare recovery: WAL replay against mapping the NVM memtable back;
#   - parallel reads on and off; the immutable NVM memtable; Optane-like latency emulation;
#   - synchronous writes: SSD WAL against the WAL on NVM.
# Results (JSON lines) go to bench/results/<date>/nvm-<configuration>.jsonl; a table is
# printed at the end (bench/summarize.py).
#   bench/nvm.sh [NUM]      (default 2000000 keys; MEZZ_BIN=path uses that mezz binary)
set -euo pipefail
cd "$(dirname "$0")/.."
num="${1:-2000000}"
out="bench/results/$(date -u +%Y-%m-%d)"
mkdir -p "$out"
if [ -n "${MEZZ_BIN:-}" ]; then
  bin="$MEZZ_BIN"
else
  cargo build --release -p mezz
  bin=target/release/mezz
fi
nvm=/dev/shm/mezz-nvm-bench
rm -rf "$nvm"
mkdir -p "$nvm"

run() { # label, then mezz bench arguments
  local label="$1"; shift
  rm -f "$out/nvm-$label.jsonl"
  echo "== $label"
  "$bin" bench --no-progress --nvm-dir "$nvm" --json "$out/nvm-$label.jsonl" "$@" \
    | grep -E '^(fillrandom|readrandom|reopen|fillsync) '
}

base=(--benchmarks fillrandom,readrandom,reopen --num "$num" --reads 1000000)
run leveldb --preset leveldb "${base[@]}"
for mode in msync eadr volatile; do
  run "novelsm-$mode" --preset novelsm --opt "nvm_persistence=$mode" "${base[@]}"
done
run novelsm-adr --preset novelsm --opt nvm_persistence=adr --opt nvm_emulate_adr=true "${base[@]}"
run novelsm-immutable --preset novelsm --opt nvm_memtable=immutable "${base[@]}"
run novelsm-parallel-reads --preset novelsm --opt parallel_reads=true "${base[@]}"
# Optane-like media (DESIGN §4): ~300 ns per line read, ~100 ns per line written, 2 GB/s.
run novelsm-adr-optane-like --preset novelsm --opt nvm_persistence=adr \
  --opt nvm_emulate_adr=true --opt nvm_read_latency_ns=300 --opt nvm_write_latency_ns=100 \
  --opt nvm_persist_bandwidth=2G "${base[@]}"

# Recovery of the same in-memory data: 1.5 M entries (~170 MB of keys and values).
rec=(--benchmarks fillrandom,reopen --num 1500000)
run recovery-leveldb-256m --preset leveldb --opt write_buffer_size=256M "${rec[@]}"
run recovery-novelsm --preset novelsm "${rec[@]}"

# Synchronous writes (fillsync: num / 100 writes, each durable before it returns).
sync=(--benchmarks fillsync --num "$num")
run sync-wal-ssd --preset leveldb "${sync[@]}"
run sync-wal-nvm-msync --preset leveldb --opt wal_on_nvm=true "${sync[@]}"
run sync-wal-nvm-adr --preset leveldb --opt wal_on_nvm=true --opt nvm_persistence=adr \
  --opt nvm_emulate_adr=true "${sync[@]}"
run sync-novelsm-nvm-memtable --preset novelsm --opt write_buffer_size=64K "${sync[@]}"

rm -rf "$nvm"
python3 bench/summarize.py "$out"/nvm-*.jsonl
