#!/usr/bin/env bash
# Builds RocksDB's own db_bench from the very source and library the `rocksdb-release`
# comparator runs: the RocksDB 7.9.2 bundled with the librocksdb-sys crate (its directory in
# the cargo registry) and the static librocksdb.a that librocksdb-sys's build script left in
# the release comparator build's target directory. Only db_bench's own sources (the tool,
# the simulated hybrid file system, the test utilities it calls) are compiled here, with the
# defines the library was compiled with (see below), -O2 and NDEBUG; everything else is
# linked from that librocksdb.a, so db_bench and `mezz bench --engine rocksdb` run the same
# machine code. bench/check-rocksdb.sh compares them.
#
#   scripts/build-db-bench.sh [-jN] [--objects-only]
#
# --objects-only compiles db_bench's own objects without linking them, e.g. while the
# library is still being built (they need only its headers and lz4.h).
# Needs `scripts/build-comparators.sh release` first (same CARGO_TARGET_DIR, default
# target/rocksdb-release) and libgflags-dev. Output: $CARGO_TARGET_DIR/db_bench/db_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/rocksdb-defines.sh
. scripts/rocksdb-defines.sh

jobs=1
link=1
for a in "$@"; do
  case "$a" in
    -j*) jobs="${a#-j}" ;;
    --objects-only) link=0 ;;
    *) echo "usage: $0 [-jN] [--objects-only]" >&2; exit 2 ;;
  esac
done

target="${CARGO_TARGET_DIR:-target/rocksdb-release}"
src="$(rocksdb_sys_dir)/rocksdb"
# The newest librocksdb.a (a target directory may hold builds of several configurations).
lib=$(ls -t "$target"/release/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -n 1 || true)
lz4=$(ls -t "$target"/release/build/lz4-sys-*/out/liblz4.a 2>/dev/null | head -n 1 || true)
if { [ -z "$lib" ] && [ "$link" = 1 ]; } || [ -z "$lz4" ]; then
  echo "build-db-bench: no librocksdb.a / liblz4.a under $target/release/build:" \
       "run scripts/build-comparators.sh release first" >&2
  exit 1
fi
lz4_include="$(dirname "$lz4")/include"
[ -f "$lz4_include/lz4.h" ] || lz4_include="$(dirname "$lz4")"

# The defines and code-generation flags librocksdb-sys's build script gives the library for
# x86-64 Linux with the `lz4` feature: its fixed set, the CPU features the Rust target has
# (the release build uses -C target-cpu=native, so: this CPU's), and the Linux defines of
# RocksDB's own build that scripts/build-comparators.sh adds through CXXFLAGS.
defines="-DNDEBUG=1 -DLZ4=1 -DOS_LINUX -DROCKSDB_PLATFORM_POSIX -DROCKSDB_LIB_IO_POSIX \
-DROCKSDB_SUPPORT_THREAD_LOCAL $ROCKSDB_LINUX_DEFINES"
features=$(rustc --print cfg ${RUSTFLAGS:--C target-cpu=native} | sed -n 's/^target_feature="\(.*\)"$/\1/p')
has() { echo "$features" | grep -qx "$1"; }
cpu=""
has sse2 && cpu="$cpu -msse2"
has sse4.1 && cpu="$cpu -msse4.1"
has sse4.2 && cpu="$cpu -msse4.2" && defines="$defines -DHAVE_SSE42=1"
has avx2 && cpu="$cpu -mavx2" && defines="$defines -DHAVE_AVX2=1"
has bmi1 && cpu="$cpu -mbmi" && defines="$defines -DHAVE_BMI=1"
has lzcnt && cpu="$cpu -mlzcnt" && defines="$defines -DHAVE_LZCNT=1"
has pclmulqdq && cpu="$cpu -mpclmul" && defines="$defines -DHAVE_PCLMUL=1"
# db_bench's own: gflags (RocksDB's build defines GFLAGS when it finds the library).
defines="$defines -DGFLAGS=1"

out="$target/db_bench"
mkdir -p "$out/obj"
sources=(tools/db_bench.cc tools/db_bench_tool.cc tools/simulated_hybrid_file_system.cc
         test_util/testutil.cc test_util/transaction_test_util.cc)
cxx="${CXX:-c++}"
# Objects compiled with other flags are rebuilt.
stamp="$cxx $cpu $defines $lz4_include"
if [ "$(cat "$out/obj/flags" 2>/dev/null)" != "$stamp" ]; then
  rm -f "$out"/obj/*.o
  echo "$stamp" > "$out/obj/flags"
fi
# shellcheck disable=SC2086
compile() {
  local s="$1" o="$out/obj/$(basename "${1%.cc}").o"
  if [ ! -f "$o" ] || [ "$src/$s" -nt "$o" ]; then
    echo "build-db-bench: compiling $s"
    "$cxx" -std=c++17 -O2 -fno-omit-frame-pointer -fPIC -g1 $cpu $defines \
      -I"$src/include" -I"$src" -I"$src/third-party/gtest-1.8.1/fused-src" -I"$lz4_include" \
      -Wno-unused-parameter -Wno-unused-variable -c "$src/$s" -o "$o"
  fi
}
export -f compile
export src out cxx cpu defines lz4_include
printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} bash -c 'compile "$@"' _ {}

[ "$link" = 1 ] || { echo "build-db-bench: objects in $out/obj"; exit 0; }
objs=()
for s in "${sources[@]}"; do objs+=("$out/obj/$(basename "${s%.cc}").o"); done
"$cxx" -o "$out/db_bench" "${objs[@]}" "$lib" "$lz4" -lgflags -lpthread -ldl
echo "build-db-bench: built $out/db_bench (library $lib)"
