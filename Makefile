# cdl build: `make` builds ./cdl and libcdl.a; `make test` runs every test;
# `make demo` trains Fashion-MNIST; `make SAN=1` builds with ASan+UBSan under build/san;
# `make MPI=1` builds data-parallel training with Open MPI (under build/mpi, ./cdl-mpi unless
# CDL= names the binary); `make GPU=1` links the CUDA runtime and cuDNN from CUDA_DIR (under
# build/gpu-rel, ./cdl-gpu; only `cdl doctor` uses them so far); `make DNNL=0` builds without
# oneDNN (convolutions on the reference im2col + OpenBLAS path only; under build/nodnnl-rel,
# ./cdl-nodnnl).
VERSION := 0.1
SAN ?= 0
GPU ?= 0
MPI ?= 0
DNNL ?= 1
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

# MPI=1: mpicc's flags, asked for when a compile or link runs (recursive `=`), not when make
# reads this file, so that a fresh machine's `deps` can install Open MPI first.
ifeq ($(MPI),1)
BUILD := $(BUILD:build/%=build/mpi-%)
CDL := $(if $(filter 1,$(SAN)),$(BUILD)/cdl,cdl-mpi)
MPI_CFLAGS = -DCDL_MPI $(shell mpicc --showme:compile)
MPI_LDLIBS = $(shell mpicc --showme:link)
endif

# GPU=1: the GPU backend joins the library: cuda/*.c (C host code over the CUDA runtime, cuBLAS
# and cuDNN), and cuda/kernels/*.cu compiled by nvcc for sm_80, sm_90 and PTX, a register spill an
# error (cuda/cuda.mk's NVCC_FLAGS).
# GPU=sim: the same sources against the CPU simulator of CUDA's execution model (cuda/sim/): the
# .cu files compiled as C++ by the host compiler, cudart and cuBLAS by the simulator's shims
# (cuda/README.md); under build/gpusim-rel, ./cdl-gpusim. cuDNN is not simulated: the GPU
# backend's own engine runs there.
# With MPI=1 as well, a GPU net's gradient buckets are summed by NCCL (cuda/nccl_collective.c):
# GPU=1 links libnccl from CUDA_DIR, GPU=sim builds cuda/sim/nccl_shim.cc (NCCL's calls over MPI)
# into ./cdl-gpusim-mpi; without MPI=1 the shim is left out.
CUDA_DIR ?= /usr/local/cuda
GPU_SRC = $(if $(filter 1 sim,$(GPU)),$(sort $(wildcard cuda/*.c)))
GPU_CU_SRC = $(if $(filter 1 sim,$(GPU)),$(sort $(wildcard cuda/kernels/*.cu)))
GPU_SIM_SRC = $(if $(filter sim,$(GPU)),$(filter-out $(if $(filter 1,$(MPI)),,cuda/sim/nccl_shim.cc),\
                $(sort $(wildcard cuda/sim/*.cc))))
ifeq ($(GPU),1)
BUILD := $(BUILD:build/%=build/gpu-%)
CDL := $(if $(filter 1,$(SAN)),$(BUILD)/cdl,$(CDL:cdl%=cdl-gpu%))
GPU_CFLAGS := -DCDL_GPU -I$(CUDA_DIR)/include -Icuda
GPU_LDLIBS := -L$(CUDA_DIR)/lib64 -lcublas -lcublasLt -lcudnn -lcudart_static \
              -Wl,-rpath,$(CUDA_DIR)/lib64 -ldl -lrt -lpthread -lstdc++ $(if $(filter 1,$(MPI)),-lnccl)
endif
ifeq ($(GPU),sim)
BUILD := $(BUILD:build/%=build/gpusim-%)
CDL := $(if $(filter 1,$(SAN)),$(BUILD)/cdl,$(CDL:cdl%=cdl-gpusim%))
GPU_CFLAGS := -DCDL_GPU -DCDL_GPU_SIM -I$(CUDA_DIR)/include -Icuda
GPU_LDLIBS := -lstdc++
endif

# DNNL=1 (the default): convolutions through oneDNN (libdnnl-dev, which `deps` installs; its
# header and library are in the compiler's default paths, so nothing is looked up here).
ifeq ($(DNNL),1)
DNNL_CFLAGS := -DCDL_DNNL
DNNL_LDLIBS := -ldnnl
else
BUILD := $(BUILD:build/%=build/nodnnl-%)
CDL := $(if $(filter 1,$(SAN)),$(BUILD)/cdl,$(CDL:cdl%=cdl-nodnnl%))
endif

CC ?= gcc
# -fno-trapping-math: cdl never unmasks floating-point traps, and without it GCC keeps loops with
# float comparisons scalar (leaky's select, maxpool's max, the clamps of the exp/tanh/erfc
# approximations); every value stays the same. -fno-math-errno: cdl never reads errno after a
# math function, and without it GCC keeps loops that call sqrtf scalar (Adam's update); sqrtf is
# correctly rounded either way.
CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp -fno-trapping-math -fno-math-errno $(OPT) -Isrc $(if $(BLAS_INC),-I$(BLAS_INC)) $(MPI_CFLAGS) $(GPU_CFLAGS) $(DNNL_CFLAGS) -MMD -MP
# What libcdl.a needs (cdl.pc lists them for other programs).
LIB_LDLIBS := -L$(OPENBLAS_DIR) -l:libopenblas.so.0 -Wl,-rpath,$(OPENBLAS_DIR) \
              $(DNNL_LDLIBS) -lcjson -lzstd -lpng -ljpeg -lz -lm -fopenmp $(MPI_LDLIBS) \
              $(GPU_LDLIBS)
LDLIBS = $(LIB_LDLIBS)
ifeq ($(SAN),1)
LDLIBS += -fsanitize=address,undefined
endif

LIB_SRC := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort) $(GPU_SRC)
CLI_SRC := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_SUPPORT := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))
EXAMPLE_SRC := $(sort $(wildcard examples/*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(GPU_CU_SRC:%.cu=$(BUILD)/%.o) $(GPU_SIM_SRC:%.cc=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
# GPU=sim and GPU=1: the C files that do not name the GPU backend compile to the same objects as
# in the plain build (same flags but the GPU's defines and include paths, which none of them
# reads), so a GPU build takes those from the plain build's folder (build/rel, build/san under
# SAN=1) and compiles only the files that do: make test's GPU parts cost the simulator, nvcc's
# kernels and cuda/.
ifneq ($(filter 1 sim,$(GPU)),)
GPU_NAMING_SRC := src/backend/backends.c src/api/cdl_doctor.c src/train/dist.c
PLAIN_BUILD := $(subst gpu-,,$(subst gpusim-,,$(BUILD)))
LIB_OBJ := $(patsubst %.c,$(PLAIN_BUILD)/%.o,$(filter-out $(GPU_NAMING_SRC) $(GPU_SRC),$(LIB_SRC))) \
           $(GPU_NAMING_SRC:%.c=$(BUILD)/%.o) $(GPU_SRC:%.c=$(BUILD)/%.o) \
           $(GPU_CU_SRC:%.cu=$(BUILD)/%.o) $(GPU_SIM_SRC:%.cc=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(PLAIN_BUILD)/%.o)
$(PLAIN_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
endif
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
LIB := $(BUILD)/libcdl.a

.PHONY: all deps test unit demo clean bench format
# Keep test objects: deleting them as intermediates would print after the test summary.
.SECONDARY:
# (MPI=1, GPU=1, GPU=sim and DNNL=0 build the binary only: libcdl.a and cdl.pc stay the plain
# build's.)
all: deps $(CDL) $(if $(filter 1,$(MPI))$(filter 1 sim,$(GPU))$(filter 0,$(DNNL)),,libcdl.a cdl.pc)

deps:
	@scripts/deps.sh --quiet

# The public libcdl.a: every library object linked into one relocatable object whose global
# symbols other than cdl_* are made local, so that a program linking it sees only the API
# (internal names such as gemm cannot collide with its own). The unit tests and ./cdl link the
# internal archive $(LIB), which keeps every symbol. cdl.pc says how to link libcdl.a.
libcdl.a: $(LIB_OBJ)
	@[ "$(SAN)" = 1 ] || { \
	  ld -r -o $(BUILD)/libcdl_all.o $(LIB_OBJ) && \
	  nm -g --defined-only $(BUILD)/libcdl_all.o | awk 'NF == 3 && $$3 ~ /^cdl_/ {print $$3}' \
	    > $(BUILD)/libcdl_public.syms && \
	  objcopy --keep-global-symbols=$(BUILD)/libcdl_public.syms $(BUILD)/libcdl_all.o \
	    $(BUILD)/libcdl_public.o && \
	  rm -f $@ && ar rcs $@ $(BUILD)/libcdl_public.o; }

# pkg-config file for programs that use libcdl.a from this checkout:
#   cc prog.c $(pkg-config --cflags --libs ./cdl.pc)
# (libcdl.a calls OpenMP, so a link without -fopenmp fails on GOMP_parallel.)
cdl.pc: Makefile
	@printf '%s\n' 'prefix=$(abspath .)' '' 'Name: cdl' \
	  'Description: cdl deep learning toolkit (static library, API in cdl.h)' 'Version: $(VERSION)' \
	  'Cflags: -I$${prefix}/src/api' \
	  'Libs: $${prefix}/libcdl.a $(LIB_LDLIBS)' > $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CDL): $(CLI_OBJ) $(LIB)
	$(CC) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

# The version and build options that `cdl doctor` and `cdl --version` print, written when they
# change (so cdl_doctor.o is rebuilt only then). The version is VERSION (top) and, in a git
# checkout, the commit (git describe).
GIT_DESCRIBE := $(shell git describe --always --dirty 2>/dev/null)
BUILD_INFO := $(BUILD)/gen/cdl_build_info.h
c_string = "$(subst ",\",$(subst \,\\,$(1)))"
.PHONY: FORCE
$(BUILD_INFO): FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '/* Generated by the Makefile: the build cdl doctor reports. */' \
	  '#define CDL_VERSION $(call c_string,$(VERSION)$(if $(GIT_DESCRIBE), ($(GIT_DESCRIBE))))' \
	  '#define CDL_BUILD_CFLAGS $(call c_string,$(strip $(filter-out -MMD -MP -I$(BUILD)/gen,$(CFLAGS))))' \
	  '#define CDL_BUILD_GPU $(if $(filter 0,$(GPU)),0,1)' '#define CDL_BUILD_MPI $(MPI)' '#define CDL_BUILD_SAN $(SAN)' \
	  '#define CDL_BUILD_DNNL $(DNNL)' \
	  > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/src/api/cdl_doctor.o: $(BUILD_INFO)
$(BUILD)/src/api/cdl_doctor.o: CFLAGS += -I$(BUILD)/gen

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The int8 kernels: their own -m flags, whatever ARCH is (backend/cpu/qgemm.h picks one at run time).
$(addsuffix /src/backend/cpu/qgemm_vnni.o,$(BUILD) $(PLAIN_BUILD)): \
    CFLAGS += -mavx512f -mavx512bw -mavx512vnni
$(foreach b,$(BUILD) $(PLAIN_BUILD),$(b)/src/backend/cpu/qgemm_avx2.o \
    $(b)/src/backend/cpu/qgemm_cols_avx2.o): CFLAGS += -mavx2

# The CLI's objects but main, for unit tests of CLI code (such as the progress bar).
CLI_LIB := $(BUILD)/libcdl_cli.a
$(CLI_LIB): $(filter-out $(BUILD)/src/cli/main.o,$(CLI_OBJ))
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(TEST_SUPPORT_OBJ) $(CLI_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TEST_SUPPORT_OBJ) $(CLI_LIB) $(LIB) $(LDLIBS)

# Examples are built as a program using the library is: cdl.h and cdl.pc's link line against
# the public libcdl.a (under SAN=1, which builds no public library, the sanitized archive).
ifeq ($(SAN),1)
EXAMPLE_LIBS := $(LIB) $(LDLIBS)
EXAMPLE_DEPS := $(LIB) cdl.pc
else
EXAMPLE_LIBS = $$(pkg-config --libs ./cdl.pc)
EXAMPLE_DEPS := libcdl.a cdl.pc
endif
$(BUILD)/examples/%: examples/%.c src/api/cdl.h $(EXAMPLE_DEPS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra $(OPT) $$(pkg-config --cflags ./cdl.pc) -o $@ $< $(EXAMPLE_LIBS)

# The CUDA simulator's tests (cuda/cuda.mk) join them where the CUDA toolkit's headers are, and
# (without SAN) the GPU=1 build and its cuDNN descriptor test where nvcc and cuDNN are.
HAVE_CUDA = $(wildcard $(CUDA_DIR)/include/cuda_runtime_api.h)
HAVE_GPU1 = $(if $(filter 1,$(SAN)),,$(and $(wildcard $(CUDA_DIR)/bin/nvcc),\
              $(wildcard $(CUDA_DIR)/include/cudnn.h)))
unit: deps $(CDL) $(TEST_BIN) libcdl.a cdl.pc $(EXAMPLE_BIN) fuzz-replay \
      $(if $(HAVE_CUDA),sim-build gpusim-tests) $(if $(HAVE_GPU1),gpu1-tests)

# Unit tests, the examples, then (without SAN) the Bats CLI tests; tests/run.sh prints
# "N passed, N failed".
test: unit
	@CDL_BIN=$(abspath $(CDL)) BUILD=$(BUILD) SAN=$(SAN) FUZZ_REPLAY_DIR=$(FUZZ_REPLAY_DIR) \
	  SIM_BUILD=$(if $(HAVE_CUDA),$(SIM_BUILD)) \
	  GPU1_BUILD=$(if $(HAVE_GPU1),$(BUILD:build/%=build/gpu-%)) tests/run.sh

demo: all
	scripts/demo.sh

bench: all
	scripts/bench-cpu.sh

format:
	clang-format -i $$(find src tests/unit tests/fuzz -name '*.[ch]')

# clean keeps build/torch-venv (scripts/torch-venv.sh: a 5 GB download to remake).
clean:
	rm -rf $(filter-out build/torch-venv,$(wildcard build/*)) cdl cdl-mpi cdl-gpu cdl-gpu-mpi cdl-gpusim cdl-gpusim-mpi cdl-nodnnl libcdl.a cdl.pc

include tests/fuzz/fuzz.mk
include cuda/cuda.mk

-include $(shell find build -name '*.d' 2>/dev/null)
