#!/bin/bash
# One database filled once, then read by each binary in turn (same table layout for both).
# usage: run.sh PROFILE BIN_A BIN_B
A="--engine mezzanine:tlsm --nvm-profile $1 --no-progress --opt nvm_tiering=none --opt nvm_capacity=4G --nvm-dir ${SHM:-/dev/shm}/pf-nvm --db ${SHM:-/dev/shm}/pf-db --opt nvm_table_method=ps+bac+pb --write-buffer-size 4M --cache-size 8M --bloom-bits 0 --opt target_file_size=4M --opt max_bytes_for_level_base=40M --num 1000000"
rm -rf ${SHM:-/dev/shm}/pf-*
$2 bench $A --benchmarks fillrandom,stats 2>&1 | grep -E "^fillrandom|^L[0-2] " | cut -c1-100
for i in 1 2 3; do for b in $2 $3; do echo "-- $(basename $b)"; $b bench $A --use-existing --reads 200000 --benchmarks readrandom 2>&1 | grep -o "readrandom.*p99 [0-9.]*"; done; done
rm -rf ${SHM:-/dev/shm}/pf-*
