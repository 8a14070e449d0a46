#!/usr/bin/env bash
# run-python.sh -- install the Python binding as a user would and run its tests.
#
#   BATON_BUILD=build/default tests/bindings/run-python.sh
#
# Makes a fresh venv of Debian's python3 (with the system's site packages:
# cffi and pytest come from Debian), installs ./bindings/python into it
# offline (pip --no-index --no-build-isolation, from a copy, so that the
# source tree gets no build files), and runs bindings/python/tests with
# that venv's python from outside the source tree, so that `import baton`
# is the installed package. libbaton is $BATON_BUILD/libbaton.so.4
# (BATON_LIBRARY). Under a sanitizer build the sanitizer's runtime is
# preloaded into python (it must come first) and leak checking is off
# (the interpreter keeps memory to its end by design).
# Prints one line per test and "N passed, N failed".
set -u
build=${BATON_BUILD:?BATON_BUILD must name the build directory}
repo=$(cd "$(dirname "$0")/../.." && pwd)
python=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-python.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "# $2"
    echo "not ok 1 - $1"
    echo "0 passed, 1 failed"
    exit 1
}

if nm -D "$build/libbaton.so.4" 2>/dev/null | grep -q ' __asan_init'; then
    LD_PRELOAD=$(cc -print-file-name=libasan.so)
    export LD_PRELOAD
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
fi

"$python" -m venv --system-site-packages "$tmp/venv" >"$tmp/log" 2>&1 ||
    fail "python3 -m venv" "$(tail -5 "$tmp/log")"
cp -r "$repo/bindings/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
(cd "$tmp" && "$tmp/venv/bin/python" -m pip install -q --no-index --no-build-isolation "$tmp/src") \
    >"$tmp/log" 2>&1 || fail "pip install ./bindings/python (offline)" "$(tail -5 "$tmp/log")"
cd "$tmp" || exit 1
BATON_LIBRARY="$build/libbaton.so.4" BATON_BUILD="$build" \
    "$tmp/venv/bin/python" -m pytest -p no:terminal -p no:cacheprovider "$repo/bindings/python/tests"
