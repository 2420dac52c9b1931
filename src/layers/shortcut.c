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
#include <stdlib.h>

#include "core/net.h"

/* Below this many values a parallel region costs more than it saves. */
#define SHORTCUT_PARALLEL_MIN 65536

typedef struct Shortcut {
    float alpha, beta;
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
                             "%s:%d: layer 0 [%s]: from=%d: there is no earlier layer to add",
                             cfg->path, en->line, s->name, from);
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s]: from=%d names layer %d, not an earlier layer "
                         "(0..%d, or -1..-%d)",
                         cfg->path, en->line, l->index, s->name, from, index, l->index - 1,
                         l->index);
    }
    l->inputs[1] = index;
    l->n_inputs = 2;
    l->out_shape = l->in_shape;
    l->flops = 2.0 * (double)shape_size(l->out_shape);
    Shortcut *sc = calloc(1, sizeof *sc);
    if (!sc)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    sc->alpha = alpha;
    sc->beta = beta;
    l->priv = sc;
    (void)net;
    return CDL_OK;
}

static Shape from_shape(const Layer *l, const Net *net)
{
    return net->layers[l->inputs[1]].out_shape;
}

static int same_shape(Shape a, Shape b)
{
    return a.c == b.c && a.h == b.h && a.w == b.w;
}

static void shortcut_forward(Layer *l, Net *net)
{
    const Shortcut *sc = l->priv;
    const float *prev = net_layer_input(net, l, 0);
    const float *from = net_layer_input(net, l, 1);
    float *out = layer_activation_input(l);
    float alpha = sc->alpha, beta = sc->beta;
    size_t n = (size_t)net->batch * shape_size(l->out_shape);
    Shape fs = from_shape(l, net);
    if (same_shape(fs, l->out_shape)) {
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            out[i] = alpha * prev[i] + beta * from[i];
    } else {
        Mapping m = mapping_of(fs, l->out_shape);
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            out[i] = alpha * prev[i];
        int planes = net->batch * m.channels;
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
    layer_activate(l, net->batch);
}

static void shortcut_backward(Layer *l, Net *net)
{
    const Shortcut *sc = l->priv;
    layer_activation_backward(l, net->batch);
    const float *delta = l->delta;
    float alpha = sc->alpha, beta = sc->beta;
    size_t n = (size_t)net->batch * shape_size(l->out_shape);
    float *prev_delta = net_layer_input_delta(net, l, 0);
    if (prev_delta) {
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            prev_delta[i] += alpha * delta[i];
    }
    float *from_delta = net_layer_input_delta(net, l, 1);
    if (!from_delta)
        return;
    Shape fs = from_shape(l, net);
    if (same_shape(fs, l->out_shape)) {
#pragma omp parallel for schedule(static) if (n > SHORTCUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            from_delta[i] += beta * delta[i];
        return;
    }
    /* The transpose of the forward mapping; distinct outputs read distinct inputs. */
    Mapping m = mapping_of(fs, l->out_shape);
    int planes = net->batch * m.channels;
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

static void shortcut_destroy(Layer *l)
{
    free(l->priv);
    l->priv = NULL;
}

const LayerType shortcut_layer = {
    .name = "shortcut",
    .parse = shortcut_parse,
    .forward = shortcut_forward,
    .backward = shortcut_backward,
    .destroy = shortcut_destroy,
};
