# lib.sh -- shell functions shared by the benchmark harnesses:
# tests/bench/run-bench.sh (baton's clusters, make bench) and
# tests/bench/run-redis.sh (a Redis server, make bench-compare). Source it.
#
# lb_start and lb_finish use these globals of the sourcing script:
#   lockbench   the lockbench binary
#   endpoints   what lockbench's --endpoints gets
#   data        the current run's directory (lockbench's stdout goes there)
#   out_file    the file every JSON line is appended to
#   lb_pid      0, or the pid of the lockbench running in the background
#   failed      set to 1 when a run printed no line or lockbench failed
#   peer_tls, secure   1: tag every line "peer_tls":1 / "client_tls":1
#   say         a function that prints a progress line

# The directory the runs' data goes under: $BENCH_TMPDIR or /var/tmp, on
# disk (never tmpfs, which has no real fsync); else the build directory $1.
# Fails if that is tmpfs too.
bench_parent() {
    local parent=${BENCH_TMPDIR:-/var/tmp}
    if [ ! -d "$parent" ] || [ "$(stat -f -c %T "$parent" 2>/dev/null)" = tmpfs ]; then
        parent=$1
    fi
    [ "$(stat -f -c %T "$parent" 2>/dev/null)" = tmpfs ] && return 1
    echo "$parent"
}

# Is TCP port $1 on 127.0.0.1 taken (something accepts connections there)?
port_busy() {
    (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A free port on 127.0.0.1 between 20000 and 32767, below the kernel's
# ephemeral range (where any outgoing connection may take it).
free_port() {
    local try p
    for try in $(seq 50); do
        p=$((20000 + RANDOM % 12768))
        port_busy "$p" || { echo "$p"; return 0; }
    done
    return 1
}

# A free base port for run-bench.sh's cluster: BASE+1..3 and BASE+101..103
# all unused, all below 32768.
free_base() {
    local base p busy try
    for try in $(seq 50); do
        base=$((20000 + (RANDOM % 120) * 100))
        busy=0
        for p in 1 2 3 101 102 103; do
            port_busy $((base + p)) && busy=1
        done
        [ "$busy" = 0 ] && { echo "$base"; return 0; }
    done
    return 1
}

# Run lockbench with the given arguments in the background; its pid in lb_pid
# and its stdout in $data/lb.out.
lb_start() {
    "$lockbench" --endpoints "$endpoints" "$@" >"$data/lb.out" &
    lb_pid=$!
}

# Wait for lockbench, then print and save its JSON line (with the JSON
# fields $2, e.g. '"kill":"rolling",', put in front).
lb_finish() {
    local what=$1 extra=${2:-} st line
    wait "$lb_pid"
    st=$?
    lb_pid=0
    line=$(head -n 1 "$data/lb.out")
    if declare -F lb_more_fields >/dev/null; then # the sourcing script's own fields
        lb_more_fields "$line"
        extra+=$lb_more
    fi
    [ -n "$line" ] && [ -n "$extra" ] && line="{${extra}${line#\{}"
    [ -n "$line" ] && [ "${peer_tls:-0}" = 1 ] && line="{\"peer_tls\":1,${line#\{}"
    [ -n "$line" ] && [ "${secure:-0}" = 1 ] && line="{\"client_tls\":1,${line#\{}"
    if [ -n "$line" ]; then
        printf '%s\n' "$line"
        printf '%s\n' "$line" >>"$out_file"
    fi
    if [ "$st" != 0 ] || [ -z "$line" ]; then
        say "$what: lockbench exited with status $st"
        failed=1
    fi
}

# Stop the lockbench running in the background, if any (on an early exit).
lb_stop() {
    if [ "${lb_pid:-0}" != 0 ] && kill -0 "$lb_pid" 2>/dev/null; then
        kill -TERM "$lb_pid" 2>/dev/null
        wait "$lb_pid" 2>/dev/null
    fi
    lb_pid=0
}
