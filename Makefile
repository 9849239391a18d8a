# gpupack -- build, test, run.
#
#   make            build bin/gpupack
#   make run        serve the embedded example cluster on 127.0.0.1:8765
#   make test       every Check suite, plain and under ASan+UBSan
#   make valgrind   the unit suites under valgrind (no fork, leak check)
#   make e2e        end-to-end scenarios against a real control plane (GPUPACK_K8S or
#                   KUBEBUILDER_ASSETS; E2E="basic restart" runs only those; K8S_VERSION=1.36
#                   the other Kubernetes; test/e2e/README.md)
#   make e2e-versions   the same on every version CI runs (1.26 and 1.36)
#   make soak       bench/soak.sh --minutes 10: churn, faults and a rolling upgrade on the real
#                   control plane, checked all the time (K8S_VERSION=1.36 the other Kubernetes;
#                   docs/reliability.md); not part of `make test`
#   make install PREFIX=/usr/local   bin/gpupack and the kubectl plugin kubectl-gpupack
#   make image      the container image gpupack:latest (IMAGE=...) with docker, podman or
#                   buildah; its SBOM in build/sbom.txt (scripts/image.sh, docs/deploy.md)
#   WERROR=1        turn warnings into errors (CI sets it)

CC      ?= cc
PKGS    := libmicrohttpd libcurl jansson yaml-0.1 gnutls libnghttp2
WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wno-unused-parameter
CSTD    := -std=c11 -D_GNU_SOURCE
OPT     ?= -O2 -g
ifeq ($(WERROR),1)
WARN    += -Werror
endif

# Sanitizer builds live in their own tree: make SAN=address,undefined
# BUILD_ROOT lets several people build in one tree without clobbering each other.
BUILD_ROOT ?= build
ifneq ($(SAN),)
BUILD   := $(BUILD_ROOT)/san
SANFLAGS := -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT     := -O1 -g
else
BUILD   := $(BUILD_ROOT)/out
endif

DEPS_OK := $(shell scripts/deps.sh --check >/dev/null 2>&1 && echo yes)
ifeq ($(DEPS_OK),yes)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
CHECK_CFLAGS := $(shell pkg-config --cflags check)
CHECK_LIBS   := $(shell pkg-config --libs check)
endif

CFLAGS  := $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iinclude $(PKG_CFLAGS) -MMD -MP $(EXTRA_CFLAGS)
LDLIBS  := $(PKG_LIBS) -lpthread -lm
LDFLAGS := $(SANFLAGS)

LIB_SRC  := $(filter-out src/cli/main.c,$(wildcard src/*/*.c))
LIB_OBJ  := $(LIB_SRC:src/%.c=$(BUILD)/src/%.o)
TEST_SRC := $(wildcard test/test_*.c)
TEST_SUP := $(filter-out $(TEST_SRC) test/run.c,$(wildcard test/*.c))
TEST_OBJ := $(TEST_SRC:test/%.c=$(BUILD)/test/%.o) $(TEST_SUP:test/%.c=$(BUILD)/test/%.o) \
            $(BUILD)/test/run.o
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=bin/%)

GPUPACK := $(BUILD)/gpupack

# The version main.c prints: `git describe` of a release tag (vX.Y.Z), else the
# commit; without git (a tarball) main.c's own constant. version.txt changes
# only when the version does, so main.o is rebuilt only then.
GIT_TAG    := $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null | sed 's/^v//')
GIT_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null)
GIT_DIRTY  := $(if $(GIT_COMMIT),$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty))
VERSION_DEFS := $(if $(GIT_TAG),-DGPUPACK_GIT_VERSION='"$(GIT_TAG)"',$(if $(GIT_COMMIT),-DGPUPACK_GIT_COMMIT='"$(GIT_COMMIT)$(GIT_DIRTY)"'))

# End-to-end suite: scenarios test/e2e/e2e_TOPIC.c (picked up automatically) plus the
# harness (the other test/e2e/*.c); its own binary, not part of unit-tests.
E2E_SRC := $(wildcard test/e2e/e2e_*.c)
E2E_SUP := $(filter-out $(E2E_SRC),$(wildcard test/e2e/*.c))
E2E_OBJ := $(E2E_SRC:test/%.c=$(BUILD)/%.o) $(E2E_SUP:test/%.c=$(BUILD)/%.o)

.PHONY: all build deps run test test-plain test-san valgrind bench clean e2e e2e-versions soak install fuzz fuzz-short fuzz-long FORCE
# deps first, then a fresh make so that pkg-config sees libraries deps.sh just installed
all: deps
	@$(MAKE) --no-print-directory build

build: $(GPUPACK)
	@mkdir -p bin && cp -f $(GPUPACK) bin/gpupack.tmp && mv -f bin/gpupack.tmp bin/gpupack

deps:
	@scripts/deps.sh

$(GPUPACK): $(BUILD)/src/cli/main.o $(BUILD)/libgpupack.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libgpupack.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/version.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION_DEFS)' | cmp -s - $@ || echo '$(VERSION_DEFS)' > $@

$(BUILD)/src/cli/main.o: CFLAGS += $(VERSION_DEFS)
$(BUILD)/src/cli/main.o: $(BUILD)/version.txt

# the /ui page is assembled into ui_page.o (.incbin): rebuild it when the page changes
$(BUILD)/src/http/ui_page.o: src/http/ui/index.html

# Test suites: test/test_NAME.c defines `Suite *suite_NAME(void)`; the list is generated,
# and rewritten only when it changes (a suite removed leaves the others older than the list;
# the e2e list below likewise).
$(BUILD)/test/suites.h: $(TEST_SRC) FORCE
	@mkdir -p $(dir $@)
	@for f in $(TEST_SRC); do n=$$(basename $$f .c); n=$${n#test_}; \
	  echo "SUITE($$n)"; done > $@.tmp && \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/test/run.o: test/run.c $(BUILD)/test/suites.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -I$(BUILD)/test -c -o $@ $<

$(BUILD)/test/%.o: test/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -Itest -c -o $@ $<

$(BUILD)/unit-tests: $(TEST_OBJ) $(BUILD)/libgpupack.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/e2e/e2e_suites.h: $(E2E_SRC) FORCE
	@mkdir -p $(dir $@)
	@for f in $(E2E_SRC); do n=$$(basename $$f .c); echo "E2E($${n#e2e_})"; done > $@.tmp && \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/e2e/main.o: $(BUILD)/e2e/e2e_suites.h

$(BUILD)/e2e/%.o: test/e2e/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -Itest/e2e -I$(BUILD)/e2e -c -o $@ $<

$(BUILD)/e2e-tests: $(E2E_OBJ) $(BUILD)/libgpupack.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# The control plane: GPUPACK_K8S (a kit), else ../shared/k8s, else KUBEBUILDER_ASSETS with
# test/k8s (both reach the runner from the environment or make's command line); without one
# it says how to get one and exits 0 (CI=true: fails).
e2e: deps
	@$(MAKE) --no-print-directory build $(BUILD)/e2e-tests
	GPUPACK_BIN=$(GPUPACK) $(BUILD)/e2e-tests $(E2E)

E2E_K8S_VERSIONS ?= 1.26 1.36
e2e-versions:
	@rc=0; for v in $(E2E_K8S_VERSIONS); do echo "== e2e on Kubernetes $$v"; \
	  K8S_VERSION=$$v $(MAKE) --no-print-directory e2e || rc=1; done; exit $$rc

# the soak's 10-minute variant (bench/soak.sh builds what it needs)
soak: deps
	bench/soak.sh --minutes 10 $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION)) $(SOAK_ARGS)

run: all
	bin/gpupack serve --cluster examples/cluster.yaml --policies policies --listen 127.0.0.1:8765

test: deps
	@$(MAKE) --no-print-directory test-plain
	@$(MAKE) --no-print-directory test-san SAN=address,undefined

test-plain test-san: $(BUILD)/unit-tests $(GPUPACK)
	@echo "== test suites ($(if $(SAN),sanitizers: $(SAN),plain build))"
	GPUPACK_BIN=$(GPUPACK) \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(BUILD)/unit-tests

# --fair-sched=yes: valgrind runs one thread at a time, and without a fair hand-over a thread
# that takes a mutex in a loop (test_policy_store's readers) can keep the one that waits for it
# out for ever (seen: CI stopped at its time limit). The timeout turns any other hang into a
# failure that names itself.
VALGRIND_TIMEOUT ?= 2400
valgrind: $(BUILD)/unit-tests $(GPUPACK)
	GPUPACK_BIN=$(GPUPACK) CK_FORK=no timeout --kill-after=30 $(VALGRIND_TIMEOUT) \
	  valgrind --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --error-exitcode=3 --quiet $(BUILD)/unit-tests

# bench/e2e.sh's load tool shares the scheduler-config rewrite with the e2e suite
bin/e2eload: bench/e2eload.c test/e2e/schedrw.c $(BUILD)/libgpupack.a
	@mkdir -p bin
	$(CC) $(CFLAGS) -Itest/e2e -o $@ $^ $(LDLIBS)

# the fake API server of the unit tests, in the bench's own process
bin/churnmem: bench/churnmem.c test/fakeapi.c $(BUILD)/libgpupack.a
	@mkdir -p bin
	$(CC) $(CFLAGS) -Itest -o $@ $^ $(LDLIBS)

# the soak's front and API proxy are the e2e suite's TCP forwarder
bin/soak: bench/soak.c test/e2e/tcpfwd.c $(BUILD)/libgpupack.a
	@mkdir -p bin
	$(CC) $(CFLAGS) -Itest/e2e -o $@ $^ $(LDLIBS)

bin/%: bench/%.c $(BUILD)/libgpupack.a
	@mkdir -p bin
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

bench: deps
	@$(MAKE) --no-print-directory build $(BENCH_BIN)

PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/gpupack $(DESTDIR)$(PREFIX)/bin/gpupack
	install -m 0755 scripts/kubectl-gpupack $(DESTDIR)$(PREFIX)/bin/kubectl-gpupack

clean:
	rm -rf build bin

# The container image (scripts/image.sh says which variables it takes): .dockerignore drops
# .git, so the version goes in as build arguments; SOURCE_DATE_EPOCH is the commit's time.
IMAGE ?= gpupack:latest
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
.PHONY: image
image:
	IMAGE='$(IMAGE)' IMAGE_ENGINE='$(IMAGE_ENGINE)' IMAGE_BUILD_FLAGS='$(IMAGE_BUILD_FLAGS)' \
	  BUILD_BASE='$(BUILD_BASE)' RUNTIME_BASE='$(RUNTIME_BASE)' SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' \
	  GPUPACK_VERSION='$(GIT_TAG)' GPUPACK_COMMIT='$(GIT_COMMIT)$(GIT_DIRTY)' scripts/image.sh

# libFuzzer harnesses (clang): test/fuzz/fuzz_NAME.c -> build/fuzz/fuzz_NAME, linked
# against the library built with -fsanitize=fuzzer-no-link,address,undefined.
#   make fuzz                       build them all
#   make fuzz-short                 each one for FUZZ_SECONDS (3) over its corpus, as CI does
#   make fuzz-long                  each one for FUZZ_LONG_SECONDS (360: 78 minutes for the thirteen),
#                                   one after the other at nice 19, then its corpus minimised
#                                   with -merge=1 back into test/fuzz/corpus (scripts/fuzz-long.sh)
#   build/fuzz/fuzz_watch test/fuzz/corpus/watch     a run by hand
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 3
FUZZ_LONG_SECONDS ?= 360
FUZZ_ONLY    ?= $(FUZZ_NAMES)
FUZZ_SRC     := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(FUZZ_SRC:test/fuzz/fuzz_%.c=%)
FUZZ_BIN     := $(FUZZ_NAMES:%=build/fuzz/fuzz_%)
FUZZ_LIB     := build/fuzz/lib/san/libgpupack.a

ifeq ($(SAN),)
fuzz: $(FUZZ_BIN)

# always asks the sanitizer tree's own make, which knows the header dependencies
$(FUZZ_LIB): FORCE
	@$(MAKE) --no-print-directory CC=$(FUZZ_CC) SAN=fuzzer-no-link,address,undefined \
	  BUILD_ROOT=build/fuzz/lib build/fuzz/lib/san/libgpupack.a

build/fuzz/fuzz_%: test/fuzz/fuzz_%.c $(FUZZ_LIB)
	$(FUZZ_CC) $(CSTD) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -Iinclude $(PKG_CFLAGS) -o $@ $< $(FUZZ_LIB) $(LDLIBS)

fuzz-short: $(FUZZ_BIN)
	@for n in $(FUZZ_NAMES); do mkdir -p test/fuzz/corpus/$$n build/fuzz/new/$$n; \
	  echo "== fuzz $$n ($(FUZZ_SECONDS) s)"; \
	  build/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -rss_limit_mb=1024 \
	    -print_final_stats=1 build/fuzz/new/$$n test/fuzz/corpus/$$n 2>build/fuzz/$$n.log \
	    || { tail -40 build/fuzz/$$n.log; exit 1; }; \
	  grep -E '^stat::number_of_executed_units' build/fuzz/$$n.log; done

fuzz-long: $(FUZZ_BIN)
	@scripts/fuzz-long.sh $(FUZZ_LONG_SECONDS) $(FUZZ_ONLY)
endif
FORCE:

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(E2E_OBJ:.o=.d) $(BUILD)/src/cli/main.d
