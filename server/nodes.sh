# nodes.sh -- shell functions shared by server/run-cluster.sh (make run) and
# tests/bench/run-bench.sh (make bench) to watch and stop the three batond
# processes they start. Source it after defining:
#   pids          array indexed by node id 1..3: each node's pid, 0 once gone
#   stop_timeout  seconds a node gets between SIGTERM and SIGKILL
#   say           a function that prints a progress line

# Is pid a live process (not a zombie)?
alive() {
    local pid=$1
    [ -n "$pid" ] && [ "$pid" -gt 0 ] 2>/dev/null || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    ! grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null
}

# Is any node still running?
nodes_running() {
    local i
    for i in 1 2 3; do
        [ "${pids[$i]}" != 0 ] && alive "${pids[$i]}" && return 0
    done
    return 1
}

# Stop every node still running: SIGTERM, up to stop_timeout seconds to
# exit, then SIGKILL. Afterwards node_killed[i] is 1 for a node that had to
# be killed, node_status[i] is each node's exit status, and pids[i] is 0.
nodes_stop() {
    local i n
    for i in 1 2 3; do
        [ "${pids[$i]}" != 0 ] && alive "${pids[$i]}" && kill -TERM "${pids[$i]}" 2>/dev/null
    done
    for ((n = 0; n < stop_timeout * 10; n++)); do
        nodes_running || break
        sleep 0.1
    done
    for i in 1 2 3; do
        node_killed[$i]=0
        node_status[$i]=0
        [ "${pids[$i]}" = 0 ] && continue
        if alive "${pids[$i]}"; then
            say "node $i (pid ${pids[$i]}) did not stop within ${stop_timeout}s; killing it"
            kill -KILL "${pids[$i]}" 2>/dev/null
            node_killed[$i]=1
        fi
        wait "${pids[$i]}" 2>/dev/null
        node_status[$i]=$?
        pids[$i]=0
    done
}

# Mutual TLS between the nodes (run-bench.sh's BENCH_PEER_TLS=1;
# docs/security.md, "Between nodes"). peer_tls_certs DIR makes a throwaway
# CA and node1..node3 certificates in DIR (server/certs.sh); peer_tls_flags
# DIR I prints node I's batond flags for them.
peer_tls_certs() {
    "$(dirname "${BASH_SOURCE[0]}")/certs.sh" cluster "$1" 3 >/dev/null
}
peer_tls_flags() {
    local dir=$1 i=$2
    echo "--peer-cert $dir/node$i.pem --peer-key $dir/node$i.key --peer-ca $dir/ca.pem"
}
