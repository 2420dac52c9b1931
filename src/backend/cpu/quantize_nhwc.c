/* NCHW float32 to nhwc uint8 codes for oneDNN's int8 convolutions (quantize_nhwc.h). */
#include "backend/cpu/quantize_nhwc.h"

#include "backend/cpu/lanes16.h"
#include "backend/cpu/transpose16.h"
#include "backend/cpu/transpose8.h"

/* Positions per block: a block of x's planes, [c][BLOCK], is read TILE floats a row at a time
 * (few pages touched per row), and its codes, [BLOCK][c], stay in the L2 cache. */
#define QUANTIZE_NHWC_BLOCK 256
/* Below this many values a parallel region costs more than it saves. */
#define QUANTIZE_NHWC_PARALLEL_MIN 65536

#if defined(__AVX512F__)
#define QUANTIZE_NHWC_TILE 16
#elif defined(__AVX2__)
#define QUANTIZE_NHWC_TILE 8
#endif

int quantize_nhwc_runs(int c)
{
#if defined(QUANTIZE_NHWC_TILE)
    return c > 0 && c % QUANTIZE_NHWC_TILE == 0;
#else
    (void)c;
    return 0;
#endif
}

#if defined(QUANTIZE_NHWC_TILE)
/* The codes of TILE channels at positions s0..s0+rows (rows <= TILE): in [k][spatial] the first
 * channel's plane at s0's row, out[s][c] the first channel's code at s0. Each value's product is
 * rounded, then the sum, then it is clamped before rounding, as quantize_code (vmaxps returns its
 * second operand, 0, for NaN). */
static inline void quantize_tile(const float *in, size_t spatial, uint8_t *out, size_t c,
                                 size_t rows, float inv_scale, int zero_point)
{
#if defined(__AVX512F__)
    const __m512 inv = _mm512_set1_ps(inv_scale), zp = _mm512_set1_ps((float)zero_point);
    const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps(255.0f);
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
    const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
    const __m256i valid = lanes8((long)rows);
    __m256 r[8];
    for (size_t k = 0; k < 8; k++)
        r[k] = _mm256_maskload_ps(in + k * spatial, valid);
    transpose8(r);
    for (size_t s = 0; s < rows; s++) {
        const __m256 v =
            _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(_mm256_mul_ps(r[s], inv), zp), zero), top);
        /* v is a whole number's float in [0, 255] after the rounding: the packs do not clamp */
        const __m256i q =
            _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m128i words =
            _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)(out + s * c), _mm_packus_epi16(words, words));
    }
#endif
}

void quantize_nhwc(const float *x, uint8_t *codes, int batch, int c, size_t spatial,
                   float inv_scale, int zero_point)
{
    const size_t blocks = (spatial + QUANTIZE_NHWC_BLOCK - 1) / QUANTIZE_NHWC_BLOCK;
    const size_t n = (size_t)batch * (size_t)c * spatial;
#pragma omp parallel for schedule(static) if (n > QUANTIZE_NHWC_PARALLEL_MIN)
    for (size_t t = 0; t < (size_t)batch * blocks; t++) {
        const size_t b = t / blocks, first = t % blocks * QUANTIZE_NHWC_BLOCK;
        const size_t end =
            first + QUANTIZE_NHWC_BLOCK < spatial ? first + QUANTIZE_NHWC_BLOCK : spatial;
        for (size_t c0 = 0; c0 < (size_t)c; c0 += QUANTIZE_NHWC_TILE) {
            const float *in = x + (b * (size_t)c + c0) * spatial;
            uint8_t *out = codes + b * spatial * (size_t)c + c0;
            for (size_t s0 = first; s0 < end; s0 += QUANTIZE_NHWC_TILE) {
                const size_t rows = end - s0 < QUANTIZE_NHWC_TILE ? end - s0 : QUANTIZE_NHWC_TILE;
                quantize_tile(in + s0, spatial, out + s0 * (size_t)c, (size_t)c, rows, inv_scale,
                              zero_point);
            }
        }
    }
}
#else
void quantize_nhwc(const float *x, uint8_t *codes, int batch, int c, size_t spatial,
                   float inv_scale, int zero_point)
{
    (void)x, (void)codes, (void)batch, (void)c, (void)spatial, (void)inv_scale, (void)zero_point;
}
#endif
