#!/usr/bin/env bash
# check-includes.sh -- the folders include one way.
#
#     tests/check-includes.sh [BUILD_DIR]    (BUILD_DIR is not used: sources only)
#
# Reads every #include of the .c and .h files under proto/, storage/,
# raft/, server/, client/ and include/baton/, finds the file it names as
# the compiler would (a "..." include next to the file first, then -I. and
# -Iinclude; a <...> include through -I. and -Iinclude, else it is a system
# header), and checks the rules below. One line per rule, and a last line
# "N passed, N failed"; a failing rule lists each offending FILE:LINE and
# what it includes.
#
# The rules (the two tables below are the only copy):
#   1. proto/          includes only proto/ and include/baton/
#   2. storage/        includes only storage/, proto/ and include/baton/:
#                      nothing of raft/, server/ or client/
#   3. raft/           includes only raft/, storage/, proto/ and
#                      include/baton/: nothing of server/ or client/
#   4. server/         includes only server/, raft/, storage/, proto/ and
#                      include/baton/: nothing of client/
#   5. client/         (libbaton, and client/examples/) includes only
#                      client/, proto/ and include/baton/: not client/ctl/
#   6. client/ctl/     (batonctl) includes only client/ctl/, client/,
#                      proto/ and include/baton/
#   7. include/baton/  includes only include/baton/ (check-exports.sh
#                      holds the public headers to standard headers too)
#   8. only raft/ includes <raft.h> or <raft/...>
#   9. only storage/ includes <lmdb.h>
#  10. every #include names a file: "..." is found in the tree, and the
#      form is "..." or <...>
# A file in a folder that none of 1-7 lists fails rule 10's way: closed.
set -u
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1

# FOLDER -> the folders its files may include (rules 1-7). A file belongs
# to the longest folder of this table that its path starts with.
FOLDERS=(proto/ storage/ raft/ server/ client/ client/ctl/ include/baton/)
declare -A MAY=(
    [proto/]="proto/ include/baton/"
    [storage/]="storage/ proto/ include/baton/"
    [raft/]="raft/ storage/ proto/ include/baton/"
    [server/]="server/ raft/ storage/ proto/ include/baton/"
    [client/]="client/ proto/ include/baton/"
    [client/ctl/]="client/ctl/ client/ proto/ include/baton/"
    [include/baton/]="include/baton/"
)
# System headers only one folder may include (rules 8-9): a pattern of the
# name inside <...>, and the folder.
SYS_PATTERNS=('raft.h' 'raft/*' 'lmdb.h')
declare -A SYS_ONLY=([raft.h]=raft/ [raft/*]=raft/ [lmdb.h]=storage/)

folder_of() { # PATH: FOLDER = its folder of the table, or "" if none
    local f
    FOLDER=''
    for f in "${FOLDERS[@]}"; do
        if [[ $1 == "$f"* && ${#f} -gt ${#FOLDER} ]]; then FOLDER=$f; fi
    done
}

normalize() { # PATH: NORM = PATH without "." and "dir/.." steps
    local part out=() IFS=/
    for part in $1; do
        case $part in
        '' | .) ;;
        ..) if ((${#out[@]})); then unset 'out[${#out[@]}-1]'; else out+=(..); fi ;;
        *) out+=("$part") ;;
        esac
    done
    NORM="${out[*]}"
}

# An #include line: its delimiter (" or <) and the name inside.
INCLUDE_RE='^[[:space:]]*#[[:space:]]*include[[:space:]]*(["<])([^">]+)[">]'
declare -A BAD # rule key -> offending lines
add_bad() { BAD[$1]+="    $2"$'\n'; }

while IFS= read -r file; do
    folder_of "$file"
    from=$FOLDER
    dir=${file%/*}
    while IFS=: read -r line text; do
        if [[ $text =~ $INCLUDE_RE ]]; then
            delim=${BASH_REMATCH[1]}
            name=${BASH_REMATCH[2]}
        else
            add_bad names "$file:$line: $text (neither \"...\" nor <...>)"
            continue
        fi
        target=''
        if [[ $delim == '"' && -f $dir/$name ]]; then
            target=$dir/$name
        elif [[ -f $name ]]; then
            target=$name
        elif [[ -f include/$name ]]; then
            target=include/$name
        fi
        if [[ -n $target ]]; then
            normalize "$target"
            target=$NORM
        fi
        if [[ -z $target ]]; then
            if [[ $delim == '"' ]]; then
                add_bad names "$file:$line: \"$name\" is no file of the tree"
                continue
            fi
            # A system header: is it one only a single folder may use?
            for p in "${SYS_PATTERNS[@]}"; do
                # shellcheck disable=SC2053 # p is a glob pattern
                if [[ $name == $p && $from != "${SYS_ONLY[$p]}" ]]; then
                    add_bad "sys:${SYS_ONLY[$p]}:$p" "$file:$line: <$name>"
                fi
            done
            continue
        fi
        folder_of "$target"
        to=$FOLDER
        if [[ -z $to ]]; then
            add_bad names "$file:$line: $target is in no folder of the rules"
            continue
        fi
        if [[ " ${MAY[$from]} " != *" $to "* ]]; then
            add_bad "$from" "$file:$line: $target"
        fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$file")
done < <(find proto storage raft server client include/baton -type f \( -name '*.c' -o -name '*.h' \) | sort)

pass=0
fail=0
n=0
report() { # KEY TEXT
    n=$((n + 1))
    if [[ -z ${BAD[$1]:-} ]]; then
        echo "ok $n - $2"
        pass=$((pass + 1))
    else
        echo "not ok $n - $2:"
        printf '%s' "${BAD[$1]}"
        fail=$((fail + 1))
    fi
}
for f in "${FOLDERS[@]}"; do
    report "$f" "$f includes only ${MAY[$f]}"
done
report "sys:raft/:raft.h" "only raft/ includes <raft.h>"
report "sys:raft/:raft/*" "only raft/ includes <raft/...>"
report "sys:storage/:lmdb.h" "only storage/ includes <lmdb.h>"
report names "every #include is \"...\" or <...>, and a \"...\" one names a file of the tree"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
