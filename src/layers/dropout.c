/* [dropout]: inverted dropout. In training each value is dropped with `probability`
 * and the kept ones are scaled by 1/(1-probability), so evaluation is the identity.
 *
 *   in, out [batch][c][h][w]
 *
 * The mask is drawn from (net seed, draw_id, layer index) at every training forward, value i
 * of the mini-batch from position sample_offset * sample size + i: the same pass id redraws
 * the same mask, whatever the thread count or the rank holding the sample. */
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
    Dropout *d = l->priv;
    d->probability = p;
    d->scale = 1.0f / (1.0f - p);
    return CDL_OK;
}

static int dropout_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Dropout *d = l->priv;
    d->mask = layer_state_floats(st, (size_t)batch * shape_size(l->out_shape));
    d->mask_is_valid = 0;
    return CDL_OK;
}

static void dropout_forward(Layer *l, const StepContext *ctx)
{
    Dropout *d = l->priv;
    const float *in = l->in[0];
    size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    d->mask_is_valid = ctx->train && d->probability > 0;
    if (!d->mask_is_valid) {
        memcpy(l->out, in, n * sizeof *l->out);
        return;
    }
    /* Value i's draw is computed directly from i, so the loop vectorises and splits across
     * threads with the same mask for any thread count. */
    const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
    const uint64_t first = (uint64_t)ctx->sample_offset * shape_size(l->out_shape);
    float *mask = d->mask, *out = l->out;
    float p = d->probability, scale = d->scale;
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++) {
        mask[i] = rng_uniform_at(key, first + i) < p ? 0.0f : scale;
        out[i] = in[i] * mask[i];
    }
}

/* Inference: row t passes through (sequence nets). */
static void dropout_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = (size_t)b * sample + (size_t)t * row;
        memcpy(l->out + at, in + at, row * sizeof *l->out);
    }
}

static void dropout_backward(Layer *l, const StepContext *ctx)
{
    const Dropout *d = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
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
    .priv_size = sizeof(Dropout),
    .parse = dropout_parse,
    .export_onnx = dropout_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_dropout_kernels = {
    .resize = dropout_resize,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .forward_at = dropout_forward_at,
};
