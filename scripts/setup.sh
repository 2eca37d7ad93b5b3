#!/usr/bin/env bash
# Installs what building and testing Mezzanine needs on a fresh Debian machine.
# The default build is pure Rust: it needs only a stable Rust toolchain (cargo) and a C linker.
# Comparator engines (RocksDB, LevelDB) are optional cargo features; pass --comparators to
# install their Debian packages too.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
if [ "${1:-}" = "--comparators" ]; then
  need_apt+=(librocksdb-dev libleveldb-dev libclang-dev)
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
