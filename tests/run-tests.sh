#!/usr/bin/env bash
# Run test binaries one after another and add up their results.
#
#   tests/run-tests.sh BUILD_DIR BINARY...
#
# Each binary prints one line per test and ends with "N passed, N failed".
# A binary that dies without that line counts as one failed test. The last
# line printed here is the total, in the same form. BATON_BUILD tells the
# integration tests where batond and batonctl are.
set -u
build=$1
shift
export BATON_BUILD
BATON_BUILD=$(cd "$build" && pwd)
passed=0
failed=0
for bin in "$@"; do
    echo "# $(basename "$bin")"
    out=$(mktemp)
    "$bin" 2>&1 | tee "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        echo "not ok - $(basename "$bin") exited without a summary"
        failed=$((failed + 1))
    else
        p=${line%% passed*}
        f=${line#*passed, }
        f=${f%% failed*}
        passed=$((passed + p))
        failed=$((failed + f))
    fi
    rm -f "$out"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
