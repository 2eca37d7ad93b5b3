#!/usr/bin/env bash
# plyvel's own test suite, unchanged, against the `mezzanine` package: downloads the plyvel
# source distribution (pinned) from the package registry, takes its test/test_plyvel.py,
# and runs it with a two-line `plyvel` module that loads `mezzanine`.
#
#   scripts/plyvel-suite.sh PYTHON     # the interpreter the package is installed in
#
# Every test runs. test_open_read_only_dir expects a read-only directory to refuse the
# database's LOCK file, which permission bits do not stop root from writing (LevelDB itself
# fails it as root): as root the suite runs in a new user namespace (`unshare --user`),
# where the process keeps its files but has no capability over them, so permission bits
# apply as for any user. Only where user namespaces are unavailable is that one test
# deselected, and the script says so.
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
deselect=()
wrap=()
if [ "$(id -u)" = 0 ]; then
  if unshare --user true 2>/dev/null; then
    wrap=(unshare --user)
  else
    echo "plyvel-suite: running as root without user namespaces: test_open_read_only_dir deselected" >&2
    deselect+=(--deselect test_plyvel.py::test_open_read_only_dir)
  fi
fi
(cd "$run" && "${wrap[@]}" env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$run" \
  "$python" -m pytest -q -p no:cacheprovider "${deselect[@]}" test_plyvel.py)
