#!/usr/bin/env bash
# compare.sh -- baton against the Redis lock people use today, from one run,
# and W2 against its limit on this machine. This is what
# `make bench-compare` executes (docs/performance.md, "Compared with Redis").
#
#   tests/bench/compare.sh BUILD_DIR [SECONDS]     (SECONDS defaults to 5)
#
# In order, each on fresh servers:
#   1. benchfloor: this machine's synchronous 4 KiB write and loopback round
#      trip, medians, on the filesystem the data goes to;
#   2. baton: run-bench.sh's W1 (1 and 64 clients) and W2 (2 and 256) on
#      fresh local 3-node clusters, exactly as make bench runs them;
#   3. Redis, durable (appendonly yes, appendfsync always): run-redis.sh;
#   4. Redis, default (no append-only file, no snapshots): run-redis.sh.
# Then it prints every JSON line, the table of the figures with the ratios
# baton / Redis (compare.awk), and W2's limit with each W2 rate as a
# fraction of it. A benchmark reports, it does not assert: the exit status
# is 0 whenever every run printed its line.
#
# BENCH_W1_CLIENTS, BENCH_W2_CLIENTS and the other variables of
# run-bench.sh and run-redis.sh apply to both systems.
#
# Output: on stdout (a first line "system":"run" gives the date, SECONDS,
# the cores and the kernel); the JSON lines also in BUILD_DIR/bench-compare.jsonl
# (make bench-compare-plot draws the chart from them). The last make bench
# sweep's BUILD_DIR/bench.jsonl is left alone.
set -u

build=${1:?usage: compare.sh BUILD_DIR [SECONDS]}
secs=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
out=$build/bench-compare.jsonl
export BENCH_WORKLOADS="W1 W2"
export BENCH_W1_CLIENTS=${BENCH_W1_CLIENTS:-1 64}
export BENCH_W2_CLIENTS=${BENCH_W2_CLIENTS:-2 256}

say() { echo "compare: $*" >&2; }

# bench_parent, free_base
. "$here/lib.sh"
parent=$(bench_parent "$build") || { say "$build is tmpfs; set BENCH_TMPDIR"; exit 1; }
# baton's cluster on ports nobody else uses right now (run-bench.sh's
# default 27000 may be a make bench of someone else on a shared machine).
if [ -z "${BENCH_PORT_BASE:-}" ]; then
    BENCH_PORT_BASE=$(free_base) || { say "no free ports for a cluster"; exit 1; }
    export BENCH_PORT_BASE
fi
for f in benchfloor lockbench batond batonctl; do
    [ -x "$build/$f" ] || { say "$build/$f not found; build it first (make bench-compare)"; exit 1; }
done

printf '{"system":"run","date":"%s","seconds":%s,"cores":%s,"kernel":"%s"}\n' \
    "$(date -u +%Y-%m-%dT%H:%MZ)" "$secs" "$(nproc)" "$(uname -r)" >"$out" || exit 1
rc=0
say "the floor: synchronous 4 KiB writes in $parent ($(stat -f -c %T "$parent")), loopback round trips"
"$build/benchfloor" --dir "$parent" >>"$out" || rc=1
say "baton: W1 ($BENCH_W1_CLIENTS clients) and W2 ($BENCH_W2_CLIENTS) on fresh 3-node clusters"
BENCH_OUT=/dev/null "$here/run-bench.sh" "$build" "$secs" >>"$out" || rc=1
for mode in durable default; do
    say "Redis, $mode"
    BENCH_OUT=/dev/null "$here/run-redis.sh" "$build" "$secs" "$mode" \
        >>"$out" || rc=1
done

cat "$out"
echo
awk -f "$here/jsonl.awk" -f "$here/compare.awk" "$out"
exit "$rc"
