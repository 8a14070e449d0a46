# baton -- plain Makefile (LMDB / Redis / hiredis style).
#
#   make            build everything into build/default/
#   make run        install missing packages, build, start a local 3-node cluster
#   make test       install missing packages, build, run every test
#   make SAN=address test     the same under AddressSanitizer + UBSan
#   make bench      build lockbench, run the WORKLOAD.md sweep on a fresh local
#                   cluster (make bench SECONDS=3 for a quick look)
#
# Targets that need the libraries (run, test, all, ...) first run `deps`,
# which apt-get installs whatever pkg-config cannot find, and then re-invoke
# make so that pkg-config is asked only once the packages are there.

PKGS     := libuv raft lmdb
DEB_PKGS := libuv1-dev libraft-dev liblmdb-dev pkg-config
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

ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -I. -fPIC $(WARN) $(CFLAGS) -MMD -MP
LIBS_UV    = -luv
LIBS_RAFT  = -lraft
LIBS_LMDB  = -llmdb
LIBS_SYS   = -lpthread

PROTO_OBJ  := $(patsubst %.c,$(B)/%.o,$(wildcard proto/*.c))
STORE_OBJ  := $(patsubst %.c,$(B)/%.o,$(wildcard storage/*.c))
RAFT_OBJ   := $(patsubst %.c,$(B)/%.o,$(wildcard raft/*.c))
SERVER_OBJ := $(patsubst %.c,$(B)/%.o,$(filter-out server/main.c,$(wildcard server/*.c)))
CLIENT_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard client/*.c))
CTL_OBJ    := $(patsubst %.c,$(B)/%.o,$(wildcard client/ctl/*.c))
TESTLIB_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard tests/lib/*.c))

UNIT_BIN   := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/test_*.c))
CLUSTER_BIN := $(patsubst tests/cluster/%.c,$(B)/tests/cluster/%,$(wildcard tests/cluster/test_*.c))
INTEG_BIN  := $(patsubst tests/integration/%.c,$(B)/tests/integration/%,$(wildcard tests/integration/test_*.c))
BENCH_OBJ  := $(patsubst %.c,$(B)/%.o,$(wildcard tests/bench/*.c))
EXAMPLE_BIN := $(patsubst client/examples/%.c,$(B)/examples/%,$(wildcard client/examples/*.c))
SECONDS    ?= 10

PROGS := $(B)/batond $(B)/batonctl $(B)/libbaton.a $(B)/libbaton.so
ALL_OBJ := $(PROTO_OBJ) $(STORE_OBJ) $(RAFT_OBJ) $(SERVER_OBJ) $(B)/server/main.o \
           $(CLIENT_OBJ) $(CTL_OBJ) $(TESTLIB_OBJ)

.PHONY: default all build deps run test unit cluster integration clean \
        build-tests test-run bench bench-inner

default: all

# ---- entry points: install what is missing, then build in a sub-make -----
all run test unit cluster integration: deps
	@$(MAKE) --no-print-directory SAN=$(SAN) $@-inner

bench: deps
	@$(MAKE) --no-print-directory SAN=$(SAN) bench-inner

deps:
	@missing=""; \
	for p in $(PKGS); do pkg-config --exists $$p 2>/dev/null || missing=1; done; \
	command -v pkg-config >/dev/null 2>&1 || missing=1; \
	if [ -n "$$missing" ]; then \
	    echo "installing $(DEB_PKGS)"; \
	    if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install $(DEB_PKGS)"; exit 1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PKGS) >/dev/null || exit 1; \
	fi

all-inner build: $(PROGS) $(EXAMPLE_BIN)
build-tests: $(UNIT_BIN) $(CLUSTER_BIN) $(INTEG_BIN)

run-inner: $(PROGS)
	@server/run-cluster.sh $(B)

test-inner: $(PROGS) build-tests
	@tests/run-tests.sh $(B) $(UNIT_BIN) $(CLUSTER_BIN) $(INTEG_BIN)
unit-inner: $(UNIT_BIN)
	@tests/run-tests.sh $(B) $(UNIT_BIN)
cluster-inner: $(CLUSTER_BIN)
	@tests/run-tests.sh $(B) $(CLUSTER_BIN)
integration-inner: $(PROGS) $(INTEG_BIN)
	@tests/run-tests.sh $(B) $(INTEG_BIN)
bench-inner: $(PROGS) $(B)/lockbench
	@tests/bench/run-bench.sh $(B) $(SECONDS)

# ---- objects and archives ------------------------------------------------
$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/libproto.a: $(PROTO_OBJ)
	$(AR) rcs $@ $^
$(B)/libstore.a: $(STORE_OBJ)
	$(AR) rcs $@ $^
$(B)/libbaton.a: $(CLIENT_OBJ) $(PROTO_OBJ)
	$(AR) rcs $@ $^
$(B)/libbaton.so: $(CLIENT_OBJ) $(PROTO_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)
$(B)/libtest.a: $(TESTLIB_OBJ)
	$(AR) rcs $@ $^

$(B)/batond: $(B)/server/main.o $(SERVER_OBJ) $(RAFT_OBJ) $(B)/libstore.a $(B)/libproto.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_SYS)

$(B)/batonctl: $(CTL_OBJ) $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

# lockbench: the benchmark driver (tests/bench/, WORKLOAD.md).
$(B)/lockbench: $(BENCH_OBJ) $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

# Example programs of the client API (client/examples/), one binary each.
$(EXAMPLE_BIN): $(B)/examples/%: $(B)/client/examples/%.o $(B)/libbaton.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

# ---- tests -------------------------------------------------------------------
# The client's unit test runs libbaton against an in-test fake server.
$(B)/tests/unit/test_client: $(B)/tests/unit/test_client.o $(B)/libbaton.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_LMDB) $(LIBS_SYS)

$(CLUSTER_BIN): $(B)/tests/cluster/%: $(B)/tests/cluster/%.o $(B)/tests/cluster/fixture.o $(SERVER_OBJ) $(RAFT_OBJ) $(B)/libstore.a $(B)/libproto.a $(B)/libtest.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_RAFT) $(LIBS_UV) $(LIBS_LMDB) $(LIBS_SYS)

$(B)/tests/integration/%: $(B)/tests/integration/%.o $(B)/libtest.a $(B)/libbaton.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_UV) $(LIBS_SYS)

clean:
	rm -rf build

# Keep the test objects make builds on the way to a binary.
.SECONDARY:

-include $(ALL_OBJ:.o=.d) $(wildcard $(B)/tests/*/*.d) $(wildcard $(B)/client/examples/*.d)
