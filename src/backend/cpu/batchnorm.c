/* [batchnorm]'s CPU kernels (layers/batchnorm.c has its meaning): the batch-norm stage and the
 * layer's activation, as a convolution's (fused for relu and leaky in training), its input
 * gradient added into the input's delta.
 *
 *   in, out [batch][c][h][w]
 */
#include "backend/cpu/bias_norm.h"

static int bn_layer_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    bias_norm_resize(l->priv, batch, st);
    return CDL_OK;
}

static void bn_layer_forward(Layer *l, const StepContext *ctx)
{
    if (bias_norm_forward_activated(l->priv, l, ctx, l->in[0]))
        return;
    bias_norm_forward(l->priv, l, ctx, l->in[0], layer_activation_input(l));
    layer_activate(l, ctx->batch);
}

static void bn_layer_backward(Layer *l, const StepContext *ctx)
{
    /* dL/dx (through the activation) is computed in place in l->delta, then added into the
     * input's delta. */
    if (!bias_norm_backward_activated(l->priv, l, ctx, l->delta)) {
        layer_activation_backward(l, ctx->batch);
        bias_norm_backward(l->priv, l, ctx, l->delta);
    }
    float *dx = l->in_delta[0];
    if (!dx)
        return;
    const size_t n = (size_t)ctx->batch * shape_size(l->in_shape);
#pragma omp parallel for simd schedule(static) if (parallel : n >= 65536)
    for (size_t i = 0; i < n; i++)
        dx[i] += l->delta[i];
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_batchnorm_kernels = {
    .resize = bn_layer_resize,
    .forward = bn_layer_forward,
    .backward = bn_layer_backward,
};
