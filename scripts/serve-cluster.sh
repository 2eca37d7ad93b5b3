#!/usr/bin/env bash
# Starts and stops a scale-out group of `mezz serve` processes on free loopback ports.
#
#   scripts/serve-cluster.sh start DIR [N] [--slots] [-- EXTRA_SERVE_ARGS...]
#   scripts/serve-cluster.sh restart DIR I    # stop node I (SIGTERM, clean close), start again
#   scripts/serve-cluster.sh stop DIR
#
# start: N servers (default 3), each with its database in DIR/nodeI/db. Without --slots a
# nutcracker (twemproxy) proxy is started in front of them with a generated configuration
# (DIR/nutcracker.yml: ketama over the servers, named s1..sN so a restarted server keeps its
# keys); with --slots the servers are started in cluster mode instead, with the 16384 slots
# split evenly and each told the others' ranges (no proxy; cluster clients route by
# themselves). DIR/cluster.env then holds the ports: NODE_PORTS="p1 p2 ...", PROXY_PORT=p.
# stop: stops the proxy and every server (SIGTERM, then SIGKILL after 10 s) and is safe to
# call more than once. Background processes keep no descriptor of the caller's (their output
# goes to DIR/*.log), so a caller that captures this script's output is not held. The mezz binary is $MEZZ, or target/<profile>/mezz built on demand.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "serve-cluster: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

mezz_bin() {
  if [[ -n "${MEZZ:-}" ]]; then echo "$MEZZ"; return; fi
  local target
  target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  cargo build -q -p mezz >&2
  echo "$target/debug/mezz"
}

wait_ready() { # port pid
  for _ in $(seq 1 200); do
    if redis-cli -p "$1" PING 2>/dev/null | grep -q PONG; then return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

start_node() { # dir i
  local dir="$1" i="$2"
  # shellcheck disable=SC1091
  source "$dir/cluster.env"
  local ports=($NODE_PORTS) port args=()
  port="${ports[$((i - 1))]}"
  if [[ -n "${SLOTS:-}" ]]; then
    local ranges=($SLOTS) j
    args+=(--cluster-slots "${ranges[$((i - 1))]}")
    for j in "${!ports[@]}"; do
      [[ $j -eq $((i - 1)) ]] && continue
      args+=(--cluster-node "127.0.0.1:${ports[$j]}=${ranges[$j]}")
    done
  fi
  "$MEZZ_BIN" serve "$dir/node$i/db" --bind "127.0.0.1:$port" "${args[@]}" $EXTRA \
    </dev/null >>"$dir/node$i.log" 2>&1 &
  echo $! >"$dir/node$i.pid"
  wait_ready "$port" "$!" || die "node $i did not start (see $dir/node$i.log)"
}

stop_pid() { # pidfile
  [[ -f "$1" ]] || return 0
  local pid
  pid="$(cat "$1")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

cmd="${1:-}"; dir="${2:-}"
[[ -n "$cmd" && -n "$dir" ]] || die "usage: $0 start|restart|stop DIR ..."
case "$cmd" in
start)
  shift 2
  n=3; slots=""; extra=()
  while (($#)); do
    case "$1" in
      --slots) slots=1 ;;
      --) shift; extra=("$@"); break ;;
      *) n="$1" ;;
    esac
    shift
  done
  command -v redis-cli >/dev/null || die "redis-cli is not installed (scripts/setup.sh installs it)"
  [[ -n "$slots" ]] || command -v nutcracker >/dev/null \
    || die "nutcracker is not installed (scripts/setup.sh installs it)"
  mkdir -p "$dir"
  MEZZ_BIN="$(mezz_bin)"
  ports=(); ranges=()
  for i in $(seq 1 "$n"); do
    ports+=("$(free_port)")
    mkdir -p "$dir/node$i"
    if [[ -n "$slots" ]]; then
      ranges+=("$(( (i - 1) * 16384 / n ))-$(( i * 16384 / n - 1 ))")
    fi
  done
  {
    echo "MEZZ_BIN='$MEZZ_BIN'"
    echo "NODE_PORTS='${ports[*]}'"
    echo "SLOTS='${ranges[*]}'"
    echo "EXTRA='${extra[*]}'"
  } >"$dir/cluster.env"
  for i in $(seq 1 "$n"); do start_node "$dir" "$i"; done
  if [[ -z "$slots" ]]; then
    proxy_port="$(free_port)"; stats_port="$(free_port)"
    {
      echo "mezz:"
      echo "  listen: 127.0.0.1:$proxy_port"
      echo "  hash: fnv1a_64"
      echo "  distribution: ketama"
      echo "  redis: true"
      echo "  auto_eject_hosts: false"
      echo "  server_retry_timeout: 1000"
      echo "  timeout: 5000"
      echo "  servers:"
      for i in $(seq 1 "$n"); do echo "   - 127.0.0.1:${ports[$((i - 1))]}:1 s$i"; done
    } >"$dir/nutcracker.yml"
    nutcracker -c "$dir/nutcracker.yml" -s "$stats_port" -a 127.0.0.1 \
      -o "$dir/nutcracker.log" </dev/null >>"$dir/nutcracker.log" 2>&1 &
    echo $! >"$dir/proxy.pid"
    echo "PROXY_PORT='$proxy_port'" >>"$dir/cluster.env"
    wait_ready "$proxy_port" "$(cat "$dir/proxy.pid")" \
      || die "nutcracker did not start (see $dir/nutcracker.log)"
  fi
  cat "$dir/cluster.env"
  ;;
restart)
  i="${3:?node number}"
  # shellcheck disable=SC1091
  source "$dir/cluster.env"
  stop_pid "$dir/node$i.pid"
  start_node "$dir" "$i"
  ;;
stop)
  stop_pid "$dir/proxy.pid"
  for f in "$dir"/node*.pid; do [[ -e "$f" ]] && stop_pid "$f"; done
  ;;
*) die "unknown command '$cmd'" ;;
esac
