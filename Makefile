# cdl build: `make` builds ./cdl and libcdl.a; `make test` runs every test;
# `make demo` trains Fashion-MNIST; `make SAN=1` builds with ASan+UBSan under build/san.
SAN ?= 0
GPU ?= 0
ARCH ?= -march=native

OPENBLAS_DIR := /usr/lib/x86_64-linux-gnu/openblas-openmp
BLAS_INC := $(firstword $(wildcard /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/x86_64-linux-gnu/openblas-pthread))

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
CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp $(OPT) -Isrc -I$(BLAS_INC) -MMD -MP
LDLIBS := -L$(OPENBLAS_DIR) -l:libopenblas.so.0 -Wl,-rpath,$(OPENBLAS_DIR) \
          -lcjson -lzstd -lpng -ljpeg -lz -lm -fopenmp
ifeq ($(SAN),1)
LDLIBS += -fsanitize=address,undefined
endif

LIB_SRC := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRC := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_SUPPORT := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))
EXAMPLE_SRC := $(sort $(wildcard examples/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
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

# Examples see the public header alone and link libcdl.a, as a program using the library does.
$(BUILD)/include/cdl.h: src/cdl.h
	@mkdir -p $(dir $@)
	cp $< $@

$(BUILD)/examples/%: examples/%.c $(BUILD)/include/cdl.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra $(OPT) -I$(BUILD)/include -o $@ $< $(LIB) $(LDLIBS)

unit: deps $(CDL) $(TEST_BIN) $(EXAMPLE_BIN)

# Unit tests, the examples, then (without SAN) the Bats CLI tests; tests/run.sh prints
# "N passed, N failed".
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
