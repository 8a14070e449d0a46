#!/usr/bin/env bash
# snapshot-p99.sh -- "no stalls from housekeeping": W1's p99 acquire wait
# while the nodes take raft snapshots of a big state, against the same run
# with snapshots off (docs/performance.md, "Snapshots under load").
#
#   tests/bench/snapshot-p99.sh BUILD_DIR [CLIENTS] [SECONDS] [ROUNDS]
#
# Each run gets a FRESH 3-node cluster (data on disk, as run-bench.sh),
# filled with $SNAP_LOCKS held locks (default 100000: lockbench W4, 1000
# sessions, which keeps them held), then lockbench W1 with CLIENTS clients
# (default 16) for SECONDS (default 10). Two kinds of run, back to back:
#
#   on   batond --snapshot-threshold $SNAP_THRESHOLD (default 2048): every
#        node snapshots the whole state (2 MB and more) every THRESHOLD
#        entries, several times during W1
#   off  --snapshot-threshold 100000000: no snapshot during the run
#
# ROUNDS (default 1) repeats the pair, alternating off/on, so that the
# machine's noise hits both. Every node serves /metrics (--metrics-addr);
# the snapshots each node took during W1 are the difference of its
# baton_snapshots_total counter before and after, and a run "on" whose leader
# took fewer than 3 is reported (raise SECONDS or lower the threshold).
#
# Output: one line per run (p50, p99, max acquire wait, ops/s, errors,
# violations, snapshots per node), the W1 JSON lines in
# BUILD_DIR/snapshot-p99.jsonl (with "snapshots":"on"/"off" in front), and
# at the end the median p99 of each kind and on/off. Measures; the only
# failures are a run that could not be made (exit 1).
#
# Environment: SNAP_THRESHOLD (2048), SNAP_LOCKS (100000), SNAP_EXTRA_ARGS
# (more batond flags for both kinds), BENCH_PORT_BASE (default 27400: client
# ports BASE+1.., raft BASE+101.., metrics BASE+201..), BENCH_TMPDIR (as
# run-bench.sh), BATON_LOG_LEVEL (default warn), SNAP_KEEP_LOGS=DIR (copy
# the nodes' logs of every run there).
set -u

build=${1:?usage: snapshot-p99.sh BUILD_DIR [CLIENTS] [SECONDS] [ROUNDS]}
clients=${2:-16}
secs=${3:-10}
rounds=${4:-1}
threshold=${SNAP_THRESHOLD:-2048}
locks=${SNAP_LOCKS:-100000}
off_threshold=100000000
batond=$build/batond
batonctl=$build/batonctl
lockbench=$build/lockbench
base=${BENCH_PORT_BASE:-27400}
level=${BATON_LOG_LEVEL:-warn}
stop_timeout=10

say() { echo "snapshot-p99: $*" >&2; }
die() { echo "snapshot-p99: $*" >&2; exit 1; }

for f in "$batond" "$batonctl" "$lockbench"; do
    [ -x "$f" ] || die "$f not found; build it first (make B=$build all $build/lockbench)"
done
command -v curl >/dev/null || die "curl is needed to read /metrics"

members="1=127.0.0.1:$((base + 101))/127.0.0.1:$((base + 1))"
members+=",2=127.0.0.1:$((base + 102))/127.0.0.1:$((base + 2))"
members+=",3=127.0.0.1:$((base + 103))/127.0.0.1:$((base + 3))"
endpoints="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
ulimit -n "$(ulimit -Hn)" 2>/dev/null

parent=${BENCH_TMPDIR:-/var/tmp}
[ -d "$parent" ] && [ "$(stat -f -c %T "$parent")" != tmpfs ] || parent=$build
root=$(mktemp -d "$parent/baton-snapp99.XXXXXX") || die "cannot create a temp dir"
out_file=$build/snapshot-p99.jsonl
: >"$out_file" || die "cannot write $out_file"

pids=(0 0 0 0)
fill_pid=0
data=""
# alive, nodes_running, nodes_stop
. "$(dirname "$0")/../../server/nodes.sh"

stop_run() {
    if [ "$fill_pid" != 0 ] && alive "$fill_pid"; then
        kill -TERM "$fill_pid" 2>/dev/null
        wait "$fill_pid" 2>/dev/null
    fi
    fill_pid=0
    nodes_stop
    if [ -n "$data" ] && [ -n "${SNAP_KEEP_LOGS:-}" ]; then
        mkdir -p "$SNAP_KEEP_LOGS"
        for i in 1 2 3; do cp "$data/node$i.log" "$SNAP_KEEP_LOGS/$(basename "$data")-node$i.log"; done
    fi
    [ -n "$data" ] && rm -rf "$data"
    data=""
}

on_exit() {
    trap '' INT TERM HUP
    stop_run
    rm -rf "$root"
}
trap on_exit EXIT
trap 'say interrupted; exit 130' INT TERM HUP

# baton_snapshots of node $1 ("" if its /metrics does not answer).
snapshots_of() {
    curl -s --max-time 2 "http://127.0.0.1:$((base + 200 + $1))/metrics" |
        awk '$1 == "baton_snapshots_total" { print $2 }'
}

# CPU ticks (utime + stime) used so far by process $1's main thread (the
# loop) and by all its threads, as "MAIN ALL".
cpu_ticks() {
    local main all
    main=$(sed 's/.*) //' "/proc/$1/task/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }')
    all=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }')
    echo "${main:-0} ${all:-0}"
}

# The id of the leader (empty if none).
leader_id() {
    "$batonctl" -e "$endpoints" --timeout 1000 status -o json 2>/dev/null |
        grep -o '{"id":[0-9]*,[^{}]*"role":"leader"' | sed -n 's/^{"id":\([0-9]*\),.*/\1/p' |
        head -n 1
}

# Start a fresh cluster with --snapshot-threshold $2 in $root/$1, wait for a
# leader, and fill it with $locks held locks.
start_run() {
    local tag=$1 thr=$2 i n
    data=$root/$tag
    for i in 1 2 3; do
        mkdir -p "$data/node$i"
        # shellcheck disable=SC2086 # SNAP_EXTRA_ARGS is split on purpose
        setsid "$batond" --id "$i" --data "$data/node$i" --cluster "$members" \
            --log-level "$level" --snapshot-threshold "$thr" \
            --metrics-addr "127.0.0.1:$((base + 200 + i))" ${SNAP_EXTRA_ARGS:-} \
            </dev/null >/dev/null 2>>"$data/node$i.log" &
        pids[$i]=$!
    done
    for ((n = 0; n < 100; n++)); do
        [ -n "$(leader_id)" ] && break
        sleep 0.2
    done
    [ "$n" -lt 100 ] || { say "$tag: no leader within 20 s"; return 1; }
    "$lockbench" --endpoints "$endpoints" --workload W4 --sessions 1000 --locks "$locks" \
        --clients 1 --seconds 300 --hold-ms 3600000 >"$data/fill.json" 2>"$data/fill.err" &
    fill_pid=$!
    for ((n = 0; n < 3000; n++)); do
        [ -s "$data/fill.json" ] && break
        alive "$fill_pid" || { say "$tag: W4 ended early: $(tail -n 3 "$data/fill.err")"; return 1; }
        sleep 0.1
    done
    [ -s "$data/fill.json" ] || { say "$tag: the locks were not taken within 300 s"; return 1; }
    grep -q "\"ops\":$locks," "$data/fill.json" ||
        { say "$tag: the fill took fewer locks: $(cat "$data/fill.json")"; return 1; }
    # Let the followers catch up and the snapshots of the fill end.
    sleep 3
}

# The value of JSON field $2 in line $1.
jfield() {
    printf '%s\n' "$1" | grep -o "\"$2\":[^,}]*" | head -n 1 | cut -d: -f2
}

p99_on=()
p99_off=()

# One run of kind $1 (on/off), number $2.
one_run() {
    local kind=$1 k=$2 thr i line before=() after=() snaps="" leader c0=() c1=() cpu=""
    [ "$kind" = on ] && thr=$threshold || thr=$off_threshold
    start_run "$kind$k" "$thr" || { stop_run; return 1; }
    leader=$(leader_id)
    for i in 1 2 3; do
        before[$i]=$(snapshots_of "$i")
        c0[$i]=$(cpu_ticks "${pids[$i]}")
    done
    line=$("$lockbench" --endpoints "$endpoints" --workload W1 --clients "$clients" \
        --seconds "$secs" 2>"$data/w1.err" | head -n 1)
    for i in 1 2 3; do
        after[$i]=$(snapshots_of "$i")
        c1[$i]=$(cpu_ticks "${pids[$i]}")
        cpu+="${cpu:+ / }$(awk -v a="${c0[$i]}" -v b="${c1[$i]}" -v hz="$(getconf CLK_TCK)" -v s="$secs" '
            BEGIN { split(a, x, " "); split(b, y, " ")
                    printf "%.0f+%.0f", 100 * (y[1] - x[1]) / hz / s, 100 * ((y[2] - x[2]) - (y[1] - x[1])) / hz / s }')"
        snaps+="${snaps:+ / }$(( ${after[$i]:-0} - ${before[$i]:-0} ))"
    done
    [ "$(leader_id)" = "$leader" ] || say "$kind$k: the leader changed during W1"
    stop_run
    [ -n "$line" ] || { say "$kind$k: W1 printed nothing"; return 1; }
    printf '{"snapshots":"%s","snapshot_threshold":%s,"locks_held":%s,%s\n' "$kind" "$thr" \
        "$locks" "${line#\{}" >>"$out_file"
    printf '%-3s %d: ops/s %8s  acquire p50 %7s us  p99 %8s us  max %9s us  errors %s' \
        "$kind" "$k" "$(jfield "$line" ops_per_s)" "$(jfield "$line" acq_p50_us)" \
        "$(jfield "$line" acq_p99_us)" "$(jfield "$line" acq_max_us)" "$(jfield "$line" errors)"
    printf '  violations %s\n      snapshots during W1 (nodes 1/2/3, leader %s): %s;' \
        "$(jfield "$line" violations)" "$leader" "$snaps"
    printf ' CPU %% of one core, loop+other threads: %s\n' "$cpu"
    if [ "$kind" = on ]; then
        p99_on+=("$(jfield "$line" acq_p99_us)")
        if [ -z "$leader" ] || [ "$(( ${after[$leader]:-0} - ${before[$leader]:-0} ))" -lt 3 ]; then
            say "on$k: the leader (${leader:-unknown}) took fewer than 3 snapshots during W1"
        fi
    else
        p99_off+=("$(jfield "$line" acq_p99_us)")
    fi
}

median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

say "W1 clients=$clients seconds=$secs over $locks held locks; threshold on $threshold," \
    "off $off_threshold; $rounds round(s)"
for ((r = 1; r <= rounds; r++)); do
    if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
    for kind in $order; do one_run "$kind" "$r" || die "run $kind$r failed"; done
done
on=$(median "${p99_on[@]}")
off=$(median "${p99_off[@]}")
awk -v on="$on" -v off="$off" 'BEGIN {
    printf "W1 p99 acquire: snapshots on %.1f us, off %.1f us, on/off %.2f\n", on, off, on / off }'
