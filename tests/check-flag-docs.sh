#!/bin/sh
# check-flag-docs.sh -- batond's documented flags are the flags it has.
#
#     tests/check-flag-docs.sh BUILD_DIR
#
# `batond --help` prints every flag of its table (server/config_flags.c)
# with "[default: X]". Each must appear, with that same default, in
#   - dist/man/batond.8's OPTIONS: its own .TP entry, with a "Default: X." line;
#   - docs/operations.md's flag table: a row `--flag ARG` | X | ...;
#   - dist/batond.conf.example as a key (commented or not), and a default
#     that is one word or number as "; key = X";
# and each flag these documents name must be one that --help lists. --help
# and --config are not settings: the man page and operations.md document
# them, the configuration example has no such keys. Prints one line per
# check and a last line "N passed, N failed".
set -u
export LC_ALL=C
B=${1:-${BATON_BUILD:-build/default}}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MAN=${MAN:-$ROOT/dist/man/batond.8}
OPS=${OPS:-$ROOT/docs/operations.md}
CONF=${CONF:-$ROOT/dist/batond.conf.example}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
passed=0
failed=0

check() { # NAME, then the command that must succeed; its output says why not
    n=$((n + 1))
    if out=$("$@" 2>&1); then
        echo "ok $n - $NAME"
        passed=$((passed + 1))
    else
        echo "not ok $n - $NAME"
        printf '%s\n' "$out" | sed 's/^/#   /'
        failed=$((failed + 1))
    fi
}

# "flag<TAB>default" for each flag of --help, from its wrapped entries.
"$B/batond" --help | awk '
    function flush() { if (name != "") { d = ""; if (match(text, /\[default: [^]]*\]$/))
                           d = substr(text, RSTART + 10, RLENGTH - 11); print name "\t" d } }
    /^  (-h, )?--[a-z0-9-]+/ { flush(); s = $0; sub(/^  (-h, )?--/, "", s); split(s, w, /[ ]+/)
                           name = w[1]; text = $0; next }
    /^                         / && name != "" { t = $0; sub(/^ +/, "", t); text = text " " t; next }
    { flush(); name = "" }
    END { flush() }' | sort >"$tmp/help"

# The same from the man page's OPTIONS section: one .TP entry per flag.
awk '
    /^\.SH / { in_opts = ($0 ~ /^\.SH OPTIONS/); next }
    !in_opts { next }
    function flush() { if (name != "") print name "\t" d; name = "" }
    /^\.TP/ { flush(); tag = 1; next }
    tag { tag = 0; s = $0; gsub(/\\-/, "-", s)
          if (match(s, /--[a-z0-9-]+/)) { name = substr(s, RSTART + 2, RLENGTH - 2); d = "" }
          t = s; sub(/--[a-z0-9-]+/, "", t); if (t ~ /--[a-z0-9-]/) print "TWO\t" $0; next }
    /^\.S[SH] / { flush(); next }
    /^Default: .*\.$/ { s = $0; gsub(/\\-/, "-", s); gsub(/\\/, "", s); d = substr(s, 10, length(s) - 10) }
    END { flush() }' "$MAN" | sort >"$tmp/man"

# The same from operations.md: the rows of the table under "| flag | default |".
awk -F'|' '
    /^\| flag \| default \|/ { in_t = 1; next }
    in_t && !/^\|/ { in_t = 0 }
    !in_t || /^\|---/ { next }
    { f = $2; d = $3; gsub(/`/, "", d); gsub(/^ +| +$/, "", d)
      k = 0; while (match(f, /--[a-z0-9-]+/)) { print substr(f, RSTART + 2, RLENGTH - 2) "\t" d
                                              f = substr(f, RSTART + RLENGTH); k++ } }' "$OPS" |
    sort >"$tmp/ops"

# "key<TAB>value" of every key line of the example, commented or not.
sed -n 's/^[;#]\{0,1\} *\([a-z][a-z0-9_-]*\) *= *\(.*\)$/\1	\2/p' "$CONF" | tr _ - | sort >"$tmp/conf"

# Each help flag with its default in doc $2 ($1 names it); every flag of
# the doc is one of --help's; `skip` flags are not settings.
same_flags() {
    what=$1 doc=$2 skip=$3 bad=0
    while IFS="$(printf '\t')" read -r name def; do
        case " $skip " in *" $name "*) continue ;; esac
        got=$(awk -F'\t' -v n="$name" '$1 == n { print $2; exit }' "$doc")
        if ! grep -q "^$name	" "$doc"; then
            echo "$what does not document --$name"; bad=1
        elif [ "$got" != "$def" ]; then
            echo "$what: --$name's default is '$got', --help says '$def'"; bad=1
        fi
    done <"$tmp/help"
    while IFS="$(printf '\t')" read -r name def; do
        [ "$name" = TWO ] && { echo "$what: one entry names two flags: $def"; bad=1; continue; }
        grep -q "^$name	" "$tmp/help" || { echo "$what documents --$name, which batond does not have"; bad=1; }
    done <"$doc"
    return $bad
}

conf_keys() {
    bad=0
    while IFS="$(printf '\t')" read -r name def; do
        case $name in config | help) continue ;; esac
        if ! grep -q "^$name	" "$tmp/conf"; then
            echo "batond.conf.example lacks the key $name"; bad=1
        elif echo "$def" | grep -Eq '^[0-9a-z]+$' && ! echo "$def" | grep -Eqx 'none|off|required' &&
            ! grep -q "^; $name = $def\$" "$CONF" && ! grep -q "^; $(echo "$name" | tr - _) = $def\$" "$CONF"; then
            echo "batond.conf.example: '; $name = $def' missing (the default, --help)"; bad=1
        fi
    done <"$tmp/help"
    while IFS="$(printf '\t')" read -r name def; do
        case $name in config | help) echo "batond.conf.example: $name is not a key"; bad=1; continue ;; esac
        grep -q "^$name	" "$tmp/help" || { echo "batond.conf.example: key $name is no flag of batond"; bad=1; }
    done <"$tmp/conf"
    return $bad
}

NAME="batond --help lists flags, each with a default"
check sh -c "[ \$(wc -l <'$tmp/help') -gt 30 ] && ! awk -F'\t' '\$1 != \"help\" && \$2 == \"\"' '$tmp/help' | grep ."
NAME="dist/man/batond.8 documents every flag with --help's default"
check same_flags batond.8 "$tmp/man" help
NAME="docs/operations.md's flag table has every flag with --help's default"
check same_flags operations.md "$tmp/ops" help
NAME="dist/batond.conf.example has every flag as a key, defaults as --help's"
check conf_keys
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
