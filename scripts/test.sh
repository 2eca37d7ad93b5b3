#!/usr/bin/env bash
# Runs Mezzanine's test suite (unit, integration, model-based, crash and corruption tests,
# the Python package's pytest suite, plyvel's own test suite against the package, and the
# scale-out tests of `mezz serve`).
# Longer runs: see docs/testing.md (MEZZ_MODEL_LONG, MEZZ_META_LONG, mezz stress).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo test --workspace "$@"

# The Python package (crates/mezz-py + python/): built into a virtualenv under the target
# directory with maturin, then its pytest suite.
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
venv="$target/python-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2" pytest
(cd python && VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop -q)
"$venv/bin/python" -m pytest -q python/tests
# plyvel's own test suite against the package (see the script for what it deselects).
scripts/plyvel-suite.sh "$venv/bin/python"
# `mezz serve` scaled out: three servers behind nutcracker, and three with a slot map driven
# by redis-py's RedisCluster (scripts/serve-cluster.sh starts and stops them).
"$venv/bin/pip" install -q --disable-pip-version-check "redis>=8,<9"
"$venv/bin/python" -m pytest -q crates/mezz-serve/tests/py
