/* The weight-gradient product C = A^T B + beta C (backend/cpu/gemm_tn.h) against OpenBLAS's gemm on
 * the same matrices, within 1e-5 relative: beta 0 and 1, strided rows, every row remainder of the
 * 12-row tiles, partial column tiles (one or both halves), k across blocks of 128 and k = 0;
 * with AVX-512 the same bits as a plain loop adding each element's products in order k = 0, 1,
 * ... with fmaf (the blocks of k keep the order), and the same bits at 1 and 2 threads (OpenBLAS,
 * the path without AVX-512, does not promise that). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_tn.h"
#include "check.h"
#include "util/rng.h"

/* max |got - want| / max |want| after C = A^T B + beta C by gemm_tn and by gemm; with AVX-512,
 * also checks gemm_tn's bits against the in-order fmaf loop. */
static double compare(int m, int n, int k, float beta, Rng *rng)
{
    const int lda = m + 3, ldb = n + 2, ldc = n + 5;
    float *a = malloc(((size_t)k * lda + 1) * sizeof *a),
          *b = malloc(((size_t)k * ldb + 1) * sizeof *b);
    float *want = malloc((size_t)m * ldc * sizeof *want),
          *got = malloc((size_t)m * ldc * sizeof *got),
          *order = malloc((size_t)m * ldc * sizeof *order);
    check_fill_normal(a, (size_t)k * lda, rng);
    check_fill_normal(b, (size_t)k * ldb, rng);
    check_fill_normal(want, (size_t)m * ldc, rng);
    memcpy(got, want, (size_t)m * ldc * sizeof *got);
    memcpy(order, want, (size_t)m * ldc * sizeof *order);
    gemm(1, 0, m, n, k, 1.0f, a, lda, b, ldb, beta, want, ldc);
    gemm_tn(m, n, k, a, lda, b, ldb, beta, got, ldc);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = beta != 0.0f ? order[(size_t)i * ldc + j] : 0.0f;
            for (int kk = 0; kk < k; kk++)
                s = fmaf(a[(size_t)kk * lda + i], b[(size_t)kk * ldb + j], s);
            order[(size_t)i * ldc + j] = s;
        }
    double worst = 0, scale = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++) {
            const size_t at = (size_t)i * ldc + j;
            if (j >= n) { /* past the product's columns: untouched */
                CHECK(got[at] == want[at]);
                continue;
            }
#if defined(__AVX512F__)
            CHECK(got[at] == order[at]);
#endif
            worst = fmax(worst, fabs(got[at] - want[at]));
            scale = fmax(scale, fabs(want[at]));
        }
    free(a);
    free(b);
    free(want);
    free(got);
    free(order);
    return scale > 0 ? worst / scale : worst; /* k = 0, beta = 0: C is all zeros */
}

static void test_against_gemm(void)
{
    static const int sizes[][3] = {{1, 1, 1},      {5, 7, 3},      {12, 32, 8},     {13, 33, 129},
                                   {25, 48, 300},  {24, 17, 256},  {7, 64, 0},      {128, 512, 200},
                                   {63, 128, 131}, {320, 40, 130}, {40, 320, 1000}, {11, 16, 127}};
    Rng rng;
    rng_seed(&rng, 21, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int beta = 0; beta < 2; beta++) {
            const double rel = compare(sizes[s][0], sizes[s][1], sizes[s][2], (float)beta, &rng);
            CHECK_NEAR(rel, 0, 1e-5);
        }
    for (int m = 1; m <= 25; m++) /* every row remainder, whole and partial column tiles */
        for (int n = 15; n <= 34; n += 19) {
            const double rel = compare(m, n, 9, (float)(m % 2), &rng);
            CHECK_NEAR(rel, 0, 1e-5);
        }
}

#if defined(__AVX512F__)
/* 1 and 2 threads split the tiles differently and give the same bits. */
static void test_threads_agree(void)
{
    const int m = 320, n = 200, k = 700;
    Rng rng;
    rng_seed(&rng, 22, 0);
    float *a = malloc((size_t)k * m * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
    float *c1 = malloc((size_t)m * n * sizeof *c1), *c2 = malloc((size_t)m * n * sizeof *c2);
    check_fill_normal(a, (size_t)k * m, &rng);
    check_fill_normal(b, (size_t)k * n, &rng);
    check_fill_normal(c1, (size_t)m * n, &rng);
    memcpy(c2, c1, (size_t)m * n * sizeof *c1);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    gemm_tn(m, n, k, a, m, b, n, 1.0f, c1, n);
    omp_set_num_threads(2);
    gemm_tn(m, n, k, a, m, b, n, 1.0f, c2, n);
    omp_set_num_threads(threads);
    CHECK(!memcmp(c1, c2, (size_t)m * n * sizeof *c1));
    free(a);
    free(b);
    free(c1);
    free(c2);
}
#endif

int main(void)
{
    test_against_gemm();
#if defined(__AVX512F__)
    test_threads_agree();
#endif
    return check_report("test_gemm_tn");
}
