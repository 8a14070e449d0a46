#!/usr/bin/env bash
# run-cluster.sh -- run a local three-node baton cluster in the foreground.
# This is what `make run` executes.
#
#   server/run-cluster.sh [--secure] [BUILD_DIR]   (default: build/default)
#
# --secure (make run-secure): the nodes serve clients over TLS, talk to
# each other over mutual TLS, and require a token. Throwaway certificates
# are made with the openssl command into DATA/certs (kept across runs),
# from two CAs, as docs/security.md asks: "ca" signs what the client port
# uses (the nodes' client-port certificates, which clients verify with
# ca.pem, and a client certificate), "peer-ca" signs the nodes' raft
# certificates only (--peer-ca), so that no certificate made for the
# client side can pass as a node on the raft port. An auth file
# DATA/auth holds two principals, "admin" (role admin) and "app" (role
# client), whose fresh tokens are printed once: only their SHA-256 is on
# disk. The script prints the environment batonctl needs.
#
# Node N (1..3) listens for clients on 127.0.0.1:700N and for raft on
# 127.0.0.1:710N, and serves its metrics on http://127.0.0.1:910N/metrics
# (also /healthz, /readyz). Its data is in ./run-data/nodeN, its log (stderr,
# appended across runs) in ./run-data/nodeN.log, its pid in
# ./run-data/nodeN.pid. Running the script again restarts the nodes on the
# same data; remove ./run-data for a fresh cluster.
#
# Ctrl-C, SIGTERM or SIGHUP stops all three: SIGTERM, then SIGKILL for any
# node still running after 10 s. The nodes run in their own session (setsid)
# so that only this script signals them, once. A node that exits on its own
# is reported with the end of its log; the others keep running. The exit
# status is 0 after a clean stop, 1 if any node failed or had to be killed.
#
# Environment:
#   BATON_LOG_LEVEL  debug, info (default), warn or error
#   BATON_RUN_DATA   data directory instead of ./run-data
#   BATON_TAIL=1     also follow the three logs in this terminal
set -u

secure=0
if [ "${1:-}" = "--secure" ]; then
    secure=1
    shift
fi
build=${1:-build/default}
data=${BATON_RUN_DATA:-run-data}
level=${BATON_LOG_LEVEL:-info}
batond=$build/batond
batonctl=$build/batonctl
members="1=127.0.0.1:7101/127.0.0.1:7001,2=127.0.0.1:7102/127.0.0.1:7002,3=127.0.0.1:7103/127.0.0.1:7003"
endpoints="127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
stop_timeout=10

say() { echo "run-cluster: $*"; }
die() { echo "run-cluster: $*" >&2; exit 1; }

[ -x "$batond" ] || die "$batond not found; build it first (make)"
mkdir -p "$data" || die "cannot create $data"

# alive, nodes_running, nodes_stop
. "$(dirname "$0")/nodes.sh"

# Is pid a live batond (for pid files left by an earlier run)?
is_batond() {
    alive "$1" && grep -q batond "/proc/$1/cmdline" 2>/dev/null
}

# Refuse to start a second cluster on the same data or ports.
for i in 1 2 3; do
    if [ -s "$data/node$i.pid" ]; then
        old=$(cat "$data/node$i.pid")
        if is_batond "$old"; then
            die "node $i is already running (pid $old) on $data; stop it first (kill $old)"
        fi
    fi
done
for port in 7001 7002 7003 7101 7102 7103 9101 9102 9103; do
    if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "port $port on 127.0.0.1 is already in use"
    fi
done

# --secure: certificates (made once), an auth file with fresh tokens, and
# each node's flags (secure_args).
certs=$data/certs
if [ "$secure" = 1 ]; then
    command -v openssl >/dev/null 2>&1 || die "--secure needs the openssl command (make deps)"
    if [ ! -s "$certs/ca.pem" ]; then
        "$(dirname "$0")/certs.sh" cluster "$certs" 3 || die "cannot make certificates in $certs"
    fi
    if [ ! -s "$certs/peer-ca.pem" ]; then
        "$(dirname "$0")/certs.sh" ca "$certs" peer-ca || die "cannot make the peer CA in $certs"
        for i in 1 2 3; do
            "$(dirname "$0")/certs.sh" cert "$certs" "peer-node$i" peer-ca "baton-node-$i" \
                "IP:127.0.0.1,DNS:localhost" || die "cannot make peer-node$i's certificate"
        done
    fi
    new_token() { openssl rand -hex 32; }
    token_hash() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
    admin_token=$(new_token)
    app_token=$(new_token)
    (
        umask 077
        echo '# written by run-cluster.sh --secure: NAME ROLE CREDENTIAL [OPTIONS] (README, "Securing a cluster")'
        echo "admin admin sha256:$(token_hash "$admin_token")"
        echo "app client sha256:$(token_hash "$app_token") prefixes=app/,demo"
    ) >"$data/auth"
fi
secure_args() { # node id
    [ "$secure" = 1 ] || return 0
    echo --tls-cert "$certs/node$1.pem" --tls-key "$certs/node$1.key" \
        --peer-cert "$certs/peer-node$1.pem" --peer-key "$certs/peer-node$1.key" \
        --peer-ca "$certs/peer-ca.pem" --auth-file "$data/auth"
}

pids=(0 0 0 0)      # indexed by node id; 0 once the node is gone
reported=(0 0 0 0)
tail_pid=0
stopping=0
failed=0

# Stop every node that is still running: SIGTERM, wait, then SIGKILL.
stop_all() {
    local i
    [ "$stopping" = 1 ] && return
    stopping=1
    trap '' INT TERM HUP
    [ "$tail_pid" != 0 ] && kill "$tail_pid" 2>/dev/null
    nodes_running && say "stopping the nodes"
    nodes_stop
    for i in 1 2 3; do
        [ "${node_killed[$i]}" = 1 ] && failed=1
        if [ "${node_status[$i]}" != 0 ] && [ "${reported[$i]}" = 0 ]; then
            say "node $i exited with status ${node_status[$i]} (see $data/node$i.log)"
            failed=1
        fi
        rm -f "$data/node$i.pid"
    done
    say "all nodes stopped; data kept in $data"
}

on_exit() {
    local rc=$?
    stop_all
    [ "$failed" = 1 ] && rc=1
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 0' INT TERM HUP

# Start node i in its own session, stderr appended to its log.
start_node() {
    local i=$1 log=$data/node$1.log
    echo "=== run-cluster: starting node $i at $(date -u +%FT%TZ) ===" >>"$log"
    # shellcheck disable=SC2046 # the secure flags are paths without spaces
    if command -v setsid >/dev/null 2>&1; then
        setsid "$batond" --id "$i" --data "$data/node$i" --cluster "$members" \
            --log-level "$level" --metrics-addr "127.0.0.1:910$i" $(secure_args "$i") \
            </dev/null >/dev/null 2>>"$log" &
    else
        "$batond" --id "$i" --data "$data/node$i" --cluster "$members" \
            --log-level "$level" --metrics-addr "127.0.0.1:910$i" $(secure_args "$i") \
            </dev/null >/dev/null 2>>"$log" &
    fi
    pids[$i]=$!
    echo "${pids[$i]}" >"$data/node$i.pid"
}

for i in 1 2 3; do
    start_node "$i"
done

echo "baton: 3 nodes on 127.0.0.1 (data in $data/, logs in $data/node{1,2,3}.log)"
for i in 1 2 3; do
    echo "  node $i  pid ${pids[$i]}  client 127.0.0.1:700$i  raft 127.0.0.1:710$i  metrics http://127.0.0.1:910$i/metrics"
done
echo "endpoints: $endpoints"

if [ "$secure" = 1 ]; then
    export BATON_CACERT=$certs/ca.pem BATON_TOKEN=$admin_token
fi

# Wait (briefly) for a leader, if batonctl is there to ask.
if [ -x "$batonctl" ]; then
    leader=""
    for ((n = 0; n < 50; n++)); do
        out=$("$batonctl" -e "$endpoints" --timeout 500 status -o json 2>/dev/null) && {
            leader=$(printf '%s\n' "$out" | sed -n 's/^{"leader_id":\([0-9]*\).*/\1/p')
            break
        }
        sleep 0.2
    done
    if [ -n "$leader" ]; then
        echo "leader: node $leader"
    else
        echo "no leader yet (check with: $batonctl status)"
    fi
fi

if [ "$secure" = 1 ]; then
    cat <<EOF

Secure: clients must use TLS (CA $certs/ca.pem) and a token. The tokens are
shown only now; the auth file $data/auth holds their SHA-256.
  admin (role admin):                             $admin_token
  app   (role client, locks app/... and demo...): $app_token
In another terminal, first:
  export BATON_CACERT=$certs/ca.pem
  export BATON_TOKEN=$admin_token
EOF
fi

cat <<EOF

Try, in another terminal:
  $batonctl status
  $batonctl lock demo -- sh -c 'echo "holding \$BATON_LOCK with fence \$BATON_FENCE"; sleep 5'
  $batonctl locks
  $batonctl lock-info demo
Logs: tail -f $data/node*.log
Ctrl-C here stops the cluster.
EOF

if [ "${BATON_TAIL:-0}" = 1 ]; then
    tail -n 0 -F "$data/node1.log" "$data/node2.log" "$data/node3.log" &
    tail_pid=$!
fi

# Watch the nodes until a signal arrives. `sleep & wait` lets the traps run
# at once instead of after the sleep.
while :; do
    n_alive=0
    for i in 1 2 3; do
        [ "${pids[$i]}" = 0 ] && continue
        if alive "${pids[$i]}"; then
            n_alive=$((n_alive + 1))
            continue
        fi
        wait "${pids[$i]}" 2>/dev/null
        st=$?
        say "node $i (pid ${pids[$i]}) exited unexpectedly with status $st; end of $data/node$i.log:"
        tail -n 10 "$data/node$i.log" | sed 's/^/    /'
        reported[$i]=1
        rm -f "$data/node$i.pid"
        pids[$i]=0
        failed=1
    done
    if [ "$n_alive" = 0 ]; then
        say "no node is running any more"
        exit 1
    fi
    sleep 1 &
    wait $! 2>/dev/null
done
