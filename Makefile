# lnkit build.  `make` builds liblnkit.a, liblnkit.so and bin/lnkit; see README.md
# for the rest.  `make install` (PREFIX, DESTDIR) installs them with the headers,
# lnkit.pc and the man pages.
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
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -Isrc -I$(BUILD)/gen \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# GSL is linked by hand: its pkg-config file adds -lgslcblas, whose cblas_*
# symbols would shadow OpenBLAS's.  Recursive (=), not :=, so that pkg-config
# is asked when a program is linked, after `make deps` has installed the
# packages in the same run (a fresh machine's first `make demo`).
LIBS_PRIVATE = -lgsl -lglpk -lm -lpthread
LDLIBS  = $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(LIBS_PRIVATE)
CMOCKA  = $(shell pkg-config --libs cmocka 2>/dev/null)
ifeq ($(MPI),1)
CFLAGS  += -DLNK_MPI
endif
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# FUZZ=1: the library for the libFuzzer targets (make fuzz), with Debian's clang.
ifeq ($(FUZZ),1)
CC      := clang
CFLAGS  += -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=undefined
endif

LIB_SRC  := $(wildcard src/core/*.c src/layers/*.c src/model/*.c src/io/*.c src/curvature/*.c src/geometry/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
# The front end (src/front/: start, messages, options declared once), above
# the library: lnkit, the studies, the benchmarks and the tests link it.
FRONT_SRC:= $(wildcard src/front/*.c)
FRONT_OBJ:= $(FRONT_SRC:%.c=$(BUILD)/%.o)
FRONT    := $(BUILD)/libfront.a
# lnkit's commands (src/cli/); all but main.c also make an archive that
# tools/cli_doc (their man pages' OPTIONS) and the tests link.
CLI_SRC  := $(wildcard src/cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
CMDS_OBJ := $(filter-out $(BUILD)/src/cli/main.o,$(CLI_OBJ))
CMDS     := $(BUILD)/libcmds.a
CLI_DOC  := $(BUILD)/tools/cli_doc
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# The tests' shared helpers: testutil.c, and tests/testutil_TOPIC.c for the
# programs of one topic; compiled once, linked into every test program.
TEST_UTIL:= $(patsubst tests/%.c,$(BUILD)/tests/%.o,$(wildcard tests/testutil*.c))
BENCH_SRC:= $(wildcard bench/*.c)
BENCH_BIN:= $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
STUDY_SRC:= $(wildcard studies/*.c)
STUDY_BIN:= $(STUDY_SRC:studies/%.c=$(BUILD)/studies/%)
# The study kit (studies/kit/): compiled once, linked into the studies, the
# benchmarks and the tests of the studies (KIT_TESTS) only: not a library part.
KIT_SRC  := $(wildcard studies/kit/*.c)
KIT_OBJ  := $(KIT_SRC:%.c=$(BUILD)/%.o)
KIT      := $(BUILD)/studies/libkit.a
KIT_TESTS:= $(BUILD)/tests/test_stats $(BUILD)/tests/test_anatomy $(BUILD)/tests/test_csvread
LIB      := $(BUILD)/liblnkit.a
BIN      := $(BUILD)/bin/lnkit
# The shared library: liblnkit.so.MAJOR.MINOR.PATCH, soname liblnkit.so.MAJOR.MINOR
# while the major version is 0 (no ABI promise between 0.x releases).
VERSION  := $(shell sed -n 's/^\#define LNK_VERSION "\(.*\)"/\1/p' include/lnkit/sys.h)
SOVER    := $(word 1,$(subst ., ,$(VERSION))).$(word 2,$(subst ., ,$(VERSION)))
SONAME   := liblnkit.so.$(SOVER)
SOLIB    := $(BUILD)/liblnkit.so.$(VERSION)
MAN_SRC  := $(wildcard man/*.1)
MAN_OUT  := $(MAN_SRC:man/%=$(BUILD)/man/%)
# Test builds (include/lnkit/fault.h): the sources that mention LNK_TESTING
# (fault points, the test hooks' reading) are compiled a second time with
# -DLNK_TESTING into $(BUILD)/testing/; the test programs, and the lnkit and
# studies that the tests run ($(BUILD)/testing/bin/lnkit,
# $(BUILD)/testing/studies/), link those objects in place of the plain ones.
# What `make` builds and `make install` installs has no fault injection.
T_SRC    := $(shell grep -l LNK_TESTING $(LIB_SRC) $(FRONT_SRC) $(CLI_SRC) $(KIT_SRC))
testing   = $(foreach o,$(1),$(if $(filter $(o:$(BUILD)/%.o=%.c),$(T_SRC)),$(o:$(BUILD)/%=$(BUILD)/testing/%),$(o)))
T_OBJ    := $(T_SRC:%.c=$(BUILD)/testing/%.o)
T_LIB    := $(BUILD)/testing/liblnkit.a
T_FRONT  := $(BUILD)/testing/libfront.a
T_CMDS   := $(BUILD)/testing/libcmds.a
T_KIT    := $(BUILD)/testing/studies/libkit.a
T_BIN    := $(BUILD)/testing/bin/lnkit
# (the studies whose failing ranks the MPI tests simulate: not the placement study)
T_STUDY_BIN := $(filter-out %/placements,$(STUDY_SRC:studies/%.c=$(BUILD)/testing/studies/%))

.PHONY: all deps deps-test deps-check demo test run-tests check check-asan bench bench-torch clean \
        fuzz fuzz-build test-python bench-python \
        test-mpi bench-mpi bench-peer install uninstall test-install test-readme test-fresh-root \
        docs test-docs examples \
        FORCE check-results quotes report test-summary test-placements \
        results study-grad study-geometry study-hessian study-multi30k study-demo \
        study-grad-factorial study-anatomy study-anatomy-quick study-placements testing
all: $(LIB) $(BUILD)/liblnkit.so $(BIN) $(STUDY_BIN) $(MAN_OUT)

deps:
	bash tools/deps.sh

# The test suite also needs Debian's python3-torch: the independent reference
# implementation (tests/ref_torch.py) that tests/test_reference.c compares with.
# OpenMPI for the MPI build's tests (make test runs them; the default build
# does not need it).
# NumPy, SciPy and pytest for the Python package's tests (make test-python).
# The report's TeX and poppler (make report, which the test of the summaries
# builds: REPORT_PKGS).
REPORT_PKGS := texlive-latex-base texlive-latex-recommended texlive-fonts-recommended lmodern \
               poppler-utils
TEST_PKGS := python3-torch python3-numpy libopenmpi-dev openmpi-bin python3-scipy python3-pytest \
             $(REPORT_PKGS)
deps-test:
	bash tools/deps.sh $(TEST_PKGS)

# -MMD -MP: each object depends on the headers it includes (build/**/*.d).
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(LIB_OBJ:.o=.d) $(FRONT_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(KIT_OBJ:.o=.d) $(T_OBJ:.o=.d)

$(BUILD)/testing/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DLNK_TESTING -MMD -MP -c $< -o $@

# Library objects are position-independent: the same objects make the static
# and the shared library.  private: a target's variables are otherwise those
# of its prerequisites too, and the stamp below would be written with or
# without -fPIC by whichever object make reached first (every object rebuilt
# when `make all` follows `make test`, and back).
$(LIB_OBJ): private CFLAGS += -fPIC

# Objects are rebuilt when the compiler flags change (a stamp of them: the
# global CFLAGS, plus the mark of the library's -fPIC), e.g. with another OPT.
$(BUILD)/gen/cflags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(CC) $(CFLAGS) pic-lib' > $@.tmp; if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(LIB_OBJ) $(FRONT_OBJ) $(CLI_OBJ) $(KIT_OBJ) $(T_OBJ) $(TEST_UTIL): $(BUILD)/gen/cflags

# The commit the library is built from (sidecars, --version): rewritten only
# when it changes, so a rebuild recompiles provenance.c alone.  "-dirty" when
# tracked files differ from the commit, apart from what the studies write
# (results/) and prose (*.md): a study run in a tree whose earlier studies
# have rewritten results/ is still built from the commit; "unknown" outside a
# git checkout.
$(BUILD)/gen/commit.h: FORCE
	@mkdir -p $(dir $@)
	@c=unknown; \
	if [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ]; then \
	    c=$$(git rev-parse HEAD 2>/dev/null || echo unknown); \
	    if [ -n "$$(git status --porcelain --untracked-files=no -- . ':(exclude)results' ':(exclude)*.md' 2>/dev/null)" ]; then c=$$c-dirty; fi; \
	fi; \
	echo "#define LNK_GIT_COMMIT \"$$c\"" > $@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/src/io/provenance.o: $(BUILD)/gen/commit.h
FORCE:

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SOLIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(SONAME) $(LDFLAGS) $(LIB_OBJ) $(LDLIBS) -o $@
$(BUILD)/$(SONAME): $(SOLIB)
	ln -sf $(notdir $<) $@
$(BUILD)/liblnkit.so: $(BUILD)/$(SONAME)
	ln -sf $(notdir $<) $@

# Man pages: the OPTIONS section of lnkit-CMD(1) is generated from the
# command's option table (tools/cli_doc CMD) in place of '.\" @OPTIONS@'.
$(BUILD)/man/%.1: man/%.1 tools/manpage.awk $(CLI_DOC)
	@mkdir -p $(dir $@)
	awk -v doc=$(CLI_DOC) -f tools/manpage.awk $< > $@.tmp && mv $@.tmp $@

$(FRONT): $(FRONT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CMDS): $(CMDS_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(BUILD)/src/cli/main.o $(CMDS) $(FRONT) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(BUILD)/src/cli/main.o $(CMDS) $(FRONT) $(LIB) $(LDLIBS) -o $@
	@if [ "$(BUILD)" = build ]; then mkdir -p bin && ln -sf ../$@ bin/lnkit; fi

$(T_CMDS): $(call testing,$(CMDS_OBJ))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The test build's archives and programs (see T_SRC above).
$(T_LIB): $(call testing,$(LIB_OBJ))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(T_FRONT): $(call testing,$(FRONT_OBJ))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(T_KIT): $(call testing,$(KIT_OBJ))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(T_BIN): $(call testing,$(CLI_OBJ)) $(T_FRONT) $(T_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/testing/studies/%: studies/%.c $(wildcard studies/kit/*.h) $(T_KIT) $(T_FRONT) $(T_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DLNK_TESTING -Istudies $(LDFLAGS) $< $(PARTS) $(T_KIT) $(T_FRONT) $(T_LIB) \
	    $(LDLIBS) -o $@
testing: $(T_BIN) $(T_STUDY_BIN)

$(TEST_UTIL): $(BUILD)/tests/%.o: tests/%.c $(wildcard tests/testutil*.h include/lnkit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(TEST_UTIL) $(T_CMDS) $(T_FRONT) $(T_LIB) tests/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DLNK_TESTING -Istudies $(LDFLAGS) $< $(TEST_UTIL) $(TEST_KIT) $(T_CMDS) \
	    $(T_FRONT) $(T_LIB) $(CMOCKA) $(LDLIBS) -o $@
$(KIT_TESTS): TEST_KIT = $(T_KIT)
# the benchmarks it runs, built with the tests
$(BUILD)/tests/test_bench_out: | $(BUILD)/bench/bench_curvature $(BUILD)/bench/bench_mpi \
                               $(BUILD)/bench/bench_span
# the studies and benchmarks whose options they check (demo_postpre's messages)
$(BUILD)/tests/test_cli_conv $(BUILD)/tests/test_cli_programs: | $(STUDY_BIN) $(BENCH_BIN)
$(KIT_TESTS): $(T_KIT)

$(CLI_DOC): tools/cli_doc.c $(CMDS) $(FRONT) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(CMDS) $(FRONT) $(LIB) $(LDLIBS) -o $@

$(KIT): $(KIT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/studies/%: studies/%.c $(wildcard studies/kit/*.h) $(KIT) $(FRONT) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Istudies $(LDFLAGS) $< $(PARTS) $(KIT) $(FRONT) $(LIB) $(LDLIBS) -o $@

# A study X is one program: its driver studies/X.c and, when the folder
# studies/X/ exists, the parts there (compiled with it: PARTS).
STUDY_DIRS := $(filter $(STUDY_SRC:studies/%.c=%),$(patsubst studies/%/,%,$(dir $(wildcard studies/*/*.c))))
define study_parts
$(BUILD)/studies/$(1) $(BUILD)/testing/studies/$(1): $(wildcard studies/$(1)/*.c studies/$(1)/*.h)
$(BUILD)/studies/$(1) $(BUILD)/testing/studies/$(1): private PARTS := $(wildcard studies/$(1)/*.c)
endef
$(foreach s,$(sort $(STUDY_DIRS)),$(eval $(call study_parts,$(s))))

$(BUILD)/bench/%: bench/%.c bench/bench.h $(wildcard studies/kit/*.h) $(KIT) $(FRONT) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Istudies $(LDFLAGS) $< $(KIT) $(FRONT) $(LIB) $(LDLIBS) -o $@

# The test suite: every tests/test_*.c is a cmocka program; tools/runtests.sh
# runs them all (with bin/lnkit on hand for the CLI tests) and prints the totals.
test: deps-test
	$(MAKE) run-tests
	$(MAKE) test-python
	$(MAKE) test-mpi
	$(MAKE) test-install
	$(MAKE) test-readme
	$(MAKE) test-docs
	$(MAKE) test-bitwise
	$(MAKE) test-summary
	$(MAKE) test-placements
	$(MAKE) check-results

# The placement study's driver on tiny models against the dense H, G, F
# and `lnkit eval` (tests/test_placements.py; about a minute).
test-placements: all
	BUILD=$(BUILD) LNKIT_LIB=$(abspath $(SOLIB)) PYTHONPATH=python \
	    $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_placements.py

# The summaries (studies/summary: the statistics module on hand-worked cases,
# every study's summary on rows of known answers, the report built and
# checked): pytest with Debian's python3.
test-summary: all
	bash tools/deps.sh $(REPORT_PKGS)
	BUILD=$(BUILD) LNKIT=$(abspath $(BIN)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/summary

# One document of every study under results/ (setting, claims with their
# intervals, tables, figures, provenance): out/report/report.pdf, LaTeX with
# the tables' .tex and the figures' PDFs as they are in results/ (Debian's TeX,
# installed when missing).
REPORT_OUT ?= out/report
report:
	bash tools/deps.sh $(REPORT_PKGS)
	$(PYTHON) -m studies.summary report $(REPORT_OUT)

# The Python package (python/lnkit) and its tests (python/tests, pytest) with
# Debian's python3 (its python3-numpy, -scipy, -pytest; a python3 of another
# installation may come first on the PATH), against this build's liblnkit.so
# and lnkit program.
PYTHON  ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
# The studies' scripts summarise with it (studies/summary).
export PYTHON
test-python: all
	cd python && LNKIT_LIB=$(abspath $(SOLIB)) LNK_BIN=$(abspath $(BIN)) \
	    $(PYTHON) -m pytest -q -p no:cacheprovider tests

# A product through Python against `lnkit hvp --repeat` on config (b).
bench-python: all
	LNKIT_LIB=$(abspath $(SOLIB)) PYTHON=$(PYTHON) bash tools/bench_python.sh $(BUILD)

# make install into a temporary DESTDIR, the example built against the
# installed lnkit.pc (shared and static), checked against `lnkit eigs`; the
# man pages against every command's --help; make uninstall leaves nothing.
test-install: all
	PYTHON=$(PYTHON) bash tests/test_install.sh $(BUILD)

# The README's two commands on a fresh Debian 12 root (debootstrap) from a
# plain clone of the committed HEAD; needs root.  .ci/run runs it; not part
# of make test.  FRESH_ROOT, FRESH_BASE, FRESH_LOG: see tools/fresh-root.sh.
test-fresh-root:
	bash tools/fresh-root.sh

# Numbers quoted in Markdown against the result files they come from
# (tools/quotes.py: marked tables, included tables and values, the studies'
# values from their values.csv), and every study's summarising step re-run on
# its committed rows against its committed tables and values
# (tools/check_summaries.sh); `make quotes` rewrites the marks.
QUOTED := docs/guide/performance.md docs/guide/studies.md results/README.md
check-results: all
	python3 tools/quotes.py --check $(QUOTED)
	PYTHON=$(PYTHON) bash tools/check_summaries.sh $(BUILD)
	PYTHON=$(PYTHON) BUILD=$(BUILD) bash tests/test_quotes.sh
quotes:
	python3 tools/quotes.py --write $(QUOTED)

# eigs, trace, density and hvp bit for bit against the outputs of the code
# that made the committed results (tests/bitwise/README.md).
test-bitwise: all
	bash tests/test_bitwise.sh $(BUILD)

# The README's command-line walk-through, extracted from README.md and run as
# written in an empty folder (every exit status checked).
test-readme: all
	PYTHON=$(PYTHON) bash tests/test_readme.sh $(BUILD)

# The user guide's command reference (docs/guide/commands.md), generated from
# the option tables by tools/cli_doc, as the man pages' OPTIONS are, and the
# study programs' options (docs/guide/study-options.md: their --help).
docs: $(CLI_DOC) $(STUDY_BIN) $(BENCH_BIN)
	$(CLI_DOC) --markdown > docs/guide/commands.md.tmp
	mv docs/guide/commands.md.tmp docs/guide/commands.md
	bash tools/study_doc.sh $(BUILD) > docs/guide/study-options.md.tmp
	mv docs/guide/study-options.md.tmp docs/guide/study-options.md
	bash tools/study_doc.sh $(BUILD) bench > docs/guide/bench-options.md.tmp
	mv docs/guide/bench-options.md.tmp docs/guide/bench-options.md
# The documents against what they describe: the command reference equals
# what `make docs` makes, every link of README.md and docs/ resolves, every
# man page renders without a warning, lnkit(1) names every environment
# variable the programs read (tests/test_docs.sh).
test-docs: all $(BENCH_BIN)
	PYTHON=$(PYTHON) bash tests/test_docs.sh $(BUILD)

# The examples (examples/), built against the installed lnkit (pkg-config);
# their binaries are ignored by git.
examples:
	$(MAKE) -C examples

# The MPI build and its tests (1, 2 and 3 ranks against one process); skipped
# with a message when mpicc is not installed.
MPI_BUILD ?= build-mpi
test-mpi:
	@if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then \
	    $(MAKE) all testing && $(MAKE) MPI=1 BUILD=$(MPI_BUILD) all testing && \
	    bash tests/mpi/run.sh $(BUILD) $(MPI_BUILD); \
	else echo "test-mpi: SKIPPED: mpicc/mpirun not found (make deps-test installs OpenMPI)"; fi

bench-mpi: all
	$(MAKE) MPI=1 all build-mpi/bench/bench_mpi
	bash tools/bench_mpi.sh build build-mpi
	$(MAKE) quotes

run-tests: $(TEST_BIN) $(BIN) $(STUDY_BIN) $(T_BIN) $(MAN_OUT)
	LNK_BIN=$(abspath $(T_BIN)) bash tools/runtests.sh $(TEST_BIN)

check: test

# The MPI tests under the sanitizers too (LeakSanitizer off there: OpenMPI's
# own allocations at exit are not ours to free).
check-asan: deps-test
	$(MAKE) BUILD=build-asan SAN=1 OPT=-O1 run-tests
	ASAN_OPTIONS=detect_leaks=0 $(MAKE) BUILD=build-asan MPI_BUILD=build-asan-mpi SAN=1 OPT=-O1 \
	    test-mpi

# Fuzzing (not part of make test): a libFuzzer target for every reader
# (tests/fuzz/fuzz_*.c: safetensors and the model-aware loaders, config JSON,
# text, vocabulary, parallel corpus, CSV) and for the sidecar writer (path
# bytes in, the JSON parsed back), built with clang under ASan + UBSan
# into build-fuzz/, each run FUZZ_SECONDS from the seed corpus
# tests/fuzz/seeds/TARGET/ (valid and malformed files; the corpus it grows
# stays in build-fuzz/).  Prints executions and findings per target; fails if
# any target found something (the inputs are kept in build-fuzz/findings/).
FUZZ_SECONDS ?= 60
FUZZ_BIN := $(patsubst tests/fuzz/%.c,build-fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
fuzz:
	bash tools/deps.sh clang libclang-rt-14-dev
	$(MAKE) fuzz-build
	bash tools/fuzz.sh build-fuzz $(FUZZ_SECONDS)

fuzz-build:
	$(MAKE) FUZZ=1 BUILD=build-fuzz OPT=-O1 $(FUZZ_BIN)

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(KIT) $(FRONT) $(LIB)
	$(CC) $(CFLAGS) -Istudies -fsanitize=fuzzer $< $(KIT) $(FRONT) $(LIB) $(LDLIBS) -o $@

bench: all $(BENCH_BIN)
	bash tools/bench.sh $(BUILD)
	$(MAKE) quotes

bench-torch: all $(BENCH_BIN)
	bash tools/bench_torch.sh $(BUILD)
	$(MAKE) quotes

# lnkit against PyTorch + SciPy eigsh on config (b), and the Multi30k full-size product
bench-peer: all $(BENCH_BIN)
	bash tools/bench_peer.sh $(BUILD)
	$(MAKE) quotes

# The main job: Post-LN vs Pre-LN loss and per-layer gradient norms on
# built-in synthetic data, CSV + .meta.json under out/demo/ (git-ignored, so
# that running it leaves the checkout clean); `make study-demo` regenerates
# the committed reference copy in results/demo/.
DEMO_OUT ?= out/demo
demo: deps
	$(MAKE) all
	$(BUILD)/studies/demo_postpre --out $(DEMO_OUT)
	LNKIT=$(BIN) $(PYTHON) -m studies.summary demo $(DEMO_OUT)
	@cat $(DEMO_OUT)/loss.md $(DEMO_OUT)/w2_blocks.md

# Studies: each regenerates its part of results/ (CSV + .meta.json, then its
# summary: tables, figures, claims; python3 -m studies.summary STUDY DIR).
study-grad: deps
	$(MAKE) all
	bash studies/scripts/study_grad.sh $(BUILD)

study-geometry: deps
	$(MAKE) all
	bash studies/scripts/study_geometry.sh $(BUILD)

# The gradient study's headline fits over task, output tying, V, setting and
# statistic (issue 17, item 4) -> results/grad_factorial/.
study-grad-factorial: deps
	$(MAKE) all
	bash studies/scripts/study_grad_factorial.sh $(BUILD)

study-hessian: deps
	$(MAKE) all
	bash studies/scripts/study_hessian.sh $(BUILD)

study-multi30k: deps
	$(MAKE) all
	bash studies/scripts/study_multi30k.sh $(BUILD)

study-demo: deps
	$(MAKE) all
	$(BUILD)/studies/demo_postpre --out results/demo
	LNKIT=$(BIN) $(PYTHON) -m studies.summary demo results/demo

# The placement study (issue 34): every stage of
# studies/scripts/study_placements.sh (hours: results/README.md's placements
# section gives the budget; resumable: run it again to continue), then its
# summary.  PLACEMENTS_ARGS: e.g. --bin FROZEN/build/studies/placements, or
# stages (core m30k coupling scale variations; default all).
PLACEMENTS_ARGS ?= all
study-placements: deps
	$(MAKE) all
	bash studies/scripts/study_placements.sh $(PLACEMENTS_ARGS)

# Curvature anatomy (issue 17): H, G, F extremes, eigenvector masses, block
# norms and JS distances against depth and width -> results/anatomy/ (the
# issue's ranges: hours, resumable; results/README.md); the quick variant
# (reduced sizes, about half an hour) -> out/anatomy-quick/.
study-anatomy: deps
	$(MAKE) all
	bash studies/scripts/study_anatomy.sh $(BUILD) --full

study-anatomy-quick: deps
	$(MAKE) all
	bash studies/scripts/study_anatomy.sh $(BUILD)

# The long runs (study-anatomy; studies/multi30k_full.sh) are started on
# their own, in the background: results/README.md gives their commands.
results: study-demo study-grad study-geometry study-hessian study-multi30k study-grad-factorial

deps-check:
	@bash tools/deps.sh --check $(TEST_PKGS)

# Installation: PREFIX (default /usr/local) and DESTDIR (staging) as usual.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
PCDIR   ?= $(LIBDIR)/pkgconfig
# The Python package goes where Debian's python3 looks: /usr/lib/python3/
# dist-packages for PREFIX=/usr, PREFIX/lib/python3.X/dist-packages otherwise
# (/usr/local/lib/python3.11/dist-packages on Debian 12).  Its _install.py
# names liblnkit.so relative to the package (so a DESTDIR copy finds its own)
# and absolutely.  Skipped, with a note, where there is no python3.
PYVER    = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYDIR   ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYVER)/dist-packages)
PY_SRC  := $(wildcard python/lnkit/*.py)

# Made at every make run (PREFIX may differ from the last one), rewritten
# only when it changes.
$(BUILD)/lnkit.pc: lnkit.pc.in FORCE
	@mkdir -p $(dir $@)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	    -e 's|@INCDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCDIR))|' \
	    -e 's|@VERSION@|$(VERSION)|' -e 's|@PKGS@|$(PKGS)|' -e 's|@LIBS_PRIVATE@|$(LIBS_PRIVATE)|' \
	    $< > $@.tmp; if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

install: all $(BUILD)/lnkit.pc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR)/lnkit \
	    $(DESTDIR)$(PCDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/lnkit
	install -m 644 include/lnkit/*.h $(DESTDIR)$(INCDIR)/lnkit/
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/liblnkit.a
	install -m 755 $(SOLIB) $(DESTDIR)$(LIBDIR)/liblnkit.so.$(VERSION)
	ln -sf liblnkit.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/liblnkit.so
	install -m 644 $(BUILD)/lnkit.pc $(DESTDIR)$(PCDIR)/lnkit.pc
	install -m 644 $(MAN_OUT) $(DESTDIR)$(MANDIR)/man1/
	@if [ -n "$(PYVER)" ]; then \
	    install -d $(DESTDIR)$(PYDIR)/lnkit && install -m 644 $(PY_SRC) $(DESTDIR)$(PYDIR)/lnkit/ && \
	    rel=$$($(PYTHON) -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
	           $(LIBDIR) $(PYDIR)/lnkit) && \
	    printf '# written by make install\nLIB_RELATIVE = "%s"\nLIB_ABSOLUTE = "%s"\n' \
	        "$$rel/$(SONAME)" "$(LIBDIR)/$(SONAME)" > $(DESTDIR)$(PYDIR)/lnkit/_install.py && \
	    echo "install: the Python package lnkit in $(DESTDIR)$(PYDIR)"; \
	else echo "install: no $(PYTHON): the Python package lnkit is not installed"; fi
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/lnkit $(DESTDIR)$(LIBDIR)/liblnkit.a \
	    $(DESTDIR)$(LIBDIR)/liblnkit.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
	    $(DESTDIR)$(LIBDIR)/liblnkit.so $(DESTDIR)$(PCDIR)/lnkit.pc \
	    $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN_SRC))) \
	    $(addprefix $(DESTDIR)$(INCDIR)/lnkit/,$(notdir $(wildcard include/lnkit/*.h)))
	-rmdir $(DESTDIR)$(INCDIR)/lnkit 2>/dev/null
	@if [ -n "$(PYVER)" ]; then rm -rf $(DESTDIR)$(PYDIR)/lnkit; fi
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

clean:
	rm -rf build build-asan build-mpi build-asan-mpi build-fuzz bin out
