#!/usr/bin/env bash
# run-redis.sh -- lockbench's W1 and W2 against Redis, with the usual Redis
# lock recipe (lockbench --driver redis, tests/bench/drv_redis.c), on a
# redis-server of its own. make bench-compare runs it (compare.sh).
#
#   tests/bench/run-redis.sh BUILD_DIR SECONDS durable|default
#
#   durable  redis-server --appendonly yes --appendfsync always: every write
#            is in the append-only file and fsynced before its reply
#   default  no append-only file, no snapshots (--appendonly no --save ""):
#            nothing reaches the disk, as Redis locks are mostly run
#
# Every workload gets a FRESH redis-server (as run-bench.sh gives each a
# fresh cluster): on 127.0.0.1 only, on a free port, with its directory in
# a fresh mktemp -d under the same parent as baton's data (/var/tmp or
# $BENCH_TMPDIR, never tmpfs), no configuration file, protected mode on.
# It never touches a Redis of the system. The script waits until the
# server answers PING, runs lockbench for each client count, and stops the
# server by its pid (SIGTERM, SIGKILL after 10 s).
#
# Environment: BENCH_WORKLOADS (default "W1 W2"), BENCH_W1_CLIENTS (default
# "1 64"), BENCH_W2_CLIENTS (default "2 256"), BENCH_W2_HOLD_MS (default 0),
# BENCH_LOOPS (lockbench --loops, default 1), BENCH_TMPDIR, BENCH_OUT (the
# file of the JSON lines, default BUILD_DIR/bench-redis.jsonl).
#
# Output: the JSON lines on stdout ("system":"redis","durable":...), also
# appended to BENCH_OUT; progress on stderr; the servers' logs are copied to
# BUILD_DIR/bench-logs/. Exit status: 0 if every run printed its line.
set -u

build=${1:?usage: run-redis.sh BUILD_DIR SECONDS durable|default}
secs=${2:?usage: run-redis.sh BUILD_DIR SECONDS durable|default}
mode=${3:?usage: run-redis.sh BUILD_DIR SECONDS durable|default}
lockbench=$build/lockbench
workloads=${BENCH_WORKLOADS:-W1 W2}
w1_clients=${BENCH_W1_CLIENTS:-1 64}
w2_clients=${BENCH_W2_CLIENTS:-2 256}
w2_hold=${BENCH_W2_HOLD_MS:-0}
loops=${BENCH_LOOPS:-1}
out_file=${BENCH_OUT:-$build/bench-redis.jsonl}
logs_dir=$build/bench-logs
stop_timeout=10

say() { echo "run-redis: $*" >&2; }
die() { echo "run-redis: $*" >&2; exit 1; }

case $mode in
    durable) persist=(--appendonly yes --appendfsync always --save '') ;;
    default) persist=(--appendonly no --save '') ;;
    *) die "the mode must be durable or default, not '$mode'" ;;
esac
[ -x "$lockbench" ] || die "$lockbench not found; build it first (make bench-compare)"
command -v redis-server >/dev/null 2>&1 || die "redis-server not found (make deps installs it)"
command -v redis-cli >/dev/null 2>&1 || die "redis-cli not found (make deps installs redis-server)"

# alive
pids=(0)
. "$(dirname "$0")/../../server/nodes.sh"
# bench_parent, free_port, lb_start, lb_finish, lb_stop
. "$(dirname "$0")/lib.sh"

parent=$(bench_parent "$build") || die "$build is tmpfs; set BENCH_TMPDIR"
root=$(mktemp -d "$parent/baton-redis.XXXXXX") || die "cannot create a temp dir in $parent"
mkdir -p "$logs_dir"
say "$mode: data under $root ($(stat -f -c %T "$root"))"

redis_pid=0
tag=""
port=0
data=""
lb_pid=0
failed=0

# Stop the server by its pid, keep its log, delete its data.
stop_redis() {
    local n
    if [ "$redis_pid" != 0 ]; then
        kill -TERM "$redis_pid" 2>/dev/null
        for ((n = 0; n < stop_timeout * 10; n++)); do
            alive "$redis_pid" || break
            sleep 0.1
        done
        if alive "$redis_pid"; then
            say "redis-server (pid $redis_pid) did not stop within ${stop_timeout}s; killing it"
            kill -KILL "$redis_pid" 2>/dev/null
        fi
        wait "$redis_pid" 2>/dev/null
        redis_pid=0
    fi
    if [ -n "$data" ]; then
        [ -f "$data/redis.log" ] && cp "$data/redis.log" "$logs_dir/redis-$mode-$tag.log"
        rm -rf "$data"
        data=""
    fi
}

on_exit() {
    local rc=$?
    trap '' INT TERM HUP
    lb_stop
    stop_redis
    rm -rf "$root"
    [ "$failed" = 1 ] && [ "$rc" = 0 ] && rc=1
    exit "$rc"
}
trap on_exit EXIT
trap 'say interrupted; exit 130' INT TERM HUP

# Start a fresh server for workload $1 and wait (at most 10 s) for its PONG.
start_redis() {
    local n
    tag=$1
    port=$(free_port) || die "no free port on 127.0.0.1"
    data=$root/$tag
    mkdir -p "$data" || die "cannot create $data"
    setsid redis-server --bind 127.0.0.1 --port "$port" --dir "$data" --daemonize no \
        --protected-mode yes --logfile "$data/redis.log" --maxclients 10000 "${persist[@]}" \
        </dev/null >/dev/null 2>&1 &
    redis_pid=$!
    endpoints=127.0.0.1:$port
    for ((n = 0; n < 100; n++)); do
        alive "$redis_pid" || break
        [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && {
            say "$mode $tag: redis-server up on $endpoints (pid $redis_pid)"
            return 0
        }
        sleep 0.1
    done
    say "$mode $tag: redis-server did not answer; end of its log:"
    tail -n 5 "$data/redis.log" 2>/dev/null | sed 's/^/  /' >&2
    return 1
}

run_group() {
    local w=$1 clients=$2 n
    start_redis "$w" || { failed=1; stop_redis; return; }
    for n in $clients; do
        say "$mode $w clients=$n seconds=$secs"
        if [ "$w" = W2 ]; then
            lb_start --driver redis --workload W2 --clients "$n" --seconds "$secs" \
                --hold-ms "$w2_hold" --loops "$loops"
        else
            lb_start --driver redis --workload "$w" --clients "$n" --seconds "$secs" \
                --loops "$loops"
        fi
        lb_finish "$mode $w/$n"
    done
    stop_redis
}

for w in $workloads; do
    case $w in
        W1) run_group W1 "$w1_clients" ;;
        W2) run_group W2 "$w2_clients" ;;
        *) die "run-redis.sh runs W1 and W2, not '$w'" ;;
    esac
done
