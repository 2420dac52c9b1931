/* [positional]: a learned positional embedding added to each token (GPT-2's wpe).
 *
 *   in, out [batch][T][C]   out[b][t] = in[b][t] + weights[t]
 *   weights [T][C] (one value per value of a sample), N(0, 1) as torch.nn.Embedding */
#include <stddef.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/sum_rows.h"

/* Below this many values a parallel region costs more than it saves. */
#define POSITIONAL_PARALLEL_MIN 32768

static int positional_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)cfg, (void)s, (void)net, (void)e;
    l->out_shape = l->in_shape;
    const Shape in = l->in_shape; /* [1][T][C] */
    layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){(int64_t)in.c * in.h, in.w});
    l->flops = (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void positional_init(Layer *l, Rng *rng)
{
    Param *w = &l->params[0];
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = rng_normal(rng);
}

static void positional_forward(Layer *l, const StepContext *ctx)
{
    const float *in = l->in[0], *w = l->params[0].data;
    const size_t sample = shape_size(l->out_shape);
    /* a sample per task, vector code within (collapse(2) left the loop scalar) */
#pragma omp parallel for schedule(static) if (ctx->batch * sample > POSITIONAL_PARALLEL_MIN)
    for (int b = 0; b < ctx->batch; b++) {
        float *out = l->out + b * sample;
        const float *x = in + b * sample;
#pragma omp simd
        for (size_t i = 0; i < sample; i++)
            out[i] = x[i] + w[i];
    }
}

static void positional_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    const float *w = l->params[0].data + (size_t)t * row;
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = (size_t)b * sample + (size_t)t * row;
        for (size_t j = 0; j < row; j++)
            l->out[at + j] = in[at + j] + w[j];
    }
}

/* dweights[t] += sum_b delta[b][t]; the input delta gets delta unchanged. */
static void positional_backward(Layer *l, const StepContext *ctx)
{
    const size_t sample = shape_size(l->out_shape), n = (size_t)ctx->batch * sample;
    sum_rows_add(l->params[0].grad, l->delta, (size_t)ctx->batch, sample);
    float *dx = l->in_delta[0];
    if (!dx)
        return;
#pragma omp parallel for schedule(static) if (n > POSITIONAL_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        dx[i] += l->delta[i];
}

/* Add of the weights [T][C], broadcast over the batch. */
static int positional_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char x[ONNX_NAME_MAX], w[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_param(g, l, 0, w);
    onnx_node(g, "Add", 2, (const char *[]){x, w}, onnx_output(g, l, 0), 0, NULL);
    return CDL_OK;
}

const LayerType positional_layer = {
    .name = "positional",
    .parse = positional_parse,
    .init = positional_init,
    .export_onnx = positional_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_positional_kernels = {
    .forward = positional_forward,
    .backward = positional_backward,
    .forward_at = positional_forward_at,
};
