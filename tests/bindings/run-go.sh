#!/usr/bin/env bash
# run-go.sh -- check and test the Go binding (bindings/go) with Debian's Go.
#
#   BATON_BUILD=build/default tests/bindings/run-go.sh
#
# Builds offline against the source tree's headers and $BATON_BUILD's
# libbaton.so (lib.sh, go_env).
# Checks that gofmt -l prints nothing and that go vet is clean, then runs
# `go test -v -count=1 ./...` (its tests start real clusters with
# $BATON_BUILD/tests/bindings/cluster_fixture) and turns its output into
# one line per test, "ok N - TestName (MS ms)" or "not ok N - TestName",
# and "N passed, N failed"; go's own lines are kept as "# " comments. A
# package that fails without a failed test (a build error, a panic) counts
# as one failed test. Under a sanitizer build (libbaton.so.4 exports
# __asan_init) the test binaries run with ASan's runtime preloaded (it must
# come first) and leak checking off: Go's runtime keeps memory to its end
# by design, and the go command itself runs without it.
set -u
build=${BATON_BUILD:?BATON_BUILD must name the build directory}
build=$(cd "$build" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-go.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

fail() {
    echo "# $2"
    echo "not ok 1 - $1"
    echo "0 passed, 1 failed"
    exit 1
}

go=/usr/bin/go
[ -x "$go" ] || fail "go" "no $go (make deps installs Debian's golang-go)"
. "$repo/tests/bindings/lib.sh"
go_env "$build" "$tmp" "$repo"
export BATON_BUILD=$build

exec_flag=()
if nm -D "$build/libbaton.so.4" 2>/dev/null | grep -q ' __asan_init'; then
    asan=$(cc -print-file-name=libasan.so)
    exec_flag=(-exec "env LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
fi

cd "$repo/bindings/go" || exit 1
n=0
passed=0
failed=0
result() { # ok|not ok, name, detail
    n=$((n + 1))
    if [ "$1" = ok ]; then
        passed=$((passed + 1))
        echo "ok $n - $2$3"
    else
        failed=$((failed + 1))
        echo "not ok $n - $2"
    fi
}

unformatted=$(gofmt -l . 2>&1)
if [ -z "$unformatted" ]; then
    result ok "gofmt -l bindings/go prints nothing" ""
else
    echo "$unformatted" | sed 's/^/# gofmt: /'
    result "not ok" "gofmt -l bindings/go prints nothing"
fi

if "$go" vet ./... >"$tmp/vet" 2>&1; then
    result ok "go vet ./..." ""
else
    sed 's/^/# vet: /' "$tmp/vet"
    result "not ok" "go vet ./..."
fi

"$go" test "${exec_flag[@]}" -p 1 -v -count=1 ./... >"$tmp/test" 2>&1
status=$?
# Top-level "--- PASS|FAIL|SKIP: Name (S.SSs)" lines are results; a
# package's closing "ok|FAIL<TAB>path" line ends it.
while IFS= read -r line; do
    case $line in
        "--- PASS: "* | "--- SKIP: "*)
            set -- $line
            ms=$(awk -v s="${4//[()s]/}" 'BEGIN { printf "%d", s * 1000 + 0.5 }')
            note=""
            [ "$2" = SKIP: ] && note=" # SKIP"
            result ok "$3" " ($ms ms)$note"
            ;;
        "--- FAIL: "*)
            set -- $line
            result "not ok" "$3"
            pkg_failed=1
            ;;
        "=== RUN"* | "=== PAUSE"* | "=== CONT"*) ;;
        FAIL$'\t'*)
            echo "# $line"
            if [ "${pkg_failed:-0}" = 0 ]; then
                set -- $line
                result "not ok" "package $2 failed without a failed test"
            fi
            pkg_failed=0
            ;;
        ok$'\t'* | ok" "*)
            echo "# $line"
            pkg_failed=0
            ;;
        *) echo "# $line" ;;
    esac
done <"$tmp/test"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    result "not ok" "go test exited $status"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
