# Sourced by scripts/build-comparators.sh and scripts/build-db-bench.sh: the preprocessor
# defines RocksDB's own build (build_tools/build_detect_platform) sets on Linux and the
# librocksdb-sys build script does not. Without ROCKSDB_SCHED_GETCPU_PRESENT the per-core
# statistics find the current core with `cpuid`, which traps to the hypervisor on a VM once
# per recorded tick (92 % of a fill's time in PhysicalCoreID). See docs/comparators.md.
# shellcheck shell=bash
ROCKSDB_LINUX_DEFINES="-DROCKSDB_SCHED_GETCPU_PRESENT -DROCKSDB_FALLOCATE_PRESENT \
-DROCKSDB_MALLOC_USABLE_SIZE -DROCKSDB_PTHREAD_ADAPTIVE_MUTEX -DROCKSDB_RANGESYNC_PRESENT \
-DROCKSDB_AUXV_GETAUXVAL_PRESENT -DROCKSDB_BACKTRACE -DHAVE_UINT128_EXTENSION"

# The librocksdb-sys crate's directory in the cargo registry (run from the workspace root).
rocksdb_sys_dir() {
  local manifest
  manifest=$(cargo metadata --format-version 1 --all-features \
    | grep -o '"manifest_path":"[^"]*librocksdb-sys-[^"]*/Cargo.toml"' | head -n 1 \
    | sed 's/^"manifest_path":"//; s/"$//')
  if [ -z "$manifest" ]; then
    echo "librocksdb-sys source not found (cargo fetch first?)" >&2
    return 1
  fi
  dirname "$manifest"
}
