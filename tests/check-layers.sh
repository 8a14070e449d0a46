#!/bin/sh
# check-layers.sh -- batond's files call one way (server/server_int.h).
#
#     tests/check-layers.sh BUILD_DIR
#
# Reads the symbols each object of server/ defines and uses (nm) and
# checks that every file uses only files of a lower layer below. A file
# that calls back up -- a completion wired in by a direct call instead of a
# function pointer, a helper placed in the wrong file -- fails the check
# with the edge that breaks the rule. Prints one line per file and a last
# line "N passed, N failed".
set -u
export LC_ALL=C
B=${1:-${BATON_BUILD:-build/default}}

# Top to bottom; a file may use the files of lower layers only.
LAYERS='
main
server restore
listen http
guard dispatch
access admin admin_cmds backup members watch keepalive
liveness deadlines disk observe loop_lag
batch
push
reply
member_addrs peers
conn_tls
conn
lease auth config resolve notify
metrics
config_file config_flags
xmalloc
log
'

layer_of() {
    echo "$LAYERS" | awk -v f="$1" 'NF { n++; for (i = 1; i <= NF; i++) if ($i == f) { print n; exit } }'
}

pass=0
fail=0
n=0
defs=$(mktemp)
trap 'rm -f "$defs"' EXIT INT TERM
for o in "$B"/server/*.o; do
    f=$(basename "$o" .o)
    nm --defined-only "$o" | awk -v f="$f" '$2 ~ /^[TDBR]$/ { print $3, f }'
done | sort >"$defs"

for o in "$B"/server/*.o; do
    f=$(basename "$o" .o)
    n=$((n + 1))
    mine=$(layer_of "$f")
    if [ -z "$mine" ]; then
        echo "not ok $n - server/$f.c has no layer in tests/check-layers.sh"
        fail=$((fail + 1))
        continue
    fi
    bad=''
    for used in $(nm --undefined-only "$o" | awk '{ print $2 }' | sort -u | join - "$defs" | awk '{ print $2 }' | sort -u); do
        l=$(layer_of "$used")
        if [ "$l" -le "$mine" ]; then bad="$bad $used.c"; fi
    done
    if [ -n "$bad" ]; then
        echo "not ok $n - server/$f.c uses files of its own or a higher layer:$bad"
        fail=$((fail + 1))
    else
        echo "ok $n - server/$f.c uses only lower layers"
        pass=$((pass + 1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
