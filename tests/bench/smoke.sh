#!/usr/bin/env bash
# smoke.sh -- the short version of `make bench` that `make test` runs: it
# checks that the benchmark tooling works, not how fast anything is.
#
#   BATON_BUILD=build/default tests/bench/smoke.sh
#
# It runs tests/bench/run-bench.sh with tiny settings (1-2 s runs, a few
# clients, 300 idle sessions) on free 127.0.0.1 ports, with both lockbench
# drivers, and checks every JSON line: present, no errors, no violations,
# ops > 0, W2 fairness fields, W3 gap fields, W5 sessions all alive and the
# leader's CPU read, W6/W7/W8 fairness and max_holders fields (W7: at most
# 8), W3R's three restarts (one rolling restart, 10 s); then that table.sh
# turns the lines into a table with a row each; W9, an election of 4
# candidates and 4 observers, 2 resign and 2 kill rounds at a 2 s ttl
# (every round done, each figure measured); a W1 run over TLS with a
# token (BENCH_SECURE=1); and the Redis side of make bench-compare
# (run-redis.sh, lockbench --driver redis, benchfloor, compare.awk). The
# bench's binaries are linked into a temp dir, so the build dir's
# bench.jsonl (the last real sweep) is left alone. run-bench.sh stops
# every process it starts; the temp dir is removed on exit.
#
# Output: one line per test ("ok N - name (T ms)" / "not ok ..."), then
# "N passed, N failed". Exit status 0 if all passed.
set -u

build=${BATON_BUILD:?set BATON_BUILD to the build directory}
here=$(cd "$(dirname "$0")" && pwd)
for f in batond batonctl lockbench benchfloor; do
    if [ ! -x "$build/$f" ]; then
        echo "not ok 1 - $build/$f is missing (build it first)"
        echo "0 passed, 1 failed"
        exit 1
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-bench-smoke.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
for f in batond batonctl lockbench benchfloor; do ln -s "$(cd "$build" && pwd)/$f" "$tmp/$f"; done

n=0
passed=0
failed=0
ms() { date +%s%3N; }

# report NAME T0 OK [DETAIL]
report() {
    local name=$1 t0=$2 ok=$3 detail=${4:-}
    n=$((n + 1))
    if [ "$ok" = 1 ]; then
        echo "ok $n - $name ($(($(ms) - t0)) ms)"
        passed=$((passed + 1))
    else
        echo "not ok $n - $name ($(($(ms) - t0)) ms)${detail:+: $detail}"
        failed=$((failed + 1))
    fi
}

# free_base, port_busy
. "$here/lib.sh"

# The raw value of "key" in a JSON line ("" if absent); see jsonl.awk.
field() {
    local prog="$tmp/field.awk"
    [ -f "$prog" ] || { cat "$here/jsonl.awk"; echo '{ print jget($0, k) }'; } >"$prog"
    printf '%s\n' "$1" | awk -v k="$2" -f "$prog"
}

# Run run-bench.sh with the given environment settings; its lines go to
# $tmp/bench.jsonl (replaced), its stderr to $tmp/run.err.
bench() {
    local base
    base=$(free_base) || return 1
    env BENCH_PORT_BASE="$base" "$@" \
        "$here/run-bench.sh" "$tmp" 2 >"$tmp/run.out" 2>"$tmp/run.err"
}

# check_line NAME LINE: a line that says the run went well.
check_line() {
    local name=$1 line=$2 t0=$3 err="" w
    w=$(field "$line" workload)
    if [ -z "$line" ]; then
        err="no JSON line"
    elif [ "$(field "$line" errors)" != 0 ]; then
        err="errors $(field "$line" errors)"
    elif [ "$w" != W5 ] && [ "$(field "$line" violations)" != 0 ]; then
        err="violations $(field "$line" violations)"
    elif [ "$w" != W5 ] && ! awk -v v="$(field "$line" ops)" 'BEGIN { exit !(v > 0) }'; then
        err="no ops"
    elif [ "$w" = W2 ] && { [ -z "$(field "$line" jain)" ] || [ "$(field "$line" max_streak)" = null ]; }; then
        err="no fairness fields"
    elif { [ "$w" = W6 ] || [ "$w" = W7 ] || [ "$w" = W8 ]; } &&
        { [ -z "$(field "$line" jain)" ] || [ "$(field "$line" max_streak)" = null ] ||
            [ -z "$(field "$line" max_holders)" ]; }; then
        err="no fairness or max_holders fields"
    elif [ "$w" = W7 ] && [ "$(field "$line" max_holders)" -gt 8 ]; then
        err="max_holders $(field "$line" max_holders) on a semaphore of 8"
    elif [ "$w" = W3 ] && [ -z "$(field "$line" gap_ms)" ]; then
        err="no gap_ms"
    elif [ "$w" = W5 ] && { [ "$(field "$line" sessions_alive)" != "$(field "$line" clients)" ] ||
        [ "$(field "$line" sessions)" != "$(field "$line" clients)" ]; }; then
        err="sessions $(field "$line" sessions), alive $(field "$line" sessions_alive)"
    elif [ "$w" = W5 ] && ! awk -v v="$(field "$line" leader_cpu_pct)" 'BEGIN { exit !(v ~ /^[0-9.]+$/) }'; then
        err="leader_cpu_pct not read"
    fi
    report "$name" "$t0" "$([ -z "$err" ] && echo 1 || echo 0)" "$err${err:+ in: $line}"
}

# The line of workload W with `clients` N from $tmp/bench.jsonl.
line_of() {
    grep "\"workload\":\"$1\",\"clients\":$2," "$tmp/bench.jsonl" | tail -n 1
}

t0=$(ms)
if bench BENCH_WORKLOADS="W1 W2 W3 W5 W6 W7 W8" BENCH_W1_CLIENTS="1 8" BENCH_W2_CLIENTS="2 8" \
    BENCH_W3_CLIENTS=4 BENCH_W5_CLIENTS=300 BENCH_W5_SECONDS=2 BENCH_W6_CLIENTS=8 \
    BENCH_W7_CLIENTS=12 BENCH_W8_CLIENTS=8; then
    report "run-bench.sh W1 W2 W3 W5 W6 W7 W8 (async driver) exits 0" "$t0" 1
else
    report "run-bench.sh W1 W2 W3 W5 W6 W7 W8 (async driver) exits 0" "$t0" 0 "$(tail -n 3 "$tmp/run.err" | tr '\n' ' ')"
fi
cp "$tmp/bench.jsonl" "$tmp/async.jsonl" 2>/dev/null
for spec in "W1 1" "W1 8" "W2 2" "W2 8" "W3 4" "W5 300" "W6 8" "W7 12" "W8 8"; do
    t0=$(ms)
    set -- $spec
    check_line "async $1 with $2 clients: line, no errors, no violations" "$(line_of "$1" "$2")" "$t0"
done
t0=$(ms)
rows=$("$here/table.sh" "$tmp/async.jsonl" 2>/dev/null | grep -c '^| W[0-9]')
report "table.sh makes one row per line" "$t0" "$([ "$rows" = 9 ] && echo 1 || echo 0)" "$rows rows"

t0=$(ms)
# W6/W7/W8 hold 1 ms here, so that holders overlap in lockbench and its
# holder counts have something to check.
if bench BENCH_DRIVER=blocking BENCH_WORKLOADS="W1 W2 W6 W7 W8" BENCH_W1_CLIENTS=4 \
    BENCH_W2_CLIENTS=4 BENCH_W6_CLIENTS=4 BENCH_W7_CLIENTS=12 BENCH_W8_CLIENTS=6 \
    BENCH_MODES_HOLD_MS=1; then
    report "run-bench.sh W1 W2 W6 W7 W8 (blocking driver) exits 0" "$t0" 1
else
    report "run-bench.sh W1 W2 W6 W7 W8 (blocking driver) exits 0" "$t0" 0 "$(tail -n 3 "$tmp/run.err" | tr '\n' ' ')"
fi
for spec in "W1 4" "W2 4" "W6 4" "W7 12" "W8 6"; do
    t0=$(ms)
    set -- $spec
    check_line "blocking $1 with $2 clients: line, no errors, no violations" "$(line_of "$1" "$2")" "$t0"
done
t0=$(ms)
grep -q "blocking driver used" "$tmp/run.err"
report "the blocking driver reports its CPU" "$t0" "$([ $? = 0 ] && echo 1 || echo 0)"

# W3R: one round of rolling restarts (SIGTERM, the leader hands over) in a
# 10 s run (room for three restarts under SAN=address on a busy machine):
# every restart done, no client error.
t0=$(ms)
base=$(free_base)
if [ -n "$base" ] && env BENCH_PORT_BASE="$base" BENCH_WORKLOADS=W3R BENCH_W3_CLIENTS=4 \
    BENCH_W3R_ROUNDS=1 "$here/run-bench.sh" "$tmp" 10 >"$tmp/run.out" 2>"$tmp/run.err"; then
    report "run-bench.sh W3R (one rolling restart) exits 0" "$t0" 1
else
    report "run-bench.sh W3R (one rolling restart) exits 0" "$t0" 0 "$(tail -n 3 "$tmp/run.err" | tr '\n' ' ')"
fi
t0=$(ms)
line=$(grep '"kill":"rolling"' "$tmp/bench.jsonl" | tail -n 1)
if [ -n "$line" ] && [ "$(field "$line" restarts)" != 3 ]; then
    report "W3R: 3 restarts" "$t0" 0 "restarts $(field "$line" restarts)"
else
    check_line "W3R with 4 clients: line, 3 restarts, no errors, no violations" "$line" "$t0"
fi

# W9: an election, two rounds of each kind (resign, SIGKILL and the lease
# of 2 s, room for a sanitizer build on a busy machine), four candidates
# (two victim processes) and four observers.
t0=$(ms)
if bench BENCH_WORKLOADS=W9 BENCH_W9_CANDIDATES=4 BENCH_W9_OBSERVERS=4 BENCH_W9_ROUNDS=2 \
    BENCH_W9_TTL_MS=2000 BENCH_W9_TIMEOUT=60; then
    report "run-bench.sh W9 (an election, 2 rounds of each kind) exits 0" "$t0" 1
else
    report "run-bench.sh W9 (an election, 2 rounds of each kind) exits 0" "$t0" 0 "$(tail -n 3 "$tmp/run.err" | tr '\n' ' ')"
fi
t0=$(ms)
line=$(line_of W9 4)
err=""
for f in resign_lead resign_observed kill_lead kill_observed expiry_lead expiry_observed; do
    for p in p50 p99; do
        v=$(field "$line" "${f}_${p}_ms")
        awk -v v="$v" 'BEGIN { exit !(v ~ /^-?[0-9]+(\.[0-9]+)?$/) }' || err="$err ${f}_${p}_ms '$v'"
    done
done
[ "$(field "$line" resign_rounds)" = 2 ] && [ "$(field "$line" kill_rounds)" = 2 ] ||
    err="$err rounds $(field "$line" resign_rounds)/$(field "$line" kill_rounds)"
if [ -n "$line" ] && [ -n "$err" ]; then
    report "W9: 2 rounds of each kind, every figure measured" "$t0" 0 "$err in: $line"
else
    check_line "W9 with 4 observers: line, 2+2 rounds, no errors, no violations" "$line" "$t0"
fi
t0=$(ms)
rows=$("$here/table.sh" "$tmp/bench.jsonl" 2>/dev/null | grep -c '^| W9 election | 4 observers')
report "table.sh makes a W9 row" "$t0" "$([ "$rows" = 1 ] && echo 1 || echo 0)" "$rows rows"

# The same tools over TLS with a token (BENCH_SECURE=1).
t0=$(ms)
if bench BENCH_SECURE=1 BENCH_WORKLOADS="W1" BENCH_W1_CLIENTS=4 && grep -q "secure: TLS" "$tmp/run.err"; then
    report "run-bench.sh W1 over TLS with a token (BENCH_SECURE=1) exits 0" "$t0" 1
else
    report "run-bench.sh W1 over TLS with a token (BENCH_SECURE=1) exits 0" "$t0" 0 "$(tail -n 3 "$tmp/run.err" | tr '\n' ' ')"
fi
t0=$(ms)
check_line "secure W1 with 4 clients: line, no errors, no violations" "$(line_of W1 4)" "$t0"

# Redis (make bench-compare's other side): lockbench's redis driver on
# run-redis.sh's own redis-servers, durable and default; benchfloor; and
# compare.awk's table and W2 limit from those lines and baton's above.
t0=$(ms)
if BENCH_OUT="$tmp/redis.jsonl" BENCH_W1_CLIENTS=2 BENCH_W2_CLIENTS="2 8" \
    "$here/run-redis.sh" "$tmp" 1 durable >"$tmp/run.out" 2>"$tmp/run.err" &&
    BENCH_OUT="$tmp/redis.jsonl" BENCH_WORKLOADS=W1 BENCH_W1_CLIENTS=2 \
        "$here/run-redis.sh" "$tmp" 1 default >>"$tmp/run.out" 2>>"$tmp/run.err"; then
    report "run-redis.sh W1 W2 durable, W1 default exits 0" "$t0" 1
else
    report "run-redis.sh W1 W2 durable, W1 default exits 0" "$t0" 0 "$(tail -n 3 "$tmp/run.err" | tr '\n' ' ')"
fi
for spec in "true W1 2" "true W2 2" "true W2 8" "false W1 2"; do
    t0=$(ms)
    set -- $spec
    line=$(grep "\"system\":\"redis\",\"durable\":$1,\"workload\":\"$2\",\"clients\":$3," "$tmp/redis.jsonl" 2>/dev/null | tail -n 1)
    check_line "redis (durable $1) $2 with $3 clients: line, no errors, no violations" "$line" "$t0"
done
t0=$(ms)
"$build/benchfloor" --dir "$tmp" --writes 50 --pings 200 >"$tmp/floor.jsonl" 2>"$tmp/run.err"
line=$(head -n 1 "$tmp/floor.jsonl")
ok=0
awk -v f="$(field "$line" fsync_p50_us)" -v f3="$(field "$line" fsync3_p50_us)" \
    -v r="$(field "$line" rtt_p50_us)" 'BEGIN { exit !(f > 0 && f3 > 0 && r > 0) }' && ok=1
report "benchfloor prints the fsync, fsync3 and round-trip medians" "$t0" "$ok" "$line $(head -c 200 "$tmp/run.err")"
t0=$(ms)
cat "$tmp/floor.jsonl" "$tmp/async.jsonl" "$tmp/redis.jsonl" >"$tmp/compare.jsonl" 2>/dev/null
out=$(awk -f "$here/jsonl.awk" -f "$here/compare.awk" "$tmp/compare.jsonl" 2>&1)
ok=0
printf '%s\n' "$out" | grep -q '^| W2, 2 clients | grants/s.* | [0-9]' &&
    printf '%s\n' "$out" | grep -q '^W2 limit: fsync p50 ' &&
    printf '%s\n' "$out" | grep -q '^W2, 2 clients: [0-9]* grants/s = ' &&
    printf '%s\n' "$out" | grep -q '^With the three nodes writing at once ' && ok=1
report "compare.awk: the ratios and W2 against its limit" "$t0" "$ok" "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
