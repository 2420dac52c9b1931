/* [shortcut]'s CPU kernels (layers/shortcut.c has its meaning): out = act(alpha * prev + beta *
 * from), from mapped as darknet when the shapes differ (ShortcutMapping).
 *
 *   prev [batch][c2][h2][w2]   the previous layer; also the output shape ([batch][h2][w2][c2],
 *                              float32 nhwc, with Layer.nhwc_from: a convolution's own layout
 *                              on oneDNN, a ResNet block's last one; layer_nhwc_in)
 *   from [batch][c1][h1][w1]   the layer named by from=
 *   out  [batch][c2][h2][w2]
 */
#include "layers/shortcut.h"

#include <string.h>

#include "backend/cpu/lanes16.h"
#include "backend/cpu/transpose16.h"
#include "backend/cpu/transpose8.h"

/* Below this many values a parallel region costs more than it saves. */
#define SHORTCUT_PARALLEL_MIN 65536

/* Channels per tile of shortcut_forward_nhwc: 16 with AVX-512, 8 with AVX2 and FMA; no nhwc
 * kernel otherwise. */
#if defined(__AVX512F__)
#define SHORTCUT_TILE 16
#elif defined(__AVX2__) && defined(__FMA__)
#define SHORTCUT_TILE 8
#else
#define SHORTCUT_TILE 0
#endif

#if SHORTCUT_TILE
/* Positions per block of shortcut_forward_nhwc: a block of prev, [NHWC_BLOCK][c], stays in the
 * L2 cache while its TILE-channel slices are transposed, and each channel's plane is written and
 * read NHWC_BLOCK floats at a time (few pages touched per row, unlike whole planes a slice at a
 * time, which ran resnet50's 256-channel shortcuts at twice a plain add's time). */
#define NHWC_BLOCK 256

/* One tile: `lanes` channels (<= TILE) at positions s0..s0+rows (rows <= TILE), p at prev's
 * [s0][first channel] (rows c apart), f and o at from's and out's [first channel][s0] (planes
 * spatial apart). vmaxps(floor, y) returns its second operand, y, where either is NaN or both are
 * zeros: with floor -inf it passes y as it is, with floor 0 it is y < 0 ? 0 : y (NaN and -0
 * kept), the relu of activation_forward. */
static inline void shortcut_tile(const Shortcut *sc, const float *p, size_t c, const float *f,
                                 float *o, size_t spatial, size_t lanes, size_t rows, int relu)
{
#if defined(__AVX512F__)
    const __m512 alpha = _mm512_set1_ps(sc->alpha), beta = _mm512_set1_ps(sc->beta);
    const __m512 floor = _mm512_set1_ps(relu ? 0.0f : -__builtin_inff());
    const __mmask16 channels = lanes16((long)lanes), valid = lanes16((long)rows);
    __m512 r[16];
    for (size_t s = 0; s < 16; s++)
        r[s] = s < rows ? _mm512_maskz_loadu_ps(channels, p + s * c) : _mm512_setzero_ps();
    transpose16(r);
    for (size_t k = 0; k < lanes; k++) {
        const __m512 y = _mm512_maskz_loadu_ps(valid, f + k * spatial);
        const __m512 sum = _mm512_fmadd_ps(alpha, r[k], _mm512_mul_ps(beta, y));
        _mm512_mask_storeu_ps(o + k * spatial, valid, _mm512_max_ps(floor, sum));
    }
#else
    const __m256 alpha = _mm256_set1_ps(sc->alpha), beta = _mm256_set1_ps(sc->beta);
    const __m256 floor = _mm256_set1_ps(relu ? 0.0f : -__builtin_inff());
    const __m256i channels = lanes8((long)lanes), valid = lanes8((long)rows);
    __m256 r[8];
    /* plain loads where whole (a masked one costs more on Zen 3) */
    for (size_t s = 0; s < 8; s++)
        r[s] = s >= rows    ? _mm256_setzero_ps()
               : lanes == 8 ? _mm256_loadu_ps(p + s * c)
                            : _mm256_maskload_ps(p + s * c, channels);
    transpose8(r);
    for (size_t k = 0; k < lanes; k++) {
        const __m256 y = rows == 8 ? _mm256_loadu_ps(f + k * spatial)
                                   : _mm256_maskload_ps(f + k * spatial, valid);
        const __m256 sum =
            _mm256_max_ps(floor, _mm256_fmadd_ps(alpha, r[k], _mm256_mul_ps(beta, y)));
        if (rows == 8)
            _mm256_storeu_ps(o + k * spatial, sum);
        else
            store_first8(o + k * spatial, sum, (long)rows);
    }
#endif
}

/* out = alpha * prev + beta * from of equal shapes, then relu where relu is 1, prev
 * [batch][spatial][c] (nhwc) and from, out [batch][c][spatial]: prev transposed a tile at a time
 * (transpose16, transpose8) as it is added, instead of a reorder of prev into NCHW before; a last
 * tile of fewer channels (24, 40: mobilenet_v3's, efficientnet's, with AVX-512) loaded masked;
 * relu applied as each tile is stored, not in a pass over the output after. */
static void shortcut_forward_nhwc(const Shortcut *sc, const float *prev, const float *from,
                                  float *out, int batch, int c, size_t spatial, int relu)
{
    const size_t blocks = (spatial + NHWC_BLOCK - 1) / NHWC_BLOCK;
    const size_t n = (size_t)batch * (size_t)c * spatial;
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
    for (size_t t = 0; t < (size_t)batch * blocks; t++) {
        const size_t b = t / blocks, first = t % blocks * NHWC_BLOCK;
        const size_t end = first + NHWC_BLOCK < spatial ? first + NHWC_BLOCK : spatial;
        for (size_t c0 = 0; c0 < (size_t)c; c0 += SHORTCUT_TILE) {
            const float *p = prev + b * (size_t)c * spatial + c0;
            const float *f = from + (b * (size_t)c + c0) * spatial;
            float *o = out + (b * (size_t)c + c0) * spatial;
            const size_t lanes = (size_t)c - c0 < SHORTCUT_TILE ? (size_t)c - c0 : SHORTCUT_TILE;
            for (size_t s0 = first; s0 < end; s0 += SHORTCUT_TILE) {
                const size_t rows = end - s0 < SHORTCUT_TILE ? end - s0 : SHORTCUT_TILE;
                shortcut_tile(sc, p + s0 * (size_t)c, (size_t)c, f + s0, o + s0, spatial, lanes,
                              rows, relu);
            }
        }
    }
}
#endif

static void shortcut_forward(Layer *l, const StepContext *ctx)
{
    if (l->sum_from && !ctx->train) /* its input 0's forward wrote the output */
        return;
    const Shortcut *sc = l->priv;
#if SHORTCUT_TILE
    if (layer_nhwc_in(l, ctx)) { /* an inference forward of equal shapes (shortcut_takes_nhwc) */
        const Shape o = l->out_shape;
        const int fused = l->activation == CDL_ACT_RELU || l->activation == CDL_ACT_LINEAR;
        shortcut_forward_nhwc(sc, l->in[0], l->in[1], fused ? l->out : layer_activation_input(l),
                              ctx->batch, o.c, (size_t)o.h * o.w, l->activation == CDL_ACT_RELU);
        if (!fused)
            layer_activate(l, ctx->batch);
        return;
    }
#endif
    const float *prev = l->in[0];
    const float *from = l->in[1];
    float *out = layer_activation_input(l);
    float alpha = sc->alpha, beta = sc->beta;
    size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    Shape fs = shortcut_from_shape(l);
    if (shortcut_same_shape(fs, l->out_shape)) {
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            out[i] = alpha * prev[i] + beta * from[i];
    } else {
        ShortcutMapping m = shortcut_mapping(fs, l->out_shape);
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            out[i] = alpha * prev[i];
        int planes = ctx->batch * m.channels;
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (int p = 0; p < planes; p++) {
            int b = p / m.channels, k = p % m.channels;
            const float *src = from + b * m.from_sample + k * m.from_plane;
            float *dst = out + b * m.out_sample + k * m.out_plane;
            for (int j = 0; j < m.rows; j++)
                for (int i = 0; i < m.cols; i++)
                    dst[(size_t)j * m.sample_h * m.out_w + (size_t)i * m.sample_w] +=
                        beta * src[(size_t)j * m.stride_h * m.from_w + (size_t)i * m.stride_w];
        }
    }
    layer_activate(l, ctx->batch);
}

/* Row t of every sample, for sequence nets, whose shortcuts join equal shapes (parse checks). */
static void shortcut_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const Shortcut *sc = l->priv;
    const float *prev = l->in[0];
    const float *from = l->in[1];
    float *out = layer_activation_input(l);
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    for (int b = 0; b < ctx->batch; b++)
        for (size_t i = (size_t)b * sample + (size_t)t * row, end = i + row; i < end; i++)
            out[i] = sc->alpha * prev[i] + sc->beta * from[i];
    layer_activate_row(l, ctx->batch, t);
}

/* dst[i] = (fresh ? 0 : dst[i]) + a * src[i] for i < n. */
static void add_scaled(float *restrict dst, const float *restrict src, float a, size_t n, int fresh)
{
    if (fresh) {
#pragma omp parallel for simd schedule(static) if (parallel : n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            dst[i] = 0.0f + a * src[i];
        return;
    }
#pragma omp parallel for simd schedule(static) if (parallel : n > SHORTCUT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] += a * src[i];
}

/* add_scaled into p (alpha, fresh0) and f (beta, fresh1), two tensors apart, in one pass. */
static void add_both(float *restrict p, float *restrict f, const float *restrict d, float alpha,
                     float beta, size_t n, int fresh0, int fresh1)
{
    const float keep0 = fresh0 ? 0.0f : 1.0f, keep1 = fresh1 ? 0.0f : 1.0f;
#pragma omp parallel for simd schedule(static) if (parallel : n > SHORTCUT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) {
        p[i] = (keep0 != 0.0f ? p[i] : 0.0f) + alpha * d[i];
        f[i] = (keep1 != 0.0f ? f[i] : 0.0f) + beta * d[i];
    }
}

static void shortcut_backward(Layer *l, const StepContext *ctx)
{
    const Shortcut *sc = l->priv;
    layer_activation_backward(l, ctx->batch);
    const float *delta = l->delta;
    float alpha = sc->alpha, beta = sc->beta;
    size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    float *prev_delta = l->in_delta[0], *from_delta = l->in_delta[1];
    Shape fs = shortcut_from_shape(l);
    /* A delta the net left unzeroed (Layer.in_delta_fresh) is written, not added to; one input
     * twice (the same delta) is written once and added to once. */
    const int fresh0 = prev_delta && l->in_delta_fresh[0];
    const int fresh1 = from_delta && l->in_delta_fresh[1] && from_delta != prev_delta;
    const int same = shortcut_same_shape(fs, l->out_shape);
    if (same && prev_delta && from_delta && prev_delta != from_delta) {
        add_both(prev_delta, from_delta, delta, alpha, beta, n, fresh0, fresh1);
        return;
    }
    if (prev_delta)
        add_scaled(prev_delta, delta, alpha, n, fresh0);
    if (!from_delta)
        return;
    if (same) {
        add_scaled(from_delta, delta, beta, n, fresh1);
        return;
    }
    if (fresh1)
        memset(from_delta, 0, (size_t)ctx->batch * shape_size(fs) * sizeof *from_delta);
    /* The transpose of the forward mapping; distinct outputs read distinct inputs. */
    ShortcutMapping m = shortcut_mapping(fs, l->out_shape);
    int planes = ctx->batch * m.channels;
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
    for (int p = 0; p < planes; p++) {
        int b = p / m.channels, k = p % m.channels;
        float *dst = from_delta + b * m.from_sample + k * m.from_plane;
        const float *src = delta + b * m.out_sample + k * m.out_plane;
        for (int j = 0; j < m.rows; j++)
            for (int i = 0; i < m.cols; i++)
                dst[(size_t)j * m.stride_h * m.from_w + (size_t)i * m.stride_w] +=
                    beta * src[(size_t)j * m.sample_h * m.out_w + (size_t)i * m.sample_w];
    }
}

/* Equal shapes add value by value in any layout: inputs and output in nChw8c together
 * (LayerKernels.layout). */
static int shortcut_layout(const Layer *l, int k)
{
    (void)k;
    return shortcut_same_shape(shortcut_from_shape(l), l->out_shape) ? LAYOUT_TIED : LAYOUT_PLAIN;
}

/* out = act(prev + from) (LayerKernels.plain_sum). */
static int shortcut_plain_sum(const Layer *l)
{
    const Shortcut *sc = l->priv;
    return sc->alpha == 1.0f && sc->beta == 1.0f &&
           shortcut_same_shape(shortcut_from_shape(l), l->out_shape);
}

/* Equal shapes, in a build for AVX-512 or AVX2 and FMA: shortcut_forward_nhwc. */
static int shortcut_takes_nhwc(const Layer *l)
{
#if SHORTCUT_TILE
    return shortcut_same_shape(shortcut_from_shape(l), l->out_shape);
#else
    (void)l;
    return 0;
#endif
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_shortcut_kernels = {
    .layout = shortcut_layout,
    .plain_sum = shortcut_plain_sum,
    .forward = shortcut_forward,
    .backward = shortcut_backward,
    .forward_at = shortcut_forward_at,
    .takes_nhwc = shortcut_takes_nhwc,
};
