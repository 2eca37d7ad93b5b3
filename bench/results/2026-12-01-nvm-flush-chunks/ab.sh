#!/bin/bash
# Alternates `mezz` binaries on one `mezz bench` shape, each run on a fresh database (SSD
# directory on /tmp with direct I/O, NVM pool on a tmpfs mounted with huge=always as
# bench/papers does, or /dev/shm-like tmpfs without huge pages when not root).
# usage: ab.sh OUTDIR ROUNDS LABEL NAME=BIN [NAME=BIN...] -- mezz bench arguments
#        (without --db, --nvm-dir, --json, --direct-io, --no-progress)
set -euo pipefail
out=$1 rounds=$2 label=$3; shift 3
sides=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sides+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
nvmfs=$(mktemp -d /tmp/mezz-ab-nvmfs.XXXXXX)
mount -t tmpfs -o huge=always tmpfs "$nvmfs" 2>/dev/null || true
ssd=$(mktemp -d /tmp/mezz-ab-ssd.XXXXXX)
cleanup() { rm -rf "$ssd"; umount "$nvmfs" 2>/dev/null || true; rm -rf "$nvmfs"; }
trap cleanup EXIT
for r in $(seq 1 "$rounds"); do
  for side in "${sides[@]}"; do
    name=${side%%=*} bin=${side#*=}
    rm -rf "$ssd/db" "$nvmfs/nvm"
    "$bin" bench --json "$out/$label-$name-$r.jsonl" --db "$ssd/db" --nvm-dir "$nvmfs/nvm" \
      --direct-io --no-progress "$@" | grep -E '^(fill|read)' | sed "s/^/$label $name $r: /"
  done
done
