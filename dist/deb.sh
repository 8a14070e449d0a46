#!/bin/sh
# deb.sh -- build the Debian package of what a build directory holds with
# dpkg-deb (make deb): DEB_DIR/baton_VERSION_ARCH.deb.
#
# Environment: B, SONAME, VERSION (as dist/install.sh), DEB_DIR (default
# build), DEB_MAINTAINER (the Maintainer field).
#
# The package installs under /usr (PREFIX=/usr, the unit in
# /lib/systemd/system, man pages gzipped) and /etc/baton. Depends comes from
# dpkg-shlibdeps over batond, batonctl and libbaton.so (or, without
# dpkg-dev, from the packages owning the libraries they load, at least at
# their installed versions), plus adduser for the postinst.
set -eu
umask 022

: "${B:?B (the build directory) is not set}"
: "${SONAME:?SONAME is not set}"
: "${VERSION:?VERSION is not set}"
DEB_DIR=${DEB_DIR:-build}
DEB_MAINTAINER=${DEB_MAINTAINER:-baton maintainers <root@localhost>}
dist=$(cd "$(dirname "$0")" && pwd)
arch=$(dpkg --print-architecture)
name=baton_${VERSION}_$arch
mkdir -p "$DEB_DIR"
DEB_DIR=$(cd "$DEB_DIR" && pwd)
stage=$DEB_DIR/deb/$name

rm -rf "$stage"
mkdir -p "$stage/DEBIAN"
B=$B SONAME=$SONAME VERSION=$VERSION DESTDIR=$stage PREFIX=/usr SYSCONFDIR=/etc \
    UNITDIR=/lib/systemd/system MANGZIP=1 "$dist/install.sh" install 2>/dev/null

elves="$stage/usr/sbin/batond $stage/usr/bin/batonctl $stage/usr/lib/$SONAME.0.0"

# Depends from dpkg-shlibdeps, which wants a debian/control to read.
shlibdeps() {
    tmp=$(mktemp -d)
    mkdir "$tmp/debian"
    printf 'Source: baton\n\nPackage: baton\nArchitecture: any\n' >"$tmp/debian/control"
    args=""
    for f in $elves; do args="$args -e$f"; done
    # shellcheck disable=SC2086
    out=$(cd "$tmp" && dpkg-shlibdeps -O $args 2>"$tmp/err") || {
        cat "$tmp/err" >&2
        rm -rf "$tmp"
        return 1
    }
    rm -rf "$tmp"
    printf '%s\n' "$out" | sed -n 's/^shlibs:Depends=//p'
}

# Without dpkg-dev: the packages that own the libraries the binaries need
# (NEEDED, found with ldd), each at least at the version installed here.
lddeps() {
    for f in $elves; do
        ldd "$f" >"$stage.ldd"
        readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | while read -r need; do
            awk -v n="$need" '$1 == n && $3 ~ /^\// { print $3 }' "$stage.ldd"
        done
    done | sort -u | while read -r lib; do
        pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null) || continue
        pkg=${pkg%%:*}
        echo "$pkg (>= $(dpkg-query -W -f='${Version}' "$pkg:$arch" 2>/dev/null ||
            dpkg-query -W -f='${Version}' "$pkg"))"
    done | sort -u | paste -sd, - | sed 's/,/, /g'
    rm -f "$stage.ldd"
}

if command -v dpkg-shlibdeps >/dev/null 2>&1; then
    depends=$(shlibdeps)
else
    depends=$(lddeps)
fi
[ -n "$depends" ] || { echo "deb.sh: could not compute Depends" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
ARCH=$arch SIZE=$size DEPENDS=$depends MAINT=$DEB_MAINTAINER VERSION=$VERSION awk '{
    gsub(/@VERSION@/, ENVIRON["VERSION"]); gsub(/@ARCH@/, ENVIRON["ARCH"])
    gsub(/@MAINTAINER@/, ENVIRON["MAINT"]); gsub(/@SIZE@/, ENVIRON["SIZE"])
    gsub(/@DEPENDS@/, ENVIRON["DEPENDS"]); print
}' "$dist/debian/control.in" >"$stage/DEBIAN/control"
for s in postinst prerm postrm; do
    install -m 0755 "$dist/debian/$s" "$stage/DEBIAN/$s"
done
# Every file under /etc is a conffile; the shared library triggers ldconfig.
(cd "$stage" && find etc -type f | sed 's|^|/|') >"$stage/DEBIAN/conffiles"
echo "activate-noawait ldconfig" >"$stage/DEBIAN/triggers"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort |
    xargs md5sum) >"$stage/DEBIAN/md5sums"

dpkg-deb --root-owner-group --build "$stage" "$DEB_DIR/$name.deb" >/dev/null
echo "$DEB_DIR/$name.deb"
