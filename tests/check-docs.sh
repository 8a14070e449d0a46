#!/bin/sh
# check-docs.sh -- the user's README stays short, and nothing in the tree
# points at baton's own tracker instead of stating the reason.
#
#     tests/check-docs.sh [ROOT]       (ROOT: the repository, default .)
#
# 1. README.md has at most 360 lines: it is the user's guide; reference,
#    measurements and their history live in docs/.
# 2. No tracked file names a tracker entry of baton's: "issue 12",
#    "Issues 11", "issue #7", or a bare "#21" / "(#21)". A reference to an
#    upstream project's tracker names the project and is allowed:
#    "canonical/raft#220", "canonical/raft PR #280", "libuv/libuv issue 42".
# 3. Every docs/ file that README.md links to exists.
# Prints one line per check and a last line "N passed, N failed".
set -u
export LC_ALL=C
root=${1:-.}
cd "$root" || exit 1
passed=0
failed=0
n=0
result() { # result OK TEXT
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"; passed=$((passed + 1))
    else
        echo "not ok $n - $2"; failed=$((failed + 1))
    fi
}

max=360
lines=$(wc -l < README.md)
[ "$lines" -le "$max" ]
result $? "README.md has $lines lines (at most $max)"

# The tracked files (or, outside a git checkout, every file but build
# output), text only, that match at all; then each match again with the
# upstream forms taken out. This script is left out: it spells the forms
# out.
upstream='[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+ ?((PR|pull request|issue|Issue) ?)?#?[0-9]+'
own='(^|[^A-Za-z0-9_])[Ii]ssues? ?#?[0-9]+|(^|[[:space:]([])#[0-9]{2,}([^0-9A-Za-z]|$)'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    candidates=$(git grep -lIE "$own" -- . ':!tests/check-docs.sh')
else
    candidates=$(grep -rlIE "$own" --exclude-dir=.git --exclude-dir=build --exclude-dir=run-data . |
                 sed 's|^\./||' | grep -vx tests/check-docs.sh)
fi
hits=$(mktemp)
trap 'rm -f "$hits"' EXIT
for f in $candidates; do
    sed -E "s@$upstream@@g" "$f" | grep -nE "$own" | sed "s|^|$f:|"
done > "$hits"
if [ -s "$hits" ]; then
    sed 's/^/#   /' "$hits" | head -n 20
    false
fi
result $? "no file names a tracker issue of baton's ($(wc -l < "$hits") found)"

missing=$(grep -oE '\(docs/[A-Za-z0-9_.-]+\)|\(tests/[A-Za-z0-9_./-]+\)' README.md | tr -d '()' | sort -u |
          while IFS= read -r p; do [ -e "$p" ] || echo "$p"; done)
[ -z "$missing" ]
result $? "every file README.md links to exists${missing:+ (missing: $(echo $missing))}"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
