#!/usr/bin/env bash
# `mezz serve` against redis-server with redis-benchmark, on this machine, once:
#
#   bench/serve.sh [OUT_DIR]      (default bench/results/<date>-serve)
#
# Targets, each started fresh on a free loopback port with its data in a new directory
# under $TMPDIR (the same file system for all):
#   redis-everysec  redis-server --appendonly yes --appendfsync everysec --save ""
#   redis-always    redis-server --appendonly yes --appendfsync always --save ""
#   mezz            mezz serve DB            (WAL written once per event-loop round, not synced)
#   mezz-sync       mezz serve DB --sync     (WAL synced once per round, before its replies)
#   mezz-proxy3     three `mezz serve` behind nutcracker (scripts/serve-cluster.sh)
# Each runs `redis-benchmark -t set,get,incr,mset -c 50 -n $N -P 16`, then `-P 1` (N=200000;
# N_SYNC_P1, default N, for the two synced targets at -P 1, where every request waits for an
# fsync), then `-P 16 -r $KEYSPACE` (default 1000000: random keys; without `-r` every
# request names the same key, a hot key whose writes `mezz serve` coalesces within a round).
# Outputs: <target>-P16.csv, -P1.csv, -P16r.csv (redis-benchmark --csv), machine.txt (load
# before and after, CPUs, versions), commands.txt, summary.md (requests/s and ratios).
# Needs redis-server, redis-benchmark, redis-cli, nutcracker (scripts/setup.sh) and builds
# the release mezz unless $MEZZ names one.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench/results/$(date -u +%F)-serve}"
N="${N:-200000}"
N_SYNC_P1="${N_SYNC_P1:-$N}"
KEYSPACE="${KEYSPACE:-1000000}"
mkdir -p "$out"
for t in redis-server redis-benchmark redis-cli nutcracker; do
  command -v "$t" >/dev/null || { echo "bench/serve.sh: $t is not installed (scripts/setup.sh)" >&2; exit 1; }
done
if [[ -z "${MEZZ:-}" ]]; then
  cargo build -q --release -p mezz
  target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  MEZZ="$target/release/mezz"
fi
export MEZZ
work="$(mktemp -d "${TMPDIR:-/tmp}/mezz-serve-bench.XXXXXX")"
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  scripts/serve-cluster.sh stop "$work/proxy3" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
wait_ready() {
  for _ in $(seq 1 200); do
    redis-cli -p "$1" PING 2>/dev/null | grep -q PONG && return 0
    sleep 0.05
  done
  echo "bench/serve.sh: nothing answers on port $1" >&2
  return 1
}

{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "cpus: $(nproc)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "redis-server: $(redis-server --version)"
  echo "redis-benchmark: $(redis-benchmark --version 2>/dev/null || echo unknown)"
  echo "nutcracker: $(nutcracker --version 2>&1 | head -1)"
  echo "mezz: $("$MEZZ" --version)"
  echo "data directory file system: $(df -T "$work" | awk 'NR==2 {print $2}')"
} >"$out/machine.txt"
: >"$out/commands.txt"
{
  echo "# redis_target F = redis-server --port PORT --bind 127.0.0.1 --dir DATA/NAME --save '' --appendonly yes --appendfsync F"
  echo "# mezz_target FLAGS = mezz serve DATA/NAME/db --bind 127.0.0.1:PORT FLAGS"
} >>"$out/commands.txt"

bench() { # name port n pipeline [keyspace]
  local cmd=(redis-benchmark -p "$2" -t set,get,incr,mset -c 50 -n "$3" -P "$4" --csv)
  local tag="P$4"
  if [[ -n "${5:-}" ]]; then
    cmd+=(-r "$5")
    tag="P$4r"
  fi
  echo "$1: ${cmd[*]}" >>"$out/commands.txt"
  "${cmd[@]}" >"$out/$1-$tag.csv"
}

run_target() { # name n_p1 start-command...
  local name="$1" n1="$2"; shift 2
  local port; port="$(free_port)"
  mkdir -p "$work/$name"
  echo "$name: $* (port $port)" | sed "s|$work|\$DATA|g" >>"$out/commands.txt"
  "$@" "$port" "$work/$name" </dev/null >"$work/$name.log" 2>&1 &
  pid=$!
  wait_ready "$port"
  bench "$name" "$port" "$N" 16
  bench "$name" "$port" "$n1" 1
  bench "$name" "$port" "$N" 16 "$KEYSPACE"
  redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait "$pid" 2>/dev/null || true
  pid=""
}

redis_target() { # fsync port dir
  exec redis-server --port "$2" --bind 127.0.0.1 --dir "$3" --save "" --appendonly yes \
    --appendfsync "$1"
}
mezz_target() { # flags... port dir
  local args=("$@")
  local n=${#args[@]}
  exec "$MEZZ" serve "${args[$((n - 1))]}/db" --bind "127.0.0.1:${args[$((n - 2))]}" \
    "${args[@]:0:$((n - 2))}"
}

run_target redis-everysec "$N" redis_target everysec
run_target redis-always "$N_SYNC_P1" redis_target always
run_target mezz "$N" mezz_target
run_target mezz-sync "$N_SYNC_P1" mezz_target --sync

scripts/serve-cluster.sh start "$work/proxy3" 3 >/dev/null
proxy_port="$(. "$work/proxy3/cluster.env"; echo "$PROXY_PORT")"
echo "mezz-proxy3: scripts/serve-cluster.sh start DIR 3 (nutcracker port $proxy_port)" >>"$out/commands.txt"
bench mezz-proxy3 "$proxy_port" "$N" 16
bench mezz-proxy3 "$proxy_port" "$N" 1
scripts/serve-cluster.sh stop "$work/proxy3" >/dev/null

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
python3 bench/serve_summary.py "$out" >"$out/summary.md"
cat "$out/summary.md"
