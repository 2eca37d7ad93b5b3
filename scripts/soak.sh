#!/usr/bin/env bash
# Soak: runs every randomized harness with fresh seeds, in both background modes, until a
# time budget is spent or the requested counts are reached, and prints the seed (and the
# command to rerun it) of every failure.
#
#   scripts/soak.sh 600                                   # about ten minutes
#   scripts/soak.sh --model 500 --meta 200 --kills 2000   # until every count is reached
#   scripts/soak.sh 3600 --model 500 --meta 200 --kills 2000 --base 42
#
# Harnesses (release builds), cycled until done:
#   model         MEZZ_MODEL_LONG seeds of 20,000 ops, tiny presets, alternating background
#                 threads and deterministic background work (manual_background)
#   reopen        reopen_under_changing_options: every option set in turn, both modes
#   metamorphic   MEZZ_META_LONG seeds of 5,000 ops, each under every option set in both modes
#   crash         in-process crash campaigns (MEZZ_CRASH_POINTS points, fresh MEZZ_CRASH_BASE)
#   lifecycle     MEZZ_LIFECYCLE_LONG seeds of the multi-threaded lifecycle stress: 4 worker
#                 threads calling every Db method while a controller closes (sometimes from
#                 two threads at once), reopens and crashes the database under them; each
#                 seed runs every preset's tiny options (novelsm also with the immutable NVM
#                 memtable) and two standard option sets in turn, in both background modes
#   transactions  the engine's transaction tests (bank invariant under threads, the snapshot-
#                 isolation history checker, conflicts after flushes and compactions) with a
#                 fresh MEZZ_TXN_SEED
#   backup        a child process killed at random while it writes, checkpoints and backs
#                 up, then every checkpoint opened and every backup verified and restored
#                 (fresh MEZZ_BACKUP_CRASH_SEED), and checkpoints taken under a writer
#   families      the column-family model (MEZZ_CF_SEED: batches across families, create,
#                 drop, snapshots, flushes, compactions, reopens) and its in-process
#                 crash tests, with a fresh seed
#   stress        `mezz stress` kill -9 rounds, rotating (column families first, so that a
#                 short soak runs them): leveldb over 3 column families (batches span
#                 them), novelsm with immutable NVM memtables over 3 families (2 SSD
#                 directories, striped), matrixkv (rows, columns, page reuse in a small
#                 container), tlsm (NVM tables: LRU moves; all in NVM with ps+bac and eager
#                 reclamation), leveldb (tables over 3 SSD directories, isolated
#                 placement), novelsm (mutable), novelsm with the WAL on NVM, mezzanine
#                 with an NVM WAL and a small container added over NVM tables at L1 (its
#                 mutable NVM memtable in front, columns into NVM tables)
# A count that is given is a target; with a time budget, the soak stops when the time is
# spent or every given count is reached, whichever comes first. Output and failing logs go
# to the --out directory (default: a temporary one, printed); the last line is a summary.
# Exit status: 0 when nothing failed, 1 otherwise, 2 on a usage error.
set -uo pipefail
cd "$(dirname "$0")/.."

budget=0
want_model=0
want_meta=0
want_kills=0
base=""
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) want_model=$2; shift 2 ;;
    --meta) want_meta=$2; shift 2 ;;
    --kills) want_kills=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
    [0-9]*) budget=$1; shift ;;
    *) echo "soak: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$budget" = 0 ] && [ "$want_model" = 0 ] && [ "$want_meta" = 0 ] && [ "$want_kills" = 0 ]; then
  echo "soak: give a time budget in seconds and/or --model/--meta/--kills counts" >&2
  exit 2
fi
[ -n "$base" ] || base=$(( $(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % 1000000000 ))
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/mezz-soak.XXXXXX")
mkdir -p "$out"

./scripts/setup.sh >/dev/null
echo "soak: building release test binaries (base seed $base, logs in $out)"
cargo test --release -p mezz-testkit --no-run -q 2>"$out/build.log" || { cat "$out/build.log"; exit 2; }
cargo test --release -p mezzanine --test transactions --test backup --test checkpoint --no-run -q \
  2>>"$out/build.log" || { cat "$out/build.log"; exit 2; }
cargo build --release -p mezz -q 2>>"$out/build.log" || { cat "$out/build.log"; exit 2; }
mezz=target/release/mezz

start=$(date +%s)
model=0; meta=0; reopen=0; crash_points=0; lifecycle=0; kills=0; open_kills=0; rounds=0; failures=0
txn=0; backup=0; families=0
cycle=0

elapsed() { echo $(( $(date +%s) - start )); }
time_left() { [ "$budget" = 0 ] || [ "$(elapsed)" -lt "$budget" ]; }
counts_done() {
  [ "$want_model" -gt 0 ] || [ "$want_meta" -gt 0 ] || [ "$want_kills" -gt 0 ] || return 1
  [ "$model" -ge "$want_model" ] && [ "$meta" -ge "$want_meta" ] && [ "$kills" -ge "$want_kills" ]
}
fail() { # name, log file, how to rerun
  failures=$((failures + 1))
  echo "soak: FAILED $1 (log: $2)"
  grep -m3 -E "seed [0-9]+|failure|failed|panicked" "$2" | sed 's/^/    /'
  echo "    rerun: $3"
}
# Runs one cargo test of mezz-testkit in release mode with the given environment.
testkit() { # log, test file, test name, env...
  local log=$1 file=$2 name=$3; shift 3
  env "$@" cargo test --release -q -p mezz-testkit --test "$file" "$name" -- --nocapture >"$log" 2>&1
}
# Runs one cargo test file of the engine in release mode with the given environment.
engine() { # log, test file, env...
  local log=$1 file=$2; shift 2
  env "$@" cargo test --release -q -p mezzanine --test "$file" -- --nocapture >"$log" 2>&1
}

while time_left && ! counts_done; do
  cycle=$((cycle + 1))
  s=$((base + cycle * 1000))
  # Model and metamorphic side by side (one core each); a harness whose count is reached
  # runs no more (in time-only mode every harness runs every cycle).
  n_model=25; n_meta=10; n_rounds=150
  need() { [ "$1" = 0 ] || [ "$2" -lt "$1" ]; }
  need "$want_model" "$model" || n_model=0
  need "$want_meta" "$meta" || n_meta=0
  need "$want_kills" "$kills" || n_rounds=0
  testkit "$out/model-$s.log" model model_long MEZZ_MODEL_LONG=$n_model MEZZ_MODEL_SEED=$s &
  p_model=$!
  testkit "$out/meta-$s.log" metamorphic metamorphic_long MEZZ_META_LONG=$n_meta MEZZ_META_SEED=$s &
  p_meta=$!
  if wait $p_model; then model=$((model + n_model)); rm -f "$out/model-$s.log"; else
    fail "model seeds $s..$((s + n_model - 1))" "$out/model-$s.log" \
      "MEZZ_MODEL_LONG=1 MEZZ_MODEL_SEED=<seed> cargo test -p mezz-testkit --test model model_long"
  fi
  if wait $p_meta; then meta=$((meta + n_meta)); rm -f "$out/meta-$s.log"; else
    fail "metamorphic seeds $s..$((s + n_meta - 1))" "$out/meta-$s.log" \
      "MEZZ_META_LONG=1 MEZZ_META_SEED=<seed> cargo test -p mezz-testkit --test metamorphic metamorphic_long"
  fi
  seeds=$(seq -s, "$s" $((s + 9)))
  if testkit "$out/reopen-$s.log" model reopen_under_changing_options MEZZ_REOPEN_SEEDS="$seeds"; then
    reopen=$((reopen + 20)); rm -f "$out/reopen-$s.log"
  else
    fail "reopen seeds $seeds" "$out/reopen-$s.log" \
      "MEZZ_REOPEN_SEEDS=<seed> cargo test -p mezz-testkit --test model reopen_under_changing_options"
  fi
  if testkit "$out/crash-$s.log" crash "" MEZZ_CRASH_POINTS=1500 MEZZ_CRASH_BASE=$s; then
    crash_points=$((crash_points + 1500)); rm -f "$out/crash-$s.log"
  else
    fail "crash campaign base $s" "$out/crash-$s.log" \
      "MEZZ_CRASH_SEED=<seed named in the log> cargo test -p mezz-testkit --test crash"
  fi
  # Lifecycle stress: 3 seeds a cycle, each under 14 option sets (fresh seeds from the base).
  if testkit "$out/lifecycle-$s.log" lifecycle lifecycle_long MEZZ_LIFECYCLE_LONG=3 MEZZ_LIFECYCLE_BASE=$s; then
    lifecycle=$((lifecycle + 3)); rm -f "$out/lifecycle-$s.log"
  else
    fail "lifecycle seeds of base $s" "$out/lifecycle-$s.log" \
      "the log's replay line: MEZZ_LIFECYCLE_SEED=<seed> MEZZ_LIFECYCLE_SET=<set> MEZZ_LIFECYCLE_SIZE=long cargo test -p mezz-testkit --test lifecycle lifecycle_every_preset"
  fi
  # Transactions and checkpoints/backups under fresh seeds.
  if engine "$out/txn-$s.log" transactions MEZZ_TXN_SEED=$s; then
    txn=$((txn + 1)); rm -f "$out/txn-$s.log"
  else
    fail "transactions seed $s" "$out/txn-$s.log" \
      "MEZZ_TXN_SEED=$s cargo test -p mezzanine --test transactions"
  fi
  if engine "$out/backup-$s.log" backup MEZZ_BACKUP_CRASH_SEED=$s \
      && engine "$out/checkpoint-$s.log" checkpoint; then
    backup=$((backup + 1)); rm -f "$out/backup-$s.log" "$out/checkpoint-$s.log"
  else
    fail "checkpoints and backups, seed $s" "$out/backup-$s.log" \
      "MEZZ_BACKUP_CRASH_SEED=$s cargo test -p mezzanine --test backup; cargo test -p mezzanine --test checkpoint"
  fi
  # Column families: the model under a fresh seed, and the crash tests beside it.
  if testkit "$out/cf-$s.log" column_families "" MEZZ_CF_SEED=$s; then
    families=$((families + 1)); rm -f "$out/cf-$s.log"
  else
    fail "column families seed $s" "$out/cf-$s.log" \
      "MEZZ_CF_SEED=$s cargo test -p mezz-testkit --test column_families"
  fi
  # kill -9 rounds, one configuration per cycle.
  db="$out/stress-db"; rm -rf "$db" "$db.expected" "$db.nvm" "$db".u*
  fams=()
  case $((cycle % 9)) in
    1) preset=leveldb; opts=(); fams=(--families 3) ;;
    2) preset=novelsm; opts=(--opt nvm_memtable=immutable --opt ssd_paths="$db.u0,$db.u1" --opt placement=striped)
       fams=(--families 3) ;;
    3) preset=matrixkv; opts=() ;;
    4) preset=tlsm; opts=(--opt write_buffer_size=64K --opt target_file_size=64K --opt max_bytes_for_level_base=256K
                          --opt nvm_tiering=lru:1M --opt nvm_capacity=16M --opt nvm_prefault=false) ;;
    5) preset=tlsm; opts=(--opt write_buffer_size=64K --opt target_file_size=64K --opt max_bytes_for_level_base=256K
                          --opt nvm_tiering=none --opt nvm_table_method=ps+bac --opt nvm_gc_live_ratio=0.9
                          --opt nvm_capacity=64M --opt nvm_prefault=false) ;;
    6) preset=leveldb; opts=(--opt ssd_paths="$db.u0,$db.u1,$db.u2" --opt placement=isolated) ;;
    7) preset=novelsm; opts=() ;;
    8) preset=mezzanine; opts=(--opt matrix_bytes=512K --opt matrix_page_size=4096 --opt nvm_tiering=leveled:1
                               --opt wal_on_nvm=true) ;;
    0) preset=novelsm; opts=(--opt wal_on_nvm=true) ;;
  esac
  if [ "$n_rounds" = 0 ]; then
    :
  elif "$mezz" stress --db "$db" --rounds $n_rounds --seed "$s" --preset $preset "${opts[@]}" \
      "${fams[@]}" --max-kill-delay-ms 400 --quiet >"$out/stress-$s.log" 2>&1; then
    k=$(grep -oE '[0-9]+ kills' "$out/stress-$s.log" | tail -1 | grep -oE '[0-9]+')
    o=$(grep -oE '[0-9]+ during open' "$out/stress-$s.log" | tail -1 | grep -oE '[0-9]+')
    kills=$((kills + ${k:-0})); open_kills=$((open_kills + ${o:-0}))
    rounds=$((rounds + n_rounds)); rm -f "$out/stress-$s.log"
  else
    fail "mezz stress ($preset ${opts[*]} ${fams[*]}) seed $s" "$out/stress-$s.log" \
      "$mezz stress --db <dir> --rounds $n_rounds --seed $s --preset $preset ${opts[*]} ${fams[*]} --max-kill-delay-ms 400"
  fi
  rm -rf "$db" "$db.expected" "$db.nvm" "$db".u*
  echo "soak: $(elapsed) s: model $model, reopen $reopen, metamorphic $meta, crash points $crash_points, lifecycle seeds $lifecycle, transaction seeds $txn, backup kill seeds $backup, column-family seeds $families, stress kills $kills/$rounds rounds ($open_kills during open), failures $failures"
done

echo "soak summary: base seed $base, $(elapsed) s, $cycle cycles: model runs $model, reopen runs $reopen, metamorphic runs $meta (x every option set in both background modes), crash points $crash_points, lifecycle seeds $lifecycle (x 16 option sets), transaction seeds $txn, backup kill seeds $backup, column-family seeds $families, stress kills $kills of $rounds rounds ($open_kills during open), failures $failures"
[ "$failures" = 0 ]
