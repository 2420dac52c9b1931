/* cdl_set_threads flushes subnormal floats to zero (backend/cpu/subnormals.c) on the calling
 * thread, on OpenMP's threads and on those a larger team creates later; normal floats are
 * untouched. */
#include <float.h>
#include <omp.h>

#include "api/cdl.h"
#include "check.h"

/* In every thread of a team of n: a product below FLT_MIN gives 0 (FTZ) and a subnormal
 * operand counts as 0 (DAZ), while FLT_MIN itself stays. Returns the threads that saw that. */
static int threads_flushing(int n)
{
    volatile float tiny = FLT_MIN, half = 0.5f, one = 1.0f;
    int flushing = 0;
#pragma omp parallel num_threads(n) reduction(+ : flushing)
    {
        volatile float sub = tiny * half, operand = 0x1p-130f; /* 2^-127: 0 under FTZ */
        flushing += sub == 0.0f && operand * one == 0.0f && tiny * one == FLT_MIN;
    }
    return flushing;
}

int main(void)
{
    CHECK(threads_flushing(2) == 0); /* C's default: subnormals kept */
    CHECK(cdl_set_threads(2) == 2);
    CHECK(threads_flushing(2) == 2);
    CHECK(threads_flushing(4) == 4); /* threads made after the call inherit it */
    return check_report("test_subnormals");
}
