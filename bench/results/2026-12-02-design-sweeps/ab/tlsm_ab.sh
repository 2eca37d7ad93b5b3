#!/bin/bash
# $1 label $2 binary $3 max_open_files $4 num ; output line
l=$1; b=$2; mof=$3; n=${4:-4000000}
rm -rf <nvmfs>/t; mkdir -p <nvmfs>/t
$b bench --no-progress --json <out>/$l-mof$mof-$n.jsonl --engine mezzanine:tlsm --nvm-profile dram --opt nvm_tiering=none --opt nvm_capacity=${CAP:-4G} --opt nvm_table_method=ps+bac+pb --opt max_open_files=$mof --nvm-dir <nvmfs>/t/nvm --db <nvmfs>/t/db --write-buffer-size 4M --cache-size 8M --bloom-bits 0 --opt target_file_size=4M --opt max_bytes_for_level_base=40M --num $n --reads $((n/5)) --benchmarks fillrandom,readrandom 2>&1 | grep -E "^(fill|read)" | sed "s/^/$l mof=$mof n=$n /" | cut -c1-150
