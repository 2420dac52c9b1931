/* The int8 matrix product (backend/cpu/qgemm.h): packing, the portable kernel, the choice of
 * kernel, and the float product with its quantize and dequantize passes. */
#include "backend/cpu/qgemm.h"

#include <omp.h>
#include <string.h>

#include "backend/cpu/qgemm_cols.h"

/* Output columns of a panel, and the values of k one vpdpbusd lane sums. */
enum { PANEL = 16, KGROUP = 4 };

/* Tiles the threaded product splits c into: rows by columns (a multiple of PANEL). */
enum { TILE_M = 64, TILE_N = 64 };

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define QGEMM_PARALLEL_MIN (1 << 20)

static int panels(int n)
{
    return (n + PANEL - 1) / PANEL;
}

size_t qgemm_packed_bytes(int n, int k)
{
    return (size_t)panels(n) * PANEL * (size_t)qgemm_k_padded(k);
}

void qgemm_pack(const int8_t *w, int n, int k, int8_t *packed, int32_t *row_sums)
{
    const int kp = qgemm_k_padded(k);
    memset(packed, 0, qgemm_packed_bytes(n, k));
    for (int j = 0; j < n; j++) {
        int32_t sum = 0;
        int8_t *panel = packed + (size_t)(j / PANEL) * PANEL * kp;
        for (int i = 0; i < k; i++) {
            const int8_t v = w[(size_t)j * k + i];
            panel[((size_t)(i / KGROUP) * PANEL + j % PANEL) * KGROUP + i % KGROUP] = v;
            sum += v;
        }
        row_sums[j] = sum;
    }
}

/* Panel by panel, as the VNNI kernel: the 16 sums of a panel in an array the compiler can
 * keep in vector registers (AVX2 under -march=native). */
void qgemm_s32_scalar(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed,
                      int32_t *c, int ldc)
{
    const int kp = qgemm_k_padded(k);
    for (int i = 0; i < m; i++) {
        const uint8_t *row = a + (size_t)i * lda;
        for (int p = 0; p < panels(n); p++) {
            const int8_t *panel = packed + (size_t)p * PANEL * kp;
            int32_t sum[PANEL] = {0};
            for (int g = 0; g < kp; g += KGROUP) {
                const int8_t *w = panel + (size_t)g * PANEL;
                for (int j = 0; j < PANEL; j++)
                    for (int t = 0; t < KGROUP; t++)
                        sum[j] += (int32_t)row[g + t] * w[j * KGROUP + t];
            }
            const int cols = n - p * PANEL < PANEL ? n - p * PANEL : PANEL;
            memcpy(c + (size_t)i * ldc + p * PANEL, sum, (size_t)cols * sizeof *sum);
        }
    }
}

int qgemm_has_vnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
}

int qgemm_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}

const char *qgemm_kernel_name(void)
{
    return qgemm_has_vnni() ? "avx512_vnni" : qgemm_has_avx2() ? "avx2" : "c";
}

void qgemm_s32(int m, int n, int k, const uint8_t *a, int lda, const int8_t *packed, int32_t *c,
               int ldc)
{
    void (*kernel)(int, int, int, const uint8_t *, int, const int8_t *, int32_t *, int) =
        qgemm_has_vnni()   ? qgemm_s32_vnni
        : qgemm_has_avx2() ? qgemm_s32_avx2
                           : qgemm_s32_scalar;
    const int kp = qgemm_k_padded(k);
    const int tiles_m = (m + TILE_M - 1) / TILE_M, tiles_n = (n + TILE_N - 1) / TILE_N;
    const int tiles = tiles_m * tiles_n;
#pragma omp parallel for schedule(static) if ((double)m * n * k >= QGEMM_PARALLEL_MIN && tiles > 1)
    for (int t = 0; t < tiles; t++) {
        const int i0 = t / tiles_n * TILE_M, j0 = t % tiles_n * TILE_N;
        const int rows = m - i0 < TILE_M ? m - i0 : TILE_M,
                  cols = n - j0 < TILE_N ? n - j0 : TILE_N;
        kernel(rows, cols, k, a + (size_t)i0 * lda, lda, packed + (size_t)j0 * kp,
               c + (size_t)i0 * ldc + j0, ldc);
    }
}

size_t qgemm_work_bytes(int m, int n, int k)
{
    const size_t rows = (size_t)m * (size_t)qgemm_k_padded(k), cols = qgemm_cols_input_bytes(m, k);
    return (rows > cols ? rows : cols) + (size_t)m * (size_t)n * sizeof(int32_t);
}

/* a[m][kp] = the codes of x, whose element (i, g) is x[i*ldx + g] (rows) or x[g*ldx + i]
 * (cols); the pad stays zero. */
static void quantize_input(const float *x, int ldx, QLayout layout, int m, int k, int kp,
                           QuantParams xq, uint8_t *a)
{
    if (layout == QGEMM_ROWS) {
        for (int i = 0; i < m; i++) {
            uint8_t *row = a + (size_t)i * kp;
            for (int g = 0; g < k; g++)
                row[g] = quantize_u8(x[(size_t)i * ldx + g], xq);
            memset(row + k, 0, (size_t)(kp - k));
        }
        return;
    }
    /* Column-major: walk x in its own order, in blocks of rows so that writes stay in cache. */
    enum { BLOCK = 64 };
    for (int i0 = 0; i0 < m; i0 += BLOCK) {
        const int i1 = i0 + BLOCK < m ? i0 + BLOCK : m;
        for (int g = 0; g < k; g++) {
            const float *col = x + (size_t)g * ldx;
            for (int i = i0; i < i1; i++)
                a[(size_t)i * kp + g] = quantize_u8(col[i], xq);
        }
        for (int i = i0; i < i1; i++)
            memset(a + (size_t)i * kp + k, 0, (size_t)(kp - k));
    }
}

/* y = xq.scale * w->scales[j] * (c[i][j] - xq.zero_point * w->row_sums[j]), with c's element
 * (i, j) at c[i * ci + j * cj] and y's as y_layout says. */
static void dequantize(const QMatrix *w, QuantParams xq, int m, const int32_t *c, size_t ci,
                       size_t cj, float *y, int ldy, QLayout y_layout)
{
    for (int j = 0; j < w->n; j++) {
        const float scale = xq.scale * w->scales[j];
        const int32_t offset = xq.zero_point * w->row_sums[j];
        const int32_t *cj_ = c + (size_t)j * cj;
        if (y_layout == QGEMM_COLS) {
            float *yj = y + (size_t)j * ldy;
            for (int i = 0; i < m; i++)
                yj[i] = scale * (float)(cj_[(size_t)i * ci] - offset);
        } else {
            for (int i = 0; i < m; i++)
                y[(size_t)i * ldy + j] = scale * (float)(cj_[(size_t)i * ci] - offset);
        }
    }
}

void qgemm_float(const QMatrix *w, QuantParams xq, int m, const float *x, int ldx, QLayout x_layout,
                 float *y, int ldy, QLayout y_layout, void *work)
{
    const int n = w->n, k = w->k;
    /* A convolution's columns: the product in their layout, unless VNNI (64 products per
     * instruction, 4x vpmaddubsw's 32 with their reduction) is worth transposing them. */
    if (x_layout == QGEMM_COLS && !qgemm_has_vnni()) {
        uint8_t *xp = work;
        int32_t *c = (int32_t *)((unsigned char *)work + qgemm_work_bytes(m, n, k) -
                                 (size_t)m * n * sizeof(int32_t));
        qgemm_cols_quantize(x, ldx, m, k, xq, xp);
        qgemm_cols_s32(m, n, k, xp, w->padded, c, m);
        dequantize(w, xq, m, c, 1, (size_t)m, y, ldy, y_layout);
        return;
    }
    const int kp = qgemm_k_padded(k);
    uint8_t *a = work;
    int32_t *c = (int32_t *)(a + (size_t)m * kp);
    quantize_input(x, ldx, x_layout, m, k, kp, xq, a);
    qgemm_s32(m, n, k, a, kp, w->packed, c, n);
    dequantize(w, xq, m, c, (size_t)n, 1, y, ldy, y_layout);
}
