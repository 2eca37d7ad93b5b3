#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for the given number of seconds each (default 60),
# starting from the checked-in corpus. Needs the nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz --locked`); without them it says so and exits 0.
# New interesting inputs land in fuzz/corpus-new/<target>/ (not in the checked-in corpus);
# crashes in fuzz/artifacts/<target>/. Exits non-zero if any target found a crash.
# Extra variables: FUZZ_TARGETS="a b" (subset), FUZZ_JOBS=N (libFuzzer -fork=N).
set -uo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${1:-60}"
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz.sh: no nightly toolchain (rustup toolchain install nightly); skipping"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is not installed (cargo install cargo-fuzz --locked); skipping"
    exit 0
fi

targets="${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
args=(-max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10
      -print_final_stats=1)
if [[ -n "${FUZZ_JOBS:-}" ]]; then
    args+=(-fork="$FUZZ_JOBS")
fi
failed=()
for t in $targets; do
    mkdir -p "corpus-new/$t"
    echo "== $t: ${seconds}s"
    # The first corpus directory receives new inputs; the checked-in one is only read.
    if ! cargo +nightly fuzz run "$t" "corpus-new/$t" "corpus/$t" -- "${args[@]}"; then
        failed+=("$t")
    fi
done

if ((${#failed[@]})); then
    echo "fuzz.sh: failures in: ${failed[*]} (inputs in fuzz/artifacts/<target>/)"
    exit 1
fi
echo "fuzz.sh: no crash in: $targets"
