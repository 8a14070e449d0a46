#!/usr/bin/env bash
# run-bench.sh -- run the benchmark sweep (docs/performance.md) against fresh local 3-node
# clusters. This is what `make bench` executes.
#
#   tests/bench/run-bench.sh BUILD_DIR [SECONDS]     (SECONDS defaults to 10)
#
# Every workload gets a FRESH cluster (W1 sweep, W2 sweep, W3, W3R, W4, W5, W6,
# W7, W8, W9): three
# batond on 127.0.0.1, client ports BASE+1..BASE+3 and raft ports
# BASE+101..BASE+103 (BASE = $BENCH_PORT_BASE, default 27000; better below
# the kernel's ephemeral range, 32768 and up, where any outgoing connection
# may hold the port), data under one mktemp -d on disk (not tmpfs), fsync on
# as always. The script waits for a leader (and checks that all three nodes
# run), runs lockbench, stops the nodes and deletes their data.
#
#   W1  clients 1, 16, 64
#   W2  clients 2, 16, 64, 256, hold 0 ms
#   W3  16 clients (W1 loop); after SECONDS/2 the leader (found with
#       `batonctl status -o json`) gets kill -9; the killed node is restarted
#       after the run to check that it comes back, then the cluster is stopped
#   W3R 16 clients (W1 loop) while the nodes are restarted one at a time
#       with SIGTERM (a planned restart: the leader hands leadership over
#       first), $BENCH_W3R_ROUNDS rounds of nodes 1, 2, 3; each node is
#       started again and must be back and caught up (its applied index in
#       `batonctl status -o json` at the leader's) before the next is
#       stopped. lockbench runs W3 (errors, gap_ms, client_gap_max_ms) for
#       SECONDS; the line says "kill":"rolling" and how many restarts were
#       done. SECONDS must leave room for them all (about 1 s each).
#   W4  one lockbench process opens K sessions and acquires L locks (async
#       driver: one loop, up to 16 try-locks in flight per session; with
#       BENCH_DRIVER=blocking, $BENCH_W4_CLIENTS threads); lockbench reads
#       each server's VmRSS (--pids) while the locks are held. Its time
#       limit is $BENCH_W4_TIMEOUT seconds.
#   W5  $BENCH_W5_CLIENTS idle sessions (async API, one loop) that only send
#       keepalives for max(SECONDS, 10) seconds; lockbench reads every
#       server's CPU time from /proc (--pids) and reports the leader's
#       (--leader-pid) as leader_cpu_pct. The leader is checked again after
#       the run; a change is reported as a failure.
#   W6  $BENCH_W6_CLIENTS clients (default 64) loop on 4 names: pick one,
#       ask for it shared (9 in 10) or exclusive, release (lock modes)
#   W8  $BENCH_W8_CLIENTS clients (default 32) loop taking 2 to 4 of 16 names
#       at once (atomic multi-locks)
#   W7  $BENCH_W7_CLIENTS clients (default 64) loop on one semaphore of 8
#       ("sem", .limit = 8)
#   W6, W7 and W8 hold each grant $BENCH_MODES_HOLD_MS ms (default 0).
#   WB  the language bindings beside C (bindings/; not in the default list):
#       $BENCH_WB_ROUNDS rounds (default 6; each starts with another), each of W1 with one client
#       through C's blocking API, Python's Client and Go, then W1 with
#       $BENCH_WB_CLIENTS clients (default 64) through C's async driver and
#       Python's asyncio; every line tagged "binding"
#   W9  an election "w9": $BENCH_W9_CANDIDATES candidates (default 8; half of
#       them sessions of lockbench, half `lockbench --victim` processes of
#       their own) and $BENCH_W9_OBSERVERS observers (default 32), one loop;
#       $BENCH_W9_ROUNDS rounds of each kind (default 10), alternating: the
#       leader resigns, or the leader's process gets SIGKILL and its session's
#       lease ($BENCH_W9_TTL_MS, default 3000) must run out. The time to the
#       next leader and to the last observer hearing of it. No round starts
#       after $BENCH_W9_TIMEOUT seconds (default 600); SECONDS is not used.
#
# W1/W2/W3/W6/W7 use lockbench's async driver (every client its own
# baton_async_t, all on one libuv loop) unless BENCH_DRIVER=blocking (a
# thread per client with the blocking API).
#
# Output: the JSON lines on stdout, also written to BUILD_DIR/bench.jsonl
# (or $BENCH_OUT);
# progress on stderr; the nodes' logs are copied to BUILD_DIR/bench-logs/.
# Everything started here is stopped by pid on exit (trap EXIT), and the
# temporary directory is removed.
#
# Environment:
#   BENCH_WORKLOADS     which to run (default "W1 W2 W3 W3R W4 W5 W6 W7 W8 W9")
#   BENCH_DRIVER        lockbench --driver for W1-W4, W6, W7: async (default) or
#                       blocking
#   BENCH_LOOPS         lockbench --loops for the async driver (default 1)
#   BENCH_W1_CLIENTS    default "1 16 64"
#   BENCH_W2_CLIENTS    default "2 16 64 256"
#   BENCH_W2_HOLD_MS    default 0
#   BENCH_W3_CLIENTS    default 16
#   BENCH_W3R_ROUNDS    W3R's rolling restarts of all three nodes (default 3)
#   BENCH_W4_SESSIONS   default 1000 (K)
#   BENCH_W4_LOCKS      default 100000 (L)
#   BENCH_W4_CLIENTS    default 32 (threads of the one W4 client process)
#   BENCH_W4_TIMEOUT    default 300 (seconds)
#   BENCH_W5_CLIENTS    default 10000 (idle sessions)
#   BENCH_W5_SECONDS    the idle window (default max(SECONDS, 10))
#   BENCH_W6_CLIENTS    default 64
#   BENCH_W7_CLIENTS    default 64
#   BENCH_W8_CLIENTS    default 32
#   BENCH_W9_CANDIDATES default 8 (even)
#   BENCH_W9_OBSERVERS  default 32
#   BENCH_W9_ROUNDS     rounds of each kind, resign and kill (default 10)
#   BENCH_W9_TTL_MS     the W9 sessions' ttl (default 3000; a kill round lasts
#                       about that long)
#   BENCH_W9_TIMEOUT    default 600 (seconds)
#   BENCH_W1_NAMES      names each W1 cycle takes at once (default "1"; e.g.
#                       "1 4": each W1 run also with one baton_lock_many of
#                       4 of the client's own names, the line marked "names")
#   BENCH_MODES_HOLD_MS W6/W7 hold time, default 0
#   BENCH_PORT_BASE     default 27000
#   BENCH_TMPDIR        parent of the temp dir (default /var/tmp, else BUILD_DIR)
#   BENCH_OUT           the file of the JSON lines (default BUILD_DIR/bench.jsonl)
#   BENCH_BATOND_ARGS   extra batond flags for every node (e.g. "--max-inflight 0")
#   BENCH_PEER_TLS      1: mutual TLS between the nodes (--peer-cert/--peer-key/
#                       --peer-ca, certificates made by server/certs.sh in the
#                       temp dir); every JSON line then carries "peer_tls":1
#   BATON_LOG_LEVEL     the nodes' --log-level (default warn)
#   BENCH_SECURE=1      the nodes serve clients over TLS 1.3 and require a token:
#                       a throwaway CA and node certificates (server/certs.sh) and
#                       an auth file with one principal "bench" (role client),
#                       whose fresh token `batonctl auth hash` made, all in the
#                       temp dir; lockbench and this script's batonctl get the CA
#                       and the token (BENCH_CACERT/BENCH_TOKEN, BATON_CACERT/
#                       BATON_TOKEN). Every session then pays a TLS handshake
#                       and every message its encryption; every JSON line then
#                       carries "client_tls":1.
#   BENCH_CPU=1         W1/W2/W6/W7/W8 runs also measure each node's CPU and system
#                       calls per completed op (cycle or grant) over the run: the
#                       utime+stime delta of /proc/PID/stat in microseconds, and
#                       `perf stat -e raw_syscalls:sys_enter -p PID` (needs perf and
#                       tracepoint access), divided by the line's "ops". The line
#                       gets "cpu_us_leader", "cpu_us_f1", "cpu_us_f2",
#                       "sys_leader", "sys_f1", "sys_f2" (f1, f2: the followers in
#                       node order); tests/bench/cpu-per-cycle.sh prints them
#   BENCH_PERF_DIR      with BENCH_CPU=1: also `perf record -g` every node during
#                       each run into DIR/RUN-ROLE.data (ROLE leader, f1, f2)
#   BENCH_CACERT, BENCH_CERT, BENCH_KEY, BENCH_TOKEN
#                       otherwise passed to lockbench as they are (its --cacert,
#                       --cert, --key, --token), for nodes secured through
#                       BENCH_BATOND_ARGS; batonctl here then needs BATON_CACERT
#                       and BATON_TOKEN too
#
# Exit status: 0 if every run printed its JSON line, 1 otherwise.
set -u

build=${1:?usage: run-bench.sh BUILD_DIR [SECONDS]}
secs=${2:-10}
batond=$build/batond
batonctl=$build/batonctl
lockbench=$build/lockbench
repo=$(cd "$(dirname "$0")/../.." && pwd)
workloads=${BENCH_WORKLOADS:-W1 W2 W3 W3R W4 W5 W6 W7 W8 W9}
driver=${BENCH_DRIVER:-async}
loops=${BENCH_LOOPS:-1}
w1_clients=${BENCH_W1_CLIENTS:-1 16 64}
w2_clients=${BENCH_W2_CLIENTS:-2 16 64 256}
w2_hold=${BENCH_W2_HOLD_MS:-0}
w3_clients=${BENCH_W3_CLIENTS:-16}
w3r_rounds=${BENCH_W3R_ROUNDS:-3}
w4_sessions=${BENCH_W4_SESSIONS:-1000}
w4_locks=${BENCH_W4_LOCKS:-100000}
w4_clients=${BENCH_W4_CLIENTS:-32}
w4_timeout=${BENCH_W4_TIMEOUT:-300}
w5_clients=${BENCH_W5_CLIENTS:-10000}
w6_clients=${BENCH_W6_CLIENTS:-64}
w7_clients=${BENCH_W7_CLIENTS:-64}
w8_clients=${BENCH_W8_CLIENTS:-32}
w9_candidates=${BENCH_W9_CANDIDATES:-8}
w9_observers=${BENCH_W9_OBSERVERS:-32}
w9_rounds=${BENCH_W9_ROUNDS:-10}
w9_ttl=${BENCH_W9_TTL_MS:-3000}
w9_timeout=${BENCH_W9_TIMEOUT:-600}
w1_names=${BENCH_W1_NAMES:-1}
wb_rounds=${BENCH_WB_ROUNDS:-6}
wb_clients=${BENCH_WB_CLIENTS:-64}
modes_hold=${BENCH_MODES_HOLD_MS:-0}
w5_secs=${BENCH_W5_SECONDS:-$(awk -v s="$secs" 'BEGIN { print (s < 10 ? 10 : s) }')}
base=${BENCH_PORT_BASE:-27000}
level=${BATON_LOG_LEVEL:-warn}
peer_tls=${BENCH_PEER_TLS:-0}
stop_timeout=10

say() { echo "run-bench: $*" >&2; }
die() { echo "run-bench: $*" >&2; exit 1; }

for f in "$batond" "$batonctl" "$lockbench"; do
    [ -x "$f" ] || die "$f not found; build it first (make bench)"
done
case $secs in
    '' | *[!0-9.]* | *.*.*) die "SECONDS must be a positive number, not '$secs'" ;;
esac
awk -v s="$secs" 'BEGIN { exit !(s > 0) }' || die "SECONDS must be > 0"

ports=()
for i in 1 2 3; do ports+=($((base + i)) $((base + 100 + i))); done
members="1=127.0.0.1:$((base + 101))/127.0.0.1:$((base + 1))"
members+=",2=127.0.0.1:$((base + 102))/127.0.0.1:$((base + 2))"
members+=",3=127.0.0.1:$((base + 103))/127.0.0.1:$((base + 3))"
endpoints="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"

# 1000 sessions are 1000 client sockets plus each session's loop descriptors
# in lockbench, and 1000 connections on a server; W5's sessions are one
# socket each in lockbench and on the leader: raise the soft limit (the
# nodes, started below, inherit it).
want_nofile=$((w4_sessions * 8 + 4096))
[ $((w5_clients + 4096)) -gt "$want_nofile" ] && want_nofile=$((w5_clients + 4096))
cur=$(ulimit -n)
if [ "$cur" != unlimited ] && [ "$cur" -lt "$want_nofile" ]; then
    hard=$(ulimit -Hn)
    if [ "$hard" = unlimited ] || [ "$hard" -ge "$want_nofile" ]; then
        ulimit -n "$want_nofile"
    else
        ulimit -n "$hard"
        say "warning: open files limited to $hard (W4/W5 want $want_nofile)"
    fi
fi

# bench_parent, port_busy, lb_start, lb_finish, lb_stop
. "$(dirname "$0")/lib.sh"

# The data directory: on disk, never tmpfs.
parent=$(bench_parent "$build") || die "$build is tmpfs; set BENCH_TMPDIR"
root=$(mktemp -d "$parent/baton-bench.XXXXXX") || die "cannot create a temp dir in $parent"
say "data under $root ($(stat -f -c %T "$root"))"

out_file=${BENCH_OUT:-$build/bench.jsonl}
logs_dir=$build/bench-logs
: >"$out_file" || die "cannot write $out_file"
rm -rf "$logs_dir"
mkdir -p "$logs_dir"

pids=(0 0 0 0) # indexed by node id; 0 when not running
data=""
tag=""
lb_pid=0
failed=0

# alive, nodes_running, nodes_stop, peer_tls_certs, peer_tls_flags
. "$(dirname "$0")/../../server/nodes.sh"

# The flags BENCH_SECURE gives node $1: TLS on its client port, the auth file.
client_tls_flags() {
    echo "--tls-cert $certs/node$1.pem --tls-key $certs/node$1.key --auth-file $root/auth"
}

start_node() {
    local i=$1 tls=""
    [ "$peer_tls" = 1 ] && tls=$(peer_tls_flags "$root/certs" "$i")
    [ "$secure" = 1 ] && tls="$tls $(client_tls_flags "$i")"
    # shellcheck disable=SC2086 # BENCH_BATOND_ARGS and the TLS flags are split on purpose
    setsid "$batond" --id "$i" --data "$data/node$i" --cluster "$members" \
        --log-level "$level" $tls ${BENCH_BATOND_ARGS:-} </dev/null >/dev/null \
        2>>"$data/node$i.log" &
    pids[$i]=$!
}

# Stop the cluster, keep its logs, delete its data.
stop_cluster() {
    [ -n "$data" ] || return 0
    nodes_stop
    for i in 1 2 3; do
        [ -f "$data/node$i.log" ] && cp "$data/node$i.log" "$logs_dir/$tag-node$i.log"
    done
    rm -rf "$data"
    data=""
}

on_exit() {
    local rc=$?
    trap '' INT TERM HUP
    lb_stop
    stop_cluster
    rm -rf "$root"
    [ "$failed" = 1 ] && [ "$rc" = 0 ] && rc=1
    exit "$rc"
}
trap on_exit EXIT
trap 'say interrupted; exit 130' INT TERM HUP

if [ "$peer_tls" = 1 ]; then
    peer_tls_certs "$root/certs" || die "cannot make certificates in $root/certs"
    say "mutual TLS between the nodes"
fi

# BENCH_SECURE: certificates and an auth file, and what the clients need.
secure=${BENCH_SECURE:-0}
if [ "$secure" = 1 ]; then
    certs=$root/certs # BENCH_PEER_TLS's too, if it made them
    if [ ! -s "$certs/ca.pem" ]; then
        peer_tls_certs "$certs" || die "cannot make certificates in $certs"
    fi
    auth_out=$("$batonctl" auth hash bench client 2>/dev/null) || die "batonctl auth hash failed"
    token=$(printf '%s\n' "$auth_out" | sed -n 's/^token: //p')
    printf '%s\n' "$auth_out" | sed -n 2p >"$root/auth"
    [ -n "$token" ] && [ -s "$root/auth" ] || die "no token from batonctl auth hash"
    export BENCH_CACERT=$certs/ca.pem BENCH_TOKEN=$token
    export BATON_CACERT=$certs/ca.pem BATON_TOKEN=$token
    say "secure: TLS on the client port, token of principal bench (certificates in $certs)"
fi

# The id of the node whose status row says "role":"leader" (empty if none).
leader_id() {
    local out
    out=$("$batonctl" -e "$endpoints" --timeout 1000 status -o json 2>/dev/null) || return 0
    printf '%s\n' "$out" | grep -o '{"id":[0-9]*,[^{}]*"role":"leader"' |
        sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | head -n 1
}

# Wait (at most 20 s) for a leader; print its id.
wait_leader() {
    local n id
    for ((n = 0; n < 100; n++)); do
        id=$(leader_id)
        if [ -n "$id" ]; then
            echo "$id"
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# Start a fresh cluster for workload group $1 and wait for its leader.
start_cluster() {
    local i port leader
    tag=$1
    for port in "${ports[@]}"; do
        if port_busy "$port"; then
            die "port $port on 127.0.0.1 is already in use (set BENCH_PORT_BASE)"
        fi
    done
    data=$root/$tag
    mkdir -p "$data" || die "cannot create $data"
    for i in 1 2 3; do start_node "$i"; done
    leader=$(wait_leader) || {
        say "$tag: no leader within 20 s; end of the logs:"
        for i in 1 2 3; do tail -n 5 "$data/node$i.log" | sed "s/^/  node $i: /" >&2; done
        return 1
    }
    # A node that could not start (a port taken by some other socket, say)
    # would leave a 2-node cluster whose figures mean something else.
    for i in 1 2 3; do
        if ! alive "${pids[$i]}"; then
            say "$tag: node $i exited at start; end of its log:"
            tail -n 5 "$data/node$i.log" | sed "s/^/  node $i: /" >&2
            return 1
        fi
    done
    say "$tag: cluster up, leader node $leader (pids ${pids[1]} ${pids[2]} ${pids[3]})"
}

# BENCH_CPU: each node's role (leader, f1, f2), CPU ticks and perf pids
# at the start of a run.
cpu_on=${BENCH_CPU:-0}
perf_dir=${BENCH_PERF_DIR:-}
clk_tck=$(getconf CLK_TCK)
declare -a cpu_role cpu_t0 cpu_stat_pid cpu_rec_pid

# utime+stime of process $1 in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the command name, which may hold spaces).
cpu_ticks() {
    local st
    st=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    st=${st##*) }
    # shellcheck disable=SC2086 # split the fields on purpose
    set -- $st
    echo $((${12} + ${13}))
}

# Start measuring the nodes for the run named $1.
cpu_begin() {
    local i leader f=0
    [ "$cpu_on" = 1 ] || return 0
    leader=$(leader_id)
    for i in 1 2 3; do
        if [ "$i" = "$leader" ]; then cpu_role[$i]=leader; else f=$((f + 1)); cpu_role[$i]=f$f; fi
        cpu_t0[$i]=$(cpu_ticks "${pids[$i]}")
        perf stat -x, -e raw_syscalls:sys_enter -p "${pids[$i]}" -o "$data/sys$i.csv" \
            >/dev/null 2>&1 &
        cpu_stat_pid[$i]=$!
        cpu_rec_pid[$i]=0
        if [ -n "$perf_dir" ]; then
            mkdir -p "$perf_dir"
            perf record -q -g -p "${pids[$i]}" -o "$perf_dir/$1-${cpu_role[$i]}.data" \
                >/dev/null 2>&1 &
            cpu_rec_pid[$i]=$!
        fi
    done
}

# Stop measuring; put the JSON fields for a run of $1 ops in cpu_fields (not
# printed: in a command substitution `wait` could not wait for perf).
cpu_end() {
    local i ops=$1 t1 sys out=""
    cpu_fields=""
    [ "$cpu_on" = 1 ] || return 0
    for i in 1 2 3; do
        t1=$(cpu_ticks "${pids[$i]}")
        kill -INT "${cpu_stat_pid[$i]}" 2>/dev/null
        wait "${cpu_stat_pid[$i]}" 2>/dev/null
        if [ "${cpu_rec_pid[$i]}" != 0 ]; then
            kill -INT "${cpu_rec_pid[$i]}" 2>/dev/null
            wait "${cpu_rec_pid[$i]}" 2>/dev/null
        fi
        sys=$(awk -F, '/raw_syscalls:sys_enter/ { print $1 }' "$data/sys$i.csv" 2>/dev/null)
        case $sys in
            '' | *[!0-9]*) say "node $i: no count from perf stat"; sys=-1 ;;
        esac
        out+=$(awk -v d=$((t1 - cpu_t0[$i])) -v hz="$clk_tck" -v n="$ops" -v s="$sys" \
            -v r="${cpu_role[$i]}" 'BEGIN {
                if (n <= 0) n = 1
                printf "\"cpu_us_%s\":%.1f,\"sys_%s\":%.2f,", r, d * 1e6 / hz / n, r, (s < 0 ? -1 : s / n)
            }')
    done
    cpu_fields=$out
}

# Run lockbench (lib.sh's lb_start) for the run named $1, measuring the
# nodes' CPU if BENCH_CPU=1 (and recording them if BENCH_PERF_DIR is set).
lb_run() {
    cpu_begin "$1"
    shift
    lb_start "$@"
}

# lib.sh's lb_finish asks for more JSON fields: the nodes' CPU and system
# calls per op, with BENCH_CPU=1.
lb_more_fields() {
    lb_more=
    [ "$cpu_on" = 1 ] || return 0
    cpu_end "$(printf '%s\n' "$1" | sed -n 's/.*"ops":\([0-9]*\).*/\1/p')"
    lb_more=$cpu_fields
}

run_w1() {
    local n k
    start_cluster W1 || { failed=1; stop_cluster; return; }
    for n in $w1_clients; do
        for k in $w1_names; do
            say "W1 clients=$n seconds=$secs names=$k"
            lb_run "W1-$n-$k" --workload W1 --clients "$n" --seconds "$secs" --driver "$driver" \
                --loops "$loops" --names "$k"
            if [ "$k" = 1 ]; then lb_finish "W1/$n"; else lb_finish "W1/$n/names=$k" "\"names\":$k,"; fi
        done
    done
    stop_cluster
}

run_w2() {
    local n
    start_cluster W2 || { failed=1; stop_cluster; return; }
    for n in $w2_clients; do
        say "W2 clients=$n seconds=$secs hold_ms=$w2_hold"
        lb_run "W2-$n" --workload W2 --clients "$n" --seconds "$secs" --hold-ms "$w2_hold" \
            --driver "$driver" --loops "$loops"
        lb_finish "W2/$n"
    done
    stop_cluster
}

run_w3() {
    local leader half n
    start_cluster W3 || { failed=1; stop_cluster; return; }
    half=$(awk -v s="$secs" 'BEGIN { printf "%.3f", s / 2 }')
    say "W3 clients=$w3_clients seconds=$secs; kill -9 of the leader after ${half}s"
    lb_run W3 --workload W3 --clients "$w3_clients" --seconds "$secs" --driver "$driver" \
        --loops "$loops"
    sleep "$half"
    leader=$(leader_id)
    if [ -n "$leader" ] && [ "${pids[$leader]}" != 0 ] && alive "${pids[$leader]}"; then
        kill -KILL "${pids[$leader]}"
        wait "${pids[$leader]}" 2>/dev/null
        say "W3: killed the leader, node $leader (pid ${pids[$leader]})"
        pids[$leader]=0
    else
        say "W3: no leader found at ${half}s; nothing killed"
        failed=1
    fi
    lb_finish W3
    if [ -n "$leader" ] && [ "${pids[$leader]}" = 0 ]; then
        # Restart the killed node and check that it comes back.
        start_node "$leader"
        for ((n = 0; n < 50; n++)); do
            "$batonctl" -e "127.0.0.1:$((base + leader))" --timeout 500 status -o json \
                >/dev/null 2>&1 && break
            sleep 0.2
        done
        if [ "$n" -lt 50 ]; then
            say "W3: node $leader restarted and answers; new leader node $(leader_id)"
        else
            say "W3: node $leader did not answer within 10 s after its restart"
            failed=1
        fi
    fi
    stop_cluster
}

# The applied index of node $1 and of the leader in one `batonctl status`,
# as "NODE LEADER" (nothing if either is missing).
applied_pair() {
    local out
    out=$("$batonctl" -e "$endpoints" --timeout 1000 status -o json 2>/dev/null)
    printf '%s\n' "$out" | grep -o '{"id":[0-9]*,[^{}]*}' | awk -v want="$1" '
        { id = $0; sub(/^\{"id":/, "", id); sub(/,.*/, "", id)
          a = $0; if (!sub(/.*"applied_index":/, "", a)) next; sub(/[,}].*/, "", a)
          if (id == want) node = a
          if ($0 ~ /"role":"leader"/) leader = a }
        END { if (node != "" && leader != "") print node, leader }'
}

# W3R: SIGTERM node $1, start it again, and wait (at most 400 looks, 20 s
# and more) until its applied index reaches the leader's. Under load the
# leader moves on while batonctl asks, so "reaches" means: at least what the
# leader had applied at the previous look -- and the leader has applied more
# since, so that it is one that commits (STATUS says "leader" for a node
# that raft elected and whose first entry has not committed yet). Once the
# load has ended (lockbench finished first on a slow machine) the leader
# applies nothing more: three looks in a row with both at the same index
# count as caught up too. 0 when it is back and caught up.
restart_caught_up() {
    local i=$1 n pair t0 prev='' same=0
    t0=$(date +%s.%N)
    if [ "${pids[$i]}" != 0 ] && alive "${pids[$i]}"; then
        kill -TERM "${pids[$i]}"
        wait "${pids[$i]}" 2>/dev/null
    fi
    pids[$i]=0
    start_node "$i"
    for ((n = 0; n < 400; n++)); do
        pair=$(applied_pair "$i")
        case $pair in
            [0-9]*' '[0-9]*) ;;
            *) pair='' ;;
        esac
        if [ -n "$pair" ] && [ "${pair% *}" = "${pair#* }" ] && [ "${pair#* }" = "$prev" ]; then
            same=$((same + 1))
        else
            same=0
        fi
        if [ -n "$pair" ] && [ -n "$prev" ] && [ "${pair% *}" -ge "$prev" ] &&
            { [ "${pair#* }" -gt "$prev" ] || [ "$same" -ge 3 ]; }; then
            say "W3R: node $i stopped, restarted and caught up (applied ${pair% *}) in" \
                "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
            return 0
        fi
        [ -n "$pair" ] && prev=${pair#* }
        sleep 0.05
    done
    say "W3R: node $i did not catch up within 400 looks (20 s and more) of its restart"
    return 1
}

run_w3r() {
    local r i done=0 total=$((w3r_rounds * 3))
    start_cluster W3R || { failed=1; stop_cluster; return; }
    say "W3R clients=$w3_clients seconds=$secs; $w3r_rounds rolling restarts (SIGTERM) of" \
        "nodes 1, 2, 3 after 1 s"
    lb_run W3R --workload W3 --clients "$w3_clients" --seconds "$secs" --driver "$driver" \
        --loops "$loops"
    sleep 1
    for ((r = 0; r < w3r_rounds; r++)); do
        for i in 1 2 3; do
            alive "$lb_pid" || break 2
            restart_caught_up "$i" || { failed=1; break 2; }
            done=$((done + 1))
        done
    done
    if [ "$done" -lt "$total" ]; then
        say "W3R: only $done of $total restarts before lockbench ended (raise SECONDS)"
        failed=1
    fi
    lb_finish W3R "\"kill\":\"rolling\",\"restarts\":$done,"
    stop_cluster
}

run_w4() {
    start_cluster W4 || { failed=1; stop_cluster; return; }
    say "W4 sessions=$w4_sessions locks=$w4_locks threads=$w4_clients limit=${w4_timeout}s"
    lb_run W4 --workload W4 --driver "$driver" --clients "$w4_clients" --seconds "$w4_timeout" \
        --sessions "$w4_sessions" --locks "$w4_locks" --pids "${pids[1]},${pids[2]},${pids[3]}"
    lb_finish W4
    stop_cluster
}

run_w5() {
    local leader after
    start_cluster W5 || { failed=1; stop_cluster; return; }
    leader=$(leader_id)
    if [ -z "$leader" ]; then
        say "W5: no leader"
        failed=1
        stop_cluster
        return
    fi
    say "W5 sessions=$w5_clients idle window=${w5_secs}s; leader node $leader (pid ${pids[$leader]})"
    lb_run W5 --workload W5 --clients "$w5_clients" --seconds "$w5_secs" \
        --pids "${pids[1]},${pids[2]},${pids[3]}" --leader-pid "${pids[$leader]}"
    lb_finish W5
    after=$(leader_id)
    if [ "$after" != "$leader" ]; then
        say "W5: the leader changed during the run (node $leader, now '${after}'): leader_cpu_pct is not one node's"
        failed=1
    fi
    stop_cluster
}

# W6, W7, W8 (lock modes): workload $1 with $2 clients on a fresh cluster.
run_modes() {
    local w=$1 n=$2
    start_cluster "$w" || { failed=1; stop_cluster; return; }
    say "$w clients=$n seconds=$secs hold_ms=$modes_hold"
    lb_run "$w-$n" --workload "$w" --clients "$n" --seconds "$secs" --hold-ms "$modes_hold" \
        --driver "$driver" --loops "$loops"
    lb_finish "$w/$n"
    stop_cluster
}

run_w9() {
    start_cluster W9 || { failed=1; stop_cluster; return; }
    say "W9 candidates=$w9_candidates observers=$w9_observers rounds=$w9_rounds of each kind" \
        "ttl=${w9_ttl}ms limit=${w9_timeout}s"
    lb_run W9 --workload W9 --clients "$w9_observers" --candidates "$w9_candidates" \
        --rounds "$w9_rounds" --ttl-ms "$w9_ttl" --seconds "$w9_timeout"
    lb_finish W9
    stop_cluster
}

# WB: one line of a binding's bench program ($2...), tagged "binding":$1,
# printed and saved like lockbench's.
wb_line() {
    local tag=$1 line
    shift
    line=$("$@" 2>"$data/wb.err" | head -n 1)
    if [ -z "$line" ]; then
        say "WB $tag: no JSON line; its stderr ends:"
        tail -n 5 "$data/wb.err" >&2
        failed=1
        return
    fi
    line="{\"binding\":\"$tag\",${line#\{}"
    printf '%s\n' "$line"
    printf '%s\n' "$line" >>"$out_file"
}

# WB's runs: W1 with one client through C's blocking API, Python and Go;
# with $wb_clients through C's async driver and Python's asyncio.
wb_c1() {
    lb_run WB-c1 --workload W1 --clients 1 --seconds "$secs" --driver blocking
    lb_finish WB/c1 '"binding":"c-blocking",'
}
wb_py1() {
    wb_line python-blocking env BATON_LIBRARY="$lib/libbaton.so.4" "$venv/bin/python" \
        "$repo/bindings/python/bench/w1.py" --endpoints "$endpoints" --clients 1 --seconds "$secs"
}
wb_go1() {
    wb_line go env LD_LIBRARY_PATH="$lib" "$gobin" -endpoints "$endpoints" -clients 1 \
        -seconds "$secs_i"
}
wb_c64() {
    lb_run WB-c64 --workload W1 --clients "$wb_clients" --seconds "$secs"
    lb_finish WB/c64 '"binding":"c-async",'
}
wb_aio() {
    wb_line python-asyncio env BATON_LIBRARY="$lib/libbaton.so.4" "$venv/bin/python" \
        "$repo/bindings/python/bench/w1_asyncio.py" --endpoints "$endpoints" \
        --clients "$wb_clients" --seconds "$secs"
}

# WB: the language bindings beside C on one cluster, $wb_rounds rounds of
# alternating runs, so that load on the machine hits all alike: one client
# through C's blocking API, Python's blocking Client and Go, then
# $wb_clients clients through C's async driver and Python's asyncio (one
# loop each). The bindings are installed and built as a user would
# (tests/bindings/lib.sh): a venv with bindings/python, and the Go bench
# built offline with Debian's Go.
run_wb() {
    local r
    venv=$root/venv gobin=$root/w1-go lib=$(cd "$build" && pwd)
    secs_i=$(awk -v s="$secs" 'BEGIN { printf "%d", (s < 1 ? 1 : s) }')
    . "$repo/tests/bindings/lib.sh"
    py_venv "$repo" "$venv" >&2 || { say "WB: cannot install bindings/python"; failed=1; return; }
    (go_env "$lib" "$root/go" "$repo" && cd "$repo/bindings/go" &&
        /usr/bin/go build -o "$gobin" ./bench/w1) >&2 || {
        say "WB: cannot build bindings/go/bench/w1"
        failed=1
        return
    }
    start_cluster WB || { failed=1; stop_cluster; return; }
    for ((r = 1; r <= wb_rounds; r++)); do
        say "WB round $r of $wb_rounds: 1 client (C, Python, Go), then $wb_clients (C async, asyncio)"
        # Each round starts the trio and the pair with another one, so
        # that no binding always runs right after the same other.
        case $((r % 3)) in
            1) wb_c1; wb_py1; wb_go1 ;;
            2) wb_go1; wb_c1; wb_py1 ;;
            0) wb_py1; wb_go1; wb_c1 ;;
        esac
        if [ $((r % 2)) = 1 ]; then wb_c64; wb_aio; else wb_aio; wb_c64; fi
    done
    stop_cluster
}

for w in $workloads; do
    case $w in
        W1) run_w1 ;;
        W2) run_w2 ;;
        W3) run_w3 ;;
        W3R) run_w3r ;;
        W4) run_w4 ;;
        W5) run_w5 ;;
        W6) run_modes W6 "$w6_clients" ;;
        W7) run_modes W7 "$w7_clients" ;;
        W8) run_modes W8 "$w8_clients" ;;
        W9) run_w9 ;;
        WB) run_wb ;;
        *) die "unknown workload '$w' in BENCH_WORKLOADS" ;;
    esac
done
say "results in $out_file, node logs in $logs_dir/"
