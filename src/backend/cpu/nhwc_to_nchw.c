/* float32 nhwc to NCHW for oneDNN's int8 convolutions' outputs (nhwc_to_nchw.h). */
#include "backend/cpu/nhwc_to_nchw.h"

#include "backend/cpu/lanes16.h"
#include "backend/cpu/transpose16.h"
#include "backend/cpu/transpose8.h"

/* Positions per block: a block of x, [BLOCK][c], stays in the L2 cache while its TILE-channel
 * slices are transposed, and each of y's planes is written BLOCK floats a row at a time (few pages
 * touched per row). */
#define NHWC_TO_NCHW_BLOCK 256
/* Below this many values a parallel region costs more than it saves. */
#define NHWC_TO_NCHW_PARALLEL_MIN 65536

#if defined(__AVX512F__)
#define NHWC_TO_NCHW_TILE 16
#elif defined(__AVX2__)
#define NHWC_TO_NCHW_TILE 8
#endif

int nhwc_to_nchw_runs(int c)
{
#if defined(NHWC_TO_NCHW_TILE)
    return c > 0 && c % NHWC_TO_NCHW_TILE == 0;
#else
    (void)c;
    return 0;
#endif
}

#if defined(NHWC_TO_NCHW_TILE)
/* TILE channels at positions s0..s0+rows (rows <= TILE) moved: in[s][c] the first channel's value
 * at s0, out[k][spatial] the first channel's plane at s0's row. */
static inline void transpose_tile(const float *in, size_t c, float *out, size_t spatial,
                                  size_t rows)
{
#if defined(__AVX512F__)
    const __mmask16 valid = lanes16((long)rows);
    __m512 r[16];
    for (size_t s = 0; s < 16; s++)
        r[s] = s < rows ? _mm512_loadu_ps(in + s * c) : _mm512_setzero_ps();
    transpose16(r);
    for (size_t k = 0; k < 16; k++)
        _mm512_mask_storeu_ps(out + k * spatial, valid, r[k]);
#else
    __m256 r[8];
    for (size_t s = 0; s < 8; s++)
        r[s] = s < rows ? _mm256_loadu_ps(in + s * c) : _mm256_setzero_ps();
    transpose8(r);
    for (size_t k = 0; k < 8; k++)
        if (rows == 8)
            _mm256_storeu_ps(out + k * spatial, r[k]);
        else
            store_first8(out + k * spatial, r[k], (long)rows);
#endif
}

void nhwc_to_nchw(const float *x, float *y, int batch, int c, size_t spatial)
{
    const size_t blocks = (spatial + NHWC_TO_NCHW_BLOCK - 1) / NHWC_TO_NCHW_BLOCK;
    const size_t n = (size_t)batch * (size_t)c * spatial;
#pragma omp parallel for schedule(static) if (n > NHWC_TO_NCHW_PARALLEL_MIN)
    for (size_t t = 0; t < (size_t)batch * blocks; t++) {
        const size_t b = t / blocks, first = t % blocks * NHWC_TO_NCHW_BLOCK;
        const size_t end =
            first + NHWC_TO_NCHW_BLOCK < spatial ? first + NHWC_TO_NCHW_BLOCK : spatial;
        for (size_t c0 = 0; c0 < (size_t)c; c0 += NHWC_TO_NCHW_TILE) {
            const float *in = x + b * spatial * (size_t)c + c0;
            float *out = y + (b * (size_t)c + c0) * spatial;
            for (size_t s0 = first; s0 < end; s0 += NHWC_TO_NCHW_TILE) {
                const size_t rows = end - s0 < NHWC_TO_NCHW_TILE ? end - s0 : NHWC_TO_NCHW_TILE;
                transpose_tile(in + s0 * (size_t)c, (size_t)c, out + s0, spatial, rows);
            }
        }
    }
}
#else
void nhwc_to_nchw(const float *x, float *y, int batch, int c, size_t spatial)
{
    (void)x, (void)y, (void)batch, (void)c, (void)spatial;
}
#endif
