/* The product against a pre-packed operand (ops/gemm_packed.h) against OpenBLAS's gemm on the
 * same matrices, within 1e-5 relative: both operand orders, beta 0 and 1, strided rows, every
 * row remainder of the kernel and partial panels; and the same bits at 1 and 2 threads. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/gemm.h"
#include "ops/gemm_packed.h"
#include "util/rng.h"

static void fill(float *x, size_t n, Rng *rng)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_normal(rng);
}

/* max |got - want| / max |want| of C after C = A op(B) + beta C both ways. */
static double compare(int m, int n, int k, int trans_b, float beta, Rng *rng)
{
    const int lda = k + 3, ldb = (trans_b ? k : n) + 2, ldc = n + 5;
    const size_t b_rows = trans_b ? (size_t)n : (size_t)k;
    float *a = malloc((size_t)m * lda * sizeof *a), *b = malloc(b_rows * ldb * sizeof *b);
    float *want = malloc((size_t)m * ldc * sizeof *want),
          *got = malloc((size_t)m * ldc * sizeof *got);
    float *packed = malloc(gemm_packed_floats(k, n) * sizeof *packed);
    fill(a, (size_t)m * lda, rng);
    fill(b, b_rows * ldb, rng);
    fill(want, (size_t)m * ldc, rng);
    memcpy(got, want, (size_t)m * ldc * sizeof *got);
    gemm(0, trans_b, m, n, k, 1.0f, a, lda, b, ldb, beta, want, ldc);
    gemm_pack(trans_b, k, n, b, ldb, packed);
    gemm_packed(m, n, k, a, lda, packed, beta, got, ldc);
    double worst = 0, scale = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++) {
            const size_t at = (size_t)i * ldc + j;
            if (j >= n) { /* past the product's columns: untouched */
                CHECK(got[at] == want[at]);
                continue;
            }
            worst = fmax(worst, fabs(got[at] - want[at]));
            scale = fmax(scale, fabs(want[at]));
        }
    free(a);
    free(b);
    free(want);
    free(got);
    free(packed);
    return scale > 0 ? worst / scale : worst; /* k = 0, beta = 0: C is all zeros */
}

static void test_against_gemm(void)
{
    static const int sizes[][3] = {{1, 1, 1},   {5, 7, 3},       {6, 16, 8},      {7, 17, 33},
                                   {12, 31, 5}, {32, 1024, 256}, {32, 256, 1024}, {13, 48, 0}};
    Rng rng;
    rng_seed(&rng, 11, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int trans_b = 0; trans_b < 2; trans_b++)
            for (int beta = 0; beta < 2; beta++) {
                const double rel =
                    compare(sizes[s][0], sizes[s][1], sizes[s][2], trans_b, (float)beta, &rng);
                CHECK_NEAR(rel, 0, 1e-5);
            }
}

/* 1 and 2 threads split the panels differently and give the same bits. */
static void test_threads_agree(void)
{
    const int m = 32, n = 1024, k = 256;
    Rng rng;
    rng_seed(&rng, 12, 0);
    float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
    float *c1 = malloc((size_t)m * n * sizeof *c1), *c2 = malloc((size_t)m * n * sizeof *c2);
    float *packed = malloc(gemm_packed_floats(k, n) * sizeof *packed);
    fill(a, (size_t)m * k, &rng);
    fill(b, (size_t)k * n, &rng);
    gemm_pack(0, k, n, b, n, packed);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    gemm_packed(m, n, k, a, k, packed, 0.0f, c1, n);
    omp_set_num_threads(2);
    gemm_packed(m, n, k, a, k, packed, 0.0f, c2, n);
    omp_set_num_threads(threads);
    CHECK(!memcmp(c1, c2, (size_t)m * n * sizeof *c1));
    free(a);
    free(b);
    free(c1);
    free(c2);
    free(packed);
}

int main(void)
{
    test_against_gemm();
    test_threads_agree();
    return check_report("test_gemm_packed");
}
