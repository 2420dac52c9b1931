/* [batchnorm]'s GPU kernels (layers/batchnorm.c has its meaning): the batch-norm stage
 * (cuda/bias_norm.h) and the layer's activation, its input gradient added into the input's delta;
 * input and output each float32 or 16-bit (Layer.in_storage, Layer.storage). Under
 * gpu_engine=cudnn the stage runs on cuDNN where it computes cdl's (cuda/bn_cudnn.h; the engine
 * "cudnn"), else on cdl's kernels ("ref"); under gpu_engine=ref on cdl's kernels (no engine named).
 *
 *   in, out [batch][c][h][w], or both [batch][h][w][c] (Layer.channels_last)
 */
#include "bias_norm.h"
#include "layer_activation.h"

/* What the layer is expected to run on before its resize decides. */
static const char *bn_layer_engine_gpu(const Layer *l, const ExecContext *exec)
{
    (void)l;
    return gpu_on_cudnn(exec) ? "cudnn" : NULL;
}

static int bn_layer_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    BiasNorm *bn = l->priv;
    const int cudnn = gpu_on_cudnn(st->exec);
    l->scratch_per_sample = 0; /* the stage's cuDNN backward raises it */
    const int status = gpu_bias_norm_resize(bn, l, batch, st, l->in_storage[0], cudnn, e);
    if (!status && cudnn)
        l->engine = gpu_bias_norm_on_cudnn(bn) ? "cudnn" : "ref";
    return status;
}

static void bn_layer_release_gpu(Layer *l)
{
    gpu_bias_norm_release(l->priv);
}

static void bn_layer_forward_gpu(Layer *l, const StepContext *ctx)
{
    gpu_bias_norm_forward(l->priv, l, ctx, l->in[0], l->in_storage[0], layer_activation_input(l),
                          layer_pre_storage(l));
    gpu_layer_activate(l, ctx);
}

static void bn_layer_backward_gpu(Layer *l, const StepContext *ctx)
{
    /* dx += dL/dx in the same pass (the CPU makes it in l->delta first, then adds it) */
    gpu_layer_activation_backward(l, ctx);
    gpu_bias_norm_backward(l->priv, l, ctx, l->delta, l->storage, l->in_delta[0], l->in_storage[0],
                           1.0f);
}

/* Per-channel statistics index either layout; the input's is the output's. */
static ChannelsLastUse bn_layer_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_SAME;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_batchnorm_kernels = {
    .engine = bn_layer_engine_gpu,
    .resize = bn_layer_resize_gpu,
    .release = bn_layer_release_gpu,
    .forward = bn_layer_forward_gpu,
    .backward = bn_layer_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = bn_layer_takes_channels_last,
};
