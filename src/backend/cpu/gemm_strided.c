/* Small products with a strided left operand (backend/cpu/gemm_strided.h): with AVX-512, tiles of 8
 * rows by 32 columns in 16 zmm accumulators, each element of A broadcast from memory against two
 * vectors of a row of B (the partial last tile masked; a last part of at most 16 columns in tiles
 * of 16 rows by one vector instead), and transposes in 16 x 16 blocks in registers; with AVX2 +
 * FMA the same in 6 x 16 tiles of 12 ymm accumulators (a last part of at most 8 columns in tiles
 * of 12 rows by one vector) and 8 x 8 transposes; else plain C loops in the same order. */
#include "backend/cpu/gemm_strided.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>

#include "backend/cpu/lanes16.h"
#endif

#if defined(__AVX512F__)
enum {
    TILE_ROWS = 8, /* a tile: 8 rows x 2 vectors */
    TILE_COLS = 32,
    NARROW_ROWS = 16, /* a narrow tile (a last part of at most NARROW_COLS columns): 16 x 1 */
    NARROW_COLS = 16,
    BLOCK = 16, /* rows and columns of a transpose in registers */
};

/* One tile of rows <= max_rows and cols <= 16 vecs (max_rows x vecs accumulators, both constants
 * at each call): rows past `rows` repeat the last row of A (their sums are dropped), so the loop
 * over k is the same for every tile. */
static inline __attribute__((always_inline)) void
tile_of(int max_rows, int vecs, int rows, int cols, int k, float alpha, const float *a,
        size_t a_row, size_t a_col, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    const __mmask16 m0 = lanes16(cols), m1 = lanes16(cols - 16);
    const float *ar[16];
#pragma GCC unroll 16
    for (int r = 0; r < max_rows; r++)
        ar[r] = a + (size_t)(r < rows ? r : rows - 1) * a_row;
    __m512 acc0[16], acc1[16];
#pragma GCC unroll 16
    for (int r = 0; r < max_rows; r++)
        acc0[r] = acc1[r] = _mm512_setzero_ps();
    for (int i = 0; i < k; i++) {
        const float *bi = b + (size_t)i * ldb;
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, bi);
        const __m512 b1 = vecs > 1 ? _mm512_maskz_loadu_ps(m1, bi + 16) : b0;
        const size_t at = (size_t)i * a_col;
#pragma GCC unroll 16
        for (int r = 0; r < max_rows; r++) {
            const __m512 x = _mm512_set1_ps(ar[r][at]);
            acc0[r] = _mm512_fmadd_ps(x, b0, acc0[r]);
            if (vecs > 1)
                acc1[r] = _mm512_fmadd_ps(x, b1, acc1[r]);
        }
    }
    const __m512 scale = _mm512_set1_ps(alpha);
    /* unrolled, so that the accumulators stay in registers (a loop to `rows` indexes them) */
#pragma GCC unroll 16
    for (int r = 0; r < max_rows; r++) {
        if (r >= rows)
            break;
        float *cr = c + (size_t)r * ldc;
        __m512 y0 = _mm512_mul_ps(acc0[r], scale), y1 = _mm512_mul_ps(acc1[r], scale);
        if (beta != 0.0f) {
            y0 = _mm512_add_ps(y0, _mm512_maskz_loadu_ps(m0, cr));
            if (vecs > 1)
                y1 = _mm512_add_ps(y1, _mm512_maskz_loadu_ps(m1, cr + 16));
        }
        _mm512_mask_storeu_ps(cr, m0, y0);
        if (vecs > 1)
            _mm512_mask_storeu_ps(cr + 16, m1, y1);
    }
}

/* A tile of up to TILE_ROWS x TILE_COLS: two vectors of a row of B per broadcast of A. */
static void tile(int rows, int cols, int k, float alpha, const float *a, size_t a_row, size_t a_col,
                 const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    tile_of(TILE_ROWS, 2, rows, cols, k, alpha, a, a_row, a_col, b, ldb, beta, c, ldc);
}

/* A tile of up to 16 rows x 16 columns, for a last part of at most 16 columns (a causal block's
 * scores often end so): one vector of B per broadcast, where tile's second would be all masked. */
static void tile_narrow(int rows, int cols, int k, float alpha, const float *a, size_t a_row,
                        size_t a_col, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    tile_of(NARROW_ROWS, 1, rows, cols, k, alpha, a, a_row, a_col, b, ldb, beta, c, ldc);
}

/* dst[16][16] (row stride ldd) = src[16][16]^T (row stride lds): 32-bit, 64-bit, then two rounds
 * of 128-bit interleaves. */
static void transpose_block(const float *src, size_t lds, float *dst, size_t ldd)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(src + (size_t)i * lds);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        const __m512d t0 = _mm512_castps_pd(t[i]), t1 = _mm512_castps_pd(t[i + 1]);
        const __m512d t2 = _mm512_castps_pd(t[i + 2]), t3 = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    for (int h = 0; h < 16; h += 8)
        for (int i = 0; i < 4; i++) {
            t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
        }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
    for (int i = 0; i < 16; i++)
        _mm512_storeu_ps(dst + (size_t)i * ldd, r[i]);
}

#elif defined(__AVX2__) && defined(__FMA__)
/* as the AVX-512 ones: tiles of 6 rows x 2 vectors, narrow ones of 12 x 1, 8 x 8 transposes */
enum { TILE_ROWS = 6, TILE_COLS = 16, NARROW_ROWS = 12, NARROW_COLS = 8, BLOCK = 8 };

/* AVX2 + FMA: one tile of rows <= max_rows and cols <= 8 vecs (max_rows x vecs accumulators of
 * the 16 ymm, both constants at each call), as the AVX-512 tile_of: rows past `rows` repeat the
 * last row of A; a tile of whole columns (full, a constant) loads and stores B and C unmasked. */
static inline __attribute__((always_inline)) void
tile_of(int max_rows, int vecs, int full, int rows, int cols, int k, float alpha, const float *a,
        size_t a_row, size_t a_col, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    const __m256i m0 = lanes8(cols), m1 = lanes8(cols - 8);
    const float *ar[12];
#pragma GCC unroll 12
    for (int r = 0; r < max_rows; r++)
        ar[r] = a + (size_t)(r < rows ? r : rows - 1) * a_row;
    __m256 acc0[12], acc1[12];
#pragma GCC unroll 12
    for (int r = 0; r < max_rows; r++)
        acc0[r] = acc1[r] = _mm256_setzero_ps();
    for (int i = 0; i < k; i++) {
        const float *bi = b + (size_t)i * ldb;
        const __m256 b0 = full ? _mm256_loadu_ps(bi) : _mm256_maskload_ps(bi, m0);
        const __m256 b1 = vecs < 2 ? b0
                          : full   ? _mm256_loadu_ps(bi + 8)
                                   : _mm256_maskload_ps(bi + 8, m1);
        const size_t at = (size_t)i * a_col;
#pragma GCC unroll 12
        for (int r = 0; r < max_rows; r++) {
            const __m256 x = _mm256_broadcast_ss(ar[r] + at);
            acc0[r] = _mm256_fmadd_ps(x, b0, acc0[r]);
            if (vecs > 1)
                acc1[r] = _mm256_fmadd_ps(x, b1, acc1[r]);
        }
    }
    const __m256 scale = _mm256_set1_ps(alpha);
#pragma GCC unroll 12
    for (int r = 0; r < max_rows; r++) {
        if (r >= rows)
            break;
        float *cr = c + (size_t)r * ldc;
        __m256 y0 = _mm256_mul_ps(acc0[r], scale), y1 = _mm256_mul_ps(acc1[r], scale);
        if (full) {
            if (beta != 0.0f) {
                y0 = _mm256_add_ps(y0, _mm256_loadu_ps(cr));
                y1 = _mm256_add_ps(y1, _mm256_loadu_ps(cr + 8));
            }
            _mm256_storeu_ps(cr, y0);
            _mm256_storeu_ps(cr + 8, y1);
            continue;
        }
        if (beta != 0.0f) {
            y0 = _mm256_add_ps(y0, _mm256_maskload_ps(cr, m0));
            if (vecs > 1)
                y1 = _mm256_add_ps(y1, _mm256_maskload_ps(cr + 8, m1));
        }
        _mm256_maskstore_ps(cr, m0, y0);
        if (vecs > 1)
            _mm256_maskstore_ps(cr + 8, m1, y1);
    }
}

/* A tile of up to TILE_ROWS x TILE_COLS: two vectors of a row of B per broadcast of A. */
static void tile(int rows, int cols, int k, float alpha, const float *a, size_t a_row, size_t a_col,
                 const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    if (cols == TILE_COLS)
        tile_of(TILE_ROWS, 2, 1, rows, cols, k, alpha, a, a_row, a_col, b, ldb, beta, c, ldc);
    else
        tile_of(TILE_ROWS, 2, 0, rows, cols, k, alpha, a, a_row, a_col, b, ldb, beta, c, ldc);
}

/* A tile of up to 12 rows x 8 columns, for a last part of at most 8 columns. */
static void tile_narrow(int rows, int cols, int k, float alpha, const float *a, size_t a_row,
                        size_t a_col, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    tile_of(NARROW_ROWS, 1, 0, rows, cols, k, alpha, a, a_row, a_col, b, ldb, beta, c, ldc);
}

/* dst[8][8] (row stride ldd) = src[8][8]^T (row stride lds): 32-bit and 64-bit interleaves, then
 * the 128-bit halves exchanged. */
static void transpose_block(const float *src, size_t lds, float *dst, size_t ldd)
{
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(src + (size_t)i * lds);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < 8; i++)
        _mm256_storeu_ps(dst + (size_t)i * ldd, t[i]);
}

#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
void gemm_strided_transpose(int rows, int cols, const float *x, size_t ldx, float *tr, size_t ldt)
{
    const int rows_b = rows / BLOCK * BLOCK, cols_b = cols / BLOCK * BLOCK;
    for (int i = 0; i < rows_b; i += BLOCK)
        for (int j = 0; j < cols_b; j += BLOCK)
            transpose_block(x + (size_t)i * ldx + j, ldx, tr + (size_t)j * ldt + i, ldt);
    /* the edges past whole blocks */
    for (int i = 0; i < rows; i++)
        for (int j = i < rows_b ? cols_b : 0; j < cols; j++)
            tr[(size_t)j * ldt + i] = x[(size_t)i * ldx + j];
}

void gemm_strided(int m, int n, int k, float alpha, const float *a, size_t a_row, size_t a_col,
                  const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    /* whole TILE_COLS parts, and a last part wider than NARROW_COLS columns, in tiles; a last
     * part of at most NARROW_COLS in narrow tiles */
    const int rest = n % TILE_COLS, narrow = rest > 0 && rest <= NARROW_COLS,
              wide_n = n - (narrow ? rest : 0);
    for (int r0 = 0; r0 < m; r0 += TILE_ROWS)
        for (int j0 = 0; j0 < wide_n; j0 += TILE_COLS)
            tile(m - r0 < TILE_ROWS ? m - r0 : TILE_ROWS,
                 wide_n - j0 < TILE_COLS ? wide_n - j0 : TILE_COLS, k, alpha,
                 a + (size_t)r0 * a_row, a_row, a_col, b + j0, ldb, beta, c + (size_t)r0 * ldc + j0,
                 ldc);
    for (int r0 = 0; narrow && r0 < m; r0 += NARROW_ROWS)
        tile_narrow(m - r0 < NARROW_ROWS ? m - r0 : NARROW_ROWS, rest, k, alpha,
                    a + (size_t)r0 * a_row, a_row, a_col, b + wide_n, ldb, beta,
                    c + (size_t)r0 * ldc + wide_n, ldc);
}
#else
void gemm_strided_transpose(int rows, int cols, const float *x, size_t ldx, float *tr, size_t ldt)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            tr[(size_t)j * ldt + i] = x[(size_t)i * ldx + j];
}

void gemm_strided(int m, int n, int k, float alpha, const float *a, size_t a_row, size_t a_col,
                  const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) {
            float sum = 0;
            for (int i = 0; i < k; i++)
                sum += a[(size_t)r * a_row + (size_t)i * a_col] * b[(size_t)i * ldb + j];
            float *cr = c + (size_t)r * ldc + j;
            *cr = beta != 0.0f ? alpha * sum + *cr : alpha * sum;
        }
}
#endif
