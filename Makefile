# baton -- plain Makefile (LMDB / Redis / hiredis style).
#
#   make            build everything into build/default/
#   make run        install missing packages, build, start a local 3-node cluster
#   make run-secure the same with TLS, mutual TLS between nodes and tokens
#   make test       install missing packages, build, run every test
#   make SAN=address test     the same under AddressSanitizer + UBSan
#   make bench      build lockbench, run the benchmark sweep on a fresh local
#                   cluster (make bench SECONDS=3 for a quick look)
#   make bench TLS=1    W1 and W2 plaintext and with TLS, peer mTLS and a token,
#                   back to back, and the ratios (tests/bench/tls-compare.sh)
#   make bench-compare  baton against the usual Redis lock (durable and default
#                   Redis), W1 and W2 from one run, the ratios, and W2 against
#                   this machine's limit (tests/bench/compare.sh; SECONDS=5)
#   make bench-compare-plot  docs/bench-compare.png from that run's JSON lines
#   make bench-plot     docs/bench-w2.png from the last sweep's JSON lines (gnuplot)
#   make bench-table    the table of figures (docs/performance.md) from the same lines
#   make install        build build/default and install it (PREFIX=/usr/local, DESTDIR=)
#                       (SYSCONFDIR=$(PREFIX)/etc, /etc for PREFIX=/usr)
#   make uninstall      remove exactly what make install put there
#   make deb            build/baton_$(VERSION)_<arch>.deb (dist/deb.sh, dpkg-deb)
#
# Targets that need the libraries (run, test, all, ...) first run `deps`,
# which apt-get installs whatever pkg-config (PKGS) or the shell (DEP_CMDS)
# cannot find, and then re-invoke
# make so that pkg-config is asked only once the packages are there.

PKGS     := libuv raft lmdb openssl libmicrohttpd inih libsystemd hiredis
# redis-server and hiredis: lockbench's Redis driver and make bench-compare.
DEB_PKGS := libuv1-dev libraft-dev liblmdb-dev libssl-dev openssl pkg-config libmicrohttpd-dev \
            libinih-dev libsystemd-dev libhiredis-dev redis-server \
            python3 python3-cffi python3-pytest python3-venv python3-pip python3-setuptools \
            python3-wheel golang-go
DEP_CMDS := pkg-config redis-server /usr/bin/python3 /usr/bin/go
# The bindings (bindings/) are built and tested with Debian's Python and Go,
# whatever else PATH may hold; DEP_PYMODS are the modules deps checks for.
PYTHON   := /usr/bin/python3
GO       := /usr/bin/go
DEP_PYMODS := cffi pytest venv pip setuptools wheel
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wwrite-strings \
            -Wno-missing-field-initializers
CFLAGS   ?= -O2 -g
SAN      ?=
B        ?= build/$(if $(SAN),$(SAN),default)

ifeq ($(SAN),address)
  SANFLAGS := -fsanitize=address,undefined
else ifneq ($(SAN),)
  SANFLAGS := -fsanitize=$(SAN)
endif
ifneq ($(SAN),)
  CFLAGS  += -O1 $(SANFLAGS) -fno-sanitize-recover=all -fno-omit-frame-pointer
  LDFLAGS += $(SANFLAGS)
endif

# -fvisibility=hidden: libbaton.so exports exactly the functions the public
# headers mark BATON_API (include/baton/baton_defs.h); tests/check-exports.sh checks
# it. Everything else links the static archives, where visibility does not
# matter, so every object is built the same way.
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -I. -Iinclude -fPIC -fvisibility=hidden $(WARN) $(CFLAGS) -MMD -MP
LIBS_UV    = -luv
LIBS_RAFT  = -lraft
LIBS_LMDB  = -llmdb
LIBS_SSL   = -lssl -lcrypto
LIBS_HTTP  = -lmicrohttpd
LIBS_INIH  = -linih
LIBS_SD    = -lsystemd
LIBS_REDIS = -lhiredis
LIBS_SYS   = $(LIBS_SSL) -lpthread

PROTO_OBJ  := $(patsubst %.c,$(B)/%.o,$(wildcard proto/*.c))
STORE_OBJ  := $(patsubst %.c,$(B)/%.o,$(wildcard storage/*.c))
RAFT_OBJ   := $(patsubst %.c,$(B)/%.o,$(wildcard raft/*.c))
SERVER_OBJ := $(patsubst %.c,$(B)/%.o,$(filter-out server/main.c,$(wildcard server/*.c)))
CLIENT_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard client/*.c))
CTL_OBJ    := $(patsubst %.c,$(B)/%.o,$(wildcard client/ctl/*.c))
TESTLIB_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard tests/lib/*.c))

UNIT_BIN   := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/test_*.c))
CLUSTER_BIN := $(patsubst tests/cluster/%.c,$(B)/tests/cluster/%,$(wildcard tests/cluster/test_*.c))
CLUSTER_FIX_OBJ := $(patsubst %.c,$(B)/%.o,$(filter-out tests/cluster/test_%.c,$(wildcard tests/cluster/*.c)))
INTEG_BIN  := $(patsubst tests/integration/%.c,$(B)/tests/integration/%,$(wildcard tests/integration/test_*.c))
BINDINGS_FIX := $(B)/tests/bindings/cluster_fixture
BENCH_OBJ  := $(patsubst %.c,$(B)/%.o,$(filter-out tests/bench/floor.c,$(wildcard tests/bench/*.c)))
EXAMPLE_BIN := $(patsubst client/examples/%.c,$(B)/examples/%,$(wildcard client/examples/*.c))
SHIM_SO    := $(patsubst tests/shim/%.c,$(B)/tests/shim/%.so,$(wildcard tests/shim/*.c))
SECONDS    ?= 10

# Fuzzing (tests/fuzz/; the rules are near the end).
FUZZ_CC       ?= clang
FUZZ_B        := $(B)/fuzz
FUZZ_FLAGS    := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
                 -fno-sanitize-recover=all
FUZZ_TARGETS  := fuzz_frame fuzz_cmd fuzz_auth
FUZZ_BIN      := $(addprefix $(FUZZ_B)/,$(FUZZ_TARGETS))
# What the targets link, built with clang: proto/, storage/, and the
# temporary directory of fuzz_cmd (tests/lib/files.c).
FUZZ_LIB_OBJ  := $(patsubst %.c,$(FUZZ_B)/obj/%.o,$(wildcard proto/*.c) $(wildcard storage/*.c) \
                 tests/lib/files.c server/auth.c server/xmalloc.c server/log.c)
FUZZ_SECONDS  ?= 300
FUZZ_TEST_SECONDS ?= 5
DEB_FUZZ_PKGS := clang libclang-rt-dev

# The fault harness (tests/fault/; the rules are near the end).
FAULT_SECONDS ?= 600
FAULT_DIR   := $(B)/tests/fault
FAULT_PROGS := $(addprefix $(FAULT_DIR)/,faultrun faultproxy faultstore faultclient faultelect \
                 faultcheck faulthostile faultflood shim_disk.so shim_clock.so shim_connect.so)
FAULT_TEST  := $(FAULT_DIR)/test_fault
BROKEN      := $(B)/broken
BROKEN_STORE_OBJ := $(patsubst %.c,$(BROKEN)/%.o,$(wildcard storage/*.c))
# $(PROTO1)/batond speaks the raft handshakes of the binary before the
# cluster id only (plaintext protocol 1, HELLO version 1), for the
# mixed-version cluster test (tests/integration/test_mixed_versions.c).
PROTO1      := $(B)/proto1
PROTO1_RAFT_OBJ := $(patsubst %.c,$(PROTO1)/%.o,$(wildcard raft/*.c))
# A batond of feature level 1 (storage/cmd_table.h, BATON_TEST_MAX_LEVEL) for
# the upgrade tests (tests/integration/test_levels.c, the fault harness's
# upgrade fault).
LEVEL1      := $(B)/level1
LEVEL1_OBJ  := $(patsubst %.c,$(LEVEL1)/%.o,$(wildcard storage/*.c) $(wildcard server/*.c))
# Everything the fault harness and its selftest run (the upgrade fault runs
# $(LEVEL1)/batond).
FAULT_ALL   := $(FAULT_PROGS) $(FAULT_TEST) $(BROKEN)/batond $(BROKEN)/batonctl $(LEVEL1)/batond

# libbaton.so is a symlink to $(SONAME), the shared library; bump the number
# when the ABI changes.
SONAME := libbaton.so.4
PROGS := $(B)/batond $(B)/batonctl $(B)/libbaton.a $(B)/libbaton.so $(B)/$(SONAME)
ALL_OBJ := $(PROTO_OBJ) $(STORE_OBJ) $(RAFT_OBJ) $(SERVER_OBJ) $(B)/server/main.o \
           $(CLIENT_OBJ) $(CTL_OBJ) $(TESTLIB_OBJ)

.PHONY: default all build deps run run-secure test unit cluster integration clean \
        build-tests test-run bench bench-inner bench-compare bench-compare-inner \
        deps-fuzz fuzz fuzz-inner fuzz-corpus fuzz-corpus-inner

default: all

# ---- entry points: install what is missing, then build in a sub-make -----
# The sub-make builds with one job per core (JOBS=1 for a serial build);
# tests still run one at a time, in one recipe (tests/run-tests.sh).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

all run run-secure test unit cluster integration: deps
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=$(SAN) $@-inner

bench bench-compare: deps
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=$(SAN) $@-inner

deps:
	@missing=""; \
	for p in $(PKGS); do pkg-config --exists $$p 2>/dev/null || missing=1; done; \
	for c in $(DEP_CMDS); do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	for m in $(DEP_PYMODS); do [ -x $(PYTHON) ] && $(PYTHON) -c "import $$m" 2>/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	    echo "installing $(DEB_PKGS)"; \
	    if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install $(DEB_PKGS)"; exit 1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PKGS) >/dev/null || exit 1; \
	fi

all-inner build: $(PROGS) $(EXAMPLE_BIN)
build-tests: $(UNIT_BIN) $(CLUSTER_BIN) $(INTEG_BIN) $(EXAMPLE_BIN) $(BINDINGS_FIX) $(SHIM_SO) $(B)/tests/integration/deploy_installed \
             $(PROTO1)/batond $(LEVEL1)/batond $(FAULT_DIR)/shim_disk.so

run-inner: $(PROGS)
	@server/run-cluster.sh $(B)
run-secure-inner: $(PROGS)
	@server/run-cluster.sh --secure $(B)

test-inner: $(PROGS) build-tests $(FUZZ_BIN) $(FAULT_ALL) $(B)/lockbench $(B)/benchfloor
	@FUZZ_SECONDS=$(FUZZ_TEST_SECONDS) tests/run-tests.sh $(B) $(UNIT_BIN) tests/fuzz/run-fuzz.sh \
	    $(CLUSTER_BIN) $(INTEG_BIN) $(FAULT_TEST) tests/bench/smoke.sh tests/check-exports.sh \
	    tests/check-layers.sh tests/check-includes.sh tests/check-flag-docs.sh tests/check-install.sh tests/check-deb.sh \
	    tests/check-deploy.sh tests/check-docs.sh tests/bindings/run-python.sh tests/bindings/run-go.sh
unit-inner: $(UNIT_BIN)
	@tests/run-tests.sh $(B) $(UNIT_BIN)
cluster-inner: $(CLUSTER_BIN)
	@tests/run-tests.sh $(B) $(CLUSTER_BIN)
integration-inner: $(PROGS) $(EXAMPLE_BIN) $(INTEG_BIN) $(SHIM_SO) $(PROTO1)/batond $(LEVEL1)/batond $(FAULT_DIR)/shim_disk.so
	@tests/run-tests.sh $(B) $(INTEG_BIN)
bench-inner: $(PROGS) $(B)/lockbench
ifeq ($(TLS),1)
	@tests/bench/tls-compare.sh $(B) $(SECONDS)
else
	@tests/bench/run-bench.sh $(B) $(SECONDS)
endif
# bench-compare's runs are 5 s unless SECONDS is given.
bench-compare-inner: $(PROGS) $(B)/lockbench $(B)/benchfloor
	@tests/bench/compare.sh $(B) $(if $(filter command line environment,$(origin SECONDS)),$(SECONDS),5)

# ---- objects and archives ------------------------------------------------
# $(B)/.cflags holds the compile flags of the last build in $(B); it changes
# (and every object is rebuilt) when they do, e.g. when -fvisibility=hidden
# came in, so that no object built with other flags stays behind.
.PHONY: FORCE
$(B)/.cflags: FORCE
	@mkdir -p $(B)
	@echo '$(CC) $(ALL_CFLAGS)' >$@.tmp.$$$$; \
	if cmp -s $@.tmp.$$$$ $@; then rm -f $@.tmp.$$$$; else mv -f $@.tmp.$$$$ $@; fi

$(B)/%.o: %.c $(B)/.cflags
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/libproto.a: $(PROTO_OBJ)
	rm -f $@ && $(AR) rcs $@ $^
$(B)/libstore.a: $(STORE_OBJ)
	rm -f $@ && $(AR) rcs $@ $^
$(B)/libbaton.a: $(CLIENT_OBJ) $(PROTO_OBJ)
	rm -f $@ && $(AR) rcs $@ $^
$(B)/$(SONAME): $(CLIENT_OBJ) $(PROTO_OBJ)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)
$(B)/libbaton.so: $(B)/$(SONAME)
	ln -sf $(SONAME) $@
$(B)/libtest.a: $(TESTLIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(B)/batond: $(B)/server/main.o $(SERVER_OBJ) $(RAFT_OBJ) $(B)/libstore.a $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_HTTP) $(LIBS_INIH) $(LIBS_SD) $(LIBS_SYS)

$(B)/batonctl: $(CTL_OBJ) $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

# lockbench: the benchmark driver (tests/bench/; workloads in docs/performance.md).
$(B)/lockbench: $(BENCH_OBJ) $(B)/libtest.a $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_REDIS) $(LIBS_UV) $(LIBS_SYS)

# benchfloor: this machine's synchronous 4 KiB write and loopback round trip
# (tests/bench/floor.c), the floor of a W2 hand-off (docs/performance.md).
$(B)/benchfloor: $(B)/tests/bench/floor.o
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread

# ---- docs/performance.md's benchmark chart and table (from make bench's JSON lines) ----
# BENCH_JSONL: the lines to use (default: what `make bench` wrote last).
# Only bench-plot needs gnuplot: deps-plot installs gnuplot-nox when missing.
BENCH_JSONL ?= $(B)/bench.jsonl
BENCH_PNG   ?= docs/bench-w2.png
COMPARE_JSONL ?= $(B)/bench-compare.jsonl
COMPARE_PNG   ?= docs/bench-compare.png
.PHONY: bench-plot bench-table deps-plot bench-compare-plot

bench-plot: deps-plot
	@mkdir -p $(dir $(BENCH_PNG))
	@tests/bench/plot.sh $(BENCH_JSONL) $(BENCH_PNG)
bench-table:
	@tests/bench/table.sh $(BENCH_JSONL)
bench-compare-plot: deps-plot
	@mkdir -p $(dir $(COMPARE_PNG))
	@tests/bench/plot-compare.sh $(COMPARE_JSONL) $(COMPARE_PNG)
deps-plot:
	@if ! command -v gnuplot >/dev/null 2>&1; then \
	    echo "installing gnuplot-nox"; \
	    if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install gnuplot-nox"; exit 1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox >/dev/null || exit 1; \
	fi

# Example programs of the client API (client/examples/), one binary each.
$(EXAMPLE_BIN): $(B)/examples/%: $(B)/client/examples/%.o $(B)/libbaton.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

# ---- tests -------------------------------------------------------------------
# The client's unit tests (test_client_*.c) run libbaton against the fake
# servers of tests/unit/fake_server.c, the async ones through
# tests/unit/client_fixture.c. libtest.a comes before libbaton.a: its
# tests/lib/aclient.c calls libbaton.
$(B)/tests/unit/test_client_%: $(B)/tests/unit/test_client_%.o $(B)/tests/unit/fake_server.o \
                               $(B)/tests/unit/client_fixture.o $(B)/libtest.a $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

# test_client_oom makes libbaton's allocations fail one by one: its calls
# to malloc, calloc, realloc and strdup go through the test's wrappers.
$(B)/tests/unit/test_client_oom: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup -rdynamic

# The state machine's unit tests (test_fsm_*.c) share tests/unit/fsm_fixture.c.
$(B)/tests/unit/test_fsm_%: $(B)/tests/unit/test_fsm_%.o $(B)/tests/unit/fsm_fixture.o \
                            $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_LMDB) $(LIBS_SYS)

# raft/fsm.c's step for one entry over a real store (test_fsm_entry.c).
$(B)/tests/unit/test_fsm_entry: $(B)/tests/unit/test_fsm_entry.o $(B)/tests/unit/fsm_fixture.o \
        $(B)/raft/fsm.o $(B)/raft/fsm_gate.o $(B)/raft/fsm_snap.o $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_SYS)

# The wire codec's unit tests (test_proto_*.c) share tests/unit/proto_fixture.c.
$(B)/tests/unit/test_proto_%: $(B)/tests/unit/test_proto_%.o $(B)/tests/unit/proto_fixture.o \
                              $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

# The raft transport's HELLO (raft/peer_hello.c needs no libraft).
$(B)/tests/unit/test_peer_hello: $(B)/tests/unit/test_peer_hello.o $(B)/raft/peer_hello.o \
                                 $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

# Who the raft port admits (raft/peer_admit.c is a pure function).
$(B)/tests/unit/test_peer_admit: $(B)/tests/unit/test_peer_admit.o $(B)/raft/peer_admit.o \
                                 $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

# batond's flags and --config file (server/config.c, config_file.c) need
# libraft for node_member_find (raft/node.c) and libinih.
$(B)/tests/unit/test_config: $(B)/tests/unit/test_config.o $(B)/server/config.o \
        $(B)/server/config_flags.o $(B)/server/config_file.o $(B)/server/xmalloc.o $(B)/server/log.o $(RAFT_OBJ) \
        $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_INIH) $(LIBS_SYS)

# The cluster id file and its derivations (raft/cluster_id.c).
$(B)/tests/unit/test_cluster_id: $(B)/tests/unit/test_cluster_id.o $(B)/raft/cluster_id.o $(B)/raft/durable_file.o \
        $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

# The plaintext raft transport, its cluster check, and libraft's own (raft/peer_tcp.c).
$(B)/tests/unit/test_peer_tcp: $(B)/tests/unit/test_peer_tcp.o $(B)/raft/peer_tcp.o $(B)/raft/peer_base.o $(B)/raft/peer_admit.o \
        $(B)/raft/peer_addr.o $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_SYS)

# The auth file's parser is batond's (server/auth.c) and needs its allocator.
$(B)/tests/unit/test_auth_file: $(B)/tests/unit/test_auth_file.o $(B)/server/auth.o \
        $(B)/server/xmalloc.o $(B)/server/log.o $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

# Access control's decision (server/access_rule.c) against the auth file's
# principals.
$(B)/tests/unit/test_access: $(B)/tests/unit/test_access.o $(B)/server/access_rule.o \
        $(B)/server/auth.o $(B)/server/xmalloc.o $(B)/server/log.o $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

# batond's metric registry (server/metrics.c) and its log; and the check
# that docs/operations.md lists its metrics.
$(B)/tests/unit/test_metrics $(B)/tests/unit/test_metrics_doc: %: %.o $(B)/server/metrics.o \
        $(B)/server/log.o $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

# One batond per data directory (server/datadir_lock.c).
$(B)/tests/unit/test_datadir_lock: $(B)/tests/unit/test_datadir_lock.o \
        $(B)/server/datadir_lock.o $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_LMDB) $(LIBS_SYS)

# The change history (server/history.c) alone, over a real store.
$(B)/tests/unit/test_history: $(B)/tests/unit/test_history.o $(B)/server/history.o \
        $(B)/server/xmalloc.o $(B)/server/log.o $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_LMDB) $(LIBS_SYS)

# The leader's logic in one process (tests/unit/leader_fixture.h): the
# server's objects over a fake node and a fake clock, driven by libbaton.
# fake_clock.o defines clock_gettime for the executable, libuv.so's calls
# included: libuv must stay a shared library here (tests/unit/fake_clock.h).
$(B)/tests/unit/test_leader $(B)/tests/unit/test_watch2: %: %.o $(B)/tests/unit/leader_fixture.o \
        $(B)/tests/unit/fake_node.o $(B)/tests/unit/fake_clock.o $(SERVER_OBJ) $(RAFT_OBJ) $(B)/libstore.a $(B)/libtest.a \
        $(B)/libbaton.a $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_HTTP) $(LIBS_INIH) $(LIBS_SD) $(LIBS_SYS) -ldl

# The cluster tests' fixtures (tests/cluster/*.c but test_*.c) in one
# archive: each test binary links what it uses.
$(B)/libclusterfix.a: $(CLUSTER_FIX_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(CLUSTER_BIN): $(B)/tests/cluster/%: $(B)/tests/cluster/%.o $(B)/libclusterfix.a $(SERVER_OBJ) $(RAFT_OBJ) $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_HTTP) $(LIBS_INIH) $(LIBS_SD) $(LIBS_SYS)

$(B)/tests/integration/%: $(B)/tests/integration/%.o $(B)/libtest.a $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)
# The bindings' tests drive a real cluster through this program.
$(BINDINGS_FIX): $(B)/tests/bindings/%: $(B)/tests/bindings/%.o $(B)/libtest.a $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)
# deploy_installed runs against the installed binaries: tests/check-deploy.sh
# installs into a DESTDIR and runs it (not one of $(INTEG_BIN)).

# LD_PRELOAD shims of the integration tests (tests/shim/): fault injection
# into libraft's own calls. Built without sanitizers whatever SAN is: a
# preloaded library comes before the sanitizer runtime.
$(SHIM_SO): $(B)/tests/shim/%.so: tests/shim/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -fPIC -shared $(WARN) -O2 -g -o $@ $< -ldl

# ---- fuzzing (tests/fuzz/) -------------------------------------------------
# libFuzzer targets, built with clang and ASan + UBSan into $(B)/fuzz/
# whatever SAN is. `make fuzz` runs each for FUZZ_SECONDS (default 300) from
# the committed seed corpus; `make test` runs each for FUZZ_TEST_SECONDS.
# Only these targets need clang: `deps-fuzz` installs it (and libFuzzer's
# runtime, libclang-rt-dev) when a test link with -fsanitize=fuzzer fails.

test fuzz: deps-fuzz

deps-fuzz:
	@if ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d == 0 && n; }\n' | \
	    $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1; then \
	    echo "installing $(DEB_FUZZ_PKGS)"; \
	    if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install $(DEB_FUZZ_PKGS)"; exit 1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_FUZZ_PKGS) >/dev/null || exit 1; \
	fi

fuzz: deps
	@$(MAKE) --no-print-directory SAN=$(SAN) fuzz-inner
fuzz-inner: $(FUZZ_BIN)
	@BATON_BUILD=$(B) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run-fuzz.sh

# Regenerate the committed seed corpora from real encoded messages.
fuzz-corpus: deps
	@$(MAKE) --no-print-directory SAN=$(SAN) fuzz-corpus-inner
fuzz-corpus-inner: $(B)/tests/fuzz/gen_corpus
	rm -rf tests/fuzz/corpus/fuzz_frame tests/fuzz/corpus/fuzz_cmd
	$(B)/tests/fuzz/gen_corpus tests/fuzz/corpus

$(B)/tests/fuzz/gen_corpus: $(B)/tests/fuzz/gen_corpus.o $(B)/libtest.a $(B)/libstore.a $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_LMDB) $(LIBS_SSL)

$(FUZZ_B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	@$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -I. -Iinclude $(WARN) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link \
	    -MMD -MP -c $< -o $@
$(FUZZ_B)/libfuzzlib.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^
$(FUZZ_BIN): $(FUZZ_B)/%: $(FUZZ_B)/obj/tests/fuzz/%.o $(FUZZ_B)/libfuzzlib.a
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS_LMDB) $(LIBS_SSL)

# ---- the fault harness (tests/fault/, docs/guarantees.md)
# `make fault` runs FAULT_SECONDS of mixed faults and prints the numbers;
# `make fault-selftest` runs it against $(BROKEN)/batond, whose storage is
# compiled with -DBATON_TEST_BROKEN_GRANT_ALL (grants every lock to
# everyone), and succeeds only if the checker fails that run, after the
# checker's own cases (test_fault fault_checker_*: written logs that break
# the lock modes' and the multi-locks' rules one at a time; the broken run
# has no multi-locks, tests/fault/README.md says why). `make test`
# runs a 90-second version and the selftest ($(FAULT_TEST)).

.PHONY: fault fault-inner fault-selftest fault-selftest-inner
fault fault-selftest: deps
	@$(MAKE) --no-print-directory SAN=$(SAN) $@-inner
fault-inner: $(PROGS) $(FAULT_PROGS) $(LEVEL1)/batond
	@BATON_BUILD=$(abspath $(B)) $(FAULT_DIR)/faultrun --seconds $(FAULT_SECONDS)
fault-selftest-inner: $(FAULT_ALL)
	@BATON_BUILD=$(abspath $(B)) $(FAULT_TEST) fault_checker
	@BATON_BUILD=$(abspath $(BROKEN)) $(FAULT_DIR)/faultrun --seconds 30 --expect-violations --no-multi

$(FAULT_DIR)/faultrun: $(addprefix $(FAULT_DIR)/,run.o nemesis.o nemesis_admin.o nemesis_pause.o \
                       nemesis_net.o nemesis_disk.o nemesis_hostile.o nemesis_upgrade.o \
                       nemesis_elect.o) $(B)/libtest.a $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)
$(FAULT_DIR)/faultproxy: $(FAULT_DIR)/proxy.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV)
$(FAULT_DIR)/faultstore: $(FAULT_DIR)/store.o
	$(CC) $(LDFLAGS) -o $@ $^
$(FAULT_DIR)/faultclient: $(FAULT_DIR)/client.o $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)
$(FAULT_DIR)/faultelect: $(FAULT_DIR)/elect.o $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)
$(FAULT_DIR)/faultcheck: $(addprefix $(FAULT_DIR)/,check.o check_load.o check_modes.o check_multi.o \
                         check_hostile.o check_flood.o check_upgrade.o check_elect.o)
	$(CC) $(LDFLAGS) -o $@ $^
$(FAULT_DIR)/faulthostile: $(FAULT_DIR)/hostile.o $(B)/libtest.a $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)
$(FAULT_DIR)/faultflood: $(FAULT_DIR)/flood.o $(B)/libtest.a $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_SYS)
# The shims (LD_PRELOAD): built without the sanitizers whatever SAN is, as
# they are loaded into other programs (README.md in tests/fault).
$(FAULT_DIR)/shim_%.so: tests/fault/shim_%.c
	@mkdir -p $(dir $@)
	@echo "  SHIM    $<"
	@$(CC) -std=c11 -D_GNU_SOURCE -I. -Iinclude $(WARN) -O2 -g -fPIC -shared -MMD -MP -o $@ $< -ldl -lpthread
$(FAULT_TEST): $(FAULT_DIR)/test_fault.o $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^

$(BROKEN)/%.o: %.c $(B)/.cflags
	@mkdir -p $(dir $@)
	@echo "  CC      $< (BROKEN_GRANT_ALL)"
	@$(CC) $(ALL_CFLAGS) -DBATON_TEST_BROKEN_GRANT_ALL -c $< -o $@
$(BROKEN)/batond: $(B)/server/main.o $(SERVER_OBJ) $(RAFT_OBJ) $(BROKEN_STORE_OBJ) $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_HTTP) $(LIBS_INIH) $(LIBS_SD) $(LIBS_SYS)
$(BROKEN)/batonctl: $(B)/batonctl
	cp $< $@

$(PROTO1)/%.o: %.c $(B)/.cflags
	@mkdir -p $(dir $@)
	@echo "  CC      $< (PEER_PROTOCOL_1)"
	@$(CC) $(ALL_CFLAGS) -DBATON_TEST_PEER_PROTOCOL_1 -c $< -o $@
$(PROTO1)/batond: $(B)/server/main.o $(SERVER_OBJ) $(PROTO1_RAFT_OBJ) $(STORE_OBJ) $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_HTTP) $(LIBS_INIH) $(LIBS_SD) $(LIBS_SYS)
# $(LEVEL1)/batond: storage/ and server/ compiled with -DBATON_TEST_MAX_LEVEL=1,
# so that its codec knows no row above level 1 and its STATUS says level 1,
# as a binary of level 1 does (storage/cmd_table.h). It can decode less
# than a release binary, never more.
$(LEVEL1)/%.o: %.c $(B)/.cflags
	@mkdir -p $(dir $@)
	@echo "  CC      $< (TEST_MAX_LEVEL=1)"
	@$(CC) $(ALL_CFLAGS) -DBATON_TEST_MAX_LEVEL=1 -c $< -o $@
$(LEVEL1)/batond: $(LEVEL1_OBJ) $(RAFT_OBJ) $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_HTTP) $(LIBS_INIH) $(LIBS_SD) $(LIBS_SYS)

# ---- install and package (dist/; docs/operations.md, "Installing") ---------
# dist/install.sh holds the list of what goes where; make install and make
# deb build build/default (never a SAN build: those are for tests) and then
# install or package it. install-built and deb-built take what $(B) holds,
# without building (tests/check-install.sh, tests/check-deb.sh).
VERSION := 0.15.0
PREFIX  ?= /usr/local
DESTDIR ?=
DEB_DIR ?= build
INSTALL_ENV = B='$(B)' SONAME='$(SONAME)' VERSION='$(VERSION)' PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)'
.PHONY: install uninstall install-built deb deb-built
install deb: deps
	@$(MAKE) --no-print-directory SAN= all-inner
	@$(MAKE) --no-print-directory SAN= $@-built
install-built:
	@$(INSTALL_ENV) dist/install.sh install
uninstall:
	@$(INSTALL_ENV) dist/install.sh uninstall
deb-built:
	@$(INSTALL_ENV) DEB_DIR='$(DEB_DIR)' dist/deb.sh

clean:
	rm -rf build

# Keep the test objects make builds on the way to a binary.
.SECONDARY:

-include $(ALL_OBJ:.o=.d) $(wildcard $(B)/tests/*/*.d) $(wildcard $(B)/client/examples/*.d)
-include $(wildcard $(BROKEN)/storage/*.d)
-include $(wildcard $(PROTO1)/raft/*.d)
-include $(wildcard $(LEVEL1)/storage/*.d) $(wildcard $(LEVEL1)/server/*.d)
-include $(wildcard $(FUZZ_B)/obj/*/*.d $(FUZZ_B)/obj/tests/fuzz/*.d $(FUZZ_B)/obj/tests/lib/*.d)
