#!/usr/bin/env bash
# check-deploy.sh -- run a cluster from what `make install` installs
# (tests/integration/deploy_installed.c: config files, host names, metrics
# over HTTP, backup and restore, a rolling restart).
#
#   tests/check-deploy.sh [BUILD_DIR]     (default: $BATON_BUILD)
#
# Installs what BUILD_DIR holds (make install-built, which builds nothing)
# into a fresh temporary DESTDIR with PREFIX=/usr/local, makes a directory
# whose batond and batonctl are links to the installed sbin/batond and
# bin/batonctl, and runs BUILD_DIR/tests/integration/deploy_installed with
# BATON_BUILD naming it, so that every node and every batonctl the test
# starts is an installed one. Its output is the test's: one line per test,
# then "N passed, N failed"; a failed install is one failed test.
set -u

build=${1:-${BATON_BUILD:-}}
if [ -z "$build" ]; then
    echo "usage: $0 BUILD_DIR (or set BATON_BUILD)" >&2
    exit 2
fi
build=$(cd "$build" && pwd) || exit 2
root=$(cd "$(dirname "$0")/.." && pwd -P)
prefix=/usr/local

tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-check-deploy.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root

if ! out=$(make -C "$root" --no-print-directory -s install-built B="$build" DESTDIR="$dest" \
    PREFIX=$prefix 2>&1); then
    echo "not ok 1 - make install-built DESTDIR=... PREFIX=$prefix: $(printf '%s' "$out" | head -c 400)"
    echo "0 passed, 1 failed"
    exit 1
fi
mkdir -p "$tmp/bin"
ln -s "$dest$prefix/sbin/batond" "$tmp/bin/batond"
ln -s "$dest$prefix/bin/batonctl" "$tmp/bin/batonctl"
echo "# installed into $dest$prefix; the nodes and batonctl run from there"
BATON_BUILD=$tmp/bin "$build/tests/integration/deploy_installed"
