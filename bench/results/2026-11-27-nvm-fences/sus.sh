#!/bin/bash
# The suite's fill-sustained (12.5 M x 100 B fillrandom, one thread) on one engine.
# sus.sh BIN ENGINE OUTJSON [THREADS]
bin=$1; eng=$2; out=$3; th=${4:-1}
rm -rf /dev/shm/mezz-ab; mkdir -p /dev/shm/mezz-ab
$bin bench --engine $eng --nvm-dir /dev/shm/mezz-ab --write-buffer-size 64M --cache-size 8M --bloom-bits 10 --no-progress --opt nvm_capacity=160M --opt nvm_memtable_size=64M --benchmarks fillrandom --num 12500000 --value-size 100 --threads $th --json $out 2>&1 | grep -i "^fillrandom" | head -1 | cut -c1-150
rm -rf /dev/shm/mezz-ab
