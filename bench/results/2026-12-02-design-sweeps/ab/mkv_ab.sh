#!/bin/bash
l=$1; b=$2; bud=${3:-2048}
rm -rf <nvmfs>/m <ssd>/db; mkdir -p <nvmfs>/m
$b bench --no-progress --json <out>/mkv-$l-$bud.jsonl --engine mezzanine:matrixkv --direct-io --nvm-profile optane --nvm-dir <nvmfs>/m --db <ssd>/db --opt matrix_bytes=${bud}M --opt max_bytes_for_level_base=${bud}M --opt nvm_capacity=$((bud*2))M --num 1000000 --value-size 4096 --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom 2>&1 | grep -E "^fill" | sed "s/^/$l $bud /" | cut -c1-190
