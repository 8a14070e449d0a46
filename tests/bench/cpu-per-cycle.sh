#!/usr/bin/env bash
# cpu-per-cycle.sh -- where a W1 cycle's CPU goes, per node (docs/performance.md,
# "CPU per cycle").
#
#   tests/bench/cpu-per-cycle.sh BUILD_DIR [SECONDS] [ROUNDS]
#
# Runs W1 (clients $CLIENTS, default "1 64") on fresh 3-node clusters through
# run-bench.sh with BENCH_CPU=1, ROUNDS times (default 1), and prints, for each
# run, cycles/s, 1-client acquire p50, and for the leader and both followers:
# CPU-microseconds per cycle (utime+stime over the run / cycles) and system
# calls per cycle (perf stat -e raw_syscalls:sys_enter). With PERF_DIR=DIR it
# also records every node with `perf record -g` (DIR/W1-CLIENTS-1-ROLE.data,
# ROLE leader, f1, f2) and prints each one's top symbols
# (`perf report --no-children --sort symbol`). Needs perf (Debian linux-perf)
# and access to tracepoints (root, or kernel.perf_event_paranoid <= -1).
#
# The JSON lines go to BUILD_DIR/bench.jsonl as with run-bench.sh; the table to
# stdout. Nothing is asserted: this is a measurement.
set -u

build=${1:?usage: cpu-per-cycle.sh BUILD_DIR [SECONDS] [ROUNDS]}
secs=${2:-10}
rounds=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
command -v perf >/dev/null || { echo "cpu-per-cycle: perf not found (apt-get install linux-perf)" >&2; exit 1; }

all=$(mktemp) || exit 1
trap 'rm -f "$all"' EXIT
for ((r = 0; r < rounds; r++)); do
    BENCH_CPU=1 BENCH_PERF_DIR=${PERF_DIR:-} BENCH_WORKLOADS=W1 \
        BENCH_W1_CLIENTS=${CLIENTS:-1 64} "$here/run-bench.sh" "$build" "$secs" >>"$all" || exit 1
done

# One row per run: the fields in a fixed order.
awk '
function f(k,   m) {
    if (match($0, "\"" k "\":[-0-9.]+")) return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3)
    return "-"
}
BEGIN {
    printf "%-8s %10s %8s | %-21s | %-21s | %-21s\n", "clients", "cycles/s", "acq p50",
        "leader us / sys", "follower1 us / sys", "follower2 us / sys"
}
{
    printf "%-8s %10s %8s | %9s / %9s | %9s / %9s | %9s / %9s\n", f("clients"), f("ops_per_s"),
        f("acq_p50_us"), f("cpu_us_leader"), f("sys_leader"), f("cpu_us_f1"), f("sys_f1"),
        f("cpu_us_f2"), f("sys_f2")
}' "$all"

if [ -n "${PERF_DIR:-}" ]; then
    for d in "$PERF_DIR"/*.data; do
        [ -f "$d" ] || continue
        echo
        echo "== $(basename "$d" .data): top symbols (perf report --no-children --sort symbol)"
        perf report -i "$d" --no-children --sort symbol --stdio 2>/dev/null |
            grep -E '^ +[0-9.]+%' | head -n "${TOP:-25}"
    done
fi
