#!/bin/bash
# Sweeps for the bounds: $1 = output dir. NVM on a huge-page tmpfs at $NVMFS, SSD dir $SSD.
set -u
out=$1; mkdir -p "$out"
mezz=${MEZZ_BIN:-target/rocksdb-release/release/mezz}
nvm=$NVMFS/sweep-nvm; db=$SSD/db
one() { # label, args...
  local l=$1; shift
  rm -rf "$nvm" "$db"; mkdir -p "$nvm"
  "$mezz" bench --no-progress --json "$out/$l.jsonl" "$@" > "$out/$l.txt" 2>&1 || echo "$l failed" >> "$out/failures.txt"
  grep -E '^(fill|read)' "$out/$l.txt" | sed "s/^/$l: /"
}
tb=(--direct-io)
# 1. NoveLSM write latency against the device's added latency (NoveLSM's full shape).
nov=(--num 2500000 --reads 1000 --value-size 1000 --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom)
one novelsm-leveldb --engine leveldb "${tb[@]}" --db "$db" "${nov[@]}"
for p in optane cxl dram; do
  one novelsm-$p --engine mezzanine:novelsm "${tb[@]}" --nvm-profile $p --nvm-dir "$nvm" --db "$db" \
    --opt nvm_memtable_size=512M --opt nvm_capacity=1536M "${nov[@]}"
done
one novelsm-mezz-leveldb --engine mezzanine:leveldb "${tb[@]}" --db "$db" "${nov[@]}"
# 2. The mezzanine preset's SSD write amplification against its NVM pool (the papers' full
#    4 KiB fill), and with the WAL on NVM.
mz=(--num 1000000 --reads 1000 --value-size 4096 --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom)
for pool in 1G 2G 4G; do
  one wa-pool-$pool --engine mezzanine:mezzanine "${tb[@]}" --nvm-profile optane --nvm-dir "$nvm" --db "$db" \
    --opt nvm_capacity=$pool --opt nvm_memtable_size=128M "${mz[@]}"
done
one wa-pool-1G-nvm-wal --engine mezzanine:mezzanine "${tb[@]}" --nvm-profile optane --nvm-dir "$nvm" --db "$db" \
  --opt nvm_capacity=1G --opt nvm_memtable_size=128M --opt wal_on_nvm=true "${mz[@]}"
rm -rf "$nvm" "$db"
