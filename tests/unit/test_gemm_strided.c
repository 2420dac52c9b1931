/* The strided-operand product (backend/cpu/gemm_strided.h) against a double-precision reference: A
 * read as itself and as a transpose, beta 0 and 1, alpha 1 and not, every row remainder of the
 * tiles (8 and 16 rows with AVX-512, 6 and 12 with AVX2) and every column remainder of their
 * columns (32 and 16, or 16 and 8: one or two vectors, the second partial), k from 0 to past the
 * attention head sizes; within the float bound of a k-term sum, (k + 2) * 2^-24 * (|alpha|
 * sum_i |a_ri b_ij| + |beta c_ij|); C's untouched columns stay as they were; and the transpose
 * exact, for rows and columns around its 16 x 16 (AVX2: 8 x 8) blocks. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm_strided.h"
#include "check.h"
#include "util/rng.h"

/* 1 when every element of C = alpha A B + beta C is within the bound, A [m][k] stored as a
 * [m][lda] matrix or (transposed) as a [k][lda] one, and C's padding columns are unchanged. */
static int matches(int m, int n, int k, int transposed, float alpha, float beta, Rng *rng)
{
    const int lda = (transposed ? m : k) + 3, ldb = n + 2, ldc = n + 5;
    const size_t a_rows = transposed ? (size_t)k : (size_t)m;
    float *a = malloc((a_rows * lda + 1) * sizeof *a),
          *b = malloc(((size_t)k * ldb + 1) * sizeof *b);
    float *c = malloc((size_t)m * ldc * sizeof *c), *old = malloc((size_t)m * ldc * sizeof *old);
    check_fill_normal(a, a_rows * lda, rng);
    check_fill_normal(b, (size_t)k * ldb, rng);
    check_fill_normal(c, (size_t)m * ldc, rng);
    memcpy(old, c, (size_t)m * ldc * sizeof *c);
    const size_t a_row = transposed ? 1 : (size_t)lda, a_col = transposed ? (size_t)lda : 1;
    gemm_strided(m, n, k, alpha, a, a_row, a_col, b, (size_t)ldb, beta, c, (size_t)ldc);
    int ok = 1;
    for (int r = 0; r < m; r++) {
        for (int j = 0; j < n; j++) {
            double sum = 0, magnitude = 0;
            for (int i = 0; i < k; i++) {
                const double p = (double)a[r * a_row + i * a_col] * b[(size_t)i * ldb + j];
                sum += p;
                magnitude += fabs(p);
            }
            const double was = old[(size_t)r * ldc + j];
            const double want = alpha * sum + beta * was;
            const double bound =
                (k + 2) * (FLT_EPSILON / 2) * (fabs(alpha) * magnitude + fabs(beta * was)) +
                FLT_MIN;
            ok &= fabs(c[(size_t)r * ldc + j] - want) <= bound;
        }
        for (int j = n; j < ldc; j++)
            ok &= c[(size_t)r * ldc + j] == old[(size_t)r * ldc + j];
    }
    if (!ok)
        fprintf(stderr, "FAIL m=%d n=%d k=%d transposed=%d alpha=%g beta=%g\n", m, n, k, transposed,
                alpha, beta);
    free(a), free(b), free(c), free(old);
    return ok;
}

/* 1 when gemm_strided_transpose of a rows x cols matrix (row stride cols + 3) into a cols x rows
 * one (row stride rows + 2) is exact and leaves the padding alone. */
static int transposes(int rows, int cols, Rng *rng)
{
    const int ldx = cols + 3, ldt = rows + 2;
    float *x = malloc((size_t)rows * ldx * sizeof *x),
          *tr = malloc((size_t)cols * ldt * sizeof *tr);
    check_fill_normal(x, (size_t)rows * ldx, rng);
    for (size_t i = 0; i < (size_t)cols * ldt; i++)
        tr[i] = -1.0f;
    gemm_strided_transpose(rows, cols, x, (size_t)ldx, tr, (size_t)ldt);
    int ok = 1;
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < ldt; i++)
            ok &= tr[(size_t)j * ldt + i] == (i < rows ? x[(size_t)i * ldx + j] : -1.0f);
    if (!ok)
        fprintf(stderr, "FAIL transpose %d x %d\n", rows, cols);
    free(x), free(tr);
    return ok;
}

int main(void)
{
    Rng rng;
    rng_seed(&rng, 5, 0);
    const int ks[] = {0, 1, 16, 32, 33, 128};
    for (int m = 1; m <= 17; m++)
        for (int n = 1; n <= 65; n += (n < 34 ? 1 : 31))
            for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++)
                for (int transposed = 0; transposed <= 1; transposed++)
                    for (int beta = 0; beta <= 1; beta++)
                        CHECK(matches(m, n, ks[q], transposed, beta ? 0.17677669f : 1.0f,
                                      (float)beta, &rng));
    for (int rows = 1; rows <= 50; rows += (rows < 34 ? 1 : 7))
        for (int cols = 1; cols <= 50; cols += (cols < 34 ? 1 : 7))
            CHECK(transposes(rows, cols, &rng));
    CHECK(transposes(128, 32, &rng));
    return check_report("test_gemm_strided");
}
