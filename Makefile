# cdl build: `make` builds ./cdl and libcdl.a; `make test` runs every test;
# `make demo` trains Fashion-MNIST; `make SAN=1` builds with ASan+UBSan under build/san.
SAN ?= 0
GPU ?= 0
ARCH ?= -march=native

OPENBLAS_DIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
# Looked up when a compile runs, not when make reads this file: on a fresh machine the
# `deps` prerequisite installs libopenblas-dev only after that (make caches $(wildcard)).
BLAS_INC = $(shell ls -d /usr/include/x86_64-linux-gnu/openblas-openmp \
                        /usr/include/x86_64-linux-gnu/openblas-pthread 2>/dev/null | head -n 1)

ifeq ($(SAN),1)
BUILD := build/san
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
CDL := $(BUILD)/cdl
else
BUILD := build/rel
OPT := -O3 $(ARCH) -g
CDL := cdl
endif

CC ?= gcc
CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp $(OPT) -Isrc $(if $(BLAS_INC),-I$(BLAS_INC)) -MMD -MP
LDLIBS := -L$(OPENBLAS_DIR) -l:libopenblas.so.0 -Wl,-rpath,$(OPENBLAS_DIR) \
          -lcjson -lzstd -lpng -ljpeg -lz -lm -fopenmp
ifeq ($(SAN),1)
LDLIBS += -fsanitize=address,undefined
endif

LIB_SRC := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRC := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_SUPPORT := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libcdl.a

.PHONY: all deps test unit demo clean bench format
# Keep test objects: deleting them as intermediates would print after the test summary.
.SECONDARY:
all: deps $(CDL) libcdl.a

deps:
	@scripts/deps.sh --quiet

libcdl.a: $(LIB)
	@[ "$(SAN)" = 1 ] || cp $(LIB) libcdl.a

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CDL): $(CLI_OBJ) $(LIB)
	$(CC) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(TEST_SUPPORT_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TEST_SUPPORT_OBJ) $(LIB) $(LDLIBS)

unit: deps $(CDL) $(TEST_BIN)

# Unit tests, then (without SAN) the Bats CLI tests; tests/run.sh prints "N passed, N failed".
test: unit
	@CDL_BIN=$(abspath $(CDL)) BUILD=$(BUILD) SAN=$(SAN) tests/run.sh

demo: all
	scripts/demo.sh

bench: all
	scripts/bench-cpu.sh

format:
	clang-format -i $$(find src tests/unit -name '*.[ch]')

clean:
	rm -rf build cdl libcdl.a

-include $(shell find build -name '*.d' 2>/dev/null)
