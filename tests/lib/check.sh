# check.sh -- what the shell check scripts (tests/check-*.sh) share; source
# it, then call check_init.
#
#   . "$(dirname "$0")/lib/check.sh"
#   check_init NAME "$@"      # sets build, root, tmp; counters at 0
#   report "what was checked" "$ok" "$detail"
#   check_done                # "N passed, N failed"; status 0 if none failed
#
# check_init takes the build directory from the script's first argument,
# else $BATON_BUILD (usage error, exit 2, without either), and makes tmp, a
# fresh directory removed when the script exits. Output follows the test
# runners' form: one line per test ("ok N - name" / "not ok N - name:
# detail"), then "N passed, N failed".

check_init() { # NAME [BUILD_DIR]
    local name=$1
    build=${2:-${BATON_BUILD:-}}
    if [ -z "$build" ]; then
        echo "usage: $0 BUILD_DIR (or set BATON_BUILD)" >&2
        exit 2
    fi
    build=$(cd "$build" && pwd) || exit 2
    root=$(cd "$(dirname "$0")/.." && pwd -P)
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-$name.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
    n=0
    passed=0
    failed=0
}

# report NAME OK [DETAIL]: one test's line; OK is 1 for a pass.
report() {
    local name=$1 ok=$2 detail=${3:-}
    n=$((n + 1))
    if [ "$ok" = 1 ]; then
        echo "ok $n - $name"
        passed=$((passed + 1))
    else
        echo "not ok $n - $name${detail:+: $detail}"
        failed=$((failed + 1))
    fi
}

# The first 400 bytes of stdin on one line, for a failure's detail.
oneline() { head -c 400 | tr '\n' ' '; }

check_done() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
