#!/bin/bash
# The suite's fill-4k workload with one binary; results appended to OUTJSON.
# usage: fill4k.sh BIN ENGINE OUTJSON
bin=$1; eng=$2; out=$3
rm -rf /dev/shm/mezz-ab; mkdir -p /dev/shm/mezz-ab
$bin bench --engine $eng --nvm-dir /dev/shm/mezz-ab --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress --opt nvm_capacity=160M --opt nvm_memtable_size=64M --benchmarks fillrandom --num 250000 --value-size 4096 --json $out "${@:4}" 2>&1 | grep -i "fillrandom" | head -2
rm -rf /dev/shm/mezz-ab
