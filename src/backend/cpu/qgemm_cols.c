/* The int8 product of a convolution in its own layout (backend/cpu/qgemm_cols.h): packing, the
 * portable quantizer and kernel, and the choice of kernel. */
#include "backend/cpu/qgemm_cols.h"

#include <omp.h>
#include <string.h>

#include "backend/cpu/qgemm.h"

/* Positions of a panel, and the values of k a group holds. */
enum { PANEL = 16, KGROUP = 4 };

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define QGEMM_COLS_PARALLEL_MIN (1 << 20)

static int panels(int m)
{
    return (m + PANEL - 1) / PANEL;
}

size_t qgemm_cols_weight_bytes(int n, int k)
{
    return (size_t)n * (size_t)qgemm_k_padded(k);
}

size_t qgemm_cols_input_bytes(int m, int k)
{
    return (size_t)panels(m) * PANEL * (size_t)qgemm_k_padded(k);
}

void qgemm_cols_pack(const int8_t *w, int n, int k, int8_t *wp)
{
    const int kp = qgemm_k_padded(k);
    for (int j = 0; j < n; j++) {
        memcpy(wp + (size_t)j * kp, w + (size_t)j * k, (size_t)k);
        memset(wp + (size_t)j * kp + k, 0, (size_t)(kp - k));
    }
}

void qgemm_cols_quantize_scalar(const float *x, int ldx, int m, int k, QuantParams xq, uint8_t *xp)
{
    const int groups = qgemm_k_padded(k) / KGROUP;
    const float inv = 1.0f / xq.scale;
    for (int p = 0; p < panels(m); p++)
        for (int K = 0; K < groups; K++) {
            uint8_t *dst = xp + ((size_t)p * groups + K) * PANEL * KGROUP;
            for (int i = 0; i < PANEL; i++)
                for (int t = 0; t < KGROUP; t++) {
                    const int g = KGROUP * K + t, col = p * PANEL + i;
                    dst[KGROUP * i + t] =
                        (uint8_t)(g < k && col < m
                                      ? quantize_code(x[(size_t)g * ldx + col], inv, xq.zero_point)
                                      : 0);
                }
        }
}

void qgemm_cols_s32_scalar(int i0, int i1, int n, int k, const uint8_t *xp, const int8_t *wp,
                           int32_t *c, int ldc)
{
    const int kp = qgemm_k_padded(k);
    for (int i = i0; i < i1; i++) {
        const uint8_t *panel = xp + (size_t)(i / PANEL) * PANEL * kp + (i % PANEL) * KGROUP;
        for (int j = 0; j < n; j++) {
            const int8_t *w = wp + (size_t)j * kp;
            int32_t sum = 0;
            for (int g = 0; g < kp; g += KGROUP)
                for (int t = 0; t < KGROUP; t++)
                    sum += (int32_t)panel[(size_t)g * PANEL + t] * w[g + t];
            c[(size_t)j * ldc + i] = sum;
        }
    }
}

void qgemm_cols_quantize(const float *x, int ldx, int m, int k, QuantParams xq, uint8_t *xp)
{
    (qgemm_has_avx2() ? qgemm_cols_quantize_avx2 : qgemm_cols_quantize_scalar)(x, ldx, m, k, xq,
                                                                               xp);
}

void qgemm_cols_s32(int m, int n, int k, const uint8_t *xp, const int8_t *wp, int32_t *c, int ldc)
{
    void (*kernel)(int, int, int, int, const uint8_t *, const int8_t *, int32_t *, int) =
        qgemm_has_avx2() ? qgemm_cols_s32_avx2 : qgemm_cols_s32_scalar;
    /* Blocks of 4 panels: enough work per block, and their inputs stay in cache. */
    const int block = 4 * PANEL, blocks = (m + block - 1) / block;
#pragma omp parallel for schedule(static) if ((double)m * n * k >= QGEMM_COLS_PARALLEL_MIN &&      \
                                              blocks > 1 && !omp_in_parallel())
    for (int b = 0; b < blocks; b++)
        kernel(b * block, b * block + block < m ? b * block + block : m, n, k, xp, wp, c, ldc);
}
