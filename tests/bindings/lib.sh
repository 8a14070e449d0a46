# lib.sh -- shell functions shared by the bindings' test runners
# (tests/bindings/run-*.sh) and the benchmark (tests/bench/run-bench.sh,
# workload WB). Source it.

# The environment to build bindings/go with Debian's Go (/usr/bin/go)
# against the source tree's headers and build directory $1's libbaton.so,
# offline: a fresh GOCACHE and GOPATH under $2, GOPROXY=off,
# GOFLAGS=-mod=mod, no toolchain switch (the module needs nothing outside
# the standard library). $3 is the repository.
go_env() { # BUILD TMP REPO
    unset GOTOOLCHAIN GOROOT
    export GOCACHE=$2/cache GOPATH=$2/gopath GOMODCACHE=$2/gopath/pkg/mod
    export GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GO111MODULE=on
    export CGO_ENABLED=1 CGO_CFLAGS="-I$3/include" CGO_LDFLAGS="-L$1"
    export LD_LIBRARY_PATH=$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# Install bindings/python, as a user would, into a fresh venv $2 of
# Debian's python3 (with the system's site packages: cffi and pytest come
# from Debian): offline (pip --no-index --no-build-isolation), from a copy
# of the source in $2.src, so that the source tree gets no build files.
# $1 is the repository. Prints pip's last lines and fails if it does.
py_venv() { # REPO DIR
    local repo=$1 dir=$2
    /usr/bin/python3 -m venv --system-site-packages "$dir" >"$dir.log" 2>&1 || {
        tail -5 "$dir.log"
        return 1
    }
    rm -rf "$dir.src"
    cp -r "$repo/bindings/python" "$dir.src"
    rm -rf "$dir.src/build" "$dir.src"/*.egg-info
    (cd "$dir" && "$dir/bin/python" -m pip install -q --no-index --no-build-isolation "$dir.src") \
        >"$dir.log" 2>&1 || {
        tail -5 "$dir.log"
        return 1
    }
}

# Under a sanitizer build of libbaton ($1, the build directory), the
# sanitizer's runtime must come first in a host program that loads it
# (python3, a Go test binary): preload it, and turn leak checking off
# (an interpreter keeps memory to its end by design).
san_preload() { # BUILD
    if nm -D "$1/libbaton.so.4" 2>/dev/null | grep -q ' __asan_init'; then
        LD_PRELOAD=$(cc -print-file-name=libasan.so)
        export LD_PRELOAD
        export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
    fi
}
