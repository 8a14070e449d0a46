#!/usr/bin/env bash
# plot.sh -- the chart of docs/performance.md: W2 (one hot lock) grants per second and
# p99 acquire wait against the number of contenders, from lockbench's JSON
# lines. This is what `make bench-plot` runs.
#
#   tests/bench/plot.sh BENCH_JSONL OUT.png
#
# BENCH_JSONL is what run-bench.sh writes (BUILD_DIR/bench.jsonl). Its W2
# lines become a data file (awk, tests/bench/jsonl.awk), one row per number
# of clients (the last line wins if a count was run twice), and gnuplot
# draws grants/s on the left axis and p99 wait (ms) on the right one, with
# a log x axis. The hold time of the runs is taken from BENCH_W2_HOLD_MS
# (default 0) for the title only.
#
# Exit status: 0 with OUT.png written; 1 if the input has no W2 line or
# gnuplot fails; 2 on a usage error.
set -u

in=${1:-}
out=${2:-}
if [ -z "$in" ] || [ -z "$out" ] || [ $# -ne 2 ]; then
    echo "usage: plot.sh BENCH_JSONL OUT.png" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
[ -r "$in" ] || { echo "plot.sh: cannot read $in (run make bench first)" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 || { echo "plot.sh: gnuplot not found (make bench-plot installs it)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-plot.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
dat=$tmp/w2.dat

# clients  grants/s  p99 wait (ms), sorted by clients. The program goes
# into one file after the functions of jsonl.awk.
cat "$here/jsonl.awk" - >"$tmp/w2.awk" <<'EOF'
jget($0, "workload") == "W2" {
    n = jget($0, "clients") + 0
    rate[n] = jget($0, "ops_per_s")
    p99[n] = jget($0, "acq_p99_us") / 1000.0
}
END { for (n in rate) printf "%d %s %.3f\n", n, rate[n], p99[n] }
EOF
awk -f "$tmp/w2.awk" "$in" | sort -n >"$dat"
if [ ! -s "$dat" ]; then
    echo "plot.sh: no W2 line in $in" >&2
    exit 1
fi

# pngcairo draws smoother lines; the plain png terminal (libgd) will do.
term="pngcairo size 900,540 font 'sans,11'"
gnuplot -e "set terminal pngcairo" </dev/null >/dev/null 2>&1 || term="png size 900,540"
hold=${BENCH_W2_HOLD_MS:-0}

gnuplot <<EOF || { echo "plot.sh: gnuplot failed" >&2; exit 1; }
set terminal $term
set output '$out'
set title "baton W2: one hot lock, hold ${hold} ms, 3 nodes with fsync"
set xlabel 'contending clients (log scale)'
set logscale x 2
set xtics (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
set ylabel 'grants per second'
set y2label 'p99 acquire wait (ms)'
set yrange [0:*]
set y2range [0:*]
set ytics nomirror
set y2tics
set grid xtics ytics
set offsets graph 0.04, graph 0.04, 0, 0
set key below
set datafile separator ' '
plot '$dat' using 1:2 axes x1y1 with linespoints lw 2 pt 7 title 'grants/s (left)', \
     '$dat' using 1:3 axes x1y2 with linespoints lw 2 pt 5 dt 2 title 'p99 wait, ms (right)'
EOF
[ -s "$out" ] || { echo "plot.sh: $out was not written" >&2; exit 1; }
echo "plot.sh: wrote $out from $(wc -l <"$dat") W2 runs in $in" >&2
