/* C = A^T B + beta C (backend/cpu/gemm_tn.h). AVX-512: tiles of up to ROWS x COLS elements of C in
 * 24 zmm accumulators; per k one broadcast of each of the tile's ROWS consecutive values of A's row
 * k and two loads of B's row k feed 2 ROWS FMAs. The k rows pass in blocks of KC; per block the
 * tiles go a column of tiles at a time, each column's strip of B (KC x COLS) packed once into a
 * buffer that stays in L1 while the column's tiles read it (A's block, KC x m, stays in L2). Both
 * operands' next parts are asked into L2 while the tiles run, spread over them: the first
 * column's tiles fetch the next block of A, and every column's tiles the strip of B that it
 * packs next (inside gpt_tiny's step, fc1's dW [512][128] 76 -> 97 GFLOP/s, fc2's [128][512]
 * 86 -> 95: rows 512 B to 2 KiB apart, which the hardware prefetcher follows too late). A
 * tile's sums go to C after each block and come back for the next, which keeps each element's
 * order of additions. Without AVX-512, OpenBLAS sgemm. */
#include "backend/cpu/gemm_tn.h"

#include "backend/cpu/gemm.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#include <omp.h>

#include "backend/cpu/lanes16.h"

enum {
    ROWS = 12,          /* rows of C per tile */
    COLS = 32,          /* columns of C per tile: two zmm */
    KC = 128,           /* rows of A and B per block */
    PREFETCH_ROWS = 24, /* how far ahead a tile asks for its rows of A */
};

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define GEMM_TN_PARALLEL_MIN (1 << 20)

/* The tile of C at c (rows x up to COLS, the columns' masks m0 and m1) += A^T B over k rows of A
 * at a (the tile's columns of A) and of the packed strip bs [k][COLS]; load_c 0 starts from zero
 * instead of C. Meanwhile it asks for the first next_rows rows of the tile's columns of A at next
 * (lda apart) to come into L2. rows is a constant at each call. */
static inline __attribute__((always_inline)) void tile(int rows, int k, const float *a, int lda,
                                                       const float *bs, __mmask16 m0, __mmask16 m1,
                                                       int load_c, float *c, int ldc,
                                                       const float *next, int next_rows)
{
#define ACC_DECL(r)                                                                                \
    __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0;                                       \
    if (load_c && rows > r) {                                                                      \
        c##r##0 = _mm512_maskz_loadu_ps(m0, c + (size_t)r * ldc);                                  \
        c##r##1 = _mm512_maskz_loadu_ps(m1, c + (size_t)r * ldc + 16);                             \
    }
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
#define ROW_FMA(r)                                                                                 \
    if (rows > r) {                                                                                \
        const __m512 av = _mm512_set1_ps(ar[r]);                                                   \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                                \
        c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                                \
    }
    for (int kk = 0; kk < k; kk++) {
        const float *ar = a + (size_t)kk * lda;
        /* A's rows are lda apart, a stride the hardware prefetcher follows too late (at lda 512,
         * a sixth of the speed) */
        if (kk + PREFETCH_ROWS < k)
            _mm_prefetch((const char *)(ar + PREFETCH_ROWS * (size_t)lda), _MM_HINT_T0);
        if (kk < next_rows) { /* the tile's ROWS values may straddle two lines */
            _mm_prefetch((const char *)(next + (size_t)kk * lda), _MM_HINT_T1);
            _mm_prefetch((const char *)(next + (size_t)kk * lda + rows - 1), _MM_HINT_T1);
        }
        const __m512 b0 = _mm512_load_ps(bs + kk * COLS), b1 = _mm512_load_ps(bs + kk * COLS + 16);
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
        _mm512_mask_storeu_ps(c + (size_t)r * ldc, m0, c##r##0);                                   \
        _mm512_mask_storeu_ps(c + (size_t)r * ldc + 16, m1, c##r##1);                              \
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

/* Tiles t0..t1-1 of C (column-major over tiles of ROWS x COLS, tiles_m to a column of tiles),
 * every block of k in order: per block, each column of tiles packs its strip of B (KC x COLS,
 * zeros past n) into bs, which every tile of the column then reads. */
static void tiles(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float beta,
                  float *c, int ldc, int tiles_m, int t0, int t1)
{
    float bs[KC * COLS] __attribute__((aligned(64)));
    for (int k0 = 0; k0 < k; k0 += KC) {
        const int kc = k - k0 < KC ? k - k0 : KC, load_c = k0 > 0 || beta != 0.0f;
        /* rows of the next block (0: none), which both operands' prefetches ask for */
        const int next_kc = k - k0 - KC <= 0 ? 0 : k - k0 - KC < KC ? k - k0 - KC : KC;
        const float *ak = a + (size_t)k0 * lda, *bk = b + (size_t)k0 * ldb;
        int packed_j = -1, strip_rows = 0, strip_cols = 0;
        const float *next_strip = NULL;
        for (int t = t0; t < t1; t++) {
            const int i0 = t % tiles_m * ROWS, j0 = t / tiles_m * COLS;
            const __mmask16 m0 = lanes16(n - j0), m1 = lanes16(n - j0 - 16);
            if (j0 != packed_j) {
                /* the strip this thread packs next (strip_rows x strip_cols): the next column's
                 * in this block, else its first column's in the next block, else none */
                const int t_next = (t / tiles_m + 1) * tiles_m, in_block = t_next < t1;
                const int j_next = in_block ? j0 + COLS : t0 / tiles_m * COLS;
                strip_rows = in_block ? kc : next_kc;
                next_strip = in_block     ? bk + j_next
                             : strip_rows ? b + (size_t)(k0 + KC) * ldb + j_next
                                          : bk;
                strip_cols = n - j_next < COLS ? n - j_next : COLS;
                for (int kk = 0; kk < kc; kk++) {
                    const float *br = bk + (size_t)kk * ldb + j0;
                    _mm512_store_ps(bs + kk * COLS, _mm512_maskz_loadu_ps(m0, br));
                    _mm512_store_ps(bs + kk * COLS + 16, _mm512_maskz_loadu_ps(m1, br + 16));
                }
                packed_j = j0;
            }
            /* each tile of the column asks for its slice of the next strip's rows (up to three
             * lines each) into L2, so that the next packing finds them there */
            const int slice = (KC + tiles_m - 1) / tiles_m, first = t % tiles_m * slice;
            for (int r = first; r < first + slice && r < strip_rows; r++) {
                const float *br = next_strip + (size_t)r * ldb;
                _mm_prefetch((const char *)br, _MM_HINT_T1);
                _mm_prefetch((const char *)(br + (strip_cols > 16 ? 16 : strip_cols - 1)),
                             _MM_HINT_T1);
                _mm_prefetch((const char *)(br + strip_cols - 1), _MM_HINT_T1);
            }
            const float *at = ak + i0;
            /* the first column of tiles (tiles_m of them, every i0) fetches the next block of A */
            const int next_rows = t - t0 < tiles_m ? next_kc : 0;
            const float *next_a = next_rows ? at + (size_t)KC * lda : at;
            float *ct = c + (size_t)i0 * ldc + j0;
            switch (m - i0 < ROWS ? m - i0 : ROWS) {
#define ROWS_CASE(r)                                                                               \
    case r:                                                                                        \
        tile(r, kc, at, lda, bs, m0, m1, load_c, ct, ldc, next_a, next_rows);                      \
        break;
                ROWS_CASE(12)
                ROWS_CASE(11)
                ROWS_CASE(10)
                ROWS_CASE(9)
                ROWS_CASE(8)
                ROWS_CASE(7)
                ROWS_CASE(6)
                ROWS_CASE(5)
                ROWS_CASE(4)
                ROWS_CASE(3)
                ROWS_CASE(2)
                ROWS_CASE(1)
#undef ROWS_CASE
            default:
                break;
            }
        }
    }
}

void gemm_tn(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float beta,
             float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        for (int i = 0; beta == 0.0f && i < m; i++)
            for (int j = 0; j < n; j++)
                c[(size_t)i * ldc + j] = 0.0f;
        return;
    }
    const int tiles_m = (m + ROWS - 1) / ROWS, count = tiles_m * ((n + COLS - 1) / COLS);
#pragma omp parallel if ((double)m * n * k >= GEMM_TN_PARALLEL_MIN)
    {
        const int threads = omp_get_num_threads(), id = omp_get_thread_num();
        const int t0 = (int)((long)count * id / threads),
                  t1 = (int)((long)count * (id + 1) / threads);
        tiles(m, n, k, a, lda, b, ldb, beta, c, ldc, tiles_m, t0, t1);
    }
}
#else
void gemm_tn(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float beta,
             float *c, int ldc)
{
    gemm(1, 0, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
#endif
