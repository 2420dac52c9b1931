/* Matrix products against a pre-packed right operand: a register-blocked kernel of up to
 * ROWS x GEMM_PACKED_PANEL outputs (AVX2 + FMA where the compiler targets them, else plain C
 * loops), the panels split over the OpenMP threads. */
#include "ops/gemm_packed.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GEMM_PACKED_AVX2 1
#endif

enum {
    PANEL = GEMM_PACKED_PANEL,
    ROWS = 6,   /* rows of A per kernel call: 12 accumulators of 8 floats */
    CHUNK = 96, /* rows of A per block of a product with many rows */
};

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define GEMM_PACKED_PARALLEL_MIN (1 << 20)

size_t gemm_packed_floats(int k, int n)
{
    const size_t panels = ((size_t)n + PANEL - 1) / PANEL;
    return panels * PANEL * (size_t)k;
}

/* Rows k0..k0+k of panel p of a packed operand of k_total rows. */
static void pack_panel(int trans_b, int k, int n, const float *b, int ldb, int k0, int k_total,
                       int p, float *packed)
{
    float *dst = packed + ((size_t)p * k_total + (size_t)k0) * PANEL;
    const int j0 = p * PANEL, cols = n - j0 < PANEL ? n - j0 : PANEL;
    for (int kk = 0; kk < k; kk++) {
        float *row = dst + (size_t)kk * PANEL;
        for (int j = 0; j < cols; j++)
            row[j] = trans_b ? b[(size_t)(j0 + j) * ldb + kk] : b[(size_t)kk * ldb + j0 + j];
        for (int j = cols; j < PANEL; j++)
            row[j] = 0.0f;
    }
}

void gemm_pack(int trans_b, int k, int n, const float *b, int ldb, float *packed)
{
    const int panels = (n + PANEL - 1) / PANEL;
#pragma omp parallel for schedule(static) if ((size_t)k * n >= GEMM_PACKED_PARALLEL_MIN / 16)
    for (int p = 0; p < panels; p++)
        pack_panel(trans_b, k, n, b, ldb, 0, k, p, packed);
}

void gemm_pack_rows(int trans_b, int k, int n, const float *b, int ldb, int k0, int k_total,
                    float *packed)
{
    for (int p = 0; p < (n + PANEL - 1) / PANEL; p++)
        pack_panel(trans_b, k, n, b, ldb, k0, k_total, p, packed);
}

/* c[r][0..cols) = sums[r][0..cols) + beta c[r][0..cols) for the rows r < rows of sums
 * [rows][PANEL]. */
static void store_block(int rows, int cols, const float *sums, float beta, float *c, int ldc)
{
    for (int r = 0; r < rows; r++) {
        float *cr = c + (size_t)r * ldc;
        for (int j = 0; j < cols; j++)
            cr[j] = beta != 0.0f ? sums[r * PANEL + j] + cr[j] : sums[r * PANEL + j];
    }
}

#ifdef GEMM_PACKED_AVX2
/* Row r of C's block: c[0..cols) = lo|hi + beta c. */
static inline __attribute__((always_inline)) void store_row(int cols, __m256 lo, __m256 hi,
                                                            float beta, float *c)
{
    if (cols == PANEL) {
        if (beta != 0.0f) {
            lo = _mm256_add_ps(lo, _mm256_loadu_ps(c));
            hi = _mm256_add_ps(hi, _mm256_loadu_ps(c + 8));
        }
        _mm256_storeu_ps(c, lo);
        _mm256_storeu_ps(c + 8, hi);
        return;
    }
    float sums[PANEL];
    _mm256_storeu_ps(sums, lo);
    _mm256_storeu_ps(sums + 8, hi);
    store_block(1, cols, sums, beta, c, 0);
}

/* The rows x PANEL block of C at c from rows of A at a and one packed panel bp [k][PANEL]; rows
 * is a constant at each call. The accumulators are named variables, not an array: gcc kept an
 * array of them on the stack for rows < ROWS and stored every one on every kk (a third of the
 * speed). */
static inline __attribute__((always_inline)) void kernel(int rows, int cols, int k, const float *a,
                                                         int lda, const float *bp, float beta,
                                                         float *c, int ldc)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    /* beta 1 reads the block of C at the end: fetch its rows while the products run (the rows
     * are ldc apart, which the hardware prefetcher does not follow; without this a tall C costs
     * half again). */
    for (int r = 0; beta != 0.0f && r < rows; r++) {
        _mm_prefetch((const char *)(c + (size_t)r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + (size_t)r * ldc + PANEL - 1), _MM_HINT_T0);
    }
#define ROW_FMA(r)                                                                                 \
    if (rows > r) {                                                                                \
        const __m256 av = _mm256_broadcast_ss(a + (size_t)r * lda + kk);                           \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                                \
        c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                                \
    }
    for (int kk = 0; kk < k; kk++) {
        const __m256 b0 = _mm256_loadu_ps(bp + (size_t)kk * PANEL);
        const __m256 b1 = _mm256_loadu_ps(bp + (size_t)kk * PANEL + 8);
        ROW_FMA(0)
        ROW_FMA(1)
        ROW_FMA(2)
        ROW_FMA(3)
        ROW_FMA(4)
        ROW_FMA(5)
    }
#undef ROW_FMA
#define ROW_STORE(r)                                                                               \
    if (rows > r)                                                                                  \
        store_row(cols, c##r##0, c##r##1, beta, c + (size_t)r * ldc);
    ROW_STORE(0)
    ROW_STORE(1)
    ROW_STORE(2)
    ROW_STORE(3)
    ROW_STORE(4)
    ROW_STORE(5)
#undef ROW_STORE
}
#else
static inline void kernel(int rows, int cols, int k, const float *a, int lda, const float *bp,
                          float beta, float *c, int ldc)
{
    float sums[ROWS][PANEL] = {{0}};
    for (int kk = 0; kk < k; kk++)
        for (int r = 0; r < rows; r++) {
            const float av = a[(size_t)r * lda + kk];
            for (int j = 0; j < PANEL; j++)
                sums[r][j] += av * bp[(size_t)kk * PANEL + j];
        }
    store_block(rows, cols, &sums[0][0], beta, c, ldc);
}
#endif

/* One panel's columns of C for every row of A. */
static void panel_product(int m, int cols, int k, const float *a, int lda, const float *bp,
                          float beta, float *c, int ldc)
{
    int i = 0;
    for (; i + ROWS <= m; i += ROWS)
        kernel(ROWS, cols, k, a + (size_t)i * lda, lda, bp, beta, c + (size_t)i * ldc, ldc);
    const float *ai = a + (size_t)i * lda;
    float *ci = c + (size_t)i * ldc;
    switch (m - i) {
    case 5:
        kernel(5, cols, k, ai, lda, bp, beta, ci, ldc);
        break;
    case 4:
        kernel(4, cols, k, ai, lda, bp, beta, ci, ldc);
        break;
    case 3:
        kernel(3, cols, k, ai, lda, bp, beta, ci, ldc);
        break;
    case 2:
        kernel(2, cols, k, ai, lda, bp, beta, ci, ldc);
        break;
    case 1:
        kernel(1, cols, k, ai, lda, bp, beta, ci, ldc);
        break;
    default:
        break;
    }
}

void gemm_packed_panels(int m, int n, int k, const float *a, int lda, const float *packed, int p0,
                        int p1, float beta, float *c, int ldc)
{
    for (int p = p0; p < p1; p++) {
        const int j0 = p * PANEL, cols = n - j0 < PANEL ? n - j0 : PANEL;
        panel_product(m, cols, k, a, lda, packed + (size_t)p * PANEL * k, beta, c + j0, ldc);
    }
}

void gemm_packed(int m, int n, int k, const float *a, int lda, const float *packed, float beta,
                 float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    const int panels = (n + PANEL - 1) / PANEL;
    /* Many rows: blocks of CHUNK rows, each against every panel, so that a block of A stays in
     * cache while the panels pass (one panel against all of a tall A streams A once a panel). */
    const int chunk = m > CHUNK ? CHUNK : m, chunks = (m + chunk - 1) / chunk;
    const double work = (double)m * n * k;
#pragma omp parallel for schedule(static) if (work >= GEMM_PACKED_PARALLEL_MIN)
    for (int q = 0; q < chunks * panels; q++) {
        const int i0 = q / panels * chunk, p = q % panels;
        const int rows = m - i0 < chunk ? m - i0 : chunk;
        gemm_packed_panels(rows, n, k, a + (size_t)i0 * lda, lda, packed, p, p + 1, beta,
                           c + (size_t)i0 * ldc, ldc);
    }
}
