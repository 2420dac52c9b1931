/* NCHW float32 to nhwc uint8 codes for oneDNN's int8 convolutions (quantize_nhwc.h). */
#include "backend/cpu/quantize_nhwc.h"

#include "backend/cpu/lanes16.h"
#include "backend/cpu/transpose16.h"

/* Positions per block: a block of x's planes, [c][BLOCK], is read BLOCK floats a row at a time
 * (few pages touched per row), and its codes, [BLOCK][c], stay in the L2 cache. */
#define QUANTIZE_NHWC_BLOCK 256
/* Below this many values a parallel region costs more than it saves. */
#define QUANTIZE_NHWC_PARALLEL_MIN 65536

int quantize_nhwc_runs(int c)
{
#if defined(__AVX512F__)
    return c > 0 && c % 16 == 0;
#else
    (void)c;
    return 0;
#endif
}

#if defined(__AVX512F__)
void quantize_nhwc(const float *x, uint8_t *codes, int batch, int c, size_t spatial,
                   float inv_scale, int zero_point)
{
    const size_t blocks = (spatial + QUANTIZE_NHWC_BLOCK - 1) / QUANTIZE_NHWC_BLOCK;
    const size_t n = (size_t)batch * (size_t)c * spatial;
    const __m512 inv = _mm512_set1_ps(inv_scale), zp = _mm512_set1_ps((float)zero_point);
    const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps(255.0f);
#pragma omp parallel for schedule(static) if (n > QUANTIZE_NHWC_PARALLEL_MIN)
    for (size_t t = 0; t < (size_t)batch * blocks; t++) {
        const size_t b = t / blocks, first = t % blocks * QUANTIZE_NHWC_BLOCK;
        const size_t end =
            first + QUANTIZE_NHWC_BLOCK < spatial ? first + QUANTIZE_NHWC_BLOCK : spatial;
        for (size_t c0 = 0; c0 < (size_t)c; c0 += 16) {
            const float *in = x + (b * (size_t)c + c0) * spatial;
            uint8_t *out = codes + b * spatial * (size_t)c + c0;
            for (size_t s0 = first; s0 < end; s0 += 16) {
                const size_t rows = end - s0 < 16 ? end - s0 : 16;
                const __mmask16 valid = lanes16((long)rows);
                __m512 r[16];
                for (size_t k = 0; k < 16; k++)
                    r[k] = _mm512_maskz_loadu_ps(valid, in + k * spatial + s0);
                transpose16(r);
                for (size_t s = 0; s < rows; s++) {
                    /* the product rounded, then the sum, then clamped before rounding, as
                     * quantize_code (vmaxps returns its second operand, 0, for NaN) */
                    const __m512 v = _mm512_min_ps(
                        _mm512_max_ps(_mm512_add_ps(_mm512_mul_ps(r[s], inv), zp), zero), top);
                    const __m512i q =
                        _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                    _mm_storeu_si128((__m128i *)(out + (s0 + s) * (size_t)c),
                                     _mm512_cvtepi32_epi8(q));
                }
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
