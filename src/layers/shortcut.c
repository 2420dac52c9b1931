/* [shortcut]: residual sum, out = act(alpha * prev + beta * from), as darknet.
 *
 *   prev [batch][c2][h2][w2]   the previous layer; also the output shape
 *   from [batch][c1][h1][w1]   the layer named by from=
 *   out  [batch][c2][h2][w2]
 *
 * When the shapes differ, darknet's mapping applies: per axis, a larger `from` is read
 * with stride w1/w2, a smaller one is written every w2/w1 outputs; only the first
 * min(c1, c2) channels are summed. Unlike darknet, alpha scales every output value,
 * not only those that receive a `from` value (the same when alpha = 1, the default),
 * and each axis has its own ratio where darknet asserts they agree. */
#include <stdio.h>
#include <string.h>

#include "core/net.h"
#include "core/onnx_graph.h"

/* Below this many values a parallel region costs more than it saves. */
#define SHORTCUT_PARALLEL_MIN 65536

typedef struct Shortcut {
    float alpha, beta;
    Shape from; /* the shape of input 1 (`from`) */
} Shortcut;

/* The index mapping between `from` (shape a) and the output (shape o). */
typedef struct Mapping {
    int channels, rows, cols;       /* loop extents: the smaller of the two shapes */
    int stride_h, stride_w;         /* step through `from` */
    int sample_h, sample_w;         /* step through the output */
    int from_w, out_w;              /* row lengths */
    size_t from_plane, out_plane;   /* h*w of each */
    size_t from_sample, out_sample; /* c*h*w of each */
} Mapping;

static int ratio(int num, int den)
{
    return num / den > 1 ? num / den : 1;
}

static Mapping mapping_of(Shape a, Shape o)
{
    Mapping m;
    m.channels = a.c < o.c ? a.c : o.c;
    m.rows = a.h < o.h ? a.h : o.h;
    m.cols = a.w < o.w ? a.w : o.w;
    m.stride_h = ratio(a.h, o.h);
    m.stride_w = ratio(a.w, o.w);
    m.sample_h = ratio(o.h, a.h);
    m.sample_w = ratio(o.w, a.w);
    m.from_w = a.w;
    m.out_w = o.w;
    m.from_plane = (size_t)a.h * a.w;
    m.out_plane = (size_t)o.h * o.w;
    m.from_sample = shape_size(a);
    m.out_sample = shape_size(o);
    return m;
}

static int same_shape(Shape a, Shape b)
{
    return a.c == b.c && a.h == b.h && a.w == b.w;
}

static int shortcut_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int from;
    float alpha, beta;
    int st = cfg_get_int(cfg, s, "from", 0, &from, e);
    st = st ? st : layer_parse_activation(l, cfg, s, CDL_ACT_LINEAR, e);
    st = st ? st : cfg_get_float(cfg, s, "alpha", 1.0f, &alpha, e);
    st = st ? st : cfg_get_float(cfg, s, "beta", 1.0f, &beta, e);
    if (st)
        return st;
    const CfgEntry *en = cfg_find(s, "from");
    if (!en)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d [%s] needs key 'from'", cfg->path, s->line,
                         l->index, s->name);
    int index = from < 0 ? l->index + from : from;
    if (index < 0 || index >= l->index) {
        if (l->index == 0)
            return error_set(e, CDL_EUSAGE,
                             "%s: layer 0 [%s]: from=%d: there is no earlier layer to add",
                             cfg_where(cfg, s, en).text, s->name, from);
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s]: from=%d names layer %d, not an earlier layer "
                         "(0..%d, or -1..-%d)",
                         cfg_where(cfg, s, en).text, l->index, s->name, from, index, l->index - 1,
                         l->index);
    }
    l->inputs[1] = index;
    l->n_inputs = 2;
    l->out_shape = l->in_shape;
    const Shape fs = net->layers[index].out_shape;
    if (net->seq > 0 && !same_shape(fs, l->out_shape))
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s]: in a sequence net the layers added must have one "
                         "shape (layer %d is %dx%dx%d, the input %dx%dx%d)",
                         cfg_where(cfg, s, en).text, l->index, s->name, index, fs.c, fs.h, fs.w,
                         l->out_shape.c, l->out_shape.h, l->out_shape.w);
    l->flops = 2.0 * (double)shape_size(l->out_shape);
    Shortcut *sc = l->priv;
    sc->alpha = alpha;
    sc->beta = beta;
    sc->from = fs;
    return CDL_OK;
}

static Shape from_shape(const Layer *l)
{
    return ((const Shortcut *)l->priv)->from;
}

static void shortcut_forward(Layer *l, const StepContext *ctx)
{
    if (l->sum_from && !ctx->train) /* its input 0's forward wrote the output */
        return;
    const Shortcut *sc = l->priv;
    const float *prev = l->in[0];
    const float *from = l->in[1];
    float *out = layer_activation_input(l);
    float alpha = sc->alpha, beta = sc->beta;
    size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    Shape fs = from_shape(l);
    if (same_shape(fs, l->out_shape)) {
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            out[i] = alpha * prev[i] + beta * from[i];
    } else {
        Mapping m = mapping_of(fs, l->out_shape);
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
    Shape fs = from_shape(l);
    /* A delta the net left unzeroed (Layer.in_delta_fresh) is written, not added to; one input
     * twice (the same delta) is written once and added to once. */
    const int fresh0 = prev_delta && l->in_delta_fresh[0];
    const int fresh1 = from_delta && l->in_delta_fresh[1] && from_delta != prev_delta;
    const int same = same_shape(fs, l->out_shape);
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
    Mapping m = mapping_of(fs, l->out_shape);
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

/* ONNX: value = op(value, int64 vector), the result named "layer<i>.<suffix>" and the
 * vector "layer<i>.<suffix>.arg". */
static void shortcut_onnx_op(OnnxGraph *g, const Layer *l, const char *op, const char *suffix,
                             int n, const int64_t *arg, char value[ONNX_NAME_MAX])
{
    char out[ONNX_NAME_MAX], konst[ONNX_NAME_MAX + 4];
    onnx_name(out, l, suffix);
    snprintf(konst, sizeof konst, "%s.arg", out);
    onnx_int64s(g, konst, n, arg);
    onnx_node(g, op, 2, (const char *[]){value, konst}, out, 0, NULL);
    memcpy(value, out, ONNX_NAME_MAX);
}

/* ONNX: value = factor * value, named "layer<i>.<suffix>". */
static void shortcut_onnx_scale(OnnxGraph *g, const Layer *l, const char *suffix, float factor,
                                char value[ONNX_NAME_MAX])
{
    char out[ONNX_NAME_MAX], konst[ONNX_NAME_MAX + 7];
    onnx_name(out, l, suffix);
    snprintf(konst, sizeof konst, "%s.factor", out);
    onnx_scalar(g, konst, factor);
    onnx_node(g, "Mul", 2, (const char *[]){value, konst}, out, 0, NULL);
    memcpy(value, out, ONNX_NAME_MAX);
}

/* ONNX for the shape-changing mapping: value, `from` [N][c1][h1][w1], becomes beta * from
 * mapped onto the output [N][c2][h2][w2] with zeros elsewhere. Slice with steps takes the
 * strided channels, rows and columns; a Reshape to rank 6, Pad and Reshape back spread them
 * every sample_h rows and sample_w columns; a last Pad adds the missing channels, rows and
 * columns. */
static void shortcut_onnx_mapping(OnnxGraph *g, const Layer *l, Mapping m, float beta,
                                  char value[ONNX_NAME_MAX])
{
    char out[ONNX_NAME_MAX], arg[4][ONNX_NAME_MAX + 7];
    const int64_t starts[] = {0, 0, 0}, axes[] = {1, 2, 3}, steps[] = {1, m.stride_h, m.stride_w};
    const int64_t ends[] = {m.channels, (int64_t)m.rows * m.stride_h, (int64_t)m.cols * m.stride_w};
    const int64_t *const args[] = {starts, ends, axes, steps};
    const char *const arg_names[] = {"starts", "ends", "axes", "steps"};
    onnx_name(out, l, "from_sliced");
    for (int k = 0; k < 4; k++) {
        snprintf(arg[k], sizeof arg[k], "%s.%s", out, arg_names[k]);
        onnx_int64s(g, arg[k], 3, args[k]);
    }
    onnx_node(g, "Slice", 5, (const char *[]){value, arg[0], arg[1], arg[2], arg[3]}, out, 0, NULL);
    memcpy(value, out, ONNX_NAME_MAX);
    if (beta != 1.0f)
        shortcut_onnx_scale(g, l, "from_scaled", beta, value);

    const int64_t spread_h = (int64_t)m.rows * m.sample_h, spread_w = (int64_t)m.cols * m.sample_w;
    if (m.sample_h > 1 || m.sample_w > 1) {
        const int64_t rank6[] = {0, m.channels, m.rows, 1, m.cols, 1};
        const int64_t gaps[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, m.sample_h - 1, 0, m.sample_w - 1};
        const int64_t spread[] = {0, m.channels, spread_h, spread_w};
        shortcut_onnx_op(g, l, "Reshape", "from_rank6", 6, rank6, value);
        shortcut_onnx_op(g, l, "Pad", "from_gapped", 12, gaps, value);
        shortcut_onnx_op(g, l, "Reshape", "from_spread", 4, spread, value);
    }
    const Shape o = l->out_shape;
    const int64_t fill[] = {0, 0, 0, 0, 0, o.c - m.channels, o.h - spread_h, o.w - spread_w};
    if (fill[5] || fill[6] || fill[7])
        shortcut_onnx_op(g, l, "Pad", "from_mapped", 8, fill, value);
}

/* out = act(alpha * prev + beta * from), from mapped as darknet when the shapes differ. */
static int shortcut_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net;
    const Shortcut *sc = l->priv;
    char prev[ONNX_NAME_MAX], from[ONNX_NAME_MAX], pre[ONNX_NAME_MAX];
    const Shape fs = from_shape(l);
    if (g->sequence && !same_shape(fs, l->out_shape))
        return error_set(
            e, CDL_EUSAGE,
            "layer %d [shortcut]: a sum of differently shaped inputs in a sequence net "
            "is not exported",
            l->index);
    onnx_input_nchw(g, l, 0, prev);
    onnx_input_nchw(g, l, 1, from);
    if (!same_shape(fs, l->out_shape))
        shortcut_onnx_mapping(g, l, mapping_of(fs, l->out_shape), sc->beta, from);
    else if (sc->beta != 1.0f)
        shortcut_onnx_scale(g, l, "from_scaled", sc->beta, from);
    if (sc->alpha != 1.0f)
        shortcut_onnx_scale(g, l, "prev_scaled", sc->alpha, prev);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    onnx_node(g, "Add", 2, (const char *[]){prev, from}, pre, 0, NULL);
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

/* Equal shapes add value by value in any layout: inputs and output in nChw8c together
 * (LayerKernels.layout). */
static int shortcut_layout(const Layer *l, int k)
{
    (void)k;
    return same_shape(from_shape(l), l->out_shape) ? LAYOUT_TIED : LAYOUT_PLAIN;
}

/* out = act(prev + from) (LayerKernels.plain_sum). */
static int shortcut_plain_sum(const Layer *l)
{
    const Shortcut *sc = l->priv;
    return sc->alpha == 1.0f && sc->beta == 1.0f && same_shape(from_shape(l), l->out_shape);
}

const LayerType shortcut_layer = {
    .name = "shortcut",
    .priv_size = sizeof(Shortcut),
    .parse = shortcut_parse,
    .writes_input_delta = 1,
    .export_onnx = shortcut_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_shortcut_kernels = {
    .layout = shortcut_layout,
    .plain_sum = shortcut_plain_sum,
    .forward = shortcut_forward,
    .backward = shortcut_backward,
    .forward_at = shortcut_forward_at,
};
