#!/usr/bin/env bash
# Builds the `mezz` binary (release profile) with the comparator engines compiled in, so that
# `mezz bench --engine rocksdb,leveldb,fjall,...` can run them. See docs/comparators.md.
#
#   scripts/build-comparators.sh [debian|release] [extra cargo arguments...]
#
# debian (default): features rocksdb,leveldb,fjall. RocksDB is Debian's librocksdb 7.8.3
#   (built with assertions on), found through ROCKSDB_LIB_DIR / ROCKSDB_INCLUDE_DIR from
#   .cargo/config.toml; LevelDB is Debian's libleveldb 1.23.
# release: features rocksdb-release,leveldb,fjall. RocksDB 7.9.2 is compiled from the rocksdb
#   crate's bundled source with NDEBUG (ROCKSDB_COMPILE=1): the first build takes 15 minutes or
#   more on 2 cores. It uses its own target directory (CARGO_TARGET_DIR, default
#   target/rocksdb-release) so that it and the Debian-linked build do not rebuild each other.
#
# Needs the packages of `scripts/setup.sh --comparators`.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-debian}"
[ $# -gt 0 ] && shift

case "$mode" in
  debian)
    features="rocksdb,leveldb,fjall"
    ;;
  release)
    features="rocksdb-release,leveldb,fjall"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/rocksdb-release}"
    export ROCKSDB_COMPILE=1
    # librocksdb-sys enables SSE 4.2 (hardware CRC32C), AVX2, PCLMUL... only when the Rust
    # target has them: without this the bundled RocksDB is a generic x86-64 build.
    export RUSTFLAGS="${RUSTFLAGS:--C target-cpu=native}"
    # What RocksDB's own build defines on Linux and librocksdb-sys's build script does not
    # (scripts/rocksdb-defines.sh; scripts/build-db-bench.sh compiles db_bench with them too).
    # shellcheck source=scripts/rocksdb-defines.sh
    . scripts/rocksdb-defines.sh
    export CXXFLAGS="${CXXFLAGS:-} $ROCKSDB_LINUX_DEFINES"
    # bindgen must read the headers of the bundled source, not the system's.
    sys_dir=$(rocksdb_sys_dir)
    export ROCKSDB_INCLUDE_DIR="$sys_dir/rocksdb/include"
    ;;
  *)
    echo "usage: $0 [debian|release] [cargo arguments...]" >&2
    exit 2
    ;;
esac

cargo build --release -p mezz --features "$features" "$@"
echo "build-comparators: built ${CARGO_TARGET_DIR:-target}/release/mezz ($mode: $features)"
