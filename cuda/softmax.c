/* [softmax]'s GPU kernels (layers/softmax.c has its meaning): a softmax per row with the
 * cross-entropy loss and its fused gradient. The rows' losses are summed on the device in row
 * order, as the CPU sums them, and the total goes to the pass's loss (gpu_add_loss): kept on the
 * device in a training step, which the host reads at its end (one wait a step), else downloaded
 * at once (a copy and a wait per forward with labels). Input
 * and output each float32 or 16-bit (Layer.in_storage, Layer.storage: the loss is computed from
 * the input's values, in float).
 *
 *   in, out [batch][groups][n]   labels [batch][groups]
 */
#include "kernels/softmax.h"
#include "gpu.h"
#include "layers/softmax.h"

static float smoothing_of(const Layer *l, const StepContext *ctx)
{
    return ctx->train ? ((const Softmax *)l->priv)->label_smoothing : 0.0f;
}

static int softmax_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Softmax *sm = l->priv;
    sm->row_loss = layer_work_floats(st, (size_t)batch * (size_t)sm->groups);
    sm->loss_total = layer_state_bytes(st, sizeof(double));
    return CDL_OK;
}

static void softmax_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Softmax *sm = l->priv;
    const int n = (int)(shape_size(l->out_shape) / (size_t)sm->groups);
    const int rows = ctx->batch * sm->groups;
    gpu_note(ctx,
             cuda_softmax_forward(l->out, l->storage, sm->row_loss, l->in[0], l->in_storage[0],
                                  ctx->labels, rows, n, smoothing_of(l, ctx), gpu_stream(ctx)),
             "softmax forward");
    if (!ctx->labels)
        return;
    gpu_note(ctx, cuda_loss_total(sm->loss_total, sm->row_loss, rows, gpu_stream(ctx)),
             "softmax loss");
    gpu_add_loss(ctx, sm->loss_total, "softmax loss");
}

/* Row t of every sample (sequence nets' cached step; no loss): a launch per sample, the rows
 * being groups apart. */
static void softmax_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const Softmax *sm = l->priv;
    const size_t n = shape_size(l->out_shape) / (size_t)sm->groups;
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = ((size_t)b * (size_t)sm->groups + (size_t)t) * n;
        gpu_note(ctx,
                 cuda_softmax_forward(elem_at(l->out, l->storage, at), l->storage, sm->row_loss,
                                      elem_at(l->in[0], l->in_storage[0], at), l->in_storage[0],
                                      NULL, 1, (int)n, 0.0f, gpu_stream(ctx)),
                 "softmax forward_at");
    }
}

static void softmax_backward_gpu(Layer *l, const StepContext *ctx)
{
    if (!l->in_delta[0])
        return;
    const Softmax *sm = l->priv;
    const int n = (int)(shape_size(l->out_shape) / (size_t)sm->groups);
    gpu_note(ctx,
             cuda_softmax_backward(l->in_delta[0], l->in_storage[0], l->out, l->delta, l->storage,
                                   ctx->labels, ctx->batch * sm->groups, n,
                                   ctx->grad_scale / ctx->loss_divisor, smoothing_of(l, ctx),
                                   gpu_stream(ctx)),
             "softmax backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_softmax_kernels = {
    .resize = softmax_resize_gpu,
    .forward = softmax_forward_gpu,
    .backward = softmax_backward_gpu,
    .forward_at = softmax_forward_at,
    .stores_16bit = 1,
};
