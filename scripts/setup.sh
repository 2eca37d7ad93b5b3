#!/usr/bin/env bash
# Installs what building and testing Mezzanine needs on a fresh Debian machine.
# The default build is pure Rust: it needs only a stable Rust toolchain (cargo), a C linker,
# and a font for the benchmark plots.
# Comparator engines (RocksDB, LevelDB) are optional cargo features; pass --comparators to
# install their Debian packages too: the RocksDB and LevelDB libraries and headers, libclang
# (the rocksdb crate generates its binding with bindgen) and g++ (for the bundled RocksDB
# build of the rocksdb-release feature). See docs/comparators.md.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
# `mezz bench --plot` draws its text with this font; bench/summarize.py needs python3.
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# The Python package's tests (scripts/test.sh) build it in a virtualenv: venv + ensurepip,
# and the interpreter's headers.
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
  python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
    >/dev/null 2>&1 || need_apt+=(python3-dev)
else
  need_apt+=(python3-venv python3-dev)
fi
# `mezz serve`'s scale-out tests and benchmark (scripts/serve-cluster.sh, bench/serve.sh):
# redis-cli and redis-benchmark, redis-server (the benchmark's reference), nutcracker
# (twemproxy).
for p in redis-tools redis-server nutcracker; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
if [ "${1:-}" = "--comparators" ]; then
  for p in librocksdb-dev libleveldb-dev libclang-dev g++; do
    dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
  done
fi

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install a stable Rust toolchain (rustup) first" >&2
  exit 1
fi
echo "setup: ok ($(cargo --version))"
