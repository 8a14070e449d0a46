#!/usr/bin/env bash
# check-deb.sh -- the Debian package of a build (make deb) holds what it
# should and says what it needs. It is inspected, never installed.
#
#   tests/check-deb.sh [BUILD_DIR]     (default: $BATON_BUILD)
#
# Builds the package of what BUILD_DIR holds (make deb-built, which builds
# nothing else) into a temporary directory, then checks with dpkg-deb:
#  - its name, Package, Version (the Makefile's VERSION) and Architecture;
#  - Depends names the package of every shared library batond, batonctl and
#    libbaton.so need directly (readelf NEEDED, found with ldd and dpkg -S),
#    and adduser;
#  - it holds the programs, the library and its links, the headers, the
#    pkg-config file (prefix /usr), gzipped man pages, the unit (ExecStart
#    /usr/sbin/batond), the example configuration (a conffile) and the
#    completion, every file owned by root;
#  - its maintainer scripts are executable and pass sh -n, the postinst
#    creates the baton user and /var/lib/baton and enables nothing.
#
# Output: one line per test ("ok N - name" / "not ok N - name: detail"),
# then "N passed, N failed". Exit status 0 if all passed.
set -u

. "$(dirname "$0")/lib/check.sh"
check_init check-deb "$@"

if ! command -v dpkg-deb >/dev/null 2>&1; then
    report "the package # SKIP dpkg-deb is not installed" 1
    check_done
    exit
fi

version=$(sed -n 's/^VERSION *:= *//p' "$root/Makefile")
soname=$(sed -n 's/^SONAME *:= *//p' "$root/Makefile")
arch=$(dpkg --print-architecture)
deb=$tmp/out/baton_${version}_$arch.deb

ok=1
out=$(make -C "$root" --no-print-directory -s deb-built B="$build" DEB_DIR="$tmp/out" 2>&1) || ok=0
[ -f "$deb" ] || ok=0
report "make deb-built builds baton_${version}_$arch.deb" "$ok" "$(printf '%s' "$out" | oneline)"
if [ ! -f "$deb" ]; then
    check_done
    exit
fi

field() { dpkg-deb -f "$deb" "$1"; }
detail=""
[ "$(field Package)" = baton ] || detail="Package '$(field Package)'"
[ "$(field Version)" = "$version" ] || detail="$detail Version '$(field Version)'"
[ "$(field Architecture)" = "$arch" ] || detail="$detail Architecture '$(field Architecture)'"
[ -n "$(field Maintainer)" ] || detail="$detail no Maintainer"
[ -n "$(field Description)" ] || detail="$detail no Description"
[ -z "$detail" ] && ok=1 || ok=0
report "control: Package baton, Version $version, Architecture $arch, Maintainer, Description" "$ok" "$detail"

# The packages of the libraries the binaries load, found independently of
# dpkg-shlibdeps.
depends=$(field Depends)
want=$(for f in "$build/batond" "$build/batonctl" "$build/$soname"; do
    ldd "$f" >"$tmp/ldd"
    readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | while read -r need; do
        awk -v n="$need" '$1 == n && $3 ~ /^\// { print $3 }' "$tmp/ldd"
    done
done | sort -u | while read -r l; do
    p=$(dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l" 2>/dev/null) || continue
    echo "${p%%:*}"
done | sort -u)
missing=""
for p in $want adduser; do
    case ", $depends," in *", $p "* | *", $p,"*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && [ -n "$want" ] && ok=1 || ok=0
report "Depends ($depends) names every library's package and adduser" "$ok" "missing:$missing"

dpkg-deb -c "$deb" >"$tmp/contents"
# "./path" or "./path -> target": everything after the date and time.
awk '{ $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }' "$tmp/contents" >"$tmp/names"
missing=""
for f in ./usr/sbin/batond ./usr/bin/batonctl "./usr/lib/$soname.0.0" "./usr/lib/$soname -> $soname.0.0" \
    "./usr/lib/libbaton.so -> $soname" ./usr/lib/libbaton.a ./usr/include/baton/baton.h \
    ./usr/include/baton/baton_async.h ./usr/include/baton/baton_defs.h \
    ./usr/include/baton/adapters/libuv.h ./usr/lib/pkgconfig/libbaton.pc \
    ./usr/share/man/man8/batond.8.gz ./usr/share/man/man1/batonctl.1.gz \
    ./usr/share/man/man3/libbaton.3.gz ./usr/share/man/man3/baton_lock.3.gz \
    ./usr/share/man/man3/baton_trylock.3.gz ./lib/systemd/system/batond.service \
    ./etc/baton/batond.conf.example ./usr/share/bash-completion/completions/batonctl; do
    grep -qxF -- "$f" "$tmp/names" || missing="$missing '$f'"
done
notroot=$(awk '$2 != "root/root"' "$tmp/contents" | head -3 | tr '\n' ' ')
[ -z "$missing" ] && [ -z "$notroot" ] && ok=1 || ok=0
report "contents: programs, library and links, headers, pc, man pages, unit, config, completion; all root/root" \
    "$ok" "missing:$missing${notroot:+ not root: $notroot}"

mkdir -p "$tmp/x"
dpkg-deb -x "$deb" "$tmp/x"
dpkg-deb -e "$deb" "$tmp/x/DEBIAN"
detail=""
grep -q '^prefix=/usr$' "$tmp/x/usr/lib/pkgconfig/libbaton.pc" || detail="libbaton.pc prefix is not /usr"
grep -q '^ExecStart=/usr/sbin/batond --config /etc/baton/batond.conf$' "$tmp/x/lib/systemd/system/batond.service" ||
    detail="$detail unit ExecStart: $(grep ExecStart= "$tmp/x/lib/systemd/system/batond.service")"
for gz in "$tmp"/x/usr/share/man/man*/*.gz; do
    gzip -t "$gz" 2>/dev/null || detail="$detail bad gzip $(basename "$gz")"
done
[ -z "$detail" ] && ok=1 || ok=0
report "the pc file and the unit point at /usr, man pages are valid gzip" "$ok" "$detail"

detail=""
for s in postinst prerm postrm; do
    f=$tmp/x/DEBIAN/$s
    if [ ! -x "$f" ]; then
        detail="$detail $s missing or not executable"
    elif ! out=$(sh -n "$f" 2>&1); then
        detail="$detail $s: $out"
    fi
done
[ -z "$detail" ] && ok=1 || ok=0
report "maintainer scripts postinst, prerm, postrm are executable and pass sh -n" "$ok" "$detail"

detail=""
grep -qx /etc/baton/batond.conf.example "$tmp/x/DEBIAN/conffiles" 2>/dev/null || detail="not a conffile"
grep -q ldconfig "$tmp/x/DEBIAN/triggers" 2>/dev/null || detail="$detail no ldconfig trigger"
(cd "$tmp/x" && md5sum --quiet -c DEBIAN/md5sums >/dev/null 2>&1) || detail="$detail md5sums do not match"
[ -z "$detail" ] && ok=1 || ok=0
report "conffiles lists the example config; ldconfig trigger; md5sums match" "$ok" "$detail"

post=$tmp/x/DEBIAN/postinst
detail=""
grep -qE 'adduser --system|useradd --system' "$post" || detail="creates no system user"
grep -q 'install -d -m 0700 /var/lib/baton' "$post" && grep -q 'chown baton:baton /var/lib/baton' "$post" ||
    detail="$detail no /var/lib/baton 0700 owned by baton"
grep -q 'daemon-reload' "$post" || detail="$detail no daemon-reload"
grep -v '^[[:space:]]*#' "$post" | grep -qE 'systemctl (enable|start|restart)|deb-systemd-helper enable' && detail="$detail enables or starts the unit"
grep -q 'systemctl stop' "$tmp/x/DEBIAN/prerm" || detail="$detail prerm does not stop the service"
[ -z "$detail" ] && ok=1 || ok=0
report "postinst adds the baton user and /var/lib/baton, enables nothing; prerm stops batond" "$ok" "$detail"

check_done
