#!/usr/bin/env bash
# plyvel's own test suite, unchanged, against the `mezzanine` package: downloads the plyvel
# source distribution (pinned) from the package registry, takes its test/test_plyvel.py,
# and runs it with a two-line `plyvel` module that loads `mezzanine`.
#
#   scripts/plyvel-suite.sh PYTHON     # the interpreter the package is installed in
#
# Deselected, each for a stated reason:
# - test_comparator, test_invalid_comparator: custom comparators are not in the engine yet
#   (its issue is open); every other ordering test runs.
# - test_open_read_only_dir, when run as root only: it expects the LOCK file of a
#   read-only directory to be refused, and the permission bits do not stop root (LevelDB
#   itself fails it as root).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$1
version=1.5.1
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
work="$target/plyvel-suite"
mkdir -p "$work"
sdist="$work/plyvel-$version.tar.gz"
if [ ! -f "$sdist" ]; then
  "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    -d "$work" "plyvel==$version"
fi
tar -xzf "$sdist" -C "$work" "plyvel-$version/test/test_plyvel.py"
run="$work/run"
rm -rf "$run" && mkdir -p "$run"
cp "$work/plyvel-$version/test/test_plyvel.py" "$run/"
printf 'from mezzanine import *  # noqa: F401,F403\nfrom mezzanine import __leveldb_version__  # noqa: F401\n' >"$run/plyvel.py"
deselect=(--deselect test_plyvel.py::test_comparator --deselect test_plyvel.py::test_invalid_comparator)
if [ "$(id -u)" = 0 ]; then
  deselect+=(--deselect test_plyvel.py::test_open_read_only_dir)
fi
(cd "$run" && PYTHONPATH="$run" "$python" -m pytest -q -p no:cacheprovider "${deselect[@]}" test_plyvel.py)
