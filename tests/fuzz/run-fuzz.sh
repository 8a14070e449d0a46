#!/usr/bin/env bash
# Run every libFuzzer target for a while and report like a test binary.
#
#   tests/fuzz/run-fuzz.sh            (BATON_BUILD and FUZZ_SECONDS from the environment)
#
# BATON_BUILD is the build directory (tests/run-tests.sh exports it; default
# build/default); the targets are $BATON_BUILD/fuzz/fuzz_*. FUZZ_SECONDS is
# the time per target (default 20). Each target starts from the committed
# seed corpus tests/fuzz/corpus/TARGET/ plus what earlier runs found in
# $BATON_BUILD/fuzz/found/TARGET/ (new inputs go there; the committed corpus
# is only read). Prints one line per target, "ok N - TARGET (T ms)" or
# "not ok ...", and ends with "N passed, N failed". A crash leaves its input
# in $BATON_BUILD/fuzz/artifacts/ and the fuzzer's output in
# $BATON_BUILD/fuzz/TARGET.log (the tail is printed); reproduce it with
# `$BATON_BUILD/fuzz/TARGET ARTIFACT`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${BATON_BUILD:-build/default}
secs=${FUZZ_SECONDS:-20}
targets=${FUZZ_TARGETS:-fuzz_frame fuzz_cmd fuzz_auth}
passed=0
failed=0
n=0
mkdir -p "$build/fuzz/artifacts"
for t in $targets; do
    n=$((n + 1))
    bin=$build/fuzz/$t
    work=$build/fuzz/found/$t
    log=$build/fuzz/$t.log
    mkdir -p "$work"
    if [ ! -x "$bin" ]; then
        echo "not ok $n - $t (not built: $bin)"
        failed=$((failed + 1))
        continue
    fi
    t0=$(date +%s%N)
    # -rss_limit_mb bounds the process; -timeout flags a single input that
    # runs for more than 10 s (a hang in the decoder or in apply).
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/fuzz/artifacts/$t-" "$work" "$here/corpus/$t" >"$log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    echo "# $t: ${runs:-?} inputs in ${secs} s, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) new + $(ls "$here/corpus/$t" | wc -l) seeds"
    if [ "$rc" -eq 0 ]; then
        echo "ok $n - $t ($ms ms)"
        passed=$((passed + 1))
    else
        echo "# $t exited $rc; last lines of $log:"
        tail -n 30 "$log" | sed 's/^/#   /'
        echo "not ok $n - $t (exit $rc)"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
