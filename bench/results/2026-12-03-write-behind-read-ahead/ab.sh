#!/usr/bin/env bash
# A/B of the write-behind: BASE and NEW binaries, the papers' MatrixKV 4 KiB fill (and the
# leveldb preset's), alternating, ROUNDS rounds. Usage: ab.sh BASE NEW NVM SSD OUT ROUNDS ENGINES
set -euo pipefail
base=$1 new=$2 nvm=$3 ssd=$4 out=$5 rounds=$6 engines=$7
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for e in ${engines//,/ }; do
    for v in base new; do
      bin=$base; [ $v = new ] && bin=$new
      rm -rf "$ssd"/db "$nvm"/nvm
      extra=()
      [ "$e" = matrixkv ] && extra=(--opt matrix_bytes=256M --opt max_bytes_for_level_base=256M --opt nvm_capacity=1G)
      "$bin" bench --engine mezzanine:$e --direct-io --nvm-profile optane --no-progress --nvm-dir "$nvm"/nvm \
        --db "$ssd"/db "${extra[@]}" --num 1000000 --value-size 4096 --write-buffer-size 64M --cache-size 8M \
        --benchmarks fillrandom --json "$out/$e-$v.jsonl" 2>&1 | grep fillrandom | sed "s/^/$e $v r$r: /"
    done
  done
done
