#!/usr/bin/env bash
# Read/write isolation, reproduced on the device model of an SSD with parallel units
# (mezz-env `UnitFs`), in one run:
#   fig1.jsonl   the paper's Fig. 1 shape: read and write throughput of the raw device
#                against the read share (0-100 %), for a conventional SSD (every I/O
#                striped over all units) and for units split between reads and writes
#                (deterministic, virtual time: `cargo run -p mezz-env --example fig1`).
#   <placement>-db.jsonl, <placement>-ycsb.jsonl   Fig. 2 with `mezz bench`: fillrandom,
#                readrandom (read only), readwhilewriting, and YCSB mixes at 100/90/50/10 %
#                reads (ycsb-c, ycsb-r90, ycsb-a, ycsb-r10) for the placements striped
#                (on a conventional SSD: layout=striped), per_file and isolated (units the
#                engine addresses: layout=dedicated).
#   summary.json / summary.md   the ratios the design is judged by (bench/isolation_summary.py).
# Usage: bench/isolation.sh [--quick] [--out DIR]   (--quick: a tenth of the operations)
set -euo pipefail
cd "$(dirname "$0")/.."

out="bench/results/$(date +%F)-isolation"
scale=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) scale=10; shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"

cargo build --release -q -p mezz -p mezz-env --example fig1
mezz=target/release/mezz

# Fig. 1 on the raw device model.
target/release/examples/fig1 split --json >"$out/fig1.jsonl"

# Fig. 2: the engine on 32 units (a device with host-visible parallel units has dozens to
# hundreds; with more live tables than units, no unit is ever free of reads). Small
# memtables and 4 MiB tables so compactions run all along; a 1 MiB block cache so reads
# reach the device.
units=${UNITS:-32}
num=$((200000 / scale)); reads=$((100000 / scale)); ops=$((100000 / scale))
common=(--engine mezzanine --units $units --threads 4 --cache-size 1M --no-progress
        --opt write_buffer_size=2M --opt target_file_size=4M --opt max_bytes_for_level_base=8M)
for placement in striped per_file isolated; do
  if [ $placement = striped ]; then layout="layout=striped,stripe=64k"; else layout="layout=dedicated"; fi
  device="units=$units,$layout,scale=1"
  rm -f "$out/$placement-db.jsonl" "$out/$placement-ycsb.jsonl"
  "$mezz" bench "${common[@]}" --device "$device" --opt placement=$placement \
    --num $num --reads $reads --value-size 400 \
    --benchmarks fillrandom,readrandom,readwhilewriting --json "$out/$placement-db.jsonl" \
    | tee "$out/$placement-db.txt"
  "$mezz" bench "${common[@]}" --device "$device" --opt placement=$placement \
    --num $((num / 2)) --ops $ops --ycsb-fields 1 --ycsb-field-size 400 \
    --benchmarks ycsb-load,ycsb-c,ycsb-r90,ycsb-a,ycsb-r10 --json "$out/$placement-ycsb.jsonl" \
    | tee "$out/$placement-ycsb.txt"
done

python3 bench/isolation_summary.py "$out"
