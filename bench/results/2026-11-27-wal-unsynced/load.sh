#!/bin/bash
# Bytes the disk wrote during a 200 K-record YCSB load (200 MB of 1 KB records), and
# during a sync right after it.   load.sh BIN [mezz bench arguments...]
bin=$1; shift
disk=${DISK:-vda}
sync; sleep 2
w() { awk -v d="$disk" '$3==d{print $10}' /proc/diskstats; }
d0=$(w)
"$bin" bench --engine "${ENGINE:-mezzanine:leveldb}" --write-buffer-size 64M --cache-size 8M \
  --bloom-bits 10 --no-progress --nvm-dir /dev/shm/mezz-ol --opt nvm_capacity=160M \
  --opt nvm_memtable_size=64M "$@" --benchmarks ycsb-load --num 200000 --rate 20000 > /dev/null 2>&1
d1=$(w); sync; sleep 1; d2=$(w)
echo "disk written during the run $(( (d1-d0)*512/1000000 )) MB, by a sync after it $(( (d2-d1)*512/1000000 )) MB"
