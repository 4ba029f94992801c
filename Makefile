# lnkit build.  `make` builds liblnkit.a and bin/lnkit; see README.md for the rest.
# `make MPI=1` builds the same programs with mpicc (OpenMPI) into build-mpi/:
# lnkit and the studies then run under mpirun (include/lnkit/comm.h).
MPI     ?= 0
ifeq ($(MPI),1)
BUILD   ?= build-mpi
CC      := mpicc
endif
BUILD   ?= build
SAN     ?= 0
PKGS    := openblas jansson lapacke
CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -Isrc \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# GSL is linked by hand: its pkg-config file adds -lgslcblas, whose cblas_*
# symbols would shadow OpenBLAS's.
LDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lgsl -lglpk -lm -lpthread
CMOCKA  := $(shell pkg-config --libs cmocka 2>/dev/null)
ifeq ($(MPI),1)
CFLAGS  += -DLNK_MPI
endif
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC  := $(wildcard src/core/*.c src/layers/*.c src/model/*.c src/io/*.c src/curvature/*.c src/geometry/*.c src/analysis/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_SRC  := $(wildcard src/cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_UTIL:= $(BUILD)/tests/testutil.o
BENCH_SRC:= $(wildcard bench/*.c)
BENCH_BIN:= $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
STUDY_SRC:= $(wildcard studies/*.c)
STUDY_BIN:= $(STUDY_SRC:studies/%.c=$(BUILD)/studies/%)
LIB      := $(BUILD)/liblnkit.a
BIN      := $(BUILD)/bin/lnkit

.PHONY: all deps deps-test deps-check demo test run-tests check check-asan bench bench-torch clean \
        test-mpi bench-mpi bench-peer \
        results study-grad study-geometry study-hessian study-multi30k
all: $(LIB) $(BIN) $(STUDY_BIN)

deps:
	bash tools/deps.sh

# The test suite also needs Debian's python3-torch: the independent reference
# implementation (tools/ref_torch.py) that tests/test_reference.c compares with.
# OpenMPI for the MPI build's tests (make test runs them; the default build
# does not need it).
TEST_PKGS := python3-torch python3-numpy libopenmpi-dev openmpi-bin
deps-test:
	bash tools/deps.sh $(TEST_PKGS)

# -MMD -MP: each object depends on the headers it includes (build/**/*.d).
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@
	@if [ "$(BUILD)" = build ]; then mkdir -p bin && ln -sf ../$@ bin/lnkit; fi

$(BUILD)/tests/testutil.o: tests/testutil.c tests/testutil.h $(wildcard include/lnkit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(TEST_UTIL) $(LIB) tests/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(TEST_UTIL) $(LIB) $(CMOCKA) $(LDLIBS) -o $@

$(BUILD)/studies/%: studies/%.c studies/study.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(LIB) $(LDLIBS) -o $@

$(BUILD)/bench/%: bench/%.c bench/bench.h studies/study.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(LIB) $(LDLIBS) -o $@

# The test suite: every tests/test_*.c is a cmocka program; tools/runtests.sh
# runs them all (with bin/lnkit on hand for the CLI tests) and prints the totals.
test: deps-test
	$(MAKE) run-tests
	$(MAKE) test-mpi

# The MPI build and its tests (1, 2 and 3 ranks against one process); skipped
# with a message when mpicc is not installed.
MPI_BUILD ?= build-mpi
test-mpi:
	@if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then \
	    $(MAKE) all && $(MAKE) MPI=1 BUILD=$(MPI_BUILD) all && \
	    bash tests/mpi/run.sh $(BUILD) $(MPI_BUILD); \
	else echo "test-mpi: SKIPPED: mpicc/mpirun not found (make deps-test installs OpenMPI)"; fi

bench-mpi: all
	$(MAKE) MPI=1 all build-mpi/bench/bench_mpi
	bash tools/bench_mpi.sh build build-mpi

run-tests: $(TEST_BIN) $(BIN) $(STUDY_BIN)
	LNK_BIN=$(abspath $(BIN)) bash tools/runtests.sh $(TEST_BIN)

check: test

# The MPI tests under the sanitizers too (LeakSanitizer off there: OpenMPI's
# own allocations at exit are not ours to free).
check-asan: deps-test
	$(MAKE) BUILD=build-asan SAN=1 OPT=-O1 run-tests
	ASAN_OPTIONS=detect_leaks=0 $(MAKE) BUILD=build-asan MPI_BUILD=build-asan-mpi SAN=1 OPT=-O1 \
	    test-mpi

bench: all $(BENCH_BIN)
	bash tools/bench.sh $(BUILD)

bench-torch: all $(BENCH_BIN)
	bash tools/bench_torch.sh $(BUILD)

# lnkit against PyTorch + SciPy eigsh on config (b), and the Multi30k full-size product
bench-peer: all $(BENCH_BIN)
	bash tools/bench_peer.sh $(BUILD)

# The main job: Post-LN vs Pre-LN loss and per-layer gradient norms on
# built-in synthetic data, CSV + .meta.json under results/demo/.
demo: deps all
	$(BUILD)/studies/demo_postpre --out results/demo

# Studies: each regenerates its part of results/ (CSV + .meta.json, tables, plots).
study-grad: deps all
	bash tools/study_grad.sh $(BUILD)

study-geometry: deps all
	bash tools/study_geometry.sh $(BUILD)

study-hessian: deps all
	bash tools/study_hessian.sh $(BUILD)

study-multi30k: deps all
	bash tools/study_multi30k.sh $(BUILD)

results: study-grad study-geometry study-hessian study-multi30k

deps-check:
	@bash tools/deps.sh --check $(TEST_PKGS)

clean:
	rm -rf build build-asan build-mpi build-asan-mpi bin
