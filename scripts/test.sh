#!/usr/bin/env bash
# Runs Mezzanine's test suite (unit, integration, model-based, crash and corruption tests).
# Longer runs: see docs/testing.md (MEZZ_MODEL_LONG, MEZZ_META_LONG, mezz stress).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo test --workspace "$@"
