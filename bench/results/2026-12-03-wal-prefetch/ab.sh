#!/usr/bin/env bash
# A/B of the cold WAL replay at open: the papers' mezzanine shape (1 M random 4 KiB
# records, 64 MiB memtables, a 1 GiB NVM pool charged the optane cost, direct I/O), then a
# close that leaves the memtables to their WAL and an open with the page cache dropped
# (needs root). Alternates two builds, NEW and BASE (paths to `mezz` binaries).
# Usage: NEW=... BASE=... NVM=<dir on a tmpfs> SSD=<dir on the SSD> OUT=<dir> ab.sh [rounds]
set -u
rounds=${1:-5}
mkdir -p "$OUT"
for r in $(seq 1 "$rounds"); do
  for c in new base; do
    bin=$NEW; [ $c = base ] && bin=$BASE
    rm -rf "$SSD/db" "$NVM/nvm"
    "$bin" bench --engine mezzanine:mezzanine --nvm-dir "$NVM/nvm" --opt nvm_capacity=1G \
      --opt nvm_memtable_size=128M --direct-io --nvm-profile optane --no-progress --db "$SSD/db" \
      --num 1000000 --value-size 4096 --write-buffer-size 64M --cache-size 8M \
      --benchmarks fillrandom,reopen --drop-caches-before-reopen --json "$OUT/$c.jsonl" 2>&1 \
      | grep -E "^reopen" | sed "s/^/$c r$r /"
    # The open's steps (the LOG's `recovered:` line) and the records the WAL held (the
    # replayed memtable's flush at the close after the open).
    echo "    $(grep "recovered:" "$SSD/db/LOG" | sed "s/.*manifest [0-9]*; //") \
$(grep -A3 "recovered:" "$SSD/db/LOG" | grep -o "([0-9]* entries)" | head -1)"
  done
done
