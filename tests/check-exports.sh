#!/usr/bin/env bash
# check-exports.sh -- libbaton.so exports exactly the public API, and the
# public headers stand on their own.
#
#   tests/check-exports.sh [BUILD_DIR]     (default: $BATON_BUILD)
#
# The public API is what the four public headers declare: include/baton/baton.h,
# include/baton/baton_async.h, include/baton/baton_defs.h and include/baton/adapters/libuv.h
# (header-only: static functions, nothing to export). libbaton is built
# with -fvisibility=hidden, so a function is exported only if its
# declaration carries BATON_API (include/baton/baton_defs.h).
#
# The list of public functions comes from the C preprocessor: the four
# headers are preprocessed together, and every non-static function
# declared (or defined) at file scope in text that comes from include/baton/ is
# one. Cross-check: grepping the headers for BATON_API and taking the
# identifier before the first '(' on that line must give the same list, so
# BATON_API has to sit on the line that names the function.
#
# Tests:
#  - every public function is marked BATON_API, on the line of its name;
#  - every name a public header declares (functions, typedefs, struct /
#    union / enum tags, macros) starts with baton_ / BATON_;
#  - public headers include only standard C headers, each other, and
#    (the adapter only) <uv.h>;
#  - every symbol libbaton.so exports is declared in a public header
#    (nm -D --defined-only, ignoring the linker's _init, _fini, _edata,
#    _end, __bss_start ...);
#  - every public function is exported;
#  - no writable data is exported;
#  - each header compiles on its own as C11, and as C++11 (extern "C"
#    guards), with only -I include/baton and the system include path, from an
#    empty directory;
#  - a C++ program that calls every public function links against
#    libbaton.so (not the archive) and runs, found through the soname.
#
# Output: one line per test ("ok N - name" / "not ok N - name: detail"),
# then "N passed, N failed". Exit status 0 if all passed.
set -u

. "$(dirname "$0")/lib/check.sh"
check_init check-exports "$@"
inc=$root/include/baton
so=$build/libbaton.so
CC=${CC:-cc}
CXX=${CXX:-c++}
HEADERS=(baton_defs.h baton.h baton_async.h adapters/libuv.h)

# The words of a file, space-separated, on one line.
words() { tr '\n' ' ' <"$1" | sed 's/ *$//'; }

# ---- what the headers declare ------------------------------------------------
# Preprocess every public header from an empty directory, keep the text
# that comes from files under include/baton/ (linemarkers tell), and split it into
# file-scope statements. Emits "fn NAME MARKED", "static NAME",
# "typedef NAME" and "tag NAME" lines.
for h in "${HEADERS[@]}"; do echo "#include \"$h\""; done >"$tmp/all.h"
parse_ok=1
if ! (cd "$tmp" && "$CC" -std=c11 -E -I "$inc" -x c all.h >"$tmp/all.i" 2>"$tmp/pp.err"); then
    parse_ok=0
fi
awk -v inc="$inc/" '
function ident_before(s, i,    j) {  # the identifier that ends right before s[i]
    while (i > 1 && substr(s, i - 1, 1) == " ") i--
    j = i
    while (j > 1 && substr(s, j - 1, 1) ~ /[A-Za-z0-9_]/) j--
    return substr(s, j, i - j)
}
function strip_attr(s,    p, i, d, c) {   # drop __attribute__((...))
    while ((p = index(s, "__attribute__")) > 0) {
        i = p + length("__attribute__"); d = 0
        for (; i <= length(s); i++) {
            c = substr(s, i, 1)
            if (c == "(") d++
            else if (c == ")") { d--; if (d == 0) break }
        }
        s = substr(s, 1, p - 1) " " substr(s, i + 1)
    }
    return s
}
function statement(top, full,    s, marked, p, name, rest) {
    marked = (full ~ /visibility *\( *"default" *\)/) ? 1 : 0
    s = strip_attr(top)
    gsub(/[ \t]+/, " ", s); sub(/^ /, "", s)
    rest = full
    while (match(rest, /(^|[^A-Za-z0-9_])(struct|union|enum)[ ]+[A-Za-z_][A-Za-z0-9_]*/)) {
        name = substr(rest, RSTART, RLENGTH); sub(/^[^a-z]*[a-z]+[ ]+/, "", name)
        print "tag " name
        rest = substr(rest, RSTART + RLENGTH)
    }
    if (s == "") return
    if (s ~ /^typedef /) {
        if (match(s, /\( *\* *[A-Za-z_][A-Za-z0-9_]* *\)/)) {
            name = substr(s, RSTART, RLENGTH); gsub(/[ ()*]/, "", name)
        } else if ((p = index(s, "(")) > 0) {
            name = ident_before(s, p)
        } else {
            name = s; sub(/[ ]*$/, "", name); sub(/.*[^A-Za-z0-9_]/, "", name)
        }
        print "typedef " name
        return
    }
    if ((p = index(s, "(")) == 0) return      # a struct definition, a variable
    name = ident_before(s, p)
    if (name == "") return
    if (s ~ /(^| )static /) print "static " name
    else print "fn " name " " marked
}
/^# [0-9]+ "/ {
    f = $3; gsub(/"/, "", f)
    keep = (index(f, inc) == 1)
    next
}
keep { text = text " " $0 }
END {
    bd = 0; pd = 0; top = ""; full = ""; infn = 0
    for (i = 1; i <= length(text); i++) {
        c = substr(text, i, 1)
        if (c == "\"") {                     # skip string literals whole
            j = i + 1
            while (j <= length(text) && substr(text, j, 1) != "\"") {
                if (substr(text, j, 1) == "\\") j++
                j++
            }
            s = substr(text, i, j - i + 1)
            full = full s
            if (bd == 0) top = top s
            i = j
            continue
        }
        if (c == "{") {
            if (bd == 0 && pd == 0 && top ~ /\)[ ]*$/ && top !~ /^[ ]*typedef/) infn = 1
            bd++
            if (bd == 1) top = top "{"
            full = full c
            continue
        }
        if (c == "}") {
            bd--
            if (bd == 0) top = top "}"
            full = full c
            if (bd == 0 && infn) { statement(top, full); top = ""; full = ""; infn = 0 }
            continue
        }
        if (c == "(") pd++
        if (c == ")") pd--
        full = full c
        if (bd == 0) top = top c
        if (c == ";" && bd == 0 && pd == 0) {
            statement(substr(top, 1, length(top) - 1), full)
            top = ""; full = ""
        }
    }
}' "$tmp/all.i" >"$tmp/decls"

awk '$1 == "fn" { print $2 }' "$tmp/decls" | sort -u >"$tmp/public"
awk '$1 == "fn" && $3 == 0 { print $2 }' "$tmp/decls" | sort -u >"$tmp/unmarked"
# The cross-check: the identifier before the first '(' of each BATON_API line.
(cd "$inc" && cat "${HEADERS[@]}") | grep -E '^[^#]*\bBATON_API\b' | grep -vE '^[[:space:]]*(/?\*|//)' |
    sed -E 's/\(.*//; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*$/\1/' |
    sort -u >"$tmp/grepped"

if [ "$parse_ok" = 0 ] || [ ! -s "$tmp/public" ]; then
    report "the public headers declare functions" 0 \
        "preprocessing found none: $(head -c 300 "$tmp/pp.err" | tr '\n' ' ')"
else
    detail=""
    [ -s "$tmp/unmarked" ] && detail="not marked: $(words "$tmp/unmarked")"
    diff1=$(comm -23 "$tmp/public" "$tmp/grepped" | tr '\n' ' ')
    diff2=$(comm -13 "$tmp/public" "$tmp/grepped" | tr '\n' ' ')
    [ -n "$diff1" ] && detail="$detail${detail:+; }BATON_API not on the line of: $diff1"
    [ -n "$diff2" ] && detail="$detail${detail:+; }BATON_API lines that declare no function: $diff2"
    [ -z "$detail" ] && ok=1 || ok=0
    report "every public function ($(wc -l <"$tmp/public")) is marked BATON_API on the line of its name" \
        "$ok" "$detail"
fi

# Names: functions, statics, typedefs and tags from the preprocessor; macros
# from the headers' #define lines, less those #undef'd again.
{
    awk '{ print $2 }' "$tmp/decls"
    (cd "$inc" && cat "${HEADERS[@]}") | sed -nE 's/^[[:space:]]*#[[:space:]]*define[[:space:]]+([A-Za-z_][A-Za-z0-9_]*).*/\1/p' |
        sort -u >"$tmp/defined"
    (cd "$inc" && cat "${HEADERS[@]}") | sed -nE 's/^[[:space:]]*#[[:space:]]*undef[[:space:]]+([A-Za-z_][A-Za-z0-9_]*).*/\1/p' |
        sort -u >"$tmp/undefd"
    comm -23 "$tmp/defined" "$tmp/undefd"
} | grep -vE '^(baton$|baton_|BATON_)' |
    grep -vxE 'addrinfo' | sort -u >"$tmp/foreign"   # the libuv adapter's resolver uses getaddrinfo's struct
[ -s "$tmp/foreign" ] && ok=0 || ok=1
report "every name a public header declares starts with baton_ or BATON_" "$ok" \
    "$(words "$tmp/foreign")"

# Includes: standard C headers, the public headers themselves, <uv.h> in the adapter.
bad=""
std='assert|complex|ctype|errno|fenv|float|inttypes|iso646|limits|locale|math|setjmp|signal|stdalign|stdarg|stdatomic|stdbool|stddef|stdint|stdio|stdlib|stdnoreturn|string|tgmath|threads|time|uchar|wchar|wctype'
for h in "${HEADERS[@]}"; do
    dir=$(dirname "$inc/$h")
    while IFS= read -r line; do
        target=$(printf '%s\n' "$line" | sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/p')
        [ -z "$target" ] && { bad="$bad $h:'$line'"; continue; }
        case $line in
        *'<'*)
            if printf '%s\n' "$target" | grep -qxE "($std)\.h"; then continue; fi
            if [ "$h" = adapters/libuv.h ] && [ "$target" = uv.h ]; then continue; fi
            bad="$bad $h:<$target>"
            ;;
        *)
            rel=$(cd "$dir" 2>/dev/null && realpath -m "$target")
            case " ${HEADERS[*]} " in
            *" ${rel#"$inc"/} "*) [ "${rel#"$inc"/}" != "$rel" ] && continue ;;
            esac
            bad="$bad $h:\"$target\""
            ;;
        esac
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$inc/$h")
done
[ -z "$bad" ] && ok=1 || ok=0
report "public headers include only standard headers, each other and (the adapter) <uv.h>" \
    "$ok" "${bad# }"

# ---- what libbaton.so exports ------------------------------------------------
if [ ! -e "$so" ] || [ ! -s "$tmp/public" ]; then
    why="$so is missing (build it first)"
    [ -e "$so" ] && why="no list of public functions (see test 1)"
    for t in "every exported symbol is declared in a public header" \
        "every public function is exported" "no writable data is exported"; do
        report "$t" 0 "$why"
    done
else
    nm -D --defined-only "$so" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $2, $3 }' |
        grep -vE ' (_init|_fini|_edata|_end|__bss_start|__bss_start__|__bss_end__|_bss_end__|__end__|__data_start|data_start|_IO_stdin_used)$' \
            >"$tmp/dynsym"
    awk '{ print $2 }' "$tmp/dynsym" | sort -u >"$tmp/exported"
    comm -23 "$tmp/exported" "$tmp/public" >"$tmp/extra"
    comm -13 "$tmp/exported" "$tmp/public" >"$tmp/missing"
    awk '$1 ~ /^[DdBbGgSsCV]$/ { print $2 "(" $1 ")" }' "$tmp/dynsym" >"$tmp/data"
    [ -s "$tmp/extra" ] && ok=0 || ok=1
    report "every exported symbol ($(wc -l <"$tmp/exported")) is declared in a public header" "$ok" \
        "$(wc -l <"$tmp/extra") extra: $(words "$tmp/extra")"
    [ -s "$tmp/missing" ] && ok=0 || ok=1
    report "every public function is exported" "$ok" "missing: $(words "$tmp/missing")"
    [ -s "$tmp/data" ] && ok=0 || ok=1
    report "no writable data is exported" "$ok" "$(words "$tmp/data")"
fi

# ---- each header on its own ----------------------------------------------------
have_cxx=0
command -v "$CXX" >/dev/null 2>&1 && have_cxx=1
for h in "${HEADERS[@]}"; do
    echo "#include \"$h\"" >"$tmp/one.h"
    # <uv.h> itself needs POSIX types (pthread_rwlock_t) that strict C11
    # hides, so the adapter gets what <uv.h> alone needs, and no more.
    posix=""
    [ "$h" = adapters/libuv.h ] && posix=-D_POSIX_C_SOURCE=200809L
    ok=1
    out=$(cd "$tmp" && "$CC" -std=c11 $posix -Wall -Wextra -Werror -Wpedantic -Wstrict-prototypes \
        -Wshadow -Wwrite-strings -fsyntax-only -I "$inc" -x c one.h 2>&1) || ok=0
    report "$h compiles on its own (C11${posix:+ $posix})" "$ok" \
        "$(printf '%s' "$out" | head -c 400 | tr '\n' ' ')"
    if [ "$have_cxx" = 1 ]; then
        ok=1
        out=$(cd "$tmp" && "$CXX" -std=c++11 -Wall -Wextra -Werror -Wpedantic -fsyntax-only \
            -I "$inc" -x c++ one.h 2>&1) || ok=0
        report "$h compiles on its own (C++11)" "$ok" "$(printf '%s' "$out" | head -c 400 | tr '\n' ' ')"
    else
        report "$h compiles on its own (C++11) # SKIP no $CXX" 1
    fi
done

# ---- a program linked against the shared library ---------------------------------
# Takes the address of every public function (so the extern "C" guards and
# the dynamic symbol table must agree), links with -L BUILD -lbaton (the
# .so wins over the .a for -l), checks that it recorded the soname, runs.
if [ "$have_cxx" = 0 ] || [ ! -e "$so" ] || [ ! -s "$tmp/public" ]; then
    report "a C++ program using every public function links against libbaton.so # SKIP" 1
else
    {
        for h in "${HEADERS[@]}"; do echo "#include \"$h\""; done
        echo "#include <cstdio>"
        echo "typedef void (*any_fn)(void);"
        echo "static any_fn fns[] = {"
        sed 's/.*/    reinterpret_cast<any_fn>(\&&),/' "$tmp/public"
        echo "};"
        echo "int main() {"
        echo "    for (unsigned i = 0; i < sizeof fns / sizeof fns[0]; i++) if (!fns[i]) return 1;"
        printf '    std::printf("%%s\\n", baton_strerror(BATON_ENOTLEADER));\n'
        echo "    return 0;"
        echo "}"
    } >"$tmp/use.cc"
    # A sanitized libbaton.so needs the sanitizer runtime in the program.
    san=""
    nm -D --undefined-only "$so" | grep -q '__asan_' && san="-fsanitize=address,undefined"
    [ -z "$san" ] && nm -D --undefined-only "$so" | grep -q '__ubsan_' && san="-fsanitize=undefined"
    detail=""
    if ! out=$(cd "$tmp" && "$CXX" -std=c++11 -Wall -Wextra -Werror $san -I "$inc" use.cc \
        -o use -L "$build" -lbaton -luv -lpthread 2>&1); then
        detail="link: $(printf '%s' "$out" | head -c 400 | tr '\n' ' ')"
    elif ! readelf -d "$tmp/use" | grep -q 'NEEDED.*\[libbaton\.so\.[0-9]'; then
        detail="the program does not record libbaton's versioned soname: $(readelf -d "$tmp/use" | grep NEEDED | tr '\n' ' ')"
    elif ! out=$(LD_LIBRARY_PATH=$build "$tmp/use" 2>&1) || [ "$out" != "node is not the leader" ]; then
        detail="run: $(printf '%s' "$out" | head -c 400 | tr '\n' ' ')"
    fi
    [ -z "$detail" ] && ok=1 || ok=0
    report "a C++ program using every public function links against libbaton.so and runs" "$ok" "$detail"
fi

check_done
