#!/bin/bash
# usage: ab2.sh ROUNDS -- bench args ; A = large_entry 0, B = 2K ; same binary
rounds=$1; shift
B=${MEZZ_BIN:-target/release/mezz}
for r in $(seq 1 $rounds); do
 for v in off on; do
  le=0; [ $v = on ] && le=2K
  rm -rf ${NVM:?a huge-page tmpfs directory}/* ${SSD:?a directory on the SSD}/*
  out=$($B bench --nvm-dir ${NVM:?a huge-page tmpfs directory}/nvm --direct-io --nvm-profile optane --no-progress --db ${SSD:?a directory on the SSD}/db --opt nvm_memtable_large_entry=$le "$@" 2>&1)
  echo "$out" | grep -E "^[a-z0-9-]+ +: " | awk -v v=$v -v r=$r '{for(i=1;i<=NF;i++) if($i=="ops/sec;") ops=$(i-1); wa="";for(i=1;i<=NF;i++) if($i=="WA") wa=$(i+1); printf "%s r%s %-12s %10s WA %s\n", v, r, $1, ops, wa}'
  echo "$v r$r moves $(grep -c TierMove ${SSD:?a directory on the SSD}/db/LOG) nvm-memtables $(grep -c 'NVM memtable\|nvm memtable' ${SSD:?a directory on the SSD}/db/LOG)"
 done
done
