/* [maxpool]'s GPU kernels (layers/maxpool.c has its meaning): the maximum of each window with
 * darknet's padding, the argmax kept in the layer's state for the backward, its input and output
 * each NCHW or NHWC (Layer.in_channels_last, Layer.channels_last);
 * input and output each float32 or 16-bit (Layer.in_storage, Layer.storage).
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][(h + padding - size)/stride + 1][(w + padding - size)/stride + 1]
 */
#include "kernels/maxpool.h"
#include "gpu.h"
#include "layers/maxpool.h"

/* The argmax as the CPU's resize takes it ([batch][c][out_h][out_w] ints, device memory here). */
static int maxpool_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Maxpool *m = l->priv;
    m->argmax = layer_state_bytes(st, (size_t)batch * shape_size(l->out_shape) * sizeof *m->argmax);
    return CDL_OK;
}

static MaxpoolDims dims_of(const Layer *l, const StepContext *ctx)
{
    const Maxpool *m = l->priv;
    return (MaxpoolDims){
        .planes = ctx->batch * l->in_shape.c,
        .channels = l->in_shape.c,
        .ih = l->in_shape.h,
        .iw = l->in_shape.w,
        .oh = l->out_shape.h,
        .ow = l->out_shape.w,
        .size = m->size,
        .stride = m->stride,
        .offset = m->padding / 2,
        .in_nhwc = l->in_channels_last[0],
        .out_nhwc = l->channels_last,
    };
}

static void maxpool_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Maxpool *m = l->priv;
    gpu_note(ctx,
             cuda_maxpool_forward(l->out, l->storage, m->argmax, l->in[0], l->in_storage[0],
                                  dims_of(l, ctx), gpu_stream(ctx)),
             "maxpool forward");
}

/* A fresh input delta (Layer.in_delta_fresh) is written whole by the gather, not added to. */
static void maxpool_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Maxpool *m = l->priv;
    if (!l->in_delta[0])
        return;
    gpu_note(ctx,
             cuda_maxpool_backward(l->in_delta[0], l->in_storage[0], l->delta, l->storage,
                                   m->argmax, dims_of(l, ctx), l->in_delta_fresh[0],
                                   gpu_stream(ctx)),
             "maxpool backward");
}

static ChannelsLastUse maxpool_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_EITHER;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_maxpool_kernels = {
    .resize = maxpool_resize_gpu,
    .forward = maxpool_forward_gpu,
    .backward = maxpool_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = maxpool_takes_channels_last,
};
