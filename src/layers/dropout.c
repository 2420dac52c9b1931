/* [dropout]: inverted dropout. In training each value is dropped with `probability`
 * and the kept ones are scaled by 1/(1-probability), so evaluation is the identity.
 *
 *   in, out [batch][c][h][w]
 *
 * The mask is drawn from (net seed, draw_id, layer index) at every training forward:
 * the same pass id redraws the same mask, whatever the thread count. */
#include <stdlib.h>
#include <string.h>

#include "core/net.h"
#include "core/onnx_graph.h"

/* Below this many values a parallel region costs more than it saves. */
#define DROPOUT_PARALLEL_MIN 65536

typedef struct Dropout {
    float probability;
    float scale;       /* 1 / (1 - probability) */
    float *mask;       /* [batch][c][h][w]: 0 or scale */
    int mask_is_valid; /* the last forward applied the mask (training) */
} Dropout;

static int dropout_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    float p;
    int st = cfg_get_float(cfg, s, "probability", 0.5f, &p, e);
    if (st)
        return st;
    if (!(p >= 0.0f && p < 1.0f))
        return cfg_bad_value(cfg, s, "probability", e, "expected a number in [0, 1)");
    l->out_shape = l->in_shape;
    l->flops = (double)shape_size(l->in_shape);
    Dropout *d = calloc(1, sizeof *d);
    if (!d)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    d->probability = p;
    d->scale = 1.0f / (1.0f - p);
    l->priv = d;
    return CDL_OK;
}

static int dropout_resize(Layer *l, int batch, Error *e)
{
    Dropout *d = l->priv;
    free(d->mask);
    d->mask = malloc((size_t)batch * shape_size(l->out_shape) * sizeof *d->mask);
    d->mask_is_valid = 0;
    if (!d->mask)
        return error_set(e, CDL_ERUNTIME, "out of memory for dropout layer %d", l->index);
    return CDL_OK;
}

static void dropout_forward(Layer *l, Net *net)
{
    Dropout *d = l->priv;
    const float *in = net_layer_input(net, l, 0);
    size_t n = (size_t)net->batch * shape_size(l->out_shape);
    d->mask_is_valid = net->train && d->probability > 0;
    if (!d->mask_is_valid) {
        memcpy(l->out, in, n * sizeof *l->out);
        return;
    }
    /* Value i's draw is computed directly from i, so the loop vectorises and splits across
     * threads with the same mask for any thread count. */
    const uint64_t key = rng_key(net->seed, (net->draw_id << 16) ^ (uint64_t)l->index);
    float *mask = d->mask, *out = l->out;
    float p = d->probability, scale = d->scale;
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) {
        mask[i] = rng_uniform_at(key, i) < p ? 0.0f : scale;
        out[i] = in[i] * mask[i];
    }
}

/* Inference: row t passes through (sequence nets). */
static void dropout_forward_at(Layer *l, Net *net, int t)
{
    const float *in = net_layer_input(net, l, 0);
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    for (int b = 0; b < net->batch; b++) {
        const size_t at = (size_t)b * sample + (size_t)t * row;
        memcpy(l->out + at, in + at, row * sizeof *l->out);
    }
}

static void dropout_backward(Layer *l, Net *net)
{
    const Dropout *d = l->priv;
    float *in_delta = net_layer_input_delta(net, l, 0);
    if (!in_delta)
        return;
    size_t n = (size_t)net->batch * shape_size(l->out_shape);
    const float *delta = l->delta, *mask = d->mask;
    if (!d->mask_is_valid) {
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            in_delta[i] += delta[i];
        return;
    }
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        in_delta[i] += delta[i] * mask[i];
}

static void dropout_destroy(Layer *l)
{
    Dropout *d = l->priv;
    if (d)
        free(d->mask);
    free(d);
    l->priv = NULL;
}

/* Inference is the identity (the kept values were scaled during training); the input keeps
 * its layout. */
static int dropout_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const OnnxLayer *in = onnx_input(g, l, 0);
    const char *x = in->name;
    onnx_node(g, "Identity", 1, &x, onnx_output(g, l, in->flat), 0, NULL);
    return CDL_OK;
}

const LayerType dropout_layer = {
    .name = "dropout",
    .parse = dropout_parse,
    .resize = dropout_resize,
    .forward = dropout_forward,
    .forward_at = dropout_forward_at,
    .backward = dropout_backward,
    .destroy = dropout_destroy,
    .export_onnx = dropout_export_onnx,
};
