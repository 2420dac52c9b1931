/* NCHW float32 to nhwc uint8 codes for oneDNN's int8 convolutions (quantize_nhwc.h). */
#include "backend/cpu/quantize_nhwc.h"

#include "backend/cpu/lanes16.h"
#include "backend/cpu/quantize.h"
#include "backend/cpu/transpose16.h"
#include "backend/cpu/transpose8.h"

/* Positions per block: a block of x's planes, [c][BLOCK], is read TILE floats a row at a time
 * (few pages touched per row), and its codes, [BLOCK][c], stay in the L2 cache. */
#define QUANTIZE_NHWC_BLOCK 256
/* Below this many values a parallel region costs more than it saves. */
#define QUANTIZE_NHWC_PARALLEL_MIN 65536

/* Channels per tile of the vector kernel: 16 with AVX-512, 8 with AVX2, none (the portable loop
 * for every channel) otherwise. */
#if defined(__AVX512F__)
#define QUANTIZE_NHWC_TILE 16
#elif defined(__AVX2__)
#define QUANTIZE_NHWC_TILE 8
#else
#define QUANTIZE_NHWC_TILE 0
#endif

#if QUANTIZE_NHWC_TILE
/* The codes of TILE channels at positions s0..s0+rows (rows <= TILE): in [k][spatial] the first
 * channel's plane at s0's row, out[s][c] the first channel's code at s0. Each value's product is
 * rounded, then the sum, then it is clamped before rounding, as quantize_code (vmaxps returns its
 * second operand, 0, for NaN). */
static inline void quantize_tile(const float *in, size_t spatial, uint8_t *out, size_t c,
                                 size_t rows, float inv_scale, int zero_point)
{
#if defined(__AVX512F__)
    const __m512 inv = _mm512_set1_ps(inv_scale), zp = _mm512_set1_ps((float)zero_point);
    const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps((float)QUANT_CODE_MAX);
    const __mmask16 valid = lanes16((long)rows);
    __m512 r[16];
    for (size_t k = 0; k < 16; k++)
        r[k] = _mm512_maskz_loadu_ps(valid, in + k * spatial);
    transpose16(r);
    for (size_t s = 0; s < rows; s++) {
        const __m512 v =
            _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(_mm512_mul_ps(r[s], inv), zp), zero), top);
        const __m512i q =
            _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(out + s * c), _mm512_cvtepi32_epi8(q));
    }
#else
    const __m256 inv = _mm256_set1_ps(inv_scale), zp = _mm256_set1_ps((float)zero_point);
    const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps((float)QUANT_CODE_MAX);
    const __m256i valid = lanes8((long)rows);
    __m256 r[8];
    for (size_t k = 0; k < 8; k++)
        r[k] = _mm256_maskload_ps(in + k * spatial, valid);
    transpose8(r);
    for (size_t s = 0; s < rows; s++) {
        const __m256 v =
            _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(_mm256_mul_ps(r[s], inv), zp), zero), top);
        /* v is a whole number's float in [0, QUANT_CODE_MAX] after the rounding: the packs do not
         * clamp */
        const __m256i q =
            _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m128i words =
            _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)(out + s * c), _mm_packus_epi16(words, words));
    }
#endif
}

#endif

void quantize_nhwc(const float *x, uint8_t *codes, int batch, int c, size_t spatial,
                   float inv_scale, int zero_point)
{
    const size_t blocks = (spatial + QUANTIZE_NHWC_BLOCK - 1) / QUANTIZE_NHWC_BLOCK;
    const size_t n = (size_t)batch * (size_t)c * spatial;
    const size_t tiled =
        QUANTIZE_NHWC_TILE ? (size_t)c / QUANTIZE_NHWC_TILE * QUANTIZE_NHWC_TILE : 0;
#pragma omp parallel for schedule(static) if (n > QUANTIZE_NHWC_PARALLEL_MIN)
    for (size_t t = 0; t < (size_t)batch * blocks; t++) {
        const size_t b = t / blocks, first = t % blocks * QUANTIZE_NHWC_BLOCK;
        const size_t end =
            first + QUANTIZE_NHWC_BLOCK < spatial ? first + QUANTIZE_NHWC_BLOCK : spatial;
        const float *in = x + b * (size_t)c * spatial;
        uint8_t *out = codes + b * spatial * (size_t)c;
#if QUANTIZE_NHWC_TILE
        for (size_t c0 = 0; c0 < tiled; c0 += QUANTIZE_NHWC_TILE)
            for (size_t s0 = first; s0 < end; s0 += QUANTIZE_NHWC_TILE) {
                const size_t rows = end - s0 < QUANTIZE_NHWC_TILE ? end - s0 : QUANTIZE_NHWC_TILE;
                quantize_tile(in + c0 * spatial + s0, spatial, out + s0 * (size_t)c + c0, (size_t)c,
                              rows, inv_scale, zero_point);
            }
#endif
        /* the channels past the last whole tile (a first layer's 1 or 3), one value at a time */
        for (size_t k = tiled; k < (size_t)c; k++)
            for (size_t s = first; s < end; s++)
                out[s * (size_t)c + k] =
                    (uint8_t)quantize_code(in[k * spatial + s], inv_scale, zero_point);
    }
}
