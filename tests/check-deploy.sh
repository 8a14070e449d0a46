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

. "$(dirname "$0")/lib/check.sh"
check_init check-deploy "$@"
prefix=/usr/local
dest=$tmp/root

if ! out=$(make -C "$root" --no-print-directory -s install-built B="$build" DESTDIR="$dest" \
    PREFIX=$prefix 2>&1); then
    report "make install-built DESTDIR=... PREFIX=$prefix" 0 "$(printf '%s' "$out" | oneline)"
    check_done
    exit
fi
mkdir -p "$tmp/bin"
ln -s "$dest$prefix/sbin/batond" "$tmp/bin/batond"
ln -s "$dest$prefix/bin/batonctl" "$tmp/bin/batonctl"
echo "# installed into $dest$prefix; the nodes and batonctl run from there"
BATON_BUILD=$tmp/bin "$build/tests/integration/deploy_installed"
