#!/bin/bash
# Sweeps for the bounds of the TLSM and MatrixKV targets: $1 = output dir, then the sections
# to run (default: tlsm-size tlsm-values matrixkv-budget matrixkv-rows matrixkv-l1). NVM files on a huge-page tmpfs
# at $NVMFS (as bench/papers mounts one), the SSD side in $SSD (a directory on the disk).
# Every point is one `mezz bench` run with a fresh database and pool; the points run one
# after the other, so each pair of engines at a point shares the machine's state.
# TLSM_SIZES overrides the record counts of tlsm-size.
set -u
out=$1; shift
sections=${*:-tlsm-size tlsm-values matrixkv-budget matrixkv-rows matrixkv-l1}
mkdir -p "$out"
mezz=${MEZZ_BIN:-target/rocksdb-release/release/mezz}
nvm=$NVMFS/sweep-nvm; shmdb=$NVMFS/sweep-db; db=$SSD/db
{ "$mezz" bench --list-engines; git rev-parse HEAD 2>/dev/null; uptime; nproc; free -g | head -2; } > "$out/machine.txt"
one() { # label, args...
  local l=$1; shift
  rm -rf "$nvm" "$shmdb" "$db"; mkdir -p "$nvm"
  "$mezz" bench --no-progress --json "$out/$l.jsonl" "$@" > "$out/$l.txt" 2>&1 || echo "$l failed" >> "$out/failures.txt"
  grep -E '^(fill|read)' "$out/$l.txt" | sed "s/^/$l: /"
}
for s in $sections; do
  case $s in
  tlsm-size)
    # TLSM's section of bench/papers (16 B keys, 100 B values, 4 MiB memtables and tables,
    # 40 MiB L1, no filter, 8 MiB cache, every file on the NVM file system) at its full
    # shape (4 M records) and larger, up to the paper's largest (8 GB: 64 M records of
    # 116 bytes = 7.4 GB). `tlsm` with the dram profile (the comparator's NVM files cost
    # nothing extra either); reads: a fifth of the records, at most 2 M.
    for n in ${TLSM_SIZES:-4000000 16000000 64000000}; do
      r=$((n / 5)); [ $r -gt 2000000 ] && r=2000000
      cap=$(( (n / 1000000) * 220 / 1000 + 4 ))G
      small=(--write-buffer-size 4M --cache-size 8M --bloom-bits 0 --opt target_file_size=4M
             --opt max_bytes_for_level_base=40M --num $n --reads $r --benchmarks fillrandom,readrandom)
      one tlsm-$n --engine mezzanine:tlsm --nvm-profile dram --opt nvm_tiering=none --opt nvm_capacity=$cap \
        --opt nvm_table_method=ps+bac+pb --nvm-dir "$nvm" --db "$shmdb" "${small[@]}"
      one leveldb-nvm-$n --engine leveldb --db "$shmdb" "${small[@]}"
    done ;;
  tlsm-values)
    # The same shape at the full size's bytes (4 M records of 116 bytes: 464 MB) with
    # larger values, as the paper's Fig. 5(e)/(f) (100 B to 1,600 B, 4 MiB memtables).
    for v in 100 400 1600; do
      n=$((464000000 / (16 + v)))
      small=(--write-buffer-size 4M --cache-size 8M --bloom-bits 0 --opt target_file_size=4M
             --opt max_bytes_for_level_base=40M --value-size $v --num $n --reads $((n / 5))
             --benchmarks fillrandom,readrandom)
      one tlsm-v$v --engine mezzanine:tlsm --nvm-profile dram --opt nvm_tiering=none --opt nvm_capacity=4G \
        --opt nvm_table_method=ps+bac+pb --nvm-dir "$nvm" --db "$shmdb" "${small[@]}"
      one leveldb-nvm-v$v --engine leveldb --db "$shmdb" "${small[@]}"
    done ;;
  matrixkv-budget)
    # MatrixKV's section (1 M random 4 KiB values, 4.1 GB; 64 MiB memtables x 2, 8 MiB
    # cache, direct I/O, optane) with the NVM budget B for both engines: the container
    # (and L1's target) for matrixkv in a pool of max(1 GiB, 2 B); RocksDB-L0-NVM's L0
    # held to B by its L0 triggers.
    for b in 256 512 1024 2048; do
      pool=$(( b * 2 > 1024 ? b * 2 : 1024 ))M
      fill=(--num 1000000 --value-size 4096 --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom)
      one mkv-budget-$b --engine mezzanine:matrixkv --direct-io --nvm-profile optane --nvm-dir "$nvm" --db "$db" \
        --opt matrix_bytes=${b}M --opt max_bytes_for_level_base=${b}M --opt nvm_capacity=$pool "${fill[@]}"
      one rocks-budget-$b --engine rocksdb-l0-nvm --direct-io --nvm-profile optane --nvm-dir "$nvm" \
        --nvm-budget ${b}M --db "$db" "${fill[@]}"
    done ;;
  matrixkv-rows)
    # The same fill with the 256 MiB budget, and memtables of W for both engines: the
    # container holds 256/W rows (the paper's: 128 rows of 64 MB in 8 GB), RocksDB-L0-NVM's
    # L0 256/W files.
    for w in 64 16 4 2; do
      fill=(--num 1000000 --value-size 4096 --write-buffer-size ${w}M --cache-size 8M --benchmarks fillrandom)
      one mkv-rows-$w --engine mezzanine:matrixkv --direct-io --nvm-profile optane --nvm-dir "$nvm" --db "$db" \
        --opt matrix_bytes=256M --opt max_bytes_for_level_base=256M --opt nvm_capacity=1G "${fill[@]}"
      one rocks-rows-$w --engine rocksdb-l0-nvm --direct-io --nvm-profile optane --nvm-dir "$nvm" \
        --nvm-budget 256M --db "$db" "${fill[@]}"
    done ;;
  matrixkv-l1)
    # The paper's wide L1 (its Fig. 16: L1 of 8 GB, 32x RocksDB's 256 MB, beside the 8 GB
    # container): the 256 MiB container with L1's target at 1x to 8x the container.
    for l1 in 256 512 1024 2048; do
      fill=(--num 1000000 --value-size 4096 --write-buffer-size 64M --cache-size 8M --benchmarks fillrandom)
      one mkv-l1-$l1 --engine mezzanine:matrixkv --direct-io --nvm-profile optane --nvm-dir "$nvm" --db "$db" \
        --opt matrix_bytes=256M --opt max_bytes_for_level_base=${l1}M --opt nvm_capacity=1G "${fill[@]}"
    done ;;
  esac
done
rm -rf "$nvm" "$shmdb" "$db"
