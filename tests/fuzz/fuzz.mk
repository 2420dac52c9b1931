# Fuzz targets (tests/fuzz/fuzz_*.c), included by the Makefile.
#   make fuzz [FUZZ_TARGETS="cfg png"] [FUZZ_SECONDS=S] [FUZZ_RUNS=N]
#     builds each target with clang's libFuzzer under ASan+UBSan (build/fuzz/) and runs it for N
#     executions or S seconds, whichever ends first (S = 10 when neither is given), from its seed corpus (tests/fuzz/corpus/NAME) and regression
#     inputs (tests/fuzz/regressions/NAME), keeping what it learns in build/fuzz/corpus/NAME and
#     crashing inputs in build/fuzz/crashes/NAME/ (tests/fuzz/run.sh).
#   make test, make test SAN=1
#     replay every corpus and regression input through the same entry points, built with $(CC)
#     under ASan+UBSan against build/san's library (build/san/fuzz/replay_NAME, one test each).
FUZZ_ALL := $(sort $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?=
FUZZ_RUNS ?=
FUZZ_CC ?= clang
FUZZ_SUPPORT := tests/fuzz/support.c
# Library code the targets reach beyond libcdl: the JSONL reader of `cdl plot`.
FUZZ_CLI := src/cli/plot_log.c

FUZZ_OBJ_DIR := build/fuzz
FUZZ_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=undefined
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-pass-failed -fopenmp $(FUZZ_FLAGS) -Isrc \
              $(if $(BLAS_INC),-I$(BLAS_INC)) -MMD -MP
FUZZ_LIB_OBJ := $(patsubst %.c,$(FUZZ_OBJ_DIR)/%.o,$(LIB_SRC) $(FUZZ_CLI) $(FUZZ_SUPPORT))
FUZZ_BIN := $(FUZZ_TARGETS:%=$(FUZZ_OBJ_DIR)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-replay
fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz-build: deps
	@command -v $(FUZZ_CC) > /dev/null || \
	  { echo "make fuzz needs clang (libFuzzer): apt-get install clang" >&2; exit 2; }
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

# Every object, the fuzz entry points included, is instrumented for coverage
# (-fsanitize=fuzzer-no-link); only the link adds libFuzzer's main.
$(FUZZ_OBJ_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# cdl_doctor.c includes the generated build report (Makefile: BUILD_INFO).
$(FUZZ_OBJ_DIR)/src/api/cdl_doctor.o: $(BUILD_INFO)
$(FUZZ_OBJ_DIR)/src/api/cdl_doctor.o: FUZZ_CFLAGS += -I$(dir $(BUILD_INFO))

# The int8 kernels' own -m flags, as the Makefile gives them (backend/cpu/qgemm.h picks one at run time).
$(FUZZ_OBJ_DIR)/src/backend/cpu/qgemm_vnni.o: FUZZ_CFLAGS += -mavx512f -mavx512bw -mavx512vnni
$(FUZZ_OBJ_DIR)/src/backend/cpu/qgemm_avx2.o $(FUZZ_OBJ_DIR)/src/backend/cpu/qgemm_cols_avx2.o: FUZZ_CFLAGS += -mavx2

$(FUZZ_OBJ_DIR)/libfuzzcdl.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_OBJ_DIR)/fuzz_%: $(FUZZ_OBJ_DIR)/tests/fuzz/fuzz_%.o $(FUZZ_OBJ_DIR)/libfuzzcdl.a
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LIB_LDLIBS)

# The replay programs: the same entry points with tests/fuzz/replay.c's main, in the sanitized
# build; a plain `make test` builds them through `make SAN=1`.
REPLAY_SRC := tests/fuzz/replay.c $(FUZZ_SUPPORT) $(FUZZ_CLI)
ifeq ($(SAN),1)
FUZZ_REPLAY_DIR := $(BUILD)/fuzz
FUZZ_REPLAY_BIN := $(FUZZ_ALL:%=$(FUZZ_REPLAY_DIR)/replay_%)
fuzz-replay: $(FUZZ_REPLAY_BIN)
$(FUZZ_REPLAY_DIR)/replay_%: $(BUILD)/tests/fuzz/fuzz_%.o $(REPLAY_SRC:%.c=$(BUILD)/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDLIBS)
else
FUZZ_REPLAY_DIR := build/san/fuzz
fuzz-replay:
	@$(MAKE) --no-print-directory SAN=1 MPI=0 fuzz-replay
endif
