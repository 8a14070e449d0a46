#!/usr/bin/env bash
# check-install.sh -- `make install` into a DESTDIR gives a usable system:
# programs, library, headers, pkg-config file, man pages, systemd unit,
# example configuration, bash completion; `make uninstall` removes it all.
#
#   tests/check-install.sh [BUILD_DIR]     (default: $BATON_BUILD)
#
# Installs what BUILD_DIR holds (make install-built, which builds nothing)
# with PREFIX=/usr/local into a fresh temporary DESTDIR, then:
#  - every file dist/install.sh lists is there, and the usual ones are among
#    them; the library's real file, soname link and dev link agree; the
#    configuration goes to PREFIX/etc/baton (and /etc/baton for PREFIX=/usr);
#  - every public function (BATON_API, and the adapter's baton_uv_attach)
#    has a man page, every BATON_E code is in baton_strerror(3);
#  - a program using <baton/baton.h>, <baton/baton_async.h> and
#    <baton/adapters/libuv.h> compiles and links with the installed
#    libbaton.pc (PKG_CONFIG_PATH, PKG_CONFIG_SYSROOT_DIR) against the
#    shared library, and against libbaton.a with `pkg-config --static`;
#    each runs: baton_strerror, and a connect to a closed port that fails
#    cleanly with BATON_EUNAVAIL;
#  - the installed batond --help and batonctl --help work;
#  - every man page renders without warnings (man --warnings, else groff
#    -ww; skipped with a note if neither is installed), every .so alias
#    names a page that is there;
#  - systemd-analyze verify accepts the unit (a copy whose ExecStart is the
#    DESTDIR's batond; skipped with a note if systemd-analyze is missing),
#    and the unit has the settings docs/operations.md promises;
#  - every key of batond.conf.example is a long option of batond;
#  - the completion passes bash -n, offers every batonctl command after
#    `batonctl `, and files after --cacert;
#  - make uninstall leaves no file or link behind.
#
# Output: one line per test ("ok N - name" / "not ok N - name: detail"),
# then "N passed, N failed". Exit status 0 if all passed.
set -u

. "$(dirname "$0")/lib/check.sh"
check_init check-install "$@"
CC=${CC:-cc}
prefix=/usr/local

dest=$tmp/root

# ---- make install -----------------------------------------------------------------
ok=1
out=$(make -C "$root" --no-print-directory -s install-built B="$build" DESTDIR="$dest" \
    PREFIX=$prefix 2>&1) || ok=0
report "make install-built DESTDIR=... PREFIX=$prefix succeeds" "$ok" "$(printf '%s' "$out" | oneline)"

soname_mk=$(sed -n 's/^SONAME *:= *//p' "$root/Makefile")
B=$build SONAME=$soname_mk VERSION=x PREFIX=$prefix "$root/dist/install.sh" list >"$tmp/list"
missing=""
while read -r f; do
    [ -e "$dest$f" ] || [ -L "$dest$f" ] || missing="$missing $f"
done <"$tmp/list"
for f in sbin/batond bin/batonctl lib/libbaton.a lib/libbaton.so "lib/$soname_mk" \
    include/baton/baton.h include/baton/baton_async.h include/baton/baton_defs.h \
    include/baton/adapters/libuv.h lib/pkgconfig/libbaton.pc share/man/man8/batond.8 \
    share/man/man1/batonctl.1 share/man/man3/libbaton.3 lib/systemd/system/batond.service \
    share/bash-completion/completions/batonctl; do
    [ -e "$dest$prefix/$f" ] || missing="$missing $prefix/$f"
done
[ -e "$dest$prefix/etc/baton/batond.conf.example" ] || missing="$missing $prefix/etc/baton/batond.conf.example"
[ -z "$missing" ] && ok=1 || ok=0
report "every file install lists ($(wc -l <"$tmp/list")) is installed" "$ok" "missing:$missing"

# The configuration directory follows the prefix as autoconf's sysconfdir
# does: PREFIX/etc, except /etc for a system install (PREFIX=/usr).
detail=""
[ -e "$dest/etc" ] && detail="wrote $dest/etc under PREFIX=$prefix"
for p_e in /usr/local:/usr/local/etc /opt/baton:/opt/baton/etc /usr:/etc; do
    got=$(B=$build SONAME=$soname_mk VERSION=x PREFIX=${p_e%%:*} "$root/dist/install.sh" list |
        grep batond.conf.example)
    [ "$got" = "${p_e#*:}/baton/batond.conf.example" ] || detail="$detail PREFIX=${p_e%%:*}: $got"
done
[ -z "$detail" ] && ok=1 || ok=0
report "SYSCONFDIR follows PREFIX (PREFIX/etc; /etc for PREFIX=/usr)" "$ok" "$detail"

lib=$dest$prefix/lib
so=$soname_mk
soname=$(readelf -d "$lib/$so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
detail=""
[ -f "$lib/$so.0.0" ] && [ ! -L "$lib/$so.0.0" ] || detail="$so.0.0 is not a file"
[ "$(readlink "$lib/$so")" = "$so.0.0" ] || detail="$detail $so -> $(readlink "$lib/$so")"
[ "$(readlink "$lib/libbaton.so")" = "$so" ] || detail="$detail libbaton.so -> $(readlink "$lib/libbaton.so")"
[ "$soname" = "$so" ] || detail="$detail soname '$soname'"
[ -z "$detail" ] && ok=1 || ok=0
report "libbaton.so -> $so (the Makefile's SONAME) -> $so.0.0" "$ok" "$detail"

# ---- man pages of the API -----------------------------------------------------------
man=$dest$prefix/share/man
inc=$dest$prefix/include/baton
missing=""
for fn in $( (cat "$inc/baton_defs.h" "$inc/baton.h" "$inc/baton_async.h" | grep -E '^BATON_API' |
    sed -E 's/\(.*//; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*$/\1/') | sort -u) baton_uv_attach; do
    [ -e "$man/man3/$fn.3" ] || missing="$missing $fn"
done
[ -z "$missing" ] && ok=1 || ok=0
report "every public function has a man page in section 3" "$ok" "missing:$missing"

missing=""
for e in $(sed -n 's/^ *XX(\([A-Z]*\),.*/BATON_\1/p' "$inc/baton_defs.h"); do
    grep -q "$e" "$man/man3/baton_strerror.3" || missing="$missing $e"
done
[ -z "$missing" ] && ok=1 || ok=0
report "baton_strerror(3) lists every BATON_E code" "$ok" "missing:$missing"

# ---- a program built against what was installed ---------------------------------------
export PKG_CONFIG_PATH=$dest$prefix/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
# A sanitized libbaton needs the sanitizer runtime in the program.
san=""
nm -D --undefined-only "$lib/$so" 2>/dev/null | grep -q '__asan_' && san="-fsanitize=address,undefined"
cat >"$tmp/prog.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <baton/baton.h>
#include <baton/baton_async.h>
#include <baton/adapters/libuv.h>

int main(int argc, char **argv)
{
    baton_opts o = {.endpoints = argc > 1 ? argv[1] : "127.0.0.1:1", .connect_timeout_ms = 300};
    baton_t *b = NULL;
    int (*attach)(baton_async_t *, uv_loop_t *) = baton_uv_attach;
    int rv;

    printf("%s\n", baton_strerror(BATON_ENOTLEADER));
    rv = baton_connect(&o, &b);
    printf("%s %d\n", baton_err_name(rv), b == NULL && attach != NULL && strlen(baton_connect_errmsg()) > 0);
    return rv == BATON_EUNAVAIL ? 0 : 1;
}
EOF
# A port nothing listens on: bound here, never listened on, closed at exit.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 1)
want="node is not the leader
BATON_EUNAVAIL 1"

cflags=$(pkg-config --cflags libbaton 2>&1)
libs=$(pkg-config --libs libbaton libuv 2>&1)
detail=""
if ! out=$("$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror $san $cflags \
    "$tmp/prog.c" -o "$tmp/prog" $libs 2>&1); then
    detail="build ($cflags / $libs): $(printf '%s' "$out" | oneline)"
elif ! readelf -d "$tmp/prog" | grep -qF "Shared library: [$so]"; then
    detail="does not need $so"
elif ! out=$(LD_LIBRARY_PATH=$lib "$tmp/prog" "127.0.0.1:$port" 2>&1) || [ "$out" != "$want" ]; then
    detail="run: $(printf '%s' "$out" | oneline)"
elif ! LD_LIBRARY_PATH=$lib ldd "$tmp/prog" | grep -qF "$so => $lib/$so"; then
    detail="ldd does not find the installed library"
fi
[ -z "$detail" ] && ok=1 || ok=0
report "#include <baton/...> + pkg-config --cflags --libs libbaton: builds, links $so, runs" "$ok" "$detail"

slibs=$(pkg-config --static --libs libbaton libuv 2>&1)
detail=""
for l in -luv -lssl -lcrypto -lpthread; do
    case " $slibs " in *" $l "*) ;; *) detail="$detail no $l in '$slibs'" ;; esac
done
if [ -z "$detail" ]; then
    if ! out=$("$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror $san $cflags \
        "$tmp/prog.c" -o "$tmp/sprog" ${slibs/-lbaton/-l:libbaton.a} 2>&1); then
        detail="build (${slibs/-lbaton/-l:libbaton.a}): $(printf '%s' "$out" | oneline)"
    elif readelf -d "$tmp/sprog" | grep -q 'NEEDED.*libbaton'; then
        detail="still needs libbaton.so"
    elif ! out=$("$tmp/sprog" "127.0.0.1:$port" 2>&1) || [ "$out" != "$want" ]; then
        detail="run: $(printf '%s' "$out" | oneline)"
    fi
fi
[ -z "$detail" ] && ok=1 || ok=0
report "pkg-config --static --libs libbaton links libbaton.a (libuv, ssl, crypto, pthread), runs" "$ok" "$detail"

# ---- the programs -----------------------------------------------------------------------
for p in sbin/batond bin/batonctl; do
    ok=1
    out=$("$dest$prefix/$p" --help 2>&1) || ok=0
    printf '%s' "$out" | grep -q "^usage: $(basename "$p")" || ok=0
    report "installed $(basename "$p") --help" "$ok" "$(printf '%s' "$out" | oneline)"
done

# ---- man pages render -----------------------------------------------------------------
pages=$(cd "$man" && grep -L '^\.so ' man*/*.[0-9])
if command -v man >/dev/null 2>&1; then
    render() { MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null; }
    how="man --warnings -l"
elif command -v groff >/dev/null 2>&1; then
    render() { groff -man -Tutf8 -ww -z "$1" 2>&1; }
    how="groff -man -ww"
else
    render=""
fi
if [ -z "${how:-}" ]; then
    report "man pages render without warnings # SKIP neither man nor groff is installed" 1
else
    bad=""
    for p in $pages; do
        w=$(render "$man/$p")
        [ -n "$w" ] && bad="$bad $p: $w;"
    done
    [ -z "$bad" ] && ok=1 || ok=0
    report "$(echo "$pages" | wc -w) man pages render without warnings ($how)" "$ok" "$(printf '%s' "$bad" | oneline)"
fi
bad=""
aliases=0
for p in $(cd "$man" && grep -l '^\.so ' man*/*.[0-9]); do
    aliases=$((aliases + 1))
    target=$(sed -n 's/^\.so //p' "$man/$p")
    [ -f "$man/$target" ] || bad="$bad $p->$target"
done
[ -z "$bad" ] && [ "$aliases" -gt 0 ] && ok=1 || ok=0
report "every .so alias page ($aliases) names an installed page" "$ok" "$bad"

# ---- the systemd unit -------------------------------------------------------------------
unit=$dest$prefix/lib/systemd/system/batond.service
missing=""
for want_line in Type=notify User=baton "ExecStart=$prefix/sbin/batond --config $prefix/etc/baton/batond.conf" \
    Restart=on-failure ProtectSystem=strict ReadWritePaths=/var/lib/baton NoNewPrivileges=yes \
    LimitNOFILE= TimeoutStopSec= WantedBy=multi-user.target; do
    grep -q "^$want_line" "$unit" || missing="$missing '$want_line'"
done
[ -z "$missing" ] && ok=1 || ok=0
report "batond.service has the settings docs/operations.md describes" "$ok" "missing:$missing"

if ! command -v systemd-analyze >/dev/null 2>&1; then
    report "systemd-analyze verify accepts batond.service # SKIP systemd-analyze is not installed" 1
else
    mkdir -p "$tmp/unit"
    sed "s|^ExecStart=$prefix/sbin/batond|ExecStart=$dest$prefix/sbin/batond|" "$unit" >"$tmp/unit/batond.service"
    ok=1
    out=$(cd "$tmp/unit" && MANPATH=$man systemd-analyze verify "$tmp/unit/batond.service" 2>&1) || ok=0
    [ -n "$out" ] && ok=0
    report "systemd-analyze verify accepts batond.service (ExecStart in DESTDIR)" "$ok" "$(printf '%s' "$out" | oneline)"
fi

# ---- the example configuration ---------------------------------------------------------
conf=$dest$prefix/etc/baton/batond.conf.example
help=$("$dest$prefix/sbin/batond" --help 2>&1)
bad=""
keys=$(sed -nE 's/^[;#]?[[:space:]]*([a-z][a-z0-9-]*)[[:space:]]*=.*/\1/p' "$conf")
for k in $keys; do
    printf '%s\n' "$help" | grep -qE -- "--$k([^a-z0-9-]|$)" || bad="$bad $k"
done
grep -q '^\[batond\]' "$conf" || bad="$bad (no [batond] section)"
[ -z "$bad" ] && [ -n "$keys" ] && ok=1 || ok=0
report "every key of batond.conf.example ($(echo "$keys" | wc -w)) is a long option of batond" "$ok" "not options:$bad"

# ---- bash completion ------------------------------------------------------------------
comp=$dest$prefix/share/bash-completion/completions/batonctl
ok=1
out=$(bash -n "$comp" 2>&1) || ok=0
report "the batonctl completion passes bash -n" "$ok" "$(printf '%s' "$out" | oneline)"

complete_words() { # WORDS... (the last one is being completed)
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _batonctl
             printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@" 2>&1
}
commands=$(sed -nE 's/^[[:space:]]*\{"([a-z-]+)", cmd_[a-z_]+, cmd_[a-z_]+_help\},.*/\1/p' "$root/client/ctl/main.c")
got=$(complete_words batonctl "")
missing=""
for c in $commands help; do printf '%s\n' "$got" | grep -qx -- "$c" || missing="$missing $c"; done
[ -z "$missing" ] && [ -n "$commands" ] && ok=1 || ok=0
report "completing 'batonctl ' offers every command ($(echo "$commands" | wc -w) in client/ctl/main.c)" \
    "$ok" "missing:$missing"

touch "$tmp/ca-file.pem"
got=$(cd "$tmp" && complete_words batonctl --cacert ca-)
[ "$got" = ca-file.pem ] && ok=1 || ok=0
report "completing 'batonctl --cacert ca-' offers files" "$ok" "got '$(printf '%s' "$got" | oneline)'"

# ---- make uninstall -----------------------------------------------------------------------
ok=1
out=$(make -C "$root" --no-print-directory -s uninstall B="$build" DESTDIR="$dest" PREFIX=$prefix 2>&1) || ok=0
left=$(cd "$dest" && find . -type f -o -type l | head -20 | tr '\n' ' ')
[ -n "$left" ] && ok=0
report "make uninstall leaves no file behind" "$ok" "$(printf '%s' "$out" | oneline) left: $left"

check_done
