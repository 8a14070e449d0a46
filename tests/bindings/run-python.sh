#!/usr/bin/env bash
# run-python.sh -- install the Python binding as a user would and run its tests.
#
#   BATON_BUILD=build/default tests/bindings/run-python.sh
#
# Installs ./bindings/python offline into a fresh venv (lib.sh, py_venv)
# and runs bindings/python/tests with that venv's python from outside the
# source tree, so that `import baton` is the installed package. libbaton
# is $BATON_BUILD/libbaton.so.4 (BATON_LIBRARY); under a sanitizer build
# its runtime is preloaded (lib.sh, san_preload).
# Prints one line per test and "N passed, N failed".
set -u
build=${BATON_BUILD:?BATON_BUILD must name the build directory}
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-python.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$repo/tests/bindings/lib.sh"

if ! why=$(py_venv "$repo" "$tmp/venv"); then
    printf '# %s\n' "$why"
    echo "not ok 1 - pip install ./bindings/python (offline, into a venv)"
    echo "0 passed, 1 failed"
    exit 1
fi
san_preload "$build"
cd "$tmp" || exit 1
BATON_LIBRARY="$build/libbaton.so.4" BATON_BUILD="$build" \
    "$tmp/venv/bin/python" -m pytest -p no:terminal -p no:cacheprovider "$repo/bindings/python/tests"
