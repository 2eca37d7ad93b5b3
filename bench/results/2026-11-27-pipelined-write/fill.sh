#!/bin/bash
# fillrandom of 100-byte values, the suite's fill-100 options, THREADS writer threads.
# fill.sh BIN ENGINE OUTJSON THREADS NUM
bin=$1; eng=$2; out=$3; th=$4; num=$5
rm -rf /dev/shm/mezz-ab; mkdir -p /dev/shm/mezz-ab
$bin bench --engine $eng --nvm-dir /dev/shm/mezz-ab --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress --opt nvm_capacity=160M --opt nvm_memtable_size=64M --benchmarks fillrandom --num $num --value-size 100 --threads $th --json $out 2>&1 | grep -i "fillrandom" | head -1 | cut -c1-150
rm -rf /dev/shm/mezz-ab
