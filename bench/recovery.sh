#!/usr/bin/env bash
# Recovery: the time `Db::open` takes to bring back NUM entries (default 420 000, 16-byte
# keys, 100-byte values: about 62 MiB in the skip list) held
#   - by a full NVM memtable of the `novelsm` preset (nvm_memtable_size = 64 MiB; a 1 MiB
#     DRAM memtable takes the first writes, then every write goes to the NVM memtable;
#     the NVM pool is emulated on /dev/shm), mapped back at open, and
#   - by the WAL of the `leveldb` preset (write_buffer_size = 256 MiB, so nothing is
#     flushed), replayed into a DRAM memtable at open.
# Each preset runs `mezz bench --benchmarks fillrandom,reopen` (reopen = close, then time
# one `Db::open` of the same directory) in one process; both are release builds.
#
# Writes the JSON lines of both runs and a summary with the ratio (WAL replay time / NVM
# memtable reopen time) under bench/results/<LABEL>/, and prints the ratio.
#
#   bench/recovery.sh                 # LABEL=2026-11-25-recovery/after; builds target/release/mezz
#   MEZZ=/path/to/mezz LABEL=x bench/recovery.sh   # another build (e.g. an older commit)
set -euo pipefail
cd "$(dirname "$0")/.."

NUM=${NUM:-420000}
LABEL=${LABEL:-2026-11-25-recovery/after}
OUT=bench/results/$LABEL
if [[ -z "${MEZZ:-}" ]]; then
    cargo build --release -p mezz
    MEZZ=${CARGO_TARGET_DIR:-target}/release/mezz
fi
mkdir -p "$OUT"
rm -f "$OUT/novelsm.json" "$OUT/leveldb.json"
shm=/dev/shm
[[ -d $shm ]] || shm=${TMPDIR:-/tmp}
NVM=$(mktemp -d "$shm/mezz-recovery.XXXXXX")
trap 'rm -rf "$NVM"' EXIT

"$MEZZ" bench --preset novelsm --nvm-dir "$NVM" --benchmarks fillrandom,reopen \
    --num "$NUM" --value-size 100 --opt write_buffer_size=1M --opt nvm_memtable_size=64M \
    --json "$OUT/novelsm.json" --no-progress
"$MEZZ" bench --preset leveldb --benchmarks fillrandom,reopen \
    --num "$NUM" --value-size 100 --opt write_buffer_size=256M \
    --json "$OUT/leveldb.json" --no-progress

python3 - "$OUT" "$NUM" <<'EOF'
import json, sys
out, num = sys.argv[1], int(sys.argv[2])
def reopen_secs(name):
    with open(f"{out}/{name}.json") as f:
        rows = [json.loads(l) for l in f if l.strip()]
    return next(r["elapsed_secs"] for r in rows if r["benchmark"] == "reopen")
nvm, wal = reopen_secs("novelsm"), reopen_secs("leveldb")
summary = {
    "entries": num,
    "nvm_memtable_reopen_ms": round(nvm * 1e3, 3),
    "wal_replay_reopen_ms": round(wal * 1e3, 3),
    "ratio_wal_over_nvm": round(wal / nvm, 2),
}
with open(f"{out}/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
print(f"reopen of {num} entries: NVM memtable (novelsm) {nvm * 1e3:.1f} ms, "
      f"WAL replay (leveldb) {wal * 1e3:.1f} ms, ratio {wal / nvm:.1f}x")
EOF
