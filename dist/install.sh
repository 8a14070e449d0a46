#!/bin/sh
# install.sh -- install or uninstall what a build directory holds, with the
# packaging files of dist/ (make install, make uninstall, make deb).
#
#   dist/install.sh install|uninstall|list
#
# Environment (the Makefile passes them; every directory may be overridden):
#   B            build directory with batond, batonctl, libbaton.a, $SONAME
#   SONAME       the shared library's soname (libbaton.so.4)
#   VERSION      the package version (libbaton.pc's Version)
#   DESTDIR      staging root prepended to every path (default: none)
#   PREFIX       /usr/local
#   BINDIR SBINDIR LIBDIR INCLUDEDIR DATADIR MANDIR PKGCONFIGDIR
#   COMPLETIONDIR UNITDIR SYSCONFDIR   (the defaults are below; SYSCONFDIR
#                is $PREFIX/etc, or /etc for PREFIX=/usr)
#   MANGZIP      1: gzip -9n the man pages (the .deb does)
#
# `list` prints what `install` puts where (one destination per line, without
# DESTDIR); `uninstall` removes exactly those and then the directories of
# baton's own (include/baton, SYSCONFDIR/baton) if they are empty.
set -eu

: "${B:?B (the build directory) is not set}"
: "${SONAME:?SONAME is not set}"
: "${VERSION:?VERSION is not set}"
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
SBINDIR=${SBINDIR:-$PREFIX/sbin}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
DATADIR=${DATADIR:-$PREFIX/share}
MANDIR=${MANDIR:-$DATADIR/man}
PKGCONFIGDIR=${PKGCONFIGDIR:-$LIBDIR/pkgconfig}
COMPLETIONDIR=${COMPLETIONDIR:-$DATADIR/bash-completion/completions}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
# As autoconf's sysconfdir: PREFIX/etc, except that a system install
# (PREFIX=/usr, as the .deb) uses /etc itself.
case $PREFIX in
/usr | /usr/) SYSCONFDIR=${SYSCONFDIR:-/etc} ;;
*) SYSCONFDIR=${SYSCONFDIR:-${PREFIX%/}/etc} ;;
esac
MANGZIP=${MANGZIP:-0}

dist=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$dist")
REALNAME=$SONAME.0.0 # the file; $SONAME and libbaton.so link to it
gz=""
[ "$MANGZIP" = 1 ] && gz=.gz

# The names a man page documents besides its own: its NAME line, e.g.
# "baton_lock, baton_trylock \- ..." gives baton_trylock.
man_aliases() { # PAGE
    page=$(basename "$1")
    sed -n '/^\.SH NAME/{n;p;q;}' "$1" | sed 's/ *\\-.*//; s/,/ /g; s/\\//g' |
        tr ' ' '\n' | grep -v -x -e '' -e "${page%.*}" || true
}

# What install does, one step a line: "file MODE SRC DEST", "link TARGET
# DEST", "gen MODE TEMPLATE DEST" (the @NAME@ of the template replaced),
# "man SRC DEST", "so TARGETPAGE DEST" (a page that sources another).
manifest() {
    echo "file 0755 $B/batond $SBINDIR/batond"
    echo "file 0755 $B/batonctl $BINDIR/batonctl"
    echo "file 0644 $B/$SONAME $LIBDIR/$REALNAME"
    echo "link $REALNAME $LIBDIR/$SONAME"
    echo "link $SONAME $LIBDIR/libbaton.so"
    echo "file 0644 $B/libbaton.a $LIBDIR/libbaton.a"
    for h in baton.h baton_async.h baton_defs.h adapters/libuv.h; do
        echo "file 0644 $root/include/baton/$h $INCLUDEDIR/baton/$h"
    done
    echo "gen 0644 $dist/libbaton.pc.in $PKGCONFIGDIR/libbaton.pc"
    for page in "$dist"/man/*.[0-9]; do
        sec=${page##*.}
        echo "man $page $MANDIR/man$sec/$(basename "$page")$gz"
        for alias in $(man_aliases "$page"); do
            echo "so man$sec/$(basename "$page") $MANDIR/man$sec/$alias.$sec$gz"
        done
    done
    echo "gen 0644 $dist/systemd/batond.service.in $UNITDIR/batond.service"
    echo "file 0644 $dist/batond.conf.example $SYSCONFDIR/baton/batond.conf.example"
    echo "file 0644 $dist/completion/batonctl $COMPLETIONDIR/batonctl"
    echo "file 0644 $dist/grafana/baton.json $DATADIR/baton/grafana/baton.json"
}

subst() { # TEMPLATE
    sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@LIBDIR@|$LIBDIR|g" -e "s|@INCLUDEDIR@|$INCLUDEDIR|g" \
        -e "s|@SBINDIR@|$SBINDIR|g" -e "s|@BINDIR@|$BINDIR|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" \
        -e "s|@VERSION@|$VERSION|g" "$1"
}

# Write stdin to DEST with MODE, gzipped when the name ends in .gz.
put() { # MODE DEST
    mkdir -p "$(dirname "$2")"
    case $2 in
    *.gz) gzip -9n >"$2.tmp" ;;
    *) cat >"$2.tmp" ;;
    esac
    chmod "$1" "$2.tmp"
    mv -f "$2.tmp" "$2"
}

do_install() {
    manifest | while read -r kind a b c; do
        case $kind in
        file)
            [ -f "$b" ] || { echo "install.sh: $b is missing (build it first)" >&2; exit 1; }
            mkdir -p "$(dirname "$DESTDIR$c")"
            install -m "$a" "$b" "$DESTDIR$c"
            ;;
        link)
            mkdir -p "$(dirname "$DESTDIR$b")"
            ln -sfn "$a" "$DESTDIR$b"
            ;;
        gen) subst "$b" | put "$a" "$DESTDIR$c" ;;
        man) put 0644 "$DESTDIR$b" <"$a" ;;
        so) echo ".so $a" | put 0644 "$DESTDIR$b" ;;
        esac
        echo "  INSTALL ${c:-$b}" >&2
    done
}

do_uninstall() {
    manifest | while read -r kind a b c; do
        dest=${c:-$b}
        if [ -e "$DESTDIR$dest" ] || [ -L "$DESTDIR$dest" ]; then
            rm -f "$DESTDIR$dest"
            echo "  REMOVE  $dest" >&2
        fi
    done
    for d in "$INCLUDEDIR/baton/adapters" "$INCLUDEDIR/baton" "$DATADIR/baton/grafana" "$DATADIR/baton" \
        "$SYSCONFDIR/baton"; do
        [ -d "$DESTDIR$d" ] && rmdir "$DESTDIR$d" 2>/dev/null || true
    done
}

# The dynamic linker's cache, when installing into the running system.
refresh_ldcache() {
    if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then
        ldconfig
    fi
}

case ${1:-} in
install) do_install && refresh_ldcache ;;
uninstall) do_uninstall && refresh_ldcache ;;
list) manifest | awk '{ print ($1 == "file" || $1 == "gen") ? $4 : $3 }' ;;
*)
    echo "usage: dist/install.sh install|uninstall|list" >&2
    exit 2
    ;;
esac
