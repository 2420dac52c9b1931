/* The product against a pre-packed operand (backend/cpu/gemm_packed.h) against OpenBLAS's gemm on
 * the same matrices, within 1e-5 relative: both operand orders, beta 0 and 1, strided rows, every
 * row remainder of the kernels (6 rows AVX2, 12 AVX-512) and partial panels, alone or second of
 * a pair of panels (the AVX-512 kernel's two panels), row blocks with a short last one; and the
 * same bits at 1 and 2 threads; a stacked operand packed part by part (gemm_pack_rows) and products
 * of panel ranges (gemm_packed_panels) and of two panels apart (gemm_packed_two_panels) give
 * gemm_pack's and gemm_packed's bits. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_packed.h"
#include "check.h"
#include "util/rng.h"

/* max |got - want| / max |want| of C after C = A op(B) + beta C both ways. */
static double compare(int m, int n, int k, int trans_b, float beta, Rng *rng)
{
    const int lda = k + 3, ldb = (trans_b ? k : n) + 2, ldc = n + 5;
    const size_t b_rows = trans_b ? (size_t)n : (size_t)k;
    float *a = malloc((size_t)m * lda * sizeof *a), *b = malloc(b_rows * ldb * sizeof *b);
    float *want = malloc((size_t)m * ldc * sizeof *want),
          *got = malloc((size_t)m * ldc * sizeof *got);
    float *packed = malloc(gemm_packed_floats(k, n) * sizeof *packed);
    check_fill_normal(a, (size_t)m * lda, rng);
    check_fill_normal(b, b_rows * ldb, rng);
    check_fill_normal(want, (size_t)m * ldc, rng);
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
    static const int sizes[][3] = {{1, 1, 1},       {5, 7, 3},   {6, 16, 8},
                                   {7, 17, 33},     {12, 31, 5}, {32, 1024, 256},
                                   {32, 256, 1024}, {13, 48, 0}, {301, 40, 70}};
    Rng rng;
    rng_seed(&rng, 11, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int trans_b = 0; trans_b < 2; trans_b++)
            for (int beta = 0; beta < 2; beta++) {
                const double rel =
                    compare(sizes[s][0], sizes[s][1], sizes[s][2], trans_b, (float)beta, &rng);
                CHECK_NEAR(rel, 0, 1e-5);
            }
    /* Every row count to two kernels and a remainder, against one panel, a pair, a pair and a
     * partial one, a pair with a partial second. */
    static const int widths[] = {16, 9, 32, 40, 27, 64};
    for (int m = 1; m <= 25; m++)
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
            for (int beta = 0; beta < 2; beta++) {
                const double rel = compare(m, widths[w], 9, (m + beta) % 2, (float)beta, &rng);
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
    check_fill_normal(a, (size_t)m * k, &rng);
    check_fill_normal(b, (size_t)k * n, &rng);
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

/* [B1; B2] packed as two parts, then its panels one range at a time, against gemm_pack of the
 * whole and gemm_packed: the same bits, the columns outside the ranges untouched. */
static void test_parts_and_panel_ranges(void)
{
    const int m = 9, n = 37, k1 = 5, k2 = 11, k = k1 + k2, ldc = n + 3;
    Rng rng;
    rng_seed(&rng, 13, 0);
    float *a = malloc((size_t)m * k * sizeof *a), *bt = malloc((size_t)n * k * sizeof *bt);
    float *b1 = malloc((size_t)n * k1 * sizeof *b1), *b2 = malloc((size_t)n * k2 * sizeof *b2);
    float *whole = malloc(gemm_packed_floats(k, n) * sizeof *whole);
    float *parts = malloc(gemm_packed_floats(k, n) * sizeof *parts);
    float *c1 = malloc((size_t)m * ldc * sizeof *c1), *c2 = malloc((size_t)m * ldc * sizeof *c2);
    check_fill_normal(a, (size_t)m * k, &rng);
    check_fill_normal(bt, (size_t)n * k, &rng); /* B^T [n][k] = [B1^T | B2^T] */
    for (int j = 0; j < n; j++) {
        memcpy(b1 + (size_t)j * k1, bt + (size_t)j * k, (size_t)k1 * sizeof *b1);
        memcpy(b2 + (size_t)j * k2, bt + (size_t)j * k + k1, (size_t)k2 * sizeof *b2);
    }
    gemm_pack(1, k, n, bt, k, whole);
    gemm_pack_rows(1, k1, n, b1, k1, 0, k, parts);
    gemm_pack_rows(1, k2, n, b2, k2, k1, k, parts);
    CHECK(!memcmp(whole, parts, gemm_packed_floats(k, n) * sizeof *whole));
    check_fill_normal(c1, (size_t)m * ldc, &rng);
    memcpy(c2, c1, (size_t)m * ldc * sizeof *c1);
    gemm_packed(m, n, k, a, k, whole, 1.0f, c1, ldc);
    gemm_packed_panels(m, n, k, a, k, parts, 1, 3, 1.0f, c2, ldc); /* panels 1, 2 */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++)
            if (j >= 16 && j < n) /* panels 1 and 2: the same bits */
                CHECK(c1[(size_t)i * ldc + j] == c2[(size_t)i * ldc + j]);
            else if (j < 16) /* panel 0: untouched */
                CHECK(c1[(size_t)i * ldc + j] != c2[(size_t)i * ldc + j]);
    gemm_packed_panels(m, n, k, a, k, parts, 0, 1, 1.0f, c2, ldc);
    CHECK(!memcmp(c1, c2, (size_t)m * ldc * sizeof *c1));
    free(a);
    free(bt);
    free(b1);
    free(b2);
    free(whole);
    free(parts);
    free(c1);
    free(c2);
}

/* gemm_packed_two_panels of panels 2 and 0 of one packed operand into two separate outputs: the
 * same bits as those panels' columns of gemm_packed, for every row remainder. */
static void test_two_panels(void)
{
    const int n = 48, k = 19, lda = k + 1, ldc = GEMM_PACKED_PANEL + 3;
    Rng rng;
    rng_seed(&rng, 14, 0);
    for (int m = 1; m <= 29; m += 4) {
        float *a = malloc((size_t)m * lda * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
        float *packed = malloc(gemm_packed_floats(k, n) * sizeof *packed);
        float *whole = malloc((size_t)m * n * sizeof *whole);
        float *c0 = malloc((size_t)m * ldc * sizeof *c0),
              *c1 = malloc((size_t)m * ldc * sizeof *c1);
        check_fill_normal(a, (size_t)m * lda, &rng);
        check_fill_normal(b, (size_t)k * n, &rng);
        check_fill_normal(whole, (size_t)m * n, &rng);
        check_fill_normal(c0, (size_t)m * ldc, &rng);
        memcpy(c1, c0, (size_t)m * ldc * sizeof *c1);
        for (int i = 0; i < m; i++) /* beta 1: the outputs start as whole's columns */
            for (int j = 0; j < GEMM_PACKED_PANEL; j++) {
                c0[(size_t)i * ldc + j] = whole[(size_t)i * n + 32 + j];
                c1[(size_t)i * ldc + j] = whole[(size_t)i * n + j];
            }
        gemm_pack(0, k, n, b, n, packed);
        gemm_packed(m, n, k, a, lda, packed, 1.0f, whole, n);
        const size_t panel = (size_t)GEMM_PACKED_PANEL * k;
        gemm_packed_two_panels(m, k, a, lda, packed + 2 * panel, packed, 1.0f, c0, c1, ldc);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < GEMM_PACKED_PANEL; j++) {
                CHECK(c0[(size_t)i * ldc + j] == whole[(size_t)i * n + 32 + j]);
                CHECK(c1[(size_t)i * ldc + j] == whole[(size_t)i * n + j]);
            }
        free(a);
        free(b);
        free(packed);
        free(whole);
        free(c0);
        free(c1);
    }
}

int main(void)
{
    test_against_gemm();
    test_threads_agree();
    test_parts_and_panel_ranges();
    test_two_panels();
    return check_report("test_gemm_packed");
}
