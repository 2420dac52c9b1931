# The CUDA simulator's build and the nvcc compile check (cuda/README.md), included by the Makefile.
# It defines targets only: `make`, `make test` and every build directory of the Makefile stay as
# they are.
#   make GPU=sim sim-test [SAN=1]
#     builds the simulator (cuda/sim/*.cc), the kernels (cuda/kernels/*.cu, compiled as C++17 with
#     CDL_GPU_SIM) and tests/unit/test_cuda_sim_*.cc with $(CXX) into build/gpusim-rel
#     (build/gpusim-san with ASan+UBSan under SAN=1) and runs every test, one line each
#     ("ok   NAME: its last line", or FAIL with its output); exit 1 if one fails.
#   make nvcc-check
#     compiles the same kernels with nvcc for sm_80, sm_90 and PTX, register spills and every
#     warning as errors, into build/nvcc (objects only: nothing runs without a GPU).
SIM_BUILD := build/gpusim-$(if $(filter 1,$(SAN)),san,rel)
# OPT is the Makefile's: -O3 $(ARCH) -g, or the sanitizers' flags under SAN=1.
SIM_CXXFLAGS = -std=c++17 -D_GNU_SOURCE -DCDL_GPU_SIM -Wall -Wextra $(OPT) -Icuda -Isrc -Itests/unit \
               -I$(CUDA_DIR)/include $(if $(BLAS_INC),-I$(BLAS_INC)) -MMD -MP
SIM_SAN_LDFLAGS := -fsanitize=address,undefined
SIM_LDLIBS := -L$(OPENBLAS_DIR) -l:libopenblas.so.0 -Wl,-rpath,$(OPENBLAS_DIR) -lm \
              $(if $(filter 1,$(SAN)),$(SIM_SAN_LDFLAGS))

# (nccl_shim.cc, NCCL over MPI, only in a GPU=sim build with MPI=1: Makefile's GPU_SIM_SRC)
SIM_SRC := $(filter-out cuda/sim/nccl_shim.cc,$(sort $(wildcard cuda/sim/*.cc)))
SIM_KERNEL_SRC := $(sort $(wildcard cuda/kernels/*.cu))
SIM_TEST_SRC := $(sort $(wildcard tests/unit/test_cuda_sim_*.cc))
# The tests' CHECK macros (C, with the RNG they fill from).
SIM_TEST_SUPPORT := tests/unit/check.c src/util/rng.c

SIM_OBJ := $(SIM_SRC:%.cc=$(SIM_BUILD)/%.o) $(SIM_KERNEL_SRC:%.cu=$(SIM_BUILD)/%.o)
SIM_TEST_SUPPORT_OBJ := $(SIM_TEST_SUPPORT:%.c=$(SIM_BUILD)/%.o)
SIM_TEST_BIN := $(SIM_TEST_SRC:tests/unit/%.cc=$(SIM_BUILD)/tests/%)
SIM_LIB := $(SIM_BUILD)/libcdl_cuda_sim.a

.PHONY: sim-build sim-test nvcc-check gpusim-tests gpusim-targets gpu1-tests gpu1-targets
# make test's GPU=sim part (where the CUDA toolkit is): ./cdl-gpusim and the GPU's unit tests built
# against the simulator, in their own build directory (a make of its own: GPU=sim changes BUILD).
# (after the plain build's library and CLI objects, which the simulator's build links: Makefile)
gpusim-tests: $(LIB) $(CLI_OBJ)
	@$(MAKE) --no-print-directory GPU=sim SAN=$(SAN) gpusim-targets
gpusim-targets: $(CDL) $(BUILD)/tests/test_backend_ops $(BUILD)/tests/test_gpu_forward_at \
                $(BUILD)/tests/test_batch_staging $(BUILD)/tests/test_gpu_step_syncs \
                $(BUILD)/tests/test_net_storage $(BUILD)/tests/test_net_rows \
                $(BUILD)/tests/test_net_channels_last

# make test's GPU=1 part (where nvcc and cuDNN are; Makefile's HAVE_GPU1): ./cdl-gpu compiled and
# linked, the kernels by nvcc for sm_80, sm_90 and PTX (a register spill an error), and
# test_cudnn_descriptors, which runs against the real libcudnn without a device.
gpu1-tests: $(LIB) $(CLI_OBJ)
	@$(MAKE) --no-print-directory GPU=1 gpu1-targets
gpu1-targets: $(CDL) $(BUILD)/tests/test_cudnn_descriptors

sim-build: $(SIM_TEST_BIN)

sim-test: sim-build
	@mkdir -p $(SIM_BUILD)/logs; failed=0; \
	for t in $(SIM_TEST_BIN); do \
	  name=$${t##*/}; log=$(SIM_BUILD)/logs/$$name.log; \
	  if $$t > $$log 2>&1; then echo "ok   $$name: $$(tail -n 1 $$log)"; \
	  else failed=$$((failed + 1)); echo "FAIL $$name:"; sed 's/^/    /' $$log | tail -n 40; fi; \
	done; [ $$failed -eq 0 ]

# The simulator's C++ and the kernels as C++, in its own build and in a GPU=sim build of cdl
# (whose folder differs with DNNL=0: build/nodnnl-gpusim-rel).
$(addsuffix /%.o,$(sort $(SIM_BUILD) $(if $(filter sim,$(GPU)),$(BUILD)))): %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(SIM_CXXFLAGS) -c $< -o $@

# The NCCL shim calls MPI: mpicc's flags (MPI=1), without Open MPI's C++ bindings.
$(BUILD)/cuda/sim/nccl_shim.o: SIM_CXXFLAGS += $(MPI_CFLAGS) -DOMPI_SKIP_MPICXX=1

$(addsuffix /%.o,$(sort $(SIM_BUILD) $(if $(filter sim,$(GPU)),$(BUILD)))): %.cu
	@mkdir -p $(dir $@)
	$(CXX) $(SIM_CXXFLAGS) -x c++ -c $< -o $@

$(SIM_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(SIM_LIB): $(SIM_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(SIM_BUILD)/tests/%: $(SIM_BUILD)/tests/unit/%.o $(SIM_TEST_SUPPORT_OBJ) $(SIM_LIB)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $^ $(SIM_LDLIBS)

NVCC ?= $(CUDA_DIR)/bin/nvcc
NVCC_BUILD := build/nvcc
NVCC_FLAGS := -std=c++17 -O3 -Icuda -Isrc -gencode arch=compute_80,code=sm_80 \
              -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
              -Xptxas -warn-spills -Werror all-warnings
NVCC_OBJ := $(SIM_KERNEL_SRC:%.cu=$(NVCC_BUILD)/%.o)

nvcc-check: $(NVCC_OBJ)

# GPU=1 builds the library's kernels with the same flags.
ifeq ($(GPU),1)
$(BUILD)/%.o: %.cu $(wildcard cuda/*.h cuda/kernels/*.h cuda/kernels/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -Isrc -c $< -o $@
endif

$(NVCC_BUILD)/%.o: %.cu $(wildcard cuda/*.h cuda/kernels/*.h cuda/kernels/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@
