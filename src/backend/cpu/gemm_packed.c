/* Matrix products against a pre-packed right operand: a register-blocked kernel (AVX-512 where
 * the compiler targets it: up to ROWS x 2 panels of outputs, one zmm per row of a panel; else
 * AVX2 + FMA: ROWS x 1 panel in two ymm; else plain C loops), the panels split over the OpenMP
 * threads. */
#include "backend/cpu/gemm_packed.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define GEMM_PACKED_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GEMM_PACKED_AVX2 1
#endif

#ifdef GEMM_PACKED_AVX512
enum {
    PANEL = GEMM_PACKED_PANEL,
    ROWS = 12,  /* rows of A per kernel call: 24 accumulators of 16 floats (2 panels) */
    CHUNK = 96, /* rows of A per block of a product with many rows */
    GROUP = 2,  /* panels per kernel call, and per unit of gemm_packed's parallel work */
};
#else
enum {
    PANEL = GEMM_PACKED_PANEL,
    ROWS = 6,   /* rows of A per kernel call: 12 accumulators of 8 floats */
    CHUNK = 96, /* rows of A per block of a product with many rows */
    GROUP = 1,  /* panels per kernel call, and per unit of gemm_packed's parallel work */
};
#endif

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

#ifndef GEMM_PACKED_AVX512
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
#endif

#ifdef GEMM_PACKED_AVX512
/* Row r of C's block in one panel: c[0..cols) = sums + beta c. */
static inline __attribute__((always_inline)) void store_row(int cols, __m512 sums, float beta,
                                                            float *c)
{
    if (cols == PANEL) {
        if (beta != 0.0f)
            sums = _mm512_add_ps(sums, _mm512_loadu_ps(c));
        _mm512_storeu_ps(c, sums);
        return;
    }
    const __mmask16 mask = (__mmask16)((1u << cols) - 1);
    if (beta != 0.0f)
        sums = _mm512_add_ps(sums, _mm512_maskz_loadu_ps(mask, c));
    _mm512_mask_storeu_ps(c, mask, sums);
}

/* The rows x PANEL block of C at c from rows of A at a and the packed panel bp [k][PANEL] and,
 * with panels 2, the block at c1 from the panel bp1 (for the next panel of C, c1 = c + PANEL);
 * rows and panels are constants at each call, cols (of the last panel) is PANEL but for a
 * partial last panel. Per kk one load of each panel
 * row and one broadcast of each row of A feed rows x panels FMAs (Zen 5: two 512-bit FMAs and
 * two 512-bit loads a cycle; one panel alone needs a load per FMA). Named accumulators as the
 * AVX2 kernel's below. */
static inline __attribute__((always_inline)) void kernel2(int rows, int panels, int cols, int k,
                                                          const float *a, int lda, const float *bp,
                                                          const float *bp1, float beta, float *c,
                                                          float *c1, int ldc)
{
#define ACC_DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0;
    ACC_DECL(0)
    ACC_DECL(1)
    ACC_DECL(2)
    ACC_DECL(3)
    ACC_DECL(4)
    ACC_DECL(5)
    ACC_DECL(6)
    ACC_DECL(7)
    ACC_DECL(8)
    ACC_DECL(9)
    ACC_DECL(10)
    ACC_DECL(11)
#undef ACC_DECL
    /* The block of C is stored at the end (with beta 1 read first): fetch its rows, for writing,
     * while the products run (see the AVX2 kernel; with beta 0 too: a C past L2, such as a dense
     * layer's 4096 x 512 output, costs a fifth more without). */
    for (int r = 0; r < rows; r++)
        for (int q = 0; q < panels; q++) {
            const char *cr = (const char *)((q ? c1 : c) + (size_t)r * ldc);
            __builtin_prefetch(cr, 1, 3);
            __builtin_prefetch(cr + sizeof(float) * (PANEL - 1), 1, 3);
        }
#define ROW_FMA(r)                                                                                 \
    if (rows > r) {                                                                                \
        const __m512 av = _mm512_set1_ps(a[(size_t)r * lda + kk]);                                 \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                                \
        if (panels > 1)                                                                            \
            c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                            \
    }
    for (int kk = 0; kk < k; kk++) {
        const __m512 b0 = _mm512_loadu_ps(bp + (size_t)kk * PANEL);
        const __m512 b1 = panels > 1 ? _mm512_loadu_ps(bp1 + (size_t)kk * PANEL) : b0;
        ROW_FMA(0)
        ROW_FMA(1)
        ROW_FMA(2)
        ROW_FMA(3)
        ROW_FMA(4)
        ROW_FMA(5)
        ROW_FMA(6)
        ROW_FMA(7)
        ROW_FMA(8)
        ROW_FMA(9)
        ROW_FMA(10)
        ROW_FMA(11)
    }
#undef ROW_FMA
#define ROW_STORE(r)                                                                               \
    if (rows > r) {                                                                                \
        float *cr = c + (size_t)r * ldc;                                                           \
        if (panels > 1) {                                                                          \
            store_row(PANEL, c##r##0, beta, cr);                                                   \
            store_row(cols, c##r##1, beta, c1 + (size_t)r * ldc);                                  \
        } else                                                                                     \
            store_row(cols, c##r##0, beta, cr);                                                    \
    }
    ROW_STORE(0)
    ROW_STORE(1)
    ROW_STORE(2)
    ROW_STORE(3)
    ROW_STORE(4)
    ROW_STORE(5)
    ROW_STORE(6)
    ROW_STORE(7)
    ROW_STORE(8)
    ROW_STORE(9)
    ROW_STORE(10)
    ROW_STORE(11)
#undef ROW_STORE
}

/* kernel2 for every row of A against one panel (panels 1) or two (bp1 the second, into c1). */
static inline __attribute__((always_inline)) void
panels_product(int panels, int m, int cols, int k, const float *a, int lda, const float *bp,
               const float *bp1, float beta, float *c, float *c1, int ldc)
{
    int i = 0;
    for (; i + ROWS <= m; i += ROWS)
        kernel2(ROWS, panels, cols, k, a + (size_t)i * lda, lda, bp, bp1, beta, c + (size_t)i * ldc,
                c1 + (size_t)i * ldc, ldc);
    const float *ai = a + (size_t)i * lda;
    float *ci = c + (size_t)i * ldc, *c1i = c1 + (size_t)i * ldc;
    switch (m - i) {
#define TAIL(r)                                                                                    \
    case r:                                                                                        \
        kernel2(r, panels, cols, k, ai, lda, bp, bp1, beta, ci, c1i, ldc);                         \
        break;
        TAIL(11)
        TAIL(10)
        TAIL(9)
        TAIL(8)
        TAIL(7)
        TAIL(6)
        TAIL(5)
        TAIL(4)
        TAIL(3)
        TAIL(2)
        TAIL(1)
#undef TAIL
    default:
        break;
    }
}

void gemm_packed_panels(int m, int n, int k, const float *a, int lda, const float *packed, int p0,
                        int p1, float beta, float *c, int ldc)
{
    int p = p0;
    for (; p + 1 < p1; p += 2) { /* pairs: the first of a pair is a whole panel */
        const int j1 = (p + 1) * PANEL, cols = n - j1 < PANEL ? n - j1 : PANEL;
        const float *bp = packed + (size_t)p * PANEL * k;
        panels_product(2, m, cols, k, a, lda, bp, bp + (size_t)PANEL * k, beta, c + p * PANEL,
                       c + j1, ldc);
    }
    if (p < p1) {
        const int j0 = p * PANEL, cols = n - j0 < PANEL ? n - j0 : PANEL;
        const float *bp = packed + (size_t)p * PANEL * k;
        panels_product(1, m, cols, k, a, lda, bp, bp, beta, c + j0, c + j0, ldc);
    }
}

void gemm_packed_two_panels(int m, int k, const float *a, int lda, const float *bp0,
                            const float *bp1, float beta, float *c0, float *c1, int ldc)
{
    if (m > 0)
        panels_product(2, m, PANEL, k, a, lda, bp0, bp1, beta, c0, c1, ldc);
}
#endif

#if defined(GEMM_PACKED_AVX2)
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
    /* The block of C is stored at the end (with beta 1 read first): fetch its rows, for writing,
     * while the products run (the rows are ldc apart, which the hardware prefetcher does not
     * follow; without this a tall C costs half again with beta 1, a fifth with beta 0). */
    for (int r = 0; r < rows; r++) {
        __builtin_prefetch(c + (size_t)r * ldc, 1, 3);
        __builtin_prefetch(c + (size_t)r * ldc + PANEL - 1, 1, 3);
    }
#define ROW_FMA(r)                                                                                 \
    if (rows > r) {                                                                                \
        const __m256 av = _mm256_broadcast_ss(a + (size_t)r * lda + kk);                           \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                                \
        c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                                \
    }
    /* unrolled: 2-15% faster on Zen 3 (the loop's own instructions share the issue slots) */
#pragma GCC unroll 4
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
#elif !defined(GEMM_PACKED_AVX512)
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

#ifndef GEMM_PACKED_AVX512
/* One panel's columns of C for every row of A. */
static void panel_product(int m, int cols, int k, const float *a, int lda, const float *bp,
                          float beta, float *c, int ldc)
{
    /* whole blocks of ROWS rows; a last block of 1-3 rows (fewer accumulators than the FMAs'
     * latency needs) takes rows of the block before it: AVX2, a batch of 32 rows as 4 x 6 + 4 + 4
     * ran 6% faster than as 5 x 6 + 2, one of 8 as 4 + 4 13% faster than as 6 + 2 */
    const int tail = m % ROWS, share = m > ROWS && tail > 0 && tail < 4;
    int i = 0;
    for (; i < (m / ROWS - share) * ROWS; i += ROWS)
        kernel(ROWS, cols, k, a + (size_t)i * lda, lda, bp, beta, c + (size_t)i * ldc, ldc);
    for (int rest = m - i; rest > 0; rest = m - i) {
        const int rows = rest > ROWS ? (rest + 1) / 2 : rest;
        const float *ai = a + (size_t)i * lda;
        float *ci = c + (size_t)i * ldc;
        switch (rows) {
#define ROWS_CASE(r)                                                                               \
    case r:                                                                                        \
        kernel(r, cols, k, ai, lda, bp, beta, ci, ldc);                                            \
        break;
            ROWS_CASE(6)
            ROWS_CASE(5)
            ROWS_CASE(4)
            ROWS_CASE(3)
            ROWS_CASE(2)
#undef ROWS_CASE
        default:
            kernel(1, cols, k, ai, lda, bp, beta, ci, ldc);
            break;
        }
        i += rows;
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

void gemm_packed_two_panels(int m, int k, const float *a, int lda, const float *bp0,
                            const float *bp1, float beta, float *c0, float *c1, int ldc)
{
    gemm_packed_panels(m, PANEL, k, a, lda, bp0, 0, 1, beta, c0, ldc);
    gemm_packed_panels(m, PANEL, k, a, lda, bp1, 0, 1, beta, c1, ldc);
}
#endif

void gemm_packed(int m, int n, int k, const float *a, int lda, const float *packed, float beta,
                 float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    const int panels = (n + PANEL - 1) / PANEL, groups = (panels + GROUP - 1) / GROUP;
    /* Many rows: blocks of CHUNK rows, each against every panel, so that a block of A stays in
     * cache while the panels pass (one panel against all of a tall A streams A once a panel). */
    const int chunk = m > CHUNK ? CHUNK : m, chunks = (m + chunk - 1) / chunk;
    const double work = (double)m * n * k;
#pragma omp parallel for schedule(static) if (work >= GEMM_PACKED_PARALLEL_MIN)
    for (int q = 0; q < chunks * groups; q++) {
        const int i0 = q / groups * chunk, p = q % groups * GROUP;
        const int rows = m - i0 < chunk ? m - i0 : chunk;
        gemm_packed_panels(rows, n, k, a + (size_t)i0 * lda, lda, packed, p,
                           p + GROUP < panels ? p + GROUP : panels, beta, c + (size_t)i0 * ldc,
                           ldc);
    }
}
