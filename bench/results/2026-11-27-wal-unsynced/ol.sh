#!/bin/bash
# One open-loop run (200 K-record YCSB load, then 60 s of YCSB-A at 20 K requests/s, the
# suite's open-loop workload) with the disk's own counters around it.
#   ol.sh BIN OUT.jsonl [mezz bench arguments...]      ENGINE=rocksdb ol.sh ...
# Prints the YCSB-A latency line and the reads and writes /proc/diskstats counted for
# DISK (default vda) during the run: bytes the device really wrote, not bytes handed to
# the kernel.
bin=$1; out=$2; shift 2
disk=${DISK:-vda}
C="--nvm-dir /dev/shm/mezz-ol --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress --opt nvm_capacity=160M --opt nvm_memtable_size=64M"
d0=$(awk -v d="$disk" '$3==d{print $4, $6, $7, $8, $10, $11}' /proc/diskstats)
line=$("$bin" bench --engine "${ENGINE:-mezzanine:leveldb}" $C "$@" --benchmarks ycsb-load,ycsb-a \
  --num 200000 --ops 1200000 --rate 20000 --json "$out" 2>&1 | grep -E '^ycsb-a' | sed 's/.*MB\/s; //' | cut -c1-60)
d1=$(awk -v d="$disk" '$3==d{print $4, $6, $7, $8, $10, $11}' /proc/diskstats)
python3 - "$out" "$line" "$d0" "$d1" <<'PY'
import sys
out, line, a, b = sys.argv[1:5]
d = [y - x for x, y in zip(map(int, a.split()), map(int, b.split()))]
print(f"{out}: {line} | disk reads {d[0]} ({d[1]*512/1e6:.0f} MB, {d[2]} ms) "
      f"writes {d[3]} ({d[4]*512/1e6:.0f} MB, {d[5]} ms)")
PY
