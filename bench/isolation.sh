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
#                engine addresses: layout=dedicated), and isolated-wide (isolated with its
#                first directory a wide unit striped over 8 of the 32 units, holding L0 and
#                L1: option placement_wide_paths=1).
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
common=(--engine mezzanine --threads 4 --cache-size 1M --no-progress
        --opt write_buffer_size=2M --opt target_file_size=4M --opt max_bytes_for_level_base=8M)
for run in striped per_file isolated isolated-wide; do
  wide_opt=(); dirs=$units; placement=${run%-wide}
  case $run in
    striped) layout="layout=striped,stripe=64k" ;;
    per_file|isolated) layout="layout=dedicated" ;;
    # The first directory is a wide unit over a quarter of the parallel units (L0 and L1
    # go there), each other directory one unit of its own: the same 32 units in all.
    isolated-wide) layout="layout=dedicated,stripe=64k,wide=$((units / 4))"
              wide_opt=(--opt placement_wide_paths=1); dirs=$((units - units / 4 + 1)) ;;
  esac
  device="units=$units,$layout,scale=1"
  rm -f "$out/$run-db.jsonl" "$out/$run-ycsb.jsonl"
  "$mezz" bench "${common[@]}" --units $dirs --device "$device" --opt placement=$placement "${wide_opt[@]}" \
    --num $num --reads $reads --value-size 400 \
    --benchmarks fillrandom,readrandom,readwhilewriting --json "$out/$run-db.jsonl" \
    | tee "$out/$run-db.txt"
  "$mezz" bench "${common[@]}" --units $dirs --device "$device" --opt placement=$placement "${wide_opt[@]}" \
    --num $((num / 2)) --ops $ops --ycsb-fields 1 --ycsb-field-size 400 \
    --benchmarks ycsb-load,ycsb-c,ycsb-r90,ycsb-a,ycsb-r10 --json "$out/$run-ycsb.jsonl" \
    | tee "$out/$run-ycsb.txt"
done

python3 bench/isolation_summary.py "$out"
