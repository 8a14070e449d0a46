#!/usr/bin/env bash
# snapshot-stall.sh -- how long a raft snapshot of a big state stalls the
# leader (docs/performance.md, "What was changed for speed").
#
#   tests/bench/snapshot-stall.sh BUILD_DIR [LOCKS] [SNAPSHOTS]
#
# Starts a fresh 3-node cluster (data on disk, as run-bench.sh), fills it
# with LOCKS held locks (default 100000: lockbench W4, 1000 sessions, which
# keeps them held meanwhile), then runs a probe twice for the same time: a
# lockbench W1 with one client (acquire/release of its own lock, one
# request at a time), first alone, then while `batonctl snapshot` asks the
# leader for SNAPSHOTS snapshots (default 5), one every 1.5 s. A snapshot
# that runs on the leader's loop delays every request the loop has in hand
# by its length: the probe's acq_max_us shows it. Prints one line per
# probe and the time each `batonctl snapshot` took; measures, asserts
# nothing.
#
# Environment: BENCH_PORT_BASE (default 27300), BENCH_TMPDIR (as
# run-bench.sh), BATON_LOG_LEVEL (default warn).
set -u

build=${1:?usage: snapshot-stall.sh BUILD_DIR [LOCKS] [SNAPSHOTS]}
locks=${2:-100000}
snaps=${3:-5}
batond=$build/batond
batonctl=$build/batonctl
lockbench=$build/lockbench
base=${BENCH_PORT_BASE:-27300}
level=${BATON_LOG_LEVEL:-warn}
stop_timeout=10
probe_secs=$(awk -v n="$snaps" 'BEGIN { print n * 1.5 + 1 }')

say() { echo "snapshot-stall: $*" >&2; }
die() { echo "snapshot-stall: $*" >&2; exit 1; }

for f in "$batond" "$batonctl" "$lockbench"; do
    [ -x "$f" ] || die "$f not found; build it first (make B=$build all $build/lockbench)"
done

members="1=127.0.0.1:$((base + 101))/127.0.0.1:$((base + 1))"
members+=",2=127.0.0.1:$((base + 102))/127.0.0.1:$((base + 2))"
members+=",3=127.0.0.1:$((base + 103))/127.0.0.1:$((base + 3))"
endpoints="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
ulimit -n "$(ulimit -Hn)" 2>/dev/null

parent=${BENCH_TMPDIR:-/var/tmp}
[ -d "$parent" ] && [ "$(stat -f -c %T "$parent")" != tmpfs ] || parent=$build
root=$(mktemp -d "$parent/baton-snapstall.XXXXXX") || die "cannot create a temp dir"

pids=(0 0 0 0)
fill_pid=0
# alive, nodes_running, nodes_stop
. "$(dirname "$0")/../../server/nodes.sh"

on_exit() {
    trap '' INT TERM HUP
    if [ "$fill_pid" != 0 ] && alive "$fill_pid"; then
        kill -TERM "$fill_pid" 2>/dev/null
        wait "$fill_pid" 2>/dev/null
    fi
    nodes_stop
    rm -rf "$root"
}
trap on_exit EXIT
trap 'say interrupted; exit 130' INT TERM HUP

for i in 1 2 3; do
    mkdir -p "$root/node$i"
    setsid "$batond" --id "$i" --data "$root/node$i" --cluster "$members" \
        --log-level "$level" </dev/null >/dev/null 2>>"$root/node$i.log" &
    pids[$i]=$!
done
for ((n = 0; n < 100; n++)); do
    "$batonctl" -e "$endpoints" --timeout 1000 status -o json 2>/dev/null |
        grep -q '"role":"leader"' && break
    sleep 0.2
done
[ "$n" -lt 100 ] || die "no leader within 20 s"

say "filling $locks locks"
"$lockbench" --endpoints "$endpoints" --workload W4 --sessions 1000 --locks "$locks" \
    --clients 1 --seconds 300 --hold-ms 600000 >"$root/fill.json" 2>"$root/fill.err" &
fill_pid=$!
for ((n = 0; n < 3000; n++)); do
    [ -s "$root/fill.json" ] && break
    alive "$fill_pid" || die "lockbench W4 ended early: $(tail -n 3 "$root/fill.err")"
    sleep 0.1
done
[ -s "$root/fill.json" ] || die "the locks were not taken within 300 s"
say "locks taken: $(grep -o '"ops":[0-9]*' "$root/fill.json"), $(grep -o '"seconds":[0-9.]*' "$root/fill.json")"
# Let the followers catch up and the nodes' own snapshots of the fill end.
sleep 3

probe() {
    "$lockbench" --endpoints "$endpoints" --workload W1 --clients 1 --seconds "$probe_secs" \
        2>/dev/null | grep -o '"ops":[0-9]*\|"acq_p99_us":[0-9.]*\|"acq_max_us":[0-9.]*' |
        tr '\n' ' '
}

echo "probe alone:              $(probe)"
probe >"$root/probe2" &
probe_pid=$!
sleep 0.5
for ((k = 1; k <= snaps; k++)); do
    t0=$(date +%s%N)
    out=$("$batonctl" -e "$endpoints" --timeout 30000 snapshot 2>&1)
    t1=$(date +%s%N)
    echo "batonctl snapshot $k: $(( (t1 - t0) / 1000000 )) ms ($out)"
    sleep 1.5
done
wait "$probe_pid"
echo "probe during snapshots:   $(cat "$root/probe2")"
ls -l "$root"/node*/raft/snapshot-* 2>/dev/null | awk '{ s += $5; n++ } END { if (n) printf "snapshot files: %d, %.1f MB in all (LZ4)\n", n, s / 1e6 }'
