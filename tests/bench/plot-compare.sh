#!/usr/bin/env bash
# plot-compare.sh -- the chart of docs/performance.md's "Compared with
# Redis": every figure of one make bench-compare run as the ratio
# baton / Redis, against durable Redis and default Redis, on a log scale.
# This is what `make bench-compare-plot` runs.
#
#   tests/bench/plot-compare.sh BENCH_COMPARE_JSONL OUT.png
#
# The ratios come from compare.awk (out=dat), so the chart and the table
# of compare.sh agree. Rates: above 1 is baton ahead; latencies and max
# streak: below 1 is baton ahead; Jain: above 1 is baton fairer.
#
# Exit status: 0 with OUT.png written; 1 if the input has no run or gnuplot
# fails; 2 on a usage error.
set -u

in=${1:-}
out=${2:-}
if [ -z "$in" ] || [ -z "$out" ] || [ $# -ne 2 ]; then
    echo "usage: plot-compare.sh BENCH_COMPARE_JSONL OUT.png" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
[ -r "$in" ] || { echo "plot-compare.sh: cannot read $in (run make bench-compare first)" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 || { echo "plot-compare.sh: gnuplot not found (make bench-compare-plot installs it)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-plot.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
dat=$tmp/ratios.dat
awk -v out=dat -f "$here/jsonl.awk" -f "$here/compare.awk" "$in" >"$dat"
if ! awk '$(NF - 1) != "-" || $NF != "-" { ok = 1 } END { exit !ok }' "$dat"; then
    echo "plot-compare.sh: no baton and Redis runs in $in" >&2
    exit 1
fi
when=$(sed -n 's/^{"system":"run","date":"\([^"]*\)".*/\1/p' "$in" | tail -n 1)

term="pngcairo size 1000,560 font 'sans,10'"
gnuplot -e "set terminal pngcairo" </dev/null >/dev/null 2>&1 || term="png size 1000,560"

gnuplot <<EOF || { echo "plot-compare.sh: gnuplot failed" >&2; exit 1; }
set terminal $term
set output '$out'
set title "baton / Redis lock recipe, one make bench-compare run${when:+ ($when)}: rates and Jain above 1, waits and streaks below 1 favour baton"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set logscale y 10
set yrange [0.001:1000]
set ylabel 'baton / Redis (log scale)'
set xtics rotate by -35 left
set grid ytics
set key top left
set datafile missing '-'
plot '$dat' using 3:xtic(2) title 'baton / Redis durable (appendfsync always)', \
     '' using 4 title 'baton / Redis default (no fsync)', \
     1 with lines lc rgb 'black' dt 2 notitle
EOF
[ -s "$out" ] || { echo "plot-compare.sh: $out was not written" >&2; exit 1; }
echo "plot-compare.sh: wrote $out from $in" >&2
