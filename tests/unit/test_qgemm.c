/* The int8 matrix product (backend/cpu/qgemm.h): every kernel against a plain integer reference on
 * the unpacked matrices, bit for bit, over edge sizes (k not a multiple of 4, partial panels and
 * row blocks), the convolution's product in its columns layout (backend/cpu/qgemm_cols.h) likewise,
 * and the quantization arithmetic (backend/cpu/quantize.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/qgemm.h"
#include "backend/cpu/qgemm_cols.h"
#include "backend/cpu/quantize.h"
#include "check.h"
#include "util/rng.h"

/* The VNNI kernel's source over C versions of the five intrinsics it uses, as Intel's manual
 * defines them: its blocking, panels and masks run on any CPU (the instruction itself is
 * tested by qgemm_s32_vnni where the CPU has it). */
typedef struct {
    int32_t lane[16];
} __m512i;
typedef uint16_t __mmask16;
static __m512i _mm512_setzero_si512(void)
{
    return (__m512i){{0}};
}
static __m512i _mm512_loadu_si512(const void *p)
{
    __m512i v;
    memcpy(&v, p, sizeof v);
    return v;
}
static __m512i _mm512_set1_epi32(int x)
{
    __m512i v;
    for (int i = 0; i < 16; i++)
        v.lane[i] = x;
    return v;
}
/* Lane i += sum over its 4 bytes t of u8(a) * s8(b) (vpdpbusd, wrapping). */
static __m512i _mm512_dpbusd_epi32(__m512i acc, __m512i a, __m512i b)
{
    const uint8_t *ua = (const uint8_t *)a.lane;
    const int8_t *sb = (const int8_t *)b.lane;
    for (int i = 0; i < 16; i++)
        for (int t = 0; t < 4; t++)
            acc.lane[i] += (int32_t)ua[4 * i + t] * sb[4 * i + t];
    return acc;
}
static void _mm512_mask_storeu_epi32(void *p, __mmask16 mask, __m512i v)
{
    for (int i = 0; i < 16; i++)
        if (mask >> i & 1)
            memcpy((int32_t *)p + i, &v.lane[i], sizeof v.lane[i]);
}
#define QGEMM_VNNI_EMULATED
#define qgemm_s32_vnni qgemm_s32_vnni_emulated
#include "../../src/backend/cpu/qgemm_vnni.c"
#undef qgemm_s32_vnni

/* c[i][j] = sum_k a[i][k] w[j][k] in int64, the definition. */
static void reference(int m, int n, int k, const uint8_t *a, int lda, const int8_t *w, int64_t *c)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int64_t s = 0;
            for (int g = 0; g < k; g++)
                s += (int64_t)a[(size_t)i * lda + g] * w[(size_t)j * k + g];
            c[(size_t)i * n + j] = s;
        }
}

typedef void (*Kernel)(int, int, int, const uint8_t *, int, const int8_t *, int32_t *, int);

/* Random a (extremes included) and w; every kernel's c equals the reference exactly. */
static void check_size(Rng *rng, int m, int n, int k)
{
    const int kp = qgemm_k_padded(k);
    uint8_t *a = malloc((size_t)m * kp);
    int8_t *w = malloc((size_t)n * k), *packed = malloc(qgemm_packed_bytes(n, k));
    int32_t *sums = malloc((size_t)n * sizeof *sums), *c = malloc((size_t)m * n * sizeof *c);
    int64_t *want = malloc((size_t)m * n * sizeof *want);
    for (int i = 0; i < m * kp; i++) /* the pad holds garbage: it must not count */
        a[i] = (uint8_t)(i % 7 == 0 ? 255 : rng_uniform(rng) * 256);
    for (int i = 0; i < n * k; i++)
        w[i] = (int8_t)(i % 5 == 0    ? -128
                        : i % 11 == 0 ? 127
                                      : (int)(rng_uniform(rng) * 256) - 128);
    reference(m, n, k, a, kp, w, want);
    qgemm_pack(w, n, k, packed, sums);
    for (int j = 0; j < n; j++) {
        int64_t s = 0;
        for (int g = 0; g < k; g++)
            s += w[(size_t)j * k + g];
        CHECK(sums[j] == s);
    }
    /* The dispatching qgemm_s32 (threaded tiles), the C kernel, the VNNI source over emulated
     * intrinsics, and the AVX2 and VNNI kernels where the CPU has them. */
    const Kernel kernels[] = {qgemm_s32, qgemm_s32_scalar, qgemm_s32_vnni_emulated, qgemm_s32_avx2,
                              qgemm_s32_vnni};
    const int runs[] = {1, 1, 1, qgemm_has_avx2(), qgemm_has_vnni()};
    for (int t = 0; t < 5; t++) {
        if (!runs[t])
            continue;
        for (int i = 0; i < m * n; i++)
            c[i] = 0x5A5A5A5A;
        kernels[t](m, n, k, a, kp, packed, c, n);
        int bad = 0;
        for (int i = 0; i < m * n; i++)
            bad += c[i] != want[i];
        if (bad)
            fprintf(stderr, "kernel %d, m=%d n=%d k=%d: %d of %d values differ\n", t, m, n, k, bad,
                    m * n);
        CHECK(bad == 0);
    }
    free(a), free(w), free(packed), free(sums), free(c), free(want);
}

static void test_kernels_match_integer_reference(void)
{
    Rng rng;
    rng_seed(&rng, 16, 0);
    const int sizes[][3] = {{1, 1, 1},    {3, 5, 7},     {4, 64, 64},   {5, 17, 9},
                            {9, 65, 130}, {70, 130, 75}, {1, 10, 3136}, {200, 32, 576}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_size(&rng, sizes[s][0], sizes[s][1], sizes[s][2]);
    printf("qgemm_s32 runs %s; avx512_vnni %s; avx2 %s\n", qgemm_kernel_name(),
           qgemm_has_vnni() ? "tested" : "absent: its kernel ran over emulated intrinsics",
           qgemm_has_avx2() ? "tested" : "absent");
}

typedef void (*ColsKernel)(int, int, int, int, const uint8_t *, const int8_t *, int32_t *, int);
typedef void (*ColsQuantizer)(const float *, int, int, int, QuantParams, uint8_t *);

/* x [k][ldx] floats (NaN, infinities, ties and out-of-range values included) and w [n][k]: both
 * quantizers give the same panels, which hold quantize_code of every element and zeros in the
 * pad; every kernel's c [n][m] equals the integer reference on those codes exactly, and
 * qgemm_cols_s32 (threaded) too. */
static void check_cols_size(Rng *rng, int m, int n, int k)
{
    const int ldx = m + 3, kp = qgemm_k_padded(k);
    const QuantParams xq = {0.25f, 17};
    float *x = malloc((size_t)k * ldx * sizeof *x);
    int8_t *w = malloc((size_t)n * k);
    int8_t *wp = malloc(qgemm_cols_weight_bytes(n, k));
    uint8_t *xp[2] = {malloc(qgemm_cols_input_bytes(m, k)), malloc(qgemm_cols_input_bytes(m, k))};
    uint8_t *a = malloc((size_t)m * k);
    int32_t *c = malloc((size_t)n * m * sizeof *c);
    int64_t *want = malloc((size_t)m * n * sizeof *want);
    const float special[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.125f, -4.125f, 27.625f};
    for (int i = 0; i < k * ldx; i++)
        x[i] = i % 9 == 0 ? special[i / 9 % 8] : 40 * rng_uniform(rng) - 10;
    for (int i = 0; i < n * k; i++)
        w[i] = (int8_t)(i % 5 == 0 ? -128 : (int)(rng_uniform(rng) * 256) - 128);
    qgemm_cols_pack(w, n, k, wp);
    for (int j = 0; j < n; j++) {
        int same = 1;
        for (int g = 0; g < kp; g++)
            same &= wp[(size_t)j * kp + g] == (g < k ? w[(size_t)j * k + g] : 0);
        CHECK(same);
    }
    const ColsQuantizer quantizers[] = {qgemm_cols_quantize_scalar, qgemm_cols_quantize_avx2};
    const size_t values = qgemm_cols_input_bytes(m, k);
    for (int q = 0; q < 1 + qgemm_has_avx2(); q++) {
        memset(xp[q], 0x5A, values);
        quantizers[q](x, ldx, m, k, xq, xp[q]);
    }
    if (qgemm_has_avx2())
        CHECK(memcmp(xp[0], xp[1], values) == 0);
    const int groups = kp / 4, panels = (m + 15) / 16;
    int bad_codes = 0;
    for (int p = 0; p < panels; p++)
        for (int K = 0; K < groups; K++)
            for (int i = 0; i < 16; i++)
                for (int t = 0; t < 4; t++) {
                    const int g = 4 * K + t, col = 16 * p + i;
                    const int code =
                        g < k && col < m ? quantize_code(x[(size_t)g * ldx + col], 4.0f, 17) : 0;
                    bad_codes += xp[0][(((size_t)p * groups + K) * 16 + i) * 4 + t] != code;
                    if (g < k && col < m)
                        a[(size_t)col * k + g] = (uint8_t)code;
                }
    CHECK(bad_codes == 0);
    reference(m, n, k, a, k, w, want);
    const ColsKernel kernels[] = {qgemm_cols_s32_scalar, qgemm_cols_s32_avx2};
    for (int t = 0; t < 3; t++) {
        if (t == 1 && !qgemm_has_avx2())
            continue;
        for (int i = 0; i < m * n; i++)
            c[i] = 0x5A5A5A5A;
        if (t < 2)
            kernels[t](0, m, n, k, xp[0], wp, c, m);
        else
            qgemm_cols_s32(m, n, k, xp[0], wp, c, m);
        int bad = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                bad += c[(size_t)j * m + i] != want[(size_t)i * n + j];
        if (bad)
            fprintf(stderr, "cols kernel %d, m=%d n=%d k=%d: %d of %d values differ\n", t, m, n, k,
                    bad, m * n);
        CHECK(bad == 0);
    }
    free(x), free(w), free(wp), free(xp[0]), free(xp[1]), free(a), free(c), free(want);
}

/* Odd sizes: k not a multiple of 4 (a partly filled last group), m not a multiple of 16 (a
 * partial panel), channel counts that leave partial blocks of 4; and products large enough to
 * be threaded. */
static void test_cols_kernels_match_integer_reference(void)
{
    Rng rng;
    rng_seed(&rng, 17, 0);
    const int sizes[][3] = {{1, 1, 1},    {3, 5, 7},      {16, 6, 2},    {17, 7, 9},
                            {33, 13, 27}, {49, 128, 577}, {200, 20, 75}, {784, 32, 288}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_cols_size(&rng, sizes[s][0], sizes[s][1], sizes[s][2]);
}

/* quantize_code clamps before rounding, to even on ties; NaN gives 0. */
static void test_code_rounding(void)
{
    CHECK(quantize_code(0.5f, 1.0f, 0) == 0 && quantize_code(1.5f, 1.0f, 0) == 2);
    CHECK(quantize_code(2.5f, 1.0f, 10) == 12 && quantize_code(-0.5f, 1.0f, 10) == 10);
    CHECK(quantize_code(NAN, 1.0f, 10) == 0 && quantize_code(-INFINITY, 1.0f, 10) == 0);
    CHECK(quantize_code(INFINITY, 1.0f, 10) == 127 && quantize_code(126.5f, 1.0f, 0) == 126);
}

/* The grid holds 0 exactly and spans the range: min and max land on codes 0 and 127. */
static void test_activation_grid(void)
{
    const QuantParams p = quant_params_u8(-1.0f, 3.0f);
    CHECK_NEAR(p.scale, 4.0 / 127, 1e-9);
    CHECK(p.zero_point == 32); /* round(1 / (4/127)) = round(31.75) */
    CHECK(quantize_u8(0.0f, p) == 32);
    CHECK(quantize_u8(-1.0f, p) == 0);
    CHECK(quantize_u8(3.0f, p) == 127);
    CHECK(quantize_u8(100.0f, p) == 127);
    const QuantParams pos = quant_params_u8(0.5f, 2.0f); /* widened to [0, 2] */
    CHECK(pos.zero_point == 0);
    CHECK_NEAR(pos.scale, 2.0 / 127, 1e-9);
    const QuantParams zero = quant_params_u8(0.0f, 0.0f);
    CHECK(zero.scale == 1.0f && zero.zero_point == 0);
}

/* Per row: the largest magnitude maps to +-127, an all-zero row to zeros with scale 1. */
static void test_weight_grid(void)
{
    const float w[] = {0.5f, -1.0f, 0.25f, 0, 0, 0, 2.0f, 1.0f, -0.01f};
    int8_t q[9];
    float scale[3];
    quantize_weights_s8(w, 3, 3, q, scale);
    CHECK_NEAR(scale[0], 1.0 / 127, 1e-9);
    CHECK(q[0] == 64 && q[1] == -127 && q[2] == 32); /* 63.5 rounds away from 0 */
    CHECK(scale[1] == 1.0f && q[3] == 0 && q[4] == 0 && q[5] == 0);
    CHECK(q[6] == 127 && q[7] == 64 && q[8] == -1);
}

int main(void)
{
    test_kernels_match_integer_reference();
    test_cols_kernels_match_integer_reference();
    test_code_rounding();
    test_activation_grid();
    test_weight_grid();
    return check_report("test_qgemm");
}
