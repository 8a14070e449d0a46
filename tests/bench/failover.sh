#!/usr/bin/env bash
# failover.sh -- measure leader failover N times on one local 3-node cluster
# and print the distribution (docs/performance.md, "Failover").
#
#   tests/bench/failover.sh BUILD_DIR [ROUNDS] [kill|stop]
#   tests/bench/failover.sh BUILD_DIR SECONDS calm
#
# ROUNDS defaults to 10, the signal to kill. Each round runs lockbench W3
# (16 clients, the W1 loop) for FAILOVER_SECONDS; FAILOVER_WARMUP seconds
# into it the leader (found with `batonctl status -o json`) gets
#   kill  SIGKILL; once lockbench is done the node is started again;
#   stop  SIGSTOP, and SIGCONT FAILOVER_STOP_SECONDS later (a frozen
#         leader: its connections stay open and say nothing).
#   calm  no signal: lockbench W1 for SECONDS with FAILOVER_CLIENTS (default
#         64 here), then every node's raft term, candidacies and loop lag
#         (its metrics, --metrics-addr 127.0.0.1:BASE+201..203): elections
#         that nothing provoked, and the margin the election timeout keeps.
# Before the next round every node must answer and stand at the leader's
# applied index. Per round the script prints lockbench's gap_ms (the
# longest time in which no client completed a cycle), client_gap_max_ms
# (the longest any one client waited), its errors, and from the nodes' logs
# (info level) when the next leader was elected and when it served, in ms
# after the signal; at the end min / median / max of each. The JSON lines
# (one per round, lockbench's plus "signal", "round", "elected_ms",
# "serving_ms") go to BUILD_DIR/failover.jsonl, the logs to
# BUILD_DIR/failover-logs/.
#
# Environment:
#   FAILOVER_SECONDS       lockbench's run per round (default 4 for kill,
#                          FAILOVER_WARMUP + FAILOVER_STOP_SECONDS + 1.5 for stop)
#   FAILOVER_WARMUP        seconds before the signal (default 1.5)
#   FAILOVER_STOP_SECONDS  how long a stopped leader stays frozen (default 3)
#   FAILOVER_CLIENTS       default 16
#   BENCH_PORT_BASE        default 28800 (clients BASE+1..3, raft BASE+101..103)
#   BENCH_TMPDIR           parent of the data directory (default /var/tmp)
#   BENCH_BATOND_ARGS      extra batond flags for every node
#
# Exit status: 0 if every round ran and printed its line, 1 otherwise.
# Everything started here is stopped by pid on exit.
set -u

build=${1:?usage: failover.sh BUILD_DIR [ROUNDS] [kill|stop]}
rounds=${2:-10}
signal=${3:-kill}
batond=$build/batond
batonctl=$build/batonctl
lockbench=$build/lockbench
clients=${FAILOVER_CLIENTS:-16}
warmup=${FAILOVER_WARMUP:-1.5}
stop_secs=${FAILOVER_STOP_SECONDS:-3}
base=${BENCH_PORT_BASE:-28800}
stop_timeout=10

say() { echo "failover: $*" >&2; }
die() { echo "failover: $*" >&2; exit 1; }

for f in "$batond" "$batonctl" "$lockbench"; do
    [ -x "$f" ] || die "$f not found; build it first (make build/default/lockbench)"
done
case $signal in
    kill) secs=${FAILOVER_SECONDS:-4} ;;
    stop) secs=${FAILOVER_SECONDS:-$(awk -v w="$warmup" -v s="$stop_secs" 'BEGIN { print w + s + 1.5 }')} ;;
    calm) secs=$rounds; clients=${FAILOVER_CLIENTS:-64} ;;
    *) die "the signal must be kill or stop, not '$signal'" ;;
esac
case $rounds in '' | *[!0-9]*) die "ROUNDS must be a number" ;; esac

members="1=127.0.0.1:$((base + 101))/127.0.0.1:$((base + 1))"
members+=",2=127.0.0.1:$((base + 102))/127.0.0.1:$((base + 2))"
members+=",3=127.0.0.1:$((base + 103))/127.0.0.1:$((base + 3))"
endpoints="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"

for port in $((base + 1)) $((base + 2)) $((base + 3)) $((base + 101)) $((base + 102)) $((base + 103)); do
    if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "port $port on 127.0.0.1 is already in use (set BENCH_PORT_BASE)"
    fi
done

parent=${BENCH_TMPDIR:-/var/tmp}
[ -d "$parent" ] || parent=$build
root=$(mktemp -d "$parent/baton-failover.XXXXXX") || die "cannot create a temp dir in $parent"
data=$root
out_file=$build/failover.jsonl
logs_dir=$build/failover-logs
: >"$out_file" || die "cannot write $out_file"
rm -rf "$logs_dir"
mkdir -p "$logs_dir"

pids=(0 0 0 0)
lb_pid=0
stopped=0 # pid of a node left SIGSTOPped, to wake it before stopping it

. "$(dirname "$0")/../../server/nodes.sh"

on_exit() {
    local rc=$?
    trap '' INT TERM HUP
    [ "$stopped" != 0 ] && kill -CONT "$stopped" 2>/dev/null
    if [ "$lb_pid" != 0 ] && alive "$lb_pid"; then
        kill -TERM "$lb_pid" 2>/dev/null
        wait "$lb_pid" 2>/dev/null
    fi
    nodes_stop
    for i in 1 2 3; do [ -f "$data/node$i.log" ] && cp "$data/node$i.log" "$logs_dir/"; done
    rm -rf "$root"
    exit "$rc"
}
trap on_exit EXIT
trap 'say interrupted; exit 130' INT TERM HUP

start_node() {
    # shellcheck disable=SC2086 # BENCH_BATOND_ARGS is split on purpose
    setsid "$batond" --id "$1" --data "$data/node$1" --cluster "$members" \
        --log-level info --metrics-addr "127.0.0.1:$((base + 200 + $1))" ${BENCH_BATOND_ARGS:-} </dev/null >/dev/null 2>>"$data/node$1.log" &
    pids[$1]=$!
}

# The status rows of every node, one per line, from `batonctl status -o json`.
status_rows() {
    "$batonctl" -e "$endpoints" --timeout 1000 status -o json 2>/dev/null |
        grep -o '{"id":[0-9]*,[^{}]*}'
}

# The id of the node whose row says "role":"leader" (empty if none).
leader_id() {
    status_rows | grep '"role":"leader"' | sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | head -n 1
}

# 0 once all three nodes answer and stand at the ready leader's applied index
# (looked at twice in a row, so that the leader is one that commits).
settled() {
    status_rows | awk '
        { a = $0; if (!sub(/.*"applied_index":/, "", a)) next; sub(/[,}].*/, "", a)
          n++; if (min == "" || a + 0 < min) min = a + 0; if (a + 0 > max) max = a + 0
          if ($0 ~ /"role":"leader"/) lead++ }
        END { exit !(n == 3 && lead == 1 && max - min <= 2) }'
}

wait_settled() {
    local n
    for ((n = 0; n < 200; n++)); do
        settled && return 0
        sleep 0.1
    done
    return 1
}

# Milliseconds since the epoch of the first line at or after $2 (ms) in log
# $1 whose message contains $3; empty if none.
log_ms_after() {
    local log=$1 after=$2 what=$3
    grep -F "$what" "$log" 2>/dev/null | cut -d' ' -f1 | while read -r t; do
        ms=$(date -u -d "${t%Z}" +%s%3N 2>/dev/null) || continue
        if [ "$ms" -ge "$after" ]; then
            echo "$ms"
            break
        fi
    done
}

field() { printf '%s\n' "$2" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }

for i in 1 2 3; do start_node "$i"; done
for ((n = 0; n < 100; n++)); do
    settled && break
    sleep 0.2
done
[ "$n" -lt 100 ] || die "the cluster did not come up within 20 s (logs in $logs_dir)"
for i in 1 2 3; do alive "${pids[$i]}" || die "node $i exited at start (logs in $logs_dir)"; done
say "cluster up (pids ${pids[1]} ${pids[2]} ${pids[3]}); $rounds rounds of $signal," \
    "lockbench ${secs}s each, $clients clients, signal after ${warmup}s"

# Node $1's metrics (HTTP GET /metrics).
metrics() {
    local line
    exec 9<>"/dev/tcp/127.0.0.1/$((base + 200 + $1))" || return 1
    printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&9
    while IFS= read -r line <&9; do printf '%s\n' "${line%$'\r'}"; done
    exec 9<&-
}

if [ "$signal" = calm ]; then
    "$lockbench" --endpoints "$endpoints" --workload W1 --clients "$clients" --seconds "$secs" \
        >"$data/lb.out" 2>"$data/lb.err" &
    lb_pid=$!
    wait "$lb_pid"
    st=$?
    lb_pid=0
    head -n 1 "$data/lb.out"
    [ "$st" = 0 ] || { cat "$data/lb.err" >&2; exit 1; }
    for i in 1 2 3; do
        metrics "$i" >"$data/metrics$i" || die "node $i: no metrics"
        awk -v i="$i" '
            /^baton_raft_term / { term = $2 } /^baton_raft_candidacies_total / { cand = $2 }
            /^baton_leader_changes_total / { lc = $2 } /^baton_raft_role / { role = $2 }
            /^baton_loop_lag_seconds_bucket/ { split($0, a, "\""); b[a[2]] = $2 }
            /^baton_loop_lag_seconds_count / { n = $2 }
            END { printf "node %d: role %d, term %d, candidacies %d, leaders seen %d; loop lag over %d samples: >50ms %d, >100ms %d, >200ms %d, >300ms %d\n",
                      i, role, term, cand, lc, n, n - b["0.05"], n - b["0.1"], n - b["0.2"], n - b["0.3"] }' \
            "$data/metrics$i"
    done
    exit 0
fi

ok=0
for ((r = 1; r <= rounds; r++)); do
    "$lockbench" --endpoints "$endpoints" --workload W3 --clients "$clients" --seconds "$secs" \
        >"$data/lb.out" 2>"$data/lb.err" &
    lb_pid=$!
    sleep "$warmup"
    leader=$(leader_id)
    if [ -z "$leader" ] || [ "${pids[$leader]}" = 0 ] || ! alive "${pids[$leader]}"; then
        say "round $r: no leader found"
        wait "$lb_pid"
        lb_pid=0
        break
    fi
    victim=${pids[$leader]}
    t_sig=$(date +%s%3N)
    if [ "$signal" = kill ]; then
        kill -KILL "$victim"
        wait "$victim" 2>/dev/null
        pids[$leader]=0
    else
        kill -STOP "$victim"
        stopped=$victim
        sleep "$stop_secs"
        kill -CONT "$victim"
        stopped=0
    fi
    wait "$lb_pid"
    st=$?
    lb_pid=0
    line=$(head -n 1 "$data/lb.out")
    if [ "$st" != 0 ] || [ -z "$line" ]; then
        say "round $r: lockbench exited with status $st"
        cat "$data/lb.err" >&2
        break
    fi
    [ "$signal" = kill ] && start_node "$leader"
    # The next leader: the first node other than the victim to log each step.
    elected='' serving=''
    for i in 1 2 3; do
        [ "$i" = "$leader" ] && continue
        e=$(log_ms_after "$data/node$i.log" "$t_sig" "raft: leader of term")
        s=$(log_ms_after "$data/node$i.log" "$t_sig" "leader: serving")
        [ -n "$e" ] && { [ -z "$elected" ] || [ "$e" -lt "$elected" ]; } && elected=$e
        [ -n "$s" ] && { [ -z "$serving" ] || [ "$s" -lt "$serving" ]; } && serving=$s
    done
    el_ms=$([ -n "$elected" ] && echo $((elected - t_sig)) || echo null)
    sv_ms=$([ -n "$serving" ] && echo $((serving - t_sig)) || echo null)
    line="{\"signal\":\"$signal\",\"round\":$r,\"elected_ms\":$el_ms,\"serving_ms\":$sv_ms,${line#\{}"
    printf '%s\n' "$line" >>"$out_file"
    printf 'round %2d: node %s %s; elected %s ms, serving %s ms; gap %s ms, one client %s ms, errors %s\n' \
        "$r" "$leader" "$signal" "$el_ms" "$sv_ms" "$(field gap_ms "$line")" \
        "$(field client_gap_max_ms "$line")" "$(field errors "$line")"
    ok=$((ok + 1))
    wait_settled || { say "round $r: the cluster did not settle within 20 s"; break; }
done

# min / median / max of one numeric field over the rounds.
dist() {
    sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$out_file" | sort -n | awk -v f="$1" '
        { v[NR] = $1 }
        END { if (NR == 0) { printf "%-18s none\n", f; exit }
              m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%-18s min %7.1f  median %7.1f  max %7.1f  (n=%d)\n", f, v[1], m, v[NR], NR }'
}
echo "$signal x $ok:"
for f in gap_ms client_gap_max_ms elected_ms serving_ms; do dist "$f"; done
echo "errors total: $(sed -n 's/.*"errors":\([0-9]*\).*/\1/p' "$out_file" | awk '{ s += $1 } END { print s + 0 }')"
[ "$ok" = "$rounds" ]
