#!/usr/bin/env bash
# handoff-trace.sh -- the timeline of W2's hand-offs, stage by stage
# (docs/performance.md, "The limit of W2").
#
#   tests/bench/handoff-trace.sh BUILD_DIR [CLIENTS] [TRACE_SECONDS]
#
# Starts a fresh 3-node cluster on 127.0.0.1 (free ports, data under
# /var/tmp or $BENCH_TMPDIR, fsync on), runs lockbench's W2 (hold 0, 2
# clients unless CLIENTS says otherwise) against it, and after 2 s records
# TRACE_SECONDS (default 2) of the system calls of the leader's, both
# followers' and lockbench's loop threads, and of libraft's pool threads,
# with `perf trace` (one clock for all four processes). Then prints, for
# every stage of a hand-off, how many were seen, the median, the 90th
# percentile and the mean, in microseconds (tests/bench/handoff-trace.awk
# says how the stages are matched):
#
#   01 client sends -> leader reads          loopback, the leader's wake-up
#   02 leader reads -> AppendEntries sent    decode, batch, raft_apply
#   03 leader reads -> its log write submitted
#   04 leader's log write                    io_submit .. completion read
#   05 AppendEntries sent -> follower reads  loopback, the follower's wake-up
#   06 follower reads -> its log write submitted
#   07 follower's log write
#   08 follower's write done -> result sent
#   09 result sent -> leader reads           loopback, the leader's wake-up
#   10 leader waits for its own write after the first result
#   11 commit -> reply and push written      apply, effects, the writes
#   12 push written -> client reads          loopback, lockbench's wake-up
#   13 client reads -> next request sent
#   14 leader reads a request -> its reply/push written
#   15 one hand-off (push to push)
#
# perf trace slows every system call down (a few microseconds each): read
# the stages against each other and against the untraced rate lockbench
# prints, not as absolute costs. Needs perf (Debian linux-perf) and
# tracepoint access (root, or kernel.perf_event_paranoid <= -1). Every
# process started here is stopped by pid on exit.
set -u

build=${1:?usage: handoff-trace.sh BUILD_DIR [CLIENTS] [TRACE_SECONDS]}
clients=${2:-2}
tsecs=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
batond=$build/batond
batonctl=$build/batonctl
lockbench=$build/lockbench

say() { echo "handoff-trace: $*" >&2; }
die() { say "$*"; exit 1; }

command -v perf >/dev/null || die "perf not found (apt-get install linux-perf)"
for f in "$batond" "$batonctl" "$lockbench"; do
    [ -x "$f" ] || die "$f not found; build it first (make build/default/lockbench)"
done

# bench_parent, free_base
. "$here/lib.sh"
pids=(0 0 0 0)
# shellcheck disable=SC2034 # nodes.sh reads it: seconds between SIGTERM and SIGKILL
stop_timeout=10
# alive, nodes_stop
. "$here/../../server/nodes.sh"

parent=$(bench_parent "$build") || die "$build is tmpfs; set BENCH_TMPDIR"
root=$(mktemp -d "$parent/baton-handoff.XXXXXX") || die "cannot create a temp dir in $parent"
lb_pid=0
perf_pid=0
on_exit() {
    [ "$perf_pid" != 0 ] && kill -INT "$perf_pid" 2>/dev/null && wait "$perf_pid" 2>/dev/null
    [ "$lb_pid" != 0 ] && kill -TERM "$lb_pid" 2>/dev/null && wait "$lb_pid" 2>/dev/null
    nodes_stop
    rm -rf "$root"
}
trap on_exit EXIT
trap 'say interrupted; exit 130' INT TERM HUP

base=$(free_base) || die "no free ports for a cluster"
members="1=127.0.0.1:$((base + 101))/127.0.0.1:$((base + 1))"
members+=",2=127.0.0.1:$((base + 102))/127.0.0.1:$((base + 2))"
members+=",3=127.0.0.1:$((base + 103))/127.0.0.1:$((base + 3))"
endpoints="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
for i in 1 2 3; do
    setsid "$batond" --id "$i" --data "$root/node$i" --cluster "$members" --log-level warn \
        </dev/null >/dev/null 2>>"$root/node$i.log" &
    pids[i]=$!
done
leader=""
for ((k = 0; k < 100; k++)); do
    leader=$("$batonctl" -e "$endpoints" --timeout 1000 status -o json 2>/dev/null |
        grep -o '{"id":[0-9]*,[^{}]*"role":"leader"' |
        sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | head -n 1)
    [ -n "$leader" ] && break
    sleep 0.2
done
[ -n "$leader" ] || die "no leader within 20 s"
fol=()
for i in 1 2 3; do [ "$i" != "$leader" ] && fol+=("${pids[$i]}"); done
lp=${pids[$leader]}

secs=$(awk -v t="$tsecs" 'BEGIN { print int(t + 5) }')
"$lockbench" --endpoints "$endpoints" --workload W2 --clients "$clients" --seconds "$secs" \
    --hold-ms 0 >"$root/lb.out" &
lb_pid=$!
lbp=$lb_pid
sleep 2
perf trace -T -p "$lp,${fol[0]},${fol[1]},$lb_pid" \
    -e read,write,writev,sendto,io_submit,io_getevents,epoll_wait,futex \
    -o "$root/trace.txt" 2>/dev/null &
perf_pid=$!
sleep "$tsecs"
kill -INT "$perf_pid" 2>/dev/null
wait "$perf_pid" 2>/dev/null
perf_pid=0
# Which process each thread is (libraft's pool threads start on demand).
for p in "$lp" "${fol[@]}" "$lb_pid"; do
    for t in /proc/"$p"/task/*; do echo "$p ${t##*/}"; done
done >"$root/tasks.txt"
wait "$lb_pid"
lb_pid=0
say "lockbench over the whole run (the trace covers $tsecs s of it):"
cat "$root/lb.out"

grep -v 'continued\]' "$root/trace.txt" | sort -n -k1,1 |
    awk -v leader="$lp" -v f1="${fol[0]}" -v f2="${fol[1]}" -v lb="$lbp" \
        -v tasks="$root/tasks.txt" -f "$here/handoff-trace.awk" >"$root/stages.txt"
grep '^#' "$root/stages.txt"
grep -v '^#' "$root/stages.txt" | sort -t "$(printf '\t')" -k1,1 -k2,2n | awk -F '\t' '
function flush() {
    if (n == 0) return
    printf "%-52s %6d %7.1f %7.1f %7.1f\n", stage, n, v[int((n - 1) * 0.5) + 1],
        v[int((n - 1) * 0.9) + 1], sum / n
}
BEGIN { printf "%-52s %6s %7s %7s %7s\n", "stage (microseconds)", "n", "p50", "p90", "mean" }
$1 != stage { flush(); stage = $1; n = 0; sum = 0 }
{ v[++n] = $2; sum += $2 }
END { flush() }'
