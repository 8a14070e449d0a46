#!/usr/bin/env bash
# table.sh -- print the table of benchmark figures (markdown) of docs/performance.md from
# lockbench's JSON lines. This is what `make bench-table` runs.
#
#   tests/bench/table.sh BENCH_JSONL
#
# One row per line of BENCH_JSONL (what run-bench.sh writes to
# BUILD_DIR/bench.jsonl), in the file's order: W1/W2/W3/W6/W7 with their rates,
# latencies (ms), fairness, errors and violations; W3 adds the longest gap;
# W6/W7 the share of shared grants and the most holders seen at once;
# W4 the time to take every lock and the servers' memory; W5 the leader's
# CPU while the sessions idle; W9 the next leader's wait after a resign and
# after a kill, and the last observer's. Paste the output under docs/performance.md "Figures".
#
# Exit status: 0, 1 if the file has no lockbench line, 2 on a usage error.
set -u

in=${1:-}
if [ -z "$in" ] || [ $# -ne 1 ]; then
    echo "usage: table.sh BENCH_JSONL" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
[ -r "$in" ] || { echo "table.sh: cannot read $in (run make bench first)" >&2; exit 1; }

awk -f "$here/jsonl.awk" -f "$here/table.awk" "$in"
