#!/bin/sh
# check-layers.sh -- the files of a folder call one way, as its header's
# file map says.
#
#     tests/check-layers.sh [BUILD_DIR]
#
# A folder's internal header carries THE map of its files (there is no copy
# of it here), in its top comment, one file per line:
#
#      *  [N] file.c   what the file does
#      *               (deeper-indented lines continue it and are ignored)
#      *  tie: a.c b.c  why these two call each other
#
# N is the file's layer, 1 the top. A file may use only files of a higher
# N; a tie lets its two files use each other whatever their layers. The
# check reads the symbols each object of the folder defines and uses (nm),
# and fails
#   - a use of a file of the same or a lower N (a call back up: a
#     completion wired in by a direct call instead of a function pointer,
#     a helper placed in the wrong file), unless a tie allows it;
#   - a .c file of the folder that the map does not list, a map entry
#     with no such file, a file listed twice, a tie naming a file the map
#     does not list, and a tie no call needs;
#   - a listed file with no object in BUILD_DIR.
# One line per file and per tie, and a last line "N passed, N failed".
#
# The folders checked are the table at the end: server/ (server_int.h),
# storage/ (store_int.h) and client/'s library (async_int.h; client/ctl/
# and client/examples/ are folders of their own). A folder marked "skip"
# whose header has no map yet is skipped with an ok line that says so;
# once the map is there it is checked like the others.
set -u
export LC_ALL=C
B=${1:-${BATON_BUILD:-build/default}}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

pass=0
fail=0
n=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

ok() {
    n=$((n + 1))
    pass=$((pass + 1))
    echo "ok $n - $1"
}
not_ok() {
    n=$((n + 1))
    fail=$((fail + 1))
    echo "not ok $n - $1"
}

# check_folder DIR HEADER MISSING: DIR's files against HEADER's map.
# MISSING says what a header without a map means: "fail" or "skip".
check_folder() {
    dir=$1
    hdr=$2
    missing=$3
    # "file.c N" per entry; "a.c b.c" per tie.
    sed -nE 's/^ \* +\[([0-9]+)\] +([a-z0-9_]+\.c)( .*)?$/\2 \1/p' "$ROOT/$hdr" >"$tmp/map"
    sed -nE 's/^ \* +tie: +([a-z0-9_]+\.c) +([a-z0-9_]+\.c)( .*)?$/\1 \2/p' "$ROOT/$hdr" >"$tmp/ties"
    if [ ! -s "$tmp/map" ]; then
        if [ "$missing" = skip ]; then
            ok "$dir/: $hdr has no file map yet; skipped"
        else
            not_ok "$dir/: $hdr has no file map"
        fi
        return
    fi

    # The map and the folder list the same files, each once.
    for f in $(awk '{ print $1 }' "$tmp/map" | sort | uniq -d); do
        not_ok "$dir/$f is listed more than once in $hdr"
    done
    for f in $(awk '{ print $1 }' "$tmp/map" | sort -u); do
        [ -f "$ROOT/$dir/$f" ] || not_ok "$hdr lists $f, but there is no $dir/$f"
    done
    for src in "$ROOT/$dir"/*.c; do
        [ -f "$src" ] || continue
        f=$(basename "$src")
        grep -q "^$f " "$tmp/map" || not_ok "$dir/$f is not in $hdr's file map"
    done
    while read -r a b; do
        for f in "$a" "$b"; do
            grep -q "^$f " "$tmp/map" || not_ok "$hdr: tie $a $b names $f, which the map does not list"
        done
    done <"$tmp/ties"

    # Who defines each global symbol: "symbol file.c".
    : >"$tmp/defs"
    for f in $(awk '{ print $1 }' "$tmp/map" | sort -u); do
        o="$B/$dir/${f%.c}.o"
        [ -f "$o" ] || continue
        nm --defined-only "$o" | awk -v f="$f" '$2 ~ /^[BDGRSTVW]$/ { print $3, f }'
    done | sort >"$tmp/defs.unsorted"
    sort -k1,1 "$tmp/defs.unsorted" >"$tmp/defs"

    # Each file's uses: "user.c used.c" for every pair whose layers break
    # the rule, then the ties take theirs out.
    : >"$tmp/needed_ties"
    while read -r f mine; do
        [ -f "$ROOT/$dir/$f" ] || continue # said above
        o="$B/$dir/${f%.c}.o"
        if [ ! -f "$o" ]; then
            not_ok "$dir/$f has no object $o (build first)"
            continue
        fi
        bad=''
        for used in $(nm --undefined-only "$o" | awk '{ print $2 }' | sort -u |
                      join - "$tmp/defs" | awk '{ print $2 }' | sort -u); do
            [ "$used" = "$f" ] && continue
            l=$(awk -v u="$used" '$1 == u { print $2; exit }' "$tmp/map")
            [ "$l" -gt "$mine" ] && continue
            if awk -v a="$f" -v b="$used" '($1 == a && $2 == b) || ($1 == b && $2 == a) { t = 1 }
                                           END { exit !t }' "$tmp/ties"; then
                echo "$f $used" >>"$tmp/needed_ties"
                continue
            fi
            bad="$bad $used"
        done
        if [ -n "$bad" ]; then
            not_ok "$dir/$f (layer $mine) uses files of its own or a higher layer:$bad"
        else
            ok "$dir/$f (layer $mine) uses only the layers below it (and its ties)"
        fi
    done <"$tmp/map"

    while read -r a b; do
        grep -q "^$a " "$tmp/map" && grep -q "^$b " "$tmp/map" || continue # said above
        if grep -qx -e "$a $b" -e "$b $a" "$tmp/needed_ties"; then
            ok "$dir/: tie $a $b is needed"
        else
            not_ok "$dir/: tie $a $b in $hdr is not needed: neither calls the other against the layers"
        fi
    done <"$tmp/ties"
}

# The folders and their maps.
check_folder server server/server_int.h fail
check_folder storage storage/store_int.h fail
check_folder client client/async_int.h fail

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
