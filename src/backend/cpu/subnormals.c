/* Subnormal floats as zeros in cdl's arithmetic (FTZ and DAZ), as TensorFlow runs its CPU
 * kernels and as torch.set_flush_denormal(True) offers. On Intel's cores an operation with a
 * subnormal input or result takes a microcode assist costing on the order of a hundred cycles:
 * in gpt_tiny's first steps the tied output projection gives probabilities near e^-86 and
 * gradients below 2^-126, and its backward ran at 3 GFLOP/s, 164 ms of a 405 ms step at 1
 * thread on Emerald Rapids (family 6 model 207), against 4.4 ms flushed. Values below 2^-126
 * (1.2e-38) become 0, far under any tolerance cdl's results are compared at. */
#include "backend/cpu/subnormals.h"

#if defined(__SSE__)
#include <immintrin.h>

enum { MXCSR_DAZ = 1 << 6, MXCSR_FTZ = 1 << 15 };

void subnormals_flush(void)
{
    _mm_setcsr(_mm_getcsr() | MXCSR_DAZ | MXCSR_FTZ);
#pragma omp parallel
    _mm_setcsr(_mm_getcsr() | MXCSR_DAZ | MXCSR_FTZ);
}
#else
void subnormals_flush(void)
{
}
#endif
