#!/bin/bash
# Reopen A/B of two mezz binaries on one saved database: the mezzanine preset filled with
# 30,000 random 4 KiB records (64 MiB memtables) and closed with its newest WAL holding
# about 57 MB of records, then, for each round and binary, the saved database copied back,
# the page cache dropped, and the database opened by `mezz get` of an absent key: the
# process's wall time (open, WAL replay, one read, close) in ms.
# Needs root (drop_caches, a huge-page tmpfs for the pool).
# usage: ab-reopen.sh OLD_MEZZ NEW_MEZZ OUTDIR ROUNDS
set -eu
old=$1; new=$2; out=$3; rounds=${4:-5}
mkdir -p "$out"
work=$(mktemp -d /tmp/mezz-reopen.XXXXXX)
mkdir "$work/hp"; mount -t tmpfs -o huge=always tmpfs "$work/hp"
args=(--engine mezzanine:mezzanine --nvm-dir "$work/hp/nvm" --opt nvm_capacity=1G --opt nvm_memtable_size=128M
      --direct-io --nvm-profile optane --no-progress --db "$work/db" --value-size 4096 --write-buffer-size 64M
      --cache-size 8M --num 30000)
"$old" bench "${args[@]}" --benchmarks fillrandom >"$out/fill.txt" 2>&1
ls -l "$work/db" | grep '\.log$' >"$out/wals.txt"
cp -a "$work/db" "$work/db.save"; cp -a "$work/hp/nvm" "$work/hp/nvm.save"
for r in $(seq 1 "$rounds"); do
  for b in old new; do
    rm -rf "$work/db" "$work/hp/nvm"; cp -a "$work/db.save" "$work/db"; cp -a "$work/hp/nvm.save" "$work/hp/nvm"
    sync; echo 3 >/proc/sys/vm/drop_caches
    bin=$old; [ $b = new ] && bin=$new
    # One open of the saved state (a point read, `mezz get`, under the same options):
    # the whole process's wall time, in ms.
    t0=$(date +%s%N)
    "$bin" get "$work/db" key-that-is-absent --preset mezzanine --opt nvm_dir="$work/hp/nvm" \
      --opt nvm_capacity=1G --opt nvm_memtable_size=128M --opt write_buffer_size=64M \
      --opt use_direct_reads=true --opt use_direct_io_for_flush_and_compaction=true \
      --opt nvm_profile=optane >/dev/null 2>"$out/open-$b-$r.err" || true
    t1=$(date +%s%N)
    echo "$b $r $(( (t1 - t0) / 1000000 ))" | tee -a "$out/open.txt"
  done
done
umount "$work/hp"; rm -rf "$work"
