#!/bin/bash
# A neighbour that floods the disk with writes: every PERIOD seconds (default 2) it writes
# MB megabytes (default 256) to a file in DIR and waits for them with fdatasync, until
# killed. Run it beside an open-loop run to see how an engine's reads and writes fare when
# the disk is busy with someone else's writeback.
#   disturb.sh DIR [MB] [PERIOD]
dir=$1; mb=${2:-256}; period=${3:-2}
trap 'rm -f "$dir/disturb.dat"; exit 0' TERM INT
while :; do
  dd if=/dev/zero of="$dir/disturb.dat" bs=1M count="$mb" conv=fdatasync status=none
  sleep "$period"
done
