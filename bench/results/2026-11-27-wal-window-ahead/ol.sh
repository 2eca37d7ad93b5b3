#!/bin/bash
# The suite's open-loop workload (YCSB A, 20 K requests/s, 60 s) with one binary.
# ol.sh BIN ENGINE OUTJSON
bin=$1; eng=$2; out=$3
rm -rf /dev/shm/mezz-ab; mkdir -p /dev/shm/mezz-ab
$bin bench --engine $eng --nvm-dir /dev/shm/mezz-ab --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress --opt nvm_capacity=160M --opt nvm_memtable_size=64M --benchmarks ycsb-load,ycsb-a --num 200000 --ops 1200000 --rate 20000 --json $out 2>&1 | grep -E "ycsb-a" | head -3
rm -rf /dev/shm/mezz-ab
