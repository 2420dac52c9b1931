/* What the CUDA simulator's tests (test_cuda_sim_*.cc, C++ built with CDL_GPU_SIM) share: the C
 * CHECK macros of check.h, and checks of CUDA and cuBLAS statuses that name the status. */
#ifndef CDL_CUDA_SIM_TEST_H
#define CDL_CUDA_SIM_TEST_H

#include <math.h> /* before check.h's extern "C" includes of them */
#include <stdio.h>
#include <string.h>

extern "C" {
#include "check.h"
}

#include "launch.h"

#define CHECK_STATUS(call, want)                                                                   \
    do {                                                                                           \
        const cudaError_t check_got_ = (call), check_want_ = (want);                               \
        check_count++;                                                                             \
        if (check_got_ != check_want_) {                                                           \
            check_failures++;                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s = %s, expected %s\n", __FILE__, __LINE__, #call,       \
                    cudaGetErrorName(check_got_), cudaGetErrorName(check_want_));                  \
        }                                                                                          \
    } while (0)

#define CHECK_CUDA(call) CHECK_STATUS(call, cudaSuccess)

/* The float32 unit roundoff, and bf16's (8 significant bits): rounding to bf16 moves a value by
 * at most 2^-8 of itself. */
#define U32 0x1p-24
#define U_BF16 0x1p-8

#endif
