#!/bin/bash
# One open-loop run (200 K-record YCSB load, 30 s of YCSB-A at 20 K requests/s) under a
# system-wide `perf record` of every context switch with its kernel stack, then the
# client thread's off-CPU time grouped by why it left the CPU (offcpu.py).
#   offcpu.sh ENGINE NAME [mezz bench arguments...]     (BIN= the mezz binary)
# Writes NAME.jsonl, NAME.out and NAME.txt (perf script) in the current directory.
eng=$1; name=$2; shift 2
bin=${BIN:-target/rocksdb-release/release/mezz}
nvm=${NVM_DIR:-/dev/shm/mezz-offcpu}
rm -rf "$nvm"; mkdir -p "$nvm"
perf record -a -g -e sched:sched_switch -o "$name.data" -- "$bin" bench --engine "$eng" \
  --nvm-dir "$nvm" --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress \
  --opt nvm_capacity=160M --opt nvm_memtable_size=64M "$@" --benchmarks ycsb-load,ycsb-a \
  --num 200000 --ops 600000 --rate 20000 --json "$name.jsonl" > "$name.out" 2>&1
grep -E '^ycsb-a' "$name.out" | sed 's/.*MB\/s; //' | cut -c1-80
perf script -i "$name.data" -F comm,tid,time,trace,ip,sym 2>/dev/null > "$name.txt"
rm -rf "$nvm" "$name.data"
python3 "$(dirname "$0")/offcpu.py" "$name.txt"
