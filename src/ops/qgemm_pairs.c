/* The int8 product of a convolution in its own layout (ops/qgemm_pairs.h): packing, the
 * portable quantizer and kernel, and the choice of kernel. */
#include "ops/qgemm_pairs.h"

#include <omp.h>
#include <string.h>

#include "ops/qgemm.h"

/* Positions of a panel. */
enum { PANEL = 16 };

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define QGEMM_PAIRS_PARALLEL_MIN (1 << 20)

static int panels(int m)
{
    return (m + PANEL - 1) / PANEL;
}

size_t qgemm_pairs_weight_bytes(int n, int k)
{
    return (size_t)n * (size_t)qgemm_pairs_k(k) * sizeof(int16_t);
}

size_t qgemm_pairs_input_bytes(int m, int k)
{
    return (size_t)panels(m) * PANEL * (size_t)qgemm_pairs_k(k) * sizeof(int16_t);
}

void qgemm_pairs_pack(const int8_t *w, int n, int k, int16_t *wp)
{
    const int kp = qgemm_pairs_k(k);
    for (int j = 0; j < n; j++) {
        for (int g = 0; g < k; g++)
            wp[(size_t)j * kp + g] = w[(size_t)j * k + g];
        if (kp > k)
            wp[(size_t)j * kp + k] = 0;
    }
}

void qgemm_pairs_quantize_scalar(const float *x, int ldx, int m, int k, QuantParams xq, int16_t *xp)
{
    const int pairs = qgemm_pairs_k(k) / 2;
    const float inv = 1.0f / xq.scale;
    for (int p = 0; p < panels(m); p++)
        for (int K = 0; K < pairs; K++) {
            int16_t *dst = xp + ((size_t)p * pairs + K) * PANEL * 2;
            for (int i = 0; i < PANEL; i++)
                for (int t = 0; t < 2; t++) {
                    const int g = 2 * K + t, col = p * PANEL + i;
                    dst[2 * i + t] =
                        (int16_t)(g < k && col < m
                                      ? quantize_code(x[(size_t)g * ldx + col], inv, xq.zero_point)
                                      : 0);
                }
        }
}

void qgemm_pairs_s32_scalar(int i0, int i1, int n, int k, const int16_t *xp, const int16_t *wp,
                            int32_t *c, int ldc)
{
    const int kp = qgemm_pairs_k(k), pairs = kp / 2;
    for (int i = i0; i < i1; i++) {
        const int16_t *panel = xp + (size_t)(i / PANEL) * pairs * PANEL * 2 + (i % PANEL) * 2;
        for (int j = 0; j < n; j++) {
            const int16_t *w = wp + (size_t)j * kp;
            int32_t sum = 0;
            for (int K = 0; K < pairs; K++)
                sum += (int32_t)panel[(size_t)K * PANEL * 2] * w[2 * K] +
                       (int32_t)panel[(size_t)K * PANEL * 2 + 1] * w[2 * K + 1];
            c[(size_t)j * ldc + i] = sum;
        }
    }
}

void qgemm_pairs_quantize(const float *x, int ldx, int m, int k, QuantParams xq, int16_t *xp)
{
    (qgemm_has_avx2() ? qgemm_pairs_quantize_avx2 : qgemm_pairs_quantize_scalar)(x, ldx, m, k, xq,
                                                                                 xp);
}

void qgemm_pairs_s32(int m, int n, int k, const int16_t *xp, const int16_t *wp, int32_t *c, int ldc)
{
    void (*kernel)(int, int, int, int, const int16_t *, const int16_t *, int32_t *, int) =
        qgemm_has_avx2() ? qgemm_pairs_s32_avx2 : qgemm_pairs_s32_scalar;
    /* Blocks of 4 panels: enough work per block, and their inputs stay in cache. */
    const int block = 4 * PANEL, blocks = (m + block - 1) / block;
#pragma omp parallel for schedule(static) if ((double)m * n * k >= QGEMM_PAIRS_PARALLEL_MIN &&     \
                                              blocks > 1 && !omp_in_parallel())
    for (int b = 0; b < blocks; b++)
        kernel(b * block, b * block + block < m ? b * block + block : m, n, k, xp, wp, c, ldc);
}
